/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>
#include <stdio.h>

#include "events.h"
#include "log.h"
#include "model/result.h"
#include "run/job.h"
#include "store/store.h"
#include "submit.h"
#include "time-util.h"

/* A stream that has said nothing for this long gets a comment line (": keepalive"): proxies and
 * load balancers close a connection idle for a minute or so (nginx's proxy_read_timeout: 60 s),
 * and a program may well be silent longer than that. */
#define EVENTS_KEEPALIVE_USEC (15 * USEC_PER_SEC)

typedef struct EventReader {
        ApiContext *ac;
        HttpRequest *req;        /* until the stream starts */
        bool suspended;          /* ... waiting for the store meanwhile */
        FindLookup *find;        /* the execution looked for in the store */
        RecordRender *render;    /* the final record being read: not abandoned meanwhile */
        char id[REQUEST_ID_MAX + 1];
        HttpStream *stream;
        Job *job;                /* while the live log has not ended */
        JobWaiter *waiter;
        LiveLog *live;           /* a reference, or NULL (a stored record) */
        LiveWatcher watcher;
        bool watching;
        unsigned stage;          /* 0, 1 queued, 2 running, 3 result sent */
        uint64_t pos[_LIVE_STREAM_MAX];
        json_object *result;     /* the record, once final */
        bool final, abandoned;
        char *buf;
        size_t len, off;
        sd_event_source *keepalive;
        uint64_t sent_mono;      /* when the reader was last sent something */
        bool keepalive_due;      /* a comment is owed at the next read */
} EventReader;

static const char *const stream_name[_LIVE_STREAM_MAX] = { "stdout", "stderr" };

int events_parse_id(const char *s, unsigned *ret_stage, uint64_t *ret_out, uint64_t *ret_err) {
        uint64_t v[3];
        const char *p = s;

        if (!s)
                return -EINVAL;
        for (size_t i = 0; i < 3; i++) {
                const char *start = p;
                uint64_t x = 0;

                while (*p >= '0' && *p <= '9') {
                        if (x > (UINT64_MAX - (uint64_t) (*p - '0')) / 10)
                                return -EINVAL;
                        x = x * 10 + (uint64_t) (*p - '0');
                        p++;
                }
                if (p == start || p - start > 20)
                        return -EINVAL;
                v[i] = x;
                if (i < 2 && *p++ != '.')
                        return -EINVAL;
        }
        if (*p || v[0] > 3)
                return -EINVAL;
        *ret_stage = (unsigned) v[0];
        *ret_out = v[1];
        *ret_err = v[2];
        return 0;
}

/* One event into r->buf: "id:", "event:", one "data:" line (JSON never has a raw newline). Takes o. */
static int emit(EventReader *r, const char *event, json_object *o) {
        const char *text;
        int n;

        if (!o)
                return -ENOMEM;
        text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
        free(r->buf);
        r->buf = NULL;
        n = asprintf(&r->buf, "id: %u.%" PRIu64 ".%" PRIu64 "\nevent: %s\ndata: %s\n\n", r->stage,
                     r->pos[LIVE_STDOUT], r->pos[LIVE_STDERR], event, text ?: "null");
        json_object_put(o);
        if (n < 0) {
                r->buf = NULL;
                return -ENOMEM;
        }
        r->len = (size_t) n;
        r->off = 0;
        return 1;
}

static int emit_elided(EventReader *r, LiveStreamId s, uint64_t bytes) {
        json_object *o = json_object_new_object();

        r->pos[s] += bytes;
        json_object_object_add(o, "stream", json_object_new_string(stream_name[s]));
        json_object_object_add(o, "bytes", json_object_new_uint64(bytes));
        return emit(r, "elided", o);
}

static int emit_text(EventReader *r, LiveStreamId s, const char *text, size_t len) {
        json_object *o = json_object_new_object();

        json_object_object_add(o, "text", json_object_new_string_len(text, (int) len));
        return emit(r, stream_name[s], o);
}

static json_object *get_field(json_object *o, const char *key) {
        json_object *v = NULL;

        return o && json_object_object_get_ex(o, key, &v) ? v : NULL;
}

static int emit_running(EventReader *r, json_object *record) {
        json_object *o = json_object_new_object();

        r->stage = 2;
        json_object_object_add(o, "status", json_object_new_string("running"));
        json_object_object_add(o, "started_at", json_object_get(get_field(record, "started_at")));
        json_object_object_add(o, "start", json_object_get(get_field(record, "start")));
        return emit(r, "status", o);
}

/* Is the record's text of stream s exactly the program's bytes: not truncated, as many bytes as
 * the stream had, and no U+FFFD (so nothing was replaced; a program's own U+FFFD only costs the
 * shortcut)? */
static bool stored_is_raw(json_object *record, LiveStreamId s, json_object *text, uint64_t total) {
        char key[32];
        const char *t = json_object_get_string(text);

        snprintf(key, sizeof(key), "%s_truncated", stream_name[s]);
        return t && !json_object_get_boolean(get_field(record, key)) &&
               (uint64_t) json_object_get_string_len(text) == total && !strstr(t, "\xef\xbf\xbd");
}

/* The next event into r->buf: 1, 0 nothing yet, -1 the end. */
static int next_event(EventReader *r) {
        bool live = r->live && !r->live->ended && r->job;

        if (r->stage >= 3 || r->abandoned)
                return -1;
        if (r->stage < 1) {
                json_object *o = json_object_new_object();
                r->stage = 1;
                json_object_object_add(o, "status", json_object_new_string("queued"));
                return emit(r, "status", o);
        }
        if (r->stage < 2) {
                if (live && r->live->running) {
                        json_object *rec = execution_to_json(r->job->exec);
                        int k = emit_running(r, rec);
                        json_object_put(rec);
                        return k;
                }
                if (r->final && json_object_get_type(get_field(r->result, "started_at")) == json_type_string)
                        return emit_running(r, r->result);
                if (!r->final)
                        return 0;
                /* Final without ever running (cancelled in the queue, refused): no running status. */
                r->stage = 2;
        }
        if (r->live) {
                const LiveEvent *e = live_log_next(r->live, r->pos);

                if (e) {
                        /* What the backlog no longer has, or never got, before this event. */
                        for (LiveStreamId s = 0; s < _LIVE_STREAM_MAX; s++)
                                if (e->start[s] > r->pos[s])
                                        return emit_elided(r, s, e->start[s] - r->pos[s]);
                        if (e->elided)
                                return emit_elided(r, e->stream, e->elided_bytes);
                        r->pos[e->stream] = e->end[e->stream];
                        return emit_text(r, e->stream, e->text, e->len);
                }
        }
        if (!r->final) {
                if (r->live && r->live->ended && !r->render)
                        r->abandoned = true;    /* gone without an end (sandboxd is stopping) */
                return r->abandoned ? -1 : 0;
        }
        /* Final: what the events did not cover. Replayed from the record if no byte of the stream came
         * live (a stored execution), else announced as elided: the record has it. */
        for (LiveStreamId s = 0; s < _LIVE_STREAM_MAX; s++) {
                char key[32];
                uint64_t total;
                json_object *text;

                snprintf(key, sizeof(key), "%s_bytes", stream_name[s]);
                total = (uint64_t) json_object_get_uint64(get_field(r->result, key));
                if (r->pos[s] >= total)
                        continue;
                text = get_field(r->result, stream_name[s]);
                if (r->pos[s] == 0 && (!r->live || r->live->pos[s] == 0) && json_object_get_string_len(text) > 0) {
                        r->pos[s] = total;
                        return emit_text(r, s, json_object_get_string(text), (size_t) json_object_get_string_len(text));
                }
                /* From the middle: only when the stored text is the program's bytes themselves (whole,
                 * as long as the stream, nothing replaced), so that a position in the stream is one in
                 * the text, and at a character boundary there. */
                if (stored_is_raw(r->result, s, text, total) &&
                    ((uint8_t) json_object_get_string(text)[r->pos[s]] & 0xc0) != 0x80) {
                        uint64_t from = r->pos[s];

                        r->pos[s] = total;
                        return emit_text(r, s, json_object_get_string(text) + from, (size_t) (total - from));
                }
                return emit_elided(r, s, total - r->pos[s]);
        }
        r->stage = 3;
        return emit(r, "result", json_object_get(r->result));
}

static ssize_t reader_read(void *userdata, char *buf, size_t max) {
        EventReader *r = userdata;

        for (;;) {
                if (r->off < r->len) {
                        size_t n = MIN(max, r->len - r->off);
                        memcpy(buf, r->buf + r->off, n);
                        r->off += n;
                        r->keepalive_due = false;
                        (void) sd_event_now(r->ac->ctx->event, CLOCK_MONOTONIC, &r->sent_mono);
                        return (ssize_t) n;
                }
                switch (next_event(r)) {
                case 1:
                        continue;
                case 0:
                        if (r->keepalive_due) {
                                static const char comment[] = ": keepalive\n\n";

                                r->keepalive_due = false;
                                free(r->buf);
                                r->buf = strdup(comment);
                                if (!r->buf)
                                        return -1;
                                r->len = strlen(comment);
                                r->off = 0;
                                continue;
                        }
                        return 0;
                default:
                        return -1;
                }
        }
}

static void reader_wake(void *userdata) {
        EventReader *r = userdata;

        http_stream_wake(r->stream);
}

static void reader_unlink(EventReader *r) {
        if (r->waiter && r->live && !r->live->ended && r->job)
                job_remove_waiter(r->job, r->waiter);
        r->waiter = NULL;
        r->job = NULL;
        if (r->watching)
                live_log_unwatch(r->live, &r->watcher);
        r->watching = false;
}

/* Fires EVENTS_KEEPALIVE_USEC after the last thing sent (it moves when something was sent since). */
static int on_keepalive(sd_event_source *s, uint64_t usec, void *userdata) {
        EventReader *r = userdata;

        if (usec >= r->sent_mono + EVENTS_KEEPALIVE_USEC) {
                r->keepalive_due = true;
                http_stream_wake(r->stream);
                (void) sd_event_source_set_time(s, usec + EVENTS_KEEPALIVE_USEC);
        } else
                (void) sd_event_source_set_time(s, r->sent_mono + EVENTS_KEEPALIVE_USEC);
        (void) sd_event_source_set_enabled(s, SD_EVENT_ON);
        return 0;
}

static void reader_done(void *userdata) {
        EventReader *r = userdata;

        r->keepalive = sd_event_source_disable_unref(r->keepalive);
        r->find = find_lookup_cancel(r->find);
        r->render = record_render_cancel(r->render);
        reader_unlink(r);
        live_log_unref(r->live);
        json_object_put(r->result);
        free(r->buf);
        free(r);
}

static void events_start(EventReader *r, Job *j);

/* The record of a final execution, read (record_render): before the stream, it starts it (or the
 * request is refused as GET would be); in the stream, it is the result event. */
static void on_result_rendered(void *userdata, json_object *o, const RequestError *err) {
        EventReader *r = userdata;
        HttpRequest *req = r->req;

        r->render = NULL;
        if (r->stream) {
                if (o) {
                        r->result = o;
                        r->final = true;
                } else
                        r->abandoned = true;
                http_stream_wake(r->stream);
                return;
        }
        if (r->suspended)
                http_request_set_gone_cb(req, NULL, NULL);
        r->suspended = false;
        if (!o) {
                reader_done(r);
                http_respond_error(req, err->error, err->field, "%s", err->message);
                return;
        }
        r->result = o;
        r->final = true;
        events_start(r, NULL);
}

static void on_final(Job *j, void *userdata) {
        EventReader *r = userdata;
        RecordRender *x = NULL;
        int k;

        r->waiter = NULL;       /* the job frees it after this call */
        r->job = NULL;
        if (!job_is_final(j)) {
                r->abandoned = true;
                http_stream_wake(r->stream);
                return;
        }
        /* The result event waits for the record (read without waiting: the loop goes on). */
        k = job_record_json_async(r->ac, j, on_result_rendered, r, &x);
        if (k == 0)
                r->render = x;
        else if (k < 0) {
                r->abandoned = true;
                http_stream_wake(r->stream);
        }
}

static void on_events_gone(HttpRequest *req, void *userdata) {
        reader_done(userdata);
}

static void events_suspend(EventReader *r) {
        if (r->suspended)
                return;
        r->suspended = true;
        http_request_suspend(r->req);
        http_request_set_gone_cb(r->req, on_events_gone, r);
}

/* The stream itself: j while its live log has not ended (NULL: the result is there). */
static void events_start(EventReader *r, Job *j) {
        ApiContext *ac = r->ac;
        HttpRequest *req = r->req;
        int k;

        r->job = j;
        if (r->live) {
                r->watcher = (LiveWatcher) { .wake = reader_wake, .userdata = r };
                live_log_watch(r->live, &r->watcher);
                r->watching = true;
        }
        r->req = NULL;
        if (http_respond_stream(req, "text/event-stream; charset=utf-8", reader_read, reader_done, r, &r->stream) < 0) {
                reader_done(r);
                http_respond_error(req, API_ERROR_INTERNAL, NULL, "out of memory");
                return;
        }
        /* Only a live stream can be silent for long; a failure costs the keepalive, not the stream. */
        if (r->job && sd_event_add_time_relative(ac->ctx->event, &r->keepalive, CLOCK_MONOTONIC,
                                                 EVENTS_KEEPALIVE_USEC, 0, on_keepalive, r) < 0)
                r->keepalive = NULL;
        if (r->job) {
                JobWaiter *w = NULL;

                k = job_add_waiter(r->job, on_final, r, &w);
                if (k > 0)
                        r->waiter = w;
                else if (k < 0)
                        r->abandoned = true;
        }
}

static void on_events_found(void *userdata, Job *j, StoreRecord *rec) {
        EventReader *r = userdata;
        HttpRequest *req = r->req;
        RecordRender *x = NULL;
        int k;

        r->find = NULL;
        if (!j && !rec) {
                if (r->suspended)
                        http_request_set_gone_cb(req, NULL, NULL);
                http_respond_error(req, API_ERROR_NOT_FOUND, NULL, "no execution '%.64s'", r->id);
                reader_done(r);
                return;
        }
        if (j && !job_is_final(j)) {
                if (r->suspended)
                        http_request_set_gone_cb(req, NULL, NULL);
                r->suspended = false;
                if (r->ac->ctx->stopping) {
                        /* Its waiters have been answered: a stream would be left suspended at the stop. */
                        reader_done(r);
                        http_respond_error(req, API_ERROR_SHUTTING_DOWN, NULL, "sandboxd is stopping");
                        return;
                }
                r->live = live_log_ref(j->live);
                events_start(r, j);
                return;
        }
        /* Final: the record first (read without waiting), then the stream. */
        if (j)
                r->live = live_log_ref(j->live);
        k = j ? job_record_json_async(r->ac, j, on_result_rendered, r, &x)
              : stored_record_json_async(r->ac, rec, on_result_rendered, r, &x);
        if (k < 0) {
                if (r->suspended)
                        http_request_set_gone_cb(req, NULL, NULL);
                reader_done(r);
                http_respond_error(req, API_ERROR_INTERNAL, NULL, "out of memory");
        } else if (k == 0) {
                r->render = x;
                events_suspend(r);
        }
}

void api_handle_events(ApiContext *ac, HttpRequest *req, const char *id) {
        char owner[HTTP_OWNER_MAX];
        bool admin = false;
        FindLookup *f = NULL;
        EventReader *r;
        int k;

        if (http_request_owner(req, owner, sizeof(owner), &admin) < 0) {
                http_respond_error(req, API_ERROR_FORBIDDEN, NULL, "cannot identify the caller");
                return;
        }
        r = calloc(1, sizeof(EventReader));
        if (!r) {
                http_respond_error(req, API_ERROR_INTERNAL, NULL, "out of memory");
                return;
        }
        r->ac = ac;
        r->req = req;
        (void) snprintf(r->id, sizeof(r->id), "%s", id);
        (void) events_parse_id(http_request_header(req, "Last-Event-ID"), &r->stage, &r->pos[LIVE_STDOUT],
                               &r->pos[LIVE_STDERR]);
        /* As GET /v1/executions/{id}: another owner's execution is not found. */
        k = find_execution_async(ac, owner, admin, id, on_events_found, r, &f);
        if (k < 0) {
                reader_done(r);
                http_respond_error(req, API_ERROR_INTERNAL, NULL, "out of memory");
        } else if (k == 0) {
                r->find = f;
                events_suspend(r);
        }
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <sys/stat.h>

#include "api.h"
#include "delivery/artifacts.h"
#include "events.h"
#include "mcp-http.h"
#include "piston-http.h"
#include "log.h"
#include "model/environment.h"
#include "model/request.h"
#include "model/result.h"
#include "model/signed-url.h"
#include "model/warm-policy.h"
#include "run/job.h"
#include "run/node.h"
#include "run/runner.h"
#include "run/session.h"
#include "run/warm-pool.h"
#include "session-files-http.h"
#include "store/store.h"
#include "submit.h"
#include "time-util.h"

/* A request held open until its execution is final (api_wait_job()). */
typedef struct ApiWait {
        HttpRequest *req;
        Job *job;
        JobWaiter *waiter;
        void (*done)(HttpRequest *req, Job *j, void *userdata);
        void (*gone)(void *userdata);
        void *userdata;
} ApiWait;

/* The caller's identity: "uid:N" on the unix socket (root is the administrator and sees everything;
 * anyone else, a member of group sandboxd, sees only the executions it submitted), "key:NAME" on TCP
 * (admin keys see everything). */
static int caller_owner(HttpRequest *req, char *buf, size_t size, bool *ret_admin) {
        return http_request_owner(req, buf, size, ret_admin);
}

static bool may_see(const char *caller, bool admin, const char *owner) {
        return admin || streq_ptr(caller, owner);
}

/* A refusal from the shared admission, list and record code (submit.c, session.c, ...). */
static void respond_request_error(HttpRequest *req, const RequestError *err) {
        http_respond_error(req, err->error, err->field, "%s", err->message);
}

static bool query_true(HttpRequest *req, const char *key) {
        const char *v = http_request_query(req, key);
        return v && (streq(v, "true") || streq(v, "1") || streq(v, "yes") || *v == 0);
}

static void on_wait_gone(HttpRequest *req, void *userdata) {
        ApiWait *w = userdata;

        if (w->waiter)
                job_remove_waiter(w->job, w->waiter);
        if (w->gone)
                w->gone(w->userdata);
        free(w);
}

static void on_wait_done(Job *j, void *userdata) {
        ApiWait *w = userdata;

        w->waiter = NULL;       /* the job frees it after this call */
        http_request_set_gone_cb(w->req, NULL, NULL);
        w->done(w->req, j, w->userdata);
        free(w);
}

int api_wait_job(HttpRequest *req, Job *j, void (*done)(HttpRequest *req, Job *j, void *userdata),
                 void (*gone)(void *userdata), void *userdata) {
        ApiWait *w = calloc(1, sizeof(ApiWait));
        JobWaiter *jw = NULL;
        int r;

        if (!w)
                return -ENOMEM;
        *w = (ApiWait) { .req = req, .job = j, .done = done, .gone = gone, .userdata = userdata };
        /* Suspend first: the callback may answer at once. */
        http_request_suspend(req);
        /* When the job is already final the callback runs (and frees w) before this returns. */
        r = job_add_waiter(j, on_wait_done, w, &jw);
        if (r < 0) {
                free(w);
                return r;
        }
        if (r > 0) {
                w->waiter = jw;
                http_request_set_gone_cb(req, on_wait_gone, w);
        }
        return 0;
}

/* An execution's JSON as the answer, or why it cannot be read: the request waits, suspended, for
 * what the store holds of it (job_record_json_async(), stored_record_json_async()). */
typedef struct ApiRender {
        HttpRequest *req;
        RecordRender *render;
        unsigned status;
        bool suspended;
        json_object *(*filter)(json_object *full);   /* the part of the JSON to answer with, or NULL */
} ApiRender;

static void on_render_gone(HttpRequest *req, void *userdata) {
        ApiRender *a = userdata;

        (void) record_render_cancel(a->render);
        free(a);
}

static void on_rendered(void *userdata, json_object *o, const RequestError *err) {
        ApiRender *a = userdata;

        if (a->suspended)
                http_request_set_gone_cb(a->req, NULL, NULL);
        if (o && a->filter) {
                json_object *part = a->filter(o);

                json_object_put(o);
                o = part;
                if (!o)
                        http_respond_error(a->req, API_ERROR_INTERNAL, NULL, "out of memory");
        }
        if (o)
                http_respond_json(a->req, a->status, o);
        else if (err)
                respond_request_error(a->req, err);
        free(a);
}

/* After job_record_json_async() or stored_record_json_async() returned r for a. */
static void render_wait(ApiRender *a, int r) {
        if (r < 0) {
                http_respond_error(a->req, API_ERROR_INTERNAL, NULL, "out of memory");
                free(a);
        } else if (r == 0) {
                a->suspended = true;
                http_request_suspend(a->req);
                http_request_set_gone_cb(a->req, on_render_gone, a);
        }
        /* 1: answered, a freed. */
}

/* A job as the answer (a final one read back from the store). */
static void respond_job(HttpRequest *req, ApiContext *ac, Job *j, unsigned status) {
        ApiRender *a = calloc(1, sizeof(ApiRender));

        if (!a) {
                http_respond_error(req, API_ERROR_INTERNAL, NULL, "out of memory");
                return;
        }
        *a = (ApiRender) { .req = req, .status = status };
        render_wait(a, job_record_json_async(ac, j, on_rendered, a, &a->render));
}

/* A stored record as the answer (rec is taken). */
static void respond_record(HttpRequest *req, ApiContext *ac, StoreRecord *rec, unsigned status) {
        ApiRender *a = calloc(1, sizeof(ApiRender));

        if (!a) {
                store_record_free(rec);
                http_respond_error(req, API_ERROR_INTERNAL, NULL, "out of memory");
                return;
        }
        *a = (ApiRender) { .req = req, .status = status };
        render_wait(a, stored_record_json_async(ac, rec, on_rendered, a, &a->render));
}

static void on_job_done(HttpRequest *req, Job *j, void *userdata) {
        ApiContext *ac = userdata;

        if (!job_is_final(j) && ac->ctx->stopping)
                http_respond_error(req, API_ERROR_SHUTTING_DOWN, NULL, "sandboxd is stopping; execution %s did not finish",
                                   j->exec->id);
        else
                respond_job(req, ac, j, 200);
}

static void wait_for(ApiContext *ac, HttpRequest *req, Job *j) {
        if (api_wait_job(req, j, on_job_done, NULL, ac) < 0)
                http_respond_error(req, API_ERROR_INTERNAL, NULL, "out of memory");
}

/* ?wait=true for an execution another node runs (several nodes): the record is read again when the
 * store tells that its final record was written (api_final_elsewhere()), and every
 * REMOTE_WAIT_INTERVAL_USEC in case that was missed, until it is final (or this node takes it over);
 * at most REMOTE_WAITS_MAX such waits at once (past that, the answer is the record as it is now, as
 * without wait). */
#define REMOTE_WAIT_INTERVAL_USEC (500 * USEC_PER_MSEC)
#define REMOTE_WAITS_MAX 256

typedef struct RemoteWait RemoteWait;
struct RemoteWait {
        ApiContext *ac;
        HttpRequest *req;
        char *id;
        sd_event_source *timer;
        StoreCall *call;         /* the record's read under way */
        RemoteWait *prev, *next;
};

static unsigned n_remote_waits;
static RemoteWait *remote_waits;

static void remote_wait_free(RemoteWait *w) {
        sd_event_source_disable_unref(w->timer);
        (void) store_call_cancel(w->call);
        if (w->prev)
                w->prev->next = w->next;
        else if (remote_waits == w)
                remote_waits = w->next;
        if (w->next)
                w->next->prev = w->prev;
        free(w->id);
        free(w);
        n_remote_waits--;
}

void api_final_elsewhere(const char *id) {
        for (RemoteWait *w = remote_waits; w; w = w->next)
                if (streq(w->id, id)) {
                        (void) sd_event_source_set_time(w->timer, 1);   /* due now */
                        (void) sd_event_source_set_enabled(w->timer, SD_EVENT_ONESHOT);
                }
}

static void on_remote_wait_gone(HttpRequest *req, void *userdata) {
        remote_wait_free(userdata);
}

static void on_remote_wait_got(void *userdata, int r, StoreRecord *got) {
        _cleanup_(store_record_freep) StoreRecord *rec = got;
        RemoteWait *w = userdata;
        HttpRequest *req = w->req;
        ApiContext *ac = w->ac;

        w->call = NULL;
        if (r >= 0 && !exec_status_is_final(rec->exec->status)) {
                (void) sd_event_source_set_time_relative(w->timer, REMOTE_WAIT_INTERVAL_USEC);
                (void) sd_event_source_set_enabled(w->timer, SD_EVENT_ONESHOT);
                return;
        }
        http_request_set_gone_cb(req, NULL, NULL);
        if (r == -ENOENT)
                http_respond_error(req, API_ERROR_NOT_FOUND, NULL, "no execution '%.64s'", w->id);
        else if (r < 0)
                http_respond_error(req, API_ERROR_STORE, NULL, "%s", store_error_public(r));
        else
                respond_record(req, ac, TAKE_PTR(rec), 200);
        remote_wait_free(w);
}

static int on_remote_wait_tick(sd_event_source *s, uint64_t usec, void *userdata) {
        RemoteWait *w = userdata;
        HttpRequest *req = w->req;
        ApiContext *ac = w->ac;
        Job *j;
        int r;

        if (ac->ctx->stopping) {
                http_request_set_gone_cb(req, NULL, NULL);
                http_respond_error(req, API_ERROR_SHUTTING_DOWN, NULL, "sandboxd is stopping; execution %s did not finish",
                                   w->id);
                remote_wait_free(w);
                return 0;
        }
        /* Taken over here meanwhile: wait for the job as for any other. */
        j = runner_find(ac->runner, w->id);
        if (j) {
                http_request_set_gone_cb(req, NULL, NULL);
                remote_wait_free(w);
                wait_for(ac, req, j);
                return 0;
        }
        /* One read at a time: its answer arms the next tick. */
        if (w->call)
                return 0;
        r = store_get_async(ac->ctx->store, w->id, on_remote_wait_got, w, &w->call);
        if (r < 0) {
                (void) sd_event_source_set_time_relative(s, REMOTE_WAIT_INTERVAL_USEC);
                (void) sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        }
        return 0;
}

/* rec (taken): not final, held by another node. Answers now (as without wait) when it cannot wait. */
static void wait_remote(ApiContext *ac, HttpRequest *req, StoreRecord *rec) {
        RemoteWait *w;

        if (n_remote_waits >= REMOTE_WAITS_MAX || !(w = calloc(1, sizeof(RemoteWait)))) {
                respond_record(req, ac, rec, 200);
                return;
        }
        n_remote_waits++;
        *w = (RemoteWait) { .ac = ac, .req = req, .id = strdup(rec->exec->id), .next = remote_waits };
        if (remote_waits)
                remote_waits->prev = w;
        remote_waits = w;
        if (!w->id || sd_event_add_time_relative(ac->ctx->event, &w->timer, CLOCK_MONOTONIC, REMOTE_WAIT_INTERVAL_USEC,
                                                 10 * USEC_PER_MSEC, on_remote_wait_tick, w) < 0) {
                remote_wait_free(w);
                respond_record(req, ac, rec, 200);
                return;
        }
        store_record_free(rec);
        http_request_suspend(req);
        http_request_set_gone_cb(req, on_remote_wait_gone, w);
}

static bool held_elsewhere(ApiContext *ac, const StoreRecord *rec) {
        return !exec_status_is_final(rec->exec->status) && rec->exec->node &&
               !streq_ptr(rec->exec->node, ac->ctx->node_name);
}

static json_object *accepted_json(const Execution *e) {
        json_object *o = json_object_new_object();

        json_object_object_add(o, "execution_id", json_object_new_string(execution_public_id(e)));
        json_object_object_add(o, "record_id", json_object_new_string(e->id));
        json_object_object_add(o, "status", json_object_new_string(exec_status_to_string(e->status)));
        return o;
}

static void respond_accepted(HttpRequest *req, Job *j, unsigned status) {
        http_respond_json(req, status, accepted_json(j->exec));
}

/* A submission over HTTP (api_submit()), from the request to its answer. */
typedef struct ApiSubmit {
        HttpRequest *req;
        Submission *sub;
        bool suspended;
        ApiSubmitDoneFn done;
        void (*gone)(void *userdata);
        void *userdata;
} ApiSubmit;

static void on_submit_gone(HttpRequest *req, void *userdata) {
        ApiSubmit *a = userdata;

        (void) submission_abandon(a->sub);
        if (a->gone)
                a->gone(a->userdata);
        free(a);
}

static void on_submitted(void *userdata, int r, SubmitResult *res, const RequestError *err) {
        ApiSubmit *a = userdata;
        ApiSubmitDoneFn done = a->done;
        HttpRequest *req = a->req;
        void *data = a->userdata;

        if (a->suspended)
                http_request_set_gone_cb(req, NULL, NULL);
        free(a);
        done(req, r, res, err, data);
}

int api_submit(ApiContext *ac, HttpRequest *req, const char *body, size_t len, const char *owner, bool admin,
               ApiSubmitDoneFn done, void (*gone)(void *userdata), void *userdata) {
        ApiSubmit *a = calloc(1, sizeof(ApiSubmit));
        Submission *sub = NULL;

        if (!a)
                return -ENOMEM;
        *a = (ApiSubmit) { .req = req, .done = done, .gone = gone, .userdata = userdata };
        /* 1: answered already (and a freed); 0: the store was asked. */
        if (submit_execution_async(ac, body, len, owner, admin, on_submitted, a, &sub) > 0)
                return 0;
        a->sub = sub;
        a->suspended = true;
        http_request_suspend(req);
        http_request_set_gone_cb(req, on_submit_gone, a);
        return 0;
}

static void on_submit_answer(HttpRequest *req, int r, SubmitResult *res, const RequestError *err, void *userdata) {
        _cleanup_(store_record_freep) StoreRecord *rec = NULL;
        ApiContext *ac = userdata;

        if (r < 0) {
                respond_request_error(req, err);
                return;
        }
        switch (res->outcome) {
        case SUBMIT_EXISTING_RECORD:
                rec = res->record;
                if (query_true(req, "wait") && held_elsewhere(ac, rec))
                        wait_remote(ac, req, TAKE_PTR(rec));
                else if (query_true(req, "wait"))
                        respond_record(req, ac, TAKE_PTR(rec), 200);
                else
                        http_respond_json(req, 200, accepted_json(rec->exec));
                return;
        case SUBMIT_EXISTING_JOB:
                if (query_true(req, "wait"))
                        wait_for(ac, req, res->job);
                else
                        respond_accepted(req, res->job, job_is_final(res->job) ? 200 : 202);
                return;
        case SUBMIT_CREATED:
                if (query_true(req, "wait"))
                        wait_for(ac, req, res->job);
                else
                        respond_accepted(req, res->job, 202);
                return;
        }
}

static void handle_submit(ApiContext *ac, HttpRequest *req) {
        const char *ct, *body;
        char owner[HTTP_OWNER_MAX];
        bool admin;
        size_t len = 0;

        if (caller_owner(req, owner, sizeof(owner), &admin) < 0) {
                http_respond_error(req, API_ERROR_FORBIDDEN, NULL, "cannot identify the caller");
                return;
        }

        if (http_request_too_large(req)) {
                http_respond_error(req, API_ERROR_TOO_LARGE, NULL, "request body exceeds MaxRequestBytes=%" PRIu64,
                                   ac->ctx->config->max_request_bytes);
                return;
        }
        ct = http_request_header(req, "Content-Type");
        if (!ct || !startswith(ct, "application/json")) {
                http_respond_error(req, API_ERROR_UNSUPPORTED_MEDIA_TYPE, NULL, "Content-Type must be application/json");
                return;
        }
        body = http_request_body(req, &len);
        /* Validation, idempotency and the queue limit: the same code as the D-Bus API's. */
        if (api_submit(ac, req, body, len, owner, admin, on_submit_answer, NULL, ac) < 0)
                http_respond_error(req, API_ERROR_INTERNAL, NULL, "out of memory");
}

/* A GET whose execution is looked for in the store: the request waits, suspended, not the loop. */
typedef struct GetLookup {
        ApiContext *ac;
        HttpRequest *req;
        FindLookup *find;
        bool suspended;
        char id[REQUEST_ID_MAX + 1];
} GetLookup;

static void on_get_gone(HttpRequest *req, void *userdata) {
        GetLookup *g = userdata;

        (void) find_lookup_cancel(g->find);
        free(g);
}

/* The lookup is over: g goes; none found is answered 404 here (false). Another owner's execution is
 * "not found": its existence is not ours to reveal. */
static bool get_lookup_end(GetLookup *g, Job *j, StoreRecord *rec) {
        HttpRequest *req = g->req;
        bool found = j || rec;

        if (g->suspended)
                http_request_set_gone_cb(req, NULL, NULL);
        if (!found)
                http_respond_error(req, API_ERROR_NOT_FOUND, NULL, "no execution '%.64s'", g->id);
        free(g);
        return found;
}

static void on_get_found(void *userdata, Job *j, StoreRecord *found) {
        _cleanup_(store_record_freep) StoreRecord *rec = found;
        GetLookup *g = userdata;
        HttpRequest *req = g->req;
        ApiContext *ac = g->ac;

        if (!get_lookup_end(g, j, rec))
                return;
        if (!j) {
                if (query_true(req, "wait") && held_elsewhere(ac, rec))
                        wait_remote(ac, req, TAKE_PTR(rec));
                else
                        respond_record(req, ac, TAKE_PTR(rec), 200);
                return;
        }
        if (query_true(req, "wait") && !job_is_final(j)) {
                wait_for(ac, req, j);
                return;
        }
        respond_job(req, ac, j, 200);
}

static void handle_get(ApiContext *ac, HttpRequest *req, const char *id) {
        char owner[HTTP_OWNER_MAX];
        bool admin = false;
        GetLookup *g;
        int r;

        if (caller_owner(req, owner, sizeof(owner), &admin) < 0) {
                http_respond_error(req, API_ERROR_FORBIDDEN, NULL, "cannot identify the caller");
                return;
        }
        g = calloc(1, sizeof(GetLookup));
        if (!g) {
                http_respond_error(req, API_ERROR_INTERNAL, NULL, "out of memory");
                return;
        }
        *g = (GetLookup) { .ac = ac, .req = req };
        (void) snprintf(g->id, sizeof(g->id), "%s", id);
        /* Answered at once when the job is in memory; else when the store answers. */
        r = find_execution_async(ac, owner, admin, id, on_get_found, g, &g->find);
        if (r < 0) {
                free(g);
                http_respond_error(req, API_ERROR_INTERNAL, NULL, "out of memory");
                return;
        }
        if (r == 0) {
                g->suspended = true;
                http_request_suspend(req);
                http_request_set_gone_cb(req, on_get_gone, g);
        }
}

/* GET /v1/executions/<id>/artifacts: the artifact part of the execution object, URLs signed afresh.
 * Who may see the execution may list them. */
static json_object *artifacts_part(json_object *full) {
        static const char *const keys[] = { "execution_id", "record_id", "status", "artifacts", "artifacts_skipped",
                                            "artifacts_skipped_total" };
        json_object *o = json_object_new_object(), *v;

        for (size_t i = 0; o && i < ELEMENTSOF(keys); i++)
                if (json_object_object_get_ex(full, keys[i], &v))
                        json_object_object_add(o, keys[i], json_object_get(v));
        return o;
}

static void on_artifacts_found(void *userdata, Job *j, StoreRecord *rec) {
        GetLookup *g = userdata;
        HttpRequest *req = g->req;
        ApiContext *ac = g->ac;
        ApiRender *a;

        if (!get_lookup_end(g, j, rec))
                return;
        a = calloc(1, sizeof(ApiRender));
        if (!a) {
                store_record_free(rec);
                http_respond_error(req, API_ERROR_INTERNAL, NULL, "out of memory");
                return;
        }
        *a = (ApiRender) { .req = req, .status = 200, .filter = artifacts_part };
        render_wait(a, j ? job_record_json_async(ac, j, on_rendered, a, &a->render)
                         : stored_record_json_async(ac, rec, on_rendered, a, &a->render));
}

static void handle_artifacts_list(ApiContext *ac, HttpRequest *req, const char *id) {
        char owner[HTTP_OWNER_MAX];
        bool admin = false;
        GetLookup *g;
        int r;

        if (caller_owner(req, owner, sizeof(owner), &admin) < 0) {
                http_respond_error(req, API_ERROR_FORBIDDEN, NULL, "cannot identify the caller");
                return;
        }
        g = calloc(1, sizeof(GetLookup));
        if (!g) {
                http_respond_error(req, API_ERROR_INTERNAL, NULL, "out of memory");
                return;
        }
        *g = (GetLookup) { .ac = ac, .req = req };
        (void) snprintf(g->id, sizeof(g->id), "%s", id);
        r = find_execution_async(ac, owner, admin, id, on_artifacts_found, g, &g->find);
        if (r < 0) {
                free(g);
                http_respond_error(req, API_ERROR_INTERNAL, NULL, "out of memory");
                return;
        }
        if (r == 0) {
                g->suspended = true;
                http_request_suspend(req);
                http_request_set_gone_cb(req, on_get_gone, g);
        }
}

/* Everything that is not a valid URL for a stored artifact gets this same answer: whether the
 * signature was wrong, the link expired, the execution or file is unknown or purged. */
static void respond_no_artifact(HttpRequest *req) {
        http_respond_error(req, API_ERROR_NOT_FOUND, NULL, "no such artifact, or the link is invalid or has expired");
}

/* One artifact of a (its list), streamed from the blob store. */
static void artifact_serve(ApiContext *ac, HttpRequest *req, const ExecArtifacts *a, const char *id, const char *path) {
        const ExecArtifact *x = NULL;
        const char *base;
        struct stat st;
        int fd;

        for (size_t i = 0; a && i < a->n_items; i++)
                if (streq(a->items[i].path, path)) {
                        x = &a->items[i];
                        break;
                }
        if (!x) {
                respond_no_artifact(req);
                return;
        }
        fd = artifacts_store_open_blob(ac->ctx->artifacts_fd, x->sha256);
        if (fd < 0) {
                log_warning_errno(fd, "%s: artifact '%s' (%s) is missing from the store: %m", id, x->path, x->sha256);
                respond_no_artifact(req);
                return;
        }
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t) st.st_size != x->size) {
                log_warning("%s: artifact '%s' (%s) in the store does not match its record", id, x->path, x->sha256);
                safe_close(fd);
                respond_no_artifact(req);
                return;
        }
        base = strrchr(x->path, '/');
        http_respond_fd(req, 200, x->mime_type, fd, x->size, base ? base + 1 : x->path);
}

/* The list read from the store without waiting (the request suspended meanwhile). */
typedef struct ArtifactGet {
        ApiContext *ac;
        HttpRequest *req;
        StoreCall *call;
        char *path;
        char id[REQUEST_ID_MAX + 1];
} ArtifactGet;

static void artifact_get_free(ArtifactGet *g) {
        (void) store_call_cancel(g->call);
        free(g->path);
        free(g);
}

static void on_artifact_get_gone(HttpRequest *req, void *userdata) {
        artifact_get_free(userdata);
}

static void on_artifact_list(void *userdata, int r, ExecArtifacts *a) {
        _cleanup_(exec_artifacts_freep) ExecArtifacts *list = a;
        ArtifactGet *g = userdata;

        g->call = NULL;
        http_request_set_gone_cb(g->req, NULL, NULL);
        artifact_serve(g->ac, g->req, r >= 0 ? list : NULL, g->id, g->path);
        artifact_get_free(g);
}

/* GET of a signed URL: the signature is the authorization (no owner, no API key). */
static void handle_artifact_get(ApiContext *ac, HttpRequest *req, const char *id, const char *path) {
        _cleanup_free_ char *canonical = NULL;
        ArtifactGet *g;
        Job *j;
        int r;

        if (!id_is_valid(id, REQUEST_ID_MAX) || isempty(path) || strlen(path) > SIGNED_URL_PATH_MAX) {
                respond_no_artifact(req);
                return;
        }
        canonical = artifact_url_path(id, path);
        if (!canonical) {
                http_respond_error(req, API_ERROR_INTERNAL, NULL, "out of memory");
                return;
        }
        r = signed_url_verify(ac->ctx->artifact_key, ac->ctx->artifact_key_len, "GET", canonical,
                              http_request_query(req, "expires"), http_request_query(req, "signature"),
                              now_usec(CLOCK_REALTIME) / USEC_PER_SEC);
        if (r < 0) {
                log_debug("%s: artifact URL refused: %s", id, strerror(-r));
                respond_no_artifact(req);
                return;
        }

        j = runner_find(ac->runner, id);
        if (j && job_is_final(j) && j->exec->artifacts) {
                artifact_serve(ac, req, j->exec->artifacts, id, path);
                return;
        }
        if ((j && !job_is_final(j)) || !ac->ctx->store) {
                respond_no_artifact(req);
                return;
        }
        g = calloc(1, sizeof(ArtifactGet));
        if (!g || !(g->path = strdup(path))) {
                free(g);
                http_respond_error(req, API_ERROR_INTERNAL, NULL, "out of memory");
                return;
        }
        g->ac = ac;
        g->req = req;
        strcpy(g->id, id);
        if (store_get_artifacts_async(ac->ctx->store, id, on_artifact_list, g, &g->call) < 0) {
                artifact_get_free(g);
                http_respond_error(req, API_ERROR_INTERNAL, NULL, "out of memory");
                return;
        }
        http_request_suspend(req);
        http_request_set_gone_cb(req, on_artifact_get_gone, g);
}

bool api_route_is_public(const char *method, const char *path) {
        const char *rest, *slash, *p;

        if (!streq_ptr(method, "GET") || !(rest = startswith(path, "/v1/executions/")))
                return false;
        slash = strchr(rest, '/');
        if (!slash || slash == rest)
                return false;
        p = startswith(slash, "/artifacts/");
        return p && *p;
}

bool api_route_is_piston(_unused_ const char *method, const char *path) {
        return startswith(path, "/api/v2/");
}

/* A cancel: the execution looked for without waiting (find_execution_async()), the cancel made, and
 * the answer given once what it wrote is in the store (store_barrier_async()): a 202 is a cancel on
 * record, which a SIGKILL of sandboxd right after it does not undo. */
typedef struct CancelCall {
        ApiContext *ac;
        HttpRequest *req;
        FindLookup *find;
        CancelOp *op;
        bool suspended, cancelled;
        bool admin;
        char owner[HTTP_OWNER_MAX];
        char id[REQUEST_ID_MAX + 1];
} CancelCall;

static void on_cancel_gone(HttpRequest *req, void *userdata) {
        CancelCall *c = userdata;

        (void) find_lookup_cancel(c->find);
        (void) cancel_op_free(c->op);
        free(c);
}

static void cancel_call_end(CancelCall *c) {
        if (c->suspended)
                http_request_set_gone_cb(c->req, NULL, NULL);
        free(c);
}

/* Wait (suspended) for the store: a lookup or the cancel. */
static void cancel_call_suspend(CancelCall *c) {
        if (c->suspended)
                return;
        c->suspended = true;
        http_request_suspend(c->req);
        http_request_set_gone_cb(c->req, on_cancel_gone, c);
}

static void on_cancel_done(void *userdata, int r, StoreRecord *rec);

static void cancel_respond_error(HttpRequest *req, int r, const char *id) {
        if (r == -EALREADY)
                http_respond_error(req, API_ERROR_CONFLICT, NULL, "execution '%s' has already finished", id);
        else if (r == -ENOMEM)
                http_respond_error(req, API_ERROR_INTERNAL, NULL, "out of memory");
        else
                http_respond_error(req, API_ERROR_STORE, NULL, "%s", store_error_public(r));
}

static void on_cancel_found(void *userdata, Job *j, StoreRecord *found) {
        _cleanup_(store_record_freep) StoreRecord *rec = found;
        CancelCall *c = userdata;
        HttpRequest *req = c->req;
        ApiContext *ac = c->ac;
        char id[sizeof(c->id)];
        int r;

        c->find = NULL;
        memcpy(id, c->id, sizeof(id));
        if (c->cancelled) {
                /* After the cancel, the execution as it is now, for the answer. */
                cancel_call_end(c);
                if (j && j->state == JOB_QUEUED && !j->cancel_requested)
                        /* A queued job's claim, which the cancel needed, failed: it is not cancelled. */
                        http_respond_error(req, API_ERROR_STORE, NULL, "%s", store_error_public(-EIO));
                else if (j)
                        respond_job(req, ac, j, 202);
                else if (rec)
                        respond_record(req, ac, TAKE_PTR(rec), 202);
                else
                        http_respond_error(req, API_ERROR_NOT_FOUND, NULL, "no execution '%.64s' (purged)", id);
                return;
        }
        if (!j && !rec) {
                cancel_call_end(c);
                http_respond_error(req, API_ERROR_NOT_FOUND, NULL, "no execution '%.64s'", id);
                return;
        }
        /* Here, or (several nodes) on the node that runs it. */
        if (j)
                log_info("%s: cancel requested", j->exec->id);
        r = cancel_execution_async(ac, j, TAKE_PTR(rec), on_cancel_done, c, &c->op);
        if (r == 0) {
                cancel_call_suspend(c);
                return;
        }
        cancel_call_end(c);
        if (r < 0)
                cancel_respond_error(req, r, id);
        else
                respond_job(req, ac, j, 202);
}

static void on_cancel_done(void *userdata, int r, StoreRecord *rec) {
        CancelCall *c = userdata;

        c->op = NULL;
        if (r < 0 || rec) {
                HttpRequest *req = c->req;
                ApiContext *ac = c->ac;
                char id[sizeof(c->id)];

                memcpy(id, c->id, sizeof(id));
                cancel_call_end(c);
                if (r < 0)
                        cancel_respond_error(req, r, id);
                else
                        respond_record(req, ac, rec, 202);
                return;
        }
        /* Cancelled here, on record. The job may have ended and left memory meanwhile: looked for
         * again. */
        c->cancelled = true;
        r = find_execution_async(c->ac, c->owner, c->admin, c->id, on_cancel_found, c, &c->find);
        if (r < 0) {
                http_respond_error(c->req, API_ERROR_INTERNAL, NULL, "out of memory");
                cancel_call_end(c);
        }
}

static void handle_cancel(ApiContext *ac, HttpRequest *req, const char *id) {
        CancelCall *c;
        int r;

        c = calloc(1, sizeof(CancelCall));
        if (!c) {
                http_respond_error(req, API_ERROR_INTERNAL, NULL, "out of memory");
                return;
        }
        *c = (CancelCall) { .ac = ac, .req = req };
        if (caller_owner(req, c->owner, sizeof(c->owner), &c->admin) < 0) {
                free(c);
                http_respond_error(req, API_ERROR_FORBIDDEN, NULL, "cannot identify the caller");
                return;
        }
        (void) snprintf(c->id, sizeof(c->id), "%s", id);
        /* Answered at once when the job is in memory and nothing waits for the store. */
        r = find_execution_async(ac, c->owner, c->admin, id, on_cancel_found, c, &c->find);
        if (r < 0) {
                free(c);
                http_respond_error(req, API_ERROR_INTERNAL, NULL, "out of memory");
                return;
        }
        if (r == 0)
                cancel_call_suspend(c);
}

static const char *query_get(void *userdata, const char *key) {
        return http_request_query(userdata, key);
}

/* A list: the request waits, suspended, for the store's page. */
typedef struct ListCall {
        ApiContext *ac;
        HttpRequest *req;
        StoreCall *call;
} ListCall;

static void on_list_gone(HttpRequest *req, void *userdata) {
        ListCall *l = userdata;

        (void) store_call_cancel(l->call);
        free(l);
}

static void on_listed(void *userdata, int r, StoreRecord **records, size_t n, char *next) {
        ListCall *l = userdata;
        HttpRequest *req = l->req;
        RequestError err;
        json_object *o;

        http_request_set_gone_cb(req, NULL, NULL);
        if (r < 0) {
                (void) list_error(l->ac, r, &err);
                respond_request_error(req, &err);
        } else if (!(o = list_page_json(records, n, next)))
                http_respond_error(req, API_ERROR_INTERNAL, NULL, "out of memory");
        else
                http_respond_json(req, 200, o);
        store_records_free(records, n);
        free(next);
        free(l);
}

static void handle_list(ApiContext *ac, HttpRequest *req) {
        StoreQuery q = STORE_QUERY_INIT;
        RequestError err;
        char owner[HTTP_OWNER_MAX];
        bool admin = false;
        ListCall *l;
        int r;

        if (caller_owner(req, owner, sizeof(owner), &admin) < 0) {
                http_respond_error(req, API_ERROR_FORBIDDEN, NULL, "cannot identify the caller");
                return;
        }
        if (!admin)
                q.owner = owner;
        /* The same filters, and the same page, as the D-Bus API's ListExecutions. */
        if (list_query_parse(query_get, req, &q, &err) < 0) {
                respond_request_error(req, &err);
                return;
        }
        l = calloc(1, sizeof(ListCall));
        if (!l) {
                http_respond_error(req, API_ERROR_INTERNAL, NULL, "out of memory");
                return;
        }
        *l = (ListCall) { .ac = ac, .req = req };
        /* Answered from the loop, never from inside the call: suspended first. */
        http_request_suspend(req);
        http_request_set_gone_cb(req, on_list_gone, l);
        r = store_list_async(ac->ctx->store, &q, on_listed, l, &l->call);
        if (r < 0) {
                http_request_set_gone_cb(req, NULL, NULL);
                free(l);
                (void) list_error(ac, r, &err);
                respond_request_error(req, &err);
        }
}

/* GET /v1/sessions/{id}: the session, and its recent executions read without waiting. */
typedef struct SessionGet {
        HttpRequest *req;
        json_object *o;
        StoreCall *call;
} SessionGet;

static void on_session_get_gone(HttpRequest *req, void *userdata) {
        SessionGet *g = userdata;

        (void) store_call_cancel(g->call);
        json_object_put(g->o);
        free(g);
}

static void session_get_respond(HttpRequest *req, json_object *o, StoreRecord **l, size_t n) {
        json_object_object_add(o, "recent_executions", session_recent_json(l, n));
        http_respond_json(req, 200, o);
}

static void on_session_recent(void *userdata, int r, StoreRecord **l, size_t n, char *next) {
        SessionGet *g = userdata;

        http_request_set_gone_cb(g->req, NULL, NULL);
        /* A store that cannot answer: the session all the same, without them (as ever). */
        session_get_respond(g->req, g->o, l, r >= 0 ? n : 0);
        store_records_free(l, n);
        free(next);
        free(g);
}

/* A session is seen only by its owner (and administrators); to anyone else it does not exist: the
 * same lookup, and the same 404, as the session's files (api_with_session()). */
static void session_get(ApiContext *ac, HttpRequest *req, Session *s, _unused_ const char *arg) {
        StoreQuery q;
        SessionGet *g;
        json_object *o;

        o = session_to_json(s);
        if (!o) {
                http_respond_error(req, API_ERROR_INTERNAL, NULL, "out of memory");
                return;
        }
        g = ac->ctx->store ? calloc(1, sizeof(SessionGet)) : NULL;
        if (g)
                *g = (SessionGet) { .req = req, .o = o };
        session_recent_query(s, &q);
        if (!g || store_list_async(ac->ctx->store, &q, on_session_recent, g, &g->call) < 0) {
                free(g);
                session_get_respond(req, o, NULL, 0);
                return;
        }
        http_request_suspend(req);
        http_request_set_gone_cb(req, on_session_get_gone, g);
}

static void session_delete(_unused_ ApiContext *ac, HttpRequest *req, Session *s, const char *id) {
        json_object *o;

        /* Before the session goes: its names. */
        o = json_object_new_object();
        json_object_object_add(o, "session_id", json_object_new_string(s->id));
        json_object_object_add(o, "record_id", json_object_new_string(s->key));
        if (session_remove(s, "deleted on request") == -EBUSY) {
                json_object_put(o);
                http_respond_error(req, API_ERROR_CONFLICT, NULL,
                                   "session '%s' has executions queued or running, or a file upload under way", id);
                return;
        }
        json_object_object_add(o, "deleted", json_object_new_boolean(true));
        http_respond_json(req, 200, o);
}

static void handle_session_list(ApiContext *ac, HttpRequest *req) {
        json_object *o, *a;
        char owner[HTTP_OWNER_MAX];
        bool admin = false;

        if (caller_owner(req, owner, sizeof(owner), &admin) < 0) {
                http_respond_error(req, API_ERROR_FORBIDDEN, NULL, "cannot identify the caller");
                return;
        }
        o = json_object_new_object();
        a = json_object_new_array();
        for (Session *s = sessions_first(ac->sessions); s; s = s->next)
                if (may_see(owner, admin, s->owner)) {
                        json_object_array_add(a, session_to_json(s));
                }
        json_object_object_add(o, "sessions", a);
        http_respond_json(req, 200, o);
}

json_object *api_languages_json(ApiContext *ac) {
        json_object *o = json_object_new_object(), *a = json_object_new_array();

        for (size_t i = 0; i < language_count(); i++) {
                const Language *l = language_get(i);
                json_object *e = json_object_new_object(), *al = json_object_new_array();
                char buf[LANGUAGE_REASON_MAX];
                const char *reason;

                json_object_object_add(e, "name", json_object_new_string(l->name));
                for (const char *const *x = l->aliases; x && *x; x++)
                        json_object_array_add(al, json_object_new_string(*x));
                json_object_object_add(e, "aliases", al);
                json_object_object_add(e, "source", json_object_new_string(l->source_name));
                json_object_object_add(e, "compiled", json_object_new_boolean(l->compiles));
                json_object_object_add(e, "version", l->version ? json_object_new_string(l->version) : NULL);
                reason = language_unavailable_reason(l, buf, sizeof(buf));
                json_object_object_add(e, "available", json_object_new_boolean(!reason));
                if (reason)
                        json_object_object_add(e, "reason", json_object_new_string(reason));
                json_object_object_add(e, "environments", environments_json_for_language(ac->ctx->environments, l->name));
                json_object_array_add(a, e);
        }
        json_object_object_add(o, "languages", a);
        return o;
}

static void handle_languages(ApiContext *ac, HttpRequest *req) {
        http_respond_json(req, 200, api_languages_json(ac));
}

static void add_pool_unit(void *userdata, const char *unit, _unused_ const char *language, _unused_ bool ready) {
        json_object_array_add(userdata, json_object_new_string(unit));
}

/* The warm pool: its size, what is ready per language, and the units nobody has claimed (so that
 * an administrator, or a test, can tell them from executions' units). */
static json_object *pool_json(const Context *ctx) {
        json_object *o = json_object_new_object(), *ready = json_object_new_object(), *units = json_object_new_array(),
                    *preloaded = json_object_new_object(), *strong = json_object_new_object();
        bool strong_kept = !ctx->strong_unavailable && ctx->isolation.policy != ISOLATION_POLICY_NEVER;

        json_object_object_add(o, "size", json_object_new_uint64(ctx->config->pool_size));
        json_object_object_add(o, "strong_size", json_object_new_uint64(strong_kept ? ctx->config->pool_strong_size : 0));
        for (size_t i = 0; i < language_count(); i++) {
                const Language *l = language_get(i);

                if (!warm_language_pooled(ctx->config, l))
                        continue;
                json_object_object_add(ready, l->name,
                                       json_object_new_uint64(ctx->warm ? warm_pool_ready(ctx->warm, l, -1) : 0));
                if (warm_language_preloads(ctx->config, l))
                        json_object_object_add(preloaded, l->name,
                                               json_object_new_uint64(ctx->warm ? warm_pool_ready(ctx->warm, l, 1)
                                                                                : 0));
                if (strong_kept && warm_language_strong(ctx->config, l))
                        json_object_object_add(strong, l->name,
                                               json_object_new_uint64(ctx->warm ? warm_pool_ready_strong(ctx->warm, l) : 0));
        }
        json_object_object_add(o, "ready", ready);
        json_object_object_add(o, "preloaded", preloaded);
        json_object_object_add(o, "strong", strong);
        {
                json_object *envs = json_object_new_object();

                for (char **e = ctx->config->pool_environments; e && *e; e++)
                        if (ctx->config->pool_size > 0 && environments_find(ctx->environments, *e))
                                json_object_object_add(envs, *e,
                                                       json_object_new_uint64(ctx->warm ?
                                                                              warm_pool_ready_environment(ctx->warm, *e) : 0));
                json_object_object_add(o, "environments", envs);
        }
        if (ctx->warm)
                warm_pool_foreach(ctx->warm, add_pool_unit, units);
        json_object_object_add(o, "units", units);
        return o;
}

static json_object *timestamp_json(uint64_t usec) {
        char buf[64];

        if (usec == 0)
                return NULL;
        format_timestamp(usec, buf, sizeof(buf));
        return json_object_new_string(buf);
}

/* This node and the registry (run/node.h): the rows as read at the last heartbeat, alive judged
 * against the clock now. */
static void add_nodes_json(json_object *o, const Node *node) {
        json_object *self = json_object_new_object(), *nodes = json_object_new_array();
        uint64_t now = now_usec(CLOCK_REALTIME);
        const StoreNode *l;
        size_t n;

        json_object_object_add(self, "name", node_name(node) ? json_object_new_string(node_name(node)) : NULL);
        json_object_object_add(self, "epoch", json_object_new_uint64(node_epoch(node)));
        json_object_object_add(self, "lease_expires_at", timestamp_json(node_lease_expires_usec(node)));
        json_object_object_add(o, "node", self);

        l = node_registry(node, &n);
        for (size_t i = 0; i < n; i++) {
                json_object *x = json_object_new_object();

                json_object_object_add(x, "name", json_object_new_string(l[i].name));
                json_object_object_add(x, "epoch", json_object_new_uint64(l[i].epoch));
                json_object_object_add(x, "started_at", timestamp_json(l[i].started_usec));
                json_object_object_add(x, "heartbeat_at", timestamp_json(l[i].heartbeat_usec));
                json_object_object_add(x, "lease_expires_at", timestamp_json(l[i].lease_expires_usec));
                json_object_object_add(x, "alive", json_object_new_boolean(store_node_is_alive(&l[i], now)));
                json_object_object_add(x, "slots", json_object_new_uint64(l[i].slots));
                json_object_object_add(x, "running", json_object_new_uint64(l[i].running));
                json_object_array_add(nodes, x);
        }
        json_object_object_add(o, "nodes", nodes);
}

static void handle_health(ApiContext *ac, HttpRequest *req) {
        json_object *o = json_object_new_object();
        RunnerCounts n;

        runner_counts(ac->runner, &n);
        json_object_object_add(o, "status", json_object_new_string(ac->ctx->stopping ? "stopping" : "ok"));
        json_object_object_add(o, "version", json_object_new_string(PACKAGE_VERSION));
        json_object_object_add(o, "running", json_object_new_int((int) n.running));
        json_object_object_add(o, "queued", json_object_new_int((int) n.queued));
        json_object_object_add(o, "slots", json_object_new_uint64(ac->ctx->config->max_concurrent));
        json_object_object_add(o, "queue_max", json_object_new_uint64(ac->ctx->config->max_queued));
        json_object_object_add(o, "finished", json_object_new_uint64(n.finished_total));
        json_object_object_add(o, "cgroup", json_object_new_string(ac->ctx->cgroup_v2 ? "v2" : "v1"));
        json_object_object_add(o, "pool", pool_json(ac->ctx));
        {
                /* The tiers (docs/isolation.md): the policy in force, whether the strong one can run. */
                json_object *iso = json_object_new_object();

                json_object_object_add(iso, "policy",
                                       json_object_new_string(isolation_policy_to_string(ac->ctx->isolation.policy)));
                json_object_object_add(iso, "strong_available", json_object_new_boolean(!ac->ctx->strong_unavailable));
                json_object_object_add(iso, "strong_unavailable_reason",
                                       ac->ctx->strong_unavailable ? json_object_new_string(ac->ctx->strong_unavailable)
                                                                   : NULL);
                json_object_object_add(o, "isolation", iso);
        }
        add_nodes_json(o, ac->node);
        http_respond_json(req, 200, o);
}

/* Prometheus text exposition. Counters are this process's: they start over when sandboxd restarts,
 * which Prometheus' rate() handles as a counter reset. Every caller may read them (on TCP only with
 * a valid key, as every request): they are totals and say nothing about anyone's executions. */
typedef struct MetricsCall {
        ApiContext *ac;
        HttpRequest *req;
        StoreCall *call;
} MetricsCall;

static void metrics_respond(ApiContext *ac, HttpRequest *req, uint64_t outbox) {
        MetricsGauges g;
        char *text = NULL;

        ac->ops->gauges(ac->ops_data, &g);
        g.outbox = outbox;
        if (metrics_render(ac->ctx->metrics, &g, &text) < 0) {
                http_respond_error(req, API_ERROR_INTERNAL, NULL, "out of memory");
                return;
        }
        http_respond_text(req, 200, "text/plain; version=0.0.4; charset=utf-8", text);
}

static void on_metrics_gone(HttpRequest *req, void *userdata) {
        MetricsCall *mc = userdata;

        (void) store_call_cancel(mc->call);
        free(mc);
}

/* The outbox's pending deliveries are counted in the store (one indexed count, without waiting);
 * an error counts as none, as it always did. */
static void on_outbox_counted(void *userdata, int r, uint64_t n) {
        MetricsCall *mc = userdata;

        http_request_set_gone_cb(mc->req, NULL, NULL);
        metrics_respond(mc->ac, mc->req, r >= 0 ? n : 0);
        free(mc);
}

static void handle_metrics(ApiContext *ac, HttpRequest *req) {
        MetricsCall *mc;

        if (!ac->ctx->store || !(mc = calloc(1, sizeof(MetricsCall)))) {
                metrics_respond(ac, req, 0);
                return;
        }
        *mc = (MetricsCall) { .ac = ac, .req = req };
        if (store_callback_count_async(ac->ctx->store, CALLBACK_PENDING, on_outbox_counted, mc, &mc->call) < 0) {
                free(mc);
                metrics_respond(ac, req, 0);
                return;
        }
        http_request_suspend(req);
        http_request_set_gone_cb(req, on_metrics_gone, mc);
}

void api_route_match(const char *method, const char *path, ApiRoute *ret) {
        bool get = streq(method, "GET"), post = streq(method, "POST");
        const char *rest;

        *ret = (ApiRoute) { .id = API_ROUTE_NOT_FOUND };

#define ROUTE(cond, route, message) do {                                \
                if (cond)                                               \
                        ret->id = (route);                              \
                else {                                                  \
                        ret->id = API_ROUTE_METHOD_NOT_ALLOWED;         \
                        ret->allow = (message);                         \
                }                                                       \
                return;                                                 \
        } while (false)

        if (streq(path, "/v1/executions")) {
                if (post)
                        ret->id = API_ROUTE_SUBMIT;
                else
                        ROUTE(get, API_ROUTE_LIST, "use GET or POST");
                return;
        }
        if ((rest = startswith(path, "/v1/executions/"))) {
                const char *slash = strchr(rest, '/');
                size_t n = slash ? (size_t) (slash - rest) : strlen(rest);

                if (n == 0 || n > REQUEST_ID_MAX) {
                        ret->id = API_ROUTE_NO_EXECUTION;
                        return;
                }
                memcpy(ret->execution_id, rest, n);
                ret->execution_id[n] = 0;
                if (!slash)
                        ROUTE(get, API_ROUTE_GET, "use GET");
                if (streq(slash, "/artifacts"))
                        ROUTE(get, API_ROUTE_ARTIFACTS_LIST, "use GET");
                if (startswith(slash, "/artifacts/")) {
                        ret->arg = slash + strlen("/artifacts/");
                        ROUTE(get, API_ROUTE_ARTIFACT_GET, "use GET");
                }
                if (streq(slash, "/cancel"))
                        ROUTE(post, API_ROUTE_CANCEL, "use POST");
                if (streq(slash, "/events"))
                        ROUTE(get, API_ROUTE_EVENTS, "use GET");
                ret->execution_id[0] = 0;
        }
        if (streq(path, "/v1/sessions"))
                ROUTE(get, API_ROUTE_SESSION_LIST, "use GET");
        if ((rest = startswith(path, "/v1/sessions/")) && strchr(rest, '/')) {
                const char *slash = strchr(rest, '/'), *tail;
                size_t n = (size_t) (slash - rest);

                if (n == 0 || n > REQUEST_ID_MAX) {
                        ret->id = API_ROUTE_NO_SESSION;
                        return;
                }
                if (!streq(slash, "/files") && !startswith(slash, "/files/"))
                        return;         /* no route */
                memcpy(ret->session_id, rest, n);
                ret->session_id[n] = 0;
                tail = slash + strlen("/files");
                ret->arg = *tail ? tail + 1 : tail;
                ROUTE(get || streq(method, "PUT") || streq(method, "DELETE"), API_ROUTE_SESSION_FILES,
                      "use GET, PUT or DELETE");
        }
        if ((rest = startswith(path, "/v1/sessions/"))) {
                if (strlen(rest) == 0 || strlen(rest) > REQUEST_ID_MAX || strchr(rest, '/')) {
                        ret->id = API_ROUTE_NO_SESSION;
                        return;
                }
                ret->arg = rest;
                if (get)
                        ret->id = API_ROUTE_SESSION_GET;
                else
                        ROUTE(streq(method, "DELETE"), API_ROUTE_SESSION_DELETE, "use GET or DELETE");
                return;
        }
        if (streq(path, "/v1/languages") && get) {
                ret->id = API_ROUTE_LANGUAGES;
                return;
        }
        if (streq(path, "/v1/health") && get) {
                ret->id = API_ROUTE_HEALTH;
                return;
        }
        if (streq(path, "/metrics"))
                ROUTE(get, API_ROUTE_METRICS, "use GET");
        /* MCP's Streamable HTTP: no server-initiated stream (GET), no session to end (DELETE). */
        if (streq(path, "/mcp"))
                ROUTE(post, API_ROUTE_MCP, "use POST (this MCP server offers no SSE stream)");
        /* Piston's API v2, for its clients (piston-http.c). */
        if (streq(path, "/api/v2/runtimes"))
                ROUTE(get, API_ROUTE_PISTON_RUNTIMES, "use GET");
        if (streq(path, "/api/v2/execute"))
                ROUTE(post, API_ROUTE_PISTON_EXECUTE, "use POST");
#undef ROUTE
}

void api_begin(HttpRequest *req, void *userdata) {
        ApiContext *ac = userdata;
        ApiRoute route;

        /* A session file's PUT takes its body as a stream: up to MaxInputFileBytes=, not
         * MaxRequestBytes=, and none of it in memory. */
        api_route_match(http_request_method(req), http_request_path(req), &route);
        if (route.id == API_ROUTE_SESSION_FILES && streq(http_request_method(req), "PUT"))
                api_session_files_begin(ac, req, route.session_id, route.arg);
}

bool api_route_needs_store(ApiRouteId id) {
        switch (id) {
        case API_ROUTE_SUBMIT:
        case API_ROUTE_LIST:
        case API_ROUTE_GET:
        case API_ROUTE_ARTIFACTS_LIST:
        case API_ROUTE_ARTIFACT_GET:
        case API_ROUTE_CANCEL:
        case API_ROUTE_EVENTS:
        case API_ROUTE_SESSION_LIST:
        case API_ROUTE_SESSION_GET:
        case API_ROUTE_SESSION_DELETE:
        case API_ROUTE_MCP:
        case API_ROUTE_PISTON_EXECUTE:
                return true;
        default:
                return false;
        }
}

void api_handle(HttpRequest *req, void *userdata) {
        ApiContext *ac = userdata;
        const char *method = http_request_method(req), *path = http_request_path(req);
        ApiRoute route;

        api_route_match(method, path, &route);
        /* The store takes every call (store.h): what a caller may add to its queue stops here while it
         * is far behind. */
        if (api_route_needs_store(route.id) && store_is_behind(ac->ctx->store)) {
                http_respond_error(req, API_ERROR_STORE, NULL,
                                   "the store is far behind (%zu calls waiting for it); retry later",
                                   store_async_pending(ac->ctx->store));
                return;
        }
        switch (route.id) {
        case API_ROUTE_SUBMIT:
                handle_submit(ac, req);
                return;
        case API_ROUTE_LIST:
                handle_list(ac, req);
                return;
        case API_ROUTE_GET:
                handle_get(ac, req, route.execution_id);
                return;
        case API_ROUTE_ARTIFACTS_LIST:
                handle_artifacts_list(ac, req, route.execution_id);
                return;
        case API_ROUTE_ARTIFACT_GET:
                handle_artifact_get(ac, req, route.execution_id, route.arg);
                return;
        case API_ROUTE_CANCEL:
                handle_cancel(ac, req, route.execution_id);
                return;
        case API_ROUTE_EVENTS:
                api_handle_events(ac, req, route.execution_id);
                return;
        case API_ROUTE_SESSION_LIST:
                handle_session_list(ac, req);
                return;
        case API_ROUTE_SESSION_GET:
                api_with_session(ac, req, route.arg, NULL, session_get);
                return;
        case API_ROUTE_SESSION_DELETE:
                api_with_session(ac, req, route.arg, route.arg, session_delete);
                return;
        case API_ROUTE_SESSION_FILES:
                api_handle_session_files(ac, req, route.session_id, route.arg);
                return;
        case API_ROUTE_LANGUAGES:
                handle_languages(ac, req);
                return;
        case API_ROUTE_HEALTH:
                handle_health(ac, req);
                return;
        case API_ROUTE_METRICS:
                handle_metrics(ac, req);
                return;
        case API_ROUTE_MCP:
                api_handle_mcp(ac, req);
                return;
        case API_ROUTE_PISTON_RUNTIMES:
                api_handle_piston_runtimes(ac, req);
                return;
        case API_ROUTE_PISTON_EXECUTE:
                api_handle_piston_execute(ac, req);
                return;
        case API_ROUTE_NO_EXECUTION:
                http_respond_error(req, API_ERROR_NOT_FOUND, NULL, "no such execution");
                return;
        case API_ROUTE_NO_SESSION:
                http_respond_error(req, API_ERROR_NOT_FOUND, NULL, "no such session");
                return;
        case API_ROUTE_METHOD_NOT_ALLOWED:
                http_respond_error(req, API_ERROR_METHOD_NOT_ALLOWED, NULL, "%s", route.allow);
                return;
        case API_ROUTE_NOT_FOUND:
        case _API_ROUTE_MAX:
                break;
        }
        http_respond_error(req, API_ERROR_NOT_FOUND, NULL, "no route for %s %.128s", method, path);
}

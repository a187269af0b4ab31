/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <pthread.h>

#include "base64.h"
#include "model/language.h"
#include "node-name.h"
#include "store-internal.h"
#include "string-table.h"

/* ---- records ---- */

StoreRecord *store_record_new(const char *id) {
        StoreRecord *r = calloc(1, sizeof(StoreRecord));

        if (!r)
                return NULL;
        r->exec = execution_new(id);
        if (!r->exec)
                return mfree(r);
        return r;
}

static const char *const callback_state_table[_CALLBACK_STATE_MAX] = {
        [CALLBACK_PENDING] = "pending",
        [CALLBACK_DELIVERED] = "delivered",
        [CALLBACK_FAILED] = "failed",
};

DEFINE_STRING_TABLE_LOOKUP(callback_state, CallbackState);

StoreCallback *store_callback_free(StoreCallback *c) {
        if (!c)
                return NULL;
        free(c->execution_id);
        free(c->url);
        free(c->delivery_id);
        free(c->last_error);
        free(c->body);
        free(c->client_id);
        return mfree(c);
}

void store_callbacks_free(StoreCallback **l, size_t n) {
        if (!l)
                return;
        for (size_t i = 0; i < n; i++)
                store_callback_free(l[i]);
        free(l);
}

StoreRecord *store_record_free(StoreRecord *r) {
        if (!r)
                return NULL;
        store_callback_free(r->callback);
        execution_free(r->exec);
        free(r->code);
        free(r->workspace);
        free(r->request);
        free(r->owner);
        return mfree(r);
}

void store_records_free(StoreRecord **l, size_t n) {
        if (!l)
                return;
        for (size_t i = 0; i < n; i++)
                store_record_free(l[i]);
        free(l);
}

/* Backends store unsigned values in signed 64-bit columns (SQLite INTEGER, PostgreSQL BIGINT):
 * refuse what would come back negative rather than store it wrapped. */
static bool u64_fits(uint64_t v) {
        return v <= (uint64_t) INT64_MAX;
}

bool store_callback_is_valid(const StoreCallback *c, bool need_body) {
        if (!c || !id_is_valid(c->execution_id, STORE_ID_MAX) || !id_is_valid(c->delivery_id, STORE_ID_MAX))
                return false;
        if (isempty(c->url) || (need_body && !c->body))
                return false;
        if (c->state < 0 || c->state >= _CALLBACK_STATE_MAX)
                return false;
        return u64_fits(c->attempts) && u64_fits(c->next_attempt_usec) && u64_fits(c->created_usec) &&
               u64_fits(c->delivered_usec);
}

bool store_record_is_valid(const StoreRecord *r) {
        const Execution *e;

        if (!r || !r->exec)
                return false;
        e = r->exec;
        if (!id_is_valid(e->id, STORE_ID_MAX))
                return false;
        if (e->session_id && !id_is_valid(e->session_id, STORE_ID_MAX))
                return false;
        if (e->client_id && !id_is_valid(e->client_id, STORE_ID_MAX))
                return false;
        if (isempty(e->language))
                return false;
        if (e->status < 0 || e->status >= _EXEC_STATUS_MAX)
                return false;
        if (e->error_type < 0 || e->error_type >= _ERROR_TYPE_MAX)
                return false;
        if (r->owner && isempty(r->owner))
                return false;
        if (!isfinite(e->limits.cpu_cores))
                return false;
        if (r->callback && (!store_callback_is_valid(r->callback, true) || !streq(r->callback->execution_id, e->id)))
                return false;

        const uint64_t values[] = {
                e->out.bytes, e->out.lines, e->err.bytes, e->err.lines, e->duration_ms, e->cpu_usec,
                e->peak_memory_bytes, e->created_usec, e->started_usec, e->finished_usec,
                e->limits.timeout_ms, e->limits.memory_mb, e->limits.disk_mb, e->limits.tasks,
        };
        for (size_t i = 0; i < ELEMENTSOF(values); i++)
                if (!u64_fits(values[i]))
                        return false;
        return true;
}

/* ---- interned strings ---- */

/* Execution.language and Execution.reason point to strings that live as long as the process: each
 * distinct one is copied once into a table of its own kind. Languages come and go with reloads
 * (their tables are freed), so their names are copies too; the reasons are the few the verdict rules
 * produce. A bound that a hostile or damaged database could exhaust costs nothing but the fallback.
 * Kept reachable from a static, so leak checkers are quiet. */
#define INTERN_REASONS_MAX 128
#define INTERN_LANGUAGES_MAX 512
#define INTERN_LEN_MAX 256

typedef struct InternTable {
        char **strings;
        size_t n, max;
} InternTable;

static pthread_mutex_t intern_lock = PTHREAD_MUTEX_INITIALIZER;
static char *reasons[INTERN_REASONS_MAX], *languages[INTERN_LANGUAGES_MAX];
static InternTable intern_reasons = { reasons, 0, INTERN_REASONS_MAX };
static InternTable intern_languages = { languages, 0, INTERN_LANGUAGES_MAX };

static const char *intern(InternTable *t, const char *s) {
        const char *found = NULL;

        if (!s || strlen(s) > INTERN_LEN_MAX)
                return NULL;

        pthread_mutex_lock(&intern_lock);
        for (size_t i = 0; i < t->n; i++)
                if (streq(t->strings[i], s)) {
                        found = t->strings[i];
                        break;
                }
        if (!found && t->n < t->max) {
                char *c = strdup(s);
                if (c)
                        found = t->strings[t->n++] = c;
        }
        pthread_mutex_unlock(&intern_lock);
        return found;
}

const char *store_intern_language(const char *name) {
        const char *i;

        if (!name)
                return "unknown";
        i = intern(&intern_languages, name);
        return i ?: "unknown";
}

const char *store_intern_reason(const char *reason) {
        return intern(&intern_reasons, reason);
}

/* ---- cursors ---- */

/* A cursor is base64url (no padding) of "<o>:<key>:<execution_id>", o being 'c' (created_at) or
 * 'd' (duration_ms). Opaque to clients, but nothing secret: it only says where a page ended, and
 * the caller's own filters (owner included) still apply to the next page. */
#define CURSOR_PAYLOAD_MAX (2 + 20 + 1 + STORE_ID_MAX)
#define CURSOR_TEXT_MAX ((CURSOR_PAYLOAD_MAX * 4 + 2) / 3)

static int cursor_payload(const StoreCursor *c, char *buf, size_t size) {
        int k;

        if (c->order < 0 || c->order >= _STORE_ORDER_MAX || !u64_fits(c->key) ||
            !id_is_valid(c->id, STORE_ID_MAX))
                return -EINVAL;
        k = snprintf(buf, size, "%c:%" PRIu64 ":%s", c->order == STORE_ORDER_CREATED_AT ? 'c' : 'd', c->key,
                     c->id);
        if (k < 0 || (size_t) k >= size)
                return -EINVAL;
        return k;
}

int store_cursor_format(const StoreCursor *c, char **ret) {
        char payload[CURSOR_PAYLOAD_MAX + 1];
        char *s;
        int k;

        k = cursor_payload(c, payload, sizeof(payload));
        if (k < 0)
                return k;
        s = base64url_encode(payload, (size_t) k);
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

int store_cursor_parse(const char *s, StoreCursor *ret) {
        _cleanup_free_ uint8_t *buf = NULL;
        char canonical[CURSOR_PAYLOAD_MAX + 1];
        _cleanup_free_ char *again = NULL;
        StoreCursor c = {};
        char *key, *id, *colon;
        size_t n;
        int r;

        if (isempty(s) || strlen(s) > CURSOR_TEXT_MAX)
                return -EINVAL;
        r = base64url_decode(s, strlen(s), &buf, &n);
        if (r < 0)
                return r;
        /* NUL-terminated by the decoder. */
        if (n > CURSOR_PAYLOAD_MAX || memchr(buf, 0, n))
                return -EINVAL;

        if (n < 2 || buf[1] != ':')
                return -EINVAL;
        if (buf[0] == 'c')
                c.order = STORE_ORDER_CREATED_AT;
        else if (buf[0] == 'd')
                c.order = STORE_ORDER_DURATION_MS;
        else
                return -EINVAL;

        key = (char *) buf + 2;
        colon = strchr(key, ':');
        if (!colon)
                return -EINVAL;
        *colon = 0;
        id = colon + 1;
        if (safe_atou64(key, &c.key) < 0 || !u64_fits(c.key))
                return -EINVAL;
        if (!id_is_valid(id, STORE_ID_MAX))
                return -EINVAL;
        strcpy(c.id, id);

        /* Only the one spelling we produce: no leading zeros, no stray low bits in the last
         * character. A cursor is either exactly one of ours or garbage. */
        r = cursor_payload(&c, canonical, sizeof(canonical));
        if (r < 0)
                return r;
        again = base64url_encode(canonical, (size_t) r);
        if (!again)
                return -ENOMEM;
        if (!streq(again, s))
                return -EINVAL;

        *ret = c;
        return 0;
}

/* ---- dispatch ---- */

void store_set_error(Store *s, const char *message) {
        char *m;

        if (!s)
                return;
        m = strdup(message ?: "unknown error");
        if (!m)
                return;
        free(s->error);
        s->error = m;
}

char *store_one_line(char *m) {
        char *o = m;

        if (!m)
                return NULL;
        for (const char *c = m; *c; c++) {
                char x = *c == '\n' || *c == '\r' || *c == '\t' ? ' ' : *c;

                if (x == ' ' && (o == m || o[-1] == ' '))
                        continue;       /* no leading or doubled spaces */
                *o++ = x;
        }
        while (o > m && o[-1] == ' ')
                o--;
        *o = 0;
        return m;
}

int store_open_failv(char **ret_error, const char *name, int r, const char *fmt, va_list ap) {
        _cleanup_free_ char *what = NULL;

        if (vasprintf(&what, fmt, ap) < 0)
                return -ENOMEM;
        if (ret_error) {
                free(*ret_error);
                if (asprintf(ret_error, "%s: %s", strna(name), store_one_line(what)) < 0)
                        *ret_error = NULL;
        }
        return r;
}

const char *store_error_message(Store *s) {
        return s && s->error ? s->error : "no error";
}

const char *store_error_public(int r) {
        switch (r) {
        case -ENOSPC:
                return "the store is full";
        case -EBUSY:
                return "the store is busy";
        case -EROFS:
        case -EACCES:
        case -EPERM:
                return "the store cannot be written";
        case -EBADMSG:
                return "the store is damaged";
        case -ENOMEM:
                return "out of memory";
        default:
                return "the store is unavailable";
        }
}

/* ---- asynchronous calls ---- */

static void store_call_list_free(StoreCallShape shape, void *list, size_t n) {
        if (shape == STORE_CALL_NODES)
                store_nodes_free(list, n);
        else if (shape == STORE_CALL_RECORDS)
                store_records_free(list, n);
        else if (shape == STORE_CALL_CALLBACKS)
                store_callbacks_free(list, n);
        else if (shape == STORE_CALL_USAGE)
                free(list);
        else if (shape == STORE_CALL_SESSION)
                store_sessions_free(list, n);
        else if (shape == STORE_CALL_PAGE)
                store_records_free(list, n);
        else if (shape == STORE_CALL_ARTIFACTS)
                exec_artifacts_free(list);
        else if (shape == STORE_CALL_CALLBACK)
                store_callback_free(list);
        else if (shape == STORE_CALL_U64)
                free(list);
}

static StoreCall *store_call_free(StoreCall *c) {
        if (!c)
                return NULL;
        if (c->data_free)
                c->data_free(c->data);
        store_record_free(c->record);
        store_call_list_free(c->shape, c->list, c->n_list);
        free(c->error);
        return mfree(c);
}

static int list_page(StoreRecord **l, size_t *n, unsigned limit, StoreOrder order, char **ret_next);

/* A call's answer to its callback, by its shape; what nobody takes is freed. */
static void store_call_deliver(StoreCall *c) {
        if (c->done)
                c->done(c->userdata, c->result, TAKE_PTR(c->record));
        else if (c->usage_done)
                c->usage_done(c->userdata, c->result, c->result >= 0 ? c->list : NULL);
        else if (c->u64_done)
                c->u64_done(c->userdata, c->result, c->result >= 0 && c->list ? *(uint64_t *) c->list : 0);
        else if (c->artifacts_done || c->callback_done) {
                void *one = c->result >= 0 ? TAKE_PTR(c->list) : NULL;

                c->n_list = 0;
                if (c->artifacts_done)
                        c->artifacts_done(c->userdata, c->result, one);
                else
                        c->callback_done(c->userdata, c->result, one);
        } else if (c->page_done) {
                StoreRecord **l = c->result >= 0 ? TAKE_PTR(c->list) : NULL;
                size_t n = c->n_list;
                char *next = NULL;
                int r = c->result;

                c->n_list = 0;
                if (r >= 0) {
                        r = list_page(l, &n, c->page_limit, c->page_order, &next);
                        if (r < 0) {
                                store_records_free(l, n);
                                l = NULL;
                                n = 0;
                        }
                }
                c->page_done(c->userdata, r, l, n, next);
        } else if (c->session_done) {
                /* The list shape holds every matching row: none is -ENOENT, as store_session_get(). */
                int r = c->result >= 0 && c->n_list == 0 ? -ENOENT : c->result;

                c->n_list = 0;
                c->session_done(c->userdata, r, r >= 0 ? TAKE_PTR(c->list) : NULL);
        }
        else if (c->nodes_done || c->records_done || c->callbacks_done) {
                size_t n = c->n_list;

                c->n_list = 0;
                if (c->nodes_done)
                        c->nodes_done(c->userdata, c->result, TAKE_PTR(c->list), n);
                else if (c->records_done)
                        c->records_done(c->userdata, c->result, TAKE_PTR(c->list), n);
                else
                        c->callbacks_done(c->userdata, c->result, TAKE_PTR(c->list), n);
        }
}

/* Take c out of s->calls (it is there). */
static void store_call_unlink(Store *s, StoreCall *c) {
        StoreCall *prev = NULL;

        for (StoreCall *i = s->calls; i && i != c; i = i->next)
                prev = i;
        if (prev)
                prev->next = c->next;
        else
                s->calls = c->next;
        if (s->calls_tail == c)
                s->calls_tail = prev;
        c->next = NULL;
        s->n_calls--;
}

uint64_t store_notify_horizon(Store *s) {
        return s->calls && s->calls->finished ? s->calls->finish_seq : UINT64_MAX;
}

static void store_notify_flush(Store *s) {
        if (s->ops->notify_flush)
                s->ops->notify_flush(s);
}

/* Deliver the finished calls at the head, in order, each after the notifications that came before it
 * (store_notify_horizon()). Only as many as were there when it started: a callback that makes
 * another call (SQLite finishes it at once) is delivered at the next iteration, so that a callback
 * calling again and again cannot hold the loop here. */
static int on_calls_defer(sd_event_source *es, void *userdata) {
        Store *s = userdata;
        size_t budget = s->n_calls;

        while (budget-- > 0 && s->calls && s->calls->finished) {
                StoreCall *c = s->calls;

                /* What was notified before this answer came goes first. */
                store_notify_flush(s);
                if (s->calls != c)
                        continue;       /* delivered meanwhile (a listener drained the store) */
                store_call_unlink(s, c);
                if (c->done || c->nodes_done || c->records_done || c->callbacks_done || c->usage_done ||
                    c->session_done || c->page_done || c->artifacts_done || c->callback_done || c->u64_done) {
                        if (c->result < 0 && c->error)
                                store_set_error(s, c->error);
                        store_call_deliver(c);
                }
                store_call_free(c);
        }
        if (s->calls && s->calls->finished)
                (void) sd_event_source_set_enabled(s->calls_defer, SD_EVENT_ONESHOT);
        else
                store_notify_flush(s);
        return 0;
}

static int record_older(const void *a, const void *b);

static void store_call_finished(StoreCall *c, int r) {
        Store *s = c->store;

        assert(!c->finished);
        c->finished = true;
        c->finish_seq = ++s->finish_seq;
        c->result = r;
        if (r < 0)
                c->error = strdup(store_error_message(s));  /* NULL on OOM: the message at delivery */
        if (s->calls->finished)
                (void) sd_event_source_set_enabled(s->calls_defer, SD_EVENT_ONESHOT);
}

void store_call_finish(StoreCall *c, int r, StoreRecord *rec) {
        c->record = rec;
        store_call_finished(c, r);
}

static void store_call_set_list(StoreCall *c, void *list, size_t n) {
        c->list = list;
        c->n_list = list ? n : 0;
        if (c->shape == STORE_CALL_RECORDS && c->sort_records && c->n_list > 1)
                qsort(c->list, c->n_list, sizeof(StoreRecord *), record_older);
}

void store_call_finish_list(StoreCall *c, int r, void *list, size_t n) {
        store_call_set_list(c, list, n);
        store_call_finished(c, r);
}

static int store_call_new(Store *s, StoreDoneFn done, void *userdata, StoreCall **ret) {
        StoreCall *c;

        /* Never refused for being behind: what callers can start is bounded before it comes here
         * (store.h, store_is_behind()). */
        c = calloc(1, sizeof(StoreCall));
        if (!c)
                return -ENOMEM;
        c->store = s;
        c->done = done;
        c->userdata = userdata;
        if (s->calls_tail)
                s->calls_tail->next = c;
        else
                s->calls = c;
        s->calls_tail = c;
        s->n_calls++;
        *ret = c;
        return 0;
}

/* After the backend's op returned r: keep c (started, or finished synchronously), or drop it. */
static int store_call_start(Store *s, StoreCall *c, int r, StoreCall **ret_call) {
        if (r < 0 && r != -EOPNOTSUPP) {
                store_call_unlink(s, c);
                store_call_free(c);
                return r;
        }
        if (ret_call)
                *ret_call = c;
        return 0;
}

/* One asynchronous call: start() hands it to the backend (-EOPNOTSUPP: the backend cannot make it
 * without waiting), sync() makes it synchronously (without an event loop, or what the backend cannot
 * start), with what store_*() returns and, for a call that reads one, its record. */
typedef int (*StoreAsyncStartFn)(Store *s, const void *args, StoreCall *c);
typedef int (*StoreSyncFn)(Store *s, const void *args, StoreRecord **ret);

static int store_async_run(Store *s, StoreAsyncStartFn start, StoreSyncFn sync, const void *args, StoreDoneFn done,
                           void *userdata, StoreCall **ret_call) {
        _cleanup_(store_record_freep) StoreRecord *got = NULL;
        StoreCall *c = NULL;
        int r;

        if (ret_call)
                *ret_call = NULL;
        /* Without a loop to call back from: now, before returning (store.h). */
        if (!s->event) {
                r = sync(s, args, &got);
                if (done)
                        done(userdata, r, r >= 0 ? TAKE_PTR(got) : NULL);
                return 0;
        }
        r = store_call_new(s, done, userdata, &c);
        if (r < 0)
                return r;
        r = start(s, args, c);
        if (r == -EOPNOTSUPP) {
                /* Synchronously (SQLite; what a backend cannot send without waiting), in its order: a
                 * synchronous call waits for the ones queued before it. */
                int k = sync(s, args, &got);

                store_call_finish(c, k, k >= 0 ? TAKE_PTR(got) : NULL);
        }
        return store_call_start(s, c, r, ret_call);
}

/* The same for a call answering with a list (the shape's callback in c, set by the caller). */
typedef int (*StoreSyncListFn)(Store *s, const void *args, void **ret, size_t *ret_n);

static int store_async_run_list(Store *s, StoreAsyncStartFn start, StoreSyncListFn sync, const void *args,
                                const StoreCall *how, StoreCall **ret_call) {
        StoreCall *c = NULL, now = *how;
        void *got = NULL;
        size_t n = 0;
        int r;

        if (ret_call)
                *ret_call = NULL;
        if (!s->event) {
                /* Without a loop to call back from: now, before returning (store.h). */
                r = sync(s, args, &got, &n);
                if (r < 0) {
                        store_call_list_free(now.shape, got, n);
                        got = NULL;
                }
                now.result = r;
                store_call_set_list(&now, got, n);
                store_call_deliver(&now);
                store_call_list_free(now.shape, now.list, now.n_list);
                return 0;
        }
        r = store_call_new(s, NULL, how->userdata, &c);
        if (r < 0)
                return r;
        c->shape = how->shape;
        c->nodes_done = how->nodes_done;
        c->records_done = how->records_done;
        c->callbacks_done = how->callbacks_done;
        c->usage_done = how->usage_done;
        c->session_done = how->session_done;
        c->page_done = how->page_done;
        c->artifacts_done = how->artifacts_done;
        c->callback_done = how->callback_done;
        c->u64_done = how->u64_done;
        c->page_limit = how->page_limit;
        c->page_order = how->page_order;
        c->sort_records = how->sort_records;
        r = start(s, args, c);
        if (r == -EOPNOTSUPP) {
                int k = sync(s, args, &got, &n);

                if (k < 0) {
                        store_call_list_free(c->shape, got, n);
                        got = NULL;
                }
                store_call_finish_list(c, k, got, n);
        }
        return store_call_start(s, c, r, ret_call);
}

static int put_start(Store *s, const void *args, StoreCall *c) {
        return s->ops->put_async ? s->ops->put_async(s, args, c) : -EOPNOTSUPP;
}

static int put_sync(Store *s, const void *args, StoreRecord **ret) {
        return store_put(s, args);
}

static int get_start(Store *s, const void *args, StoreCall *c) {
        /* An invalid id: store_get() answers -ENOENT. */
        if (!s->ops->get_async || !id_is_valid(args, STORE_ID_MAX))
                return -EOPNOTSUPP;
        return s->ops->get_async(s, args, c);
}

static int get_sync(Store *s, const void *args, StoreRecord **ret) {
        return store_get(s, args, ret);
}

int store_put_async(Store *s, const StoreRecord *r, StoreDoneFn done, void *userdata, StoreCall **ret_call) {
        if (!s)
                return -EINVAL;
        if (!store_record_is_valid(r)) {
                store_set_error(s, "invalid record");
                return -EINVAL;
        }
        return store_async_run(s, put_start, put_sync, r, done, userdata, ret_call);
}

static bool session_is_valid(const StoreSession *x);

typedef struct PutSessionArgs {
        const StoreRecord *r;
        const StoreSession *x;
} PutSessionArgs;

static int put_session_start(Store *s, const void *args, StoreCall *c) {
        const PutSessionArgs *a = args;

        return s->ops->put_session_async ? s->ops->put_session_async(s, a->r, a->x, c) : -EOPNOTSUPP;
}

/* A backend without it (SQLite, local): the session's row, then the record if the row was written. */
static int put_session_sync(Store *s, const void *args, StoreRecord **ret) {
        const PutSessionArgs *a = args;
        int r = store_session_put(s, a->x);

        return r < 0 ? r : store_put(s, a->r);
}

int store_put_session_async(Store *s, const StoreRecord *r, const StoreSession *x, StoreDoneFn done, void *userdata,
                            StoreCall **ret_call) {
        PutSessionArgs a = { .r = r, .x = x };

        if (!s)
                return -EINVAL;
        if (!store_record_is_valid(r) || !session_is_valid(x)) {
                store_set_error(s, "invalid record or session");
                return -EINVAL;
        }
        return store_async_run(s, put_session_start, put_session_sync, &a, done, userdata, ret_call);
}

int store_get_async(Store *s, const char *id, StoreDoneFn done, void *userdata, StoreCall **ret_call) {
        if (!s || !id)
                return -EINVAL;
        /* An invalid id is -ENOENT, as store_get() has it: through the callback, like every answer. */
        return store_async_run(s, get_start, get_sync, id, done, userdata, ret_call);
}

static int barrier_start(Store *s, const void *args, StoreCall *c) {
        return -EOPNOTSUPP;
}

static int barrier_sync(Store *s, const void *args, StoreRecord **ret) {
        /* Finished at once, delivered in its turn: after every call before it (on_calls_defer()). */
        return 0;
}

int store_barrier_async(Store *s, StoreDoneFn done, void *userdata, StoreCall **ret_call) {
        if (!s)
                return -EINVAL;
        return store_async_run(s, barrier_start, barrier_sync, NULL, done, userdata, ret_call);
}

StoreCall *store_call_cancel(StoreCall *c) {
        if (c) {
                c->done = NULL;
                c->nodes_done = NULL;
                c->records_done = NULL;
                c->callbacks_done = NULL;
                c->usage_done = NULL;
                c->session_done = NULL;
                c->page_done = NULL;
                c->artifacts_done = NULL;
                c->callback_done = NULL;
                c->u64_done = NULL;
                c->userdata = NULL;
        }
        return NULL;
}

void store_cancel_userdata(Store *s, void *userdata) {
        if (!s || !userdata)
                return;
        for (StoreCall *c = s->calls; c; c = c->next)
                if (c->userdata == userdata)
                        (void) store_call_cancel(c);
}

void store_async_drain(Store *s) {
        if (!s)
                return;
        if (s->ops->async_flush)
                s->ops->async_flush(s);
        /* A callback may make calls of its own (SQLite finishes them at once): a few rounds, bounded. */
        for (unsigned round = 0; round < 4 && s->calls && s->calls->finished; round++)
                (void) on_calls_defer(NULL, s);
}

size_t store_async_pending(Store *s) {
        return s ? s->n_calls : 0;
}

bool store_is_behind(Store *s) {
        return store_async_pending(s) >= STORE_ASYNC_MAX;
}

Store *store_close(Store *s) {
        if (!s)
                return NULL;
        /* The writes queued are made (a job's last transitions at a stop); nobody is called back. */
        if (s->ops->async_flush)
                s->ops->async_flush(s);
        while (s->calls) {
                StoreCall *c = s->calls;

                store_call_unlink(s, c);
                store_call_free(c);
        }
        s->calls_defer = sd_event_source_disable_unref(s->calls_defer);
        s->event = sd_event_unref(s->event);
        free(s->error);
        s->error = NULL;
        s->ops->close(s);
        return NULL;
}

int store_set_notify(Store *s, StoreNotifyFn fn, void *userdata) {
        if (!s || !fn)
                return -EINVAL;
        return s->ops->set_notify ? s->ops->set_notify(s, fn, userdata) : -EOPNOTSUPP;
}

int store_cancel_elsewhere(Store *s, const char *id) {
        if (!s || !id || !id_is_valid(id, STORE_ID_MAX))
                return -EINVAL;
        return s->ops->cancel_elsewhere ? s->ops->cancel_elsewhere(s, id) : -EOPNOTSUPP;
}

static int cancel_elsewhere_start(Store *s, const void *args, StoreCall *c) {
        return s->ops->cancel_elsewhere_async ? s->ops->cancel_elsewhere_async(s, args, c) : -EOPNOTSUPP;
}

static int cancel_elsewhere_sync(Store *s, const void *args, StoreRecord **ret) {
        return s->ops->cancel_elsewhere(s, args);
}

int store_cancel_elsewhere_async(Store *s, const char *id, StoreDoneFn done, void *userdata, StoreCall **ret_call) {
        if (!s || !id || !id_is_valid(id, STORE_ID_MAX))
                return -EINVAL;
        if (!s->ops->cancel_elsewhere)
                return -EOPNOTSUPP;
        return store_async_run(s, cancel_elsewhere_start, cancel_elsewhere_sync, id, done, userdata, ret_call);
}

int store_attach_event(Store *s, sd_event *event) {
        int r;

        if (!s || !event)
                return -EINVAL;
        if (s->event)
                return -EBUSY;
        /* Made now, off: arming it later cannot fail, so a finished call is always delivered. */
        r = sd_event_add_defer(event, &s->calls_defer, on_calls_defer, s);
        if (r < 0)
                return r;
        (void) sd_event_source_set_enabled(s->calls_defer, SD_EVENT_OFF);
        if (s->ops->attach_event) {
                r = s->ops->attach_event(s, event);
                if (r < 0) {
                        s->calls_defer = sd_event_source_disable_unref(s->calls_defer);
                        return r;
                }
        }
        s->event = sd_event_ref(event);
        return 0;
}

int store_put(Store *s, const StoreRecord *r) {
        if (!s)
                return -EINVAL;
        if (!store_record_is_valid(r)) {
                store_set_error(s, "invalid record");
                return -EINVAL;
        }
        return s->ops->put(s, r);
}

int store_get(Store *s, const char *id, StoreRecord **ret) {
        if (!s || !id || !ret)
                return -EINVAL;
        /* An id the store would never have accepted cannot be there. */
        if (!id_is_valid(id, STORE_ID_MAX))
                return -ENOENT;
        return s->ops->get(s, id, ret);
}

static StoreOrder query_order(const StoreQuery *q) {
        return q->order >= 0 && q->order < _STORE_ORDER_MAX ? q->order : _STORE_ORDER_INVALID;
}

static uint64_t record_key(const StoreRecord *r, StoreOrder o) {
        return o == STORE_ORDER_DURATION_MS ? r->exec->duration_ms : r->exec->created_usec;
}

/* The backend's arguments for q (after: where they point for a cursor). 1: q matches nothing
 * (failed=true with another status), 0: list, -EINVAL with the store's error. */
static int list_args(Store *s, const StoreQuery *q, StoreListArgs *a, StoreCursor *after) {
        int r;

        if (q->limit < 1 || q->limit > STORE_LIST_MAX) {
                store_set_error(s, "limit must be between 1 and " STRINGIFY(STORE_LIST_MAX));
                return -EINVAL;
        }
        if (query_order(q) < 0 || q->status < -1 || q->status >= _EXEC_STATUS_MAX || q->error_type < -1 ||
            q->error_type >= _ERROR_TYPE_MAX) {
                store_set_error(s, "invalid order, status or error_type");
                return -EINVAL;
        }
        if ((q->session_id && !id_is_valid(q->session_id, STORE_ID_MAX)) || (q->owner && isempty(q->owner))) {
                store_set_error(s, "invalid session_id or owner");
                return -EINVAL;
        }

        *a = (StoreListArgs) {
                .session_id = q->session_id,
                .owner = q->owner,
                .status = q->status,
                .error_type = q->error_type,
                .order = q->order,
                .limit = q->limit + 1,   /* one more than asked: is there a next page? */
        };
        if (q->cursor) {
                r = store_cursor_parse(q->cursor, after);
                /* A cursor from a list in the other order would seek on the wrong key. */
                if (r < 0 || after->order != q->order) {
                        store_set_error(s, "invalid cursor");
                        return -EINVAL;
                }
                a->after = after;
        }

        /* failed=true is status=failed; together with another status it matches nothing. */
        if (q->failed) {
                if (q->status >= 0 && q->status != EXEC_FAILED)
                        return 1;
                a->status = EXEC_FAILED;
        }
        return 0;
}

/* One page of the limit + 1 records read: the extra one says there is a next page (*ret_next, its
 * cursor), and is dropped. */
static int list_page(StoreRecord **l, size_t *n, unsigned limit, StoreOrder order, char **ret_next) {
        *ret_next = NULL;
        if (*n > limit) {
                StoreCursor c = { .order = order, .key = record_key(l[limit - 1], order) };

                for (size_t i = limit; i < *n; i++)
                        l[i] = store_record_free(l[i]);
                *n = limit;
                strcpy(c.id, l[*n - 1]->exec->id);
                return store_cursor_format(&c, ret_next);
        }
        return 0;
}

int store_list(Store *s, const StoreQuery *q, StoreRecord ***ret, size_t *ret_n, char **ret_next_cursor) {
        StoreListArgs a = {};
        StoreCursor after;
        StoreRecord **l = NULL;
        _cleanup_free_ char *next = NULL;
        size_t n = 0;
        int r;

        if (!s || !q || !ret || !ret_n)
                return -EINVAL;
        r = list_args(s, q, &a, &after);
        if (r < 0)
                return r;
        if (r == 0) {
                r = s->ops->list(s, &a, &l, &n);
                if (r < 0)
                        return r;
                r = list_page(l, &n, q->limit, q->order, &next);
                if (r < 0) {
                        store_records_free(l, n);
                        return r;
                }
        }
        *ret = l;
        *ret_n = n;
        if (ret_next_cursor)
                *ret_next_cursor = TAKE_PTR(next);
        return 0;
}

typedef struct ListAsyncArgs {
        const StoreListArgs *a;          /* NULL: matches nothing */
} ListAsyncArgs;

static int list_start(Store *s, const void *args, StoreCall *c) {
        const ListAsyncArgs *la = args;

        if (!la->a)
                return -EOPNOTSUPP;
        return s->ops->list_async ? s->ops->list_async(s, la->a, c) : -EOPNOTSUPP;
}

static int list_sync(Store *s, const void *args, void **ret, size_t *ret_n) {
        const ListAsyncArgs *la = args;
        StoreRecord **l = NULL;
        int r;

        if (!la->a)
                return 0;
        r = s->ops->list(s, la->a, &l, ret_n);
        *ret = l;
        return r;
}

int store_list_async(Store *s, const StoreQuery *q, StorePageDoneFn done, void *userdata, StoreCall **ret_call) {
        StoreCall how = { .shape = STORE_CALL_PAGE, .page_done = done, .userdata = userdata };
        StoreListArgs a = {};
        StoreCursor after;
        int r;

        if (!s || !q)
                return -EINVAL;
        r = list_args(s, q, &a, &after);
        if (r < 0)
                return r;
        how.page_limit = q->limit;
        how.page_order = q->order;
        return store_async_run_list(s, list_start, list_sync, &(ListAsyncArgs) { .a = r == 0 ? &a : NULL }, &how,
                                    ret_call);
}

static int record_older(const void *a, const void *b) {
        const StoreRecord *x = *(StoreRecord *const *) a, *y = *(StoreRecord *const *) b;

        if (x->exec->created_usec != y->exec->created_usec)
                return x->exec->created_usec < y->exec->created_usec ? -1 : 1;
        return strcmp(x->exec->id, y->exec->id);
}

int store_take_over(Store *s, const char *from, const char *node, uint64_t epoch, uint64_t now_usec,
                    StoreRecord ***ret, size_t *ret_n) {
        int r;

        if (!s || !node_name_is_valid(node) || (from && !node_name_is_valid(from)) || epoch > INT64_MAX ||
            now_usec > INT64_MAX || !ret || !ret_n)
                return -EINVAL;
        if (!s->ops->take_over)
                return -EOPNOTSUPP;
        r = s->ops->take_over(s, from, node, epoch, now_usec, ret, ret_n);
        if (r >= 0 && *ret_n > 1)
                qsort(*ret, *ret_n, sizeof(**ret), record_older);
        return r;
}

typedef struct TakeOverArgs {
        const char *from, *node;
        uint64_t epoch, now_usec;
} TakeOverArgs;

static int take_over_start(Store *s, const void *args, StoreCall *c) {
        const TakeOverArgs *a = args;

        return s->ops->take_over_async ? s->ops->take_over_async(s, a->from, a->node, a->epoch, a->now_usec, c)
                                       : -EOPNOTSUPP;
}

static int take_over_sync(Store *s, const void *args, void **ret, size_t *ret_n) {
        const TakeOverArgs *a = args;
        StoreRecord **l = NULL;
        int r = s->ops->take_over(s, a->from, a->node, a->epoch, a->now_usec, &l, ret_n);

        *ret = l;
        return r;
}

int store_take_over_async(Store *s, const char *from, const char *node, uint64_t epoch, uint64_t now_usec,
                          StoreRecordsDoneFn done, void *userdata, StoreCall **ret_call) {
        TakeOverArgs a = { .from = from, .node = node, .epoch = epoch, .now_usec = now_usec };
        StoreCall how = { .shape = STORE_CALL_RECORDS, .records_done = done, .sort_records = true,
                          .userdata = userdata };

        if (!s || !node_name_is_valid(node) || (from && !node_name_is_valid(from)) || epoch > INT64_MAX ||
            now_usec > INT64_MAX)
                return -EINVAL;
        if (!s->ops->take_over)
                return -EOPNOTSUPP;
        return store_async_run_list(s, take_over_start, take_over_sync, &a, &how, ret_call);
}

int store_claim(Store *s, const char *id, const char *node, uint64_t epoch) {
        if (!s || !id || !id_is_valid(id, STORE_ID_MAX) || !node_name_is_valid(node) || epoch == 0 ||
            epoch > INT64_MAX)
                return -EINVAL;
        return s->ops->claim ? s->ops->claim(s, id, node, epoch) : -EOPNOTSUPP;
}

typedef struct ClaimArgs {
        const char *id, *node;
        uint64_t epoch;
} ClaimArgs;

static int claim_start(Store *s, const void *args, StoreCall *c) {
        const ClaimArgs *a = args;

        return s->ops->claim_async ? s->ops->claim_async(s, a->id, a->node, a->epoch, c) : -EOPNOTSUPP;
}

static int claim_sync(Store *s, const void *args, StoreRecord **ret) {
        const ClaimArgs *a = args;

        return s->ops->claim ? s->ops->claim(s, a->id, a->node, a->epoch) : -EOPNOTSUPP;
}

int store_claim_async(Store *s, const char *id, const char *node, uint64_t epoch, StoreDoneFn done, void *userdata,
                      StoreCall **ret_call) {
        ClaimArgs a = { .id = id, .node = node, .epoch = epoch };

        if (!s || !id || !id_is_valid(id, STORE_ID_MAX) || !node_name_is_valid(node) || epoch == 0 ||
            epoch > INT64_MAX)
                return -EINVAL;
        if (!s->ops->claim)
                return -EOPNOTSUPP;
        return store_async_run(s, claim_start, claim_sync, &a, done, userdata, ret_call);
}

/* The owners skipped go into the statement as one text[] parameter: bounded here. */
#define STORE_CLAIM_SKIP_MAX 1024U

static bool claim_next_args_valid(const char *node, uint64_t epoch, char *const *skip, size_t n_skip) {
        if (!node_name_is_valid(node) || epoch == 0 || epoch > INT64_MAX || n_skip > STORE_CLAIM_SKIP_MAX ||
            (n_skip > 0 && !skip))
                return false;
        for (size_t i = 0; i < n_skip; i++)
                if (!skip[i] || strlen(skip[i]) > 4096)
                        return false;
        return true;
}

int store_claim_next(Store *s, const char *node, uint64_t epoch, char *const *skip, size_t n_skip, StoreRecord **ret) {
        if (!s || !ret || !claim_next_args_valid(node, epoch, skip, n_skip))
                return -EINVAL;
        return s->ops->claim_next ? s->ops->claim_next(s, node, epoch, skip, n_skip, ret) : -EOPNOTSUPP;
}

typedef struct ClaimNextArgs {
        const char *node;
        uint64_t epoch;
        char *const *skip;
        size_t n_skip;
} ClaimNextArgs;

static int claim_next_start(Store *s, const void *args, StoreCall *c) {
        const ClaimNextArgs *a = args;

        if (!s->ops->claim_next_async)
                return -EOPNOTSUPP;
        return s->ops->claim_next_async(s, a->node, a->epoch, a->skip, a->n_skip, c);
}

static int claim_next_sync(Store *s, const void *args, StoreRecord **ret) {
        const ClaimNextArgs *a = args;

        return s->ops->claim_next(s, a->node, a->epoch, a->skip, a->n_skip, ret);
}

int store_claim_next_async(Store *s, const char *node, uint64_t epoch, char *const *skip, size_t n_skip,
                           StoreDoneFn done, void *userdata, StoreCall **ret_call) {
        ClaimNextArgs a = { .node = node, .epoch = epoch, .skip = skip, .n_skip = n_skip };

        if (!s || !claim_next_args_valid(node, epoch, skip, n_skip))
                return -EINVAL;
        if (!s->ops->claim_next)
                return -EOPNOTSUPP;
        return store_async_run(s, claim_next_start, claim_next_sync, &a, done, userdata, ret_call);
}

static int claim_routed_start(Store *s, const void *args, StoreCall *c) {
        const ClaimArgs *a = args;

        return s->ops->claim_routed_async ? s->ops->claim_routed_async(s, a->node, a->epoch, c) : -EOPNOTSUPP;
}

static int claim_routed_sync(Store *s, const void *args, void **ret, size_t *ret_n) {
        const ClaimArgs *a = args;
        StoreRecord **l = NULL;
        int r = s->ops->claim_routed(s, a->node, a->epoch, &l, ret_n);

        *ret = l;
        return r;
}

int store_claim_routed_async(Store *s, const char *node, uint64_t epoch, StoreRecordsDoneFn done, void *userdata,
                             StoreCall **ret_call) {
        ClaimArgs a = { .node = node, .epoch = epoch };
        StoreCall how = { .shape = STORE_CALL_RECORDS, .records_done = done, .sort_records = true,
                          .userdata = userdata };

        if (!s || !node_name_is_valid(node) || epoch == 0 || epoch > INT64_MAX)
                return -EINVAL;
        if (!s->ops->claim_routed)
                return -EOPNOTSUPP;
        return store_async_run_list(s, claim_routed_start, claim_routed_sync, &a, &how, ret_call);
}

int store_claim_routed(Store *s, const char *node, uint64_t epoch, StoreRecord ***ret, size_t *ret_n) {
        int r;

        if (!s || !node_name_is_valid(node) || epoch == 0 || epoch > INT64_MAX || !ret || !ret_n)
                return -EINVAL;
        if (!s->ops->claim_routed)
                return -EOPNOTSUPP;
        r = s->ops->claim_routed(s, node, epoch, ret, ret_n);
        if (r >= 0 && *ret_n > 1)
                qsort(*ret, *ret_n, sizeof(**ret), record_older);
        return r;
}

int store_queue_notify(Store *s, const char *node) {
        if (!s || !node_name_is_valid(node))
                return -EINVAL;
        return s->ops->queue_notify ? s->ops->queue_notify(s, node) : -EOPNOTSUPP;
}

static int queue_notify_start(Store *s, const void *args, StoreCall *c) {
        return s->ops->queue_notify_async ? s->ops->queue_notify_async(s, args, c) : -EOPNOTSUPP;
}

static int queue_notify_sync(Store *s, const void *args, StoreRecord **ret) {
        return s->ops->queue_notify(s, args);
}

int store_queue_notify_async(Store *s, const char *node, StoreDoneFn done, void *userdata, StoreCall **ret_call) {
        if (!s || !node_name_is_valid(node))
                return -EINVAL;
        if (!s->ops->queue_notify)
                return -EOPNOTSUPP;
        return store_async_run(s, queue_notify_start, queue_notify_sync, node, done, userdata, ret_call);
}

int store_list_unfinished(Store *s, StoreRecord ***ret, size_t *ret_n) {
        if (!s || !ret || !ret_n)
                return -EINVAL;
        return s->ops->list_unfinished(s, ret, ret_n);
}

int store_purge_ex(Store *s, uint64_t finished_before_usec, uint64_t *ret_n, char ***ret_unreferenced) {
        uint64_t dummy;

        if (!s)
                return -EINVAL;
        if (ret_unreferenced)
                *ret_unreferenced = NULL;
        /* Everything finished before a time past the representable range is everything. */
        return s->ops->purge(s, MIN(finished_before_usec, (uint64_t) INT64_MAX), ret_n ?: &dummy, ret_unreferenced);
}

int store_purge(Store *s, uint64_t finished_before_usec, uint64_t *ret_n) {
        return store_purge_ex(s, finished_before_usec, ret_n, NULL);
}

void store_set_blob_hooks(Store *s, store_blob_fn_t exists, store_blob_fn_t remove, void *userdata) {
        if (!s)
                return;
        s->blob_exists = exists;
        s->blob_remove = remove;
        s->blob_userdata = userdata;
}

static int put_artifacts_check(Store *s, const char *id, const ExecArtifacts *a) {
        if (!s || !a || !id || !id_is_valid(id, STORE_ID_MAX))
                return -EINVAL;
        for (size_t i = 0; i < a->n_items; i++)
                if (!a->items[i].path || !a->items[i].mime_type || !is_lower_hex(a->items[i].sha256, 64) ||
                    !u64_fits(a->items[i].size) || !u64_fits(a->items[i].charged_bytes)) {
                        store_set_error(s, "invalid artifact");
                        return -EINVAL;
                }
        if (!u64_fits(a->n_skipped_total))
                return -EINVAL;
        return 0;
}

int store_put_artifacts(Store *s, const char *id, const ExecArtifacts *a) {
        int r = put_artifacts_check(s, id, a);

        if (r < 0)
                return r;
        return s->ops->put_artifacts(s, id, a);
}

typedef struct PutArtifactsArgs {
        const char *id;
        const ExecArtifacts *a;
} PutArtifactsArgs;

static int put_artifacts_start(Store *s, const void *args, StoreCall *c) {
        const PutArtifactsArgs *x = args;

        return s->ops->put_artifacts_async ? s->ops->put_artifacts_async(s, x->id, x->a, c) : -EOPNOTSUPP;
}

static int put_artifacts_sync(Store *s, const void *args, StoreRecord **ret) {
        const PutArtifactsArgs *x = args;

        return s->ops->put_artifacts(s, x->id, x->a);
}

int store_put_artifacts_async(Store *s, const char *id, const ExecArtifacts *a, StoreDoneFn done, void *userdata,
                              StoreCall **ret_call) {
        PutArtifactsArgs x = { .id = id, .a = a };
        int r = put_artifacts_check(s, id, a);

        if (r < 0)
                return r;
        return store_async_run(s, put_artifacts_start, put_artifacts_sync, &x, done, userdata, ret_call);
}

int store_get_artifacts(Store *s, const char *id, ExecArtifacts **ret) {
        if (!s || !id || !ret)
                return -EINVAL;
        if (!id_is_valid(id, STORE_ID_MAX))
                return -ENOENT;
        return s->ops->get_artifacts(s, id, ret);
}

static int get_artifacts_start(Store *s, const void *args, StoreCall *c) {
        return s->ops->get_artifacts_async ? s->ops->get_artifacts_async(s, args, c) : -EOPNOTSUPP;
}

static int get_artifacts_sync(Store *s, const void *args, void **ret, size_t *ret_n) {
        ExecArtifacts *a = NULL;
        int r = s->ops->get_artifacts(s, args, &a);

        if (r >= 0) {
                *ret = a;
                *ret_n = 1;
        }
        return r;
}

int store_get_artifacts_async(Store *s, const char *id, StoreArtifactsDoneFn done, void *userdata,
                              StoreCall **ret_call) {
        StoreCall how = { .shape = STORE_CALL_ARTIFACTS, .artifacts_done = done, .userdata = userdata };

        if (!s || !id || !id_is_valid(id, STORE_ID_MAX))
                return -EINVAL;
        return store_async_run_list(s, get_artifacts_start, get_artifacts_sync, id, &how, ret_call);
}

int store_artifact_store_bytes(Store *s, uint64_t *ret) {
        if (!s || !ret)
                return -EINVAL;
        return s->ops->artifact_store_bytes(s, ret);
}

int store_artifact_caller_bytes(Store *s, const char *owner, uint64_t *ret) {
        if (!s || !ret)
                return -EINVAL;
        return s->ops->artifact_caller_bytes(s, owner ?: "", ret);
}

/* A read of one number as a list of one (STORE_CALL_U64). */
static int u64_list(int r, uint64_t v, void **ret, size_t *ret_n) {
        uint64_t *p;

        if (r < 0)
                return r;
        p = malloc(sizeof(uint64_t));
        if (!p)
                return -ENOMEM;
        *p = v;
        *ret = p;
        *ret_n = 1;
        return 0;
}

static int purge_start(Store *s, const void *args, StoreCall *c) {
        return s->ops->purge_async(s, *(const uint64_t *) args, c);
}

static int purge_sync(Store *s, const void *args, void **ret, size_t *ret_n) {
        uint64_t n = 0;
        int r = s->ops->purge(s, *(const uint64_t *) args, &n, NULL);

        return u64_list(r, n, ret, ret_n);
}

int store_purge_async(Store *s, uint64_t finished_before_usec, StoreU64DoneFn done, void *userdata,
                      StoreCall **ret_call) {
        StoreCall how = { .shape = STORE_CALL_U64, .u64_done = done, .userdata = userdata };
        uint64_t before = MIN(finished_before_usec, (uint64_t) INT64_MAX);

        if (!s)
                return -EINVAL;
        /* Only where the blobs go under the store's lock (store_set_blob_hooks()): the unreferenced
         * list of store_purge_ex() has no way back here. */
        if (!s->ops->purge_async || !s->blob_remove)
                return -EOPNOTSUPP;
        return store_async_run_list(s, purge_start, purge_sync, &before, &how, ret_call);
}

static int store_bytes_start(Store *s, const void *args, StoreCall *c) {
        return s->ops->artifact_store_bytes_async ? s->ops->artifact_store_bytes_async(s, c) : -EOPNOTSUPP;
}

static int store_bytes_sync(Store *s, const void *args, void **ret, size_t *ret_n) {
        uint64_t v = 0;
        int r = s->ops->artifact_store_bytes(s, &v);

        return u64_list(r, v, ret, ret_n);
}

int store_artifact_store_bytes_async(Store *s, StoreU64DoneFn done, void *userdata, StoreCall **ret_call) {
        StoreCall how = { .shape = STORE_CALL_U64, .u64_done = done, .userdata = userdata };

        if (!s)
                return -EINVAL;
        return store_async_run_list(s, store_bytes_start, store_bytes_sync, NULL, &how, ret_call);
}

static int caller_bytes_start(Store *s, const void *args, StoreCall *c) {
        return s->ops->artifact_caller_bytes_async ? s->ops->artifact_caller_bytes_async(s, args, c) : -EOPNOTSUPP;
}

static int caller_bytes_sync(Store *s, const void *args, void **ret, size_t *ret_n) {
        uint64_t v = 0;
        int r = s->ops->artifact_caller_bytes(s, args, &v);

        return u64_list(r, v, ret, ret_n);
}

int store_artifact_caller_bytes_async(Store *s, const char *owner, StoreU64DoneFn done, void *userdata,
                                      StoreCall **ret_call) {
        StoreCall how = { .shape = STORE_CALL_U64, .u64_done = done, .userdata = userdata };

        if (!s)
                return -EINVAL;
        return store_async_run_list(s, caller_bytes_start, caller_bytes_sync, owner ?: "", &how, ret_call);
}

static int callback_count_start(Store *s, const void *args, StoreCall *c) {
        const CallbackState *st = args;

        return s->ops->callback_count_async ? s->ops->callback_count_async(s, *st, c) : -EOPNOTSUPP;
}

static int callback_count_sync(Store *s, const void *args, void **ret, size_t *ret_n) {
        const CallbackState *st = args;
        uint64_t v = 0;
        int r = s->ops->callback_count(s, *st, &v);

        return u64_list(r, v, ret, ret_n);
}

int store_callback_count_async(Store *s, CallbackState st, StoreU64DoneFn done, void *userdata, StoreCall **ret_call) {
        StoreCall how = { .shape = STORE_CALL_U64, .u64_done = done, .userdata = userdata };

        if (!s || st < 0 || st >= _CALLBACK_STATE_MAX)
                return -EINVAL;
        return store_async_run_list(s, callback_count_start, callback_count_sync, &st, &how, ret_call);
}

int store_count(Store *s, uint64_t *ret) {
        if (!s || !ret)
                return -EINVAL;
        return s->ops->count(s, ret);
}

int store_callback_get(Store *s, const char *id, bool with_body, StoreCallback **ret) {
        if (!s || !ret || !id_is_valid(id, STORE_ID_MAX))
                return -EINVAL;
        return s->ops->callback_get(s, id, with_body, ret);
}

static int callback_get_start(Store *s, const void *args, StoreCall *c) {
        return s->ops->callback_get_async ? s->ops->callback_get_async(s, args, c) : -EOPNOTSUPP;
}

static int callback_get_sync(Store *s, const void *args, void **ret, size_t *ret_n) {
        StoreCallback *cb = NULL;
        int r = s->ops->callback_get(s, args, false, &cb);

        if (r >= 0) {
                *ret = cb;
                *ret_n = 1;
        }
        return r;
}

int store_callback_get_async(Store *s, const char *id, StoreCallbackDoneFn done, void *userdata,
                             StoreCall **ret_call) {
        StoreCall how = { .shape = STORE_CALL_CALLBACK, .callback_done = done, .userdata = userdata };

        if (!s || !id || !id_is_valid(id, STORE_ID_MAX))
                return -EINVAL;
        return store_async_run_list(s, callback_get_start, callback_get_sync, id, &how, ret_call);
}

int store_callback_due(Store *s, uint64_t now_usec, unsigned limit, StoreCallback ***ret, size_t *ret_n) {
        if (!s || !ret || !ret_n || limit < 1 || limit > STORE_LIST_MAX)
                return -EINVAL;
        return s->ops->callback_due(s, MIN(now_usec, (uint64_t) INT64_MAX), limit, ret, ret_n);
}

int store_callback_next_due(Store *s, uint64_t *ret_usec) {
        if (!s || !ret_usec)
                return -EINVAL;
        return s->ops->callback_next_due(s, ret_usec);
}

int store_callback_count(Store *s, CallbackState st, uint64_t *ret) {
        if (!s || !ret || st < 0 || st >= _CALLBACK_STATE_MAX)
                return -EINVAL;
        return s->ops->callback_count(s, st, ret);
}

int store_callback_update(Store *s, const StoreCallback *c) {
        if (!s || !store_callback_is_valid(c, false))
                return -EINVAL;
        return s->ops->callback_update(s, c);
}

typedef struct CallbackDueArgs {
        uint64_t now_usec;
        unsigned limit;
} CallbackDueArgs;

static int callback_due_start(Store *s, const void *args, StoreCall *c) {
        const CallbackDueArgs *a = args;

        return s->ops->callback_due_async ? s->ops->callback_due_async(s, a->now_usec, a->limit, c) : -EOPNOTSUPP;
}

static int callback_due_sync(Store *s, const void *args, void **ret, size_t *ret_n) {
        const CallbackDueArgs *a = args;
        StoreCallback **l = NULL;
        int r = s->ops->callback_due(s, a->now_usec, a->limit, &l, ret_n);

        *ret = l;
        return r;
}

int store_callback_due_async(Store *s, uint64_t now_usec, unsigned limit, StoreCallbacksDoneFn done, void *userdata,
                             StoreCall **ret_call) {
        StoreCall how = { .shape = STORE_CALL_CALLBACKS, .callbacks_done = done, .userdata = userdata };
        CallbackDueArgs a = { .now_usec = MIN(now_usec, (uint64_t) INT64_MAX), .limit = limit };

        if (!s || limit < 1 || limit > STORE_LIST_MAX)
                return -EINVAL;
        return store_async_run_list(s, callback_due_start, callback_due_sync, &a, &how, ret_call);
}

static int callback_update_start(Store *s, const void *args, StoreCall *c) {
        return s->ops->callback_update_async ? s->ops->callback_update_async(s, args, c) : -EOPNOTSUPP;
}

static int callback_update_sync(Store *s, const void *args, StoreRecord **ret) {
        return s->ops->callback_update(s, args);
}

int store_callback_update_async(Store *s, const StoreCallback *c, StoreDoneFn done, void *userdata,
                                StoreCall **ret_call) {
        if (!s || !store_callback_is_valid(c, false))
                return -EINVAL;
        return store_async_run(s, callback_update_start, callback_update_sync, c, done, userdata, ret_call);
}

static bool session_is_valid(const StoreSession *x) {
        return x && x->session_id && id_is_valid(x->session_id, STORE_ID_MAX) &&
               (!x->client_id || id_is_valid(x->client_id, STORE_ID_MAX)) && x->mount_unit && x->path &&
               x->disk_mb <= INT64_MAX && x->created_usec <= INT64_MAX && x->last_used_usec <= INT64_MAX &&
               x->executions <= INT64_MAX;
}

int store_session_put(Store *s, const StoreSession *x) {
        if (!s || !session_is_valid(x)) {
                if (s)
                        store_set_error(s, "invalid session");
                return -EINVAL;
        }
        return s->ops->session_put(s, x);
}

int store_session_delete(Store *s, const char *session_id) {
        if (!s || !session_id || !id_is_valid(session_id, STORE_ID_MAX))
                return -EINVAL;
        return s->ops->session_delete(s, session_id);
}

static int session_put_start(Store *s, const void *args, StoreCall *c) {
        return s->ops->session_put_async ? s->ops->session_put_async(s, args, c) : -EOPNOTSUPP;
}

static int session_put_sync(Store *s, const void *args, StoreRecord **ret) {
        return s->ops->session_put(s, args);
}

int store_session_put_async(Store *s, const StoreSession *x, StoreDoneFn done, void *userdata, StoreCall **ret_call) {
        if (!s || !session_is_valid(x)) {
                if (s)
                        store_set_error(s, "invalid session");
                return -EINVAL;
        }
        return store_async_run(s, session_put_start, session_put_sync, x, done, userdata, ret_call);
}

static int session_delete_start(Store *s, const void *args, StoreCall *c) {
        return s->ops->session_delete_async ? s->ops->session_delete_async(s, args, c) : -EOPNOTSUPP;
}

static int session_delete_sync(Store *s, const void *args, StoreRecord **ret) {
        return s->ops->session_delete(s, args);
}

int store_session_delete_async(Store *s, const char *session_id, StoreDoneFn done, void *userdata,
                               StoreCall **ret_call) {
        if (!s || !session_id || !id_is_valid(session_id, STORE_ID_MAX))
                return -EINVAL;
        return store_async_run(s, session_delete_start, session_delete_sync, session_id, done, userdata, ret_call);
}

int store_session_list(Store *s, StoreSession **ret, size_t *ret_n) {
        if (!s || !ret || !ret_n)
                return -EINVAL;
        return s->ops->session_list(s, NULL, ret, ret_n);
}

int store_session_get(Store *s, const char *session_id, StoreSession **ret) {
        StoreSession *l = NULL;
        size_t n = 0;
        int r;

        if (!s || !session_id || !id_is_valid(session_id, STORE_ID_MAX) || !ret)
                return -EINVAL;
        r = s->ops->session_list(s, session_id, &l, &n);
        if (r < 0)
                return r;
        if (n == 0) {
                free(l);
                return -ENOENT;
        }
        /* session_id is the key: one row, never more. */
        assert(n == 1);
        *ret = l;
        return 0;
}

static int session_get_start(Store *s, const void *args, StoreCall *c) {
        return s->ops->session_get_async ? s->ops->session_get_async(s, args, c) : -EOPNOTSUPP;
}

static int session_get_sync(Store *s, const void *args, void **ret, size_t *ret_n) {
        StoreSession *x = NULL;
        int r = store_session_get(s, args, &x);

        /* -ENOENT as an empty list: the delivery says -ENOENT (store_call_deliver()). */
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        *ret = x;
        *ret_n = 1;
        return 0;
}

int store_session_get_async(Store *s, const char *session_id, StoreSessionDoneFn done, void *userdata,
                            StoreCall **ret_call) {
        StoreCall how = { .shape = STORE_CALL_SESSION, .session_done = done, .userdata = userdata };

        if (!s || !session_id || !id_is_valid(session_id, STORE_ID_MAX))
                return -EINVAL;
        return store_async_run_list(s, session_get_start, session_get_sync, session_id, &how, ret_call);
}

int store_usage_get(Store *s, const char *owner, StoreUsage *ret) {
        if (!s || isempty(owner) || !ret)
                return -EINVAL;
        return s->ops->usage_get(s, owner, ret);
}

static int usage_get_start(Store *s, const void *args, StoreCall *c) {
        return s->ops->usage_get_async ? s->ops->usage_get_async(s, args, c) : -EOPNOTSUPP;
}

static int usage_get_sync(Store *s, const void *args, void **ret, size_t *ret_n) {
        StoreUsage *u = calloc(1, sizeof(StoreUsage));
        int r;

        if (!u)
                return -ENOMEM;
        r = s->ops->usage_get(s, args, u);
        if (r < 0) {
                free(u);
                return r;
        }
        *ret = u;
        *ret_n = 1;
        return 0;
}

int store_usage_get_async(Store *s, const char *owner, StoreUsageDoneFn done, void *userdata, StoreCall **ret_call) {
        StoreCall how = { .shape = STORE_CALL_USAGE, .usage_done = done, .userdata = userdata };

        if (!s || isempty(owner))
                return -EINVAL;
        return store_async_run_list(s, usage_get_start, usage_get_sync, owner, &how, ret_call);
}

void store_sessions_free(StoreSession *l, size_t n) {
        for (size_t i = 0; i < n; i++) {
                free(l[i].session_id);
                free(l[i].client_id);
                free(l[i].owner);
                free(l[i].mount_unit);
                free(l[i].path);
                free(l[i].node);
        }
        free(l);
}

/* The lease's end, now + lease, ≤ INT64_MAX as every stored value; -EINVAL past it. */
static int node_lease_end(uint64_t now_usec, uint64_t lease_usec, uint64_t *ret) {
        if (now_usec > INT64_MAX || lease_usec > INT64_MAX - now_usec)
                return -EINVAL;
        *ret = now_usec + lease_usec;
        return 0;
}

int store_node_register(Store *s, const char *name, uint64_t now_usec, uint64_t lease_usec, uint64_t slots,
                        uint64_t *ret_epoch) {
        uint64_t end;

        if (!s || !node_name_is_valid(name) || slots > INT64_MAX || !ret_epoch ||
            node_lease_end(now_usec, lease_usec, &end) < 0) {
                if (s)
                        store_set_error(s, "invalid node");
                return -EINVAL;
        }
        return s->ops->node_register(s, name, now_usec, end, slots, ret_epoch);
}

int store_node_heartbeat(Store *s, const char *name, uint64_t epoch, uint64_t now_usec, uint64_t lease_usec,
                         uint64_t running) {
        uint64_t end;

        if (!s || !node_name_is_valid(name) || epoch > INT64_MAX || running > INT64_MAX ||
            node_lease_end(now_usec, lease_usec, &end) < 0) {
                if (s)
                        store_set_error(s, "invalid node");
                return -EINVAL;
        }
        return s->ops->node_heartbeat(s, name, epoch, now_usec, end, running);
}

typedef struct RegisterArgs {
        const char *name;
        uint64_t now_usec, lease_expires_usec, slots;
} RegisterArgs;

static int register_start(Store *s, const void *args, StoreCall *c) {
        const RegisterArgs *a = args;

        if (!s->ops->node_register_async)
                return -EOPNOTSUPP;
        return s->ops->node_register_async(s, a->name, a->now_usec, a->lease_expires_usec, a->slots, c);
}

static int register_sync(Store *s, const void *args, void **ret, size_t *ret_n) {
        const RegisterArgs *a = args;
        uint64_t epoch = 0;
        int r = s->ops->node_register(s, a->name, a->now_usec, a->lease_expires_usec, a->slots, &epoch);

        return u64_list(r, epoch, ret, ret_n);
}

int store_node_register_async(Store *s, const char *name, uint64_t now_usec, uint64_t lease_usec, uint64_t slots,
                              StoreU64DoneFn done, void *userdata, StoreCall **ret_call) {
        StoreCall how = { .shape = STORE_CALL_U64, .u64_done = done, .userdata = userdata };
        RegisterArgs a = { .name = name, .now_usec = now_usec, .slots = slots };

        if (!s || !node_name_is_valid(name) || slots > INT64_MAX ||
            node_lease_end(now_usec, lease_usec, &a.lease_expires_usec) < 0) {
                if (s)
                        store_set_error(s, "invalid node");
                return -EINVAL;
        }
        return store_async_run_list(s, register_start, register_sync, &a, &how, ret_call);
}

typedef struct HeartbeatArgs {
        const char *name;
        uint64_t epoch, now_usec, lease_expires_usec, running;
} HeartbeatArgs;

static int heartbeat_start(Store *s, const void *args, StoreCall *c) {
        const HeartbeatArgs *h = args;

        if (!s->ops->node_heartbeat_async)
                return -EOPNOTSUPP;
        return s->ops->node_heartbeat_async(s, h->name, h->epoch, h->now_usec, h->lease_expires_usec, h->running, c);
}

static int heartbeat_sync(Store *s, const void *args, StoreRecord **ret) {
        const HeartbeatArgs *h = args;

        return s->ops->node_heartbeat(s, h->name, h->epoch, h->now_usec, h->lease_expires_usec, h->running);
}

int store_node_heartbeat_async(Store *s, const char *name, uint64_t epoch, uint64_t now_usec, uint64_t lease_usec,
                               uint64_t running, StoreDoneFn done, void *userdata, StoreCall **ret_call) {
        HeartbeatArgs h = { .name = name, .epoch = epoch, .now_usec = now_usec, .running = running };

        if (!s || !node_name_is_valid(name) || epoch > INT64_MAX || running > INT64_MAX ||
            node_lease_end(now_usec, lease_usec, &h.lease_expires_usec) < 0) {
                if (s)
                        store_set_error(s, "invalid node");
                return -EINVAL;
        }
        return store_async_run(s, heartbeat_start, heartbeat_sync, &h, done, userdata, ret_call);
}

int store_node_leave(Store *s, const char *name, uint64_t epoch, uint64_t now_usec) {
        if (!s || !node_name_is_valid(name) || epoch > INT64_MAX || now_usec > INT64_MAX) {
                if (s)
                        store_set_error(s, "invalid node");
                return -EINVAL;
        }
        return s->ops->node_leave(s, name, epoch, now_usec);
}

int store_node_list(Store *s, StoreNode **ret, size_t *ret_n) {
        if (!s || !ret || !ret_n)
                return -EINVAL;
        return s->ops->node_list(s, ret, ret_n);
}

static int node_list_start(Store *s, const void *args, StoreCall *c) {
        return s->ops->node_list_async ? s->ops->node_list_async(s, c) : -EOPNOTSUPP;
}

static int node_list_sync(Store *s, const void *args, void **ret, size_t *ret_n) {
        StoreNode *l = NULL;
        int r = s->ops->node_list(s, &l, ret_n);

        *ret = l;
        return r;
}

int store_node_list_async(Store *s, StoreNodesDoneFn done, void *userdata, StoreCall **ret_call) {
        StoreCall how = { .shape = STORE_CALL_NODES, .nodes_done = done, .userdata = userdata };

        if (!s)
                return -EINVAL;
        return store_async_run_list(s, node_list_start, node_list_sync, NULL, &how, ret_call);
}

void store_nodes_free(StoreNode *l, size_t n) {
        for (size_t i = 0; i < n; i++)
                free(l[i].name);
        free(l);
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What a store backend implements, and the helpers store.c gives every backend. Not for callers:
 * they include store.h only. A backend embeds Store as its first member and fills a StoreOps.
 *
 * store.c validates every argument before a backend sees it (ids, enum ranges, the limit, the
 * cursor) and does the pagination itself, so a backend only translates a StoreListArgs into one
 * query: filters AND (key, execution_id) < (cursor key, cursor id) ORDER BY key DESC,
 * execution_id DESC LIMIT n. Backends bind every value as a parameter; no value is ever pasted
 * into SQL text. */

#include <stdarg.h>

#include "store.h"

/* The largest execution id the store accepts: the API's limit (REQUEST_ID_MAX). */
#define STORE_ID_MAX 64

/* Where the previous page ended. */
typedef struct StoreCursor {
        StoreOrder order;
        uint64_t key;                    /* created_usec or duration_ms of the last row, ≤ INT64_MAX */
        char id[STORE_ID_MAX + 1];       /* its execution_id */
} StoreCursor;

/* A validated query, as the backend receives it. */
typedef struct StoreListArgs {
        const char *session_id;          /* NULL: any */
        const char *owner;               /* NULL: any */
        int status;                      /* ExecStatus, or -1 (failed=true is folded in here) */
        int error_type;                  /* ErrorType, or -1; ERROR_NONE: no error */
        StoreOrder order;
        const StoreCursor *after;        /* NULL: from the start */
        unsigned limit;                  /* rows to return at most (the caller's limit + 1) */
} StoreListArgs;

typedef struct StoreOps {
        const char *name;                /* "sqlite" */
        void (*close)(Store *s);         /* free everything, including s */
        int (*put)(Store *s, const StoreRecord *r);
        int (*get)(Store *s, const char *id, StoreRecord **ret);
        int (*list)(Store *s, const StoreListArgs *a, StoreRecord ***ret, size_t *ret_n);
        int (*list_unfinished)(Store *s, StoreRecord ***ret, size_t *ret_n);
        /* *ret_unreferenced (if not NULL): NULL-terminated digests no artifact refers to any more,
         * or NULL when there are none. */
        int (*purge)(Store *s, uint64_t finished_before_usec, uint64_t *ret_n, char ***ret_unreferenced);
        int (*put_artifacts)(Store *s, const char *id, const ExecArtifacts *a);
        int (*get_artifacts)(Store *s, const char *id, ExecArtifacts **ret);
        int (*artifact_store_bytes)(Store *s, uint64_t *ret);
        int (*artifact_caller_bytes)(Store *s, const char *owner, uint64_t *ret);   /* owner never NULL */
        int (*count)(Store *s, uint64_t *ret);
        int (*callback_get)(Store *s, const char *id, bool with_body, StoreCallback **ret);
        int (*callback_due)(Store *s, uint64_t now_usec, unsigned limit, StoreCallback ***ret, size_t *ret_n);
        int (*callback_next_due)(Store *s, uint64_t *ret_usec);
        int (*callback_update)(Store *s, const StoreCallback *c);
        int (*callback_count)(Store *s, CallbackState st, uint64_t *ret);
        int (*session_put)(Store *s, const StoreSession *x);
        int (*session_delete)(Store *s, const char *session_id);
        /* id NULL: every session; else the one of that session_id (none: *ret_n 0) */
        int (*session_list)(Store *s, const char *id, StoreSession **ret, size_t *ret_n);
        int (*usage_get)(Store *s, const char *owner, StoreUsage *ret);
        /* Optional: from now on, work that can wait (reconnecting) is driven by event. */
        int (*attach_event)(Store *s, sd_event *event);
        /* Arguments validated by store.c: a valid name, values ≤ INT64_MAX. */
        int (*node_register)(Store *s, const char *name, uint64_t now_usec, uint64_t lease_expires_usec,
                             uint64_t slots, uint64_t *ret_epoch);
        int (*node_heartbeat)(Store *s, const char *name, uint64_t epoch, uint64_t now_usec,
                              uint64_t lease_expires_usec, uint64_t running);
        int (*node_leave)(Store *s, const char *name, uint64_t epoch, uint64_t now_usec);
        int (*node_list)(Store *s, StoreNode **ret, size_t *ret_n);   /* at most STORE_NODES_MAX */
        int (*set_notify)(Store *s, StoreNotifyFn fn, void *userdata);      /* optional */
        int (*cancel_elsewhere)(Store *s, const char *id);                  /* optional */
        int (*take_over)(Store *s, const char *from, const char *node, uint64_t epoch, uint64_t now_usec,
                         StoreRecord ***ret, size_t *ret_n);
        /* optional, all three (the shared queue) */
        int (*claim)(Store *s, const char *id, const char *node, uint64_t epoch);
        int (*claim_next)(Store *s, const char *node, uint64_t epoch, char *const *skip, size_t n_skip,
                          StoreRecord **ret);
        int (*queue_notify)(Store *s, const char *node);
        int (*claim_routed)(Store *s, const char *node, uint64_t epoch, StoreRecord ***ret, size_t *ret_n);
        /* Optional, the asynchronous calls (store.h, store_put_async()): start c, queued in s->calls
         * already, arguments validated; it ends with store_call_finish() (at once if it cannot be
         * sent: no connection), whose callback store.c calls from the loop. Only called with an event
         * loop attached. -EOPNOTSUPP: this one cannot be sent without waiting (store.c runs it
         * synchronously then); another error: refused, c is dropped. Without them, store.c runs every
         * asynchronous call synchronously. */
        int (*put_async)(Store *s, const StoreRecord *r, StoreCall *c);
        int (*get_async)(Store *s, const char *id, StoreCall *c);
        int (*claim_async)(Store *s, const char *id, const char *node, uint64_t epoch, StoreCall *c);
        int (*cancel_elsewhere_async)(Store *s, const char *id, StoreCall *c);
        int (*put_artifacts_async)(Store *s, const char *id, const ExecArtifacts *a, StoreCall *c);
        int (*put_session_async)(Store *s, const StoreRecord *r, const StoreSession *x, StoreCall *c);
        int (*purge_async)(Store *s, uint64_t finished_before_usec, StoreCall *c);
        int (*take_over_async)(Store *s, const char *from, const char *node, uint64_t epoch, uint64_t now_usec,
                               StoreCall *c);
        int (*queue_notify_async)(Store *s, const char *node, StoreCall *c);
        int (*session_put_async)(Store *s, const StoreSession *x, StoreCall *c);
        int (*session_delete_async)(Store *s, const char *session_id, StoreCall *c);
        int (*claim_next_async)(Store *s, const char *node, uint64_t epoch, char *const *skip, size_t n_skip,
                                StoreCall *c);
        int (*node_register_async)(Store *s, const char *name, uint64_t now_usec, uint64_t lease_expires_usec,
                                   uint64_t slots, StoreCall *c);
        int (*node_heartbeat_async)(Store *s, const char *name, uint64_t epoch, uint64_t now_usec,
                                    uint64_t lease_expires_usec, uint64_t running, StoreCall *c);
        int (*node_list_async)(Store *s, StoreCall *c);
        int (*claim_routed_async)(Store *s, const char *node, uint64_t epoch, StoreCall *c);
        int (*callback_due_async)(Store *s, uint64_t now_usec, unsigned limit, StoreCall *c);
        int (*callback_update_async)(Store *s, const StoreCallback *x, StoreCall *c);
        int (*usage_get_async)(Store *s, const char *owner, StoreCall *c);
        int (*session_get_async)(Store *s, const char *session_id, StoreCall *c);
        int (*list_async)(Store *s, const StoreListArgs *a, StoreCall *c);
        int (*get_artifacts_async)(Store *s, const char *id, StoreCall *c);
        int (*callback_get_async)(Store *s, const char *id, StoreCall *c);
        int (*artifact_store_bytes_async)(Store *s, StoreCall *c);
        int (*artifact_caller_bytes_async)(Store *s, const char *owner, StoreCall *c);
        int (*callback_count_async)(Store *s, CallbackState st, StoreCall *c);
        /* Optional: wait for every started call to end (store_close(), which keeps no write back). */
        void (*async_flush)(Store *s);
        /* Optional: hand on the notifications held whose stamp is below store_notify_horizon(). */
        void (*notify_flush)(Store *s);
} StoreOps;

/* What an asynchronous call answers with: a record (or nothing), or a list. */
typedef enum StoreCallShape {
        STORE_CALL_RECORD,               /* done(userdata, r, record) */
        STORE_CALL_NODES,                /* nodes_done(userdata, r, StoreNode[], n) */
        STORE_CALL_RECORDS,              /* records_done(userdata, r, StoreRecord *[], n) */
        STORE_CALL_CALLBACKS,            /* callbacks_done(userdata, r, StoreCallback *[], n) */
        STORE_CALL_USAGE,                /* usage_done(userdata, r, StoreUsage *): one, in list */
        STORE_CALL_SESSION,              /* session_done(userdata, r, StoreSession *): one, in list */
        STORE_CALL_PAGE,                 /* page_done(userdata, r, StoreRecord *[], n, next cursor) */
        STORE_CALL_ARTIFACTS,            /* artifacts_done(userdata, r, ExecArtifacts *): one, as list */
        STORE_CALL_CALLBACK,             /* callback_done(userdata, r, StoreCallback *): one, as list */
        STORE_CALL_U64,                  /* u64_done(userdata, r, value): one uint64_t, as list */
} StoreCallShape;

/* One asynchronous call, from store_*_async() until its callback was called (or dropped). */
struct StoreCall {
        Store *store;
        StoreCall *next;                 /* s->calls: submission order */
        StoreCallShape shape;
        StoreDoneFn done;                /* by shape; all NULL: cancelled, or nobody asked */
        StoreNodesDoneFn nodes_done;
        StoreRecordsDoneFn records_done;
        StoreCallbacksDoneFn callbacks_done;
        StoreUsageDoneFn usage_done;
        StoreSessionDoneFn session_done;
        StorePageDoneFn page_done;
        StoreArtifactsDoneFn artifacts_done;
        StoreCallbackDoneFn callback_done;
        StoreU64DoneFn u64_done;
        unsigned page_limit;             /* STORE_CALL_PAGE: the query's limit and order */
        StoreOrder page_order;
        bool sort_records;               /* STORE_CALL_RECORDS: oldest first, as the synchronous call */
        void *userdata;
        bool finished;                   /* result, record and error are set */
        uint64_t finish_seq;             /* finished as the store's finish_seq-th call */
        int result;
        StoreRecord *record;             /* STORE_CALL_RECORD: store_get_async()'s, handed to done */
        void *list;                      /* the other shapes: what they read, n_list entries */
        size_t n_list;
        char *error;                     /* the backend's message of a failure, for store_error_message() */
        void *data;                      /* the backend's, freed with data_free */
        void (*data_free)(void *data);
};

/* The backend's end of c: r, and for a get its record (taken). Arms the delivery (a defer source):
 * callbacks are called in submission order, from the loop, never from inside a store call. */
void store_call_finish(StoreCall *c, int r, StoreRecord *rec);
/* The same for a call of a list shape: list (taken) of n entries, NULL when r < 0. */
void store_call_finish_list(StoreCall *c, int r, void *list, size_t n);

struct Store {
        const StoreOps *ops;
        char *error;                     /* the backend's text for the last failure, or NULL */
        /* store_set_blob_hooks(): the artifact store's files, as a backend shared by several nodes
         * sees them under its artifacts lock. NULL: none set. */
        store_blob_fn_t blob_exists, blob_remove;
        void *blob_userdata;
        /* The asynchronous calls (store_put_async()...): every one not yet delivered, oldest first
         * (never refused; store_is_behind() past STORE_ASYNC_MAX); the finished ones at the head are
         * delivered from calls_defer. */
        sd_event *event;
        sd_event_source *calls_defer;
        StoreCall *calls, *calls_tail;
        size_t n_calls;
        uint64_t finish_seq;             /* calls finished so far */
};

/* Notifications are handed on in the order they came with the answers: one read when finish_seq
 * calls had finished (its stamp) goes before every answer finished after it, and after those finished
 * before it. The stamps below this are due now: the finish_seq of the first answer not yet delivered,
 * or UINT64_MAX when none waits. The backend's notify_flush() hands on those, and is called before
 * each answer's delivery and after the last. */
uint64_t store_notify_horizon(Store *s);

/* The columns of the executions table, the same in every backend, in the order of the table, and
 * their indexes in a result row / parameters - 1. */
#define STORE_COLUMNS                                                                                      \
        "execution_id, session_id, owner, status, error_type, created_at, started_at, finished_at, " \
        "duration_ms, exit_code, signal, cpu_usec, peak_memory_bytes, language, timeout_ms, "        \
        "memory_mb, cpu_cores, disk_mb, tasks, unit, reason, fingerprint, stdout_bytes, "             \
        "stdout_lines, stdout_truncated, stderr_bytes, stderr_lines, stderr_truncated, stdout, "      \
        "stderr, code, workspace, request, error_message, cancel_requested, client_id, start, network, "    \
        "environment, summary, isolation, node, node_epoch, attempt"

/* The fence of sql_put's update: a record taken by a node (node, node_epoch) is written only by that
 * node at that epoch. A node whose lease ran out and whose executions another node took over
 * (store_take_over()) finds its late writes refused (-ESTALE), not laid over the newer ones. A write
 * that names no node (tools, tests) and a row that has none (written before) are not fenced. */
#define FENCE_WHERE                                                                                    \
        " WHERE executions.node IS NULL OR excluded.node IS NULL OR (executions.node = excluded.node "      \
        "AND executions.node_epoch IS NOT DISTINCT FROM excluded.node_epoch)"

enum {
        STORE_COL_ID,
        STORE_COL_SESSION,
        STORE_COL_OWNER,
        STORE_COL_STATUS,
        STORE_COL_ERROR_TYPE,
        STORE_COL_CREATED,
        STORE_COL_STARTED,
        STORE_COL_FINISHED,
        STORE_COL_DURATION,
        STORE_COL_EXIT_CODE,
        STORE_COL_SIGNAL,
        STORE_COL_CPU,
        STORE_COL_PEAK,
        STORE_COL_LANGUAGE,
        STORE_COL_TIMEOUT,
        STORE_COL_MEMORY,
        STORE_COL_CPU_CORES,
        STORE_COL_DISK,
        STORE_COL_TASKS,
        STORE_COL_UNIT,
        STORE_COL_REASON,
        STORE_COL_FINGERPRINT,
        STORE_COL_OUT_BYTES,
        STORE_COL_OUT_LINES,
        STORE_COL_OUT_TRUNCATED,
        STORE_COL_ERR_BYTES,
        STORE_COL_ERR_LINES,
        STORE_COL_ERR_TRUNCATED,
        STORE_COL_OUT,
        STORE_COL_ERR,
        STORE_COL_CODE,
        STORE_COL_WORKSPACE,
        STORE_COL_REQUEST,
        STORE_COL_ERROR_MESSAGE,
        STORE_COL_CANCEL_REQUESTED,
        STORE_COL_CLIENT_ID,
        STORE_COL_START,
        STORE_COL_NETWORK,
        STORE_COL_ENVIRONMENT,
        STORE_COL_SUMMARY,
        STORE_COL_ISOLATION,
        STORE_COL_NODE,
        STORE_COL_NODE_EPOCH,
        STORE_COL_ATTEMPT,
        _STORE_COL_MAX,
};

/* One row of executions as a backend read it, for store_record_from_row(): every column as text
 * (integers in decimal; NULL for SQL NULL), except cpu_cores and the fingerprint, which a text form
 * would not carry exactly. text[STORE_COL_CPU_CORES] and text[STORE_COL_FINGERPRINT] are not read. */
typedef struct StoreRow {
        const char *text[_STORE_COL_MAX];
        double cpu_cores;
        const void *fingerprint;
        size_t fingerprint_size;
} StoreRow;

/* The record a row holds. -EBADMSG for a row we would not have written (a negative count, an
 * unknown status, a fingerprint of the wrong size), -ENOMEM. */
int store_record_from_row(const StoreRow *row, StoreRecord **ret);

/* The network log of an Execution as its column holds it (JSON); *ret NULL when there is none. */
int store_network_to_json(const Execution *e, char **ret);

/* The skipped list of an artifact collection as its column holds it (JSON [{"path","reason"}]), and
 * back: entries not written by us are passed over. */
int store_skipped_to_json(const ExecArtifacts *a, char **ret);
int store_skipped_from_json(ExecArtifacts *a, const char *text);

/* The callback deliveries' columns, the same in every backend. */
#define CALLBACK_COLUMNS \
        "execution_id, state, next_attempt_at, attempts, created_at, delivered_at, url, delivery_id, last_error"

enum {
        CB_ID,
        CB_STATE,
        CB_NEXT,
        CB_ATTEMPTS,
        CB_CREATED,
        CB_DELIVERED,
        CB_URL,
        CB_DELIVERY_ID,
        CB_LAST_ERROR,
        CB_BODY,
        CB_CLIENT_ID,           /* with the body: the execution's, for the Sandboxd-Execution-Id header */
};
#define CALLBACK_CLIENT_ID "(SELECT client_id FROM executions e WHERE e.execution_id = callbacks.execution_id)"

/* The schema's version: both backends number their migrations alike, one per feature, so that
 * version N means the same tables and columns in either. */
#define STORE_SCHEMA_VERSION 18

/* A message of the backend's on one line, for the log: newlines and tabs become spaces, runs of
 * them one, none at either end. In place; returns m. */
char *store_one_line(char *m);

/* A failed store_open_*(): *ret_error (if ret_error is not NULL) becomes "NAME: what", on one line,
 * NAME the file or the database. Returns r. */
int store_open_failv(char **ret_error, const char *name, int r, const char *fmt, va_list ap) _printf_(4, 0);

/* The text of an unsigned INTEGER column as a backend reads it: decimal digits ≤ INT64_MAX.
 * Negative or not a number is -EBADMSG (a damaged or hand-edited row, not something to wrap); NULL
 * text is "none" (*ret_have false) where ret_have is given, -EBADMSG otherwise. */
int store_column_u64(const char *text, uint64_t *ret, bool *ret_have);

/* Record the backend's message for store_error_message(); keeps the old one on OOM. */
void store_set_error(Store *s, const char *message);


/* Cursor text ⇄ StoreCursor. Decoding is strict: only what store_cursor_format() produces is
 * accepted, anything else is -EINVAL. */
int store_cursor_format(const StoreCursor *c, char **ret);
int store_cursor_parse(const char *s, StoreCursor *ret);

/* A delivery fit to enqueue or update: valid ids, a URL, a body (enqueue), values that fit. */
bool store_callback_is_valid(const StoreCallback *c, bool need_body);

/* Column values that do not fit the backends' signed 64-bit integers are refused on put. */
bool store_record_is_valid(const StoreRecord *r);

/* For tests only: cap the SQLite database at max_pages pages (PRAGMA max_page_count), so that a
 * full disk can be simulated without mounting anything. 0 or a negative errno. */
int store_sqlite_set_max_pages_for_test(Store *s, uint64_t max_pages);

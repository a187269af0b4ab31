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
        int (*session_list)(Store *s, StoreSession **ret, size_t *ret_n);
        int (*usage_get)(Store *s, const char *owner, StoreUsage *ret);
} StoreOps;

struct Store {
        const StoreOps *ops;
        char *error;                     /* the backend's text for the last failure, or NULL */
};

/* Record the backend's message for store_error_message(); keeps the old one on OOM. */
void store_set_error(Store *s, const char *message);

/* Values the database hands back for the verdict reason of an Execution: interned for the life of
 * the process, because Execution does not own it; bounded (past the bound: NULL). The language is
 * store_intern_language() of store.h. */
const char *store_intern_reason(const char *reason);

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

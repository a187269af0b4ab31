/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What the files of the SQLite backend (store-sqlite*.c) share: the connection, the row helpers, the
 * schema, and the operations each file gives the backend's StoreOps table. Nothing outside them
 * includes this. */

#include <sqlite3.h>

#include "store-internal.h"

typedef struct SqliteStore {
        Store base;
        sqlite3 *db;
        char *path;
        sqlite3_stmt *put, *get, *count;   /* prepared once: the per-transition and per-GET paths */
} SqliteStore;


SqliteStore *SQLITE_STORE(Store *s);

/* Record the failure for store_error_message() and turn it into an errno. */
int sq_fail(SqliteStore *ss, int rc);
void sq_rollback_if_open(SqliteStore *ss);
int sq_bind_text(sqlite3_stmt *st, int i, const char *s);
int sq_bind_u64(sqlite3_stmt *st, int i, uint64_t v);
int sq_bind_u64_or_null(sqlite3_stmt *st, int i, uint64_t v, bool have);
int sq_column_strdup(sqlite3_stmt *st, int i, char **ret);
int sq_column_u64(sqlite3_stmt *st, int i, uint64_t *ret, bool *ret_have);
int sq_exec_bound(SqliteStore *ss, sqlite3_stmt *st, int rc);
/* The end of a transaction begun with BEGIN: COMMIT if r >= 0 (its failure becomes r), and a
 * rollback if r (now) < 0. Returns r. */
int sq_commit(SqliteStore *ss, int r);
/* Room for one more element in *l (n used of *allocated, elements of size bytes), doubling from min. */
int sq_grow(void **l, size_t *allocated, size_t n, size_t size, size_t min);

/* store-sqlite-schema.c: migrations[i] takes the schema from version i to i + 1. */
extern const char *const sqlite_migrations[];
extern const size_t sqlite_n_migrations;
#define SQLITE_SCHEMA_VERSION ((int) sqlite_n_migrations)

/* store-sqlite-outbox.c */
int bind_callback(sqlite3_stmt *st, const StoreCallback *c);
int sqlite_callback_get(Store *s, const char *id, bool with_body, StoreCallback **ret);
int sqlite_callback_due(Store *s, uint64_t now_usec, unsigned limit, StoreCallback ***ret, size_t *ret_n);
int sqlite_callback_next_due(Store *s, uint64_t *ret_usec);
int sqlite_callback_count(Store *s, CallbackState state, uint64_t *ret);
int sqlite_callback_update(Store *s, const StoreCallback *c);

/* store-sqlite-artifacts.c */
int sqlite_put_artifacts(Store *s, const char *id, const ExecArtifacts *a);
int sqlite_get_artifacts(Store *s, const char *id, ExecArtifacts **ret);
int sqlite_artifact_store_bytes(Store *s, uint64_t *ret);
int sqlite_artifact_caller_bytes(Store *s, const char *owner, uint64_t *ret);

/* store-sqlite-sessions.c */
int sqlite_session_put(Store *s, const StoreSession *x);
int sqlite_session_delete(Store *s, const char *session_id);
int sqlite_session_list(Store *s, const char *id, StoreSession **ret, size_t *ret_n);
int sqlite_usage_get(Store *s, const char *owner, StoreUsage *ret);

/* store-sqlite-nodes.c */
int sqlite_node_register(Store *s, const char *name, uint64_t now_usec, uint64_t lease_expires_usec, uint64_t slots,
                         uint64_t *ret_epoch);
int sqlite_node_heartbeat(Store *s, const char *name, uint64_t epoch, uint64_t now_usec,
                          uint64_t lease_expires_usec, uint64_t running);
int sqlite_node_leave(Store *s, const char *name, uint64_t epoch, uint64_t now_usec);
int sqlite_node_list(Store *s, StoreNode **ret, size_t *ret_n);

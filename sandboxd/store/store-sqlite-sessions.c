/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* Session records, and the per-owner record usage. */


#include "store-sqlite-internal.h"

static int run_session_statement(SqliteStore *ss, sqlite3_stmt *st, int rc) {
        int r = sq_exec_bound(ss, st, rc);

        if (r < 0)
                sq_rollback_if_open(ss);
        return r;
}

int sqlite_session_put(Store *s, const StoreSession *x) {
        SqliteStore *ss = SQLITE_STORE(s);
        sqlite3_stmt *st = NULL;
        int rc;

        rc = sqlite3_prepare_v2(ss->db,
                                "INSERT OR REPLACE INTO sessions (session_id, owner, mount_unit, path, disk_mb, "
                                "created_at, last_used_at, executions, client_id, node) "
                                "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                                -1, &st, NULL);
        if (rc != SQLITE_OK)
                return sq_fail(ss, rc);
        rc = sq_bind_text(st, 1, x->session_id);
        rc = rc ?: sq_bind_text(st, 2, x->owner);
        rc = rc ?: sq_bind_text(st, 3, x->mount_unit);
        rc = rc ?: sq_bind_text(st, 4, x->path);
        rc = rc ?: sq_bind_u64(st, 5, x->disk_mb);
        rc = rc ?: sq_bind_u64(st, 6, x->created_usec);
        rc = rc ?: sq_bind_u64(st, 7, x->last_used_usec);
        rc = rc ?: sq_bind_u64(st, 8, x->executions);
        rc = rc ?: sq_bind_text(st, 9, x->client_id);
        rc = rc ?: sq_bind_text(st, 10, x->node);
        return run_session_statement(ss, st, rc);
}

int sqlite_session_delete(Store *s, const char *session_id) {
        SqliteStore *ss = SQLITE_STORE(s);
        sqlite3_stmt *st = NULL;
        int rc;

        rc = sqlite3_prepare_v2(ss->db, "DELETE FROM sessions WHERE session_id = ?1", -1, &st, NULL);
        if (rc != SQLITE_OK)
                return sq_fail(ss, rc);
        rc = sq_bind_text(st, 1, session_id);
        return run_session_statement(ss, st, rc);
}

int sqlite_session_list(Store *s, const char *id, StoreSession **ret, size_t *ret_n) {
        SqliteStore *ss = SQLITE_STORE(s);
        StoreSession *l = NULL;
        sqlite3_stmt *st = NULL;
        size_t n = 0;
        int rc, r = 0;

        rc = sqlite3_prepare_v2(ss->db,
                                "SELECT session_id, owner, mount_unit, path, disk_mb, created_at, last_used_at, "
                                "executions, client_id, node FROM sessions WHERE ?1 IS NULL OR session_id = ?1 "
                                "ORDER BY created_at",
                                -1, &st, NULL);
        if (rc != SQLITE_OK)
                return sq_fail(ss, rc);
        rc = sq_bind_text(st, 1, id);
        if (rc != SQLITE_OK) {
                sqlite3_finalize(st);
                return sq_fail(ss, rc);
        }
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                StoreSession *nl = reallocarray(l, n + 1, sizeof(StoreSession)), *x;

                if (!nl) {
                        r = -ENOMEM;
                        break;
                }
                l = nl;
                x = &l[n++];
                *x = (StoreSession) {};
                r = sq_column_strdup(st, 0, &x->session_id);
                r = r ?: sq_column_strdup(st, 1, &x->owner);
                r = r ?: sq_column_strdup(st, 2, &x->mount_unit);
                r = r ?: sq_column_strdup(st, 3, &x->path);
                r = r ?: sq_column_u64(st, 4, &x->disk_mb, NULL);
                r = r ?: sq_column_u64(st, 5, &x->created_usec, NULL);
                r = r ?: sq_column_u64(st, 6, &x->last_used_usec, NULL);
                r = r ?: sq_column_u64(st, 7, &x->executions, NULL);
                r = r ?: sq_column_strdup(st, 8, &x->client_id);
                r = r ?: sq_column_strdup(st, 9, &x->node);
                if (r >= 0 && (!x->session_id || !x->mount_unit || !x->path))
                        r = -EBADMSG;
                if (r < 0)
                        break;
        }
        if (r >= 0 && rc != SQLITE_DONE)
                r = sq_fail(ss, rc);
        sqlite3_finalize(st);
        if (r < 0) {
                store_sessions_free(l, n);
                return r;
        }
        *ret = l;
        *ret_n = n;
        return 0;
}

int sqlite_usage_get(Store *s, const char *owner, StoreUsage *ret) {
        SqliteStore *ss = SQLITE_STORE(s);
        sqlite3_stmt *st = NULL;
        int rc, r = 0;

        rc = sqlite3_prepare_v2(ss->db, "SELECT records, bytes, pending_callbacks FROM record_usage WHERE owner = ?1",
                                -1, &st, NULL);
        if (rc != SQLITE_OK)
                return sq_fail(ss, rc);
        rc = sq_bind_text(st, 1, owner);
        if (rc == SQLITE_OK)
                rc = sqlite3_step(st);
        if (rc == SQLITE_ROW)
                /* Never negative unless someone edited the table by hand: then it counts as nothing. */
                *ret = (StoreUsage) {
                        .records = (uint64_t) MAX(sqlite3_column_int64(st, 0), (sqlite3_int64) 0),
                        .bytes = (uint64_t) MAX(sqlite3_column_int64(st, 1), (sqlite3_int64) 0),
                        .pending_callbacks = (uint64_t) MAX(sqlite3_column_int64(st, 2), (sqlite3_int64) 0),
                };
        else if (rc == SQLITE_DONE)
                *ret = (StoreUsage) {};
        else
                r = sq_fail(ss, rc);
        sqlite3_finalize(st);
        return r;
}

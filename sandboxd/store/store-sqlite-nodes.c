/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The node registry (migration 16). */

#include "store-sqlite-internal.h"

int sqlite_node_register(Store *s, const char *name, uint64_t now_usec, uint64_t lease_expires_usec, uint64_t slots,
                         uint64_t *ret_epoch) {
        SqliteStore *ss = SQLITE_STORE(s);
        sqlite3_stmt *st = NULL;
        uint64_t epoch = 0;
        int rc, r = 0;

        /* One statement: the insert and the takeover are atomic, also against another process
         * registering the same name at the same time (SQLite's write lock). */
        rc = sqlite3_prepare_v2(ss->db,
                                "INSERT INTO nodes (node_name, epoch, started_usec, heartbeat_usec, "
                                "lease_expires_usec, slots, running) VALUES (?1, 1, ?2, ?2, ?3, ?4, 0) "
                                "ON CONFLICT (node_name) DO UPDATE SET epoch = nodes.epoch + 1, "
                                "started_usec = excluded.started_usec, heartbeat_usec = excluded.heartbeat_usec, "
                                "lease_expires_usec = excluded.lease_expires_usec, slots = excluded.slots, "
                                "running = 0 RETURNING epoch",
                                -1, &st, NULL);
        if (rc != SQLITE_OK)
                return sq_fail(ss, rc);
        rc = sq_bind_text(st, 1, name);
        rc = rc ?: sq_bind_u64(st, 2, now_usec);
        rc = rc ?: sq_bind_u64(st, 3, lease_expires_usec);
        rc = rc ?: sq_bind_u64(st, 4, slots);
        if (rc == SQLITE_OK)
                rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
                r = sq_column_u64(st, 0, &epoch, NULL);
                rc = sqlite3_step(st);
        }
        if (r >= 0 && rc != SQLITE_DONE)
                r = sq_fail(ss, rc);
        sqlite3_finalize(st);
        if (r < 0)
                return r;
        if (epoch == 0)
                return -EBADMSG;
        *ret_epoch = epoch;
        return 0;
}

/* An UPDATE of name's row at epoch: -ESTALE where it changed nothing. */
static int node_update(SqliteStore *ss, sqlite3_stmt *st, int rc) {
        int r = sq_exec_bound(ss, st, rc);

        if (r < 0)
                return r;
        return sqlite3_changes(ss->db) == 0 ? -ESTALE : 0;
}

int sqlite_node_heartbeat(Store *s, const char *name, uint64_t epoch, uint64_t now_usec,
                          uint64_t lease_expires_usec, uint64_t running) {
        SqliteStore *ss = SQLITE_STORE(s);
        sqlite3_stmt *st = NULL;
        int rc;

        rc = sqlite3_prepare_v2(ss->db,
                                "UPDATE nodes SET heartbeat_usec = ?3, lease_expires_usec = ?4, running = ?5 "
                                "WHERE node_name = ?1 AND epoch = ?2",
                                -1, &st, NULL);
        if (rc != SQLITE_OK)
                return sq_fail(ss, rc);
        rc = sq_bind_text(st, 1, name);
        rc = rc ?: sq_bind_u64(st, 2, epoch);
        rc = rc ?: sq_bind_u64(st, 3, now_usec);
        rc = rc ?: sq_bind_u64(st, 4, lease_expires_usec);
        rc = rc ?: sq_bind_u64(st, 5, running);
        return node_update(ss, st, rc);
}

int sqlite_node_leave(Store *s, const char *name, uint64_t epoch, uint64_t now_usec) {
        SqliteStore *ss = SQLITE_STORE(s);
        sqlite3_stmt *st = NULL;
        int rc;

        /* Never later than it was: a leave does not extend a lease. */
        rc = sqlite3_prepare_v2(ss->db,
                                "UPDATE nodes SET lease_expires_usec = min(lease_expires_usec, ?3), running = 0 "
                                "WHERE node_name = ?1 AND epoch = ?2",
                                -1, &st, NULL);
        if (rc != SQLITE_OK)
                return sq_fail(ss, rc);
        rc = sq_bind_text(st, 1, name);
        rc = rc ?: sq_bind_u64(st, 2, epoch);
        rc = rc ?: sq_bind_u64(st, 3, now_usec);
        return node_update(ss, st, rc);
}

int sqlite_node_list(Store *s, StoreNode **ret, size_t *ret_n) {
        SqliteStore *ss = SQLITE_STORE(s);
        StoreNode *l = NULL;
        sqlite3_stmt *st = NULL;
        size_t n = 0, allocated = 0;
        int rc, r = 0;

        rc = sqlite3_prepare_v2(ss->db,
                                "SELECT node_name, epoch, started_usec, heartbeat_usec, lease_expires_usec, slots, "
                                "running FROM nodes ORDER BY node_name LIMIT ?1",
                                -1, &st, NULL);
        if (rc != SQLITE_OK)
                return sq_fail(ss, rc);
        rc = sq_bind_u64(st, 1, STORE_NODES_MAX);
        while (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
                StoreNode *x;

                r = sq_grow((void **) &l, &allocated, n, sizeof(StoreNode), 8);
                if (r < 0)
                        break;
                x = &l[n++];
                *x = (StoreNode) {};
                r = sq_column_strdup(st, 0, &x->name);
                r = r ?: sq_column_u64(st, 1, &x->epoch, NULL);
                r = r ?: sq_column_u64(st, 2, &x->started_usec, NULL);
                r = r ?: sq_column_u64(st, 3, &x->heartbeat_usec, NULL);
                r = r ?: sq_column_u64(st, 4, &x->lease_expires_usec, NULL);
                r = r ?: sq_column_u64(st, 5, &x->slots, NULL);
                r = r ?: sq_column_u64(st, 6, &x->running, NULL);
                if (r >= 0 && !x->name)
                        r = -EBADMSG;
                if (r < 0)
                        break;
                rc = SQLITE_OK;
        }
        if (r >= 0 && rc != SQLITE_DONE)
                r = sq_fail(ss, rc);
        sqlite3_finalize(st);
        if (r < 0) {
                store_nodes_free(l, n);
                return r;
        }
        *ret = l;
        *ret_n = n;
        return 0;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The callback outbox: one delivery per execution, written with its final record. */

#include <json-c/json.h>

#include "store-sqlite-internal.h"

static const char sql_callback_get[] = "SELECT " CALLBACK_COLUMNS " FROM callbacks WHERE execution_id = ?1";
static const char sql_callback_get_body[] =
        "SELECT " CALLBACK_COLUMNS ", body, " CALLBACK_CLIENT_ID " FROM callbacks WHERE execution_id = ?1";
static const char sql_callback_due[] =
        "SELECT " CALLBACK_COLUMNS ", body, " CALLBACK_CLIENT_ID " FROM callbacks "
        "WHERE state = 'pending' AND next_attempt_at <= ?1 "
        "ORDER BY next_attempt_at, execution_id LIMIT ?2";
static const char sql_callback_next_due[] =
        "SELECT min(next_attempt_at) FROM callbacks WHERE state = 'pending'";
static const char sql_callback_count[] = "SELECT count(*) FROM callbacks WHERE state = ?1";
static const char sql_callback_update[] =
        "UPDATE callbacks SET state = ?2, next_attempt_at = ?3, attempts = ?4, last_error = ?5, delivered_at = ?6 "
        "WHERE execution_id = ?1 AND (?7 IS NULL OR (attempts = ?7 AND state = 'pending'))";

int bind_callback(sqlite3_stmt *st, const StoreCallback *c) {
        int rc;

        rc = sq_bind_text(st, 1 + CB_ID, c->execution_id);
        rc = rc ?: sq_bind_text(st, 1 + CB_STATE, callback_state_to_string(c->state));
        rc = rc ?: sq_bind_u64_or_null(st, 1 + CB_NEXT, c->next_attempt_usec, c->state == CALLBACK_PENDING);
        rc = rc ?: sq_bind_u64(st, 1 + CB_ATTEMPTS, c->attempts);
        rc = rc ?: sq_bind_u64(st, 1 + CB_CREATED, c->created_usec);
        rc = rc ?: sq_bind_u64_or_null(st, 1 + CB_DELIVERED, c->delivered_usec, c->delivered_usec > 0);
        rc = rc ?: sq_bind_text(st, 1 + CB_URL, c->url);
        rc = rc ?: sq_bind_text(st, 1 + CB_DELIVERY_ID, c->delivery_id);
        rc = rc ?: sq_bind_text(st, 1 + CB_LAST_ERROR, c->last_error);
        rc = rc ?: sq_bind_text(st, 1 + CB_BODY, c->body);
        return rc;
}

static int row_to_callback(sqlite3_stmt *st, bool with_body, StoreCallback **ret) {
        _cleanup_(store_callback_freep) StoreCallback *c = calloc(1, sizeof(StoreCallback));
        bool have;
        int k;

        if (!c)
                return -ENOMEM;
        k = sq_column_strdup(st, CB_ID, &c->execution_id);
        if (k >= 0 && !c->execution_id)
                k = -EBADMSG;
        if (k >= 0) {
                c->state = callback_state_from_string((const char *) sqlite3_column_text(st, CB_STATE));
                if (c->state < 0)
                        k = -EBADMSG;
        }
        k = k ?: sq_column_u64(st, CB_NEXT, &c->next_attempt_usec, &have);
        k = k ?: sq_column_u64(st, CB_ATTEMPTS, &c->attempts, NULL);
        k = k ?: sq_column_u64(st, CB_CREATED, &c->created_usec, NULL);
        k = k ?: sq_column_u64(st, CB_DELIVERED, &c->delivered_usec, &have);
        k = k ?: sq_column_strdup(st, CB_URL, &c->url);
        k = k ?: sq_column_strdup(st, CB_DELIVERY_ID, &c->delivery_id);
        k = k ?: sq_column_strdup(st, CB_LAST_ERROR, &c->last_error);
        if (k >= 0 && with_body)
                k = sq_column_strdup(st, CB_BODY, &c->body);
        if (k >= 0 && with_body)
                k = sq_column_strdup(st, CB_CLIENT_ID, &c->client_id);
        if (k >= 0 && (!c->url || !c->delivery_id || (with_body && !c->body)))
                k = -EBADMSG;
        if (k < 0)
                return k;
        *ret = TAKE_PTR(c);
        return 0;
}

/* Step st to the end collecting deliveries; finalizes st. rc: how binding went. */
static int collect_callbacks(SqliteStore *ss, sqlite3_stmt *st, int rc, bool with_body, StoreCallback ***ret,
                             size_t *ret_n) {
        StoreCallback **l = NULL;
        size_t n = 0, allocated = 0;
        int r = 0;

        if (rc != SQLITE_OK) {
                r = sq_fail(ss, rc);
                goto finish;
        }
        for (;;) {
                rc = sqlite3_step(st);
                if (rc == SQLITE_DONE)
                        break;
                if (rc != SQLITE_ROW) {
                        r = sq_fail(ss, rc);
                        goto finish;
                }
                if (sq_grow((void **) &l, &allocated, n, sizeof(StoreCallback *), 8) < 0) {
                        r = -ENOMEM;
                        goto finish;
                }
                r = row_to_callback(st, with_body, &l[n]);
                if (r < 0) {
                        if (r == -EBADMSG)
                                store_set_error(&ss->base, "a stored callback delivery is damaged");
                        goto finish;
                }
                n++;
        }
finish:
        sqlite3_finalize(st);
        if (r < 0) {
                store_callbacks_free(l, n);
                return r;
        }
        *ret = l;
        *ret_n = n;
        return 0;
}

int sqlite_callback_get(Store *s, const char *id, bool with_body, StoreCallback **ret) {
        SqliteStore *ss = SQLITE_STORE(s);
        StoreCallback **l = NULL;
        sqlite3_stmt *st = NULL;
        size_t n = 0;
        int rc, r;

        rc = sqlite3_prepare_v2(ss->db, with_body ? sql_callback_get_body : sql_callback_get, -1, &st, NULL);
        if (rc != SQLITE_OK)
                return sq_fail(ss, rc);
        rc = sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
        r = collect_callbacks(ss, st, rc, with_body, &l, &n);
        if (r < 0)
                return r;
        if (n == 0) {
                free(l);
                return -ENOENT;
        }
        *ret = TAKE_PTR(l[0]);
        store_callbacks_free(l, n);
        return 0;
}

int sqlite_callback_due(Store *s, uint64_t now_usec, unsigned limit, StoreCallback ***ret, size_t *ret_n) {
        SqliteStore *ss = SQLITE_STORE(s);
        sqlite3_stmt *st = NULL;
        int rc;

        rc = sqlite3_prepare_v2(ss->db, sql_callback_due, -1, &st, NULL);
        if (rc != SQLITE_OK)
                return sq_fail(ss, rc);
        rc = sq_bind_u64(st, 1, now_usec);
        rc = rc ?: sqlite3_bind_int64(st, 2, limit);
        return collect_callbacks(ss, st, rc, true, ret, ret_n);
}

int sqlite_callback_next_due(Store *s, uint64_t *ret_usec) {
        SqliteStore *ss = SQLITE_STORE(s);
        sqlite3_stmt *st = NULL;
        int rc, r = 0;

        rc = sqlite3_prepare_v2(ss->db, sql_callback_next_due, -1, &st, NULL);
        if (rc != SQLITE_OK)
                return sq_fail(ss, rc);
        rc = sqlite3_step(st);
        if (rc != SQLITE_ROW)
                r = sq_fail(ss, rc);
        else if (sqlite3_column_type(st, 0) == SQLITE_NULL)
                r = -ENOENT;
        else {
                sqlite3_int64 v = sqlite3_column_int64(st, 0);
                *ret_usec = v < 0 ? 0 : (uint64_t) v;
        }
        sqlite3_finalize(st);
        return r;
}

int sqlite_callback_count(Store *s, CallbackState state, uint64_t *ret) {
        SqliteStore *ss = SQLITE_STORE(s);
        sqlite3_stmt *st = NULL;
        int rc, r = 0;

        rc = sqlite3_prepare_v2(ss->db, sql_callback_count, -1, &st, NULL);
        if (rc != SQLITE_OK)
                return sq_fail(ss, rc);
        rc = sqlite3_bind_text(st, 1, callback_state_to_string(state), -1, SQLITE_STATIC);
        if (rc == SQLITE_OK)
                rc = sqlite3_step(st);
        if (rc == SQLITE_ROW)
                *ret = (uint64_t) MAX(sqlite3_column_int64(st, 0), (sqlite3_int64) 0);
        else
                r = sq_fail(ss, rc);
        sqlite3_finalize(st);
        return r;
}

int sqlite_callback_update(Store *s, const StoreCallback *c) {
        SqliteStore *ss = SQLITE_STORE(s);
        sqlite3_stmt *st = NULL;
        int rc, r;

        rc = sqlite3_prepare_v2(ss->db, sql_callback_update, -1, &st, NULL);
        if (rc != SQLITE_OK)
                return sq_fail(ss, rc);
        rc = sq_bind_text(st, 1, c->execution_id);
        rc = rc ?: sq_bind_text(st, 2, callback_state_to_string(c->state));
        rc = rc ?: sq_bind_u64_or_null(st, 3, c->next_attempt_usec, c->state == CALLBACK_PENDING);
        rc = rc ?: sq_bind_u64(st, 4, c->attempts);
        rc = rc ?: sq_bind_text(st, 5, c->last_error);
        rc = rc ?: sq_bind_u64_or_null(st, 6, c->delivered_usec, c->delivered_usec > 0);
        rc = rc ?: sq_bind_u64_or_null(st, 7, c->claim_attempts, c->claim);
        r = sq_exec_bound(ss, st, rc);
        if (r >= 0 && sqlite3_changes(ss->db) == 0)
                r = c->claim ? -ESTALE : -ENOENT;
        if (r < 0)
                sq_rollback_if_open(ss);
        return r;
}

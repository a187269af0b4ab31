/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* Artifact rows, the skipped lists, and the usage sums the artifact budgets read. */

#include <json-c/json.h>

#include "store-sqlite-internal.h"

int sqlite_put_artifacts(Store *s, const char *id, const ExecArtifacts *a) {
        SqliteStore *ss = SQLITE_STORE(s);
        _cleanup_free_ char *skipped = NULL;
        sqlite3_stmt *st = NULL;
        int rc, r = 0;

        r = store_skipped_to_json(a, &skipped);
        if (r < 0)
                return r;

        rc = sqlite3_exec(ss->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
        if (rc != SQLITE_OK)
                return sq_fail(ss, rc);

        rc = sqlite3_prepare_v2(ss->db, "DELETE FROM artifacts WHERE execution_id = ?1", -1, &st, NULL);
        rc = rc ?: sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
        rc = rc ?: sqlite3_step(st);
        if (rc != SQLITE_DONE)
                r = sq_fail(ss, rc);
        sqlite3_finalize(st);
        st = NULL;

        if (r >= 0) {
                /* Charged to the execution's owner ('' for none or unknown): the usage triggers
                 * (migration 9) add it up. */
                rc = sqlite3_prepare_v2(ss->db,
                                        "INSERT INTO artifacts (execution_id, path, size, mime_type, sha256, "
                                        "charged_bytes, owner) VALUES (?1, ?2, ?3, ?4, ?5, ?6, "
                                        "COALESCE((SELECT owner FROM executions WHERE execution_id = ?1), ''))",
                                        -1, &st, NULL);
                for (size_t i = 0; rc == SQLITE_OK && i < a->n_items; i++) {
                        const ExecArtifact *x = &a->items[i];

                        rc = sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
                        rc = rc ?: sqlite3_bind_text(st, 2, x->path, -1, SQLITE_STATIC);
                        rc = rc ?: sq_bind_u64(st, 3, x->size);
                        rc = rc ?: sqlite3_bind_text(st, 4, x->mime_type, -1, SQLITE_STATIC);
                        rc = rc ?: sqlite3_bind_text(st, 5, x->sha256, -1, SQLITE_STATIC);
                        rc = rc ?: sq_bind_u64(st, 6, x->charged_bytes);
                        rc = rc ?: sqlite3_step(st);
                        if (rc == SQLITE_DONE)
                                rc = sqlite3_reset(st);
                }
                if (rc != SQLITE_OK)
                        r = sq_fail(ss, rc);
                sqlite3_finalize(st);
                st = NULL;
        }
        if (r >= 0) {
                rc = sqlite3_prepare_v2(ss->db,
                                        "INSERT OR REPLACE INTO artifact_collections (execution_id, skipped_total, skipped) "
                                        "VALUES (?1, ?2, ?3)", -1, &st, NULL);
                rc = rc ?: sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
                rc = rc ?: sq_bind_u64(st, 2, a->n_skipped_total);
                rc = rc ?: sqlite3_bind_text(st, 3, skipped, -1, SQLITE_STATIC);
                rc = rc ?: sqlite3_step(st);
                if (rc != SQLITE_DONE)
                        r = sq_fail(ss, rc);
                sqlite3_finalize(st);
        }
        return sq_commit(ss, r);
}

int sqlite_get_artifacts(Store *s, const char *id, ExecArtifacts **ret) {
        SqliteStore *ss = SQLITE_STORE(s);
        _cleanup_(exec_artifacts_freep) ExecArtifacts *a = exec_artifacts_new();
        sqlite3_stmt *st = NULL;
        bool found = false;
        int rc, r = 0;

        if (!a)
                return -ENOMEM;
        rc = sqlite3_prepare_v2(ss->db, "SELECT skipped_total, skipped FROM artifact_collections WHERE execution_id = ?1",
                                -1, &st, NULL);
        rc = rc ?: sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
        if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
                found = true;
                a->n_skipped_total = (uint64_t) sqlite3_column_int64(st, 0);
                r = store_skipped_from_json(a, (const char *) sqlite3_column_text(st, 1));
                rc = SQLITE_DONE;
        }
        if (rc != SQLITE_DONE)
                r = sq_fail(ss, rc);
        sqlite3_finalize(st);
        st = NULL;
        if (r < 0)
                return r;
        if (!found)
                return -ENOENT;

        rc = sqlite3_prepare_v2(ss->db, "SELECT path, size, mime_type, sha256, charged_bytes FROM artifacts "
                                "WHERE execution_id = ?1 ORDER BY path", -1, &st, NULL);
        rc = rc ?: sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
        while (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
                const char *path = (const char *) sqlite3_column_text(st, 0);
                const char *mime = (const char *) sqlite3_column_text(st, 2);
                const char *sha = (const char *) sqlite3_column_text(st, 3);
                sqlite3_int64 size = sqlite3_column_int64(st, 1), charged = sqlite3_column_int64(st, 4);
                size_t n = a->n_items;

                rc = SQLITE_OK;
                if (!path || !mime || !sha || size < 0 || charged < 0)
                        continue;       /* not written by us */
                r = exec_artifacts_add(a, path, (uint64_t) size, mime, sha);
                if (r == -EINVAL)
                        r = 0;
                if (r < 0)
                        break;
                if (a->n_items > n)
                        a->items[n].charged_bytes = (uint64_t) charged;
        }
        if (r >= 0 && rc != SQLITE_DONE)
                r = sq_fail(ss, rc);
        sqlite3_finalize(st);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(a);
        return 0;
}

/* One number from the usage tables (migration 9): an indexed lookup, never a sum over rows. No row
 * (an owner with no artifacts) is 0. */
static int usage_bytes(SqliteStore *ss, const char *sql, const char *owner, uint64_t *ret) {
        sqlite3_stmt *st = NULL;
        sqlite3_int64 v = 0;
        int rc, r = 0;

        rc = sqlite3_prepare_v2(ss->db, sql, -1, &st, NULL);
        if (rc == SQLITE_OK && owner)
                rc = sqlite3_bind_text(st, 1, owner, -1, SQLITE_STATIC);
        if (rc == SQLITE_OK) {
                rc = sqlite3_step(st);
                if (rc == SQLITE_ROW) {
                        v = sqlite3_column_int64(st, 0);
                        rc = SQLITE_DONE;
                }
        }
        if (rc != SQLITE_DONE)
                r = sq_fail(ss, rc);
        sqlite3_finalize(st);
        if (r < 0)
                return r;
        *ret = v > 0 ? (uint64_t) v : 0;
        return 0;
}

int sqlite_artifact_store_bytes(Store *s, uint64_t *ret) {
        return usage_bytes(SQLITE_STORE(s), "SELECT bytes FROM artifact_store_usage WHERE id = 0", NULL, ret);
}

int sqlite_artifact_caller_bytes(Store *s, const char *owner, uint64_t *ret) {
        return usage_bytes(SQLITE_STORE(s), "SELECT bytes FROM artifact_usage WHERE owner = ?1", owner, ret);
}

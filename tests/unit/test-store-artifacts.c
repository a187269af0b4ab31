/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The store's artifact rows, their usage sums (migration 9) and the callback outbox. */
#include "store-test-util.h"
#include "time-util.h"

/* ---- artifacts ---- */

#define SHA_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define SHA_B "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define SHA_C "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"

static ExecArtifacts *artifacts_of(const char *sha1, const char *sha2) {
        ExecArtifacts *a = exec_artifacts_new();

        assert_non_null(a);
        assert_int_equal(exec_artifacts_add(a, "data/result.csv", 12, "text/csv", sha1), 0);
        assert_int_equal(exec_artifacts_add(a, "plot \xc3\xa9.png", 1 << 20, "image/png", sha2), 0);
        assert_int_equal(exec_artifacts_add_skip(a, "link", "symlink"), 0);
        assert_int_equal(exec_artifacts_add_skip(a, "bad\\x0aname", "name_invalid"), 0);
        a->n_skipped_total = 5;
        return a;
}

static void test_artifacts(_unused_ void **state) {
        _cleanup_(store_closep) Store *s = open_ok();
        _cleanup_(store_record_freep) StoreRecord *r = record_full("exec_art");
        _cleanup_(exec_artifacts_freep) ExecArtifacts *a = artifacts_of(SHA_A, SHA_B), *b = NULL, *empty = NULL;

        assert_int_equal(store_put(s, r), 0);
        /* Not collected yet. */
        assert_int_equal(store_get_artifacts(s, "exec_art", &b), -ENOENT);
        assert_int_equal(store_get_artifacts(s, "no/such id", &b), -ENOENT);

        assert_int_equal(store_put_artifacts(s, "exec_art", a), 0);
        assert_int_equal(store_get_artifacts(s, "exec_art", &b), 0);
        assert_int_equal(b->n_items, 2);
        /* Sorted by path. */
        assert_string_equal(b->items[0].path, "data/result.csv");
        assert_int_equal(b->items[0].size, 12);
        assert_string_equal(b->items[0].mime_type, "text/csv");
        assert_string_equal(b->items[0].sha256, SHA_A);
        assert_string_equal(b->items[1].path, "plot \xc3\xa9.png");
        assert_int_equal(b->items[1].size, 1 << 20);
        assert_string_equal(b->items[1].sha256, SHA_B);
        assert_int_equal(b->n_skipped, 2);
        assert_string_equal(b->skipped[0].path, "link");
        assert_string_equal(b->skipped[0].reason, "symlink");
        assert_string_equal(b->skipped[1].path, "bad\\x0aname");
        assert_int_equal(b->n_skipped_total, 5);
        b = exec_artifacts_free(b);

        /* Putting again replaces, all of it. */
        empty = exec_artifacts_new();
        assert_non_null(empty);
        assert_int_equal(store_put_artifacts(s, "exec_art", empty), 0);
        assert_int_equal(store_get_artifacts(s, "exec_art", &b), 0);
        assert_int_equal(b->n_items, 0);
        assert_int_equal(b->n_skipped, 0);
        assert_int_equal(b->n_skipped_total, 0);
        b = exec_artifacts_free(b);

        /* All or nothing: a duplicate path fails the whole put, the earlier list stays. */
        assert_int_equal(store_put_artifacts(s, "exec_art", a), 0);
        assert_int_equal(exec_artifacts_add(empty, "x", 1, "text/plain", SHA_C), 0);
        assert_int_equal(exec_artifacts_add(empty, "x", 2, "text/plain", SHA_C), 0);
        assert_int_equal(store_put_artifacts(s, "exec_art", empty), -EINVAL);
        assert_int_equal(store_get_artifacts(s, "exec_art", &b), 0);
        assert_int_equal(b->n_items, 2);
        b = exec_artifacts_free(b);

        /* Invalid arguments never reach the database. */
        assert_int_equal(store_put_artifacts(s, "bad id!", a), -EINVAL);
        a->items[0].sha256[3] = 'X';
        assert_int_equal(store_put_artifacts(s, "exec_art", a), -EINVAL);
        a->items[0].sha256[3] = 'a';
        a->items[0].size = UINT64_MAX;
        assert_int_equal(store_put_artifacts(s, "exec_art", a), -EINVAL);
}

/* Purging records takes their artifacts along; a blob two executions share stays until the last. */
static void test_purge_artifacts(_unused_ void **state) {
        _cleanup_(store_closep) Store *s = open_ok();
        _cleanup_(store_record_freep) StoreRecord *old = record_full("exec_old"), *young = record_full("exec_young");
        _cleanup_(exec_artifacts_freep) ExecArtifacts *a = artifacts_of(SHA_A, SHA_B), *b = artifacts_of(SHA_B, SHA_C),
                                                      *got = NULL;
        char **gone = NULL;
        uint64_t n = 0;

        young->exec->finished_usec = BASE_USEC + 10 * 1000000ULL;
        assert_int_equal(store_put(s, old), 0);
        assert_int_equal(store_put(s, young), 0);
        assert_int_equal(store_put_artifacts(s, "exec_old", a), 0);
        assert_int_equal(store_put_artifacts(s, "exec_young", b), 0);

        /* Nothing old enough: nothing goes. */
        assert_int_equal(store_purge_ex(s, BASE_USEC, &n, &gone), 0);
        assert_int_equal(n, 0);
        assert_null(gone);

        /* The old one: SHA_A was its alone, SHA_B is still the young one's. */
        assert_int_equal(store_purge_ex(s, BASE_USEC + 1000000ULL, &n, &gone), 0);
        assert_int_equal(n, 1);
        assert_non_null(gone);
        assert_string_equal(gone[0], SHA_A);
        assert_null(gone[1]);
        gone = strv_free(gone);
        assert_int_equal(store_get_artifacts(s, "exec_old", &got), -ENOENT);
        assert_int_equal(store_get_artifacts(s, "exec_young", &got), 0);
        assert_int_equal(got->n_items, 2);
        got = exec_artifacts_free(got);

        /* store_purge() takes the rows too (the caller learns no digests). */
        assert_int_equal(store_purge(s, UINT64_MAX, &n), 0);
        assert_int_equal(n, 1);
        assert_int_equal(store_get_artifacts(s, "exec_young", &got), -ENOENT);
        assert_int_equal(count(s), 0);
}

/* Several nodes on one PostgreSQL (store_set_blob_hooks()): a put checks its blobs under the
 * artifacts lock and refuses (-ESTALE, nothing recorded) when one is gone; a purge removes the
 * unreferenced blobs itself, inside its transaction, and hands none back for the caller to unlink
 * later outside the lock. */
typedef struct BlobFs {
        char present[3][65];            /* the digests "on disk" */
        char removed[4][65];
        unsigned n_removed;
} BlobFs;

static int blob_exists(void *userdata, const char *sha) {
        BlobFs *fs = userdata;

        for (size_t i = 0; i < ELEMENTSOF(fs->present); i++)
                if (streq(fs->present[i], sha))
                        return 0;
        return -ENOENT;
}

static int blob_remove(void *userdata, const char *sha) {
        BlobFs *fs = userdata;

        for (size_t i = 0; i < ELEMENTSOF(fs->present); i++)
                if (streq(fs->present[i], sha)) {
                        fs->present[i][0] = 0;
                        assert_true(fs->n_removed < ELEMENTSOF(fs->removed));
                        strcpy(fs->removed[fs->n_removed++], sha);
                        return 0;
                }
        return -ENOENT;
}

static void test_blob_hooks_pg(_unused_ void **state) {
        _cleanup_(store_closep) Store *s = open_ok();
        _cleanup_(store_record_freep) StoreRecord *old = record_full("exec_old"), *young = record_full("exec_young");
        _cleanup_(exec_artifacts_freep) ExecArtifacts *a = artifacts_of(SHA_A, SHA_B), *b = artifacts_of(SHA_B, SHA_C),
                                                      *got = NULL;
        BlobFs fs = {};
        char **gone = NULL;
        uint64_t n = 0;

        strcpy(fs.present[0], SHA_A);
        strcpy(fs.present[1], SHA_B);
        store_set_blob_hooks(s, blob_exists, blob_remove, &fs);
        young->exec->finished_usec = BASE_USEC + 10 * 1000000ULL;
        assert_int_equal(store_put(s, old), 0);
        assert_int_equal(store_put(s, young), 0);
        assert_int_equal(store_put_artifacts(s, "exec_old", a), 0);

        /* SHA_C is not there (purged by another node since the collection saw it): nothing recorded. */
        assert_int_equal(store_put_artifacts(s, "exec_young", b), -ESTALE);
        assert_int_equal(store_get_artifacts(s, "exec_young", &got), -ENOENT);
        assert_non_null(strstr(store_error_message(s), "purged meanwhile"));
        /* Collected again: it is there now. */
        strcpy(fs.present[2], SHA_C);
        assert_int_equal(store_put_artifacts(s, "exec_young", b), 0);

        /* The old record goes: SHA_A was its alone and is removed by the purge itself; SHA_B stays
         * (the young one's); nothing is handed back to unlink after the lock. */
        assert_int_equal(store_purge_ex(s, BASE_USEC + 1000000ULL, &n, &gone), 0);
        assert_int_equal(n, 1);
        assert_null(gone);
        assert_int_equal(fs.n_removed, 1);
        assert_string_equal(fs.removed[0], SHA_A);
        assert_int_equal(blob_exists(&fs, SHA_B), 0);
        assert_int_equal(blob_exists(&fs, SHA_C), 0);

        /* The rest: SHA_B and SHA_C go, each once. */
        assert_int_equal(store_purge_ex(s, UINT64_MAX, &n, &gone), 0);
        assert_int_equal(n, 1);
        assert_null(gone);
        assert_int_equal(fs.n_removed, 3);
        assert_int_equal(blob_exists(&fs, SHA_B), -ENOENT);
        assert_int_equal(blob_exists(&fs, SHA_C), -ENOENT);
}

/* ---- artifact usage (migration 9): the running sums the budgets read ---- */


static uint64_t store_bytes(Store *s) {
        uint64_t v = UINT64_MAX;

        assert_int_equal(store_artifact_store_bytes(s, &v), 0);
        return v;
}

static uint64_t caller_bytes(Store *s, const char *owner) {
        uint64_t v = UINT64_MAX;

        assert_int_equal(store_artifact_caller_bytes(s, owner, &v), 0);
        return v;
}

/* One artifact per digest given, each charged `charged` bytes (size 1 MiB whatever the charge: a
 * sparse file's size is not what counts). */
static ExecArtifacts *charged_artifacts(uint64_t charged, const char *sha1, const char *sha2) {
        ExecArtifacts *a = exec_artifacts_new();

        assert_non_null(a);
        assert_int_equal(exec_artifacts_add(a, "one.bin", 1 << 20, "application/octet-stream", sha1), 0);
        a->items[0].charged_bytes = charged;
        if (sha2) {
                assert_int_equal(exec_artifacts_add(a, "two.bin", 1 << 20, "application/octet-stream", sha2), 0);
                a->items[1].charged_bytes = charged;
        }
        return a;
}

static void put_owned(Store *s, const char *id, const char *owner, uint64_t finished_usec) {
        _cleanup_(store_record_freep) StoreRecord *r = record_full(id);

        r->owner = mfree(r->owner);
        if (owner)
                r->owner = strdup(owner);
        r->exec->finished_usec = finished_usec;
        assert_int_equal(store_put(s, r), 0);
}

/* Row by row: what each step does to the store's sum (distinct contents) and to each owner's (every
 * row). */
static void test_artifact_usage(_unused_ void **state) {
        _cleanup_(store_closep) Store *s = open_ok();
        _cleanup_(exec_artifacts_freep) ExecArtifacts *ab = charged_artifacts(4096, SHA_A, SHA_B),
                                                      *b = charged_artifacts(8192, SHA_B, NULL),
                                                      *c = charged_artifacts(100, SHA_C, NULL),
                                                      *none = exec_artifacts_new(), *got = NULL;
        uint64_t n = 0;

        assert_non_null(none);
        assert_int_equal(store_bytes(s), 0);
        assert_int_equal(caller_bytes(s, "uid:1"), 0);
        assert_int_equal(caller_bytes(s, NULL), 0);
        put_owned(s, "exec_u1", "uid:1", BASE_USEC + 1);
        put_owned(s, "exec_u2", "uid:1", BASE_USEC + 2);
        put_owned(s, "exec_k", "key:ci", BASE_USEC + 100 * 1000000ULL);
        put_owned(s, "exec_anon", NULL, BASE_USEC + 100 * 1000000ULL);

        /* Charged what was really stored, not the size; read back as such. */
        assert_int_equal(store_put_artifacts(s, "exec_u1", ab), 0);
        assert_int_equal(store_bytes(s), 8192);
        assert_int_equal(caller_bytes(s, "uid:1"), 8192);
        assert_int_equal(store_get_artifacts(s, "exec_u1", &got), 0);
        assert_int_equal(got->items[0].size, 1 << 20);
        assert_int_equal(got->items[0].charged_bytes, 4096);
        got = exec_artifacts_free(got);

        /* The same content again: the store holds it once (charged as first stored), the owner pays
         * for every row. */
        assert_int_equal(store_put_artifacts(s, "exec_u2", b), 0);
        assert_int_equal(store_bytes(s), 8192);
        assert_int_equal(caller_bytes(s, "uid:1"), 8192 + 8192);

        /* Another owner's content shared: its own usage counts it, the first owner's does not move. */
        assert_int_equal(store_put_artifacts(s, "exec_k", b), 0);
        assert_int_equal(caller_bytes(s, "key:ci"), 8192);
        assert_int_equal(caller_bytes(s, "uid:1"), 16384);
        assert_int_equal(store_bytes(s), 8192);

        /* No known owner: '' (NULL asks for it). */
        assert_int_equal(store_put_artifacts(s, "exec_anon", c), 0);
        assert_int_equal(caller_bytes(s, NULL), 100);
        assert_int_equal(caller_bytes(s, ""), 100);
        assert_int_equal(store_bytes(s), 8292);

        /* Replacing a list takes the old rows' charges away first. */
        assert_int_equal(store_put_artifacts(s, "exec_u1", none), 0);
        assert_int_equal(caller_bytes(s, "uid:1"), 8192);
        /* A went; B is still referred to, charged as when it was first stored (4096). */
        assert_int_equal(store_bytes(s), 4096 + 100);
        assert_int_equal(store_put_artifacts(s, "exec_u1", ab), 0);
        assert_int_equal(caller_bytes(s, "uid:1"), 16384);
        assert_int_equal(store_bytes(s), 4096 + 4096 + 100);

        /* A failed put changes nothing. */
        assert_int_equal(exec_artifacts_add(none, "x", 1, "text/plain", SHA_C), 0);
        assert_int_equal(exec_artifacts_add(none, "x", 2, "text/plain", SHA_C), 0);
        assert_int_equal(store_put_artifacts(s, "exec_u1", none), -EINVAL);
        assert_int_equal(caller_bytes(s, "uid:1"), 16384);
        assert_int_equal(store_bytes(s), 4096 + 4096 + 100);

        /* Purging uid:1's two executions gives back all of its usage; B stays (key:ci's). */
        assert_int_equal(store_purge_ex(s, BASE_USEC + 10, &n, NULL), 0);
        assert_int_equal(n, 2);
        assert_int_equal(caller_bytes(s, "uid:1"), 0);
        assert_int_equal(caller_bytes(s, "key:ci"), 8192);
        assert_int_equal(store_bytes(s), 4096 + 100);
        assert_int_equal(store_purge(s, UINT64_MAX, &n), 0);
        assert_int_equal(store_bytes(s), 0);
        assert_int_equal(caller_bytes(s, "key:ci"), 0);
        assert_int_equal(caller_bytes(s, NULL), 0);
}

/* A version 8 database with artifacts: migration 9 charges the old rows their size (they were
 * copied with their holes filled) to their executions' owners. */
static void test_artifact_usage_migration(_unused_ void **state) {
        Store *s = open_ok();
        _cleanup_(exec_artifacts_freep) ExecArtifacts *ab = charged_artifacts(4096, SHA_A, SHA_B),
                                                      *b = charged_artifacts(4096, SHA_B, NULL), *got = NULL;

        put_owned(s, "exec_u1", "uid:1", BASE_USEC + 1);
        put_owned(s, "exec_k", "key:ci", BASE_USEC + 1);
        assert_int_equal(store_put_artifacts(s, "exec_u1", ab), 0);
        assert_int_equal(store_put_artifacts(s, "exec_k", b), 0);
        store_close(s);

        sql_exec_raw2("DROP TRIGGER artifacts_charge; DROP TRIGGER artifacts_refund; DROP TRIGGER artifacts_immutable; "
                     "DROP TABLE artifact_usage; DROP TABLE artifact_blobs; DROP TABLE artifact_store_usage; "
                     "ALTER TABLE artifacts DROP COLUMN charged_bytes; ALTER TABLE artifacts DROP COLUMN owner; "
                     "ALTER TABLE executions DROP COLUMN client_id; ALTER TABLE sessions DROP COLUMN client_id; "
                     "ALTER TABLE executions DROP COLUMN start; "
                     /* migration 12's record triggers name network; it makes them again */
                     "DROP TRIGGER record_usage_insert; DROP TRIGGER record_usage_update; "
                     "DROP TRIGGER record_usage_delete; ALTER TABLE executions DROP COLUMN network; ALTER TABLE executions DROP COLUMN environment; ALTER TABLE executions DROP COLUMN summary; "
                     "ALTER TABLE executions DROP COLUMN isolation; DROP INDEX executions_node; "
                     "ALTER TABLE executions DROP COLUMN node; ALTER TABLE executions DROP COLUMN node_epoch; "
                     "ALTER TABLE executions DROP COLUMN attempt; DROP TABLE nodes; "
                     "ALTER TABLE sessions DROP COLUMN node; "
                     "PRAGMA user_version = 8",
                     /* PostgreSQL: migration 8's record bytes, without the columns that went */
                     "DROP FUNCTION sandboxd_artifacts_charge, sandboxd_artifacts_refund, "
                     "sandboxd_artifact_blobs_charge, sandboxd_artifact_blobs_refund, sandboxd_artifacts_immutable "
                     "CASCADE; "
                     PG_UNDO_9_TO_18
                     "CREATE OR REPLACE FUNCTION sandboxd_record_bytes(r executions) RETURNS bigint LANGUAGE sql "
                     "AS $f$ SELECT (256 + coalesce(octet_length(r.code), 0) + coalesce(octet_length(r.stdout), 0) "
                     "+ coalesce(octet_length(r.stderr), 0) + coalesce(octet_length(r.request), 0) "
                     "+ coalesce(octet_length(r.error_message), 0))::bigint $f$; "
                     "UPDATE sandboxd_schema SET version = 8");
        s = open_ok();
        assert_int_equal(caller_bytes(s, "uid:1"), 2 << 20);
        assert_int_equal(caller_bytes(s, "key:ci"), 1 << 20);
        assert_int_equal(store_bytes(s), 2 << 20);      /* A and B once each */
        assert_int_equal(store_get_artifacts(s, "exec_k", &got), 0);
        assert_int_equal(got->items[0].charged_bytes, 1 << 20);
        /* And the triggers work on the migrated rows. */
        assert_int_equal(store_purge(s, UINT64_MAX, NULL), 0);
        assert_int_equal(store_bytes(s), 0);
        assert_int_equal(caller_bytes(s, "uid:1"), 0);
        store_close(s);
}

/* ---- the callback outbox ---- */


/* Put the final record of id together with its delivery due at due. */
static void put_with_callback(Store *s, const char *id, uint64_t due) {
        _cleanup_(store_record_freep) StoreRecord *r = record_full(id);

        r->callback = callback_new(id, due);
        assert_int_equal(store_put(s, r), 0);
}

static void assert_callback_equal(const StoreCallback *a, const StoreCallback *b, bool body) {
        assert_string_equal(a->execution_id, b->execution_id);
        assert_string_equal(a->url, b->url);
        assert_string_equal(a->delivery_id, b->delivery_id);
        assert_int_equal(a->state, b->state);
        assert_int_equal(a->attempts, b->attempts);
        if (a->state == CALLBACK_PENDING)
                assert_int_equal(a->next_attempt_usec, b->next_attempt_usec);
        assert_true(streq_ptr(a->last_error, b->last_error));
        assert_int_equal(a->created_usec, b->created_usec);
        assert_int_equal(a->delivered_usec, b->delivered_usec);
        if (body)
                assert_string_equal(a->body, b->body);
}

static void test_callback_outbox(_unused_ void **state) {
        _cleanup_(store_closep) Store *s = open_ok();
        _cleanup_(store_callback_freep) StoreCallback *want = callback_new("exec_cb1", BASE_USEC + 100);
        _cleanup_(store_record_freep) StoreRecord *plain = record_full("exec_plain");
        StoreCallback *got = NULL, **l = NULL;
        size_t n = 0;
        uint64_t due = 0;

        /* Nothing pending in an empty store. */
        assert_int_equal(store_callback_next_due(s, &due), -ENOENT);
        assert_int_equal(store_callback_due(s, UINT64_MAX, 10, &l, &n), 0);
        assert_int_equal(n, 0);
        free(l);

        /* A record without a delivery has none. */
        assert_int_equal(store_put(s, plain), 0);
        assert_int_equal(store_callback_get(s, "exec_plain", true, &got), -ENOENT);

        /* Enqueued with its record; read back with and without the body. */
        put_with_callback(s, "exec_cb1", BASE_USEC + 100);
        get_equal(s, plain);
        assert_int_equal(store_callback_get(s, "exec_cb1", true, &got), 0);
        assert_callback_equal(got, want, true);
        /* With the body: the execution's client-chosen id (record_full()'s), for the header. */
        assert_string_equal(got->client_id, "job-1");
        got = store_callback_free(got);
        assert_int_equal(store_callback_get(s, "exec_cb1", false, &got), 0);
        assert_null(got->body);
        assert_null(got->client_id);
        assert_callback_equal(got, want, false);
        got = store_callback_free(got);

        /* A second final write does not reset it (the execution is final once). */
        want->attempts = 2;
        want->last_error = strdup("HTTP 503");
        want->next_attempt_usec = BASE_USEC + 300;
        assert_int_equal(store_callback_update(s, want), 0);
        put_with_callback(s, "exec_cb1", BASE_USEC + 1);
        assert_int_equal(store_callback_get(s, "exec_cb1", true, &got), 0);
        assert_callback_equal(got, want, true);
        got = store_callback_free(got);

        /* A claim (nodes sharing the outbox): it passes only while the row still has the attempts
         * the claimer read; a second node claiming the same attempt gets -ESTALE, the row unchanged. */
        want->claim = true;
        want->claim_attempts = 2;
        want->attempts = 3;
        want->next_attempt_usec = BASE_USEC + 400;
        assert_int_equal(store_callback_update(s, want), 0);
        want->next_attempt_usec = BASE_USEC + 500;
        assert_int_equal(store_callback_update(s, want), -ESTALE);
        want->claim = false;
        want->next_attempt_usec = BASE_USEC + 400;
        assert_int_equal(store_callback_get(s, "exec_cb1", true, &got), 0);
        assert_callback_equal(got, want, true);
        got = store_callback_free(got);
        want->attempts = 2;
        want->next_attempt_usec = BASE_USEC + 300;
        assert_int_equal(store_callback_update(s, want), 0);

        /* Two more, due earlier and later: next_due and due() see them in order of due time. */
        put_with_callback(s, "exec_cb0", BASE_USEC + 50);
        put_with_callback(s, "exec_cb2", BASE_USEC + 900);
        assert_int_equal(store_callback_next_due(s, &due), 0);
        assert_int_equal(due, BASE_USEC + 50);
        assert_int_equal(store_callback_due(s, BASE_USEC + 49, 10, &l, &n), 0);
        assert_int_equal(n, 0);
        free(l);
        assert_int_equal(store_callback_due(s, BASE_USEC + 300, 10, &l, &n), 0);
        assert_int_equal(n, 2);
        assert_string_equal(l[0]->execution_id, "exec_cb0");
        assert_string_equal(l[1]->execution_id, "exec_cb1");
        assert_non_null(l[1]->body);
        store_callbacks_free(l, n);
        assert_int_equal(store_callback_due(s, UINT64_MAX, 1, &l, &n), 0);
        assert_int_equal(n, 1);
        store_callbacks_free(l, n);

        assert_int_equal(store_callback_count(s, CALLBACK_PENDING, &due), 0);
        assert_int_equal(due, 3);
        assert_int_equal(store_callback_count(s, CALLBACK_DELIVERED, &due), 0);
        assert_int_equal(due, 0);
        assert_int_equal(store_callback_count(s, _CALLBACK_STATE_MAX, &due), -EINVAL);

        /* Delivered and failed ones are no longer due. */
        want->state = CALLBACK_DELIVERED;
        want->attempts = 3;
        want->delivered_usec = BASE_USEC + 400;
        want->last_error = mfree(want->last_error);
        assert_int_equal(store_callback_update(s, want), 0);
        assert_int_equal(store_callback_get(s, "exec_cb1", false, &got), 0);
        assert_callback_equal(got, want, false);
        got = store_callback_free(got);
        assert_int_equal(store_callback_due(s, UINT64_MAX, 10, &l, &n), 0);
        assert_int_equal(n, 2);
        store_callbacks_free(l, n);
        assert_int_equal(store_callback_get(s, "exec_cb0", false, &got), 0);
        got->state = CALLBACK_FAILED;
        got->attempts = 1;
        got->last_error = strdup("HTTP 400");
        assert_int_equal(store_callback_update(s, got), 0);
        got = store_callback_free(got);
        assert_int_equal(store_callback_next_due(s, &due), 0);
        assert_int_equal(due, BASE_USEC + 900);
        assert_int_equal(store_callback_count(s, CALLBACK_PENDING, &due), 0);
        assert_int_equal(due, 1);
        assert_int_equal(store_callback_count(s, CALLBACK_FAILED, &due), 0);
        assert_int_equal(due, 1);

        /* Updating a delivery that does not exist, and invalid ones. */
        free(want->execution_id);
        want->execution_id = strdup("exec_none");
        assert_int_equal(store_callback_update(s, want), -ENOENT);
        want->state = _CALLBACK_STATE_MAX;
        assert_int_equal(store_callback_update(s, want), -EINVAL);
        assert_int_equal(store_callback_get(s, "bad id!", false, &got), -EINVAL);
        assert_int_equal(store_callback_due(s, 0, 0, &l, &n), -EINVAL);
        {
                _cleanup_(store_record_freep) StoreRecord *r = record_full("exec_mismatch");
                r->callback = callback_new("exec_other", 1);
                assert_int_equal(store_put(s, r), -EINVAL);
                r->callback = store_callback_free(r->callback);
                r->callback = callback_new("exec_mismatch", 1);
                r->callback->body = mfree(r->callback->body);
                assert_int_equal(store_put(s, r), -EINVAL);
        }

        /* Purge: a pending delivery keeps its record; delivered and failed ones go with theirs. */
        assert_int_equal(store_purge(s, UINT64_MAX, &due), 0);
        assert_int_equal(due, 3);      /* exec_plain, exec_cb0, exec_cb1 */
        assert_int_equal(count(s), 1);
        assert_int_equal(store_callback_get(s, "exec_cb1", false, &got), -ENOENT);
        assert_int_equal(store_callback_get(s, "exec_cb0", false, &got), -ENOENT);
        assert_int_equal(store_callback_get(s, "exec_cb2", false, &got), 0);
        got->state = CALLBACK_DELIVERED;
        got->delivered_usec = BASE_USEC + 1000;
        assert_int_equal(store_callback_update(s, got), 0);
        got = store_callback_free(got);
        assert_int_equal(store_purge(s, UINT64_MAX, &due), 0);
        assert_int_equal(due, 1);
        assert_int_equal(count(s), 0);
        assert_int_equal(store_callback_next_due(s, &due), -ENOENT);
}

/* The outbox without waiting (callback.c's every call): the earliest pending rows, due or not, with
 * their bodies; only those due at a time; a claim that passes once, a second -ESTALE, an update of no
 * delivery -ENOENT; a cancelled read's list freed, not delivered (ASan: not leaked). */
static struct {
        unsigned calls;
        int r;
        StoreCallback **l;
        size_t n;
        int updated[8];
        unsigned n_updated;
} outbox;

static void on_outbox_due(void *userdata, int r, StoreCallback **l, size_t n) {
        store_callbacks_free(outbox.l, outbox.n);
        outbox.calls++;
        outbox.r = r;
        outbox.l = l;
        outbox.n = n;
}

static void on_outbox_updated(void *userdata, int r, StoreRecord *rec) {
        assert_null(rec);
        assert_true(outbox.n_updated < ELEMENTSOF(outbox.updated));
        outbox.updated[outbox.n_updated++] = r;
}

static void run_until_outbox(sd_event *e, unsigned calls, unsigned updated) {
        for (unsigned i = 0; i < 500 && (outbox.calls < calls || outbox.n_updated < updated); i++)
                assert_true(sd_event_run(e, 10 * USEC_PER_MSEC) >= 0);
}

static void test_callback_outbox_async(_unused_ void **state) {
        _cleanup_(store_callback_freep) StoreCallback *claim = NULL, *missing = callback_new("exec_none", 1);
        sd_event *e = NULL;
        Store *s = open_ok();
        StoreCall *c = NULL;

        outbox = (typeof(outbox)) {};
        assert_int_equal(sd_event_new(&e), 0);
        assert_int_equal(store_attach_event(s, e), 0);
        put_with_callback(s, "exec_o3", BASE_USEC + 30);
        put_with_callback(s, "exec_o1", BASE_USEC + 10);
        put_with_callback(s, "exec_o2", BASE_USEC + 20);

        assert_int_equal(store_callback_due_async(s, UINT64_MAX, 0, on_outbox_due, NULL, NULL), -EINVAL);
        /* The two due first, due or not, earliest first, bodies loaded; nothing before the loop runs. */
        assert_int_equal(store_callback_due_async(s, UINT64_MAX, 2, on_outbox_due, NULL, NULL), 0);
        assert_int_equal(outbox.calls, 0);
        run_until_outbox(e, 1, 0);
        assert_int_equal(outbox.r, 0);
        assert_int_equal(outbox.n, 2);
        assert_string_equal(outbox.l[0]->execution_id, "exec_o1");
        assert_string_equal(outbox.l[1]->execution_id, "exec_o2");
        assert_int_equal(outbox.l[1]->next_attempt_usec, BASE_USEC + 20);
        assert_non_null(outbox.l[0]->body);
        /* Due at a time: only those. */
        assert_int_equal(store_callback_due_async(s, BASE_USEC + 25, 10, on_outbox_due, NULL, NULL), 0);
        run_until_outbox(e, 2, 0);
        assert_int_equal(outbox.n, 2);
        assert_string_equal(outbox.l[1]->execution_id, "exec_o2");

        /* Two nodes claim exec_o1's first attempt: one wins. */
        claim = TAKE_PTR(outbox.l[0]);
        claim->claim = true;
        claim->claim_attempts = claim->attempts;
        claim->attempts++;
        claim->next_attempt_usec = BASE_USEC + 1000;
        assert_int_equal(store_callback_update_async(s, claim, on_outbox_updated, NULL, NULL), 0);
        assert_int_equal(store_callback_update_async(s, claim, on_outbox_updated, NULL, NULL), 0);
        /* An outcome for a delivery that does not exist. */
        assert_int_equal(store_callback_update_async(s, missing, on_outbox_updated, NULL, NULL), 0);
        assert_int_equal(outbox.n_updated, 0);
        run_until_outbox(e, 2, 3);
        assert_int_equal(outbox.n_updated, 3);
        assert_int_equal(outbox.updated[0], 0);
        assert_int_equal(outbox.updated[1], -ESTALE);
        assert_int_equal(outbox.updated[2], -ENOENT);

        /* The claimed row is pending at its lease: last now, and not due before it. */
        assert_int_equal(store_callback_due_async(s, UINT64_MAX, 10, on_outbox_due, NULL, NULL), 0);
        run_until_outbox(e, 3, 3);
        assert_int_equal(outbox.n, 3);
        assert_string_equal(outbox.l[0]->execution_id, "exec_o2");
        assert_string_equal(outbox.l[2]->execution_id, "exec_o1");
        assert_int_equal(outbox.l[2]->attempts, 1);
        assert_int_equal(outbox.l[2]->next_attempt_usec, BASE_USEC + 1000);

        /* Cancelled: not delivered; the next one is. */
        assert_int_equal(store_callback_due_async(s, UINT64_MAX, 10, on_outbox_due, NULL, &c), 0);
        (void) store_call_cancel(c);
        assert_int_equal(store_callback_due_async(s, BASE_USEC, 10, on_outbox_due, NULL, NULL), 0);
        run_until_outbox(e, 4, 3);
        assert_int_equal(outbox.calls, 4);
        assert_int_equal(outbox.r, 0);
        assert_int_equal(outbox.n, 0);
        assert_int_equal(store_async_pending(s), 0);

        store_callbacks_free(outbox.l, outbox.n);
        outbox = (typeof(outbox)) {};
        store_close(s);
        sd_event_unref(e);
}

/* The artifact list and a delivery read without waiting: what the synchronous reads return, from
 * the loop (the callback without its body); none -ENOENT. */
static struct {
        unsigned calls;
        int r;
        ExecArtifacts *a;
        StoreCallback *cb;
        uint64_t bytes;
} one;

static void on_artifacts_got(void *userdata, int r, ExecArtifacts *a) {
        one.calls++;
        one.r = r;
        exec_artifacts_free(one.a);
        one.a = a;
}

static void on_bytes_got(void *userdata, int r, uint64_t v) {
        one.calls++;
        one.r = r;
        one.bytes = v;
}

static void on_callback_got(void *userdata, int r, StoreCallback *cb) {
        one.calls++;
        one.r = r;
        store_callback_free(one.cb);
        one.cb = cb;
}

static void run_until_one(sd_event *e, unsigned n) {
        for (unsigned i = 0; i < 500 && one.calls < n; i++)
                assert_true(sd_event_run(e, 10 * USEC_PER_MSEC) >= 0);
        assert_int_equal(one.calls, n);
}

static void test_reads_async(_unused_ void **state) {
        _cleanup_(store_record_freep) StoreRecord *r = record_full("exec_ra");
        _cleanup_(exec_artifacts_freep) ExecArtifacts *a = artifacts_of(SHA_A, SHA_B), *empty = exec_artifacts_new();
        sd_event *e = NULL;
        Store *s = open_ok();

        one = (typeof(one)) {};
        assert_int_equal(sd_event_new(&e), 0);
        assert_int_equal(store_attach_event(s, e), 0);
        assert_int_equal(store_put(s, r), 0);

        assert_int_equal(store_get_artifacts_async(s, "exec_ra", on_artifacts_got, NULL, NULL), 0);
        assert_int_equal(one.calls, 0);
        run_until_one(e, 1);
        assert_int_equal(one.r, -ENOENT);
        assert_null(one.a);
        assert_int_equal(store_put_artifacts(s, "exec_ra", a), 0);
        assert_int_equal(store_get_artifacts_async(s, "exec_ra", on_artifacts_got, NULL, NULL), 0);
        run_until_one(e, 2);
        assert_int_equal(one.r, 0);
        assert_int_equal(one.a->n_items, 2);
        assert_string_equal(one.a->items[0].path, "data/result.csv");
        assert_string_equal(one.a->items[1].sha256, SHA_B);
        assert_int_equal(one.a->n_skipped, 2);
        assert_int_equal(one.a->n_skipped_total, 5);
        /* A collection without files: one row of NULLs in the join, an empty list. */
        assert_int_equal(store_put_artifacts(s, "exec_ra", empty), 0);
        assert_int_equal(store_get_artifacts_async(s, "exec_ra", on_artifacts_got, NULL, NULL), 0);
        run_until_one(e, 3);
        assert_int_equal(one.r, 0);
        assert_int_equal(one.a->n_items, 0);
        assert_int_equal(one.a->n_skipped_total, 0);

        /* The usage sums, as the synchronous reads have them (charged bytes of the list put above,
         * then of the empty one: nothing). */
        {
                _cleanup_(exec_artifacts_freep) ExecArtifacts *charged = charged_artifacts(4096, SHA_A, SHA_B);
                uint64_t want = UINT64_MAX;

                assert_int_equal(store_put_artifacts(s, "exec_ra", charged), 0);
                assert_int_equal(store_artifact_caller_bytes(s, "uid:1000", &want), 0);
                assert_true(want > 0);
                assert_int_equal(store_artifact_caller_bytes_async(s, "uid:1000", on_bytes_got, NULL, NULL), 0);
                run_until_one(e, 4);
                assert_int_equal(one.r, 0);
                assert_int_equal(one.bytes, want);
                assert_int_equal(store_artifact_store_bytes(s, &want), 0);
                assert_int_equal(store_artifact_store_bytes_async(s, on_bytes_got, NULL, NULL), 0);
                run_until_one(e, 5);
                assert_int_equal(one.bytes, want);
                assert_int_equal(store_artifact_caller_bytes_async(s, "uid:nobody", on_bytes_got, NULL, NULL), 0);
                run_until_one(e, 6);
                assert_int_equal(one.r, 0);
                assert_int_equal(one.bytes, 0);
        }

        assert_int_equal(store_callback_get_async(s, "exec_cbx", on_callback_got, NULL, NULL), 0);
        run_until_one(e, 7);
        assert_int_equal(one.r, -ENOENT);
        put_with_callback(s, "exec_cbx", BASE_USEC + 5);
        assert_int_equal(store_callback_get_async(s, "exec_cbx", on_callback_got, NULL, NULL), 0);
        run_until_one(e, 8);
        assert_int_equal(one.r, 0);
        assert_string_equal(one.cb->delivery_id, "dlv_exec_cbx");
        assert_int_equal(one.cb->state, CALLBACK_PENDING);
        assert_int_equal(one.cb->next_attempt_usec, BASE_USEC + 5);
        assert_null(one.cb->body);
        assert_int_equal(store_callback_get_async(s, "bad id!", on_callback_got, NULL, NULL), -EINVAL);
        /* The outbox's count (GET /metrics): one pending, none delivered. */
        assert_int_equal(store_callback_count_async(s, CALLBACK_PENDING, on_bytes_got, NULL, NULL), 0);
        run_until_one(e, 9);
        assert_int_equal(one.r, 0);
        assert_int_equal(one.bytes, 1);
        assert_int_equal(store_callback_count_async(s, CALLBACK_DELIVERED, on_bytes_got, NULL, NULL), 0);
        run_until_one(e, 10);
        assert_int_equal(one.bytes, 0);
        assert_int_equal(store_callback_count_async(s, _CALLBACK_STATE_MAX, on_bytes_got, NULL, NULL), -EINVAL);
        assert_int_equal(store_async_pending(s), 0);

        exec_artifacts_free(one.a);
        store_callback_free(one.cb);
        one = (typeof(one)) {};
        store_close(s);
        sd_event_unref(e);
}

/* The purge without waiting (store_purge_async()): where the store removes the blobs itself
 * (PostgreSQL with the hooks) the count comes to the callback and the blobs no row refers to any more
 * are removed under the lock, each once; elsewhere -EOPNOTSUPP at once. */
static struct {
        unsigned calls;
        int r;
        uint64_t n;
} purge;

static void on_purged(void *userdata, int r, uint64_t n) {
        purge.calls++;
        purge.r = r;
        purge.n = n;
}

static void test_purge_async(_unused_ void **state) {
        _cleanup_(store_record_freep) StoreRecord *old = record_full("exec_old"), *young = record_full("exec_young");
        _cleanup_(exec_artifacts_freep) ExecArtifacts *a = artifacts_of(SHA_A, SHA_B), *b = artifacts_of(SHA_B, SHA_C);
        _cleanup_(exec_artifacts_freep) ExecArtifacts *got = NULL;
        BlobFs fs = {};
        sd_event *e = NULL;
        Store *s = open_ok();

        purge = (typeof(purge)) {};
        assert_int_equal(sd_event_new(&e), 0);
        assert_int_equal(store_attach_event(s, e), 0);
        if (!is_pg()) {
                assert_int_equal(store_purge_async(s, UINT64_MAX, on_purged, NULL, NULL), -EOPNOTSUPP);
                goto end;
        }
        /* Without the hooks (nobody to remove the blobs): refused as well. */
        assert_int_equal(store_purge_async(s, UINT64_MAX, on_purged, NULL, NULL), -EOPNOTSUPP);
        strcpy(fs.present[0], SHA_A);
        strcpy(fs.present[1], SHA_B);
        strcpy(fs.present[2], SHA_C);
        store_set_blob_hooks(s, blob_exists, blob_remove, &fs);
        young->exec->finished_usec = BASE_USEC + 10 * 1000000ULL;
        assert_int_equal(store_put(s, old), 0);
        assert_int_equal(store_put(s, young), 0);
        assert_int_equal(store_put_artifacts(s, "exec_old", a), 0);
        assert_int_equal(store_put_artifacts(s, "exec_young", b), 0);

        assert_int_equal(store_purge_async(s, BASE_USEC + 1000000ULL, on_purged, NULL, NULL), 0);
        assert_int_equal(purge.calls, 0);
        for (unsigned i = 0; i < 500 && purge.calls < 1; i++)
                assert_true(sd_event_run(e, 10 * USEC_PER_MSEC) >= 0);
        assert_int_equal(purge.calls, 1);
        assert_int_equal(purge.r, 0);
        assert_int_equal(purge.n, 1);
        assert_int_equal(fs.n_removed, 1);
        assert_string_equal(fs.removed[0], SHA_A);
        assert_int_equal(store_get_artifacts(s, "exec_old", &got), -ENOENT);
        assert_int_equal(store_get_artifacts(s, "exec_young", &got), 0);
        assert_int_equal(got->n_items, 2);

        /* Nothing left to purge: 0, nothing removed. */
        assert_int_equal(store_purge_async(s, BASE_USEC + 1000000ULL, on_purged, NULL, NULL), 0);
        for (unsigned i = 0; i < 500 && purge.calls < 2; i++)
                assert_true(sd_event_run(e, 10 * USEC_PER_MSEC) >= 0);
        assert_int_equal(purge.r, 0);
        assert_int_equal(purge.n, 0);
        assert_int_equal(fs.n_removed, 1);

        /* The rest: SHA_B and SHA_C, each once. */
        assert_int_equal(store_purge_async(s, UINT64_MAX, on_purged, NULL, NULL), 0);
        for (unsigned i = 0; i < 500 && purge.calls < 3; i++)
                assert_true(sd_event_run(e, 10 * USEC_PER_MSEC) >= 0);
        assert_int_equal(purge.n, 1);
        assert_int_equal(fs.n_removed, 3);
        assert_int_equal(blob_exists(&fs, SHA_B), -ENOENT);
        assert_int_equal(blob_exists(&fs, SHA_C), -ENOENT);
end:
        store_close(s);
        sd_event_unref(e);
}

/* The artifact list written without waiting (store_put_artifacts_async(); PostgreSQL: one
 * transaction sent statement by statement): written, read back in order behind it; a statement that
 * fails half way (a path twice) rolls all of it back, the earlier list stays and the connection is
 * usable at once; a synchronous read waits for one under way. PostgreSQL, with the blob hooks: a
 * blob gone under the lock is -ESTALE, nothing recorded. */
static struct {
        unsigned calls;
        int r[8];
        char *error[8];
} put;

static void on_put_done(void *userdata, int r, StoreRecord *rec) {
        Store *s = userdata;

        assert_null(rec);
        assert_true(put.calls < ELEMENTSOF(put.r));
        put.r[put.calls] = r;
        put.error[put.calls] = r < 0 ? strdup(store_error_message(s)) : NULL;
        put.calls++;
}

static void run_until_put(sd_event *e, unsigned n) {
        for (unsigned i = 0; i < 500 && put.calls < n; i++)
                assert_true(sd_event_run(e, 10 * USEC_PER_MSEC) >= 0);
        assert_int_equal(put.calls, n);
}

static void test_put_artifacts_async(_unused_ void **state) {
        _cleanup_(store_record_freep) StoreRecord *r = record_full("exec_pa");
        _cleanup_(exec_artifacts_freep) ExecArtifacts *a = artifacts_of(SHA_A, SHA_B), *b = artifacts_of(SHA_B, SHA_C),
                                                      *twice = artifacts_of(SHA_C, SHA_C), *got = NULL;
        BlobFs fs = {};
        sd_event *e = NULL;
        Store *s = open_ok();

        put = (typeof(put)) {};
        one = (typeof(one)) {};
        assert_int_equal(sd_event_new(&e), 0);
        assert_int_equal(store_attach_event(s, e), 0);
        assert_int_equal(store_put(s, r), 0);
        assert_int_equal(store_put_artifacts_async(s, "bad id!", a, on_put_done, s, NULL), -EINVAL);

        /* Written; a read queued behind it sees it. */
        assert_int_equal(store_put_artifacts_async(s, "exec_pa", a, on_put_done, s, NULL), 0);
        assert_int_equal(store_get_artifacts_async(s, "exec_pa", on_artifacts_got, NULL, NULL), 0);
        assert_int_equal(put.calls, 0);
        run_until_one(e, 1);
        assert_int_equal(put.calls, 1);
        assert_int_equal(put.r[0], 0);
        assert_int_equal(one.r, 0);
        assert_int_equal(one.a->n_items, 2);
        assert_string_equal(one.a->items[1].sha256, SHA_B);

        /* The same path twice: the second insert fails after the delete; all of it rolled back. */
        free(twice->items[1].path);
        twice->items[1].path = strdup(twice->items[0].path);
        assert_non_null(twice->items[1].path);
        assert_int_equal(store_put_artifacts_async(s, "exec_pa", twice, on_put_done, s, NULL), 0);
        assert_int_equal(store_get_artifacts_async(s, "exec_pa", on_artifacts_got, NULL, NULL), 0);
        run_until_one(e, 2);
        assert_int_equal(put.calls, 2);
        assert_true(put.r[1] < 0);
        assert_non_null(put.error[1]);
        assert_int_equal(one.r, 0);
        assert_int_equal(one.a->n_items, 2);
        assert_string_equal(one.a->items[0].sha256, SHA_A);

        /* A synchronous read waits for the write under way. */
        assert_int_equal(store_put_artifacts_async(s, "exec_pa", b, on_put_done, s, NULL), 0);
        assert_int_equal(store_get_artifacts(s, "exec_pa", &got), 0);
        assert_int_equal(got->n_items, 2);
        assert_string_equal(got->items[0].sha256, SHA_B);
        assert_string_equal(got->items[1].sha256, SHA_C);
        got = exec_artifacts_free(got);
        run_until_put(e, 3);
        assert_int_equal(put.r[2], 0);

        if (is_pg()) {
                /* SHA_C purged by another node meanwhile: -ESTALE under the lock, b's list stays. */
                strcpy(fs.present[0], SHA_A);
                strcpy(fs.present[1], SHA_B);
                store_set_blob_hooks(s, blob_exists, blob_remove, &fs);
                assert_int_equal(store_put_artifacts_async(s, "exec_pa", b, on_put_done, s, NULL), 0);
                assert_int_equal(store_put_artifacts_async(s, "exec_pa", a, on_put_done, s, NULL), 0);
                run_until_put(e, 5);
                assert_int_equal(put.r[3], -ESTALE);
                assert_non_null(strstr(put.error[3], "purged meanwhile"));
                assert_int_equal(put.r[4], 0);
                assert_int_equal(store_get_artifacts(s, "exec_pa", &got), 0);
                assert_string_equal(got->items[0].sha256, SHA_A);
        }
        for (unsigned i = 0; i < put.calls; i++)
                free(put.error[i]);
        exec_artifacts_free(one.a);
        one = (typeof(one)) {};
        store_close(s);
        sd_event_unref(e);
}

static void test_callback_survives_reopen(_unused_ void **state) {
        Store *s = open_ok();
        StoreCallback *got = NULL;
        uint64_t due = 0;

        put_with_callback(s, "exec_r", BASE_USEC + 7);
        store_close(s);
        s = open_ok();
        assert_int_equal(store_callback_next_due(s, &due), 0);
        assert_int_equal(due, BASE_USEC + 7);
        assert_int_equal(store_callback_get(s, "exec_r", true, &got), 0);
        assert_string_equal(got->delivery_id, "dlv_exec_r");
        store_callback_free(got);
        store_close(s);
}

int main(void) {
        struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_artifacts, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_purge_artifacts, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_artifact_usage, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_artifact_usage_migration, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_callback_outbox, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_callback_outbox_async, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_reads_async, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_callback_survives_reopen, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_blob_hooks_pg, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_put_artifacts_async, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_purge_async, setup_dir, teardown_dir),
        };
        /* The hooks are for a store several nodes share; SQLite ignores them. */
        static const char *const pg_only[] = { "test_blob_hooks_pg", NULL };

        return run_store_tests("store-artifacts", tests, ELEMENTSOF(tests), NULL, pg_only);
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "model/conf.h"
#include "admission/quota.h"
#include "util.h"

/* The budgets row by row: a configuration (the defaults with a few keys changed), what the caller
 * and everyone hold, and the answer: admitted, or the 429 code (and field) that names the budget. */

#define GiB (1024ULL * 1024 * 1024)

typedef struct Cfg {
        uint64_t max_concurrent, max_queued, queued_per_caller, running_per_caller, reserve;
        uint64_t stored, callbacks, sessions_total, sessions_per_caller;
} Cfg;

typedef struct Row {
        const char *name;
        Cfg cfg;                        /* 0: the default */
        QuotaUsage u;
        const char *code;               /* NULL: admitted */
        const char *field;
} Row;

static Config *config_for(const Cfg *x) {
        Config *c = config_new();

        assert_non_null(c);
        if (x->max_concurrent)
                c->max_concurrent = x->max_concurrent;
        if (x->max_queued)
                c->max_queued = x->max_queued;
        if (x->queued_per_caller)
                c->max_queued_per_caller = x->queued_per_caller;
        if (x->running_per_caller)
                c->max_running_per_caller = x->running_per_caller;
        if (x->reserve)
                c->admin_queue_reserve = x->reserve;
        if (x->stored)
                c->max_stored_bytes_per_caller = x->stored;
        if (x->callbacks)
                c->callback_max_pending_per_caller = x->callbacks;
        if (x->sessions_total)
                c->max_sessions_disk_mb = x->sessions_total;
        if (x->sessions_per_caller)
                c->max_sessions_disk_mb_per_caller = x->sessions_per_caller;
        return c;
}

/* Defaults: 8 slots, 256 queue places of which 16 for admins, per-caller budgets as the global ones. */
static const Row execution_rows[] = {
        { "nothing held: admitted", {}, {}, NULL, NULL },
        { "a free slot: admitted whatever the queue", {}, { .queued = 1000, .running = 7, .caller_queued = 1000 },
          NULL, NULL },
        { "global queue full, no slot", {}, { .admin = true, .queued = 256, .running = 8 }, "queue_full", NULL },
        { "admin may use the reserve", {}, { .admin = true, .queued = 245, .running = 8 }, NULL, NULL },
        { "others stop at MaxQueued - AdminQueueReserve", {}, { .queued = 240, .running = 8 }, "queue_full", NULL },
        { "others below it", {}, { .queued = 239, .running = 8, .caller_queued = 239 }, NULL, NULL },
        { "a reserve above MaxQueued leaves others no queue", { .max_queued = 4, .reserve = 10 },
          { .queued = 0, .running = 8 }, "queue_full", NULL },
        { "... and admins all of it", { .max_queued = 4, .reserve = 10 }, { .admin = true, .queued = 3, .running = 8 },
          NULL, NULL },
        { "per-caller queue cap", { .queued_per_caller = 5 }, { .queued = 5, .running = 8, .caller_queued = 5 },
          "caller_queue_full", NULL },
        { "per-caller queue cap applies to admins too", { .queued_per_caller = 5 },
          { .admin = true, .queued = 5, .running = 8, .caller_queued = 5 }, "caller_queue_full", NULL },
        { "per-caller queue cap: another caller passes", { .queued_per_caller = 5 },
          { .queued = 5, .running = 8, .caller_queued = 0 }, NULL, NULL },
        { "both full: the global one is named (what a caller saw before per-caller caps)",
          { .queued_per_caller = 5 }, { .queued = 300, .running = 8, .caller_queued = 5 }, "queue_full", NULL },
        { "one caller filled the queue with the default cap: queue_full", {},
          { .admin = true, .queued = 256, .running = 8, .caller_queued = 256 }, "queue_full", NULL },
        { "a per-caller cap above MaxQueued is MaxQueued", { .max_queued = 10, .queued_per_caller = 50 },
          { .admin = true, .queued = 9, .running = 8, .caller_queued = 10 }, "caller_queue_full", NULL },
        { "at the running cap a free slot is no help: it queues", { .running_per_caller = 2, .queued_per_caller = 3 },
          { .queued = 3, .running = 2, .caller_queued = 3, .caller_running = 2 }, "caller_queue_full", NULL },
        { "below the running cap the free slot takes it", { .running_per_caller = 2, .queued_per_caller = 3 },
          { .queued = 3, .running = 1, .caller_queued = 3, .caller_running = 1 }, NULL, NULL },
        { "callbacks below the cap", { .callbacks = 3 }, { .callback = true, .caller_callbacks = 2 }, NULL, NULL },
        { "callbacks at the cap", { .callbacks = 3 }, { .callback = true, .caller_callbacks = 3 },
          "too_many_callbacks", "callback_url" },
        { "callbacks at the cap, this one asks for none", { .callbacks = 3 }, { .caller_callbacks = 3 }, NULL, NULL },
        { "stored bytes below the quota", { .stored = 1 << 20 }, { .caller_stored_bytes = (1 << 20) - 1 }, NULL, NULL },
        { "stored bytes at the quota", { .stored = 1 << 20 }, { .caller_stored_bytes = 1 << 20 },
          "storage_quota_exceeded", NULL },
        { "the storage quota is named first", { .stored = 1 << 20, .queued_per_caller = 1, .callbacks = 1 },
          { .queued = 1, .running = 8, .caller_queued = 1, .callback = true, .caller_callbacks = 1,
            .caller_stored_bytes = 1 << 20 }, "storage_quota_exceeded", NULL },
};

static const Row session_rows[] = {
        { "fits both", { .sessions_total = 4096, .sessions_per_caller = 2048 },
          { .new_session_disk_mb = 1024, .sessions_disk_mb = 3072, .caller_sessions_disk_mb = 1024 }, NULL, NULL },
        { "the caller's budget", { .sessions_total = 4096, .sessions_per_caller = 2048 },
          { .new_session_disk_mb = 1024, .sessions_disk_mb = 1025, .caller_sessions_disk_mb = 1025 },
          "session_disk_quota_exceeded", "limits.disk_mb" },
        { "everyone's budget", { .sessions_total = 4096, .sessions_per_caller = 2048 },
          { .new_session_disk_mb = 1024, .sessions_disk_mb = 3073, .caller_sessions_disk_mb = 0 },
          "session_disk_full", "limits.disk_mb" },
        { "exactly full is still in", { .sessions_total = 4096, .sessions_per_caller = 4096 },
          { .new_session_disk_mb = 16, .sessions_disk_mb = 4080, .caller_sessions_disk_mb = 4080 }, NULL, NULL },
        { "a per-caller budget above the total is the total", { .sessions_total = 100, .sessions_per_caller = 1000 },
          { .new_session_disk_mb = 101 }, "session_disk_quota_exceeded", "limits.disk_mb" },
        { "from physical memory (8 GiB: 4096 MB in all, 2048 per caller)", {},
          { .new_session_disk_mb = 1024, .caller_sessions_disk_mb = 1025 }, "session_disk_quota_exceeded",
          "limits.disk_mb" },
        { "from physical memory, within", {}, { .new_session_disk_mb = 1024, .caller_sessions_disk_mb = 1024,
          .sessions_disk_mb = 3072 }, NULL, NULL },
        { "from physical memory, the total", {}, { .new_session_disk_mb = 1024, .sessions_disk_mb = 3073 },
          "session_disk_full", "limits.disk_mb" },
};

static void check(const Row *row, int r, const RequestError *err) {
        if (!row->code) {
                if (r != 0) {
                        print_error("row '%s': refused with %s: %s\n", row->name, api_error_code(err->error),
                                    err->message);
                        fail();
                }
                return;
        }
        if (r >= 0 || !streq(api_error_code(err->error), row->code) || api_error_http_status(err->error) != 429 ||
            !streq(err->field, row->field ?: "")) {
                print_error("row '%s': got %d %s '%s' field '%s', want 429 %s field '%s'\n", row->name, r,
                            r < 0 ? api_error_code(err->error) : "-", r < 0 ? err->message : "",
                            r < 0 ? err->field : "", row->code, strna(row->field));
                fail();
        }
        assert_true(strlen(err->message) > 0);
}

static void test_execution_rows(_unused_ void **state) {
        for (size_t i = 0; i < ELEMENTSOF(execution_rows); i++) {
                _cleanup_(config_freep) Config *c = config_for(&execution_rows[i].cfg);
                RequestError err = {};

                check(&execution_rows[i], quota_check_execution(c, &execution_rows[i].u, &err), &err);
        }
}

static void test_session_rows(_unused_ void **state) {
        for (size_t i = 0; i < ELEMENTSOF(session_rows); i++) {
                _cleanup_(config_freep) Config *c = config_for(&session_rows[i].cfg);
                RequestError err = {};

                check(&session_rows[i], quota_check_session(c, 8 * GiB, &session_rows[i].u, &err), &err);
        }
}

static void test_values_in_force(_unused_ void **state) {
        _cleanup_(config_freep) Config *c = config_new();

        assert_non_null(c);
        /* Unset per-caller keys follow the global ones, also after those change. */
        assert_int_equal(quota_max_queued_per_caller(c), 256);
        assert_int_equal(quota_max_running_per_caller(c), 8);
        c->max_queued = 2;
        c->max_concurrent = 20;
        assert_int_equal(quota_max_queued_per_caller(c), 2);
        assert_int_equal(quota_max_running_per_caller(c), 20);
        c->max_queued_per_caller = 0;
        c->max_running_per_caller = 3;
        assert_int_equal(quota_max_queued_per_caller(c), 0);
        assert_int_equal(quota_max_running_per_caller(c), 3);
        assert_int_equal(quota_queue_limit(c, true), 2);
        assert_int_equal(quota_queue_limit(c, false), 0);
        c->max_queued = 256;
        assert_int_equal(quota_queue_limit(c, false), 240);

        /* Session budgets from the host's memory: half of it, a quarter of it per caller. */
        assert_int_equal(quota_sessions_disk_mb(c, 8 * GiB), 4096);
        assert_int_equal(quota_sessions_disk_mb_per_caller(c, 8 * GiB), 2048);
        assert_int_equal(quota_sessions_disk_mb(c, 24105ULL * 1024 * 1024), 12052);
        assert_int_equal(quota_sessions_disk_mb_per_caller(c, 2 * GiB), 512);
        /* Unknown memory: no budget unless one is configured. */
        assert_int_equal(quota_sessions_disk_mb(c, 0), UINT64_MAX);
        c->max_sessions_disk_mb = 1000;
        assert_int_equal(quota_sessions_disk_mb(c, 0), 1000);
        assert_int_equal(quota_sessions_disk_mb_per_caller(c, 0), 1000);
        assert_int_equal(quota_sessions_disk_mb_per_caller(c, 8 * GiB), 1000);
        c->max_sessions_disk_mb_per_caller = 10;
        assert_int_equal(quota_sessions_disk_mb_per_caller(c, 8 * GiB), 10);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_execution_rows),
                cmocka_unit_test(test_session_rows),
                cmocka_unit_test(test_values_in_force),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

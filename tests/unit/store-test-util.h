/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What test-store.c and test-store-artifacts.c share: a fresh directory per test, opening, records
   filled in every field, comparisons. Static: each test program compiles its own copy. */
#pragma GCC diagnostic ignored "-Wunused-function"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <sqlite3.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "store/store-internal.h"
#include "store/store.h"
#include "strv.h"
#include "util.h"

/* The store against real SQLite files in a fresh temporary directory per test: what the daemon
 * does at start (open, migrate, check), at every transition (put), for the API (get, list) and in
 * its sweep (purge), plus the failures an administrator can cause: a damaged file, a foreign file,
 * a newer schema, no permission, a full disk. */

#define BASE_USEC UINT64_C(1764472800000000)   /* 2025-11-30T03:20:00Z */
#define NOBODY 65534

static char tmpdir[64];
static char dbpath[128];

static int rm_one(const char *path, _unused_ const struct stat *st, _unused_ int flag, _unused_ struct FTW *f) {
        (void) remove(path);
        return 0;
}

static int setup_dir(_unused_ void **state) {
        strcpy(tmpdir, "/tmp/test-store-XXXXXX");
        if (!mkdtemp(tmpdir))
                return -1;
        /* The permission tests run as nobody below here. */
        if (chmod(tmpdir, 0755) < 0)
                return -1;
        (void) snprintf(dbpath, sizeof(dbpath), "%s/sandboxd.db", tmpdir);
        return 0;
}

static int teardown_dir(_unused_ void **state) {
        (void) chmod(tmpdir, 0755);
        (void) nftw(tmpdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
        return 0;
}

static Store *open_ok(void) {
        _cleanup_free_ char *error = NULL;
        Store *s = NULL;
        int r;

        r = store_open_sqlite(dbpath, &s, &error);
        if (r < 0) {
                print_error("store_open_sqlite(%s): %d %s\n", dbpath, r, strna(error));
                fail();
        }
        assert_null(error);
        assert_non_null(s);
        return s;
}

/* Open must fail with r and a message containing each of the given substrings. */
static void open_fails(int want, const char *sub1, const char *sub2) {
        _cleanup_free_ char *error = NULL;
        Store *s = NULL;
        int r;

        r = store_open_sqlite(dbpath, &s, &error);
        if (r != want || !error || (sub1 && !strstr(error, sub1)) || (sub2 && !strstr(error, sub2))) {
                print_error("got %d '%s', want %d with '%s' and '%s'\n", r, strna(error), want, strna(sub1),
                            strna(sub2));
                store_close(s);
                fail();
        }
        assert_null(s);
        /* Every message names the file. */
        assert_non_null(strstr(error, dbpath));
        fprintf(stderr, "# %s\n", error);
}

static char *strf(const char *fmt, ...) _printf_(1, 2);
static char *strf(const char *fmt, ...) {
        va_list ap;
        char *s = NULL;
        int k;

        va_start(ap, fmt);
        k = vasprintf(&s, fmt, ap);
        va_end(ap);
        assert_true(k >= 0);
        return s;
}

/* A finished, failed execution with every field set to something distinct. */
static StoreRecord *record_full(const char *id) {
        StoreRecord *r = store_record_new(id);
        Execution *e;

        assert_non_null(r);
        e = r->exec;
        e->session_id = strdup("sess_1");
        e->client_id = strdup("job-1");
        assert_non_null(e->client_id);
        e->environment = strdup("python-data");
        assert_non_null(e->environment);
        e->summary = strdup("The program exited with code 3.\nexit code: 3\n");
        assert_non_null(e->summary);
        e->isolation = strdup("{\"tier\":\"strong\",\"reasons\":[\"processes: subprocess\"]}");
        assert_non_null(e->isolation);
        e->language = "python";
        e->status = EXEC_FAILED;
        e->error_type = ERROR_RUNTIME;
        e->exit_code = 3;
        e->signal = 9;
        e->out = (OutputStream) { strdup("hello\nwörld ✓\n"), 1234567, 89, true };
        e->err = (OutputStream) { strdup("Traceback ...\n"), 14, 1, false };
        e->duration_ms = 61;
        e->cpu_usec = 20345;
        e->have_cpu = true;
        e->peak_memory_bytes = 9856123;
        e->have_peak = true;
        e->created_usec = BASE_USEC + 1;
        e->started_usec = BASE_USEC + 2002;
        e->finished_usec = BASE_USEC + 63003;
        e->limits = (Limits) { 30000, 512, 1.25, 1024, 128 };
        e->unit = strf("sandboxd-%s.service", id);
        e->reason = "program exited with a non-zero status";
        e->error_message = strdup("files[0] 'data/x.csv': HTTP 404");
        assert_non_null(e->error_message);
        r->code = strdup("import sys\nprint('hello')\nsys.exit(3)\n");
        for (size_t i = 0; i < sizeof(r->fingerprint); i++)
                r->fingerprint[i] = (uint8_t) (i * 7 + 1);
        r->owner = strdup("uid:1000");
        r->workspace = strdup("/run/sandboxd/workspaces/pool_20261130_0011223344556677");
        r->request = strdup("{\"env\":[\"A=1\"],\"seed\":7}");
        assert_non_null(e->session_id);
        assert_non_null(r->code);
        return r;
}

static void assert_output_equal(const OutputStream *a, const OutputStream *b) {
        assert_true(streq_ptr(a->text, b->text));
        assert_int_equal(a->bytes, b->bytes);
        assert_int_equal(a->lines, b->lines);
        assert_int_equal(a->truncated, b->truncated);
}

static void assert_record_equal(const StoreRecord *a, const StoreRecord *b) {
        const Execution *x = a->exec, *y = b->exec;

        assert_string_equal(x->id, y->id);
        assert_true(streq_ptr(x->client_id, y->client_id));
        assert_true(streq_ptr(x->environment, y->environment));
        assert_true(streq_ptr(x->summary, y->summary));
        assert_true(streq_ptr(x->isolation, y->isolation));
        assert_true(streq_ptr(x->session_id, y->session_id));
        assert_string_equal(x->language, y->language);
        assert_int_equal(x->status, y->status);
        assert_int_equal(x->error_type, y->error_type);
        assert_int_equal(x->exit_code, y->exit_code);
        assert_int_equal(x->signal, y->signal);
        assert_output_equal(&x->out, &y->out);
        assert_output_equal(&x->err, &y->err);
        assert_int_equal(x->duration_ms, y->duration_ms);
        assert_int_equal(x->have_cpu, y->have_cpu);
        assert_int_equal(x->cpu_usec, y->cpu_usec);
        assert_int_equal(x->have_peak, y->have_peak);
        assert_int_equal(x->peak_memory_bytes, y->peak_memory_bytes);
        assert_int_equal(x->created_usec, y->created_usec);
        assert_int_equal(x->started_usec, y->started_usec);
        assert_int_equal(x->finished_usec, y->finished_usec);
        assert_int_equal(x->limits.timeout_ms, y->limits.timeout_ms);
        assert_int_equal(x->limits.memory_mb, y->limits.memory_mb);
        assert_true(x->limits.cpu_cores == y->limits.cpu_cores);
        assert_int_equal(x->limits.disk_mb, y->limits.disk_mb);
        assert_int_equal(x->limits.tasks, y->limits.tasks);
        assert_true(streq_ptr(x->unit, y->unit));
        assert_true(streq_ptr(x->reason, y->reason));
        assert_true(streq_ptr(x->error_message, y->error_message));
        assert_true(streq_ptr(a->code, b->code));
        assert_memory_equal(a->fingerprint, b->fingerprint, sizeof(a->fingerprint));
        assert_true(streq_ptr(a->owner, b->owner));
        assert_true(streq_ptr(a->workspace, b->workspace));
        assert_true(streq_ptr(a->request, b->request));
}

static void get_equal(Store *s, const StoreRecord *want) {
        _cleanup_(store_record_freep) StoreRecord *got = NULL;

        assert_int_equal(store_get(s, want->exec->id, &got), 0);
        assert_non_null(got);
        assert_record_equal(want, got);
}

static uint64_t count(Store *s) {
        uint64_t n = UINT64_MAX;

        assert_int_equal(store_count(s, &n), 0);
        return n;
}

static void sql_exec_raw(const char *sql) {
        sqlite3 *db = NULL;

        assert_int_equal(sqlite3_open(dbpath, &db), SQLITE_OK);
        if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK) {
                print_error("%s: %s\n", sql, sqlite3_errmsg(db));
                fail();
        }
        sqlite3_close(db);
}

static StoreCallback *callback_new(const char *id, uint64_t due) {
        StoreCallback *c = calloc(1, sizeof(StoreCallback));

        assert_non_null(c);
        c->execution_id = strdup(id);
        c->url = strdup("https://hooks.example.com/done?x=1");
        c->delivery_id = strf("dlv_%s", id);
        c->state = CALLBACK_PENDING;
        c->next_attempt_usec = due;
        c->created_usec = BASE_USEC + 5;
        c->body = strf("{\"execution_id\":\"%s\",\"stdout\":\"w\u00f6rld\"}", id);
        assert_non_null(c->execution_id);
        assert_non_null(c->url);
        assert_non_null(c->body);
        return c;
}

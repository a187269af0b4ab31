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
#include <libpq-fe.h>
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
 * a newer schema, no permission, a full disk.
 *
 * With SANDBOXD_TEST_PG set (a libpq key=value connection string to a server's maintenance
 * database, as tests/pg/pg-scratch exports it), the same tests run against the PostgreSQL store
 * instead, each in a database of its own made by setup_dir() and dropped by teardown_dir(); the
 * tests of what only a file can suffer (sqlite_only()) are skipped there. */

#define BASE_USEC UINT64_C(1764472800000000)   /* 2025-11-30T03:20:00Z */
#define NOBODY 65534

static char tmpdir[64];
static char dbpath[128];                /* SQLite: the file; PostgreSQL: the database's name */

static const char *pg_conninfo;         /* SANDBOXD_TEST_PG: NULL runs the tests against SQLite */
static char pg_dbconn[1024];            /* the test's own database */
static unsigned pg_n_databases;

static bool is_pg(void) {
        return pg_conninfo != NULL;
}

/* Run the group: against PostgreSQL without the tests named in sqlite_only (what only a file can
 * suffer: damage, permissions, a full disk), against SQLite without those in pg_only; they are
 * named in a comment rather than reported "not ok # SKIP", which meson counts as failed. */
static int run_store_tests(const char *group, struct CMUnitTest *tests, size_t n, const char *const *sqlite_only,
                           const char *const *pg_only) {
        const char *conninfo = getenv("SANDBOXD_TEST_PG");
        bool pg = !isempty(conninfo);
        size_t k = 0;

        for (size_t i = 0; i < n; i++) {
                bool skip_it = false;

                for (const char *const *o = pg ? sqlite_only : pg_only; o && *o; o++)
                        if (streq(tests[i].name, *o))
                                skip_it = true;
                if (skip_it)
                        fprintf(stderr, "# %s: not run against %s\n", tests[i].name, pg ? "PostgreSQL" : "SQLite");
                else
                        tests[k++] = tests[i];
        }
        return _cmocka_run_group_tests(group, tests, k, NULL, NULL);
}

/* Run sql (several statements, no parameters: the tests' own text) in the database conninfo names;
 * 0 or -1, the server's message printed. */
static void pg_notice_ignore(_unused_ void *userdata, _unused_ const char *message) {
}

static int pg_exec_in(const char *conninfo, const char *sql) {
        PGconn *c = PQconnectdb(conninfo);
        PGresult *res = NULL;
        int r = -1;

        if (PQstatus(c) != CONNECTION_OK)
                print_error("connecting to the test server: %s", PQerrorMessage(c));
        else {
                (void) PQsetNoticeProcessor(c, pg_notice_ignore, NULL);   /* "does not exist, skipping" */
                res = PQexec(c, sql);
                if (PQresultStatus(res) == PGRES_COMMAND_OK || PQresultStatus(res) == PGRES_TUPLES_OK)
                        r = 0;
                else
                        print_error("%s: %s", sql, PQresultErrorMessage(res));
        }
        PQclear(res);
        PQfinish(c);
        return r;
}

/* A fresh database per test: no test sees what another left. */
static int setup_pg(void) {
        _cleanup_free_ char *sql = NULL;

        (void) snprintf(dbpath, sizeof(dbpath), "sandboxd_test_%u_%u", (unsigned) getpid(), ++pg_n_databases);
        (void) snprintf(pg_dbconn, sizeof(pg_dbconn), "%s dbname=%s", pg_conninfo, dbpath);
        if (asprintf(&sql, "DROP DATABASE IF EXISTS %s; CREATE DATABASE %s", dbpath, dbpath) < 0)
                return -1;
        /* DROP and CREATE DATABASE cannot run in one multi-statement string (an implicit transaction). */
        *strchr(sql, ';') = 0;
        if (pg_exec_in(pg_conninfo, sql) < 0)
                return -1;
        return pg_exec_in(pg_conninfo, sql + strlen(sql) + 2);
}

static int teardown_pg(void) {
        _cleanup_free_ char *sql = NULL;

        if (asprintf(&sql, "DROP DATABASE IF EXISTS %s WITH (FORCE)", dbpath) < 0)
                return -1;
        return pg_exec_in(pg_conninfo, sql);
}

static int rm_one(const char *path, _unused_ const struct stat *st, _unused_ int flag, _unused_ struct FTW *f) {
        (void) remove(path);
        return 0;
}

static int setup_dir(_unused_ void **state) {
        pg_conninfo = getenv("SANDBOXD_TEST_PG");
        if (isempty(pg_conninfo))
                pg_conninfo = NULL;
        if (is_pg())
                return setup_pg();
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
        if (is_pg())
                return teardown_pg();
        (void) chmod(tmpdir, 0755);
        (void) nftw(tmpdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
        return 0;
}

/* The store of this test, in the backend the tests run against. */
static int store_open_test(Store **ret, char **ret_error) {
        return is_pg() ? store_open_pg(pg_dbconn, ret, ret_error) : store_open_sqlite(dbpath, ret, ret_error);
}

static Store *open_ok(void) {
        _cleanup_free_ char *error = NULL;
        Store *s = NULL;
        int r;

        r = store_open_test(&s, &error);
        if (r < 0) {
                print_error("store_open(%s): %d %s\n", dbpath, r, strna(error));
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

        r = store_open_test(&s, &error);
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

/* Change the database behind the store's back: sql for SQLite, pg_sql for PostgreSQL. */
static void sql_exec_raw2(const char *sql, const char *pg_sql) {
        sqlite3 *db = NULL;

        if (is_pg()) {
                assert_non_null(pg_sql);
                assert_int_equal(pg_exec_in(pg_dbconn, pg_sql), 0);
                return;
        }

        assert_int_equal(sqlite3_open(dbpath, &db), SQLITE_OK);
        if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK) {
                print_error("%s: %s\n", sql, sqlite3_errmsg(db));
                fail();
        }
        sqlite3_close(db);
}

/* SQL both backends understand alike. */
static void sql_exec_raw(const char *sql) {
        sql_exec_raw2(sql, sql);
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

/* Taking a PostgreSQL store back to an older schema version, for the migration tests: what
 * migrations 8 and 9 to 18 made, undone (store-pg-schema.c). */
#define PG_DROP_TRIGGER_FUNCTIONS                                                                       \
        "DROP FUNCTION sandboxd_record_usage_insert, sandboxd_record_usage_update, "                     \
        "sandboxd_record_usage_delete, sandboxd_record_usage_callback_insert, "                         \
        "sandboxd_record_usage_callback_state, sandboxd_artifacts_charge, sandboxd_artifacts_refund, "   \
        "sandboxd_artifact_blobs_charge, sandboxd_artifact_blobs_refund, sandboxd_artifacts_immutable "  \
        "CASCADE; "
#define PG_UNDO_9_TO_18                                                                                 \
        "ALTER TABLE sessions DROP COLUMN node; "                                                       \
        "DROP TABLE nodes; "                                                                            \
        "ALTER TABLE executions DROP COLUMN node, DROP COLUMN node_epoch, DROP COLUMN attempt; "       \
        "DROP TABLE artifact_usage, artifact_blobs, artifact_store_usage; "                             \
        "ALTER TABLE artifacts DROP COLUMN charged_bytes, DROP COLUMN owner; "                          \
        "ALTER TABLE executions DROP COLUMN client_id, DROP COLUMN start, DROP COLUMN network, "        \
        "DROP COLUMN environment, DROP COLUMN summary, DROP COLUMN isolation; "                         \
        "ALTER TABLE sessions DROP COLUMN client_id; "
#define PG_UNDO_8 "DROP FUNCTION sandboxd_record_usage_add, sandboxd_record_bytes; DROP TABLE record_usage; "

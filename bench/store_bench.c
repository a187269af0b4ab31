/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* store-bench: the execution store with 10,000 realistic records, timed. Not a test (timings
 * depend on the machine); run it by hand:
 *
 *     build/bench/store-bench [RECORDS] [REPEAT]
 *
 * It fills a database in a fresh temporary directory (removed afterwards) the way the daemon does,
 * one store_put() per transition of each execution (queued, running, final), reopens it as at a
 * restart, and times the queries the API makes. Records: 5 sessions, 10% failures, stdout 1-4 KiB,
 * stderr up to 1 KiB (a traceback on failures), 200-700 bytes of code. Output: one table on stdout. */

#include <ftw.h>
#include <sqlite3.h>
#include <time.h>

#include "store/store-internal.h"
#include "store/store.h"
#include "util.h"

#define BASE_USEC UINT64_C(1764472800000000)

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

/* xorshift64*: the same database on every run. */
static uint64_t rnd(void) {
        rng_state ^= rng_state >> 12;
        rng_state ^= rng_state << 25;
        rng_state ^= rng_state >> 27;
        return rng_state * 0x2545f4914f6cdd1dULL;
}

static uint64_t rnd_range(uint64_t lo, uint64_t hi) {
        return lo + rnd() % (hi - lo + 1);
}

/* Printable lines of 20-100 characters, n bytes in all. */
static char *text(size_t n) {
        char *s = malloc(n + 1);
        size_t line = 0;

        if (!s)
                abort();
        for (size_t i = 0; i < n; i++) {
                if (line > 20 && rnd() % 60 == 0) {
                        s[i] = '\n';
                        line = 0;
                } else {
                        s[i] = (char) ('a' + rnd() % 26);
                        line++;
                }
        }
        s[n] = 0;
        return s;
}

static uint64_t lines_of(const char *s) {
        uint64_t n = 0;

        for (; *s; s++)
                n += *s == '\n';
        return n + 1;
}

static double ms_since(uint64_t t0) {
        return (double) (now_usec(CLOCK_MONOTONIC) - t0) / 1000.0;
}

static int cmp_double(const void *a, const void *b) {
        double x = *(const double *) a, y = *(const double *) b;
        return x < y ? -1 : x > y;
}

static void row(const char *what, double *t, size_t n, size_t rows) {
        qsort(t, n, sizeof(double), cmp_double);
        printf("%-44s %6zu %10.3f %10.3f %10.3f %8zu\n", what, n, t[n / 2], t[(n * 95) / 100 < n ? (n * 95) / 100 : n - 1],
               t[n - 1], rows);
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *f) {
        (void) remove(path);
        return 0;
}

typedef struct Timed {
        const char *name;
        StoreQuery q;
        bool second_page;
} Timed;

int main(int argc, char *argv[]) {
        char dir[] = "/tmp/store-bench-XXXXXX";
        _cleanup_free_ char *path = NULL, *error = NULL, *probe_id = NULL;
        _cleanup_free_ double *t = NULL;
        Store *s = NULL;
        uint64_t n_records = 10000, repeat = 200, t0, total = 0;
        double fill_ms, put_total_ms = 0;
        size_t n_puts = 0;
        struct stat st;
        int r;

        if (argc > 1 && safe_atou64(argv[1], &n_records) < 0)
                return EXIT_FAILURE;
        if (argc > 2 && (safe_atou64(argv[2], &repeat) < 0 || repeat == 0))
                return EXIT_FAILURE;
        t = calloc(repeat, sizeof(double));
        if (!t || !mkdtemp(dir) || asprintf(&path, "%s/sandboxd.db", dir) < 0)
                return EXIT_FAILURE;

        r = store_open_sqlite(path, &s, &error);
        if (r < 0) {
                fprintf(stderr, "%s\n", strna(error));
                return EXIT_FAILURE;
        }

        /* ---- fill: three puts per execution, as the job does ---- */
        t0 = now_usec(CLOCK_MONOTONIC);
        for (uint64_t i = 0; i < n_records; i++) {
                _cleanup_(store_record_freep) StoreRecord *rec = NULL;
                char id[64];
                Execution *e;
                bool failed = rnd() % 10 == 0;
                uint64_t t1;

                (void) snprintf(id, sizeof(id), "exec_20251130_%016" PRIx64, rnd());
                rec = store_record_new(id);
                if (!rec)
                        return EXIT_FAILURE;
                e = rec->exec;
                if (i == n_records / 2)
                        probe_id = strdup(id);
                e->session_id = strdup((const char *[]) { "sess_a", "sess_b", "sess_c", "sess_d", "sess_e" }[i % 5]);
                e->language = (const char *[]) { "python", "node", "bash" }[rnd() % 3];
                e->created_usec = BASE_USEC + i * 1000000 + rnd_range(0, 999);
                e->limits = (Limits) { 30000, 512, 1.0, 1024, 128 };
                e->unit = NULL;
                rec->code = text(rnd_range(200, 700));
                rec->owner = strdup(i % 3 == 0 ? "key:ci" : "uid:0");
                for (size_t k = 0; k < sizeof(rec->fingerprint); k++)
                        rec->fingerprint[k] = (uint8_t) rnd();

                t1 = now_usec(CLOCK_MONOTONIC);
                if (store_put(s, rec) < 0)
                        goto fail;
                put_total_ms += ms_since(t1);

                e->status = EXEC_RUNNING;
                e->started_usec = e->created_usec + rnd_range(500, 5000);
                e->unit = malloc(strlen(id) + 32);
                (void) sprintf(e->unit, "sandboxd-%s.service", id);
                t1 = now_usec(CLOCK_MONOTONIC);
                if (store_put(s, rec) < 0)
                        goto fail;
                put_total_ms += ms_since(t1);

                e->duration_ms = rnd_range(15, 5000);
                e->finished_usec = e->started_usec + e->duration_ms * 1000;
                e->status = failed ? EXEC_FAILED : EXEC_SUCCESS;
                e->error_type = failed ? (ErrorType) rnd_range(ERROR_COMPILE, ERROR_INTERNAL) : ERROR_NONE;
                e->exit_code = failed ? 1 : 0;
                e->reason = failed ? "program exited with a non-zero status" : "program exited with status 0";
                e->out.text = text(rnd_range(1024, 4096));
                e->out.bytes = strlen(e->out.text);
                e->out.lines = lines_of(e->out.text);
                e->err.text = text(failed ? rnd_range(300, 1024) : rnd_range(0, 64));
                e->err.bytes = strlen(e->err.text);
                e->err.lines = lines_of(e->err.text);
                e->cpu_usec = e->duration_ms * 800;
                e->have_cpu = true;
                e->peak_memory_bytes = rnd_range(8, 200) << 20;
                e->have_peak = true;
                free(rec->code);   /* the job has dropped it: the stored copy stays */
                rec->code = NULL;
                t1 = now_usec(CLOCK_MONOTONIC);
                if (store_put(s, rec) < 0)
                        goto fail;
                put_total_ms += ms_since(t1);
                n_puts += 3;
        }
        fill_ms = ms_since(t0);
        s = store_close(s);

        if (stat(path, &st) < 0)
                return EXIT_FAILURE;
        printf("store-bench: %" PRIu64 " records (%" PRIu64 " puts), SQLite %s, %s, %.1f MiB on disk\n", n_records,
               (uint64_t) n_puts, sqlite3_libversion(), path, (double) st.st_size / (1024.0 * 1024.0));
        printf("fill: %.0f ms in all, %.3f ms per store_put() on average\n\n", fill_ms, put_total_ms / (double) n_puts);
        printf("%-44s %6s %10s %10s %10s %8s\n", "operation", "n", "median ms", "p95 ms", "max ms", "rows");

        /* ---- open, as at start: whole store_open_sqlite(), and quick_check alone ---- */
        for (uint64_t k = 0; k < MIN(repeat, (uint64_t) 20); k++) {
                t0 = now_usec(CLOCK_MONOTONIC);
                r = store_open_sqlite(path, &s, &error);
                t[k] = ms_since(t0);
                if (r < 0) {
                        fprintf(stderr, "%s\n", strna(error));
                        return EXIT_FAILURE;
                }
                s = store_close(s);
        }
        row("store_open_sqlite() (incl. quick_check)", t, MIN(repeat, (uint64_t) 20), 0);

        for (uint64_t k = 0; k < MIN(repeat, (uint64_t) 20); k++) {
                sqlite3 *db = NULL;

                if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
                        return EXIT_FAILURE;
                t0 = now_usec(CLOCK_MONOTONIC);
                if (sqlite3_exec(db, "PRAGMA quick_check", NULL, NULL, NULL) != SQLITE_OK)
                        return EXIT_FAILURE;
                t[k] = ms_since(t0);
                sqlite3_close(db);
        }
        row("PRAGMA quick_check alone", t, MIN(repeat, (uint64_t) 20), 0);

        r = store_open_sqlite(path, &s, &error);
        if (r < 0)
                return EXIT_FAILURE;

        /* ---- queries ---- */
        const Timed timed[] = {
                { "list session_id=sess_c, limit 50",
                  { .session_id = "sess_c", .status = -1, .error_type = -1, .limit = 50 } },
                { "list session_id=sess_c, limit 50, page 2",
                  { .session_id = "sess_c", .status = -1, .error_type = -1, .limit = 50 }, true },
                { "list failed=true, limit 50",
                  { .failed = true, .status = -1, .error_type = -1, .limit = 50 } },
                { "list error_type=oom, limit 50",
                  { .status = -1, .error_type = ERROR_OOM, .limit = 50 } },
                { "list order=duration_ms (slowest), limit 50",
                  { .status = -1, .error_type = -1, .order = STORE_ORDER_DURATION_MS, .limit = 50 } },
                { "list order=duration_ms, limit 50, page 2",
                  { .status = -1, .error_type = -1, .order = STORE_ORDER_DURATION_MS, .limit = 50 }, true },
                { "list failed, order=duration_ms, limit 50",
                  { .failed = true, .status = -1, .error_type = -1, .order = STORE_ORDER_DURATION_MS, .limit = 50 } },
                { "list owner=key:ci session=sess_a, limit 50",
                  { .owner = "key:ci", .session_id = "sess_a", .status = -1, .error_type = -1, .limit = 50 } },
                { "list everything, limit 1000",
                  { .status = -1, .error_type = -1, .limit = 1000 } },
        };

        for (size_t i = 0; i < ELEMENTSOF(timed); i++) {
                StoreQuery q = timed[i].q;
                _cleanup_free_ char *cursor = NULL;
                size_t rows = 0;

                if (timed[i].second_page) {
                        StoreRecord **l = NULL;
                        size_t n = 0;

                        if (store_list(s, &q, &l, &n, &cursor) < 0)
                                goto fail;
                        store_records_free(l, n);
                        q.cursor = cursor;
                }
                for (uint64_t k = 0; k < repeat; k++) {
                        StoreRecord **l = NULL;
                        size_t n = 0;
                        char *next = NULL;

                        t0 = now_usec(CLOCK_MONOTONIC);
                        if (store_list(s, &q, &l, &n, &next) < 0)
                                goto fail;
                        t[k] = ms_since(t0);
                        store_records_free(l, n);
                        free(next);
                        rows = n;
                }
                row(timed[i].name, t, repeat, rows);
        }

        for (uint64_t k = 0; k < repeat; k++) {
                _cleanup_(store_record_freep) StoreRecord *rec = NULL;

                t0 = now_usec(CLOCK_MONOTONIC);
                if (store_get(s, probe_id, &rec) < 0)
                        goto fail;
                t[k] = ms_since(t0);
        }
        row("get by execution_id", t, repeat, 1);

        for (uint64_t k = 0; k < repeat; k++) {
                t0 = now_usec(CLOCK_MONOTONIC);
                if (store_count(s, &total) < 0)
                        goto fail;
                t[k] = ms_since(t0);
        }
        row("count", t, repeat, 1);

        for (uint64_t k = 0; k < MIN(repeat, (uint64_t) 20); k++) {
                StoreRecord **l = NULL;
                size_t n = 0;

                t0 = now_usec(CLOCK_MONOTONIC);
                if (store_list_unfinished(s, &l, &n) < 0)
                        goto fail;
                t[k] = ms_since(t0);
                store_records_free(l, n);
        }
        row("list_unfinished (none)", t, MIN(repeat, (uint64_t) 20), 0);

        {
                uint64_t purged = 0;

                /* The oldest tenth, as a retention sweep would. */
                t0 = now_usec(CLOCK_MONOTONIC);
                if (store_purge(s, BASE_USEC + n_records / 10 * 1000000, &purged) < 0)
                        goto fail;
                t[0] = ms_since(t0);
                row("purge oldest 10%", t, 1, (size_t) purged);
        }

        s = store_close(s);
        (void) nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
        return EXIT_SUCCESS;

fail:
        fprintf(stderr, "store-bench: %s\n", store_error_message(s));
        store_close(s);
        (void) nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
        return EXIT_FAILURE;
}

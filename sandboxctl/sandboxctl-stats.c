/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* stats [--window=SPAN] */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sandboxctl.h"
#include "sandboxctl-execution.h"
#include "sandboxctl-json.h"
#include "sandboxctl-list.h"
#include "sandboxctl-stats.h"
#include "sandboxctl-util.h"

/* "stats" reads at most this many pages of 1000 executions: a million executions is a window far
 * wider than the statistics of one command should walk. It says so when it stops short. */
#define STATS_PAGES_MAX 1000

/* The error types of docs/http-api.md, in its order; anything newer is counted as "other". */
static const char *const stats_error_types[] = {
        "compile_error", "runtime_error", "timeout", "oom", "resource_limit", "internal_error", "input_error",
};
enum {
        STATS_QUEUED,
        STATS_RUNNING,
        STATS_SUCCESS,
        STATS_FAILED,
        STATS_CANCELLED,
        _STATS_STATUS_MAX,
};
static const char *const stats_statuses[_STATS_STATUS_MAX] = {
        [STATS_QUEUED] = "queued",
        [STATS_RUNNING] = "running",
        [STATS_SUCCESS] = "success",
        [STATS_FAILED] = "failed",
        [STATS_CANCELLED] = "cancelled",
};

typedef struct CtlStats {
        size_t executions, finished;
        size_t statuses[ELEMENTSOF(stats_statuses) + 1];        /* + other */
        size_t error_types[ELEMENTSOF(stats_error_types) + 1];  /* + other */
        double *durations, *peaks;                              /* ms, MiB */
        size_t n_durations, n_peaks;
        bool complete;           /* every page within the window was read */
} CtlStats;

static void stats_done(CtlStats *s) {
        free(s->durations);
        free(s->peaks);
}

static int compare_double(const void *a, const void *b) {
        double x = *(const double *) a, y = *(const double *) b;

        return x < y ? -1 : x > y;
}

/* Nearest rank: the smallest value with at least p% of the values at or below it. v is sorted. */
static double percentile(const double *v, size_t n, double p) {
        size_t rank = (size_t) ceil(p / 100.0 * (double) n);

        return v[rank == 0 ? 0 : MIN(rank, n) - 1];
}

static size_t table_index(const char *const *table, size_t n, const CtlString *s) {
        for (size_t i = 0; i < n; i++)
                if (streq_ptr(s->s, table[i]))
                        return i;
        return n;
}

static int stats_add(CtlStats *s, const CtlExecution *e) {
        size_t i = table_index(stats_statuses, ELEMENTSOF(stats_statuses), &e->status);

        s->executions++;
        s->statuses[i]++;
        if (!execution_is_final(e))
                return 0;
        s->finished++;
        if (e->error_type.s)
                s->error_types[table_index(stats_error_types, ELEMENTSOF(stats_error_types), &e->error_type)]++;
        /* The arrays grow with the count, which stats_collect() bounds. */
        if (e->duration_ms.set) {
                double *p = reallocarray(s->durations, s->n_durations + 1, sizeof(double));
                if (!p)
                        return -ENOMEM;
                s->durations = p;
                s->durations[s->n_durations++] = (double) e->duration_ms.value;
        }
        if (e->peak_memory_mb.set) {
                double *p = reallocarray(s->peaks, s->n_peaks + 1, sizeof(double));
                if (!p)
                        return -ENOMEM;
                s->peaks = p;
                s->peaks[s->n_peaks++] = e->peak_memory_mb.value;
        }
        return 0;
}

/* Read the executions created at or after since (µs), newest first, page by page: the listing is
 * ordered by created_at, so the first one older than the window ends it. Returns an exit status on
 * failure (logged), 0 on success. */
static int stats_collect(int64_t since, CtlStats *s) {
        _cleanup_free_ char *cursor = NULL;

        arg_limit = 1000;
        arg_limit_set = true;
        s->complete = true;
        for (unsigned pages = 0;; pages++) {
                _cleanup_(json_object_putp) json_object *page = NULL;
                json_object *list = NULL;
                const char *next = NULL;
                size_t n;
                int r;

                if (pages >= STATS_PAGES_MAX) {
                        (void) log_error_errno(-E2BIG, "Warning: stopped after %d pages (%zu executions); the "
                                               "statistics cover the newest of them only.", STATS_PAGES_MAX,
                                               s->executions);
                        s->complete = false;
                        return 0;
                }
                r = list_fetch_page(cursor, &page, &list, &next);
                if (r != 0)
                        return r;
                n = json_object_array_length(list);
                for (size_t i = 0; i < n; i++) {
                        CtlExecution e;
                        int64_t t;

                        r = execution_parse(json_object_array_get_idx(list, i), &e);
                        if (r < 0)
                                return exit_status_for(r, EX_UNAVAILABLE);
                        if (parse_timestamp(&e.created_at, &t) < 0) {
                                (void) log_error_errno(-EBADMSG, "Malformed answer from sandboxd: execution %s has "
                                                       "no valid created_at.", e.execution_id.s);
                                return EX_UNAVAILABLE;
                        }
                        if (t < since)
                                return 0;
                        if (stats_add(s, &e) < 0) {
                                (void) log_oom();
                                return EX_OSERR;
                        }
                }
                if (!next)
                        return 0;
                if (streq_ptr(next, cursor)) {
                        (void) log_error_errno(-EBADMSG, "Malformed answer from sandboxd: next_cursor does not advance.");
                        return EX_UNAVAILABLE;
                }
                free(cursor);
                cursor = strdup(next); /* next lives in page */
                if (!cursor) {
                        (void) log_oom();
                        return EX_OSERR;
                }
        }
}

/* A double with a fixed number of decimals, serialised as written (json-c would print %.17g). */
static json_object *json_fixed(double v, int decimals) {
        char buf[64];

        snprintf(buf, sizeof(buf), "%.*f", decimals, v);
        return json_object_new_double_s(v, buf);
}

static json_object *json_percentiles(const double *v, size_t n, const double *ps, const char *const *names,
                                     size_t n_ps, int decimals) {
        json_object *o = json_object_new_object();

        if (!o || json_add(o, "count", json_object_new_uint64(n)) < 0)
                goto fail;
        for (size_t i = 0; i < n_ps; i++)
                if (json_object_object_add(o, names[i], n > 0 ? json_fixed(percentile(v, n, ps[i]), decimals) : NULL) < 0)
                        goto fail;
        return o;
fail:
        json_object_put(o);
        return NULL;
}

static void format_utc(int64_t usec, char *buf, size_t size) {
        time_t t = (time_t) (usec / 1000000);
        struct tm tm;

        if (!gmtime_r(&t, &tm) || strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
                snprintf(buf, size, "-");
}

static void format_local(int64_t usec, char *buf, size_t size) {
        time_t t = (time_t) (usec / 1000000);
        struct tm tm;

        if (!localtime_r(&t, &tm) || strftime(buf, size, "%Y-%m-%d %H:%M:%S", &tm) == 0)
                snprintf(buf, size, "-");
}

static const double duration_ps[] = { 50, 95, 99 };
static const char *const duration_names[] = { "p50", "p95", "p99" };
static const double peak_ps[] = { 50, 95 };
static const char *const peak_names[] = { "p50", "p95" };

static int stats_print_json(const CtlStats *s, int64_t since, int64_t now) {
        _cleanup_(json_object_putp) json_object *o = json_object_new_object();
        json_object *statuses = json_object_new_object(), *errors = json_object_new_object();
        double minutes = (double) (now - since) / 60e6;
        char from[64], to[64];
        int r;

        format_utc(since, from, sizeof(from));
        format_utc(now, to, sizeof(to));
        if (!o || !statuses || !errors) {
                json_object_put(statuses);
                json_object_put(errors);
                return log_oom();
        }
        r = json_add(o, "window_seconds", json_object_new_int64((now - since) / 1000000));
        if (r >= 0)
                r = json_add(o, "from", json_object_new_string(from));
        if (r >= 0)
                r = json_add(o, "to", json_object_new_string(to));
        if (r >= 0)
                r = json_add(o, "executions", json_object_new_uint64(s->executions));
        if (r >= 0)
                r = json_add(o, "finished", json_object_new_uint64(s->finished));
        if (r >= 0)
                r = json_add(o, "rate_per_minute", json_fixed((double) s->executions / minutes, 3));
        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(stats_statuses); i++)
                r = json_add(statuses, stats_statuses[i], json_object_new_uint64(s->statuses[i]));
        if (r >= 0 && s->statuses[ELEMENTSOF(stats_statuses)] > 0)
                r = json_add(statuses, "other", json_object_new_uint64(s->statuses[ELEMENTSOF(stats_statuses)]));
        if (r >= 0)
                r = json_add(o, "statuses", TAKE_PTR(statuses));
        if (r >= 0)
                r = json_object_object_add(o, "success_rate",
                                           s->finished > 0 ? json_fixed((double) s->statuses[STATS_SUCCESS] / (double) s->finished, 4)
                                                           : NULL);
        if (r >= 0)
                r = json_add(o, "duration_ms", json_percentiles(s->durations, s->n_durations, duration_ps,
                                                                duration_names, ELEMENTSOF(duration_ps), 0));
        if (r >= 0)
                r = json_add(o, "peak_memory_mb", json_percentiles(s->peaks, s->n_peaks, peak_ps, peak_names,
                                                                   ELEMENTSOF(peak_ps), 1));
        /* Every error type, with its share of the finished executions; "other" only if it occurred. */
        for (size_t i = 0; r >= 0 && i <= ELEMENTSOF(stats_error_types); i++) {
                json_object *e;

                if (i == ELEMENTSOF(stats_error_types) && s->error_types[i] == 0)
                        break;
                e = json_object_new_object();
                r = e ? 0 : -ENOMEM;
                if (r >= 0)
                        r = json_add(e, "count", json_object_new_uint64(s->error_types[i]));
                if (r >= 0)
                        r = json_object_object_add(e, "share",
                                                   s->finished > 0 ? json_fixed((double) s->error_types[i] /
                                                                                        (double) s->finished, 4)
                                                                   : NULL);
                if (r >= 0)
                        r = json_add(errors, i < ELEMENTSOF(stats_error_types) ? stats_error_types[i] : "other",
                                     TAKE_PTR(e));
                json_object_put(e);
        }
        if (r >= 0)
                r = json_add(o, "error_types", TAKE_PTR(errors));
        if (r >= 0)
                r = json_add(o, "complete", json_object_new_boolean(s->complete));
        json_object_put(statuses);
        json_object_put(errors);
        if (r < 0)
                return log_oom();
        return print_json(o);
}

static int stats_print(const CtlStats *s, int64_t since, int64_t now) {
        double minutes = (double) (now - since) / 60e6;
        char from[64], to[64];
        bool any = false;

        format_local(since, from, sizeof(from));
        format_local(now, to, sizeof(to));
        printf("%12s: %s to %s%s\n", "Window", from, to, s->complete ? "" : " (incomplete: too many executions)");
        printf("%12s: %zu (%.2f/min), %zu finished, %zu running, %zu queued\n", "Executions", s->executions,
               (double) s->executions / minutes, s->finished, s->statuses[STATS_RUNNING], s->statuses[STATS_QUEUED]);
        if (s->finished > 0)
                printf("%12s: %.1f%% (%zu of %zu finished; %zu failed, %zu cancelled)\n", "Success", 100.0 *
                       (double) s->statuses[STATS_SUCCESS] / (double) s->finished, s->statuses[STATS_SUCCESS], s->finished, s->statuses[STATS_FAILED],
                       s->statuses[STATS_CANCELLED]);
        if (s->n_durations > 0)
                printf("%12s: p50 %.0fms, p95 %.0fms, p99 %.0fms (%zu executions)\n", "Duration",
                       percentile(s->durations, s->n_durations, 50), percentile(s->durations, s->n_durations, 95),
                       percentile(s->durations, s->n_durations, 99), s->n_durations);
        if (s->n_peaks > 0)
                printf("%12s: p50 %.1fM, p95 %.1fM (%zu executions)\n", "Peak memory",
                       percentile(s->peaks, s->n_peaks, 50), percentile(s->peaks, s->n_peaks, 95), s->n_peaks);
        for (size_t i = 0; i <= ELEMENTSOF(stats_error_types); i++) {
                if (s->error_types[i] == 0)
                        continue;
                printf(any ? ", " : "%12s: ", "Errors");
                printf("%s %zu (%.1f%%)", i < ELEMENTSOF(stats_error_types) ? stats_error_types[i] : "other",
                       s->error_types[i], 100.0 * (double) s->error_types[i] / (double) s->finished);
                any = true;
        }
        if (any)
                fputc('\n', stdout);
        return flush_stdout();
}

int verb_stats(char **args, size_t n_args) {
        _cleanup_(stats_done) CtlStats s = {};
        int64_t now = now_realtime_usec(), since = now - (int64_t) arg_window_usec;
        int r;

        r = stats_collect(since, &s);
        if (r != 0)
                return r;
        qsort(s.durations, s.n_durations, sizeof(double), compare_double);
        qsort(s.peaks, s.n_peaks, sizeof(double), compare_double);

        r = arg_json ? stats_print_json(&s, since, now) : stats_print(&s, since, now);
        return r < 0 ? exit_status_for(r, EX_OSERR) : EXIT_SUCCESS;
}

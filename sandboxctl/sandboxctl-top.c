/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* top [--once] [--interval=SECONDS] */

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sandboxctl.h"
#include "sandboxctl-http.h"
#include "sandboxctl-info.h"
#include "sandboxctl-json.h"
#include "sandboxctl-list.h"
#include "sandboxctl-table.h"
#include "sandboxctl-top.h"
#include "sandboxctl-util.h"

/* What GET /v1/executions says about a running execution. The API has no live memory or CPU
 * figures (those are read inside the unit, once, at its end), so the view shows the limits and the
 * age; see sandboxctl(1). */
typedef struct CtlTopRow {
        CtlString execution_id, unit, language, created_at, started_at;
        CtlInteger memory_mb, timeout_ms;
        int64_t age_usec;
} CtlTopRow;

static int top_row_parse(json_object *j, CtlTopRow *ret) {
        static const CtlField fields[] = {
                { "execution_id", FIELD_STRING, offsetof(CtlTopRow, execution_id), true },
                { "unit", FIELD_STRING, offsetof(CtlTopRow, unit), false },
                { "language", FIELD_STRING, offsetof(CtlTopRow, language), false },
                { "created_at", FIELD_STRING, offsetof(CtlTopRow, created_at), false },
                { "started_at", FIELD_STRING, offsetof(CtlTopRow, started_at), false },
        };
        static const CtlField limit_fields[] = {
                { "memory_mb", FIELD_INTEGER, offsetof(CtlTopRow, memory_mb), false },
                { "timeout_ms", FIELD_INTEGER, offsetof(CtlTopRow, timeout_ms), false },
        };
        json_object *limits = NULL;
        CtlTopRow row = {};
        int r;

        r = json_dispatch(j, "the execution", fields, ELEMENTSOF(fields), &row);
        if (r < 0)
                return r;
        if (json_object_object_get_ex(j, "limits", &limits) && limits) {
                r = json_dispatch(limits, "the execution's limits", limit_fields, ELEMENTSOF(limit_fields), &row);
                if (r < 0)
                        return r;
        }
        *ret = row;
        return 0;
}

static int top_row_compare(const void *a, const void *b) {
        const CtlTopRow *x = a, *y = b;

        /* Longest running first, as systemd-cgtop puts the heaviest first; then by ID, stably. */
        if (x->age_usec != y->age_usec)
                return x->age_usec > y->age_usec ? -1 : 1;
        return strcmp(x->execution_id.s, y->execution_id.s);
}

/* "850ms", "12.3s", "4m05s", "2h03m", "3d04h": the two leading units, like systemd's timespans. */
static char *cell_age(int64_t usec) {
        int64_t s;

        if (usec < 0)
                return strdup("-");
        if (usec < 1000000)
                return cell_printf("%" PRIi64 "ms", usec / 1000);
        if (usec < 60 * 1000000)
                return cell_printf("%" PRIi64 ".%" PRIi64 "s", usec / 1000000, usec / 100000 % 10);
        s = usec / 1000000;
        if (s < 3600)
                return cell_printf("%" PRIi64 "m%02" PRIi64 "s", s / 60, s % 60);
        if (s < 86400)
                return cell_printf("%" PRIi64 "h%02" PRIi64 "m", s / 3600, s / 60 % 60);
        return cell_printf("%" PRIi64 "d%02" PRIi64 "h", s / 86400, s / 3600 % 24);
}

enum {
        TOP_COLUMN_EXECUTION,
        TOP_COLUMN_UNIT,
        TOP_COLUMN_LANGUAGE,
        TOP_COLUMN_AGE,
        TOP_COLUMN_MEMORY,
        TOP_COLUMN_TIMEOUT,
        _TOP_COLUMN_MAX,
};

static int top_print_table(CtlTopRow *rows, size_t n) {
        static const CtlColumn columns[_TOP_COLUMN_MAX] = {
                [TOP_COLUMN_EXECUTION] = { "EXECUTION", false },
                [TOP_COLUMN_UNIT] = { "UNIT", false },
                [TOP_COLUMN_LANGUAGE] = { "LANGUAGE", false },
                [TOP_COLUMN_AGE] = { "AGE", true },
                [TOP_COLUMN_MEMORY] = { "MEMORY LIMIT", true },
                [TOP_COLUMN_TIMEOUT] = { "TIMEOUT", true },
        };
        _cleanup_(table_done) CtlTable t = {};
        int r;

        if (n == 0) {
                puts("No executions running.");
                return 0;
        }
        r = table_init(&t, columns, _TOP_COLUMN_MAX, n);
        if (r < 0)
                return r;

        for (size_t i = 0; i < n; i++) {
                const CtlTopRow *e = rows + i;
                char **row = table_row(&t, i);

                row[TOP_COLUMN_EXECUTION] = cell_string(&e->execution_id);
                row[TOP_COLUMN_UNIT] = cell_string(&e->unit);
                row[TOP_COLUMN_LANGUAGE] = cell_string(&e->language);
                row[TOP_COLUMN_AGE] = cell_age(e->age_usec);
                row[TOP_COLUMN_MEMORY] = e->memory_mb.set ? cell_printf("%" PRIi64 "M", e->memory_mb.value)
                                                          : strdup("-");
                row[TOP_COLUMN_TIMEOUT] = cell_duration(&e->timeout_ms);
        }

        return table_print(&t);
}

/* One snapshot: the daemon's load and its running executions. Returns an exit status on failure
 * (logged), 0 on success. */
static int top_frame(bool clear) {
        _cleanup_(json_object_putp) json_object *health = NULL, *page = NULL, *out = NULL;
        _cleanup_free_ CtlTopRow *rows = NULL;
        CtlHealth h;
        json_object *list = NULL;
        const char *next = NULL;
        int64_t now;
        size_t n;
        int r;

        r = health_fetch(&h, &health);
        if (r != 0)
                return r;

        /* One page of at most 1000: more than that cannot run at once on any sane MaxConcurrent=. */
        r = list_fetch_page(NULL, &page, &list, &next);
        if (r != 0)
                return r;
        now = now_realtime_usec();

        n = json_object_array_length(list);
        rows = calloc(MAX(n, (size_t) 1), sizeof(CtlTopRow));
        if (!rows) {
                (void) log_oom();
                return EX_OSERR;
        }
        for (size_t i = 0; i < n; i++) {
                int64_t t;

                r = top_row_parse(json_object_array_get_idx(list, i), rows + i);
                if (r < 0)
                        return exit_status_for(r, EX_UNAVAILABLE);
                rows[i].age_usec = parse_timestamp(&rows[i].started_at, &t) >= 0 ||
                                                   parse_timestamp(&rows[i].created_at, &t) >= 0
                                           ? MAX(now - t, (int64_t) 0)
                                           : -1;
        }
        qsort(rows, n, sizeof(CtlTopRow), top_row_compare);

        if (arg_json) {
                out = json_object_new_object();
                if (!out || json_add(out, "health", json_object_get(health)) < 0 ||
                    json_add(out, "executions", json_object_get(list)) < 0 ||
                    json_object_object_add(out, "next_cursor", next ? json_object_new_string(next) : NULL) < 0) {
                        (void) log_oom();
                        return EX_OSERR;
                }
                return print_json(out) < 0 ? EX_OSERR : 0;
        }

        if (clear)
                fputs("\033[H\033[2J", stdout);
        fputs("sandboxd ", stdout);
        fputs_escaped(stdout, strempty(h.version.s), h.version.len, false);
        if (!streq(h.status.s, "ok")) {
                fputs(" (", stdout);
                fputs_escaped(stdout, h.status.s, h.status.len, false);
                fputc(')', stdout);
        }
        printf(": %" PRIi64 " running of %" PRIi64 " slots, %" PRIi64 " queued (at most %" PRIi64 "), %" PRIi64
               " finished\n\n",
               h.running.value, h.slots.value, h.queued.value, h.queue_max.value, h.finished.value);
        r = top_print_table(rows, n);
        if (r < 0)
                return EX_OSERR;
        if (next)
                puts("(more running executions than one page shows)");
        return flush_stdout() < 0 ? EX_OSERR : 0;
}

static volatile sig_atomic_t top_quit = 0;

static void on_top_signal(int sig) {
        top_quit = 1;
}

int verb_top(char **args, size_t n_args) {
        struct sigaction sa = { .sa_handler = on_top_signal };
        bool tty = isatty(STDOUT_FILENO);
        int r;

        /* The listing top_frame() fetches: running executions, one page of the largest size. */
        arg_status = "running";
        arg_limit = 1000;
        arg_limit_set = true;

        if (arg_once)
                return top_frame(false);

        /* No SA_RESTART: Ctrl-C ends the sleep at once and the loop after the current frame. */
        (void) sigaction(SIGINT, &sa, NULL);
        (void) sigaction(SIGTERM, &sa, NULL);
        for (bool first = true; !top_quit; first = false) {
                struct timespec ts = {
                        .tv_sec = (time_t) (arg_interval_usec / 1000000),
                        .tv_nsec = (long) (arg_interval_usec % 1000000) * 1000,
                };

                /* Frames in place on a terminal; one after the other, separated by an empty line,
                 * into a pipe or file (as systemd-cgtop --batch). */
                if (!tty && !first)
                        fputc('\n', stdout);
                r = top_frame(tty);
                if (r != 0)
                        return r;
                while (!top_quit && nanosleep(&ts, &ts) < 0 && errno == EINTR)
                        ;
        }
        return EXIT_SUCCESS;
}

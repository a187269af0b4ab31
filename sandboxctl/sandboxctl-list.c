/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* list, and the one listing request that top and stats use as well. */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sandboxctl.h"
#include "sandboxctl-execution.h"
#include "sandboxctl-http.h"
#include "sandboxctl-json.h"
#include "sandboxctl-list.h"
#include "sandboxctl-table.h"
#include "sandboxctl-util.h"

/* "list --all" follows next_cursor at most this many times, so that a daemon handing out cursors
 * forever cannot keep us going (and growing) forever. */
#define LIST_PAGES_MAX 100

/* Append "&key=value" (or "?key=value" first) to *path, the value URL-encoded. */
static int query_append(CURL *c, char **path, const char *key, const char *value) {
        char *escaped, *p;
        int k;

        escaped = curl_easy_escape(c, value, 0);
        if (!escaped)
                return -ENOMEM;
        k = asprintf(&p, "%s%c%s=%s", *path, strchr(*path, '?') ? '&' : '?', key, escaped);
        curl_free(escaped);
        if (k < 0)
                return -ENOMEM;
        free(*path);
        *path = p;
        return 0;
}

static int list_path(const char *cursor, char **ret) {
        _cleanup_(curl_easy_cleanupp) CURL *c = NULL;
        _cleanup_free_ char *path = NULL;
        char limit[32];
        int r = 0;

        c = curl_easy_init(); /* only for curl_easy_escape() */
        path = strdup("/v1/executions");
        if (!c || !path)
                return -ENOMEM;

        if (arg_session)
                r = query_append(c, &path, "session_id", arg_session);
        if (r >= 0 && arg_status)
                r = query_append(c, &path, "status", arg_status);
        if (r >= 0 && arg_error_type)
                r = query_append(c, &path, "error_type", arg_error_type);
        if (r >= 0 && arg_failed)
                r = query_append(c, &path, "failed", "true");
        if (r >= 0 && arg_order)
                r = query_append(c, &path, "order", arg_order);
        if (r >= 0 && arg_limit_set) {
                (void) snprintf(limit, sizeof(limit), "%" PRIu64, arg_limit);
                r = query_append(c, &path, "limit", limit);
        }
        if (r >= 0 && cursor)
                r = query_append(c, &path, "cursor", cursor);
        if (r < 0)
                return r;

        *ret = TAKE_PTR(path);
        return 0;
}

int list_fetch_page(const char *cursor, json_object **ret_answer, json_object **ret_list,
                    const char **ret_next) {
        _cleanup_(json_object_putp) json_object *answer = NULL;
        _cleanup_free_ char *path = NULL;
        json_object *list = NULL, *next = NULL;
        int r;

        r = list_path(cursor, &path);
        if (r < 0) {
                (void) log_oom();
                return EX_OSERR;
        }

        r = http_call_ok("GET", path, NULL, false, false, &answer);
        if (r != 0)
                return r;

        if (!json_object_is_type(answer, json_type_object) ||
            !json_object_object_get_ex(answer, "executions", &list) || !list ||
            !json_object_is_type(list, json_type_array)) {
                (void) log_error_errno(-EBADMSG, "Malformed answer from sandboxd: no 'executions' array.");
                return EX_UNAVAILABLE;
        }
        if (json_object_object_get_ex(answer, "next_cursor", &next) && next &&
            (!json_object_is_type(next, json_type_string) || json_object_get_string_len(next) == 0)) {
                (void) log_error_errno(-EBADMSG,
                                       "Malformed answer from sandboxd: 'next_cursor' is not a non-empty string.");
                return EX_UNAVAILABLE;
        }

        *ret_list = list;
        *ret_next = next ? json_object_get_string(next) : NULL;
        *ret_answer = TAKE_PTR(answer);
        return 0;
}

static char *cell_exit(const CtlExecution *e) {
        const char *name;

        if (e->exit_code.set)
                return cell_printf("%" PRIi64, e->exit_code.value);
        if (e->signal.set) {
                name = sigabbrev_np((int) e->signal.value);
                return name ? cell_printf("SIG%s", name) : cell_printf("signal %" PRIi64, e->signal.value);
        }
        return strdup("-");
}

enum {
        COLUMN_EXECUTION,
        COLUMN_SESSION,
        COLUMN_LANGUAGE,
        COLUMN_STATUS,
        COLUMN_ERROR,
        COLUMN_EXIT,
        COLUMN_DURATION,
        COLUMN_PEAK_MEM,
        COLUMN_CREATED,
        _COLUMN_MAX,
};

static int list_print_table(const CtlExecution *executions, size_t n, const char *next_cursor) {
        static const CtlColumn columns[_COLUMN_MAX] = {
                [COLUMN_EXECUTION] = { "EXECUTION", false },
                [COLUMN_SESSION] = { "SESSION", false },
                [COLUMN_LANGUAGE] = { "LANGUAGE", false },
                [COLUMN_STATUS] = { "STATUS", false },
                [COLUMN_ERROR] = { "ERROR", false },
                [COLUMN_EXIT] = { "EXIT", true },
                [COLUMN_DURATION] = { "DURATION", true },
                [COLUMN_PEAK_MEM] = { "PEAK MEM", true },
                [COLUMN_CREATED] = { "CREATED", false },
        };
        _cleanup_(table_done) CtlTable t = {};
        int r;

        r = table_init(&t, columns, _COLUMN_MAX, n);
        if (r < 0)
                return r;

        for (size_t i = 0; i < n; i++) {
                const CtlExecution *e = executions + i;
                char **row = table_row(&t, i);

                row[COLUMN_EXECUTION] = cell_string(&e->execution_id);
                row[COLUMN_SESSION] = cell_string(&e->session_id);
                row[COLUMN_LANGUAGE] = cell_string(&e->language);
                row[COLUMN_STATUS] = cell_string(&e->status);
                row[COLUMN_ERROR] = cell_string(&e->error_type);
                row[COLUMN_EXIT] = cell_exit(e);
                row[COLUMN_DURATION] = cell_duration(&e->duration_ms);
                row[COLUMN_PEAK_MEM] = cell_memory(&e->peak_memory_mb);
                row[COLUMN_CREATED] = cell_timestamp(&e->created_at);
        }

        r = table_print(&t);
        if (r < 0)
                return r;

        if (n > 0)
                fputc('\n', stdout);
        printf("%zu execution%s listed.\n", n, n == 1 ? "" : "s");
        if (next_cursor) {
                fputs("More: --cursor=", stdout);
                fputs_escaped(stdout, next_cursor, strlen(next_cursor), false);
                fputs(arg_all ? "\n" : " or --all\n", stdout);
        }
        return flush_stdout();
}

int verb_list(char **args, size_t n_args) {
        _cleanup_(json_object_putp) json_object *page = NULL, *all = NULL, *merged = NULL;
        _cleanup_free_ char *cursor = NULL;
        _cleanup_free_ CtlExecution *executions = NULL;
        json_object *list = NULL, *answer;
        const char *next = NULL;
        size_t n;
        int r;

        /* Values are URL-encoded and checked by the daemon; an empty one can only be a mistake. */
        if (arg_session && isempty(arg_session)) {
                (void) log_error_errno(-EINVAL, "--session: empty session ID.");
                return EX_USAGE;
        }

        if (arg_cursor) {
                cursor = strdup(arg_cursor);
                if (!cursor) {
                        (void) log_oom();
                        return EX_OSERR;
                }
        }

        r = list_fetch_page(cursor, &page, &list, &next);
        if (r != 0)
                return r;
        answer = page;

        if (arg_all) {
                /* Every page's executions into one array, which holds its own references, so each page
                 * can go once it is copied. cursor is always the cursor the current page was asked
                 * with, and at the end the one to continue with (NULL when there is no more). */
                all = json_object_new_array();
                if (!all)
                        goto oom;

                for (unsigned pages = 1;; pages++) {
                        n = json_object_array_length(list);
                        for (size_t i = 0; i < n; i++)
                                if (json_object_array_add(all, json_object_get(json_object_array_get_idx(list, i))) < 0)
                                        goto oom;

                        if (!next) {
                                cursor = mfree(cursor);
                                break;
                        }
                        /* A cursor that does not move would fetch the same page until the bound. */
                        if (streq_ptr(next, cursor)) {
                                (void) log_error_errno(-EBADMSG, "Malformed answer from sandboxd: "
                                                       "next_cursor does not advance.");
                                return EX_UNAVAILABLE;
                        }
                        free(cursor);
                        cursor = strdup(next); /* next lives in page */
                        if (!cursor)
                                goto oom;

                        if (pages >= LIST_PAGES_MAX) {
                                /* Not an error: what we have is printed, and where to go on (next_cursor
                                 * with --json, the hint otherwise). */
                                (void) log_error_errno(-E2BIG, "Warning: stopped after %d pages, more executions "
                                                       "remain.", LIST_PAGES_MAX);
                                break;
                        }

                        page = (json_object_put(page), NULL);
                        r = list_fetch_page(cursor, &page, &list, &next);
                        if (r != 0)
                                return r;
                }
                page = (json_object_put(page), NULL);

                /* The same shape as one page: everything, and where to go on if we stopped early. */
                merged = json_object_new_object();
                if (!merged ||
                    json_add(merged, "executions", json_object_get(all)) < 0 ||
                    json_object_object_add(merged, "next_cursor",
                                           cursor ? json_object_new_string(cursor) : NULL) < 0)
                        goto oom;
                if (cursor && !json_object_object_get(merged, "next_cursor"))
                        goto oom;

                list = all;
                next = cursor;
                answer = merged;
        }

        /* Check all of it before printing anything, also with --json. */
        n = json_object_array_length(list);
        executions = calloc(MAX(n, (size_t) 1), sizeof(CtlExecution));
        if (!executions)
                goto oom;
        for (size_t i = 0; i < n; i++) {
                r = execution_parse(json_object_array_get_idx(list, i), executions + i);
                if (r < 0)
                        return exit_status_for(r, EX_UNAVAILABLE);
        }

        r = arg_json ? print_json(answer) : list_print_table(executions, n, next);
        return r < 0 ? EX_OSERR : EXIT_SUCCESS;

oom:
        (void) log_oom();
        return EX_OSERR;
}

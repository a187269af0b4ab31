/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "model/api-error.h"
#include "util.h"

/* The error table (api-error.c) against itself and against the two documents that publish it:
 * docs/http-api.md and docs/dbus-api.md, section "Errors", given as arguments. */

static const char *http_doc, *bus_doc;

static bool code_is_valid(const char *s) {
        return !isempty(s) && strspn(s, "abcdefghijklmnopqrstuvwxyz_") == strlen(s) && s[0] != '_';
}

/* The D-Bus specification's rules for error names (as for interface names): at least two elements
 * of [A-Za-z0-9_], none starting with a digit, at most 255 bytes. */
static bool bus_name_is_valid(const char *s) {
        size_t n = strlen(s), elements = 0;

        if (n == 0 || n > 255)
                return false;
        for (const char *e = s; ; ) {
                size_t k = strspn(e, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_");

                if (k == 0 || (e[0] >= '0' && e[0] <= '9'))
                        return false;
                elements++;
                if (e[k] == 0)
                        break;
                if (e[k] != '.')
                        return false;
                e += k + 1;
        }
        return elements >= 2;
}

static void test_rows_complete(_unused_ void **state) {
        for (ApiError e = 0; e < _API_ERROR_MAX; e++) {
                const ApiErrorInfo *i = api_error_info(e);
                bool http, bus;

                assert_non_null(i);
                http = i->transports & API_TRANSPORT_HTTP;
                bus = i->transports & API_TRANSPORT_BUS;
                /* Every row is answered by at least one API and only with the bits defined. */
                if ((!http && !bus) || (i->transports & ~(unsigned) (API_TRANSPORT_HTTP | API_TRANSPORT_BUS))) {
                        print_error("row %d: transports %u\n", e, i->transports);
                        fail();
                }
                /* An HTTP row has a code and an error status; a row that is not has neither. */
                if (http != (i->code != NULL) || http != (i->http_status != 0) ||
                    (http && (!code_is_valid(i->code) || i->http_status < 400 || i->http_status > 599))) {
                        print_error("row %d: HTTP %u '%s'\n", e, i->http_status, strna(i->code));
                        fail();
                }
                /* A D-Bus row has a valid name of ours; a row that is not has none. */
                if (bus != (i->bus_name != NULL) ||
                    (bus && (!bus_name_is_valid(i->bus_name) || !startswith(i->bus_name, API_ERROR_BUS_PREFIX)))) {
                        print_error("row %d: D-Bus '%s'\n", e, strna(i->bus_name));
                        fail();
                }
        }
        assert_null(api_error_info(_API_ERROR_MAX));
        assert_null(api_error_info(_API_ERROR_INVALID));
        assert_true(bus_name_is_valid("io.sandboxd.Sandbox1.Error.NotFound"));
        assert_false(bus_name_is_valid("io.sandboxd.Sandbox1.Error."));
        assert_false(bus_name_is_valid("NotFound"));
        assert_false(bus_name_is_valid("io.9sandboxd.X"));
}

static void test_rows_unique(_unused_ void **state) {
        for (ApiError a = 0; a < _API_ERROR_MAX; a++)
                for (ApiError b = a + 1; b < _API_ERROR_MAX; b++) {
                        const ApiErrorInfo *x = api_error_info(a), *y = api_error_info(b);

                        /* No two rows say the same thing on HTTP... */
                        if (x->code && y->code && streq(x->code, y->code) && x->http_status == y->http_status) {
                                print_error("rows %d and %d are both %u %s\n", a, b, x->http_status, x->code);
                                fail();
                        }
                        /* ...one code is one D-Bus name, whatever its status... */
                        if (x->code && y->code && streq(x->code, y->code) &&
                            !streq_ptr(x->bus_name, y->bus_name)) {
                                print_error("code %s has two D-Bus names\n", x->code);
                                fail();
                        }
                        /* ...and a D-Bus-only row has a name of its own. */
                        if (x->bus_name && y->bus_name && streq(x->bus_name, y->bus_name) &&
                            (!x->code || !y->code)) {
                                print_error("rows %d and %d share %s\n", a, b, x->bus_name);
                                fail();
                        }
                }
}

/* The contract, byte for byte: what the HTTP and D-Bus APIs answered before the table existed. */
static void test_rows_contract(_unused_ void **state) {
        static const struct {
                ApiError e;
                unsigned status;
                const char *code, *name;
        } rows[] = {
                { API_ERROR_INVALID_JSON, 400, "invalid_json", "InvalidRequest" },
                { API_ERROR_INVALID_REQUEST, 400, "invalid_request", "InvalidRequest" },
                { API_ERROR_UNAUTHORIZED, 401, "unauthorized", NULL },
                { API_ERROR_FORBIDDEN, 403, "forbidden", "Forbidden" },
                { API_ERROR_NOT_FOUND, 404, "not_found", "NotFound" },
                { API_ERROR_METHOD_NOT_ALLOWED, 405, "method_not_allowed", NULL },
                { API_ERROR_CONFLICT, 409, "conflict", "Conflict" },
                { API_ERROR_TOO_LARGE, 413, "too_large", "TooLarge" },
                { API_ERROR_UNSUPPORTED_MEDIA_TYPE, 415, "unsupported_media_type", NULL },
                { API_ERROR_UNSUPPORTED, 422, "unsupported", "Unsupported" },
                { API_ERROR_QUEUE_FULL, 429, "queue_full", "QueueFull" },
                { API_ERROR_CALLER_QUEUE_FULL, 429, "caller_queue_full", "CallerQueueFull" },
                { API_ERROR_TOO_MANY_CALLBACKS, 429, "too_many_callbacks", "TooManyCallbacks" },
                { API_ERROR_STORAGE_QUOTA_EXCEEDED, 429, "storage_quota_exceeded", "StorageQuotaExceeded" },
                { API_ERROR_TOO_MANY_SESSIONS, 429, "too_many_sessions", "TooManySessions" },
                { API_ERROR_SESSION_DISK_QUOTA_EXCEEDED, 429, "session_disk_quota_exceeded",
                  "SessionDiskQuotaExceeded" },
                { API_ERROR_SESSION_DISK_FULL, 429, "session_disk_full", "SessionDiskFull" },
                { API_ERROR_INTERNAL, 500, "internal", "Internal" },
                { API_ERROR_STORE, 503, "store_error", "StoreError" },
                { API_ERROR_STORE_FULL, 507, "store_error", "StoreError" },
                { API_ERROR_SHUTTING_DOWN, 503, "shutting_down", "ShuttingDown" },
                { API_ERROR_INVALID_CONFIGURATION, 0, NULL, "InvalidConfiguration" },
                { API_ERROR_INTERACTIVE_AUTH_TIMED_OUT, 0, NULL, "InteractiveAuthorizationTimedOut" },
                { API_ERROR_TOO_MANY_INTERACTIVE_AUTHS, 0, NULL, "TooManyInteractiveAuthorizations" },
        };

        assert_int_equal(ELEMENTSOF(rows), _API_ERROR_MAX);
        for (size_t k = 0; k < ELEMENTSOF(rows); k++) {
                const ApiErrorInfo *i = api_error_info(rows[k].e);
                char name[128];

                assert_int_equal(i->http_status, rows[k].status);
                assert_true(streq_ptr(i->code, rows[k].code));
                if (rows[k].name) {
                        snprintf(name, sizeof(name), "io.sandboxd.Sandbox1.Error.%s", rows[k].name);
                        assert_string_equal(i->bus_name, name);
                        assert_string_equal(api_error_bus_name(rows[k].e), name);
                } else {
                        assert_null(i->bus_name);
                        /* Never sent on D-Bus; should it be, it is an internal error there. */
                        assert_string_equal(api_error_bus_name(rows[k].e), "io.sandboxd.Sandbox1.Error.Internal");
                }
                if (rows[k].code) {
                        assert_int_equal(api_error_http_status(rows[k].e), rows[k].status);
                        assert_string_equal(api_error_code(rows[k].e), rows[k].code);
                } else {
                        assert_int_equal(api_error_http_status(rows[k].e), 500);
                        assert_string_equal(api_error_code(rows[k].e), "internal");
                }
        }
        /* Outside the table: internal, on both. */
        assert_int_equal(api_error_http_status(_API_ERROR_INVALID), 500);
        assert_string_equal(api_error_code(_API_ERROR_MAX), "internal");
        assert_string_equal(api_error_bus_name(_API_ERROR_INVALID), "io.sandboxd.Sandbox1.Error.Internal");
}

/* ---- the documents ---- */

#define DOC_ROWS_MAX 64
#define DOC_ITEMS_MAX 8

typedef struct DocRow {
        char bus_name[128];                      /* dbus-api.md's first column, "" in http-api.md */
        unsigned statuses[DOC_ITEMS_MAX];
        size_t n_statuses;
        char codes[DOC_ITEMS_MAX][64];
        size_t n_codes;
} DocRow;

static char *read_doc(const char *path) {
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        char *buf;
        size_t n;

        if (!f) {
                print_error("cannot open %s: %m\n", path);
                return NULL;
        }
        buf = calloc(1, 1024 * 1024 + 1);
        if (!buf)
                return NULL;
        n = fread(buf, 1, 1024 * 1024, f);
        buf[n] = 0;
        return buf;
}

/* The three-digit numbers of a cell ("503, 507", "503/507", "400 `invalid_json`"). */
static void cell_statuses(const char *c, size_t n, DocRow *row) {
        for (size_t i = 0; i < n; i++)
                if (c[i] >= '1' && c[i] <= '5' && i + 3 <= n && strspn(c + i, "0123456789") >= 3 &&
                    (i == 0 || !(c[i - 1] >= '0' && c[i - 1] <= '9')) && row->n_statuses < DOC_ITEMS_MAX &&
                    (i + 3 == n || !(c[i + 3] >= '0' && c[i + 3] <= '9'))) {
                        row->statuses[row->n_statuses++] = (unsigned) ((c[i] - '0') * 100 + (c[i + 1] - '0') * 10 +
                                                                       (c[i + 2] - '0'));
                        i += 2;
                }
}

/* The `quoted` words of a cell. */
static void cell_quoted(const char *c, size_t n, char (*out)[64], size_t *n_out, size_t max) {
        for (const char *p = c, *end = c + n; p < end; ) {
                const char *a = memchr(p, '`', (size_t) (end - p)), *b;

                if (!a)
                        break;
                b = memchr(a + 1, '`', (size_t) (end - a - 1));
                if (!b)
                        break;
                if (*n_out < max && (size_t) (b - a - 1) < 64) {
                        memcpy(out[*n_out], a + 1, (size_t) (b - a - 1));
                        out[*n_out][b - a - 1] = 0;
                        (*n_out)++;
                }
                p = b + 1;
        }
}

/* The rows of the first table below "## Errors": for http-api.md the status column and the code
 * column, for dbus-api.md the name column and the "HTTP" column (statuses and codes). */
static size_t doc_error_rows(const char *text, bool bus, DocRow *rows) {
        const char *p = strstr(text, "\n## Errors\n");
        bool in_table = false;
        size_t n = 0, line_no = 0;

        assert_non_null(p);
        p += strlen("\n## Errors\n");
        for (const char *nl; *p && (nl = strchr(p, '\n')); p = nl + 1) {
                const char *cells[4];
                size_t lens[4], k = 0;

                if (*p != '|') {
                        if (in_table)
                                break;
                        if (startswith(p, "## "))
                                break;
                        continue;
                }
                in_table = true;
                /* The header and the |---| line. */
                if (line_no++ < 2)
                        continue;
                for (const char *c = p + 1; c < nl && k < ELEMENTSOF(cells); ) {
                        const char *bar = memchr(c, '|', (size_t) (nl - c));

                        if (!bar)
                                break;
                        cells[k] = c;
                        lens[k++] = (size_t) (bar - c);
                        c = bar + 1;
                }
                assert_true(k >= 3);
                assert_true(n < DOC_ROWS_MAX);
                rows[n] = (DocRow) {};
                if (bus) {
                        char names[1][64] = {};
                        size_t n_names = 0;

                        cell_quoted(cells[0], lens[0], names, &n_names, 1);
                        assert_int_equal(n_names, 1);
                        snprintf(rows[n].bus_name, sizeof(rows[n].bus_name), "%s", names[0]);
                        cell_statuses(cells[1], lens[1], &rows[n]);
                        cell_quoted(cells[1], lens[1], rows[n].codes, &rows[n].n_codes, DOC_ITEMS_MAX);
                } else {
                        cell_statuses(cells[0], lens[0], &rows[n]);
                        cell_quoted(cells[1], lens[1], rows[n].codes, &rows[n].n_codes, DOC_ITEMS_MAX);
                }
                n++;
        }
        return n;
}

static bool doc_has_pair(const DocRow *rows, size_t n, const char *bus_name, unsigned status, const char *code) {
        for (size_t i = 0; i < n; i++) {
                bool s = false, c = false;

                if (bus_name && !streq(rows[i].bus_name, bus_name))
                        continue;
                for (size_t k = 0; k < rows[i].n_statuses; k++)
                        s = s || rows[i].statuses[k] == status;
                for (size_t k = 0; k < rows[i].n_codes; k++)
                        c = c || streq(rows[i].codes[k], code);
                if (s && c)
                        return true;
        }
        return false;
}

static bool table_has_pair(const char *bus_name, unsigned status, const char *code) {
        for (ApiError e = 0; e < _API_ERROR_MAX; e++) {
                const ApiErrorInfo *i = api_error_info(e);

                if (i->code && i->http_status == status && streq(i->code, code) &&
                    (!bus_name || streq_ptr(i->bus_name, bus_name)))
                        return true;
        }
        return false;
}

/* docs/http-api.md's table lists exactly the HTTP rows: every (status, code) of the table is a row
 * there, and every row there is one of the table's. */
static void test_http_doc(_unused_ void **state) {
        _cleanup_free_ char *text = NULL;
        DocRow rows[DOC_ROWS_MAX];
        size_t n, pairs = 0;

        if (!http_doc) {
                print_message("no path of docs/http-api.md given\n");
                skip();
        }
        text = read_doc(http_doc);
        assert_non_null(text);
        n = doc_error_rows(text, false, rows);
        assert_true(n >= 10);
        for (ApiError e = 0; e < _API_ERROR_MAX; e++) {
                const ApiErrorInfo *i = api_error_info(e);

                if (i->code && !doc_has_pair(rows, n, NULL, i->http_status, i->code)) {
                        print_error("%s: no row for %u %s\n", http_doc, i->http_status, i->code);
                        fail();
                }
        }
        for (size_t r = 0; r < n; r++) {
                assert_int_equal(rows[r].n_codes, 1);
                assert_true(rows[r].n_statuses >= 1);
                for (size_t k = 0; k < rows[r].n_statuses; k++, pairs++)
                        if (!table_has_pair(NULL, rows[r].statuses[k], rows[r].codes[0])) {
                                print_error("%s: %u %s is not in api-error.c\n", http_doc, rows[r].statuses[k],
                                            rows[r].codes[0]);
                                fail();
                        }
        }
        /* Nothing counted twice: as many documented pairs as HTTP rows. */
        {
                size_t http_rows = 0;

                for (ApiError e = 0; e < _API_ERROR_MAX; e++)
                        http_rows += api_error_info(e)->code != NULL;
                assert_int_equal(pairs, http_rows);
        }
}

static bool has_status(const unsigned *l, size_t n, unsigned v) {
        for (size_t i = 0; i < n; i++)
                if (l[i] == v)
                        return true;
        return false;
}

static bool has_code(char (*l)[64], size_t n, const char *v) {
        for (size_t i = 0; i < n; i++)
                if (streq(l[i], v))
                        return true;
        return false;
}

/* docs/dbus-api.md's table: one row per name of ours, showing the HTTP statuses and codes the table
 * maps to that name ("400 `invalid_json`, `invalid_request`", "503/507 `store_error`"), and nothing
 * else; every name of the table has its row. */
static void test_bus_doc(_unused_ void **state) {
        _cleanup_free_ char *text = NULL;
        DocRow rows[DOC_ROWS_MAX];
        size_t n, ours = 0;

        if (!bus_doc) {
                print_message("no path of docs/dbus-api.md given\n");
                skip();
        }
        text = read_doc(bus_doc);
        assert_non_null(text);
        n = doc_error_rows(text, true, rows);
        for (size_t r = 0; r < n; r++) {
                DocRow want = {};
                bool found = false;

                if (!startswith(rows[r].bus_name, API_ERROR_BUS_PREFIX))
                        continue;       /* the bus's own names (AccessDenied, ...) are not ours */
                ours++;
                for (size_t q = 0; q < r; q++)
                        if (streq(rows[q].bus_name, rows[r].bus_name)) {
                                print_error("%s: %s has two rows\n", bus_doc, rows[r].bus_name);
                                fail();
                        }
                for (ApiError e = 0; e < _API_ERROR_MAX; e++) {
                        const ApiErrorInfo *i = api_error_info(e);

                        if (!streq_ptr(i->bus_name, rows[r].bus_name))
                                continue;
                        found = true;
                        if (!i->code)
                                continue;
                        if (!has_status(want.statuses, want.n_statuses, i->http_status))
                                want.statuses[want.n_statuses++] = i->http_status;
                        if (!has_code(want.codes, want.n_codes, i->code))
                                snprintf(want.codes[want.n_codes++], sizeof(want.codes[0]), "%s", i->code);
                }
                if (!found) {
                        print_error("%s: %s is not in api-error.c\n", bus_doc, rows[r].bus_name);
                        fail();
                }
                /* The same sets both ways. */
                if (want.n_statuses != rows[r].n_statuses || want.n_codes != rows[r].n_codes) {
                        print_error("%s: %s shows %zu statuses and %zu codes, api-error.c maps %zu and %zu\n",
                                    bus_doc, rows[r].bus_name, rows[r].n_statuses, rows[r].n_codes, want.n_statuses,
                                    want.n_codes);
                        fail();
                }
                for (size_t k = 0; k < want.n_statuses; k++)
                        if (!has_status(rows[r].statuses, rows[r].n_statuses, want.statuses[k])) {
                                print_error("%s: %s lacks status %u\n", bus_doc, rows[r].bus_name,
                                            want.statuses[k]);
                                fail();
                        }
                for (size_t k = 0; k < want.n_codes; k++)
                        if (!has_code(rows[r].codes, rows[r].n_codes, want.codes[k])) {
                                print_error("%s: %s lacks code %s\n", bus_doc, rows[r].bus_name, want.codes[k]);
                                fail();
                        }
        }
        for (ApiError e = 0; e < _API_ERROR_MAX; e++) {
                const ApiErrorInfo *i = api_error_info(e);
                bool found = false;

                for (size_t r = 0; i->bus_name && r < n; r++)
                        found = found || streq(rows[r].bus_name, i->bus_name);
                if (i->bus_name && !found) {
                        print_error("%s: no row for %s\n", bus_doc, i->bus_name);
                        fail();
                }
        }
        assert_true(ours >= 10);
}

int main(int argc, char *argv[]) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_rows_complete),
                cmocka_unit_test(test_rows_unique),
                cmocka_unit_test(test_rows_contract),
                cmocka_unit_test(test_http_doc),
                cmocka_unit_test(test_bus_doc),
        };

        http_doc = argc > 1 ? argv[1] : NULL;
        bus_doc = argc > 2 ? argv[2] : NULL;
        return cmocka_run_group_tests(tests, NULL, NULL);
}

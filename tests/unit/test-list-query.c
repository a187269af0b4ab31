/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "model/execution.h"
#include "api/list-query.h"
#include "util.h"

/* The filters of a listing (list-query.c), row by row: first as the HTTP query string gives them,
 * then the same rows as ListExecutions' JSON object, which must come out identical. */

typedef struct Row {
        const char *query;        /* "k=v&k=v", URL decoding not involved */
        const char *json;         /* the same as ListExecutions' argument */
        int r;
        const char *field;        /* on error */
        const char *message;      /* on error */
        int status, error_type, failed, order;
        unsigned limit;
        const char *session_id, *cursor;
} Row;

#define ANY -1
static const Row rows[] = {
        { "", "", 0, .status = ANY, .error_type = ANY, .order = STORE_ORDER_CREATED_AT, .limit = 50 },
        { "", "{}", 0, .status = ANY, .error_type = ANY, .order = STORE_ORDER_CREATED_AT, .limit = 50 },
        { "status=failed", "{\"status\":\"failed\"}", 0, .status = EXEC_FAILED, .error_type = ANY, .limit = 50 },
        { "error_type=timeout", "{\"error_type\":\"timeout\"}", 0, .status = ANY, .error_type = ERROR_TIMEOUT,
          .limit = 50 },
        { "error_type=none", "{\"error_type\":\"none\"}", 0, .status = ANY, .error_type = ERROR_NONE, .limit = 50 },
        { "failed=true", "{\"failed\":true}", 0, .status = ANY, .error_type = ANY, .failed = 1, .limit = 50 },
        { "failed=false", "{\"failed\":\"false\"}", 0, .status = ANY, .error_type = ANY, .limit = 50 },
        { "order=duration_ms", "{\"order\":\"duration_ms\"}", 0, .status = ANY, .error_type = ANY,
          .order = STORE_ORDER_DURATION_MS, .limit = 50 },
        { "limit=1000", "{\"limit\":1000}", 0, .status = ANY, .error_type = ANY, .limit = 1000 },
        { "limit=7", "{\"limit\":\"7\"}", 0, .status = ANY, .error_type = ANY, .limit = 7 },
        { "session_id=s_1&cursor=abc", "{\"session_id\":\"s_1\",\"cursor\":\"abc\"}", 0, .status = ANY,
          .error_type = ANY, .limit = 50, .session_id = "s_1", .cursor = "abc" },
        { "status=weird", "{\"status\":\"weird\"}", -EINVAL, "status", "status: unknown status 'weird'" },
        { "error_type=oops", "{\"error_type\":\"oops\"}", -EINVAL, "error_type",
          "error_type: unknown error type 'oops'" },
        { "failed=yes", "{\"failed\":\"yes\"}", -EINVAL, "failed", "failed: true or false" },
        { "order=random", "{\"order\":\"random\"}", -EINVAL, "order", "order: created_at or duration_ms" },
        { "limit=0", "{\"limit\":0}", -EINVAL, "limit", "limit: 1..1000" },
        { "limit=1001", "{\"limit\":1001}", -EINVAL, "limit", "limit: 1..1000" },
        { "limit=-1", "{\"limit\":-1}", -EINVAL, "limit", "limit: 1..1000" },
        { "limit=x", "{\"limit\":\"x\"}", -EINVAL, "limit", "limit: 1..1000" },
        { "session_id=a/b", "{\"session_id\":\"a/b\"}", -EINVAL, "session_id", "session_id: invalid" },
};

/* "k=v&k=v" as a getter. */
typedef struct Pairs {
        char buf[256];
        char *keys[8], *values[8];
        size_t n;
} Pairs;

static void pairs_split(Pairs *p, const char *query) {
        char *save = NULL;

        memset(p, 0, sizeof(*p));
        snprintf(p->buf, sizeof(p->buf), "%s", query);
        for (char *kv = strtok_r(p->buf, "&", &save); kv && p->n < 8; kv = strtok_r(NULL, "&", &save)) {
                char *eq = strchr(kv, '=');

                assert_non_null(eq);
                *eq = 0;
                p->keys[p->n] = kv;
                p->values[p->n++] = eq + 1;
        }
}

static const char *pairs_get(void *userdata, const char *key) {
        Pairs *p = userdata;

        for (size_t i = 0; i < p->n; i++)
                if (streq(p->keys[i], key))
                        return p->values[i];
        return NULL;
}

static void check(const Row *row, int r, const StoreQuery *q, const RequestError *err, const char *via) {
        print_message("# %s: %s\n", via, via[0] == 'q' ? row->query : row->json);
        assert_int_equal(r, row->r);
        if (r < 0) {
                assert_int_equal(api_error_http_status(err->error), 400);
                assert_string_equal(api_error_code(err->error), "invalid_request");
                assert_string_equal(err->field, row->field);
                assert_string_equal(err->message, row->message);
                return;
        }
        assert_int_equal(q->status, row->status);
        assert_int_equal(q->error_type, row->error_type);
        assert_int_equal(q->failed, row->failed);
        assert_int_equal(q->order, row->order);
        assert_int_equal(q->limit, row->limit);
        if (row->session_id)
                assert_string_equal(q->session_id, row->session_id);
        else
                assert_null(q->session_id);
        if (row->cursor)
                assert_string_equal(q->cursor, row->cursor);
        else
                assert_null(q->cursor);
}

static void test_query_string(void **state) {
        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                StoreQuery q = STORE_QUERY_INIT;
                RequestError err = {};
                Pairs p;

                pairs_split(&p, rows[i].query);
                check(&rows[i], list_query_parse(pairs_get, &p, &q, &err), &q, &err, "query");
        }
}

static void test_json(void **state) {
        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                StoreQuery q = STORE_QUERY_INIT;
                RequestError err = {};
                ListQueryJson l;
                int r;

                r = list_query_json_parse(rows[i].json, strlen(rows[i].json), &l, &err);
                assert_int_equal(r, 0);
                r = list_query_parse(list_query_json_get, &l, &q, &err);
                check(&rows[i], r, &q, &err, "json");
                list_query_json_done(&l);
        }
}

/* What only the JSON form can get wrong. */
static const struct {
        const char *json;
        int r;
        const char *field, *message;
} bad_json[] = {
        { "[]", -EINVAL, "", "the query is not a JSON object (\"\" or \"{}\" lists everything)" },
        { "{", -EINVAL, "", "the query is not a JSON object (\"\" or \"{}\" lists everything)" },
        { "{} {}", -EINVAL, "", "the query is not a JSON object (\"\" or \"{}\" lists everything)" },
        { "\"status\"", -EINVAL, "", "the query is not a JSON object (\"\" or \"{}\" lists everything)" },
        { "{\"owner\":\"uid:0\"}", -EINVAL, "", "owner: unknown field" },
        { "{\"status\":[\"failed\"]}", -EINVAL, "status", "status: a string, an integer or a boolean" },
        { "{\"limit\":1.5}", -EINVAL, "limit", "limit: a string, an integer or a boolean" },
        { "{\"limit\":{\"a\":{\"b\":1}}}", -EINVAL, "", "the query is not a JSON object (\"\" or \"{}\" lists everything)" },
        { "{\"status\":\"failed\",\"status\":\"success\"}", -EINVAL, "status",
          "the query is not strict JSON: duplicate key 'status'" },
        { "{\"limit\":NaN}", -EINVAL, "", "the query is not strict JSON: at byte 9: not a JSON value (NaN, Infinity and bare "
          "words are not JSON)" },
        { "{\"limit\":18446744073709551616}", -EINVAL, "limit",
          "the query is not strict JSON: 18446744073709551616 is out of range (64 bits)" },
        { "{\"status\\u0000x\":\"failed\"}", -EINVAL, "", "the query is not strict JSON: a key contains \\u0000" },
};

static void test_json_refused(void **state) {
        for (size_t i = 0; i < ELEMENTSOF(bad_json); i++) {
                RequestError err = {};
                ListQueryJson l;

                print_message("# %s\n", bad_json[i].json);
                assert_int_equal(list_query_json_parse(bad_json[i].json, strlen(bad_json[i].json), &l, &err),
                                 bad_json[i].r);
                assert_string_equal(api_error_code(err.error), "invalid_request");
                assert_string_equal(err.field, bad_json[i].field);
                assert_string_equal(err.message, bad_json[i].message);
                assert_null(l.object);
        }
}

static void test_json_too_large(void **state) {
        char big[LIST_QUERY_JSON_MAX + 2];
        RequestError err = {};
        ListQueryJson l;

        memset(big, ' ', sizeof(big) - 1);
        big[0] = '{';
        big[sizeof(big) - 2] = '}';
        big[sizeof(big) - 1] = 0;
        assert_int_equal(list_query_json_parse(big, strlen(big), &l, &err), -E2BIG);
        assert_string_equal(api_error_code(err.error), "too_large");
        assert_int_equal(api_error_http_status(err.error), 413);
        /* The cap is inclusive. */
        big[LIST_QUERY_JSON_MAX - 1] = '}';
        assert_int_equal(list_query_json_parse(big, LIST_QUERY_JSON_MAX, &l, &err), 0);
        list_query_json_done(&l);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_query_string),
                cmocka_unit_test(test_json),
                cmocka_unit_test(test_json_refused),
                cmocka_unit_test(test_json_too_large),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "model/json-strict.h"
#include "util.h"

typedef struct Row {
        const char *name;
        const char *in;
        size_t len;
        const char *path;        /* NULL: accepted */
        const char *message;     /* a substring of the message */
} Row;

/* len from the literal, so embedded NULs count */
#define OK(name, in) { name, in, sizeof(in) - 1, NULL, NULL }
#define BAD(name, in, path, message) { name, in, sizeof(in) - 1, path, message }

static const Row rows[] = {
        /* RFC 8259 values */
        OK("object", "{\"a\": 1, \"b\": [true, false, null], \"c\": {\"d\": \"e\"}}"),
        OK("empty object and array", " { \"a\" : { } , \"b\" : [ ] } "),
        OK("top-level scalars", "\"x\""),
        OK("number forms", "[0, -0, 1.5, -1.5e10, 1E-3, 2e+2, 0.0]"),
        OK("64-bit edges", "[18446744073709551615, -9223372036854775808, 9223372036854775807]"),
        OK("a fraction beyond 64 bits is a double", "[1e400, 18446744073709551616.0]"),
        OK("escapes", "\"\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u00e9 \\ud83d\\ude00\""),
        OK("same key in sibling objects", "[{\"a\": 1}, {\"a\": 2}, {\"b\": {\"a\": 3}}]"),
        OK("keys that differ only in length", "{\"a\": 1, \"aa\": 2, \"\": 3}"),
        OK("\\u0000 in a value is fine", "{\"a\": \"x\\u0000y\"}"),
        OK("UTF-8 passes through", "{\"\xc3\xa9\": \"\xe2\x82\xac\"}"),
        OK("16 levels", "[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]"),

        /* duplicate keys, at any depth, compared decoded */
        BAD("duplicate at the top", "{\"a\": 1, \"a\": 2}", "a", "duplicate key 'a'"),
        BAD("duplicate far apart", "{\"a\": 1, \"b\": 2, \"c\": 3, \"d\": 4, \"e\": 5, \"f\": 6, \"g\": 7, \"h\": 8, "
            "\"i\": 9, \"a\": 10}", "a", "duplicate key 'a'"),
        BAD("duplicate, one escaped", "{\"code\": 1, \"c\\u006fde\": 2}", "code", "duplicate key 'code'"),
        BAD("duplicate, escaped solidus", "{\"a/b\": 1, \"a\\/b\": 2}", "a/b", "duplicate key"),
        BAD("duplicate, surrogate pair", "{\"\xf0\x9f\x98\x80\": 1, \"\\ud83d\\ude00\": 2}", "\xf0\x9f\x98\x80",
            "duplicate key"),
        BAD("duplicate nested", "{\"limits\": {\"memory_mb\": 1, \"memory_mb\": 2}}", "limits.memory_mb",
            "duplicate key 'memory_mb'"),
        BAD("duplicate in an array element", "{\"files\": [{\"path\": \"a\"}, {\"path\": \"b\", \"path\": \"c\"}]}",
            "files[1].path", "duplicate key 'path'"),
        BAD("duplicate empty key", "{\"\": 1, \"\": 2}", "", "duplicate key ''"),

        /* keys with NUL: json-c cuts them there */
        BAD("\\u0000 in a key", "{\"limits\": {\"memory_mb\\u0000\": 1}}", "limits", "a key contains \\u0000"),
        BAD("\\u0000 alone as a key", "{\"\\u0000\": 1}", "", "a key contains \\u0000"),

        /* raw control characters in strings */
        BAD("raw NUL in a value", "{\"a\": \"x\0y\"}", "a", "U+0000"),
        BAD("raw newline in a value", "{\"a\": [\"x\ny\"]}", "a[0]", "U+000A"),
        BAD("raw tab in a key", "{\"a\tb\": 1}", "", "U+0009"),
        BAD("raw 0x1f", "\"\x1f\"", "", "U+001F"),

        /* not JSON at all */
        BAD("NaN", "{\"a\": NaN}", "", "NaN"),
        BAD("Infinity", "[Infinity]", "", "Infinity"),
        BAD("-Infinity", "[-Infinity]", "", "Infinity"),
        BAD("bare word", "nul", "", "not a JSON value"),
        BAD("true prefix", "[tru]", "", "not a JSON value"),
        BAD("single quotes", "{'a': 1}", "", "key must be a string"),
        BAD("unquoted key", "{a: 1}", "", "key must be a string"),
        BAD("leading zero", "[01]", "", "',' or ']'"),
        BAD("leading plus", "[+1]", "", "not a JSON value"),
        BAD("dot without digits", "[1.]", "", "decimal point"),
        BAD("exponent without digits", "[1e]", "", "exponent"),
        BAD("hex", "[0x10]", "", "',' or ']'"),
        BAD("trailing comma in an object", "{\"a\": 1,}", "", "key must be a string"),
        BAD("trailing comma in an array", "[1,]", "", "not a JSON value"),
        BAD("missing colon", "{\"a\" 1}", "", "':'"),
        BAD("unclosed string", "\"abc", "", "not closed"),
        BAD("unclosed object", "{\"a\": 1", "", "end of input"),
        BAD("bad escape", "\"\\x41\"", "", "invalid escape"),
        BAD("short \\u", "\"\\u12\"", "", "four hex digits"),
        BAD("empty input", "", "", "end of input"),
        BAD("only white space", " \n\t", "", "end of input"),
        BAD("trailing data", "{} x", "", "trailing data"),
        BAD("two values", "{}{}", "", "trailing data"),
        BAD("trailing NUL", "{}\0", "", "trailing data"),
        BAD("comment", "{} // x", "", "trailing data"),
        BAD("17 levels", "[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]", "", "deeper than 16"),

        /* integers json-c would clamp to INT64_MAX/INT64_MIN: refused as sent */
        BAD("2^64", "{\"seed\": 18446744073709551616}", "seed", "18446744073709551616 is out of range"),
        BAD("-2^63-1", "{\"seed\": -9223372036854775809}", "seed", "-9223372036854775809 is out of range"),
        BAD("very long integer, cut in the message", "[123456789012345678901234567890123456789012345678901234567890]",
            "[0]", "1234567890123456789012345678901234567890... is out of range"),
};

static void test_rows(void **state) {
        (void) state;
        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                const Row *w = &rows[i];
                JsonStrictError err;
                int r = json_strict_check(w->in, w->len, 16, &err);

                if (!w->path) {
                        if (r != 0) {
                                print_error("%s: refused: path='%s' %s\n", w->name, err.path, err.message);
                                fail();
                        }
                        continue;
                }
                if (r != -EINVAL || strcmp(err.path, w->path) != 0 || !strstr(err.message, w->message)) {
                        print_error("%s: got %d path='%s' message='%s'; want -EINVAL path='%s' message with '%s'\n",
                                    w->name, r, r < 0 ? err.path : "", r < 0 ? err.message : "", w->path, w->message);
                        fail();
                }
        }
}

/* The first error wins, and a long path is cut, never overrun. */
static void test_first_error_and_long_path(void **state) {
        JsonStrictError err;
        char buf[4096];
        size_t n = 0;

        (void) state;
        assert_int_equal(json_strict_check("{\"a\": {\"b\": NaN}, \"a\": 1}", 25, 16, &err), -EINVAL);
        assert_non_null(strstr(err.message, "NaN"));

        for (int i = 0; i < 15; i++)
                n += (size_t) snprintf(buf + n, sizeof(buf) - n, "{\"%040d\": ", i);
        n += (size_t) snprintf(buf + n, sizeof(buf) - n, "{\"x\": 1, \"x\": 2}");
        for (int i = 0; i < 15; i++)
                buf[n++] = '}';
        assert_int_equal(json_strict_check(buf, n, 16, &err), -EINVAL);
        assert_non_null(strstr(err.message, "duplicate key 'x'"));
        assert_true(strlen(err.path) < sizeof(err.path));
        assert_int_equal(strncmp(err.path, "0000000000000000000000000000000000000000.", 41), 0);
}

/* Many keys in one object: every pair is found, whatever the order. */
static void test_many_keys(void **state) {
        _cleanup_free_ char *buf = NULL;
        JsonStrictError err;
        size_t n = 0, size = 20000 * 16;

        (void) state;
        buf = malloc(size);
        assert_non_null(buf);
        buf[n++] = '{';
        for (int i = 19999; i >= 0; i--)
                n += (size_t) snprintf(buf + n, size - n, "%s\"k%d\": %d", i == 19999 ? "" : ",", i, i);
        buf[n++] = '}';
        assert_int_equal(json_strict_check(buf, n, 16, &err), 0);
        /* The same with one key repeated at the far end. */
        n--;
        n += (size_t) snprintf(buf + n, size - n, ", \"k12345\": 0}");
        assert_int_equal(json_strict_check(buf, n, 16, &err), -EINVAL);
        assert_string_equal(err.path, "k12345");
}

/* Every prefix of every row, in a buffer of exactly that size (the ASan leg catches a read past the
 * end): accepted or refused with a message, nothing else. */
static void test_prefixes(void **state) {
        (void) state;
        for (size_t i = 0; i < ELEMENTSOF(rows); i++)
                for (size_t n = 0; n <= rows[i].len; n++) {
                        _cleanup_free_ char *buf = malloc(MAX(n, (size_t) 1));
                        JsonStrictError err;
                        int r;

                        assert_non_null(buf);
                        memcpy(buf, rows[i].in, n);
                        r = json_strict_check(buf, n, 16, &err);
                        assert_true(r == 0 || (r == -EINVAL && err.message[0]));
                }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_rows),
                cmocka_unit_test(test_first_error_and_long_path),
                cmocka_unit_test(test_many_keys),
                cmocka_unit_test(test_prefixes),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

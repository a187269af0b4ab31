/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "base64.h"
#include "util.h"

typedef struct Row {
        const char *in;
        size_t in_len;           /* 0: strlen(in) */
        const char *out;         /* NULL: refused */
        size_t out_len;          /* 0: strlen(out) */
} Row;

static void check_rows(const Row *rows, size_t n, int (*decode)(const char *, size_t, uint8_t **, size_t *),
                       char *(*encode)(const void *, size_t)) {
        for (size_t i = 0; i < n; i++) {
                const Row *row = rows + i;
                uint8_t *out = (uint8_t *) "untouched";
                size_t k = 4711, in_len = row->in_len ?: strlen(row->in);
                int r = decode(row->in, in_len, &out, &k);

                if (!row->out) {
                        /* Refused, and the outputs left alone. */
                        if (r != -EINVAL || k != 4711 || !streq((const char *) out, "untouched")) {
                                print_error("'%s' decoded (%d)\n", row->in, r);
                                fail();
                        }
                        continue;
                }
                if (r != 0) {
                        print_error("'%s' refused (%d)\n", row->in, r);
                        fail();
                }
                {
                        _cleanup_free_ uint8_t *got = out;
                        _cleanup_free_ char *back = NULL;
                        size_t want_len = row->out_len ?: strlen(row->out);

                        assert_int_equal(k, want_len);
                        assert_memory_equal(got, row->out, k);
                        /* NUL-terminated, for callers that treat it as text. */
                        assert_int_equal(got[k], 0);
                        /* One spelling per value: encoding gives the input back. */
                        back = encode(got, k);
                        assert_non_null(back);
                        assert_string_equal(back, row->in);
                }
        }
}

static void test_standard(_unused_ void **state) {
        static const Row rows[] = {
                { "", 0, "", 0 },
                { "YQ==", 0, "a", 0 },
                { "YWI=", 0, "ab", 0 },
                { "YWJj", 0, "abc", 0 },
                { "YWJjZA==", 0, "abcd", 0 },
                { "+/+/", 0, "\xfb\xff\xbf", 0 },
                { "AAAA", 0, "\0\0\0", 3 },
                { "AA==", 0, "\0", 1 },
                { "aGVsbG8K", 0, "hello\n", 0 },
                /* not a multiple of 4 */
                { "YQ=", 0, NULL, 0 },
                { "YQ", 0, NULL, 0 },
                { "Y", 0, NULL, 0 },
                { "YWJjZ", 0, NULL, 0 },
                /* padding where it does not belong */
                { "====", 0, NULL, 0 },
                { "Y===", 0, NULL, 0 },
                { "YQ==YQ==", 0, NULL, 0 },
                { "YW=j", 0, NULL, 0 },
                { "=YWJ", 0, NULL, 0 },
                /* not the alphabet */
                { "YWJ\n", 0, NULL, 0 },
                { "YW J", 0, NULL, 0 },
                { "-_==", 0, NULL, 0 },
                { "YW\0j", 4, NULL, 0 },
                { "YWJ\xc3", 0, NULL, 0 },
                /* stray bits in a short last group */
                { "YR==", 0, NULL, 0 },
                { "YWK=", 0, NULL, 0 },
        };

        check_rows(rows, ELEMENTSOF(rows), base64_decode, base64_encode);
}

static void test_url(_unused_ void **state) {
        static const Row rows[] = {
                { "", 0, "", 0 },
                { "YQ", 0, "a", 0 },
                { "YWI", 0, "ab", 0 },
                { "YWJj", 0, "abc", 0 },
                { "-_-_", 0, "\xfb\xff\xbf", 0 },
                { "Yzo0Mjpl", 0, "c:42:e", 0 },
                { "AA", 0, "\0", 1 },
                /* padding is not part of this form */
                { "YQ==", 0, NULL, 0 },
                { "YWI=", 0, NULL, 0 },
                /* impossible lengths */
                { "Y", 0, NULL, 0 },
                { "YWJjZ", 0, NULL, 0 },
                /* the standard alphabet's two characters, whitespace, NUL */
                { "+/+/", 0, NULL, 0 },
                { "YW J", 0, NULL, 0 },
                { "YQ\0", 3, NULL, 0 },
                /* stray bits */
                { "YR", 0, NULL, 0 },
                { "YWK", 0, NULL, 0 },
        };

        check_rows(rows, ELEMENTSOF(rows), base64url_decode, base64url_encode);
}

/* Every length from 0 to 64 and every byte value: encode, decode, compare, in both forms. */
static void test_round_trip(_unused_ void **state) {
        uint8_t data[64];

        for (size_t i = 0; i < sizeof(data); i++)
                data[i] = (uint8_t) (i * 37 + 255);
        for (size_t len = 0; len <= sizeof(data); len++)
                for (int url = 0; url <= 1; url++) {
                        _cleanup_free_ char *s = url ? base64url_encode(data, len) : base64_encode(data, len);
                        _cleanup_free_ uint8_t *back = NULL;
                        size_t n = 0;

                        assert_non_null(s);
                        assert_int_equal(strlen(s), url ? (len * 4 + 2) / 3 : (len + 2) / 3 * 4);
                        assert_int_equal((url ? base64url_decode : base64_decode)(s, strlen(s), &back, &n), 0);
                        assert_int_equal(n, len);
                        assert_memory_equal(back, data, len);
                }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_standard),
                cmocka_unit_test(test_url),
                cmocka_unit_test(test_round_trip),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

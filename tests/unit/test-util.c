/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cmocka.h>

#include "util.h"

static void test_safe_atou64(_unused_ void **state) {
        static const struct {
                const char *s;
                int ret;
                uint64_t v;
        } rows[] = {
                { "0",                     0,       0 },
                { "1",                     0,       1 },
                { "007",                   0,       7 },
                { "4096",                  0,       4096 },
                { "18446744073709551615",  0,       UINT64_MAX },
                { "18446744073709551616",  -ERANGE, 0 },
                { "99999999999999999999999", -ERANGE, 0 },
                { NULL,                    -EINVAL, 0 },
                { "",                      -EINVAL, 0 },
                { "-1",                    -EINVAL, 0 },
                { "-0",                    -EINVAL, 0 },
                { "+1",                    -EINVAL, 0 },
                { " 1",                    -EINVAL, 0 },
                { "1 ",                    -EINVAL, 0 },
                { "1\n",                   -EINVAL, 0 },
                { "12a",                   -EINVAL, 0 },
                { "0x10",                  -EINVAL, 0 },
                { "abc",                   -EINVAL, 0 },
                { "1.5",                   -EINVAL, 0 },
        };

        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                uint64_t v = 0xdeadbeef;
                int r = safe_atou64(rows[i].s, &v);

                if (r != rows[i].ret || (r == 0 && v != rows[i].v)) {
                        print_error("safe_atou64(\"%s\") = %d, %llu\n", strna(rows[i].s), r,
                                    (unsigned long long) v);
                        fail();
                }
                /* On failure the output is left alone. */
                if (r < 0)
                        assert_int_equal(v, 0xdeadbeef);
        }
}

static void test_safe_atoi(_unused_ void **state) {
        static const struct {
                const char *s;
                int ret;
                int v;
        } rows[] = {
                { "0",            0,       0 },
                { "-1",           0,       -1 },
                { "42",           0,       42 },
                { "-0",           0,       0 },
                { "2147483647",   0,       INT32_MAX },
                { "-2147483648",  0,       INT32_MIN },
                { "2147483648",   -ERANGE, 0 },
                { "-2147483649",  -ERANGE, 0 },
                { "99999999999999999999", -ERANGE, 0 },
                { NULL,           -EINVAL, 0 },
                { "",             -EINVAL, 0 },
                { " 1",           -EINVAL, 0 },
                { "1 ",           -EINVAL, 0 },
                { "-",            -EINVAL, 0 },
                { "1x",           -EINVAL, 0 },
                { "x1",           -EINVAL, 0 },
                { "0x10",         -EINVAL, 0 },
        };

        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                int v = 0x5a5a;
                int r = safe_atoi(rows[i].s, &v);

                if (r != rows[i].ret || (r == 0 && v != rows[i].v)) {
                        print_error("safe_atoi(\"%s\") = %d, %d\n", strna(rows[i].s), r, v);
                        fail();
                }
                if (r < 0)
                        assert_int_equal(v, 0x5a5a);
        }
}

static void test_id_is_valid(_unused_ void **state) {
        static const struct {
                const char *s;
                size_t max;
                bool valid;
        } rows[] = {
                { "a",                          64, true },
                { "exec_20240101_0123456789abcdef", 64, true },
                { "My.Session-1_x",             64, true },
                { "a.",                         64, true },
                { "a-",                         64, true },
                { "_a",                         64, true },
                { "0",                          64, true },
                { "abcd",                       4,  true },  /* exactly max */
                { "abcde",                      4,  false }, /* max + 1 */
                { NULL,                         64, false },
                { "",                           64, false },
                { ".",                          64, false },
                { "..",                         64, false },
                { ".hidden",                    64, false },
                { "-rf",                        64, false },
                { "a/b",                        64, false },
                { "../x",                       64, false },
                { "a b",                        64, false },
                { "a\nb",                       64, false },
                { "a\\x2d",                     64, false },
                { "a@b",                        64, false },
                { "a:b",                        64, false },
                { "caf\xc3\xa9",                64, false },
                { "a*",                         64, false },
        };

        for (size_t i = 0; i < ELEMENTSOF(rows); i++)
                if (id_is_valid(rows[i].s, rows[i].max) != rows[i].valid) {
                        print_error("id_is_valid(\"%s\", %zu) should be %s\n", strna(rows[i].s), rows[i].max,
                                    rows[i].valid ? "true" : "false");
                        fail();
                }
}

static void test_hex(_unused_ void **state) {
        static const struct {
                const char *s;
                size_t n;
                bool valid;
        } rows[] = {
                { "", 0, true },
                { "00ff", 4, true },
                { "0123456789abcdef", 16, true },
                { "00FF", 4, false },           /* upper case is not ours */
                { "00ff", 3, false },           /* longer than n */
                { "00f", 4, false },            /* shorter */
                { "00fg", 4, false },
                { "00 f", 4, false },
                { "-0ff", 4, false },
        };
        const uint8_t bytes[] = { 0x00, 0x01, 0x7f, 0x80, 0xab, 0xff };
        char out[2 * sizeof(bytes) + 1];

        for (size_t i = 0; i < ELEMENTSOF(rows); i++)
                if (is_lower_hex(rows[i].s, rows[i].n) != rows[i].valid) {
                        print_error("is_lower_hex(\"%s\", %zu) should be %s\n", rows[i].s, rows[i].n,
                                    rows[i].valid ? "true" : "false");
                        fail();
                }
        assert_false(is_lower_hex(NULL, 0));

        memset(out, 'x', sizeof(out));
        hexmem(bytes, sizeof(bytes), out);
        assert_string_equal(out, "00017f80abff");
        hexmem(bytes, 0, out);
        assert_string_equal(out, "");

        for (int c = 0; c < 256; c++) {
                int want = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 :
                           c >= 'A' && c <= 'F' ? c - 'A' + 10 : -EINVAL;
                assert_int_equal(unhexchar((char) c), want);
        }

        /* unhexmem(): pairs of either case; an odd length or a non-digit anywhere is -EINVAL. */
        {
                uint8_t got[8];

                assert_int_equal(unhexmem("00017f80ABff", 12, got), 0);
                assert_memory_equal(got, bytes, sizeof(bytes));
                assert_int_equal(unhexmem("", 0, got), 0);
                assert_int_equal(unhexmem("abc", 3, got), -EINVAL);
                assert_int_equal(unhexmem("0g", 2, got), -EINVAL);
                assert_int_equal(unhexmem("00 1", 4, got), -EINVAL);
                assert_int_equal(unhexmem("0a0", 2, got), 0);       /* only len digits are read */
                assert_int_equal(got[0], 0x0a);
        }
        /* memmem_token(): whole words where the token's edges are word characters. */
        {
                static const struct {
                        const char *text, *token;
                        bool prefix, want;
                } token_rows[] = {
                        { "import numpy", "numpy", false, true },
                        { "import numpyx", "numpy", false, false },
                        { "my_numpy = 1", "numpy", false, false },
                        { "numpy", "numpy", false, true },
                        { "x.numpy.y", "numpy", false, true },
                        { "os.execv(p)", "os.exec", true, true },
                        { "os.execv(p)", "os.exec", false, false },
                        { "pos.exec", "os.exec", true, false },
                        { "a = `id`", "`", false, true },
                        { "x.load(1)", ".load", false, true },
                        { "x.loads(1)", ".load", false, false },
                        { "numpy", "", false, false },
                        { "num", "numpy", false, false },
                };
                for (size_t i = 0; i < ELEMENTSOF(token_rows); i++)
                        if (memmem_token(token_rows[i].text, strlen(token_rows[i].text), token_rows[i].token, strlen(token_rows[i].token),
                                         token_rows[i].prefix) != token_rows[i].want)
                                fail_msg("memmem_token row %zu (%s in %s)", i, token_rows[i].token, token_rows[i].text);
                /* NULs inside the text do not end it; len does. */
                assert_true(memmem_token("a\0 numpy", 8, "numpy", 5, false));
                assert_false(memmem_token("a\0 numpy", 7, "numpy", 5, false));
                assert_false(memmem_token(NULL, 0, "numpy", 5, false));
        }
}

static void test_id_generate(_unused_ void **state) {
        char a[64], b[64], today[16], before[16], after[16];
        struct tm tm;
        time_t t;

        t = time(NULL);
        assert_non_null(gmtime_r(&t, &tm));
        strftime(before, sizeof(before), "%Y%m%d", &tm);
        assert_int_equal(id_generate(a, sizeof(a), "exec"), 0);
        assert_int_equal(id_generate(b, sizeof(b), "exec"), 0);
        t = time(NULL);
        assert_non_null(gmtime_r(&t, &tm));
        strftime(after, sizeof(after), "%Y%m%d", &tm);

        /* exec_YYYYMMDD_<16 lowercase hex> */
        assert_int_equal(strlen(a), 4 + 1 + 8 + 1 + 16);
        assert_true(startswith(a, "exec_"));
        assert_int_equal(a[13], '_');
        memcpy(today, a + 5, 8);
        today[8] = 0;
        assert_true(streq(today, before) || streq(today, after));
        assert_true(is_lower_hex(a + 14, 16));
        assert_true(id_is_valid(a, 64));

        /* 64 random bits: two ids colliding means the randomness is broken. */
        assert_string_not_equal(a, b);

        /* 30 characters need 31 bytes. */
        assert_int_equal(id_generate(a, 31, "exec"), 0);
        assert_int_equal(strlen(a), 30);
        assert_int_equal(id_generate(a, 30, "exec"), -ENOBUFS);

        assert_int_equal(id_generate(a, sizeof(a), "sess"), 0);
        assert_true(startswith(a, "sess_"));
        assert_int_equal(strlen(a), 30);
}

static void test_free_and_strdup(_unused_ void **state) {
        _cleanup_free_ char *s = NULL;

        assert_int_equal(free_and_strdup(&s, "one"), 0);
        assert_string_equal(s, "one");
        assert_int_equal(free_and_strdup(&s, "two"), 0);
        assert_string_equal(s, "two");
        assert_int_equal(free_and_strdup(&s, NULL), 0);
        assert_null(s);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_safe_atou64),
                cmocka_unit_test(test_safe_atoi),
                cmocka_unit_test(test_id_is_valid),
                cmocka_unit_test(test_hex),
                cmocka_unit_test(test_id_generate),
                cmocka_unit_test(test_free_and_strdup),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

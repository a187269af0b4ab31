/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "strv.h"

/* Build a strv from a "|"-separated description ("" → the empty list, NULL → NULL). */
static char **make(const char *desc) {
        _cleanup_free_ char *copy = NULL;
        char **l = NULL, *save = NULL;
        size_t n = 0;

        if (!desc)
                return NULL;
        copy = strdup(desc);
        assert_non_null(copy);
        l = calloc(1, sizeof(char *));
        assert_non_null(l);
        for (char *w = strtok_r(copy, "|", &save); w; w = strtok_r(NULL, "|", &save))
                assert_int_equal(strv_extend(&l, &n, w), 0);
        return l;
}

static void test_length_and_extend(_unused_ void **state) {
        static const struct {
                const char *desc;
                size_t n;
        } rows[] = {
                { NULL, 0 },
                { "", 0 },
                { "a", 1 },
                { "a|b", 2 },
                { "a|b|c|d|e|f|g|h|i|j", 10 },
        };

        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                _cleanup_strv_free_ char **l = make(rows[i].desc);
                size_t n = strv_length(l);

                assert_int_equal(n, rows[i].n);
                /* With and without a count, the new entry is a copy at the end, and the list stays
                 * NULL-terminated. */
                {
                        char s[] = "new";

                        assert_int_equal(strv_extend(&l, &n, s), 0);
                        s[0] = 'X';
                        assert_int_equal(n, rows[i].n + 1);
                        assert_string_equal(l[n - 1], "new");
                        assert_null(l[n]);
                        assert_int_equal(strv_extend(&l, NULL, "last"), 0);
                        assert_int_equal(strv_length(l), rows[i].n + 2);
                        assert_string_equal(l[rows[i].n + 1], "last");
                        assert_null(l[rows[i].n + 2]);
                }
        }
}

static void test_equal_contains(_unused_ void **state) {
        static const struct {
                const char *a, *b;
                bool equal;
        } rows[] = {
                { NULL, NULL, true },
                { NULL, "", true },
                { "", "", true },
                { "a", "a", true },
                { "a|b", "a|b", true },
                { "a|b", "b|a", false },
                { "a", "a|b", false },
                { "a|b", "a", false },
                { NULL, "a", false },
                { "a", "", false },
                { "ab", "a|b", false },
        };

        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                _cleanup_strv_free_ char **a = make(rows[i].a), **b = make(rows[i].b);

                if (strv_equal(a, b) != rows[i].equal || strv_equal(b, a) != rows[i].equal) {
                        print_error("strv_equal('%s', '%s') != %d\n", strna(rows[i].a), strna(rows[i].b),
                                    rows[i].equal);
                        fail();
                }
        }

        {
                _cleanup_strv_free_ char **l = make("x|yy|z");

                assert_true(strv_contains(l, "x"));
                assert_true(strv_contains(l, "yy"));
                assert_true(strv_contains(l, "z"));
                assert_false(strv_contains(l, "y"));
                assert_false(strv_contains(l, ""));
                assert_false(strv_contains(NULL, "x"));
        }
}

static void test_sort(_unused_ void **state) {
        static const struct {
                const char *in, *out;
        } rows[] = {
                { NULL, NULL },
                { "", "" },
                { "a", "a" },
                { "b|a", "a|b" },
                { "20-x.conf|10-y.conf|10-a.conf|9.conf", "10-a.conf|10-y.conf|20-x.conf|9.conf" },
                { "B|a|A|b", "A|B|a|b" },
        };

        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                _cleanup_strv_free_ char **l = make(rows[i].in), **want = make(rows[i].out);

                strv_sort(l);
                if (!strv_equal(l, want)) {
                        print_error("sorting '%s' did not give '%s'\n", strna(rows[i].in), strna(rows[i].out));
                        fail();
                }
        }
}

static void test_free_lists(_unused_ void **state) {
        char **l = make("a|b|c");

        assert_null(strv_free(NULL));
        assert_null(strv_free(l));
        /* A list with holes (entries taken): every remaining one is freed (ASan/valgrind would see a
         * leak otherwise), none twice. */
        l = make("a|b|c|d");
        free(l[1]);
        l[1] = NULL;
        free(l[3]);
        l[3] = NULL;
        assert_null(strv_free_n(l, 4));
        assert_null(strv_free_n(NULL, 3));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_length_and_extend),
                cmocka_unit_test(test_equal_contains),
                cmocka_unit_test(test_sort),
                cmocka_unit_test(test_free_lists),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

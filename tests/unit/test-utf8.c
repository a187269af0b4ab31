/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "utf8.h"
#include "util.h"

#define FFFD "\xef\xbf\xbd"

typedef struct Utf8Row {
        const char *name;
        const char *in;
        size_t len;
        const char *out;
} Utf8Row;

/* len from the literal, so embedded NULs count */
#define ROW(name, in, out) { name, in, sizeof(in) - 1, out }

/* One U+FFFD per maximal ill-formed subpart (Unicode 15, §3.9 "U+FFFD Substitution of Maximal
 * Subparts"): a truncated but so-far-valid prefix is one replacement; a byte that can never start
 * or continue a valid sequence is one replacement on its own. */
static const Utf8Row rows[] = {
        ROW("empty", "", ""),
        ROW("ascii", "hello, world\n\t~", "hello, world\n\t~"),
        ROW("2-byte", "h\xc3\xa9llo", "h\xc3\xa9llo"),
        ROW("3-byte euro", "\xe2\x82\xac", "\xe2\x82\xac"),
        ROW("4-byte emoji", "\xf0\x9f\x98\x80", "\xf0\x9f\x98\x80"),
        ROW("U+0080 lowest 2-byte", "\xc2\x80", "\xc2\x80"),
        ROW("U+07FF", "\xdf\xbf", "\xdf\xbf"),
        ROW("U+0800 lowest 3-byte", "\xe0\xa0\x80", "\xe0\xa0\x80"),
        ROW("U+D7FF before surrogates", "\xed\x9f\xbf", "\xed\x9f\xbf"),
        ROW("U+E000 after surrogates", "\xee\x80\x80", "\xee\x80\x80"),
        ROW("U+FFFF", "\xef\xbf\xbf", "\xef\xbf\xbf"),
        ROW("U+10000 lowest 4-byte", "\xf0\x90\x80\x80", "\xf0\x90\x80\x80"),
        ROW("U+10FFFF highest", "\xf4\x8f\xbf\xbf", "\xf4\x8f\xbf\xbf"),
        ROW("U+FFFD itself", FFFD, FFFD),
        ROW("DEL and controls", "\x7f\x01\x1b", "\x7f\x01\x1b"),

        ROW("NUL", "\0", FFFD),
        ROW("NUL inside", "a\0b", "a" FFFD "b"),
        ROW("NUL at the end", "ab\0", "ab" FFFD),
        ROW("NULs", "\0\0", FFFD FFFD),
        ROW("lone continuation", "\x80", FFFD),
        ROW("continuation run", "\x80\xbf\x80", FFFD FFFD FFFD),
        ROW("continuation inside", "a\x80z", "a" FFFD "z"),
        ROW("overlong '/' 2-byte", "\xc0\xaf", FFFD FFFD),
        ROW("overlong NUL 2-byte", "\xc0\x80", FFFD FFFD),
        ROW("overlong C1", "\xc1\xbf", FFFD FFFD),
        ROW("overlong '/' 3-byte", "\xe0\x80\xaf", FFFD FFFD FFFD),
        ROW("overlong U+07FF 3-byte", "\xe0\x9f\xbf", FFFD FFFD FFFD),
        ROW("overlong '/' 4-byte", "\xf0\x80\x80\xaf", FFFD FFFD FFFD FFFD),
        ROW("overlong U+FFFF 4-byte", "\xf0\x8f\xbf\xbf", FFFD FFFD FFFD FFFD),
        ROW("surrogate D800", "\xed\xa0\x80", FFFD FFFD FFFD),
        ROW("surrogate DFFF", "\xed\xbf\xbf", FFFD FFFD FFFD),
        ROW("surrogate pair (CESU-8)", "\xed\xa0\xbd\xed\xb8\x80", FFFD FFFD FFFD FFFD FFFD FFFD),
        ROW("U+110000", "\xf4\x90\x80\x80", FFFD FFFD FFFD FFFD),
        ROW("F5 lead", "\xf5\x80\x80\x80", FFFD FFFD FFFD FFFD),
        ROW("F8 5-byte form", "\xf8\x88\x80\x80\x80", FFFD FFFD FFFD FFFD FFFD),
        ROW("FE FF", "\xfe\xff", FFFD FFFD),
        ROW("truncated 2-byte at end", "a\xc3", "a" FFFD),
        ROW("truncated 3-byte at end", "a\xe2\x82", "a" FFFD),
        ROW("truncated 4-byte at end", "a\xf0\x9f\x98", "a" FFFD),
        ROW("lone 4-byte lead at end", "\xf0", FFFD),
        ROW("truncated then ascii", "\xe2\x82z", FFFD "z"),
        ROW("truncated then valid", "\xf0\x9f\x98\xe2\x82\xac", FFFD "\xe2\x82\xac"),
        ROW("truncated then NUL", "\xe2\x82\0", FFFD FFFD),
        ROW("bad second byte", "\xe2\x28\xa1", FFFD "(" FFFD),
        ROW("bad third byte", "\xe2\x82\x28", FFFD "("),
        ROW("bad fourth byte", "\xf0\x9f\x98\x28", FFFD "("),
        ROW("lead followed by lead", "\xc3\xc3\xa9", FFFD "\xc3\xa9"),
        ROW("valid around invalid", "\xc3\xa9\xff\xc3\xa9", "\xc3\xa9" FFFD "\xc3\xa9"),
};

static void test_row(void **state) {
        const Utf8Row *row = *state;
        _cleanup_free_ char *s = NULL;
        size_t n = SIZE_MAX;
        bool valid = streq(row->in, row->out) && strlen(row->in) == row->len;

        s = utf8_sanitize(row->in, row->len, &n);
        assert_non_null(s);
        assert_string_equal(s, row->out);
        assert_int_equal(n, strlen(row->out));
        assert_true(utf8_is_valid(s, n));
        assert_int_equal(utf8_is_valid(row->in, row->len), valid);
}

/* An independent, obviously-correct decoder to check the validator against exhaustively. */
static bool reference_valid(const uint8_t *p, size_t n) {
        uint32_t cp;
        size_t len;

        if (n == 0)
                return true;
        if (p[0] == 0)
                return false;
        if (p[0] < 0x80)
                len = 1, cp = p[0];
        else if ((p[0] & 0xe0) == 0xc0)
                len = 2, cp = p[0] & 0x1f;
        else if ((p[0] & 0xf0) == 0xe0)
                len = 3, cp = p[0] & 0x0f;
        else if ((p[0] & 0xf8) == 0xf0)
                len = 4, cp = p[0] & 0x07;
        else
                return false;
        if (len > n)
                return false;
        for (size_t i = 1; i < len; i++) {
                if ((p[i] & 0xc0) != 0x80)
                        return false;
                cp = (cp << 6) | (p[i] & 0x3f);
        }
        if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000))
                return false;
        if ((cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
                return false;
        return reference_valid(p + len, n - len);
}

static void check_against_reference(const uint8_t *b, size_t n) {
        bool want = reference_valid(b, n);

        if (utf8_is_valid(b, n) != want) {
                print_error("%02x %02x %02x %02x (n=%zu): expected %s\n", b[0], n > 1 ? b[1] : 0,
                            n > 2 ? b[2] : 0, n > 3 ? b[3] : 0, n, want ? "valid" : "invalid");
                fail();
        }
}

static void test_exhaustive_short(_unused_ void **state) {
        uint8_t b[4];

        /* Every 1-, 2- and 3-byte string; 4-byte strings for every lead byte from F0 on with every
         * second byte, the rest fixed to a continuation or not (that is where validity is
         * decided). */
        for (unsigned a = 0; a < 256; a++) {
                b[0] = (uint8_t) a;
                check_against_reference(b, 1);
                for (unsigned c = 0; c < 256; c++) {
                        b[1] = (uint8_t) c;
                        check_against_reference(b, 2);
                        for (unsigned d = 0; d < 256; d++) {
                                b[2] = (uint8_t) d;
                                check_against_reference(b, 3);
                        }
                }
        }
        for (unsigned a = 0xf0; a < 256; a++)
                for (unsigned c = 0; c < 256; c++)
                        for (unsigned d = 0; d < 4; d++) {
                                static const uint8_t tails[4][2] = {
                                        { 0x80, 0x80 }, { 0xbf, 0xbf }, { 0x80, 0x41 }, { 0xc0, 0x80 },
                                };
                                b[0] = (uint8_t) a;
                                b[1] = (uint8_t) c;
                                b[2] = tails[d][0];
                                b[3] = tails[d][1];
                                check_against_reference(b, 4);
                        }
}

/* Every code point, encoded by hand, is valid and passes through unchanged; every surrogate is not. */
static void test_all_code_points(_unused_ void **state) {
        for (uint32_t cp = 1; cp <= 0x10ffff; cp++) {
                uint8_t b[4];
                size_t n;
                char *s;

                if (cp < 0x80)
                        b[0] = (uint8_t) cp, n = 1;
                else if (cp < 0x800)
                        b[0] = (uint8_t) (0xc0 | cp >> 6), b[1] = (uint8_t) (0x80 | (cp & 0x3f)), n = 2;
                else if (cp < 0x10000)
                        b[0] = (uint8_t) (0xe0 | cp >> 12), b[1] = (uint8_t) (0x80 | ((cp >> 6) & 0x3f)),
                        b[2] = (uint8_t) (0x80 | (cp & 0x3f)), n = 3;
                else
                        b[0] = (uint8_t) (0xf0 | cp >> 18), b[1] = (uint8_t) (0x80 | ((cp >> 12) & 0x3f)),
                        b[2] = (uint8_t) (0x80 | ((cp >> 6) & 0x3f)), b[3] = (uint8_t) (0x80 | (cp & 0x3f)),
                        n = 4;

                if (cp >= 0xd800 && cp <= 0xdfff) {
                        assert_false(utf8_is_valid(b, n));
                        continue;
                }
                if (!utf8_is_valid(b, n)) {
                        print_error("U+%04X rejected\n", cp);
                        fail();
                }
                s = utf8_sanitize(b, n, NULL);
                assert_non_null(s);
                assert_memory_equal(s, b, n);
                assert_int_equal(s[n], 0);
                free(s);
        }
}

/* Garbage in, valid out: random bytes always sanitize to valid UTF-8 with no NUL inside, no longer
 * than 3 bytes per input byte, and sanitizing twice changes nothing. */
static void test_random_garbage(_unused_ void **state) {
        uint32_t x = 2463534242U;
        uint8_t buf[1024];

        for (int round = 0; round < 5000; round++) {
                _cleanup_free_ char *s = NULL, *t = NULL;
                size_t n, sn = 0, tn = 0;

                x ^= x << 13, x ^= x >> 17, x ^= x << 5;
                n = x % sizeof(buf);
                for (size_t i = 0; i < n; i++) {
                        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
                        /* Bias towards the interesting bytes: leads, continuations, NUL. */
                        buf[i] = (uint8_t) (round % 3 == 0 ? x : (x & 1 ? 0x80 | (x >> 8 & 0x7f) : x >> 8));
                }
                s = utf8_sanitize(buf, n, &sn);
                assert_non_null(s);
                assert_int_equal(strlen(s), sn);
                assert_true(sn <= 3 * n);
                assert_true(utf8_is_valid(s, sn));
                assert_true(reference_valid((const uint8_t *) s, sn));
                if (utf8_is_valid(buf, n))
                        assert_memory_equal(s, buf, n);
                t = utf8_sanitize(s, sn, &tn);
                assert_non_null(t);
                assert_int_equal(tn, sn);
                assert_memory_equal(t, s, sn);
        }
}

/* Pathological inputs (all leads, all truncated sequences) at 32 MiB: one pass, no blow-up. */
static void test_large_pathological(_unused_ void **state) {
        static const char *const patterns[] = { "\xf0", "\xe2\x82", "\x80", "\0", "\xf4\x8f\xbf" };
        const size_t n = 32 * 1024 * 1024;
        _cleanup_free_ uint8_t *buf = malloc(n);

        assert_non_null(buf);
        for (size_t p = 0; p < ELEMENTSOF(patterns); p++) {
                size_t pl = strlen(patterns[p]) ?: 1, sn = 0, k;
                _cleanup_free_ char *s = NULL;

                for (size_t i = 0; i < n; i++)
                        buf[i] = (uint8_t) patterns[p][i % pl];
                s = utf8_sanitize(buf, n, &sn);
                assert_non_null(s);
                /* Each whole pattern is one maximal subpart; a cut-off one at the end also is. */
                k = n / pl + (n % pl ? 1 : 0);
                assert_int_equal(sn, 3 * k);
                assert_false(utf8_is_valid(buf, n));
        }
}

static void test_null_and_optional_len(_unused_ void **state) {
        _cleanup_free_ char *a = NULL, *b = NULL;

        a = utf8_sanitize(NULL, 0, NULL);
        assert_non_null(a);
        assert_string_equal(a, "");
        assert_true(utf8_is_valid(NULL, 0));
        b = utf8_sanitize("x\xff", 2, NULL);
        assert_string_equal(b, "x" FFFD);
}

/* ---- budgets: the weight of the rendered text (utf8.h) ---- */

typedef struct FitRow {
        const char *in;
        size_t len;
        size_t max;
        size_t prefix, prefix_weight;   /* utf8_fit_prefix(): bytes of in, weight */
        size_t suffix, suffix_weight;   /* utf8_fit_suffix(): offset in in, weight */
} FitRow;

#define FIT(in, max, p, pw, s, sw) { in, sizeof(in) - 1, max, p, pw, s, sw }

static void test_fit(_unused_ void **state) {
        static const FitRow fit_rows[] = {
                FIT("", 0, 0, 0, 0, 0),
                FIT("", 5, 0, 0, 0, 0),
                FIT("abc", 0, 0, 0, 3, 0),
                FIT("abc", 2, 2, 2, 1, 2),
                FIT("abc", 3, 3, 3, 0, 3),
                FIT("abc", 99, 3, 3, 0, 3),
                /* All invalid: each byte is one U+FFFD of weight 3. */
                FIT("\xff\xff\xff", 8, 2, 6, 1, 6),
                FIT("\xff\xff\xff", 9, 3, 9, 0, 9),
                FIT("\xff", 2, 0, 0, 1, 0),
                /* A maximal subpart is one U+FFFD whatever its length: 3 bytes taken for weight 3. */
                FIT("\xf0\x9f\x98" "a", 3, 3, 3, 3, 1),
                FIT("\xf0\x9f\x98" "a", 4, 4, 4, 0, 4),
                /* NUL is U+FFFD too. */
                FIT("a\0b", 3, 1, 1, 2, 1),
                FIT("a\0b", 4, 2, 4, 1, 4),
                /* Control characters JSON writes as \u00XX weigh 3, not 1 ... */
                FIT("\x01\x01\x01", 6, 2, 6, 1, 6),
                FIT("\x1b[m", 3, 1, 3, 1, 2),
                FIT("\x1f", 2, 0, 0, 1, 0),
                /* ... those it writes in two bytes weigh 1, as do DEL and '"', '\\', '/'. */
                FIT("\b\t\n\f\r\x7f\"\\/", 9, 9, 9, 0, 9),
                /* Multi-byte characters are never split. */
                FIT("\xf0\x9f\x98\x80\xf0\x9f\x98\x80", 7, 4, 4, 4, 4),
                FIT("\xf0\x9f\x98\x80\xf0\x9f\x98\x80", 3, 0, 0, 8, 0),
                FIT("\xc3\xa9\xc3\xa9\xc3\xa9", 5, 4, 4, 2, 4),
                FIT("a\xe2\x82\xac" "b", 3, 1, 1, 4, 1),
                FIT("a\xe2\x82\xac" "b", 4, 4, 4, 1, 4),
                /* Stray continuation bytes read from the start: each its own U+FFFD. */
                FIT("\x80\x80\x80\x80", 6, 2, 6, 2, 6),
                /* Mixed. */
                FIT("A\xff\x01\xc3\xa9" "Z", 7, 3, 7, 2, 6),
        };

        for (size_t i = 0; i < ELEMENTSOF(fit_rows); i++) {
                const FitRow *r = &fit_rows[i];
                size_t pw = SIZE_MAX, sw = SIZE_MAX, p, o;

                p = utf8_fit_prefix(r->in, r->len, r->max, &pw);
                o = utf8_fit_suffix(r->in, r->len, r->max, &sw);
                if (p != r->prefix || pw != r->prefix_weight || o != r->suffix || sw != r->suffix_weight) {
                        print_error("row %zu (max %zu): prefix %zu weight %zu, suffix at %zu weight %zu\n", i,
                                    r->max, p, pw, o, sw);
                        fail();
                }
                /* The weight bounds the bytes of the rendered piece. */
                assert_true(utf8_sanitize_to(r->in, p, NULL) <= pw);
                assert_true(utf8_sanitize_to(r->in + o, r->len - o, NULL) <= sw);
        }
}

static void test_cut_suffix(_unused_ void **state) {
        static const struct {
                const char *in;
                size_t len, cut;
        } cut_rows[] = {
#define CUT(in, cut) { in, sizeof(in) - 1, cut }
                CUT("", 0),
                CUT("abc", 0),
                CUT("a\xc3", 1),
                CUT("a\xe2", 1),
                CUT("a\xe2\x82", 2),
                CUT("a\xf0", 1),
                CUT("a\xf0\x9f", 2),
                CUT("a\xf0\x9f\x98", 3),
                CUT("\xf0\x9f\x98", 3),
                CUT("a\xf0\x9f\x98\x80", 0),            /* complete */
                CUT("a\xe2\x82\xac", 0),
                CUT("a\xe2\x28", 0),                    /* broken, not cut: the program's */
                CUT("a\xe0\x80", 0),                    /* overlong: broken at its second byte */
                CUT("a\xed\xa0", 0),                    /* surrogate */
                CUT("a\xf4\x90", 0),                    /* above U+10FFFF */
                CUT("a\xc0", 0),                        /* never a lead */
                CUT("a\xf5", 0),
                CUT("a\xff", 0),
                CUT("a\x80", 0),                        /* stray continuation */
                CUT("\x80\x80\x80", 0),
                CUT("\xf0\x80\x80\x80", 0),
                CUT("a\0", 0),
#undef CUT
        };

        for (size_t i = 0; i < ELEMENTSOF(cut_rows); i++)
                if (utf8_cut_suffix(cut_rows[i].in, cut_rows[i].len) != cut_rows[i].cut) {
                        print_error("row %zu: %zu, want %zu\n", i,
                                    utf8_cut_suffix(cut_rows[i].in, cut_rows[i].len), cut_rows[i].cut);
                        fail();
                }
}

/* Every short byte string and every budget: the prefix and the suffix are the longest that fit,
 * end and start where the whole string's characters do, and render to a prefix and a suffix of the
 * whole rendering. */
static void test_fit_exhaustive(_unused_ void **state) {
        static const uint8_t alphabet[] = {
                'a', 0x00, 0x01, '\n', 0x80, 0xa0, 0xbf, 0xc3, 0xe2, 0xed, 0xf0, 0x9f, 0xff,
        };
        uint8_t b[4];

        for (size_t n = 0; n <= 4; n++) {
                size_t combos = 1;

                for (size_t k = 0; k < n; k++)
                        combos *= ELEMENTSOF(alphabet);
                for (size_t c = 0; c < combos; c++) {
                        _cleanup_free_ char *whole = NULL;
                        size_t wlen, v = c, total;

                        for (size_t k = 0; k < n; k++, v /= ELEMENTSOF(alphabet))
                                b[k] = alphabet[v % ELEMENTSOF(alphabet)];
                        whole = utf8_sanitize(b, n, &wlen);
                        assert_non_null(whole);
                        assert_int_equal(utf8_fit_prefix(b, n, SIZE_MAX, &total), n);
                        assert_true(total >= wlen && total <= 3 * n);
                        for (size_t max = 0; max <= total + 1; max++) {
                                size_t pw, sw, p = utf8_fit_prefix(b, n, max, &pw);
                                size_t o = utf8_fit_suffix(b, n, max, &sw);
                                size_t pl = utf8_sanitize_to(b, p, NULL);
                                size_t sl = utf8_sanitize_to(b + o, n - o, NULL);
                                char buf[16];

                                assert_true(pw <= max && sw <= max && pl <= pw && sl <= sw);
                                assert_int_equal(utf8_sanitize_to(b, p, buf), pl);
                                assert_memory_equal(buf, whole, pl);
                                assert_int_equal(utf8_sanitize_to(b + o, n - o, buf), sl);
                                assert_memory_equal(buf, whole + wlen - sl, sl);
                                /* Longest: one more character would not fit. */
                                if (p < n)
                                        assert_int_equal(utf8_fit_prefix(b + p, n - p, max - pw, NULL), 0);
                                if (o > 0)
                                        assert_true(max < total);
                        }
                }
        }
}

int main(void) {
        struct CMUnitTest tests[ELEMENTSOF(rows) + 8];
        size_t i = 0;

        for (size_t k = 0; k < ELEMENTSOF(rows); k++)
                tests[i++] = (struct CMUnitTest) { rows[k].name, test_row, NULL, NULL, (void *) &rows[k] };
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_exhaustive_short);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_all_code_points);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_random_garbage);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_large_pathological);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_null_and_optional_len);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_fit);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_cut_suffix);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_fit_exhaustive);

        return _cmocka_run_group_tests("utf8", tests, i, NULL, NULL);
}

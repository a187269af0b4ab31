/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>

#include <cmocka.h>
#include <json-c/json.h>

#include "capture.h"
#include "utf8.h"
#include "util.h"

static void capture_donep(Capture *c) {
        capture_done(c);
}
#define _cleanup_capture_ _cleanup_(capture_donep)

static char *render(const Capture *c) {
        char *s = NULL;

        assert_int_equal(capture_render(c, &s, NULL), 0);
        assert_non_null(s);
        assert_true(utf8_is_valid(s, strlen(s)));
        return s;
}

static void append_str(Capture *c, const char *s) {
        capture_append(c, s, strlen(s));
}

/* ---- literal cases: the expectations are written out, not computed ---- */

static void test_literal_boundaries(_unused_ void **state) {
        static const struct {
                size_t head, tail;
                const char *in;
                const char *out;
                uint64_t elided;
        } rows[] = {
                { 4, 3, "",            "",                                                  0 },
                { 4, 3, "abc",         "abc",                                               0 }, /* head-1 */
                { 4, 3, "abcd",        "abcd",                                              0 }, /* head */
                { 4, 3, "abcde",       "abcde",                                             0 }, /* head+1 */
                { 4, 3, "abcdefg",     "abcdefg",                                           0 }, /* h+t */
                { 4, 3, "abcdefgh",    "abcd\n[... sandboxd: 1 bytes elided ...]\nfgh",    1 }, /* +1 */
                { 4, 3, "abcdefghij",  "abcd\n[... sandboxd: 3 bytes elided ...]\nhij",    3 },
                { 0, 3, "abc",         "abc",                                               0 },
                { 0, 3, "abcd",        "\n[... sandboxd: 1 bytes elided ...]\nbcd",        1 },
                { 4, 0, "abcd",        "abcd",                                              0 },
                { 4, 0, "abcdef",      "abcd\n[... sandboxd: 2 bytes elided ...]\n",       2 },
                { 0, 0, "",            "",                                                  0 },
                { 0, 0, "hello",       "\n[... sandboxd: 5 bytes elided ...]\n",           5 },
                { 1, 1, "xy",          "xy",                                                0 },
                { 1, 1, "xyz",         "x\n[... sandboxd: 1 bytes elided ...]\nz",         1 },
        };

        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                /* Once in one piece, once byte by byte: the result must not depend on chunking. */
                for (int bytewise = 0; bytewise < 2; bytewise++) {
                        _cleanup_capture_ Capture c = {};
                        _cleanup_free_ char *s = NULL;
                        size_t n = strlen(rows[i].in);

                        assert_int_equal(capture_init(&c, rows[i].head, rows[i].tail), 0);
                        if (bytewise)
                                for (size_t k = 0; k < n; k++)
                                        capture_append(&c, rows[i].in + k, 1);
                        else
                                capture_append(&c, rows[i].in, n);

                        s = render(&c);
                        if (!streq(s, rows[i].out)) {
                                print_error("row %zu (head=%zu tail=%zu \"%s\", %s): got \"%s\"\n", i,
                                            rows[i].head, rows[i].tail, rows[i].in,
                                            bytewise ? "bytewise" : "one chunk", s);
                                fail();
                        }
                        assert_int_equal(capture_elided(&c), rows[i].elided);
                        assert_int_equal(c.total_bytes, n);
                        assert_int_equal(c.head_len, MIN(n, rows[i].head));
                        assert_int_equal(c.head_len + c.tail_len + rows[i].elided, n);
                }
        }
}

/* ---- model-checked streams ---- */

/* A deterministic stream with newlines at irregular places, so off-by-one shifts show. */
static uint8_t stream_byte(uint64_t i) {
        if (i % 37 == 36 || i % 101 == 0)
                return '\n';
        return (uint8_t) ('a' + (i * 7 + i / 26) % 26);
}

static uint64_t stream_lines(uint64_t n) {
        uint64_t lines = 0;

        for (uint64_t i = 0; i < n; i++)
                if (stream_byte(i) == '\n')
                        lines++;
        if (n > 0 && stream_byte(n - 1) != '\n')
                lines++;
        return lines;
}

/* What render must produce for the first n bytes of the stream, built the obvious way. */
static char *expected_render(uint64_t n, size_t head, size_t tail) {
        uint64_t h = MIN(n, (uint64_t) head);
        uint64_t t = MIN(n - h, (uint64_t) tail);
        uint64_t elided = n - h - t;
        char marker[80] = "";
        char *s, *p;

        if (elided > 0)
                snprintf(marker, sizeof(marker), "\n[... sandboxd: %" PRIu64 " bytes elided ...]\n", elided);
        s = malloc(h + strlen(marker) + t + 1);
        assert_non_null(s);
        p = s;
        for (uint64_t i = 0; i < h; i++)
                *p++ = (char) stream_byte(i);
        p = stpcpy(p, marker);
        for (uint64_t i = n - t; i < n; i++)
                *p++ = (char) stream_byte(i);
        *p = 0;
        return s;
}

static void feed_stream(Capture *c, uint64_t n, size_t chunk) {
        uint8_t buf[4096];
        uint64_t i = 0;

        assert_true(chunk > 0 && chunk <= sizeof(buf));
        while (i < n) {
                size_t k = (size_t) MIN((uint64_t) chunk, n - i);

                for (size_t j = 0; j < k; j++)
                        buf[j] = stream_byte(i + j);
                capture_append(c, buf, k);
                i += k;
        }
}

static void test_stream_model(_unused_ void **state) {
        static const struct {
                size_t head, tail;
        } geometries[] = {
                { 16, 8 }, { 8, 16 }, { 1, 1 }, { 0, 8 }, { 8, 0 }, { 0, 0 }, { 100, 37 },
        };
        static const size_t chunks[] = { 1, 2, 3, 7, 8, 9, 15, 16, 17, 64, 4096 };

        for (size_t g = 0; g < ELEMENTSOF(geometries); g++) {
                size_t H = geometries[g].head, T = geometries[g].tail;
                const uint64_t sizes[] = {
                        0, 1, H ? H - 1 : 0, H, H + 1, H + T ? H + T - 1 : 0, H + T, H + T + 1, H + T + 2,
                        H + 2 * T, H + 2 * T + 1, 3 * (H + T) + 5, 1000, 4099,
                };

                for (size_t z = 0; z < ELEMENTSOF(sizes); z++)
                        for (size_t k = 0; k < ELEMENTSOF(chunks); k++) {
                                _cleanup_capture_ Capture c = {};
                                _cleanup_free_ char *got = NULL, *want = NULL;
                                uint64_t n = sizes[z];

                                assert_int_equal(capture_init(&c, H, T), 0);
                                feed_stream(&c, n, chunks[k]);
                                got = render(&c);
                                want = expected_render(n, H, T);
                                if (!streq(got, want)) {
                                        print_error("head=%zu tail=%zu n=%" PRIu64 " chunk=%zu:\n"
                                                    " got \"%s\"\nwant \"%s\"\n", H, T, n, chunks[k], got,
                                                    want);
                                        fail();
                                }
                                assert_int_equal(c.total_bytes, n);
                                assert_int_equal(c.total_lines, stream_lines(n));
                                assert_int_equal(capture_elided(&c), n - MIN(n, H) - MIN(n - MIN(n, H), T));
                        }
        }
}

/* A large stream byte by byte: the ring wraps thousands of times at every offset. */
static void test_stream_bytewise_large(_unused_ void **state) {
        _cleanup_capture_ Capture c = {};
        _cleanup_free_ char *got = NULL, *want = NULL;
        const uint64_t n = 1024 * 1024 + 13;

        assert_int_equal(capture_init(&c, 1000, 777), 0);
        feed_stream(&c, n, 1);
        got = render(&c);
        want = expected_render(n, 1000, 777);
        assert_string_equal(got, want);
        assert_int_equal(c.total_lines, stream_lines(n));
        assert_int_equal(capture_elided(&c), n - 1000 - 777);
}

static long max_rss_kib(void) {
        struct rusage ru;

        assert_int_equal(getrusage(RUSAGE_SELF, &ru), 0);
        return ru.ru_maxrss;
}

/* 1 GiB through the default geometry in 64 KiB chunks: counts exact, memory flat. */
static void test_gigabyte_stream(_unused_ void **state) {
        const size_t chunk = 64 * 1024;
        const uint64_t total = UINT64_C(1) << 30;
        _cleanup_capture_ Capture c = {};
        _cleanup_free_ uint8_t *buf = malloc(chunk);
        _cleanup_free_ char *s = NULL;
        uint64_t lines = 0;
        long rss_before;
        size_t r;

        assert_non_null(buf);
        assert_int_equal(capture_init(&c, CAPTURE_DEFAULT_HEAD, CAPTURE_DEFAULT_TAIL), 0);
        /* Touch everything we own now so that only growth caused by the capture shows later. */
        memset(buf, 'x', chunk);
        memset(c.head, 0, c.head_max);
        memset(c.tail, 0, c.tail_max);
        rss_before = max_rss_kib();

        for (uint64_t i = 0; i < total / chunk; i++) {
                /* Stamp each chunk so the tail can be checked to be the last one; one '\n' at the end
                 * of every 16th chunk keeps the line count nontrivial. */
                memset(buf, 'a' + (int) (i % 26), chunk);
                buf[chunk - 1] = i % 16 == 15 ? '\n' : 'z';
                if (buf[chunk - 1] == '\n')
                        lines++;
                capture_append(&c, buf, chunk);
        }
        /* 16384 chunks: the last one (16383 % 16 == 15) ends in '\n', so no unterminated line. */
        assert_int_equal(buf[chunk - 1], '\n');

        assert_int_equal(c.total_bytes, total);
        assert_int_equal(c.total_lines, lines);
        assert_int_equal(capture_elided(&c), total - CAPTURE_DEFAULT_HEAD - CAPTURE_DEFAULT_TAIL);
        assert_true(max_rss_kib() - rss_before < 4096);

        s = render(&c);
        r = strlen(s);
        /* head: exactly chunk 0, all 'a' but its last byte; tail: exactly the last chunk. */
        assert_int_equal(s[0], 'a');
        assert_int_equal(s[CAPTURE_DEFAULT_HEAD - 2], 'a');
        assert_int_equal(s[CAPTURE_DEFAULT_HEAD - 1], 'z');
        assert_true(startswith(s + CAPTURE_DEFAULT_HEAD, "\n[... sandboxd: 1073610752 bytes elided ...]\n"));
        assert_int_equal(s[r - 1], '\n');
        assert_int_equal(s[r - 2], 'a' + (int) ((total / chunk - 1) % 26));
        assert_int_equal(s[r - CAPTURE_DEFAULT_TAIL], 'a' + (int) ((total / chunk - 1) % 26));
        assert_int_equal(s[r - CAPTURE_DEFAULT_TAIL - 1], '\n');   /* the marker's end */
        assert_int_equal(r, CAPTURE_DEFAULT_HEAD + strlen("\n[... sandboxd: 1073610752 bytes elided ...]\n") +
                         CAPTURE_DEFAULT_TAIL);
}

/* A single append much larger than head + tail. */
static void test_one_huge_append(_unused_ void **state) {
        const uint64_t n = 3 * 1024 * 1024 + 5;
        _cleanup_capture_ Capture c = {};
        _cleanup_free_ uint8_t *buf = malloc(n);
        _cleanup_free_ char *got = NULL, *want = NULL;

        assert_non_null(buf);
        for (uint64_t i = 0; i < n; i++)
                buf[i] = stream_byte(i);
        assert_int_equal(capture_init(&c, 4096, 4095), 0);
        capture_append(&c, buf, 10);   /* partly fill the head first */
        capture_append(&c, buf + 10, n - 10);
        got = render(&c);
        want = expected_render(n, 4096, 4095);
        assert_string_equal(got, want);
        assert_int_equal(c.total_lines, stream_lines(n));
}

/* ---- line counting ---- */

static void test_lines(_unused_ void **state) {
        static const struct {
                const char *pieces[4];
                uint64_t lines;
        } rows[] = {
                { { NULL },                       0 },
                { { "" },                         0 },
                { { "a" },                        1 },
                { { "\n" },                       1 },
                { { "a\n" },                      1 },
                { { "a\nb" },                     2 },
                { { "\n\n" },                     2 },
                { { "a\n\nb\n" },                 3 },
                { { "a", "b" },                   1 },
                { { "a", "\n" },                  1 },
                { { "a\n", "b" },                 2 },
                { { "a", "\n", "b" },             2 },
                { { "a", "", "b" },               1 },
                { { "a\n", "" },                  1 },
                { { "\n", "\n", "\n" },           3 },
                { { "x", "y\nz", "\n" },          2 },
        };

        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                /* Line counting sees every byte, kept or not: a tiny capture counts the same. */
                for (size_t cap = 0; cap < 2; cap++) {
                        _cleanup_capture_ Capture c = {};

                        assert_int_equal(capture_init(&c, cap ? 64 : 0, cap ? 64 : 1), 0);
                        for (size_t k = 0; k < ELEMENTSOF(rows[i].pieces) && rows[i].pieces[k]; k++)
                                append_str(&c, rows[i].pieces[k]);
                        if (c.total_lines != rows[i].lines) {
                                print_error("row %zu: %" PRIu64 " lines, expected %" PRIu64 "\n", i,
                                            c.total_lines, rows[i].lines);
                                fail();
                        }
                }
        }
}

/* ---- UTF-8 in the output ---- */

static void test_invalid_utf8_and_nul(_unused_ void **state) {
#define ROW(h, t, in, out) { h, t, in, sizeof(in) - 1, out }
        static const struct {
                size_t head, tail;
                const char *in;
                size_t len;
                const char *out;
        } rows[] = {
                ROW(64, 64, "a\0b", "a\xef\xbf\xbd" "b"),
                ROW(64, 64, "\xff\xfe", "\xef\xbf\xbd\xef\xbf\xbd"),
                ROW(64, 64, "ok \xc0\xaf overlong", "ok \xef\xbf\xbd\xef\xbf\xbd overlong"),
                ROW(64, 64, "\xed\xa0\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"),
                ROW(64, 64, "cut \xe2\x82", "cut \xef\xbf\xbd"),
                /* A character straddling head and tail with nothing elided stays whole. */
                ROW(2, 4, "a\xe2\x82\xac", "a\xe2\x82\xac"),
                ROW(1, 8, "a\xf0\x9f\x98\x80z", "a\xf0\x9f\x98\x80z"),
                /* Split by the elision: both halves of a cut character go with the elided bytes
                 * (and are counted there) instead of showing as U+FFFD. */
                ROW(2, 2, "a\xe2\x82\xacxy\xe2\x82\xac", "a\n[... sandboxd: 8 bytes elided ...]\n"),
                /* NUL right after the head and right before the end: its U+FFFD weighs 3, all the
                 * tail's budget. */
                ROW(3, 3, "abc\0defg\0", "abc\n[... sandboxd: 5 bytes elided ...]\n\xef\xbf\xbd"),
        };

        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                _cleanup_capture_ Capture c = {};
                _cleanup_free_ char *s = NULL;

                assert_int_equal(capture_init(&c, rows[i].head, rows[i].tail), 0);
                capture_append(&c, rows[i].in, rows[i].len);
                s = render(&c);
                if (!streq(s, rows[i].out)) {
                        print_error("row %zu: got \"%s\"\n", i, s);
                        fail();
                }
        }
#undef ROW
}

/* Random bytes in random chunks: the rendering is always valid UTF-8 and as long as it should be. */
static void test_random_bytes_render_valid(_unused_ void **state) {
        uint32_t x = 0x9e3779b9;

        for (int round = 0; round < 200; round++) {
                _cleanup_capture_ Capture c = {};
                _cleanup_free_ char *s = NULL;
                uint8_t buf[300];
                size_t total = 0;

                assert_int_equal(capture_init(&c, round % 50, (round * 7) % 61), 0);
                for (int k = 0; k < 20; k++) {
                        size_t n;

                        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
                        n = x % sizeof(buf);
                        for (size_t j = 0; j < n; j++) {
                                x ^= x << 13, x ^= x >> 17, x ^= x << 5;
                                buf[j] = (uint8_t) x;
                        }
                        capture_append(&c, buf, n);
                        total += n;
                }
                s = render(&c);   /* asserts validity */
                assert_int_equal(c.total_bytes, total);
                /* However many bytes become U+FFFD: the capture's sizes, plus the marker. */
                assert_true(strlen(s) <= c.head_max + c.tail_max + CAPTURE_MARKER_MAX);
        }
}

/* ---- what is delivered is bounded (issue 12 §6) ---- */

#define FFFD "\xef\xbf\xbd"
#define X10(s) s s s s s s s s s s

/* The text's bytes and its JSON string's bytes (without the quotes), as the HTTP API writes it
 * (no slash escaping) and as D-Bus and callbacks do (json-c's default escapes '/' too). */
static void json_sizes(const char *s, size_t *ret_plain, size_t *ret_slash) {
        json_object *o = json_object_new_string(s);

        assert_non_null(o);
        *ret_plain = strlen(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
                                                                 JSON_C_TO_STRING_NOSLASHESCAPE)) - 2;
        *ret_slash = strlen(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN)) - 2;
        json_object_put(o);
}

static void check_bounds(const Capture *c, const char *s, uint64_t elided) {
        size_t plain, slash;

        assert_true(utf8_is_valid(s, strlen(s)));
        assert_true(strlen(s) <= c->head_max + c->tail_max + (elided > 0 ? CAPTURE_MARKER_MAX : 0));
        json_sizes(s, &plain, &slash);
        assert_true(plain <= 2 * (c->head_max + c->tail_max) + (elided > 0 ? CAPTURE_MARKER_MAX + 2 : 0));
        assert_true(slash <= 2 * (c->head_max + c->tail_max) + (elided > 0 ? CAPTURE_MARKER_MAX + 2 : 0));
}

/* Rows written out: invalid bytes (U+FFFD, 3 bytes), control characters (\u00XX, 6 bytes in JSON,
 * weight 3), 4-byte characters at every edge. */
static void test_render_budget_rows(_unused_ void **state) {
#define ROW(h, t, in, out, e) { h, t, in, sizeof(in) - 1, out, e }
        static const struct {
                size_t head, tail;
                const char *in;
                size_t len;
                const char *out;
                uint64_t elided;
        } rows[] = {
                /* All invalid, more than the capture keeps: one U+FFFD fits each budget of 4. */
                ROW(4, 4, X10("\xff\xff"), FFFD "\n[... sandboxd: 18 bytes elided ...]\n" FFFD, 18),
                /* All invalid, exactly what the capture keeps (nothing dropped there): 24 bytes of
                 * U+FFFD do not fit 8, the middle goes. */
                ROW(4, 4, "\xff\xff\xff\xff\xfe\xfe\xfe\xfe", FFFD "\n[... sandboxd: 6 bytes elided ...]\n" FFFD, 6),
                ROW(6, 6, "\x80\x80\x80\x80", FFFD FFFD FFFD FFFD, 0),          /* 12 fits 12 */
                ROW(6, 5, "\x80\x80\x80\x80", FFFD FFFD "\n[... sandboxd: 1 bytes elided ...]\n" FFFD, 1),
                ROW(0, 0, "\xff", "\n[... sandboxd: 1 bytes elided ...]\n", 1),
                ROW(1, 1, "\xff", "\n[... sandboxd: 1 bytes elided ...]\n", 1),   /* below one U+FFFD */
                ROW(2, 2, "\xff", FFFD, 0),    /* one piece: 3 fits 4 */
                /* Control characters weigh 3 ... */
                ROW(6, 6, X10("\x01\x01"), "\x01\x01\n[... sandboxd: 16 bytes elided ...]\n\x01\x01", 16),
                ROW(6, 6, "\x1b[0m\x1b", "\x1b[0m\x1b", 0),
                /* ... except the ones JSON writes in two bytes, and DEL, which it writes as is. */
                ROW(4, 4, "\n\t\r\b\f\n\t\x7f", "\n\t\r\b\f\n\t\x7f", 0),
                /* Mixed: 'A' U+FFFD \x01 weigh 7, the é after them would make 9 > 8; the tail keeps
                 * \x01 U+FFFD 'Z' (7) of "---é\x01\xffZ". */
                ROW(8, 8, "A\xff\x01\xc3\xa9" "BC" "----------" "\xc3\xa9\x01\xffZ",
                    "A" FFFD "\x01\n[... sandboxd: 16 bytes elided ...]\n\x01" FFFD "Z", 16),
                /* A 4-byte character cut by the capture at the end of the head and at the start of
                 * the tail: both parts go with the elided bytes. */
                ROW(5, 5, "abc\xf0\x9f\x98\x80" "xxxxxxxxxx" "\xf0\x9f\x98\x80yz",
                    "abc\n[... sandboxd: 18 bytes elided ...]\nyz", 18),
                /* Whole 4-byte characters at the edges of head and tail stay. */
                ROW(4, 4, "\xf0\x9f\x98\x80" "xxx" "\xf0\x9f\x98\x80",
                    "\xf0\x9f\x98\x80\n[... sandboxd: 3 bytes elided ...]\n\xf0\x9f\x98\x80", 3),
                /* A 4-byte character that does not fit what is left of a budget is not split. */
                ROW(5, 5, "\x01\xf0\x9f\x98\x80" "\xf0\x9f\x98\x80\x01",
                    "\x01\n[... sandboxd: 8 bytes elided ...]\n\x01", 8),
                /* Nothing elided but a character straddles head and tail: kept whole (one piece). */
                ROW(3, 3, "ab\xf0\x9f\x98\x80", "ab\xf0\x9f\x98\x80", 0),
                /* A truncated character at the very end of the stream (not cut by the capture) is
                 * the program's: one U+FFFD, if it fits. */
                ROW(4, 4, "abcd\xf0\x9f\x98", "abcd" FFFD, 0),
                /* Stray continuation bytes at the start of a stream are the program's too. */
                ROW(4, 4, "\x80z", FFFD "z", 0),
        };

        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                _cleanup_capture_ Capture c = {};
                _cleanup_free_ char *s = NULL;
                uint64_t elided = UINT64_MAX;

                assert_int_equal(capture_init(&c, rows[i].head, rows[i].tail), 0);
                capture_append(&c, rows[i].in, rows[i].len);
                assert_int_equal(capture_render(&c, &s, &elided), 0);
                if (!streq(s, rows[i].out) || elided != rows[i].elided) {
                        print_error("row %zu: got \"%s\", %" PRIu64 " elided\n", i, s, elided);
                        fail();
                }
                /* Counts stay those of the whole stream. */
                assert_int_equal(c.total_bytes, rows[i].len);
                check_bounds(&c, s, elided);
        }
#undef ROW
}

static uint32_t xorshift(uint32_t *x) {
        *x ^= *x << 13;
        *x ^= *x >> 17;
        *x ^= *x << 5;
        return *x;
}

/* Random streams of the kinds above, random geometries and chunks: the text stays within the bounds,
 * it is a prefix and a suffix of what the whole stream renders to with the marker between (or, with
 * nothing elided, all of it), and the marker's number is the one reported. */
static void test_render_budget_random(_unused_ void **state) {
        static const char *const pieces[] = {
                "a", "\n", "\t", "\x01", "\x1f", "\x7f", "\0", "\xff", "\x80", "\xc3\xa9", "\xe2\x82\xac",
                "\xf0\x9f\x98\x80", "\xf0\x9f", "\xe2", "\"", "\\", "/", "\xed\xa0\x80",
        };
        uint32_t x = 0x12345678;

        for (int round = 0; round < 2000; round++) {
                _cleanup_capture_ Capture c = {};
                _cleanup_free_ char *s = NULL, *whole = NULL;
                _cleanup_free_ uint8_t *in = malloc(4096);
                size_t n = 0, len, wlen, a, b, head = xorshift(&x) % 40, tail = xorshift(&x) % 40;
                uint64_t elided = UINT64_MAX, shown;
                const char *m;

                assert_non_null(in);
                assert_int_equal(capture_init(&c, head, tail), 0);
                for (size_t k = xorshift(&x) % 200; k > 0; k--) {
                        const char *p = pieces[xorshift(&x) % ELEMENTSOF(pieces)];
                        size_t pl = *p ? strlen(p) : 1;

                        memcpy(in + n, p, pl);
                        n += pl;
                }
                for (size_t i = 0; i < n;) {
                        size_t r = 1 + xorshift(&x) % 17, k = MIN(n - i, r);     /* MIN() evaluates twice */

                        capture_append(&c, in + i, k);
                        i += k;
                }
                assert_int_equal(capture_render(&c, &s, &elided), 0);
                check_bounds(&c, s, elided);
                whole = utf8_sanitize(in, n, &wlen);
                assert_non_null(whole);
                len = strlen(s);
                m = strstr(s, CAPTURE_MARKER_PREFIX);
                if (elided == 0) {
                        assert_string_equal(s, whole);
                        continue;
                }
                /* The program's output has no marker of its own here ("[" is not among the pieces). */
                assert_non_null(m);
                assert_int_equal(strtoull(m + strlen(CAPTURE_MARKER_PREFIX), NULL, 10), elided);
                a = (size_t) (m - s);
                m = strstr(m, CAPTURE_MARKER_SUFFIX) + strlen(CAPTURE_MARKER_SUFFIX);
                b = len - (size_t) (m - s);
                assert_true(a + b <= wlen);
                assert_memory_equal(s, whole, a);
                assert_memory_equal(m, whole + wlen - b, b);
                /* Every byte of output not shown is counted: what is shown came from at most
                 * total - elided bytes, and some bytes were not shown. */
                assert_true(elided <= c.total_bytes);
                shown = c.total_bytes - elided;
                assert_true(shown <= c.head_len + c.tail_len);
        }
}

static void test_init_done(_unused_ void **state) {
        Capture c;

        memset(&c, 0xaa, sizeof(c));
        assert_int_equal(capture_init(&c, 10, 20), 0);
        assert_non_null(c.head);
        assert_non_null(c.tail);
        assert_int_equal(c.head_max, 10);
        assert_int_equal(c.tail_max, 20);
        assert_int_equal(c.head_len + c.tail_len + c.tail_pos, 0);
        assert_int_equal(c.total_bytes + c.total_lines, 0);
        assert_false(c.last_newline);
        assert_int_equal(capture_elided(&c), 0);
        capture_append(&c, "x\n", 2);
        assert_true(c.last_newline);
        capture_done(&c);
        assert_null(c.head);
        assert_null(c.tail);
        assert_int_equal(c.total_bytes, 0);
        capture_done(&c);   /* idempotent */
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_literal_boundaries),
                cmocka_unit_test(test_stream_model),
                cmocka_unit_test(test_stream_bytewise_large),
                cmocka_unit_test(test_gigabyte_stream),
                cmocka_unit_test(test_one_huge_append),
                cmocka_unit_test(test_lines),
                cmocka_unit_test(test_invalid_utf8_and_nul),
                cmocka_unit_test(test_random_bytes_render_valid),
                cmocka_unit_test(test_render_budget_rows),
                cmocka_unit_test(test_render_budget_random),
                cmocka_unit_test(test_init_done),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

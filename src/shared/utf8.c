/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "utf8.h"
#include "util.h"

/* U+FFFD REPLACEMENT CHARACTER */
#define REPLACEMENT "\xef\xbf\xbd"
#define REPLACEMENT_LEN 3U

/* Length of the well-formed sequence at p, or 0 if it is ill-formed; *ret_skip receives how many
 * bytes make up the maximal ill-formed subpart so that one U+FFFD replaces it (the Unicode
 * "substitution of maximal subparts" practice, which is what browsers and Python do). Bounds come
 * from Unicode Table 3-7: restricting the second byte is what rejects overlongs (E0 80..9F,
 * F0 80..8F), surrogates (ED A0..BF) and code points above U+10FFFF (F4 90..BF, F5..FF). NUL is
 * reported as ill-formed: callers hand the result to C strings and JSON. */
static size_t utf8_sequence(const uint8_t *p, size_t n, size_t *ret_skip) {
        uint8_t lo = 0x80, hi = 0xbf;
        size_t len, i;

        if (p[0] == 0) {
                *ret_skip = 1;
                return 0;
        }
        if (p[0] < 0x80)
                return 1;

        if (p[0] >= 0xc2 && p[0] <= 0xdf)
                len = 2;
        else if (p[0] >= 0xe0 && p[0] <= 0xef) {
                len = 3;
                if (p[0] == 0xe0)
                        lo = 0xa0;
                else if (p[0] == 0xed)
                        hi = 0x9f;
        } else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
                len = 4;
                if (p[0] == 0xf0)
                        lo = 0x90;
                else if (p[0] == 0xf4)
                        hi = 0x8f;
        } else {
                /* Stray continuation byte, C0/C1 (always overlong) or F5..FF. */
                *ret_skip = 1;
                return 0;
        }

        for (i = 1; i < len; i++) {
                if (i >= n || p[i] < lo || p[i] > hi) {
                        /* Truncated or broken: the lead byte and the continuation bytes that were
                         * valid so far form one maximal subpart. */
                        *ret_skip = i;
                        return 0;
                }
                lo = 0x80;
                hi = 0xbf;
        }
        return len;
}

/* The character at p (n > 0) as utf8_sanitize() renders it: *ret_len bytes of p are taken and
 * *ret_weight counted (utf8.h). Returns whether they are copied (else one U+FFFD stands for them). */
static bool utf8_unit(const uint8_t *p, size_t n, size_t *ret_len, size_t *ret_weight) {
        size_t skip = 1, k = utf8_sequence(p, n, &skip);

        if (k == 0) {
                *ret_len = skip;
                *ret_weight = REPLACEMENT_LEN;
                return false;
        }
        *ret_len = k;
        /* json-c writes \b \t \n \f \r as two bytes, the other C0 controls (NUL never gets here)
         * as \u00XX. */
        if (k == 1 && p[0] < 0x20 && p[0] != '\b' && p[0] != '\t' && p[0] != '\n' && p[0] != '\f' &&
            p[0] != '\r')
                *ret_weight = UTF8_CONTROL_WEIGHT;
        else
                *ret_weight = k;
        return true;
}

static size_t add_sat(size_t a, size_t b) {
        return a > SIZE_MAX - b ? SIZE_MAX : a + b;
}

size_t utf8_fit_prefix(const void *s, size_t n, size_t max, size_t *ret_weight) {
        const uint8_t *p = s;
        size_t i = 0, weight = 0;

        while (i < n) {
                size_t k, w;

                (void) utf8_unit(p + i, n - i, &k, &w);
                if (w > max - weight)
                        break;
                weight += w;
                i += k;
        }
        if (ret_weight)
                *ret_weight = weight;
        return i;
}

size_t utf8_fit_suffix(const void *s, size_t n, size_t max, size_t *ret_weight) {
        const uint8_t *p = s;
        size_t i, k, w, weight = 0;

        /* Characters are only known reading forwards (a byte run such as 80 80 80 is three
         * replacements or the end of one character depending on what precedes it): weigh it all,
         * then drop characters from the front until the rest fits. */
        for (i = 0; i < n; i += k) {
                (void) utf8_unit(p + i, n - i, &k, &w);
                weight = add_sat(weight, w);
        }
        for (i = 0; i < n && weight > max; i += k) {
                (void) utf8_unit(p + i, n - i, &k, &w);
                weight -= w;
        }
        if (ret_weight)
                *ret_weight = weight;
        return i;
}

size_t utf8_cut_suffix(const void *s, size_t n) {
        const uint8_t *p = s;

        for (size_t k = 1; k <= 3 && k <= n; k++) {
                uint8_t b = p[n - k];
                size_t skip = 0;

                if (b >= 0x80 && b <= 0xbf)
                        continue;       /* a continuation byte: its lead is further back */
                /* A lead byte always starts a character (no decoder state consumes one as a
                 * continuation); it is cut off if everything after it was valid so far. */
                if (b < 0xc2 || b > 0xf4)
                        return 0;
                return utf8_sequence(p + n - k, k, &skip) == 0 && skip == k ? k : 0;
        }
        return 0;
}

size_t utf8_sanitize_to(const void *s, size_t n, char *buf) {
        const uint8_t *p = s;
        size_t i, k, w, len = 0;

        for (i = 0; i < n; i += k) {
                bool copy = utf8_unit(p + i, n - i, &k, &w);
                size_t out = copy ? k : REPLACEMENT_LEN;

                if (buf)
                        memcpy(buf + len, copy ? (const void *) (p + i) : REPLACEMENT, out);
                len = add_sat(len, out);
        }
        return len;
}

char *utf8_sanitize(const void *s, size_t n, size_t *ret_len) {
        size_t out_len;
        char *r;

        /* Two passes with the same decoder rather than a 3n worst-case allocation: the buffers
         * handed in are captures of up to a few hundred KiB, mostly valid. */
        out_len = utf8_sanitize_to(s, n, NULL);
        if (out_len == SIZE_MAX)
                return NULL;
        r = malloc(out_len + 1);
        if (!r)
                return NULL;
        (void) utf8_sanitize_to(s, n, r);
        r[out_len] = 0;

        if (ret_len)
                *ret_len = out_len;
        return r;
}

bool utf8_is_valid(const void *s, size_t n) {
        const uint8_t *p = s;
        size_t i, k, skip = 1;

        for (i = 0; i < n; i += k) {
                k = utf8_sequence(p + i, n - i, &skip);
                if (k == 0)
                        return false;
        }
        return true;
}

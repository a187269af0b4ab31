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

char *utf8_sanitize(const void *s, size_t n, size_t *ret_len) {
        const uint8_t *p = s;
        size_t out_len = 0, i, k, skip = 1;
        char *r, *q;

        /* Two passes with the same decoder rather than a 3n worst-case allocation: the buffers
         * handed in are captures of up to a few hundred KiB, mostly valid. */
        for (i = 0; i < n; i += k ?: skip) {
                k = utf8_sequence(p + i, n - i, &skip);
                if (k > 0)
                        out_len += k;
                else {
                        if (out_len > SIZE_MAX - REPLACEMENT_LEN - 1)
                                return NULL;
                        out_len += REPLACEMENT_LEN;
                }
        }

        r = malloc(out_len + 1);
        if (!r)
                return NULL;

        q = r;
        for (i = 0; i < n; i += k ?: skip) {
                k = utf8_sequence(p + i, n - i, &skip);
                if (k > 0) {
                        memcpy(q, p + i, k);
                        q += k;
                } else {
                        memcpy(q, REPLACEMENT, REPLACEMENT_LEN);
                        q += REPLACEMENT_LEN;
                }
        }
        *q = 0;

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

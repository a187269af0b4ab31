/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdlib.h>

#include "base64.h"
#include "util.h"

static const char alphabet_std[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char alphabet_url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static char *encode(const uint8_t *p, size_t len, const char *alphabet, bool pad) {
        char *out, *o;

        if (len > (SIZE_MAX - 1) / 4 * 3 - 3)
                return NULL;
        out = o = malloc((len + 2) / 3 * 4 + 1);
        if (!out)
                return NULL;
        for (size_t i = 0; i < len; i += 3) {
                size_t k = MIN(len - i, (size_t) 3);
                uint32_t w = (uint32_t) p[i] << 16 | (k > 1 ? (uint32_t) p[i + 1] << 8 : 0) |
                             (k > 2 ? (uint32_t) p[i + 2] : 0);

                *o++ = alphabet[w >> 18 & 63];
                *o++ = alphabet[w >> 12 & 63];
                if (k > 1)
                        *o++ = alphabet[w >> 6 & 63];
                else if (pad)
                        *o++ = '=';
                if (k > 2)
                        *o++ = alphabet[w & 63];
                else if (pad)
                        *o++ = '=';
        }
        *o = 0;
        return out;
}

char *base64_encode(const void *p, size_t len) {
        return encode(p, len, alphabet_std, true);
}

char *base64url_encode(const void *p, size_t len) {
        return encode(p, len, alphabet_url, false);
}

static int value(const char *alphabet, char c) {
        for (int i = 0; i < 64; i++)
                if (alphabet[i] == c)
                        return i;
        return -1;
}

/* len characters of the alphabet (no padding), 0, 2 or 3 of them in the last group. */
static int decode(const char *s, size_t len, const char *alphabet, uint8_t **ret, size_t *ret_len) {
        _cleanup_free_ uint8_t *buf = NULL;
        uint32_t acc = 0;
        unsigned bits = 0;
        size_t n = 0;

        if (len % 4 == 1)
                return -EINVAL;
        buf = malloc(len / 4 * 3 + 3);
        if (!buf)
                return -ENOMEM;
        for (size_t i = 0; i < len; i++) {
                int v = value(alphabet, s[i]);

                if (v < 0)
                        return -EINVAL;
                acc = (acc << 6) | (uint32_t) v;
                bits += 6;
                if (bits >= 8) {
                        bits -= 8;
                        buf[n++] = (uint8_t) (acc >> bits);
                        acc &= (1U << bits) - 1;
                }
        }
        /* Canonical only: the bits a short last group leaves over must be zero. */
        if (acc != 0)
                return -EINVAL;
        buf[n] = 0;
        *ret = TAKE_PTR(buf);
        *ret_len = n;
        return 0;
}

int base64_decode(const char *s, size_t len, uint8_t **ret, size_t *ret_len) {
        size_t pad = 0;

        /* Padded: whole groups of four, at most two '=' and only at the very end. */
        if (len % 4 != 0)
                return -EINVAL;
        if (len > 0 && s[len - 1] == '=')
                pad = len > 1 && s[len - 2] == '=' ? 2 : 1;
        return decode(s, len - pad, alphabet_std, ret, ret_len);
}

int base64url_decode(const char *s, size_t len, uint8_t **ret, size_t *ret_len) {
        return decode(s, len, alphabet_url, ret, ret_len);
}

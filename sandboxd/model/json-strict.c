/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json-strict.h"
#include "util.h"

typedef struct Key {
        char *s;                 /* decoded */
        size_t len;
} Key;

typedef struct Parser {
        const char *s;
        size_t len, pos;
        unsigned depth, max_depth;
        JsonStrictError *err;
        char path[sizeof(((JsonStrictError *) NULL)->path)];
        size_t path_len;
        bool oom;
} Parser;

static int fail_at(Parser *p, bool with_path, const char *fmt, ...) _printf_(3, 4);
static int fail_at(Parser *p, bool with_path, const char *fmt, ...) {
        va_list ap;

        if (p->err->message[0])
                return -EINVAL;          /* the first error is the one reported */
        snprintf(p->err->path, sizeof(p->err->path), "%s", with_path ? p->path : "");
        va_start(ap, fmt);
        vsnprintf(p->err->message, sizeof(p->err->message), fmt, ap);
        va_end(ap);
        return -EINVAL;
}

static int syntax(Parser *p, const char *what) {
        if (p->pos >= p->len)
                return fail_at(p, false, "unexpected end of input (%s)", what);
        return fail_at(p, false, "at byte %zu: %s", p->pos, what);
}

static void skip_ws(Parser *p) {
        while (p->pos < p->len &&
               (p->s[p->pos] == ' ' || p->s[p->pos] == '\t' || p->s[p->pos] == '\n' || p->s[p->pos] == '\r'))
                p->pos++;
}

/* The path while descending: ".key" (or "key" at the top) and "[i]", cut where it does not fit. */
static size_t path_push_key(Parser *p, const char *k, size_t n) {
        size_t old = p->path_len;
        int w = snprintf(p->path + old, sizeof(p->path) - old, "%s%.*s", old ? "." : "", (int) MIN(n, (size_t) 64), k);

        if (w > 0)
                p->path_len = MIN(old + (size_t) w, sizeof(p->path) - 1);
        return old;
}

static size_t path_push_index(Parser *p, size_t i) {
        size_t old = p->path_len;
        int w = snprintf(p->path + old, sizeof(p->path) - old, "[%zu]", i);

        if (w > 0)
                p->path_len = MIN(old + (size_t) w, sizeof(p->path) - 1);
        return old;
}

static void path_pop(Parser *p, size_t old) {
        p->path_len = old;
        p->path[old] = 0;
}

static int hex4(const char *s, uint32_t *ret) {
        uint32_t v = 0;

        for (int i = 0; i < 4; i++) {
                char c = s[i];

                v <<= 4;
                if (c >= '0' && c <= '9')
                        v |= (uint32_t) (c - '0');
                else if (c >= 'a' && c <= 'f')
                        v |= (uint32_t) (c - 'a' + 10);
                else if (c >= 'A' && c <= 'F')
                        v |= (uint32_t) (c - 'A' + 10);
                else
                        return -EINVAL;
        }
        *ret = v;
        return 0;
}

static size_t utf8_put(char *out, uint32_t c) {
        if (c < 0x80) {
                out[0] = (char) c;
                return 1;
        }
        if (c < 0x800) {
                out[0] = (char) (0xc0 | (c >> 6));
                out[1] = (char) (0x80 | (c & 0x3f));
                return 2;
        }
        if (c < 0x10000) {
                out[0] = (char) (0xe0 | (c >> 12));
                out[1] = (char) (0x80 | ((c >> 6) & 0x3f));
                out[2] = (char) (0x80 | (c & 0x3f));
                return 3;
        }
        out[0] = (char) (0xf0 | (c >> 18));
        out[1] = (char) (0x80 | ((c >> 12) & 0x3f));
        out[2] = (char) (0x80 | ((c >> 6) & 0x3f));
        out[3] = (char) (0x80 | (c & 0x3f));
        return 4;
}

/* A string at p->pos (the opening quote). A key is decoded into *ret (NULL: a value, not kept). */
static int parse_string(Parser *p, bool is_key, Key *ret) {
        _cleanup_free_ char *out = NULL;
        size_t n = 0, start;

        p->pos++;       /* " */
        start = p->pos;
        if (is_key) {
                /* Decoded is never longer than encoded: find the end first for the size. */
                size_t e = start;

                while (e < p->len && p->s[e] != '"')
                        e += p->s[e] == '\\' ? 2 : 1;
                out = malloc(MIN(e, p->len) - start + 1);
                if (!out) {
                        p->oom = true;
                        return -ENOMEM;
                }
        }
        for (;;) {
                unsigned char c;

                if (p->pos >= p->len)
                        return syntax(p, "a string is not closed");
                c = (unsigned char) p->s[p->pos];
                if (c == '"')
                        break;
                if (c < 0x20)
                        return fail_at(p, true, "raw control character U+%04X in a string (it must be escaped)", c);
                if (c != '\\') {
                        if (out)
                                out[n++] = (char) c;
                        p->pos++;
                        continue;
                }
                if (p->pos + 1 >= p->len)
                        return syntax(p, "a string is not closed");
                c = (unsigned char) p->s[p->pos + 1];
                if (c == 'u') {
                        uint32_t u, lo;

                        if (p->pos + 6 > p->len || hex4(p->s + p->pos + 2, &u) < 0)
                                return syntax(p, "\\u needs four hex digits");
                        p->pos += 6;
                        if (u >= 0xd800 && u < 0xdc00 && p->pos + 6 <= p->len && p->s[p->pos] == '\\' &&
                            p->s[p->pos + 1] == 'u' && hex4(p->s + p->pos + 2, &lo) >= 0 && lo >= 0xdc00 &&
                            lo < 0xe000) {
                                u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
                                p->pos += 6;
                        }
                        if (u == 0 && is_key)
                                return fail_at(p, true, "a key contains \\u0000");
                        if (out)
                                n += utf8_put(out + n, u);
                        continue;
                }
                if (!strchr("\"\\/bfnrt", c) || c == 0)
                        return syntax(p, "invalid escape in a string");
                if (out)
                        out[n++] = c == 'b' ? '\b' : c == 'f' ? '\f' : c == 'n' ? '\n' : c == 'r' ? '\r' : c == 't' ? '\t' : (char) c;
                p->pos += 2;
        }
        p->pos++;       /* " */
        if (ret) {
                out[n] = 0;
                *ret = (Key) { .s = TAKE_PTR(out), .len = n };
        }
        return 0;
}

/* Does the integer literal d (n digits, no sign) exceed limit (a digit string)? */
static bool digits_exceed(const char *d, size_t n, const char *limit) {
        size_t l = strlen(limit);

        if (n != l)
                return n > l;
        return memcmp(d, limit, n) > 0;
}

static int parse_number(Parser *p) {
        size_t start = p->pos, int_start;
        bool neg = false, integer = true;

        if (p->s[p->pos] == '-') {
                neg = true;
                p->pos++;
        }
        int_start = p->pos;
        if (p->pos >= p->len || p->s[p->pos] < '0' || p->s[p->pos] > '9')
                return syntax(p, "not a JSON value (NaN, Infinity and bare words are not JSON)");
        if (p->s[p->pos] == '0')
                p->pos++;
        else
                while (p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9')
                        p->pos++;
        if (p->pos < p->len && p->s[p->pos] == '.') {
                integer = false;
                p->pos++;
                if (p->pos >= p->len || p->s[p->pos] < '0' || p->s[p->pos] > '9')
                        return syntax(p, "a digit must follow the decimal point");
                while (p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9')
                        p->pos++;
        }
        if (p->pos < p->len && (p->s[p->pos] == 'e' || p->s[p->pos] == 'E')) {
                integer = false;
                p->pos++;
                if (p->pos < p->len && (p->s[p->pos] == '+' || p->s[p->pos] == '-'))
                        p->pos++;
                if (p->pos >= p->len || p->s[p->pos] < '0' || p->s[p->pos] > '9')
                        return syntax(p, "a digit must follow the exponent");
                while (p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9')
                        p->pos++;
        }
        if (integer && digits_exceed(p->s + int_start, p->pos - int_start,
                                     neg ? "9223372036854775808" : "18446744073709551615"))
                return fail_at(p, true, "%.*s%s is out of range (64 bits)", (int) MIN(p->pos - start, (size_t) 40),
                               p->s + start, p->pos - start > 40 ? "..." : "");
        return 0;
}

static int literal(Parser *p, const char *word) {
        size_t n = strlen(word);

        if (p->len - p->pos < n || memcmp(p->s + p->pos, word, n) != 0)
                return syntax(p, "not a JSON value (NaN, Infinity and bare words are not JSON)");
        p->pos += n;
        return 0;
}

static int parse_value(Parser *p);

static int key_cmp(const void *a, const void *b) {
        const Key *x = a, *y = b;
        int c = memcmp(x->s, y->s, MIN(x->len, y->len));

        return c ? c : (x->len > y->len) - (x->len < y->len);
}

static int parse_object(Parser *p) {
        Key *keys = NULL;
        size_t n = 0, allocated = 0;
        int r = 0;

        p->pos++;       /* { */
        skip_ws(p);
        if (p->pos < p->len && p->s[p->pos] == '}') {
                p->pos++;
                return 0;
        }
        for (;;) {
                Key k;
                size_t old;

                skip_ws(p);
                if (p->pos >= p->len || p->s[p->pos] != '"') {
                        r = syntax(p, "an object key must be a string");
                        break;
                }
                if (n == allocated) {
                        size_t m = MAX(allocated * 2, (size_t) 8);
                        Key *t = reallocarray(keys, m, sizeof(Key));

                        if (!t) {
                                p->oom = true;
                                r = -ENOMEM;
                                break;
                        }
                        keys = t;
                        allocated = m;
                }
                /* An error in the key (\u0000, say) is reported at the object's path. */
                r = parse_string(p, true, &k);
                if (r < 0)
                        break;
                keys[n++] = k;
                skip_ws(p);
                if (p->pos >= p->len || p->s[p->pos] != ':') {
                        r = syntax(p, "':' must follow an object key");
                        break;
                }
                p->pos++;
                old = path_push_key(p, k.s, k.len);
                r = parse_value(p);
                path_pop(p, old);
                if (r < 0)
                        break;
                skip_ws(p);
                if (p->pos < p->len && p->s[p->pos] == ',') {
                        p->pos++;
                        continue;
                }
                if (p->pos < p->len && p->s[p->pos] == '}') {
                        p->pos++;
                        break;
                }
                r = syntax(p, "',' or '}' must follow an object member");
                break;
        }
        if (r >= 0 && n > 1) {
                qsort(keys, n, sizeof(Key), key_cmp);
                for (size_t i = 1; i < n; i++)
                        if (key_cmp(&keys[i - 1], &keys[i]) == 0) {
                                size_t old = path_push_key(p, keys[i].s, keys[i].len);

                                r = fail_at(p, true, "duplicate key '%.64s'", keys[i].s);
                                path_pop(p, old);
                                break;
                        }
        }
        for (size_t i = 0; i < n; i++)
                free(keys[i].s);
        free(keys);
        return r;
}

static int parse_array(Parser *p) {
        size_t i = 0;

        p->pos++;       /* [ */
        skip_ws(p);
        if (p->pos < p->len && p->s[p->pos] == ']') {
                p->pos++;
                return 0;
        }
        for (;; i++) {
                size_t old = path_push_index(p, i);
                int r = parse_value(p);

                path_pop(p, old);
                if (r < 0)
                        return r;
                skip_ws(p);
                if (p->pos < p->len && p->s[p->pos] == ',') {
                        p->pos++;
                        continue;
                }
                if (p->pos < p->len && p->s[p->pos] == ']') {
                        p->pos++;
                        return 0;
                }
                return syntax(p, "',' or ']' must follow an array element");
        }
}

static int parse_value(Parser *p) {
        int r;

        skip_ws(p);
        if (p->pos >= p->len)
                return syntax(p, "a value is missing");
        switch (p->s[p->pos]) {
        case '{':
        case '[':
                if (++p->depth > p->max_depth)
                        return fail_at(p, false, "nested deeper than %u levels", p->max_depth);
                r = p->s[p->pos] == '{' ? parse_object(p) : parse_array(p);
                p->depth--;
                return r;
        case '"':
                return parse_string(p, false, NULL);
        case 't':
                return literal(p, "true");
        case 'f':
                return literal(p, "false");
        case 'n':
                return literal(p, "null");
        default:
                return parse_number(p);
        }
}

int json_strict_check(const char *s, size_t len, unsigned max_depth, JsonStrictError *err) {
        Parser p = { .s = s, .len = len, .max_depth = max_depth, .err = err };
        int r;

        *err = (JsonStrictError) {};
        r = parse_value(&p);
        if (p.oom)
                return -ENOMEM;
        if (r < 0)
                return r;
        skip_ws(&p);
        if (p.pos != len)
                return syntax(&p, "trailing data after the JSON value");
        return 0;
}

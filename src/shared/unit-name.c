/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit-name.h"
#include "util.h"

static bool valid_char(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == ':' ||
                c == '_' || c == '.';
}

/* n bytes of s, escaped, then suffix; at most 4 bytes per input byte. */
static char *escape(const char *s, size_t n, const char *suffix) {
        size_t ls = strlen(suffix);
        char *r, *o;

        if (n > (SIZE_MAX - ls - 1) / 4)
                return NULL;
        r = o = malloc(n * 4 + ls + 1);
        if (!r)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                char c = s[i];

                if (c == '/')
                        *o++ = '-';
                else if (!valid_char(c) || (c == '.' && i == 0)) {
                        static const char hex[] = "0123456789abcdef";

                        *o++ = '\\';
                        *o++ = 'x';
                        *o++ = hex[(unsigned char) c >> 4];
                        *o++ = hex[(unsigned char) c & 15];
                } else
                        *o++ = c;
        }
        memcpy(o, suffix, ls + 1);
        return r;
}

char *unit_name_escape(const char *s) {
        return escape(s, strlen(s), "");
}

char *unit_name_from_path(const char *path, const char *suffix) {
        _cleanup_free_ char *p = malloc(strlen(path) + 1);
        size_t n = 0;

        if (!p)
                return NULL;
        /* One slash between components, none at either end. */
        for (const char *c = path; *c; c++) {
                if (*c == '/' && (n == 0 || p[n - 1] == '/'))
                        continue;
                p[n++] = *c;
        }
        if (n > 0 && p[n - 1] == '/')
                n--;
        if (n == 0)
                return escape("/", 1, suffix);
        return escape(p, n, suffix);
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdlib.h>
#include <string.h>

#include "strv.h"

char **strv_free(char **l) {
        for (char **i = l; i && *i; i++)
                free(*i);
        free(l);
        return NULL;
}

char **strv_free_n(char **l, size_t n) {
        if (!l)
                return NULL;
        for (size_t i = 0; i < n; i++)
                free(l[i]);
        free(l);
        return NULL;
}

size_t strv_length(char *const *l) {
        size_t n = 0;

        for (; l && *l; l++)
                n++;
        return n;
}

int strv_extend(char ***l, size_t *n, const char *s) {
        size_t k = n ? *n : strv_length(*l);
        _cleanup_free_ char *c = NULL;
        char **nl;

        /* The copy first: a failure after the array grew leaves nothing half-done. */
        c = strdup(s);
        if (!c)
                return -ENOMEM;
        nl = reallocarray(*l, k + 2, sizeof(char *));
        if (!nl)
                return -ENOMEM;
        nl[k] = TAKE_PTR(c);
        nl[k + 1] = NULL;
        *l = nl;
        if (n)
                *n = k + 1;
        return 0;
}

bool strv_equal(char *const *a, char *const *b) {
        for (; a && *a && b && *b; a++, b++)
                if (!streq(*a, *b))
                        return false;
        return !(a && *a) && !(b && *b);
}

bool strv_contains(char *const *l, const char *s) {
        for (; l && *l; l++)
                if (streq(*l, s))
                        return true;
        return false;
}

static int cmp_str(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

void strv_sort(char **l) {
        size_t n = strv_length(l);

        if (n > 1)
                qsort(l, n, sizeof(char *), cmp_str);
}

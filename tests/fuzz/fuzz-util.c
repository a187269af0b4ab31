/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "fuzz.h"
#include "log.h"

FILE *fuzz_stderr = NULL;

void fuzz_quiet(void) {
        FILE *null;

        if (fuzz_stderr)
                return;
        fuzz_stderr = stderr;
        log_set_max_level(LOG_DEBUG);
        if (getenv("FUZZ_VERBOSE"))
                return;
        null = fopen("/dev/null", "we");
        if (!null)
                return;
        stdout = null;
        stderr = null;
}

char *fuzz_text(const uint8_t *data, size_t size) {
        char *s = malloc(size + 1);

        if (!s)
                abort();
        if (size > 0)
                memcpy(s, data, size);
        s[size] = 0;
        return s;
}

size_t fuzz_split(const uint8_t *data, size_t size, char ***ret, size_t max) {
        size_t n = 0;
        char **v, *p;

        /* The pointers, then the text with a NUL after its last piece. */
        v = malloc(sizeof(char *) * (max + 1) + size + 1);
        if (!v)
                abort();
        p = (char *) (v + max + 1);
        if (size > 0)
                memcpy(p, data, size);
        p[size] = 0;
        for (size_t i = 0; n < max && i <= size; ) {
                v[n++] = p + i;
                i += strlen(p + i) + 1;
        }
        v[n] = NULL;
        *ret = v;
        return n;
}

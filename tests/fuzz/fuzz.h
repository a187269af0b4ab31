/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What every fuzz target shares. A target defines LLVMFuzzerInitialize() and
 * LLVMFuzzerTestOneInput(); it is linked either with libFuzzer (-Dfuzz=true, clang) or with
 * fuzz-main.c, which runs it once over every file of a corpus (the regression replay of meson test).
 * A target must not leak, must not write outside a private directory of its own, and must not
 * block: LeakSanitizer runs after every input. */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A broken invariant: abort, so that libFuzzer and the replay both see a crash (assert() would
 * vanish in a build with NDEBUG). */
#define fuzz_check(expr)                                                                           \
        do {                                                                                       \
                if (!(expr)) {                                                                     \
                        fprintf(fuzz_stderr, "%s:%d: invariant broken: %s\n", __FILE__, __LINE__, #expr); \
                        abort();                                                                   \
                }                                                                                  \
        } while (0)

/* The real stderr, kept by fuzz_quiet(). */
extern FILE *fuzz_stderr;

/* stdout and stderr (the FILE *s: the daemon's log lines, getopt's and sandboxctl's messages) go
 * to /dev/null, unless FUZZ_VERBOSE is set in the environment: one line per input would cost more
 * than the input. The sanitizers and libFuzzer write to fd 2 themselves and are not affected. Log
 * messages are still formatted (level debug), so what they read is checked. */
void fuzz_quiet(void);

/* data as a NUL-terminated string (it ends at the first NUL byte of data, if any). Aborts on OOM. */
char *fuzz_text(const uint8_t *data, size_t size);

/* data split at its NUL bytes into at most max NUL-terminated strings, in *ret (one allocation,
 * free(*ret) and (*ret)[0]... are freed with it: the strings live in the same block). The count. */
size_t fuzz_split(const uint8_t *data, size_t size, char ***ret, size_t max);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The few helpers every part of sandboxd shares: cleanup attributes, fd and string utilities.
 * Modelled on systemd's conventions (negative errno returns, _cleanup_ ownership), written anew. */

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _unused_ __attribute__((unused))
#define _fallthrough_ __attribute__((fallthrough))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _pure_ __attribute__((pure))
#define _const_ __attribute__((const))
#define _likely_(x) __builtin_expect(!!(x), 1)
#define _unlikely_(x) __builtin_expect(!!(x), 0)

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define STRINGIFY_(x) #x
#define STRINGIFY(x) STRINGIFY_(x)

/* Take ownership out of a _cleanup_ variable. */
#define TAKE_PTR(p)                             \
        ({                                      \
                __typeof__(p) _tp = (p);        \
                (p) = NULL;                     \
                _tp;                            \
        })
#define TAKE_FD(fd)                             \
        ({                                      \
                int _tfd = (fd);                \
                (fd) = -EBADF;                  \
                _tfd;                           \
        })

static inline void freep(void *p) {
        free(*(void **) p);
}
#define _cleanup_free_ _cleanup_(freep)

static inline int safe_close(int fd) {
        if (fd >= 0) {
                int saved = errno;
                (void) close(fd);
                errno = saved;
        }
        return -EBADF;
}
static inline void closep(int *fd) {
        *fd = safe_close(*fd);
}
#define _cleanup_close_ _cleanup_(closep)

static inline void fclosep(FILE **f) {
        if (*f)
                fclose(*f);
}
#define _cleanup_fclose_ _cleanup_(fclosep)

static inline void close_pairp(int (*p)[2]) {
        (*p)[0] = safe_close((*p)[0]);
        (*p)[1] = safe_close((*p)[1]);
}
#define _cleanup_close_pair_ _cleanup_(close_pairp)

/* Define a cleanup function for a type with a destructor returning NULL. */
#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func)          \
        static inline void func##p(type *p) {            \
                if (*p)                                  \
                        *p = func(*p);                   \
        }

static inline bool streq(const char *a, const char *b) {
        return strcmp(a, b) == 0;
}
static inline bool streq_ptr(const char *a, const char *b) {
        if (!a || !b)
                return a == b;
        return streq(a, b);
}
static inline bool isempty(const char *s) {
        return !s || !*s;
}
static inline const char *strna(const char *s) {
        return s ?: "n/a";
}
static inline const char *startswith(const char *s, const char *prefix) {
        size_t l = strlen(prefix);
        return strncmp(s, prefix, l) == 0 ? s + l : NULL;
}

static inline bool endswith(const char *s, const char *suffix) {
        size_t a = strlen(s), b = strlen(suffix);
        return a >= b && strcmp(s + a - b, suffix) == 0;
}

#define SWAP_STR(a, b)                          \
        do {                                    \
                char *_t = (a);                 \
                (a) = (b);                      \
                (b) = _t;                       \
        } while (0)

static inline void *mfree(void *p) {
        free(p);
        return NULL;
}

/* Replace *dst with a copy of src (or NULL). */
int free_and_strdup(char **dst, const char *src);

/* For parsers that report what is wrong: replace *ret_error (if ret_error is not NULL) with a
 * formatted message. Always returns -EINVAL, so "return error_set(ret_error, ...);". */
int error_set(char **ret_error, const char *fmt, ...) _printf_(2, 3);

/* Parse a whole decimal number into the given range; -EINVAL on garbage, -ERANGE outside. */
int safe_atou64(const char *s, uint64_t *ret);
int safe_atoi(const char *s, int *ret);

/* Read/write the whole buffer, retrying on EINTR. */
int loop_write(int fd, const void *buf, size_t n);
ssize_t loop_read(int fd, void *buf, size_t n);

/* Monotonic and realtime clocks in microseconds. */
uint64_t now_usec(int clock);

/* Is this a valid identifier for executions and sessions: [A-Za-z0-9_.-], 1..max, not starting
 * with '.' or '-'. Used for names that end up in unit names and paths. */
bool id_is_valid(const char *s, size_t max);

/* Lower-case hex of n bytes into out (2n + 1 bytes, NUL-terminated). */
void hexmem(const void *d, size_t n, char *out);
/* The value of one hex digit (either case), or -EINVAL. */
int unhexchar(char c);
/* len hex digits (either case) as len / 2 bytes into out: 0, or -EINVAL for an odd len or a
 * character that is not a hex digit (out may be partly written then). */
int unhexmem(const char *s, size_t len, uint8_t *out);

/* Is the token (n bytes) in text[0..len), NULs included? Where the token begins (ends) with a letter,
 * digit or '_', the text must not continue the word there ("pty" is not in "empty"); with prefix,
 * the token's end may be followed by anything ("os.exec" as a prefix finds os.execv). */
bool memmem_token(const char *text, size_t len, const char *token, size_t n, bool prefix);
/* Exactly n lower-case hex digits, and nothing after them? */
bool is_lower_hex(const char *s, size_t n);

/* Generate a new execution id "exec_YYYYMMDD_<16 hex>" into buf (at least 32 bytes). */
int id_generate(char *buf, size_t size, const char *prefix);

/* The directory at path for reading, never through a symlink (O_NOFOLLOW on the last component), or
 * NULL with errno set. */
DIR *opendir_nofollow(const char *path);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <stdarg.h>
#include <sys/random.h>
#include <time.h>

#include "time-util.h"
#include "util.h"

int free_and_strdup(char **dst, const char *src) {
        char *t = NULL;

        if (src) {
                t = strdup(src);
                if (!t)
                        return -ENOMEM;
        }
        free(*dst);
        *dst = t;
        return 0;
}

int error_set(char **ret_error, const char *fmt, ...) {
        va_list ap;

        if (ret_error) {
                free(*ret_error);
                *ret_error = NULL;
                va_start(ap, fmt);
                if (vasprintf(ret_error, fmt, ap) < 0)
                        *ret_error = NULL;
                va_end(ap);
        }
        return -EINVAL;
}

int safe_atou64(const char *s, uint64_t *ret) {
        char *end;
        unsigned long long v;

        /* strtoull() would skip white space and accept a sign (and wrap "-1"): digits only. */
        if (isempty(s) || !(*s >= '0' && *s <= '9'))
                return -EINVAL;
        errno = 0;
        v = strtoull(s, &end, 10);
        if (errno == ERANGE)
                return -ERANGE;
        if (*end != '\0')
                return -EINVAL;
        *ret = v;
        return 0;
}

int safe_atoi(const char *s, int *ret) {
        char *end;
        long v;

        if (isempty(s) || !((*s >= '0' && *s <= '9') || (*s == '-' && s[1] >= '0' && s[1] <= '9')))
                return -EINVAL;
        errno = 0;
        v = strtol(s, &end, 10);
        if (errno == ERANGE || v < INT32_MIN || v > INT32_MAX)
                return -ERANGE;
        if (*end != '\0')
                return -EINVAL;
        *ret = (int) v;
        return 0;
}

int loop_write(int fd, const void *buf, size_t n) {
        const uint8_t *p = buf;

        while (n > 0) {
                ssize_t k = write(fd, p, n);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                p += k;
                n -= (size_t) k;
        }
        return 0;
}

ssize_t loop_read(int fd, void *buf, size_t n) {
        uint8_t *p = buf;
        size_t done = 0;

        while (done < n) {
                ssize_t k = read(fd, p + done, n - done);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (k == 0)
                        break;
                done += (size_t) k;
        }
        return (ssize_t) done;
}

uint64_t now_usec(int clock) {
        struct timespec ts;

        (void) clock_gettime(clock, &ts);
        return timespec_to_usec(&ts);
}

bool id_is_valid(const char *s, size_t max) {
        size_t n;

        if (isempty(s))
                return false;
        n = strlen(s);
        if (n > max)
                return false;
        if (s[0] == '.' || s[0] == '-')
                return false;
        for (size_t i = 0; i < n; i++) {
                char c = s[i];
                if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '_' || c == '-' || c == '.'))
                        return false;
        }
        return true;
}

void hexmem(const void *d, size_t n, char *out) {
        static const char hex[] = "0123456789abcdef";
        const uint8_t *b = d;

        for (size_t i = 0; i < n; i++) {
                out[2 * i] = hex[b[i] >> 4];
                out[2 * i + 1] = hex[b[i] & 15];
        }
        out[2 * n] = 0;
}

int unhexchar(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -EINVAL;
}

int unhexmem(const char *s, size_t len, uint8_t *out) {
        if (len % 2 != 0)
                return -EINVAL;
        for (size_t i = 0; i < len / 2; i++) {
                int hi = unhexchar(s[2 * i]), lo = unhexchar(s[2 * i + 1]);

                if (hi < 0 || lo < 0)
                        return -EINVAL;
                out[i] = (uint8_t) (hi << 4 | lo);
        }
        return 0;
}

static bool is_word_char(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

bool memmem_token(const char *text, size_t len, const char *token, size_t n, bool prefix) {
        if (n == 0 || !text)
                return false;
        bool check_left = is_word_char(token[0]), check_right = !prefix && is_word_char(token[n - 1]);

        for (const char *p = text, *end = text + len; (size_t) (end - p) >= n;) {
                const char *hit = memmem(p, (size_t) (end - p), token, n);

                if (!hit)
                        return false;
                if ((!check_left || hit == text || !is_word_char(hit[-1])) &&
                    (!check_right || hit + n == end || !is_word_char(hit[n])))
                        return true;
                p = hit + 1;
        }
        return false;
}

bool is_lower_hex(const char *s, size_t n) {
        return s && strlen(s) == n && strspn(s, "0123456789abcdef") == n;
}

int id_generate(char *buf, size_t size, const char *prefix) {
        uint8_t rnd[8];
        struct tm tm;
        time_t t = time(NULL);
        int n;

        if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t) sizeof(rnd))
                return -EIO;
        if (!gmtime_r(&t, &tm))
                return -EINVAL;
        n = snprintf(buf, size, "%s_%04d%02d%02d_%02x%02x%02x%02x%02x%02x%02x%02x", prefix,
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, rnd[0], rnd[1], rnd[2], rnd[3], rnd[4],
                     rnd[5], rnd[6], rnd[7]);
        if (n < 0 || (size_t) n >= size)
                return -ENOBUFS;
        return 0;
}

DIR *opendir_nofollow(const char *path) {
        int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        DIR *d;

        if (fd < 0)
                return NULL;
        d = fdopendir(fd);
        if (!d) {
                int e = errno;

                close(fd);
                errno = e;
        }
        return d;
}

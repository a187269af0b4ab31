/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* sandboxctl's small helpers; see sandboxctl-util.h. */

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>

#include "sandboxctl-util.h"

/* Allocation failures are local system errors; everything else in a phase gets that phase's status. */
int exit_status_for(int r, int otherwise) {
        return r == -ENOMEM || r == -EIO ? EX_OSERR : otherwise;
}

int flush_stdout(void) {
        if (fflush(stdout) != 0 || ferror(stdout))
                return log_error_errno(-EIO, "Failed to write to standard output: %s", strerror(errno));
        return 0;
}

/* Program output and daemon strings come from untrusted code: in the human-readable views, show
 * control characters (C0, DEL, and C1 in their UTF-8 form) as escapes instead of letting them drive
 * the terminal. "run" and --json pass everything through unchanged, as they must. */
void fputs_escaped(FILE *f, const char *s, size_t n, bool multiline) {
        for (size_t i = 0; i < n; i++) {
                unsigned char c = (unsigned char) s[i];

                if (multiline && (c == '\n' || c == '\t'))
                        fputc(c, f);
                else if (c < 0x20 || c == 0x7f)
                        fprintf(f, "\\x%02x", c);
                else if (c == 0xc2 && i + 1 < n && (unsigned char) s[i + 1] >= 0x80 &&
                         (unsigned char) s[i + 1] <= 0x9f) {
                        fprintf(f, "\\u%04x", (unsigned char) s[i + 1]);
                        i++;
                } else
                        fputc(c, f);
        }
}

bool id_is_valid_for_path(const char *id) {
        /* The API's id syntax, and nothing that could change the meaning of the URL path. */
        return id_is_valid(id, 64);
}

int read_bounded(const char *path, const char *what, char **ret, size_t *ret_size) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *buf = NULL;
        const char *name = streq(path, "-") ? "standard input" : path;
        size_t size = 0, allocated = 0;
        int in = STDIN_FILENO;

        if (!streq(path, "-")) {
                fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
                if (fd < 0)
                        return log_error_errno(-errno, "Failed to open %s: %m", path);
                in = fd;
        }

        for (;;) {
                ssize_t k;

                if (size == allocated) {
                        /* One byte beyond the cap is enough to know the input is too large. */
                        size_t a = MIN(MAX(allocated * 2, (size_t) 65536), CODE_MAX + 1);
                        char *p = realloc(buf, a);

                        if (!p)
                                return log_oom();
                        buf = p;
                        allocated = a;
                }

                k = read(in, buf + size, allocated - size);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return log_error_errno(-errno, "Failed to read %s: %m", name);
                }
                if (k == 0)
                        break;
                size += (size_t) k;
                if (size > CODE_MAX)
                        return log_error_errno(-EFBIG, "%s: %s is larger than %zu MiB, refusing it.", name,
                                               what, CODE_MAX / 1024 / 1024);
        }

        *ret = TAKE_PTR(buf);
        *ret_size = size;
        return 0;
}

/* RFC 3339 ("2026-11-30T03:20:00.123Z", or with an offset) as µs since the epoch. -EINVAL for
 * anything else. Fractions beyond µs are cut. */
int parse_timestamp(const CtlString *s, int64_t *ret_usec) {
        struct tm tm = {};
        const char *p;
        long offset = 0;
        int64_t frac = 0, scale = 1000000;
        time_t t;

        if (!s->s || s->len == 0)
                return -EINVAL;

        p = strptime(s->s, "%Y-%m-%dT%H:%M:%S", &tm);
        if (!p)
                return -EINVAL;
        if (*p == '.') {
                p++;
                if (*p < '0' || *p > '9')
                        return -EINVAL;
                while (*p >= '0' && *p <= '9') {
                        if (scale > 1) {
                                scale /= 10;
                                frac += (*p - '0') * scale;
                        }
                        p++;
                }
        }
        if (*p == 'Z' || *p == 'z')
                p++;
        else if ((*p == '+' || *p == '-') && p[1] >= '0' && p[1] <= '2' && p[2] >= '0' && p[2] <= '9' &&
                 p[3] == ':' && p[4] >= '0' && p[4] <= '5' && p[5] >= '0' && p[5] <= '9') {
                offset = ((p[1] - '0') * 10 + (p[2] - '0')) * 3600L + ((p[4] - '0') * 10 + (p[5] - '0')) * 60L;
                if (*p == '-')
                        offset = -offset;
                p += 6;
        } else
                return -EINVAL;
        if (*p != '\0' || (size_t) (p - s->s) != s->len)
                return -EINVAL;

        tm.tm_isdst = 0;
        t = timegm(&tm);
        if (t == (time_t) -1)
                return -EINVAL;
        *ret_usec = ((int64_t) t - offset) * 1000000 + frac;
        return 0;
}

int64_t now_realtime_usec(void) {
        struct timespec ts;

        (void) clock_gettime(CLOCK_REALTIME, &ts);
        return (int64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

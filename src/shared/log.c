/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdarg.h>
#include <stdio.h>

#include "log.h"

static int max_level = LOG_INFO;
static const char *console_prefix;      /* a command's name: "name: message", no priority prefix */

void log_set_max_level(int level) {
        max_level = level;
}

int log_get_max_level(void) {
        return max_level;
}

void log_set_console_prefix(const char *prefix) {
        console_prefix = prefix;
}

int log_internal(int level, int error, const char *file, int line, const char *func, const char *format, ...) {
        char buf[2048];
        va_list ap;
        int e = error < 0 ? -error : error;

        if (level > max_level)
                return -e;

        /* %m refers to the error passed in, not whatever errno happens to be. */
        errno = e;
        va_start(ap, format);
        (void) vsnprintf(buf, sizeof(buf), format, ap);
        va_end(ap);

        /* One line per message: a newline inside would let a quoted name forge a second entry. */
        for (char *p = buf; *p; p++)
                if (*p == '\n' || *p == '\r')
                        *p = ' ';

        if (console_prefix)
                fprintf(stderr, "%s: %s\n", console_prefix, buf);
        else
                fprintf(stderr, "<%d>%s\n", level, buf);
        return -e;
}

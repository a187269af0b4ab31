/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <string.h>

#include "strong-log.h"

/* runsc's strace lines: "I1207 11:49:26.316474 29285 strace.go:611] [  44:  44] python3 X clone(
 * CLONE_CHILD_CLEARTID|CLONE_CHILD_SETTID|0x11, 0x0, 0x0, 0x7f75..., 0x0) = 0 (0x0) errno=11 (try
 * again) (7.228205ms)": "X" is the call's exit, then its arguments, its return and the errno. The
 * program's name (at most 15 bytes) comes before the " X ": all it could forge is a refusal of its own. */
bool strong_log_line_refused(const char *line) {
        static const char *const calls[] = { " X clone(", " X fork(", " X vfork(", " X clone3(" };

        if (!strstr(line, "] ") || !strstr(line, ") = ") || !strstr(line, " errno=11 ("))
                return false;
        for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++)
                if (strstr(line, calls[i]))
                        return true;
        return false;
}

void strong_log_scan_init(StrongLogScan *s) {
        s->len = 0;
        s->dropping = false;
        s->refused = false;
}

void strong_log_scan_feed(StrongLogScan *s, const char *buf, size_t n) {
        for (size_t i = 0; i < n; i++) {
                if (buf[i] == '\n') {
                        if (!s->dropping) {
                                s->line[s->len] = '\0';
                                if (strong_log_line_refused(s->line))
                                        s->refused = true;
                        }
                        s->len = 0;
                        s->dropping = false;
                } else if (s->len + 1 < sizeof(s->line) && buf[i] != '\0')
                        s->line[s->len++] = buf[i];
                else
                        s->dropping = true;
        }
}

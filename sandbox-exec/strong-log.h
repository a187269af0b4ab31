/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* gVisor's boot log, as the strong tier reads it (strong.c): runsc runs with --strace on the calls
 * that make a process, and a refused one ("X clone(...) = 0 (0x0) errno=11 (try again)") is the task
 * limit reached inside gVisor. Pure: fed the log's bytes in any pieces, it keeps one line at a time
 * (at most STRONG_LOG_LINE_MAX - 1 bytes: a longer line, or one with a NUL byte, is dropped whole) and
 * says whether any line so far was such a refusal. */

#include <stdbool.h>
#include <stddef.h>

#define STRONG_LOG_LINE_MAX 1024

typedef struct StrongLogScan {
        char line[STRONG_LOG_LINE_MAX];
        size_t len;
        bool dropping;          /* the line under way is too long or holds a NUL: dropped at its end */
        bool refused;           /* a call making a process was refused with EAGAIN */
} StrongLogScan;

void strong_log_scan_init(StrongLogScan *s);
void strong_log_scan_feed(StrongLogScan *s, const char *buf, size_t n);
/* One line of the log, without its newline. */
bool strong_log_line_refused(const char *line);

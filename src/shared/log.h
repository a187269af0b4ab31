/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Logging. Plain messages go to stderr with a "<N>" syslog priority prefix, which journald parses
 * for services (SyslogLevelPrefix=yes is the default), so they land in the journal with the right
 * PRIORITY= and _SYSTEMD_UNIT=. Events about executions carry structured fields (job.c's
 * log_execution_start() and friends, sd_journal_send()). libc only (no libsystemd), which is why it
 * can live in src/shared beside sandbox-exec's code. */

#include <errno.h>
#include <syslog.h>

#include "util.h"

void log_set_max_level(int level);
int log_get_max_level(void);
/* For a command run by a person (sandboxctl): messages as "prefix: message", without the priority
 * prefix journald reads. */
void log_set_console_prefix(const char *prefix);
int log_internal(int level, int error, const char *file, int line, const char *func, const char *format, ...)
        _printf_(6, 7);

#define log_full_errno(level, error, ...) \
        log_internal((level), (error), __FILE__, __LINE__, __func__, __VA_ARGS__)
#define log_full(level, ...) (void) log_full_errno((level), 0, __VA_ARGS__)

#define log_debug(...) log_full(LOG_DEBUG, __VA_ARGS__)
#define log_info(...) log_full(LOG_INFO, __VA_ARGS__)
#define log_notice(...) log_full(LOG_NOTICE, __VA_ARGS__)
#define log_warning(...) log_full(LOG_WARNING, __VA_ARGS__)
#define log_error(...) log_full(LOG_ERR, __VA_ARGS__)

/* These return -abs(error), so "return log_error_errno(r, "...: %m");" logs and returns in one. %m
 * prints strerror(error). */
#define log_debug_errno(error, ...) log_full_errno(LOG_DEBUG, (error), __VA_ARGS__)
#define log_info_errno(error, ...) log_full_errno(LOG_INFO, (error), __VA_ARGS__)
#define log_warning_errno(error, ...) log_full_errno(LOG_WARNING, (error), __VA_ARGS__)
#define log_error_errno(error, ...) log_full_errno(LOG_ERR, (error), __VA_ARGS__)

#define log_oom() log_error_errno(ENOMEM, "Out of memory.")

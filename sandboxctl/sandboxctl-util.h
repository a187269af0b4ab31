/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* sandboxctl's small helpers: its messages ("sandboxctl: ..." on stderr), exit statuses for local
 * failures, escaping untrusted text for a terminal, bounded reads of local files, time. Messages
 * are src/shared's log.h (with the "sandboxctl: " console prefix set in main()), base64 its base64.h. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base64.h"
#include "log.h"
#include "sandboxctl-json.h"
#include "util.h"

/* The daemon refuses much smaller code (MaxCodeBytes=, 1 MiB by default) and says so with its own
 * message; this cap only keeps us from reading a runaway pipe into memory. */
#define CODE_MAX ((size_t) 16 * 1024 * 1024)

static inline const char *strempty(const char *s) {
        return s ?: "";
}


int exit_status_for(int r, int otherwise);
int flush_stdout(void);
void fputs_escaped(FILE *f, const char *s, size_t n, bool multiline);

bool id_is_valid_for_path(const char *id);
int read_bounded(const char *path, const char *what, char **ret, size_t *ret_size);

int parse_timestamp(const CtlString *s, int64_t *ret_usec);
int64_t now_realtime_usec(void);

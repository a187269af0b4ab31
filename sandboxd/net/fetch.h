/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Input files: the request's "files" put into <workspace>/input/<path> before the unit starts.
 * Inline files are written at once; URLs are downloaded by the network worker (net-client.h: the
 * daemon reads only the body bytes and the outcome, and writes the file itself), FETCH_PARALLEL at a
 * time per execution, the rest queued.
 *
 * Every name is created relative to a directory fd, one component at a time, never following a
 * symlink (openat2 RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS|RESOLVE_NO_XDEV and
 * O_NOFOLLOW): a session workspace holds whatever earlier runs left there. A directory component
 * that exists as anything but a directory, or a file name that exists as anything but a regular
 * file, fails the execution; an existing regular file is replaced (unlinked, created afresh).
 * Files are 0644 and directories 0755, owned by root: the sandbox's user reads them, cannot change
 * them. */

#include <stdint.h>

#include "net-client.h"
#include "model/request.h"

#define FETCH_PARALLEL 4
#define FETCH_MAX_REDIRS 5          /* also sandboxd-net.c's */

typedef struct Fetch Fetch;

typedef struct FetchLimits {
        uint64_t max_file_bytes;         /* one file (MaxInputFileBytes=) */
        uint64_t max_total_bytes;        /* all files, inline ones included (MaxInputTotalBytes=, disk_mb) */
        uint64_t connect_timeout_sec;    /* InputConnectTimeoutSec= */
        uint64_t timeout_sec;            /* InputTimeoutSec= one whole transfer */
        bool allow_internal;             /* InputAllowInternalAddresses= */
} FetchLimits;

/* r is 0 when every file is in place, else negative with message naming the file and the reason
 * ("files[1] 'data/x.csv': HTTP 404"). Called once, from the loop, never from fetch_start(). The
 * callback may free f. */
typedef void (*fetch_done_t)(Fetch *f, int r, const char *message, void *userdata);

/* Create <workspace_dir>/input and every file. Returns 0 with *ret = NULL when nothing is left to
 * download (the files are in place), 0 with *ret set when downloads run (cb follows), or a negative
 * errno with *ret_message (malloc'ed) naming the file that could not be created. */
int fetch_start(NetClient *net, const char *workspace_dir, const InputFile *files, size_t n_files,
                const FetchLimits *limits, fetch_done_t cb, void *userdata, Fetch **ret, char **ret_message);

/* Abort whatever is still running; the callback is not called. */
Fetch *fetch_free(Fetch *f);
DEFINE_TRIVIAL_CLEANUP_FUNC(Fetch *, fetch_free);

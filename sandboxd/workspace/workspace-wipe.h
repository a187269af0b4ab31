/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Emptying a used workspace tmpfs so that the pool can hand it to the next execution without a new
 * mount. Everything in it was written by a program that is treated as hostile: no link is followed,
 * no file is opened (only directories, O_NOFOLLOW), no other mount is entered, and the work is
 * bounded by a budget of entries and depth. A wipe that cannot finish within it fails: the caller
 * then unmounts the workspace instead (a fresh mount costs systemd more, never safety). */

#include <stdatomic.h>
#include <stdint.h>

#include <systemd/sd-event.h>

/* Names removed by one wipe (files, links, directories...), and directory levels below the mount
 * root. 50 000 unlinks on tmpfs take a few tens of ms; a program that leaves more costs a remount. */
#define WORKSPACE_WIPE_ENTRIES_MAX 50000
#define WORKSPACE_WIPE_DEPTH_MAX 512

typedef struct WipeLimits {
        uint64_t max_entries;
        unsigned max_depth;
} WipeLimits;

/* Remove everything below root_fd (a directory fd of the mount root; the root itself stays) and check
 * that nothing is left: no name in the root and, on a tmpfs, no inode but the root's and no block in
 * use (an unlinked file still held open somewhere would be). Directories on another device than
 * root_fd's are never entered. cancel (may be NULL) is polled between entries. *ret_entries (may be
 * NULL) gets the names removed, also on failure. Returns 0, -E2BIG over max_entries, -ELOOP over
 * max_depth, -EXDEV for another mount, -ENOTEMPTY when something is left, -ECANCELED, or -errno. */
int workspace_wipe(int root_fd, const WipeLimits *lim, const atomic_bool *cancel, uint64_t *ret_entries);

/* The same on a worker thread; cb(r, entries, userdata) runs on the loop when it is done. */
typedef struct WorkspaceWipe WorkspaceWipe;
typedef void (*workspace_wipe_done_t)(int r, uint64_t entries, void *userdata);
int workspace_wipe_async(sd_event *event, int root_fd, const WipeLimits *lim, workspace_wipe_done_t cb,
                         void *userdata, WorkspaceWipe **ret);
/* Stop it (the worker stops at its next entry, and is joined) without calling cb; NULL is fine. */
WorkspaceWipe *workspace_wipe_cancel(WorkspaceWipe *w);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Artifact collection: after an execution's unit has ended and its cgroup is empty, the regular
 * files below the workspace's output/ directory are copied into a content-addressed store. Every
 * name and byte in the workspace is hostile: the walk is relative to directory fds opened with
 * openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS|RESOLVE_NO_XDEV) and O_NOFOLLOW;
 * symlinks, hard links (st_nlink > 1), FIFOs, sockets and devices are skipped and reported, never
 * opened for reading; sizes are judged from fstat() before a byte is read; the copy is streamed
 * (constant memory) while hashing, into a file the store owns with mode 0644 (no setuid/setgid).
 *
 * Two measures of a file: its size (st_size, what a download returns and what is hashed, holes
 * included) and its charge (st_blocks * 512, what is really there). The copy keeps the holes
 * (SEEK_DATA/SEEK_HOLE), so what the store really holds is the charge, and the disk budgets (the
 * execution's, its caller's, the store's, the file system's free space) count charges, checked
 * before each file is copied. The size caps bound the work: hashing a hole costs CPU, not disk.
 *
 * The store: store_dir/<first two hex digits>/<sha256 hex>, written through a temporary file and
 * renamed into place; identical content is stored once. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "util.h"

#define ARTIFACT_SKIPPED_LISTED_MAX 100   /* skipped entries listed one by one; the rest are counted */
#define ARTIFACT_DEPTH_MAX 64             /* max_depth is clamped to this (one open directory per level) */
#define ARTIFACT_BUDGET_NONE UINT64_MAX   /* a budget that does not bind */

/* What a disk budget has charged so far, shared by the event loop (which records collections in
 * the store and purges them) and the collectors' worker threads (which charge each file before
 * copying it). Both fields are read and written only under the module's lock, through the functions
 * below. */
typedef struct ArtifactAccount {
        uint64_t committed;             /* charges of the artifacts the store records */
        uint64_t reserved;              /* charges of files copied by collections not yet recorded */
} ArtifactAccount;

/* The loop: the store's records now charge this much (after a put or a purge). */
void artifact_account_set_committed(ArtifactAccount *a, uint64_t committed);
/* The loop: a collection is over (recorded or not), its reservation goes (ArtifactList.charged_bytes). */
void artifact_account_release(ArtifactAccount *a, uint64_t reserved);
/* committed + reserved. */
uint64_t artifact_account_used(ArtifactAccount *a);

typedef struct ArtifactLimits {
        uint64_t max_files;             /* artifacts collected at most; further files are skipped */
        uint64_t max_file_bytes;        /* a larger file (by size) is skipped ("too_large"), never read */
        uint64_t max_total_bytes;       /* sum of collected sizes: the bytes hashed, holes included */
        size_t max_path;                /* bytes of a relative path below output/ */
        unsigned max_depth;             /* directory nesting below output/: 0 collects only the files
                                         * directly in output/, 1 also those of output/x/, ...; a
                                         * directory deeper than that is skipped as "too_deep" */
        /* The disk budgets, in charged bytes. ARTIFACT_BUDGET_NONE (or a NULL account): none; left 0,
         * a budget lets only files that charge nothing through (ARTIFACT_LIMITS_NO_BUDGETS). */
        uint64_t execution_max_bytes;   /* this collection (the execution's disk_mb): "execution_budget";
                                         * a file with holes whose size alone exceeds it: "sparse" */
        ArtifactAccount *caller;        /* the caller's account, and its budget: "caller_budget" */
        uint64_t caller_max_bytes;
        ArtifactAccount *store;         /* the whole store's, and its budget: "store_budget" */
        uint64_t store_max_bytes;
        uint64_t min_free_bytes;        /* the store's file system keeps this much available to
                                         * unprivileged users (fstatvfs f_bavail): "low_disk_space" */
        unsigned min_free_percent;      /* ... or this share of its size, whichever is more (0..100) */
} ArtifactLimits;

/* The sizes without any budget: what a collection that only obeys the size caps passes. */
#define ARTIFACT_LIMITS_NO_BUDGETS                                                                 \
        .execution_max_bytes = ARTIFACT_BUDGET_NONE, .caller_max_bytes = ARTIFACT_BUDGET_NONE,       \
        .store_max_bytes = ARTIFACT_BUDGET_NONE

/* One file against the disk budgets, before it is copied: every number a plain value, so each row
 * of the table can be tested. */
typedef struct ArtifactBudgetCheck {
        uint64_t charge;                /* the file's st_blocks * 512 */
        uint64_t execution_used, execution_max;
        uint64_t caller_used, caller_max;
        uint64_t store_used, store_max;
        uint64_t available, min_free;   /* available UINT64_MAX: not known (fstatvfs failed) */
} ArtifactBudgetCheck;

/* NULL if the file fits every budget, else the reason it is skipped: "execution_budget",
 * "caller_budget", "store_budget", "low_disk_space" (judged in this order: the most specific
 * budget names the reason). A file that charges nothing (empty, or all holes) always fits. */
const char *artifact_budget_check(const ArtifactBudgetCheck *c);

typedef struct Artifact {
        char *path;                     /* relative to output/, valid UTF-8 without control characters */
        uint64_t size;                  /* st_size */
        uint64_t charged_bytes;         /* st_blocks * 512 when it was judged: what the store holds */
        const char *mime_type;          /* static (mime.h) */
        char sha256[65];                /* lower-case hex */
} Artifact;

typedef struct ArtifactSkip {
        char *path;                     /* printable: bytes that are not valid UTF-8 or are control
                                         * characters, and the backslash, are shown as \xNN; cut to
                                         * max_path at a character boundary; "." is output/ itself */
        const char *reason;             /* static: "symlink", "hardlink", "fifo", "socket", "device"
                                         * (a device node, or a mount below output/), "too_large",
                                         * "too_many", "total_too_large", "name_invalid",
                                         * "path_too_long", "too_deep", "not_directory", "io_error"
                                         * (unreadable, replaced while collected, or shrank), "sparse",
                                         * and the budgets' (artifact_budget_check()) */
} ArtifactSkip;

typedef struct ArtifactList {
        Artifact *items;                /* sorted by path (strcmp) */
        size_t n_items;
        ArtifactSkip *skipped;          /* at most ARTIFACT_SKIPPED_LISTED_MAX, the first met in
                                         * directory order, sorted by path */
        size_t n_skipped;
        uint64_t n_skipped_total;       /* including those not listed */
        uint64_t total_bytes;           /* sum of the sizes */
        uint64_t charged_bytes;         /* sum of the charges: reserved in lim->caller and lim->store
                                         * until the caller releases it (artifact_account_release()) */
} ArtifactList;

ArtifactList *artifact_list_free(ArtifactList *l);
DEFINE_TRIVIAL_CLEANUP_FUNC(ArtifactList *, artifact_list_free);

/* Collect workspace_fd/output/ into the store at store_fd. workspace_fd is the directory that
 * appears as /workspace in the sandbox. A missing output/ yields an empty list; output/ that is a
 * symlink or not a directory yields an empty list with one "not_directory" skip. Blocking (it reads
 * and writes files): call it from a worker thread, or use artifacts_collect_async(). 0 or -errno
 * (errors of the store side: -ENOSPC, -EIO ...; hostile workspace content is never an error).
 * On success the list's charged_bytes stay reserved in lim->caller and lim->store; on failure
 * nothing does. */
int artifacts_collect(int workspace_fd, int store_fd, const ArtifactLimits *lim, ArtifactList **ret);

/* Run artifacts_collect() on a worker thread; cb runs on the event loop with its result (r < 0:
 * failure, list NULL; else the callee owns list). The fds are duplicated; the caller may close its
 * own. Cancelling (artifact_collect_cancel) joins the thread (the worker stops between two entries
 * or two 64 KiB chunks, -ECANCELED) and drops the result without calling cb. The handle is the
 * caller's in every case: after cb, artifact_collect_cancel() only frees it, and it may be called
 * from within cb. */
typedef struct ArtifactCollect ArtifactCollect;
typedef void (*artifacts_done_t)(int r, ArtifactList *list, void *userdata);
int artifacts_collect_async(sd_event *event, int workspace_fd, int store_fd, const ArtifactLimits *lim,
                            artifacts_done_t cb, void *userdata, ArtifactCollect **ret);
ArtifactCollect *artifact_collect_cancel(ArtifactCollect *c);

/* Open (creating if missing, mode 0700; its parent must exist) the store directory; its fd. */
int artifacts_store_open(const char *dir);
/* Open one stored artifact for reading by its hex digest: a read-only fd, or -ENOENT/-EINVAL. */
int artifacts_store_open_blob(int store_fd, const char *sha256_hex);
/* Remove one blob (when no record refers to it any more). -ENOENT if absent. */
int artifacts_store_remove_blob(int store_fd, const char *sha256_hex);

/* The walk's building blocks, for tests and for whoever else opens below a hostile directory. */
/* openat2(path, flags | O_NOFOLLOW | O_CLOEXEC) with RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|
 * RESOLVE_NO_MAGICLINKS|RESOLVE_NO_XDEV: no symlink in any component, nothing outside dir_fd, no
 * mount crossed. An fd or -errno (-ELOOP: a symlink on the way; -ENOSYS: a kernel before 5.6). */
int artifacts_openat_beneath(int dir_fd, const char *path, int flags);
/* The printable rendering of a hostile path used for ArtifactSkip.path (see there); NULL on OOM. */
char *artifacts_path_render(const char *path, size_t max);

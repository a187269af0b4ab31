/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Execution workspaces: one size-bounded tmpfs per execution, mounted by systemd as a transient
 * mount unit below RuntimeDirectory/workspaces. A pool keeps some mounted ahead of time: systemd 252
 * rate-limits its reaction to mount-table changes (5 per second), so a mount started on demand can
 * wait most of a second. A workspace of the default size is mounted once and recycled: after its
 * execution it is wiped (workspace-wipe.h, on a worker thread), checked empty, given its skeleton
 * again and put back; one that cannot be wiped within the budget is unmounted and replaced by a fresh
 * mount. Other sizes, and workspaces of executions that failed in sandboxd, are unmounted after their
 * execution, as are all when WorkspacePool=0. */

#include <stdbool.h>
#include <stdint.h>

#include "model/context.h"
#include "systemd/sysd.h"

typedef struct Workspace Workspace;
typedef struct WorkspaceWipe WorkspaceWipe;
typedef struct WorkspacePool WorkspacePool;
struct Workspace {
        WorkspacePool *pool;             /* while in it */
        Workspace *next;
        char *path, *mount_name;
        uint64_t size;
        bool ready;                      /* mounted and its directories created */
        uint64_t lease;                  /* taken: the pool's generation then (workspace_pool_give_back) */
        WorkspaceWipe *wipe;             /* given back: being emptied */
        SysdCall *call;                  /* StartTransientUnit of its mount */
        SysdWatch *watch;                /* its mount unit's start job */
};

Workspace *workspace_free(Workspace *w);
DEFINE_TRIVIAL_CLEANUP_FUNC(Workspace *, workspace_free);

/* Create workspace/ (0777), tmp/ (01777) and the sandbox's root skeleton (sandbox-root.h) in the
 * freshly mounted tmpfs at path, after checking that path is the mount itself (a tmpfs on a different
 * device than parent). */
int workspace_prepare_dirs(const char *path, const char *parent, const char *log_id);
/* (Re)write the root skeleton into a session's mount root before one of its runs. */
int workspace_prepare_root(const char *path, bool session, const char *log_id);

/* The pool (empty until filled). Freeing it forgets its workspaces without unmounting them. */
int workspace_pool_new(const Context *ctx, WorkspacePool **ret);
WorkspacePool *workspace_pool_free(WorkspacePool *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(WorkspacePool *, workspace_pool_free);
/* Ready, mounting or being wiped. */
unsigned workspace_pool_count(const WorkspacePool *p);
/* Top the pool up to WorkspacePool= workspaces of the default size, counting those lent out. */
void workspace_pool_fill(WorkspacePool *p);
/* A ready workspace of exactly this size, removed from the pool and lent (w->lease), or NULL. */
Workspace *workspace_pool_take(WorkspacePool *p, uint64_t size);
/* The execution that took the workspace at path (lease: w->lease then, 0 for one the pool never lent)
 * is final and nothing of it runs any more. true: the pool has it back (it wipes it, and unmounts it
 * itself should that fail); false: the caller stops its mount unit. reusable=false (the execution
 * failed in sandboxd, or processes may be left) never reuses it: the pool mounts a fresh one. */
bool workspace_pool_give_back(WorkspacePool *p, const char *path, const char *mount_name, uint64_t lease,
                              bool reusable);
/* Is this directory name below workspaces/ a pool workspace? */
bool workspace_pool_owns_dir(const WorkspacePool *p, const char *name);
/* Unmount every pooled workspace (a change of the default size); those lent out are unmounted when
 * they come back. */
void workspace_pool_drain(WorkspacePool *p);
/* At stop: StopUnit for each pooled workspace, cb(userdata) for each answer; how many were sent. */
unsigned workspace_pool_stop_all(WorkspacePool *p, sysd_done_t cb, void *userdata);

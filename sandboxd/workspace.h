/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Execution workspaces: one size-bounded tmpfs per execution, mounted by systemd as a transient
 * mount unit below RuntimeDirectory/workspaces. A pool keeps some mounted ahead of time: systemd 252
 * rate-limits its reaction to mount-table changes (5 per second), so a mount started on demand can
 * wait most of a second. Workspaces are single-use: each is unmounted after its execution. */

#include <stdbool.h>
#include <stdint.h>

#include "manager.h"
#include "sysd.h"

typedef struct Workspace Workspace;
struct Workspace {
        Manager *manager;
        Workspace *next;
        char *path, *mount_name;
        uint64_t size;
        bool ready;                      /* mounted and its directories created */
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

/* Top the pool up to WorkspacePool= ready-or-mounting workspaces of the default size. */
void workspace_pool_fill(Manager *m);
/* A ready workspace of exactly this size, removed from the pool, or NULL. */
Workspace *workspace_pool_take(Manager *m, uint64_t size);
/* Is this directory name below workspaces/ a pool workspace? */
bool workspace_pool_owns_dir(Manager *m, const char *name);
/* Unmount every pooled workspace (stop, or a change of the default size). */
void workspace_pool_drain(Manager *m);

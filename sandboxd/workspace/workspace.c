/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include "log.h"
#include "systemd/sysd.h"
#include "time-util.h"
#include "unit/unit-props.h"
#include "unit/usr-layer.h"
#include "workspace-wipe.h"
#include "workspace.h"

#define POOL_RETRY_USEC (5 * USEC_PER_SEC)

Workspace *workspace_free(Workspace *w) {
        if (!w)
                return NULL;
        workspace_wipe_cancel(w->wipe);
        sysd_call_free(w->call);
        sysd_watch_free(w->watch);
        free(w->path);
        free(w->mount_name);
        free(w);
        return NULL;
}

int workspace_prepare_dirs(const char *path, const char *parent_path, const char *log_id) {
        static const struct {
                const char *name;
                mode_t mode;
        } dirs[] = {
                { "workspace", 0777 },   /* the dynamic user writes here; nobody else can reach it */
                { "tmp", 01777 },
        };
        _cleanup_close_ int fd = -EBADF;
        struct statfs sfs;
        struct stat st, parent;
        int r;

        /* Nothing has run in it yet, but open it as if it were hostile. */
        fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return log_error_errno(errno, "%s: cannot open workspace '%s': %m", log_id, path);
        if (fstatfs(fd, &sfs) < 0 || fstat(fd, &st) < 0 || stat(parent_path, &parent) < 0)
                return -errno;
        /* It must be the tmpfs itself, not the directory under it: if the mount did not reach this
         * mount namespace (propagation), writing here would fill /run instead. */
        if (sfs.f_type != TMPFS_MAGIC || st.st_dev == parent.st_dev)
                return log_error_errno(EMEDIUMTYPE, "%s: workspace '%s' is not a mounted tmpfs in sandboxd's mount "
                                       "namespace", log_id, path);
        for (size_t i = 0; i < ELEMENTSOF(dirs); i++) {
                if (mkdirat(fd, dirs[i].name, 0700) < 0)
                        return log_error_errno(errno, "%s: mkdir %s: %m", log_id, dirs[i].name);
                if (fchmodat(fd, dirs[i].name, dirs[i].mode, 0) < 0)
                        return log_error_errno(errno, "%s: chmod %s: %m", log_id, dirs[i].name);
        }
        /* The tmpfs is the sandbox's root (RootDirectory=): its skeleton, root's, read-only inside. */
        r = sandbox_root_write(fd, false);
        if (r < 0)
                return log_error_errno(r, "%s: cannot write the sandbox's root into '%s': %m", log_id, path);
        if (fchmod(fd, 0755) < 0)
                return log_error_errno(errno, "%s: chmod '%s': %m", log_id, path);
        return 0;
}

int workspace_prepare_root(const char *path, bool session, const char *log_id) {
        _cleanup_close_ int fd = -EBADF;
        int r;

        /* A root-owned mount point the sandbox never sees from above: its workspace/ and tmp/ are
         * bound in, the rest is ours. */
        fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return log_error_errno(errno, "%s: cannot open '%s': %m", log_id, path);
        r = sandbox_root_write(fd, session);
        if (r < 0)
                return log_error_errno(r, "%s: cannot write the sandbox's root into '%s': %m", log_id, path);
        return 0;
}

struct WorkspacePool {
        const Context *ctx;
        Workspace *list;
        unsigned n;              /* in list: mounting, ready or being wiped */
        unsigned n_lent;         /* taken by executions of this generation, to come back */
        uint64_t generation;     /* a drain forgets what was lent before it */
        uint64_t retry_after;    /* CLOCK_MONOTONIC: no new mount before (one failed) */
};

int workspace_pool_new(const Context *ctx, WorkspacePool **ret) {
        WorkspacePool *p = calloc(1, sizeof(WorkspacePool));

        if (!p)
                return -ENOMEM;
        p->ctx = ctx;
        p->generation = 1;
        *ret = p;
        return 0;
}

WorkspacePool *workspace_pool_free(WorkspacePool *p) {
        if (!p)
                return NULL;
        while (p->list) {
                Workspace *w = p->list;

                p->list = w->next;
                workspace_free(w);
        }
        free(p);
        return NULL;
}

unsigned workspace_pool_count(const WorkspacePool *p) {
        return p->n;
}

static uint64_t pool_size_bytes(WorkspacePool *p) {
        return sandbox_workspace_bytes(&p->ctx->config->defaults);
}

static void pool_remove(WorkspacePool *p, Workspace *w) {
        for (Workspace **x = &p->list; *x; x = &(*x)->next)
                if (*x == w) {
                        *x = w->next;
                        p->n--;
                        return;
                }
}

static void on_pool_mount_reply(void *userdata, int r, const char *message) {
        Workspace *w = userdata;
        WorkspacePool *p = w->pool;

        w->call = sysd_call_free(w->call);
        if (r < 0) {
                log_warning("Pool workspace %s could not be mounted: %s", w->mount_name, strna(message));
                p->retry_after = now_usec(CLOCK_MONOTONIC) + POOL_RETRY_USEC;
                pool_remove(p, w);
                workspace_free(w);
        }
}

/* The mount's start job ended. */
static void on_pool_job_removed(void *userdata, const char *unit, const char *result) {
        Workspace *w = userdata;
        WorkspacePool *p = w->pool;

        if (w->ready || w->wipe)
                return;
        if (!streq(result, "done") || workspace_prepare_dirs(w->path, p->ctx->workspaces_dir, w->mount_name) < 0) {
                log_warning("Pool workspace %s: mount job '%s', dropped.", unit, result);
                p->retry_after = now_usec(CLOCK_MONOTONIC) + POOL_RETRY_USEC;
                (void) sysd_stop_unit(p->ctx->sysd, w->mount_name, NULL, NULL);
                pool_remove(p, w);
                workspace_free(w);
                return;
        }
        w->ready = true;
}

static const SysdUnitEvents pool_events = { .job_removed = on_pool_job_removed };

void workspace_pool_fill(WorkspacePool *p) {
        uint64_t size = pool_size_bytes(p);

        if (p->ctx->stopping || !p->ctx->sysd || now_usec(CLOCK_MONOTONIC) < p->retry_after)
                return;
        /* The lent ones count: they come back wiped, and a mount for each would change the host's mount
         * table per execution, which is what the pool is there to avoid. */
        while (p->n + p->n_lent < p->ctx->config->workspace_pool) {
                _cleanup_(workspace_freep) Workspace *w = NULL;
                char id[64];
                int r;

                if (id_generate(id, sizeof(id), "pool") < 0)
                        return;
                w = calloc(1, sizeof(Workspace));
                if (!w)
                        return;
                w->pool = p;
                w->size = size;
                if (asprintf(&w->path, "%s/%s", p->ctx->workspaces_dir, id) < 0) {
                        w->path = NULL;
                        return;
                }
                w->mount_name = mount_unit_name_from_path(w->path);
                if (!w->mount_name)
                        return;
                /* Watch first, then start. */
                r = sysd_watch(p->ctx->sysd, w->mount_name, &pool_events, w, &w->watch);
                if (r >= 0)
                        r = sysd_start_tmpfs(p->ctx->sysd, w->mount_name, w->path, size, on_pool_mount_reply, w, &w->call);
                if (r < 0) {
                        log_warning_errno(r, "Cannot start pool workspace: %m");
                        p->retry_after = now_usec(CLOCK_MONOTONIC) + POOL_RETRY_USEC;
                        return;
                }
                w->next = p->list;
                p->list = TAKE_PTR(w);
                p->n++;
        }
}

Workspace *workspace_pool_take(WorkspacePool *p, uint64_t size) {
        for (Workspace *w = p->list; w; w = w->next)
                if (w->ready && w->size == size) {
                        pool_remove(p, w);
                        w->next = NULL;
                        w->lease = p->generation;
                        p->n_lent++;
                        return w;
                }
        return NULL;
}

/* A wipe's end: the skeleton again, and ready; or, on any failure, unmounted and replaced. */
static void on_pool_wipe_done(int r, uint64_t entries, void *userdata) {
        Workspace *w = userdata;
        WorkspacePool *p = w->pool;

        w->wipe = workspace_wipe_cancel(w->wipe);
        if (r < 0)
                log_info_errno(r, "Pool workspace %s: not reused after %" PRIu64 " entries (%m), replacing it.",
                               w->mount_name, entries);
        else
                r = workspace_prepare_dirs(w->path, p->ctx->workspaces_dir, w->mount_name);
        if (r < 0) {
                if (p->ctx->sysd)
                        (void) sysd_stop_unit(p->ctx->sysd, w->mount_name, NULL, NULL);
                pool_remove(p, w);
                workspace_free(w);
                metrics_workspace_replaced(p->ctx->metrics);
                workspace_pool_fill(p);
                return;
        }
        w->ready = true;
        metrics_workspace_recycled(p->ctx->metrics);
        log_debug("Pool workspace %s: wiped (%" PRIu64 " entries), ready again.", w->mount_name, entries);
}

/* The mount root at path, a direct child of workspaces_dir, as a directory fd, never through a link;
 * it must be the tmpfs itself (another device than its parent). */
static int open_mount_root(const char *workspaces_dir, const char *path) {
        _cleanup_close_ int parent = -EBADF, fd = -EBADF;
        const char *name = startswith(path, workspaces_dir);
        struct statfs sfs;
        struct stat st, pst;

        if (!name || name[0] != '/' || !name[1] || strchr(name + 1, '/'))
                return -EINVAL;
        parent = open(workspaces_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (parent < 0)
                return -errno;
        fd = openat(parent, name + 1, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        if (fstat(parent, &pst) < 0 || fstat(fd, &st) < 0 || fstatfs(fd, &sfs) < 0)
                return -errno;
        if (sfs.f_type != TMPFS_MAGIC || st.st_dev == pst.st_dev)
                return -EMEDIUMTYPE;
        return TAKE_FD(fd);
}

bool workspace_pool_give_back(WorkspacePool *p, const char *path, const char *mount_name, uint64_t lease,
                              bool reusable) {
        _cleanup_(workspace_freep) Workspace *w = NULL;
        _cleanup_close_ int fd = -EBADF;
        WipeLimits lim = { .max_entries = WORKSPACE_WIPE_ENTRIES_MAX, .max_depth = WORKSPACE_WIPE_DEPTH_MAX };
        int r;

        /* Not lent by this pool, or lent before a drain: unmounted as it always was. */
        if (!p || lease == 0 || lease != p->generation || p->n_lent == 0)
                return false;
        p->n_lent--;
        if (!reusable || p->ctx->stopping || !p->ctx->sysd || !p->ctx->event ||
            p->n + p->n_lent >= p->ctx->config->workspace_pool) {
                if (!reusable)
                        metrics_workspace_replaced(p->ctx->metrics);
                workspace_pool_fill(p);
                return false;
        }
        w = calloc(1, sizeof(Workspace));
        if (!w)
                goto fail;
        w->pool = p;
        w->size = pool_size_bytes(p);
        w->path = strdup(path);
        w->mount_name = strdup(mount_name);
        if (!w->path || !w->mount_name)
                goto fail;
        fd = open_mount_root(p->ctx->workspaces_dir, w->path);
        if (fd < 0) {
                log_warning_errno(fd, "Pool workspace %s: cannot open its mount root, replacing it: %m",
                                  mount_name);
                goto fail;
        }
        /* Watched again, so that the sweep knows it is the pool's. */
        r = sysd_watch(p->ctx->sysd, w->mount_name, &pool_events, w, &w->watch);
        if (r >= 0)
                r = workspace_wipe_async(p->ctx->event, fd, &lim, on_pool_wipe_done, w, &w->wipe);
        if (r < 0) {
                log_warning_errno(r, "Pool workspace %s: cannot start its wipe, replacing it: %m", mount_name);
                goto fail;
        }
        w->next = p->list;
        p->list = TAKE_PTR(w);
        p->n++;
        return true;

fail:
        metrics_workspace_replaced(p->ctx->metrics);
        workspace_pool_fill(p);
        return false;
}

bool workspace_pool_owns_dir(const WorkspacePool *p, const char *name) {
        size_t l = strlen(p->ctx->workspaces_dir);

        for (Workspace *w = p->list; w; w = w->next)
                if (strncmp(w->path, p->ctx->workspaces_dir, l) == 0 && w->path[l] == '/' && streq(w->path + l + 1, name))
                        return true;
        return false;
}

void workspace_pool_drain(WorkspacePool *p) {
        /* What is lent out now is unmounted when it comes back. */
        p->generation++;
        p->n_lent = 0;
        while (p->list) {
                Workspace *w = p->list;

                p->list = w->next;
                p->n--;
                /* A wipe still holds the mount open: the unmount would fail with EBUSY. */
                w->wipe = workspace_wipe_cancel(w->wipe);
                if (p->ctx->sysd)
                        (void) sysd_stop_unit(p->ctx->sysd, w->mount_name, NULL, NULL);
                workspace_free(w);
        }
}

unsigned workspace_pool_stop_all(WorkspacePool *p, sysd_done_t cb, void *userdata) {
        unsigned n = 0;

        for (Workspace *w = p->list; w && p->ctx->sysd; w = w->next) {
                w->wipe = workspace_wipe_cancel(w->wipe);
                if (sysd_stop_unit(p->ctx->sysd, w->mount_name, cb, userdata) >= 0)
                        n++;
        }
        return n;
}

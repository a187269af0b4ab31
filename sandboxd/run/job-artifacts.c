/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* A finished job's artifacts: collected from its workspace once the unit's cgroup is empty, the list
 * recorded, the budgets settled. */

#include <fcntl.h>
#include <json-c/json.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "delivery/artifact-accounts.h"
#include "exec-protocol.h"
#include "job-internal.h"
#include "log.h"
#include "session.h"
#include "time-util.h"
#include "workspace/workspace.h"

/* What the collector returned, as the execution and the store keep it. */
static int artifacts_from_list(const ArtifactList *l, ExecArtifacts **ret) {
        _cleanup_(exec_artifacts_freep) ExecArtifacts *a = exec_artifacts_new();
        int r;

        if (!a)
                return -ENOMEM;
        for (size_t i = 0; i < l->n_items; i++) {
                r = exec_artifacts_add(a, l->items[i].path, l->items[i].size, l->items[i].mime_type,
                                       l->items[i].sha256);
                if (r < 0)
                        return r;
                a->items[a->n_items - 1].charged_bytes = l->items[i].charged_bytes;
        }
        for (size_t i = 0; i < l->n_skipped; i++) {
                r = exec_artifacts_add_skip(a, l->skipped[i].path, l->skipped[i].reason);
                if (r < 0)
                        return r;
        }
        a->n_skipped_total = l->n_skipped_total;
        *ret = TAKE_PTR(a);
        return 0;
}

static void artifacts_recorded(Job *j, int k);
static void on_artifacts_recorded(void *userdata, int k, StoreRecord *rec);

static void on_artifacts_done(int r, ArtifactList *list, void *userdata) {
        _cleanup_(artifact_list_freep) ArtifactList *l = list;
        Job *j = userdata;
        ExecArtifacts *a = NULL;
        int k;

        j->collect = artifact_collect_cancel(j->collect);       /* frees the handle; the thread is done */
        /* A sweep may have removed a blob this collection found already stored (its last record
         * purged between the copy and now): collect once more, the workspace is still there. */
        for (size_t i = 0; r >= 0 && l && i < l->n_items && !j->artifacts_retried; i++) {
                int fd = artifacts_store_open_blob(j->ctx->artifacts_fd, l->items[i].sha256);

                if (fd == -ENOENT) {
                        log_info("%s: an artifact blob was purged meanwhile, collecting again", j->exec->id);
                        j->artifacts_retried = true;
                        artifact_accounts_settle(j->ctx->accounts, &j->artifact_caller, l->charged_bytes, false);
                        job_maybe_finalize(j);
                        return;
                }
                safe_close(fd);
        }
        if (r < 0)
                log_error_errno(r, "%s: collecting the artifacts failed: %m", j->exec->id);
        else if (artifacts_from_list(l, &a) < 0)
                log_oom();
        if (!a) {
                /* The execution is final all the same, with an empty list that says why. */
                a = exec_artifacts_new();
                if (a && exec_artifacts_add_skip(a, ".", "io_error") >= 0)
                        a->n_skipped_total = 1;
        }
        exec_artifacts_free(j->exec->artifacts);
        j->exec->artifacts = a;
        j->artifacts_charged = l ? l->charged_bytes : 0;        /* r < 0: the collector gave it back */
        j->artifacts_collect_ok = r >= 0;
        if (a && j->ctx->store) {
                /* Recorded without waiting: the job waits for the answer (JOB_WAIT_ARTIFACTS). */
                j->artifacts_recording = true;
                k = store_put_artifacts_async(j->ctx->store, j->exec->id, a, on_artifacts_recorded, j, NULL);
                if (k >= 0)
                        return;
                artifacts_recorded(j, k);
                return;
        }
        artifacts_recorded(j, 1);
}

/* The list's write ended with k (1: none was made): the budgets settled, the job goes on. */
static void artifacts_recorded(Job *j, int k) {
        const ExecArtifacts *a = j->exec->artifacts;

        j->artifacts_recording = false;
        /* A store shared by several nodes checks the blobs again under its artifacts lock
         * (store_set_blob_hooks()): a purge on another node took one since the check above. */
        if (k == -ESTALE && !j->artifacts_retried && j->artifacts_collect_ok) {
                log_info("%s: an artifact blob was purged by another node meanwhile, collecting again", j->exec->id);
                j->artifacts_retried = true;
                artifact_accounts_settle(j->ctx->accounts, &j->artifact_caller, j->artifacts_charged, false);
                job_maybe_finalize(j);
                return;
        }
        if (k < 0) {
                metrics_store_error(j->ctx->metrics);
                log_error_errno(k, "%s: cannot record the artifacts: %s", j->exec->id, store_error_message(j->ctx->store));
        } else if (k == 0)
                j->artifacts_stored = true;
        artifact_accounts_settle(j->ctx->accounts, &j->artifact_caller, j->artifacts_charged, j->artifacts_stored);
        if (a)
                log_debug("%s: %zu artifacts collected, %" PRIu64 " skipped", j->exec->id, a->n_items,
                          a->n_skipped_total);
        j->waiting &= ~JOB_WAIT_ARTIFACTS;
        job_maybe_finalize(j);
}

/* The answer to store_put_artifacts_async(); never called after job_free() (store_cancel_userdata()). */
static void on_artifacts_recorded(void *userdata, int k, StoreRecord *rec) {
        store_record_free(rec);
        artifacts_recorded(userdata, k);
}

/* Is anything still running in the unit's cgroup? A unit that systemd reports inactive has nothing
 * left, unless a process survived the final SIGKILL (stuck in the kernel); then nothing below the
 * workspace is read. v2: "populated" in cgroup.events; v1: a pid in the pids hierarchy's
 * cgroup.procs. No file (the cgroup is gone) counts as empty. */
bool job_unit_cgroup_populated(Job *j) {
        Context *ctx = j->ctx;
        _cleanup_free_ char *path = NULL;
        _cleanup_close_ int fd = -EBADF;
        char buf[256];
        ssize_t n;

        for (size_t i = 0; i < ctx->n_cgroups && !path; i++) {
                const char *file = ctx->cgroup_v2 && streq(ctx->cgroups[i].name, "unified") ? "cgroup.events" :
                                   !ctx->cgroup_v2 && streq(ctx->cgroups[i].name, "pids") ? "cgroup.procs" : NULL;

                if (file && asprintf(&path, "%s/%s/%s", ctx->cgroups[i].slice_dir, j->unit_name, file) < 0) {
                        path = NULL;
                        return true;
                }
        }
        if (!path)
                return false;
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return false;
        n = read(fd, buf, sizeof(buf) - 1);
        if (n < 0)
                return true;
        buf[n] = 0;
        if (ctx->cgroup_v2)
                return !strstr(buf, "populated 0");
        return n > 0;
}

/* Any process of the program in the unit's cgroup: a pid whose owner is not root (the program runs as
 * the dynamic user; only sandbox-exec is root). Unknown (cannot read) counts as yes. */
bool unit_cgroup_has_program(Job *j) {
        Context *ctx = j->ctx;
        _cleanup_free_ char *path = NULL;
        _cleanup_fclose_ FILE *f = NULL;
        char line[32];

        for (size_t i = 0; i < ctx->n_cgroups && !path; i++)
                if (streq(ctx->cgroups[i].name, ctx->cgroup_v2 ? "unified" : "pids") &&
                    asprintf(&path, "%s/%s/cgroup.procs", ctx->cgroups[i].slice_dir, j->unit_name) < 0) {
                        path = NULL;
                        return true;
                }
        if (!path)
                return true;
        f = fopen(path, "re");
        if (!f)
                return errno != ENOENT;
        while (fgets(line, sizeof(line), f)) {
                _cleanup_fclose_ FILE *st = NULL;
                char proc[64], buf[256];
                long pid = strtol(line, NULL, 10);
                bool root = false;

                if (pid <= 0)
                        return true;
                /* status, not the directory's owner: a process that made itself non-dumpable has a
                 * root-owned /proc/<pid>. "Uid:" lists real, effective, saved and fs uid. */
                snprintf(proc, sizeof(proc), "/proc/%ld/status", pid);
                st = fopen(proc, "re");
                if (!st) {
                        if (errno == ENOENT || errno == ESRCH)
                                continue;       /* gone meanwhile */
                        return true;
                }
                while (fgets(buf, sizeof(buf), st))
                        if (startswith(buf, "Uid:")) {
                                unsigned a, b, c, d;

                                root = sscanf(buf + 4, "%u %u %u %u", &a, &b, &c, &d) == 4 && a == 0 && b == 0 &&
                                       c == 0 && d == 0;
                                break;
                        }
                if (!root)
                        return true;
        }
        return false;
}

/* The caller's account is there (or could not be read): collect, within the budgets. */
static void on_caller_account(void *userdata, int r, ArtifactCallerAccount *a) {
        Job *j = userdata;
        Context *ctx = j->ctx;
        const Config *c = ctx->config;
        _cleanup_close_ int ws_fd = TAKE_FD(j->collect_ws_fd);
        ArtifactLimits lim = {
                .max_files = c->artifact_max_files,
                .max_file_bytes = c->artifact_max_file_bytes,
                .max_total_bytes = c->artifact_max_total_bytes,
                .max_path = ARTIFACT_PATH_MAX,
                .max_depth = ARTIFACT_NESTING_MAX,
                ARTIFACT_LIMITS_NO_BUDGETS,     /* artifact_accounts_begin() sets them */
        };
        bool called_back = j->artifact_wait != NULL;

        j->artifact_wait = NULL;
        if (r < 0) {
                log_error_errno(r, "%s: cannot read the artifact budgets, no artifacts: %m", j->exec->id);
                j->waiting &= ~JOB_WAIT_ARTIFACTS;
                if (called_back)
                        job_maybe_finalize(j);
                return;
        }
        j->artifact_caller = a;
        artifact_accounts_begin(ctx->accounts, a, j->exec->limits.disk_mb, &lim);
        r = artifacts_collect_async(ctx->event, ws_fd, ctx->artifacts_fd, &lim, on_artifacts_done, j, &j->collect);
        if (r < 0) {
                log_error_errno(r, "%s: cannot start collecting the artifacts: %m", j->exec->id);
                j->collect = NULL;
                j->waiting &= ~JOB_WAIT_ARTIFACTS;
                artifact_accounts_settle(ctx->accounts, &j->artifact_caller, 0, false);
                if (called_back)
                        job_maybe_finalize(j);
        }
}

/* The unit has ended and its report is in: collect output/ of its workspace (only now — no process of
 * the sandbox is left that could change it while it is read). The workspace is opened from the
 * daemon's own directory downwards, never through a symlink; whether it is unmounted afterwards
 * does not matter here. Clears JOB_WAIT_ARTIFACTS when there is nothing to wait for. */
void job_collect_artifacts(Job *j) {
        Context *ctx = j->ctx;
        const Config *c = ctx->config;
        _cleanup_close_ int parent_fd = -EBADF, mount_fd = -EBADF, ws_fd = -EBADF;
        const char *name;
        int r;

        /* The workspace's tmpfs lives in a directory of the daemon's: workspaces/ for a single-use
         * one, the sessions' mount directory for a session's. */
        const char *parent = j->session ? SESSION_MOUNT_DIR : ctx->workspaces_dir;

        if (!j->unit_started || (!j->mount_started && !j->session) || !j->workspace || ctx->artifacts_fd < 0 ||
            c->artifact_max_files == 0) {
                j->waiting &= ~JOB_WAIT_ARTIFACTS;
                return;
        }
        if (j->early_end ? unit_cgroup_has_program(j) : job_unit_cgroup_populated(j)) {
                log_error("%s: processes are left in the unit's cgroup, not collecting artifacts", j->exec->id);
                j->waiting &= ~JOB_WAIT_ARTIFACTS;
                return;
        }
        name = strrchr(j->workspace, '/');
        if (!name || !path_startswith_dir(j->workspace, parent)) {
                j->waiting &= ~JOB_WAIT_ARTIFACTS;
                return;
        }
        parent_fd = open(parent, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (parent_fd >= 0)
                mount_fd = openat(parent_fd, name + 1, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (mount_fd >= 0)
                ws_fd = openat(mount_fd, "workspace", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (ws_fd < 0) {
                log_warning_errno(errno, "%s: cannot open the workspace %s/workspace, no artifacts: %m", j->exec->id,
                                  j->workspace);
                j->waiting &= ~JOB_WAIT_ARTIFACTS;
                return;
        }
        /* The caller's budget account first (read from the store without waiting, unless a
         * collection of the caller's runs already), then the collection (on_caller_account()). */
        j->collect_ws_fd = TAKE_FD(ws_fd);
        r = artifact_accounts_caller_async(ctx->accounts, j->owner, on_caller_account, j, &j->artifact_wait);
        if (r < 0) {
                log_error_errno(r, "%s: cannot read the artifact budgets, no artifacts: %m", j->exec->id);
                j->collect_ws_fd = safe_close(j->collect_ws_fd);
                j->waiting &= ~JOB_WAIT_ARTIFACTS;
        }
}

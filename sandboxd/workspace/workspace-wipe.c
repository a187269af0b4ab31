/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <linux/magic.h>

#include "util.h"
#include "workspace-wipe.h"

/* One directory level on the way down: its name in its parent, and the parent's inode, checked when
 * the walk comes back up through "..". */
typedef struct WipeFrame {
        char *name;
        ino_t parent_ino;
} WipeFrame;

static bool cancelled(const atomic_bool *cancel) {
        return cancel && atomic_load(cancel);
}

static int open_dir_below(int dir_fd, const char *name, dev_t dev, ino_t ino) {
        struct stat st;
        int fd;

        fd = openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 && errno == EACCES) {
                /* Mode 000, owned by the dynamic user: sandboxd (CAP_FOWNER) may still chmod it. */
                if (fchmodat(dir_fd, name, 0700, 0) < 0)
                        return -errno;
                fd = openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        }
        if (fd < 0)
                return -errno;
        /* The directory that was looked at, still on this mount. */
        if (fstat(fd, &st) < 0) {
                safe_close(fd);
                return -errno;
        }
        if (st.st_dev != dev || (ino != 0 && st.st_ino != ino)) {
                safe_close(fd);
                return -EXDEV;
        }
        return fd;
}

/* Nothing left: no name in the root, and (tmpfs) no inode or block in use but the root's. */
static int verify_empty(int root_fd) {
        struct statfs sfs;
        struct statvfs vfs;
        struct dirent *de;
        DIR *d;
        int fd;

        fd = openat(root_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        d = fdopendir(fd);
        if (!d) {
                safe_close(fd);
                return -errno;
        }
        errno = 0;
        while ((de = readdir(d)))
                if (!streq(de->d_name, ".") && !streq(de->d_name, "..")) {
                        closedir(d);
                        return -ENOTEMPTY;
                }
        if (errno != 0) {
                int k = -errno;

                closedir(d);
                return k;
        }
        closedir(d);

        if (fstatfs(root_fd, &sfs) < 0 || fstatvfs(root_fd, &vfs) < 0)
                return -errno;
        if (sfs.f_type != TMPFS_MAGIC)
                return 0;
        /* An unlinked file some process still holds keeps its inode and its pages: not empty. */
        if (vfs.f_files > 0 && vfs.f_files - vfs.f_ffree > 1)
                return -ENOTEMPTY;
        if (vfs.f_blocks > 0 && vfs.f_blocks != vfs.f_bfree)
                return -ENOTEMPTY;
        return 0;
}

int workspace_wipe(int root_fd, const WipeLimits *lim, const atomic_bool *cancel, uint64_t *ret_entries) {
        _cleanup_free_ WipeFrame *stack = NULL;
        unsigned depth = 0;
        uint64_t entries = 0;
        struct stat root;
        int cur = -EBADF, r = 0;

        if (root_fd < 0 || !lim)
                return -EINVAL;
        if (fstat(root_fd, &root) < 0)
                return -errno;
        if (!S_ISDIR(root.st_mode))
                return -ENOTDIR;
        stack = calloc(lim->max_depth + 1, sizeof(WipeFrame));
        if (!stack)
                return -ENOMEM;
        cur = fcntl(root_fd, F_DUPFD_CLOEXEC, 3);
        if (cur < 0)
                return -errno;

        /* One directory open at a time, whatever the depth: down by name, back up by "..", checked
         * against the inode remembered on the way down. A directory is read from its start each time
         * the walk comes back to it: what was removed is gone, what is left is still to do. */
        for (;;) {
                struct dirent *de;
                struct stat cur_st;
                bool descended = false;
                DIR *d;
                int fd;

                if (fstat(cur, &cur_st) < 0) {
                        r = -errno;
                        break;
                }
                fd = openat(cur, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (fd < 0) {
                        r = -errno;
                        break;
                }
                d = fdopendir(fd);
                if (!d) {
                        r = -errno;
                        safe_close(fd);
                        break;
                }
                for (;;) {
                        struct stat st;

                        errno = 0;
                        de = readdir(d);
                        if (!de) {
                                if (errno != 0)
                                        r = -errno;
                                break;
                        }
                        if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                                continue;
                        if (cancelled(cancel)) {
                                r = -ECANCELED;
                                break;
                        }
                        if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                                if (errno == ENOENT)
                                        continue;
                                r = -errno;
                                break;
                        }
                        if (st.st_dev != root.st_dev) {
                                r = -EXDEV;     /* something mounted in here: not ours to touch */
                                break;
                        }
                        if (S_ISDIR(st.st_mode)) {
                                int child;

                                if (depth + 1 > lim->max_depth) {
                                        r = -ELOOP;
                                        break;
                                }
                                child = open_dir_below(dirfd(d), de->d_name, root.st_dev, st.st_ino);
                                if (child < 0) {
                                        r = child;
                                        break;
                                }
                                stack[depth] = (WipeFrame) {
                                        .name = strdup(de->d_name),
                                        .parent_ino = cur_st.st_ino,
                                };
                                if (!stack[depth].name) {
                                        safe_close(child);
                                        r = -ENOMEM;
                                        break;
                                }
                                depth++;
                                safe_close(cur);
                                cur = child;
                                descended = true;
                                break;
                        }
                        /* Files, symlinks, fifos, sockets, device nodes: the name goes, nothing is opened. */
                        if (++entries > lim->max_entries) {
                                r = -E2BIG;
                                break;
                        }
                        if (unlinkat(dirfd(d), de->d_name, 0) < 0 && errno != ENOENT) {
                                r = -errno;
                                break;
                        }
                }
                closedir(d);
                if (r < 0)
                        break;
                if (descended)
                        continue;

                /* cur is empty. */
                if (depth == 0)
                        break;
                {
                        WipeFrame *f = &stack[depth - 1];
                        int parent = open_dir_below(cur, "..", root.st_dev, f->parent_ino);

                        if (parent < 0) {
                                r = parent;
                                break;
                        }
                        safe_close(cur);
                        cur = parent;
                        if (++entries > lim->max_entries) {
                                r = -E2BIG;
                                break;
                        }
                        if (unlinkat(cur, f->name, AT_REMOVEDIR) < 0 && errno != ENOENT) {
                                r = -errno;
                                break;
                        }
                        f->name = mfree(f->name);
                        depth--;
                }
        }
        safe_close(cur);
        for (unsigned i = 0; i <= lim->max_depth; i++)
                free(stack[i].name);
        if (ret_entries)
                *ret_entries = entries;
        if (r < 0)
                return r;
        return verify_empty(root_fd);
}

struct WorkspaceWipe {
        sd_event_source *source;        /* the eventfd: the worker is done */
        int event_fd, root_fd;
        pthread_t thread;
        bool thread_running;            /* created and not yet joined */
        atomic_bool cancel;
        WipeLimits lim;
        int result;                     /* the worker's, read after the join */
        uint64_t entries;
        workspace_wipe_done_t cb;
        void *userdata;
};

static void *wipe_thread(void *userdata) {
        WorkspaceWipe *w = userdata;

        w->result = workspace_wipe(w->root_fd, &w->lim, &w->cancel, &w->entries);
        (void) eventfd_write(w->event_fd, 1);
        return NULL;
}

static int on_wipe_done(_unused_ sd_event_source *s, _unused_ int fd, _unused_ uint32_t revents, void *userdata) {
        WorkspaceWipe *w = userdata;

        if (!w->thread_running)
                return 0;
        (void) pthread_join(w->thread, NULL);
        w->thread_running = false;
        (void) sd_event_source_set_enabled(w->source, SD_EVENT_OFF);
        /* Last: the callback may free w with workspace_wipe_cancel(). */
        w->cb(w->result, w->entries, w->userdata);
        return 0;
}

WorkspaceWipe *workspace_wipe_cancel(WorkspaceWipe *w) {
        if (!w)
                return NULL;
        if (w->thread_running) {
                atomic_store(&w->cancel, true);
                (void) pthread_join(w->thread, NULL);
                w->thread_running = false;
        }
        w->source = sd_event_source_disable_unref(w->source);
        safe_close(w->event_fd);
        safe_close(w->root_fd);
        return mfree(w);
}

DEFINE_TRIVIAL_CLEANUP_FUNC(WorkspaceWipe *, workspace_wipe_cancel);

int workspace_wipe_async(sd_event *event, int root_fd, const WipeLimits *lim, workspace_wipe_done_t cb,
                         void *userdata, WorkspaceWipe **ret) {
        _cleanup_(workspace_wipe_cancelp) WorkspaceWipe *w = NULL;
        sigset_t all, old;
        int r;

        if (!event || root_fd < 0 || !lim || !cb || !ret)
                return -EINVAL;
        w = calloc(1, sizeof(WorkspaceWipe));
        if (!w)
                return -ENOMEM;
        *w = (WorkspaceWipe) { .event_fd = -EBADF, .root_fd = -EBADF, .lim = *lim, .cb = cb, .userdata = userdata };
        atomic_init(&w->cancel, false);

        w->root_fd = fcntl(root_fd, F_DUPFD_CLOEXEC, 3);
        if (w->root_fd < 0)
                return -errno;
        w->event_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (w->event_fd < 0)
                return -errno;
        r = sd_event_add_io(event, &w->source, w->event_fd, EPOLLIN, on_wipe_done, w);
        if (r < 0)
                return r;
        (void) sd_event_source_set_description(w->source, "workspace-wipe");

        /* Signals stay with the loop thread (signalfd sources): the worker blocks them all. */
        sigfillset(&all);
        r = -pthread_sigmask(SIG_BLOCK, &all, &old);
        if (r < 0)
                return r;
        r = -pthread_create(&w->thread, NULL, wipe_thread, w);
        (void) pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (r < 0)
                return r;
        w->thread_running = true;

        *ret = TAKE_PTR(w);
        return 0;
}

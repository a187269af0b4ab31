/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "log.h"
#include "sandbox-root.h"
#include "usr-layer.h"
#include "util.h"

#define COPY_DEPTH_MAX 8

/* mkdir -p of rel below dfd, each component 0755, never through a symlink. */
static int mkdir_parents_at(int dfd, const char *rel) {
        _cleanup_free_ char *p = strdup(rel);
        int fd = dfd;
        int r = 0;

        if (!p)
                return -ENOMEM;
        for (char *c = p, *slash; (slash = strchr(c, '/')); c = slash + 1) {
                int nfd;

                *slash = '\0';
                if (mkdirat(fd, c, 0755) < 0 && errno != EEXIST) {
                        r = -errno;
                        break;
                }
                nfd = openat(fd, c, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (nfd < 0) {
                        r = -errno;
                        break;
                }
                if (fd != dfd)
                        (void) close(fd);
                fd = nfd;
        }
        if (r >= 0) {
                /* The caller works on the last component relative to the returned fd. */
                r = fd == dfd ? fcntl(dfd, F_DUPFD_CLOEXEC, 3) : fd;
                if (r < 0)
                        r = -errno;
        } else if (fd != dfd)
                (void) close(fd);
        return r;
}

static int copy_file_at(int from_dir, const char *name, int to_dir, mode_t mode) {
        _cleanup_close_ int in = -EBADF, out = -EBADF;
        char buf[64 * 1024];

        in = openat(from_dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (in < 0)
                return -errno;
        out = openat(to_dir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode & 0755);
        if (out < 0)
                return -errno;
        for (;;) {
                ssize_t k = read(in, buf, sizeof(buf));
                int r;

                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                if (k == 0)
                        break;
                r = loop_write(out, buf, (size_t) k);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Copy name (below from_dir) to to_dir: regular files (no set-id bits), directories, symlinks as
 * they are. Never follows a symlink. rel is the path below /etc, for usr_layer_etc_skip(). */
static int copy_entry(int from_dir, int to_dir, const char *name, const char *rel, unsigned depth) {
        struct stat st;

        if (depth > COPY_DEPTH_MAX || usr_layer_etc_skip(rel))
                return 0;
        if (fstatat(from_dir, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return errno == ENOENT ? 0 : -errno;

        if (S_ISLNK(st.st_mode)) {
                char target[PATH_MAX];
                ssize_t n = readlinkat(from_dir, name, target, sizeof(target) - 1);

                if (n < 0)
                        return -errno;
                target[n] = '\0';
                return symlinkat(target, to_dir, name) < 0 ? -errno : 0;
        }
        if (S_ISREG(st.st_mode))
                return copy_file_at(from_dir, name, to_dir, st.st_mode);
        if (S_ISDIR(st.st_mode)) {
                _cleanup_close_ int src = -EBADF, dst = -EBADF;
                DIR *d;
                struct dirent *de;
                int r = 0;

                if (mkdirat(to_dir, name, 0755) < 0)
                        return -errno;
                src = openat(from_dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                dst = openat(to_dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (src < 0 || dst < 0)
                        return -errno;
                d = fdopendir(src);
                if (!d)
                        return -errno;
                src = -EBADF;   /* owned by d */
                while (r >= 0 && (de = readdir(d))) {
                        _cleanup_free_ char *sub = NULL;

                        if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                                continue;
                        if (asprintf(&sub, "%s/%s", rel, de->d_name) < 0) {
                                r = -ENOMEM;
                                break;
                        }
                        r = copy_entry(dirfd(d), dst, de->d_name, sub, depth + 1);
                }
                closedir(d);
                return r;
        }
        return 0;       /* devices, FIFOs, sockets: not for a sandbox */
}

/* The preload into the layer: a regular file of at most 1 MiB, read without following a link. */
static int copy_preload(int layer, const char *preload) {
        _cleanup_close_ int in = -EBADF, out = -EBADF, dfd = -EBADF;
        _cleanup_free_ char *buf = NULL;
        const char *base = strrchr(USR_LAYER_PRELOAD, '/') + 1;
        struct stat st;
        ssize_t n;

        in = open(preload, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
        if (in < 0)
                return -errno;
        if (fstat(in, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode) || st.st_size <= 0 || st.st_size > 1024 * 1024)
                return -EBADMSG;
        buf = malloc((size_t) st.st_size);
        if (!buf)
                return -ENOMEM;
        n = loop_read(in, buf, (size_t) st.st_size);
        if (n < 0)
                return (int) n;
        if (n != st.st_size)
                return -EIO;
        dfd = mkdir_parents_at(layer, USR_LAYER_PRELOAD);
        if (dfd < 0)
                return dfd;
        out = openat(dfd, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (out < 0)
                return -errno;
        return loop_write(out, buf, (size_t) n);
}

int usr_layer_build(const char *state_dir, const char *preload, char **ret_path) {
        _cleanup_free_ char *parent = NULL, *path = NULL;
        _cleanup_close_ int layer = -EBADF, etc = -EBADF, host_etc = -EBADF, usr = -EBADF;
        char id[64];
        unsigned n_hidden = 0;
        int r, etc_fd;

        r = id_generate(id, sizeof(id), "layer");
        if (r < 0)
                return r;
        if (asprintf(&parent, "%s/usr-layers", state_dir) < 0 || asprintf(&path, "%s/%s", parent, id) < 0)
                return log_oom();
        if (mkdir(parent, 0755) < 0 && errno != EEXIST)
                return log_error_errno(errno, "Cannot create '%s': %m", parent);
        if (mkdir(path, 0755) < 0)
                return log_error_errno(errno, "Cannot create '%s': %m", path);
        layer = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (layer < 0)
                return log_error_errno(errno, "Cannot open '%s': %m", path);

        /* The /etc copies. */
        etc_fd = mkdir_parents_at(layer, USR_LAYER_ETC "/x");
        if (etc_fd < 0)
                return log_error_errno(etc_fd, "Cannot create '%s/%s': %m", path, USR_LAYER_ETC);
        etc = etc_fd;
        host_etc = open("/etc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (host_etc < 0)
                return log_error_errno(errno, "Cannot open /etc: %m");
        for (size_t i = 0; i < usr_layer_n_etc_entries; i++) {
                r = copy_entry(host_etc, etc, usr_layer_etc_entries[i].name, usr_layer_etc_entries[i].name, 0);
                if (r < 0)
                        return log_error_errno(r, "Cannot copy /etc/%s into the /usr layer: %m",
                                               usr_layer_etc_entries[i].name);
        }

        /* Whiteouts (character device 0:0) for what the host has and the sandbox must not see. */
        usr = open("/usr", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (usr < 0)
                return log_error_errno(errno, "Cannot open /usr: %m");
        for (size_t i = 0; i < usr_layer_n_hidden; i++) {
                const char *rel = usr_layer_hidden[i], *base = strrchr(rel, '/');
                _cleanup_close_ int dfd = -EBADF;
                struct stat st;

                if (fstatat(usr, rel, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        continue;
                dfd = mkdir_parents_at(layer, rel);
                if (dfd < 0)
                        return log_error_errno(dfd, "Cannot create the parents of '%s/%s': %m", path, rel);
                if (mknodat(dfd, base ? base + 1 : rel, S_IFCHR | 0000, makedev(0, 0)) < 0) {
                        log_warning_errno(errno, "Cannot hide /usr/%s from the sandboxes (whiteout: %m), ignoring", rel);
                        continue;
                }
                n_hidden++;
        }
        if (preload) {
                r = copy_preload(layer, preload);
                if (r < 0)
                        log_warning_errno(r, "Cannot copy '%s' into the /usr layer, the strong tier runs without "
                                          "it (ls -l and stat fail under gVisor 20221219): %m", preload);
        }
        if (syncfs(layer) < 0)
                log_debug_errno(errno, "syncfs of '%s' failed, ignoring: %m", path);
        log_debug("Built the /usr layer '%s' (%u entries hidden)", path, n_hidden);
        *ret_path = TAKE_PTR(path);
        return 0;
}

static int remove_tree_at(int dfd, const char *name, unsigned depth) {
        _cleanup_close_ int fd = -EBADF;
        DIR *d;
        struct dirent *de;

        if (unlinkat(dfd, name, 0) >= 0 || errno == ENOENT)
                return 0;
        if (depth > COPY_DEPTH_MAX + 4)
                return -ELOOP;
        fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        d = fdopendir(fd);
        if (!d)
                return -errno;
        fd = -EBADF;
        while ((de = readdir(d)))
                if (!streq(de->d_name, ".") && !streq(de->d_name, ".."))
                        (void) remove_tree_at(dirfd(d), de->d_name, depth + 1);
        closedir(d);
        return unlinkat(dfd, name, AT_REMOVEDIR) < 0 ? -errno : 0;
}

int usr_layer_prune(const char *state_dir, const char *keep) {
        _cleanup_free_ char *parent = NULL;
        _cleanup_close_ int fd = -EBADF;
        const char *keep_name = keep ? strrchr(keep, '/') : NULL;
        DIR *d;
        struct dirent *de;

        if (asprintf(&parent, "%s/usr-layers", state_dir) < 0)
                return -ENOMEM;
        fd = open(parent, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? 0 : -errno;
        d = fdopendir(fd);
        if (!d)
                return -errno;
        fd = -EBADF;
        while ((de = readdir(d))) {
                int r;

                if (streq(de->d_name, ".") || streq(de->d_name, "..") ||
                    (keep_name && streq(de->d_name, keep_name + 1)))
                        continue;
                r = remove_tree_at(dirfd(d), de->d_name, 0);
                if (r < 0)
                        log_warning_errno(r, "Cannot remove the old /usr layer '%s/%s', ignoring: %m", parent,
                                          de->d_name);
        }
        closedir(d);
        return 0;
}

int sandbox_root_write(int root_fd, bool session) {
        for (size_t i = 0; i < sandbox_root_n_entries; i++) {
                const RootEntry *e = &sandbox_root_entries[i];
                struct stat st;
                int r = 0;

                if (e->session_only && !session)
                        continue;
                switch (e->kind) {
                case ROOT_DIR:
                        r = mkdirat(root_fd, e->path, e->mode) < 0 ? -errno : 0;
                        if (r >= 0 && fchmodat(root_fd, e->path, e->mode, 0) < 0)
                                r = -errno;
                        break;
                case ROOT_SYMLINK:
                        r = symlinkat(e->content, root_fd, e->path) < 0 ? -errno : 0;
                        break;
                case ROOT_FILE: {
                        _cleanup_close_ int fd = openat(root_fd, e->path,
                                                        O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, e->mode);
                        if (fd < 0)
                                r = -errno;
                        else
                                r = loop_write(fd, e->content, strlen(e->content));
                        break;
                }
                }
                if (r == -EEXIST && session && fstatat(root_fd, e->path, &st, AT_SYMLINK_NOFOLLOW) >= 0 &&
                    ((e->kind == ROOT_DIR && S_ISDIR(st.st_mode)) || (e->kind == ROOT_SYMLINK && S_ISLNK(st.st_mode)) ||
                     (e->kind == ROOT_FILE && S_ISREG(st.st_mode))))
                        continue;
                if (r < 0)
                        return r;
        }
        return 0;
}

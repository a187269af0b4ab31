/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>

#include "artifacts.h"
#include "model/request.h"
#include "session-files.h"
#include "util.h"

int session_file_path_parse(const char *path, bool dir_ok, char **ret, const char **ret_why) {
        size_t len = strlen(path);
        const char *why = NULL;
        char *copy;

        *ret = NULL;
        if (path[0] == '/') {
                /* Before the trailing '/' goes: "/" is not a name for the root either. */
                *ret_why = "must be relative (below /workspace)";
                return -EINVAL;
        }
        if (dir_ok)
                while (len > 0 && path[len - 1] == '/')
                        len--;
        if (len == 0)
                return 0;
        if (!input_path_is_valid(path, len, &why)) {
                *ret_why = why;
                return -EINVAL;
        }
        copy = strndup(path, len);
        if (!copy)
                return -ENOMEM;
        *ret = copy;
        return 1;
}

static const struct {
        int r;
        ApiError error;
        const char *message;
} file_errors[] = {
        { -ENOENT,    API_ERROR_NOT_FOUND, "does not exist in the session's workspace" },
        { -ENOTDIR,   API_ERROR_NOT_FOUND, "does not exist: a component of its path is not a directory" },
        { -ELOOP,     API_ERROR_FORBIDDEN,
          "is a symbolic link, or one is on its path: links in a workspace are never followed" },
        { -EMLINK,    API_ERROR_FORBIDDEN, "is a hard link (more than one name): it is not served" },
        { -EPERM,     API_ERROR_FORBIDDEN, "is not a regular file or a directory" },
        { -EXDEV,     API_ERROR_FORBIDDEN, "is on another mount" },
        { -EISDIR,    API_ERROR_CONFLICT,  "is a directory" },
        { -ENOTEMPTY, API_ERROR_CONFLICT,  "is a directory that is not empty" },
        { -EFBIG,     API_ERROR_TOO_LARGE, "is larger than the session's disk_mb (a sparse file)" },
        { -ENOSPC,    API_ERROR_TOO_LARGE, "does not fit: no space left in the session's workspace (disk_mb)" },
        { -EDQUOT,    API_ERROR_TOO_LARGE, "does not fit: no space left in the session's workspace (disk_mb)" },
        { -ENOSYS,    API_ERROR_INTERNAL,  "cannot be reached safely: the kernel lacks openat2() (Linux 5.6)" },
};

ApiError session_file_error(int r, const char **ret_message) {
        for (size_t i = 0; i < ELEMENTSOF(file_errors); i++)
                if (file_errors[i].r == r) {
                        *ret_message = file_errors[i].message;
                        return file_errors[i].error;
                }
        *ret_message = "cannot be accessed (an internal error)";
        return API_ERROR_INTERNAL;
}

/* artifacts_openat_beneath(), and on a kernel without openat2() (before 5.6, or a seccomp filter
 * that refuses it) the same one component at a time: O_NOFOLLOW on each (a symlink on the way is
 * -ELOOP; at the end, with O_PATH, the link itself), each on the device of dir_fd. path was checked
 * (session_file_path_parse()): no "", "." or ".." component. */
static int open_beneath(int dir_fd, const char *path, int flags) {
        _cleanup_free_ char *copy = NULL;
        _cleanup_close_ int cur = -EBADF;
        struct stat top, st;
        char *p, *slash;
        int fd;

        fd = artifacts_openat_beneath(dir_fd, path, flags);
        if (fd == -ENOTDIR && (flags & O_DIRECTORY)) {
                /* O_DIRECTORY|O_NOFOLLOW on a symlink at the end is ENOTDIR: call it what it is. */
                _cleanup_close_ int l = artifacts_openat_beneath(dir_fd, path, O_PATH);

                if (l >= 0 && fstat(l, &st) >= 0 && S_ISLNK(st.st_mode))
                        return -ELOOP;
        }
        if (fd != -ENOSYS)
                return fd;
        copy = strdup(path);
        if (!copy)
                return -ENOMEM;
        if (fstat(dir_fd, &top) < 0)
                return -errno;
        cur = fcntl(dir_fd, F_DUPFD_CLOEXEC, 3);
        if (cur < 0)
                return -errno;
        for (p = copy;; p = slash + 1) {
                bool last;

                slash = strchr(p, '/');
                last = !slash;
                if (slash)
                        *slash = 0;
                fd = openat(cur, p, (last ? flags : O_RDONLY | O_DIRECTORY) | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0) {
                        int r = -errno;

                        /* O_DIRECTORY|O_NOFOLLOW on a symlink is ENOTDIR: say what openat2() says. */
                        if (r == -ENOTDIR && fstatat(cur, p, &st, AT_SYMLINK_NOFOLLOW) >= 0 && S_ISLNK(st.st_mode))
                                r = -ELOOP;
                        return r;
                }
                if (fstat(fd, &st) < 0) {
                        safe_close(fd);
                        return -errno;
                }
                if (st.st_dev != top.st_dev) {
                        safe_close(fd);
                        return -EXDEV;
                }
                safe_close(cur);
                cur = fd;
                if (last)
                        return TAKE_FD(cur);
        }
}

int session_files_open_workspace(const char *root_path) {
        _cleanup_close_ int root = -EBADF;
        int fd;

        /* The mount root and everything above it are root's (session.h): a plain open is safe. */
        root = open(root_path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (root < 0)
                return -errno;
        fd = open_beneath(root, "workspace", O_RDONLY | O_DIRECTORY);
        return fd == -ELOOP ? -ENOTDIR : fd;
}

int session_file_open(int ws_fd, const char *path, int *ret_fd, struct stat *ret_st) {
        _cleanup_close_ int p = -EBADF, fd = -EBADF;
        struct stat st, again;

        if (!path) {
                fd = fcntl(ws_fd, F_DUPFD_CLOEXEC, 3);
                if (fd < 0 || fstat(fd, &st) < 0)
                        return -errno;
                *ret_fd = TAKE_FD(fd);
                *ret_st = st;
                return 0;
        }
        /* O_PATH|O_NOFOLLOW: a symlink at the end is opened as itself (RESOLVE_NO_SYMLINKS still refuses
         * one on the way), nothing is read, a FIFO does not block: first see what it is. */
        p = open_beneath(ws_fd, path, O_PATH);
        if (p < 0)
                return p;
        if (fstat(p, &st) < 0)
                return -errno;
        if (S_ISLNK(st.st_mode))
                return -ELOOP;
        if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
                return -EPERM;
        if (S_ISREG(st.st_mode) && st.st_nlink > 1)
                return -EMLINK;
        fd = open_beneath(ws_fd, path, O_RDONLY | O_NONBLOCK | O_NOCTTY |
                                      (S_ISDIR(st.st_mode) ? O_DIRECTORY : 0));
        if (fd < 0)
                return fd;
        /* Nothing of the sandbox runs now; still, it must be what was judged. */
        if (fstat(fd, &again) < 0)
                return -errno;
        if (again.st_ino != st.st_ino || again.st_dev != st.st_dev ||
            (again.st_mode & S_IFMT) != (st.st_mode & S_IFMT))
                return -EPERM;
        *ret_fd = TAKE_FD(fd);
        *ret_st = again;
        return 0;
}

static const char *entry_type(mode_t m) {
        if (S_ISREG(m))
                return "file";
        if (S_ISDIR(m))
                return "directory";
        if (S_ISLNK(m))
                return "symlink";
        return "other";
}

static int entry_compare(const void *a, const void *b) {
        json_object *x = *(json_object *const *) a, *y = *(json_object *const *) b, *nx, *ny;

        json_object_object_get_ex(x, "name", &nx);
        json_object_object_get_ex(y, "name", &ny);
        return strcmp(json_object_get_string(nx), json_object_get_string(ny));
}

int session_file_list(int dir_fd, const char *path, json_object **ret) {
        json_object *o = NULL, *entries;
        struct dirent *de;
        bool truncated = false;
        unsigned n = 0;
        DIR *d;
        int fd;

        fd = fcntl(dir_fd, F_DUPFD_CLOEXEC, 3);
        if (fd < 0)
                return -errno;
        d = fdopendir(fd);
        if (!d) {
                safe_close(fd);
                return -errno;
        }
        rewinddir(d);
        o = json_object_new_object();
        entries = json_object_new_array();
        json_object_object_add(o, "path", json_object_new_string(path ?: ""));
        json_object_object_add(o, "entries", entries);
        errno = 0;
        while ((de = readdir(d))) {
                _cleanup_free_ char *name = NULL;
                json_object *e;
                struct stat st;

                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                if (n >= SESSION_FILES_LIST_MAX) {
                        truncated = true;
                        break;
                }
                /* Never follows: a symlink is listed as one, with the length of its target. */
                if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        continue;       /* gone meanwhile */
                name = artifacts_path_render(de->d_name, NAME_MAX * 4);
                if (!name)
                        goto oom;
                e = json_object_new_object();
                json_object_object_add(e, "name", json_object_new_string(name));
                json_object_object_add(e, "type", json_object_new_string(entry_type(st.st_mode)));
                json_object_object_add(e, "size", json_object_new_uint64((uint64_t) st.st_size));
                json_object_array_add(entries, e);
                n++;
        }
        closedir(d);
        json_object_array_sort(entries, entry_compare);
        json_object_object_add(o, "truncated", json_object_new_boolean(truncated));
        *ret = o;
        return 0;
oom:
        closedir(d);
        json_object_put(o);
        return -ENOMEM;
}

/* The directory path's last component is in, and that last component. */
static int open_parent(int ws_fd, const char *path, int *ret_dir, const char **ret_base) {
        const char *slash = strrchr(path, '/');
        _cleanup_free_ char *dir = NULL;
        int fd;

        if (!slash) {
                fd = fcntl(ws_fd, F_DUPFD_CLOEXEC, 3);
                if (fd < 0)
                        return -errno;
        } else {
                dir = strndup(path, (size_t) (slash - path));
                if (!dir)
                        return -ENOMEM;
                fd = open_beneath(ws_fd, dir, O_RDONLY | O_DIRECTORY);
                if (fd < 0)
                        return fd;
        }
        *ret_dir = fd;
        *ret_base = slash ? slash + 1 : path;
        return 0;
}

int session_file_inherit_owner(int dir_fd, int fd) {
        struct stat st;

        if (fstat(dir_fd, &st) < 0)
                return -errno;
        if (st.st_uid == 0 && st.st_gid == 0)
                return 0;
        return fchown(fd, st.st_uid, st.st_gid) < 0 ? -errno : 0;
}

int session_file_upload_begin(int ws_fd, const char *path, SessionFileUpload *ret) {
        _cleanup_(session_file_upload_abort) SessionFileUpload u = SESSION_FILE_UPLOAD_NULL;
        const char *base;
        uint64_t rnd;
        struct stat st;
        int r;

        r = open_parent(ws_fd, path, &u.dir_fd, &base);
        if (r < 0)
                return r;
        if (fstatat(u.dir_fd, base, &st, AT_SYMLINK_NOFOLLOW) >= 0) {
                if (S_ISDIR(st.st_mode))
                        return -EISDIR;
                if (!S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode))
                        return -EPERM;
        } else if (errno != ENOENT)
                return -errno;
        u.base = strdup(base);
        if (!u.base)
                return -ENOMEM;
        if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
                return -errno;
        snprintf(u.tmp, sizeof(u.tmp), ".sandboxd-upload-%016" PRIx64, rnd);
        /* O_CREAT|O_EXCL on one component never follows a symlink, not even a dangling one. */
        u.fd = openat(u.dir_fd, u.tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (u.fd < 0) {
                u.tmp[0] = 0;
                return -errno;
        }
        *ret = u;
        u = (SessionFileUpload) SESSION_FILE_UPLOAD_NULL;
        return 0;
}

int session_file_upload_write(SessionFileUpload *u, const void *data, size_t len) {
        int r;

        if (u->fd < 0)
                return -EBADF;
        r = loop_write(u->fd, data, len);
        if (r < 0)
                return r;
        u->size += len;
        return 0;
}

int session_file_upload_commit(SessionFileUpload *u) {
        int r;

        if (u->fd < 0 || !u->base)
                return -EBADF;
        if (fchmod(u->fd, 0644) < 0)
                return -errno;
        r = session_file_inherit_owner(u->dir_fd, u->fd);
        if (r < 0)
                return r;
        /* rename replaces a symlink there as a name, it never writes through it. */
        if (renameat(u->dir_fd, u->tmp, u->dir_fd, u->base) < 0)
                return -errno;
        u->tmp[0] = 0;          /* renamed: nothing to remove */
        return 0;
}

void session_file_upload_abort(SessionFileUpload *u) {
        if (u->dir_fd >= 0 && u->tmp[0])
                (void) unlinkat(u->dir_fd, u->tmp, 0);
        u->tmp[0] = 0;
        u->fd = safe_close(u->fd);
        u->dir_fd = safe_close(u->dir_fd);
        u->base = mfree(u->base);
        u->size = 0;
}

int session_file_write(int ws_fd, const char *path, const void *data, size_t len) {
        _cleanup_(session_file_upload_abort) SessionFileUpload u = SESSION_FILE_UPLOAD_NULL;
        int r;

        r = session_file_upload_begin(ws_fd, path, &u);
        if (r >= 0)
                r = session_file_upload_write(&u, data, len);
        if (r >= 0)
                r = session_file_upload_commit(&u);
        return r;
}

int session_file_remove(int ws_fd, const char *path) {
        _cleanup_close_ int dir = -EBADF;
        const char *base;
        struct stat st;
        int r;

        r = open_parent(ws_fd, path, &dir, &base);
        if (r < 0)
                return r;
        if (fstatat(dir, base, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return -errno;
        if (S_ISDIR(st.st_mode)) {
                struct stat parent;

                /* A mount point is not the sandbox's to have removed (nor could rmdir). */
                if (fstat(dir, &parent) < 0)
                        return -errno;
                if (parent.st_dev != st.st_dev)
                        return -EXDEV;
        }
        if (unlinkat(dir, base, S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0) < 0)
                return errno == EEXIST ? -ENOTEMPTY : -errno;
        return 0;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <sys/stat.h>

#include "secret-file.h"
#include "util.h"

/* "root" or "root or uid N": who may own the file and the directories above it. */
static const char *owners(uid_t uid, char buf[static 48]) {
        if (uid == 0)
                return "root";
        snprintf(buf, 48, "root or uid %u", (unsigned) uid);
        return buf;
}

int secret_file_check_stat(const struct stat *st, uid_t uid, SecretFileAccess access, const char *path,
                           const char *what, char **ret_error) {
        unsigned mode = (unsigned) (st->st_mode & 07777);
        /* What to take away from others: their access, and the group's too for a key itself. */
        const char *others_fix = access == SECRET_GROUP_READ ? "o-rwx" : "go-rwx";
        char buf[48];

        if (!S_ISREG(st->st_mode)) {
                (void) error_set(ret_error, "%s: refusing the %s: not a regular file", path, what);
                return -EBADFD;
        }
        if (st->st_uid != 0 && st->st_uid != uid) {
                (void) error_set(ret_error, "%s: refusing the %s: owned by uid %u, not %s; chown root %s",
                                 path, what, (unsigned) st->st_uid, owners(uid, buf), path);
                return -EPERM;
        }
        /* Whoever can write it can mint keys (or learn what is signed with one they chose). */
        if (st->st_mode & S_IWOTH) {
                (void) error_set(ret_error, "%s: refusing the %s: others can write it (mode %04o); chmod %s %s",
                                 path, what, mode, others_fix, path);
                return -EPERM;
        }
        if (st->st_mode & S_IROTH) {
                (void) error_set(ret_error, "%s: refusing the %s: others can read it (mode %04o); chmod %s %s",
                                 path, what, mode, others_fix, path);
                return -EPERM;
        }
        if (st->st_mode & S_IWGRP) {
                (void) error_set(ret_error, "%s: refusing the %s: its group can write it (mode %04o); chmod g-w %s",
                                 path, what, mode, path);
                return -EPERM;
        }
        if (access == SECRET_OWNER_ONLY && (st->st_mode & S_IRGRP)) {
                (void) error_set(ret_error, "%s: refusing the %s: its group can read it (mode %04o); chmod g-r %s",
                                 path, what, mode, path);
                return -EPERM;
        }
        return 0;
}

int secret_dir_check_stat(const struct stat *st, uid_t uid, const char *dir, const char *path, const char *what,
                          char **ret_error) {
        unsigned mode = (unsigned) (st->st_mode & 07777);
        char buf[48];

        if (S_ISLNK(st->st_mode)) {
                (void) error_set(ret_error, "%s: refusing the %s: %s is a symbolic link (not followed); "
                                 "name the file by its real path", path, what, dir);
                return -ELOOP;
        }
        if (!S_ISDIR(st->st_mode)) {
                (void) error_set(ret_error, "%s: refusing the %s: %s is not a directory", path, what, dir);
                return -ENOTDIR;
        }
        if (st->st_uid != 0 && st->st_uid != uid) {
                (void) error_set(ret_error, "%s: refusing the %s: its directory %s is owned by uid %u, not %s, "
                                 "who could replace the file; chown root %s",
                                 path, what, dir, (unsigned) st->st_uid, owners(uid, buf), dir);
                return -EPERM;
        }
        /* In a sticky directory only an entry's owner (or the directory's, or root) can rename or
         * remove it, and the entry below is checked for its owner in turn. */
        if (st->st_mode & S_ISVTX)
                return 0;
        if (st->st_mode & S_IWOTH) {
                (void) error_set(ret_error, "%s: refusing the %s: others can write its directory %s (mode %04o) "
                                 "and so replace the file; chmod o-w %s", path, what, dir, mode, dir);
                return -EPERM;
        }
        if (st->st_mode & S_IWGRP) {
                (void) error_set(ret_error, "%s: refusing the %s: its group can write its directory %s (mode %04o) "
                                 "and so replace the file; chmod g-w %s", path, what, dir, mode, dir);
                return -EPERM;
        }
        return 0;
}

/* From / down the directories of components (path's, cut at '/', NUL-separated in place by
 * strtok_r()), each checked by secret_dir_check_stat() before the next is opened below it (O_PATH,
 * O_NOFOLLOW): the O_PATH fd of the last one, its stat in *ret_st. dots: refuse "." and ".."
 * components (for a path that names a directory itself). */
static int secret_walk_dirs(const char *path, char *components, size_t path_len, uid_t uid, bool dots,
                            const char *what, struct stat *ret_st, char **ret_error) {
        _cleanup_free_ char *dir = malloc(path_len + 2);
        _cleanup_close_ int dfd = -EBADF;
        char *save = NULL;
        size_t dir_len = 1, depth = 0;
        int r;

        if (!dir)
                return -ENOMEM;
        strcpy(dir, "/");
        dfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0) {
                r = -errno;
                (void) error_set(ret_error, "%s: cannot open /: %s", path, strerror(-r));
                return r;
        }
        for (char *c = strtok_r(components, "/", &save);; c = strtok_r(NULL, "/", &save)) {
                if (fstat(dfd, ret_st) < 0) {
                        r = -errno;
                        (void) error_set(ret_error, "%s: cannot stat %s: %s", path, dir, strerror(-r));
                        return r;
                }
                r = secret_dir_check_stat(ret_st, uid, dir, path, what, ret_error);
                if (r < 0)
                        return r;
                if (!c)
                        return TAKE_FD(dfd);
                if (dots && (streq(c, ".") || streq(c, "..")))
                        return error_set(ret_error, "%s: the path of the %s has a '%s' component", path, what, c);
                if (++depth > SECRET_DEPTH_MAX)
                        return error_set(ret_error, "%s: the path of the %s has more than %d components", path,
                                         what, SECRET_DEPTH_MAX);

                /* O_PATH|O_NOFOLLOW: a symbolic link is opened as itself, and refused above. */
                int nfd = openat(dfd, c, O_PATH | O_NOFOLLOW | O_CLOEXEC);

                if (dir_len > 1)
                        dir[dir_len++] = '/';
                strcpy(dir + dir_len, c);
                dir_len += strlen(c);
                if (nfd < 0) {
                        r = -errno;
                        (void) error_set(ret_error, "%s: cannot open the %s: %s: %s", path, what, dir, strerror(-r));
                        return r;
                }
                safe_close(dfd);
                dfd = nfd;
        }
}

/* The path both openers take: absolute and at most SECRET_PATH_MAX bytes; *ret_copy a copy to cut
 * into components (secret_walk_dirs()), *ret_n its length. */
static int secret_path_copy(const char *path, const char *what, char **ret_copy, size_t *ret_n, char **ret_error) {
        size_t n;

        if (isempty(path) || path[0] != '/')
                return error_set(ret_error, "%s: the %s must be named by an absolute path", path ?: "", what);
        n = strnlen(path, SECRET_PATH_MAX + 1);
        if (n > SECRET_PATH_MAX)
                return error_set(ret_error, "%.64s...: the path of the %s is longer than %d bytes", path, what,
                                 SECRET_PATH_MAX);
        *ret_copy = strdup(path);
        if (!*ret_copy)
                return -ENOMEM;
        *ret_n = n;
        return 0;
}

int secret_file_open(const char *path, uid_t uid, SecretFileAccess access, const char *what, struct stat *ret_st,
                     char **ret_error) {
        _cleanup_free_ char *copy = NULL;
        _cleanup_close_ int dfd = -EBADF, fd = -EBADF;
        char *last;
        size_t n;
        struct stat st;
        int r;

        r = secret_path_copy(path, what, &copy, &n, ret_error);
        if (r < 0)
                return r;
        last = strrchr(copy, '/');
        *last++ = 0;
        if (!*last || streq(last, ".") || streq(last, "..")) {
                (void) error_set(ret_error, "%s: refusing the %s: not a regular file", path, what);
                return -EBADFD;
        }

        dfd = secret_walk_dirs(path, copy, n, uid, false, what, &st, ret_error);
        if (dfd < 0)
                return dfd;

        /* O_NONBLOCK: a FIFO put there must not hang the caller; it is refused as not regular. */
        fd = openat(dfd, last, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW);
        if (fd < 0) {
                r = -errno;
                if (r == -ELOOP)
                        (void) error_set(ret_error, "%s: refusing the %s: it is a symbolic link (not followed); "
                                         "name the file itself", path, what);
                else
                        (void) error_set(ret_error, "%s: cannot open the %s: %s", path, what, strerror(-r));
                return r;
        }
        if (fstat(fd, &st) < 0) {
                r = -errno;
                (void) error_set(ret_error, "%s: cannot stat: %s", path, strerror(-r));
                return r;
        }
        r = secret_file_check_stat(&st, uid, access, path, what, ret_error);
        if (r < 0)
                return r;
        if (ret_st)
                *ret_st = st;
        return TAKE_FD(fd);
}

int secret_dir_open(const char *path, uid_t uid, const char *what, char **ret_error) {
        _cleanup_free_ char *copy = NULL;
        _cleanup_close_ int dfd = -EBADF, fd = -EBADF;
        size_t n;
        struct stat st;
        int r;

        r = secret_path_copy(path, what, &copy, &n, ret_error);
        if (r < 0)
                return r;

        dfd = secret_walk_dirs(path, copy, n, uid, true, what, &st, ret_error);
        if (dfd < 0)
                return dfd;
        /* The directory itself: the sticky exception does not hold here, since whoever may create
         * entries in it may create the names sandboxd is about to create. */
        if (st.st_mode & (S_IWGRP | S_IWOTH)) {
                (void) error_set(ret_error, "%s: refusing the %s: its group or others can write it (mode %04o); "
                                 "chmod go-w %s", path, what, (unsigned) (st.st_mode & 07777), path);
                return -EPERM;
        }
        /* What was checked is what is opened: the O_PATH fd itself, reopened for reading. */
        fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0) {
                r = -errno;
                (void) error_set(ret_error, "%s: cannot open the %s: %s", path, what, strerror(-r));
                return r;
        }
        return TAKE_FD(fd);
}

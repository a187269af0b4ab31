/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* Before any of the program exists: the input files made the execution's memory, and the privileged
 * setup — who the program is, the mount table, the /usr overlay, dropping CAP_SYS_ADMIN, the accounts. */

#include "sandbox-exec.h"

/* ---------------------------------------------------------------------------------------------- */

/* ---------------------------------------------------------------------------------------------- */
/* Input files */

/* Open path below dfd one component at a time, never following a symlink (every directory with
 * O_NOFOLLOW|O_DIRECTORY, the last component with flags|O_NOFOLLOW). Not openat2(): systemd's
 * RestrictSUIDSGID= filter answers it with ENOSYS (it cannot inspect struct open_how). */
static int open_beneath(int dfd, const char *path, int flags) {
        _cleanup_free_ char *p = strdup(path);
        _cleanup_close_ int cur = -EBADF;
        char *c, *slash;
        int fd;

        if (!p)
                return -ENOMEM;
        cur = fcntl(dfd, F_DUPFD_CLOEXEC, 3);
        if (cur < 0)
                return -errno;
        for (c = p; (slash = strchr(c, '/')); c = slash + 1) {
                *slash = '\0';
                if (isempty(c) || streq(c, ".") || streq(c, ".."))
                        return -EINVAL;
                fd = openat(cur, c, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0)
                        return -errno;
                (void) close(cur);
                cur = fd;
        }
        if (isempty(c) || streq(c, ".") || streq(c, ".."))
                return -EINVAL;
        fd = openat(cur, c, flags | O_NOFOLLOW | O_CLOEXEC);
        return fd < 0 ? -errno : fd;
}

/* Copy input/<rel> over itself: the daemon wrote it, so its tmpfs pages are charged to
 * sandboxd.service; a copy written here, in the unit's cgroup, is the execution's memory, and the
 * daemon's pages go with the old inode. Only if it belongs to owner: root's files (a fresh workspace:
 * read-only to the program) are copied by us, a session's (its owner's) by a child that is the
 * program's user. Best effort: whatever fails leaves the original in place (it still is the right
 * file). */
static void recharge_input(int ws_fd, const char *rel, uid_t owner) {
        _cleanup_free_ char *path = NULL, *tmp = NULL;
        _cleanup_close_ int in = -EBADF, dir = -EBADF, out = -EBADF;
        const char *base;
        char buf[64 * 1024];
        struct stat st;

        if (asprintf(&path, "input/%s", rel) < 0)
                return;
        base = strrchr(path, '/') + 1;
        in = open_beneath(ws_fd, path, O_RDONLY | O_NONBLOCK | O_NOCTTY);
        if (in < 0 || fstat(in, &st) < 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1 || st.st_uid != owner)
                return;
        path[base - path - 1] = '\0';
        dir = open_beneath(ws_fd, path, O_RDONLY | O_DIRECTORY);
        if (dir < 0 || asprintf(&tmp, ".%s.sandbox-exec", base) < 0)
                return;
        (void) unlinkat(dir, tmp, 0);
        out = openat(dir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, st.st_mode & 0777);
        if (out < 0)
                return;
        for (;;) {
                ssize_t k = read(in, buf, sizeof(buf));

                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0 || (k > 0 && loop_write(out, buf, (size_t) k) < 0)) {
                        (void) unlinkat(dir, tmp, 0);
                        return;
                }
                if (k == 0)
                        break;
        }
        if (close(TAKE_FD(out)) < 0 || renameat(dir, tmp, dir, base) < 0)
                (void) unlinkat(dir, tmp, 0);
}

/* Before any of the program runs: root's inputs here, the rest in a child that is the program's
 * user. */
void recharge_inputs(const Options *o) {
        int status;
        pid_t pid;

        if (o->n_inputs == 0)
                return;
        if (privileged) {
                _cleanup_close_ int ws = open(o->workspace, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

                for (size_t i = 0; ws >= 0 && i < o->n_inputs; i++)
                        recharge_input(ws, o->inputs[i], 0);
        }
        pid = fork();
        if (pid < 0)
                return;
        if (pid == 0) {
                _cleanup_close_ int ws = -EBADF;

                if (become_program_user() < 0)
                        _exit(EXIT_FAILURE);
                ws = open(o->workspace, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (ws < 0)
                        _exit(EXIT_FAILURE);
                for (size_t i = 0; i < o->n_inputs; i++)
                        recharge_input(ws, o->inputs[i], prog_uid);
                _exit(EXIT_SUCCESS);
        }
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
}

/* ---------------------------------------------------------------------------------------------- */
/* Privileged setup: only while nothing of the program exists */

/* With ExecStart=! and DynamicUser=, systemd allocates the dynamic user and sets it as our one
 * supplementary group (initgroups() of the user, v252 exec_child() → get_supplementary_groups()),
 * but leaves UID and GID to us. DynamicUser= always allocates the same number as UID and GID. */
int dynamic_user_from_groups(uid_t *ret_uid, gid_t *ret_gid) {
        gid_t l[64];
        gid_t found = 0;
        int n = getgroups(ELEMENTSOF(l), l);

        if (n < 0)
                return -errno;
        for (int i = 0; i < n; i++)
                if (l[i] >= DYNAMIC_UID_MIN && l[i] <= DYNAMIC_UID_MAX) {
                        if (found != 0 && found != l[i])
                                return -ENOTUNIQ;
                        found = l[i];
                }
        if (found == 0)
                return -ENOENT;
        *ret_uid = (uid_t) found;
        *ret_gid = found;
        return 0;
}

/* Undo \ooo escapes of a mountinfo field, in place. */
static void mountinfo_unescape(char *s) {
        char *o = s;

        for (char *p = s; *p;) {
                if (p[0] == '\\' && p[1] >= '0' && p[1] <= '3' && p[2] >= '0' && p[2] <= '7' && p[3] >= '0' &&
                    p[3] <= '7') {
                        *o++ = (char) ((p[1] - '0') * 64 + (p[2] - '0') * 8 + (p[3] - '0'));
                        p += 4;
                } else
                        *o++ = *p++;
        }
        *o = '\0';
}

/* The mounts that show the program how the host is laid out, or give it inodes other sandboxes
 * share: whatever systemd or the daemon put below /run (the cgroup and helper binds, the usr layer,
 * systemd's propagation directory /run/systemd/incoming named after the unit), below /var/lib (a
 * session's state directory binds and their tmpfs), the host's devpts, and mounts below /usr (the
 * host's own submounts; the overlay that replaces /usr is mounted after). Nothing systemd mounts to
 * protect (/proc/sys read-only, inaccessible nodes) is in these places. */
static bool mount_point_detachable(const char *path, const char *keep, const char *keep2) {
        if ((keep && streq(path, keep)) || (keep2 && streq(path, keep2)))
                return false;
        return startswith(path, "/run/") || streq(path, "/var/lib") || startswith(path, "/var/lib/") ||
                streq(path, "/dev/pts") || startswith(path, "/dev/pts/") || startswith(path, "/usr/");
}

static size_t path_depth(const char *p) {
        size_t n = 0;

        for (; *p; p++)
                n += *p == '/';
        return n;
}

static int compare_depth_desc(const void *a, const void *b) {
        size_t da = path_depth(*(char *const *) a), db = path_depth(*(char *const *) b);

        return da < db ? 1 : da > db ? -1 : 0;
}

/* Read all of /proc/self/mountinfo (at most 4 MiB). */
static char *read_mountinfo(void) {
        _cleanup_close_ int fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC | O_NOCTTY);
        size_t n = 0, allocated = 0;
        char *buf = NULL;

        if (fd < 0)
                return NULL;
        for (;;) {
                ssize_t k;

                if (allocated - n < 4096) {
                        char *nb;

                        if (allocated >= 4 * 1024 * 1024) {
                                free(buf);
                                errno = E2BIG;
                                return NULL;
                        }
                        nb = realloc(buf, allocated ? allocated * 2 : 64 * 1024);
                        if (!nb) {
                                free(buf);
                                return NULL;
                        }
                        buf = nb;
                        allocated = allocated ? allocated * 2 : 64 * 1024;
                }
                k = read(fd, buf + n, allocated - n - 1);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0) {
                        free(buf);
                        return NULL;
                }
                if (k == 0)
                        break;
                n += (size_t) k;
        }
        buf[n] = '\0';
        return buf;
}

/* Detach every detachable mount (see above) except keep and keep2, deepest first. */
void tidy_mounts(const char *keep, const char *keep2) {
        _cleanup_free_ char *info = read_mountinfo();
        _cleanup_free_ char **paths = NULL;
        size_t n = 0, allocated = 0;

        if (!info)
                fail_setup("Cannot read /proc/self/mountinfo: %s", strerror(errno));

        for (char *line = info, *next; line && *line; line = next) {
                char *f, *mp;
                unsigned field = 0;

                next = strchr(line, '\n');
                if (next)
                        *next++ = '\0';
                /* ID PARENT MAJ:MIN ROOT MOUNTPOINT ... */
                mp = NULL;
                for (f = strtok(line, " "); f; f = strtok(NULL, " "))
                        if (++field == 5) {
                                mp = f;
                                break;
                        }
                if (!mp)
                        continue;
                mountinfo_unescape(mp);
                if (!mount_point_detachable(mp, keep, keep2))
                        continue;
                if (n >= allocated) {
                        char **np = realloc(paths, (allocated ? allocated * 2 : 32) * sizeof(char *));

                        if (!np)
                                fail_setup("Out of memory");
                        paths = np;
                        allocated = allocated ? allocated * 2 : 32;
                }
                paths[n++] = mp;
        }

        if (n > 0)
                qsort(paths, n, sizeof(char *), compare_depth_desc);
        for (size_t i = 0; i < n; i++)
                /* EINVAL: no longer a mount point (went with a mount below which it was, or listed
                 * twice); ENOENT: its place went with its parent. */
                if (umount2(paths[i], MNT_DETACH | UMOUNT_NOFOLLOW) < 0 && errno != EINVAL && errno != ENOENT)
                        fail_setup("Cannot detach %s: %s", paths[i], strerror(errno));
}

/* Empty our private /run of the mount points the detached mounts left (directories, and the empty
 * file the helper was bound on). Nothing else has been put there yet, and nothing of the program
 * exists: no name here can be anybody else's. */
void clear_dir(int dfd, unsigned depth) {
        _cleanup_close_ int fd = -EBADF;
        DIR *d;
        struct dirent *de;

        if (depth > 8)
                return;
        fd = fcntl(dfd, F_DUPFD_CLOEXEC, 3);
        if (fd < 0)
                return;
        d = fdopendir(fd);
        if (!d)
                return;
        fd = -EBADF;    /* the DIR owns it */
        while ((de = readdir(d))) {
                _cleanup_close_ int sub = -EBADF;

                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                if (unlinkat(dirfd(d), de->d_name, 0) >= 0)
                        continue;
                sub = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (sub < 0)
                        continue;
                clear_dir(sub, depth + 1);
                (void) unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR);
        }
        closedir(d);
}

void mount_usr_overlay(const char *layer, const char *env_layer) {
        char opts[2 * PATH_MAX + 32];
        int n;

        /* Read-only overlay without an upper layer: the daemon's layer (whiteouts for /usr/local and
         * sandboxd's own files, the runtime's /etc files) over the host's /usr. Its inodes are this
         * sandbox's own, so a lock on one of them is seen by nobody else. An environment's tree lies
         * between the two: its libraries are added, and the daemon's whiteouts hide its /usr/local
         * as well. */
        if (strpbrk(layer, ":,\\") || (env_layer && strpbrk(env_layer, ":,\\")))
                fail_setup("Invalid --usr-layer or --env-layer");
        if (env_layer)
                n = snprintf(opts, sizeof(opts), "lowerdir=%s:%s:/usr", layer, env_layer);
        else
                n = snprintf(opts, sizeof(opts), "lowerdir=%s:/usr", layer);
        if (n < 0 || (size_t) n >= sizeof(opts))
                fail_setup("Invalid --usr-layer or --env-layer");
        if (mount("overlay", "/usr", "overlay", MS_RDONLY | MS_NOSUID | MS_NODEV, opts) < 0)
                fail_setup("Cannot mount the /usr overlay: %s", strerror(errno));
        if (umount2(layer, MNT_DETACH | UMOUNT_NOFOLLOW) < 0 && errno != EINVAL)
                fail_setup("Cannot detach %s: %s", layer, strerror(errno));
        if (env_layer && umount2(env_layer, MNT_DETACH | UMOUNT_NOFOLLOW) < 0 && errno != EINVAL)
                fail_setup("Cannot detach %s: %s", env_layer, strerror(errno));
}

/* What the supervisor keeps once setup is done: CAP_SETUID/SETGID to start children as the program,
 * CAP_SETPCAP to empty their bounding set, CAP_KILL to end them. CAP_SYS_ADMIN goes. */
void drop_setup_capabilities(void) {
        struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
        struct __user_cap_data_struct d[2] = {};
        uint32_t keep = (1U << CAP_SETUID) | (1U << CAP_SETGID) | (1U << CAP_SETPCAP) | (1U << CAP_KILL);

        d[0].permitted = d[0].effective = keep;
        if (syscall(SYS_capset, &h, d) < 0)
                fail_setup("Cannot drop capabilities: %s", strerror(errno));
}

static void write_file_at(int dfd, const char *name, const char *data, size_t n) {
        _cleanup_close_ int fd = -EBADF;

        (void) unlinkat(dfd, name, 0);
        fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0644);
        if (fd < 0)
                fail_setup("Cannot create %s: %s", name, strerror(errno));
        if (loop_write(fd, data, n) < 0 || close(TAKE_FD(fd)) < 0)
                fail_setup("Cannot write %s: %s", name, strerror(errno));
}

/* /etc/passwd and /etc/group of the sandbox are symlinks to these: the program's own user has a
 * name (whoami, getpass, ~ expansion work), and nothing of the host's accounts is shown. */
void write_accounts(int dfd) {
        char buf[512];
        int n;

        n = snprintf(buf, sizeof(buf),
                     "root:x:0:0:root:/root:/usr/sbin/nologin\n"
                     "sandbox:x:%u:%u:sandbox:/workspace:/bin/sh\n"
                     "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
                     (unsigned) prog_uid, (unsigned) prog_gid);
        write_file_at(dfd, "passwd", buf, (size_t) n);
        n = snprintf(buf, sizeof(buf), "root:x:0:\nsandbox:x:%u:\nnogroup:x:65534:\n", (unsigned) prog_gid);
        write_file_at(dfd, "group", buf, (size_t) n);
}


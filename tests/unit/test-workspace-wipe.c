/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <systemd/sd-event.h>

#include "util.h"
#include "workspace/workspace-wipe.h"

/* The wipe of a used workspace on a real directory tree that a hostile program could have left: every
 * name goes, nothing outside is touched (links are names, never followed), the budgets hold. With
 * root, also on a real tmpfs in a private mount namespace: another mount below is never entered, and
 * an unlinked file still held open counts as something left. */

typedef struct Scratch {
        char *dir;
        int root, outside;      /* the workspace to wipe; a sibling it must never touch */
} Scratch;

static const WipeLimits big = { .max_entries = 100000, .max_depth = 512 };

static void rm_rf(const char *d) {
        _cleanup_free_ char *cmd = NULL;

        assert_true(asprintf(&cmd, "chmod -R u+rwx '%s' 2>/dev/null; rm -rf '%s'", d, d) > 0);
        assert_int_equal(system(cmd), 0);
}

static int setup(void **state) {
        const char *base = getenv("SANDBOXD_TEST_SCRATCH");
        Scratch *s = calloc(1, sizeof(Scratch));

        assert_non_null(s);
        assert_true(asprintf(&s->dir, "%s/test-workspace-wipe-XXXXXX", base ?: "/var/tmp") > 0);
        assert_non_null(mkdtemp(s->dir));
        s->root = s->outside = -EBADF;
        {
                _cleanup_close_ int d = open(s->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

                assert_true(d >= 0);
                assert_int_equal(mkdirat(d, "root", 0755), 0);
                assert_int_equal(mkdirat(d, "outside", 0755), 0);
                s->root = openat(d, "root", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                s->outside = openat(d, "outside", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        }
        assert_true(s->root >= 0 && s->outside >= 0);
        *state = s;
        return 0;
}

static int teardown(void **state) {
        Scratch *s = *state;

        safe_close(s->root);
        safe_close(s->outside);
        rm_rf(s->dir);
        free(s->dir);
        free(s);
        return 0;
}

static void write_file(int dir, const char *name, const char *content) {
        _cleanup_close_ int fd = openat(dir, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);

        assert_true(fd >= 0);
        assert_int_equal(write(fd, content, strlen(content)), (ssize_t) strlen(content));
}

static unsigned count_entries(int dir) {
        _cleanup_close_ int fd = openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR *d = fdopendir(fd);
        struct dirent *de;
        unsigned n = 0;

        assert_non_null(d);
        TAKE_FD(fd);
        while ((de = readdir(d)))
                if (!streq(de->d_name, ".") && !streq(de->d_name, ".."))
                        n++;
        closedir(d);
        return n;
}

static void make_chain(int root, const char *top, unsigned depth) {
        int fd = fcntl(root, F_DUPFD_CLOEXEC, 3);

        assert_int_equal(mkdirat(fd, top, 0755), 0);
        for (unsigned i = 0; i < depth; i++) {
                int next = openat(fd, i == 0 ? top : "d", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

                assert_true(next >= 0);
                safe_close(fd);
                fd = next;
                if (i + 1 < depth)
                        assert_int_equal(mkdirat(fd, "d", 0755), 0);
        }
        write_file(fd, "bottom", "x");
        safe_close(fd);
}

static void test_hostile_tree(void **state) {
        Scratch *s = *state;
        struct stat st;
        uint64_t n = 0;
        char buf[64] = "";
        _cleanup_close_ int secret = -EBADF, held = -EBADF;

        write_file(s->outside, "canary", "canary");
        assert_int_equal(mkdirat(s->outside, "dir", 0755), 0);
        write_file(s->outside, "dir/keep", "keep");

        /* Links to everything outside, and to /. */
        assert_int_equal(mkdirat(s->root, "workspace", 0777), 0);
        assert_int_equal(mkdirat(s->root, "tmp", 01777), 0);
        assert_int_equal(symlinkat("/", s->root, "tmp/root"), 0);
        assert_int_equal(symlinkat("/etc/shadow", s->root, "tmp/shadow"), 0);
        assert_int_equal(symlinkat("../../outside", s->root, "workspace/out"), 0);
        assert_int_equal(symlinkat("../../outside/canary", s->root, "workspace/canary"), 0);
        /* A hard link to a file outside (the same file system here): the name goes, the file stays. */
        assert_int_equal(linkat(s->outside, "canary", s->root, "workspace/hardlink", 0), 0);
        /* Special files: never opened. */
        assert_int_equal(mkfifoat(s->root, "tmp/fifo", 0600), 0);
        assert_int_equal(mknodat(s->root, "tmp/sock", S_IFSOCK | 0600, 0), 0);
        write_file(s->root, "tmp/new\nline", "x");
        write_file(s->root, "tmp/held", "held");
        held = openat(s->root, "tmp/held", O_RDONLY | O_CLOEXEC);
        assert_true(held >= 0);
        /* A closed tree: 000 directories inside one another. */
        assert_int_equal(mkdirat(s->root, "workspace/locked", 0755), 0);
        assert_int_equal(mkdirat(s->root, "workspace/locked/inner", 0755), 0);
        write_file(s->root, "workspace/locked/inner/f", "x");
        assert_int_equal(fchmodat(s->root, "workspace/locked/inner", 0, 0), 0);
        assert_int_equal(fchmodat(s->root, "workspace/locked", 0, 0), 0);
        make_chain(s->root, "deep", 300);
        /* The skeleton's kind of things at the root. */
        write_file(s->root, "etc", "x");
        assert_int_equal(symlinkat("usr/bin", s->root, "bin"), 0);

        assert_int_equal(workspace_wipe(s->root, &big, NULL, &n), 0);
        assert_int_equal(count_entries(s->root), 0);
        assert_true(n >= 300 + 15);
        /* Nothing outside changed. */
        secret = openat(s->outside, "canary", O_RDONLY | O_CLOEXEC);
        assert_true(secret >= 0);
        assert_int_equal(read(secret, buf, sizeof(buf) - 1), 6);
        assert_string_equal(buf, "canary");
        assert_int_equal(fstat(secret, &st), 0);
        assert_int_equal(st.st_nlink, 1);
        assert_int_equal(fstatat(s->outside, "dir/keep", &st, AT_SYMLINK_NOFOLLOW), 0);
        assert_int_equal(count_entries(s->outside), 2);
        assert_int_equal(lstat("/etc/passwd", &st), 0);
        /* The root itself stays: the skeleton goes back into it. */
        assert_int_equal(fstat(s->root, &st), 0);
        assert_true(S_ISDIR(st.st_mode));
}

static void test_empty(void **state) {
        Scratch *s = *state;
        uint64_t n = 99;

        assert_int_equal(workspace_wipe(s->root, &big, NULL, &n), 0);
        assert_int_equal(n, 0);
}

static void test_entries_budget(void **state) {
        Scratch *s = *state;
        const WipeLimits lim = { .max_entries = 50, .max_depth = 16 };
        uint64_t n = 0;
        char name[32];

        for (unsigned i = 0; i < 100; i++) {
                snprintf(name, sizeof(name), "f%u", i);
                write_file(s->root, name, "");
        }
        assert_int_equal(workspace_wipe(s->root, &lim, NULL, &n), -E2BIG);
        assert_int_equal(n, 51);
        assert_true(count_entries(s->root) > 0);
        /* Exactly at the budget is fine. */
        assert_int_equal(workspace_wipe(s->root, &(WipeLimits) { .max_entries = 50, .max_depth = 16 }, NULL, &n), 0);
        assert_int_equal(n, 50);
}

static void test_depth_budget(void **state) {
        Scratch *s = *state;

        make_chain(s->root, "deep", 20);
        assert_int_equal(workspace_wipe(s->root, &(WipeLimits) { .max_entries = 1000, .max_depth = 10 }, NULL, NULL),
                         -ELOOP);
        assert_int_equal(workspace_wipe(s->root, &(WipeLimits) { .max_entries = 1000, .max_depth = 20 }, NULL, NULL), 0);
        assert_int_equal(count_entries(s->root), 0);
}

static void test_cancel(void **state) {
        Scratch *s = *state;
        atomic_bool cancel;

        atomic_init(&cancel, true);
        write_file(s->root, "f", "");
        assert_int_equal(workspace_wipe(s->root, &big, &cancel, NULL), -ECANCELED);
        assert_int_equal(count_entries(s->root), 1);
}

static void test_not_a_directory(void **state) {
        Scratch *s = *state;
        _cleanup_close_ int fd = -EBADF;

        write_file(s->root, "f", "");
        fd = openat(s->root, "f", O_RDONLY | O_CLOEXEC);
        assert_int_equal(workspace_wipe(fd, &big, NULL, NULL), -ENOTDIR);
        assert_int_equal(workspace_wipe(-1, &big, NULL, NULL), -EINVAL);
}

static void test_tmpfs(void **state) {
        Scratch *s = *state;
        _cleanup_free_ char *mnt = NULL, *sub = NULL;
        _cleanup_close_ int fd = -EBADF, held = -EBADF;
        struct stat st;

        if (geteuid() != 0 || unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
                skip();         /* needs root: a tmpfs in a mount namespace of the test's own */
                return;
        }
        assert_true(asprintf(&mnt, "%s/mnt", s->dir) > 0 && asprintf(&sub, "%s/mnt/sub", s->dir) > 0);
        assert_int_equal(mkdir(mnt, 0755), 0);
        assert_int_equal(mount("tmpfs", mnt, "tmpfs", MS_NOSUID | MS_NODEV, "size=8m,mode=0755"), 0);
        fd = open(mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(fd >= 0);

        /* Another file system mounted inside: refused, and what is in it stays. */
        assert_int_equal(mkdirat(fd, "sub", 0755), 0);
        assert_int_equal(mount("tmpfs", sub, "tmpfs", 0, "size=1m"), 0);
        write_file(fd, "sub/other", "other");
        assert_int_equal(workspace_wipe(fd, &big, NULL, NULL), -EXDEV);
        assert_int_equal(fstatat(fd, "sub/other", &st, AT_SYMLINK_NOFOLLOW), 0);
        assert_int_equal(umount2(sub, MNT_DETACH), 0);

        /* An unlinked file still open: no name is left, but its inode and pages are. */
        write_file(fd, "held", "held");
        held = openat(fd, "held", O_RDONLY | O_CLOEXEC);
        assert_true(held >= 0);
        assert_int_equal(unlinkat(fd, "held", 0), 0);
        assert_int_equal(workspace_wipe(fd, &big, NULL, NULL), -ENOTEMPTY);
        held = safe_close(held);
        assert_int_equal(workspace_wipe(fd, &big, NULL, NULL), 0);
        assert_int_equal(count_entries(fd), 0);
        fd = safe_close(fd);
        assert_int_equal(umount2(mnt, MNT_DETACH), 0);
}

typedef struct AsyncResult {
        bool done;
        int r;
        uint64_t entries;
} AsyncResult;

static void on_done(int r, uint64_t entries, void *userdata) {
        AsyncResult *a = userdata;

        a->done = true;
        a->r = r;
        a->entries = entries;
}

static void test_async(void **state) {
        Scratch *s = *state;
        _cleanup_(sd_event_unrefp) sd_event *e = NULL;
        WorkspaceWipe *w = NULL;
        AsyncResult a = {};

        make_chain(s->root, "deep", 50);
        assert_int_equal(sd_event_new(&e), 0);
        assert_int_equal(workspace_wipe_async(e, s->root, &big, on_done, &a, &w), 0);
        for (unsigned i = 0; i < 1000 && !a.done; i++)
                assert_true(sd_event_run(e, 100 * 1000) >= 0);
        assert_true(a.done);
        assert_int_equal(a.r, 0);
        assert_int_equal(a.entries, 51);
        assert_int_equal(count_entries(s->root), 0);
        assert_null(workspace_wipe_cancel(w));

        /* Cancelled before it is done: no callback. */
        a = (AsyncResult) {};
        make_chain(s->root, "deep", 50);
        assert_int_equal(workspace_wipe_async(e, s->root, &big, on_done, &a, &w), 0);
        assert_null(workspace_wipe_cancel(w));
        assert_true(sd_event_run(e, 0) >= 0);
        assert_false(a.done);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_hostile_tree, setup, teardown),
                cmocka_unit_test_setup_teardown(test_empty, setup, teardown),
                cmocka_unit_test_setup_teardown(test_entries_budget, setup, teardown),
                cmocka_unit_test_setup_teardown(test_depth_budget, setup, teardown),
                cmocka_unit_test_setup_teardown(test_cancel, setup, teardown),
                cmocka_unit_test_setup_teardown(test_not_a_directory, setup, teardown),
                cmocka_unit_test_setup_teardown(test_async, setup, teardown),
                cmocka_unit_test_setup_teardown(test_tmpfs, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cmocka.h>

#include "model/language.h"
#include "unit/sandbox-root.h"
#include "unit/usr-layer.h"
#include "util.h"

/* The tables of what a sandbox sees as "/", row by row, and the writers on a real directory: the
 * skeleton written into a fresh directory and again (a session's root), the /usr layer built from
 * the host's /etc and /usr. */

static const RootEntry *entry(const char *path) {
        for (size_t i = 0; i < sandbox_root_n_entries; i++)
                if (streq(sandbox_root_entries[i].path, path))
                        return &sandbox_root_entries[i];
        return NULL;
}

static void test_entries_well_formed(_unused_ void **state) {
        for (size_t i = 0; i < sandbox_root_n_entries; i++) {
                const RootEntry *e = &sandbox_root_entries[i];
                const char *slash = strrchr(e->path, '/');

                assert_false(isempty(e->reason));
                assert_true(e->path[0] != '/');
                assert_null(strstr(e->path, ".."));
                /* A parent comes first. */
                if (slash) {
                        _cleanup_free_ char *parent = strndup(e->path, (size_t) (slash - e->path));
                        const RootEntry *p = entry(parent);

                        assert_non_null(p);
                        assert_int_equal(p->kind, ROOT_DIR);
                        assert_true(p < e);
                }
                for (size_t j = 0; j < i; j++)
                        assert_false(streq(sandbox_root_entries[j].path, e->path));
                if (e->kind == ROOT_SYMLINK)
                        assert_non_null(e->content);
                /* Nothing in the root names sandboxd. */
                assert_null(strstr(e->path, "sandboxd"));
                assert_true(e->content == NULL || !strstr(e->content, "sandboxd"));
        }
}

/* Every link into the layer has its copy there, and every copy is linked. */
static void test_etc_links_match_the_layer(_unused_ void **state) {
        for (size_t i = 0; i < usr_layer_n_etc_entries; i++) {
                _cleanup_free_ char *path = NULL, *target = NULL;
                const RootEntry *e;

                assert_true(asprintf(&path, "etc/%s", usr_layer_etc_entries[i].name) > 0);
                assert_true(asprintf(&target, "/usr/" USR_LAYER_ETC "/%s", usr_layer_etc_entries[i].name) > 0);
                e = entry(path);
                assert_non_null(e);
                assert_int_equal(e->kind, ROOT_SYMLINK);
                assert_string_equal(e->content, target);
        }
        for (size_t i = 0; i < sandbox_root_n_entries; i++) {
                const RootEntry *e = &sandbox_root_entries[i];
                const char *name = startswith(e->path, "etc/");
                bool found = false;

                if (!name || e->kind != ROOT_SYMLINK || !startswith(e->content, "/usr/" USR_LAYER_ETC "/"))
                        continue;
                for (size_t k = 0; k < usr_layer_n_etc_entries; k++)
                        found = found || streq(usr_layer_etc_entries[k].name, name);
                assert_true(found);
        }
        /* The accounts come from sandbox-exec, the hosts file is ours. */
        assert_string_equal(entry("etc/passwd")->content, SANDBOX_CODE_DIR "/passwd");
        assert_string_equal(entry("etc/group")->content, SANDBOX_CODE_DIR "/group");
        assert_int_equal(entry("etc/hosts")->kind, ROOT_FILE);
        assert_null(entry("etc/shadow"));
        assert_null(entry("etc/sandboxd"));
}

static void test_etc_skip(_unused_ void **state) {
        static const struct {
                const char *path;
                bool skip;
        } rows[] = {
                { "ssl/private", true },
                { "ssl/private/key.pem", true },
                { "ssl/certs", false },
                { "ssl/certs/ca-certificates.crt", false },
                { "ssl/privatex", false },
                { "ssl", false },
                { "alternatives/awk", false },
        };
        for (size_t i = 0; i < ELEMENTSOF(rows); i++)
                assert_int_equal(usr_layer_etc_skip(rows[i].path), rows[i].skip);
}

static void test_hidden(_unused_ void **state) {
        bool local = false;

        for (size_t i = 0; i < usr_layer_n_hidden; i++) {
                assert_true(usr_layer_hidden[i][0] != '/');
                assert_null(strstr(usr_layer_hidden[i], ".."));
                local = local || streq(usr_layer_hidden[i], "local");
        }
        assert_true(local);
}

static char *mkdtemp_dir(void) {
        char *d = strdup("/var/tmp/test-sandbox-root-XXXXXX");

        assert_non_null(d);
        assert_non_null(mkdtemp(d));
        return d;
}

static void rm_rf(const char *d) {
        _cleanup_free_ char *cmd = NULL;

        assert_true(asprintf(&cmd, "rm -rf '%s'", d) > 0);
        assert_int_equal(system(cmd), 0);
}

static void test_write_root(_unused_ void **state) {
        _cleanup_free_ char *d = mkdtemp_dir();
        _cleanup_close_ int fd = open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        struct stat st;
        char buf[256];
        ssize_t n;

        assert_true(fd >= 0);
        assert_int_equal(sandbox_root_write(fd, false), 0);
        assert_int_equal(fstatat(fd, "usr", &st, AT_SYMLINK_NOFOLLOW), 0);
        assert_true(S_ISDIR(st.st_mode));
        assert_int_equal(st.st_mode & 07777, 0755);
        n = readlinkat(fd, "bin", buf, sizeof(buf) - 1);
        assert_int_equal(n, 7);
        assert_memory_equal(buf, "usr/bin", 7);
        assert_int_equal(fstatat(fd, "etc/hosts", &st, AT_SYMLINK_NOFOLLOW), 0);
        assert_true(S_ISREG(st.st_mode));
        /* Not a session: no var/lib; writing it twice is an error (a fresh root is fresh). */
        assert_int_equal(fstatat(fd, "var/lib", &st, AT_SYMLINK_NOFOLLOW), -1);
        assert_int_equal(sandbox_root_write(fd, false), -EEXIST);
        /* A session's root: written again, what is there stays, var/lib added. */
        assert_int_equal(sandbox_root_write(fd, true), 0);
        assert_int_equal(sandbox_root_write(fd, true), 0);
        assert_int_equal(fstatat(fd, "var/lib", &st, AT_SYMLINK_NOFOLLOW), 0);
        /* ... but never over something of the wrong kind. */
        assert_int_equal(unlinkat(fd, "etc/hosts", 0), 0);
        assert_int_equal(mkdirat(fd, "etc/hosts", 0755), 0);
        assert_int_equal(sandbox_root_write(fd, true), -EEXIST);
        rm_rf(d);
}

static void test_usr_layer(_unused_ void **state) {
        _cleanup_free_ char *d = mkdtemp_dir(), *layer = NULL, *old = NULL, *p = NULL;
        struct stat st;
        DIR *dir;
        struct dirent *de;
        unsigned n = 0;

        assert_int_equal(usr_layer_build(d, NULL, &old), 0);
        assert_int_equal(usr_layer_build(d, NULL, &layer), 0);
        assert_string_not_equal(old, layer);

        /* /usr/local is hidden by a whiteout where the host has one. */
        assert_true(asprintf(&p, "%s/local", layer) > 0);
        if (lstat("/usr/local", &st) == 0) {
                assert_int_equal(lstat(p, &st), 0);
                assert_true(S_ISCHR(st.st_mode));
                assert_int_equal(st.st_rdev, makedev(0, 0));
        }
        p = mfree(p);
        /* The /etc copies: regular files are copies (not links to the host's inode), no private keys. */
        assert_true(asprintf(&p, "%s/" USR_LAYER_ETC "/ld.so.cache", layer) > 0);
        if (lstat("/etc/ld.so.cache", &st) == 0) {
                struct stat host = st;

                assert_int_equal(lstat(p, &st), 0);
                assert_true(S_ISREG(st.st_mode));
                assert_int_equal(st.st_size, host.st_size);
                assert_false(st.st_ino == host.st_ino && st.st_dev == host.st_dev);
                assert_int_equal(st.st_mode & 06000, 0);
        }
        p = mfree(p);
        assert_true(asprintf(&p, "%s/" USR_LAYER_ETC "/ssl/private", layer) > 0);
        assert_int_equal(lstat(p, &st), -1);
        p = mfree(p);

        /* Pruning keeps the current one only. */
        assert_int_equal(usr_layer_prune(d, layer), 0);
        assert_true(asprintf(&p, "%s/usr-layers", d) > 0);
        dir = opendir(p);
        assert_non_null(dir);
        while ((de = readdir(dir)))
                if (!streq(de->d_name, ".") && !streq(de->d_name, "..")) {
                        assert_string_equal(de->d_name, strrchr(layer, '/') + 1);
                        n++;
                }
        closedir(dir);
        assert_int_equal(n, 1);
        rm_rf(d);
}

/* The strong tier's preload: copied into the layer as a regular file of the same bytes; a link, a
 * missing file or one that is too large leaves the layer built without it. */
static void test_usr_layer_preload(_unused_ void **state) {
        _cleanup_free_ char *d = mkdtemp_dir(), *src = NULL, *lnk = NULL, *big = NULL, *layer = NULL, *p = NULL;
        static const char bytes[] = "\177ELF not really a library";
        char buf[64] = {};
        struct stat st;
        int fd;

        assert_true(asprintf(&src, "%s/preload.so", d) > 0);
        fd = open(src, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, bytes, sizeof(bytes)), (ssize_t) sizeof(bytes));
        close(fd);
        assert_int_equal(usr_layer_build(d, src, &layer), 0);
        assert_true(asprintf(&p, "%s/" USR_LAYER_PRELOAD, layer) > 0);
        assert_int_equal(lstat(p, &st), 0);
        assert_true(S_ISREG(st.st_mode));
        assert_int_equal(st.st_mode & 07777, 0644);
        fd = open(p, O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(read(fd, buf, sizeof(buf)), (ssize_t) sizeof(bytes));
        close(fd);
        assert_memory_equal(buf, bytes, sizeof(bytes));
        layer = mfree(layer);
        p = mfree(p);

        /* A link to it is not followed. */
        assert_true(asprintf(&lnk, "%s/link.so", d) > 0);
        assert_int_equal(symlink(src, lnk), 0);
        assert_int_equal(usr_layer_build(d, lnk, &layer), 0);
        assert_true(asprintf(&p, "%s/" USR_LAYER_PRELOAD, layer) > 0);
        assert_int_equal(lstat(p, &st), -1);
        layer = mfree(layer);
        p = mfree(p);

        /* Missing, or over 1 MiB. */
        assert_true(asprintf(&big, "%s/big.so", d) > 0);
        fd = open(big, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        assert_int_equal(ftruncate(fd, 2 * 1024 * 1024), 0);
        close(fd);
        for (int i = 0; i < 2; i++) {
                assert_int_equal(usr_layer_build(d, i == 0 ? big : "/nonexistent/preload.so", &layer), 0);
                assert_true(asprintf(&p, "%s/" USR_LAYER_PRELOAD, layer) > 0);
                assert_int_equal(lstat(p, &st), -1);
                layer = mfree(layer);
                p = mfree(p);
        }
        rm_rf(d);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_entries_well_formed),
                cmocka_unit_test(test_etc_links_match_the_layer),
                cmocka_unit_test(test_etc_skip),
                cmocka_unit_test(test_hidden),
                cmocka_unit_test(test_write_root),
                cmocka_unit_test(test_usr_layer),
                cmocka_unit_test(test_usr_layer_preload),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

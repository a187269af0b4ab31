/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "delivery/callback.h"
#include "secret-file.h"
#include "util.h"

/* secret-file.c: the checks on a key file's stat result and on each directory above it, row by row
 * (any owner, any mode, without root-owned fixtures), then the walk itself on real files in a
 * private directory below the build directory, and the callback key, which goes through it. */

#ifndef UNIT_TEST_BUILD_DIR
#error "UNIT_TEST_BUILD_DIR must name the build directory (tests/unit/meson.build)"
#endif

/* ---- the file ---- */

typedef struct FileRow {
        const char *name;
        mode_t mode;             /* type and permission bits */
        uid_t owner, euid;
        SecretFileAccess access;
        int ret;
        const char *expect;      /* in the message, after "/k/f: refusing the key file: " */
} FileRow;

#define OWN SECRET_OWNER_ONLY
#define GRP SECRET_GROUP_READ

static const FileRow file_rows[] = {
        { "file: 0600",                           S_IFREG | 0600, 0, 0, OWN, 0, NULL },
        { "file: 0400",                           S_IFREG | 0400, 0, 0, OWN, 0, NULL },
        { "file: 0700 (x does not matter)",       S_IFREG | 0700, 0, 0, OWN, 0, NULL },
        { "file: 0640, group may read",           S_IFREG | 0640, 0, 0, GRP, 0, NULL },
        { "file: 0440, group may read",           S_IFREG | 0440, 0, 0, GRP, 0, NULL },
        { "file: 0640, key itself",               S_IFREG | 0640, 0, 0, OWN, -EPERM,
          "its group can read it (mode 0640); chmod g-r /k/f" },
        { "file: 0660, group-writable",           S_IFREG | 0660, 0, 0, GRP, -EPERM,
          "its group can write it (mode 0660); chmod g-w /k/f" },
        { "file: 0620, group-writable",           S_IFREG | 0620, 0, 0, OWN, -EPERM,
          "its group can write it (mode 0620); chmod g-w /k/f" },
        { "file: 0644, hashes",                   S_IFREG | 0644, 0, 0, GRP, -EPERM,
          "others can read it (mode 0644); chmod o-rwx /k/f" },
        { "file: 0644, key itself",               S_IFREG | 0644, 0, 0, OWN, -EPERM,
          "others can read it (mode 0644); chmod go-rwx /k/f" },
        { "file: 0604",                           S_IFREG | 0604, 0, 0, OWN, -EPERM,
          "others can read it (mode 0604)" },
        { "file: 0602",                           S_IFREG | 0602, 0, 0, GRP, -EPERM,
          "others can write it (mode 0602); chmod o-rwx /k/f" },
        { "file: 0666",                           S_IFREG | 0666, 0, 0, GRP, -EPERM,
          "others can write it (mode 0666)" },
        { "file: 4604 shows all bits",            S_IFREG | 04604, 0, 0, OWN, -EPERM,
          "others can read it (mode 4604)" },
        { "file: another user's",                 S_IFREG | 0600, 1000, 0, OWN, -EPERM,
          "owned by uid 1000, not root; chown root /k/f" },
        { "file: ours, not root",                 S_IFREG | 0600, 1000, 1000, OWN, 0, NULL },
        { "file: root's, we are not root",        S_IFREG | 0600, 0, 1000, OWN, 0, NULL },
        { "file: a third user's",                 S_IFREG | 0600, 1001, 1000, OWN, -EPERM,
          "owned by uid 1001, not root or uid 1000" },
        { "file: owner before mode",              S_IFREG | 0666, 1000, 0, OWN, -EPERM,
          "owned by uid 1000" },
        { "file: a directory",                    S_IFDIR | 0700, 0, 0, OWN, -EBADFD, "not a regular file" },
        { "file: a FIFO",                         S_IFIFO | 0600, 0, 0, OWN, -EBADFD, "not a regular file" },
        { "file: a symlink",                      S_IFLNK | 0777, 0, 0, OWN, -EBADFD, "not a regular file" },
        { "file: a device",                       S_IFCHR | 0600, 0, 0, OWN, -EBADFD, "not a regular file" },
};

static void test_file_row(void **state) {
        const FileRow *row = *state;
        struct stat st = { .st_mode = row->mode, .st_uid = row->owner };
        _cleanup_free_ char *error = NULL, *expect = NULL;
        int r;

        r = secret_file_check_stat(&st, row->euid, row->access, "/k/f", "key file", &error);
        assert_int_equal(r, row->ret);
        if (!row->expect) {
                assert_null(error);
                return;
        }
        assert_true(asprintf(&expect, "/k/f: refusing the key file: %s", row->expect) > 0);
        assert_non_null(error);
        if (!startswith(error, expect))
                fail_msg("error '%s' does not start with '%s'", error, expect);
}

/* ---- each directory above it ---- */

typedef struct DirRow {
        const char *name;
        mode_t mode;
        uid_t owner, euid;
        int ret;
        const char *expect;      /* in the message, after "/k/f: refusing the key file: " */
} DirRow;

static const DirRow dir_rows[] = {
        { "dir: 0755",                    S_IFDIR | 0755, 0, 0, 0, NULL },
        { "dir: 0700",                    S_IFDIR | 0700, 0, 0, 0, NULL },
        { "dir: 0750",                    S_IFDIR | 0750, 0, 0, 0, NULL },
        { "dir: 0775",                    S_IFDIR | 0775, 0, 0, -EPERM,
          "its group can write its directory /k (mode 0775) and so replace the file; chmod g-w /k" },
        { "dir: 2775 (setgid)",           S_IFDIR | 02775, 0, 0, -EPERM,
          "its group can write its directory /k (mode 2775)" },
        { "dir: 0757",                    S_IFDIR | 0757, 0, 0, -EPERM,
          "others can write its directory /k (mode 0757) and so replace the file; chmod o-w /k" },
        { "dir: 0777",                    S_IFDIR | 0777, 0, 0, -EPERM, "others can write its directory /k" },
        { "dir: 1777, sticky (/tmp)",     S_IFDIR | 01777, 0, 0, 0, NULL },
        { "dir: 1775, sticky",            S_IFDIR | 01775, 0, 0, 0, NULL },
        { "dir: sticky, a user's",        S_IFDIR | 01777, 1000, 0, -EPERM,
          "its directory /k is owned by uid 1000, not root, who could replace the file; chown root /k" },
        { "dir: another user's",          S_IFDIR | 0755, 1000, 0, -EPERM, "its directory /k is owned by uid 1000" },
        { "dir: ours, not root",          S_IFDIR | 0755, 1000, 1000, 0, NULL },
        { "dir: a third user's",          S_IFDIR | 0700, 1001, 1000, -EPERM,
          "its directory /k is owned by uid 1001, not root or uid 1000" },
        { "dir: a symlink",               S_IFLNK | 0777, 0, 0, -ELOOP,
          "/k is a symbolic link (not followed); name the file by its real path" },
        { "dir: a regular file",          S_IFREG | 0755, 0, 0, -ENOTDIR, "/k is not a directory" },
};

static void test_dir_row(void **state) {
        const DirRow *row = *state;
        struct stat st = { .st_mode = row->mode, .st_uid = row->owner };
        _cleanup_free_ char *error = NULL, *expect = NULL;

        assert_int_equal(secret_dir_check_stat(&st, row->euid, "/k", "/k/f", "key file", &error), row->ret);
        if (!row->expect) {
                assert_null(error);
                return;
        }
        assert_true(asprintf(&expect, "/k/f: refusing the key file: %s", row->expect) > 0);
        assert_non_null(error);
        if (!startswith(error, expect))
                fail_msg("error '%s' does not start with '%s'", error, expect);
}

/* ---- the walk, on real files ---- */

typedef struct Fixture {
        char dir[sizeof(UNIT_TEST_BUILD_DIR "/test-secret-file.XXXXXX")];
} Fixture;

static char *make_file(const char *dir, const char *name, const char *text, mode_t mode) {
        _cleanup_close_ int fd = -EBADF;
        char *p = NULL;

        assert_true(asprintf(&p, "%s/%s", dir, name) > 0);
        fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        assert_int_equal(loop_write(fd, text, strlen(text)), 0);
        assert_int_equal(fchmod(fd, mode), 0);
        return p;
}

/* Expect path to be refused with r, the message starting with the path and containing want. */
static void expect_refused(const char *path, SecretFileAccess access, int r, const char *want) {
        _cleanup_free_ char *error = NULL;
        int fd;

        fd = secret_file_open(path, geteuid(), access, "key file", NULL, &error);
        if (fd >= 0)
                close(fd);
        if (fd != r)
                fail_msg("%s: got %d (%s), want %d", path, fd, strna(error), r);
        assert_non_null(error);
        if (!startswith(error, path) || !strstr(error, want))
                fail_msg("error '%s' does not start with '%s' or lacks '%s'", error, path, want);
}

static void expect_accepted(const char *path, SecretFileAccess access) {
        _cleanup_free_ char *error = NULL;
        struct stat st;
        char buf[8];
        int fd;

        fd = secret_file_open(path, geteuid(), access, "key file", &st, &error);
        if (fd < 0)
                fail_msg("%s: refused: %s", path, strna(error));
        assert_null(error);
        assert_true(S_ISREG(st.st_mode));
        assert_true(read(fd, buf, sizeof(buf)) > 0);
        close(fd);
}

static int fixture_setup(void **state) {
        Fixture *f = calloc(1, sizeof(Fixture));

        if (!f)
                return -1;
        strcpy(f->dir, UNIT_TEST_BUILD_DIR "/test-secret-file.XXXXXX");
        if (!mkdtemp(f->dir))
                return -1;
        *state = f;
        return 0;
}

static int rm_one(const char *path, _unused_ const struct stat *st, _unused_ int type, _unused_ struct FTW *ftw) {
        (void) remove(path);
        return 0;
}

static int fixture_teardown(void **state) {
        Fixture *f = *state;

        /* Only our own directory (FTW_PHYS: its links are removed, not followed). */
        (void) chmod(f->dir, 0700);
        (void) nftw(f->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
        free(f);
        return 0;
}

/* The directories above the build directory are not the test's to choose: if one of them would be
 * refused (a group-writable home, say), the walk cannot succeed anywhere below it. */
static bool build_dir_chain_safe(const char *dir) {
        _cleanup_free_ char *p = strdup(dir), *error = NULL;

        assert_non_null(p);
        for (char *slash = p + strlen(p); slash; slash = strrchr(p, '/')) {
                struct stat st;

                *slash = 0;
                if (lstat(*p ? p : "/", &st) < 0 ||
                    secret_dir_check_stat(&st, geteuid(), *p ? p : "/", dir, "test", &error) < 0) {
                        print_message("# skipping: %s\n", strna(error));
                        return false;
                }
                if (!*p)
                        break;
        }
        return true;
}

static void test_walk(void **state) {
        Fixture *f = *state;
        _cleanup_free_ char *k600 = NULL, *k640 = NULL, *k660 = NULL, *k604 = NULL, *sub = NULL, *subkey = NULL,
                            *link = NULL, *via_link = NULL, *file_link = NULL, *fifo = NULL, *missing = NULL,
                            *missing_dir = NULL, *through_file = NULL, *trailing = NULL, *dotdot = NULL;

        if (!build_dir_chain_safe(f->dir))
                skip();
        k600 = make_file(f->dir, "k600", "secret\n", 0600);
        k640 = make_file(f->dir, "k640", "secret\n", 0640);
        k660 = make_file(f->dir, "k660", "secret\n", 0660);
        k604 = make_file(f->dir, "k604", "secret\n", 0604);

        /* The file's own mode. */
        expect_accepted(k600, SECRET_OWNER_ONLY);
        expect_accepted(k640, SECRET_GROUP_READ);
        expect_refused(k640, SECRET_OWNER_ONLY, -EPERM, "its group can read it (mode 0640)");
        expect_refused(k660, SECRET_GROUP_READ, -EPERM, "its group can write it (mode 0660)");
        expect_refused(k604, SECRET_GROUP_READ, -EPERM, "others can read it (mode 0604)");

        /* Its directory's mode: mkdtemp made it 0700. */
        assert_int_equal(chmod(f->dir, 0770), 0);
        expect_refused(k600, SECRET_OWNER_ONLY, -EPERM, "its group can write its directory");
        expect_refused(k600, SECRET_OWNER_ONLY, -EPERM, f->dir);
        assert_int_equal(chmod(f->dir, 0703), 0);
        expect_refused(k600, SECRET_OWNER_ONLY, -EPERM, "others can write its directory");
        assert_int_equal(chmod(f->dir, 01777), 0);
        expect_accepted(k600, SECRET_OWNER_ONLY);          /* sticky, as /tmp */
        assert_int_equal(chmod(f->dir, 0755), 0);
        expect_accepted(k600, SECRET_OWNER_ONLY);

        /* A directory further up: the message names that one. */
        assert_true(asprintf(&sub, "%s/sub", f->dir) > 0);
        assert_int_equal(mkdir(sub, 0700), 0);
        subkey = make_file(sub, "key", "secret\n", 0600);
        expect_accepted(subkey, SECRET_OWNER_ONLY);
        assert_int_equal(chmod(f->dir, 0775), 0);
        {
                _cleanup_free_ char *want = NULL;

                assert_true(asprintf(&want, "its group can write its directory %s (mode 0775)", f->dir) > 0);
                expect_refused(subkey, SECRET_OWNER_ONLY, -EPERM, want);
        }
        assert_int_equal(chmod(f->dir, 0700), 0);

        /* Owners, where we may change them. */
        if (geteuid() == 0) {
                assert_int_equal(chown(sub, 12345, 0), 0);
                expect_refused(subkey, SECRET_OWNER_ONLY, -EPERM, "is owned by uid 12345, not root");
                assert_int_equal(chown(sub, 0, 0), 0);
                assert_int_equal(chown(subkey, 12345, 0), 0);
                expect_refused(subkey, SECRET_OWNER_ONLY, -EPERM, "owned by uid 12345, not root; chown root");
                assert_int_equal(chown(subkey, 0, 0), 0);
                expect_accepted(subkey, SECRET_OWNER_ONLY);
        }

        /* Symbolic links: neither a directory on the way nor the file itself is followed. */
        assert_true(asprintf(&link, "%s/link", f->dir) > 0);
        assert_int_equal(symlink("sub", link), 0);
        assert_true(asprintf(&via_link, "%s/key", link) > 0);
        expect_refused(via_link, SECRET_OWNER_ONLY, -ELOOP, "/link is a symbolic link (not followed)");
        assert_true(asprintf(&file_link, "%s/klink", f->dir) > 0);
        assert_int_equal(symlink("k600", file_link), 0);
        expect_refused(file_link, SECRET_OWNER_ONLY, -ELOOP, "it is a symbolic link (not followed)");

        /* Not regular: a FIFO is refused at once, never waited on; a directory. */
        assert_true(asprintf(&fifo, "%s/fifo", f->dir) > 0);
        assert_int_equal(mkfifo(fifo, 0600), 0);
        expect_refused(fifo, SECRET_OWNER_ONLY, -EBADFD, "not a regular file");
        expect_refused(sub, SECRET_OWNER_ONLY, -EBADFD, "not a regular file");
        assert_true(asprintf(&trailing, "%s/", sub) > 0);
        expect_refused(trailing, SECRET_OWNER_ONLY, -EBADFD, "not a regular file");

        /* Missing, and a path through a file. */
        assert_true(asprintf(&missing, "%s/none", f->dir) > 0);
        expect_refused(missing, SECRET_OWNER_ONLY, -ENOENT, "cannot open the key file");
        assert_true(asprintf(&missing_dir, "%s/none/key", f->dir) > 0);
        expect_refused(missing_dir, SECRET_OWNER_ONLY, -ENOENT, "/none: ");
        assert_true(asprintf(&through_file, "%s/x", k600) > 0);
        expect_refused(through_file, SECRET_OWNER_ONLY, -ENOTDIR, "k600 is not a directory");

        /* ".." walks through directories that are each checked. */
        assert_true(asprintf(&dotdot, "%s/sub/../k600", f->dir) > 0);
        expect_accepted(dotdot, SECRET_OWNER_ONLY);

        /* Only absolute paths. */
        expect_refused("k600", SECRET_OWNER_ONLY, -EINVAL, "must be named by an absolute path");
        {
                _cleanup_free_ char *error = NULL;

                assert_int_equal(secret_file_open(NULL, 0, SECRET_OWNER_ONLY, "key file", NULL, &error), -EINVAL);
                assert_int_equal(secret_file_open("", 0, SECRET_OWNER_ONLY, "key file", NULL, &error), -EINVAL);
        }
}

/* ---- a directory: the artifact store ---- */

static void expect_dir(const char *path, int want, const char *msg) {
        _cleanup_free_ char *error = NULL;
        int fd = secret_dir_open(path, geteuid(), "artifact store", &error);

        if (want >= 0) {
                if (fd < 0)
                        fail_msg("%s: refused (%d): %s", path, fd, strna(error));
                assert_null(error);
                close(fd);
                return;
        }
        assert_int_equal(fd, want);
        assert_non_null(error);
        if (msg && !strstr(error, msg))
                fail_msg("'%s' does not say '%s'", error, msg);
}

static void test_dir_walk(void **state) {
        Fixture *f = *state;
        _cleanup_free_ char *store = NULL, *link = NULL, *below = NULL, *file = NULL, *dot = NULL;
        struct stat st1, st2;

        if (!build_dir_chain_safe(f->dir))
                skip();
        assert_true(asprintf(&store, "%s/store", f->dir) > 0);
        assert_int_equal(mkdir(store, 0700), 0);
        expect_dir(store, 0, NULL);
        {
                /* The fd is the directory that was checked, open for reading (openat() below it). */
                _cleanup_free_ char *error = NULL;
                int fd = secret_dir_open(store, geteuid(), "artifact store", &error);

                assert_true(fd >= 0);
                assert_int_equal(fstat(fd, &st1), 0);
                assert_int_equal(stat(store, &st2), 0);
                assert_true(st1.st_ino == st2.st_ino && st1.st_dev == st2.st_dev);
                assert_true((fcntl(fd, F_GETFL) & O_ACCMODE) == O_RDONLY);
                assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
                close(fd);
        }
        assert_int_equal(chmod(store, 0755), 0);
        expect_dir(store, 0, NULL);

        /* Writable by others: refused, sticky or not (anyone could create the shard directories). */
        assert_int_equal(chmod(store, 0770), 0);
        expect_dir(store, -EPERM, "/store (mode 0770)");
        assert_int_equal(chmod(store, 01777), 0);
        expect_dir(store, -EPERM, "(mode 1777)");
        assert_int_equal(chmod(store, 0700), 0);

        /* A directory above it, as for a key file. */
        assert_int_equal(chmod(f->dir, 0775), 0);
        expect_dir(store, -EPERM, "its group can write its directory");
        assert_int_equal(chmod(f->dir, 01777), 0);
        expect_dir(store, 0, NULL);                         /* sticky above, as /tmp */
        assert_int_equal(chmod(f->dir, 0700), 0);

        if (geteuid() == 0) {
                assert_int_equal(chown(store, 12345, 0), 0);
                expect_dir(store, -EPERM, "is owned by uid 12345, not root");
                assert_int_equal(chown(store, 0, 0), 0);
        }

        /* Never through a symbolic link, neither the directory itself nor one on the way. */
        assert_true(asprintf(&link, "%s/link", f->dir) > 0);
        assert_int_equal(symlink("store", link), 0);
        expect_dir(link, -ELOOP, "is a symbolic link (not followed)");
        assert_true(asprintf(&below, "%s/x", link) > 0);
        expect_dir(below, -ELOOP, "is a symbolic link (not followed)");

        /* Not a directory, missing, "." and "..", relative. */
        file = make_file(f->dir, "plain", "x", 0600);
        expect_dir(file, -ENOTDIR, "is not a directory");
        free(below);
        assert_true(asprintf(&below, "%s/none", f->dir) > 0);
        expect_dir(below, -ENOENT, "/none");
        assert_true(asprintf(&dot, "%s/../store", store) > 0);
        expect_dir(dot, -EINVAL, "'..' component");
        expect_dir("store", -EINVAL, "absolute path");
}

/* ---- the callback signing key, one of its users ---- */

static void test_callback_key(void **state) {
        Fixture *f = *state;
        _cleanup_free_ char *k600 = NULL, *k644 = NULL, *k640 = NULL, *k660 = NULL, *kshort = NULL;
        _cleanup_free_ uint8_t *key = NULL;
        size_t len = 0;

        if (!build_dir_chain_safe(f->dir))
                skip();
        k600 = make_file(f->dir, "cb600", "0123456789abcdef0123456789abcdef\n", 0600);
        k644 = make_file(f->dir, "cb644", "0123456789abcdef0123456789abcdef\n", 0644);
        k640 = make_file(f->dir, "cb640", "0123456789abcdef0123456789abcdef\n", 0640);
        k660 = make_file(f->dir, "cb660", "0123456789abcdef0123456789abcdef\n", 0660);
        kshort = make_file(f->dir, "cbshort", "short\n", 0600);

        {
                _cleanup_free_ char *error = NULL;

                assert_int_equal(callback_key_read(k600, &key, &len, &error), 0);
                assert_null(error);
                assert_int_equal(len, 32);
                assert_memory_equal(key, "0123456789abcdef0123456789abcdef", 32);
        }
        /* Readable by others: refused (it used to be a warning), and so is any group access. */
        {
                _cleanup_free_ char *error = NULL;
                uint8_t *k = NULL;

                assert_int_equal(callback_key_read(k644, &k, &len, &error), -EPERM);
                assert_null(k);
                assert_non_null(error);
                assert_non_null(startswith(error, k644));
                assert_non_null(strstr(error, "refusing the callback signing key (CallbackKeyFile=): others can read it"));
                assert_non_null(strstr(error, "chmod go-rwx"));
                assert_int_equal(callback_key_read(k640, &k, &len, &error), -EPERM);
                assert_non_null(strstr(error, "its group can read it"));
                assert_int_equal(callback_key_read(k660, &k, &len, &error), -EPERM);
                assert_non_null(strstr(error, "its group can write it"));
                assert_int_equal(callback_key_read(kshort, &k, &len, &error), -ENOKEY);
                assert_non_null(strstr(error, "shorter than"));
        }
        /* In a directory its group can write. */
        assert_int_equal(chmod(f->dir, 0770), 0);
        {
                _cleanup_free_ char *error = NULL;
                uint8_t *k = NULL;

                assert_int_equal(callback_key_read(k600, &k, &len, &error), -EPERM);
                assert_non_null(strstr(error, "its group can write its directory"));
        }
        assert_int_equal(chmod(f->dir, 0700), 0);
}

int main(void) {
        size_t n = ELEMENTSOF(file_rows) + ELEMENTSOF(dir_rows) + 3, i = 0;
        _cleanup_free_ struct CMUnitTest *tests = calloc(n, sizeof(struct CMUnitTest));

        if (!tests)
                return EXIT_FAILURE;
        for (size_t k = 0; k < ELEMENTSOF(file_rows); k++)
                tests[i++] = (struct CMUnitTest) { file_rows[k].name, test_file_row, NULL, NULL,
                                                   (void *) &file_rows[k] };
        for (size_t k = 0; k < ELEMENTSOF(dir_rows); k++)
                tests[i++] = (struct CMUnitTest) { dir_rows[k].name, test_dir_row, NULL, NULL,
                                                   (void *) &dir_rows[k] };
        tests[i++] = (struct CMUnitTest) cmocka_unit_test_setup_teardown(test_walk, fixture_setup, fixture_teardown);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test_setup_teardown(test_dir_walk, fixture_setup, fixture_teardown);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test_setup_teardown(test_callback_key, fixture_setup,
                                                                         fixture_teardown);
        assert_true(i <= n);

        return _cmocka_run_group_tests("secret-file", tests, i, NULL, NULL);
}

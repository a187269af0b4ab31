/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fetch.c without the network: inline files into a workspace directory, and what a previous run of a
 * session may have planted at their names (symlinks pointing outside, FIFOs, directories, hard
 * links). Nothing outside the workspace may ever change, and every refusal names the file. The
 * downloads themselves are tested against a real HTTP server in tests/integration/test-inputs.py. */
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "net/fetch.h"
#include "util.h"

static char root[] = "/tmp/test-fetch-XXXXXX";
static char ws[128], outside[128];

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw) {
        return remove(p) < 0 ? 0 : 0;
}

static int setup(void **state) {
        char p[PATH_MAX];

        strcpy(root, "/tmp/test-fetch-XXXXXX");
        if (!mkdtemp(root))
                return -1;
        snprintf(ws, sizeof(ws), "%s/ws", root);
        snprintf(p, sizeof(p), "%s/ws/workspace", root);
        snprintf(outside, sizeof(outside), "%s/outside", root);
        if (mkdir(ws, 0755) < 0 || mkdir(p, 0777) < 0 || mkdir(outside, 0755) < 0)
                return -1;
        snprintf(p, sizeof(p), "%s/secret", outside);
        {
                _cleanup_close_ int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
                if (fd < 0 || loop_write(fd, "secret", 6) < 0)
                        return -1;
        }
        return 0;
}

static int teardown(void **state) {
        (void) nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
        return 0;
}

static const FetchLimits limits = {
        .max_file_bytes = 1024, .max_total_bytes = 64, .connect_timeout_sec = 1, .timeout_sec = 1,
};

static void never(Fetch *f, int r, const char *message, void *userdata) {
        fail();
}

/* Put these inline files in; returns r, message in *ret_message. */
static int put(const char *const *paths, const char *const *contents, size_t n, char **ret_message) {
        InputFile files[8] = {};
        Fetch *f = (Fetch *) 0x1;
        int r;

        assert_true(n <= 8);
        for (size_t i = 0; i < n; i++)
                files[i] = (InputFile) { .path = (char *) paths[i], .content = (uint8_t *) contents[i],
                                         .content_len = strlen(contents[i]) };
        r = fetch_start(NULL, ws, files, n, &limits, never, NULL, &f, ret_message);
        assert_null(f);         /* nothing to download: never a Fetch */
        return r;
}

static char *read_at(const char *rel) {
        char p[PATH_MAX], *buf = calloc(1, 256);
        _cleanup_close_ int fd = -EBADF;

        snprintf(p, sizeof(p), "%s/%s", ws, rel);
        fd = open(p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_true(read(fd, buf, 255) >= 0);
        return buf;
}

static void at(char *buf, size_t size, const char *rel) {
        snprintf(buf, size, "%s/workspace/%s", ws, rel);
}

static void assert_secret_untouched(void) {
        char p[PATH_MAX];
        _cleanup_free_ char *buf = calloc(1, 64);
        _cleanup_close_ int fd = -EBADF;
        struct stat st;

        snprintf(p, sizeof(p), "%s/secret", outside);
        fd = open(p, O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_true(read(fd, buf, 63) == 6);
        assert_string_equal(buf, "secret");
        assert_int_equal(fstat(fd, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0600);
        /* Nothing new next to it. */
        snprintf(p, sizeof(p), "%s/x.csv", outside);
        assert_true(access(p, F_OK) < 0);
}

static void test_fresh(void **state) {
        static const char *const paths[] = { "data/input.csv", "notes.txt", "a/b/c/d" };
        static const char *const contents[] = { "a,b\n1,2\n", "hello\n", "" };
        _cleanup_free_ char *message = NULL, *c0 = NULL, *c1 = NULL;
        char p[PATH_MAX];
        struct stat st;

        assert_int_equal(put(paths, contents, 3, &message), 0);
        c0 = read_at("workspace/input/data/input.csv");
        c1 = read_at("workspace/input/notes.txt");
        assert_string_equal(c0, "a,b\n1,2\n");
        assert_string_equal(c1, "hello\n");
        at(p, sizeof(p), "input/data/input.csv");
        assert_int_equal(lstat(p, &st), 0);
        assert_true(S_ISREG(st.st_mode));
        assert_int_equal(st.st_mode & 07777, 0644);
        at(p, sizeof(p), "input/a/b/c");
        assert_int_equal(lstat(p, &st), 0);
        assert_true(S_ISDIR(st.st_mode));
        assert_int_equal(st.st_mode & 07777, 0755);
        at(p, sizeof(p), "input");
        assert_int_equal(lstat(p, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0755);
        at(p, sizeof(p), "input/a/b/c/d");
        assert_int_equal(lstat(p, &st), 0);
        assert_int_equal(st.st_size, 0);
}

/* Run again over what the first test left: a regular file at the name is replaced. */
static void test_replace_regular(void **state) {
        static const char *const paths[] = { "notes.txt" };
        static const char *const contents[] = { "second\n" };
        _cleanup_free_ char *message = NULL, *c = NULL;

        assert_int_equal(put(paths, contents, 1, &message), 0);
        c = read_at("workspace/input/notes.txt");
        assert_string_equal(c, "second\n");
}

/* A hard link to a file outside: unlinked and created afresh, the outside file stays as it was. */
static void test_hardlink(void **state) {
        static const char *const paths[] = { "hl" };
        static const char *const contents[] = { "mine\n" };
        _cleanup_free_ char *message = NULL, *c = NULL;
        char src[PATH_MAX], dst[PATH_MAX];

        snprintf(src, sizeof(src), "%s/secret", outside);
        at(dst, sizeof(dst), "input/hl");
        assert_int_equal(link(src, dst), 0);
        assert_int_equal(put(paths, contents, 1, &message), 0);
        c = read_at("workspace/input/hl");
        assert_string_equal(c, "mine\n");
        assert_secret_untouched();
}

typedef struct PlantRow {
        const char *name;
        const char *plant;       /* relative to workspace/ */
        char kind;               /* 'l' symlink to outside/, 'L' symlink to outside/secret, 'p' FIFO, 'd' directory */
        const char *path;        /* the input file's path */
        const char *message;     /* what the error says */
} PlantRow;

static const PlantRow plant_rows[] = {
        { "file name is a symlink to a file outside", "input/x.csv", 'L', "x.csv",
          "files[0] 'x.csv': exists in the workspace and is not a regular file" },
        { "file name is a FIFO", "input/fifo", 'p', "fifo", "files[0] 'fifo': exists in the workspace and is not a regular file" },
        { "file name is a directory", "input/dir", 'd', "dir", "files[0] 'dir': exists in the workspace and is not a regular file" },
        { "a directory on the path is a symlink outside", "input/ln", 'l', "ln/x.csv",
          "files[0] 'ln/x.csv': a directory on its path exists in the workspace as something else" },
        { "a deeper directory is a symlink outside", "input/deep/er", 'l', "deep/er/x.csv",
          "files[0] 'deep/er/x.csv': a directory on its path exists in the workspace as something else" },
        { "a directory on the path is a file", "input/notes.txt", 0, "notes.txt/x.csv",
          "files[0] 'notes.txt/x.csv': a directory on its path exists in the workspace as something else" },
};

static void test_plant_row(void **state) {
        const PlantRow *row = *state;
        const char *paths[] = { row->path };
        const char *contents[] = { "x" };
        _cleanup_free_ char *message = NULL;
        char p[PATH_MAX], target[PATH_MAX];
        int r;

        at(p, sizeof(p), row->plant);
        if (strchr(row->plant + strlen("input/"), '/')) {
                char parent[PATH_MAX];
                snprintf(parent, sizeof(parent), "%s", p);
                *strrchr(parent, '/') = 0;
                (void) mkdir(parent, 0755);
        }
        switch (row->kind) {
        case 'l':
                assert_int_equal(symlink(outside, p), 0);
                break;
        case 'L':
                snprintf(target, sizeof(target), "%s/secret", outside);
                assert_int_equal(symlink(target, p), 0);
                break;
        case 'p':
                assert_int_equal(mkfifo(p, 0666), 0);
                break;
        case 'd':
                assert_int_equal(mkdir(p, 0755), 0);
                break;
        default:
                break;
        }
        r = put(paths, contents, 1, &message);
        if (r >= 0 || !message || !strstr(message, row->message)) {
                print_error("r=%d message='%s', want '%s'\n", r, strna(message), row->message);
                fail();
        }
        assert_secret_untouched();
}

static void test_input_is_symlink(void **state) {
        static const char *const paths[] = { "x.csv" };
        static const char *const contents[] = { "x" };
        _cleanup_free_ char *message = NULL;
        char p[PATH_MAX], q[PATH_MAX];

        at(p, sizeof(p), "input");
        at(q, sizeof(q), "input.old");
        assert_int_equal(rename(p, q), 0);
        assert_int_equal(symlink(outside, p), 0);
        assert_true(put(paths, contents, 1, &message) < 0);
        assert_non_null(message);
        assert_string_equal(message, "input: exists in the workspace and is not a directory");
        assert_secret_untouched();
        assert_int_equal(unlink(p), 0);
        assert_int_equal(rename(q, p), 0);
}

static void test_total(void **state) {
        static const char *const paths[] = { "t1", "t2" };
        static const char *const contents[] = {
                "0123456789012345678901234567890123456789",
                "0123456789012345678901234567890123456789",
        };
        _cleanup_free_ char *message = NULL;
        char p[PATH_MAX];

        assert_true(put(paths, contents, 2, &message) < 0);
        assert_non_null(message);
        assert_true(startswith(message, "files[1] 't2': the input files exceed 64 bytes in all"));
        at(p, sizeof(p), "input/t2");
        assert_true(access(p, F_OK) < 0);
}

static void test_no_workspace(void **state) {
        InputFile f = { .path = (char *) "x", .content = (uint8_t *) "x", .content_len = 1 };
        _cleanup_free_ char *message = NULL;
        Fetch *fetch = NULL;
        char p[PATH_MAX];

        snprintf(p, sizeof(p), "%s/nonexistent", root);
        assert_true(fetch_start(NULL, p, &f, 1, &limits, never, NULL, &fetch, &message) < 0);
        assert_null(fetch);
        assert_non_null(message);
        /* No files: nothing happens at all. */
        assert_int_equal(fetch_start(NULL, p, NULL, 0, &limits, never, NULL, &fetch, NULL), 0);
        assert_null(fetch);
}

int main(void) {
        struct CMUnitTest tests[32];
        size_t n = 0;

        tests[n++] = (struct CMUnitTest) cmocka_unit_test(test_fresh);
        tests[n++] = (struct CMUnitTest) cmocka_unit_test(test_replace_regular);
        tests[n++] = (struct CMUnitTest) cmocka_unit_test(test_hardlink);
        for (size_t i = 0; i < ELEMENTSOF(plant_rows); i++)
                tests[n++] = (struct CMUnitTest) { plant_rows[i].name, test_plant_row, NULL, NULL, (void *) &plant_rows[i] };
        tests[n++] = (struct CMUnitTest) cmocka_unit_test(test_input_is_symlink);
        tests[n++] = (struct CMUnitTest) cmocka_unit_test(test_total);
        tests[n++] = (struct CMUnitTest) cmocka_unit_test(test_no_workspace);
        return _cmocka_run_group_tests("fetch", tests, n, setup, teardown);
}

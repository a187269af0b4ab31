/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "artifacts-test-util.h"

static void test_regular_files(_unused_ void **state) {
        _cleanup_(artifact_list_freep) ArtifactList *l = NULL;
        static const char png[] = "\x89PNG\r\n\x1a\n\0\0\0\rIHDR";
        char buf[64], want[65];
        const Artifact *a;

        mkfile("hello.txt", "hello");
        mkfile("data/result.csv", "a,b\n1,2\n");
        mkfile("data/deeper/r.json", "{}");
        mkfile_mode("plot", png, sizeof(png) - 1, 0644);
        mkfile("empty", "");

        l = collect_ok(NULL);
        assert_int_equal(l->n_items, 5);
        assert_int_equal(l->n_skipped_total, 0);
        assert_int_equal(l->n_skipped, 0);
        assert_int_equal(l->total_bytes, 5 + 8 + 2 + sizeof(png) - 1);

        /* Sorted by path. */
        assert_string_equal(l->items[0].path, "data/deeper/r.json");
        assert_string_equal(l->items[1].path, "data/result.csv");
        assert_string_equal(l->items[2].path, "empty");
        assert_string_equal(l->items[3].path, "hello.txt");
        assert_string_equal(l->items[4].path, "plot");

        a = find_item(l, "hello.txt");
        assert_string_equal(a->sha256, SHA256_HELLO);
        assert_int_equal(a->size, 5);
        assert_string_equal(a->mime_type, "text/plain");
        assert_int_equal(blob_read(a->sha256, buf, sizeof(buf)), 5);
        assert_memory_equal(buf, "hello", 5);

        a = find_item(l, "empty");
        assert_string_equal(a->sha256, SHA256_EMPTY);
        assert_int_equal(a->size, 0);
        assert_string_equal(a->mime_type, MIME_DEFAULT);

        a = find_item(l, "data/result.csv");
        sha256_hex("a,b\n1,2\n", 8, want);
        assert_string_equal(a->sha256, want);
        assert_string_equal(a->mime_type, "text/csv");

        assert_string_equal(find_item(l, "data/deeper/r.json")->mime_type, "application/json");
        /* No extension: the PNG magic decides. */
        assert_string_equal(find_item(l, "plot")->mime_type, "image/png");

        assert_int_equal(store_count(), 5);
}

/* A file larger than the copy buffer: the streamed hash equals the one-shot hash. */
static void test_large_file_digest(_unused_ void **state) {
        _cleanup_(artifact_list_freep) ArtifactList *l = NULL;
        _cleanup_free_ uint8_t *data = NULL;
        const size_t size = 1000 * 1000 + 7;
        char want[65];
        struct stat st;
        int fd;

        data = malloc(size);
        assert_non_null(data);
        for (size_t i = 0; i < size; i++)
                data[i] = (uint8_t) (i * 2654435761U >> 13);
        mkfile_mode("big.bin", data, size, 0644);
        sha256_hex(data, size, want);

        l = collect_ok(NULL);
        assert_int_equal(l->n_items, 1);
        assert_string_equal(l->items[0].sha256, want);
        assert_int_equal(l->items[0].size, size);

        fd = artifacts_store_open_blob(store_fd, want);
        assert_true(fd >= 0);
        assert_int_equal(fstat(fd, &st), 0);
        assert_int_equal(st.st_size, size);
        safe_close(fd);
}

/* Symlinks to a host file (absolute, and relative out of the workspace) and to /etc/shadow: skipped,
 * and their targets' contents never reach the store. */
static void test_symlinks_skipped(_unused_ void **state) {
        _cleanup_(artifact_list_freep) ArtifactList *l = NULL;
        char target[128];
        bool found;

        (void) snprintf(target, sizeof(target), "%s/outside/secret", base);
        mkfile("real.txt", "real");
        assert_int_equal(symlinkat("/etc/shadow", out_fd, "shadow.txt"), 0);
        assert_int_equal(symlinkat("/etc/passwd", out_fd, "passwd.csv"), 0);
        assert_int_equal(symlinkat(target, out_fd, "secret-abs.txt"), 0);
        assert_int_equal(symlinkat("../../outside/secret", out_fd, "secret-rel.txt"), 0);
        assert_int_equal(mkdirat(out_fd, "sub", 0755), 0);
        assert_int_equal(symlinkat("../../../outside", out_fd, "sub/outside-dir"), 0);

        l = collect_ok(NULL);
        assert_int_equal(l->n_items, 1);
        assert_string_equal(l->items[0].path, "real.txt");
        assert_int_equal(l->n_skipped_total, 5);
        assert_skip(l, "shadow.txt", "symlink");
        assert_skip(l, "passwd.csv", "symlink");
        assert_skip(l, "secret-abs.txt", "symlink");
        assert_skip(l, "secret-rel.txt", "symlink");
        assert_skip(l, "sub/outside-dir", "symlink");

        assert_int_equal(store_scan(SECRET, &found), 1);
        assert_false(found);
        assert_int_equal(store_scan("root:", &found), 1);    /* the first line of shadow and passwd */
        assert_false(found);
}

/* a -> b, b -> a, d -> . and a directory symlink to its parent: nothing is followed, so nothing
 * loops and every file is collected once. */
static void test_symlink_loops(_unused_ void **state) {
        _cleanup_(artifact_list_freep) ArtifactList *l = NULL;

        mkfile("dir/f.txt", "f");
        assert_int_equal(symlinkat("b", out_fd, "a"), 0);
        assert_int_equal(symlinkat("a", out_fd, "b"), 0);
        assert_int_equal(symlinkat(".", out_fd, "d"), 0);
        assert_int_equal(symlinkat("..", out_fd, "dir/up"), 0);

        l = collect_ok(NULL);
        assert_int_equal(l->n_items, 1);
        assert_string_equal(l->items[0].path, "dir/f.txt");
        assert_int_equal(l->n_skipped_total, 4);
        assert_skip(l, "a", "symlink");
        assert_skip(l, "b", "symlink");
        assert_skip(l, "d", "symlink");
        assert_skip(l, "dir/up", "symlink");
}

/* A hard link to a host file: same inode as the secret, never read. A file hard-linked within output/
 * is skipped under both names. */
static void test_hardlinks_skipped(_unused_ void **state) {
        _cleanup_(artifact_list_freep) ArtifactList *l = NULL;
        bool found;

        assert_int_equal(linkat(ws_fd, "../outside/secret", out_fd, "stolen.txt", 0), 0);
        mkfile("twice.txt", "twice");
        assert_int_equal(linkat(out_fd, "twice.txt", out_fd, "again.txt", 0), 0);

        l = collect_ok(NULL);
        assert_int_equal(l->n_items, 0);
        assert_skip(l, "stolen.txt", "hardlink");
        assert_skip(l, "twice.txt", "hardlink");
        assert_skip(l, "again.txt", "hardlink");
        assert_int_equal(store_scan(SECRET, &found), 0);
        assert_false(found);
}

/* A FIFO named like an artifact, a listening unix socket and (where we may create one) a device
 * node: skipped without being opened. A FIFO open without O_NONBLOCK would block forever: the alarm
 * kills the test instead of hanging it. */
static void test_special_files_skipped(_unused_ void **state) {
        _cleanup_(artifact_list_freep) ArtifactList *l = NULL;
        _cleanup_close_ int sock = -EBADF;
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        bool device = false;

        mkfile("ok.txt", "ok");
        assert_int_equal(mkfifoat(out_fd, "result.csv", 0644), 0);
        (void) snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/ws/output/sock", base);
        sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_true(sock >= 0);
        assert_int_equal(bind(sock, (struct sockaddr *) &sa, sizeof(sa)), 0);
        assert_int_equal(listen(sock, 1), 0);
        if (mknodat(out_fd, "null.txt", S_IFCHR | 0666, makedev(1, 3)) == 0)
                device = true;
        else
                print_message("# no device node (mknod: %s), that row is not checked\n", strerror(errno));

        alarm(60);
        l = collect_ok(NULL);
        alarm(0);

        assert_int_equal(l->n_items, 1);
        assert_string_equal(l->items[0].path, "ok.txt");
        assert_skip(l, "result.csv", "fifo");
        assert_skip(l, "sock", "socket");
        if (device)
                assert_skip(l, "null.txt", "device");
        assert_int_equal(l->n_skipped_total, device ? 3 : 2);
}

/* 20,000 tiny files (forty times max_files): max_files are collected, the rest counted as too_many,
 * only the first ARTIFACT_SKIPPED_LISTED_MAX listed. Not more: creating and removing each file on
 * the build directory's disk is what this test spends its time on (100,000 took 47-88 s of the ASan
 * leg, and over meson's 300 s on a loaded machine), not the collection under test. */
static void test_many_files(_unused_ void **state) {
        _cleanup_(artifact_list_freep) ArtifactList *l = NULL;
        ArtifactLimits lim = default_limits;
        const unsigned n = 20000;
        char name[32];
        uint64_t t;
        int dfd;

        assert_int_equal(mkdirat(out_fd, "many", 0755), 0);
        dfd = openat(out_fd, "many", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(dfd >= 0);
        for (unsigned i = 0; i < n; i++) {
                int fd;

                (void) snprintf(name, sizeof(name), "f%06u.txt", i);
                fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
                assert_true(fd >= 0);
                assert_int_equal(loop_write(fd, name, strlen(name)), 0);
                safe_close(fd);
        }
        safe_close(dfd);

        lim.max_files = 500;
        t = now_usec(CLOCK_MONOTONIC);
        l = collect_ok(&lim);
        t = now_usec(CLOCK_MONOTONIC) - t;
        print_message("# collecting %u of %u files took %" PRIu64 " ms\n", (unsigned) lim.max_files, n,
                      t / 1000);

        assert_int_equal(l->n_items, 500);
        assert_int_equal(l->n_skipped_total, n - 500);
        assert_int_equal(l->n_skipped, ARTIFACT_SKIPPED_LISTED_MAX);
        for (size_t i = 0; i < l->n_skipped; i++) {
                assert_string_equal(l->skipped[i].reason, "too_many");
                assert_non_null(startswith(l->skipped[i].path, "many/f"));
                if (i > 0)
                        assert_true(strcmp(l->skipped[i - 1].path, l->skipped[i].path) < 0);
        }
        for (size_t i = 1; i < l->n_items; i++)
                assert_true(strcmp(l->items[i - 1].path, l->items[i].path) < 0);
        assert_int_equal(store_count(), 500);
}

/* Names that are not valid UTF-8 or hold control characters: skipped, the listed path escaped. */
static void test_names_invalid(_unused_ void **state) {
        _cleanup_(artifact_list_freep) ArtifactList *l = NULL;

        mkfile("new\nline.txt", "x1");
        mkfile("latin1-\xe9t\xe9.txt", "x2");
        mkfile("tab\there", "x3");
        mkfile("del\x7f", "x4");
        mkfile("c1-\xc2\x85-nel", "x5");
        mkfile("esc\x1b[31mred", "x6");
        mkfile("overlong-\xc0\xaf", "x7");
        mkfile("bad\xff" "dir/inside.txt", "x8");
        /* Valid: kept as they are. */
        mkfile("caf\xc3\xa9.txt", "y1");
        mkfile("back\\slash.txt", "y2");
        mkfile("emoji-\xf0\x9f\x98\x80.txt", "y3");

        l = collect_ok(NULL);
        assert_int_equal(l->n_items, 3);
        assert_non_null(find_item(l, "caf\xc3\xa9.txt"));
        assert_non_null(find_item(l, "back\\slash.txt"));
        assert_non_null(find_item(l, "emoji-\xf0\x9f\x98\x80.txt"));

        assert_int_equal(l->n_skipped_total, 8);
        assert_skip(l, "new\\x0aline.txt", "name_invalid");
        assert_skip(l, "latin1-\\xe9t\\xe9.txt", "name_invalid");
        assert_skip(l, "tab\\x09here", "name_invalid");
        assert_skip(l, "del\\x7f", "name_invalid");
        assert_skip(l, "c1-\\xc2\\x85-nel", "name_invalid");
        assert_skip(l, "esc\\x1b[31mred", "name_invalid");
        assert_skip(l, "overlong-\\xc0\\xaf", "name_invalid");
        assert_skip(l, "bad\\xffdir", "name_invalid");     /* the directory; not entered */
        for (size_t i = 0; i < l->n_skipped; i++)
                for (const char *p = l->skipped[i].path; *p; p++)
                        assert_true((uint8_t) *p >= 0x20 && *p != 0x7f);
}

typedef struct RenderRow {
        const char *in;
        size_t max;
        const char *want;
} RenderRow;

static void test_path_render(_unused_ void **state) {
        static const RenderRow rows[] = {
                { "plain/path.txt", 100, "plain/path.txt" },
                { "a\nb", 100, "a\\x0ab" },
                { "\r\t\x01\x1f", 100, "\\x0d\\x09\\x01\\x1f" },
                { "del\x7f", 100, "del\\x7f" },
                { "back\\slash", 100, "back\\x5cslash" },
                { "\xff\xfe", 100, "\\xff\\xfe" },
                { "trunc\xe2\x82", 100, "trunc\\xe2\\x82" },
                { "surrogate\xed\xa0\x80", 100, "surrogate\\xed\\xa0\\x80" },
                { "c1\xc2\x9f", 100, "c1\\xc2\\x9f" },
                { "nbsp\xc2\xa0", 100, "nbsp\xc2\xa0" },
                { "\xe2\x82\xac\xe2\x82\xac", 100, "\xe2\x82\xac\xe2\x82\xac" },
                /* cut at character boundaries */
                { "abcdef", 4, "abcd" },
                { "\xe2\x82\xac\xe2\x82\xac", 5, "\xe2\x82\xac" },
                { "a\n", 4, "a" },
                { "a\n", 5, "a\\x0a" },
                { "anything", 0, "" },
        };

        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                _cleanup_free_ char *got = artifacts_path_render(rows[i].in, rows[i].max);

                assert_non_null(got);
                if (!streq(got, rows[i].want)) {
                        print_error("row %zu: got '%s', want '%s'\n", i, got, rows[i].want);
                        fail();
                }
                assert_true(strlen(got) <= rows[i].max);
        }
}


/* A sparse 1 TiB file is judged by its size and never read: the process's read bytes stay small. */
static void test_sparse_too_large(_unused_ void **state) {
        _cleanup_(artifact_list_freep) ArtifactList *l = NULL;
        ArtifactLimits lim = default_limits;
        uint64_t before, after;
        int fd;

        fd = openat(out_fd, "huge.bin", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        assert_true(fd >= 0);
        assert_int_equal(ftruncate(fd, INT64_C(1) << 40), 0);
        safe_close(fd);
        mkfile("small.txt", "small");

        before = rchar();
        l = collect_ok(NULL);
        after = rchar();
        print_message("# read %" PRIu64 " bytes while collecting next to a 1 TiB file\n", after - before);
        assert_true(after - before < 4 << 20);
        assert_int_equal(l->n_items, 1);
        assert_skip(l, "huge.bin", "too_large");

        /* Within max_file_bytes but beyond the total: skipped as such, not read either. */
        l = artifact_list_free(l);
        lim.max_file_bytes = UINT64_MAX;
        before = rchar();
        l = collect_ok(&lim);
        after = rchar();
        assert_true(after - before < 4 << 20);
        assert_skip(l, "huge.bin", "total_too_large");
}

/* output/ replaced by a symlink to a directory with files, by a regular file, or missing. */
static void test_output_not_directory(_unused_ void **state) {
        _cleanup_(artifact_list_freep) ArtifactList *l = NULL;
        char p[128];
        bool found;

        mkfile("f.txt", "in the real output");
        assert_int_equal(renameat(ws_fd, "output", ws_fd, "elsewhere"), 0);
        assert_int_equal(symlinkat("elsewhere", ws_fd, "output"), 0);
        l = collect_ok(NULL);
        assert_int_equal(l->n_items, 0);
        assert_int_equal(l->n_skipped_total, 1);
        assert_skip(l, ".", "not_directory");
        l = artifact_list_free(l);

        (void) snprintf(p, sizeof(p), "%s/outside", base);
        assert_int_equal(unlinkat(ws_fd, "output", 0), 0);
        assert_int_equal(symlinkat(p, ws_fd, "output"), 0);
        l = collect_ok(NULL);
        assert_int_equal(l->n_items, 0);
        assert_skip(l, ".", "not_directory");
        l = artifact_list_free(l);

        assert_int_equal(unlinkat(ws_fd, "output", 0), 0);
        safe_close(openat(ws_fd, "output", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
        l = collect_ok(NULL);
        assert_int_equal(l->n_items, 0);
        assert_skip(l, ".", "not_directory");
        l = artifact_list_free(l);

        assert_int_equal(unlinkat(ws_fd, "output", 0), 0);
        l = collect_ok(NULL);
        assert_int_equal(l->n_items, 0);
        assert_int_equal(l->n_skipped_total, 0);

        assert_int_equal(store_scan(SECRET, &found), 0);
        assert_false(found);
}

/* setuid/setgid/sticky and any other mode bit stay behind: the blob is 0644, owned by us. */
static void test_mode_not_copied(_unused_ void **state) {
        _cleanup_(artifact_list_freep) ArtifactList *l = NULL;
        struct stat st;
        mode_t old;
        int fd;

        mkfile_mode("suid", "#!/bin/sh\n", 10, 04755);
        mkfile_mode("sgid-sticky", "sg", 2, 03777);
        old = umask(0077);      /* nor does the umask decide */
        l = collect_ok(NULL);
        umask(old);
        assert_int_equal(l->n_items, 2);

        for (size_t i = 0; i < l->n_items; i++) {
                fd = artifacts_store_open_blob(store_fd, l->items[i].sha256);
                assert_true(fd >= 0);
                assert_int_equal(fstat(fd, &st), 0);
                assert_true(S_ISREG(st.st_mode));
                assert_int_equal(st.st_mode & 07777, 0644);
                assert_int_equal(st.st_uid, geteuid());
                assert_int_equal(st.st_nlink, 1);
                safe_close(fd);
        }
}

/* Identical content twice, and again in a second collection: one blob. */
static void test_dedup(_unused_ void **state) {
        _cleanup_(artifact_list_freep) ArtifactList *l = NULL, *l2 = NULL;

        mkfile("one.txt", "hello");
        mkfile("sub/two.csv", "hello");
        mkfile("other", "other");
        l = collect_ok(NULL);
        assert_int_equal(l->n_items, 3);
        assert_string_equal(find_item(l, "one.txt")->sha256, SHA256_HELLO);
        assert_string_equal(find_item(l, "sub/two.csv")->sha256, SHA256_HELLO);
        assert_int_equal(l->total_bytes, 15);
        assert_int_equal(store_count(), 2);

        l2 = collect_ok(NULL);
        assert_int_equal(l2->n_items, 3);
        assert_int_equal(store_count(), 2);
}

/* A blob of the wrong size (what a crash between link and writeback can leave) is replaced by the
 * next copy of that content, not trusted. */
static void test_short_blob_replaced(_unused_ void **state) {
        _cleanup_(artifact_list_freep) ArtifactList *l = NULL;
        char buf[16];
        int fd;

        mkfile("hello.txt", "hello");
        l = collect_ok(NULL);
        l = artifact_list_free(l);
        fd = openat(store_fd, "2c/" SHA256_HELLO, O_WRONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(ftruncate(fd, 2), 0);
        safe_close(fd);
        assert_int_equal(blob_read(SHA256_HELLO, buf, sizeof(buf)), 2);

        l = collect_ok(NULL);
        assert_int_equal(l->n_items, 1);
        assert_int_equal(blob_read(SHA256_HELLO, buf, sizeof(buf)), 5);
        assert_memory_equal(buf, "hello", 5);
        assert_int_equal(store_count(), 1);
}

static void test_max_depth(_unused_ void **state) {
        _cleanup_(artifact_list_freep) ArtifactList *l = NULL;
        ArtifactLimits lim = default_limits;

        mkfile("top.txt", "0");
        mkfile("d1/one.txt", "1");
        mkfile("d1/d2/two.txt", "2");
        mkfile("d1/d2/d3/three.txt", "3");
        mkfile("d1/d2/d3/d4/four.txt", "4");

        lim.max_depth = 2;
        l = collect_ok(&lim);
        assert_int_equal(l->n_items, 3);
        assert_non_null(find_item(l, "top.txt"));
        assert_non_null(find_item(l, "d1/one.txt"));
        assert_non_null(find_item(l, "d1/d2/two.txt"));
        assert_int_equal(l->n_skipped_total, 1);
        assert_skip(l, "d1/d2/d3", "too_deep");
        l = artifact_list_free(l);

        lim.max_depth = 0;
        l = collect_ok(&lim);
        assert_int_equal(l->n_items, 1);
        assert_skip(l, "d1", "too_deep");
        l = artifact_list_free(l);

        /* Deeper than ARTIFACT_DEPTH_MAX: clamped, whatever the configuration says. */
        {
                char path[4 * (ARTIFACT_DEPTH_MAX + 2) + 16] = "";

                for (unsigned i = 0; i < ARTIFACT_DEPTH_MAX + 2; i++)
                        strcat(path, "d/");
                strcat(path, "deep.txt");
                mkfile(path, "deep");
        }
        lim.max_depth = UINT_MAX;
        l = collect_ok(&lim);
        assert_int_equal(l->n_items, 5);
        assert_int_equal(l->n_skipped_total, 1);
        assert_string_equal(l->skipped[0].reason, "too_deep");
        assert_int_equal(strlen(l->skipped[0].path), 2 * (ARTIFACT_DEPTH_MAX + 1) - 1);
}

static void test_path_too_long(_unused_ void **state) {
        _cleanup_(artifact_list_freep) ArtifactList *l = NULL;
        ArtifactLimits lim = default_limits;

        mkfile("short.txt", "s");
        mkfile("a-rather-long-file-name-that-exceeds.txt", "l");
        mkfile("longdir-name-0123456789/x.txt", "x");
        mkfile("dir/file-name-long-enough-to-exceed", "x");

        lim.max_path = 24;
        l = collect_ok(&lim);
        assert_int_equal(l->n_items, 1);
        assert_string_equal(l->items[0].path, "short.txt");
        assert_int_equal(l->n_skipped_total, 3);
        /* Listed cut to max_path. */
        assert_skip(l, "a-rather-long-file-name-", "path_too_long");
        assert_skip(l, "longdir-name-0123456789/", "path_too_long");
        assert_skip(l, "dir/file-name-long-enoug", "path_too_long");
}

static void test_size_caps(_unused_ void **state) {
        _cleanup_(artifact_list_freep) ArtifactList *l = NULL;
        ArtifactLimits lim = default_limits;

        mkfile("four", "1234");
        mkfile("five", "12345");
        lim.max_file_bytes = 4;
        l = collect_ok(&lim);
        assert_int_equal(l->n_items, 1);
        assert_string_equal(l->items[0].path, "four");
        assert_skip(l, "five", "too_large");
        l = artifact_list_free(l);

        /* Total: of two 6-byte files under a 10-byte total, exactly one. */
        assert_int_equal(unlinkat(out_fd, "four", 0), 0);
        assert_int_equal(unlinkat(out_fd, "five", 0), 0);
        mkfile("a", "aaaaaa");
        mkfile("b", "bbbbbb");
        lim = default_limits;
        lim.max_total_bytes = 10;
        l = collect_ok(&lim);
        assert_int_equal(l->n_items, 1);
        assert_int_equal(l->total_bytes, 6);
        assert_int_equal(l->n_skipped_total, 1);
        assert_string_equal(l->skipped[0].reason, "total_too_large");
        assert_int_equal(store_count(), 2);   /* "1234" from the first round, and a or b */
}

/* The walk opens one component at a time; its open refuses what a swap between fstatat() and the
 * open could plant: a symlink anywhere on the way, a path out of the directory, an absolute one. */
static void test_openat_beneath(_unused_ void **state) {
        char p[128];
        int fd;

        mkfile("dir/f.txt", "f");
        (void) snprintf(p, sizeof(p), "%s/outside", base);
        assert_int_equal(symlinkat(p, out_fd, "link"), 0);
        assert_int_equal(symlinkat("dir", out_fd, "dirlink"), 0);
        assert_int_equal(symlinkat("f.txt", out_fd, "dir/flink"), 0);

        fd = artifacts_openat_beneath(out_fd, "dir/f.txt", O_RDONLY);
        if (fd == -ENOSYS)
                skip();
        assert_true(fd >= 0);
        safe_close(fd);

        assert_int_equal(artifacts_openat_beneath(out_fd, "link/secret", O_RDONLY), -ELOOP);
        assert_int_equal(artifacts_openat_beneath(out_fd, "dirlink/f.txt", O_RDONLY), -ELOOP);
        assert_int_equal(artifacts_openat_beneath(out_fd, "dir/flink", O_RDONLY), -ELOOP);
        /* The last component a symlink: O_NOFOLLOW makes it ELOOP, O_DIRECTORY ENOTDIR first. */
        assert_int_equal(artifacts_openat_beneath(out_fd, "link", O_RDONLY), -ELOOP);
        fd = artifacts_openat_beneath(out_fd, "link", O_RDONLY | O_DIRECTORY);
        assert_true(fd == -ELOOP || fd == -ENOTDIR);
        assert_int_equal(artifacts_openat_beneath(out_fd, "../../outside/secret", O_RDONLY), -EXDEV);
        assert_int_equal(artifacts_openat_beneath(out_fd, "/etc/passwd", O_RDONLY), -EXDEV);
        assert_int_equal(artifacts_openat_beneath(out_fd, "/proc/self/root/etc/passwd", O_RDONLY), -EXDEV);
        /* Never a magic link either, even where one is reachable: /proc/self/fd/N below a dir fd. */
        fd = open("/proc/self", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(fd >= 0);
        {
                char fdpath[32];
                int r;

                (void) snprintf(fdpath, sizeof(fdpath), "fd/%d", out_fd);
                r = artifacts_openat_beneath(fd, fdpath, O_RDONLY);
                assert_true(r == -ELOOP || r == -EXDEV);
        }
        safe_close(fd);
}

typedef struct Swapper {
        atomic_bool stop;
        unsigned swaps;
} Swapper;

static void *swapper_thread(void *userdata) {
        Swapper *sw = userdata;

        while (!atomic_load(&sw->stop)) {
                if (renameat2(out_fd, "report.txt", out_fd, "swap", RENAME_EXCHANGE) == 0)
                        sw->swaps++;
                if (renameat2(out_fd, "data.csv", out_fd, "pipe", RENAME_EXCHANGE) == 0)
                        sw->swaps++;
        }
        return NULL;
}

/* The race itself: while collections run, another thread keeps exchanging report.txt (a real file)
 * with a symlink to the host's secret, and data.csv (another) with a FIFO nobody writes to.
 * Whatever the interleaving, nothing is followed and nothing blocks (the alarm would end the test):
 * every collected file is one of the real ones. */
static void test_swap_race(_unused_ void **state) {
        Swapper sw = {};
        pthread_t t;
        char p[128], want[65];
        unsigned collected = 0, skipped = 0;
        bool found;

        sha256_hex("the real report", 15, want);
        mkfile("report.txt", "the real report");
        mkfile("data.csv", "the real report");
        (void) snprintf(p, sizeof(p), "%s/outside/secret", base);
        assert_int_equal(symlinkat(p, out_fd, "swap"), 0);
        assert_int_equal(mkfifoat(out_fd, "pipe", 0644), 0);
        alarm(120);

        atomic_init(&sw.stop, false);
        assert_int_equal(pthread_create(&t, NULL, swapper_thread, &sw), 0);
        for (unsigned i = 0; i < 300; i++) {
                _cleanup_(artifact_list_freep) ArtifactList *l = collect_ok(NULL);

                for (size_t k = 0; k < l->n_items; k++) {
                        assert_string_equal(l->items[k].sha256, want);
                        collected++;
                }
                for (size_t k = 0; k < l->n_skipped; k++) {
                        if (!streq(l->skipped[k].reason, "symlink") && !streq(l->skipped[k].reason, "fifo") &&
                            !streq(l->skipped[k].reason, "io_error")) {
                                print_error("unexpected skip '%s' %s\n", l->skipped[k].path, l->skipped[k].reason);
                                fail();
                        }
                        skipped++;
                }
        }
        atomic_store(&sw.stop, true);
        assert_int_equal(pthread_join(t, NULL), 0);
        alarm(0);
        print_message("# %u swaps: %u collected, %u skipped\n", sw.swaps, collected, skipped);

        assert_true(store_count() <= 1);
        assert_int_equal(store_scan(SECRET, &found), store_count());
        assert_false(found);
}

static void test_store_blobs(_unused_ void **state) {
        static const char *const bad[] = {
                "",
                "2CF24DBA5FB0A30E26E83B2AC5B9E29E1B161E5C1FA7425E73043362938B9824",
                "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b982",
                "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b98245",
                "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b982g",
                "../../../../../../../../../../../../../../../../../../etc/passwd",
                "2c/2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e7304336293",
                " 2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b982",
        };
        _cleanup_(artifact_list_freep) ArtifactList *l = NULL;
        int fd;

        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                assert_int_equal(artifacts_store_open_blob(store_fd, bad[i]), -EINVAL);
                assert_int_equal(artifacts_store_remove_blob(store_fd, bad[i]), -EINVAL);
        }
        assert_int_equal(artifacts_store_open_blob(store_fd, NULL), -EINVAL);
        assert_int_equal(artifacts_store_open_blob(store_fd, SHA256_HELLO), -ENOENT);
        assert_int_equal(artifacts_store_remove_blob(store_fd, SHA256_HELLO), -ENOENT);

        mkfile("hello.txt", "hello");
        l = collect_ok(NULL);
        fd = artifacts_store_open_blob(store_fd, SHA256_HELLO);
        assert_true(fd >= 0);
        assert_int_equal(fcntl(fd, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
        assert_int_equal(fcntl(fd, F_GETFL) & O_ACCMODE, O_RDONLY);
        safe_close(fd);
        assert_int_equal(artifacts_store_remove_blob(store_fd, SHA256_HELLO), 0);
        assert_int_equal(artifacts_store_open_blob(store_fd, SHA256_HELLO), -ENOENT);
        assert_int_equal(artifacts_store_remove_blob(store_fd, SHA256_HELLO), -ENOENT);
        assert_int_equal(store_count(), 0);

        /* A store directory that exists is opened as it is; a missing parent is an error. */
        {
                char p[128];

                (void) snprintf(p, sizeof(p), "%s/store", base);
                fd = artifacts_store_open(p);
                assert_true(fd >= 0);
                safe_close(fd);
                (void) snprintf(p, sizeof(p), "%s/no/such/store", base);
                assert_int_equal(artifacts_store_open(p), -ENOENT);
                assert_int_equal(artifacts_store_open(""), -EINVAL);
        }
}

/* Hostile content is never an error; the store's failures are. */
static void test_store_error(_unused_ void **state) {
        _cleanup_(artifact_list_freep) ArtifactList *l = NULL;
        _cleanup_close_ int file = -EBADF, proc = -EBADF;
        char p[128];

        mkfile("x.txt", "x");
        /* A store fd that is no directory; one on a file system where nothing can be created. */
        (void) snprintf(p, sizeof(p), "%s/outside/secret", base);
        file = open(p, O_RDONLY | O_CLOEXEC);
        assert_true(file >= 0);
        assert_int_equal(artifacts_collect(ws_fd, file, &default_limits, &l), -ENOTDIR);
        assert_null(l);
        /* /proc has no space available (f_bavail 0): a file with content is refused before its copy
         * is even tried, as a skip; an empty one charges nothing, gets as far as the copy, and the
         * store's failure fails the collection. */
        proc = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(proc >= 0);
        assert_int_equal(artifacts_collect(ws_fd, proc, &default_limits, &l), 0);
        assert_int_equal(l->n_items, 0);
        assert_skip(l, "x.txt", "low_disk_space");
        l = artifact_list_free(l);
        assert_int_equal(unlinkat(out_fd, "x.txt", 0), 0);
        mkfile("empty", "");
        assert_true(artifacts_collect(ws_fd, proc, &default_limits, &l) < 0);
        assert_null(l);
        assert_int_equal(artifacts_collect(-1, store_fd, &default_limits, &l), -EINVAL);
        assert_int_equal(artifacts_collect(ws_fd, store_fd, NULL, &l), -EINVAL);
}

typedef struct AsyncState {
        unsigned calls;
        int r;
        ArtifactList *list;
        ArtifactCollect *handle;
        bool free_in_callback;
} AsyncState;

static void on_done(int r, ArtifactList *list, void *userdata) {
        AsyncState *s = userdata;

        s->calls++;
        s->r = r;
        s->list = list;
        if (s->free_in_callback)
                s->handle = artifact_collect_cancel(s->handle);
}

static void run_until_called(sd_event *e, AsyncState *s) {
        for (unsigned i = 0; i < 600 && s->calls == 0; i++)
                assert_true(sd_event_run(e, 100 * 1000) >= 0);
        assert_int_equal(s->calls, 1);
}

static void test_async(_unused_ void **state) {
        _cleanup_(artifact_list_freep) ArtifactList *l = NULL;
        sd_event *e = NULL;
        AsyncState s = {};
        int dup_ws;

        mkfile("a.txt", "hello");
        mkfile("b/c.json", "{}");
        assert_true(sd_event_new(&e) >= 0);

        /* The fds are duplicated: closing ours at once changes nothing. */
        dup_ws = fcntl(ws_fd, F_DUPFD_CLOEXEC, 3);
        assert_int_equal(artifacts_collect_async(e, dup_ws, store_fd, &default_limits, on_done, &s, &s.handle), 0);
        safe_close(dup_ws);
        run_until_called(e, &s);
        assert_int_equal(s.r, 0);
        l = s.list;
        assert_int_equal(l->n_items, 2);
        assert_string_equal(l->items[0].path, "a.txt");
        assert_string_equal(l->items[0].sha256, SHA256_HELLO);
        assert_string_equal(l->items[1].path, "b/c.json");
        /* After cb, cancel only frees. */
        s.handle = artifact_collect_cancel(s.handle);
        assert_null(s.handle);

        /* Freed from within the callback. */
        s = (AsyncState) { .free_in_callback = true };
        assert_int_equal(artifacts_collect_async(e, ws_fd, store_fd, &default_limits, on_done, &s, &s.handle), 0);
        run_until_called(e, &s);
        assert_int_equal(s.r, 0);
        assert_null(s.handle);
        s.list = artifact_list_free(s.list);

        /* Failure reported through cb: a store on which nothing can be created. */
        {
                _cleanup_close_ int ro = -EBADF;
                char p[128];

                (void) snprintf(p, sizeof(p), "%s/outside/secret", base);
                ro = open(p, O_RDONLY | O_CLOEXEC);
                s = (AsyncState) {};
                assert_int_equal(artifacts_collect_async(e, ws_fd, ro, &default_limits, on_done, &s, &s.handle), 0);
                run_until_called(e, &s);
                assert_int_equal(s.r, -ENOTDIR);
                assert_null(s.list);
                s.handle = artifact_collect_cancel(s.handle);
        }

        assert_int_equal(artifacts_collect_async(NULL, ws_fd, store_fd, &default_limits, on_done, &s, &s.handle),
                         -EINVAL);
        sd_event_unref(e);
}

/* Cancelled while it runs (a large tree): cb is never called, the thread is joined, nothing leaks. */
static void test_async_cancel(_unused_ void **state) {
        sd_event *e = NULL;
        AsyncState s = {};
        char name[32];
        int dfd;

        assert_int_equal(mkdirat(out_fd, "many", 0755), 0);
        dfd = openat(out_fd, "many", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(dfd >= 0);
        for (unsigned i = 0; i < 5000; i++) {
                int fd;

                (void) snprintf(name, sizeof(name), "f%u", i);
                fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
                assert_true(fd >= 0);
                assert_int_equal(loop_write(fd, name, strlen(name)), 0);
                safe_close(fd);
        }
        safe_close(dfd);

        assert_true(sd_event_new(&e) >= 0);
        assert_int_equal(artifacts_collect_async(e, ws_fd, store_fd, &default_limits, on_done, &s, &s.handle), 0);
        s.handle = artifact_collect_cancel(s.handle);
        assert_null(s.handle);
        for (unsigned i = 0; i < 3; i++)
                assert_true(sd_event_run(e, 10 * 1000) >= 0);
        assert_int_equal(s.calls, 0);
        sd_event_unref(e);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void) {
        const struct CMUnitTest tests[] = {
                T(test_regular_files),
                T(test_large_file_digest),
                T(test_symlinks_skipped),
                T(test_symlink_loops),
                T(test_hardlinks_skipped),
                T(test_special_files_skipped),
                T(test_many_files),
                T(test_names_invalid),
                T(test_path_render),
                T(test_sparse_too_large),
                T(test_output_not_directory),
                T(test_mode_not_copied),
                T(test_dedup),
                T(test_short_blob_replaced),
                T(test_max_depth),
                T(test_path_too_long),
                T(test_size_caps),
                T(test_openat_beneath),
                T(test_swap_race),
                T(test_store_blobs),
                T(test_store_error),
                T(test_async),
                T(test_async_cancel),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

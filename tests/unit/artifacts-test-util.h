/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What test-artifacts.c and test-artifact-budgets.c share. Static: each test program compiles its own copy. */
#pragma GCC diagnostic ignored "-Wunused-function"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <linux/magic.h>
#include <time.h>

#include "delivery/artifacts.h"
#include "model/mime.h"
#include "util.h"

/* The collector against a hostile workspace built for real in a fresh directory per test:
 * base/ws is the workspace (ws/output/ what the sandbox left), base/store the store, base/outside
 * files of the host that the sandbox must never get copied out (its secret marker must never show
 * up in the store). Not under /tmp: the tree is large (100,000 files) and /var/tmp is disk. */

#define SECRET "host-secret-7f3a9c: never in the store"
#define SHA256_HELLO "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
#define SHA256_EMPTY "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

static char base[64];
static int ws_fd = -EBADF, out_fd = -EBADF, store_fd = -EBADF;

static const ArtifactLimits default_limits = {
        .max_files = 1000,
        .max_file_bytes = 16 << 20,
        .max_total_bytes = 64 << 20,
        .max_path = 1024,
        .max_depth = 16,
        ARTIFACT_LIMITS_NO_BUDGETS,
};

static int rm_one(const char *path, _unused_ const struct stat *st, _unused_ int flag, _unused_ struct FTW *f) {
        (void) remove(path);
        return 0;
}

static int setup(_unused_ void **state) {
        char p[128];
        int fd;

        strcpy(base, "/var/tmp/test-artifacts-XXXXXX");
        if (!mkdtemp(base))
                return -1;
        (void) snprintf(p, sizeof(p), "%s/ws", base);
        if (mkdir(p, 0755) < 0)
                return -1;
        (void) snprintf(p, sizeof(p), "%s/ws/output", base);
        if (mkdir(p, 0755) < 0)
                return -1;
        (void) snprintf(p, sizeof(p), "%s/outside", base);
        if (mkdir(p, 0755) < 0)
                return -1;
        (void) snprintf(p, sizeof(p), "%s/outside/secret", base);
        fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0 || loop_write(fd, SECRET, strlen(SECRET)) < 0)
                return -1;
        safe_close(fd);

        (void) snprintf(p, sizeof(p), "%s/ws", base);
        ws_fd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        (void) snprintf(p, sizeof(p), "%s/ws/output", base);
        out_fd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        (void) snprintf(p, sizeof(p), "%s/store", base);
        store_fd = artifacts_store_open(p);
        return ws_fd >= 0 && out_fd >= 0 && store_fd >= 0 ? 0 : -1;
}

static int teardown(_unused_ void **state) {
        ws_fd = safe_close(ws_fd);
        out_fd = safe_close(out_fd);
        store_fd = safe_close(store_fd);
        (void) nftw(base, rm_one, 16, FTW_DEPTH | FTW_PHYS);
        return 0;
}

/* A file below output/ (directories on the way are created). */
static void mkfile_mode(const char *path, const void *data, size_t len, mode_t mode) {
        char buf[4096], *slash;
        int fd;

        assert_true(strlen(path) < sizeof(buf));
        strcpy(buf, path);
        for (slash = strchr(buf, '/'); slash; slash = strchr(slash + 1, '/')) {
                *slash = '\0';
                if (mkdirat(out_fd, buf, 0755) < 0)
                        assert_int_equal(errno, EEXIST);
                *slash = '/';
        }
        fd = openat(out_fd, path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
        assert_true(fd >= 0);
        assert_int_equal(loop_write(fd, data, len), 0);
        assert_int_equal(fchmod(fd, mode), 0);
        safe_close(fd);
}

static void mkfile(const char *path, const char *data) {
        mkfile_mode(path, data, strlen(data), 0644);
}

static ArtifactList *collect_ok(const ArtifactLimits *lim) {
        ArtifactList *l = NULL;
        int r;

        r = artifacts_collect(ws_fd, store_fd, lim ?: &default_limits, &l);
        if (r < 0) {
                print_error("artifacts_collect: %s\n", strerror(-r));
                fail();
        }
        assert_non_null(l);
        return l;
}

static const Artifact *find_item(const ArtifactList *l, const char *path) {
        for (size_t i = 0; i < l->n_items; i++)
                if (streq(l->items[i].path, path))
                        return &l->items[i];
        return NULL;
}

static const char *skip_reason(const ArtifactList *l, const char *path) {
        for (size_t i = 0; i < l->n_skipped; i++)
                if (streq(l->skipped[i].path, path))
                        return l->skipped[i].reason;
        return NULL;
}

/* Every skip listed must be of the given path with the given reason. */
static void assert_skip(const ArtifactList *l, const char *path, const char *reason) {
        const char *got = skip_reason(l, path);

        if (!got || !streq(got, reason)) {
                print_error("skip '%s': got '%s', want '%s'\n", path, strna(got), reason);
                for (size_t i = 0; i < l->n_skipped; i++)
                        print_error("  listed: '%s' %s\n", l->skipped[i].path, l->skipped[i].reason);
                fail();
        }
}

static void sha256_hex(const void *data, size_t len, char out[65]) {
        uint8_t d[32];
        unsigned n = 0;

        assert_int_equal(EVP_Digest(data, len, d, &n, EVP_sha256(), NULL), 1);
        assert_int_equal(n, 32);
        for (unsigned i = 0; i < 32; i++)
                (void) snprintf(out + 2 * i, 3, "%02x", d[i]);
}

/* Read a blob back through the store's API. */
static size_t blob_read(const char *hex, char *buf, size_t size) {
        _cleanup_close_ int fd = artifacts_store_open_blob(store_fd, hex);
        ssize_t n;

        assert_true(fd >= 0);
        n = loop_read(fd, buf, size);
        assert_true(n >= 0);
        return (size_t) n;
}

/* Every blob in the store: how many, and does any of them contain needle. */
static size_t store_scan(const char *needle, bool *ret_found) {
        _cleanup_free_ char *buf = malloc(1 << 20);
        size_t n = 0;
        DIR *d;
        struct dirent *de;
        int dfd = fcntl(store_fd, F_DUPFD_CLOEXEC, 3);

        assert_non_null(buf);
        *ret_found = false;
        d = fdopendir(dfd);
        assert_non_null(d);
        rewinddir(d);   /* the dup shares its offset with store_fd */
        while ((de = readdir(d))) {
                DIR *s;
                struct dirent *e;
                int sfd;

                if (de->d_name[0] == '.')
                        continue;
                assert_int_equal(strlen(de->d_name), 2);
                sfd = openat(store_fd, de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                assert_true(sfd >= 0);
                s = fdopendir(sfd);
                assert_non_null(s);
                while ((e = readdir(s))) {
                        _cleanup_close_ int fd = -EBADF;
                        ssize_t k;

                        if (e->d_name[0] == '.')
                                continue;
                        assert_int_equal(strlen(e->d_name), 64);
                        assert_memory_equal(e->d_name, de->d_name, 2);
                        n++;
                        fd = openat(sfd, e->d_name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
                        assert_true(fd >= 0);
                        k = loop_read(fd, buf, (1 << 20) - 1);
                        assert_true(k >= 0);
                        buf[k] = '\0';
                        if (needle && memmem(buf, (size_t) k, needle, strlen(needle)))
                                *ret_found = true;
                }
                closedir(s);
        }
        closedir(d);
        return n;
}

static size_t store_count(void) {
        bool found;
        return store_scan(NULL, &found);
}

static uint64_t rchar(void) {
        _cleanup_fclose_ FILE *f = fopen("/proc/self/io", "re");
        char line[128];
        uint64_t v = 0;

        assert_non_null(f);
        while (fgets(line, sizeof(line), f))
                if (sscanf(line, "rchar: %" SCNu64, &v) == 1)
                        return v;
        fail_msg("no rchar in /proc/self/io");
        return 0;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The collector and the disk: holes, the execution, caller and store budgets, headroom. */
#include "artifacts-test-util.h"

/* ---- holes and the disk budgets ---- */

/* Size caps that let files of 64 MiB through. */
static const ArtifactLimits big_limits = {
        .max_files = 1000,
        .max_file_bytes = 128 << 20,
        .max_total_bytes = 1 << 30,
        .max_path = 1024,
        .max_depth = 16,
        ARTIFACT_LIMITS_NO_BUDGETS,
};

static uint64_t charge_of(int dir_fd, const char *name) {
        struct stat st;

        assert_int_equal(fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW), 0);
        return (uint64_t) st.st_blocks * 512;
}

/* A file of size bytes below dir_fd with data only at the given offsets (4 KiB each, a pattern), the
 * rest holes; its whole content rebuilt in *ret_content for the digest. */
#define SPARSE_CHUNK 4096
static void mksparse(int dir_fd, const char *name, uint64_t size, const uint64_t *offsets, size_t n,
                     uint8_t **ret_content) {
        _cleanup_close_ int fd = -EBADF;
        uint8_t chunk[SPARSE_CHUNK];
        uint8_t *content = NULL;

        for (size_t i = 0; i < sizeof(chunk); i++)
                chunk[i] = (uint8_t) ("sparse!"[i % 7] + i / 7);
        if (ret_content) {
                content = calloc(1, size);
                assert_non_null(content);
        }
        fd = openat(dir_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        assert_true(fd >= 0);
        assert_int_equal(ftruncate(fd, (off_t) size), 0);
        for (size_t i = 0; i < n; i++) {
                size_t k = (size_t) MIN((uint64_t) sizeof(chunk), size - offsets[i]);

                assert_int_equal(pwrite(fd, chunk, k, (off_t) offsets[i]), (ssize_t) k);
                if (content)
                        memcpy(content + offsets[i], chunk, k);
        }
        assert_int_equal(fsync(fd), 0);
        if (ret_content)
                *ret_content = content;
}

/* The blob's allocation in the store. */
static uint64_t blob_charge(const char *hex, uint64_t *ret_size) {
        _cleanup_close_ int fd = artifacts_store_open_blob(store_fd, hex);
        struct stat st;

        assert_true(fd >= 0);
        assert_int_equal(fstat(fd, &st), 0);
        *ret_size = (uint64_t) st.st_size;
        return (uint64_t) st.st_blocks * 512;
}

/* A 64 MiB file with 12 KiB of data is charged its blocks and stored with its holes: the blob has the
 * file's size and digest, and no more blocks than the file; the holes are never read. dir_fd is the
 * workspace's output/ (ext4 below /var/tmp, or a tmpfs like the real workspaces). */
static void check_sparse_stored_sparse(int ws, int dir_fd, const char *fs) {
        _cleanup_(artifact_list_freep) ArtifactList *l = NULL;
        _cleanup_free_ uint8_t *content = NULL;
        const uint64_t size = 64ULL << 20, offsets[] = { 0, 32ULL << 20, size - 100 };
        uint64_t charge, holes_charge, before, after, bsize, bcharge;
        const Artifact *a;
        char want[65], zeros_want[65];
        ArtifactList *got = NULL;

        mksparse(dir_fd, "sparse.bin", size, offsets, ELEMENTSOF(offsets), &content);
        mksparse(dir_fd, "holes.bin", 8ULL << 20, NULL, 0, NULL);
        sha256_hex(content, size, want);
        charge = charge_of(dir_fd, "sparse.bin");
        holes_charge = charge_of(dir_fd, "holes.bin");
        print_message("# %s: sparse.bin %" PRIu64 " bytes, charged %" PRIu64 "; holes.bin charged %" PRIu64 "\n",
                      fs, size, charge, holes_charge);
        assert_true(charge >= 3 * SPARSE_CHUNK - 100 && charge < 1 << 20);
        assert_int_equal(holes_charge, 0);
        content = mfree(content);
        content = calloc(1, 8 << 20);
        assert_non_null(content);
        sha256_hex(content, 8 << 20, zeros_want);

        before = rchar();
        assert_int_equal(artifacts_collect(ws, store_fd, &big_limits, &got), 0);
        l = got;
        after = rchar();
        print_message("# %s: read %" PRIu64 " bytes to collect 72 MiB of mostly holes\n", fs, after - before);
        assert_true(after - before < 1 << 20);
        assert_int_equal(l->n_items, 2);
        assert_int_equal(l->total_bytes, size + (8 << 20));
        assert_int_equal(l->charged_bytes, charge);

        a = find_item(l, "sparse.bin");
        assert_non_null(a);
        assert_int_equal(a->size, size);
        assert_int_equal(a->charged_bytes, charge);
        assert_string_equal(a->sha256, want);
        bcharge = blob_charge(a->sha256, &bsize);
        print_message("# %s: the stored blob: %" PRIu64 " bytes, %" PRIu64 " allocated\n", fs, bsize, bcharge);
        assert_int_equal(bsize, size);
        assert_true(bcharge <= charge);
        assert_true(bcharge >= 3 * SPARSE_CHUNK - 100);

        a = find_item(l, "holes.bin");
        assert_non_null(a);
        assert_int_equal(a->charged_bytes, 0);
        assert_string_equal(a->sha256, zeros_want);
        assert_int_equal(blob_charge(a->sha256, &bsize), 0);
        assert_int_equal(bsize, 8 << 20);
}

static void test_sparse_stored_sparse(_unused_ void **state) {
        _cleanup_close_ int tws = -EBADF, tout = -EBADF;
        char tbase[] = "/dev/shm/test-artifacts-XXXXXX", p[64];
        struct statfs sf;

        check_sparse_stored_sparse(ws_fd, out_fd, "disk");

        /* The workspaces are tmpfs mounts: the same on a tmpfs (SEEK_DATA there since Linux 3.8). */
        if (statfs("/dev/shm", &sf) < 0 || sf.f_type != TMPFS_MAGIC || !mkdtemp(tbase)) {
                print_message("# no tmpfs on /dev/shm: the tmpfs half is not run\n");
                return;
        }
        (void) snprintf(p, sizeof(p), "%s/output", tbase);
        assert_int_equal(mkdir(p, 0755), 0);
        tws = open(tbase, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        tout = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(tws >= 0 && tout >= 0);
        check_sparse_stored_sparse(tws, tout, "tmpfs");
        (void) nftw(tbase, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* Every row of the budget table, as plain numbers. */
static void test_budget_check(_unused_ void **state) {
        static const uint64_t N = ARTIFACT_BUDGET_NONE, U = UINT64_MAX;
        static const struct {
                const char *name;
                ArtifactBudgetCheck c;
                const char *want;
        } rows[] = {
                { "no budget at all", { 4096, 0, N, 0, N, 0, N, U, 0 }, NULL },
                { "fits exactly everywhere", { 4096, 4096, 8192, 4096, 8192, 4096, 8192, 8192, 4096 }, NULL },
                { "execution budget one byte short", { 4096, 4097, 8192, 0, N, 0, N, U, 0 }, "execution_budget" },
                { "a file larger than the execution budget", { 8193, 0, 8192, 0, N, 0, N, U, 0 },
                  "execution_budget" },
                { "caller budget one byte short", { 4096, 0, N, 4097, 8192, 0, N, U, 0 }, "caller_budget" },
                { "caller budget used up", { 512, 0, N, 8192, 8192, 0, N, U, 0 }, "caller_budget" },
                { "caller budget 0", { 512, 0, N, 0, 0, 0, N, U, 0 }, "caller_budget" },
                { "caller used beyond its budget (lowered on reload)", { 512, 0, N, 9000, 8192, 0, N, U, 0 },
                  "caller_budget" },
                { "store budget one byte short", { 4096, 0, N, 0, N, 4097, 8192, U, 0 }, "store_budget" },
                { "store budget 0", { 1, 0, N, 0, N, 0, 0, U, 0 }, "store_budget" },
                { "headroom one byte short", { 4096, 0, N, 0, N, 0, N, 8191, 4096 }, "low_disk_space" },
                { "no headroom asked, the file still fits", { 4096, 0, N, 0, N, 0, N, 4096, 0 }, NULL },
                { "no headroom asked, the file does not fit", { 4096, 0, N, 0, N, 0, N, 4095, 0 },
                  "low_disk_space" },
                { "nothing available", { 512, 0, N, 0, N, 0, N, 0, 0 }, "low_disk_space" },
                { "free space unknown", { 4096, 0, N, 0, N, 0, N, U, U - 1 }, NULL },
                { "used near UINT64_MAX does not wrap", { 4096, U - 10, U - 1, 0, N, 0, N, U, 0 },
                  "execution_budget" },
                { "the execution's budget names the reason first", { 4096, 8192, 8192, 8192, 8192, 8192, 8192, 0, 0 },
                  "execution_budget" },
                { "then the caller's", { 4096, 0, N, 8192, 8192, 8192, 8192, 0, 0 }, "caller_budget" },
                { "then the store's", { 4096, 0, N, 0, N, 8192, 8192, 0, 0 }, "store_budget" },
                { "an empty file (or all holes) always fits", { 0, 8192, 8192, 8192, 8192, 8192, 8192, 0, 4096 },
                  NULL },
        };

        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                const char *got = artifact_budget_check(&rows[i].c);

                if (!streq_ptr(got, rows[i].want)) {
                        print_error("row '%s': got %s, want %s\n", rows[i].name, strna(got), strna(rows[i].want));
                        fail();
                }
        }
}

/* The budgets inside a real collection, row by row: four dense files of the same charge (C) and an
 * empty one. What each row collects and what it reports for the rest; the caller's and the store's
 * accounts hold the collection's charges until released. */
static void test_budgets_collect(_unused_ void **state) {
        uint8_t block[8192];
        uint64_t C;

        memset(block, 'd', sizeof(block));
        for (unsigned i = 0; i < 4; i++) {
                char name[8];

                (void) snprintf(name, sizeof(name), "d%u", i);
                block[0] = (uint8_t) ('0' + i);     /* distinct content: the store's dedup does not blur it */
                mkfile_mode(name, block, sizeof(block), 0644);
        }
        mkfile("empty", "");
        C = charge_of(out_fd, "d0");
        assert_true(C >= sizeof(block));

        static const struct {
                const char *name;
                uint64_t execution_max;          /* in units of C, plus half a C; N: none */
                uint64_t caller_used, caller_max;        /* in units of C */
                uint64_t store_used, store_max;
                uint64_t min_free;               /* bytes */
                unsigned min_free_percent;
                unsigned n_dense;                /* dense files collected */
                const char *reason;              /* for the others */
        } rows[] = {
#define N ARTIFACT_BUDGET_NONE
                { "no budgets", N, 0, N, 0, N, 0, 0, 4, NULL },
                { "execution budget of 2.5 files", 2, 0, N, 0, N, 0, 0, 2, "execution_budget" },
                { "execution budget of 0.5 files", 0, 0, N, 0, N, 0, 0, 0, "execution_budget" },
                { "execution budget of 100 files", 100, 0, N, 0, N, 0, 0, 4, NULL },
                { "caller with 1 of 4 files used", N, 1, 4, 0, N, 0, 0, 3, "caller_budget" },
                { "caller budget used up", N, 4, 4, 0, N, 0, 0, 0, "caller_budget" },
                { "caller over its budget (lowered)", N, 9, 4, 0, N, 0, 0, 0, "caller_budget" },
                { "store with 2 of 4 files used", N, 0, N, 2, 4, 0, 0, 2, "store_budget" },
                { "store budget 0", N, 0, N, 0, 0, 0, 0, 0, "store_budget" },
                { "caller before store", N, 3, 4, 3, 4, 0, 0, 1, "caller_budget" },
                { "execution before caller", 0, 4, 4, 0, N, 0, 0, 0, "execution_budget" },
                { "headroom of more than there is", N, 0, N, 0, N, UINT64_MAX / 2, 0, 0, "low_disk_space" },
                { "headroom of 100%", N, 0, N, 0, N, 0, 100, 0, "low_disk_space" },
                { "headroom of 0%", N, 0, N, 0, N, 0, 0, 4, NULL },
                { "headroom of 1 MiB", N, 0, N, 0, N, 1 << 20, 0, 4, NULL },
#undef N
        };

        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                _cleanup_(artifact_list_freep) ArtifactList *l = NULL;
                ArtifactAccount caller = {}, store = {};
                ArtifactLimits lim = default_limits;
                unsigned dense = 0;

                print_message("# row: %s\n", rows[i].name);
                lim.execution_max_bytes = rows[i].execution_max == ARTIFACT_BUDGET_NONE ? ARTIFACT_BUDGET_NONE :
                                          rows[i].execution_max * C + C / 2;
                caller.committed = rows[i].caller_used * C;
                store.committed = rows[i].store_used * C;
                lim.caller = &caller;
                lim.caller_max_bytes = rows[i].caller_max == ARTIFACT_BUDGET_NONE ? ARTIFACT_BUDGET_NONE :
                                       rows[i].caller_max * C;
                lim.store = &store;
                lim.store_max_bytes = rows[i].store_max == ARTIFACT_BUDGET_NONE ? ARTIFACT_BUDGET_NONE :
                                      rows[i].store_max * C;
                lim.min_free_bytes = rows[i].min_free;
                lim.min_free_percent = rows[i].min_free_percent;
                l = collect_ok(&lim);

                for (unsigned k = 0; k < 4; k++) {
                        char name[8];

                        (void) snprintf(name, sizeof(name), "d%u", k);
                        if (find_item(l, name))
                                dense++;
                        else
                                assert_skip(l, name, rows[i].reason);
                }
                assert_int_equal(dense, rows[i].n_dense);
                assert_int_equal(l->n_skipped_total, 4 - dense);
                /* Empty: charged nothing, collected whatever the budgets. */
                assert_non_null(find_item(l, "empty"));
                /* Exactly what was collected is charged, and reserved in both accounts until released. */
                assert_int_equal(l->charged_bytes, dense * C);
                assert_int_equal(caller.reserved, l->charged_bytes);
                assert_int_equal(store.reserved, l->charged_bytes);
                assert_int_equal(artifact_account_used(&caller), caller.committed + l->charged_bytes);
                artifact_account_release(&caller, l->charged_bytes);
                artifact_account_release(&store, l->charged_bytes);
                assert_int_equal(caller.reserved, 0);
                assert_int_equal(store.reserved, 0);
        }
}

/* A dense file larger than the execution's budget is that budget's; one with holes whose size alone
 * exceeds it is "sparse", judged from the stat. */
static void test_sparse_over_budget(_unused_ void **state) {
        _cleanup_(artifact_list_freep) ArtifactList *l = NULL;
        _cleanup_free_ uint8_t *dense = malloc(2 << 20);
        const uint64_t offsets[] = { 0 };
        ArtifactLimits lim = big_limits;
        ArtifactAccount caller = {};
        uint64_t before, after;

        assert_non_null(dense);
        memset(dense, 'x', 2 << 20);
        mkfile_mode("dense-2M", dense, 2 << 20, 0644);
        mkfile_mode("dense-512K", dense, 512 << 10, 0644);
        mksparse(out_fd, "sparse-64M", 64ULL << 20, offsets, 1, NULL);
        lim.execution_max_bytes = 1 << 20;
        before = rchar();
        l = collect_ok(&lim);
        after = rchar();
        assert_int_equal(l->n_items, 1);
        assert_non_null(find_item(l, "dense-512K"));
        assert_skip(l, "dense-2M", "execution_budget");
        assert_skip(l, "sparse-64M", "sparse");
        /* Only the 512 KiB were read. */
        assert_true(after - before < 1 << 20);
        l = artifact_list_free(l);

        /* Without an execution budget the 64 MiB file is collected: a caller budget of 1 MiB counts
         * its one block of data, not its size (charged by st_size it would be refused). */
        assert_int_equal(unlinkat(out_fd, "dense-2M", 0), 0);
        assert_int_equal(unlinkat(out_fd, "dense-512K", 0), 0);
        lim = big_limits;
        lim.caller = &caller;
        lim.caller_max_bytes = 1 << 20;
        l = collect_ok(&lim);
        assert_int_equal(l->n_items, 1);
        assert_int_equal(l->items[0].size, 64ULL << 20);
        assert_int_equal(l->items[0].charged_bytes, charge_of(out_fd, "sparse-64M"));
        assert_true(l->items[0].charged_bytes < 64 << 10);
        assert_int_equal(caller.reserved, l->items[0].charged_bytes);
}

/* Two collections charging the same caller at once never take more than its budget between them. */
typedef struct Concurrent {
        ArtifactLimits lim;
        ArtifactList *list;
        int r;
} Concurrent;

static void *concurrent_thread(void *userdata) {
        Concurrent *c = userdata;

        c->r = artifacts_collect(ws_fd, store_fd, &c->lim, &c->list);
        return NULL;
}

static void test_budget_concurrent(_unused_ void **state) {
        ArtifactAccount caller = {}, store = {};
        Concurrent c[2] = {};
        pthread_t t[2];
        uint8_t block[4096];
        uint64_t C, total = 0;
        size_t n = 0;

        memset(block, 'c', sizeof(block));
        for (unsigned i = 0; i < 200; i++) {
                char name[16];

                (void) snprintf(name, sizeof(name), "f%03u", i);
                memcpy(block, name, 4);
                mkfile_mode(name, block, sizeof(block), 0644);
        }
        C = charge_of(out_fd, "f000");
        for (unsigned i = 0; i < 2; i++) {
                c[i].lim = default_limits;
                c[i].lim.caller = &caller;
                c[i].lim.caller_max_bytes = 150 * C;
                c[i].lim.store = &store;
                assert_int_equal(pthread_create(&t[i], NULL, concurrent_thread, &c[i]), 0);
        }
        for (unsigned i = 0; i < 2; i++) {
                assert_int_equal(pthread_join(t[i], NULL), 0);
                assert_int_equal(c[i].r, 0);
                n += c[i].list->n_items;
                total += c[i].list->charged_bytes;
        }
        print_message("# two collections of 200 files, a caller budget of 150: %zu and %zu collected\n",
                      c[0].list->n_items, c[1].list->n_items);
        assert_int_equal(n, 150);
        assert_int_equal(total, 150 * C);
        assert_int_equal(caller.reserved, 150 * C);
        assert_int_equal(store.reserved, 150 * C);
        assert_int_equal(c[0].list->n_skipped_total + c[1].list->n_skipped_total, 250);
        for (unsigned i = 0; i < 2; i++)
                artifact_list_free(c[i].list);
}

/* A failed collection gives back what it had charged. */
static void test_budget_released_on_failure(_unused_ void **state) {
        _cleanup_close_ int file = -EBADF;
        ArtifactAccount caller = {}, store = {};
        ArtifactLimits lim = default_limits;
        ArtifactList *l = NULL;
        char p[128];

        mkfile("a.txt", "aaaa");
        mkfile("b.txt", "bbbb");
        lim.caller = &caller;
        lim.store = &store;
        (void) snprintf(p, sizeof(p), "%s/outside/secret", base);
        file = open(p, O_RDONLY | O_CLOEXEC);
        assert_true(file >= 0);
        assert_int_equal(artifacts_collect(ws_fd, file, &lim, &l), -ENOTDIR);
        assert_null(l);
        assert_int_equal(caller.reserved, 0);
        assert_int_equal(store.reserved, 0);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void) {
        const struct CMUnitTest tests[] = {
                T(test_sparse_stored_sparse),
                T(test_budget_check),
                T(test_budgets_collect),
                T(test_sparse_over_budget),
                T(test_budget_concurrent),
                T(test_budget_released_on_failure),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

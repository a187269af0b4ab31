/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* artifacts-bench: the artifact collector against its peers on the same tree, in the same run. Not a
 * test (timings depend on the machine); run it by hand:
 *
 *     build/bench/artifacts-bench [SMALL_FILES] [REPEAT]
 *
 * It builds an output/ tree in a fresh directory under $ARTIFACTS_BENCH_DIR (default /var/tmp; a
 * tmpfs such as /dev/shm takes the disk's writeback out of the comparison), removed afterwards: SMALL_FILES
 * files of 4 KiB in 100 directories plus one 64 MiB file, and times, REPEAT times each (median):
 *   collector   artifacts_collect() into an empty content-addressed store (openat2 walk, fstat
 *               checks, streamed copy + SHA-256, O_TMPFILE + link)
 *   cp -a       coreutils copying the same tree (no hashing)
 *   sha256sum   coreutils hashing the same files (no copying)
 * and prints the collector's time as a ratio to each peer and to both together. Page cache warm for all (a first
 * untimed pass reads the tree). */

#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "delivery/artifacts.h"
#include "util.h"

static double now_s(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f) {
        return remove(p) < 0 ? -1 : 0;
}

static void rm_rf(const char *p) {
        (void) nftw(p, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static int cmp_double(const void *a, const void *b) {
        double x = *(const double *) a, y = *(const double *) b;
        return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
        qsort(v, n, sizeof(double), cmp_double);
        return v[n / 2];
}

static int write_file(const char *path, size_t size, unsigned seed) {
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        char buf[65536];

        if (fd < 0)
                return -errno;
        for (size_t i = 0; i < sizeof(buf); i++)
                buf[i] = (char) ('a' + (i * 7 + seed) % 26);
        /* Every file distinct: the store keeps identical content once, which would flatter it. */
        (void) snprintf(buf, 16, "%015u", seed);
        while (size > 0) {
                size_t n = size < sizeof(buf) ? size : sizeof(buf);
                if (loop_write(fd, buf, n) < 0)
                        return -errno;
                size -= n;
        }
        return 0;
}

static double run_cmd(const char *cmd) {
        double t = now_s();
        if (system(cmd) != 0) {
                fprintf(stderr, "artifacts-bench: '%s' failed\n", cmd);
                exit(EXIT_FAILURE);
        }
        return now_s() - t;
}

int main(int argc, char *argv[]) {
        unsigned files = argc > 1 ? (unsigned) atoi(argv[1]) : 20000, repeat = argc > 2 ? (unsigned) atoi(argv[2]) : 5;
        const char *base = getenv("ARTIFACTS_BENCH_DIR") ?: "/var/tmp";
        char top[1024], path[4096], cmd[8192];
        double t_collect[64], t_cp[64], t_sha[64];
        ArtifactLimits lim = {
                .max_files = files + 1, .max_file_bytes = 1ULL << 30, .max_total_bytes = 1ULL << 34,
                .max_path = 1024, .max_depth = 16, ARTIFACT_LIMITS_NO_BUDGETS,
        };
        uint64_t bytes = 0;
        size_t n_items = 0;

        if (snprintf(top, sizeof(top), "%s/artifacts-bench.XXXXXX", base) >= (int) sizeof(top) || files < 1 ||
            repeat < 1 || repeat > 64 || !mkdtemp(top)) {
                fprintf(stderr, "usage: artifacts-bench [SMALL_FILES>=1] [REPEAT 1..64]\n");
                return EXIT_FAILURE;
        }
        snprintf(path, sizeof(path), "%s/ws", top);
        if (mkdir(path, 0755) < 0)
                return EXIT_FAILURE;
        snprintf(path, sizeof(path), "%s/ws/output", top);
        if (mkdir(path, 0755) < 0)
                return EXIT_FAILURE;
        for (unsigned d = 0; d < 100; d++) {
                snprintf(path, sizeof(path), "%s/ws/output/d%03u", top, d);
                if (mkdir(path, 0755) < 0)
                        return EXIT_FAILURE;
        }
        for (unsigned i = 0; i < files; i++) {
                snprintf(path, sizeof(path), "%s/ws/output/d%03u/f%06u.txt", top, i % 100, i);
                if (write_file(path, 4096, i) < 0)
                        return EXIT_FAILURE;
        }
        snprintf(path, sizeof(path), "%s/ws/output/big.bin", top);
        if (write_file(path, 64u << 20, 1) < 0)
                return EXIT_FAILURE;
        snprintf(cmd, sizeof(cmd), "cat %s/ws/output/*/* %s/ws/output/big.bin > /dev/null", top, top);
        (void) run_cmd(cmd);    /* warm the page cache */

        for (unsigned r = 0; r < repeat; r++) {
                _cleanup_(artifact_list_freep) ArtifactList *l = NULL;
                _cleanup_close_ int ws = -EBADF, store = -EBADF;
                double t;

                snprintf(path, sizeof(path), "%s/store", top);
                rm_rf(path);
                store = artifacts_store_open(path);
                snprintf(path, sizeof(path), "%s/ws", top);
                ws = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (store < 0 || ws < 0)
                        return EXIT_FAILURE;
                t = now_s();
                if (artifacts_collect(ws, store, &lim, &l) < 0)
                        return EXIT_FAILURE;
                t_collect[r] = now_s() - t;
                n_items = l->n_items;
                bytes = l->total_bytes;

                snprintf(path, sizeof(path), "%s/copy", top);
                rm_rf(path);
                snprintf(cmd, sizeof(cmd), "cp -a %s/ws/output %s/copy", top, top);
                t_cp[r] = run_cmd(cmd);
                snprintf(cmd, sizeof(cmd), "cd %s/ws/output && find . -type f -print0 | xargs -0 sha256sum > /dev/null", top);
                t_sha[r] = run_cmd(cmd);
        }
        rm_rf(top);

        double c = median(t_collect, repeat), p = median(t_cp, repeat), s = median(t_sha, repeat);
        printf("artifacts-bench: %zu files, %.1f MiB, median of %u\n", n_items, bytes / 1048576.0, repeat);
        printf("  %-12s %8.3f s\n", "collector", c);
        printf("  %-12s %8.3f s   collector/cp = %.2f\n", "cp -a", p, c / p);
        printf("  %-12s %8.3f s   collector/sha256sum = %.2f\n", "sha256sum", s, c / s);
        printf("  collector/(cp + sha256sum) = %.2f (it does both jobs, plus its checks)\n", c / (p + s));
        return EXIT_SUCCESS;
}

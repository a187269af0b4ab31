/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The replay driver: a target's LLVMFuzzerTestOneInput() once over every file given, or every file
 * of every directory given (sorted by name, dot files skipped), each in a buffer of exactly its size
 * (so that a sanitizer sees a read past its end). What `meson test` runs over tests/fuzz/corpus/ in
 * a build without libFuzzer: a crash found once stays found. Exit status 0, or 1 when a file
 * cannot be read or nothing was run. */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"
#include "util.h"

static int run_file(int dir_fd, const char *name, const char *shown) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ uint8_t *buf = NULL;
        struct stat st;
        ssize_t n;

        fd = openat(dir_fd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0 || fstat(fd, &st) < 0) {
                dprintf(STDERR_FILENO, "fuzz-main: %s: %m\n", shown);
                return -errno;
        }
        if (!S_ISREG(st.st_mode))
                return 0;
        /* Exactly the file's size (a 0-byte file gets 1 byte: malloc(0) may return NULL). */
        buf = malloc(MAX((size_t) st.st_size, (size_t) 1));
        if (!buf)
                return -ENOMEM;
        n = loop_read(fd, buf, (size_t) st.st_size);
        if (n < 0) {
                dprintf(STDERR_FILENO, "fuzz-main: %s: %s\n", shown, strerror((int) -n));
                return (int) n;
        }
        (void) LLVMFuzzerTestOneInput(buf, (size_t) n);
        return 1;
}

static int filter(const struct dirent *de) {
        return de->d_name[0] != '.';
}

int main(int argc, char *argv[]) {
        size_t n_run = 0;
        int failed = 0;

        (void) LLVMFuzzerInitialize(&argc, &argv);

        for (int i = 1; i < argc; i++) {
                struct dirent **names = NULL;
                struct stat st;
                int n, r;

                if (stat(argv[i], &st) < 0) {
                        dprintf(STDERR_FILENO, "fuzz-main: %s: %m\n", argv[i]);
                        failed = 1;
                        continue;
                }
                if (!S_ISDIR(st.st_mode)) {
                        r = run_file(AT_FDCWD, argv[i], argv[i]);
                        if (r < 0)
                                failed = 1;
                        n_run += r > 0;
                        continue;
                }
                n = scandir(argv[i], &names, filter, alphasort);
                if (n < 0) {
                        dprintf(STDERR_FILENO, "fuzz-main: %s: %m\n", argv[i]);
                        failed = 1;
                        continue;
                }
                {
                        _cleanup_close_ int dfd = open(argv[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);

                        for (int k = 0; k < n; k++) {
                                _cleanup_free_ char *shown = NULL;

                                if (dfd < 0 || asprintf(&shown, "%s/%s", argv[i], names[k]->d_name) < 0)
                                        failed = 1;
                                else {
                                        r = run_file(dfd, names[k]->d_name, shown);
                                        if (r < 0)
                                                failed = 1;
                                        n_run += r > 0;
                                }
                                free(names[k]);
                        }
                }
                free(names);
        }

        dprintf(STDERR_FILENO, "fuzz-main: %s: %zu inputs run\n", argc > 0 ? argv[0] : "?", n_run);
        if (n_run == 0)
                failed = 1;
        return failed;
}

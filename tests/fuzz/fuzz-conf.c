/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The configuration parser, from files as the daemon reads them: config_load() over a private
 * directory. The input's pieces, split at NUL bytes, are the files: the first is sandboxd.conf
 * (absent when empty), the others sandboxd.conf.d/NN-fuzz.conf in that order. config_parse_text(),
 * the value parsers (sizes, booleans, Listen= addresses, log levels) and config_validate() run as
 * at start and on reload. */

#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"
#include "model/conf.h"
#include "util.h"

#define DROPINS_MAX 8

static char dir[PATH_MAX];
static int dir_fd = -EBADF, dropin_fd = -EBADF;

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *f) {
        (void) remove(path);
        return 0;
}

static void remove_dir(void) {
        if (dir[0])
                (void) nftw(dir, remove_one, 8, FTW_DEPTH | FTW_PHYS);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        const char *tmp = getenv("TMPDIR");

        fuzz_quiet();
        /* Our own directory, removed at exit. */
        snprintf(dir, sizeof(dir), "%s/fuzz-conf.XXXXXX", isempty(tmp) ? "/tmp" : tmp);
        if (!mkdtemp(dir))
                abort();
        atexit(remove_dir);
        dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dir_fd < 0 || mkdirat(dir_fd, "sandboxd.conf.d", 0700) < 0)
                abort();
        dropin_fd = openat(dir_fd, "sandboxd.conf.d", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dropin_fd < 0)
                abort();
        return 0;
}

static void write_file(int at, const char *name, const char *text) {
        _cleanup_close_ int fd = openat(at, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        size_t n = strlen(text);

        if (fd < 0 || write(fd, text, n) != (ssize_t) n)
                abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_(config_freep) Config *c = config_new();
        _cleanup_free_ char **files = NULL;
        _cleanup_free_ char *error = NULL;
        char name[32];
        size_t n;
        int r;

        if (!c)
                abort();
        n = fuzz_split(data, size, &files, 1 + DROPINS_MAX);
        if (n > 0 && files[0][0])
                write_file(dir_fd, "sandboxd.conf", files[0]);
        for (size_t i = 1; i < n; i++) {
                snprintf(name, sizeof(name), "%02zu-fuzz.conf", i);
                write_file(dropin_fd, name, files[i]);
        }

        r = config_load(c, dir, &error);
        fuzz_check(r == 0 || r == -EINVAL || r == -ENOMEM);
        fuzz_check(r == 0 || r == -ENOMEM || error);
        if (r == 0)
                fuzz_check(config_validate(c, NULL) == 0);

        (void) unlinkat(dir_fd, "sandboxd.conf", 0);
        for (size_t i = 1; i < n; i++) {
                snprintf(name, sizeof(name), "%02zu-fuzz.conf", i);
                (void) unlinkat(dropin_fd, name, 0);
        }
        return 0;
}

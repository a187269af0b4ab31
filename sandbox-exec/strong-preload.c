/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Preloaded into the programs of the strong tier (LD_PRELOAD, set in the bundle by strong.c, only
 * where the file is in the sandbox's /usr): what the gVisor release Debian 12 ships (runsc 20221219)
 * refuses and every Linux accepts.
 *
 * statx(2) with AT_NO_AUTOMOUNT: gVisor's statx fails it with EINVAL, so coreutils' ls -l and stat
 * (which always pass it) fail on every file. AT_NO_AUTOMOUNT only says "do not trigger an automount",
 * and gVisor has no automount points: the same call without it is the same answer. Only the retry
 * is ours; every other statx goes to gVisor as it was made. Nothing here is a security boundary: the
 * program may unset LD_PRELOAD or call the system call itself, and gets gVisor's answer.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

__attribute__((visibility("default")))
int statx(int dirfd, const char *restrict path, int flags, unsigned int mask, struct statx *restrict buf) {
        long r = syscall(SYS_statx, dirfd, path, flags, mask, buf);

        if (r < 0 && errno == EINVAL && (flags & AT_NO_AUTOMOUNT))
                r = syscall(SYS_statx, dirfd, path, flags & ~AT_NO_AUTOMOUNT, mask, buf);
        return (int) r;
}

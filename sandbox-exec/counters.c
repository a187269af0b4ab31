/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* What the kernel counted: the unit's cgroup counters, the file systems, the wait status. */

#include "sandbox-exec.h"

/* ---------------------------------------------------------------------------------------------- */
/* Counters */

/* Read a small kernel file under dir_fd. NULL if it does not exist or cannot be read. */
static bool read_small_file(int dir_fd, const char *path, char *buf, size_t size) {
        _cleanup_close_ int fd = -EBADF;
        ssize_t n;

        if (dir_fd < 0)
                return false;
        fd = openat(dir_fd, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return false;
        n = loop_read(fd, buf, size - 1);
        if (n < 0)
                return false;
        buf[n] = '\0';
        return true;
}

/* A file holding a single number (with or without trailing newline). */
static bool read_u64_file(int dir_fd, const char *path, uint64_t *ret) {
        char buf[64];
        size_t n;

        if (!read_small_file(dir_fd, path, buf, sizeof(buf)))
                return false;
        n = strcspn(buf, "\n");
        buf[n] = '\0';
        return safe_atou64(buf, ret) >= 0;
}

/* A flat-keyed file ("key value\n" lines, like memory.events): the value of key. */
static bool read_keyed_file(int dir_fd, const char *path, const char *key, uint64_t *ret) {
        char buf[4096];
        size_t klen = strlen(key);

        if (!read_small_file(dir_fd, path, buf, sizeof(buf)))
                return false;

        for (char *line = buf; line && *line;) {
                char *nl = strchr(line, '\n');

                if (nl)
                        *nl = '\0';
                if (strncmp(line, key, klen) == 0 && line[klen] == ' ')
                        return safe_atou64(line + klen + 1, ret) >= 0;
                line = nl ? nl + 1 : NULL;
        }
        return false;
}

/* "memory/memory.oom_control" → the file below that controller's fd. */
static int cg_dir_fd(const char *path, const char **ret_file) {
        const char *slash = strchr(path, '/');

        for (size_t c = 0; slash && c < ELEMENTSOF(cgroup_names); c++)
                if (strncmp(cgroup_names[c], path, (size_t) (slash - path)) == 0 &&
                    cgroup_names[c][slash - path] == '\0') {
                        *ret_file = slash + 1;
                        return cg_fds[c];
                }
        return -EBADF;
}

static bool cg_u64(const char *path, uint64_t *ret) {
        const char *file = NULL;
        int fd = cg_dir_fd(path, &file);

        return fd >= 0 && read_u64_file(fd, file, ret);
}

static bool cg_keyed(const char *path, const char *key, uint64_t *ret) {
        const char *file = NULL;
        int fd = cg_dir_fd(path, &file);

        return fd >= 0 && read_keyed_file(fd, file, key, ret);
}

/* The unit's cgroup.procs (one pid per line, in our pid namespace) into buf, NUL-terminated: the
 * bytes read, or -ENOENT where the unit's cgroup is not ours to read. A full buffer means more pids
 * than it holds. */
ssize_t cgroup_read_procs(char *buf, size_t size) {
        static const char *const procs[] = { "pids/cgroup.procs", "unified/cgroup.procs", "memory/cgroup.procs" };

        if (size == 0)
                return -EINVAL;
        for (size_t i = 0; i < ELEMENTSOF(procs); i++) {
                const char *file = NULL;
                int dfd = cg_dir_fd(procs[i], &file);
                _cleanup_close_ int fd = -EBADF;
                ssize_t k;

                if (dfd < 0)
                        continue;
                fd = openat(dfd, file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
                if (fd < 0)
                        continue;
                k = loop_read(fd, buf, size - 1);
                if (k < 0)
                        continue;
                buf[k] = '\0';
                return k;
        }
        return -ENOENT;
}

static void read_cgroup_counters(HelperReport *r, bool *have_cpu, bool *have_peak) {
        uint64_t v;

        /* cgroup v1 (the hybrid hierarchy: the controllers live there). */
        if (cg_keyed("memory/memory.oom_control", "oom_kill", &v))
                r->oom_kills = v;
        else if (cg_keyed("unified/memory.events", "oom_kill", &v))
                r->oom_kills = v;

        if (cg_u64("memory/memory.max_usage_in_bytes", &v) || cg_u64("unified/memory.peak", &v)) {
                r->memory_peak = v;
                *have_peak = true;
        }

        /* v2 has no failcnt; memory.events "max" counts the times usage hit memory.max. */
        if (cg_u64("memory/memory.failcnt", &v) || cg_keyed("unified/memory.events", "max", &v))
                r->memory_failcnt = v;

        if (cg_keyed("pids/pids.events", "max", &v) || cg_keyed("unified/pids.events", "max", &v))
                r->pids_max = v;

        if (cg_u64("cpuacct/cpuacct.usage", &v)) {
                r->cpu_usec = v / NSEC_PER_USEC;
                *have_cpu = true;
        } else if (cg_keyed("unified/cpu.stat", "usage_usec", &v)) {
                r->cpu_usec = v;
                *have_cpu = true;
        }
}

/* Full, or nearly: less than 1% of the blocks and less than 64 KiB left. */
static bool fs_is_full(int fd) {
        struct statvfs sv;
        uint64_t avail_bytes;

        if (fd < 0 || fstatvfs(fd, &sv) < 0)
                return false;
        if (sv.f_bavail == 0)
                return true;
        avail_bytes = (uint64_t) sv.f_bavail * (uint64_t) (sv.f_frsize ?: sv.f_bsize);
        return (uint64_t) sv.f_bavail * 100 < (uint64_t) sv.f_blocks && avail_bytes < 64 * 1024;
}

/* A warm unit's interpreter spent CPU time before its claim (starting, importing what it preloads):
 * the unit's counter at the claim, taken off what the run reports. */
uint64_t cpu_base_usec, rusage_base_usec;

/* The unit's CPU counter; false where the unit has none (cgroup v1 with cpuacct not per unit). */
bool cgroup_cpu_usec(uint64_t *ret) {
        HelperReport r = {};
        bool have_cpu = false, have_peak = false;

        read_cgroup_counters(&r, &have_cpu, &have_peak);
        *ret = r.cpu_usec;
        return have_cpu;
}

/* utime + stime of a process (all its threads), from /proc/<pid>/stat; 0 if unknown. */
/* /proc/<pid>/stat read into buf: the fields after the command name (which may hold anything, a
 * ')' too: they start after its last ')'), the state first; NULL if it cannot be read. */
const char *proc_stat_fields(pid_t pid, char *buf, size_t size) {
        char path[64], *p;
        _cleanup_close_ int fd = -EBADF;
        ssize_t n;

        if (size < 2)
                return NULL;
        snprintf(path, sizeof(path), "/proc/%d/stat", (int) pid);
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW);
        if (fd < 0)
                return NULL;
        n = read(fd, buf, size - 1);
        if (n <= 0)
                return NULL;
        buf[n] = 0;
        p = strrchr(buf, ')');
        return p ? p + 1 : NULL;
}

uint64_t proc_cpu_usec(pid_t pid) {
        char buf[1024];
        const char *f = proc_stat_fields(pid, buf, sizeof(buf));
        unsigned long long ut, st;
        long tck = sysconf(_SC_CLK_TCK);

        /* State is field 3; utime and stime are 14 and 15. */
        if (!f || tck <= 0 || sscanf(f, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
                return 0;
        return (uint64_t) (ut + st) * USEC_PER_SEC / (uint64_t) tck;
}

void cpu_baseline(pid_t runtime) {
        uint64_t v;

        cpu_base_usec = cgroup_cpu_usec(&v) ? v : 0;
        rusage_base_usec = runtime > 0 ? proc_cpu_usec(runtime) : 0;
}

void gather(HelperReport *r, int workspace_fd, int tmp_fd) {
        bool have_cpu = false, have_peak = false;
        struct rusage ru;

        read_cgroup_counters(r, &have_cpu, &have_peak);
        if (have_cpu)
                r->cpu_usec = r->cpu_usec > cpu_base_usec ? r->cpu_usec - cpu_base_usec : 0;

        /* Without a cgroup: what the kernel accounted to our waited-for children (less what a warm
         * runtime had used before its claim). */
        if ((!have_cpu || !have_peak) && getrusage(RUSAGE_CHILDREN, &ru) >= 0) {
                if (!have_cpu) {
                        uint64_t u = timeval_to_usec(&ru.ru_utime) + timeval_to_usec(&ru.ru_stime);

                        r->cpu_usec = u > rusage_base_usec ? u - rusage_base_usec : 0;
                }
                if (!have_peak)
                        r->memory_peak = (uint64_t) ru.ru_maxrss * 1024;
        }

        r->disk_full = fs_is_full(workspace_fd) || fs_is_full(tmp_fd);
        /* The strong tier: gVisor's RLIMIT_NPROC, which the cgroup does not see, refused a fork
         * (gVisor's log, strong.c). As with pids.events's "max" in the standard tier, the limit reached
         * is the verdict whatever the exit status (a bash fork bomb's shell exits 0 after its forks
         * failed). */
        if (strong_tier && strong_task_limit > 0 && strong_fork_refused)
                r->pids_max = MAX(r->pids_max, UINT64_C(1));
}

void status_to_report(int status, HelperReport *r) {
        if (strong_tier && WIFEXITED(status) && WEXITSTATUS(status) > 128 && WEXITSTATUS(status) < 128 + 65) {
                /* runsc's way of saying the program died of signal N (strong.c). */
                r->exit_code = -1;
                r->signal = WEXITSTATUS(status) - 128;
        } else if (WIFEXITED(status)) {
                r->exit_code = WEXITSTATUS(status);
                r->signal = 0;
        } else if (WIFSIGNALED(status)) {
                r->exit_code = -1;
                r->signal = WTERMSIG(status);
        } else {
                r->exit_code = -1;
                r->signal = 0;
        }
}

bool status_is_success(int status) {
        return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}


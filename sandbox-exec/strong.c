/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The strong tier (docs/isolation.md): the program, and its compile step, run under gVisor. The
 * child that would exec the program execs `runsc --rootless ... run --bundle` instead, as the
 * program's user with none of our privileges: runsc makes its own user namespace, and its Sentry
 * answers every system call of the program, so no call of the program reaches the host kernel.
 *
 * What stays ours: the output pipes and stdin (runsc hands its stdio to the program), the deadline
 * and the sweep (every process of runsc runs as the program's user: kill(-1) from that user reaches
 * them all), the counters of the unit's cgroup (gVisor runs inside it: --ignore-cgroups). What is
 * gVisor's: the program's seccomp filter (ours would stop runsc itself; gVisor filters its own
 * processes and the program never calls the host), and the task limit (RLIMIT_NPROC inside gVisor:
 * the cgroup's TasksMax= is gVisor's room, which it must not hit).
 *
 * The bundle: the unit's root as gVisor's root (the host's permissions for the dynamic user still
 * apply: read-only but for the workspace and /tmp), gVisor's own /proc, /dev and /sys, a tmpfs over
 * /run (which hides runsc's state and the bundles) with the source directory bound back read-only,
 * the workspace, /tmp and /var/tmp bound read-write. Written by us as root into /run, before the
 * fork: the program's user can read it, not change it.
 */
#include "sandbox-exec.h"
#include "strong-log.h"

#define STRONG_DIR "/run/strong"
#define STRONG_STATE_DIR STRONG_DIR "/state"
#define STRONG_PROC_DIR STRONG_DIR "/proc"
#define STRONG_MEMINFO STRONG_DIR "/meminfo"
/* The daemon's copy of strong-preload.c's library in the /usr layer (USR_LAYER_PRELOAD of
 * sandboxd/unit/sandbox-root.h): named in LD_PRELOAD of gVisor's programs where it is there. */
#define STRONG_PRELOAD "/usr/lib/sandbox/sandboxd-strong-preload.so"

/* One of invocation_variables[] (children.c, which the child unsets): they stay out of gVisor's
 * environment too (the bundle is written before the fork, from our own environment). */
static bool invocation_variable(const char *assignment) {
        size_t n = strcspn(assignment, "=");

        for (size_t i = 0; invocation_variables[i]; i++)
                if (strlen(invocation_variables[i]) == n && strncmp(invocation_variables[i], assignment, n) == 0)
                        return true;
        return false;
}

/* A JSON string of s: quotes, backslashes and control characters escaped; other bytes as they are
 * (the daemon sends UTF-8). */
static void put_json_string(FILE *f, const char *s) {
        fputc('"', f);
        for (const unsigned char *c = (const unsigned char *) s; *c; c++)
                if (*c == '"' || *c == '\\')
                        fprintf(f, "\\%c", *c);
                else if (*c < 0x20 || *c == 0x7f)
                        fprintf(f, "\\u%04x", *c);
                else
                        fputc(*c, f);
        fputc('"', f);
}

static void put_rlimit(FILE *f, bool *first, const char *type, uint64_t v) {
        fprintf(f, "%s{\"type\":\"%s\",\"hard\":%" PRIu64 ",\"soft\":%" PRIu64 "}", *first ? "" : ",", type, v, v);
        *first = false;
}

static void put_bind(FILE *f, const char *path, bool rw) {
        fputs(",{\"destination\":", f);
        put_json_string(f, path);
        fputs(",\"type\":\"bind\",\"source\":", f);
        put_json_string(f, path);
        fprintf(f, ",\"options\":[\"rbind\",\"%s\",\"nosuid\",\"nodev\"]}", rw ? "rw" : "ro");
}

static const char *kind_name(ChildKind kind) {
        return kind == CHILD_COMPILE ? "compile" : "run";
}

int strong_prepare(void) {
        if (mkdir(STRONG_DIR, 0755) < 0 && errno != EEXIST)
                return -errno;
        /* runsc's own state (--root): the program's user writes it (we have no CAP_CHOWN to give it
         * the directory, so it is sticky and open to all, of whom there are two in this unit: us and
         * that user), and the program never sees it (gVisor's /run is a tmpfs of its own). */
        if (mkdir(STRONG_STATE_DIR, 01777) < 0 && errno != EEXIST)
                return -errno;
        if (chmod(STRONG_STATE_DIR, 01777) < 0)
                return -errno;
        return 0;
}

/* A new file of ours (root's, 0644, never through a link), for writing. */
static int create_file(const char *path, FILE **ret) {
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);

        if (fd < 0)
                return -errno;
        *ret = fdopen(fd, "w");
        if (!*ret) {
                (void) close(fd);
                return -errno;
        }
        return 0;
}

/* The total memory gVisor reports (/proc/meminfo, sysinfo(2)) is the run's memory limit, not the host's.
 * runsc 20221219 passes its Sentry --total-memory from the cgroup's limit, and with --ignore-cgroups
 * (ours: runsc cannot manage the unit's cgroup) from the MemTotal: of the /proc/meminfo it reads on
 * the host; it has no flag of its own for it. So, as root while we still may mount (the unit's mount
 * namespace is the sandbox's alone), a file of one line is bound over /proc/meminfo. runsc's sandbox
 * and gofer mount a proc of their own in the user namespace they make, which the kernel allows only
 * where a proc mount without anything over its files is visible (mount_too_revealing()): a second
 * one, below /run/strong, which only root may enter and gVisor's /run hides. */
int strong_mount_meminfo(uint64_t memory_mb) {
        _cleanup_fclose_ FILE *f = NULL;
        int r;

        if (memory_mb == 0 || memory_mb > UINT64_MAX / 1024)
                return -EINVAL;
        if (mkdir(STRONG_DIR, 0755) < 0 && errno != EEXIST)
                return -errno;
        if (mkdir(STRONG_PROC_DIR, 0700) < 0 && errno != EEXIST)
                return -errno;
        /* hidepid=invisible as ProtectProc= gives the unit's /proc (hidepid=2 before Linux 5.8). */
        if (mount("proc", STRONG_PROC_DIR, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=invisible") < 0 &&
            mount("proc", STRONG_PROC_DIR, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=2") < 0)
                return -errno;

        r = create_file(STRONG_MEMINFO, &f);
        if (r < 0)
                return r;
        /* All runsc reads of it; gVisor makes up the rest of its own /proc/meminfo from this. */
        fprintf(f, "MemTotal:       %" PRIu64 " kB\n", memory_mb * 1024);
        if (fflush(f) != 0 || ferror(f))
                return errno > 0 ? -errno : -EIO;

        if (mount(STRONG_MEMINFO, "/proc/meminfo", NULL, MS_BIND, NULL) < 0)
                return -errno;
        if (mount(NULL, "/proc/meminfo", NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                  NULL) < 0)
                return -errno;
        return 0;
}

int strong_write_bundle(const Options *o, ChildKind kind, char **argv) {
        _cleanup_free_ char *dir = NULL, *path = NULL, *tmp = NULL;
        _cleanup_fclose_ FILE *f = NULL;
        bool first = true, preload;
        int r;

        if (asprintf(&dir, STRONG_DIR "/%s", kind_name(kind)) < 0 || asprintf(&path, "%s/config.json", dir) < 0 ||
            asprintf(&tmp, "%s/.config.json", dir) < 0)
                return -ENOMEM;
        if (mkdir(dir, 0755) < 0 && errno != EEXIST)
                return -errno;
        r = create_file(tmp, &f);
        if (r < 0)
                return r;

        /* uid 0 of gVisor's user namespace, without capabilities: the one identity runsc --rootless
         * maps, to the dynamic user on the host (another uid inside could not own the workspace's
         * files, which are the dynamic user's). */
        fputs("{\"ociVersion\":\"1.0.0\",\"process\":{\"terminal\":false,\"user\":{\"uid\":0,\"gid\":0},\"args\":[", f);
        for (char **a = argv; *a; a++) {
                if (a != argv)
                        fputc(',', f);
                put_json_string(f, *a);
        }
        fputs("],\"env\":[", f);
        first = true;
        preload = access(STRONG_PRELOAD, R_OK) >= 0;
        for (char **e = environ; e && *e; e++) {
                _cleanup_free_ char *both = NULL;

                if (invocation_variable(*e) || !strchr(*e, '='))
                        continue;
                if (!first)
                        fputc(',', f);
                /* One the language's definition sets comes after ours (a request cannot set it). */
                if (preload && startswith(*e, "LD_PRELOAD=")) {
                        if (asprintf(&both, "LD_PRELOAD=" STRONG_PRELOAD ":%s", *e + strlen("LD_PRELOAD=")) < 0)
                                return -ENOMEM;
                        preload = false;
                }
                put_json_string(f, both ?: *e);
                first = false;
        }
        if (preload) {
                if (!first)
                        fputc(',', f);
                put_json_string(f, "LD_PRELOAD=" STRONG_PRELOAD);
        }
        fputs("],\"cwd\":", f);
        put_json_string(f, o->workspace);
        fputs(",\"capabilities\":{\"bounding\":[],\"effective\":[],\"inheritable\":[],\"permitted\":[],\"ambient\":[]},"
              "\"noNewPrivileges\":true,\"rlimits\":[", f);
        first = true;
        put_rlimit(f, &first, "RLIMIT_CORE", o->rlimit_core);
        if (o->have_nofile)
                put_rlimit(f, &first, "RLIMIT_NOFILE", o->rlimit_nofile);
        if (o->have_fsize)
                put_rlimit(f, &first, "RLIMIT_FSIZE", o->rlimit_fsize);
        if (o->strong_tasks > 0)
                put_rlimit(f, &first, "RLIMIT_NPROC", o->strong_tasks);
        if (kind == CHILD_COMPILE && o->compile_memory_mb > 0)
                put_rlimit(f, &first, "RLIMIT_DATA", o->compile_memory_mb * UINT64_C(1024) * UINT64_C(1024));
        fputs("]},\"root\":{\"path\":\"/\",\"readonly\":false},\"hostname\":\"sandbox\","
              "\"mounts\":[{\"destination\":\"/proc\",\"type\":\"proc\",\"source\":\"proc\"},"
              "{\"destination\":\"/dev\",\"type\":\"tmpfs\",\"source\":\"tmpfs\"},"
              /* An empty /sys, as in the standard tier (gVisor's sysfs would list its devices). */
              "{\"destination\":\"/sys\",\"type\":\"tmpfs\",\"source\":\"tmpfs\",\"options\":[\"nosuid\",\"noexec\",\"nodev\",\"ro\",\"size=4k\"]},"
              "{\"destination\":\"/run\",\"type\":\"tmpfs\",\"source\":\"tmpfs\",\"options\":[\"nosuid\",\"nodev\",\"noexec\",\"ro\",\"size=4k\"]}", f);
        put_bind(f, o->code_dir, false);
        put_bind(f, o->workspace, true);
        put_bind(f, "/tmp", true);
        put_bind(f, "/var/tmp", true);
        fputs("],\"linux\":{\"namespaces\":[{\"type\":\"pid\"},{\"type\":\"network\"},{\"type\":\"ipc\"},{\"type\":\"uts\"},"
              "{\"type\":\"mount\"}]}}\n", f);
        if (fflush(f) != 0 || ferror(f))
                return errno > 0 ? -errno : -EIO;
        if (rename(tmp, path) < 0)
                return -errno;
        return 0;
}

_Noreturn void strong_exec(const Options *o, ChildKind kind, int err_fd) {
        char platform[64], bundle[64], id[64];
        char *argv[] = {
                (char *) o->runsc, (char *) "--rootless", (char *) "--root=" STRONG_STATE_DIR, (char *) "--ignore-cgroups",
                platform, (char *) "--network=none",
                /* gVisor's word on the task limit (above): its boot log to our pipe, made fd 3 by
                 * exec_child(), with only the calls that make a process traced. */
                (char *) "--strace", (char *) "--strace-syscalls=clone,fork,vfork,clone3",
                (char *) "--debug-log=/proc/self/fd/3", (char *) "--debug-command=boot",
                (char *) "run", (char *) "--bundle", bundle, id, NULL,
        };

        snprintf(platform, sizeof(platform), "--platform=%s", o->runsc_platform);
        snprintf(bundle, sizeof(bundle), STRONG_DIR "/%s", kind_name(kind));
        /* One container per step; the state of the compile step's is gone when it exits. */
        snprintf(id, sizeof(id), "sandbox-%s", kind_name(kind));
        execv(argv[0], argv);
        child_fail(err_fd, "Cannot execute %s: %s", argv[0], strerror(errno));
}

/* ---- The task limit, from gVisor's own word ----------------------------------------------------
 * RLIMIT_NPROC inside gVisor stops the program at --tasks processes, and nothing on the host sees
 * that fork fail: the unit's TasksMax= is gVisor's room, far above it. Counting the program's
 * processes from the host (one ptrace stub each) cannot say it either: a stub is made when its
 * process first runs, not at its fork, so the processes gVisor counted at the refused fork may never
 * all have had a stub at once (a fork bomb whose first refusals end their processes at once was seen
 * below its limit under load). So gVisor says it: runsc runs with --strace on the calls that make a
 * process (clone, fork, vfork) and its boot log written to a pipe of ours (--debug-log=/proc/self/fd/3,
 * --debug-command=boot: not the gofer's), and a refused one, "X clone(...) = 0 (0x0) errno=11", is the
 * report's pids_max: "a fork failed at the task limit", as pids.events's "max" says in the standard
 * tier. Every line is read and dropped but these (strong-log.c, pure: a line longer than
 * STRONG_LOG_LINE_MAX is dropped whole). The log is gVisor's, and the program can put a few bytes in it
 * (its name, at most 15 bytes, opens each line): all it could forge is its own run reported at the
 * task limit. */

uint64_t strong_task_limit = 0;        /* --tasks: RLIMIT_NPROC inside gVisor */
int strong_log_fd = -EBADF;             /* read end of the pipe runsc's boot log comes down */
bool strong_fork_refused = false;       /* of any step: the compile step's and the program's */

static StrongLogScan log_scan;

int strong_log_open(int *ret_write_fd) {
        int p[2];

        if (pipe2(p, O_CLOEXEC) < 0)
                return -errno;
        /* Ours only: runsc's end blocks, so a log we have not read yet slows gVisor, never drops a line.
         * runsc opens its end again by name, as the program's user: the pipe (one inode for both
         * ends) may be written by others (without CAP_CHOWN it stays root's). Only a process that may
         * look into a holder's /proc/PID/fd can name it: runsc's, which are the program's user's. */
        if (fcntl(p[0], F_SETFL, O_NONBLOCK) < 0 || fchmod(p[1], 0622) < 0) {
                int r = -errno;

                (void) close(p[0]);
                (void) close(p[1]);
                return r;
        }
        strong_log_fd = safe_close(strong_log_fd);
        strong_log_fd = p[0];
        strong_log_scan_init(&log_scan);
        *ret_write_fd = p[1];
        return 0;
}

bool strong_log_pump(bool drain) {
        char buf[16 * 1024];

        if (strong_log_fd < 0)
                return false;
        /* Bounded even when draining, as the output (children.c pump()). */
        for (unsigned i = 0; i < (drain ? 1024U : 4U); i++) {
                ssize_t k = read(strong_log_fd, buf, sizeof(buf));

                if (k < 0 && (errno == EAGAIN || errno == EINTR))
                        return true;
                if (k <= 0) {
                        strong_log_fd = safe_close(strong_log_fd);
                        return false;
                }
                strong_log_scan_feed(&log_scan, buf, (size_t) k);
                strong_fork_refused = strong_fork_refused || log_scan.refused;
        }
        return true;
}

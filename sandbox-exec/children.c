/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The program's processes: each child becomes the program's user and runs a step; the supervision of
 * the run (output, deadline, cancel), the syntax checker, and the sweep of what is left. */

#include "sandbox-exec.h"

/* ---------------------------------------------------------------------------------------------- */
/* Children */

const char *const invocation_variables[] = {
        "INVOCATION_ID", "SYSTEMD_EXEC_PID", "JOURNAL_STREAM", "NOTIFY_SOCKET", "WATCHDOG_PID",
        "WATCHDOG_USEC", "LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES", NULL,
};

_Noreturn void child_fail(int err_fd, const char *fmt, ...) {
        char msg[ERROR_MAX + 1];
        va_list ap;
        int n;

        va_start(ap, fmt);
        n = vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        if (n > 0) {
                size_t len = MIN((size_t) n, sizeof(msg) - 1);

                /* To the parent, which turns it into a phase=setup report, and to stderr, where
                 * whoever reads the output sees why nothing ran. */
                (void) loop_write(err_fd, msg, len);
                (void) loop_write(STDERR_FILENO, "sandbox-exec: ", strlen("sandbox-exec: "));
                (void) loop_write(STDERR_FILENO, msg, len);
                (void) loop_write(STDERR_FILENO, "\n", 1);
        }
        _exit(127);
}

static int set_limit(int resource, uint64_t value) {
        struct rlimit rl;

        if (getrlimit(resource, &rl) < 0)
                return -errno;
        /* Soft and hard alike, so the program cannot raise it again. Never above the current hard
         * limit: an unprivileged process cannot raise that, and asking would only fail. */
        if (value != (uint64_t) RLIM_INFINITY && (rl.rlim_max == RLIM_INFINITY || value < rl.rlim_max))
                rl.rlim_max = (rlim_t) value;
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(resource, &rl) < 0)
                return -errno;
        return 0;
}

/* Close every fd from 'from' up, except 'keep'. */
static int close_all_from(unsigned from, int keep) {
        if (keep >= 0 && (unsigned) keep >= from) {
                if ((unsigned) keep > from && close_range(from, (unsigned) keep - 1, 0) < 0)
                        return -errno;
                from = (unsigned) keep + 1;
        }
        if (close_range(from, ~0U, 0) < 0)
                return -errno;
        return 0;
}

/* Become the program's user: no capability bounding set, the dynamic GID as the only group, the
 * dynamic UID for real, effective and saved. From root without SECBIT_KEEP_CAPS, setresuid() clears
 * the permitted, effective and ambient sets; NoNewPrivileges= keeps them empty across exec. Checked,
 * not assumed. Returns 0 or a negative errno; in the child, between fork and exec. */
int become_program_user(void) {
        struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
        struct __user_cap_data_struct d[2] = {};

        if (!privileged)
                return 0;
        for (unsigned long c = 0; c <= 63; c++)
                if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL)
                        return -errno;
        if (setgroups(1, &prog_gid) < 0 || setresgid(prog_gid, prog_gid, prog_gid) < 0 ||
            setresuid(prog_uid, prog_uid, prog_uid) < 0)
                return -errno;
        if (getuid() != prog_uid || geteuid() != prog_uid || getgid() != prog_gid)
                return -EPERM;
        if (syscall(SYS_capget, &h, d) < 0)
                return -errno;
        if (d[0].permitted | d[0].effective | d[1].permitted | d[1].effective)
                return -EPERM;
        return 0;
}


/* In the forked child: set up and exec. Never returns. err_fd is CLOEXEC: if exec succeeds the
 * parent sees EOF on it; anything written to it is a setup failure. */
static _Noreturn void exec_child(const Options *o, char **argv, const uint8_t *bpf, size_t bpf_len,
                                 int err_fd, ChildKind kind, int warm_fd, int log_write_fd) {
        struct sock_fprog prog = {
                .len = (unsigned short) (bpf_len / 8),
                .filter = (struct sock_filter *) (void *) bpf,
        };
        sigset_t mask;
        int fd, r;

        /* Resource limits first, while nothing of the program runs. RLIMIT_CORE: no core dumps
         * into the workspace or anywhere else unless asked for. */
        r = set_limit(RLIMIT_CORE, o->rlimit_core);
        if (r < 0)
                child_fail(err_fd, "Cannot set RLIMIT_CORE: %s", strerror(-r));
        if (o->have_nofile) {
                r = set_limit(RLIMIT_NOFILE, o->rlimit_nofile);
                if (r < 0)
                        child_fail(err_fd, "Cannot set RLIMIT_NOFILE: %s", strerror(-r));
        }
        /* Not on runsc in the strong tier: its Sentry keeps the program's memory in a file of its own,
         * which would stop growing at the limit (runsc then dies before the program starts); the
         * bundle sets RLIMIT_FSIZE inside gVisor, on the program's files (strong.c). */
        if (o->have_fsize && !(o->runsc && kind != CHILD_CHECK)) {
                r = set_limit(RLIMIT_FSIZE, o->rlimit_fsize);
                if (r < 0)
                        child_fail(err_fd, "Cannot set RLIMIT_FSIZE: %s", strerror(-r));
        }

        /* The compile step's own memory limit ([Compile] MemoryMB=): RLIMIT_DATA, the private
         * writable memory of each of its processes (heap and anonymous mappings, not address space
         * merely reserved, so runtimes that reserve large arenas still start). The whole unit stays
         * under MemoryMax= as well. */
        if (kind == CHILD_COMPILE && o->compile_memory_mb > 0 && !o->runsc) {
                r = set_limit(RLIMIT_DATA, o->compile_memory_mb * UINT64_C(1024) * UINT64_C(1024));
                if (r < 0)
                        child_fail(err_fd, "Cannot set RLIMIT_DATA: %s", strerror(-r));
        }

        r = become_program_user();
        if (r < 0)
                child_fail(err_fd, "Cannot switch to the program's user %u: %s", (unsigned) prog_uid, strerror(-r));

        /* The program's working directory, entered as the program: a session's workspace is its own
         * (0700), which root without CAP_DAC_READ_SEARCH could not enter anyway. */
        if (chdir(o->workspace) < 0)
                child_fail(err_fd, "Cannot enter workspace %s: %s", o->workspace, strerror(errno));
        /* input/ and output/ exist at the start of every run, made as the program so they are its
         * own. Whatever an earlier turn of a session left at those names stays as it is. */
        if (kind != CHILD_CHECK) {
                (void) mkdir("input", 0755);
                (void) mkdir("output", 0755);
                if (o->pkgs_dir)
                        (void) mkdir(".pkgs", 0755);
        }

        if (kind != CHILD_CHECK) {
                /* stdout and stderr go to us, through the capture pipes. */
                if (dup2(out_pipe[1], STDOUT_FILENO) < 0 || dup2(err_pipe_[1], STDERR_FILENO) < 0)
                        child_fail(err_fd, "Cannot set up the output pipes: %s", strerror(errno));
                /* The request's stdin is the run step's alone; the compile step reads /dev/null. */
                if (kind == CHILD_PROGRAM && stdin_fd >= 0 && dup2(stdin_fd, STDIN_FILENO) < 0)
                        child_fail(err_fd, "Cannot set up the standard input: %s", strerror(errno));
        } else {
                fd = open("/dev/null", O_WRONLY | O_CLOEXEC | O_NOCTTY);
                if (fd < 0 || dup2(fd, STDOUT_FILENO) < 0 || dup2(fd, STDERR_FILENO) < 0)
                        child_fail(err_fd, "Cannot set up /dev/null: %s", strerror(errno));
        }
        /* Its own process group, so that a timeout or a cancel kills the program's whole tree
         * that stayed in it (the sweep after it ends kills the rest). */
        (void) setpgid(0, 0);

        /* Nothing else crosses into the program: not the control socket (CLOEXEC already, but
         * belt and braces), not the workspace fd, not whatever our own parent leaked to us. */
        /* The strong tier: runsc's log pipe (strong.c) takes fd 3, as a warm runtime's channel
         * does in the standard tier (never both). */
        if (warm_fd < 0 && o->runsc && kind != CHILD_CHECK)
                warm_fd = log_write_fd;
        if (warm_fd >= 0) {
                /* A warm runtime's end of its channel with us (or runsc's log pipe) becomes fd 3 (dup2
                 * clears CLOEXEC), moved there from copies above 10 so neither it nor err_fd is
                 * overwritten on the way. */
                int e = fcntl(err_fd, F_DUPFD_CLOEXEC, 10), w = fcntl(warm_fd, F_DUPFD_CLOEXEC, 10);

                if (e < 0 || w < 0 || dup2(w, 3) < 0)
                        child_fail(err_fd, "Cannot pass the warm channel: %s", strerror(errno));
                err_fd = e;
                r = close_all_from(4, err_fd);
        } else
                r = close_all_from(3, err_fd);
        if (r < 0)
                child_fail(err_fd, "Cannot close inherited file descriptors: %s", strerror(-r));

        /* A normal process environment for the program: systemd starts services with SIGPIPE
         * ignored (IgnoreSIGPIPE=), and an ignored disposition would survive the exec, turning
         * "yes | head" into write errors. Nothing of ours is blocked, but make sure. */
        (void) signal(SIGPIPE, SIG_DFL);
        (void) sigemptyset(&mask);
        (void) sigprocmask(SIG_SETMASK, &mask, NULL);

        /* systemd adds per-invocation variables (a random INVOCATION_ID, the PID, and with
         * ExecStart=! the dynamic user's name): the same request must see the same environment, and
         * these say nothing the program needs. */
        for (size_t i = 0; invocation_variables[i]; i++)
                (void) unsetenv(invocation_variables[i]);

        /* The strong tier: runsc, as the program's user with nothing of ours, runs the step under
         * gVisor (strong.c); our filter would stop runsc itself, gVisor filters its own. */
        if (o->runsc && kind != CHILD_CHECK) {
                (void) prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
                strong_exec(o, kind, err_fd);
        }

        /* The filter is the last thing before exec that could fail; without it nothing runs. */
        if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) < 0)
                child_fail(err_fd, "Cannot load the seccomp filter: %s", strerror(errno));

        /* We inherited PR_SET_DUMPABLE=0 from the helper (and the UID change cleared it again),
         * which makes our /proc/self files root's, so oom_score_adj could not be written. From here
         * on this process holds nothing the program will not have anyway (fds closed, no
         * capabilities, filter loaded, and exec makes it dumpable regardless), so it may be dumpable
         * again. */
        (void) prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);

        /* The OOM killer should pick the program, never the helper that reports on it. Raising
         * the score needs no privilege; failure (no /proc) only costs precision. */
        fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC | O_NOCTTY);
        if (fd >= 0) {
                (void) loop_write(fd, "1000", 4);
                (void) close(fd);
        }

        execv(argv[0], argv);
        child_fail(err_fd, "Cannot execute %s: %s", argv[0], strerror(errno));
}

uint64_t mono_usec(void) {
        struct timespec ts;

        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        return timespec_to_usec(&ts);
}

/* Read what is there (one read, or until EAGAIN when draining) into the capture. Returns false
 * at EOF or error. */
bool pump(int fd, Capture *c, bool drain) {
        uint8_t buf[64 * 1024];

        /* Bounded even when draining: a process that escaped the kill could write forever. */
        for (unsigned i = 0; i < (drain ? 256U : 1U); i++) {
                ssize_t k = read(fd, buf, sizeof(buf));
                if (k < 0)
                        return errno == EAGAIN || errno == EINTR;
                if (k == 0)
                        return false;
                if (first_output_usec == 0)
                        first_output_usec = MAX(mono_usec() - run_start_usec, (uint64_t) 1);
                capture_append(c, buf, (size_t) k);
                live_feed(c, buf, (size_t) k);
        }
        return true;
}

static void kill_program(pid_t pid) {
        (void) kill(-pid, SIGKILL);
        (void) kill(pid, SIGKILL);
}

/* Wait for the child while capturing its output, enforcing the deadline and honouring a cancel
 * (SIGUSR1). Returns its wait status. Processes that left its process group and still hold the
 * pipes do not keep us waiting: once the child is gone we drain what is there and go. */
static int supervise(pid_t pid) {
        bool killed = false;

        live_start();
        for (;;) {
                struct pollfd p[4] = {
                        { .fd = out_pipe[0], .events = POLLIN },
                        { .fd = err_pipe_[0], .events = POLLIN },
                        { .fd = signal_fd, .events = POLLIN },
                        { .fd = strong_log_fd, .events = POLLIN },      /* negative: ignored by poll() */
                };
                int timeout = -1, status;
                pid_t w;

                w = waitpid(pid, &status, WNOHANG);
                if (w == pid) {
                        (void) pump(out_pipe[0], &cap_out, true);
                        (void) pump(err_pipe_[0], &cap_err, true);
                        (void) strong_log_pump(true);
                        live_flush(true);
                        live_stop();
                        return status;
                }
                if (w < 0 && errno != EINTR)
                        fail_setup("waitpid failed: %s", strerror(errno));

                if (deadline_usec > 0 && !killed) {
                        uint64_t now = mono_usec();
                        if (now >= deadline_usec) {
                                kill_program(pid);
                                killed = timed_out = true;
                                continue;
                        }
                        timeout = (int) MIN(usec_to_msec_up(deadline_usec - now), (uint64_t) INT32_MAX);
                }
                {
                        int lt = live_timeout_ms();
                        if (lt >= 0 && (timeout < 0 || lt < timeout))
                                timeout = lt;
                }

                if (poll(p, ELEMENTSOF(p), timeout) < 0) {
                        if (errno == EINTR)
                                continue;
                        fail_setup("poll failed: %s", strerror(errno));
                }
                if (p[0].revents)
                        (void) pump(out_pipe[0], &cap_out, false);
                if (p[1].revents)
                        (void) pump(err_pipe_[0], &cap_err, false);
                if (p[3].revents)
                        (void) strong_log_pump(false);
                live_flush(false);
                if (p[2].revents) {
                        struct signalfd_siginfo si;

                        while (read(signal_fd, &si, sizeof(si)) == (ssize_t) sizeof(si))
                                if (si.ssi_signo == SIGUSR1 && !killed) {
                                        kill_program(pid);
                                        killed = cancelled = true;
                                }
                }
        }
}

/* Wait for the syntax checker until deadline, discarding nothing (its output went to /dev/null).
 * A cancel meanwhile ends it like the program. Returns its wait status, or -1 if it had to be
 * killed at the deadline. */
static int wait_quietly(pid_t pid, uint64_t deadline) {
        for (;;) {
                struct pollfd p = { .fd = signal_fd, .events = POLLIN };
                uint64_t now;
                int status;
                pid_t w;

                w = waitpid(pid, &status, WNOHANG);
                if (w == pid)
                        return status;
                if (w < 0 && errno != EINTR)
                        return -1;
                now = mono_usec();
                if (now >= deadline) {
                        kill_program(pid);
                        (void) waitpid(pid, &status, 0);
                        return -1;
                }
                if (poll(&p, 1, (int) MIN(usec_to_msec_up(deadline - now), (uint64_t) INT32_MAX)) < 0 &&
                    errno != EINTR)
                        return -1;
                if (p.revents) {
                        struct signalfd_siginfo si;

                        while (read(signal_fd, &si, sizeof(si)) == (ssize_t) sizeof(si))
                                if (si.ssi_signo == SIGUSR1) {
                                        kill_program(pid);
                                        cancelled = true;
                                }
                }
        }
}

/* Fork and exec argv in the child. A failure before the exec is reported as phase=setup (it is
 * ours, not the program's). Returns the child's pid once it has exec'd. */
pid_t spawn_child(const Options *o, char **argv, const uint8_t *bpf, size_t bpf_len, ChildKind kind, int warm_fd) {
        _cleanup_close_pair_ int err_pipe[2] = { -EBADF, -EBADF };
        _cleanup_close_ int log_write_fd = -EBADF;
        char msg[ERROR_MAX + 1];
        ssize_t n;
        pid_t pid;

        if (pipe2(err_pipe, O_CLOEXEC) < 0)
                fail_setup("Cannot create pipe: %s", strerror(errno));
        if (o->runsc && kind != CHILD_CHECK) {
                int r = strong_write_bundle(o, kind, argv);

                if (r < 0)
                        fail_setup("Cannot write the strong tier's bundle: %s", strerror(-r));
                r = strong_log_open(&log_write_fd);
                if (r < 0)
                        fail_setup("Cannot create the strong tier's log pipe: %s", strerror(-r));
        }

        pid = fork();
        if (pid < 0)
                fail_setup("Cannot fork: %s", strerror(errno));
        if (pid == 0) {
                err_pipe[0] = safe_close(err_pipe[0]);
                exec_child(o, argv, bpf, bpf_len, err_pipe[1], kind, warm_fd, log_write_fd);
        }

        err_pipe[1] = safe_close(err_pipe[1]);
        log_write_fd = safe_close(log_write_fd);

        /* EOF: the exec happened (CLOEXEC closed the last write end). Data: the child failed
         * before exec. Only our own code writes here; the program never sees this fd. */
        n = loop_read(err_pipe[0], msg, sizeof(msg) - 1);
        if (n > 0) {
                int status;

                /* Its "sandbox-exec: ..." line on stderr goes into the capture, as the output. */
                if (kind != CHILD_CHECK)
                        (void) supervise(pid);
                else
                        (void) waitpid(pid, &status, 0);
                msg[n] = '\0';
                fail_setup("%s", msg);
        }
        return pid;
}

int wait_child(pid_t pid, ChildKind kind, uint64_t check_deadline) {
        return kind != CHILD_CHECK ? supervise(pid) : wait_quietly(pid, check_deadline);
}

/* Fork, exec argv in the child, supervise it. Returns the wait status (-1: the checker was killed
 * at its deadline). */
int spawn_and_wait(const Options *o, char **argv, const uint8_t *bpf, size_t bpf_len, ChildKind kind,
                   uint64_t check_deadline) {
        pid_t pid = spawn_child(o, argv, bpf, bpf_len, kind, -EBADF);

        return wait_child(pid, kind, check_deadline);
}

/* Is anything but us left in the unit's cgroup? 1: yes, 0: only us, -1: unknown (no cgroup fd). */
static int cgroup_others(void) {
        char buf[4096];
        pid_t self = getpid();
        ssize_t k;

        k = cgroup_read_procs(buf, sizeof(buf));
        if (k < 0)
                return -1;
        if ((size_t) k == sizeof(buf) - 1)
                return 1;       /* hundreds of pids: certainly not only us */
        for (char *p = buf, *end; *p; p = end) {
                long v = strtol(p, &end, 10);

                if (end == p)
                        break;
                if (v != (long) self)
                        return 1;
                while (*end == '\n')
                        end++;
        }
        return 0;
}

/* Unknown counts as "no". */
bool cgroup_has_others(void) {
        return cgroup_others() > 0;
}

/* Known to hold nothing but us. */
bool cgroup_alone(void) {
        return cgroup_others() == 0;
}

/* Kill every process of the program's user, wherever it went (setsid, double fork): a child of ours
 * that becomes that user sends kill(-1, SIGKILL), which reaches exactly the processes the program
 * could signal itself — never us (root), never another sandbox (another dynamic UID). Repeated while
 * the cgroup still shows others (a process forking in a loop), at most a few times. */
void sweep_program_processes(void) {
        int status;

        if (!privileged)
                return;
        /* Nobody but us in the unit's cgroup (our own zombies reaped first): nobody to kill, and no
         * fork for it. Every process of the program is in that cgroup, which it cannot leave. */
        while (waitpid(-1, &status, WNOHANG) > 0)
                ;
        if (cgroup_alone())
                return;
        for (unsigned attempt = 0; attempt < 8; attempt++) {
                pid_t pid = fork();

                if (pid < 0)
                        return;
                if (pid == 0) {
                        if (become_program_user() < 0)
                                _exit(EXIT_FAILURE);
                        (void) kill(-1, SIGKILL);
                        _exit(EXIT_SUCCESS);
                }
                while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                        ;
                /* Reap whatever of ours the kill produced (the program's orphans were reparented to
                 * us: we are the unit's main process, not a subreaper, but direct children are ours). */
                while (waitpid(-1, &status, WNOHANG) > 0)
                        ;
                if (!cgroup_has_others())
                        return;
                (void) usleep(1000);
        }
}


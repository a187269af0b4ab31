/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* sandbox-exec: the main process of every execution unit. It receives the seccomp filter and the
 * source over the control channel (fd 0), writes the source into the workspace, runs the optional
 * compile step and then the program as its children, and reports how they ended (verdict.h) back
 * over the control channel. It runs as the same (dynamic) user as the program, so everything the
 * program can do is assumed to be aimed at this process: it is non-dumpable (no ptrace, no
 * /proc/<pid>/mem, no /proc/<pid>/fd), holds the control socket only on a CLOEXEC fd that no child
 * inherits, and reads nothing the program could have left behind except kernel counters.
 *
 * libc only: no libsystemd, no json-c, no libseccomp (the filter arrives compiled).
 *
 * It also supervises: the program's stdout and stderr come to it through pipes and are kept head
 * and tail (bounded) and sent with the report, it kills the program at --timeout-ms (compile and
 * run together) and on SIGUSR1 (a cancel: systemctl kill --kill-who=main -s USR1), and reports
 * which of these happened. The daemon may restart meanwhile: the report waits in the socket.
 *
 * Usage: sandbox-exec [--source NAME] [--max-source BYTES] [--workspace DIR] [--cgroup-dir DIR]
 *                     [--rlimit-nofile N] [--rlimit-fsize BYTES] [--rlimit-core BYTES]
 *                     [--timeout-ms N] [--head-bytes N] [--tail-bytes N]
 *                     [--compile-arg ARG]... [--syntax-fd] -- RUN_ARGV... */

#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stdarg.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <time.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>

#include "capture.h"
#include "util.h"

#define HEADER_MAX 64
#define HEADER_MAGIC "SANDBOXD-EXEC 1 "
#define BPF_MAX (64U * 1024U)
#define SOURCE_MAX_DEFAULT (1024U * 1024U)
/* Not a limit on what the daemon may configure, only a sanity bound on the option. */
#define SOURCE_MAX_CEILING (UINT64_C(1) << 30)
/* The control socket moves at least this high, away from the fds 0..3 children are given. */
#define CONTROL_FD_MIN 10
/* Size of the report buffer; must stay within verdict.h's HELPER_REPORT_MAX (4096). */
#define REPORT_MAX 1024
#define ERROR_MAX 200

typedef enum Phase {
        PHASE_SETUP,
        PHASE_COMPILE,
        PHASE_RUN,
} Phase;

static const char *const phase_names[] = {
        [PHASE_SETUP] = "setup",
        [PHASE_COMPILE] = "compile",
        [PHASE_RUN] = "run",
};

typedef struct Options {
        const char *source;
        uint64_t max_source;
        const char *workspace;
        const char *cgroup_dir;
        bool have_nofile, have_fsize;
        uint64_t rlimit_nofile, rlimit_fsize, rlimit_core;
        char **compile_argv;      /* NULL-terminated, or NULL */
        size_t n_compile;
        bool syntax_fd;
        char **run_argv;
        uint64_t timeout_ms;      /* 0: none (the unit's RuntimeMaxSec= still applies) */
        uint64_t head_bytes, tail_bytes;
} Options;

typedef struct Report {
        Phase phase;
        int exit_code;            /* -1 when killed by a signal */
        int signal;
        uint64_t oom_kill, mem_peak, mem_failcnt, pids_max, cpu_usec;
        bool disk_full;
        bool timed_out, cancelled;
        uint64_t run_usec;
} Report;

/* Where the report goes: fd 0 until the socket has been moved away from it. */
static int control_fd = STDIN_FILENO;

/* The program's stdout and stderr come to us through these pipes and are kept here, head and
 * tail, bounded: the report carries them, so the output survives a restart of the daemon (the
 * control socket waits in systemd's fd store) and nothing of it ever touches the journal. */
static Capture cap_out, cap_err;
static int out_pipe[2] = { -EBADF, -EBADF }, err_pipe_[2] = { -EBADF, -EBADF };
/* SIGCHLD, and SIGUSR1 = "cancel" from the daemon (KillUnit whom=main). */
static int signal_fd = -EBADF;
static uint64_t deadline_usec;    /* CLOCK_MONOTONIC; 0: none */
static uint64_t run_start_usec, first_output_usec;  /* first_output_usec: 0 until there is output */
static bool timed_out, cancelled;

/* ---------------------------------------------------------------------------------------------- */
/* Reporting */

static int send_all(int fd, const char *buf, size_t n) {
        while (n > 0) {
                /* MSG_NOSIGNAL: a daemon that went away must not kill us with SIGPIPE. */
                ssize_t k = send(fd, buf, n, MSG_NOSIGNAL);
                if (k < 0 && errno == ENOTSOCK)
                        return loop_write(fd, buf, n);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                buf += k;
                n -= (size_t) k;
        }
        return 0;
}

static void send_stream(const Capture *c) {
        uint8_t *tail;

        if (c->head_len > 0)
                (void) send_all(control_fd, (const char *) c->head, c->head_len);
        if (c->tail_len == 0)
                return;
        tail = malloc(c->tail_len);
        if (!tail)
                return;
        capture_tail_copy(c, tail);
        (void) send_all(control_fd, (const char *) tail, c->tail_len);
        free(tail);
}

/* The text part, then (after an empty line) the captured bytes whose sizes it announced. */
static void send_report(const char *text, size_t n) {
        char sizes[512];
        int k;

        k = snprintf(sizes, sizeof(sizes),
                     "stdout_bytes=%" PRIu64 "\nstdout_lines=%" PRIu64 "\nstdout_head=%zu\nstdout_tail=%zu\n"
                     "stderr_bytes=%" PRIu64 "\nstderr_lines=%" PRIu64 "\nstderr_head=%zu\nstderr_tail=%zu\n\n",
                     cap_out.total_bytes, cap_out.total_lines, cap_out.head_len, cap_out.tail_len,
                     cap_err.total_bytes, cap_err.total_lines, cap_err.head_len, cap_err.tail_len);
        /* Nothing useful can be done if this fails: the daemon then decides without a report. */
        (void) send_all(control_fd, text, n);
        if (k > 0 && (size_t) k < sizeof(sizes)) {
                (void) send_all(control_fd, sizes, (size_t) k);
                send_stream(&cap_out);
                send_stream(&cap_err);
        }
        (void) shutdown(control_fd, SHUT_WR);
}

_printf_(1, 2) static _Noreturn void fail_setup(const char *fmt, ...) {
        char msg[ERROR_MAX + 1], buf[REPORT_MAX];
        va_list ap;
        int n;

        va_start(ap, fmt);
        (void) vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);

        /* One line, printable: error= is the rest of its line in the report. */
        for (char *p = msg; *p; p++)
                if ((unsigned char) *p < 0x20 || (unsigned char) *p == 0x7f)
                        *p = ' ';

        n = snprintf(buf, sizeof(buf),
                     "phase=setup\nexit=-1\nsignal=0\noom_kill=0\nmem_peak=0\nmem_failcnt=0\n"
                     "pids_max=0\ndisk_full=0\ncpu_usec=0\nerror=%s\n",
                     msg);
        if (n > 0)
                send_report(buf, MIN((size_t) n, sizeof(buf) - 1));
        _exit(EXIT_FAILURE);
}

static _Noreturn void report_and_exit(const Report *r) {
        char buf[REPORT_MAX];
        int n;

        n = snprintf(buf, sizeof(buf),
                     "phase=%s\nexit=%d\nsignal=%d\noom_kill=%" PRIu64 "\nmem_peak=%" PRIu64
                     "\nmem_failcnt=%" PRIu64 "\npids_max=%" PRIu64 "\ndisk_full=%d\ncpu_usec=%" PRIu64
                     "\ntimeout=%d\ncancelled=%d\nrun_usec=%" PRIu64 "\n",
                     phase_names[r->phase], r->exit_code, r->signal, r->oom_kill, r->mem_peak,
                     r->mem_failcnt, r->pids_max, r->disk_full ? 1 : 0, r->cpu_usec,
                     r->timed_out ? 1 : 0, r->cancelled ? 1 : 0, r->run_usec);
        if (n > 0 && first_output_usec > 0 && (size_t) n < sizeof(buf))
                n += snprintf(buf + n, sizeof(buf) - (size_t) n, "first_output_usec=%" PRIu64 "\n", first_output_usec);
        if (n > 0)
                send_report(buf, MIN((size_t) n, sizeof(buf) - 1));

        /* Mirror the program's end in our own exit status, as a shell would. */
        if (r->signal > 0)
                _exit(128 + r->signal);
        _exit(r->exit_code & 0xff);
}

/* ---------------------------------------------------------------------------------------------- */
/* Command line */

enum {
        ARG_SOURCE = 0x100,
        ARG_MAX_SOURCE,
        ARG_WORKSPACE,
        ARG_CGROUP_DIR,
        ARG_RLIMIT_NOFILE,
        ARG_RLIMIT_FSIZE,
        ARG_RLIMIT_CORE,
        ARG_COMPILE_ARG,
        ARG_SYNTAX_FD,
        ARG_TIMEOUT_MS,
        ARG_HEAD_BYTES,
        ARG_TAIL_BYTES,
};

static bool filename_is_valid(const char *s) {
        if (isempty(s) || streq(s, ".") || streq(s, "..") || strlen(s) > NAME_MAX)
                return false;
        return !strchr(s, '/');
}

static uint64_t parse_u64_or_fail(const char *opt, const char *s) {
        uint64_t v;

        if (safe_atou64(s, &v) < 0)
                fail_setup("Invalid value for %s: %s", opt, s);
        return v;
}

static void parse_argv(int argc, char *argv[], Options *o) {
        static const struct option options[] = {
                { "source",        required_argument, NULL, ARG_SOURCE        },
                { "max-source",    required_argument, NULL, ARG_MAX_SOURCE    },
                { "workspace",     required_argument, NULL, ARG_WORKSPACE     },
                { "cgroup-dir",    required_argument, NULL, ARG_CGROUP_DIR    },
                { "rlimit-nofile", required_argument, NULL, ARG_RLIMIT_NOFILE },
                { "rlimit-fsize",  required_argument, NULL, ARG_RLIMIT_FSIZE  },
                { "rlimit-core",   required_argument, NULL, ARG_RLIMIT_CORE   },
                { "compile-arg",   required_argument, NULL, ARG_COMPILE_ARG   },
                { "syntax-fd",     no_argument,       NULL, ARG_SYNTAX_FD     },
                { "timeout-ms",    required_argument, NULL, ARG_TIMEOUT_MS    },
                { "head-bytes",    required_argument, NULL, ARG_HEAD_BYTES    },
                { "tail-bytes",    required_argument, NULL, ARG_TAIL_BYTES    },
                {}
        };
        int c;

        *o = (Options) {
                .max_source = SOURCE_MAX_DEFAULT,
                .workspace = "/workspace",
                .head_bytes = 64 * 1024,
                .tail_bytes = 64 * 1024,
        };

        /* argc bounds the number of compile args. */
        o->compile_argv = calloc((size_t) argc + 1, sizeof(char *));
        if (!o->compile_argv)
                fail_setup("Out of memory");

        /* '+': stop at the first non-option, never permute the program's argv. Errors are
         * reported over the control channel, not printed into the program's stderr. */
        opterr = 0;
        while ((c = getopt_long(argc, argv, "+", options, NULL)) >= 0)
                switch (c) {
                case ARG_SOURCE:
                        if (!filename_is_valid(optarg))
                                fail_setup("Invalid --source file name");
                        o->source = optarg;
                        break;
                case ARG_MAX_SOURCE:
                        o->max_source = parse_u64_or_fail("--max-source", optarg);
                        if (o->max_source > SOURCE_MAX_CEILING)
                                fail_setup("--max-source too large");
                        break;
                case ARG_WORKSPACE:
                        if (optarg[0] != '/')
                                fail_setup("--workspace must be an absolute path");
                        o->workspace = optarg;
                        break;
                case ARG_CGROUP_DIR:
                        if (optarg[0] != '/')
                                fail_setup("--cgroup-dir must be an absolute path");
                        o->cgroup_dir = optarg;
                        break;
                case ARG_RLIMIT_NOFILE:
                        o->rlimit_nofile = parse_u64_or_fail("--rlimit-nofile", optarg);
                        o->have_nofile = true;
                        break;
                case ARG_RLIMIT_FSIZE:
                        o->rlimit_fsize = parse_u64_or_fail("--rlimit-fsize", optarg);
                        o->have_fsize = true;
                        break;
                case ARG_RLIMIT_CORE:
                        o->rlimit_core = parse_u64_or_fail("--rlimit-core", optarg);
                        break;
                case ARG_COMPILE_ARG:
                        o->compile_argv[o->n_compile++] = optarg;
                        break;
                case ARG_SYNTAX_FD:
                        o->syntax_fd = true;
                        break;
                case ARG_TIMEOUT_MS:
                        o->timeout_ms = parse_u64_or_fail("--timeout-ms", optarg);
                        break;
                case ARG_HEAD_BYTES:
                        o->head_bytes = parse_u64_or_fail("--head-bytes", optarg);
                        if (o->head_bytes > 16 * 1024 * 1024)
                                fail_setup("--head-bytes too large");
                        break;
                case ARG_TAIL_BYTES:
                        o->tail_bytes = parse_u64_or_fail("--tail-bytes", optarg);
                        if (o->tail_bytes > 16 * 1024 * 1024)
                                fail_setup("--tail-bytes too large");
                        break;
                default:
                        fail_setup("Invalid command line option: %s",
                                   optind > 0 && optind <= argc ? argv[optind - 1] : "?");
                }

        if (o->n_compile == 0)
                o->compile_argv = mfree(o->compile_argv);
        else if (o->compile_argv[0][0] != '/')
                fail_setup("Compile command must be an absolute path");

        if (optind >= argc)
                fail_setup("No program to run");
        o->run_argv = argv + optind;
        /* No PATH search: what runs is exactly what the daemon named. */
        if (o->run_argv[0][0] != '/')
                fail_setup("Program must be an absolute path");
}

/* ---------------------------------------------------------------------------------------------- */
/* Control channel */

/* Strict decimal: digits only, no sign, no leading zeros (except "0"), no overflow. */
static int parse_decimal(const char *s, size_t n, uint64_t *ret) {
        uint64_t v = 0;

        if (n == 0 || n > 20 || (n > 1 && s[0] == '0'))
                return -EINVAL;
        for (size_t i = 0; i < n; i++) {
                if (s[i] < '0' || s[i] > '9')
                        return -EINVAL;
                if (v > (UINT64_MAX - (uint64_t) (s[i] - '0')) / 10)
                        return -ERANGE;
                v = v * 10 + (uint64_t) (s[i] - '0');
        }
        *ret = v;
        return 0;
}

/* "SANDBOXD-EXEC 1 <bpf_len> <code_len>\n", read one byte at a time so not a byte of what follows
 * is consumed. */
static void read_header(int fd, uint64_t *ret_bpf_len, uint64_t *ret_code_len) {
        char line[HEADER_MAX + 1];
        const char *p, *sp;
        size_t n = 0;

        for (;;) {
                ssize_t k;

                if (n >= HEADER_MAX)
                        fail_setup("Control header too long");
                k = read(fd, line + n, 1);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        fail_setup("Cannot read control header: %s", strerror(errno));
                }
                if (k == 0)
                        fail_setup("Control channel closed before the header ended");
                if (line[n] == '\n')
                        break;
                if (line[n] == '\0')
                        fail_setup("Malformed control header");
                n++;
        }
        line[n] = '\0';

        p = startswith(line, HEADER_MAGIC);
        if (!p)
                fail_setup("Malformed control header");
        sp = strchr(p, ' ');
        if (!sp || parse_decimal(p, (size_t) (sp - p), ret_bpf_len) < 0 ||
            parse_decimal(sp + 1, strlen(sp + 1), ret_code_len) < 0)
                fail_setup("Malformed control header");
}

static void read_exact_or_fail(int fd, void *buf, size_t n, const char *what) {
        ssize_t k = loop_read(fd, buf, n);

        if (k < 0)
                fail_setup("Cannot read %s: %s", what, strerror((int) -k));
        if ((size_t) k != n)
                fail_setup("Short read of %s (%zi of %zu bytes)", what, k, n);
}

/* Copy exactly n bytes from the control channel into the source file. Streamed, so the source
 * never needs to be held in memory as a whole. */
static void copy_source(int from, int to, uint64_t n) {
        char buf[64 * 1024];

        while (n > 0) {
                size_t chunk = (size_t) MIN(n, (uint64_t) sizeof(buf));
                ssize_t k = loop_read(from, buf, chunk);
                int r;

                if (k < 0)
                        fail_setup("Cannot read source: %s", strerror((int) -k));
                if ((size_t) k != chunk)
                        fail_setup("Short read of source");
                r = loop_write(to, buf, chunk);
                if (r < 0)
                        fail_setup("Cannot write source file: %s", strerror(-r));
                n -= chunk;
        }
}

/* ---------------------------------------------------------------------------------------------- */
/* Children */

static _Noreturn void child_fail(int err_fd, const char *fmt, ...) _printf_(2, 3);
static _Noreturn void child_fail(int err_fd, const char *fmt, ...) {
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

/* In the forked child: set up and exec. Never returns. err_fd is CLOEXEC: if exec succeeds the
 * parent sees EOF on it; anything written to it is a setup failure. syntax_w is the write end of
 * the syntax pipe, or -1. */
static _Noreturn void exec_child(const Options *o, char **argv, const uint8_t *bpf, size_t bpf_len,
                                 int err_fd, int syntax_w) {
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
        if (o->have_fsize) {
                r = set_limit(RLIMIT_FSIZE, o->rlimit_fsize);
                if (r < 0)
                        child_fail(err_fd, "Cannot set RLIMIT_FSIZE: %s", strerror(-r));
        }

        /* The syntax pipe becomes fd 3, inherited across exec. dup2() onto itself would keep
         * FD_CLOEXEC, hence the explicit case. */
        if (syntax_w >= 0) {
                if (syntax_w == 3) {
                        if (fcntl(3, F_SETFD, 0) < 0)
                                child_fail(err_fd, "Cannot set up fd 3: %s", strerror(errno));
                } else {
                        if (err_fd == 3) {
                                /* Unlikely (fd 0..2 are always open), but never clobber it. */
                                err_fd = fcntl(err_fd, F_DUPFD_CLOEXEC, CONTROL_FD_MIN);
                                if (err_fd < 0)
                                        _exit(127);
                        }
                        if (dup2(syntax_w, 3) < 0)
                                child_fail(err_fd, "Cannot set up fd 3: %s", strerror(errno));
                }
        }

        /* stdout and stderr go to us, through the capture pipes. */
        if (dup2(out_pipe[1], STDOUT_FILENO) < 0 || dup2(err_pipe_[1], STDERR_FILENO) < 0)
                child_fail(err_fd, "Cannot set up the output pipes: %s", strerror(errno));
        /* Its own process group, so that a timeout or a cancel kills the program's whole tree
         * that stayed in it (whatever escaped dies with the unit). */
        (void) setpgid(0, 0);

        /* Nothing else crosses into the program: not the control socket (CLOEXEC already, but
         * belt and braces), not the workspace fd, not whatever our own parent leaked to us. */
        r = close_all_from(syntax_w >= 0 ? 4 : 3, err_fd);
        if (r < 0)
                child_fail(err_fd, "Cannot close inherited file descriptors: %s", strerror(-r));

        /* A normal process environment for the program: systemd starts services with SIGPIPE
         * ignored (IgnoreSIGPIPE=), and an ignored disposition would survive the exec, turning
         * "yes | head" into write errors. Nothing of ours is blocked, but make sure. */
        (void) signal(SIGPIPE, SIG_DFL);
        (void) sigemptyset(&mask);
        (void) sigprocmask(SIG_SETMASK, &mask, NULL);

        /* systemd adds per-invocation variables (a random INVOCATION_ID, the PID): the same request
         * must see the same environment, and these say nothing the program needs. */
        (void) unsetenv("INVOCATION_ID");
        (void) unsetenv("SYSTEMD_EXEC_PID");
        (void) unsetenv("JOURNAL_STREAM");
        (void) unsetenv("NOTIFY_SOCKET");
        (void) unsetenv("WATCHDOG_PID");
        (void) unsetenv("WATCHDOG_USEC");
        (void) unsetenv("LISTEN_PID");
        (void) unsetenv("LISTEN_FDS");
        (void) unsetenv("LISTEN_FDNAMES");

        /* The filter is the last thing before exec that could fail; without it nothing runs. */
        if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) < 0)
                child_fail(err_fd, "Cannot load the seccomp filter: %s", strerror(errno));

        /* We inherited PR_SET_DUMPABLE=0 from the helper, which makes our /proc/self files owned by
         * root, so oom_score_adj could not be written. From here on this process holds nothing
         * the program will not have anyway (fds closed, filter loaded, and exec makes it dumpable
         * regardless), so it may be dumpable again. */
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

static uint64_t mono_usec(void) {
        struct timespec ts;

        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000ULL + (uint64_t) ts.tv_nsec / 1000ULL;
}

/* Read what is there (one read, or until EAGAIN when draining) into the capture. Returns false
 * at EOF or error. */
static bool pump(int fd, Capture *c, bool drain) {
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

        for (;;) {
                struct pollfd p[3] = {
                        { .fd = out_pipe[0], .events = POLLIN },
                        { .fd = err_pipe_[0], .events = POLLIN },
                        { .fd = signal_fd, .events = POLLIN },
                };
                int timeout = -1, status;
                pid_t w;

                w = waitpid(pid, &status, WNOHANG);
                if (w == pid) {
                        (void) pump(out_pipe[0], &cap_out, true);
                        (void) pump(err_pipe_[0], &cap_err, true);
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
                        timeout = (int) MIN((deadline_usec - now + 999) / 1000, (uint64_t) INT32_MAX);
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

/* Fork, exec argv in the child, supervise it. A failure before the exec is reported as
 * phase=setup (it is ours, not the program's). Returns the wait status. */
static int spawn_and_wait(const Options *o, char **argv, const uint8_t *bpf, size_t bpf_len,
                          int syntax_w) {
        _cleanup_close_pair_ int err_pipe[2] = { -EBADF, -EBADF };
        char msg[ERROR_MAX + 1];
        ssize_t n;
        pid_t pid;
        int status;

        if (pipe2(err_pipe, O_CLOEXEC) < 0)
                fail_setup("Cannot create pipe: %s", strerror(errno));

        pid = fork();
        if (pid < 0)
                fail_setup("Cannot fork: %s", strerror(errno));
        if (pid == 0) {
                err_pipe[0] = safe_close(err_pipe[0]);
                exec_child(o, argv, bpf, bpf_len, err_pipe[1], syntax_w);
        }

        err_pipe[1] = safe_close(err_pipe[1]);

        /* EOF: the exec happened (CLOEXEC closed the last write end). Data: the child failed
         * before exec. Only our own code writes here; the program never sees this fd. */
        n = loop_read(err_pipe[0], msg, sizeof(msg) - 1);
        status = supervise(pid);
        if (n > 0) {
                msg[n] = '\0';
                fail_setup("%s", msg);
        }
        return status;
}

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

static void read_cgroup_counters(int cg_fd, Report *r, bool *have_cpu, bool *have_peak) {
        uint64_t v;

        if (cg_fd < 0)
                return;

        /* cgroup v1 (the hybrid hierarchy: the controllers live there). */
        if (read_keyed_file(cg_fd, "memory/memory.oom_control", "oom_kill", &v))
                r->oom_kill = v;
        else if (read_keyed_file(cg_fd, "unified/memory.events", "oom_kill", &v))
                r->oom_kill = v;

        if (read_u64_file(cg_fd, "memory/memory.max_usage_in_bytes", &v) ||
            read_u64_file(cg_fd, "unified/memory.peak", &v)) {
                r->mem_peak = v;
                *have_peak = true;
        }

        /* v2 has no failcnt; memory.events "max" counts the times usage hit memory.max. */
        if (read_u64_file(cg_fd, "memory/memory.failcnt", &v) ||
            read_keyed_file(cg_fd, "unified/memory.events", "max", &v))
                r->mem_failcnt = v;

        if (read_keyed_file(cg_fd, "pids/pids.events", "max", &v) ||
            read_keyed_file(cg_fd, "unified/pids.events", "max", &v))
                r->pids_max = v;

        if (read_u64_file(cg_fd, "cpuacct/cpuacct.usage", &v)) {
                r->cpu_usec = v / 1000; /* nanoseconds */
                *have_cpu = true;
        } else if (read_keyed_file(cg_fd, "unified/cpu.stat", "usage_usec", &v)) {
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

static void gather(Report *r, int cg_fd, int workspace_fd, int tmp_fd) {
        bool have_cpu = false, have_peak = false;
        struct rusage ru;

        read_cgroup_counters(cg_fd, r, &have_cpu, &have_peak);

        /* Without a cgroup: what the kernel accounted to our waited-for children. */
        if ((!have_cpu || !have_peak) && getrusage(RUSAGE_CHILDREN, &ru) >= 0) {
                if (!have_cpu)
                        r->cpu_usec = (uint64_t) ru.ru_utime.tv_sec * 1000000 +
                                      (uint64_t) ru.ru_utime.tv_usec +
                                      (uint64_t) ru.ru_stime.tv_sec * 1000000 +
                                      (uint64_t) ru.ru_stime.tv_usec;
                if (!have_peak)
                        r->mem_peak = (uint64_t) ru.ru_maxrss * 1024;
        }

        r->disk_full = fs_is_full(workspace_fd) || fs_is_full(tmp_fd);
}

static void status_to_report(int status, Report *r) {
        if (WIFEXITED(status)) {
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

static bool status_is_success(int status) {
        return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* ---------------------------------------------------------------------------------------------- */

int main(int argc, char *argv[]) {
        _cleanup_close_ int workspace_fd = -EBADF, tmp_fd = -EBADF, cg_fd = -EBADF, source_fd = -EBADF;
        _cleanup_close_pair_ int syntax_pipe[2] = { -EBADF, -EBADF };
        _cleanup_free_ uint8_t *bpf = NULL;
        uint64_t bpf_len, code_len, start_usec;
        Options o;
        Report report = {};
        struct stat st;
        int status, fd, flags;

        /* First of all: the program will run as our uid. Non-dumpable, it cannot ptrace us, open
         * our /proc/<pid>/mem or fd/, or steal the control socket. NO_NEW_PRIVS is what lets an
         * unprivileged process load a seccomp filter, and no exec below may gain privileges. */
        if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
                fail_setup("Cannot make sandbox-exec non-dumpable: %s", strerror(errno));
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                fail_setup("Cannot set no_new_privs: %s", strerror(errno));

        /* fds 1 and 2 are the unit's output pipes. Should either be missing, park /dev/null there,
         * so no fd we open later (the workspace, a pipe) can end up as a child's stdout. */
        for (int i = STDOUT_FILENO; i <= STDERR_FILENO; i++)
                if (fcntl(i, F_GETFD) < 0 && errno == EBADF) {
                        fd = open("/dev/null", O_WRONLY | O_NOCTTY);
                        if (fd >= 0 && fd != i) {
                                (void) dup2(fd, i);
                                (void) close(fd);
                        }
                }

        parse_argv(argc, argv, &o);

        if (fstat(STDIN_FILENO, &st) < 0 || !S_ISSOCK(st.st_mode))
                fail_setup("stdin is not the control socket");
        /* The daemon may have created the pair non-blocking; our end is ours alone, and every read
         * below wants to block (the unit's RuntimeMaxSec bounds the wait). */
        flags = fcntl(STDIN_FILENO, F_GETFL);
        if (flags < 0 || ((flags & O_NONBLOCK) && fcntl(STDIN_FILENO, F_SETFL, flags & ~O_NONBLOCK) < 0))
                fail_setup("Cannot configure the control socket: %s", strerror(errno));

        /* a. The control channel: header, filter, source. */
        read_header(STDIN_FILENO, &bpf_len, &code_len);
        if (bpf_len == 0 || bpf_len % 8 != 0 || bpf_len > BPF_MAX)
                fail_setup("Invalid filter length %" PRIu64, bpf_len);
        if (code_len > o.max_source)
                fail_setup("Source too large (%" PRIu64 " bytes, at most %" PRIu64 ")", code_len,
                           o.max_source);
        if (code_len > 0 && !o.source)
                fail_setup("Source sent but no --source file name given");

        bpf = malloc((size_t) bpf_len);
        if (!bpf)
                fail_setup("Out of memory");
        read_exact_or_fail(STDIN_FILENO, bpf, (size_t) bpf_len, "seccomp filter");

        /* b. The workspace, pinned by an fd: everything below is relative to it, and the same fd
         * is what statvfs looks at later, whatever the program does to paths. */
        workspace_fd = open(o.workspace, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (workspace_fd < 0)
                fail_setup("Cannot open workspace %s: %s", o.workspace, strerror(errno));

        if (o.source) {
                /* A previous run in a persistent workspace may have left this name behind, as a
                 * file or a symlink planted to redirect our write. Remove the name itself (unlinkat
                 * never follows), then create exclusively without following: if anything appears
                 * in between, the create fails instead of writing somewhere else. */
                if (unlinkat(workspace_fd, o.source, 0) < 0 && errno != ENOENT)
                        fail_setup("Cannot remove old %s: %s", o.source, strerror(errno));
                source_fd = openat(workspace_fd, o.source,
                                   O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0644);
                if (source_fd < 0)
                        fail_setup("Cannot create %s: %s", o.source, strerror(errno));
                copy_source(STDIN_FILENO, source_fd, code_len);
                if (close(TAKE_FD(source_fd)) < 0)
                        fail_setup("Cannot write source file: %s", strerror(errno));
        }

        /* Off fd 0, CLOEXEC: no child ever holds the control socket. fd 0 becomes /dev/null, so
         * a program reading stdin sees EOF rather than our protocol. */
        fd = fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, CONTROL_FD_MIN);
        if (fd < 0)
                fail_setup("Cannot move the control socket: %s", strerror(errno));
        control_fd = fd;
        fd = open("/dev/null", O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                fail_setup("Cannot open /dev/null: %s", strerror(errno));
        if (dup2(fd, STDIN_FILENO) < 0)
                fail_setup("Cannot replace stdin: %s", strerror(errno));
        (void) close(fd);

        if (fchdir(workspace_fd) < 0)
                fail_setup("Cannot enter workspace: %s", strerror(errno));

        /* Opened before any of the program runs, so it cannot swap what they point to. Both are
         * optional: no /tmp or no cgroup directory just means fewer counters. */
        tmp_fd = open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (o.cgroup_dir)
                cg_fd = open(o.cgroup_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

        /* The capture: output pipes (the read ends non-blocking, the write ends for the children
         * only), SIGCHLD and SIGUSR1 through a signalfd, the deadline over compile and run. */
        if (capture_init(&cap_out, (size_t) o.head_bytes, (size_t) o.tail_bytes) < 0 ||
            capture_init(&cap_err, (size_t) o.head_bytes, (size_t) o.tail_bytes) < 0)
                fail_setup("Out of memory");
        if (pipe2(out_pipe, O_CLOEXEC) < 0 || pipe2(err_pipe_, O_CLOEXEC) < 0)
                fail_setup("Cannot create output pipes: %s", strerror(errno));
        if (fcntl(out_pipe[0], F_SETFL, O_NONBLOCK) < 0 || fcntl(err_pipe_[0], F_SETFL, O_NONBLOCK) < 0)
                fail_setup("Cannot set up output pipes: %s", strerror(errno));
        {
                sigset_t ss;

                sigemptyset(&ss);
                sigaddset(&ss, SIGCHLD);
                sigaddset(&ss, SIGUSR1);
                if (sigprocmask(SIG_BLOCK, &ss, NULL) < 0)
                        fail_setup("Cannot block signals: %s", strerror(errno));
                signal_fd = signalfd(-1, &ss, SFD_CLOEXEC | SFD_NONBLOCK);
                if (signal_fd < 0)
                        fail_setup("Cannot create signalfd: %s", strerror(errno));
        }
        start_usec = run_start_usec = mono_usec();
        if (o.timeout_ms > 0)
                deadline_usec = start_usec + o.timeout_ms * 1000ULL;

        /* d. The compile step. */
        if (o.compile_argv) {
                status = spawn_and_wait(&o, o.compile_argv, bpf, (size_t) bpf_len, -1);
                if (!status_is_success(status) || timed_out || cancelled) {
                        report.phase = PHASE_COMPILE;
                        status_to_report(status, &report);
                        report.timed_out = timed_out;
                        report.cancelled = cancelled;
                        report.run_usec = mono_usec() - start_usec;
                        gather(&report, cg_fd, workspace_fd, tmp_fd);
                        report_and_exit(&report);
                }
        }

        /* e. The run step. The read end is non-blocking: a grandchild may hold the write end
         * open forever, and we only ever look at what is already there once the child is gone. */
        if (o.syntax_fd && pipe2(syntax_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
                fail_setup("Cannot create pipe: %s", strerror(errno));
        /* The write end must block in the child as pipes normally do. */
        if (o.syntax_fd && fcntl(syntax_pipe[1], F_SETFL, 0) < 0)
                fail_setup("Cannot set up pipe: %s", strerror(errno));

        status = spawn_and_wait(&o, o.run_argv, bpf, (size_t) bpf_len, o.syntax_fd ? syntax_pipe[1] : -1);

        /* f. What happened. */
        report.phase = PHASE_RUN;
        status_to_report(status, &report);
        report.timed_out = timed_out;
        report.cancelled = cancelled;
        report.run_usec = mono_usec() - start_usec;
        if (o.syntax_fd) {
                char c = 0;

                syntax_pipe[1] = safe_close(syntax_pipe[1]);
                /* 'C' is only written by the bootstrap, before any user code runs; an exit status
                 * of 0 overrides it (nothing failed). */
                if (read(syntax_pipe[0], &c, 1) == 1 && c == 'C' && !status_is_success(status))
                        report.phase = PHASE_COMPILE;
        }
        gather(&report, cg_fd, workspace_fd, tmp_fd);

        /* g. */
        report_and_exit(&report);
}

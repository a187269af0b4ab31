/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* sandbox-exec: the main process of every execution unit, and the program's supervisor. It receives
 * the seccomp filter and the source over the control channel (fd 0), writes the source into its own
 * directory on the sandbox's private /run, runs the optional compile step and then the program as its
 * children, and reports how they ended (exec-protocol.h) back over the control channel.
 *
 * Privilege separation. The unit starts it with ExecStart=! (systemd allocates the dynamic user but
 * leaves the credential change to us) and a capability bounding set of CAP_SETUID, CAP_SETGID,
 * CAP_KILL, CAP_SETPCAP and CAP_SYS_ADMIN. So it runs as root — a different UID from the program's —
 * and the program can neither signal, stop nor ptrace it, nor see it in /proc (ProtectProc=invisible
 * hides other users' processes); kill(-1, SIGKILL) from the program only reaches the program's own
 * processes. Each child drops its bounding set, takes the dynamic UID/GID (the one supplementary group
 * systemd gave us, in the DynamicUser= range) and never gets a capability back (NoNewPrivileges=).
 * While nothing of the program exists yet, and only then, CAP_SYS_ADMIN is used inside the unit's own
 * mount namespace to (1) detach what would show the program the host's layout or let it share
 * inodes with other sandboxes (everything below /run, /var/lib, /dev/pts: the cgroup and helper binds,
 * systemd's propagation directory, a session's state directory binds) and (2) put a private overlay
 * over /usr, so no file of /usr is an inode shared with another sandbox (file locks on shared inodes
 * are a covert channel) and the daemon's layer hides /usr/local and sandboxd's own files. Then
 * CAP_SYS_ADMIN is dropped for good; what remains (setuid/setgid for the children, kill) is what a
 * supervisor needs. Everything the program can do is still assumed to be aimed at this process: it
 * is non-dumpable, holds the control socket only on a CLOEXEC fd no child inherits, and reads nothing
 * the program could have written except its output pipes and kernel counters.
 *
 * libc only: no libsystemd, no json-c, no libseccomp (the filter arrives compiled).
 *
 * It also supervises: the program's stdout and stderr come to it through pipes and are kept head
 * and tail (bounded) and sent with the report, it kills the program at --timeout-ms (compile and
 * run together) and on SIGUSR1 (a cancel: systemctl kill --kill-who=main -s USR1), and reports
 * which of these happened. When the run failed, a language's syntax checker decides in a fresh
 * process whether it was a compile error. The daemon may restart meanwhile: the report waits in the
 * socket.
 *
 * Usage: sandbox-exec [--source NAME] [--code-dir DIR] [--max-source BYTES] [--workspace DIR]
 *                     [--cgroup-dir DIR] [--tidy-mounts] [--usr-layer DIR] [--uid UID | --same-user]
 *                     [--rlimit-nofile N] [--rlimit-fsize BYTES] [--rlimit-core BYTES]
 *                     [--timeout-ms N] [--head-bytes N] [--tail-bytes N]
 *                     [--compile-arg ARG]... [--check-arg ARG]... -- RUN_ARGV... */

#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <grp.h>
#include <limits.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stdarg.h>
#include <poll.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/signalfd.h>
#include <time.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>

#include "capture.h"
#include "exec-protocol.h"
#include "time-util.h"
#include "util.h"

#define SOURCE_MAX_DEFAULT (1024U * 1024U)
/* Not a limit on what the daemon may configure, only a sanity bound on the option. */
#define SOURCE_MAX_CEILING (UINT64_C(1) << 30)
/* The control socket moves at least this high, away from the fds 0..3 children are given. */
#define CONTROL_FD_MIN 10
/* How much of a setup failure's message is reported (exec-protocol.h keeps up to
 * HELPER_REPORT_ERROR_MAX). */
#define ERROR_MAX 200
#define CODE_DIR_DEFAULT "/run/sandbox"
/* systemd's range for DynamicUser= UIDs and GIDs (docs/UIDS-GIDS.md: 61184…65519). */
#define DYNAMIC_UID_MIN 61184U
#define DYNAMIC_UID_MAX 65519U
/* How long the syntax checker may take after a failed run (it never outlives the unit's backstop,
 * 2 s past the deadline). */
#define CHECK_TIMEOUT_USEC (5 * USEC_PER_SEC)
#define CHECK_DEADLINE_SLACK_USEC USEC_PER_SEC
/* cgroup counters: the bind points below --cgroup-dir, one per controller (the daemon's names). */
static const char *const cgroup_names[] = { "memory", "pids", "cpuacct", "unified" };

typedef struct Options {
        const char *source;
        const char *code_dir;
        uint64_t max_source;
        const char *workspace;
        const char *cgroup_dir;
        bool tidy_mounts;
        const char *usr_layer;
        bool have_uid, same_user;
        uid_t uid;
        bool have_nofile, have_fsize;
        uint64_t rlimit_nofile, rlimit_fsize, rlimit_core;
        char **compile_argv;      /* NULL-terminated, or NULL */
        size_t n_compile;
        char **check_argv;        /* NULL-terminated, or NULL */
        size_t n_check;
        char **inputs;            /* --input: paths below <workspace>/input written by the daemon */
        size_t n_inputs;
        char **run_argv;
        uint64_t timeout_ms;      /* 0: none (the unit's RuntimeMaxSec= still applies) */
        uint64_t head_bytes, tail_bytes;
} Options;

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
/* Who the program runs as. privileged: we started as root and put every child on prog_uid/prog_gid;
 * otherwise (--same-user, tests without root) the children run as we do. */
static bool privileged;
static uid_t prog_uid;
static gid_t prog_gid;
/* One directory fd per controller of the unit's own cgroup, opened before the binds are detached. */
static int cg_fds[ELEMENTSOF(cgroup_names)] = { -EBADF, -EBADF, -EBADF, -EBADF };

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

/* The report (exec-protocol.h): the text, whose last lines announce the sizes of the captured
 * output, then that output. */
static void send_report(HelperReport *r) {
        char text[HELPER_REPORT_MAX + 1];
        int n;

        r->have_first_output = first_output_usec > 0;
        r->first_output_usec = first_output_usec;
        r->out.bytes = cap_out.total_bytes;
        r->out.lines = cap_out.total_lines;
        r->out.head = cap_out.head_len;
        r->out.tail = cap_out.tail_len;
        r->err.bytes = cap_err.total_bytes;
        r->err.lines = cap_err.total_lines;
        r->err.head = cap_err.head_len;
        r->err.tail = cap_err.tail_len;
        /* Nothing useful can be done if this fails: the daemon then decides without a report. */
        n = helper_report_format(r, text, sizeof(text));
        if (n > 0 && send_all(control_fd, text, (size_t) n) >= 0) {
                send_stream(&cap_out);
                send_stream(&cap_err);
        }
        (void) shutdown(control_fd, SHUT_WR);
}

_printf_(1, 2) static _Noreturn void fail_setup(const char *fmt, ...) {
        HelperReport r = {
                .phase = PHASE_SETUP,
                .exit_code = -1,
        };
        va_list ap;

        /* Made one printable line by helper_report_format(): error= is the rest of its line. */
        va_start(ap, fmt);
        (void) vsnprintf(r.error, MIN(sizeof(r.error), (size_t) ERROR_MAX + 1), fmt, ap);
        va_end(ap);

        send_report(&r);
        _exit(EXIT_FAILURE);
}

static _Noreturn void report_and_exit(HelperReport *r) {
        send_report(r);

        /* Mirror the program's end in our own exit status, as a shell would. */
        if (r->signal > 0)
                _exit(128 + r->signal);
        _exit(r->exit_code & 0xff);
}

/* ---------------------------------------------------------------------------------------------- */
/* Command line */

enum {
        ARG_SOURCE = 0x100,
        ARG_CODE_DIR,
        ARG_MAX_SOURCE,
        ARG_WORKSPACE,
        ARG_CGROUP_DIR,
        ARG_TIDY_MOUNTS,
        ARG_USR_LAYER,
        ARG_UID,
        ARG_SAME_USER,
        ARG_RLIMIT_NOFILE,
        ARG_RLIMIT_FSIZE,
        ARG_RLIMIT_CORE,
        ARG_COMPILE_ARG,
        ARG_CHECK_ARG,
        ARG_INPUT,
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
                { "code-dir",      required_argument, NULL, ARG_CODE_DIR      },
                { "max-source",    required_argument, NULL, ARG_MAX_SOURCE    },
                { "workspace",     required_argument, NULL, ARG_WORKSPACE     },
                { "cgroup-dir",    required_argument, NULL, ARG_CGROUP_DIR    },
                { "tidy-mounts",   no_argument,       NULL, ARG_TIDY_MOUNTS   },
                { "usr-layer",     required_argument, NULL, ARG_USR_LAYER     },
                { "uid",           required_argument, NULL, ARG_UID           },
                { "same-user",     no_argument,       NULL, ARG_SAME_USER     },
                { "rlimit-nofile", required_argument, NULL, ARG_RLIMIT_NOFILE },
                { "rlimit-fsize",  required_argument, NULL, ARG_RLIMIT_FSIZE  },
                { "rlimit-core",   required_argument, NULL, ARG_RLIMIT_CORE   },
                { "compile-arg",   required_argument, NULL, ARG_COMPILE_ARG   },
                { "check-arg",     required_argument, NULL, ARG_CHECK_ARG     },
                { "input",         required_argument, NULL, ARG_INPUT         },
                { "timeout-ms",    required_argument, NULL, ARG_TIMEOUT_MS    },
                { "head-bytes",    required_argument, NULL, ARG_HEAD_BYTES    },
                { "tail-bytes",    required_argument, NULL, ARG_TAIL_BYTES    },
                {}
        };
        int c;

        *o = (Options) {
                .code_dir = CODE_DIR_DEFAULT,
                .max_source = SOURCE_MAX_DEFAULT,
                .workspace = "/workspace",
                .head_bytes = 64 * 1024,
                .tail_bytes = 64 * 1024,
        };

        /* argc bounds the number of compile args. */
        o->compile_argv = calloc((size_t) argc + 1, sizeof(char *));
        o->check_argv = calloc((size_t) argc + 1, sizeof(char *));
        o->inputs = calloc((size_t) argc + 1, sizeof(char *));
        if (!o->compile_argv || !o->check_argv || !o->inputs)
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
                case ARG_CODE_DIR:
                        if (optarg[0] != '/')
                                fail_setup("--code-dir must be an absolute path");
                        o->code_dir = optarg;
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
                case ARG_TIDY_MOUNTS:
                        o->tidy_mounts = true;
                        break;
                case ARG_USR_LAYER:
                        if (!startswith(optarg, "/run/") || strstr(optarg, ".."))
                                fail_setup("--usr-layer must be a directory below /run");
                        o->usr_layer = optarg;
                        break;
                case ARG_UID: {
                        uint64_t v = parse_u64_or_fail("--uid", optarg);

                        if (v == 0 || v >= UINT32_MAX)
                                fail_setup("--uid must not be root");
                        o->uid = (uid_t) v;
                        o->have_uid = true;
                        break;
                }
                case ARG_SAME_USER:
                        o->same_user = true;
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
                case ARG_CHECK_ARG:
                        o->check_argv[o->n_check++] = optarg;
                        break;
                case ARG_INPUT:
                        if (optarg[0] == '/' || strstr(optarg, "..") || strlen(optarg) > PATH_MAX - 64)
                                fail_setup("Invalid --input path");
                        o->inputs[o->n_inputs++] = optarg;
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
        if (o->n_check == 0)
                o->check_argv = mfree(o->check_argv);
        else if (o->check_argv[0][0] != '/')
                fail_setup("Check command must be an absolute path");
        if (o->have_uid && o->same_user)
                fail_setup("--uid and --same-user exclude each other");

        if (optind >= argc)
                fail_setup("No program to run");
        o->run_argv = argv + optind;
        /* No PATH search: what runs is exactly what the daemon named. */
        if (o->run_argv[0][0] != '/')
                fail_setup("Program must be an absolute path");
}

/* ---------------------------------------------------------------------------------------------- */
/* Control channel */

/* "SANDBOXD-EXEC 1 <bpf_len> <code_len>\n", read one byte at a time so not a byte of what follows
 * is consumed. */
static void read_header(int fd, uint64_t *ret_bpf_len, uint64_t *ret_code_len) {
        char line[EXEC_HEADER_MAX + 1];
        size_t n = 0;

        for (;;) {
                ssize_t k;

                if (n >= EXEC_HEADER_MAX)
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

        if (exec_header_parse(line, n, ret_bpf_len, ret_code_len) < 0)
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

/* Become the program's user: no capability bounding set, the dynamic GID as the only group, the
 * dynamic UID for real, effective and saved. From root without SECBIT_KEEP_CAPS, setresuid() clears
 * the permitted, effective and ambient sets; NoNewPrivileges= keeps them empty across exec. Checked,
 * not assumed. Returns 0 or a negative errno; in the child, between fork and exec. */
static int become_program_user(void) {
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

/* What a child is for. */
typedef enum ChildKind {
        CHILD_PROGRAM,   /* compile or run step: output captured, workspace dirs made */
        CHILD_CHECK,     /* the syntax checker: output discarded */
} ChildKind;

/* In the forked child: set up and exec. Never returns. err_fd is CLOEXEC: if exec succeeds the
 * parent sees EOF on it; anything written to it is a setup failure. */
static _Noreturn void exec_child(const Options *o, char **argv, const uint8_t *bpf, size_t bpf_len,
                                 int err_fd, ChildKind kind) {
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

        r = become_program_user();
        if (r < 0)
                child_fail(err_fd, "Cannot switch to the program's user %u: %s", (unsigned) prog_uid, strerror(-r));

        /* The program's working directory, entered as the program: a session's workspace is its own
         * (0700), which root without CAP_DAC_READ_SEARCH could not enter anyway. */
        if (chdir(o->workspace) < 0)
                child_fail(err_fd, "Cannot enter workspace %s: %s", o->workspace, strerror(errno));
        /* input/ and output/ exist at the start of every run, made as the program so they are its
         * own. Whatever an earlier turn of a session left at those names stays as it is. */
        if (kind == CHILD_PROGRAM) {
                (void) mkdir("input", 0755);
                (void) mkdir("output", 0755);
        }

        if (kind == CHILD_PROGRAM) {
                /* stdout and stderr go to us, through the capture pipes. */
                if (dup2(out_pipe[1], STDOUT_FILENO) < 0 || dup2(err_pipe_[1], STDERR_FILENO) < 0)
                        child_fail(err_fd, "Cannot set up the output pipes: %s", strerror(errno));
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

static uint64_t mono_usec(void) {
        struct timespec ts;

        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        return timespec_to_usec(&ts);
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
                        timeout = (int) MIN(usec_to_msec_up(deadline_usec - now), (uint64_t) INT32_MAX);
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

/* Fork, exec argv in the child, supervise it. A failure before the exec is reported as
 * phase=setup (it is ours, not the program's). Returns the wait status (-1: the checker was killed
 * at its deadline). */
static int spawn_and_wait(const Options *o, char **argv, const uint8_t *bpf, size_t bpf_len, ChildKind kind,
                          uint64_t check_deadline) {
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
                exec_child(o, argv, bpf, bpf_len, err_pipe[1], kind);
        }

        err_pipe[1] = safe_close(err_pipe[1]);

        /* EOF: the exec happened (CLOEXEC closed the last write end). Data: the child failed
         * before exec. Only our own code writes here; the program never sees this fd. */
        n = loop_read(err_pipe[0], msg, sizeof(msg) - 1);
        status = kind == CHILD_PROGRAM ? supervise(pid) : wait_quietly(pid, check_deadline);
        if (n > 0) {
                msg[n] = '\0';
                fail_setup("%s", msg);
        }
        return status;
}

/* Is anything but us left in the unit's cgroup? Unknown (no cgroup fd) counts as "no". */
static bool cgroup_has_others(void) {
        static const char *const procs[] = { "pids/cgroup.procs", "unified/cgroup.procs", "memory/cgroup.procs" };
        char buf[4096];
        pid_t self = getpid();

        for (size_t i = 0; i < ELEMENTSOF(procs); i++) {
                const char *slash = strchr(procs[i], '/');
                int dfd = -EBADF;
                _cleanup_close_ int fd = -EBADF;
                ssize_t k;

                for (size_t c = 0; c < ELEMENTSOF(cgroup_names); c++)
                        if (strncmp(cgroup_names[c], procs[i], (size_t) (slash - procs[i])) == 0 &&
                            cgroup_names[c][slash - procs[i]] == '\0')
                                dfd = cg_fds[c];
                if (dfd < 0)
                        continue;
                fd = openat(dfd, slash + 1, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
                if (fd < 0)
                        continue;
                k = loop_read(fd, buf, sizeof(buf) - 1);
                if (k < 0)
                        continue;
                if ((size_t) k == sizeof(buf) - 1)
                        return true;    /* hundreds of pids: certainly not only us */
                buf[k] = '\0';
                for (char *p = buf, *end; *p; p = end) {
                        long v = strtol(p, &end, 10);

                        if (end == p)
                                break;
                        if (v != (long) self)
                                return true;
                        while (*end == '\n')
                                end++;
                }
                return false;
        }
        return false;
}

/* Kill every process of the program's user, wherever it went (setsid, double fork): a child of ours
 * that becomes that user sends kill(-1, SIGKILL), which reaches exactly the processes the program
 * could signal itself — never us (root), never another sandbox (another dynamic UID). Repeated while
 * the cgroup still shows others (a process forking in a loop), at most a few times. */
static void sweep_program_processes(void) {
        if (!privileged)
                return;
        for (unsigned attempt = 0; attempt < 8; attempt++) {
                int status;
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

static void gather(HelperReport *r, int workspace_fd, int tmp_fd) {
        bool have_cpu = false, have_peak = false;
        struct rusage ru;

        read_cgroup_counters(r, &have_cpu, &have_peak);

        /* Without a cgroup: what the kernel accounted to our waited-for children. */
        if ((!have_cpu || !have_peak) && getrusage(RUSAGE_CHILDREN, &ru) >= 0) {
                if (!have_cpu)
                        r->cpu_usec = timeval_to_usec(&ru.ru_utime) + timeval_to_usec(&ru.ru_stime);
                if (!have_peak)
                        r->memory_peak = (uint64_t) ru.ru_maxrss * 1024;
        }

        r->disk_full = fs_is_full(workspace_fd) || fs_is_full(tmp_fd);
}

static void status_to_report(int status, HelperReport *r) {
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

/* ---------------------------------------------------------------------------------------------- */
/* Input files */

/* Open path below dfd one component at a time, never following a symlink (every directory with
 * O_NOFOLLOW|O_DIRECTORY, the last component with flags|O_NOFOLLOW). Not openat2(): systemd's
 * RestrictSUIDSGID= filter answers it with ENOSYS (it cannot inspect struct open_how). */
static int open_beneath(int dfd, const char *path, int flags) {
        _cleanup_free_ char *p = strdup(path);
        _cleanup_close_ int cur = -EBADF;
        char *c, *slash;
        int fd;

        if (!p)
                return -ENOMEM;
        cur = fcntl(dfd, F_DUPFD_CLOEXEC, 3);
        if (cur < 0)
                return -errno;
        for (c = p; (slash = strchr(c, '/')); c = slash + 1) {
                *slash = '\0';
                if (isempty(c) || streq(c, ".") || streq(c, ".."))
                        return -EINVAL;
                fd = openat(cur, c, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0)
                        return -errno;
                (void) close(cur);
                cur = fd;
        }
        if (isempty(c) || streq(c, ".") || streq(c, ".."))
                return -EINVAL;
        fd = openat(cur, c, flags | O_NOFOLLOW | O_CLOEXEC);
        return fd < 0 ? -errno : fd;
}

/* Copy input/<rel> over itself: the daemon wrote it, so its tmpfs pages are charged to
 * sandboxd.service; a copy written here, in the unit's cgroup, is the execution's memory, and the
 * daemon's pages go with the old inode. Only if it belongs to owner: root's files (a fresh workspace:
 * read-only to the program) are copied by us, a session's (its owner's) by a child that is the
 * program's user. Best effort: whatever fails leaves the original in place (it still is the right
 * file). */
static void recharge_input(int ws_fd, const char *rel, uid_t owner) {
        _cleanup_free_ char *path = NULL, *tmp = NULL;
        _cleanup_close_ int in = -EBADF, dir = -EBADF, out = -EBADF;
        const char *base;
        char buf[64 * 1024];
        struct stat st;

        if (asprintf(&path, "input/%s", rel) < 0)
                return;
        base = strrchr(path, '/') + 1;
        in = open_beneath(ws_fd, path, O_RDONLY | O_NONBLOCK | O_NOCTTY);
        if (in < 0 || fstat(in, &st) < 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1 || st.st_uid != owner)
                return;
        path[base - path - 1] = '\0';
        dir = open_beneath(ws_fd, path, O_RDONLY | O_DIRECTORY);
        if (dir < 0 || asprintf(&tmp, ".%s.sandbox-exec", base) < 0)
                return;
        (void) unlinkat(dir, tmp, 0);
        out = openat(dir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, st.st_mode & 0777);
        if (out < 0)
                return;
        for (;;) {
                ssize_t k = read(in, buf, sizeof(buf));

                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0 || (k > 0 && loop_write(out, buf, (size_t) k) < 0)) {
                        (void) unlinkat(dir, tmp, 0);
                        return;
                }
                if (k == 0)
                        break;
        }
        if (close(TAKE_FD(out)) < 0 || renameat(dir, tmp, dir, base) < 0)
                (void) unlinkat(dir, tmp, 0);
}

/* Before any of the program runs: root's inputs here, the rest in a child that is the program's
 * user. */
static void recharge_inputs(const Options *o) {
        int status;
        pid_t pid;

        if (o->n_inputs == 0)
                return;
        if (privileged) {
                _cleanup_close_ int ws = open(o->workspace, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

                for (size_t i = 0; ws >= 0 && i < o->n_inputs; i++)
                        recharge_input(ws, o->inputs[i], 0);
        }
        pid = fork();
        if (pid < 0)
                return;
        if (pid == 0) {
                _cleanup_close_ int ws = -EBADF;

                if (become_program_user() < 0)
                        _exit(EXIT_FAILURE);
                ws = open(o->workspace, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (ws < 0)
                        _exit(EXIT_FAILURE);
                for (size_t i = 0; i < o->n_inputs; i++)
                        recharge_input(ws, o->inputs[i], prog_uid);
                _exit(EXIT_SUCCESS);
        }
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
}

/* ---------------------------------------------------------------------------------------------- */
/* Privileged setup: only while nothing of the program exists */

/* With ExecStart=! and DynamicUser=, systemd allocates the dynamic user and sets it as our one
 * supplementary group (initgroups() of the user, v252 exec_child() → get_supplementary_groups()),
 * but leaves UID and GID to us. DynamicUser= always allocates the same number as UID and GID. */
static int dynamic_user_from_groups(uid_t *ret_uid, gid_t *ret_gid) {
        gid_t l[64];
        gid_t found = 0;
        int n = getgroups(ELEMENTSOF(l), l);

        if (n < 0)
                return -errno;
        for (int i = 0; i < n; i++)
                if (l[i] >= DYNAMIC_UID_MIN && l[i] <= DYNAMIC_UID_MAX) {
                        if (found != 0 && found != l[i])
                                return -ENOTUNIQ;
                        found = l[i];
                }
        if (found == 0)
                return -ENOENT;
        *ret_uid = (uid_t) found;
        *ret_gid = found;
        return 0;
}

/* Undo \ooo escapes of a mountinfo field, in place. */
static void mountinfo_unescape(char *s) {
        char *o = s;

        for (char *p = s; *p;) {
                if (p[0] == '\\' && p[1] >= '0' && p[1] <= '3' && p[2] >= '0' && p[2] <= '7' && p[3] >= '0' &&
                    p[3] <= '7') {
                        *o++ = (char) ((p[1] - '0') * 64 + (p[2] - '0') * 8 + (p[3] - '0'));
                        p += 4;
                } else
                        *o++ = *p++;
        }
        *o = '\0';
}

/* The mounts that show the program how the host is laid out, or give it inodes other sandboxes
 * share: whatever systemd or the daemon put below /run (the cgroup and helper binds, the usr layer,
 * systemd's propagation directory /run/systemd/incoming named after the unit), below /var/lib (a
 * session's state directory binds and their tmpfs), the host's devpts, and mounts below /usr (the
 * host's own submounts; the overlay that replaces /usr is mounted after). Nothing systemd mounts to
 * protect (/proc/sys read-only, inaccessible nodes) is in these places. */
static bool mount_point_detachable(const char *path, const char *keep) {
        if (keep && streq(path, keep))
                return false;
        return startswith(path, "/run/") || streq(path, "/var/lib") || startswith(path, "/var/lib/") ||
                streq(path, "/dev/pts") || startswith(path, "/dev/pts/") || startswith(path, "/usr/");
}

static size_t path_depth(const char *p) {
        size_t n = 0;

        for (; *p; p++)
                n += *p == '/';
        return n;
}

static int compare_depth_desc(const void *a, const void *b) {
        size_t da = path_depth(*(char *const *) a), db = path_depth(*(char *const *) b);

        return da < db ? 1 : da > db ? -1 : 0;
}

/* Read all of /proc/self/mountinfo (at most 4 MiB). */
static char *read_mountinfo(void) {
        _cleanup_close_ int fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC | O_NOCTTY);
        size_t n = 0, allocated = 0;
        char *buf = NULL;

        if (fd < 0)
                return NULL;
        for (;;) {
                ssize_t k;

                if (allocated - n < 4096) {
                        char *nb;

                        if (allocated >= 4 * 1024 * 1024) {
                                free(buf);
                                errno = E2BIG;
                                return NULL;
                        }
                        nb = realloc(buf, allocated ? allocated * 2 : 64 * 1024);
                        if (!nb) {
                                free(buf);
                                return NULL;
                        }
                        buf = nb;
                        allocated = allocated ? allocated * 2 : 64 * 1024;
                }
                k = read(fd, buf + n, allocated - n - 1);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0) {
                        free(buf);
                        return NULL;
                }
                if (k == 0)
                        break;
                n += (size_t) k;
        }
        buf[n] = '\0';
        return buf;
}

/* Detach every detachable mount (see above) except keep, deepest first. */
static void tidy_mounts(const char *keep) {
        _cleanup_free_ char *info = read_mountinfo();
        _cleanup_free_ char **paths = NULL;
        size_t n = 0, allocated = 0;

        if (!info)
                fail_setup("Cannot read /proc/self/mountinfo: %s", strerror(errno));

        for (char *line = info, *next; line && *line; line = next) {
                char *f, *mp;
                unsigned field = 0;

                next = strchr(line, '\n');
                if (next)
                        *next++ = '\0';
                /* ID PARENT MAJ:MIN ROOT MOUNTPOINT ... */
                mp = NULL;
                for (f = strtok(line, " "); f; f = strtok(NULL, " "))
                        if (++field == 5) {
                                mp = f;
                                break;
                        }
                if (!mp)
                        continue;
                mountinfo_unescape(mp);
                if (!mount_point_detachable(mp, keep))
                        continue;
                if (n >= allocated) {
                        char **np = realloc(paths, (allocated ? allocated * 2 : 32) * sizeof(char *));

                        if (!np)
                                fail_setup("Out of memory");
                        paths = np;
                        allocated = allocated ? allocated * 2 : 32;
                }
                paths[n++] = mp;
        }

        if (n > 0)
                qsort(paths, n, sizeof(char *), compare_depth_desc);
        for (size_t i = 0; i < n; i++)
                /* EINVAL: no longer a mount point (went with a mount below which it was, or listed
                 * twice); ENOENT: its place went with its parent. */
                if (umount2(paths[i], MNT_DETACH | UMOUNT_NOFOLLOW) < 0 && errno != EINVAL && errno != ENOENT)
                        fail_setup("Cannot detach %s: %s", paths[i], strerror(errno));
}

/* Empty our private /run of the mount points the detached mounts left (directories, and the empty
 * file the helper was bound on). Nothing else has been put there yet, and nothing of the program
 * exists: no name here can be anybody else's. */
static void clear_dir(int dfd, unsigned depth) {
        _cleanup_close_ int fd = -EBADF;
        DIR *d;
        struct dirent *de;

        if (depth > 8)
                return;
        fd = fcntl(dfd, F_DUPFD_CLOEXEC, 3);
        if (fd < 0)
                return;
        d = fdopendir(fd);
        if (!d)
                return;
        fd = -EBADF;    /* the DIR owns it */
        while ((de = readdir(d))) {
                _cleanup_close_ int sub = -EBADF;

                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                if (unlinkat(dirfd(d), de->d_name, 0) >= 0)
                        continue;
                sub = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (sub < 0)
                        continue;
                clear_dir(sub, depth + 1);
                (void) unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR);
        }
        closedir(d);
}

static void mount_usr_overlay(const char *layer) {
        char opts[PATH_MAX + 32];

        /* Read-only overlay without an upper layer: the daemon's layer (whiteouts for /usr/local and
         * sandboxd's own files, the runtime's /etc files) over the host's /usr. Its inodes are this
         * sandbox's own, so a lock on one of them is seen by nobody else. */
        if (strpbrk(layer, ":,\\") || (size_t) snprintf(opts, sizeof(opts), "lowerdir=%s:/usr", layer) >= sizeof(opts))
                fail_setup("Invalid --usr-layer");
        if (mount("overlay", "/usr", "overlay", MS_RDONLY | MS_NOSUID | MS_NODEV, opts) < 0)
                fail_setup("Cannot mount the /usr overlay: %s", strerror(errno));
        if (umount2(layer, MNT_DETACH | UMOUNT_NOFOLLOW) < 0 && errno != EINVAL)
                fail_setup("Cannot detach %s: %s", layer, strerror(errno));
}

/* What the supervisor keeps once setup is done: CAP_SETUID/SETGID to start children as the program,
 * CAP_SETPCAP to empty their bounding set, CAP_KILL to end them. CAP_SYS_ADMIN goes. */
static void drop_setup_capabilities(void) {
        struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
        struct __user_cap_data_struct d[2] = {};
        uint32_t keep = (1U << CAP_SETUID) | (1U << CAP_SETGID) | (1U << CAP_SETPCAP) | (1U << CAP_KILL);

        d[0].permitted = d[0].effective = keep;
        if (syscall(SYS_capset, &h, d) < 0)
                fail_setup("Cannot drop capabilities: %s", strerror(errno));
}

static void write_file_at(int dfd, const char *name, const char *data, size_t n) {
        _cleanup_close_ int fd = -EBADF;

        (void) unlinkat(dfd, name, 0);
        fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0644);
        if (fd < 0)
                fail_setup("Cannot create %s: %s", name, strerror(errno));
        if (loop_write(fd, data, n) < 0 || close(TAKE_FD(fd)) < 0)
                fail_setup("Cannot write %s: %s", name, strerror(errno));
}

/* /etc/passwd and /etc/group of the sandbox are symlinks to these: the program's own user has a
 * name (whoami, getpass, ~ expansion work), and nothing of the host's accounts is shown. */
static void write_accounts(int dfd) {
        char buf[512];
        int n;

        n = snprintf(buf, sizeof(buf),
                     "root:x:0:0:root:/root:/usr/sbin/nologin\n"
                     "sandbox:x:%u:%u:sandbox:/workspace:/bin/sh\n"
                     "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
                     (unsigned) prog_uid, (unsigned) prog_gid);
        write_file_at(dfd, "passwd", buf, (size_t) n);
        n = snprintf(buf, sizeof(buf), "root:x:0:\nsandbox:x:%u:\nnogroup:x:65534:\n", (unsigned) prog_gid);
        write_file_at(dfd, "group", buf, (size_t) n);
}

/* ---------------------------------------------------------------------------------------------- */

int main(int argc, char *argv[]) {
        _cleanup_close_ int workspace_fd = -EBADF, tmp_fd = -EBADF, code_fd = -EBADF, source_fd = -EBADF;
        _cleanup_free_ uint8_t *bpf = NULL;
        uint64_t bpf_len, code_len, start_usec;
        Options o;
        HelperReport report = {};
        struct stat st;
        int status, fd, flags, r;

        /* First of all: non-dumpable, nothing can ptrace us, open our /proc/<pid>/mem or fd/, or
         * steal the control socket. NO_NEW_PRIVS is what lets the children load a seccomp filter
         * without CAP_SYS_ADMIN, and no exec below may gain privileges. */
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
        if (!exec_bpf_len_is_valid(bpf_len))
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

        /* b. Who the program runs as. */
        if (o.same_user) {
                prog_uid = getuid();
                prog_gid = getgid();
        } else if (geteuid() != 0)
                fail_setup("sandbox-exec must start as root (ExecStart=!) to run the program as another user");
        else {
                privileged = true;
                if (o.have_uid) {
                        prog_uid = o.uid;
                        prog_gid = (gid_t) o.uid;
                } else {
                        r = dynamic_user_from_groups(&prog_uid, &prog_gid);
                        if (r < 0)
                                fail_setup("Cannot tell the execution's dynamic user (expected one supplementary "
                                           "group in %u..%u from DynamicUser= and ExecStart=!): %s",
                                           DYNAMIC_UID_MIN, DYNAMIC_UID_MAX, strerror(-r));
                }
        }

        /* c. The unit's own cgroup, one fd per controller, before its binds are detached. Optional:
         * without it there are fewer counters. */
        if (o.cgroup_dir) {
                _cleanup_close_ int cg = open(o.cgroup_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

                for (size_t c = 0; cg >= 0 && c < ELEMENTSOF(cgroup_names); c++)
                        cg_fds[c] = openat(cg, cgroup_names[c], O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        }

        /* d. The sandbox's mount table, while only we exist: nothing of the host's layout, no inode
         * shared with another sandbox. Then CAP_SYS_ADMIN goes. */
        if (privileged) {
                if (o.tidy_mounts) {
                        tidy_mounts(o.usr_layer);
                        if (o.usr_layer)
                                mount_usr_overlay(o.usr_layer);
                        fd = open("/run", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (fd >= 0) {
                                clear_dir(fd, 0);
                                (void) close(fd);
                        }
                } else if (o.usr_layer)
                        mount_usr_overlay(o.usr_layer);
                drop_setup_capabilities();
        }

        /* e. The source, in a directory of our own that the program can read and not change (root's,
         * 0755; a session's workspace is never where it lives, so nothing a turn leaves behind can
         * stand in its way), and the accounts the sandbox's /etc/passwd and /etc/group point to. */
        if (mkdir(o.code_dir, 0755) < 0 && errno != EEXIST)
                fail_setup("Cannot create %s: %s", o.code_dir, strerror(errno));
        code_fd = open(o.code_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (code_fd < 0)
                fail_setup("Cannot open %s: %s", o.code_dir, strerror(errno));
        if (o.source) {
                /* Remove the name itself (unlinkat never follows), then create exclusively without
                 * following: if anything appears in between, the create fails instead of writing
                 * somewhere else. */
                if (unlinkat(code_fd, o.source, 0) < 0 && errno != ENOENT)
                        fail_setup("Cannot remove old %s: %s", o.source, strerror(errno));
                source_fd = openat(code_fd, o.source,
                                   O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0644);
                if (source_fd < 0)
                        fail_setup("Cannot create %s: %s", o.source, strerror(errno));
                copy_source(STDIN_FILENO, source_fd, code_len);
                if (close(TAKE_FD(source_fd)) < 0)
                        fail_setup("Cannot write source file: %s", strerror(errno));
        }
        write_accounts(code_fd);

        /* The workspace and /tmp, pinned by O_PATH fds for the "disk full" check at the end, whatever
         * the program does to paths (both are mount points it cannot replace). O_PATH: root without
         * CAP_DAC_READ_SEARCH cannot open a session's 0700 workspace for reading, and needs not. */
        workspace_fd = open(o.workspace, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (workspace_fd < 0)
                fail_setup("Cannot open workspace %s: %s", o.workspace, strerror(errno));
        tmp_fd = open("/tmp", O_PATH | O_DIRECTORY | O_CLOEXEC);

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
                deadline_usec = start_usec + o.timeout_ms * USEC_PER_MSEC;

        /* The input files become the execution's memory (see recharge_input()). */
        recharge_inputs(&o);

        /* f. The compile step. */
        if (o.compile_argv) {
                status = spawn_and_wait(&o, o.compile_argv, bpf, (size_t) bpf_len, CHILD_PROGRAM, 0);
                if (!status_is_success(status) || timed_out || cancelled) {
                        sweep_program_processes();
                        report.phase = PHASE_COMPILE;
                        status_to_report(status, &report);
                        report.timed_out = timed_out;
                        report.cancelled = cancelled;
                        report.run_usec = mono_usec() - start_usec;
                        gather(&report, workspace_fd, tmp_fd);
                        report_and_exit(&report);
                }
        }

        /* g. The run step, then whatever of the program is still alive dies (kill -9 -1 as its
         * user), and what it wrote meanwhile is drained. */
        status = spawn_and_wait(&o, o.run_argv, bpf, (size_t) bpf_len, CHILD_PROGRAM, 0);
        report.phase = PHASE_RUN;
        status_to_report(status, &report);
        report.timed_out = timed_out;
        report.cancelled = cancelled;
        report.run_usec = mono_usec() - start_usec;
        sweep_program_processes();
        (void) pump(out_pipe[0], &cap_out, true);
        (void) pump(err_pipe_[0], &cap_err, true);

        /* h. A failed run: was it a syntax error? Asked of the language's checker in a fresh process,
         * once nothing of the program is left that could meddle with it (a syntax error means the
         * program never ran, so there is nothing to outlive it). Its exit status 1 alone says so. */
        if (o.check_argv && WIFEXITED(status) && WEXITSTATUS(status) != 0 && !timed_out && !cancelled &&
            !cgroup_has_others()) {
                uint64_t now = mono_usec(), deadline = now + CHECK_TIMEOUT_USEC;
                int cs;

                if (deadline_usec > 0)
                        deadline = MIN(deadline, MAX(deadline_usec, now) + CHECK_DEADLINE_SLACK_USEC);
                cs = spawn_and_wait(&o, o.check_argv, bpf, (size_t) bpf_len, CHILD_CHECK, deadline);
                if (cs >= 0 && WIFEXITED(cs) && WEXITSTATUS(cs) == 1)
                        report.phase = PHASE_COMPILE;
                sweep_program_processes();
        }
        gather(&report, workspace_fd, tmp_fd);

        /* i. */
        report_and_exit(&report);
}

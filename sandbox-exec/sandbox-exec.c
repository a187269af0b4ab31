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
 *                     [--cgroup-dir DIR] [--tidy-mounts] [--live-output] [--pkgs-dir] [--usr-layer DIR [--env-layer DIR]]
 *                     [--uid UID | --same-user]
 *                     [--rlimit-nofile N] [--rlimit-fsize BYTES] [--rlimit-core BYTES]
 *                     [--timeout-ms N] [--head-bytes N] [--tail-bytes N] [--warm [--warm-preload]]
 *                     [--compile-timeout-ms N] [--compile-memory-mb N]
 *                     [--compile-arg ARG]... [--check-arg ARG]... -- RUN_ARGV... */

#include "sandbox-exec.h"

const char *const cgroup_names[N_CGROUP_NAMES] = { "memory", "pids", "cpuacct", "unified" };

/* Where the report goes: fd 0 until the socket has been moved away from it. */
int control_fd = STDIN_FILENO;
int stdin_fd = -EBADF;

/* The program's stdout and stderr come to us through these pipes and are kept here, head and
 * tail, bounded: the report carries them, so the output survives a restart of the daemon (the
 * control socket waits in systemd's fd store) and nothing of it ever touches the journal. */
Capture cap_out, cap_err;
int out_pipe[2] = { -EBADF, -EBADF }, err_pipe_[2] = { -EBADF, -EBADF };
/* SIGCHLD, and SIGUSR1 = "cancel" from the daemon (KillUnit whom=main). */
int signal_fd = -EBADF;
uint64_t deadline_usec;    /* CLOCK_MONOTONIC; 0: none */
uint64_t run_start_usec, first_output_usec;  /* first_output_usec: 0 until there is output */
bool timed_out, cancelled;
/* Who the program runs as. privileged: we started as root and put every child on prog_uid/prog_gid;
 * otherwise (--same-user, tests without root) the children run as we do. */
bool privileged;
bool strong_tier;
uid_t prog_uid;
gid_t prog_gid;
/* One directory fd per controller of the unit's own cgroup, opened before the binds are detached. */
int cg_fds[ELEMENTSOF(cgroup_names)] = { -EBADF, -EBADF, -EBADF, -EBADF };

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
        live_finish();
        n = helper_report_format(r, text, sizeof(text));
        if (n > 0 && send_all(control_fd, text, (size_t) n) >= 0) {
                send_stream(&cap_out);
                send_stream(&cap_err);
        }
        (void) shutdown(control_fd, SHUT_WR);
}

_printf_(1, 2) _Noreturn void fail_setup(const char *fmt, ...) {
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

_Noreturn void report_and_exit(HelperReport *r) {
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
        ARG_LIVE_OUTPUT,
        ARG_PKGS_DIR,
        ARG_USR_LAYER,
        ARG_ENV_LAYER,
        ARG_UID,
        ARG_SAME_USER,
        ARG_RLIMIT_NOFILE,
        ARG_RLIMIT_FSIZE,
        ARG_RLIMIT_CORE,
        ARG_COMPILE_ARG,
        ARG_CHECK_ARG,
        ARG_INPUT,
        ARG_TIMEOUT_MS,
        ARG_COMPILE_TIMEOUT_MS,
        ARG_COMPILE_MEMORY_MB,
        ARG_HEAD_BYTES,
        ARG_TAIL_BYTES,
        ARG_WARM,
        ARG_WARM_PRELOAD,
        ARG_STRONG,
        ARG_RUNSC_PLATFORM,
        ARG_TASKS,
        ARG_MEMORY_MB,
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
                { "live-output",   no_argument,       NULL, ARG_LIVE_OUTPUT   },
                { "pkgs-dir",      no_argument,       NULL, ARG_PKGS_DIR      },
                { "usr-layer",     required_argument, NULL, ARG_USR_LAYER     },
                { "env-layer",     required_argument, NULL, ARG_ENV_LAYER     },
                { "uid",           required_argument, NULL, ARG_UID           },
                { "same-user",     no_argument,       NULL, ARG_SAME_USER     },
                { "rlimit-nofile", required_argument, NULL, ARG_RLIMIT_NOFILE },
                { "rlimit-fsize",  required_argument, NULL, ARG_RLIMIT_FSIZE  },
                { "rlimit-core",   required_argument, NULL, ARG_RLIMIT_CORE   },
                { "compile-arg",   required_argument, NULL, ARG_COMPILE_ARG   },
                { "check-arg",     required_argument, NULL, ARG_CHECK_ARG     },
                { "input",         required_argument, NULL, ARG_INPUT         },
                { "timeout-ms",    required_argument, NULL, ARG_TIMEOUT_MS    },
                { "compile-timeout-ms", required_argument, NULL, ARG_COMPILE_TIMEOUT_MS },
                { "compile-memory-mb", required_argument, NULL, ARG_COMPILE_MEMORY_MB },
                { "head-bytes",    required_argument, NULL, ARG_HEAD_BYTES    },
                { "tail-bytes",    required_argument, NULL, ARG_TAIL_BYTES    },
                { "warm",          no_argument,       NULL, ARG_WARM          },
                { "warm-preload",  no_argument,       NULL, ARG_WARM_PRELOAD  },
                { "strong",        required_argument, NULL, ARG_STRONG        },
                { "runsc-platform", required_argument, NULL, ARG_RUNSC_PLATFORM },
                { "tasks",         required_argument, NULL, ARG_TASKS         },
                { "memory-mb",     required_argument, NULL, ARG_MEMORY_MB     },
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
                case ARG_PKGS_DIR:
                        o->pkgs_dir = true;
                        break;
                case ARG_LIVE_OUTPUT:
                        live_output = true;
                        break;
                case ARG_TIDY_MOUNTS:
                        o->tidy_mounts = true;
                        break;
                case ARG_USR_LAYER:
                        if (!startswith(optarg, "/run/") || strstr(optarg, ".."))
                                fail_setup("--usr-layer must be a directory below /run");
                        o->usr_layer = optarg;
                        break;
                case ARG_ENV_LAYER:
                        if (!startswith(optarg, "/run/") || strstr(optarg, ".."))
                                fail_setup("--env-layer must be a directory below /run");
                        o->env_layer = optarg;
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
                case ARG_COMPILE_TIMEOUT_MS:
                        o->compile_timeout_ms = parse_u64_or_fail("--compile-timeout-ms", optarg);
                        break;
                case ARG_COMPILE_MEMORY_MB:
                        o->compile_memory_mb = parse_u64_or_fail("--compile-memory-mb", optarg);
                        if (o->compile_memory_mb == 0 || o->compile_memory_mb > UINT64_C(1) << 20)
                                fail_setup("--compile-memory-mb out of range");
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
                case ARG_WARM:
                        o->warm = true;
                        break;
                case ARG_WARM_PRELOAD:
                        o->warm_preload = true;
                        break;
                case ARG_STRONG:
                        /* The sandbox sees the host's /usr only. */
                        if (!startswith(optarg, "/usr/") || strstr(optarg, ".."))
                                fail_setup("--strong must name runsc below /usr");
                        o->runsc = optarg;
                        break;
                case ARG_RUNSC_PLATFORM:
                        if (!streq(optarg, "ptrace") && !streq(optarg, "systrap") && !streq(optarg, "kvm"))
                                fail_setup("--runsc-platform must be ptrace, systrap or kvm");
                        o->runsc_platform = optarg;
                        break;
                case ARG_TASKS:
                        o->strong_tasks = parse_u64_or_fail("--tasks", optarg);
                        break;
                case ARG_MEMORY_MB:
                        o->strong_memory_mb = parse_u64_or_fail("--memory-mb", optarg);
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

        if (o->warm_preload && (!o->warm || o->n_compile > 0))
                fail_setup("--warm-preload needs --warm and no compile step");
        if (o->warm && o->n_inputs > 0)
                fail_setup("--warm and --input exclude each other (inputs are written before the unit starts)");

        if (o->env_layer && !o->usr_layer)
                fail_setup("--env-layer needs --usr-layer");
        /* A strong unit of the pool starts its runtime after the claim, under gVisor. */
        if (o->runsc && o->warm_preload)
                fail_setup("--strong and --warm-preload exclude each other (gVisor starts the runtime after the claim)");
        if (o->runsc && !o->runsc_platform)
                o->runsc_platform = "ptrace";
        strong_tier = o->runsc != NULL;
        strong_task_limit = strong_tier ? o->strong_tasks : 0;

        if (optind >= argc)
                fail_setup("No program to run");
        o->run_argv = argv + optind;
        /* No PATH search: what runs is exactly what the daemon named. */
        if (o->run_argv[0][0] != '/')
                fail_setup("Program must be an absolute path");
}

/* ---------------------------------------------------------------------------------------------- */
/* Control channel */

/* "SANDBOXD-EXEC 1 <bpf_len> <code_len>[ <stdin_len>]\n", read one byte at a time so not a byte of
 * what follows is consumed. */
static void read_header(int fd, uint64_t *ret_bpf_len, uint64_t *ret_code_len, uint64_t *ret_stdin_len) {
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

        if (exec_header_parse(line, n, ret_bpf_len, ret_code_len, ret_stdin_len) < 0)
                fail_setup("Malformed control header");
}

static void read_exact_or_fail(int fd, void *buf, size_t n, const char *what) {
        ssize_t k = loop_read(fd, buf, n);

        if (k < 0)
                fail_setup("Cannot read %s: %s", what, strerror((int) -k));
        if ((size_t) k != n)
                fail_setup("Short read of %s (%zi of %zu bytes)", what, k, n);
}

/* Copy exactly n bytes from the control channel into a file (what: the source, the standard input).
 * Streamed, so neither needs to be held in memory as a whole. */
static void copy_exact(int from, int to, uint64_t n, const char *what) {
        char buf[64 * 1024];

        while (n > 0) {
                size_t chunk = (size_t) MIN(n, (uint64_t) sizeof(buf));
                ssize_t k = loop_read(from, buf, chunk);
                int r;

                if (k < 0)
                        fail_setup("Cannot read %s: %s", what, strerror((int) -k));
                if ((size_t) k != chunk)
                        fail_setup("Short read of %s", what);
                r = loop_write(to, buf, chunk);
                if (r < 0)
                        fail_setup("Cannot write %s: %s", what, strerror(-r));
                n -= chunk;
        }
}

/* The program's standard input: n bytes from the control channel into a memfd, then sealed (no
 * write, no resize, no more seals) and rewound. Not a file of the sandbox's: nothing the program can
 * name, replace or change, and a regular file, so it reads at its own pace and may seek, as with
 * "prog < file". Charged to the unit's memory like everything else of the execution's. */
static int read_stdin(int from, uint64_t n) {
        _cleanup_close_ int fd = memfd_create("stdin", MFD_CLOEXEC | MFD_ALLOW_SEALING);

        if (fd < 0)
                fail_setup("Cannot create the standard input: %s", strerror(errno));
        copy_exact(from, fd, n, "standard input");
        if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0)
                fail_setup("Cannot seal the standard input: %s", strerror(errno));
        if (lseek(fd, 0, SEEK_SET) < 0)
                fail_setup("Cannot rewind the standard input: %s", strerror(errno));
        return TAKE_FD(fd);
}

/* The source, in our own directory (code_fd): remove the name itself (unlinkat never follows), then
 * create exclusively without following: if anything appears in between, the create fails instead of
 * writing somewhere else. */
void write_source(int code_fd, const char *name, int from, uint64_t len) {
        _cleanup_close_ int fd = -EBADF;

        if (unlinkat(code_fd, name, 0) < 0 && errno != ENOENT)
                fail_setup("Cannot remove old %s: %s", name, strerror(errno));
        fd = openat(code_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0644);
        if (fd < 0)
                fail_setup("Cannot create %s: %s", name, strerror(errno));
        copy_exact(from, fd, len, "source");
        if (close(TAKE_FD(fd)) < 0)
                fail_setup("Cannot write source file: %s", strerror(errno));
}

/* ---------------------------------------------------------------------------------------------- */

int main(int argc, char *argv[]) {
        _cleanup_close_ int workspace_fd = -EBADF, tmp_fd = -EBADF, code_fd = -EBADF, warm_fd = -EBADF;
        _cleanup_free_ uint8_t *bpf = NULL;
        _cleanup_free_ char *warm_env = NULL;
        size_t warm_env_len = 0;
        pid_t warm_pid = -1;
        uint64_t bpf_len, code_len, stdin_len, start_usec;
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
        read_header(STDIN_FILENO, &bpf_len, &code_len, &stdin_len);
        if (!exec_bpf_len_is_valid(bpf_len))
                fail_setup("Invalid filter length %" PRIu64, bpf_len);
        if (code_len > o.max_source)
                fail_setup("Source too large (%" PRIu64 " bytes, at most %" PRIu64 ")", code_len,
                           o.max_source);
        if (code_len > 0 && !o.source)
                fail_setup("Source sent but no --source file name given");
        if (code_len > 0 && o.warm)
                fail_setup("A warm unit's source comes with its claim");
        if (stdin_len > EXEC_STDIN_MAX)
                fail_setup("Standard input too large (%" PRIu64 " bytes, at most %u)", stdin_len, EXEC_STDIN_MAX);
        if (stdin_len > 0 && o.warm)
                fail_setup("A warm unit has no standard input");

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
                        tidy_mounts(o.usr_layer, o.env_layer);
                        if (o.usr_layer)
                                mount_usr_overlay(o.usr_layer, o.env_layer);
                        fd = open("/run", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (fd >= 0) {
                                clear_dir(fd, 0);
                                (void) close(fd);
                        }
                } else if (o.usr_layer)
                        mount_usr_overlay(o.usr_layer, o.env_layer);
                if (o.runsc && o.strong_memory_mb > 0) {
                        r = strong_mount_meminfo(o.strong_memory_mb);
                        if (r < 0)
                                fail_setup("Cannot give runsc the memory limit as the total memory: %s", strerror(-r));
                }
                drop_setup_capabilities();
        }
        if (o.runsc) {
                r = strong_prepare();
                if (r < 0)
                        fail_setup("Cannot prepare the strong tier: %s", strerror(-r));
        }

        /* e. The source, in a directory of our own that the program can read and not change (root's,
         * 0755; a session's workspace is never where it lives, so nothing a turn leaves behind can
         * stand in its way), and the accounts the sandbox's /etc/passwd and /etc/group point to. */
        if (mkdir(o.code_dir, 0755) < 0 && errno != EEXIST)
                fail_setup("Cannot create %s: %s", o.code_dir, strerror(errno));
        code_fd = open(o.code_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (code_fd < 0)
                fail_setup("Cannot open %s: %s", o.code_dir, strerror(errno));
        /* A warm unit's source comes with its claim. */
        if (o.source && !o.warm)
                write_source(code_fd, o.source, STDIN_FILENO, code_len);
        /* Without a --source, code_len is 0 (refused above otherwise): the stdin follows at once. */
        if (stdin_len > 0)
                stdin_fd = read_stdin(STDIN_FILENO, stdin_len);
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
        /* A warm unit: the runtime starts (--warm-preload), then the claim brings the request. What the
         * runtime printed meanwhile is not the program's output, and the CPU time it took is not the
         * program's either. */
        if (o.warm) {
                if (o.warm_preload)
                        warm_pid = warm_start_runtime(&o, o.run_argv, bpf, (size_t) bpf_len, &warm_fd);
                warm_env = warm_await_claim(&o, code_fd, warm_pid, &warm_env_len);
                (void) pump(out_pipe[0], &cap_out, true);
                (void) pump(err_pipe_[0], &cap_err, true);
                capture_done(&cap_out);
                capture_done(&cap_err);
                if (capture_init(&cap_out, (size_t) o.head_bytes, (size_t) o.tail_bytes) < 0 ||
                    capture_init(&cap_err, (size_t) o.head_bytes, (size_t) o.tail_bytes) < 0)
                        fail_setup("Out of memory");
                first_output_usec = 0;
                cpu_baseline(warm_pid);
                if (warm_pid < 0)
                        warm_apply_env(warm_env, warm_env_len);
        }

        start_usec = run_start_usec = mono_usec();
        if (o.timeout_ms > 0)
                deadline_usec = start_usec + o.timeout_ms * USEC_PER_MSEC;

        /* The input files become the execution's memory (see recharge_input()). */
        recharge_inputs(&o);

        /* f. The compile step. */
        if (o.compile_argv) {
                uint64_t run_deadline = deadline_usec;

                /* The compile step's own limit ([Compile] TimeoutSec=), within the execution's. */
                if (o.compile_timeout_ms > 0) {
                        uint64_t c = start_usec + o.compile_timeout_ms * USEC_PER_MSEC;

                        deadline_usec = deadline_usec > 0 ? MIN(deadline_usec, c) : c;
                }
                status = spawn_and_wait(&o, o.compile_argv, bpf, (size_t) bpf_len, CHILD_COMPILE, 0);
                deadline_usec = run_deadline;
                if (!status_is_success(status) || timed_out || cancelled) {
                        sweep_program_processes();
                        report.phase = PHASE_COMPILE;
                        status_to_report(status, &report);
                        report.timed_out = timed_out;
                        report.cancelled = cancelled;
                        report.run_usec = mono_usec() - start_usec;
                        gather(&report, workspace_fd, tmp_fd);
                        report.alone = cgroup_alone();
                        report_and_exit(&report);
                }
        }

        /* g. The run step, then whatever of the program is still alive dies (kill -9 -1 as its
         * user), and what it wrote meanwhile is drained. A preloaded runtime is running already: the
         * environment is what it waits for. Should it have died meanwhile, the wait says how. */
        if (warm_pid > 0) {
                const char *p = warm_env;
                size_t left = warm_env_len;

                while (left > 0) {
                        ssize_t k = send(warm_fd, p, left, MSG_NOSIGNAL);

                        if (k < 0 && errno == EINTR)
                                continue;
                        if (k <= 0)
                                break;
                        p += k;
                        left -= (size_t) k;
                }
                warm_fd = safe_close(warm_fd);
                status = wait_child(warm_pid, CHILD_PROGRAM, 0);
        } else
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

        /* i. Nothing of the program left (the sweep made sure): the daemon may go on without waiting
         * for systemd to notice that the unit ended. */
        report.alone = cgroup_alone();
        report_and_exit(&report);
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* sandbox-exec's own parts (see sandbox-exec.c for what it is): the options, the state every part
 * shares (it is one process with one job), and what each file gives the others. */

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
#include <sys/mman.h>
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
#include <sys/fsuid.h>

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


/* cgroup counters: the bind points below --cgroup-dir, one per controller (the daemon's names). */
#define N_CGROUP_NAMES 4
extern const char *const cgroup_names[N_CGROUP_NAMES];

typedef struct Options {
        const char *source;
        const char *code_dir;
        uint64_t max_source;
        const char *workspace;
        const char *cgroup_dir;
        bool tidy_mounts;
        bool pkgs_dir;           /* a run with network: .pkgs/ (PIP_TARGET=, PYTHONPATH=) exists */
        const char *usr_layer;
        const char *env_layer;    /* an environment's usr/ tree: the overlay's middle layer */
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
        uint64_t compile_timeout_ms; /* the compile step's own limit; 0: only timeout_ms */
        uint64_t compile_memory_mb;  /* RLIMIT_DATA of each compile process; 0: only MemoryMax= */
        uint64_t timeout_ms;      /* 0: none (the unit's RuntimeMaxSec= still applies); a warm unit's
                                   * comes with its claim */
        bool warm;                /* --warm: a unit of the warm pool, the request comes as a claim */
        bool warm_preload;        /* --warm-preload: the run step starts before the claim (see warm.c) */
        uint64_t head_bytes, tail_bytes;
        /* --strong=RUNSC: the strong tier (strong.c), gVisor's runsc with --runsc-platform=; the
         * program's task limit (--tasks=) is RLIMIT_NPROC inside it. */
        const char *runsc;
        const char *runsc_platform;
        uint64_t strong_tasks;
        uint64_t strong_memory_mb;  /* --memory-mb=: the total memory gVisor reports (strong.c) */
} Options;

/* sandbox-exec.c */
extern int control_fd;
/* The run step's standard input: a sealed memfd (CLOEXEC; the program's fd 0), or -EBADF: /dev/null. */
extern int stdin_fd;
extern Capture cap_out, cap_err;
extern int out_pipe[2], err_pipe_[2];
extern int signal_fd;
extern uint64_t deadline_usec, run_start_usec, first_output_usec;
extern bool timed_out, cancelled;
extern bool privileged;
/* The strong tier: the program runs under runsc, which reports a signal's death as the exit status
 * 128+N, as a shell does. */
extern bool strong_tier;
extern uid_t prog_uid;
extern gid_t prog_gid;
extern int cg_fds[N_CGROUP_NAMES];
_printf_(1, 2) _Noreturn void fail_setup(const char *fmt, ...);
_Noreturn void report_and_exit(HelperReport *r);

/* children.c: the program's processes */
typedef enum ChildKind {
        CHILD_PROGRAM,   /* run step: output captured, workspace dirs made */
        CHILD_COMPILE,   /* compile step: as CHILD_PROGRAM, under --compile-memory-mb */
        CHILD_CHECK,     /* the syntax checker: output discarded */
} ChildKind;
int become_program_user(void);
/* The variables systemd gives every invocation (a random INVOCATION_ID, the PID, ...): never in the
 * program's environment, whichever tier runs it. NULL-terminated. */
extern const char *const invocation_variables[];

/* strong.c: the strong tier. As root, before the children: runsc's state directory (the program's
 * user's), then the bundle of each step; in the child, the exec of runsc instead of the program. */
int strong_prepare(void);
int strong_mount_meminfo(uint64_t memory_mb);
int strong_write_bundle(const Options *o, ChildKind kind, char **argv);
_Noreturn void strong_exec(const Options *o, ChildKind kind, int err_fd);
/* While the program runs: how many processes it has in gVisor, seen from the host (strong.c). The
 * limit (--tasks; 0: not looked at), the peak; a look when due, and when the next is (ms, -1: never). */
extern uint64_t strong_task_limit;
extern int strong_log_fd;
extern bool strong_fork_refused;
int strong_log_open(int *ret_write_fd);
bool strong_log_pump(bool drain);
_printf_(2, 3) _Noreturn void child_fail(int err_fd, const char *fmt, ...);
uint64_t mono_usec(void);
bool pump(int fd, Capture *c, bool drain);

/* live.c: --live-output (exec-protocol.h's frames). live_start()/live_stop() bracket the program's
 * supervision; live_feed() takes what pump() read; live_flush() sends what is due (force: all that
 * is pending); live_timeout_ms() is when the next flush is due (-1: nothing pending); live_finish()
 * completes the frame in flight before the report. */
extern bool live_output;
void live_start(void);
void live_stop(void);
void live_feed(const Capture *c, const uint8_t *p, size_t n);
void live_flush(bool force);
int live_timeout_ms(void);
void live_finish(void);
int spawn_and_wait(const Options *o, char **argv, const uint8_t *bpf, size_t bpf_len, ChildKind kind,
                   uint64_t check_deadline);
/* The two halves of spawn_and_wait(): fork and exec (warm_fd, if >= 0, becomes the child's fd 3),
 * then supervise. */
pid_t spawn_child(const Options *o, char **argv, const uint8_t *bpf, size_t bpf_len, ChildKind kind, int warm_fd);
int wait_child(pid_t pid, ChildKind kind, uint64_t check_deadline);
bool cgroup_has_others(void);
bool cgroup_alone(void);
void sweep_program_processes(void);

/* counters.c: what the kernel counted */
extern uint64_t cpu_base_usec, rusage_base_usec;
bool cgroup_cpu_usec(uint64_t *ret);
ssize_t cgroup_read_procs(char *buf, size_t size);
const char *proc_stat_fields(pid_t pid, char *buf, size_t size);
uint64_t proc_cpu_usec(pid_t pid);
/* At a claim: what the unit (and the warm runtime, pid or -1) used so far, not the program's. */
void cpu_baseline(pid_t runtime);
void gather(HelperReport *r, int workspace_fd, int tmp_fd);
void status_to_report(int status, HelperReport *r);
bool status_is_success(int status);

/* warm.c: a unit of the warm pool */
pid_t warm_start_runtime(const Options *o, char **argv, const uint8_t *bpf, size_t bpf_len, int *ret_fd);
char *warm_await_claim(Options *o, int code_fd, pid_t runtime, size_t *ret_env_len);
void warm_apply_env(const char *block, size_t n);
void write_source(int code_fd, const char *name, int from, uint64_t len);

/* setup.c: before the program exists */
void recharge_inputs(const Options *o);
int dynamic_user_from_groups(uid_t *ret_uid, gid_t *ret_gid);
void tidy_mounts(const char *keep, const char *keep2);
void clear_dir(int dfd, unsigned depth);
void mount_usr_overlay(const char *layer, const char *env_layer);
void drop_setup_capabilities(void);
void write_accounts(int dfd);

/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* sandboxd's own system call filter. Default deny: every system call number the allow-list below
 * does not name returns ENOSYS, so the calls each new kernel adds (listmount, statmount, mseal,
 * cachestat, lsm_*, ...) and old corners no runtime uses (io_setup, SysV IPC, ...) are unreachable
 * until someone decides they are needed. ENOSYS, not EPERM and not a kill: it is what the kernel
 * itself answers for a call it lacks, and every runtime and libc probes new calls and falls back
 * on it (glibc clone3 → clone, faccessat2 → faccessat, ...). The known-dangerous calls keep EPERM
 * (the deny table): a refusal a program can tell apart from "not there", as before this filter
 * was an allow-list.
 *
 * The unit also runs with no capabilities, NoNewPrivileges, private network/devices/IPC and a
 * minimal root; the filter removes kernel attack surface an unprivileged program could still
 * reach, plus the few interfaces that would let a program look behind the sandbox (namespaces,
 * other processes, host clocks).
 *
 * The allow-list was found by running python3 (numpy, multiprocessing with fork/spawn/forkserver,
 * threads, asyncio, subprocess, sqlite3, tempfile, mmap, ssl), node 20 (worker_threads,
 * child_process, fs.promises, fs.watch, net over a unix socket, zlib, crypto, WebAssembly) and
 * bash with coreutils, tar, gzip, awk, sed and grep under strace -f on x86-64, then adding the
 * siblings of what they used (the *at and 2 variants, the other half of a pair), so that a
 * library choosing the other variant does not land on ENOSYS. tests/integration/test-syscalls.py
 * runs those workloads in real units. How a language adds calls: Language.extra_syscalls
 * (language.h), documented in docs/ARCHITECTURE.md. */

#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1 /* memfd_create() */
#endif

#include <errno.h>
#include <linux/sched.h>
#include <seccomp.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "seccomp-policy.h"
#include "util.h"

typedef struct SyscallAllow {
        const char *name;
        const char *why;
} SyscallAllow;

/* Allowed without conditions. Names are the kernel's for x86-64; the generic table that aarch64
 * (and riscv64) use has no open, stat, pipe, dup2, poll, fork, ... and only their *at or 2
 * successors, which are rows too: a name that does not exist on the native architecture is
 * skipped (see resolve()). Not here, so ENOSYS: io_setup and the rest of AIO, SysV IPC and POSIX
 * message queues, splice/tee/vmsplice, sync and syncfs (they write back the host's file systems;
 * glibc's sync() returns nothing anyway), seccomp and landlock (a program sandboxing itself is
 * told the kernel lacks them), set_mempolicy and friends, membarrier, futex_waitv, memfd_secret,
 * get_robust_list, readahead, and everything newer than this list. */
static const SyscallAllow allow[] = {
        /* Basic I/O on descriptors: every program. */
        { "read",               "every program" },
        { "write",              "every program" },
        { "readv",              "stdio, python's os.readv" },
        { "writev",             "stdio, libuv" },
        { "pread64",            "ld.so reads ELF headers; sqlite" },
        { "pwrite64",           "sqlite" },
        { "preadv",             "libuv's fs.read with several buffers" },
        { "pwritev",            "libuv's fs.write with several buffers" },
        { "preadv2",            "python's os.preadv with flags" },
        { "pwritev2",           "python's os.pwritev with flags" },
        { "lseek",              "every program" },
        { "close",              "every program" },
        { "close_range",        "python subprocess and libuv close inherited fds before exec" },
        { "dup",                "bash redirections" },
        { "dup2",               "bash redirections, subprocess (x86-64 only; dup3 elsewhere)" },
        { "dup3",               "what dup2 is on aarch64; libuv" },
        { "pipe",               "older binaries (x86-64 only; pipe2 elsewhere)" },
        { "pipe2",              "bash pipelines, subprocess, libuv" },
        { "fcntl",              "O_NONBLOCK, FD_CLOEXEC, record locks (sqlite)" },
        { "flock",              "whole-file locks (python fcntl.flock, pip)" },
        /* Opening and looking at files. */
        { "open",               "older binaries (x86-64 only)" },
        { "openat",             "every program" },
        { "openat2",            "openat with RESOLVE_* flags, stricter than openat" },
        { "creat",              "coreutils, old programs (x86-64 only)" },
        { "stat",               "every program (x86-64 only; newfstatat elsewhere)" },
        { "fstat",              "every program" },
        { "lstat",              "every program (x86-64 only)" },
        { "newfstatat",         "glibc's stat family" },
        { "statx",              "coreutils ls/stat/cp, libuv's fs.stat" },
        { "access",             "ld.so, bash (x86-64 only)" },
        { "faccessat",          "access on aarch64" },
        { "faccessat2",         "glibc's faccessat with flags (falls back on ENOSYS)" },
        { "readlink",           "node finds its own executable (x86-64 only)" },
        { "readlinkat",         "coreutils readlink/ls" },
        { "getdents",           "old binaries (x86-64 only)" },
        { "getdents64",         "readdir: every language's directory listing" },
        { "statfs",             "df, python shutil.disk_usage" },
        { "fstatfs",            "coreutils tail -f, cp" },
        { "getcwd",             "every runtime" },
        { "chdir",              "bash cd, multiprocessing's spawn" },
        { "fchdir",             "coreutils rm -r, find" },
        { "umask",              "bash, coreutils install/mkdir -m" },
        /* Changing files (all below the workspace or /tmp; the rest is read-only). */
        { "mkdir",              "x86-64 only; mkdirat elsewhere" },
        { "mkdirat",            "coreutils mkdir, node fs.mkdir" },
        { "rmdir",              "x86-64 only; unlinkat elsewhere" },
        { "unlink",             "x86-64 only; unlinkat elsewhere" },
        { "unlinkat",           "coreutils rm, python shutil.rmtree" },
        { "rename",             "x86-64 only; renameat elsewhere" },
        { "renameat",           "rename on aarch64" },
        { "renameat2",          "coreutils mv, atomic replace" },
        { "link",               "x86-64 only; linkat elsewhere" },
        { "linkat",             "coreutils ln, multiprocessing" },
        { "symlink",            "x86-64 only; symlinkat elsewhere" },
        { "symlinkat",          "coreutils ln -s, node fs.symlink" },
        { "mknod",              "x86-64 only; mknodat elsewhere" },
        { "mknodat",            "mkfifo (PrivateDevices and no CAP_MKNOD keep devices out)" },
        { "chmod",              "x86-64 only; fchmodat elsewhere" },
        { "fchmod",             "node fs.chmod, tempfile" },
        { "fchmodat",           "coreutils chmod" },
        { "fchmodat2",          "glibc's fchmodat with AT_SYMLINK_NOFOLLOW" },
        { "chown",              "x86-64 only; fchownat elsewhere" },
        { "fchown",             "python shutil.copy2, cp -p (own files only: no CAP_CHOWN)" },
        { "lchown",             "x86-64 only; fchownat elsewhere" },
        { "fchownat",           "coreutils chown, tar" },
        { "truncate",           "coreutils truncate" },
        { "ftruncate",          "sqlite, python file.truncate, multiprocessing shared memory" },
        { "fallocate",          "sqlite, cp" },
        { "fadvise64",          "coreutils cp/cat, python os.posix_fadvise" },
        { "utime",              "x86-64 only; utimensat elsewhere" },
        { "utimes",             "x86-64 only; utimensat elsewhere" },
        { "futimesat",          "x86-64 only; utimensat elsewhere" },
        { "utimensat",          "touch, cp -p, node fs.utimes" },
        { "fsync",              "sqlite, node fh.sync (the workspace is a tmpfs)" },
        { "fdatasync",          "sqlite, node fh.datasync" },
        { "sync_file_range",    "sqlite on some builds" },
        { "copy_file_range",    "coreutils cp, node fs.copyFile" },
        { "sendfile",           "python shutil.copyfile, libuv" },
        { "getxattr",           "coreutils ls/cp read ACLs and labels" },
        { "lgetxattr",          "coreutils ls -l" },
        { "fgetxattr",          "coreutils cp -a" },
        { "listxattr",          "coreutils cp -a, python shutil.copystat" },
        { "llistxattr",         "python shutil.copystat on symlinks" },
        { "flistxattr",         "coreutils cp -a" },
        { "setxattr",           "user.* attributes on the tmpfs" },
        { "lsetxattr",          "user.* attributes on the tmpfs" },
        { "fsetxattr",          "coreutils cp -a" },
        { "removexattr",        "user.* attributes on the tmpfs" },
        { "lremovexattr",       "user.* attributes on the tmpfs" },
        { "fremovexattr",       "user.* attributes on the tmpfs" },
        { "inotify_init",       "x86-64 only; inotify_init1 elsewhere" },
        { "inotify_init1",      "node fs.watch, tail -f" },
        { "inotify_add_watch",  "node fs.watch, tail -f" },
        { "inotify_rm_watch",   "node fs.watch, tail -f" },
        /* Memory. */
        { "brk",                "malloc" },
        { "mmap",               "ld.so, malloc, every runtime's heap" },
        { "munmap",             "malloc, every runtime's heap" },
        { "mprotect",           "ld.so (RELRO), V8's JIT, thread stacks' guard pages" },
        { "mremap",             "glibc realloc of large blocks, python" },
        { "madvise",            "malloc trimming, V8 and numpy/OpenBLAS buffers" },
        { "mincore",            "some allocators and GCs probe residency" },
        { "msync",              "python mmap.flush, sqlite with mmap" },
        { "mlock",              "crypto libraries pin key material (bounded by RLIMIT_MEMLOCK)" },
        { "mlock2",             "glibc's mlock2" },
        { "munlock",            "crypto libraries" },
        { "mlockall",           "bounded by RLIMIT_MEMLOCK" },
        { "munlockall",         "bounded by RLIMIT_MEMLOCK" },
        { "memfd_create",       "python os.memfd_create, V8, libffi's closures" },
        /* Processes and threads. clone is allowed only without namespace flags (see below). */
        { "fork",               "x86-64 only; clone elsewhere" },
        { "vfork",              "bash, posix_spawn" },
        { "execve",             "every program: the runtime itself, subprocesses" },
        { "execveat",           "glibc fexecve" },
        { "exit",               "thread exit" },
        { "exit_group",         "process exit" },
        { "wait4",              "bash, subprocess, libuv" },
        { "waitid",             "python os.waitid, multiprocessing" },
        { "set_tid_address",    "glibc at start and for every thread" },
        { "set_robust_list",    "glibc at start and for every thread" },
        { "futex",              "every lock, condition variable and thread join" },
        { "rseq",               "glibc 2.35+ registers it for every thread (falls back on ENOSYS)" },
        { "sched_yield",        "spin locks, V8, OpenBLAS" },
        { "sched_getaffinity",  "os.cpu_count, os.sched_getaffinity, libuv, OpenBLAS" },
        { "sched_setaffinity",  "OpenBLAS, python os.sched_setaffinity (its own threads)" },
        { "sched_getparam",     "python os.sched_getparam" },
        { "sched_setparam",     "python os.sched_setparam (no CAP_SYS_NICE: only lowering)" },
        { "sched_getscheduler", "glibc pthread attributes" },
        { "sched_setscheduler", "python os.sched_setscheduler (no CAP_SYS_NICE: only lowering)" },
        { "sched_get_priority_max", "glibc pthread attributes" },
        { "sched_get_priority_min", "glibc pthread attributes" },
        { "sched_rr_get_interval", "python os.sched_rr_get_interval" },
        { "sched_getattr",      "glibc pthread attributes" },
        { "sched_setattr",      "nice-like changes (no CAP_SYS_NICE: only lowering)" },
        { "getpriority",        "nice, python os.getpriority" },
        { "setpriority",        "nice, python os.nice (only lowering)" },
        { "getcpu",             "sched_getcpu where rseq is not registered" },
        { "kill",               "bash kill, subprocess timeouts, multiprocessing" },
        { "tkill",              "old thread libraries" },
        { "tgkill",             "raise(), pthread_kill, python signal.pthread_kill" },
        { "rt_sigqueueinfo",    "sigqueue" },
        { "rt_tgsigqueueinfo",  "pthread_sigqueue" },
        { "pidfd_open",         "python os.pidfd_open, asyncio's PidfdChildWatcher" },
        { "pidfd_send_signal",  "python signal.pidfd_send_signal" },
        /* Signals. */
        { "rt_sigaction",       "every runtime installs handlers" },
        { "rt_sigprocmask",     "every runtime, posix_spawn" },
        { "rt_sigreturn",       "the return from every signal handler" },
        { "rt_sigpending",      "python signal.sigpending" },
        { "rt_sigtimedwait",    "python signal.sigtimedwait, bash wait" },
        { "rt_sigsuspend",      "bash waits for children with sigsuspend" },
        { "sigaltstack",        "python faulthandler, bash, V8" },
        { "pause",              "x86-64 only; rt_sigsuspend elsewhere" },
        { "alarm",              "x86-64 only; setitimer elsewhere" },
        { "restart_syscall",    "the kernel restarts an interrupted sleep through it" },
        /* Time. */
        { "clock_gettime",      "the vDSO's fallback" },
        { "clock_getres",       "python time.get_clock_info" },
        { "clock_nanosleep",    "sleep, python time.sleep" },
        { "nanosleep",          "older sleep implementations" },
        { "gettimeofday",       "the vDSO's fallback" },
        { "time",               "the vDSO's fallback (x86-64 only)" },
        { "getitimer",          "python signal.getitimer" },
        { "setitimer",          "python signal.setitimer, bash's read -t" },
        { "timer_create",       "POSIX timers: timeout(1), bash" },
        { "timer_settime",      "POSIX timers" },
        { "timer_gettime",      "POSIX timers" },
        { "timer_getoverrun",   "POSIX timers" },
        { "timer_delete",       "POSIX timers" },
        { "timerfd_create",     "libuv, event loops" },
        { "timerfd_settime",    "libuv, event loops" },
        { "timerfd_gettime",    "libuv, event loops" },
        /* Waiting for events. */
        { "select",             "python select.select (x86-64 only; pselect6 elsewhere)" },
        { "pselect6",           "python select.select, bash" },
        { "poll",               "python subprocess.communicate (x86-64 only; ppoll elsewhere)" },
        { "ppoll",              "poll on aarch64" },
        { "epoll_create",       "x86-64 only; epoll_create1 elsewhere" },
        { "epoll_create1",      "libuv, python asyncio" },
        { "epoll_ctl",          "libuv, python asyncio" },
        { "epoll_wait",         "python asyncio (x86-64 only)" },
        { "epoll_pwait",        "libuv; epoll_wait on aarch64" },
        { "epoll_pwait2",       "epoll with a nanosecond timeout" },
        { "eventfd",            "x86-64 only; eventfd2 elsewhere" },
        { "eventfd2",           "libuv's async handles, worker_threads" },
        { "signalfd",           "x86-64 only; signalfd4 elsewhere" },
        { "signalfd4",          "event loops that read signals" },
        /* Sockets: AF_UNIX only, see socket below. No socket of another family can be made, so
         * these only ever act on unix sockets. */
        { "bind",               "unix socket servers (asyncio, node net)" },
        { "listen",             "unix socket servers" },
        { "accept",             "unix socket servers" },
        { "accept4",            "unix socket servers (libuv, python)" },
        { "connect",            "unix sockets; glibc's nscd probe" },
        { "getsockname",        "libuv, python socket" },
        { "getpeername",        "node net, python socket" },
        { "sendto",             "python socket.send" },
        { "recvfrom",           "python socket.recv" },
        { "sendmsg",            "multiprocessing passes fds (forkserver)" },
        { "recvmsg",            "multiprocessing passes fds, libuv" },
        { "sendmmsg",           "batched datagrams" },
        { "recvmmsg",           "batched datagrams" },
        { "shutdown",           "node net, python socket.shutdown" },
        { "setsockopt",         "libuv, python socket" },
        { "getsockopt",         "libuv, python socket, SO_PEERCRED" },
        /* Identity and limits: reading them, and changes the kernel allows without capabilities
         * (the unit has none, so setuid(0) is EPERM from the kernel, as a program expects). */
        { "getpid",             "every runtime" },
        { "getppid",            "bash, multiprocessing" },
        { "gettid",             "glibc, V8, python threading.get_native_id" },
        { "getuid",             "every runtime" },
        { "geteuid",            "every runtime" },
        { "getgid",             "every runtime" },
        { "getegid",            "every runtime" },
        { "getresuid",          "python os.getresuid" },
        { "getresgid",          "python os.getresgid" },
        { "getgroups",          "bash, id" },
        { "getpgid",            "bash job control" },
        { "getpgrp",            "bash job control (x86-64 only)" },
        { "getsid",             "python os.getsid" },
        { "setsid",             "daemonizing programs, python start_new_session" },
        { "setpgid",            "bash job control, python process_group" },
        { "setuid",             "privilege-dropping code (only to its own ids)" },
        { "setgid",             "privilege-dropping code (only to its own ids)" },
        { "setreuid",           "privilege-dropping code (only to its own ids)" },
        { "setregid",           "privilege-dropping code (only to its own ids)" },
        { "setresuid",          "privilege-dropping code (only to its own ids)" },
        { "setresgid",          "privilege-dropping code (only to its own ids)" },
        { "setfsuid",           "privilege-dropping code (only to its own ids)" },
        { "setfsgid",           "privilege-dropping code (only to its own ids)" },
        { "setgroups",          "privilege-dropping code (EPERM without CAP_SETGID)" },
        { "capget",             "node checks its capabilities at start" },
        { "getrlimit",          "bash ulimit (x86-64 only)" },
        { "setrlimit",          "bash ulimit (only lowering the hard limits)" },
        { "prlimit64",          "glibc's getrlimit/setrlimit, python resource" },
        { "getrusage",          "bash time, node process.resourceUsage, python resource" },
        { "times",              "bash times, python os.times" },
        /* The machine, as far as the sandbox shows it. */
        { "uname",              "every runtime" },
        { "sysinfo",            "node os.totalmem/os.uptime, glibc get_phys_pages" },
        { "getrandom",          "every runtime seeds its hashes and RNGs" },
        { "prctl",              "thread names, PR_SET_PDEATHSIG, V8, python" },
        { "arch_prctl",         "glibc sets the thread pointer (x86-64 only)" },
};

typedef struct SyscallDeny {
        const char *name;
        int error;
} SyscallDeny;

/* Every call here returns its errno, EPERM but for clone3. Grouped by why they are gone; names
 * libseccomp does not know or that do not exist on the native architecture are skipped (they are
 * ENOSYS then, as everything not allowed). */
static const SyscallDeny deny[] = {
        /* io_uring: a second system call interface that bypasses this very filter for the
         * operations it carries, and a steady source of kernel privilege escalations. */
        { "io_uring_setup", EPERM }, { "io_uring_enter", EPERM }, { "io_uring_register", EPERM },
        /* Kernel keyrings: shared kernel state, only partly namespaced, frequent CVEs. */
        { "keyctl", EPERM }, { "add_key", EPERM }, { "request_key", EPERM },
        /* eBPF and perf events: large JIT-backed kernel surfaces and side channels. */
        { "bpf", EPERM }, { "perf_event_open", EPERM },
        /* userfaultfd makes kernel race conditions reliably winnable. */
        { "userfaultfd", EPERM },
        /* Reaching into other processes: the supervisor is another user now, but these are the
         * kernel's cross-process interfaces and no runtime needs them (a debugger in the sandbox
         * is not a use case). pidfd_getfd steals descriptors, process_madvise/move_pages/
         * migrate_pages act on another process's memory. */
        { "ptrace", EPERM }, { "process_vm_readv", EPERM }, { "process_vm_writev", EPERM },
        { "kcmp", EPERM }, { "pidfd_getfd", EPERM }, { "process_madvise", EPERM },
        { "move_pages", EPERM }, { "migrate_pages", EPERM },
        /* Mounts and root changes: the file system view is systemd's to define. */
        { "mount", EPERM }, { "umount", EPERM }, { "umount2", EPERM }, { "pivot_root", EPERM },
        { "chroot", EPERM }, { "move_mount", EPERM }, { "open_tree", EPERM }, { "fsopen", EPERM },
        { "fsconfig", EPERM }, { "fsmount", EPERM }, { "fspick", EPERM }, { "mount_setattr", EPERM },
        /* Namespaces: creating or entering one is where most container escapes start (a user
         * namespace unlocks code paths otherwise reserved for root). */
        { "unshare", EPERM }, { "setns", EPERM },
        /* Kernel code, machine state and system-wide accounting. */
        { "kexec_load", EPERM }, { "kexec_file_load", EPERM }, { "init_module", EPERM },
        { "finit_module", EPERM }, { "delete_module", EPERM }, { "create_module", EPERM },
        { "reboot", EPERM }, { "swapon", EPERM }, { "swapoff", EPERM }, { "acct", EPERM },
        { "quotactl", EPERM }, { "quotactl_fd", EPERM },
        /* File handles bypass path-based access checks (the "shocker" container escape). */
        { "open_by_handle_at", EPERM }, { "name_to_handle_at", EPERM },
        /* Kernel log, raw I/O ports, the x86 LDT, kernel profiling cookies. */
        { "syslog", EPERM }, { "iopl", EPERM }, { "ioperm", EPERM }, { "modify_ldt", EPERM },
        { "lookup_dcookie", EPERM },
        /* fanotify can watch whole mounts and file systems. */
        { "fanotify_init", EPERM },
        /* Clocks and host identity are shared with the host. */
        { "settimeofday", EPERM }, { "clock_settime", EPERM }, { "clock_adjtime", EPERM },
        { "adjtimex", EPERM }, { "sethostname", EPERM }, { "setdomainname", EPERM },
        /* Terminal hangup: no terminal belongs to the program. */
        { "vhangup", EPERM },
        /* Obsolete interfaces no runtime uses but old bugs live in. */
        { "uselib", EPERM }, { "_sysctl", EPERM }, { "sysfs", EPERM }, { "ustat", EPERM },
        { "nfsservctl", EPERM }, { "get_kernel_syms", EPERM }, { "query_module", EPERM },
        /* clone3 passes its flags in memory, which a classic BPF filter cannot read, so it cannot
         * be allowed without letting namespaces through. ENOSYS makes glibc (and every other libc)
         * fall back to clone(2), whose flags are a register. */
        { "clone3", ENOSYS },
};

/* Allowed only when their arguments pass the checks in build_filter(); a plain allow row would
 * override those checks (libseccomp keeps the widest rule of a system call), so neither the table
 * nor a language may name them. */
static const char *const conditional[] = {
        "clone", "socket", "socketpair", "personality", "ioctl",
};

/* clone(2) flags that create namespaces. CLONE_NEWTIME is not here: in clone(2) (not clone3) bit
 * 0x80 belongs to the exit signal field, and clone(2) cannot create a time namespace anyway. */
static const uint64_t clone_ns_flags[] = {
        CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID,
        CLONE_NEWNET,
};

const char *seccomp_policy_allowed(size_t i, const char **ret_why) {
        if (i >= ELEMENTSOF(allow))
                return NULL;
        if (ret_why)
                *ret_why = allow[i].why;
        return allow[i].name;
}

const char *seccomp_policy_denied(size_t i, int *ret_errno) {
        if (i >= ELEMENTSOF(deny))
                return NULL;
        if (ret_errno)
                *ret_errno = deny[i].error;
        return deny[i].name;
}

static bool is_denied_or_conditional(const char *name) {
        for (size_t i = 0; i < ELEMENTSOF(deny); i++)
                if (streq(deny[i].name, name))
                        return true;
        for (size_t i = 0; i < ELEMENTSOF(conditional); i++)
                if (streq(conditional[i], name))
                        return true;
        return false;
}

static void seccomp_releasep(scmp_filter_ctx *ctx) {
        if (*ctx)
                seccomp_release(*ctx);
}

/* Resolve a name for the native architecture. Returns the number, or -ENOENT when libseccomp does
 * not know the name (older than the kernel) or the call does not exist on this architecture
 * (libseccomp then hands out a negative pseudo number). Either way the caller skips it: a missing
 * name must never make the whole filter fail, or no execution could run at all. */
static int resolve(const char *name) {
        int nr = seccomp_syscall_resolve_name(name);

        if (nr == __NR_SCMP_ERROR || nr < 0)
                return -ENOENT;
        return nr;
}

static int add_plain(scmp_filter_ctx ctx, const char *name, uint32_t action) {
        int nr = resolve(name);

        if (nr < 0)
                return 0; /* see resolve() */
        return seccomp_rule_add(ctx, action, nr, 0);
}

/* One rule per power-of-two aligned block of [lo, hi] (inclusive): (arg & mask & ~(size-1)) ==
 * start. libseccomp refuses two comparisons on the same argument in one rule, so an interval is a
 * union of rules with one masked comparison each; mask selects the bits the kernel reads (all 64,
 * or the low 32 of an unsigned int argument). */
static int add_interval_rules(scmp_filter_ctx ctx, uint32_t action, int nr, unsigned arg, uint64_t mask,
                              uint64_t lo, uint64_t hi) {
        uint64_t start = lo;

        while (start <= hi) {
                uint64_t size = 1;
                int r;

                /* The largest aligned block that starts at 'start' and stays within the interval. */
                while (size < (UINT64_C(1) << 63) && (start & (size * 2 - 1)) == 0 &&
                       start + size * 2 - 1 <= hi)
                        size *= 2;

                r = seccomp_rule_add(ctx, action, nr, 1,
                                     SCMP_CMP(arg, SCMP_CMP_MASKED_EQ, mask & ~(size - 1), start));
                if (r < 0)
                        return r;
                if (start + size - 1 == hi)
                        break; /* also keeps start from wrapping at the top of the range */
                start += size;
        }
        return 0;
}

/* personality(2): allow only PER_LINUX (0) and the query value 0xffffffff; everything else is
 * EPERM: a0 > 0xffffffff, plus the interval [1, 0xfffffffe]. The comparison is on all 64 bits
 * while the kernel truncates to unsigned int: that only ever denies more (e.g. 1<<32, which the
 * kernel would read as 0), never less. */
static int add_personality_rules(scmp_filter_ctx ctx) {
        int nr = resolve("personality"), r;

        if (nr < 0)
                return 0;

        r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 1, SCMP_A0(SCMP_CMP_EQ, 0));
        if (r < 0)
                return r;
        r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 1, SCMP_A0(SCMP_CMP_EQ, UINT64_C(0xffffffff)));
        if (r < 0)
                return r;
        r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 1,
                             SCMP_A0(SCMP_CMP_GT, UINT64_C(0xffffffff)));
        if (r < 0)
                return r;
        return add_interval_rules(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0, UINT64_MAX, 1, UINT64_C(0xfffffffe));
}

/* ioctl(2): every request but TIOCSTI and TIOCLINUX. Injecting terminal input or poking the
 * console: no terminal should ever be reachable, but if one leaked in it must not be usable to
 * type commands into someone's shell. The request is an unsigned int, so only the low 32 bits
 * are compared, on both sides: the allowed intervals between and around the two requests are
 * aligned blocks of the low 32 bits, whatever the upper ones hold. */
static int add_ioctl_rules(scmp_filter_ctx ctx) {
        static const uint64_t bad[] = { TIOCSTI, TIOCLINUX }; /* ascending */
        uint64_t lo = 0;
        int nr = resolve("ioctl"), r;

        if (nr < 0)
                return 0;

        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 1,
                                     SCMP_A1(SCMP_CMP_MASKED_EQ, UINT64_C(0xffffffff), bad[i]));
                if (r < 0)
                        return r;
                if (bad[i] > lo) {
                        r = add_interval_rules(ctx, SCMP_ACT_ALLOW, nr, 1, UINT64_C(0xffffffff), lo,
                                               bad[i] - 1);
                        if (r < 0)
                                return r;
                }
                lo = bad[i] + 1;
        }
        return add_interval_rules(ctx, SCMP_ACT_ALLOW, nr, 1, UINT64_C(0xffffffff), lo, UINT64_C(0xffffffff));
}

static int build_filter(scmp_filter_ctx ctx, const char *const *extra_allow, bool inet) {
        uint64_t ns_mask = 0;
        int r, nr;

        /* A foreign architecture (the i386 int 0x80 entry, or anything else the kernel may accept)
         * would bypass every rule below, which are written for native numbers only. libseccomp also
         * sends x32 numbers (nr | 0x40000000) of the native x86-64 arch to this action. A kill, not
         * ENOSYS: no program of ours runs in another ABI, so one that tries is not falling back. */
        r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
        if (r < 0)
                return r;

        for (size_t i = 0; i < ELEMENTSOF(allow); i++) {
                /* A programming error in the tables; the unit tests build the filter. */
                if (is_denied_or_conditional(allow[i].name))
                        return -EPERM;
                r = add_plain(ctx, allow[i].name, SCMP_ACT_ALLOW);
                if (r < 0)
                        return r;
        }

        for (const char *const *s = extra_allow; s && *s; s++) {
                if (isempty(*s) || is_denied_or_conditional(*s))
                        return -EPERM;
                r = add_plain(ctx, *s, SCMP_ACT_ALLOW);
                if (r < 0)
                        return r;
        }

        for (size_t i = 0; i < ELEMENTSOF(deny); i++) {
                /* ENOSYS is the default action already, and libseccomp refuses a rule that says
                 * the same as the default (EACCES); the row documents it. */
                if (deny[i].error == ENOSYS)
                        continue;
                r = add_plain(ctx, deny[i].name, SCMP_ACT_ERRNO(deny[i].error));
                if (r < 0)
                        return r;
        }

        /* clone(2): allowed without a namespace flag, EPERM with any. The kernel uses the low 32
         * bits of the flags, and each flag is a low bit, so a masked compare on the full register
         * cannot be side-stepped; the two kinds of rule are disjoint. */
        nr = resolve("clone");
        if (nr >= 0) {
                for (size_t i = 0; i < ELEMENTSOF(clone_ns_flags); i++) {
                        ns_mask |= clone_ns_flags[i];
                        r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 1,
                                             SCMP_A0(SCMP_CMP_MASKED_EQ, clone_ns_flags[i],
                                                     clone_ns_flags[i]));
                        if (r < 0)
                                return r;
                }
                r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 1, SCMP_A0(SCMP_CMP_MASKED_EQ, ns_mask, 0));
                if (r < 0)
                        return r;
        }

        /* Only AF_UNIX sockets: the unit has a private network namespace, but netlink, packet,
         * vsock, bluetooth, alg (kernel crypto), etc. are all kernel attack surface of their own.
         * EAFNOSUPPORT is what a kernel without the family would say. The 64-bit compare of an int
         * argument can only deny more (upper bits set), never let another family through. */
        for (size_t i = 0; i < 2; i++) {
                nr = resolve(i == 0 ? "socket" : "socketpair");
                if (nr < 0)
                        continue;
                if (inet && i == 0) {
                        /* A run with network (issue 16): TCP and UDP sockets as well, in a network
                         * namespace that has only lo and the egress proxy's socket on it. */
                        static const int families[] = { AF_UNIX, AF_INET, AF_INET6 };

                        for (size_t k = 0; k < ELEMENTSOF(families); k++) {
                                r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 1, SCMP_A0(SCMP_CMP_EQ, families[k]));
                                if (r < 0)
                                        return r;
                        }
                        /* Every other family, as intervals (one comparison per rule): [0, 0],
                         * [AF_INET + 1, AF_INET6 - 1], [AF_INET6 + 1, 2^64 - 1]. */
                        r = add_interval_rules(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), nr, 0, UINT64_MAX, 0, AF_UNIX - 1);
                        if (r >= 0)
                                r = add_interval_rules(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), nr, 0, UINT64_MAX,
                                                       AF_INET + 1, AF_INET6 - 1);
                        if (r >= 0)
                                r = add_interval_rules(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), nr, 0, UINT64_MAX,
                                                       AF_INET6 + 1, UINT64_MAX);
                        if (r < 0)
                                return r;
                        continue;
                }
                r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), nr, 1,
                                     SCMP_A0(SCMP_CMP_NE, AF_UNIX));
                if (r < 0)
                        return r;
                r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 1, SCMP_A0(SCMP_CMP_EQ, AF_UNIX));
                if (r < 0)
                        return r;
        }

        /* Execution domains other than Linux change syscall semantics (and READ_IMPLIES_EXEC or
         * ADDR_NO_RANDOMIZE weaken the program's own hardening). */
        r = add_personality_rules(ctx);
        if (r < 0)
                return r;

        return add_ioctl_rules(ctx);
}

int seccomp_policy_build(const char *const *extra_allow, uint8_t **ret, size_t *ret_len) {
        return seccomp_policy_build_ex(extra_allow, false, ret, ret_len);
}

int seccomp_policy_build_ex(const char *const *extra_allow, bool inet, uint8_t **ret, size_t *ret_len) {
        _cleanup_(seccomp_releasep) scmp_filter_ctx ctx = NULL;
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ uint8_t *buf = NULL;
        struct stat st;
        ssize_t n;
        int r;

        if (!ret || !ret_len)
                return -EINVAL;

        /* seccomp_init() adds only the native architecture. The default action is what every
         * system call not named by a rule gets. */
        ctx = seccomp_init(SCMP_ACT_ERRNO(ENOSYS));
        if (!ctx)
                return -ENOMEM;

        /* A binary search over system call numbers instead of a linear list: every system call
         * the program makes runs this filter. Only a performance hint, so failure is ignored. */
        (void) seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);

        r = build_filter(ctx, extra_allow, inet);
        if (r < 0)
                return r;

        /* libseccomp 2.5 can only export to a file descriptor; a memfd keeps it off any file
         * system. */
        fd = memfd_create("sandboxd-seccomp-bpf", MFD_CLOEXEC);
        if (fd < 0)
                return -errno;

        r = seccomp_export_bpf(ctx, fd);
        if (r < 0)
                return r;

        if (fstat(fd, &st) < 0)
                return -errno;
        /* Classic BPF instructions are 8 bytes; sandbox-exec refuses more than 64 KiB. */
        if (st.st_size <= 0 || st.st_size % 8 != 0 || st.st_size > 64 * 1024)
                return -EBADMSG;

        buf = malloc((size_t) st.st_size);
        if (!buf)
                return -ENOMEM;
        n = pread(fd, buf, (size_t) st.st_size, 0);
        if (n < 0)
                return -errno;
        if (n != st.st_size)
                return -EIO;

        *ret_len = (size_t) st.st_size;
        *ret = TAKE_PTR(buf);
        return 0;
}

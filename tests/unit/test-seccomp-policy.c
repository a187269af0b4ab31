/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The filter is loaded for real, in forked children (NO_NEW_PRIVS makes that possible without
 * root), and each probe checks what the program would see. Probes use raw syscall() so that no
 * libc wrapper second-guesses the kernel's answer. */

#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/filter.h>
#include <linux/io_uring.h>
#include <linux/keyctl.h>
#include <linux/personality.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <cmocka.h>
#include <seccomp.h>

#include "model/language.h"
#include "unit/seccomp-policy.h"
#include "util.h"

static uint8_t *bpf;
static size_t bpf_len;

static int setup(void **state) {
        return seccomp_policy_build(NULL, &bpf, &bpf_len) < 0 ? -1 : 0;
}

static int teardown(void **state) {
        bpf = mfree(bpf);
        return 0;
}

static void load_this_filter_or_die(const uint8_t *b, size_t len) {
        struct sock_fprog prog = {
                .len = (unsigned short) (len / 8),
                .filter = (struct sock_filter *) b,
        };

        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                _exit(200);
        if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) < 0)
                _exit(201);
}

static void load_filter_or_die(void) {
        load_this_filter_or_die(bpf, bpf_len);
}

/* Run probe() in a child, with the filter loaded if filtered. Returns the wait status. The probe
 * returns 0 on success or its failing line number (exit codes above 200 are the harness's own). */
static int run_child(int (*probe)(void), bool filtered) {
        int status;
        pid_t pid;

        fflush(NULL);
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                if (filtered)
                        load_filter_or_die();
                _exit(probe() & 0xff);
        }
        assert_int_equal(waitpid(pid, &status, 0), pid);
        return status;
}

static void assert_probe_ok(int (*probe)(void)) {
        int status = run_child(probe, true);

        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                print_error("probe failed: %s %d\n", WIFEXITED(status) ? "exit (line & 0xff)" : "signal",
                            WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
}

/* 0 if the raw call failed with the expected errno, else the caller's line. */
#define EXPECT_ERRNO(call, err)                                              \
        do {                                                                 \
                errno = 0;                                                   \
                long _r = (call);                                            \
                if (_r != -1 || errno != (err))                              \
                        return __LINE__;                                     \
        } while (0)

static void test_blob_shape(void **state) {
        assert_non_null(bpf);
        assert_true(bpf_len > 0);
        assert_int_equal(bpf_len % 8, 0);
        assert_true(bpf_len <= 64 * 1024);
        /* The kernel refuses more than BPF_MAXINSNS classic instructions. */
        assert_true(bpf_len / 8 <= BPF_MAXINSNS);
}

static int probe_keyctl(void) {
        EXPECT_ERRNO(syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0), EPERM);
        EXPECT_ERRNO(syscall(SYS_add_key, "user", "x", "y", 1, KEY_SPEC_SESSION_KEYRING), EPERM);
        return 0;
}
static void test_keyctl(void **state) {
        assert_probe_ok(probe_keyctl);
}

static int probe_io_uring(void) {
        struct io_uring_params p = {};

        EXPECT_ERRNO(syscall(SYS_io_uring_setup, 1, &p), EPERM);
        return 0;
}
static void test_io_uring(void **state) {
        assert_probe_ok(probe_io_uring);
}

static int probe_socket(void) {
        int fd, pair[2];

        EXPECT_ERRNO(syscall(SYS_socket, AF_INET, SOCK_STREAM, 0), EAFNOSUPPORT);
        EXPECT_ERRNO(syscall(SYS_socket, AF_INET6, SOCK_DGRAM, 0), EAFNOSUPPORT);
        EXPECT_ERRNO(syscall(SYS_socket, AF_NETLINK, SOCK_RAW, 0), EAFNOSUPPORT);
        /* Upper bits set: the kernel would read AF_INET (an int); the filter must still deny. */
        EXPECT_ERRNO(syscall(SYS_socket, (1UL << 32) | AF_INET, SOCK_STREAM, 0), EAFNOSUPPORT);
        EXPECT_ERRNO(syscall(SYS_socketpair, AF_INET, SOCK_STREAM, 0, pair), EAFNOSUPPORT);

        fd = (int) syscall(SYS_socket, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return __LINE__;
        close(fd);
        if (syscall(SYS_socketpair, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) < 0)
                return __LINE__;
        return 0;
}
static void test_socket(void **state) {
        assert_probe_ok(probe_socket);
}

static int probe_unshare(void) {
        EXPECT_ERRNO(syscall(SYS_unshare, CLONE_NEWUSER), EPERM);
        EXPECT_ERRNO(syscall(SYS_unshare, CLONE_NEWNS), EPERM);
        EXPECT_ERRNO(syscall(SYS_setns, 0, 0), EPERM);
        return 0;
}
static void test_unshare(void **state) {
        assert_probe_ok(probe_unshare);
}

static int probe_clone_ns(void) {
        static const unsigned long flags[] = {
                CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWUTS, CLONE_NEWIPC,
                CLONE_NEWCGROUP, CLONE_NEWNS | CLONE_NEWUSER,
        };

        for (size_t i = 0; i < ELEMENTSOF(flags); i++) {
                /* If the filter let it through, the new child must not run the rest of the probe. */
                long r = syscall(SYS_clone, flags[i] | SIGCHLD, 0, 0, 0, 0);
                if (r == 0)
                        _exit(99);
                if (r > 0) {
                        (void) waitpid((pid_t) r, NULL, 0);
                        return __LINE__;
                }
                if (errno != EPERM)
                        return __LINE__;
        }
        return 0;
}
static void test_clone_namespaces(void **state) {
        assert_probe_ok(probe_clone_ns);
}

static int probe_clone3(void) {
        struct clone_args args = { .exit_signal = SIGCHLD };
        long r = syscall(SYS_clone3, &args, sizeof(args));

        if (r == 0)
                _exit(99);
        if (r > 0) {
                (void) waitpid((pid_t) r, NULL, 0);
                return __LINE__;
        }
        return errno == ENOSYS ? 0 : __LINE__;
}
static void test_clone3(void **state) {
        assert_probe_ok(probe_clone3);
}

static void *thread_main(void *p) {
        return p;
}

/* Plain fork() and threads still work: glibc falls back from clone3 to clone. */
static int probe_fork_and_threads(void) {
        pthread_t t;
        void *ret = NULL;
        int status;
        pid_t pid;

        pid = fork();
        if (pid < 0)
                return __LINE__;
        if (pid == 0)
                _exit(7);
        if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 7)
                return __LINE__;

        if (pthread_create(&t, NULL, thread_main, (void *) 0x1234) != 0)
                return __LINE__;
        if (pthread_join(t, &ret) != 0 || ret != (void *) 0x1234)
                return __LINE__;
        return 0;
}
static void test_fork_and_threads(void **state) {
        assert_probe_ok(probe_fork_and_threads);
}

static int probe_personality(void) {
        long r;

        EXPECT_ERRNO(syscall(SYS_personality, PER_LINUX32), EPERM);
        EXPECT_ERRNO(syscall(SYS_personality, PER_LINUX | ADDR_NO_RANDOMIZE), EPERM);
        EXPECT_ERRNO(syscall(SYS_personality, READ_IMPLIES_EXEC), EPERM);
        EXPECT_ERRNO(syscall(SYS_personality, 0xfffffffeUL), EPERM);
        EXPECT_ERRNO(syscall(SYS_personality, 0x80000000UL), EPERM);
        EXPECT_ERRNO(syscall(SYS_personality, 1UL << 32), EPERM);

        /* The query works and reports PER_LINUX; setting PER_LINUX works. */
        r = syscall(SYS_personality, 0xffffffffUL);
        if (r != PER_LINUX)
                return __LINE__;
        if (syscall(SYS_personality, PER_LINUX) != PER_LINUX)
                return __LINE__;
        return 0;
}
static void test_personality(void **state) {
        assert_probe_ok(probe_personality);
}

static int probe_getpid(void) {
        if (syscall(SYS_getpid) != getpid())
                return __LINE__;
        return getpid() > 0 ? 0 : __LINE__;
}
static void test_getpid(void **state) {
        assert_probe_ok(probe_getpid);
}

static int probe_ptrace(void) {
        EXPECT_ERRNO(syscall(SYS_ptrace, PTRACE_TRACEME, 0, 0, 0), EPERM);
        EXPECT_ERRNO(syscall(SYS_ptrace, PTRACE_ATTACH, getppid(), 0, 0), EPERM);
        EXPECT_ERRNO(syscall(SYS_process_vm_readv, getppid(), NULL, 0, NULL, 0, 0), EPERM);
        return 0;
}
static void test_ptrace(void **state) {
        assert_probe_ok(probe_ptrace);
}

static int probe_bpf(void) {
        EXPECT_ERRNO(syscall(SYS_bpf, 0, NULL, 0), EPERM);
        EXPECT_ERRNO(syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0), EPERM);
        EXPECT_ERRNO(syscall(SYS_userfaultfd, 0), EPERM);
        return 0;
}
static void test_bpf(void **state) {
        assert_probe_ok(probe_bpf);
}

static int probe_mount(void) {
        EXPECT_ERRNO(syscall(SYS_mount, "none", "/", "tmpfs", 0, NULL), EPERM);
        EXPECT_ERRNO(syscall(SYS_chroot, "/"), EPERM);
        EXPECT_ERRNO(syscall(SYS_fsopen, "tmpfs", 0), EPERM);
        EXPECT_ERRNO(syscall(SYS_open_by_handle_at, -1, NULL, 0), EPERM);
        return 0;
}
static void test_mount(void **state) {
        assert_probe_ok(probe_mount);
}

static int probe_ioctl(void) {
        int p[2], n = -1;
        char c = 'x';

        /* Denied before the kernel even looks at the fd; also with junk in the upper bits. */
        EXPECT_ERRNO(syscall(SYS_ioctl, 0, TIOCSTI, &c), EPERM);
        EXPECT_ERRNO(syscall(SYS_ioctl, 0, (1UL << 32) | TIOCSTI, &c), EPERM);
        EXPECT_ERRNO(syscall(SYS_ioctl, 0, TIOCLINUX, &c), EPERM);

        /* Every other ioctl is untouched. */
        if (pipe(p) < 0 || write(p[1], "ab", 2) != 2)
                return __LINE__;
        if (ioctl(p[0], FIONREAD, &n) < 0 || n != 2)
                return __LINE__;
        return 0;
}
static void test_ioctl(void **state) {
        assert_probe_ok(probe_ioctl);
}

/* The 32-bit entry point (int 0x80) with a 32-bit system call number must kill the process: the
 * filter's rules are for x86-64 numbers only. */
static int probe_int80(void) {
        long r = 20; /* __NR_getpid on i386 */

        __asm__ volatile("int $0x80" : "+a"(r) : : "memory");
        return 0;
}
static void test_foreign_arch(void **state) {
#if defined(__x86_64__)
        int status;

        /* Without the filter: is the i386 ABI there at all (IA32 emulation may be compiled out or
         * disabled, then int 0x80 is a SIGSEGV)? */
        status = run_child(probe_int80, false);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                skip();

        status = run_child(probe_int80, true);
        assert_true(WIFSIGNALED(status));
        assert_int_equal(WTERMSIG(status), SIGSYS);
#else
        skip();
#endif
}

/* x32 system call numbers (bit 30) arrive with the x86-64 audit arch and must not bypass the
 * rules: libseccomp sends them to the bad-arch action. */
static int probe_x32(void) {
        (void) syscall(0x40000000L | 250 /* keyctl */, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0);
        return 0;
}
static void test_x32(void **state) {
#if defined(__x86_64__)
        int status = run_child(probe_x32, true);

        assert_true(WIFSIGNALED(status));
        assert_int_equal(WTERMSIG(status), SIGSYS);
#else
        skip();
#endif
}

/* One system call, made raw in a fresh child, with or without a filter. */
typedef struct Outcome {
        long ret;
        int err;                /* errno if ret < 0, else 0 */
        bool killed;            /* the child died of a signal */
} Outcome;

static Outcome call_in_child(const uint8_t *b, size_t len, long nr, const long a[6]) {
        Outcome o = {};
        int p[2], status;
        pid_t pid;

        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        fflush(NULL);
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                Outcome c = {};

                if (b)
                        load_this_filter_or_die(b, len);
                errno = 0;
                c.ret = syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
                c.err = c.ret < 0 ? errno : 0;
                _exit(write(p[1], &c, sizeof(c)) == (ssize_t) sizeof(c) ? 0 : 202);
        }
        close(p[1]);
        if (read(p[0], &o, sizeof(o)) != (ssize_t) sizeof(o))
                o = (Outcome) { .killed = true };
        close(p[0]);
        assert_int_equal(waitpid(pid, &status, 0), pid);
        if (WIFSIGNALED(status))
                o.killed = true;
        return o;
}

#define SAME (-1)   /* allowed: the same outcome as without the filter */

typedef struct SyscallRow {
        const char *label;
        long nr;
        long args[6];
        int expect;  /* SAME, or the errno the filter answers */
} SyscallRow;

/* Arguments are chosen so that the call fails harmlessly (or does nothing) where the kernel gets
 * to run it: the unfiltered run of the SAME and ENOSYS rows is real. Numbers of calls newer than
 * the C library are literals: since 5.1 (424) every architecture but alpha numbers new calls alike. */
static const SyscallRow rows[] = {
        /* The allow-list: what the runtimes use, the kernel's own answer. */
        { "getpid",                     SYS_getpid,             {},                             SAME },
        { "read(-1)",                   SYS_read,               { -1, 0, 0 },                   SAME },
        { "write(-1)",                  SYS_write,              { -1, 0, 0 },                   SAME },
        { "close(-1)",                  SYS_close,              { -1 },                         SAME },
        { "openat(NULL)",               SYS_openat,             { AT_FDCWD, 0, 0 },             SAME },
        { "newfstatat(NULL)",           SYS_newfstatat,         { AT_FDCWD, 0, 0, 0 },          SAME },
        { "statx(NULL)",                SYS_statx,              { AT_FDCWD, 0, 0, 0, 0 },       SAME },
        { "faccessat2(NULL)",           SYS_faccessat2,         { AT_FDCWD, 0, 0, 0 },          SAME },
        { "getdents64(-1)",             SYS_getdents64,         { -1, 0, 0 },                   SAME },
        { "mmap(bad fd)",               SYS_mmap,               { 0, 4096, 1, 1, -1, 0 },       SAME },
        { "madvise(0, 0)",              SYS_madvise,            { 0, 0, 0 },                    SAME },
        { "futex(NULL)",                SYS_futex,              { 0, 0, 0, 0, 0, 0 },           SAME },
        { "rseq(NULL)",                 SYS_rseq,               { 0, 0, 0, 0 },                 SAME },
        { "pipe2(NULL)",                SYS_pipe2,              { 0, 0 },                       SAME },
        { "dup3(-1)",                   SYS_dup3,               { -1, -1, 0 },                  SAME },
        { "close_range(big)",           SYS_close_range,        { 1 << 30, 1 << 30, 0 },        SAME },
        { "epoll_create1(bad flags)",   SYS_epoll_create1,      { -1 },                         SAME },
        { "epoll_pwait2(-1)",           SYS_epoll_pwait2,       { -1, 0, 1, 0, 0, 0 },          SAME },
        { "eventfd2(bad flags)",        SYS_eventfd2,           { 0, -1 },                      SAME },
        { "timerfd_create(bad)",        SYS_timerfd_create,     { -1, 0 },                      SAME },
        { "inotify_init1(bad flags)",   SYS_inotify_init1,      { -1 },                         SAME },
        { "getrandom(0 bytes)",         SYS_getrandom,          { 0, 0, 0 },                    SAME },
        { "memfd_create(NULL)",         SYS_memfd_create,       { 0, 0 },                       SAME },
        { "copy_file_range(-1)",        SYS_copy_file_range,    { -1, 0, -1, 0, 1, 0 },         SAME },
        { "sendfile(-1)",               SYS_sendfile,           { -1, -1, 0, 1 },               SAME },
        { "sched_getaffinity(0 bytes)", SYS_sched_getaffinity,  { 0, 0, 0 },                    SAME },
        { "prlimit64(self, query)",     SYS_prlimit64,          { 0, RLIMIT_NOFILE, 0, 0 },     SAME },
        { "pidfd_open(bad flags)",      SYS_pidfd_open,         { 0, -1 },                      SAME },
        { "wait4(no child)",            SYS_wait4,              { -1, 0, 1 /* WNOHANG */, 0 },  SAME },
        { "kill(self, 0)",              SYS_kill,               { 0, 0 },                       SAME },
        { "prctl(PR_GET_DUMPABLE)",     SYS_prctl,              { 3 },                          SAME },
        { "uname(NULL)",                SYS_uname,              { 0 },                          SAME },
        { "sysinfo(NULL)",              SYS_sysinfo,            { 0 },                          SAME },
        { "capget(NULL)",               SYS_capget,             { 0, 0 },                       SAME },
        { "setuid(self)",               SYS_setuid,             { -1 },                         SAME },
        { "accept4(-1)",                SYS_accept4,            { -1, 0, 0, 0 },                SAME },
        { "restart_syscall",            SYS_restart_syscall,    {},                             SAME },
        /* Known-dangerous: EPERM, as before the allow-list. Never run without the filter. */
        { "keyctl",                     SYS_keyctl,             { 0, 0, 0, 0 },                 EPERM },
        { "add_key",                    SYS_add_key,            { 0, 0, 0, 0, 0 },              EPERM },
        { "bpf",                        SYS_bpf,                { 0, 0, 0 },                    EPERM },
        { "perf_event_open",            SYS_perf_event_open,    { 0, 0, -1, -1, 0 },            EPERM },
        { "userfaultfd",                SYS_userfaultfd,        { 0 },                          EPERM },
        { "io_uring_setup",             SYS_io_uring_setup,     { 1, 0 },                       EPERM },
        { "io_uring_enter",             SYS_io_uring_enter,     { -1, 0, 0, 0, 0, 0 },          EPERM },
        { "ptrace",                     SYS_ptrace,             { 0, 0, 0, 0 },                 EPERM },
        { "process_vm_writev",          SYS_process_vm_writev,  { 1, 0, 0, 0, 0, 0 },           EPERM },
        { "pidfd_getfd",                SYS_pidfd_getfd,        { -1, 0, 0 },                   EPERM },
        { "kcmp",                       SYS_kcmp,               { 1, 1, 0, 0, 0 },              EPERM },
        { "umount2",                    SYS_umount2,            { 0, 0 },                       EPERM },
        { "pivot_root",                 SYS_pivot_root,         { 0, 0 },                       EPERM },
        { "open_tree",                  SYS_open_tree,          { -1, 0, 0 },                   EPERM },
        { "move_mount",                 SYS_move_mount,         { -1, 0, -1, 0, 0 },            EPERM },
        { "mount_setattr",              SYS_mount_setattr,      { -1, 0, 0, 0, 0 },             EPERM },
        { "kexec_load",                 SYS_kexec_load,         { 0, 0, 0, 0 },                 EPERM },
        { "init_module",                SYS_init_module,        { 0, 0, 0 },                    EPERM },
        { "finit_module",               SYS_finit_module,       { -1, 0, 0 },                   EPERM },
        { "delete_module",              SYS_delete_module,      { 0, 0 },                       EPERM },
        { "reboot",                     SYS_reboot,             { 0, 0, 0, 0 },                 EPERM },
        { "swapon",                     SYS_swapon,             { 0, 0 },                       EPERM },
        { "name_to_handle_at",          SYS_name_to_handle_at,  { -1, 0, 0, 0, 0 },             EPERM },
        { "syslog",                     SYS_syslog,             { 10, 0, 0 },                   EPERM },
        { "fanotify_init",              SYS_fanotify_init,      { 0, 0 },                       EPERM },
        { "clock_settime",              SYS_clock_settime,      { 0, 0 },                       EPERM },
        { "sethostname",                SYS_sethostname,        { 0, 0 },                       EPERM },
        { "vhangup",                    SYS_vhangup,            {},                             EPERM },
        { "quotactl_fd",                SYS_quotactl_fd,        { -1, 0, 0, 0 },                EPERM },
#if defined(__x86_64__)
        { "iopl",                       SYS_iopl,               { 0 },                          EPERM },
        { "modify_ldt",                 SYS_modify_ldt,         { 0, 0, 0 },                    EPERM },
#endif
        /* Not on the allow-list: ENOSYS, what a kernel without them says. New calls first. */
        { "memfd_secret (447)",         447,                    { 0 },                          ENOSYS },
        { "futex_waitv (449)",          449,                    { 0, 0, 0, 0, 0 },              ENOSYS },
        { "cachestat (451)",            451,                    { -1, 0, 0, 0 },                ENOSYS },
        { "statmount (457)",            457,                    { 0, 0, 0, 0 },                 ENOSYS },
        { "listmount (458)",            458,                    { 0, 0, 0, 0 },                 ENOSYS },
        { "lsm_get_self_attr (459)",    459,                    { 0, 0, 0, 0 },                 ENOSYS },
        { "lsm_set_self_attr (460)",    460,                    { 0, 0, 0, 0 },                 ENOSYS },
        { "lsm_list_modules (461)",     461,                    { 0, 0, 0 },                    ENOSYS },
        { "mseal (462)",                462,                    { 0, 0, 0 },                    ENOSYS },
        { "getxattrat (464)",           464,                    { -1, 0, 0, 0, 0, 0 },          ENOSYS },
        { "open_tree_attr (467)",       467,                    { -1, 0, 0, 0, 0 },             ENOSYS },
        { "a number no kernel has yet", 1000,                   {},                             ENOSYS },
        { "io_setup",                   SYS_io_setup,           { 0, 0 },                       ENOSYS },
        { "io_submit",                  SYS_io_submit,          { 0, 0, 0 },                    ENOSYS },
        { "msgctl",                     SYS_msgctl,             { -1, 2 /* IPC_STAT */, 0 },    ENOSYS },
        { "shmctl",                     SYS_shmctl,             { -1, 2 /* IPC_STAT */, 0 },    ENOSYS },
        { "mq_open",                    SYS_mq_open,            { 0, 0, 0, 0 },                 ENOSYS },
        { "vmsplice",                   SYS_vmsplice,           { -1, 0, 0, 0 },                ENOSYS },
        { "splice",                     SYS_splice,             { -1, 0, -1, 0, 1, 0 },         ENOSYS },
        { "syncfs(-1)",                 SYS_syncfs,             { -1 },                         ENOSYS },
        { "seccomp(bad op)",            SYS_seccomp,            { -1, 0, 0 },                   ENOSYS },
        { "landlock_create_ruleset",    SYS_landlock_create_ruleset, { 0, 0, -1 },              ENOSYS },
        { "membarrier(bad)",            SYS_membarrier,         { -1, 0, 0 },                   ENOSYS },
        { "set_mempolicy(bad)",         SYS_set_mempolicy,      { -1, 0, 0 },                   ENOSYS },
        { "get_robust_list",            SYS_get_robust_list,    { 0, 0, 0 },                    ENOSYS },
        { "process_mrelease",           SYS_process_mrelease,   { -1, 0 },                      ENOSYS },
        { "pkey_alloc (node's row only)", SYS_pkey_alloc,       { -1, 0 },                      ENOSYS },
};

static void test_syscall_rows(void **state) {
        unsigned failed = 0;

        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                const SyscallRow *row = rows + i;
                Outcome f = call_in_child(bpf, bpf_len, row->nr, row->args);

                if (f.killed) {
                        print_error("%s: killed under the filter\n", row->label);
                        failed++;
                        continue;
                }
                if (row->expect == SAME) {
                        Outcome u = call_in_child(NULL, 0, row->nr, row->args);

                        if ((f.ret < 0) != (u.ret < 0) || f.err != u.err) {
                                print_error("%s: filtered %ld/%s, unfiltered %ld/%s\n", row->label,
                                            f.ret, strerror(f.err), u.ret, strerror(u.err));
                                failed++;
                        }
                        continue;
                }
                if (f.ret != -1 || f.err != row->expect) {
                        print_error("%s: expected %s, got %ld/%s\n", row->label, strerror(row->expect),
                                    f.ret, strerror(f.err));
                        failed++;
                        continue;
                }
                /* Diagnostic only: does this kernel have it at all (then the filter made the
                 * difference)? Denied rows are never run unfiltered. */
                if (row->expect == ENOSYS) {
                        Outcome u = call_in_child(NULL, 0, row->nr, row->args);

                        print_message("# %s: ENOSYS (the kernel alone: %s)\n", row->label,
                                      u.ret < 0 ? strerror(u.err) : "success");
                }
        }
        assert_int_equal(failed, 0);
}

/* The ioctl rules split the request space around TIOCSTI and TIOCLINUX into aligned blocks: every
 * other request must get the kernel's own answer, whatever the upper 32 bits hold (the kernel
 * reads an unsigned int), and the two must be EPERM with any upper bits. */
static void test_ioctl_boundaries(void **state) {
        uint64_t reqs[64 + 200];
        size_t n = 0;
        uint32_t x = 12345;
        unsigned failed = 0;
        int p[2];

        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        for (uint64_t d = 0; d < 4; d++) {
                reqs[n++] = TIOCSTI - 1 - d;
                reqs[n++] = TIOCSTI + 1 + d;
                reqs[n++] = TIOCLINUX - 1 - d;
                reqs[n++] = TIOCLINUX + 1 + d;
        }
        reqs[n++] = 0;
        reqs[n++] = UINT64_C(0xffffffff);
        reqs[n++] = UINT64_C(0x80000000);
        reqs[n++] = UINT64_C(0x7fffffff);
        reqs[n++] = FIONREAD;
        for (size_t i = 0; i < 200; i++) {
                x = x * 1103515245u + 12345u; /* a fixed sequence: reproducible failures */
                reqs[n++] = x;
        }

        for (size_t i = 0; i < n; i++)
                for (uint64_t hi = 0; hi < 2; hi++) {
                        uint64_t req = (hi << 32) | (reqs[i] & UINT64_C(0xffffffff));
                        long a[6] = { p[0], (long) req, 0 };
                        bool bad = (uint32_t) req == TIOCSTI || (uint32_t) req == TIOCLINUX;
                        Outcome f = call_in_child(bpf, bpf_len, SYS_ioctl, a), u;

                        if (bad) {
                                if (f.ret != -1 || f.err != EPERM) {
                                        print_error("ioctl %#" PRIx64 ": not EPERM\n", req);
                                        failed++;
                                }
                                continue;
                        }
                        /* A null argument: requests that would write through it fail with EFAULT
                         * on both sides rather than scribble. */
                        u = call_in_child(NULL, 0, SYS_ioctl, a);
                        if (f.killed || (f.ret < 0) != (u.ret < 0) || f.err != u.err) {
                                print_error("ioctl %#" PRIx64 ": filtered %ld/%s, unfiltered %ld/%s\n", req,
                                            f.ret, strerror(f.err), u.ret, strerror(u.err));
                                failed++;
                        }
                }
        for (uint64_t hi = 0; hi < 3; hi++) {
                long a[6] = { p[0], (long) ((hi << 32) | TIOCLINUX), 0 };
                Outcome f = call_in_child(bpf, bpf_len, SYS_ioctl, a);

                if (f.ret != -1 || f.err != EPERM)
                        failed++;
        }
        close(p[0]);
        close(p[1]);
        assert_int_equal(failed, 0);
}

#define STRV(...) ((const char *const[]) { __VA_ARGS__, NULL })

static bool in_list(const char *name, const char *const *l) {
        for (; *l; l++)
                if (streq(*l, name))
                        return true;
        return false;
}

static bool in_deny_table(const char *name) {
        const char *d;

        for (size_t i = 0; (d = seccomp_policy_denied(i, NULL)); i++)
                if (streq(d, name))
                        return true;
        return false;
}

/* Every row is a real system call name (of x86-64 or of the generic table aarch64 uses: a typo
 * would silently stay ENOSYS), has a reason, and appears once; no name is both allowed and
 * denied; deny rows answer EPERM, or ENOSYS for clone3 alone. */
static void test_tables(void **state) {
        const char *name, *why;
        size_t n = 0;
        int err;

        for (size_t i = 0; (name = seccomp_policy_allowed(i, &why)); i++, n++) {
                const char *other;

                if (seccomp_syscall_resolve_name_arch(SCMP_ARCH_X86_64, name) < 0 &&
                    seccomp_syscall_resolve_name_arch(SCMP_ARCH_AARCH64, name) < 0)
                        fail_msg("allow row '%s' is no system call of x86-64 or aarch64", name);
                assert_false(isempty(why));
                assert_false(in_deny_table(name));
                for (size_t k = i + 1; (other = seccomp_policy_allowed(k, NULL)); k++)
                        if (streq(name, other))
                                fail_msg("allow row '%s' twice", name);
                /* The ones checked by argument are no rows (a plain row would override them). */
                assert_false(in_list(name, STRV("clone", "clone3", "socket", "socketpair", "ioctl",
                                                "personality")));
        }
        assert_true(n > 100);

        for (size_t i = 0; (name = seccomp_policy_denied(i, &err)); i++) {
                if (seccomp_syscall_resolve_name_arch(SCMP_ARCH_X86_64, name) < 0 &&
                    seccomp_syscall_resolve_name_arch(SCMP_ARCH_AARCH64, name) < 0 &&
                    /* Removed from the kernel before libseccomp's tables began; denied for
                     * kernels that still have them. */
                    !streq(name, "umount"))
                        fail_msg("deny row '%s' is no system call of x86-64 or aarch64", name);
                assert_true(err == EPERM || (err == ENOSYS && streq(name, "clone3")));
        }
}

/* A language's extra calls are added; names the policy denies or checks arguments of are refused,
 * names libseccomp does not know are skipped. */
static void test_extra_allow(void **state) {
        static const char *const io[] = { "io_setup", "io_destroy", NULL };
        static const char *const bad[][2] = {
                { "keyctl", NULL }, { "ptrace", NULL }, { "clone", NULL }, { "ioctl", NULL },
                { "socket", NULL }, { "personality", NULL }, { "clone3", NULL }, { "", NULL },
        };
        static const char *const unknown[] = { "no_such_system_call", NULL };
        _cleanup_free_ uint8_t *b = NULL, *b2 = NULL;
        uint8_t *t = NULL;
        size_t len = 0, len2 = 0, tl;
        long a[6] = { 0, 0 };
        Outcome o;

        assert_int_equal(seccomp_policy_build(io, &b, &len), 0);
        o = call_in_child(b, len, SYS_io_setup, a);
        assert_false(o.killed);
        /* io_setup(0, NULL): the kernel's EINVAL (or EFAULT), no longer the filter's ENOSYS. */
        assert_true(o.ret == -1 && o.err != ENOSYS);

        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                t = NULL;
                assert_int_equal(seccomp_policy_build(bad[i], &t, &tl), -EPERM);
                assert_null(t);
        }

        assert_int_equal(seccomp_policy_build(unknown, &b2, &len2), 0);
        assert_int_equal(len2, bpf_len);
        assert_memory_equal(b2, bpf, bpf_len);

        assert_int_equal(seccomp_policy_build(NULL, NULL, &tl), -EINVAL);
}

/* Every language row compiles (else the daemon would not start), and a row's extras reach only
 * its own filter: node's pkey calls. */
static void test_language_filters(void **state) {
        const Language *l;

        for (size_t i = 0; (l = language_get(i)); i++) {
                _cleanup_free_ uint8_t *b = NULL;
                size_t len = 0;
                long a[6] = { 0, 0 };
                Outcome o;

                assert_int_equal(seccomp_policy_build(l->extra_syscalls, &b, &len), 0);
                assert_true(len / 8 <= BPF_MAXINSNS);

                bool wants_pkeys = false;

                for (const char *const *n = l->extra_syscalls; n && *n; n++)
                        wants_pkeys = wants_pkeys || streq(*n, "pkey_alloc");
                o = call_in_child(b, len, SYS_pkey_alloc, a);
                assert_false(o.killed);
                /* node and typescript (tsc and its output run on node) name it in their files. */
                assert_int_equal(wants_pkeys, streq(l->name, "node") || streq(l->name, "typescript"));
                if (wants_pkeys)
                        /* ENOSYS only if the kernel itself lacks pkeys: compare with no filter. */
                        assert_true(o.err != ENOSYS || call_in_child(NULL, 0, SYS_pkey_alloc, a).err == ENOSYS);
                else
                        assert_int_equal(o.err, ENOSYS);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_blob_shape),
                cmocka_unit_test(test_keyctl),
                cmocka_unit_test(test_io_uring),
                cmocka_unit_test(test_socket),
                cmocka_unit_test(test_unshare),
                cmocka_unit_test(test_clone_namespaces),
                cmocka_unit_test(test_clone3),
                cmocka_unit_test(test_fork_and_threads),
                cmocka_unit_test(test_personality),
                cmocka_unit_test(test_getpid),
                cmocka_unit_test(test_ptrace),
                cmocka_unit_test(test_bpf),
                cmocka_unit_test(test_mount),
                cmocka_unit_test(test_ioctl),
                cmocka_unit_test(test_foreign_arch),
                cmocka_unit_test(test_x32),
                cmocka_unit_test(test_syscall_rows),
                cmocka_unit_test(test_ioctl_boundaries),
                cmocka_unit_test(test_tables),
                cmocka_unit_test(test_extra_allow),
                cmocka_unit_test(test_language_filters),
        };

        return cmocka_run_group_tests(tests, setup, teardown);
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The filter is loaded for real, in forked children (NO_NEW_PRIVS makes that possible without
 * root), and each probe checks what the program would see. Probes use raw syscall() so that no
 * libc wrapper second-guesses the kernel's answer. */

#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif

#include <errno.h>
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
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "seccomp-policy.h"
#include "util.h"

static uint8_t *bpf;
static size_t bpf_len;

static int setup(void **state) {
        return seccomp_policy_build(&bpf, &bpf_len) < 0 ? -1 : 0;
}

static int teardown(void **state) {
        bpf = mfree(bpf);
        return 0;
}

static void load_filter_or_die(void) {
        struct sock_fprog prog = {
                .len = (unsigned short) (bpf_len / 8),
                .filter = (struct sock_filter *) bpf,
        };

        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                _exit(200);
        if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) < 0)
                _exit(201);
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
        };

        return cmocka_run_group_tests(tests, setup, teardown);
}

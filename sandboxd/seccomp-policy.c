/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* sandboxd's own system call filter. Default allow: the unit already runs with no capabilities,
 * NoNewPrivileges, private network/devices/IPC and a minimal root, so this filter only removes
 * kernel attack surface an unprivileged program could still reach, plus the few interfaces that
 * would let a program look behind the sandbox (namespaces, other processes, host clocks). Denials
 * are errno returns, not kills, so language runtimes that probe features degrade gracefully. */

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

/* Every call here returns EPERM. Grouped by why they are gone; names libseccomp does not know or
 * that do not exist on the native architecture are skipped (see add_deny()). */
static const char *const deny_eperm[] = {
        /* io_uring: a second system call interface that bypasses this very filter for the
         * operations it carries, and a steady source of kernel privilege escalations. */
        "io_uring_setup", "io_uring_enter", "io_uring_register",
        /* Kernel keyrings: shared kernel state, only partly namespaced, frequent CVEs. */
        "keyctl", "add_key", "request_key",
        /* eBPF and perf events: large JIT-backed kernel surfaces and side channels. */
        "bpf", "perf_event_open",
        /* userfaultfd makes kernel race conditions reliably winnable. */
        "userfaultfd",
        /* Reaching into other processes: sandbox-exec runs as the same uid as the program, and the
         * program must not read or steer it (or siblings). pidfd_getfd steals descriptors,
         * process_madvise/move_pages/migrate_pages act on another process's memory. */
        "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd", "process_madvise",
        "move_pages", "migrate_pages",
        /* Mounts and root changes: the file system view is systemd's to define. */
        "mount", "umount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree", "fsopen",
        "fsconfig", "fsmount", "fspick", "mount_setattr",
        /* Namespaces: creating or entering one is where most container escapes start (a user
         * namespace unlocks code paths otherwise reserved for root). */
        "unshare", "setns",
        /* Kernel code, machine state and system-wide accounting. */
        "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
        "create_module", "reboot", "swapon", "swapoff", "acct", "quotactl", "quotactl_fd",
        /* File handles bypass path-based access checks (the "shocker" container escape). */
        "open_by_handle_at", "name_to_handle_at",
        /* Kernel log, raw I/O ports, the x86 LDT, kernel profiling cookies. */
        "syslog", "iopl", "ioperm", "modify_ldt", "lookup_dcookie",
        /* fanotify can watch whole mounts and file systems. */
        "fanotify_init",
        /* Clocks and host identity are shared with the host. */
        "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "sethostname",
        "setdomainname",
        /* Terminal hangup: no terminal belongs to the program. */
        "vhangup",
        /* Obsolete interfaces no runtime uses but old bugs live in. */
        "uselib", "_sysctl", "sysfs", "ustat", "nfsservctl", "get_kernel_syms", "query_module",
};

/* clone(2) flags that create namespaces. CLONE_NEWTIME is not here: in clone(2) (not clone3) bit
 * 0x80 belongs to the exit signal field, and clone(2) cannot create a time namespace anyway. */
static const uint64_t clone_ns_flags[] = {
        CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID,
        CLONE_NEWNET,
};

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

static int add_deny(scmp_filter_ctx ctx, const char *name, int error) {
        int nr = resolve(name);

        if (nr < 0)
                return 0; /* see resolve() */
        return seccomp_rule_add(ctx, SCMP_ACT_ERRNO(error), nr, 0);
}

/* personality(2): allow only PER_LINUX (0) and the query value 0xffffffff. libseccomp refuses two
 * comparisons on the same argument in one rule, so "a0 ∉ {0, 0xffffffff}" is written as a union of
 * rules each with a single masked comparison: a0 > 0xffffffff, plus the interval [1, 0xfffffffe]
 * split into power-of-two aligned blocks ((a0 & ~(size-1)) == start). The comparison is on all
 * 64 bits while the kernel truncates to unsigned int: that only ever denies more (e.g. 1<<32,
 * which the kernel would read as 0), never less. */
static int add_personality_rules(scmp_filter_ctx ctx) {
        int nr = resolve("personality"), r;
        uint64_t start = 1, end = UINT64_C(0xfffffffe); /* inclusive interval to deny */

        if (nr < 0)
                return 0;

        r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 1,
                             SCMP_A0(SCMP_CMP_GT, UINT64_C(0xffffffff)));
        if (r < 0)
                return r;

        while (start <= end) {
                uint64_t size = 1;

                /* The largest aligned block that starts at 'start' and stays within the interval. */
                while ((start & (size * 2 - 1)) == 0 && start + size * 2 - 1 <= end)
                        size *= 2;
                while (start & (size - 1))
                        size /= 2;

                r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 1,
                                     SCMP_A0(SCMP_CMP_MASKED_EQ, ~(size - 1), start));
                if (r < 0)
                        return r;
                start += size;
        }
        return 0;
}

static int build_filter(scmp_filter_ctx ctx) {
        int r, nr;

        /* A foreign architecture (the i386 int 0x80 entry, or anything else the kernel may accept)
         * would bypass every rule below, which are written for native numbers only. libseccomp also
         * sends x32 numbers (nr | 0x40000000) of the native x86-64 arch to this action. */
        r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
        if (r < 0)
                return r;

        for (size_t i = 0; i < ELEMENTSOF(deny_eperm); i++) {
                r = add_deny(ctx, deny_eperm[i], EPERM);
                if (r < 0)
                        return r;
        }

        /* clone3 passes its flags in memory, which a classic BPF filter cannot read. ENOSYS makes
         * glibc (and every other libc) fall back to clone(2), whose flags are a register. */
        r = add_deny(ctx, "clone3", ENOSYS);
        if (r < 0)
                return r;

        /* clone(2) creating any namespace. The kernel uses the low 32 bits of the flags, and each
         * flag is a low bit, so a masked compare on the full register cannot be side-stepped. */
        nr = resolve("clone");
        if (nr >= 0)
                for (size_t i = 0; i < ELEMENTSOF(clone_ns_flags); i++) {
                        r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 1,
                                             SCMP_A0(SCMP_CMP_MASKED_EQ, clone_ns_flags[i],
                                                     clone_ns_flags[i]));
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
                r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), nr, 1,
                                     SCMP_A0(SCMP_CMP_NE, AF_UNIX));
                if (r < 0)
                        return r;
        }

        /* Execution domains other than Linux change syscall semantics (and READ_IMPLIES_EXEC or
         * ADDR_NO_RANDOMIZE weaken the program's own hardening). */
        r = add_personality_rules(ctx);
        if (r < 0)
                return r;

        /* Injecting terminal input or poking the console: no terminal should ever be reachable,
         * but if one leaked in it must not be usable to type commands into someone's shell. The
         * request is an unsigned int, so only the low 32 bits are compared. */
        nr = resolve("ioctl");
        if (nr >= 0) {
                static const uint64_t bad_ioctls[] = { TIOCSTI, TIOCLINUX };

                for (size_t i = 0; i < ELEMENTSOF(bad_ioctls); i++) {
                        r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 1,
                                             SCMP_A1(SCMP_CMP_MASKED_EQ, UINT64_C(0xffffffff),
                                                     bad_ioctls[i]));
                        if (r < 0)
                                return r;
                }
        }

        return 0;
}

int seccomp_policy_build(uint8_t **ret, size_t *ret_len) {
        _cleanup_(seccomp_releasep) scmp_filter_ctx ctx = NULL;
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ uint8_t *buf = NULL;
        struct stat st;
        ssize_t n;
        int r;

        if (!ret || !ret_len)
                return -EINVAL;

        /* seccomp_init() adds only the native architecture. */
        ctx = seccomp_init(SCMP_ACT_ALLOW);
        if (!ctx)
                return -ENOMEM;

        /* A binary search over system call numbers instead of a linear list: every system call
         * the program makes runs this filter. Only a performance hint, so failure is ignored. */
        (void) seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);

        r = build_filter(ctx);
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

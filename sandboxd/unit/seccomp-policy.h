/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* sandboxd's own system call filter, compiled once by the daemon (libseccomp) into a classic BPF
 * program that sandbox-exec loads with prctl(PR_SET_SECCOMP) in the child right before exec.
 * Compiling per unit (systemd's SystemCallFilter=) costs ~17 ms per start; loading costs ~0.
 *
 * Default deny: a system call the allow-list does not name fails with ENOSYS, as on a kernel that
 * lacks it; the known-dangerous ones fail with EPERM (see seccomp-policy.c). */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Build the filter for the native architecture: the common allow-list plus extra_allow, a
 * NULL-terminated list of further system call names (a language row's Language.extra_syscalls), or
 * NULL. A name libseccomp does not know, or that does not exist on this architecture, is skipped
 * (it stays ENOSYS). An extra name that the policy denies or only allows with argument checks is
 * refused with -EPERM: a language row must not reopen them. *ret is malloc'ed: an array of
 * struct sock_filter (8 bytes each), *ret_len its size in bytes. 0 or -errno. */
int seccomp_policy_build(const char *const *extra_allow, uint8_t **ret, size_t *ret_len);
/* The same; inet: socket(2) may make AF_INET and AF_INET6 sockets too (a run with network, whose
 * namespace holds only lo and the egress proxy's listening socket). */
int seccomp_policy_build_ex(const char *const *extra_allow, bool inet, uint8_t **ret, size_t *ret_len);

/* The tables, for tests and documentation: row i of the allow-list (NULL past the end), with the
 * one-line reason it is there in *ret_why. Calls allowed only with argument checks (clone, ioctl,
 * personality, socket, socketpair) are not rows of it. */
const char *seccomp_policy_allowed(size_t i, const char **ret_why);
/* Row i of the deny table (NULL past the end): the errno it returns in *ret_errno. */
const char *seccomp_policy_denied(size_t i, int *ret_errno);

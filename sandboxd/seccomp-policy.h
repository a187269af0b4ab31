/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* sandboxd's own system call filter, compiled once by the daemon (libseccomp) into a classic BPF
 * program that sandbox-exec loads with prctl(PR_SET_SECCOMP) in the child right before exec.
 * Compiling per unit (systemd's SystemCallFilter=) costs ~17 ms per start; loading costs ~0. */

#include <stddef.h>
#include <stdint.h>

/* Build the filter for the native architecture. *ret is malloc'ed: an array of
 * struct sock_filter (8 bytes each), *ret_len its size in bytes. 0 or -errno. */
int seccomp_policy_build(uint8_t **ret, size_t *ret_len);

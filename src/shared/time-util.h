/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Time units, named (systemd's time-util.h spells them the same way): sandboxd counts in
 * microseconds (sd-event, systemd's *USec properties), requests and results in milliseconds, the
 * configuration in seconds, cgroup v1's cpuacct in nanoseconds. Header only and libc only, so
 * sandbox-exec uses it too. */

#include <stdint.h>
#include <sys/time.h>
#include <time.h>

#define MSEC_PER_SEC  UINT64_C(1000)
#define USEC_PER_SEC  UINT64_C(1000000)
#define USEC_PER_MSEC UINT64_C(1000)
#define NSEC_PER_SEC  UINT64_C(1000000000)
#define NSEC_PER_MSEC UINT64_C(1000000)
#define NSEC_PER_USEC UINT64_C(1000)

static inline uint64_t timespec_to_usec(const struct timespec *ts) {
        return (uint64_t) ts->tv_sec * USEC_PER_SEC + (uint64_t) ts->tv_nsec / NSEC_PER_USEC;
}

static inline uint64_t timeval_to_usec(const struct timeval *tv) {
        return (uint64_t) tv->tv_sec * USEC_PER_SEC + (uint64_t) tv->tv_usec;
}

/* Whole milliseconds for poll() and the like: rounded up, so a wait never ends early. */
static inline uint64_t usec_to_msec_up(uint64_t usec) {
        return usec / USEC_PER_MSEC + (usec % USEC_PER_MSEC != 0);
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "time-util.h"
#include "util.h"

static void test_constants(_unused_ void **state) {
        static const struct {
                const char *name;
                uint64_t value, want;
        } rows[] = {
                { "MSEC_PER_SEC",  MSEC_PER_SEC,  1000 },
                { "USEC_PER_SEC",  USEC_PER_SEC,  1000 * 1000 },
                { "USEC_PER_MSEC", USEC_PER_MSEC, 1000 },
                { "NSEC_PER_SEC",  NSEC_PER_SEC,  1000 * 1000 * 1000 },
                { "NSEC_PER_MSEC", NSEC_PER_MSEC, 1000 * 1000 },
                { "NSEC_PER_USEC", NSEC_PER_USEC, 1000 },
                /* and consistent with each other */
                { "USEC_PER_MSEC * MSEC_PER_SEC", USEC_PER_MSEC * MSEC_PER_SEC, USEC_PER_SEC },
                { "NSEC_PER_USEC * USEC_PER_SEC", NSEC_PER_USEC * USEC_PER_SEC, NSEC_PER_SEC },
                { "NSEC_PER_USEC * USEC_PER_MSEC", NSEC_PER_USEC * USEC_PER_MSEC, NSEC_PER_MSEC },
        };

        for (size_t i = 0; i < ELEMENTSOF(rows); i++)
                if (rows[i].value != rows[i].want) {
                        print_error("%s = %" PRIu64 ", want %" PRIu64 "\n", rows[i].name, rows[i].value,
                                    rows[i].want);
                        fail();
                }
        /* 64-bit wide, whatever they are multiplied with: an hour of nanoseconds does not wrap. */
        assert_int_equal(sizeof(USEC_PER_SEC), sizeof(uint64_t));
        assert_true(3600 * NSEC_PER_SEC > UINT32_MAX);
}

static void test_timespec_timeval(_unused_ void **state) {
        static const struct {
                time_t sec;
                long nsec;
                uint64_t usec;
        } rows[] = {
                { 0, 0, 0 },
                { 0, 999, 0 },           /* below a microsecond: truncated */
                { 0, 1000, 1 },
                { 1, 0, 1000000 },
                { 1, 999999999, 1999999 },
                { 1764500000, 123456789, UINT64_C(1764500000123456) },
        };

        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                struct timespec ts = { .tv_sec = rows[i].sec, .tv_nsec = rows[i].nsec };
                struct timeval tv = { .tv_sec = rows[i].sec, .tv_usec = rows[i].nsec / 1000 };

                assert_int_equal(timespec_to_usec(&ts), rows[i].usec);
                assert_int_equal(timeval_to_usec(&tv), rows[i].usec);
        }
}

static void test_usec_to_msec_up(_unused_ void **state) {
        static const struct {
                uint64_t usec, msec;
        } rows[] = {
                { 0, 0 },
                { 1, 1 },
                { 999, 1 },
                { 1000, 1 },
                { 1001, 2 },
                { 2500000, 2500 },
                { UINT64_MAX, UINT64_MAX / 1000 + 1 },  /* no wrap at the top */
        };

        for (size_t i = 0; i < ELEMENTSOF(rows); i++)
                if (usec_to_msec_up(rows[i].usec) != rows[i].msec) {
                        print_error("usec_to_msec_up(%" PRIu64 ") = %" PRIu64 ", want %" PRIu64 "\n", rows[i].usec,
                                    usec_to_msec_up(rows[i].usec), rows[i].msec);
                        fail();
                }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_constants),
                cmocka_unit_test(test_timespec_timeval),
                cmocka_unit_test(test_usec_to_msec_up),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "api/bus-budget.h"
#include "util.h"

/* The D-Bus API's budgets row by row: the counters, the maxima, the answer. */

static void test_call_admit(_unused_ void **state) {
        static const struct {
                const char *name;
                unsigned n_calls, calls_max, n_sender, sender_max;
                BusCallAdmit want;
        } rows[] = {
                { "nothing held",                          0, 4096,  0, 64, BUS_CALL_ADMIT },
                { "the sender one below its maximum",     63, 4096, 63, 64, BUS_CALL_ADMIT },
                { "the sender at its maximum",            64, 4096, 64, 64, BUS_CALL_SENDER_FULL },
                { "the sender over it (maximum lowered)", 90, 4096, 90, 64, BUS_CALL_SENDER_FULL },
                { "others hold many, the sender few",   4000, 4096,  3, 64, BUS_CALL_ADMIT },
                { "all at the maximum, the sender none", 4096, 4096, 0, 64, BUS_CALL_ALL_FULL },
                { "all full is named before the sender", 4096, 4096, 64, 64, BUS_CALL_ALL_FULL },
                { "a maximum of one",                      1, 4096,  1,  1, BUS_CALL_SENDER_FULL },
                { "a maximum of one, another sender",      1, 4096,  0,  1, BUS_CALL_ADMIT },
        };

        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                BusCallAdmit got = bus_call_admit(rows[i].n_calls, rows[i].calls_max, rows[i].n_sender,
                                                  rows[i].sender_max);
                if (got != rows[i].want)
                        fail_msg("%s: got %d, want %d", rows[i].name, got, rows[i].want);
        }
}

static void test_interactive_admit(_unused_ void **state) {
        static const struct {
                const char *name;
                unsigned n_interactive, interactive_max, n_user, user_max;
                BusInteractiveAdmit want;
        } rows[] = {
                { "none in flight",                          0, 8, 0, 2, BUS_INTERACTIVE_ADMIT },
                { "the uid's first besides another's",       1, 8, 0, 2, BUS_INTERACTIVE_ADMIT },
                { "the uid's second",                        1, 8, 1, 2, BUS_INTERACTIVE_ADMIT },
                { "the uid's third",                         2, 8, 2, 2, BUS_INTERACTIVE_USER_FULL },
                { "another uid while one holds its two",     2, 8, 0, 2, BUS_INTERACTIVE_ADMIT },
                { "all eight taken by others",               8, 8, 0, 2, BUS_INTERACTIVE_ALL_FULL },
                { "all taken and the uid at its maximum",    8, 8, 2, 2, BUS_INTERACTIVE_USER_FULL },
                { "one below all",                           7, 8, 1, 2, BUS_INTERACTIVE_ADMIT },
                { "per uid above all (ineffective)",         8, 8, 3, 32, BUS_INTERACTIVE_ALL_FULL },
                { "a budget of one",                         1, 1, 1, 1, BUS_INTERACTIVE_USER_FULL },
        };

        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                BusInteractiveAdmit got = bus_interactive_admit(rows[i].n_interactive, rows[i].interactive_max,
                                                                rows[i].n_user, rows[i].user_max);
                if (got != rows[i].want)
                        fail_msg("%s: got %d, want %d", rows[i].name, got, rows[i].want);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_call_admit),
                cmocka_unit_test(test_interactive_admit),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The D-Bus API's budgets of calls, as pure decisions over counters bus-api.c keeps: what one
 * connection may hold before anyone knows who it is, and how many polkit checks may wait for a
 * human at an authentication agent. No I/O; tests/unit/test-bus-budget.c checks every row. */

typedef enum BusCallAdmit {
        BUS_CALL_ADMIT,
        BUS_CALL_ALL_FULL,          /* the calls of all callers together are at their maximum */
        BUS_CALL_SENDER_FULL,       /* this connection (unique name) holds its maximum */
} BusCallAdmit;

/* A call arriving: n_calls held in all, n_sender of them from its sender. Counted before the caller
 * is identified, so that one connection cannot fill the shared maximum with calls that wait for the
 * question who it is. */
BusCallAdmit bus_call_admit(unsigned n_calls, unsigned calls_max, unsigned n_sender, unsigned sender_max);

typedef enum BusInteractiveAdmit {
        BUS_INTERACTIVE_ADMIT,          /* ask polkit allowing interaction, holding a place of the budget */
        BUS_INTERACTIVE_ALL_FULL,       /* every place is taken: ask without interaction */
        BUS_INTERACTIVE_USER_FULL,      /* this uid holds its places: ask without interaction */
} BusInteractiveAdmit;

/* An authorization of a call that allows interactive authorization: n_interactive checks in flight in
 * all, n_user of them this uid's. A call over the budget is not queued behind the others: it is
 * checked without interaction at once, which answers at once (allowed, or refused when polkit
 * wants a password). */
BusInteractiveAdmit bus_interactive_admit(unsigned n_interactive, unsigned interactive_max, unsigned n_user,
                                          unsigned user_max);

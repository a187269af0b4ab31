/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "bus-budget.h"

BusCallAdmit bus_call_admit(unsigned n_calls, unsigned calls_max, unsigned n_sender, unsigned sender_max) {
        if (n_calls >= calls_max)
                return BUS_CALL_ALL_FULL;
        if (n_sender >= sender_max)
                return BUS_CALL_SENDER_FULL;
        return BUS_CALL_ADMIT;
}

BusInteractiveAdmit bus_interactive_admit(unsigned n_interactive, unsigned interactive_max, unsigned n_user,
                                          unsigned user_max) {
        /* The uid's own budget first: the error names what the caller itself can change. */
        if (n_user >= user_max)
                return BUS_INTERACTIVE_USER_FULL;
        if (n_interactive >= interactive_max)
                return BUS_INTERACTIVE_ALL_FULL;
        return BUS_INTERACTIVE_ADMIT;
}

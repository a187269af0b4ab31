/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "log.h"
#include "model/api-error.h"
#include "polkit.h"
#include "time-util.h"

#define POLKIT_DEST "org.freedesktop.PolicyKit1"
#define POLKIT_PATH "/org/freedesktop/PolicyKit1/Authority"
#define POLKIT_IFACE "org.freedesktop.PolicyKit1.Authority"
#define POLKIT_ALLOW_USER_INTERACTION 1u

typedef struct PolkitQuery {
        PolkitCallback cb;
        void *userdata;
        sd_bus *bus;             /* not a reference: the query is a slot of it */
        bool interactive;
        uint64_t deadline_usec;  /* CLOCK_MONOTONIC, no later than sd-bus's own for the call */
        char cancellation_id[48];
} PolkitQuery;

static void query_destroy(void *userdata) {
        free(userdata);
}

/* Our timeout ran out while polkitd waits for the agent: tell polkitd to give up too, so that it
 * dismisses the agent's dialog and frees its session. No answer is needed (nor waited for). */
static void query_cancel(PolkitQuery *q) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        int r;

        r = sd_bus_message_new_method_call(q->bus, &m, POLKIT_DEST, POLKIT_PATH, POLKIT_IFACE,
                                           "CancelCheckAuthorization");
        if (r >= 0)
                r = sd_bus_message_append(m, "s", q->cancellation_id);
        if (r >= 0)
                r = sd_bus_message_set_expect_reply(m, false);
        if (r >= 0)
                r = sd_bus_send(q->bus, m, NULL);
        if (r < 0)
                log_debug("polkit: cannot cancel the check %s: %s", q->cancellation_id, strerror(-r));
}

static int on_check_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        PolkitQuery *q = userdata;
        const sd_bus_error *e = sd_bus_message_get_error(reply);
        int authorized = 0, challenge = 0, r;

        /* sd-bus's own timeout (NoReply, as for a polkitd that went away without answering: the
         * deadline tells them apart). polkitd answers interactive checks only once the agent has. */
        if (e && q->interactive && sd_bus_error_has_name(e, SD_BUS_ERROR_NO_REPLY) &&
            now_usec(CLOCK_MONOTONIC) >= q->deadline_usec) {
                query_cancel(q);
                q->cb(0, POLKIT_AGENT_TIMEOUT, q->userdata);
                return 0;
        }
        if (e) {
                log_warning("polkit: CheckAuthorization failed: %s: %s", e->name, strna(e->message));
                q->cb(-sd_bus_error_get_errno(e) ?: -EIO, POLKIT_DENIED, q->userdata);
                return 0;
        }
        r = sd_bus_message_enter_container(reply, 'r', "bba{ss}");
        if (r >= 0)
                r = sd_bus_message_read(reply, "bb", &authorized, &challenge);
        if (r < 0) {
                log_warning("polkit: cannot parse the answer of CheckAuthorization: %s", strerror(-r));
                q->cb(r, POLKIT_DENIED, q->userdata);
                return 0;
        }
        q->cb(0, authorized ? POLKIT_ALLOWED : challenge ? POLKIT_CHALLENGE : POLKIT_DENIED, q->userdata);
        return 0;
}

int polkit_check_async(sd_bus *bus, sd_bus_message *call, uid_t sender_uid, const char *action,
                       uint64_t interactive_timeout_usec, PolkitCallback cb, void *userdata, sd_bus_slot **ret_slot) {
        static uint64_t serial = 0;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *msg = NULL;
        _cleanup_free_ PolkitQuery *q = NULL;
        sd_bus_slot *slot = NULL;
        const char *sender = sd_bus_message_get_sender(call);
        bool interactive = interactive_timeout_usec > 0;
        int r;

        if (sender_uid == 0)
                return 1;
        if (!sender)
                return -EBADMSG;

        q = calloc(1, sizeof(PolkitQuery));
        if (!q)
                return -ENOMEM;
        q->cb = cb;
        q->userdata = userdata;
        q->bus = bus;
        q->interactive = interactive;
        /* Unique among the checks of this connection, which is all polkitd requires of it. */
        q->deadline_usec = now_usec(CLOCK_MONOTONIC) + interactive_timeout_usec;
        if (interactive)
                (void) snprintf(q->cancellation_id, sizeof(q->cancellation_id), "sandboxd-%" PRIu64, ++serial);

        /* The subject is the bus name, not a pid: polkitd asks the bus for its credentials, so the
         * answer is about the connection that sent the call and cannot be raced by pid reuse. */
        r = sd_bus_message_new_method_call(bus, &msg, POLKIT_DEST, POLKIT_PATH, POLKIT_IFACE, "CheckAuthorization");
        if (r >= 0)
                r = sd_bus_message_append(msg, "(sa{sv})s", "system-bus-name", 1, "name", "s", sender, action);
        if (r >= 0)
                r = sd_bus_message_append(msg, "a{ss}us", 0, interactive ? POLKIT_ALLOW_USER_INTERACTION : 0u,
                                          q->cancellation_id);
        if (r >= 0)
                r = sd_bus_call_async(bus, &slot, msg, on_check_reply, q, interactive_timeout_usec);
        if (r < 0)
                return r;
        /* The slot owns the query from here: freed with it. */
        (void) sd_bus_slot_set_destroy_callback(slot, query_destroy);
        TAKE_PTR(q);
        *ret_slot = slot;
        return 0;
}

int polkit_verdict_to_error(int r, PolkitVerdict verdict, const char *action, sd_bus_error *error) {
        if (r >= 0 && verdict == POLKIT_AGENT_TIMEOUT)
                return sd_bus_error_setf(error, api_error_bus_name(API_ERROR_INTERACTIVE_AUTH_TIMED_OUT),
                                         "%s needs authentication, and the authentication agent did not answer in "
                                         "time (InteractiveAuthorizationTimeoutSec=)", action);
        if (r < 0)
                return sd_bus_error_setf(error, SD_BUS_ERROR_ACCESS_DENIED,
                                         "cannot ask polkit whether %s is allowed: %s", action, strerror(-r));
        if (verdict == POLKIT_CHALLENGE)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INTERACTIVE_AUTHORIZATION_REQUIRED,
                                         "%s needs authentication: call again allowing interactive authorization",
                                         action);
        return sd_bus_error_setf(error, SD_BUS_ERROR_ACCESS_DENIED, "polkit does not allow %s", action);
}

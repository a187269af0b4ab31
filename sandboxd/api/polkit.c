/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdlib.h>

#include "log.h"
#include "polkit.h"
#include "time-util.h"

#define POLKIT_DEST "org.freedesktop.PolicyKit1"
#define POLKIT_PATH "/org/freedesktop/PolicyKit1/Authority"
#define POLKIT_IFACE "org.freedesktop.PolicyKit1.Authority"
#define POLKIT_ALLOW_USER_INTERACTION 1u
/* An interactive check waits for a human typing a password; a plain one for polkitd only. */
#define POLKIT_INTERACTIVE_TIMEOUT_USEC (300 * USEC_PER_SEC)

typedef struct PolkitQuery {
        PolkitCallback cb;
        void *userdata;
} PolkitQuery;

static void query_destroy(void *userdata) {
        free(userdata);
}

static int on_check_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        PolkitQuery *q = userdata;
        const sd_bus_error *e = sd_bus_message_get_error(reply);
        int authorized = 0, challenge = 0, r;

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

int polkit_check_async(sd_bus *bus, sd_bus_message *call, uid_t sender_uid, const char *action, PolkitCallback cb,
                       void *userdata, sd_bus_slot **ret_slot) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *msg = NULL;
        _cleanup_free_ PolkitQuery *q = NULL;
        sd_bus_slot *slot = NULL;
        const char *sender = sd_bus_message_get_sender(call);
        bool interactive = sd_bus_message_get_allow_interactive_authorization(call) > 0;
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

        /* The subject is the bus name, not a pid: polkitd asks the bus for its credentials, so the
         * answer is about the connection that sent the call and cannot be raced by pid reuse. */
        r = sd_bus_message_new_method_call(bus, &msg, POLKIT_DEST, POLKIT_PATH, POLKIT_IFACE, "CheckAuthorization");
        if (r >= 0)
                r = sd_bus_message_append(msg, "(sa{sv})s", "system-bus-name", 1, "name", "s", sender, action);
        if (r >= 0)
                r = sd_bus_message_append(msg, "a{ss}us", 0, interactive ? POLKIT_ALLOW_USER_INTERACTION : 0u, "");
        if (r >= 0)
                r = sd_bus_call_async(bus, &slot, msg, on_check_reply, q, interactive ? POLKIT_INTERACTIVE_TIMEOUT_USEC : 0);
        if (r < 0)
                return r;
        /* The slot owns the query from here: freed with it. */
        (void) sd_bus_slot_set_destroy_callback(slot, query_destroy);
        TAKE_PTR(q);
        *ret_slot = slot;
        return 0;
}

int polkit_verdict_to_error(int r, PolkitVerdict verdict, const char *action, sd_bus_error *error) {
        if (r < 0)
                return sd_bus_error_setf(error, SD_BUS_ERROR_ACCESS_DENIED,
                                         "cannot ask polkit whether %s is allowed: %s", action, strerror(-r));
        if (verdict == POLKIT_CHALLENGE)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INTERACTIVE_AUTHORIZATION_REQUIRED,
                                         "%s needs authentication: call again allowing interactive authorization",
                                         action);
        return sd_bus_error_setf(error, SD_BUS_ERROR_ACCESS_DENIED, "polkit does not allow %s", action);
}

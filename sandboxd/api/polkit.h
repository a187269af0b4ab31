/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Asking polkit whether the sender of a D-Bus method call may do an action: an asynchronous
 * org.freedesktop.PolicyKit1.Authority.CheckAuthorization over sd-bus (no GLib, no libpolkit), with
 * the caller's unique bus name as the subject, as systemd's daemons do it. */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-bus.h>

typedef enum PolkitVerdict {
        POLKIT_DENIED,           /* org.freedesktop.DBus.Error.AccessDenied */
        POLKIT_CHALLENGE,        /* would be allowed after authentication, which the caller did not allow */
        POLKIT_ALLOWED,
        POLKIT_AGENT_TIMEOUT,    /* an interactive check ran out of its time: the authentication agent did
                                  * not answer (polkitd was told to cancel it) */
} PolkitVerdict;

/* r < 0: polkit could not be asked (not running, no answer); the call is then refused. */
typedef void (*PolkitCallback)(int r, PolkitVerdict verdict, void *userdata);

/* Ask whether call's sender, of effective uid sender_uid, may do action. Root is allowed without
 * asking (as systemd does): returns 1 and the callback is not called. Otherwise returns 0 and calls
 * cb once the answer is in, unless *ret_slot (the pending query) is unref'ed first. With
 * interactive_timeout_usec > 0, polkit may ask the caller's authentication agent for a password (the
 * caller decides whether the call allows that, ALLOW_INTERACTIVE_AUTHORIZATION, and whether the
 * budget has room), for at most that long; 0: a check without interaction, answered by polkitd
 * alone. */
int polkit_check_async(sd_bus *bus, sd_bus_message *call, uid_t sender_uid, const char *action,
                       uint64_t interactive_timeout_usec, PolkitCallback cb, void *userdata, sd_bus_slot **ret_slot);

/* The D-Bus error a refused call gets: AccessDenied, InteractiveAuthorizationRequired for a
 * challenge, io.sandboxd.Sandbox1.Error.InteractiveAuthorizationTimedOut for POLKIT_AGENT_TIMEOUT.
 * Returns the negative errno sd-bus vtables expect. */
int polkit_verdict_to_error(int r, PolkitVerdict verdict, const char *action, sd_bus_error *error);

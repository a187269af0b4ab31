/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Asking polkit whether the sender of a D-Bus method call may do an action: an asynchronous
 * org.freedesktop.PolicyKit1.Authority.CheckAuthorization over sd-bus (no GLib, no libpolkit), with
 * the caller's unique bus name as the subject, as systemd's daemons do it. */

#include <stdbool.h>
#include <sys/types.h>
#include <systemd/sd-bus.h>

typedef enum PolkitVerdict {
        POLKIT_DENIED,           /* org.freedesktop.DBus.Error.AccessDenied */
        POLKIT_CHALLENGE,        /* would be allowed after authentication, which the caller did not allow */
        POLKIT_ALLOWED,
} PolkitVerdict;

/* r < 0: polkit could not be asked (not running, no answer); the call is then refused. */
typedef void (*PolkitCallback)(int r, PolkitVerdict verdict, void *userdata);

/* Ask whether call's sender, of effective uid sender_uid, may do action. Root is allowed without
 * asking (as systemd does): returns 1 and the callback is not called. Otherwise returns 0 and calls
 * cb once the answer is in, unless *ret_slot (the pending query) is unref'ed first. Interactive
 * authentication is requested when the call allows it (ALLOW_INTERACTIVE_AUTHORIZATION). */
int polkit_check_async(sd_bus *bus, sd_bus_message *call, uid_t sender_uid, const char *action, PolkitCallback cb,
                       void *userdata, sd_bus_slot **ret_slot);

/* The D-Bus error a refused call gets: AccessDenied, or InteractiveAuthorizationRequired for a
 * challenge. Returns the negative errno sd-bus vtables expect. */
int polkit_verdict_to_error(int r, PolkitVerdict verdict, const char *action, sd_bus_error *error);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Asynchronous calls to systemd's manager (org.freedesktop.systemd1) over sd-bus. Nothing here
 * blocks: every call takes a callback that runs on the event loop. */

#include <systemd/sd-bus.h>

#include "unit-props.h"

#define SYSD_DEST "org.freedesktop.systemd1"
#define SYSD_PATH "/org/freedesktop/systemd1"
#define SYSD_MANAGER "org.freedesktop.systemd1.Manager"

/* Append a UnitProps list as a(sv) to m (the properties argument of StartTransientUnit). */
int sysd_append_props(sd_bus_message *m, const UnitProps *p);

int sysd_start_transient(sd_bus *bus, const char *name, const UnitProps *props, sd_bus_message_handler_t cb,
                         void *userdata, sd_bus_slot **ret_slot);

/* A tmpfs mount unit at where, size bounded. */
int sysd_start_tmpfs(sd_bus *bus, const char *name, const char *where, uint64_t size_bytes,
                     sd_bus_message_handler_t cb, void *userdata, sd_bus_slot **ret_slot);

/* Fire and forget (errors are logged by the generic reply handler). */
int sysd_stop_unit(sd_bus *bus, const char *name);
/* whom: "all" (the whole cgroup) or "main" (sandbox-exec only: SIGUSR1 asks it to cancel). */
int sysd_kill_unit(sd_bus *bus, const char *name, const char *whom, int sig);
int sysd_reset_failed_unit(sd_bus *bus, const char *name);
int sysd_unref_unit(sd_bus *bus, const char *name);

/* Object path of a unit. */
char *sysd_unit_path(const char *name);

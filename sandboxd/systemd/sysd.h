/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The one speaker of org.freedesktop.systemd1. Every call is asynchronous and answers through a
 * callback on the event loop; nothing blocks. One subscription to JobRemoved and PropertiesChanged
 * serves everybody: a caller watches a unit by name (before it starts it: watch first, then start, as
 * systemd-run does), and the signals about that unit reach that watcher alone, found by name.
 *
 * A SysdCall is the caller's handle of a call in flight: freeing it cancels the answer. The callback
 * runs once, with the call already done: it should free its handle (and may free anything else).
 * Calls made without a handle (ret NULL) answer once and clean up after themselves. */

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-bus.h>

#include "unit/unit-props.h"

typedef struct Sysd Sysd;
typedef struct SysdCall SysdCall;
typedef struct SysdWatch SysdWatch;

/* What a finished service unit tells: read through sysd_get_service_props(). */
typedef struct SysdServiceProps {
        char result[32];                 /* Result=, "" if not told */
        int32_t exec_main_code;          /* CLD_EXITED, CLD_KILLED, ... (0: not told) */
        int32_t exec_main_status;
        uint64_t exec_main_start_mono;   /* ExecMainStartTimestampMonotonic, usec; 0: not told */
        uint64_t exec_main_exit_mono;
        uint64_t cpu_usage_nsec;         /* CPUUsageNSec; UINT64_MAX: not accounted (cgroup v1) */
} SysdServiceProps;

/* r: 0, or a negative errno (-ENOENT: no such unit); error_message: the D-Bus error's, or NULL. */
typedef void (*sysd_done_t)(void *userdata, int r, const char *error_message);
typedef void (*sysd_state_done_t)(void *userdata, int r, const char *active_state);
typedef void (*sysd_props_done_t)(void *userdata, int r, const char *error_message, const SysdServiceProps *props);
/* One unit of a listing; the strings live as long as the callback runs. */
typedef struct SysdUnitInfo {
        const char *name, *active_state, *sub_state, *job_type;
} SysdUnitInfo;
typedef void (*sysd_list_done_t)(void *userdata, int r, const SysdUnitInfo *units, size_t n);

/* What a watcher of one unit hears. Either may be NULL. */
typedef struct SysdUnitEvents {
        void (*job_removed)(void *userdata, const char *unit, const char *result);
        void (*active_state)(void *userdata, const char *unit, const char *active_state);
} SysdUnitEvents;

/* Installs the matches and subscribes (asynchronously) on bus, which must be attached to the loop. */
int sysd_new(sd_bus *bus, Sysd **ret);
Sysd *sysd_free(Sysd *s);

/* Watch unit: -EEXIST if somebody watches it already. The watch ends with sysd_watch_free(). */
int sysd_watch(Sysd *s, const char *unit, const SysdUnitEvents *events, void *userdata, SysdWatch **ret);
SysdWatch *sysd_watch_free(SysdWatch *w);
/* Is unit watched (tracked by somebody in this process)? */
bool sysd_is_watched(Sysd *s, const char *unit);

SysdCall *sysd_call_free(SysdCall *c);

/* StartTransientUnit(name, "fail", props): done when systemd has queued the start job (its end is
 * the watcher's job_removed). */
int sysd_start_transient(Sysd *s, const char *name, const UnitProps *props, sysd_done_t cb, void *userdata,
                         SysdCall **ret);
/* The same with one auxiliary unit created in the same call (aux_name NULL: none): the egress
 * proxy's service with its socket, which systemd loads together (the socket names the service it
 * activates). */
int sysd_start_transient_aux(Sysd *s, const char *name, const UnitProps *props, const char *aux_name,
                             const UnitProps *aux_props, sysd_done_t cb, void *userdata, SysdCall **ret);
/* A tmpfs mount unit at where, size bounded, mode 0755 root, nosuid, nodev. */
int sysd_start_tmpfs(Sysd *s, const char *name, const char *where, uint64_t size_bytes, sysd_done_t cb,
                     void *userdata, SysdCall **ret);
/* StopUnit(name, "replace"); cb may be NULL (errors other than "no such unit" are logged). */
int sysd_stop_unit(Sysd *s, const char *name, sysd_done_t cb, void *userdata);
/* SetUnitProperties(name, runtime=true, props) on a running unit: its cgroup limits, at once. */
int sysd_set_unit_properties(Sysd *s, const char *name, const UnitProps *props, sysd_done_t cb, void *userdata,
                             SysdCall **ret);
/* KillUnit: whom "all" (the whole cgroup) or "main" (sandbox-exec only: SIGUSR1 asks it to cancel). */
int sysd_kill_unit(Sysd *s, const char *name, const char *whom, int sig);
int sysd_reset_failed_unit(Sysd *s, const char *name);
/* The same, with cb called with the answer (at stop: systemd refuses calls of a client gone by the
 * time it handles them, so the caller waits for the answers). */
int sysd_reset_failed_unit_cb(Sysd *s, const char *name, sysd_done_t cb, void *userdata);
int sysd_unref_unit(Sysd *s, const char *name);
/* The unit's ActiveState ("inactive" for a unit systemd does not know). */
int sysd_get_active_state(Sysd *s, const char *name, sysd_state_done_t cb, void *userdata, SysdCall **ret);
/* The Service properties of SysdServiceProps, read through one property table. */
int sysd_get_service_props(Sysd *s, const char *name, sysd_props_done_t cb, void *userdata, SysdCall **ret);
/* ListUnitsByPatterns([], patterns). */
int sysd_list_units(Sysd *s, const char *const *patterns, sysd_list_done_t cb, void *userdata);
/* Does systemd know the unit? Synchronous: only before the event loop runs (adoption at start). */
bool sysd_unit_exists_sync(Sysd *s, const char *name);
/* cb once systemd has handled every call sent before this one (it handles a connection's calls in
 * order, so its answer to a Ping sent last says so). For the exit: systemd checks a caller's
 * credentials when it handles a call, and refuses one whose caller has gone. */
int sysd_barrier(Sysd *s, sysd_done_t cb, void *userdata);

/* Append a UnitProps list as a(sv) to m (the properties argument of StartTransientUnit). */
int sysd_append_props(sd_bus_message *m, const UnitProps *p);

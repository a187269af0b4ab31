/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* A systemd for the state-machine tests: the interface of sandboxd/systemd/sysd.h, implemented in
 * memory on the test's sd-event loop. Linked instead of libsandboxd-systemd. Calls are answered from
 * the loop (a defer source), never inside the call, as over the bus. Mount units really mount a tmpfs
 * (the test runs in a mount namespace of its own), because the workspace code checks that its
 * workspace is one. Service units only record what they were given: the test plays sandbox-exec on
 * the control socket (FakeUnit.ctl_fd) and decides when and how the unit ends. */

#include <stdbool.h>
#include <systemd/sd-event.h>

#include "systemd/sysd.h"

typedef struct FakeUnit {
        char *name;
        char *where;                     /* a mount: its mount point */
        bool service;
        int ctl_fd;                      /* a service: sandbox-exec's end of the control socket */
        char active_state[16];           /* "active" once started, "inactive" once ended */
        SysdServiceProps props;          /* what GetAll answers once it ended */
        unsigned start_order;            /* 1, 2, ...: the order services were started in */
        unsigned n_kill_main_usr1, n_kill_all;
        bool stopped;
        struct FakeUnit *next;
} FakeUnit;

/* Behaviour of the next calls. */
typedef struct FakeSysdConfig {
        bool hold_mounts;                /* mount start jobs do not end until fake_sysd_job_removed() */
        bool hold_starts;                /* service start jobs do not end until fake_sysd_job_removed() */
        bool fail_starts;                /* StartTransientUnit of a service answers an error */
} FakeSysdConfig;

int fake_sysd_new(sd_event *e, Sysd **ret);
/* Units (their mounts unmounted), watches and unanswered calls go. */
void fake_sysd_free(Sysd *s);
FakeSysdConfig *fake_sysd_config(Sysd *s);
FakeUnit *fake_sysd_unit(Sysd *s, const char *name);
/* How many service units were started. */
unsigned fake_sysd_n_services(Sysd *s);
/* The start job of unit ended with result ("done", "failed", ...): the watcher hears it now. */
void fake_sysd_job_removed(Sysd *s, const char *name, const char *result);
/* The service ended: ActiveState= becomes state, GetAll answers props from now on, the watcher is
 * told (PropertiesChanged). */
void fake_sysd_unit_ended(Sysd *s, const char *name, const char *state, const SysdServiceProps *props);
/* Forget every unit (a restart of sandboxd keeps them: only for the end of a test). */
void fake_sysd_reset(Sysd *s);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The composition root: builds the daemon's parts in order (configuration, loop, store, buses,
 * systemd, the registries, the runner, the APIs), wires their events to each other, and owns the
 * signals, the reload and the periodic sweep. Only main.c includes this. */

#include "util.h"

typedef struct Manager Manager;

int manager_new(const char *config_dir, const char *languages_dir, const char *helper_override,
                const char *net_worker, const char *proxy, const char *environments_dir, Manager **ret);
Manager *manager_free(Manager *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(Manager *, manager_free);
int manager_run(Manager *m);

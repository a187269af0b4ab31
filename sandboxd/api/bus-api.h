/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The D-Bus API of docs/dbus-api.md: io.sandboxd.Sandbox1 on the system bus, authorized by polkit. */

#include "api-context.h"

#define BUS_API_NAME "io.sandboxd.Sandbox1"
#define BUS_API_PATH "/io/sandboxd/Sandbox1"
#define BUS_API_INTERFACE "io.sandboxd.Sandbox1.Manager"

typedef struct BusApi BusApi;

/* Publish the Manager object on m->bus and ask for the name (asynchronously: without the bus policy
 * file installed the name is refused, which is logged, and the HTTP API works on). */
int bus_api_new(ApiContext *ac, BusApi **ret);
/* Before the jobs are freed: drops every pending call and waiter. */
BusApi *bus_api_free(BusApi *a);
DEFINE_TRIVIAL_CLEANUP_FUNC(BusApi *, bus_api_free);

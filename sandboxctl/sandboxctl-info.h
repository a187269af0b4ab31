/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* languages, health and nodes: what the daemon runs, whether it is up, and the nodes of the store's
 * node registry (from GET /v1/health). */

#include <stddef.h>

#include "sandboxctl-json.h"

/* GET /v1/health as the client reads it (status required, the rest where the daemon gives it). */
typedef struct CtlHealth {
        CtlString status, version;
        CtlInteger running, queued, slots, queue_max, finished;
} CtlHealth;

/* 0 with *ret filled (its strings point into *ret_answer), or the exit status to end with. */
int health_fetch(CtlHealth *ret, json_object **ret_answer);

int verb_languages(char **args, size_t n_args);
int verb_health(char **args, size_t n_args);
int verb_nodes(char **args, size_t n_args);

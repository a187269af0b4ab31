/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What the two APIs (HTTP: api.c, D-Bus: bus-api.c) and the admission they share (submit.c) reach:
 * the stages below them, each through its own interface, and the two things only the composition
 * root can do, as callbacks. Filled once by the manager; nothing here is the Manager. */

#include "model/context.h"
#include "model/metrics.h"

typedef struct Node Node;
typedef struct Runner Runner;
typedef struct Sessions Sessions;
typedef struct Submission Submission;

typedef struct ApiOps {
        /* The gauges of GET /metrics, as they are now in memory (outbox: 0, the API reads it). */
        void (*gauges)(void *userdata, MetricsGauges *ret);
        /* Reload the configuration (Reload() on the bus); on error the old one stays. */
        int (*reload)(void *userdata);
} ApiOps;

typedef struct ApiContext {
        Context *ctx;
        Runner *runner;
        Sessions *sessions;
        Node *node;              /* this node in the store's node registry (run/node.h) */
        const ApiOps *ops;
        void *ops_data;
        Submission *submissions; /* admitted while the store answers (submit.c), newest first */
        unsigned n_submissions;
} ApiContext;

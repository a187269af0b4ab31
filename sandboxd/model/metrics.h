/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Counters and histograms of what sandboxd did, rendered in the Prometheus text exposition format
 * (version 0.0.4) for GET /metrics. Pure: no I/O, no clock; the manager feeds it finished
 * executions and passes the gauges in at render time.
 *
 * Cardinality is fixed at compile time: the language label comes from the language table, status
 * and error_type from their enums, and the histograms have no labels. Nothing a caller sends can
 * create a new series. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "execution.h"

/* Languages counted by name, in the order first seen (the rows of the tables in force, which
 * reloads change); a name beyond this many is counted as "other". */
#define METRICS_LANGUAGES_MAX 64
#define METRICS_LANGUAGE_NAME_MAX 32
#define METRICS_BUCKETS_MAX 16

/* "Not known" for metrics_observe()'s durations: no observation is made. */
#define METRICS_UNKNOWN UINT64_MAX

/* Values are integers in a fixed fraction of the base unit (µs for seconds, bytes for bytes), so
 * sums are exact and the rendering is deterministic: no float rounding in what the tests compare. */
typedef struct MetricsHistogram {
        const uint64_t *bounds;  /* upper bounds ("le"), ascending, in 1/scale of the unit; +Inf implied */
        size_t n_bounds;
        uint64_t scale;          /* USEC_PER_SEC for seconds (values in µs), 1 for bytes */
        uint64_t buckets[METRICS_BUCKETS_MAX + 1];  /* per bucket, not cumulative; [n_bounds] is +Inf */
        uint64_t count;
        uint64_t sum;            /* saturates at UINT64_MAX rather than wrapping */
} MetricsHistogram;

typedef enum MetricsHistogramId {
        METRICS_QUEUE_WAIT,      /* seconds: accepted → left the queue */
        METRICS_START_LATENCY,   /* seconds: accepted → unit running */
        METRICS_DURATION,        /* seconds: the execution's duration_ms */
        METRICS_PEAK_MEMORY,     /* bytes */
        METRICS_CPU,             /* seconds of CPU time */
        METRICS_FIRST_OUTPUT,    /* seconds: program start → first byte of output */
        METRICS_POOL_REFILL,     /* seconds: a warm unit asked for → ready to be claimed */
        _METRICS_HISTOGRAM_MAX,
} MetricsHistogramId;

typedef struct Metrics {
        /* [language][status][error_type]; language index METRICS_LANGUAGES_MAX is "other". */
        uint64_t executions[METRICS_LANGUAGES_MAX + 1][_EXEC_STATUS_MAX][_ERROR_TYPE_MAX];
        char language_names[METRICS_LANGUAGES_MAX][METRICS_LANGUAGE_NAME_MAX + 1];
        size_t n_language_names;
        MetricsHistogram histograms[_METRICS_HISTOGRAM_MAX];
        uint64_t store_errors;
        uint64_t pool_claims[_START_MAX];        /* executions started, by START_WARM / START_COLD */
        uint64_t tier_runs[2];                   /* final executions, standard tier [0] and strong [1] */
        uint64_t network_requests[_NET_DECISION_MAX];   /* the egress proxies' entries, by decision */
        uint64_t pool_retired[2];                /* warm units replaced before a claim: died, aged */
        uint64_t workspaces_recycled;    /* pool workspaces wiped and made ready again */
        uint64_t workspaces_replaced;    /* pool workspaces unmounted after a run instead */
        uint64_t dbus_reconnects;        /* always 0: sandboxd exits on bus loss (see metrics.c) */
} Metrics;

/* A node of the registry (run/node.h), for the cluster's gauges. Their number is bounded by the
 * store (STORE_NODES_MAX), their names by NodeName= of the nodes: no caller makes a series. */
typedef struct MetricsNode {
        const char *name;
        uint64_t lease_expires_usec;     /* CLOCK_REALTIME */
} MetricsNode;

/* The daemon's current state, read by the manager when /metrics is asked for. */
typedef struct MetricsGauges {
        uint64_t running;
        uint64_t queued;
        uint64_t slots;                  /* MaxConcurrent= */
        uint64_t queue_max;              /* MaxQueued= */
        uint64_t pool_ready;             /* workspaces mounted ahead, ready, mounting or being wiped */
        uint64_t pool_target;            /* WorkspacePool= */
        uint64_t outbox;                 /* callback deliveries pending in the store */
        uint64_t sessions;               /* sessions that exist (each holds a tmpfs) */
        uint64_t records_unsaved;        /* final records the store refused, held to be written again */
        /* The shared queue (several nodes): claimed here of what other nodes accepted, and accepted
         * here but claimed by another node, since start; shared: there is one (else not rendered). */
        bool shared_queue;
        uint64_t claimed_here, claimed_elsewhere;
        /* Warm units ready to be claimed, per row of the language table; and Size= of [Pool]. */
        uint64_t warm_ready[METRICS_LANGUAGES_MAX];
        bool warm_pooled[METRICS_LANGUAGES_MAX];     /* the language is in Languages= of [Pool] */
        uint64_t warm_target;
        /* The node registry: this node's name (NULL: none, and no sandboxd_node_info sample), the
         * nodes as last read, and the clock their leases are judged by. */
        const char *node_name;
        const MetricsNode *nodes;
        size_t n_nodes;
        uint64_t now_usec;
} MetricsGauges;

Metrics *metrics_new(void);
Metrics *metrics_free(Metrics *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(Metrics *, metrics_free);

/* Zero everything and set the bucket bounds. */
void metrics_init(Metrics *m);

/* A histogram observation, in 1/scale of the unit; a value above every bound lands in +Inf only. */
void metrics_histogram_observe(MetricsHistogram *h, uint64_t value);

/* One execution became final. queue_wait_usec and start_latency_usec are METRICS_UNKNOWN when the
 * execution never left the queue, never ran, or was adopted after a restart (the moment it was
 * accepted is gone with the previous process). Duration, CPU time and peak memory come from e, and
 * are observed only when e has them. m may be NULL. */
void metrics_observe(Metrics *m, const Execution *e, uint64_t queue_wait_usec, uint64_t start_latency_usec);

/* An execution's unit started: claimed from the warm pool or started cold. m may be NULL. */
void metrics_pool_claim(Metrics *m, ExecStartPath p);
/* A warm unit became ready this long after it was asked for. */
void metrics_pool_refill(Metrics *m, uint64_t usec);
/* A warm unit was replaced before any claim: it died (true) or aged out (false). */
void metrics_pool_retired(Metrics *m, bool died);

/* A write to the store failed. m may be NULL. */
void metrics_store_error(Metrics *m);
/* One entry of an egress proxy's log (issue 16). */
void metrics_network_request(Metrics *m, NetDecision d);
/* A pool workspace was wiped and is ready again / was unmounted instead (workspace.c). m may be NULL. */
void metrics_workspace_recycled(Metrics *m);
void metrics_workspace_replaced(Metrics *m);

/* The exposition text (NUL-terminated) into *ret. -ENOMEM. */
int metrics_render(const Metrics *m, const MetricsGauges *g, char **ret);

/* Label value escaping of the exposition format: backslash, double quote and newline. Returns
 * the number of bytes written (as snprintf: the length it would have, the output is truncated and
 * NUL-terminated when it does not fit). Exposed for the tests. */
size_t metrics_escape_label(const char *s, char *buf, size_t size);

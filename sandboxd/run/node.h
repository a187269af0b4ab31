/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* This node in the node registry of the store (issue 22, store.h's StoreNode): registered at start
 * under NodeName= (the machine id by default), its lease renewed every NodeHeartbeatSec= with the
 * executions it runs, given back when sandboxd stops cleanly. The registry is the groundwork of
 * several nodes sharing one queue: for now it only shows who is there (GET /v1/health, /metrics,
 * sandboxctl nodes) and lets the nodes take over the unfinished executions of one whose lease ran
 * out (NodeLostFn, runner_take_over()); work is still claimed by the node that took the submission.
 *
 * The other nodes' rows are read with every heartbeat and kept, so that the API answers from memory
 * (at most NodeHeartbeatSec= old) and never waits for the store in a handler. */

#include <stdint.h>

#include "model/context.h"
#include "store/store.h"

typedef struct Node Node;

/* How many executions hold a slot now (the runner's count), for the heartbeat. */
typedef uint64_t (*NodeRunningFn)(void *userdata);
/* Another node's lease has run out (seen at a heartbeat of this node, while its own lease is good):
 * its unfinished executions are to be taken over (runner_take_over()). Once per registration of
 * that node when it returns >= 0; again at the next heartbeat when it fails (the store). */
typedef int (*NodeLostFn)(void *userdata, const char *name);

/* Resolve the name (NodeName=, else the machine id), register, and start the heartbeat on
 * ctx->event. A store that refuses the registration is logged, and the heartbeat tries again;
 * only a name that cannot be found and allocation failures are errors. */
int node_new(Context *ctx, NodeRunningFn running, NodeLostFn lost, void *userdata, Node **ret);
/* The take-over of name's executions, asked after a NodeLostFn that returned >= 0, failed (the store):
 * asked again at the next heartbeat. */
void node_take_over_failed(Node *n, const char *name);
Node *node_free(Node *n);
DEFINE_TRIVIAL_CLEANUP_FUNC(Node *, node_free);

/* sandboxd stops cleanly with nothing left running: the heartbeat ends and the lease with it
 * (lease_expires = now), so the other nodes see this one gone at once. (With executions that go on
 * for the next start to adopt, the manager does not call it: the lease runs its course, and only if
 * this node does not come back within NodeLeaseSec= do the others take them over.) Idempotent. */
void node_leave(Node *n);

/* A reload, before c replaces the configuration in force: NodeName= takes effect at the next start
 * only, which is logged if it changed. NodeHeartbeatSec= and NodeLeaseSec= apply from the next
 * heartbeat on. */
void node_reload(Node *n, const Config *c);

const char *node_name(const Node *n);
/* 0: not registered (yet). */
uint64_t node_epoch(const Node *n);
/* CLOCK_REALTIME µs; 0 while not registered. */
uint64_t node_lease_expires_usec(const Node *n);
/* The registry as read at the last heartbeat (by name, at most STORE_NODES_MAX); NULL and 0 before
 * the first read. Valid until the next event of the loop. */
const StoreNode *node_registry(const Node *n, size_t *ret_n);
/* The registry's part of the gauges of GET /metrics; valid as long as node_registry()'s. */
void node_metrics_gauges(const Node *n, MetricsGauges *g);

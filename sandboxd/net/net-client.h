/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The daemon's side of the network worker (sandboxd-net, docs/ARCHITECTURE.md, "The network
 * worker"): it starts the worker as an unprivileged process on a socketpair, sends it requests and
 * reads their results as net-frame.h frames on the loop — never HTTP, never TLS. Several calls run
 * at once, one request id each. A worker that ends (or breaks the framing: it is killed then) is
 * started again after a backoff; the calls it had fail with NET_DONE_WORKER_LOST.
 *
 * A call's done callback runs exactly once unless the call is cancelled first, never from inside
 * net_call_start(); the call is freed right after it returns. */

#include <sys/types.h>
#include <systemd/sd-event.h>

#include "net-frame.h"
#include "util.h"

typedef struct NetClient NetClient;
typedef struct NetCall NetCall;

/* Response body bytes, in order. A negative return aborts the call: the done callback follows
 * with NET_DONE_ABORTED. */
typedef int (*net_call_data_t)(NetCall *call, const void *p, size_t n, void *userdata);
typedef void (*net_call_done_t)(NetCall *call, const NetDone *done, void *userdata);

/* Start the worker at path as uid/gid. Logs and fails if it cannot be started at all. */
int net_client_new(sd_event *event, const char *path, uid_t uid, gid_t gid, NetClient **ret);
/* Ends the worker; the calls in flight are dropped without their callbacks (their owners are gone
 * or going). */
NetClient *net_client_free(NetClient *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(NetClient *, net_client_free);

/* The worker's PID, or 0 while it is being restarted. */
pid_t net_client_pid(NetClient *c);

/* Send q (and body_len bytes of body). -ENOTCONN while the worker is restarting, -EINVAL for a
 * request net_request_format() refuses, -ENOMEM. */
int net_call_start(NetClient *c, const NetRequest *q, const void *body, net_call_data_t data,
                   net_call_done_t done, void *userdata, NetCall **ret);
/* Abort a call whose done callback has not run; no callback follows. NULL is a no-op. */
void net_call_cancel(NetCall *call);

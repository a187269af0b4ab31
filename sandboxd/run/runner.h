/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The runner: every job this instance knows (newest first), the queue that orders them (queue.h: one
 * FIFO per owner, round robin, a session's runs one at a time) and the slots they hold. It is the one
 * owner of jobs: it creates them, starts them when a slot is free, learns through JobEvents (job.h)
 * when one leaves the queue or becomes final, and drops the oldest finished beyond KeepFinished=.
 * Jobs never call it. Its interface is what a second backend (a queue shared by several nodes) would
 * implement; today the one backend is this process's memory plus the store for restarts. */

#include <stdbool.h>
#include <stdint.h>

#include "admission/queue.h"
#include "model/context.h"
#include "model/request.h"

typedef struct Job Job;
typedef struct Runner Runner;
typedef struct Session Session;
typedef struct Sessions Sessions;

typedef struct RunnerCounts {
        unsigned running;                /* holding a slot: preparing, starting, running, finishing */
        unsigned queued;
        unsigned jobs;                   /* in memory, final ones (KeepFinished=) included */
        uint64_t finished_total;         /* final since start (run here) */
        /* The shared queue: claimed here of what other nodes accepted, and accepted here but claimed
         * by another node, since start. */
        uint64_t claimed_here, claimed_elsewhere;
} RunnerCounts;

int runner_new(Context *ctx, Sessions *sessions, Runner **ret);
/* Frees every job (their waiters see them unfinished). */
Runner *runner_free(Runner *r);
DEFINE_TRIVIAL_CLEANUP_FUNC(Runner *, runner_free);

/* A new queued job from a validated request (takes req; its session, if any, exists: session.h).
 * Not started here: runner_dispatch() does, which the caller runs once it holds *ret safely. */
int runner_submit(Runner *r, ExecRequest *req, const char *owner, Job **ret);
/* runner_submit() in two: the job of req, not yet the runner's (submit.c records it first; job_free()
 * drops it), then the runner's: queued, or kept for the node of its session. On failure of
 * runner_add() the job is linked: job_free() it. */
int runner_prepare(Runner *r, ExecRequest *req, const char *owner, Job **ret);
int runner_add(Runner *r, Job *j);
/* At start, before the loop runs: the store's unfinished executions come back, running ones adopted
 * (with their control sockets from systemd's fd store), queued ones queued again in their order, and
 * the rest failed with a reason. */
int runner_adopt(Runner *r);
/* Does anything started by an earlier instance still run (and so use an older /usr layer)? */
bool runner_has_adopted(const Runner *r);

/* Start queued jobs while slots are free. */
void runner_dispatch(Runner *r);
Job *runner_find(Runner *r, const char *id);
void runner_counts(const Runner *r, RunnerCounts *ret);
/* Another node was lost (its lease ran out): take its unfinished executions over, without waiting
 * (store_take_over_async()). Queued ones run here; running ones end "orphaned", with the reason "node
 * NAME lost", unless their request asked to "retry": then they run here once more, as attempt 2.
 * done(userdata, from, r) once the store has answered: r < 0, nothing was taken (try again later).
 * Returns 0 when asked, or a negative errno (done not called). */
typedef void (*RunnerTakeOverFn)(void *userdata, const char *from, int r);
int runner_take_over(Runner *r, const char *from, RunnerTakeOverFn done, void *userdata);
/* A cancel another node took for an execution this one runs (store.h, STORE_CHANNEL_CANCEL). */
void runner_cancel_from_elsewhere(Runner *r, const char *id);
/* After notifications may have been lost (a reconnection): one look at the store for each job not
 * final here, for what they would have said (a cancel, a claim by another node, a final record
 * written elsewhere). */
void runner_store_scan(Runner *r);
/* Would a job of owner submitted now start at once (a free slot, nothing waiting, owner below
 * MaxRunningPerCaller=)? In the shared queue such a submission is stored claimed by this node: no
 * other node can take it in the moment before its claim, and it saves the claim's round trip. */
bool runner_starts_now(Runner *r, const char *owner);
/* The queue nodes share (Context.shared_queue; store.h): a job is claimed in the store before it
 * starts, and a node with free slots claims work other nodes accepted. runner_start_claiming(): at
 * start, once the node is registered (its epoch is the claim's fence). The notifications of the
 * store (manager.c) come here: another node queued work it cannot start (node: its name), claimed a
 * job queued here, or wrote the final record of one (which a waiter here may be waiting for). After
 * a reconnection runner_store_scan() reads what those notifications would have said. */
int runner_start_claiming(Runner *r);
void runner_queue_hint(Runner *r, const char *node);
void runner_claimed_elsewhere(Runner *r, const char *id);
void runner_final_elsewhere(Runner *r, const char *id);
/* Jobs accepted here that another node runs, not final yet (kept for their waiters). */
unsigned runner_count_elsewhere(const Runner *r);
/* What this owner holds in the queue (quota.h), or NULL. */
const QueueOwner *runner_queue_owner(const Runner *r, const char *owner);
/* STATUS= for the service manager: running, queued, finished. */
/* STATUS= for systemctl status: "N running, N queued, N finished". _now at once (READY=1 goes with
 * it); the other within STATUS_COALESCE_USEC (runner.c), one update for a burst of changes. */
void runner_notify_status(Runner *r);
void runner_notify_status_now(Runner *r);

/* The queued runs of a session that can no longer run end with an internal error. */
void runner_fail_session(Runner *r, Session *s, const char *why);
/* Executions far past their deadline are killed again (a lost signal, a bus hiccup). */
void runner_kill_overdue(Runner *r);
/* Final records whose write the store refused, kept in memory and written again (runner.c). */
unsigned runner_unsaved(const Runner *r);
/* Final jobs that finished before cutoff (CLOCK_REALTIME µs) leave memory (their records were purged). */
void runner_forget_finished_before(Runner *r, uint64_t cutoff_usec);
/* Is name (a directory below the workspaces directory) the workspace of an unfinished job? */
bool runner_uses_workspace(const Runner *r, const char *name);
/* Stop: every waiter is answered now (it sees its job unfinished). */
void runner_flush_waiters(Runner *r);
/* Stop: every running job goes quiet for the next instance (job_quiesce()). Returns how many are
 * not quiet yet; done(userdata) is called once for each as it goes quiet or becomes final. */
unsigned runner_quiesce(Runner *r, void (*done)(void *userdata), void *userdata);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <signal.h>
#include <sys/socket.h>
#include <systemd/sd-daemon.h>

#include "admission/quota.h"
#include "delivery/callback.h"
#include "job.h"
#include "log.h"
#include "node-name.h"
#include "runner.h"
#include "session.h"
#include "strv.h"
#include "systemd/sysd.h"
#include "time-util.h"
#include "unit/unit-props.h"
#include "model/summary.h"
#include "unit/usr-layer.h"

struct Runner {
        Context *ctx;
        Sessions *sessions;      /* where the sessions named by requests and records are found */

        Job *jobs;               /* all, newest first */
        Queue queue;             /* each owner's waiting jobs, and the slots they hold */
        unsigned n_jobs, n_finished;
        uint64_t finished_total;
        unsigned n_adopted_live; /* adopted executions not yet final: they may use older /usr layers */
        sd_event_source *status_timer; /* a STATUS= update is due (STATUS_COALESCE_USEC) */
        void (*quiesce_done)(void *userdata);  /* runner_quiesce()'s, once per job it waits for */
        void *quiesce_data;
        sd_event_source *hurry_timer;  /* runner_quiesce() + QUIESCE_HURRY_USEC: job_quiesce_hurry() all */
        sd_event_source *unsaved_timer; /* final records whose write failed are written again */
        unsigned n_unsaved, unsaved_failures;
        unsigned n_rewriting, rewritten; /* this round's writes under way, and those that took */

        /* The shared queue (Context.shared_queue): */
        sd_event_source *claim_timer;   /* every CLAIM_INTERVAL_USEC: look for work other nodes queued */
        struct TakeOver *take_overs;    /* runner_take_over()s the store has not answered */
        sd_event_source *notify_timer;  /* a QUEUE notification held back by QUEUE_NOTIFY_USEC is due */
        bool claim_hint;                /* work may wait in the shared queue (a notification, the timer) */
        bool claim_blocked;             /* a claim failed on the store: dispatch waits for the timer */
        uint64_t queue_notified_mono;   /* when the others were last told of work waiting here */
        unsigned n_claimed_here;        /* claimed from the shared queue since start (other nodes' work) */
        unsigned n_claimed_elsewhere;   /* accepted here, claimed by another node */
        StoreCall *claim_next_call;     /* a look at other nodes' work under way (runner_claim_next()) */
};

/* A node with free slots looks in the shared queue this often even without a notification (one lost
 * with a reconnection, or sent while its slots were full); and a node with work it cannot start tells
 * the others at most once per QUEUE_NOTIFY_USEC. */
#define CLAIM_INTERVAL_USEC (1 * USEC_PER_SEC)
#define QUEUE_NOTIFY_USEC (50 * USEC_PER_MSEC)

/* A final record the store refused (a PostgreSQL server restarting, a full disk) is written again
 * after this, doubling per failed round up to the maximum: the result was acknowledged to nobody yet
 * as stored, but a caller may be polling for it, and the job holds it in memory until then. */
#define UNSAVED_RETRY_MIN_USEC (250 * USEC_PER_MSEC)
#define UNSAVED_RETRY_MAX_USEC (2 * USEC_PER_SEC)

/* Stopping, the live frames already written are read for this long (they may hide a report behind
 * them); then a job goes quiet at the next frame's end even with more waiting. Well within the 20 s
 * sandboxd gives itself to stop. */
#define QUIESCE_HURRY_USEC (2 * USEC_PER_SEC)

/* STATUS= goes out at most this often: each update is a message PID 1 handles (and turns into a
 * PropertiesChanged signal) on the CPUs the programs need, and one sent between a request and its
 * claim delayed the program by a millisecond. A burst of executions is one update. */
#define STATUS_COALESCE_USEC (100 * USEC_PER_MSEC)

static void on_job_left(void *userdata, Job *j);
static int request_from_record(Runner *r, StoreRecord *rec, ExecRequest **ret);
static void record_final(Store *store, StoreRecord *rec, ExecStatus status, ErrorType error_type, const char *reason);
static int on_unsaved_timer(sd_event_source *s, uint64_t usec, void *userdata);
static void runner_save_unsaved_now(Runner *r);
static void runner_arm_unsaved(Runner *r);
static void on_job_finished(void *userdata, Job *j);
static void on_job_written(void *userdata, Job *j);
static void on_job_freed(void *userdata, Job *j);
static void on_job_quiet(void *userdata, Job *j);
static int on_job_claim(void *userdata, Job *j);
static void on_job_rewritten(void *userdata, Job *j, int k);

typedef struct TakeOver {
        Runner *runner;
        struct TakeOver *next;
        StoreCall *call;
        RunnerTakeOverFn done;
        void *userdata;
        char from[NODE_NAME_MAX + 1];
} TakeOver;

static void take_over_free(TakeOver *t) {
        for (TakeOver **p = &t->runner->take_overs; *p; p = &(*p)->next)
                if (*p == t) {
                        *p = t->next;
                        break;
                }
        (void) store_call_cancel(t->call);
        free(t);
}

static const JobEvents runner_job_events = {
        .left = on_job_left,
        .finished = on_job_finished,
        .written = on_job_written,
        .freed = on_job_freed,
        .quiet = on_job_quiet,
        .claim = on_job_claim,
        .rewritten = on_job_rewritten,
};

int runner_new(Context *ctx, Sessions *sessions, Runner **ret) {
        Runner *r = calloc(1, sizeof(Runner));

        if (!r)
                return -ENOMEM;
        r->ctx = ctx;
        r->sessions = sessions;
        queue_init(&r->queue);
        *ret = r;
        return 0;
}

Runner *runner_free(Runner *r) {
        if (!r)
                return NULL;
        /* Take-overs not answered: nothing of them is acted on any more (the rows stay this node's,
         * its next start resumes them). */
        while (r->take_overs)
                take_over_free(r->take_overs);
        /* The final records being written: their answers still count (a refused one is tried again
         * below). */
        store_async_drain(r->ctx->store);
        if (r->ctx->store)
                store_cancel_userdata(r->ctx->store, r);
        if (r->n_unsaved > 0)
                /* A last try: the store may be back since the last round. */
                runner_save_unsaved_now(r);
        if (r->n_unsaved > 0)
                log_error("Stopping with %u final records the store refused: they are lost (the store keeps "
                          "them as they were last written).", r->n_unsaved);
        while (r->jobs)
                job_free(r->jobs);
        queue_done(&r->queue);
        sd_event_source_disable_unref(r->status_timer);
        sd_event_source_disable_unref(r->hurry_timer);
        sd_event_source_disable_unref(r->unsaved_timer);
        sd_event_source_disable_unref(r->claim_timer);
        sd_event_source_disable_unref(r->notify_timer);
        free(r);
        return NULL;
}

static Job *job_of_entry(QueueEntry *e) {
        return (Job *) ((uint8_t *) e - offsetof(Job, queue_entry));
}

/* Newest first in the list of all jobs. */
static void runner_link(Runner *r, Job *j) {
        j->next = r->jobs;
        if (r->jobs)
                r->jobs->prev = j;
        r->jobs = j;
        r->n_jobs++;
        j->linked = true;
}

static void on_job_left(void *userdata, Job *j) {
        Runner *r = userdata;

        queue_drop(&r->queue, &j->queue_entry);
}

static void on_job_freed(void *userdata, Job *j) {
        Runner *r = userdata;

        if (!j->linked)
                return;
        if (j->record_unsaved && r->n_unsaved > 0)
                r->n_unsaved--;
        if (j->final_rewriting && r->n_rewriting > 0 && --r->n_rewriting == 0 && r->n_unsaved > 0 &&
            !r->ctx->stopping)
                /* Not answered any more (store_cancel_userdata()): the round ends here. */
                runner_arm_unsaved(r);
        if (j->prev)
                j->prev->next = j->next;
        else
                r->jobs = j->next;
        if (j->next)
                j->next->prev = j->prev;
        j->prev = j->next = NULL;
        j->linked = false;
        r->n_jobs--;
        queue_drop(&r->queue, &j->queue_entry);
}

/* Drop the oldest finished jobs beyond KeepFinished= (those with waiters stay until answered). */
static void runner_evict_finished(Runner *r) {
        while (r->n_finished > r->ctx->config->keep_finished) {
                Job *oldest = NULL;

                for (Job *j = r->jobs; j; j = j->next)
                        if (j->state == JOB_DONE && !j->waiters && !j->holds && !j->record_unsaved &&
                            !j->final_writing)
                                oldest = j;
                if (!oldest)
                        return;
                job_free(oldest);
                r->n_finished--;
        }
}

static void on_job_quiet(void *userdata, Job *j) {
        Runner *r = userdata;

        if (r->quiesce_done)
                r->quiesce_done(r->quiesce_data);
}

static int on_hurry(sd_event_source *s, uint64_t usec, void *userdata) {
        Runner *r = userdata;
        Job *next;

        r->hurry_timer = sd_event_source_disable_unref(r->hurry_timer);
        /* job_quiesce_hurry() may end up in on_job_quiet() but frees no job. */
        for (Job *j = r->jobs; j; j = next) {
                next = j->next;
                job_quiesce_hurry(j);
        }
        return 0;
}

unsigned runner_quiesce(Runner *r, void (*done)(void *userdata), void *userdata) {
        unsigned n = 0;
        int k;

        r->quiesce_done = done;
        r->quiesce_data = userdata;
        for (Job *j = r->jobs; j; j = j->next)
                if (!job_quiesce(j))
                        n++;
        if (n > 0) {
                log_info("Stopping: %u executions to bring to a point where the next instance can take them over.", n);
                k = sd_event_add_time_relative(r->ctx->event, &r->hurry_timer, CLOCK_MONOTONIC, QUIESCE_HURRY_USEC,
                                               USEC_PER_SEC / 10, on_hurry, r);
                if (k < 0) {
                        /* Without the timer, no waiting for frames: quiet at the next one's end. */
                        log_warning_errno(k, "Cannot arm the stop's frame timer, not waiting for frames: %m");
                        (void) on_hurry(NULL, 0, r);
                }
        }
        return n;
}

static void runner_arm_unsaved(Runner *r) {
        uint64_t delay = UNSAVED_RETRY_MIN_USEC;
        int k;

        for (unsigned i = 0; i < r->unsaved_failures && delay < UNSAVED_RETRY_MAX_USEC; i++)
                delay *= 2;
        delay = MIN(delay, UNSAVED_RETRY_MAX_USEC);
        r->unsaved_timer = sd_event_source_disable_unref(r->unsaved_timer);
        k = sd_event_add_time_relative(r->ctx->event, &r->unsaved_timer, CLOCK_MONOTONIC, delay,
                                       USEC_PER_MSEC * 10, on_unsaved_timer, r);
        if (k < 0)
                log_error_errno(k, "Cannot arm the timer that writes %u unsaved records again: %m", r->n_unsaved);
}

/* A record the store would not take now: taken over by another node meanwhile (its lease ran out while
 * the store was away), the record is that node's now. Not to be written, nor tried again. */
static void unsaved_fenced(Runner *r, Job *j) {
        log_warning("%s: taken over by another node while its record waited to be written; this result (%s) is "
                    "not recorded.", j->exec->id, exec_status_to_string(j->exec->status));
        j->record_unsaved = false;
        r->n_unsaved--;
}

/* The end of a round: what is still unsaved waits for the next, later the longer the store stays away. */
static void unsaved_round_end(Runner *r, unsigned saved) {
        if (saved > 0)
                log_info("Wrote %u final records the store had refused, %u still unsaved.", saved, r->n_unsaved);
        if (r->n_unsaved == 0) {
                r->unsaved_failures = 0;
                runner_evict_finished(r);
                return;
        }
        if (saved == 0)
                r->unsaved_failures++;
        runner_arm_unsaved(r);
}

/* A stop's last try, waiting: oldest first, until the store refuses one (it is down still). */
static void runner_save_unsaved_now(Runner *r) {
        Job *oldest = NULL;
        unsigned saved = 0;

        for (Job *j = r->jobs; j; j = j->next)
                oldest = j;
        for (Job *j = oldest; j && r->n_unsaved > 0; j = j->prev) {
                int k;

                if (!j->record_unsaved)
                        continue;
                k = job_persist_final(j);
                if (k == -ESTALE) {
                        unsaved_fenced(r, j);
                        continue;
                }
                if (k < 0)
                        break;
                r->n_unsaved--;
                saved++;
        }
        if (saved > 0)
                log_info("Wrote %u final records the store had refused, %u still unsaved.", saved, r->n_unsaved);
}

/* One round without waiting: every unsaved record written again, oldest first (the writes go out in
 * that order); the answers end the round (on_job_rewritten()). */
static int on_unsaved_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Runner *r = userdata;
        Job *oldest = NULL;

        r->unsaved_timer = sd_event_source_disable_unref(r->unsaved_timer);
        if (r->n_rewriting > 0)
                return 0;       /* the last round's answers are still coming: it arms the next */
        r->rewritten = 0;
        for (Job *j = r->jobs; j; j = j->next)
                oldest = j;
        for (Job *j = oldest; j; j = j->prev) {
                if (!j->record_unsaved || j->final_rewriting)
                        continue;
                if (job_rewrite_final_async(j) < 0)
                        break;          /* the store is far behind: the rest at the next round */
                r->n_rewriting++;
        }
        if (r->n_rewriting == 0)
                unsaved_round_end(r, 0);
        return 0;
}

static void on_job_rewritten(void *userdata, Job *j, int k) {
        Runner *r = userdata;

        if (r->n_rewriting > 0)
                r->n_rewriting--;
        if (k == -ESTALE)
                unsaved_fenced(r, j);
        else if (k >= 0) {
                r->n_unsaved--;
                r->rewritten++;
        }
        if (r->n_rewriting == 0)
                unsaved_round_end(r, r->rewritten);
}

unsigned runner_unsaved(const Runner *r) {
        return r->n_unsaved;
}

static void on_job_finished(void *userdata, Job *j) {
        Runner *r = userdata;

        /* Waited for by runner_quiesce(): it became final instead (its report was under way). */
        if (j->quiesce_notify) {
                j->quiesce_notify = false;
                on_job_quiet(r, j);
        }
        r->n_finished++;
        if (!j->elsewhere)
                r->finished_total++;
        if (j->record_unsaved) {
                r->n_unsaved++;
                if (!r->unsaved_timer)
                        runner_arm_unsaved(r);
        }
        if (j->adopted && r->n_adopted_live > 0 && --r->n_adopted_live == 0)
                /* Nothing started by an earlier instance runs any more: its /usr layers can go. */
                (void) usr_layer_prune(r->ctx->config->state_dir, r->ctx->usr_layer);
        /* j may be freed from here on. */
        runner_dispatch(r);
        runner_evict_finished(r);
        runner_notify_status(r);
}

/* The final record's first write ended (job.c, on_final_persisted()); its waiters are answered. */
static void on_job_written(void *userdata, Job *j) {
        Runner *r = userdata;

        if (j->record_unsaved) {
                r->n_unsaved++;
                if (!r->unsaved_timer)
                        runner_arm_unsaved(r);
        }
        /* j may be freed from here on. */
        runner_evict_finished(r);
}

int runner_prepare(Runner *r, ExecRequest *req, const char *owner, Job **ret) {
        Session *s = NULL;

        if (req->session_id)
                s = sessions_find(r->sessions, owner, req->session_id);
        return job_new(r->ctx, req, owner, s, &runner_job_events, r, ret);
}

int runner_add(Runner *r, Job *j) {
        assert(!j->linked);
        runner_link(r, j);
        if (j->exec->node && !streq_ptr(j->exec->node, r->ctx->node_name)) {
                /* A run of another node's session (submit.c): that node claims and runs it; this job
                 * is kept for whoever waits for it here, until its final record. */
                j->elsewhere = true;
                return 0;
        }
        /* Last in its owner's FIFO (or its session's lane). */
        return queue_push(&r->queue, &j->queue_entry, j->owner, j->session ? &j->session->lane : NULL,
                          j->callback_url != NULL);
}

int runner_submit(Runner *r, ExecRequest *req, const char *owner, Job **ret) {
        _cleanup_(job_freep) Job *j = NULL;
        int k;

        k = runner_prepare(r, req, owner, &j);
        if (k < 0)
                return k;
        k = runner_add(r, j);
        if (k < 0)
                return k;
        *ret = TAKE_PTR(j);
        return 0;
}

Job *runner_find(Runner *r, const char *id) {
        for (Job *j = r->jobs; j; j = j->next)
                if (streq(j->exec->id, id))
                        return j;
        return NULL;
}

void runner_counts(const Runner *r, RunnerCounts *ret) {
        *ret = (RunnerCounts) {
                .running = r->queue.n_active,
                .queued = r->queue.n_waiting,
                .jobs = r->n_jobs,
                .finished_total = r->finished_total,
                .claimed_here = r->n_claimed_here,
                .claimed_elsewhere = r->n_claimed_elsewhere,
        };
}

const QueueOwner *runner_queue_owner(const Runner *r, const char *owner) {
        return queue_owner_find(&r->queue, owner);
}

void runner_notify_status_now(Runner *r) {
        if (r->status_timer)
                (void) sd_event_source_set_enabled(r->status_timer, SD_EVENT_OFF);
        (void) sd_notifyf(false, "STATUS=%u running, %u queued, %" PRIu64 " finished", r->queue.n_active,
                          r->queue.n_waiting, r->finished_total);
}

static int on_status_timer(_unused_ sd_event_source *s, _unused_ uint64_t usec, void *userdata) {
        runner_notify_status_now(userdata);
        return 0;
}

void runner_notify_status(Runner *r) {
        int enabled = SD_EVENT_OFF;
        uint64_t at = now_usec(CLOCK_MONOTONIC) + STATUS_COALESCE_USEC;

        if (r->status_timer) {
                if (sd_event_source_get_enabled(r->status_timer, &enabled) >= 0 && enabled != SD_EVENT_OFF)
                        return;         /* due already: it will say what is true then */
                if (sd_event_source_set_time(r->status_timer, at) >= 0 &&
                    sd_event_source_set_enabled(r->status_timer, SD_EVENT_ONESHOT) >= 0)
                        return;
        } else if (sd_event_add_time(r->ctx->event, &r->status_timer, CLOCK_MONOTONIC, at, 10 * USEC_PER_MSEC,
                                     on_status_timer, r) >= 0)
                return;
        runner_notify_status_now(r);
}

unsigned runner_count_elsewhere(const Runner *r) {
        unsigned n = 0;

        for (const Job *j = r->jobs; j; j = j->next)
                n += j->elsewhere && !job_is_final(j);
        return n;
}

bool runner_has_adopted(const Runner *r) {
        return r->n_adopted_live > 0;
}

/* A session's runs form a lane: its next run may start once its mount is ready and no run of it is
 * active. */
static bool session_lane_ready(QueueLane *l, void *userdata) {
        Session *s = (Session *) ((uint8_t *) l - offsetof(Session, lane));

        return session_may_run(s);
}

/* Accepted here, claimed by another node: it leaves this node's queue, and is kept (elsewhere) for
 * whoever waits for it here, to be answered when its final record comes (runner_final_elsewhere());
 * the API reads the rest from the store. Kept even with no waiter now: the caller that is accepting it
 * (submit.c, whose dispatch found it claimed) holds it and may add one. Past MaxQueued= such jobs,
 * the oldest nobody waits for are let go (the store has them). */
static void runner_moved_elsewhere(Runner *r, Job *j) {
        unsigned n = 0;
        Job *oldest = NULL;

        queue_drop(&r->queue, &j->queue_entry);
        r->n_claimed_elsewhere++;
        j->elsewhere = true;
        log_debug("%s: claimed by another node", j->exec->id);
        for (Job *x = r->jobs; x; x = x->next)
                if (x->elsewhere && !job_is_final(x)) {
                        n++;
                        if (x != j && !x->waiters && !x->holds)
                                oldest = x;
                }
        if (n > r->ctx->config->max_queued && oldest)
                job_free(oldest);
}

/* A record claimed here from the shared queue becomes a queued job. 1: it did; 0: it could not, and
 * was failed with a reason. */
static int runner_queue_claimed(Runner *r, StoreRecord *rec) {
        uint64_t created = rec->exec->created_usec;
        unsigned attempt = MAX(rec->exec->attempt, 1U);
        ExecRequest *req = NULL;
        Job *j;
        int k;

        k = request_from_record(r, rec, &req);
        if (k >= 0)
                k = runner_submit(r, req, rec->owner, &j);
        if (k < 0) {
                /* Claimed, but it cannot run here (its session is gone, say): it ends, as a record
                 * that cannot be resumed does. */
                log_warning_errno(k, "%s: claimed from the shared queue but cannot run here: %m", rec->exec->id);
                if (rec->exec)
                        record_final(r->ctx->store, rec, EXEC_FAILED, ERROR_INTERNAL,
                                     k == -ENOENT ? "its session is gone from the node that held it"
                                                  : "claimed by a node that could not run it");
                return 0;
        }
        j->exec->created_usec = created;
        j->exec->attempt = attempt;
        r->n_claimed_here++;
        log_debug("%s: claimed from the shared queue (accepted by another node)", j->exec->id);
        return 1;
}

/* The answer to store_claim_next_async() (runner_claim_next()). */
static void on_claimed_next(void *userdata, int k, StoreRecord *rec) {
        Runner *r = userdata;

        r->claim_next_call = NULL;
        if (k == -ENOENT)
                r->claim_hint = false;
        else if (k < 0) {
                log_warning_errno(k, "Cannot claim work from the shared queue: %s", store_error_message(r->ctx->store));
                r->claim_blocked = true;
        } else
                (void) runner_queue_claimed(r, rec);
        store_record_free(rec);
        if (k >= 0)
                runner_dispatch(r);
}

/* The second look (runner_claim_next()): one execution another node accepted, claimed here, fairly
 * (store.h), owners at MaxRunningPerCaller= here skipped, without waiting (on_claimed_next()). */
static void runner_claim_other(Runner *r) {
        _cleanup_free_ char **skip = NULL;
        unsigned cap = (unsigned) quota_max_running_per_caller(r->ctx->config);
        size_t n_skip = 0;
        int k;

        if (cap > 0) {
                skip = calloc(r->queue.n_owners + 1, sizeof(char *));
                if (!skip) {
                        log_oom();
                        return;
                }
                for (QueueOwner *o = r->queue.owners; o; o = o->next)
                        if (o->n_active >= cap && n_skip < r->queue.n_owners)
                                skip[n_skip++] = o->name;
        }
        k = store_claim_next_async(r->ctx->store, r->ctx->node_name, r->ctx->node_epoch, skip, n_skip, on_claimed_next,
                                   r, &r->claim_next_call);
        if (k < 0) {
                log_warning_errno(k, "Cannot claim work from the shared queue: %s", store_error_message(r->ctx->store));
                r->claim_blocked = true;
        }
}

/* The answer to the first look (runner_claim_next()): the runs of this node's sessions other nodes
 * accepted, all queued here; when there are none and a slot is still free, the second look. */
static void on_claimed_routed(void *userdata, int k, StoreRecord **l, size_t n) {
        Runner *r = userdata;
        int queued = 0;

        r->claim_next_call = NULL;
        if (k < 0) {
                log_warning_errno(k, "Cannot claim the runs routed to this node: %s", store_error_message(r->ctx->store));
                r->claim_blocked = true;
                return;
        }
        for (size_t i = 0; i < n; i++)
                queued |= runner_queue_claimed(r, l[i]);
        store_records_free(l, n);
        if (queued)
                runner_dispatch(r);
        else if (!r->ctx->stopping && r->queue.n_active < r->ctx->config->max_concurrent)
                runner_claim_other(r);
}

/* Work other nodes queued (the shared queue): the runs of this node's sessions they accepted, all;
 * else one execution claimed here (runner_claim_other()). Both looks without waiting, one at a time:
 * their answers queue the jobs and dispatch again. */
static void runner_claim_next(Runner *r) {
        int k;

        if (!r->ctx->shared_queue || !r->claim_hint || r->claim_blocked || r->ctx->node_epoch == 0 ||
            r->claim_next_call)
                return;
        k = store_claim_routed_async(r->ctx->store, r->ctx->node_name, r->ctx->node_epoch, on_claimed_routed, r,
                                     &r->claim_next_call);
        if (k < 0) {
                log_warning_errno(k, "Cannot claim the runs routed to this node: %s", store_error_message(r->ctx->store));
                r->claim_blocked = true;
        }
}

static int on_notify_timer(sd_event_source *s, uint64_t usec, void *userdata);

/* Work waits here with no slot for it: the other nodes are told, idle ones claim it. At most once per
 * QUEUE_NOTIFY_USEC: one held back goes out when that is over (a timer), never dropped, or the work
 * would wait for the others' claim timers. */
static void runner_tell_queued(Runner *r) {
        uint64_t now;
        bool unclaimed = false;

        if (!r->ctx->shared_queue || r->queue.n_waiting == 0 || !r->ctx->node_name)
                return;
        now = now_usec(CLOCK_MONOTONIC);
        if (r->queue_notified_mono > 0 && now - r->queue_notified_mono < QUEUE_NOTIFY_USEC) {
                if (!r->notify_timer &&
                    sd_event_add_time(r->ctx->event, &r->notify_timer, CLOCK_MONOTONIC,
                                      r->queue_notified_mono + QUEUE_NOTIFY_USEC, USEC_PER_MSEC, on_notify_timer, r) < 0)
                        log_debug("Cannot arm the queue notification's timer; the others' claim timers will find "
                                  "the work.");
                return;
        }
        for (Job *j = r->jobs; j && !unclaimed; j = j->next)
                unclaimed = j->state == JOB_QUEUED && !j->elsewhere && !j->claiming && j->exec->node_epoch == 0;
        if (!unclaimed)
                return;
        r->queue_notified_mono = now;
        /* Without waiting: a notification lost with the connection is made up for by the others'
         * claim timers. */
        if (store_queue_notify_async(r->ctx->store, r->ctx->node_name, NULL, NULL, NULL) < 0)
                log_debug("Cannot tell the other nodes of queued work: %s", store_error_message(r->ctx->store));
}

static int on_notify_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Runner *r = userdata;

        r->notify_timer = sd_event_source_disable_unref(r->notify_timer);
        runner_tell_queued(r);
        return 0;
}

void runner_claimed_elsewhere(Runner *r, const char *id) {
        Job *j = runner_find(r, id);

        if (j && j->state == JOB_QUEUED && !j->elsewhere && j->exec->node_epoch == 0)
                runner_moved_elsewhere(r, j);
}

/* The final record of a job another node ran, read without waiting (runner_final_elsewhere()). Never
 * called after job_free() (store_cancel_userdata()). */
static void on_final_elsewhere_read(void *userdata, int k, StoreRecord *rec) {
        Job *j = userdata;

        /* A failure: the scan after the store is back finds it (runner_store_scan()). */
        if (k >= 0 && j->elsewhere && !job_is_final(j))
                job_follow_final(j, rec);       /* may free j */
        store_record_free(rec);
}

void runner_final_elsewhere(Runner *r, const char *id) {
        Job *j = runner_find(r, id);

        if (!j || !j->elsewhere || job_is_final(j))
                return;
        if (store_get_async(r->ctx->store, id, on_final_elsewhere_read, j, NULL) < 0)
                log_debug("%s: cannot read its final record now: %s", id, store_error_message(r->ctx->store));
}

void runner_queue_hint(Runner *r, const char *node) {
        if (!r->ctx->shared_queue || streq_ptr(node, r->ctx->node_name))
                return;
        r->claim_hint = true;
        runner_dispatch(r);
}

static int on_claim_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Runner *r = userdata;

        r->claim_hint = true;
        r->claim_blocked = false;
        (void) sd_event_source_set_time_relative(s, CLAIM_INTERVAL_USEC);
        runner_dispatch(r);
        return 0;
}

int runner_start_claiming(Runner *r) {
        int k;

        if (!r->ctx->shared_queue)
                return 0;
        k = sd_event_add_time_relative(r->ctx->event, &r->claim_timer, CLOCK_MONOTONIC, CLAIM_INTERVAL_USEC,
                                       50 * USEC_PER_MSEC, on_claim_timer, r);
        if (k < 0)
                return log_error_errno(k, "Cannot arm the shared queue's timer: %m");
        (void) sd_event_source_set_enabled(r->claim_timer, SD_EVENT_ON);
        r->claim_hint = true;
        runner_dispatch(r);
        return 0;
}

/* A job whose claim the store could not make goes back to wait (last in its owner's FIFO: the order
 * among its own work is kept by the ids' times, not here). */
static void runner_unstart(Runner *r, Job *j) {
        queue_drop(&r->queue, &j->queue_entry);
        if (queue_push(&r->queue, &j->queue_entry, j->owner, NULL, j->callback_url != NULL) < 0) {
                log_oom();
                job_fail(j, "cannot queue it again");
        }
}

/* The cancel sent to the node that claimed a job first. */
static void on_cancel_sent(void *userdata, int k, StoreRecord *rec) {
        store_record_free(rec);
        if (k < 0 && k != -EALREADY)
                log_warning_errno(k, "Cannot send a cancel to the node that claimed the execution: %m");
}

/* The answer to the claim of a job runner_dispatch() gave a slot (it starts, or goes to the node that
 * claimed it first), or of a queued job cancelled here (on_job_claim(): it ends cancelled, or the
 * cancel goes to that node). Never called after job_free() (store_cancel_userdata()). */
static void on_job_claimed(void *userdata, int k, StoreRecord *rec) {
        Job *j = userdata;
        Runner *r = j->events_data;

        store_record_free(rec);
        j->claiming = false;
        if (k == -ESTALE) {
                /* An idle node claimed it first: it runs there (moved already if that node's
                 * notification came first), and a cancel asked here meanwhile goes there too. */
                if (j->cancel_requested &&
                    store_cancel_elsewhere_async(r->ctx->store, j->exec->id, on_cancel_sent, NULL, NULL) < 0)
                        log_warning("%s: cannot send the cancel to the node that claimed it: %s", j->exec->id,
                                    store_error_message(r->ctx->store));
                if (!j->elsewhere)
                        runner_moved_elsewhere(r, j);
        } else if (k < 0) {
                /* The store cannot say whose it is: started here, another node could claim and run it
                 * too. It waits; the next dispatch (a job's end, a submission, the claim timer every
                 * second) tries again. */
                log_warning_errno(k, "%s: cannot claim it in the shared queue: %s", j->exec->id,
                                  store_error_message(r->ctx->store));
                if (j->queue_entry.state == QUEUE_ENTRY_NONE && j->cancel_requested) {
                        /* A cancel's claim (on_job_claim()): not carried out, the caller is told. */
                        log_warning("%s: the cancel was not carried out", j->exec->id);
                        j->cancel_requested = j->exec->cancel_requested = false;
                }
                runner_unstart(r, j);
                return;
        } else {
                j->exec->node_epoch = r->ctx->node_epoch;
                if (r->ctx->stopping)
                        /* Claimed as the daemon stops: the record stays queued on this node, whose
                         * next instance runs it (store_take_over()). */
                        return;
                if (j->cancel_requested)
                        /* Cancelled while the claim was under way: it ends here, never started. */
                        (void) job_cancel(j);
                else
                        job_start(j);
        }
        runner_dispatch(r);
}

/* A cancel of a queued job not claimed yet: its claim, without waiting. Out of the waiting line
 * meanwhile (no dispatch picks it, it holds no slot); the answer is on_job_claimed()'s. */
static int on_job_claim(void *userdata, Job *j) {
        Runner *r = userdata;
        int k;

        k = store_claim_async(r->ctx->store, j->exec->id, r->ctx->node_name, r->ctx->node_epoch, on_job_claimed, j,
                              NULL);
        if (k < 0)
                return log_warning_errno(k, "%s: cannot claim it in the shared queue to cancel it: %s", j->exec->id,
                                         store_error_message(r->ctx->store));
        queue_drop(&r->queue, &j->queue_entry);
        j->claiming = true;
        runner_tell_queued(r);
        return 0;
}

bool runner_starts_now(Runner *r, const char *owner) {
        unsigned cap = (unsigned) quota_max_running_per_caller(r->ctx->config);
        const QueueOwner *o;

        if (r->ctx->stopping || r->queue.n_waiting > 0 || r->queue.n_active >= r->ctx->config->max_concurrent)
                return false;
        o = queue_owner_find(&r->queue, owner);
        return cap == 0 || !o || o->n_active < cap;
}

/* Round robin between the owners with waiting jobs, each owner's oldest first, an owner at
 * MaxRunningPerCaller= skipped; a run of a busy session waits without holding up anything (queue.h).
 * Starting may finish a job at once and re-enter here, so every slot is picked afresh. In the shared
 * queue a job is claimed before it starts, without waiting for the store (store_claim_async()): it
 * takes its slot at once (the caps count it), and the answer starts it (on_job_claimed()). The claims
 * go out back to back, each right behind the job's own insert on the connection, so another node's
 * claim finds the row taken as early as a synchronous claim would have. */
void runner_dispatch(Runner *r) {
        unsigned cap = (unsigned) quota_max_running_per_caller(r->ctx->config);

        while (!r->ctx->stopping && r->queue.n_active < r->ctx->config->max_concurrent) {
                QueueEntry *e = queue_pick(&r->queue, cap, session_lane_ready, r);
                Job *j;
                int k;

                if (!e) {
                        /* Nothing of its own to start: work other nodes queued, if any (its answer
                         * dispatches again). */
                        runner_claim_next(r);
                        break;
                }
                j = job_of_entry(e);
                queue_start(&r->queue, e);
                if (!job_needs_claim(j)) {
                        job_start(j);
                        continue;
                }
                j->claiming = true;
                k = store_claim_async(r->ctx->store, j->exec->id, r->ctx->node_name, r->ctx->node_epoch,
                                      on_job_claimed, j, NULL);
                if (k < 0) {
                        /* Not even queued (the store is far behind): it waits, as above. */
                        log_warning_errno(k, "%s: cannot claim it in the shared queue: %s", j->exec->id,
                                          store_error_message(r->ctx->store));
                        j->claiming = false;
                        runner_unstart(r, j);
                        break;
                }
        }
        runner_tell_queued(r);
}

void runner_fail_session(Runner *r, Session *s, const char *why) {
        for (;;) {
                Job *j;

                for (j = r->jobs; j; j = j->next)
                        if (j->session == s && j->state == JOB_QUEUED)
                                break;
                if (!j)
                        return;
                job_fail(j, why);
        }
}

void runner_kill_overdue(Runner *r) {
        uint64_t now = now_usec(CLOCK_MONOTONIC);

        for (Job *j = r->jobs; j; j = j->next) {
                if (j->state != JOB_RUNNING || j->start_mono == 0)
                        continue;
                if (now - j->start_mono > 2 * j->exec->limits.timeout_ms * USEC_PER_MSEC + 5 * USEC_PER_SEC) {
                        log_warning("Sweep: %s runs past twice its timeout, killing it again", j->exec->id);
                        j->outcome.deadline_hit = true;
                        (void) sysd_kill_unit(r->ctx->sysd, j->unit_name, "all", SIGKILL);
                }
        }
}

void runner_forget_finished_before(Runner *r, uint64_t cutoff_usec) {
        for (Job *j = r->jobs, *next; j; j = next) {
                next = j->next;
                if (job_is_final(j) && !j->waiters && !j->holds && !j->record_unsaved && !j->final_writing &&
                    j->exec->finished_usec < cutoff_usec) {
                        job_free(j);
                        r->n_finished--;
                }
        }
}

bool runner_uses_workspace(const Runner *r, const char *name) {
        size_t n = strlen(name);

        for (const Job *j = r->jobs; j; j = j->next) {
                size_t l;

                if (job_is_final(j) || !j->workspace)
                        continue;
                l = strlen(j->workspace);
                if (l > n && streq(j->workspace + l - n, name) && j->workspace[l - n - 1] == '/')
                        return true;
        }
        return false;
}

void runner_flush_waiters(Runner *r) {
        for (Job *j = r->jobs; j; j = j->next)
                if (!job_is_final(j))
                        job_flush_waiters(j);
}

/* The rest of a queued request, as job_persist() stored it. */
static int request_from_record(Runner *r, StoreRecord *rec, ExecRequest **ret) {
        _cleanup_(exec_request_freep) ExecRequest *req = calloc(1, sizeof(ExecRequest));
        json_object *o = NULL, *env, *seed, *files;
        int k = -EBADMSG;

        if (!req)
                return -ENOMEM;
        req->language = language_ref(language_find(rec->exec->language));
        if (!req->language || !rec->code || !rec->request)
                return -EBADMSG;
        o = json_tokener_parse(rec->request);
        if (!o || !json_object_object_get_ex(o, "env", &env) || !json_object_is_type(env, json_type_array) ||
            !json_object_object_get_ex(o, "seed", &seed))
                goto finish;
        req->n_env = json_object_array_length(env);
        if (req->n_env > REQUEST_ENV_MAX)
                goto finish;
        req->env = calloc(req->n_env + 1, sizeof(char *));
        if (!req->env) {
                k = -ENOMEM;
                goto finish;
        }
        for (size_t i = 0; i < req->n_env; i++) {
                req->env[i] = strdup(json_object_get_string(json_object_array_get_idx(env, i)) ?: "");
                if (!req->env[i]) {
                        k = -ENOMEM;
                        goto finish;
                }
        }
        req->seed = json_object_get_uint64(seed);
        {
                json_object *start;

                req->cold = json_object_object_get_ex(o, "start", &start) &&
                            json_object_is_type(start, json_type_string) &&
                            streq(json_object_get_string(start), "cold");
        }
        {
                json_object *retry;

                req->retry = json_object_object_get_ex(o, "retry", &retry) &&
                             json_object_is_type(retry, json_type_boolean) && json_object_get_boolean(retry);
        }
        req->callback_url = callback_url_from_request_json(rec->request);
        k = request_args_from_json(rec->request, &req->args, &req->n_args, NULL);
        if (k < 0)
                goto finish;
        k = request_stdin_from_json(rec->request, req);
        if (k < 0)
                goto finish;
        k = -EBADMSG;
        /* The input files, checked again against the configuration as it is now. */
        if (json_object_object_get_ex(o, "files", &files)) {
                RequestError err;

                k = request_parse_files(files, r->ctx->config, rec->exec->limits.disk_mb, req, &err);
                if (k < 0) {
                        if (k != -ENOMEM) {
                                log_warning("%s: stored input files refused: %s", rec->exec->id, err.message);
                                k = -EBADMSG;
                        }
                        goto finish;
                }
        }
        /* A run with network: its allow list is on record with its (empty) log. Checked again
         * against AllowDomains= as it is now would be submit.c's; it was within it when accepted. */
        if (rec->exec->network) {
                req->network = true;
                for (size_t i = 0; i < rec->exec->network->n_allow; i++)
                        if (strv_extend(&req->network_allow, &req->n_network_allow, rec->exec->network->allow[i]) < 0) {
                                k = -ENOMEM;
                                goto finish;
                        }
        }
        req->record_id = strdup(rec->exec->id);
        req->execution_id = rec->exec->client_id ? strdup(rec->exec->client_id) : NULL;
        req->session_id = rec->exec->session_id ? strdup(rec->exec->session_id) : NULL;
        /* Its environment by name: looked up again when its unit is built (it may be gone by then). */
        req->environment = rec->exec->environment ? strdup(rec->exec->environment) : NULL;
        /* Its tier as decided when it was accepted (the policy may have changed since: a record
         * stored before the tiers ran in the standard one). */
        if (rec->exec->isolation) {
                json_object *iso = json_tokener_parse(rec->exec->isolation), *tier;

                req->run_strong = iso && json_object_object_get_ex(iso, "tier", &tier) &&
                                  streq_ptr(json_object_get_string(tier), "strong");
                json_object_put(iso);
                req->isolation = strdup(rec->exec->isolation);
        }
        req->code = TAKE_PTR(rec->code);
        req->code_len = strlen(req->code);
        req->limits = rec->exec->limits;
        memcpy(req->fingerprint, rec->fingerprint, sizeof(req->fingerprint));
        if (!req->record_id || (rec->exec->client_id && !req->execution_id) ||
            (rec->exec->session_id && !req->session_id) || (rec->exec->environment && !req->environment) ||
            (rec->exec->isolation && !req->isolation)) {
                k = -ENOMEM;
                goto finish;
        }
        *ret = TAKE_PTR(req);
        k = 0;
finish:
        json_object_put(o);
        return k;
}

static void on_final_recorded(void *userdata, int k, StoreRecord *rec) {
        store_record_free(rec);
        if (k < 0)
                log_warning_errno(k, "Cannot record the final status of an execution without a job: %s",
                                  store_error_message(userdata));
}

/* A record made final here, without a job: its verdict, summary and callback delivery in one write,
 * without waiting (the write is made in its order; its parameters are copied at the call). */
static void record_final(Store *store, StoreRecord *rec, ExecStatus status, ErrorType error_type, const char *reason) {
        Execution *e = rec->exec;

        e->status = status;
        e->error_type = error_type;
        e->reason = reason;
        e->finished_usec = now_usec(CLOCK_REALTIME);
        free(e->summary);
        e->summary = summary_build(e);
        {
                _cleanup_free_ char *url = callback_url_from_request_json(rec->request);

                if (url && callback_prepare(e, url, &rec->callback) < 0)
                        log_oom();
        }
        if (store_put_async(store, rec, on_final_recorded, store, NULL) < 0)
                log_warning("%s: cannot record it %s: %s", e->id, exec_status_to_string(status),
                            store_error_message(store));
        rec->callback = store_callback_free(rec->callback);
}

void runner_cancel_from_elsewhere(Runner *r, const char *id) {
        Job *j = runner_find(r, id);

        if (!j || job_is_final(j))
                return;
        if (job_cancel(j) >= 0)
                log_info("%s: cancel requested through another node", j->exec->id);
}

/* One job's record, read by runner_store_scan(); never called after job_free() (store_cancel_userdata()). */
static void on_scan_read(void *userdata, int k, StoreRecord *found) {
        _cleanup_(store_record_freep) StoreRecord *rec = found;
        Job *j = userdata;
        Runner *r = j->events_data;

        if (k < 0 || job_is_final(j))
                return;
        if (j->elsewhere) {
                if (exec_status_is_final(rec->exec->status))
                        job_follow_final(j, rec);
        } else if (r->ctx->shared_queue && j->state == JOB_QUEUED && !j->claiming && j->exec->node_epoch == 0 &&
                   rec->exec->node_epoch != 0)
                runner_moved_elsewhere(r, j);
        else if (rec->exec->cancel_requested && !j->cancel_requested && job_cancel(j) >= 0)
                log_info("%s: cancel requested through another node (found after a reconnection)", j->exec->id);
}

/* After notifications may have been lost (a reconnection): one read of each job not final here
 * says what they would have: its final record written (a job another node runs), its claim by
 * another node (an unclaimed queued job), or a cancel asked through another node. */
void runner_store_scan(Runner *r) {
        /* Without waiting: each answer acts on its job (a cancel may end one at once; a job freed
         * meanwhile is not called back). */
        for (Job *j = r->jobs; j; j = j->next)
                if (!job_is_final(j) && (j->elsewhere || !j->cancel_requested) &&
                    store_get_async(r->ctx->store, j->exec->id, on_scan_read, j, NULL) < 0)
                        log_debug("%s: cannot read its record after the reconnection: %s", j->exec->id,
                                  store_error_message(r->ctx->store));
        if (r->ctx->shared_queue) {
                r->claim_hint = true;
                runner_dispatch(r);
        }
}

/* The request's "retry" as job.c stored it. */
static bool request_retry_from_json(const char *json) {
        json_object *o = json ? json_tokener_parse(json) : NULL, *v;
        bool retry = o && json_object_object_get_ex(o, "retry", &v) && json_object_is_type(v, json_type_boolean) &&
                     json_object_get_boolean(v);

        json_object_put(o);
        return retry;
}

/* A take-over's job, queued here: its record says so (attempt, node, epoch). */
static void on_taken_recorded(void *userdata, int k, StoreRecord *rec) {
        store_record_free(rec);
        if (k < 0)
                job_persist_failed(userdata, k);
}

static void take_over_record(Job *j) {
        int k = job_record_async(j, on_taken_recorded, j, NULL);

        if (k < 0)
                job_persist_failed(j, k);
}

static void take_over_records(Runner *r, const char *from, StoreRecord **l, size_t n);

/* The rows taken, oldest first; never called after take_over_free() (runner_free()). */
static void on_taken_over(void *userdata, int k, StoreRecord **l, size_t n) {
        TakeOver *t = userdata;
        Runner *r = t->runner;
        RunnerTakeOverFn done = t->done;
        void *done_data = t->userdata;
        char from[sizeof(t->from)];

        memcpy(from, t->from, sizeof(from));
        t->call = NULL;
        take_over_free(t);
        if (k < 0)
                log_warning_errno(k, "Cannot take over the executions of node '%s': %s", from,
                                  store_error_message(r->ctx->store));
        else
                take_over_records(r, from, l, n);
        store_records_free(l, n);
        done(done_data, from, k);
}

int runner_take_over(Runner *r, const char *from, RunnerTakeOverFn done, void *userdata) {
        Store *store = r->ctx->store;
        TakeOver *t;
        int k;

        if (!store || !r->ctx->node_name || r->ctx->node_epoch == 0 || strlen(from) > NODE_NAME_MAX)
                return -EAGAIN;
        t = calloc(1, sizeof(TakeOver));
        if (!t)
                return -ENOMEM;
        *t = (TakeOver) { .runner = r, .done = done, .userdata = userdata, .next = r->take_overs };
        strcpy(t->from, from);
        r->take_overs = t;
        k = store_take_over_async(store, from, r->ctx->node_name, r->ctx->node_epoch, now_usec(CLOCK_REALTIME),
                                  on_taken_over, t, &t->call);
        if (k < 0) {
                take_over_free(t);
                return log_warning_errno(k, "Cannot take over the executions of node '%s': %s", from,
                                         store_error_message(store));
        }
        return 0;
}

static void take_over_records(Runner *r, const char *from, StoreRecord **l, size_t n) {
        Store *store = r->ctx->store;
        size_t queued = 0, retried = 0, orphaned = 0;
        char reason[NODE_NAME_MAX + 32];
        int k;

        if (n == 0)
                return;
        snprintf(reason, sizeof(reason), "node %s lost", from);
        for (size_t i = 0; i < n; i++) {
                Execution *e = l[i]->exec;
                bool ran = e->status != EXEC_QUEUED;
                unsigned attempt = MAX(e->attempt, 1U);

                /* Queued there: it never ran, it runs here. Running there: it may have done things
                 * (written, sent, printed): it runs again only if its request said "retry", once, as
                 * the next attempt. */
                if (!ran || (attempt < 2 && request_retry_from_json(l[i]->request))) {
                        ExecRequest *req = NULL;
                        uint64_t created = e->created_usec;
                        Job *j = runner_find(r, e->id);

                        /* Accepted here and claimed by the lost node (the shared queue): the job
                         * kept for its waiters runs here now. */
                        if (j && j->elsewhere && !job_is_final(j) && !j->exec->session_id &&
                            queue_push(&r->queue, &j->queue_entry, j->owner, NULL, j->callback_url != NULL) >= 0) {
                                j->elsewhere = false;
                                j->exec->node_epoch = r->ctx->node_epoch;
                                j->exec->attempt = ran ? attempt + 1 : attempt;
                                take_over_record(j);
                                if (ran)
                                        retried++;
                                else
                                        queued++;
                                continue;
                        }

                        k = request_from_record(r, l[i], &req);
                        if (k >= 0)
                                k = runner_submit(r, req, l[i]->owner, &j);
                        if (k >= 0) {
                                j->exec->created_usec = created;
                                j->exec->attempt = ran ? attempt + 1 : attempt;
                                take_over_record(j);
                                if (ran) {
                                        log_notice("%s: node '%s' was lost while it ran; running it again here "
                                                   "(attempt %u).", j->exec->id, from, j->exec->attempt);
                                        retried++;
                                } else
                                        queued++;
                                continue;
                        }
                        log_warning_errno(k, "%s: cannot queue it here after node '%s' was lost: %m", e->id, from);
                }
                record_final(store, l[i], EXEC_ORPHANED, ERROR_NONE, store_intern_reason(reason) ?: "node lost");
                log_notice("%s: orphaned: %s.", e->id, reason);
                orphaned++;
        }
        /* The orphaned ones' deliveries are in the outbox now, this node's to make; the others wait
         * in the queue for a slot. */
        if (orphaned > 0)
                callbacks_kick(r->ctx->callbacks);
        if (queued + retried > 0)
                runner_dispatch(r);
        log_notice("Node '%s' was lost (its lease ran out): took over %zu executions, %zu queued here, %zu run "
                   "again here, %zu orphaned.", from, queued + retried + orphaned, queued, retried, orphaned);
}

/* At start only (before the loop runs), so a synchronous call is fine here. */
static bool unit_exists(Runner *r, const char *id) {
        _cleanup_free_ char *name = execution_unit_name(id);

        return name && sysd_unit_exists_sync(r->ctx->sysd, name);
}

/* Is a report (or anything) waiting to be read? */
static bool socket_has_data(int fd) {
        char c;

        return recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) > 0;
}

/* A passed fd nobody takes. LISTEN_FDS stays in the environment for http.c, and sd_listen_fds()
 * there touches every fd of the range (F_SETFD): a closed one fails the start with EBADF, again at
 * every restart while the fd store holds the fd. So the number stays valid, on /dev/null. */
static void release_passed_fd(int fd) {
        _cleanup_close_ int null = -EBADF;

        if (fd < 0)
                return;
        null = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (null < 0 || dup3(null, fd, O_CLOEXEC) < 0)
                safe_close(fd);
}

static int runner_adopt_running(Runner *r, StoreRecord *rec, int fd, int proxy_fd) {
        Session *s = rec->exec->session_id ? sessions_find(r->sessions, rec->owner, rec->exec->session_id) : NULL;
        Job *j;
        int k;

        k = job_adopt(r->ctx, rec, fd, s, &runner_job_events, r, &j);
        if (k < 0) {
                release_passed_fd(proxy_fd);
                return k;
        }
        /* A run with network: its proxy's event pipe, if the fd store kept it. */
        job_network_take_fd(j, proxy_fd);
        runner_link(r, j);
        r->n_adopted_live++;
        if (queue_push_active(&r->queue, &j->queue_entry, j->owner, j->callback_url != NULL) < 0)
                log_oom();
        return 0;
}

/* After a restart: running executions are watched again (with their control socket from systemd's
 * fd store: report and output intact), queued ones go back in the queue in their order, and a
 * record whose execution cannot be resumed is failed with a reason: never lost, never stuck. */
int runner_adopt(Runner *r) {
        Store *store = r->ctx->store;
        StoreRecord **l = NULL;
        size_t n = 0, adopted = 0, requeued = 0, failed = 0;
        char **names = NULL;
        int n_fds, k;

        n_fds = sd_listen_fds_with_names(false, &names);
        if (n_fds < 0)
                n_fds = 0;

        /* This node's unfinished executions, now at this start's epoch (the fence of their writes). */
        if (r->ctx->node_name)
                k = store_take_over(store, NULL, r->ctx->node_name, r->ctx->node_epoch, now_usec(CLOCK_REALTIME),
                                    &l, &n);
        else
                k = store_list_unfinished(store, &l, &n);
        if (k < 0) {
                strv_free_n(names, (size_t) n_fds);
                return log_error_errno(k, "Cannot read unfinished executions: %s", store_error_message(store));
        }
        for (size_t i = 0; i < n; i++) {
                Execution *e = l[i]->exec;
                char want[CONTROL_FD_NAME_MAX];
                int fd = -EBADF;

                /* A warm unit's is stored under the unit's name (the record's unit). */
                if (control_fd_name(e->id, e->unit, want, sizeof(want)) < 0)
                        want[0] = '\0';
                for (int x = 0; x < n_fds; x++)
                        if (names && names[x] && streq(names[x], want)) {
                                fd = SD_LISTEN_FDS_START + x;
                                free(names[x]);
                                names[x] = NULL;        /* claimed */
                                break;
                        }

                /* Queued on record, but perhaps started: the crash came between StartTransientUnit
                 * and the record's update. The unit tells: systemd handles the calls of a connection
                 * in order, so a start still on its way when the old sandboxd died has been processed
                 * (the unit exists) or refused (the caller was gone) by the time unit_exists()'s own
                 * call is answered. No unit: it never ran, unless it ran to its end and was collected
                 * while sandboxd was down, and then its report waits in the control socket (stored
                 * before the start was asked for). Neither: it runs from the queue, once. */
                if (e->status == EXEC_QUEUED) {
                        bool unit = unit_exists(r, e->id);

                        if (!unit && fd >= 0 && !socket_has_data(fd)) {
                                char msg[CONTROL_FD_NAME_MAX + 64];

                                log_notice("%s: its start did not reach systemd before sandboxd stopped; queued "
                                           "again.", e->id);
                                snprintf(msg, sizeof(msg), "FDSTOREREMOVE=1\nFDNAME=%s", want);
                                (void) sd_notify(false, msg);
                                release_passed_fd(fd);
                                fd = -EBADF;
                        } else if (unit || fd >= 0) {
                                log_notice("%s: was being started when sandboxd stopped; adopting it.", e->id);
                                e->status = EXEC_RUNNING;
                        }
                }

                if (e->status == EXEC_RUNNING) {
                        char pname[CONTROL_FD_NAME_MAX];
                        int proxy_fd = -EBADF;

                        if (e->network && proxy_fd_name(e->id, pname, sizeof(pname)) >= 0)
                                for (int x = 0; x < n_fds; x++)
                                        if (names && names[x] && streq(names[x], pname)) {
                                                proxy_fd = SD_LISTEN_FDS_START + x;
                                                free(names[x]);
                                                names[x] = NULL;
                                                (void) fcntl(proxy_fd, F_SETFD, FD_CLOEXEC);
                                                (void) fcntl(proxy_fd, F_SETFL, O_NONBLOCK);
                                                break;
                                        }
                        (void) fcntl(fd, F_SETFD, FD_CLOEXEC);
                        (void) fcntl(fd, F_SETFL, O_NONBLOCK);
                        k = runner_adopt_running(r, l[i], fd, proxy_fd);
                        if (k >= 0) {
                                adopted++;
                                continue;
                        }
                        release_passed_fd(fd);
                } else if (e->status == EXEC_QUEUED) {
                        ExecRequest *req = NULL;
                        uint64_t created = e->created_usec;
                        Job *j;

                        release_passed_fd(fd);
                        k = request_from_record(r, l[i], &req);
                        if (k >= 0)
                                k = runner_submit(r, req, l[i]->owner, &j);
                        if (k >= 0) {
                                j->exec->created_usec = created;
                                j->exec->attempt = e->attempt;
                                requeued++;
                                continue;
                        }
                } else
                        release_passed_fd(fd);

                /* Cannot be resumed: say so in the record. */
                if (!l[i]->exec)
                        continue;
                record_final(store, l[i], EXEC_FAILED, ERROR_INTERNAL,
                             "sandboxd restarted and could not resume this execution");
                failed++;
        }
        store_records_free(l, n);

        /* Control sockets and proxy pipes nobody claims (a record purged meanwhile): let them go. */
        for (int x = 0; x < n_fds; x++)
                if (names && names[x] && (startswith(names[x], "ctl-") || startswith(names[x], "proxy-"))) {
                        char msg[128];

                        snprintf(msg, sizeof(msg), "FDSTOREREMOVE=1\nFDNAME=%s", names[x]);
                        (void) sd_notify(false, msg);
                        release_passed_fd(SD_LISTEN_FDS_START + x);
                }
        strv_free_n(names, (size_t) n_fds);

        if (adopted + requeued + failed > 0)
                log_info("After the restart: %zu running executions adopted, %zu queued resumed, %zu failed.",
                         adopted, requeued, failed);
        return 0;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "admission/quota.h"
#include "delivery/callback.h"
#include "log.h"
#include "model/environment.h"
#include "model/result.h"
#include "model/scoped-id.h"
#include "model/signed-url.h"
#include "net/net-policy.h"
#include "run/job.h"
#include "run/runner.h"
#include "run/session.h"
#include "submit.h"
#include "time-util.h"

#define fail(err, r, error, ...) request_error((err), (r), (error), NULL, __VA_ARGS__)

static int conflict(RequestError *err, const char *id) {
        return request_error(err, -EEXIST, API_ERROR_CONFLICT, "execution_id",
                             "execution_id '%s' was already used for a different request", id);
}

static bool may_see(const char *caller, bool admin, const char *owner) {
        return admin || streq_ptr(caller, owner);
}

struct CancelOp {
        ApiContext *ac;
        StoreRecord *rec;               /* the record of another node's run */
        StoreCall *call;
        CancelDoneFn done;
        void *userdata;
        bool again;                     /* the second barrier (on_cancel_barrier()) */
        char id[REQUEST_ID_MAX + 1];    /* a record id is a valid request id (64 at most) */
};

CancelOp *cancel_op_free(CancelOp *op) {
        if (!op)
                return NULL;
        (void) store_call_cancel(op->call);
        store_record_free(op->rec);
        free(op);
        return NULL;
}

static void cancel_op_end(CancelOp *op, int r) {
        CancelDoneFn done = op->done;
        void *userdata = op->userdata;
        StoreRecord *rec = r >= 0 ? TAKE_PTR(op->rec) : NULL;

        op->call = NULL;
        cancel_op_free(op);
        done(userdata, r, rec);
}

static void on_cancel_sent(void *userdata, int r, StoreRecord *unused) {
        CancelOp *op = userdata;

        store_record_free(unused);
        op->call = NULL;
        if (r >= 0) {
                op->rec->exec->cancel_requested = true;
                log_info("%s: cancel requested, sent to node '%s' which runs it", op->id, op->rec->exec->node);
        }
        cancel_op_end(op, r);
}

/* Another node's run: the store marks it and tells that node. -EALREADY: final, or no other node's. */
static int cancel_send(CancelOp *op) {
        const Execution *e = op->rec->exec;
        int r;

        if (exec_status_is_final(e->status) || !e->node || streq_ptr(e->node, op->ac->ctx->node_name))
                return -EALREADY;
        r = store_cancel_elsewhere_async(op->ac->ctx->store, e->id, on_cancel_sent, op, &op->call);
        return r == -EOPNOTSUPP ? -EALREADY : r;
}

/* The record of a job another node claimed from the shared queue (job_cancel(): -EREMOTE). */
static void on_cancel_record(void *userdata, int r, StoreRecord *rec) {
        CancelOp *op = userdata;

        op->call = NULL;
        if (r == -ENOENT)
                r = -EALREADY;
        if (r >= 0) {
                op->rec = rec;
                r = cancel_send(op);
                if (r >= 0)
                        return;
        }
        cancel_op_end(op, r);
}

/* What was asked of the store before it is done: the cancel on record. A queued job's claim, under
 * way, was answered before this: if it found that another node claimed the job first, its answer sent
 * the cancel there; if it was this node's, its answer ended the job (its final record). Either is a
 * call made after this barrier: a second barrier waits for it too. */
static void on_cancel_barrier(void *userdata, int r, StoreRecord *unused) {
        CancelOp *op = userdata;
        Job *j;

        store_record_free(unused);
        op->call = NULL;
        j = op->again ? NULL : runner_find(op->ac->runner, op->id);
        if (j && ((j->elsewhere && !job_is_final(j)) || j->final_writing)) {
                op->again = true;
                if (store_barrier_async(op->ac->ctx->store, on_cancel_barrier, op, &op->call) >= 0)
                        return;
        }
        cancel_op_end(op, 0);
}

int cancel_execution_async(ApiContext *ac, Job *j, StoreRecord *rec, CancelDoneFn done, void *userdata,
                           CancelOp **ret) {
        _cleanup_(store_record_freep) StoreRecord *found = rec;
        Store *store = ac->ctx->store;
        CancelOp *op;
        int r;

        assert(j || rec);
        *ret = NULL;
        op = calloc(1, sizeof(CancelOp));
        if (!op)
                return -ENOMEM;
        *op = (CancelOp) { .ac = ac, .done = done, .userdata = userdata };
        (void) strncpy(op->id, j ? j->exec->id : rec->exec->id, sizeof(op->id) - 1);
        if (!j) {
                op->rec = TAKE_PTR(found);
                r = cancel_send(op);
        } else {
                r = job_cancel(j);
                if (r == -EREMOTE)
                        r = store ? store_get_async(store, op->id, on_cancel_record, op, &op->call) : -EALREADY;
                else if (r >= 0) {
                        /* Nothing to wait for (no store, or out of memory: the cancel is made). */
                        if (!store || store_barrier_async(store, on_cancel_barrier, op, &op->call) < 0)
                                r = 1;
                }
        }
        if (r != 0) {
                cancel_op_free(op);
                return r;
        }
        *ret = op;
        return 0;
}

struct FindLookup {
        ApiContext *ac;
        char *owner;
        char keys[2][MAX(SCOPED_ID_MAX, REQUEST_ID_MAX + 1)];   /* the scoped key, the id itself */
        bool key_admin[2];              /* the scoped key is the caller's own only */
        unsigned n_keys, i;
        FindDoneFn done;
        void *userdata;
        StoreCall *call;                /* the store's read under way */
        bool *called;                   /* find_execution_async()'s, while it runs: done was called */
};

FindLookup *find_lookup_cancel(FindLookup *f) {
        if (!f)
                return NULL;
        (void) store_call_cancel(f->call);
        free(f->owner);
        return mfree(f);
}

static int find_lookup_done(FindLookup *f, Job *j, StoreRecord *rec) {
        FindDoneFn done = f->done;
        void *userdata = f->userdata;

        if (f->called)
                *f->called = true;
        f->call = NULL;
        (void) find_lookup_cancel(f);
        done(userdata, j, rec);
        return 1;
}

static void on_find_got(void *userdata, int r, StoreRecord *rec);

/* The keys in turn, as find_record() looks at them: in memory, else the store, asynchronously. f
 * must not be touched after it: done may have been called (without an event loop the store calls
 * back at once). */
static int find_lookup_next(FindLookup *f) {
        for (; f->i < f->n_keys; f->i++) {
                const char *key = f->keys[f->i];
                Job *j = runner_find(f->ac->runner, key);

                /* Accepted here, run by another node: the store has what is true of it now. */
                if (j && j->elsewhere && !job_is_final(j))
                        j = NULL;
                if (j) {
                        if (may_see(f->owner, f->key_admin[f->i], j->owner))
                                return find_lookup_done(f, j, NULL);
                        continue;
                }
                if (!f->ac->ctx->store)
                        continue;
                if (store_get_async(f->ac->ctx->store, key, on_find_got, f, &f->call) >= 0)
                        return 0;
                /* Refused (out of memory): not found under this key. */
        }
        return find_lookup_done(f, NULL, NULL);
}

static void on_find_got(void *userdata, int r, StoreRecord *rec) {
        FindLookup *f = userdata;

        f->call = NULL;
        if (r >= 0 && may_see(f->owner, f->key_admin[f->i], rec->owner)) {
                (void) find_lookup_done(f, NULL, rec);
                return;
        }
        store_record_free(rec);
        f->i++;
        (void) find_lookup_next(f);
}

int find_execution_async(ApiContext *ac, const char *owner, bool admin, const char *id, FindDoneFn done,
                         void *userdata, FindLookup **ret) {
        FindLookup *f;

        *ret = NULL;
        if (!id_is_valid(id, REQUEST_ID_MAX)) {
                done(userdata, NULL, NULL);
                return 1;
        }
        f = calloc(1, sizeof(FindLookup));
        if (!f)
                return -ENOMEM;
        *f = (FindLookup) { .ac = ac, .owner = owner ? strdup(owner) : NULL, .done = done, .userdata = userdata };
        if (owner && !f->owner) {
                free(f);
                return -ENOMEM;
        }
        if (scoped_id(f->keys[0], "exec", owner, id) >= 0)
                f->n_keys = 1;
        (void) snprintf(f->keys[f->n_keys], sizeof(f->keys[f->n_keys]), "%s", id);
        f->key_admin[f->n_keys] = admin;
        f->n_keys++;
        /* done may come before find_lookup_next() returns (in memory; a store without event loop). */
        bool called = false;
        f->called = &called;
        (void) find_lookup_next(f);
        if (called)
                return 1;
        f->called = NULL;
        *ret = f;
        return 0;
}

/* The tier the request runs in (model/risk-scan.h): on the request, with the record's text. Refused
 * where it needs the strong tier and that is off or cannot run here: never run in the standard tier
 * instead. */
static int choose_tier(Context *ctx, ExecRequest *er, RequestError *err) {
        IsolationChoice ic;
        json_object *o;
        int r;

        r = isolation_choose(&ctx->isolation, er->language->name, er->language->aliases, er->code, er->code_len,
                             er->limits.timeout_ms, er->strong, &ic);
        if (r == -EPERM)
                return request_error(err, -EINVAL, API_ERROR_UNSUPPORTED, "isolation",
                                     "isolation: the strong tier is off on this daemon (%s)",
                                     ctx->strong_unavailable ?: "Strong=never in [Isolation] of sandboxd.conf");
        if (ic.strong && ctx->strong_unavailable) {
                o = isolation_to_json(&ic);
                r = request_error(err, -EINVAL, API_ERROR_UNSUPPORTED, "isolation",
                                  "isolation: this run needs the strong tier (%s), which cannot run here: %s",
                                  o ? json_object_to_json_string_ext(json_object_object_get(o, "reasons"),
                                                                     JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)
                                    : "?", ctx->strong_unavailable);
                json_object_put(o);
                return r;
        }
        o = isolation_to_json(&ic);
        if (!o)
                return fail(err, -ENOMEM, API_ERROR_INTERNAL, "out of memory");
        er->isolation = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
        json_object_put(o);
        if (!er->isolation)
                return fail(err, -ENOMEM, API_ERROR_INTERNAL, "out of memory");
        er->run_strong = ic.strong;
        return 0;
}

/* ---- admission, without waiting for the store (issue 22) ----
 *
 * A submission checks, in turn: the caller's earlier execution of the same execution_id (in memory,
 * else two store reads), the caller's stored usage (one read), and for a run of a session not held
 * here the session's row and the node registry (several nodes); then, in one synchronous step, what
 * may have changed meanwhile (an execution of the same id made since, the budgets with what is being
 * recorded), the job, and its first record. The job joins the runner only once the record is in the
 * store ("nothing runs that is not on record"): until then no lookup, cancel or dispatch sees it, but
 * the same execution_id submitted again waits for it (never a second run), and the budgets count it. */

#define SUBMISSIONS_MAX STORE_ASYNC_MAX

typedef enum SubmitStep {
        STEP_EARLIER,            /* an earlier execution of the execution_id */
        STEP_USAGE,              /* the caller's stored usage */
        STEP_SESSION,            /* a session held by another node: its row */
        STEP_NODES,              /* ... and whether that node is alive */
        STEP_WAIT,               /* another submission of the same execution_id is being recorded */
        STEP_RECORD,             /* the job's first record */
} SubmitStep;

struct Submission {
        ApiContext *ac;
        Submission *prev, *next;
        SubmitStep step;
        ExecRequest *er;
        char *owner;
        bool admin;
        SubmitDoneFn done;       /* NULL: the caller went away; the submission goes on unanswered */
        void *userdata;
        bool *called;            /* submit_execution_async()'s, while it runs: the submission ended */
        StoreCall *call;         /* the store's read or write under way */
        char key[SCOPED_ID_MAX]; /* the record id of the caller's execution_id; "" without one */
        unsigned i_earlier;      /* STEP_EARLIER: which of the two ids */
        StoreUsage stored;
        StoreSession *session;   /* STEP_NODES: the row of the session another node holds */
        Job *job;                /* STEP_RECORD: not the runner's until recorded */
        bool starts_now;         /* STEP_RECORD: a slot was free for it (check_budgets()) */
        bool with_session;       /* STEP_RECORD: its record carries its new session's row */
        Submission *waiting_for; /* STEP_WAIT */
        bool woken;              /* ... that one ended: look again */
};

static void submission_free(Submission *s) {
        ApiContext *ac = s->ac;

        if (s->prev)
                s->prev->next = s->next;
        else
                ac->submissions = s->next;
        if (s->next)
                s->next->prev = s->prev;
        ac->n_submissions--;
        (void) store_call_cancel(s->call);
        job_free(s->job);
        store_sessions_free(s->session, s->session ? 1 : 0);
        exec_request_free(s->er);
        free(s->owner);
        free(s);
}

static void step_create(Submission *s);

/* The end: the caller's answer, then those of the same execution_id that waited for this one look
 * again (the runner holds the job now, or nothing was made). */
static void submission_end(Submission *s, int r, SubmitResult *res, const RequestError *err) {
        ApiContext *ac = s->ac;
        SubmitDoneFn done = s->done;
        void *userdata = s->userdata;
        Submission *t;

        if (s->called)
                *s->called = true;
        s->done = NULL;
        for (t = ac->submissions; t; t = t->next)
                if (t->step == STEP_WAIT && t->waiting_for == s) {
                        t->waiting_for = NULL;
                        t->woken = true;
                }
        submission_free(s);
        for (t = ac->submissions; t; )
                if (t->woken) {
                        t->woken = false;
                        step_create(t);         /* may end t (and others): look from the start again */
                        t = ac->submissions;
                } else
                        t = t->next;
        if (done)
                done(userdata, r, res, err);
        else if (res && res->outcome == SUBMIT_EXISTING_RECORD)
                store_record_free(res->record);
}

static void submission_fail(Submission *s, const RequestError *err) {
        submission_end(s, -EINVAL, NULL, err);
}

/* The same request again: that execution; another request under the same id: a conflict. */
static void submission_found(Submission *s, Job *j, StoreRecord *rec) {
        SubmitResult res;
        RequestError err;

        if (memcmp(j ? j->fingerprint : rec->fingerprint, s->er->fingerprint, sizeof(s->er->fingerprint)) != 0) {
                store_record_free(rec);
                (void) conflict(&err, s->er->execution_id);
                submission_fail(s, &err);
                return;
        }
        res = j ? (SubmitResult) { .outcome = SUBMIT_EXISTING_JOB, .job = j }
                : (SubmitResult) { .outcome = SUBMIT_EXISTING_RECORD, .record = rec };
        submission_end(s, 0, &res, NULL);
}

/* The job in memory under id that the caller may see, as find_record() has it. */
static Job *runner_find_visible(ApiContext *ac, const char *owner, const char *id) {
        Job *j = runner_find(ac->runner, id);

        if (j && j->elsewhere && !job_is_final(j))
                return NULL;
        return j && may_see(owner, false, j->owner) ? j : NULL;
}

static void step_usage(Submission *s);
static void on_earlier_got(void *userdata, int r, StoreRecord *rec);

/* The caller's earlier execution of the same execution_id (s->key: its record id), or of the same id
 * as it was stored before ids were scoped (migration 10: the key was the caller's id itself; only the
 * caller's own counts). */
static void step_earlier(Submission *s) {
        ApiContext *ac = s->ac;
        RequestError err;
        int r;

        s->step = STEP_EARLIER;
        for (; s->er->execution_id && s->i_earlier < 2; s->i_earlier++) {
                const char *id = s->i_earlier == 0 ? s->key : s->er->execution_id;
                Job *j = runner_find_visible(ac, s->owner, id);

                if (j) {
                        submission_found(s, j, NULL);
                        return;
                }
                if (!ac->ctx->store)
                        continue;
                r = store_get_async(ac->ctx->store, id, on_earlier_got, s, &s->call);
                if (r >= 0)
                        return;
                /* Refused (out of memory): failed, rather than run twice what may be there. */
                (void) fail(&err, r, API_ERROR_INTERNAL, "cannot read the earlier execution: %s", strerror(-r));
                submission_fail(s, &err);
                return;
        }
        step_usage(s);
}

/* Another submission whose job under key is being recorded. */
static Submission *recording(ApiContext *ac, const char *key, const Submission *except) {
        for (Submission *t = ac->submissions; t; t = t->next)
                if (t != except && t->job && streq(t->key, key))
                        return t;
        return NULL;
}

static void on_earlier_got(void *userdata, int r, StoreRecord *rec) {
        Submission *s = userdata;

        s->call = NULL;
        if (r >= 0 && may_see(s->owner, false, rec->owner)) {
                /* The first record of a job this node made meanwhile (the read came after its write):
                 * that job, in the runner or about to be, not the record of it as queued. */
                if (s->i_earlier == 0 &&
                    (runner_find_visible(s->ac, s->owner, s->key) || recording(s->ac, s->key, s))) {
                        /* The checks go on as for a new id: step_create() finds it (or waits). */
                        store_record_free(rec);
                        s->i_earlier = 2;
                        step_usage(s);
                        return;
                }
                submission_found(s, NULL, rec);
                return;
        }
        store_record_free(rec);
        s->i_earlier++;
        step_earlier(s);
}

static void step_session(Submission *s);

static void usage_read(Submission *s, int r, const StoreUsage *u) {
        /* A store that cannot be read counts as nothing: the record's own write fails next if it is
         * broken. */
        if (r < 0)
                log_warning_errno(r, "Cannot read the stored usage of %s, not counting it: %s", s->owner,
                                  store_error_message(s->ac->ctx->store));
        s->stored = r >= 0 ? *u : (StoreUsage) {};
        step_session(s);
}

static void on_usage_got(void *userdata, int r, const StoreUsage *u) {
        Submission *s = userdata;

        s->call = NULL;
        usage_read(s, r, u);
}

/* The caller's records and deliveries in the store: its record_usage row (one indexed read, kept by
 * triggers). */
static void step_usage(Submission *s) {
        Store *store = s->ac->ctx->store;
        int r;

        s->step = STEP_USAGE;
        if (!store || !s->owner) {
                step_session(s);
                return;
        }
        r = store_usage_get_async(store, s->owner, on_usage_got, s, &s->call);
        if (r < 0)
                usage_read(s, r, &(const StoreUsage) {});
}

static void on_session_got(void *userdata, int r, StoreSession *x);
static void on_nodes_got(void *userdata, int r, StoreNode *nodes, size_t n);

/* A run of a session not held here, on a store several nodes share: the node that made it runs it,
 * if that node is alive: er->route_node names it, and the run is stored for it to claim
 * (store_claim_routed()). */
static void step_session(Submission *s) {
        ApiContext *ac = s->ac;
        char key[SCOPED_ID_MAX];
        int r;

        s->step = STEP_SESSION;
        if (!s->er->session_id || !ac->ctx->shared_queue || sessions_find(ac->sessions, s->owner, s->er->session_id)) {
                step_create(s);
                return;
        }
        r = scoped_id(key, "sess", s->owner, s->er->session_id);
        if (r >= 0)
                r = store_session_get_async(ac->ctx->store, key, on_session_got, s, &s->call);
        if (r < 0)
                on_session_got(s, r, NULL);
}

static void on_session_got(void *userdata, int r, StoreSession *x) {
        Submission *s = userdata;
        ApiContext *ac = s->ac;
        RequestError err;

        s->call = NULL;
        if (r < 0 && r != -ENOENT) {
                (void) fail(&err, r, API_ERROR_STORE, "cannot read the sessions: %s", store_error_public(r));
                submission_fail(s, &err);
                return;
        }
        if (r < 0 || !x->node || streq_ptr(x->node, ac->ctx->node_name)) {
                /* Not another node's: found or made here. */
                store_sessions_free(x, x ? 1 : 0);
                step_create(s);
                return;
        }
        s->session = x;
        s->step = STEP_NODES;
        r = store_node_list_async(ac->ctx->store, on_nodes_got, s, &s->call);
        if (r < 0)
                on_nodes_got(s, r, NULL, 0);
}

static void on_nodes_got(void *userdata, int r, StoreNode *nodes, size_t n) {
        Submission *s = userdata;
        ApiContext *ac = s->ac;
        const Config *cfg = ac->ctx->config;
        ExecRequest *er = s->er;
        StoreSession *x = s->session;
        RequestError err;
        bool alive = false;

        s->call = NULL;
        if (r < 0) {
                (void) fail(&err, r, API_ERROR_STORE, "cannot read the node registry: %s", store_error_public(r));
                submission_fail(s, &err);
                return;
        }
        for (size_t i = 0; i < n; i++)
                if (streq(nodes[i].name, x->node))
                        alive = store_node_is_alive(&nodes[i], now_usec(CLOCK_REALTIME));
        store_nodes_free(nodes, n);
        if (!alive)
                (void) request_error(&err, -EHOSTDOWN, API_ERROR_CONFLICT, "session_id",
                                     "session_id: session '%s' lives on node '%s', which is gone (its lease ran out): its "
                                     "workspace is there, not here; wait for that node to come back, or use another "
                                     "session_id", er->session_id, x->node);
        else if (er->disk_mb_given && er->limits.disk_mb != x->disk_mb)
                (void) request_error(&err, -EEXIST, API_ERROR_CONFLICT, "limits.disk_mb",
                                     "limits.disk_mb: session '%s' was created with disk_mb=%" PRIu64
                                     ", this request asks for %" PRIu64, er->session_id, x->disk_mb, er->limits.disk_mb);
        /* What waits here for other nodes is bounded like the queue. */
        else if (runner_count_elsewhere(ac->runner) >= cfg->max_queued)
                (void) request_error(&err, -ENOBUFS, API_ERROR_QUEUE_FULL, NULL,
                                     "%u executions accepted here run on other nodes and are not finished (MaxQueued=%" PRIu64
                                     "); retry later", runner_count_elsewhere(ac->runner), cfg->max_queued);
        else {
                er->limits.disk_mb = x->disk_mb;
                er->route_node = TAKE_PTR(x->node);
                step_create(s);
                return;
        }
        submission_fail(s, &err);
}

/* The queue and the caller's budgets (quota.h): what everyone and this owner hold now, with what is
 * being recorded, and the caller's stored records and deliveries as read. */
static int check_budgets(Submission *s, RequestError *err) {
        ApiContext *ac = s->ac;
        const Config *cfg = ac->ctx->config;
        const QueueOwner *o = runner_queue_owner(ac->runner, s->owner);
        RunnerCounts n;
        QuotaUsage u;
        int r;

        runner_counts(ac->runner, &n);
        u = (QuotaUsage) {
                .admin = s->admin,
                .queued = n.queued,
                .running = n.running,
                .caller_queued = o ? o->n_waiting : 0,
                .caller_running = o ? o->n_active : 0,
                .callback = s->er->callback_url != NULL,
                /* Delivered later: those of executions not final yet, and those pending in the outbox. */
                .caller_callbacks = (o ? o->n_callbacks : 0) + s->stored.pending_callbacks,
                .caller_stored_bytes = s->stored.bytes,
        };
        /* Those being recorded count as they were checked: started (a slot was free) or queued, as
         * if each had joined the runner then. */
        for (Submission *t = ac->submissions; t; t = t->next)
                if (t->job) {
                        bool mine = streq_ptr(t->owner, s->owner);

                        if (t->starts_now) {
                                u.running++;
                                u.caller_running += mine;
                        } else {
                                u.queued++;
                                u.caller_queued += mine;
                        }
                        u.caller_callbacks += mine && t->job->callback_url;
                }
        r = quota_check_execution(cfg, &u, err);
        if (r < 0)
                return r;
        s->starts_now = u.running < cfg->max_concurrent && u.caller_running < quota_max_running_per_caller(cfg);
        return 0;
}

static void on_recorded(void *userdata, int r, StoreRecord *rec);
static void recorded(Submission *s, int r);

/* What the reads cannot have settled, now, without waiting: an execution of the same id made since
 * (in the runner, or being recorded: then wait for it), the stop, the budgets; then the job and its
 * first write. */
static void step_create(Submission *s) {
        ApiContext *ac = s->ac;
        ExecRequest *er = s->er;
        RequestError err;
        Job *j;
        int r;

        if (er->execution_id) {
                j = runner_find_visible(ac, s->owner, s->key);
                if (j) {
                        submission_found(s, j, NULL);
                        return;
                }
                Submission *t = recording(ac, s->key, s);
                if (t) {
                        if (memcmp(t->job->fingerprint, er->fingerprint, sizeof(er->fingerprint)) != 0) {
                                (void) conflict(&err, er->execution_id);
                                submission_fail(s, &err);
                                return;
                        }
                        s->step = STEP_WAIT;
                        s->waiting_for = t;
                        return;
                }
        }
        if (ac->ctx->stopping) {
                (void) fail(&err, -ESHUTDOWN, API_ERROR_SHUTTING_DOWN, "sandboxd is stopping");
                submission_fail(s, &err);
                return;
        }
        if (check_budgets(s, &err) < 0) {
                submission_fail(s, &err);
                return;
        }
        if (er->session_id && !er->route_node) {
                Session *x = sessions_find(ac->sessions, s->owner, er->session_id);

                /* A later run that does not ask for a size gets the session's. */
                if (x && !er->disk_mb_given)
                        er->limits.disk_mb = x->disk_mb;
                if (sessions_acquire(ac->sessions, er->session_id, s->owner, er->limits.disk_mb, &x, &err) < 0) {
                        submission_fail(s, &err);
                        return;
                }
        }

        /* The shared queue: any node may claim it, but a session's run runs where its session is, and
         * one that starts here at once is this node's from its first write (runner_starts_now()). */
        er->unclaimed = ac->ctx->shared_queue && !er->session_id && !runner_starts_now(ac->runner, s->owner);
        r = runner_prepare(ac->runner, TAKE_PTR(s->er), s->owner, &s->job);
        if (r < 0) {
                (void) fail(&err, r, API_ERROR_INTERNAL, "cannot create the execution: %s", strerror(-r));
                submission_fail(s, &err);
                return;
        }
        s->step = STEP_RECORD;
        /* Nothing runs that is not on record: a store that cannot take the row fails the request. */
        if (!ac->ctx->store) {
                recorded(s, 0);
                return;
        }
        s->with_session = s->job->session && s->job->session->unrecorded;
        r = job_record_async(s->job, on_recorded, s, &s->call);
        if (r < 0)
                /* Refused (out of memory): the caller is told, nothing waits. */
                recorded(s, r);
}

static void on_recorded(void *userdata, int r, StoreRecord *rec) {
        Submission *s = userdata;

        store_record_free(rec);
        s->call = NULL;
        recorded(s, r);
}

static void recorded(Submission *s, int r) {
        ApiContext *ac = s->ac;
        SubmitResult res;
        RequestError err;
        Job *j;

        /* A session made for this run: its row went with the record, both or neither. */
        Session *x = s->with_session ? s->job->session : NULL;

        if (r < 0) {
                job_persist_failed(s->job, r);
                s->job = job_free(s->job);
                if (x)
                        session_recorded(x, r);
                (void) fail(&err, r, r == -ENOSPC ? API_ERROR_STORE_FULL : API_ERROR_STORE,
                            "the %s could not be recorded (%s); nothing was started", x ? "session" : "execution",
                            store_error_public(r));
                submission_fail(s, &err);
                return;
        }
        if (x)
                session_recorded(x, 0);
        j = TAKE_PTR(s->job);
        r = runner_add(ac->runner, j);
        if (r < 0) {
                job_free(j);
                (void) fail(&err, r, API_ERROR_INTERNAL, "cannot queue the execution: %s", strerror(-r));
                submission_fail(s, &err);
                return;
        }
        if (j->elsewhere) {
                /* A run of another node's session: that node claims it at once (or at its next look). */
                log_info("%s: a run of session %s, sent to node '%s' which holds it", j->exec->id, j->exec->session_id,
                         j->exec->node);
                (void) store_queue_notify_async(ac->ctx->store, ac->ctx->node_name, NULL, NULL, NULL);
        } else
                log_debug("%s: queued (%s)", j->exec->id, j->exec->language);
        runner_dispatch(ac->runner);
        runner_notify_status(ac->runner);

        res = (SubmitResult) { .outcome = SUBMIT_CREATED, .job = j };
        submission_end(s, 0, &res, NULL);
}

int submit_execution_async(ApiContext *ac, const char *body, size_t len, const char *owner, bool admin,
                           SubmitDoneFn done, void *userdata, Submission **ret) {
        _cleanup_(exec_request_freep) ExecRequest *er = NULL;
        RequestError err;
        Submission *s;
        bool called = false;
        int r;

        *ret = NULL;
        r = exec_request_parse(body, len, ac->ctx->config, &er, &err);
        if (r == -ENOMEM)
                (void) fail(&err, r, API_ERROR_INTERNAL, "out of memory");
        if (r < 0)
                goto refused;
        if (er->network) {
                char msg[sizeof(err.message)], field[48];
                size_t index;

                r = net_policy_check_request(ac->ctx->net_policy, er->network_allow, er->n_network_allow, &index, msg,
                                             sizeof(msg));
                if (r < 0) {
                        if (index != SIZE_MAX)
                                snprintf(field, sizeof(field), "network.allow[%zu]", index);
                        (void) request_error(&err, -EINVAL, API_ERROR_INVALID_REQUEST,
                                             index != SIZE_MAX ? field : "network", "%s", msg);
                        goto refused;
                }
        }
        if (er->environment) {
                const Environment *env = environments_find(ac->ctx->environments, er->environment);

                r = -EINVAL;
                if (!env) {
                        (void) request_error(&err, -EINVAL, API_ERROR_INVALID_REQUEST, "environment",
                                             "environment: no environment '%s' here (GET /v1/languages lists each "
                                             "language's environments)", er->environment);
                        goto refused;
                }
                if (!streq(env->language, er->language->name)) {
                        (void) request_error(&err, -EINVAL, API_ERROR_INVALID_REQUEST, "environment",
                                             "environment: '%s' is an environment of %s, not of %s", er->environment,
                                             env->language, er->language->name);
                        goto refused;
                }
        }
        r = choose_tier(ac->ctx, er, &err);
        if (r < 0)
                goto refused;
        /* Each holds its request until the store answers: bounded like the store's own queue. */
        if (ac->n_submissions >= SUBMISSIONS_MAX) {
                r = request_error(&err, -ENOBUFS, API_ERROR_QUEUE_FULL, NULL,
                                  "%u submissions are waiting for the store; retry later", ac->n_submissions);
                goto refused;
        }

        s = calloc(1, sizeof(Submission));
        if (!s) {
                r = fail(&err, -ENOMEM, API_ERROR_INTERNAL, "out of memory");
                goto refused;
        }
        *s = (Submission) { .ac = ac, .admin = admin, .done = done, .userdata = userdata };
        s->owner = owner ? strdup(owner) : NULL;
        if (owner && !s->owner) {
                free(s);
                r = fail(&err, -ENOMEM, API_ERROR_INTERNAL, "out of memory");
                goto refused;
        }
        if (er->execution_id) {
                /* The caller's id, scoped by the caller: another owner's execution of the same id is
                 * another record (no conflict, nothing learned, nothing squatted), and the record id
                 * it runs under (unit name, journal, artifact URLs) is derived, never chosen. */
                r = scoped_id(s->key, "exec", owner, er->execution_id);
                if (r >= 0 && !(er->record_id = strdup(s->key)))
                        r = -ENOMEM;
                if (r < 0) {
                        free(s->owner);
                        free(s);
                        (void) fail(&err, r, API_ERROR_INTERNAL, "cannot derive the record id: %s", strerror(-r));
                        goto refused;
                }
        }
        s->er = TAKE_PTR(er);
        s->next = ac->submissions;
        if (ac->submissions)
                ac->submissions->prev = s;
        ac->submissions = s;
        ac->n_submissions++;

        /* Ended before this returns when nothing needs the store (or the store has no loop). */
        s->called = &called;
        step_earlier(s);
        if (called)
                return 1;
        s->called = NULL;
        *ret = s;
        return 0;

refused:
        done(userdata, r, NULL, &err);
        return 1;
}

Submission *submission_abandon(Submission *s) {
        if (s) {
                s->done = NULL;
                s->userdata = NULL;
        }
        return NULL;
}

void submissions_stop(ApiContext *ac) {
        /* A record on its way is still written (store.h): a queued execution the next start resumes. */
        while (ac->submissions)
                submission_free(ac->submissions);
}

#define invalid(err, field, ...) \
        request_error((err), -EINVAL, API_ERROR_INVALID_REQUEST, (field), __VA_ARGS__)

int list_error(ApiContext *ac, int r, RequestError *err) {
        if (r == -EINVAL)
                return invalid(err, "cursor", "cursor: not a cursor of this query");
        log_warning_errno(r, "Cannot list executions: %s", store_error_message(ac->ctx->store));
        return fail(err, r, API_ERROR_STORE, "cannot read the store: %s", store_error_public(r));
}

json_object *list_page_json(StoreRecord **l, size_t n, const char *next) {
        json_object *o, *a;

        o = json_object_new_object();
        a = json_object_new_array();
        for (size_t i = 0; i < n; i++) {
                json_object *e = execution_to_json(l[i]->exec);

                /* A page of records, not of outputs: fetch one execution for its stdout/stderr and
                 * its artifacts. */
                json_object_object_del(e, "stdout");
                json_object_object_del(e, "stderr");
                json_object_object_del(e, "artifacts");
                json_object_object_del(e, "artifacts_skipped");
                json_object_object_del(e, "artifacts_skipped_total");
                json_object_array_add(a, e);
        }
        json_object_object_add(o, "executions", a);
        json_object_object_add(o, "next_cursor", next ? json_object_new_string(next) : NULL);
        return o;
}

json_object *execution_json_base(ApiContext *ac, const Execution *e) {
        json_object *o = execution_to_json(e), *l = NULL;
        uint64_t expires;
        char ts[64];

        if (!o || !exec_status_is_final(e->status))
                return o;
        /* A freshly signed URL for each artifact. */
        if (!e->artifacts || !json_object_object_get_ex(o, "artifacts", &l) || !l)
                return o;
        expires = now_usec(CLOCK_REALTIME) / USEC_PER_SEC + ac->ctx->config->artifact_url_lifetime_sec;
        format_timestamp(expires * USEC_PER_SEC, ts, sizeof(ts));
        for (size_t i = 0; i < e->artifacts->n_items && i < json_object_array_length(l); i++) {
                json_object *x = json_object_array_get_idx(l, i);
                char *url = NULL;

                if (artifact_url_build(ac->ctx->artifact_key, ac->ctx->artifact_key_len, e->id, e->artifacts->items[i].path,
                                       expires, &url) < 0)
                        url = NULL;
                json_object_object_add(x, "url", url ? json_object_new_string(url) : NULL);
                json_object_object_add(x, "url_expires_at", json_object_new_string(ts));
                free(url);
        }
        return o;
}

/* ---- an execution's JSON without waiting for the store (issue 22) ---- */

struct RecordRender {
        ApiContext *ac;
        Job *job;                /* held (j->holds) until the end; NULL: a stored record alone */
        StoreRecord *rec;        /* the stored record: read back (a final job's output), or given */
        ExecArtifacts *artifacts;/* the artifact list, read */
        json_object *o;          /* rendered, waiting for the callback's state */
        StoreCall *call;
        RecordJsonDoneFn done;
        void *userdata;
        bool *called;            /* while the function that made it runs: done was called */
};

RecordRender *record_render_cancel(RecordRender *x) {
        if (!x)
                return NULL;
        (void) store_call_cancel(x->call);
        if (x->job)
                x->job->holds--;
        store_record_free(x->rec);
        exec_artifacts_free(x->artifacts);
        json_object_put(x->o);
        return mfree(x);
}

static void render_end(RecordRender *x, json_object *o, const RequestError *err) {
        RecordJsonDoneFn done = x->done;
        void *userdata = x->userdata;

        if (x->called)
                *x->called = true;
        (void) record_render_cancel(x);
        done(userdata, o, err);
}

static void render_fail(RecordRender *x, ApiError error, const char *fmt, ...) _printf_(3, 4);
static void render_fail(RecordRender *x, ApiError error, const char *fmt, ...) {
        RequestError err = { .error = error };
        va_list ap;

        va_start(ap, fmt);
        (void) vsnprintf(err.message, sizeof(err.message), fmt, ap);
        va_end(ap);
        render_end(x, NULL, &err);
}

static void on_render_callback(void *userdata, int r, StoreCallback *cb) {
        RecordRender *x = userdata;

        x->call = NULL;
        if (r >= 0)
                callback_json_add(x->o, cb);
        store_callback_free(cb);
        render_end(x, TAKE_PTR(x->o), NULL);
}

/* The JSON of what was gathered: the record read (or given), else the job; the artifact list read,
 * else (a record read back for a job whose list the store does not have) the job's. Then the
 * callback's state of a final one. */
static void render_job_step(RecordRender *x);

static void render_json(RecordRender *x) {
        Execution *e = x->rec ? x->rec->exec : x->job->exec;
        Store *store = x->ac->ctx->store;
        bool borrowed = false;

        /* The job's final record was written while the store was read (its answers come in order):
         * the job has let its output go, the record has it. */
        if (!x->rec && job_is_final(x->job) && x->job->output_stored && store) {
                render_job_step(x);
                return;
        }

        if (!e->artifacts) {
                if (x->artifacts)
                        e->artifacts = x->artifacts;
                else if (x->rec && x->job && !x->job->artifacts_stored)
                        e->artifacts = x->job->exec->artifacts;
                borrowed = e->artifacts != NULL;
        }
        x->o = execution_json_base(x->ac, e);
        if (borrowed)
                e->artifacts = NULL;
        if (!x->o) {
                render_fail(x, API_ERROR_INTERNAL, "out of memory");
                return;
        }
        if (!exec_status_is_final(e->status) || !store) {
                render_end(x, TAKE_PTR(x->o), NULL);
                return;
        }
        if (store_callback_get_async(store, e->id, on_render_callback, x, &x->call) < 0)
                /* Refused (out of memory): without the callback's state. */
                render_end(x, TAKE_PTR(x->o), NULL);
}

static void on_render_artifacts(void *userdata, int r, ExecArtifacts *a) {
        RecordRender *x = userdata;

        x->call = NULL;
        /* Not there (never collected, or an older sandboxd): the list stays empty. */
        x->artifacts = r >= 0 ? a : NULL;
        render_json(x);
}

/* The artifact list from the store, if e is final and has none: then render. */
static void render_artifacts(RecordRender *x, const Execution *e) {
        Store *store = x->ac->ctx->store;
        int r;

        if (!store || !exec_status_is_final(e->status) || e->artifacts || x->artifacts) {
                render_json(x);
                return;
        }
        r = store_get_artifacts_async(store, e->id, on_render_artifacts, x, &x->call);
        if (r < 0)
                on_render_artifacts(x, r, NULL);
}

static void on_render_record(void *userdata, int r, StoreRecord *rec) {
        RecordRender *x = userdata;

        x->call = NULL;
        if (r == -ENOENT) {
                render_fail(x, API_ERROR_NOT_FOUND, "no execution '%s' (purged)", x->job->exec->id);
                return;
        }
        if (r < 0) {
                log_warning_errno(r, "%s: cannot read its record: %s", x->job->exec->id,
                                  store_error_message(x->ac->ctx->store));
                render_fail(x, API_ERROR_STORE, "cannot read the record of execution '%s': %s", x->job->exec->id,
                            store_error_public(r));
                return;
        }
        x->rec = rec;
        /* The job's own artifact list when the store has none (render_json()). */
        if (x->job->artifacts_stored)
                render_artifacts(x, rec->exec);
        else
                render_json(x);
}

/* Run step on x, and say whether it ended before returning (1) or will from the loop (0, *ret). */
static int render_run(RecordRender *x, void (*step)(RecordRender *x), RecordRender **ret) {
        bool called = false;

        x->called = &called;
        step(x);
        if (called)
                return 1;
        x->called = NULL;
        *ret = x;
        return 0;
}

static RecordRender *render_new(ApiContext *ac, RecordJsonDoneFn done, void *userdata) {
        RecordRender *x = calloc(1, sizeof(RecordRender));

        if (x)
                *x = (RecordRender) { .ac = ac, .done = done, .userdata = userdata };
        return x;
}

static void render_job_step(RecordRender *x) {
        Job *j = x->job;
        Store *store = x->ac->ctx->store;
        int r;

        assert(!x->rec);

        if (job_is_final(j) && j->output_stored && store) {
                /* A final job's output is in the store only (up to 2 * (OutputHeadBytes= +
                 * OutputTailBytes=) of text for each of KeepFinished= jobs would be a lot of
                 * memory): the record is read back whole. */
                r = store_get_async(store, j->exec->id, on_render_record, x, &x->call);
                if (r < 0)
                        on_render_record(x, r, NULL);
                return;
        }
        /* Final, its record write failed: the artifact list alone may be in the store. */
        render_artifacts(x, j->exec);
}

int job_record_json_async(ApiContext *ac, Job *j, RecordJsonDoneFn done, void *userdata, RecordRender **ret) {
        RecordRender *x = render_new(ac, done, userdata);

        *ret = NULL;
        if (!x)
                return -ENOMEM;
        x->job = j;
        j->holds++;
        return render_run(x, render_job_step, ret);
}

static void render_record_step(RecordRender *x) {
        render_artifacts(x, x->rec->exec);
}

int stored_record_json_async(ApiContext *ac, StoreRecord *rec, RecordJsonDoneFn done, void *userdata,
                             RecordRender **ret) {
        RecordRender *x = render_new(ac, done, userdata);

        *ret = NULL;
        if (!x) {
                store_record_free(rec);
                return -ENOMEM;
        }
        x->rec = rec;
        return render_run(x, render_record_step, ret);
}

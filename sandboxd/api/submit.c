/* SPDX-License-Identifier: LGPL-2.1-or-later */
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

/* The job or record of record id key, if who may see it (0 if not, or there is none). */
static int find_record(ApiContext *ac, const char *owner, bool admin, const char *key, Job **ret_job,
                       StoreRecord **ret_rec) {
        StoreRecord *rec = NULL;
        Job *j = runner_find(ac->runner, key);

        /* Accepted here, run by another node: the store has what is true of it now. */
        if (j && j->elsewhere && !job_is_final(j))
                j = NULL;
        if (j) {
                if (!may_see(owner, admin, j->owner))
                        return 0;
                *ret_job = j;
                return 1;
        }
        if (!ac->ctx->store || store_get(ac->ctx->store, key, &rec) < 0)
                return 0;
        if (!may_see(owner, admin, rec->owner)) {
                store_record_free(rec);
                return 0;
        }
        *ret_rec = rec;
        return 1;
}

int cancel_elsewhere(ApiContext *ac, StoreRecord *rec) {
        Execution *e = rec->exec;
        int r;

        if (exec_status_is_final(e->status) || !e->node || streq_ptr(e->node, ac->ctx->node_name))
                return -EALREADY;
        r = store_cancel_elsewhere(ac->ctx->store, e->id);
        if (r == -EOPNOTSUPP)
                return -EALREADY;
        if (r < 0)
                return r;
        e->cancel_requested = true;
        log_info("%s: cancel requested, sent to node '%s' which runs it", e->id, e->node);
        return 0;
}

int cancel_job(ApiContext *ac, Job *j, StoreRecord **ret_rec) {
        _cleanup_(store_record_freep) StoreRecord *rec = NULL;
        int r;

        *ret_rec = NULL;
        r = job_cancel(j);
        if (r != -EREMOTE)
                return r;
        r = store_get(ac->ctx->store, j->exec->id, &rec);
        if (r < 0)
                return r == -ENOENT ? -EALREADY : r;
        r = cancel_elsewhere(ac, rec);
        if (r < 0)
                return r;
        *ret_rec = TAKE_PTR(rec);
        return 0;
}

int find_execution(ApiContext *ac, const char *owner, bool admin, const char *id, Job **ret_job,
                   StoreRecord **ret_rec) {
        char key[SCOPED_ID_MAX];

        *ret_job = NULL;
        *ret_rec = NULL;
        if (!id_is_valid(id, REQUEST_ID_MAX))
                return 0;
        /* The caller's own name first: a record id of someone else's that happens to be spelled
         * like it never shadows the caller's own execution. */
        if (scoped_id(key, "exec", owner, id) >= 0 && find_record(ac, owner, false, key, ret_job, ret_rec) > 0)
                return 1;
        return find_record(ac, owner, admin, id, ret_job, ret_rec);
}

struct FindLookup {
        ApiContext *ac;
        char *owner;
        char keys[2][MAX(SCOPED_ID_MAX, REQUEST_ID_MAX + 1)];   /* the scoped key, the id itself */
        bool key_admin[2];              /* the scoped key is the caller's own only, as in find_execution() */
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
                /* Refused (-ENOBUFS: the store is far behind): read synchronously, which waits for
                 * the queue, rather than answer "not found" for a record that is there. */
                _cleanup_(store_record_freep) StoreRecord *rec = NULL;
                if (store_get(f->ac->ctx->store, key, &rec) >= 0 && may_see(f->owner, f->key_admin[f->i], rec->owner))
                        return find_lookup_done(f, NULL, TAKE_PTR(rec));
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

/* The caller's earlier execution of the same execution_id (key: its record id), or of the same id
 * as it was stored before ids were scoped (migration 10: the key was the caller's id itself; only
 * the caller's own counts). The same request again is that execution; another request is a
 * conflict. 1 if found (*ret filled), 0 if the id is new to this caller, negative with *err. */
static int find_earlier(ApiContext *ac, const char *owner, const ExecRequest *er, const char *key,
                        SubmitResult *ret, RequestError *err) {
        const char *ids[] = { key, er->execution_id };

        for (size_t i = 0; i < ELEMENTSOF(ids); i++) {
                _cleanup_(store_record_freep) StoreRecord *rec = NULL;
                Job *j = NULL;

                if (find_record(ac, owner, false, ids[i], &j, &rec) == 0)
                        continue;
                if (memcmp(j ? j->fingerprint : rec->fingerprint, er->fingerprint, sizeof(er->fingerprint)) != 0)
                        return conflict(err, er->execution_id);
                /* The same request again: the same execution, never a second run. */
                *ret = j ? (SubmitResult) { .outcome = SUBMIT_EXISTING_JOB, .job = j }
                         : (SubmitResult) { .outcome = SUBMIT_EXISTING_RECORD, .record = TAKE_PTR(rec) };
                return 1;
        }
        return 0;
}

/* The queue and the caller's budgets (quota.h): what everyone and this owner hold now. The caller's
 * records and deliveries come from the store's record_usage row (one indexed read, kept by triggers);
 * a store that cannot be read counts as nothing, the record's own write fails next if it is broken. */
static int check_budgets(ApiContext *ac, const char *owner, bool admin, const ExecRequest *er, RequestError *err) {
        const QueueOwner *o = runner_queue_owner(ac->runner, owner);
        StoreUsage stored = {};
        RunnerCounts n;
        QuotaUsage u;

        if (ac->ctx->store && owner) {
                int r = store_usage_get(ac->ctx->store, owner, &stored);

                if (r < 0)
                        log_warning_errno(r, "Cannot read the stored usage of %s, not counting it: %s", owner,
                                          store_error_message(ac->ctx->store));
        }
        runner_counts(ac->runner, &n);
        u = (QuotaUsage) {
                .admin = admin,
                .queued = n.queued,
                .running = n.running,
                .caller_queued = o ? o->n_waiting : 0,
                .caller_running = o ? o->n_active : 0,
                .callback = er->callback_url != NULL,
                /* Delivered later: those of executions not final yet, and those pending in the outbox. */
                .caller_callbacks = (o ? o->n_callbacks : 0) + stored.pending_callbacks,
                .caller_stored_bytes = stored.bytes,
        };
        return quota_check_execution(ac->ctx->config, &u, err);
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

static int session_elsewhere(ApiContext *ac, const char *owner, ExecRequest *er, RequestError *err);

int submit_execution(ApiContext *ac, const char *body, size_t len, const char *owner, bool admin, SubmitResult *ret,
                     RequestError *err) {
        _cleanup_(exec_request_freep) ExecRequest *er = NULL;
        Job *j;
        int r;

        r = exec_request_parse(body, len, ac->ctx->config, &er, err);
        if (r == -ENOMEM)
                return fail(err, r, API_ERROR_INTERNAL, "out of memory");
        if (r < 0)
                return r;
        if (er->network) {
                char msg[sizeof(err->message)], field[48];
                size_t index;

                r = net_policy_check_request(ac->ctx->net_policy, er->network_allow, er->n_network_allow, &index, msg,
                                             sizeof(msg));
                if (r < 0) {
                        if (index != SIZE_MAX)
                                snprintf(field, sizeof(field), "network.allow[%zu]", index);
                        return request_error(err, -EINVAL, API_ERROR_INVALID_REQUEST,
                                             index != SIZE_MAX ? field : "network", "%s", msg);
                }
        }
        if (er->environment) {
                const Environment *env = environments_find(ac->ctx->environments, er->environment);

                if (!env)
                        return request_error(err, -EINVAL, API_ERROR_INVALID_REQUEST, "environment",
                                             "environment: no environment '%s' here (GET /v1/languages lists each "
                                             "language's environments)", er->environment);
                if (!streq(env->language, er->language->name))
                        return request_error(err, -EINVAL, API_ERROR_INVALID_REQUEST, "environment",
                                             "environment: '%s' is an environment of %s, not of %s", er->environment,
                                             env->language, er->language->name);
        }

        r = choose_tier(ac->ctx, er, err);
        if (r < 0)
                return r;

        if (er->execution_id) {
                /* The caller's id, scoped by the caller: another owner's execution of the same id is
                 * another record (no conflict, nothing learned, nothing squatted), and the record id
                 * it runs under (unit name, journal, artifact URLs) is derived, never chosen. */
                char key[SCOPED_ID_MAX];

                r = scoped_id(key, "exec", owner, er->execution_id);
                if (r < 0)
                        return fail(err, r, API_ERROR_INTERNAL, "cannot derive the record id: %s", strerror(-r));
                r = find_earlier(ac, owner, er, key, ret, err);
                if (r != 0)
                        return r < 0 ? r : 0;
                er->record_id = strdup(key);
                if (!er->record_id)
                        return fail(err, -ENOMEM, API_ERROR_INTERNAL, "out of memory");
        }

        if (ac->ctx->stopping)
                return fail(err, -ESHUTDOWN, API_ERROR_SHUTTING_DOWN, "sandboxd is stopping");
        r = check_budgets(ac, owner, admin, er, err);
        if (r < 0)
                return r;

        if (er->session_id) {
                Session *s = sessions_find(ac->sessions, owner, er->session_id);

                /* Several nodes: a session lives on the node that made it, and its runs run there. */
                if (!s && ac->ctx->shared_queue) {
                        r = session_elsewhere(ac, owner, er, err);
                        if (r < 0)
                                return r;
                }

                /* A later run that does not ask for a size gets the session's. */
                if (s && !er->disk_mb_given)
                        er->limits.disk_mb = s->disk_mb;
                if (!er->route_node) {
                        r = sessions_acquire(ac->sessions, er->session_id, owner, er->limits.disk_mb, &s, err);
                        if (r < 0)
                                return r;
                }
        }

        /* The shared queue: any node may claim it, but a session's run runs where its session is, and
         * one that starts here at once is this node's from its first write (runner_starts_now()). */
        er->unclaimed = ac->ctx->shared_queue && !er->session_id && !runner_starts_now(ac->runner, owner);
        r = runner_submit(ac->runner, TAKE_PTR(er), owner, &j);
        if (r < 0)
                return fail(err, r, API_ERROR_INTERNAL, "cannot create the execution: %s", strerror(-r));
        /* Nothing runs that is not on record: a store that cannot take the row fails the request. */
        r = job_persist(j);
        if (r < 0) {
                /* job_persist() logged the store's own message. */
                job_free(j);
                return fail(err, r, r == -ENOSPC ? API_ERROR_STORE_FULL : API_ERROR_STORE,
                            "the execution could not be recorded (%s); nothing was started", store_error_public(r));
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

        *ret = (SubmitResult) { .outcome = SUBMIT_CREATED, .job = j };
        return 0;
}

/* A run of a session that lives on another node (a store several nodes share): if that node is alive,
 * er->route_node names it, and the run is stored for it to claim (store_claim_routed()). 1: routed;
 * 0: the session is not another node's (it is found or made here); < 0: refused, *err says why. */
int session_held_elsewhere(ApiContext *ac, const char *owner, const char *id, StoreSession **ret) {
        char key[SCOPED_ID_MAX];
        StoreSession *x = NULL;
        int r;

        r = scoped_id(key, "sess", owner, id);
        if (r < 0)
                return r;
        r = store_session_get(ac->ctx->store, key, &x);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        if (!x->node || streq_ptr(x->node, ac->ctx->node_name)) {
                store_sessions_free(x, 1);
                return 0;
        }
        *ret = x;
        return 1;
}

static int session_elsewhere(ApiContext *ac, const char *owner, ExecRequest *er, RequestError *err) {
        Context *ctx = ac->ctx;
        StoreSession *x = NULL;
        StoreNode *nodes = NULL;
        size_t n_nodes = 0;
        bool alive = false;
        int r;

        r = session_held_elsewhere(ac, owner, er->session_id, &x);
        if (r <= 0)
                return r == 0 ? 0 : fail(err, r, API_ERROR_STORE, "cannot read the sessions: %s", store_error_public(r));
        r = store_node_list(ctx->store, &nodes, &n_nodes);
        if (r < 0) {
                store_sessions_free(x, 1);
                return fail(err, r, API_ERROR_STORE, "cannot read the node registry: %s", store_error_public(r));
        }
        for (size_t i = 0; i < n_nodes; i++)
                if (streq(nodes[i].name, x->node))
                        alive = store_node_is_alive(&nodes[i], now_usec(CLOCK_REALTIME));
        store_nodes_free(nodes, n_nodes);
        if (!alive)
                r = request_error(err, -EHOSTDOWN, API_ERROR_CONFLICT, "session_id",
                                  "session_id: session '%s' lives on node '%s', which is gone (its lease ran out): its "
                                  "workspace is there, not here; wait for that node to come back, or use another "
                                  "session_id", er->session_id, x->node);
        else if (er->disk_mb_given && er->limits.disk_mb != x->disk_mb)
                r = request_error(err, -EEXIST, API_ERROR_CONFLICT, "limits.disk_mb",
                                  "limits.disk_mb: session '%s' was created with disk_mb=%" PRIu64
                                  ", this request asks for %" PRIu64, er->session_id, x->disk_mb, er->limits.disk_mb);
        /* What waits here for other nodes is bounded like the queue. */
        else if (runner_count_elsewhere(ac->runner) >= ctx->config->max_queued)
                r = request_error(err, -ENOBUFS, API_ERROR_QUEUE_FULL, NULL,
                                  "%u executions accepted here run on other nodes and are not finished (MaxQueued=%" PRIu64
                                  "); retry later", runner_count_elsewhere(ac->runner), ctx->config->max_queued);
        else {
                er->limits.disk_mb = x->disk_mb;
                er->route_node = TAKE_PTR(x->node);
                r = 1;
        }
        store_sessions_free(x, 1);
        return r;
}

#define invalid(err, field, ...) \
        request_error((err), -EINVAL, API_ERROR_INVALID_REQUEST, (field), __VA_ARGS__)

int list_executions(ApiContext *ac, const StoreQuery *q, json_object **ret, RequestError *err) {
        StoreRecord **l = NULL;
        size_t n = 0;
        _cleanup_free_ char *next = NULL;
        json_object *o, *a;
        int r;

        r = store_list(ac->ctx->store, q, &l, &n, &next);
        if (r == -EINVAL)
                return invalid(err, "cursor", "cursor: not a cursor of this query");
        if (r < 0)
        {
                log_warning_errno(r, "Cannot list executions: %s", store_error_message(ac->ctx->store));
                return fail(err, r, API_ERROR_STORE, "cannot read the store: %s", store_error_public(r));
        }
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
        store_records_free(l, n);
        json_object_object_add(o, "executions", a);
        json_object_object_add(o, "next_cursor", next ? json_object_new_string(next) : NULL);
        *ret = o;
        return 0;
}

json_object *execution_record_json(ApiContext *ac, const Execution *e) {
        json_object *o = execution_to_json(e), *l = NULL;
        uint64_t expires;
        char ts[64];

        if (!o || !exec_status_is_final(e->status))
                return o;
        callback_add_json(ac->ctx, o, e->id);
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

int job_record_json(ApiContext *ac, Job *j, json_object **ret, RequestError *err) {
        _cleanup_(exec_artifacts_freep) ExecArtifacts *a = NULL;
        _cleanup_(store_record_freep) StoreRecord *rec = NULL;
        json_object *o;
        int r;

        if (job_is_final(j) && j->output_stored) {
                /* A final job's output is in the store only (up to 2 * (OutputHeadBytes= +
                 * OutputTailBytes=) of text for each of KeepFinished= jobs would be a lot of memory):
                 * the record is read back whole; the artifact list is the job's if the store has
                 * none. */
                r = store_get(ac->ctx->store, j->exec->id, &rec);
                if (r == -ENOENT)
                        return request_error(err, r, API_ERROR_NOT_FOUND, NULL, "no execution '%s' (purged)",
                                             j->exec->id);
                if (r < 0) {
                        log_warning_errno(r, "%s: cannot read its record: %s", j->exec->id,
                                          store_error_message(ac->ctx->store));
                        return fail(err, r, API_ERROR_STORE, "cannot read the record of execution '%s': %s",
                                    j->exec->id, store_error_public(r));
                }
                if (j->artifacts_stored)
                        o = stored_record_json(ac, rec);
                else {
                        rec->exec->artifacts = j->exec->artifacts;
                        o = execution_record_json(ac, rec->exec);
                        rec->exec->artifacts = NULL;
                }
        } else if (!job_is_final(j) || j->exec->artifacts || !ac->ctx->store ||
                   store_get_artifacts(ac->ctx->store, j->exec->id, &a) < 0)
                o = execution_record_json(ac, j->exec);
        else {
                /* The artifact list alone is in the store (the record write failed). */
                j->exec->artifacts = a;
                o = execution_record_json(ac, j->exec);
                j->exec->artifacts = NULL;
        }
        if (!o)
                return fail(err, -ENOMEM, API_ERROR_INTERNAL, "out of memory");
        *ret = o;
        return 0;
}

json_object *stored_record_json(ApiContext *ac, StoreRecord *rec) {
        /* Not there (never collected, or an older sandboxd): the list stays empty. */
        if (exec_status_is_final(rec->exec->status) && !rec->exec->artifacts && ac->ctx->store)
                (void) store_get_artifacts(ac->ctx->store, rec->exec->id, &rec->exec->artifacts);
        return execution_record_json(ac, rec->exec);
}

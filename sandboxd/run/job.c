/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-journal.h>
#include <time.h>

#include "delivery/artifact-accounts.h"
#include "delivery/callback.h"
#include "exec-protocol.h"
#include "job-internal.h"
#include "log.h"
#include "net/fetch.h"
#include "session.h"
#include "strv.h"
#include "systemd/sysd.h"
#include "time-util.h"
#include "unit/unit-props.h"
#include "unit/usr-layer.h"
#include "model/environment.h"
#include "model/summary.h"
#include "model/warm-policy.h"
#include "unit-reaper.h"
#include "warm-pool.h"
#include "workspace/workspace.h"


/* Is path a direct child of dir ("dir/name", name without '/')? */
bool path_startswith_dir(const char *path, const char *dir) {
        const char *rest = startswith(path, dir);

        return rest && rest[0] == '/' && rest[1] && !strchr(rest + 1, '/');
}

struct JobWaiter {
        JobWaiter *next;
        void (*cb)(Job *j, void *userdata);
        void *userdata;
};

static void log_execution_start(Job *j);
static void on_active_state(void *userdata, int r, const char *state);
static void job_on_job_removed(Job *j, const char *unit, const char *result);
static void job_on_active_state(Job *j, const char *state);

static void on_unit_job_removed(void *userdata, const char *unit, const char *result) {
        job_on_job_removed(userdata, unit, result);
}

static void on_unit_active_state(void *userdata, _unused_ const char *unit, const char *state) {
        job_on_active_state(userdata, state);
}

/* The service: its start job's end, then its state changes. The mount: its start job's end. */
static const SysdUnitEvents unit_events = { .job_removed = on_unit_job_removed, .active_state = on_unit_active_state };
static const SysdUnitEvents mount_events = { .job_removed = on_unit_job_removed };

static int job_watch_unit(Job *j) {
        if (j->watch_unit)
                return 0;
        return sysd_watch(j->ctx->sysd, j->unit_name, &unit_events, j, &j->watch_unit);
}

static int job_watch_mount(Job *j) {
        if (j->watch_mount || !j->mount_name)
                return 0;
        return sysd_watch(j->ctx->sysd, j->mount_name, &mount_events, j, &j->watch_mount);
}
static int on_deadline(sd_event_source *s, uint64_t usec, void *userdata);
static void job_claim_warm(Job *j, WarmClaim *c);

static uint64_t now_mono(Job *j) {
        uint64_t t = 0;
        (void) sd_event_now(j->ctx->event, CLOCK_MONOTONIC, &t);
        return t;
}

bool job_is_final(const Job *j) {
        return j->state == JOB_DONE;
}

static Job *job_alloc(Context *ctx, const JobEvents *ev, void *userdata) {
        Job *j = calloc(1, sizeof(Job));

        if (!j)
                return NULL;
        j->live = live_log_new();
        if (!j->live)
                return mfree(j);
        j->ctx = ctx;
        j->events = ev;
        j->events_data = userdata;
        j->ctl_fd = -EBADF;
        j->proxy_fd = -EBADF;
        j->collect_ws_fd = -EBADF;
        j->waiting = JOB_WAIT_ALL;
        return j;
}

int job_new(Context *ctx, ExecRequest *req, const char *owner, Session *session, const JobEvents *ev, void *userdata,
            Job **ret) {
        _cleanup_(exec_request_freep) ExecRequest *request = req;
        _cleanup_(job_freep) Job *j = NULL;
        char idbuf[64];
        const char *id;
        int r;

        if (request->record_id)
                id = request->record_id;
        else if (request->execution_id)         /* unit tests: no owner to scope by */
                id = request->execution_id;
        else {
                r = id_generate(idbuf, sizeof(idbuf), "exec");
                if (r < 0)
                        return r;
                id = idbuf;
        }

        j = job_alloc(ctx, ev, userdata);
        if (!j)
                return -ENOMEM;
        j->exec = execution_new(id);
        if (!j->exec)
                return -ENOMEM;
        /* Interned: the record outlives the table the request's row is in. */
        j->exec->language = store_intern_language(request->language->name);
        j->exec->limits = request->limits;
        j->exec->created_usec = now_usec(CLOCK_REALTIME);
        /* Taken by this node at its epoch now: the fence of every write of it (store.h). A run routed
         * to the node of its session is that node's, to claim. */
        if (request->route_node) {
                if (!(j->exec->node = strdup(request->route_node)))
                        return -ENOMEM;
        } else if (ctx->node_name && !(j->exec->node = strdup(ctx->node_name)))
                return -ENOMEM;
        /* In the shared queue a submission is unclaimed (epoch 0) until a node claims it (job_claim()). */
        j->exec->node_epoch = request->unclaimed || request->route_node ? 0 : ctx->node_epoch;
        if (request->network &&
            !(j->exec->network = net_log_new(request->network_allow, request->n_network_allow)))
                return -ENOMEM;
        if (request->session_id && !(j->exec->session_id = strdup(request->session_id)))
                return -ENOMEM;
        for (size_t i = 0; i < request->n_args; i++)
                if (strv_extend(&j->exec->args, &j->exec->n_args, request->args[i]) < 0)
                        return -ENOMEM;
        j->exec->stdin_bytes = request->stdin_len;
        if (request->environment && !(j->exec->environment = strdup(request->environment)))
                return -ENOMEM;
        if (request->isolation && !(j->exec->isolation = strdup(request->isolation)))
                return -ENOMEM;
        j->strong = request->run_strong;
        if (request->execution_id && !streq(request->execution_id, id) &&
            !(j->exec->client_id = strdup(request->execution_id)))
                return -ENOMEM;
        if (owner && !(j->owner = strdup(owner)))
                return -ENOMEM;
        j->exec->unit = execution_unit_name(id);
        j->unit_name = execution_unit_name(id);
        if (!j->exec->unit || !j->unit_name)
                return -ENOMEM;
        if (request->session_id && request->route_node) {
                /* Only stored here (submit.c): its session and workspace are the other node's. */
        } else if (request->session_id) {
                /* The caller (submit.c, or the adoption of a queued record) made sure it exists. */
                if (!session)
                        return -ENOENT;
                j->session = session;
                j->session->n_jobs++;
                j->workspace = strdup(j->session->path);
                if (!j->workspace)
                        return -ENOMEM;
        } else {
        /* Named afresh, not after the execution: a workspace mount a crashed instance left behind
         * must never collide with the one this start needs (the sweep removes the old one). */
        {
                char wsid[64];

                if (id_generate(wsid, sizeof(wsid), "ws") < 0 ||
                    asprintf(&j->workspace, "%s/%s", ctx->workspaces_dir, wsid) < 0) {
                        j->workspace = NULL;
                        return -ENOMEM;
                }
        }
        j->mount_name = mount_unit_name_from_path(j->workspace);
        if (!j->mount_name)
                return -ENOMEM;
        }
        j->report_max = HELPER_REPORT_MAX + 2 * (ctx->config->output_head_bytes + ctx->config->output_tail_bytes);
        memcpy(j->fingerprint, request->fingerprint, sizeof(j->fingerprint));
        j->callback_url = TAKE_PTR(request->callback_url);
        j->request = TAKE_PTR(request);
        j->state = JOB_QUEUED;
        j->queued_mono = now_mono(j);

        *ret = TAKE_PTR(j);
        return 0;
}

/* The part of the request a restarted sandboxd needs to run a queued execution, besides the code,
 * limits and language the record has anyway. */
static char *request_json(const ExecRequest *req, const char *callback_url) {
        json_object *o = json_object_new_object(), *env = json_object_new_array();
        char *s;

        for (size_t i = 0; i < req->n_env; i++)
                json_object_array_add(env, json_object_new_string(req->env[i]));
        json_object_object_add(o, "env", env);
        json_object_object_add(o, "seed", json_object_new_uint64(req->seed));
        if (req->n_args > 0) {
                json_object *args = json_object_new_array_ext((int) req->n_args);

                for (size_t i = 0; args && i < req->n_args; i++)
                        json_object_array_add(args, json_object_new_string(req->args[i]));
                json_object_object_add(o, "args", args);
        }
        /* Kept with the record like the code is (bounded by MaxStdinBytes=): a resumed execution needs it. */
        if (req->stdin_len > 0)
                json_object_object_add(o, "stdin", json_object_new_string_len(req->stdin_data, (int) req->stdin_len));
        if (req->cold)
                json_object_object_add(o, "start", json_object_new_string("cold"));
        if (req->retry)
                json_object_object_add(o, "retry", json_object_new_boolean(true));
        if (callback_url)
                json_object_object_add(o, "callback_url", json_object_new_string(callback_url));
        /* Inline content included (bounded by MaxInlineInputBytes=): a resumed execution needs it. */
        if (req->n_files > 0) {
                json_object *files = request_files_to_json(req);

                if (!files) {
                        json_object_put(o);
                        return NULL;
                }
                json_object_object_add(o, "files", files);
        }
        s = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
        json_object_put(o);
        return s;
}

/* The record of the job as it is now: r borrows from j. */
static StoreRecord job_record(Job *j) {
        StoreRecord r = {
                .exec = j->exec,
                /* Only while the job still has it: the store keeps what it got first. */
                .code = j->request ? j->request->code : NULL,
                .owner = j->owner,
                .workspace = j->state >= JOB_PREPARING && j->state != JOB_DONE ? j->workspace : NULL,
        };

        memcpy(r.fingerprint, j->fingerprint, sizeof(r.fingerprint));
        return r;
}

void job_persist_failed(Job *j, int k) {
        metrics_store_error(j->ctx->metrics);
        /* A final record written again (runner.c) failed the first time, which was logged:
         * its retries, every 2 s while the store is away, are not. */
        log_full_errno(j->record_unsaved ? LOG_DEBUG : LOG_ERR, k, "%s: cannot write the execution record: %s",
                       j->exec->id, store_error_message(j->ctx->store));
}

/* The answer to job_persist_async(); never called after job_free() (store_cancel_userdata()). */
static void on_persisted(void *userdata, int r, StoreRecord *rec) {
        Job *j = userdata;

        store_record_free(rec);
        if (r < 0)
                job_persist_failed(j, r);
}

void job_persist_async(Job *j) {
        StoreRecord r;
        int k;

        /* Only what needs neither the request (queued) nor a delivery (final): those are written by
         * job_record_async() and the final record's writes. */
        assert(j->state != JOB_QUEUED && !job_is_final(j));
        if (!j->ctx->store)
                return;
        r = job_record(j);
        k = store_put_async(j->ctx->store, &r, on_persisted, j, NULL);
        if (k < 0)
                job_persist_failed(j, k);
}

/* The record to write now: r borrows from j, but for what *ret_request and r->callback own. */
static StoreRecord job_record_to_write(Job *j, char **ret_request) {
        StoreRecord r = job_record(j);

        *ret_request = NULL;
        if (j->state == JOB_QUEUED && j->request) {
                *ret_request = request_json(j->request, j->callback_url);
                r.request = *ret_request;
        }
        /* The final record and its callback delivery are one write: neither exists without the other. */
        if (job_is_final(j) && j->callback_url) {
                int k = callback_prepare(j->exec, j->callback_url, &r.callback);

                if (k < 0)
                        log_error_errno(k, "%s: cannot prepare the callback delivery: %m", j->exec->id);
        }
        return r;
}

int job_persist(Job *j) {
        _cleanup_free_ char *request = NULL;
        StoreRecord r;
        int k;

        if (!j->ctx->store)
                return 0;
        r = job_record_to_write(j, &request);
        k = store_put(j->ctx->store, &r);
        if (r.callback) {
                r.callback = store_callback_free(r.callback);
                if (k >= 0)
                        callbacks_kick(j->ctx->callbacks);
        }
        if (k < 0)
                job_persist_failed(j, k);
        return k;
}

int job_record_async(Job *j, StoreDoneFn done, void *userdata, StoreCall **ret_call) {
        _cleanup_free_ char *request = NULL;
        StoreRecord r;

        if (!j->ctx->store || j->state != JOB_QUEUED)
                return -EINVAL;
        /* Queued: the request goes with it, and no delivery (that is the final record's). */
        r = job_record_to_write(j, &request);
        /* The first run of a session made for it: the session's row with it, both or neither. */
        if (j->session && j->session->unrecorded) {
                StoreSession x = session_store_row(j->session);

                return store_put_session_async(j->ctx->store, &r, &x, done, userdata, ret_call);
        }
        return store_put_async(j->ctx->store, &r, done, userdata, ret_call);
}

/* The final record is in the store: the job need not hold its output in memory any more
 * (job_record_json() reads it back when asked). */
static void job_final_stored(Job *j) {
        Execution *e = j->exec;

        j->record_unsaved = false;
        if (j->ctx->store) {
                e->out.text = mfree(e->out.text);
                e->err.text = mfree(e->err.text);
                j->output_stored = true;
        }
}

/* The final record written again after a failed write (runner.c). */
int job_persist_final(Job *j) {
        int k;

        if (!job_is_final(j))
                return -EINVAL;
        k = job_persist(j);
        if (k < 0)
                return k;
        job_final_stored(j);
        return 0;
}

/* The answer to job_rewrite_final_async(); never called after job_free() (store_cancel_userdata()). */
static void on_final_rewritten(void *userdata, int k, StoreRecord *rec) {
        Job *j = userdata;

        store_record_free(rec);
        j->final_rewriting = false;
        if (k >= 0)
                job_final_stored(j);
        else if (k != -ESTALE)
                job_persist_failed(j, k);
        if (j->events->rewritten)
                j->events->rewritten(j->events_data, j, k);
}

/* The final record, with its callback delivery, sent without waiting; done(j, ...) answers it. */
static int job_send_final(Job *j, StoreDoneFn done) {
        _cleanup_free_ char *request = NULL;
        StoreRecord r = job_record_to_write(j, &request);
        int k;

        k = store_put_async(j->ctx->store, &r, done, j, NULL);
        if (r.callback) {
                r.callback = store_callback_free(r.callback);
                if (k >= 0)
                        /* The delivery's first attempt finds the row or waits its turn. */
                        callbacks_kick(j->ctx->callbacks);
        }
        return k;
}

int job_rewrite_final_async(Job *j) {
        int k;

        if (!job_is_final(j) || !j->ctx->store || j->final_rewriting || j->final_writing)
                return -EBUSY;
        k = job_send_final(j, on_final_rewritten);
        if (k >= 0)
                j->final_rewriting = true;
        return k;
}

/* The job is final and its record written (or refused): its live log ends, together with its waiters'
 * answers (a reader of /events that goes between the two would leave its waiter behind). A final job
 * keeps no output in memory: the log goes with its last reader (readers behind still get what they
 * lack; new readers replay the record). */
static void job_answer_final(Job *j) {
        live_log_end(j->live);
        j->live = live_log_unref(j->live);
        job_flush_waiters(j);
}

/* The answer to the final record's first write (job_finish()): the job's waiters are answered now,
 * once the result is in the store for every node to read (or the store refused it: they get it from
 * memory, and the runner writes it again). */
static void on_final_persisted(void *userdata, int k, StoreRecord *rec) {
        Job *j = userdata;

        store_record_free(rec);
        j->final_writing = false;
        if (k >= 0)
                job_final_stored(j);
        else if (k == -ESTALE)
                /* Fenced: this node's lease ran out meanwhile and another node took the execution
                 * over (it ended "orphaned" there, or runs again): the record is that node's now, and
                 * this result must not be laid over it. */
                log_warning("%s: taken over by another node while it ran here; this result (%s) is not recorded.",
                            j->exec->id, exec_status_to_string(j->exec->status));
        else {
                /* The store is unreachable (a PostgreSQL server restarting) or full: the runner
                 * writes the record again later (runner.c), and keeps the job, the only copy, until
                 * then. */
                job_persist_failed(j, k);
                j->record_unsaved = true;
        }
        job_answer_final(j);
        /* Last: the owner may free j. Not when the answer came inside the call (a store without an
         * event loop, or the write made synchronously): job_finish() goes on, and its finished event
         * says the rest. */
        if (!j->final_in_call)
                j->events->written(j->events_data, j);
}

/* The final record's first write, without waiting for the store (issue 22): until its answer the job
 * is final but final_writing, its waiters wait, and its owner keeps it. */
static void job_persist_final_async(Job *j) {
        int k;

        j->final_writing = j->final_in_call = true;
        k = job_send_final(j, on_final_persisted);
        if (k >= 0) {
                j->final_in_call = false;
                return;
        }
        /* Refused (out of memory): answered as the callback would have been. */
        on_final_persisted(j, k, NULL);
        j->final_in_call = false;
}

int job_adopt(Context *ctx, StoreRecord *rec, int ctl_fd, Session *session, const JobEvents *ev, void *userdata,
              Job **ret) {
        Execution *e = rec->exec;
        uint64_t now = now_usec(CLOCK_REALTIME), end;
        Job *j;

        j = job_alloc(ctx, ev, userdata);
        if (!j)
                return -ENOMEM;
        j->exec = TAKE_PTR(rec->exec);
        j->owner = TAKE_PTR(rec->owner);
        j->callback_url = callback_url_from_request_json(rec->request);
        memcpy(j->fingerprint, rec->fingerprint, sizeof(j->fingerprint));
        /* A warm unit has its own name (on record since the claim). */
        j->unit_name = e->unit ? strdup(e->unit) : execution_unit_name(e->id);
        j->workspace = TAKE_PTR(rec->workspace);
        if (e->session_id) {
                /* A session's run: the session (loaded before) owns the mount; if it is gone, so is
                 * the workspace, and the verdict comes from the unit alone. */
                j->session = session;
                if (j->session) {
                        j->session->n_jobs++;
                        session_run_started(j->session, j);
                }
        } else if (j->workspace)
                j->mount_name = mount_unit_name_from_path(j->workspace);
        if (!j->unit_name || (j->workspace && !e->session_id && !j->mount_name) || job_watch_unit(j) < 0 ||
            job_watch_mount(j) < 0 || job_network_adopt(j) < 0) {
                job_free(j);
                return -ENOMEM;
        }
        j->report_max = HELPER_REPORT_MAX + 2 * (ctx->config->output_head_bytes + ctx->config->output_tail_bytes);
        /* A cancel asked for before the restart still decides the verdict (and, if the program
         * still runs, is sent again once its state is known). */
        j->cancel_requested = j->exec->cancel_requested;
        j->state = JOB_RUNNING;
        live_log_set_running(j->live);
        j->unit_started = true;
        j->adopted = true;
        j->mount_started = j->mount_name != NULL;
        j->start_mono = now_mono(j);

        if (ctl_fd >= 0) {
                /* The report (and with it the output) is waiting in this socket, or will be. */
                j->ctl_fd = ctl_fd;
                j->fd_stored = true;
                if (sd_event_add_io(ctx->event, &j->ctl_src, j->ctl_fd, EPOLLIN, on_control, j) < 0)
                        j->waiting &= ~JOB_WAIT_REPORT;
        } else {
                /* The control socket did not survive (sandboxd was stopped, not restarted): the unit's
                 * exit status is all there will be. */
                j->waiting &= ~JOB_WAIT_REPORT;
                j->adopted_without_report = true;
        }

        /* sandboxd's own backstop deadline, from when it started (or now, if it had not yet). */
        end = (e->started_usec ?: now) + e->limits.timeout_ms * USEC_PER_MSEC +
              ctx->config->kill_grace_ms * USEC_PER_MSEC;
        (void) sd_event_add_time_relative(ctx->event, &j->deadline_src, CLOCK_MONOTONIC,
                                          end > now ? end - now : USEC_PER_MSEC, 10 * USEC_PER_MSEC, on_deadline,
                                          j);

        /* Is it still running? The answer (or "no such unit") moves it on. */
        (void) sysd_get_active_state(ctx->sysd, j->unit_name, on_active_state, j, &j->call_props);
        log_info("%s: adopted after a restart (%s).", e->id, ctl_fd >= 0 ? "with its control socket" : "without output");
        /* Its unit was started, but the previous instance died before it saw the start job finish
         * (the record said queued, runner_adopt() found the unit): no start time is on record and
         * nothing logged the start. Both happen now, once. */
        if (e->started_usec == 0) {
                e->status = EXEC_RUNNING;
                e->started_usec = now;
                job_persist_async(j);
                log_execution_start(j);
        }
        *ret = j;
        return 0;
}

static void job_close_io(Job *j) {
        j->fetch = fetch_free(j->fetch);        /* aborts the downloads still running */
        j->ctl_src = sd_event_source_disable_unref(j->ctl_src);
        j->cancel_src = sd_event_source_disable_unref(j->cancel_src);
        j->deadline_src = sd_event_source_disable_unref(j->deadline_src);
        j->drain_src = sd_event_source_disable_unref(j->drain_src);
        j->ctl_fd = safe_close(j->ctl_fd);

        j->ctl_buf = mfree(j->ctl_buf);
}

/* What a job holds while it runs and never after it is final: its sources, a collection and its
 * budget reference, the calls in flight. */
static void job_release(Job *j) {
        job_close_io(j);
        job_network_release(j);
        j->collect = artifact_collect_cancel(j->collect);
        j->artifact_wait = artifact_caller_wait_cancel(j->artifact_wait);
        j->collect_ws_fd = safe_close(j->collect_ws_fd);
        if (j->artifact_caller)
                artifact_accounts_settle(j->ctx->accounts, &j->artifact_caller, 0, false);
        j->call_mount = sysd_call_free(j->call_mount);
        j->call_start = sysd_call_free(j->call_start);
        j->call_props = sysd_call_free(j->call_props);
}

Job *job_free(Job *j) {
        if (!j)
                return NULL;
        /* Its writes under way are still made, in order; nobody is told of them. */
        if (j->ctx->store)
                store_cancel_userdata(j->ctx->store, j);
        if (j->events)
                j->events->freed(j->events_data, j);
        if (j->session && j->state != JOB_DONE)
                session_job_gone(j->session, j, false);
        j->session = NULL;
        job_release(j);
        j->watch_unit = sysd_watch_free(j->watch_unit);
        j->watch_mount = sysd_watch_free(j->watch_mount);
        free(j->report);
        if (j->live) {
                live_log_end(j->live);
                j->live = live_log_unref(j->live);
        }
        while (j->waiters) {
                JobWaiter *w = j->waiters;
                j->waiters = w->next;
                free(w);
        }
        exec_request_free(j->request);
        free(j->callback_url);
        execution_free(j->exec);
        free(j->unit_name);
        free(j->mount_name);
        free(j->workspace);
        free(j->result);
        free(j->owner);
        free(j);
        return NULL;
}

/* The end before the unit exists (queued, preparing, the start refused, the mount failed): there is
 * no unit to wait for, no result to read, no report to come, nothing to collect: final now. */
void job_end_before_unit(Job *j) {
        j->waiting &= ~(JOB_WAIT_UNIT | JOB_WAIT_PROPS | JOB_WAIT_REPORT);
        job_finalize(j);
}

void job_fail_internal(Job *j, const char *why) {
        log_error("%s: %s", j->exec->id, why);
        j->outcome.daemon_error = true;
        job_end_before_unit(j);
}

void job_fail(Job *j, const char *why) {
        if (!job_is_final(j))
                job_fail_internal(j, why);
}

/* ---- output and control channel ---------------------------------------------------------- */

static int on_deadline(sd_event_source *s, uint64_t usec, void *userdata) {
        Job *j = userdata;

        log_info("%s: deadline passed (timeout %" PRIu64 " ms + grace), killing the unit", j->exec->id,
                 j->exec->limits.timeout_ms);
        j->outcome.deadline_hit = true;
        (void) sysd_kill_unit(j->ctx->sysd, j->unit_name, "all", SIGKILL);
        return 0;
}

static int on_drain_timeout(sd_event_source *s, uint64_t usec, void *userdata) {
        Job *j = userdata;

        log_warning("%s: the control channel did not end after the unit stopped, finishing anyway", j->exec->id);
        j->waiting &= ~JOB_WAIT_REPORT;
        job_maybe_finalize(j);
        return 0;
}

/* ---- starting ------------------------------------------------------------------------------ */

static void on_start_reply(void *userdata, int r, const char *message) {
        Job *j = userdata;

        j->call_start = sysd_call_free(j->call_start);
        if (r < 0) {
                log_error("%s: StartTransientUnit(%s) failed: %s", j->exec->id, j->unit_name, strna(message));
                j->outcome.start_failed = true;
                job_end_before_unit(j);
                return;
        }
        j->unit_started = true;
}

/* The control socket waits in systemd's fd store while the execution runs, so a restarted sandboxd
 * takes it back with the report and the output (FDPOLL=0: a pipe or socket whose peer closed must
 * stay, that is exactly when the report is waiting in it). Stored before StartTransientUnit is
 * sent: a sandboxd killed while systemd was still starting the unit (20 starts at once can take
 * seconds) would otherwise come back to a unit whose output nobody can read. */
static void store_control_socket(Job *j, int fd) {
        char name[CONTROL_FD_NAME_MAX], msg[CONTROL_FD_NAME_MAX + 64];
        int k;

        if (control_fd_name(j->exec->id, NULL, name, sizeof(name)) < 0)
                return;
        snprintf(msg, sizeof(msg), "FDSTORE=1\nFDPOLL=0\nFDNAME=%s", name);
        k = sd_pid_notify_with_fds(0, false, msg, &fd, 1);
        if (k > 0)
                j->fd_stored = true;
        else if (k < 0)
                log_debug_errno(k, "%s: cannot put the control socket in the fd store: %m", j->exec->id);
}

static void job_start_service_now(Job *j) {
        Context *ctx = j->ctx;
        _cleanup_close_pair_ int ctl[2] = { -EBADF, -EBADF };
        CgroupBind cg[CGROUP_ROOTS_MAX];
        UnitProps props = {};
        UnitPlan plan;
        const Environment *env = NULL;
        _cleanup_strv_free_ char **user_env = NULL;
        size_t n_user_env = 0;
        int r;

        if (j->request->environment) {
                /* Checked when it was accepted; a reload since may have taken it away. */
                env = environments_find(ctx->environments, j->request->environment);
                if (!env || !streq(env->language, j->request->language->name)) {
                        log_error("%s: environment '%s' is no longer there.", j->exec->id, j->request->environment);
                        job_fail_internal(j, "its environment is no longer there");
                        return;
                }
                if (environment_merge_env(env, j->request->env, j->request->n_env, &user_env, &n_user_env) < 0) {
                        job_fail_internal(j, "out of memory");
                        return;
                }
        }

        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ctl) < 0) {
                log_error_errno(errno, "%s: cannot create the control socket: %m", j->exec->id);
                job_fail_internal(j, "cannot create the control socket");
                return;
        }
        (void) fcntl(ctl[0], F_SETFL, O_NONBLOCK);

        if (cgroup_binds_build(ctx->cgroups, ctx->n_cgroups, j->unit_name, cg) < 0) {
                job_fail_internal(j, "out of memory");
                return;
        }

        plan = (UnitPlan) {
                .execution_id = j->exec->id,
                .language = j->request->language,
                .limits = j->request->limits,
                .user_env = env ? user_env : j->request->env,
                .n_user_env = env ? n_user_env : j->request->n_env,
                .seed = j->request->seed,
                .usr_layer = ctx->usr_layer,
                .environment_layer = env ? env->usr_dir : NULL,
                .helper = ctx->helper,
                .workspace = j->workspace,
                .session_state_dir = j->session ? j->session->state_dir : NULL,
                .cgroups = cg,
                .n_cgroups = ctx->n_cgroups,
                .nofile = ctx->config->nofile,
                .max_code_bytes = ctx->config->max_code_bytes,
                .head_bytes = ctx->config->output_head_bytes,
                .tail_bytes = ctx->config->output_tail_bytes,
                .stdin_fd = ctl[1],
                .no_kernel_protection = !ctx->config->protect_kernel,
                .inputs = j->request->files,
                .n_inputs = j->request->n_files,
                .args = j->request->args,
                .n_args = j->request->n_args,
                .proxy_socket = j->proxy_socket,
                .runsc = j->strong ? ctx->config->runsc : NULL,
                .runsc_platform = ctx->config->runsc_platform,
        };
        r = unit_props_build(&plan, &props);
        cgroup_binds_done(cg, ctx->n_cgroups);
        if (r < 0) {
                job_fail_internal(j, "cannot build unit properties");
                return;
        }
        r = build_control_payload(j);
        /* Watch first, then start: no signal about the unit can come before we listen. */
        if (r >= 0)
                r = job_watch_unit(j);
        if (r >= 0) {
                store_control_socket(j, ctl[0]);
                r = sysd_start_transient(ctx->sysd, j->unit_name, &props, on_start_reply, j, &j->call_start);
        }
        unit_props_done(&props);
        if (r < 0) {
                log_error_errno(r, "%s: cannot call StartTransientUnit: %m", j->exec->id);
                job_fail_internal(j, "cannot start the unit");
                return;
        }
        /* sd-bus duplicated the child ends into the message; ours close here. */
        j->ctl_fd = TAKE_FD(ctl[0]);
        j->request->code = mfree(j->request->code);

        if (sd_event_add_io(ctx->event, &j->ctl_src, j->ctl_fd, EPOLLIN | EPOLLOUT, on_control, j) < 0) {
                j->state = JOB_STARTING;
                (void) sysd_kill_unit(ctx->sysd, j->unit_name, "all", SIGKILL);
                log_error("%s: cannot watch the control socket", j->exec->id);
                j->outcome.daemon_error = true;
                return;
        }
        j->state = JOB_STARTING;
}

/* The answer to the write before the unit exists (job_start_service()); never called after
 * job_free() (store_cancel_userdata()). A failed write is logged, and the unit started all the same,
 * as ever: the record then only lacks the workspace. */
static void on_prestart_persisted(void *userdata, int k, StoreRecord *rec) {
        Job *j = userdata;

        store_record_free(rec);
        if (k < 0)
                job_persist_failed(j, k);
        /* Stopping: no new unit now. The record says queued, with its workspace; the next start
         * resumes it. */
        if (j->ctx->stopping || job_is_final(j))
                return;
        if (j->cancel_requested) {
                /* Cancelled meanwhile: the unit never starts. */
                job_end_before_unit(j);
                return;
        }
        job_start_service_now(j);
}

/* The workspace goes on record before the unit can exist: a restart that finds the unit while the
 * record still says queued adopts it with its mount, instead of sweeping the mount away from under
 * it (which stops the unit: its binds require the mount). Seen in the VM tier, where a SIGKILL of
 * sandboxd came before 16 start jobs had finished. Written without waiting for the store (issue 22):
 * the unit is started from its answer. */
void job_start_service(Job *j) {
        StoreRecord r;
        int k;

        if (!j->ctx->store) {
                job_start_service_now(j);
                return;
        }
        r = job_record(j);
        k = store_put_async(j->ctx->store, &r, on_prestart_persisted, j, NULL);
        if (k >= 0)
                return;
        job_persist_failed(j, k);
        job_start_service_now(j);
}

/* With network, the egress proxy first (job-network.c), which then starts the service. */
static void start_service(Job *j) {
        if (j->request->network && !j->proxy_socket)
                job_network_start(j);
        else
                job_start_service(j);
}

/* An input file could not be fetched or written: the execution fails before its unit exists. */
static void job_fail_input(Job *j, const char *message) {
        log_info("%s: %s", j->exec->id, message);
        (void) free_and_strdup(&j->exec->error_message, message);
        j->outcome.input_failed = true;
        job_end_before_unit(j);
}

static void on_inputs_done(Fetch *f, int r, const char *message, void *userdata) {
        Job *j = userdata;

        j->fetch = fetch_free(j->fetch);        /* f; the message is the caller's, it outlives this */
        /* Stopping: no new unit now. The record is still queued; the next start resumes it. */
        if (j->ctx->stopping)
                return;
        if (r < 0) {
                job_fail_input(j, message ?: "an input file could not be fetched");
                return;
        }
        start_service(j);
}

/* The workspace is mounted and its directories made: put the input files in (inline ones at once,
 * downloads on the loop), then start the service. The record stays "queued" meanwhile, so a restart
 * resumes the execution and downloads again. */
static void workspace_ready(Job *j) {
        Context *ctx = j->ctx;
        _cleanup_free_ char *message = NULL;
        FetchLimits limits;
        int r;

        /* Once: the job stays preparing while its inputs download and while the record is written
         * before the unit starts (job_start_service()), and a JobRemoved of its mount unit that comes
         * meanwhile (a workspace the pool lent, ready already) must not start the service twice. */
        if (j->workspace_readied)
                return;
        j->workspace_readied = true;
        if (j->request->n_files == 0) {
                start_service(j);
                return;
        }
        limits = (FetchLimits) {
                .max_file_bytes = ctx->config->max_input_file_bytes,
                /* They land on the workspace tmpfs, so they count against disk_mb as well, and
                 * sandbox-exec copies them once more inside the unit so that their pages are the
                 * execution's memory, not sandboxd's (--input=): against memory_mb too. */
                .max_total_bytes = MIN(MIN(ctx->config->max_input_total_bytes, j->exec->limits.disk_mb * 1024 * 1024),
                                       j->exec->limits.memory_mb * 1024 * 1024),
                .connect_timeout_sec = ctx->config->input_connect_timeout_sec,
                .timeout_sec = ctx->config->input_timeout_sec,
                .allow_internal = ctx->config->input_allow_internal,
        };
        r = fetch_start(ctx->net, j->workspace, j->request->files, j->request->n_files, &limits, on_inputs_done, j,
                        &j->fetch, &message);
        if (r == -ENOMEM) {
                job_fail_internal(j, "out of memory while preparing the input files");
                return;
        }
        if (r < 0) {
                job_fail_input(j, message ?: "the input files could not be written");
                return;
        }
        if (!j->fetch)
                start_service(j);
}

static void on_mount_reply(void *userdata, int r, const char *message) {
        Job *j = userdata;

        j->call_mount = sysd_call_free(j->call_mount);
        if (r < 0) {
                log_error("%s: starting workspace mount %s failed: %s", j->exec->id, j->mount_name, strna(message));
                job_fail_internal(j, "the workspace could not be mounted");
                return;
        }
        j->mount_started = true;
}

void job_start(Job *j) {
        Context *ctx = j->ctx;
        Workspace *w;
        int r;

        j->state = JOB_PREPARING;
        j->start_mono = now_mono(j);

        if (j->session) {
                j->exec->start = START_COLD;
                metrics_pool_claim(ctx->metrics, START_COLD);
                /* The session's mount is there (runner_dispatch() checked) and stays. Its root
                 * is the sandbox's root: written before each run, what is there stays. */
                session_run_started(j->session, j);
                if (workspace_prepare_root(j->workspace, true, j->exec->id) < 0) {
                        job_fail_internal(j, "the session's root could not be prepared");
                        return;
                }
                workspace_ready(j);
                return;
        }

        /* A unit started ahead of time, if one can serve the request (warm-policy.h). */
        if (ctx->warm) {
                WarmRefusal why = warm_policy_check(ctx->config, j->request);
                WarmClaim c = { .ctl_fd = -EBADF };

                if (why == WARM_OK &&
                    warm_pool_claim(ctx->warm, j->request->language, j->request->environment,
                                    warm_wants_preload((const char *const *) ctx->config->pool_python_preload,
                                                       j->request->code, j->request->code_len),
                                    j->strong, &c) > 0) {
                        metrics_pool_claim(ctx->metrics, START_WARM);
                        job_claim_warm(j, &c);
                        warm_claim_done(&c);
                        return;
                }
                log_debug("%s: cold start: %s", j->exec->id, why == WARM_OK ? "no warm unit is ready" :
                                                                             warm_refusal_to_string(why));
        }
        j->exec->start = START_COLD;
        metrics_pool_claim(ctx->metrics, START_COLD);

        /* A workspace mounted ahead of time, if one of the right size is ready. */
        w = workspace_pool_take(ctx->pool, sandbox_workspace_bytes(&j->exec->limits));
        if (w) {
                free(j->workspace);
                free(j->mount_name);
                j->workspace = TAKE_PTR(w->path);
                j->mount_name = TAKE_PTR(w->mount_name);
                j->pool_lease = w->lease;
                j->mount_started = true;
                workspace_free(w);      /* and with it the pool's watch of the mount: ours follows */
                if (job_watch_mount(j) < 0) {
                        job_fail_internal(j, "out of memory");
                        return;
                }
                workspace_pool_fill(ctx->pool);
                workspace_ready(j);
                return;
        }
        workspace_pool_fill(ctx->pool);

        r = job_watch_mount(j);
        if (r >= 0)
                r = sysd_start_tmpfs(ctx->sysd, j->mount_name, j->workspace, sandbox_workspace_bytes(&j->exec->limits),
                                     on_mount_reply, j, &j->call_mount);
        if (r < 0) {
                log_error_errno(r, "%s: cannot start the workspace mount: %m", j->exec->id);
                job_fail_internal(j, "cannot start the workspace mount");
        }
}

/* The unit runs (its start job completed, or a warm unit was claimed): on record, in the journal, and
 * sandboxd's own deadline from now. */
/* log: the journal entry now (a warm claim writes it after its claim is out: journald wakes on
 * it, and the program had better have a CPU first). */
/* The running record is in the store (or was refused): now the journal's start entry. A restart that
 * finds a unit whose record never said running logs the start itself (job_adopt()); so the entry is
 * written once the record says so, not before, or a SIGKILL between the two would log it twice. */
static void on_running_persisted(void *userdata, int r, StoreRecord *rec) {
        Job *j = userdata;

        store_record_free(rec);
        if (r < 0)
                job_persist_failed(j, r);
        log_execution_start(j);
}

static void job_mark_running(Job *j, bool log) {
        Context *ctx = j->ctx;
        uint64_t deadline;

        j->state = JOB_RUNNING;
        j->exec->status = EXEC_RUNNING;
        j->exec->started_usec = now_usec(CLOCK_REALTIME);
        j->running_mono = now_mono(j);
        /* Nothing waits for this write: the workspace went on record before the unit was started, and
         * a restart that finds the unit adopts it whatever status the record has. */
        if (!log)
                job_persist_async(j);
        else if (!ctx->store)
                log_execution_start(j);
        else {
                StoreRecord rec = job_record(j);
                int k = store_put_async(ctx->store, &rec, on_running_persisted, j, NULL);

                if (k < 0) {
                        job_persist_failed(j, k);
                        log_execution_start(j);
                }
        }
        live_log_set_running(j->live);
        deadline = now_mono(j) + j->exec->limits.timeout_ms * USEC_PER_MSEC + ctx->config->kill_grace_ms * USEC_PER_MSEC;
        (void) sd_event_add_time(ctx->event, &j->deadline_src, CLOCK_MONOTONIC, deadline, 10000, on_deadline, j);
}

/* ---- a warm unit ---------------------------------------------------------------------------- */

/* The claim: the request's deadline, source and environment, after which the program runs at once.
 * The record says running (with the unit and start=warm) before the claim goes out; the control
 * socket is in the fd store since the pool started the unit (under the unit's name, which the record
 * has: control_fd_name()), as a cold start's is before StartTransientUnit. Storing it here would put
 * PID 1's handling of the message (~1.5 ms, on this CPU) between the request and its program. */
static void job_send_claim(Job *j) {
        Context *ctx = j->ctx;
        const ExecRequest *req = j->request;
        _cleanup_free_ char *env = NULL;
        _cleanup_strv_free_ char **user_env = NULL;
        char header[EXEC_CLAIM_MAX + 1];
        size_t env_len = 0, n_user_env = 0;
        int hl, r = 0;
        UnitPlan plan = {
                .language = req->language,
                .user_env = req->env,
                .n_user_env = req->n_env,
                .seed = req->seed,
        };

        /* A unit of an environment (the pool started it with the layer in force then: a reload since
         * drained the pool): the program sees the environment's variables, as a cold start's does. */
        if (req->environment) {
                const Environment *e = environments_find(ctx->environments, req->environment);

                if (!e)
                        r = -ENOENT;
                else if (environment_merge_env(e, req->env, req->n_env, &user_env, &n_user_env) < 0)
                        r = -ENOMEM;
                plan.user_env = user_env;
                plan.n_user_env = n_user_env;
        }
        if (r >= 0)
                r = sandbox_environment_block(&plan, &env, &env_len);
        hl = r < 0 ? r : exec_claim_format(header, sizeof(header), req->limits.timeout_ms, req->code_len, env_len);
        if (hl >= 0) {
                j->ctl_len = (size_t) hl + req->code_len + env_len;
                j->ctl_buf = malloc(j->ctl_len);
        }
        if (hl < 0 || !j->ctl_buf) {
                (void) sysd_kill_unit(ctx->sysd, j->unit_name, "all", SIGKILL);
                j->outcome.daemon_error = true;
                log_error("%s: cannot build the claim of warm unit %s", j->exec->id, j->unit_name);
                return;
        }
        memcpy(j->ctl_buf, header, (size_t) hl);
        memcpy(j->ctl_buf + hl, req->code, req->code_len);
        memcpy(j->ctl_buf + hl + req->code_len, env, env_len);
        j->ctl_off = 0;

        j->request->code = mfree(j->request->code);
        if (sd_event_add_io(ctx->event, &j->ctl_src, j->ctl_fd, EPOLLIN | EPOLLOUT, on_control, j) < 0) {
                (void) sysd_kill_unit(ctx->sysd, j->unit_name, "all", SIGKILL);
                log_error("%s: cannot watch the control socket", j->exec->id);
                j->outcome.daemon_error = true;
                return;
        }
        /* Out at once rather than at the next iteration of the loop: the socket has room for a claim
         * of any but the largest sources (the rest goes as the socket drains). */
        (void) on_control(j->ctl_src, j->ctl_fd, EPOLLOUT, j);
}

static void on_claim_limits(void *userdata, int r, const char *message) {
        Job *j = userdata;

        j->call_start = sysd_call_free(j->call_start);
        if (r < 0) {
                /* The unit must not run the program under other limits than asked for. */
                log_error("%s: SetUnitProperties(%s) failed: %s", j->exec->id, j->unit_name, strna(message));
                (void) sysd_kill_unit(j->ctx->sysd, j->unit_name, "all", SIGKILL);
                j->outcome.daemon_error = true;
                return;
        }
        job_send_claim(j);
}

static bool limits_differ(const Limits *a, const Limits *b) {
        return a->memory_mb != b->memory_mb || a->cpu_cores != b->cpu_cores || a->tasks != b->tasks;
}

/* A ready warm unit is this job's from now: it runs (the record says so), under the request's limits
 * (SetUnitProperties first where they differ from the pool's), once the claim is sent. */
static void job_claim_warm(Job *j, WarmClaim *c) {
        Context *ctx = j->ctx;
        UnitProps props = {};
        int r;

        free(j->unit_name);
        j->unit_name = TAKE_PTR(c->unit_name);
        free(j->workspace);
        j->workspace = TAKE_PTR(c->workspace);
        free(j->mount_name);
        j->mount_name = TAKE_PTR(c->mount_name);
        j->ctl_fd = TAKE_FD(c->ctl_fd);
        j->fd_stored = c->fd_stored;
        j->pool_lease = c->lease;
        j->mount_started = j->unit_started = true;
        j->exec->start = START_WARM;
        r = free_and_strdup(&j->exec->unit, j->unit_name);
        if (r >= 0)
                r = job_watch_unit(j);
        if (r >= 0)
                r = job_watch_mount(j);
        job_mark_running(j, false);
        if (r < 0) {
                log_execution_start(j);
                (void) sysd_kill_unit(ctx->sysd, j->unit_name, "all", SIGKILL);
                j->outcome.daemon_error = true;
                return;
        }
        log_debug("%s: claimed warm unit %s.", j->exec->id, j->unit_name);
        if (!limits_differ(&c->limits, &j->request->limits))
                job_send_claim(j);
        else {
                r = unit_props_claim_limits(&j->request->limits, j->strong, &props);
                if (r >= 0)
                        r = sysd_set_unit_properties(ctx->sysd, j->unit_name, &props, on_claim_limits, j,
                                                     &j->call_start);
                unit_props_done(&props);
                if (r < 0)
                        on_claim_limits(j, r, "cannot call SetUnitProperties");
        }
        log_execution_start(j);
}

static void job_on_job_removed(Job *j, const char *unit, const char *result) {
        Context *ctx = j->ctx;

        if (j->state == JOB_PREPARING && streq_ptr(unit, j->mount_name)) {
                j->mount_started = true;
                if (!streq(result, "done")) {
                        log_error("%s: workspace mount job ended with '%s'", j->exec->id, result);
                        job_fail_internal(j, "the workspace could not be mounted");
                        return;
                }
                if (j->cancel_requested) {
                        job_end_before_unit(j);
                        return;
                }
                if (workspace_prepare_dirs(j->workspace, ctx->workspaces_dir, j->exec->id) < 0) {
                        job_fail_internal(j, "the workspace could not be prepared");
                        return;
                }
                workspace_ready(j);
                return;
        }

        if (j->state == JOB_STARTING && streq(unit, j->unit_name)) {
                if (streq(result, "done")) {
                        job_mark_running(j, true);
                        if (j->cancel_requested)
                                job_send_cancel(j);
                        /* It may have ended already: PropertiesChanged before the job's end. */
                        (void) sysd_get_active_state(ctx->sysd, j->unit_name, on_active_state, j, &j->call_props);
                } else {
                        log_error("%s: start job of %s ended with '%s'", j->exec->id, j->unit_name, result);
                        j->outcome.start_failed = true;
                        job_on_unit_inactive(j);
                }
        }
}

static void on_active_state(void *userdata, int r, const char *state) {
        Job *j = userdata;

        j->call_props = sysd_call_free(j->call_props);
        if (r < 0)
                return;
        /* No such unit reads as "inactive": it ended and was collected (adopted after a restart). */
        job_on_active_state(j, state);
}

static void job_on_active_state(Job *j, const char *state) {
        if (j->state != JOB_RUNNING)
                return;
        if (streq(state, "inactive") || streq(state, "failed"))
                job_on_unit_inactive(j);
        else if (j->adopted && j->cancel_requested && !j->cancel_src)
                /* Asked for before a restart, perhaps never delivered: again (a second SIGUSR1 is
                 * harmless, sandbox-exec has killed the program already). */
                job_send_cancel(j);
}

/* A clean point: the payload is out whole, nothing of a live frame or of the report has been read,
 * and nothing is waiting to be read (the program runs). What is waiting is read first: live frames
 * (each to its end), and behind them perhaps the report or the channel's end, when the program is
 * done: then this instance reads it and makes the run final before it exits, rather than leave it
 * in an fd store that a stop (not a restart) empties. (A program that ended while sandboxd was
 * frozen or slow leaves its last frames before its report: taking a frame next for a clean point
 * left that report behind, and a stop lost it.) Only a program that writes without end keeps frames
 * coming: after the runner's hurry (job_quiesce_hurry()), a frame next is a clean point too. */
static bool job_at_clean_point(const Job *j) {
        uint8_t next;
        ssize_t n;

        if (j->ctl_fd < 0 || !j->ctl_src)
                return true;
        if (j->ctl_off < j->ctl_len || j->report_len > 0 || j->report_started || !(j->waiting & JOB_WAIT_REPORT))
                return false;
        n = recv(j->ctl_fd, &next, 1, MSG_PEEK | MSG_DONTWAIT);
        if (n < 0)
                return errno == EAGAIN || errno == EINTR;
        return n == 1 && next == EXEC_FRAME_MAGIC && j->quiesce_hurry;
}

void job_try_quiet(Job *j) {
        if (!j->quiesce || j->quiet || j->state == JOB_DONE || !job_at_clean_point(j))
                return;
        j->quiet = true;
        if (j->ctl_src)
                (void) sd_event_source_set_enabled(j->ctl_src, SD_EVENT_OFF);
        j->drain_src = sd_event_source_disable_unref(j->drain_src);
        job_network_quiesce(j);
        log_debug("%s: quiet for the next instance of sandboxd.", j->exec->id);
        if (j->quiesce_notify) {
                j->quiesce_notify = false;
                if (j->events->quiet)
                        j->events->quiet(j->events_data, j);
        }
}

bool job_quiesce(Job *j) {
        if (j->state == JOB_DONE || j->quiet)
                return true;
        j->quiesce = true;
        /* Not started yet: the record says queued and the next instance runs it from there. If this
         * one still gets as far as starting its unit, it goes quiet at its first clean point. */
        if (j->state == JOB_QUEUED || j->state == JOB_PREPARING)
                return true;
        job_try_quiet(j);
        if (j->quiet)
                return true;
        j->quiesce_notify = true;
        return false;
}

void job_quiesce_hurry(Job *j) {
        if (!j->quiesce || j->quiet || j->state == JOB_DONE)
                return;
        j->quiesce_hurry = true;
        job_try_quiet(j);
}

void job_flush_waiters(Job *j) {
        JobWaiter *w;

        while ((w = j->waiters)) {
                j->waiters = w->next;
                w->cb(j, w->userdata);
                free(w);
        }
}

/* ---- finishing ----------------------------------------------------------------------------- */

static void on_service_props(void *userdata, int r, const char *message, const SysdServiceProps *p) {
        Job *j = userdata;

        j->call_props = sysd_call_free(j->call_props);
        j->waiting &= ~JOB_WAIT_PROPS;
        if (r < 0)
                log_warning("%s: cannot read the unit's result: %s", j->exec->id, message ?: strerror(-r));
        else {
                if (p->result[0])
                        (void) free_and_strdup(&j->result, p->result);
                j->outcome.exec_main_code = p->exec_main_code;
                j->outcome.exec_main_status = p->exec_main_status;
                j->exec_start_mono = p->exec_main_start_mono;
                j->exec_exit_mono = p->exec_main_exit_mono;
                j->cpu_nsec = p->cpu_usage_nsec;
        }
        job_maybe_finalize(j);
}

void job_on_unit_inactive(Job *j) {
        Context *ctx = j->ctx;
        int r;

        /* Quiet: the next instance reads the report and asks for the unit's end. */
        if (!(j->waiting & JOB_WAIT_UNIT) || j->state == JOB_DONE || j->quiet)
                return;
        j->waiting &= ~JOB_WAIT_UNIT;
        if (j->state == JOB_RUNNING || j->state == JOB_STARTING)
                j->state = JOB_FINISHING;
        j->deadline_src = sd_event_source_disable_unref(j->deadline_src);

        j->call_props = sysd_call_free(j->call_props);
        r = sysd_get_service_props(ctx->sysd, j->unit_name, on_service_props, j, &j->call_props);
        if (r < 0) {
                log_warning_errno(r, "%s: cannot ask for the unit's result: %m", j->exec->id);
                j->waiting &= ~JOB_WAIT_PROPS;
        }
        /* Every process of the unit is dead now, so the control socket reaches EOF once drained. */
        (void) sd_event_add_time_relative(ctx->event, &j->drain_src, CLOCK_MONOTONIC, DRAIN_TIMEOUT_USEC, 0,
                                          on_drain_timeout, j);
        job_maybe_finalize(j);
}

/* The report is in. When it says nothing of the program is left (sandbox-exec swept it and saw its
 * cgroup hold nothing else) and there is nothing the unit's own result could add to the verdict (no
 * OOM kill, which only the unit's Result= reports exactly; not a setup failure), the execution is
 * final now: systemd's noticing the exit, tearing the unit down and answering for its properties
 * would only delay the answer. The daemon checks the cgroup itself too. The unit reaper finishes the
 * unit afterwards. */
void job_report_complete(Job *j) {
        HelperReport r = {};
        const uint8_t *nl;
        size_t text_len;

        /* Not a session's run: the session's next run starts when this one is final, and must not
         * share its state directory with a unit still ending. */
        if (j->state == JOB_RUNNING && (j->waiting & JOB_WAIT_UNIT) && j->ctx->reaper && !j->adopted && !j->session &&
            j->report_len > 0 && !j->report_overflow) {
                nl = memmem(j->report, MIN(j->report_len, (size_t) HELPER_REPORT_MAX), "\n\n", 2);
                text_len = nl ? (size_t) (nl - j->report) + 1 : 0;
                if (text_len > 0 && helper_report_parse((const char *) j->report, text_len, &r) >= 0 && r.valid &&
                    r.alone && r.phase != PHASE_SETUP && r.oom_kills == 0 && !unit_cgroup_has_program(j)) {
                        j->early_end = true;
                        j->state = JOB_FINISHING;
                        j->waiting &= ~(JOB_WAIT_UNIT | JOB_WAIT_PROPS);
                        j->deadline_src = sd_event_source_disable_unref(j->deadline_src);
                        j->call_props = sysd_call_free(j->call_props);
                }
        }
        job_maybe_finalize(j);
}

void job_maybe_finalize(Job *j) {
        if (j->state == JOB_DONE)
                return;
        if (j->waiting & (JOB_WAIT_UNIT | JOB_WAIT_PROPS | JOB_WAIT_REPORT))
                return;
        if (j->waiting & JOB_WAIT_ARTIFACTS) {
                if (!j->collect && !j->artifacts_recording)
                        job_collect_artifacts(j);
                if (j->waiting & JOB_WAIT_ARTIFACTS)
                        return;         /* on_artifacts_done() comes back here */
        }
        job_finalize(j);
}

static void log_execution_start(Job *j) {
        const Execution *e = j->exec;

        (void) sd_journal_send("MESSAGE=Execution %s started (%s).", e->id, e->language,
                               "PRIORITY=%i", LOG_INFO,
                               "SANDBOXD_EXECUTION_ID=%s", execution_public_id(e),
                               "SANDBOXD_RECORD_ID=%s", e->id,
                               "SANDBOXD_SESSION_ID=%s", e->session_id ?: "",
                               "SANDBOXD_LANGUAGE=%s", e->language,
                               /* Running, also when logged from the record's answer after it ended. */
                               "SANDBOXD_STATUS=%s", exec_status_to_string(EXEC_RUNNING),
                               "SANDBOXD_TIMEOUT_MS=%" PRIu64, e->limits.timeout_ms,
                               "SANDBOXD_MEMORY_MB=%" PRIu64, e->limits.memory_mb,
                               "UNIT=%s", j->unit_name,
                               "OBJECT_SYSTEMD_UNIT=%s", j->unit_name,
                               NULL);
}

static void log_execution(Job *j) {
        const Execution *e = j->exec;
        char peak[32] = "";

        if (e->have_peak)
                snprintf(peak, sizeof(peak), "%.1f", (double) e->peak_memory_bytes / (1024.0 * 1024.0));

        (void) sd_journal_send("MESSAGE=Execution %s finished: %s%s%s (%" PRIu64 " ms)", e->id,
                               exec_status_to_string(e->status), e->error_type != ERROR_NONE ? "/" : "",
                               e->error_type != ERROR_NONE ? error_type_to_string(e->error_type) : "",
                               e->duration_ms,
                               "PRIORITY=%i", e->error_type == ERROR_INTERNAL ? LOG_ERR : LOG_INFO,
                               "SANDBOXD_EXECUTION_ID=%s", execution_public_id(e),
                               "SANDBOXD_RECORD_ID=%s", e->id,
                               "SANDBOXD_SESSION_ID=%s", e->session_id ?: "",
                               "SANDBOXD_LANGUAGE=%s", e->language,
                               "SANDBOXD_STATUS=%s", exec_status_to_string(e->status),
                               "SANDBOXD_ERROR_TYPE=%s", error_type_to_string(e->error_type) ?: "",
                               "SANDBOXD_EXIT_CODE=%i", e->exit_code,
                               "SANDBOXD_DURATION_MS=%" PRIu64, e->duration_ms,
                               "SANDBOXD_PEAK_MEMORY_MB=%s", peak,
                               "SANDBOXD_REASON=%s", strna(e->reason),
                               "UNIT=%s", j->unit_name,
                               "OBJECT_SYSTEMD_UNIT=%s", j->unit_name,
                               NULL);
}

/* May the pool wipe and reuse the workspace? Only after a run whose unit ran and ended with nothing
 * of it left. Before the unit ran, a StartTransientUnit may still be on its way and start a program on
 * it; after a failure of sandboxd's own, or with processes left in the cgroup, nothing is certain:
 * those keep the unmount. */
static bool job_workspace_reusable(Job *j) {
        return j->unit_started && !j->outcome.start_failed && !j->outcome.daemon_error && !j->session &&
               !job_unit_cgroup_populated(j);
}

/* A Python program that failed on an import: error_message names the module, the environment and what
 * to do (model/environment.h). The name comes from the program's stderr, hostile bytes: only a valid
 * dotted name of bounded length is taken. */
static void explain_missing_module(Job *j) {
        Execution *e = j->exec;
        char module[PYTHON_MODULE_NAME_MAX + 1];

        if (e->error_type != ERROR_RUNTIME || e->error_message || !e->err.text || !j->request ||
            !startswith(e->language, "python"))
                return;
        if (missing_module_from_stderr(e->err.text, strlen(e->err.text), module, sizeof(module)) <= 0)
                return;
        e->error_message = missing_module_message(j->ctx->environments, e->language, e->environment, module,
                                                  j->request->network);
}

void job_finalize(Job *j) {
        Context *ctx = j->ctx;
        HelperReport report = {};
        Verdict v;
        bool was_running = j->state != JOB_QUEUED;

        if (j->state == JOB_DONE)
                return;
        /* Left to the next instance (job_quiesce()): what this one knows is not the whole story. */
        if (j->quiet)
                return;
        /* A run with network: its proxy's units stopped and its log read to the end first. */
        if (job_network_finish(j))
                return;

        parse_report(j, &report);
        j->outcome.result = j->result;
        j->outcome.cancelled = j->cancel_requested;
        verdict_decide(&j->outcome, &report, &v);
        if (j->adopted_without_report && !report.valid && v.error_type != ERROR_INTERNAL)
                v.reason = "sandboxd was stopped (not restarted) while this ran: the verdict is from the unit's exit "
                           "status, output and details were lost";

        Execution *e = j->exec;
        e->status = v.status;
        e->error_type = v.error_type;
        e->exit_code = v.exit_code;
        e->signal = v.signal;
        e->reason = v.reason;
        if (!e->out.text)
                e->out.text = strdup("");
        if (!e->err.text)
                e->err.text = strdup("");
        if (report.valid && report.run_usec > 0)
                e->duration_ms = report.run_usec / USEC_PER_MSEC;
        else if (j->exec_start_mono > 0 && j->exec_exit_mono >= j->exec_start_mono)
                e->duration_ms = (j->exec_exit_mono - j->exec_start_mono) / USEC_PER_MSEC;
        else if (j->start_mono > 0)
                e->duration_ms = (now_mono(j) - j->start_mono) / USEC_PER_MSEC;
        /* A warm unit's counter includes the runtime's start; the report's is the program's alone. */
        if (report.valid && (report.cpu_usec > 0 || e->start == START_WARM)) {
                e->cpu_usec = report.cpu_usec;
                e->have_cpu = true;
        } else if (j->cpu_nsec > 0 && j->cpu_nsec != UINT64_MAX) {
                e->cpu_usec = j->cpu_nsec / NSEC_PER_USEC;
                e->have_cpu = true;
        }
        if (report.valid && report.have_first_output) {
                e->first_output_usec = report.first_output_usec;
                e->have_first_output = true;
        }
        if (report.valid && report.memory_peak > 0) {
                e->peak_memory_bytes = report.memory_peak;
                e->have_peak = true;
        }
        e->finished_usec = now_usec(CLOCK_REALTIME);
        explain_missing_module(j);
        /* Once, from the final record: stored with it, the same in every answer and delivery. */
        free(e->summary);
        e->summary = summary_build(e);

        job_release(j);
        j->request = exec_request_free(j->request);
        j->report = mfree(j->report);
        j->report_len = j->report_allocated = 0;
        if (j->fd_stored) {
                char name[CONTROL_FD_NAME_MAX], msg[CONTROL_FD_NAME_MAX + 64];

                if (control_fd_name(e->id, j->unit_name, name, sizeof(name)) >= 0) {
                        snprintf(msg, sizeof(msg), "FDSTOREREMOVE=1\nFDNAME=%s", name);
                        (void) sd_notify(false, msg);
                }
                j->fd_stored = false;
        }
        j->watch_unit = sysd_watch_free(j->watch_unit);
        j->watch_mount = sysd_watch_free(j->watch_mount);
        if (ctx->sysd && j->early_end) {
                /* systemd is still ending the unit: its reference, failed state and mount go once
                 * it has. */
                if (unit_reaper_add(ctx->reaper, j->unit_name, j->session ? NULL : j->mount_name, j->workspace,
                                    j->pool_lease) < 0) {
                        (void) sysd_unref_unit(ctx->sysd, j->unit_name);
                        if (j->mount_name &&
                            !workspace_pool_give_back(ctx->pool, j->workspace, j->mount_name, j->pool_lease, false))
                                (void) sysd_stop_unit(ctx->sysd, j->mount_name, NULL, NULL);
                }
                j->pool_lease = 0;
        } else if (ctx->sysd) {
                if (j->unit_started) {
                        (void) sysd_unref_unit(ctx->sysd, j->unit_name);
                        /* CollectMode=inactive keeps a failed unit for us; we have read it. */
                        (void) sysd_reset_failed_unit(ctx->sysd, j->unit_name);
                }
                /* A workspace the pool lent goes back to it, to be wiped and reused: no unmount. */
                if (j->mount_name && (j->mount_started || j->state == JOB_PREPARING) &&
                    !workspace_pool_give_back(ctx->pool, j->workspace, j->mount_name, j->pool_lease,
                                              job_workspace_reusable(j)))
                        (void) sysd_stop_unit(ctx->sysd, j->mount_name, NULL, NULL);
                j->pool_lease = 0;
        }

        j->events->left(j->events_data, j);
        if (j->session) {
                session_job_gone(j->session, j, was_running);
                j->session = NULL;
        }
        j->state = JOB_DONE;

        if (e->error_type == ERROR_INTERNAL)
                log_error("%s: internal error: %s%s%s", e->id, strna(e->reason),
                          report.valid && report.error[0] ? ": sandbox-exec: " : "",
                          report.valid && report.error[0] ? report.error : "");
        /* The artifact list is in the store: a finished job kept in memory (KeepFinished=) need not
         * hold it too; job_record_json() reads it back when asked (the output likewise, once the final
         * record is written: job_final_stored()). */
        if (j->artifacts_stored)
                j->exec->artifacts = exec_artifacts_free(j->exec->artifacts);
        log_execution(j);
        /* Before the waiters and the eviction below, either of which may free j. queued_mono is 0 for
         * an execution adopted after a restart: when it was accepted is not known. */
        metrics_observe(ctx->metrics, e,
                        j->queued_mono > 0 && j->start_mono >= j->queued_mono ? j->start_mono - j->queued_mono
                                                                               : METRICS_UNKNOWN,
                        j->queued_mono > 0 && j->running_mono >= j->queued_mono ? j->running_mono - j->queued_mono
                                                                                 : METRICS_UNKNOWN);

        /* The replacement of the unit this run claimed need not wait any longer. */
        if (e->start == START_WARM && ctx->warm)
                warm_pool_claim_ended(ctx->warm);

        /* The final record, without waiting: its live log ends and its waiters are answered when the
         * store has it (on_final_persisted()). Without a store, now. */
        if (ctx->store)
                job_persist_final_async(j);
        else
                job_answer_final(j);
        /* Last: the owner may start the next job, and free this one (not while its record is being
         * written). */
        j->events->finished(j->events_data, j);
}

static int on_cancel_timeout(sd_event_source *s, uint64_t usec, void *userdata) {
        Job *j = userdata;

        log_warning("%s: sandbox-exec did not end the program on cancel, killing the unit", j->exec->id);
        (void) sysd_kill_unit(j->ctx->sysd, j->unit_name, "all", SIGKILL);
        return 0;
}

/* SIGUSR1 to sandbox-exec alone: it kills the program and reports what it captured. Should it not
 * manage within 3 s, the whole unit is killed. */
void job_send_cancel(Job *j) {
        Context *ctx = j->ctx;

        (void) sysd_kill_unit(ctx->sysd, j->unit_name, "main", SIGUSR1);
        if (!j->cancel_src)
                (void) sd_event_add_time_relative(ctx->event, &j->cancel_src, CLOCK_MONOTONIC, 3 * USEC_PER_SEC, 0,
                                                  on_cancel_timeout, j);
}

bool job_needs_claim(const Job *j) {
        const Context *ctx = j->ctx;

        return ctx->shared_queue && ctx->store && j->exec->node_epoch == 0 && ctx->node_epoch != 0;
}

void job_follow_final(Job *j, StoreRecord *rec) {
        if (j->state == JOB_DONE || !exec_status_is_final(rec->exec->status))
                return;
        execution_free(j->exec);
        j->exec = TAKE_PTR(rec->exec);
        /* Both are the store's: read back from there when asked (job_record_json()). */
        j->output_stored = j->artifacts_stored = true;
        j->exec->out.text = mfree(j->exec->out.text);
        j->exec->err.text = mfree(j->exec->err.text);
        j->exec->artifacts = exec_artifacts_free(j->exec->artifacts);
        j->request = exec_request_free(j->request);
        j->events->left(j->events_data, j);
        j->state = JOB_DONE;
        log_debug("%s: %s on node '%s'", j->exec->id, exec_status_to_string(j->exec->status), strna(j->exec->node));
        if (j->live) {
                live_log_end(j->live);
                j->live = live_log_unref(j->live);
        }
        job_flush_waiters(j);
        j->events->finished(j->events_data, j);
}

/* The cancel is on record: now the signal (also when the store refused the write, as a cancel never
 * waited for a store that is away). Not if the run ended meanwhile. */
static void on_cancel_persisted(void *userdata, int r, StoreRecord *rec) {
        Job *j = userdata;

        store_record_free(rec);
        if (r < 0)
                job_persist_failed(j, r);
        if (j->state == JOB_RUNNING)
                job_send_cancel(j);
}

int job_cancel(Job *j) {
        StoreRecord rec;
        int k;

        switch (j->state) {
        case JOB_QUEUED:
                if (j->elsewhere)
                        return -EREMOTE;
                if (j->claiming) {
                        /* The dispatch's claim is under way: its answer ends the job cancelled here,
                         * or sends the cancel to the node that claimed it first (runner.c). */
                        j->cancel_requested = j->exec->cancel_requested = true;
                        return 0;
                }
                j->cancel_requested = j->exec->cancel_requested = true;
                if (job_needs_claim(j)) {
                        /* Claimed first (a cancel here of what another node runs would be lost),
                         * without waiting: the claim's answer carries it out (runner.c). */
                        k = j->events->claim ? j->events->claim(j->events_data, j) : -EOPNOTSUPP;
                        if (k < 0)
                                j->cancel_requested = j->exec->cancel_requested = false;
                        return k;
                }
                job_end_before_unit(j);
                return 0;
        case JOB_PREPARING:
                j->cancel_requested = j->exec->cancel_requested = true;  /* acted upon when the mount job completes */
                if (j->fetch) {
                        /* Downloading the inputs: stop the transfers, the unit never starts. */
                        j->fetch = fetch_free(j->fetch);
                        job_end_before_unit(j);
                }
                return 0;
        case JOB_STARTING:
                j->cancel_requested = j->exec->cancel_requested = true;  /* acted upon when the start job completes */
                job_persist_async(j);
                return 0;
        case JOB_RUNNING:
                /* Recorded first: the verdict "cancelled" comes from this alone, also after a restart.
                 * The signal goes from the write's answer (the caller is answered at once). */
                j->cancel_requested = j->exec->cancel_requested = true;
                if (j->ctx->store) {
                        rec = job_record(j);
                        k = store_put_async(j->ctx->store, &rec, on_cancel_persisted, j, NULL);
                        if (k >= 0)
                                return 0;
                        job_persist_failed(j, k);
                }
                job_send_cancel(j);
                return 0;
        case JOB_FINISHING:
        case JOB_DONE:
                return -EALREADY;
        }
        return -EINVAL;
}

int job_add_waiter(Job *j, void (*cb)(Job *j, void *userdata), void *userdata, JobWaiter **ret) {
        JobWaiter *w;

        if (j->state == JOB_DONE && !j->final_writing) {
                /* Before the callback: it may free whatever ret points into. */
                if (ret)
                        *ret = NULL;
                cb(j, userdata);
                return 0;
        }
        w = calloc(1, sizeof(JobWaiter));
        if (!w)
                return -ENOMEM;
        w->cb = cb;
        w->userdata = userdata;
        w->next = j->waiters;
        j->waiters = w;
        if (ret)
                *ret = w;
        return 1;
}

void job_remove_waiter(Job *j, JobWaiter *w) {
        for (JobWaiter **p = &j->waiters; *p; p = &(*p)->next)
                if (*p == w) {
                        *p = w->next;
                        free(w);
                        return;
                }
}

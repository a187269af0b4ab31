/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <sys/stat.h>

#include "api.h"
#include "artifacts.h"
#include "callback.h"
#include "job.h"
#include "signed-url.h"
#include "store.h"
#include "log.h"
#include "request.h"
#include "result.h"

/* A request held open until its execution is final (POST ?wait=true, GET ?wait=true). */
typedef struct ApiWait {
        HttpRequest *req;
        Job *job;
        JobWaiter *waiter;
} ApiWait;

/* The caller's identity: "uid:N" on the unix socket (root is the administrator and sees everything;
 * anyone else, a member of group sandboxd, sees only the executions it submitted), "key:NAME" on TCP
 * (admin keys see everything). */
static int caller_owner(HttpRequest *req, char *buf, size_t size, bool *ret_admin) {
        return http_request_owner(req, buf, size, ret_admin);
}

static bool may_see(const char *caller, bool admin, const char *owner) {
        return admin || streq_ptr(caller, owner);
}

static bool query_true(HttpRequest *req, const char *key) {
        const char *v = http_request_query(req, key);
        return v && (streq(v, "true") || streq(v, "1") || streq(v, "yes") || *v == 0);
}

/* The record as the API shows it: the result, and its callback delivery if it has one. */
static json_object *record_json(Manager *m, const Execution *e) {
        json_object *o = execution_to_json(e);

        if (exec_status_is_final(e->status))
                callback_add_json(m, o, e->id);
        return o;
}

/* The execution object, with a freshly signed URL for each artifact. */
static json_object *exec_json(Manager *m, const Execution *e) {
        json_object *o = record_json(m, e), *l = NULL;
        uint64_t expires = now_usec(CLOCK_REALTIME) / 1000000ULL + m->config->artifact_url_lifetime_sec;
        char ts[64];

        if (!o || !e->artifacts || !json_object_object_get_ex(o, "artifacts", &l) || !l)
                return o;
        format_timestamp(expires * 1000000ULL, ts, sizeof(ts));
        for (size_t i = 0; i < e->artifacts->n_items && i < json_object_array_length(l); i++) {
                json_object *x = json_object_array_get_idx(l, i);
                char *url = NULL;

                if (artifact_url_build(m->artifact_key, m->artifact_key_len, e->id, e->artifacts->items[i].path,
                                       expires, &url) < 0)
                        url = NULL;
                json_object_object_add(x, "url", url ? json_object_new_string(url) : NULL);
                json_object_object_add(x, "url_expires_at", json_object_new_string(ts));
                free(url);
        }
        return o;
}

/* A job's execution object. A final job keeps its artifact list in the store only (up to
 * ArtifactMaxFiles= entries for each of KeepFinished= jobs would be a lot of memory): read it back. */
static json_object *job_json(Manager *m, Job *j) {
        _cleanup_(exec_artifacts_freep) ExecArtifacts *a = NULL;
        json_object *o;

        if (!job_is_final(j) || j->exec->artifacts || !m->store ||
            store_get_artifacts(m->store, j->exec->id, &a) < 0)
                return exec_json(m, j->exec);
        j->exec->artifacts = a;
        o = exec_json(m, j->exec);
        j->exec->artifacts = NULL;
        return o;
}

static void on_request_gone(HttpRequest *req, void *userdata) {
        ApiWait *w = userdata;

        if (w->waiter)
                job_remove_waiter(w->job, w->waiter);
        free(w);
}

static void on_job_done(Job *j, void *userdata) {
        ApiWait *w = userdata;
        Manager *m = j->manager;

        w->waiter = NULL;       /* the job frees it after this call */
        http_request_set_gone_cb(w->req, NULL, NULL);
        if (!job_is_final(j) && m->stopping)
                http_respond_error(w->req, 503, "shutting_down", NULL, "sandboxd is stopping; execution %s did not finish",
                                   j->exec->id);
        else
                http_respond_json(w->req, 200, job_json(m, j));
        free(w);
}

static void wait_for(HttpRequest *req, Job *j) {
        ApiWait *w = calloc(1, sizeof(ApiWait));
        JobWaiter *jw = NULL;
        int r;

        if (!w) {
                http_respond_error(req, 500, "internal", NULL, "out of memory");
                return;
        }
        w->req = req;
        w->job = j;
        /* Suspend first: the callback may answer at once. */
        http_request_suspend(req);
        /* When the job is already final the callback runs (and frees w) before this returns. */
        r = job_add_waiter(j, on_job_done, w, &jw);
        if (r < 0) {
                free(w);
                http_respond_error(req, 500, "internal", NULL, "out of memory");
                return;
        }
        if (r > 0) {
                w->waiter = jw;
                http_request_set_gone_cb(req, on_request_gone, w);
        }
}

static json_object *accepted_json(const Execution *e) {
        json_object *o = json_object_new_object();

        json_object_object_add(o, "execution_id", json_object_new_string(e->id));
        json_object_object_add(o, "status", json_object_new_string(exec_status_to_string(e->status)));
        return o;
}

static void respond_accepted(HttpRequest *req, Job *j, unsigned status) {
        http_respond_json(req, status, accepted_json(j->exec));
}

static void handle_submit(Manager *m, HttpRequest *req) {
        _cleanup_(exec_request_freep) ExecRequest *er = NULL;
        const char *ct, *body;
        RequestError err;
        char owner[HTTP_OWNER_MAX];
        bool admin;
        size_t len = 0;
        Job *j;
        int r;

        if (caller_owner(req, owner, sizeof(owner), &admin) < 0) {
                http_respond_error(req, 403, "forbidden", NULL, "cannot identify the caller");
                return;
        }

        if (http_request_too_large(req)) {
                http_respond_error(req, 413, "too_large", NULL, "request body exceeds MaxRequestBytes=%" PRIu64,
                                   m->config->max_request_bytes);
                return;
        }
        ct = http_request_header(req, "Content-Type");
        if (!ct || !startswith(ct, "application/json")) {
                http_respond_error(req, 415, "unsupported_media_type", NULL, "Content-Type must be application/json");
                return;
        }
        body = http_request_body(req, &len);
        r = exec_request_parse(body, len, m->config, &er, &err);
        if (r == -ENOMEM) {
                http_respond_error(req, 500, "internal", NULL, "out of memory");
                return;
        }
        if (r < 0) {
                http_respond_error(req, (unsigned) err.http_status, err.code, err.field, "%s", err.message);
                return;
        }

        if (er->execution_id) {
                _cleanup_(store_record_freep) StoreRecord *rec = NULL;

                j = manager_find_job(m, er->execution_id);
                if (!j && m->store && store_get(m->store, er->execution_id, &rec) >= 0) {
                        /* Known from before (evicted from memory, or an earlier run of sandboxd). */
                        if (memcmp(rec->fingerprint, er->fingerprint, sizeof(rec->fingerprint)) != 0 ||
                            !may_see(owner, admin, rec->owner)) {
                                http_respond_error(req, 409, "conflict", "execution_id",
                                                   "execution_id '%s' was already used for a different request",
                                                   er->execution_id);
                                return;
                        }
                        if (query_true(req, "wait") && exec_status_is_final(rec->exec->status))
                                (void) store_get_artifacts(m->store, rec->exec->id, &rec->exec->artifacts);
                        http_respond_json(req, 200, query_true(req, "wait") ? exec_json(m, rec->exec)
                                                                              : accepted_json(rec->exec));
                        return;
                }
                if (j && !may_see(owner, admin, j->owner)) {
                        http_respond_error(req, 409, "conflict", "execution_id",
                                           "execution_id '%s' was already used for a different request",
                                           er->execution_id);
                        return;
                }
                if (j) {
                        if (memcmp(j->fingerprint, er->fingerprint, sizeof(j->fingerprint)) != 0) {
                                http_respond_error(req, 409, "conflict", "execution_id",
                                                   "execution_id '%s' was already used for a different request",
                                                   er->execution_id);
                                return;
                        }
                        /* The same request again: the same execution, never a second run. */
                        if (query_true(req, "wait"))
                                wait_for(req, j);
                        else
                                respond_accepted(req, j, job_is_final(j) ? 200 : 202);
                        return;
                }
        }

        if (m->stopping) {
                http_respond_error(req, 503, "shutting_down", NULL, "sandboxd is stopping");
                return;
        }
        if (m->n_queued >= m->config->max_queued && m->n_running >= m->config->max_concurrent) {
                http_respond_error(req, 429, "queue_full", NULL, "%u executions queued (MaxQueued=%" PRIu64 "); retry later",
                                   m->n_queued, m->config->max_queued);
                return;
        }

        r = job_new(m, TAKE_PTR(er), owner, &j);
        if (r < 0) {
                http_respond_error(req, 500, "internal", NULL, "cannot create the execution: %s", strerror(-r));
                return;
        }
        /* Nothing runs that is not on record: a store that cannot take the row fails the request. */
        r = job_persist(j);
        if (r < 0) {
                const char *why = store_error_message(m->store);

                job_free(j);
                http_respond_error(req, r == -ENOSPC ? 507 : 503, "store_error", NULL,
                                   "the execution could not be recorded (%s); nothing was started", why);
                return;
        }
        log_debug("%s: queued (%s)", j->exec->id, j->exec->language);
        manager_dispatch_queue(m);
        manager_notify_status(m);

        if (query_true(req, "wait"))
                wait_for(req, j);
        else
                respond_accepted(req, j, 202);
}

static void handle_get(Manager *m, HttpRequest *req, const char *id) {
        _cleanup_(store_record_freep) StoreRecord *rec = NULL;
        Job *j = manager_find_job(m, id);
        char owner[HTTP_OWNER_MAX];
        bool admin = false;

        if (caller_owner(req, owner, sizeof(owner), &admin) < 0) {
                http_respond_error(req, 403, "forbidden", NULL, "cannot identify the caller");
                return;
        }
        /* Another owner's execution is "not found": its existence is not ours to reveal. */
        if (j && !may_see(owner, admin, j->owner))
                j = NULL;
        if (!j) {
                if (m->store && store_get(m->store, id, &rec) >= 0 && may_see(owner, admin, rec->owner)) {
                        /* Not there (never collected, or an older sandboxd): the list stays empty. */
                        if (exec_status_is_final(rec->exec->status))
                                (void) store_get_artifacts(m->store, id, &rec->exec->artifacts);
                        http_respond_json(req, 200, exec_json(m, rec->exec));
                        return;
                }
                http_respond_error(req, 404, "not_found", NULL, "no execution '%.64s'", id);
                return;
        }
        if (query_true(req, "wait") && !job_is_final(j)) {
                wait_for(req, j);
                return;
        }
        http_respond_json(req, 200, job_json(m, j));
}

/* GET /v1/executions/<id>/artifacts: the artifact part of the execution object, URLs signed afresh.
 * Who may see the execution may list them. */
static void handle_artifacts_list(Manager *m, HttpRequest *req, const char *id) {
        static const char *const keys[] = { "artifacts", "artifacts_skipped", "artifacts_skipped_total" };
        _cleanup_(store_record_freep) StoreRecord *rec = NULL;
        Job *j = manager_find_job(m, id);
        const Execution *e = NULL;
        char owner[HTTP_OWNER_MAX];
        bool admin = false;
        json_object *full, *o, *v;

        if (caller_owner(req, owner, sizeof(owner), &admin) < 0) {
                http_respond_error(req, 403, "forbidden", NULL, "cannot identify the caller");
                return;
        }
        if (j && may_see(owner, admin, j->owner))
                e = j->exec;
        else if (!j && m->store && store_get(m->store, id, &rec) >= 0 && may_see(owner, admin, rec->owner)) {
                if (exec_status_is_final(rec->exec->status))
                        (void) store_get_artifacts(m->store, id, &rec->exec->artifacts);
                e = rec->exec;
        }
        if (!e) {
                http_respond_error(req, 404, "not_found", NULL, "no execution '%.64s'", id);
                return;
        }
        full = j ? job_json(m, j) : exec_json(m, e);
        if (!full) {
                http_respond_error(req, 500, "internal", NULL, "out of memory");
                return;
        }
        o = json_object_new_object();
        json_object_object_add(o, "execution_id", json_object_new_string(e->id));
        json_object_object_add(o, "status", json_object_new_string(exec_status_to_string(e->status)));
        for (size_t i = 0; i < ELEMENTSOF(keys); i++)
                if (json_object_object_get_ex(full, keys[i], &v))
                        json_object_object_add(o, keys[i], json_object_get(v));
        json_object_put(full);
        http_respond_json(req, 200, o);
}

/* Everything that is not a valid URL for a stored artifact gets this same answer: whether the
 * signature was wrong, the link expired, the execution or file is unknown or purged. */
static void respond_no_artifact(HttpRequest *req) {
        http_respond_error(req, 404, "not_found", NULL, "no such artifact, or the link is invalid or has expired");
}

/* GET of a signed URL: the signature is the authorization (no owner, no API key). */
static void handle_artifact_get(Manager *m, HttpRequest *req, const char *id, const char *path) {
        _cleanup_(exec_artifacts_freep) ExecArtifacts *stored = NULL;
        _cleanup_free_ char *canonical = NULL;
        const ExecArtifacts *a = NULL;
        const ExecArtifact *x = NULL;
        const char *base;
        struct stat st;
        Job *j;
        int fd, r;

        if (!id_is_valid(id, REQUEST_ID_MAX) || isempty(path) || strlen(path) > SIGNED_URL_PATH_MAX) {
                respond_no_artifact(req);
                return;
        }
        canonical = artifact_url_path(id, path);
        if (!canonical) {
                http_respond_error(req, 500, "internal", NULL, "out of memory");
                return;
        }
        r = signed_url_verify(m->artifact_key, m->artifact_key_len, "GET", canonical,
                              http_request_query(req, "expires"), http_request_query(req, "signature"),
                              now_usec(CLOCK_REALTIME) / 1000000ULL);
        if (r < 0) {
                log_debug("%s: artifact URL refused: %s", id, strerror(-r));
                respond_no_artifact(req);
                return;
        }

        j = manager_find_job(m, id);
        if (j && job_is_final(j) && j->exec->artifacts)
                a = j->exec->artifacts;
        else if ((!j || job_is_final(j)) && m->store && store_get_artifacts(m->store, id, &stored) >= 0)
                a = stored;
        for (size_t i = 0; a && i < a->n_items; i++)
                if (streq(a->items[i].path, path)) {
                        x = &a->items[i];
                        break;
                }
        if (!x) {
                respond_no_artifact(req);
                return;
        }
        fd = artifacts_store_open_blob(m->artifacts_fd, x->sha256);
        if (fd < 0) {
                log_warning_errno(fd, "%s: artifact '%s' (%s) is missing from the store: %m", id, x->path, x->sha256);
                respond_no_artifact(req);
                return;
        }
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t) st.st_size != x->size) {
                log_warning("%s: artifact '%s' (%s) in the store does not match its record", id, x->path, x->sha256);
                safe_close(fd);
                respond_no_artifact(req);
                return;
        }
        base = strrchr(x->path, '/');
        http_respond_fd(req, 200, x->mime_type, fd, x->size, base ? base + 1 : x->path);
}

bool api_route_is_public(const char *method, const char *path) {
        const char *rest, *slash, *p;

        if (!streq_ptr(method, "GET") || !(rest = startswith(path, "/v1/executions/")))
                return false;
        slash = strchr(rest, '/');
        if (!slash || slash == rest)
                return false;
        p = startswith(slash, "/artifacts/");
        return p && *p;
}

static void handle_cancel(Manager *m, HttpRequest *req, const char *id) {
        _cleanup_(store_record_freep) StoreRecord *rec = NULL;
        Job *j = manager_find_job(m, id);
        char owner[HTTP_OWNER_MAX];
        bool admin = false;
        int r;

        if (caller_owner(req, owner, sizeof(owner), &admin) < 0) {
                http_respond_error(req, 403, "forbidden", NULL, "cannot identify the caller");
                return;
        }
        if (j && !may_see(owner, admin, j->owner))
                j = NULL;
        if (!j && m->store && store_get(m->store, id, &rec) >= 0 && may_see(owner, admin, rec->owner)) {
                http_respond_error(req, 409, "conflict", NULL, "execution '%s' has already finished", id);
                return;
        }
        if (!j) {
                http_respond_error(req, 404, "not_found", NULL, "no execution '%.64s'", id);
                return;
        }
        r = job_cancel(j);
        if (r == -EALREADY) {
                http_respond_error(req, 409, "conflict", NULL, "execution '%s' has already finished", id);
                return;
        }
        log_info("%s: cancel requested", id);
        http_respond_json(req, 202, job_json(m, j));
}

static void handle_list(Manager *m, HttpRequest *req) {
        StoreQuery q = STORE_QUERY_INIT;
        StoreRecord **l = NULL;
        size_t n = 0;
        _cleanup_free_ char *next = NULL;
        const char *v;
        char owner[HTTP_OWNER_MAX];
        bool admin = false;
        json_object *o, *a;
        int r;

        if (caller_owner(req, owner, sizeof(owner), &admin) < 0) {
                http_respond_error(req, 403, "forbidden", NULL, "cannot identify the caller");
                return;
        }
        if (!admin)
                q.owner = owner;
        if ((v = http_request_query(req, "session_id"))) {
                if (!id_is_valid(v, REQUEST_ID_MAX)) {
                        http_respond_error(req, 400, "invalid_request", "session_id", "session_id: invalid");
                        return;
                }
                q.session_id = v;
        }
        if ((v = http_request_query(req, "status"))) {
                q.status = exec_status_from_string(v);
                if (q.status < 0) {
                        http_respond_error(req, 400, "invalid_request", "status", "status: unknown status '%.32s'", v);
                        return;
                }
        }
        if ((v = http_request_query(req, "error_type"))) {
                q.error_type = streq(v, "none") ? (int) ERROR_NONE : (int) error_type_from_string(v);
                if (q.error_type < 0 || (q.error_type == ERROR_NONE && !streq(v, "none"))) {
                        http_respond_error(req, 400, "invalid_request", "error_type",
                                           "error_type: unknown error type '%.32s'", v);
                        return;
                }
        }
        if ((v = http_request_query(req, "failed"))) {
                if (!streq(v, "true") && !streq(v, "false")) {
                        http_respond_error(req, 400, "invalid_request", "failed", "failed: true or false");
                        return;
                }
                q.failed = streq(v, "true");
        }
        if ((v = http_request_query(req, "order"))) {
                if (streq(v, "created_at"))
                        q.order = STORE_ORDER_CREATED_AT;
                else if (streq(v, "duration_ms"))
                        q.order = STORE_ORDER_DURATION_MS;
                else {
                        http_respond_error(req, 400, "invalid_request", "order", "order: created_at or duration_ms");
                        return;
                }
        }
        if ((v = http_request_query(req, "limit"))) {
                uint64_t lim;
                if (safe_atou64(v, &lim) < 0 || lim < 1 || lim > STORE_LIST_MAX) {
                        http_respond_error(req, 400, "invalid_request", "limit", "limit: 1..%u", STORE_LIST_MAX);
                        return;
                }
                q.limit = (unsigned) lim;
        }
        q.cursor = http_request_query(req, "cursor");

        r = store_list(m->store, &q, &l, &n, &next);
        if (r == -EINVAL) {
                http_respond_error(req, 400, "invalid_request", "cursor", "cursor: not a cursor of this query");
                return;
        }
        if (r < 0) {
                http_respond_error(req, 503, "store_error", NULL, "cannot read the store: %s", store_error_message(m->store));
                return;
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
        http_respond_json(req, 200, o);
}

static void handle_languages(HttpRequest *req) {
        json_object *o = json_object_new_object(), *a = json_object_new_array();

        for (size_t i = 0; i < language_count(); i++) {
                const Language *l = language_get(i);
                json_object *e = json_object_new_object(), *al = json_object_new_array();

                json_object_object_add(e, "name", json_object_new_string(l->name));
                for (const char *const *x = l->aliases; x && *x; x++)
                        json_object_array_add(al, json_object_new_string(*x));
                json_object_object_add(e, "aliases", al);
                json_object_object_add(e, "source", json_object_new_string(l->source_name));
                json_object_object_add(e, "compiled", json_object_new_boolean(l->compile_argv != NULL));
                json_object_object_add(e, "available", json_object_new_boolean(language_available(l)));
                json_object_array_add(a, e);
        }
        json_object_object_add(o, "languages", a);
        http_respond_json(req, 200, o);
}

static void handle_health(Manager *m, HttpRequest *req) {
        json_object *o = json_object_new_object();

        json_object_object_add(o, "status", json_object_new_string(m->stopping ? "stopping" : "ok"));
        json_object_object_add(o, "version", json_object_new_string(PACKAGE_VERSION));
        json_object_object_add(o, "running", json_object_new_int((int) m->n_running));
        json_object_object_add(o, "queued", json_object_new_int((int) m->n_queued));
        json_object_object_add(o, "slots", json_object_new_uint64(m->config->max_concurrent));
        json_object_object_add(o, "queue_max", json_object_new_uint64(m->config->max_queued));
        json_object_object_add(o, "finished", json_object_new_uint64(m->counter_finished));
        json_object_object_add(o, "cgroup", json_object_new_string(m->cgroup_v2 ? "v2" : "v1"));
        http_respond_json(req, 200, o);
}

/* Prometheus text exposition. Counters are this process's: they start over when sandboxd restarts,
 * which Prometheus' rate() handles as a counter reset. Every caller may read them (on TCP only with
 * a valid key, as every request): they are totals and say nothing about anyone's executions. */
static void handle_metrics(Manager *m, HttpRequest *req) {
        MetricsGauges g;
        char *text = NULL;

        manager_metrics_gauges(m, &g);
        if (metrics_render(m->metrics, &g, &text) < 0) {
                http_respond_error(req, 500, "internal", NULL, "out of memory");
                return;
        }
        http_respond_text(req, 200, "text/plain; version=0.0.4; charset=utf-8", text);
}

void api_handle(HttpRequest *req, void *userdata) {
        Manager *m = userdata;
        const char *method = http_request_method(req), *path = http_request_path(req), *rest;
        bool get = streq(method, "GET"), post = streq(method, "POST");

        if (streq(path, "/v1/executions")) {
                if (post)
                        handle_submit(m, req);
                else if (get)
                        handle_list(m, req);
                else
                        http_respond_error(req, 405, "method_not_allowed", NULL, "use GET or POST");
                return;
        }
        if ((rest = startswith(path, "/v1/executions/"))) {
                char id[REQUEST_ID_MAX + 1];
                const char *slash = strchr(rest, '/');
                size_t n = slash ? (size_t) (slash - rest) : strlen(rest);

                if (n == 0 || n > REQUEST_ID_MAX) {
                        http_respond_error(req, 404, "not_found", NULL, "no such execution");
                        return;
                }
                memcpy(id, rest, n);
                id[n] = 0;
                if (!slash) {
                        if (!get) {
                                http_respond_error(req, 405, "method_not_allowed", NULL, "use GET");
                                return;
                        }
                        handle_get(m, req, id);
                        return;
                }
                if (streq(slash, "/artifacts")) {
                        if (!get) {
                                http_respond_error(req, 405, "method_not_allowed", NULL, "use GET");
                                return;
                        }
                        handle_artifacts_list(m, req, id);
                        return;
                }
                if (startswith(slash, "/artifacts/")) {
                        if (!get) {
                                http_respond_error(req, 405, "method_not_allowed", NULL, "use GET");
                                return;
                        }
                        handle_artifact_get(m, req, id, slash + strlen("/artifacts/"));
                        return;
                }
                if (streq(slash, "/cancel")) {
                        if (!post) {
                                http_respond_error(req, 405, "method_not_allowed", NULL, "use POST");
                                return;
                        }
                        handle_cancel(m, req, id);
                        return;
                }
        }
        if (streq(path, "/v1/languages") && get) {
                handle_languages(req);
                return;
        }
        if (streq(path, "/v1/health") && get) {
                handle_health(m, req);
                return;
        }
        if (streq(path, "/metrics")) {
                if (get)
                        handle_metrics(m, req);
                else
                        http_respond_error(req, 405, "method_not_allowed", NULL, "use GET");
                return;
        }
        http_respond_error(req, 404, "not_found", NULL, "no route for %s %.128s", method, path);
}

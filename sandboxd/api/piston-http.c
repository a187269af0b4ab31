/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>

#include "api.h"
#include "log.h"
#include "model/json-strict.h"
#include "model/piston.h"
#include "piston-http.h"
#include "run/job.h"
#include "store/store.h"
#include "submit.h"
#include "utf8.h"

/* Piston's requests nest two levels (files[i].content); the strict check's depth leaves room. */
#define PISTON_JSON_DEPTH 8

static void json_object_putp(json_object **o) {
        json_object_put(*o);
}

/* Piston's refusal: {"message": ...}. */
_printf_(3, 4) static void respond_message(HttpRequest *req, unsigned status, const char *fmt, ...) {
        char buf[PISTON_MESSAGE_MAX + 128];
        json_object *o;
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(buf, sizeof(buf), fmt, ap);
        va_end(ap);
        o = json_object_new_object();
        if (!o) {
                http_respond_error(req, API_ERROR_INTERNAL, NULL, "out of memory");
                return;
        }
        json_object_object_add(o, "message", json_object_new_string(buf));
        http_respond_json(req, status, o);
}

/* The languages a Piston request may name: those available now. The table is current as long as
 * the handler runs (a reload happens between events). */
static size_t available_languages(const Language **langs, size_t max) {
        size_t n = 0;

        for (size_t i = 0; i < language_count() && n < max; i++) {
                const Language *l = language_get(i);

                if (l && language_available(l))
                        langs[n++] = l;
        }
        return n;
}

#define PISTON_LANGUAGES_MAX 256

void api_handle_piston_runtimes(_unused_ ApiContext *ac, HttpRequest *req) {
        const Language *langs[PISTON_LANGUAGES_MAX];
        size_t n = available_languages(langs, ELEMENTSOF(langs));
        json_object *a = piston_runtimes(langs, n);

        if (!a) {
                respond_message(req, 500, "out of memory");
                return;
        }
        http_respond_json(req, 200, a);
}

typedef struct PistonCall {
        ApiContext *ac;
        HttpRequest *req;
        const Language *language;       /* a reference (language_ref()): a reload may come meanwhile */
        RecordRender *render;           /* the record being read for the answer */
} PistonCall;

static PistonCall *piston_call_free(PistonCall *c) {
        if (!c)
                return NULL;
        (void) record_render_cancel(c->render);
        language_unref(c->language);
        free(c);
        return NULL;
}

static void respond_record(HttpRequest *req, json_object *record, const Language *l) {
        json_object *o = piston_response(record, l);

        json_object_put(record);
        if (!o) {
                respond_message(req, 500, "out of memory");
                return;
        }
        http_respond_json(req, 200, o);
}

static void on_request_gone(void *userdata) {
        /* The caller went away: the run goes on (as POST /v1/executions?wait=true's), unanswered. */
        piston_call_free(userdata);
}

/* The caller went away while the store was read for the answer. */
static void on_render_gone(HttpRequest *req, void *userdata) {
        piston_call_free(userdata);
}

static void on_rendered(void *userdata, json_object *record, const RequestError *err) {
        PistonCall *c = userdata;

        if (c->render)
                http_request_set_gone_cb(c->req, NULL, NULL);
        c->render = NULL;
        if (record)
                respond_record(c->req, record, c->language);
        else
                respond_message(c->req, api_error_http_status(err->error), "%s", err->message);
        piston_call_free(c);
}

/* Answer with the execution's record (a job's, or a stored one: taken), then free c (once the store
 * has answered). */
static void respond_execution(PistonCall *c, Job *j, StoreRecord *rec) {
        RecordRender *x = NULL;
        int r;

        r = j ? job_record_json_async(c->ac, j, on_rendered, c, &x) : stored_record_json_async(c->ac, rec, on_rendered, c, &x);
        if (r < 0) {
                respond_message(c->req, 500, "out of memory");
                piston_call_free(c);
        } else if (r == 0) {
                c->render = x;
                http_request_suspend(c->req);
                http_request_set_gone_cb(c->req, on_render_gone, c);
        }
}

static void on_job_done(HttpRequest *req, Job *j, void *userdata) {
        PistonCall *c = userdata;

        if (!job_is_final(j) && c->ac->ctx->stopping) {
                respond_message(req, 503, "sandboxd is stopping; the execution did not finish");
                piston_call_free(c);
        } else
                respond_execution(c, j, NULL);
}

static void on_execute_submitted(HttpRequest *req, int r, SubmitResult *res, const RequestError *err,
                                 void *userdata) {
        PistonCall *c = userdata;

        if (r < 0) {
                respond_message(req, api_error_http_status(err->error), "%s", err->message);
                piston_call_free(c);
                return;
        }
        if (res->outcome == SUBMIT_EXISTING_RECORD) {
                /* Not reached (no execution_id is given), but answered all the same. */
                respond_execution(c, NULL, res->record);
                return;
        }
        /* The callback may answer (and free c) at once. */
        if (api_wait_job(req, res->job, on_job_done, on_request_gone, c) < 0) {
                respond_message(req, 500, "out of memory");
                piston_call_free(c);
        }
}

void api_handle_piston_execute(ApiContext *ac, HttpRequest *req) {
        _cleanup_(json_object_putp) json_object *body_json = NULL, *request = NULL;
        const Language *langs[PISTON_LANGUAGES_MAX], *l = NULL;
        char owner[HTTP_OWNER_MAX], msg[PISTON_MESSAGE_MAX];
        const char *body, *text;
        JsonStrictError jerr;
        PistonCall *c;
        bool admin = false;
        size_t len = 0, n;
        int r;

        if (http_request_owner(req, owner, sizeof(owner), &admin) < 0) {
                respond_message(req, 403, "cannot identify the caller");
                return;
        }
        if (http_request_too_large(req)) {
                respond_message(req, 413, "request body exceeds MaxRequestBytes=%" PRIu64, ac->ctx->config->max_request_bytes);
                return;
        }
        /* Any Content-Type: Piston's own clients send JSON as text/plain (node-fetch with a string
         * body), and its server read it. The body is still held to the strict JSON rules. */
        body = http_request_body(req, &len);
        if (!body || !utf8_is_valid(body, len) || json_strict_check(body, len, PISTON_JSON_DEPTH, &jerr) < 0 ||
            !(body_json = json_tokener_parse(body))) {
                respond_message(req, 400, "the request body is not one JSON value (strict JSON, UTF-8)");
                return;
        }
        n = available_languages(langs, ELEMENTSOF(langs));
        r = piston_request(body_json, langs, n, ac->ctx->config, &request, &l, msg);
        if (r == -ENOMEM) {
                respond_message(req, 500, "out of memory");
                return;
        }
        if (r < 0) {
                respond_message(req, 400, "%s", msg);
                return;
        }
        text = json_object_to_json_string_ext(request, JSON_C_TO_STRING_PLAIN);
        if (!text) {
                respond_message(req, 500, "out of memory");
                return;
        }
        c = calloc(1, sizeof(PistonCall));
        if (!c) {
                respond_message(req, 500, "out of memory");
                return;
        }
        c->ac = ac;
        c->req = req;
        c->language = language_ref(l);
        /* Every check of POST /v1/executions, as this caller: its quotas, its queue. */
        if (api_submit(ac, req, text, strlen(text), owner, admin, on_execute_submitted, on_request_gone, c) < 0) {
                respond_message(req, 500, "out of memory");
                piston_call_free(c);
        }
}

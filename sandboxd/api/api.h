/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The HTTP routes of docs/http-api.md. */

#include "api-context.h"
#include "http.h"
#include "model/request.h"

void api_handle(HttpRequest *req, void *userdata);
/* HttpSettings.begin: what a route does before the body is read (a session file's PUT streams it). */
void api_begin(HttpRequest *req, void *userdata);

struct Job;
/* Hold req open until j is final: req is suspended, and done(req, j, userdata) answers it when j is
 * final, or at shutdown with j unfinished (at once when j is final already). If the caller goes
 * away first, gone(userdata) (may be NULL) instead; the run goes on. Exactly one of them is called,
 * unless this returns -ENOMEM: then neither, and the caller answers req. The one wait of
 * POST /v1/executions?wait=true, GET ?wait=true and MCP's run_code. */
int api_wait_job(HttpRequest *req, struct Job *j, void (*done)(HttpRequest *req, struct Job *j, void *userdata),
                 void (*gone)(void *userdata), void *userdata);

struct SubmitResult;
struct RequestError;
/* submit_execution_async() for a request over HTTP (POST /v1/executions, MCP's run_code, Piston's
 * execute): req is suspended while the store answers, then done(req, r, res, err, userdata) answers it
 * (at once when the store was not needed). If the caller goes away first, gone(userdata) (may be
 * NULL) instead, and the submission goes on unanswered. Exactly one of them is called, unless this
 * returns -ENOMEM: then neither, and the caller answers req. */
typedef void (*ApiSubmitDoneFn)(HttpRequest *req, int r, struct SubmitResult *res, const struct RequestError *err,
                                void *userdata);
int api_submit(ApiContext *ac, HttpRequest *req, const char *body, size_t len, const char *owner, bool admin,
               ApiSubmitDoneFn done, void (*gone)(void *userdata), void *userdata);

/* The body of GET /v1/languages (also MCP's list_languages). NULL on OOM. */
json_object *api_languages_json(ApiContext *ac);

/* The routes that carry their own authorization and so need no API key on TCP: GET of a signed
 * artifact URL, /v1/executions/<id>/artifacts/<path>. */
bool api_route_is_public(const char *method, const char *path);
/* The store tells (STORE_CHANNEL_FINAL) that the final record of id was written: the waits of
 * GET/POST ?wait=true for it on another node read it now. */
void api_final_elsewhere(const char *id);
/* The Piston API's routes (/api/v2/...), the only ones served on PistonListen='s listener. */
bool api_route_is_piston(const char *method, const char *path);

/* Which route a request's method and (decoded) path select, before anything else is looked at: the
 * table of api_handle(), pure, so that it can be tested on its own. */
typedef enum ApiRouteId {
        API_ROUTE_SUBMIT,            /* POST /v1/executions */
        API_ROUTE_LIST,              /* GET /v1/executions */
        API_ROUTE_GET,               /* GET /v1/executions/<id> */
        API_ROUTE_ARTIFACTS_LIST,    /* GET /v1/executions/<id>/artifacts */
        API_ROUTE_ARTIFACT_GET,      /* GET /v1/executions/<id>/artifacts/<path> (arg: path, maybe "") */
        API_ROUTE_CANCEL,            /* POST /v1/executions/<id>/cancel */
        API_ROUTE_EVENTS,            /* GET /v1/executions/<id>/events */
        API_ROUTE_SESSION_LIST,      /* GET /v1/sessions */
        API_ROUTE_SESSION_GET,       /* GET /v1/sessions/<id> (arg: id) */
        API_ROUTE_SESSION_DELETE,    /* DELETE /v1/sessions/<id> (arg: id) */
        API_ROUTE_SESSION_FILES,     /* GET, PUT, DELETE /v1/sessions/<id>/files[/<path>] (session_id;
                                      * arg: the path after "files/", "" for the root) */
        API_ROUTE_LANGUAGES,         /* GET /v1/languages */
        API_ROUTE_HEALTH,            /* GET /v1/health */
        API_ROUTE_METRICS,           /* GET /metrics */
        API_ROUTE_MCP,               /* POST /mcp */
        API_ROUTE_PISTON_RUNTIMES,   /* GET /api/v2/runtimes */
        API_ROUTE_PISTON_EXECUTE,    /* POST /api/v2/execute */
        API_ROUTE_NO_EXECUTION,      /* 404: an execution id that is empty or too long */
        API_ROUTE_NO_SESSION,        /* 404: a session id that is empty, too long or has a '/' */
        API_ROUTE_METHOD_NOT_ALLOWED, /* 405 (allow: "use GET" ...) */
        API_ROUTE_NOT_FOUND,         /* 404: no route */
        _API_ROUTE_MAX,
} ApiRouteId;

typedef struct ApiRoute {
        ApiRouteId id;
        char execution_id[REQUEST_ID_MAX + 1]; /* the execution routes: 1..REQUEST_ID_MAX bytes */
        char session_id[REQUEST_ID_MAX + 1];   /* API_ROUTE_SESSION_FILES: 1..REQUEST_ID_MAX bytes */
        const char *arg;             /* see above; points into the path */
        const char *allow;           /* API_ROUTE_METHOD_NOT_ALLOWED: the message */
} ApiRoute;

void api_route_match(const char *method, const char *path, ApiRoute *ret);
/* Whether a route reads or writes the store: those are refused (503 store_error) while it is far
 * behind (store_is_behind()). A session's files are its node's and need none (the look for a session
 * another node holds is one read, bounded by the connections). */
bool api_route_needs_store(ApiRouteId id);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* /v1/sessions/{id}/files[/{path}] (docs/http-api.md): a session's workspace between its runs. The
 * functions below the handler take the session, the caller's view of it already checked, and a
 * workspace path (session-files.h), so that another API (MCP tools) can offer the same. */

#include <json-c/json.h>
#include <stdint.h>

#include "api-context.h"
#include "http.h"
#include "model/request.h"

typedef struct Session Session;

/* GET, PUT or DELETE of a files URL; path is what follows ".../files/" ("" for ".../files"). */
void api_handle_session_files(ApiContext *ac, HttpRequest *req, const char *id, const char *path);
/* PUT, before its body (HttpSettings.begin): refused now (404, 409, 400, 403...; a session this node
 * does not hold is not looked for in the store: 404, which says so), or the body is
 * streamed into a temporary file beside path (never held in memory) with MaxInputFileBytes= and the
 * session's disk_mb as its cap; no run of the session starts meanwhile. api_handle_session_files()
 * then renames it into place. */
void api_session_files_begin(ApiContext *ac, HttpRequest *req, const char *id, const char *path);

/* The session id names for owner (admin: any owner's), as GET /v1/sessions/{id} finds it, without
 * waiting: done(userdata, s, NULL), or done(userdata, NULL, err) with the same 404 ("no session
 * '<id>'") whether it does not exist or is someone else's; on a store several nodes share, one this
 * node does not hold is looked for there (one read), and the 404 names the node that holds it.
 * Returns 1 when done was called already, 0 when the read is under way (*ret its handle until done:
 * session_find_cancel() if the caller goes first), or -ENOMEM (done never called). */
typedef struct SessionFind SessionFind;
typedef void (*SessionFindDoneFn)(void *userdata, Session *s, const RequestError *err);
int session_find_async(ApiContext *ac, const char *owner, bool admin, const char *id, SessionFindDoneFn done,
                       void *userdata, SessionFind **ret);
SessionFind *session_find_cancel(SessionFind *f);
/* The same for an HTTP request (its caller): fn(ac, req, s, arg) with the session found, else the 404
 * (or 403) answered. req is suspended meanwhile; arg must live as long as req (a part of its path). */
typedef void (*ApiSessionFn)(ApiContext *ac, HttpRequest *req, Session *s, const char *arg);
void api_with_session(ApiContext *ac, HttpRequest *req, const char *id, const char *arg, ApiSessionFn fn);

/* What a GET yields: a regular file (fd, its size and media type) or a listing. */
typedef struct SessionFileGet {
        int fd;                  /* -EBADF with a listing */
        uint64_t size;
        const char *mime_type;   /* static */
        json_object *listing;    /* session_file_list()'s, or NULL with a file */
} SessionFileGet;

/* path: the URL form (session_file_path_parse(), dir_ok), "" the root. Each returns 0, or a negative
 * errno with *err filled: 400 a bad path, 409 a run of the session queued or active, 404/403/413
 * (session_file_error()). session_files_put()'s data is at most max_bytes long (else 413). */
int session_files_get(Session *s, const char *path, SessionFileGet *ret, RequestError *err);
int session_files_put(Session *s, const char *path, const void *data, size_t len, uint64_t max_bytes,
                      json_object **ret, RequestError *err);
int session_files_delete(Session *s, const char *path, json_object **ret, RequestError *err);

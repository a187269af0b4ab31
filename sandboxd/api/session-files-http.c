/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <sys/stat.h>

#include "delivery/session-files.h"
#include "model/mime.h"
#include "model/scoped-id.h"
#include "run/runner.h"
#include "run/session.h"
#include "session-files-http.h"
#include "submit.h"
#include "util.h"

/* ---- the session a request names, without waiting for the store (issue 22) ---- */

struct SessionFind {
        ApiContext *ac;
        char *owner;
        bool admin;
        char id[REQUEST_ID_MAX + 1];
        StoreCall *call;
        SessionFindDoneFn done;
        void *userdata;
        bool *called;            /* while session_find_async() runs: answered */
};

/* The caller's own session of that name, else id as a record id (session.h), if the caller may see it. */
static Session *find_here(ApiContext *ac, const char *owner, bool admin, const char *id) {
        Session *s;

        if (!id_is_valid(id, REQUEST_ID_MAX))
                return NULL;
        s = sessions_find(ac->sessions, owner, id);
        if (!s)
                s = sessions_find_key(ac->sessions, id);
        if (s && !(admin || streq_ptr(owner, s->owner)))
                return NULL;
        return s;
}

static void not_found(RequestError *err, const char *id) {
        (void) request_error(err, -ENOENT, API_ERROR_NOT_FOUND, NULL, "no session '%.64s'", id);
}

SessionFind *session_find_cancel(SessionFind *f) {
        if (!f)
                return NULL;
        (void) store_call_cancel(f->call);
        free(f->owner);
        return mfree(f);
}

static void on_session_row(void *userdata, int r, StoreSession *x) {
        SessionFind *f = userdata;
        SessionFindDoneFn done = f->done;
        void *done_data = f->userdata;
        RequestError err;
        Session *s;

        f->call = NULL;
        if (f->called)
                *f->called = true;
        /* Made here meanwhile (a run of that session_id was submitted): this node's. */
        s = find_here(f->ac, f->owner, f->admin, f->id);
        if (!s && r >= 0 && x->node && !streq_ptr(x->node, f->ac->ctx->node_name))
                /* Several nodes: the caller's own session lives on another node (its workspace is that
                 * node's memory); say which. */
                (void) request_error(&err, -ENOENT, API_ERROR_NOT_FOUND, NULL,
                                     "session '%.64s' is held by node '%s' (its workspace is that node's): its "
                                     "state, files and deletion are answered there", f->id, x->node);
        else if (!s)
                /* Not in the store (-ENOENT), or unreadable: as not found, as a single node says. */
                not_found(&err, f->id);
        store_sessions_free(x, x ? 1 : 0);
        (void) session_find_cancel(f);
        done(done_data, s, s ? NULL : &err);
}

int session_find_async(ApiContext *ac, const char *owner, bool admin, const char *id, SessionFindDoneFn done,
                       void *userdata, SessionFind **ret) {
        char key[SCOPED_ID_MAX];
        bool called = false;
        RequestError err;
        SessionFind *f;
        Session *s;
        int r;

        *ret = NULL;
        s = find_here(ac, owner, admin, id);
        /* Only a store several nodes share has sessions this node does not hold. */
        if (s || !id_is_valid(id, REQUEST_ID_MAX) || !ac->ctx->shared_queue || !ac->ctx->store ||
            scoped_id(key, "sess", owner, id) < 0) {
                if (!s)
                        not_found(&err, id);
                done(userdata, s, s ? NULL : &err);
                return 1;
        }
        f = calloc(1, sizeof(SessionFind));
        if (!f || !(f->owner = strdup(owner))) {
                free(f);
                return -ENOMEM;
        }
        f->ac = ac;
        f->admin = admin;
        strcpy(f->id, id);
        f->done = done;
        f->userdata = userdata;
        f->called = &called;
        r = store_session_get_async(ac->ctx->store, key, on_session_row, f, &f->call);
        if (r < 0) {
                (void) session_find_cancel(f);
                return r;
        }
        if (called)
                return 1;       /* answered at once (a store without an event loop): f is gone */
        f->called = NULL;
        *ret = f;
        return 0;
}

/* ---- an HTTP request that names a session ---- */

typedef struct SessionRequest {
        ApiContext *ac;
        HttpRequest *req;
        const char *arg;
        ApiSessionFn fn;
        SessionFind *find;
} SessionRequest;

static void on_session_request_gone(HttpRequest *req, void *userdata) {
        SessionRequest *q = userdata;

        (void) session_find_cancel(q->find);
        free(q);
}

static void on_session_found(void *userdata, Session *s, const RequestError *err) {
        SessionRequest *q = userdata;
        HttpRequest *req = q->req;

        q->find = NULL;
        http_request_set_gone_cb(req, NULL, NULL);
        if (s)
                q->fn(q->ac, req, s, q->arg);
        else
                http_respond_error(req, err->error, err->field[0] ? err->field : NULL, "%s", err->message);
        free(q);
}

void api_with_session(ApiContext *ac, HttpRequest *req, const char *id, const char *arg, ApiSessionFn fn) {
        char owner[HTTP_OWNER_MAX];
        SessionRequest *q;
        bool admin = false;
        int r;

        if (http_request_owner(req, owner, sizeof(owner), &admin) < 0) {
                http_respond_error(req, API_ERROR_FORBIDDEN, NULL, "cannot identify the caller");
                return;
        }
        q = calloc(1, sizeof(SessionRequest));
        if (!q) {
                http_respond_error(req, API_ERROR_INTERNAL, NULL, "out of memory");
                return;
        }
        *q = (SessionRequest) { .ac = ac, .req = req, .arg = arg, .fn = fn };
        r = session_find_async(ac, owner, admin, id, on_session_found, q, &q->find);
        if (r < 0) {
                free(q);
                http_respond_error(req, API_ERROR_INTERNAL, NULL, "out of memory");
                return;
        }
        if (r > 0)
                return;         /* answered (q is gone) */
        http_request_suspend(req);
        http_request_set_gone_cb(req, on_session_request_gone, q);
}

/* The workspace is the sandbox's while a run of it is queued or active (a queued run may start at
 * any moment): no file goes in or out meanwhile. Before the mount is there, there is nothing. */
static int check_idle(Session *s, RequestError *err) {
        if (s->active || s->n_jobs > 0 || !s->ready)
                return request_error(err, -EBUSY, API_ERROR_CONFLICT, NULL,
                                     "session '%s' has executions queued or running; its files can be "
                                     "reached between runs", s->id);
        return 0;
}

static int parse_path(const char *path, bool dir_ok, char **ret, RequestError *err) {
        const char *why = NULL;
        int r;

        r = session_file_path_parse(path, dir_ok, ret, &why);
        if (r == -EINVAL)
                return request_error(err, r, API_ERROR_INVALID_REQUEST, "path", "path '%.255s' %s", path, why);
        if (r < 0)
                return request_error(err, r, API_ERROR_INTERNAL, NULL, "out of memory");
        return r;
}

static int file_error(int r, const char *path, RequestError *err) {
        const char *msg;
        ApiError e = session_file_error(r, &msg);

        return request_error(err, r, e, e == API_ERROR_INTERNAL ? NULL : "path", "'%s' %s%s%s", path ?: "/", msg,
                             e == API_ERROR_INTERNAL ? ": " : "", e == API_ERROR_INTERNAL ? strerror(-r) : "");
}

static int open_workspace(Session *s, RequestError *err) {
        int fd = session_files_open_workspace(s->path);

        if (fd < 0)
                return file_error(fd, NULL, err);
        return fd;
}

int session_files_get(Session *s, const char *path, SessionFileGet *ret, RequestError *err) {
        _cleanup_free_ char *p = NULL;
        _cleanup_close_ int ws = -EBADF, fd = -EBADF;
        uint8_t head[MIME_SNIFF_BYTES];
        struct stat st;
        ssize_t n;
        int r;

        r = check_idle(s, err);
        if (r < 0)
                return r;
        r = parse_path(path, true, &p, err);
        if (r < 0)
                return r;
        ws = session_files_open_workspace(s->path);
        if (ws == -ENOENT && !p) {
                /* No run has made workspace/ yet: an empty root. */
                json_object *o = json_object_new_object();

                json_object_object_add(o, "path", json_object_new_string(""));
                json_object_object_add(o, "entries", json_object_new_array());
                json_object_object_add(o, "truncated", json_object_new_boolean(false));
                *ret = (SessionFileGet) { .fd = -EBADF, .listing = o };
                return 0;
        }
        if (ws < 0)
                return file_error(ws, p, err);
        r = session_file_open(ws, p, &fd, &st);
        if (r < 0)
                return file_error(r, p, err);
        if (S_ISDIR(st.st_mode)) {
                json_object *o = NULL;

                r = session_file_list(fd, p, &o);
                if (r < 0)
                        return file_error(r, p, err);
                *ret = (SessionFileGet) { .fd = -EBADF, .listing = o };
                return 0;
        }
        /* A file larger than the tmpfs can only be holes: streaming them would cost time, not disk. */
        if ((uint64_t) st.st_size > s->disk_mb * 1024 * 1024)
                return file_error(-EFBIG, p, err);
        n = pread(fd, head, sizeof(head), 0);
        *ret = (SessionFileGet) {
                .fd = TAKE_FD(fd),
                .size = (uint64_t) st.st_size,
                .mime_type = mime_type_guess(p, n > 0 ? head : NULL, n > 0 ? (size_t) n : 0),
        };
        return 0;
}

int session_files_put(Session *s, const char *path, const void *data, size_t len, uint64_t max_bytes,
                      json_object **ret, RequestError *err) {
        _cleanup_free_ char *p = NULL;
        _cleanup_close_ int ws = -EBADF;
        json_object *o;
        int r;

        r = check_idle(s, err);
        if (r < 0)
                return r;
        r = parse_path(path, false, &p, err);
        if (r < 0)
                return r;
        if (r == 0)
                return request_error(err, -EINVAL, API_ERROR_INVALID_REQUEST, "path", "a file's path is needed");
        if (len > max_bytes || len > s->disk_mb * 1024 * 1024)
                return request_error(err, -EFBIG, API_ERROR_TOO_LARGE, NULL,
                                     "'%s': %zu bytes exceed MaxInputFileBytes=%" PRIu64
                                     " or the session's disk_mb=%" PRIu64, p, len, max_bytes, s->disk_mb);
        ws = open_workspace(s, err);
        if (ws < 0)
                return ws;
        r = session_file_write(ws, p, data, len);
        if (r < 0)
                return file_error(r, p, err);
        o = json_object_new_object();
        json_object_object_add(o, "path", json_object_new_string(p));
        json_object_object_add(o, "size", json_object_new_uint64(len));
        *ret = o;
        return 0;
}

int session_files_delete(Session *s, const char *path, json_object **ret, RequestError *err) {
        _cleanup_free_ char *p = NULL;
        _cleanup_close_ int ws = -EBADF;
        json_object *o;
        int r;

        r = check_idle(s, err);
        if (r < 0)
                return r;
        r = parse_path(path, false, &p, err);
        if (r < 0)
                return r;
        if (r == 0)
                return request_error(err, -EINVAL, API_ERROR_INVALID_REQUEST, "path",
                                     "the workspace itself cannot be deleted (DELETE /v1/sessions/{id} deletes "
                                     "the session)");
        ws = open_workspace(s, err);
        if (ws < 0)
                return ws;
        r = session_file_remove(ws, p);
        if (r < 0)
                return file_error(r, p, err);
        o = json_object_new_object();
        json_object_object_add(o, "path", json_object_new_string(p));
        json_object_object_add(o, "deleted", json_object_new_boolean(true));
        *ret = o;
        return 0;
}

/* ---- PUT, streamed: the body goes into the file as it arrives (api_session_files_begin()) ---- */

typedef struct Upload {
        ApiContext *ac;
        Session *s;              /* held (n_uploads) until released */
        char *path;
        SessionFileUpload file;
} Upload;

static int upload_write(void *userdata, const void *data, size_t n) {
        Upload *up = userdata;

        return session_file_upload_write(&up->file, data, n);
}

/* The workspace is the session's runs' again: one waiting for the upload may start. */
static void upload_release(Upload *up) {
        if (!up->s)
                return;
        if (up->s->n_uploads > 0)
                up->s->n_uploads--;
        up->s = NULL;
        runner_dispatch(up->ac->runner);
}

static void upload_free(void *userdata) {
        Upload *up = userdata;

        session_file_upload_abort(&up->file);   /* nothing if renamed into place */
        upload_release(up);
        free(up->path);
        free(up);
}

/* The largest body: MaxInputFileBytes=, and never more than the session's tmpfs. */
static uint64_t upload_max(ApiContext *ac, const Session *s) {
        return MIN(ac->ctx->config->max_input_file_bytes, s->disk_mb * 1024 * 1024);
}

/* The session id names for req's caller, held here, or NULL with the refusal answered (403, 404).
 * Before the body nothing waits for the store: a session another node holds is not looked for (the
 * other requests say which node, session_find_async()). */
static Session *request_session_here(ApiContext *ac, HttpRequest *req, const char *id) {
        char owner[HTTP_OWNER_MAX];
        bool admin = false;
        Session *s;

        if (http_request_owner(req, owner, sizeof(owner), &admin) < 0) {
                http_respond_error(req, API_ERROR_FORBIDDEN, NULL, "cannot identify the caller");
                return NULL;
        }
        s = find_here(ac, owner, admin, id);
        if (!s && ac->ctx->shared_queue)
                http_respond_error(req, API_ERROR_NOT_FOUND, NULL,
                                   "no session '%.64s' on this node (one held by another node takes its files "
                                   "there: GET /v1/sessions/%.64s says which)", id, id);
        else if (!s)
                http_respond_error(req, API_ERROR_NOT_FOUND, NULL, "no session '%.64s'", id);
        return s;
}

void api_session_files_begin(ApiContext *ac, HttpRequest *req, const char *id, const char *path) {
        _cleanup_close_ int ws = -EBADF;
        RequestError err;
        Upload *up;
        Session *s;
        int r;

        s = request_session_here(ac, req, id);
        if (!s)
                return;
        up = calloc(1, sizeof(Upload));
        if (!up) {
                http_respond_error(req, API_ERROR_INTERNAL, NULL, "out of memory");
                return;
        }
        *up = (Upload) { .ac = ac, .file = SESSION_FILE_UPLOAD_NULL };
        r = check_idle(s, &err);
        if (r >= 0)
                r = parse_path(path, false, &up->path, &err);
        if (r == 0)
                r = request_error(&err, -EINVAL, API_ERROR_INVALID_REQUEST, "path", "a file's path is needed");
        if (r >= 0)
                r = ws = open_workspace(s, &err);
        if (r >= 0) {
                r = session_file_upload_begin(ws, up->path, &up->file);
                if (r < 0)
                        (void) file_error(r, up->path, &err);
        }
        if (r < 0) {
                upload_free(up);
                goto refuse;
        }
        up->s = s;
        s->n_uploads++;
        http_request_stream_body(req, &(const HttpBodySink) {
                .write = upload_write,
                .free = upload_free,
                .userdata = up,
                .max = upload_max(ac, s),
        });
        return;
refuse:
        http_respond_error(req, err.error, err.field[0] ? err.field : NULL, "%s", err.message);
}

/* The body is in: the file goes into place. */
static void upload_finish(ApiContext *ac, HttpRequest *req, Upload *up, uint64_t len, int werr) {
        RequestError err;
        json_object *o;
        int r;

        if (http_request_too_large(req)) {
                http_respond_error(req, API_ERROR_TOO_LARGE, NULL,
                                   "'%s': the body is larger than MaxInputFileBytes=%" PRIu64
                                   " or the session's disk_mb=%" PRIu64, up->path,
                                   ac->ctx->config->max_input_file_bytes, up->s ? up->s->disk_mb : 0);
                return;
        }
        r = werr < 0 ? werr : session_file_upload_commit(&up->file);
        if (r < 0) {
                (void) file_error(r, up->path, &err);
                http_respond_error(req, err.error, err.field[0] ? err.field : NULL, "%s", err.message);
                return;
        }
        upload_release(up);
        o = json_object_new_object();
        json_object_object_add(o, "path", json_object_new_string(up->path));
        json_object_object_add(o, "size", json_object_new_uint64(len));
        http_respond_json(req, 201, o);
}

static void files_request(ApiContext *ac, HttpRequest *req, Session *s, const char *path) {
        const char *method = http_request_method(req);
        RequestError err;
        json_object *o = NULL;
        int r;

        if (streq(method, "GET")) {
                SessionFileGet g;
                const char *base;

                r = session_files_get(s, path, &g, &err);
                if (r < 0)
                        goto refuse;
                if (g.listing) {
                        http_respond_json(req, 200, g.listing);
                        return;
                }
                base = strrchr(path, '/');
                http_respond_fd(req, 200, g.mime_type, g.fd, g.size, base ? base + 1 : path);
                return;
        }
        if (streq(method, "PUT")) {
                const char *body;
                size_t len = 0;
                uint64_t streamed = 0;
                int werr = 0;
                Upload *up = http_request_streamed(req, &streamed, &werr);

                if (up) {
                        upload_finish(ac, req, up, streamed, werr);
                        return;
                }

                /* The HTTP layer buffers a body up to MaxRequestBytes= (and answers 413 above it). */
                if (http_request_too_large(req)) {
                        http_respond_error(req, API_ERROR_TOO_LARGE, NULL,
                                           "request body exceeds MaxRequestBytes=%" PRIu64,
                                           ac->ctx->config->max_request_bytes);
                        return;
                }
                body = http_request_body(req, &len);
                r = session_files_put(s, path, body, len, ac->ctx->config->max_input_file_bytes, &o, &err);
                if (r < 0)
                        goto refuse;
                http_respond_json(req, 201, o);
                return;
        }
        r = session_files_delete(s, path, &o, &err);
        if (r < 0)
                goto refuse;
        http_respond_json(req, 200, o);
        return;
refuse:
        http_respond_error(req, err.error, err.field[0] ? err.field : NULL, "%s", err.message);
}

void api_handle_session_files(ApiContext *ac, HttpRequest *req, const char *id, const char *path) {
        api_with_session(ac, req, id, path, files_request);
}

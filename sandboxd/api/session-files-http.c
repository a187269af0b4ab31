/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <sys/stat.h>

#include "delivery/session-files.h"
#include "model/mime.h"
#include "run/runner.h"
#include "run/session.h"
#include "session-files-http.h"
#include "submit.h"
#include "util.h"

Session *session_files_find(ApiContext *ac, const char *owner, bool admin, const char *id, RequestError *err) {
        Session *s = NULL;

        if (id_is_valid(id, REQUEST_ID_MAX)) {
                /* The caller's own session of that name, else id as a record id (session.h). */
                s = sessions_find(ac->sessions, owner, id);
                if (!s)
                        s = sessions_find_key(ac->sessions, id);
        }
        if (!s && id_is_valid(id, REQUEST_ID_MAX) && ac->ctx->shared_queue) {
                /* Several nodes: the caller's own session may live on another node (its workspace is
                 * that node's memory); say which. */
                StoreSession *x = NULL;

                if (session_held_elsewhere(ac, owner, id, &x) > 0) {
                        (void) request_error(err, -ENOENT, API_ERROR_NOT_FOUND, NULL,
                                             "session '%.64s' is held by node '%s' (its workspace is that node's): its "
                                             "state, files and deletion are answered there", id, x->node);
                        store_sessions_free(x, 1);
                        return NULL;
                }
        }
        if (!s || !(admin || streq_ptr(owner, s->owner))) {
                (void) request_error(err, -ENOENT, API_ERROR_NOT_FOUND, NULL, "no session '%.64s'", id);
                return NULL;
        }
        return s;
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

/* The session id names for req's caller, or NULL with the refusal answered (403, 404). */
static Session *request_session(ApiContext *ac, HttpRequest *req, const char *id) {
        char owner[HTTP_OWNER_MAX];
        RequestError err;
        bool admin = false;
        Session *s;

        if (http_request_owner(req, owner, sizeof(owner), &admin) < 0) {
                http_respond_error(req, API_ERROR_FORBIDDEN, NULL, "cannot identify the caller");
                return NULL;
        }
        s = session_files_find(ac, owner, admin, id, &err);
        if (!s)
                http_respond_error(req, err.error, err.field[0] ? err.field : NULL, "%s", err.message);
        return s;
}

void api_session_files_begin(ApiContext *ac, HttpRequest *req, const char *id, const char *path) {
        _cleanup_close_ int ws = -EBADF;
        RequestError err;
        Upload *up;
        Session *s;
        int r;

        s = request_session(ac, req, id);
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

void api_handle_session_files(ApiContext *ac, HttpRequest *req, const char *id, const char *path) {
        const char *method = http_request_method(req);
        RequestError err;
        json_object *o = NULL;
        Session *s;
        int r;

        s = request_session(ac, req, id);
        if (!s)
                return;
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

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api.h"
#include "delivery/artifacts.h"
#include "model/json-strict.h"
#include "log.h"
#include "mcp-http.h"
#include "model/mcp.h"
#include "run/job.h"
#include "run/session.h"
#include "session-files-http.h"
#include "store/store.h"
#include "submit.h"
#include "utf8.h"

/* How deep a message may nest (a run_code call: params.arguments.files[i].path, well within). */
#define MCP_JSON_DEPTH 16
/* The Host header kept for the links of a result: a host name or address and a port, nothing else. */
#define MCP_HOST_MAX 255

static void json_object_putp(json_object **o) {
        json_object_put(*o);
}

typedef struct McpCall {
        ApiContext *ac;
        HttpRequest *req;
        json_object *id;         /* the request's id, for the answer */
        char url_base[sizeof("http://") + MCP_HOST_MAX];
        FindLookup *find;        /* get_execution: the lookup in the store */
        RecordRender *render;    /* the record being read for the answer */
        SessionFind *session;    /* a file tool: the session's lookup */
        const char *file_tool;   /* ... its name (static) */
        json_object *file_args;  /* ... its arguments, held: the parsed ones point into them */
        McpFileArgs file;        /* ... parsed once (mcp_file_args()) */
        char file_buf[256];      /* ... and what they point into besides */
        bool suspended;          /* by this file, for find or render (not by a wait or a submission) */
} McpCall;

static McpCall *mcp_call_free(McpCall *c) {
        if (!c)
                return NULL;
        (void) find_lookup_cancel(c->find);
        (void) record_render_cancel(c->render);
        (void) session_find_cancel(c->session);
        mcp_file_args_done(&c->file);
        json_object_put(c->file_args);
        json_object_put(c->id);
        free(c);
        return NULL;
}

/* The caller went away while the store was asked: nothing to answer. */
static void on_store_gone(HttpRequest *req, void *userdata) {
        mcp_call_free(userdata);
}

static void mcp_call_suspend(McpCall *c) {
        if (c->suspended)
                return;
        c->suspended = true;
        http_request_suspend(c->req);
        http_request_set_gone_cb(c->req, on_store_gone, c);
}

static void mcp_call_resumed(McpCall *c) {
        if (c->suspended)
                http_request_set_gone_cb(c->req, NULL, NULL);
        c->suspended = false;
}

static void respond(HttpRequest *req, unsigned status, json_object *msg) {
        if (!msg) {
                http_respond_error(req, API_ERROR_INTERNAL, NULL, "out of memory");
                return;
        }
        http_respond_json(req, status, msg);
}

static void respond_result(HttpRequest *req, json_object *id, json_object *result) {
        if (!result) {
                respond(req, 200, mcp_error_response(id, MCP_INTERNAL_ERROR, "out of memory"));
                return;
        }
        respond(req, 200, mcp_response(id, result));
}

/* The links of a result are this server's URLs as the caller reached it: "http://" and its Host
 * header when that is a plain host[:port], else localhost (a unix socket's caller). */
static void url_base_set(McpCall *c, HttpRequest *req) {
        const char *host = http_request_header(req, "Host");
        size_t n = host ? strlen(host) : 0;

        if (n == 0 || n > MCP_HOST_MAX ||
            strspn(host, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-:[]") != n)
                host = "localhost";
        snprintf(c->url_base, sizeof(c->url_base), "http://%s", host);
}

/* read_file returns at most this much of a file inline (an image: MCP_IMAGE_MAX as in run_code);
 * GET /v1/sessions/{id}/files/{path} streams any size. */
#define MCP_READ_FILE_MAX MCP_IMAGE_MAX

static int read_all(int fd, uint64_t size, uint8_t **ret) {
        _cleanup_free_ uint8_t *buf = malloc(size ? size : 1);
        size_t got = 0;

        if (!buf)
                return -ENOMEM;
        while (got < size) {
                ssize_t k = pread(fd, buf + got, size - got, (off_t) got);

                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                if (k == 0)
                        return -EBADMSG;        /* shorter than its fstat(): changed under us */
                got += (size_t) k;
        }
        *ret = TAKE_PTR(buf);
        return 0;
}

/* An image artifact's bytes from the artifact store, for image content (at most MCP_IMAGE_MAX: a
 * short read of a local file, as GET of an artifact does in a stream). */
static int read_blob(void *userdata, const char *sha256, uint64_t size, uint8_t **ret, size_t *ret_len) {
        ApiContext *ac = userdata;
        _cleanup_close_ int fd = -EBADF;
        struct stat st;
        int r;

        if (size > MCP_IMAGE_MAX)
                return -EFBIG;
        fd = artifacts_store_open_blob(ac->ctx->artifacts_fd, sha256);
        if (fd < 0)
                return fd;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode) || (uint64_t) st.st_size != size)
                return -EBADMSG;
        r = read_all(fd, size, ret);
        if (r < 0)
                return r;
        *ret_len = (size_t) size;
        return 0;
}

static void respond_record(HttpRequest *req, ApiContext *ac, json_object *id, json_object *record,
                           const char *url_base) {
        json_object *result = mcp_execution_result(record, url_base, read_blob, ac);

        json_object_put(record);
        respond_result(req, id, result);
}

static void on_rendered(void *userdata, json_object *record, const RequestError *err) {
        McpCall *c = userdata;

        c->render = NULL;
        mcp_call_resumed(c);
        if (record)
                respond_record(c->req, c->ac, c->id, record, c->url_base);
        else
                respond_result(c->req, c->id, mcp_text_result(err->message, true));
        mcp_call_free(c);
}

static void render_wait(McpCall *c, int r, RecordRender *x) {
        if (r < 0) {
                respond(c->req, 200, mcp_error_response(c->id, MCP_INTERNAL_ERROR, "out of memory"));
                mcp_call_free(c);
        } else if (r == 0) {
                c->render = x;
                mcp_call_suspend(c);
        }
}

/* The execution's record as a tool result, or why it cannot be read (a text result, isError); then
 * c is freed (once the store has answered). */
static void respond_job(McpCall *c, Job *j) {
        RecordRender *x = NULL;

        render_wait(c, job_record_json_async(c->ac, j, on_rendered, c, &x), x);
}

/* The same of a stored record (taken). */
static void respond_stored(McpCall *c, StoreRecord *rec) {
        RecordRender *x = NULL;

        render_wait(c, stored_record_json_async(c->ac, rec, on_rendered, c, &x), x);
}

/* The caller went away: the run goes on (as POST /v1/executions?wait=true's), unanswered. */
static void on_request_gone(void *userdata) {
        mcp_call_free(userdata);
}

static void on_job_done(HttpRequest *req, Job *j, void *userdata) {
        McpCall *c = userdata;

        if (!job_is_final(j) && c->ac->ctx->stopping) {
                respond_result(c->req, c->id, mcp_text_result("sandboxd is stopping; the execution did not finish", true));
                mcp_call_free(c);
        } else
                respond_job(c, j);
}

static void wait_job(McpCall *c, Job *j) {
        /* The callback may answer (and free c) at once. */
        if (api_wait_job(c->req, j, on_job_done, on_request_gone, c) < 0) {
                respond(c->req, 200, mcp_error_response(c->id, MCP_INTERNAL_ERROR, "out of memory"));
                mcp_call_free(c);
        }
}

static void on_run_code_submitted(HttpRequest *req, int r, SubmitResult *res, const RequestError *err,
                                  void *userdata) {
        McpCall *c = userdata;

        if (r < 0) {
                char msg[sizeof(err->message) + 64];

                snprintf(msg, sizeof(msg), "request refused (%s): %s", api_error_code(err->error), err->message);
                respond_result(c->req, c->id, mcp_text_result(msg, true));
                mcp_call_free(c);
                return;
        }
        if (res->outcome == SUBMIT_EXISTING_RECORD) {
                respond_stored(c, res->record);
                return;
        }
        wait_job(c, res->job);
}

static void call_run_code(McpCall *c, json_object *args, const char *owner, bool admin) {
        _cleanup_(json_object_putp) json_object *request = NULL;
        char buf[256];
        const char *error = NULL, *text;
        int r;

        r = mcp_run_code_request(args, &request, buf, sizeof(buf), &error);
        if (r == -ENOMEM) {
                respond(c->req, 200, mcp_error_response(c->id, MCP_INTERNAL_ERROR, "out of memory"));
                mcp_call_free(c);
                return;
        }
        if (r < 0) {
                respond(c->req, 200, mcp_error_response(c->id, MCP_INVALID_PARAMS, error ?: "invalid arguments"));
                mcp_call_free(c);
                return;
        }
        text = json_object_to_json_string_ext(request, JSON_C_TO_STRING_PLAIN);
        if (!text) {
                respond(c->req, 200, mcp_error_response(c->id, MCP_INTERNAL_ERROR, "out of memory"));
                mcp_call_free(c);
                return;
        }
        /* Every check of POST /v1/executions, as the caller: a refusal is the model's to act on. */
        if (api_submit(c->ac, c->req, text, strlen(text), owner, admin, on_run_code_submitted, on_request_gone, c) < 0) {
                respond(c->req, 200, mcp_error_response(c->id, MCP_INTERNAL_ERROR, "out of memory"));
                mcp_call_free(c);
        }
}

static void on_execution_found(void *userdata, Job *j, StoreRecord *rec) {
        McpCall *c = userdata;

        c->find = NULL;
        mcp_call_resumed(c);
        if (!j && !rec) {
                respond_result(c->req, c->id, mcp_text_result("no such execution", true));
                mcp_call_free(c);
        } else if (!j)
                respond_stored(c, rec);
        else if (!job_is_final(j)) {
                /* Still queued or running: its status now, which is not a failure. */
                respond_result(c->req, c->id, mcp_pending_result(execution_json_base(c->ac, j->exec)));
                mcp_call_free(c);
        } else
                respond_job(c, j);
}

static void call_get_execution(McpCall *c, json_object *args, const char *owner, bool admin) {
        FindLookup *f = NULL;
        json_object *v = NULL;
        int r;

        if (!args || !json_object_object_get_ex(args, "execution_id", &v) || !json_object_is_type(v, json_type_string) ||
            json_object_get_string_len(v) == 0 || json_object_object_length(args) != 1) {
                respond(c->req, 200, mcp_error_response(c->id, MCP_INVALID_PARAMS,
                                                        "get_execution takes one argument, execution_id (a string)"));
                mcp_call_free(c);
                return;
        }
        /* As GET /v1/executions/{id}: another owner's execution is not found. Answered at once when
         * it is in memory, else from the store's answer. */
        r = find_execution_async(c->ac, owner, admin, json_object_get_string(v), on_execution_found, c, &f);
        if (r < 0) {
                respond(c->req, 200, mcp_error_response(c->id, MCP_INTERNAL_ERROR, "out of memory"));
                mcp_call_free(c);
        } else if (r == 0) {
                c->find = f;
                mcp_call_suspend(c);
        }
}

/* read_file, write_file, list_files: the session file API's functions as the caller, their refusals
 * (404, 400, 403, 409, 413) as isError results with the same message. s is the session found (NULL:
 * ferr says why). */
static void file_tool_run(McpCall *c, Session *s, const RequestError *ferr) {
        char msg[sizeof(((RequestError *) NULL)->message) + 64];
        const char *tool = c->file_tool;
        const McpFileArgs a = c->file;
        RequestError err;
        json_object *o = NULL;
        int r;

        if (!s) {
                err = *ferr;
                goto refused;
        }
        if (streq(tool, "write_file")) {
                r = session_files_put(s, a.path, a.data, a.len, c->ac->ctx->config->max_input_file_bytes, &o, &err);
                if (r < 0)
                        goto refused;
                json_object_put(o);
                snprintf(msg, sizeof(msg), "wrote %zu bytes to %s", a.len, a.path);
                respond_result(c->req, c->id, mcp_text_result(msg, false));
                return;
        }
        {
                SessionFileGet g = { .fd = -EBADF };
                _cleanup_free_ uint8_t *data = NULL;
                _cleanup_free_ char *uri = NULL;

                r = session_files_get(s, a.path ?: "", &g, &err);
                if (r < 0)
                        goto refused;
                if (g.listing) {
                        respond_result(c->req, c->id, mcp_listing_result(g.listing));
                        return;
                }
                if (streq(tool, "list_files")) {
                        safe_close(g.fd);
                        snprintf(msg, sizeof(msg), "'%.128s' is a file, not a directory: read it with read_file", a.path);
                        respond_result(c->req, c->id, mcp_text_result(msg, true));
                        return;
                }
                if (g.size > MCP_READ_FILE_MAX) {
                        safe_close(g.fd);
                        snprintf(msg, sizeof(msg), "'%.128s' is %" PRIu64 " bytes, more than read_file returns (%zu); "
                                 "GET /v1/sessions/{id}/files/{path} streams it", a.path, g.size, (size_t) MCP_READ_FILE_MAX);
                        respond_result(c->req, c->id, mcp_text_result(msg, true));
                        return;
                }
                r = read_all(g.fd, g.size, &data);
                safe_close(g.fd);
                if (r < 0) {
                        snprintf(msg, sizeof(msg), "cannot read '%.128s': %s", a.path, strerror(-r));
                        respond_result(c->req, c->id, mcp_text_result(msg, true));
                        return;
                }
                if (asprintf(&uri, "%s/v1/sessions/%s/files/%s", c->url_base, a.session_id, a.path) < 0)
                        uri = NULL;
                respond_result(c->req, c->id, uri ? mcp_file_result(uri, g.mime_type, data, g.size) : NULL);
                return;
        }
refused:
        snprintf(msg, sizeof(msg), "%s refused (%s): %s", tool, api_error_code(err.error), err.message);
        respond_result(c->req, c->id, mcp_text_result(msg, true));
}

static void on_file_session(void *userdata, Session *s, const RequestError *err) {
        McpCall *c = userdata;

        c->session = NULL;
        mcp_call_resumed(c);
        file_tool_run(c, s, err);
        mcp_call_free(c);
}

/* The session first, without waiting for the store (a session another node holds, session_find_async()):
 * then file_tool_run(). Takes c. */
static void call_file_tool(McpCall *c, const char *tool, json_object *args, const char *owner, bool admin) {
        const char *error = NULL;
        int r;

        c->file_tool = tool;
        c->file_args = json_object_get(args);
        r = mcp_file_args(tool, c->file_args, &c->file, c->file_buf, sizeof(c->file_buf), &error);
        if (r < 0) {
                respond(c->req, 200, r == -ENOMEM ? mcp_error_response(c->id, MCP_INTERNAL_ERROR, "out of memory")
                                                  : mcp_error_response(c->id, MCP_INVALID_PARAMS, error ?: "invalid arguments"));
                mcp_call_free(c);
                return;
        }
        r = session_find_async(c->ac, owner, admin, c->file.session_id, on_file_session, c, &c->session);
        if (r < 0) {
                respond(c->req, 200, mcp_error_response(c->id, MCP_INTERNAL_ERROR, "out of memory"));
                mcp_call_free(c);
        } else if (r == 0)
                mcp_call_suspend(c);
}

static void tools_call(McpCall *c, json_object *params, const char *owner, bool admin) {
        json_object *name = NULL, *args = NULL;
        const char *n;

        if (!params || !json_object_object_get_ex(params, "name", &name) || !json_object_is_type(name, json_type_string)) {
                respond(c->req, 200, mcp_error_response(c->id, MCP_INVALID_PARAMS, "tools/call needs params.name"));
                mcp_call_free(c);
                return;
        }
        if (json_object_object_get_ex(params, "arguments", &args) && args &&
            !json_object_is_type(args, json_type_object)) {
                respond(c->req, 200, mcp_error_response(c->id, MCP_INVALID_PARAMS, "params.arguments must be an object"));
                mcp_call_free(c);
                return;
        }
        n = json_object_get_string(name);
        if (streq(n, "run_code"))
                call_run_code(c, args, owner, admin);
        else if (streq(n, "get_execution"))
                call_get_execution(c, args, owner, admin);
        else if (streq(n, "read_file"))
                call_file_tool(c, "read_file", args, owner, admin);
        else if (streq(n, "write_file"))
                call_file_tool(c, "write_file", args, owner, admin);
        else if (streq(n, "list_files"))
                call_file_tool(c, "list_files", args, owner, admin);
        else if (streq(n, "list_languages")) {
                if (args && json_object_object_length(args) > 0)
                        respond(c->req, 200, mcp_error_response(c->id, MCP_INVALID_PARAMS, "list_languages takes no arguments"));
                else
                        respond_result(c->req, c->id, mcp_languages_result(api_languages_json(c->ac)));
                mcp_call_free(c);
        } else {
                /* The spec's answer to an unknown tool: a protocol error, not a tool result. */
                respond(c->req, 200, mcp_error_response(c->id, MCP_INVALID_PARAMS, "no such tool"));
                mcp_call_free(c);
        }
}

void api_handle_mcp(ApiContext *ac, HttpRequest *req) {
        _cleanup_(json_object_putp) json_object *msg = NULL;
        char owner[HTTP_OWNER_MAX];
        const char *body, *ct, *error = NULL;
        McpMessage m;
        JsonStrictError jerr;
        bool admin = false;
        size_t len = 0;
        McpCall *c;

        if (http_request_owner(req, owner, sizeof(owner), &admin) < 0) {
                http_respond_error(req, API_ERROR_FORBIDDEN, NULL, "cannot identify the caller");
                return;
        }
        if (http_request_too_large(req)) {
                http_respond_error(req, API_ERROR_TOO_LARGE, NULL, "request body exceeds MaxRequestBytes=%" PRIu64,
                                   ac->ctx->config->max_request_bytes);
                return;
        }
        ct = http_request_header(req, "Content-Type");
        if (!ct || !startswith(ct, "application/json")) {
                http_respond_error(req, API_ERROR_UNSUPPORTED_MEDIA_TYPE, NULL, "Content-Type must be application/json");
                return;
        }
        body = http_request_body(req, &len);
        if (!body || !utf8_is_valid(body, len) || json_strict_check(body, len, MCP_JSON_DEPTH, &jerr) < 0 ||
            !(msg = json_tokener_parse(body))) {
                respond(req, 400, mcp_error_response(NULL, MCP_PARSE_ERROR, "parse error: not one JSON value"));
                return;
        }
        switch (mcp_classify(msg, &m, &error)) {
        case MCP_KIND_NOTIFICATION:
        case MCP_KIND_RESPONSE:
                /* Accepted; nothing to answer (notifications/initialized, a cancellation, a reply). */
                http_respond_text(req, 202, "text/plain; charset=utf-8", strdup(""));
                return;
        case MCP_KIND_INVALID:
                respond(req, 400, mcp_error_response(NULL, MCP_INVALID_REQUEST, error ?: "invalid request"));
                return;
        case MCP_KIND_REQUEST:
                break;
        }

        if (streq(m.method, "initialize")) {
                respond_result(req, m.id, mcp_initialize_result(m.params, PACKAGE_VERSION));
                return;
        }
        if (streq(m.method, "ping")) {
                respond_result(req, m.id, json_object_new_object());
                return;
        }
        if (streq(m.method, "tools/list")) {
                respond_result(req, m.id, mcp_tools_list());
                return;
        }
        if (!streq(m.method, "tools/call")) {
                respond(req, 200, mcp_error_response(m.id, MCP_METHOD_NOT_FOUND, "method not found"));
                return;
        }
        c = calloc(1, sizeof(McpCall));
        if (!c) {
                http_respond_error(req, API_ERROR_INTERNAL, NULL, "out of memory");
                return;
        }
        c->ac = ac;
        c->req = req;
        c->id = json_object_get(m.id);
        url_base_set(c, req);
        tools_call(c, m.params, owner, admin);
}

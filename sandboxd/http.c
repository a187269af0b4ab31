/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <microhttpd.h>
#include <stdarg.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "http.h"
#include "log.h"

struct HttpRequest {
        Http *http;
        struct MHD_Connection *conn;
        char *method, *path;
        char *body;
        size_t body_len, body_allocated;
        bool too_large;
        bool handled;            /* the handler has been called */
        bool suspended;
        struct MHD_Response *pending;  /* answer waiting for the resumed connection */
        unsigned pending_status;
        void (*gone_cb)(HttpRequest *req, void *userdata);
        void *gone_userdata;
};

struct Http {
        sd_event *event;
        struct MHD_Daemon *daemon;
        sd_event_source *io, *timer, *defer;
        int listen_fd;
        char *socket_path;
        size_t max_body;
        http_handler_t handler;
        void *userdata;
        unsigned n_connections;
};

static void http_update(Http *h);

static void mhd_log(void *cls, const char *fmt, va_list ap) {
        char buf[512];

        vsnprintf(buf, sizeof(buf), fmt, ap);
        log_debug("libmicrohttpd: %s", buf);
}

static int on_io(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Http *h = userdata;

        (void) MHD_run(h->daemon);
        http_update(h);
        return 0;
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Http *h = userdata;

        (void) MHD_run(h->daemon);
        http_update(h);
        return 0;
}

static void http_update(Http *h) {
        MHD_UNSIGNED_LONG_LONG ms;

        if (MHD_get_timeout(h->daemon, &ms) == MHD_YES) {
                uint64_t now;

                if (ms == 0) {
                        /* More to do right away (data already read, edge-triggered epoll). */
                        (void) sd_event_source_set_enabled(h->defer, SD_EVENT_ONESHOT);
                        return;
                }
                (void) sd_event_now(h->event, CLOCK_MONOTONIC, &now);
                (void) sd_event_source_set_time(h->timer, now + (uint64_t) ms * 1000ULL);
                (void) sd_event_source_set_enabled(h->timer, SD_EVENT_ONESHOT);
        } else
                (void) sd_event_source_set_enabled(h->timer, SD_EVENT_OFF);
}

static int on_defer(sd_event_source *s, void *userdata) {
        Http *h = userdata;

        (void) sd_event_source_set_enabled(s, SD_EVENT_OFF);
        (void) MHD_run(h->daemon);
        http_update(h);
        return 0;
}

static void request_free(HttpRequest *r) {
        if (!r)
                return;
        if (r->gone_cb)
                r->gone_cb(r, r->gone_userdata);
        if (r->pending)
                MHD_destroy_response(r->pending);
        free(r->method);
        free(r->path);
        free(r->body);
        free(r);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls, enum MHD_RequestTerminationCode toe) {
        request_free(*con_cls);
        *con_cls = NULL;
}

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode code) {
        Http *h = cls;

        if (code == MHD_CONNECTION_NOTIFY_STARTED)
                h->n_connections++;
        else if (h->n_connections > 0)
                h->n_connections--;
}

static enum MHD_Result queue_pending(HttpRequest *r) {
        struct MHD_Response *resp = TAKE_PTR(r->pending);
        enum MHD_Result ret;

        ret = MHD_queue_response(r->conn, r->pending_status, resp);
        MHD_destroy_response(resp);
        return ret;
}

static enum MHD_Result on_access(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                                 const char *version, const char *upload_data, size_t *upload_data_size,
                                 void **con_cls) {
        Http *h = cls;
        HttpRequest *r = *con_cls;

        if (!r) {
                const char *cl;

                r = calloc(1, sizeof(HttpRequest));
                if (!r)
                        return MHD_NO;
                r->http = h;
                r->conn = conn;
                r->method = strdup(method);
                r->path = strdup(url);
                if (!r->method || !r->path) {
                        request_free(r);
                        return MHD_NO;
                }
                *con_cls = r;

                /* An announced oversized body is never buffered. Up to 16 times the cap it is read and
                 * dropped, so that a client which sends before it listens still gets the 413; beyond
                 * that (or a bogus length) the answer comes at once and the connection is closed. A
                 * client that sends "Expect: 100-continue" gets the 413 without sending anything. */
                cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
                if (cl) {
                        uint64_t n;
                        int k = safe_atou64(cl, &n);

                        if (k < 0 || n > h->max_body)
                                r->too_large = true;
                        if (k < 0 || n / 16 > h->max_body ||
                            MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_EXPECT)) {
                                if (r->too_large) {
                                        r->handled = true;
                                        h->handler(r, h->userdata);
                                        return r->pending ? queue_pending(r) : MHD_YES;
                                }
                        }
                }
                return MHD_YES;
        }

        if (r->pending)
                return queue_pending(r);

        if (*upload_data_size > 0) {
                size_t n = *upload_data_size;

                *upload_data_size = 0;
                if (r->too_large)
                        return MHD_YES;         /* discard the rest */
                if (r->body_len + n > h->max_body) {
                        r->too_large = true;
                        r->body = mfree(r->body);
                        r->body_len = r->body_allocated = 0;
                        return MHD_YES;
                }
                if (r->body_len + n + 1 > r->body_allocated) {
                        size_t na = MAX(r->body_allocated * 2, r->body_len + n + 1);
                        char *nb;
                        na = MIN(na, h->max_body + 1);
                        nb = realloc(r->body, na);
                        if (!nb)
                                return MHD_NO;
                        r->body = nb;
                        r->body_allocated = na;
                }
                memcpy(r->body + r->body_len, upload_data, n);
                r->body_len += n;
                r->body[r->body_len] = 0;
                return MHD_YES;
        }

        if (r->handled)
                return MHD_YES;         /* suspended and resumed without an answer: keep waiting */
        r->handled = true;
        h->handler(r, h->userdata);
        if (r->pending)
                return queue_pending(r);
        return MHD_YES;
}

const char *http_request_method(HttpRequest *req) {
        return req->method;
}

const char *http_request_path(HttpRequest *req) {
        return req->path;
}

const char *http_request_query(HttpRequest *req, const char *key) {
        return MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND, key);
}

const char *http_request_header(HttpRequest *req, const char *key) {
        return MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, key);
}

const char *http_request_body(HttpRequest *req, size_t *ret_len) {
        if (req->too_large)
                return NULL;
        *ret_len = req->body_len;
        return req->body ?: "";
}

bool http_request_too_large(HttpRequest *req) {
        return req->too_large;
}

int http_request_peer_uid(HttpRequest *req, uid_t *ret) {
        const union MHD_ConnectionInfo *info;
        struct ucred cred;
        socklen_t l = sizeof(cred);

        info = MHD_get_connection_info(req->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (!info)
                return -EBADF;
        if (getsockopt(info->connect_fd, SOL_SOCKET, SO_PEERCRED, &cred, &l) < 0)
                return -errno;
        *ret = cred.uid;
        return 0;
}

void http_respond_json(HttpRequest *req, unsigned status, json_object *o) {
        const char *text;
        size_t len;
        char *copy;
        struct MHD_Response *resp;

        text = json_object_to_json_string_length(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
        copy = malloc(len + 1);
        if (copy) {
                memcpy(copy, text, len);
                copy[len] = '\n';
                len++;
        }
        json_object_put(o);
        if (!copy) {
                log_oom();
                return;
        }
        resp = MHD_create_response_from_buffer(len, copy, MHD_RESPMEM_MUST_FREE);
        if (!resp) {
                free(copy);
                return;
        }
        (void) MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
        if (req->pending)
                MHD_destroy_response(req->pending);
        req->pending = resp;
        req->pending_status = status;

        if (req->suspended) {
                req->suspended = false;
                MHD_resume_connection(req->conn);
                (void) sd_event_source_set_enabled(req->http->defer, SD_EVENT_ONESHOT);
        }
}

void http_respond_error(HttpRequest *req, unsigned status, const char *code, const char *field, const char *fmt, ...) {
        json_object *o = json_object_new_object(), *e = json_object_new_object();
        char msg[512];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        json_object_object_add(e, "code", json_object_new_string(code));
        json_object_object_add(e, "message", json_object_new_string(msg));
        json_object_object_add(e, "field", isempty(field) ? NULL : json_object_new_string(field));
        json_object_object_add(o, "error", e);
        http_respond_json(req, status, o);
}

void http_request_suspend(HttpRequest *req) {
        if (req->suspended || req->pending)
                return;
        req->suspended = true;
        MHD_suspend_connection(req->conn);
}

void http_request_set_gone_cb(HttpRequest *req, void (*cb)(HttpRequest *req, void *userdata), void *userdata) {
        req->gone_cb = cb;
        req->gone_userdata = userdata;
}

unsigned http_connections(Http *h) {
        return h->n_connections;
}

static int listen_unix(const char *path, mode_t mode, gid_t gid) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        _cleanup_close_ int fd = -EBADF;

        if (strlen(path) >= sizeof(sa.sun_path))
                return -ENAMETOOLONG;
        strcpy(sa.sun_path, path);

        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return -errno;
        (void) unlink(path);
        if (bind(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0)
                return -errno;
        if (chmod(path, mode) < 0)
                return -errno;
        if (gid != (gid_t) -1 && chown(path, 0, gid) < 0)
                return -errno;
        if (listen(fd, SOMAXCONN) < 0)
                return -errno;
        return TAKE_FD(fd);
}

int http_new(sd_event *event, const HttpSettings *s, http_handler_t handler, void *userdata, Http **ret) {
        const union MHD_DaemonInfo *info;
        Http *h;
        int r;

        h = calloc(1, sizeof(Http));
        if (!h)
                return -ENOMEM;
        h->event = sd_event_ref(event);
        h->handler = handler;
        h->userdata = userdata;
        h->max_body = s->max_body;
        h->listen_fd = -EBADF;
        h->socket_path = strdup(s->socket_path);
        if (!h->socket_path) {
                http_free(h);
                return -ENOMEM;
        }

        r = listen_unix(s->socket_path, s->socket_mode, s->socket_gid);
        if (r < 0) {
                http_free(h);
                return log_error_errno(r, "Failed to listen on '%s': %m", s->socket_path);
        }
        h->listen_fd = r;

        h->daemon = MHD_start_daemon(MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG,
                                     0, NULL, NULL, on_access, h,
                                     MHD_OPTION_LISTEN_SOCKET, h->listen_fd,
                                     MHD_OPTION_CONNECTION_LIMIT, s->max_connections,
                                     MHD_OPTION_CONNECTION_TIMEOUT, (unsigned) 120,
                                     MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
                                     MHD_OPTION_NOTIFY_CONNECTION, on_connection, h,
                                     MHD_OPTION_EXTERNAL_LOGGER, mhd_log, h,
                                     MHD_OPTION_END);
        if (!h->daemon) {
                http_free(h);
                return log_error_errno(EIO, "Failed to start libmicrohttpd.");
        }

        info = MHD_get_daemon_info(h->daemon, MHD_DAEMON_INFO_EPOLL_FD);
        if (!info) {
                http_free(h);
                return log_error_errno(EIO, "libmicrohttpd has no epoll fd.");
        }
        r = sd_event_add_io(event, &h->io, info->epoll_fd, EPOLLIN, on_io, h);
        if (r >= 0)
                /* Accuracy 1 µs: 0 would mean sd-event's default of 250 ms, and MHD's timeouts
                 * are often "call me again now". */
                r = sd_event_add_time(event, &h->timer, CLOCK_MONOTONIC, UINT64_MAX, 1, on_timer, h);
        if (r >= 0)
                r = sd_event_add_defer(event, &h->defer, on_defer, h);
        if (r >= 0)
                r = sd_event_source_set_enabled(h->defer, SD_EVENT_OFF);
        if (r < 0) {
                http_free(h);
                return log_error_errno(r, "Failed to add HTTP event sources: %m");
        }
        http_update(h);
        *ret = h;
        return 0;
}

Http *http_free(Http *h) {
        if (!h)
                return NULL;
        sd_event_source_disable_unref(h->io);
        sd_event_source_disable_unref(h->timer);
        sd_event_source_disable_unref(h->defer);
        if (h->daemon) {
                /* Let resumed connections be processed before the daemon goes away. */
                (void) MHD_run(h->daemon);
                MHD_stop_daemon(h->daemon);
        }
        safe_close(h->listen_fd);
        if (h->socket_path)
                (void) unlink(h->socket_path);
        free(h->socket_path);
        sd_event_unref(h->event);
        free(h);
        return NULL;
}

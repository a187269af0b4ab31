/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>

#include "http-conn.h"
#include "http.h"
#include "log.h"
#include "model/conf.h"
#include "model/signed-url.h"
#include "strv.h"
#include "time-util.h"

/* What a connection waits for, and so which deadline runs (absolute: data trickling in does not
 * extend it, unlike MHD's idle timeout). */
typedef enum ConnPhase {
        CONN_HEADERS,            /* request line and headers: from the connection's start, or the last answer */
        CONN_BODY,               /* the body: from the end of the headers */
        CONN_HANDLED,            /* the handler has it (answering, suspended, sending): no deadline */
} ConnPhase;

typedef struct HttpListener HttpListener;

/* One per MHD connection, from MHD_CONNECTION_NOTIFY_STARTED to _CLOSED (its socket context). */
typedef struct HttpConn {
        HttpListener *listener;
        int fd;                  /* MHD's: never closed by us */
        ConnPhase phase;
        uint64_t deadline;       /* CLOCK_MONOTONIC µs; UINT64_MAX: none */
        bool counted;            /* holds a place in Http.counts (key) */
        bool nonroot;            /* unix socket, uid other than 0: counted in Http.n_nonroot too */
        bool cut;                /* late or over a limit: shut down, nothing more is served */
        bool linger;             /* answered with input left unread: drain it at close */
        uint8_t key[CONN_KEY_SIZE];
        struct HttpConn *prev, *next;
} HttpConn;

/* One listening socket and the MHD daemon that serves it. The unix socket and every TCP listener
 * are the same thing; only "tcp" (authenticate every request by API key) differs. */
struct HttpListener {
        Http *http;
        struct MHD_Daemon *daemon;
        sd_event_source *io, *timer, *defer;
        sd_event_source *deadline_timer;
        uint64_t deadline_armed; /* when deadline_timer fires; UINT64_MAX: off */
        HttpConn *conns;
        bool tcp;
        bool open;               /* TCP without keys (HttpSettings.open_listen): open_owner's, open_route()'s only */
        char *name;              /* socket path or address, for logs */
        unsigned n_connections;
};

struct HttpRequest {
        Http *http;
        HttpListener *listener;
        struct MHD_Connection *conn;
        char *method, *path;
        char *body;
        size_t body_len, body_allocated;
        bool too_large;
        /* The body as a stream (http_request_stream_body()): sink.write() has had streamed_len bytes,
         * stream_error is its first error. */
        bool streamed;
        HttpBodySink sink;
        uint64_t streamed_len;
        int stream_error;
        bool handled;            /* the handler has been called */
        bool suspended;
        struct MHD_Response *pending;  /* answer waiting for the resumed connection */
        unsigned pending_status;
        void (*gone_cb)(HttpRequest *req, void *userdata);
        void *gone_userdata;
        /* TCP: the key the request was admitted with (a copy: the table may be reloaded while a
         * request is suspended). */
        char key_name[AUTH_NAME_MAX + 1];
        bool key_admin;
};

struct Http {
        sd_event *event;
        HttpListener *listeners[1 + 1 + HTTP_TCP_MAX]; /* [0] the unix socket, then the open one, the keyed ones */
        size_t n_listeners;
        char *socket_path;
        size_t max_body;
        unsigned max_connections;
        unsigned n_tcp_connections;                  /* over all TCP listeners */
        uint64_t header_timeout_usec, body_timeout_usec;
        unsigned max_per_address, max_per_user;
        unsigned max_nonroot;                        /* unix socket: all uids but root together */
        unsigned n_nonroot;
        ConnTable counts;
        LingerSet lingering;
        uint64_t linger_bytes;
        bool stopping;                               /* http_free(): no new lingering */
        AuthTable *auth;
        bool (*public_route)(const char *method, const char *path);
        char *open_owner;
        bool (*open_route)(const char *method, const char *path);
        void (*begin)(HttpRequest *req, void *userdata);
        http_handler_t handler;
        void *userdata;
};

static void listener_update(HttpListener *l);

/* libmicrohttpd's own format: checked as one (so -Wformat-nonliteral does not flag the vsnprintf). */
_printf_(2, 0) static void mhd_log(void *cls, const char *fmt, va_list ap) {
        char buf[512];

        vsnprintf(buf, sizeof(buf), fmt, ap);
        log_debug("libmicrohttpd: %s", buf);
}

static int on_io(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        HttpListener *l = userdata;

        (void) MHD_run(l->daemon);
        listener_update(l);
        return 0;
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        HttpListener *l = userdata;

        (void) MHD_run(l->daemon);
        listener_update(l);
        return 0;
}

static void listener_update(HttpListener *l) {
        MHD_UNSIGNED_LONG_LONG ms;

        if (MHD_get_timeout(l->daemon, &ms) == MHD_YES) {
                uint64_t now;

                if (ms == 0) {
                        /* More to do right away (data already read, edge-triggered epoll). */
                        (void) sd_event_source_set_enabled(l->defer, SD_EVENT_ONESHOT);
                        return;
                }
                (void) sd_event_now(l->http->event, CLOCK_MONOTONIC, &now);
                (void) sd_event_source_set_time(l->timer, now + (uint64_t) ms * USEC_PER_MSEC);
                (void) sd_event_source_set_enabled(l->timer, SD_EVENT_ONESHOT);
        } else
                (void) sd_event_source_set_enabled(l->timer, SD_EVENT_OFF);
}

static int on_defer(sd_event_source *s, void *userdata) {
        HttpListener *l = userdata;

        (void) sd_event_source_set_enabled(s, SD_EVENT_OFF);
        (void) MHD_run(l->daemon);
        listener_update(l);
        return 0;
}

static void request_free(HttpRequest *r) {
        if (!r)
                return;
        if (r->gone_cb)
                r->gone_cb(r, r->gone_userdata);
        if (r->pending)
                MHD_destroy_response(r->pending);
        if (r->streamed && r->sink.free)
                r->sink.free(r->sink.userdata);
        free(r->method);
        free(r->path);
        free(r->body);
        free(r);
}

/* {"error": {"code":..., "message":..., "field":...}}, or NULL without memory. */
static json_object *error_json(ApiError error, const char *field, const char *fmt, ...) _printf_(3, 4);
static json_object *error_json(ApiError error, const char *field, const char *fmt, ...) {
        json_object *o = json_object_new_object(), *e = json_object_new_object();
        char msg[512];
        va_list ap;

        if (!o || !e) {
                json_object_put(o);
                json_object_put(e);
                return NULL;
        }
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        json_object_object_add(e, "code", json_object_new_string(api_error_code(error)));
        json_object_object_add(e, "message", json_object_new_string(msg));
        json_object_object_add(e, "field", isempty(field) ? NULL : json_object_new_string(field));
        json_object_object_add(o, "error", e);
        return o;
}

static HttpConn *conn_of(struct MHD_Connection *conn) {
        const union MHD_ConnectionInfo *info = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

        return info ? info->socket_context : NULL;
}

/* An answer written straight to the socket, past MHD: for what MHD cannot answer (a connection it
 * is not asked about, or a request whose body is still coming: libmicrohttpd 0.9.75 queues answers
 * only before the body or after all of it). The socket is non-blocking and nothing of this request
 * was sent yet, so these few hundred bytes go in at once; should the send buffer still be full
 * with an earlier answer the client does not read, this one is cut short: the connection is closed
 * either way. */
static void conn_write_raw(int fd, unsigned status, const char *reason, const char *json) {
        char buf[1024];
        int n;

        if (json)
                n = snprintf(buf, sizeof(buf),
                             "HTTP/1.1 %u %s\r\nConnection: close\r\nContent-Type: application/json\r\n"
                             "Content-Length: %zu\r\n\r\n%s",
                             status, reason, strlen(json), json);
        else
                n = snprintf(buf, sizeof(buf), "HTTP/1.1 %u %s\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
                             status, reason);
        if (n > 0 && (size_t) n < sizeof(buf))
                (void) send(fd, buf, (size_t) n, MSG_NOSIGNAL | MSG_DONTWAIT);
}

static void deadline_arm(HttpListener *l, uint64_t when) {
        l->deadline_armed = when;
        if (when == UINT64_MAX) {
                (void) sd_event_source_set_enabled(l->deadline_timer, SD_EVENT_OFF);
                return;
        }
        (void) sd_event_source_set_time(l->deadline_timer, when);
        (void) sd_event_source_set_enabled(l->deadline_timer, SD_EVENT_ONESHOT);
}

static void conn_set_phase(HttpConn *c, ConnPhase phase) {
        Http *h = c->listener->http;
        uint64_t timeout = phase == CONN_HEADERS ? h->header_timeout_usec :
                           phase == CONN_BODY ? h->body_timeout_usec : 0, now;

        c->phase = phase;
        c->deadline = UINT64_MAX;
        if (timeout == 0 || c->cut || h->stopping)
                return;
        if (sd_event_now(h->event, CLOCK_MONOTONIC, &now) < 0)
                now = 0;
        c->deadline = now + timeout;
        /* The timer fires at the earliest deadline and finds the next one then: only an earlier
         * deadline than the armed one needs it moved. */
        if (c->deadline < c->listener->deadline_armed)
                deadline_arm(c->listener, c->deadline);
}

/* Close a connection at once: MHD finds it shut on its next run and reaps it (reading EOF), and
 * on_access() serves nothing more of it meanwhile, not even a request already buffered. */
static void conn_cut(HttpConn *c) {
        c->cut = true;
        c->linger = false;
        c->deadline = UINT64_MAX;
        (void) shutdown(c->fd, SHUT_RDWR);
}

static int on_deadline(sd_event_source *s, uint64_t usec, void *userdata) {
        HttpListener *l = userdata;
        uint64_t next = UINT64_MAX;
        bool any = false;

        l->deadline_armed = UINT64_MAX;
        for (HttpConn *c = l->conns; c; c = c->next) {
                if (c->cut || c->deadline == UINT64_MAX)
                        continue;
                if (c->deadline > usec) {
                        next = MIN(next, c->deadline);
                        continue;
                }
                /* Debug only: whoever connects (no key needed on TCP) must not fill the journal. */
                log_debug("%s: closing a connection whose request %s did not arrive in time.", l->name,
                          c->phase == CONN_BODY ? "body" : "headers");
                /* A request exists once its headers are in: tell its client why (best effort). */
                if (c->phase == CONN_BODY)
                        conn_write_raw(c->fd, 408, "Request Timeout", NULL);
                conn_cut(c);
                any = true;
        }
        if (next < l->deadline_armed)
                deadline_arm(l, next);
        if (any) {
                (void) MHD_run(l->daemon);
                listener_update(l);
        }
        return 0;
}

/* The per-address (TCP) and per-uid (unix socket) limits, at the connection's start. TCP
 * connections over the limit were already refused at accept (on_accept_tcp()): here they are only
 * counted. On the unix socket: a uid other than root holds at most max_per_user connections, and
 * all of them together leave the last HTTP_ROOT_RESERVE of MaxConnections= (at most half) to root,
 * for whom MHD's own limit is MaxConnections=. Over a limit: one line of answer, then closed. */
static void conn_admit(HttpConn *c, struct MHD_Connection *conn) {
        HttpListener *l = c->listener;
        Http *h = l->http;
        struct ucred cred;
        socklen_t sl = sizeof(cred);

        if (l->tcp) {
                const union MHD_ConnectionInfo *info = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);

                /* Uncounted would be unlimited: not served at all then. */
                if (!info || !conn_key_address(info->client_addr, c->key) || conn_table_add(&h->counts, c->key) < 0) {
                        conn_cut(c);
                        return;
                }
                c->counted = true;
                return;
        }

        if (getsockopt(c->fd, SOL_SOCKET, SO_PEERCRED, &cred, &sl) < 0) {
                log_debug_errno(errno, "%s: cannot read the peer's credentials, closing: %m", l->name);
                conn_cut(c);
                return;
        }
        if (cred.uid == 0)
                return;
        conn_key_uid(cred.uid, c->key);
        if (h->max_per_user > 0 && conn_table_get(&h->counts, c->key) >= h->max_per_user) {
                log_debug("%s: uid %u holds %u connections already (MaxConnectionsPerUser=), closing.",
                          l->name, (unsigned) cred.uid, h->max_per_user);
                conn_write_raw(c->fd, 429, "Too Many Requests", NULL);
                conn_cut(c);
                return;
        }
        if (h->n_nonroot >= h->max_nonroot) {
                log_debug("%s: the connections not reserved for root are taken, closing uid %u's.",
                          l->name, (unsigned) cred.uid);
                conn_write_raw(c->fd, 503, "Service Unavailable", NULL);
                conn_cut(c);
                return;
        }
        if (conn_table_add(&h->counts, c->key) < 0) {
                conn_cut(c);
                return;
        }
        c->counted = c->nonroot = true;
        h->n_nonroot++;
}

/* Whether a request has a body (announced by length or by Transfer-Encoding). */
static bool request_has_body(struct MHD_Connection *conn) {
        const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        uint64_t n;

        if (MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING))
                return true;
        return cl && (safe_atou64(cl, &n) < 0 || n > 0);
}

/* The handler has the request: no deadline any more (a long poll lasts as long as it lasts). An
 * answer queued before the body was read (early) leaves input behind, and MHD closes the connection
 * after it (it does not read on past a refused body): the close lingers. */
static void request_hand_over(HttpRequest *r, bool early) {
        HttpConn *c = conn_of(r->conn);

        r->handled = true;
        if (!c)
                return;
        conn_set_phase(c, CONN_HANDLED);
        if (early && request_has_body(r->conn))
                c->linger = true;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls, enum MHD_RequestTerminationCode toe) {
        HttpConn *c = conn_of(conn);

        request_free(*con_cls);
        *con_cls = NULL;
        /* Keep-alive: the next request's headers are due from the end of this one. */
        if (c)
                conn_set_phase(c, CONN_HEADERS);
}

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode code) {
        HttpListener *l = cls;
        Http *h = l->http;
        HttpConn *c;

        if (code == MHD_CONNECTION_NOTIFY_STARTED) {
                const union MHD_ConnectionInfo *info = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);

                l->n_connections++;
                if (l->tcp)
                        h->n_tcp_connections++;

                if (!info)
                        return;
                c = calloc(1, sizeof(HttpConn));
                if (!c) {
                        /* Untracked means unlimited: not served at all then. */
                        (void) shutdown(info->connect_fd, SHUT_RDWR);
                        return;
                }
                c->listener = l;
                c->fd = info->connect_fd;
                c->next = l->conns;
                if (c->next)
                        c->next->prev = c;
                l->conns = c;
                *socket_context = c;
                conn_admit(c, conn);
                conn_set_phase(c, CONN_HEADERS);
                return;
        }

        if (l->n_connections > 0)
                l->n_connections--;
        if (l->tcp && h->n_tcp_connections > 0)
                h->n_tcp_connections--;

        c = *socket_context;
        if (!c)
                return;
        *socket_context = NULL;
        if (c->prev)
                c->prev->next = c->next;
        else
                l->conns = c->next;
        if (c->next)
                c->next->prev = c->prev;
        if (c->counted)
                conn_table_remove(&h->counts, c->key);
        if (c->nonroot && h->n_nonroot > 0)
                h->n_nonroot--;
        /* MHD closes its fd right after this: a dup keeps the socket for the lingering close. */
        if (c->linger && !c->cut && !h->stopping)
                linger_start(&h->lingering, c->fd, h->linger_bytes, HTTP_LINGER_SEC * USEC_PER_SEC);
        free(c);
}

/* TCP clients share one budget of MaxConnections over all TCP listeners (each MHD daemon only
 * knows its own count), and the unix socket keeps its own: a flood from the network cannot lock the
 * local administrator out. One address (an IPv6 /64) holds at most MaxConnectionsPerAddress= of
 * them, over all TCP listeners too (MHD_OPTION_PER_IP_CONNECTION_LIMIT would count per listener).
 * Refused here, the connection is closed at once, without an answer. */
static enum MHD_Result on_accept_tcp(void *cls, const struct sockaddr *addr, socklen_t addrlen) {
        HttpListener *l = cls;
        Http *h = l->http;
        uint8_t key[CONN_KEY_SIZE];

        if (h->n_tcp_connections >= h->max_connections)
                return MHD_NO;
        if (h->max_per_address > 0 && conn_key_address(addr, key) &&
            conn_table_get(&h->counts, key) >= h->max_per_address) {
                /* Debug only: no key is needed to connect. */
                log_debug("%s: an address holds %u connections already (MaxConnectionsPerAddress=), refusing.",
                          l->name, h->max_per_address);
                return MHD_NO;
        }
        return MHD_YES;
}

/* Before anything else of a TCP request is looked at (body, size, route): the key. The answer does
 * not say whether a key was missing, malformed, unknown or too long. */
static bool request_authenticate(HttpRequest *r) {
        const char *token, *name = NULL;
        bool admin = false;
        int k;

        token = auth_bearer_token(MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION));
        if (!token)
                return false;
        k = auth_check(r->http->auth, token, &name, &admin);
        if (k == -EKEYREJECTED) {
                /* Only the holder of a key in the file gets here: worth a warning. */
                log_warning("%s: refusing API key '%s': too short to carry %d bits (at least 22 "
                            "characters; 32 if only hex digits, 39 if only decimal digits); replace it with one from 'sandboxctl key new %s'.",
                            r->listener->name, name, AUTH_KEY_BITS_MIN, name);
                return false;
        }
        if (k < 0) {
                /* Debug only: unauthenticated clients must not be able to fill the journal. */
                log_debug("%s: request refused, no valid API key: %s", r->listener->name, strerror(-k));
                return false;
        }
        /* name is at most AUTH_NAME_MAX: always fits. */
        snprintf(r->key_name, sizeof(r->key_name), "%s", name);
        r->key_admin = admin;
        return true;
}

static void respond_unauthorized(HttpRequest *r) {
        http_respond_error(r, API_ERROR_UNAUTHORIZED, NULL, "a valid API key is required (Authorization: Bearer <key>)");
        if (r->pending)
                (void) MHD_add_response_header(r->pending, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
}

static enum MHD_Result queue_pending(HttpRequest *r) {
        struct MHD_Response *resp = TAKE_PTR(r->pending);
        enum MHD_Result ret;

        ret = MHD_queue_response(r->conn, r->pending_status, resp);
        MHD_destroy_response(resp);
        return ret;
}

/* A body over the cap found while it arrives (chunked: no length was announced): MHD cannot queue
 * an answer in mid-body, so the 413 is written to the socket directly and the connection closed
 * (MHD_NO); the close lingers, so that the client reads it. Nothing of the body is kept. */
static enum MHD_Result request_refuse_body(HttpRequest *r) {
        HttpConn *c = conn_of(r->conn);
        json_object *o;

        r->too_large = r->handled = true;
        r->body = mfree(r->body);
        r->body_len = r->body_allocated = 0;
        if (!c)
                return MHD_NO;
        conn_set_phase(c, CONN_HANDLED);
        o = r->streamed ? error_json(API_ERROR_TOO_LARGE, NULL, "request body exceeds its limit of %" PRIu64 " bytes",
                                     r->sink.max)
                        : error_json(API_ERROR_TOO_LARGE, NULL, "request body exceeds MaxRequestBytes=%zu",
                                     r->http->max_body);
        if (o) {
                conn_write_raw(c->fd, api_error_http_status(API_ERROR_TOO_LARGE), "Content Too Large",
                               json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
                json_object_put(o);
        }
        c->linger = true;
        return MHD_NO;
}

HttpBodyPlan http_body_plan(const char *content_length, size_t max_body) {
        uint64_t n;

        if (!content_length)
                return HTTP_BODY_READ;
        if (safe_atou64(content_length, &n) >= 0 && n <= max_body)
                return HTTP_BODY_READ;
        return HTTP_BODY_REFUSE;
}

/* The URL's and the query's %XX decoding (MHD_OPTION_UNESCAPE_CALLBACK), as MHD's own but for %00:
 * a NUL would cut the decoded string where it stands, so that "a%00b" named "a" to every route (a
 * session file PUT to "x%00.png" wrote "x"). It decodes to DEL (0x7F) instead, a byte that no id,
 * path or key of the API accepts: the request is refused where its field is checked, never taken
 * for a shorter one. */
static size_t on_unescape(void *cls, struct MHD_Connection *conn, char *s) {
        char *w = s;

        for (const char *r = s; *r; ) {
                int hi, lo;

                if (r[0] == '%' && (hi = unhexchar(r[1])) >= 0 && (lo = unhexchar(r[2])) >= 0) {
                        char ch = (char) (hi << 4 | lo);

                        *w++ = ch ? ch : 0x7f;
                        r += 3;
                } else
                        *w++ = *r++;
        }
        *w = 0;
        return (size_t) (w - s);
}

static enum MHD_Result on_access(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                                 const char *version, const char *upload_data, size_t *upload_data_size,
                                 void **con_cls) {
        HttpListener *l = cls;
        Http *h = l->http;
        HttpRequest *r = *con_cls;
        HttpConn *c = conn_of(conn);

        /* Cut (late, or over a limit): not even a request already buffered is served. */
        if (c && c->cut)
                return MHD_NO;

        if (!r) {
                const char *cl;

                r = calloc(1, sizeof(HttpRequest));
                if (!r)
                        return MHD_NO;
                r->http = h;
                r->listener = l;
                r->conn = conn;
                r->method = strdup(method);
                r->path = strdup(url);
                if (!r->method || !r->path) {
                        request_free(r);
                        return MHD_NO;
                }
                *con_cls = r;
                /* The headers are in: the body's deadline runs from here. */
                if (c)
                        conn_set_phase(c, CONN_BODY);

                /* The 401 comes before the body is read, as the early 413 below: an unauthenticated
                 * client gets nothing buffered. */
                /* The open listener serves its routes to anyone who reaches it, as its one owner, and
                 * nothing else: the rest is not found, before a byte of the body is read. */
                if (l->open && !(h->open_route && h->open_route(r->method, r->path))) {
                        request_hand_over(r, true);
                        http_respond_error(r, API_ERROR_NOT_FOUND, NULL, "no route for %s %.128s on this listener",
                                           r->method, r->path);
                        return r->pending ? queue_pending(r) : MHD_NO;
                }
                /* Nor to a web page: a browser may post a "simple" text/plain request to a loopback
                 * port from any site (no preflight), and a rebound name reaches it too. Browsers
                 * mark every such request with Origin (and Sec-Fetch-Site); API clients send neither. */
                if (l->open && (MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Origin") ||
                                MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Sec-Fetch-Site"))) {
                        request_hand_over(r, true);
                        http_respond_error(r, API_ERROR_FORBIDDEN, NULL, "requests from web pages (Origin, "
                                           "Sec-Fetch-Site) are refused on this listener");
                        return r->pending ? queue_pending(r) : MHD_NO;
                }
                if (l->tcp && !l->open && !(h->public_route && h->public_route(r->method, r->path)) &&
                    !request_authenticate(r)) {
                        request_hand_over(r, true);
                        respond_unauthorized(r);
                        return r->pending ? queue_pending(r) : MHD_NO;
                }

                /* The route's word before the body: refused now (as the 401 above), or the body
                 * streamed, with the route's cap instead of max_body. */
                if (h->begin) {
                        h->begin(r, h->userdata);
                        if (r->pending) {
                                request_hand_over(r, true);
                                return queue_pending(r);
                        }
                }

                /* An announced oversized body is never read: the 413 comes at once, MHD closes the
                 * connection after it, and the close lingers (drains what the client sends within a
                 * budget) so that a client which sends before it listens still reads the answer. A
                 * client that sends "Expect: 100-continue" gets the 413 without sending anything. */
                cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
                if (http_body_plan(cl, r->streamed ? (size_t) MIN(r->sink.max, (uint64_t) SIZE_MAX) : h->max_body) ==
                    HTTP_BODY_REFUSE) {
                        r->too_large = true;
                        request_hand_over(r, true);
                        h->handler(r, h->userdata);
                        return r->pending ? queue_pending(r) : MHD_YES;
                }
                return MHD_YES;
        }

        if (r->pending)
                return queue_pending(r);

        if (*upload_data_size > 0) {
                size_t n = *upload_data_size;

                *upload_data_size = 0;
                if (r->streamed) {
                        if (r->too_large || r->streamed_len + n > r->sink.max)
                                return request_refuse_body(r);
                        if (r->stream_error == 0) {
                                int k = r->sink.write(r->sink.userdata, upload_data, n);

                                if (k < 0)
                                        r->stream_error = k;
                        }
                        r->streamed_len += n;
                        return MHD_YES;
                }
                if (r->too_large || r->body_len + n > h->max_body)
                        return request_refuse_body(r);
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
        request_hand_over(r, false);
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

void http_request_stream_body(HttpRequest *req, const HttpBodySink *sink) {
        assert(!req->handled && !req->streamed && sink && sink->write);
        req->sink = *sink;
        req->streamed = true;
}

void *http_request_streamed(HttpRequest *req, uint64_t *ret_len, int *ret_error) {
        if (ret_len)
                *ret_len = req->streamed_len;
        if (ret_error)
                *ret_error = req->stream_error;
        return req->streamed ? req->sink.userdata : NULL;
}

bool http_request_too_large(HttpRequest *req) {
        return req->too_large;
}

int http_request_peer_uid(HttpRequest *req, uid_t *ret) {
        const union MHD_ConnectionInfo *info;
        struct ucred cred;
        socklen_t l = sizeof(cred);

        /* SO_PEERCRED on a TCP socket yields no real credentials: never let it pass for a uid. */
        if (req->listener->tcp)
                return -EPROTONOSUPPORT;
        info = MHD_get_connection_info(req->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (!info)
                return -EBADF;
        if (getsockopt(info->connect_fd, SOL_SOCKET, SO_PEERCRED, &cred, &l) < 0)
                return -errno;
        *ret = cred.uid;
        return 0;
}

int http_request_owner(HttpRequest *req, char *buf, size_t size, bool *ret_admin) {
        uid_t uid;
        int n, r;

        /* "key:" and "uid:" never collide, so a key named like a number is not that uid. */
        if (req->listener->open) {
                n = snprintf(buf, size, "key:%s", req->http->open_owner);
                if (n < 0 || (size_t) n >= size)
                        return -ENOBUFS;
                *ret_admin = false;
                return 0;
        }
        if (req->listener->tcp) {
                if (isempty(req->key_name))
                        return -EACCES;         /* not reached: unauthenticated requests get no handler */
                n = snprintf(buf, size, "key:%s", req->key_name);
                if (n < 0 || (size_t) n >= size)
                        return -ENOBUFS;
                *ret_admin = req->key_admin;
                return 0;
        }

        /* Only root and the members of SocketGroup= get here at all: the socket is 0660 root:group,
         * and the kernel checks that at connect() with the caller's full credentials (supplementary
         * groups included), at the same moment SO_PEERCRED records them. Checking again here would
         * need the uid's groups from NSS (getgrouplist), a possibly blocking lookup (LDAP, sssd) in
         * the event loop for every request, to learn nothing new. */
        r = http_request_peer_uid(req, &uid);
        if (r < 0)
                return r;
        n = snprintf(buf, size, "uid:%u", (unsigned) uid);
        if (n < 0 || (size_t) n >= size)
                return -ENOBUFS;
        *ret_admin = uid == 0;
        return 0;
}

/* Queue resp (taking it) as the answer, and wake the connection if it was suspended. */
static void respond(HttpRequest *req, unsigned status, struct MHD_Response *resp) {
        if (req->pending)
                MHD_destroy_response(req->pending);
        req->pending = resp;
        req->pending_status = status;

        if (req->suspended) {
                req->suspended = false;
                MHD_resume_connection(req->conn);
                (void) sd_event_source_set_enabled(req->listener->defer, SD_EVENT_ONESHOT);
        }
}

void http_respond_text(HttpRequest *req, unsigned status, const char *content_type, char *text) {
        struct MHD_Response *resp;

        resp = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
        if (!resp) {
                free(text);
                return;
        }
        (void) MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
        respond(req, status, resp);
}

void http_respond_fd(HttpRequest *req, unsigned status, const char *content_type, int fd, uint64_t size,
                     const char *attachment_name) {
        struct MHD_Response *resp;

        resp = MHD_create_response_from_fd64(size, fd);
        if (!resp) {
                safe_close(fd);
                http_respond_error(req, API_ERROR_INTERNAL, NULL, "cannot send the file");
                return;
        }
        (void) MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
        (void) MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
        if (attachment_name) {
                _cleanup_free_ char *enc = url_path_encode(attachment_name), *v = NULL;

                if (enc && !strchr(enc, '/') && asprintf(&v, "attachment; filename*=UTF-8''%s", enc) < 0)
                        v = NULL;
                if (v)
                        (void) MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_DISPOSITION, v);
                else
                        (void) MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_DISPOSITION, "attachment");
        }
        respond(req, status, resp);
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
        respond(req, status, resp);
}

void http_respond_error(HttpRequest *req, ApiError error, const char *field, const char *fmt, ...) {
        json_object *o;
        char msg[512];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        o = error_json(error, field, "%s", msg);
        if (!o) {
                log_oom();
                return;
        }
        http_respond_json(req, api_error_http_status(error), o);
}

struct HttpStream {
        HttpListener *listener;
        struct MHD_Connection *conn;
        bool suspended;
        http_stream_read_t read;
        void (*done)(void *userdata);
        void *userdata;
};

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max) {
        HttpStream *s = cls;
        ssize_t n = s->read(s->userdata, buf, max);

        if (n < 0)
                return MHD_CONTENT_READER_END_OF_STREAM;
        if (n == 0 && !s->suspended) {
                /* Nothing now: off MHD's loop until there is (no busy waiting). */
                s->suspended = true;
                MHD_suspend_connection(s->conn);
        }
        return n;
}

static void stream_free(void *cls) {
        HttpStream *s = cls;

        if (s->done)
                s->done(s->userdata);
        free(s);
}

int http_respond_stream(HttpRequest *req, const char *content_type, http_stream_read_t read,
                        void (*done)(void *userdata), void *userdata, HttpStream **ret) {
        struct MHD_Response *resp;
        HttpStream *s = calloc(1, sizeof(HttpStream));

        if (!s)
                return -ENOMEM;
        *s = (HttpStream) {
                .listener = req->listener,
                .conn = req->conn,
                .read = read,
                .done = done,
                .userdata = userdata,
        };
        resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, stream_read, s, stream_free);
        if (!resp) {
                free(s);
                return -ENOMEM;
        }
        (void) MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
        (void) MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
        (void) MHD_add_response_header(resp, "X-Accel-Buffering", "no");
        if (ret)
                *ret = s;
        respond(req, 200, resp);
        return 0;
}

void http_stream_wake(HttpStream *s) {
        if (!s || !s->suspended)
                return;
        s->suspended = false;
        MHD_resume_connection(s->conn);
        (void) sd_event_source_set_enabled(s->listener->defer, SD_EVENT_ONESHOT);
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
        unsigned n = 0;

        for (size_t i = 0; i < h->n_listeners; i++)
                n += h->listeners[i]->n_connections;
        return n;
}

size_t http_tcp_listeners(Http *h) {
        size_t n = 0;

        for (size_t i = 0; i < h->n_listeners; i++)
                n += h->listeners[i]->tcp && !h->listeners[i]->open;
        return n;
}

void http_set_auth(Http *h, AuthTable *t) {
        auth_table_free(h->auth);
        h->auth = t;
}

int http_reload_auth(Http *h, const char *api_keys_file) {
        _cleanup_(auth_table_freep) AuthTable *t = NULL;
        _cleanup_free_ char *error = NULL;
        int r;

        if (http_tcp_listeners(h) == 0)
                return 0;
        if (!api_keys_file)
                return log_warning_errno(EINVAL, "No APIKeysFile=, keeping the previous API keys.");
        r = auth_load(api_keys_file, &t, &error);
        if (r < 0)
                return log_warning_errno(r, "%s; keeping the previous API keys.", error ?: "out of memory");
        log_info("Loaded %zu API keys from %s.", auth_table_size(t), api_keys_file);
        http_set_auth(h, TAKE_PTR(t));
        return 0;
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

/* Literal addresses only (conf.c checked them). SO_REUSEADDR: a restart must not fail on the last
 * run's connections in TIME_WAIT. IPV6_V6ONLY: "[::]:8080" means IPv6 only, say so explicitly
 * rather than depend on net.ipv6.bindv6only. */
static int listen_tcp(const char *address) {
        struct sockaddr_storage ss;
        socklen_t sl;
        _cleanup_close_ int fd = -EBADF;
        int one = 1;

        if (listen_address_parse(address, &ss, &sl) < 0)
                return -EINVAL;
        fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return -errno;
        if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0)
                return -errno;
        if (ss.ss_family == AF_INET6 && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) < 0)
                return -errno;
        if (bind(fd, (struct sockaddr *) &ss, sl) < 0)
                return -errno;
        if (listen(fd, SOMAXCONN) < 0)
                return -errno;
        return TAKE_FD(fd);
}

static void listener_free(HttpListener *l) {
        if (!l)
                return;
        sd_event_source_disable_unref(l->io);
        sd_event_source_disable_unref(l->timer);
        sd_event_source_disable_unref(l->defer);
        sd_event_source_disable_unref(l->deadline_timer);
        if (l->daemon) {
                /* Let resumed connections be processed before the daemon goes away. */
                (void) MHD_run(l->daemon);
                /* This closes the listening socket too: MHD owns it from MHD_start_daemon() on. */
                MHD_stop_daemon(l->daemon);
        }
        free(l->name);
        free(l);
}

/* Serve the listening socket fd (always consumed: closed on error, MHD's on success). The same
 * for the unix socket and every TCP listener. */
static int listener_add(Http *h, int fd, bool tcp, const char *name) {
        _cleanup_close_ int fd_owned = fd;
        const union MHD_DaemonInfo *info;
        HttpListener *l;
        int r, mhd_fd;

        assert(h->n_listeners < ELEMENTSOF(h->listeners));

        l = calloc(1, sizeof(HttpListener));
        if (!l)
                return log_oom();
        l->http = h;
        l->tcp = tcp;
        l->deadline_armed = UINT64_MAX;
        l->name = strdup(name);
        if (!l->name) {
                free(l);
                return log_oom();
        }
        h->listeners[h->n_listeners++] = l;     /* http_free() cleans up from here on */

        /* MHD closes the socket it serves at stop (and, depending on the version, maybe on a failed
         * start): it gets its own copy, so that ours is closed exactly once in any case. MHD's epoll
         * wants a non-blocking socket; a socket passed by systemd need not be one. */
        if (fcntl(fd_owned, F_SETFL, fcntl(fd_owned, F_GETFL) | O_NONBLOCK) < 0)
                return log_error_errno(errno, "%s: cannot make the socket non-blocking: %m", name);
        mhd_fd = fcntl(fd_owned, F_DUPFD_CLOEXEC, 3);
        if (mhd_fd < 0)
                return log_error_errno(errno, "%s: cannot duplicate the socket: %m", name);

        l->daemon = MHD_start_daemon(MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG,
                                     0, tcp ? on_accept_tcp : NULL, l, on_access, l,
                                     MHD_OPTION_LISTEN_SOCKET, mhd_fd,
                                     MHD_OPTION_CONNECTION_LIMIT, h->max_connections,
                                     MHD_OPTION_CONNECTION_TIMEOUT, (unsigned) 120,
                                     MHD_OPTION_NOTIFY_COMPLETED, on_completed, l,
                                     MHD_OPTION_NOTIFY_CONNECTION, on_connection, l,
                                     MHD_OPTION_EXTERNAL_LOGGER, mhd_log, l,
                                     MHD_OPTION_UNESCAPE_CALLBACK, on_unescape, l,
                                     MHD_OPTION_END);
        if (!l->daemon)
                return log_error_errno(EIO, "%s: failed to start libmicrohttpd.", name);

        info = MHD_get_daemon_info(l->daemon, MHD_DAEMON_INFO_EPOLL_FD);
        if (!info)
                return log_error_errno(EIO, "%s: libmicrohttpd has no epoll fd.", name);
        r = sd_event_add_io(h->event, &l->io, info->epoll_fd, EPOLLIN, on_io, l);
        if (r >= 0)
                /* Accuracy 1 µs: 0 would mean sd-event's default of 250 ms, and MHD's timeouts
                 * are often "call me again now". */
                r = sd_event_add_time(h->event, &l->timer, CLOCK_MONOTONIC, UINT64_MAX, 1, on_timer, l);
        if (r >= 0)
                r = sd_event_add_defer(h->event, &l->defer, on_defer, l);
        if (r >= 0)
                r = sd_event_source_set_enabled(l->defer, SD_EVENT_OFF);
        if (r >= 0)
                /* The deadlines are whole seconds: coalescing wakeups within 100 ms is fine. */
                r = sd_event_add_time(h->event, &l->deadline_timer, CLOCK_MONOTONIC, UINT64_MAX, USEC_PER_SEC / 10,
                                      on_deadline, l);
        if (r < 0)
                return log_error_errno(r, "%s: failed to add HTTP event sources: %m", name);
        listener_update(l);
        return 0;
}

/* Sockets passed by systemd (sandboxd.socket). Only names starting with "api-" are API listeners;
 * anything else (the fd store's "ctl:<id>" fds, for one) belongs to someone else and is left alone,
 * and so is the environment, for them to find. Returns how many fds were taken. */
static int collect_passed_sockets(bool allow_non_loopback, int ret_fds[static HTTP_TCP_MAX]) {
        char **names = NULL;
        int n, taken = 0, r = 0;

        n = sd_listen_fds_with_names(false, &names);
        if (n < 0)
                return log_error_errno(n, "Failed to read the sockets passed by systemd: %m");
        for (int i = 0; i < n; i++) {
                int fd = SD_LISTEN_FDS_START + i;
                const char *name = names && names[i] ? names[i] : "unknown";

                if (!startswith(name, "api-"))
                        continue;
                if (r < 0)
                        continue;       /* still walk on, to free the names */
                if (!streq(name, "api-tcp")) {
                        log_warning("Ignoring passed socket %d named '%s': the only API socket name is 'api-tcp'.",
                                    fd, name);
                        continue;
                }
                if (sd_is_socket_inet(fd, AF_UNSPEC, SOCK_STREAM, 1, 0) <= 0) {
                        r = log_error_errno(EINVAL, "Passed socket %d named 'api-tcp' is not a listening TCP socket.", fd);
                        continue;
                }
                if (!allow_non_loopback) {
                        struct sockaddr_storage ss = {};
                        socklen_t sl = sizeof(ss);

                        if (getsockname(fd, (struct sockaddr *) &ss, &sl) < 0) {
                                r = log_error_errno(errno, "Passed socket %d named 'api-tcp': cannot get its address: %m",
                                                    fd);
                                continue;
                        }
                        /* The same rule as for Listen= (conf.c): plain HTTP stays on loopback. */
                        if (!listen_address_is_loopback((struct sockaddr *) &ss)) {
                                r = log_error_errno(EADDRNOTAVAIL, "Passed socket %d named 'api-tcp' is not bound to "
                                                    "a loopback address: the API on TCP is plain HTTP and its bearer "
                                                    "keys would cross the network in clear text. Bind 127.0.0.1 or "
                                                    "[::1] in sandboxd.socket, or set ListenAllowNonLoopback=yes in "
                                                    "[Daemon] of sandboxd.conf.", fd);
                                continue;
                        }
                }
                if (taken >= HTTP_TCP_MAX) {
                        r = log_error_errno(E2BIG, "More than %d sockets named 'api-tcp' passed.", HTTP_TCP_MAX);
                        continue;
                }
                ret_fds[taken++] = fd;
        }
        for (int i = 0; names && i < n; i++)
                free(names[i]);
        free(names);
        return r < 0 ? r : taken;
}

int http_new(sd_event *event, const HttpSettings *s, http_handler_t handler, void *userdata, Http **ret) {
        _cleanup_free_ char *error = NULL;
        int passed[HTTP_TCP_MAX];
        _cleanup_(http_freep) Http *h = NULL;
        size_t n_listen;
        int r, n_passed;

        h = calloc(1, sizeof(Http));
        if (!h)
                return -ENOMEM;
        h->event = sd_event_ref(event);
        h->handler = handler;
        h->userdata = userdata;
        h->max_body = s->max_body;
        h->max_connections = s->max_connections;
        h->header_timeout_usec = s->header_timeout_usec;
        h->body_timeout_usec = s->body_timeout_usec;
        h->max_per_address = s->max_connections_per_address;
        h->max_per_user = s->max_connections_per_user;
        h->max_nonroot = s->max_connections - MIN((unsigned) HTTP_ROOT_RESERVE, s->max_connections / 2);
        h->linger_bytes = MAX((uint64_t) HTTP_LINGER_MIN_BYTES, 4 * (uint64_t) s->max_body);
        conn_table_init(&h->counts);
        h->lingering = (LingerSet) { .event = event, .max = HTTP_LINGER_MAX };
        h->public_route = s->public_route;
        h->open_route = s->open_route;
        h->begin = s->begin;
        h->socket_path = strdup(s->socket_path);
        if (!h->socket_path)
                return -ENOMEM;

        r = listen_unix(s->socket_path, s->socket_mode, s->socket_gid);
        if (r < 0)
                return log_error_errno(r, "Failed to listen on '%s': %m", s->socket_path);
        r = listener_add(h, r, false, s->socket_path);
        if (r < 0)
                return r;

        /* The open listener (PistonListen=): loopback only, whatever ListenAllowNonLoopback= says, since
         * no key guards it; its requests are open_owner's. */
        if (s->open_listen) {
                struct sockaddr_storage ss;
                socklen_t sl;

                if (!s->open_owner)
                        return log_error_errno(EINVAL, "The listener on %s needs an owner.", s->open_listen);
                if (listen_address_parse(s->open_listen, &ss, &sl) < 0 ||
                    !listen_address_is_loopback((struct sockaddr *) &ss))
                        return log_error_errno(EADDRNOTAVAIL, "%s is not a loopback address: a listener without "
                                               "keys stays on loopback.", s->open_listen);
                h->open_owner = strdup(s->open_owner);
                if (!h->open_owner)
                        return -ENOMEM;
                r = listen_tcp(s->open_listen);
                if (r < 0)
                        return log_error_errno(r, "Failed to listen on %s: %m", s->open_listen);
                r = listener_add(h, r, true, s->open_listen);
                if (r < 0)
                        return r;
                h->listeners[h->n_listeners - 1]->open = true;
                log_info("Open API on %s, no key: only its routes, as 'key:%s'.", s->open_listen, s->open_owner);
        }

        /* TCP: socket-activated sockets replace Listen= (the socket unit has bound those addresses,
         * binding them again would fail). */
        n_passed = collect_passed_sockets(s->allow_non_loopback, passed);
        if (n_passed < 0)
                return n_passed;
        n_listen = strv_length(s->listen);
        if (n_passed > 0 && n_listen > 0)
                log_notice("Listen= is ignored: sandboxd.socket passed its TCP socket(s).");
        if (n_passed == 0 && n_listen > HTTP_TCP_MAX)
                return log_error_errno(E2BIG, "Listen= has more than %d addresses.", HTTP_TCP_MAX);
        if (n_passed == 0 && n_listen == 0) {
                *ret = TAKE_PTR(h);
                return 0;
        }

        /* No TCP without keys: a key file that cannot be loaded fails the start, clearly, rather than
         * leaving a listener that refuses everyone (or worse). */
        if (!s->api_keys_file)
                return log_error_errno(EINVAL, "A TCP listener needs APIKeysFile=.");
        r = auth_load(s->api_keys_file, &h->auth, &error);
        if (r < 0)
                return log_error_errno(r, "Cannot use TCP without API keys: %s", error ?: "out of memory");
        log_info("Loaded %zu API keys from %s.", auth_table_size(h->auth), s->api_keys_file);

        for (int i = 0; i < n_passed; i++) {
                char name[64];

                snprintf(name, sizeof(name), "api-tcp (fd %d)", passed[i]);
                r = listener_add(h, passed[i], true, name);
                if (r < 0) {
                        /* The rest are ours now too: do not leave them open behind us. */
                        for (int j = i + 1; j < n_passed; j++)
                                safe_close(passed[j]);
                        return r;
                }
                log_info("API on TCP socket passed by systemd (fd %d), API key required.", passed[i]);
        }
        for (size_t i = 0; n_passed == 0 && i < n_listen; i++) {
                struct sockaddr_storage ss;
                socklen_t sl;

                /* config_validate() has refused these already; a settings struct made elsewhere
                 * gets the same answer. */
                if (!s->allow_non_loopback && (listen_address_parse(s->listen[i], &ss, &sl) < 0 ||
                                               !listen_address_is_loopback((struct sockaddr *) &ss)))
                        return log_error_errno(EADDRNOTAVAIL, "Listen=%s is not a loopback address, and "
                                               "ListenAllowNonLoopback= is off.", s->listen[i]);
                r = listen_tcp(s->listen[i]);
                if (r < 0)
                        return log_error_errno(r, "Failed to listen on %s: %m", s->listen[i]);
                r = listener_add(h, r, true, s->listen[i]);
                if (r < 0)
                        return r;
                log_info("API on %s, API key required.", s->listen[i]);
        }

        *ret = TAKE_PTR(h);
        return 0;
}

Http *http_free(Http *h) {
        if (!h)
                return NULL;
        h->stopping = true;
        for (size_t i = 0; i < h->n_listeners; i++)
                listener_free(h->listeners[i]);
        linger_set_clear(&h->lingering);
        conn_table_clear(&h->counts);
        if (h->socket_path && h->n_listeners > 0)
                (void) unlink(h->socket_path);
        free(h->socket_path);
        free(h->open_owner);
        auth_table_free(h->auth);
        sd_event_unref(h->event);
        free(h);
        return NULL;
}

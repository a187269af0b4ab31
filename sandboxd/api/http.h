/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* HTTP/1.1 on a unix socket, and optionally on TCP: libmicrohttpd in external-epoll mode, driven from
 * sd-event (each listener is one MHD daemon, whose epoll fd is one I/O source and whose timeout is
 * one timer). Request bodies are capped before they are read. A handler either answers at once or
 * suspends the request and answers later (long polls).
 *
 * Who may talk: on the unix socket, whoever can connect (the socket is 0660 root:SocketGroup=);
 * the caller is its uid. On TCP, only a request with "Authorization: Bearer <key>" of a key in the
 * key file (auth.h); everything else gets 401 before the handler runs; the caller is the key —
 * except on the routes HttpSettings.public_route names (signed artifact URLs, which carry their own
 * authorization: the signature), which reach the handler without a key and without an owner.
 *
 * What a client may hold: a request's headers must be in within header_timeout_usec of the
 * connection's start (or of the previous answer on a keep-alive connection) and its body within
 * body_timeout_usec of the headers, absolute deadlines (trickling bytes does not extend them);
 * late, the connection is closed (408 first if the headers were in). Once the handler has the
 * request (answering, or suspended for a long poll) no deadline applies. One TCP address (IPv6:
 * one /64) holds at most max_connections_per_address connections over all TCP listeners (more are
 * closed at accept); on the unix socket a uid other than 0 holds at most max_connections_per_user
 * (429 and closed), and all of them together leave the last HTTP_ROOT_RESERVE of max_connections to
 * root (503 and closed). A body over max_body is never read to its end: announced (Content-Length),
 * the 413 comes before it; found in mid-stream (chunked), the 413 is written at once. Either way
 * the connection is then closed with a lingering close: write side shut, up to
 * max(HTTP_LINGER_MIN_BYTES, 4 x max_body) more input read and dropped for at most
 * HTTP_LINGER_SEC, so the kernel does not reset the connection under the client's unread 413. */

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include "auth.h"
#include "model/api-error.h"

/* At most this many TCP listeners (Listen= addresses or socket-activated "api-tcp" fds). */
#define HTTP_TCP_MAX 8
/* On the unix socket, the last this many of max_connections (at most half of them) are root's. */
#define HTTP_ROOT_RESERVE 8
/* Lingering close: at most this many sockets at once (beyond: closed as they are), each drained for
 * at most HTTP_LINGER_SEC and max(HTTP_LINGER_MIN_BYTES, 4 x max_body) bytes. */
#define HTTP_LINGER_MAX 64
#define HTTP_LINGER_SEC 2
#define HTTP_LINGER_MIN_BYTES (1024 * 1024)
/* Room for any owner http_request_owner() yields: "key:" + a key name, or "uid:" + a uid. */
#define HTTP_OWNER_MAX (sizeof("key:") + AUTH_NAME_MAX)

typedef struct Http Http;
typedef struct HttpRequest HttpRequest;

/* Called once per request when the whole body is in (or too large: then http_request_body()
 * returns NULL and http_request_too_large() is true). Must answer (http_respond_*) or suspend. */
typedef void (*http_handler_t)(HttpRequest *req, void *userdata);

/* A request body taken as a stream rather than whole in memory (http_request_stream_body()): each
 * chunk goes to write() as it arrives, so the daemon holds none of it. write returns 0 or -errno;
 * after an error the rest of the body is read and dropped (the handler sees the error). max
 * replaces MaxRequestBytes= for this body (a larger Content-Length is refused before a byte is read,
 * a chunked body is cut there with 413). free(userdata) is called once when the request ends, however
 * it ends (answered, refused, the client gone). */
typedef struct HttpBodySink {
        int (*write)(void *userdata, const void *data, size_t n);
        void (*free)(void *userdata);
        void *userdata;
        uint64_t max;
} HttpBodySink;

typedef struct HttpSettings {
        const char *socket_path;
        mode_t socket_mode;
        gid_t socket_gid;        /* (gid_t) -1: leave as is */
        size_t max_body;
        unsigned max_connections;  /* for the unix socket, and again for all TCP listeners together */
        uint64_t header_timeout_usec;  /* request line and headers; 0: no deadline */
        uint64_t body_timeout_usec;    /* the body, from the end of the headers; 0: no deadline */
        unsigned max_connections_per_address;  /* TCP, over all listeners; 0: no limit */
        unsigned max_connections_per_user;     /* unix socket, per uid other than 0; 0: no limit */

        /* Optional TCP, authenticated by API key. A socket passed by systemd with the name "api-tcp"
         * (sandboxd.socket) is used instead of binding these addresses. */
        char *const *listen;       /* NULL-terminated "127.0.0.1:8080", "[::1]:8080"; NULL: none */
        bool allow_non_loopback;   /* ListenAllowNonLoopback=: else a passed socket (and, again, a Listen=
                                    * address) bound to anything but loopback fails the start */
        const char *api_keys_file; /* loaded (and required) when there is a TCP listener */
        /* Routes that need no API key on TCP (NULL: none). Called with the method and the decoded
         * path before anything else of the request is looked at. */
        bool (*public_route)(const char *method, const char *path);
        /* Optional: one TCP listener without keys (PistonListen=), loopback only: every request on it is
         * "key:<open_owner>"'s (never an admin), and only the routes open_route() accepts are served;
         * the rest get 404 before the body is read. Counted with the TCP listeners' connections. */
        const char *open_listen;   /* "127.0.0.1:2000"; NULL: none */
        const char *open_owner;    /* a key name */
        bool (*open_route)(const char *method, const char *path);
        /* Called once the headers are in and the caller is admitted, before a byte of the body is
         * read (NULL: never): a route that takes its body as a stream calls
         * http_request_stream_body() here; one that refuses the request answers now (http_respond_*),
         * and the body is then never read. Otherwise the handler gets the body in memory, as usual. */
        void (*begin)(HttpRequest *req, void *userdata);
} HttpSettings;

/* What to do with a request body, from its Content-Length header (NULL: none, or chunked), before
 * a byte of it is read: read it (at most max_body bytes; a chunked body is cut at the cap), or
 * answer 413 at once and close with a lingering close (over the cap, or a bogus length). */
typedef enum HttpBodyPlan {
        HTTP_BODY_READ,
        HTTP_BODY_REFUSE,
} HttpBodyPlan;
HttpBodyPlan http_body_plan(const char *content_length, size_t max_body);

int http_new(sd_event *event, const HttpSettings *s, http_handler_t handler, void *userdata, Http **ret);
Http *http_free(Http *h);
DEFINE_TRIVIAL_CLEANUP_FUNC(Http *, http_free);

const char *http_request_method(HttpRequest *req);
const char *http_request_path(HttpRequest *req);
/* Query argument value, or NULL. */
const char *http_request_query(HttpRequest *req, const char *key);
const char *http_request_header(HttpRequest *req, const char *key);
const char *http_request_body(HttpRequest *req, size_t *ret_len);
bool http_request_too_large(HttpRequest *req);
/* From HttpSettings.begin only: the body goes to sink (copied) as it arrives. */
void http_request_stream_body(HttpRequest *req, const HttpBodySink *sink);
/* In the handler of a streamed request: its sink's userdata (NULL if the body was not streamed),
 * the bytes handed to it, and the first error of its write() (0: none). */
void *http_request_streamed(HttpRequest *req, uint64_t *ret_len, int *ret_error);
/* The peer's uid from SO_PEERCRED, on the unix socket. -EPROTONOSUPPORT on TCP (no uid there),
 * -errno if unknown. */
int http_request_peer_uid(HttpRequest *req, uid_t *ret);
/* Who is asking, as recorded as an execution's owner: "key:<name>" on TCP (admin: the key's admin
 * flag), "uid:<N>" on the unix socket (admin: uid 0). -ENOBUFS if it does not fit in size (never
 * truncated: a truncated owner could be someone else's); HTTP_OWNER_MAX always fits. */
int http_request_owner(HttpRequest *req, char *buf, size_t size, bool *ret_admin);

/* Replace the API keys (takes ownership of t; NULL: no key is valid). Requests being served keep
 * the identity they were admitted with. */
void http_set_auth(Http *h, AuthTable *t);
/* Reload the key file for SIGHUP: on error the previous keys stay (and the error is logged).
 * Nothing to do without a TCP listener. */
int http_reload_auth(Http *h, const char *api_keys_file);
/* Number of TCP listeners. */
size_t http_tcp_listeners(Http *h);

/* Answer with a JSON body (takes ownership of o). Works for running and suspended requests. */
void http_respond_json(HttpRequest *req, unsigned status, json_object *o);
/* Answer with a text body of the given Content-Type (takes ownership of text, a NUL-terminated
 * malloc()ed string). */
void http_respond_text(HttpRequest *req, unsigned status, const char *content_type, char *text);
/* Stream size bytes of the regular file fd (always taken: closed when sent, or on failure) with
 * Content-Length, without reading it into memory (libmicrohttpd reads it, or sendfile()s it, as the
 * socket takes it). Always "X-Content-Type-Options: nosniff"; with attachment_name (a file name, no
 * '/') also "Content-Disposition: attachment; filename*=UTF-8''<name>". */
void http_respond_fd(HttpRequest *req, unsigned status, const char *content_type, int fd, uint64_t size,
                     const char *attachment_name);
/* {"error": {"code":..., "message":..., "field":...}} with error's status and code (api-error.h). */
void http_respond_error(HttpRequest *req, ApiError error, const char *field, const char *fmt, ...) _printf_(4, 5);

/* A streamed answer (Server-Sent Events): 200 with content_type, chunked, its body produced by
 * read(userdata, buf, max) as the client takes it: > 0 bytes written to buf, 0 nothing now (the
 * connection is suspended, without polling, until http_stream_wake()), -1 the end. done(userdata)
 * is called once when the answer is finished or the connection is gone; the HttpStream is invalid
 * from then on. *ret (optional) is the stream's handle for http_stream_wake(). */
typedef struct HttpStream HttpStream;
typedef ssize_t (*http_stream_read_t)(void *userdata, char *buf, size_t max);
int http_respond_stream(HttpRequest *req, const char *content_type, http_stream_read_t read,
                        void (*done)(void *userdata), void *userdata, HttpStream **ret);
/* There is more to read (or the end): resume the stream if it waits. */
void http_stream_wake(HttpStream *s);

/* Keep the connection open without an answer; answer later with http_respond_json(). */
void http_request_suspend(HttpRequest *req);

/* Called when the request is gone (answered, or the connection died): the owner must drop
 * its pointer. Set by whoever keeps a suspended request. */
void http_request_set_gone_cb(HttpRequest *req, void (*cb)(HttpRequest *req, void *userdata), void *userdata);

unsigned http_connections(Http *h);

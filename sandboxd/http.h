/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* HTTP/1.1 on a unix socket: libmicrohttpd in external-epoll mode, driven from sd-event (its epoll
 * fd is one I/O source, its timeout one timer). Request bodies are capped before they are read.
 * A handler either answers at once or suspends the request and answers later (long polls). */

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

typedef struct Http Http;
typedef struct HttpRequest HttpRequest;

/* Called once per request when the whole body is in (or too large: then http_request_body()
 * returns NULL and http_request_too_large() is true). Must answer (http_respond_*) or suspend. */
typedef void (*http_handler_t)(HttpRequest *req, void *userdata);

typedef struct HttpSettings {
        const char *socket_path;
        mode_t socket_mode;
        gid_t socket_gid;        /* (gid_t) -1: leave as is */
        size_t max_body;
        unsigned max_connections;
} HttpSettings;

int http_new(sd_event *event, const HttpSettings *s, http_handler_t handler, void *userdata, Http **ret);
Http *http_free(Http *h);

const char *http_request_method(HttpRequest *req);
const char *http_request_path(HttpRequest *req);
/* Query argument value, or NULL. */
const char *http_request_query(HttpRequest *req, const char *key);
const char *http_request_header(HttpRequest *req, const char *key);
const char *http_request_body(HttpRequest *req, size_t *ret_len);
bool http_request_too_large(HttpRequest *req);
/* The peer's uid from SO_PEERCRED (the API is on a unix socket). -errno if unknown. */
int http_request_peer_uid(HttpRequest *req, uid_t *ret);

/* Answer with a JSON body (takes ownership of o). Works for running and suspended requests. */
void http_respond_json(HttpRequest *req, unsigned status, json_object *o);
/* {"error": {"code":..., "message":..., "field":...}} */
void http_respond_error(HttpRequest *req, unsigned status, const char *code, const char *field, const char *fmt, ...)
        __attribute__((format(printf, 5, 6)));

/* Keep the connection open without an answer; answer later with http_respond_json(). */
void http_request_suspend(HttpRequest *req);

/* Called when the request is gone (answered, or the connection died): the owner must drop
 * its pointer. Set by whoever keeps a suspended request. */
void http_request_set_gone_cb(HttpRequest *req, void (*cb)(HttpRequest *req, void *userdata), void *userdata);

unsigned http_connections(Http *h);

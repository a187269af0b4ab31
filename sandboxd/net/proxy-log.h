/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What the egress proxy sandboxd-proxy (issue 16) says about each connection: the reasons of its
 * refusals and cut-offs with the HTTP status it answers a refusal with, the refusal response itself,
 * and the event line it writes on stdout when a connection ends, which the daemon parses into the
 * execution's record. Pure: no I/O, no allocation; the formatters write into the caller's buffer and
 * never past it. The reason strings and the field order are the contract with the daemon
 * (docs/ARCHITECTURE.md, "The egress proxy"). */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "http-head.h"

/* One event line, its '\n' included (the daemon reads lines of at most this many bytes). */
#define PROXY_EVENT_MAX 2048
/* The method as logged: the first bytes of a longer token. */
#define PROXY_METHOD_MAX 16
/* A refusal response: status line, three headers, the body naming host, port and reason. */
#define PROXY_RESPONSE_MAX 1024

/* The proxy's relay memory: each connection starts with two buffers of PROXY_RELAY_BUF_MIN (bounded
 * by the connection cap), which grow up to PROXY_RELAY_BUF_MAX while all buffers together stay
 * within PROXY_RELAY_MEMORY_MAX. */
#define PROXY_RELAY_BUF_MIN (64U * 1024U)
#define PROXY_RELAY_BUF_MAX (512U * 1024U)
#define PROXY_RELAY_MEMORY_MAX (32U * 1024U * 1024U)
/* MemoryMax= of a proxy with max_connections: the relay memory at its largest (every connection's
 * first buffers, then growth up to the cap, one step over it) and 16 MiB for the rest (the binary,
 * c-ares, the heads). The proxy never reaches it; a bug that leaks gets the OOM killer, not the host. */
static inline uint64_t proxy_memory_max(uint64_t max_connections) {
        return (uint64_t) PROXY_RELAY_MEMORY_MAX + 2ULL * PROXY_RELAY_BUF_MAX +
               max_connections * 2ULL * PROXY_RELAY_BUF_MIN + 16ULL * 1024 * 1024;
}

typedef enum ProxyReason {
        PROXY_REASON_NONE,               /* allowed, ran to its end */
        PROXY_REASON_NOT_ALLOWED,
        PROXY_REASON_PORT_NOT_ALLOWED,
        PROXY_REASON_INTERNAL_ADDRESS,
        PROXY_REASON_NOT_RESOLVED,
        PROXY_REASON_CONNECT_FAILED,
        PROXY_REASON_CONNECT_TIMEOUT,
        PROXY_REASON_BYTE_CAP,
        PROXY_REASON_CONNECTION_CAP,
        PROXY_REASON_IDLE_TIMEOUT,
        PROXY_REASON_HEAD_TIMEOUT,
        PROXY_REASON_CHUNKED_BODY,
        PROXY_REASON_BAD_REQUEST,        /* "bad request: " and the HttpHeadReason */
        _PROXY_REASON_MAX,
} ProxyReason;

/* The reason's text ("not in the allowlist"); for PROXY_REASON_BAD_REQUEST only its prefix
 * ("bad request"); NULL for PROXY_REASON_NONE and out-of-range values. */
const char *proxy_reason_to_string(ProxyReason r);

/* The status a refusal with this reason is answered with before anything was relayed: 400, 403,
 * 411, 502, 503 or 504; 0 for NONE and for the cut-offs of a relay (idle timeout) which answer
 * nothing. PROXY_REASON_BYTE_CAP is 503 (refused before connecting); cut mid-relay it gets none. */
unsigned proxy_reason_status(ProxyReason r);

/* The full reason text into buf of n bytes: proxy_reason_to_string(), or for a bad request
 * "bad request: " and http_head_reason_to_string(detail). Returns its length, or -EINVAL for NONE
 * or an unknown reason (buf then holds ""), -ENOBUFS when it does not fit (buf truncated). */
ssize_t proxy_reason_format(ProxyReason r, HttpHeadReason detail, char *buf, size_t n);

/* One ended connection. Strings may be NULL (logged as "" or left out, see below). */
typedef struct ProxyEvent {
        const char *host;                /* lower case (allowlist_host_check()); NULL or "": unparsed */
        uint16_t port;
        const char *method;              /* "CONNECT", the method token; NULL or "": unparsed */
        bool allowed;
        ProxyReason reason;              /* NONE: no "reason" field */
        HttpHeadReason bad_request;      /* the detail of PROXY_REASON_BAD_REQUEST */
        const char *address;             /* numeric; NULL or "": no "address" field */
        uint64_t bytes_up, bytes_down;
        uint64_t started_at;             /* CLOCK_REALTIME, microseconds */
        uint64_t duration_ms;
} ProxyEvent;

/* The event line, JSON, fields in the contract's order, strings escaped (quote, backslash, control
 * and non-ASCII bytes as \u00XX), the method cut at PROXY_METHOD_MAX bytes, the host at 253 bytes
 * and the address at 64 once escaped,
 * ending in '\n' and NUL-terminated in buf. Returns its length with the '\n' (at most
 * PROXY_EVENT_MAX), or -EINVAL for an allowed event with a refusal's reason or a denied one
 * without a reason. */
ssize_t proxy_event_format(const ProxyEvent *e, char buf[static PROXY_EVENT_MAX + 1]);

/* The response refusing a client: "HTTP/1.1 STATUS PHRASE", Content-Type: text/plain,
 * Content-Length, Connection: close, and the body "sandboxd-proxy: HOST:PORT: REASON\n" (host
 * as given, only its LDH, '.', '-' bytes). Returns its length, or -EINVAL for a reason without a
 * status. */
ssize_t proxy_response_format(ProxyReason r, HttpHeadReason detail, const char *host, uint16_t port,
                              char buf[static PROXY_RESPONSE_MAX]);

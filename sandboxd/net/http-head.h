/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The head of a request the egress proxy (issue 16) receives from a sandboxed program: hostile bytes,
 * parsed without allocating and without I/O, under the caller's caps. The proxy speaks two forms
 * (RFC 9112 §3.2): "CONNECT host:port" (a tunnel; no TLS interception) and the absolute form
 * "METHOD http://host[:port]/path?query" (plain HTTP, forwarded in origin form). Anything else is
 * refused with one reason of a table, before the proxy resolves or connects anything:
 *  - line ends are CRLF only. RFC 9112 §2.2 lets a recipient accept a bare LF, but the proxy
 *    forwards the request to a server that may not, and two parsers that disagree on where a line
 *    ends is what request smuggling is made of; no client that honours HTTP_PROXY sends bare LFs. A
 *    bare CR, a NUL anywhere, an obs-fold continuation (§5.2) and a space before a header's colon
 *    (§5.1) are refused for the same reason;
 *  - only HTTP/1.0 and HTTP/1.1; only the http scheme in the absolute form ("https://" there means
 *    the client did not use CONNECT, and the proxy does not speak TLS to the server on its behalf);
 *    no userinfo, no fragment, no origin form ("/path": a client that takes the proxy for the
 *    server), no asterisk form;
 *  - the host must pass allowlist_host_check(), the rules of the allowlist itself (no IP literals,
 *    LDH labels), so the proxy never acts on a host its allowlist could not judge; the port
 *    allowlist_port_parse() (no leading zero: "080");
 *  - the Host header: at most one. For the absolute form the URI's host wins (a missing Host header
 *    is fine) and a Host header naming another host, or another port (none means 80), is refused;
 *    for CONNECT a Host header must name the target's host and, if it has a port, its port;
 *  - smuggling shapes (RFC 9112 §6.1, §6.3): Content-Length with Transfer-Encoding, Content-Length
 *    values that differ (several headers or a list), a Content-Length that is not digits,
 *    Transfer-Encoding other than exactly one "chunked" (also in HTTP/1.0, which has none).
 * Methods are tokens, case-sensitive (RFC 9110 §9.1): "connect" is not CONNECT, and is refused by its
 * target. Hop-by-hop headers and what is forwarded are the proxy's business, not this module's. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "allowlist.h"

/* The most headers any caller may allow: HttpHead holds them without allocating. */
#define HTTP_HEAD_HEADERS_MAX 128

typedef struct HttpHeadLimits {
        size_t max_head;                 /* bytes of the head, its final CRLF CRLF included */
        size_t max_headers;              /* header lines, at most HTTP_HEAD_HEADERS_MAX */
        size_t max_line;                 /* bytes of one line, without its CRLF */
} HttpHeadLimits;

typedef enum HttpHeadReason {
        HTTP_HEAD_OK,
        HTTP_HEAD_LINE_TOO_LONG,
        HTTP_HEAD_TOO_MANY_HEADERS,
        HTTP_HEAD_TOO_LARGE,
        HTTP_HEAD_NUL,                   /* a NUL byte anywhere in the head */
        HTTP_HEAD_BARE_CR,               /* a CR not followed by LF */
        HTTP_HEAD_BARE_LF,               /* a LF not preceded by CR */
        HTTP_HEAD_BAD_REQUEST_LINE,      /* not METHOD SP TARGET SP VERSION (also an empty first line) */
        HTTP_HEAD_BAD_METHOD,            /* not a token */
        HTTP_HEAD_BAD_TARGET,            /* not authority form for CONNECT, not absolute form otherwise,
                                          * bytes outside VCHAR, a fragment */
        HTTP_HEAD_UNSUPPORTED_SCHEME,    /* a scheme other than http, https included */
        HTTP_HEAD_USERINFO,              /* "user:pass@" in the authority */
        HTTP_HEAD_BAD_HOST,              /* the target's host: HttpHeadError.host says why */
        HTTP_HEAD_BAD_PORT,              /* the target's port, or none for CONNECT */
        HTTP_HEAD_BAD_VERSION,           /* not HTTP/1.0 or HTTP/1.1 */
        HTTP_HEAD_OBS_FOLD,              /* a header line starting with SP or HTAB */
        HTTP_HEAD_BAD_HEADER_NAME,       /* no colon, an empty name, a name that is not a token */
        HTTP_HEAD_BAD_HEADER_VALUE,      /* a control character in a value */
        HTTP_HEAD_BAD_HOST_HEADER,       /* a Host header that is not host[:port]: HttpHeadError.host */
        HTTP_HEAD_DUPLICATE_HOST,        /* more than one Host header */
        HTTP_HEAD_HOST_MISMATCH,         /* a Host header naming another host or port than the target */
        HTTP_HEAD_BAD_CONTENT_LENGTH,    /* not digits (or a list of them), or more than 15 digits */
        HTTP_HEAD_CONFLICTING_CONTENT_LENGTH, /* values that differ */
        HTTP_HEAD_CONTENT_LENGTH_AND_TRANSFER_ENCODING,
        HTTP_HEAD_BAD_TRANSFER_ENCODING, /* other than one "chunked"; any in HTTP/1.0 */
        _HTTP_HEAD_REASON_MAX,
} HttpHeadReason;

const char *http_head_reason_to_string(HttpHeadReason r);

typedef struct HttpHeadError {
        HttpHeadReason reason;
        AllowlistReason host;            /* for HTTP_HEAD_BAD_HOST and HTTP_HEAD_BAD_HOST_HEADER */
} HttpHeadError;

/* n bytes at p, pointing into the buffer that was parsed (not NUL-terminated). */
typedef struct HttpSpan {
        const char *p;
        size_t n;
} HttpSpan;

typedef struct HttpHeader {
        HttpSpan name;                   /* as sent (compare case-insensitively) */
        HttpSpan value;                  /* without leading and trailing SP/HTAB */
} HttpHeader;

typedef struct HttpHead {
        HttpSpan method;
        bool connect;                    /* "CONNECT host:port" */
        unsigned version_minor;          /* HTTP/1.<0 or 1> */
        HttpSpan target;                 /* the request-target as sent */
        char host[ALLOWLIST_NAME_MAX + 1]; /* lower case, no trailing dot (allowlist_host_check()) */
        uint16_t port;                   /* CONNECT's; the URI's, 80 if it names none */
        /* The absolute form's origin form, to forward: the path ("/..." up to '?'; empty when the
         * URI has none, which is forwarded as "/"), and the query after '?' if has_query. */
        HttpSpan path;
        HttpSpan query;
        bool has_query;
        HttpHeader headers[HTTP_HEAD_HEADERS_MAX];
        size_t n_headers;
        bool has_content_length;
        uint64_t content_length;
        bool chunked;                    /* Transfer-Encoding: chunked */
        size_t head_len;                 /* bytes of the head with its blank line; the body or the
                                          * tunnel's first bytes follow */
} HttpHead;

/* Parse the head at the start of the n bytes at buf. Stateless: called again with the whole buffer
 * when more bytes arrived. Returns 1, the head is complete, in *ret (its spans point into buf); 0, it
 * is not yet complete and nothing seen so far is refused (the caps are checked on the partial head
 * too, so a client that never ends a line is refused once it passes them); -EBADMSG, refused, the
 * reason in *ret_error; -EINVAL, a max_head or max_line of 0 or max_headers above HTTP_HEAD_HEADERS_MAX
 * (a buffer of NULL with n > 0, too). *ret and
 * *ret_error are written only for 1 and -EBADMSG respectively. */
int http_head_parse(const void *buf, size_t n, const HttpHeadLimits *limits, HttpHead *ret,
                    HttpHeadError *ret_error);

/* The first header named name (case-insensitive), or NULL. */
const HttpHeader *http_head_header(const HttpHead *h, const char *name);

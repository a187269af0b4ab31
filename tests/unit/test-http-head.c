/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/http-head.h"
#include "util.h"

/* The egress proxy's request-head parser (issue 16), row by row, each row its own cmocka test named
 * after it. Each row's bytes are copied into a buffer of exactly their size (no NUL after them, so an
 * over-read shows under ASan) and parsed under the default caps or the row's own:
 *  - heads that parse, and what the proxy gets from them (CONNECT's host and port; the absolute URI's
 *    host, port, path and query; where the head ends);
 *  - heads not complete yet;
 *  - every refusal, with its reason (and the allowlist's reason for a bad host): the caps, NUL and
 *    bare CR/LF, the request line's three parts, schemes, userinfo, IP literals and bad ports in the
 *    target, header syntax, the Host header, and the request-smuggling shapes.
 * Then the properties the rows cannot show: every proper prefix of a valid head needs more bytes,
 * the caps' exact boundaries, and the limits the parser refuses. */

typedef struct HeadRow {
        const char *name;
        const char *input;
        size_t len;
        int ret;                         /* 1, 0 or -EBADMSG */
        HttpHeadReason reason;
        AllowlistReason host_reason;
        /* ret 1: */
        bool connect;
        const char *host;
        uint16_t port;
        const char *path;
        const char *query;               /* NULL: none */
        size_t tail;                     /* bytes after the head */
        size_t n_headers;
        /* the caps, where not the defaults */
        size_t max_head, max_headers, max_line;
} HeadRow;

#define IN(s) .input = s, .len = sizeof(s) - 1
#define GET(target) "GET " target " HTTP/1.1\r\n"
#define DONE(...) .ret = 1, __VA_ARGS__
#define MORE .ret = 0
#define NO(r) .ret = -EBADMSG, .reason = HTTP_HEAD_##r
#define NOHOST(r, h) .ret = -EBADMSG, .reason = HTTP_HEAD_##r, .host_reason = ALLOWLIST_##h

static const HttpHeadLimits default_limits = { .max_head = 8192, .max_headers = 32, .max_line = 4096 };

static const HeadRow head_rows[] = {
        /* ---- complete heads ---- */
        { "absolute GET", IN(GET("http://example.com/") "Host: example.com\r\n\r\n"),
          DONE(.host = "example.com", .port = 80, .path = "/", .n_headers = 1) },
        { "absolute GET with port, path and query",
          IN(GET("http://Example.COM:8080/a/b?x=1&y") "Host: example.com:8080\r\n"
             "User-Agent: t\r\n\r\n"),
          DONE(.host = "example.com", .port = 8080, .path = "/a/b", .query = "x=1&y", .n_headers = 2) },
        { "absolute without a path (forwarded as /)", IN("GET http://example.com HTTP/1.0\r\n\r\n"),
          DONE(.host = "example.com", .port = 80, .path = "") },
        { "absolute query without a path", IN(GET("http://example.com?q") "\r\n"),
          DONE(.host = "example.com", .port = 80, .path = "", .query = "q") },
        { "absolute empty query", IN(GET("http://example.com/p?") "\r\n"),
          DONE(.host = "example.com", .port = 80, .path = "/p", .query = "") },
        { "absolute HTTP/1.1 without Host: the URI wins", IN(GET("http://example.com/") "\r\n"),
          DONE(.host = "example.com", .port = 80, .path = "/") },
        { "absolute scheme in upper case", IN(GET("HTTP://example.com/") "\r\n"),
          DONE(.host = "example.com", .port = 80, .path = "/") },
        { "absolute host with trailing dot", IN(GET("http://example.com./") "Host: EXAMPLE.com\r\n\r\n"),
          DONE(.host = "example.com", .port = 80, .path = "/", .n_headers = 1) },
        { "absolute Host with port 80 named", IN(GET("http://example.com/") "Host: example.com:80\r\n\r\n"),
          DONE(.host = "example.com", .port = 80, .path = "/", .n_headers = 1) },
        { "absolute punycode host", IN(GET("http://xn--bcher-kva.example/") "\r\n"),
          DONE(.host = "xn--bcher-kva.example", .port = 80, .path = "/") },
        { "absolute percent-encoding in the path", IN(GET("http://example.com/%2e%2e/a%20b") "\r\n"),
          DONE(.host = "example.com", .port = 80, .path = "/%2e%2e/a%20b") },
        { "absolute other method token", IN("M-SEARCH http://example.com/ HTTP/1.1\r\n\r\n"),
          DONE(.host = "example.com", .port = 80, .path = "/") },
        { "POST with Content-Length and its body after the head",
          IN("POST http://example.com/u HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello"),
          DONE(.host = "example.com", .port = 80, .path = "/u", .tail = 5, .n_headers = 1) },
        { "Content-Length twice, the same",
          IN(GET("http://example.com/") "Content-Length: 5\r\nContent-length:5\r\n\r\n"),
          DONE(.host = "example.com", .port = 80, .path = "/", .n_headers = 2) },
        { "Content-Length list of the same value",
          IN(GET("http://example.com/") "Content-Length: 5 , 5\r\n\r\n"),
          DONE(.host = "example.com", .port = 80, .path = "/", .n_headers = 1) },
        { "Transfer-Encoding chunked", IN(GET("http://example.com/") "Transfer-Encoding: Chunked \r\n\r\n"),
          DONE(.host = "example.com", .port = 80, .path = "/", .n_headers = 1) },
        { "header value obs-text and empty values",
          IN(GET("http://example.com/") "X-A: caf\xc3\xa9\r\nX-B:\r\n"
             "X-C: \t \r\n\r\n"),
          DONE(.host = "example.com", .port = 80, .path = "/", .n_headers = 3) },
        { "CONNECT with Host", IN("CONNECT api.github.com:443 HTTP/1.1\r\nHost: api.github.com:443\r\n\r\n"),
          DONE(.connect = true, .host = "api.github.com", .port = 443, .n_headers = 1) },
        { "CONNECT with Host without its port",
          IN("CONNECT API.github.com:443 HTTP/1.1\r\nHost: api.github.com\r\n\r\n"),
          DONE(.connect = true, .host = "api.github.com", .port = 443, .n_headers = 1) },
        { "CONNECT HTTP/1.0 without Host, tunnel bytes after the head",
          IN("CONNECT a.example:22 HTTP/1.0\r\n\r\n\x16\x03\x01\0\r\n"),
          DONE(.connect = true, .host = "a.example", .port = 22, .tail = 6) },
        { "CONNECT Content-Length 0 is a head like any other",
          IN("CONNECT a.example:443 HTTP/1.1\r\nContent-Length: 0\r\n\r\n"),
          DONE(.connect = true, .host = "a.example", .port = 443, .n_headers = 1) },

        /* ---- not complete yet ---- */
        { "more: nothing", IN(""), MORE },
        { "more: half a request line", IN("GET http://exa"), MORE },
        { "more: a CR at the end", IN("CONNECT a.example:443 HTTP/1.1\r"), MORE },
        { "more: a request line", IN(GET("http://example.com/")), MORE },
        { "more: a header line", IN(GET("http://example.com/") "Host: example.com\r\n"), MORE },
        { "more: the last CR", IN(GET("http://example.com/") "Host: example.com\r\n\r"), MORE },

        /* ---- the caps ---- */
        { "too long a request line", IN(GET("http://example.com/abcdef") "\r\n"),
          NO(LINE_TOO_LONG), .max_line = 16 },
        { "too long a line before its end arrives", IN("GET http://example.com/aaaaaaaaaaaaaaaaaaa"),
          NO(LINE_TOO_LONG),
          .max_line = 16 },
        { "too long a header line", IN(GET("http://a.example/") "X-Long: 0123456789abcdef0123456\r\n\r\n"),
          NO(LINE_TOO_LONG), .max_line = 30 },
        { "too many headers", IN(GET("http://a.example/") "A: 1\r\nB: 2\r\nC: 3\r\n\r\n"),
          NO(TOO_MANY_HEADERS),
          .max_headers = 2 },
        { "no headers allowed", IN(GET("http://a.example/") "A: 1\r\n\r\n"),
          NO(TOO_MANY_HEADERS), .max_headers = 0 },
        { "too large a head", IN(GET("http://a.example/") "A: 1\r\nB: 2\r\n\r\n"),
          NO(TOO_LARGE), .max_head = 40 },
        { "too large a head before its end arrives", IN(GET("http://a.example/") "A: 1\r\nB: 2\r\nC: 3"),
          NO(TOO_LARGE), .max_head = 40 },

        /* ---- bytes no head has ---- */
        { "NUL in the request line", IN("GET http://a.example/\0 HTTP/1.1\r\n\r\n"), NO(NUL) },
        { "NUL in the Host header", IN(GET("http://a.example/") "Host: a.example\0.evil.example\r\n\r\n"),
          NO(NUL) },
        { "NUL before the line ends", IN("GET\0"), NO(NUL) },
        { "bare CR in a header", IN(GET("http://a.example/") "X: a\rb\r\n\r\n"), NO(BARE_CR) },
        { "bare CR before CRLF", IN("GET http://a.example/ HTTP/1.1\r\r\n\r\n"), NO(BARE_CR) },
        { "bare LF line ends", IN("GET http://a.example/ HTTP/1.1\n\n"), NO(BARE_LF) },
        { "bare LF after a header", IN(GET("http://a.example/") "Host: a.example\n\r\n"), NO(BARE_LF) },

        /* ---- the request line ---- */
        { "empty line before the request line", IN("\r\n" GET("http://a.example/") "\r\n"),
          NO(BAD_REQUEST_LINE) },
        { "two spaces after the method", IN("GET  http://a.example/ HTTP/1.1\r\n\r\n"),
          NO(BAD_REQUEST_LINE) },
        { "no version", IN("GET http://a.example/\r\n\r\n"), NO(BAD_REQUEST_LINE) },
        { "a fourth part", IN("GET http://a.example/ HTTP/1.1 x\r\n\r\n"), NO(BAD_REQUEST_LINE) },
        { "a trailing space", IN("GET http://a.example/ HTTP/1.1 \r\n\r\n"), NO(BAD_REQUEST_LINE) },
        { "method with a tab", IN("GE\tT http://a.example/ HTTP/1.1\r\n\r\n"), NO(BAD_METHOD) },
        { "method with a parenthesis", IN("G(ET http://a.example/ HTTP/1.1\r\n\r\n"), NO(BAD_METHOD) },
        { "method not ASCII", IN("G\xc3\x89T http://a.example/ HTTP/1.1\r\n\r\n"), NO(BAD_METHOD) },
        { "empty method", IN(" http://a.example/ HTTP/1.1\r\n\r\n"), NO(BAD_METHOD) },
        { "HTTP/2.0", IN("GET http://a.example/ HTTP/2.0\r\n\r\n"), NO(BAD_VERSION) },
        { "HTTP/1.2", IN("GET http://a.example/ HTTP/1.2\r\n\r\n"), NO(BAD_VERSION) },
        { "HTTP/1.10", IN("GET http://a.example/ HTTP/1.10\r\n\r\n"), NO(BAD_VERSION) },
        { "http/1.1 in lower case", IN("GET http://a.example/ http/1.1\r\n\r\n"), NO(BAD_VERSION) },
        { "HTTP/2 preface", IN("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), NO(BAD_VERSION) },
        { "origin form", IN(GET("/") "Host: a.example\r\n\r\n"), NO(BAD_TARGET) },
        { "asterisk form", IN("OPTIONS * HTTP/1.1\r\n\r\n"), NO(BAD_TARGET) },
        { "empty target", IN("GET  HTTP/1.1\r\n\r\n"), NO(BAD_TARGET) },
        { "a bare host for GET", IN(GET("a.example") "\r\n"), NO(BAD_TARGET) },
        { "fragment", IN(GET("http://a.example/#x") "\r\n"), NO(BAD_TARGET) },
        { "obs-text in the target", IN(GET("http://a.example/caf\xc3\xa9") "\r\n"), NO(BAD_TARGET) },
        { "DEL in the target", IN(GET("http://a.example/\x7f") "\r\n"), NO(BAD_TARGET) },
        { "http: without //", IN(GET("http:a.example/") "\r\n"), NO(BAD_TARGET) },
        { "http:/ with one slash", IN(GET("http:/a.example/") "\r\n"), NO(BAD_TARGET) },
        { "https in the request line (no CONNECT)", IN(GET("https://api.github.com/") "\r\n"),
          NO(UNSUPPORTED_SCHEME) },
        { "HTTPS in upper case", IN(GET("HTTPS://api.github.com/") "\r\n"), NO(UNSUPPORTED_SCHEME) },
        { "ftp", IN(GET("ftp://a.example/") "\r\n"), NO(UNSUPPORTED_SCHEME) },
        { "connect in lower case is no CONNECT", IN("connect a.example:443 HTTP/1.1\r\n\r\n"),
          NO(UNSUPPORTED_SCHEME) },
        { "userinfo user:pass@", IN(GET("http://user:pass@a.example/") "\r\n"), NO(USERINFO) },
        { "userinfo hiding the host", IN(GET("http://a.example@evil.example/") "\r\n"), NO(USERINFO) },
        { "userinfo in CONNECT", IN("CONNECT user@a.example:443 HTTP/1.1\r\n\r\n"), NO(USERINFO) },

        /* ---- the target's host and port ---- */
        { "CONNECT 127.0.0.1:443", IN("CONNECT 127.0.0.1:443 HTTP/1.1\r\n\r\n"),
          NOHOST(BAD_HOST, IP_LITERAL) },
        { "CONNECT [::1]:443", IN("CONNECT [::1]:443 HTTP/1.1\r\n\r\n"), NOHOST(BAD_HOST, IP_LITERAL) },
        { "CONNECT ::1:443", IN("CONNECT ::1:443 HTTP/1.1\r\n\r\n"), NOHOST(BAD_HOST, IP_LITERAL) },
        { "CONNECT 169.254.169.254:80", IN("CONNECT 169.254.169.254:80 HTTP/1.1\r\n\r\n"),
          NOHOST(BAD_HOST, IP_LITERAL) },
        { "absolute http://[::1]/", IN(GET("http://[::1]/") "\r\n"), NOHOST(BAD_HOST, IP_LITERAL) },
        { "absolute http://127.1/", IN(GET("http://127.1/") "\r\n"), NOHOST(BAD_HOST, IP_LITERAL) },
        { "absolute http://0x7f.1/", IN(GET("http://0x7f.1/") "\r\n"), NOHOST(BAD_HOST, IP_LITERAL) },
        { "absolute http://2130706433/", IN(GET("http://2130706433/") "\r\n"), NOHOST(BAD_HOST, IP_LITERAL) },
        { "absolute percent-encoded host", IN(GET("http://%61pi.github.com/") "\r\n"),
          NOHOST(BAD_HOST, BAD_CHARACTER) },
        { "absolute host with underscore", IN(GET("http://a_b.example/") "\r\n"),
          NOHOST(BAD_HOST, BAD_CHARACTER) },
        { "absolute wildcard host", IN(GET("http://*.github.com/") "\r\n"), NOHOST(BAD_HOST, BAD_WILDCARD) },
        { "absolute empty host", IN(GET("http:///etc/passwd") "\r\n"), NOHOST(BAD_HOST, EMPTY) },
        { "absolute empty label", IN(GET("http://a..example/") "\r\n"), NOHOST(BAD_HOST, EMPTY_LABEL) },
        { "absolute overlong label",
          IN(GET("http://aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.example/") "\r\n"),
          NOHOST(BAD_HOST, LABEL_TOO_LONG) },
        { "CONNECT empty host", IN("CONNECT :443 HTTP/1.1\r\n\r\n"), NOHOST(BAD_HOST, EMPTY) },
        { "CONNECT api.github.com:0", IN("CONNECT api.github.com:0 HTTP/1.1\r\n\r\n"), NO(BAD_PORT) },
        { "CONNECT without a port", IN("CONNECT api.github.com HTTP/1.1\r\n\r\n"), NO(BAD_PORT) },
        { "CONNECT port 65536", IN("CONNECT api.github.com:65536 HTTP/1.1\r\n\r\n"), NO(BAD_PORT) },
        { "CONNECT port +443", IN("CONNECT api.github.com:+443 HTTP/1.1\r\n\r\n"), NO(BAD_PORT) },
        { "absolute http://host:080/", IN(GET("http://a.example:080/") "\r\n"), NO(BAD_PORT) },
        { "absolute empty port", IN(GET("http://a.example:/") "\r\n"), NO(BAD_PORT) },

        /* ---- headers ---- */
        { "obs-fold with a space", IN(GET("http://a.example/") "X: a\r\n b\r\n\r\n"), NO(OBS_FOLD) },
        { "obs-fold with a tab", IN(GET("http://a.example/") "X: a\r\n\tb\r\n\r\n"), NO(OBS_FOLD) },
        { "space before the colon", IN(GET("http://a.example/") "Host : a.example\r\n\r\n"),
          NO(BAD_HEADER_NAME) },
        { "no colon", IN(GET("http://a.example/") "NoColon\r\n\r\n"), NO(BAD_HEADER_NAME) },
        { "empty name", IN(GET("http://a.example/") ": value\r\n\r\n"), NO(BAD_HEADER_NAME) },
        { "space in the name", IN(GET("http://a.example/") "X Y: z\r\n\r\n"), NO(BAD_HEADER_NAME) },
        { "name not ASCII", IN(GET("http://a.example/") "\xc3\x9c: x\r\n\r\n"), NO(BAD_HEADER_NAME) },
        { "control character in a value", IN(GET("http://a.example/") "X: a\x01z\r\n\r\n"),
          NO(BAD_HEADER_VALUE) },
        { "DEL in a value", IN(GET("http://a.example/") "X: \x7f\r\n\r\n"), NO(BAD_HEADER_VALUE) },
        { "Host with spaces", IN(GET("http://a.example/") "Host: a.example evil.example\r\n\r\n"),
          NOHOST(BAD_HOST_HEADER, BAD_CHARACTER) },
        { "Host an IP address", IN(GET("http://a.example/") "Host: 127.0.0.1\r\n\r\n"),
          NOHOST(BAD_HOST_HEADER, IP_LITERAL) },
        { "Host empty", IN(GET("http://a.example/") "Host:\r\n\r\n"), NOHOST(BAD_HOST_HEADER, EMPTY) },
        { "Host port 080", IN(GET("http://a.example/") "Host: a.example:080\r\n\r\n"),
          NOHOST(BAD_HOST_HEADER, BAD_PORT) },
        { "Host with userinfo", IN(GET("http://a.example/") "Host: u@a.example\r\n\r\n"),
          NOHOST(BAD_HOST_HEADER, BAD_CHARACTER) },
        { "Host twice, the same", IN(GET("http://a.example/") "Host: a.example\r\nhost: a.example\r\n\r\n"),
          NO(DUPLICATE_HOST) },
        { "Host another host", IN(GET("http://a.example/") "Host: b.example\r\n\r\n"), NO(HOST_MISMATCH) },
        { "Host without the URI's port", IN(GET("http://a.example:8080/") "Host: a.example\r\n\r\n"),
          NO(HOST_MISMATCH) },
        { "Host another port", IN(GET("http://a.example/") "Host: a.example:8080\r\n\r\n"),
          NO(HOST_MISMATCH) },
        { "Host a subdomain", IN(GET("http://a.example/") "Host: x.a.example\r\n\r\n"), NO(HOST_MISMATCH) },
        { "CONNECT Host another host", IN("CONNECT a.example:443 HTTP/1.1\r\nHost: b.example:443\r\n\r\n"),
          NO(HOST_MISMATCH) },
        { "CONNECT Host another port", IN("CONNECT a.example:443 HTTP/1.1\r\nHost: a.example:8443\r\n\r\n"),
          NO(HOST_MISMATCH) },

        /* ---- request smuggling ---- */
        { "Content-Length negative", IN(GET("http://a.example/") "Content-Length: -1\r\n\r\n"),
          NO(BAD_CONTENT_LENGTH) },
        { "Content-Length with a sign", IN(GET("http://a.example/") "Content-Length: +5\r\n\r\n"),
          NO(BAD_CONTENT_LENGTH) },
        { "Content-Length not a number", IN(GET("http://a.example/") "Content-Length: abc\r\n\r\n"),
          NO(BAD_CONTENT_LENGTH) },
        { "Content-Length empty", IN(GET("http://a.example/") "Content-Length:\r\n\r\n"),
          NO(BAD_CONTENT_LENGTH) },
        { "Content-Length two numbers", IN(GET("http://a.example/") "Content-Length: 1 2\r\n\r\n"),
          NO(BAD_CONTENT_LENGTH) },
        { "Content-Length trailing comma", IN(GET("http://a.example/") "Content-Length: 5,\r\n\r\n"),
          NO(BAD_CONTENT_LENGTH) },
        { "Content-Length 16 digits", IN(GET("http://a.example/") "Content-Length: 1000000000000000\r\n\r\n"),
          NO(BAD_CONTENT_LENGTH) },
        { "Content-Length hex", IN(GET("http://a.example/") "Content-Length: 0x10\r\n\r\n"),
          NO(BAD_CONTENT_LENGTH) },
        { "Content-Length twice, different",
          IN(GET("http://a.example/") "Content-Length: 5\r\nContent-Length: 6\r\n\r\n"),
          NO(CONFLICTING_CONTENT_LENGTH) },
        { "Content-Length list, different", IN(GET("http://a.example/") "Content-Length: 5, 6\r\n\r\n"),
          NO(CONFLICTING_CONTENT_LENGTH) },
        { "Content-Length and Transfer-Encoding",
          IN(GET("http://a.example/") "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"),
          NO(CONTENT_LENGTH_AND_TRANSFER_ENCODING) },
        { "Transfer-Encoding and Content-Length",
          IN(GET("http://a.example/") "Transfer-Encoding: chunked\r\nContent-Length: 0\r\n\r\n"),
          NO(CONTENT_LENGTH_AND_TRANSFER_ENCODING) },
        { "Transfer-Encoding gzip", IN(GET("http://a.example/") "Transfer-Encoding: gzip\r\n\r\n"),
          NO(BAD_TRANSFER_ENCODING) },
        { "Transfer-Encoding gzip, chunked",
          IN(GET("http://a.example/") "Transfer-Encoding: gzip, chunked\r\n\r\n"),
          NO(BAD_TRANSFER_ENCODING) },
        { "Transfer-Encoding chunked, chunked",
          IN(GET("http://a.example/") "Transfer-Encoding: chunked, chunked\r\n\r\n"),
          NO(BAD_TRANSFER_ENCODING) },
        { "Transfer-Encoding twice",
          IN(GET("http://a.example/") "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n"),
          NO(BAD_TRANSFER_ENCODING) },
        { "Transfer-Encoding xchunked", IN(GET("http://a.example/") "Transfer-Encoding: xchunked\r\n\r\n"),
          NO(BAD_TRANSFER_ENCODING) },
        { "Transfer-Encoding in HTTP/1.0",
          IN("POST http://a.example/ HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n"),
          NO(BAD_TRANSFER_ENCODING) },
};

static const char *span_str(HttpSpan s, char *buf, size_t size) {
        snprintf(buf, size, "%.*s", (int) s.n, s.p);
        return buf;
}

static void test_head_row(void **state) {
        const HeadRow *row = *state;
        HttpHeadLimits limits = default_limits;
        HttpHeadError error = { _HTTP_HEAD_REASON_MAX, _ALLOWLIST_REASON_MAX };
        _cleanup_free_ char *buf = malloc(row->len ? row->len : 1);
        _cleanup_free_ HttpHead *h = malloc(sizeof(HttpHead));
        char got[256];
        int r;

        assert_non_null(buf);
        assert_non_null(h);
        memcpy(buf, row->input, row->len);
        memset(h, 0x5a, sizeof(HttpHead));
        if (row->max_head)
                limits.max_head = row->max_head;
        if (row->max_line)
                limits.max_line = row->max_line;
        /* Only the rows of TOO_MANY_HEADERS name a header cap (0 included). */
        if (row->ret == -EBADMSG && row->reason == HTTP_HEAD_TOO_MANY_HEADERS)
                limits.max_headers = row->max_headers;

        r = http_head_parse(buf, row->len, &limits, h, &error);
        if (r != row->ret ||
            (r == -EBADMSG && (error.reason != row->reason || error.host != row->host_reason))) {
                print_error("returned %d (%s, host: %s), expected %d (%s, host: %s)\n", r,
                            r == -EBADMSG ? http_head_reason_to_string(error.reason) : "-",
                            r == -EBADMSG ? allowlist_reason_to_string(error.host) : "-", row->ret,
                            http_head_reason_to_string(row->reason),
                            allowlist_reason_to_string(row->host_reason));
                fail();
        }
        if (r != -EBADMSG)
                /* *ret_error is written only with a refusal. */
                assert_int_equal(error.reason, _HTTP_HEAD_REASON_MAX);
        if (r != 1) {
                /* *ret is written only with a complete head. */
                assert_int_equal(h->n_headers, (size_t) 0x5a5a5a5a5a5a5a5a);
                return;
        }
        assert_int_equal(h->connect, row->connect);
        assert_string_equal(h->host, row->host);
        assert_int_equal(h->port, row->port);
        assert_int_equal(h->head_len, row->len - row->tail);
        assert_int_equal(h->n_headers, row->n_headers);
        assert_ptr_equal(h->method.p, buf);
        if (!row->connect) {
                assert_string_equal(span_str(h->path, got, sizeof(got)), row->path);
                assert_int_equal(h->has_query, !!row->query);
                if (row->query)
                        assert_string_equal(span_str(h->query, got, sizeof(got)), row->query);
        }
}

/* ---- properties ------------------------------------------------------------------------------- */

/* Every proper prefix of a valid head is "more bytes", never a refusal nor a head; the whole is one. */
static void test_prefixes(_unused_ void **state) {
        for (size_t k = 0; k < ELEMENTSOF(head_rows); k++) {
                const HeadRow *row = head_rows + k;
                size_t head = row->len - row->tail;

                if (row->ret != 1)
                        continue;
                for (size_t n = 0; n <= head; n++) {
                        _cleanup_free_ char *buf = malloc(n ? n : 1);
                        HttpHead h;
                        int r;

                        assert_non_null(buf);
                        memcpy(buf, row->input, n);
                        r = http_head_parse(buf, n, &default_limits, &h, NULL);
                        if (r != (n == head ? 1 : 0)) {
                                print_error("%s: %zu of %zu bytes: %d\n", row->name, n, head, r);
                                fail();
                        }
                }
        }
}

/* The caps hold exactly: a head of max_head bytes, a line of max_line, max_headers headers parse; one
 * more of each is refused. */
static void test_cap_boundaries(_unused_ void **state) {
        static const char head[] = "GET http://a.example/ HTTP/1.1\r\nA: 1\r\nB: 2\r\n\r\n";
        const size_t len = sizeof(head) - 1, line = strlen("GET http://a.example/ HTTP/1.1");
        HttpHeadLimits l = default_limits;
        HttpHeadError e;
        HttpHead h;

        l.max_head = len;
        assert_int_equal(http_head_parse(head, len, &l, &h, &e), 1);
        l.max_head = len - 1;
        assert_int_equal(http_head_parse(head, len, &l, &h, &e), -EBADMSG);
        assert_int_equal(e.reason, HTTP_HEAD_TOO_LARGE);
        /* ... also when the last byte has not arrived yet. */
        assert_int_equal(http_head_parse(head, len - 1, &l, &h, &e), -EBADMSG);
        assert_int_equal(e.reason, HTTP_HEAD_TOO_LARGE);
        /* Mid-line: max_head bytes that do not end the head can never be one within the cap, so they
         * are refused as they arrive; one byte fewer is still "more". */
        l.max_head = line + 2 + 1;
        assert_int_equal(http_head_parse(head, line + 2 + 1, &l, &h, &e), -EBADMSG);
        assert_int_equal(e.reason, HTTP_HEAD_TOO_LARGE);
        l.max_head = line + 2 + 2;
        assert_int_equal(http_head_parse(head, line + 2 + 1, &l, &h, &e), 0);
        l = default_limits;

        l.max_line = line;
        assert_int_equal(http_head_parse(head, len, &l, &h, &e), 1);
        l.max_line = line - 1;
        assert_int_equal(http_head_parse(head, len, &l, &h, &e), -EBADMSG);
        assert_int_equal(e.reason, HTTP_HEAD_LINE_TOO_LONG);
        l = default_limits;

        l.max_headers = 2;
        assert_int_equal(http_head_parse(head, len, &l, &h, &e), 1);
        assert_int_equal(h.n_headers, 2);
        l.max_headers = 1;
        assert_int_equal(http_head_parse(head, len, &l, &h, &e), -EBADMSG);
        assert_int_equal(e.reason, HTTP_HEAD_TOO_MANY_HEADERS);
        l.max_headers = HTTP_HEAD_HEADERS_MAX;
        assert_int_equal(http_head_parse(head, len, &l, &h, &e), 1);
}

static void test_limits_refused(_unused_ void **state) {
        static const char head[] = "GET http://a.example/ HTTP/1.1\r\n\r\n";
        HttpHeadLimits l;
        HttpHead h;

        l = default_limits, l.max_head = 0;
        assert_int_equal(http_head_parse(head, sizeof(head) - 1, &l, &h, NULL), -EINVAL);
        l = default_limits, l.max_line = 0;
        assert_int_equal(http_head_parse(head, sizeof(head) - 1, &l, &h, NULL), -EINVAL);
        l = default_limits, l.max_headers = HTTP_HEAD_HEADERS_MAX + 1;
        assert_int_equal(http_head_parse(head, sizeof(head) - 1, &l, &h, NULL), -EINVAL);
        assert_int_equal(http_head_parse(head, sizeof(head) - 1, NULL, &h, NULL), -EINVAL);
        assert_int_equal(http_head_parse(NULL, 1, &default_limits, &h, NULL), -EINVAL);
        assert_int_equal(http_head_parse(NULL, 0, &default_limits, &h, NULL), 0);
}

/* The headers as spans into the buffer, found by name in any case. */
static void test_header_lookup(_unused_ void **state) {
        static const char head[] = "CONNECT a.example:443 HTTP/1.1\r\nHost: a.example:443\r\n"
                                   "Proxy-Authorization:  Basic eA== \t\r\nUser-Agent: curl/8\r\n\r\n";
        const HttpHeader *x;
        HttpHead h;
        char got[64];

        assert_int_equal(http_head_parse(head, sizeof(head) - 1, &default_limits, &h, NULL), 1);
        x = http_head_header(&h, "proxy-authorization");
        assert_non_null(x);
        assert_string_equal(span_str(x->name, got, sizeof(got)), "Proxy-Authorization");
        assert_string_equal(span_str(x->value, got, sizeof(got)), "Basic eA==");
        assert_true(x->value.p > head && x->value.p < head + sizeof(head));
        assert_ptr_equal(http_head_header(&h, "HOST"), h.headers);
        assert_null(http_head_header(&h, "Cookie"));
        assert_string_equal(span_str(h.target, got, sizeof(got)), "a.example:443");
        assert_string_equal(span_str(h.method, got, sizeof(got)), "CONNECT");
        assert_int_equal(h.version_minor, 1);
}

/* Every reason is reached by a row, and has a name. */
static void test_reasons(_unused_ void **state) {
        bool seen[_HTTP_HEAD_REASON_MAX] = {};

        seen[HTTP_HEAD_OK] = true;
        for (size_t i = 0; i < ELEMENTSOF(head_rows); i++)
                if (head_rows[i].ret == -EBADMSG)
                        seen[head_rows[i].reason] = true;
        for (HttpHeadReason r = 0; r < _HTTP_HEAD_REASON_MAX; r++) {
                assert_non_null(http_head_reason_to_string(r));
                if (!seen[r]) {
                        print_error("no row reaches %s\n", http_head_reason_to_string(r));
                        fail();
                }
        }
        assert_null(http_head_reason_to_string(_HTTP_HEAD_REASON_MAX));
}

int main(void) {
        size_t n = ELEMENTSOF(head_rows) + 8, i = 0;
        _cleanup_free_ struct CMUnitTest *tests = calloc(n, sizeof(struct CMUnitTest));

        if (!tests)
                return EXIT_FAILURE;
        for (size_t k = 0; k < ELEMENTSOF(head_rows); k++)
                tests[i++] = (struct CMUnitTest) { head_rows[k].name, test_head_row, NULL, NULL,
                                                   (void *) &head_rows[k] };
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_prefixes);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_cap_boundaries);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_limits_refused);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_header_lookup);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_reasons);
        if (i > n)
                abort();
        return _cmocka_run_group_tests("http-head", tests, i, NULL, NULL);
}

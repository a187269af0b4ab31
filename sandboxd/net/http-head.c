/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <string.h>
#include <strings.h>

#include "http-head.h"
#include "string-table.h"

static const char *const http_head_reason_table[_HTTP_HEAD_REASON_MAX] = {
        [HTTP_HEAD_OK] = "ok",
        [HTTP_HEAD_LINE_TOO_LONG] = "line too long",
        [HTTP_HEAD_TOO_MANY_HEADERS] = "too many headers",
        [HTTP_HEAD_TOO_LARGE] = "request head too large",
        [HTTP_HEAD_NUL] = "NUL byte in the request head",
        [HTTP_HEAD_BARE_CR] = "CR without LF in the request head",
        [HTTP_HEAD_BARE_LF] = "LF without CR in the request head",
        [HTTP_HEAD_BAD_REQUEST_LINE] = "request line is not METHOD TARGET VERSION",
        [HTTP_HEAD_BAD_METHOD] = "method is not a token",
        [HTTP_HEAD_BAD_TARGET] = "request target is neither CONNECT's host:port nor an absolute http URI",
        [HTTP_HEAD_UNSUPPORTED_SCHEME] = "scheme other than http (https goes through CONNECT)",
        [HTTP_HEAD_USERINFO] = "user information in the request target",
        [HTTP_HEAD_BAD_HOST] = "bad host in the request target",
        [HTTP_HEAD_BAD_PORT] = "bad or missing port in the request target",
        [HTTP_HEAD_BAD_VERSION] = "version other than HTTP/1.0 or HTTP/1.1",
        [HTTP_HEAD_OBS_FOLD] = "header continuation line (obs-fold)",
        [HTTP_HEAD_BAD_HEADER_NAME] = "bad header name",
        [HTTP_HEAD_BAD_HEADER_VALUE] = "control character in a header value",
        [HTTP_HEAD_BAD_HOST_HEADER] = "bad Host header",
        [HTTP_HEAD_DUPLICATE_HOST] = "more than one Host header",
        [HTTP_HEAD_HOST_MISMATCH] = "Host header differs from the request target",
        [HTTP_HEAD_BAD_CONTENT_LENGTH] = "bad Content-Length",
        [HTTP_HEAD_CONFLICTING_CONTENT_LENGTH] = "Content-Length values differ",
        [HTTP_HEAD_CONTENT_LENGTH_AND_TRANSFER_ENCODING] = "both Content-Length and Transfer-Encoding",
        [HTTP_HEAD_BAD_TRANSFER_ENCODING] = "Transfer-Encoding other than chunked",
};

DEFINE_STRING_TABLE_LOOKUP_TO_STRING(http_head_reason, HttpHeadReason);

/* 15 digits: a petabyte, more than any cap the proxy will have, and far from overflowing. */
#define CONTENT_LENGTH_DIGITS_MAX 15

static bool is_digit(char c) {
        return c >= '0' && c <= '9';
}

static bool is_alpha(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* RFC 9110 §5.6.2 */
static bool is_tchar(char c) {
        return is_digit(c) || is_alpha(c) || (c && strchr("!#$%&'*+-.^_`|~", c));
}

static bool is_token(const char *s, size_t n) {
        if (n == 0)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!is_tchar(s[i]))
                        return false;
        return true;
}

static bool span_eq(const char *s, size_t n, const char *lit) {
        return strlen(lit) == n && memcmp(s, lit, n) == 0;
}

static bool span_caseeq(const char *s, size_t n, const char *lit) {
        return strlen(lit) == n && strncasecmp(s, lit, n) == 0;
}

typedef struct Parser {
        HttpHead h;
        HttpHeadError error;
        bool have_host;
        char host[ALLOWLIST_NAME_MAX + 1];
        uint16_t host_port;              /* 0: the Host header names no port */
        unsigned n_transfer_encoding;
} Parser;

static int refuse(Parser *p, HttpHeadReason r) {
        p->error.reason = r;
        return -EBADMSG;
}

/* The line at pos: its end (the CR) in *ret_end and the next line's start in *ret_next; 0 and
 * *ret_more when the buffer ends first; -EBADMSG for a byte or a length the head may not have. */
static int next_line(Parser *p, const char *s, size_t n, size_t pos, const HttpHeadLimits *limits,
                     size_t *ret_end, size_t *ret_next, bool *ret_more) {
        for (size_t i = pos;; i++) {
                if (i >= limits->max_head)
                        return refuse(p, HTTP_HEAD_TOO_LARGE);
                if (i >= n) {
                        *ret_more = true;
                        return 0;
                }
                switch (s[i]) {
                case '\r':
                        if (i + 1 >= limits->max_head)
                                return refuse(p, HTTP_HEAD_TOO_LARGE);
                        if (i + 1 >= n) {
                                *ret_more = true;
                                return 0;
                        }
                        if (s[i + 1] != '\n')
                                return refuse(p, HTTP_HEAD_BARE_CR);
                        *ret_end = i;
                        *ret_next = i + 2;
                        return 0;
                case '\n':
                        return refuse(p, HTTP_HEAD_BARE_LF);
                case '\0':
                        return refuse(p, HTTP_HEAD_NUL);
                }
                if (i - pos >= limits->max_line)
                        return refuse(p, HTTP_HEAD_LINE_TOO_LONG);
        }
}

/* "host[:port]" (CONNECT's target, the absolute URI's authority, a Host header's value): the host
 * through allowlist_host_check(), the port through allowlist_port_parse(); without a port, *ret_port
 * is default_port, and for a default_port of 0 a missing port is refused. in_header: a Host header's
 * value, whose every failure is HTTP_HEAD_BAD_HOST_HEADER. */
static int authority_parse(Parser *p, const char *s, size_t n, uint16_t default_port, bool in_header,
                           char ret_host[static ALLOWLIST_NAME_MAX + 1], uint16_t *ret_port) {
        const char *colon;
        AllowlistReason r;
        size_t host_n;

        if (memchr(s, '@', n)) {
                if (!in_header)
                        return refuse(p, HTTP_HEAD_USERINFO);
                p->error.host = ALLOWLIST_BAD_CHARACTER;
                return refuse(p, HTTP_HEAD_BAD_HOST_HEADER);
        }
        /* The last colon separates the port; a colon before it is in the host, an IPv6 literal
         * (refused as one by allowlist_host_check()). Brackets are refused there too. */
        colon = memrchr(s, ':', n);
        host_n = colon ? (size_t) (colon - s) : n;
        r = allowlist_host_check(s, host_n, ret_host);
        if (r != ALLOWLIST_OK) {
                p->error.host = r;
                return refuse(p, in_header ? HTTP_HEAD_BAD_HOST_HEADER : HTTP_HEAD_BAD_HOST);
        }
        if (colon) {
                if (allowlist_port_parse(colon + 1, n - host_n - 1, ret_port) != ALLOWLIST_OK) {
                        if (!in_header)
                                return refuse(p, HTTP_HEAD_BAD_PORT);
                        p->error.host = ALLOWLIST_BAD_PORT;
                        return refuse(p, HTTP_HEAD_BAD_HOST_HEADER);
                }
        } else if (default_port == 0 && !in_header)
                return refuse(p, HTTP_HEAD_BAD_PORT);
        else
                *ret_port = default_port;
        return 0;
}

/* "http://authority[/path][?query]" */
static int absolute_parse(Parser *p, const char *s, size_t n) {
        HttpHead *h = &p->h;
        size_t i = 0, a, e;
        int r;

        /* RFC 3986 §3.1: scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) */
        while (i < n && (is_alpha(s[i]) || (i > 0 && (is_digit(s[i]) || (s[i] && strchr("+-.", s[i]))))))
                i++;
        if (i == 0 || i >= n || s[i] != ':')
                return refuse(p, HTTP_HEAD_BAD_TARGET);
        if (!span_caseeq(s, i, "http"))
                return refuse(p, HTTP_HEAD_UNSUPPORTED_SCHEME);
        if (n - i < 3 || s[i + 1] != '/' || s[i + 2] != '/')
                return refuse(p, HTTP_HEAD_BAD_TARGET);
        a = i + 3;
        for (e = a; e < n && s[e] != '/' && s[e] != '?'; e++)
                ;
        r = authority_parse(p, s + a, e - a, 80, false, h->host, &h->port);
        if (r < 0)
                return r;
        for (i = e; i < n && s[i] != '?'; i++)
                ;
        h->path = (HttpSpan) { s + e, i - e };
        if (i < n) {
                h->has_query = true;
                h->query = (HttpSpan) { s + i + 1, n - i - 1 };
        }
        return 0;
}

static int request_line(Parser *p, const char *s, size_t n) {
        HttpHead *h = &p->h;
        const char *sp1, *sp2;
        size_t m, t;

        sp1 = memchr(s, ' ', n);
        sp2 = sp1 ? memchr(sp1 + 1, ' ', n - (size_t) (sp1 + 1 - s)) : NULL;
        if (!sp2 || memchr(sp2 + 1, ' ', n - (size_t) (sp2 + 1 - s)))
                return refuse(p, HTTP_HEAD_BAD_REQUEST_LINE);
        m = (size_t) (sp1 - s);
        t = (size_t) (sp2 - sp1 - 1);
        if (!is_token(s, m))
                return refuse(p, HTTP_HEAD_BAD_METHOD);
        h->method = (HttpSpan) { s, m };
        /* RFC 9112 §2.3: case-sensitive. */
        if (span_eq(sp2 + 1, n - m - t - 2, "HTTP/1.1"))
                h->version_minor = 1;
        else if (span_eq(sp2 + 1, n - m - t - 2, "HTTP/1.0"))
                h->version_minor = 0;
        else
                return refuse(p, HTTP_HEAD_BAD_VERSION);

        /* RFC 9112 §3.2: no fragment, and nothing but visible ASCII (obs-text is not allowed in a URI). */
        if (t == 0)
                return refuse(p, HTTP_HEAD_BAD_TARGET);
        for (size_t i = 0; i < t; i++)
                if (sp1[1 + i] < 0x21 || sp1[1 + i] > 0x7e || sp1[1 + i] == '#')
                        return refuse(p, HTTP_HEAD_BAD_TARGET);
        h->target = (HttpSpan) { sp1 + 1, t };
        h->connect = span_eq(s, m, "CONNECT");
        if (h->connect)
                return authority_parse(p, sp1 + 1, t, 0, false, h->host, &h->port);
        return absolute_parse(p, sp1 + 1, t);
}

/* A Content-Length value: a number, or a list of the same number (RFC 9110 §8.6). */
static int content_length(Parser *p, const char *s, size_t n) {
        HttpHead *h = &p->h;
        size_t i = 0;

        for (;;) {
                uint64_t v = 0;
                size_t digits = 0;

                while (i < n && (s[i] == ' ' || s[i] == '\t'))
                        i++;
                for (; i < n && is_digit(s[i]); i++, digits++) {
                        if (digits >= CONTENT_LENGTH_DIGITS_MAX)
                                return refuse(p, HTTP_HEAD_BAD_CONTENT_LENGTH);
                        v = v * 10 + (uint64_t) (s[i] - '0');
                }
                if (digits == 0)
                        return refuse(p, HTTP_HEAD_BAD_CONTENT_LENGTH);
                if (h->has_content_length && h->content_length != v)
                        return refuse(p, HTTP_HEAD_CONFLICTING_CONTENT_LENGTH);
                h->has_content_length = true;
                h->content_length = v;
                while (i < n && (s[i] == ' ' || s[i] == '\t'))
                        i++;
                if (i == n)
                        return 0;
                if (s[i] != ',')
                        return refuse(p, HTTP_HEAD_BAD_CONTENT_LENGTH);
                i++;
        }
}

static int header_line(Parser *p, const char *s, size_t n, const HttpHeadLimits *limits) {
        HttpHead *h = &p->h;
        const char *colon;
        size_t name_n, v, e;

        /* RFC 9112 §5.2: a proxy must refuse obs-fold or replace it; refusing needs no rewriting. */
        if (s[0] == ' ' || s[0] == '\t')
                return refuse(p, HTTP_HEAD_OBS_FOLD);
        colon = memchr(s, ':', n);
        if (!colon)
                return refuse(p, HTTP_HEAD_BAD_HEADER_NAME);
        name_n = (size_t) (colon - s);
        /* Also "Host : x" (RFC 9112 §5.1: a space before the colon must be refused). */
        if (!is_token(s, name_n))
                return refuse(p, HTTP_HEAD_BAD_HEADER_NAME);
        for (v = name_n + 1; v < n && (s[v] == ' ' || s[v] == '\t'); v++)
                ;
        for (e = n; e > v && (s[e - 1] == ' ' || s[e - 1] == '\t'); e--)
                ;
        /* RFC 9110 §5.5: VCHAR, obs-text, SP and HTAB. NUL and CR were refused already. */
        for (size_t i = v; i < e; i++) {
                unsigned char c = (unsigned char) s[i];

                if ((c < 0x20 && c != '\t') || c == 0x7f)
                        return refuse(p, HTTP_HEAD_BAD_HEADER_VALUE);
        }
        if (h->n_headers >= limits->max_headers)
                return refuse(p, HTTP_HEAD_TOO_MANY_HEADERS);
        h->headers[h->n_headers++] = (HttpHeader) { { s, name_n }, { s + v, e - v } };

        if (span_caseeq(s, name_n, "Host")) {
                if (p->have_host)
                        return refuse(p, HTTP_HEAD_DUPLICATE_HOST);
                p->have_host = true;
                return authority_parse(p, s + v, e - v, 0, true, p->host, &p->host_port);
        }
        if (span_caseeq(s, name_n, "Content-Length"))
                return content_length(p, s + v, e - v);
        if (span_caseeq(s, name_n, "Transfer-Encoding")) {
                /* One coding the proxy can frame, once: "gzip, chunked", "chunked, chunked" or a second
                 * header are read differently by different servers. HTTP/1.0 has no
                 * Transfer-Encoding (RFC 9112 §6.1: such a message is faulty). */
                if (++p->n_transfer_encoding > 1 || h->version_minor == 0 ||
                    !span_caseeq(s + v, e - v, "chunked"))
                        return refuse(p, HTTP_HEAD_BAD_TRANSFER_ENCODING);
                h->chunked = true;
        }
        return 0;
}

static int head_end(Parser *p) {
        HttpHead *h = &p->h;

        if (h->has_content_length && h->chunked)
                return refuse(p, HTTP_HEAD_CONTENT_LENGTH_AND_TRANSFER_ENCODING);
        if (p->have_host) {
                /* A Host header without a port means the scheme's default, 80, for the absolute form;
                 * for CONNECT it has no default (clients send "Host: host:443" or just the host). */
                uint16_t port = p->host_port != 0 ? p->host_port : h->connect ? h->port : 80;

                if (!streq(p->host, h->host) || port != h->port)
                        return refuse(p, HTTP_HEAD_HOST_MISMATCH);
        }
        return 0;
}

int http_head_parse(const void *buf, size_t n, const HttpHeadLimits *limits, HttpHead *ret,
                    HttpHeadError *ret_error) {
        const char *s = buf;
        Parser p = {};
        size_t pos = 0;

        if (!limits || limits->max_head == 0 || limits->max_line == 0 ||
            limits->max_headers > HTTP_HEAD_HEADERS_MAX || (!s && n > 0))
                return -EINVAL;

        for (size_t line = 0;; line++) {
                size_t end = 0, next = 0;
                bool more = false;
                int r;

                r = next_line(&p, s, n, pos, limits, &end, &next, &more);
                if (r >= 0 && more)
                        return 0;
                if (r >= 0) {
                        if (line == 0 && end == pos)
                                r = refuse(&p, HTTP_HEAD_BAD_REQUEST_LINE);
                        else if (line == 0)
                                r = request_line(&p, s + pos, end - pos);
                        else if (end == pos) {
                                r = head_end(&p);
                                if (r >= 0) {
                                        p.h.head_len = next;
                                        *ret = p.h;
                                        return 1;
                                }
                        } else
                                r = header_line(&p, s + pos, end - pos, limits);
                }
                if (r < 0) {
                        if (ret_error)
                                *ret_error = p.error;
                        return r;
                }
                pos = next;
        }
}

const HttpHeader *http_head_header(const HttpHead *h, const char *name) {
        for (size_t i = 0; i < h->n_headers; i++)
                if (span_caseeq(h->headers[i].name.p, h->headers[i].name.n, name))
                        return h->headers + i;
        return NULL;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "proxy-log.h"
#include "string-table.h"

static const char *const proxy_reason_table[_PROXY_REASON_MAX] = {
        [PROXY_REASON_NOT_ALLOWED] = "not in the allowlist",
        [PROXY_REASON_PORT_NOT_ALLOWED] = "port not allowed",
        [PROXY_REASON_INTERNAL_ADDRESS] = "internal address",
        [PROXY_REASON_NOT_RESOLVED] = "name did not resolve",
        [PROXY_REASON_CONNECT_FAILED] = "connect failed",
        [PROXY_REASON_CONNECT_TIMEOUT] = "connect timed out",
        [PROXY_REASON_BYTE_CAP] = "byte cap reached",
        [PROXY_REASON_CONNECTION_CAP] = "connection cap reached",
        [PROXY_REASON_IDLE_TIMEOUT] = "idle timeout",
        [PROXY_REASON_HEAD_TIMEOUT] = "head timeout",
        [PROXY_REASON_CHUNKED_BODY] = "chunked request body",
        [PROXY_REASON_BAD_REQUEST] = "bad request",
};

DEFINE_STRING_TABLE_LOOKUP_TO_STRING(proxy_reason, ProxyReason);

static const unsigned proxy_reason_status_table[_PROXY_REASON_MAX] = {
        [PROXY_REASON_NOT_ALLOWED] = 403,
        [PROXY_REASON_PORT_NOT_ALLOWED] = 403,
        [PROXY_REASON_INTERNAL_ADDRESS] = 403,
        [PROXY_REASON_NOT_RESOLVED] = 502,
        [PROXY_REASON_CONNECT_FAILED] = 502,
        [PROXY_REASON_CONNECT_TIMEOUT] = 504,
        [PROXY_REASON_BYTE_CAP] = 503,
        [PROXY_REASON_CONNECTION_CAP] = 503,
        [PROXY_REASON_HEAD_TIMEOUT] = 400,
        [PROXY_REASON_CHUNKED_BODY] = 411,
        [PROXY_REASON_BAD_REQUEST] = 400,
};

unsigned proxy_reason_status(ProxyReason r) {
        if (r < 0 || r >= _PROXY_REASON_MAX)
                return 0;
        return proxy_reason_status_table[r];
}

static const char *status_phrase(unsigned status) {
        switch (status) {
        case 400: return "Bad Request";
        case 403: return "Forbidden";
        case 411: return "Length Required";
        case 502: return "Bad Gateway";
        case 503: return "Service Unavailable";
        case 504: return "Gateway Timeout";
        default: return "Error";
        }
}

ssize_t proxy_reason_format(ProxyReason r, HttpHeadReason detail, char *buf, size_t n) {
        const char *s = proxy_reason_to_string(r);
        int k;

        if (n > 0)
                buf[0] = 0;
        if (!s)
                return -EINVAL;
        if (r == PROXY_REASON_BAD_REQUEST)
                k = snprintf(buf, n, "%s: %s", s, http_head_reason_to_string(detail) ?: "unknown");
        else
                k = snprintf(buf, n, "%s", s);
        if (k < 0)
                return -EINVAL;
        if ((size_t) k >= n)
                return -ENOBUFS;
        return k;
}

/* A bounded writer: everything past the end is dropped and remembered. */
typedef struct Out {
        char *p;
        size_t n, len;
        bool overflow;
} Out;

static void out_byte(Out *o, char c) {
        if (o->len + 1 >= o->n) {               /* keep room for the NUL */
                o->overflow = true;
                return;
        }
        o->p[o->len++] = c;
        o->p[o->len] = 0;
}

static void out_str(Out *o, const char *s) {
        for (; *s; s++)
                out_byte(o, *s);
}

/* s as a JSON string: at most max_in bytes of it, and no more of them than fit in max_out bytes once
 * escaped (the quotes not counted), so each field's share of the line is bounded whatever it holds. */
static void out_json_string(Out *o, const char *s, size_t max_in, size_t max_out) {
        static const char hex[] = "0123456789abcdef";
        size_t used = 0;

        out_byte(o, '"');
        for (size_t i = 0; s && s[i] && i < max_in; i++) {
                unsigned char c = (unsigned char) s[i];
                char esc[7];
                size_t k = 0;

                if (c == '"' || c == '\\') {
                        esc[k++] = '\\';
                        esc[k++] = (char) c;
                } else if (c < 0x20 || c >= 0x7f) {
                        memcpy(esc, "\\u00", 4);
                        k = 4;
                        esc[k++] = hex[c >> 4];
                        esc[k++] = hex[c & 15];
                } else
                        esc[k++] = (char) c;
                if (used + k > max_out)
                        break;
                used += k;
                for (size_t j = 0; j < k; j++)
                        out_byte(o, esc[j]);
        }
        out_byte(o, '"');
}

static void out_u64(Out *o, uint64_t v) {
        char b[24];

        snprintf(b, sizeof(b), "%" PRIu64, v);
        out_str(o, b);
}

ssize_t proxy_event_format(const ProxyEvent *e, char buf[static PROXY_EVENT_MAX + 1]) {
        char reason[256];
        Out o = { .p = buf, .n = PROXY_EVENT_MAX + 1 };

        buf[0] = 0;
        if (!e)
                return -EINVAL;
        if (e->reason != PROXY_REASON_NONE) {
                if (proxy_reason_format(e->reason, e->bad_request, reason, sizeof(reason)) < 0)
                        return -EINVAL;
                /* An allowed connection has a reason only when it was cut short. */
                if (e->allowed && e->reason != PROXY_REASON_BYTE_CAP && e->reason != PROXY_REASON_IDLE_TIMEOUT)
                        return -EINVAL;
        } else if (!e->allowed)
                return -EINVAL;

        out_str(&o, "{\"host\":");
        out_json_string(&o, e->host, ALLOWLIST_NAME_MAX, ALLOWLIST_NAME_MAX);
        out_str(&o, ",\"port\":");
        out_u64(&o, e->port);
        out_str(&o, ",\"method\":");
        out_json_string(&o, e->method, PROXY_METHOD_MAX, 6 * PROXY_METHOD_MAX);
        out_str(&o, e->allowed ? ",\"decision\":\"allowed\"" : ",\"decision\":\"denied\"");
        if (e->reason != PROXY_REASON_NONE) {
                out_str(&o, ",\"reason\":");
                out_json_string(&o, reason, sizeof(reason), sizeof(reason));
        }
        if (!isempty(e->address)) {
                out_str(&o, ",\"address\":");
                out_json_string(&o, e->address, 64, 64);
        }
        out_str(&o, ",\"bytes_up\":");
        out_u64(&o, e->bytes_up);
        out_str(&o, ",\"bytes_down\":");
        out_u64(&o, e->bytes_down);
        out_str(&o, ",\"started_at\":");
        out_u64(&o, e->started_at);
        out_str(&o, ",\"duration_ms\":");
        out_u64(&o, e->duration_ms);
        out_str(&o, "}\n");
        /* Every field's escaped form is capped above (host 253 bytes, method 16 bytes of 6, reason 256,
         * address 64, numbers 20 digits): the line stays below 1024 bytes, far from PROXY_EVENT_MAX. */
        if (o.overflow)
                return -ENOBUFS;
        return (ssize_t) o.len;
}

static bool host_byte(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
               c == '-';
}

ssize_t proxy_response_format(ProxyReason r, HttpHeadReason detail, const char *host, uint16_t port,
                              char buf[static PROXY_RESPONSE_MAX]) {
        char reason[256], body[512], safe[ALLOWLIST_NAME_MAX + 1];
        unsigned status = proxy_reason_status(r);
        size_t k = 0;
        int body_n, n;

        buf[0] = 0;
        if (status == 0 || proxy_reason_format(r, detail, reason, sizeof(reason)) < 0)
                return -EINVAL;
        for (size_t i = 0; host && host[i] && k < ALLOWLIST_NAME_MAX; i++)
                if (host_byte(host[i]))
                        safe[k++] = host[i];
        safe[k] = 0;
        body_n = snprintf(body, sizeof(body), "sandboxd-proxy: %s:%u: %s\n", safe, (unsigned) port, reason);
        if (body_n < 0 || (size_t) body_n >= sizeof(body))
                return -ENOBUFS;
        n = snprintf(buf, PROXY_RESPONSE_MAX,
                     "HTTP/1.1 %u %s\r\n"
                     "Content-Type: text/plain; charset=utf-8\r\n"
                     "Content-Length: %d\r\n"
                     "Connection: close\r\n"
                     "\r\n"
                     "%s",
                     status, status_phrase(status), body_n, body);
        if (n < 0 || n >= PROXY_RESPONSE_MAX)
                return -ENOBUFS;
        return n;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "net-frame.h"

#define REQUEST_FIXED 32U
#define DONE_FIXED 28U

static uint32_t get32(const uint8_t *p) {
        return (uint32_t) p[0] | (uint32_t) p[1] << 8 | (uint32_t) p[2] << 16 | (uint32_t) p[3] << 24;
}

static uint16_t get16(const uint8_t *p) {
        return (uint16_t) (p[0] | p[1] << 8);
}

static uint64_t get64(const uint8_t *p) {
        return (uint64_t) get32(p) | (uint64_t) get32(p + 4) << 32;
}

static void put16(uint8_t *p, uint16_t v) {
        p[0] = (uint8_t) v;
        p[1] = (uint8_t) (v >> 8);
}

static void put32(uint8_t *p, uint32_t v) {
        for (unsigned i = 0; i < 4; i++)
                p[i] = (uint8_t) (v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v) {
        put32(p, (uint32_t) v);
        put32(p + 4, (uint32_t) (v >> 32));
}

/* The payload lengths each type allows, by direction. */
static const struct {
        NetFrameType type;
        NetFrameDirection dir;
        size_t min, max;
} frame_types[] = {
        { NET_FRAME_REQUEST, NET_TO_WORKER, REQUEST_FIXED + 2, NET_FRAME_PAYLOAD_MAX },
        { NET_FRAME_BODY,    NET_TO_WORKER, 1,                 NET_FRAME_PAYLOAD_MAX },
        { NET_FRAME_CANCEL,  NET_TO_WORKER, 0,                 0 },
        { NET_FRAME_DATA,    NET_TO_DAEMON, 1,                 NET_FRAME_PAYLOAD_MAX },
        { NET_FRAME_DONE,    NET_TO_DAEMON, DONE_FIXED + 2,    DONE_FIXED + NET_ADDRESS_MAX + NET_ERROR_MAX },
};

int net_frame_next(const uint8_t *buf, size_t n, NetFrameDirection dir, NetFrame *ret) {
        uint32_t len, id;
        uint16_t type, flags;
        size_t i;

        if (n < NET_FRAME_HEADER_SIZE)
                return 0;
        len = get32(buf);
        type = get16(buf + 4);
        flags = get16(buf + 6);
        id = get32(buf + 8);
        if (len > NET_FRAME_PAYLOAD_MAX)
                return -EMSGSIZE;
        for (i = 0; i < ELEMENTSOF(frame_types); i++)
                if (frame_types[i].type == type && frame_types[i].dir == dir)
                        break;
        if (i >= ELEMENTSOF(frame_types) || flags != 0 || id == 0)
                return -EBADMSG;
        if (len > frame_types[i].max)
                return -EMSGSIZE;
        if (len < frame_types[i].min)
                return -EBADMSG;
        if (n - NET_FRAME_HEADER_SIZE < len)
                return 0;
        *ret = (NetFrame) {
                .type = (NetFrameType) type,
                .id = id,
                .payload = buf + NET_FRAME_HEADER_SIZE,
                .len = len,
        };
        return (int) (NET_FRAME_HEADER_SIZE + len);
}

void net_frame_header(uint8_t out[static NET_FRAME_HEADER_SIZE], NetFrameType type, uint32_t id, size_t len) {
        put32(out, (uint32_t) len);
        put16(out + 4, (uint16_t) type);
        put16(out + 6, 0);
        put32(out + 8, id);
}

int net_frame_id_check(uint32_t id, uint32_t last_id) {
        return id == 0 || id > last_id ? -EBADMSG : 0;
}

static bool text_is_clean(const char *s, size_t len) {
        for (size_t i = 0; i < len; i++)
                if ((unsigned char) s[i] < 0x20 || (unsigned char) s[i] > 0x7e)
                        return false;
        return true;
}

void net_text_sanitize(char *dst, size_t size, const char *src) {
        size_t i = 0;

        if (size == 0)
                return;
        for (; src && src[i] && i + 1 < size; i++)
                dst[i] = (unsigned char) src[i] < 0x20 || (unsigned char) src[i] > 0x7e ? '?' : src[i];
        dst[i] = 0;
}

/* A NUL-terminated string of at most max bytes (NUL not counted) at *p, within end: its length, or
 * -EBADMSG. */
static int take_string(const uint8_t **p, const uint8_t *end, size_t max, const char **ret) {
        const uint8_t *nul = memchr(*p, 0, (size_t) (end - *p));
        size_t len;

        if (!nul)
                return -EBADMSG;
        len = (size_t) (nul - *p);
        if (len > max || !text_is_clean((const char *) *p, len))
                return -EBADMSG;
        *ret = (const char *) *p;
        *p = nul + 1;
        return (int) len;
}

int net_request_format(const NetRequest *q, uint8_t *buf, size_t size) {
        size_t at = REQUEST_FIXED, len;

        if (q->kind <= 0 || q->kind >= _NET_REQUEST_KIND_MAX || q->n_headers > NET_HEADERS_MAX || !q->url)
                return -EINVAL;
        if (size < REQUEST_FIXED || size > NET_FRAME_PAYLOAD_MAX)
                return -E2BIG;
        buf[0] = (uint8_t) q->kind;
        buf[1] = q->allow_internal;
        put16(buf + 2, (uint16_t) q->n_headers);
        put32(buf + 4, q->connect_timeout_sec);
        put32(buf + 8, q->timeout_sec);
        put32(buf + 12, 0);
        put64(buf + 16, q->max_response_bytes);
        put64(buf + 24, q->body_len);
        for (size_t i = 0; i <= q->n_headers; i++) {
                const char *s = i == 0 ? q->url : q->headers[i - 1];

                len = strlen(s);
                if (len == 0 || len > (i == 0 ? NET_URL_MAX : NET_HEADER_MAX) || !text_is_clean(s, len))
                        return -EINVAL;
                if (size - at < len + 1)
                        return -E2BIG;
                memcpy(buf + at, s, len + 1);
                at += len + 1;
        }
        return (int) at;
}

int net_request_parse(const NetFrame *f, NetRequest *ret) {
        const uint8_t *p = f->payload, *end = f->payload + f->len;
        NetRequest q = {};

        if (f->type != NET_FRAME_REQUEST || f->len < REQUEST_FIXED)
                return -EBADMSG;
        if (p[0] == 0 || p[0] >= _NET_REQUEST_KIND_MAX || p[1] > 1 || get32(p + 12) != 0)
                return -EBADMSG;
        q.kind = p[0];
        q.allow_internal = p[1];
        q.n_headers = get16(p + 2);
        q.connect_timeout_sec = get32(p + 4);
        q.timeout_sec = get32(p + 8);
        q.max_response_bytes = get64(p + 16);
        q.body_len = get64(p + 24);
        if (q.n_headers > NET_HEADERS_MAX)
                return -EBADMSG;
        p += REQUEST_FIXED;
        if (take_string(&p, end, NET_URL_MAX, &q.url) <= 0)
                return -EBADMSG;
        for (size_t i = 0; i < q.n_headers; i++)
                if (take_string(&p, end, NET_HEADER_MAX, &q.headers[i]) <= 0)
                        return -EBADMSG;
        if (p != end)
                return -EBADMSG;
        *ret = q;
        return 0;
}

size_t net_done_format(const NetDone *d, uint8_t buf[static NET_FRAME_PAYLOAD_MAX]) {
        size_t at = DONE_FIXED;
        char text[NET_ERROR_MAX];

        put32(buf, (uint32_t) d->transport);
        put32(buf + 4, d->curl_code);
        put32(buf + 8, d->http_status);
        put32(buf + 12, d->redirects);
        put64(buf + 16, d->retry_after_sec);
        put32(buf + 24, d->flags & _NET_DONE_FLAGS_WIRE);
        net_text_sanitize(text, NET_ADDRESS_MAX, d->refused_address);
        memcpy(buf + at, text, strlen(text) + 1);
        at += strlen(text) + 1;
        net_text_sanitize(text, NET_ERROR_MAX, d->error);
        memcpy(buf + at, text, strlen(text) + 1);
        at += strlen(text) + 1;
        return at;
}

int net_done_parse(const NetFrame *f, NetDone *ret) {
        const uint8_t *p = f->payload, *end = f->payload + f->len;
        const char *address, *error;
        NetDone d = {};
        int a, e;

        if (f->type != NET_FRAME_DONE || f->len < DONE_FIXED)
                return -EBADMSG;
        d.transport = (TransportResult) get32(p);
        d.curl_code = get32(p + 4);
        d.http_status = get32(p + 8);
        d.redirects = get32(p + 12);
        d.retry_after_sec = get64(p + 16);
        d.flags = get32(p + 24);
        if (get32(p) >= _TRANSPORT_MAX || d.curl_code > 1000 || (d.http_status != 0 && (d.http_status < 100 ||
            d.http_status > 999)) || d.redirects > 1000 || (d.flags & ~_NET_DONE_FLAGS_WIRE))
                return -EBADMSG;
        p += DONE_FIXED;
        a = take_string(&p, end, NET_ADDRESS_MAX - 1, &address);
        if (a < 0)
                return -EBADMSG;
        e = take_string(&p, end, NET_ERROR_MAX - 1, &error);
        if (e < 0 || p != end)
                return -EBADMSG;
        memcpy(d.refused_address, address, (size_t) a + 1);
        memcpy(d.error, error, (size_t) e + 1);
        *ret = d;
        return 0;
}

int net_out_queue_frame(NetOutQueue *q, NetFrameType type, uint32_t id, const void *payload, size_t len) {
        size_t need = NET_FRAME_HEADER_SIZE + len;

        if (q->off == q->len)
                q->off = q->len = 0;
        if (q->cap - q->len < need && q->off > 0) {
                memmove(q->buf, q->buf + q->off, q->len - q->off);
                q->len -= q->off;
                q->off = 0;
        }
        if (q->cap - q->len < need) {
                size_t cap = MAX(q->cap * 2, q->len + need);
                uint8_t *b = realloc(q->buf, cap);

                if (!b)
                        return -ENOMEM;
                q->buf = b;
                q->cap = cap;
        }
        net_frame_header(q->buf + q->len, type, id, len);
        if (len > 0)
                memcpy(q->buf + q->len + NET_FRAME_HEADER_SIZE, payload, len);
        q->len += need;
        return 0;
}

bool net_out_queue_consumed(NetOutQueue *q, size_t n) {
        q->off += n;
        if (q->off < q->len)
                return false;
        q->off = q->len = 0;
        return true;
}

void net_out_queue_clear(NetOutQueue *q) {
        q->off = q->len = 0;
}

void net_out_queue_done(NetOutQueue *q) {
        free(q->buf);
        *q = (NetOutQueue) {};
}

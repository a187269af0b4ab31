/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The framing between the daemon and its network worker (sandboxd-net, docs/ARCHITECTURE.md, "The
 * network worker"): the only bytes of a network transfer the root process reads. A stream of
 * frames, each a 12-byte header — payload length (u32), type (u16), flags (u16, zero), request id
 * (u32, never zero), all little-endian — and at most NET_FRAME_PAYLOAD_MAX bytes of payload. Each
 * direction has its own types; a type of the other direction, a length out of bounds for its type,
 * flags or a zero id are protocol errors (the daemon then kills the worker). Pure: no I/O. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/backoff.h"

#define NET_FRAME_HEADER_SIZE 12U
#define NET_FRAME_PAYLOAD_MAX (64U * 1024U)
#define NET_FRAME_MAX (NET_FRAME_HEADER_SIZE + NET_FRAME_PAYLOAD_MAX)

/* What a request may carry: its URL, its header lines. */
#define NET_URL_MAX 8192U
#define NET_HEADERS_MAX 16U
#define NET_HEADER_MAX 1024U
/* The worker's account of a failure: for the journal, never for the caller. */
#define NET_ERROR_MAX 256U
#define NET_ADDRESS_MAX 46U                      /* INET6_ADDRSTRLEN */

typedef enum NetFrameType {
        /* daemon → worker */
        NET_FRAME_REQUEST = 1,                   /* start a transfer: NetRequest */
        NET_FRAME_BODY = 2,                      /* the next bytes of a request's body */
        NET_FRAME_CANCEL = 3,                    /* abort it; no DONE follows */
        /* worker → daemon */
        NET_FRAME_DATA = 16,                     /* the next bytes of a response body */
        NET_FRAME_DONE = 17,                     /* the transfer ended: NetDone; the id is free again */
} NetFrameType;

typedef enum NetFrameDirection {
        NET_TO_WORKER,
        NET_TO_DAEMON,
} NetFrameDirection;

typedef struct NetFrame {
        NetFrameType type;
        uint32_t id;
        const uint8_t *payload;                  /* points into the buffer given to net_frame_next() */
        size_t len;
} NetFrame;

/* The next frame at the start of buf (n bytes): 0 if buf holds no whole frame yet (read more), the
 * frame's whole size if it does (ret set), -EMSGSIZE if the header announces more than
 * NET_FRAME_PAYLOAD_MAX or than its type allows, -EBADMSG for an unknown type, a type of the other
 * direction, nonzero flags, a zero id or a length its type does not allow. A header that is bad is
 * refused as soon as its 12 bytes are there, before the payload is waited for. */
int net_frame_next(const uint8_t *buf, size_t n, NetFrameDirection dir, NetFrame *ret);

/* Write the header of a frame with len bytes of payload into out. */
void net_frame_header(uint8_t out[static NET_FRAME_HEADER_SIZE], NetFrameType type, uint32_t id, size_t len);

/* Frames waiting for a non-blocking socket (either side's): appended at the end, written from the
 * front; the part already written is reused before the buffer grows. Zero-initialized is empty. */
typedef struct NetOutQueue {
        uint8_t *buf;
        size_t off, len, cap;
} NetOutQueue;

/* Append one frame: header and len ≤ NET_FRAME_PAYLOAD_MAX bytes of payload. 0 or -ENOMEM (then
 * nothing was appended). */
int net_out_queue_frame(NetOutQueue *q, NetFrameType type, uint32_t id, const void *payload, size_t len);
/* The bytes still to write, from net_out_queue_data(). */
static inline size_t net_out_queue_pending(const NetOutQueue *q) {
        return q->len - q->off;
}
static inline const uint8_t *net_out_queue_data(const NetOutQueue *q) {
        return q->buf + q->off;
}
/* n of them were written (n ≤ pending). true when nothing is left to write. */
bool net_out_queue_consumed(NetOutQueue *q, size_t n);
/* Drop what is queued (the peer is gone), keeping the buffer. */
void net_out_queue_clear(NetOutQueue *q);
/* Free the buffer; the queue is empty again. */
void net_out_queue_done(NetOutQueue *q);

/* An id of a frame the daemon received, against the ids it handed out (1..last_id): -EBADMSG if it
 * was never handed out. One that was handed out but is no longer live (cancelled; its frames may
 * still be on the way) is the caller's to ignore. */
int net_frame_id_check(uint32_t id, uint32_t last_id);

typedef enum NetRequestKind {
        NET_REQUEST_DOWNLOAD = 1,                /* GET, redirects followed (an input file) */
        NET_REQUEST_POST = 2,                    /* POST of the body, no redirect (a callback) */
        _NET_REQUEST_KIND_MAX,
} NetRequestKind;

typedef struct NetRequest {
        NetRequestKind kind;
        bool allow_internal;                     /* InputAllowInternalAddresses=, CallbackAllowInternalAddresses= */
        uint32_t connect_timeout_sec, timeout_sec;
        uint64_t max_response_bytes;             /* body bytes read at most: more fails (download) or ends it */
        uint64_t body_len;                       /* BODY frames follow with this many bytes in all */
        const char *url;                         /* NUL-terminated, into the frame */
        const char *headers[NET_HEADERS_MAX];    /* "Name: value" lines, into the frame */
        size_t n_headers;
} NetRequest;

/* REQUEST payload: kind u8, allow_internal u8, n_headers u16, connect_timeout u32, timeout u32,
 * zero u32, max_response_bytes u64, body_len u64, then the URL and each header NUL-terminated.
 * Format: the payload's size, or -E2BIG (does not fit), -EINVAL (a string too long or with a
 * control character). Parse: 0 or -EBADMSG; the strings point into f's payload. */
int net_request_format(const NetRequest *q, uint8_t *buf, size_t size);
int net_request_parse(const NetFrame *f, NetRequest *ret);

#define NET_DONE_TOO_LARGE (1U << 0)             /* the response was cut at max_response_bytes */
#define NET_DONE_REFUSED (1U << 1)               /* the guard refused an address (refused_address) */
#define _NET_DONE_FLAGS_WIRE (NET_DONE_TOO_LARGE | NET_DONE_REFUSED)
#define NET_DONE_WORKER_LOST (1U << 16)          /* never on the wire: the worker ended mid-transfer */
#define NET_DONE_ABORTED (1U << 17)              /* never on the wire: the data callback refused */

typedef struct NetDone {
        TransportResult transport;               /* curl_transport_result(), in the worker */
        uint32_t curl_code;                      /* CURLcode, as a number */
        uint32_t http_status;                    /* 0 or 100..999 */
        uint32_t redirects;
        uint64_t retry_after_sec;                /* a Retry-After header's, or 0 */
        uint32_t flags;
        char refused_address[NET_ADDRESS_MAX];   /* the last refused address, if NET_DONE_REFUSED */
        char error[NET_ERROR_MAX];               /* libcurl's words: printable ASCII only */
} NetDone;

/* DONE payload: transport u32, curl_code u32, http_status u32, redirects u32, retry_after u64,
 * flags u32, then refused_address and error NUL-terminated (each within its bound, printable
 * ASCII). Format: the size (it always fits NET_FRAME_PAYLOAD_MAX), replacing anything not
 * printable in the strings by '?'. Parse: 0 or -EBADMSG (a value out of range, an unknown flag, a
 * string too long, unterminated or not printable, bytes after the strings). */
size_t net_done_format(const NetDone *d, uint8_t buf[static NET_FRAME_PAYLOAD_MAX]);
int net_done_parse(const NetFrame *f, NetDone *ret);

/* Copy src into dst (size bytes, NUL-terminated), every byte outside 0x20..0x7e as '?'. */
void net_text_sanitize(char *dst, size_t size, const char *src);

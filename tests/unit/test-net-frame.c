/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "net/net-frame.h"
#include "util.h"

/* The framing between the daemon and the network worker, row by row, each row its own cmocka test:
 *  - headers: truncated frames (need more), whole ones, oversize lengths, unknown types, types of the
 *    other direction, flags, zero ids, lengths a type does not allow;
 *  - ids: which ones the daemon accepts back;
 *  - DONE payloads: the round trip, then one field broken per row;
 *  - REQUEST payloads: the round trip, then one field broken per row, and what format refuses. */

/* ---- headers ---------------------------------------------------------------------------------- */

typedef struct HeaderRow {
        const char *name;
        uint32_t len;            /* announced payload length */
        uint16_t type, flags;
        uint32_t id;
        size_t have;             /* bytes in the buffer, header included */
        NetFrameDirection dir;
        int expect;              /* 0 (need more), a negative errno, or 1: the whole frame */
} HeaderRow;

#define H 12
static const HeaderRow header_rows[] = {
        { "header: empty buffer",                    5,  NET_FRAME_DATA, 0, 1, 0,         NET_TO_DAEMON, 0 },
        { "header: 11 of 12 bytes",                  5,  NET_FRAME_DATA, 0, 1, H - 1,     NET_TO_DAEMON, 0 },
        { "header: payload missing",                 5,  NET_FRAME_DATA, 0, 1, H,         NET_TO_DAEMON, 0 },
        { "header: payload one byte short",          5,  NET_FRAME_DATA, 0, 1, H + 4,     NET_TO_DAEMON, 0 },
        { "header: DATA whole",                      5,  NET_FRAME_DATA, 0, 1, H + 5,     NET_TO_DAEMON, 1 },
        { "header: DATA whole, more bytes behind",   5,  NET_FRAME_DATA, 0, 7, H + 9,     NET_TO_DAEMON, 1 },
        { "header: DATA of the largest payload",     NET_FRAME_PAYLOAD_MAX, NET_FRAME_DATA, 0, 1,
                                                     H + NET_FRAME_PAYLOAD_MAX,           NET_TO_DAEMON, 1 },
        { "header: DATA one over the largest",       NET_FRAME_PAYLOAD_MAX + 1, NET_FRAME_DATA, 0, 1, H,
                                                                                          NET_TO_DAEMON, -EMSGSIZE },
        { "header: length 0xffffffff",               UINT32_MAX, NET_FRAME_DATA, 0, 1, H, NET_TO_DAEMON, -EMSGSIZE },
        { "header: oversize refused before payload", 1U << 31, NET_FRAME_DONE, 0, 1, H,   NET_TO_DAEMON, -EMSGSIZE },
        { "header: DATA empty",                      0,  NET_FRAME_DATA, 0, 1, H,         NET_TO_DAEMON, -EBADMSG },
        { "header: type 0",                          5,  0,              0, 1, H + 5,     NET_TO_DAEMON, -EBADMSG },
        { "header: type 4",                          5,  4,              0, 1, H + 5,     NET_TO_WORKER, -EBADMSG },
        { "header: type 15",                         5,  15,             0, 1, H + 5,     NET_TO_DAEMON, -EBADMSG },
        { "header: type 18",                         5,  18,             0, 1, H + 5,     NET_TO_DAEMON, -EBADMSG },
        { "header: type 0xffff",                     5,  0xffff,         0, 1, H + 5,     NET_TO_DAEMON, -EBADMSG },
        { "header: unknown type refused before payload", 5, 99,          0, 1, H,         NET_TO_DAEMON, -EBADMSG },
        { "header: REQUEST to the daemon",           40, NET_FRAME_REQUEST, 0, 1, H + 40, NET_TO_DAEMON, -EBADMSG },
        { "header: BODY to the daemon",              5,  NET_FRAME_BODY, 0, 1, H + 5,     NET_TO_DAEMON, -EBADMSG },
        { "header: CANCEL to the daemon",            0,  NET_FRAME_CANCEL, 0, 1, H,       NET_TO_DAEMON, -EBADMSG },
        { "header: DATA to the worker",              5,  NET_FRAME_DATA, 0, 1, H + 5,     NET_TO_WORKER, -EBADMSG },
        { "header: DONE to the worker",              40, NET_FRAME_DONE, 0, 1, H + 40,    NET_TO_WORKER, -EBADMSG },
        { "header: flags 1",                         5,  NET_FRAME_DATA, 1, 1, H + 5,     NET_TO_DAEMON, -EBADMSG },
        { "header: flags 0x8000",                    5,  NET_FRAME_DATA, 0x8000, 1, H + 5, NET_TO_DAEMON, -EBADMSG },
        { "header: id 0",                            5,  NET_FRAME_DATA, 0, 0, H + 5,     NET_TO_DAEMON, -EBADMSG },
        { "header: id 0 of CANCEL",                  0,  NET_FRAME_CANCEL, 0, 0, H,       NET_TO_WORKER, -EBADMSG },
        { "header: CANCEL whole",                    0,  NET_FRAME_CANCEL, 0, 9, H,       NET_TO_WORKER, 1 },
        { "header: CANCEL with a payload",           1,  NET_FRAME_CANCEL, 0, 9, H + 1,   NET_TO_WORKER, -EMSGSIZE },
        { "header: DONE shorter than its fields",    20, NET_FRAME_DONE, 0, 1, H + 20,    NET_TO_DAEMON, -EBADMSG },
        { "header: DONE longer than its strings",    28 + NET_ADDRESS_MAX + NET_ERROR_MAX + 1, NET_FRAME_DONE, 0, 1,
                                                     H,                                   NET_TO_DAEMON, -EMSGSIZE },
        { "header: REQUEST shorter than its fields", 20, NET_FRAME_REQUEST, 0, 1, H + 20, NET_TO_WORKER, -EBADMSG },
        { "header: BODY whole",                      3,  NET_FRAME_BODY, 0, 2, H + 3,     NET_TO_WORKER, 1 },
};

static void put_header(uint8_t *p, uint32_t len, uint16_t type, uint16_t flags, uint32_t id) {
        for (unsigned i = 0; i < 4; i++) {
                p[i] = (uint8_t) (len >> (8 * i));
                p[8 + i] = (uint8_t) (id >> (8 * i));
        }
        p[4] = (uint8_t) type;
        p[5] = (uint8_t) (type >> 8);
        p[6] = (uint8_t) flags;
        p[7] = (uint8_t) (flags >> 8);
}

static void test_header_row(void **state) {
        const HeaderRow *row = *state;
        size_t size = MAX(row->have, (size_t) H);
        _cleanup_free_ uint8_t *buf = calloc(1, size);
        NetFrame f = { .id = 12345 };
        int r;

        assert_non_null(buf);
        put_header(buf, row->len, row->type, row->flags, row->id);
        for (size_t i = H; i < size; i++)
                buf[i] = (uint8_t) i;
        r = net_frame_next(buf, row->have, row->dir, &f);
        if (row->expect == 1) {
                assert_int_equal(r, H + row->len);
                assert_int_equal(f.type, row->type);
                assert_int_equal(f.id, row->id);
                assert_int_equal(f.len, row->len);
                assert_ptr_equal(f.payload, buf + H);
        } else {
                assert_int_equal(r, row->expect);
                assert_int_equal(f.id, 12345);  /* untouched */
        }
}

static void test_header_written(void **state) {
        uint8_t a[H], b[H];
        NetFrame f;

        net_frame_header(a, NET_FRAME_CANCEL, 0x01020304, 0);
        put_header(b, 0, NET_FRAME_CANCEL, 0, 0x01020304);
        assert_memory_equal(a, b, H);
        assert_int_equal(net_frame_next(a, H, NET_TO_WORKER, &f), H);
        assert_int_equal(f.id, 0x01020304);
}

/* ---- ids -------------------------------------------------------------------------------------- */

typedef struct IdRow {
        const char *name;
        uint32_t id, last;
        int expect;
} IdRow;

static const IdRow id_rows[] = {
        { "id: 0 is never handed out",              0,          5,          -EBADMSG },
        { "id: the first",                          1,          5,          0 },
        { "id: the last handed out",                5,          5,          0 },
        { "id: one past the last",                  6,          5,          -EBADMSG },
        { "id: any before the first request",       1,          0,          -EBADMSG },
        { "id: the largest",                        UINT32_MAX, UINT32_MAX, 0 },
        { "id: the largest, not yet handed out",    UINT32_MAX, 7,          -EBADMSG },
};

static void test_id_row(void **state) {
        const IdRow *row = *state;

        assert_int_equal(net_frame_id_check(row->id, row->last), row->expect);
}

/* ---- DONE ------------------------------------------------------------------------------------- */

typedef enum DoneEdit {
        EDIT_NONE,
        EDIT_U32,                /* set the u32 at offset to value */
        EDIT_BYTE,               /* set the byte at offset (from the start of the strings) */
        EDIT_APPEND,             /* one byte more after the strings */
        EDIT_CUT,                /* drop the last byte (the error's NUL) */
        EDIT_STRINGS,            /* replace both strings by raw bytes */
} DoneEdit;

typedef struct DoneRow {
        const char *name;
        DoneEdit edit;
        size_t offset;
        uint32_t value;
        const char *raw;         /* EDIT_STRINGS */
        size_t raw_len;
        int expect;
} DoneRow;

#define S(s) s, sizeof(s) - 1
static const DoneRow done_rows[] = {
        { "done: as formatted",                        EDIT_NONE,    0,  0,                 NULL, 0, 0 },
        { "done: transport the last class",            EDIT_U32,     0,  _TRANSPORT_MAX - 1, NULL, 0, 0 },
        { "done: transport out of range",              EDIT_U32,     0,  _TRANSPORT_MAX,     NULL, 0, -EBADMSG },
        { "done: transport 0xffffffff",                EDIT_U32,     0,  UINT32_MAX,         NULL, 0, -EBADMSG },
        { "done: curl code out of range",              EDIT_U32,     4,  1001,               NULL, 0, -EBADMSG },
        { "done: HTTP status 0 (none)",                EDIT_U32,     8,  0,                  NULL, 0, 0 },
        { "done: HTTP status 99",                      EDIT_U32,     8,  99,                 NULL, 0, -EBADMSG },
        { "done: HTTP status 100",                     EDIT_U32,     8,  100,                NULL, 0, 0 },
        { "done: HTTP status 999",                     EDIT_U32,     8,  999,                NULL, 0, 0 },
        { "done: HTTP status 1000",                    EDIT_U32,     8,  1000,               NULL, 0, -EBADMSG },
        { "done: redirects out of range",              EDIT_U32,     12, 1001,               NULL, 0, -EBADMSG },
        { "done: both wire flags",                     EDIT_U32,     24, 3,                  NULL, 0, 0 },
        { "done: an unknown flag",                     EDIT_U32,     24, 4,                  NULL, 0, -EBADMSG },
        { "done: WORKER_LOST is never on the wire",    EDIT_U32,     24, NET_DONE_WORKER_LOST, NULL, 0, -EBADMSG },
        { "done: ABORTED is never on the wire",        EDIT_U32,     24, NET_DONE_ABORTED,   NULL, 0, -EBADMSG },
        { "done: a byte after the strings",            EDIT_APPEND,  0,  0,                  NULL, 0, -EBADMSG },
        { "done: the error unterminated",              EDIT_CUT,     0,  0,                  NULL, 0, -EBADMSG },
        { "done: a control character in the address",  EDIT_BYTE,    0,  '\n',               NULL, 0, -EBADMSG },
        { "done: a byte above 0x7e in the address",    EDIT_BYTE,    1,  0x80,               NULL, 0, -EBADMSG },
        { "done: only one string",                     EDIT_STRINGS, 0,  0, S("1.2.3.4\0"),          -EBADMSG },
        { "done: no strings",                          EDIT_STRINGS, 0,  0, S("\0\0"),               0 },
        { "done: an address of 45 characters",         EDIT_STRINGS, 0,  0,
          S("ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255\0x\0"), 0 },
        { "done: an address of 46 characters",         EDIT_STRINGS, 0,  0,
          S("ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.2555\0x\0"), -EBADMSG },
        { "done: a DEL in the error",                  EDIT_STRINGS, 0,  0, S("\0bad\x7f\0"),        -EBADMSG },
        { "done: a NUL inside the error (a third string)", EDIT_STRINGS, 0, 0, S("\0a\0b\0"),       -EBADMSG },
};

static void put32(uint8_t *p, uint32_t v) {
        for (unsigned i = 0; i < 4; i++)
                p[i] = (uint8_t) (v >> (8 * i));
}

static void test_done_row(void **state) {
        const DoneRow *row = *state;
        _cleanup_free_ uint8_t *buf = calloc(1, NET_FRAME_PAYLOAD_MAX + 1);
        NetDone in = {
                .transport = TRANSPORT_REFUSED,
                .curl_code = 7,
                .http_status = 204,
                .redirects = 2,
                .retry_after_sec = 120,
                .flags = NET_DONE_REFUSED,
                .refused_address = "127.0.0.1",
                .error = "Failed to connect to 127.0.0.1 port 80",
        }, out = {};
        NetFrame f = { .type = NET_FRAME_DONE, .id = 1, .payload = buf };
        size_t len;

        assert_non_null(buf);
        len = net_done_format(&in, buf);
        assert_int_equal(len, 28 + strlen(in.refused_address) + 1 + strlen(in.error) + 1);
        switch (row->edit) {
        case EDIT_NONE:
                break;
        case EDIT_U32:
                put32(buf + row->offset, row->value);
                break;
        case EDIT_BYTE:
                buf[28 + row->offset] = (uint8_t) row->value;
                break;
        case EDIT_APPEND:
                buf[len++] = 'x';
                break;
        case EDIT_CUT:
                len--;
                break;
        case EDIT_STRINGS:
                memcpy(buf + 28, row->raw, row->raw_len);
                len = 28 + row->raw_len;
                break;
        }
        f.len = len;
        assert_int_equal(net_done_parse(&f, &out), row->expect);
        if (row->expect < 0)
                return;
        if (row->edit == EDIT_NONE) {
                assert_int_equal(out.transport, in.transport);
                assert_int_equal(out.curl_code, in.curl_code);
                assert_int_equal(out.http_status, in.http_status);
                assert_int_equal(out.redirects, in.redirects);
                assert_int_equal(out.retry_after_sec, in.retry_after_sec);
                assert_int_equal(out.flags, in.flags);
                assert_string_equal(out.refused_address, in.refused_address);
                assert_string_equal(out.error, in.error);
        }
}

static void test_done_sanitized(void **state) {
        _cleanup_free_ uint8_t *buf = calloc(1, NET_FRAME_PAYLOAD_MAX);
        NetDone in = { .flags = NET_DONE_WORKER_LOST | NET_DONE_TOO_LARGE }, out;
        NetFrame f = { .type = NET_FRAME_DONE, .id = 1, .payload = buf };

        assert_non_null(buf);
        /* What libcurl said, with a line break and bytes of a UTF-8 host name: '?' each. */
        strcpy(in.error, "bad\nhost \xc3\xa9\x1b[0m");
        memset(in.refused_address, 'a', sizeof(in.refused_address) - 1);
        f.len = net_done_format(&in, buf);
        assert_int_equal(net_done_parse(&f, &out), 0);
        assert_string_equal(out.error, "bad?host ???[0m");
        assert_int_equal(strlen(out.refused_address), NET_ADDRESS_MAX - 1);
        /* Flags that are the daemon's own never go out. */
        assert_int_equal(out.flags, NET_DONE_TOO_LARGE);
}

/* ---- REQUEST ---------------------------------------------------------------------------------- */

typedef struct RequestRow {
        const char *name;
        size_t offset;           /* a byte to set, or SIZE_MAX */
        uint8_t value;
        int cut;                 /* bytes to drop from the end (negative: add one) */
        int expect;
} RequestRow;

static const RequestRow request_rows[] = {
        { "request: as formatted",                 SIZE_MAX, 0, 0,  0 },
        { "request: kind 0",                       0,  0,   0,  -EBADMSG },
        { "request: kind 3",                       0,  3,   0,  -EBADMSG },
        { "request: allow_internal 2",             1,  2,   0,  -EBADMSG },
        { "request: reserved field set",           12, 1,   0,  -EBADMSG },
        { "request: 17 headers",                   2,  17,  0,  -EBADMSG },
        { "request: one header more than sent",    2,  3,   0,  -EBADMSG },
        { "request: one header fewer than sent",   2,  1,   0,  -EBADMSG },
        { "request: the last header unterminated", SIZE_MAX, 0, 1, -EBADMSG },
        { "request: a byte after the strings",     SIZE_MAX, 0, -1, -EBADMSG },
        { "request: an empty URL",                 32, 0,   0,  -EBADMSG },
        { "request: a control character in the URL", 33, '\r', 0, -EBADMSG },
};

static const char *const request_headers[] = { "Content-Type: application/json", "Expect:" };

static int request_format(uint8_t *buf, size_t size) {
        NetRequest q = {
                .kind = NET_REQUEST_POST,
                .allow_internal = true,
                .connect_timeout_sec = 10,
                .timeout_sec = 30,
                .max_response_bytes = 65536,
                .body_len = 1000000,
                .url = "https://example.com/hook",
                .headers = { request_headers[0], request_headers[1] },
                .n_headers = 2,
        };

        return net_request_format(&q, buf, size);
}

static void test_request_row(void **state) {
        const RequestRow *row = *state;
        _cleanup_free_ uint8_t *buf = calloc(1, NET_FRAME_PAYLOAD_MAX);
        NetFrame f = { .type = NET_FRAME_REQUEST, .id = 1, .payload = buf };
        NetRequest q;
        int len;

        assert_non_null(buf);
        len = request_format(buf, NET_FRAME_PAYLOAD_MAX);
        assert_true(len > 32);
        if (row->offset != SIZE_MAX)
                buf[row->offset] = row->value;
        f.len = (size_t) (len - row->cut);
        assert_int_equal(net_request_parse(&f, &q), row->expect);
        if (row->expect < 0 || row->offset != SIZE_MAX)
                return;
        assert_int_equal(q.kind, NET_REQUEST_POST);
        assert_true(q.allow_internal);
        assert_int_equal(q.connect_timeout_sec, 10);
        assert_int_equal(q.timeout_sec, 30);
        assert_int_equal(q.max_response_bytes, 65536);
        assert_int_equal(q.body_len, 1000000);
        assert_string_equal(q.url, "https://example.com/hook");
        assert_int_equal(q.n_headers, 2);
        assert_string_equal(q.headers[0], request_headers[0]);
        assert_string_equal(q.headers[1], request_headers[1]);
}

static void test_request_format_refuses(void **state) {
        _cleanup_free_ uint8_t *buf = calloc(1, NET_FRAME_PAYLOAD_MAX);
        _cleanup_free_ char *long_url = malloc(NET_URL_MAX + 2), *long_header = malloc(NET_HEADER_MAX + 2);
        NetRequest q = { .kind = NET_REQUEST_DOWNLOAD, .url = "http://a/\n" };

        assert_non_null(buf);
        assert_non_null(long_url);
        assert_non_null(long_header);
        assert_int_equal(net_request_format(&q, buf, NET_FRAME_PAYLOAD_MAX), -EINVAL);
        memset(long_url, 'a', NET_URL_MAX + 1);
        long_url[NET_URL_MAX + 1] = 0;
        q.url = long_url;
        assert_int_equal(net_request_format(&q, buf, NET_FRAME_PAYLOAD_MAX), -EINVAL);
        long_url[NET_URL_MAX] = 0;
        assert_true(net_request_format(&q, buf, NET_FRAME_PAYLOAD_MAX) > 0);
        q.url = "http://a/";
        memset(long_header, 'h', NET_HEADER_MAX + 1);
        long_header[NET_HEADER_MAX + 1] = 0;
        q.headers[0] = long_header;
        q.n_headers = 1;
        assert_int_equal(net_request_format(&q, buf, NET_FRAME_PAYLOAD_MAX), -EINVAL);
        q.n_headers = NET_HEADERS_MAX + 1;
        assert_int_equal(net_request_format(&q, buf, NET_FRAME_PAYLOAD_MAX), -EINVAL);
        q.n_headers = 0;
        q.kind = 0;
        assert_int_equal(net_request_format(&q, buf, NET_FRAME_PAYLOAD_MAX), -EINVAL);
        q.kind = NET_REQUEST_DOWNLOAD;
        assert_int_equal(net_request_format(&q, buf, 35), -E2BIG);
        assert_int_equal(net_request_format(&q, buf, 42), 42);
}

/* ---- the queue of frames to write ------------------------------------------------------------ */

/* Frames queued (the daemon's and the worker's queue are this one) come out whole and in order
 * however the socket takes them: written a few KiB at a time, with appends in between (the written
 * part reused), through growths. */
static void test_out_queue(void **state) {
        static uint8_t big[NET_FRAME_PAYLOAD_MAX];
        _cleanup_free_ uint8_t *written = NULL;
        size_t n_written = 0, at = 0, cap_before;
        NetOutQueue q = {};
        NetFrame f;
        uint32_t id = 0;

        written = malloc(64 * NET_FRAME_MAX);
        assert_non_null(written);
        for (size_t i = 0; i < sizeof(big); i++)
                big[i] = (uint8_t) (i * 31 + 7);
        assert_int_equal(net_out_queue_pending(&q), 0);
        for (unsigned round = 0; round < 8; round++) {
                /* Append: an empty frame, a small one, a full one. */
                assert_int_equal(net_out_queue_frame(&q, NET_FRAME_CANCEL, ++id, NULL, 0), 0);
                assert_int_equal(net_out_queue_frame(&q, NET_FRAME_BODY, ++id, big, 5 + round), 0);
                assert_int_equal(net_out_queue_frame(&q, NET_FRAME_BODY, ++id, big, sizeof(big)), 0);
                /* Write all but 7 bytes, 4099 at a time. */
                while (net_out_queue_pending(&q) > 7) {
                        size_t k = MIN(net_out_queue_pending(&q) - 7, (size_t) 4099);

                        memcpy(written + n_written, net_out_queue_data(&q), k);
                        n_written += k;
                        assert_false(net_out_queue_consumed(&q, k));
                }
        }
        cap_before = q.cap;
        /* The rest: empty, and the next frame starts at the front again. */
        memcpy(written + n_written, net_out_queue_data(&q), 7);
        n_written += 7;
        assert_true(net_out_queue_consumed(&q, 7));
        assert_int_equal(net_out_queue_pending(&q), 0);
        assert_int_equal(net_out_queue_frame(&q, NET_FRAME_CANCEL, ++id, NULL, 0), 0);
        assert_ptr_equal(net_out_queue_data(&q), q.buf);
        assert_int_equal(q.cap, cap_before);
        /* Bounded: never more than what was pending at once plus one frame. */
        assert_true(q.cap <= 2 * (3 * NET_FRAME_HEADER_SIZE + 12 + sizeof(big) + 7) + NET_FRAME_MAX);

        for (uint32_t want = 1; want < id; want++) {
                ssize_t k = net_frame_next(written + at, n_written - at, NET_TO_WORKER, &f);

                assert_true(k > 0);
                assert_int_equal(f.id, want);
                if (f.len > 100)
                        assert_memory_equal(f.payload, big, sizeof(big));
                at += (size_t) k;
        }
        assert_int_equal(at, n_written);

        net_out_queue_clear(&q);
        assert_int_equal(net_out_queue_pending(&q), 0);
        net_out_queue_done(&q);
        assert_null(q.buf);
        assert_int_equal(q.cap, 0);
}

#define ROWS(tests, i, table, fn)                                                                    \
        for (size_t k = 0; k < ELEMENTSOF(table); k++)                                               \
                tests[i++] = (struct CMUnitTest) { table[k].name, fn, NULL, NULL, (void *) &table[k] }

int main(void) {
        size_t n = ELEMENTSOF(header_rows) + ELEMENTSOF(id_rows) + ELEMENTSOF(done_rows) +
                   ELEMENTSOF(request_rows) + 5, i = 0;
        _cleanup_free_ struct CMUnitTest *tests = calloc(n, sizeof(struct CMUnitTest));

        if (!tests)
                return EXIT_FAILURE;
        ROWS(tests, i, header_rows, test_header_row);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_header_written);
        ROWS(tests, i, id_rows, test_id_row);
        ROWS(tests, i, done_rows, test_done_row);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_done_sanitized);
        ROWS(tests, i, request_rows, test_request_row);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_request_format_refuses);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_out_queue);
        if (i > n)
                abort();
        return _cmocka_run_group_tests("net-frame", tests, i, NULL, NULL);
}

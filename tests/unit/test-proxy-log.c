/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "net/proxy-log.h"
#include "util.h"

/* The egress proxy's words (issue 16), row by row: each reason's exact text and HTTP status (the
 * contract with the daemon and the documentation), the event line for allowed, cut and refused
 * connections (field order, optional fields, JSON escaping, the caps), and the refusal response. */

/* ---- reasons ---------------------------------------------------------------------------------- */

typedef struct ReasonRow {
        const char *name;
        ProxyReason reason;
        HttpHeadReason detail;
        const char *text;
        unsigned status;
} ReasonRow;

#define R(r, t, s) { "reason " t, PROXY_REASON_##r, HTTP_HEAD_OK, t, s }

static const ReasonRow reason_rows[] = {
        R(NOT_ALLOWED, "not in the allowlist", 403),
        R(PORT_NOT_ALLOWED, "port not allowed", 403),
        R(INTERNAL_ADDRESS, "internal address", 403),
        R(NOT_RESOLVED, "name did not resolve", 502),
        R(CONNECT_FAILED, "connect failed", 502),
        R(CONNECT_TIMEOUT, "connect timed out", 504),
        R(BYTE_CAP, "byte cap reached", 503),
        R(CONNECTION_CAP, "connection cap reached", 503),
        R(IDLE_TIMEOUT, "idle timeout", 0),
        R(HEAD_TIMEOUT, "head timeout", 400),
        R(CHUNKED_BODY, "chunked request body", 411),
        { "reason bad request: bare LF", PROXY_REASON_BAD_REQUEST, HTTP_HEAD_BARE_LF,
          "bad request: LF without CR in the request head", 400 },
        { "reason bad request: CL and TE", PROXY_REASON_BAD_REQUEST,
          HTTP_HEAD_CONTENT_LENGTH_AND_TRANSFER_ENCODING,
          "bad request: both Content-Length and Transfer-Encoding", 400 },
};

static void test_reason_row(void **state) {
        const ReasonRow *row = *state;
        char buf[256];

        assert_int_equal(proxy_reason_format(row->reason, row->detail, buf, sizeof(buf)), strlen(row->text));
        assert_string_equal(buf, row->text);
        assert_int_equal(proxy_reason_status(row->reason), row->status);
}

static void test_reason_edges(_unused_ void **state) {
        char buf[8];

        assert_null(proxy_reason_to_string(PROXY_REASON_NONE));
        assert_null(proxy_reason_to_string(_PROXY_REASON_MAX));
        assert_int_equal(proxy_reason_status(PROXY_REASON_NONE), 0);
        assert_int_equal(proxy_reason_status(_PROXY_REASON_MAX), 0);
        assert_int_equal(proxy_reason_format(PROXY_REASON_NONE, HTTP_HEAD_OK, buf, sizeof(buf)), -EINVAL);
        assert_string_equal(buf, "");
        assert_int_equal(proxy_reason_format(PROXY_REASON_NOT_ALLOWED, HTTP_HEAD_OK, buf, sizeof(buf)), -ENOBUFS);
        assert_int_equal(strlen(buf), sizeof(buf) - 1);
        /* Every HttpHeadReason has a text to follow "bad request: ". */
        for (int r = HTTP_HEAD_OK + 1; r < _HTTP_HEAD_REASON_MAX; r++) {
                char b[256];

                assert_true(proxy_reason_format(PROXY_REASON_BAD_REQUEST, r, b, sizeof(b)) > 13);
                assert_non_null(strstr(b, "bad request: "));
        }
}

/* ---- event lines ------------------------------------------------------------------------------ */

typedef struct EventRow {
        const char *name;
        ProxyEvent event;
        ssize_t ret;                     /* < 0: refused */
        const char *line;
} EventRow;

static const EventRow event_rows[] = {
        { "event allowed CONNECT",
          { "pypi.org", 443, "CONNECT", true, PROXY_REASON_NONE, 0, "151.101.0.223", 517, 6033,
            1764650000123456, 42 }, 0,
          "{\"host\":\"pypi.org\",\"port\":443,\"method\":\"CONNECT\",\"decision\":\"allowed\","
          "\"address\":\"151.101.0.223\",\"bytes_up\":517,\"bytes_down\":6033,"
          "\"started_at\":1764650000123456,\"duration_ms\":42}\n" },
        { "event allowed cut by the byte cap",
          { "files.example.org", 80, "GET", true, PROXY_REASON_BYTE_CAP, 0, "2001:db8::1", 80, 1048576,
            1, 2 }, 0,
          "{\"host\":\"files.example.org\",\"port\":80,\"method\":\"GET\",\"decision\":\"allowed\","
          "\"reason\":\"byte cap reached\",\"address\":\"2001:db8::1\",\"bytes_up\":80,"
          "\"bytes_down\":1048576,\"started_at\":1,\"duration_ms\":2}\n" },
        { "event allowed idle timeout",
          { "a.b", 443, "CONNECT", true, PROXY_REASON_IDLE_TIMEOUT, 0, "198.18.0.1", 0, 0, 0, 0 }, 0,
          "{\"host\":\"a.b\",\"port\":443,\"method\":\"CONNECT\",\"decision\":\"allowed\","
          "\"reason\":\"idle timeout\",\"address\":\"198.18.0.1\",\"bytes_up\":0,\"bytes_down\":0,"
          "\"started_at\":0,\"duration_ms\":0}\n" },
        { "event denied not in the allowlist (no address)",
          { "evil.example", 443, "CONNECT", false, PROXY_REASON_NOT_ALLOWED, 0, NULL, 0, 0, 5, 0 }, 0,
          "{\"host\":\"evil.example\",\"port\":443,\"method\":\"CONNECT\",\"decision\":\"denied\","
          "\"reason\":\"not in the allowlist\",\"bytes_up\":0,\"bytes_down\":0,\"started_at\":5,"
          "\"duration_ms\":0}\n" },
        { "event denied bad request (unparsed: empty host and method)",
          { NULL, 0, NULL, false, PROXY_REASON_BAD_REQUEST, HTTP_HEAD_BARE_LF, "", 0, 0, 7, 1 }, 0,
          "{\"host\":\"\",\"port\":0,\"method\":\"\",\"decision\":\"denied\","
          "\"reason\":\"bad request: LF without CR in the request head\",\"bytes_up\":0,\"bytes_down\":0,"
          "\"started_at\":7,\"duration_ms\":1}\n" },
        { "event escapes quotes, backslashes, control and non-ASCII bytes",
          { "a\"b\\c", 1, "G\x01\xff", false, PROXY_REASON_CONNECTION_CAP, 0, NULL, 0, 0, 0, 0 }, 0,
          "{\"host\":\"a\\\"b\\\\c\",\"port\":1,\"method\":\"G\\u0001\\u00ff\",\"decision\":\"denied\","
          "\"reason\":\"connection cap reached\",\"bytes_up\":0,\"bytes_down\":0,\"started_at\":0,"
          "\"duration_ms\":0}\n" },
        { "event method cut at 16 bytes",
          { "a.b", 80, "ABCDEFGHIJKLMNOPQRSTUVWXYZ", false, PROXY_REASON_CHUNKED_BODY, 0, NULL, 0, 0, 0, 0 }, 0,
          "{\"host\":\"a.b\",\"port\":80,\"method\":\"ABCDEFGHIJKLMNOP\",\"decision\":\"denied\","
          "\"reason\":\"chunked request body\",\"bytes_up\":0,\"bytes_down\":0,\"started_at\":0,"
          "\"duration_ms\":0}\n" },
        { "event largest numbers",
          { "a.b", 65535, "GET", true, PROXY_REASON_NONE, 0, "1.2.3.4", UINT64_MAX, UINT64_MAX, UINT64_MAX,
            UINT64_MAX }, 0,
          "{\"host\":\"a.b\",\"port\":65535,\"method\":\"GET\",\"decision\":\"allowed\","
          "\"address\":\"1.2.3.4\",\"bytes_up\":18446744073709551615,\"bytes_down\":18446744073709551615,"
          "\"started_at\":18446744073709551615,\"duration_ms\":18446744073709551615}\n" },
        { "event refused: denied without a reason",
          { "a.b", 80, "GET", false, PROXY_REASON_NONE, 0, NULL, 0, 0, 0, 0 }, -EINVAL, NULL },
        { "event refused: allowed with a refusal's reason",
          { "a.b", 80, "GET", true, PROXY_REASON_NOT_ALLOWED, 0, NULL, 0, 0, 0, 0 }, -EINVAL, NULL },
        { "event refused: unknown reason",
          { "a.b", 80, "GET", false, _PROXY_REASON_MAX, 0, NULL, 0, 0, 0, 0 }, -EINVAL, NULL },
};

static void test_event_row(void **state) {
        const EventRow *row = *state;
        char buf[PROXY_EVENT_MAX + 1];
        ssize_t r;

        r = proxy_event_format(&row->event, buf);
        if (row->ret < 0) {
                assert_int_equal(r, row->ret);
                return;
        }
        assert_string_equal(buf, row->line);
        assert_int_equal(r, strlen(row->line));
}

/* The longest line possible: every string at its cap and made of bytes escaped to six. */
static void test_event_cap(_unused_ void **state) {
        char host[1024], method[64], address[128], buf[PROXY_EVENT_MAX + 1];
        ProxyEvent e = { host, 65535, method, false, PROXY_REASON_BAD_REQUEST,
                         HTTP_HEAD_OK, address, UINT64_MAX, UINT64_MAX, UINT64_MAX,
                         UINT64_MAX };
        size_t longest = 0;
        ssize_t r;

        memset(host, 1, sizeof(host) - 1);
        host[sizeof(host) - 1] = 0;
        memset(method, 1, sizeof(method) - 1);
        method[sizeof(method) - 1] = 0;
        memset(address, 1, sizeof(address) - 1);
        address[sizeof(address) - 1] = 0;
        for (int d = HTTP_HEAD_OK + 1; d < _HTTP_HEAD_REASON_MAX; d++) {
                e.bad_request = d;
                r = proxy_event_format(&e, buf);
                assert_true(r > 0);
                assert_int_equal(strlen(buf), r);
                assert_true(r <= PROXY_EVENT_MAX);
                assert_int_equal(buf[r - 1], '\n');
                longest = MAX(longest, (size_t) r);
        }
        print_message("# longest event line: %zu bytes\n", longest);
}

/* ---- responses -------------------------------------------------------------------------------- */

typedef struct ResponseRow {
        const char *name;
        ProxyReason reason;
        HttpHeadReason detail;
        const char *host;
        uint16_t port;
        const char *response;            /* NULL: refused */
} ResponseRow;

static const ResponseRow response_rows[] = {
        { "response 403 not in the allowlist", PROXY_REASON_NOT_ALLOWED, 0, "evil.example", 443,
          "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 55\r\n"
          "Connection: close\r\n\r\nsandboxd-proxy: evil.example:443: not in the allowlist\n" },
        { "response 502 name did not resolve", PROXY_REASON_NOT_RESOLVED, 0, "nx.example", 80,
          "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 52\r\n"
          "Connection: close\r\n\r\nsandboxd-proxy: nx.example:80: name did not resolve\n" },
        { "response 504 connect timed out", PROXY_REASON_CONNECT_TIMEOUT, 0, "a.b", 443,
          "HTTP/1.1 504 Gateway Timeout\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 43\r\n"
          "Connection: close\r\n\r\nsandboxd-proxy: a.b:443: connect timed out\n" },
        { "response 503 connection cap", PROXY_REASON_CONNECTION_CAP, 0, "", 0,
          "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n"
          "Content-Length: 43\r\nConnection: close\r\n\r\nsandboxd-proxy: :0: connection cap reached\n" },
        { "response 411 chunked", PROXY_REASON_CHUNKED_BODY, 0, "a.b", 80,
          "HTTP/1.1 411 Length Required\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 45\r\n"
          "Connection: close\r\n\r\nsandboxd-proxy: a.b:80: chunked request body\n" },
        { "response 400 bad request, the host's unsafe bytes dropped", PROXY_REASON_BAD_REQUEST,
          HTTP_HEAD_NUL, "a\r\nb", 80,
          "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 65\r\n"
          "Connection: close\r\n\r\nsandboxd-proxy: ab:80: bad request: NUL byte in the request head\n" },
        { "response none for idle timeout", PROXY_REASON_IDLE_TIMEOUT, 0, "a.b", 80, NULL },
        { "response none for NONE", PROXY_REASON_NONE, 0, "a.b", 80, NULL },
};

static void test_response_row(void **state) {
        const ResponseRow *row = *state;
        char buf[PROXY_RESPONSE_MAX];
        ssize_t r;

        r = proxy_response_format(row->reason, row->detail, row->host, row->port, buf);
        if (!row->response) {
                assert_int_equal(r, -EINVAL);
                return;
        }
        assert_string_equal(buf, row->response);
        assert_int_equal(r, strlen(row->response));
        /* Content-Length counts the body exactly. */
        const char *body = strstr(buf, "\r\n\r\n") + 4;
        assert_int_equal(strtoul(strstr(buf, "Content-Length: ") + 16, NULL, 10), strlen(body));
}

#define ROWS(tests, i, table, fn)                                                                    \
        for (size_t k = 0; k < ELEMENTSOF(table); k++)                                               \
                tests[i++] = (struct CMUnitTest) { table[k].name, fn, NULL, NULL, (void *) &table[k] }

int main(void) {
        size_t n = ELEMENTSOF(reason_rows) + ELEMENTSOF(event_rows) + ELEMENTSOF(response_rows) + 2, i = 0;
        _cleanup_free_ struct CMUnitTest *tests = calloc(n, sizeof(struct CMUnitTest));

        if (!tests)
                return EXIT_FAILURE;
        ROWS(tests, i, reason_rows, test_reason_row);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_reason_edges);
        ROWS(tests, i, event_rows, test_event_row);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_event_cap);
        ROWS(tests, i, response_rows, test_response_row);
        if (i > n)
                abort();
        return _cmocka_run_group_tests("proxy-log", tests, i, NULL, NULL);
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/proxy-event.h"
#include "net/proxy-log.h"
#include "util.h"

/* The daemon's reader of the egress proxy's event lines (proxy-event.h), row by row: what a good line
 * gives, and every hostile variant refused with the reason it is refused for; then every line the
 * proxy's own formatter (proxy-log.h) writes, for every reason, read back to the same values. */

#define GOOD "{\"host\":\"pypi.org\",\"port\":443,\"method\":\"CONNECT\",\"decision\":\"allowed\"," \
             "\"address\":\"151.101.0.223\",\"bytes_up\":517,\"bytes_down\":6033," \
             "\"started_at\":1764650000123456,\"duration_ms\":42}"

typedef struct Row {
        const char *name;
        const char *line;
        const char *why;                 /* NULL: accepted */
} Row;

static const Row rows[] = {
        { "good", GOOD, NULL },
        { "denied with reason",
          "{\"host\":\"evil.com\",\"port\":80,\"method\":\"GET\",\"decision\":\"denied\",\"reason\":\"not in the allowlist\","
          "\"bytes_up\":0,\"bytes_down\":0,\"started_at\":1764650000123456,\"duration_ms\":0}", NULL },
        { "bad request reason",
          "{\"host\":\"\",\"port\":0,\"method\":\"\",\"decision\":\"denied\",\"reason\":\"bad request: bad Content-Length\","
          "\"bytes_up\":0,\"bytes_down\":0,\"started_at\":1764650000123456,\"duration_ms\":1}", NULL },
        { "ipv6 address",
          "{\"host\":\"a.example\",\"port\":443,\"method\":\"CONNECT\",\"decision\":\"allowed\",\"address\":\"2001:db8::1\","
          "\"bytes_up\":1,\"bytes_down\":2,\"started_at\":1764650000123456,\"duration_ms\":3}", NULL },
        { "denied without reason",
          "{\"host\":\"evil.com\",\"port\":80,\"method\":\"GET\",\"decision\":\"denied\","
          "\"bytes_up\":0,\"bytes_down\":0,\"started_at\":1764650000123456,\"duration_ms\":0}", "a denial without a reason" },
        { "unknown reason",
          "{\"host\":\"evil.com\",\"port\":80,\"method\":\"GET\",\"decision\":\"denied\",\"reason\":\"because\","
          "\"bytes_up\":0,\"bytes_down\":0,\"started_at\":1764650000123456,\"duration_ms\":0}",
          "reason: not one of the proxy's reasons" },
        { "bad request unknown detail",
          "{\"host\":\"\",\"port\":0,\"method\":\"\",\"decision\":\"denied\",\"reason\":\"bad request: whatever\","
          "\"bytes_up\":0,\"bytes_down\":0,\"started_at\":1764650000123456,\"duration_ms\":1}",
          "reason: not one of the proxy's reasons" },
        { "upper-case host", "{\"host\":\"PyPI.org\",\"port\":443,\"method\":\"CONNECT\",\"decision\":\"allowed\","
          "\"bytes_up\":0,\"bytes_down\":0,\"started_at\":1764650000123456,\"duration_ms\":0}",
          "host: not a lower-case host name" },
        { "ip host", "{\"host\":\"127.0.0.1\",\"port\":443,\"method\":\"CONNECT\",\"decision\":\"allowed\","
          "\"bytes_up\":0,\"bytes_down\":0,\"started_at\":1764650000123456,\"duration_ms\":0}",
          "host: not a lower-case host name" },
        { "port too big", "{\"host\":\"a.example\",\"port\":65536,\"method\":\"GET\",\"decision\":\"allowed\","
          "\"bytes_up\":0,\"bytes_down\":0,\"started_at\":1764650000123456,\"duration_ms\":0}", "port: not 0-65535" },
        { "negative bytes", "{\"host\":\"a.example\",\"port\":80,\"method\":\"GET\",\"decision\":\"allowed\","
          "\"bytes_up\":-1,\"bytes_down\":0,\"started_at\":1764650000123456,\"duration_ms\":0}", "bytes_up: out of range" },
        { "method too long", "{\"host\":\"a.example\",\"port\":80,\"method\":\"ABCDEFGHIJKLMNOPQ\",\"decision\":\"allowed\","
          "\"bytes_up\":0,\"bytes_down\":0,\"started_at\":1764650000123456,\"duration_ms\":0}",
          "method: not a string of at most 16 bytes" },
        { "method not a token", "{\"host\":\"a.example\",\"port\":80,\"method\":\"G T\",\"decision\":\"allowed\","
          "\"bytes_up\":0,\"bytes_down\":0,\"started_at\":1764650000123456,\"duration_ms\":0}", "method: not a token" },
        { "decision", "{\"host\":\"a.example\",\"port\":80,\"method\":\"GET\",\"decision\":\"maybe\","
          "\"bytes_up\":0,\"bytes_down\":0,\"started_at\":1764650000123456,\"duration_ms\":0}",
          "decision: not \"allowed\" or \"denied\"" },
        { "address a name", "{\"host\":\"a.example\",\"port\":80,\"method\":\"GET\",\"decision\":\"allowed\","
          "\"address\":\"a.example\",\"bytes_up\":0,\"bytes_down\":0,\"started_at\":1764650000123456,\"duration_ms\":0}",
          "address: not a numeric IPv4 or IPv6 address" },
        { "started_at in seconds", "{\"host\":\"a.example\",\"port\":80,\"method\":\"GET\",\"decision\":\"allowed\","
          "\"bytes_up\":0,\"bytes_down\":0,\"started_at\":1764650000,\"duration_ms\":0}",
          "started_at: not a time in microseconds" },
        { "unknown field", "{\"host\":\"a.example\",\"port\":80,\"method\":\"GET\",\"decision\":\"allowed\",\"x\":1,"
          "\"bytes_up\":0,\"bytes_down\":0,\"started_at\":1764650000123456,\"duration_ms\":0}", "unknown field" },
        { "missing field", "{\"host\":\"a.example\",\"port\":80,\"method\":\"GET\",\"decision\":\"allowed\","
          "\"bytes_up\":0,\"started_at\":1764650000123456,\"duration_ms\":0}", "a required field is missing" },
        { "duplicate key", "{\"host\":\"a.example\",\"host\":\"b.example\",\"port\":80,\"method\":\"GET\",\"decision\":\"allowed\","
          "\"bytes_up\":0,\"bytes_down\":0,\"started_at\":1764650000123456,\"duration_ms\":0}", "not strict JSON" },
        { "not an object", "[1,2]", "not a JSON object" },
        { "trailing garbage", GOOD "x", "not strict JSON" },
        { "non-ascii", "{\"host\":\"\xc3\xa9.example\"}", "not ASCII" },
        { "empty", "", "empty line" },
        { "nested", "{\"host\":{\"a\":{\"b\":1}}}", "not strict JSON" },
};

static void test_row(void **state) {
        const Row *row = *state;
        NetLogEntry e = {};
        const char *why = NULL;
        int r = proxy_event_parse(row->line, strlen(row->line), &e, &why);

        if (!row->why) {
                if (r != 0)
                        print_error("%s: refused: %s\n", row->name, why);
                assert_int_equal(r, 0);
        } else {
                assert_int_equal(r, -EBADMSG);
                assert_non_null(why);
                if (strcmp(why, row->why) != 0)
                        print_error("%s: why '%s', want '%s'\n", row->name, why, row->why);
                assert_string_equal(why, row->why);
        }
}

static void test_good_fields(_unused_ void **state) {
        NetLogEntry e = {};
        const char *why;

        assert_int_equal(proxy_event_parse(GOOD, strlen(GOOD), &e, &why), 0);
        assert_string_equal(e.host, "pypi.org");
        assert_int_equal(e.port, 443);
        assert_string_equal(e.method, "CONNECT");
        assert_int_equal(e.decision, NET_DECISION_ALLOWED);
        assert_string_equal(e.reason, "");
        assert_string_equal(e.address, "151.101.0.223");
        assert_int_equal(e.bytes_up, 517);
        assert_int_equal(e.bytes_down, 6033);
        assert_int_equal(e.started_usec, 1764650000123456ULL);
        assert_int_equal(e.duration_ms, 42);
}

static void test_too_long(_unused_ void **state) {
        char line[PROXY_EVENT_LINE_MAX + 8];
        NetLogEntry e;
        const char *why;

        memset(line, ' ', sizeof(line));
        assert_int_equal(proxy_event_parse(line, PROXY_EVENT_LINE_MAX, &e, &why), -EBADMSG);
        assert_string_equal(why, "line too long");
}

/* Every reason the proxy's formatter can write is one the reader takes, to the same text. */
static void test_roundtrip_every_reason(_unused_ void **state) {
        for (int r = PROXY_REASON_NONE; r < _PROXY_REASON_MAX; r++)
                for (int d = HTTP_HEAD_OK + 1; d < (r == PROXY_REASON_BAD_REQUEST ? _HTTP_HEAD_REASON_MAX : HTTP_HEAD_OK + 2);
                     d++) {
                        bool allowed = r == PROXY_REASON_NONE || r == PROXY_REASON_BYTE_CAP ||
                                       r == PROXY_REASON_IDLE_TIMEOUT;
                        ProxyEvent pe = { .host = "files.pythonhosted.org", .port = 443, .method = "CONNECT",
                                          .allowed = allowed, .reason = (ProxyReason) r,
                                          .bad_request = (HttpHeadReason) d, .address = allowed ? "::1" : NULL,
                                          .bytes_up = 10, .bytes_down = 20, .started_at = 1764650000123456ULL,
                                          .duration_ms = 7 };
                        char buf[PROXY_EVENT_MAX + 1], want[128];
                        NetLogEntry e;
                        const char *why = NULL;
                        ssize_t n = proxy_event_format(&pe, buf);

                        if (n < 0)
                                continue;       /* a combination the formatter refuses */
                        assert_true(n > 1 && buf[n - 1] == '\n');
                        if (proxy_event_parse(buf, (size_t) n - 1, &e, &why) != 0)
                                print_error("line %s refused: %s\n", buf, why);
                        assert_int_equal(proxy_event_parse(buf, (size_t) n - 1, &e, &why), 0);
                        assert_int_equal(e.decision, allowed ? NET_DECISION_ALLOWED : NET_DECISION_DENIED);
                        if (r == PROXY_REASON_NONE)
                                assert_string_equal(e.reason, "");
                        else {
                                assert_true(proxy_reason_format(pe.reason, pe.bad_request, want, sizeof(want)) > 0);
                                assert_string_equal(e.reason, want);
                        }
                        assert_string_equal(e.host, "files.pythonhosted.org");
                        assert_int_equal(e.bytes_down, 20);
                }
}

int main(void) {
        struct CMUnitTest tests[ELEMENTSOF(rows) + 3];
        size_t n = 0;

        for (size_t i = 0; i < ELEMENTSOF(rows); i++)
                tests[n++] = (struct CMUnitTest) { .name = rows[i].name, .test_func = test_row,
                                                   .initial_state = (void *) &rows[i] };
        tests[n++] = (struct CMUnitTest) cmocka_unit_test(test_good_fields);
        tests[n++] = (struct CMUnitTest) cmocka_unit_test(test_too_long);
        tests[n++] = (struct CMUnitTest) cmocka_unit_test(test_roundtrip_every_reason);
        return _cmocka_run_group_tests("proxy-event", tests, n, NULL, NULL);
}

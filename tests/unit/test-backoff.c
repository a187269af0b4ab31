/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "model/backoff.h"
#include "util.h"

/* The retry decision table, the backoff delays, Retry-After, the signature and callback_url, row by
 * row: each row is its own cmocka test named after it. */

/* ---- the decision table ---- */

typedef struct OutcomeRow {
        const char *name;
        TransportResult transport;
        long status;
        DeliveryOutcome expected;
} OutcomeRow;

static const OutcomeRow outcome_rows[] = {
        { "200 delivered", TRANSPORT_OK, 200, DELIVERY_DELIVERED },
        { "201 delivered", TRANSPORT_OK, 201, DELIVERY_DELIVERED },
        { "204 delivered", TRANSPORT_OK, 204, DELIVERY_DELIVERED },
        { "299 delivered", TRANSPORT_OK, 299, DELIVERY_DELIVERED },
        { "100 failed", TRANSPORT_OK, 100, DELIVERY_FAILED },
        { "0 (no status) failed", TRANSPORT_OK, 0, DELIVERY_FAILED },
        { "301 failed (no redirects)", TRANSPORT_OK, 301, DELIVERY_FAILED },
        { "302 failed (no redirects)", TRANSPORT_OK, 302, DELIVERY_FAILED },
        { "307 failed (no redirects)", TRANSPORT_OK, 307, DELIVERY_FAILED },
        { "400 failed", TRANSPORT_OK, 400, DELIVERY_FAILED },
        { "401 failed", TRANSPORT_OK, 401, DELIVERY_FAILED },
        { "403 failed", TRANSPORT_OK, 403, DELIVERY_FAILED },
        { "404 failed", TRANSPORT_OK, 404, DELIVERY_FAILED },
        { "408 retry", TRANSPORT_OK, 408, DELIVERY_RETRY },
        { "409 failed", TRANSPORT_OK, 409, DELIVERY_FAILED },
        { "410 failed", TRANSPORT_OK, 410, DELIVERY_FAILED },
        { "413 failed", TRANSPORT_OK, 413, DELIVERY_FAILED },
        { "422 failed", TRANSPORT_OK, 422, DELIVERY_FAILED },
        { "429 retry", TRANSPORT_OK, 429, DELIVERY_RETRY },
        { "499 failed", TRANSPORT_OK, 499, DELIVERY_FAILED },
        { "500 retry", TRANSPORT_OK, 500, DELIVERY_RETRY },
        { "502 retry", TRANSPORT_OK, 502, DELIVERY_RETRY },
        { "503 retry", TRANSPORT_OK, 503, DELIVERY_RETRY },
        { "504 retry", TRANSPORT_OK, 504, DELIVERY_RETRY },
        { "599 retry", TRANSPORT_OK, 599, DELIVERY_RETRY },
        { "600 failed", TRANSPORT_OK, 600, DELIVERY_FAILED },
        { "timeout retry", TRANSPORT_TIMEOUT, 0, DELIVERY_RETRY },
        { "connect retry", TRANSPORT_CONNECT, 0, DELIVERY_RETRY },
        { "dns retry", TRANSPORT_DNS, 0, DELIVERY_RETRY },
        { "reset retry", TRANSPORT_RESET, 0, DELIVERY_RETRY },
        { "tls retry", TRANSPORT_TLS, 0, DELIVERY_RETRY },
        { "other retry", TRANSPORT_OTHER, 0, DELIVERY_RETRY },
        { "timeout with a stale 200 still retries", TRANSPORT_TIMEOUT, 200, DELIVERY_RETRY },
        { "response too large retries", TRANSPORT_TOO_LARGE, 0, DELIVERY_RETRY },
        { "invalid response retries", TRANSPORT_PROTOCOL, 0, DELIVERY_RETRY },
        { "internal address refused fails", TRANSPORT_REFUSED, 0, DELIVERY_FAILED },
};

static void test_outcome_row(void **state) {
        const OutcomeRow *row = *state;

        assert_int_equal(delivery_outcome(row->transport, row->status), row->expected);
}

/* ---- delays ---- */

#define S 1000000ULL
#define MS 1000ULL

static const BackoffPolicy policy = { .base_usec = 1 * S, .max_usec = 60 * S, .retry_after_max_usec = 600 * S };

typedef struct DelayRow {
        const char *name;
        unsigned attempts;
        uint64_t random;
        uint64_t retry_after;
        uint64_t expected;
} DelayRow;

static const DelayRow delay_rows[] = {
        /* cap = base·2^(attempts-1), delay = cap/2 + random % (cap/2 + 1) */
        { "attempt 1, random 0: half the base", 1, 0, 0, 500 * MS },
        { "attempt 1, random max in range: the base", 1, 500 * MS, 0, 1 * S },
        { "attempt 1, random wraps", 1, 500 * MS + 1, 0, 500 * MS },
        { "attempt 2, random 0", 2, 0, 0, 1 * S },
        { "attempt 2, random 1", 2, 1, 0, 1 * S + 1 },
        { "attempt 3, random 0", 3, 0, 0, 2 * S },
        { "attempt 4, random top", 4, 4 * S, 0, 8 * S },
        { "attempt 7 reaches the cap", 7, 0, 0, 30 * S },
        { "attempt 8 stays at the cap", 8, 0, 0, 30 * S },
        { "attempt 8 at most the max", 8, 30 * S, 0, 60 * S },
        { "attempt 1000 no overflow", 1000, UINT64_MAX, 0, 30 * S + UINT64_MAX % (30 * S + 1) },
        { "attempts 0 like 1", 0, 0, 0, 500 * MS },
        { "Retry-After raises the delay", 1, 0, 5, 5 * S },
        { "Retry-After below the delay is moot", 4, 0, 1, 4 * S },
        { "Retry-After is bounded", 1, 0, 100000, 600 * S },
        { "Retry-After huge no overflow", 1, 0, UINT64_MAX, 600 * S },
};

static void test_delay_row(void **state) {
        const DelayRow *row = *state;

        assert_int_equal(backoff_delay_usec(&policy, row->attempts, row->random, row->retry_after), row->expected);
}

static void test_delay_bounds(_unused_ void **state) {
        /* Whatever the random value, the delay stays within [cap/2, cap]. */
        static const uint64_t randoms[] = { 0, 1, 2, 12345, 999999, UINT32_MAX, UINT64_MAX / 3, UINT64_MAX };

        for (unsigned a = 1; a <= 12; a++) {
                uint64_t cap = MIN(policy.base_usec << (a - 1), policy.max_usec);

                for (size_t i = 0; i < ELEMENTSOF(randoms); i++) {
                        uint64_t d = backoff_delay_usec(&policy, a, randoms[i], 0);
                        assert_true(d >= cap / 2);
                        assert_true(d <= cap);
                }
        }
}

typedef struct RetryAfterRow {
        const char *name;
        const char *value;
        uint64_t expected;
} RetryAfterRow;

static const RetryAfterRow retry_after_rows[] = {
        { "NULL", NULL, 0 },
        { "empty", "", 0 },
        { "seconds", "120", 120 },
        { "zero", "0", 0 },
        { "leading and trailing space", " 7 \r\n", 7 },
        { "negative", "-5", 0 },
        { "fraction", "1.5", 0 },
        { "HTTP-date", "Wed, 21 Oct 2015 07:28:00 GMT", 0 },
        { "trailing garbage", "5s", 0 },
        { "overflow saturates", "99999999999999999999999", UINT64_MAX },
};

static void test_retry_after_row(void **state) {
        const RetryAfterRow *row = *state;

        assert_int_equal(retry_after_parse(row->value), row->expected);
}

/* ---- signature: known answers computed independently (Python's hmac module) ---- */

static void test_signature(_unused_ void **state) {
        char sig[CALLBACK_SIGNATURE_MAX];

        assert_int_equal(callback_signature("key", 3, 1700000000, "{\"a\":1}", 7, sig), 0);
        assert_string_equal(sig, "t=1700000000,v1=a438e398bfafc57e4396bb7fc2304422f0f768e965d073ca313cb52e22e6ad03");

        assert_int_equal(callback_signature("secret", 6, 0, NULL, 0, sig), 0);
        assert_string_equal(sig, "t=0,v1=3445798a051818ef95def46c2eb62b43d377ce6e3c29b4d0aec3da0e59577f79");

        /* a different key, time or body gives a different signature */
        assert_int_equal(callback_signature("kez", 3, 1700000000, "{\"a\":1}", 7, sig), 0);
        assert_string_not_equal(sig, "t=1700000000,v1=a438e398bfafc57e4396bb7fc2304422f0f768e965d073ca313cb52e22e6ad03");
        assert_int_equal(callback_signature("key", 3, 1700000001, "{\"a\":1}", 7, sig), 0);
        assert_string_not_equal(sig + 17, "a438e398bfafc57e4396bb7fc2304422f0f768e965d073ca313cb52e22e6ad03");

        /* the longest header fits */
        assert_int_equal(callback_signature("key", 3, UINT64_MAX, "x", 1, sig), 0);
        assert_int_equal(strlen(sig), strlen("t=18446744073709551615,v1=") + 64);

        assert_int_equal(callback_signature(NULL, 0, 1, "x", 1, sig), -EINVAL);
        assert_int_equal(callback_signature("key", 0, 1, "x", 1, sig), -EINVAL);
        assert_int_equal(callback_signature("key", 3, 1, NULL, 1, sig), -EINVAL);
}

/* ---- callback_url ---- */

typedef struct UrlRow {
        const char *name;
        const char *url;
        bool valid;
        const char *why;       /* substring of the reason, for invalid rows */
} UrlRow;

static const UrlRow url_rows[] = {
        { "http", "http://example.com/hook", true, NULL },
        { "https", "https://example.com/hook?x=1&y=2#f", true, NULL },
        { "scheme case-insensitive", "HTTPS://Example.COM/", true, NULL },
        { "no path", "http://example.com", true, NULL },
        { "port", "http://127.0.0.1:8080/cb", true, NULL },
        { "port 65535", "http://h:65535", true, NULL },
        { "ipv6", "http://[::1]:9000/x", true, NULL },
        { "ipv6 no port", "http://[::1]/x", true, NULL },
        { "percent-encoded", "http://h/a%20b", true, NULL },
        { "NULL", NULL, false, "expected" },
        { "empty", "", false, "http" },
        { "ftp", "ftp://example.com/", false, "http" },
        { "file", "file:///etc/passwd", false, "http" },
        { "gopher", "gopher://h/", false, "http" },
        { "no scheme", "example.com/hook", false, "http" },
        { "scheme only", "http://", false, "host" },
        { "no host, path", "http:///path", false, "host" },
        { "no host, port", "http://:80/", false, "host" },
        { "space", "http://h/a b", false, "white space" },
        { "tab", "http://h/\tb", false, "white space" },
        { "newline (header injection)", "http://h/\r\nX-Evil: 1", false, "white space" },
        { "DEL", "http://h/\x7f", false, "control" },
        { "non-ASCII", "http://h\xc3\xa4/", false, "non-ASCII" },
        { "credentials", "http://user:pw@h/", false, "credentials" },
        { "at sign in path is fine?", "http://h/a@b", true, NULL },
        { "port 0", "http://h:0/", false, "port" },
        { "port 65536", "http://h:65536/", false, "port" },
        { "port letters", "http://h:http/", false, "port" },
        { "port empty", "http://h:/", false, "port" },
        { "port too long", "http://h:000080/", false, "port" },
        { "ipv6 unterminated", "http://[::1/", false, "IPv6" },
        { "ipv6 empty", "http://[]/", false, "IPv6" },
        { "ipv6 junk after", "http://[::1]x/", false, "host" },
};

static void test_url_row(void **state) {
        const UrlRow *row = *state;
        const char *why = "unset";

        assert_int_equal(callback_url_is_valid(row->url, &why), row->valid);
        if (row->valid)
                assert_null(why);
        else {
                assert_non_null(why);
                if (!strstr(why, row->why)) {
                        print_error("reason '%s' lacks '%s'\n", why, row->why);
                        fail();
                }
        }
}

static void test_url_length(_unused_ void **state) {
        char url[CALLBACK_URL_MAX + 2];

        memset(url, 'a', sizeof(url));
        memcpy(url, "http://h/", 9);
        url[CALLBACK_URL_MAX] = 0;
        assert_true(callback_url_is_valid(url, NULL));
        url[CALLBACK_URL_MAX] = 'a';
        url[CALLBACK_URL_MAX + 1] = 0;
        assert_false(callback_url_is_valid(url, NULL));
}

static void test_transport_names(_unused_ void **state) {
        /* The phrases are what callers see (callback.last_error, error_message) and docs/http-api.md
         * lists: a contract. None may carry a detail such as an address or a port. */
        static const char *const want[_TRANSPORT_MAX] = {
                [TRANSPORT_OK] = "ok",
                [TRANSPORT_TIMEOUT] = "timeout",
                [TRANSPORT_CONNECT] = "connection failed",
                [TRANSPORT_DNS] = "name resolution failed",
                [TRANSPORT_RESET] = "connection closed",
                [TRANSPORT_TLS] = "tls error",
                [TRANSPORT_TOO_LARGE] = "response too large",
                [TRANSPORT_OTHER] = "transfer failed",
                [TRANSPORT_REFUSED] = "refused: internal address",
                [TRANSPORT_PROTOCOL] = "invalid response",
        };

        for (TransportResult t = 0; t < _TRANSPORT_MAX; t++) {
                assert_non_null(want[t]);
                assert_string_equal(transport_result_to_string(t), want[t]);
        }
        assert_null(transport_result_to_string(_TRANSPORT_MAX));
}

/* The URL as logged: short, whatever the caller sent. */
typedef struct LogUrlRow {
        const char *name, *url, *want;
} LogUrlRow;

static const LogUrlRow log_url_rows[] = {
        { "log: plain", "http://127.0.0.1:8080/hook", "http://127.0.0.1:8080/hook" },
        { "log: https, no path", "https://example.com", "https://example.com" },
        { "log: query dropped", "https://example.com/cb?token=s3cret", "https://example.com/cb?..." },
        { "log: fragment dropped", "https://example.com/cb#s3cret", "https://example.com/cb?..." },
        { "log: long path cut at 32", "http://h/0123456789012345678901234567890123456789",
          "http://h/0123456789012345678901234567890..." },
        { "log: IPv6", "http://[::1]:9/x", "http://[::1]:9/x" },
        { "log: NULL", NULL, "(none)" },
        { "log: control bytes", "http://h/\x01\x1b[31m", "http://h/??[31m" },
};

static void test_log_url_row(void **state) {
        const LogUrlRow *row = *state;
        char buf[CALLBACK_URL_LOG_MAX];

        assert_string_equal(callback_url_for_log(row->url, buf), row->want);
}

/* A 2 KiB URL, in the host or in the path: at most CALLBACK_URL_LOG_MAX - 1 bytes, never the whole. */
static void test_log_url_long(_unused_ void **state) {
        char url[CALLBACK_URL_MAX + 1], buf[CALLBACK_URL_LOG_MAX];

        memset(url, 'a', CALLBACK_URL_MAX);
        url[CALLBACK_URL_MAX] = 0;
        memcpy(url, "http://h/", 9);
        assert_true(callback_url_is_valid(url, NULL));
        assert_true(strlen(callback_url_for_log(url, buf)) < 64);
        memcpy(url, "https://", 8);        /* now all of it is the host */
        assert_true(strlen(callback_url_for_log(url, buf)) < CALLBACK_URL_LOG_MAX);
        assert_non_null(strstr(buf, "..."));
        memset(url, 'x', CALLBACK_URL_MAX);  /* no scheme at all */
        assert_true(strlen(callback_url_for_log(url, buf)) < CALLBACK_URL_LOG_MAX);
}

#define ROWS(tests, i, table, fn)                                                                    \
        for (size_t k = 0; k < ELEMENTSOF(table); k++)                                               \
                tests[i++] = (struct CMUnitTest) { table[k].name, fn, NULL, NULL, (void *) &table[k] }

int main(void) {
        size_t n = ELEMENTSOF(outcome_rows) + ELEMENTSOF(delay_rows) + ELEMENTSOF(retry_after_rows) +
                   ELEMENTSOF(url_rows) + ELEMENTSOF(log_url_rows) + 9, i = 0;
        _cleanup_free_ struct CMUnitTest *tests = calloc(n, sizeof(struct CMUnitTest));

        if (!tests)
                return EXIT_FAILURE;
        ROWS(tests, i, outcome_rows, test_outcome_row);
        ROWS(tests, i, delay_rows, test_delay_row);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_delay_bounds);
        ROWS(tests, i, retry_after_rows, test_retry_after_row);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_signature);
        ROWS(tests, i, url_rows, test_url_row);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_url_length);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_transport_names);
        ROWS(tests, i, log_url_rows, test_log_url_row);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_log_url_long);
        if (i > n)
                abort();
        return _cmocka_run_group_tests("backoff", tests, i, NULL, NULL);
}

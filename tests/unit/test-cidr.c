/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "net/cidr.h"
#include "util.h"

/* CIDR blocks (--permit=, PermitAddresses=), row by row, each row its own cmocka test:
 *  - parsing: what is read, into which block (a bare address is a /32 or /128), and every refusal
 *    with its reason — host bits beyond the prefix, lengths out of range or with a leading zero,
 *    the IPv4 spellings inet_aton() would read but inet_pton() does not, brackets and zones;
 *  - matching: the edges of each block, IPv4-mapped IPv6 addresses against IPv4 blocks, IPv4
 *    addresses against an IPv6 block of the mapped range, /0 blocks, and socket addresses. */

/* ---- parsing ---------------------------------------------------------------------------------- */

typedef struct ParseRow {
        const char *name;
        const char *input;
        CidrReason reason;
        const char *text;                /* CIDR_OK: cidr_to_string() of the block */
} ParseRow;

#define OK(in, txt) { "ok " in, in, CIDR_OK, txt }
#define NO(in, r) { #r " " in, in, CIDR_##r, NULL }

static ParseRow parse_rows[] = {
        OK("198.18.0.0/30", "198.18.0.0/30"),
        OK("10.0.0.0/8", "10.0.0.0/8"),
        OK("127.0.0.1", "127.0.0.1/32"),
        OK("127.0.0.1/32", "127.0.0.1/32"),
        OK("0.0.0.0/0", "0.0.0.0/0"),
        OK("192.168.1.128/25", "192.168.1.128/25"),
        OK("2001:db8::/32", "2001:db8::/32"),
        OK("2001:DB8::/32", "2001:db8::/32"),
        OK("::1", "::1/128"),
        OK("::/0", "::/0"),
        OK("fd00::/8", "fd00::/8"),
        OK("::ffff:0.0.0.0/96", "::ffff:0.0.0.0/96"),
        OK("fe80::/10", "fe80::/10"),
        OK("2001:db8::1/128", "2001:db8::1/128"),

        NO("", EMPTY),
        NO("/8", EMPTY),
        NO("ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255/128x", TOO_LONG),
        NO("127.1", BAD_ADDRESS),
        NO("0x7f.0.0.1", BAD_ADDRESS),
        NO("2130706433", BAD_ADDRESS),
        NO("010.0.0.1", BAD_ADDRESS),
        NO("256.0.0.0/8", BAD_ADDRESS),
        NO("[::1]", BAD_ADDRESS),
        NO("fe80::1%eth0", BAD_ADDRESS),
        NO("localhost", BAD_ADDRESS),
        NO(" 10.0.0.0/8", BAD_ADDRESS),
        NO("10.0.0.0 /8", BAD_ADDRESS),
        NO("10.0.0.0/", BAD_LENGTH),
        NO("10.0.0.0/33", BAD_LENGTH),
        NO("10.0.0.0/08", BAD_LENGTH),
        NO("10.0.0.0/+8", BAD_LENGTH),
        NO("10.0.0.0/-1", BAD_LENGTH),
        NO("10.0.0.0/8/8", BAD_LENGTH),
        NO("10.0.0.0/8 ", BAD_LENGTH),
        NO("10.0.0.0/1000", BAD_LENGTH),
        NO("::/129", BAD_LENGTH),
        NO("198.18.0.1/30", HOST_BITS),
        NO("10.0.0.1/8", HOST_BITS),
        NO("0.0.0.1/0", HOST_BITS),
        NO("192.168.1.128/24", HOST_BITS),
        NO("2001:db8::1/32", HOST_BITS),
        NO("fe80::/8", HOST_BITS),
        NO("::1/127", HOST_BITS),
};

static void test_parse_row(void **state) {
        const ParseRow *row = *state;
        char buf[CIDR_STRLEN_MAX + 1];
        Cidr c = { .family = -1 };
        CidrReason r;

        r = cidr_parse(row->input, &c);
        assert_string_equal(cidr_reason_to_string(r), cidr_reason_to_string(row->reason));
        if (row->reason == CIDR_OK)
                assert_string_equal(cidr_to_string(&c, buf), row->text);
        else
                assert_int_equal(c.family, -1);         /* untouched on a refusal */
}

static void test_parse_null(_unused_ void **state) {
        Cidr c;

        assert_int_equal(cidr_parse(NULL, &c), CIDR_EMPTY);
}

/* ---- matching --------------------------------------------------------------------------------- */

typedef struct MatchRow {
        const char *name;
        const char *block;
        const char *address;
        bool match;
} MatchRow;

#define YES(b, a) { "match " b " " a, b, a, true }
#define NOT(b, a) { "no match " b " " a, b, a, false }

static MatchRow match_rows[] = {
        YES("198.18.0.0/30", "198.18.0.0"),
        YES("198.18.0.0/30", "198.18.0.3"),
        NOT("198.18.0.0/30", "198.18.0.4"),
        NOT("198.18.0.0/30", "198.17.255.255"),
        YES("127.0.0.1", "127.0.0.1"),
        NOT("127.0.0.1", "127.0.0.2"),
        YES("127.0.0.0/8", "127.255.255.255"),
        YES("0.0.0.0/0", "8.8.8.8"),
        YES("192.168.1.128/25", "192.168.1.200"),
        NOT("192.168.1.128/25", "192.168.1.127"),
        /* An IPv4-mapped IPv6 address is the IPv4 address it carries. */
        YES("198.18.0.0/30", "::ffff:198.18.0.2"),
        NOT("198.18.0.0/30", "::ffff:198.18.0.4"),
        YES("127.0.0.1", "::ffff:127.0.0.1"),
        YES("0.0.0.0/0", "::ffff:1.2.3.4"),
        /* ...and an IPv4 address is covered by an IPv6 block of the mapped range. */
        YES("::ffff:0.0.0.0/96", "10.1.2.3"),
        YES("::ffff:10.0.0.0/104", "10.200.0.1"),
        NOT("::ffff:10.0.0.0/104", "11.0.0.1"),
        /* IPv4 blocks never cover other IPv6 addresses, nor the embeddings netaddr.h decodes. */
        NOT("0.0.0.0/0", "2001:db8::1"),
        NOT("127.0.0.0/8", "::127.0.0.1"),
        NOT("127.0.0.0/8", "64:ff9b::7f00:1"),
        NOT("127.0.0.0/8", "::1"),
        YES("2001:db8::/32", "2001:db8::1"),
        YES("2001:db8::/32", "2001:db8:ffff:ffff:ffff:ffff:ffff:ffff"),
        NOT("2001:db8::/32", "2001:db9::"),
        YES("fe80::/10", "febf::1"),
        NOT("fe80::/10", "fec0::1"),
        YES("::1", "::1"),
        NOT("::1", "::2"),
        YES("::/0", "2001:db8::1"),
        YES("::/0", "127.0.0.1"),
        NOT("2001:db8::/32", "127.0.0.1"),
};

static void parse_address(const char *s, struct sockaddr_storage *ss, size_t *len) {
        memset(ss, 0, sizeof(*ss));
        if (inet_pton(AF_INET, s, &((struct sockaddr_in *) ss)->sin_addr) == 1) {
                ss->ss_family = AF_INET;
                *len = sizeof(struct sockaddr_in);
                return;
        }
        assert_int_equal(inet_pton(AF_INET6, s, &((struct sockaddr_in6 *) ss)->sin6_addr), 1);
        ss->ss_family = AF_INET6;
        *len = sizeof(struct sockaddr_in6);
}

static void test_match_row(void **state) {
        const MatchRow *row = *state;
        struct sockaddr_storage ss;
        Cidr c[2] = {};
        size_t len;

        assert_int_equal(cidr_parse(row->block, &c[1]), CIDR_OK);
        assert_int_equal(cidr_parse("203.0.113.0/24", &c[0]), CIDR_OK);   /* a list of two */
        parse_address(row->address, &ss, &len);

        assert_int_equal(cidr_list_match_sockaddr(c, 2, (struct sockaddr *) &ss, len), row->match);
        if (ss.ss_family == AF_INET) {
                assert_int_equal(cidr_match_ipv4(&c[1], &((struct sockaddr_in *) &ss)->sin_addr), row->match);
                assert_int_equal(cidr_list_match_ipv4(c, 2, &((struct sockaddr_in *) &ss)->sin_addr), row->match);
        } else {
                assert_int_equal(cidr_match_ipv6(&c[1], &((struct sockaddr_in6 *) &ss)->sin6_addr), row->match);
                assert_int_equal(cidr_list_match_ipv6(c, 2, &((struct sockaddr_in6 *) &ss)->sin6_addr),
                                 row->match);
        }
        /* A socket address one byte short is never judged a match. */
        assert_false(cidr_list_match_sockaddr(c, 2, (struct sockaddr *) &ss, len - 1));
}

static void test_match_edges(_unused_ void **state) {
        struct sockaddr_un_like {
                sa_family_t family;
                char path[108];
        } un = { .family = AF_UNIX };
        struct in_addr a = { .s_addr = htonl(0x7f000001) };
        Cidr c;

        assert_int_equal(cidr_parse("0.0.0.0/0", &c), CIDR_OK);
        assert_false(cidr_list_match_ipv4(NULL, 0, &a));
        assert_false(cidr_list_match_ipv4(&c, 0, &a));
        assert_true(cidr_list_match_ipv4(&c, 1, &a));
        assert_false(cidr_list_match_sockaddr(&c, 1, NULL, 0));
        assert_false(cidr_list_match_sockaddr(&c, 1, (struct sockaddr *) &un, sizeof(un)));
}

static void test_reasons(_unused_ void **state) {
        for (int r = 0; r < _CIDR_REASON_MAX; r++)
                assert_non_null(cidr_reason_to_string(r));
        assert_null(cidr_reason_to_string(_CIDR_REASON_MAX));
}

#define ROWS(tests, i, table, fn)                                                                    \
        for (size_t k = 0; k < ELEMENTSOF(table); k++)                                               \
                tests[i++] = (struct CMUnitTest) { table[k].name, fn, NULL, NULL, (void *) &table[k] }

int main(void) {
        size_t n = ELEMENTSOF(parse_rows) + ELEMENTSOF(match_rows) + 3, i = 0;
        _cleanup_free_ struct CMUnitTest *tests = calloc(n, sizeof(struct CMUnitTest));

        if (!tests)
                return EXIT_FAILURE;
        ROWS(tests, i, parse_rows, test_parse_row);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_parse_null);
        ROWS(tests, i, match_rows, test_match_row);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_match_edges);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_reasons);
        if (i > n)
                abort();
        return _cmocka_run_group_tests("cidr", tests, i, NULL, NULL);
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <arpa/inet.h>
#include <sys/un.h>

#include "net/netaddr.h"
#include "util.h"

/* The internal-address filter, row by row, each row its own cmocka test named after it:
 *  - the registry rows: the tables hold exactly these blocks, in this order, written here a second
 *    time as text (so a typo in the module's bytes shows), and the first and last address of each
 *    block are judged as the row says (for the rows that carry an IPv4 address: public with a public
 *    one inside, internal with loopback inside);
 *  - addresses: the forms an attacker writes for 127.0.0.1 and the metadata service, and public
 *    addresses that must stay reachable;
 *  - the decoding of embedded IPv4 addresses (Teredo's example from RFC 4380 included). */

/* ---- the registry rows ------------------------------------------------------------------------ */

typedef struct BlockRow {
        const char *name;        /* the test's name */
        int family;
        const char *prefix;
        unsigned length;
        NetaddrKind kind;
        const char *reference;
        size_t index;            /* in the module's table: rows are checked in order */
} BlockRow;

#define R4(p, len, k, ref) { "ipv4 " p "/" #len " " #k, AF_INET, p, len, NETADDR_##k, ref, 0 }
#define R6(p, len, k, ref) { "ipv6 " p "/" #len " " #k, AF_INET6, p, len, NETADDR_##k, ref, 0 }

static BlockRow ipv4_rows[] = {
        R4("0.0.0.0", 0, PUBLIC, "RFC 6890"),
        R4("0.0.0.0", 8, INTERNAL, "RFC 791 §3.2"),
        R4("0.0.0.0", 32, INTERNAL, "RFC 1122 §3.2.1.3"),
        R4("10.0.0.0", 8, INTERNAL, "RFC 1918"),
        R4("100.64.0.0", 10, INTERNAL, "RFC 6598"),
        R4("127.0.0.0", 8, INTERNAL, "RFC 1122 §3.2.1.3"),
        R4("169.254.0.0", 16, INTERNAL, "RFC 3927"),
        R4("172.16.0.0", 12, INTERNAL, "RFC 1918"),
        R4("192.0.0.0", 24, INTERNAL, "RFC 6890 §2.1"),
        R4("192.0.0.0", 29, INTERNAL, "RFC 7335"),
        R4("192.0.0.8", 32, INTERNAL, "RFC 7600"),
        R4("192.0.0.9", 32, INTERNAL, "RFC 7723"),
        R4("192.0.0.10", 32, INTERNAL, "RFC 8155"),
        R4("192.0.0.170", 32, INTERNAL, "RFC 8880, RFC 7050 §2.2"),
        R4("192.0.0.171", 32, INTERNAL, "RFC 8880, RFC 7050 §2.2"),
        R4("192.0.2.0", 24, INTERNAL, "RFC 5737"),
        R4("192.31.196.0", 24, PUBLIC, "RFC 7535"),
        R4("192.52.193.0", 24, PUBLIC, "RFC 7450"),
        R4("192.88.99.0", 24, INTERNAL, "RFC 7526"),
        R4("192.88.99.2", 32, INTERNAL, "RFC 6751"),
        R4("192.168.0.0", 16, INTERNAL, "RFC 1918"),
        R4("192.175.48.0", 24, PUBLIC, "RFC 7534"),
        R4("198.18.0.0", 15, INTERNAL, "RFC 2544"),
        R4("198.51.100.0", 24, INTERNAL, "RFC 5737"),
        R4("203.0.113.0", 24, INTERNAL, "RFC 5737"),
        R4("224.0.0.0", 4, INTERNAL, "RFC 5771"),
        R4("240.0.0.0", 4, INTERNAL, "RFC 1112 §4"),
        R4("255.255.255.255", 32, INTERNAL, "RFC 8190, RFC 919 §7"),
};

static BlockRow ipv6_rows[] = {
        R6("::", 0, INTERNAL, "RFC 4291 §2.4"),
        R6("2000::", 3, PUBLIC, "RFC 4291 §2.4"),
        R6("::1", 128, INTERNAL, "RFC 4291"),
        R6("::", 128, INTERNAL, "RFC 4291"),
        R6("::ffff:0:0", 96, EMBED_LAST32, "RFC 4291 §2.5.5.2"),
        R6("::ffff:0:0:0", 96, EMBED_LAST32, "RFC 2765 §2.1"),
        R6("::", 96, EMBED_LAST32, "RFC 4291 §2.5.5.1"),
        R6("64:ff9b::", 96, EMBED_LAST32, "RFC 6052 §2.1"),
        R6("64:ff9b:1::", 48, EMBED_LOCAL_NAT64, "RFC 8215"),
        R6("100::", 64, INTERNAL, "RFC 6666"),
        R6("100:0:0:1::", 64, INTERNAL, "RFC 9780"),
        R6("2001::", 23, INTERNAL, "RFC 2928"),
        R6("2001::", 32, EMBED_TEREDO, "RFC 4380, RFC 8190"),
        R6("2001:1::1", 128, INTERNAL, "RFC 7723"),
        R6("2001:1::2", 128, INTERNAL, "RFC 8155"),
        R6("2001:1::3", 128, INTERNAL, "RFC 9665"),
        R6("2001:2::", 48, INTERNAL, "RFC 5180"),
        R6("2001:3::", 32, PUBLIC, "RFC 7450"),
        R6("2001:4:112::", 48, PUBLIC, "RFC 7535"),
        R6("2001:10::", 28, INTERNAL, "RFC 4843"),
        R6("2001:20::", 28, PUBLIC, "RFC 7343"),
        R6("2001:30::", 28, PUBLIC, "RFC 9374"),
        R6("2001:db8::", 32, INTERNAL, "RFC 3849"),
        R6("2002::", 16, EMBED_6TO4, "RFC 3056"),
        R6("2620:4f:8000::", 48, PUBLIC, "RFC 7534"),
        R6("3fff::", 20, INTERNAL, "RFC 9637"),
        R6("5f00::", 16, INTERNAL, "RFC 9602"),
        R6("fc00::", 7, INTERNAL, "RFC 4193, RFC 8190"),
        R6("fe80::", 10, INTERNAL, "RFC 4291"),
        R6("fec0::", 10, INTERNAL, "RFC 3879"),
        R6("ff00::", 8, INTERNAL, "RFC 4291 §2.7"),
};

static const uint8_t loopback4[4] = { 127, 0, 0, 1 }, public4[4] = { 8, 8, 8, 8 };

/* The first (last = false) or last address of the block. */
static void block_end(const uint8_t *prefix, unsigned length, size_t bytes, bool last, uint8_t *ret) {
        for (size_t i = 0; i < bytes; i++) {
                unsigned bit = (unsigned) i * 8;
                uint8_t host = bit >= length ? 0xff : bit + 8 <= length ? 0 : (uint8_t) (0xff >> (length - bit));

                ret[i] = last ? (uint8_t) (prefix[i] | host) : (uint8_t) (prefix[i] & ~host);
        }
}

/* Put v4 where a row of this kind carries its IPv4 address (Teredo: both, the client inverted). */
static void embed(NetaddrKind kind, uint8_t a[16], const uint8_t v4[4]) {
        switch (kind) {
        case NETADDR_EMBED_LAST32:
        case NETADDR_EMBED_LOCAL_NAT64:
                memcpy(a + 12, v4, 4);
                break;
        case NETADDR_EMBED_6TO4:
                memcpy(a + 2, v4, 4);
                break;
        case NETADDR_EMBED_TEREDO:
                memcpy(a + 4, v4, 4);
                for (size_t i = 0; i < 4; i++)
                        a[12 + i] = (uint8_t) ~v4[i];
                break;
        default:
                break;
        }
}

static const NetaddrBlock *lookup(int family, const uint8_t *a) {
        if (family == AF_INET) {
                struct in_addr v;

                memcpy(&v.s_addr, a, 4);
                return netaddr_ipv4_lookup(&v);
        }
        struct in6_addr v;

        memcpy(v.s6_addr, a, 16);
        return netaddr_ipv6_lookup(&v);
}

static bool is_internal(int family, const uint8_t *a) {
        struct sockaddr_storage ss = {};

        if (family == AF_INET) {
                struct sockaddr_in *sa = (struct sockaddr_in *) &ss;

                sa->sin_family = AF_INET;
                memcpy(&sa->sin_addr.s_addr, a, 4);
                return netaddr_is_internal((struct sockaddr *) sa, sizeof(*sa));
        }
        struct sockaddr_in6 *sa = (struct sockaddr_in6 *) &ss;

        sa->sin6_family = AF_INET6;
        memcpy(sa->sin6_addr.s6_addr, a, 16);
        return netaddr_is_internal((struct sockaddr *) sa, sizeof(*sa));
}

static void test_block_row(void **state) {
        const BlockRow *row = *state;
        size_t n, bytes = row->family == AF_INET ? 4 : 16;
        const NetaddrBlock *table = row->family == AF_INET ? netaddr_ipv4_table(&n) : netaddr_ipv6_table(&n);
        const NetaddrBlock *b;
        uint8_t want[16] = {}, first[16] = {}, last[16] = {};

        assert_int_equal(inet_pton(row->family, row->prefix, want), 1);
        assert_true(row->index < n);
        b = table + row->index;

        /* The module's row is this one. */
        assert_int_equal(b->family, row->family);
        assert_memory_equal(b->prefix, want, bytes);
        assert_int_equal(b->length, row->length);
        assert_int_equal(b->kind, row->kind);
        assert_string_equal(b->reference, row->reference);
        assert_non_null(b->name);
        assert_true(row->length <= bytes * 8);

        /* Canonical: no bits set past the prefix length. */
        block_end(want, row->length, bytes, false, first);
        assert_memory_equal(first, want, bytes);

        /* Both ends are judged by this row, unless a longer row holds them (192.0.0.0/29 holds the
         * first address of 192.0.0.0/24). */
        block_end(want, row->length, bytes, true, last);
        for (int end = 0; end < 2; end++) {
                uint8_t probe[16];
                const NetaddrBlock *got;

                memcpy(probe, end ? last : first, bytes);
                if (row->kind != NETADDR_PUBLIC && row->kind != NETADDR_INTERNAL)
                        embed(row->kind, probe, loopback4);
                got = lookup(row->family, probe);
                assert_non_null(got);
                if (got != b) {
                        assert_true(got->length > b->length);
                        continue;
                }
                switch (row->kind) {
                case NETADDR_PUBLIC:
                        assert_false(is_internal(row->family, probe));
                        break;
                case NETADDR_INTERNAL:
                        assert_true(is_internal(row->family, probe));
                        break;
                default:
                        /* Loopback inside: internal. A public IPv4 address inside: public (for the
                         * local-use NAT64 prefix in its /96 layout only). */
                        assert_true(is_internal(row->family, probe));
                        memcpy(probe, first, bytes);
                        embed(row->kind, probe, public4);
                        if (lookup(row->family, probe) == b)
                                assert_false(is_internal(row->family, probe));
                        break;
                }
        }
}

static void test_table_sizes(_unused_ void **state) {
        size_t n4, n6;

        (void) netaddr_ipv4_table(&n4);
        (void) netaddr_ipv6_table(&n6);
        /* Every row of the module is one of the rows above: none more, none fewer. */
        assert_int_equal(n4, ELEMENTSOF(ipv4_rows));
        assert_int_equal(n6, ELEMENTSOF(ipv6_rows));
}

static void test_no_duplicate_blocks(_unused_ void **state) {
        for (int f = 0; f < 2; f++) {
                size_t n;
                const NetaddrBlock *t = f == 0 ? netaddr_ipv4_table(&n) : netaddr_ipv6_table(&n);

                for (size_t i = 0; i < n; i++)
                        for (size_t j = i + 1; j < n; j++)
                                if (t[i].length == t[j].length && memcmp(t[i].prefix, t[j].prefix, 16) == 0) {
                                        print_error("rows %zu and %zu name the same block\n", i, j);
                                        fail();
                                }
        }
}

/* ---- addresses -------------------------------------------------------------------------------- */

typedef struct AddressRow {
        const char *name;
        const char *address;
        bool internal;
} AddressRow;

static const AddressRow address_rows[] = {
        { "127.0.0.1", "127.0.0.1", true },
        { "127.255.0.9", "127.255.0.9", true },
        { "10.1.2.3", "10.1.2.3", true },
        { "172.16.0.1", "172.16.0.1", true },
        { "172.31.255.255", "172.31.255.255", true },
        { "172.32.0.1 public", "172.32.0.1", false },
        { "192.168.1.1", "192.168.1.1", true },
        { "169.254.169.254 metadata", "169.254.169.254", true },
        { "100.64.0.1", "100.64.0.1", true },
        { "100.128.0.1 public", "100.128.0.1", false },
        { "0.0.0.0", "0.0.0.0", true },
        { "224.0.0.1", "224.0.0.1", true },
        { "239.255.255.250", "239.255.255.250", true },
        { "255.255.255.255", "255.255.255.255", true },
        { "198.18.0.1", "198.18.0.1", true },
        { "192.0.2.1 documentation", "192.0.2.1", true },
        { "192.0.0.9 PCP anycast", "192.0.0.9", true },
        { "192.0.1.1 public (after 192.0.0.0/24)", "192.0.1.1", false },
        { "192.31.196.1 AS112 public", "192.31.196.1", false },
        { "8.8.8.8", "8.8.8.8", false },
        { "1.1.1.1", "1.1.1.1", false },
        { "93.184.216.34", "93.184.216.34", false },
        { "223.255.255.255 public", "223.255.255.255", false },
        { "::1", "::1", true },
        { "::", "::", true },
        { "fe80::1", "fe80::1", true },
        { "fc00::1", "fc00::1", true },
        { "fd12:3456::1", "fd12:3456::1", true },
        { "fec0::1 site-local", "fec0::1", true },
        { "ff02::1", "ff02::1", true },
        { "100::1 discard", "100::1", true },
        { "2001:db8::1 documentation", "2001:db8::1", true },
        { "3fff::1 documentation", "3fff::1", true },
        { "5f00::1 SRv6", "5f00::1", true },
        { "4000::1 reserved", "4000::1", true },
        { "2001:4860:4860::8888", "2001:4860:4860::8888", false },
        { "2606:4700::1111", "2606:4700::1111", false },
        { "2001:1::1 PCP anycast", "2001:1::1", true },
        { "2001:3::1 AMT public", "2001:3::1", false },
        { "2001:4:112::1 AS112 public", "2001:4:112::1", false },
        { "2001:5::1 IETF protocol assignments", "2001:5::1", true },
        /* 127.0.0.1 and the metadata service in every IPv6 form */
        { "mapped ::ffff:127.0.0.1", "::ffff:127.0.0.1", true },
        { "mapped ::ffff:7f00:1", "::ffff:7f00:1", true },
        { "mapped ::ffff:169.254.169.254", "::ffff:169.254.169.254", true },
        { "mapped ::ffff:8.8.8.8 public", "::ffff:8.8.8.8", false },
        { "translated ::ffff:0:127.0.0.1", "::ffff:0:127.0.0.1", true },
        { "translated ::ffff:0:8.8.8.8 public", "::ffff:0:8.8.8.8", false },
        { "compatible ::127.0.0.1", "::127.0.0.1", true },
        { "compatible ::10.0.0.1", "::10.0.0.1", true },
        { "NAT64 64:ff9b::7f00:1", "64:ff9b::7f00:1", true },
        { "NAT64 64:ff9b::127.0.0.1", "64:ff9b::127.0.0.1", true },
        { "NAT64 64:ff9b::a9fe:a9fe metadata", "64:ff9b::a9fe:a9fe", true },
        { "NAT64 64:ff9b::10.0.0.1", "64:ff9b::10.0.0.1", true },
        { "NAT64 64:ff9b::8.8.8.8 public", "64:ff9b::8.8.8.8", false },
        { "NAT64 64:ff9b:0:0:1::8.8.8.8 outside the /96", "64:ff9b:0:0:1::808:808", true },
        { "local NAT64 64:ff9b:1::7f00:1", "64:ff9b:1::7f00:1", true },
        { "local NAT64 64:ff9b:1::8.8.8.8 public", "64:ff9b:1::8.8.8.8", false },
        { "local NAT64 64:ff9b:1:7f00:1:: (/48 layout) internal", "64:ff9b:1:7f00:1::", true },
        { "local NAT64 64:ff9b:1:808:8:800:: (/48 layout) internal", "64:ff9b:1:808:8:800::", true },
        { "6to4 2002:7f00:1::", "2002:7f00:1::", true },
        { "6to4 2002:7f00:1:1234::5", "2002:7f00:1:1234::5", true },
        { "6to4 2002:a9fe:a9fe::1 metadata", "2002:a9fe:a9fe::1", true },
        { "6to4 2002:c0a8:101::1 private", "2002:c0a8:101::1", true },
        { "6to4 2002:808:808::1 public", "2002:808:808::1", false },
        { "Teredo client 127.0.0.1", "2001:0:808:808:0:0:80ff:fffe", true },
        { "Teredo server 127.0.0.1", "2001:0:7f00:1:0:0:f7f7:f7f7", true },
        { "Teredo server 10.0.0.1", "2001:0:a00:1:0:0:f7f7:fbfb", true },
        { "Teredo client 169.254.169.254", "2001:0:808:808::5601:5601", true },
        { "Teredo both public", "2001:0:808:808:8000:ffff:f7f7:fbfb", false },
        { "Teredo RFC 4380 example (client 192.0.2.45, documentation)", "2001:0:4136:e378:8000:63bf:3fff:fdd2",
          true },
};

static void test_address_row(void **state) {
        const AddressRow *row = *state;
        uint8_t a[16];
        int family = strchr(row->address, ':') ? AF_INET6 : AF_INET;

        assert_int_equal(inet_pton(family, row->address, a), 1);
        if (is_internal(family, a) != row->internal) {
                const NetaddrBlock *b = lookup(family, a);

                print_error("%s: internal=%d (row %s %s)\n", row->address, !row->internal, b->name, b->reference);
                fail();
        }
}

/* ---- decoding --------------------------------------------------------------------------------- */

typedef struct EmbedRow {
        const char *name;
        const char *address;
        size_t n;
        const char *v4[2];
} EmbedRow;

static const EmbedRow embed_rows[] = {
        { "decode mapped", "::ffff:192.0.2.1", 1, { "192.0.2.1" } },
        { "decode translated", "::ffff:0:10.1.2.3", 1, { "10.1.2.3" } },
        { "decode compatible", "::10.1.2.3", 1, { "10.1.2.3" } },
        { "decode NAT64", "64:ff9b::c000:221", 1, { "192.0.2.33" } },
        { "decode local NAT64 /96", "64:ff9b:1::c000:221", 1, { "192.0.2.33" } },
        { "decode local NAT64 other layout: nothing", "64:ff9b:1:c000:2:2100::", 0, {} },
        { "decode 6to4", "2002:c000:221:1::1", 1, { "192.0.2.33" } },
        { "decode Teredo (RFC 4380 §4 example)", "2001:0:4136:e378:8000:63bf:3fff:fdd2", 2,
          { "65.54.227.120", "192.0.2.45" } },
        { "decode global unicast: nothing", "2001:4860:4860::8888", 0, {} },
        { "decode loopback: nothing", "::1", 0, {} },
};

static void test_embed_row(void **state) {
        const EmbedRow *row = *state;
        struct in6_addr a;
        struct in_addr got[2] = {};

        assert_int_equal(inet_pton(AF_INET6, row->address, &a), 1);
        assert_int_equal(netaddr_ipv6_embedded(&a, got), row->n);
        for (size_t i = 0; i < row->n; i++) {
                char buf[INET_ADDRSTRLEN];

                assert_non_null(inet_ntop(AF_INET, got + i, buf, sizeof(buf)));
                assert_string_equal(buf, row->v4[i]);
        }
}

/* ---- socket addresses ------------------------------------------------------------------------- */

static void test_sockaddr(_unused_ void **state) {
        struct sockaddr_in in = { .sin_family = AF_INET, .sin_port = htons(80) };
        struct sockaddr_in6 in6 = { .sin6_family = AF_INET6, .sin6_port = htons(80) };
        struct sockaddr_un un = { .sun_family = AF_UNIX };

        assert_int_equal(inet_pton(AF_INET, "8.8.8.8", &in.sin_addr), 1);
        assert_false(netaddr_is_internal((struct sockaddr *) &in, sizeof(in)));
        /* Too short to hold the address: refused, not read past its end. */
        assert_true(netaddr_is_internal((struct sockaddr *) &in, sizeof(in) - 1));
        assert_true(netaddr_is_internal((struct sockaddr *) &in, 1));

        assert_int_equal(inet_pton(AF_INET6, "2001:4860:4860::8888", &in6.sin6_addr), 1);
        assert_false(netaddr_is_internal((struct sockaddr *) &in6, sizeof(in6)));
        assert_true(netaddr_is_internal((struct sockaddr *) &in6, sizeof(struct sockaddr_in)));
        assert_int_equal(inet_pton(AF_INET6, "64:ff9b::7f00:1", &in6.sin6_addr), 1);
        assert_true(netaddr_is_internal((struct sockaddr *) &in6, sizeof(in6)));

        /* Neither IPv4 nor IPv6: refused. */
        assert_true(netaddr_is_internal((struct sockaddr *) &un, sizeof(un)));
        assert_true(netaddr_is_internal(NULL, 0));
}

static void test_kind_names(_unused_ void **state) {
        for (NetaddrKind k = 0; k < _NETADDR_KIND_MAX; k++)
                assert_non_null(netaddr_kind_to_string(k));
        assert_null(netaddr_kind_to_string(_NETADDR_KIND_MAX));
}

#define ROWS(tests, i, table, fn)                                                                    \
        for (size_t k = 0; k < ELEMENTSOF(table); k++)                                               \
                tests[i++] = (struct CMUnitTest) { table[k].name, fn, NULL, NULL, (void *) &table[k] }

int main(void) {
        size_t n = ELEMENTSOF(ipv4_rows) + ELEMENTSOF(ipv6_rows) + ELEMENTSOF(address_rows) +
                   ELEMENTSOF(embed_rows) + 8, i = 0;
        _cleanup_free_ struct CMUnitTest *tests = calloc(n, sizeof(struct CMUnitTest));

        if (!tests)
                return EXIT_FAILURE;
        for (size_t k = 0; k < ELEMENTSOF(ipv4_rows); k++)
                ipv4_rows[k].index = k;
        for (size_t k = 0; k < ELEMENTSOF(ipv6_rows); k++)
                ipv6_rows[k].index = k;
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_table_sizes);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_no_duplicate_blocks);
        ROWS(tests, i, ipv4_rows, test_block_row);
        ROWS(tests, i, ipv6_rows, test_block_row);
        ROWS(tests, i, address_rows, test_address_row);
        ROWS(tests, i, embed_rows, test_embed_row);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_sockaddr);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_kind_names);
        if (i > n)
                abort();
        return _cmocka_run_group_tests("netaddr", tests, i, NULL, NULL);
}

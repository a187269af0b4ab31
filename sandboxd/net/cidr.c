/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <arpa/inet.h>
#include <string.h>

#include "cidr.h"
#include "string-table.h"

static const char *const cidr_reason_table[_CIDR_REASON_MAX] = {
        [CIDR_OK] = "ok",
        [CIDR_EMPTY] = "empty address",
        [CIDR_TOO_LONG] = "longer than " STRINGIFY(CIDR_STRLEN_MAX) " bytes",
        [CIDR_BAD_ADDRESS] = "not an IPv4 or IPv6 address",
        [CIDR_BAD_LENGTH] = "prefix length not 0-32 (IPv4) or 0-128 (IPv6) in decimal",
        [CIDR_HOST_BITS] = "address has bits set beyond the prefix length",
};

DEFINE_STRING_TABLE_LOOKUP_TO_STRING(cidr_reason, CidrReason);

static bool prefix_equal(const uint8_t *a, const uint8_t *b, unsigned length) {
        unsigned bytes = length / 8, bits = length % 8;

        if (memcmp(a, b, bytes) != 0)
                return false;
        if (bits == 0)
                return true;
        uint8_t mask = (uint8_t) (0xffU << (8 - bits));
        return (a[bytes] & mask) == (b[bytes] & mask);
}

static bool host_bits_clear(const uint8_t *a, size_t size, unsigned length) {
        for (size_t i = 0; i < size; i++) {
                unsigned first = (unsigned) i * 8;
                uint8_t keep;

                if (first + 8 <= length)
                        continue;
                keep = first >= length ? 0 : (uint8_t) (0xffU << (8 - (length - first)));
                if (a[i] & (uint8_t) ~keep)
                        return false;
        }
        return true;
}

CidrReason cidr_parse(const char *s, Cidr *ret) {
        char buf[CIDR_STRLEN_MAX + 1];
        Cidr c = {};
        const char *slash;
        size_t n, addr_n;
        unsigned max;

        if (!s)
                return CIDR_EMPTY;
        n = strnlen(s, CIDR_STRLEN_MAX + 1);
        if (n > CIDR_STRLEN_MAX)
                return CIDR_TOO_LONG;
        slash = memchr(s, '/', n);
        addr_n = slash ? (size_t) (slash - s) : n;
        if (addr_n == 0)
                return CIDR_EMPTY;
        memcpy(buf, s, addr_n);
        buf[addr_n] = 0;

        if (inet_pton(AF_INET, buf, c.address) == 1) {
                c.family = AF_INET;
                max = 32;
        } else if (inet_pton(AF_INET6, buf, c.address) == 1) {
                c.family = AF_INET6;
                max = 128;
        } else
                return CIDR_BAD_ADDRESS;

        c.length = max;
        if (slash) {
                const char *p = slash + 1;
                size_t len_n = n - addr_n - 1;
                unsigned v = 0;

                if (len_n == 0 || len_n > 3 || (p[0] == '0' && len_n > 1))
                        return CIDR_BAD_LENGTH;
                for (size_t i = 0; i < len_n; i++) {
                        if (p[i] < '0' || p[i] > '9')
                                return CIDR_BAD_LENGTH;
                        v = v * 10 + (unsigned) (p[i] - '0');
                }
                if (v > max)
                        return CIDR_BAD_LENGTH;
                c.length = v;
        }
        if (!host_bits_clear(c.address, max / 8, c.length))
                return CIDR_HOST_BITS;
        *ret = c;
        return CIDR_OK;
}

char *cidr_to_string(const Cidr *c, char buf[static CIDR_STRLEN_MAX + 1]) {
        char a[INET6_ADDRSTRLEN];

        if (!c || !inet_ntop(c->family, c->address, a, sizeof(a)))
                snprintf(buf, CIDR_STRLEN_MAX + 1, "?");
        else
                snprintf(buf, CIDR_STRLEN_MAX + 1, "%s/%u", a, c->length);
        return buf;
}

static const uint8_t mapped_prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

bool cidr_match_ipv4(const Cidr *c, const struct in_addr *a) {
        uint8_t mapped[16];

        if (!c || !a)
                return false;
        if (c->family == AF_INET)
                return prefix_equal(c->address, (const uint8_t *) &a->s_addr, c->length);
        if (c->family != AF_INET6)
                return false;
        memcpy(mapped, mapped_prefix, 12);
        memcpy(mapped + 12, &a->s_addr, 4);
        return prefix_equal(c->address, mapped, c->length);
}

bool cidr_match_ipv6(const Cidr *c, const struct in6_addr *a) {
        if (!c || !a)
                return false;
        if (memcmp(a->s6_addr, mapped_prefix, 12) == 0) {
                struct in_addr v4;

                memcpy(&v4.s_addr, a->s6_addr + 12, 4);
                return cidr_match_ipv4(c, &v4);
        }
        return c->family == AF_INET6 && prefix_equal(c->address, a->s6_addr, c->length);
}

bool cidr_list_match_ipv4(const Cidr *list, size_t n, const struct in_addr *a) {
        for (size_t i = 0; list && i < n; i++)
                if (cidr_match_ipv4(list + i, a))
                        return true;
        return false;
}

bool cidr_list_match_ipv6(const Cidr *list, size_t n, const struct in6_addr *a) {
        for (size_t i = 0; list && i < n; i++)
                if (cidr_match_ipv6(list + i, a))
                        return true;
        return false;
}

bool cidr_list_match_sockaddr(const Cidr *list, size_t n, const struct sockaddr *sa, size_t len) {
        if (!sa)
                return false;
        if (sa->sa_family == AF_INET && len >= sizeof(struct sockaddr_in))
                return cidr_list_match_ipv4(list, n, &((const struct sockaddr_in *) sa)->sin_addr);
        if (sa->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6))
                return cidr_list_match_ipv6(list, n, &((const struct sockaddr_in6 *) sa)->sin6_addr);
        return false;
}

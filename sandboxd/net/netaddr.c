/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <string.h>

#include "netaddr.h"
#include "string-table.h"
#include "util.h"

static const char *const netaddr_kind_table[_NETADDR_KIND_MAX] = {
        [NETADDR_PUBLIC] = "public",
        [NETADDR_INTERNAL] = "internal",
        [NETADDR_EMBED_LAST32] = "embeds IPv4 (last 32 bits)",
        [NETADDR_EMBED_LOCAL_NAT64] = "embeds IPv4 (local-use NAT64, /96 layout)",
        [NETADDR_EMBED_6TO4] = "embeds IPv4 (6to4, bits 16-47)",
        [NETADDR_EMBED_TEREDO] = "embeds IPv4 (Teredo server and client)",
};

DEFINE_STRING_TABLE_LOOKUP_TO_STRING(netaddr_kind, NetaddrKind);

#define V4(a, b, c, d, len, kind, name, ref) { AF_INET, { a, b, c, d }, len, NETADDR_##kind, name, ref }
#define G(x) (uint8_t) ((x) >> 8), (uint8_t) ((x) & 0xff)
#define V6(g0, g1, g2, g3, g4, g5, g6, g7, len, kind, name, ref)                                            \
        { AF_INET6, { G(g0), G(g1), G(g2), G(g3), G(g4), G(g5), G(g6), G(g7) }, len, NETADDR_##kind, name, ref }

/* The IANA IPv4 Special-Purpose Address Registry, every entry, plus multicast (RFC 5771, a registry
 * of its own) and the /0 row for everything else. A block is internal when the registry says it is
 * not globally reachable; where it says it is, it is public, except for the anycast addresses that
 * are answered by a service of the local network (PCP, TURN): reaching the local network's own
 * infrastructure is what the check is for. */
static const NetaddrBlock ipv4_table[] = {
        V4(0, 0, 0, 0, 0, PUBLIC, "(no special purpose)", "RFC 6890"),
        V4(0, 0, 0, 0, 8, INTERNAL, "\"This network\"", "RFC 791 §3.2"),
        V4(0, 0, 0, 0, 32, INTERNAL, "\"This host on this network\"", "RFC 1122 §3.2.1.3"),
        V4(10, 0, 0, 0, 8, INTERNAL, "Private-Use", "RFC 1918"),
        V4(100, 64, 0, 0, 10, INTERNAL, "Shared Address Space", "RFC 6598"),
        V4(127, 0, 0, 0, 8, INTERNAL, "Loopback", "RFC 1122 §3.2.1.3"),
        /* Cloud metadata services (169.254.169.254) live here. */
        V4(169, 254, 0, 0, 16, INTERNAL, "Link Local", "RFC 3927"),
        V4(172, 16, 0, 0, 12, INTERNAL, "Private-Use", "RFC 1918"),
        V4(192, 0, 0, 0, 24, INTERNAL, "IETF Protocol Assignments", "RFC 6890 §2.1"),
        V4(192, 0, 0, 0, 29, INTERNAL, "IPv4 Service Continuity Prefix", "RFC 7335"),
        V4(192, 0, 0, 8, 32, INTERNAL, "IPv4 dummy address", "RFC 7600"),
        /* Globally reachable in the registry, but the answer comes from the local network's server. */
        V4(192, 0, 0, 9, 32, INTERNAL, "Port Control Protocol Anycast", "RFC 7723"),
        V4(192, 0, 0, 10, 32, INTERNAL, "Traversal Using Relays around NAT Anycast", "RFC 8155"),
        V4(192, 0, 0, 170, 32, INTERNAL, "NAT64/DNS64 Discovery", "RFC 8880, RFC 7050 §2.2"),
        V4(192, 0, 0, 171, 32, INTERNAL, "NAT64/DNS64 Discovery", "RFC 8880, RFC 7050 §2.2"),
        V4(192, 0, 2, 0, 24, INTERNAL, "Documentation (TEST-NET-1)", "RFC 5737"),
        V4(192, 31, 196, 0, 24, PUBLIC, "AS112-v4", "RFC 7535"),
        V4(192, 52, 193, 0, 24, PUBLIC, "AMT", "RFC 7450"),
        /* Terminated in 2015; a relay anycast is answered by the nearest relay, often the local one. */
        V4(192, 88, 99, 0, 24, INTERNAL, "Deprecated (6to4 Relay Anycast)", "RFC 7526"),
        V4(192, 88, 99, 2, 32, INTERNAL, "6a44-relay anycast address", "RFC 6751"),
        V4(192, 168, 0, 0, 16, INTERNAL, "Private-Use", "RFC 1918"),
        V4(192, 175, 48, 0, 24, PUBLIC, "Direct Delegation AS112 Service", "RFC 7534"),
        V4(198, 18, 0, 0, 15, INTERNAL, "Benchmarking", "RFC 2544"),
        V4(198, 51, 100, 0, 24, INTERNAL, "Documentation (TEST-NET-2)", "RFC 5737"),
        V4(203, 0, 113, 0, 24, INTERNAL, "Documentation (TEST-NET-3)", "RFC 5737"),
        V4(224, 0, 0, 0, 4, INTERNAL, "Multicast", "RFC 5771"),
        V4(240, 0, 0, 0, 4, INTERNAL, "Reserved", "RFC 1112 §4"),
        V4(255, 255, 255, 255, 32, INTERNAL, "Limited Broadcast", "RFC 8190, RFC 919 §7"),
};

/* The IANA IPv6 Special-Purpose Address Registry, every entry, plus the blocks of RFC 4291 and the
 * IPv6 Address Space registry that matter here: only 2000::/3 is global unicast, everything outside
 * it (multicast, the deprecated site-local and the space reserved by the IETF) is internal. Same
 * rule as for IPv4 on "globally reachable"; the forms that carry an IPv4 address are decoded. */
static const NetaddrBlock ipv6_table[] = {
        V6(0, 0, 0, 0, 0, 0, 0, 0, 0, INTERNAL, "(outside global unicast)", "RFC 4291 §2.4"),
        V6(0x2000, 0, 0, 0, 0, 0, 0, 0, 3, PUBLIC, "Global Unicast", "RFC 4291 §2.4"),
        V6(0, 0, 0, 0, 0, 0, 0, 1, 128, INTERNAL, "Loopback Address", "RFC 4291"),
        V6(0, 0, 0, 0, 0, 0, 0, 0, 128, INTERNAL, "Unspecified Address", "RFC 4291"),
        /* Linux connects an AF_INET6 socket to ::ffff:a.b.c.d over IPv4. */
        V6(0, 0, 0, 0, 0, 0xffff, 0, 0, 96, EMBED_LAST32, "IPv4-mapped Address", "RFC 4291 §2.5.5.2"),
        V6(0, 0, 0, 0, 0xffff, 0, 0, 0, 96, EMBED_LAST32, "IPv4-translated Address", "RFC 2765 §2.1"),
        V6(0, 0, 0, 0, 0, 0, 0, 0, 96, EMBED_LAST32, "IPv4-compatible Address (deprecated)", "RFC 4291 §2.5.5.1"),
        /* Globally reachable: on an IPv6-only network with DNS64 every IPv4 destination looks like
         * this, so the address it carries decides. */
        V6(0x64, 0xff9b, 0, 0, 0, 0, 0, 0, 96, EMBED_LAST32, "IPv4-IPv6 Translat.", "RFC 6052 §2.1"),
        V6(0x64, 0xff9b, 1, 0, 0, 0, 0, 0, 48, EMBED_LOCAL_NAT64, "IPv4-IPv6 Translat. (local use)", "RFC 8215"),
        V6(0x100, 0, 0, 0, 0, 0, 0, 0, 64, INTERNAL, "Discard-Only Address Block", "RFC 6666"),
        V6(0x100, 0, 0, 1, 0, 0, 0, 0, 64, INTERNAL, "Dummy IPv6 Prefix", "RFC 9780"),
        V6(0x2001, 0, 0, 0, 0, 0, 0, 0, 23, INTERNAL, "IETF Protocol Assignments", "RFC 2928"),
        V6(0x2001, 0, 0, 0, 0, 0, 0, 0, 32, EMBED_TEREDO, "TEREDO", "RFC 4380, RFC 8190"),
        /* Globally reachable in the registry, but answered by a server of the local network. */
        V6(0x2001, 1, 0, 0, 0, 0, 0, 1, 128, INTERNAL, "Port Control Protocol Anycast", "RFC 7723"),
        V6(0x2001, 1, 0, 0, 0, 0, 0, 2, 128, INTERNAL, "Traversal Using Relays around NAT Anycast", "RFC 8155"),
        V6(0x2001, 1, 0, 0, 0, 0, 0, 3, 128, INTERNAL, "DNS-SD Service Registration Protocol Anycast", "RFC 9665"),
        V6(0x2001, 2, 0, 0, 0, 0, 0, 0, 48, INTERNAL, "Benchmarking", "RFC 5180"),
        V6(0x2001, 3, 0, 0, 0, 0, 0, 0, 32, PUBLIC, "AMT", "RFC 7450"),
        V6(0x2001, 4, 0x112, 0, 0, 0, 0, 0, 48, PUBLIC, "AS112-v6", "RFC 7535"),
        V6(0x2001, 0x10, 0, 0, 0, 0, 0, 0, 28, INTERNAL, "Deprecated (previously ORCHID)", "RFC 4843"),
        V6(0x2001, 0x20, 0, 0, 0, 0, 0, 0, 28, PUBLIC, "ORCHIDv2", "RFC 7343"),
        V6(0x2001, 0x30, 0, 0, 0, 0, 0, 0, 28, PUBLIC, "Drone Remote ID Protocol Entity Tags (DETs) Prefix",
           "RFC 9374"),
        V6(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0, 32, INTERNAL, "Documentation", "RFC 3849"),
        V6(0x2002, 0, 0, 0, 0, 0, 0, 0, 16, EMBED_6TO4, "6to4", "RFC 3056"),
        V6(0x2620, 0x4f, 0x8000, 0, 0, 0, 0, 0, 48, PUBLIC, "Direct Delegation AS112 Service", "RFC 7534"),
        V6(0x3fff, 0, 0, 0, 0, 0, 0, 0, 20, INTERNAL, "Documentation", "RFC 9637"),
        V6(0x5f00, 0, 0, 0, 0, 0, 0, 0, 16, INTERNAL, "Segment Routing (SRv6) SIDs", "RFC 9602"),
        V6(0xfc00, 0, 0, 0, 0, 0, 0, 0, 7, INTERNAL, "Unique-Local", "RFC 4193, RFC 8190"),
        V6(0xfe80, 0, 0, 0, 0, 0, 0, 0, 10, INTERNAL, "Link-Local Unicast", "RFC 4291"),
        V6(0xfec0, 0, 0, 0, 0, 0, 0, 0, 10, INTERNAL, "Site-Local (deprecated)", "RFC 3879"),
        V6(0xff00, 0, 0, 0, 0, 0, 0, 0, 8, INTERNAL, "Multicast", "RFC 4291 §2.7"),
};

#undef V4
#undef G
#undef V6

const NetaddrBlock *netaddr_ipv4_table(size_t *ret_n) {
        *ret_n = ELEMENTSOF(ipv4_table);
        return ipv4_table;
}

const NetaddrBlock *netaddr_ipv6_table(size_t *ret_n) {
        *ret_n = ELEMENTSOF(ipv6_table);
        return ipv6_table;
}

static bool prefix_matches(const uint8_t *addr, const uint8_t *prefix, unsigned length) {
        unsigned full = length / 8, rest = length % 8;
        uint8_t mask;

        if (memcmp(addr, prefix, full) != 0)
                return false;
        if (rest == 0)
                return true;
        mask = (uint8_t) (0xff << (8 - rest));
        return (addr[full] & mask) == (prefix[full] & mask);
}

static const NetaddrBlock *lookup(const NetaddrBlock *table, size_t n, const uint8_t *addr) {
        const NetaddrBlock *best = NULL;

        for (size_t i = 0; i < n; i++)
                if ((!best || table[i].length > best->length) &&
                    prefix_matches(addr, table[i].prefix, table[i].length))
                        best = table + i;
        return best;
}

const NetaddrBlock *netaddr_ipv4_lookup(const struct in_addr *a) {
        return lookup(ipv4_table, ELEMENTSOF(ipv4_table), (const uint8_t *) &a->s_addr);
}

const NetaddrBlock *netaddr_ipv6_lookup(const struct in6_addr *a) {
        return lookup(ipv6_table, ELEMENTSOF(ipv6_table), a->s6_addr);
}

static struct in_addr ipv4_at(const uint8_t *p, bool inverted) {
        struct in_addr v;
        uint8_t b[4];

        for (size_t i = 0; i < 4; i++)
                b[i] = inverted ? (uint8_t) ~p[i] : p[i];
        memcpy(&v.s_addr, b, 4);
        return v;
}

size_t netaddr_ipv6_embedded(const struct in6_addr *a, struct in_addr ret[static 2]) {
        static const uint8_t zero[6] = {};
        const uint8_t *b = a->s6_addr;

        switch (netaddr_ipv6_lookup(a)->kind) {
        case NETADDR_EMBED_LAST32:
                ret[0] = ipv4_at(b + 12, false);
                return 1;
        case NETADDR_EMBED_LOCAL_NAT64:
                /* RFC 6052 §2.2 puts the IPv4 address elsewhere for prefixes shorter than /96 (and
                 * skips bits 64-71); which length a network uses is its own choice, so only the /96
                 * layout is decoded and the others stay internal. */
                if (memcmp(b + 6, zero, sizeof(zero)) != 0)
                        return 0;
                ret[0] = ipv4_at(b + 12, false);
                return 1;
        case NETADDR_EMBED_6TO4:
                ret[0] = ipv4_at(b + 2, false);
                return 1;
        case NETADDR_EMBED_TEREDO:
                /* RFC 4380 §4: 2001:0:<server IPv4>:<flags>:<port ^ 0xffff>:<client IPv4 ^ 0xffffffff>. */
                ret[0] = ipv4_at(b + 4, false);
                ret[1] = ipv4_at(b + 12, true);
                return 2;
        default:
                return 0;
        }
}

bool netaddr_ipv4_is_internal(const struct in_addr *a) {
        return netaddr_ipv4_lookup(a)->kind != NETADDR_PUBLIC;
}

bool netaddr_ipv6_is_internal(const struct in6_addr *a) {
        const NetaddrBlock *b = netaddr_ipv6_lookup(a);
        struct in_addr v4[2];
        size_t n;

        switch (b->kind) {
        case NETADDR_PUBLIC:
                return false;
        case NETADDR_INTERNAL:
                return true;
        default:
                n = netaddr_ipv6_embedded(a, v4);
                if (n == 0)
                        return true;
                for (size_t i = 0; i < n; i++)
                        if (netaddr_ipv4_is_internal(v4 + i))
                                return true;
                return false;
        }
}

bool netaddr_is_internal(const struct sockaddr *sa, size_t len) {
        if (!sa || len < sizeof(sa_family_t))
                return true;
        if (sa->sa_family == AF_INET && len >= sizeof(struct sockaddr_in))
                return netaddr_ipv4_is_internal(&((const struct sockaddr_in *) sa)->sin_addr);
        if (sa->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6))
                return netaddr_ipv6_is_internal(&((const struct sockaddr_in6 *) sa)->sin6_addr);
        return true;
}

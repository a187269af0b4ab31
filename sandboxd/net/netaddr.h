/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Which addresses sandboxd connects to on a caller's behalf (input downloads, callback deliveries):
 * the IANA IPv4 and IPv6 Special-Purpose Address Registries (RFC 6890, RFC 8190) as two tables, one
 * row per block with the document that defines it; the longest matching prefix decides. The IPv6
 * forms that carry an IPv4 address (IPv4-mapped, IPv4-translated, IPv4-compatible, NAT64, 6to4,
 * Teredo) are decoded and the IPv4 address is judged by the IPv4 table, so that 64:ff9b::7f00:1 is
 * loopback as much as 127.0.0.1 is. Pure: no I/O, no name resolution (the caller judges the address
 * a connection is about to go to, after resolution). */

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

typedef enum NetaddrKind {
        NETADDR_PUBLIC,                  /* connected to */
        NETADDR_INTERNAL,                /* refused unless the configuration allows internal addresses */
        NETADDR_EMBED_LAST32,            /* the IPv4 address in the last 32 bits decides */
        NETADDR_EMBED_LOCAL_NAT64,       /* 64:ff9b:1::/48: the last 32 bits decide in the /96 layout
                                          * (bits 48-95 zero); any other layout is internal */
        NETADDR_EMBED_6TO4,              /* the IPv4 address in bits 16-47 decides */
        NETADDR_EMBED_TEREDO,            /* the server (bits 32-63) and the client (the last 32 bits,
                                          * inverted): internal if either is */
        _NETADDR_KIND_MAX,
} NetaddrKind;

typedef struct NetaddrBlock {
        int family;                      /* AF_INET or AF_INET6 */
        uint8_t prefix[16];              /* network byte order; AF_INET uses the first 4 bytes */
        unsigned length;                 /* prefix length in bits */
        NetaddrKind kind;
        const char *name;                /* the block's name in the registry */
        const char *reference;           /* the RFC(s) that define it */
} NetaddrBlock;

const char *netaddr_kind_to_string(NetaddrKind k);

/* The tables, in registry order. Each has a /0 row, so every address has a row. */
const NetaddrBlock *netaddr_ipv4_table(size_t *ret_n);
const NetaddrBlock *netaddr_ipv6_table(size_t *ret_n);

/* The row that decides a: the longest prefix that matches. Never NULL. */
const NetaddrBlock *netaddr_ipv4_lookup(const struct in_addr *a);
const NetaddrBlock *netaddr_ipv6_lookup(const struct in6_addr *a);

/* The IPv4 addresses an IPv6 address carries according to its row, into ret: 0 (none, or a
 * layout that cannot be decoded), 1, or 2 (Teredo: the server, then the client). */
size_t netaddr_ipv6_embedded(const struct in6_addr *a, struct in_addr ret[static 2]);

bool netaddr_ipv4_is_internal(const struct in_addr *a);
bool netaddr_ipv6_is_internal(const struct in6_addr *a);

/* An AF_INET or AF_INET6 socket address of len bytes. NULL, a short one and any other family count
 * as internal: a check that cannot judge refuses. */
bool netaddr_is_internal(const struct sockaddr *sa, size_t len);

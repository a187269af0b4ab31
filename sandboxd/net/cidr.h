/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Address blocks in CIDR notation (RFC 4632 §3.1, RFC 4291 §2.3) for the egress proxy's --permit= and
 * the daemon's PermitAddresses= (issue 16): the internal addresses an administrator lets executions
 * reach. Pure: no I/O, no name resolution.
 *
 * A block is "ADDRESS/LENGTH" or a bare ADDRESS (a /32 or /128). ADDRESS is what inet_pton() reads:
 * dotted-quad IPv4 only (no "127.1", no octal or hex), IPv6 in any RFC 4291 spelling, no brackets, no
 * zone ("%eth0"). LENGTH is decimal, no sign, no leading zero (so "/08" is refused, as allowlist ports
 * are), 0-32 or 0-128. Host bits set beyond the prefix ("198.18.0.1/30") are REFUSED, not masked: in a
 * configuration file that is almost always a typo for a different block, and silently widening or
 * shifting what an administrator permitted is the wrong way to fail.
 *
 * Matching: an IPv4 address matches an IPv4 block, and an IPv6 block through its IPv4-mapped form
 * (::ffff:a.b.c.d); an IPv4-mapped IPv6 address is judged as the IPv4 address it carries, so
 * ::ffff:198.18.0.1 is covered by 198.18.0.0/30. No other embedding (NAT64, 6to4) is decoded here:
 * a permit names addresses the proxy really connects to. */

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* The longest valid block: an IPv6 address at its longest textual form, '/' and three digits. */
#define CIDR_STRLEN_MAX (INET6_ADDRSTRLEN - 1 + 4)
/* Blocks in one list (--permit=, PermitAddresses=). */
#define CIDR_LIST_MAX 64

typedef enum CidrReason {
        CIDR_OK,
        CIDR_EMPTY,                      /* "", "/8" */
        CIDR_TOO_LONG,                   /* more than CIDR_STRLEN_MAX bytes */
        CIDR_BAD_ADDRESS,                /* not an address inet_pton() reads (also brackets, zones) */
        CIDR_BAD_LENGTH,                 /* not 0-32 / 0-128 in decimal without sign or leading zero */
        CIDR_HOST_BITS,                  /* bits set beyond the prefix length */
        _CIDR_REASON_MAX,
} CidrReason;

const char *cidr_reason_to_string(CidrReason r);

typedef struct Cidr {
        int family;                      /* AF_INET or AF_INET6 */
        uint8_t address[16];             /* network byte order; AF_INET uses the first 4 bytes */
        unsigned length;                 /* prefix length in bits */
} Cidr;

/* One block, NUL-terminated: CIDR_OK and *ret (untouched otherwise), or the first reason it is not one. */
CidrReason cidr_parse(const char *s, Cidr *ret);

/* The block in text ("198.18.0.0/30"), into buf of at least CIDR_STRLEN_MAX + 1 bytes. Returns buf. */
char *cidr_to_string(const Cidr *c, char buf[static CIDR_STRLEN_MAX + 1]);

bool cidr_match_ipv4(const Cidr *c, const struct in_addr *a);
bool cidr_match_ipv6(const Cidr *c, const struct in6_addr *a);

/* Does any of the n blocks at list cover the address? NULL with n == 0 covers nothing. */
bool cidr_list_match_ipv4(const Cidr *list, size_t n, const struct in_addr *a);
bool cidr_list_match_ipv6(const Cidr *list, size_t n, const struct in6_addr *a);
/* An AF_INET or AF_INET6 socket address of len bytes; NULL, a short one or another family: false. */
bool cidr_list_match_sockaddr(const Cidr *list, size_t n, const struct sockaddr *sa, size_t len);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The network allowlist of issue 16: which host names (and ports) an execution's egress proxy lets a
 * program reach, and whether an entry a caller asks for is within the administrator's ceiling
 * (AllowDomains=). Pure: no I/O, no name resolution; the proxy resolves a name itself and judges the
 * addresses with netaddr.h, this module only judges names.
 *
 * An entry is a host name ("pypi.org") or a wildcard over the strict subdomains of a name
 * ("*.github.com": api.github.com and a.b.github.com, never github.com itself, which is its own
 * entry), optionally followed by ":PORT" (1-65535, decimal, no sign, no leading zero); without a port
 * it allows 80 and 443. Names are LDH labels only (RFC 1123 §2.1: letters, digits, hyphen; no label
 * empty, longer than 63 bytes or starting or ending with a hyphen; at most 253 bytes), one trailing
 * dot is ignored, and they are compared case-insensitively (stored lower-case). Punycode labels
 * ("xn--...") are LDH and allowed; the Unicode forms are not. IP literals are refused in every
 * spelling a resolver or URL parser might read as an address (a name ending in an all-numeric or
 * 0x-hex label: 127.1, 0x7f.1, 2130706433; anything in brackets; IPv6 without them): an allowlist
 * names hosts, and the internal-address refusal is the proxy's, after resolution. A wildcard needs at
 * least two labels after "*." ("*.com" would allow a whole top-level domain) and "*" is only ever the
 * whole first label. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util.h"

/* RFC 1035 §2.3.4 with RFC 2181 §11: 255 bytes on the wire are 253 in text (no trailing dot). */
#define ALLOWLIST_NAME_MAX 253
#define ALLOWLIST_LABEL_MAX 63
/* Entries of one list: a request's and the ceiling's. A program needs a handful of hosts; a long
 * list is a mistake or an attempt to make every request's check slow. */
#define ALLOWLIST_MAX_ENTRIES 64

typedef enum AllowlistReason {
        ALLOWLIST_OK,
        ALLOWLIST_EMPTY,                 /* "", ":443", "." */
        ALLOWLIST_NAME_TOO_LONG,         /* more than ALLOWLIST_NAME_MAX bytes (without the trailing dot) */
        ALLOWLIST_LABEL_TOO_LONG,        /* a label of more than ALLOWLIST_LABEL_MAX bytes */
        ALLOWLIST_EMPTY_LABEL,           /* "a..b", ".a", "a.." */
        ALLOWLIST_BAD_CHARACTER,         /* not a letter, digit, hyphen or dot (also '%', '_', NUL, space) */
        ALLOWLIST_BAD_HYPHEN,            /* a label starting or ending with '-' */
        ALLOWLIST_IP_LITERAL,            /* an IPv4 address in any form, or an IPv6 address */
        ALLOWLIST_BARE_WILDCARD,         /* "*", "*." */
        ALLOWLIST_WILDCARD_TOO_BROAD,    /* "*.com": fewer than two labels after "*." */
        ALLOWLIST_BAD_WILDCARD,          /* '*' anywhere but as the whole first label; a wildcard where
                                          * only a host may stand */
        ALLOWLIST_BAD_PORT,              /* not 1-65535 in decimal without sign or leading zero */
        ALLOWLIST_TOO_MANY_ENTRIES,      /* more than ALLOWLIST_MAX_ENTRIES */
        _ALLOWLIST_REASON_MAX,
} AllowlistReason;

const char *allowlist_reason_to_string(AllowlistReason r);

typedef struct AllowlistEntry {
        /* Lower case, without a trailing dot; for a wildcard the name after "*." (the suffix). */
        char name[ALLOWLIST_NAME_MAX + 1];
        bool wildcard;
        uint16_t port;                   /* 0: ports 80 and 443 */
} AllowlistEntry;

typedef struct Allowlist {
        size_t n_entries;
        AllowlistEntry *entries;
} Allowlist;

/* The host-name rules on their own, for a host a client named (the proxy's request parser): the n
 * bytes at s (not NUL-terminated; a NUL among them is a bad character) are one host name, no port, no
 * wildcard. ALLOWLIST_OK and the name lower-case without its trailing dot in ret_name (untouched
 * otherwise), or the first reason it is not one. */
AllowlistReason allowlist_host_check(const char *s, size_t n, char ret_name[static ALLOWLIST_NAME_MAX + 1]);

/* The n bytes at s as a port: ALLOWLIST_OK and *ret_port, or ALLOWLIST_BAD_PORT. */
AllowlistReason allowlist_port_parse(const char *s, size_t n, uint16_t *ret_port);

/* One entry ("host", "*.suffix", either with ":PORT"): ALLOWLIST_OK and *ret (untouched otherwise), or
 * the first reason it is not one. */
AllowlistReason allowlist_entry_parse(const char *s, AllowlistEntry *ret);

/* n entries into a list. 0 and *ret; -EINVAL for an entry that is not one (its index in
 * *ret_index and its reason in *ret_reason, which may be NULL); -E2BIG for more than
 * ALLOWLIST_MAX_ENTRIES (index ALLOWLIST_MAX_ENTRIES, ALLOWLIST_TOO_MANY_ENTRIES), checked before
 * anything is allocated; -ENOMEM. An empty list is a list that allows nothing: whether it may be
 * asked for is its caller's rule. */
int allowlist_parse(const char *const *entries, size_t n, Allowlist **ret, size_t *ret_index,
                    AllowlistReason *ret_reason);

Allowlist *allowlist_free(Allowlist *l);
DEFINE_TRIVIAL_CLEANUP_FUNC(Allowlist *, allowlist_free);
#define _cleanup_allowlist_free_ _cleanup_(allowlist_freep)

/* Does an entry allow host (case-insensitive, one trailing dot ignored) on port? A host that is not a
 * valid host name (allowlist_host_check()), port 0 and a NULL list allow nothing. */
bool allowlist_entry_match(const AllowlistEntry *e, const char *host, uint16_t port);
bool allowlist_match(const Allowlist *l, const char *host, uint16_t port);

/* What the proxy tells a client it refuses: whether the host was not in the list at all, or the list
 * names it (an entry that matches the host) only for other ports. */
typedef enum AllowlistVerdict {
        ALLOWLIST_HOST_DENIED,           /* no entry matches the host (also: no host name, NULL list) */
        ALLOWLIST_PORT_DENIED,           /* an entry matches the host, none on this port */
        ALLOWLIST_ALLOWED,               /* allowlist_match() */
        _ALLOWLIST_VERDICT_MAX,
} AllowlistVerdict;

const char *allowlist_verdict_to_string(AllowlistVerdict v);

/* allowlist_match() with the reason of a refusal. Port 0 is a port no entry allows. */
AllowlistVerdict allowlist_judge(const Allowlist *l, const char *host, uint16_t port);

/* Is e within the ceiling: does the ceiling allow everything e allows? An exact host is within when
 * the ceiling allows it on each of e's ports (by one entry or several); a wildcard only when, for each
 * of e's ports, a wildcard of the ceiling covers it (the same suffix or a parent of it: "*.x.github.com"
 * and "*.github.com" are within "*.github.com") — an exact host of the ceiling never covers a wildcard. */
bool allowlist_within(const Allowlist *ceiling, const AllowlistEntry *e);

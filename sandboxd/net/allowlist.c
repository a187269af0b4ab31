/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "allowlist.h"
#include "string-table.h"

static const char *const allowlist_reason_table[_ALLOWLIST_REASON_MAX] = {
        [ALLOWLIST_OK] = "ok",
        [ALLOWLIST_EMPTY] = "empty host name",
        [ALLOWLIST_NAME_TOO_LONG] = "host name longer than " STRINGIFY(ALLOWLIST_NAME_MAX) " bytes",
        [ALLOWLIST_LABEL_TOO_LONG] = "label longer than " STRINGIFY(ALLOWLIST_LABEL_MAX) " bytes",
        [ALLOWLIST_EMPTY_LABEL] = "empty label",
        [ALLOWLIST_BAD_CHARACTER] = "character other than a letter, digit, hyphen or dot",
        [ALLOWLIST_BAD_HYPHEN] = "label starting or ending with a hyphen",
        [ALLOWLIST_IP_LITERAL] = "IP address instead of a host name",
        [ALLOWLIST_BARE_WILDCARD] = "wildcard without a domain",
        [ALLOWLIST_WILDCARD_TOO_BROAD] = "wildcard over a top-level domain (needs two labels after \"*.\")",
        [ALLOWLIST_BAD_WILDCARD] = "'*' other than as the whole first label of a wildcard entry",
        [ALLOWLIST_BAD_PORT] = "port not 1-65535 in decimal",
        [ALLOWLIST_TOO_MANY_ENTRIES] = "more than " STRINGIFY(ALLOWLIST_MAX_ENTRIES) " entries",
};

DEFINE_STRING_TABLE_LOOKUP_TO_STRING(allowlist_reason, AllowlistReason);

/* The longest entry that can be valid: a name with its trailing dot, ':' and five digits. Longer
 * input is refused without being read further. */
#define ENTRY_MAX (ALLOWLIST_NAME_MAX + 1 + 1 + 5)

static bool is_digit(char c) {
        return c >= '0' && c <= '9';
}

static bool is_hex(char c) {
        return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static bool is_ldh(char c) {
        return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-';
}

static char to_lower(char c) {
        return c >= 'A' && c <= 'Z' ? (char) (c - 'A' + 'a') : c;
}

/* Does inet_pton() read the n bytes at s as an IPv6 address? */
static bool is_ipv6(const char *s, size_t n) {
        char buf[INET6_ADDRSTRLEN + 1];
        struct in6_addr a;

        if (n >= sizeof(buf))
                return false;
        memcpy(buf, s, n);
        buf[n] = 0;
        return inet_pton(AF_INET6, buf, &a) == 1;
}

/* A last label that a URL parser (WHATWG URL, "ends in a number") or inet_aton() reads as a number
 * makes the whole name an IPv4 address to them: all digits ("127.1", "2130706433", "0177.0.0.1"), or
 * "0x" and hex digits ("0x7f.0x1", "0x"). No top-level domain is numeric (RFC 3696 §2), so this refuses
 * no host name; every form inet_aton() accepts ends in such a label. */
static bool is_numeric_label(const char *s, size_t n) {
        size_t i = 0;

        if (n >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
                for (i = 2; i < n; i++)
                        if (!is_hex(s[i]))
                                return false;
                return true;
        }
        for (i = 0; i < n; i++)
                if (!is_digit(s[i]))
                        return false;
        return n > 0;
}

/* The labels of the n bytes at s (no trailing dot, no wildcard prefix): the reason, and their count. */
static AllowlistReason labels_check(const char *s, size_t n, size_t *ret_labels) {
        size_t start = 0, labels = 0;

        for (size_t i = 0; i <= n; i++) {
                size_t len;

                if (i < n && s[i] != '.') {
                        if (s[i] == '*')
                                return ALLOWLIST_BAD_WILDCARD;
                        if (!is_ldh(s[i]))
                                return ALLOWLIST_BAD_CHARACTER;
                        continue;
                }
                len = i - start;
                if (len == 0)
                        return ALLOWLIST_EMPTY_LABEL;
                if (len > ALLOWLIST_LABEL_MAX)
                        return ALLOWLIST_LABEL_TOO_LONG;
                if (s[start] == '-' || s[i - 1] == '-')
                        return ALLOWLIST_BAD_HYPHEN;
                labels++;
                if (i == n && is_numeric_label(s + start, len))
                        return ALLOWLIST_IP_LITERAL;
                start = i + 1;
        }
        *ret_labels = labels;
        return ALLOWLIST_OK;
}

/* A host name, or with wildcard_ok a "*.suffix", in the n bytes at s: on ALLOWLIST_OK the name
 * (the suffix for a wildcard) lower-case in ret_name and whether it was a wildcard. */
static AllowlistReason name_check(const char *s, size_t n, bool wildcard_ok,
                                  char ret_name[static ALLOWLIST_NAME_MAX + 1], bool *ret_wildcard) {
        AllowlistReason r;
        size_t labels, skip = 0;

        if (n == 0)
                return ALLOWLIST_EMPTY;
        /* Brackets only ever hold an IPv6 (or IPvFuture) address; colons are never part of a name. */
        if (s[0] == '[')
                return ALLOWLIST_IP_LITERAL;
        if (memchr(s, ':', n))
                return is_ipv6(s, n) ? ALLOWLIST_IP_LITERAL : ALLOWLIST_BAD_CHARACTER;
        if (s[n - 1] == '.')
                n--;
        if (n == 0)
                return ALLOWLIST_EMPTY;
        if (n > ALLOWLIST_NAME_MAX)
                return ALLOWLIST_NAME_TOO_LONG;
        if (s[0] == '*') {
                if (n == 1)
                        return ALLOWLIST_BARE_WILDCARD;
                if (s[1] != '.' || !wildcard_ok)
                        return ALLOWLIST_BAD_WILDCARD;
                skip = 2;
        }
        r = labels_check(s + skip, n - skip, &labels);
        if (r != ALLOWLIST_OK)
                return r;
        if (skip > 0 && labels < 2)
                return ALLOWLIST_WILDCARD_TOO_BROAD;

        for (size_t i = skip; i < n; i++)
                ret_name[i - skip] = to_lower(s[i]);
        ret_name[n - skip] = 0;
        *ret_wildcard = skip > 0;
        return ALLOWLIST_OK;
}

AllowlistReason allowlist_host_check(const char *s, size_t n, char ret_name[static ALLOWLIST_NAME_MAX + 1]) {
        char name[ALLOWLIST_NAME_MAX + 1];
        AllowlistReason r;
        bool wildcard;

        r = name_check(s, n, false, name, &wildcard);
        if (r != ALLOWLIST_OK)
                return r;
        memcpy(ret_name, name, sizeof(name));
        return ALLOWLIST_OK;
}

AllowlistReason allowlist_port_parse(const char *s, size_t n, uint16_t *ret_port) {
        unsigned v = 0;

        /* Decimal only: no sign, no leading zero (so no octal reading of "080" anywhere downstream),
         * at most five digits before the range check, so nothing overflows. */
        if (n == 0 || n > 5 || s[0] < '1' || s[0] > '9')
                return ALLOWLIST_BAD_PORT;
        for (size_t i = 0; i < n; i++) {
                if (!is_digit(s[i]))
                        return ALLOWLIST_BAD_PORT;
                v = v * 10 + (unsigned) (s[i] - '0');
        }
        if (v > 65535)
                return ALLOWLIST_BAD_PORT;
        *ret_port = (uint16_t) v;
        return ALLOWLIST_OK;
}

AllowlistReason allowlist_entry_parse(const char *s, AllowlistEntry *ret) {
        AllowlistEntry e = {};
        const char *colon;
        AllowlistReason r;
        size_t n, host_n;

        n = strnlen(s, ENTRY_MAX + 1);
        if (n == 0)
                return ALLOWLIST_EMPTY;
        if (n > ENTRY_MAX)
                return ALLOWLIST_NAME_TOO_LONG;
        if (s[0] == '[')
                return ALLOWLIST_IP_LITERAL;
        colon = memrchr(s, ':', n);
        /* "::1" split at its last colon would be a host ":" and a port "1". */
        if (colon && memchr(s, ':', n) != colon && is_ipv6(s, n))
                return ALLOWLIST_IP_LITERAL;
        host_n = colon ? (size_t) (colon - s) : n;

        r = name_check(s, host_n, true, e.name, &e.wildcard);
        if (r != ALLOWLIST_OK)
                return r;
        if (colon) {
                r = allowlist_port_parse(colon + 1, n - host_n - 1, &e.port);
                if (r != ALLOWLIST_OK)
                        return r;
        }
        *ret = e;
        return ALLOWLIST_OK;
}

Allowlist *allowlist_free(Allowlist *l) {
        if (!l)
                return NULL;
        free(l->entries);
        free(l);
        return NULL;
}

int allowlist_parse(const char *const *entries, size_t n, Allowlist **ret, size_t *ret_index,
                    AllowlistReason *ret_reason) {
        _cleanup_allowlist_free_ Allowlist *l = NULL;

        if (n > ALLOWLIST_MAX_ENTRIES) {
                if (ret_index)
                        *ret_index = ALLOWLIST_MAX_ENTRIES;
                if (ret_reason)
                        *ret_reason = ALLOWLIST_TOO_MANY_ENTRIES;
                return -E2BIG;
        }
        l = calloc(1, sizeof(Allowlist));
        if (!l)
                return -ENOMEM;
        if (n > 0) {
                l->entries = calloc(n, sizeof(AllowlistEntry));
                if (!l->entries)
                        return -ENOMEM;
        }
        for (size_t i = 0; i < n; i++) {
                AllowlistReason r = ALLOWLIST_EMPTY;

                if (entries[i])
                        r = allowlist_entry_parse(entries[i], l->entries + i);

                if (r != ALLOWLIST_OK) {
                        if (ret_index)
                                *ret_index = i;
                        if (ret_reason)
                                *ret_reason = r;
                        return -EINVAL;
                }
                l->n_entries++;
        }
        *ret = TAKE_PTR(l);
        return 0;
}

static bool port_allowed(const AllowlistEntry *e, uint16_t port) {
        return e->port == 0 ? port == 80 || port == 443 : port == e->port;
}

/* Is name a strict subdomain of suffix (both normalized)? */
static bool is_subdomain(const char *name, const char *suffix) {
        size_t n = strlen(name), s = strlen(suffix);

        return n > s + 1 && name[n - s - 1] == '.' && streq(name + n - s, suffix);
}

/* e against a host already through allowlist_host_check(). */
static bool match_normalized(const AllowlistEntry *e, const char *name, uint16_t port) {
        if (!port_allowed(e, port))
                return false;
        return e->wildcard ? is_subdomain(name, e->name) : streq(name, e->name);
}

static bool host_normalize(const char *host, uint16_t port, char ret_name[static ALLOWLIST_NAME_MAX + 1]) {
        if (!host || port == 0)
                return false;
        /* One byte over the longest valid host is enough to refuse it. */
        return allowlist_host_check(host, strnlen(host, ALLOWLIST_NAME_MAX + 2), ret_name) == ALLOWLIST_OK;
}

bool allowlist_entry_match(const AllowlistEntry *e, const char *host, uint16_t port) {
        char name[ALLOWLIST_NAME_MAX + 1];

        return e && host_normalize(host, port, name) && match_normalized(e, name, port);
}

bool allowlist_match(const Allowlist *l, const char *host, uint16_t port) {
        char name[ALLOWLIST_NAME_MAX + 1];

        if (!l || !host_normalize(host, port, name))
                return false;
        for (size_t i = 0; i < l->n_entries; i++)
                if (match_normalized(l->entries + i, name, port))
                        return true;
        return false;
}

static const char *const allowlist_verdict_table[_ALLOWLIST_VERDICT_MAX] = {
        [ALLOWLIST_HOST_DENIED] = "host denied",
        [ALLOWLIST_PORT_DENIED] = "port denied",
        [ALLOWLIST_ALLOWED] = "allowed",
};

DEFINE_STRING_TABLE_LOOKUP_TO_STRING(allowlist_verdict, AllowlistVerdict);

AllowlistVerdict allowlist_judge(const Allowlist *l, const char *host, uint16_t port) {
        AllowlistVerdict v = ALLOWLIST_HOST_DENIED;
        char name[ALLOWLIST_NAME_MAX + 1];

        /* The name is judged even for port 0, so that "pypi.org:0" is a port refusal, not a host one. */
        if (!l || !host || !host_normalize(host, 1, name))
                return ALLOWLIST_HOST_DENIED;
        for (size_t i = 0; i < l->n_entries; i++) {
                const AllowlistEntry *e = l->entries + i;

                if (!(e->wildcard ? is_subdomain(name, e->name) : streq(name, e->name)))
                        continue;
                if (port != 0 && port_allowed(e, port))
                        return ALLOWLIST_ALLOWED;
                v = ALLOWLIST_PORT_DENIED;
        }
        return v;
}

/* Does a wildcard of the ceiling cover the wildcard e on port? */
static bool wildcard_covered(const Allowlist *ceiling, const AllowlistEntry *e, uint16_t port) {
        for (size_t i = 0; i < ceiling->n_entries; i++) {
                const AllowlistEntry *c = ceiling->entries + i;

                if (c->wildcard && port_allowed(c, port) &&
                    (streq(e->name, c->name) || is_subdomain(e->name, c->name)))
                        return true;
        }
        return false;
}

bool allowlist_within(const Allowlist *ceiling, const AllowlistEntry *e) {
        const uint16_t defaults[] = { 80, 443 };
        const uint16_t *ports = e->port == 0 ? defaults : &e->port;
        size_t n_ports = e->port == 0 ? ELEMENTSOF(defaults) : 1;

        if (!ceiling)
                return false;
        for (size_t i = 0; i < n_ports; i++) {
                bool covered = e->wildcard ? wildcard_covered(ceiling, e, ports[i])
                                           : allowlist_match(ceiling, e->name, ports[i]);
                if (!covered)
                        return false;
        }
        return true;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The network log of one execution (issue 16): the allow list in force and one entry per connection
 * or request the egress proxy handled, as the record and the store keep them. Plain data and its
 * JSON. The proxy's event lines are parsed and validated into NetLogEntry by net/proxy-event.c. */

#include <json-c/json.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util.h"

#define NET_LOG_HOST_MAX 253
#define NET_LOG_METHOD_MAX 16
#define NET_LOG_REASON_MAX 96

typedef enum NetDecision {
        NET_DECISION_ALLOWED,
        NET_DECISION_DENIED,
        _NET_DECISION_MAX,
        _NET_DECISION_INVALID = -1,
} NetDecision;

const char *net_decision_to_string(NetDecision d);
NetDecision net_decision_from_string(const char *s);

typedef struct NetLogEntry {
        char host[NET_LOG_HOST_MAX + 1];         /* lower case; "" when the head could not be parsed */
        uint16_t port;
        char method[NET_LOG_METHOD_MAX + 1];     /* "CONNECT", an HTTP method token, or "" */
        NetDecision decision;
        char reason[NET_LOG_REASON_MAX + 1];     /* "" when none */
        char address[INET6_ADDRSTRLEN];          /* numeric; "" when no connection was made */
        uint64_t bytes_up, bytes_down;
        uint64_t started_usec;                   /* CLOCK_REALTIME */
        uint64_t duration_ms;
} NetLogEntry;

typedef struct NetLog {
        char **allow;            /* the request's entries, as given (validated) */
        size_t n_allow;
        NetLogEntry *entries;    /* the first max_entries */
        size_t n_entries, allocated;
        uint64_t requests_total; /* every entry, also those not kept */
        char *note;              /* what went wrong with the log itself ("proxy protocol error"), or NULL */
} NetLog;

NetLog *net_log_new(char *const *allow, size_t n_allow);
NetLog *net_log_free(NetLog *l);
DEFINE_TRIVIAL_CLEANUP_FUNC(NetLog *, net_log_free);

/* Count e, and keep it if fewer than max_entries are kept. 0 or -ENOMEM. */
int net_log_append(NetLog *l, const NetLogEntry *e, size_t max_entries);
int net_log_set_note(NetLog *l, const char *note);

/* {"allow": [...], "requests": [...], "requests_total": N} (and "error" with a note). store: each entry
 * also has "started_usec" (exact, for net_log_from_json()). NULL on OOM. */
json_object *net_log_to_json(const NetLog *l, bool store);
/* The same text read back (the store's column): -EBADMSG for anything that is not such an object. */
int net_log_from_json(const char *text, NetLog **ret);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Callback deliveries, the pure part: what one attempt's outcome means (delivered, retry, give up),
 * how long to wait before the next one, and the signature a receiver verifies. No I/O: the caller
 * supplies the clock and the random numbers, so every row is testable. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util.h"

/* How a transfer ended below HTTP. curl-event.c maps libcurl's codes onto these. */
typedef enum TransportResult {
        TRANSPORT_OK,                    /* an HTTP response arrived: its status decides */
        TRANSPORT_TIMEOUT,               /* connected, but no complete answer in time */
        TRANSPORT_CONNECT,               /* no connection: refused, unreachable, or no answer to the
                                          * connection attempt in time */
        TRANSPORT_DNS,                   /* the host name did not resolve */
        TRANSPORT_RESET,                 /* reset, closed early, send/receive error, empty reply */
        TRANSPORT_TLS,                   /* handshake or certificate failure */
        TRANSPORT_TOO_LARGE,             /* the response exceeded what we read of it */
        TRANSPORT_OTHER,                 /* anything else, our own failures included (out of memory) */
        TRANSPORT_REFUSED,               /* never connected: the address is internal and the
                                          * configuration does not allow internal addresses */
        TRANSPORT_PROTOCOL,              /* an answer that is not HTTP, or not valid HTTP */
        _TRANSPORT_MAX,
} TransportResult;

typedef enum DeliveryOutcome {
        DELIVERY_DELIVERED,              /* 2xx */
        DELIVERY_RETRY,                  /* worth another attempt */
        DELIVERY_FAILED,                 /* the receiver refused it for good */
} DeliveryOutcome;

/* The class as callers are told it (a callback's last_error, an input file's error_message): one
 * fixed phrase per class, never libcurl's own text, which names the address and port and tells a
 * refused connection from an unreachable or filtered one: the answers of a port scan. */
const char *transport_result_to_string(TransportResult t);

/* The decision table. http_status only matters for TRANSPORT_OK: 2xx delivered; 408, 429 and 5xx
 * retry; every other status (1xx, 3xx — redirects are not followed —, other 4xx) fails for good.
 * TLS failures retry: a certificate may be renewed meanwhile. An internal address refused by the
 * configuration fails for good, like a 4xx: asking again gives the same answer. */
DeliveryOutcome delivery_outcome(TransportResult t, long http_status);

typedef struct BackoffPolicy {
        uint64_t base_usec;              /* the first delay */
        uint64_t max_usec;               /* no delay is longer */
        uint64_t retry_after_max_usec;   /* a receiver's Retry-After is honoured up to this */
} BackoffPolicy;

/* The delay before attempt (attempts + 1), attempts ≥ 1 having been made. Exponential with "equal
 * jitter": cap = min(max, base·2^(attempts-1)), delay = cap/2 + a uniform pick in [0, cap/2] taken
 * from random (any uint64_t), so that receivers that failed together are not retried together,
 * yet no retry comes sooner than half its step. A receiver's Retry-After (seconds; 0: none)
 * raises the delay to that, bounded by retry_after_max_usec. */
uint64_t backoff_delay_usec(const BackoffPolicy *p, unsigned attempts, uint64_t random, uint64_t retry_after_sec);

/* Retry-After as delay-seconds ("120"). The HTTP-date form and anything else give 0 (none). */
uint64_t retry_after_parse(const char *value);

/* The signature header value: "t=<unix>,v1=<hex HMAC-SHA256(key, "<unix>." body)>". ret must hold
 * CALLBACK_SIGNATURE_MAX bytes. 0, or -EINVAL / -EIO. */
#define CALLBACK_SIGNATURE_MAX (sizeof("t=18446744073709551615,v1=") + 64)
int callback_signature(const void *key, size_t key_len, uint64_t unix_time, const char *body, size_t body_len,
                       char ret[static CALLBACK_SIGNATURE_MAX]);

/* callback_url: http or https only, an absolute URL with a host, at most CALLBACK_URL_MAX bytes,
 * printable ASCII without spaces, no user:password@ (credentials would be kept in the store and
 * shown in the record). On failure *ret_why says what is wrong. */
#define CALLBACK_URL_MAX 2048
bool callback_url_is_valid(const char *url, const char **ret_why);

/* The URL as the journal gets it: "scheme://host[:port]" with at most 64 bytes of the authority and
 * 32 of the path, "..." where cut, a query or fragment as "?..." (it may carry a receiver's token).
 * A caller's 2 KiB URL on every attempt would fill the journal and its rate limit would then drop
 * sandboxd's own lines. Bytes outside printable ASCII become '?'. */
#define CALLBACK_URL_LOG_MAX 128
const char *callback_url_for_log(const char *url, char ret[static CALLBACK_URL_LOG_MAX]);

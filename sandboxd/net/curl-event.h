/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* libcurl's multi interface driven by sd-event: every socket curl wants watched is one I/O source,
 * its timeout one timer. Transfers never block the loop. Used for input downloads (fetch.c) and
 * callback deliveries (callback.c).
 *
 * Ownership: the caller creates and configures the easy handle and keeps owning it. After
 * curl_event_add() the handle belongs to the multi until either its done callback has run (the
 * handle has been removed from the multi by then; the callback may free it, or re-add it) or the
 * caller calls curl_event_remove() (no callback runs). */

#include <curl/curl.h>
#include <netinet/in.h>
#include <systemd/sd-event.h>

#include "model/backoff.h"
#include "util.h"

typedef struct CurlEvent CurlEvent;

/* result: CURLE_OK when the transfer completed (any HTTP status: read it with CURLINFO_RESPONSE_CODE),
 * else the reason it did not. */
typedef void (*curl_event_done_t)(CURL *easy, CURLcode result, void *userdata);

int curl_event_new(sd_event *event, CurlEvent **ret);
/* Aborts every transfer still running, without calling their callbacks. */
CurlEvent *curl_event_free(CurlEvent *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(CurlEvent *, curl_event_free);

/* 0, or -ENOMEM/-EINVAL. The handle's CURLOPT_PRIVATE is used by this module; do not set it. */
int curl_event_add(CurlEvent *c, CURL *easy, curl_event_done_t cb, void *userdata);
/* Abort a transfer added with curl_event_add() whose callback has not run yet. No-op otherwise. */
void curl_event_remove(CurlEvent *c, CURL *easy);

/* Transfers added and not yet done. */
unsigned curl_event_running(CurlEvent *c);

/* Transfers made on a caller's behalf (input downloads, callback deliveries) go where the caller's
 * URL says, so sandboxd must not become the caller's way into what only sandboxd can reach. The
 * guard judges the address of every connection libcurl opens (after name resolution, so a name
 * that resolves to an internal address, or changes its answer between lookups, is caught too; and
 * every redirect) by netaddr.h's tables. */
typedef struct CurlGuard {
        bool allow_internal;                     /* InputAllowInternalAddresses=, CallbackAllowInternalAddresses= */
        unsigned refused;                        /* connections refused so far */
        char refused_address[INET6_ADDRSTRLEN];  /* the last one refused: for the journal, never the caller */
} CurlGuard;

/* Make g the handle's CURLOPT_OPENSOCKETFUNCTION and turn off every proxy: libcurl would otherwise
 * take http_proxy, https_proxy and ALL_PROXY from the daemon's environment and send the caller's
 * request, and the internal address check's decision, to whatever they name. g must outlive the
 * transfer. 0, or -EIO if libcurl refuses an option. */
int curl_guard_apply(CURL *easy, CurlGuard *g);

/* How a transfer on easy ended, as a class (backoff.h). A connection that was never made is
 * TRANSPORT_CONNECT whether it was refused, unreachable or timed out (told apart, they would say
 * which ports are open, closed or filtered), or TRANSPORT_REFUSED if g refused an address. */
TransportResult curl_transport_result(CURL *easy, CURLcode result, const CurlGuard *g);

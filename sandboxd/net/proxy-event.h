/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The event lines of the egress proxy (sandboxd-proxy, issue 16) as the daemon reads them from the
 * pipe that is the proxy's stdout: one JSON object per line, at most PROXY_EVENT_LINE_MAX bytes with
 * its '\n'. The proxy parses hostile bytes and may have been subverted, so a line is hostile input
 * too: parsed strictly (json-strict.h), every field checked (host by allowlist_host_check(), method a
 * token of at most 16 bytes, decision and reason from their tables, address numeric, numbers in
 * range), unknown or missing fields refused. Pure: no I/O. */

#include <stddef.h>

#include "model/net-log.h"

#define PROXY_EVENT_LINE_MAX 2048

/* The reasons a line may carry, row i (NULL past the end); "bad request: ..." are the http-head
 * reasons behind that prefix and not rows of it. */
const char *proxy_event_reason(size_t i);
/* Is s one of the reasons: a row, or "bad request: " and an http_head_reason_to_string()? */
bool proxy_event_reason_is_valid(const char *s);

/* One line of n bytes (without its '\n'): 0 and *ret, or -EBADMSG with what is wrong in why (a
 * static string), -ENOMEM. *ret is untouched on failure. */
int proxy_event_parse(const char *line, size_t n, NetLogEntry *ret, const char **why);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* GET /v1/executions/{id}/events: Server-Sent Events of one execution (docs/http-api.md).
 *
 * Events, in order: "status" {"status":"queued"}, "status" {"status":"running","started_at",
 * "start"}, "stdout"/"stderr" {"text"} as the program writes (live-log.h), "elided" {"stream",
 * "bytes"} for output a reader does not get as events (dropped by sandbox-exec, behind the backlog,
 * or not forwarded at all: it is in the result's head/tail), and last "result" with the execution
 * record of GET /v1/executions/{id}; then the stream ends.
 *
 * Every event has the id "<stage>.<stdout>.<stderr>": stage 1 after the queued status, 2 after
 * running, 3 after the result; stdout and stderr are how many bytes of each stream the events so far
 * cover (as text, or announced as elided). A reader that comes back with Last-Event-ID gets exactly
 * the events after that one: no status it had, no byte it had, no gap without an "elided". */

#include "api-context.h"
#include "http.h"

void api_handle_events(ApiContext *ac, HttpRequest *req, const char *id);

/* Parse "<stage>.<stdout>.<stderr>" (decimal). 0 or -EINVAL. */
int events_parse_id(const char *s, unsigned *ret_stage, uint64_t *ret_out, uint64_t *ret_err);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Following an execution's events (GET /v1/executions/{id}/events): its stdout and stderr printed
 * as they come, byte for byte (an "elided" event prints the result's marker, "[... sandboxd: N
 * bytes elided ...]", where bytes were not forwarded live), and the final record. Used by run and
 * by logs -f. */

#include <json-c/json.h>
#include <stdbool.h>

/* Follow id's events to the end. 0 with *ret_record (the result event's record, the caller puts
 * it); 1 if may_fall_back and the answer is 404 or 405 (for an execution known to exist: an older
 * sandboxd without the route; nothing was printed); or an exit status to end with (> 1, logged; a stream that ends
 * without a result is EX_UNAVAILABLE). */
int follow_events(const char *id, bool may_fall_back, json_object **ret_record);

/* logs ID [-f]. */
int verb_logs(char **args, size_t n_args);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Execution → JSON (docs/http-api.md, "The execution object"). Pure. */

#include <json-c/json.h>

#include "execution.h"

json_object *execution_to_json(const Execution *e);

/* RFC 3339 UTC with milliseconds, into buf (at least 32 bytes). */
void format_timestamp(uint64_t realtime_usec, char *buf, size_t size);

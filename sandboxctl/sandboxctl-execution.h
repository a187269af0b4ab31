/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The execution object of the API as sandboxctl reads it: parsed and range-checked (its exit code
 * and signal end up in our exit status), its verdict as an exit status (EXIT STATUS in
 * sandboxctl(1)), and the "status" view of it. */

#include <json-c/json.h>
#include <stdbool.h>

#include "sandboxctl-json.h"

typedef struct CtlExecution {
        CtlString execution_id, session_id, language, status, error_type, unit, reason, error_message, out,
                err, created_at;
        CtlInteger exit_code, signal, duration_ms, cpu_time_ms, stdout_bytes, stdout_lines, stderr_bytes,
                stderr_lines;
        CtlNumber peak_memory_mb;
        bool stdout_truncated, stderr_truncated;
        struct {
                CtlString url, state, last_error;
                CtlInteger attempts;
        } callback;
        json_object *network;            /* the answer's "network" (borrowed from it), NULL: none */
} CtlExecution;

int execution_parse(json_object *j, CtlExecution *ret);
bool execution_is_final(const CtlExecution *e);
int execution_exit_status(const CtlExecution *e);
int execution_print(const CtlExecution *e);

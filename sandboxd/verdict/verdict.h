/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Unit result + helper report (exec-protocol.h) → verdict. Pure and table-driven; no I/O. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "exec-protocol.h"

typedef enum ExecStatus {
        EXEC_QUEUED,
        EXEC_RUNNING,
        EXEC_SUCCESS,
        EXEC_FAILED,
        EXEC_CANCELLED,
        EXEC_ORPHANED,           /* the node running it was lost (issue 22): final, not run again */
        _EXEC_STATUS_MAX,
        _EXEC_STATUS_INVALID = -22,
} ExecStatus;

typedef enum ErrorType {
        ERROR_NONE,              /* serialised as JSON null */
        ERROR_COMPILE,           /* compile_error */
        ERROR_RUNTIME,           /* runtime_error */
        ERROR_TIMEOUT,           /* timeout */
        ERROR_OOM,               /* oom */
        ERROR_RESOURCE_LIMIT,    /* resource_limit */
        ERROR_INTERNAL,          /* internal_error */
        ERROR_INPUT,             /* input_error: an input file could not be fetched or written */
        _ERROR_TYPE_MAX,
        _ERROR_TYPE_INVALID = -22,
} ErrorType;

const char *exec_status_to_string(ExecStatus s);
ExecStatus exec_status_from_string(const char *s);
bool exec_status_is_final(ExecStatus s);
/* ERROR_NONE → NULL */
const char *error_type_to_string(ErrorType t);
ErrorType error_type_from_string(const char *s);

/* What systemd and sandboxd itself know about how the unit ended. */
typedef struct UnitOutcome {
        const char *result;      /* the service's Result= ("success", "exit-code", "signal",
                                  * "core-dump", "timeout", "oom-kill", "resources", ...), or NULL */
        int exec_main_code;      /* CLD_EXITED / CLD_KILLED / CLD_DUMPED, 0 if unknown */
        int exec_main_status;    /* exit status or signal number */
        bool start_failed;       /* StartTransientUnit or its start job failed */
        bool cancelled;          /* the caller cancelled the execution */
        bool deadline_hit;       /* sandboxd's own deadline (timeout + grace) fired */
        bool daemon_error;       /* sandboxd lost track (e.g. bus failure) */
        bool input_failed;       /* an input file could not be fetched: the unit was never started */
} UnitOutcome;

typedef struct Verdict {
        ExecStatus status;
        ErrorType error_type;
        int exit_code;           /* -1 if the program did not exit normally or never ran */
        int signal;              /* 0 if none */
        const char *reason;      /* static string: why this verdict, for logs and the result */
} Verdict;

/* Decide. report may be NULL or !valid (the helper never reported). Rules, first match wins:
 *  cancelled (by the caller, or the report's cancelled=1) → cancelled;
 *  input_failed → input_error;
 *  start_failed or daemon_error → internal_error;
 *  Result=oom-kill, or report oom_kills > 0 with the program killed → oom;
 *  Result=timeout, deadline_hit or the report's timeout=1 → timeout;
 *  no valid report → internal_error if exec_main_status is a systemd spawn failure (CLD_EXITED
 *     with status 200..243) or unknown, else classified from the unit's main status;
 *  report phase=setup → internal_error; phase=compile with failure → compile_error;
 *  pids_max > 0 → resource_limit (even with exit 0: a fork failed at the task limit);
 *  exit 0 → success; SIGXFSZ/SIGXCPU, disk_full → resource_limit;
 *  otherwise runtime_error. */
void verdict_decide(const UnitOutcome *u, const HelperReport *r, Verdict *ret);

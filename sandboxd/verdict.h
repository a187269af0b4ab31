/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Unit result + helper report → verdict. Pure and table-driven; no I/O. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum ExecStatus {
        EXEC_QUEUED,
        EXEC_RUNNING,
        EXEC_SUCCESS,
        EXEC_FAILED,
        EXEC_CANCELLED,
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

typedef enum HelperPhase {
        PHASE_SETUP,     /* sandbox-exec itself, before the program ran */
        PHASE_COMPILE,   /* the compile step, or the in-process syntax check */
        PHASE_RUN,
        _PHASE_MAX,
        _PHASE_INVALID = -22,
} HelperPhase;

/* What sandbox-exec reports over its control socket when the program has ended. Text, one
 * "key=value\n" per line, at most HELPER_REPORT_MAX bytes:
 *   phase=setup|compile|run   exit=N (-1: killed by a signal)   signal=N (0: none)
 *   oom_kill=N   mem_peak=BYTES   mem_failcnt=N   pids_max=N   disk_full=0|1   cpu_usec=N
 *   error=free text (setup failures only; rest of line)
 *   timeout=0|1   cancelled=0|1   run_usec=N   first_output_usec=N (only if there was output)
 *   stdout_bytes=N stdout_lines=N stdout_head=N stdout_tail=N (and stderr_*)
 * The text ends with an empty line; then come the stdout head and tail and the stderr head and
 * tail bytes, of the sizes announced. helper_report_parse() sees only the text part.
 * Unknown keys are ignored (forward compatibility); a malformed value makes the report invalid. */
#define HELPER_REPORT_MAX 4096

typedef struct HelperReport {
        bool valid;              /* a complete, well-formed report arrived */
        HelperPhase phase;
        int exit_code;           /* -1 when killed by a signal */
        int signal;
        uint64_t oom_kills;      /* memory.oom_control:oom_kill (v1) or memory.events:oom_kill (v2) */
        uint64_t memory_peak;    /* bytes; memory.max_usage_in_bytes (v1) or memory.peak (v2) */
        uint64_t memory_failcnt;
        uint64_t pids_max;       /* pids.events:max — fork failed at TasksMax */
        bool disk_full;          /* the workspace file system had no space left */
        uint64_t cpu_usec;
        bool timed_out;          /* sandbox-exec killed the program at --timeout-ms */
        bool cancelled;          /* sandbox-exec killed the program on SIGUSR1 (a cancel) */
        uint64_t run_usec;       /* wall time of compile + run, as sandbox-exec measured it */
        uint64_t first_output_usec;      /* start → first byte of output; only with have_first_output */
        bool have_first_output;
        struct {
                uint64_t bytes, lines;   /* the whole stream */
                uint64_t head, tail;     /* bytes of each part that follow the text */
        } out, err;
        char error[256];
} HelperReport;

/* 0, or -EINVAL for a malformed report (ret->valid is then false). */
int helper_report_parse(const char *text, size_t len, HelperReport *ret);

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

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <signal.h>
#include <sys/wait.h>

#include "string-table.h"
#include "util.h"
#include "verdict.h"

static const char *const exec_status_table[_EXEC_STATUS_MAX] = {
        [EXEC_QUEUED] = "queued",
        [EXEC_RUNNING] = "running",
        [EXEC_SUCCESS] = "success",
        [EXEC_FAILED] = "failed",
        [EXEC_CANCELLED] = "cancelled",
        [EXEC_ORPHANED] = "orphaned",
};

/* ERROR_NONE has no name: it is JSON null on the wire. */
static const char *const error_type_table[_ERROR_TYPE_MAX] = {
        [ERROR_COMPILE] = "compile_error",
        [ERROR_RUNTIME] = "runtime_error",
        [ERROR_TIMEOUT] = "timeout",
        [ERROR_OOM] = "oom",
        [ERROR_RESOURCE_LIMIT] = "resource_limit",
        [ERROR_INTERNAL] = "internal_error",
        [ERROR_INPUT] = "input_error",
};

DEFINE_STRING_TABLE_LOOKUP(exec_status, ExecStatus);

bool exec_status_is_final(ExecStatus s) {
        return s == EXEC_SUCCESS || s == EXEC_FAILED || s == EXEC_CANCELLED || s == EXEC_ORPHANED;
}

DEFINE_STRING_TABLE_LOOKUP_TO_STRING(error_type, ErrorType);

ErrorType error_type_from_string(const char *s) {
        /* Mirror of to_string: JSON null (NULL) is ERROR_NONE; no string spells it. */
        if (!s)
                return ERROR_NONE;
        return (ErrorType) string_table_lookup(error_type_table, ELEMENTSOF(error_type_table), s);
}

/* ---- the decision ---- */

/* What the rules look at: the outcome, the report if it is usable, and how the program ended. */
typedef struct VerdictInput {
        const UnitOutcome *u;
        const HelperReport *r;   /* NULL unless valid */
        int exit_code;
        int signal;
} VerdictInput;

typedef enum ExitPolicy {
        EXIT_KEEP,       /* report what the program did */
        EXIT_NEVER_RAN,  /* -1, no signal: the program did not get to run */
        EXIT_KILLED,     /* -1, and the signal if there was one: the program was stopped for us */
} ExitPolicy;

typedef struct VerdictRule {
        bool (*match)(const VerdictInput *in);
        ExecStatus status;
        ErrorType error_type;
        ExitPolicy exit;
        const char *reason;
} VerdictRule;

static bool cld_known(int code) {
        return code == CLD_EXITED || code == CLD_KILLED || code == CLD_DUMPED;
}

/* Only sandboxd's own state says "cancelled": a cancel it was asked for and sent. The helper's
 * cancelled=1 merely confirms; a report cannot make an execution cancelled by itself. */
static bool match_cancelled(const VerdictInput *in) {
        return in->u->cancelled;
}

static bool match_input_failed(const VerdictInput *in) {
        return in->u->input_failed;
}

static bool match_start_failed(const VerdictInput *in) {
        return in->u->start_failed;
}

static bool match_daemon_error(const VerdictInput *in) {
        return in->u->daemon_error;
}

static bool match_oom_result(const VerdictInput *in) {
        return streq_ptr(in->u->result, "oom-kill");
}

/* The v1 counter is the only OOM evidence on hybrid hierarchies. A program that still exited 0
 * coped (a child of it was killed, say), so the counter alone does not make it an OOM. */
static bool match_oom_counter(const VerdictInput *in) {
        return in->r && in->r->oom_kills > 0 && in->exit_code != 0;
}

static bool match_timeout(const VerdictInput *in) {
        return streq_ptr(in->u->result, "timeout") || in->u->deadline_hit || (in->r && in->r->timed_out);
}

/* Exit statuses 200..243 are systemd's EXIT_CHDIR, EXIT_NAMESPACE, EXIT_USER, ...: the unit's
 * process failed before sandbox-exec ran, so no report can exist and it is not the program. */
static bool match_spawn_failed(const VerdictInput *in) {
        return !in->r && in->u->exec_main_code == CLD_EXITED && in->u->exec_main_status >= 200 &&
                in->u->exec_main_status <= 243;
}

static bool match_unknown_end(const VerdictInput *in) {
        return !in->r && !cld_known(in->u->exec_main_code);
}

static bool match_setup(const VerdictInput *in) {
        return in->r && in->r->phase == PHASE_SETUP;
}

static bool match_compile_failed(const VerdictInput *in) {
        return in->r && in->r->phase == PHASE_COMPILE && (in->exit_code != 0 || in->signal != 0);
}

static bool match_exit_zero(const VerdictInput *in) {
        return in->exit_code == 0 && in->signal == 0;
}

static bool match_sigxfsz(const VerdictInput *in) {
        return in->signal == SIGXFSZ;
}

static bool match_sigxcpu(const VerdictInput *in) {
        return in->signal == SIGXCPU;
}

static bool match_disk_full(const VerdictInput *in) {
        return in->r && in->r->disk_full;
}

static bool match_pids_max(const VerdictInput *in) {
        return in->r && in->r->pids_max > 0;
}

static bool match_sigsys(const VerdictInput *in) {
        return in->signal == SIGSYS;
}

static bool match_signal(const VerdictInput *in) {
        return in->signal != 0;
}

static bool match_any(_unused_ const VerdictInput *in) {
        return true;
}

/* First match wins; the order is the one documented at verdict_decide() in verdict.h. */
static const VerdictRule verdict_rules[] = {
        { match_cancelled,      EXEC_CANCELLED, ERROR_NONE,           EXIT_KEEP,
          "cancelled by the caller" },
        { match_input_failed,   EXEC_FAILED,    ERROR_INPUT,          EXIT_NEVER_RAN,
          "an input file could not be fetched" },
        { match_start_failed,   EXEC_FAILED,    ERROR_INTERNAL,       EXIT_NEVER_RAN,
          "unit failed to start" },
        { match_daemon_error,   EXEC_FAILED,    ERROR_INTERNAL,       EXIT_KEEP,
          "sandboxd lost track of the unit" },
        { match_oom_result,     EXEC_FAILED,    ERROR_OOM,            EXIT_KILLED,
          "killed by the OOM killer (memory limit)" },
        { match_oom_counter,    EXEC_FAILED,    ERROR_OOM,            EXIT_KILLED,
          "killed by the OOM killer (memory limit)" },
        { match_timeout,        EXEC_FAILED,    ERROR_TIMEOUT,        EXIT_KILLED,
          "exceeded timeout_ms" },
        { match_spawn_failed,   EXEC_FAILED,    ERROR_INTERNAL,       EXIT_NEVER_RAN,
          "systemd failed to spawn the sandbox" },
        { match_unknown_end,    EXEC_FAILED,    ERROR_INTERNAL,       EXIT_NEVER_RAN,
          "no report and no exit status from the unit" },
        { match_setup,          EXEC_FAILED,    ERROR_INTERNAL,       EXIT_NEVER_RAN,
          "sandbox setup failed" },
        { match_compile_failed, EXEC_FAILED,    ERROR_COMPILE,        EXIT_KEEP,
          "syntax or compile error" },
        /* A fork that failed at TasksMax is a limit hit even if the program then exited 0 (a bash fork
         * bomb does): the caller should raise "tasks", not believe it ran as written. */
        { match_pids_max,       EXEC_FAILED,    ERROR_RESOURCE_LIMIT, EXIT_KEEP,
          "fork failed: task limit reached" },
        { match_exit_zero,      EXEC_SUCCESS,   ERROR_NONE,           EXIT_KEEP,
          "program exited with status 0" },
        { match_sigxfsz,        EXEC_FAILED,    ERROR_RESOURCE_LIMIT, EXIT_KEEP,
          "killed by SIGXFSZ: file size limit" },
        { match_sigxcpu,        EXEC_FAILED,    ERROR_RESOURCE_LIMIT, EXIT_KEEP,
          "killed by SIGXCPU: CPU time limit" },
        { match_disk_full,      EXEC_FAILED,    ERROR_RESOURCE_LIMIT, EXIT_KEEP,
          "write failed: disk limit reached" },
        { match_sigsys,         EXEC_FAILED,    ERROR_RUNTIME,        EXIT_KEEP,
          "killed by SIGSYS: forbidden system call" },
        { match_signal,         EXEC_FAILED,    ERROR_RUNTIME,        EXIT_KEEP,
          "killed by a signal" },
        { match_any,            EXEC_FAILED,    ERROR_RUNTIME,        EXIT_KEEP,
          "program exited with a non-zero status" },
};

void verdict_decide(const UnitOutcome *u, const HelperReport *r, Verdict *ret) {
        VerdictInput in = {
                .u = u,
                .r = r && r->valid ? r : NULL,
                .exit_code = -1,
        };

        /* Without a report all we have is how the unit's main process (sandbox-exec) ended. */
        if (in.r) {
                in.exit_code = in.r->exit_code;
                in.signal = in.r->signal;
        } else if (u->exec_main_code == CLD_EXITED)
                in.exit_code = u->exec_main_status;
        else if ((u->exec_main_code == CLD_KILLED || u->exec_main_code == CLD_DUMPED) &&
                 u->exec_main_status > 0)
                in.signal = u->exec_main_status;

        for (size_t i = 0; i < ELEMENTSOF(verdict_rules); i++) {
                const VerdictRule *rule = verdict_rules + i;

                if (!rule->match(&in))
                        continue;

                *ret = (Verdict) {
                        .status = rule->status,
                        .error_type = rule->error_type,
                        .exit_code = rule->exit == EXIT_KEEP ? in.exit_code : -1,
                        .signal = rule->exit == EXIT_NEVER_RAN ? 0 : in.signal,
                        .reason = rule->reason,
                };
                return;
        }
}

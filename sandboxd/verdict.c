/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <signal.h>
#include <sys/wait.h>

#include "util.h"
#include "verdict.h"

static const char *const exec_status_table[_EXEC_STATUS_MAX] = {
        [EXEC_QUEUED] = "queued",
        [EXEC_RUNNING] = "running",
        [EXEC_SUCCESS] = "success",
        [EXEC_FAILED] = "failed",
        [EXEC_CANCELLED] = "cancelled",
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

static const char *const phase_table[_PHASE_MAX] = {
        [PHASE_SETUP] = "setup",
        [PHASE_COMPILE] = "compile",
        [PHASE_RUN] = "run",
};

static int table_lookup(const char *const *table, size_t n, const char *s) {
        if (!s)
                return -EINVAL;
        for (size_t i = 0; i < n; i++)
                if (table[i] && streq(table[i], s))
                        return (int) i;
        return -EINVAL;
}

const char *exec_status_to_string(ExecStatus s) {
        if (s < 0 || s >= _EXEC_STATUS_MAX)
                return NULL;
        return exec_status_table[s];
}

ExecStatus exec_status_from_string(const char *s) {
        int i = table_lookup(exec_status_table, ELEMENTSOF(exec_status_table), s);
        return i < 0 ? _EXEC_STATUS_INVALID : (ExecStatus) i;
}

bool exec_status_is_final(ExecStatus s) {
        return s == EXEC_SUCCESS || s == EXEC_FAILED || s == EXEC_CANCELLED;
}

const char *error_type_to_string(ErrorType t) {
        if (t < 0 || t >= _ERROR_TYPE_MAX)
                return NULL;
        return error_type_table[t];
}

ErrorType error_type_from_string(const char *s) {
        int i;

        /* Mirror of to_string: JSON null (NULL) is ERROR_NONE; no string spells it. */
        if (!s)
                return ERROR_NONE;
        i = table_lookup(error_type_table, ELEMENTSOF(error_type_table), s);
        return i < 0 ? _ERROR_TYPE_INVALID : (ErrorType) i;
}

/* ---- the helper's report ---- */

enum {
        KEY_PHASE,
        KEY_EXIT,
        KEY_SIGNAL,
        KEY_OOM_KILL,
        KEY_MEM_PEAK,
        KEY_MEM_FAILCNT,
        KEY_PIDS_MAX,
        KEY_DISK_FULL,
        KEY_CPU_USEC,
        KEY_ERROR,
        KEY_TIMEOUT,
        KEY_CANCELLED,
        KEY_RUN_USEC,
        KEY_FIRST_OUTPUT_USEC,
        KEY_STDOUT_BYTES,
        KEY_STDOUT_LINES,
        KEY_STDOUT_HEAD,
        KEY_STDOUT_TAIL,
        KEY_STDERR_BYTES,
        KEY_STDERR_LINES,
        KEY_STDERR_HEAD,
        KEY_STDERR_TAIL,
        _KEY_MAX,
};

static const char *const report_key_table[_KEY_MAX] = {
        [KEY_PHASE] = "phase",
        [KEY_EXIT] = "exit",
        [KEY_SIGNAL] = "signal",
        [KEY_OOM_KILL] = "oom_kill",
        [KEY_MEM_PEAK] = "mem_peak",
        [KEY_MEM_FAILCNT] = "mem_failcnt",
        [KEY_PIDS_MAX] = "pids_max",
        [KEY_DISK_FULL] = "disk_full",
        [KEY_CPU_USEC] = "cpu_usec",
        [KEY_ERROR] = "error",
        [KEY_TIMEOUT] = "timeout",
        [KEY_CANCELLED] = "cancelled",
        [KEY_RUN_USEC] = "run_usec",
        [KEY_FIRST_OUTPUT_USEC] = "first_output_usec",
        [KEY_STDOUT_BYTES] = "stdout_bytes",
        [KEY_STDOUT_LINES] = "stdout_lines",
        [KEY_STDOUT_HEAD] = "stdout_head",
        [KEY_STDOUT_TAIL] = "stdout_tail",
        [KEY_STDERR_BYTES] = "stderr_bytes",
        [KEY_STDERR_LINES] = "stderr_lines",
        [KEY_STDERR_HEAD] = "stderr_head",
        [KEY_STDERR_TAIL] = "stderr_tail",
};

static int parse_bool(const char *v, bool *ret) {
        if (streq(v, "0"))
                *ret = false;
        else if (streq(v, "1"))
                *ret = true;
        else
                return -EINVAL;
        return 0;
}

/* util.c's parsers let strtol() skip leading whitespace other than ' ' (and then accept a sign,
 * which wraps for unsigned); the report is machine-written, so demand plain digits. */
static int parse_u64(const char *v, uint64_t *ret) {
        if (!(v[0] >= '0' && v[0] <= '9'))
                return -EINVAL;
        return safe_atou64(v, ret);
}

static int parse_int(const char *v, int min, int max, int *ret) {
        const char *d = v[0] == '-' ? v + 1 : v;
        int k, r;

        if (!(d[0] >= '0' && d[0] <= '9'))
                return -EINVAL;
        r = safe_atoi(v, &k);
        if (r < 0)
                return r;
        if (k < min || k > max)
                return -ERANGE;
        *ret = k;
        return 0;
}

static int report_set(HelperReport *r, int key, const char *v) {
        int k;

        switch (key) {
        case KEY_PHASE:
                k = table_lookup(phase_table, ELEMENTSOF(phase_table), v);
                if (k < 0)
                        return k;
                r->phase = (HelperPhase) k;
                return 0;
        case KEY_EXIT:
                /* -1: killed by a signal; otherwise a wait status, 0..255. */
                return parse_int(v, -1, 255, &r->exit_code);
        case KEY_SIGNAL:
                return parse_int(v, 0, NSIG - 1, &r->signal);
        case KEY_OOM_KILL:
                return parse_u64(v, &r->oom_kills);
        case KEY_MEM_PEAK:
                return parse_u64(v, &r->memory_peak);
        case KEY_MEM_FAILCNT:
                return parse_u64(v, &r->memory_failcnt);
        case KEY_PIDS_MAX:
                return parse_u64(v, &r->pids_max);
        case KEY_DISK_FULL:
                if (streq(v, "0"))
                        r->disk_full = false;
                else if (streq(v, "1"))
                        r->disk_full = true;
                else
                        return -EINVAL;
                return 0;
        case KEY_CPU_USEC:
                return parse_u64(v, &r->cpu_usec);
        case KEY_TIMEOUT:
                return parse_bool(v, &r->timed_out);
        case KEY_CANCELLED:
                return parse_bool(v, &r->cancelled);
        case KEY_RUN_USEC:
                return parse_u64(v, &r->run_usec);
        case KEY_FIRST_OUTPUT_USEC:
                r->have_first_output = true;
                return parse_u64(v, &r->first_output_usec);
        case KEY_STDOUT_BYTES:
                return parse_u64(v, &r->out.bytes);
        case KEY_STDOUT_LINES:
                return parse_u64(v, &r->out.lines);
        case KEY_STDOUT_HEAD:
                return parse_u64(v, &r->out.head);
        case KEY_STDOUT_TAIL:
                return parse_u64(v, &r->out.tail);
        case KEY_STDERR_BYTES:
                return parse_u64(v, &r->err.bytes);
        case KEY_STDERR_LINES:
                return parse_u64(v, &r->err.lines);
        case KEY_STDERR_HEAD:
                return parse_u64(v, &r->err.head);
        case KEY_STDERR_TAIL:
                return parse_u64(v, &r->err.tail);
        case KEY_ERROR: {
                size_t n = MIN(strlen(v), sizeof(r->error) - 1);

                /* Cut on a character boundary so a truncated message stays valid UTF-8. */
                if (n < strlen(v))
                        while (n > 0 && ((uint8_t) v[n] & 0xc0) == 0x80)
                                n--;
                memcpy(r->error, v, n);
                r->error[n] = 0;
                return 0;
        }
        default:
                return -EINVAL;
        }
}

int helper_report_parse(const char *text, size_t len, HelperReport *ret) {
        char line[HELPER_REPORT_MAX + 1];
        HelperReport r = {
                .valid = false,
                .phase = _PHASE_INVALID,
                .exit_code = -1,
        };
        bool seen[_KEY_MAX] = {};
        size_t i = 0;
        int k;

        *ret = r;

        if (!text || len > HELPER_REPORT_MAX)
                return -EINVAL;
        /* The report is text; a NUL means it is not one (and would cut our line copies short). */
        if (memchr(text, 0, len))
                return -EINVAL;

        while (i < len) {
                const char *nl = memchr(text + i, '\n', len - i);
                size_t n;
                char *v;

                /* A last line without '\n' is a report cut short: its value may be truncated. */
                if (!nl)
                        return -EINVAL;
                n = (size_t) (nl - (text + i));
                memcpy(line, text + i, n);
                line[n] = 0;
                i += n + 1;

                v = memchr(line, '=', n);
                if (!v || v == line)
                        return -EINVAL;
                *v++ = 0;

                k = table_lookup(report_key_table, ELEMENTSOF(report_key_table), line);
                if (k < 0)
                        continue;  /* a newer sandbox-exec may say more */
                /* A repeated key means two reports got mixed up, or someone forged one. */
                if (seen[k])
                        return -EINVAL;
                seen[k] = true;

                if (report_set(&r, k, v) < 0)
                        return -EINVAL;
        }

        if (!seen[KEY_PHASE] || !seen[KEY_EXIT])
                return -EINVAL;

        r.valid = true;
        *ret = r;
        return 0;
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

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "util.h"
#include "verdict/verdict.h"

/* Each row of each table runs as its own cmocka test, named after the row, so a failure in the TAP
 * output says which rule broke. */

/* ---- string tables ---- */

static void test_exec_status_strings(_unused_ void **state) {
        static const struct {
                ExecStatus s;
                const char *name;
                bool final;
        } rows[] = {
                { EXEC_QUEUED,    "queued",    false },
                { EXEC_RUNNING,   "running",   false },
                { EXEC_SUCCESS,   "success",   true },
                { EXEC_FAILED,    "failed",    true },
                { EXEC_CANCELLED, "cancelled", true },
                { EXEC_ORPHANED,  "orphaned",  true },
        };

        assert_int_equal(ELEMENTSOF(rows), _EXEC_STATUS_MAX);
        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                assert_string_equal(exec_status_to_string(rows[i].s), rows[i].name);
                assert_int_equal(exec_status_from_string(rows[i].name), rows[i].s);
                assert_int_equal(exec_status_is_final(rows[i].s), rows[i].final);
        }

        assert_null(exec_status_to_string(_EXEC_STATUS_MAX));
        assert_null(exec_status_to_string(_EXEC_STATUS_INVALID));
        assert_null(exec_status_to_string((ExecStatus) -1));
        assert_int_equal(exec_status_from_string(NULL), _EXEC_STATUS_INVALID);
        assert_int_equal(exec_status_from_string(""), _EXEC_STATUS_INVALID);
        assert_int_equal(exec_status_from_string("SUCCESS"), _EXEC_STATUS_INVALID);
        assert_int_equal(exec_status_from_string("success "), _EXEC_STATUS_INVALID);
        assert_int_equal(exec_status_from_string("succes"), _EXEC_STATUS_INVALID);
        assert_false(exec_status_is_final(_EXEC_STATUS_INVALID));
}

static void test_error_type_strings(_unused_ void **state) {
        static const struct {
                ErrorType t;
                const char *name;
        } rows[] = {
                { ERROR_NONE,           NULL },
                { ERROR_COMPILE,        "compile_error" },
                { ERROR_RUNTIME,        "runtime_error" },
                { ERROR_TIMEOUT,        "timeout" },
                { ERROR_OOM,            "oom" },
                { ERROR_RESOURCE_LIMIT, "resource_limit" },
                { ERROR_INTERNAL,       "internal_error" },
                { ERROR_INPUT,          "input_error" },
        };

        assert_int_equal(ELEMENTSOF(rows), _ERROR_TYPE_MAX);
        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                if (rows[i].name)
                        assert_string_equal(error_type_to_string(rows[i].t), rows[i].name);
                else
                        assert_null(error_type_to_string(rows[i].t));
                assert_int_equal(error_type_from_string(rows[i].name), rows[i].t);
        }

        assert_null(error_type_to_string(_ERROR_TYPE_MAX));
        assert_null(error_type_to_string(_ERROR_TYPE_INVALID));
        assert_int_equal(error_type_from_string(""), _ERROR_TYPE_INVALID);
        assert_int_equal(error_type_from_string("none"), _ERROR_TYPE_INVALID);
        assert_int_equal(error_type_from_string("null"), _ERROR_TYPE_INVALID);
        assert_int_equal(error_type_from_string("OOM"), _ERROR_TYPE_INVALID);
        assert_int_equal(error_type_from_string("compile"), _ERROR_TYPE_INVALID);
}

/* ---- verdict_decide ---- */

typedef struct VerdictRow {
        const char *name;
        UnitOutcome u;
        bool has_report;
        HelperReport r;
        ExecStatus status;
        ErrorType error_type;
        int exit_code;
        int signal;
        const char *reason;      /* NULL: not checked */
} VerdictRow;

/* A unit whose main process exited with status s / was killed by signal s. */
#define EXITED(res, s) { .result = res, .exec_main_code = CLD_EXITED, .exec_main_status = s }
#define KILLED(res, s) { .result = res, .exec_main_code = CLD_KILLED, .exec_main_status = s }
#define REPORT(...) true, { .valid = true, .phase = PHASE_RUN, __VA_ARGS__ }
#define NO_REPORT false, {}

#define R_OOM "killed by the OOM killer (memory limit)"
#define R_TIMEOUT "exceeded timeout_ms"
#define R_NONZERO "program exited with a non-zero status"

static const VerdictRow verdict_rows[] = {
        /* cancelled */
        { "cancelled", { .cancelled = true, .result = "signal", .exec_main_code = CLD_KILLED,
                         .exec_main_status = SIGKILL },
          NO_REPORT, EXEC_CANCELLED, ERROR_NONE, -1, SIGKILL, "cancelled by the caller" },
        { "cancelled beats start_failed", { .cancelled = true, .start_failed = true },
          NO_REPORT, EXEC_CANCELLED, ERROR_NONE, -1, 0, NULL },
        { "cancelled beats oom-kill", { .cancelled = true, .result = "oom-kill" },
          NO_REPORT, EXEC_CANCELLED, ERROR_NONE, -1, 0, NULL },
        { "cancelled after the program exited 0", { .cancelled = true, .result = "success",
                                                     .exec_main_code = CLD_EXITED },
          REPORT(.exit_code = 0), EXEC_CANCELLED, ERROR_NONE, 0, 0, NULL },
        { "sandbox-exec reports the cancel (after a daemon restart: the request was persisted)",
          { .cancelled = true, .result = "exit-code", .exec_main_code = CLD_EXITED, .exec_main_status = 137 },
          REPORT(.exit_code = -1, .signal = SIGKILL, .cancelled = true), EXEC_CANCELLED, ERROR_NONE, -1, SIGKILL,
          "cancelled by the caller" },
        /* A report alone never makes a cancel: sandboxd did not ask for one (a forged SIGUSR1). */
        { "cancelled=1 in the report without a request is not a cancel", EXITED("exit-code", 137),
          REPORT(.exit_code = -1, .signal = SIGKILL, .cancelled = true), EXEC_FAILED, ERROR_RUNTIME, -1, SIGKILL,
          NULL },
        { "sandbox-exec killed the program at timeout_ms", EXITED("exit-code", 137),
          REPORT(.exit_code = -1, .signal = SIGKILL, .timed_out = true), EXEC_FAILED, ERROR_TIMEOUT, -1, SIGKILL,
          R_TIMEOUT },
        { "timeout during the compile step", EXITED("exit-code", 137),
          true, { .valid = true, .phase = PHASE_COMPILE, .exit_code = -1, .signal = SIGKILL, .timed_out = true },
          EXEC_FAILED, ERROR_TIMEOUT, -1, SIGKILL, R_TIMEOUT },

        /* an input file could not be fetched: the unit never started */
        { "input_failed", { .input_failed = true },
          NO_REPORT, EXEC_FAILED, ERROR_INPUT, -1, 0, "an input file could not be fetched" },
        { "cancelled during the download beats input_failed", { .cancelled = true, .input_failed = true },
          NO_REPORT, EXEC_CANCELLED, ERROR_NONE, -1, 0, "cancelled by the caller" },
        { "input_failed beats daemon_error", { .input_failed = true, .daemon_error = true },
          NO_REPORT, EXEC_FAILED, ERROR_INPUT, -1, 0, NULL },

        /* sandboxd's and systemd's own failures */
        { "start_failed", { .start_failed = true },
          NO_REPORT, EXEC_FAILED, ERROR_INTERNAL, -1, 0, "unit failed to start" },
        { "start_failed, whatever the main process did", { .start_failed = true, .result = "signal",
                                                           .exec_main_code = CLD_KILLED,
                                                           .exec_main_status = SIGKILL },
          NO_REPORT, EXEC_FAILED, ERROR_INTERNAL, -1, 0, "unit failed to start" },
        { "start_failed beats Result=oom-kill", { .start_failed = true, .result = "oom-kill" },
          NO_REPORT, EXEC_FAILED, ERROR_INTERNAL, -1, 0, "unit failed to start" },
        { "daemon_error", { .daemon_error = true },
          NO_REPORT, EXEC_FAILED, ERROR_INTERNAL, -1, 0, NULL },
        { "daemon_error beats a good report", { .daemon_error = true, .result = "success",
                                                .exec_main_code = CLD_EXITED },
          REPORT(.exit_code = 0), EXEC_FAILED, ERROR_INTERNAL, 0, 0, NULL },

        /* oom */
        { "Result=oom-kill on v2, no report", KILLED("oom-kill", SIGKILL),
          NO_REPORT, EXEC_FAILED, ERROR_OOM, -1, SIGKILL, R_OOM },
        { "Result=oom-kill with a report", KILLED("oom-kill", SIGKILL),
          REPORT(.exit_code = -1, .signal = SIGKILL, .oom_kills = 1),
          EXEC_FAILED, ERROR_OOM, -1, SIGKILL, R_OOM },
        { "Result=oom-kill, main status unknown", { .result = "oom-kill" },
          NO_REPORT, EXEC_FAILED, ERROR_OOM, -1, 0, R_OOM },
        { "v1 report oom_kill=1 with SIGKILL", EXITED("exit-code", 137),
          REPORT(.exit_code = -1, .signal = SIGKILL, .oom_kills = 1),
          EXEC_FAILED, ERROR_OOM, -1, SIGKILL, R_OOM },
        { "oom_kill=1 and the program exited 1", EXITED("exit-code", 1),
          REPORT(.exit_code = 1, .oom_kills = 1), EXEC_FAILED, ERROR_OOM, -1, 0, R_OOM },
        { "oom_kill=1 but the program exited 0", EXITED("success", 0),
          REPORT(.exit_code = 0, .oom_kills = 1), EXEC_SUCCESS, ERROR_NONE, 0, 0, NULL },
        { "oom beats timeout", { .result = "oom-kill", .deadline_hit = true },
          NO_REPORT, EXEC_FAILED, ERROR_OOM, -1, 0, R_OOM },
        { "oom_kill in an invalid report does not count", EXITED("exit-code", 1),
          false, { .valid = false, .phase = PHASE_RUN, .exit_code = -1, .signal = 9, .oom_kills = 5 },
          EXEC_FAILED, ERROR_RUNTIME, 1, 0, R_NONZERO },

        /* timeout */
        { "Result=timeout", KILLED("timeout", SIGKILL),
          NO_REPORT, EXEC_FAILED, ERROR_TIMEOUT, -1, SIGKILL, R_TIMEOUT },
        { "deadline_hit, nothing else known", { .deadline_hit = true },
          NO_REPORT, EXEC_FAILED, ERROR_TIMEOUT, -1, 0, R_TIMEOUT },
        { "deadline_hit with a killed report", { .deadline_hit = true },
          REPORT(.exit_code = -1, .signal = SIGKILL), EXEC_FAILED, ERROR_TIMEOUT, -1, SIGKILL, R_TIMEOUT },
        { "deadline_hit hides the program's exit status", { .deadline_hit = true },
          REPORT(.exit_code = 3), EXEC_FAILED, ERROR_TIMEOUT, -1, 0, R_TIMEOUT },
        { "timeout beats the spawn failure rule", EXITED("timeout", 217),
          NO_REPORT, EXEC_FAILED, ERROR_TIMEOUT, -1, 0, R_TIMEOUT },

        /* no valid report: the unit's main status */
        { "no report, spawn failure 217 (EXIT_USER)", EXITED("exit-code", 217),
          NO_REPORT, EXEC_FAILED, ERROR_INTERNAL, -1, 0, "systemd failed to spawn the sandbox" },
        { "no report, spawn failure 200 (lowest)", EXITED("exit-code", 200),
          NO_REPORT, EXEC_FAILED, ERROR_INTERNAL, -1, 0, NULL },
        { "no report, spawn failure 243 (highest)", EXITED("exit-code", 243),
          NO_REPORT, EXEC_FAILED, ERROR_INTERNAL, -1, 0, NULL },
        { "no report, exit 199 is the program's", EXITED("exit-code", 199),
          NO_REPORT, EXEC_FAILED, ERROR_RUNTIME, 199, 0, R_NONZERO },
        { "no report, exit 244 is the program's", EXITED("exit-code", 244),
          NO_REPORT, EXEC_FAILED, ERROR_RUNTIME, 244, 0, R_NONZERO },
        { "no report, main status unknown", { .result = "resources" },
          NO_REPORT, EXEC_FAILED, ERROR_INTERNAL, -1, 0, "no report and no exit status from the unit" },
        { "no report, bogus exec_main_code", { .result = "exit-code", .exec_main_code = 99,
                                               .exec_main_status = 1 },
          NO_REPORT, EXEC_FAILED, ERROR_INTERNAL, -1, 0, NULL },
        { "no report, exited 0", EXITED("success", 0),
          NO_REPORT, EXEC_SUCCESS, ERROR_NONE, 0, 0, NULL },
        { "no report, exited 1", EXITED("exit-code", 1),
          NO_REPORT, EXEC_FAILED, ERROR_RUNTIME, 1, 0, R_NONZERO },
        { "no report, SIGSEGV", KILLED("signal", SIGSEGV),
          NO_REPORT, EXEC_FAILED, ERROR_RUNTIME, -1, SIGSEGV, "killed by a signal" },
        { "no report, core dump SIGABRT", { .result = "core-dump", .exec_main_code = CLD_DUMPED,
                                            .exec_main_status = SIGABRT },
          NO_REPORT, EXEC_FAILED, ERROR_RUNTIME, -1, SIGABRT, "killed by a signal" },
        { "no report, SIGXCPU", KILLED("signal", SIGXCPU),
          NO_REPORT, EXEC_FAILED, ERROR_RESOURCE_LIMIT, -1, SIGXCPU, NULL },
        { "no report, SIGSYS", KILLED("signal", SIGSYS),
          NO_REPORT, EXEC_FAILED, ERROR_RUNTIME, -1, SIGSYS, "killed by SIGSYS: forbidden system call" },
        { "invalid report is ignored for the unit's status", EXITED("exit-code", 2),
          false, { .valid = false, .phase = PHASE_SETUP, .exit_code = 0 },
          EXEC_FAILED, ERROR_RUNTIME, 2, 0, R_NONZERO },
        { "invalid report, spawn failure", EXITED("exit-code", 226),
          false, { .valid = false, .phase = PHASE_RUN, .exit_code = 0 },
          EXEC_FAILED, ERROR_INTERNAL, -1, 0, NULL },

        /* a valid report outranks the unit's main status */
        { "report exit 2, unit exited 0", EXITED("success", 0),
          REPORT(.exit_code = 2), EXEC_FAILED, ERROR_RUNTIME, 2, 0, R_NONZERO },
        { "report exit 0, unit exited 217", EXITED("exit-code", 217),
          REPORT(.exit_code = 0), EXEC_SUCCESS, ERROR_NONE, 0, 0, NULL },

        /* setup */
        { "setup phase", EXITED("exit-code", 1),
          true, { .valid = true, .phase = PHASE_SETUP, .exit_code = 1, .error = "chdir: ENOENT" },
          EXEC_FAILED, ERROR_INTERNAL, -1, 0, "sandbox setup failed" },
        { "setup phase even with exit 0", EXITED("success", 0),
          true, { .valid = true, .phase = PHASE_SETUP, .exit_code = 0 },
          EXEC_FAILED, ERROR_INTERNAL, -1, 0, "sandbox setup failed" },

        { "setup phase, helper killed: the program never ran", KILLED("signal", SIGABRT),
          true, { .valid = true, .phase = PHASE_SETUP, .exit_code = -1, .signal = SIGABRT },
          EXEC_FAILED, ERROR_INTERNAL, -1, 0, "sandbox setup failed" },

        /* compile */
        { "compile phase, exit 1", EXITED("exit-code", 1),
          true, { .valid = true, .phase = PHASE_COMPILE, .exit_code = 1 },
          EXEC_FAILED, ERROR_COMPILE, 1, 0, "syntax or compile error" },
        { "compile phase, compiler killed", EXITED("exit-code", 1),
          true, { .valid = true, .phase = PHASE_COMPILE, .exit_code = -1, .signal = SIGSEGV },
          EXEC_FAILED, ERROR_COMPILE, -1, SIGSEGV, "syntax or compile error" },
        { "compile phase beats resource limits", EXITED("exit-code", 1),
          true, { .valid = true, .phase = PHASE_COMPILE, .exit_code = 1, .pids_max = 4, .disk_full = true },
          EXEC_FAILED, ERROR_COMPILE, 1, 0, NULL },
        { "compile phase, compiler OOM", EXITED("exit-code", 1),
          true, { .valid = true, .phase = PHASE_COMPILE, .exit_code = -1, .signal = SIGKILL, .oom_kills = 1 },
          EXEC_FAILED, ERROR_OOM, -1, SIGKILL, R_OOM },
        { "compile phase, exit 0", EXITED("success", 0),
          true, { .valid = true, .phase = PHASE_COMPILE, .exit_code = 0 },
          EXEC_SUCCESS, ERROR_NONE, 0, 0, NULL },

        /* success */
        { "exit 0", EXITED("success", 0),
          REPORT(.exit_code = 0), EXEC_SUCCESS, ERROR_NONE, 0, 0, "program exited with status 0" },
        { "exit 0 with disk_full (the program coped)", EXITED("success", 0),
          REPORT(.exit_code = 0, .disk_full = true), EXEC_SUCCESS, ERROR_NONE, 0, 0, NULL },
        { "exit 0 with pids_max (a fork failed at the task limit)", EXITED("success", 0),
          REPORT(.exit_code = 0, .pids_max = 12), EXEC_FAILED, ERROR_RESOURCE_LIMIT, 0, 0, NULL },

        /* resource_limit */
        { "SIGXFSZ", EXITED("exit-code", 1),
          REPORT(.exit_code = -1, .signal = SIGXFSZ), EXEC_FAILED, ERROR_RESOURCE_LIMIT, -1, SIGXFSZ,
          "killed by SIGXFSZ: file size limit" },
        { "SIGXCPU", EXITED("exit-code", 1),
          REPORT(.exit_code = -1, .signal = SIGXCPU), EXEC_FAILED, ERROR_RESOURCE_LIMIT, -1, SIGXCPU,
          "killed by SIGXCPU: CPU time limit" },
        { "disk_full with exit 1", EXITED("exit-code", 1),
          REPORT(.exit_code = 1, .disk_full = true), EXEC_FAILED, ERROR_RESOURCE_LIMIT, 1, 0,
          "write failed: disk limit reached" },
        { "pids_max with exit 1", EXITED("exit-code", 1),
          REPORT(.exit_code = 1, .pids_max = 1), EXEC_FAILED, ERROR_RESOURCE_LIMIT, 1, 0,
          "fork failed: task limit reached" },
        { "pids_max with SIGSEGV", EXITED("exit-code", 1),
          REPORT(.exit_code = -1, .signal = SIGSEGV, .pids_max = 1), EXEC_FAILED, ERROR_RESOURCE_LIMIT,
          -1, SIGSEGV, "fork failed: task limit reached" },

        /* runtime_error */
        { "SIGSYS (seccomp)", EXITED("exit-code", 1),
          REPORT(.exit_code = -1, .signal = SIGSYS), EXEC_FAILED, ERROR_RUNTIME, -1, SIGSYS,
          "killed by SIGSYS: forbidden system call" },
        { "SIGSEGV", EXITED("exit-code", 1),
          REPORT(.exit_code = -1, .signal = SIGSEGV), EXEC_FAILED, ERROR_RUNTIME, -1, SIGSEGV,
          "killed by a signal" },
        { "SIGKILL without OOM or timeout", KILLED("signal", SIGKILL),
          REPORT(.exit_code = -1, .signal = SIGKILL), EXEC_FAILED, ERROR_RUNTIME, -1, SIGKILL,
          "killed by a signal" },
        { "exit 1", EXITED("exit-code", 1),
          REPORT(.exit_code = 1), EXEC_FAILED, ERROR_RUNTIME, 1, 0, R_NONZERO },
        { "exit 255", EXITED("exit-code", 255),
          REPORT(.exit_code = 255), EXEC_FAILED, ERROR_RUNTIME, 255, 0, R_NONZERO },
        { "exit 217 from the program itself", EXITED("exit-code", 217),
          REPORT(.exit_code = 217), EXEC_FAILED, ERROR_RUNTIME, 217, 0, R_NONZERO },
};

static void check_verdict(const char *name, const Verdict *v, ExecStatus status, ErrorType error_type,
                          int exit_code, int sig, const char *reason) {
        if (v->status != status || v->error_type != error_type || v->exit_code != exit_code ||
            v->signal != sig || !v->reason || (reason && !streq(v->reason, reason))) {
                print_error("%s: got status=%s error=%s exit=%d signal=%d reason=\"%s\"\n"
                            "%*s  expected status=%s error=%s exit=%d signal=%d reason=\"%s\"\n",
                            name, strna(exec_status_to_string(v->status)),
                            strna(error_type_to_string(v->error_type)),
                            v->exit_code, v->signal, strna(v->reason), (int) strlen(name), "",
                            exec_status_to_string(status), strna(error_type_to_string(error_type)),
                            exit_code, sig, reason ?: "*");
                fail();
        }
}

static void test_verdict_row(void **state) {
        const VerdictRow *row = *state;
        Verdict v;

        memset(&v, 0xaa, sizeof(v));
        verdict_decide(&row->u, row->has_report ? &row->r : NULL, &v);
        check_verdict(row->name, &v, row->status, row->error_type, row->exit_code, row->signal, row->reason);

        /* An invalid report and no report are the same thing. */
        if (!row->has_report) {
                HelperReport invalid = row->r;

                invalid.valid = false;
                memset(&v, 0xaa, sizeof(v));
                verdict_decide(&row->u, &invalid, &v);
                check_verdict(row->name, &v, row->status, row->error_type, row->exit_code, row->signal,
                              row->reason);
        }
}

/* Every error type, and each status verdict_decide can produce, has at least one row above. */
static void test_verdict_rows_cover_all_outcomes(_unused_ void **state) {
        bool seen_type[_ERROR_TYPE_MAX] = {}, seen_status[_EXEC_STATUS_MAX] = {};

        for (size_t i = 0; i < ELEMENTSOF(verdict_rows); i++) {
                seen_type[verdict_rows[i].error_type] = true;
                seen_status[verdict_rows[i].status] = true;
        }
        for (int t = 0; t < _ERROR_TYPE_MAX; t++)
                if (!seen_type[t]) {
                        print_error("no verdict row for error type %d\n", t);
                        fail();
                }
        assert_true(seen_status[EXEC_SUCCESS]);
        assert_true(seen_status[EXEC_FAILED]);
        assert_true(seen_status[EXEC_CANCELLED]);
}

/* The whole path: text from sandbox-exec through the parser into the decision. */
static void test_verdict_from_text(_unused_ void **state) {
        static const struct {
                const char *text;
                UnitOutcome u;
                ExecStatus status;
                ErrorType error_type;
                int exit_code, signal;
        } rows[] = {
                { "phase=run\nexit=0\nsignal=0\noom_kill=0\n", EXITED("success", 0),
                  EXEC_SUCCESS, ERROR_NONE, 0, 0 },
                { "phase=run\nexit=-1\nsignal=9\noom_kill=1\n", EXITED("exit-code", 137),
                  EXEC_FAILED, ERROR_OOM, -1, SIGKILL },
                { "phase=compile\nexit=1\n", EXITED("exit-code", 1),
                  EXEC_FAILED, ERROR_COMPILE, 1, 0 },
                { "phase=run\nexit=1\ndisk_full=1\n", EXITED("exit-code", 1),
                  EXEC_FAILED, ERROR_RESOURCE_LIMIT, 1, 0 },
                /* Malformed: "exit=0" must not be believed, the unit's status 3 is used instead. */
                { "phase=run\nexit=0\nsignal=zero\n", EXITED("exit-code", 3),
                  EXEC_FAILED, ERROR_RUNTIME, 3, 0 },
                /* Malformed report that claims success from a unit systemd failed to spawn. */
                { "phase=run\nexit=0", EXITED("exit-code", 203),
                  EXEC_FAILED, ERROR_INTERNAL, -1, 0 },
        };

        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                HelperReport r;
                Verdict v;

                (void) helper_report_parse(rows[i].text, strlen(rows[i].text), &r);
                verdict_decide(&rows[i].u, &r, &v);
                check_verdict(rows[i].text, &v, rows[i].status, rows[i].error_type, rows[i].exit_code,
                              rows[i].signal, NULL);
        }
}

/* Whatever comes in, the verdict is final, has a reason, and success goes with no error type. */
static void test_verdict_invariants(_unused_ void **state) {
        static const char *const results[] = {
                NULL, "success", "exit-code", "signal", "core-dump", "timeout", "oom-kill", "resources",
        };
        static const int codes[] = { 0, CLD_EXITED, CLD_KILLED, CLD_DUMPED };
        static const int statuses[] = { 0, 1, 9, 25, 31, 217 };
        static const int exits[] = { -1, 0, 1 };
        static const int signals[] = { 0, SIGKILL, SIGXFSZ, SIGSYS };
        unsigned n = 0;

        for (size_t a = 0; a < ELEMENTSOF(results); a++)
        for (size_t b = 0; b < ELEMENTSOF(codes); b++)
        for (size_t c = 0; c < ELEMENTSOF(statuses); c++)
        for (unsigned flags = 0; flags < 32; flags++)
        for (size_t e = 0; e < ELEMENTSOF(exits) + 1; e++)
        for (size_t s = 0; s < ELEMENTSOF(signals); s++) {
                UnitOutcome u = {
                        .result = results[a],
                        .exec_main_code = codes[b],
                        .exec_main_status = statuses[c],
                        .start_failed = flags & 1,
                        .cancelled = flags & 2,
                        .deadline_hit = flags & 4,
                        .daemon_error = flags & 8,
                };
                HelperReport r = {
                        .valid = true,
                        .phase = (HelperPhase) (s % _PHASE_MAX),
                        .exit_code = e < ELEMENTSOF(exits) ? exits[e] : 0,
                        .signal = signals[s],
                        .oom_kills = flags & 16,
                        .disk_full = c & 1,
                };
                Verdict v;

                verdict_decide(&u, e < ELEMENTSOF(exits) ? &r : NULL, &v);
                n++;

                assert_non_null(v.reason);
                assert_true(exec_status_is_final(v.status));
                assert_true(v.error_type >= 0 && v.error_type < _ERROR_TYPE_MAX);
                assert_int_equal(v.status == EXEC_FAILED, v.error_type != ERROR_NONE);
                assert_int_equal(v.status == EXEC_CANCELLED, u.cancelled);
                if (v.status == EXEC_SUCCESS)
                        assert_int_equal(v.exit_code, 0);
                if (v.error_type == ERROR_OOM || v.error_type == ERROR_TIMEOUT)
                        assert_int_equal(v.exit_code, -1);
        }
        assert_int_equal(n, ELEMENTSOF(results) * ELEMENTSOF(codes) * ELEMENTSOF(statuses) * 32 *
                         (ELEMENTSOF(exits) + 1) * ELEMENTSOF(signals));
}

int main(void) {
        size_t n = 5 + ELEMENTSOF(verdict_rows) + 2, i = 0;
        _cleanup_free_ struct CMUnitTest *tests = calloc(n, sizeof(struct CMUnitTest));

        if (!tests)
                return EXIT_FAILURE;

        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_exec_status_strings);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_error_type_strings);
        for (size_t k = 0; k < ELEMENTSOF(verdict_rows); k++)
                tests[i++] = (struct CMUnitTest) { verdict_rows[k].name, test_verdict_row, NULL, NULL,
                                                   (void *) &verdict_rows[k] };
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_verdict_rows_cover_all_outcomes);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_verdict_from_text);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_verdict_invariants);

        return _cmocka_run_group_tests("verdict", tests, i, NULL, NULL);
}

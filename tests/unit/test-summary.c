/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "model/summary.h"
#include "utf8.h"
#include "util.h"

/* Each row is its own cmocka test, named after the row, so a failure in the TAP output says which
 * sentence broke. */

typedef struct SummaryCase {
        const char *name;
        ExecStatus status;
        ErrorType error_type;
        int exit_code;
        int signal;
        const char *reason;
        const char *language;
        const char *environment;
        bool network;
        const char *out;
        uint64_t out_lines;
        const char *err;
        const char *error_message;
        const char *want[5];     /* substrings the summary has */
        const char *unwanted[3]; /* and has not */
} SummaryCase;

static const SummaryCase rows[] = {
        { "success", EXEC_SUCCESS, ERROR_NONE, 0, 0, "program exited with status 0", "python", NULL, false,
          "42\n", 1, "", NULL,
          { "The program succeeded (exit code 0).\n", "stdout (1 lines, 3 bytes):\n42\n", "artifacts: none" },
          { "more lines", "stderr" } },
        { "success-empty", EXEC_SUCCESS, ERROR_NONE, 0, 0, "program exited with status 0", "bash", NULL, false,
          "", 0, "", NULL, { "succeeded", "stdout: (empty)" }, { "more lines" } },
        { "cancelled", EXEC_CANCELLED, ERROR_NONE, -1, 9, "cancelled by the caller", "python", NULL, false,
          "", 0, "", NULL, { "The execution was cancelled by the caller before it finished.\n", "signal: 9 (SIGKILL)" } },
        { "timeout", EXEC_FAILED, ERROR_TIMEOUT, -1, 9, "exceeded timeout_ms", "python", NULL, false,
          "", 0, "", NULL, { "The program timed out after 5000 ms (timeout_ms).\n", "signal: 9 (SIGKILL)" } },
        { "oom", EXEC_FAILED, ERROR_OOM, -1, 9, "killed by the OOM killer (memory limit)", "python", NULL, false,
          "", 0, "", NULL, { "The program was killed at the memory limit of 256 MiB (memory_mb).\n" } },
        { "tasks", EXEC_FAILED, ERROR_RESOURCE_LIMIT, 1, 0, "fork failed: task limit reached", "bash", NULL, false,
          "", 0, "fork: retry: Resource temporarily unavailable\n", NULL,
          { "A fork failed at the task limit of 64 tasks (tasks).\n", "exit code: 1", "Resource temporarily" } },
        { "disk", EXEC_FAILED, ERROR_RESOURCE_LIMIT, 1, 0, "write failed: disk limit reached", "python", NULL, false,
          "", 0, "OSError: [Errno 28] No space left on device\n", NULL,
          { "the disk limit of 512 MiB (disk_mb) is full", "No space left" } },
        { "sigxfsz", EXEC_FAILED, ERROR_RESOURCE_LIMIT, -1, SIGXFSZ, "killed by SIGXFSZ: file size limit", "bash", NULL,
          false, "", 0, "", NULL, { "The program was killed by SIGXFSZ: a file grew past the file size limit (disk_mb 512 MiB).\n",
          "signal: 25 (SIGXFSZ)" } },
        { "sigxcpu", EXEC_FAILED, ERROR_RESOURCE_LIMIT, -1, SIGXCPU, "killed by SIGXCPU: CPU time limit", "bash", NULL,
          false, "", 0, "", NULL, { "killed by SIGXCPU: the CPU time limit was used up" } },
        { "resource-other", EXEC_FAILED, ERROR_RESOURCE_LIMIT, 1, 0, "some new limit", "bash", NULL, false,
          "", 0, "", NULL, { "stopped at a resource limit: some new limit" } },
        /* A reason that is a sentence already: one full stop, not two. */
        { "reason-full-stop", EXEC_FAILED, ERROR_RESOURCE_LIMIT, 1, 0, "a limit was hit.", "bash", NULL, false,
          "", 0, "", NULL, { "stopped at a resource limit: a limit was hit.\n" } },
        { "compile", EXEC_FAILED, ERROR_COMPILE, 1, 0, "syntax or compile error", "c", NULL, false,
          "", 0, "main.c:1:1: error: expected ';'\n", NULL,
          { "The program failed to compile (compile error) and did not run.\n", "exit code: 1", "expected ';'" } },
        { "sigsys", EXEC_FAILED, ERROR_RUNTIME, -1, SIGSYS, "killed by SIGSYS: forbidden system call", "c", NULL, false,
          "", 0, "", NULL, { "The program was killed by SIGSYS: it made a system call the sandbox forbids.\n", "signal: 31 (SIGSYS)" } },
        { "signal", EXEC_FAILED, ERROR_RUNTIME, -1, SIGSEGV, "killed by a signal", "c", NULL, false,
          "", 0, "", NULL, { "The program was killed by signal 11 (SIGSEGV).\n", "signal: 11 (SIGSEGV)", "stderr: (empty)" },
          { "exit code" } },
        { "exit-code", EXEC_FAILED, ERROR_RUNTIME, 3, 0, "program exited with a non-zero status", "python", NULL, false,
          "partial\n", 1, "boom\n", NULL,
          { "The program exited with code 3.\n", "exit code: 3", "stderr (5 bytes, 1 lines):\nboom\n", "stdout (1 lines" },
          { "network is disabled", "not installed" } },
        { "missing-module-env", EXEC_FAILED, ERROR_RUNTIME, 1, 0, "program exited with a non-zero status", "python",
          "python-data", false, "", 0,
          "Traceback (most recent call last):\n  File \"/run/sandbox/main.py\", line 1, in <module>\n"
          "ModuleNotFoundError: No module named 'polars'\n", "module 'polars' is not in environment 'python-data'",
          { "module 'polars' is not installed in environment 'python-data'.", "details: module 'polars'" } },
        { "missing-module-base", EXEC_FAILED, ERROR_RUNTIME, 1, 0, "program exited with a non-zero status", "python",
          NULL, false, "", 0, "ModuleNotFoundError: No module named 'numpy.linalg'\n", NULL,
          { "module 'numpy.linalg' is not installed in the default environment of language 'python'." } },
        { "missing-module-node", EXEC_FAILED, ERROR_RUNTIME, 1, 0, "program exited with a non-zero status", "javascript",
          NULL, false, "", 0, "node:internal/modules/cjs/loader:1080\n  throw err;\nError: Cannot find module 'lodash'\n"
          "Require stack:\n- /run/sandbox/main.js\n", NULL,
          { "module 'lodash' is not installed in the default environment of language 'javascript'." } },
        { "missing-module-node-relative", EXEC_FAILED, ERROR_RUNTIME, 1, 0, "program exited with a non-zero status",
          "javascript", NULL, false, "", 0, "Error: Cannot find module './helper'\n", NULL,
          { "exited with code 1" }, { "not installed" } },
        { "missing-module-hostile", EXEC_FAILED, ERROR_RUNTIME, 1, 0, "program exited with a non-zero status", "python",
          NULL, false, "", 0, "ModuleNotFoundError: No module named 'a\x1b[31mb'\n", NULL,
          { "exited with code 1" }, { "not installed", "\x1b" } },
        { "network-disabled", EXEC_FAILED, ERROR_RUNTIME, 1, 0, "program exited with a non-zero status", "python",
          NULL, false, "", 0, "socket.gaierror: [Errno -3] Temporary failure in name resolution\n", NULL,
          { "network is disabled for this run" } },
        { "network-unreachable", EXEC_FAILED, ERROR_RUNTIME, 1, 0, "program exited with a non-zero status", "python",
          NULL, false, "", 0, "OSError: [Errno 101] Network is unreachable\n", NULL,
          { "network is disabled for this run" } },
        { "network-enabled", EXEC_FAILED, ERROR_RUNTIME, 1, 0, "program exited with a non-zero status", "python",
          NULL, true, "", 0, "OSError: [Errno 101] Network is unreachable\n", NULL,
          { "exited with code 1" }, { "network is disabled" } },
        { "input", EXEC_FAILED, ERROR_INPUT, -1, 0, "an input file could not be fetched", "python", NULL, false,
          "", 0, "", "input/data.csv: HTTP 404",
          { "An input file could not be fetched or written, so the program did not run: input/data.csv: HTTP 404.\n",
            "exit code: none" }, { "details:" } },
        { "internal", EXEC_FAILED, ERROR_INTERNAL, -1, 0, "unit failed to start", "python", NULL, false,
          "", 0, "", NULL, { "sandboxd could not run the program (internal error, not the program's fault; retrying may help): "
          "unit failed to start" } },
        { "internal-restart", EXEC_FAILED, ERROR_INTERNAL, -1, 0, "sandboxd restarted and could not resume this "
          "execution", "python", NULL, false, NULL, 0, NULL, NULL,
          { "internal error", "could not resume", "stderr: (empty)" } },
};

static void fill(Execution *e, const SummaryCase *c) {
        *e = (Execution) {
                .id = (char *) "x",
                .language = c->language,
                .status = c->status,
                .error_type = c->error_type,
                .exit_code = c->exit_code,
                .signal = c->signal,
                .reason = c->reason,
                .environment = (char *) c->environment,
                .error_message = (char *) c->error_message,
                .out = { .text = (char *) c->out, .bytes = c->out ? strlen(c->out) : 0, .lines = c->out_lines },
                .err = { .text = (char *) c->err, .bytes = c->err ? strlen(c->err) : 0 },
                .limits = { .timeout_ms = 5000, .memory_mb = 256, .cpu_cores = 1, .disk_mb = 512, .tasks = 64 },
        };
        for (const char *p = c->err; p && *p; p++)
                e->err.lines += *p == '\n';
}

static void assert_bounded(const char *s) {
        assert_non_null(s);
        assert_true(strlen(s) <= SUMMARY_MAX);
        assert_true(utf8_is_valid(s, strlen(s)));
        for (const char *p = s; *p; p++)
                assert_true((unsigned char) *p >= 0x20 || *p == '\n' || *p == '\t');
}

static void test_row(void **state) {
        const SummaryCase *c = *state;
        _cleanup_free_ char *s = NULL;
        Execution e;

        fill(&e, c);
        if (c->network)
                e.network = net_log_new(NULL, 0);
        s = summary_build(&e);
        net_log_free(e.network);
        assert_bounded(s);
        for (size_t i = 0; i < ELEMENTSOF(c->want) && c->want[i]; i++) {
                if (!strstr(s, c->want[i]))
                        print_error("summary:\n%s\nlacks: %s\n", s, c->want[i]);
                assert_non_null(strstr(s, c->want[i]));
        }
        for (size_t i = 0; i < ELEMENTSOF(c->unwanted) && c->unwanted[i]; i++) {
                if (strstr(s, c->unwanted[i]))
                        print_error("summary:\n%s\nhas: %s\n", s, c->unwanted[i]);
                assert_null(strstr(s, c->unwanted[i]));
        }
}

/* Every status and error type the verdict table produces has a sentence; none that is not final. */
static void test_every_verdict_has_a_row(_unused_ void **state) {
        Execution e = { .id = (char *) "x", .exit_code = -1 };

        for (ErrorType t = ERROR_COMPILE; t < _ERROR_TYPE_MAX; t++) {
                _cleanup_free_ char *s = NULL;

                e.status = EXEC_FAILED;
                e.error_type = t;
                assert_non_null(summary_verdict_template(&e));
                s = summary_build(&e);
                assert_bounded(s);
        }
        e.error_type = ERROR_NONE;
        e.status = EXEC_SUCCESS;
        assert_non_null(summary_verdict_template(&e));
        e.status = EXEC_CANCELLED;
        assert_non_null(summary_verdict_template(&e));
        e.status = EXEC_QUEUED;
        assert_null(summary_verdict_template(&e));
        assert_null(summary_build(&e));
        e.status = EXEC_RUNNING;
        assert_null(summary_build(&e));
}

/* 30 lines: the first 20, then how many more. */
static void test_stdout_first_lines(_unused_ void **state) {
        _cleanup_free_ char *out = NULL, *s = NULL;
        _cleanup_(exec_artifacts_freep) ExecArtifacts *a = exec_artifacts_new();
        Execution e = { .id = (char *) "x", .status = EXEC_SUCCESS, .exit_code = 0, .language = "python" };
        size_t len = 0;

        out = malloc(30 * 16);
        assert_non_null(out);
        for (int i = 1; i <= 30; i++)
                len += (size_t) sprintf(out + len, "line %d\n", i);
        e.out = (OutputStream) { .text = out, .bytes = len, .lines = 30 };
        assert_non_null(a);
        assert_int_equal(exec_artifacts_add(a, "plot.png", 2048, "image/png",
                                            "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"), 0);
        e.artifacts = a;
        s = summary_build(&e);
        assert_bounded(s);
        assert_non_null(strstr(s, "line 1\n"));
        assert_non_null(strstr(s, "line 20\n(10 more lines)\n"));
        assert_null(strstr(s, "line 21"));
        assert_non_null(strstr(s, "artifacts (1):\n- plot.png (image/png, 2048 bytes)\n"));
}

/* One long line: cut at SUMMARY_STDOUT_MAX, between characters, and said so. */
static void test_stdout_long_line(_unused_ void **state) {
        _cleanup_free_ char *out = malloc(20001), *s = NULL;
        Execution e = { .id = (char *) "x", .status = EXEC_SUCCESS, .exit_code = 0 };

        assert_non_null(out);
        for (size_t i = 0; i < 20000; i += 2)
                memcpy(out + i, "\xc3\xa9", 2);   /* é */
        out[20000] = '\0';
        e.out = (OutputStream) { .text = out, .bytes = 20000, .lines = 1 };
        s = summary_build(&e);
        assert_bounded(s);
        assert_non_null(strstr(s, "(stdout cut at"));
        assert_true(strlen(s) < SUMMARY_STDOUT_MAX + 256);
}

/* 1 MiB of stderr: head and tail kept, the elided line, within SUMMARY_MAX. */
static void test_stderr_head_tail(_unused_ void **state) {
        const size_t n = 1024 * 1024;
        _cleanup_free_ char *err = malloc(n + 1), *s = NULL;
        Execution e = { .id = (char *) "x", .status = EXEC_FAILED, .error_type = ERROR_RUNTIME, .exit_code = 1,
                        .reason = "program exited with a non-zero status" };
        const char *m;
        unsigned long long elided;

        assert_non_null(err);
        memset(err, 'x', n);
        memcpy(err, "HEAD-START", 10);
        memcpy(err + n - 8, "TAIL-END", 8);
        err[n / 2] = '\x07';
        err[n] = '\0';
        e.err = (OutputStream) { .text = err, .bytes = n, .lines = 1 };
        s = summary_build(&e);
        assert_bounded(s);
        assert_true(strlen(s) > SUMMARY_MAX / 2);
        assert_non_null(strstr(s, "HEAD-START"));
        assert_non_null(strstr(s, "TAIL-END"));
        m = strstr(s, "\n... ");
        assert_non_null(m);
        assert_int_equal(sscanf(m, "\n... %llu bytes elided ...\n", &elided), 1);
        assert_true(elided > n - SUMMARY_MAX && elided < n);
}

/* Control characters and invalid bytes of a program never reach the summary. */
static void test_hostile_bytes(_unused_ void **state) {
        static const char out[] = "\x1b[2Jclear\r\nbell\x07 \xff\xfe bad \xc3\n";
        _cleanup_free_ char *s = NULL;
        Execution e = { .id = (char *) "x", .status = EXEC_SUCCESS, .exit_code = 0,
                        .out = { .text = (char *) out, .bytes = sizeof(out) - 1, .lines = 2 } };

        s = summary_build(&e);
        assert_bounded(s);
        assert_non_null(strstr(s, "[2Jclear\nbell"));
}

/* Many artifacts: listed while they fit, then how many were not. */
static void test_many_artifacts(_unused_ void **state) {
        _cleanup_(exec_artifacts_freep) ExecArtifacts *a = exec_artifacts_new();
        _cleanup_free_ char *s = NULL;
        Execution e = { .id = (char *) "x", .status = EXEC_SUCCESS, .exit_code = 0 };
        char path[300];

        assert_non_null(a);
        for (int i = 0; i < 500; i++) {
                snprintf(path, sizeof(path), "dir/%0200d.txt", i);
                assert_int_equal(exec_artifacts_add(a, path, (uint64_t) i, "text/plain",
                                 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"), 0);
        }
        a->n_skipped_total = 3;
        e.artifacts = a;
        s = summary_build(&e);
        assert_bounded(s);
        assert_non_null(strstr(s, "artifacts (500):\n"));
        assert_non_null(strstr(s, "more artifacts: see \"artifacts\")"));
        assert_non_null(strstr(s, "(3 files of output/ were not collected"));
}

static void test_missing_module_parse(_unused_ void **state) {
        static const struct {
                const char *err;
                const char *module;      /* NULL: none */
        } parse_rows[] = {
                { "ModuleNotFoundError: No module named 'polars'\n", "polars" },
                { "ModuleNotFoundError: No module named 'a'\nModuleNotFoundError: No module named 'b'\n", "b" },
                { "ModuleNotFoundError: No module named 'x y'\n", NULL },
                { "ModuleNotFoundError: No module named 'unterminated", NULL },
                { "Error: Cannot find module 'express'\n", "express" },
                { "Error: Cannot find package '@scope/pkg' imported from /run/sandbox/main.mjs\n", "@scope/pkg" },
                { "Error: Cannot find module '/abs/path'\n", NULL },
                { "Error: Cannot find module '../up'\n", NULL },
                { "Error: Cannot find module 'a..b'\n", NULL },
                { "Error: Cannot find module 'évil'\n", NULL },
                { "nothing here\n", NULL },
                { "", NULL },
        };
        char buf[SUMMARY_MODULE_MAX + 1];

        for (size_t i = 0; i < ELEMENTSOF(parse_rows); i++) {
                int r = summary_missing_module(parse_rows[i].err, strlen(parse_rows[i].err), buf, sizeof(buf));

                assert_int_equal(r, parse_rows[i].module ? 1 : 0);
                if (parse_rows[i].module)
                        assert_string_equal(buf, parse_rows[i].module);
        }
        /* A name longer than the bound is no name. */
        {
                char err[512];

                snprintf(err, sizeof(err), "Cannot find module '%0200d'\n", 0);
                assert_int_equal(summary_missing_module(err, strlen(err), buf, sizeof(buf)), 0);
        }
        assert_int_equal(summary_missing_module(NULL, 0, buf, sizeof(buf)), 0);
        assert_int_equal(summary_missing_module("x", 1, buf, 4), 0);
}

static void test_network_error_parse(_unused_ void **state) {
        static const struct {
                const char *err;
                bool yes;
        } net_rows[] = {
                { "OSError: [Errno 101] Network is unreachable", true },
                { "socket.gaierror: [Errno -3] Temporary failure in name resolution", true },
                { "socket.gaierror: [Errno -2] Name or service not known", true },
                { "Error: getaddrinfo ENOTFOUND example.com", true },
                { "Error: connect ECONNREFUSED 127.0.0.1:80", true },
                { "ConnectionRefusedError: [Errno 111] Connection refused", true },
                { "curl: (6) Could not resolve host: example.com", true },
                { "connect ENETUNREACH", true },
                { "OSError: [Errno 97] Address family not supported by protocol", true },
                { "Error: socket EAFNOSUPPORT", true },
                { "ZeroDivisionError: division by zero", false },
                { "", false },
        };

        for (size_t i = 0; i < ELEMENTSOF(net_rows); i++)
                assert_int_equal(summary_network_error(net_rows[i].err, strlen(net_rows[i].err)), net_rows[i].yes);
        assert_false(summary_network_error(NULL, 0));
}

int main(void) {
        size_t n = ELEMENTSOF(rows) + 9, i = 0;
        _cleanup_free_ struct CMUnitTest *tests = calloc(n, sizeof(struct CMUnitTest));

        if (!tests)
                return EXIT_FAILURE;
        for (size_t k = 0; k < ELEMENTSOF(rows); k++)
                tests[i++] = (struct CMUnitTest) { rows[k].name, test_row, NULL, NULL, (void *) &rows[k] };
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_every_verdict_has_a_row);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_stdout_first_lines);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_stdout_long_line);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_stderr_head_tail);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_hostile_bytes);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_many_artifacts);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_missing_module_parse);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_network_error_parse);

        return _cmocka_run_group_tests("summary", tests, i, NULL, NULL);
}

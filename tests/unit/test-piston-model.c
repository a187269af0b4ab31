/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <json-c/json.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "json-path.h"

#include "model/conf.h"
#include "model/language.h"
#include "model/piston.h"
#include "util.h"

/* The Piston model (sandboxd/model/piston.c), row by row: versions, version selectors, language
 * names, the runtimes list, a Piston request as sandboxd's, a record as Piston's answer. The
 * languages are the source tree's (languages-fixture.c), with versions set here. */

static const char *strnull(const char *s) {
        return s ?: "(null)";
}

static const char *at_str(json_object *o, const char *path) {
        json_object *v = at(o, path);

        return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

/* The table's languages, with the versions their Version= commands print on Debian 12. */
static const Language *langs[64];
static size_t n_langs;

static int setup(_unused_ void **state) {
        static const struct { const char *name, *line; } versions[] = {
                { "python", "Python 3.11.2" },
                { "node", "v18.13.0" },
                { "bash", "GNU bash, version 5.2.15(1)-release (x86_64-pc-linux-gnu)" },
                { "c", "gcc (Debian 12.2.0-14) 12.2.0" },
                { "go", "go version go1.19.8 linux/amd64" },
        };

        n_langs = 0;
        for (size_t i = 0; i < language_count() && n_langs < ELEMENTSOF(langs); i++) {
                Language *l = language_table_row(language_table_current(), i);

                for (size_t k = 0; k < ELEMENTSOF(versions); k++)
                        if (streq(l->name, versions[k].name))
                                assert_int_equal(language_set_version(l, versions[k].line, strlen(versions[k].line)), 0);
                langs[n_langs++] = l;
        }
        return 0;
}

static void test_version(_unused_ void **state) {
        static const struct { const char *line, *want; } rows[] = {
                { "Python 3.11.2", "3.11.2" },
                { "go version go1.19.8 linux/amd64", "1.19.8" },
                { "v18.13.0", "18.13.0" },
                { "GNU bash, version 5.2.15(1)-release", "5.2.15" },
                { "gcc (Debian 12.2.0-14) 12.2.0", "12.2.0" },
                { "rustc 1.63.0", "1.63.0" },
                { "3.11.2.", "3.11.2" },            /* a dot at the end is not part of it */
                { "openjdk 17", "17" },
                { "no number at all", "0.0.0" },
                { "", "0.0.0" },
                { NULL, "0.0.0" },
                { "1.2.3.4.5.6.7.8.9.10.11.12.13.14.15.16", "1.2.3.4.5.6.7.8.9.10.11.12.13.1" }, /* cut to fit */
        };

        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                char v[PISTON_VERSION_MAX];

                piston_version(rows[i].line, v);
                if (!streq(v, rows[i].want))
                        fail_msg("row %zu: '%s' gave '%s', want '%s'", i, strnull(rows[i].line), v, rows[i].want);
        }
}

static void test_version_matches(_unused_ void **state) {
        static const struct { const char *want, *have; bool match; } rows[] = {
                { NULL, "3.11.2", true },
                { "*", "3.11.2", true },
                { "3.11.2", "3.11.2", true },
                { "3", "3.11.2", true },
                { "3.11", "3.11.2", true },
                { "3.x", "3.11.2", true },
                { "3.11.*", "3.11.2", true },
                { "x", "3.11.2", true },
                { "3.1", "3.11.2", false },         /* components, not a string prefix */
                { "3.10.0", "3.11.2", false },
                { "3.11.2.1", "3.11.2", false },    /* more than it has */
                { "2", "3.11.2", false },
                { "", "3.11.2", false },
                { "3.", "3.11.2", false },
                { ".3", "3.11.2", false },
                { "latest", "3.11.2", false },
        };

        for (size_t i = 0; i < ELEMENTSOF(rows); i++)
                if (piston_version_matches(rows[i].want, rows[i].have) != rows[i].match)
                        fail_msg("row %zu: '%s' against %s: want %s", i, strnull(rows[i].want), rows[i].have,
                                 rows[i].match ? "a match" : "none");
}

static void test_find_language(_unused_ void **state) {
        static const struct { const char *name, *want; } rows[] = {
                { "python", "python" }, { "py", "python" }, { "python3", "python" },
                { "javascript", "node" }, { "js", "node" }, { "node", "node" }, { "node-js", "node" },
                { "typescript", "typescript" }, { "ts", "typescript" },
                { "c", "c" }, { "gcc", "c" }, { "c++", "cpp" }, { "cpp", "cpp" }, { "g++", "cpp" },
                { "go", "go" }, { "golang", "go" }, { "rust", "rust" }, { "rs", "rust" },
                { "java", "java" }, { "bash", "bash" }, { "sh", "bash" },
                { "rscript", "r" }, { "r", "r" }, { "sqlite3", "sql" }, { "sql", "sql" },
                { "brainfuck", NULL }, { "", NULL }, { "Python", NULL },
        };

        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                const Language *l = piston_find_language(langs, n_langs, rows[i].name);

                if (!streq_ptr(l ? l->name : NULL, rows[i].want))
                        fail_msg("'%s' selected %s, want %s", rows[i].name, l ? l->name : "none", strnull(rows[i].want));
        }
        /* Only the languages offered: without python in the list, "python" selects nothing. */
        assert_null(piston_find_language(langs, 0, "python"));
}

static void test_runtimes(_unused_ void **state) {
        json_object *a = piston_runtimes(langs, n_langs);
        bool seen_js = false, seen_cpp = false, seen_py = false;

        assert_non_null(a);
        assert_int_equal(json_object_array_length(a), n_langs);
        for (size_t i = 0; i < json_object_array_length(a); i++) {
                json_object *e = json_object_array_get_idx(a, i);
                const char *name = at_str(e, "language");

                assert_non_null(name);
                assert_non_null(at_str(e, "version"));
                assert_true(json_object_is_type(at(e, "aliases"), json_type_array));
                if (streq(name, "javascript")) {
                        seen_js = true;
                        assert_string_equal(at_str(e, "version"), "18.13.0");
                        assert_string_equal(at_str(e, "runtime"), "node");
                } else if (streq(name, "c++")) {
                        seen_cpp = true;
                        assert_string_equal(at_str(e, "aliases.0"), "cpp");
                } else if (streq(name, "python")) {
                        seen_py = true;
                        assert_string_equal(at_str(e, "version"), "3.11.2");
                        assert_null(at(e, "runtime"));
                }
        }
        assert_true(seen_js && seen_cpp && seen_py);
        json_object_put(a);
}

/* A request row: the Piston body, then either the message of its refusal or checks of the request
 * it becomes ("path=value" pairs, value as JSON text; "path=" for absent). */
typedef struct RequestRow {
        const char *name;
        const char *body;
        const char *error;
        const char *checks[8];
} RequestRow;

static const RequestRow request_rows[] = {
        { "piston-client's python", "{\"language\":\"python\",\"version\":\"3.11.2\",\"files\":[{\"content\":\"print(1)\"}],"
          "\"stdin\":\"\",\"args\":[\"1\",\"2\",\"3\"],\"compile_timeout\":10000,\"run_timeout\":3000,"
          "\"compile_memory_limit\":-1,\"run_memory_limit\":-1}", NULL,
          { "language=\"python\"", "code=\"print(1)\"", "limits.timeout_ms=3000", "limits.memory_mb=", "stdin=",
            "args.2=\"3\"", "files=" } },
        { "no version, no timeouts: Piston's defaults", "{\"language\":\"js\",\"files\":[{\"content\":\"1\"}]}", NULL,
          { "language=\"node\"", "limits.timeout_ms=3000" } },
        { "C: compile and run timeouts add up", "{\"language\":\"c\",\"files\":[{\"content\":\"int main(){}\"}],"
          "\"run_timeout\":2000,\"compile_timeout\":5000}", NULL, { "language=\"c\"", "limits.timeout_ms=7000" } },
        { "C: Piston's defaults", "{\"language\":\"c\",\"files\":[{\"content\":\"x\"}]}", NULL,
          { "limits.timeout_ms=13000" } },
        { "run_timeout -1: the configured default", "{\"language\":\"python\",\"run_timeout\":-1,\"files\":[{\"content\":\"x\"}]}",
          NULL, { "limits.timeout_ms=30000" } },
        { "a tiny run_timeout: sandboxd's floor", "{\"language\":\"python\",\"run_timeout\":1,\"files\":[{\"content\":\"x\"}]}",
          NULL, { "limits.timeout_ms=100" } },
        { "memory in bytes, rounded up to MiB", "{\"language\":\"python\",\"run_memory_limit\":67108865,"
          "\"files\":[{\"content\":\"x\"}]}", NULL, { "limits.memory_mb=65" } },
        { "a small memory limit: sandboxd's floor", "{\"language\":\"python\",\"run_memory_limit\":1000,"
          "\"files\":[{\"content\":\"x\"}]}", NULL, { "limits.memory_mb=16" } },
        { "C: the larger of the two memory limits", "{\"language\":\"c\",\"run_memory_limit\":33554432,"
          "\"compile_memory_limit\":268435456,\"files\":[{\"content\":\"x\"}]}", NULL, { "limits.memory_mb=256" } },
        { "python: compile_memory_limit does not count", "{\"language\":\"python\",\"compile_memory_limit\":268435456,"
          "\"files\":[{\"content\":\"x\"}]}", NULL, { "limits.memory_mb=" } },
        { "encodings, and input files by name", "{\"language\":\"bash\",\"version\":\"5.x\",\"files\":["
          "{\"content\":\"ZWNobyBoaQ==\",\"encoding\":\"base64\"},{\"name\":\"d/a.txt\",\"content\":\"6869\",\"encoding\":\"hex\"},"
          "{\"content\":\"plain\"},{\"content\":\"x\",\"encoding\":\"rot13\"}]}", NULL,
          { "code=\"echo hi\"", "files.0.path=\"d/a.txt\"", "files.0.content_base64=\"aGk=\"", "files.1.path=\"file2.code\"",
            "files.1.content_base64=\"cGxhaW4=\"", "files.2.content_base64=\"eA==\"" } },
        { "unknown members are ignored, as Piston does", "{\"language\":\"python\",\"files\":[{\"content\":\"x\"}],"
          "\"compile_cpu_time\":1000,\"whatever\":[1]}", NULL, { "language=\"python\"" } },
        { "stdin and args", "{\"language\":\"python\",\"files\":[{\"content\":\"x\"}],\"stdin\":\"in\",\"args\":[]}", NULL,
          { "stdin=\"in\"", "args=" } },

        { "not an object", "[1]", "the request must be a JSON object" },
        { "no language", "{\"files\":[{\"content\":\"x\"}]}", "language is required as a string" },
        { "language not a string", "{\"language\":3,\"files\":[{\"content\":\"x\"}]}", "language is required as a string" },
        { "unknown language", "{\"language\":\"cobol\",\"version\":\"1\",\"files\":[]}", "cobol-1 runtime is unknown" },
        { "a version it does not have", "{\"language\":\"python\",\"version\":\"2.7\",\"files\":[{\"content\":\"x\"}]}",
          "python-2.7 runtime is unknown" },
        { "version not a string", "{\"language\":\"python\",\"version\":3,\"files\":[{\"content\":\"x\"}]}",
          "version must be a string" },
        { "no files", "{\"language\":\"python\"}", "files is required as an array" },
        { "no file", "{\"language\":\"python\",\"files\":[]}", "files must name at least one file (the program)" },
        { "content missing", "{\"language\":\"python\",\"files\":[{\"name\":\"a\"}]}", "files[0].content is required as a string" },
        { "file not an object", "{\"language\":\"python\",\"files\":[\"x\"]}", "files[0] must be an object" },
        { "bad base64", "{\"language\":\"python\",\"files\":[{\"content\":\"!!\",\"encoding\":\"base64\"}]}",
          "files[0].content is not valid base64" },
        { "bad hex", "{\"language\":\"python\",\"files\":[{\"content\":\"abc\",\"encoding\":\"hex\"}]}",
          "files[0].content is not valid hex" },
        { "a NUL in the program", "{\"language\":\"python\",\"files\":[{\"content\":\"AA==\",\"encoding\":\"base64\"}]}",
          "files[0].content (the program) contains a NUL byte" },
        { "name not a string", "{\"language\":\"python\",\"files\":[{\"content\":\"x\"},{\"content\":\"y\",\"name\":1}]}",
          "files[1].name must be a string" },
        { "run_timeout over the ceiling", "{\"language\":\"python\",\"run_timeout\":600001,\"files\":[{\"content\":\"x\"}]}",
          "run_timeout cannot exceed the configured limit of 600000 ms" },
        { "C: the sum over the ceiling", "{\"language\":\"c\",\"run_timeout\":595001,\"files\":[{\"content\":\"x\"}]}",
          "compile_timeout + run_timeout cannot exceed the configured limit of 600000 ms" },
        { "run_timeout zero", "{\"language\":\"python\",\"run_timeout\":0,\"files\":[{\"content\":\"x\"}]}",
          "run_timeout must be a positive number or -1" },
        { "run_timeout a string", "{\"language\":\"python\",\"run_timeout\":\"3s\",\"files\":[{\"content\":\"x\"}]}",
          "run_timeout must be a number" },
        { "memory over the ceiling", "{\"language\":\"python\",\"run_memory_limit\":8589934593,\"files\":[{\"content\":\"x\"}]}",
          "run_memory_limit cannot exceed the configured limit of 8589934592 bytes" },
        { "stdin not a string", "{\"language\":\"python\",\"stdin\":1,\"files\":[{\"content\":\"x\"}]}", "stdin must be a string" },
        { "args not strings", "{\"language\":\"python\",\"args\":[1],\"files\":[{\"content\":\"x\"}]}",
          "args must be an array of strings" },
};

static void test_request_row(void **state) {
        const RequestRow *row = *state;
        _cleanup_(config_freep) Config *c = config_new();
        json_object *body = parse(row->body), *req = NULL;
        char msg[PISTON_MESSAGE_MAX];
        const Language *l = NULL;
        int r;

        assert_non_null(c);
        /* The shipped defaults and ceilings (sandboxd.conf(5)). */
        c->defaults = (Limits) { .timeout_ms = 30000, .memory_mb = 512, .cpu_cores = 1, .disk_mb = 1024, .tasks = 128 };
        c->ceilings = (Limits) { .timeout_ms = 600000, .memory_mb = 8192, .cpu_cores = 2, .disk_mb = 8192, .tasks = 1024 };
        r = piston_request(body, langs, n_langs, c, &req, &l, msg);
        if (row->error) {
                if (r != -EINVAL || !streq(msg, row->error))
                        fail_msg("%s: got %d '%s', want the refusal '%s'", row->name, r, msg, row->error);
                assert_null(req);
                json_object_put(body);
                return;
        }
        if (r != 0)
                fail_msg("%s: refused: %s", row->name, msg);
        assert_non_null(l);
        for (size_t i = 0; i < ELEMENTSOF(row->checks) && row->checks[i]; i++) {
                _cleanup_free_ char *path = strdup(row->checks[i]);
                char *eq = strchr(path, '=');
                json_object *v;

                *eq = 0;
                v = at(req, path);
                if (eq[1] == 0) {
                        if (v)
                                fail_msg("%s: %s is %s, want it absent", row->name, path, json_object_to_json_string(v));
                        continue;
                }
                if (!v || !streq(json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE), eq + 1))
                        fail_msg("%s: %s is %s, want %s", row->name, path,
                                 v ? json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE) : "absent", eq + 1);
        }
        json_object_put(req);
        json_object_put(body);
}

/* A record row: the record (result.c's fields that matter here), the language, the answer's checks. */
typedef struct ResponseRow {
        const char *name;
        const char *language;
        const char *record;
        const char *checks[12];
} ResponseRow;

static const ResponseRow response_rows[] = {
        { "python, success", "python",
          "{\"status\":\"success\",\"error_type\":null,\"exit_code\":0,\"signal\":null,\"stdout\":\"42\\n\",\"stderr\":\"w\\n\","
          "\"duration_ms\":16,\"cpu_time_ms\":12,\"peak_memory_mb\":4.0}",
          { "language=\"python\"", "version=\"3.11.2\"", "run.stdout=\"42\\n\"", "run.output=\"42\\nw\\n\"", "run.code=0",
            "run.signal=null", "run.status=null", "run.wall_time=16", "run.cpu_time=12", "run.memory=4194304", "compile=" } },
        { "python, a syntax error (sandboxd's check step) is the run stage's", "python",
          "{\"status\":\"failed\",\"error_type\":\"compile_error\",\"exit_code\":1,\"stderr\":\"SyntaxError\",\"reason\":\"r\"}",
          { "run.code=1", "run.status=\"RE\"", "run.stderr=\"SyntaxError\"", "run.message=\"r\"", "compile=" } },
        { "C, a compile error", "c",
          "{\"status\":\"failed\",\"error_type\":\"compile_error\",\"exit_code\":1,\"stdout\":\"\",\"stderr\":\"main.c: error\","
          "\"reason\":\"the compile step failed\"}",
          { "language=\"c\"", "version=\"12.2.0\"", "compile.code=1", "compile.stderr=\"main.c: error\"",
            "compile.output=\"main.c: error\"", "compile.status=\"RE\"", "run.code=null", "run.stdout=\"\"",
            "run.message=\"not run: the compile step failed\"" } },
        { "C++, success: the compile stage passed", "cpp",
          "{\"status\":\"success\",\"error_type\":null,\"exit_code\":0,\"stdout\":\"ok\"}",
          { "language=\"c++\"", "compile.code=0", "compile.stdout=\"\"", "run.stdout=\"ok\"", "run.code=0" } },
        { "a timeout", "python",
          "{\"status\":\"failed\",\"error_type\":\"timeout\",\"exit_code\":null,\"signal\":9,\"reason\":\"exceeded timeout_ms\"}",
          { "run.status=\"TO\"", "run.code=null", "run.signal=\"SIGKILL\"", "run.message=\"exceeded timeout_ms\"" } },
        { "an OOM", "node",
          "{\"status\":\"failed\",\"error_type\":\"oom\",\"exit_code\":null,\"signal\":9,\"reason\":\"out of memory\"}",
          { "language=\"javascript\"", "run.status=\"SG\"", "run.signal=\"SIGKILL\"", "run.message=\"out of memory\"" } },
        { "killed by SIGSEGV", "c",
          "{\"status\":\"failed\",\"error_type\":\"runtime_error\",\"exit_code\":null,\"signal\":11,\"reason\":\"r\"}",
          { "run.status=\"SG\"", "run.signal=\"SIGSEGV\"", "run.code=null", "compile.code=0" } },
        { "a non-zero exit", "bash",
          "{\"status\":\"failed\",\"error_type\":\"runtime_error\",\"exit_code\":3,\"signal\":null,\"reason\":\"r\"}",
          { "run.status=\"RE\"", "run.code=3", "run.signal=null" } },
        { "internal error: XX with the detail", "python",
          "{\"status\":\"failed\",\"error_type\":\"internal_error\",\"reason\":\"r\",\"error_message\":\"detail\"}",
          { "run.status=\"XX\"", "run.message=\"detail\"" } },
        { "input error: XX", "python",
          "{\"status\":\"failed\",\"error_type\":\"input_error\",\"reason\":\"r\"}", { "run.status=\"XX\"" } },
        { "cancelled", "python", "{\"status\":\"cancelled\",\"error_type\":null,\"reason\":\"cancelled by the caller\"}",
          { "run.status=\"XX\"", "run.message=\"cancelled by the caller\"" } },
        { "a language without a version", "ruby", "{\"status\":\"success\",\"exit_code\":0}",
          { "language=\"ruby\"", "version=\"0.0.0\"" } },
};

static void test_response_row(void **state) {
        const ResponseRow *row = *state;
        json_object *record = parse(row->record), *o;
        const Language *l = language_find(row->language);

        assert_non_null(l);
        o = piston_response(record, l);
        assert_non_null(o);
        for (size_t i = 0; i < ELEMENTSOF(row->checks) && row->checks[i]; i++) {
                _cleanup_free_ char *path = strdup(row->checks[i]);
                char *eq = strchr(path, '=');
                json_object *v;
                bool present;

                *eq = 0;
                present = json_object_object_get_ex(o, path, NULL) || at(o, path);
                v = at(o, path);
                if (eq[1] == 0) {
                        if (present)
                                fail_msg("%s: %s is present, want it absent", row->name, path);
                        continue;
                }
                if (!streq(v ? json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE) : "null", eq + 1))
                        fail_msg("%s: %s is %s, want %s", row->name, path,
                                 v ? json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE) : "null", eq + 1);
        }
        json_object_put(o);
        json_object_put(record);
}

int main(void) {
        struct CMUnitTest tests[4 + ELEMENTSOF(request_rows) + ELEMENTSOF(response_rows)];
        size_t n = 0;

        tests[n++] = (struct CMUnitTest) cmocka_unit_test(test_version);
        tests[n++] = (struct CMUnitTest) cmocka_unit_test(test_version_matches);
        tests[n++] = (struct CMUnitTest) cmocka_unit_test(test_find_language);
        tests[n++] = (struct CMUnitTest) cmocka_unit_test(test_runtimes);
        for (size_t i = 0; i < ELEMENTSOF(request_rows); i++)
                tests[n++] = (struct CMUnitTest) { request_rows[i].name, test_request_row, NULL, NULL, (void *) &request_rows[i] };
        for (size_t i = 0; i < ELEMENTSOF(response_rows); i++)
                tests[n++] = (struct CMUnitTest) { response_rows[i].name, test_response_row, NULL, NULL, (void *) &response_rows[i] };
        return _cmocka_run_group_tests("piston", tests, n, setup, NULL);
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <regex.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "capture.h"
#include "model/execution.h"
#include "model/result.h"
#include "util.h"

/* execution → JSON, checked field by field against docs/http-api.md "The execution object". */

static inline void json_object_putp(json_object **o) {
        if (*o)
                json_object_put(*o);
}
#define _cleanup_json_ _cleanup_(json_object_putp)

/* Every key of the execution object, and nothing else. */
static const char *const all_keys[] = {
        "execution_id", "record_id", "session_id", "language", "status", "error_type", "exit_code", "signal",
        "stdout", "stdout_bytes", "stdout_lines", "stdout_truncated",
        "stderr", "stderr_bytes", "stderr_lines", "stderr_truncated",
        "duration_ms", "cpu_time_ms", "peak_memory_mb", "created_at", "started_at", "finished_at",
        "limits", "unit", "node", "attempt", "start", "reason", "error_message", "artifacts", "artifacts_skipped", "network", "artifacts_skipped_total",
        "environment", "isolation", "summary",
};

static json_object *get(json_object *o, const char *key) {
        json_object *v = NULL;

        if (!json_object_object_get_ex(o, key, &v)) {
                print_error("key '%s' missing\n", key);
                fail();
        }
        return v;
}

static void check_null(json_object *o, const char *key) {
        json_object *v = get(o, key);

        if (v) {
                print_error("'%s' is %s, want null\n", key, json_object_to_json_string(v));
                fail();
        }
}

static void check_string(json_object *o, const char *key, const char *want) {
        json_object *v = get(o, key);

        assert_non_null(v);
        assert_true(json_object_is_type(v, json_type_string));
        assert_string_equal(json_object_get_string(v), want);
}

static void check_int(json_object *o, const char *key, int64_t want) {
        json_object *v = get(o, key);

        assert_non_null(v);
        if (!json_object_is_type(v, json_type_int)) {
                print_error("'%s' is %s, want an integer\n", key, json_object_to_json_string(v));
                fail();
        }
        assert_int_equal(json_object_get_int64(v), want);
}

static void check_bool(json_object *o, const char *key, bool want) {
        json_object *v = get(o, key);

        assert_non_null(v);
        assert_true(json_object_is_type(v, json_type_boolean));
        assert_int_equal(json_object_get_boolean(v), want);
}

static void check_keys(json_object *o) {
        assert_true(json_object_is_type(o, json_type_object));
        for (size_t i = 0; i < ELEMENTSOF(all_keys); i++)
                (void) get(o, all_keys[i]);
        assert_int_equal(json_object_object_length(o), ELEMENTSOF(all_keys));
}

static bool is_rfc3339_ms(const char *s) {
        regex_t re;
        bool ok;

        assert_int_equal(regcomp(&re, "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z$",
                                 REG_EXTENDED | REG_NOSUB), 0);
        ok = regexec(&re, s, 0, NULL, 0) == 0;
        regfree(&re);
        return ok;
}

static void check_time(json_object *o, const char *key, const char *want) {
        json_object *v = get(o, key);

        assert_non_null(v);
        assert_true(json_object_is_type(v, json_type_string));
        assert_true(is_rfc3339_ms(json_object_get_string(v)));
        assert_string_equal(json_object_get_string(v), want);
}

static void check_limits(json_object *o, const Limits *l) {
        json_object *lim = get(o, "limits"), *v;

        assert_non_null(lim);
        assert_true(json_object_is_type(lim, json_type_object));
        assert_int_equal(json_object_object_length(lim), 5);
        check_int(lim, "timeout_ms", (int64_t) l->timeout_ms);
        check_int(lim, "memory_mb", (int64_t) l->memory_mb);
        check_int(lim, "disk_mb", (int64_t) l->disk_mb);
        check_int(lim, "tasks", (int64_t) l->tasks);
        v = get(lim, "cpu_cores");
        assert_non_null(v);
        assert_true(json_object_is_type(v, json_type_double));
        assert_true(json_object_get_double(v) == l->cpu_cores);
}

/* Serialise as the API does and parse back: what a client sees. */
static json_object *roundtrip(json_object *o) {
        const char *text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
        json_object *r;

        assert_non_null(text);
        r = json_tokener_parse(text);
        assert_non_null(r);
        return r;
}

/* 2026-11-30T03:20:00.123456Z and so on */
#define T_CREATED  UINT64_C(1796008800123456)
#define T_STARTED  UINT64_C(1796008800200999)
#define T_FINISHED UINT64_C(1796008801000000)

static const Limits limits = { .timeout_ms = 30000, .memory_mb = 512, .cpu_cores = 0.5, .disk_mb = 1024, .tasks = 128 };

static void test_queued(_unused_ void **state) {
        _cleanup_(execution_freep) Execution *e = execution_new("exec_1");
        _cleanup_json_ json_object *o = NULL, *r = NULL;

        assert_non_null(e);
        e->language = "python";
        e->created_usec = T_CREATED;
        e->limits = limits;
        /* Stale values that must not show while the execution is not final. */
        e->out.bytes = 5;
        e->cpu_usec = 1000;
        e->have_cpu = true;
        e->peak_memory_bytes = 1 << 20;
        e->have_peak = true;
        e->duration_ms = 3;

        o = execution_to_json(e);
        assert_non_null(o);
        check_keys(o);
        check_string(o, "execution_id", "exec_1");
        check_null(o, "session_id");
        check_string(o, "language", "python");
        check_string(o, "status", "queued");
        check_null(o, "error_type");
        check_null(o, "exit_code");
        check_null(o, "signal");
        check_null(o, "stdout");
        check_null(o, "stdout_bytes");
        check_null(o, "stdout_lines");
        check_null(o, "stdout_truncated");
        check_null(o, "stderr");
        check_null(o, "stderr_bytes");
        check_null(o, "stderr_lines");
        check_null(o, "stderr_truncated");
        check_null(o, "duration_ms");
        check_null(o, "cpu_time_ms");
        check_null(o, "peak_memory_mb");
        check_time(o, "created_at", "2026-11-30T03:20:00.123Z");
        check_null(o, "started_at");
        check_null(o, "finished_at");
        check_limits(o, &limits);
        check_null(o, "unit");
        check_null(o, "reason");
        check_null(o, "error_message");
        check_null(o, "artifacts");
        check_null(o, "artifacts_skipped");
        check_null(o, "artifacts_skipped_total");
        check_null(o, "summary");

        /* The same after serialisation. */
        r = roundtrip(o);
        check_keys(r);
        check_null(r, "exit_code");
        check_null(r, "stdout");
        check_null(r, "peak_memory_mb");
        check_limits(r, &limits);
}

static void test_running(_unused_ void **state) {
        _cleanup_(execution_freep) Execution *e = execution_new("exec_2");
        _cleanup_json_ json_object *o = NULL;

        assert_non_null(e);
        e->session_id = strdup("sess_1");
        e->unit = strdup("sandboxd-exec_2.service");
        e->language = "bash";
        e->status = EXEC_RUNNING;
        e->created_usec = T_CREATED;
        e->started_usec = T_STARTED;
        e->limits = limits;
        e->exit_code = 0;        /* not known while running */

        o = execution_to_json(e);
        check_keys(o);
        check_string(o, "session_id", "sess_1");
        check_string(o, "status", "running");
        check_null(o, "error_type");
        check_null(o, "exit_code");
        check_null(o, "stdout");
        check_null(o, "duration_ms");
        check_time(o, "created_at", "2026-11-30T03:20:00.123Z");
        check_time(o, "started_at", "2026-11-30T03:20:00.200Z");
        check_null(o, "finished_at");
        check_string(o, "unit", "sandboxd-exec_2.service");
}

static void test_success(_unused_ void **state) {
        _cleanup_(execution_freep) Execution *e = execution_new("exec_20261130_0a1b2c3d4e5f6789");
        _cleanup_json_ json_object *o = NULL, *r = NULL;
        const char *text;

        assert_non_null(e);
        e->session_id = strdup("sess_1");
        e->language = "python";
        e->status = EXEC_SUCCESS;
        e->error_type = ERROR_NONE;
        e->exit_code = 0;
        e->signal = 0;
        e->out = (OutputStream) { .text = strdup("hello\n"), .bytes = 6, .lines = 1, .truncated = false };
        e->err = (OutputStream) { .text = NULL, .bytes = 0, .lines = 0, .truncated = false };
        e->duration_ms = 61;
        e->cpu_usec = 20999;
        e->have_cpu = true;
        e->peak_memory_bytes = 9857000;     /* 9.40 MiB */
        e->have_peak = true;
        e->created_usec = T_CREATED;
        e->started_usec = T_STARTED;
        e->finished_usec = T_FINISHED;
        e->limits = limits;
        e->unit = strdup("sandboxd-exec_20261130_0a1b2c3d4e5f6789.service");
        e->reason = "program exited with 0";

        o = execution_to_json(e);
        check_keys(o);
        check_string(o, "execution_id", "exec_20261130_0a1b2c3d4e5f6789");
        check_string(o, "record_id", "exec_20261130_0a1b2c3d4e5f6789");     /* generated: the same */
        check_string(o, "session_id", "sess_1");
        check_string(o, "language", "python");
        check_string(o, "status", "success");
        check_null(o, "error_type");
        check_int(o, "exit_code", 0);
        check_null(o, "signal");
        check_string(o, "stdout", "hello\n");
        check_int(o, "stdout_bytes", 6);
        check_int(o, "stdout_lines", 1);
        check_bool(o, "stdout_truncated", false);
        /* Final: an empty stream is "", not null. */
        check_string(o, "stderr", "");
        check_int(o, "stderr_bytes", 0);
        check_int(o, "stderr_lines", 0);
        check_bool(o, "stderr_truncated", false);
        check_int(o, "duration_ms", 61);
        check_int(o, "cpu_time_ms", 20);
        check_time(o, "created_at", "2026-11-30T03:20:00.123Z");
        check_time(o, "started_at", "2026-11-30T03:20:00.200Z");
        check_time(o, "finished_at", "2026-11-30T03:20:01.000Z");
        check_limits(o, &limits);
        check_string(o, "unit", "sandboxd-exec_20261130_0a1b2c3d4e5f6789.service");
        check_string(o, "reason", "program exited with 0");
        check_null(o, "error_message");
        /* Final without artifacts: empty lists, not null. */
        assert_true(json_object_is_type(get(o, "artifacts"), json_type_array));
        assert_int_equal(json_object_array_length(get(o, "artifacts")), 0);
        assert_int_equal(json_object_array_length(get(o, "artifacts_skipped")), 0);
        check_int(o, "artifacts_skipped_total", 0);

        /* peak_memory_mb: a number with one decimal, on the wire too. */
        assert_true(json_object_is_type(get(o, "peak_memory_mb"), json_type_double));
        assert_true(json_object_get_double(get(o, "peak_memory_mb")) == 9.4);
        text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
        assert_non_null(strstr(text, "\"peak_memory_mb\":9.4,"));
        r = roundtrip(o);
        check_keys(r);
        assert_true(json_object_get_double(get(r, "peak_memory_mb")) == 9.4);
        check_int(r, "exit_code", 0);
        check_null(r, "signal");
        check_null(r, "error_type");
        /* A record stored before the tiers has no isolation: null. */
        check_null(o, "isolation");

        /* With one: the stored JSON, as an object. */
        json_object_put(o);
        e->isolation = strdup("{\"tier\":\"strong\",\"reasons\":[\"processes: subprocess\"]}");
        assert_non_null(e->isolation);
        o = execution_to_json(e);
        assert_string_equal(json_object_to_json_string_ext(get(o, "isolation"), JSON_C_TO_STRING_PLAIN),
                            "{\"tier\":\"strong\",\"reasons\":[\"processes: subprocess\"]}");
}

/* A client-chosen id: the caller's name is execution_id, the derived record id is record_id. */
static void test_client_id(_unused_ void **state) {
        _cleanup_(execution_freep) Execution *e = execution_new("exec_d2d52ba6965331276a116aeea83fc797");
        _cleanup_json_ json_object *o = NULL;

        assert_non_null(e);
        e->client_id = strdup("job-1");
        e->language = "python";
        e->limits = limits;
        o = execution_to_json(e);
        check_keys(o);
        check_string(o, "execution_id", "job-1");
        check_string(o, "record_id", "exec_d2d52ba6965331276a116aeea83fc797");
        assert_string_equal(execution_public_id(e), "job-1");
}

static void test_failed(_unused_ void **state) {
        static const struct {
                ExecStatus status;
                ErrorType error_type;
                int exit_code, signal;
                const char *status_name, *error_name;   /* error_name NULL: null */
        } rows[] = {
                { EXEC_FAILED,    ERROR_RUNTIME,        1,   0,       "failed",    "runtime_error" },
                { EXEC_FAILED,    ERROR_COMPILE,        2,   0,       "failed",    "compile_error" },
                { EXEC_FAILED,    ERROR_OOM,            -1,  SIGKILL, "failed",    "oom" },
                { EXEC_FAILED,    ERROR_TIMEOUT,        -1,  SIGKILL, "failed",    "timeout" },
                { EXEC_FAILED,    ERROR_RESOURCE_LIMIT, -1,  SIGXFSZ, "failed",    "resource_limit" },
                { EXEC_FAILED,    ERROR_INTERNAL,       -1,  0,       "failed",    "internal_error" },
                { EXEC_FAILED,    ERROR_RUNTIME,        255, 0,       "failed",    "runtime_error" },
                { EXEC_CANCELLED, ERROR_NONE,           -1,  SIGKILL, "cancelled", NULL },
                { EXEC_CANCELLED, ERROR_NONE,           -1,  0,       "cancelled", NULL },
        };

        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                _cleanup_(execution_freep) Execution *e = execution_new("exec_f");
                _cleanup_json_ json_object *o = NULL;

                e->language = "node";
                e->status = rows[i].status;
                e->error_type = rows[i].error_type;
                e->exit_code = rows[i].exit_code;
                e->signal = rows[i].signal;
                e->err = (OutputStream) { .text = strdup("boom\n[... sandboxd: 10 bytes elided ...]\nend\n"),
                                          .bytes = 70000, .lines = 3, .truncated = true };
                e->created_usec = T_CREATED;
                e->finished_usec = T_FINISHED;
                e->limits = limits;
                e->reason = "whatever";

                o = execution_to_json(e);
                check_keys(o);
                check_string(o, "status", rows[i].status_name);
                if (rows[i].error_name)
                        check_string(o, "error_type", rows[i].error_name);
                else
                        check_null(o, "error_type");
                if (rows[i].exit_code >= 0)
                        check_int(o, "exit_code", rows[i].exit_code);
                else
                        check_null(o, "exit_code");
                if (rows[i].signal > 0)
                        check_int(o, "signal", rows[i].signal);
                else
                        check_null(o, "signal");
                check_int(o, "stderr_bytes", 70000);
                check_bool(o, "stderr_truncated", true);
                check_string(o, "stdout", "");
                /* Never started (started_usec 0), no counters: null even though final. */
                check_null(o, "started_at");
                check_null(o, "duration_ms");
                check_null(o, "cpu_time_ms");
                check_null(o, "peak_memory_mb");
                check_time(o, "finished_at", "2026-11-30T03:20:01.000Z");
                /* Made from the record when it has none (one stored before summaries); kept when it has. */
                {
                        json_object *v = get(o, "summary");

                        assert_true(json_object_is_type(v, json_type_string));
                        assert_true(strlen(json_object_get_string(v)) > 0);
                        assert_non_null(strstr(json_object_get_string(v), "boom\n"));
                }
                e->summary = strdup("stored summary");
                assert_non_null(e->summary);
                json_object_put(o);
                o = execution_to_json(e);
                check_string(o, "summary", "stored summary");
        }
}

static void test_peak_memory(_unused_ void **state) {
        static const struct {
                uint64_t bytes;
                const char *text;
        } rows[] = {
                { 0,                            "0.0" },
                { 1,                            "0.0" },
                { 104857,                       "0.0" },   /* just under 0.1 MiB */
                { 104858,                       "0.1" },
                { 1048575,                      "0.9" },   /* rounded down, never up */
                { 1048576,                      "1.0" },
                { 9857000,                      "9.4" },
                { 10433331,                     "9.9" },
                { 268435456,                    "256.0" },
                { 8589934592,                   "8192.0" },
                { UINT64_C(1) << 40,            "1048576.0" },
                { UINT64_MAX,                   "17592186044415.9" },   /* no overflow */
        };

        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                _cleanup_(execution_freep) Execution *e = execution_new("exec_p");
                _cleanup_json_ json_object *o = NULL;
                _cleanup_free_ char *want = NULL;
                json_object *v;
                const char *text;

                e->status = EXEC_SUCCESS;
                e->exit_code = 0;
                e->peak_memory_bytes = rows[i].bytes;
                e->have_peak = true;
                o = execution_to_json(e);
                v = get(o, "peak_memory_mb");
                assert_non_null(v);
                assert_true(json_object_is_type(v, json_type_double));
                assert_true(json_object_get_double(v) == strtod(rows[i].text, NULL));
                text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
                assert_true(asprintf(&want, "\"peak_memory_mb\":%s,", rows[i].text) > 0);
                if (!strstr(text, want)) {
                        print_error("%" PRIu64 " bytes: %s, want %s\n", rows[i].bytes, text, want);
                        fail();
                }
        }
}

static void test_artifacts(_unused_ void **state) {
        _cleanup_(execution_freep) Execution *e = execution_new("exec_a");
        _cleanup_json_ json_object *o = NULL;
        json_object *a, *x;

        assert_non_null(e);
        e->language = "python";
        e->status = EXEC_SUCCESS;
        e->exit_code = 0;
        e->limits = limits;
        e->artifacts = exec_artifacts_new();
        assert_non_null(e->artifacts);
        assert_int_equal(exec_artifacts_add(e->artifacts, "plot.png", 67, "image/png",
                                            "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"), 0);
        assert_int_equal(exec_artifacts_add(e->artifacts, "d/t.csv", 5, "text/csv", "short"), -EINVAL);
        assert_int_equal(exec_artifacts_add_skip(e->artifacts, "link", "symlink"), 0);
        e->artifacts->n_skipped_total = 7;

        o = execution_to_json(e);
        check_keys(o);
        a = get(o, "artifacts");
        assert_int_equal(json_object_array_length(a), 1);
        x = json_object_array_get_idx(a, 0);
        check_string(x, "path", "plot.png");
        check_int(x, "size", 67);
        check_string(x, "mime_type", "image/png");
        check_string(x, "sha256", "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
        assert_int_equal(json_object_object_length(x), 4);      /* the url is added by the API */
        a = get(o, "artifacts_skipped");
        assert_int_equal(json_object_array_length(a), 1);
        check_string(json_object_array_get_idx(a, 0), "path", "link");
        check_string(json_object_array_get_idx(a, 0), "reason", "symlink");
        check_int(o, "artifacts_skipped_total", 7);
}

static void test_format_timestamp(_unused_ void **state) {
        static const struct {
                uint64_t usec;
                const char *text;
        } rows[] = {
                { 0,                            "1970-01-01T00:00:00.000Z" },
                { 1,                            "1970-01-01T00:00:00.000Z" },
                { 999,                          "1970-01-01T00:00:00.000Z" },
                { 1000,                         "1970-01-01T00:00:00.001Z" },
                { 999999,                       "1970-01-01T00:00:00.999Z" },
                { 1000000,                      "1970-01-01T00:00:01.000Z" },
                { UINT64_C(946684799500000),    "1999-12-31T23:59:59.500Z" },
                { UINT64_C(951868799999999),    "2000-02-29T23:59:59.999Z" },   /* truncated, not rounded */
                { UINT64_C(1796008800123456),   "2026-11-30T03:20:00.123Z" },
                { UINT64_C(2147483648000500),   "2038-01-19T03:14:08.000Z" },   /* past 32-bit time_t */
        };

        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                char buf[64];

                format_timestamp(rows[i].usec, buf, sizeof(buf));
                if (!streq(buf, rows[i].text)) {
                        print_error("%" PRIu64 ": '%s', want '%s'\n", rows[i].usec, buf, rows[i].text);
                        fail();
                }
                assert_true(is_rfc3339_ms(buf));
        }
}

/* What a caller gets is bounded whatever the program printed (issue 12 §6): the output rendered by
 * capture.c into the result, measured the way the APIs serialise it. Before, 128 KiB of invalid
 * bytes became 384 KiB of U+FFFD, and each \x01 six bytes of JSON on top. */
static uint8_t hostile_byte(unsigned kind, uint64_t i) {
        switch (kind) {
        case 0:  return (uint8_t) (0x80 + i % 0x80);                          /* 0x80..0xff */
        case 1:  return 0x01;                                                /* \u0001 in JSON */
        case 2:  return i % 3 == 0 ? 0x01 : (uint8_t) (0x80 + i % 0x80);      /* both */
        case 3:  /* 4-byte characters, cut at 64 KiB by the capture */
                return i < 2 ? 'a' : (const uint8_t[]) { 0xf0, 0x9f, 0x98, 0x80 }[(i - 2) % 4];
        case 4:  return "\"\\/\n"[i % 4];                                    /* two bytes each in JSON */
        default: return 'x';
        }
}

static size_t json_string_len(const char *s, int flags) {
        json_object *o = json_object_new_string(s);
        size_t n;

        assert_non_null(o);
        n = strlen(json_object_to_json_string_ext(o, flags)) - 2;     /* without the quotes */
        json_object_put(o);
        return n;
}

static void test_output_bounds(_unused_ void **state) {
        const size_t H = CAPTURE_DEFAULT_HEAD, T = CAPTURE_DEFAULT_TAIL;
        static const int flags[] = {
                JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE,      /* HTTP (http.c) */
                JSON_C_TO_STRING_PLAIN,                                       /* D-Bus, callbacks */
        };
        static const uint64_t sizes[] = { 1000, 128 * 1024, 128 * 1024 + 1, 1024 * 1024 };

        for (unsigned kind = 0; kind <= 5; kind++)
                for (size_t z = 0; z < ELEMENTSOF(sizes); z++) {
                        _cleanup_(execution_freep) Execution *e = execution_new("exec_bounds");
                        _cleanup_free_ uint8_t *buf = malloc(sizes[z]);
                        _cleanup_json_ json_object *o = NULL;
                        Capture c = {};
                        uint64_t elided = 0;
                        const char *text;

                        assert_non_null(e);
                        assert_non_null(buf);
                        for (uint64_t i = 0; i < sizes[z]; i++)
                                buf[i] = hostile_byte(kind, i);
                        assert_int_equal(capture_init(&c, H, T), 0);
                        capture_append(&c, buf, sizes[z]);
                        e->language = "python";
                        e->status = EXEC_SUCCESS;
                        e->exit_code = 0;
                        e->limits = limits;
                        assert_int_equal(capture_render(&c, &e->out.text, &elided), 0);
                        e->out.bytes = c.total_bytes;
                        e->out.lines = c.total_lines;
                        e->out.truncated = elided > 0;
                        e->err = e->out;
                        e->err.text = strdup(e->out.text);
                        assert_non_null(e->err.text);
                        capture_done(&c);

                        o = execution_to_json(e);
                        check_keys(o);
                        text = json_object_get_string(get(o, "stdout"));
                        /* The text: at most head + tail + the marker, in bytes of UTF-8. */
                        if (strlen(text) > H + T + CAPTURE_MARKER_MAX) {
                                print_error("kind %u, %" PRIu64 " bytes: %zu bytes of text\n", kind, sizes[z],
                                            strlen(text));
                                fail();
                        }
                        /* Totals stay exact; truncated says whether anything is not shown. */
                        check_int(o, "stdout_bytes", (int64_t) sizes[z]);
                        check_bool(o, "stdout_truncated", elided > 0);
                        assert_int_equal(elided > 0, strstr(text, CAPTURE_MARKER_PREFIX) != NULL);
                        /* Text of weight 1 per byte fitting the capture is all there. */
                        if (kind >= 4 && sizes[z] <= H + T)
                                assert_int_equal(elided, 0);
                        for (size_t f = 0; f < ELEMENTSOF(flags); f++) {
                                size_t body = strlen(json_object_to_json_string_ext(o, flags[f]));
                                size_t str = json_string_len(text, flags[f]);

                                /* Each string in JSON: at most twice head + tail, plus the marker
                                 * (its two newlines escaped). */
                                if (str > 2 * (H + T) + CAPTURE_MARKER_MAX + 2) {
                                        print_error("kind %u, %" PRIu64 " bytes, flags %d: %zu bytes of JSON\n",
                                                    kind, sizes[z], flags[f], str);
                                        fail();
                                }
                                /* The body: both streams and about 1 KiB of everything else. */
                                assert_true(body <= 2 * (2 * (H + T) + CAPTURE_MARKER_MAX + 4) + 1024);
                        }
                }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_queued),
                cmocka_unit_test(test_running),
                cmocka_unit_test(test_success),
                cmocka_unit_test(test_client_id),
                cmocka_unit_test(test_failed),
                cmocka_unit_test(test_peak_memory),
                cmocka_unit_test(test_artifacts),
                cmocka_unit_test(test_format_timestamp),
                cmocka_unit_test(test_output_bounds),
        };

        return cmocka_run_group_tests_name("result", tests, NULL, NULL);
}

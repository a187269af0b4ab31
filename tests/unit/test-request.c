/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <json-c/json.h>

#include "base64.h"
#include "model/conf.h"
#include "model/request.h"
#include "strv.h"
#include "util.h"

/* Each row of each table runs as its own cmocka test, named after the row, so a failure in the TAP
 * output says which rule broke. All rows run against one configuration: the built-in defaults and
 * ceilings, with small body and code caps so the 413 rows stay small. */

#define TEST_MAX_REQUEST_BYTES (128 * 1024)
#define TEST_MAX_CODE_BYTES 1024
#define TEST_MAX_INPUT_FILES 4
#define TEST_MAX_INLINE_BYTES 16

#define sizeof_field(type, member) sizeof(((type *) NULL)->member)

static Config *cfg;

static int setup_config(_unused_ void **state) {
        cfg = config_new();
        if (!cfg)
                return -1;
        cfg->max_request_bytes = TEST_MAX_REQUEST_BYTES;
        cfg->max_code_bytes = TEST_MAX_CODE_BYTES;
        cfg->max_input_files = TEST_MAX_INPUT_FILES;
        cfg->max_inline_input_bytes = TEST_MAX_INLINE_BYTES;
        return 0;
}

static int teardown_config(_unused_ void **state) {
        cfg = config_free(cfg);
        return 0;
}

_printf_(1, 2) static char *strf(const char *fmt, ...) {
        va_list ap;
        char *s = NULL;
        int k;

        va_start(ap, fmt);
        k = vasprintf(&s, fmt, ap);
        va_end(ap);
        assert_true(k >= 0);
        return s;
}

static char *repeat(char c, size_t n) {
        char *s = malloc(n + 1);

        assert_non_null(s);
        memset(s, c, n);
        s[n] = 0;
        return s;
}

static ExecRequest *parse_ok_len(const char *body, size_t len) {
        ExecRequest *req = NULL;
        RequestError err;
        int r;

        r = exec_request_parse(body, len, cfg, &req, &err);
        if (r != 0) {
                print_error("refused (%d): %u %s field='%s': %s\n", r, api_error_http_status(err.error),
                            strna(api_error_code(err.error)), err.field, err.message);
                fail();
        }
        assert_non_null(req);
        return req;
}

static ExecRequest *parse_ok(const char *body) {
        return parse_ok_len(body, strlen(body));
}

static void check_refused_len(const char *body, size_t len, int status, const char *code, const char *field,
                              const char *message) {
        ExecRequest *req = NULL;
        RequestError err;
        int r;

        r = exec_request_parse(body, len, cfg, &req, &err);
        if (r != -EINVAL || api_error_http_status(err.error) != (unsigned) status ||
            !streq_ptr(api_error_code(err.error), code) || !streq(err.field, field) ||
            (message && !strstr(err.message, message))) {
                print_error("got %d: %u %s field='%s' message='%s'\n", r, r < 0 ? api_error_http_status(err.error) : 0,
                            r < 0 ? strna(api_error_code(err.error)) : "-", r < 0 ? err.field : "",
                            r < 0 ? err.message : "");
                print_error("want -EINVAL: %d %s field='%s' message containing '%s'\n", status, code, field,
                            strna(message));
                exec_request_free(req);
                fail();
        }
        assert_null(req);
        assert_true(strlen(err.message) > 0);
}

static void check_refused(const char *body, int status, const char *code, const char *field, const char *message) {
        check_refused_len(body, strlen(body), status, code, field, message);
}

/* ---- refused requests ---- */

typedef struct RefuseRow {
        const char *name;
        const char *body;
        size_t len;              /* 0: strlen(body) */
        int status;
        const char *code;
        const char *field;
        const char *message;     /* a substring of the message, or NULL */
} RefuseRow;

/* A valid request plus more fields. */
#define REQ(more) "{\"language\": \"python\", \"code\": \"print(1)\", " more "}"
#define LIMITS(l) REQ("\"limits\": {" l "}")
#define ENV(e) REQ("\"env\": {" e "}")
#define FILES(f) REQ("\"files\": " f)
#define F_URL(p) "{\"path\": \"" p "\", \"url\": \"http://127.0.0.1/x\"}"
/* base64 of 17 and of 9 bytes 'a' */
#define B64_17 "YWFhYWFhYWFhYWFhYWFhYWE="
#define B64_9 "YWFhYWFhYWFh"

#define BAD(name, body, field, message) { name, body, 0, 400, "invalid_request", field, message }
#define BAD_JSON(name, body) { name, body, 0, 400, "invalid_json", "", "invalid JSON" }
#define BAD_JSON_LEN(name, body) { name, body, sizeof(body) - 1, 400, "invalid_json", "", "invalid JSON" }

static const RefuseRow refuse_rows[] = {
        /* limits above their ceilings (built-in: 600000 ms, 8192 MB, 2 cores, 8192 MB, 1024 tasks) */
        BAD("timeout_ms above ceiling", LIMITS("\"timeout_ms\": 600001"), "limits.timeout_ms",
            "limits.timeout_ms: 600001 exceeds the ceiling 600000"),
        BAD("memory_mb above ceiling", LIMITS("\"memory_mb\": 99999"), "limits.memory_mb",
            "limits.memory_mb: 99999 exceeds the ceiling 8192"),
        BAD("cpu_cores above ceiling", LIMITS("\"cpu_cores\": 2.5"), "limits.cpu_cores", "exceeds the ceiling"),
        BAD("cpu_cores int above ceiling", LIMITS("\"cpu_cores\": 64"), "limits.cpu_cores", "exceeds the ceiling"),
        BAD("disk_mb above ceiling", LIMITS("\"disk_mb\": 8193"), "limits.disk_mb",
            "limits.disk_mb: 8193 exceeds the ceiling 8192"),
        BAD("tasks above ceiling", LIMITS("\"tasks\": 1025"), "limits.tasks", "limits.tasks: 1025 exceeds the ceiling 1024"),
        BAD("ceiling checked with other limits valid", LIMITS("\"timeout_ms\": 1000, \"memory_mb\": 8193, \"tasks\": 8"),
            "limits.memory_mb", "exceeds the ceiling"),

        /* below the minimums */
        BAD("timeout_ms below minimum", LIMITS("\"timeout_ms\": 99"), "limits.timeout_ms",
            "limits.timeout_ms: 99 is below the minimum 100"),
        BAD("memory_mb below minimum", LIMITS("\"memory_mb\": 15"), "limits.memory_mb", "below the minimum 16"),
        BAD("disk_mb zero", LIMITS("\"disk_mb\": 0"), "limits.disk_mb", "below the minimum 1"),
        BAD("tasks below minimum", LIMITS("\"tasks\": 3"), "limits.tasks", "below the minimum 4"),
        BAD("cpu_cores zero", LIMITS("\"cpu_cores\": 0"), "limits.cpu_cores", "below the minimum"),
        BAD("cpu_cores tiny", LIMITS("\"cpu_cores\": 0.001"), "limits.cpu_cores", "below the minimum"),
        BAD("cpu_cores negative", LIMITS("\"cpu_cores\": -0.5"), "limits.cpu_cores", "below the minimum"),
        BAD("timeout_ms negative", LIMITS("\"timeout_ms\": -1"), "limits.timeout_ms", NULL),
        BAD("memory_mb uint64 max", LIMITS("\"memory_mb\": 18446744073709551615"), "limits.memory_mb", NULL),
        BAD("memory_mb int64 max", LIMITS("\"memory_mb\": 9223372036854775807"), "limits.memory_mb", NULL),

        /* wrong types */
        BAD("timeout_ms string", LIMITS("\"timeout_ms\": \"1000\""), "limits.timeout_ms", "expected an integer"),
        BAD("timeout_ms fraction", LIMITS("\"timeout_ms\": 1000.5"), "limits.timeout_ms", "expected an integer"),
        BAD("timeout_ms exponent", LIMITS("\"timeout_ms\": 1e3"), "limits.timeout_ms", "expected an integer"),
        BAD("memory_mb bool", LIMITS("\"memory_mb\": true"), "limits.memory_mb", "expected an integer"),
        BAD("disk_mb null", LIMITS("\"disk_mb\": null"), "limits.disk_mb", "expected an integer"),
        BAD("tasks array", LIMITS("\"tasks\": [8]"), "limits.tasks", "expected an integer"),
        BAD("cpu_cores string", LIMITS("\"cpu_cores\": \"1\""), "limits.cpu_cores", "expected a number"),
        BAD("cpu_cores null", LIMITS("\"cpu_cores\": null"), "limits.cpu_cores", "expected a number"),
        BAD("limits string", REQ("\"limits\": \"big\""), "limits", "expected an object"),
        BAD("limits array", REQ("\"limits\": []"), "limits", "expected an object"),
        BAD("execution_id number", REQ("\"execution_id\": 5"), "execution_id", "expected a string"),
        BAD("execution_id null", REQ("\"execution_id\": null"), "execution_id", "expected a string"),
        BAD("session_id bool", REQ("\"session_id\": true"), "session_id", "expected a string"),
        BAD("language number", "{\"language\": 5, \"code\": \"1\"}", "language", "expected a string"),
        BAD("language array", "{\"language\": [\"python\"], \"code\": \"1\"}", "language", "expected a string"),
        BAD("code number", "{\"language\": \"python\", \"code\": 5}", "code", "expected a string"),
        BAD("code null", "{\"language\": \"python\", \"code\": null}", "code", "expected a string"),
        BAD("code array", "{\"language\": \"python\", \"code\": [\"1\"]}", "code", "expected a string"),
        BAD("env array", REQ("\"env\": [\"A=1\"]"), "env", "expected an object"),
        BAD("env string", REQ("\"env\": \"A=1\""), "env", "expected an object"),
        BAD("env null", REQ("\"env\": null"), "env", "expected an object"),
        BAD("stdin number", REQ("\"stdin\": 1"), "stdin", "stdin: expected a string"),
        BAD("stdin array", REQ("\"stdin\": [\"a\"]"), "stdin", "stdin: expected a string"),
        BAD("stdin null", REQ("\"stdin\": null"), "stdin", "stdin: expected a string"),
        BAD("args string", REQ("\"args\": \"a b\""), "args", "args: expected an array of strings"),
        BAD("args object", REQ("\"args\": {}"), "args", "args: expected an array of strings"),
        BAD("args null", REQ("\"args\": null"), "args", "args: expected an array of strings"),
        BAD("args number entry", REQ("\"args\": [\"a\", 1]"), "args[1]", "args[1]: expected a string"),
        BAD("args null entry", REQ("\"args\": [null]"), "args[0]", "args[0]: expected a string"),
        BAD("args nested array", REQ("\"args\": [[\"a\"]]"), "args[0]", "args[0]: expected a string"),
        BAD("args NUL", REQ("\"args\": [\"ok\", \"a\\u0000b\"]"), "args[1]", "args[1]: contains a NUL byte"),
        BAD("seed string", REQ("\"seed\": \"1\""), "seed", "expected an integer"),
        BAD("seed fraction", REQ("\"seed\": 1.5"), "seed", "expected an integer"),
        BAD("seed negative", REQ("\"seed\": -1"), "seed", NULL),
        BAD("seed int64 max", REQ("\"seed\": 9223372036854775807"), "seed", NULL),

        /* unknown fields */
        BAD("unknown top-level field", REQ("\"bogus\": 1"), "bogus", "unknown field 'bogus'"),
        BAD("unknown field, case", REQ("\"Language\": \"python\""), "Language", "unknown field 'Language'"),
        BAD("unknown field null", REQ("\"timeout_ms\": null"), "timeout_ms", "unknown field 'timeout_ms'"),
        BAD("unknown field in limits", LIMITS("\"nope\": 1"), "limits", "unknown field 'nope'"),
        BAD("unknown field in limits next to valid", LIMITS("\"timeout_ms\": 1000, \"timeout\": 1000"), "limits",
            "unknown field 'timeout'"),

        /* not JSON */
        BAD_JSON("empty body", ""),
        BAD_JSON("only white space", "  \n"),
        BAD_JSON("truncated", "{\"language\": \"python\", \"code\": "),
        BAD_JSON("unterminated string", "{\"language\": \"python\", \"code\": \"1}"),
        BAD_JSON("bare word", "nul"),
        BAD_JSON("trailing comma", "{\"language\": \"python\", \"code\": \"1\",}"),
        BAD_JSON("trailing garbage", "{\"language\": \"python\", \"code\": \"1\"} x"),
        BAD_JSON("second value", "{\"language\": \"python\", \"code\": \"1\"}{}"),
        BAD_JSON("second value after newline", "{\"language\": \"python\", \"code\": \"1\"}\n1"),
        BAD_JSON_LEN("trailing NUL", "{\"language\": \"python\", \"code\": \"1\"}\0"),
        BAD_JSON_LEN("NUL inside a string", "{\"language\": \"python\", \"code\": \"1\0\"}"),
        BAD_JSON("100 levels deep", "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["
                                    "[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]"
                                    "]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]"),

        /* JSON json-c reads one way and other parsers another (json-strict.h): the field names the
         * member */
        { "duplicate key", REQ("\"code\": \"print(2)\""), 0, 400, "invalid_json", "code", "duplicate key 'code'" },
        { "duplicate key, escaped", REQ("\"c\\u006fde\": \"print(2)\""), 0, 400, "invalid_json", "code",
          "duplicate key" },
        { "duplicate key in limits", LIMITS("\"memory_mb\": 64, \"memory_mb\": 8192"), 0, 400, "invalid_json",
          "limits.memory_mb", "duplicate key 'memory_mb'" },
        { "duplicate env name", ENV("\"A\": \"1\", \"A\": \"2\""), 0, 400, "invalid_json", "env.A", "duplicate key" },
        { "NUL in a key", LIMITS("\"memory_mb\\u0000\": 8192"), 0, 400, "invalid_json", "limits",
          "a key contains \\u0000" },
        { "NaN", LIMITS("\"memory_mb\": NaN"), 0, 400, "invalid_json", "", "NaN" },
        { "Infinity", LIMITS("\"memory_mb\": -Infinity"), 0, 400, "invalid_json", "", "Infinity" },
        { "2^64", LIMITS("\"memory_mb\": 18446744073709551616"), 0, 400, "invalid_json", "limits.memory_mb",
          "18446744073709551616 is out of range" },
        { "-2^63-1", REQ("\"seed\": -9223372036854775809"), 0, 400, "invalid_json", "seed", "out of range" },
        { "raw tab in an env value", REQ("\"env\": {\"A\": \"a\tb\"}"), 0, 400, "invalid_json", "env.A",
          "raw control character U+0009" },

        /* not UTF-8: inside strings, keys, and each kind json-c's own check lets through */
        BAD_JSON("0xff in code", "{\"language\": \"python\", \"code\": \"\xff\"}"),
        BAD_JSON("broken 2-byte sequence", "{\"language\": \"python\", \"code\": \"\xc3\x28\"}"),
        BAD_JSON("truncated 3-byte sequence", "{\"language\": \"python\", \"code\": \"\xe2\x82\"}"),
        BAD_JSON("stray continuation byte", "{\"language\": \"python\", \"code\": \"a\x80\"}"),
        BAD_JSON("overlong '/'", "{\"language\": \"python\", \"code\": \"\xc0\xaf\"}"),
        BAD_JSON("overlong 3-byte", "{\"language\": \"python\", \"code\": \"\xe0\x80\xaf\"}"),
        BAD_JSON("UTF-8 encoded surrogate", "{\"language\": \"python\", \"code\": \"\xed\xa0\x80\"}"),
        BAD_JSON("above U+10FFFF", "{\"language\": \"python\", \"code\": \"\xf4\x90\x80\x80\"}"),
        BAD_JSON("not UTF-8 in an env value", ENV("\"A\": \"\xfe\"")),
        BAD_JSON("not UTF-8 in an env name", ENV("\"A\xff\": \"1\"")),
        BAD_JSON("not UTF-8 in a key", REQ("\"\xc0\xaf\": 1")),

        /* JSON, but not an object */
        BAD("array", "[]", "", "must be a JSON object"),
        BAD("object in an array", "[{\"language\": \"python\", \"code\": \"1\"}]", "", "must be a JSON object"),
        BAD("string", "\"python\"", "", "must be a JSON object"),

        /* language and code */
        BAD("missing language", "{\"code\": \"1\"}", "language", "required"),
        BAD("missing code", "{\"language\": \"python\"}", "code", "required"),
        BAD("empty object", "{}", "language", "required"),
        BAD("unknown language", "{\"language\": \"cobol\", \"code\": \"1\"}", "language", "unknown language 'cobol'"),
        BAD("empty language", "{\"language\": \"\", \"code\": \"1\"}", "language", "unknown language"),
        BAD("language case", "{\"language\": \"Python\", \"code\": \"1\"}", "language", "unknown language"),
        BAD("language with a space", "{\"language\": \"python \", \"code\": \"1\"}", "language", "unknown language"),
        BAD("language with NUL", "{\"language\": \"python\\u0000x\", \"code\": \"1\"}", "language", "unknown language"),
        BAD("code with NUL", "{\"language\": \"python\", \"code\": \"print(1)\\u0000\"}", "code", "NUL"),
        BAD("code only NUL", "{\"language\": \"python\", \"code\": \"\\u0000\"}", "code", "NUL"),

        /* ids */
        BAD("execution_id empty", REQ("\"execution_id\": \"\""), "execution_id", "[A-Za-z0-9_.-]"),
        BAD("execution_id leading '-'", REQ("\"execution_id\": \"-exec\""), "execution_id", "[A-Za-z0-9_.-]"),
        BAD("execution_id leading '.'", REQ("\"execution_id\": \".exec\""), "execution_id", "[A-Za-z0-9_.-]"),
        BAD("execution_id '..'", REQ("\"execution_id\": \"..\""), "execution_id", NULL),
        BAD("execution_id slash", REQ("\"execution_id\": \"../etc\""), "execution_id", NULL),
        BAD("execution_id slash inside", REQ("\"execution_id\": \"a/b\""), "execution_id", NULL),
        BAD("execution_id space", REQ("\"execution_id\": \"a b\""), "execution_id", NULL),
        BAD("execution_id backslash", REQ("\"execution_id\": \"a\\\\x2d\""), "execution_id", NULL),
        BAD("execution_id non-ASCII", REQ("\"execution_id\": \"caf\\u00e9\""), "execution_id", NULL),
        BAD("execution_id NUL", REQ("\"execution_id\": \"a\\u0000b\""), "execution_id", NULL),
        BAD("execution_id too long (65)",
            REQ("\"execution_id\": \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\""), "execution_id",
            "1-64 characters"),
        BAD("session_id leading '-'", REQ("\"session_id\": \"-s\""), "session_id", NULL),
        BAD("session_id colon", REQ("\"session_id\": \"s:1\""), "session_id", NULL),
        BAD("session_id too long (65)",
            REQ("\"session_id\": \"sssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssss\""), "session_id",
            NULL),

        /* env */
        BAD("env PATH", ENV("\"PATH\": \"/tmp\""), "env.PATH", "set by sandboxd"),
        BAD("env HOME", ENV("\"HOME\": \"/tmp\""), "env.HOME", "set by sandboxd"),
        BAD("env TZ", ENV("\"TZ\": \"UTC\""), "env.TZ", "set by sandboxd"),
        BAD("env LANG", ENV("\"LANG\": \"C\""), "env.LANG", "set by sandboxd"),
        BAD("env LC_ALL", ENV("\"LC_ALL\": \"C\""), "env.LC_ALL", "set by sandboxd"),
        BAD("env LC_CTYPE", ENV("\"LC_CTYPE\": \"C\""), "env.LC_CTYPE", "set by sandboxd"),
        BAD("env TMPDIR", ENV("\"TMPDIR\": \"/x\""), "env.TMPDIR", "set by sandboxd"),
        BAD("env PYTHONHASHSEED", ENV("\"PYTHONHASHSEED\": \"1\""), "env.PYTHONHASHSEED", "set by sandboxd"),
        BAD("env SANDBOX_SEED", ENV("\"SANDBOX_SEED\": \"1\""), "env.SANDBOX_SEED", "set by sandboxd"),
        BAD("env SANDBOXD_X", ENV("\"SANDBOXD_X\": \"1\""), "env.SANDBOXD_X", "set by sandboxd"),
        BAD("env LD_PRELOAD", ENV("\"LD_PRELOAD\": \"/x.so\""), "env.LD_PRELOAD", "set by sandboxd"),
        BAD("env LD_LIBRARY_PATH", ENV("\"LD_LIBRARY_PATH\": \"/x\""), "env.LD_LIBRARY_PATH", "set by sandboxd"),
        BAD("env SYSTEMD_X", ENV("\"SYSTEMD_LOG_LEVEL\": \"debug\""), "env.SYSTEMD_LOG_LEVEL", "set by sandboxd"),
        BAD("env NODE_OPTIONS", ENV("\"NODE_OPTIONS\": \"--x\""), "env.NODE_OPTIONS", "set by sandboxd"),
        BAD("env PYTHONPATH", ENV("\"PYTHONPATH\": \"/x\""), "env.PYTHONPATH", "set by sandboxd"),
        BAD("env BASH_ENV", ENV("\"BASH_ENV\": \"/x\""), "env.BASH_ENV", "set by sandboxd"),
        BAD("env reserved after valid ones", ENV("\"A\": \"1\", \"PATH\": \"/x\""), "env.PATH", "set by sandboxd"),
        BAD("env name starts with a digit", ENV("\"1BAD\": \"x\""), "env.1BAD", "invalid variable name"),
        BAD("env name empty", ENV("\"\": \"x\""), "env.", "invalid variable name"),
        BAD("env name with '-'", ENV("\"A-B\": \"x\""), "env.A-B", "invalid variable name"),
        BAD("env name with '='", ENV("\"A=B\": \"x\""), "env.A=B", "invalid variable name"),
        BAD("env name with a space", ENV("\"A B\": \"x\""), "env.A B", "invalid variable name"),
        BAD("env name with a dot", ENV("\"a.b\": \"x\""), "env.a.b", "invalid variable name"),
        BAD("env name non-ASCII", ENV("\"\\u00c4\": \"x\""), "env.\xc3\x84", "invalid variable name"),
        BAD("env value number", ENV("\"A\": 1"), "env.A", "expected a string"),
        BAD("env value null", ENV("\"A\": null"), "env.A", "expected a string"),
        BAD("env value bool", ENV("\"A\": true"), "env.A", "expected a string"),
        BAD("env value object", ENV("\"A\": {}"), "env.A", "expected a string"),
        BAD("env value array", ENV("\"A\": [\"x\"]"), "env.A", "expected a string"),
        BAD("env value with NUL", ENV("\"A\": \"x\\u0000y\""), "env.A", "NUL"),

        /* callback_url (the URL rules themselves are test-backoff's rows) */
        BAD("callback_url number", REQ("\"callback_url\": 1"), "callback_url", "expected a string"),
        BAD("callback_url null", REQ("\"callback_url\": null"), "callback_url", "expected a string"),
        BAD("callback_url object", REQ("\"callback_url\": {}"), "callback_url", "expected a string"),
        BAD("callback_url ftp", REQ("\"callback_url\": \"ftp://h/\""), "callback_url", "callback_url: only http"),
        BAD("callback_url no host", REQ("\"callback_url\": \"http:///x\""), "callback_url", "host is required"),
        BAD("callback_url empty", REQ("\"callback_url\": \"\""), "callback_url", "only http"),
        BAD("callback_url space", REQ("\"callback_url\": \"http://h/a b\""), "callback_url", "white space"),
        BAD("callback_url CRLF", REQ("\"callback_url\": \"http://h/\\r\\nX: y\""), "callback_url", "white space"),
        BAD("callback_url NUL", REQ("\"callback_url\": \"http://h/\\u0000x\""), "callback_url", "NUL"),
        BAD("callback_url credentials", REQ("\"callback_url\": \"https://u:p@h/\""), "callback_url", "credentials"),

        /* files: the array and its entries */
        BAD("files null", FILES("null"), "files", "expected an array"),
        BAD("files object", REQ("\"files\": {\"path\": \"a\"}"), "files", "expected an array"),
        BAD("files more than MaxInputFiles", FILES("[" F_URL("a") "," F_URL("b") "," F_URL("c") "," F_URL("d") ","
                                                   F_URL("e") "]"), "files", "5 files, at most 4"),
        BAD("files entry string", FILES("[\"a.csv\"]"), "files[0]", "expected an object"),
        BAD("files entry unknown field", FILES("[{\"path\": \"a\", \"url\": \"http://h/\", \"mode\": 1}]"), "files[0]",
            "unknown field 'mode'"),
        BAD("files neither url nor content", FILES("[{\"path\": \"a\"}]"), "files[0]", "exactly one of"),
        BAD("files both url and content", FILES("[{\"path\": \"a\", \"url\": \"http://h/\", \"content_base64\": \"\"}]"),
            "files[0]", "exactly one of"),
        BAD("files second entry named", FILES("[" F_URL("a") ", {\"path\": \"b\"}]"), "files[1]", "exactly one of"),

        /* files[].path */
        BAD("path missing", FILES("[{\"url\": \"http://h/\"}]"), "files[0].path", "required"),
        BAD("path number", FILES("[{\"path\": 1, \"url\": \"http://h/\"}]"), "files[0].path", "expected a string"),
        BAD("path empty", FILES("[" F_URL("") "]"), "files[0].path", "is empty"),
        BAD("path absolute", FILES("[" F_URL("/abs") "]"), "files[0].path", "must be relative"),
        BAD("path dot-dot", FILES("[" F_URL("../x") "]"), "files[0].path", "'.' or '..'"),
        BAD("path dot-dot inside", FILES("[" F_URL("a/../../b") "]"), "files[0].path", "'.' or '..'"),
        BAD("path dot-dot last", FILES("[" F_URL("a/..") "]"), "files[0].path", "'.' or '..'"),
        BAD("path dot", FILES("[" F_URL("./a") "]"), "files[0].path", "'.' or '..'"),
        BAD("path only dot", FILES("[" F_URL(".") "]"), "files[0].path", "'.' or '..'"),
        BAD("path empty component", FILES("[" F_URL("a//b") "]"), "files[0].path", "empty component"),
        BAD("path trailing slash", FILES("[" F_URL("a/") "]"), "files[0].path", "empty component"),
        BAD("path newline", FILES("[" F_URL("a\\nb") "]"), "files[0].path", "control character"),
        BAD("path tab", FILES("[" F_URL("a\\tb") "]"), "files[0].path", "control character"),
        BAD("path DEL", FILES("[" F_URL("a\\u007fb") "]"), "files[0].path", "control character"),
        BAD("path escape", FILES("[" F_URL("a\\u001b[0m") "]"), "files[0].path", "control character"),
        BAD("path NUL", FILES("[" F_URL("a\\u0000b") "]"), "files[0].path", "NUL"),
        BAD("path backslash", FILES("[" F_URL("a\\\\b") "]"), "files[0].path", "backslash"),
        BAD("path duplicate", FILES("[" F_URL("a/b") "," F_URL("a/b") "]"), "files[1].path", "also files[0].path"),
        BAD("path below a file", FILES("[" F_URL("a") "," F_URL("a/b") "]"), "files[1].path", "cannot both be files"),
        BAD("path above a file", FILES("[" F_URL("a/b/c") "," F_URL("a/b") "]"), "files[1].path", "cannot both be files"),
        BAD("path too deep", FILES("[" F_URL("a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p/q") "]"), "files[0].path", "too deep"),

        /* files[].url */
        BAD("url number", FILES("[{\"path\": \"a\", \"url\": 5}]"), "files[0].url", "expected a string"),
        BAD("url file scheme", FILES("[{\"path\": \"a\", \"url\": \"file:///etc/passwd\"}]"), "files[0].url",
            "http:// or https://"),
        BAD("url ftp scheme", FILES("[{\"path\": \"a\", \"url\": \"ftp://h/x\"}]"), "files[0].url", "http:// or https://"),
        BAD("url gopher scheme", FILES("[{\"path\": \"a\", \"url\": \"gopher://h/x\"}]"), "files[0].url", "http://"),
        BAD("url without scheme", FILES("[{\"path\": \"a\", \"url\": \"h/x\"}]"), "files[0].url", "http://"),
        BAD("url scheme-relative", FILES("[{\"path\": \"a\", \"url\": \"//h/x\"}]"), "files[0].url", "http://"),
        BAD("url http without slashes", FILES("[{\"path\": \"a\", \"url\": \"http:h/x\"}]"), "files[0].url", "http://"),
        BAD("url no host", FILES("[{\"path\": \"a\", \"url\": \"http:///x\"}]"), "files[0].url", "no host"),
        BAD("url userinfo", FILES("[{\"path\": \"a\", \"url\": \"https://u:p@h/x\"}]"), "files[0].url", "user:password@"),
        BAD("url space", FILES("[{\"path\": \"a\", \"url\": \"http://h/a b\"}]"), "files[0].url", "space"),
        BAD("url newline", FILES("[{\"path\": \"a\", \"url\": \"http://h/a\\r\\nX: y\"}]"), "files[0].url",
            "control character"),
        BAD("url NUL", FILES("[{\"path\": \"a\", \"url\": \"http://h/\\u0000\"}]"), "files[0].url", "NUL"),
        BAD("url empty", FILES("[{\"path\": \"a\", \"url\": \"\"}]"), "files[0].url", "http://"),

        /* files[].content_base64 (inline cap in this test: 16 bytes decoded) */
        BAD("base64 number", FILES("[{\"path\": \"a\", \"content_base64\": 1}]"), "files[0].content_base64",
            "expected a string"),
        BAD("base64 unpadded", FILES("[{\"path\": \"a\", \"content_base64\": \"YQ\"}]"), "files[0].content_base64",
            "not valid base64"),
        BAD("base64 whitespace", FILES("[{\"path\": \"a\", \"content_base64\": \"YW Jj\"}]"), "files[0].content_base64",
            "not valid base64"),
        BAD("base64 newline", FILES("[{\"path\": \"a\", \"content_base64\": \"YWJj\\nYWJj\"}]"), "files[0].content_base64",
            "not valid base64"),
        BAD("base64 url alphabet", FILES("[{\"path\": \"a\", \"content_base64\": \"-_-_\"}]"), "files[0].content_base64",
            "not valid base64"),
        BAD("base64 padding inside", FILES("[{\"path\": \"a\", \"content_base64\": \"YQ==YWJj\"}]"),
            "files[0].content_base64", "not valid base64"),
        BAD("base64 non-canonical", FILES("[{\"path\": \"a\", \"content_base64\": \"YR==\"}]"), "files[0].content_base64",
            "not valid base64"),
        BAD("base64 three pads", FILES("[{\"path\": \"a\", \"content_base64\": \"Y===\"}]"), "files[0].content_base64",
            "not valid base64"),
        { "base64 over the inline cap", FILES("[{\"path\": \"a\", \"content_base64\": \"" B64_17 "\"}]"), 0, 413,
          "too_large", "files[0].content_base64", "at most 16 bytes in all" },
        { "base64 over the inline cap in all", FILES("[{\"path\": \"a\", \"content_base64\": \"" B64_9 "\"}, "
                                                     "{\"path\": \"b\", \"content_base64\": \"" B64_9 "\"}]"), 0, 413,
          "too_large", "files[1].content_base64", "at most 16 bytes in all" },
        /* network: the shape here; the entries' syntax and AllowDomains= are net-policy.c's */
        BAD("network not an object", REQ("\"network\": [\"pypi.org\"]"), "network", "network: expected an object"),
        BAD("network unknown field", REQ("\"network\": {\"allow\": [\"a.example\"], \"deny\": []}"), "network",
            "network: unknown field 'deny'"),
        BAD("network without allow", REQ("\"network\": {}"), "network.allow", "network.allow: required"),
        BAD("network.allow not an array", REQ("\"network\": {\"allow\": \"pypi.org\"}"), "network.allow",
            "network.allow: expected an array of strings"),
        BAD("network.allow empty", REQ("\"network\": {\"allow\": []}"), "network.allow", "network.allow: empty"),
        BAD("network.allow entry not a string", REQ("\"network\": {\"allow\": [\"a.example\", 443]}"),
            "network.allow[1]", "network.allow[1]: expected a string"),
        BAD("network.allow entry with NUL", REQ("\"network\": {\"allow\": [\"a.example\\u0000.evil\"]}"),
            "network.allow[0]", "network.allow[0]: contains a NUL byte"),
        BAD("network.allow null", REQ("\"network\": {\"allow\": null}"), "network.allow",
            "network.allow: expected an array of strings"),
        BAD("network null", REQ("\"network\": null"), "network", "network: expected an object"),
        BAD("files checked after the limits", "{\"files\": [], \"language\": \"cobol\", \"code\": \"\"}", "language",
            "unknown language"),
};

static void test_network_accepted(_unused_ void **state) {
        _cleanup_(exec_request_freep) ExecRequest *plain = parse_ok(REQ("\"seed\": 1"));
        _cleanup_(exec_request_freep) ExecRequest *a = NULL, *b = NULL;
        _cleanup_free_ char *many = NULL, *body = NULL;
        RequestError err;
        ExecRequest *req = NULL;

        assert_false(plain->network);
        assert_null(plain->network_allow);
        a = parse_ok(REQ("\"seed\": 1, \"network\": {\"allow\": [\"pypi.org\", \"*.pythonhosted.org\", \"pypi.org\"]}"));
        assert_true(a->network);
        /* A repeated entry is kept once; the syntax is not judged here (net-policy.c does). */
        assert_int_equal(a->n_network_allow, 2);
        assert_string_equal(a->network_allow[0], "pypi.org");
        assert_string_equal(a->network_allow[1], "*.pythonhosted.org");
        /* The allow list is part of what an idempotent retry must repeat. */
        assert_memory_not_equal(a->fingerprint, plain->fingerprint, sizeof(a->fingerprint));
        b = parse_ok(REQ("\"seed\": 1, \"network\": {\"allow\": [\"pypi.org\"]}"));
        assert_memory_not_equal(a->fingerprint, b->fingerprint, sizeof(a->fingerprint));

        /* 65 entries: too many. */
        many = strdup("\"e0.example\"");
        assert_non_null(many);
        for (int i = 1; i < 65; i++) {
                char *m = strf("%s, \"e%d.example\"", many, i);
                free(many);
                many = m;
        }
        body = strf("{\"language\": \"python\", \"code\": \"1\", \"network\": {\"allow\": [%s]}}", many);
        assert_int_equal(exec_request_parse(body, strlen(body), cfg, &req, &err), -EINVAL);
        assert_null(req);
        assert_string_equal(err.field, "network.allow");
        assert_string_equal(err.message, "network.allow: 65 entries, at most 64");
}

static void test_refuse_row(void **state) {
        const RefuseRow *row = *state;

        check_refused_len(row->body, row->len ?: strlen(row->body), row->status, row->code, row->field, row->message);
}

/* ---- refused requests built at run time ---- */

static void test_too_large(_unused_ void **state) {
        _cleanup_free_ char *pad = NULL, *body = NULL;
        size_t overhead;

        /* Exactly MaxRequestBytes is accepted (as JSON white space after the object)... */
        body = strf("{\"language\": \"python\", \"code\": \"1\"}");
        overhead = strlen(body);
        pad = repeat(' ', TEST_MAX_REQUEST_BYTES - overhead);
        free(body);
        body = strf("{\"language\": \"python\", \"code\": \"1\"}%s", pad);
        assert_int_equal(strlen(body), TEST_MAX_REQUEST_BYTES);
        exec_request_free(parse_ok(body));

        /* ... one byte more is 413, whatever the content. */
        free(body);
        body = strf("{\"language\": \"python\", \"code\": \"1\"}%s ", pad);
        check_refused(body, 413, "too_large", "", "MaxRequestBytes");
        free(pad);
        pad = repeat('x', TEST_MAX_REQUEST_BYTES + 1);
        check_refused(pad, 413, "too_large", "", NULL);
}

static void test_code_too_large(_unused_ void **state) {
        _cleanup_free_ char *code = repeat('#', TEST_MAX_CODE_BYTES), *body = NULL;
        ExecRequest *req;

        body = strf("{\"language\": \"python\", \"code\": \"%s\"}", code);
        req = parse_ok(body);
        assert_int_equal(req->code_len, TEST_MAX_CODE_BYTES);
        exec_request_free(req);

        free(body);
        body = strf("{\"language\": \"python\", \"code\": \"%s#\"}", code);
        check_refused(body, 413, "too_large", "code", "MaxCodeBytes");

        /* Counted after JSON unescaping: 1024 escaped characters are 1024 bytes... */
        free(body);
        free(code);
        code = malloc(TEST_MAX_CODE_BYTES * 6 + 1);
        assert_non_null(code);
        code[0] = 0;
        for (size_t i = 0; i < TEST_MAX_CODE_BYTES; i++)
                strcat(code, "\\u0041");
        body = strf("{\"language\": \"python\", \"code\": \"%s\"}", code);
        req = parse_ok(body);
        assert_int_equal(req->code_len, TEST_MAX_CODE_BYTES);
        exec_request_free(req);

        /* ... and 513 two-byte characters are 1026. */
        free(body);
        free(code);
        code = malloc(513 * 6 + 1);
        assert_non_null(code);
        code[0] = 0;
        for (size_t i = 0; i < 513; i++)
                strcat(code, "\\u00e9");
        body = strf("{\"language\": \"python\", \"code\": \"%s\"}", code);
        check_refused(body, 413, "too_large", "code", NULL);
}

static char *nested(size_t depth) {
        _cleanup_free_ char *open = repeat('[', depth), *close = repeat(']', depth);

        /* The request object is one level: "x" holds depth - 1 arrays. */
        open[depth - 1] = 0;
        close[depth - 1] = 0;
        return strf("{\"language\": \"python\", \"code\": \"1\", \"x\": %s%s}", open, close);
}

static void test_nesting(_unused_ void **state) {
        _cleanup_free_ char *b16 = nested(REQUEST_JSON_DEPTH_MAX), *b17 = nested(REQUEST_JSON_DEPTH_MAX + 1);

        /* 16 levels parse (and "x" is then refused as a field); 17 do not. */
        check_refused(b16, 400, "invalid_request", "x", "unknown field 'x'");
        check_refused(b17, 400, "invalid_json", "", "invalid JSON");
}

static void test_id_too_long_runtime(_unused_ void **state) {
        _cleanup_free_ char *id64 = repeat('a', REQUEST_ID_MAX), *body = NULL;
        ExecRequest *req;

        body = strf("{\"language\": \"python\", \"code\": \"1\", \"execution_id\": \"%s\", \"session_id\": \"%s\"}",
                    id64, id64);
        req = parse_ok(body);
        assert_string_equal(req->execution_id, id64);
        assert_string_equal(req->session_id, id64);
        exec_request_free(req);

        free(body);
        body = strf("{\"language\": \"python\", \"code\": \"1\", \"execution_id\": \"%sa\"}", id64);
        check_refused(body, 400, "invalid_request", "execution_id", NULL);
        free(body);
        body = strf("{\"language\": \"python\", \"code\": \"1\", \"session_id\": \"%sa\"}", id64);
        check_refused(body, 400, "invalid_request", "session_id", NULL);
}

/* {"language": "python", "code": "1", "env": {NAME0: VALUE, ...}} with n variables named
 * prefix + number and values of vlen bytes. */
static char *env_body(size_t n, const char *prefix, size_t vlen) {
        _cleanup_free_ char *v = repeat('v', vlen);
        char *body = strf("{\"language\": \"python\", \"code\": \"1\", \"env\": {");

        for (size_t i = 0; i < n; i++) {
                char *nb = strf("%s%s\"%s%zu\": \"%s\"", body, i > 0 ? ", " : "", prefix, i, v);
                free(body);
                body = nb;
        }
        char *nb = strf("%s}}", body);
        free(body);
        return nb;
}

static void test_env_limits(_unused_ void **state) {
        _cleanup_free_ char *name128 = repeat('N', REQUEST_ENV_NAME_MAX), *field = NULL, *body = NULL;
        ExecRequest *req;

        /* 64 variables: accepted; 65: refused. */
        body = env_body(REQUEST_ENV_MAX, "V", 1);
        req = parse_ok(body);
        assert_int_equal(req->n_env, REQUEST_ENV_MAX);
        exec_request_free(req);
        free(body);
        body = env_body(REQUEST_ENV_MAX + 1, "V", 1);
        check_refused(body, 400, "invalid_request", "env", "at most 64");

        /* A value of 4096 bytes: accepted; 4097: refused. */
        free(body);
        body = env_body(1, "V", REQUEST_ENV_VALUE_MAX);
        req = parse_ok(body);
        assert_int_equal(strlen(req->env[0]), strlen("V0=") + REQUEST_ENV_VALUE_MAX);
        exec_request_free(req);
        free(body);
        body = env_body(1, "V", REQUEST_ENV_VALUE_MAX + 1);
        check_refused(body, 400, "invalid_request", "env.V0", "longer than 4096");

        /* "Vn=" + 4093 bytes, 8 times: 32768 bytes in all, accepted; one byte more each: refused. */
        free(body);
        body = env_body(8, "V", 4093);
        req = parse_ok(body);
        assert_int_equal(req->n_env, 8);
        exec_request_free(req);
        free(body);
        body = env_body(8, "V", 4094);
        check_refused(body, 400, "invalid_request", "env", "32768 bytes");

        /* A name of 128 characters: accepted; 129: refused (the field is cut to fit). */
        free(body);
        body = strf("{\"language\": \"python\", \"code\": \"1\", \"env\": {\"%s\": \"x\"}}", name128);
        req = parse_ok(body);
        assert_int_equal(req->n_env, 1);
        exec_request_free(req);
        free(body);
        body = strf("{\"language\": \"python\", \"code\": \"1\", \"env\": {\"%sN\": \"x\"}}", name128);
        field = strf("env.%s", name128);
        field[sizeof_field(RequestError, field) - 1] = 0;
        check_refused(body, 400, "invalid_request", field, "invalid variable name");
}

/* Top-level scalars: refused with 400. (json-c cannot tell that a bare number or literal has ended
 * without more input, so these come back as invalid_json rather than "must be a JSON object".) */
static void test_scalars(_unused_ void **state) {
        static const char *const bodies[] = { "1", "-0.5", "null", "true", "\"x\"" };

        for (size_t i = 0; i < ELEMENTSOF(bodies); i++) {
                ExecRequest *req = NULL;
                RequestError err;

                assert_int_equal(exec_request_parse(bodies[i], strlen(bodies[i]), cfg, &req, &err), -EINVAL);
                assert_null(req);
                assert_int_equal(api_error_http_status(err.error), 400);
                assert_true(streq(api_error_code(err.error), "invalid_json") ||
                            streq(api_error_code(err.error), "invalid_request"));
                assert_string_equal(err.field, "");
        }
}

/* ---- accepted requests ---- */

static void check_limits(const Limits *l, uint64_t timeout_ms, uint64_t memory_mb, double cpu_cores, uint64_t disk_mb,
                         uint64_t tasks) {
        assert_int_equal(l->timeout_ms, timeout_ms);
        assert_int_equal(l->memory_mb, memory_mb);
        assert_true(l->cpu_cores == cpu_cores);
        assert_int_equal(l->disk_mb, disk_mb);
        assert_int_equal(l->tasks, tasks);
}

static void test_minimal(_unused_ void **state) {
        _cleanup_(exec_request_freep) ExecRequest *req = parse_ok("{\"language\": \"python\", \"code\": \"print(1)\"}");

        assert_ptr_equal(req->language, language_find("python"));
        assert_string_equal(req->code, "print(1)");
        assert_int_equal(req->code_len, 8);
        assert_null(req->execution_id);
        assert_null(req->session_id);
        assert_int_equal(req->n_env, 0);
        assert_int_equal(req->seed, 0);
        check_limits(&req->limits, cfg->defaults.timeout_ms, cfg->defaults.memory_mb, cfg->defaults.cpu_cores,
                     cfg->defaults.disk_mb, cfg->defaults.tasks);
}

/* Whether disk_mb was given: a session's later run without it takes the session's size. */
static void test_disk_mb_given(_unused_ void **state) {
        static const struct {
                const char *body;
                bool given;
        } rows[] = {
                { "{\"language\": \"python\", \"code\": \"1\"}", false },
                { "{\"language\": \"python\", \"code\": \"1\", \"limits\": {}}", false },
                { "{\"language\": \"python\", \"code\": \"1\", \"limits\": {\"memory_mb\": 64}}", false },
                { "{\"language\": \"python\", \"code\": \"1\", \"limits\": {\"disk_mb\": 16}}", true },
        };

        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                _cleanup_(exec_request_freep) ExecRequest *req = parse_ok(rows[i].body);

                assert_int_equal(req->disk_mb_given, rows[i].given);
        }
}

static void test_full(_unused_ void **state) {
        _cleanup_(exec_request_freep) ExecRequest *req = parse_ok(
                "\n  {\"execution_id\": \"exec_1\", \"session_id\": \"sess.1-a\", \"language\": \"python3\",\n"
                "   \"code\": \"print('h\\u00e9')\\n\", \"limits\": {\"timeout_ms\": 5000, \"memory_mb\": 256,\n"
                "   \"cpu_cores\": 0.5, \"disk_mb\": 64, \"tasks\": 32}, \"env\": {\"KEY\": \"VALUE\"}, \"seed\": 42}\n");

        assert_string_equal(req->execution_id, "exec_1");
        assert_string_equal(req->session_id, "sess.1-a");
        assert_string_equal(req->language->name, "python");
        assert_string_equal(req->code, "print('h\xc3\xa9')\n");
        assert_int_equal(req->code_len, strlen("print('h\xc3\xa9')\n"));
        check_limits(&req->limits, 5000, 256, 0.5, 64, 32);
        assert_int_equal(req->n_env, 1);
        assert_string_equal(req->env[0], "KEY=VALUE");
        assert_int_equal(req->seed, 42);
}

typedef struct LimitsRow {
        const char *name;
        const char *body;
        Limits expect;
} LimitsRow;

#define D_TIMEOUT 30000
#define D_MEMORY 512
#define D_CORES 1.0
#define D_DISK 1024
#define D_TASKS 128

static const LimitsRow limits_rows[] = {
        { "limits empty object", LIMITS(""), { D_TIMEOUT, D_MEMORY, D_CORES, D_DISK, D_TASKS } },
        { "limits all at the ceilings",
          LIMITS("\"timeout_ms\": 600000, \"memory_mb\": 8192, \"cpu_cores\": 2.0, \"disk_mb\": 8192, \"tasks\": 1024"),
          { 600000, 8192, 2.0, 8192, 1024 } },
        { "limits all at the minimums",
          LIMITS("\"timeout_ms\": 100, \"memory_mb\": 16, \"cpu_cores\": 0.01, \"disk_mb\": 1, \"tasks\": 4"),
          { 100, 16, 0.01, 1, 4 } },
        { "limits only timeout_ms", LIMITS("\"timeout_ms\": 1234"), { 1234, D_MEMORY, D_CORES, D_DISK, D_TASKS } },
        { "limits only memory_mb", LIMITS("\"memory_mb\": 256"), { D_TIMEOUT, 256, D_CORES, D_DISK, D_TASKS } },
        { "limits only cpu_cores 0.5", LIMITS("\"cpu_cores\": 0.5"), { D_TIMEOUT, D_MEMORY, 0.5, D_DISK, D_TASKS } },
        { "limits cpu_cores as an integer", LIMITS("\"cpu_cores\": 2"), { D_TIMEOUT, D_MEMORY, 2.0, D_DISK, D_TASKS } },
        { "limits only disk_mb", LIMITS("\"disk_mb\": 2048"), { D_TIMEOUT, D_MEMORY, D_CORES, 2048, D_TASKS } },
        { "limits only tasks", LIMITS("\"tasks\": 16"), { D_TIMEOUT, D_MEMORY, D_CORES, D_DISK, 16 } },
        { "limits below the defaults", LIMITS("\"timeout_ms\": 1000, \"memory_mb\": 64, \"tasks\": 8"),
          { 1000, 64, D_CORES, D_DISK, 8 } },
};

static void test_limits_row(void **state) {
        const LimitsRow *row = *state;
        _cleanup_(exec_request_freep) ExecRequest *req = parse_ok(row->body);

        check_limits(&req->limits, row->expect.timeout_ms, row->expect.memory_mb, row->expect.cpu_cores,
                     row->expect.disk_mb, row->expect.tasks);
}

static void test_languages(_unused_ void **state) {
        static const struct {
                const char *given, *name, *source;
        } rows[] = {
                { "python",     "python", "main.py" },
                { "python3",    "python", "main.py" },
                { "py",         "python", "main.py" },
                { "node",       "node",   "main.js" },
                { "javascript", "node",   "main.js" },
                { "js",         "node",   "main.js" },
                { "nodejs",     "node",   "main.js" },
                { "bash",       "bash",   "main.sh" },
                { "sh",         "bash",   "main.sh" },
        };

        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                _cleanup_free_ char *body = strf("{\"language\": \"%s\", \"code\": \"1\"}", rows[i].given);
                _cleanup_(exec_request_freep) ExecRequest *req = parse_ok(body);

                assert_string_equal(req->language->name, rows[i].name);
                assert_string_equal(req->language->source_name, rows[i].source);
        }
}

static void test_ids(_unused_ void **state) {
        static const char *const valid[] = { "a", "0", "_", "exec_1", "A.b-c_9", "a-", "a.", "a..b", "EXEC" };

        for (size_t i = 0; i < ELEMENTSOF(valid); i++) {
                _cleanup_free_ char *body = strf(
                        "{\"language\": \"python\", \"code\": \"1\", \"execution_id\": \"%s\", \"session_id\": \"%s\"}",
                        valid[i], valid[i]);
                _cleanup_(exec_request_freep) ExecRequest *req = parse_ok(body);

                assert_string_equal(req->execution_id, valid[i]);
                assert_string_equal(req->session_id, valid[i]);
        }
}

static void test_env_sorted(_unused_ void **state) {
        /* By name: "A" < "A1" < "B_" < "ZED" < "_U" < "a". strcmp() over "NAME=VALUE" would put "A1=" first. */
        static const char *const expect[] = { "A=y", "A1=x", "B_=", "ZED=1", "_U=a=b", "a=\xc3\xa9 \n" };
        _cleanup_(exec_request_freep) ExecRequest *req = parse_ok(
                ENV("\"ZED\": \"1\", \"a\": \"\\u00e9 \\n\", \"A1\": \"x\", \"_U\": \"a=b\", \"A\": \"y\", \"B_\": \"\""));

        assert_int_equal(req->n_env, ELEMENTSOF(expect));
        for (size_t i = 0; i < ELEMENTSOF(expect); i++)
                assert_string_equal(req->env[i], expect[i]);
}

static void test_args(_unused_ void **state) {
        static const char *const expect[] = { "a b", "", "$HOME", "\xc3\xa9", "--x" };
        _cleanup_(exec_request_freep) ExecRequest *req =
                parse_ok(REQ("\"args\": [\"a b\", \"\", \"$HOME\", \"\\u00e9\", \"--x\"]"));
        _cleanup_(exec_request_freep) ExecRequest *none = parse_ok(REQ("\"seed\": 0"));
        _cleanup_(exec_request_freep) ExecRequest *empty = parse_ok(REQ("\"args\": []"));
        _cleanup_(exec_request_freep) ExecRequest *joined = parse_ok(REQ("\"args\": [\"a b\"]"));
        _cleanup_(exec_request_freep) ExecRequest *split = parse_ok(REQ("\"args\": [\"a\", \"b\"]"));
        _cleanup_free_ char *body = NULL;
        _cleanup_strv_free_ char **back = NULL;
        size_t n_back = 0;
        RequestError err;
        ExecRequest *bad = NULL;

        assert_int_equal(req->n_args, ELEMENTSOF(expect));
        for (size_t i = 0; i < ELEMENTSOF(expect); i++)
                assert_string_equal(req->args[i], expect[i]);
        assert_null(req->args[req->n_args]);
        assert_int_equal(none->n_args, 0);
        assert_int_equal(empty->n_args, 0);
        /* Without args (or with none) the fingerprint is what it was; ["a b"] is not ["a", "b"]. */
        assert_memory_equal(none->fingerprint, empty->fingerprint, 32);
        assert_memory_not_equal(none->fingerprint, joined->fingerprint, 32);
        assert_memory_not_equal(joined->fingerprint, split->fingerprint, 32);

        /* The limits: 256 of them, 4096 bytes each, 64 KiB in all (with a NUL each). */
        {
                _cleanup_free_ char *list = NULL, *long_arg = malloc(REQUEST_ARG_MAX + 2);

                assert_non_null(long_arg);
                memset(long_arg, 'x', REQUEST_ARG_MAX + 1);
                long_arg[REQUEST_ARG_MAX + 1] = 0;
                body = strf(REQ("\"args\": [\"%s\"]"), long_arg);
                assert_int_equal(exec_request_parse(body, strlen(body), cfg, &bad, &err), -EINVAL);
                assert_string_equal(err.field, "args[0]");
                body = mfree(body);
                long_arg[REQUEST_ARG_MAX] = 0;
                body = strf(REQ("\"args\": [\"%s\"]"), long_arg);
                {
                        _cleanup_(exec_request_freep) ExecRequest *ok = parse_ok(body);
                        assert_int_equal(strlen(ok->args[0]), REQUEST_ARG_MAX);
                }
                body = mfree(body);
                /* 16 of 4096 bytes are 16 * 4097 > 64 KiB. */
                list = strf("\"%s\", \"%s\", \"%s\", \"%s\"", long_arg, long_arg, long_arg, long_arg);
                body = strf(REQ("\"args\": [%s, %s, %s, %s]"), list, list, list, list);
                assert_int_equal(exec_request_parse(body, strlen(body), cfg, &bad, &err), -EINVAL);
                assert_string_equal(err.field, "args");
                assert_non_null(strstr(err.message, "in all"));
                body = mfree(body);
        }
        {
                char many[REQUEST_ARGS_MAX * 4 + 64] = "";

                for (int i = 0; i <= REQUEST_ARGS_MAX; i++)
                        strcat(many, i ? ",\"\"" : "\"\"");
                body = strf(REQ("\"args\": [%s]"), many);
                assert_int_equal(exec_request_parse(body, strlen(body), cfg, &bad, &err), -EINVAL);
                assert_string_equal(err.field, "args");
                assert_non_null(strstr(err.message, "257 arguments"));
        }
        assert_null(bad);

        /* A stored request's args back (job.c's request_json()); invalid ones are none. */
        assert_int_equal(request_args_from_json("{\"env\": [], \"args\": [\"a\", \"\"]}", &back, &n_back, NULL), 0);
        assert_int_equal(n_back, 2);
        assert_string_equal(back[0], "a");
        assert_string_equal(back[1], "");
        back = strv_free(back);
        assert_int_equal(request_args_from_json("{\"args\": [1]}", &back, &n_back, NULL), 0);
        assert_null(back);
        assert_int_equal(n_back, 0);
        assert_int_equal(request_args_from_json("{}", &back, &n_back, NULL), 0);
        assert_null(back);
        assert_int_equal(request_args_from_json(NULL, &back, &n_back, NULL), 0);
        assert_null(back);
}

static void test_stdin(_unused_ void **state) {
        _cleanup_(exec_request_freep) ExecRequest *req = parse_ok(REQ("\"stdin\": \"a\\u0000b\\n\\u00e9\""));
        _cleanup_(exec_request_freep) ExecRequest *none = parse_ok(REQ("\"seed\": 0"));
        _cleanup_(exec_request_freep) ExecRequest *empty = parse_ok(REQ("\"stdin\": \"\""));
        _cleanup_(exec_request_freep) ExecRequest *other = parse_ok(REQ("\"stdin\": \"a\\u0000c\\n\\u00e9\""));
        _cleanup_(exec_request_freep) ExecRequest *back = calloc(1, sizeof(ExecRequest));
        _cleanup_strv_free_ char **args = NULL;
        _cleanup_free_ char *body = NULL, *data = NULL;
        uint64_t saved = cfg->max_stdin_bytes, bytes = 4711;
        size_t n_args;
        RequestError err;
        ExecRequest *bad = NULL;

        /* Any bytes, a NUL included: it is data, never a name or an argv word. */
        assert_int_equal(req->stdin_len, 6);
        assert_memory_equal(req->stdin_data, "a\0b\n\xc3\xa9", 6);
        /* "" is none; without stdin the fingerprint is what it was; another byte is another request. */
        assert_int_equal(none->stdin_len, 0);
        assert_null(none->stdin_data);
        assert_int_equal(empty->stdin_len, 0);
        assert_memory_equal(none->fingerprint, empty->fingerprint, 32);
        assert_memory_not_equal(none->fingerprint, req->fingerprint, 32);
        assert_memory_not_equal(other->fingerprint, req->fingerprint, 32);

        /* MaxStdinBytes=: at the cap accepted, one byte over refused with 413 naming the field and key;
         * 0 accepts none. */
        cfg->max_stdin_bytes = 8;
        data = repeat('x', 8);
        body = strf(REQ("\"stdin\": \"%s\""), data);
        exec_request_free(parse_ok(body));
        body = mfree(body);
        data = mfree(data);
        data = repeat('x', 9);
        body = strf(REQ("\"stdin\": \"%s\""), data);
        check_refused_len(body, strlen(body), 413, "too_large", "stdin", "stdin: 9 bytes exceeds MaxStdinBytes=8");
        cfg->max_stdin_bytes = 0;
        check_refused_len(REQ("\"stdin\": \"x\""), strlen(REQ("\"stdin\": \"x\"")), 413, "too_large", "stdin",
                          "stdin: 1 bytes exceeds MaxStdinBytes=0");
        exec_request_free(parse_ok(REQ("\"stdin\": \"\"")));
        cfg->max_stdin_bytes = saved;
        assert_null(bad);
        (void) err;

        /* A stored request's stdin back (job.c's request_json()), bytes and length. */
        assert_non_null(back);
        assert_int_equal(request_stdin_from_json("{\"env\": [], \"stdin\": \"a\\u0000b\"}", back), 0);
        assert_int_equal(back->stdin_len, 3);
        assert_memory_equal(back->stdin_data, "a\0b", 3);
        assert_int_equal(request_args_from_json("{\"stdin\": \"a\\u0000b\"}", &args, &n_args, &bytes), 0);
        assert_int_equal(bytes, 3);
        assert_int_equal(request_args_from_json("{}", &args, &n_args, &bytes), 0);
        assert_int_equal(bytes, 0);
}

static void test_env_valid_names(_unused_ void **state) {
        /* Close to reserved names but not reserved. */
        static const char *const names[] = { "_", "a", "A1", "path", "Path", "LD", "LDX_PRELOAD", "LC", "LCALL",
                                             "SANDBOX_X", "SANDBOXD", "HOME2", "MY_PATH", "x_LD_PRELOAD" };

        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                _cleanup_free_ char *body = strf("{\"language\": \"python\", \"code\": \"1\", \"env\": {\"%s\": \"v\"}}",
                                                 names[i]);
                _cleanup_free_ char *expect = strf("%s=v", names[i]);
                _cleanup_(exec_request_freep) ExecRequest *req = parse_ok(body);

                assert_int_equal(req->n_env, 1);
                assert_string_equal(req->env[0], expect);
        }
}

static void test_seed(_unused_ void **state) {
        static const struct {
                const char *json;
                uint64_t seed;
        } rows[] = {
                { "0",                   0 },
                { "1",                   1 },
                { "42",                  42 },
                { "9223372036854775806", INT64_MAX - 1 },
        };

        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                _cleanup_free_ char *body = strf("{\"language\": \"python\", \"code\": \"1\", \"seed\": %s}", rows[i].json);
                _cleanup_(exec_request_freep) ExecRequest *req = parse_ok(body);

                assert_int_equal(req->seed, rows[i].seed);
        }
}

static void test_accepted_odds_and_ends(_unused_ void **state) {
        ExecRequest *req;

        /* Empty code. */
        req = parse_ok("{\"language\": \"bash\", \"code\": \"\"}");
        assert_int_equal(req->code_len, 0);
        assert_string_equal(req->code, "");
        exec_request_free(req);

        /* White space around the object, raw UTF-8 (4-byte too), escapes. */
        req = parse_ok(" \t\r\n{\"code\": \"\xf0\x9f\x98\x80\\t\\\"\\\\\\/\", \"language\": \"node\"}\r\n ");
        assert_string_equal(req->code, "\xf0\x9f\x98\x80\t\"\\/");
        assert_string_equal(req->language->name, "node");
        exec_request_free(req);

        /* An empty env object. */
        req = parse_ok(ENV(""));
        assert_int_equal(req->n_env, 0);
        exec_request_free(req);

        /* The body length is what counts, not a NUL terminator. */
        req = parse_ok_len("{\"language\": \"python\", \"code\": \"1\"}GARBAGE",
                           strlen("{\"language\": \"python\", \"code\": \"1\"}"));
        assert_string_equal(req->code, "1");
        exec_request_free(req);
}

/* ---- fingerprint ---- */

static void fingerprint_of(const char *body, uint8_t ret[32]) {
        _cleanup_(exec_request_freep) ExecRequest *req = parse_ok(body);

        memcpy(ret, req->fingerprint, 32);
}

#define BASE_FIELDS                                                                                       \
        "\"session_id\": \"s1\", \"language\": \"python\", \"code\": \"print(1)\", \"limits\": "            \
        "{\"timeout_ms\": 5000, \"memory_mb\": 256, \"cpu_cores\": 0.5, \"disk_mb\": 64, \"tasks\": 32}, " \
        "\"env\": {\"A\": \"1\", \"B\": \"2\"}, \"seed\": 7"

static void test_callback_url(_unused_ void **state) {
        _cleanup_free_ char *url = NULL, *body = NULL;
        ExecRequest *req, *plain;

        req = parse_ok(REQ("\"callback_url\": \"https://hooks.example.com:8443/done?k=1\""));
        assert_string_equal(req->callback_url, "https://hooks.example.com:8443/done?k=1");
        plain = parse_ok(REQ("\"seed\": 0"));
        assert_null(plain->callback_url);
        /* part of what an execution_id names: the same id with another receiver is a conflict */
        assert_memory_not_equal(req->fingerprint, plain->fingerprint, sizeof(req->fingerprint));
        exec_request_free(req);
        exec_request_free(plain);

        /* exactly the bound, and one byte more */
        url = repeat('a', 2048);
        memcpy(url, "http://h/", 9);
        body = strf(REQ("\"callback_url\": \"%s\""), url);
        req = parse_ok(body);
        assert_int_equal(strlen(req->callback_url), 2048);
        exec_request_free(req);
        free(body);
        body = strf(REQ("\"callback_url\": \"%sa\""), url);
        check_refused(body, 400, "invalid_request", "callback_url", "longer than 2048");
}

static void test_fingerprint(_unused_ void **state) {
        static const char *const same[] = {
                "{" BASE_FIELDS "}",
                /* Other order, other white space, an alias. */
                "{ \"seed\":7,\"env\":{\"B\":\"2\",\"A\":\"1\"}, \"code\":\"print(1)\", \"language\":\"python3\","
                "\"limits\":{\"tasks\":32,\"disk_mb\":64,\"cpu_cores\":0.5,\"memory_mb\":256,\"timeout_ms\":5000},"
                "\"session_id\":\"s1\" }\n",
                /* The execution_id is the idempotency key itself, not part of what it names. */
                "{\"execution_id\": \"exec_x\", " BASE_FIELDS "}",
        };
        static const char *const different[] = {
                "{\"session_id\": \"s2\", \"language\": \"python\", \"code\": \"print(1)\", \"limits\": "
                "{\"timeout_ms\": 5000, \"memory_mb\": 256, \"cpu_cores\": 0.5, \"disk_mb\": 64, \"tasks\": 32}, "
                "\"env\": {\"A\": \"1\", \"B\": \"2\"}, \"seed\": 7}",
                /* no session */
                "{\"language\": \"python\", \"code\": \"print(1)\", \"limits\": "
                "{\"timeout_ms\": 5000, \"memory_mb\": 256, \"cpu_cores\": 0.5, \"disk_mb\": 64, \"tasks\": 32}, "
                "\"env\": {\"A\": \"1\", \"B\": \"2\"}, \"seed\": 7}",
                /* language */
                "{\"session_id\": \"s1\", \"language\": \"node\", \"code\": \"print(1)\", \"limits\": "
                "{\"timeout_ms\": 5000, \"memory_mb\": 256, \"cpu_cores\": 0.5, \"disk_mb\": 64, \"tasks\": 32}, "
                "\"env\": {\"A\": \"1\", \"B\": \"2\"}, \"seed\": 7}",
                /* code, same length */
                "{\"session_id\": \"s1\", \"language\": \"python\", \"code\": \"print(2)\", \"limits\": "
                "{\"timeout_ms\": 5000, \"memory_mb\": 256, \"cpu_cores\": 0.5, \"disk_mb\": 64, \"tasks\": 32}, "
                "\"env\": {\"A\": \"1\", \"B\": \"2\"}, \"seed\": 7}",
                /* code, longer */
                "{\"session_id\": \"s1\", \"language\": \"python\", \"code\": \"print(1) \", \"limits\": "
                "{\"timeout_ms\": 5000, \"memory_mb\": 256, \"cpu_cores\": 0.5, \"disk_mb\": 64, \"tasks\": 32}, "
                "\"env\": {\"A\": \"1\", \"B\": \"2\"}, \"seed\": 7}",
                /* each limit */
                "{\"session_id\": \"s1\", \"language\": \"python\", \"code\": \"print(1)\", \"limits\": "
                "{\"timeout_ms\": 5001, \"memory_mb\": 256, \"cpu_cores\": 0.5, \"disk_mb\": 64, \"tasks\": 32}, "
                "\"env\": {\"A\": \"1\", \"B\": \"2\"}, \"seed\": 7}",
                "{\"session_id\": \"s1\", \"language\": \"python\", \"code\": \"print(1)\", \"limits\": "
                "{\"timeout_ms\": 5000, \"memory_mb\": 257, \"cpu_cores\": 0.5, \"disk_mb\": 64, \"tasks\": 32}, "
                "\"env\": {\"A\": \"1\", \"B\": \"2\"}, \"seed\": 7}",
                "{\"session_id\": \"s1\", \"language\": \"python\", \"code\": \"print(1)\", \"limits\": "
                "{\"timeout_ms\": 5000, \"memory_mb\": 256, \"cpu_cores\": 0.75, \"disk_mb\": 64, \"tasks\": 32}, "
                "\"env\": {\"A\": \"1\", \"B\": \"2\"}, \"seed\": 7}",
                "{\"session_id\": \"s1\", \"language\": \"python\", \"code\": \"print(1)\", \"limits\": "
                "{\"timeout_ms\": 5000, \"memory_mb\": 256, \"cpu_cores\": 0.5, \"disk_mb\": 65, \"tasks\": 32}, "
                "\"env\": {\"A\": \"1\", \"B\": \"2\"}, \"seed\": 7}",
                "{\"session_id\": \"s1\", \"language\": \"python\", \"code\": \"print(1)\", \"limits\": "
                "{\"timeout_ms\": 5000, \"memory_mb\": 256, \"cpu_cores\": 0.5, \"disk_mb\": 64, \"tasks\": 33}, "
                "\"env\": {\"A\": \"1\", \"B\": \"2\"}, \"seed\": 7}",
                /* env value, env name, one variable fewer, one more, a value moved across the '=' */
                "{\"session_id\": \"s1\", \"language\": \"python\", \"code\": \"print(1)\", \"limits\": "
                "{\"timeout_ms\": 5000, \"memory_mb\": 256, \"cpu_cores\": 0.5, \"disk_mb\": 64, \"tasks\": 32}, "
                "\"env\": {\"A\": \"1\", \"B\": \"3\"}, \"seed\": 7}",
                "{\"session_id\": \"s1\", \"language\": \"python\", \"code\": \"print(1)\", \"limits\": "
                "{\"timeout_ms\": 5000, \"memory_mb\": 256, \"cpu_cores\": 0.5, \"disk_mb\": 64, \"tasks\": 32}, "
                "\"env\": {\"A\": \"1\", \"C\": \"2\"}, \"seed\": 7}",
                "{\"session_id\": \"s1\", \"language\": \"python\", \"code\": \"print(1)\", \"limits\": "
                "{\"timeout_ms\": 5000, \"memory_mb\": 256, \"cpu_cores\": 0.5, \"disk_mb\": 64, \"tasks\": 32}, "
                "\"env\": {\"A\": \"1\"}, \"seed\": 7}",
                "{\"session_id\": \"s1\", \"language\": \"python\", \"code\": \"print(1)\", \"limits\": "
                "{\"timeout_ms\": 5000, \"memory_mb\": 256, \"cpu_cores\": 0.5, \"disk_mb\": 64, \"tasks\": 32}, "
                "\"env\": {\"A\": \"1\", \"B\": \"2\", \"C\": \"\"}, \"seed\": 7}",
                "{\"session_id\": \"s1\", \"language\": \"python\", \"code\": \"print(1)\", \"limits\": "
                "{\"timeout_ms\": 5000, \"memory_mb\": 256, \"cpu_cores\": 0.5, \"disk_mb\": 64, \"tasks\": 32}, "
                "\"env\": {\"A\": \"1B=2\"}, \"seed\": 7}",
                /* seed, and no seed */
                "{\"session_id\": \"s1\", \"language\": \"python\", \"code\": \"print(1)\", \"limits\": "
                "{\"timeout_ms\": 5000, \"memory_mb\": 256, \"cpu_cores\": 0.5, \"disk_mb\": 64, \"tasks\": 32}, "
                "\"env\": {\"A\": \"1\", \"B\": \"2\"}, \"seed\": 8}",
                "{\"session_id\": \"s1\", \"language\": \"python\", \"code\": \"print(1)\", \"limits\": "
                "{\"timeout_ms\": 5000, \"memory_mb\": 256, \"cpu_cores\": 0.5, \"disk_mb\": 64, \"tasks\": 32}, "
                "\"env\": {\"A\": \"1\", \"B\": \"2\"}}",
        };
        uint8_t base[32], fp[32], others[ELEMENTSOF(different)][32];

        fingerprint_of(same[0], base);
        /* Not all zero: it was computed. */
        assert_true(memcmp(base, (uint8_t[32]) {}, 32) != 0);

        for (size_t i = 0; i < ELEMENTSOF(same); i++) {
                fingerprint_of(same[i], fp);
                if (memcmp(fp, base, 32) != 0) {
                        print_error("same request, different fingerprint: %s\n", same[i]);
                        fail();
                }
        }
        for (size_t i = 0; i < ELEMENTSOF(different); i++) {
                fingerprint_of(different[i], others[i]);
                if (memcmp(others[i], base, 32) == 0) {
                        print_error("different request, same fingerprint: %s\n", different[i]);
                        fail();
                }
                /* And different from each other. */
                for (size_t j = 0; j < i; j++)
                        assert_true(memcmp(others[i], others[j], 32) != 0);
        }
}

/* ---- the env name predicates on their own ---- */

static void test_env_name_predicates(_unused_ void **state) {
        static const struct {
                const char *name;
                bool valid, reserved;
        } rows[] = {
                { "A",               true,  false },
                { "_",               true,  false },
                { "a_1",             true,  false },
                { "PATH",            true,  true },
                { "HOME",            true,  true },
                { "LD_PRELOAD",      true,  true },
                { "LD_",             true,  true },
                { "LC_ALL",          true,  true },
                { "LC_MESSAGES",     true,  true },
                { "SANDBOXD_X",      true,  true },
                { "SANDBOX_SEED",    true,  true },
                { "PYTHONHASHSEED",  true,  true },
                { "TMPDIR",          true,  true },
                { "GLIBC_TUNABLES",  true,  true },
                { "NOTIFY_SOCKET",   true,  true },
                { "path",            true,  false },
                { "",                false, false },
                { "1A",              false, false },
                { "A-B",             false, false },
                { "A=B",             false, false },
                { "A B",             false, false },
        };

        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                if (env_name_is_valid(rows[i].name) != rows[i].valid ||
                    env_name_is_reserved(rows[i].name) != rows[i].reserved) {
                        print_error("'%s': valid=%d reserved=%d\n", rows[i].name, env_name_is_valid(rows[i].name),
                                    env_name_is_reserved(rows[i].name));
                        fail();
                }
        }
}

/* ---- input files ---- */

static void test_files_accepted(_unused_ void **state) {
        _cleanup_(exec_request_freep) ExecRequest *req = NULL, *again = NULL;
        RequestError err;
        json_object *j;

        req = parse_ok(REQ("\"files\": [{\"path\": \"data/input.csv\", \"url\": \"HTTPS://example.com/a.csv?x=1#f\"},"
                           "{\"path\": \"notes.txt\", \"content_base64\": \"aGVsbG8K\"},"
                           "{\"path\": \"empty\", \"content_base64\": \"\"},"
                           "{\"path\": \"d\\u00e9j\\u00e0 vu/..x/.y/x..\", \"url\": \"http://[::1]:8080/\"}]"));
        assert_int_equal(req->n_files, 4);
        assert_string_equal(req->files[0].path, "data/input.csv");
        assert_string_equal(req->files[0].url, "HTTPS://example.com/a.csv?x=1#f");
        assert_null(req->files[0].content);
        assert_string_equal(req->files[1].path, "notes.txt");
        assert_null(req->files[1].url);
        assert_int_equal(req->files[1].content_len, 6);
        assert_memory_equal(req->files[1].content, "hello\n", 6);
        assert_int_equal(req->files[2].content_len, 0);
        assert_null(req->files[2].url);
        assert_string_equal(req->files[3].path, "d\xc3\xa9j\xc3\xa0 vu/..x/.y/x..");

        /* What job.c stores reads back as the same files. */
        j = request_files_to_json(req);
        assert_non_null(j);
        again = calloc(1, sizeof(ExecRequest));
        assert_non_null(again);
        assert_int_equal(request_parse_files(j, cfg, 1, again, &err), 0);
        json_object_put(j);
        assert_int_equal(again->n_files, 4);
        for (size_t i = 0; i < 4; i++) {
                assert_string_equal(again->files[i].path, req->files[i].path);
                assert_true(streq_ptr(again->files[i].url, req->files[i].url));
                assert_int_equal(again->files[i].content_len, req->files[i].content_len);
                if (req->files[i].content_len > 0)
                        assert_memory_equal(again->files[i].content, req->files[i].content, req->files[i].content_len);
        }
}

static void test_files_limits(_unused_ void **state) {
        _cleanup_free_ char *p255 = repeat('a', 255), *p256 = repeat('a', 256), *body = NULL;
        _cleanup_free_ char *u2048 = NULL, *u2049 = NULL;
        ExecRequest *req;

        /* Path length: 255 bytes yes, 256 no. */
        body = strf(REQ("\"files\": [{\"path\": \"%s\", \"url\": \"http://h/\"}]"), p255);
        req = parse_ok(body);
        exec_request_free(req);
        free(body);
        body = strf(REQ("\"files\": [{\"path\": \"%s\", \"url\": \"http://h/\"}]"), p256);
        check_refused(body, 400, "invalid_request", "files[0].path", "too long");
        free(body);

        /* 16 components yes, 17 no (the 17-deep row is in the table). */
        req = parse_ok(FILES("[" F_URL("a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p") "]"));
        exec_request_free(req);

        /* URL length: 2048 yes, 2049 no. */
        u2048 = repeat('u', 2048);
        memcpy(u2048, "http://h/", 9);
        u2049 = repeat('u', 2049);
        memcpy(u2049, "http://h/", 9);
        body = strf(REQ("\"files\": [{\"path\": \"a\", \"url\": \"%s\"}]"), u2048);
        req = parse_ok(body);
        exec_request_free(req);
        free(body);
        body = strf(REQ("\"files\": [{\"path\": \"a\", \"url\": \"%s\"}]"), u2049);
        check_refused(body, 400, "invalid_request", "files[0].url", "too long");
        free(body);

        /* Exactly MaxInputFiles; exactly the inline cap. */
        req = parse_ok(FILES("[" F_URL("a") "," F_URL("b") "," F_URL("c") "," F_URL("d") "]"));
        exec_request_free(req);
        req = parse_ok(FILES("[{\"path\": \"a\", \"content_base64\": \"YWFhYWFhYWFhYWFhYWFhYQ==\"}]"));
        assert_int_equal(req->files[0].content_len, 16);
        exec_request_free(req);
        body = NULL;

        /* Inline content larger than disk_mb: refused up front. */
        {
                _cleanup_free_ char *big = NULL, *b64 = NULL, *raw = repeat('x', 1024 * 1024 + 1);
                uint64_t old = cfg->max_inline_input_bytes, old_req = cfg->max_request_bytes;

                cfg->max_inline_input_bytes = 2 * 1024 * 1024;
                cfg->max_request_bytes = 4 * 1024 * 1024;
                b64 = base64_encode((const uint8_t *) raw, strlen(raw));
                assert_non_null(b64);
                big = strf(REQ("\"limits\": {\"disk_mb\": 1}, \"files\": [{\"path\": \"a\", \"content_base64\": \"%s\"}]"),
                           b64);
                check_refused(big, 400, "invalid_request", "files[0].content_base64", "limits.disk_mb=1");
                cfg->max_inline_input_bytes = old;
                cfg->max_request_bytes = old_req;
        }

        /* MaxInputFiles=0 turns "files" off, but an empty array is still fine. */
        {
                uint64_t old = cfg->max_input_files;

                cfg->max_input_files = 0;
                check_refused(FILES("[" F_URL("a") "]"), 400, "invalid_request", "files", "at most 0");
                req = parse_ok(FILES("[]"));
                assert_int_equal(req->n_files, 0);
                exec_request_free(req);
                cfg->max_input_files = old;
        }
}

static void test_files_fingerprint(_unused_ void **state) {
        _cleanup_(exec_request_freep) ExecRequest *a = parse_ok(FILES("[" F_URL("a") "]"));
        _cleanup_(exec_request_freep) ExecRequest *b = parse_ok(FILES("[" F_URL("b") "]"));
        _cleanup_(exec_request_freep) ExecRequest *c = parse_ok(FILES("[{\"path\": \"a\", \"content_base64\": \"YQ==\"}]"));
        _cleanup_(exec_request_freep) ExecRequest *d = parse_ok(FILES("[{\"path\": \"a\", \"content_base64\": \"Yg==\"}]"));
        _cleanup_(exec_request_freep) ExecRequest *none = parse_ok(REQ("\"seed\": 0"));
        _cleanup_(exec_request_freep) ExecRequest *empty = parse_ok(FILES("[]"));

        assert_memory_not_equal(a->fingerprint, b->fingerprint, 32);
        assert_memory_not_equal(a->fingerprint, c->fingerprint, 32);
        assert_memory_not_equal(c->fingerprint, d->fingerprint, 32);
        assert_memory_not_equal(a->fingerprint, none->fingerprint, 32);
        /* No files and an empty list are the same request. */
        assert_memory_equal(none->fingerprint, empty->fingerprint, 32);
}

static void test_input_path_rows(_unused_ void **state) {
        static const struct {
                const char *path;
                bool valid;
        } rows[] = {
                { "a", true },            { "a/b/c.csv", true },   { "..a", true },      { "a..", true },
                { ".hidden", true },      { "a b", true },         { "\xc3\xa9", true }, { "a:b", true },
                { "", false },            { "/", false },          { "/a", false },      { "a/", false },
                { "a//b", false },        { ".", false },          { "..", false },      { "a/./b", false },
                { "a/../b", false },      { "../a", false },       { "a\\b", false },    { "a\nb", false },
                { "a\rb", false },        { "\x7f", false },       { "\x01", false },
        };

        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                const char *why = NULL;
                bool v = input_path_is_valid(rows[i].path, strlen(rows[i].path), &why);

                if (v != rows[i].valid || (!v && !why)) {
                        print_error("'%s': valid=%d why=%s\n", rows[i].path, v, strna(why));
                        fail();
                }
        }
}

static void test_input_url_rows(_unused_ void **state) {
        static const struct {
                const char *url;
                bool valid;
        } rows[] = {
                { "http://h", true },              { "https://h/x", true },          { "HtTpS://H/x", true },
                { "http://h:80/x?q=1#f", true },   { "http://[::1]/", true },        { "http://h/a@b", true },
                { "http://h?x@y", true },          { "file:///etc/passwd", false },  { "ftp://h/", false },
                { "https:/h", false },             { "http://", false },             { "http://@h/", false },
                { "http://u@h/", false },          { "http://h/\x01", false },       { "http://h/ x", false },
                { "data:text/plain,x", false },    { "javascript:x", false },        { "httpx://h", false },
        };

        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                const char *why = NULL;
                bool v = input_url_is_valid(rows[i].url, strlen(rows[i].url), &why);

                if (v != rows[i].valid || (!v && !why)) {
                        print_error("'%s': valid=%d why=%s\n", rows[i].url, v, strna(why));
                        fail();
                }
        }
}

int main(void) {
        size_t n = ELEMENTSOF(refuse_rows) + ELEMENTSOF(limits_rows) + 32, i = 0;
        _cleanup_free_ struct CMUnitTest *tests = calloc(n, sizeof(struct CMUnitTest));

        if (!tests)
                return EXIT_FAILURE;

        for (size_t k = 0; k < ELEMENTSOF(refuse_rows); k++)
                tests[i++] = (struct CMUnitTest) { refuse_rows[k].name, test_refuse_row, NULL, NULL,
                                                   (void *) &refuse_rows[k] };
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_too_large);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_network_accepted);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_code_too_large);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_nesting);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_scalars);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_id_too_long_runtime);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_env_limits);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_minimal);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_disk_mb_given);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_full);
        for (size_t k = 0; k < ELEMENTSOF(limits_rows); k++)
                tests[i++] = (struct CMUnitTest) { limits_rows[k].name, test_limits_row, NULL, NULL,
                                                   (void *) &limits_rows[k] };
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_languages);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_ids);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_env_sorted);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_args);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_stdin);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_env_valid_names);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_seed);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_accepted_odds_and_ends);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_fingerprint);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_callback_url);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_env_name_predicates);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_files_accepted);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_files_limits);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_files_fingerprint);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_input_path_rows);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_input_url_rows);
        if (i > n)
                abort();

        return _cmocka_run_group_tests("request", tests, i, setup_config, teardown_config);
}

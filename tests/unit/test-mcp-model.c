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

#include "base64.h"
#include "model/mcp.h"
#include "util.h"

/* The MCP model (sandboxd/model/mcp.c), row by row: JSON-RPC classification, version negotiation,
 * initialize, the tools and their schemas, run_code's arguments as an execution request, an
 * execution record as a tool result, the text/pending/languages results. */

static const char *str_at(json_object *o, const char *path) {
        json_object *v = at(o, path);

        return json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

static void assert_str_at(json_object *o, const char *path, const char *want) {
        const char *got = str_at(o, path);

        if (!got || !streq(got, want)) {
                print_error("%s: got '%s', want '%s' in %s\n", path, strna(got), want,
                            json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
                fail();
        }
}

static void assert_bool_at(json_object *o, const char *path, bool want) {
        json_object *v = at(o, path);

        if (!json_object_is_type(v, json_type_boolean) || json_object_get_boolean(v) != want) {
                print_error("%s: want %s in %s\n", path, want ? "true" : "false",
                            json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
                fail();
        }
}

static void assert_json_equal(json_object *got, const char *want_text) {
        json_object *want = parse(want_text);

        if (!json_object_equal(got, want)) {
                print_error("got %s\nwant %s\n", json_object_to_json_string_ext(got, JSON_C_TO_STRING_PLAIN),
                            json_object_to_json_string_ext(want, JSON_C_TO_STRING_PLAIN));
                json_object_put(want);
                fail();
        }
        json_object_put(want);
}

/* ---- mcp_classify ------------------------------------------------------------------------------- */

typedef struct ClassifyRow {
        const char *name;
        const char *json;
        McpKind kind;
        const char *method;      /* REQUEST, NOTIFICATION */
        const char *id;          /* REQUEST: the id as JSON */
        bool params;             /* params set */
        const char *error;       /* INVALID: a part of the message */
} ClassifyRow;

static const ClassifyRow classify_rows[] = {
        { "request, string id", "{\"jsonrpc\":\"2.0\",\"id\":\"a-1\",\"method\":\"tools/list\"}",
          MCP_KIND_REQUEST, "tools/list", "\"a-1\"", false, NULL },
        { "request, integer id", "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}",
          MCP_KIND_REQUEST, "ping", "7", false, NULL },
        { "request, id 0", "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"ping\"}",
          MCP_KIND_REQUEST, "ping", "0", false, NULL },
        { "request, negative id", "{\"jsonrpc\":\"2.0\",\"id\":-3,\"method\":\"ping\"}",
          MCP_KIND_REQUEST, "ping", "-3", false, NULL },
        { "request with params", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"a\":1}}",
          MCP_KIND_REQUEST, "initialize", "1", true, NULL },
        { "request, params null", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":null}",
          MCP_KIND_REQUEST, "ping", "1", false, NULL },
        { "notification", "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}",
          MCP_KIND_NOTIFICATION, "notifications/initialized", NULL, false, NULL },
        { "notification with params", "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":3}}",
          MCP_KIND_NOTIFICATION, "notifications/cancelled", NULL, true, NULL },
        { "response with result", "{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{}}",
          MCP_KIND_RESPONSE, NULL, NULL, false, NULL },
        { "response with error", "{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"error\":{\"code\":-1,\"message\":\"no\"}}",
          MCP_KIND_RESPONSE, NULL, NULL, false, NULL },

        { "not an object: string", "\"hello\"", MCP_KIND_INVALID, NULL, NULL, false, "JSON object" },
        { "not an object: number", "42", MCP_KIND_INVALID, NULL, NULL, false, "JSON object" },
        { "batch", "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]", MCP_KIND_INVALID, NULL, NULL, false, "batch" },
        { "empty batch", "[]", MCP_KIND_INVALID, NULL, NULL, false, "batch" },
        { "jsonrpc missing", "{\"id\":1,\"method\":\"ping\"}", MCP_KIND_INVALID, NULL, NULL, false, "jsonrpc" },
        { "jsonrpc 1.0", "{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"ping\"}", MCP_KIND_INVALID, NULL, NULL, false, "jsonrpc" },
        { "jsonrpc a number", "{\"jsonrpc\":2.0,\"id\":1,\"method\":\"ping\"}", MCP_KIND_INVALID, NULL, NULL, false, "jsonrpc" },
        { "method a number", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":3}", MCP_KIND_INVALID, NULL, NULL, false, "method" },
        { "method empty", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\"}", MCP_KIND_INVALID, NULL, NULL, false, "method" },
        { "method null", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":null}", MCP_KIND_INVALID, NULL, NULL, false, "method" },
        { "id an object", "{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"ping\"}", MCP_KIND_INVALID, NULL, NULL, false, "id" },
        { "id an array", "{\"jsonrpc\":\"2.0\",\"id\":[1],\"method\":\"ping\"}", MCP_KIND_INVALID, NULL, NULL, false, "id" },
        { "id a bool", "{\"jsonrpc\":\"2.0\",\"id\":true,\"method\":\"ping\"}", MCP_KIND_INVALID, NULL, NULL, false, "id" },
        { "id a float", "{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\"}", MCP_KIND_INVALID, NULL, NULL, false, "id" },
        { "id null", "{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}", MCP_KIND_INVALID, NULL, NULL, false, "id" },
        { "params an array", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":[1]}",
          MCP_KIND_INVALID, NULL, "1", false, "params" },
        { "params a string", "{\"jsonrpc\":\"2.0\",\"method\":\"ping\",\"params\":\"x\"}",
          MCP_KIND_INVALID, NULL, NULL, false, "params" },
        { "method and result", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"result\":{}}",
          MCP_KIND_INVALID, NULL, NULL, false, "not both" },
        { "method and error", "{\"jsonrpc\":\"2.0\",\"method\":\"ping\",\"error\":{}}",
          MCP_KIND_INVALID, NULL, NULL, false, "not both" },
        { "result without id", "{\"jsonrpc\":\"2.0\",\"result\":{}}", MCP_KIND_INVALID, NULL, NULL, false, "neither" },
        { "only jsonrpc and id", "{\"jsonrpc\":\"2.0\",\"id\":1}", MCP_KIND_INVALID, NULL, NULL, false, "neither" },
        { "empty object", "{}", MCP_KIND_INVALID, NULL, NULL, false, "jsonrpc" },
};

static void test_classify(_unused_ void **state) {
        for (size_t i = 0; i < ELEMENTSOF(classify_rows); i++) {
                const ClassifyRow *r = &classify_rows[i];
                json_object *msg = parse(r->json);
                McpMessage m = { .kind = 99 };
                const char *error = "stale";
                McpKind k = mcp_classify(msg, &m, &error);

                if (k != r->kind || m.kind != r->kind) {
                        print_error("row '%s': kind %d (m.kind %d), want %d; error '%s'\n", r->name, k, m.kind,
                                    r->kind, strna(error));
                        fail();
                }
                if (r->kind == MCP_KIND_INVALID) {
                        if (!error || !strstr(error, r->error)) {
                                print_error("row '%s': error '%s', want it to name '%s'\n", r->name, strna(error), r->error);
                                fail();
                        }
                        assert_null(m.method);
                        assert_null(m.params);
                } else {
                        if (error) {
                                print_error("row '%s': error '%s' set on success\n", r->name, error);
                                fail();
                        }
                }
                if (r->kind == MCP_KIND_REQUEST || r->kind == MCP_KIND_NOTIFICATION) {
                        assert_non_null(m.method);
                        if (!streq(m.method, r->method)) {
                                print_error("row '%s': method '%s', want '%s'\n", r->name, m.method, r->method);
                                fail();
                        }
                        if ((m.params != NULL) != r->params) {
                                print_error("row '%s': params %s\n", r->name, m.params ? "set" : "not set");
                                fail();
                        }
                        if (m.params)
                                assert_true(json_object_is_type(m.params, json_type_object));
                }
                /* The id: copied for a request, and for an invalid one whose id is known (answerable). */
                if (r->id) {
                        json_object *want = parse(r->id);

                        if (!m.id || !json_object_equal(m.id, want)) {
                                print_error("row '%s': id %s, want %s\n", r->name,
                                            m.id ? json_object_to_json_string(m.id) : "NULL", r->id);
                                fail();
                        }
                        json_object_put(want);
                } else if (r->kind != MCP_KIND_INVALID && r->kind != MCP_KIND_RESPONSE && m.id) {
                        print_error("row '%s': id set\n", r->name);
                        fail();
                }
                json_object_put(msg);
        }
}

/* ---- responses ---------------------------------------------------------------------------------- */

static void test_responses(_unused_ void **state) {
        json_object *id = parse("\"req-9\""), *o;

        o = mcp_response(id, parse("{\"x\":1}"));
        assert_non_null(o);
        assert_json_equal(o, "{\"jsonrpc\":\"2.0\",\"id\":\"req-9\",\"result\":{\"x\":1}}");
        json_object_put(o);
        /* The id was copied (referenced): still ours. */
        assert_string_equal(json_object_get_string(id), "req-9");

        o = mcp_response(NULL, json_object_new_object());
        assert_non_null(o);
        assert_json_equal(o, "{\"jsonrpc\":\"2.0\",\"id\":null,\"result\":{}}");
        json_object_put(o);

        /* No result (its allocation failed): NULL. */
        assert_null(mcp_response(id, NULL));

        o = mcp_error_response(id, MCP_METHOD_NOT_FOUND, "method not found");
        assert_non_null(o);
        assert_json_equal(o, "{\"jsonrpc\":\"2.0\",\"id\":\"req-9\",\"error\":{\"code\":-32601,\"message\":\"method not found\"}}");
        json_object_put(o);

        o = mcp_error_response(NULL, MCP_PARSE_ERROR, "parse error");
        assert_non_null(o);
        assert_json_equal(o, "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,\"message\":\"parse error\"}}");
        json_object_put(o);
        json_object_put(id);

        id = json_object_new_int(12);
        o = mcp_error_response(id, MCP_INVALID_PARAMS, "bad");
        assert_json_equal(o, "{\"jsonrpc\":\"2.0\",\"id\":12,\"error\":{\"code\":-32602,\"message\":\"bad\"}}");
        json_object_put(o);
        json_object_put(id);
}

/* ---- versions, initialize --------------------------------------------------------------------- */

static const struct {
        const char *requested, *want;
} version_rows[] = {
        { "2025-06-18", "2025-06-18" },
        { "2025-03-26", "2025-03-26" },
        { "2024-11-05", "2024-11-05" },
        { NULL, MCP_PROTOCOL_LATEST },
        { "", MCP_PROTOCOL_LATEST },
        { "2099-01-01", MCP_PROTOCOL_LATEST },
        { "2024-11-05 ", MCP_PROTOCOL_LATEST },
        { "1.0", MCP_PROTOCOL_LATEST },
};

static void test_negotiate_version(_unused_ void **state) {
        assert_string_equal(MCP_PROTOCOL_LATEST, "2025-06-18");
        for (size_t i = 0; i < ELEMENTSOF(version_rows); i++) {
                const char *got = mcp_negotiate_version(version_rows[i].requested);

                if (!got || !streq(got, version_rows[i].want)) {
                        print_error("'%s': got '%s', want '%s'\n", strna(version_rows[i].requested), strna(got),
                                    version_rows[i].want);
                        fail();
                }
        }
}

static const struct {
        const char *params;      /* NULL: no params */
        const char *want;
} initialize_rows[] = {
        { NULL, MCP_PROTOCOL_LATEST },
        { "{}", MCP_PROTOCOL_LATEST },
        { "{\"protocolVersion\":\"2025-03-26\",\"capabilities\":{}}", "2025-03-26" },
        { "{\"protocolVersion\":\"2024-11-05\"}", "2024-11-05" },
        { "{\"protocolVersion\":\"2025-06-18\"}", "2025-06-18" },
        { "{\"protocolVersion\":\"1999-01-01\"}", MCP_PROTOCOL_LATEST },
        { "{\"protocolVersion\":20250326}", MCP_PROTOCOL_LATEST },
        { "{\"protocolVersion\":null}", MCP_PROTOCOL_LATEST },
};

static void test_initialize(_unused_ void **state) {
        for (size_t i = 0; i < ELEMENTSOF(initialize_rows); i++) {
                json_object *params = initialize_rows[i].params ? parse(initialize_rows[i].params) : NULL;
                json_object *o = mcp_initialize_result(params, "1.2.3");

                assert_non_null(o);
                assert_str_at(o, "protocolVersion", initialize_rows[i].want);
                assert_true(json_object_is_type(at(o, "capabilities.tools"), json_type_object));
                assert_bool_at(o, "capabilities.tools.listChanged", false);
                assert_str_at(o, "serverInfo.name", "sandboxd");
                assert_str_at(o, "serverInfo.version", "1.2.3");
                assert_non_null(str_at(o, "serverInfo.title"));
                assert_non_null(str_at(o, "instructions"));
                assert_non_null(strstr(str_at(o, "instructions"), "run_code"));
                json_object_put(o);
                json_object_put(params);
        }
}

/* ---- tools ---------------------------------------------------------------------------------------- */

static const char *const tool_names[] = { "run_code", "list_languages", "get_execution", "read_file", "write_file",
                                           "list_files" };

static void test_tools_list(_unused_ void **state) {
        json_object *o = mcp_tools_list(), *tools;
        bool seen[ELEMENTSOF(tool_names)] = {};

        assert_non_null(o);
        tools = at(o, "tools");
        assert_true(json_object_is_type(tools, json_type_array));
        assert_int_equal(json_object_array_length(tools), ELEMENTSOF(tool_names));
        for (size_t i = 0; i < json_object_array_length(tools); i++) {
                json_object *t = json_object_array_get_idx(tools, i), *schema;
                const char *name = str_at(t, "name");
                bool found = false;

                assert_non_null(name);
                assert_non_null(str_at(t, "title"));
                assert_true(strlen(str_at(t, "title")) > 0);
                assert_non_null(str_at(t, "description"));
                assert_true(strlen(str_at(t, "description")) > 0);
                schema = at(t, "inputSchema");
                if (!json_object_is_type(schema, json_type_object)) {
                        print_error("tool '%s': inputSchema not an object\n", name);
                        fail();
                }
                assert_str_at(schema, "type", "object");
                assert_true(json_object_is_type(at(schema, "properties"), json_type_object));
                assert_bool_at(schema, "additionalProperties", false);
                /* Every required property is a property. */
                if (at(schema, "required")) {
                        json_object *req = at(schema, "required");

                        assert_true(json_object_is_type(req, json_type_array));
                        for (size_t k = 0; k < json_object_array_length(req); k++) {
                                const char *p = json_object_get_string(json_object_array_get_idx(req, k));

                                if (!json_object_object_get_ex(at(schema, "properties"), p, NULL)) {
                                        print_error("tool '%s': required '%s' is not a property\n", name, p);
                                        fail();
                                }
                        }
                }
                for (size_t k = 0; k < ELEMENTSOF(tool_names); k++)
                        if (streq(name, tool_names[k])) {
                                assert_false(seen[k]);
                                seen[k] = found = true;
                        }
                if (!found) {
                        print_error("unexpected tool '%s'\n", name);
                        fail();
                }
                assert_true(mcp_tool_known(name));
        }
        for (size_t k = 0; k < ELEMENTSOF(tool_names); k++)
                assert_true(seen[k]);

        /* run_code: its schema names every argument mcp_run_code_request takes, and its files cap. */
        {
                json_object *schema = at(tools, "0.inputSchema.properties");
                static const char *const args[] = { "language", "code", "session_id", "environment", "stdin",
                                                    "files", "timeout_ms", "memory_mb", "allow_net" };

                assert_str_at(tools, "0.name", "run_code");
                for (size_t k = 0; k < ELEMENTSOF(args); k++)
                        if (!json_object_object_get_ex(schema, args[k], NULL)) {
                                print_error("run_code's schema lacks '%s'\n", args[k]);
                                fail();
                        }
                assert_int_equal(json_object_get_int(at(schema, "files.maxItems")), MCP_FILES_MAX);
                assert_json_equal(at(tools, "0.inputSchema.required"), "[\"language\",\"code\"]");
                assert_json_equal(at(tools, "2.inputSchema.required"), "[\"execution_id\"]");
        }
        json_object_put(o);

        assert_true(mcp_tool_known("run_code"));
        assert_true(mcp_tool_known("list_languages"));
        assert_true(mcp_tool_known("get_execution"));
        assert_false(mcp_tool_known("run_cod"));
        assert_false(mcp_tool_known("RUN_CODE"));
        assert_false(mcp_tool_known("run_code "));
        assert_false(mcp_tool_known(""));
        assert_false(mcp_tool_known(NULL));
}

/* ---- run_code ------------------------------------------------------------------------------------ */

typedef struct RunCodeRow {
        const char *name;
        const char *args;        /* NULL: no arguments */
        int ret;
        const char *want;        /* 0: the request exactly; -EINVAL: a part of the error */
} RunCodeRow;

#define LC "\"language\":\"python\",\"code\":\"print(1)\""

static const RunCodeRow run_code_rows[] = {
        { "minimal", "{" LC "}", 0, "{" LC "}" },
        { "every string", "{" LC ",\"session_id\":\"s1\",\"environment\":\"python-data\",\"stdin\":\"in\\n\"}", 0,
          "{" LC ",\"session_id\":\"s1\",\"environment\":\"python-data\",\"stdin\":\"in\\n\"}" },
        { "files: content is encoded",
          "{" LC ",\"files\":[{\"path\":\"a.txt\",\"content\":\"hello\"},{\"path\":\"b.bin\",\"content_base64\":\"AAEC\"}]}", 0,
          "{" LC ",\"files\":[{\"path\":\"a.txt\",\"content_base64\":\"aGVsbG8=\"},{\"path\":\"b.bin\",\"content_base64\":\"AAEC\"}]}" },
        { "files: empty content", "{" LC ",\"files\":[{\"path\":\"e\",\"content\":\"\"}]}", 0,
          "{" LC ",\"files\":[{\"path\":\"e\",\"content_base64\":\"\"}]}" },
        { "files: empty list", "{" LC ",\"files\":[]}", 0, "{" LC ",\"files\":[]}" },
        { "timeout only", "{" LC ",\"timeout_ms\":5000}", 0, "{" LC ",\"limits\":{\"timeout_ms\":5000}}" },
        { "memory only", "{" LC ",\"memory_mb\":256}", 0, "{" LC ",\"limits\":{\"memory_mb\":256}}" },
        { "both limits", "{" LC ",\"timeout_ms\":100,\"memory_mb\":64}", 0,
          "{" LC ",\"limits\":{\"timeout_ms\":100,\"memory_mb\":64}}" },
        { "limits are checked later", "{" LC ",\"timeout_ms\":-1}", 0, "{" LC ",\"limits\":{\"timeout_ms\":-1}}" },
        { "allow_net", "{" LC ",\"allow_net\":[\"pypi.org\",\"*.example.com:443\"]}", 0,
          "{" LC ",\"network\":{\"allow\":[\"pypi.org\",\"*.example.com:443\"]}}" },
        { "allow_net empty: no network", "{" LC ",\"allow_net\":[]}", 0, "{" LC "}" },
        { "null optional arguments are absent", "{" LC ",\"session_id\":null,\"files\":null,\"timeout_ms\":null,\"allow_net\":null}",
          0, "{" LC "}" },
        { "everything",
          "{" LC ",\"session_id\":\"s\",\"environment\":\"e\",\"stdin\":\"x\",\"files\":[{\"path\":\"p\",\"content\":\"c\"}],"
          "\"timeout_ms\":1,\"memory_mb\":16,\"allow_net\":[\"h\"]}", 0,
          "{" LC ",\"session_id\":\"s\",\"environment\":\"e\",\"stdin\":\"x\",\"files\":[{\"path\":\"p\",\"content_base64\":\"Yw==\"}],"
          "\"limits\":{\"timeout_ms\":1,\"memory_mb\":16},\"network\":{\"allow\":[\"h\"]}}" },

        { "no arguments", NULL, -EINVAL, "must be an object" },
        { "arguments an array", "[]", -EINVAL, "must be an object" },
        { "arguments a string", "\"python\"", -EINVAL, "must be an object" },
        { "unknown argument", "{" LC ",\"cwd\":\"/\"}", -EINVAL, "unknown argument 'cwd'" },
        { "unknown argument (request field)", "{" LC ",\"limits\":{}}", -EINVAL, "unknown argument 'limits'" },
        { "missing language", "{\"code\":\"x\"}", -EINVAL, "missing argument 'language'" },
        { "missing code", "{\"language\":\"python\"}", -EINVAL, "missing argument 'code'" },
        { "language null", "{\"language\":null,\"code\":\"x\"}", -EINVAL, "missing argument 'language'" },
        { "language a number", "{\"language\":1,\"code\":\"x\"}", -EINVAL, "'language' must be a string" },
        { "code an array", "{\"language\":\"python\",\"code\":[\"x\"]}", -EINVAL, "'code' must be a string" },
        { "session_id a number", "{" LC ",\"session_id\":3}", -EINVAL, "'session_id' must be a string" },
        { "environment a bool", "{" LC ",\"environment\":true}", -EINVAL, "'environment' must be a string" },
        { "stdin an object", "{" LC ",\"stdin\":{}}", -EINVAL, "'stdin' must be a string" },
        { "files an object", "{" LC ",\"files\":{}}", -EINVAL, "'files' must be an array" },
        { "files entry a string", "{" LC ",\"files\":[\"a\"]}", -EINVAL, "'files'" },
        { "files entry without path", "{" LC ",\"files\":[{\"content\":\"x\"}]}", -EINVAL, "'path'" },
        { "files path a number", "{" LC ",\"files\":[{\"path\":1,\"content\":\"x\"}]}", -EINVAL, "'path'" },
        { "files without content", "{" LC ",\"files\":[{\"path\":\"a\"}]}", -EINVAL, "exactly one of 'content'" },
        { "files with both contents", "{" LC ",\"files\":[{\"path\":\"a\",\"content\":\"x\",\"content_base64\":\"eA==\"}]}",
          -EINVAL, "exactly one of 'content'" },
        { "files content a number", "{" LC ",\"files\":[{\"path\":\"a\",\"content\":1}]}", -EINVAL, "exactly one of 'content'" },
        { "files content_base64 null", "{" LC ",\"files\":[{\"path\":\"a\",\"content_base64\":null}]}", -EINVAL,
          "exactly one of 'content'" },
        { "files unknown key", "{" LC ",\"files\":[{\"path\":\"a\",\"content\":\"x\",\"mode\":\"0755\"}]}", -EINVAL,
          "unknown key 'mode'" },
        { "files: second entry bad", "{" LC ",\"files\":[{\"path\":\"a\",\"content\":\"x\"},{\"path\":\"b\"}]}", -EINVAL,
          "'files'" },
        { "timeout a string", "{" LC ",\"timeout_ms\":\"5s\"}", -EINVAL, "'timeout_ms' must be an integer" },
        { "timeout a float", "{" LC ",\"timeout_ms\":1.5}", -EINVAL, "'timeout_ms' must be an integer" },
        { "memory a bool", "{" LC ",\"memory_mb\":false}", -EINVAL, "'memory_mb' must be an integer" },
        { "allow_net a string", "{" LC ",\"allow_net\":\"pypi.org\"}", -EINVAL, "'allow_net' must be an array" },
        { "allow_net a number in it", "{" LC ",\"allow_net\":[\"a\",1]}", -EINVAL, "'allow_net' must be an array" },
        { "allow_net a null in it", "{" LC ",\"allow_net\":[null]}", -EINVAL, "'allow_net' must be an array" },
};

static void run_code_row(const char *name, json_object *args, int want_ret, const char *want) {
        char buf[256];
        const char *error = "stale";
        json_object *req = (json_object *) 0x1;
        int r = mcp_run_code_request(args, &req, buf, sizeof buf, &error);

        if (r != want_ret) {
                print_error("row '%s': %d, want %d; error '%s'\n", name, r, want_ret, r < 0 ? strna(error) : "-");
                fail();
        }
        if (r == 0) {
                assert_null(error);
                assert_non_null(req);
                assert_json_equal(req, want);
                json_object_put(req);
        } else {
                assert_null(req);
                if (!error || !strstr(error, want)) {
                        print_error("row '%s': error '%s', want it to name '%s'\n", name, strna(error), want);
                        fail();
                }
        }
}

static void test_run_code(_unused_ void **state) {
        for (size_t i = 0; i < ELEMENTSOF(run_code_rows); i++) {
                const RunCodeRow *r = &run_code_rows[i];
                json_object *args = r->args ? parse(r->args) : NULL;

                run_code_row(r->name, args, r->ret, r->want);
                json_object_put(args);
        }
}

/* Files: MCP_FILES_MAX entries pass, one more is refused. */
static json_object *args_with_files(size_t n) {
        json_object *args = parse("{" LC "}"), *files = json_object_new_array();

        for (size_t i = 0; i < n; i++) {
                json_object *f = json_object_new_object();
                char path[32];

                snprintf(path, sizeof path, "f%zu", i);
                json_object_object_add(f, "path", json_object_new_string(path));
                json_object_object_add(f, "content", json_object_new_string("x"));
                json_object_array_add(files, f);
        }
        json_object_object_add(args, "files", files);
        return args;
}

static void test_run_code_files_max(_unused_ void **state) {
        json_object *args = args_with_files(MCP_FILES_MAX), *req = NULL;
        char buf[256];
        const char *error = NULL;

        assert_int_equal(mcp_run_code_request(args, &req, buf, sizeof buf, &error), 0);
        assert_int_equal(json_object_array_length(at(req, "files")), MCP_FILES_MAX);
        assert_str_at(req, "files.15.path", "f15");
        assert_str_at(req, "files.15.content_base64", "eA==");
        json_object_put(req);
        json_object_put(args);

        args = args_with_files(MCP_FILES_MAX + 1);
        req = (json_object *) 0x1;
        assert_int_equal(mcp_run_code_request(args, &req, buf, sizeof buf, &error), -EINVAL);
        assert_null(req);
        assert_non_null(error);
        assert_non_null(strstr(error, "'files'"));
        assert_non_null(strstr(error, "16"));
        json_object_put(args);

        /* A long unknown argument is cut in the message, never past the buffer. */
        args = parse("{" LC "}");
        {
                char key[300];

                memset(key, 'k', sizeof key - 1);
                key[sizeof key - 1] = 0;
                json_object_object_add(args, key, json_object_new_int(1));
        }
        assert_int_equal(mcp_run_code_request(args, &req, buf, 40, &error), -EINVAL);
        assert_ptr_equal(error, buf);
        assert_true(strlen(error) < 40);
        assert_non_null(strstr(error, "unknown argument"));
        json_object_put(args);
}

/* ---- execution results --------------------------------------------------------------------------- */

typedef struct FakeBlobs {
        int fail;                /* negative: every read fails with it */
        bool short_read;         /* return one byte less than asked */
        unsigned calls;
        uint64_t last_size;
} FakeBlobs;

/* Returns size bytes 'P' 'N' 'G' 0 1 2 ... (or fails). */
static int fake_read_blob(void *userdata, const char *sha256, uint64_t size, uint8_t **ret, size_t *ret_len) {
        FakeBlobs *fb = userdata;
        uint8_t *b;

        assert_non_null(sha256);
        fb->calls++;
        fb->last_size = size;
        if (fb->fail < 0)
                return fb->fail;
        b = malloc(size + 1);
        if (!b)
                return -ENOMEM;
        for (uint64_t i = 0; i < size; i++)
                b[i] = i < 3 ? (uint8_t) "PNG"[i] : (uint8_t) i;
        *ret = b;
        *ret_len = fb->short_read && size > 0 ? size - 1 : size;
        return 0;
}

static char *fake_base64(uint64_t size) {
        uint8_t *b = malloc(size + 1);
        char *e;

        assert_non_null(b);
        for (uint64_t i = 0; i < size; i++)
                b[i] = i < 3 ? (uint8_t) "PNG"[i] : (uint8_t) i;
        e = base64_encode(b, size);
        free(b);
        assert_non_null(e);
        return e;
}

static json_object *artifact(const char *path, const char *mime, uint64_t size) {
        json_object *a = json_object_new_object();
        char url[128];

        json_object_object_add(a, "path", json_object_new_string(path));
        if (mime)
                json_object_object_add(a, "mime_type", json_object_new_string(mime));
        json_object_object_add(a, "size", json_object_new_uint64(size));
        json_object_object_add(a, "sha256", json_object_new_string(
                "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
        snprintf(url, sizeof url, "/v1/executions/e1/artifacts/%s?sig=abc", path);
        json_object_object_add(a, "url", json_object_new_string(url));
        return a;
}

static json_object *record_with(const char *status, json_object *artifacts) {
        json_object *r = json_object_new_object();

        json_object_object_add(r, "execution_id", json_object_new_string("e1"));
        json_object_object_add(r, "status", json_object_new_string(status));
        json_object_object_add(r, "exit_code", json_object_new_int(streq(status, "success") ? 0 : 2));
        json_object_object_add(r, "summary", json_object_new_string("the summary"));
        if (artifacts)
                json_object_object_add(r, "artifacts", artifacts);
        return r;
}

static void test_execution_success(_unused_ void **state) {
        json_object *record = record_with("success", NULL), *o;
        FakeBlobs fb = {};

        o = mcp_execution_result(record, "http://h:1", fake_read_blob, &fb);
        assert_non_null(o);
        assert_bool_at(o, "isError", false);
        assert_int_equal(json_object_array_length(at(o, "content")), 1);
        assert_str_at(o, "content.0.type", "text");
        assert_str_at(o, "content.0.text", "the summary");
        /* structuredContent is the record itself, and the caller keeps its reference. */
        assert_ptr_equal(at(o, "structuredContent"), record);
        json_object_put(o);
        assert_str_at(record, "status", "success");
        json_object_put(record);
        assert_int_equal(fb.calls, 0);
}

static const struct {
        const char *status;
        bool is_error;
} status_rows[] = {
        { "success", false },
        { "failed", true },
        { "timeout", true },
        { "oom", true },
        { "error", true },
        { "cancelled", true },
        { "Success", true },
};

static void test_execution_status(_unused_ void **state) {
        for (size_t i = 0; i < ELEMENTSOF(status_rows); i++) {
                json_object *record = record_with(status_rows[i].status, NULL);
                json_object *o = mcp_execution_result(record, NULL, NULL, NULL);

                assert_non_null(o);
                assert_bool_at(o, "isError", status_rows[i].is_error);
                assert_str_at(o, "content.0.text", "the summary");
                json_object_put(o);
                json_object_put(record);
        }
        /* No status at all: an error. */
        {
                json_object *record = parse("{\"summary\":\"s\"}"), *o = mcp_execution_result(record, NULL, NULL, NULL);

                assert_bool_at(o, "isError", true);
                json_object_put(o);
                json_object_put(record);
        }
}

static const struct {
        const char *record;
        const char *const want[4];       /* parts of the text, in order */
        const char *absent;              /* not in the text */
} fallback_rows[] = {
        { "{\"status\":\"failed\",\"exit_code\":3}", { "status: failed\n", "exit code: 3\n" }, "stdout" },
        { "{\"status\":\"success\",\"exit_code\":0,\"stdout\":\"42\\n\"}", { "status: success", "exit code: 0", "stdout:\n42\n" },
          "stderr" },
        { "{\"status\":\"error\",\"error_type\":\"compile_error\",\"error_message\":\"it broke\",\"stderr\":\"x.c:1: error\"}",
          { "status: error (compile_error)", "exit code: -1", "it broke\n", "stderr:\nx.c:1: error" }, "stdout" },
        { "{\"status\":\"timeout\",\"exit_code\":137,\"stdout\":\"\",\"stderr\":\"\"}", { "status: timeout", "exit code: 137" },
          "std" },
        { "{}", { "status: unknown", "exit code: -1" }, NULL },
        { "{\"status\":7,\"exit_code\":\"1\"}", { "status: unknown", "exit code: -1" }, NULL },
};

static void test_execution_fallback(_unused_ void **state) {
        for (size_t i = 0; i < ELEMENTSOF(fallback_rows); i++) {
                json_object *record = parse(fallback_rows[i].record), *o = mcp_execution_result(record, NULL, NULL, NULL);
                const char *text, *p;

                assert_non_null(o);
                assert_str_at(o, "content.0.type", "text");
                text = str_at(o, "content.0.text");
                assert_non_null(text);
                p = text;
                for (size_t k = 0; k < ELEMENTSOF(fallback_rows[i].want) && fallback_rows[i].want[k]; k++) {
                        const char *q = strstr(p, fallback_rows[i].want[k]);

                        if (!q) {
                                print_error("row %zu: '%s' not in (the rest of) '%s'\n", i, fallback_rows[i].want[k], text);
                                fail();
                        }
                        p = q + strlen(fallback_rows[i].want[k]);
                }
                if (fallback_rows[i].absent && strstr(text, fallback_rows[i].absent)) {
                        print_error("row %zu: '%s' in '%s'\n", i, fallback_rows[i].absent, text);
                        fail();
                }
                json_object_put(o);
                json_object_put(record);
        }
}

/* One artifact through the result: what its content item is. */
typedef enum { WANT_IMAGE, WANT_LINK } Want;

typedef struct ArtifactRow {
        const char *name;
        const char *mime;
        uint64_t size;
        FakeBlobs blobs;
        bool with_reader;
        Want want;
        bool read;               /* the reader was called */
} ArtifactRow;

static const ArtifactRow artifact_rows[] = {
        { "png", "image/png", 100, {}, true, WANT_IMAGE, true },
        { "jpeg", "image/jpeg", 10, {}, true, WANT_IMAGE, true },
        { "svg", "image/svg+xml", 5, {}, true, WANT_IMAGE, true },
        { "gif", "image/gif", 5, {}, true, WANT_IMAGE, true },
        { "webp", "image/webp", 5, {}, true, WANT_IMAGE, true },
        { "empty png", "image/png", 0, {}, true, WANT_IMAGE, true },
        { "png of MCP_IMAGE_MAX", "image/png", MCP_IMAGE_MAX, {}, true, WANT_IMAGE, true },
        { "png over MCP_IMAGE_MAX", "image/png", MCP_IMAGE_MAX + 1, {}, true, WANT_LINK, false },
        { "png, the reader fails", "image/png", 100, { .fail = -EIO }, true, WANT_LINK, true },
        { "png, a short read", "image/png", 100, { .short_read = true }, true, WANT_LINK, true },
        { "png, no reader", "image/png", 100, {}, false, WANT_LINK, false },
        { "csv", "text/csv", 100, {}, true, WANT_LINK, false },
        { "pdf", "application/pdf", 100, {}, true, WANT_LINK, false },
        { "bmp is not inlined", "image/bmp", 100, {}, true, WANT_LINK, false },
        { "no type", NULL, 100, {}, true, WANT_LINK, false },
};

static void check_link(json_object *c, const char *path, const char *mime, uint64_t size) {
        _cleanup_free_ char *uri = NULL;

        assert_true(asprintf(&uri, "http://h:1/v1/executions/e1/artifacts/%s?sig=abc", path) > 0);
        assert_str_at(c, "type", "resource_link");
        assert_str_at(c, "uri", uri);
        assert_str_at(c, "name", path);
        if (mime)
                assert_str_at(c, "mimeType", mime);
        else
                assert_null(at(c, "mimeType"));
        assert_int_equal(json_object_get_uint64(at(c, "size")), size);
        assert_null(at(c, "data"));
}

static void test_execution_artifacts(_unused_ void **state) {
        for (size_t i = 0; i < ELEMENTSOF(artifact_rows); i++) {
                const ArtifactRow *r = &artifact_rows[i];
                json_object *arts = json_object_new_array(), *record, *o, *c;
                FakeBlobs fb = r->blobs;
                char path[64];

                snprintf(path, sizeof path, "out/a%zu", i);
                json_object_array_add(arts, artifact(path, r->mime, r->size));
                record = record_with("success", arts);
                o = mcp_execution_result(record, "http://h:1", r->with_reader ? fake_read_blob : NULL, &fb);
                assert_non_null(o);
                assert_int_equal(json_object_array_length(at(o, "content")), 2);
                assert_str_at(o, "content.0.text", "the summary");
                c = at(o, "content.1");
                if ((fb.calls > 0) != r->read) {
                        print_error("row '%s': reader called %u times\n", r->name, fb.calls);
                        fail();
                }
                if (fb.calls > 0)
                        assert_int_equal(fb.last_size, r->size);
                if (r->want == WANT_IMAGE) {
                        _cleanup_free_ char *b64 = fake_base64(r->size);

                        if (!str_at(c, "type") || !streq(str_at(c, "type"), "image")) {
                                print_error("row '%s': not an image: %s\n", r->name, json_object_to_json_string(c));
                                fail();
                        }
                        assert_str_at(c, "mimeType", r->mime);
                        assert_str_at(c, "data", b64);
                        assert_null(at(c, "uri"));
                } else {
                        if (!str_at(c, "type") || !streq(str_at(c, "type"), "resource_link")) {
                                print_error("row '%s': not a link\n", r->name);
                                fail();
                        }
                        check_link(c, path, r->mime, r->size);
                }
                assert_ptr_equal(at(o, "structuredContent"), record);
                json_object_put(o);
                json_object_put(record);
        }
}

/* Images past MCP_IMAGES_TOTAL_MAX in all are links; a later smaller one that fits is still inlined. */
static void test_execution_images_total(_unused_ void **state) {
        json_object *arts = json_object_new_array(), *record, *o;
        FakeBlobs fb = {};
        size_t n = MCP_IMAGES_TOTAL_MAX / MCP_IMAGE_MAX;      /* this many full-size images fit */

        for (size_t i = 0; i < n + 1; i++) {
                char path[32];

                snprintf(path, sizeof path, "big%zu.png", i);
                json_object_array_add(arts, artifact(path, "image/png", MCP_IMAGE_MAX));
        }
        json_object_array_add(arts, artifact("small.png", "image/png", 0));
        /* An artifact without a path is skipped. */
        json_object_array_add(arts, parse("{\"mime_type\":\"text/plain\",\"size\":1}"));
        json_object_array_add(arts, artifact("data.csv", "text/csv", 7));
        record = record_with("success", arts);
        o = mcp_execution_result(record, "http://h:1", fake_read_blob, &fb);
        assert_non_null(o);
        assert_int_equal(json_object_array_length(at(o, "content")), 1 + n + 1 + 1 + 1);
        for (size_t i = 0; i < n; i++) {
                char p[32];

                snprintf(p, sizeof p, "content.%zu.type", i + 1);
                assert_str_at(o, p, "image");
        }
        {
                char p[32];

                snprintf(p, sizeof p, "content.%zu", n + 1);
                check_link(at(o, p), "big4.png", "image/png", MCP_IMAGE_MAX);
                snprintf(p, sizeof p, "content.%zu.type", n + 2);
                assert_str_at(o, p, "image");
                snprintf(p, sizeof p, "content.%zu", n + 3);
                check_link(at(o, p), "data.csv", "text/csv", 7);
        }
        /* Read n full ones and the small one, not the one past the total. */
        assert_int_equal(fb.calls, n + 1);
        json_object_put(o);
        json_object_put(record);
}

/* More than MCP_CONTENT_MAX artifacts: the content stops at MCP_CONTENT_MAX items, summary included. */
static void test_execution_content_max(_unused_ void **state) {
        json_object *arts = json_object_new_array(), *record, *o;

        for (size_t i = 0; i < MCP_CONTENT_MAX + 10; i++) {
                char path[32];

                snprintf(path, sizeof path, "f%zu.txt", i);
                json_object_array_add(arts, artifact(path, "text/plain", i));
        }
        record = record_with("failed", arts);
        o = mcp_execution_result(record, "", NULL, NULL);
        assert_non_null(o);
        assert_int_equal(json_object_array_length(at(o, "content")), MCP_CONTENT_MAX);
        assert_str_at(o, "content.0.text", "the summary");
        assert_str_at(o, "content.1.name", "f0.txt");
        assert_str_at(o, "content.1.uri", "/v1/executions/e1/artifacts/f0.txt?sig=abc");
        assert_str_at(o, "content.63.name", "f62.txt");
        assert_bool_at(o, "isError", true);
        /* The record keeps all of them. */
        assert_int_equal(json_object_array_length(at(o, "structuredContent.artifacts")), MCP_CONTENT_MAX + 10);
        json_object_put(o);
        json_object_put(record);

        /* An artifact without a URL: a link nonetheless, to nowhere. */
        record = record_with("success", parse("[{\"path\":\"x.bin\",\"size\":3}]"));
        o = mcp_execution_result(record, "http://h:1", NULL, NULL);
        assert_str_at(o, "content.1.type", "resource_link");
        assert_str_at(o, "content.1.uri", "about:blank");
        assert_str_at(o, "content.1.name", "x.bin");
        json_object_put(o);
        json_object_put(record);

        /* Artifacts not an array: only the summary. */
        record = record_with("success", json_object_new_string("nope"));
        o = mcp_execution_result(record, "http://h:1", NULL, NULL);
        assert_int_equal(json_object_array_length(at(o, "content")), 1);
        json_object_put(o);
        json_object_put(record);
}

/* ---- text, pending, languages ----------------------------------------------------------------- */

static void test_text_result(_unused_ void **state) {
        json_object *o = mcp_text_result("no such execution", true);

        assert_json_equal(o, "{\"content\":[{\"type\":\"text\",\"text\":\"no such execution\"}],\"isError\":true}");
        json_object_put(o);
        o = mcp_text_result("", false);
        assert_json_equal(o, "{\"content\":[{\"type\":\"text\",\"text\":\"\"}],\"isError\":false}");
        json_object_put(o);
}

static void test_pending_result(_unused_ void **state) {
        static const struct {
                const char *record, *want;
        } rows[] = {
                { "{\"execution_id\":\"e7\",\"status\":\"running\"}", "execution e7 is running" },
                { "{\"execution_id\":\"e8\",\"status\":\"queued\"}", "execution e8 is queued" },
                { "{\"execution_id\":\"e9\"}", "execution e9 is pending" },
                { "{}", "execution ? is pending" },
        };

        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                json_object *record = parse(rows[i].record), *o;
                const char *text;

                json_object_get(record);
                o = mcp_pending_result(record);         /* takes one reference */
                assert_non_null(o);
                assert_bool_at(o, "isError", false);
                assert_int_equal(json_object_array_length(at(o, "content")), 1);
                assert_str_at(o, "content.0.type", "text");
                text = str_at(o, "content.0.text");
                assert_non_null(text);
                if (!strstr(text, rows[i].want) || !strstr(text, "get_execution")) {
                        print_error("row %zu: '%s'\n", i, text);
                        fail();
                }
                assert_ptr_equal(at(o, "structuredContent"), record);
                json_object_put(o);
                json_object_put(record);
        }
        assert_null(mcp_pending_result(NULL));
}

static void test_languages_result(_unused_ void **state) {
        static const char body[] =
                "{\"languages\":["
                "{\"name\":\"python\",\"version\":\"3.11.2\",\"aliases\":[\"py\",\"python3\"],\"available\":true,"
                " \"environments\":[{\"name\":\"python-data\"},{\"name\":\"python-web\"}]},"
                "{\"name\":\"bash\",\"version\":\"5.2\",\"aliases\":[],\"available\":true,\"environments\":[]},"
                "{\"name\":\"rust\",\"version\":\"1.63\",\"available\":false,\"reason\":\"rustc not installed\"},"
                "{\"name\":\"go\"},"
                "{\"name\":\"odd\",\"aliases\":[null,7,\"o\"],\"environments\":[{},\"x\"]}"
                "]}";
        static const char want[] =
                "python 3.11.2; aliases: py python3; environments: python-data python-web\n"
                "bash 5.2\n"
                "rust 1.63 (unavailable: rustc not installed)\n"
                "go\n"
                "odd; aliases: ? ? o; environments: ? ?\n";
        json_object *languages = parse(body), *o;

        json_object_get(languages);
        o = mcp_languages_result(languages);    /* takes one reference */
        assert_non_null(o);
        assert_bool_at(o, "isError", false);
        assert_str_at(o, "content.0.type", "text");
        assert_str_at(o, "content.0.text", want);
        assert_ptr_equal(at(o, "structuredContent"), languages);
        json_object_put(o);
        json_object_put(languages);

        /* No languages: an empty text, still a result. */
        o = mcp_languages_result(parse("{\"languages\":[]}"));
        assert_non_null(o);
        assert_str_at(o, "content.0.text", "");
        json_object_put(o);
        o = mcp_languages_result(parse("{}"));
        assert_non_null(o);
        assert_str_at(o, "content.0.text", "");
        assert_non_null(at(o, "structuredContent"));
        json_object_put(o);

        assert_null(mcp_languages_result(NULL));
}

static const struct {
        const char *mime;
        bool image;
} mime_rows[] = {
        { "image/png", true },
        { "image/jpeg", true },
        { "image/svg+xml", true },
        { "image/gif", true },
        { "image/webp", true },
        { "image/bmp", false },
        { "image/tiff", false },
        { "image/PNG", false },
        { "image/png; charset=x", false },
        { "image/", false },
        { "image", false },
        { "text/plain", false },
        { "application/pdf", false },
        { "", false },
        { NULL, false },
};

static void test_mime_is_image(_unused_ void **state) {
        for (size_t i = 0; i < ELEMENTSOF(mime_rows); i++)
                if (mcp_mime_is_image(mime_rows[i].mime) != mime_rows[i].image) {
                        print_error("'%s': want %s\n", strna(mime_rows[i].mime), mime_rows[i].image ? "image" : "not");
                        fail();
                }
}

/* ---- the session file tools ---------------------------------------------------------------------- */

static const struct {
        const char *tool, *args;
        int want;                /* 0 or -EINVAL */
        const char *session_id, *path, *data;   /* when 0 */
        size_t len;
        const char *error;       /* a part of the message, when -EINVAL */
} file_args_rows[] = {
        { "read_file", "{\"session_id\":\"s1\",\"path\":\"a/b.txt\"}", 0, "s1", "a/b.txt", NULL, 0, NULL },
        { "list_files", "{\"session_id\":\"s1\"}", 0, "s1", NULL, NULL, 0, NULL },
        { "list_files", "{\"session_id\":\"s1\",\"path\":\"out\"}", 0, "s1", "out", NULL, 0, NULL },
        { "write_file", "{\"session_id\":\"s1\",\"path\":\"x\",\"content\":\"hi\\u0000there\"}", 0, "s1", "x", "hi\0there", 8, NULL },
        { "write_file", "{\"session_id\":\"s1\",\"path\":\"x\",\"content_base64\":\"AAEC/w==\"}", 0, "s1", "x", "\x00\x01\x02\xff", 4, NULL },
        { "write_file", "{\"session_id\":\"s1\",\"path\":\"x\",\"content\":\"\"}", 0, "s1", "x", "", 0, NULL },
        { "read_file", "{\"session_id\":\"s1\"}", -EINVAL, NULL, NULL, NULL, 0, "path is required" },
        { "read_file", "{\"path\":\"x\"}", -EINVAL, NULL, NULL, NULL, 0, "session_id is required" },
        { "read_file", "{\"session_id\":\"\",\"path\":\"x\"}", -EINVAL, NULL, NULL, NULL, 0, "session_id is required" },
        { "read_file", "{\"session_id\":7,\"path\":\"x\"}", -EINVAL, NULL, NULL, NULL, 0, "'session_id' must be a string" },
        { "read_file", "{\"session_id\":\"s\",\"path\":[]}", -EINVAL, NULL, NULL, NULL, 0, "'path' must be a string" },
        { "read_file", "{\"session_id\":\"s\",\"path\":\"x\",\"content\":\"c\"}", -EINVAL, NULL, NULL, NULL, 0, "unknown argument 'content'" },
        { "list_files", "{\"session_id\":\"s\",\"mode\":1}", -EINVAL, NULL, NULL, NULL, 0, "unknown argument 'mode'" },
        { "write_file", "{\"session_id\":\"s\",\"path\":\"x\"}", -EINVAL, NULL, NULL, NULL, 0, "content or content_base64" },
        { "write_file", "{\"session_id\":\"s\",\"path\":\"x\",\"content\":\"a\",\"content_base64\":\"YQ==\"}", -EINVAL, NULL, NULL, NULL, 0, "content or content_base64" },
        { "write_file", "{\"session_id\":\"s\",\"path\":\"x\",\"content_base64\":\"!!\"}", -EINVAL, NULL, NULL, NULL, 0, "not base64" },
        { "write_file", "{\"session_id\":\"s\",\"path\":\"x\",\"content\":5}", -EINVAL, NULL, NULL, NULL, 0, "'content' must be a string" },
        { "read_file", "[]", -EINVAL, NULL, NULL, NULL, 0, "must be an object" },
};

static void test_file_args(_unused_ void **state) {
        for (size_t i = 0; i < ELEMENTSOF(file_args_rows); i++) {
                json_object *args = parse(file_args_rows[i].args);
                McpFileArgs a = {};
                char buf[256];
                const char *error = NULL;
                int r = mcp_file_args(file_args_rows[i].tool, args, &a, buf, sizeof(buf), &error);

                if (r != file_args_rows[i].want) {
                        print_error("row %zu (%s %s): %d, want %d (%s)\n", i, file_args_rows[i].tool, file_args_rows[i].args,
                                    r, file_args_rows[i].want, strna(error));
                        fail();
                }
                if (r == 0) {
                        assert_string_equal(a.session_id, file_args_rows[i].session_id);
                        if (file_args_rows[i].path)
                                assert_string_equal(a.path, file_args_rows[i].path);
                        else
                                assert_null(a.path);
                        if (file_args_rows[i].data) {
                                assert_int_equal(a.len, file_args_rows[i].len);
                                assert_memory_equal(a.data, file_args_rows[i].data, a.len);
                        } else
                                assert_null(a.data);
                } else if (!error || !strstr(error, file_args_rows[i].error)) {
                        print_error("row %zu: message '%s' lacks '%s'\n", i, strna(error), file_args_rows[i].error);
                        fail();
                }
                mcp_file_args_done(&a);
                json_object_put(args);
        }
}

static void test_file_result(_unused_ void **state) {
        static const uint8_t png[] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };
        static const uint8_t bin[] = { 0, 1, 2, 0xff };
        static const uint8_t bad_utf8[] = { 'a', 0xc3, 0x28 };
        json_object *o;

        o = mcp_file_result("http://h/x", "text/plain", (const uint8_t *) "héllo\n", strlen("héllo\n"));
        assert_str_at(o, "content.0.type", "text");
        assert_str_at(o, "content.0.text", "héllo\n");
        assert_bool_at(o, "isError", false);
        json_object_put(o);

        o = mcp_file_result("http://h/p.png", "image/png", png, sizeof(png));
        assert_str_at(o, "content.0.type", "image");
        assert_str_at(o, "content.0.mimeType", "image/png");
        assert_str_at(o, "content.0.data", "iVBORw0KGgo=");
        json_object_put(o);

        /* Bytes: NUL, invalid UTF-8, and a "text" type that is not text all become a base64 resource. */
        o = mcp_file_result("http://h/b", NULL, bin, sizeof(bin));
        assert_str_at(o, "content.0.type", "resource");
        assert_str_at(o, "content.0.resource.uri", "http://h/b");
        assert_str_at(o, "content.0.resource.mimeType", "application/octet-stream");
        assert_str_at(o, "content.0.resource.blob", "AAEC/w==");
        json_object_put(o);
        o = mcp_file_result("http://h/t", "text/plain", bad_utf8, sizeof(bad_utf8));
        assert_str_at(o, "content.0.type", "resource");
        assert_str_at(o, "content.0.resource.mimeType", "text/plain");
        json_object_put(o);
        o = mcp_file_result("http://h/e", "text/plain", (const uint8_t *) "", 0);
        assert_str_at(o, "content.0.type", "text");
        assert_str_at(o, "content.0.text", "");
        json_object_put(o);
}

static void test_listing_result(_unused_ void **state) {
        json_object *l = parse("{\"path\":\"out\",\"entries\":[{\"name\":\"a.txt\",\"type\":\"file\",\"size\":3},"
                               "{\"name\":\"d\",\"type\":\"directory\",\"size\":0},"
                               "{\"name\":\"leak\",\"type\":\"symlink\",\"size\":11},"
                               "{\"name\":\"fifo\",\"type\":\"other\",\"size\":0}],\"truncated\":true}");
        json_object *o = mcp_listing_result(l);

        assert_non_null(o);
        assert_str_at(o, "content.0.text", "out/\n  a.txt  3 bytes\n  d/\n  leak (symlink, not followed)\n"
                                           "  fifo (not a regular file)\n  (more entries not listed)\n");
        assert_str_at(o, "structuredContent.path", "out");
        assert_bool_at(o, "isError", false);
        json_object_put(o);

        o = mcp_listing_result(parse("{\"path\":\"\",\"entries\":[],\"truncated\":false}"));
        assert_str_at(o, "content.0.text", "./\n");
        json_object_put(o);
        assert_null(mcp_listing_result(NULL));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_classify),
                cmocka_unit_test(test_responses),
                cmocka_unit_test(test_negotiate_version),
                cmocka_unit_test(test_initialize),
                cmocka_unit_test(test_tools_list),
                cmocka_unit_test(test_run_code),
                cmocka_unit_test(test_run_code_files_max),
                cmocka_unit_test(test_execution_success),
                cmocka_unit_test(test_execution_status),
                cmocka_unit_test(test_execution_fallback),
                cmocka_unit_test(test_execution_artifacts),
                cmocka_unit_test(test_execution_images_total),
                cmocka_unit_test(test_execution_content_max),
                cmocka_unit_test(test_text_result),
                cmocka_unit_test(test_pending_result),
                cmocka_unit_test(test_languages_result),
                cmocka_unit_test(test_mime_is_image),
                cmocka_unit_test(test_file_args),
                cmocka_unit_test(test_file_result),
                cmocka_unit_test(test_listing_result),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

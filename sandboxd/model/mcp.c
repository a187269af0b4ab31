/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "mcp.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "utf8.h"
#include "util.h"

static const char *const protocol_versions[] = { MCP_PROTOCOL_LATEST, "2025-03-26", "2024-11-05" };

McpKind mcp_classify(json_object *msg, McpMessage *ret, const char **ret_error) {
        json_object *v, *id = NULL, *method = NULL, *params = NULL;
        bool has_id;

        *ret = (McpMessage) { .kind = MCP_KIND_INVALID };
        *ret_error = NULL;
        if (!json_object_is_type(msg, json_type_object)) {
                *ret_error = json_object_is_type(msg, json_type_array) ? "batches are not supported"
                                                                        : "a message is a JSON object";
                return MCP_KIND_INVALID;
        }
        if (!json_object_object_get_ex(msg, "jsonrpc", &v) || !json_object_is_type(v, json_type_string) ||
            !streq(json_object_get_string(v), "2.0")) {
                *ret_error = "\"jsonrpc\" must be \"2.0\"";
                return MCP_KIND_INVALID;
        }
        has_id = json_object_object_get_ex(msg, "id", &id);
        if (has_id && !json_object_is_type(id, json_type_string) && !json_object_is_type(id, json_type_int)) {
                *ret_error = "\"id\" must be a string or an integer";
                return MCP_KIND_INVALID;
        }
        if (json_object_object_get_ex(msg, "method", &method)) {
                if (!json_object_is_type(method, json_type_string) || json_object_get_string_len(method) == 0) {
                        *ret_error = "\"method\" must be a non-empty string";
                        return MCP_KIND_INVALID;
                }
                /* A request or a notification never carries a response's members: which one it is
                 * would be a guess (JSON-RPC 2.0 section 4 and 5). */
                if (json_object_object_get_ex(msg, "result", NULL) || json_object_object_get_ex(msg, "error", NULL)) {
                        *ret_error = "a message has either \"method\" or \"result\"/\"error\", not both";
                        return MCP_KIND_INVALID;
                }
                if (json_object_object_get_ex(msg, "params", &params) && params &&
                    !json_object_is_type(params, json_type_object)) {
                        *ret_error = "\"params\" must be an object";
                        /* Answerable: the id is known. */
                        ret->id = has_id ? id : NULL;
                        return MCP_KIND_INVALID;
                }
                *ret = (McpMessage) {
                        .kind = has_id ? MCP_KIND_REQUEST : MCP_KIND_NOTIFICATION,
                        .method = json_object_get_string(method),
                        .id = has_id ? id : NULL,
                        .params = params,
                };
                return ret->kind;
        }
        if (has_id && (json_object_object_get_ex(msg, "result", NULL) || json_object_object_get_ex(msg, "error", NULL))) {
                ret->kind = MCP_KIND_RESPONSE;
                return MCP_KIND_RESPONSE;
        }
        *ret_error = "neither a request, a notification nor a response";
        return MCP_KIND_INVALID;
}

json_object *mcp_response(json_object *id, json_object *result) {
        json_object *o = json_object_new_object();

        if (!o || !result) {
                json_object_put(o);
                json_object_put(result);
                return NULL;
        }
        json_object_object_add(o, "jsonrpc", json_object_new_string("2.0"));
        json_object_object_add(o, "id", json_object_get(id));
        json_object_object_add(o, "result", result);
        return o;
}

json_object *mcp_error_response(json_object *id, int code, const char *message) {
        json_object *o = json_object_new_object(), *e = json_object_new_object();

        if (!o || !e) {
                json_object_put(o);
                json_object_put(e);
                return NULL;
        }
        json_object_object_add(e, "code", json_object_new_int(code));
        json_object_object_add(e, "message", json_object_new_string(message));
        json_object_object_add(o, "jsonrpc", json_object_new_string("2.0"));
        json_object_object_add(o, "id", json_object_get(id));
        json_object_object_add(o, "error", e);
        return o;
}

const char *mcp_negotiate_version(const char *requested) {
        for (size_t i = 0; requested && i < ELEMENTSOF(protocol_versions); i++)
                if (streq(requested, protocol_versions[i]))
                        return protocol_versions[i];
        return MCP_PROTOCOL_LATEST;
}

json_object *mcp_initialize_result(json_object *params, const char *server_version) {
        json_object *o = json_object_new_object(), *caps = json_object_new_object(), *tools = json_object_new_object(),
                    *info = json_object_new_object(), *v = NULL;
        const char *requested = NULL;

        if (!o || !caps || !tools || !info) {
                json_object_put(o);
                json_object_put(caps);
                json_object_put(tools);
                json_object_put(info);
                return NULL;
        }
        if (params && json_object_object_get_ex(params, "protocolVersion", &v) && json_object_is_type(v, json_type_string))
                requested = json_object_get_string(v);
        json_object_object_add(o, "protocolVersion", json_object_new_string(mcp_negotiate_version(requested)));
        json_object_object_add(tools, "listChanged", json_object_new_boolean(false));
        json_object_object_add(caps, "tools", tools);
        json_object_object_add(o, "capabilities", caps);
        json_object_object_add(info, "name", json_object_new_string("sandboxd"));
        json_object_object_add(info, "title", json_object_new_string("sandboxd: run untrusted code in a sandbox"));
        json_object_object_add(info, "version", json_object_new_string(server_version));
        json_object_object_add(o, "serverInfo", info);
        json_object_object_add(o, "instructions", json_object_new_string(
                "Run code in an isolated, resource-limited Linux sandbox with run_code: each call runs one "
                "program in a fresh sandbox (or in a session's persistent workspace with session_id) and "
                "returns a summary of what happened: the first lines of output and the files written to "
                "/workspace/output on success, or the reason and the error output on failure. Files passed "
                "in 'files' appear under /workspace/input. Network access is off unless allow_net names the "
                "hosts. list_languages tells which languages and environments (library sets such as "
                "python-data: pandas, numpy, matplotlib, scikit-learn) this server has."));
        return o;
}

/* The tools. Their input schemas are JSON Schema (draft 2020-12 subset the MCP hosts understand). */
typedef struct McpTool {
        const char *name, *title, *description, *schema;
} McpTool;

static const McpTool tools[] = {
        { "run_code", "Run code in a sandbox",
          "Run a program in an isolated sandbox and return its result: a summary (on success the first "
          "20 lines of stdout and the files written to /workspace/output; on failure the reason, the exit "
          "code and stderr), images the program wrote (PNG, JPEG, SVG) as images, other output files as "
          "links, and the full record as structured content. A failed program is a normal result with "
          "isError set. The program's working directory is /workspace; input files are in "
          "/workspace/input, output files go to /workspace/output.",
          "{\"type\":\"object\",\"properties\":{"
          "\"language\":{\"type\":\"string\",\"description\":\"A language name or alias from list_languages, e.g. python, node, bash, go, rust, c, cpp, java\"},"
          "\"code\":{\"type\":\"string\",\"description\":\"The program's source\"},"
          "\"session_id\":{\"type\":\"string\",\"description\":\"Run in this session's persistent workspace (created on first use): files and installed packages stay between calls\"},"
          "\"environment\":{\"type\":\"string\",\"description\":\"A library environment of the language, e.g. python-data (numpy, pandas, scipy, matplotlib, scikit-learn, ...)\"},"
          "\"stdin\":{\"type\":\"string\",\"description\":\"The program's standard input\"},"
          "\"files\":{\"type\":\"array\",\"maxItems\":16,\"description\":\"Input files, put into /workspace/input/<path> before the program starts\","
          "\"items\":{\"type\":\"object\",\"properties\":{"
          "\"path\":{\"type\":\"string\",\"description\":\"A relative path below /workspace/input\"},"
          "\"content\":{\"type\":\"string\",\"description\":\"The file's text\"},"
          "\"content_base64\":{\"type\":\"string\",\"description\":\"The file's bytes, base64\"}},"
          "\"required\":[\"path\"],\"additionalProperties\":false}},"
          "\"timeout_ms\":{\"type\":\"integer\",\"minimum\":1,\"description\":\"Wall-clock limit in milliseconds\"},"
          "\"memory_mb\":{\"type\":\"integer\",\"minimum\":16,\"description\":\"Memory limit in MiB\"},"
          "\"allow_net\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"description\":\"Host names (or *.suffix, optionally :port) the program may reach through the server's egress proxy, within the server's allowlist; absent: no network\"}"
          "},\"required\":[\"language\",\"code\"],\"additionalProperties\":false}" },
        { "list_languages", "List languages",
          "List the languages this server runs, with their aliases, versions, whether they compile, "
          "whether they are available, and their library environments with package versions.",
          "{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false}" },
        { "get_execution", "Get an execution",
          "Get an execution's result by its execution_id (as run_code returned it): the same summary, "
          "images, links and record as run_code, or its current status while it still runs.",
          "{\"type\":\"object\",\"properties\":{"
          "\"execution_id\":{\"type\":\"string\",\"description\":\"The execution's id\"}},"
          "\"required\":[\"execution_id\"],\"additionalProperties\":false}" },
        { "read_file", "Read a file of a session",
          "Read a file from a session's workspace between runs (the session is made by run_code with "
          "session_id). Paths are relative to /workspace, e.g. output/result.csv. Text comes back as text, "
          "an image as an image, other bytes as a base64 resource; a directory as its listing. Links are "
          "never followed. Refused while a run of the session is queued or running.",
          "{\"type\":\"object\",\"properties\":{"
          "\"session_id\":{\"type\":\"string\",\"description\":\"The session\"},"
          "\"path\":{\"type\":\"string\",\"description\":\"A relative path below /workspace\"}},"
          "\"required\":[\"session_id\",\"path\"],\"additionalProperties\":false}" },
        { "write_file", "Write a file into a session",
          "Write a file into a session's workspace for its next run (its directory must exist; an existing "
          "file is replaced). Paths are relative to /workspace. Refused while a run of the session is queued "
          "or running.",
          "{\"type\":\"object\",\"properties\":{"
          "\"session_id\":{\"type\":\"string\",\"description\":\"The session\"},"
          "\"path\":{\"type\":\"string\",\"description\":\"A relative path below /workspace\"},"
          "\"content\":{\"type\":\"string\",\"description\":\"The file's text\"},"
          "\"content_base64\":{\"type\":\"string\",\"description\":\"The file's bytes, base64 (instead of content)\"}},"
          "\"required\":[\"session_id\",\"path\"],\"additionalProperties\":false}" },
        { "list_files", "List a session's files",
          "List a directory of a session's workspace (default: /workspace itself): names, types (file, "
          "directory, symlink, other) and sizes.",
          "{\"type\":\"object\",\"properties\":{"
          "\"session_id\":{\"type\":\"string\",\"description\":\"The session\"},"
          "\"path\":{\"type\":\"string\",\"description\":\"A directory below /workspace (default: the workspace)\"}},"
          "\"required\":[\"session_id\"],\"additionalProperties\":false}" },
};

json_object *mcp_tools_list(void) {
        json_object *o = json_object_new_object(), *a = json_object_new_array();

        if (!o || !a)
                goto oom;
        for (size_t i = 0; i < ELEMENTSOF(tools); i++) {
                json_object *t = json_object_new_object(), *schema = json_tokener_parse(tools[i].schema);

                if (!t || !schema) {
                        json_object_put(t);
                        json_object_put(schema);
                        goto oom;
                }
                json_object_object_add(t, "name", json_object_new_string(tools[i].name));
                json_object_object_add(t, "title", json_object_new_string(tools[i].title));
                json_object_object_add(t, "description", json_object_new_string(tools[i].description));
                json_object_object_add(t, "inputSchema", schema);
                json_object_array_add(a, t);
        }
        json_object_object_add(o, "tools", a);
        return o;
oom:
        json_object_put(o);
        json_object_put(a);
        return NULL;
}

bool mcp_tool_known(const char *name) {
        for (size_t i = 0; name && i < ELEMENTSOF(tools); i++)
                if (streq(name, tools[i].name))
                        return true;
        return false;
}

/* ---- run_code -------------------------------------------------------------------------------- */

_printf_(4, 5) static int fail_arg(char *buf, size_t size, const char **ret_error, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(buf, size, fmt, ap);
        va_end(ap);
        *ret_error = buf;
        return -EINVAL;
}

static int copy_string(json_object *args, json_object *req, const char *from, const char *to, bool required,
                       char *buf, size_t size, const char **ret_error) {
        json_object *v;

        if (!json_object_object_get_ex(args, from, &v) || !v) {
                if (required)
                        return fail_arg(buf, size, ret_error, "missing argument '%s'", from);
                return 0;
        }
        if (!json_object_is_type(v, json_type_string))
                return fail_arg(buf, size, ret_error, "argument '%s' must be a string", from);
        json_object_object_add(req, to, json_object_get(v));
        return 0;
}

static int convert_files(json_object *v, json_object **ret, char *buf, size_t size, const char **ret_error) {
        json_object *files;

        if (!json_object_is_type(v, json_type_array))
                return fail_arg(buf, size, ret_error, "argument '%s' must be an array", "files");
        if (json_object_array_length(v) > MCP_FILES_MAX)
                return fail_arg(buf, size, ret_error, "argument '%s' has more than %d entries", "files",
                                MCP_FILES_MAX);
        files = json_object_new_array();
        if (!files)
                return -ENOMEM;
        for (size_t i = 0; i < json_object_array_length(v); i++) {
                json_object *f = json_object_array_get_idx(v, i), *path, *content, *b64, *n;
                bool has_c, has_b;

                if (!json_object_is_type(f, json_type_object) || !json_object_object_get_ex(f, "path", &path) ||
                    !json_object_is_type(path, json_type_string)) {
                        json_object_put(files);
                        return fail_arg(buf, size, ret_error, "each of '%s' is an object with a string 'path'", "files");
                }
                json_object_object_foreach(f, key, val) {
                        (void) val;
                        if (!streq(key, "path") && !streq(key, "content") && !streq(key, "content_base64")) {
                                json_object_put(files);
                                return fail_arg(buf, size, ret_error, "files: unknown key '%.64s'", key);
                        }
                }
                has_c = json_object_object_get_ex(f, "content", &content);
                has_b = json_object_object_get_ex(f, "content_base64", &b64);
                if (has_c == has_b ||
                    (has_c && !json_object_is_type(content, json_type_string)) ||
                    (has_b && !json_object_is_type(b64, json_type_string))) {
                        json_object_put(files);
                        return fail_arg(buf, size, ret_error, "each of '%s' has exactly one of 'content' and 'content_base64', a string",
                                        "files");
                }
                n = json_object_new_object();
                if (!n) {
                        json_object_put(files);
                        return -ENOMEM;
                }
                json_object_object_add(n, "path", json_object_get(path));
                if (has_c) {
                        char *e = base64_encode(json_object_get_string(content),
                                                (size_t) json_object_get_string_len(content));

                        if (!e) {
                                json_object_put(n);
                                json_object_put(files);
                                return -ENOMEM;
                        }
                        json_object_object_add(n, "content_base64", json_object_new_string(e));
                        free(e);
                } else
                        json_object_object_add(n, "content_base64", json_object_get(b64));
                json_object_array_add(files, n);
        }
        *ret = files;
        return 0;
}

int mcp_run_code_request(json_object *args, json_object **ret, char *buf, size_t size, const char **ret_error) {
        static const char *const known[] = { "language", "code", "session_id", "environment", "stdin", "files",
                                              "timeout_ms", "memory_mb", "allow_net" };
        json_object *req = NULL, *limits = NULL, *v;
        int r;

        *ret = NULL;
        *ret_error = NULL;
        if (!args || !json_object_is_type(args, json_type_object))
                return fail_arg(buf, size, ret_error, "%s", "the arguments must be an object");
        json_object_object_foreach(args, key, val) {
                bool ok = false;

                (void) val;
                for (size_t i = 0; i < ELEMENTSOF(known); i++)
                        ok = ok || streq(key, known[i]);
                if (!ok)
                        return fail_arg(buf, size, ret_error, "unknown argument '%.64s'", key);
        }
        req = json_object_new_object();
        if (!req)
                return -ENOMEM;
        r = copy_string(args, req, "language", "language", true, buf, size, ret_error);
        if (r >= 0)
                r = copy_string(args, req, "code", "code", true, buf, size, ret_error);
        if (r >= 0)
                r = copy_string(args, req, "session_id", "session_id", false, buf, size, ret_error);
        if (r >= 0)
                r = copy_string(args, req, "environment", "environment", false, buf, size, ret_error);
        if (r >= 0)
                r = copy_string(args, req, "stdin", "stdin", false, buf, size, ret_error);
        if (r >= 0 && json_object_object_get_ex(args, "files", &v) && v) {
                json_object *files = NULL;

                r = convert_files(v, &files, buf, size, ret_error);
                if (r >= 0)
                        json_object_object_add(req, "files", files);
        }
        for (size_t i = 0; r >= 0 && i < 2; i++) {
                const char *name = i == 0 ? "timeout_ms" : "memory_mb";

                if (!json_object_object_get_ex(args, name, &v) || !v)
                        continue;
                if (!json_object_is_type(v, json_type_int)) {
                        r = fail_arg(buf, size, ret_error, "argument '%s' must be an integer", name);
                        break;
                }
                if (!limits && !(limits = json_object_new_object())) {
                        r = -ENOMEM;
                        break;
                }
                json_object_object_add(limits, name, json_object_get(v));
        }
        if (r >= 0 && json_object_object_get_ex(args, "allow_net", &v) && v) {
                bool ok = json_object_is_type(v, json_type_array);

                for (size_t i = 0; ok && i < json_object_array_length(v); i++)
                        ok = json_object_is_type(json_object_array_get_idx(v, i), json_type_string);
                if (!ok)
                        r = fail_arg(buf, size, ret_error, "argument '%s' must be an array of host names", "allow_net");
                else if (json_object_array_length(v) > 0) {
                        json_object *net = json_object_new_object();

                        if (!net)
                                r = -ENOMEM;
                        else {
                                json_object_object_add(net, "allow", json_object_get(v));
                                json_object_object_add(req, "network", net);
                        }
                }
        }
        if (r < 0) {
                json_object_put(limits);
                json_object_put(req);
                return r;
        }
        if (limits)
                json_object_object_add(req, "limits", limits);
        *ret = req;
        return 0;
}

/* ---- results ----------------------------------------------------------------------------------- */

bool mcp_mime_is_image(const char *mime_type) {
        return mime_type && (streq(mime_type, "image/png") || streq(mime_type, "image/jpeg") ||
                             streq(mime_type, "image/svg+xml") || streq(mime_type, "image/gif") ||
                             streq(mime_type, "image/webp"));
}

static const char *get_str(json_object *o, const char *key) {
        json_object *v;

        if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
                return NULL;
        return json_object_get_string(v);
}

static const char *get_str_idx(json_object *a, size_t i) {
        json_object *v = json_object_array_get_idx(a, i);

        return json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

/* For a record without a summary (one stored before summaries existed, or still running). */
static char *fallback_summary(json_object *record) {
        const char *status = get_str(record, "status") ?: "unknown", *err = get_str(record, "error_type"),
                   *msg = get_str(record, "error_message"), *out = get_str(record, "stdout"),
                   *eout = get_str(record, "stderr");
        char *s = NULL;
        json_object *v;
        int exit_code = -1;

        if (json_object_object_get_ex(record, "exit_code", &v) && json_object_is_type(v, json_type_int))
                exit_code = json_object_get_int(v);
        if (asprintf(&s, "status: %s%s%s%s\nexit code: %d\n%s%s%s%s", status, err ? " (" : "", err ?: "",
                     err ? ")" : "", exit_code, msg ?: "", msg ? "\n" : "", out && *out ? "stdout:\n" : "",
                     out ?: "") < 0)
                return NULL;
        if (eout && *eout) {
                char *t = NULL;

                if (asprintf(&t, "%s\nstderr:\n%s", s, eout) < 0) {
                        free(s);
                        return NULL;
                }
                free(s);
                s = t;
        }
        return s;
}

static json_object *text_content(const char *text) {
        json_object *c = json_object_new_object();

        if (!c)
                return NULL;
        json_object_object_add(c, "type", json_object_new_string("text"));
        json_object_object_add(c, "text", json_object_new_string(text));
        return c;
}

json_object *mcp_text_result(const char *text, bool is_error) {
        json_object *o = json_object_new_object(), *content = json_object_new_array(), *c = text_content(text);

        if (!o || !content || !c) {
                json_object_put(o);
                json_object_put(content);
                json_object_put(c);
                return NULL;
        }
        json_object_array_add(content, c);
        json_object_object_add(o, "content", content);
        json_object_object_add(o, "isError", json_object_new_boolean(is_error));
        return o;
}

json_object *mcp_execution_result(json_object *record, const char *url_base, mcp_blob_reader_t read_blob,
                                  void *userdata) {
        json_object *o = json_object_new_object(), *content = json_object_new_array(), *arts = NULL, *c;
        const char *summary = get_str(record, "summary"), *status = get_str(record, "status");
        _cleanup_free_ char *fallback = NULL;
        size_t images_total = 0;

        if (!o || !content)
                goto oom;
        if (!summary) {
                fallback = fallback_summary(record);
                if (!fallback)
                        goto oom;
                summary = fallback;
        }
        c = text_content(summary);
        if (!c)
                goto oom;
        json_object_array_add(content, c);

        if (json_object_object_get_ex(record, "artifacts", &arts) && json_object_is_type(arts, json_type_array))
                for (size_t i = 0; i < json_object_array_length(arts) &&
                                   json_object_array_length(content) < MCP_CONTENT_MAX; i++) {
                        json_object *a = json_object_array_get_idx(arts, i), *sz;
                        const char *path = get_str(a, "path"), *mime = get_str(a, "mime_type"),
                                   *sha = get_str(a, "sha256"), *url = get_str(a, "url");
                        uint64_t size = 0;
                        _cleanup_free_ uint8_t *bytes = NULL;
                        size_t len = 0;

                        if (!path)
                                continue;
                        if (json_object_object_get_ex(a, "size", &sz) && json_object_is_type(sz, json_type_int))
                                size = (uint64_t) json_object_get_int64(sz);
                        c = json_object_new_object();
                        if (!c)
                                goto oom;
                        if (mcp_mime_is_image(mime) && sha && read_blob && size <= MCP_IMAGE_MAX &&
                            images_total + size <= MCP_IMAGES_TOTAL_MAX &&
                            read_blob(userdata, sha, size, &bytes, &len) >= 0 && len == size) {
                                _cleanup_free_ char *b64 = base64_encode(bytes, len);

                                if (!b64) {
                                        json_object_put(c);
                                        goto oom;
                                }
                                images_total += len;
                                json_object_object_add(c, "type", json_object_new_string("image"));
                                json_object_object_add(c, "data", json_object_new_string(b64));
                                json_object_object_add(c, "mimeType", json_object_new_string(mime));
                        } else {
                                _cleanup_free_ char *uri = NULL;

                                if (url && asprintf(&uri, "%s%s", url_base ?: "", url) < 0) {
                                        json_object_put(c);
                                        goto oom;
                                }
                                json_object_object_add(c, "type", json_object_new_string("resource_link"));
                                json_object_object_add(c, "uri", json_object_new_string(uri ?: "about:blank"));
                                json_object_object_add(c, "name", json_object_new_string(path));
                                if (mime)
                                        json_object_object_add(c, "mimeType", json_object_new_string(mime));
                                json_object_object_add(c, "size", json_object_new_uint64(size));
                        }
                        json_object_array_add(content, c);
                }
        json_object_object_add(o, "content", content);
        json_object_object_add(o, "structuredContent", json_object_get(record));
        json_object_object_add(o, "isError", json_object_new_boolean(!streq_ptr(status, "success")));
        return o;
oom:
        json_object_put(o);
        json_object_put(content);
        return NULL;
}

json_object *mcp_pending_result(json_object *record) {
        _cleanup_free_ char *text = NULL;
        json_object *o;

        if (!record)
                return NULL;
        if (asprintf(&text, "execution %s is %s: not finished yet; call get_execution again for its result",
                     get_str(record, "execution_id") ?: "?", get_str(record, "status") ?: "pending") < 0) {
                json_object_put(record);
                return NULL;
        }
        o = mcp_text_result(text, false);
        if (!o) {
                json_object_put(record);
                return NULL;
        }
        json_object_object_add(o, "structuredContent", record);
        return o;
}

json_object *mcp_languages_result(json_object *languages) {
        _cleanup_free_ char *text = NULL;
        json_object *list = NULL, *o;
        size_t len = 0;
        FILE *f;

        if (!languages)
                return NULL;
        /* One line a language: name, version, aliases, environments; the rest is in the structure. */
        f = open_memstream(&text, &len);
        if (!f) {
                json_object_put(languages);
                return NULL;
        }
        if (json_object_object_get_ex(languages, "languages", &list) && json_object_is_type(list, json_type_array))
                for (size_t i = 0; i < json_object_array_length(list); i++) {
                        json_object *l = json_object_array_get_idx(list, i), *al = NULL, *envs = NULL, *av = NULL;

                        fprintf(f, "%s", get_str(l, "name") ?: "?");
                        if (get_str(l, "version"))
                                fprintf(f, " %s", get_str(l, "version"));
                        if (json_object_object_get_ex(l, "available", &av) && !json_object_get_boolean(av))
                                fprintf(f, " (unavailable: %s)", get_str(l, "reason") ?: "?");
                        if (json_object_object_get_ex(l, "aliases", &al) && json_object_is_type(al, json_type_array) &&
                            json_object_array_length(al) > 0) {
                                fprintf(f, "; aliases:");
                                for (size_t k = 0; k < json_object_array_length(al); k++)
                                        fprintf(f, " %s", get_str_idx(al, k) ?: "?");
                        }
                        if (json_object_object_get_ex(l, "environments", &envs) && json_object_is_type(envs, json_type_array) &&
                            json_object_array_length(envs) > 0) {
                                fprintf(f, "; environments:");
                                for (size_t k = 0; k < json_object_array_length(envs); k++)
                                        fprintf(f, " %s", get_str(json_object_array_get_idx(envs, k), "name") ?: "?");
                        }
                        fputc('\n', f);
                }
        if (fclose(f) != 0 || !text) {
                json_object_put(languages);
                return NULL;
        }
        o = mcp_text_result(text, false);
        if (!o) {
                json_object_put(languages);
                return NULL;
        }
        json_object_object_add(o, "structuredContent", languages);
        return o;
}

/* ---- the session file tools ---------------------------------------------------------------- */

void mcp_file_args_done(McpFileArgs *a) {
        a->data = mfree(a->data);
}

int mcp_file_args(const char *tool, json_object *args, McpFileArgs *ret, char *buf, size_t size, const char **ret_error) {
        bool write = streq_ptr(tool, "write_file"), list = streq_ptr(tool, "list_files");
        McpFileArgs a = {};
        json_object *content = NULL, *b64 = NULL;

        if (!args || !json_object_is_type(args, json_type_object))
                return fail_arg(buf, size, ret_error, "%s: arguments must be an object", tool);
        json_object_object_foreach(args, k, v) {
                bool is_str = json_object_is_type(v, json_type_string);

                if (streq(k, "session_id") && is_str)
                        a.session_id = json_object_get_string(v);
                else if (streq(k, "path") && is_str)
                        a.path = json_object_get_string(v);
                else if (write && streq(k, "content") && is_str)
                        content = v;
                else if (write && streq(k, "content_base64") && is_str)
                        b64 = v;
                else if (streq(k, "session_id") || streq(k, "path") || (write && (streq(k, "content") || streq(k, "content_base64"))))
                        return fail_arg(buf, size, ret_error, "%s: '%.64s' must be a string", tool, k);
                else
                        return fail_arg(buf, size, ret_error, "%s: unknown argument '%.64s'", tool, k);
        }
        if (!a.session_id || !*a.session_id)
                return fail_arg(buf, size, ret_error, "%s: session_id is required", tool);
        if (!a.path && !list)
                return fail_arg(buf, size, ret_error, "%s: path is required", tool);
        if (write) {
                if (!!content == !!b64)
                        return fail_arg(buf, size, ret_error, "write_file: give content or content_base64 (one of them)");
                if (content) {
                        a.len = (size_t) json_object_get_string_len(content);
                        a.data = malloc(a.len + 1);
                        if (!a.data)
                                return -ENOMEM;
                        memcpy(a.data, json_object_get_string(content), a.len + 1);
                } else {
                        int r = base64_decode(json_object_get_string(b64), (size_t) json_object_get_string_len(b64),
                                              (uint8_t **) &a.data, &a.len);
                        if (r == -ENOMEM)
                                return r;
                        if (r < 0)
                                return fail_arg(buf, size, ret_error, "write_file: content_base64 is not base64");
                }
        }
        *ret = a;
        return 0;
}

static json_object *result_with(json_object *item, bool is_error) {
        json_object *o = json_object_new_object(), *content = json_object_new_array();

        if (!o || !content || !item) {
                json_object_put(o);
                json_object_put(content);
                json_object_put(item);
                return NULL;
        }
        json_object_array_add(content, item);
        json_object_object_add(o, "content", content);
        json_object_object_add(o, "isError", json_object_new_boolean(is_error));
        return o;
}

json_object *mcp_file_result(const char *uri, const char *mime_type, const uint8_t *data, size_t len) {
        json_object *c = json_object_new_object();
        _cleanup_free_ char *b64 = NULL;

        if (!c)
                return NULL;
        if (mcp_mime_is_image(mime_type) && len <= MCP_IMAGE_MAX) {
                b64 = base64_encode(data, len);
                if (!b64)
                        goto oom;
                json_object_object_add(c, "type", json_object_new_string("image"));
                json_object_object_add(c, "data", json_object_new_string(b64));
                json_object_object_add(c, "mimeType", json_object_new_string(mime_type));
        } else if (utf8_is_valid(data, len) && !memchr(data, 0, len)) {
                json_object_object_add(c, "type", json_object_new_string("text"));
                json_object_object_add(c, "text", json_object_new_string_len((const char *) data, (int) len));
        } else {
                /* Bytes a model cannot read as text: an embedded resource, base64. */
                json_object *r = json_object_new_object();

                b64 = base64_encode(data, len);
                if (!r || !b64) {
                        json_object_put(r);
                        goto oom;
                }
                json_object_object_add(r, "uri", json_object_new_string(uri));
                json_object_object_add(r, "mimeType", json_object_new_string(mime_type ?: "application/octet-stream"));
                json_object_object_add(r, "blob", json_object_new_string(b64));
                json_object_object_add(c, "type", json_object_new_string("resource"));
                json_object_object_add(c, "resource", r);
        }
        return result_with(c, false);
oom:
        json_object_put(c);
        return NULL;
}

json_object *mcp_listing_result(json_object *listing) {
        _cleanup_free_ char *text = NULL;
        json_object *entries = NULL, *o, *v = NULL;
        size_t len = 0;
        FILE *f;

        if (!listing)
                return NULL;
        f = open_memstream(&text, &len);
        if (!f) {
                json_object_put(listing);
                return NULL;
        }
        fprintf(f, "%s/\n", *(get_str(listing, "path") ?: "") ? get_str(listing, "path") : ".");
        if (json_object_object_get_ex(listing, "entries", &entries) && json_object_is_type(entries, json_type_array))
                for (size_t i = 0; i < json_object_array_length(entries); i++) {
                        json_object *e = json_object_array_get_idx(entries, i), *sz = NULL;
                        const char *type = get_str(e, "type") ?: "other";

                        fprintf(f, "  %s%s", get_str(e, "name") ?: "?", streq(type, "directory") ? "/" :
                                                                        streq(type, "symlink") ? " (symlink, not followed)" :
                                                                        streq(type, "other") ? " (not a regular file)" : "");
                        if (streq(type, "file") && json_object_object_get_ex(e, "size", &sz))
                                fprintf(f, "  %" PRIu64 " bytes", (uint64_t) json_object_get_uint64(sz));
                        fputc('\n', f);
                }
        if (json_object_object_get_ex(listing, "truncated", &v) && json_object_get_boolean(v))
                fprintf(f, "  (more entries not listed)\n");
        if (fclose(f) != 0 || !text) {
                json_object_put(listing);
                return NULL;
        }
        o = mcp_text_result(text, false);
        if (!o) {
                json_object_put(listing);
                return NULL;
        }
        json_object_object_add(o, "structuredContent", listing);
        return o;
}

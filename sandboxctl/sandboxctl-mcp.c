/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* sandboxctl mcp: an MCP server on stdio for hosts that start their tools as processes (Claude
 * Desktop/Code, Cursor, ...). It is a bridge, not a second server: each line on stdin (one JSON-RPC
 * message, MCP's stdio transport) goes to POST /mcp over the API socket, and the daemon's answer
 * comes back as one line on stdout; the daemon interprets every message, so both transports answer
 * the same. stdout carries nothing but those lines; what goes wrong is logged on stderr. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sandboxctl.h"
#include "sandboxctl-http.h"
#include "sandboxctl-json.h"
#include "sandboxctl-mcp.h"
#include "sandboxctl-util.h"

/* One message at most this long (the daemon's MaxRequestBytes= is the real bound; this one only
 * keeps a peer that never sends a newline from growing our memory without limit). */
#define MCP_LINE_MAX ((size_t) 64 * 1024 * 1024)

/* One line on stdout, flushed: the host reads messages as they come. */
static int emit(json_object *msg) {
        const char *s = json_object_to_json_string_ext(msg, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);

        if (!s)
                return log_oom();
        if (fputs(s, stdout) < 0 || fputc('\n', stdout) < 0 || fflush(stdout) != 0)
                return -EIO;
        return 0;
}

static int emit_error(json_object *id, int code, const char *message) {
        _cleanup_(json_object_putp) json_object *o = json_object_new_object(), *e = json_object_new_object();

        if (!o || !e)
                return log_oom();
        json_object_object_add(o, "jsonrpc", json_object_new_string("2.0"));
        json_object_object_add(o, "id", json_object_get(id));
        json_object_object_add(e, "code", json_object_new_int(code));
        json_object_object_add(e, "message", json_object_new_string(message));
        json_object_object_add(o, "error", TAKE_PTR(e));
        return emit(o);
}

/* The message's id if it is a request (a method and an id), else NULL: only requests are answered. */
static json_object *request_id(json_object *msg) {
        json_object *id = NULL, *method = NULL;

        if (!json_object_is_type(msg, json_type_object) || !json_object_object_get_ex(msg, "method", &method) ||
            !json_object_object_get_ex(msg, "id", &id) || !id)
                return NULL;
        return id;
}

static int forward(const char *line, size_t len) {
        _cleanup_(json_object_putp) json_object *msg = NULL, *answer = NULL;
        json_object *id;
        long status = 0;
        char text[512];
        int r;

        if (json_parse_strict(line, len, &msg) < 0)
                return emit_error(NULL, -32700, "parse error: not one JSON value");
        id = request_id(msg);
        r = http_call("POST", "/mcp", msg, true, &status, &answer);
        if (r < 0) {
                /* Logged already (what to check); the host gets an answer it can show. */
                snprintf(text, sizeof(text), "cannot reach sandboxd at %s: %s", http_target(), strerror(-r));
                return id ? emit_error(id, -32603, text) : 0;
        }
        if (status == 202)
                return 0;
        /* JSON-RPC messages, answers and refusals alike (a message that is not JSON-RPC: 400). */
        if ((status == 200 || status == 400) && answer && json_object_is_type(answer, json_type_object) &&
            json_object_object_get_ex(answer, "jsonrpc", NULL))
                return emit(answer);
        /* The HTTP layer's refusal (401, 413, 503 ...): its message, as the request's error. */
        {
                json_object *e = NULL, *m = NULL;
                const char *message = NULL;

                if (answer && json_object_object_get_ex(answer, "error", &e) && json_object_is_type(e, json_type_object) &&
                    json_object_object_get_ex(e, "message", &m) && json_object_is_type(m, json_type_string))
                        message = json_object_get_string(m);
                snprintf(text, sizeof(text), "sandboxd answered HTTP %ld: %s", status, message ?: "(no message)");
                log_error("%s", text);
                return id ? emit_error(id, -32603, text) : 0;
        }
}

int verb_mcp(char **args, size_t n_args) {
        _cleanup_free_ char *buf = NULL;
        size_t len = 0, allocated = 0;
        bool too_long = false;
        int c, r;

        for (;;) {
                c = getchar();
                if (c == EOF && len == 0 && !too_long)
                        break;
                if (c != '\n' && c != EOF) {
                        if (too_long)
                                continue;
                        if (len + 2 > allocated) {
                                size_t n = allocated ? allocated * 2 : 4096;
                                char *b;

                                if (len + 2 > MCP_LINE_MAX) {
                                        too_long = true;
                                        continue;
                                }
                                b = realloc(buf, MIN(n, MCP_LINE_MAX));
                                if (!b) {
                                        (void) log_oom();
                                        return EX_OSERR;
                                }
                                buf = b;
                                allocated = MIN(n, MCP_LINE_MAX);
                        }
                        buf[len++] = (char) c;
                        continue;
                }
                /* A line (or what came before EOF): one message. Empty lines are skipped. */
                if (too_long)
                        r = emit_error(NULL, -32600, "message too large");
                else if (len > 0 && !(len == 1 && buf[0] == '\r')) {
                        buf[len] = 0;
                        r = forward(buf, len);
                } else
                        r = 0;
                if (r == -EIO)
                        return EXIT_SUCCESS;    /* the host closed our stdout: it is done with us */
                if (r < 0)
                        return EX_OSERR;
                len = 0;
                too_long = false;
                if (c == EOF)
                        break;
        }
        return EXIT_SUCCESS;
}

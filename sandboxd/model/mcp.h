/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The Model Context Protocol's side of sandboxd (docs/mcp.md), pure: JSON-RPC 2.0 messages as MCP
 * uses them, the server's answer to initialize, its tools and their JSON Schemas, a tool call's
 * arguments turned into an execution request (the same JSON POST /v1/executions takes, so that
 * every check of the request is the one of request.c), and an execution record turned into a tool
 * result a model can use: the record's summary as text, its images as image content, its other
 * artifacts as resource links, the whole record as structured content, isError when the program
 * failed. The HTTP route (api/mcp-http.c) and the stdio bridge (sandboxctl mcp) carry these
 * messages; neither interprets them. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

/* The protocol versions this server speaks, newest first: an initialize asking for one of them gets
 * it, any other gets the newest. */
#define MCP_PROTOCOL_LATEST "2025-06-18"

/* JSON-RPC 2.0 error codes. */
#define MCP_PARSE_ERROR (-32700)
#define MCP_INVALID_REQUEST (-32600)
#define MCP_METHOD_NOT_FOUND (-32601)
#define MCP_INVALID_PARAMS (-32602)
#define MCP_INTERNAL_ERROR (-32603)

/* Bounds of what a tool result carries inline: an image artifact larger than MCP_IMAGE_MAX, or one
 * past MCP_IMAGES_TOTAL_MAX in all, is a resource link instead; at most MCP_CONTENT_MAX items. */
#define MCP_IMAGE_MAX ((size_t) 2 * 1024 * 1024)
#define MCP_IMAGES_TOTAL_MAX ((size_t) 8 * 1024 * 1024)
#define MCP_CONTENT_MAX 64
/* run_code's files: at most this many entries (the request's own caps on their sizes apply too). */
#define MCP_FILES_MAX 16

typedef enum McpKind {
        MCP_KIND_REQUEST,        /* method and id: answered */
        MCP_KIND_NOTIFICATION,   /* method, no id: accepted, never answered */
        MCP_KIND_RESPONSE,       /* result or error with an id: the client answering us; accepted */
        MCP_KIND_INVALID,
} McpKind;

typedef struct McpMessage {
        McpKind kind;
        const char *method;      /* REQUEST, NOTIFICATION: points into the object */
        json_object *id;         /* REQUEST: borrowed (a string or an integer) */
        json_object *params;     /* borrowed; NULL when absent */
} McpMessage;

/* What a parsed JSON value is as a JSON-RPC message. On MCP_KIND_INVALID *ret_error says why. */
McpKind mcp_classify(json_object *msg, McpMessage *ret, const char **ret_error);

/* {"jsonrpc": "2.0", "id": id, "result": result} (takes result; id is copied). NULL on OOM. */
json_object *mcp_response(json_object *id, json_object *result);
/* {"jsonrpc": "2.0", "id": id or null, "error": {"code", "message"}}. NULL on OOM. */
json_object *mcp_error_response(json_object *id, int code, const char *message);

/* The protocol version to answer an initialize asking for requested (NULL: none given). */
const char *mcp_negotiate_version(const char *requested);
/* The result of initialize for params (the client's; may be NULL). NULL on OOM. */
json_object *mcp_initialize_result(json_object *params, const char *server_version);

/* The tools, for tools/list: {"tools": [{"name", "title", "description", "inputSchema"}...]}.
 * NULL on OOM. */
json_object *mcp_tools_list(void);
/* Is name one of the tools? */
bool mcp_tool_known(const char *name);

/* run_code's arguments as an execution request's JSON (language, code, session_id, environment,
 * stdin, files, limits from timeout_ms/memory_mb, network from allow_net). 0 with *ret set;
 * -EINVAL with *ret_error (a message naming the argument, static or in buf) for arguments of the
 * wrong type or unknown; -ENOMEM. Values are checked by request.c when the request is submitted. */
int mcp_run_code_request(json_object *args, json_object **ret, char *buf, size_t size, const char **ret_error);

/* Reads an artifact's bytes for image content: 0 with *ret (malloc'ed) and *ret_len, or negative.
 * Called only for image types within MCP_IMAGE_MAX. */
typedef int (*mcp_blob_reader_t)(void *userdata, const char *sha256, uint64_t size, uint8_t **ret, size_t *ret_len);

/* An execution record (the JSON of GET /v1/executions/<id>) as a tool result: content [the summary
 * (the record's "summary", or one made of its status when it has none), images, resource links
 * (uri: url_base followed by the artifact's signed URL)], structuredContent: the record, isError:
 * the record's status is not "success". Takes a reference of record. NULL on OOM. */
json_object *mcp_execution_result(json_object *record, const char *url_base, mcp_blob_reader_t read_blob,
                                  void *userdata);

/* An execution that is not final yet (get_execution while it runs): its status as text, the record
 * as structured content, not an error. Takes record. NULL on OOM. */
json_object *mcp_pending_result(json_object *record);

/* list_languages: the body of GET /v1/languages as text (one line per language) and as structured
 * content. Takes languages. NULL on OOM. */
json_object *mcp_languages_result(json_object *languages);

/* The arguments of read_file, write_file, list_files: session_id (required), path (required but for
 * list_files: NULL there is the workspace), and for write_file the bytes of content or of
 * content_base64 (exactly one) in data/len (malloc'ed, the caller's: mcp_file_args_done()). Pointers
 * into args. 0; -EINVAL with *ret_error naming the argument; -ENOMEM. Paths are checked by the
 * session file code (delivery/session-files.c). */
typedef struct McpFileArgs {
        const char *session_id, *path;
        char *data;
        size_t len;
} McpFileArgs;
int mcp_file_args(const char *tool, json_object *args, McpFileArgs *ret, char *buf, size_t size, const char **ret_error);
void mcp_file_args_done(McpFileArgs *a);

/* read_file of a regular file: an image type within MCP_IMAGE_MAX as image content, valid UTF-8
 * without NUL as text, anything else as an embedded resource (uri, mimeType, base64 blob). NULL on
 * OOM. */
json_object *mcp_file_result(const char *uri, const char *mime_type, const uint8_t *data, size_t len);
/* A directory listing (session_file_list()'s JSON) as text, one entry a line, and as structured
 * content. Takes listing. NULL on OOM. */
json_object *mcp_listing_result(json_object *listing);

/* A tool result of one text and isError (a refused request, an unknown execution). NULL on OOM. */
json_object *mcp_text_result(const char *text, bool is_error);

/* Is an artifact of this MIME type returned as image content? */
bool mcp_mime_is_image(const char *mime_type);

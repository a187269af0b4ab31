/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* POST /mcp: the Model Context Protocol's Streamable HTTP transport (docs/mcp.md), carrying the
 * messages of model/mcp.c. A JSON-RPC request is answered with 200 and one JSON response (never an
 * SSE stream: every answer is one message); a notification or a response with 202 and no body.
 * tools/call run_code is the caller's POST /v1/executions?wait=true, answered once the execution is
 * final; the caller is identified and authorized exactly as on every other route. No Mcp-Session-Id
 * is issued: the server keeps no state between messages. */

#include "api-context.h"
#include "http.h"

void api_handle_mcp(ApiContext *ac, HttpRequest *req);

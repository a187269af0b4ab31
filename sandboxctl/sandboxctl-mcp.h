/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* mcp: an MCP server on stdio, bridged to the daemon's POST /mcp. */

#include <stddef.h>

int verb_mcp(char **args, size_t n_args);

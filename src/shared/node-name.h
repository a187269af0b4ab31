/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The name of a sandboxd node ([Cluster] NodeName=, the nodes table of the store): [A-Za-z0-9_.-],
 * 1 to 64 characters, so that it can stand in a metrics label, a log line and a URL unquoted. The
 * default, the machine id, is 32 hex digits. */

#include <stdbool.h>

#define NODE_NAME_MAX 64

bool node_name_is_valid(const char *s);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The summary of a final execution (issue 18): what happened, in words a model acts on. Pure and
 * table-driven; no I/O. docs/http-api.md, "The summary", is the contract.
 *
 * On success: the verdict line, the first SUMMARY_STDOUT_LINES lines of stdout (with "(N more lines)"
 * when there were more), then the artifacts (path, type, size). On failure: the verdict line from the
 * row of its status and error type (with the limit in effect named by its request field), the hints
 * the program's stderr supports (a module that is not installed, the network being disabled), the
 * exit code or signal, error_message, stderr with its head and tail kept, then the first lines of
 * stdout. At most SUMMARY_MAX bytes, valid UTF-8 without control characters other than \n and \t:
 * every byte of it that the program chose is hostile and is cut, bounded and cleaned here. */

#include <stdbool.h>
#include <stddef.h>

#include "execution.h"

#define SUMMARY_MAX (8U * 1024U)
#define SUMMARY_STDOUT_LINES 20U
/* What the first lines of stdout may take (a line can be long). */
#define SUMMARY_STDOUT_MAX (3U * 1024U)
/* A module name read from stderr, as the Python rule bounds it (PYTHON_MODULE_NAME_MAX). */
#define SUMMARY_MODULE_MAX 128U

/* The sentence of a verdict: the first matching row of the table. Exposed for the unit tests, which
 * check every row. NULL for an execution that is not final. */
const char *summary_verdict_template(const Execution *e);

/* The module a program failed to import, from its stderr: Python's "ModuleNotFoundError: No module
 * named 'X'" (the last one), else Node's "Cannot find module 'X'" / "Cannot find package 'X'" (a bare
 * package name, not a relative or absolute path). Into buf (at least SUMMARY_MODULE_MAX + 1 bytes).
 * 1 found, 0 not. */
int summary_missing_module(const char *err, size_t len, char *buf, size_t n);

/* Does stderr show a failed network access (unreachable network, failed name resolution, refused
 * connection)? */
bool summary_network_error(const char *err, size_t len);

/* The summary of a final execution, a new string; NULL for one that is not final, or on OOM. */
char *summary_build(const Execution *e);

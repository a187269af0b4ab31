/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Piston's API v2 (docs/http-api.md, "Piston API v2"), for the clients written against Piston's
 * public server: its language names, its runtimes list, its execute request as sandboxd's own
 * request, and an execution record as its answer. Pure: no I/O; the routes are
 * api/piston-http.c's. */

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "conf.h"
#include "language.h"

/* Piston's defaults for what a request leaves out (its server's: 3 s to run, 10 s to compile). */
#define PISTON_RUN_TIMEOUT_MS 3000
#define PISTON_COMPILE_TIMEOUT_MS 10000
/* At most this many files in one request (the first is the program, the others its input files). */
#define PISTON_FILES_MAX 64
/* Room for a runtime's version as Piston writes it ("3.11.2"). */
#define PISTON_VERSION_MAX 32
/* Room for a refusal's message. */
#define PISTON_MESSAGE_MAX 384

/* How Piston names a sandboxd language: its name ("javascript" for sandboxd's node), its aliases
 * and its "runtime" (NULL: none). A language the table does not know (an administrator's own) keeps
 * its name and aliases. */
typedef struct PistonName {
        const char *name;
        const char *const *aliases;     /* NULL-terminated, may be NULL */
        const char *runtime;
} PistonName;
void piston_name(const Language *l, PistonName *ret);

/* The version Piston shows for a runtime's version line: its first dotted number ("Python 3.11.2"
 * → "3.11.2", "go version go1.19.8 linux/amd64" → "1.19.8"), "0.0.0" without one (or NULL). */
void piston_version(const char *version_line, char ret[static PISTON_VERSION_MAX]);

/* Does a request's "version" select the runtime of version `have`: "*", the same string, or as
 * many leading components as it has, each equal or "x"/"*" ("3", "3.x", "3.11.*" select 3.11.2). */
bool piston_version_matches(const char *want, const char *have);

/* Which of langs[] (the languages a request may name: available ones only) a Piston language name
 * selects: a Piston name or alias first, then sandboxd's own name or alias. NULL: none. */
const Language *piston_find_language(const Language *const *langs, size_t n, const char *name);

/* GET /api/v2/runtimes: [{"language", "version", "aliases", "runtime"?}, ...] for langs[]. NULL on OOM. */
json_object *piston_runtimes(const Language *const *langs, size_t n);

/* POST /api/v2/execute's body (any JSON a strict parser accepts; unknown members are ignored, as
 * Piston's server does) as the body of POST /v1/executions: *ret_request, with *ret_language the
 * language it runs. 0; -EINVAL with msg filled (Piston's 400 message); -ENOMEM. */
int piston_request(json_object *body, const Language *const *langs, size_t n, const Config *c,
                   json_object **ret_request, const Language **ret_language, char msg[static PISTON_MESSAGE_MAX]);

/* An execution record (result.c's JSON, final) as Piston's answer for language l:
 * {"language", "version", "run": {...}, "compile": {...} (compiled languages only)}, each stage
 * {"stdout", "stderr", "output", "code", "signal", "message", "status", "cpu_time", "wall_time",
 * "memory"}. NULL on OOM. */
json_object *piston_response(json_object *record, const Language *l);

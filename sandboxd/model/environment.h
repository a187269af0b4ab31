/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Environments: libraries as a layer (issue 17, docs/sandboxd.environments.5.md). An environment is a
 * directory <EnvironmentsDirectory>/<name>/ holding usr/, a tree that sandbox-exec mounts as one more
 * read-only lower layer of the /usr overlay of that environment's units only, and a manifest
 * (tools/build-environment writes both):
 *
 *     Name=python-data
 *     Language=python
 *     Description=...
 *     Package=python3-pandas 1.5.3+dfsg-2        (repeated: name and version)
 *     Module=pandas                              (repeated: a top-level import name the layer adds)
 *     Environment=MPLBACKEND=Agg                 (repeated: a variable its programs get; the
 *                                                 request's env wins)
 *     Preload=pandas                             (repeated: a module the warm pool's units of this
 *                                                 environment import before their claim)
 *
 * Everything here is pure but environments_load(), which reads the directory once (at start and on
 * reload). */

#include <stdbool.h>
#include <stddef.h>

#include "util.h"

struct json_object;

#define ENVIRONMENT_NAME_MAX 64
#define ENVIRONMENTS_MAX 64
#define ENVIRONMENT_MANIFEST_MAX (256 * 1024)
#define ENVIRONMENT_PACKAGES_MAX 512
#define ENVIRONMENT_MODULES_MAX 4096
#define ENVIRONMENT_LINE_MAX 1024
#define ENVIRONMENT_ENV_MAX 32
#define ENVIRONMENT_PRELOAD_MAX 16
/* A module name taken from a program's output: at most this many bytes, dotted identifiers. */
#define PYTHON_MODULE_NAME_MAX 128

typedef struct EnvironmentPackage {
        char *name;
        char *version;
} EnvironmentPackage;

typedef struct Environment {
        char *name;
        char *language;          /* the language row's name: "python" */
        char *description;       /* may be NULL */
        char *usr_dir;           /* host path of its usr/ tree; NULL when parsed alone */
        EnvironmentPackage *packages;
        size_t n_packages;
        char **modules;          /* sorted, unique */
        size_t n_modules;
        char **env;              /* "KEY=VALUE", at most ENVIRONMENT_ENV_MAX */
        size_t n_env;
        char **preload;          /* dotted module names, in file order, at most ENVIRONMENT_PRELOAD_MAX */
        size_t n_preload;
} Environment;

typedef struct Environments {
        Environment *envs;       /* sorted by name */
        size_t n;
} Environments;

/* [a-z0-9][a-z0-9._-]*, at most ENVIRONMENT_NAME_MAX bytes, n bytes of s (no NUL in them). */
bool environment_name_is_valid(const char *s, size_t n);

/* Parses a manifest of the environment called name (the directory's name; a Name= that differs is an
 * error). 0, -EINVAL with *ret_error ("line N: ...") set, -ENOMEM. */
int environment_parse_manifest(const char *name, const char *text, size_t len, Environment *ret, char **ret_error);
void environment_done(Environment *e);

/* Reads every <dir>/<name>/manifest whose usr/ is a directory. A malformed one is logged with its
 * path and line and left out, the others load; so is one whose directory or usr/ is not root's or is
 * writable by group or others. A missing dir is no environments. 0 or -ENOMEM. */
int environments_load(const char *dir, Environments **ret);
Environments *environments_free(Environments *e);
DEFINE_TRIVIAL_CLEANUP_FUNC(Environments *, environments_free);

const Environment *environments_find(const Environments *e, const char *name);
/* The request's env (sorted "KEY=VALUE") with the environment's variables the request does not set,
 * sorted by name again. 0 or -ENOMEM. */
int environment_merge_env(const Environment *e, char *const *user, size_t n_user, char ***ret, size_t *ret_n);

/* Does the layer add the top-level module of this (dotted) name? */
bool environment_has_module(const Environment *e, const char *module);

/* The environments of one language for GET /v1/languages: [{"name", "description", "packages":
 * [{"name", "version"}]}], in name order; an empty array for none. NULL on OOM. */
struct json_object *environments_json_for_language(const Environments *e, const char *language);

/* Is s (n bytes) a Python dotted name: identifiers of [A-Za-z_][A-Za-z0-9_]* joined by single dots,
 * at most PYTHON_MODULE_NAME_MAX bytes? ASCII only: a non-ASCII module name is not reported. */
bool python_module_name_is_valid(const char *s, size_t n);

/* The module of the last "ModuleNotFoundError: No module named 'X'" line in the program's stderr
 * (hostile bytes: only a valid name is taken) into buf (at least PYTHON_MODULE_NAME_MAX + 1 bytes).
 * 1 found, 0 not. */
int missing_module_from_stderr(const char *err, size_t len, char *buf, size_t n);

/* error_message for a missing module: names the module, the environment (env_name, NULL: the
 * language's base) and what to do: the environments of the language that have it, or, with network
 * allowed, pip install into the workspace; else that no environment has it. NULL on OOM. */
char *missing_module_message(const Environments *e, const char *language, const char *env_name, const char *module,
                             bool network);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Which requests a unit of the warm pool may serve (warm-pool.c): one table of reasons, pure. A warm
 * unit was started before its request with the pool's profile: the default disk_mb (its workspace is
 * sized at start), no input files (written before a unit starts), not a session's workspace, and —
 * where the runtime is already running (Language.warm_argv) — an environment fixed at its start for
 * everything the runtime read while starting. What a claim can still change, it changes: the memory,
 * CPU and task limits (SetUnitProperties on the running unit), the deadline (from the claim), the
 * environment the program sees, the seed. Everything else starts cold, correctly, and says so in the
 * record (start: "cold"). */

#include <stdbool.h>

#include "conf.h"
#include "language.h"
#include "request.h"

typedef enum WarmRefusal {
        WARM_OK,
        WARM_ASKED_COLD,         /* "start": "cold" */
        WARM_POOL_OFF,           /* Size=0 */
        WARM_NOT_POOLED,         /* the language is not in Languages= */
        WARM_SESSION,            /* a session's run: its workspace is the session's */
        WARM_INPUTS,             /* "files": written into the workspace before the unit starts */
        WARM_DISK,               /* disk_mb other than DefaultDiskMB= */
        WARM_MEMORY,             /* memory_mb below MinMemoryMB= where the runtime is preloaded */
        WARM_ENV,                /* env sets a name the preloaded runtime read as it started */
        WARM_NETWORK,            /* "network": its unit joins the egress proxy's network namespace */
        WARM_ENVIRONMENT,        /* "environment" not in Environments=: its layer is part of the unit's /usr */
        WARM_ARGS,               /* "args": the program's command line is the unit's, fixed at its start */
        WARM_STDIN,              /* "stdin": a warm runtime's standard input was set when it started */
        WARM_STRONG,             /* the strong tier, and the pool keeps no strong units (StrongSize=0) */
        WARM_STRONG_LIMITS,      /* the strong tier: tasks or memory_mb other than the defaults, which gVisor
                                  * takes as a strong unit starts (its process limit, its total memory) */
        _WARM_REFUSAL_MAX,
} WarmRefusal;

const char *warm_refusal_to_string(WarmRefusal r);

/* Is the language pooled by this configuration? */
bool warm_language_pooled(const Config *c, const Language *l);

/* Is the environment of this name pooled (Environments=, for its language if that is pooled)? */
bool warm_environment_pooled(const Config *c, const char *environment);

/* Does the pool keep two kinds of ready units of l, preloaded ones and plain ones (python with a
 * PythonPreload=)? */
bool warm_language_preloads(const Config *c, const Language *l);

/* Does the pool keep units of the strong tier of l (StrongSize=, a pooled language without a preload
 * of its own: its runtime starts under gVisor after the claim)? Whether the strong tier can run and
 * is in force is the caller's to add (context). */
bool warm_language_strong(const Config *c, const Language *l);

/* Does assignment ("KEY=VALUE") set a name matching one of patterns (exact, or a prefix ending in
 * '*')? */
bool warm_env_matches(const char *const *patterns, const char *assignment);

/* May a warm unit serve req (language req->language)? WARM_OK, or the first reason it may not. */
WarmRefusal warm_policy_check(const Config *c, const ExecRequest *req);

/* Which kind of ready unit a warm run should take where the pool keeps two (python with
 * PythonPreload=): true, one that has imported the preload, when the source names a preloaded module
 * (its top-level name as a whole word: "import numpy", "from numpy.linalg import", "'numpy' in
 * sys.modules") or a module known to import one (pandas, scipy, ... import numpy); false, a plain
 * interpreter, otherwise. Only speed depends on it: either kind runs any program (a plain one
 * imports what the program imports; the preloaded one ends without a teardown of what it loaded,
 * but its exit still unmaps it — ~2 ms with numpy, more than a whole print(1)). */
bool warm_wants_preload(const char *const *preload, const char *code, size_t len);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "warm-policy.h"

#include <string.h>

#include "string-table.h"
#include "strv.h"
#include "util.h"

static const char *const warm_refusal_table[_WARM_REFUSAL_MAX] = {
        [WARM_OK] = "warm",
        [WARM_ASKED_COLD] = "a cold start was asked for",
        [WARM_POOL_OFF] = "the warm pool is off (Size=0)",
        [WARM_NOT_POOLED] = "the language is not pooled (Languages=)",
        [WARM_SESSION] = "a session's run uses the session's workspace",
        [WARM_INPUTS] = "input files are written before the unit starts",
        [WARM_DISK] = "disk_mb differs from DefaultDiskMB= (a warm unit's workspace is sized when it starts)",
        [WARM_MEMORY] = "memory_mb is below MinMemoryMB= (the preloaded runtime counts against it)",
        [WARM_ENV] = "env sets a variable the preloaded runtime read as it started",
        [WARM_NETWORK] = "a run with network joins its egress proxy's network namespace as its unit starts",
        [WARM_ENVIRONMENT] = "the pool keeps no units of this environment (Environments= in [Pool])",
        [WARM_ARGS] = "args: a warm unit's command line was fixed when it started",
        [WARM_STDIN] = "stdin: a warm unit's standard input was fixed when it started",
        [WARM_STRONG] = "the pool keeps no units of the strong tier (StrongSize=0)",
        [WARM_STRONG_LIMITS] = "tasks or memory_mb differs from the default (gVisor's process limit and total memory "
                               "are set as a strong unit starts)",
};

DEFINE_STRING_TABLE_LOOKUP_TO_STRING(warm_refusal, WarmRefusal);

bool warm_language_pooled(const Config *c, const Language *l) {
        return l && c->pool_size > 0 && strv_contains(c->pool_languages, l->name);
}

bool warm_environment_pooled(const Config *c, const char *environment) {
        return environment && c->pool_size > 0 && strv_contains(c->pool_environments, environment);
}

bool warm_language_preloads(const Config *c, const Language *l) {
        return l && l->warm_argv && streq(l->name, "python") && strv_length(c->pool_python_preload) > 0;
}

bool warm_language_strong(const Config *c, const Language *l) {
        return warm_language_pooled(c, l) && c->pool_strong_size > 0;
}

bool warm_env_matches(const char *const *patterns, const char *assignment) {
        size_t klen = strcspn(assignment, "=");

        for (const char *const *p = patterns; p && *p; p++) {
                size_t n = strlen(*p);

                if (n > 0 && (*p)[n - 1] == '*') {
                        if (klen >= n - 1 && strncmp(assignment, *p, n - 1) == 0)
                                return true;
                } else if (klen == n && strncmp(assignment, *p, n) == 0)
                        return true;
        }
        return false;
}

/* Modules whose import imports a preloadable one: naming them asks for it too. */
static const struct {
        const char *module;
        const char *const *importers;
} preload_importers[] = {
        { "numpy", (const char *const[]) { "pandas", "scipy", "matplotlib", "sklearn", "seaborn", "statsmodels",
                                           "skimage", "numba", "xarray", "torch", "tensorflow", "h5py",
                                           "numexpr", NULL } },
};

bool warm_wants_preload(const char *const *preload, const char *code, size_t len) {
        if (!code)
                return false;
        for (const char *const *m = preload; m && *m; m++) {
                /* A submodule (numpy.linalg) is asked for by its package's name. */
                size_t n = strcspn(*m, ".");

                if (memmem_token(code, len, *m, n, false))
                        return true;
                for (size_t i = 0; i < ELEMENTSOF(preload_importers); i++)
                        if (strlen(preload_importers[i].module) == n &&
                            strncmp(preload_importers[i].module, *m, n) == 0)
                                for (const char *const *d = preload_importers[i].importers; *d; d++)
                                        if (memmem_token(code, len, *d, strlen(*d), false))
                                                return true;
        }
        return false;
}

WarmRefusal warm_policy_check(const Config *c, const ExecRequest *req) {
        const Language *l = req->language;

        if (req->cold)
                return WARM_ASKED_COLD;
        if (c->pool_size == 0)
                return WARM_POOL_OFF;
        if (!warm_language_pooled(c, l))
                return WARM_NOT_POOLED;
        if (req->session_id)
                return WARM_SESSION;
        if (req->n_files > 0)
                return WARM_INPUTS;
        if (req->environment && !warm_environment_pooled(c, req->environment))
                return WARM_ENVIRONMENT;
        if (req->network)
                return WARM_NETWORK;
        if (req->n_args > 0)
                return WARM_ARGS;
        if (req->stdin_len > 0)
                return WARM_STDIN;
        if (req->limits.disk_mb != c->defaults.disk_mb)
                return WARM_DISK;
        /* The strong tier's units start no runtime before the claim: no preload, no env rules. */
        if (req->run_strong) {
                if (!warm_language_strong(c, l))
                        return WARM_STRONG;
                if (req->environment)
                        return WARM_ENVIRONMENT;
                if (req->limits.tasks != c->defaults.tasks || req->limits.memory_mb != c->defaults.memory_mb)
                        return WARM_STRONG_LIMITS;
                return WARM_OK;
        }
        if (l->warm_argv) {
                if (req->limits.memory_mb < c->pool_min_memory_mb)
                        return WARM_MEMORY;
                for (size_t i = 0; i < req->n_env; i++)
                        if (warm_env_matches(l->warm_cold_env, req->env[i]))
                                return WARM_ENV;
        }
        return WARM_OK;
}

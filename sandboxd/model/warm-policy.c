/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "warm-policy.h"

#include "string-table.h"
#include "strv.h"

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
};

DEFINE_STRING_TABLE_LOOKUP_TO_STRING(warm_refusal, WarmRefusal);

bool warm_language_pooled(const Config *c, const Language *l) {
        return l && c->pool_size > 0 && strv_contains(c->pool_languages, l->name);
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
        if (req->limits.disk_mb != c->defaults.disk_mb)
                return WARM_DISK;
        if (l->warm_argv) {
                if (req->limits.memory_mb < c->pool_min_memory_mb)
                        return WARM_MEMORY;
                for (size_t i = 0; i < req->n_env; i++)
                        if (warm_env_matches(l->warm_cold_env, req->env[i]))
                                return WARM_ENV;
        }
        return WARM_OK;
}

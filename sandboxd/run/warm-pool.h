/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The warm pool: execution units started ahead of demand, single-use. Each is a transient service
 * with the full profile (unit-props.c, UnitPlan.warm) on a workspace of the default size; inside,
 * sandbox-exec --warm has done everything that does not depend on a request and, for a language with
 * a warm bootstrap (python), the runtime is running and has imported what [Pool] preloads. It says
 * EXEC_READY_LINE on its control channel; then a job may claim it (job.c), set the request's limits
 * on it and send the claim. A claimed unit is the job's, like one it started: it runs one program and
 * ends. Ready units that die or age out (MaxAgeSec=) are replaced; none is kept in systemd's fd
 * store, so after a restart the sweep stops the ones nobody claimed, while claimed ones are adopted
 * with their executions. Sizing: Size= per pooled language and Size= per pooled environment
 * (Environments=: a unit with that environment's layer in its /usr and its variables, its runtime
 * having imported the environment's Preload=), at most WARM_STARTS_MAX starting at once, backing off
 * while starts fail. A unit of an environment serves only requests for that environment, and a plain
 * one only requests for none: no unit shows a layer to a program that did not ask for it. The strong
 * tier's units (StrongSize= per pooled language, while the strong tier can run and Strong= is not
 * never) have the strong tier's profile and start no runtime: after the claim sandbox-exec runs it
 * under gVisor as in a cold strong unit; they serve strong runs only, and strong runs only them. */

#include "model/context.h"
#include "model/language.h"
#include "systemd/sysd.h"

typedef struct WarmPool WarmPool;

/* What a claim hands to its job. */
typedef struct WarmClaim {
        char *unit_name;
        char *workspace, *mount_name;
        int ctl_fd;              /* the control channel: EXEC_READY_LINE already read */
        Limits limits;           /* the unit's limits as started (the pool's) */
        uint64_t lease;          /* the workspace pool's lease of the workspace (workspace_pool_give_back()) */
        bool fd_stored;          /* ctl_fd is in systemd's fd store, named control_fd_name(NULL, unit_name) */
} WarmClaim;

void warm_claim_done(WarmClaim *c);

int warm_pool_new(Context *ctx, WarmPool **ret);
/* Forgets the units (at exit, after warm_pool_stop_all()). */
WarmPool *warm_pool_free(WarmPool *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(WarmPool *, warm_pool_free);

/* Start units until every pooled language has Size= ready or starting (within the bounds). */
void warm_pool_fill(WarmPool *p);
/* A ready unit of language l and environment (NULL: none), removed from the pool: 1 and *ret filled,
 * or 0 if none is ready. Without an environment, of the kind asked for (preloaded: its runtime
 * imported PythonPreload=; warm_wants_preload()); a run that asks for a preloaded one takes a plain
 * one if none is ready, never the other way round. An environment's units are of one kind. strong:
 * a unit of the strong tier (preloaded ignored); otherwise never one. */
int warm_pool_claim(WarmPool *p, const Language *l, const char *environment, bool preloaded, bool strong,
                    WarmClaim *ret);
/* A claimed unit's run ended: its replacement starts now if it was still waiting (warm-pool.c,
 * WARM_REFILL_DELAY_USEC). */
void warm_pool_claim_ended(WarmPool *p);
/* Every unit of the pool nobody has claimed (starting, ready or being stopped): cb for each. */
void warm_pool_foreach(const WarmPool *p, void (*cb)(void *userdata, const char *unit, const char *language,
                                                     bool ready), void *userdata);
/* Ready units of the standard tier of language l without an environment: preloaded ones (1), plain
 * ones (0) or both (-1). */
unsigned warm_pool_ready(const WarmPool *p, const Language *l, int preloaded);
/* Ready units of the strong tier of language l. */
unsigned warm_pool_ready_strong(const WarmPool *p, const Language *l);
/* Ready units of the environment of this name. */
unsigned warm_pool_ready_environment(const WarmPool *p, const char *environment);
/* Stop every unit (a reload): new ones are started with the configuration then in force. */
void warm_pool_drain(WarmPool *p);
/* At stop: StopUnit for each unit, cb(userdata) for each answer; how many were sent. */
unsigned warm_pool_stop_all(WarmPool *p, sysd_done_t cb, void *userdata);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The end of units whose executions are final already. sandbox-exec's report says when nothing of
 * the program is left (HelperReport.alone): the job then decides its verdict and answers without
 * waiting for systemd to notice that the unit's main process exited and to tear the unit down. What
 * remains is systemd's: the reaper watches each such unit until it is inactive or failed, then drops
 * sandboxd's reference to it (AddRef=), resets its failed state (CollectMode=inactive keeps it), and
 * stops its workspace's mount. A unit that has not ended after UNIT_REAPER_KILL_USEC is killed, and
 * forgotten after twice that (the sweep stops whatever might remain). */

#include "model/context.h"
#include "systemd/sysd.h"

#define UNIT_REAPER_KILL_USEC (10 * USEC_PER_SEC)

typedef struct UnitReaper UnitReaper;

int unit_reaper_new(Context *ctx, UnitReaper **ret);
/* Forgets the units (at exit: the next start's sweep deals with them). */
UnitReaper *unit_reaper_free(UnitReaper *r);
DEFINE_TRIVIAL_CLEANUP_FUNC(UnitReaper *, unit_reaper_free);

/* Take over unit (nobody else may watch it) and, once it has ended, give its workspace (path, mount,
 * the workspace pool's lease) back to the pool, or stop mount; mount NULL: none (a session's). */
int unit_reaper_add(UnitReaper *r, const char *unit, const char *mount, const char *workspace, uint64_t lease);
unsigned unit_reaper_count(const UnitReaper *r);
/* At stop: each unit still ending is finished as usual once it has ended, and cb(userdata) is called
 * with each of systemd's answers (its reset, its mount's stop); how many will come. A unit added
 * from then on (an execution made final while sandboxd stops) is announced with more(userdata, 2)
 * before its answers can come. */
unsigned unit_reaper_stop_all(UnitReaper *r, sysd_done_t cb, void (*more)(void *userdata, unsigned n),
                              void *userdata);

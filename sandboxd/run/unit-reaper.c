/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <signal.h>

#include "log.h"
#include "time-util.h"
#include "unit-reaper.h"
#include "workspace/workspace.h"

typedef struct Reaped Reaped;
struct Reaped {
        UnitReaper *reaper;
        Reaped *next;
        char *unit, *mount, *workspace;
        uint64_t lease;
        SysdWatch *watch, *watch_mount;  /* the mount's: so the sweep leaves it alone meanwhile */
        SysdCall *call;
        uint64_t added_mono;
        bool killed;
};

struct UnitReaper {
        Context *ctx;
        sysd_done_t stop_cb;     /* at stop: each answer, see unit_reaper_stop_all() */
        void (*stop_more)(void *userdata, unsigned n);
        void *stop_userdata;
        Reaped *list;
        unsigned n;
        sd_event_source *timer;
};

static Reaped *reaped_free(Reaped *x) {
        if (!x)
                return NULL;
        x->watch = sysd_watch_free(x->watch);
        x->watch_mount = sysd_watch_free(x->watch_mount);
        x->call = sysd_call_free(x->call);
        free(x->unit);
        free(x->mount);
        free(x->workspace);
        free(x);
        return NULL;
}

static void reaper_unlink(UnitReaper *r, Reaped *x) {
        for (Reaped **p = &r->list; *p; p = &(*p)->next)
                if (*p == x) {
                        *p = x->next;
                        r->n--;
                        return;
                }
}

/* The unit is gone (or given up on): what sandboxd still holds of it goes. */
static void reaped_done(Reaped *x, const char *state) {
        UnitReaper *r = x->reaper;
        Sysd *sysd = r->ctx->sysd;

        x->watch_mount = sysd_watch_free(x->watch_mount);
        if (sysd && r->stop_cb) {
                /* At stop: two answers per unit, awaited (systemd drops the calls of a client that
                 * has gone); what is not sent is answered here. */
                (void) sysd_unref_unit(sysd, x->unit);
                if ((state && !streq(state, "failed")) ||
                    sysd_reset_failed_unit_cb(sysd, x->unit, r->stop_cb, r->stop_userdata) < 0)
                        r->stop_cb(r->stop_userdata, 0, NULL);
                if (!x->mount || workspace_pool_give_back(r->ctx->pool, x->workspace, x->mount, x->lease, false) ||
                    sysd_stop_unit(sysd, x->mount, r->stop_cb, r->stop_userdata) < 0)
                        r->stop_cb(r->stop_userdata, 0, NULL);
        } else if (sysd) {
                (void) sysd_unref_unit(sysd, x->unit);
                if (!state || streq(state, "failed"))
                        (void) sysd_reset_failed_unit(sysd, x->unit);
                /* Reusable only once systemd has ended the unit: nothing of it runs any more. */
                if (x->mount && !workspace_pool_give_back(r->ctx->pool, x->workspace, x->mount, x->lease, state != NULL))
                        (void) sysd_stop_unit(sysd, x->mount, NULL, NULL);
        }
        reaper_unlink(r, x);
        reaped_free(x);
}

static void on_state(Reaped *x, const char *state) {
        if (streq(state, "inactive") || streq(state, "failed"))
                reaped_done(x, state);
}

static void on_active_state(void *userdata, _unused_ const char *unit, const char *state) {
        on_state(userdata, state);
}

static void on_get_state(void *userdata, int r, const char *state) {
        Reaped *x = userdata;

        x->call = sysd_call_free(x->call);
        /* No such unit reads as "inactive": collected already. */
        if (r >= 0)
                on_state(x, state);
}

static const SysdUnitEvents reaper_events = { .active_state = on_active_state };
static const SysdUnitEvents mount_events = {};

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        UnitReaper *r = userdata;
        uint64_t now = now_usec(CLOCK_MONOTONIC);

        for (Reaped *x = r->list, *next; x; x = next) {
                next = x->next;
                if (now - x->added_mono >= 2 * UNIT_REAPER_KILL_USEC) {
                        log_warning("%s did not end after its execution was final; leaving it to the sweep.",
                                    x->unit);
                        reaped_done(x, NULL);
                } else if (!x->killed && now - x->added_mono >= UNIT_REAPER_KILL_USEC && r->ctx->sysd) {
                        log_warning("%s still runs %u s after its execution was final; killing it.", x->unit,
                                    (unsigned) (UNIT_REAPER_KILL_USEC / USEC_PER_SEC));
                        (void) sysd_kill_unit(r->ctx->sysd, x->unit, "all", SIGKILL);
                        x->killed = true;
                }
        }
        (void) sd_event_source_set_time_relative(s, USEC_PER_SEC);
        (void) sd_event_source_set_enabled(s, r->list ? SD_EVENT_ON : SD_EVENT_OFF);
        return 0;
}

int unit_reaper_new(Context *ctx, UnitReaper **ret) {
        UnitReaper *r = calloc(1, sizeof(UnitReaper));
        int k;

        if (!r)
                return -ENOMEM;
        r->ctx = ctx;
        k = sd_event_add_time_relative(ctx->event, &r->timer, CLOCK_MONOTONIC, USEC_PER_SEC, 100 * USEC_PER_MSEC,
                                       on_timer, r);
        if (k < 0) {
                free(r);
                return k;
        }
        (void) sd_event_source_set_enabled(r->timer, SD_EVENT_OFF);
        *ret = r;
        return 0;
}

UnitReaper *unit_reaper_free(UnitReaper *r) {
        if (!r)
                return NULL;
        while (r->list) {
                Reaped *x = r->list;

                r->list = x->next;
                reaped_free(x);
        }
        sd_event_source_disable_unref(r->timer);
        free(r);
        return NULL;
}

int unit_reaper_add(UnitReaper *r, const char *unit, const char *mount, const char *workspace, uint64_t lease) {
        Reaped *x = calloc(1, sizeof(Reaped));
        int k;

        if (!x)
                return -ENOMEM;
        x->reaper = r;
        x->unit = strdup(unit);
        x->mount = mount ? strdup(mount) : NULL;
        x->workspace = mount && workspace ? strdup(workspace) : NULL;
        x->lease = lease;
        x->added_mono = now_usec(CLOCK_MONOTONIC);
        if (!x->unit || (mount && (!x->mount || !x->workspace))) {
                reaped_free(x);
                return -ENOMEM;
        }
        k = sysd_watch(r->ctx->sysd, unit, &reaper_events, x, &x->watch);
        if (k >= 0 && mount)
                k = sysd_watch(r->ctx->sysd, mount, &mount_events, x, &x->watch_mount);
        if (k < 0) {
                reaped_free(x);
                return k;
        }
        x->next = r->list;
        r->list = x;
        r->n++;
        /* Stopping: its two answers are waited for too (reaped_done()). */
        if (r->stop_cb && r->stop_more)
                r->stop_more(r->stop_userdata, 2);
        if (sd_event_source_get_enabled(r->timer, NULL) == 0) {
                (void) sd_event_source_set_time_relative(r->timer, USEC_PER_SEC);
                (void) sd_event_source_set_enabled(r->timer, SD_EVENT_ON);
        }
        /* It may have ended already: the signal came while the job still watched it. */
        (void) sysd_get_active_state(r->ctx->sysd, unit, on_get_state, x, &x->call);
        return 0;
}

unsigned unit_reaper_count(const UnitReaper *r) {
        return r->n;
}

unsigned unit_reaper_stop_all(UnitReaper *r, sysd_done_t cb, void (*more)(void *userdata, unsigned n),
                              void *userdata) {
        if (!r->ctx->sysd)
                return 0;
        r->stop_cb = cb;
        r->stop_more = more;
        r->stop_userdata = userdata;
        return 2 * r->n;
}

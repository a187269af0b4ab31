/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fake-sysd.h"
#include "util.h"

typedef enum CallKind { CALL_DONE, CALL_STATE, CALL_PROPS, CALL_LIST } CallKind;

struct SysdCall {
        Sysd *sysd;
        CallKind kind;
        void *cb;
        void *userdata;
        bool floating;
        bool answered;
        int r;
        char *unit;
};

struct SysdWatch {
        Sysd *sysd;
        char *unit;
        const SysdUnitEvents *events;
        void *userdata;
        SysdWatch *next;
};

/* What the loop delivers next: an answer (call) or a signal (unit, result or state). */
typedef struct Pending {
        SysdCall *call;                  /* an answer; NULL once the call was freed */
        char *unit;                      /* a signal */
        char *result;                    /* JobRemoved result, or NULL: PropertiesChanged */
        struct Pending *next;
} Pending;

struct Sysd {
        sd_event *event;
        sd_event_source *defer;
        FakeSysdConfig cfg;
        FakeUnit *units;
        unsigned n_services;
        SysdWatch *watches;
        Pending *head, *tail;
};

static int on_defer(sd_event_source *src, void *userdata);

int fake_sysd_new(sd_event *e, Sysd **ret) {
        Sysd *s = calloc(1, sizeof(Sysd));
        int r;

        if (!s)
                return -ENOMEM;
        s->event = sd_event_ref(e);
        r = sd_event_add_defer(e, &s->defer, on_defer, s);
        if (r < 0)
                return r;
        (void) sd_event_source_set_enabled(s->defer, SD_EVENT_OFF);
        *ret = s;
        return 0;
}

FakeSysdConfig *fake_sysd_config(Sysd *s) {
        return &s->cfg;
}

FakeUnit *fake_sysd_unit(Sysd *s, const char *name) {
        for (FakeUnit *u = s->units; u; u = u->next)
                if (streq(u->name, name))
                        return u;
        return NULL;
}

unsigned fake_sysd_n_services(Sysd *s) {
        return s->n_services;
}

static FakeUnit *unit_new(Sysd *s, const char *name) {
        FakeUnit *u = calloc(1, sizeof(FakeUnit));

        assert(u);
        u->name = strdup(name);
        assert(u->name);
        u->ctl_fd = -EBADF;
        snprintf(u->active_state, sizeof(u->active_state), "activating");
        u->next = s->units;
        s->units = u;
        return u;
}

void fake_sysd_reset(Sysd *s) {
        while (s->units) {
                FakeUnit *u = s->units;

                s->units = u->next;
                if (u->where)
                        (void) umount2(u->where, MNT_DETACH);
                safe_close(u->ctl_fd);
                free(u->where);
                free(u->name);
                free(u);
        }
}

void fake_sysd_free(Sysd *s) {
        if (!s)
                return;
        fake_sysd_reset(s);
        while (s->watches)
                sysd_watch_free(s->watches);
        while (s->head) {
                Pending *p = s->head;

                s->head = p->next;
                if (p->call && p->call->floating) {
                        free(p->call->unit);
                        free(p->call);
                }
                free(p->unit);
                free(p->result);
                free(p);
        }
        sd_event_source_disable_unref(s->defer);
        sd_event_unref(s->event);
        free(s);
}

static void enqueue(Sysd *s, Pending *p) {
        if (s->tail)
                s->tail->next = p;
        else
                s->head = p;
        s->tail = p;
        (void) sd_event_source_set_enabled(s->defer, SD_EVENT_ON);
}

static void enqueue_signal(Sysd *s, const char *unit, const char *result) {
        Pending *p = calloc(1, sizeof(Pending));

        assert(p);
        p->unit = strdup(unit);
        p->result = result ? strdup(result) : NULL;
        enqueue(s, p);
}

static SysdWatch *watch_find(Sysd *s, const char *unit) {
        for (SysdWatch *w = s->watches; w; w = w->next)
                if (streq(w->unit, unit))
                        return w;
        return NULL;
}

static void deliver_job_removed(Sysd *s, const char *unit, const char *result) {
        FakeUnit *u = fake_sysd_unit(s, unit);
        SysdWatch *w;

        /* A mount's start job is done when the file system is there. */
        if (u && u->where && streq(result, "done")) {
                (void) mkdir(u->where, 0755);
                assert(mount("tmpfs", u->where, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=4m") == 0);
        }
        if (u && streq(result, "done"))
                snprintf(u->active_state, sizeof(u->active_state), "active");
        w = watch_find(s, unit);
        if (w && w->events->job_removed)
                w->events->job_removed(w->userdata, unit, result);
}

static void deliver_state(Sysd *s, const char *unit) {
        FakeUnit *u = fake_sysd_unit(s, unit);
        SysdWatch *w = watch_find(s, unit);

        if (u && w && w->events->active_state)
                w->events->active_state(w->userdata, unit, u->active_state);
}

static void answer(SysdCall *c) {
        Sysd *s = c->sysd;
        FakeUnit *u = c->unit ? fake_sysd_unit(s, c->unit) : NULL;

        c->answered = true;
        switch (c->kind) {
        case CALL_DONE:
                if (c->cb)
                        ((sysd_done_t) c->cb)(c->userdata, c->r, c->r < 0 ? "fake systemd says no" : NULL);
                break;
        case CALL_STATE:
                ((sysd_state_done_t) c->cb)(c->userdata, 0, u ? u->active_state : "inactive");
                break;
        case CALL_PROPS:
                ((sysd_props_done_t) c->cb)(c->userdata, u ? 0 : -ENOENT, u ? NULL : "no such unit",
                                            u ? &u->props : NULL);
                break;
        case CALL_LIST:
                ((sysd_list_done_t) c->cb)(c->userdata, 0, NULL, 0);
                break;
        }
}

static int on_defer(sd_event_source *src, void *userdata) {
        Sysd *s = userdata;
        Pending *p = s->head;

        if (!p) {
                (void) sd_event_source_set_enabled(src, SD_EVENT_OFF);
                return 0;
        }
        s->head = p->next;
        if (!s->head)
                s->tail = NULL;
        if (p->call) {
                SysdCall *c = p->call;
                bool floating = c->floating;

                answer(c);
                if (floating)
                        sysd_call_free(c);
        } else if (p->result)
                deliver_job_removed(s, p->unit, p->result);
        else
                deliver_state(s, p->unit);
        free(p->unit);
        free(p->result);
        free(p);
        if (!s->head)
                (void) sd_event_source_set_enabled(src, SD_EVENT_OFF);
        return 0;
}

static int call(Sysd *s, CallKind kind, void *cb, void *userdata, const char *unit, int r, SysdCall **ret) {
        SysdCall *c = calloc(1, sizeof(SysdCall));
        Pending *p = calloc(1, sizeof(Pending));

        if (!c || !p) {
                free(c);
                free(p);
                return -ENOMEM;
        }
        c->sysd = s;
        c->kind = kind;
        c->cb = cb;
        c->userdata = userdata;
        c->r = r;
        c->unit = unit ? strdup(unit) : NULL;
        c->floating = !ret;
        p->call = c;
        enqueue(s, p);
        if (ret)
                *ret = c;
        return 0;
}

SysdCall *sysd_call_free(SysdCall *c) {
        if (!c)
                return NULL;
        /* Cancel: an answer still queued is dropped. */
        for (Pending *p = c->sysd->head; p; p = p->next)
                if (p->call == c) {
                        p->call = NULL;
                        p->unit = p->unit ?: strdup("");
                        p->result = p->result ?: strdup("");     /* a no-op signal to nobody */
                }
        free(c->unit);
        free(c);
        return NULL;
}

int sysd_watch(Sysd *s, const char *unit, const SysdUnitEvents *events, void *userdata, SysdWatch **ret) {
        SysdWatch *w;

        if (watch_find(s, unit))
                return -EEXIST;
        w = calloc(1, sizeof(SysdWatch));
        if (!w)
                return -ENOMEM;
        w->sysd = s;
        w->unit = strdup(unit);
        w->events = events;
        w->userdata = userdata;
        w->next = s->watches;
        s->watches = w;
        *ret = w;
        return 0;
}

SysdWatch *sysd_watch_free(SysdWatch *w) {
        if (!w)
                return NULL;
        for (SysdWatch **x = &w->sysd->watches; *x; x = &(*x)->next)
                if (*x == w) {
                        *x = w->next;
                        break;
                }
        free(w->unit);
        free(w);
        return NULL;
}

bool sysd_is_watched(Sysd *s, const char *unit) {
        return watch_find(s, unit) != NULL;
}

int sysd_start_transient(Sysd *s, const char *name, const UnitProps *props, sysd_done_t cb, void *userdata,
                         SysdCall **ret) {
        FakeUnit *u;
        int r;

        if (s->cfg.fail_starts)
                return call(s, CALL_DONE, (void *) cb, userdata, name, -EIO, ret);
        u = unit_new(s, name);
        u->service = true;
        u->start_order = ++s->n_services;
        /* What sd-bus would pass: a duplicate of the control channel's child end. */
        for (size_t i = 0; i < props->n; i++)
                if (props->props[i].kind == PK_FD && streq(props->props[i].name, "StandardInputFileDescriptor"))
                        u->ctl_fd = fcntl(props->props[i].fd, F_DUPFD_CLOEXEC, 3);
        assert(u->ctl_fd >= 0);
        (void) fcntl(u->ctl_fd, F_SETFL, O_NONBLOCK);
        r = call(s, CALL_DONE, (void *) cb, userdata, name, 0, ret);
        if (r >= 0 && !s->cfg.hold_starts)
                enqueue_signal(s, name, "done");
        return r;
}

int sysd_start_tmpfs(Sysd *s, const char *name, const char *where, uint64_t size_bytes, sysd_done_t cb,
                     void *userdata, SysdCall **ret) {
        FakeUnit *u = unit_new(s, name);
        int r;

        u->where = strdup(where);
        assert(u->where);
        r = call(s, CALL_DONE, (void *) cb, userdata, name, 0, ret);
        if (r >= 0 && !s->cfg.hold_mounts)
                enqueue_signal(s, name, "done");
        return r;
}

void fake_sysd_job_removed(Sysd *s, const char *name, const char *result) {
        enqueue_signal(s, name, result);
}

void fake_sysd_unit_ended(Sysd *s, const char *name, const char *state, const SysdServiceProps *props) {
        FakeUnit *u = fake_sysd_unit(s, name);

        assert(u);
        snprintf(u->active_state, sizeof(u->active_state), "%s", state);
        u->props = *props;
        enqueue_signal(s, name, NULL);
}

int sysd_reset_failed_unit_cb(Sysd *s, const char *name, sysd_done_t cb, void *userdata) {
        return call(s, CALL_DONE, (void *) cb, userdata, name, 0, NULL);
}

/* The warm pool is not part of test-job (its jobs start cold): nothing to change. */
int sysd_set_unit_properties(Sysd *s, const char *name, const UnitProps *props, sysd_done_t cb, void *userdata,
                             SysdCall **ret) {
        return call(s, CALL_DONE, (void *) cb, userdata, name, fake_sysd_unit(s, name) ? 0 : -ENOENT, ret);
}

int sysd_stop_unit(Sysd *s, const char *name, sysd_done_t cb, void *userdata) {
        FakeUnit *u = fake_sysd_unit(s, name);

        if (u) {
                u->stopped = true;
                snprintf(u->active_state, sizeof(u->active_state), "inactive");
                if (u->where)
                        (void) umount2(u->where, MNT_DETACH);
        }
        return call(s, CALL_DONE, (void *) cb, userdata, name, u ? 0 : -ENOENT, NULL);
}

int sysd_kill_unit(Sysd *s, const char *name, const char *whom, int sig) {
        FakeUnit *u = fake_sysd_unit(s, name);

        if (u && streq(whom, "main") && sig == SIGUSR1)
                u->n_kill_main_usr1++;
        else if (u && streq(whom, "all"))
                u->n_kill_all++;
        return call(s, CALL_DONE, NULL, NULL, name, u ? 0 : -ENOENT, NULL);
}

int sysd_reset_failed_unit(Sysd *s, const char *name) {
        return call(s, CALL_DONE, NULL, NULL, name, 0, NULL);
}

int sysd_unref_unit(Sysd *s, const char *name) {
        return call(s, CALL_DONE, NULL, NULL, name, 0, NULL);
}

int sysd_get_active_state(Sysd *s, const char *name, sysd_state_done_t cb, void *userdata, SysdCall **ret) {
        return call(s, CALL_STATE, (void *) cb, userdata, name, 0, ret);
}

int sysd_get_service_props(Sysd *s, const char *name, sysd_props_done_t cb, void *userdata, SysdCall **ret) {
        return call(s, CALL_PROPS, (void *) cb, userdata, name, 0, ret);
}

int sysd_list_units(Sysd *s, const char *const *patterns, sysd_list_done_t cb, void *userdata) {
        return call(s, CALL_LIST, (void *) cb, userdata, NULL, 0, NULL);
}

bool sysd_unit_exists_sync(Sysd *s, const char *name) {
        return fake_sysd_unit(s, name) != NULL;
}

/* Runs with network are the integration tests' (test-network): the fake has no proxy units. */
int sysd_start_transient_aux(Sysd *s, const char *name, const UnitProps *props, const char *aux_name,
                             const UnitProps *aux_props, sysd_done_t cb, void *userdata, SysdCall **ret) {
        return -EOPNOTSUPP;
}


/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/mount.h>

#include "log.h"
#include "sysd.h"

#define SYSD_DEST "org.freedesktop.systemd1"
#define SYSD_PATH "/org/freedesktop/systemd1"
#define SYSD_MANAGER "org.freedesktop.systemd1.Manager"
#define SYSD_UNIT_PREFIX SYSD_PATH "/unit"
#define WATCH_BUCKETS 256

/* A variant holding an array of element_sig, both left open. */
static int open_array_variant(sd_bus_message *m, const char *element_sig) {
        char sig[32];
        int r;

        if (snprintf(sig, sizeof(sig), "a%s", element_sig) >= (int) sizeof(sig))
                return -EINVAL;
        r = sd_bus_message_open_container(m, 'v', sig);
        if (r < 0)
                return r;
        return sd_bus_message_open_container(m, 'a', element_sig);
}

static int close_containers(sd_bus_message *m, unsigned n) {
        for (unsigned i = 0; i < n; i++) {
                int r = sd_bus_message_close_container(m);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int append_one(sd_bus_message *m, const UnitProp *x) {
        int r;

        r = sd_bus_message_open_container(m, 'r', "sv");
        if (r < 0)
                return r;
        r = sd_bus_message_append(m, "s", x->name);
        if (r < 0)
                return r;

        switch (x->kind) {
        case PK_BOOL:
                r = sd_bus_message_append(m, "v", "b", (int) x->b);
                break;
        case PK_STRING:
                r = sd_bus_message_append(m, "v", "s", x->s);
                break;
        case PK_U64:
                r = sd_bus_message_append(m, "v", "t", x->u);
                break;
        case PK_U32:
                r = sd_bus_message_append(m, "v", "u", (uint32_t) x->u);
                break;
        case PK_I32:
                r = sd_bus_message_append(m, "v", "i", x->i);
                break;
        case PK_FD:
                r = sd_bus_message_append(m, "v", "h", x->fd);
                break;
        case PK_STRV:
                r = sd_bus_message_open_container(m, 'v', "as");
                if (r < 0)
                        return r;
                r = sd_bus_message_append_strv(m, x->strv);
                if (r < 0)
                        return r;
                r = sd_bus_message_close_container(m);
                break;
        case PK_BINDS:
                r = open_array_variant(m, "(ssbt)");
                for (size_t i = 0; r >= 0 && i + 2 < x->n; i += 3)
                        r = sd_bus_message_append(m, "(ssbt)", x->strv[i], x->strv[i + 1],
                                                  (int) streq(x->strv[i + 2], "-"), (uint64_t) MS_REC);
                if (r >= 0)
                        r = close_containers(m, 2);
                break;
        case PK_TMPFS:
                r = open_array_variant(m, "(ss)");
                for (size_t i = 0; r >= 0 && i + 1 < x->n; i += 2)
                        r = sd_bus_message_append(m, "(ss)", x->strv[i], x->strv[i + 1]);
                if (r >= 0)
                        r = close_containers(m, 2);
                break;
        case PK_EXEC_EX: {
                /* One command: (path, argv, flags), ExecStartEx= (systemd ≥ 243). */
                char *flags[2] = { (char *) x->flag, NULL };

                r = open_array_variant(m, "(sasas)");
                if (r >= 0)
                        r = sd_bus_message_open_container(m, 'r', "sasas");
                if (r >= 0)
                        r = sd_bus_message_append(m, "s", x->s);
                if (r >= 0)
                        r = sd_bus_message_append_strv(m, x->strv);
                if (r >= 0)
                        r = sd_bus_message_append_strv(m, x->flag ? flags : flags + 1);
                if (r >= 0)
                        r = close_containers(m, 3);
                break;
        }
        case PK_BSTRV:
                r = sd_bus_message_open_container(m, 'v', "(bas)");
                if (r >= 0)
                        r = sd_bus_message_open_container(m, 'r', "bas");
                if (r >= 0)
                        r = sd_bus_message_append(m, "b", (int) x->b);
                if (r >= 0)
                        r = sd_bus_message_append_strv(m, x->strv);
                if (r >= 0)
                        r = close_containers(m, 2);
                break;
        case PK_EXEC:
                /* One command: (path, argv, ignore-failure). */
                r = open_array_variant(m, "(sasb)");
                if (r >= 0)
                        r = sd_bus_message_open_container(m, 'r', "sasb");
                if (r >= 0)
                        r = sd_bus_message_append(m, "s", x->s);
                if (r >= 0)
                        r = sd_bus_message_append_strv(m, x->strv);
                if (r >= 0)
                        r = sd_bus_message_append(m, "b", 0);
                if (r >= 0)
                        r = close_containers(m, 3);
                break;
        }
        if (r < 0)
                return r;
        return sd_bus_message_close_container(m);
}

int sysd_append_props(sd_bus_message *m, const UnitProps *p) {
        int r;

        r = sd_bus_message_open_container(m, 'a', "(sv)");
        if (r < 0)
                return r;
        for (size_t i = 0; i < p->n; i++) {
                r = append_one(m, &p->props[i]);
                if (r < 0)
                        return r;
        }
        return sd_bus_message_close_container(m);
}

/* ---- the watch table ------------------------------------------------------------------------ */

struct SysdWatch {
        Sysd *sysd;
        SysdWatch *next;         /* in its bucket */
        char *unit;
        SysdUnitEvents events;
        void *userdata;
};

typedef enum CallKind {
        CALL_DONE,
        CALL_STATE,
        CALL_PROPS,
        CALL_LIST,
} CallKind;

struct SysdCall {
        Sysd *sysd;
        sd_bus_slot *slot;
        CallKind kind;
        bool floating;           /* no handle: freed after its answer, or with the Sysd */
        SysdCall *prev, *next;   /* floating: in Sysd.floating */
        union {
                sysd_done_t done;
                sysd_state_done_t state;
                sysd_props_done_t props;
                sysd_list_done_t list;
        } cb;
        void *userdata;
        const char *what;        /* for the log of an unhandled error */
};

struct Sysd {
        sd_bus *bus;
        sd_bus_slot *match_job_removed, *match_props;
        SysdWatch *buckets[WATCH_BUCKETS];
        SysdCall *floating;      /* calls nobody holds a handle to, still unanswered */
};

static unsigned bucket_of(const char *unit) {
        uint32_t h = 2166136261U;       /* FNV-1a */

        for (const unsigned char *c = (const unsigned char *) unit; *c; c++)
                h = (h ^ *c) * 16777619U;
        return h % WATCH_BUCKETS;
}

static SysdWatch *watch_find(Sysd *s, const char *unit) {
        for (SysdWatch *w = s->buckets[bucket_of(unit)]; w; w = w->next)
                if (streq(w->unit, unit))
                        return w;
        return NULL;
}

int sysd_watch(Sysd *s, const char *unit, const SysdUnitEvents *events, void *userdata, SysdWatch **ret) {
        SysdWatch *w;
        unsigned b;

        assert(s && unit && events && ret);
        if (watch_find(s, unit))
                return -EEXIST;
        w = calloc(1, sizeof(SysdWatch));
        if (!w)
                return -ENOMEM;
        w->unit = strdup(unit);
        if (!w->unit) {
                free(w);
                return -ENOMEM;
        }
        w->sysd = s;
        w->events = *events;
        w->userdata = userdata;
        b = bucket_of(unit);
        w->next = s->buckets[b];
        s->buckets[b] = w;
        *ret = w;
        return 0;
}

SysdWatch *sysd_watch_free(SysdWatch *w) {
        if (!w)
                return NULL;
        if (w->sysd)
                for (SysdWatch **p = &w->sysd->buckets[bucket_of(w->unit)]; *p; p = &(*p)->next)
                        if (*p == w) {
                                *p = w->next;
                                break;
                        }
        free(w->unit);
        free(w);
        return NULL;
}

bool sysd_is_watched(Sysd *s, const char *unit) {
        return watch_find(s, unit) != NULL;
}

/* ---- signals -------------------------------------------------------------------------------- */

static int on_job_removed(sd_bus_message *msg, void *userdata, _unused_ sd_bus_error *ret_error) {
        Sysd *s = userdata;
        const char *path, *unit, *result;
        SysdWatch *w;
        uint32_t id;

        if (sd_bus_message_read(msg, "uoss", &id, &path, &unit, &result) < 0)
                return 0;
        w = watch_find(s, unit);
        if (w && w->events.job_removed)
                w->events.job_removed(w->userdata, unit, result);
        return 0;
}

static int on_properties_changed(sd_bus_message *msg, void *userdata, _unused_ sd_bus_error *ret_error) {
        Sysd *s = userdata;
        _cleanup_free_ char *unit = NULL;
        const char *path = sd_bus_message_get_path(msg), *iface;
        SysdWatch *w;

        /* Only units someone watches: every unit of the host changes state now and then. */
        if (!path || sd_bus_path_decode(path, SYSD_UNIT_PREFIX, &unit) <= 0 || !unit)
                return 0;
        w = watch_find(s, unit);
        if (!w || !w->events.active_state)
                return 0;
        if (sd_bus_message_read(msg, "s", &iface) < 0 || !streq(iface, "org.freedesktop.systemd1.Unit"))
                return 0;
        if (sd_bus_message_enter_container(msg, 'a', "{sv}") < 0)
                return 0;
        while (sd_bus_message_enter_container(msg, 'e', "sv") > 0) {
                const char *name, *state;

                if (sd_bus_message_read(msg, "s", &name) < 0)
                        return 0;
                if (streq(name, "ActiveState")) {
                        if (sd_bus_message_read(msg, "v", "s", &state) < 0)
                                return 0;
                        /* The last thing done with msg: the watcher may free itself. */
                        w->events.active_state(w->userdata, unit, state);
                        return 0;
                }
                if (sd_bus_message_skip(msg, "v") < 0 || sd_bus_message_exit_container(msg) < 0)
                        return 0;
        }
        return 0;
}

int sysd_new(sd_bus *bus, Sysd **ret) {
        Sysd *s;
        int r;

        assert(bus && ret);
        s = calloc(1, sizeof(Sysd));
        if (!s)
                return -ENOMEM;
        s->bus = sd_bus_ref(bus);
        r = sd_bus_match_signal_async(bus, &s->match_job_removed, SYSD_DEST, SYSD_PATH, SYSD_MANAGER, "JobRemoved",
                                      on_job_removed, NULL, s);
        if (r >= 0)
                r = sd_bus_add_match_async(bus, &s->match_props,
                                           "type='signal',sender='org.freedesktop.systemd1',"
                                           "interface='org.freedesktop.DBus.Properties',member='PropertiesChanged',"
                                           "path_namespace='/org/freedesktop/systemd1/unit',"
                                           "arg0='org.freedesktop.systemd1.Unit'",
                                           on_properties_changed, NULL, s);
        if (r >= 0)
                r = sd_bus_call_method_async(bus, NULL, SYSD_DEST, SYSD_PATH, SYSD_MANAGER, "Subscribe", NULL, NULL, "");
        if (r < 0) {
                sysd_free(s);
                return r;
        }
        *ret = s;
        return 0;
}

Sysd *sysd_free(Sysd *s) {
        if (!s)
                return NULL;
        sd_bus_slot_unref(s->match_job_removed);
        sd_bus_slot_unref(s->match_props);
        /* Unanswered calls nobody holds (a StopUnit at exit): their slots hold the bus. */
        while (s->floating)
                sysd_call_free(s->floating);
        /* Watches left are their owners' to free; they only lose their table. */
        for (size_t b = 0; b < WATCH_BUCKETS; b++)
                for (SysdWatch *w = s->buckets[b]; w; w = w->next)
                        w->sysd = NULL;
        sd_bus_unref(s->bus);
        free(s);
        return NULL;
}

/* ---- calls ---------------------------------------------------------------------------------- */

SysdCall *sysd_call_free(SysdCall *c) {
        if (!c)
                return NULL;
        if (c->floating && c->sysd) {
                if (c->prev)
                        c->prev->next = c->next;
                else
                        c->sysd->floating = c->next;
                if (c->next)
                        c->next->prev = c->prev;
        }
        sd_bus_slot_unref(c->slot);
        free(c);
        return NULL;
}

static int errno_of(const sd_bus_error *e) {
        if (sd_bus_error_has_name(e, "org.freedesktop.systemd1.NoSuchUnit") ||
            sd_bus_error_has_name(e, "org.freedesktop.DBus.Error.UnknownObject"))
                return -ENOENT;
        return sd_bus_error_get_errno(e) > 0 ? -sd_bus_error_get_errno(e) : -EIO;
}

/* The service properties sandboxd reads, and where they go. */
static const struct {
        const char *name;
        char type;
        size_t offset;
} service_props_table[] = {
        { "Result",                          's', offsetof(SysdServiceProps, result) },
        { "ExecMainCode",                    'i', offsetof(SysdServiceProps, exec_main_code) },
        { "ExecMainStatus",                  'i', offsetof(SysdServiceProps, exec_main_status) },
        { "ExecMainStartTimestampMonotonic", 't', offsetof(SysdServiceProps, exec_main_start_mono) },
        { "ExecMainExitTimestampMonotonic",  't', offsetof(SysdServiceProps, exec_main_exit_mono) },
        { "CPUUsageNSec",                    't', offsetof(SysdServiceProps, cpu_usage_nsec) },
};

static int read_service_props(sd_bus_message *reply, SysdServiceProps *p) {
        int r;

        *p = (SysdServiceProps) { .cpu_usage_nsec = UINT64_MAX };
        r = sd_bus_message_enter_container(reply, 'a', "{sv}");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_enter_container(reply, 'e', "sv")) > 0) {
                const char *name;
                size_t i;

                r = sd_bus_message_read(reply, "s", &name);
                if (r < 0)
                        return r;
                for (i = 0; i < ELEMENTSOF(service_props_table); i++)
                        if (streq(name, service_props_table[i].name))
                                break;
                if (i == ELEMENTSOF(service_props_table))
                        r = sd_bus_message_skip(reply, "v");
                else {
                        char sig[2] = { service_props_table[i].type, 0 };
                        void *dst = (uint8_t *) p + service_props_table[i].offset;
                        const char *str;

                        if (service_props_table[i].type == 's') {
                                r = sd_bus_message_read(reply, "v", "s", &str);
                                if (r >= 0)
                                        snprintf(p->result, sizeof(p->result), "%s", str);
                        } else
                                r = sd_bus_message_read(reply, "v", sig, dst);
                }
                if (r < 0)
                        return r;
                r = sd_bus_message_exit_container(reply);
                if (r < 0)
                        return r;
        }
        return r;
}

static int on_reply(sd_bus_message *reply, void *userdata, _unused_ sd_bus_error *ret_error) {
        SysdCall *c = userdata;
        const sd_bus_error *e = sd_bus_message_get_error(reply);
        bool floating = c->floating;
        int r = e ? errno_of(e) : 0;

        /* The caller may free its handle (and c with it) in the callback: nothing of c after it. */
        switch (c->kind) {
        case CALL_DONE:
                if (c->cb.done)
                        c->cb.done(c->userdata, r, e ? e->message : NULL);
                else if (e && r != -ENOENT && !sd_bus_error_has_name(e, "org.freedesktop.systemd1.NoUnitProcess"))
                        log_warning("%s: %s", c->what, e->message);
                break;
        case CALL_STATE: {
                const char *state = NULL;

                if (r == -ENOENT)
                        c->cb.state(c->userdata, 0, "inactive");
                else if (r < 0 || sd_bus_message_read(reply, "v", "s", &state) < 0)
                        c->cb.state(c->userdata, r < 0 ? r : -EBADMSG, NULL);
                else
                        c->cb.state(c->userdata, 0, state);
                break;
        }
        case CALL_PROPS: {
                SysdServiceProps p;

                if (r >= 0 && read_service_props(reply, &p) < 0)
                        r = -EBADMSG;
                c->cb.props(c->userdata, r, e ? e->message : NULL, r >= 0 ? &p : NULL);
                break;
        }
        case CALL_LIST: {
                SysdUnitInfo *units = NULL;
                size_t n = 0, allocated = 0;
                const char *name, *desc, *load, *active, *sub, *follow, *upath, *jtype, *jpath;
                uint32_t jid;

                if (r >= 0 && sd_bus_message_enter_container(reply, 'a', "(ssssssouso)") < 0)
                        r = -EBADMSG;
                while (r >= 0 && sd_bus_message_read(reply, "(ssssssouso)", &name, &desc, &load, &active, &sub,
                                                     &follow, &upath, &jid, &jtype, &jpath) > 0) {
                        if (n >= allocated) {
                                SysdUnitInfo *nu = realloc(units, (allocated ? allocated * 2 : 16) * sizeof(*units));

                                if (!nu) {
                                        r = -ENOMEM;
                                        break;
                                }
                                units = nu;
                                allocated = allocated ? allocated * 2 : 16;
                        }
                        units[n++] = (SysdUnitInfo) { .name = name, .active_state = active, .sub_state = sub,
                                                      .job_type = jtype };
                }
                c->cb.list(c->userdata, r, units, r >= 0 ? n : 0);
                free(units);
                break;
        }
        }
        if (floating)
                sysd_call_free(c);
        return 0;
}

/* Send msg and hand its answer to cb. ret NULL: a floating call. */
static int call(Sysd *s, sd_bus_message *msg, CallKind kind, void *cb, void *userdata, const char *what,
                SysdCall **ret) {
        SysdCall *c = calloc(1, sizeof(SysdCall));
        int r;

        if (!c)
                return -ENOMEM;
        c->sysd = s;
        c->kind = kind;
        c->userdata = userdata;
        c->what = what;
        c->floating = !ret;
        switch (kind) {
        case CALL_DONE:
                c->cb.done = (sysd_done_t) cb;
                break;
        case CALL_STATE:
                c->cb.state = (sysd_state_done_t) cb;
                break;
        case CALL_PROPS:
                c->cb.props = (sysd_props_done_t) cb;
                break;
        case CALL_LIST:
                c->cb.list = (sysd_list_done_t) cb;
                break;
        }
        r = sd_bus_call_async(s->bus, &c->slot, msg, on_reply, c, 0);
        if (r < 0) {
                free(c);
                return r;
        }
        if (ret)
                *ret = c;
        else {
                c->next = s->floating;
                if (s->floating)
                        s->floating->prev = c;
                s->floating = c;
        }
        return 0;
}

static int new_manager_call(Sysd *s, const char *method, sd_bus_message **ret) {
        return sd_bus_message_new_method_call(s->bus, ret, SYSD_DEST, SYSD_PATH, SYSD_MANAGER, method);
}

int sysd_start_transient(Sysd *s, const char *name, const UnitProps *props, sysd_done_t cb, void *userdata,
                         SysdCall **ret) {
        return sysd_start_transient_aux(s, name, props, NULL, NULL, cb, userdata, ret);
}

int sysd_start_transient_aux(Sysd *s, const char *name, const UnitProps *props, const char *aux_name,
                             const UnitProps *aux_props, sysd_done_t cb, void *userdata, SysdCall **ret) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        int r;

        r = new_manager_call(s, "StartTransientUnit", &m);
        if (r >= 0)
                r = sd_bus_message_append(m, "ss", name, "fail");
        if (r >= 0)
                r = sysd_append_props(m, props);
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'a', "(sa(sv))");
        if (r >= 0 && aux_name) {
                r = sd_bus_message_open_container(m, 'r', "sa(sv)");
                if (r >= 0)
                        r = sd_bus_message_append(m, "s", aux_name);
                if (r >= 0)
                        r = sysd_append_props(m, aux_props);
                if (r >= 0)
                        r = sd_bus_message_close_container(m);
        }
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        if (r >= 0)
                r = call(s, m, CALL_DONE, (void *) cb, userdata, "StartTransientUnit", ret);
        return r;
}

int sysd_set_unit_properties(Sysd *s, const char *name, const UnitProps *props, sysd_done_t cb, void *userdata,
                             SysdCall **ret) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        int r;

        /* runtime: below /run, gone with the unit (which is transient anyway). */
        r = new_manager_call(s, "SetUnitProperties", &m);
        if (r >= 0)
                r = sd_bus_message_append(m, "sb", name, true);
        if (r >= 0)
                r = sysd_append_props(m, props);
        if (r >= 0)
                r = call(s, m, CALL_DONE, (void *) cb, userdata, "SetUnitProperties", ret);
        return r;
}

int sysd_start_tmpfs(Sysd *s, const char *name, const char *where, uint64_t size_bytes, sysd_done_t cb,
                     void *userdata, SysdCall **ret) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        char options[128];
        int r;

        /* 0755 root: the sandbox writes only into the subdirectories sandboxd creates. */
        snprintf(options, sizeof(options), "mode=0755,size=%" PRIu64 ",nosuid,nodev", size_bytes);
        r = new_manager_call(s, "StartTransientUnit", &m);
        if (r >= 0)
                r = sd_bus_message_append(m, "ss", name, "fail");
        if (r >= 0)
                r = sd_bus_message_append(m, "a(sv)", 6,
                                          "Description", "s", "sandboxd execution workspace",
                                          "What", "s", "tmpfs",
                                          "Where", "s", where,
                                          "Type", "s", "tmpfs",
                                          "Options", "s", options,
                                          "CollectMode", "s", "inactive-or-failed");
        if (r >= 0)
                r = sd_bus_message_append(m, "a(sa(sv))", 0);
        if (r >= 0)
                r = call(s, m, CALL_DONE, (void *) cb, userdata, "StartTransientUnit", ret);
        return r;
}

static int simple_call(Sysd *s, const char *method, sysd_done_t cb, void *userdata, const char *types, ...) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        va_list ap;
        int r;

        r = new_manager_call(s, method, &m);
        if (r < 0)
                return r;
        va_start(ap, types);
        r = sd_bus_message_appendv(m, types, ap);
        va_end(ap);
        if (r >= 0)
                r = call(s, m, CALL_DONE, (void *) cb, userdata, method, NULL);
        return r;
}

int sysd_stop_unit(Sysd *s, const char *name, sysd_done_t cb, void *userdata) {
        return simple_call(s, "StopUnit", cb, userdata, "ss", name, "replace");
}

int sysd_kill_unit(Sysd *s, const char *name, const char *whom, int sig) {
        return simple_call(s, "KillUnit", NULL, NULL, "ssi", name, whom, sig);
}

int sysd_reset_failed_unit(Sysd *s, const char *name) {
        return simple_call(s, "ResetFailedUnit", NULL, NULL, "s", name);
}

int sysd_reset_failed_unit_cb(Sysd *s, const char *name, sysd_done_t cb, void *userdata) {
        return simple_call(s, "ResetFailedUnit", cb, userdata, "s", name);
}

int sysd_unref_unit(Sysd *s, const char *name) {
        return simple_call(s, "UnrefUnit", NULL, NULL, "s", name);
}

static int properties_call(Sysd *s, const char *name, const char *method, const char *iface, const char *prop,
                           sd_bus_message **ret) {
        _cleanup_free_ char *path = NULL;
        int r;

        r = sd_bus_path_encode(SYSD_UNIT_PREFIX, name, &path);
        if (r < 0)
                return r;
        r = sd_bus_message_new_method_call(s->bus, ret, SYSD_DEST, path, "org.freedesktop.DBus.Properties", method);
        if (r < 0)
                return r;
        r = prop ? sd_bus_message_append(*ret, "ss", iface, prop) : sd_bus_message_append(*ret, "s", iface);
        if (r < 0)
                *ret = sd_bus_message_unref(*ret);
        return r;
}

int sysd_get_active_state(Sysd *s, const char *name, sysd_state_done_t cb, void *userdata, SysdCall **ret) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        int r;

        r = properties_call(s, name, "Get", "org.freedesktop.systemd1.Unit", "ActiveState", &m);
        if (r >= 0)
                r = call(s, m, CALL_STATE, (void *) cb, userdata, "Get ActiveState", ret);
        return r;
}

int sysd_get_service_props(Sysd *s, const char *name, sysd_props_done_t cb, void *userdata, SysdCall **ret) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        int r;

        r = properties_call(s, name, "GetAll", "org.freedesktop.systemd1.Service", NULL, &m);
        if (r >= 0)
                r = call(s, m, CALL_PROPS, (void *) cb, userdata, "GetAll", ret);
        return r;
}

int sysd_list_units(Sysd *s, const char *const *patterns, sysd_list_done_t cb, void *userdata) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        static const char *const no_states[] = { NULL };
        int r;

        r = new_manager_call(s, "ListUnitsByPatterns", &m);
        if (r >= 0)
                r = sd_bus_message_append_strv(m, (char **) no_states);
        if (r >= 0)
                r = sd_bus_message_append_strv(m, (char **) patterns);
        if (r >= 0)
                r = call(s, m, CALL_LIST, (void *) cb, userdata, "ListUnitsByPatterns", NULL);
        return r;
}

bool sysd_unit_exists_sync(Sysd *s, const char *name) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;

        return sd_bus_call_method(s->bus, SYSD_DEST, SYSD_PATH, SYSD_MANAGER, "GetUnit", &error, &reply, "s", name) >= 0;
}

int sysd_barrier(Sysd *s, sysd_done_t cb, void *userdata) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        int r;

        r = sd_bus_message_new_method_call(s->bus, &m, SYSD_DEST, SYSD_PATH, "org.freedesktop.DBus.Peer", "Ping");
        if (r >= 0)
                r = call(s, m, CALL_DONE, (void *) cb, userdata, "Ping", NULL);
        return r;
}

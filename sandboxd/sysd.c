/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <sys/mount.h>

#include "log.h"
#include "sysd.h"

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

int sysd_start_transient(sd_bus *bus, const char *name, const UnitProps *props, sd_bus_message_handler_t cb,
                         void *userdata, sd_bus_slot **ret_slot) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        int r;

        r = sd_bus_message_new_method_call(bus, &m, SYSD_DEST, SYSD_PATH, SYSD_MANAGER, "StartTransientUnit");
        if (r < 0)
                return r;
        r = sd_bus_message_append(m, "ss", name, "fail");
        if (r >= 0)
                r = sysd_append_props(m, props);
        if (r >= 0)
                r = sd_bus_message_append(m, "a(sa(sv))", 0);
        if (r >= 0)
                r = sd_bus_call_async(bus, ret_slot, m, cb, userdata, 0);
        return r;
}

int sysd_start_tmpfs(sd_bus *bus, const char *name, const char *where, uint64_t size_bytes,
                     sd_bus_message_handler_t cb, void *userdata, sd_bus_slot **ret_slot) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        char options[128];
        int r;

        /* 0755 root: the sandbox writes only into the subdirectories sandboxd creates. */
        snprintf(options, sizeof(options), "mode=0755,size=%" PRIu64 ",nosuid,nodev", size_bytes);

        r = sd_bus_message_new_method_call(bus, &m, SYSD_DEST, SYSD_PATH, SYSD_MANAGER, "StartTransientUnit");
        if (r < 0)
                return r;
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
                r = sd_bus_call_async(bus, ret_slot, m, cb, userdata, 0);
        return r;
}

static int log_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        const sd_bus_error *e = sd_bus_message_get_error(reply);

        if (e && !sd_bus_error_has_name(e, "org.freedesktop.systemd1.NoSuchUnit") &&
            !sd_bus_error_has_name(e, "org.freedesktop.systemd1.NoUnitProcess"))
                log_warning("%s: %s", (const char *) userdata, e->message);
        return 0;
}

int sysd_stop_unit(sd_bus *bus, const char *name) {
        return sd_bus_call_method_async(bus, NULL, SYSD_DEST, SYSD_PATH, SYSD_MANAGER, "StopUnit", log_reply,
                                        (void *) "StopUnit", "ss", name, "replace");
}

int sysd_kill_unit(sd_bus *bus, const char *name, const char *whom, int sig) {
        return sd_bus_call_method_async(bus, NULL, SYSD_DEST, SYSD_PATH, SYSD_MANAGER, "KillUnit", log_reply,
                                        (void *) "KillUnit", "ssi", name, whom, sig);
}

int sysd_reset_failed_unit(sd_bus *bus, const char *name) {
        return sd_bus_call_method_async(bus, NULL, SYSD_DEST, SYSD_PATH, SYSD_MANAGER, "ResetFailedUnit", log_reply,
                                        (void *) "ResetFailedUnit", "s", name);
}

int sysd_unref_unit(sd_bus *bus, const char *name) {
        return sd_bus_call_method_async(bus, NULL, SYSD_DEST, SYSD_PATH, SYSD_MANAGER, "UnrefUnit", log_reply,
                                        (void *) "UnrefUnit", "s", name);
}

char *sysd_unit_path(const char *name) {
        char *p = NULL;

        if (sd_bus_path_encode(SYSD_PATH "/unit", name, &p) < 0)
                return NULL;
        return p;
}

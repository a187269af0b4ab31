/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <arpa/inet.h>

#include "net-log.h"
#include "result.h"
#include "strv.h"
#include "time-util.h"

static const char *const decision_table[_NET_DECISION_MAX] = {
        [NET_DECISION_ALLOWED] = "allowed",
        [NET_DECISION_DENIED] = "denied",
};

const char *net_decision_to_string(NetDecision d) {
        return d >= 0 && d < _NET_DECISION_MAX ? decision_table[d] : NULL;
}

NetDecision net_decision_from_string(const char *s) {
        for (int i = 0; s && i < _NET_DECISION_MAX; i++)
                if (streq(s, decision_table[i]))
                        return (NetDecision) i;
        return _NET_DECISION_INVALID;
}

NetLog *net_log_new(char *const *allow, size_t n_allow) {
        _cleanup_(net_log_freep) NetLog *l = calloc(1, sizeof(NetLog));

        if (!l)
                return NULL;
        for (size_t i = 0; i < n_allow; i++)
                if (strv_extend(&l->allow, &l->n_allow, allow[i]) < 0)
                        return NULL;
        return TAKE_PTR(l);
}

NetLog *net_log_free(NetLog *l) {
        if (!l)
                return NULL;
        strv_free(l->allow);
        free(l->entries);
        free(l->note);
        free(l);
        return NULL;
}

int net_log_append(NetLog *l, const NetLogEntry *e, size_t max_entries) {
        l->requests_total++;
        if (l->n_entries >= max_entries)
                return 0;
        if (l->n_entries >= l->allocated) {
                size_t na = l->allocated ? l->allocated * 2 : 16;
                NetLogEntry *ne;

                if (na > max_entries)
                        na = max_entries;
                ne = reallocarray(l->entries, na, sizeof(NetLogEntry));
                if (!ne)
                        return -ENOMEM;
                l->entries = ne;
                l->allocated = na;
        }
        l->entries[l->n_entries++] = *e;
        return 0;
}

int net_log_set_note(NetLog *l, const char *note) {
        if (l->note)
                return 0;       /* the first is the cause */
        return free_and_strdup(&l->note, note) < 0 ? -ENOMEM : 0;
}

static json_object *entry_to_json(const NetLogEntry *e, bool store) {
        json_object *o = json_object_new_object();
        char ts[64];

        if (!o)
                return NULL;
        json_object_object_add(o, "host", json_object_new_string(e->host));
        json_object_object_add(o, "port", json_object_new_int(e->port));
        json_object_object_add(o, "method", json_object_new_string(e->method));
        json_object_object_add(o, "decision", json_object_new_string(net_decision_to_string(e->decision) ?: ""));
        if (e->reason[0])
                json_object_object_add(o, "reason", json_object_new_string(e->reason));
        if (e->address[0])
                json_object_object_add(o, "address", json_object_new_string(e->address));
        json_object_object_add(o, "bytes_up", json_object_new_uint64(e->bytes_up));
        json_object_object_add(o, "bytes_down", json_object_new_uint64(e->bytes_down));
        /* As the record's other timestamps: RFC 3339 in UTC with milliseconds. */
        format_timestamp(e->started_usec, ts, sizeof(ts));
        json_object_object_add(o, "started_at", json_object_new_string(ts));
        json_object_object_add(o, "duration_ms", json_object_new_uint64(e->duration_ms));
        /* Exact, for the store: the text form has milliseconds only. */
        if (store)
                json_object_object_add(o, "started_usec", json_object_new_uint64(e->started_usec));
        return o;
}

json_object *net_log_to_json(const NetLog *l, bool store) {
        json_object *o = json_object_new_object(), *a = json_object_new_array(), *r = json_object_new_array();

        if (!o || !a || !r) {
                json_object_put(o);
                json_object_put(a);
                json_object_put(r);
                return NULL;
        }
        for (size_t i = 0; i < l->n_allow; i++)
                json_object_array_add(a, json_object_new_string(l->allow[i]));
        json_object_object_add(o, "allow", a);
        for (size_t i = 0; i < l->n_entries; i++)
                json_object_array_add(r, entry_to_json(l->entries + i, store));
        json_object_object_add(o, "requests", r);
        json_object_object_add(o, "requests_total", json_object_new_uint64(l->requests_total));
        if (l->note)
                json_object_object_add(o, "error", json_object_new_string(l->note));
        return o;
}

static const char *get_str(json_object *o, const char *key) {
        json_object *v;

        if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
                return NULL;
        return json_object_get_string(v);
}

static bool get_u64(json_object *o, const char *key, uint64_t *ret) {
        json_object *v;

        if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_int))
                return false;
        *ret = json_object_get_uint64(v);
        return true;
}

static bool copy_str(char *dst, size_t size, const char *s) {
        if (!s || strlen(s) >= size)
                return false;
        strcpy(dst, s);
        return true;
}

int net_log_from_json(const char *text, NetLog **ret) {
        _cleanup_(net_log_freep) NetLog *l = NULL;
        json_object *root, *a, *r;
        uint64_t u;
        int k = -EBADMSG;

        root = json_tokener_parse(text);
        if (!root)
                return -EBADMSG;
        l = calloc(1, sizeof(NetLog));
        if (!l) {
                json_object_put(root);
                return -ENOMEM;
        }
        if (!json_object_is_type(root, json_type_object) || !json_object_object_get_ex(root, "allow", &a) ||
            !json_object_is_type(a, json_type_array) || !json_object_object_get_ex(root, "requests", &r) ||
            !json_object_is_type(r, json_type_array) || !get_u64(root, "requests_total", &l->requests_total))
                goto finish;
        for (size_t i = 0; i < json_object_array_length(a); i++) {
                json_object *v = json_object_array_get_idx(a, i);

                if (!json_object_is_type(v, json_type_string))
                        goto finish;
                if (strv_extend(&l->allow, &l->n_allow, json_object_get_string(v)) < 0) {
                        k = -ENOMEM;
                        goto finish;
                }
        }
        for (size_t i = 0; i < json_object_array_length(r); i++) {
                json_object *v = json_object_array_get_idx(r, i);
                NetLogEntry e = {};
                const char *reason = get_str(v, "reason"), *address = get_str(v, "address");

                if (!copy_str(e.host, sizeof(e.host), get_str(v, "host")) ||
                    !copy_str(e.method, sizeof(e.method), get_str(v, "method")) ||
                    (reason && !copy_str(e.reason, sizeof(e.reason), reason)) ||
                    (address && !copy_str(e.address, sizeof(e.address), address)) ||
                    !get_u64(v, "port", &u) || u > 65535)
                        goto finish;
                e.port = (uint16_t) u;
                e.decision = net_decision_from_string(get_str(v, "decision"));
                if (e.decision < 0 || !get_u64(v, "bytes_up", &e.bytes_up) || !get_u64(v, "bytes_down", &e.bytes_down) ||
                    !get_u64(v, "started_usec", &e.started_usec) || !get_u64(v, "duration_ms", &e.duration_ms))
                        goto finish;
                if (net_log_append(l, &e, SIZE_MAX) < 0) {
                        k = -ENOMEM;
                        goto finish;
                }
        }
        /* append counted them again: the stored total wins. */
        if (!get_u64(root, "requests_total", &l->requests_total))
                goto finish;
        if (get_str(root, "error") && free_and_strdup(&l->note, get_str(root, "error")) < 0) {
                k = -ENOMEM;
                goto finish;
        }
        *ret = TAKE_PTR(l);
        k = 0;
finish:
        json_object_put(root);
        return k;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

#include "list-query.h"
#include "model/execution.h"
#include "model/json-strict.h"

static const char *const list_keys[] = {
        "session_id", "status", "error_type", "failed", "order", "limit", "cursor",
};

#define invalid(err, field, ...) \
        request_error((err), -EINVAL, API_ERROR_INVALID_REQUEST, (field), __VA_ARGS__)

int list_query_parse(ListQueryGet get, void *userdata, StoreQuery *q, RequestError *err) {
        const char *v;

        if ((v = get(userdata, "session_id"))) {
                if (!id_is_valid(v, REQUEST_ID_MAX))
                        return invalid(err, "session_id", "session_id: invalid");
                q->session_id = v;
        }
        if ((v = get(userdata, "status"))) {
                q->status = exec_status_from_string(v);
                if (q->status < 0)
                        return invalid(err, "status", "status: unknown status '%.32s'", v);
        }
        if ((v = get(userdata, "error_type"))) {
                q->error_type = streq(v, "none") ? (int) ERROR_NONE : (int) error_type_from_string(v);
                if (q->error_type < 0 || (q->error_type == ERROR_NONE && !streq(v, "none")))
                        return invalid(err, "error_type", "error_type: unknown error type '%.32s'", v);
        }
        if ((v = get(userdata, "failed"))) {
                if (!streq(v, "true") && !streq(v, "false"))
                        return invalid(err, "failed", "failed: true or false");
                q->failed = streq(v, "true");
        }
        if ((v = get(userdata, "order"))) {
                if (streq(v, "created_at"))
                        q->order = STORE_ORDER_CREATED_AT;
                else if (streq(v, "duration_ms"))
                        q->order = STORE_ORDER_DURATION_MS;
                else
                        return invalid(err, "order", "order: created_at or duration_ms");
        }
        if ((v = get(userdata, "limit"))) {
                uint64_t lim;

                if (safe_atou64(v, &lim) < 0 || lim < 1 || lim > STORE_LIST_MAX)
                        return invalid(err, "limit", "limit: 1..%u", STORE_LIST_MAX);
                q->limit = (unsigned) lim;
        }
        q->cursor = get(userdata, "cursor");
        return 0;
}

static int check_object(json_object *o, RequestError *err) {
        json_object_object_foreach(o, key, val) {
                bool known = false;

                for (size_t i = 0; i < ELEMENTSOF(list_keys); i++)
                        known = known || streq(key, list_keys[i]);
                if (!known)
                        return invalid(err, "", "%.64s: unknown field", key);
                if (!json_object_is_type(val, json_type_string) && !json_object_is_type(val, json_type_int) &&
                    !json_object_is_type(val, json_type_boolean) && !json_object_is_type(val, json_type_null))
                        return invalid(err, key, "%s: a string, an integer or a boolean", key);
        }
        return 0;
}

int list_query_json_parse(const char *s, size_t len, ListQueryJson *ret, RequestError *err) {
        JsonStrictError serr;
        json_tokener *tok;
        json_object *o;
        int r;

        *ret = (ListQueryJson) {};
        if (len > LIST_QUERY_JSON_MAX) {
                *err = (RequestError) { .error = API_ERROR_TOO_LARGE };
                (void) snprintf(err->message, sizeof(err->message), "query exceeds %u bytes", LIST_QUERY_JSON_MAX);
                return -E2BIG;
        }
        if (len == 0)
                return 0;

        /* json-c depth 3: a value nested one level parses, to be refused by its type below; deeper is
         * refused as not JSON. */
        tok = json_tokener_new_ex(3);
        if (!tok)
                return -ENOMEM;
        o = json_tokener_parse_ex(tok, s, (int) len);
        if (!o || json_tokener_get_error(tok) != json_tokener_success || json_tokener_get_parse_end(tok) != len ||
            !json_object_is_type(o, json_type_object))
                r = invalid(err, "", "the query is not a JSON object (\"\" or \"{}\" lists everything)");
        else if ((r = json_strict_check(s, len, 3, &serr)) == -EINVAL)
                /* What json-c let through but reads its own way: duplicate keys, NaN, ... (json-strict.h). */
                r = invalid(err, serr.path, "the query is not strict JSON: %s", serr.message);
        else if (r >= 0)
                r = check_object(o, err);
        json_tokener_free(tok);
        if (r < 0) {
                json_object_put(o);
                return r;
        }
        ret->object = o;
        return 0;
}

const char *list_query_json_get(void *userdata, const char *key) {
        ListQueryJson *l = userdata;
        json_object *v;

        if (!l->object || !json_object_object_get_ex(l->object, key, &v) || json_object_is_type(v, json_type_null))
                return NULL;
        if (json_object_is_type(v, json_type_string))
                return json_object_get_string(v);
        /* An integer or a boolean (list_query_json_parse() checked): each key is asked for once. */
        if (l->n_text >= ELEMENTSOF(l->text))
                return NULL;
        if (json_object_is_type(v, json_type_boolean))
                (void) snprintf(l->text[l->n_text], sizeof(l->text[0]), "%s",
                                json_object_get_boolean(v) ? "true" : "false");
        else
                (void) snprintf(l->text[l->n_text], sizeof(l->text[0]), "%" PRId64, json_object_get_int64(v));
        return l->text[l->n_text++];
}

void list_query_json_done(ListQueryJson *l) {
        json_object_put(l->object);
        l->object = NULL;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* Strict parsing of the daemon's answers and typed access to their fields; see sandboxctl-json.h. */

#include <assert.h>
#include <limits.h>
#include <string.h>

#include "sandboxctl-json.h"
#include "sandboxctl-util.h"

static const char *const field_type_name[] = {
        [FIELD_STRING] = "a string",
        [FIELD_INTEGER] = "an integer",
        [FIELD_NUMBER] = "a number",
        [FIELD_BOOLEAN] = "a boolean",
};

/* Copy the listed fields of the JSON object j into the struct at userdata, checking each type.
 * Unknown keys are ignored: newer daemons may add fields. The CtlString pointers stay valid as
 * long as j does. */
int json_dispatch(json_object *j, const char *what, const CtlField *fields, size_t n_fields,
                  void *userdata) {
        if (!json_object_is_type(j, json_type_object))
                return log_error_errno(-EBADMSG, "Malformed answer from sandboxd: %s is not a JSON object.",
                                       what);

        for (size_t i = 0; i < n_fields; i++) {
                const CtlField *f = fields + i;
                uint8_t *p = (uint8_t *) userdata + f->offset;
                json_object *v = NULL;
                bool ok;

                /* json-c represents a JSON null as a NULL pointer, so absent and null look alike. */
                if (!json_object_object_get_ex(j, f->name, &v) || !v) {
                        if (f->required)
                                return log_error_errno(-EBADMSG,
                                                       "Malformed answer from sandboxd: %s lacks '%s'.",
                                                       what, f->name);
                        continue;
                }

                switch (f->type) {
                case FIELD_STRING:
                        ok = json_object_is_type(v, json_type_string);
                        if (ok) {
                                CtlString *s = (CtlString *) p;
                                int len = json_object_get_string_len(v);

                                s->s = json_object_get_string(v);
                                s->len = len > 0 ? (size_t) len : 0;
                        }
                        break;
                case FIELD_INTEGER:
                        ok = json_object_is_type(v, json_type_int);
                        if (ok)
                                *(CtlInteger *) p = (CtlInteger) { true, json_object_get_int64(v) };
                        break;
                case FIELD_NUMBER:
                        ok = json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double);
                        if (ok)
                                *(CtlNumber *) p = (CtlNumber) { true, json_object_get_double(v) };
                        break;
                case FIELD_BOOLEAN:
                        ok = json_object_is_type(v, json_type_boolean);
                        if (ok)
                                *(bool *) p = json_object_get_boolean(v);
                        break;
                default:
                        ok = false;
                }
                if (!ok)
                        return log_error_errno(-EBADMSG,
                                               "Malformed answer from sandboxd: '%s' in %s is not %s.",
                                               f->name, what, field_type_name[f->type]);
        }
        return 0;
}

/* Parse a whole buffer as exactly one JSON value: strict syntax, valid UTF-8, nothing but
 * whitespace after it. */
int json_parse_strict(const char *data, size_t size, json_object **ret) {
        _cleanup_(json_tokener_freep) json_tokener *tok = NULL;
        enum json_tokener_error e;
        json_object *j;
        size_t end;

        assert(size <= INT_MAX); /* guaranteed by ANSWER_MAX */

        tok = json_tokener_new();
        if (!tok)
                return -ENOMEM;
        json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);

        j = json_tokener_parse_ex(tok, data, (int) size);
        e = json_tokener_get_error(tok);
        if (e != json_tokener_success) {
                if (j)
                        json_object_put(j);
                /* An answer cut short leaves the parser waiting for more. */
                if (e == json_tokener_continue)
                        return log_error_errno(-EBADMSG, "Malformed answer from sandboxd: JSON is incomplete.");
                return log_error_errno(-EBADMSG, "Malformed answer from sandboxd: %s.",
                                       json_tokener_error_desc(e));
        }
        if (!j) /* a bare "null" */
                return log_error_errno(-EBADMSG, "Malformed answer from sandboxd: null.");

        end = json_tokener_get_parse_end(tok);
        for (; end < size; end++)
                if (!strchr(" \t\r\n", data[end])) {
                        json_object_put(j);
                        return log_error_errno(-EBADMSG,
                                               "Malformed answer from sandboxd: "
                                               "trailing data after the JSON value.");
                }

        *ret = j;
        return 0;
}

/* Add val to obj under key, taking ownership of val in all cases. */
int json_add(json_object *obj, const char *key, json_object *val) {
        if (!val)
                return -ENOMEM;
        if (json_object_object_add(obj, key, val) < 0) {
                json_object_put(val);
                return -ENOMEM;
        }
        return 0;
}

int print_json(json_object *j) {
        const char *s = json_object_to_json_string_ext(j, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
                                                                  JSON_C_TO_STRING_NOSLASHESCAPE);

        if (!s)
                return log_oom();
        fputs(s, stdout);
        fputc('\n', stdout);
        return flush_stdout();
}

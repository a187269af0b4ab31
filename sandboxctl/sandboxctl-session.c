/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* session show ID | session delete ID | session list */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sandboxctl.h"
#include "sandboxctl-http.h"
#include "sandboxctl-json.h"
#include "sandboxctl-session.h"
#include "sandboxctl-table.h"
#include "sandboxctl-util.h"

/* session show ID | session delete ID | session list */
int verb_session(char **args, size_t n_args) {
        _cleanup_(json_object_putp) json_object *answer = NULL;
        _cleanup_free_ char *path = NULL;
        struct {
                CtlString session_id, created_at, last_used_at, expires_at, active;
                CtlInteger disk_mb, size_bytes, executions, pending;
        } x = {};
        static const CtlField fields[] = {
                { "session_id", FIELD_STRING, offsetof(typeof(x), session_id), true },
                { "created_at", FIELD_STRING, offsetof(typeof(x), created_at), false },
                { "last_used_at", FIELD_STRING, offsetof(typeof(x), last_used_at), false },
                { "expires_at", FIELD_STRING, offsetof(typeof(x), expires_at), false },
                { "active", FIELD_STRING, offsetof(typeof(x), active), false },
                { "disk_mb", FIELD_INTEGER, offsetof(typeof(x), disk_mb), false },
                { "size_bytes", FIELD_INTEGER, offsetof(typeof(x), size_bytes), false },
                { "executions", FIELD_INTEGER, offsetof(typeof(x), executions), false },
                { "pending", FIELD_INTEGER, offsetof(typeof(x), pending), false },
        };
        bool show = streq(args[0], "show"), del = streq(args[0], "delete"), list = streq(args[0], "list");
        int r;

        if ((!show && !del && !list) || (list != (n_args == 1))) {
                (void) log_error_errno(-EINVAL, "Use 'session show ID', 'session delete ID' or 'session list'.");
                return EX_USAGE;
        }
        if (!list && !id_is_valid_for_path(args[1])) {
                (void) log_error_errno(-EINVAL, "Invalid session ID '%s'.", args[1]);
                return EX_USAGE;
        }
        if (list ? !(path = strdup("/v1/sessions")) : asprintf(&path, "/v1/sessions/%s", args[1]) < 0) {
                path = NULL;
                (void) log_oom();
                return EX_OSERR;
        }
        r = http_call_ok(del ? "DELETE" : "GET", path, NULL, false, true, &answer);
        if (r != 0)
                return r;
        if (arg_json || list)
                return print_json(answer) < 0 ? EX_OSERR : EXIT_SUCCESS;
        if (del)
                return EXIT_SUCCESS;    /* like systemctl stop: quiet on success */

        r = json_dispatch(answer, "the session", fields, ELEMENTSOF(fields), &x);
        if (r < 0)
                return EX_UNAVAILABLE;
        print_string_field("Session", &x.session_id);
        if (x.size_bytes.set) {
                print_key("Disk");
                printf("%" PRIi64 " bytes used of %" PRIi64 " MB\n", x.size_bytes.value, x.disk_mb.value);
        }
        print_string_field("Created", &x.created_at);
        print_string_field("Last used", &x.last_used_at);
        print_string_field("Expires", &x.expires_at);
        if (x.executions.set) {
                print_key("Executions");
                printf("%" PRIi64 " finished, %" PRIi64 " queued or running\n", x.executions.value,
                       x.pending.value);
        }
        print_string_field("Running", &x.active);
        return EXIT_SUCCESS;
}

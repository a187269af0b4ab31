/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* status ID (show ID), cancel ID. */

#include <stdio.h>
#include <stdlib.h>

#include "sandboxctl.h"
#include "sandboxctl-execution.h"
#include "sandboxctl-http.h"
#include "sandboxctl-json.h"
#include "sandboxctl-status.h"
#include "sandboxctl-util.h"

/* "/v1/executions/<id><suffix>" for an id that may go into a path: 0, or the exit status to end with. */
static int execution_path(const char *id, const char *suffix, char **ret) {
        if (!id_is_valid_for_path(id)) {
                (void) log_error_errno(-EINVAL, "Invalid execution ID '%s'.", id);
                return EX_USAGE;
        }
        if (asprintf(ret, "/v1/executions/%s%s", id, suffix) < 0) {
                *ret = NULL;
                (void) log_oom();
                return EX_OSERR;
        }
        return 0;
}

int verb_status(char **args, size_t n_args) {
        _cleanup_(json_object_putp) json_object *answer = NULL;
        _cleanup_free_ char *path = NULL;
        CtlExecution e;
        int r;

        r = execution_path(args[0], arg_wait ? "?wait=true" : "", &path);
        if (r != 0)
                return r;

        r = http_call_ok("GET", path, NULL, arg_wait, true, &answer);
        if (r != 0)
                return r;

        r = execution_parse(answer, &e);
        if (r < 0)
                return EX_UNAVAILABLE;

        r = arg_json ? print_json(answer) : execution_print(&e);
        return r < 0 ? EX_OSERR : EXIT_SUCCESS;
}

int verb_cancel(char **args, size_t n_args) {
        _cleanup_(json_object_putp) json_object *answer = NULL, *body = NULL;
        _cleanup_free_ char *path = NULL;
        CtlExecution e;
        int r;

        r = execution_path(args[0], "/cancel", &path);
        if (r != 0)
                return r;

        /* An empty object rather than no body: the daemon refuses POSTs that are not JSON (415). */
        body = json_object_new_object();
        if (!body) {
                (void) log_oom();
                return EX_OSERR;
        }

        r = http_call_ok("POST", path, body, false, true, &answer);
        if (r != 0)
                return r;

        r = execution_parse(answer, &e);
        if (r < 0)
                return EX_UNAVAILABLE;

        /* Like systemctl stop: quiet on success. */
        if (arg_json && print_json(answer) < 0)
                return EX_OSERR;
        return EXIT_SUCCESS;
}

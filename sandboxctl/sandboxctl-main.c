/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* sandboxctl's main(): the command line (sandboxctl.c), the socket, libcurl, the command. */

#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

#include "sandboxctl.h"
#include "sandboxctl-http.h"
#include "sandboxctl-util.h"

static int run(int argc, char *argv[]) {
        const CtlVerb *verb = NULL;
        char **args = NULL;
        size_t n_args = 0;
        int r;

        r = ctl_parse_argv(argc, argv, &verb, &args, &n_args);
        if (r <= 0)
                return r < 0 ? exit_status_for(r, EX_USAGE) : EXIT_SUCCESS;

        if (!arg_socket)
                arg_socket = getenv("SANDBOXD_SOCKET");
        if (isempty(arg_socket))
                arg_socket = DEFAULT_SOCKET;
        if (strlen(arg_socket) >= sizeof(((struct sockaddr_un *) NULL)->sun_path)) {
                (void) log_error_errno(-EINVAL, "Socket path '%s' is too long for a unix socket.", arg_socket);
                return EX_USAGE;
        }

        r = http_target_init();
        if (r < 0)
                return exit_status_for(r, EX_USAGE);

        if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
                (void) log_error_errno(-EIO, "Failed to initialize libcurl.");
                return EX_OSERR;
        }

        r = ctl_verb_dispatch(verb, args, n_args);

        curl_global_cleanup();
        http_target_done();
        return r;
}

int main(int argc, char *argv[]) {
        int r;

        log_set_console_prefix("sandboxctl");
        r = run(argc, argv);
        /* The globals that own memory, freed in one place (run.c's STATIC_DESTRUCTOR_REGISTER). */
        ctl_args_reset();
        return r;
}

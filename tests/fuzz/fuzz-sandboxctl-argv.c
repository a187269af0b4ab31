/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* sandboxctl's command line: ctl_parse_argv() (getopt_long(), every option group's parser, the
 * verb table, the option-group check) over argv = "sandboxctl" and the input's pieces, split at NUL
 * bytes. Nothing is sent: the parser has no side effect but --input, which reads a file, and so
 * inputs with an --input option are skipped (--input-url is not). The globals are reset after
 * each input (ctl_args_reset()). */

#include <getopt.h>

#include "fuzz.h"
#include "sandboxctl.h"
#include "util.h"

#define ARGS_MAX 64

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        fuzz_quiet();
        /* getopt_long()'s own messages go to stderr (/dev/null) either way; keep them formatted. */
        opterr = 1;
        return 0;
}

static bool reads_a_file(const char *arg) {
        const char *rest = startswith(arg, "--input");

        return rest && (*rest == 0 || *rest == '=');
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char **pieces = NULL;
        char *argv[ARGS_MAX + 2];
        const CtlVerb *verb = NULL;
        char **args = NULL;
        size_t n, n_args = 0;
        int r;

        n = fuzz_split(data, size, &pieces, ARGS_MAX);
        argv[0] = (char *) "sandboxctl";
        for (size_t i = 0; i < n; i++) {
                if (reads_a_file(pieces[i]))
                        return 0;
                argv[i + 1] = pieces[i];
        }
        argv[n + 1] = NULL;

        optind = 0;     /* glibc: start over */
        r = ctl_parse_argv((int) n + 1, argv, &verb, &args, &n_args);
        if (r > 0) {
                fuzz_check(verb != NULL);
                fuzz_check(args >= argv + 1 && args + n_args <= argv + n + 1);
        }
        ctl_args_reset();
        return 0;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The LanguageRunner table: everything sandboxd knows about a language is one row here. Adding a
 * language adds a row; no other code changes. */

#include <stdbool.h>
#include <stddef.h>

/* Where sandbox-exec writes the program's source inside the sandbox: a directory of its own on the
 * sandbox's private /run, owned by root and only readable by the program, so no earlier run of a
 * session can plant anything at that name and the program cannot rewrite its own source. */
#define SANDBOX_CODE_DIR "/run/sandbox"

typedef struct Language {
        const char *name;                  /* protocol name: "python" */
        const char *const *aliases;        /* NULL-terminated, may be NULL */
        const char *source_name;           /* file the code is written to, in SANDBOX_CODE_DIR */
        const char *runtime;               /* absolute path that must exist on the host */
        const char *const *compile_argv;   /* NULL-terminated, or NULL: no separate compile step */
        const char *const *run_argv;       /* NULL-terminated */
        /* A syntax checker, run by sandbox-exec in a fresh process only after the run step failed
         * with a non-zero exit status (nothing of the program is alive by then): exit status 1 means
         * "the source does not compile" and makes the report phase=compile. The run step prints the
         * error itself; no channel the program's own process could write decides this. */
        const char *const *check_argv;     /* NULL-terminated, or NULL */
        const char *const *env;            /* extra KEY=VALUE pairs for this language, or NULL */
        /* System calls this language needs beyond the common allow-list of seccomp-policy.c
         * (NULL-terminated names, or NULL). Each row gets its own filter, compiled once at start;
         * a name the policy denies or checks arguments of is refused there (the daemon does not
         * start). The filter is inherited: a program of another language that runs this
         * language's runtime as a subprocess does not get these calls (ENOSYS). */
        const char *const *extra_syscalls;
        /* The run step of a warm unit whose runtime starts before the claim (sandbox-exec
         * --warm-preload): argv of a bootstrap that imports the modules named (comma-separated) by
         * the argument the daemon appends, writes 'R' to fd 3, reads the claim's environment from fd 3
         * until EOF, applies it and then runs the source exactly as run_argv would. NULL: the warm unit
         * starts run_argv at the claim. */
        const char *const *warm_argv;
        /* Environment names this language's runtime reads as it starts (exact names, or prefixes
         * ending in '*'): a request setting one cannot use a preloaded runtime (it starts cold). */
        const char *const *warm_cold_env;
} Language;

const Language *language_find(const char *name);
const Language *language_get(size_t i);   /* NULL past the end */
size_t language_count(void);
/* Is the runtime present on this host? */
bool language_available(const Language *l);

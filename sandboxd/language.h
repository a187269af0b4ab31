/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The LanguageRunner table: everything sandboxd knows about a language is one row here. Adding a
 * language adds a row; no other code changes. */

#include <stdbool.h>
#include <stddef.h>

typedef struct Language {
        const char *name;                  /* protocol name: "python" */
        const char *const *aliases;        /* NULL-terminated, may be NULL */
        const char *source_name;           /* file the code is written to in /workspace */
        const char *runtime;               /* absolute path that must exist on the host */
        const char *const *compile_argv;   /* NULL-terminated, or NULL: no separate compile step */
        const char *const *run_argv;       /* NULL-terminated */
        /* The run step checks syntax itself and, on a syntax error, writes 'C' to fd 3 before
         * exiting: sandbox-exec then reports phase=compile. */
        bool syntax_fd;
        const char *const *env;            /* extra KEY=VALUE pairs for this language, or NULL */
} Language;

const Language *language_find(const char *name);
const Language *language_get(size_t i);   /* NULL past the end */
size_t language_count(void);
/* Is the runtime present on this host? */
bool language_available(const Language *l);

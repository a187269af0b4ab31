/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* Language definition files (model/langdef.c), pure: no file system. The input's pieces, split at NUL
 * bytes, are the files of a merge; each piece is "R FILENAME\nTEXT", R 'E' for /etc and anything else
 * for the vendor directory (a piece without a newline is the text of "fuzz.conf", vendor). Each file
 * is also parsed alone. Invariants: a refusal says where ("PATH:LINE: ..."); an accepted file has a
 * valid name and absolute programs; the merge keeps names and aliases unique and never holds more
 * than it was given. */

#include <errno.h>

#include "fuzz.h"
#include "model/langdef.h"
#include "strv.h"
#include "util.h"

#define PIECES_MAX 16

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        fuzz_quiet();
        return 0;
}

static void check_def(const LangDef *d) {
        fuzz_check(langdef_name_is_valid(d->name));
        fuzz_check(d->source_file && d->run_argv && d->run_argv[0] && d->run_argv[0][0] == '/');
        fuzz_check(strv_length(d->run_argv) <= LANGDEF_ARGV_MAX);
        fuzz_check(strv_length(d->aliases) <= LANGDEF_ALIASES_MAX);
        fuzz_check(strv_length(d->env) <= LANGDEF_ENV_MAX);
        fuzz_check(d->n_syscalls <= LANGDEF_SYSCALLS_MAX);
        fuzz_check(d->n_ro_paths <= LANGDEF_PATHS_MAX && d->n_rw_paths <= LANGDEF_PATHS_MAX);
        for (size_t i = 0; i < d->n_syscalls; i++)
                fuzz_check(!isempty(d->syscalls[i].what) && !isempty(d->syscalls[i].reason));
        if (d->compile_argv)
                fuzz_check(d->has_compile && d->compile_argv[0][0] == '/');
        if (d->check_argv)
                fuzz_check(d->compile_error == LANGDEF_COMPILE_ERROR_SYNTAX_CHECK);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char **pieces = NULL;
        _cleanup_(langdef_set_freep) LangDefSet *set = NULL;
        LangDefSource sources[PIECES_MAX];
        size_t n;
        int r;

        n = fuzz_split(data, size, &pieces, PIECES_MAX);
        for (size_t i = 0; i < n; i++) {
                _cleanup_(langdef_freep) LangDef *d = NULL;
                _cleanup_free_ char *error = NULL, *path = NULL;
                char *nl = strchr(pieces[i], '\n');
                const char *filename = "fuzz.conf", *text = pieces[i];
                unsigned rank = LANGDEF_RANK_VENDOR;

                if (nl) {
                        *nl = 0;
                        if (pieces[i][0] == 'E')
                                rank = LANGDEF_RANK_ETC;
                        filename = pieces[i][0] && pieces[i][1] == ' ' ? pieces[i] + 2 : pieces[i];
                        text = nl + 1;
                }
                sources[i] = (LangDefSource) {
                        .rank = rank,
                        .dir = rank == LANGDEF_RANK_ETC ? "E" : "V",
                        .filename = filename,
                        .text = text,
                        .size = strlen(text),
                };

                if (asprintf(&path, "%s/%s", sources[i].dir, filename) < 0)
                        abort();
                r = langdef_parse(text, strlen(text), path, filename, &d, &error);
                fuzz_check(r == 0 || r == -EINVAL || r == -ENOMEM);
                if (r == 0) {
                        fuzz_check(d && !error);
                        check_def(d);
                } else if (r == -EINVAL) {
                        fuzz_check(!d && error);
                        fuzz_check(strncmp(error, path, strlen(path)) == 0 && error[strlen(path)] == ':');
                }
        }

        r = langdef_merge(sources, n, &set);
        fuzz_check(r == 0 || r == -ENOMEM);
        if (r < 0)
                return 0;
        fuzz_check(set->n_defs <= n);
        fuzz_check(set->n_errors == strv_length(set->errors));
        for (size_t i = 0; i < set->n_defs; i++) {
                const LangDef *a = set->defs[i];

                check_def(a);
                for (size_t j = 0; j < i; j++) {
                        const LangDef *b = set->defs[j];

                        fuzz_check(!streq(a->name, b->name) && !strv_contains(b->aliases, a->name) &&
                                   !strv_contains(a->aliases, b->name));
                        for (char **x = a->aliases; x && *x; x++)
                                fuzz_check(!strv_contains(b->aliases, *x));
                }
        }
        return 0;
}

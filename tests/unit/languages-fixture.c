/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* Linked into every unit test and fuzz target: the language table is the source tree's languages/,
 * loaded before main() and made current, as the daemon does at start. A file there that does not
 * load fails every test at once. */

#include <stdio.h>
#include <stdlib.h>

#include "model/language.h"
#include "strv.h"

__attribute__((constructor)) static void load_languages(void) {
        const char *dirs[] = { LANGUAGES_SOURCE_DIR };
        _cleanup_(language_table_unrefp) LanguageTable *t = NULL;
        _cleanup_strv_free_ char **errors = NULL;

        if (language_table_load(dirs, 1, &t, &errors) < 0 || errors || language_table_count(t) == 0) {
                fprintf(stderr, "Cannot load the languages of %s: %s\n", LANGUAGES_SOURCE_DIR,
                            errors ? errors[0] : "no table");
                abort();
        }
        language_table_set_current(t);
}

__attribute__((destructor)) static void unload_languages(void) {
        language_table_set_current(NULL);
}

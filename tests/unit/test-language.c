/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The LanguageRunner table, row by row: what sandbox-exec relies on (absolute programs, a plain
 * file name in the workspace) and what the request parser relies on (names and aliases). */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "model/language.h"
#include "util.h"

static void assert_argv_absolute(const char *const *argv) {
        assert_non_null(argv);
        assert_non_null(argv[0]);
        assert_true(argv[0][0] == '/');
        for (const char *const *a = argv; *a; a++)
                assert_true(strlen(*a) > 0);
}

static void test_rows(void **state) {
        assert_true(language_count() >= 3);
        assert_null(language_get(language_count()));

        for (size_t i = 0; i < language_count(); i++) {
                const Language *l = language_get(i);

                assert_non_null(l);
                assert_false(isempty(l->name));
                assert_non_null(l->runtime);
                assert_true(l->runtime[0] == '/');
                assert_false(isempty(l->source_name));
                assert_null(strchr(l->source_name, '/'));
                assert_false(streq(l->source_name, ".") || streq(l->source_name, ".."));
                assert_argv_absolute(l->run_argv);
                if (l->compile_argv)
                        assert_argv_absolute(l->compile_argv);
                for (const char *const *e = l->env; e && *e; e++)
                        assert_non_null(strchr(*e, '='));

                /* Every name and alias leads back to this row, and to no other. */
                assert_ptr_equal(language_find(l->name), l);
                for (const char *const *a = l->aliases; a && *a; a++)
                        assert_ptr_equal(language_find(*a), l);
                for (size_t j = 0; j < language_count(); j++)
                        if (j != i)
                                assert_false(streq(language_get(j)->name, l->name));
        }
}

static void test_find(void **state) {
        static const struct {
                const char *query, *name;
        } table[] = {
                { "python", "python" },  { "python3", "python" },  { "py", "python" },
                { "node", "node" },      { "javascript", "node" }, { "js", "node" },
                { "nodejs", "node" },    { "bash", "bash" },       { "sh", "bash" },
        };

        for (size_t i = 0; i < ELEMENTSOF(table); i++) {
                const Language *l = language_find(table[i].query);

                assert_non_null(l);
                assert_string_equal(l->name, table[i].name);
        }
}

static void test_find_unknown(void **state) {
        assert_null(language_find("cobol"));
        assert_null(language_find(""));
        assert_null(language_find(NULL));
        assert_null(language_find("python "));
        assert_null(language_find("pytho"));
        assert_null(language_find("main.py"));
}

static void test_rows_content(void **state) {
        const Language *py = language_find("python"), *node = language_find("node"),
                       *bash = language_find("bash");

        assert_string_equal(py->source_name, "main.py");
        assert_string_equal(py->runtime, "/usr/bin/python3");
        assert_non_null(py->check_argv);
        assert_null(py->compile_argv);
        /* Isolated from user site directories, the source outside the workspace; the checker fully
         * isolated (-I -S) and aimed at the same file. */
        assert_string_equal(py->run_argv[1], "-s");
        assert_string_equal(py->run_argv[4], SANDBOX_CODE_DIR "/main.py");
        assert_string_equal(py->check_argv[1], "-I");
        assert_string_equal(py->check_argv[2], "-S");
        assert_string_equal(py->check_argv[5], SANDBOX_CODE_DIR "/main.py");

        assert_string_equal(node->source_name, "main.js");
        assert_string_equal(node->runtime, "/usr/bin/node");
        assert_non_null(node->check_argv);
        assert_string_equal(node->check_argv[3], SANDBOX_CODE_DIR "/main.js");
        assert_null(node->compile_argv);

        assert_string_equal(bash->source_name, "main.sh");
        assert_string_equal(bash->runtime, "/bin/bash");
        assert_null(bash->check_argv);
        assert_non_null(bash->compile_argv);
        assert_string_equal(bash->compile_argv[1], "-n");
        assert_string_equal(bash->compile_argv[2], SANDBOX_CODE_DIR "/main.sh");

        /* Every argv names the source by its absolute place, never a workspace-relative name. */
        for (size_t i = 0; i < language_count(); i++) {
                const Language *l = language_get(i);
                const char *const *argvs[] = { l->compile_argv, l->run_argv, l->check_argv };

                for (size_t k = 0; k < ELEMENTSOF(argvs); k++)
                        for (const char *const *a = argvs[k]; a && *a; a++)
                                assert_false(streq(*a, l->source_name));
        }
}

static void test_available(void **state) {
        assert_false(language_available(NULL));
        /* Whatever the host has, the answer must be consistent with the runtime's presence. */
        for (size_t i = 0; i < language_count(); i++) {
                const Language *l = language_get(i);

                if (access(l->runtime, X_OK) < 0)
                        assert_false(language_available(l));
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_rows),
                cmocka_unit_test(test_find),
                cmocka_unit_test(test_find_unknown),
                cmocka_unit_test(test_rows_content),
                cmocka_unit_test(test_available),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

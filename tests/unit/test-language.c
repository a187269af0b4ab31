/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The LanguageRunner table, row by row: what sandbox-exec relies on (absolute programs, a plain
 * file name in the workspace) and what the request parser relies on (names and aliases). */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "model/language.h"
#include "strv.h"
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

static LanguageTable *table_of(const LangDefSource *src, size_t n, char ***errors) {
        LanguageTable *t = NULL;

        assert_int_equal(language_table_from_sources(src, n, &t, errors), 0);
        assert_non_null(t);
        return t;
}

#define AWK_CONF "[Language]\nName=awk\nAliases=gawk\nSourceFile=main.awk\nRuntime=/nonexistent/awk\n" \
                 "Run=/nonexistent/awk -f %s\n"

/* A table is built from the merged files; an /etc file overrides, a broken one is reported and left
 * out while the others load. */
static void test_table_from_sources(void **state) {
        const LangDefSource src[] = {
                { LANGDEF_RANK_VENDOR, "/v", "awk.conf", AWK_CONF, strlen(AWK_CONF) },
                { LANGDEF_RANK_VENDOR, "/v", "bad.conf", "[Language]\nName=bad\n", 20 },
                { LANGDEF_RANK_ETC, "/e", "awk.conf", AWK_CONF "Version=/nonexistent/awk --version\n",
                  strlen(AWK_CONF "Version=/nonexistent/awk --version\n") },
        };
        _cleanup_strv_free_ char **errors = NULL;
        _cleanup_(language_table_unrefp) LanguageTable *t = table_of(src, ELEMENTSOF(src), &errors);
        const Language *awk;
        char buf[LANGUAGE_REASON_MAX];

        assert_int_equal(language_table_count(t), 1);
        awk = language_table_find(t, "gawk");
        assert_non_null(awk);
        assert_ptr_equal(awk, language_table_find(t, "awk"));
        assert_non_null(awk->version_argv);      /* the /etc one won */
        assert_int_equal(strv_length(errors), 1);
        assert_non_null(strstr(errors[0], "/v/bad.conf:"));
        /* Its runtime is not here: not available, and the reason says which file is missing. */
        assert_false(language_available(awk));
        assert_non_null(language_unavailable_reason(awk, buf, sizeof(buf)));
        assert_non_null(strstr(buf, "/nonexistent/awk"));
        assert_false(awk->compiles);
        assert_null(language_table_row(t, 1));
}

/* A row outlives its table's turn as the current one while someone holds it; the same files give
 * tables that compare the same. */
static void test_table_refs(void **state) {
        const LangDefSource src[] = { { LANGDEF_RANK_VENDOR, "/v", "awk.conf", AWK_CONF, strlen(AWK_CONF) } };
        const LangDefSource other[] = { { LANGDEF_RANK_ETC, "/e", "awk.conf", AWK_CONF, strlen(AWK_CONF) } };
        LanguageTable *saved = language_table_ref(language_table_current());
        LanguageTable *a = table_of(src, 1, NULL), *b = table_of(src, 1, NULL), *c = table_of(other, 1, NULL);
        const Language *held;

        assert_true(language_table_same_sources(a, b));
        assert_false(language_table_same_sources(a, c));
        assert_false(language_table_same_sources(a, saved));

        language_table_set_current(a);
        a = language_table_unref(a);            /* only "current" holds it now */
        held = language_ref(language_find("awk"));
        assert_non_null(held);
        language_table_set_current(b);          /* a reload */
        b = language_table_unref(b);
        assert_null(language_find("python"));
        /* Still readable (ASan would see a use after free). */
        assert_string_equal(held->name, "awk");
        assert_string_equal(held->run_argv[2], "/run/sandbox/main.awk");
        assert_ptr_not_equal(held, language_find("awk"));
        language_unref(held);

        language_table_set_current(saved);
        language_table_unref(saved);
        language_table_unref(c);
        assert_non_null(language_find("python"));
}

static void test_version_from_output(void **state) {
        static const struct {
                const char *out, *want;
        } rows[] = {
                { "Python 3.11.2\n", "Python 3.11.2" },
                { "\n\n  go version go1.19.8 linux/amd64\n", "go version go1.19.8 linux/amd64" },
                { "openjdk 17.0.15 2025-04-15\nOpenJDK Runtime Environment\n", "openjdk 17.0.15 2025-04-15" },
                { "a\tb\x1b[31mc\r\nrest", "a b [31mc" },
                { "", NULL },
                { "\n \n", NULL },
        };
        char big[600];

        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                _cleanup_free_ char *v = language_version_from_output(rows[i].out, strlen(rows[i].out));

                if (rows[i].want)
                        assert_string_equal(v, rows[i].want);
                else
                        assert_null(v);
        }
        /* Capped, and cut back to valid UTF-8 (a 2-byte sequence across the cap). */
        memset(big, 'x', sizeof(big));
        big[LANGUAGE_VERSION_MAX - 1] = (char) 0xc3;
        big[LANGUAGE_VERSION_MAX] = (char) 0xa9;
        {
                _cleanup_free_ char *v = language_version_from_output(big, sizeof(big));

                assert_int_equal(strlen(v), LANGUAGE_VERSION_MAX - 1);
        }
        /* Not text at all. */
        {
                _cleanup_free_ char *v = language_version_from_output("\xff\xfe", 2);

                assert_null(v);
        }
}

static void test_ro_path_allowed(void **state) {
        static const struct {
                const char *path;
                bool allowed;
        } rows[] = {
                { "/opt/jdk", true },        { "/srv/data", true },     { "/var/cache/go", true },
                { "/", false },              { "/var", false },         { "/var/lib/x", false },
                { "/var/lib", false },       { "/var/tmp", false },     { "/run", false },
                { "/run/sandbox", false },   { "/tmp/x", false },       { "/usr/lib/jvm", false },
                { "/etc/ssl", false },       { "/workspace", false },   { "/proc/1", false },
                { "/sys", false },           { "/dev/shm", false },     { "/lib64", false },
                { "/usrx", true },           { "/optimal", true },      { "/tmpfoo", true },
        };

        for (size_t i = 0; i < ELEMENTSOF(rows); i++)
                if (language_ro_path_allowed(rows[i].path) != rows[i].allowed)
                        fail_msg("%s: expected %s", rows[i].path, rows[i].allowed ? "allowed" : "refused");
        assert_false(language_ro_path_allowed(NULL));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_rows),
                cmocka_unit_test(test_find),
                cmocka_unit_test(test_find_unknown),
                cmocka_unit_test(test_rows_content),
                cmocka_unit_test(test_available),
                cmocka_unit_test(test_table_from_sources),
                cmocka_unit_test(test_table_refs),
                cmocka_unit_test(test_version_from_output),
                cmocka_unit_test(test_ro_path_allowed),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

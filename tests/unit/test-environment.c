/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>
#include <json-c/json.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "model/environment.h"
#include "model/request.h"
#include "model/warm-policy.h"
#include "strv.h"
#include "unit/sandbox-root.h"
#include "unit/unit-props.h"
#include "util.h"

/* The pure parts of environments (issue 17): names, the manifest, the languages JSON, the missing
 * module taken from hostile stderr and the message made of it, the env merge, the request field, the
 * warm pool's refusal, and the unit's bind and helper option. */

static const char MANIFEST[] =
        "# a comment\n"
        "Name=python-data\n"
        "Language=python\n"
        "Description=numpy and friends\n"
        "Package=python3-pandas 1.5.3+dfsg-2\n"
        "Package=python3-numpy 1:1.24.2-1+deb12u1\n"
        "Environment=MPLBACKEND=Agg\n"
        "Environment=MPLCONFIGDIR=/tmp/matplotlib\n"
        "Module=sklearn\n"
        "Module=pandas\n"
        "Module=PIL\n"
        "Module=pandas\n"
        "Preload=pandas\n"
        "Preload=numpy.linalg\n"
        "Preload=pandas\n";

static void parse_ok(const char *name, const char *text, Environment *e) {
        _cleanup_free_ char *error = NULL;
        int r = environment_parse_manifest(name, text, strlen(text), e, &error);

        if (r < 0)
                print_error("%s\n", strna(error));
        assert_int_equal(r, 0);
}

static void parse_fails(const char *name, const char *text, const char *want) {
        _cleanup_free_ char *error = NULL;
        Environment e = {};

        assert_int_equal(environment_parse_manifest(name, text, strlen(text), &e, &error), -EINVAL);
        assert_non_null(error);
        if (!strstr(error, want)) {
                print_error("'%s' does not contain '%s'\n", error, want);
                fail();
        }
        assert_null(e.name);
}

static void test_names(_unused_ void **state) {
        assert_true(environment_name_is_valid("python-data", 11));
        assert_true(environment_name_is_valid("py3.11_x", 8));
        assert_false(environment_name_is_valid("", 0));
        assert_false(environment_name_is_valid("Python", 6));
        assert_false(environment_name_is_valid("-x", 2));
        assert_false(environment_name_is_valid(".hidden", 7));
        assert_false(environment_name_is_valid("a/b", 3));
        assert_false(environment_name_is_valid("a\0b", 3));
        {
                char long_name[ENVIRONMENT_NAME_MAX + 2];

                memset(long_name, 'a', sizeof(long_name));
                assert_true(environment_name_is_valid(long_name, ENVIRONMENT_NAME_MAX));
                assert_false(environment_name_is_valid(long_name, ENVIRONMENT_NAME_MAX + 1));
        }

        assert_true(python_module_name_is_valid("pandas", 6));
        assert_true(python_module_name_is_valid("a.b_c.D9", 8));
        assert_true(python_module_name_is_valid("_x", 2));
        assert_false(python_module_name_is_valid("", 0));
        assert_false(python_module_name_is_valid("9a", 2));
        assert_false(python_module_name_is_valid("a..b", 4));
        assert_false(python_module_name_is_valid("a.", 2));
        assert_false(python_module_name_is_valid(".a", 2));
        assert_false(python_module_name_is_valid("a b", 3));
        assert_false(python_module_name_is_valid("a\x1b[31m", 7));
        assert_false(python_module_name_is_valid("caf\xc3\xa9", 5));
        {
                char m[PYTHON_MODULE_NAME_MAX + 2];

                memset(m, 'm', sizeof(m));
                assert_true(python_module_name_is_valid(m, PYTHON_MODULE_NAME_MAX));
                assert_false(python_module_name_is_valid(m, PYTHON_MODULE_NAME_MAX + 1));
        }
}

static void test_manifest(_unused_ void **state) {
        _cleanup_(environment_done) Environment e = {};

        parse_ok("python-data", MANIFEST, &e);
        assert_string_equal(e.name, "python-data");
        assert_string_equal(e.language, "python");
        assert_string_equal(e.description, "numpy and friends");
        assert_int_equal(e.n_packages, 2);
        assert_string_equal(e.packages[0].name, "python3-pandas");
        assert_string_equal(e.packages[0].version, "1.5.3+dfsg-2");
        assert_string_equal(e.packages[1].version, "1:1.24.2-1+deb12u1");
        /* Sorted, duplicates once. */
        assert_int_equal(e.n_modules, 3);
        assert_string_equal(e.modules[0], "PIL");
        assert_string_equal(e.modules[1], "pandas");
        assert_string_equal(e.modules[2], "sklearn");
        assert_int_equal(e.n_env, 2);
        /* In file order, duplicates once. */
        assert_int_equal(e.n_preload, 2);
        assert_string_equal(e.preload[0], "pandas");
        assert_string_equal(e.preload[1], "numpy.linalg");
        assert_true(environment_has_module(&e, "pandas"));
        assert_true(environment_has_module(&e, "pandas.core.frame"));
        assert_true(environment_has_module(&e, "sklearn"));
        assert_true(environment_has_module(&e, "PIL.Image"));
        assert_false(environment_has_module(&e, "panda"));
        assert_false(environment_has_module(&e, "pandasx"));
        assert_false(environment_has_module(&e, "torch"));
        assert_false(environment_has_module(&e, "sklear.n"));
}

static void test_manifest_refused(_unused_ void **state) {
        parse_fails("python-data", "Language=python\n", "no Name=");
        parse_fails("python-data", "Name=python-data\n", "no Language=");
        parse_fails("python-data", "Name=other\nLanguage=python\n", "line 1: Name=other");
        parse_fails("python-data", "Name=python-data\nLanguage=python\nBogus=1\n", "line 3: unknown key 'Bogus'");
        parse_fails("python-data", "Name=python-data\nLanguage=python\nno equals\n", "line 3: expected KEY=VALUE");
        parse_fails("python-data", "Name=python-data\nLanguage=python\nPackage=onlyname\n", "line 3");
        parse_fails("python-data", "Name=python-data\nLanguage=python\nPackage=a b c\n", "line 3");
        parse_fails("python-data", "Name=python-data\nLanguage=python\nModule=a.b\n", "line 3: invalid Module=");
        parse_fails("python-data", "Name=python-data\nLanguage=python\nModule=a-b\n", "line 3: invalid Module=");
        parse_fails("python-data", "Name=python-data\nLanguage=python\nDescription=a\x1b[31m\n", "line 3: control");
        parse_fails("python-data", "Name=python-data\nLanguage=python\nEnvironment=NOEQ\n", "line 3");
        /* A preload goes to __import__() and onto a command line, comma-separated: a dotted name only. */
        parse_fails("python-data", "Name=python-data\nLanguage=python\nPreload=a,b\n", "line 3: invalid Preload=");
        parse_fails("python-data", "Name=python-data\nLanguage=python\nPreload=os;rm\n", "line 3: invalid Preload=");
        parse_fails("python-data", "Name=python-data\nLanguage=python\nPreload=.a\n", "line 3: invalid Preload=");
        {
                char t[1024] = "Name=python-data\nLanguage=python\n";

                for (int i = 0; i <= ENVIRONMENT_PRELOAD_MAX; i++)
                        snprintf(t + strlen(t), sizeof(t) - strlen(t), "Preload=m%d\n", i);
                parse_fails("python-data", t, "more than 16 Preload=");
        }
        parse_fails("python-data", "Name=python-data\nLanguage=python\nEnvironment=A-B=1\n", "line 3");
        parse_fails("Bad", "Name=Bad\nLanguage=python\n", "invalid environment name");
        {
                /* A line above the bound. */
                _cleanup_free_ char *t = malloc(ENVIRONMENT_LINE_MAX + 64);

                assert_non_null(t);
                strcpy(t, "Name=python-data\nDescription=");
                memset(t + strlen(t), 'x', ENVIRONMENT_LINE_MAX);
                t[strlen("Name=python-data\nDescription=") + ENVIRONMENT_LINE_MAX] = '\0';
                parse_fails("python-data", t, "line 2: longer than");
        }
}

static Environments *two_envs(void) {
        Environments *es = calloc(1, sizeof(Environments));

        assert_non_null(es);
        es->envs = calloc(3, sizeof(Environment));
        assert_non_null(es->envs);
        parse_ok("python-data", MANIFEST, es->envs + 0);
        parse_ok("python-ml", "Name=python-ml\nLanguage=python\nModule=torch\nModule=sklearn\n", es->envs + 1);
        parse_ok("node-web", "Name=node-web\nLanguage=node\nPackage=node-express 4.18\n", es->envs + 2);
        es->n = 3;
        return es;
}

static void test_json(_unused_ void **state) {
        _cleanup_(environments_freep) Environments *es = two_envs();
        json_object *a, *o, *p;

        a = environments_json_for_language(es, "python");
        assert_non_null(a);
        assert_int_equal(json_object_array_length(a), 2);
        o = json_object_array_get_idx(a, 0);
        assert_string_equal(json_object_get_string(json_object_object_get(o, "name")), "python-data");
        assert_string_equal(json_object_get_string(json_object_object_get(o, "description")), "numpy and friends");
        p = json_object_object_get(o, "packages");
        assert_int_equal(json_object_array_length(p), 2);
        assert_string_equal(json_object_get_string(json_object_object_get(json_object_array_get_idx(p, 0), "name")),
                            "python3-pandas");
        assert_string_equal(json_object_get_string(json_object_object_get(json_object_array_get_idx(p, 0), "version")),
                            "1.5.3+dfsg-2");
        json_object_put(a);

        a = environments_json_for_language(es, "bash");
        assert_int_equal(json_object_array_length(a), 0);
        json_object_put(a);
        a = environments_json_for_language(NULL, "python");
        assert_int_equal(json_object_array_length(a), 0);
        json_object_put(a);

        assert_non_null(environments_find(es, "node-web"));
        assert_null(environments_find(es, "node"));
        assert_null(environments_find(es, NULL));
}

static void test_missing_module_from_stderr(_unused_ void **state) {
        char buf[PYTHON_MODULE_NAME_MAX + 1];
        const char *s;

        s = "Traceback (most recent call last):\n  File \"/run/sandbox/main.py\", line 1, in <module>\n"
            "    import pandas\nModuleNotFoundError: No module named 'pandas'\n";
        assert_int_equal(missing_module_from_stderr(s, strlen(s), buf, sizeof(buf)), 1);
        assert_string_equal(buf, "pandas");

        /* The last valid one wins; an invalid later one is not taken. */
        s = "ModuleNotFoundError: No module named 'a'\nModuleNotFoundError: No module named 'b.c'\n"
            "ModuleNotFoundError: No module named 'x y'\n";
        assert_int_equal(missing_module_from_stderr(s, strlen(s), buf, sizeof(buf)), 1);
        assert_string_equal(buf, "b.c");

        /* Hostile: escapes, no closing quote, too long, truncated at the end, NUL inside. */
        s = "ModuleNotFoundError: No module named 'a\x1b[31m'\n";
        assert_int_equal(missing_module_from_stderr(s, strlen(s), buf, sizeof(buf)), 0);
        s = "ModuleNotFoundError: No module named 'abc";
        assert_int_equal(missing_module_from_stderr(s, strlen(s), buf, sizeof(buf)), 0);
        s = "ModuleNotFoundError: No module named '";
        assert_int_equal(missing_module_from_stderr(s, strlen(s), buf, sizeof(buf)), 0);
        {
                char big[PYTHON_MODULE_NAME_MAX + 64];
                int n = snprintf(big, sizeof(big), "ModuleNotFoundError: No module named '");

                memset(big + n, 'm', PYTHON_MODULE_NAME_MAX + 1);
                big[n + PYTHON_MODULE_NAME_MAX + 1] = '\'';
                assert_int_equal(missing_module_from_stderr(big, (size_t) n + PYTHON_MODULE_NAME_MAX + 2, buf,
                                                            sizeof(buf)),
                                 0);
        }
        {
                static const char nul[] = "ModuleNotFoundError: No module named 'ab\0c'\n";

                assert_int_equal(missing_module_from_stderr(nul, sizeof(nul) - 1, buf, sizeof(buf)), 0);
        }
        assert_int_equal(missing_module_from_stderr("", 0, buf, sizeof(buf)), 0);
        assert_int_equal(missing_module_from_stderr(NULL, 0, buf, sizeof(buf)), 0);
        /* A buffer too small is refused, not overrun. */
        s = "ModuleNotFoundError: No module named 'pandas'\n";
        assert_int_equal(missing_module_from_stderr(s, strlen(s), buf, 8), 0);
}

static void test_missing_module_message(_unused_ void **state) {
        _cleanup_(environments_freep) Environments *es = two_envs();
        _cleanup_free_ char *a = NULL, *b = NULL, *c = NULL, *d = NULL, *f = NULL;

        a = missing_module_message(es, "python", NULL, "pandas", false);
        assert_non_null(a);
        assert_non_null(strstr(a, "'pandas'"));
        assert_non_null(strstr(a, "the python base (no environment)"));
        assert_non_null(strstr(a, "\"environment\": \"python-data\""));
        assert_null(strstr(a, "python-ml"));
        assert_null(strstr(a, "pip install"));

        /* Two have it; the one the run used is not suggested. */
        b = missing_module_message(es, "python", "python-data", "sklearn.linear_model", true);
        assert_non_null(strstr(b, "'sklearn.linear_model' in environment 'python-data'"));
        assert_non_null(strstr(b, "\"python-ml\""));
        assert_null(strstr(b, "\"python-data\""));
        assert_non_null(strstr(b, "pip install sklearn"));

        /* None has it: with network pip, without the way to get network. */
        c = missing_module_message(es, "python", "python-data", "torchvision", true);
        assert_non_null(strstr(c, "pip install torchvision"));
        assert_non_null(strstr(c, "environment 'python-data'"));
        d = missing_module_message(es, "python", NULL, "nope", false);
        assert_non_null(strstr(d, "nor in any environment of python"));
        assert_non_null(strstr(d, "network"));

        /* Another language's environment is never suggested. */
        f = missing_module_message(es, "python3", NULL, "pandas", false);
        assert_null(strstr(f, "python-data"));
}

static void test_merge_env(_unused_ void **state) {
        _cleanup_(environments_freep) Environments *es = two_envs();
        char *user[] = { (char *) "MPLBACKEND=svg", (char *) "ZED=1", NULL };
        _cleanup_strv_free_ char **l = NULL;
        size_t n = 0;

        assert_int_equal(environment_merge_env(es->envs + 0, user, 2, &l, &n), 0);
        assert_int_equal(n, 3);
        /* The request's MPLBACKEND wins; sorted by name. */
        assert_string_equal(l[0], "MPLBACKEND=svg");
        assert_string_equal(l[1], "MPLCONFIGDIR=/tmp/matplotlib");
        assert_string_equal(l[2], "ZED=1");
        assert_null(l[3]);
}

static void test_request_field(_unused_ void **state) {
        _cleanup_(config_freep) Config *c = config_new();
        RequestError err;
        ExecRequest *r = NULL;
        static const struct {
                const char *body;
                bool ok;
        } rows[] = {
                { "{\"language\":\"python\",\"code\":\"1\",\"environment\":\"python-data\"}", true },
                { "{\"language\":\"python\",\"code\":\"1\",\"environment\":null}", true },
                { "{\"language\":\"python\",\"code\":\"1\",\"environment\":\"Python\"}", false },
                { "{\"language\":\"python\",\"code\":\"1\",\"environment\":\"\"}", false },
                { "{\"language\":\"python\",\"code\":\"1\",\"environment\":\"a/../b\"}", false },
                { "{\"language\":\"python\",\"code\":\"1\",\"environment\":\"a\\u0000b\"}", false },
                { "{\"language\":\"python\",\"code\":\"1\",\"environment\":7}", false },
                { "{\"language\":\"python\",\"code\":\"1\",\"environment\":[\"x\"]}", false },
        };
        uint8_t fp_none[32], fp_env[32];

        assert_non_null(c);
        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                int k = exec_request_parse(rows[i].body, strlen(rows[i].body), c, &r, &err);

                if ((k == 0) != rows[i].ok)
                        print_error("row %zu: %d %s\n", i, k, err.message);
                assert_int_equal(k == 0, rows[i].ok);
                if (k == 0) {
                        assert_true(i != 0 || streq_ptr(r->environment, "python-data"));
                        assert_true(i != 1 || !r->environment);
                        if (i == 0) {
                                memcpy(fp_env, r->fingerprint, 32);
                                /* Pooled by default (Environments=python-data), else cold. */
                                assert_int_equal(warm_policy_check(c, r), WARM_OK);
                        } else
                                memcpy(fp_none, r->fingerprint, 32);
                        r = exec_request_free(r);
                } else
                        assert_string_equal(err.field, "environment");
        }
        /* The environment is part of what makes two requests the same. */
        assert_memory_not_equal(fp_env, fp_none, 32);
}

static void test_unit_props(_unused_ void **state) {
        const Language *l = language_find("python");
        UnitPlan plan = {
                .execution_id = "exec_1",
                .language = l,
                .limits = { .timeout_ms = 1000, .memory_mb = 256, .cpu_cores = 1, .disk_mb = 64, .tasks = 32 },
                .helper = "/usr/libexec/sandbox-exec",
                .workspace = "/run/sandboxd/ws/exec_1",
                .usr_layer = "/var/lib/sandboxd/usr-layers/abc",
                .environment_layer = "/var/lib/sandboxd/environments/python-data/usr",
                .nofile = 256,
                .max_code_bytes = 1024,
                .stdin_fd = -1,
        };
        UnitProps p = {};
        const UnitProp *x;
        bool bound = false, arg = false;

        for (int pass = 0; pass < 2; pass++) {
                bound = arg = false;
                assert_int_equal(unit_props_build(&plan, &p), 0);
                x = unit_props_find(&p, "BindReadOnlyPaths");
                assert_non_null(x);
                for (size_t i = 0; i < x->n; i += 3)
                        if (streq(x->strv[i + 1], SANDBOX_ENV_LAYER)) {
                                assert_string_equal(x->strv[i], plan.environment_layer ?: "");
                                bound = true;
                        }
                x = unit_props_find(&p, "ExecStartEx");
                assert_non_null(x);
                for (size_t i = 0; i < x->n; i++)
                        if (streq(x->strv[i], "--env-layer=" SANDBOX_ENV_LAYER))
                                arg = true;
                unit_props_done(&p);
                /* With the layer: bound and named; without (the base): neither. */
                assert_true(bound == (pass == 0));
                assert_true(arg == (pass == 0));
                plan.environment_layer = NULL;
        }
        /* No /usr layer: no overlay, so no environment layer either. */
        plan.environment_layer = "/x/usr";
        plan.usr_layer = NULL;
        assert_int_equal(unit_props_build(&plan, &p), 0);
        x = unit_props_find(&p, "ExecStartEx");
        for (size_t i = 0; i < x->n; i++)
                assert_null(startswith(x->strv[i], "--env-layer"));
        unit_props_done(&p);
}

static void write_file(const char *dir, const char *name, const char *text) {
        _cleanup_free_ char *p = NULL;
        FILE *f;

        assert_true(asprintf(&p, "%s/%s", dir, name) > 0);
        f = fopen(p, "we");
        assert_non_null(f);
        assert_int_equal(fputs(text, f) >= 0, 1);
        assert_int_equal(fclose(f), 0);
}

static void make_env(const char *root, const char *name, const char *manifest, mode_t usr_mode) {
        _cleanup_free_ char *d = NULL, *u = NULL;

        assert_true(asprintf(&d, "%s/%s", root, name) > 0 && asprintf(&u, "%s/usr", d) > 0);
        assert_int_equal(mkdir(d, 0755), 0);
        assert_int_equal(mkdir(u, 0755), 0);
        assert_int_equal(chmod(u, usr_mode), 0);
        if (manifest)
                write_file(d, "manifest", manifest);
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw) {
        return remove(p) < 0 ? -1 : 0;
}

/* environments_load() over a real directory below the build tree: the good one loads, the others
 * (malformed, no manifest, writable by others, hidden, invalid name) are left out. */
static void test_load(_unused_ void **state) {
        char root[] = UNIT_TEST_BUILD_DIR "/test-environment-XXXXXX";
        _cleanup_(environments_freep) Environments *es = NULL;
        _cleanup_free_ char *usr = NULL;

        if (geteuid() != 0)
                skip();   /* the layers must be root's */
        assert_non_null(mkdtemp(root));
        make_env(root, "good", "Name=good\nLanguage=python\nModule=pandas\n", 0755);
        make_env(root, "bad", "Name=bad\nLanguage=python\nWhat=1\n", 0755);
        make_env(root, "nomanifest", NULL, 0755);
        make_env(root, "writable", "Name=writable\nLanguage=python\n", 0777);
        make_env(root, ".building", "Name=.building\nLanguage=python\n", 0755);
        make_env(root, "Upper", "Name=Upper\nLanguage=python\n", 0755);

        assert_int_equal(environments_load(root, &es), 0);
        assert_int_equal(es->n, 1);
        assert_string_equal(es->envs[0].name, "good");
        assert_true(asprintf(&usr, "%s/good/usr", root) > 0);
        assert_string_equal(es->envs[0].usr_dir, usr);
        es = environments_free(es);

        /* A missing directory: no environments, not an error. */
        assert_int_equal(nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS), 0);
        assert_int_equal(environments_load(root, &es), 0);
        assert_int_equal(es->n, 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_names),
                cmocka_unit_test(test_manifest),
                cmocka_unit_test(test_manifest_refused),
                cmocka_unit_test(test_json),
                cmocka_unit_test(test_missing_module_from_stderr),
                cmocka_unit_test(test_missing_module_message),
                cmocka_unit_test(test_merge_env),
                cmocka_unit_test(test_request_field),
                cmocka_unit_test(test_unit_props),
                cmocka_unit_test(test_load),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "model/conf.h"
#include "model/language.h"
#include "model/request.h"
#include "model/warm-policy.h"
#include "util.h"

/* Which requests a warm unit may serve, row by row: each row is one request against the default
 * configuration (or one changed key) and the first reason it starts cold, if any. */

typedef struct Row {
        const char *name;
        const char *body;        /* the request */
        const char *conf;        /* a drop-in, or NULL */
        WarmRefusal want;
        bool strong;             /* the run goes to the strong tier (submit.c's choice, from the risk scan) */
} Row;

static const Row rows[] = {
        { "python, defaults", "{\"language\":\"python\",\"code\":\"1\"}", NULL, WARM_OK },
        { "bash, defaults", "{\"language\":\"bash\",\"code\":\"1\"}", NULL, WARM_OK },
        { "node by alias", "{\"language\":\"js\",\"code\":\"1\"}", NULL, WARM_OK },
        { "start auto is the default", "{\"language\":\"python\",\"code\":\"1\",\"start\":\"auto\"}", NULL, WARM_OK },
        { "start cold", "{\"language\":\"python\",\"code\":\"1\",\"start\":\"cold\"}", NULL, WARM_ASKED_COLD },
        { "pool off", "{\"language\":\"python\",\"code\":\"1\"}", "[Pool]\nSize=0\n", WARM_POOL_OFF },
        { "language not pooled", "{\"language\":\"bash\",\"code\":\"1\"}", "[Pool]\nLanguages=python node\n",
          WARM_NOT_POOLED },
        { "no language pooled", "{\"language\":\"python\",\"code\":\"1\"}", "[Pool]\nLanguages=\n", WARM_NOT_POOLED },
        { "a session's run", "{\"language\":\"python\",\"code\":\"1\",\"session_id\":\"s1\"}", NULL, WARM_SESSION },
        { "input files", "{\"language\":\"python\",\"code\":\"1\",\"files\":[{\"path\":\"a\",\"content_base64\":\"eA==\"}]}",
          NULL, WARM_INPUTS },
        { "network", "{\"language\":\"python\",\"code\":\"1\",\"network\":{\"allow\":[\"pypi.org\"]}}",
          NULL, WARM_NETWORK },
        { "network, bash", "{\"language\":\"bash\",\"code\":\"1\",\"network\":{\"allow\":[\"a.example\"]}}",
          NULL, WARM_NETWORK },
        { "args", "{\"language\":\"python\",\"code\":\"1\",\"args\":[\"a\"]}", NULL, WARM_ARGS },
        { "args, one empty", "{\"language\":\"bash\",\"code\":\"1\",\"args\":[\"\"]}", NULL, WARM_ARGS },
        { "args, none", "{\"language\":\"python\",\"code\":\"1\",\"args\":[]}", NULL, WARM_OK },
        { "stdin", "{\"language\":\"python\",\"code\":\"1\",\"stdin\":\"x\"}", NULL, WARM_STDIN },
        { "stdin, a NUL", "{\"language\":\"bash\",\"code\":\"1\",\"stdin\":\"\\u0000\"}", NULL, WARM_STDIN },
        { "stdin, empty", "{\"language\":\"python\",\"code\":\"1\",\"stdin\":\"\"}", NULL, WARM_OK },
        { "disk_mb other than the default", "{\"language\":\"python\",\"code\":\"1\",\"limits\":{\"disk_mb\":64}}",
          NULL, WARM_DISK },
        { "disk_mb equal to the default", "{\"language\":\"python\",\"code\":\"1\",\"limits\":{\"disk_mb\":1024}}",
          NULL, WARM_OK },
        { "python below MinMemoryMB", "{\"language\":\"python\",\"code\":\"1\",\"limits\":{\"memory_mb\":127}}",
          NULL, WARM_MEMORY },
        { "python at MinMemoryMB", "{\"language\":\"python\",\"code\":\"1\",\"limits\":{\"memory_mb\":128}}",
          NULL, WARM_OK },
        { "bash below MinMemoryMB (no preloaded runtime)",
          "{\"language\":\"bash\",\"code\":\"1\",\"limits\":{\"memory_mb\":32}}", NULL, WARM_OK },
        { "python, other limits", "{\"language\":\"python\",\"code\":\"1\",\"limits\":{\"memory_mb\":2048,"
          "\"cpu_cores\":0.5,\"tasks\":16,\"timeout_ms\":500}}", NULL, WARM_OK },
        { "python, an ordinary env", "{\"language\":\"python\",\"code\":\"1\",\"env\":{\"FOO\":\"1\"}}", NULL, WARM_OK },
        { "python, OPENBLAS_NUM_THREADS", "{\"language\":\"python\",\"code\":\"1\",\"env\":{\"OPENBLAS_NUM_THREADS\":\"1\"}}",
          NULL, WARM_ENV },
        { "python, OMP_NUM_THREADS", "{\"language\":\"python\",\"code\":\"1\",\"env\":{\"OMP_NUM_THREADS\":\"1\"}}",
          NULL, WARM_ENV },
        { "python, PYTHONIOENCODING", "{\"language\":\"python\",\"code\":\"1\",\"env\":{\"PYTHONIOENCODING\":\"latin1\"}}",
          NULL, WARM_ENV },
        { "python, LANGX is not LANG", "{\"language\":\"python\",\"code\":\"1\",\"env\":{\"LANGX\":\"1\"}}", NULL, WARM_OK },
        { "python, NPY_ prefix", "{\"language\":\"python\",\"code\":\"1\",\"env\":{\"NPY_X\":\"1\"}}", NULL, WARM_ENV },
        { "bash, OMP_NUM_THREADS (the runtime starts at the claim)",
          "{\"language\":\"bash\",\"code\":\"1\",\"env\":{\"OMP_NUM_THREADS\":\"1\"}}", NULL, WARM_OK },
        { "an environment pooled by default (Environments=python-data)",
          "{\"language\":\"python\",\"code\":\"1\",\"environment\":\"python-data\"}", NULL, WARM_OK },
        { "an environment not in Environments=",
          "{\"language\":\"python\",\"code\":\"1\",\"environment\":\"python-ml\"}", NULL, WARM_ENVIRONMENT },
        { "no environment pooled", "{\"language\":\"python\",\"code\":\"1\",\"environment\":\"python-data\"}",
          "[Pool]\nEnvironments=\n", WARM_ENVIRONMENT },
        { "an environment, pool off", "{\"language\":\"python\",\"code\":\"1\",\"environment\":\"python-data\"}",
          "[Pool]\nSize=0\n", WARM_POOL_OFF },
        { "an environment pooled, but files", "{\"language\":\"python\",\"code\":\"1\",\"environment\":\"python-data\","
          "\"files\":[{\"path\":\"a\",\"content_base64\":\"eA==\"}]}", NULL, WARM_INPUTS },
        { "an environment pooled, below MinMemoryMB",
          "{\"language\":\"python\",\"code\":\"1\",\"environment\":\"python-data\",\"limits\":{\"memory_mb\":64}}",
          NULL, WARM_MEMORY },
        { "start cold wins over everything", "{\"language\":\"python\",\"code\":\"1\",\"start\":\"cold\","
          "\"session_id\":\"s1\"}", NULL, WARM_ASKED_COLD },
        /* The strong tier: units of its own (StrongSize=), no runtime before the claim. */
        { "strong, defaults", "{\"language\":\"python\",\"code\":\"1\"}", NULL, WARM_OK, true },
        { "strong, bash", "{\"language\":\"bash\",\"code\":\"1\"}", NULL, WARM_OK, true },
        { "strong, StrongSize=0", "{\"language\":\"python\",\"code\":\"1\"}", "[Pool]\nStrongSize=0\n", WARM_STRONG,
          true },
        { "strong, pool off", "{\"language\":\"python\",\"code\":\"1\"}", "[Pool]\nSize=0\n", WARM_POOL_OFF, true },
        { "strong, not pooled", "{\"language\":\"python\",\"code\":\"1\"}", "[Pool]\nLanguages=bash\n",
          WARM_NOT_POOLED, true },
        { "strong, other tasks", "{\"language\":\"python\",\"code\":\"1\",\"limits\":{\"tasks\":16}}", NULL,
          WARM_STRONG_LIMITS, true },
        { "strong, other memory", "{\"language\":\"python\",\"code\":\"1\",\"limits\":{\"memory_mb\":64}}", NULL,
          WARM_STRONG_LIMITS, true },
        { "strong, other cpu and timeout", "{\"language\":\"python\",\"code\":\"1\",\"limits\":{\"cpu_cores\":0.5,"
          "\"timeout_ms\":500}}", NULL, WARM_OK, true },
        { "strong, an env the preload would read", "{\"language\":\"python\",\"code\":\"1\",\"env\":{\"NPY_X\":\"1\"}}",
          NULL, WARM_OK, true },
        { "strong, an environment", "{\"language\":\"python\",\"code\":\"1\",\"environment\":\"python-data\"}",
          NULL, WARM_ENVIRONMENT, true },
        { "strong, a session", "{\"language\":\"python\",\"code\":\"1\",\"session_id\":\"s1\"}", NULL, WARM_SESSION,
          true },
        { "strong, stdin", "{\"language\":\"python\",\"code\":\"1\",\"stdin\":\"x\"}", NULL, WARM_STDIN, true },
        { "strong, start cold", "{\"language\":\"python\",\"code\":\"1\",\"start\":\"cold\"}", NULL, WARM_ASKED_COLD,
          true },
};

static void test_row(void **state) {
        const Row *row = *state;
        _cleanup_(config_freep) Config *c = config_new();
        _cleanup_(exec_request_freep) ExecRequest *req = NULL;
        _cleanup_free_ char *error = NULL;
        RequestError err;

        assert_non_null(c);
        if (row->conf)
                assert_int_equal(config_parse_text(c, row->conf, "test.conf", &error), 0);
        assert_int_equal(exec_request_parse(row->body, strlen(row->body), c, &req, &err), 0);
        req->run_strong = row->strong;
        assert_int_equal(warm_policy_check(c, req), row->want);
        assert_non_null(warm_refusal_to_string(row->want));
}

static void test_env_matches(_unused_ void **state) {
        static const char *const patterns[] = { "TZ", "LC_*", "PYTHON*", NULL };

        assert_true(warm_env_matches(patterns, "TZ=UTC"));
        assert_false(warm_env_matches(patterns, "TZX=UTC"));
        assert_false(warm_env_matches(patterns, "T=UTC"));
        assert_true(warm_env_matches(patterns, "LC_ALL=C"));
        assert_true(warm_env_matches(patterns, "LC_=C"));
        assert_false(warm_env_matches(patterns, "LC=C"));
        assert_true(warm_env_matches(patterns, "PYTHON=1"));
        assert_false(warm_env_matches(patterns, "XPYTHON=1"));
        assert_false(warm_env_matches(NULL, "TZ=UTC"));
}

static void test_start_refused(_unused_ void **state) {
        static const char *const bodies[] = {
                "{\"language\":\"python\",\"code\":\"1\",\"start\":\"warm\"}",
                "{\"language\":\"python\",\"code\":\"1\",\"start\":1}",
                "{\"language\":\"python\",\"code\":\"1\",\"start\":\"\"}",
                "{\"language\":\"python\",\"code\":\"1\",\"start\":null}",
        };
        _cleanup_(config_freep) Config *c = config_new();

        for (size_t i = 0; i < ELEMENTSOF(bodies); i++) {
                ExecRequest *req = NULL;
                RequestError err;

                assert_int_equal(exec_request_parse(bodies[i], strlen(bodies[i]), c, &req, &err), -EINVAL);
                assert_null(req);
                assert_string_equal(err.field, "start");
        }
}

static void test_pool_conf(_unused_ void **state) {
        _cleanup_(config_freep) Config *c = config_new();
        char *error = NULL;

        /* The defaults. */
        assert_int_equal(c->pool_size, 2);
        assert_int_equal(c->pool_max_age_sec, 600);
        assert_int_equal(c->pool_min_memory_mb, 128);
        assert_true(warm_language_pooled(c, language_find("python")));
        assert_true(warm_language_pooled(c, language_find("node")));
        assert_true(warm_language_pooled(c, language_find("bash")));
        assert_string_equal(c->pool_python_preload[0], "numpy");
        assert_null(c->pool_python_preload[1]);
        assert_string_equal(c->pool_environments[0], "python-data");
        assert_null(c->pool_environments[1]);
        assert_true(warm_environment_pooled(c, "python-data"));
        assert_false(warm_environment_pooled(c, "python-ml"));
        assert_false(warm_environment_pooled(c, NULL));

        assert_int_equal(config_parse_text(c, "[Pool]\nSize=5\nLanguages=bash python bash\nPythonPreload=numpy pandas\n"
                                              "MaxAgeSec=60\nMinMemoryMB=0\n", "a.conf", &error), 0);
        assert_int_equal(c->pool_size, 5);
        assert_false(warm_language_pooled(c, language_find("node")));
        assert_null(c->pool_languages[2]);      /* the repeated name once */
        assert_string_equal(c->pool_python_preload[1], "pandas");
        assert_int_equal(c->pool_max_age_sec, 60);
        assert_int_equal(config_validate(c, &error), 0);

        /* Refusals, with the file and line. */
        assert_int_equal(config_parse_text(c, "[Pool]\nSize=65\n", "b.conf", &error), -EINVAL);
        assert_non_null(strstr(error, "b.conf:2"));
        error = mfree(error);
        assert_int_equal(config_parse_text(c, "[Pool]\nPythonPreload=os;rm\n", "c.conf", &error), -EINVAL);
        assert_non_null(strstr(error, "PythonPreload="));
        error = mfree(error);
        assert_int_equal(config_parse_text(c, "[Pool]\nMaxAgeSec=5\n", "d.conf", &error), -EINVAL);
        error = mfree(error);
        /* Only the form of a name: the language files are read after the configuration, and an
         * undefined name pools nothing. */
        assert_int_equal(config_parse_text(c, "[Pool]\nLanguages=python cobol\n", "e.conf", &error), 0);
        assert_int_equal(config_validate(c, &error), 0);
        if (config_parse_text(c, "[Pool]\nLanguages=python Cobol!\n", "f.conf", &error) == 0)
                assert_int_equal(config_validate(c, &error), -EINVAL);
        assert_non_null(error);
        assert_non_null(strstr(error, "Cobol"));
        error = mfree(error);
        /* Environments=: the form of a name (the directory is read after the configuration). */
        assert_int_equal(config_parse_text(c, "[Pool]\nEnvironments=python-data other.env\n", "g.conf", &error), 0);
        assert_int_equal(config_validate(c, &error), 0);
        assert_true(warm_environment_pooled(c, "other.env"));
        if (config_parse_text(c, "[Pool]\nEnvironments=Python_Data\n", "h.conf", &error) == 0)
                assert_int_equal(config_validate(c, &error), -EINVAL);
        assert_non_null(error);
        assert_non_null(strstr(error, "Environments="));
        error = mfree(error);
        assert_int_equal(config_parse_text(c, "[Pool]\nEnvironments=\n", "i.conf", &error), 0);
        assert_false(warm_environment_pooled(c, "python-data"));
}

/* Which kind of ready python a source asks for (PythonPreload=numpy, and one with a submodule). */
static const struct {
        const char *code;
        bool preload;
} preload_rows[] = {
        { "print(1)", false },
        { "import numpy", true },
        { "import numpy as np\nprint(np.arange(3))", true },
        { "from numpy.linalg import inv", true },
        { "import sys; print('numpy' in sys.modules)", true },
        { "x=numpy", true },
        { "numpy", true },
        { "import numpyx", false },
        { "import my_numpy", false },
        { "import numpy2", false },
        { "# nump y", false },
        { "NUMPY = 1", false },
        { "import pandas as pd", true },
        { "from scipy import stats", true },
        { "import matplotlib.pyplot as plt", true },
        { "import pandasx", false },
        { "import json, os", false },
        { "", false },
};

static void test_wants_preload(_unused_ void **state) {
        static const char *const numpy[] = { "numpy", NULL }, *const sub[] = { "numpy.linalg", NULL },
                          *const other[] = { "json", NULL };

        for (size_t i = 0; i < ELEMENTSOF(preload_rows); i++) {
                const char *code = preload_rows[i].code;

                if (warm_wants_preload(numpy, code, strlen(code)) != preload_rows[i].preload)
                        fail_msg("row %zu (%s): want %d", i, code, preload_rows[i].preload);
                /* A submodule is asked for by its package's name, importers included. */
                assert_int_equal(warm_wants_preload(sub, code, strlen(code)), preload_rows[i].preload);
        }
        /* The length bounds the search: a word past it is not seen, nor one cut by it. */
        assert_false(warm_wants_preload(numpy, "print(1) # numpy", 8));
        assert_false(warm_wants_preload(numpy, "import num", 10));
        assert_true(warm_wants_preload(numpy, "import numpy_extra", 12));
        /* No preload, another module's importers, no code: a plain one. */
        assert_false(warm_wants_preload(NULL, "import numpy", 12));
        assert_false(warm_wants_preload(other, "import pandas", 13));
        assert_true(warm_wants_preload(other, "import json", 11));
        assert_false(warm_wants_preload(numpy, NULL, 0));
}

int main(void) {
        struct CMUnitTest tests[ELEMENTSOF(rows) + 5];
        size_t n = 0;

        for (size_t i = 0; i < ELEMENTSOF(rows); i++)
                tests[n++] = (struct CMUnitTest) { rows[i].name, test_row, NULL, NULL, (void *) &rows[i] };
        tests[n++] = (struct CMUnitTest) { "env patterns", test_env_matches, NULL, NULL, NULL };
        tests[n++] = (struct CMUnitTest) { "start: only auto or cold", test_start_refused, NULL, NULL, NULL };
        tests[n++] = (struct CMUnitTest) { "[Pool] keys", test_pool_conf, NULL, NULL, NULL };
        tests[n++] = (struct CMUnitTest) { "which kind of ready python a source asks for", test_wants_preload, NULL,
                                           NULL, NULL };
        return _cmocka_run_group_tests("warm-policy", tests, n, NULL, NULL);
}

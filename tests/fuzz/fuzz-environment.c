/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* Environments (model/environment.c), pure: the manifest parser over the input, and the scan of a
 * program's stderr (hostile bytes) for the missing module, over the same input. Invariants: a
 * refusal says why and leaves nothing behind; an accepted manifest has its name, a valid language,
 * sorted unique valid modules and bounded counts; a module found in stderr is a valid dotted name
 * that is in the input, and the message made of it names it. */

#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "model/environment.h"
#include "util.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        fuzz_quiet();
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char *text = malloc(size + 1), *error = NULL;
        char module[PYTHON_MODULE_NAME_MAX + 1];
        Environment e = {};
        int r;

        if (!text)
                return 0;
        memcpy(text, data, size);
        text[size] = '\0';

        r = environment_parse_manifest("fuzz-env", text, size, &e, &error);
        fuzz_check(r == 0 || r == -EINVAL || r == -ENOMEM);
        if (r == 0) {
                fuzz_check(streq(e.name, "fuzz-env"));
                fuzz_check(environment_name_is_valid(e.language, strlen(e.language)));
                fuzz_check(e.n_packages <= ENVIRONMENT_PACKAGES_MAX && e.n_modules <= ENVIRONMENT_MODULES_MAX &&
                           e.n_env <= ENVIRONMENT_ENV_MAX);
                for (size_t i = 0; i < e.n_modules; i++) {
                        fuzz_check(python_module_name_is_valid(e.modules[i], strlen(e.modules[i])));
                        fuzz_check(i == 0 || strcmp(e.modules[i - 1], e.modules[i]) < 0);
                        fuzz_check(environment_has_module(&e, e.modules[i]));
                }
                for (size_t i = 0; i < e.n_env; i++)
                        fuzz_check(strchr(e.env[i], '=') && e.env[i][0] != '=');
                environment_done(&e);
        } else if (r == -EINVAL)
                fuzz_check(error && !isempty(error));

        if (missing_module_from_stderr((const char *) data, size, module, sizeof(module)) > 0) {
                _cleanup_free_ char *msg = NULL;

                fuzz_check(python_module_name_is_valid(module, strlen(module)));
                fuzz_check(memmem(data, size, module, strlen(module)) != NULL);
                msg = missing_module_message(NULL, "python", NULL, module, size % 2 == 0);
                fuzz_check(!msg || strstr(msg, module));
        }
        return 0;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The request parser: POST /v1/executions' body and Submit()'s JSON, exec_request_parse() with the
 * UTF-8 check, json_strict_check() and json-c in front of it, and request_files_to_json() of what it
 * accepts. The configuration is test-request's: built-in limits, small caps. */

#include <json-c/json.h>

#include "fuzz.h"
#include "model/conf.h"
#include "model/request.h"
#include "util.h"

static Config *cfg;

/* "KEY=VALUE" by KEY, as the request promises (request.h). */
static int env_name_cmp(const char *a, const char *b) {
        size_t la = strcspn(a, "="), lb = strcspn(b, "=");
        int r = memcmp(a, b, MIN(la, lb));

        return r != 0 ? r : (la > lb) - (la < lb);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        fuzz_quiet();
        cfg = config_new();
        if (!cfg)
                abort();
        cfg->max_request_bytes = 128 * 1024;
        cfg->max_code_bytes = 1024;
        cfg->max_input_files = 4;
        cfg->max_inline_input_bytes = 16;
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_(exec_request_freep) ExecRequest *req = NULL;
        RequestError err;
        json_object *files;
        int r;

        r = exec_request_parse((const char *) data, size, cfg, &req, &err);
        if (r < 0) {
                fuzz_check(!req);
                fuzz_check(r == -ENOMEM || err.message[0]);
                fuzz_check(memchr(err.field, 0, sizeof(err.field)) && memchr(err.message, 0, sizeof(err.message)));
                return 0;
        }
        fuzz_check(r == 0 && req);
        fuzz_check(req->language && req->code);
        fuzz_check(req->code_len <= cfg->max_code_bytes);
        fuzz_check(req->n_files <= cfg->max_input_files);
        for (size_t i = 0; i < req->n_files; i++)
                fuzz_check(input_path_is_valid(req->files[i].path, strlen(req->files[i].path), NULL));
        for (size_t i = 1; i < req->n_env; i++)
                fuzz_check(env_name_cmp(req->env[i - 1], req->env[i]) < 0);
        files = request_files_to_json(req);
        fuzz_check(files || req->n_files == 0);
        json_object_put(files);
        return 0;
}

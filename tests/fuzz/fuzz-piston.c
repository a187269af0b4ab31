/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* Piston's API v2 (model/piston.c), which PistonListen= serves to any local process without a key:
 * the body of POST /api/v2/execute through the UTF-8 and strict JSON checks and piston_request(),
 * whose request must then be one the request parser reads without crashing (it may refuse it: a
 * path, a size); and the same bytes as a record for piston_response(), which must answer any
 * object. */

#include <json-c/json.h>

#include "fuzz.h"
#include "model/conf.h"
#include "model/json-strict.h"
#include "model/language.h"
#include "model/piston.h"
#include "model/request.h"
#include "utf8.h"
#include "util.h"

static Config *cfg;
static const Language *langs[64];
static size_t n_langs;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        fuzz_quiet();
        cfg = config_new();
        if (!cfg)
                abort();
        cfg->defaults = (Limits) { .timeout_ms = 30000, .memory_mb = 512, .cpu_cores = 1, .disk_mb = 1024, .tasks = 128 };
        cfg->ceilings = (Limits) { .timeout_ms = 600000, .memory_mb = 8192, .cpu_cores = 2, .disk_mb = 8192, .tasks = 1024 };
        cfg->max_code_bytes = 4096;
        cfg->max_input_files = 4;
        cfg->max_inline_input_bytes = 64;
        for (size_t i = 0; i < language_count() && n_langs < ELEMENTSOF(langs); i++)
                langs[n_langs++] = language_get(i);
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char *text = NULL;
        json_object *body, *req = NULL, *answer;
        const Language *l = NULL;
        char msg[PISTON_MESSAGE_MAX];
        JsonStrictError jerr;
        int r;

        if (!utf8_is_valid(data, size) || json_strict_check((const char *) data, size, 8, &jerr) < 0)
                return 0;
        text = fuzz_text(data, size);
        body = json_tokener_parse(text);
        if (!body)
                return 0;
        r = piston_request(body, langs, n_langs, cfg, &req, &l, msg);
        if (r < 0) {
                fuzz_check(!req && !l);
                fuzz_check(r == -ENOMEM || (r == -EINVAL && msg[0] && memchr(msg, 0, PISTON_MESSAGE_MAX)));
        } else {
                _cleanup_(exec_request_freep) ExecRequest *parsed = NULL;
                const char *s = json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN);
                RequestError err;

                fuzz_check(r == 0 && req && l);
                fuzz_check(s);
                r = exec_request_parse(s, strlen(s), cfg, &parsed, &err);
                /* What piston_request() made names the language it chose, within the ceilings. */
                if (r == 0) {
                        fuzz_check(parsed->language == l);
                        fuzz_check(parsed->limits.timeout_ms <= cfg->ceilings.timeout_ms);
                        fuzz_check(parsed->limits.memory_mb <= cfg->ceilings.memory_mb);
                }
                json_object_put(req);
        }
        /* The same object as a record, for every language's answer shape. */
        for (size_t i = 0; i < n_langs; i++) {
                answer = piston_response(body, langs[i]);
                fuzz_check(answer && json_object_object_get_ex(answer, "run", NULL));
                json_object_put(answer);
        }
        json_object_put(body);
        return 0;
}

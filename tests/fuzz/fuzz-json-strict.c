/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The strict RFC 8259 check every JSON a caller sends goes through first: json_strict_check() at
 * the depths its callers use (the request's and the list query's). What it accepts is one value that
 * json-c parses too, to its end (an object or an array). */

#include <json-c/json.h>

#include "fuzz.h"
#include "model/json-strict.h"
#include "model/request.h"
#include "utf8.h"
#include "util.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        fuzz_quiet();
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        JsonStrictError err;
        size_t n;
        int r;

        (void) json_strict_check((const char *) data, size, 3, &err);
        r = json_strict_check((const char *) data, size, REQUEST_JSON_DEPTH_MAX, &err);
        fuzz_check(r == 0 || r == -EINVAL || r == -ENOMEM);
        if (r == -EINVAL)
                fuzz_check(memchr(err.path, 0, sizeof(err.path)) && err.message[0] &&
                           memchr(err.message, 0, sizeof(err.message)));
        /* An object or an array: json-c waits for more after a number at the end of its input. */
        for (n = 0; n < size && strchr(" \t\r\n", data[n]) && data[n]; n++)
                ;
        if (r == 0 && n < size && (data[n] == '{' || data[n] == '[') && utf8_is_valid(data, size)) {
                json_tokener *tok = json_tokener_new_ex(REQUEST_JSON_DEPTH_MAX + 1);
                json_object *o;

                if (!tok)
                        abort();
                json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
                o = json_tokener_parse_ex(tok, (const char *) data, (int) size);
                fuzz_check(json_tokener_get_error(tok) == json_tokener_success);
                fuzz_check((size_t) json_tokener_get_parse_end(tok) == size);
                json_object_put(o);
                json_tokener_free(tok);
        }
        return 0;
}

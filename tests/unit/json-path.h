/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* For the unit tests of JSON-making modules (test-mcp-model, test-piston-model): parse a literal, and
 * reach a value by a dotted path. Include after cmocka.h. */

#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

static inline json_object *parse(const char *text) {
        json_object *o = json_tokener_parse(text);

        if (!o)
                print_error("not JSON: %s\n", text);
        assert_non_null(o);
        return o;
}

/* The value at a dotted path ("a.b.0.c": array indexes as numbers); NULL when absent. */
static inline json_object *at(json_object *o, const char *path) {
        _cleanup_free_ char *copy = strdup(path);
        char *save = NULL;

        assert_non_null(copy);
        for (char *k = strtok_r(copy, ".", &save); k && o; k = strtok_r(NULL, ".", &save)) {
                if (json_object_is_type(o, json_type_array)) {
                        char *end;
                        long i = strtol(k, &end, 10);

                        if (*end || i < 0 || (size_t) i >= json_object_array_length(o))
                                return NULL;
                        o = json_object_array_get_idx(o, (size_t) i);
                } else if (!json_object_object_get_ex(o, k, &o))
                        return NULL;
        }
        return o;
}

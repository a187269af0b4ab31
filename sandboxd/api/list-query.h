/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The filters of a listing of executions, the same for both APIs: GET /v1/executions' query string
 * and ListExecutions' JSON object. Pure: no I/O. */

#include <json-c/json.h>

#include "model/request.h"
#include "store/store.h"

/* ListExecutions' query: a JSON object of a few short filters. */
#define LIST_QUERY_JSON_MAX 4096U

/* The filters by name as the HTTP query string has them (session_id, status, error_type, failed,
 * order, limit, cursor); get(userdata, key) returns the value or NULL. The strings must outlive *q.
 * 0, or -EINVAL with *err filled (the field named). */
typedef const char *(*ListQueryGet)(void *userdata, const char *key);
int list_query_parse(ListQueryGet get, void *userdata, StoreQuery *q, RequestError *err);

/* The same filters as a JSON object: {"status": "failed", "limit": 10, "failed": true}. Strings as
 * in the query string; integers and booleans as their query string text. Unknown keys and other
 * types are refused. "" is {}. */
typedef struct ListQueryJson {
        json_object *object;
        char text[7][24];        /* integers and booleans as the query string would have them */
        unsigned n_text;
} ListQueryJson;

int list_query_json_parse(const char *s, size_t len, ListQueryJson *ret, RequestError *err);
/* A ListQueryGet over a parsed ListQueryJson. */
const char *list_query_json_get(void *userdata, const char *key);
void list_query_json_done(ListQueryJson *l);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* list, and the listing (GET /v1/executions with the arg_* filters) that top and stats read too. */

#include <json-c/json.h>
#include <stddef.h>

int verb_list(char **args, size_t n_args);

/* GET one page. On success, *ret_answer is the page and *ret_list its "executions" array (owned by
 * the page), *ret_next its next_cursor (NULL when it is the last page). Returns an exit status on
 * failure (logged), 0 on success. */
int list_fetch_page(const char *cursor, json_object **ret_answer, json_object **ret_list,
                    const char **ret_next);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The HTTP routes of docs/http-api.md. */

#include "http.h"

void api_handle(HttpRequest *req, void *userdata);

/* The routes that carry their own authorization and so need no API key on TCP: GET of a signed
 * artifact URL, /v1/executions/<id>/artifacts/<path>. */
bool api_route_is_public(const char *method, const char *path);

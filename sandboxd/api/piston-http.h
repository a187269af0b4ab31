/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Piston's API v2 (docs/http-api.md, "Piston API v2"): GET /api/v2/runtimes and POST
 * /api/v2/execute, for the clients written against Piston's public server. The request becomes the
 * caller's POST /v1/executions?wait=true (model/piston.c makes the one from the other), with every
 * check of that route; the answer is the final record in Piston's shape. Refusals are Piston's:
 * {"message": "..."}, 400 for a request Piston would refuse, else the status sandboxd's own route
 * would give. Served on the unix socket, the keyed TCP listeners, and PistonListen='s listener
 * (http.h: no key, PistonOwner='s, only these routes). */

#include "api-context.h"
#include "http.h"

void api_handle_piston_runtimes(ApiContext *ac, HttpRequest *req);
void api_handle_piston_execute(ApiContext *ac, HttpRequest *req);

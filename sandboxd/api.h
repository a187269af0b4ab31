/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The HTTP routes of docs/http-api.md. */

#include "http.h"

void api_handle(HttpRequest *req, void *userdata);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* languages and health: what the daemon runs, and whether it is up. */

#include <stddef.h>

int verb_languages(char **args, size_t n_args);
int verb_health(char **args, size_t n_args);

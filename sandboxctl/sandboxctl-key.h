/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* key new [NAME]: a fresh API key and its line for APIKeysFile=. Needs no daemon. */

#include <stddef.h>

int verb_key(char **args, size_t n_args);

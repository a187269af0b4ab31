/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The name of an API key in the key file ("NAME sha256:HEX"): [A-Za-z0-9_.-]{1,64}. The daemon
 * reads it (auth.c); sandboxctl key new writes it. */

#include <stdbool.h>

#define KEY_NAME_MAX 64

bool key_name_is_valid(const char *s);

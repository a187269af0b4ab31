/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* stats: rates, percentiles and error shares over a window, from the listing. */

#include <stddef.h>

int verb_stats(char **args, size_t n_args);

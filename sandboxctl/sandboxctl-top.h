/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* top: the running executions, refreshed in place. */

#include <stddef.h>

int verb_top(char **args, size_t n_args);

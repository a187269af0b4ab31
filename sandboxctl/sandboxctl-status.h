/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* status (and show, the same command) and cancel: one execution by its ID. */

#include <stddef.h>

int verb_status(char **args, size_t n_args);
int verb_cancel(char **args, size_t n_args);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* artifacts: list an execution's artifacts, or download them (checked against the listing). */

#include <stddef.h>

int verb_artifacts(char **args, size_t n_args);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* session show|delete ID, session list. */

#include <stddef.h>

int verb_session(char **args, size_t n_args);
int verb_session_files(char **args, size_t n_args);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* run and submit: the request from the command line, and "run" behaving like the program. */

#include <stddef.h>

int verb_run(char **args, size_t n_args);
int verb_submit(char **args, size_t n_args);

/* --input=FILE[=PATH] and --input-url=URL=PATH, each adding one entry to arg_files. */
int parse_input(const char *arg);
int parse_input_url(const char *arg);

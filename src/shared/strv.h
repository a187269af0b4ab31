/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* NULL-terminated arrays of malloc'ed strings ("strv", as systemd calls them): one implementation for
 * the daemon's lists (unit properties, Listen=, the drop-in names, the digests a purge frees).
 * Every function takes NULL as the empty list. */

#include <stdbool.h>
#include <stddef.h>

#include "util.h"

/* Frees every string and the array; returns NULL. */
char **strv_free(char **l);
DEFINE_TRIVIAL_CLEANUP_FUNC(char **, strv_free);
#define _cleanup_strv_free_ _cleanup_(strv_freep)

/* For an array of n entries some of which were taken (set to NULL): frees the n entries and the
 * array, whatever is NULL in between; returns NULL. */
char **strv_free_n(char **l, size_t n);

size_t strv_length(char *const *l);

/* Append a copy of s. n, if given, is the length of *l (kept up to date; spares the walk to the end
 * of a long list). On -ENOMEM *l and *n are as they were. */
int strv_extend(char ***l, size_t *n, const char *s);

/* The same strings in the same order (NULL and the empty list are equal). */
bool strv_equal(char *const *a, char *const *b);
bool strv_contains(char *const *l, const char *s);

/* Sort by strcmp(), in place. */
void strv_sort(char **l);

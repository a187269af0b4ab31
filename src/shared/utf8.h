/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* Copy n bytes into a new NUL-terminated string in which every invalid UTF-8 sequence (including
 * overlong forms, surrogates and code points above U+10FFFF) is replaced by U+FFFD. NUL bytes are
 * replaced by U+FFFD too, so the result is always a valid C string and valid JSON text.
 * Returns NULL on allocation failure. *ret_len (optional) receives the result's length. */
char *utf8_sanitize(const void *s, size_t n, size_t *ret_len);

/* Is the buffer entirely valid UTF-8 without NUL bytes? */
bool utf8_is_valid(const void *s, size_t n);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* Copy n bytes into a new NUL-terminated string in which every invalid UTF-8 sequence (including
 * overlong forms, surrogates and code points above U+10FFFF) is replaced by U+FFFD. NUL bytes are
 * replaced by U+FFFD too, so the result is always a valid C string and valid JSON text.
 * Returns NULL on allocation failure. *ret_len (optional) receives the result's length. */
char *utf8_sanitize(const void *s, size_t n, size_t *ret_len);

/* The same into buf, without a NUL (buf NULL: only measure). Returns the length (at most 3n). */
size_t utf8_sanitize_to(const void *s, size_t n, char *buf);

/* Is the buffer entirely valid UTF-8 without NUL bytes? */
bool utf8_is_valid(const void *s, size_t n);

/* The weight of sanitized text, what output budgets count: every character its length in UTF-8
 * (a U+FFFD three), except the C0 control characters other than \b \t \n \f \r, which weigh
 * UTF8_CONTROL_WEIGHT. Why: a JSON string spells those as \u00XX, six bytes for one. With that
 * weight no character takes more than twice its weight in JSON (\n, \", \\ and json-c's \/ are two
 * bytes for one), so text of weight w is at most w bytes of UTF-8 and at most 2w bytes inside a
 * JSON string; ordinary text weighs exactly its length. */
#define UTF8_CONTROL_WEIGHT 3U

/* The longest prefix of s whose sanitized text weighs at most max, ending where a character (or a
 * run that one U+FFFD replaces) ends: returns its length in bytes of s. *ret_weight (optional)
 * receives its weight. */
size_t utf8_fit_prefix(const void *s, size_t n, size_t max, size_t *ret_weight);

/* The longest suffix of s whose sanitized text weighs at most max, starting where a character of s
 * read from its start begins: returns the offset in s at which it starts. */
size_t utf8_fit_suffix(const void *s, size_t n, size_t max, size_t *ret_weight);

/* How many bytes at the end of s are the start of a character that s cuts off: a lead byte and the
 * continuation bytes valid so far (0 to 3). utf8_sanitize() would turn them into one U+FFFD. */
size_t utf8_cut_suffix(const void *s, size_t n);

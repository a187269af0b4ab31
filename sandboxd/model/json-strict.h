/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* JSON that means one thing: a check of the raw bytes against RFC 8259 before json-c parses them,
 * for every JSON a caller sends (HTTP bodies, the same bodies over D-Bus, the list query). json-c
 * alone accepts what other parsers read differently, which lets a gateway that validates with
 * another parser be bypassed:
 *   - duplicate keys in an object (json-c: the last wins; others: the first, or an error);
 *   - a key with an escaped NUL (json-c cuts it there, so "memory_mb\u0000" replaced memory_mb);
 *   - raw control characters inside strings, NaN and Infinity, which its strict mode lets through;
 *   - integers beyond 64 bits, which it clamps (2^64 became 9223372036854775807).
 * Keys are compared decoded ("a" and "\u0061" are the same key). Pure; O(n log n) in the input. */

#include <stddef.h>

/* What was wrong, where: path is the key path of the offending member ("limits.memory_mb",
 * "files[2].path"; "" for the top level), cut to fit. */
typedef struct JsonStrictError {
        char path[128];
        char message[160];
} JsonStrictError;

/* 0 if s (len bytes) is one RFC 8259 value, at most max_depth arrays and objects deep, with none of
 * the above; -EINVAL with *err filled otherwise, -ENOMEM. UTF-8 validity is the caller's (utf8.h). */
int json_strict_check(const char *s, size_t len, unsigned max_depth, JsonStrictError *err);

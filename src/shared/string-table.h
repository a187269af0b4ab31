/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* enum ↔ name through a table indexed by the enum (systemd's string-table.h, the same idea): the
 * table is "static const char *const NAME_table[_MAX]", the functions NAME_to_string() and
 * NAME_from_string(); a value without a name (a NULL entry) has none either way. Header only and
 * libc only, so sandbox-exec's protocol code uses it too. */

#include <errno.h>
#include <stddef.h>
#include <sys/types.h>

#include "util.h"

/* The index of s in the table, or -EINVAL (for NULL too). */
static inline ssize_t string_table_lookup(const char *const *table, size_t n, const char *s) {
        if (!s)
                return -EINVAL;
        for (size_t i = 0; i < n; i++)
                if (table[i] && streq(table[i], s))
                        return (ssize_t) i;
        return -EINVAL;
}

/* The enums' _INVALID values are -EINVAL, so a failed lookup converts to them. */
#define DEFINE_STRING_TABLE_LOOKUP_TO_STRING(name, type)                                 \
        const char *name##_to_string(type i) {                                          \
                if (i < 0 || (size_t) i >= ELEMENTSOF(name##_table))                    \
                        return NULL;                                                    \
                return name##_table[i];                                                 \
        }

#define DEFINE_STRING_TABLE_LOOKUP_FROM_STRING(name, type)                               \
        type name##_from_string(const char *s) {                                        \
                return (type) string_table_lookup(name##_table, ELEMENTSOF(name##_table), s); \
        }

#define DEFINE_STRING_TABLE_LOOKUP(name, type)                  \
        DEFINE_STRING_TABLE_LOOKUP_TO_STRING(name, type)        \
        DEFINE_STRING_TABLE_LOOKUP_FROM_STRING(name, type)

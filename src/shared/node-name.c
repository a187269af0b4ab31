/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <string.h>

#include "node-name.h"

bool node_name_is_valid(const char *s) {
        size_t n;

        if (!s)
                return false;
        n = strlen(s);
        if (n < 1 || n > NODE_NAME_MAX)
                return false;
        return strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") == n;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <string.h>

#include "key-name.h"

bool key_name_is_valid(const char *s) {
        size_t n = strlen(s);

        if (n < 1 || n > KEY_NAME_MAX)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!isascii((unsigned char) s[i]) ||
                    !(isalnum((unsigned char) s[i]) || s[i] == '_' || s[i] == '.' || s[i] == '-'))
                        return false;
        return true;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "string-table.h"
#include "util.h"

typedef enum Colour {
        COLOUR_NONE,             /* no name, as ERROR_NONE */
        COLOUR_RED,
        COLOUR_GREEN,
        COLOUR_BLUE,
        _COLOUR_MAX,
        _COLOUR_INVALID = -EINVAL,
} Colour;

static const char *const colour_table[_COLOUR_MAX] = {
        [COLOUR_RED] = "red",
        [COLOUR_GREEN] = "green",
        [COLOUR_BLUE] = "blue",
};

/* What the macros define, here as in the modules (no prototypes: -Wmissing-prototypes wants them). */
const char *colour_to_string(Colour c);
Colour colour_from_string(const char *s);
DEFINE_STRING_TABLE_LOOKUP(colour, Colour);

static void test_rows(_unused_ void **state) {
        static const struct {
                const char *name;
                Colour c;
        } rows[] = {
                { "red", COLOUR_RED },
                { "green", COLOUR_GREEN },
                { "blue", COLOUR_BLUE },
                { "Red", _COLOUR_INVALID },      /* case matters */
                { "re", _COLOUR_INVALID },       /* no prefixes */
                { "redd", _COLOUR_INVALID },
                { "", _COLOUR_INVALID },
                { NULL, _COLOUR_INVALID },
        };

        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                if (colour_from_string(rows[i].name) != rows[i].c) {
                        print_error("'%s' → %d, want %d\n", strna(rows[i].name), colour_from_string(rows[i].name),
                                    rows[i].c);
                        fail();
                }
                if (rows[i].c >= 0)
                        assert_string_equal(colour_to_string(rows[i].c), rows[i].name);
        }
        /* A value without a name, and values outside the table, have none. */
        assert_null(colour_to_string(COLOUR_NONE));
        assert_null(colour_to_string(_COLOUR_MAX));
        assert_null(colour_to_string(_COLOUR_INVALID));
        assert_null(colour_to_string((Colour) 1000));
        assert_int_equal(string_table_lookup(colour_table, ELEMENTSOF(colour_table), "blue"), COLOUR_BLUE);
        /* The lookup only looks at the n entries it is given. */
        assert_int_equal(string_table_lookup(colour_table, 2, "green"), -EINVAL);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_rows),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

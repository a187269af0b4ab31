/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "model/request.h"
#include "model/scoped-id.h"
#include "util.h"

/* The record id of a client-chosen id, row by row: known answers (computed independently with
 * Python's hashlib from the formula in scoped-id.h), and the refusals. */

typedef struct Row {
        const char *name;
        const char *prefix, *owner, *id;
        int ret;
        const char *expected;
} Row;

static const Row rows[] = {
        { "alice's job-1", "exec", "key:alice", "job-1", 0, "exec_d2d52ba6965331276a116aeea83fc797" },
        { "bob's job-1 differs", "exec", "key:bob", "job-1", 0, "exec_e98e309339c331d244138e655afa8595" },
        { "no owner is the empty owner", "exec", NULL, "job-1", 0, "exec_f5030867a368c12ee9d5db5fb77c872c" },
        { "empty owner", "exec", "", "job-1", 0, "exec_f5030867a368c12ee9d5db5fb77c872c" },
        { "a session of the same name differs", "sess", "key:alice", "job-1", 0,
          "sess_61b683b35424fcab01b4794aab45687a" },
        { "parts are separated (a, b:c)", "exec", "a", "b:c", 0, "exec_22f24c32a5552c5bb99a5f8517ecc3fe" },
        { "parts are separated (a:b, c)", "exec", "a:b", "c", 0, "exec_245882e8f47a125a8ca9d1e8dd6271aa" },
        { "empty prefix refused", "", "a", "b", -EINVAL, NULL },
        { "prefix too long refused", "executions", "a", "b", -EINVAL, NULL },
        { "prefix not [a-z] refused", "ex_c", "a", "b", -EINVAL, NULL },
        { "NULL prefix refused", NULL, "a", "b", -EINVAL, NULL },
        { "NULL name refused", "exec", "a", NULL, -EINVAL, NULL },
};

static void test_row(void **state) {
        const Row *row = *state;
        char buf[SCOPED_ID_MAX];

        memset(buf, 'x', sizeof(buf));
        assert_int_equal(scoped_id(buf, row->prefix, row->owner, row->id), row->ret);
        if (row->ret < 0)
                return;
        assert_string_equal(buf, row->expected);
        /* A record id is itself a valid id, so every route takes it. */
        assert_true(id_is_valid(buf, REQUEST_ID_MAX));
}

int main(void) {
        struct CMUnitTest tests[ELEMENTSOF(rows)];

        for (size_t i = 0; i < ELEMENTSOF(rows); i++)
                tests[i] = (struct CMUnitTest) { rows[i].name, test_row, NULL, NULL, (void *) &rows[i] };
        return _cmocka_run_group_tests("scoped-id", tests, ELEMENTSOF(tests), NULL, NULL);
}

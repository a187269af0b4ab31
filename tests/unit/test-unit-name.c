/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <fcntl.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "unit-name.h"
#include "util.h"

typedef struct Row {
        const char *in, *out;
} Row;

/* Expected values are what systemd-escape (252) prints; with the program installed, each row is also
 * checked against it, so a row cannot drift from systemd. */
static const Row escape_rows[] = {
        { "",                    "" },
        { "abc",                 "abc" },
        { "exec_20240101_ab.c",  "exec_20240101_ab.c" },
        { "a-b",                 "a\\x2db" },
        { "a--b-",               "a\\x2d\\x2db\\x2d" },
        { "-",                   "\\x2d" },
        { "A_Z.0",               "A_Z.0" },
        { "a/b",                 "a-b" },
        { ".x",                  "\\x2ex" },
        { "x.",                  "x." },
        { "a:b",                 "a:b" },
        { "a b\\c",              "a\\x20b\\x5cc" },
        { "\xc3\xa9~",           "\\xc3\\xa9\\x7e" },
};

static const Row path_rows[] = {
        { "/run/sandboxd/workspaces/exec_1-a.b", "run-sandboxd-workspaces-exec_1\\x2da.b.mount" },
        { "/run/sandboxd/workspaces/exec_20261130_0a1b2c3d4e5f6789",
          "run-sandboxd-workspaces-exec_20261130_0a1b2c3d4e5f6789.mount" },
        { "/var/lib/private/sandboxd/sessions/sess_a-b", "var-lib-private-sandboxd-sessions-sess_a\\x2db.mount" },
        { "/.hidden/x",                    "\\x2ehidden-x.mount" },
        { "/a/.b",                         "a-.b.mount" },
        { "/a/..b",                        "a-..b.mount" },
        { "/run//sandboxd///workspaces/x", "run-sandboxd-workspaces-x.mount" },
        { "//run/x//",                     "run-x.mount" },
        { "/run/x/",                       "run-x.mount" },
        { "/",                             "-.mount" },
        { "//",                            "-.mount" },
        { "/x/-y",                         "x-\\x2dy.mount" },
        { "/run/a:b",                      "run-a:b.mount" },
        { "/a b",                          "a\\x20b.mount" },
        { "/x~y",                          "x\\x7ey.mount" },
        { "/a/b\\c",                       "a-b\\x5cc.mount" },
        { "/tmp/\xc3\xa9",                 "tmp-\\xc3\\xa9.mount" },
        { "/A_b/c.d.e",                    "A_b-c.d.e.mount" },
};

static void test_unit_name_escape(_unused_ void **state) {
        for (size_t i = 0; i < ELEMENTSOF(escape_rows); i++) {
                _cleanup_free_ char *s = unit_name_escape(escape_rows[i].in);

                assert_non_null(s);
                if (!streq(s, escape_rows[i].out)) {
                        print_error("unit_name_escape(\"%s\") = \"%s\", expected \"%s\"\n", escape_rows[i].in, s,
                                    escape_rows[i].out);
                        fail();
                }
        }
}

static void test_unit_name_from_path(_unused_ void **state) {
        for (size_t i = 0; i < ELEMENTSOF(path_rows); i++) {
                _cleanup_free_ char *s = unit_name_from_path(path_rows[i].in, ".mount");

                assert_non_null(s);
                if (!streq(s, path_rows[i].out)) {
                        print_error("unit_name_from_path(\"%s\") = \"%s\", expected \"%s\"\n", path_rows[i].in, s,
                                    path_rows[i].out);
                        fail();
                }
        }
        {
                _cleanup_free_ char *a = unit_name_from_path("/run/x", ""), *b = unit_name_from_path("/", ".swap");

                assert_string_equal(a, "run-x");
                assert_string_equal(b, "-.swap");
        }
}

/* What systemd-escape prints for one argument (its own line), or NULL if it could not be run. */
static char *systemd_escape(bool path, const char *arg) {
        _cleanup_close_pair_ int p[2] = { -EBADF, -EBADF };
        char buf[512];
        ssize_t n;
        pid_t pid;
        int status;

        if (pipe2(p, O_CLOEXEC) < 0)
                return NULL;
        pid = fork();
        if (pid < 0)
                return NULL;
        if (pid == 0) {
                if (dup2(p[1], STDOUT_FILENO) < 0)
                        _exit(127);
                if (path)
                        execlp("systemd-escape", "systemd-escape", "--path", "--suffix=mount", "--", arg, NULL);
                else
                        execlp("systemd-escape", "systemd-escape", "--", arg, NULL);
                _exit(127);
        }
        p[1] = safe_close(p[1]);
        n = loop_read(p[0], buf, sizeof(buf) - 1);
        if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0 || n <= 0)
                return NULL;
        buf[n] = 0;
        buf[strcspn(buf, "\n")] = 0;
        return strdup(buf);
}

static void test_against_systemd_escape(_unused_ void **state) {
        _cleanup_free_ char *probe = systemd_escape(false, "probe");

        if (!probe || !streq(probe, "probe"))
                skip();  /* no systemd-escape on this machine: the rows above still hold */
        for (size_t i = 0; i < ELEMENTSOF(escape_rows); i++) {
                _cleanup_free_ char *s = NULL;

                /* systemd-escape refuses the empty string. */
                if (isempty(escape_rows[i].in))
                        continue;
                s = systemd_escape(false, escape_rows[i].in);
                assert_non_null(s);
                if (!streq(s, escape_rows[i].out)) {
                        print_error("systemd-escape \"%s\" = \"%s\", the row says \"%s\"\n", escape_rows[i].in, s,
                                    escape_rows[i].out);
                        fail();
                }
        }
        for (size_t i = 0; i < ELEMENTSOF(path_rows); i++) {
                _cleanup_free_ char *s = systemd_escape(true, path_rows[i].in);

                assert_non_null(s);
                if (!streq(s, path_rows[i].out)) {
                        print_error("systemd-escape --path \"%s\" = \"%s\", the row says \"%s\"\n", path_rows[i].in,
                                    s, path_rows[i].out);
                        fail();
                }
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_unit_name_escape),
                cmocka_unit_test(test_unit_name_from_path),
                cmocka_unit_test(test_against_systemd_escape),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

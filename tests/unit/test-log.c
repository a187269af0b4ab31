/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <fcntl.h>

#include <cmocka.h>

#include "log.h"
#include "util.h"

/* What one call wrote to stderr. */
static char captured[4096];

static int capture_begin(int *ret_saved, int p[2]) {
        fflush(stderr);
        if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0)
                return -errno;
        *ret_saved = dup(STDERR_FILENO);
        if (*ret_saved < 0 || dup2(p[1], STDERR_FILENO) < 0)
                return -errno;
        return 0;
}

static void capture_end(int saved, int p[2]) {
        ssize_t n;

        fflush(stderr);
        (void) dup2(saved, STDERR_FILENO);
        safe_close(saved);
        p[1] = safe_close(p[1]);
        n = read(p[0], captured, sizeof(captured) - 1);
        captured[n > 0 ? n : 0] = 0;
        p[0] = safe_close(p[0]);
}

static void test_rows(_unused_ void **state) {
        static const struct {
                int max_level, level, error;
                const char *arg;         /* the one %s */
                const char *want;        /* NULL: nothing written */
                int ret;
        } rows[] = {
                { LOG_INFO,    LOG_INFO,    0,        "plain",  "<6>x plain\n", 0 },
                { LOG_INFO,    LOG_ERR,     0,        "e",      "<3>x e\n", 0 },
                { LOG_INFO,    LOG_WARNING, EIO,      "w",      "<4>x w: Input/output error\n", -EIO },
                /* negative and positive errors alike: -abs(error) comes back */
                { LOG_INFO,    LOG_ERR,     -ENOENT,  "n",      "<3>x n: No such file or directory\n", -ENOENT },
                /* below the maximum level: nothing written, the error still returned */
                { LOG_INFO,    LOG_DEBUG,   EPERM,    "quiet",  NULL, -EPERM },
                { LOG_DEBUG,   LOG_DEBUG,   0,        "loud",   "<7>x loud\n", 0 },
                { LOG_WARNING, LOG_NOTICE,  0,        "n",      NULL, 0 },
                /* one line per message: a newline in a quoted name cannot forge a second entry */
                { LOG_INFO,    LOG_INFO,    0,        "a\n<3>b\rc", "<6>x a <3>b c\n", 0 },
        };

        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                int saved = -EBADF, p[2] = { -EBADF, -EBADF }, r;

                log_set_max_level(rows[i].max_level);
                assert_int_equal(log_get_max_level(), rows[i].max_level);
                assert_int_equal(capture_begin(&saved, p), 0);
                if (rows[i].error != 0)
                        r = log_full_errno(rows[i].level, rows[i].error, "x %s: %m", rows[i].arg);
                else
                        r = log_full_errno(rows[i].level, 0, "x %s", rows[i].arg);
                capture_end(saved, p);
                assert_int_equal(r, rows[i].ret);
                if (!streq(captured, rows[i].want ?: "")) {
                        print_error("row %zu wrote '%s', want '%s'\n", i, captured, strna(rows[i].want));
                        fail();
                }
        }
        log_set_max_level(LOG_INFO);
}

/* %m is the error passed in, not whatever errno happens to be. */
static void test_percent_m(_unused_ void **state) {
        int saved = -EBADF, p[2] = { -EBADF, -EBADF };

        assert_int_equal(capture_begin(&saved, p), 0);
        errno = EACCES;
        assert_int_equal(log_error_errno(ENOSPC, "write: %m"), -ENOSPC);
        capture_end(saved, p);
        assert_string_equal(captured, "<3>write: No space left on device\n");

        assert_int_equal(capture_begin(&saved, p), 0);
        assert_int_equal(log_oom(), -ENOMEM);
        capture_end(saved, p);
        assert_string_equal(captured, "<3>Out of memory.\n");
}

/* A message longer than the buffer is cut, not overflowed, and still one line. */
static void test_long(_unused_ void **state) {
        _cleanup_free_ char *big = malloc(8192);
        int saved = -EBADF, p[2] = { -EBADF, -EBADF };

        assert_non_null(big);
        memset(big, 'y', 8191);
        big[8191] = 0;
        assert_int_equal(capture_begin(&saved, p), 0);
        log_info("%s", big);
        capture_end(saved, p);
        assert_true(strlen(captured) > 1000);
        assert_true(strlen(captured) < 2048 + 8);
        assert_int_equal(strchr(captured, '\n') - captured, (ptrdiff_t) strlen(captured) - 1);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_rows),
                cmocka_unit_test(test_percent_m),
                cmocka_unit_test(test_long),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* sandbox-exec/strong-log.c: which lines of gVisor's boot log say that the task limit refused a call
 * making a process, row by row, and the scan across pieces, long lines and NUL bytes. The refusal
 * lines are as runsc 20221219 writes them (--strace --strace-syscalls=clone,fork,vfork,clone3). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "strong-log.h"

#define PFX "I1207 11:49:26.316474   29285 strace.go:611] [  44:  44] python3"

static const struct {
        const char *line;
        bool refused;
} rows[] = {
        { PFX " X clone(CLONE_CHILD_CLEARTID|CLONE_CHILD_SETTID|0x11, 0x0, 0x0, 0x7f751cdc9e50, 0x0) = 0 (0x0) "
          "errno=11 (try again) (7.228205ms)", true },
        { PFX " X fork() = 0 (0x0) errno=11 (try again) (1.2ms)", true },
        { PFX " X vfork() = 0 (0x0) errno=11 (try again) (1.2ms)", true },
        { PFX " X clone3(0x7f2195bcdde0, 0x58) = 0 (0x0) errno=11 (try again) (5µs)", true },
        /* The name is the program's: anything, even the call's words. */
        { "I1207 11:49:26.3 1 strace.go:611] [   7:   7] X clone( X clone(0x11, 0x0) = 0 (0x0) errno=11 (try "
          "again) (1ms)", true },
        /* Not a refusal. */
        { PFX " X clone(CLONE_CHILD_CLEARTID|CLONE_CHILD_SETTID|0x11, 0x0, 0x0, 0x7f751cdc9e50, 0x0) = 45 (0x2d) "
          "(619.255µs)", false },
        { PFX " X clone3(0x7f2195bcdde0, 0x58) = 0 (0x0) errno=38 (invalid system call number) (39µs)", false },
        { PFX " E clone(CLONE_CHILD_CLEARTID|CLONE_CHILD_SETTID|0x11, 0x0, 0x0, 0x7f751cdc9e50, 0x0)", false },
        { PFX " X read(0x3, 0x7ffd, 0x400) = 0 (0x0) errno=11 (try again) (3µs)", false },
        { PFX " X clone(0x11, 0x0) = 0 (0x0) errno=110 (connection timed out) (1ms)", false },
        { PFX " X clone(0x11, 0x0) = 0 (0x0) errno=1 (operation not permitted) (1ms)", false },
        { "I1207 11:49:53.268416   29552 main.go:216] ***************************", false },
        { "W1207 11:49:53.268622   29552 boot.go:177] Not setting product_name", false },
        { "X clone() = 0 (0x0) errno=11 (try again)", false },     /* no "] ": not a log line of runsc's */
        { "", false },
};

static void test_rows(void **state) {
        for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
                if (strong_log_line_refused(rows[i].line) != rows[i].refused)
                        fail_msg("row %zu: %s", i, rows[i].line);
        }
}

static bool scan(const char *text, size_t n, size_t piece) {
        StrongLogScan s;

        strong_log_scan_init(&s);
        for (size_t i = 0; i < n; i += piece)
                strong_log_scan_feed(&s, text + i, n - i < piece ? n - i : piece);
        return s.refused;
}

#define REFUSAL PFX " X clone(0x11, 0x0, 0x0, 0x0, 0x0) = 0 (0x0) errno=11 (try again) (1ms)"
#define SUCCESS PFX " X clone(0x11, 0x0, 0x0, 0x0, 0x0) = 45 (0x2d) (1ms)"

/* The same log in pieces of every size from 1 byte: the refusal is seen once its line ends, and only
 * then. */
static void test_pieces(void **state) {
        const char log[] = SUCCESS "\n" REFUSAL "\n" SUCCESS "\n";
        const char unended[] = SUCCESS "\n" REFUSAL;

        for (size_t piece = 1; piece <= sizeof(log); piece++) {
                assert_true(scan(log, strlen(log), piece));
                assert_false(scan(unended, strlen(unended), piece));
        }
        assert_false(scan(SUCCESS "\n" SUCCESS "\n", strlen(SUCCESS "\n" SUCCESS "\n"), 7));
}

/* A line of STRONG_LOG_LINE_MAX - 1 bytes is read; one byte more and it is dropped whole, and so is a
 * line with a NUL byte; the next line is read again. */
static void test_long_and_nul(void **state) {
        char buf[3 * STRONG_LOG_LINE_MAX];
        size_t pad, n;

        /* REFUSAL padded at its end to exactly the longest line kept. */
        pad = STRONG_LOG_LINE_MAX - 1 - strlen(REFUSAL);
        n = (size_t) snprintf(buf, sizeof(buf), "%s%*s\n", REFUSAL, (int) pad, "");
        assert_int_equal(n, STRONG_LOG_LINE_MAX);
        assert_true(scan(buf, n, 100));
        n = (size_t) snprintf(buf, sizeof(buf), "%s%*s\n", REFUSAL, (int) pad + 1, "");
        assert_false(scan(buf, n, 100));
        /* Dropped, then the next line (a refusal) is read. */
        n = (size_t) snprintf(buf, sizeof(buf), "%s%*s\n%s\n", SUCCESS, (int) STRONG_LOG_LINE_MAX, "", REFUSAL);
        assert_true(scan(buf, n, 33));

        /* A NUL byte in the refusal's line: dropped; in the line before it: only that one. */
        n = (size_t) snprintf(buf, sizeof(buf), "%s\n", REFUSAL);
        buf[10] = '\0';
        assert_false(scan(buf, n, 5));
        n = (size_t) snprintf(buf, sizeof(buf), "xx\n%s\n", REFUSAL);
        buf[1] = '\0';
        assert_true(scan(buf, n, 5));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_rows),
                cmocka_unit_test(test_pieces),
                cmocka_unit_test(test_long_and_nul),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

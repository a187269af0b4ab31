/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "exec-protocol.h"
#include "util.h"

/* The control channel's protocol (exec-protocol.h): what sandboxd writes is what sandbox-exec reads
 * and the other way round, because both use these functions; these tests pin the bytes on the wire
 * and what the parsers refuse. */

/* ---- the header ---- */

static void test_header_round_trip(_unused_ void **state) {
        static const struct {
                uint64_t bpf_len, code_len, stdin_len;
                const char *line;
        } rows[] = {
                { 8, 0, 0, "SANDBOXD-EXEC 1 8 0\n" },
                { 4096, 12, 0, "SANDBOXD-EXEC 1 4096 12\n" },
                { 65536, 1048576, 0, "SANDBOXD-EXEC 1 65536 1048576\n" },
                /* with standard input: a third number; without, the line is what it always was */
                { 4096, 12, 5, "SANDBOXD-EXEC 1 4096 12 5\n" },
                { 8, 0, 1048576, "SANDBOXD-EXEC 1 8 0 1048576\n" },
                /* the parser takes any number; the lengths are judged by the receiver */
                { 0, 0, 0, "SANDBOXD-EXEC 1 0 0\n" },
                { UINT64_MAX, UINT64_MAX, 0, "SANDBOXD-EXEC 1 18446744073709551615 18446744073709551615\n" },
                { UINT64_MAX, UINT64_MAX, UINT64_MAX,
                  "SANDBOXD-EXEC 1 18446744073709551615 18446744073709551615 18446744073709551615\n" },
        };

        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                char buf[EXEC_HEADER_MAX + 1];
                uint64_t b = 4711, c = 4711, in = 4711;
                int n = exec_header_format(buf, sizeof(buf), rows[i].bpf_len, rows[i].code_len, rows[i].stdin_len);

                assert_int_equal(n, strlen(rows[i].line));
                assert_string_equal(buf, rows[i].line);
                assert_true(n <= EXEC_HEADER_MAX);
                /* The reader sees the line without its '\n'. */
                assert_int_equal(exec_header_parse(buf, (size_t) n - 1, &b, &c, &in), 0);
                assert_int_equal(b, rows[i].bpf_len);
                assert_int_equal(c, rows[i].code_len);
                assert_int_equal(in, rows[i].stdin_len);
        }

        /* An explicit 0 is the same as none. */
        {
                uint64_t b, c, in = 4711;

                assert_int_equal(exec_header_parse("SANDBOXD-EXEC 1 8 3 0", 21, &b, &c, &in), 0);
                assert_int_equal(in, 0);
        }

        /* Too small a buffer: refused, not cut. */
        {
                char small[20];

                assert_int_equal(exec_header_format(small, sizeof(small), 8, 0, 0), -ENOBUFS);
                assert_int_equal(exec_header_format(small, sizeof(small) + 1 - 1, 65536, 1, 0), -ENOBUFS);
                assert_int_equal(exec_header_format(small, sizeof(small), 8, 0, 1), -ENOBUFS);
        }
}

static void test_header_malformed(_unused_ void **state) {
        static const struct {
                const char *line;        /* without '\n' */
                size_t len;              /* 0: strlen */
                int ret;
        } rows[] = {
                { "SANDBOXD-EXEC 2 8 0", 0, -EINVAL },         /* another version */
                { "SANDBOXD-EXEC 1 08 0", 0, -EINVAL },        /* leading zero */
                { "SANDBOXD-EXEC 1 8 00", 0, -EINVAL },
                { "SANDBOXD-EXEC 1 +8 0", 0, -EINVAL },        /* sign */
                { "SANDBOXD-EXEC 1 -8 0", 0, -EINVAL },
                { "SANDBOXD-EXEC 1 8  0", 0, -EINVAL },        /* two spaces */
                { "SANDBOXD-EXEC 1  8 0", 0, -EINVAL },
                { "SANDBOXD-EXEC 1 8 0 ", 0, -EINVAL },        /* trailing space */
                { "SANDBOXD-EXEC 1 8\t0", 0, -EINVAL },
                { "SANDBOXD-EXEC 1 8 0\r", 0, -EINVAL },
                { "SANDBOXD-EXEC 1 8", 0, -EINVAL },           /* one number */
                { "SANDBOXD-EXEC 1 8 0 1 2", 0, -EINVAL },     /* four */
                { "SANDBOXD-EXEC 1 8 0 1 ", 0, -EINVAL },      /* three, trailing space */
                { "SANDBOXD-EXEC 1 8 0 01", 0, -EINVAL },      /* stdin_len with a leading zero */
                { "SANDBOXD-EXEC 1 8 0 -1", 0, -EINVAL },
                { "SANDBOXD-EXEC 1 8 0 18446744073709551616", 0, -ERANGE },
                { "SANDBOXD-EXEC 1 ", 0, -EINVAL },
                { "SANDBOXD-EXEC 1", 0, -EINVAL },
                { "sandboxd-exec 1 8 0", 0, -EINVAL },         /* magic's case */
                { "SANDBOXD-EXEC1 8 0", 0, -EINVAL },
                { "XSANDBOXD-EXEC 1 8 0", 0, -EINVAL },
                { "", 0, -EINVAL },
                { "SANDBOXD-EXEC 1 0x8 0", 0, -EINVAL },
                { "SANDBOXD-EXEC 1 8 0\0 9", 22, -EINVAL },    /* a NUL inside */
                { "SANDBOXD-EXEC 1 18446744073709551616 0", 0, -ERANGE },
                { "SANDBOXD-EXEC 1 99999999999999999999999 0", 0, -EINVAL },  /* 23 digits */
                { "SANDBOXD-EXEC 1 8 111111111111111111111111111111111111111111111", 0, -EINVAL },
        };

        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                size_t len = rows[i].len ?: strlen(rows[i].line);
                uint64_t b = 4711, c = 4711, in = 4711;
                int r = exec_header_parse(rows[i].line, len, &b, &c, &in);

                if (r != rows[i].ret || b != 4711 || c != 4711 || in != 4711) {
                        print_error("'%s': %d (want %d), outputs %s\n", rows[i].line, r, rows[i].ret,
                                    b != 4711 || c != 4711 || in != 4711 ? "touched" : "untouched");
                        fail();
                }
        }
}

static void test_bpf_len(_unused_ void **state) {
        static const struct {
                uint64_t len;
                bool valid;
        } rows[] = {
                { 0, false }, { 1, false }, { 7, false }, { 8, true }, { 12, false }, { 16, true },
                { EXEC_BPF_MAX - 8, true }, { EXEC_BPF_MAX, true }, { EXEC_BPF_MAX + 8, false },
                { UINT64_MAX - 7, false },
        };

        for (size_t i = 0; i < ELEMENTSOF(rows); i++)
                if (exec_bpf_len_is_valid(rows[i].len) != rows[i].valid) {
                        print_error("exec_bpf_len_is_valid(%" PRIu64 ") != %d\n", rows[i].len, rows[i].valid);
                        fail();
                }
}

/* ---- names ---- */

static void test_phase_names(_unused_ void **state) {
        static const char *const want[_PHASE_MAX] = { "setup", "compile", "run" };

        for (HelperPhase p = 0; p < _PHASE_MAX; p++) {
                assert_string_equal(helper_phase_to_string(p), want[p]);
                assert_int_equal(helper_phase_from_string(want[p]), p);
        }
        assert_null(helper_phase_to_string(_PHASE_MAX));
        assert_null(helper_phase_to_string(_PHASE_INVALID));
        assert_int_equal(helper_phase_from_string("RUN"), _PHASE_INVALID);
        assert_int_equal(helper_phase_from_string(""), _PHASE_INVALID);
        assert_int_equal(helper_phase_from_string(NULL), _PHASE_INVALID);
}

static void test_key_names(_unused_ void **state) {
        /* The wire names, in the order they are written: a contract with every sandbox-exec still
         * running in a unit while sandboxd is upgraded. */
        static const char *const want[_HELPER_KEY_MAX] = {
                "phase", "exit", "signal", "oom_kill", "mem_peak", "mem_failcnt", "pids_max", "disk_full",
                "cpu_usec", "error", "timeout", "cancelled", "run_usec", "first_output_usec", "alone",
                "stdout_bytes", "stdout_lines", "stdout_head", "stdout_tail",
                "stderr_bytes", "stderr_lines", "stderr_head", "stderr_tail",
        };

        for (HelperReportKey k = 0; k < _HELPER_KEY_MAX; k++) {
                assert_non_null(helper_report_key_to_string(k));
                assert_string_equal(helper_report_key_to_string(k), want[k]);
                assert_int_equal(helper_report_key_from_string(want[k]), k);
        }
        assert_null(helper_report_key_to_string(_HELPER_KEY_MAX));
        assert_int_equal(helper_report_key_from_string("future_key"), _HELPER_KEY_INVALID);
}

/* ---- the report: parse, row by row (what the sandbox may send) ---- */

typedef struct ParseRow {
        const char *name;
        const char *text;
        size_t len;              /* 0: strlen(text) */
        int ret;
        HelperReport expect;     /* compared field by field when ret == 0 */
} ParseRow;

#define RUN(...) { .valid = true, .phase = PHASE_RUN, __VA_ARGS__ }

static const ParseRow parse_rows[] = {
        { "minimal report", "phase=run\nexit=0\n", 0, 0, RUN(.exit_code = 0) },
        { "full report",
          "phase=run\nexit=-1\nsignal=9\noom_kill=2\nmem_peak=268435456\nmem_failcnt=17\npids_max=3\n"
          "disk_full=1\ncpu_usec=1234567\n", 0, 0,
          RUN(.exit_code = -1, .signal = 9, .oom_kills = 2, .memory_peak = 268435456, .memory_failcnt = 17,
              .pids_max = 3, .disk_full = true, .cpu_usec = 1234567) },
        { "keys in any order", "exit=3\ncpu_usec=5\nphase=compile\n", 0, 0,
          { .valid = true, .phase = PHASE_COMPILE, .exit_code = 3, .cpu_usec = 5 } },
        { "phase=setup with error text", "phase=setup\nexit=1\nerror=mount /proc: Permission denied\n", 0, 0,
          { .valid = true, .phase = PHASE_SETUP, .exit_code = 1,
            .error = "mount /proc: Permission denied" } },
        { "error takes the rest of the line, '=' included", "phase=setup\nexit=1\nerror=a=b  c=d \n", 0, 0,
          { .valid = true, .phase = PHASE_SETUP, .exit_code = 1, .error = "a=b  c=d " } },
        { "empty error", "phase=run\nexit=0\nerror=\n", 0, 0, RUN(.exit_code = 0) },
        { "unknown keys are ignored", "phase=run\nfuture_key=whatever=x\nexit=0\nx=\n", 0, 0,
          RUN(.exit_code = 0) },
        { "exit=255 is the top", "phase=run\nexit=255\n", 0, 0, RUN(.exit_code = 255) },
        { "signal=64 is the top", "phase=run\nexit=-1\nsignal=64\n", 0, 0,
          RUN(.exit_code = -1, .signal = 64) },
        { "uint64 max", "phase=run\nexit=0\nmem_peak=18446744073709551615\n", 0, 0,
          RUN(.exit_code = 0, .memory_peak = UINT64_MAX) },
        { "disk_full=0", "phase=run\nexit=0\ndisk_full=0\n", 0, 0, RUN(.exit_code = 0) },
        { "supervision and output sizes",
          "phase=run\nexit=-1\nsignal=9\ntimeout=1\ncancelled=0\nrun_usec=1500123\nfirst_output_usec=2500\n"
          "stdout_bytes=1048576\nstdout_lines=1024\nstdout_head=65536\nstdout_tail=65536\n"
          "stderr_bytes=3\nstderr_lines=1\nstderr_head=3\nstderr_tail=0\n", 0, 0,
          RUN(.exit_code = -1, .signal = 9, .timed_out = true, .run_usec = 1500123, .first_output_usec = 2500,
              .have_first_output = true, .out = { 1048576, 1024, 65536, 65536 }, .err = { 3, 1, 3, 0 }) },
        { "cancelled", "phase=run\nexit=-1\nsignal=9\ncancelled=1\n", 0, 0,
          RUN(.exit_code = -1, .signal = 9, .cancelled = true) },
        { "timeout=2", "phase=run\nexit=0\ntimeout=2\n", 0, -EINVAL, {} },
        { "negative stdout_head", "phase=run\nexit=0\nstdout_head=-1\n", 0, -EINVAL, {} },
        { "len bounds the input", "phase=run\nexit=0\nexit=1\n", 17, 0, RUN(.exit_code = 0) },

        { "empty", "", 0, -EINVAL, {} },
        { "missing exit", "phase=run\nsignal=0\n", 0, -EINVAL, {} },
        { "missing phase", "exit=0\nsignal=0\n", 0, -EINVAL, {} },
        { "last line unterminated", "phase=run\nexit=0", 0, -EINVAL, {} },
        { "len cuts a line", "phase=run\nexit=137\n", 15, -EINVAL, {} },
        { "empty line", "phase=run\n\nexit=0\n", 0, -EINVAL, {} },
        { "line without '='", "phase=run\nexit=0\ngarbage\n", 0, -EINVAL, {} },
        { "empty key", "phase=run\nexit=0\n=1\n", 0, -EINVAL, {} },
        { "duplicate key", "phase=run\nexit=0\nexit=1\n", 0, -EINVAL, {} },
        { "NUL inside", "phase=run\nexit=0\0\n", 18, -EINVAL, {} },
        { "bad phase", "phase=running\nexit=0\n", 0, -EINVAL, {} },
        { "empty phase", "phase=\nexit=0\n", 0, -EINVAL, {} },
        { "phase case", "phase=RUN\nexit=0\n", 0, -EINVAL, {} },
        { "exit not a number", "phase=run\nexit=abc\n", 0, -EINVAL, {} },
        { "exit empty", "phase=run\nexit=\n", 0, -EINVAL, {} },
        { "exit trailing garbage", "phase=run\nexit=1x\n", 0, -EINVAL, {} },
        { "exit with CR", "phase=run\nexit=1\r\n", 0, -EINVAL, {} },
        { "exit leading space", "phase=run\nexit= 1\n", 0, -EINVAL, {} },
        { "exit leading tab", "phase=run\nexit=\t1\n", 0, -EINVAL, {} },
        { "exit plus sign", "phase=run\nexit=+1\n", 0, -EINVAL, {} },
        { "exit lone minus", "phase=run\nexit=-\n", 0, -EINVAL, {} },
        { "exit=256", "phase=run\nexit=256\n", 0, -EINVAL, {} },
        { "exit=-2", "phase=run\nexit=-2\n", 0, -EINVAL, {} },
        { "exit overflows int", "phase=run\nexit=99999999999\n", 0, -EINVAL, {} },
        { "signal negative", "phase=run\nexit=-1\nsignal=-1\n", 0, -EINVAL, {} },
        { "signal=65", "phase=run\nexit=-1\nsignal=65\n", 0, -EINVAL, {} },
        { "oom_kill negative", "phase=run\nexit=0\noom_kill=-1\n", 0, -EINVAL, {} },
        { "oom_kill tab minus", "phase=run\nexit=0\noom_kill=\t-1\n", 0, -EINVAL, {} },
        { "mem_peak overflow", "phase=run\nexit=0\nmem_peak=18446744073709551616\n", 0, -EINVAL, {} },
        { "mem_failcnt garbage", "phase=run\nexit=0\nmem_failcnt=0x10\n", 0, -EINVAL, {} },
        { "pids_max empty", "phase=run\nexit=0\npids_max=\n", 0, -EINVAL, {} },
        { "cpu_usec float", "phase=run\nexit=0\ncpu_usec=1.5\n", 0, -EINVAL, {} },
        { "disk_full=2", "phase=run\nexit=0\ndisk_full=2\n", 0, -EINVAL, {} },
        { "disk_full=yes", "phase=run\nexit=0\ndisk_full=yes\n", 0, -EINVAL, {} },
        { "malformed value after valid keys", "phase=run\nexit=0\nsignal=x\n", 0, -EINVAL, {} },
};

static void test_parse_row(void **state) {
        const ParseRow *row = *state;
        size_t len = row->len ?: strlen(row->text);
        HelperReport r;
        int k;

        /* Poison: the parser must set every field, not rely on the caller. */
        memset(&r, 0xaa, sizeof(r));
        k = helper_report_parse(row->text, len, &r);
        assert_int_equal(k, row->ret);
        if (k < 0) {
                assert_false(r.valid);
                return;
        }

        assert_true(r.valid);
        assert_int_equal(r.phase, row->expect.phase);
        assert_int_equal(r.exit_code, row->expect.exit_code);
        assert_int_equal(r.signal, row->expect.signal);
        assert_int_equal(r.oom_kills, row->expect.oom_kills);
        assert_int_equal(r.memory_peak, row->expect.memory_peak);
        assert_int_equal(r.memory_failcnt, row->expect.memory_failcnt);
        assert_int_equal(r.pids_max, row->expect.pids_max);
        assert_int_equal(r.disk_full, row->expect.disk_full);
        assert_int_equal(r.cpu_usec, row->expect.cpu_usec);
        assert_int_equal(r.timed_out, row->expect.timed_out);
        assert_int_equal(r.cancelled, row->expect.cancelled);
        assert_int_equal(r.run_usec, row->expect.run_usec);
        assert_int_equal(r.have_first_output, row->expect.have_first_output);
        assert_int_equal(r.first_output_usec, row->expect.first_output_usec);
        assert_int_equal(r.out.bytes, row->expect.out.bytes);
        assert_int_equal(r.out.lines, row->expect.out.lines);
        assert_int_equal(r.out.head, row->expect.out.head);
        assert_int_equal(r.out.tail, row->expect.out.tail);
        assert_int_equal(r.err.bytes, row->expect.err.bytes);
        assert_int_equal(r.err.lines, row->expect.err.lines);
        assert_int_equal(r.err.head, row->expect.err.head);
        assert_int_equal(r.err.tail, row->expect.err.tail);
        assert_string_equal(r.error, row->expect.error);
}

static void test_parse_size_bounds(_unused_ void **state) {
        char buf[HELPER_REPORT_MAX + 2];
        const char *head = "phase=run\nexit=7\n";
        size_t hl = strlen(head);
        HelperReport r;

        /* Pad with an unknown key up to exactly HELPER_REPORT_MAX bytes. */
        memcpy(buf, head, hl);
        memcpy(buf + hl, "pad=", 4);
        memset(buf + hl + 4, 'x', HELPER_REPORT_MAX - hl - 5);
        buf[HELPER_REPORT_MAX - 1] = '\n';
        assert_int_equal(helper_report_parse(buf, HELPER_REPORT_MAX, &r), 0);
        assert_true(r.valid);
        assert_int_equal(r.exit_code, 7);

        /* One byte more is refused even though it is well-formed. */
        buf[HELPER_REPORT_MAX - 1] = 'x';
        buf[HELPER_REPORT_MAX] = '\n';
        assert_int_equal(helper_report_parse(buf, HELPER_REPORT_MAX + 1, &r), -EINVAL);
        assert_false(r.valid);

        assert_int_equal(helper_report_parse(NULL, 0, &r), -EINVAL);
        assert_false(r.valid);
}

static void test_parse_error_truncated(_unused_ void **state) {
        char text[HELPER_REPORT_MAX];
        HelperReport r;
        size_t n;

        /* 400 ASCII bytes: cut to the buffer, still NUL-terminated. */
        n = (size_t) snprintf(text, sizeof(text), "phase=setup\nexit=1\nerror=");
        memset(text + n, 'e', 400);
        n += 400;
        text[n++] = '\n';
        assert_int_equal(helper_report_parse(text, n, &r), 0);
        assert_int_equal(strlen(r.error), sizeof(r.error) - 1);
        assert_true(r.error[0] == 'e' && r.error[sizeof(r.error) - 2] == 'e');

        /* 'é' (2 bytes) from offset 0: 255 is odd, so a byte cut would split the 128th 'é'. */
        n = (size_t) snprintf(text, sizeof(text), "phase=setup\nexit=1\nerror=");
        for (size_t i = 0; i < 200; i++) {
                text[n++] = (char) 0xc3;
                text[n++] = (char) 0xa9;
        }
        text[n++] = '\n';
        assert_int_equal(helper_report_parse(text, n, &r), 0);
        assert_int_equal(strlen(r.error), 254);
        assert_int_equal((uint8_t) r.error[252], 0xc3);
        assert_int_equal((uint8_t) r.error[253], 0xa9);
}


/* ---- the report: format, and format → parse ---- */

static void assert_reports_equal(const HelperReport *a, const HelperReport *b) {
        assert_int_equal(a->phase, b->phase);
        assert_int_equal(a->exit_code, b->exit_code);
        assert_int_equal(a->signal, b->signal);
        assert_int_equal(a->oom_kills, b->oom_kills);
        assert_int_equal(a->memory_peak, b->memory_peak);
        assert_int_equal(a->memory_failcnt, b->memory_failcnt);
        assert_int_equal(a->pids_max, b->pids_max);
        assert_int_equal(a->disk_full, b->disk_full);
        assert_int_equal(a->cpu_usec, b->cpu_usec);
        assert_int_equal(a->timed_out, b->timed_out);
        assert_int_equal(a->cancelled, b->cancelled);
        assert_int_equal(a->run_usec, b->run_usec);
        assert_int_equal(a->have_first_output, b->have_first_output);
        assert_int_equal(a->first_output_usec, b->first_output_usec);
        assert_int_equal(a->out.bytes, b->out.bytes);
        assert_int_equal(a->out.lines, b->out.lines);
        assert_int_equal(a->out.head, b->out.head);
        assert_int_equal(a->out.tail, b->out.tail);
        assert_int_equal(a->err.bytes, b->err.bytes);
        assert_int_equal(a->err.lines, b->err.lines);
        assert_int_equal(a->err.head, b->err.head);
        assert_int_equal(a->err.tail, b->err.tail);
        assert_string_equal(a->error, b->error);
}

/* Format, check the framing, parse the text back (without its empty line) and compare. */
static size_t round_trip(const HelperReport *in, char *text, size_t size) {
        HelperReport back;
        int n;

        n = helper_report_format(in, text, size);
        assert_true(n > 0);
        assert_true((size_t) n <= HELPER_REPORT_MAX);
        assert_int_equal(strlen(text), (size_t) n);
        /* Ends with exactly one empty line, and that is the only one. */
        assert_true(n >= 2 && text[n - 1] == '\n' && text[n - 2] == '\n');
        assert_ptr_equal(strstr(text, "\n\n"), text + n - 2);
        memset(&back, 0x55, sizeof(back));
        assert_int_equal(helper_report_parse(text, (size_t) n - 1, &back), 0);
        assert_true(back.valid);
        assert_reports_equal(&back, in);
        return (size_t) n;
}

static void test_round_trip_rows(_unused_ void **state) {
        static const HelperReport rows[] = {
                { .phase = PHASE_RUN, .exit_code = 0 },
                { .phase = PHASE_SETUP, .exit_code = -1, .error = "Malformed control header" },
                { .phase = PHASE_SETUP, .exit_code = -1, .error = "a=b  c=d \xc3\xa9" },
                { .phase = PHASE_COMPILE, .exit_code = 1, .cpu_usec = 5, .run_usec = 77 },
                { .phase = PHASE_RUN, .exit_code = -1, .signal = SIGKILL, .oom_kills = 2,
                  .memory_peak = 268435456, .memory_failcnt = 17, .pids_max = 3, .disk_full = true,
                  .cpu_usec = 1234567, .timed_out = true, .cancelled = true, .run_usec = 1500123,
                  .have_first_output = true, .first_output_usec = 2500,
                  .out = { 1048576, 1024, 65536, 65536 }, .err = { 3, 1, 3, 0 } },
                { .phase = PHASE_RUN, .exit_code = 255, .signal = 0 },
                { .phase = PHASE_RUN, .exit_code = -1, .signal = NSIG - 1 },
                /* first output at 0 µs is still "there was output" */
                { .phase = PHASE_RUN, .exit_code = 0, .have_first_output = true, .first_output_usec = 0 },
        };

        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                char text[HELPER_REPORT_MAX + 1];

                round_trip(&rows[i], text, sizeof(text));
        }
}

/* Every field alone at a few values, every phase: nothing the format writes is lost or mixed up. */
static void test_round_trip_sweep(_unused_ void **state) {
        static const uint64_t values[] = { 0, 1, 9, 4096, UINT32_MAX, (uint64_t) INT64_MAX + 1, UINT64_MAX };
        unsigned n = 0;

        for (HelperPhase p = 0; p < _PHASE_MAX; p++)
        for (size_t v = 0; v < ELEMENTSOF(values); v++)
        for (unsigned field = 0; field < 14; field++) {
                HelperReport r = { .phase = p, .exit_code = (int) (values[v] % 256) };
                char text[HELPER_REPORT_MAX + 1];
                uint64_t x = values[v];
                uint64_t *u[] = { &r.oom_kills, &r.memory_peak, &r.memory_failcnt, &r.pids_max, &r.cpu_usec,
                                  &r.run_usec, &r.first_output_usec, &r.out.bytes, &r.out.lines, &r.out.head,
                                  &r.out.tail, &r.err.bytes, &r.err.lines, &r.err.head };

                *u[field] = x;
                r.have_first_output = field == 6;
                r.signal = (int) (x % (uint64_t) NSIG);
                r.disk_full = x & 1;
                r.timed_out = x & 2;
                r.cancelled = x & 4;
                r.err.tail = x / 2;
                round_trip(&r, text, sizeof(text));
                n++;
        }
        assert_int_equal(n, _PHASE_MAX * ELEMENTSOF(values) * 14);
}

/* The exact bytes for one report: key spelling, order, number format and framing are the contract. */
static void test_format_golden(_unused_ void **state) {
        HelperReport r = {
                .phase = PHASE_RUN, .exit_code = -1, .signal = 9, .oom_kills = 1, .memory_peak = 2,
                .memory_failcnt = 3, .pids_max = 4, .disk_full = true, .cpu_usec = 5, .timed_out = true,
                .run_usec = 6, .have_first_output = true, .first_output_usec = 7,
                .out = { 8, 9, 10, 11 }, .err = { 12, 13, 14, 15 },
        };
        char text[HELPER_REPORT_MAX + 1];
        int n;

        n = helper_report_format(&r, text, sizeof(text));
        assert_int_equal(n, (int) strlen(text));
        assert_string_equal(text,
                            "phase=run\nexit=-1\nsignal=9\noom_kill=1\nmem_peak=2\nmem_failcnt=3\npids_max=4\n"
                            "disk_full=1\ncpu_usec=5\ntimeout=1\ncancelled=0\nrun_usec=6\nfirst_output_usec=7\n"
                            "stdout_bytes=8\nstdout_lines=9\nstdout_head=10\nstdout_tail=11\n"
                            "stderr_bytes=12\nstderr_lines=13\nstderr_head=14\nstderr_tail=15\n\n");

        r = (HelperReport) { .phase = PHASE_SETUP, .exit_code = -1, .error = "Cannot read source" };
        n = helper_report_format(&r, text, sizeof(text));
        assert_int_equal(n, (int) strlen(text));
        assert_string_equal(text,
                            "phase=setup\nexit=-1\nsignal=0\noom_kill=0\nmem_peak=0\nmem_failcnt=0\npids_max=0\n"
                            "disk_full=0\ncpu_usec=0\nerror=Cannot read source\n"
                            "timeout=0\ncancelled=0\nrun_usec=0\n"
                            "stdout_bytes=0\nstdout_lines=0\nstdout_head=0\nstdout_tail=0\n"
                            "stderr_bytes=0\nstderr_lines=0\nstderr_head=0\nstderr_tail=0\n\n");
}

/* Every key the parser knows is written exactly once (error=, first_output_usec= and alone= when
 * they have something to say), in the order of the enum. */
static void test_format_every_key(_unused_ void **state) {
        HelperReport r = { .phase = PHASE_RUN, .exit_code = 0, .error = "e", .have_first_output = true,
                           .alone = true };
        char text[HELPER_REPORT_MAX + 1];
        const char *last = text;

        assert_true(helper_report_format(&r, text, sizeof(text)) > 0);
        for (HelperReportKey k = 0; k < _HELPER_KEY_MAX; k++) {
                char needle[64];
                const char *at;

                snprintf(needle, sizeof(needle), "%s%s=", k == 0 ? "" : "\n", helper_report_key_to_string(k));
                at = k == 0 ? (startswith(text, needle) ? text : NULL) : strstr(text, needle);
                if (!at || at < last) {
                        print_error("key %s missing or out of order\n", helper_report_key_to_string(k));
                        fail();
                }
                assert_null(strstr(at + 1, needle));
                last = at;
        }

        /* Without an error or output, those two keys are left out. */
        r.error[0] = 0;
        r.have_first_output = false;
        assert_true(helper_report_format(&r, text, sizeof(text)) > 0);
        assert_null(strstr(text, "\nerror="));
        assert_null(strstr(text, "\nfirst_output_usec="));
}

/* The largest report sandbox-exec can write fits HELPER_REPORT_MAX with room, so the daemon's
 * search for the empty line within that bound always finds it. */
static void test_format_worst_case(_unused_ void **state) {
        HelperReport r = {
                .phase = PHASE_COMPILE, .exit_code = -1, .signal = NSIG - 1, .oom_kills = UINT64_MAX,
                .memory_peak = UINT64_MAX, .memory_failcnt = UINT64_MAX, .pids_max = UINT64_MAX,
                .disk_full = true, .cpu_usec = UINT64_MAX, .timed_out = true, .cancelled = true,
                .run_usec = UINT64_MAX, .have_first_output = true, .first_output_usec = UINT64_MAX,
                .out = { UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX },
                .err = { UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX },
        };
        char text[HELPER_REPORT_MAX + 1];
        size_t n;

        memset(r.error, 'x', sizeof(r.error) - 1);
        r.error[sizeof(r.error) - 1] = 0;
        n = round_trip(&r, text, sizeof(text));
        assert_true(n < HELPER_REPORT_MAX / 2);
}

/* error= is the rest of its line: a control character in it would end it, or forge another key. */
static void test_format_error_sanitized(_unused_ void **state) {
        HelperReport r = { .phase = PHASE_SETUP, .exit_code = -1 }, back;
        char text[HELPER_REPORT_MAX + 1];
        int n;

        strcpy(r.error, "line one\nexit=0\rtab\there\x7f\x1b[0m");
        n = helper_report_format(&r, text, sizeof(text));
        assert_true(n > 0);
        assert_non_null(strstr(text, "\nerror=line one exit=0 tab here  [0m\n"));
        assert_int_equal(helper_report_parse(text, (size_t) n - 1, &back), 0);
        assert_int_equal(back.exit_code, -1);
        assert_string_equal(back.error, "line one exit=0 tab here  [0m");
}

static void test_format_refuses(_unused_ void **state) {
        static const HelperReport bad[] = {
                { .phase = _PHASE_MAX },
                { .phase = _PHASE_INVALID },
                { .phase = PHASE_RUN, .exit_code = 256 },
                { .phase = PHASE_RUN, .exit_code = -2 },
                { .phase = PHASE_RUN, .signal = -1 },
                { .phase = PHASE_RUN, .signal = NSIG },
        };
        HelperReport ok = { .phase = PHASE_RUN, .exit_code = 3, .error = "why" };
        char text[HELPER_REPORT_MAX + 1];
        int full;

        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                assert_int_equal(helper_report_format(&bad[i], text, sizeof(text)), -EINVAL);

        /* Every buffer too small by even one byte is refused (nothing half-written is sent). */
        full = helper_report_format(&ok, text, sizeof(text));
        assert_true(full > 0);
        for (size_t size = 0; size <= (size_t) full; size++)
                assert_int_equal(helper_report_format(&ok, text, size), -ENOBUFS);
        assert_int_equal(helper_report_format(&ok, text, (size_t) full + 1), full);
}

/* ---- the whole report as received: helper_report_receive() ---- */

static int receive(const char *s, size_t len, HelperReport *r) {
        Capture out, err;
        int k = helper_report_receive(s, len, 8, 4, r, &out, &err);

        if (k > 0) {
                capture_done(&out);
                capture_done(&err);
        }
        return k;
}

static void test_receive(void **state) {
        static const char with_output[] = "phase=run\nexit=0\nstdout_bytes=3\nstdout_lines=1\nstdout_head=3\n"
                                          "stderr_bytes=2\nstderr_head=2\n\nhi\nE!";
        static const char short_output[] = "phase=run\nexit=0\nstdout_bytes=3\nstdout_head=3\n\nhi";
        /* Parts whose sum wraps to what follows (here 0 bytes): the pointer arithmetic on them was
         * undefined before the parts were checked one by one (UBSan in the fuzz build, on
         * tests/fuzz/corpus/report/crash-wrapping-part-sizes). */
        static const char wrapping[] = "phase=run\nexit=0\nstdout_head=18446744073709551615\nstderr_head=1\n\n";
        static const char too_large[] = "phase=run\nexit=0\nstdout_bytes=9\nstdout_head=9\n\n123456789";
        HelperReport r;
        Capture out, err;

        assert_int_equal(helper_report_receive(with_output, sizeof(with_output) - 1, 8, 4, &r, &out, &err), 1);
        assert_true(r.valid);
        assert_int_equal(out.head_len, 3);
        assert_memory_equal(out.head, "hi\n", 3);
        assert_int_equal(err.head_len, 2);
        capture_done(&out);
        capture_done(&err);
        assert_int_equal(receive("phase=run\nexit=0\n", strlen("phase=run\nexit=0\n"), &r), 0);
        assert_true(r.valid);
        assert_int_equal(receive("phase=run\n\n", strlen("phase=run\n\n"), &r), -EINVAL);
        assert_false(r.valid);
        assert_int_equal(receive(short_output, sizeof(short_output) - 1, &r), -EBADMSG);
        assert_true(r.valid);
        assert_int_equal(receive(wrapping, sizeof(wrapping) - 1, &r), -EBADMSG);
        assert_int_equal(receive(too_large, sizeof(too_large) - 1, &r), -EBADMSG);
}

/* The claim line of a warm unit (exec-protocol.h), row by row. */
static const struct {
        const char *line;
        int ret;
        uint64_t timeout_ms, code_len, env_len;
} claim_rows[] = {
        { "SANDBOXD-CLAIM 1 30000 8 120", 0, 30000, 8, 120 },
        { "SANDBOXD-CLAIM 1 0 0 0", 0, 0, 0, 0 },
        { "SANDBOXD-CLAIM 1 18446744073709551615 1 2", 0, UINT64_MAX, 1, 2 },
        { "SANDBOXD-CLAIM 1 18446744073709551616 1 2", -ERANGE, 0, 0, 0 },
        { "SANDBOXD-CLAIM 1 30000 8", -EINVAL, 0, 0, 0 },
        { "SANDBOXD-CLAIM 1 30000 8 120 5", -EINVAL, 0, 0, 0 },
        { "SANDBOXD-CLAIM 1 30000  8 120", -EINVAL, 0, 0, 0 },
        { "SANDBOXD-CLAIM 1 030000 8 120", -EINVAL, 0, 0, 0 },
        { "SANDBOXD-CLAIM 1 +3 8 120", -EINVAL, 0, 0, 0 },
        { "SANDBOXD-CLAIM 2 3 8 120", -EINVAL, 0, 0, 0 },
        { "SANDBOXD-EXEC 1 3 8 120", -EINVAL, 0, 0, 0 },
        { "SANDBOXD-CLAIM 1 3 8 120 ", -EINVAL, 0, 0, 0 },
        { "", -EINVAL, 0, 0, 0 },
};

static void test_claim(_unused_ void **state) {
        char buf[EXEC_CLAIM_MAX + 1];
        uint64_t t, c, e;
        int n;

        for (size_t i = 0; i < ELEMENTSOF(claim_rows); i++) {
                t = c = e = 7;
                assert_int_equal(exec_claim_parse(claim_rows[i].line, strlen(claim_rows[i].line), &t, &c, &e),
                                 claim_rows[i].ret);
                if (claim_rows[i].ret == 0) {
                        assert_int_equal(t, claim_rows[i].timeout_ms);
                        assert_int_equal(c, claim_rows[i].code_len);
                        assert_int_equal(e, claim_rows[i].env_len);
                } else
                        assert_true(t == 7 && c == 7 && e == 7);      /* untouched */
        }
        /* A NUL inside is refused. */
        assert_int_equal(exec_claim_parse("SANDBOXD-CLAIM 1 3\0 8 120", 26, &t, &c, &e), -EINVAL);

        /* The widest line fits, and what is formatted parses back. */
        n = exec_claim_format(buf, sizeof(buf), UINT64_MAX, UINT64_MAX, UINT64_MAX);
        assert_true(n > 0 && n <= EXEC_CLAIM_MAX && buf[n - 1] == '\n');
        assert_int_equal(exec_claim_parse(buf, (size_t) n - 1, &t, &c, &e), 0);
        assert_true(t == UINT64_MAX && c == UINT64_MAX && e == UINT64_MAX);
        n = exec_claim_format(buf, sizeof(buf), 1500, 12, 300);
        assert_string_equal(buf, "SANDBOXD-CLAIM 1 1500 12 300\n");
        assert_int_equal(exec_claim_format(buf, 10, 1, 2, 3), -ENOBUFS);
}

static void test_env_block(_unused_ void **state) {
        static const struct {
                const char *block;
                size_t n;
                int ret;
        } rows[] = {
                { "", 0, 0 },
                { "A=1", 4, 1 },
                { "A=1\0B=\0", 7, 2 },
                { "A=1\0B=x=y", 10, 2 },        /* '=' in a value */
                { "A=1", 3, -EINVAL },           /* not NUL-terminated */
                { "=1", 3, -EINVAL },            /* empty name */
                { "A", 2, -EINVAL },             /* no '=' */
                { "A=1\0\0", 5, -EINVAL },     /* an empty entry */
        };
        _cleanup_free_ char *many = NULL;
        size_t len = 0;

        for (size_t i = 0; i < ELEMENTSOF(rows); i++)
                assert_int_equal(exec_env_block_check(rows[i].block, rows[i].n), rows[i].ret);

        /* At most EXEC_ENV_ENTRIES_MAX entries. */
        many = malloc((EXEC_ENV_ENTRIES_MAX + 1) * 4);
        assert_non_null(many);
        for (size_t i = 0; i < EXEC_ENV_ENTRIES_MAX; i++) {
                memcpy(many + len, "A=1", 4);
                len += 4;
        }
        assert_int_equal(exec_env_block_check(many, len), (int) EXEC_ENV_ENTRIES_MAX);
        memcpy(many + len, "A=1", 4);
        assert_int_equal(exec_env_block_check(many, len + 4), -EINVAL);
}

/* exec_frame_missing(): every prefix of a whole frame past its header lacks exactly the rest of it
 * (a shorter one, the rest of the header: its length is not known yet); a whole frame
 * (with more after it), the report's text and malformed frames give 0 (no end to stop at). */
static void test_frame_missing(_unused_ void **state) {
        static const size_t sizes[] = { 1, 7, EXEC_FRAME_DATA_MAX };
        uint8_t buf[EXEC_FRAME_MAX + 16];

        for (size_t k = 0; k < ELEMENTSOF(sizes); k++) {
                size_t h = exec_frame_header(buf, EXEC_FRAME_STDOUT, 42, sizes[k]), total = h + sizes[k];

                memset(buf + h, 'x', sizes[k]);
                buf[total] = 'p';       /* the report's first byte after it */
                assert_int_equal(exec_frame_missing(buf, 0), 0);
                /* Before its length is known, up to the end of the header. */
                for (size_t n = 1; n < EXEC_FRAME_HEADER; n++)
                        assert_int_equal(exec_frame_missing(buf, n), EXEC_FRAME_HEADER - n);
                for (size_t n = EXEC_FRAME_HEADER; n < total; n++)
                        assert_int_equal(exec_frame_missing(buf, n), total - n);
                assert_int_equal(exec_frame_missing(buf, total), 0);
                assert_int_equal(exec_frame_missing(buf, total + 1), 0);
        }
        assert_int_equal(exec_frame_missing((const uint8_t *) "phase=run\n", 10), 0);
        /* An unknown kind, a length too short for the offset, one too long. */
        assert_int_equal(exec_frame_missing((const uint8_t[]) { EXEC_FRAME_MAGIC, 'x' }, 2), 0);
        assert_int_equal(exec_frame_missing((const uint8_t[]) { EXEC_FRAME_MAGIC, 'o', 0, 8 }, 4), 0);
        assert_int_equal(exec_frame_missing((const uint8_t[]) { EXEC_FRAME_MAGIC, 'e', 0xff, 0xff }, 4), 0);
        /* The smallest well-formed length: offset and one byte. */
        assert_int_equal(exec_frame_missing((const uint8_t[]) { EXEC_FRAME_MAGIC, 'e', 0, 9 }, 4), 9);
}

int main(void) {
        size_t n = 20 + ELEMENTSOF(parse_rows), i = 0;
        _cleanup_free_ struct CMUnitTest *tests = calloc(n, sizeof(struct CMUnitTest));

        if (!tests)
                return EXIT_FAILURE;

        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_header_round_trip);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_header_malformed);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_bpf_len);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_phase_names);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_key_names);
        for (size_t k = 0; k < ELEMENTSOF(parse_rows); k++)
                tests[i++] = (struct CMUnitTest) { parse_rows[k].name, test_parse_row, NULL, NULL,
                                                   (void *) &parse_rows[k] };
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_parse_size_bounds);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_parse_error_truncated);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_round_trip_rows);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_round_trip_sweep);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_format_golden);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_format_every_key);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_format_worst_case);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_format_error_sanitized);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_format_refuses);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_receive);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_claim);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_env_block);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_frame_missing);
        assert_true(i <= n);

        return _cmocka_run_group_tests("exec-protocol", tests, i, NULL, NULL);
}

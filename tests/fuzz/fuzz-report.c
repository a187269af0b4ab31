/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The helper's report: the bytes a sandbox controls. The input's first byte picks the capture sizes
 * (OutputHeadBytes=, OutputTailBytes=) and the unit's outcome; the rest is the report as sandboxd
 * receives it from sandbox-exec: helper_report_receive() (helper_report_parse(), capture_restore()),
 * capture_render() of both streams, verdict_decide(). A valid report formats
 * (helper_report_format()) and parses back to itself. The first line is also tried as the control
 * channel's header (exec_header_parse()). */

#include "capture.h"
#include "exec-protocol.h"
#include "fuzz.h"
#include "utf8.h"
#include "util.h"
#include "verdict/verdict.h"

static const struct {
        size_t head, tail;
} sizes[] = {
        { 64, 64 },
        { 0, 0 },
        { 1, 1 },
        { 16, 0 },
        { 0, 16 },
        { 7, 3 },
        { 4096, 4096 },
        { CAPTURE_DEFAULT_HEAD, CAPTURE_DEFAULT_TAIL },
};

static const UnitOutcome outcomes[] = {
        { .result = "success", .exec_main_code = 1 /* CLD_EXITED */ },
        { .result = "exit-code", .exec_main_code = 1, .exec_main_status = 3 },
        { .result = "signal", .exec_main_code = 2 /* CLD_KILLED */, .exec_main_status = 9 },
        { .result = "oom-kill", .exec_main_code = 2, .exec_main_status = 9 },
        { .result = "timeout" },
        { .result = NULL },
        { .result = "exit-code", .exec_main_code = 1, .exec_main_status = 203 },
        { .deadline_hit = true },
};

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        fuzz_quiet();
        return 0;
}

static void check_render(const Capture *c, size_t head, size_t tail) {
        _cleanup_free_ char *text = NULL;
        uint64_t elided = 0;

        if (capture_render(c, &text, &elided) < 0)
                return;
        fuzz_check(strlen(text) <= head + tail + CAPTURE_MARKER_MAX);
        fuzz_check(utf8_is_valid(text, strlen(text)));
        fuzz_check(elided <= c->total_bytes);
}

static bool has_control(const char *s) {
        for (; *s; s++)
                if ((unsigned char) *s < 0x20 || (unsigned char) *s == 0x7f)
                        return true;
        return false;
}

static void check_format(const HelperReport *r) {
        char buf[HELPER_REPORT_MAX + 1];
        HelperReport again;
        int n;

        n = helper_report_format(r, buf, sizeof(buf));
        fuzz_check(n > 1);
        /* Without its empty line. */
        fuzz_check(helper_report_parse(buf, (size_t) n - 1, &again) == 0);
        fuzz_check(again.valid && again.phase == r->phase && again.exit_code == r->exit_code &&
                   again.signal == r->signal && again.oom_kills == r->oom_kills &&
                   again.memory_peak == r->memory_peak && again.memory_failcnt == r->memory_failcnt &&
                   again.pids_max == r->pids_max && again.disk_full == r->disk_full &&
                   again.cpu_usec == r->cpu_usec && again.timed_out == r->timed_out &&
                   again.cancelled == r->cancelled && again.run_usec == r->run_usec &&
                   again.have_first_output == r->have_first_output &&
                   (!r->have_first_output || again.first_output_usec == r->first_output_usec) &&
                   again.out.bytes == r->out.bytes && again.out.lines == r->out.lines &&
                   again.out.head == r->out.head && again.out.tail == r->out.tail &&
                   again.err.bytes == r->err.bytes && again.err.lines == r->err.lines &&
                   again.err.head == r->err.head && again.err.tail == r->err.tail);
        if (!has_control(r->error))
                fuzz_check(streq(again.error, r->error));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        HelperReport report;
        Capture out, err;
        Verdict v;
        const uint8_t *nl;
        uint64_t bpf_len, code_len, stdin_len;
        size_t head, tail;
        int r;

        if (size < 1)
                return 0;
        head = sizes[data[0] % ELEMENTSOF(sizes)].head;
        tail = sizes[data[0] % ELEMENTSOF(sizes)].tail;
        data++, size--;

        nl = memchr(data, '\n', size);
        (void) exec_header_parse((const char *) data, nl ? (size_t) (nl - data) : size, &bpf_len, &code_len, &stdin_len);

        r = helper_report_receive(data, size, head, tail, &report, &out, &err);
        fuzz_check(r == 1 || r == 0 || r == -EINVAL || r == -EBADMSG || r == -ENOMEM);
        fuzz_check(report.valid == (r != -EINVAL));
        if (r > 0) {
                fuzz_check(out.head_len <= head && out.tail_len <= tail);
                fuzz_check(err.head_len <= head && err.tail_len <= tail);
                check_render(&out, head, tail);
                check_render(&err, head, tail);
                capture_done(&out);
                capture_done(&err);
        }
        if (report.valid)
                check_format(&report);

        verdict_decide(&outcomes[(data[-1] >> 4) % ELEMENTSOF(outcomes)], &report, &v);
        fuzz_check(v.status >= 0 && v.status < _EXEC_STATUS_MAX && v.reason);
        verdict_decide(&outcomes[(data[-1] >> 4) % ELEMENTSOF(outcomes)], NULL, &v);
        return 0;
}

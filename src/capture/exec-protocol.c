/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>

#include "exec-protocol.h"
#include "string-table.h"
#include "util.h"

/* ---- the header ---- */

int exec_header_format(char *buf, size_t size, uint64_t bpf_len, uint64_t code_len, uint64_t stdin_len) {
        int n = stdin_len == 0
                ? snprintf(buf, size, EXEC_PROTOCOL_MAGIC " " STRINGIFY(EXEC_PROTOCOL_VERSION) " %" PRIu64 " %" PRIu64
                           "\n", bpf_len, code_len)
                : snprintf(buf, size, EXEC_PROTOCOL_MAGIC " " STRINGIFY(EXEC_PROTOCOL_VERSION) " %" PRIu64 " %" PRIu64
                           " %" PRIu64 "\n", bpf_len, code_len, stdin_len);

        if (n < 0 || (size_t) n >= size || n > EXEC_HEADER_MAX)
                return -ENOBUFS;
        return n;
}

/* Strict decimal: digits only, no sign, no leading zeros (except "0"), no overflow. */
static int parse_decimal(const char *s, size_t n, uint64_t *ret) {
        uint64_t v = 0;

        if (n == 0 || n > 20 || (n > 1 && s[0] == '0'))
                return -EINVAL;
        for (size_t i = 0; i < n; i++) {
                if (s[i] < '0' || s[i] > '9')
                        return -EINVAL;
                if (v > (UINT64_MAX - (uint64_t) (s[i] - '0')) / 10)
                        return -ERANGE;
                v = v * 10 + (uint64_t) (s[i] - '0');
        }
        *ret = v;
        return 0;
}

/* A line "<prefix><n1> <n2> ... <nk>" of at most max bytes with min_k..max_k numbers, single spaces,
 * no NUL: the numbers into v (set only on success), their count returned. -EINVAL, -ERANGE. */
static int parse_numbers_line(const char *line, size_t n, size_t max, const char *prefix, size_t min_k,
                              size_t max_k, uint64_t v[static 3]) {
        size_t pl = strlen(prefix), k = 0;
        const char *p, *end = line + n;
        uint64_t got[3];

        assert(max_k <= 3);
        if (n >= max || memchr(line, 0, n) || n < pl || memcmp(line, prefix, pl) != 0)
                return -EINVAL;
        for (p = line + pl;; ) {
                const char *sp = memchr(p, ' ', (size_t) (end - p));
                int r;

                if (k == max_k)
                        return -EINVAL;
                r = parse_decimal(p, (size_t) ((sp ?: end) - p), &got[k++]);
                if (r < 0)
                        return r;
                if (!sp)
                        break;
                p = sp + 1;
        }
        if (k < min_k)
                return -EINVAL;
        memcpy(v, got, k * sizeof(uint64_t));
        return (int) k;
}

int exec_header_parse(const char *line, size_t n, uint64_t *ret_bpf_len, uint64_t *ret_code_len,
                      uint64_t *ret_stdin_len) {
        uint64_t v[3];
        int k = parse_numbers_line(line, n, EXEC_HEADER_MAX,
                                   EXEC_PROTOCOL_MAGIC " " STRINGIFY(EXEC_PROTOCOL_VERSION) " ", 2, 3, v);

        if (k < 0)
                return k;
        *ret_bpf_len = v[0];
        *ret_code_len = v[1];
        *ret_stdin_len = k == 3 ? v[2] : 0;
        return 0;
}

int exec_claim_format(char *buf, size_t size, uint64_t timeout_ms, uint64_t code_len, uint64_t env_len) {
        int n = snprintf(buf, size, EXEC_CLAIM_MAGIC " " STRINGIFY(EXEC_PROTOCOL_VERSION) " %" PRIu64 " %" PRIu64
                         " %" PRIu64 "\n", timeout_ms, code_len, env_len);

        if (n < 0 || (size_t) n >= size || n > EXEC_CLAIM_MAX)
                return -ENOBUFS;
        return n;
}

int exec_claim_parse(const char *line, size_t n, uint64_t *ret_timeout_ms, uint64_t *ret_code_len,
                     uint64_t *ret_env_len) {
        uint64_t v[3];
        int k = parse_numbers_line(line, n, EXEC_CLAIM_MAX, EXEC_CLAIM_MAGIC " " STRINGIFY(EXEC_PROTOCOL_VERSION) " ",
                                   3, 3, v);

        if (k < 0)
                return k;
        *ret_timeout_ms = v[0];
        *ret_code_len = v[1];
        *ret_env_len = v[2];
        return 0;
}

int exec_env_block_check(const char *block, size_t n) {
        size_t entries = 0;

        if (n > EXEC_ENV_MAX || (n > 0 && block[n - 1] != '\0'))
                return -EINVAL;
        for (size_t i = 0; i < n; ) {
                const char *e = block + i, *nul = memchr(e, 0, n - i), *eq;

                /* memchr finds the terminator: the last byte is one. */
                eq = memchr(e, '=', (size_t) (nul - e));
                if (!eq || eq == e)
                        return -EINVAL;
                if (++entries > EXEC_ENV_ENTRIES_MAX)
                        return -EINVAL;
                i = (size_t) (nul - block) + 1;
        }
        return (int) entries;
}

bool exec_bpf_len_is_valid(uint64_t bpf_len) {
        return bpf_len > 0 && bpf_len % 8 == 0 && bpf_len <= EXEC_BPF_MAX;
}

/* ---- live frames ---- */

size_t exec_frame_header(uint8_t buf[static EXEC_FRAME_HEADER + EXEC_FRAME_OFFSET], ExecFrameKind kind,
                         uint64_t offset, size_t n) {
        size_t len = EXEC_FRAME_OFFSET + n;

        buf[0] = EXEC_FRAME_MAGIC;
        buf[1] = (uint8_t) kind;
        buf[2] = (uint8_t) (len >> 8);
        buf[3] = (uint8_t) len;
        for (size_t i = 0; i < EXEC_FRAME_OFFSET; i++)
                buf[EXEC_FRAME_HEADER + i] = (uint8_t) (offset >> (56 - 8 * i));
        return EXEC_FRAME_HEADER + EXEC_FRAME_OFFSET;
}

int exec_frame_parse(const uint8_t *buf, size_t n, ExecFrameKind *ret_kind, uint64_t *ret_offset,
                     const uint8_t **ret_data, size_t *ret_data_len) {
        uint64_t offset = 0;
        size_t len;

        if (n == 0)
                return 0;
        if (buf[0] != EXEC_FRAME_MAGIC)
                return -ENOMSG;
        if (n >= 2 && buf[1] != EXEC_FRAME_STDOUT && buf[1] != EXEC_FRAME_STDERR)
                return -EBADMSG;
        if (n < EXEC_FRAME_HEADER)
                return 0;
        len = ((size_t) buf[2] << 8) | buf[3];
        if (len <= EXEC_FRAME_OFFSET || len > EXEC_FRAME_OFFSET + EXEC_FRAME_DATA_MAX)
                return -EBADMSG;
        if (n < EXEC_FRAME_HEADER + len)
                return 0;
        for (size_t i = 0; i < EXEC_FRAME_OFFSET; i++)
                offset = (offset << 8) | buf[EXEC_FRAME_HEADER + i];
        if (offset > UINT64_MAX - (len - EXEC_FRAME_OFFSET))
                return -EBADMSG;
        *ret_kind = (ExecFrameKind) buf[1];
        *ret_offset = offset;
        *ret_data = buf + EXEC_FRAME_HEADER + EXEC_FRAME_OFFSET;
        *ret_data_len = len - EXEC_FRAME_OFFSET;
        return (int) (EXEC_FRAME_HEADER + len);
}

size_t exec_frame_missing(const uint8_t *buf, size_t n) {
        size_t len;

        if (n == 0 || buf[0] != EXEC_FRAME_MAGIC)
                return 0;
        if (n >= 2 && buf[1] != EXEC_FRAME_STDOUT && buf[1] != EXEC_FRAME_STDERR)
                return 0;
        if (n < EXEC_FRAME_HEADER)
                return EXEC_FRAME_HEADER - n;
        len = ((size_t) buf[2] << 8) | buf[3];
        if (len <= EXEC_FRAME_OFFSET || len > EXEC_FRAME_OFFSET + EXEC_FRAME_DATA_MAX)
                return 0;
        return n < EXEC_FRAME_HEADER + len ? EXEC_FRAME_HEADER + len - n : 0;
}

/* ---- names ---- */

static const char *const helper_phase_table[_PHASE_MAX] = {
        [PHASE_SETUP] = "setup",
        [PHASE_COMPILE] = "compile",
        [PHASE_RUN] = "run",
};

static const char *const helper_report_key_table[_HELPER_KEY_MAX] = {
        [HELPER_KEY_PHASE] = "phase",
        [HELPER_KEY_EXIT] = "exit",
        [HELPER_KEY_SIGNAL] = "signal",
        [HELPER_KEY_OOM_KILL] = "oom_kill",
        [HELPER_KEY_MEM_PEAK] = "mem_peak",
        [HELPER_KEY_MEM_FAILCNT] = "mem_failcnt",
        [HELPER_KEY_PIDS_MAX] = "pids_max",
        [HELPER_KEY_DISK_FULL] = "disk_full",
        [HELPER_KEY_CPU_USEC] = "cpu_usec",
        [HELPER_KEY_ERROR] = "error",
        [HELPER_KEY_TIMEOUT] = "timeout",
        [HELPER_KEY_CANCELLED] = "cancelled",
        [HELPER_KEY_RUN_USEC] = "run_usec",
        [HELPER_KEY_FIRST_OUTPUT_USEC] = "first_output_usec",
        [HELPER_KEY_ALONE] = "alone",
        [HELPER_KEY_STDOUT_BYTES] = "stdout_bytes",
        [HELPER_KEY_STDOUT_LINES] = "stdout_lines",
        [HELPER_KEY_STDOUT_HEAD] = "stdout_head",
        [HELPER_KEY_STDOUT_TAIL] = "stdout_tail",
        [HELPER_KEY_STDERR_BYTES] = "stderr_bytes",
        [HELPER_KEY_STDERR_LINES] = "stderr_lines",
        [HELPER_KEY_STDERR_HEAD] = "stderr_head",
        [HELPER_KEY_STDERR_TAIL] = "stderr_tail",
};

DEFINE_STRING_TABLE_LOOKUP(helper_phase, HelperPhase);
DEFINE_STRING_TABLE_LOOKUP(helper_report_key, HelperReportKey);

/* ---- the report: format ---- */

typedef struct Writer {
        char *buf;
        size_t size, n;
        bool overflow;
} Writer;

_printf_(3, 4) static void put(Writer *w, HelperReportKey k, const char *fmt, ...) {
        va_list ap;
        int m;

        if (w->overflow)
                return;
        m = snprintf(w->buf + w->n, w->size - w->n, "%s=", helper_report_key_table[k]);
        if (m < 0 || (size_t) m >= w->size - w->n) {
                w->overflow = true;
                return;
        }
        w->n += (size_t) m;
        va_start(ap, fmt);
        m = vsnprintf(w->buf + w->n, w->size - w->n, fmt, ap);
        va_end(ap);
        /* Room for the '\n' and the NUL too. */
        if (m < 0 || (size_t) m + 1 >= w->size - w->n) {
                w->overflow = true;
                return;
        }
        w->n += (size_t) m;
        w->buf[w->n++] = '\n';
        w->buf[w->n] = 0;
}

static void put_u64(Writer *w, HelperReportKey k, uint64_t v) {
        put(w, k, "%" PRIu64, v);
}

static void put_bool(Writer *w, HelperReportKey k, bool b) {
        put(w, k, "%d", b ? 1 : 0);
}

int helper_report_format(const HelperReport *r, char *buf, size_t size) {
        char error[sizeof(r->error)];
        Writer w = { .buf = buf, .size = size };

        if (r->phase < 0 || r->phase >= _PHASE_MAX || r->exit_code < -1 || r->exit_code > 255 ||
            r->signal < 0 || r->signal >= NSIG)
                return -EINVAL;
        if (size == 0)
                return -ENOBUFS;
        buf[0] = 0;

        put(&w, HELPER_KEY_PHASE, "%s", helper_phase_table[r->phase]);
        put(&w, HELPER_KEY_EXIT, "%d", r->exit_code);
        put(&w, HELPER_KEY_SIGNAL, "%d", r->signal);
        put_u64(&w, HELPER_KEY_OOM_KILL, r->oom_kills);
        put_u64(&w, HELPER_KEY_MEM_PEAK, r->memory_peak);
        put_u64(&w, HELPER_KEY_MEM_FAILCNT, r->memory_failcnt);
        put_u64(&w, HELPER_KEY_PIDS_MAX, r->pids_max);
        put_bool(&w, HELPER_KEY_DISK_FULL, r->disk_full);
        put_u64(&w, HELPER_KEY_CPU_USEC, r->cpu_usec);
        if (r->error[0]) {
                /* One line, printable: error= is the rest of its line. */
                strncpy(error, r->error, sizeof(error) - 1);
                error[sizeof(error) - 1] = 0;
                for (char *p = error; *p; p++)
                        if ((unsigned char) *p < 0x20 || (unsigned char) *p == 0x7f)
                                *p = ' ';
                put(&w, HELPER_KEY_ERROR, "%s", error);
        }
        put_bool(&w, HELPER_KEY_TIMEOUT, r->timed_out);
        put_bool(&w, HELPER_KEY_CANCELLED, r->cancelled);
        put_u64(&w, HELPER_KEY_RUN_USEC, r->run_usec);
        if (r->have_first_output)
                put_u64(&w, HELPER_KEY_FIRST_OUTPUT_USEC, r->first_output_usec);
        if (r->alone)
                put_bool(&w, HELPER_KEY_ALONE, true);
        put_u64(&w, HELPER_KEY_STDOUT_BYTES, r->out.bytes);
        put_u64(&w, HELPER_KEY_STDOUT_LINES, r->out.lines);
        put_u64(&w, HELPER_KEY_STDOUT_HEAD, r->out.head);
        put_u64(&w, HELPER_KEY_STDOUT_TAIL, r->out.tail);
        put_u64(&w, HELPER_KEY_STDERR_BYTES, r->err.bytes);
        put_u64(&w, HELPER_KEY_STDERR_LINES, r->err.lines);
        put_u64(&w, HELPER_KEY_STDERR_HEAD, r->err.head);
        put_u64(&w, HELPER_KEY_STDERR_TAIL, r->err.tail);
        /* The empty line that ends the text. */
        if (w.overflow || w.size - w.n < 2)
                return -ENOBUFS;
        buf[w.n++] = '\n';
        buf[w.n] = 0;
        if (w.n > HELPER_REPORT_MAX)
                return -ENOBUFS;
        return (int) w.n;
}

/* ---- the report: parse ---- */

static int parse_bool(const char *v, bool *ret) {
        if (streq(v, "0"))
                *ret = false;
        else if (streq(v, "1"))
                *ret = true;
        else
                return -EINVAL;
        return 0;
}

/* util.c's parsers let strtol() skip leading whitespace other than ' ' (and then accept a sign,
 * which wraps for unsigned); the report is machine-written, so demand plain digits. */
static int parse_u64(const char *v, uint64_t *ret) {
        if (!(v[0] >= '0' && v[0] <= '9'))
                return -EINVAL;
        return safe_atou64(v, ret);
}

static int parse_int(const char *v, int min, int max, int *ret) {
        const char *d = v[0] == '-' ? v + 1 : v;
        int k, r;

        if (!(d[0] >= '0' && d[0] <= '9'))
                return -EINVAL;
        r = safe_atoi(v, &k);
        if (r < 0)
                return r;
        if (k < min || k > max)
                return -ERANGE;
        *ret = k;
        return 0;
}

static int report_set(HelperReport *r, HelperReportKey key, const char *v) {
        switch (key) {
        case HELPER_KEY_PHASE:
                r->phase = helper_phase_from_string(v);
                return r->phase < 0 ? -EINVAL : 0;
        case HELPER_KEY_EXIT:
                /* -1: killed by a signal; otherwise a wait status, 0..255. */
                return parse_int(v, -1, 255, &r->exit_code);
        case HELPER_KEY_SIGNAL:
                return parse_int(v, 0, NSIG - 1, &r->signal);
        case HELPER_KEY_OOM_KILL:
                return parse_u64(v, &r->oom_kills);
        case HELPER_KEY_MEM_PEAK:
                return parse_u64(v, &r->memory_peak);
        case HELPER_KEY_MEM_FAILCNT:
                return parse_u64(v, &r->memory_failcnt);
        case HELPER_KEY_PIDS_MAX:
                return parse_u64(v, &r->pids_max);
        case HELPER_KEY_DISK_FULL:
                return parse_bool(v, &r->disk_full);
        case HELPER_KEY_CPU_USEC:
                return parse_u64(v, &r->cpu_usec);
        case HELPER_KEY_TIMEOUT:
                return parse_bool(v, &r->timed_out);
        case HELPER_KEY_CANCELLED:
                return parse_bool(v, &r->cancelled);
        case HELPER_KEY_RUN_USEC:
                return parse_u64(v, &r->run_usec);
        case HELPER_KEY_FIRST_OUTPUT_USEC:
                r->have_first_output = true;
                return parse_u64(v, &r->first_output_usec);
        case HELPER_KEY_ALONE:
                return parse_bool(v, &r->alone);
        case HELPER_KEY_STDOUT_BYTES:
                return parse_u64(v, &r->out.bytes);
        case HELPER_KEY_STDOUT_LINES:
                return parse_u64(v, &r->out.lines);
        case HELPER_KEY_STDOUT_HEAD:
                return parse_u64(v, &r->out.head);
        case HELPER_KEY_STDOUT_TAIL:
                return parse_u64(v, &r->out.tail);
        case HELPER_KEY_STDERR_BYTES:
                return parse_u64(v, &r->err.bytes);
        case HELPER_KEY_STDERR_LINES:
                return parse_u64(v, &r->err.lines);
        case HELPER_KEY_STDERR_HEAD:
                return parse_u64(v, &r->err.head);
        case HELPER_KEY_STDERR_TAIL:
                return parse_u64(v, &r->err.tail);
        case HELPER_KEY_ERROR: {
                size_t n = MIN(strlen(v), sizeof(r->error) - 1);

                /* Cut on a character boundary so a truncated message stays valid UTF-8. */
                if (n < strlen(v))
                        while (n > 0 && ((uint8_t) v[n] & 0xc0) == 0x80)
                                n--;
                memcpy(r->error, v, n);
                r->error[n] = 0;
                return 0;
        }
        default:
                return -EINVAL;
        }
}

int helper_report_parse(const char *text, size_t len, HelperReport *ret) {
        char line[HELPER_REPORT_MAX + 1];
        HelperReport r = {
                .valid = false,
                .phase = _PHASE_INVALID,
                .exit_code = -1,
        };
        bool seen[_HELPER_KEY_MAX] = {};
        size_t i = 0;

        *ret = r;

        if (!text || len > HELPER_REPORT_MAX)
                return -EINVAL;
        /* The report is text; a NUL means it is not one (and would cut our line copies short). */
        if (memchr(text, 0, len))
                return -EINVAL;

        while (i < len) {
                const char *nl = memchr(text + i, '\n', len - i);
                HelperReportKey k;
                size_t n;
                char *v;

                /* A last line without '\n' is a report cut short: its value may be truncated. */
                if (!nl)
                        return -EINVAL;
                n = (size_t) (nl - (text + i));
                memcpy(line, text + i, n);
                line[n] = 0;
                i += n + 1;

                v = memchr(line, '=', n);
                if (!v || v == line)
                        return -EINVAL;
                *v++ = 0;

                k = helper_report_key_from_string(line);
                if (k < 0)
                        continue;  /* a newer sandbox-exec may say more */
                /* A repeated key means two reports got mixed up, or someone forged one. */
                if (seen[k])
                        return -EINVAL;
                seen[k] = true;

                if (report_set(&r, k, v) < 0)
                        return -EINVAL;
        }

        if (!seen[HELPER_KEY_PHASE] || !seen[HELPER_KEY_EXIT])
                return -EINVAL;

        r.valid = true;
        *ret = r;
        return 0;
}

int helper_report_receive(const void *buf, size_t len, size_t head_max, size_t tail_max, HelperReport *ret,
                          Capture *out, Capture *err) {
        const uint64_t *parts[] = { &ret->out.head, &ret->out.tail, &ret->err.head, &ret->err.tail };
        const uint8_t *b = buf, *sep, *p;
        size_t text_len, rest;
        int r;

        *out = (Capture) {};
        *err = (Capture) {};
        sep = memmem(b, MIN(len, (size_t) HELPER_REPORT_MAX), "\n\n", 2);
        text_len = sep ? (size_t) (sep - b) + 1 : len;
        r = helper_report_parse((const char *) b, text_len, ret);
        if (r < 0)
                return r;
        if (!sep)
                return 0;

        p = sep + 2;
        rest = len - (size_t) (p - b);
        /* Exactly what is left, part by part: the sum of four numbers the sandbox chose may wrap. */
        for (size_t i = 0; i < ELEMENTSOF(parts); i++) {
                if (*parts[i] > rest)
                        return -EBADMSG;
                rest -= (size_t) *parts[i];
        }
        if (rest != 0)
                return -EBADMSG;
        if (capture_init(out, head_max, tail_max) < 0 || capture_init(err, head_max, tail_max) < 0) {
                capture_done(out);
                capture_done(err);
                return -ENOMEM;
        }
        if (capture_restore(out, p, ret->out.head, p + ret->out.head, ret->out.tail, ret->out.bytes,
                            ret->out.lines) < 0 ||
            capture_restore(err, p + ret->out.head + ret->out.tail, ret->err.head,
                            p + ret->out.head + ret->out.tail + ret->err.head, ret->err.tail, ret->err.bytes,
                            ret->err.lines) < 0) {
                capture_done(out);
                capture_done(err);
                return -EBADMSG;
        }
        return 1;
}

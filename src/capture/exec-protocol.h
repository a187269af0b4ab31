/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The protocol between sandboxd and sandbox-exec over the control channel (the unit's stdin, a
 * socketpair), written down once and compiled into both programs. libc only: sandbox-exec links
 * nothing else.
 *
 * sandboxd → sandbox-exec, once, at the start:
 *   the header line  "SANDBOXD-EXEC 1 <bpf_len> <code_len>[ <stdin_len>]\n"  (decimal, no sign, no
 *   leading zeros, single spaces, at most EXEC_HEADER_MAX bytes with its '\n'; without stdin_len, or
 *   with 0, the program's standard input is empty), then bpf_len bytes of classic BPF (struct
 *   sock_filter, 8 bytes each, 1..EXEC_BPF_MAX bytes), then code_len bytes of source, then stdin_len
 *   (at most EXEC_STDIN_MAX) bytes of the program's standard input (any bytes). A warm unit's header
 *   has neither code nor stdin: a request with stdin starts a unit of its own.
 *
 * A unit of the warm pool (sandbox-exec --warm) is started before its request exists: the header
 *   then says code_len 0, and once everything that does not depend on the request is done (the mount
 *   table, the interpreter started and its modules imported) sandbox-exec says EXEC_READY_LINE. The
 *   claim follows when a request takes the unit:
 *   the claim line  "SANDBOXD-CLAIM 1 <timeout_ms> <code_len> <env_len>\n"  (decimal as above, at most
 *   EXEC_CLAIM_MAX bytes with its '\n'), then code_len bytes of source, then env_len bytes of
 *   environment: "KEY=VALUE" entries, each ended by a NUL byte (exec_env_block_check()).
 *
 * sandbox-exec → sandboxd, once, when the program has ended (or setup failed):
 *   the report text, one "key=value\n" per line (the keys below), at most HELPER_REPORT_MAX bytes,
 *   ended by an empty line; then the stdout head, the stdout tail, the stderr head and the stderr tail,
 *   exactly as many bytes of each as stdout_head=, stdout_tail=, stderr_head= and stderr_tail= say.
 *   Unknown keys are ignored (a newer sandbox-exec may say more), a repeated key or a malformed value
 *   makes the report invalid, phase= and exit= are required.
 *
 * sandbox-exec → sandboxd, while the program runs, only when started with --live-output: live
 *   frames, before the report (the report's first byte is never EXEC_FRAME_MAGIC: it is text). A
 *   frame is EXEC_FRAME_MAGIC, a kind byte (EXEC_FRAME_STDOUT or EXEC_FRAME_STDERR), a 16-bit
 *   big-endian payload length, then the payload: the 8-byte big-endian offset in the stream of the
 *   first byte that follows, then 1..EXEC_FRAME_DATA_MAX raw bytes of the stream (the program's
 *   bytes, not sanitized). Offsets count every byte the program wrote to the stream: a frame that
 *   starts beyond where the previous one ended says that the bytes between were not forwarded
 *   (sandbox-exec drops what it cannot send without blocking the program, and beyond the head cap
 *   sends at most one frame per stream every EXEC_LIVE_FLUSH_MSEC); they stay true across a
 *   restart of the daemon, which reads on from the control socket in systemd's fd store. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "capture.h"

#define EXEC_PROTOCOL_MAGIC "SANDBOXD-EXEC"
#define EXEC_PROTOCOL_VERSION 1
/* The header line with its '\n': magic, version and three 20-digit numbers fit with room to spare. */
#define EXEC_HEADER_MAX 96
/* The program's standard input: sandbox-exec's own bound (the daemon's, MaxStdinBytes=, is lower). */
#define EXEC_STDIN_MAX (64U * 1024U * 1024U)
#define EXEC_BPF_MAX (64U * 1024U)
#define EXEC_CLAIM_MAGIC "SANDBOXD-CLAIM"
/* magic, version and three 20-digit numbers. */
#define EXEC_CLAIM_MAX 96
/* A warm unit's word that it is ready for a claim: the only thing it sends before one. */
#define EXEC_READY_LINE "SANDBOXD-READY 1\n"
/* The environment of a claim: at most this many bytes and entries (the daemon's own caps on a
 * request's env are lower; these only bound what sandbox-exec accepts). */
#define EXEC_ENV_MAX (1024U * 1024U)
#define EXEC_ENV_ENTRIES_MAX 4096U
/* The report's text part, the empty line included. What sandbox-exec writes is far less (every
 * number at its widest and a full error message: see test-exec-protocol). */
#define HELPER_REPORT_MAX 4096
/* error= keeps at most this many bytes (cut on a character boundary). */
#define HELPER_REPORT_ERROR_MAX 255

#define EXEC_FRAME_MAGIC 0x1e
#define EXEC_FRAME_HEADER 4
#define EXEC_FRAME_OFFSET 8
#define EXEC_FRAME_DATA_MAX (16U * 1024U)
#define EXEC_FRAME_MAX (EXEC_FRAME_HEADER + EXEC_FRAME_OFFSET + EXEC_FRAME_DATA_MAX)
#define EXEC_LIVE_FLUSH_MSEC 25
typedef enum ExecFrameKind {
        EXEC_FRAME_STDOUT = 'o',
        EXEC_FRAME_STDERR = 'e',
} ExecFrameKind;

/* The header and offset of a frame of kind with n data bytes at offset into buf; returns
 * EXEC_FRAME_HEADER + EXEC_FRAME_OFFSET (the data follows). */
size_t exec_frame_header(uint8_t buf[static EXEC_FRAME_HEADER + EXEC_FRAME_OFFSET], ExecFrameKind kind,
                         uint64_t offset, size_t n);
/* One frame at the start of buf (n bytes, the sandbox's word): the length of the whole frame (> 0)
 * with *ret_kind, *ret_offset, *ret_data and *ret_data_len set, 0 if more bytes are needed,
 * -ENOMSG if buf does not start with a frame (the report begins), -EBADMSG for a malformed frame
 * (unknown kind, a length out of range, an offset whose data would pass UINT64_MAX). */
int exec_frame_parse(const uint8_t *buf, size_t n, ExecFrameKind *ret_kind, uint64_t *ret_offset,
                     const uint8_t **ret_data, size_t *ret_data_len);

/* How many more bytes may be read without passing the end of the frame begun in buf (n bytes): the
 * rest of the frame, or of its header while that is cut (its length is not known yet); 0 if buf is
 * empty, holds a whole frame first, or does not start with a well-formed frame (the report, or a
 * malformed frame: then there is no frame end to stop at). A reader that must stop at a frame
 * boundary (sandboxd as it stops, job_quiesce()) reads no more than this. */
size_t exec_frame_missing(const uint8_t *buf, size_t n);

/* The header line for these lengths, '\n' included, into buf (stdin_len 0: the two-number form);
 * its length, or -ENOBUFS. */
int exec_header_format(char *buf, size_t size, uint64_t bpf_len, uint64_t code_len, uint64_t stdin_len);
/* One header line without its '\n' (n bytes, NUL bytes refused): two numbers (*ret_stdin_len 0) or
 * three. 0, -EINVAL (not this protocol's header: magic, version, spacing, digits, how many), -ERANGE
 * (a number over UINT64_MAX). The outputs are set only on success. Whether the lengths are
 * acceptable is the receiver's to judge (exec_bpf_len_is_valid(), its own limits). */
int exec_header_parse(const char *line, size_t n, uint64_t *ret_bpf_len, uint64_t *ret_code_len,
                      uint64_t *ret_stdin_len);
/* Whole instructions, at least one, at most EXEC_BPF_MAX bytes. */
bool exec_bpf_len_is_valid(uint64_t bpf_len);

/* The claim line for these values, '\n' included; its length, or -ENOBUFS. */
int exec_claim_format(char *buf, size_t size, uint64_t timeout_ms, uint64_t code_len, uint64_t env_len);
/* One claim line without its '\n': 0, -EINVAL (magic, version, spacing, digits, NUL), -ERANGE. The
 * outputs are set only on success. */
int exec_claim_parse(const char *line, size_t n, uint64_t *ret_timeout_ms, uint64_t *ret_code_len,
                     uint64_t *ret_env_len);
/* An environment block: n bytes of "KEY=VALUE\0" entries, KEY non-empty, without '=', the last entry
 * NUL-terminated, at most EXEC_ENV_ENTRIES_MAX entries. Returns the number of entries, or -EINVAL. */
int exec_env_block_check(const char *block, size_t n);

typedef enum HelperPhase {
        PHASE_SETUP,     /* sandbox-exec itself, before the program ran */
        PHASE_COMPILE,   /* the compile step, or the syntax checker said it was a compile error */
        PHASE_RUN,
        _PHASE_MAX,
        _PHASE_INVALID = -22,
} HelperPhase;

const char *helper_phase_to_string(HelperPhase p);
HelperPhase helper_phase_from_string(const char *s);

/* The report's keys, in the order helper_report_format() writes them. */
typedef enum HelperReportKey {
        HELPER_KEY_PHASE,             /* phase=setup|compile|run */
        HELPER_KEY_EXIT,              /* exit=N, 0..255, or -1: killed by a signal or never ran */
        HELPER_KEY_SIGNAL,            /* signal=N, 0: none */
        HELPER_KEY_OOM_KILL,          /* oom_kill=N */
        HELPER_KEY_MEM_PEAK,          /* mem_peak=BYTES */
        HELPER_KEY_MEM_FAILCNT,       /* mem_failcnt=N */
        HELPER_KEY_PIDS_MAX,          /* pids_max=N */
        HELPER_KEY_DISK_FULL,         /* disk_full=0|1 */
        HELPER_KEY_CPU_USEC,          /* cpu_usec=N */
        HELPER_KEY_ERROR,             /* error=free text, the rest of the line (only when there is one) */
        HELPER_KEY_TIMEOUT,           /* timeout=0|1 */
        HELPER_KEY_CANCELLED,         /* cancelled=0|1 */
        HELPER_KEY_RUN_USEC,          /* run_usec=N */
        HELPER_KEY_FIRST_OUTPUT_USEC, /* first_output_usec=N (only when there was output) */
        HELPER_KEY_ALONE,             /* alone=1: nothing of the program is left in the unit's cgroup
                                       * (only when so) */
        HELPER_KEY_STDOUT_BYTES,      /* stdout_bytes=N, stdout_lines=N, stdout_head=N, stdout_tail=N */
        HELPER_KEY_STDOUT_LINES,
        HELPER_KEY_STDOUT_HEAD,
        HELPER_KEY_STDOUT_TAIL,
        HELPER_KEY_STDERR_BYTES,      /* the same for stderr */
        HELPER_KEY_STDERR_LINES,
        HELPER_KEY_STDERR_HEAD,
        HELPER_KEY_STDERR_TAIL,
        _HELPER_KEY_MAX,
        _HELPER_KEY_INVALID = -22,
} HelperReportKey;

const char *helper_report_key_to_string(HelperReportKey k);
HelperReportKey helper_report_key_from_string(const char *s);

typedef struct HelperReport {
        bool valid;              /* a complete, well-formed report arrived (set by the parser only) */
        HelperPhase phase;
        int exit_code;           /* -1 when killed by a signal */
        int signal;
        uint64_t oom_kills;      /* memory.oom_control:oom_kill (v1) or memory.events:oom_kill (v2) */
        uint64_t memory_peak;    /* bytes; memory.max_usage_in_bytes (v1) or memory.peak (v2) */
        uint64_t memory_failcnt;
        uint64_t pids_max;       /* pids.events:max — fork failed at TasksMax */
        bool disk_full;          /* the workspace file system had no space left */
        uint64_t cpu_usec;
        bool timed_out;          /* sandbox-exec killed the program at --timeout-ms */
        bool cancelled;          /* sandbox-exec killed the program on SIGUSR1 (a cancel) */
        uint64_t run_usec;       /* wall time of compile + run, as sandbox-exec measured it */
        uint64_t first_output_usec;      /* start → first byte of output; only with have_first_output */
        bool have_first_output;
        /* sandbox-exec swept the program's processes and its cgroup holds nothing but itself: the
         * daemon may finish the execution before systemd reports the unit's end. */
        bool alone;
        struct {
                uint64_t bytes, lines;   /* the whole stream */
                uint64_t head, tail;     /* bytes of each part that follow the text */
        } out, err;
        char error[HELPER_REPORT_ERROR_MAX + 1];
} HelperReport;

/* r's text part as sandbox-exec sends it, the empty line included, into buf (NUL-terminated). A
 * control character in r->error is written as a space (error= is the rest of its line). Returns the
 * length, -ENOBUFS if size is too small (HELPER_REPORT_MAX never is), -EINVAL for a phase, exit or
 * signal out of range. */
int helper_report_format(const HelperReport *r, char *buf, size_t size);

/* The text part without its empty line: 0, or -EINVAL for a malformed report (ret->valid is then
 * false). Everything in it is the sandbox's word, checked before it is believed. */
int helper_report_parse(const char *text, size_t len, HelperReport *ret);

/* The whole report as received (len bytes, at most what the channel buffered): the text up to the
 * empty line (looked for in the first HELPER_REPORT_MAX bytes; without one, all of buf is the text),
 * then the four output parts. *ret is the parsed text (ret->valid false unless it is well-formed).
 * The output parts are restored into out and err, initialised here with head_max and tail_max, only
 * if they are exactly what the text announces and fit such captures. Returns 1 with out and err
 * filled (the caller must capture_done() both), 0 for a valid report without output parts (no empty
 * line), -EINVAL for a malformed text, -EBADMSG for output parts that do not match the text (the
 * report itself stays valid), -ENOMEM. Everything in buf is the sandbox's word. */
int helper_report_receive(const void *buf, size_t len, size_t head_max, size_t tail_max, HelperReport *ret,
                          Capture *out, Capture *err);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The record of one execution: what the API returns and (later) what the store keeps. Plain data. */

#include <stdbool.h>
#include <stdint.h>

#include "conf.h"
#include "verdict.h"

typedef struct OutputStream {
        char *text;              /* head + marker + tail, valid UTF-8; NULL until final */
        uint64_t bytes;
        uint64_t lines;
        bool truncated;
} OutputStream;

typedef struct Execution {
        char *id;
        char *session_id;        /* may be NULL */
        const char *language;    /* static, from the language table */
        ExecStatus status;
        ErrorType error_type;
        int exit_code;           /* -1: none */
        int signal;              /* 0: none */
        OutputStream out, err;
        uint64_t duration_ms;
        uint64_t cpu_usec;
        bool have_cpu;
        uint64_t peak_memory_bytes;
        bool have_peak;
        uint64_t first_output_usec;      /* program start → first byte of output (metrics only) */
        bool have_first_output;
        uint64_t created_usec, started_usec, finished_usec;   /* CLOCK_REALTIME; 0: not yet */
        Limits limits;
        char *unit;
        const char *reason;      /* static */
        char *error_message;     /* what exactly went wrong, e.g. which input file and why; NULL: nothing
                                  * beyond reason */
} Execution;

Execution *execution_new(const char *id);
Execution *execution_free(Execution *e);
DEFINE_TRIVIAL_CLEANUP_FUNC(Execution *, execution_free);

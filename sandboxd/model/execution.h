/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The record of one execution: what the API returns and (later) what the store keeps. Plain data. */

#include <stdbool.h>
#include <stdint.h>

#include "conf.h"
#include "net-log.h"
#include "verdict/verdict.h"

typedef struct OutputStream {
        char *text;              /* head + marker + tail, valid UTF-8; NULL until final */
        uint64_t bytes;
        uint64_t lines;
        bool truncated;
} OutputStream;

/* The artifacts of a final execution (what the collector kept, as the store lists them). URLs are not
 * here: they are signed when a result is rendered for a caller (api.c), because they expire. */
typedef struct ExecArtifact {
        char *path;              /* below output/, valid UTF-8 without control characters */
        uint64_t size;
        uint64_t charged_bytes;  /* what the artifact store holds of it (its allocation, holes left out);
                                  * what the budgets count. exec_artifacts_add() sets it to size */
        char *mime_type;
        char sha256[65];         /* lower-case hex: the blob in the artifact store */
} ExecArtifact;

typedef struct ExecArtifactSkip {
        char *path;              /* printable (\xNN for bytes that are not) */
        char *reason;            /* "symlink", "hardlink", "fifo", "too_large" ... (artifacts.h) */
} ExecArtifactSkip;

typedef struct ExecArtifacts {
        ExecArtifact *items;     /* sorted by path */
        size_t n_items;
        ExecArtifactSkip *skipped;   /* the first ARTIFACT_SKIPPED_LISTED_MAX */
        size_t n_skipped;
        uint64_t n_skipped_total;    /* including those not listed */
} ExecArtifacts;

ExecArtifacts *exec_artifacts_new(void);
ExecArtifacts *exec_artifacts_free(ExecArtifacts *a);
DEFINE_TRIVIAL_CLEANUP_FUNC(ExecArtifacts *, exec_artifacts_free);
/* Append one artifact / skip (copies the strings). 0 or -ENOMEM. */
int exec_artifacts_add(ExecArtifacts *a, const char *path, uint64_t size, const char *mime_type, const char *sha256);
int exec_artifacts_add_skip(ExecArtifacts *a, const char *path, const char *reason);

/* How an execution's unit came to be: claimed from the warm pool, or started for it. */
typedef enum ExecStartPath {
        START_UNKNOWN,           /* not started yet (or before the record knew) */
        START_WARM,
        START_COLD,
        _START_MAX,
} ExecStartPath;

const char *exec_start_path_to_string(ExecStartPath p);   /* NULL for START_UNKNOWN */
ExecStartPath exec_start_path_from_string(const char *s);  /* START_UNKNOWN for NULL or unknown */

typedef struct Execution {
        char *id;                /* the record id: unique across owners (scoped-id.h) */
        char *client_id;         /* the execution_id the caller chose, NULL: none (id is generated) */
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
        ExecStartPath start;     /* how its unit came to be (warm-pool.c); START_UNKNOWN until it runs */
        const char *reason;      /* static */
        bool cancel_requested;   /* a caller asked sandboxd to cancel it (persisted: adoption keeps it) */
        char *error_message;     /* what exactly went wrong, e.g. which input file and why; NULL: nothing
                                  * beyond reason */
        ExecArtifacts *artifacts;    /* NULL: none collected (not final yet, or collection failed) */
        NetLog *network;         /* a run with network: its allow list and the proxy's log; NULL: none */
        char *environment;       /* the request's "environment" (environment.h); NULL: the language's base */
        /* The tier it runs in and why, as the record shows it (risk-scan.h: isolation_to_json()'s
         * text, at most ISOLATION_JSON_MAX bytes); NULL: a record stored before the tiers. */
        char *isolation;
        char *summary;           /* summary.h, made once when final; NULL: not final, or a record stored
                                  * before summaries (result.c makes it when rendering) */
        /* Several nodes (issue 22): the node that runs it (NodeName=) and that node's epoch in the
         * registry when it took it, which fences its writes (store_put() refuses them once another
         * node took the execution over); the attempt, 1 unless it was run again after its node was
         * lost (the request's "retry"). NULL and 0 in records written before. */
        char *node;
        uint64_t node_epoch;
        unsigned attempt;
        char **args;             /* the request's "args"; NULL: none */
        size_t n_args;
        uint64_t stdin_bytes;    /* the length of the request's "stdin"; 0: none */
} Execution;

Execution *execution_new(const char *id);
/* What the caller calls it: its own execution_id, else the generated record id. */
static inline const char *execution_public_id(const Execution *e) {
        return e->client_id ?: e->id;
}
Execution *execution_free(Execution *e);
DEFINE_TRIVIAL_CLEANUP_FUNC(Execution *, execution_free);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* JSON request → validated execution request. Strict: unknown fields, wrong types, values out of
 * range, non-UTF-8 text and over-deep JSON are refused with an error that names the field. Limits
 * are the configured defaults overridden by the request, refused (never clamped) above the
 * ceilings. Pure: no I/O. */

#include <stddef.h>
#include <stdint.h>

#include "api-error.h"
#include "conf.h"
#include "language.h"

#define REQUEST_JSON_DEPTH_MAX 16
#define REQUEST_ID_MAX 64
#define REQUEST_ENV_MAX 64
#define REQUEST_ENV_NAME_MAX 128
#define REQUEST_ENV_VALUE_MAX 4096
#define REQUEST_ENV_TOTAL_MAX (32 * 1024)
/* "args": the program's arguments after itself, at most this many, each at most this long, this many
 * bytes in all (each counted with its terminating NUL). */
#define REQUEST_ARGS_MAX 256
#define REQUEST_ARG_MAX 4096
#define REQUEST_ARGS_TOTAL_MAX (64 * 1024)
/* Input files ("files"): a path below /workspace/input, at most this long in bytes and this many
 * components deep; an http(s) URL at most this long. */
#define REQUEST_FILE_PATH_MAX 255
#define REQUEST_FILE_DEPTH_MAX 16
#define REQUEST_FILE_URL_MAX 2048

/* One input file: downloaded from url, or given inline (content, already decoded). */
typedef struct InputFile {
        char *path;              /* relative, validated: no "", ".", ".." components, no control chars */
        char *url;               /* http:// or https://; NULL for inline content */
        uint8_t *content;        /* inline content; NULL with url */
        size_t content_len;
} InputFile;

typedef struct ExecRequest {
        char *execution_id;      /* NULL: not given, the daemon assigns one */
        char *record_id;         /* set by the submitter: the caller's scoped id of execution_id, or the
                                  * stored record's id (scoped-id.h); NULL: generate one */
        char *session_id;        /* NULL: none */
        const Language *language;
        char *code;
        size_t code_len;
        Limits limits;
        bool disk_mb_given;      /* limits.disk_mb was in the request (else a session's run takes its size) */
        char **env;              /* "KEY=VALUE", sorted by name (a fixed order is part of reproducibility) */
        size_t n_env;
        char **args;             /* "args", in order (may hold ""); NULL: none */
        size_t n_args;
        char *stdin_data;        /* "stdin": the program's standard input, any bytes (NUL included);
                                  * NULL with stdin_len 0: none ("" is none) */
        size_t stdin_len;
        uint64_t seed;           /* SANDBOX_SEED; 0 unless the request sets "seed" */
        char *callback_url;      /* NULL: none; http(s), validated (callback_url_is_valid()) */
        bool cold;               /* "start": "cold": never a unit of the warm pool */
        bool retry;              /* "retry": true: run once more if the node running it is lost */
        bool unclaimed;          /* set by the submitter: in the queue nodes share, any node may claim it
                                  * (runner.c); false: this node's from the start */
        char *route_node;        /* set by the submitter: a run of a session another node holds, stored
                                  * for that node to claim (job_new(), runner_submit(), submit.c) */
        bool strong;             /* "isolation": "strong": the strong tier (risk-scan.h), whatever the scan says */
        /* The tier chosen (submit.c: isolation_choose(); a restored record: its own), and the
         * record's "isolation" text. */
        bool run_strong;
        char *isolation;
        /* "environment" (environment.h): its name, shape checked here; whether it exists and is the
         * language's is submit.c's. NULL: the language's base. */
        char *environment;
        InputFile *files;        /* "files", in request order */
        size_t n_files;
        /* "network": {"allow": [...]} (issue 16): the entries as given, their shape checked here;
         * their syntax and the AllowDomains= ceiling are net-policy.c's (submit.c asks it). */
        bool network;
        char **network_allow;
        size_t n_network_allow;
        uint8_t fingerprint[32]; /* SHA-256 over the canonical request, for idempotency checks */
} ExecRequest;

/* A refusal as both APIs render it: which error (api-error.h gives its HTTP status and code and its
 * D-Bus name), the field it is about, and the message. */
typedef struct RequestError {
        ApiError error;
        char field[96];          /* "" or a dotted path such as "limits.memory_mb" */
        char message[384];
} RequestError;

/* Fill *err (field may be NULL: none) and return r: one way for the request parser, the list query
 * parser, the budgets and the submission path to describe a refusal. */
int request_error(RequestError *err, int r, ApiError error, const char *field, const char *fmt, ...)
        _printf_(5, 6);

ExecRequest *exec_request_free(ExecRequest *r);
DEFINE_TRIVIAL_CLEANUP_FUNC(ExecRequest *, exec_request_free);

/* 0 on success; -EINVAL (or -ENOMEM) with *err filled on failure. */
int exec_request_parse(const char *body, size_t len, const Config *c, ExecRequest **ret, RequestError *err);

/* The "files" array of a request (or of a stored one), validated against c into req->files.
 * disk_mb is the execution's disk limit: inline content above it is refused. */
struct json_object;
int request_parse_files(struct json_object *files, const Config *c, uint64_t disk_mb, ExecRequest *req,
                        RequestError *err);
/* Entries of network.allow: at most this many (ALLOWLIST_MAX_ENTRIES), each at most this long
 * ("*." + a 253-byte name + ":65535"). */
#define REQUEST_NETWORK_ALLOW_MAX 64
#define REQUEST_NETWORK_ENTRY_MAX 264
/* The "network" object: only "allow", a non-empty array of strings without NUL. Into
 * req->network_allow. 0, or -EINVAL with *err naming the field, -ENOMEM. */
int request_parse_network(struct json_object *network, ExecRequest *req, RequestError *err);

/* The files as the request gave them (inline content base64 again): what job.c stores so that a
 * queued execution survives a restart. NULL on OOM. */
struct json_object *request_files_to_json(const ExecRequest *req);

/* Is this a path an input file may have: relative, 1..REQUEST_FILE_PATH_MAX bytes, at most
 * REQUEST_FILE_DEPTH_MAX components, none empty, "." or "..", no control characters or backslash.
 * On false, *ret_why (if given) says what is wrong. */
bool input_path_is_valid(const char *path, size_t len, const char **ret_why);
/* Is this a URL sandboxd downloads: http:// or https:// (any case), a host, no user:password@,
 * no control characters or spaces, at most REQUEST_FILE_URL_MAX bytes. */
bool input_url_is_valid(const char *url, size_t len, const char **ret_why);

/* Environment variable names sandboxd sets itself, which a request may not override. */
/* The "args" of a stored request's JSON (job.c's request_json()), checked as a request's are: *ret
 * NULL and *ret_n 0 without (or with invalid) args; -ENOMEM. With ret_stdin_bytes (may be NULL),
 * the length of its "stdin" (0 without). */
int request_args_from_json(const char *json, char ***ret, size_t *ret_n, uint64_t *ret_stdin_bytes);
/* The "stdin" of a stored request's JSON into req (stdin_data, stdin_len; none without): 0, -ENOMEM. */
int request_stdin_from_json(const char *json, ExecRequest *req);
bool env_name_is_reserved(const char *name);
bool env_name_is_valid(const char *name);

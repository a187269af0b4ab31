/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* JSON request → validated execution request. Strict: unknown fields, wrong types, values out of
 * range, non-UTF-8 text and over-deep JSON are refused with an error that names the field. Limits
 * are the configured defaults overridden by the request, refused (never clamped) above the
 * ceilings. Pure: no I/O. */

#include <stddef.h>
#include <stdint.h>

#include "conf.h"
#include "language.h"

#define REQUEST_JSON_DEPTH_MAX 16
#define REQUEST_ID_MAX 64
#define REQUEST_ENV_MAX 64
#define REQUEST_ENV_NAME_MAX 128
#define REQUEST_ENV_VALUE_MAX 4096
#define REQUEST_ENV_TOTAL_MAX (32 * 1024)

typedef struct ExecRequest {
        char *execution_id;      /* NULL: not given, the daemon assigns one */
        char *session_id;        /* NULL: none */
        const Language *language;
        char *code;
        size_t code_len;
        Limits limits;
        char **env;              /* "KEY=VALUE", sorted by name (a fixed order is part of reproducibility) */
        size_t n_env;
        uint64_t seed;           /* SANDBOX_SEED; 0 unless the request sets "seed" */
        char *callback_url;      /* NULL: none; http(s), validated (callback_url_is_valid()) */
        uint8_t fingerprint[32]; /* SHA-256 over the canonical request, for idempotency checks */
} ExecRequest;

typedef struct RequestError {
        int http_status;         /* 400, 413, 422 */
        const char *code;        /* "invalid_json", "invalid_request", "unsupported", "too_large" */
        char field[96];          /* "" or a dotted path such as "limits.memory_mb" */
        char message[384];
} RequestError;

ExecRequest *exec_request_free(ExecRequest *r);
DEFINE_TRIVIAL_CLEANUP_FUNC(ExecRequest *, exec_request_free);

/* 0 on success; -EINVAL (or -ENOMEM) with *err filled on failure. */
int exec_request_parse(const char *body, size_t len, const Config *c, ExecRequest **ret, RequestError *err);

/* Environment variable names sandboxd sets itself, which a request may not override. */
bool env_name_is_reserved(const char *name);
bool env_name_is_valid(const char *name);

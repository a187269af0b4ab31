/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Signed, expiring artifact URLs: a bearer capability for one file of one execution.
 *
 *   /v1/executions/<id>/artifacts/<path, percent-encoded>?expires=<unix seconds>&signature=<hex>
 *
 * signature = lower-case hex of HMAC-SHA256(key, METHOD "\n" CANONICAL-PATH "\n" EXPIRES), where
 * CANONICAL-PATH is the URL path with the artifact path encoded by url_path_encode() (every byte
 * outside the unreserved set A-Z a-z 0-9 - . _ ~ and the separator '/' as %XX, upper-case) and
 * EXPIRES the decimal seconds as they appear in the query. The server decodes the request's path and
 * encodes it again the canonical way before it checks the signature, so any spelling of the same
 * name verifies, and nothing else does. Pure: the caller passes the key and the current time. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SIGNED_URL_KEY_MIN 32            /* bytes of key material at least */
#define SIGNED_URL_KEY_MAX 1024
#define SIGNED_URL_SIGNATURE_HEX 64
#define SIGNED_URL_EXPIRES_MAX 20        /* digits of "expires" (UINT64_MAX has 20) */
#define SIGNED_URL_PATH_MAX 8192         /* bytes of a canonical path that is signed or verified */

/* Percent-encode s (every byte but unreserved characters and '/'). NULL on OOM. */
char *url_path_encode(const char *s);
/* Decode %XX (either case) strictly: a '%' not followed by two hex digits, or a decoded NUL byte,
 * is -EINVAL. '+' stays '+'. */
int url_path_decode(const char *s, char **ret);

/* "/v1/executions/<id>/artifacts/<encoded path>" (the part that is signed). NULL on OOM. */
char *artifact_url_path(const char *execution_id, const char *artifact_path);

/* Hex HMAC of method, canonical path and expiry. -EINVAL for a bad key length or an overlong path. */
int signed_url_sign(const uint8_t *key, size_t key_len, const char *method, const char *canonical_path,
                    uint64_t expires, char ret_hex[static SIGNED_URL_SIGNATURE_HEX + 1]);

/* The whole URL for the artifact: path, ?expires=&signature=. -ENOMEM, -EINVAL. */
int artifact_url_build(const uint8_t *key, size_t key_len, const char *execution_id, const char *artifact_path,
                       uint64_t expires, char **ret);

/* Check a request: canonical_path as artifact_url_path() builds it, the query's expires and
 * signature as received (may be NULL). 0 if valid at now_sec; -EBADMSG if malformed (missing,
 * overlong, not digits, not 64 lower-case hex digits), -EACCES if the signature does not match,
 * -ETIME if it matches but expired (expires < now_sec). The signature is compared in constant time
 * and checked before the expiry, so an attacker learns nothing from which failure it is — and the
 * caller answers all of them the same anyway. */
int signed_url_verify(const uint8_t *key, size_t key_len, const char *method, const char *canonical_path,
                      const char *expires, const char *signature, uint64_t now_sec);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Base64 (RFC 4648): the standard alphabet with padding for the request's inline files
 * (content_base64), the URL alphabet without padding for list cursors. Both decoders are strict:
 * a string decodes only if it is exactly what the encoder would write for its bytes (alphabet only,
 * no whitespace, padding where and only where it belongs, zero bits where a last group drops some),
 * so every value has one spelling. */

#include <stddef.h>
#include <stdint.h>

/* NUL-terminated, malloc'ed; NULL on OOM or a length whose encoding does not fit in size_t. */
char *base64_encode(const void *p, size_t len);
char *base64url_encode(const void *p, size_t len);

/* s is len bytes (NUL bytes in it are refused). *ret is malloc'ed (one byte more than *ret_len, so
 * never NULL on success, even for ""). 0, -EINVAL (not valid), -ENOMEM. On failure *ret and
 * *ret_len are not touched. */
int base64_decode(const char *s, size_t len, uint8_t **ret, size_t *ret_len);
int base64url_decode(const char *s, size_t len, uint8_t **ret, size_t *ret_len);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The media type of an artifact, guessed from its name and, when the name says nothing known, from
 * its first bytes. Pure: no I/O. The result is a bare media type without parameters: in particular
 * text types carry no "; charset=utf-8", because nobody has checked the bytes of a hostile file
 * against that promise; whoever serves a file adds parameters if it validates them. A type is a
 * label, not a permission: a server must send artifacts as attachments with
 * "X-Content-Type-Options: nosniff" whatever this says (text/html and image/svg+xml included). */

#include <stddef.h>
#include <stdint.h>

#define MIME_DEFAULT "application/octet-stream"
#define MIME_SNIFF_BYTES 16     /* the longest magic compared; more head bytes are not needed */

/* path: a relative path or file name (only its last component counts; the extension after its last
 * '.' is compared case-insensitively, a leading '.' alone is no extension). head/head_len: the
 * file's first bytes, may be NULL/0. Returns a static string, never NULL. */
const char *mime_type_guess(const char *path, const uint8_t *head, size_t head_len);

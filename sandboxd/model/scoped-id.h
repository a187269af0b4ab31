/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Ids a caller chooses are the caller's own: "job-1" of one owner and "job-1" of another are two
 * records that know nothing of each other. Each record has a record id, unique across owners, that
 * unit names, journal fields, signed artifact URLs and the store key use: a generated id as it is
 * (id_generate()), or for a client-chosen one the owner's scoped id below. It is derived, so a lookup
 * needs no mapping table; it is a hash, so no one can choose an id whose record id is another owner's
 * (nor find one: the owner is part of the input, and owner strings never contain NUL).
 *
 *     <prefix>_<32 lowercase hex: the first 128 bits of SHA-256("sandboxd scoped id" NUL prefix NUL
 *                                                                owner NUL name)>
 *
 * A caller's id is looked up as the caller's scoped id first, then as a record id (a generated one,
 * or one the caller learned from record_id), each checked against who may see the record. */

#include <stddef.h>

#define SCOPED_ID_HEX 32
/* prefix (at most SCOPED_ID_PREFIX_MAX) + '_' + hex + NUL */
#define SCOPED_ID_PREFIX_MAX 8
#define SCOPED_ID_MAX (SCOPED_ID_PREFIX_MAX + 1 + SCOPED_ID_HEX + 1)

/* owner NULL counts as "" (a record without an owner: root's unit tests, old records). 0, or
 * -EINVAL for a prefix that is empty, too long or not [a-z], or a NULL name. */
int scoped_id(char buf[static SCOPED_ID_MAX], const char *prefix, const char *owner, const char *name);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* API keys for the TCP listeners. The key file (APIKeysFile=) holds one key per line:
 *
 *     NAME sha256:<64 hex digits> [admin]
 *
 * NAME is [A-Za-z0-9_.-]{1,64}; the hash is SHA-256 of the key itself
 * (printf %s "$KEY" | sha256sum). Only hashes are at rest: the file reveals no key. Keys are random
 * tokens with at least 32 bytes of entropy; for such tokens one unsalted SHA-256 is enough (there is
 * nothing to brute-force), so no slow password hash is needed. Lines starting with '#' and empty
 * lines are ignored. The file is checked as every secret file is (secret-file.h): it must belong
 * to root (or to the user sandboxd runs as), must not be writable by its group or by others nor
 * readable by others (its group may read it: 0640 root:sandboxd), must not be a symbolic link, and
 * no directory above it may be writable by anyone but root: otherwise it is refused. */

#include <stdbool.h>
#include <stddef.h>

#include "key-name.h"
#include "util.h"

#define AUTH_NAME_MAX KEY_NAME_MAX
#define AUTH_TOKEN_MAX 512          /* longest bearer token even looked at */
#define AUTH_KEYS_MAX 1024          /* entries in one key file */
#define AUTH_FILE_MAX (1024 * 1024)

typedef struct AuthTable AuthTable;

AuthTable *auth_table_free(AuthTable *t);
DEFINE_TRIVIAL_CLEANUP_FUNC(AuthTable *, auth_table_free);
size_t auth_table_size(const AuthTable *t);

/* Parse the text of a key file. On error returns -EINVAL and sets *ret_error (malloc'ed) to
 * "FILE:LINE: message". */
int auth_parse_text(const char *text, const char *filename, AuthTable **ret, char **ret_error);

/* Open (secret_file_open(): owner, mode, the directories above it), read (at most AUTH_FILE_MAX)
 * and parse. Errors (with *ret_error set to a message naming the file) are -errno of the failed
 * call, -EPERM for a file (or a directory above it) that is not safe, -ELOOP for a symbolic link,
 * -EBADFD for a file that is not regular, -EINVAL for a parse error. */
int auth_load(const char *path, AuthTable **ret, char **ret_error);

/* Keys must carry at least this many bits. The file holds hashes, so this cannot be checked when it
 * is loaded; it is checked on the key itself when one is presented. What can be checked is a
 * length for the key's alphabet: at least 22 characters (22 base64url characters are 132 bits), 32
 * if the key is only hex digits, 39 if only decimal digits. `sandboxctl key new` makes keys of 32
 * random bytes (43 base64url characters). */
#define AUTH_KEY_BITS_MIN 128

/* The shortest a key made of the characters of key[0..len) may be: 39, 32 or 22 (see above). */
size_t auth_key_min_length(const char *key, size_t len);

/* Check a presented bearer token: hash it and compare with every entry in constant time, so that
 * how long it takes does not depend on which entry (if any) matched. Returns 0 and the entry's name
 * (valid as long as the table) and admin flag; -EINVAL for an empty token, -E2BIG for one longer than
 * AUTH_TOKEN_MAX, -EACCES for a key that is not in the table, -EKEYREJECTED for a key that is in the
 * table but shorter than auth_key_min_length() (the name and flag are set, for the log; the key is
 * not accepted). t may be NULL (no keys). */
int auth_check(const AuthTable *t, const char *bearer, const char **ret_name, bool *ret_admin);

/* The token of an "Authorization: Bearer <token>" header value (scheme case-insensitive, RFC 7235),
 * or NULL if the header is not a Bearer credential. Points into the header. */
const char *auth_bearer_token(const char *header);

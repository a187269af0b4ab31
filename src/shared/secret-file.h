/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Is this file safe to take a secret from? One answer for every key file sandboxd reads (the API
 * key file, the callback signing key, the artifact URL key).
 *
 * The file: a regular file (never through a symbolic link: the last component is opened with
 * O_NOFOLLOW), owned by root (or by the uid sandboxd runs as), not writable by its group or by
 * others, not readable by others, and not readable by its group either unless the caller allows it
 * (a file of hashes may be 0640 root:sandboxd; a key itself must be 0600).
 *
 * Every directory on its path, from / down to the file's own: a real directory (a symbolic link is
 * refused, not followed: the configuration names the real path), owned by root (or that uid), and
 * not writable by its group or by others, since whoever can write a directory can replace the file
 * in it. A directory with the sticky bit (/tmp, /var/tmp) is the exception: in it only an entry's
 * owner (or the directory's, or root) may rename or remove that entry, and the next component must
 * belong to root (or that uid) anyway. This is sshd's rule for authorized_keys (owner root or the
 * user, no group or other write), with the sticky exception that rule leaves implicit.
 *
 * The walk opens each directory with O_PATH|O_NOFOLLOW relative to the one before, checks it with
 * fstat() and opens the file relative to the last one: what is checked is what is read, with no
 * window between the check and the open. */

#include <stdbool.h>
#include <sys/stat.h>
#include <sys/types.h>

/* Who besides the owner may read the file. */
typedef enum SecretFileAccess {
        SECRET_OWNER_ONLY,      /* nobody: the key itself (0600) */
        SECRET_GROUP_READ,      /* its group may read it: a file of hashes (0640 root:sandboxd) */
} SecretFileAccess;

/* The longest path looked at, and the most components on it. */
#define SECRET_PATH_MAX 4096
#define SECRET_DEPTH_MAX 64

/* The checks on the file's stat result. what names the file in messages ("API key file"). 0 if
 * safe; otherwise *ret_error is "PATH: refusing the WHAT: <why>; <what to do>" and the result is
 * -EBADFD (not a regular file) or -EPERM (owner or mode). Pure. */
int secret_file_check_stat(const struct stat *st, uid_t uid, SecretFileAccess access, const char *path,
                           const char *what, char **ret_error);

/* The checks on one directory dir on the way to path, given its lstat() result. 0 if safe;
 * otherwise *ret_error names path, what, dir and the remedy, and the result is -ELOOP (a symbolic
 * link), -ENOTDIR or -EPERM (owner or mode). Pure. */
int secret_dir_check_stat(const struct stat *st, uid_t uid, const char *dir, const char *path, const char *what,
                          char **ret_error);

/* Open the absolute path for reading a secret, after the checks above on every directory from /
 * down and on the file itself (uid: the one besides root that may own them, normally geteuid()).
 * Returns the fd (O_RDONLY, O_CLOEXEC, O_NONBLOCK, so a FIFO put there cannot hang the caller: it is
 * refused as not regular) and *ret_st (may be NULL). On failure *ret_error is set and the result
 * is -errno of the failed call (-ENOENT for a missing file or directory), -EINVAL for a relative or
 * over-long path, or one of the above. */
int secret_file_open(const char *path, uid_t uid, SecretFileAccess access, const char *what, struct stat *ret_st,
                     char **ret_error);

/* A directory held to the same rules (every directory from / down to it, itself included, as the
 * directories above a key file), and not writable by its group or by others even when sticky: the
 * artifact store, whose files every node serves. Returns an O_RDONLY|O_DIRECTORY fd of the
 * directory that was checked; on failure *ret_error says why and the result is as for
 * secret_file_open(). */
int secret_dir_open(const char *path, uid_t uid, const char *what, char **ret_error);

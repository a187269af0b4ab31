/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* A session's workspace, reached from outside between its runs (PUT, GET and DELETE
 * /v1/sessions/{id}/files/{path}): the same rules as input files and artifacts. A path is what an
 * input file's may be (input_path_is_valid(): relative, no "", "." or ".." component, no control
 * character or backslash, at most REQUEST_FILE_PATH_MAX bytes and REQUEST_FILE_DEPTH_MAX deep). Every
 * name in the workspace is the sandbox's and hostile: everything is opened relative to the workspace
 * fd with openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS|RESOLVE_NO_XDEV) and
 * O_NOFOLLOW (artifacts_openat_beneath()), so no symlink is ever followed, on the way or at the end,
 * and no mount is crossed; symlinks are listed, never read through; hard links, FIFOs, sockets and
 * devices are never opened for reading. Callers keep runs of the session away meanwhile (nothing
 * here races with the sandbox: no process of it runs).
 *
 * The pure part (paths, the errno → API error table) is tested row by row; the fd part works on
 * small bounded things and so runs on the event loop: a listing reads at most SESSION_FILES_LIST_MAX
 * entries, a download is an fd handed to the HTTP layer (streamed by it), an upload is written into a new
 * file as it arrives (the HTTP layer's chunks, or a buffer) and renamed into place. */

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <sys/stat.h>

#include "model/api-error.h"

/* A directory listing names at most this many entries (then "truncated": true). */
#define SESSION_FILES_LIST_MAX 1000U

/* The path part of a files URL (after ".../files/", already percent-decoded) as a workspace path.
 * dir_ok: a trailing '/' is allowed (a listing); "" is the workspace's root. 0: the root (*ret
 * NULL); 1: *ret the path without trailing '/'; -EINVAL with *ret_why saying what is wrong; -ENOMEM. */
int session_file_path_parse(const char *path, bool dir_ok, char **ret, const char **ret_why);

/* What a failure of the functions below means to a client: the API error and a message ending a
 * sentence that starts with the path ("'x' is a symbolic link ..."). Static strings. */
ApiError session_file_error(int r, const char **ret_message);

/* The workspace/ directory of a session whose mount root is root_path (root's: SESSION_MOUNT_DIR/<name>).
 * An O_RDONLY|O_DIRECTORY fd, or -ENOENT (no run has created it yet), -errno. */
int session_files_open_workspace(const char *root_path);

/* Open path (NULL: the root) below ws_fd for reading: a directory (O_DIRECTORY) or a regular file
 * with one link. Its fstat() in *ret_st. -ELOOP: a symlink is the path or on it; -EMLINK: a hard
 * link; -EPERM: neither a regular file nor a directory; -ENOENT, -ENOTDIR, -EXDEV (a mount). */
int session_file_open(int ws_fd, const char *path, int *ret_fd, struct stat *ret_st);

/* {"path": path or "", "entries": [{"name", "type": "file"|"directory"|"symlink"|"other", "size"}],
 * "truncated": bool} of the directory dir_fd (not consumed), entries sorted by name, names that are
 * not printable UTF-8 rendered as artifacts_path_render() does. */
int session_file_list(int dir_fd, const char *path, json_object **ret);

/* Replace path (its directory must exist; what is there must be a regular file or a symlink, which
 * is replaced, never followed) with data: written into a temporary file in the same directory,
 * owned like the directory, mode 0644, then renamed over. -EISDIR: a directory is there; -ENOSPC. */
int session_file_write(int ws_fd, const char *path, const void *data, size_t len);

/* session_file_write() in steps, for bytes that arrive as they come (a PUT's body, streamed): begin
 * makes the temporary file in path's directory (the same checks and refusals), write appends to it
 * (-ENOSPC when the session's tmpfs is full), commit gives it mode 0644 and the directory's owner
 * and renames it over path; abort removes it (a committed one stays) and frees everything, and may
 * be called any number of times. The caller keeps the session's runs away from begin to the end. */
typedef struct SessionFileUpload {
        int dir_fd, fd;
        char tmp[64];            /* the temporary file's name in dir_fd; "" once renamed */
        char *base;              /* path's last component */
        uint64_t size;           /* bytes written */
} SessionFileUpload;
#define SESSION_FILE_UPLOAD_NULL { .dir_fd = -EBADF, .fd = -EBADF }
int session_file_upload_begin(int ws_fd, const char *path, SessionFileUpload *ret);
int session_file_upload_write(SessionFileUpload *u, const void *data, size_t len);
int session_file_upload_commit(SessionFileUpload *u);
void session_file_upload_abort(SessionFileUpload *u);

/* Remove path: a file, a symlink (the link, not its target) or an empty directory. -ENOTEMPTY. */
int session_file_remove(int ws_fd, const char *path);

/* fchown fd to the owner of dir_fd (unless that is root): what is created in a session's workspace
 * belongs to the run that owns it, which can then replace or delete it. */
int session_file_inherit_owner(int dir_fd, int fd);

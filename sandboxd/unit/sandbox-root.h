/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What a sandbox sees as "/", as tables: the skeleton sandboxd writes into the root of every
 * execution's own tmpfs (a session's tmpfs for a session's runs), the host /etc entries copied into
 * the /usr layer, and the /usr entries that layer hides. No I/O here (workspace.c and usr-layer.c
 * write them).
 *
 * Why a root of its own per execution, and not one skeleton shared by all: a lock taken on a file or
 * directory is visible to whoever opens the same inode (flock(LOCK_EX|LOCK_NB) answers EWOULDBLOCK),
 * so every inode two sandboxes can both open is a covert channel between them. The root's
 * directories and /etc's files are this execution's own; /usr is an overlay that sandbox-exec mounts
 * in the unit's own mount namespace (its inodes are the overlay's, new per mount); /workspace, /tmp,
 * /run, /dev/shm are private tmpfs. And the program's /etc names nothing of the host: accounts, hosts
 * and name service configuration are synthetic, the rest are the runtime's own files. */

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Inside the sandbox: where the daemon's /usr layer is bound for sandbox-exec, which mounts it over
 * /usr and detaches the bind. */
#define SANDBOX_USR_LAYER "/run/.usr-layer"
/* Likewise for the request's environment's usr/ tree (environment.h), bound only into its units. */
#define SANDBOX_ENV_LAYER "/run/.env-layer"
/* In the layer (and so in the sandbox's /usr): the copies of the host /etc entries. */
#define USR_LAYER_ETC "lib/sandbox/etc"
/* Likewise the strong tier's preload (sandbox-exec/strong-preload.c), installed beside the helper as
 * STRONG_PRELOAD_NAME; sandbox-exec names /usr/USR_LAYER_PRELOAD in LD_PRELOAD of gVisor's programs. */
#define STRONG_PRELOAD_NAME "sandboxd-strong-preload.so"
#define USR_LAYER_PRELOAD "lib/sandbox/" STRONG_PRELOAD_NAME

typedef enum RootEntryKind {
        ROOT_DIR,
        ROOT_SYMLINK,
        ROOT_FILE,
} RootEntryKind;

typedef struct RootEntry {
        RootEntryKind kind;
        const char *path;         /* relative to the root */
        mode_t mode;              /* ROOT_DIR, ROOT_FILE */
        const char *content;      /* ROOT_SYMLINK: the target; ROOT_FILE: the bytes */
        bool session_only;        /* only in a session's root */
        const char *reason;
} RootEntry;

extern const RootEntry sandbox_root_entries[];
extern const size_t sandbox_root_n_entries;

/* Host /etc entries the runtimes need, copied (files, directories, symlinks; never followed) into the
 * layer at <layer>/USR_LAYER_ETC/<name>, and linked from the sandbox's /etc. */
typedef struct EtcEntry {
        const char *name;
        const char *reason;
} EtcEntry;

extern const EtcEntry usr_layer_etc_entries[];
extern const size_t usr_layer_n_etc_entries;

/* Names below a copied /etc entry that are never copied (private keys). */
bool usr_layer_etc_skip(const char *relative_path);

/* Paths below /usr (without the leading "usr/") the layer hides with whiteouts when the host has
 * them: /usr/local, and sandboxd's own files. */
extern const char *const usr_layer_hidden[];
extern const size_t usr_layer_n_hidden;

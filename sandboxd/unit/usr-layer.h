/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The /usr layer: a directory sandboxd builds at start below its state directory, bound read-only
 * into every execution unit at SANDBOX_USR_LAYER, which sandbox-exec mounts as the upper of two
 * lower layers of an overlay over the host's /usr (sandbox-root.h says why). It holds whiteouts for
 * /usr/local and sandboxd's own files, and copies of the host /etc entries the runtimes need (the
 * sandbox's /etc links to them). A new layer per start (the host's /etc may have changed); layers of
 * earlier starts are removed once no execution they were given to can still be running. */

#include <stdbool.h>

/* Builds <state_dir>/usr-layers/<random name> and returns its path. Whiteouts (character device 0:0)
 * need no CAP_MKNOD since Linux 5.8; where mknod fails they are left out (logged), the rest is built.
 * preload (NULL: none): the strong tier's preload library (sandbox-exec/strong-preload.c), copied to
 * USR_LAYER_PRELOAD; where it is missing the layer has none (logged) and the strong tier runs without. */
int usr_layer_build(const char *state_dir, const char *preload, char **ret_path);

/* Removes every layer below <state_dir>/usr-layers except keep. */
int usr_layer_prune(const char *state_dir, const char *keep);

/* Writes the sandbox root skeleton (sandbox-root.h) into the directory root_fd. A session's root is
 * written again before each of its runs: what is there already and of the right kind stays. */
int sandbox_root_write(int root_fd, bool session);

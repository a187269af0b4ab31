/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* systemd's unit name escaping, as systemd-escape does it (systemd's unit_name_escape() and
 * unit_name_from_path()): the names of the workspace and session mount units are derived from their
 * paths, and systemd only finds a mount unit under the name it derives itself. Tested row by row
 * against what "systemd-escape" (252) prints. */

/* Every '/' becomes '-'; '-', '\' and every byte outside [A-Za-z0-9:_.] become "\xNN" (lower-case hex),
 * and so does a '.' at the very start. malloc'ed; NULL on OOM. */
char *unit_name_escape(const char *s);

/* "systemd-escape --path --suffix=SUFFIX" for suffix ".SUFFIX": repeated slashes are one, leading and
 * trailing ones go, the root is "-", the rest is escaped as above. No other normalisation ("." and
 * ".." components stay as they are: sandboxd only names its own paths). malloc'ed; NULL on OOM. */
char *unit_name_from_path(const char *path, const char *suffix);

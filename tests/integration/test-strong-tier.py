# SPDX-License-Identifier: LGPL-2.1-or-later
# The strong tier (issue 21, docs/isolation.md): "isolation": "strong" runs the program under gVisor's
# runsc inside its transient unit; the risk scan sends spawning programs there by itself.
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from lib import *  # noqa: E402,F401,F403

if not os.access("/usr/bin/runsc", os.X_OK):
    skip_all("no /usr/bin/runsc (the Debian package runsc; tools/install-deps installs it)")

t = Tap()
LIM = {"timeout_ms": 60000}

r = run("import os\nprint(os.uname().release)\n", isolation="strong", limits=LIM)
t.eq((r.get("status"), (r.get("isolation") or {}).get("tier")), ("success", "strong"),
     "isolation=strong: runs, and the record says the strong tier", r)
print("# " + json.dumps(r)[:3000])
host = os.uname().release
t.ok(r.get("stdout", "").strip() not in ("", host), "the kernel the program sees is gVisor's, not the host's",
     (r.get("stdout"), host))
t.done()

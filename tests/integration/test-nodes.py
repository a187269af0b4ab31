# SPDX-License-Identifier: LGPL-2.1-or-later
# The node registry (issue 22, [Cluster] of sandboxd.conf): GET /v1/health names this node and lists
# the registry, the heartbeat renews the lease, every start takes a new epoch, a clean stop ends the
# lease at once, a reload keeps the name, /metrics shows it all, and sandboxctl nodes lists it.
import json
import os
import re
import subprocess
import sys
import time
from datetime import datetime

sys.path.insert(0, os.path.dirname(__file__))
from lib import *  # noqa: E402,F401,F403

t = Tap()
ctl = os.path.join(BUILD, "sandboxctl", "sandboxctl")
confdir = os.environ["SANDBOXD_CONFIG_DIR"]
dropin = os.path.join(confdir, "sandboxd.conf.d", "60-nodes.conf")
NAME = "test-node.1"


def write_dropin(name):
    os.makedirs(os.path.dirname(dropin), exist_ok=True)
    with open(dropin, "w") as f:
        f.write(f"[Cluster]\nNodeName={name}\nNodeHeartbeatSec=1\nNodeLeaseSec=3\n")


def systemctl(verb):
    subprocess.run(["systemctl", verb, "sandboxd.service"], check=True)


def when(ts):
    return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()


def row(h, name):
    return next((n for n in h.get("nodes", []) if n["name"] == name), None)


def metrics():
    conn = UnixConnection(SOCKET, timeout=60)
    conn.request("GET", "/metrics")
    body = conn.getresponse().read().decode()
    conn.close()
    return body


write_dropin(NAME)
systemctl("restart")

# ---- health: this node and the registry ----
h = health()
node = h.get("node", {})
t.eq(node.get("name"), NAME, "health names the node from NodeName= of the drop-in")
epoch = node.get("epoch", 0)
t.ok(isinstance(epoch, int) and epoch >= 1, "it is registered, with an epoch", node)
t.ok(node.get("lease_expires_at") and when(node["lease_expires_at"]) > time.time(), "its lease is in force", node)
r = row(h, NAME)
t.ok(r is not None and r["epoch"] == epoch and r["alive"] is True and r["slots"] == h["slots"]
     and set(r) == {"name", "epoch", "started_at", "heartbeat_at", "lease_expires_at", "alive", "slots", "running"},
     "the registry lists it: alive, its slots, every field", h.get("nodes"))

# ---- the heartbeat renews the lease (NodeHeartbeatSec=1) ----
first = r["heartbeat_at"] if r else None
t.ok(wait_until(lambda: (row(health(), NAME) or {}).get("heartbeat_at") not in (None, first), 4),
     "heartbeat_at advances within a few heartbeats")
r2 = row(health(), NAME) or {}
t.ok(first and r2.get("heartbeat_at") and when(r2["lease_expires_at"]) - when(r2["heartbeat_at"]) == 3,
     "the lease runs NodeLeaseSec= past the heartbeat", r2)
t.eq(r2.get("epoch"), epoch, "a heartbeat keeps the epoch")

# ---- a running execution shows in the heartbeat's count ----
st, res = submit("import time\ntime.sleep(3)", execution_id="nodes_busy")
t.ok(wait_until(lambda: (row(health(), NAME) or {}).get("running") == 1, 5), "running counts the execution",
     row(health(), NAME))

# ---- /metrics ----
text = metrics()
t.ok(f'sandboxd_node_info{{node="{NAME}"}} 1' in text.splitlines(), "sandboxd_node_info names the node")
m = re.search(r'^sandboxd_cluster_nodes\{state="alive"\} (\d+)$', text, re.M)
t.ok(m and int(m.group(1)) >= 1, "sandboxd_cluster_nodes counts it alive")
t.ok(re.search(r'^sandboxd_cluster_nodes\{state="expired"\} \d+$', text, re.M), "and the expired ones")
m = re.search(r'^sandboxd_node_lease_expires_seconds\{node="' + re.escape(NAME) + r'"\} (\S+)$', text, re.M)
t.ok(m and float(m.group(1)) > time.time(), "sandboxd_node_lease_expires_seconds is ahead of the clock")
for fam in ("sandboxd_node_info", "sandboxd_cluster_nodes", "sandboxd_node_lease_expires_seconds"):
    t.ok(f"# TYPE {fam} gauge" in text and f"# HELP {fam} " in text, f"{fam} has HELP and TYPE")

# ---- sandboxctl nodes ----
p = subprocess.run([ctl, "nodes"], capture_output=True, text=True)
line = next((ln for ln in p.stdout.splitlines() if ln.startswith(NAME + " ")), "")
t.ok(p.returncode == 0 and line and " alive " in line and f" {epoch} " in line, "sandboxctl nodes lists the node alive",
     p.stdout + p.stderr)
t.ok(p.stdout.splitlines()[0].split()[:3] == ["NODE", "EPOCH", "STATE"] and "node" in p.stdout.splitlines()[-1],
     "with a header and a count", p.stdout)
p = subprocess.run([ctl, "nodes", "--json"], capture_output=True, text=True)
t.ok(p.returncode == 0 and row(json.loads(p.stdout or "{}"), NAME) is not None, "sandboxctl nodes --json", p.stderr)
get("nodes_busy", wait=True)

# ---- a reload keeps the name (NodeName= takes effect at restart) ----
write_dropin("renamed")
systemctl("reload")
h = health()
t.ok(h["node"]["name"] == NAME and h["node"]["epoch"] == epoch, "a reload keeps the name and the epoch", h["node"])
log = subprocess.run(["journalctl", "-u", "sandboxd.service", "-o", "cat", "--no-pager"], capture_output=True,
                     text=True).stdout
t.ok(f"NodeName= takes effect at the next restart; this node stays '{NAME}'" in log, "and says so in the log")
write_dropin(NAME)
systemctl("reload")

# ---- a clean stop ends the lease at once; the next start takes epoch + 1 ----
systemctl("stop")
got = store_row("SELECT epoch, lease_expires_usec, running FROM nodes WHERE node_name = ?", (NAME,))
got = tuple(int(v) for v in got) if got else None
t.ok(got is not None and got[0] == epoch and got[1] <= time.time() * 1e6 and got[2] == 0,
     "after a stop the row keeps its epoch and its lease has ended", got)
systemctl("start")
h = health()
t.eq(h["node"]["epoch"], epoch + 1, "the next start registers with epoch + 1")
r = row(h, NAME) or {}
t.ok(r.get("epoch") == epoch + 1 and r.get("alive") is True, "the old epoch is gone from the registry", h["nodes"])

systemctl("restart")
t.eq(health()["node"]["epoch"], epoch + 2, "a restart takes another epoch")

# ---- another name: the old row stays, expired ----
write_dropin("other-node")
systemctl("restart")
h = health()
old, new = row(h, NAME), row(h, "other-node")
t.ok(h["node"]["name"] == "other-node" and new and new["alive"] and new["epoch"] == 1, "a new name starts at epoch 1",
     h["nodes"])
t.ok(old is not None and old["alive"] is False and when(old["lease_expires_at"]) <= time.time(),
     "the name that left is listed, expired", old)
p = subprocess.run([ctl, "nodes"], capture_output=True, text=True)
t.ok(any(ln.startswith(NAME + " ") and " expired " in ln for ln in p.stdout.splitlines()),
     "sandboxctl nodes shows it expired", p.stdout)
m = re.search(r'^sandboxd_cluster_nodes\{state="expired"\} (\d+)$', metrics(), re.M)
t.ok(m and int(m.group(1)) >= 1, "sandboxd_cluster_nodes counts it expired")

# ---- fencing: another registration under the name (here: its epoch moved on in the database)
# refuses this node's heartbeats; it says so once, keeps its epoch, and does not take the name back ----
store_exec("UPDATE nodes SET epoch = epoch + 1 WHERE node_name = ?", ("other-node",))
fenced = "the registry holds a later epoch than ours (1): another sandboxd registered under this name"


def journal():
    return subprocess.run(["journalctl", "-u", "sandboxd.service", "-o", "cat", "--no-pager"],
                          capture_output=True, text=True).stdout


t.ok(wait_until(lambda: fenced in journal(), 5), "a refused heartbeat is logged", journal()[-1500:])
time.sleep(2.2)     # two more heartbeats
h = health()
t.ok(journal().count(fenced) == 1, "once, not at every heartbeat", journal().count(fenced))
t.ok(h["node"]["epoch"] == 1 and (row(h, "other-node") or {}).get("epoch") == 2,
     "the node keeps its epoch; the registry shows the later one", h)
t.eq(h["status"], "ok", "and the node goes on")

os.unlink(dropin)
systemctl("restart")
t.done()

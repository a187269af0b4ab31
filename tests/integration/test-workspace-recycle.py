# SPDX-License-Identifier: LGPL-2.1-or-later
# Workspaces of the default size are mounted once and recycled (issue 15, part 2):
#  (a) once the pool is full, executions change nothing in the host's mount table: the same mount
#      points below the workspaces directory and the same mount units before and after each of 30;
#  (b) a hostile program leaves links to /etc/shadow, / and a canary outside the mount, a fifo, a
#      socket, a 000 tree, a newline name, a 200-deep chain, a hard link and a file a background
#      process holds open, in /workspace, /workspace/output, /tmp and /var/tmp: the next execution
#      that gets the same tmpfs sees exactly what a fresh one sees, and nothing of the host changed;
#  (c) a program that leaves more names than the wipe budget costs its workspace: it is unmounted
#      and replaced (sandboxd_workspaces_replaced_total), nothing leaks;
#  and at stop, nothing of the pool is left (no mount, no mount unit), and a restart fills it again.
# It also prints (as a TAP comment, not asserted) the CPU time of PID 1 per execution.
import hashlib
import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from lib import *  # noqa: E402,F401,F403

t = Tap()
WS_DIR = "/run/sandboxd/workspaces"

# The warm pool off (its units hold workspaces of the pool, which this test counts): meson.build
# starts the daemon so (SANDBOX_HARNESS_POOL_SIZE=0); elsewhere (the VM tier) a drop-in and a reload
# do. test-warm-pool.py checks that the warm pool's workspaces are recycled too.
if health().get("pool", {}).get("size", 0) != 0:
    _dropin = os.path.join(os.environ["SANDBOXD_CONFIG_DIR"], "sandboxd.conf.d", "95-test-pool-off.conf")
    os.makedirs(os.path.dirname(_dropin), exist_ok=True)
    with open(_dropin, "w") as f:
        f.write("[Pool]\nSize=0\n")
    subprocess.run(["systemctl", "reload", "sandboxd.service"], check=False)
    t.ok(wait_until(lambda: health().get("pool", {}).get("size") == 0 and not health()["pool"].get("units")
                    and not [u for u in sandboxd_units() if u.startswith("sandboxd-warm-")], 45),
         "the warm pool is off for this test", health().get("pool"))
POOL = 16                # WorkspacePool= default; the harness does not change it
BUDGET = 50000           # WORKSPACE_WIPE_ENTRIES_MAX
CANARY_DIR = "/var/tmp/recycle-canary"
CANARY = CANARY_DIR + "/file"


def metrics():
    status, body = request("GET", "/metrics")
    out = {}
    for line in body.get("_raw", "").splitlines():
        m = re.match(r'^([a-z_]+) (\S+)$', line)
        if m:
            out[m.group(1)] = float(m.group(2))
    return out


def ws_mounts():
    """Mount points below WS_DIR in the host's (the harness's) mount table, with their devices."""
    out = {}
    with open("/proc/self/mountinfo") as f:
        for line in f:
            parts = line.split()
            mp = parts[4].encode().decode("unicode_escape")
            if mp.startswith(WS_DIR + "/"):
                out[mp] = parts[2]
    return out


def ws_units():
    res = subprocess.run(["systemctl", "list-units", "--all", "--type=mount", "--plain", "--no-legend",
                          "run-sandboxd-workspaces-*"], capture_output=True, text=True).stdout
    return sorted(l.split()[0] for l in res.splitlines() if l.strip())


def table():
    return (sorted(ws_mounts()), ws_units())


def dev_of(path):
    try:
        return os.stat(path).st_dev
    except OSError:
        return None


def path_of_dev(dev):
    for mp in ws_mounts():
        if dev_of(mp) == dev:
            return mp
    return None


def host_tree(path):
    """Every name below path (as root, from the host), with its type and mode."""
    res = []
    for root, dirs, files in os.walk(path):
        for n in dirs + files:
            p = os.path.join(root, n)
            st = os.lstat(p)
            res.append((os.path.relpath(p, path), oct(st.st_mode), st.st_uid))
    return sorted(res)


def pool_full():
    m = metrics()
    return (len(ws_mounts()) == POOL and len(ws_units()) == POOL and m.get("sandboxd_workspace_pool_ready") == POOL
            and all(os.path.isdir(os.path.join(mp, "tmp")) for mp in ws_mounts()))


def cpu_of(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])    # utime + stime, clock ticks


def file_state(path):
    st = os.lstat(path)
    with open(path, "rb") as f:
        return (hashlib.sha256(f.read()).hexdigest(), st.st_mode, st.st_uid, st.st_nlink, st.st_size, st.st_mtime_ns)


PROBE = r'''
import json, os
def walk(p):
    res = []
    for root, dirs, files in os.walk(p):
        for n in dirs + files:
            q = os.path.join(root, n)
            res.append([os.path.relpath(q, p), oct(os.lstat(q).st_mode)])
    return sorted(res)
print(json.dumps({"dev": os.stat("/").st_dev, "ws_dev": os.stat("/workspace").st_dev, "tmp": walk("/tmp"),
                  "var_tmp": walk("/var/tmp"), "workspace": walk("/workspace"), "root": sorted(os.listdir("/")),
                  "statvfs_used": os.statvfs("/tmp").f_blocks - os.statvfs("/tmp").f_bfree}))
'''

HOSTILE = r'''
import os, socket, sys, time
targets = ["/etc/shadow", "/", "CANARY_DIR", "CANARY", "../../../../../../..", "/run/sandboxd", "/proc/1/root"]
keep = []
# /tmp and /var/tmp are one directory of the workspace: names of their own in each.
for n, base in enumerate(["/workspace", "/workspace/output", "/tmp", "/var/tmp"]):
    os.makedirs(base, exist_ok=True)
    d = os.path.join(base, f"h{n}")
    os.mkdir(d)
    for i, tgt in enumerate(targets):
        os.symlink(tgt, f"{d}/link{i}")
    os.symlink("/", f"{base}/rootlink{n}")
    os.mkfifo(f"{d}/fifo")
    s = socket.socket(socket.AF_UNIX)
    s.bind(f"{d}/sock")
    keep.append(s)
    with open(f"{d}/new\nline", "w") as f:
        f.write("x")
    with open(f"{d}/file", "w") as f:
        f.write("x" * 100000)
    os.link(f"{d}/file", f"{d}/hardlink")
    os.makedirs(f"{d}/locked/a/b")
    with open(f"{d}/locked/a/b/f", "w") as f:
        f.write("x")
    for p in (f"{d}/locked/a/b", f"{d}/locked/a", f"{d}/locked"):
        os.chmod(p, 0)
    fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
    for k in range(200):
        os.mkdir("d", dir_fd=fd)
        nfd = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = nfd
    with open(os.open("bottom", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd), "w") as f:
        f.write("deep")
    os.close(fd)
# A background process that keeps a file open (and one unlinked) until the unit ends.
r, w = os.pipe()
if os.fork() == 0:
    os.setsid()
    f = open("/tmp/held", "w")
    f.write("held" * 1000)
    f.flush()
    g = open("/var/tmp/h3/unlinked-held", "w")
    g.write("y" * 100000)
    g.flush()
    os.unlink("/var/tmp/h3/unlinked-held")
    os.write(w, b"1")
    while True:
        time.sleep(1)
os.read(r, 1)
print(os.stat("/").st_dev)
'''.replace("CANARY_DIR", CANARY_DIR).replace('"CANARY"', '"' + CANARY + '"')


def run_probe():
    r = run(PROBE)
    try:
        return r, json.loads(r.get("stdout") or "")
    except ValueError:
        return r, None


def wait_quiet(before, key, n=1, timeout=20):
    return wait_until(lambda: metrics().get(key, 0) >= before.get(key, 0) + n, timeout)


# -- the pool full, and the host's side ---------------------------------------------------------
os.makedirs(CANARY_DIR, exist_ok=True)
with open(CANARY, "w") as f:
    f.write("canary")
canary0 = file_state(CANARY)
shadow0 = file_state("/etc/shadow") if os.path.exists("/etc/shadow") else None
t.ok(wait_until(pool_full, 60), "the pool is full: %d workspaces mounted, %d mount units" % (POOL, POOL),
     (table(), metrics().get("sandboxd_workspace_pool_ready")))
m0 = metrics()
t.ok("sandboxd_workspaces_recycled_total" in m0 and "sandboxd_workspaces_replaced_total" in m0,
     "the recycling counters are in /metrics", sorted(k for k in m0 if "workspace" in k))
fresh_root = host_tree(sorted(ws_mounts())[0])

# -- (a) 30 executions: the mount table does not change -------------------------------------------
r, first = run_probe()
t.ok(first is not None and r.get("status") == "success", "a probe runs", r)
baseline = {k: first[k] for k in ("tmp", "var_tmp", "workspace", "root")} if first else None
t.ok(first is not None and first["dev"] == first["ws_dev"] and path_of_dev(first["dev"]) is not None,
     "the probe's / and /workspace are one pool workspace's tmpfs", first)
wait_until(pool_full, 10)
table0 = table()
changed = []
devs = set()
pid1_cpu0 = cpu_of(1)
N = 30
for i in range(N):
    r, probe = run_probe()
    if probe:
        devs.add(probe["dev"])
    if table() != table0:
        changed.append(i)
pid1_cpu = cpu_of(1) - pid1_cpu0
print(f"# PID 1 CPU over {N} executions: {pid1_cpu * 1000 / os.sysconf('SC_CLK_TCK') / N:.2f} ms per execution",
      flush=True)
t.eq(changed, [], f"none of {N} executions changed the mount points below {WS_DIR} or the mount units")
wait_until(pool_full, 10)
t.eq(table(), table0, "after them the same mounts and mount units are there")
t.ok(wait_quiet(m0, "sandboxd_workspaces_recycled_total", N + 1), f"{N + 1} workspaces recycled",
     {k: v for k, v in metrics().items() if "workspaces_" in k})
t.ok(metrics().get("sandboxd_workspaces_replaced_total") == m0.get("sandboxd_workspaces_replaced_total"),
     "none replaced")
t.ok(len(devs) < N, f"the executions reused workspaces ({len(devs)} tmpfs for {N} runs)")

# -- (b) a hostile program, and who gets its workspace after it ------------------------------------
m1 = metrics()
r = run(HOSTILE, limits={"timeout_ms": 20000})
t.verdict(r, "success", None, "the hostile program ran")
hostile_dev = int((r.get("stdout") or "0").strip() or 0)
hostile_path = path_of_dev(hostile_dev)
t.ok(hostile_path is not None, "its workspace is a pool workspace", (hostile_dev, ws_mounts()))
t.ok(wait_quiet(m1, "sandboxd_workspaces_recycled_total"), "its workspace was wiped and is ready again",
     {k: v for k, v in metrics().items() if "workspaces_" in k})
t.eq(metrics().get("sandboxd_workspaces_replaced_total"), m1.get("sandboxd_workspaces_replaced_total"),
     "it was not replaced")
t.eq(path_of_dev(hostile_dev), hostile_path, "the same tmpfs is still mounted there")
if hostile_path:
    t.eq(host_tree(hostile_path), fresh_root, "seen from the host, its root holds only the skeleton, as a fresh one")
t.eq(file_state(CANARY), canary0, "the canary outside the mount is intact")
t.ok(os.path.isdir("/run/sandboxd") and os.path.exists(SOCKET), "/run/sandboxd is intact")
if shadow0:
    t.eq(file_state("/etc/shadow"), shadow0, "the host's /etc/shadow is untouched")
t.eq(table(), table0, "the hostile run changed nothing in the mount table either")
seen = None
for i in range(3 * POOL):
    r, probe = run_probe()
    if probe and probe["dev"] == hostile_dev:
        seen = probe
        break
t.ok(seen is not None, "a later execution got the recycled workspace")
if seen and baseline:
    t.eq(seen["tmp"], [], "it sees an empty /tmp")
    t.eq(seen["var_tmp"], [], "it sees an empty /var/tmp")
    t.eq(seen["workspace"], baseline["workspace"], "its /workspace is what a fresh workspace has")
    t.eq(seen["root"], baseline["root"], "its / is the fresh skeleton")
    t.eq(seen["statvfs_used"], first["statvfs_used"], "no block of the hostile run is still in use")
t.eq(program_processes(), [], "the background process did not survive")

# -- (c) more names than the budget: the workspace is replaced --------------------------------------
m2 = metrics()
wait_until(pool_full, 10)
devs_before = {dev_of(mp): mp for mp in ws_mounts()}
r = run("import os\nopen('/tmp/f', 'w').close()\nos.mkdir('/tmp/l')\n"
        f"for i in range({BUDGET + 100}):\n    os.link('/tmp/f', '/tmp/l/%d' % i)\nprint(os.stat('/').st_dev)\n",
        limits={"timeout_ms": 60000})
t.verdict(r, "success", None, f"a program leaves {BUDGET + 100} names")
big_dev = int((r.get("stdout") or "0").strip() or 0)
t.ok(wait_quiet(m2, "sandboxd_workspaces_replaced_total"), "its workspace was replaced",
     {k: v for k, v in metrics().items() if "workspaces_" in k})
# (A fresh tmpfs may get the same device number: the mount point says which one is gone.)
big_path = devs_before.get(big_dev)
t.ok(big_path is not None, "it ran in a pool workspace", (big_dev, devs_before))
t.ok(wait_until(lambda: big_path not in ws_mounts() and os.path.basename(big_path or "") not in
                " ".join(ws_units()), 20), "its tmpfs is unmounted and its mount unit gone", table())
t.ok(wait_until(pool_full, 30), "the pool mounted a fresh one: again %d mounts and mount units" % POOL, table())
t.eq(metrics().get("sandboxd_workspaces_recycled_total"), m2.get("sandboxd_workspaces_recycled_total"),
     "it was not counted as recycled")
units = ws_units()
t.ok(all(subprocess.run(["systemctl", "is-active", "--quiet", u]).returncode == 0 for u in units),
     "every workspace mount unit left is active (no failed or stale one)", units)

# -- a non-default size keeps its own mount, unmounted after the run --------------------------------
wait_until(pool_full, 10)
table1 = table()
r = run("import os\nprint(os.stat('/').st_dev)\n", limits={"disk_mb": 64})
t.verdict(r, "success", None, "a run with its own disk_mb")
t.ok(int(r.get("stdout") or 0) not in [dev_of(mp) for mp in table1[0]], "it did not run in a pool workspace")
t.ok(wait_until(lambda: table() == table1, 20), "its own mount is gone afterwards, the pool is as it was",
     (table1, table()))

# -- a reload that lowers WorkspacePool= drains the pool; a workspace lent before it is not taken back -
CONF = os.environ.get("SANDBOXD_CONFIG_DIR")
if CONF:
    dropin = os.path.join(CONF, "sandboxd.conf.d", "recycle.conf")
    os.makedirs(os.path.dirname(dropin), exist_ok=True)
    m3 = metrics()
    wait_until(pool_full, 10)
    st, res = submit("import time\ntime.sleep(4)\n", execution_id="recycle_reload")
    eid = res.get("id") or "recycle_reload"
    t.ok(st in (200, 201, 202) and wait_until(lambda: health()["running"] == 1, 10), "a run holds a workspace", res)
    with open(dropin, "w") as f:
        f.write("[Sandbox]\nWorkspacePool=4\n")
    subprocess.run(["systemctl", "reload", "sandboxd.service"], check=True)
    t.ok(wait_until(lambda: len(ws_mounts()) == 5 and len(ws_units()) == 5, 20),
         "a reload to WorkspacePool=4 leaves 4 pool workspaces and the one in use", table())
    get(eid, wait=True)
    t.ok(wait_until(lambda: len(ws_mounts()) == 4 and len(ws_units()) == 4, 20),
         "the one lent before the reload is unmounted when its run ends, not taken back", table())
    t.eq(metrics().get("sandboxd_workspaces_recycled_total"), m3.get("sandboxd_workspaces_recycled_total"),
         "it was not recycled")
    os.unlink(dropin)
    subprocess.run(["systemctl", "reload", "sandboxd.service"], check=True)
    t.ok(wait_until(pool_full, 30), "raised again, the pool fills up to 16", table())

# -- stop: nothing of the pool is left; start: the sweep and the pool as before ---------------------
subprocess.run(["systemctl", "stop", "sandboxd.service"], check=True)
wait_until(lambda: table() == ([], []), 20)
t.eq(table(), ([], []), "after stop: no workspace mount, no workspace mount unit")
left = os.listdir(WS_DIR) if os.path.isdir(WS_DIR) else []
subprocess.run(["systemctl", "start", "sandboxd.service"], check=True)
wait_until(lambda: os.path.exists(SOCKET) and health().get("status") == "ok", 30)
t.ok(wait_until(pool_full, 60), "after start the pool is full again", table())
t.ok(wait_until(lambda: sorted(os.listdir(WS_DIR)) == sorted(os.path.basename(p) for p in ws_mounts()), 30),
     "the start-up sweep left only the pool's directories", (left, os.listdir(WS_DIR)))
t.eq(file_state(CANARY), canary0, "the canary is still intact")
t.done()

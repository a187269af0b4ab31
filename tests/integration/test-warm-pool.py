# SPDX-License-Identifier: LGPL-2.1-or-later
# The warm pool: units started ahead of demand, one program each. A warm run sees what a cold run of
# the same request sees (but the preloaded modules), runs under the limits it asked for, leaves
# nothing for the next claim, and the pool survives restarts, reloads, kills and stops without
# leaking units, workspaces or file descriptors.
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from lib import *  # noqa: E402,F401,F403

t = Tap()
WS_DIR = "/run/sandboxd/workspaces"


def metric(name):
    st, body = request("GET", "/metrics")
    total = None
    for line in body.get("_raw", "").splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            total = (total or 0) + float(line.rsplit(" ", 1)[1])
    return total


def pool():
    return health().get("pool", {})


def active(unit):
    return subprocess.run(["systemctl", "show", "-P", "ActiveState", unit], capture_output=True,
                          text=True).stdout.strip()


def prop(unit, name):
    return subprocess.run(["systemctl", "show", "-P", name, unit], capture_output=True, text=True).stdout.strip()


def gone(unit):
    return active(unit) in ("inactive", "") and unit not in sandboxd_units()


def daemon_fds():
    pid = daemon_pid()
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return -1


def restarted(old_pid):
    return wait_until(lambda: subprocess.run(["systemctl", "is-active", "-q", "sandboxd.service"]).returncode == 0
                      and daemon_pid() not in (0, old_pid) and health().get("status") == "ok", 30)


def stray_workspace_dirs():
    """Directories below the workspaces directory that are not a mount point: nothing should be there."""
    mounts = set()
    with open("/proc/self/mountinfo") as f:
        for line in f:
            mounts.add(line.split()[4])
    try:
        names = os.listdir(WS_DIR)
    except OSError:
        return []
    return sorted(n for n in names if os.path.join(WS_DIR, n) not in mounts)


HAVE_NUMPY = subprocess.run(["/usr/bin/python3", "-c", "import numpy"], capture_output=True).returncode == 0

# -- the pool fills ------------------------------------------------------------------------------
t.ok(wait_until(lambda: all(pool().get("ready", {}).get(l, 0) >= 2 for l in ("python", "node", "bash")), 60, 0.2),
     "the pool fills: two ready units each for python, node and bash (Size=2, the default)", pool())
# python with PythonPreload= keeps Size= of each kind: preloaded and plain.
t.ok(wait_until(lambda: pool_ready_kinds("python") == (2, 2), 60, 0.2),
     "python: two preloaded and two plain ready units (pool.preloaded counts the first)", pool())
p = pool()
t.eq(p.get("size"), 2, "health: pool.size is Size=")
t.eq(sorted(p.get("preloaded", {})), ["python"], "health: pool.preloaded only for python, which preloads")
t.ok(all(u.startswith("sandboxd-warm-") and u.endswith(".service") for u in p.get("units", [])) and
     len(p.get("units", [])) >= 8, "health: pool.units names the unclaimed units", p)
t.ok(all(active(u) == "active" for u in p["units"]), "every pool unit is active", {u: active(u) for u in p["units"]})
t.eq(metric('sandboxd_pool_ready_units{language="python"}'), 4.0,
     "metrics: sandboxd_pool_ready_units by language (both kinds)")
t.eq(metric('sandboxd_pool_ready_units{language="bash"}'), 2.0, "metrics: one kind for bash")
t.ok((metric("sandboxd_pool_refill_seconds_count") or 0) >= 8, "metrics: every ready unit's refill was timed",
     metric("sandboxd_pool_refill_seconds_count"))

# Which kind a run takes: the one its source asks for (warm_wants_preload(): a preloaded module or a
# module that imports one, named as a word), else whichever is ready; either runs it.
LIST_NUM = "import sys; print(sorted(m for m in sys.modules if m.split('.')[0] == 'num' + 'py'))"
wait_pool_ready()
plain = run(LIST_NUM)
t.ok(plain.get("start") == "warm" and plain.get("stdout") == "[]\n",
     "a source that names no preloaded module runs in a plain interpreter", plain.get("stdout"))
wait_pool_ready()
pre = run("import numpy\n" + LIST_NUM)
if HAVE_NUMPY:
    t.ok(pre.get("start") == "warm" and pre.get("stdout", "").startswith("['numpy'") and
         pre.get("status") == "success", "one that imports numpy runs in a preloaded one",
         {k: pre.get(k) for k in ("start", "status", "stdout", "stderr")})
else:
    # Without numpy on the machine (the VM image) it fails as a cold run would, warm all the same.
    t.ok(pre.get("start") == "warm" and pre.get("status") == "failed" and
         "No module named 'numpy'" in pre.get("stderr", ""), "one that imports numpy runs warm (no numpy here)",
         {k: pre.get(k) for k in ("start", "status", "stderr")})

# -- a warm run sees what a cold run of the same request sees ------------------------------------
PROBE = r"""
import os, sys, json, time
print(json.dumps({
    "env": dict(os.environ), "cwd": os.getcwd(), "argv": sys.argv, "name": __name__, "file": __file__,
    "path0": sys.path[0], "hash": hash("sandboxd"), "uid_dynamic": 61184 <= os.getuid() <= 65519,
    "umask": os.umask(0o022), "tz": time.tzname, "numpy_loaded": "numpy" in sys.modules,
    "fds": sorted(int(f) for f in os.listdir("/proc/self/fd")),
    "main": sys.modules["__main__"].__dict__.get("__name__"),
}, sort_keys=True))
"""
wait_pool_ready()
warm = run(PROBE, env={"FOO": "bar", "ZZZ": "last"}, seed=42)
cold = run(PROBE, env={"FOO": "bar", "ZZZ": "last"}, seed=42, start="cold")
t.eq((warm.get("start"), cold.get("start")), ("warm", "cold"), "start: warm from the pool, cold when asked for")
t.ok(warm["unit"].startswith("sandboxd-warm-") and cold["unit"] == f"sandboxd-{cold['record_id']}.service",
     "unit: the pool's name for a warm run, the record id's for a cold one", (warm["unit"], cold["unit"]))
try:
    w, c = json.loads(warm["stdout"]), json.loads(cold["stdout"])
except ValueError:
    w, c = {}, {}
    t.ok(False, "the probes printed JSON", (warm, cold))
# PythonPreload=numpy imports it where it is installed (a module that fails to import is left out).
t.eq(w.get("numpy_loaded"), HAVE_NUMPY,
     f"the warm runtime has numpy imported already where it is installed ({HAVE_NUMPY}; the documented difference)")
t.eq(c.get("numpy_loaded"), False, "a cold one has not")
for k in ("env", "cwd", "argv", "name", "file", "path0", "hash", "uid_dynamic", "umask", "tz", "fds", "main"):
    t.eq(w.get(k), c.get(k), f"warm and cold see the same {k}")
t.eq(w.get("env", {}).get("SANDBOX_SEED"), "42", "the request's seed is in force")
t.eq(w.get("env", {}).get("FOO"), "bar", "the request's env is in force")
t.eq(w.get("env", {}).get("PYTHONHASHSEED"), "0", "PYTHONHASHSEED=0 as on a cold start")
# What the preload costs, measured here (machines differ: the VM tier emulates its CPU).
imp = run("import numpy", start="cold")
t.ok(warm.get("cpu_time_ms") is not None and imp.get("cpu_time_ms") and
     warm["cpu_time_ms"] < 0.7 * imp["cpu_time_ms"],
     "cpu_time_ms is the program's, not the runtime's start and imports",
     (warm.get("cpu_time_ms"), imp.get("cpu_time_ms")))

# A warm python ends without tearing its modules down (os._exit after what the interpreter's exit
# does for the program): everything a program can see of its own exit is the same as a cold run's.
EXITS = {
    "a file left open in a global is written": "f = open('output/a.txt', 'w'); f.write('x' * 10)",
    "a file left open in another module is written":
        "import sys, types\nm = types.ModuleType('m'); sys.modules['m'] = m\n"
        "m.f = open('output/m.txt', 'w'); m.f.write('in m')",
    "__del__ of a global runs": "class C:\n  def __del__(self): print('del')\nc = C()",
    "atexit handlers run": "import atexit\natexit.register(lambda: print('bye'))",
    "non-daemon threads are joined": "import threading, time\n"
                                     "threading.Thread(target=lambda: (time.sleep(0.2), print('thr'))).start()",
    "sys.exit(str) prints it, status 1": "import sys; sys.exit('boom')",
    "sys.exit(259): the low byte": "import sys; sys.exit(259)",
    "an exception: traceback, status 1": "raise ValueError('v')",
    "unflushed stdout is written": "import sys; sys.stdout.write('partial')",
    "stdout that cannot be flushed: 120": "import os; os.close(1); print('x')",
}
for name, code in EXITS.items():
    wait_pool_ready()
    w, c = run(code), run(code, start="cold")
    same = lambda r: (r.get("status"), r.get("exit_code"), r.get("stdout"), r.get("stderr"),
                      sorted((a.get("path"), a.get("size")) for a in r.get("artifacts", [])))
    t.ok(w.get("start") == "warm" and c.get("start") == "cold" and same(w) == same(c),
         f"exit parity: {name}", {"warm": same(w), "cold": same(c)})
w = run("import gc; print(gc.get_freeze_count() > 0)")
t.eq((w.get("start"), w.get("stdout")), ("warm", "True\n"),
     "the preloaded modules are frozen out of the collector (the documented gc.get_freeze_count())")

for lang, code, want in (("bash", 'echo "$FOO $SANDBOX_SEED $PWD"', "bar 42 /workspace\n"),
                         ("node", "console.log(process.env.FOO, process.env.SANDBOX_SEED, process.cwd())",
                          "bar 42 /workspace\n")):
    wait_pool_ready(lang)
    r = run(code, language=lang, env={"FOO": "bar"}, seed=42)
    t.ok(r.get("start") == "warm" and r.get("stdout") == want and r.get("status") == "success",
         f"{lang}: a warm run gets its environment and seed", {k: r.get(k) for k in ("start", "stdout", "stderr")})

# Requests a warm unit cannot serve start cold, correctly.
for name, fields in (("a cold start asked for", {"start": "cold"}),
                     ("input files", {"files": [{"path": "a.txt", "content_base64": "eA=="}]}),
                     ("disk_mb other than the default", {"limits": {"disk_mb": 64}}),
                     ("memory_mb below MinMemoryMB=", {"limits": {"memory_mb": 64}}),
                     ("env read by the runtime as it starts", {"env": {"OPENBLAS_NUM_THREADS": "1"}})):
    wait_pool_ready()
    r = run("print('ok')", **fields)
    t.ok(r.get("start") == "cold" and r.get("status") == "success" and r.get("stdout") == "ok\n",
         f"{name}: starts cold and succeeds", {k: r.get(k) for k in ("start", "status", "stdout", "stderr")})
st, r = request("POST", "/v1/executions", {"language": "python", "code": "1", "start": "hot"})
t.ok(st == 400 and r.get("error", {}).get("field") == "start", "start: anything but auto or cold is refused", r)

# -- single use ---------------------------------------------------------------------------------
wait_pool_ready(n=2)
first = run("import os, subprocess\nopen('/tmp/left', 'w').write('x')\nopen('/workspace/left', 'w').write('x')\n"
            "os.environ['LEFT'] = '1'\nos.putenv('LEFT2', '1')\n"
            "subprocess.Popen(['/bin/sleep', '300'], start_new_session=True)\nprint(os.getpid())\n")
t.eq((first.get("status"), first.get("start")), ("success", "warm"), "a run that leaves things behind ran warm")
t.ok(wait_until(lambda: gone(first["unit"]), 10), "its unit is gone after it", (first["unit"], active(first["unit"])))
second = run("import os, json\nprint(json.dumps({'tmp': os.path.exists('/tmp/left'),"
             " 'ws': os.path.exists('/workspace/left'), 'env': [k for k in os.environ if k.startswith('LEFT')],"
             " 'procs': sorted(int(p) for p in os.listdir('/proc') if p.isdigit() and int(p) != os.getpid()),"
             " 'sleep': [open(f'/proc/{p}/cmdline').read() for p in os.listdir('/proc') if p.isdigit()"
             " and 'sleep' in open(f'/proc/{p}/cmdline').read()]}))\n")
t.eq(second.get("start"), "warm", "the next claim of the pool is warm too")
t.ok(second.get("unit") != first.get("unit"), "and a different unit", (first.get("unit"), second.get("unit")))
try:
    s = json.loads(second["stdout"])
except ValueError:
    s = {}
t.eq(s.get("tmp"), False, "the next claim sees no /tmp file of the first")
t.eq(s.get("ws"), False, "nor its workspace file")
t.eq(s.get("env"), [], "nor its environment changes")
t.eq(s.get("sleep"), [], "nor its background process")
t.eq(program_processes(), [], "the background process died with the first unit")

# -- limits: a warm run's are the request's, the same as a cold run's ----------------------------
def both(code, **fields):
    wait_pool_ready()
    w = run(code, **fields)
    c = run(code, start="cold", **fields)
    t.eq((w.get("start"), c.get("start")), ("warm", "cold"), f"{fields}: one warm and one cold run")
    return w, c


# The unit's own limits, as systemd has them, while a warm run with non-default ones runs.
wait_pool_ready()
st, a = submit("import time\ntime.sleep(2)\n", limits={"memory_mb": 192, "tasks": 24, "cpu_cores": 0.5})
t.ok(wait_until(lambda: get(a["execution_id"])[1].get("status") == "running", 10), "a warm run with its own limits runs")
u = get(a["execution_id"])[1]["unit"]
# The record says running from the claim; the program itself starts once systemd has the limits.
want = (str(192 << 20), "24", "500ms")
t.ok(wait_until(lambda: (prop(u, "MemoryMax"), prop(u, "TasksMax"), prop(u, "CPUQuotaPerSecUSec")) == want, 5),
     "systemd has the claim's MemoryMax=, TasksMax= and CPUQuota= on the warm unit",
     (prop(u, "MemoryMax"), prop(u, "TasksMax"), prop(u, "CPUQuotaPerSecUSec")))
t.eq(get(a["execution_id"], wait=True)[1].get("start"), "warm", "(it was warm)")

w, c = both("x = []\nwhile True:\n    x.append(bytearray(1 << 20))\n", limits={"memory_mb": 192})
t.eq([(r.get("status"), r.get("error_type")) for r in (w, c)], [("failed", "oom")] * 2,
     "memory bomb: oom at its own memory_mb=192, warm and cold")
t.ok(all(r.get("peak_memory_mb") is not None and r["peak_memory_mb"] <= 193 for r in (w, c)),
     "both peaks at most memory_mb", [r.get("peak_memory_mb") for r in (w, c)])

# The loop's own CPU time (the interpreter's start is not the quota's to judge, and is slow where the
# CPU is emulated).
w, c = both("import time\nt0 = time.process_time()\nend = time.monotonic() + 1.0\nwhile time.monotonic() < end:\n"
            "    pass\nprint(int((time.process_time() - t0) * 1000))\n", limits={"cpu_cores": 0.25})
cw, cc = int(w.get("stdout") or 0), int(c.get("stdout") or 0)
t.ok(150 <= cw <= 450 and 150 <= cc <= 450, "cpu_cores=0.25: a 1 s busy loop gets about 250 ms of CPU, warm and cold",
     (cw, cc))

TASKS = r"""
import os
threads = len(os.listdir('/proc/self/task'))
kids = []
while True:
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        import time
        time.sleep(30)
        os._exit(0)
    kids.append(pid)
print(threads + len(kids))
"""
w, c = both(TASKS, limits={"tasks": 24})
t.ok(w.get("stdout") == c.get("stdout") and 20 <= int(w.get("stdout") or 0) <= 24,
     "tasks=24: threads and forked processes stop at the same count, at most 24, warm and cold",
     (w.get("stdout"), c.get("stdout")))

w, c = both("while True: pass\n", limits={"timeout_ms": 1500})
t.eq([(r.get("status"), r.get("error_type")) for r in (w, c)], [("failed", "timeout")] * 2,
     "timeout_ms=1500: both time out")
t.ok(all(1400 <= (r.get("duration_ms") or 0) <= 2500 for r in (w, c)),
     "the deadline runs from the claim, as from a cold start", [r.get("duration_ms") for r in (w, c)])

# -- a ready unit that dies is replaced -------------------------------------------------------------
wait_pool_ready(n=2)
died0 = metric('sandboxd_pool_retired_total{reason="died"}') or 0
victim = sorted(pool()["units"])[0]
subprocess.run(["systemctl", "kill", "-s", "KILL", victim], capture_output=True)
t.ok(wait_until(lambda: victim not in pool().get("units", []) and gone(victim), 10),
     "a killed ready unit leaves the pool and systemd", (victim, active(victim)))
t.ok(wait_until(lambda: (metric('sandboxd_pool_retired_total{reason="died"}') or 0) > died0, 5),
     "metrics: counted as died")
t.ok(wait_until(lambda: all(pool().get("ready", {}).get(l, 0) >= 2 for l in ("python", "node", "bash")), 30, 0.2),
     "and is replaced", pool())

# The preloaded interpreter of a ready unit dies (killed, out of memory) before any claim: the unit
# ends as a setup failure and is replaced; no request ever gets a dead runtime.
wait_pool_ready(n=2)
died0 = metric('sandboxd_pool_retired_total{reason="died"}') or 0
runtimes = {}
for pid in (p for p in os.listdir("/proc") if p.isdigit()):
    try:
        with open(f"/proc/{pid}/cmdline") as f:
            args = f.read()
    except OSError:
        continue
    try:
        with open(f"/proc/{pid}/comm") as f:
            comm = f.read().strip()
    except OSError:
        continue
    # sandbox-exec's own command line names the bootstrap too (after "--"): the interpreter's comm.
    if comm.startswith("python") and "_sandboxd_wait" in args and unit_of_pid(pid) in pool().get("units", []):
        runtimes[pid] = unit_of_pid(pid)
t.ok(len(runtimes) >= 2, "each ready python unit has its interpreter running (as the program's user)", runtimes)
if runtimes:
    pid, victim = sorted(runtimes.items())[0]
    with open(f"/proc/{pid}/status") as f:
        uid = [l.split()[1] for l in f if l.startswith("Uid:")][0]
    t.ok(61184 <= int(uid) <= 65519, "the waiting interpreter runs as the unit's dynamic user", uid)
    os.kill(int(pid), 9)
    t.ok(wait_until(lambda: victim not in pool().get("units", []) and gone(victim), 10),
         "its unit ends and leaves the pool", (victim, active(victim)))
    t.ok(wait_until(lambda: (metric('sandboxd_pool_retired_total{reason="died"}') or 0) > died0, 5),
         "counted as died")
    t.ok(wait_pool_ready(n=2), "and is replaced", pool())
    r = run("print('after')")
    t.ok(r.get("start") == "warm" and r.get("stdout") == "after\n", "the next request runs warm, normally",
         {k: r.get(k) for k in ("start", "stdout", "stderr", "reason")})

# -- reload: every ready unit is replaced by one of the new configuration -------------------------
before = set(pool()["units"])
subprocess.run(["systemctl", "reload", "sandboxd.service"], check=False)
t.ok(wait_until(lambda: not (before & (set(pool().get("units", [])) | set(sandboxd_units()))), 15),
     "reload: the ready units are stopped", sorted(before & set(sandboxd_units())))
t.ok(wait_until(lambda: pool().get("ready", {}).get("python", 0) >= 2, 30, 0.2), "and new ones are ready", pool())

# -- the workspaces of warm runs are recycled: claims change no mount ------------------------------
rec0 = metric("sandboxd_workspaces_recycled_total") or 0
for i in range(4):
    wait_pool_ready()
    run("print(1)")
t.ok(wait_until(lambda: (metric("sandboxd_workspaces_recycled_total") or 0) >= rec0 + 4, 10),
     "warm runs' workspaces go back to the workspace pool, wiped", (rec0, metric("sandboxd_workspaces_recycled_total")))

# -- restart with ready and claimed units ---------------------------------------------------------
for how in ("restart", "SIGKILL"):
    wait_until(lambda: all(pool().get("ready", {}).get(l, 0) >= 2 for l in ("python", "node", "bash")), 30, 0.2)
    wait_pool_ready()
    ready = set(pool()["units"])
    st, a = submit("import time\nprint('before', flush=True)\ntime.sleep(2.5)\nprint('after')\n")
    t.ok(wait_until(lambda: get(a["execution_id"])[1].get("status") == "running", 10), f"{how}: a warm run is running")
    claimed = get(a["execution_id"])[1]
    t.ok(claimed.get("start") == "warm" and claimed["unit"] in ready, f"{how}: it runs in a unit claimed from the pool",
         (claimed.get("start"), claimed.get("unit"), ready))
    old_pid = daemon_pid()
    if how == "restart":
        subprocess.run(["systemctl", "restart", "sandboxd.service"], check=False)
    else:
        os.kill(old_pid, 9)
    t.ok(restarted(old_pid), f"{how}: sandboxd is back")
    st, r = get(a["execution_id"], wait=True)
    t.ok(r.get("status") == "success" and r.get("stdout") == "before\nafter\n" and r.get("start") == "warm" and
         r.get("unit") == claimed["unit"], f"{how}: the claimed unit was adopted and finished with its whole output",
         {k: r.get(k) for k in ("status", "stdout", "start", "unit", "reason")})
    left = ready - {claimed["unit"]}
    t.ok(wait_until(lambda: not (left & set(sandboxd_units())), 15),
         f"{how}: the ready units of the previous instance are cleaned up", sorted(left & set(sandboxd_units())))
    t.ok(wait_until(lambda: gone(claimed["unit"]), 10), f"{how}: the claimed unit is gone after its run")
    t.ok(wait_until(lambda: pool().get("ready", {}).get("python", 0) >= 2 and
                    not (set(pool()["units"]) & ready), 30, 0.2),
         f"{how}: a new pool of new units is ready", pool())
    t.ok(wait_until(lambda: not execution_units(), 10), f"{how}: no execution unit is left", sandboxd_units())
    # An unmounted workspace directory is only a mount point left for the sweep to remove: empty.
    t.ok(wait_until(lambda: all(not os.listdir(os.path.join(WS_DIR, d)) for d in stray_workspace_dirs()), 10),
         f"{how}: no workspace is left but empty mount points", stray_workspace_dirs())
    t.eq(program_processes(), [], f"{how}: no process of a program is left")

# fds: a steady pool does not grow the daemon's table. Both counts are taken with the whole pool
# ready (every unit holds its control socket: a count taken while python's second kind was still
# refilling was lower by those, and the test failed once in CI).
def pool_full():
    r = pool().get("ready", {})
    return pool_ready_kinds("python") == (2, 2) and r.get("node", 0) == 2 and r.get("bash", 0) == 2


def steady_fds():
    """The daemon's fd count, read between two looks that find the whole pool ready; -1 if never."""
    got = []

    def look():
        if not pool_full():
            return False
        n = daemon_fds()
        if pool_full():
            got.append(n)
            return True
        return False
    wait_until(look, 30, 0.2)
    return got[-1] if got else -1


t.ok(wait_until(pool_full, 30, 0.2), "the whole pool is ready: 2+2 python, 2 node, 2 bash", pool())
time.sleep(1)
fds0 = steady_fds()
for i in range(10):
    wait_pool_ready()
    run("print(1)")
t.ok(wait_until(pool_full, 30, 0.2), "and again after ten warm runs", pool())
time.sleep(1)
fds1 = steady_fds()
t.ok(fds0 > 0 and 0 < fds1 <= fds0 + 2, "ten warm runs later the daemon holds no more file descriptors", (fds0, fds1))
# systemd's fd store holds the control socket of every unit of the pool (stored as it starts), and
# nothing of the runs that ended.
def fd_store():
    out = subprocess.run(["systemctl", "show", "-P", "NFileDescriptorStore", "sandboxd.service"],
                         capture_output=True, text=True).stdout.strip()
    return int(out) if out.isdigit() else -1
t.ok(wait_until(lambda: fd_store() == len(pool().get("units", [])) > 0, 10, 0.2),
     "the fd store holds one control socket per pool unit, none of finished runs",
     (fd_store(), len(pool().get("units", []))))

# -- stop: nothing of the pool outlives sandboxd ---------------------------------------------------
subprocess.run(["systemctl", "stop", "sandboxd.service"], check=False)


def pool_leftovers():
    return ([u for u in sandboxd_units() if u.startswith("sandboxd-warm-")],
            [u for u in sandboxd_units() if u.startswith("run-sandboxd-workspaces-")])


# Every stop was asked for and answered before sandboxd exited; an unmount may still be finishing.
t.ok(wait_until(lambda: pool_leftovers() == ([], []), 10),
     "after stop: no warm unit and no workspace mount unit is left", pool_leftovers())
t.eq(program_processes(), [], "after stop: no process of a runtime is left")
subprocess.run(["systemctl", "start", "sandboxd.service"], check=False)
t.ok(wait_until(lambda: health().get("status") == "ok" and pool().get("ready", {}).get("python", 0) >= 1, 30, 0.2),
     "after start the pool fills again", pool())

# -- a stop right after a reload: the units the reload started are still starting ----------------
# A unit retired while its start job was on its way once counted as gone at its first "inactive"
# (the state of a unit just created), then failed after sandboxd had exited, with nobody to reset
# it (the VM tier listed it after test-network and test-language-files, whose last step is a
# reload). Each round: reload, stop at once, nothing of the pool left.
left_after = []
for i in range(4):
    subprocess.run(["systemctl", "reload", "sandboxd.service"], check=False)
    subprocess.run(["systemctl", "stop", "sandboxd.service"], check=False)
    wait_until(lambda: pool_leftovers() == ([], []), 10)
    left_after.append(pool_leftovers())
    subprocess.run(["systemctl", "start", "sandboxd.service"], check=False)
    wait_until(lambda: health().get("status") == "ok" and pool().get("ready", {}).get("python", 0) >= 1, 30, 0.2)
t.eq(left_after, [([], [])] * 4, "a stop right after a reload leaves no warm unit and no workspace mount unit (4 rounds)")

t.done()

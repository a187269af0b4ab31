# SPDX-License-Identifier: LGPL-2.1-or-later
# Security round 2, classes 1 and 5, with real hostile programs in real units:
#  1. the program cannot signal, stop, ptrace or see its supervisor (sandbox-exec); "cancelled" comes
#     only from a cancel sandboxd was asked for (persisted across a daemon crash); whatever the
#     program does to processes, the verdict and the output are the program's;
#  5. the sandbox sees nothing of the host's layout (mountinfo, /, /run, /etc, /usr/local), shares no
#     lockable inode with a concurrent sandbox, and a session turn cannot poison the next one.
import json
import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
from lib import *  # noqa: E402,F401,F403

t = Tap()

# ---- 1. the supervisor is out of reach ---------------------------------------------------------

ATTACK = r'''
import ctypes, errno, json, os, signal
libc = ctypes.CDLL(None, use_errno=True)
pp = os.getppid()
out = {"ppid": pp}
print("before the attack", flush=True)
# No parent (pid 1 of a pid namespace of its own): kill(0) would be the program's own process group, so
# every other pid a supervisor might have instead; each answer that is not ESRCH is kept.
others = range(2, 4097) if pp == 0 else None
def sweep(call):
    found = {}
    for pid in others:
        try:
            call(pid); found[pid] = "OK"
        except OSError as e:
            if e.errno != errno.ESRCH:
                found[pid] = errno.errorcode[e.errno]
    return found or "ESRCH"
def ptrace_call(req):
    def call(pid):
        if libc.ptrace(req, pid, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "ptrace")
    return call
for name in ("SIGUSR1", "SIGSTOP", "SIGKILL", "SIGTERM", "SIGINT"):
    if others:
        out[name] = sweep(lambda pid: os.kill(pid, getattr(signal, name)))
        continue
    try:
        os.kill(pp, getattr(signal, name)); out[name] = "SENT"
    except OSError as e:
        out[name] = errno.errorcode[e.errno]
if others:
    out["ptrace"] = sweep(ptrace_call(16))
    out["ptrace seize"] = sweep(ptrace_call(0x4206))
else:
    r = libc.ptrace(16, pp, 0, 0)   # PTRACE_ATTACH
    out["ptrace"] = "ATTACHED" if r == 0 else errno.errorcode.get(ctypes.get_errno())
    r = libc.ptrace(0x4206, pp, 0, 0)   # PTRACE_SEIZE
    out["ptrace seize"] = "SEIZED" if r == 0 else errno.errorcode.get(ctypes.get_errno())
for f in ("status", "environ", "mem", "fd", "cmdline"):
    p = "/proc/%d/%s" % (pp, f)
    try:
        (os.listdir if f == "fd" else (lambda x: open(x, "rb").read(1)))(p); out[f] = "OPENED"
    except OSError as e:
        out[f] = errno.errorcode[e.errno]
out["visible pids"] = sorted(int(x) for x in os.listdir("/proc") if x.isdigit())
try:
    os.kill(-1, signal.SIGKILL)     # every process it may signal but itself: not the supervisor
    out["kill(-1) result"] = "SENT"
except OSError as e:
    out["kill(-1) result"] = errno.errorcode[e.errno]
out["kill(-1)"] = "survived"
print(json.dumps(out), flush=True)
print("after the attack", flush=True)
'''

# 4095 pids x 7 calls: under gVisor (ptrace platform) each call is a round trip through the Sentry, which took
# over 30 s in the TCG guest of the VM tier; the verdict is what is asserted, not the time.
r = run(ATTACK, limits={"timeout_ms": 180000})
t.verdict(r, "success", None, "the attacks on the supervisor end as the program's own success")
lines = r["stdout"].splitlines()
try:
    o = json.loads(lines[1])
except (ValueError, IndexError):
    o = {}
STRONG = (r.get("isolation") or {}).get("tier") == "strong"
print(f"# tier: {(r.get('isolation') or {}).get('tier')}")
if STRONG:
    # gVisor gives the program a pid namespace of its own, where it is pid 1 with no parent: the supervisor
    # (and runsc) are outside it, and whatever pid the program names is gVisor's, never the host's; kill(-1)
    # below reaches only gVisor's own processes.
    t.eq((o.get("ppid"), o.get("visible pids")), (0, [1]),
         "strong tier: the program is pid 1 of its own pid namespace, with no parent and nothing else in it")
    for sig in ("SIGUSR1", "SIGSTOP", "SIGKILL", "SIGTERM", "SIGINT"):
        t.eq(o.get(sig), "ESRCH", f"strong tier: kill(pid, {sig}) of every pid 2..4096 finds no process", r["stdout"])
    t.eq((o.get("ptrace"), o.get("ptrace seize")), ("ESRCH",) * 2,
         "strong tier: ptrace(PTRACE_ATTACH/SEIZE) of every pid 2..4096 finds no process")
    t.eq(o.get("kill(-1) result"), "ESRCH", "strong tier: kill(-1) finds no process to signal in gVisor")
else:
    for sig in ("SIGUSR1", "SIGSTOP", "SIGKILL", "SIGTERM", "SIGINT"):
        t.eq(o.get(sig), "EPERM", f"kill(getppid(), {sig}) is refused", r["stdout"])
    t.eq(o.get("ptrace"), "EPERM", "ptrace(PTRACE_ATTACH, getppid()) is refused")
    t.eq(o.get("ptrace seize"), "EPERM", "ptrace(PTRACE_SEIZE, getppid()) is refused")
for f in ("status", "environ", "mem", "fd", "cmdline"):
    t.eq(o.get(f), "ENOENT", f"/proc/<ppid>/{f} does not exist for the program")
t.ok(o.get("ppid") not in o.get("visible pids", [o.get("ppid")]), "the supervisor is not in the program's /proc",
     o.get("visible pids"))
t.eq(o.get("kill(-1)"), "survived", "kill(-1, SIGKILL) from the program leaves its supervisor (and the report) alive")
t.eq(lines[0] if lines else None, "before the attack", "the output before the attack is there")
t.eq(lines[-1] if lines else None, "after the attack", "the output after the attack is there")
t.ok("cancel" not in (r.get("reason") or ""), "a forged SIGUSR1 is no cancel", r.get("reason"))

# kill -9 -1: every process of the program's user but the caller dies; the supervisor (root) stays
# and reports everything, exactly.
r = run('echo before; sleep 60 & pid=$!; kill -9 -1; wait $pid; echo "sleep ended with $?"; exit 3\n',
        language="bash")
t.verdict(r, "failed", "runtime_error", "kill -9 -1 from bash: the program's own exit 3")
t.eq((r.get("exit_code"), r.get("stdout")), (3, "before\nsleep ended with 137\n"),
     "kill -9 -1 killed the program's own sleep, not its supervisor; the output is whole")

# The program kills its whole process group and itself: a signal death of the program, with its output.
r = run("import os, signal\nprint('last words', flush=True)\nos.killpg(0, signal.SIGKILL)\n")
t.verdict(r, "failed", "runtime_error", "the program kills its own process group")
t.eq((r.get("signal"), r.get("stdout")), (9, "last words\n"), "signal 9 and the output before it")

# A real cancel is still a cancel.
st, res = submit("import time\nprint('started', flush=True)\ntime.sleep(60)\n")
eid = res.get("execution_id")
wait_until(lambda: get(eid)[1].get("status") == "running", timeout=20)
# Cancelled once its print is in the live output, so after sandbox-exec has it however slow the
# machine (the VM tier emulates its CPU; in the strong tier the Sentry stands between).
t.ok(wait_stdout(eid, "started\n"), "the program's print is in its live output")
st, _ = request("POST", f"/v1/executions/{eid}/cancel")
st, res = get(eid, wait=True)
t.eq((res.get("status"), res.get("reason")), ("cancelled", "cancelled by the caller"), "a caller's cancel")
t.eq(res.get("stdout"), "started\n", "a cancel keeps the output")

# A cancel asked for just before sandboxd dies is still the verdict after the restart: it is recorded
# before the signal goes out, and adopted with the execution.
st, res = submit("import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nprint('up', flush=True)\n"
                 "time.sleep(20)\nprint('not cancelled')\n")
eid = res.get("execution_id")
wait_until(lambda: get(eid)[1].get("status") == "running", timeout=20)
time.sleep(0.3)
old_pid = daemon_pid()
st, _ = request("POST", f"/v1/executions/{eid}/cancel")
os.kill(old_pid, 9)
t.ok(wait_until(lambda: subprocess.run(["systemctl", "is-active", "-q", "sandboxd.service"]).returncode == 0
                and daemon_pid() not in (0, old_pid), 30), "systemd restarted sandboxd")
st, res = get(eid, wait=True)
t.eq(res.get("status"), "cancelled", "a cancel survives a SIGKILL of sandboxd", json.dumps(res)[:800])

# ---- 5. nothing of the host's layout -----------------------------------------------------------

LAYOUT = r'''
import json, os
out = {"mountinfo": open("/proc/self/mountinfo").read()}
out["/"] = sorted(os.listdir("/"))
out["/run"] = sorted(os.listdir("/run"))
out["/etc"] = sorted(os.listdir("/etc"))
out["/usr"] = sorted(os.listdir("/usr"))
out["/usr/local"] = os.path.lexists("/usr/local")
out["/proc/sys"] = os.path.lexists("/proc/sys") or os.path.lexists("/proc/sysrq-trigger")
out["sysrq-trigger"] = os.path.lexists("/proc/sysrq-trigger")
try:
    out["sys hostname"] = open("/proc/sys/kernel/hostname").read().strip()
except OSError:
    out["sys hostname"] = None
out["release"] = os.uname().release
out["passwd"] = open("/etc/passwd").read()
out["group"] = open("/etc/group").read()
out["hosts"] = open("/etc/hosts").read()
try:
    out["whoami"] = __import__("pwd").getpwuid(os.getuid()).pw_name
except KeyError:
    out["whoami"] = None
out["ws"] = sorted(os.listdir("/workspace"))
out["file"] = __file__
import ssl
try:
    import numpy
    out["numpy"] = float(numpy.arange(4).sum())
except ImportError:
    out["numpy"] = None
out["certs"] = ssl.create_default_context().cert_store_stats().get("x509_ca", 0)
print(json.dumps(out))
'''
r = run(LAYOUT)
t.verdict(r, "success", None, "the layout probe (numpy, ssl included) runs")
try:
    o = json.loads(r["stdout"])
except ValueError:
    o = {}
eid = r.get("execution_id") or "?"
mi = o.get("mountinfo", "")
t.ok(len(mi.splitlines()) > 5, "the probe read its mountinfo", r.get("stderr"))
roots = [l.split()[3] for l in mi.splitlines() if len(l.split()) > 4]
points = [l.split()[4] for l in mi.splitlines() if len(l.split()) > 4]
for needle in (eid, eid.split("_")[-1], "sandboxd", "/var/lib", "/run/sandboxd", "workspaces", "ws_", "pool_",
               "sandbox-harness", "/work/", "propagate"):
    t.ok(needle not in mi, f"mountinfo does not name {needle!r}", mi)
STRONG = (r.get("isolation") or {}).get("tier") == "strong"
if STRONG:
    # gVisor's mount table: its tmpfs over /run (which hides runsc's state) with the source directory bound
    # back read-only, and a devpts of gVisor's own at /dev/pts.
    t.ok(all(p in ("/run", "/run/sandbox") or not p.startswith("/run/") for p in points),
         "strong tier: nothing is mounted below /run but the source directory", points)
    t.ok(not any(p.startswith("/var/lib") for p in points), "no /var/lib mounts", points)
else:
    t.ok(all(p == "/run" or not p.startswith("/run/") for p in points), "nothing is mounted below /run", points)
    t.ok(not any(p.startswith("/var/lib") or p == "/dev/pts" for p in points), "no /var/lib or devpts mounts",
         points)
t.ok(set(roots) <= {"/", "/usr", "/sys", "/sys/fs/cgroup", "/tmp", "/workspace"},
     "every mount's source is the sandbox's own tmpfs or /usr", roots)
t.eq(o.get("/run"), ["sandbox"], "/run holds sandbox-exec's directory only")
if STRONG:
    # gVisor's /proc has a /proc/sys of its own kernel (the sandbox's hostname, gVisor's release), and no
    # sysrq-trigger.
    t.ok(o.get("sysrq-trigger") is False and o.get("sys hostname") == "sandbox" and o.get("release") != os.uname().release,
         f"strong tier: /proc/sys is gVisor's (hostname {o.get('sys hostname')}, release {o.get('release')}), "
         "no /proc/sysrq-trigger", (o.get("sysrq-trigger"), o.get("sys hostname"), o.get("release")))
else:
    t.eq(o.get("/proc/sys"), False, "no /proc/sys, no /proc/sysrq-trigger (what ProtectKernelTunables= would protect)")
t.ok("local" not in o.get("/usr", ["local"]) and o.get("/usr/local") is False, "no /usr/local", o.get("/usr"))
t.ok(not any("sandboxd" in x for x in o.get("/", []) + o.get("/etc", []) + o.get("/usr", [])),
     "/, /etc and /usr name nothing of sandboxd", (o.get("/"), o.get("/etc")))
host_passwd = open("/etc/passwd").read()
host_users = [l.split(":")[0] for l in host_passwd.splitlines() if l and l.split(":")[0] not in ("root", "nobody")]
t.ok(o.get("passwd") and not any(("\n" + u + ":") in "\n" + o["passwd"] for u in host_users),
     "/etc/passwd is synthetic: no host account", o.get("passwd"))
# In gVisor the program is uid 0 of runsc's user namespace (the dynamic user on the host, no capabilities).
t.eq(o.get("whoami"), "root" if STRONG else "sandbox", "the program's user has a name")
t.ok(o.get("hosts", "").split() == ["127.0.0.1", "localhost", "::1", "localhost", "ip6-localhost", "ip6-loopback"],
     "/etc/hosts names loopback only", o.get("hosts"))
t.ok({"input", "output"} <= set(o.get("ws", [])), "/workspace/input and /workspace/output exist at the start",
     o.get("ws"))
t.ok("main.py" not in o.get("ws", []), "the source is not in the workspace", o.get("ws"))
HAVE_NUMPY = os.path.isdir("/usr/lib/python3/dist-packages/numpy")
t.eq((o.get("numpy"), o.get("certs", 0) > 0), (6.0 if HAVE_NUMPY else None, True),
     "numpy (where the host has it) and the CA certificates work")

# ---- 5. no covert channel through locks on shared inodes ---------------------------------------

HOLD = r'''
import fcntl, os, time
fds = []
for p in PATHS:
    f = os.open(p, os.O_RDONLY)
    fcntl.flock(f, fcntl.LOCK_EX)
    fds.append(f)
print("holding", time.time(), flush=True)
time.sleep(8)
print("releasing", time.time(), flush=True)
'''
PROBE = r'''
import errno, fcntl, json, os, time
out = {"at": time.time()}
for p in PATHS:
    f = os.open(p, os.O_RDONLY)
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB); out[p] = "free"
    except OSError as e:
        out[p] = errno.errorcode[e.errno]
print(json.dumps(out))
'''
PATHS = ["/usr/lib/os-release", "/usr/bin/python3", "/usr", "/usr/lib", "/", "/etc", "/etc/hosts",
         "/etc/ld.so.cache", "/etc/ssl/certs/ca-certificates.crt", "/proc", "/sys"]
prefix = "PATHS = %r\n" % PATHS
st, res = submit(prefix + HOLD)
holder = res.get("execution_id")
# Output is only there at the end: wait for it to run, then give it a second and a half to take the
# locks (it holds them for 6 s).
t.ok(wait_until(lambda: get(holder)[1].get("status") == "running", timeout=30, step=0.05), "the holder runs")
time.sleep(2.5)
r = run(prefix + PROBE)
try:
    o = json.loads(r["stdout"])
except ValueError:
    o = {}
still = get(holder)[1].get("status")
t.eq(still, "running", "... and still holds them while the second one looks")
for p in PATHS:
    t.eq(o.get(p), "free", f"a concurrent sandbox does not see the lock on {p}")
h = get(holder, wait=True)[1]
hl = (h.get("stdout") or "").split()
held = float(hl[1]) if len(hl) == 4 and hl[0] == "holding" else None
released = float(hl[3]) if len(hl) == 4 and hl[2] == "releasing" else None
# The clocks are the host's: the probe looked while the locks were held, or the test proved nothing.
t.ok(held is not None and released is not None and held < o.get("at", 0) < released,
     "the first sandbox held every lock while the second one looked", (h.get("stdout"), o.get("at")))

# ---- 5. a session turn cannot poison the next one ---------------------------------------------

POISON = r'''
import os, site, sys
d = "/workspace/.local/lib/python%d.%d/site-packages" % sys.version_info[:2]
os.makedirs(d, exist_ok=True)
open(d + "/evil.pth", "w").write("import os, sys; sys.stdout.write('POISONED\\n'); os.write(3, b'C')\n")
open("/workspace/sitecustomize.py", "w").write("print('POISONED sitecustomize')\n")
open("/workspace/usercustomize.py", "w").write("print('POISONED usercustomize')\n")
os.makedirs("/workspace/main.py", exist_ok=True)        # where the source used to be written
os.makedirs("/workspace/main.js", exist_ok=True)
os.makedirs("/workspace/main.sh", exist_ok=True)
import shutil; shutil.rmtree("/workspace/output", ignore_errors=True); shutil.rmtree("/workspace/input", ignore_errors=True)
print("planted", site.ENABLE_USER_SITE)
'''
r = run(POISON, session_id="poison")
t.verdict(r, "success", None, "turn 1 plants a .pth, sitecustomize, directories at the source's names")
t.eq(r.get("stdout"), "planted False\n", "turn 1 itself runs without user site directories")
r = run("import os\nprint(sorted(x for x in os.listdir('.') if x in ('input', 'output')))\n", session_id="poison")
t.verdict(r, "success", None, "turn 2 runs normally")
t.eq(r.get("stdout"), "['input', 'output']\n", "turn 2: no code of turn 1 ran first; input/ and output/ are back")
r = run("print('a'\n", session_id="poison")
t.verdict(r, "failed", "compile_error", "turn 3: a real syntax error is still a compile error")
r = run("import sys\nsys.stderr.write('  File \"main.py\", line 1\\nSyntaxError: invalid syntax\\n')\nsys.exit(1)\n",
        session_id="poison")
t.verdict(r, "failed", "runtime_error", "turn 4: a program that prints a syntax error and exits 1 is no compile error")
r = run("console.log('node turn')\n", language="node", session_id="poison")
t.verdict(r, "success", None, "a node turn with a directory at main.js in the workspace")
r = run("echo bash turn\n", language="bash", session_id="poison")
t.eq((r.get("status"), r.get("stdout")), ("success", "bash turn\n"), "a bash turn with a directory at main.sh")
request("DELETE", "/v1/sessions/poison")

t.done()

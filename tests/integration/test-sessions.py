# SPDX-License-Identifier: LGPL-2.1-or-later
# Sessions: runs with the same session_id share a persistent /workspace (each run under its own
# dynamic UID: systemd re-owns the tree), are serialized, are bounded by disk_mb across runs, never
# see another session's files, survive a daemon restart, and go (unmounted, off the disk) when
# deleted or idle for SessionIdleSec=. A run plants symlinks to host files and to another session,
# and hard links: the next run's re-owning changes nothing outside the session.
import concurrent.futures as cf
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from lib import *  # noqa: E402,F401,F403

MOUNT_DIR = "/var/lib/private/sandboxd/sessions"
LINK_DIR = "/var/lib/sandboxd/sessions"
t = Tap()


def srun(session, code, **fields):
    return run(code, session_id=session, **fields)


def sget(session):
    return request("GET", f"/v1/sessions/{session}")


def session_dirs():
    try:
        return sorted(os.listdir(MOUNT_DIR))
    except FileNotFoundError:
        return []


def mount_units():
    out = subprocess.run(["systemctl", "list-units", "--all", "--plain", "--no-legend",
                          "var-lib-private-sandboxd-sessions-*"], capture_output=True, text=True).stdout
    return {l.split()[0]: l.split()[2] for l in out.splitlines() if l.strip()}


def as_nobody(method, path, body=None):
    """The same request from another local user (uid 65534): another owner."""
    code = ("import json, sys\nsys.path.insert(0, %r)\nfrom lib import request\n"
            "print(json.dumps(request(%r, %r, %r)))\n" % (os.path.dirname(__file__), method, path, body))
    p = subprocess.run(["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups", "python3", "-c", code],
                       capture_output=True, text=True, env=dict(os.environ))
    try:
        st, res = json.loads(p.stdout)
        return st, res
    except ValueError:
        return -1, p.stdout + p.stderr


# ---- turn 2 sees turn 1's files, across dynamic UIDs ----
r1 = srun("sa", "import os\nopen('/workspace/note.txt', 'w').write('turn one\\n')\n"
                "os.makedirs('/workspace/d/e', exist_ok=True)\nopen('/workspace/d/e/f', 'w').write('deep')\n"
                "open('/tmp/t.txt', 'w').write('tmp one')\nprint(os.getuid())\n")
t.verdict(r1, "success", None, "turn 1 writes /workspace/note.txt")
r2 = srun("sa", "import os\nprint(open('/workspace/note.txt').read(), end='')\n"
                "open('/workspace/note.txt', 'a').write('turn two\\n')\nprint(open('/workspace/d/e/f').read())\n"
                "print(open('/tmp/t.txt').read())\nprint(os.getuid())\n")
t.verdict(r2, "success", None, "turn 2 runs in the same session")
out2 = r2.get("stdout", "").splitlines()
t.eq(out2[:3], ["turn one", "deep", "tmp one"], "turn 2 reads turn 1's files (workspace, nested, /tmp)", r2)
uid1, uid2 = r1.get("stdout", "").strip(), (out2[-1] if out2 else "")
print(f"# dynamic UIDs: turn 1 {uid1}, turn 2 {uid2} ({'different' if uid1 != uid2 else 'the same'})")
r3 = srun("sa", "import os\nprint(open('/workspace/note.txt').read(), end='')\nos.remove('/workspace/d/e/f')\n"
                "os.rmdir('/workspace/d/e')\nprint(sorted(os.listdir('/workspace')))\n")
t.verdict(r3, "success", None, "turn 3 modifies and deletes turn 1's files")
# The source is not in the workspace (it lives in /run/sandbox); input/ and output/ are there at the start.
t.eq(r3.get("stdout"), "turn one\nturn two\n['d', 'input', 'note.txt', 'output']\n", "turn 3 sees turn 2's append", r3)
st, s = sget("sa")
t.eq(st, 200, "GET /v1/sessions/sa", s)
t.eq((s.get("session_id"), s.get("executions"), s.get("pending")), ("sa", 3, 0), "3 executions, none pending", s)
t.ok(isinstance(s.get("size_bytes"), int) and s["size_bytes"] > 0, "size_bytes counts the files", s)
t.ok(r3["execution_id"] in s.get("recent_executions", []), "recent_executions lists the last run", s)
t.eq(s.get("disk_mb"), r1.get("limits", {}).get("disk_mb", s.get("disk_mb")), "disk_mb shown", s)

# ---- another session sees nothing of the first ----
dirs = session_dirs()
t.eq(len(dirs), 1, "one session directory on the host", dirs)
a_dir = dirs[0] if dirs else "none"
rb = srun("sb", "import glob, os\nfound = []\n"
                "for p in ['/run/sandboxd/workspaces/*/workspace/note.txt', '/var/lib/private/sandboxd/sessions/*/workspace/note.txt',\n"
                "          '/var/lib/private/sandboxd/sessions/%s/workspace/note.txt', '/var/lib/sandboxd/sessions/%s/workspace/note.txt',\n"
                "          '/var/lib/sandboxd/sessions/*/workspace/note.txt', '/workspace/note.txt', '/tmp/t.txt']:\n"
                "    for f in glob.glob(p) or [p]:\n"
                "        try:\n            found.append((f, open(f).read()))\n        except OSError:\n            pass\n"
                "print(found)\nprint(sorted(os.listdir('/var/lib')))\n"
                "open('/workspace/b.txt', 'w').write('B secret')\n" % (a_dir, a_dir))
t.verdict(rb, "success", None, "session B runs")
t.eq(rb.get("stdout", "").splitlines()[:1], ["[]"], "session B finds none of A's files by any path it can guess", rb)
# systemd's binds of the state directories below /var/lib are detached by sandbox-exec (their paths
# name sandboxd and the session): /var/lib is empty.
t.eq(rb.get("stdout", "").splitlines()[1:2], ["[]"], "B's /var/lib shows nothing (not even its own state dir)", rb)
b_dir = [d for d in session_dirs() if d != a_dir]
b_dir = b_dir[0] if b_dir else "none"

# ---- hostile: symlinks to host files and to session B, hard links; the next run is re-owned ----
marker = "/var/lib/sandboxd/host-marker"
with open(marker, "w") as f:
    f.write("host marker\n")
os.chmod(marker, 0o600)
b_file = f"{MOUNT_DIR}/{b_dir}/workspace/b.txt"
watched = ["/etc/shadow", "/etc/passwd", marker, b_file, f"{MOUNT_DIR}/{b_dir}/workspace", f"{MOUNT_DIR}/{b_dir}",
           MOUNT_DIR, "/var/lib/private"]


def snapshot():
    out = {}
    for p in watched:
        st_ = os.lstat(p)
        content = open(p, "rb").read() if os.path.isfile(p) else None
        out[p] = (st_.st_uid, st_.st_gid, oct(st_.st_mode), content)
    return out


before = snapshot()
plant = ("import os\nres = []\n"
         "links = {'shadow': '/etc/shadow', 'marker': %r, 'b_file': %r, 'b_dir': %r, 'etc': '/etc',\n"
         "         'root': '/', 'sess_root': '..'}\n"
         "for n, target in links.items():\n"
         "    os.symlink(target, '/workspace/' + n)\n"
         "    os.symlink(target, '/tmp/' + n)\n"
         "os.makedirs('/workspace/sub', exist_ok=True)\nos.symlink('/etc/shadow', '/workspace/sub/deep')\n"
         "open('/workspace/victim', 'w').write('mine')\nos.link('/workspace/victim', '/workspace/victim-hard')\n"
         "for src in ['/etc/passwd', '/usr/bin/python3']:\n"
         "    try:\n        os.link(src, '/workspace/hard-' + os.path.basename(src)); res.append('linked ' + src)\n"
         "    except OSError as e:\n        res.append('link %%s: %%s' %% (src, e.errno))\n"
         "try:\n    os.rename('/workspace', '/workspace2'); res.append('renamed the mount')\n"
         "except OSError as e:\n    res.append('rename: %%d' %% e.errno)\n"
         "os.chmod('/workspace/sub', 0)\n"
         "print(res)\n" % (marker, b_file, f"{MOUNT_DIR}/{b_dir}"))
rp = srun("sa", plant)
t.verdict(rp, "success", None, "run 1 plants symlinks and hard links")
t.ok("linked" not in rp.get("stdout", ""), "hard links to host files fail (another file system)", rp.get("stdout"))
# systemd gives a run the UID that owns the session's directories when that UID is free (pick_uid()
# tries the StateDirectory= owners first), so consecutive runs usually share it. Make the tree
# owned by a UID systemd will not pick (outside its dynamic range), as after a run whose UID was
# taken meanwhile: the next start must re-own it (chown -h -R: this test follows no symlink either).
subprocess.run(["chown", "-h", "-R", "4242:4242", f"{MOUNT_DIR}/{a_dir}/workspace", f"{MOUNT_DIR}/{a_dir}/tmp"],
               check=True)
rn = srun("sa", "import os\nprint(os.getuid(), os.stat('/workspace').st_uid, os.lstat('/workspace/shadow').st_uid)\n"
                "print(os.readlink('/workspace/shadow'), open('/workspace/victim-hard').read())\n"
                "open('/workspace/victim', 'a').write('+2')\nos.chmod('/workspace/sub', 0o700)\n"
                "print(sorted(os.listdir('/workspace/sub')))\n"
                "for n in ['shadow', 'marker', 'b_file']:\n"
                "    try:\n        open('/workspace/' + n).read(); print('read', n)\n"
                "    except OSError as e:\n        print('no', n, e.errno)\n")
t.verdict(rn, "success", None, "run 2 (re-owned) works")
lines = rn.get("stdout", "").splitlines()
if lines:
    u = lines[0].split()
    t.ok(len(u) == 3 and u[0] == u[1] == u[2] and u[0] != "4242",
         "run 2 (another UID than the tree's) owns the workspace and the planted symlinks", lines)
t.ok(len(lines) > 1 and lines[1] == "/etc/shadow mine", "planted symlink kept as a symlink, hard link intact", lines)
t.ok(not any(l.startswith("read") for l in lines), "no planted symlink leads anywhere readable", lines)
after = snapshot()
for p in watched:
    t.eq(after[p], before[p], f"{p}: owner, mode and content unchanged")
rb2 = srun("sb", "print(open('/workspace/b.txt').read())\n")
t.eq(rb2.get("stdout"), "B secret\n", "session B's file intact and still B's", rb2)

# ---- other owner ----
os.chmod(SOCKET, 0o666)     # uid 65534 may connect (no group sandboxd in the harness)
# Session ids are scoped by owner: another caller's "sa" is its own session, never root's.
root_sa = sget("sa")[1]
st, res = as_nobody("POST", "/v1/executions?wait=true",
                    {"language": "python", "code": "import os\nprint(sorted(os.listdir('/workspace')))",
                     "session_id": "sa"})
t.ok(st == 200 and res.get("stdout") == "['input', 'output']\n",
     "another caller's session 'sa' is its own: a fresh workspace, no 403", res)
st, res = as_nobody("GET", "/v1/sessions/sa")
t.ok(st == 200 and res.get("record_id") and res.get("record_id") != root_sa.get("record_id"),
     "another caller sees its own 'sa', not root's", (res, root_sa))
st, res = as_nobody("GET", f"/v1/sessions/{root_sa.get('record_id')}")
t.eq(st, 404, "another caller does not see root's session by its record id", res)
st, res = as_nobody("DELETE", "/v1/sessions/sa")
t.eq(st, 200, "another caller deletes its own 'sa'", res)
st, res = sget("sa")
t.ok(st == 200 and res.get("record_id") == root_sa.get("record_id") and res.get("executions") == root_sa.get("executions"),
     "root's session 'sa' is untouched", res)
st, res = request("GET", "/v1/sessions")
t.ok(st == 200 and {x["session_id"] for x in res.get("sessions", [])} >= {"sa", "sb"}, "GET /v1/sessions lists them", res)
metrics = request("GET", "/metrics")[1].get("_raw", "")
t.ok(f"sandboxd_sessions {len(res.get('sessions', []))}" in metrics.splitlines(), "gauge sandboxd_sessions",
     [l for l in metrics.splitlines() if "sessions" in l])

# ---- serialization ----
step = ("import time\nf = open('/workspace/log', 'a')\nf.write('start %s\\n'); f.flush()\ntime.sleep(2)\n"
        "f.write('end %s\\n')\n")
st1, a = submit(step % ("A", "A"), session_id="ss")
st2, b = submit(step % ("B", "B"), session_id="ss")
t.ok(st1 == 202 and st2 == 202, "two runs of one session submitted without waiting", (a, b))
c = run("print('other')\n", session_id="so")
t.verdict(c, "success", None, "a run of another session proceeds meanwhile")
cn = run("print('none')\n")
t.verdict(cn, "success", None, "a run without a session proceeds meanwhile")
ra = get(a["execution_id"], wait=True)[1]
rbb = get(b["execution_id"], wait=True)[1]
t.ok(ra.get("status") == "success" and rbb.get("status") == "success", "both runs succeed", (ra, rbb))
t.ok(ra["finished_at"] <= rbb["started_at"], "the second started after the first ended",
     (ra["finished_at"], rbb["started_at"]))
# Started while the session's first run still ran: it waited for neither. (Its end is not compared
# with the second run's start: creating its session's tmpfs on a loaded machine can take longer
# than the first run's 2 s, which made that comparison fail once in the -pg leg.)
t.ok(c["started_at"] < ra["finished_at"], "the other session's run did not wait for them",
     (c["started_at"], ra["finished_at"]))
log = srun("ss", "print(open('/workspace/log').read(), end='')\n")
t.eq(log.get("stdout"), "start A\nend A\nstart B\nend B\n", "no overlap in the session's log", log)

# ---- disk_mb bounds the session across runs ----
w = ("import os\ntry:\n    with open('/workspace/%s', 'wb') as f:\n        for _ in range(9):\n"
     "            f.write(b'x' * (1 << 20))\n    print('wrote')\nexcept OSError as e:\n    print('errno', e.errno)\n")
d1 = srun("sd", w % "one", limits={"disk_mb": 16})
t.eq(d1.get("stdout"), "wrote\n", "run 1 writes 9 MB of 16", d1)
d2 = srun("sd", w % "two", limits={"disk_mb": 16})
t.eq(d2.get("stdout"), "errno 28\n", "run 2's next 9 MB hit ENOSPC: the bound holds across runs", d2)
d3 = srun("sd", "import os\nos.remove('/workspace/one')\n" + w % "three", limits={"disk_mb": 16})
t.eq(d3.get("stdout"), "wrote\n", "after deleting run 1's file, run 3 can write again", d3)
d4 = srun("sd", "print(1)")
t.eq((d4.get("status"), d4.get("limits", {}).get("disk_mb")), ("success", 16),
     "a later run without disk_mb gets the session's", d4)
st, res = submit("print(1)", session_id="sd", limits={"disk_mb": 32})
t.eq(st, 409, "another disk_mb for an existing session: 409", res)
t.eq(res.get("error", {}).get("field"), "limits.disk_mb", "the 409 names limits.disk_mb", res)

# ---- DELETE ----
st, long = submit("import time\ntime.sleep(3)\n", session_id="sdel")
t.eq(st, 202, "a long run in session sdel", long)
t.ok(wait_until(lambda: sget("sdel")[1].get("active") == long["execution_id"], 20), "it holds the session")
st, res = request("DELETE", "/v1/sessions/sdel")
t.eq(st, 409, "DELETE while a run is active: 409", res)
get(long["execution_id"], wait=True)
del_dirs = set(session_dirs())
st, res = request("DELETE", "/v1/sessions/sdel")
t.eq(st, 200, "DELETE after the run: 200", res)
t.eq(sget("sdel")[0], 404, "deleted session: 404")

# ---- sandboxctl run --session, session show / delete ----
ctl = os.path.join(BUILD, "sandboxctl", "sandboxctl")


def sctl(*args):
    p = subprocess.run([ctl, *args], capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


t.eq(sctl("run", "--session", "sc", "-c", "open('/workspace/x', 'w').write('from ctl')")[0], 0,
     "sandboxctl run --session sc writes a file")
t.eq(sctl("run", "--session", "sc", "-c", "print(open('/workspace/x').read())"), (0, "from ctl\n"),
     "sandboxctl run --session sc reads it back")
rc, out = sctl("session", "show", "sc")
t.ok(rc == 0 and "Session: sc" in out and "2 finished" in out, "sandboxctl session show", out)
t.eq(sctl("session", "delete", "sc"), (0, ""), "sandboxctl session delete is quiet")
rc, out = sctl("session", "show", "sc")
t.ok(rc != 0 and "no session" in out, "sandboxctl session show after delete fails", (rc, out))

# ---- a restart keeps sessions and their files, and a session's running and queued runs ----
st1, lr = submit("import time\ntime.sleep(3)\nopen('/workspace/r1', 'w').write('r1')\n", session_id="sa")
st2, lq = submit("print(open('/workspace/r1').read())\n", session_id="sa")
t.ok(st1 == 202 and st2 == 202, "a running and a queued run in session sa", (lr, lq))
t.ok(wait_until(lambda: sget("sa")[1].get("active") == lr["execution_id"], 20), "the first holds the session")
subprocess.run(["systemctl", "restart", "sandboxd.service"], check=True)
t.ok(wait_until(lambda: subprocess.run(["systemctl", "is-active", "-q", "sandboxd.service"]).returncode == 0, 30),
     "sandboxd restarted")
res1 = get(lr["execution_id"], wait=True)[1]
res2 = get(lq["execution_id"], wait=True)[1]
t.verdict(res1, "success", None, "the running run, adopted after the restart")
t.eq((res2.get("status"), res2.get("stdout")), ("success", "r1\n"), "the queued run ran after it, in the session", res2)
st, s = sget("sa")
t.eq((st, s.get("executions"), s.get("pending")), (200, 7, 0), "after a restart the session is there with its count",
     s)
rr = srun("sa", "print(open('/workspace/note.txt').read(), end='')\n")
t.eq(rr.get("stdout"), "turn one\nturn two\n", "and so are its files", rr)
t.eq(len(session_dirs()), 5, "5 session directories (sdel's is gone)", session_dirs())

# ---- a run that ends as sandboxd stops: its report is read whole by one instance ----
# sandboxd is frozen (SIGSTOP) while the program ends, so its report waits in the control socket
# as the stop begins (systemd's SIGTERM, then its SIGCONT): the stopping instance either reads it
# to the end and makes the run final, or leaves it whole to the next instance. Before, it could read
# the report, then exit before systemd answered for the unit's end, and the next instance found
# neither ("no report and no exit status": the VM tier, where stops take seconds).
def daemon_up(old):
    try:
        return daemon_pid() not in (0, old) and request("GET", "/v1/health", timeout=5)[0] == 200
    except OSError:
        return False


for rnd in range(3):
    st, q = submit(f"import time\ntime.sleep(1)\nprint('round {rnd}')\n", session_id="sa")
    t.eq(st, 202, f"stop round {rnd}: a run in session sa", q)
    ended, unit, old = stop_while_run_ends(q["execution_id"], "restart")
    t.ok(ended and wait_until(lambda: daemon_up(old), 60, 0.1), f"stop round {rnd}: the run ended while "
         "sandboxd was frozen, and sandboxd restarted", unit_state(unit))
    rq = get(q["execution_id"], wait=True)[1]
    t.eq((rq.get("status"), rq.get("stdout")), ("success", f"round {rnd}\n"),
         f"stop round {rnd}: the run's report and output survive the stop", rq)

# ---- idle expiry ----
confdir = os.environ["SANDBOXD_CONFIG_DIR"]
os.makedirs(f"{confdir}/sandboxd.conf.d", exist_ok=True)
with open(f"{confdir}/sandboxd.conf.d/50-sessions.conf", "w") as f:
    f.write("[Daemon]\nMaxSessionsPerCaller=5\n")
subprocess.run(["systemctl", "reload", "sandboxd.service"], check=True)
st, res = submit("print(1)", session_id="sx")
t.eq((st, res.get("error", {}).get("code")), (429, "too_many_sessions"), "a 6th session of one caller: 429", res)
t.eq(sget("sx")[0], 404, "and it was not created")
with open(f"{confdir}/sandboxd.conf.d/50-sessions.conf", "w") as f:
    f.write("[Daemon]\nSessionIdleSec=2\nSweepIntervalSec=1\n")
subprocess.run(["systemctl", "reload", "sandboxd.service"], check=True)
t.ok(wait_until(lambda: sget("sa")[0] == 404 and sget("sb")[0] == 404, 30), "idle sessions expire (404)")
t.ok(wait_until(lambda: all(v != "active" for v in mount_units().values()), 30), "their mount units are stopped",
     mount_units())
t.ok(wait_until(lambda: session_dirs() == [], 30), "their directories are gone from the host", session_dirs())
t.ok(wait_until(lambda: not os.path.exists(LINK_DIR) or os.listdir(LINK_DIR) == [], 30),
     "systemd's symlink directories are gone too", os.listdir(LINK_DIR) if os.path.exists(LINK_DIR) else None)
st, res = request("GET", "/v1/sessions")
t.eq((st, res.get("sessions")), (200, []), "no sessions left", res)
t.done()

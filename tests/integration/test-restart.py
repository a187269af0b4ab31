# SPDX-License-Identifier: LGPL-2.1-or-later
# Zero loss across a crash: sandboxd is SIGKILLed while 20 executions run (some printing all the
# time) and 20 more wait in the queue. systemd restarts it; it adopts the running ones with their
# control sockets from the fd store and resumes the queued ones. All 40 end with the right verdict
# and their complete output, none runs twice, no unit is left behind.
import concurrent.futures as cf
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from lib import *  # noqa: E402,F401,F403

t = Tap()
confdir = os.environ["SANDBOXD_CONFIG_DIR"]
os.makedirs(f"{confdir}/sandboxd.conf.d", exist_ok=True)
with open(f"{confdir}/sandboxd.conf.d/50-restart.conf", "w") as f:
    f.write("[Daemon]\nMaxConcurrent=20\nMaxQueued=100\n")
subprocess.run(["systemctl", "reload", "sandboxd.service"], check=True)
t.eq(health()["slots"], 20, "20 slots")


def program(i):
    kind = i % 4
    if kind == 0:       # prints continuously for ~3 s, then succeeds
        return (f"import time, sys\nfor k in range(300):\n    print('{i}-line-%d' % k, flush=True)\n"
                f"    time.sleep(0.01)\n"), "success", None, "".join(f"{i}-line-{k}\n" for k in range(300))
    if kind == 1:       # quiet, then fails with exit 7
        return (f"import time\ntime.sleep(2.5)\nprint('{i}-done')\nraise SystemExit(7)\n"), "failed", 7, f"{i}-done\n"
    if kind == 2:       # a lot of output, truncated head/tail
        return (f"import sys\nfor k in range(40000):\n    sys.stdout.write('{i}:%06d\\n' % k)\n"
                f"import time\ntime.sleep(2)\n"), "success", None, None
    return (f"import time\ntime.sleep(2)\nprint('{i}')\n"), "success", None, f"{i}\n"


expected = {}
ids = []
for i in range(40):
    code, status, exit_code, out = program(i)
    st, res = submit(code, execution_id=f"rst_{i:02d}")
    if st != 202:
        t.ok(False, f"submission {i} accepted", (st, res))
    ids.append(f"rst_{i:02d}")
    expected[f"rst_{i:02d}"] = (i, status, exit_code, out)

t.ok(wait_until(lambda: health()["running"] == 20, 20), "20 running", health())
h = health()
t.ok(h["queued"] == 20, f"20 queued ({h['queued']})", h)
time.sleep(0.8)     # let the printers print
old_pid = daemon_pid()
os.kill(old_pid, 9)
crash = time.monotonic()
t.ok(wait_until(lambda: subprocess.run(["systemctl", "is-active", "-q", "sandboxd.service"]).returncode == 0
                and daemon_pid() not in (0, old_pid), 20), "systemd restarted sandboxd")
print(f"# back after {time.monotonic() - crash:.1f} s")

with cf.ThreadPoolExecutor(max_workers=40) as ex:
    results = dict(zip(ids, ex.map(lambda e: get(e, wait=True)[1], ids)))

wrong = []
for eid in ids:
    i, status, exit_code, out = expected[eid]
    r = results[eid]
    ok = r.get("status") == status and (exit_code is None or r.get("exit_code") == exit_code)
    if out is not None:
        ok = ok and r.get("stdout") == out
    else:
        ok = ok and r.get("stdout_bytes") == 40000 * (len(str(i)) + 8) and r.get("stdout_lines") == 40000 \
            and r.get("stdout", "").startswith(f"{i}:000000\n") and r.get("stdout", "").endswith(f"{i}:039999\n")
    if not ok:
        wrong.append((eid, {k: r.get(k) for k in ("status", "error_type", "exit_code", "reason", "stdout_bytes")},
                      (r.get("stdout") or "")[:80]))
t.eq(wrong, [], "all 40 ended with the right verdict and complete output")

# None ran twice: exactly one "started" journal entry per execution.
log = subprocess.run(["journalctl", "--no-pager", "-o", "json", "SANDBOXD_STATUS=running"], capture_output=True,
                     text=True).stdout
starts = {}
for line in log.splitlines():
    e = json.loads(line)
    starts[e.get("SANDBOXD_EXECUTION_ID")] = starts.get(e.get("SANDBOXD_EXECUTION_ID"), 0) + 1
twice = {k: v for k, v in starts.items() if k in expected and v != 1}
t.eq(twice, {}, "each execution started exactly once")
t.eq(sorted(k for k in expected if k not in starts), [], "every execution started")

st, page = request("GET", "/v1/executions?limit=100")
rows = [e for e in page["executions"] if e["execution_id"] in expected]
t.eq(len(rows), 40, "40 records, no duplicates")
t.ok(all(e["status"] in ("success", "failed") for e in rows), "none left queued or running")
# The units as the records name them (a client-chosen id's unit is named after its record id, a warm
# unit after the pool).
rst_units = {e.get("unit") for e in rows}
t.ok(None not in rst_units and wait_until(lambda: not rst_units & set(sandboxd_units()), 15),
     "no execution unit left behind", (sorted(rst_units & set(sandboxd_units())), sandboxd_units()))

# Killed while systemd is still starting the units: 20 submitted at once, SIGKILL as soon as the
# first one is asked for. Those whose start was under way are adopted with their control socket
# (it goes into the fd store before the start is asked for), the others run from the queue: each
# once, each with its output.
quick = {f"rsq_{i:02d}": f"{i}-quick\n" for i in range(20)}
for eid, out in quick.items():
    st, res = submit(f"import time\nprint({out.strip()!r})\ntime.sleep(1)\n", execution_id=eid)
    if st != 202:
        t.ok(False, f"submission {eid} accepted", (st, res))
old_pid = daemon_pid()
os.kill(old_pid, 9)
t.ok(wait_until(lambda: subprocess.run(["systemctl", "is-active", "-q", "sandboxd.service"]).returncode == 0
                and daemon_pid() not in (0, old_pid), 20), "killed during the starts: systemd restarted sandboxd")
with cf.ThreadPoolExecutor(max_workers=20) as ex:
    results = dict(zip(quick, ex.map(lambda e: get(e, wait=True)[1], quick)))
wrong = [(eid, {k: r.get(k) for k in ("status", "error_type", "reason", "stdout")})
         for eid, r in results.items() if r.get("status") != "success" or r.get("stdout") != quick[eid]]
t.eq(wrong, [], "killed during the starts: all 20 succeeded with their output")
log = subprocess.run(["journalctl", "--no-pager", "-o", "json", "SANDBOXD_STATUS=running"], capture_output=True,
                     text=True).stdout
starts = {}
for line in log.splitlines():
    e = json.loads(line)
    starts[e.get("SANDBOXD_EXECUTION_ID")] = starts.get(e.get("SANDBOXD_EXECUTION_ID"), 0) + 1
t.eq({k: starts.get(k, 0) for k in quick if starts.get(k, 0) != 1}, {},
     "killed during the starts: each started exactly once")
rsq_units = {r.get("unit") for r in results.values()}
t.ok(None not in rsq_units and wait_until(lambda: not rsq_units & set(sandboxd_units()), 15),
     "killed during the starts: no execution unit left behind",
     (sorted(rsq_units & set(sandboxd_units())), sandboxd_units()))
t.ok(wait_until(lambda: not execution_units(), 15), "and no other execution unit either", sandboxd_units())

# A stop (not a restart) while a run ends: sandboxd is frozen (SIGSTOP) until the program is done,
# so its last output (live frames) and then its report are waiting as the stop begins. The stopping
# instance reads the frames, finds the report behind them and makes the run final, leaving nothing
# of it, its workspace mount included (a StopUnit sent while stopping was once refused as the caller
# had gone: the mount stayed); or, if it went quiet before the program was done, leaves it whole to
# the next start. A stop empties systemd's fd store: a run left quiet with its report behind its
# frames lost that report (adopted "without output", its unit collected: internal_error), which the
# VM tier hit in 3 runs of 4 before job_at_clean_point() read waiting frames first.
def mounts():
    out = subprocess.run(["systemctl", "list-units", "--plain", "--no-legend", "run-sandboxd-workspaces-ws_*"],
                         capture_output=True, text=True).stdout
    return [line.split()[0] for line in out.splitlines() if " active " in line]


for rnd in range(3):
    st, q = submit(f"import sys, time\ntime.sleep(1)\nfor i in range(5):\n    print('stop {rnd}', i, flush=True)\n"
                   f"    print('err', i, file=sys.stderr, flush=True)\n")
    ended, unit, old_pid = stop_while_run_ends(q["execution_id"], "stop")
    stopped = wait_until(lambda: subprocess.run(["systemctl", "is-active", "-q", "sandboxd.service"]).returncode != 0,
                         60, 0.1)
    # Its StopUnit was answered before sandboxd went (sysd_barrier()): the job is systemd's, which
    # may still be unmounting (under TCG it takes seconds); nothing is left once that job is done.
    wait_until(lambda: mounts() == [], 30, 0.2)
    left = mounts()
    final_before = subprocess.run(["journalctl", "--no-pager", "-o", "cat", f"_PID={old_pid}",
                                   f"SANDBOXD_EXECUTION_ID={q['execution_id']}", "SANDBOXD_STATUS=success"],
                                  capture_output=True, text=True).stdout.strip() != ""
    subprocess.run(["systemctl", "start", "sandboxd.service"], check=True)
    rq = get(q["execution_id"], wait=True)[1]
    want = "".join(f"stop {rnd} {i}\n" for i in range(5))
    t.ok(ended and stopped and (rq.get("status"), rq.get("stdout")) == ("success", want),
         f"stop round {rnd}: the run ended while sandboxd was frozen and stopping, and succeeded with its output "
         f"({'made final by the stopping instance' if final_before else 'left to the next start'})", rq)
    t.ok(final_before, f"stop round {rnd}: the stopping instance read the frames and the report behind them, and "
         "made the run final itself", rq.get("reason"))
    t.ok(not final_before or left == [], f"stop round {rnd}: made final while stopping, it left no workspace "
         "mount behind", left)

t.done()

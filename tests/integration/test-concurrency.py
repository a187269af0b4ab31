# SPDX-License-Identifier: LGPL-2.1-or-later
# Bounded concurrency: 200 submissions with 4 slots all finish with correct results, never more
# than 4 run at once, the queue is bounded (429), and the configuration reloads on SIGHUP.
import concurrent.futures as cf
import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
from lib import *  # noqa: E402,F401,F403

t = Tap()
confdir = os.environ["SANDBOXD_CONFIG_DIR"]
os.makedirs(f"{confdir}/sandboxd.conf.d", exist_ok=True)


def reload_with(text):
    with open(f"{confdir}/sandboxd.conf.d/50-test.conf", "w") as f:
        f.write(text)
    subprocess.run(["systemctl", "reload", "sandboxd.service"], check=True)


reload_with("[Daemon]\nMaxConcurrent=4\nMaxQueued=300\n")
t.eq(health()["slots"], 4, "reload applied MaxConcurrent=4")

N = 200
ids = []
for i in range(N):
    st, res = submit(f"import time\ntime.sleep(0.01)\nprint({i} * 7)", session_id=f"sess_{i % 5}")
    if st != 202:
        t.ok(False, f"submission {i} accepted", (st, res))
        break
    ids.append(res["execution_id"])
t.eq(len(ids), N, f"{N} submissions accepted")

peak = {"running": 0, "queued": 0}
stop = threading.Event()


def watch():
    while not stop.is_set():
        h = health()
        peak["running"] = max(peak["running"], h["running"])
        peak["queued"] = max(peak["queued"], h["queued"])
        time.sleep(0.02)


w = threading.Thread(target=watch)
w.start()
start = time.monotonic()
with cf.ThreadPoolExecutor(max_workers=16) as ex:
    results = list(ex.map(lambda e: get(e, wait=True)[1], ids))
elapsed = time.monotonic() - start
stop.set()
w.join()
wrong = [(i, r.get("status"), r.get("stdout")) for i, r in enumerate(results)
         if r.get("status") != "success" or r.get("stdout") != f"{i * 7}\n"]
t.eq(wrong, [], f"all {N} finished with their own correct output")
t.ok(peak["running"] <= 4, f"never more than 4 running (peak {peak['running']})", peak)
t.ok(peak["running"] >= 2, f"slots were used concurrently (peak {peak['running']})", peak)
print(f"# {N} executions through 4 slots in {elapsed:.1f} s ({N / elapsed:.1f}/s), peak queue {peak['queued']}")
t.eq(len({r["execution_id"] for r in results}), N, "every execution has its own id")
# Units end after their answer (the unit reaper): in the VM tier, with the pool refilling, that can
# take a while. The detail names the execution units left (not the pool's), their state and what
# the journal says of them.
def leftovers():
    out = []
    for u in sorted(execution_units()):
        st = subprocess.run(["systemctl", "show", "-P", "ActiveState,SubState,Result", u], capture_output=True,
                            text=True).stdout.split()
        log = subprocess.run(["journalctl", "--no-pager", "-o", "cat", "-n", "6", f"UNIT={u}"], capture_output=True,
                             text=True).stdout.strip().splitlines()
        daemon = [l for l in subprocess.run(["journalctl", "--no-pager", "-o", "cat", "-u", "sandboxd.service"],
                                            capture_output=True, text=True).stdout.splitlines() if u in l][-6:]
        out.append((u, st, log, daemon))
    return out
t.ok(wait_until(lambda: not execution_units(), 60), "no units left behind", leftovers())

# A bounded queue: with 1 slot and room for 2, the 4th concurrent submission is refused.
reload_with("[Daemon]\nMaxConcurrent=1\nMaxQueued=2\n")
codes = [submit("import time; time.sleep(1.5)")[0] for _ in range(5)]
t.ok(codes[:3] == [202, 202, 202] and 429 in codes[3:], f"queue full gives 429 ({codes})", codes)
st, res = submit("print(1)")
t.eq(res.get("error", {}).get("code"), "queue_full", "429 names queue_full")

# The same, all at once: the submissions are admitted while the store answers (issue 22), and those
# being recorded count as if they had joined the queue at their check: exactly 1 runs and 2 wait,
# whatever the order their reads and writes come back in.
wait_until(lambda: health()["running"] == 0 and health()["queued"] == 0, 30)
burst = {"language": "python", "code": "import time; time.sleep(3)"}
with cf.ThreadPoolExecutor(max_workers=8) as ex:
    answers = list(ex.map(lambda _: request("POST", "/v1/executions", burst), range(8)))
codes = sorted(a[0] for a in answers)
t.eq(codes, [202] * 3 + [429] * 5, "8 submissions at once, 1 slot, MaxQueued=2: 3 accepted, 5 refused", answers)
t.eq({a[1].get("error", {}).get("code") for a in answers if a[0] == 429}, {"queue_full"}, "the 5 name queue_full")
for a in answers:
    if a[0] == 202:
        request("POST", f"/v1/executions/{a[1]['execution_id']}/cancel")
wait_until(lambda: health()["running"] == 0 and health()["queued"] == 0, 30)

# One execution_id submitted 12 times at once, and once more with other code: one execution, every
# repeat answered with it (never a second run), the other request a conflict.
reload_with("[Daemon]\nMaxConcurrent=4\nMaxQueued=300\n")
same = {"language": "python", "code": "print('once')", "execution_id": "race-1"}
other = dict(same, code="print('twice')")
with cf.ThreadPoolExecutor(max_workers=13) as ex:
    answers = list(ex.map(lambda b: request("POST", "/v1/executions", b), [same] * 12 + [other]))
t.ok(all(a[0] in (200, 202) for a in answers[:12]), "the 12 repeats are accepted", [a[0] for a in answers])
t.eq({a[1].get("record_id") for a in answers[:12]}, {answers[0][1].get("record_id")},
     "all 12 name the one execution", [a[1].get("record_id") for a in answers[:12]])
t.eq((answers[12][0], answers[12][1].get("error", {}).get("code")), (409, "conflict"),
     "the same id with other code: 409 conflict", answers[12])
st, res = get("race-1", wait=True)
t.eq((res.get("status"), res.get("stdout")), ("success", "once\n"), "it ran, with the first request's code")
st, page = request("GET", "/v1/executions?limit=100")
t.eq(sum(1 for e in page.get("executions", []) if e.get("execution_id") == "race-1"), 1,
     "one record of race-1 in the store", page)
reload_with("[Daemon]\nMaxConcurrent=1\nMaxQueued=2\n")

# A bad drop-in is refused on reload and the running configuration stays.
with open(f"{confdir}/sandboxd.conf.d/60-bad.conf", "w") as f:
    f.write("[Daemon]\nMaxConcurrent=2\nNoSuchKey=1\n")
p = subprocess.run(["systemctl", "reload", "sandboxd.service"], capture_output=True, text=True)
t.ok(p.returncode != 0, "systemctl reload of a bad drop-in fails", p.stderr)
t.eq(health()["slots"], 1, "a bad reload keeps the previous configuration")
log = subprocess.run(["journalctl", "-u", "sandboxd.service", "--no-pager", "-o", "cat"], capture_output=True,
                     text=True).stdout
t.ok("60-bad.conf:3: unknown key 'NoSuchKey' in section [Daemon]" in log, "the error names file and line",
     log[-2000:])
os.unlink(f"{confdir}/sandboxd.conf.d/60-bad.conf")

t.done()

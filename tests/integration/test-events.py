# SPDX-License-Identifier: LGPL-2.1-or-later
# Live output (issue 18): GET /v1/executions/{id}/events is a stream of Server-Sent Events —
# status (queued, running), stdout/stderr as the program writes, elided, result — that resumes with
# Last-Event-ID, replays a final execution, serves several readers, refuses other callers, and
# keeps the daemon's memory flat while a program writes 1 GiB under three readers.
import json
import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
from lib import *  # noqa: E402,F401,F403

t = Tap()


def sse_all(eid, last_id=None):
    conn, resp = sse_open(eid, last_id)
    evs = list(sse_iter(resp)) if resp.status == 200 else []
    conn.close()
    return resp.status, evs


def text_of(evs, stream):
    return "".join(e["data"]["text"] for e in evs if e["event"] == stream)


def ids_increase(evs):
    last = (0, 0, 0)
    for e in evs:
        cur = tuple(int(x) for x in e["id"].split("."))
        if any(c < l for c, l in zip(cur, last)):
            return False
        last = cur
    return True


# ---- live: print, sleep 2 s, print ----
code = ("import sys, time\nprint('first', flush=True)\nsys.stderr.write('err line\\n'); sys.stderr.flush()\n"
        "time.sleep(2)\nprint('second', flush=True)\n")
st, acc = submit(code)
t.eq(st, 202, "submitted", acc)
eid = acc["execution_id"]
conn, resp = sse_open(eid)
t.eq(resp.status, 200, "events: 200")
t.ok(resp.getheader("Content-Type", "").startswith("text/event-stream"), "events: text/event-stream",
     resp.getheader("Content-Type"))
seen = []
status_when_first = None
for ev in sse_iter(resp):
    seen.append(ev)
    if ev["event"] == "stdout" and status_when_first is None:
        # The program is asleep after its first line: the record is not final yet.
        status_when_first = get(eid)[1].get("status")
conn.close()
names = [e["event"] for e in seen]
t.eq(names[0:2], ["status", "status"], "queued then running status first", names)
t.eq([e["data"]["status"] for e in seen[0:2]], ["queued", "running"], "statuses", seen[0:2])
t.ok(seen[1]["data"].get("started_at"), "running status says when it started", seen[1])
t.eq(status_when_first, "running", "the first stdout event arrived while the program still ran")
t.eq(names[-1], "result", "the last event is the result", names)
res = seen[-1]["data"]
t.eq((res.get("status"), res.get("exit_code")), ("success", 0), "result carries the final record", res)
t.eq(res.get("stdout"), "first\nsecond\n", "result's stdout", res)
t.eq(text_of(seen, "stdout"), "first\nsecond\n", "stdout events carry the whole stdout in order", seen)
t.eq(text_of(seen, "stderr"), "err line\n", "stderr events", seen)
t.ok(names.index("stdout") < names.index("result"), "stdout before result", names)
t.ok(ids_increase(seen), "every event has an id, none goes back", [e.get("id") for e in seen])
st2, direct = get(eid)
for k in ("execution_id", "status", "stdout", "stderr", "exit_code", "stdout_bytes"):
    t.eq(res.get(k), direct.get(k), f"result event equals GET /v1/executions/{{id}}: {k}")

# ---- replay of a final execution ----
st, rep = sse_all(eid)
t.eq(st, 200, "replay: 200")
t.eq([e["event"] for e in rep][0:2], ["status", "status"], "replay: statuses", rep)
t.eq(text_of(rep, "stdout"), "first\nsecond\n", "replay: stdout", rep)
t.eq(text_of(rep, "stderr"), "err line\n", "replay: stderr", rep)
t.eq(rep[-1]["event"], "result", "replay ends with the result")

# ---- resume with Last-Event-ID ----
first_out = next(e for e in seen if e["event"] == "stdout")
st, rest = sse_all(eid, first_out["id"])
got = [e for e in rest if e["event"] != "elided"]
t.ok(all(e["event"] != "status" for e in rest), "resume: no status repeated", rest)
t.eq(text_of(rest, "stdout") + "".join("" for e in rest), "first\nsecond\n"[len(first_out["data"]["text"]):],
     "resume: exactly the stdout after that event", rest)
t.eq(rest[-1]["event"], "result", "resume: ends with the result", rest)
st, none = sse_all(eid, rest[-1]["id"])
t.eq([e["event"] for e in none], [], "resume after the result: nothing more", none)

# Resume in mid-run, from a live stream.
st, acc = submit("import time\nprint('a', flush=True)\ntime.sleep(2)\nprint('b', flush=True)\n")
eid2 = acc["execution_id"]
conn, resp = sse_open(eid2)
it = sse_iter(resp)
part = []
for ev in it:
    part.append(ev)
    if ev["event"] == "stdout":
        break
conn.close()
st, rest = sse_all(eid2, part[-1]["id"])
t.eq(text_of(part, "stdout") + text_of(rest, "stdout"), "a\nb\n", "live resume: nothing repeated, nothing skipped",
     (part, rest))
t.ok(not any(e["event"] == "elided" for e in rest), "live resume: no gap", rest)

# ---- two readers at once ----
st, acc = submit("import time\nfor i in range(3):\n    print('tick', i, flush=True); time.sleep(0.5)\n")
eid3 = acc["execution_id"]
results = [None, None]


def reader(i):
    results[i] = sse_all(eid3)


ths = [threading.Thread(target=reader, args=(i,)) for i in range(2)]
for th in ths:
    th.start()
for th in ths:
    th.join()
for i in range(2):
    st, evs = results[i]
    t.eq(text_of(evs, "stdout"), "tick 0\ntick 1\ntick 2\n", f"reader {i}: all of stdout", evs)
    t.eq(evs[-1]["event"] if evs else None, "result", f"reader {i}: ends with the result")

# ---- invalid UTF-8 replaced as in the result ----
st, acc = submit("import sys\nsys.stdout.buffer.write(b'ok \\xff bad \\x00 nul \\xe2\\x82\\xac euro\\n')\n")
st, evs = sse_all(acc["execution_id"])
out = text_of(evs, "stdout")
t.eq(out, evs[-1]["data"].get("stdout"), "invalid UTF-8: events' text is the result's", (out, evs[-1]))
t.ok("\ufffd" in out and "\u20ac" in out and "\x00" not in out, "invalid bytes become U+FFFD", repr(out))
# Resuming a stored execution in the middle of a stream whose text is not its bytes (replaced): the
# rest is announced as elided (the result has it), never guessed.
st, mid = sse_all(acc["execution_id"], "2.3.0")
t.eq([(e["event"], e["data"].get("stream"), e["data"].get("bytes")) for e in mid[:-1]],
     [("elided", "stdout", evs[-1]["data"]["stdout_bytes"] - 3)], "resume into replaced text: one elided event", mid)
t.eq(mid[-1]["event"] if mid else None, "result", "... then the result")

# ---- foreign caller refused ----
os.chmod(SOCKET, 0o666)
code = ("import sys\nsys.path.insert(0, %r)\nfrom lib import UnixConnection, SOCKET\n"
        "c = UnixConnection(SOCKET)\nc.request('GET', '/v1/executions/%s/events')\nr = c.getresponse()\n"
        "print(r.status, r.read().decode())\n" % (os.path.dirname(__file__), eid))
p = subprocess.run(["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups", "python3", "-c", code],
                   capture_output=True, text=True, env=dict(os.environ))
t.ok(p.stdout.startswith("404 ") and "first" not in p.stdout, "another caller gets 404, no output", p.stdout + p.stderr)
st, _ = request("GET", "/v1/executions/nonexistent-id/events")
t.eq(st, 404, "unknown execution: 404")

# ---- sandboxctl run prints as it comes; logs; logs -f ----
CTL = os.path.join(BUILD, "sandboxctl", "sandboxctl")
p = subprocess.Popen([CTL, "run", "-c", "import time\nprint('early', flush=True)\ntime.sleep(2)\nprint('late')\n"
                      "import sys\nsys.exit(3)\n"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
line = p.stdout.readline()
running_then = [e for e in json.loads(subprocess.run([CTL, "list", "--json"], capture_output=True,
                                                     text=True).stdout or "{}").get("executions", [])
                if e.get("status") == "running"]
out_rest, err = p.communicate(timeout=120)
t.eq(line, b"early\n", "sandboxctl run: the first line came out", err)
t.ok(len(running_then) >= 1, "sandboxctl run: ... while the execution was still running", running_then)
t.eq(out_rest, b"late\n", "sandboxctl run: then the rest, once", out_rest)
t.eq(p.returncode, 3, "sandboxctl run: exits like the program", err)

st, acc = submit("import sys, time\nprint('L1', flush=True)\nsys.stderr.write('E1\\n')\ntime.sleep(1.5)\n"
                 "print('L2')\nsys.exit(4)\n")
lid = acc["execution_id"]
f = subprocess.run([CTL, "logs", "-f", lid], capture_output=True, text=True, timeout=120)
t.eq((f.stdout, f.stderr, f.returncode), ("L1\nL2\n", "E1\n", 4), "sandboxctl logs -f: output and exit status",
     f)
f = subprocess.run([CTL, "logs", lid], capture_output=True, text=True, timeout=60)
t.eq((f.stdout, f.stderr, f.returncode), ("L1\nL2\n", "E1\n", 0), "sandboxctl logs: the stored output", f)
f = subprocess.run([CTL, "logs", "-f", "no-such-execution"], capture_output=True, text=True, timeout=60)
t.ok(f.returncode != 0 and "no-such-execution" in f.stderr, "sandboxctl logs -f: unknown id refused", f)

# ---- a restart of sandboxd under a reader; resume from the new instance ----
st, acc = submit("import time\nprint('before', flush=True)\ntime.sleep(4)\nprint('after', flush=True)\n",
                 limits={"timeout_ms": 60000})
rid = acc["execution_id"]
conn, resp = sse_open(rid)
got = []
for ev in sse_iter(resp):
    got.append(ev)
    if ev["event"] == "stdout":
        break
old_pid = daemon_pid()
subprocess.run(["systemctl", "restart", "sandboxd.service"], check=True)
cut = list(sse_iter(resp))
conn.close()
t.ok(all(e["event"] != "result" for e in cut), "restart: the old stream ends without a result", cut)
t.ok(wait_until(lambda: daemon_pid() not in (0, old_pid) and
                subprocess.run(["systemctl", "is-active", "-q", "sandboxd.service"]).returncode == 0, 20),
     "restart: sandboxd is back")
got += [e for e in cut]
st, rest = sse_all(rid, got[-1]["id"])
t.eq(text_of(got, "stdout") + text_of(rest, "stdout"), "before\nafter\n",
     "restart: resumed from the new instance, nothing repeated or skipped", (got, rest))
t.eq(rest[-1]["event"] if rest else None, "result", "restart: the resumed stream ends with the result")

# sandboxctl logs -f across a restart: it resumes with Last-Event-ID, nothing printed twice.
st, acc = submit("import time\nprint('one', flush=True)\ntime.sleep(4)\nprint('two', flush=True)\n",
                 limits={"timeout_ms": 60000})
p = subprocess.Popen([CTL, "logs", "-f", acc["execution_id"]], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
first = p.stdout.readline()
old_pid = daemon_pid()
subprocess.run(["systemctl", "restart", "sandboxd.service"], check=True)
rest, err = p.communicate(timeout=120)
t.eq((first + rest, p.returncode), (b"one\ntwo\n", 0), "sandboxctl logs -f: resumed across a restart, once each",
     err)

# ---- a silent program: the stream carries a keepalive comment every 15 s ----
# (proxies close a connection idle for a minute or so). Raw lines here; sandboxctl logs -f reads the
# same stream at the same time and must print the output alone.
st, acc = submit("import time\nprint('a', flush=True)\ntime.sleep(17)\nprint('b', flush=True)\n",
                 limits={"timeout_ms": 60000})
kid = acc["execution_id"]
p = subprocess.Popen([CTL, "logs", "-f", kid], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
conn, resp = sse_open(kid)
lines = []
while True:
    raw = resp.readline()
    if not raw:
        break
    lines.append(raw.decode("utf-8").rstrip("\n"))
conn.close()
out, err = p.communicate(timeout=120)
data = [json.loads(l[len("data: "):]) for l in lines if l.startswith("data: ")]
texts = [d.get("text") for d in data if "text" in d]
ka = [i for i, l in enumerate(lines) if l == ": keepalive"]
t.ok(len(ka) >= 1 and texts == ["a\n", "b\n"], "a program silent for 17 s: a ': keepalive' comment between its two "
     "lines", lines)
t.ok(all(lines[i + 1] == "" for i in ka if i + 1 < len(lines)), "each keepalive is an SSE comment of its own, "
     "ended by a blank line", lines)
t.eq((out, p.returncode), (b"a\nb\n", 0), "sandboxctl logs -f ignores the keepalive comments", err)

# ---- 1 GiB under three readers: the daemon's memory stays flat ----
rss_before = daemon_rss_kib()
code = ("import sys\nline = b'y' * 1023 + b'\\n'\nchunk = line * 1024\n"
        "for i in range(1024):\n    sys.stdout.buffer.write(chunk)\n")
st, acc = submit(code, limits={"timeout_ms": 120000})
eid4 = acc["execution_id"]
big = [None] * 3
peak = [rss_before]


def big_reader(i):
    conn, resp = sse_open(eid4)
    n = 0
    names = []
    for ev in sse_iter(resp):
        names.append(ev["event"])
        n += len(ev["data"].get("text", "")) if isinstance(ev.get("data"), dict) else 0
        if i == 2 and len(names) < 20:
            time.sleep(0.1)     # a slow reader: it falls behind the backlog
        if i == 0 and len(names) % 50 == 0:
            peak[0] = max(peak[0], daemon_rss_kib())
    conn.close()
    big[i] = (names, n)


ths = [threading.Thread(target=big_reader, args=(i,)) for i in range(3)]
for th in ths:
    th.start()
for th in ths:
    th.join()
rss_after = daemon_rss_kib()
peak[0] = max(peak[0], rss_after)
print(f"# daemon RSS before {rss_before} KiB, peak {peak[0]} KiB, after {rss_after} KiB")
for i in range(3):
    names, n = big[i]
    t.eq(names[-1] if names else None, "result", f"1 GiB reader {i}: ends with the result")
    t.ok("elided" in names, f"1 GiB reader {i}{' (slow)' if i == 2 else ''}: told what was elided", names[:20])
    t.ok(n < (1 << 30) // 4, f"1 GiB reader {i}: got a bounded share as text ({n} bytes)")
if os.environ.get("SANDBOX_HARNESS_SANITIZERS"):
    # As test-output: AddressSanitizer's quarantine keeps freed memory, RSS says nothing there.
    print("# daemon RSS not judged under AddressSanitizer (its quarantine keeps freed memory)")
else:
    t.ok(peak[0] - rss_before < 32 * 1024, f"daemon RSS grew {peak[0] - rss_before} KiB (< 32 MiB)",
         (rss_before, peak[0], rss_after))
st, r4 = get(eid4)
t.eq(r4.get("stdout_bytes"), 1 << 30, "the 1 GiB run's result is whole", r4.get("stdout_bytes"))

t.done()

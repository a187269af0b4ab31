# SPDX-License-Identifier: LGPL-2.1-or-later
# Callback deliveries to real HTTP receivers on 127.0.0.1 (threads of this process):
#   a) one that fails the first 3 attempts with 500/503 accepts the 4th;
#   b) one that hangs longer than CallbackTimeoutSec= on the first attempt accepts a later one;
#   c) one that is down until sandboxd restarts gets the delivery after the restart;
#   d) one that answers 400 is not retried;
#   e) while a receiver hangs, other executions and other deliveries go on;
# each ends with exactly one accepted delivery (counted by Sandboxd-Delivery-Id), every attempt of a
# delivery carries the same body and delivery id, every signature verifies with the key from the
# state directory and fails with another key, and the record shows callback {state, attempts, ...}.
import hashlib
import hmac
import http.server
import json
import os
import select
import socket
import stat
import subprocess
import sys
import threading

sys.path.insert(0, os.path.dirname(__file__))
from lib import *  # noqa: E402,F401,F403

t = Tap()
confdir = os.environ["SANDBOXD_CONFIG_DIR"]
KEY_PATH = "/var/lib/sandboxd/callback.key"


def configure(timeout_sec):
    # The receivers are on 127.0.0.1, refused by default (test-ssrf checks that).
    os.makedirs(f"{confdir}/sandboxd.conf.d", exist_ok=True)
    with open(f"{confdir}/sandboxd.conf.d/50-callbacks.conf", "w") as f:
        f.write("[Callbacks]\n"
                "CallbackAllowInternalAddresses=yes\n"
                f"CallbackTimeoutSec={timeout_sec}\n"
                "CallbackBackoffBaseMS=200\n"
                "CallbackBackoffMaxSec=1\n"
                "CallbackMaxAttempts=60\n"
                "CallbackMaxConcurrent=4\n")
    subprocess.run(["systemctl", "reload", "sandboxd.service"], check=True)


class Receiver:
    """An HTTP server on 127.0.0.1. behave(receiver, n) → status to answer the n-th request (1-based),
    or "hang" (wait without answering until the client closes or release is set, then answer 200 if
    released)."""

    def __init__(self, behave, port=0):
        self.behave = behave
        self.requests = []              # (headers dict, body bytes, outcome)
        self.lock = threading.Lock()
        self.release = threading.Event()
        self.hanging = threading.Event()    # a request is being held open right now
        self.client_closed = 0              # held requests the client gave up on
        rcv = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                n = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(n)
                with rcv.lock:
                    rcv.requests.append([dict(self.headers), body, None])
                    idx = len(rcv.requests)
                what = rcv.behave(rcv, idx)
                if what == "hang":
                    rcv.hanging.set()
                    closed = False
                    while not rcv.release.is_set():
                        r, _, _ = select.select([self.connection], [], [], 0.1)
                        if r and self.connection.recv(1, socket.MSG_PEEK) == b"":
                            closed = True
                            break
                    rcv.hanging.clear()
                    if closed:
                        with rcv.lock:
                            rcv.client_closed += 1
                            rcv.requests[idx - 1][2] = "client closed"
                        self.close_connection = True
                        return
                    what = 200
                with rcv.lock:
                    rcv.requests[idx - 1][2] = what
                out = b'{"ok": true}' if what == 200 else b'{"error": "nope"}'
                self.send_response(what)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def accepted(self):
        """Delivery ids answered 2xx, with how often each."""
        with self.lock:
            ids = [h.get("Sandboxd-Delivery-Id") for h, _, o in self.requests if o == 200]
        return {i: ids.count(i) for i in ids}

    def snapshot(self):
        with self.lock:
            return [(h, b, o) for h, b, o in self.requests]

    def stop(self):
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


def verify(key, headers, body):
    """What a receiver does: recompute the signature over "t.body" and compare in constant time."""
    sig = headers.get("Sandboxd-Signature", "")
    try:
        parts = dict(p.split("=", 1) for p in sig.split(","))
        ts = parts["t"]
        want = hmac.new(key, ts.encode() + b"." + body, hashlib.sha256).hexdigest()
        return hmac.compare_digest(want, parts["v1"])
    except (KeyError, ValueError):
        return False


def outbox_size():
    st, body = request("GET", "/metrics")
    for line in body.get("_raw", "").splitlines():
        if line.startswith("sandboxd_callback_outbox_size "):
            return float(line.split()[1])
    return None


def callback_of(eid):
    st, rec = get(eid)
    return (rec or {}).get("callback") if st == 200 else None


def wait_final(eid, timeout=90):
    wait_until(lambda: (callback_of(eid) or {}).get("state") in ("delivered", "failed"), timeout, 0.2)
    return callback_of(eid) or {}


def check_delivery(name, rcv, eid, key, wrong_key, all_seen=True):
    """Every attempt of this execution: same delivery id, same body (the record), attempts numbered
    1, 2, ... (only the last ones reach a receiver that was down: all_seen=False), signatures valid
    with key and invalid with wrong_key; exactly one accepted."""
    reqs = [(h, b, o) for h, b, o in rcv.snapshot() if h.get("Sandboxd-Execution-Id") == eid]
    cb = callback_of(eid) or {}
    t.ok(len(reqs) > 0, f"{name}: the receiver saw the attempts", reqs)
    if not reqs:
        return reqs
    t.eq(len({h.get("Sandboxd-Delivery-Id") for h, _, _ in reqs}), 1, f"{name}: one delivery id on every attempt")
    t.eq(reqs[0][0].get("Sandboxd-Delivery-Id"), cb.get("delivery_id"), f"{name}: the record names that delivery id")
    t.eq(len({b for _, b, _ in reqs}), 1, f"{name}: the same body on every attempt")
    first = 1 if all_seen else (cb.get("attempts") or 0) - len(reqs) + 1
    t.eq([h.get("Sandboxd-Attempt") for h, _, _ in reqs], [str(first + i) for i in range(len(reqs))],
         f"{name}: Sandboxd-Attempt counts {first}, {first + 1}, ... up to the record's attempts")
    t.eq(reqs[-1][0].get("Sandboxd-Attempt"), str(cb.get("attempts")), f"{name}: the last attempt is the record's")
    t.ok(all(h.get("Content-Type") == "application/json" for h, _, _ in reqs), f"{name}: Content-Type JSON")
    t.ok(all(verify(key, h, b) for h, b, _ in reqs), f"{name}: every signature verifies with the key",
         [h.get("Sandboxd-Signature") for h, _, _ in reqs])
    t.ok(not any(verify(wrong_key, h, b) for h, b, _ in reqs), f"{name}: a receiver with the wrong key rejects all")
    # A tampered body does not verify either.
    h0, b0, _ = reqs[0]
    t.ok(not verify(key, h0, b0.replace(b"\"status\"", b"\"stat\\u0075s\"")), f"{name}: a tampered body fails")
    t.eq(rcv.accepted().get(reqs[0][0].get("Sandboxd-Delivery-Id")), 1, f"{name}: exactly one accepted delivery")
    st, rec = get(eid)
    rec.pop("callback", None)
    t.eq(json.loads(reqs[-1][1]), rec, f"{name}: the body is the execution's result")
    return reqs


# ---- set up ----
configure(3)
t.ok(wait_until(lambda: os.path.exists(KEY_PATH), 10), "the signing key was generated in the state directory")
st_key = os.stat(KEY_PATH)
t.eq(stat.S_IMODE(st_key.st_mode), 0o600, "the key file is 0600")
with open(KEY_PATH, "rb") as f:
    KEY = f.read().strip()
t.eq(len(KEY), 64, "a generated key is 64 hex characters")
WRONG = bytes(reversed(KEY))

# The sandbox sees nothing of the daemon's state, the key included.
res = run("import os\nfor p in ['/var/lib/sandboxd/callback.key', '/var/lib/sandboxd']:\n"
          "    print(p, os.path.exists(p))\n")
t.eq(res.get("stdout"), "/var/lib/sandboxd/callback.key False\n/var/lib/sandboxd False\n",
     "the sandbox cannot see the key or the state directory", res)

# Invalid URLs are refused at submission, naming the field.
for bad in ["ftp://127.0.0.1/x", "http://", "http://127.0.0.1/a b", "file:///etc/passwd", 5]:
    st, body = submit("print(1)", callback_url=bad)
    t.ok(st == 400 and body.get("error", {}).get("field", body.get("field")) == "callback_url",
         f"callback_url {bad!r} refused with 400", (st, body))

# ---- a), b), d) ----
flaky = Receiver(lambda r, n: [500, 503, 500][n - 1] if n <= 3 else 200)
hang1 = Receiver(lambda r, n: "hang" if n == 1 else 200)
reject = Receiver(lambda r, n: 400)

a = run("print('a')", callback_url=flaky.url)
b = run("print('b')", callback_url=hang1.url)
d = run("print('d')", callback_url=reject.url)
for name, r in (("a", a), ("b", b), ("d", d)):
    t.verdict(r, "success", None, f"execution {name}")

cb_a, cb_b, cb_d = wait_final(a["execution_id"]), wait_final(b["execution_id"]), wait_final(d["execution_id"])

t.eq((cb_a.get("state"), cb_a.get("attempts")), ("delivered", 4), "a: delivered on the 4th attempt", cb_a)
t.eq(cb_a.get("url"), flaky.url, "a: the record shows the URL")
t.ok(cb_a.get("delivered_at") and cb_a.get("last_error") is None, "a: delivered_at set, no last_error", cb_a)
reqs = check_delivery("a", flaky, a["execution_id"], KEY, WRONG)
t.eq([o for _, _, o in reqs], [500, 503, 500, 200], "a: 500, 503, 500, then accepted")

t.eq(cb_b.get("state"), "delivered", "b: delivered after the hang", cb_b)
t.ok((cb_b.get("attempts") or 0) >= 2, "b: more than one attempt", cb_b)
t.ok(wait_until(lambda: hang1.client_closed == 1, 10), "b: sandboxd gave up on the hanging attempt (its timeout)",
     hang1.client_closed)
check_delivery("b", hang1, b["execution_id"], KEY, WRONG)

t.eq((cb_d.get("state"), cb_d.get("attempts")), ("failed", 1), "d: a 400 fails after one attempt", cb_d)
t.eq(cb_d.get("last_error"), "HTTP 400", "d: last_error says why", cb_d)
t.eq(len(reject.snapshot()), 1, "d: the 400 receiver was asked once")

# ---- the journal: a caller's 2 KiB URL, failing 3 times, is not logged in full on every attempt ----
flaky_long = Receiver(lambda r, n: 503 if n <= 3 else 200)
long_url = flaky_long.url + "?token=" + "s" * (2000 - len(flaky_long.url))
lg = run("print('long')", callback_url=long_url)
cb_lg = wait_final(lg["execution_id"])
t.eq((cb_lg.get("state"), cb_lg.get("attempts")), ("delivered", 4), "long URL: delivered on the 4th attempt", cb_lg)
jl = subprocess.run(["journalctl", "-u", "sandboxd.service", "--no-pager", "-o", "cat", "-p", "info"],
                    capture_output=True, text=True).stdout.splitlines()
mine = [ln for ln in jl if lg["execution_id"] in ln and "callback" in ln]
t.ok(len(mine) <= 2, "long URL: at most two callback lines for the execution (first failure, outcome)", mine)
t.ok(all(len(ln) < 400 and "sssssssssssssssssssssssssssssssssssssssssssssssssssssssss" not in ln for ln in mine),
     "long URL: each line shows a shortened URL without its query", [ln[:300] for ln in mine])
t.ok(any("delivered" in ln and "attempt 4" in ln for ln in mine), "long URL: the outcome names the attempt count",
     mine)
flaky_long.stop()

# ---- e) no head-of-line blocking: a long timeout, a receiver that holds the attempt open ----
configure(120)
hang2 = Receiver(lambda r, n: "hang")
ok = Receiver(lambda r, n: 200)
x = run("print('x')", callback_url=hang2.url)
t.ok(hang2.hanging.wait(60), "e: the hanging receiver holds an attempt open")
others = [run(f"print({i})", callback_url=ok.url) for i in range(3)]
plain = run("print('plain')")
t.verdict(plain, "success", None, "e: an execution without a callback runs meanwhile")
t.ok(all(o.get("status") == "success" for o in others), "e: executions with callbacks run meanwhile")
t.ok(wait_until(lambda: len(ok.accepted()) == 3, 60, 0.1), "e: the other deliveries arrive meanwhile",
     ok.snapshot())
t.ok(hang2.hanging.is_set(), "e: ... while the hanging attempt is still open")
cbx = callback_of(x["execution_id"]) or {}
t.eq((cbx.get("state"), cbx.get("attempts")), ("pending", 1), "e: the hanging delivery is pending, attempt 1", cbx)
for o in others:
    check_delivery(f"e {o['execution_id']}", ok, o["execution_id"], KEY, WRONG)
hang2.release.set()
cbx = wait_final(x["execution_id"])
t.eq((cbx.get("state"), cbx.get("attempts")), ("delivered", 1), "e: released, the held attempt is accepted", cbx)
check_delivery("e x", hang2, x["execution_id"], KEY, WRONG)

# ---- c) down until the daemon restarts; and an attempt in flight at the stop ----
# A long timeout: the attempt held open by hang3 is still in flight when sandboxd stops. The stop
# aborts it and hands it back as due, so the restarted daemon retries it at once (not after the
# attempt's lease of CallbackTimeoutSec= + 30 s).
configure(120)
hang3 = Receiver(lambda r, n: "hang" if n == 1 else 200)
h3 = run("print('h3')", callback_url=hang3.url)
t.ok(hang3.hanging.wait(60), "c: an attempt is in flight")
s = socket.socket()
s.bind(("127.0.0.1", 0))
port = s.getsockname()[1]
s.close()                   # nothing listens there now: connections are refused
c = run("print('c')", callback_url=f"http://127.0.0.1:{port}/hook")
t.ok(wait_until(lambda: ((callback_of(c["execution_id"]) or {}).get("attempts") or 0) >= 2, 60, 0.1),
     "c: retried while the receiver is down", callback_of(c["execution_id"]))
cbc = callback_of(c["execution_id"]) or {}
t.eq(cbc.get("state"), "pending", "c: still pending", cbc)
t.eq(cbc.get("last_error"), "connection failed", "c: last_error is the class of the failure, nothing more", cbc)
t.eq(outbox_size(), 2.0, "c: metrics: two deliveries pending (the one in flight, the one to the receiver that is down)")

# An execution still running across the restart keeps its callback_url (adopted, then delivered).
st, adopted = submit("import time\ntime.sleep(3)\nprint('adopted')\n", callback_url=ok.url)
t.eq(st, 202, "c: a long execution with a callback submitted", adopted)
t.ok(wait_until(lambda: get(adopted["execution_id"])[1].get("status") == "running", 60, 0.1),
     "c: it runs when sandboxd restarts")

old_pid = daemon_pid()
subprocess.run(["systemctl", "restart", "sandboxd.service"], check=True)
t.ok(wait_until(lambda: daemon_pid() not in (0, old_pid), 30), "c: sandboxd restarted")
down = Receiver(lambda r, n: 200, port=port)
cbc = wait_final(c["execution_id"])
t.eq(cbc.get("state"), "delivered", "c: delivered after the restart", cbc)
t.ok((cbc.get("attempts") or 0) >= 3, "c: the attempts before the restart are counted", cbc)
check_delivery("c", down, c["execution_id"], KEY, WRONG, all_seen=False)

cb3 = wait_final(h3["execution_id"], 60)
t.eq((cb3.get("state"), cb3.get("attempts")), ("delivered", 2),
     "c: the attempt aborted by the stop was retried after the restart", cb3)
t.ok(wait_until(lambda: hang3.client_closed == 1, 10), "c: the stop closed the attempt in flight", hang3.client_closed)
check_delivery("c in flight", hang3, h3["execution_id"], KEY, WRONG)

cba = wait_final(adopted["execution_id"], 60)
t.eq((cba.get("state"), cba.get("attempts")), ("delivered", 1), "c: the adopted execution's result was delivered",
     cba)
check_delivery("c adopted", ok, adopted["execution_id"], KEY, WRONG)
t.ok(b"adopted" in [b for h, b, o in ok.snapshot()
                    if h.get("Sandboxd-Execution-Id") == adopted["execution_id"]][-1],
     "c: ... with its output")

# Nothing of a), b), d), e) was delivered again by the restarted daemon.
for rcv, name in ((flaky, "a"), (hang1, "b"), (reject, "d"), (ok, "e"), (hang2, "x")):
    t.ok(all(v == 1 for v in rcv.accepted().values()), f"{name}: still exactly one accepted after the restart")
t.eq(len(reject.snapshot()), 1, "d: not retried after the restart")
t.eq(outbox_size(), 0.0, "metrics: nothing pending in the outbox any more")

# ---- sandboxctl --callback-url ----
ctl = os.path.join(BUILD, "sandboxctl", "sandboxctl")
if os.access(ctl, os.X_OK):
    p = subprocess.run([ctl, "--json", "run", "--callback-url", ok.url, "-c", "print('ctl')"], capture_output=True,
                       text=True)
    t.eq(p.returncode, 0, "sandboxctl run --callback-url", p.stderr)
    try:
        eid = json.loads(p.stdout)["execution_id"]
    except (ValueError, KeyError):
        eid = None
    t.ok(eid is not None, "sandboxctl printed the record", p.stdout)
    if eid:
        t.eq(wait_final(eid).get("state"), "delivered", "sandboxctl: delivered")
        check_delivery("sandboxctl", ok, eid, KEY, WRONG)
        p = subprocess.run([ctl, "show", eid], capture_output=True, text=True)
        t.ok(p.returncode == 0 and f"delivered after 1 attempt to {ok.url}" in p.stdout,
             "sandboxctl show prints the delivery", p.stdout + p.stderr)
    p = subprocess.run([ctl, "show", d["execution_id"]], capture_output=True, text=True)
    t.ok(f"failed after 1 attempt to {reject.url} (HTTP 400)" in p.stdout, "sandboxctl show prints a failed one",
         p.stdout + p.stderr)
else:
    t.ok(False, f"sandboxctl binary at {ctl}")

# The same execution_id again: with the same callback_url the same execution (no second delivery),
# with another one a conflict.
idem = run("print('idem')", execution_id="cb_idem", callback_url=ok.url)
t.eq(wait_final("cb_idem").get("state"), "delivered", "idempotent: delivered")
st, again = request("POST", "/v1/executions?wait=true",
                    {"language": "python", "code": "print('idem')", "execution_id": "cb_idem", "callback_url": ok.url})
t.ok(st == 200 and (again.get("callback") or {}).get("attempts") == 1, "idempotent: the same request again is the "
     "same execution, its delivery shown", (st, again))
st, other = submit("print('idem')", execution_id="cb_idem", callback_url=flaky.url)
t.eq(st, 409, "idempotent: the same id with another callback_url is a conflict", other)
t.eq(sum(1 for h, _, o in ok.snapshot() if h.get("Sandboxd-Execution-Id") == "cb_idem"), 1,
     "idempotent: delivered once")

for rcv in (flaky, hang1, reject, hang2, hang3, ok, down):
    rcv.stop()
os.unlink(f"{confdir}/sandboxd.conf.d/50-callbacks.conf")
subprocess.run(["systemctl", "reload", "sandboxd.service"], check=True)
t.done()

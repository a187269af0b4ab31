#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The PostgreSQL store's server goes away under load (issue 22): the daemon refuses what it cannot
record (503 store_error, nothing run for it), keeps the results of the runs that end meanwhile and
writes them once the server is back (runner.c's unsaved records), reconnects, and drains its queue;
no acknowledged submission is lost, which a restart of the daemon afterwards (every answer from the
store, none from memory) shows. Then a server that stays connected but answers nothing (its backends
for the daemon stopped): the store takes every call, and while 1024 wait every request that needs it
is refused with 503 store_error at once (D-Bus too), health answers, and the requests held meanwhile
are all answered once the server goes on.

Runs only in the suite's -pg leg: under tests/pg/pg-scratch, whose control FIFO stops and starts the
server (SANDBOXD_TEST_PG_CONTROL), with the daemon's Store= pointing at it (SANDBOX_HARNESS_STORE)."""

import os
import re
import resource
import select
import socket
import subprocess
import threading
import time

from lib import SOCKET, Tap, UnixConnection, get, health, pg_server, request, skip_all, wait_until

control = os.environ.get("SANDBOXD_TEST_PG_CONTROL")
if not control or not os.environ.get("SANDBOX_HARNESS_STORE"):
    skip_all("needs the PostgreSQL store and pg-scratch's control FIFO (the suite's -pg leg)")

t = Tap()


def code_of(answer):
    return (answer.get("error") or {}).get("code") if isinstance(answer, dict) else None


def post(code, **fields):
    body = {"language": "python", "code": code}
    body.update(fields)
    return request("POST", "/v1/executions", body, timeout=60)


st, h = request("GET", "/v1/health")
t.eq(st, 200, "the daemon runs on the PostgreSQL store")

# Runs that are running when the server goes away, and end while it is away.
running = []
for i in range(3):
    st, r = post(f"import time\ntime.sleep(2)\nprint('slept', {i})")
    t.eq(st, 202, f"sleeper {i} accepted", r)
    running.append((r.get("execution_id"), f"slept {i}\n"))
t.ok(wait_until(lambda: all(get(e)[1].get("status") == "running" for e, _ in running), 20),
     "the three sleepers run", [get(e)[1].get("status") for e, _ in running])

# Load from a second thread while the server is stopped and started again: every answer is either an
# acknowledgement (202, an execution id) or a refusal (503 store_error); what was acknowledged must
# finish, with its output.
acked, refused, other = [], [], []
stop_load = threading.Event()


def load():
    i = 0
    while not stop_load.is_set():
        try:
            st, r = post(f"print('load', {i})")
        except Exception as e:  # noqa: BLE001 - a transport error is an answer we count as wrong
            other.append(repr(e))
            continue
        if st == 202 and r.get("execution_id"):
            acked.append((r["execution_id"], f"load {i}\n"))
        elif st in (503, 507) and code_of(r) == "store_error":
            refused.append(r)
        else:
            other.append((st, r))
        i += 1
        time.sleep(0.05)


loader = threading.Thread(target=load)
loader.start()
time.sleep(0.5)
t.eq(pg_server("stop"), 0, "PostgreSQL stopped (immediate: a crash to its clients)")
time.sleep(0.3)
st, r = post("print('while down')")
t.ok(st in (503, 507) and code_of(r) == "store_error" and "execution_id" not in r,
     "a submission while the server is down is refused with store_error, no execution id", (st, r))
t.ok("PostgreSQL" not in str(r) and "host=" not in str(r),
     "the refusal does not name the backend's connection", r)
# A run that would make a session: refused the same way, and saying as little of the backend.
st, r = request("POST", "/v1/executions", {"language": "python", "code": "print(1)", "session_id": "down-sess"})
t.ok(st in (503, 507) and code_of(r) == "store_error" and "execution_id" not in r,
     "a run of a new session while the server is down is refused with store_error", (st, r))
t.ok("PostgreSQL" not in str(r) and "host=" not in str(r) and "socket" not in str(r),
     "that refusal does not name the backend's connection either", r)
st, r = request("GET", "/v1/sessions/down-sess")
t.eq(st, 404, "the session made for it is gone again (its row and the record went together, neither taken)")
# The sleepers end while the server is down: their results wait in the daemon.
time.sleep(2.5)
t.ok(all(get(e)[0] == 200 for e, _ in running), "the sleepers' records answer from memory while it is down",
     [get(e) for e, _ in running])
t.eq(pg_server("start"), 0, "PostgreSQL started again")
time.sleep(1.0)
stop_load.set()
loader.join(60)
t.ok(not other, "every answer under the outage was 202 or store_error", other[:5])
t.ok(len(refused) > 0 and len(acked) > 0,
     f"under the outage some submissions were refused ({len(refused)}) and others acknowledged ({len(acked)})")

# The daemon reconnects by itself (backoff up to 30 s); new work goes through.
def accepted():
    st, _ = post("print('after')")
    return st == 202


t.ok(wait_until(accepted, 45, 0.5), "after the server is back, submissions are accepted again")

every = running + acked


def finished(e, out):
    st, r = get(e)
    return st == 200 and r.get("status") == "success" and r.get("stdout") == out


t.ok(wait_until(lambda: all(finished(e, o) for e, o in every), 60, 0.2),
     f"all {len(every)} acknowledged executions finished with their output",
     [(e, get(e)[1].get("status"), get(e)[1].get("stdout")) for e, o in every if not finished(e, o)][:5])
t.ok(wait_until(lambda: health().get("queued", 1) == 0 and health().get("running", 1) == 0, 30),
     "the queue drained", {k: health().get(k) for k in ("queued", "running")})



def metric(name):
    """A metric's value from GET /metrics (Prometheus text), None if it is not there."""
    c = UnixConnection(SOCKET, timeout=30)
    c.request("GET", "/metrics")
    text = c.getresponse().read().decode()
    c.close()
    m = re.search(rf"^{name} (\S+)$", text, re.M)
    return float(m.group(1)) if m else None


t.ok(wait_until(lambda: metric("sandboxd_records_unsaved") == 0.0, 15, 0.2),
     "sandboxd_records_unsaved drops to 0: every final record refused during the outage was written",
     metric("sandboxd_records_unsaved"))
# A restart of the daemon: nothing is in its memory any more, every answer comes from the store.
subprocess.run(["systemctl", "restart", "sandboxd.service"], check=True)
missing = [(e, get(e)) for e, o in every if not finished(e, o)]
t.ok(not missing, f"after a daemon restart, all {len(every)} records are in PostgreSQL as they finished",
     missing[:5])
log = subprocess.run(["journalctl", "-u", "sandboxd.service", "-o", "cat", "--no-pager"], capture_output=True,
                     text=True).stdout
t.ok("final records the store had refused" in log,
     "the journal tells of the final records written again once the server was back", log[-1500:])

# ---- The store far behind: it takes every call, and while 1024 wait the front ends refuse what would
# queue more (503 store_error; D-Bus StoreError), /v1/health still answers, and every request held
# meanwhile is answered once the server goes on. The server's backends for the daemon are stopped
# (SIGSTOP: connected, silent) and more requests than that are sent at once, each one store read.
N_BEHIND = 1200
conf_dir = os.path.join(os.environ["SANDBOXD_CONFIG_DIR"], "sandboxd.conf.d")
os.makedirs(conf_dir, exist_ok=True)
with open(os.path.join(conf_dir, "60-behind.conf"), "w") as f:
    f.write("[Daemon]\nMaxConnections=2048\n")
subprocess.run(["systemctl", "restart", "sandboxd.service"], check=True)
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 4096)), hard))
t.eq(pg_server("pause"), 0, "the daemon's PostgreSQL backends stopped (pg-scratch: SIGSTOP)")
socks = []
try:
    for i in range(N_BEHIND):
        c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        c.settimeout(30)
        c.connect(SOCKET)
        c.sendall(f"GET /v1/executions/behind-{i} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n".encode())
        socks.append(c)
    time.sleep(1.0)
    st, h = request("GET", "/v1/health", timeout=30)
    t.eq(st, 200, "GET /v1/health answers while the store is behind (it needs no store)")
    p = subprocess.run(["busctl", "call", "io.sandboxd.Sandbox1", "/io/sandboxd/Sandbox1",
                        "io.sandboxd.Sandbox1.Manager", "GetExecution", "s", "behind-bus"],
                       capture_output=True, text=True, timeout=60)
    t.ok(p.returncode != 0 and "far behind" in p.stderr, "D-Bus GetExecution while it is behind: refused",
         (p.returncode, p.stdout, p.stderr))
    answers = {}

    def read_ready(timeout):
        """The status and body of each socket that has its whole answer (the server closes)."""
        pending = {c.fileno(): c for c in socks if c not in answers}
        poller = select.poll()   # not select(): more than FD_SETSIZE sockets
        for fd in pending:
            poller.register(fd, select.POLLIN)
        ready = [pending[fd] for fd, _ in poller.poll(int(timeout * 1000))] if pending else []
        for c in ready:
            data = b""
            c.settimeout(30)
            while True:
                chunk = c.recv(65536)
                if not chunk:
                    break
                data += chunk
            head, _, body = data.partition(b"\r\n\r\n")
            status = int(head.split()[1]) if head.startswith(b"HTTP/") else -1
            answers[c] = (status, body.decode(errors="replace"))
        return len(ready)

    read_ready(2.0)
    refused = [b for st, b in answers.values() if st == 503 and "store_error" in b and "far behind" in b]
    t.ok(len(refused) >= N_BEHIND - 1024 and len(refused) == len(answers),
         f"with the server silent, {N_BEHIND} reads at once: {len(refused)} refused at once with 503 store_error "
         f"(the store far behind), the others held", (len(answers), [a for a in answers.values()][:3]))
finally:
    t.eq(pg_server("resume"), 0, "the backends go on (SIGCONT)")
deadline = time.time() + 60
while len(answers) < len(socks) and time.time() < deadline:
    read_ready(1.0)
held = [(st, b) for c, (st, b) in answers.items()]
t.eq(len(answers), N_BEHIND, "once the server goes on, every request has its answer (none lost)")
t.eq(sum(1 for st, b in held if st == 404 and "not_found" in b) + len(refused), N_BEHIND,
     "the held ones: 404 not_found, as the store says", [x for x in held if x[0] not in (404, 503)][:3])
for c in socks:
    c.close()
st, r = request("GET", "/v1/executions/behind-after")
t.eq(st, 404, "the store caught up: a read is served again (404, not 503)", r)
os.unlink(os.path.join(conf_dir, "60-behind.conf"))
subprocess.run(["systemctl", "restart", "sandboxd.service"], check=True)
t.done()

# SPDX-License-Identifier: LGPL-2.1-or-later
# The network worker (docs/ARCHITECTURE.md, "The network worker"): libcurl runs in sandboxd-net, a
# child of the daemon, not in the root daemon. Read from /proc: it is "nobody" (all four UIDs and
# GIDs, no supplementary group), its capability sets and bounding set are empty, no_new_privs is set
# and a seccomp filter is loaded. Then, against a real HTTP server on 127.0.0.1: a download and a
# callback go through it; SIGKILL during a download fails that execution with input_error naming the
# worker, and the daemon lives on; a new worker (unprivileged as well) is started; SIGKILL during a
# callback attempt is retried and delivered once; downloads and callbacks work after the restart.
import http.server
import os
import pwd
import re
import signal
import subprocess
import sys
import threading

sys.path.insert(0, os.path.dirname(__file__))
from lib import *  # noqa: E402,F401,F403

t = Tap()
CONF = os.environ["SANDBOXD_CONFIG_DIR"]
CSV = b"name,value\n" + b"".join(b"row%d,%d\n" % (i, i) for i in range(1, 101))   # sum 5050
SUM = "import csv; print(sum(int(r['value']) for r in csv.DictReader(open('/workspace/input/d.csv'))))"

lock = threading.Lock()
seen = {}                        # path -> requests
accepted = {}                    # delivery id -> accepted POSTs
slow_release = threading.Event()
hook_hang = threading.Event()    # set while a POST to /hang-once is held open


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def count(self):
        with lock:
            seen[self.path] = seen.get(self.path, 0) + 1
            return seen[self.path]

    def do_GET(self):
        self.count()
        if self.path == "/data.csv":
            self.send_response(200)
            self.send_header("Content-Length", str(len(CSV)))
            self.end_headers()
            self.wfile.write(CSV)
        elif self.path == "/slow":     # a first part, then nothing until released
            self.send_response(200)
            self.send_header("Content-Length", "100000")
            self.end_headers()
            self.wfile.write(b"a,b\n")
            self.wfile.flush()
            slow_release.wait(60)
        else:
            self.send_error(404)

    def do_POST(self):
        n = self.count()
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.path == "/hang-once" and n == 1:
            # Held until the client (the worker) goes away.
            hook_hang.set()
            try:
                while self.connection.recv(1):
                    pass
            except OSError:
                pass
            hook_hang.clear()
            return
        with lock:
            d = self.headers.get("Sandboxd-Delivery-Id")
            accepted[d] = accepted.get(d, 0) + 1
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()


class Server(http.server.ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        pass


server = Server(("127.0.0.1", 0), Handler)
server.daemon_threads = True
threading.Thread(target=server.serve_forever, daemon=True).start()
URL = f"http://127.0.0.1:{server.server_address[1]}"

os.makedirs(f"{CONF}/sandboxd.conf.d", exist_ok=True)
with open(f"{CONF}/sandboxd.conf.d/50-net-worker.conf", "w") as f:
    f.write("[Inputs]\nInputAllowInternalAddresses=yes\nInputTimeoutSec=60\n"
            "[Callbacks]\nCallbackAllowInternalAddresses=yes\nCallbackTimeoutSec=30\n"
            "CallbackBackoffBaseMS=200\nCallbackBackoffMaxSec=1\n")
subprocess.run(["systemctl", "reload", "sandboxd.service"], check=True)


def proc_status(pid):
    fields = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                k, _, v = line.partition(":")
                fields[k] = v.strip()
    except OSError:
        return None
    return fields


def worker_pids():
    main = str(daemon_pid())
    pids = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            st = proc_status(d)
            if st and st.get("PPid") == main and st.get("Name") == "sandboxd-net":
                pids.append(int(d))
    return pids


try:
    nobody = pwd.getpwnam("nobody")
    NOBODY = (nobody.pw_uid, nobody.pw_gid)
except KeyError:
    NOBODY = (65534, 65534)


def check_unprivileged(pid, what):
    st = proc_status(pid) or {}
    t.eq(st.get("Uid", "").split(), [str(NOBODY[0])] * 4, f"{what}: real, effective, saved and fs UID are nobody's")
    t.eq(st.get("Gid", "").split(), [str(NOBODY[1])] * 4, f"{what}: every GID is nobody's")
    t.eq(st.get("Groups"), "", f"{what}: no supplementary groups")
    for cap in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
        t.eq(st.get(cap), "0000000000000000", f"{what}: {cap} is empty")
    t.eq(st.get("NoNewPrivs"), "1", f"{what}: no_new_privs")
    t.eq(st.get("Seccomp"), "2", f"{what}: a seccomp filter is loaded")


def record(eid, wait=False):
    return get(eid, wait)[1]


def delivered(eid, timeout=30):
    wait_until(lambda: ((record(eid).get("callback") or {}).get("state") == "delivered"), timeout=timeout,
               step=0.2)
    return record(eid).get("callback") or {}


def download_and_callback(what):
    res = run(SUM, files=[{"path": "d.csv", "url": f"{URL}/data.csv"}], callback_url=f"{URL}/hook")
    t.verdict(res, "success", None, f"{what}: a download")
    t.eq((res.get("stdout") or "").strip(), "5050", f"{what}: the program read the downloaded file")
    cb = delivered(res["execution_id"])
    t.eq(cb.get("state"), "delivered", f"{what}: the callback was delivered", cb)


daemon = daemon_pid()
pids = worker_pids()
t.eq(len(pids), 1, "one network worker runs as a child of the daemon", pids)
first = pids[0] if pids else None
if first:
    check_unprivileged(first, "the worker")
    download_and_callback("through the worker")

    # ---- killed during a download: that execution fails, the daemon does not -------------------
    eid = submit("print('ran')", files=[{"path": "s.csv", "url": f"{URL}/slow"}])[1]["execution_id"]
    t.ok(wait_until(lambda: seen.get("/slow", 0) >= 1, timeout=20), "the slow download started")
    os.kill(first, signal.SIGKILL)
    res = record(eid, wait=True)
    slow_release.set()
    t.verdict(res, "failed", "input_error", "killed mid-download")
    t.ok(re.fullmatch(r"files\[0\] 's\.csv': .*network worker stopped", res.get("error_message") or ""),
         "killed mid-download: the message names the file and the worker", res.get("error_message"))
    t.eq(daemon_pid(), daemon, "the daemon lives on")
    t.eq(health().get("status"), "ok", "the daemon answers")
    t.ok(wait_until(lambda: [p for p in worker_pids() if p != first], timeout=15, step=0.1),
         "a new worker was started")
    pids = worker_pids()
    t.eq(len(pids), 1, "one worker again", pids)
    second = pids[0] if pids else None
    if second:
        check_unprivileged(second, "the restarted worker")

    # ---- killed during a callback attempt: retried, delivered once ------------------------------
    res = run("print(1)", callback_url=f"{URL}/hang-once")
    t.ok(wait_until(hook_hang.is_set, timeout=20), "a callback attempt is held open by its receiver")
    if second:
        os.kill(second, signal.SIGKILL)
    cb = delivered(res["execution_id"], timeout=40)
    t.eq(cb.get("state"), "delivered", "killed mid-callback: delivered by a later attempt", cb)
    t.ok((cb.get("attempts") or 0) >= 2, "killed mid-callback: counted as a failed attempt", cb)
    t.eq(accepted.get(cb.get("delivery_id")), 1, "killed mid-callback: accepted exactly once")
    t.ok(wait_until(lambda: [p for p in worker_pids() if p not in (first, second)], timeout=15, step=0.1),
         "a third worker was started")
    t.eq(daemon_pid(), daemon, "the daemon is still the same process")
    download_and_callback("after the restarts")

os.unlink(f"{CONF}/sandboxd.conf.d/50-net-worker.conf")
subprocess.run(["systemctl", "reload", "sandboxd.service"], check=False)
t.done()

# SPDX-License-Identifier: LGPL-2.1-or-later
# The summary (issue 18): every final result has "summary", a text a model acts on, made by
# sandboxd/model/summary.c. One real program per verdict row: success with 30 lines and an artifact,
# timeout, the memory limit, exit code 3, a signal, a compile error (c, when installed), a missing
# module (python and node), the network disabled, a huge stderr (head and tail, bounded). The same
# summary in the callback body, over D-Bus, in GET, and after sandboxd restarts (it is stored).
import http.server
import json
import os
import subprocess
import sys
import threading

sys.path.insert(0, os.path.dirname(__file__))
from lib import *  # noqa: E402,F401,F403

SUMMARY_MAX = 8 * 1024
t = Tap()
langs = {l["name"]: l for l in request("GET", "/v1/languages")[1].get("languages", [])}


def summary_of(res, name):
    s = res.get("summary")
    t.ok(isinstance(s, str) and 0 < len(s.encode()) <= SUMMARY_MAX,
         f"{name}: a summary of at most {SUMMARY_MAX} bytes", json.dumps(res)[:3000])
    return s if isinstance(s, str) else ""


def has(s, needles, name, res=None):
    missing = [n for n in needles if n not in s]
    t.ok(not missing, f"{name}: the summary says {needles!r}",
         f"missing {missing!r}\nsummary:\n{s}" + (f"\nrecord: {json.dumps(res)[:1500]}" if res else ""))


results = {}

# ---- success: 30 lines and an artifact ----------------------------------------------------------
res = run("for i in range(1, 31): print(f'line {i}')\n"
          "open('/workspace/output/report.txt', 'w').write('x' * 1234)\n")
t.verdict(res, "success", None, "30 lines")
s = summary_of(res, "success")
has(s, ["succeeded", "line 1\n", "line 20\n", "(10 more lines)", "report.txt (text/plain, 1234 bytes)"], "success", res)
t.ok("line 21" not in s, "success: line 21 is not in the summary", s)
results["success"] = res

# ---- timeout ------------------------------------------------------------------------------------
res = run("import time\nprint('start', flush=True)\ntime.sleep(60)\n", limits={"timeout_ms": 1000})
t.verdict(res, "failed", "timeout", "timeout")
has(summary_of(res, "timeout"), ["timed out after 1000 ms (timeout_ms)"], "timeout", res)

# ---- memory -------------------------------------------------------------------------------------
res = run("x = b'x' * (200 << 20)\nprint(len(x))\n", limits={"memory_mb": 64})
t.verdict(res, "failed", "oom", "memory")
has(summary_of(res, "memory"), ["killed at the memory limit of 64 MiB (memory_mb)"], "memory", res)

# ---- exit code 3 with stderr --------------------------------------------------------------------
res = run("import sys\nprint('some output')\nprint('this went wrong', file=sys.stderr)\nsys.exit(3)\n")
t.verdict(res, "failed", "runtime_error", "exit 3")
s = summary_of(res, "exit 3")
has(s, ["exited with code 3", "exit code: 3", "this went wrong", "some output"], "exit 3", res)
t.ok("network is disabled" not in s and "not installed" not in s, "exit 3: no hint it has no reason for", s)
results["exit3"] = res

# ---- a signal -----------------------------------------------------------------------------------
res = run("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n")
t.verdict(res, "failed", "runtime_error", "SIGSEGV")
has(summary_of(res, "SIGSEGV"), ["killed by signal 11 (SIGSEGV)", "signal: 11 (SIGSEGV)"], "SIGSEGV", res)

# ---- compile error ------------------------------------------------------------------------------
if langs.get("c", {}).get("available"):
    res = run("int main(void) { return 0 }\n", language="c")
    t.verdict(res, "failed", "compile_error", "c syntax error")
    has(summary_of(res, "c syntax error"), ["failed to compile (compile error)", "error"], "c syntax error", res)
else:
    print("# c is not available here: no compile error row", flush=True)

# ---- missing module -----------------------------------------------------------------------------
res = run("import polars\n")
t.verdict(res, "failed", "runtime_error", "import polars")
has(summary_of(res, "import polars"),
    ["module 'polars' is not installed in the default environment of language 'python'",
     "ModuleNotFoundError"], "import polars", res)
if langs.get("node", {}).get("available"):
    res = run("require('left-pad-not-here');\n", language="node")
    t.verdict(res, "failed", "runtime_error", "node require")
    has(summary_of(res, "node require"), ["module 'left-pad-not-here' is not installed"], "node require", res)

# ---- network disabled ---------------------------------------------------------------------------
res = run("import socket\nsocket.create_connection(('10.0.0.1', 80), timeout=5)\n")
t.verdict(res, "failed", "runtime_error", "connect without network")
has(summary_of(res, "connect without network"), ["network is disabled for this run"], "connect without network", res)
res = run("import socket\nsocket.getaddrinfo('example.com', 80)\n")
t.verdict(res, "failed", "runtime_error", "DNS without network")
has(summary_of(res, "DNS without network"), ["network is disabled for this run"], "DNS without network", res)

# ---- huge stderr: head and tail -----------------------------------------------------------------
res = run("import sys\nsys.stderr.write('HEAD-OF-STDERR\\n')\n"
          "for i in range(100000): sys.stderr.write(f'noise {i}\\n')\n"
          "sys.stderr.write('TAIL-OF-STDERR\\n')\nsys.exit(1)\n")
t.verdict(res, "failed", "runtime_error", "huge stderr")
s = summary_of(res, "huge stderr")
has(s, ["HEAD-OF-STDERR", "TAIL-OF-STDERR", "bytes elided ..."], "huge stderr", res)

# ---- GET answers the same summary ---------------------------------------------------------------
for k, r in results.items():
    st, g = get(r["execution_id"])
    t.eq(g.get("summary"), r.get("summary"), f"GET {k}: the same summary as the POST")

# ---- the callback body --------------------------------------------------------------------------
confdir = os.environ["SANDBOXD_CONFIG_DIR"]
os.makedirs(f"{confdir}/sandboxd.conf.d", exist_ok=True)
with open(f"{confdir}/sandboxd.conf.d/50-summary-callbacks.conf", "w") as f:
    f.write("[Callbacks]\nCallbackAllowInternalAddresses=yes\nCallbackBackoffBaseMS=200\nCallbackBackoffMaxSec=1\n")
subprocess.run(["systemctl", "reload", "sandboxd.service"], check=True)
bodies = []
got = threading.Event()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        bodies.append(body)
        got.set()
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()


srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
srv.daemon_threads = True
threading.Thread(target=srv.serve_forever, daemon=True).start()
res = run("import sys\nprint('to the hook')\nsys.exit(3)\n", callback_url=f"http://127.0.0.1:{srv.server_address[1]}/hook")
t.ok(got.wait(60), "the callback was delivered")
try:
    cb = json.loads(bodies[0]) if bodies else {}
except ValueError:
    cb = {}
rec = cb.get("execution", cb)
t.ok(isinstance(rec.get("summary"), str) and rec.get("summary") == res.get("summary")
     and "exited with code 3" in rec.get("summary", ""), "the callback body has the summary", bodies[:1])
srv.shutdown()
srv.server_close()

# ---- D-Bus --------------------------------------------------------------------------------------
p = subprocess.run(["busctl", "--json=short", "call", "io.sandboxd.Sandbox1", "/io/sandboxd/Sandbox1",
                    "io.sandboxd.Sandbox1.Manager", "Execute", "s",
                    json.dumps({"language": "python", "code": "print('over the bus')\nraise SystemExit(3)\n"})],
                   capture_output=True, text=True, timeout=300)
try:
    bus = json.loads(json.loads(p.stdout)["data"][0])
except (ValueError, KeyError, IndexError, TypeError):
    bus = {}
has(bus.get("summary") or "", ["exited with code 3", "over the bus"], "D-Bus Execute", p.stdout + p.stderr)
p = subprocess.run(["busctl", "--json=short", "call", "io.sandboxd.Sandbox1", "/io/sandboxd/Sandbox1",
                    "io.sandboxd.Sandbox1.Manager", "GetExecution", "s", results["success"]["execution_id"]],
                   capture_output=True, text=True, timeout=300)
try:
    bus = json.loads(json.loads(p.stdout)["data"][0])
except (ValueError, KeyError, IndexError, TypeError):
    bus = {}
t.eq(bus.get("summary"), results["success"]["summary"], "D-Bus GetExecution: the same summary", p.stderr)

# ---- stored: in the store's row, and the same after a restart ------------------------------------
try:
    row = store_row("SELECT summary FROM executions WHERE execution_id = ?", (results["exit3"]["record_id"],))
except Exception as e:  # noqa: BLE001 - sqlite3.Error or psql's failure, reported as the row
    row = (f"store: {e}",)
t.eq(row and row[0], results["exit3"]["summary"], "the store's row holds the summary")
def healthy():
    try:
        return request("GET", "/v1/health", timeout=5)[0] == 200
    except OSError:
        return False


old = daemon_pid()
subprocess.run(["systemctl", "restart", "sandboxd.service"], check=True)
t.ok(wait_until(lambda: daemon_pid() not in (0, old) and healthy(), 30),
     "sandboxd restarted")
for k, r in results.items():
    st, g = get(r["execution_id"])
    t.eq(g.get("summary"), r.get("summary"), f"after the restart, GET {k}: the stored summary")
t.done()

# SPDX-License-Identifier: LGPL-2.1-or-later
# Input files: a real HTTP server on loopback (the harness shares the host's network namespace, so
# the daemon reaches it; the sandbox itself has PrivateNetwork and cannot) serves a CSV that Python
# in the sandbox reads from /workspace/input and sums, and every way a download can fail: too big
# (announced, and streamed without Content-Length), too slow, 404, a redirect to file://, a refused
# connection, over the total. Each fails the execution with input_error and a message naming the
# file. Inline files through the API and `sandboxctl run --input`; invalid paths are 400s naming
# the field; the daemon answers while a download hangs; cancel during a download; a restart during
# a download re-downloads.
import base64
import http.server
import os
import re
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
from lib import *  # noqa: E402,F401,F403

t = Tap()
CONF = os.environ["SANDBOXD_CONFIG_DIR"]
CTL = os.path.join(os.environ["SANDBOXD_BUILD_DIR"], "sandboxctl", "sandboxctl")

CSV = b"name,value\n" + b"".join(b"row%d,%d\n" % (i, i) for i in range(1, 101))   # sum 5050
hits = {}
hits_lock = threading.Lock()
hold_release = threading.Event()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def body(self, data, ctype="text/csv", length=True):
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        if length:
            self.send_header("Content-Length", str(len(data)))
        else:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        with hits_lock:
            hits[self.path] = hits.get(self.path, 0) + 1
            n = hits[self.path]
        p = self.path
        if p == "/data.csv":
            self.body(CSV)
        elif p == "/800k":
            self.body(b"x" * (800 * 1024), "application/octet-stream")
        elif p == "/big":              # Content-Length says 2 MiB: refused before a byte is written
            self.body(b"y" * (2 * 1024 * 1024), "application/octet-stream")
        elif p == "/stream":           # no Content-Length, 2 MiB: only counting the bytes stops it
            self.send_response(200)
            self.send_header("Connection", "close")
            self.end_headers()
            try:
                for _ in range(64):
                    self.wfile.write(b"z" * 32768)
                    self.wfile.flush()
            except OSError:
                pass
            self.close_connection = True
        elif p == "/lie":              # says 10 bytes, sends 2 MiB: curl stops at the 10
            self.send_response(200)
            self.send_header("Content-Length", "10")
            self.end_headers()
            try:
                self.wfile.write(b"0123456789" + b"w" * (2 * 1024 * 1024))
            except OSError:
                pass
            self.close_connection = True
        elif p == "/slow":             # headers, a few bytes, then nothing for longer than the timeout
            self.send_response(200)
            self.send_header("Content-Length", "1000")
            self.end_headers()
            self.wfile.write(b"a,b\n")
            self.wfile.flush()
            time.sleep(12)
        elif p == "/hold":             # the first request hangs until released; later ones answer
            if n == 1:
                hold_release.wait(30)
                return
            self.body(CSV)
        elif p == "/48m":              # 48 MiB: big enough to tell whose memory it is
            self.body(b"m" * (48 * 1024 * 1024), "application/octet-stream")
        elif p == "/missing":
            self.send_error(404)
        elif p == "/broken":
            self.send_error(500)
        elif p == "/to-file":
            self.send_response(302)
            self.send_header("Location", "file:///etc/passwd")
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif p == "/to-csv":
            self.send_response(302)
            self.send_header("Location", f"http://127.0.0.1:{PORT}/data.csv")
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif p == "/loop":
            self.send_response(302)
            self.send_header("Location", "/loop")
            self.send_header("Content-Length", "0")
            self.end_headers()
        else:
            self.send_error(404)


class Server(http.server.ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        pass    # sandboxd hangs up on what it refuses: that is the point, not an error


server = Server(("127.0.0.1", 0), Handler)
server.daemon_threads = True
PORT = server.server_address[1]
threading.Thread(target=server.serve_forever, daemon=True).start()
URL = f"http://127.0.0.1:{PORT}"

# A port nobody listens on, for a refused connection.
s = socket.socket()
s.bind(("127.0.0.1", 0))
CLOSED_PORT = s.getsockname()[1]
s.close()

# ---- by default, sandboxd does not download from loopback or private addresses ----------------------
res = run("print('ran')", files=[{"path": "x.csv", "url": f"{URL}/data.csv"},
                                  {"path": "y.csv", "url": f"http://[::ffff:127.0.0.1]:{PORT}/data.csv"}])
t.verdict(res, "failed", "input_error", "loopback URL with the default configuration")
t.ok(re.fullmatch(r"files\[[01]\] '[xy]\.csv': refused: internal address", res.get("error_message") or ""),
     "loopback refused: the message names the file and the class, not the address", res)
t.eq(hits.get("/data.csv", 0), 0, "the loopback server saw no request")

os.makedirs(f"{CONF}/sandboxd.conf.d", exist_ok=True)
with open(f"{CONF}/sandboxd.conf.d/50-inputs.conf", "w") as f:
    f.write("[Inputs]\nMaxInputFileBytes=1M\nMaxInputTotalBytes=1536K\nInputConnectTimeoutSec=2\n"
            "InputTimeoutSec=4\nMaxInputFiles=8\nInputAllowInternalAddresses=yes\n")
subprocess.run(["systemctl", "reload", "sandboxd.service"], check=True)
time.sleep(0.5)

SUM = ("import csv\n"
       "rows = list(csv.DictReader(open('/workspace/input/data/input.csv')))\n"
       "print(len(rows), sum(int(r['value']) for r in rows))\n")

# ---- the CSV, downloaded and processed by Python --------------------------------------------------
res = run(SUM, files=[{"path": "data/input.csv", "url": f"{URL}/data.csv"}])
t.verdict(res, "success", None, "CSV from a local HTTP server")
t.eq(res.get("stdout"), "100 5050\n", "Python read /workspace/input/data/input.csv and summed it", res.get("stderr"))
t.eq(res.get("error_message"), None, "no error_message on success")

res = run("import os, stat\n"
          "st = os.stat('/workspace/input/data/input.csv')\n"
          "print(oct(stat.S_IMODE(st.st_mode)), oct(stat.S_IMODE(os.stat('/workspace/input').st_mode)),"
          " st.st_size)\n"
          "try:\n"
          "    open('/workspace/input/data/input.csv', 'a').write('x')\n"
          "    print('writable')\n"
          "except PermissionError:\n"
          "    print('read-only')\n",
          files=[{"path": "data/input.csv", "url": f"{URL}/data.csv"}])
t.eq(res.get("stdout"), f"0o644 0o755 {len(CSV)}\nread-only\n", "inputs are 0644 in 0755 directories, not writable by the sandbox",
     res)

res = run(SUM, files=[{"path": "data/input.csv", "url": f"{URL}/to-csv"}])
t.eq((res.get("status"), res.get("stdout")), ("success", "100 5050\n"), "a redirect to another http URL is followed", res)

# ---- every failure: failed, input_error, a message naming the file ------------------------------
def fails(name, url, want, index=0, files=None):
    fl = files or [{"path": "in/" + re.sub(r"[^a-z0-9]+", "-", name) + ".bin", "url": url}]
    res = run("print('ran')", files=fl)
    t.verdict(res, "failed", "input_error", name)
    msg = res.get("error_message") or ""
    path = fl[index]["path"]
    t.ok(msg.startswith(f"files[{index}] '{path}': ") and want in msg,
         f"{name}: the message names files[{index}] and says '{want}'", res)
    t.eq((res.get("stdout"), res.get("exit_code")), ("", None), f"{name}: the program never ran")
    return res


fails("404", f"{URL}/missing", "HTTP 404")
fails("500", f"{URL}/broken", "HTTP 500")
fails("announced too big", f"{URL}/big", "larger than 1048576 bytes")
fails("streamed too big", f"{URL}/stream", "larger than 1048576 bytes")
fails("redirect to file://", f"{URL}/to-file", "not http:// or https://")
fails("redirect loop", f"{URL}/loop", "more than 5 redirects")
# Only the class of a failed connection, never libcurl's text (address, port, "refused" or not).
res = fails("connection refused", f"http://127.0.0.1:{CLOSED_PORT}/x", "connection failed")
t.eq(res.get("error_message"), "files[0] 'in/connection-refused.bin': connection failed",
     "connection refused: nothing but the class", res)
# Two 800 KiB files against a 1.5 MiB total: which of the two crosses it first is up to the loop.
res = run("print('ran')", files=[{"path": "a.bin", "url": f"{URL}/800k"}, {"path": "b.bin", "url": f"{URL}/800k"}])
t.verdict(res, "failed", "input_error", "over MaxInputTotalBytes")
t.ok("bytes in all" in (res.get("error_message") or "") and (res.get("error_message") or "").startswith("files["),
     "over the total: the message names a file and the total", res)

res = run("print(open('/workspace/input/lie').read())", files=[{"path": "lie", "url": f"{URL}/lie"}])
t.eq((res.get("status"), res.get("stdout")), ("success", "0123456789\n"),
     "a server sending more than its Content-Length: only the announced bytes are kept", res)

# A listener whose accept queue is full: the kernel drops further SYNs, so connecting never completes.
full = socket.socket()
full.bind(("127.0.0.1", 0))
full.listen(0)
fillers = []
for _ in range(3):
    c = socket.socket()
    c.settimeout(0.5)
    try:
        c.connect(full.getsockname())
    except OSError:
        pass
    fillers.append(c)
# The same class as a refused connection: told apart, they would say which ports are filtered.
res = fails("connect timeout", f"http://127.0.0.1:{full.getsockname()[1]}/x", "connection failed")
t.eq(res.get("error_message"), "files[0] 'in/connect-timeout.bin': connection failed",
     "connect timeout: the same message as a refused connection", res)
for c in fillers:
    c.close()
full.close()

# ---- the daemon answers while a download hangs; the timeout ends it ------------------------------
st, sub = submit("print('ran')", files=[{"path": "slow.csv", "url": f"{URL}/slow"}])
t.eq(st, 202, "slow download submitted")
slow_id = sub.get("execution_id")
t.ok(wait_until(lambda: hits.get("/slow", 0) >= 1, 10), "the slow transfer started")
h = request("GET", "/v1/health", timeout=5)
t.eq(h[0], 200, "GET /v1/health answers while the slow transfer is in progress")
t.eq(get(slow_id)[1].get("status"), "queued", "while downloading, the execution is still queued")
res = run("print('fast')")
t.eq(res.get("stdout"), "fast\n", "another execution runs meanwhile")
res = request("GET", f"/v1/executions/{slow_id}?wait=true", timeout=60)[1]
t.verdict(res, "failed", "input_error", "slow download")
t.ok((res.get("error_message") or "").startswith("files[0] 'slow.csv': timed out after 4 s"),
     "slow download: the message names the file and the timeout", res)

# ---- cancel during a download ---------------------------------------------------------------------
before = hits.get("/slow", 0)
st, sub = submit("print('ran')", files=[{"path": "slow.csv", "url": f"{URL}/slow"}])
cid = sub.get("execution_id")
t.ok(wait_until(lambda: hits.get("/slow", 0) > before, 10), "second slow transfer started")
st, _ = request("POST", f"/v1/executions/{cid}/cancel")
t.eq(st, 202, "cancel during the download accepted")
res = request("GET", f"/v1/executions/{cid}?wait=true", timeout=60)[1]
t.verdict(res, "cancelled", None, "cancelled during the download")

# ---- inline files: the API and sandboxctl ----------------------------------------------------------
res = run("print(open('/workspace/input/notes/a.txt').read(), end='')\n"
          "print(len(open('/workspace/input/empty').read()))\n",
          files=[{"path": "notes/a.txt", "content_base64": base64.b64encode(b"hello, inline\n").decode()},
                 {"path": "empty", "content_base64": ""}])
t.eq((res.get("status"), res.get("stdout")), ("success", "hello, inline\n0\n"), "inline files through the API", res)

res = run(SUM, files=[{"path": "data/input.csv", "content_base64": base64.b64encode(CSV).decode()},
                      {"path": "other.csv", "url": f"{URL}/data.csv"}])
t.eq(res.get("stdout"), "100 5050\n", "inline and downloaded files together", res)

work = f"/var/lib/sandbox-harness-inputs-{os.getpid()}"
os.makedirs(work, exist_ok=True)
with open(f"{work}/input.csv", "wb") as f:
    f.write(CSV)
with open(f"{work}/sum.py", "w") as f:
    f.write(SUM)
p = subprocess.run([CTL, "run", "--input", f"{work}/input.csv=data/input.csv", f"{work}/sum.py"],
                   capture_output=True, text=True)
t.eq((p.returncode, p.stdout), (0, "100 5050\n"), "sandboxctl run --input FILE=PATH", p.stderr)
p = subprocess.run([CTL, "run", "--input", f"{work}/input.csv", "-c",
                    "print(len(open('/workspace/input/input.csv').read().splitlines()))"],
                   capture_output=True, text=True)
t.eq((p.returncode, p.stdout), (0, "101\n"), "sandboxctl run --input FILE (default PATH: its name)", p.stderr)
p = subprocess.run([CTL, "run", "--input-url", f"{URL}/data.csv=data/input.csv", f"{work}/sum.py"],
                   capture_output=True, text=True)
t.eq((p.returncode, p.stdout), (0, "100 5050\n"), "sandboxctl run --input-url URL=PATH", p.stderr)
p = subprocess.run([CTL, "run", "--input-url", f"{URL}/missing=x.csv", "-c", "print(1)"],
                   capture_output=True, text=True)
t.ok(p.returncode == 66 and "files[0] 'x.csv': HTTP 404" in p.stderr,
     "sandboxctl: an input error exits 66 and names the file", (p.returncode, p.stdout, p.stderr))
subprocess.run(["rm", "-rf", work])

# ---- invalid requests: 400 naming the field --------------------------------------------------------
for name, files, field in [
        ("../x", [{"path": "../x", "url": f"{URL}/data.csv"}], "files[0].path"),
        ("/abs", [{"path": "/abs", "url": f"{URL}/data.csv"}], "files[0].path"),
        ("a/../../b", [{"path": "a/../../b", "url": f"{URL}/data.csv"}], "files[0].path"),
        ("a\\nb", [{"path": "a\nb", "url": f"{URL}/data.csv"}], "files[0].path"),
        ("overlong", [{"path": "p" * 256, "url": f"{URL}/data.csv"}], "files[0].path"),
        ("second entry", [{"path": "ok", "url": f"{URL}/data.csv"}, {"path": "a//b", "url": f"{URL}/x"}],
         "files[1].path"),
        ("file:// URL", [{"path": "x", "url": "file:///etc/passwd"}], "files[0].url"),
        ("user:password@", [{"path": "x", "url": f"http://u:p@127.0.0.1:{PORT}/data.csv"}], "files[0].url"),
        ("bad base64", [{"path": "x", "content_base64": "not base64!"}], "files[0].content_base64"),
        ("both url and content", [{"path": "x", "url": f"{URL}/data.csv", "content_base64": ""}], "files[0]"),
        ("more than MaxInputFiles", [{"path": f"f{i}", "url": f"{URL}/data.csv"} for i in range(9)], "files"),
]:
    st, body = submit("print(1)", files=files)
    err = body.get("error", {})
    t.ok(st == 400 and err.get("field") == field, f"invalid {name}: 400 naming {field}", (st, body))

# ---- a restart during a download: the execution is resumed and downloads again ----------------------
st, sub = submit(SUM, files=[{"path": "data/input.csv", "url": f"{URL}/hold"}])
rid = sub.get("execution_id")
t.ok(wait_until(lambda: hits.get("/hold", 0) >= 1, 10), "the held transfer started")
subprocess.run(["systemctl", "restart", "sandboxd.service"], check=True)
hold_release.set()
t.ok(wait_until(lambda: request("GET", "/v1/health", timeout=5)[0] == 200, 20), "sandboxd is back")
try:
    res = request("GET", f"/v1/executions/{rid}?wait=true", timeout=60)[1]
except OSError as e:
    res = {"error": repr(e), "now": get(rid)[1]}
t.eq((res.get("status"), res.get("stdout")), ("success", "100 5050\n"),
     "after a restart during its download, the execution ran with its input", res)
t.ok(hits.get("/hold", 0) >= 2, "it downloaded again after the restart", hits)

# ---- inputs are the execution's memory, not sandboxd's ---------------------------------------------
# sandboxd writes them into the workspace tmpfs, so their pages were charged to sandboxd.service;
# sandbox-exec copies each once more inside the unit, and their sum is bounded by memory_mb.
with open(f"{CONF}/sandboxd.conf.d/50-inputs.conf", "w") as f:
    f.write("[Inputs]\nMaxInputFileBytes=64M\nMaxInputTotalBytes=128M\nInputAllowInternalAddresses=yes\n")
subprocess.run(["systemctl", "reload", "sandboxd.service"], check=True)
time.sleep(0.5)
res = run("import os\nprint(os.stat('/workspace/input/big.bin').st_size)\n",
          files=[{"path": "big.bin", "url": f"{URL}/48m"}], limits={"memory_mb": 256, "disk_mb": 128})
t.eq((res.get("status"), res.get("stdout")), ("success", f"{48 * 1024 * 1024}\n"), "a 48 MiB download", res)
t.ok((res.get("peak_memory_mb") or 0) >= 48, f"its pages count in the execution's peak memory "
     f"({res.get('peak_memory_mb')} MB >= 48)", res.get("peak_memory_mb"))
res = run("print('ran')\n", files=[{"path": "big.bin", "url": f"{URL}/48m"}], limits={"memory_mb": 32, "disk_mb": 128})
t.verdict(res, "failed", "input_error", "48 MiB of inputs with memory_mb=32")
t.ok("memory_mb" in (res.get("error_message") or ""), "the message names memory_mb", res.get("error_message"))

os.unlink(f"{CONF}/sandboxd.conf.d/50-inputs.conf")
subprocess.run(["systemctl", "reload", "sandboxd.service"], check=False)
server.shutdown()
t.done()

# SPDX-License-Identifier: LGPL-2.1-or-later
# An agent's loop end to end, every feature of issues 5 and 6 in one session, through the real daemon:
# turn 1 gets a CSV by URL from a real HTTP server on loopback, computes on it, leaves state in the
# session's /workspace and a CSV in output/; turn 2 (same session, an inline input) reads turn 1's
# state and writes a PNG; both results come back as artifacts through their signed URLs
# byte-identical, both callbacks arrive exactly once with valid signatures, the D-Bus API shows the
# same execution with the same artifacts, and deleting the session removes its files.
import hashlib
import hmac
import http.server
import json
import os
import struct
import subprocess
import sys
import threading
import zlib
import base64

sys.path.insert(0, os.path.dirname(__file__))
from lib import *  # noqa: E402,F401,F403

t = Tap()
CSV = b"x,y\n1,2\n3,4\n5,6\n"
hooks = []          # (headers, body) of every callback POST
hooks_lock = threading.Lock()


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def do_GET(self):
        if self.path != "/data.csv":
            self.send_response(404)
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/csv")
        self.send_header("Content-Length", str(len(CSV)))
        self.end_headers()
        self.wfile.write(CSV)

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        with hooks_lock:
            hooks.append(({k.lower(): v for k, v in self.headers.items()}, body))
        self.send_response(204)
        self.end_headers()


srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
threading.Thread(target=srv.serve_forever, daemon=True).start()
BASE = f"http://127.0.0.1:{srv.server_address[1]}"

# Loopback downloads and callbacks are refused by default (Input/CallbackAllowInternalAddresses=no);
# quick callback retries.
conf = os.environ["SANDBOXD_CONFIG_DIR"]
os.makedirs(f"{conf}/sandboxd.conf.d", exist_ok=True)
with open(f"{conf}/sandboxd.conf.d/50-workflow.conf", "w") as f:
    f.write("[Inputs]\nInputAllowInternalAddresses=yes\n[Callbacks]\nCallbackAllowInternalAddresses=yes\n"
            "CallbackBackoffBaseMS=200\nCallbackBackoffMaxSec=1\n")
subprocess.run(["systemctl", "reload", "sandboxd.service"], check=True)


def png(width, height, rgb):
    """A valid PNG of one colour, built by hand (no imaging library in the sandbox or here)."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xffffffff)
    raw = b"".join(b"\x00" + bytes(rgb) * width for _ in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def fetch(url):
    conn = UnixConnection(SOCKET, timeout=120)
    conn.request("GET", url)
    r = conn.getresponse()
    body = r.read()
    conn.close()
    return r.status, r.getheader("Content-Type"), body


def artifact(res, path):
    return next((a for a in res.get("artifacts") or [] if a.get("path") == path), None)


# ---- turn 1: an input by URL, state kept in the session, a CSV artifact ----
TURN1 = """
import csv, json, os
rows = list(csv.DictReader(open('/workspace/input/data.csv')))
total = sum(int(r['x']) * int(r['y']) for r in rows)
json.dump({'total': total, 'rows': len(rows)}, open('/workspace/state.json', 'w'))
os.makedirs('/workspace/output', exist_ok=True)
with open('/workspace/output/summary.csv', 'w') as f:
    f.write('rows,total\\n%d,%d\\n' % (len(rows), total))
print(total)
"""
r1 = run(TURN1, session_id="agent-wf", callback_url=f"{BASE}/hook",
         files=[{"path": "data.csv", "url": f"{BASE}/data.csv"}])
t.verdict(r1, "success", None, "turn 1: the CSV fetched by sandboxd is processed by Python")
t.eq(r1.get("stdout"), "44\n", "turn 1: sum of x*y over the downloaded CSV", r1.get("stderr"))
a1 = artifact(r1, "summary.csv")
t.ok(a1 is not None and a1.get("size") == len(b"rows,total\n3,44\n") and a1.get("url"),
     "turn 1: output/summary.csv is an artifact with a signed URL", r1.get("artifacts"))
if a1:
    st, ctype, body = fetch(a1["url"])
    t.eq((st, body), (200, b"rows,total\n3,44\n"), "turn 1: the artifact comes back byte-identical")
    t.eq(a1.get("sha256"), hashlib.sha256(body).hexdigest(), "turn 1: its sha256 is the content's")
    t.ok(ctype and ctype.startswith("text/csv"), "turn 1: served as text/csv", ctype)

# ---- turn 2: same session, an inline input; turn 1's state is there; a PNG artifact ----
PARAMS = json.dumps({"w": 7, "h": 5, "rgb": [200, 30, 90]}).encode()
TURN2 = """
import json, struct, zlib
state = json.load(open('/workspace/state.json'))
p = json.load(open('/workspace/input/params.json'))
def chunk(kind, data):
    return struct.pack('>I', len(data)) + kind + data + struct.pack('>I', zlib.crc32(kind + data) & 0xffffffff)
raw = b''.join(b'\\x00' + bytes(p['rgb']) * p['w'] for _ in range(p['h']))
img = (b'\\x89PNG\\r\\n\\x1a\\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', p['w'], p['h'], 8, 2, 0, 0, 0)) +
       chunk(b'IDAT', zlib.compress(raw)) + chunk(b'IEND', b''))
open('/workspace/output/plot.png', 'wb').write(img)
print(state['total'], state['rows'])
"""
r2 = run(TURN2, session_id="agent-wf", callback_url=f"{BASE}/hook",
         files=[{"path": "params.json", "content_base64": base64.b64encode(PARAMS).decode()}])
t.verdict(r2, "success", None, "turn 2: runs in the same session")
t.eq(r2.get("stdout"), "44 3\n", "turn 2: sees the state turn 1 left in /workspace", r2.get("stderr"))
want_png = png(7, 5, (200, 30, 90))
a2 = artifact(r2, "plot.png")
t.ok(a2 is not None and a2.get("mime_type") == "image/png", "turn 2: output/plot.png is an image/png artifact",
     r2.get("artifacts"))
if a2:
    st, ctype, body = fetch(a2["url"])
    t.eq((st, ctype), (200, "image/png"), "turn 2: the PNG's signed URL answers with image/png")
    t.ok(body == want_png, "turn 2: the PNG comes back byte-identical", (len(body), len(want_png)))

# ---- callbacks: exactly one delivery per turn, each signed with the deployment's key ----
with open("/var/lib/sandboxd/callback.key", "rb") as f:
    KEY = f.read().strip()


def signed(h, body):
    try:
        parts = dict(p.split("=", 1) for p in h["sandboxd-signature"].split(","))
    except (KeyError, ValueError):
        return False
    want = hmac.new(KEY, parts.get("t", "").encode() + b"." + body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(want, parts.get("v1", ""))


ids = {r1["execution_id"], r2["execution_id"]}
t.ok(wait_until(lambda: len(hooks) >= 2, 30), "both callbacks arrived", len(hooks))
with hooks_lock:
    got = [(h.get("sandboxd-execution-id"), json.loads(b)) for h, b in hooks]
    t.eq(sorted(e for e, _ in got), sorted(ids), "one delivery per turn, no more", got)
    t.ok(all(signed(h, b) for h, b in hooks), "every delivery's signature verifies with the key")
    t.ok(all(body.get("status") == "success" and body.get("session_id") == "agent-wf" for _, body in got),
         "the bodies are the final results")
t.ok(wait_until(lambda: get(r2["execution_id"])[1].get("callback", {}).get("state") == "delivered", 20),
     "the record says the callback was delivered", get(r2["execution_id"])[1].get("callback"))

# ---- the D-Bus API shows the same execution, artifacts included ----
out = subprocess.run(["busctl", "--json=short", "call", "io.sandboxd.Sandbox1", "/io/sandboxd/Sandbox1",
                      "io.sandboxd.Sandbox1.Manager", "GetExecution", "s", r2["execution_id"]],
                     capture_output=True, text=True, timeout=60)
try:
    via_bus = json.loads(json.loads(out.stdout)["data"][0])
except (ValueError, KeyError, IndexError):
    via_bus = {}
t.eq(sorted(a["path"] for a in via_bus.get("artifacts") or []), ["plot.png", "summary.csv"],
     "D-Bus GetExecution lists the same artifacts (turn 1's summary.csv persists in the session)", out.stderr)
t.eq(via_bus.get("stdout"), r2.get("stdout"), "D-Bus GetExecution: the same stdout as HTTP")

# ---- the session: two runs; deleting it removes its files ----
st, s = request("GET", "/v1/sessions/agent-wf")
t.eq((st, s.get("executions")), (200, 2), "the session counts two runs", s)
st, _ = request("DELETE", "/v1/sessions/agent-wf")
t.ok(st in (200, 204), "DELETE /v1/sessions/agent-wf", st)
t.eq(request("GET", "/v1/sessions/agent-wf")[0], 404, "the session is gone")
r3 = run("import os\nprint(os.path.exists('/workspace/state.json'))", session_id="agent-wf")
t.eq(r3.get("stdout"), "False\n", "a new session of the same name starts empty")
srv.shutdown()
t.done()

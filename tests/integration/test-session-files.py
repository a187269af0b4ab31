# SPDX-License-Identifier: LGPL-2.1-or-later
# A session's workspace between runs (GET, PUT, DELETE /v1/sessions/{id}/files/{path}): files go in
# and out intact, listings are bounded and typed; symlinks a run plants are listed, never followed
# (nothing outside changes, nothing outside is read); bad paths are 400, another owner's session is
# 404, a session with a run in progress is 409, over a cap is 413. Then sandboxctl session cp/ls/rm.
import hashlib
import os
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from lib import *  # noqa: E402,F401,F403

t = Tap()


def raw(method, path, data=None):
    """(status, bytes, headers) of one request on the unix socket."""
    conn = UnixConnection(SOCKET, timeout=600)
    conn.request(method, path, body=data, headers={"Content-Type": "application/octet-stream"} if data is not None else {})
    resp = conn.getresponse()
    body = resp.read()
    conn.close()
    return resp.status, body, dict(resp.getheaders())


def put(session, path, data):
    st, body, _ = raw("PUT", f"/v1/sessions/{session}/files/{path}", data)
    return st, body


def fget(session, path):
    st, body, _ = raw("GET", f"/v1/sessions/{session}/files/{path}")
    return st, body


def ls(session, path=""):
    st, res = request("GET", f"/v1/sessions/{session}/files/{path}")
    return st, res


def names(res):
    return sorted((e["name"], e["type"]) for e in res.get("entries", []))


def err(body):
    try:
        return json.loads(body).get("error", {}).get("message", "")
    except ValueError:
        return ""


# ---- round trip ----
r0 = run("open('/workspace/first', 'w').write('x')\n", session_id="fa")
t.verdict(r0, "success", None, "a first run creates session fa")
st, body = put("fa", "in.txt", b"hello from outside\n")
t.eq(st, 201, "PUT in.txt", body)
blob = bytes(range(256)) * 64 + b"\x00\xff\x00"
st, body = put("fa", "output/blob.bin", blob)
t.eq(st, 201, "PUT a binary file into an existing directory", body)
r1 = run("import hashlib\nd = open('/workspace/in.txt').read()\nopen('/workspace/out.txt', 'w').write(d.upper())\n"
         "print(hashlib.sha256(open('/workspace/output/blob.bin', 'rb').read()).hexdigest())\n", session_id="fa")
t.verdict(r1, "success", None, "a run reads the uploaded files and writes out.txt")
t.eq(r1.get("stdout", "").strip(), hashlib.sha256(blob).hexdigest(), "the run sees the binary upload intact", r1)
st, body, hdr = raw("GET", "/v1/sessions/fa/files/out.txt")
t.eq((st, body), (200, b"HELLO FROM OUTSIDE\n"), "GET out.txt: what the run wrote")
t.ok(hdr.get("X-Content-Type-Options") == "nosniff" and "Content-Type" in hdr, "GET has a Content-Type, nosniff", hdr)
st, body = fget("fa", "output/blob.bin")
t.ok(st == 200 and body == blob, "GET of the binary file: byte for byte", (st, len(body)))
st, res = ls("fa")
t.eq(st, 200, "GET files/ lists the root", res)
t.ok({("in.txt", "file"), ("out.txt", "file"), ("output", "directory")} <= set(names(res)) and
     res.get("truncated") is False and res.get("path") == "", "the listing shows both files and output/", res)
sizes = {e["name"]: e["size"] for e in res.get("entries", [])}
t.eq(sizes.get("in.txt"), 19, "the listing gives sizes", res)
st, res = request("GET", "/v1/sessions/fa/files")
t.eq(st, 200, "GET .../files (no slash) lists the root too", res)
st, res = ls("fa", "output/")
t.ok(st == 200 and names(res) == [("blob.bin", "file")] and res.get("path") == "output", "a directory's listing", res)
st, res = request("DELETE", "/v1/sessions/fa/files/in.txt")
t.eq((st, res.get("deleted")), (200, True), "DELETE in.txt", res)
st, body = fget("fa", "in.txt")
t.eq(st, 404, "in.txt is gone", body)
st, res = request("DELETE", "/v1/sessions/fa/files/output")
t.eq(st, 409, "DELETE of a directory that is not empty: 409", res)
r2 = run("import os\nprint(os.path.exists('/workspace/in.txt'))\n", session_id="fa")
t.eq(r2.get("stdout"), "False\n", "the next run no longer sees in.txt", r2)

# ---- links a run planted ----
r3 = run("import os\nos.symlink('/etc/shadow', '/workspace/leak')\nos.symlink('/etc', '/workspace/d')\n"
         "os.mkdir('/workspace/real')\nos.symlink('../out.txt', '/workspace/real/rel')\n", session_id="fa")
t.verdict(r3, "success", None, "a run plants symlinks to /etc/shadow and /etc")
shadow = open("/etc/shadow", "rb").read()
st_before = os.stat("/etc")
st, res = ls("fa")
t.ok(("leak", "symlink") in names(res) and ("d", "symlink") in names(res), "symlinks are listed as symlinks", res)
for path in ("leak", "d/passwd", "d/", "real/rel"):
    st, body = fget("fa", path)
    t.ok(st in (400, 403) and b"root:" not in body and "link" in err(body), f"GET {path} refused, naming the link",
         (st, body[:200]))
st, body = put("fa", "d/x", b"planted")
t.ok(st in (400, 403) and not os.path.exists("/etc/x"), "PUT d/x refused, /etc/x not created", (st, body))
st, res = request("DELETE", "/v1/sessions/fa/files/d/passwd")
t.ok(st in (400, 403) and os.path.exists("/etc/passwd"), "DELETE d/passwd refused, /etc/passwd there", (st, res))
st, body = put("fa", "leak", b"overwritten")
t.eq(open("/etc/shadow", "rb").read(), shadow, "PUT over the leak symlink never writes /etc/shadow")
t.eq(st, 201, "PUT leak replaces the symlink itself", body)
st, body = fget("fa", "leak")
t.eq((st, body), (200, b"overwritten"), "leak is now a regular file of the session")
t.eq(os.stat("/etc").st_mtime, st_before.st_mtime, "/etc unchanged")
st, res = request("DELETE", "/v1/sessions/fa/files/d")
t.ok(st == 200 and os.path.isdir("/etc"), "DELETE d removes the link, not /etc", (st, res))

# ---- bad paths ----
for path in ("../x", "a/../../x", "%2e%2e/x", "/etc/passwd", "a//b", "./x", "a\\b", "x" * 300,
             "/".join(["d"] * 20)):
    st, body = fget("fa", path)
    t.eq(st, 400, f"GET {path[:40]!r}: 400", body[:200])
    st, body = put("fa", path, b"x")
    t.eq(st, 400, f"PUT {path[:40]!r}: 400", body[:200])
# %00 in the URL: refused, never taken for the shorter name before it (it once wrote "nul").
st, body = put("fa", "nul%00.png", b"x")
st2, _ = fget("fa", "nul")
t.ok(st == 400 and st2 == 404, "PUT nul%00.png: 400, and no file 'nul' was written", (st, body, st2))
st, body = fget("fa", "%00")
t.eq(st, 400, "GET %00: 400", body[:200])
st, body, _ = raw("GET", "/v1/executions/exec%00x")
t.eq(st, 404, "GET /v1/executions/exec%00x: not found (not 'exec')", body[:200])
st, body = put("fa", "out.txt/", b"x")
t.eq(st, 400, "PUT with a trailing '/': 400", body)
st, body = put("fa", "nodir/x", b"x")
t.eq(st, 404, "PUT into a missing directory: 404 (directories are not created)", body)
st, body = put("fa", "output", b"x")
t.eq(st, 409, "PUT onto a directory: 409", body)

# ---- another owner ----
os.chmod(SOCKET, 0o666)     # uid 65534 may connect (no group sandboxd in the harness)
code = ("import sys\nsys.path.insert(0, %r)\nfrom lib import request\nimport json\n"
        "print(json.dumps([request(m, p)[0] for m, p in [('GET', '/v1/sessions/fa/files/'),"
        "('GET', '/v1/sessions/fa/files/out.txt'), ('DELETE', '/v1/sessions/fa/files/out.txt'),"
        "('GET', '/v1/sessions/no-such/files/')]]))\n" % os.path.dirname(__file__))
p = subprocess.run(["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups", "python3", "-c", code],
                   capture_output=True, text=True, env=dict(os.environ))
t.eq(p.stdout.strip(), "[404, 404, 404, 404]", "another user: 404 for root's session and a missing one alike",
     p.stderr)
st, body = fget("fa", "out.txt")
t.eq(st, 200, "out.txt still there after the foreign DELETE", body)
st, body = fget("no-such", "x")
t.ok(st == 404 and "no session 'no-such'" in err(body), "unknown session: 404 as GET /v1/sessions/{id}", body)

# ---- a run in progress ----
st, sub = submit("import time\ntime.sleep(3)\n", session_id="fa")
t.eq(st, 202, "a slow run of fa is submitted", sub)
st, body = put("fa", "during.txt", b"x")
t.eq(st, 409, "PUT while a run is queued or running: 409", body)
st, body = fget("fa", "out.txt")
t.eq(st, 409, "GET while a run is queued or running: 409", body)
get(sub["execution_id"], wait=True)
st, body = put("fa", "after.txt", b"x")
t.eq(st, 201, "PUT after the run: 201", body)

# ---- caps, and the body streamed (never held in memory) ----
def hwm_kib():
    with open(f"/proc/{daemon_pid()}/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmHWM:"))


def chunks(total, size=1 << 20, pause=None):
    sent = 0
    while sent < total:
        n = min(size, total - sent)
        yield bytes([sent // size % 251]) * n
        sent += n
        if pause:
            pause(sent)


def put_chunked(session, path, gen):
    conn = UnixConnection(SOCKET, timeout=600)
    conn.request("PUT", f"/v1/sessions/{session}/files/{path}", body=gen, encode_chunked=True,
                 headers={"Content-Type": "application/octet-stream", "Transfer-Encoding": "chunked"})
    resp = conn.getresponse()
    body = resp.read()
    conn.close()
    return resp.status, body


big = b"".join(chunks(3 << 20))
st, body = put("fa", "big", big)
t.eq(st, 201, "PUT of 3 MiB, over MaxRequestBytes= (2M): 201, the body is streamed to the file", body[:200])
st, body = fget("fa", "big")
t.ok(st == 200 and body == big, "GET gives the 3 MiB back byte for byte", (st, len(body)))
hwm = hwm_kib()
st, body = put_chunked("fa", "huge", chunks(48 << 20))
t.eq(st, 201, "PUT of 48 MiB, chunked: 201", body[:200])
grew = hwm_kib() - hwm
t.ok(grew < 16 * 1024, f"sandboxd's peak memory grew by {grew} KiB for a 48 MiB upload (< 16 MiB: not buffered)")
rh = run("import hashlib, os\nprint(os.path.getsize('/workspace/huge'))\n", session_id="fa")
t.eq(rh.get("stdout"), f"{48 << 20}\n", "the next run sees the 48 MiB file whole", rh)
st, res = request("DELETE", "/v1/sessions/fa/files/huge")
t.eq(st, 200, "DELETE huge", res)
confdir = os.environ["SANDBOXD_CONFIG_DIR"]
os.makedirs(f"{confdir}/sandboxd.conf.d", exist_ok=True)
with open(f"{confdir}/sandboxd.conf.d/50-files.conf", "w") as f:
    f.write("[Inputs]\nMaxInputFileBytes=4M\n")
subprocess.run(["systemctl", "reload", "sandboxd.service"], check=True)
st, body = put("fa", "big", b"\1" * (5 << 20))
t.ok(st == 413 and "MaxInputFileBytes" in err(body), "PUT of 5 MiB over MaxInputFileBytes=4M (Content-Length): "
     "413 before the body is read", (st, body[:200]))
st, body = put_chunked("fa", "big", chunks(5 << 20))
t.eq(st, 413, "a chunked PUT over MaxInputFileBytes=: 413 where it passes the cap", body[:200])
st, body = fget("fa", "big")
t.ok(st == 200 and body == big, "the refused uploads left the old file as it was", (st, len(body)))
st, res = ls("fa")
t.eq([n for n, _ in names(res) if n.startswith(".sandboxd-upload")], [], "and no temporary file behind", res)
os.unlink(f"{confdir}/sandboxd.conf.d/50-files.conf")
subprocess.run(["systemctl", "reload", "sandboxd.service"], check=True)

# A run submitted while an upload streams in waits for it, and then sees the whole file; a client
# that hangs up in mid-upload leaves nothing behind and the session free.
state = {}


def halfway(sent):
    if sent == 2 << 20 and "sub" not in state:
        state["sub"] = submit("import os\nprint(os.path.getsize('/workspace/late'))\n", session_id="fa")[1]
        time.sleep(1.0)
        state["during"] = get(state["sub"]["execution_id"])[1].get("status")


st, body = put_chunked("fa", "late", chunks(4 << 20, pause=halfway))
t.eq(st, 201, "PUT late (4 MiB, with a run submitted halfway)", body[:200])
t.eq(state.get("during"), "queued", "the run waited while the upload streamed in", state)
rl = get(state["sub"]["execution_id"], wait=True)[1]
t.eq(rl.get("stdout"), f"{4 << 20}\n", "and then saw the whole file", rl)
sock = socket.socket(socket.AF_UNIX)
sock.connect(SOCKET)
sock.sendall(b"PUT /v1/sessions/fa/files/cut HTTP/1.1\r\nHost: l\r\nContent-Length: 1000000\r\n\r\n" + b"x" * 4096)
time.sleep(0.5)
sock.close()
t.ok(wait_until(lambda: [n for n, _ in names(ls("fa")[1]) if n.startswith(".sandboxd-upload") or n == "cut"] == [],
                10), "a PUT cut short leaves no file and no temporary file", ls("fa")[1])
rc2 = run("print('free')\n", session_id="fa")
t.eq(rc2.get("stdout"), "free\n", "and the session runs again", rc2)
rs = run("print(1)\n", session_id="fsmall", limits={"disk_mb": 1})
t.verdict(rs, "success", None, "a session with disk_mb=1")
st, body = put("fsmall", "big", b"\1" * (1536 * 1024))
t.eq(st, 413, "PUT larger than the session's disk_mb: 413", body[:200])

# ---- sandboxctl ----
ctl = os.path.join(BUILD, "sandboxctl", "sandboxctl")


def sctl(*args, **kw):
    p = subprocess.run([ctl, *args], capture_output=True, **kw)
    return p.returncode, p.stdout, p.stderr


local = os.path.join(BUILD, "test-session-files.bin")
with open(local, "wb") as f:
    f.write(blob)
rc, out, errout = sctl("session", "cp", local, "fa:output/ctl.bin")
t.eq(rc, 0, "sandboxctl session cp LOCAL fa:output/ctl.bin", errout)
rc, out, errout = sctl("session", "cp", "fa:output/ctl.bin", "-")
t.ok(rc == 0 and out == blob, "sandboxctl session cp fa:output/ctl.bin - gives the bytes back", errout)
rc, out, errout = sctl("session", "ls", "fa:output")
t.ok(rc == 0 and b"ctl.bin" in out and b"blob.bin" in out, "sandboxctl session ls fa:output", out + errout)
rc, out, errout = sctl("session", "rm", "fa:output/ctl.bin")
t.eq(rc, 0, "sandboxctl session rm fa:output/ctl.bin", errout)
rc, out, errout = sctl("session", "cp", "fa:out.txt", "-")
t.eq((rc, out), (0, b"HELLO FROM OUTSIDE\n"), "sandboxctl session cp fa:out.txt - (no '/' in the path)", errout)
rc, out, errout = sctl("session", "cp", "fa:missing", "-")
t.ok(rc == 4 and b"does not exist" in errout, "sandboxctl session cp of a missing file exits 4", (rc, out + errout))
rc, out, errout = sctl("session", "cp", "fa:leak", local)
t.ok(rc == 0 and open(local, "rb").read() == b"overwritten", "sandboxctl session cp SESSION:PATH LOCAL", errout)
st, body = fget("fa", "output/ctl.bin")
t.eq(st, 404, "the removed file is gone", body)
os.unlink(local)
t.done()

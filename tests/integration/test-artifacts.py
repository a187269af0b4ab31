# SPDX-License-Identifier: LGPL-2.1-or-later
# Artifacts end to end through the real daemon: files a program leaves in /workspace/output come
# back byte-identical through their signed URLs (with the right Content-Type and Content-Length);
# tampered, expired and unknown URLs are refused alike; the list survives a restart; signed URLs work
# on TCP without an API key while the listing still wants one; sandboxctl lists and downloads. Then
# the hostile corpus: symlinks to /etc/shadow and to a root-only marker on the host, directory
# symlinks and loops, hard links, FIFOs and sockets named like artifacts, bad names, a sparse 1 TiB
# file, a symlink swapped in by a detached child, output/ itself a symlink, 100,000 tiny files (the
# API answering meanwhile) — none of it makes the daemon read anything outside the workspace. Last,
# purged records take their artifacts and blobs with them.
import concurrent.futures as cf
import hashlib
import http.client
import json
import os
import secrets
import shutil
import struct
import subprocess
import sys
import threading
import time
import urllib.parse
import zlib

sys.path.insert(0, os.path.dirname(__file__))
from lib import *  # noqa: E402,F401,F403

t = Tap()
CONF = os.environ["SANDBOXD_CONFIG_DIR"]
DROPIN = os.path.join(CONF, "sandboxd.conf.d")
STORE = "/var/lib/sandboxd/artifacts"
SCRATCH = f"/var/lib/sandbox-harness/artifacts-{secrets.token_hex(6)}"
os.makedirs(DROPIN, exist_ok=True)
os.makedirs(SCRATCH, exist_ok=True)
SANDBOXCTL = os.path.join(BUILD, "sandboxctl", "sandboxctl")

# A root-only file on the host the sandbox will point symlinks at: its content must never show up.
TOKEN = "MARKER-" + secrets.token_hex(16)
MARKER = "/var/lib/sandboxd/artifact-test-marker"
with open(MARKER, "w") as f:
    f.write(TOKEN + "\n")
os.chmod(MARKER, 0o600)
marker_stat = os.stat(MARKER)
shadow_stat = os.stat("/etc/shadow") if os.path.exists("/etc/shadow") else None


def png_bytes(w=16, h=8):
    def chunk(kind, data):
        c = struct.pack(">I", len(data)) + kind + data
        return c + struct.pack(">I", zlib.crc32(kind + data) & 0xffffffff)
    raw = b"".join(b"\x00" + bytes((x * 16 + y) & 255 for x in range(w) for _ in range(3)) for y in range(h))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


PNG = png_bytes()
CSV = "name,value\nalpha,1\nbeta,2\n\u00e9t\u00e9,3\n".encode()


def raw_get(path, timeout=120):
    """GET over the unix socket: (status, headers, body bytes)."""
    conn = UnixConnection(SOCKET, timeout=timeout)
    conn.request("GET", path)
    resp = conn.getresponse()
    body = resp.read()
    headers = {k.lower(): v for k, v in resp.getheaders()}
    conn.close()
    return resp.status, headers, body


def reload_with(name, text):
    path = os.path.join(DROPIN, name)
    if text is None:
        if os.path.exists(path):
            os.unlink(path)
    else:
        with open(path, "w") as f:
            f.write(text)
    subprocess.run(["systemctl", "reload", "sandboxd.service"], check=True)


def by_path(res):
    return {a["path"]: a for a in (res.get("artifacts") or [])}


def skipped(res):
    return {s["path"]: s["reason"] for s in (res.get("artifacts_skipped") or [])}


# ---- 1. a PNG and a CSV come back byte-identical ------------------------------------------------

code = f"""
import os
os.makedirs('/workspace/output/tables', exist_ok=True)
open('/workspace/output/plot.png', 'wb').write({PNG!r})
open('/workspace/output/tables/data set.csv', 'wb').write({CSV!r})
open('/workspace/not-an-artifact.txt', 'w').write('outside output/')
print('written')
"""
res = run(code)
t.verdict(res, "success", None, "the program writing a PNG and a CSV")
eid = res["execution_id"]
arts = by_path(res)
t.eq(sorted(arts), ["plot.png", "tables/data set.csv"], "exactly the files below output/ are artifacts", res)
t.eq(res.get("artifacts_skipped"), [], "nothing skipped")
png, csv = arts.get("plot.png", {}), arts.get("tables/data set.csv", {})
t.eq((png.get("size"), png.get("mime_type"), png.get("sha256")),
     (len(PNG), "image/png", hashlib.sha256(PNG).hexdigest()), "PNG: size, type, sha256")
t.eq((csv.get("size"), csv.get("mime_type"), csv.get("sha256")),
     (len(CSV), "text/csv", hashlib.sha256(CSV).hexdigest()), "CSV: size, type, sha256")
t.ok(str(png.get("url", "")).startswith(f"/v1/executions/{eid}/artifacts/plot.png?expires="), "PNG has a signed URL",
     png)
t.ok("data%20set.csv" in str(csv.get("url", "")), "the CSV's name is percent-encoded in its URL", csv)

for name, want, ctype in (("plot.png", PNG, "image/png"), ("tables/data set.csv", CSV, "text/csv")):
    st, hd, body = raw_get(arts[name]["url"])
    t.eq(st, 200, f"GET {name}: 200")
    t.ok(body == want, f"GET {name}: byte-identical ({len(body)} bytes)")
    t.eq(hd.get("content-type"), ctype, f"GET {name}: Content-Type")
    t.eq(hd.get("content-length"), str(len(want)), f"GET {name}: Content-Length")
    t.eq(hd.get("x-content-type-options"), "nosniff", f"GET {name}: nosniff")
    t.ok(hd.get("content-disposition", "").startswith("attachment"), f"GET {name}: sent as an attachment", hd)

# Another spelling of the same name (an escape where none is needed) is the same capability.
st, _, body = raw_get(csv["url"].replace("/tables/", "/t%61bles/"))
t.ok(st == 200 and body == CSV, "a non-canonical spelling of the same path is accepted", st)

# ---- 2. tampered, expired, unknown: refused, all alike -----------------------------------------

url = png["url"]
base, query = url.split("?", 1)
q = dict(urllib.parse.parse_qsl(query))
sig = q["signature"]
flipped = ("0" if sig[0] != "0" else "1") + sig[1:]
variants = {
    "tampered signature": f"{base}?expires={q['expires']}&signature={flipped}",
    "tampered path": f"/v1/executions/{eid}/artifacts/tables/data%20set.csv?expires={q['expires']}&signature={sig}",
    "tampered expiry": f"{base}?expires={int(q['expires']) + 1}&signature={sig}",
    "expiry in the past": f"{base}?expires=1&signature={sig}",
    "other execution": f"/v1/executions/exec_nope/artifacts/plot.png?expires={q['expires']}&signature={sig}",
    "no signature": f"{base}?expires={q['expires']}",
    "no query": base,
    "upper-case signature": f"{base}?expires={q['expires']}&signature={sig.upper()}",
    "bad escape": f"/v1/executions/{eid}/artifacts/plot%zz.png?expires={q['expires']}&signature={sig}",
}
bodies = set()
for what, u in variants.items():
    st, hd, body = raw_get(u)
    t.eq(st, 404, f"{what}: refused with 404")
    bodies.add(body)
t.eq(len(bodies), 1, "every refusal has the same body (it does not say which check failed)", bodies)

# Expired for real: URLs valid for 1 s.
reload_with("60-artifact-lifetime.conf", "[Artifacts]\nArtifactURLLifetimeSec=1\n")
st, fresh = get(eid)
short = by_path(fresh)["plot.png"]["url"]
st, _, body = raw_get(short)
print(f"# a 1 s URL fetched at once: {st}")
time.sleep(2.5)
st, _, body = raw_get(short)
t.eq(st, 404, "a URL past its expiry is refused")
t.ok(body in bodies, "with the same body as a tampered one")
reload_with("60-artifact-lifetime.conf", None)

# ---- 3. the listing route, restart, TCP --------------------------------------------------------

st, lst = request("GET", f"/v1/executions/{eid}/artifacts")
t.eq(st, 200, "GET /v1/executions/ID/artifacts")
t.eq(sorted(a["path"] for a in lst.get("artifacts", [])), sorted(arts), "it lists the same artifacts", lst)
st, _ = request("GET", "/v1/executions/exec_nope/artifacts")
t.eq(st, 404, "listing an unknown execution: 404")

subprocess.run(["systemctl", "restart", "sandboxd.service"], check=True)
t.ok(wait_until(lambda: os.path.exists(SOCKET) and health().get("status") == "ok", 30), "sandboxd restarted")
st, again = get(eid)
t.eq(sorted(by_path(again)), sorted(arts), "after a restart the artifacts are still listed")
st, _, body = raw_get(by_path(again)["plot.png"]["url"])
t.ok(st == 200 and body == PNG, "and fetched byte-identical through a URL signed after the restart")
st, _, body = raw_get(url)
t.ok(st == 200 and body == PNG, "a URL signed before the restart still works (the key is kept)")

# TCP: the signed URL is the capability; everything else still wants a key.
PORT = 18090
keys = os.path.join(CONF, "api-keys-artifacts")
key = secrets.token_urlsafe(32)
with open(keys, "w") as f:
    f.write(f"ci sha256:{hashlib.sha256(key.encode()).hexdigest()} admin\n")
os.chmod(keys, 0o600)
with open(os.path.join(DROPIN, "61-artifact-tcp.conf"), "w") as f:
    f.write(f"[Daemon]\nListen=127.0.0.1:{PORT}\nAPIKeysFile={keys}\n")
subprocess.run(["systemctl", "restart", "sandboxd.service"], check=True)


def tcp_get(path, key=None):
    conn = http.client.HTTPConnection("127.0.0.1", PORT, timeout=60)
    conn.request("GET", path, headers={"Authorization": f"Bearer {key}"} if key else {})
    resp = conn.getresponse()
    body = resp.read()
    conn.close()
    return resp.status, body


if t.ok(wait_until(lambda: subprocess.run(["systemctl", "is-active", "-q", "sandboxd.service"]).returncode == 0
                   and os.path.exists(SOCKET), 30), "sandboxd restarted with a TCP listener"):
    t.ok(wait_until(lambda: tcp_get("/v1/health", key)[0] == 200, 20), "TCP listener up")
    st, body = tcp_get(url)
    t.ok(st == 200 and body == PNG, "on TCP a signed URL works without an API key", st)
    st, _ = tcp_get(variants["tampered signature"])
    t.eq(st, 404, "on TCP a tampered URL is refused")
    st, _ = tcp_get(f"/v1/executions/{eid}/artifacts")
    t.eq(st, 401, "on TCP the listing still wants an API key")
    st, _ = tcp_get(f"/v1/executions/{eid}")
    t.eq(st, 401, "and so does the execution")
    st, body = tcp_get(f"/v1/executions/{eid}/artifacts", key)
    t.eq(st, 200, "with the key the listing answers")
os.unlink(os.path.join(DROPIN, "61-artifact-tcp.conf"))
subprocess.run(["systemctl", "restart", "sandboxd.service"], check=True)
wait_until(lambda: os.path.exists(SOCKET) and health().get("status") == "ok", 30)

# ---- 4. sandboxctl ------------------------------------------------------------------------------

def ctl(*args):
    return subprocess.run([SANDBOXCTL, *args], capture_output=True, timeout=120)


p = ctl("artifacts", eid)
t.ok(p.returncode == 0 and b"plot.png" in p.stdout and b"tables/data set.csv" in p.stdout,
     "sandboxctl artifacts ID lists them", p)
p = ctl("artifacts", eid, "--json")
t.ok(p.returncode == 0 and len(json.loads(p.stdout)["artifacts"]) == 2, "sandboxctl artifacts --json", p)
d1 = os.path.join(SCRATCH, "one")
os.makedirs(d1)
p = ctl("artifacts", eid, "--get", "tables/data set.csv", "--dest", d1)
t.ok(p.returncode == 0 and open(os.path.join(d1, "tables/data set.csv"), "rb").read() == CSV,
     "sandboxctl --get PATH --dest DIR downloads it byte-identical", p)
p = ctl("artifacts", eid, "--get", "tables/data set.csv", "--dest", d1)
t.ok(p.returncode == 73 and open(os.path.join(d1, "tables/data set.csv"), "rb").read() == CSV,
     "an existing file is not overwritten (exit 73)", p)
d2 = os.path.join(SCRATCH, "all")
os.makedirs(d2)
p = ctl("artifacts", eid, "--all", "--dest", d2)
t.ok(p.returncode == 0 and open(os.path.join(d2, "plot.png"), "rb").read() == PNG and
     open(os.path.join(d2, "tables/data set.csv"), "rb").read() == CSV, "sandboxctl --all --dest DIR", p)
out = os.path.join(SCRATCH, "plot-copy.png")
p = ctl("artifacts", eid, "--get", "plot.png", "-o", out)
t.ok(p.returncode == 0 and open(out, "rb").read() == PNG, "sandboxctl --get PATH -o FILE", p)
p = ctl("artifacts", eid, "--get", "nope.txt", "--dest", d1)
t.eq(p.returncode, 4, "sandboxctl --get of an unknown artifact: exit 4")
p = ctl("artifacts", eid, "--get", "../escape", "--dest", d1)
t.ok(p.returncode != 0 and not os.path.exists(os.path.join(SCRATCH, "escape")), "sandboxctl refuses '..'", p)
# A symlink planted in the destination is not followed.
d3 = os.path.join(SCRATCH, "planted")
os.makedirs(d3)
os.symlink(MARKER, os.path.join(d3, "plot.png"))
p = ctl("artifacts", eid, "--get", "plot.png", "--dest", d3)
t.ok(p.returncode == 73 and open(MARKER).read() == TOKEN + "\n" and os.path.islink(os.path.join(d3, "plot.png")),
     "a symlink in the destination is not followed (exit 73)", p)

# ---- 5. the hostile corpus -----------------------------------------------------------------------

hostile = f"""
import json, os, socket, time
O = '/workspace/output'
os.makedirs(O + '/sub', exist_ok=True)
made = []
def attempt(name, f):
    try:
        f()
        made.append(name)
    except OSError as e:
        print('could not create', name, e)
open(O + '/ok.txt', 'w').write('fine\\n')
open(O + '/sub/deep.txt', 'w').write('deep\\n')
attempt('shadow', lambda: os.symlink('/etc/shadow', O + '/shadow'))
attempt('marker.txt', lambda: os.symlink({MARKER!r}, O + '/marker.txt'))
attempt('rootdir', lambda: os.symlink('/', O + '/rootdir'))
attempt('sub/up', lambda: os.symlink('..', O + '/sub/up'))
attempt('loopa', lambda: (os.symlink('loopb', O + '/loopa'), os.symlink('loopa', O + '/loopb')))
open('/workspace/orig.txt', 'w').write('hard\\n')
attempt('hard.txt', lambda: os.link('/workspace/orig.txt', O + '/hard.txt'))
attempt('data.csv', lambda: os.mkfifo(O + '/data.csv'))
def sock():
    s = socket.socket(socket.AF_UNIX)
    s.bind(O + '/sock.png')
attempt('sock.png', sock)
attempt('newline', lambda: open(os.fsencode(O) + b'/bad\\nname.txt', 'w').write('x'))
attempt('badutf8', lambda: open(os.fsencode(O) + b'/\\xff\\xfe.bin', 'w').write('x'))
def sparse():
    # 1 TiB if the sandbox's RLIMIT_FSIZE (its disk_mb) allows, else the largest it does: either way
    # far beyond ArtifactMaxFileBytes=, and nothing of it is ever read.
    with open(O + '/sparse.bin', 'w') as f:
        for size in (1 << 40, 1000 << 20):
            try:
                f.truncate(size)
                print('sparse size', size)
                return
            except OSError as e:
                print('sparse', size, e)
        raise OSError('no sparse file')
attempt('sparse.bin', sparse)
open(O + '/x.txt', 'w').write('original\\n')
print(json.dumps(made), flush=True)
if os.fork() == 0:
    os.setsid()
    time.sleep(1.5)
    os.unlink(O + '/x.txt')
    os.symlink({MARKER!r}, O + '/x.txt')
    open(O + '/late.txt', 'w').write('late\\n')
    os._exit(0)
"""
res = run(hostile, limits={"timeout_ms": 20000})
t.verdict(res, "success", None, "the hostile program")
try:
    made = json.loads(res["stdout"].strip().splitlines()[-1])
except (ValueError, IndexError):
    made = []
print(f"# created in the sandbox: {made}; stdout: {res.get('stdout')!r}")
arts, skips = by_path(res), skipped(res)
t.eq(sorted(p for p in arts if p not in ("x.txt", "late.txt")), ["ok.txt", "sub/deep.txt"],
     "only the regular files are artifacts", res)
want_skips = {
    "shadow": ("shadow", "symlink"), "marker.txt": ("marker.txt", "symlink"), "rootdir": ("rootdir", "symlink"),
    "sub/up": ("sub/up", "symlink"), "loopa": ("loopa", "symlink"), "hard.txt": ("hard.txt", "hardlink"),
    "data.csv": ("data.csv", "fifo"), "sock.png": ("sock.png", "socket"),
    "newline": ("bad\\x0aname.txt", "name_invalid"), "badutf8": ("\\xff\\xfe.bin", "name_invalid"),
    "sparse.bin": ("sparse.bin", "too_large"),
}
for name, (path, reason) in want_skips.items():
    if name not in made:
        print(f"# {name}: could not be created in the sandbox, not checked")
        continue
    t.eq(skips.get(path), reason, f"{name}: skipped as {reason}", json.dumps(res.get("artifacts_skipped"))[:2000])
if "loopa" in made:
    t.eq(skips.get("loopb"), "symlink", "loopb: skipped as symlink")
# The detached child was killed with the unit: x.txt is the original, or (had it been quick enough,
# before the unit ended) a symlink that is skipped — never followed.
x = arts.get("x.txt")
if x:
    st, _, body = raw_get(x["url"])
    t.eq(body, b"original\n", "x.txt: the file as the program left it")
else:
    t.eq(skips.get("x.txt"), "symlink", "x.txt: the swapped-in symlink is skipped")
print(f"# detached child: x.txt {'collected as written' if x else 'swapped before the unit ended'}; "
      f"late.txt {'present' if 'late.txt' in arts else 'absent'}")
for p, a in arts.items():
    st, _, body = raw_get(a["url"])
    t.ok(st == 200 and TOKEN.encode() not in body and b"root:" not in body, f"artifact {p}: no outside content")

# output/ itself replaced (it exists at the start: the program removes it first): by a symlink to the
# host's state directory, and by a file.
RM = "import os\nos.rmdir('/workspace/output')\n"
for what, prog in (("a symlink", RM + "os.symlink('/var/lib/sandboxd', '/workspace/output')\n"),
                   ("a symlink to the marker", RM + f"os.symlink({MARKER!r}, '/workspace/output')\n"),
                   ("a file", RM + "open('/workspace/output', 'w').write('not a dir')\n")):
    r2 = run(prog)
    t.ok(r2.get("artifacts") == [] and skipped(r2) == {".": "not_directory"},
         f"output/ is {what}: nothing collected, one 'not_directory'", r2.get("artifacts_skipped"))

# 100,000 tiny files; the API answers meanwhile.
many = """
import os
O = '/workspace/output'
os.makedirs(O, exist_ok=True)
for i in range(100000):
    with open('%s/f%06d.txt' % (O, i), 'w') as f:
        f.write(str(i))
print('done')
"""
latencies, errors = [], []      # (answered at, latency)
stop = threading.Event()


def poll_health():
    while not stop.is_set():
        t0 = time.monotonic()
        try:
            st, h = request("GET", "/v1/health", timeout=60)
            (latencies if st == 200 else errors).append((time.monotonic(), time.monotonic() - t0))
        except Exception as e:  # noqa: BLE001
            errors.append(repr(e))
        time.sleep(0.05)


def unit_gone(unit):
    state = subprocess.run(["systemctl", "show", "-P", "ActiveState", unit], capture_output=True,
                           text=True).stdout.strip()
    return state in ("inactive", "failed", "")


poller = threading.Thread(target=poll_health)
poller.start()
collect_from = collect_to = None
try:
    st, acc = submit(many, limits={"timeout_ms": 300000})
    big_id = acc.get("execution_id")
    # The collection runs between the end of the unit and the execution's being final.
    wait_until(lambda: get(big_id)[1].get("status") == "running", 120)
    unit = get(big_id)[1].get("unit")     # as the record names it (warm or cold)
    wait_until(lambda: unit_gone(unit), 300, 0.02)
    collect_from = time.monotonic()
    wait_until(lambda: get(big_id)[1].get("status") not in ("queued", "running"), 300, 0.02)
    collect_to = time.monotonic()
    big = get(big_id)[1]
finally:
    stop.set()
    poller.join()
t.verdict(big, "success", None, "the program writing 100,000 files")
t.eq(len(big.get("artifacts") or []), 1000, "ArtifactMaxFiles=1000 artifacts kept")
t.eq(big.get("artifacts_skipped_total"), 99000, "the other 99,000 counted as skipped")
t.ok(all(s["reason"] == "too_many" for s in big.get("artifacts_skipped") or [{"reason": "?"}]),
     "as too_many")
t.eq(len(big.get("artifacts_skipped") or []), 100, "100 of them listed")
t.ok(len(latencies) > 0 and not errors, f"GET /v1/health answered all {len(latencies)} times meanwhile",
     errors[:5])
during = sorted(lat for at, lat in latencies if collect_from and collect_to and collect_from <= at <= collect_to)
if latencies:
    print(f"# /v1/health throughout: max {max(lat for _, lat in latencies) * 1000:.0f} ms over {len(latencies)} "
          f"requests; during the collection ({(collect_to or 0) - (collect_from or 0):.2f} s): {len(during)} "
          f"answers" + (f", max {during[-1] * 1000:.0f} ms, median {during[len(during) // 2] * 1000:.0f} ms"
                        if during else ""))
a0 = (big.get("artifacts") or [{"path": "f?"}])[0]
st, _, body = raw_get(a0.get("url", "/"))
t.ok(st == 200 and body == a0["path"][1:7].lstrip("0").encode() or (st == 200 and a0["path"] == "f000000.txt"
                                                                   and body == b"0"),
     "one of them is fetched, its content right", a0)

# Nothing from outside the workspace in the store, and the host files untouched.
leaked = []
for root, dirs, files in os.walk(STORE):
    for name in files:
        path = os.path.join(root, name)
        st = os.lstat(path)
        if not os.path.isfile(path) or os.path.islink(path) or st.st_size > 64 << 20:
            leaked.append(f"{path}: not a plain small file")
            continue
        data = open(path, "rb").read()
        if TOKEN.encode() in data or (shadow_stat and b"root:" in data and b":0:" in data):
            leaked.append(path)
        if st.st_mode & 0o7000:
            leaked.append(f"{path}: setuid/setgid/sticky")
t.eq(leaked, [], "no blob in the store holds outside content")
m = os.stat(MARKER)
t.eq((m.st_uid, m.st_gid, m.st_mode, m.st_size), (marker_stat.st_uid, marker_stat.st_gid, marker_stat.st_mode,
                                                   marker_stat.st_size), "the marker's owner and mode unchanged")
if shadow_stat:
    s = os.stat("/etc/shadow")
    t.eq((s.st_uid, s.st_gid, s.st_mode), (shadow_stat.st_uid, shadow_stat.st_gid, shadow_stat.st_mode),
         "/etc/shadow's owner and mode unchanged")

# ---- 6. the URL key --------------------------------------------------------------------------------

def restart():
    subprocess.run(["systemctl", "reset-failed", "sandboxd.service"], capture_output=True)
    rc = subprocess.run(["systemctl", "restart", "sandboxd.service"], capture_output=True).returncode
    if rc == 0:
        wait_until(lambda: os.path.exists(SOCKET) and health().get("status") == "ok", 30)
    return rc


def journal():
    return subprocess.run(["journalctl", "-u", "sandboxd.service", "--no-pager", "-n", "100"],
                          capture_output=True, text=True).stdout


k = os.stat("/var/lib/sandboxd/artifact-url.key")
t.eq((k.st_size, k.st_mode & 0o7777, k.st_uid), (32, 0o600, 0), "the generated key: 32 bytes, 0600, root's")
own_key = os.path.join(CONF, "artifact-url.key")
with open(own_key, "wb") as f:
    f.write(secrets.token_bytes(48))
os.chmod(own_key, 0o644)
with open(os.path.join(DROPIN, "63-artifact-key.conf"), "w") as f:
    f.write(f"[Artifacts]\nArtifactURLKeyFile={own_key}\n")
t.ok(restart() != 0, "a key file others can read fails the start")
t.ok(wait_until(lambda: "refusing the artifact URL key (ArtifactURLKeyFile=): others can read it" in journal(), 10),
     "... and says why", journal()[-1500:])
os.chmod(own_key, 0o600)
t.eq(restart(), 0, "with mode 0600 it starts")
st, _, body = raw_get(url)
t.eq(st, 404, "a URL signed with the old key is refused")
st, again = get(eid)
st, _, body = raw_get(by_path(again)["plot.png"]["url"])
t.ok(st == 200 and body == PNG, "a URL signed with the new key works")
os.unlink(os.path.join(DROPIN, "63-artifact-key.conf"))
t.eq(restart(), 0, "back to the generated key")

# ---- 7. artifacts go with their records --------------------------------------------------------

blob = os.path.join(STORE, png["sha256"][:2], png["sha256"])
t.ok(os.path.isfile(blob), "the PNG's blob is in the store", blob)
reload_with("62-artifact-retention.conf", "[Daemon]\nRetentionSec=1\nSweepIntervalSec=1\n")
t.ok(wait_until(lambda: get(eid)[0] == 404, 30), "the record is purged")
t.ok(wait_until(lambda: not os.path.exists(blob), 10), "its blob is removed from the store")
st, _, body = raw_get(url)
t.eq(st, 404, "its URL is refused")
t.ok(body in bodies, "with the same body as any refusal")
reload_with("62-artifact-retention.conf", None)

shutil.rmtree(SCRATCH, ignore_errors=True)
os.unlink(MARKER)
t.done()

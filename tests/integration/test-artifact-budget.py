# SPDX-License-Identifier: LGPL-2.1-or-later
# Artifacts must not fill the disk (issue 12, §2), through the real daemon and real programs:
# 1. sparse files are stored sparse: a run with disk_mb=16 that leaves 40 files of 15 MiB with 12 KiB
#    of data each, and 1 MiB files until its workspace is full, grows the store by at most 16 MiB
#    (what was really written), every file collected byte-exact;
# 2. the 300 MiB sparse file of the report (disk_mb=400, ArtifactMaxFileBytes=512M) grows the store
#    by its 12 KiB, not by 300 MiB;
# 3. a per-caller budget (ArtifactMaxBytesPerCaller= in a drop-in, over TCP with two API keys)
#    stops a second execution's artifacts once the caller's are used up, across a restart, while
#    its verdict stays success and the other caller is not affected; a purge by RetentionSec= gives
#    the budget back;
# 4. the store-wide budget and the free-space headroom skip with their reasons.
import hashlib
import http.client
import json
import os
import secrets
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from lib import *  # noqa: E402,F401,F403

t = Tap()
CONF = os.environ["SANDBOXD_CONFIG_DIR"]
DROPIN = os.path.join(CONF, "sandboxd.conf.d")
STORE = "/var/lib/sandboxd/artifacts"
os.makedirs(DROPIN, exist_ok=True)
PORT = 18093
MiB = 1 << 20


def store_allocated():
    """What the artifact store really holds: the allocation of every blob."""
    total = 0
    for root, _, files in os.walk(STORE):
        for name in files:
            total += os.lstat(os.path.join(root, name)).st_blocks * 512
    return total


def blob_allocated(sha):
    st = os.lstat(os.path.join(STORE, sha[:2], sha))
    return st.st_size, st.st_blocks * 512


def dropin(name, text):
    path = os.path.join(DROPIN, name)
    if text is None:
        if os.path.exists(path):
            os.unlink(path)
    else:
        with open(path, "w") as f:
            f.write(text)


def reload():
    subprocess.run(["systemctl", "reload", "sandboxd.service"], check=True)


def restart():
    subprocess.run(["systemctl", "reset-failed", "sandboxd.service"], capture_output=True)
    rc = subprocess.run(["systemctl", "restart", "sandboxd.service"], capture_output=True).returncode
    if rc == 0:
        wait_until(lambda: os.path.exists(SOCKET) and health().get("status") == "ok", 30)
    return rc


def by_path(res):
    return {a["path"]: a for a in (res.get("artifacts") or [])}


def skips(res):
    return {s["path"]: s["reason"] for s in (res.get("artifacts_skipped") or [])}


def raw_get(path):
    conn = UnixConnection(SOCKET, timeout=120)
    conn.request("GET", path)
    resp = conn.getresponse()
    body = resp.read()
    conn.close()
    return resp.status, body


# The sparse files' content, the same inside the sandbox and here: 4 KiB of data at three offsets.
SPARSE_HELPERS = """
def chunk(i):
    return (b'%04d' % i) * 1024
def sparse(path, size, i):
    with open(path, 'wb') as f:
        f.truncate(size)
        for off in (0, size // 2, size - 4096):
            f.seek(off)
            f.write(chunk(i))
"""
exec(SPARSE_HELPERS)  # noqa: S102 -- the same chunk() here, for the expected contents


def sparse_digest(size, i):
    h = hashlib.sha256()
    zeros = bytes(MiB)
    pos = 0
    for off in (0, size // 2, size - 4096):
        while pos < off:
            n = min(off - pos, MiB)
            h.update(zeros[:n])
            pos += n
        h.update(chunk(i))  # noqa: F821
        pos = off + 4096
    return h.hexdigest()


def sparse_bytes(size, i):
    b = bytearray(size)
    for off in (0, size // 2, size - 4096):
        b[off:off + 4096] = chunk(i)  # noqa: F821
    return bytes(b)


# ---- 1. disk_mb=16: 600 MiB of sparse size, what is really there is stored --------------------------

SPARSE = 15 * MiB
prog = SPARSE_HELPERS + f"""
import errno, json, os
O = '/workspace/output'
os.makedirs(O + '/sparse')
os.makedirs(O + '/dense')
report = {{}}
try:
    with open(O + '/huge.bin', 'wb') as f:
        f.truncate(300 << 20)
    report['huge'] = 'created'
except OSError as e:
    report['huge'] = errno.errorcode.get(e.errno, e.errno)
    os.unlink(O + '/huge.bin')
for i in range(40):
    sparse(O + '/sparse/s%02d.bin' % i, {SPARSE}, i)
n = 0
while True:
    try:
        with open(O + '/dense/d%02d.bin' % n, 'wb') as f:
            f.write(os.urandom(1 << 20))
        n += 1
    except OSError as e:
        report['dense_stopped_by'] = errno.errorcode.get(e.errno, e.errno)
        os.unlink(O + '/dense/d%02d.bin' % n)
        break
report['dense'] = n
print(json.dumps(report))
"""
before = store_allocated()
res = run(prog, limits={"disk_mb": 16, "timeout_ms": 60000})
grown = store_allocated() - before
t.verdict(res, "success", None, "disk_mb=16: 40 sparse files of 15 MiB and 1 MiB files until full")
try:
    report = json.loads(res["stdout"].strip().splitlines()[-1])
except (ValueError, IndexError, KeyError):
    report = {}
print(f"# in the sandbox: {report}; the store grew by {grown} bytes")
arts, sk = by_path(res), skips(res)
dense = {p: a for p, a in arts.items() if p.startswith("dense/")}
sparse_arts = {p: a for p, a in arts.items() if p.startswith("sparse/")}
t.eq(report.get("huge"), "EFBIG", "a 300 MiB file cannot even be made with disk_mb=16 (RLIMIT_FSIZE)", report)
t.ok(report.get("dense", 0) >= 10, "the workspace held at least 10 dense MiB before it was full", report)
t.eq(len(sparse_arts), 40, "all 40 sparse files are artifacts", sk)
t.eq(len(dense), report.get("dense"), "every dense file is an artifact", sk)
t.eq(sk, {}, "nothing skipped")
t.ok(all(a["size"] == SPARSE for a in sparse_arts.values()), "each with its size (15 MiB)")
t.ok(all(a["sha256"] == sparse_digest(SPARSE, int(p[8:10])) for p, a in sorted(sparse_arts.items())),
     "and its digest, holes hashed as zeros")
alloc = [blob_allocated(a["sha256"]) for a in sparse_arts.values()]
t.ok(all(size == SPARSE and real <= 64 << 10 for size, real in alloc),
     "each stored blob has the size but only the allocation of its data (<= 64 KiB)", alloc[:5])
t.ok(0 < grown <= 16 * MiB, f"the store grew by at most disk_mb=16 MiB ({grown} bytes, "
     f"{sum(a['size'] for a in arts.values())} bytes of sizes)")
t.ok(grown >= len(dense) * MiB, "and by at least the dense files", grown)
s05 = sparse_arts.get("sparse/s05.bin", {})
st, body = raw_get(s05.get("url", "/nope"))
t.ok(st == 200 and body == sparse_bytes(SPARSE, 5), "a sparse artifact downloads byte-identical, holes as zeros",
     (st, len(body)))

# ---- 2. the report's case: a 300 MiB sparse file with 12 KiB of data --------------------------------

dropin("50-budget-filesize.conf", "[Artifacts]\nArtifactMaxFileBytes=512M\n")
reload()
HUGE = 300 * MiB
prog = SPARSE_HELPERS + f"""
import os
O = '/workspace/output'
os.makedirs(O, exist_ok=True)  # sandbox-exec creates it; older layouts did not
sparse(O + '/huge.bin', {HUGE}, 7)
for i in range(20):
    with open(O + '/d%02d.bin' % i, 'wb') as f:
        f.write(os.urandom(1 << 20))
print('ok')
"""
before = store_allocated()
t0 = time.monotonic()
res = run(prog, limits={"disk_mb": 400, "timeout_ms": 60000})
took = time.monotonic() - t0
grown = store_allocated() - before
t.verdict(res, "success", None, "a 300 MiB sparse file and 20 MiB of data")
huge = by_path(res).get("huge.bin", {})
print(f"# the store grew by {grown} bytes; the run took {took:.1f} s; huge.bin: {huge.get('size')}")
t.eq((huge.get("size"), huge.get("sha256")), (HUGE, sparse_digest(HUGE, 7)), "huge.bin collected: size, digest",
     skips(res))
t.ok(huge and blob_allocated(huge["sha256"])[1] <= 64 << 10, "its blob holds its 12 KiB, not 300 MiB",
     huge and blob_allocated(huge["sha256"]))
t.ok(20 * MiB <= grown <= 21 * MiB, f"the store grew by what was written (20 MiB + 12 KiB): {grown} bytes")
dropin("50-budget-filesize.conf", None)

# ---- 3. a per-caller budget -----------------------------------------------------------------------------

keys_file = os.path.join(CONF, "api-keys-budget")
keys = {name: secrets.token_urlsafe(32) for name in ("alice", "bob")}
with open(keys_file, "w") as f:
    for name, key in keys.items():
        f.write(f"{name} sha256:{hashlib.sha256(key.encode()).hexdigest()}\n")
os.chmod(keys_file, 0o600)
dropin("51-budget-tcp.conf", f"[Daemon]\nListen=127.0.0.1:{PORT}\nAPIKeysFile={keys_file}\n")
# 10.5 MiB: the eight MiB of the first run, two of the second, not a third.
dropin("52-budget-caller.conf", "[Artifacts]\nArtifactMaxBytesPerCaller=10752K\n")
t.eq(restart(), 0, "sandboxd restarted with a TCP listener and ArtifactMaxBytesPerCaller=10752K")


def tcp_run(who, code, **fields):
    body = {"language": "python", "code": code, **fields}
    conn = http.client.HTTPConnection("127.0.0.1", PORT, timeout=300)
    conn.request("POST", "/v1/executions?wait=true", body=json.dumps(body),
                 headers={"Authorization": f"Bearer {keys[who]}", "Content-Type": "application/json"})
    resp = conn.getresponse()
    data = resp.read()
    conn.close()
    try:
        return resp.status, json.loads(data)
    except ValueError:
        return resp.status, {"_raw": data[:500]}


def tcp_up():
    try:
        conn = http.client.HTTPConnection("127.0.0.1", PORT, timeout=5)
        conn.request("GET", "/v1/health", headers={"Authorization": f"Bearer {keys['alice']}"})
        ok = conn.getresponse().status == 200
        conn.close()
        return ok
    except OSError:
        return False


def mib_files(n, prefix):
    return f"""
import os
os.makedirs('/workspace/output', exist_ok=True)
for i in range({n}):
    with open('/workspace/output/{prefix}%02d.bin' % i, 'wb') as f:
        f.write(os.urandom(1 << 20))
open('/workspace/output/empty.txt', 'w').close()
print('wrote', {n})
"""


t.ok(wait_until(tcp_up, 20), "TCP listener up")
st, a1 = tcp_run("alice", mib_files(8, "a"))
t.eq(st, 200, "alice's first run answered")
t.verdict(a1, "success", None, "alice's first run (8 MiB)")
t.eq(len(by_path(a1)), 9, "all 8 MiB (and the empty file) collected", skips(a1))

# The usage is the store's: a restart does not forget it.
t.eq(restart(), 0, "sandboxd restarted")
t.ok(wait_until(tcp_up, 20), "TCP listener up again")
st, a2 = tcp_run("alice", mib_files(4, "b"))
t.verdict(a2, "success", None, "alice's second run: the verdict is untouched by the budget")
t.eq(a2.get("exit_code"), 0, "exit code 0")
got, sk = by_path(a2), skips(a2)
t.eq(len([p for p in got if p.startswith("b")]), 2, "two of its four MiB collected (10 of 10.5 MiB)", sk)
t.eq(sorted(sk.values()), ["caller_budget", "caller_budget"], "the other two skipped as caller_budget", sk)
t.ok("empty.txt" in got, "an empty file charges nothing and is collected")
t.eq(a2.get("artifacts_skipped_total"), 2, "artifacts_skipped_total counts them")
st, listed = request("GET", f"/v1/executions/{a2['execution_id']}/artifacts")
t.eq(skips(listed), sk, "the skip list is kept in the store as answered")

st, b1 = tcp_run("bob", mib_files(4, "c"))
t.verdict(b1, "success", None, "bob's run")
t.eq((len(by_path(b1)), skips(b1)), (5, {}), "another caller's budget is its own: all 4 MiB collected")

# ---- 4. the store-wide budget, and the free space --------------------------------------------------------

dropin("53-budget-store.conf", "[Artifacts]\nArtifactStoreMaxBytes=1M\n")
reload()
st, b2 = tcp_run("bob", mib_files(1, "d"))
t.verdict(b2, "success", None, "a run over the store-wide budget")
t.eq(skips(b2), {"d00.bin": "store_budget"}, "its file skipped as store_budget", b2.get("artifacts_skipped"))
t.ok("empty.txt" in by_path(b2), "its empty file collected")

dropin("53-budget-store.conf", "[Artifacts]\nArtifactMinFreeBytes=100%\n")
reload()
st, b3 = tcp_run("bob", mib_files(1, "e"))
t.verdict(b3, "success", None, "a run with no free space left to give")
t.eq(skips(b3), {"e00.bin": "low_disk_space"}, "its file skipped as low_disk_space", b3.get("artifacts_skipped"))
dropin("53-budget-store.conf", None)
reload()

# ---- 5. a purge gives the caller's budget back ----------------------------------------------------------

before = store_allocated()
dropin("54-budget-retention.conf", "[Daemon]\nRetentionSec=1\nSweepIntervalSec=1\n")
reload()
t.ok(wait_until(lambda: get(a1["execution_id"])[0] == 404 and get(a2["execution_id"])[0] == 404, 30),
     "alice's records are purged")
t.ok(wait_until(lambda: store_allocated() <= before - 10 * MiB, 10), "and their blobs leave the store",
     (before, store_allocated()))
dropin("54-budget-retention.conf", None)
reload()
st, a3 = tcp_run("alice", mib_files(4, "f"))
t.verdict(a3, "success", None, "alice's run after the purge")
t.eq((len(by_path(a3)), skips(a3)), (5, {}), "her budget is back: all 4 MiB collected")

for name in ("51-budget-tcp.conf", "52-budget-caller.conf"):
    dropin(name, None)
os.unlink(keys_file)
t.eq(restart(), 0, "back to the harness configuration")
t.done()

#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Artifacts on several nodes (issue 22): three nodes share one PostgreSQL, one ArtifactsDirectory=
and one ArtifactURLKeyFile= (below the cluster's own directory, as a file system every node mounts
would be). What a run on node1 collected downloads byte-identical through node2, a large file too,
streamed; its signed URL works on node2 and node3, a tampered one is refused by every node alike;
two nodes storing the same content at once both succeed, with one blob and no temporary file left;
a purge on one node removes a blob only once no record refers to it, while other nodes keep adding
records that refer to the same content."""

import hashlib
import http.client
import os
import random
import sys
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "integration"))
from cluster import Cluster  # noqa: E402
from lib import Tap, wait_until  # noqa: E402

BUILD = os.environ.get("SANDBOXD_BUILD_DIR") or sys.argv[1]
t = Tap()

BIG = 8 << 20           # several MB: more than any buffer on the way


def shared_conf(c):
    """The shared directory (mode 0700, root's, as sandboxd wants it) and the shared URL key."""
    c.artifacts = os.path.join(c.dir, "artifacts")
    c.url_key = os.path.join(c.dir, "artifact-url.key")
    os.mkdir(c.artifacts, 0o700)
    c.read_write_paths.append(c.artifacts)
    fd = os.open(c.url_key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, os.urandom(32))
    os.close(fd)
    return f"[Artifacts]\nArtifactsDirectory={c.artifacts}\nArtifactURLKeyFile={c.url_key}\n"


def content(seed, n):
    return random.Random(seed).randbytes(n)


def program(files):
    """Python that writes {path: (seed, size)} below /workspace/output, the same bytes as content()."""
    lines = ["import os, random"]
    for path, (seed, size) in files.items():
        d = os.path.dirname(path)
        if d:
            lines.append(f"os.makedirs('/workspace/output/{d}', exist_ok=True)")
        lines.append(f"open('/workspace/output/{path}', 'wb').write(random.Random({seed!r}).randbytes({size}))")
    lines.append("print('written')")
    return "\n".join(lines) + "\n"


def get_stream(node, path, auth=False):
    """GET through node, read in 64 KiB pieces: (status, headers, sha256 hex, length, first bytes)."""
    conn = http.client.HTTPConnection("127.0.0.1", node.port, timeout=120)
    try:
        h = {"Authorization": f"Bearer {node.cluster.key}"} if auth else {}
        conn.request("GET", path, headers=h)
        r = conn.getresponse()
        hd = {k.lower(): v for k, v in r.getheaders()}
        md, n, head = hashlib.sha256(), 0, b""
        while True:
            piece = r.read(65536)
            if not piece:
                break
            md.update(piece)
            if len(head) < 4096:
                head += piece[:4096 - len(head)]
            n += len(piece)
        return r.status, hd, md.hexdigest(), n, head
    finally:
        conn.close()


def run(node, code, timeout=120):
    st, r = node.request("POST", "/v1/executions?wait=true", {"language": "python", "code": code},
                         timeout=timeout)
    return st, r


def by_path(res):
    return {a["path"]: a for a in ((res or {}).get("artifacts") or [])}


def blob(c, sha):
    return os.path.join(c.artifacts, sha[:2], sha)


def leftovers(c):
    """Temporary files in the store: none once every collection is over."""
    out = []
    for root, _, files in os.walk(c.artifacts):
        out += [os.path.join(root, f) for f in files if f.startswith(".")]
    return out


with Cluster(3, BUILD, extra_conf=shared_conf) as c:
    n1, n2, n3 = c.nodes

    # ---- 1. run on node1, read through node2 and node3 ------------------------------------------
    files = {"small.txt": ("small", 1000), "data/big.bin": ("big", BIG)}
    st, res = run(n1, program(files))
    t.ok(st == 200 and (res or {}).get("status") == "success", "node1 ran the program writing two artifacts",
         (st, res if st != 200 else {k: res.get(k) for k in ("status", "reason", "stderr", "artifacts_skipped")}))
    eid = (res or {}).get("execution_id")
    arts = by_path(res)
    t.eq(sorted(arts), sorted(files), "both files are artifacts", res and res.get("artifacts_skipped"))
    for path, (seed, size) in files.items():
        want = hashlib.sha256(content(seed, size)).hexdigest()
        t.eq((arts.get(path, {}).get("sha256"), arts.get(path, {}).get("size")), (want, size),
             f"{path}: sha256 and size")
        t.ok(os.path.isfile(blob(c, want)), f"{path}: its blob is in the shared directory")

    # The list through every node, and the files through the list's URLs of another node.
    for n in (n2, n3):
        st, lst = n.request("GET", f"/v1/executions/{eid}/artifacts")
        t.eq((st, sorted(a["path"] for a in (lst or {}).get("artifacts", []))), (200, sorted(files)),
             f"{n.name} lists node1's artifacts")
    st, lst = n2.request("GET", f"/v1/executions/{eid}/artifacts")
    urls2 = {a["path"]: a.get("url") for a in (lst or {}).get("artifacts", [])}
    for path, (seed, size) in files.items():
        want = hashlib.sha256(content(seed, size)).hexdigest()
        st, hd, got, length, _ = get_stream(n2, urls2.get(path) or "/none")
        t.eq((st, got, length, hd.get("content-length")), (200, want, size, str(size)),
             f"{path} downloads byte-identical through node2 (a URL node2 signed)")

    # node1's signed URLs (handed out with the result) verify on node2 and node3: one key.
    for path, (seed, size) in files.items():
        want = hashlib.sha256(content(seed, size)).hexdigest()
        for n in (n1, n2, n3):
            st, hd, got, length, _ = get_stream(n, arts[path]["url"])
            t.eq((st, got, length), (200, want, size), f"{path}: node1's signed URL works on {n.name}")

    # ---- 2. tampered URLs are refused by every node alike -----------------------------------------
    url = arts["small.txt"]["url"]
    base, query = url.split("?", 1)
    q = dict(urllib.parse.parse_qsl(query))
    sig = q["signature"]
    flipped = sig[:-1] + ("A" if sig[-1] != "A" else "B")
    variants = {
        "tampered signature": f"{base}?expires={q['expires']}&signature={flipped}",
        "tampered path": f"/v1/executions/{eid}/artifacts/data/big.bin?expires={q['expires']}&signature={sig}",
        "tampered expiry": f"{base}?expires={int(q['expires']) + 1}&signature={sig}",
        "another execution": f"/v1/executions/exec_nope/artifacts/small.txt?expires={q['expires']}&signature={sig}",
    }
    for n in c.nodes:
        bodies = set()
        for what, u in variants.items():
            st, _, _, _, body = get_stream(n, u)
            t.eq(st, 404, f"{n.name}: {what} refused with 404")
            bodies.add(body)
        t.eq(len(bodies), 1, f"{n.name}: every refusal has the same body", bodies)

    # ---- 3. two nodes store the same content at once ----------------------------------------------
    same = {"same.bin": ("same", 3 << 20)}
    same_sha = hashlib.sha256(content("same", 3 << 20)).hexdigest()
    results = {}

    def run_on(n):
        results[n.name] = run(n, program(same))

    threads = [threading.Thread(target=run_on, args=(n,)) for n in (n2, n3)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    for name, (st, r) in sorted(results.items()):
        a = by_path(r).get("same.bin", {})
        t.eq((st, (r or {}).get("status"), a.get("sha256")), (200, "success", same_sha),
             f"{name}: stored the same content at the same time")
    t.ok(os.path.isfile(blob(c, same_sha)) and os.stat(blob(c, same_sha)).st_size == 3 << 20,
         "one blob of the full size")
    t.eq(leftovers(c), [], "no temporary file is left in the shared directory")
    for name, (st, r) in sorted(results.items()):
        u = by_path(r).get("same.bin", {}).get("url") or "/none"
        st, _, got, _, _ = get_stream(n1, u)
        t.eq((st, got), (200, same_sha), f"{name}'s copy downloads through node1")

    # ---- 4. a purge on one node, references from the others ---------------------------------------
    # node3 restarts with RetentionSec=R: the records so far ("old", content A and a content of its
    # own) become older than R while a record made later with content A ("young") is not; the purge
    # takes the old record's own blob, keeps A for the young one, and takes A once it is old too.
    # Meanwhile node1 and node2 keep recording content A (collections that find the blob present),
    # racing the purge; each of them must download.
    R = 25
    old_files = {"a.bin": ("A", 200000), "own.bin": ("own", 100000)}
    a_sha = hashlib.sha256(content("A", 200000)).hexdigest()
    own_sha = hashlib.sha256(content("own", 100000)).hexdigest()
    st, old = run(n1, program(old_files))
    t.eq((st, (old or {}).get("status")), (200, "success"), "node1: the old record")
    old_done = time.time()
    time.sleep(10)
    st, young = run(n2, program({"a.bin": ("A", 200000)}))
    t.eq((st, (young or {}).get("status")), (200, "success"), "node2: the young record (the same content A)")
    young_id = (young or {}).get("execution_id")
    n3.stop()
    n3.add_conf("60-retention.conf", f"[Daemon]\nRetentionSec={R}\nSweepIntervalSec=1\n")
    n3.start()

    def gone(node, eid):
        return node.request("GET", f"/v1/executions/{eid}")[0] == 404

    t.ok(wait_until(lambda: gone(n1, old["execution_id"]), R + 30, 0.5), "the old record is purged (node3's sweep)")
    t.ok(time.time() - old_done >= R, "not before its retention", time.time() - old_done)
    t.ok(wait_until(lambda: not os.path.exists(blob(c, own_sha)), 10), "the blob only it used is removed")
    t.ok(os.path.isfile(blob(c, a_sha)), "content A stays: the young record refers to it")
    st, _, got, _, _ = get_stream(n1, by_path(young)["a.bin"]["url"])
    if gone(n1, young_id):
        t.ok(True, "the young record was purged as well meanwhile (slow machine)")
    else:
        t.eq((st, got), (200, a_sha), "the young record's A downloads through node1")

    # Content A recorded again and again by node1 and node2 while node3 purges every second.
    racing = []
    for i in range(6):
        n = (n1, n2)[i % 2]
        st, r = run(n, program({"a.bin": ("A", 200000)}))
        racing.append((n, st, r))
        time.sleep(0.5)
    bad = []
    for n, st, r in racing:
        if st != 200 or (r or {}).get("status") != "success":
            bad.append((n.name, st, r))
            continue
        if gone(n1, r["execution_id"]):
            continue            # purged since (older than R): nothing to check
        s2, _, got, _, _ = get_stream(n1, by_path(r)["a.bin"]["url"])
        if (s2, got) != (200, a_sha) and not gone(n1, r["execution_id"]):
            bad.append((n.name, r["execution_id"], s2, got))
    t.eq(bad, [], "every record made while node3 purged downloads its content A")

    # Once every record is past R, nothing refers to A: it goes.
    last = [r["execution_id"] for _, _, r in racing if r] + [young_id]
    t.ok(wait_until(lambda: all(gone(n1, e) for e in last), R + 40, 1), "the later records are purged in turn")
    t.ok(wait_until(lambda: not os.path.exists(blob(c, a_sha)), 10), "and content A's blob with the last of them")
    t.eq(leftovers(c), [], "no temporary file left")
    for n in c.nodes:
        st, h = n.request("GET", "/v1/health")
        t.eq(st, 200, f"{n.name} is healthy at the end")

t.done()

#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The queue three nodes share (issue 22): node1 has one slot, node2 and node3 two each, all on one
PostgreSQL. Work sent to node1 that it has no slot for is claimed by the idle nodes (FOR UPDATE SKIP
LOCKED, woken by NOTIFY) and runs there, each execution once; a caller waiting on node1 (POST
?wait=true) gets the result of a run another node claimed; a cancel through node1 reaches the node
that claimed the run; between two owners the claims are fair (the owner with fewer runs going on
goes first); a session's runs stay on the node of the session; the counters say what moved."""

import json
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "integration"))
from cluster import Cluster  # noqa: E402
from lib import Tap, wait_until  # noqa: E402

BUILD = os.environ.get("SANDBOXD_BUILD_DIR") or sys.argv[1]
t = Tap()

c = Cluster(3, BUILD)
a, b, n3 = c.nodes
a.add_conf("60-slots.conf", "[Daemon]\nMaxConcurrent=1\n")
b.add_conf("60-slots.conf", "[Daemon]\nMaxConcurrent=2\n")
n3.add_conf("60-slots.conf", "[Daemon]\nMaxConcurrent=2\n")


def submit(node, code, user=False, wait=False, **fields):
    body = {"language": "python", "code": code}
    body.update(fields)
    return node.request("POST", "/v1/executions" + ("?wait=true" if wait else ""), body, timeout=120, user=user)


def record(eid, node=None, user=False):
    return (node or b).request("GET", f"/v1/executions/{eid}", user=user)[1] or {}


def final(eid, user=False):
    return record(eid, user=user).get("status") in ("success", "failed", "cancelled", "timeout", "orphaned")


def metric(node, name):
    st, text = node.request("GET", "/metrics")
    m = re.search(rf"^{name} (\d+)$", text if isinstance(text, str) else "", re.M)
    return int(m.group(1)) if m else None


with c:
    # 1. Twelve one-second runs sent to node1 alone (one slot): the others claim most of them.
    ids = []
    for i in range(12):
        st, r = submit(a, f"import time\ntime.sleep(1)\nprint({i})")
        if st == 202:
            ids.append((r["execution_id"], f"{i}\n"))
    t.eq(len(ids), 12, "12 submissions to node1 acknowledged")
    t.ok(wait_until(lambda: all(final(e) for e, _ in ids), 60, 0.3), "all 12 finished",
         [record(e).get("status") for e, _ in ids])
    recs = [record(e) for e, _ in ids]
    t.ok(all(r.get("status") == "success" and r.get("stdout") == out for r, (_, out) in zip(recs, ids)),
         "each with its own output", [(r.get("status"), r.get("stdout")) for r in recs][:4])
    by_node = {n.name: sum(1 for r in recs if r.get("node") == n.name) for n in c.nodes}
    t.ok(by_node["node2"] >= 1 and by_node["node3"] >= 1 and sum(by_node.values()) == 12,
         f"node2 and node3 claimed runs node1 had no slot for (ran on: {by_node})", by_node)
    t.ok(all(r.get("attempt") == 1 for r in recs), "each ran once (attempt 1)", [r.get("attempt") for r in recs])
    units = [{record(e, n).get("unit") for n in c.nodes} for e, _ in ids]
    t.ok(all(len(u) == 1 and None not in u for u in units), "one unit each, seen alike from every node", units[:3])
    moved = sum(1 for r in recs if r.get("node") != "node1")
    t.eq(metric(a, "sandboxd_queue_claimed_by_other_nodes_total"), moved,
         "node1's sandboxd_queue_claimed_by_other_nodes_total counts them")
    t.eq((metric(b, "sandboxd_queue_claimed_from_other_nodes_total") or 0) +
         (metric(n3, "sandboxd_queue_claimed_from_other_nodes_total") or 0), moved,
         "node2's and node3's sandboxd_queue_claimed_from_other_nodes_total add up to them")

    # node1's slot taken for the rest of the test.
    st, r = submit(a, "import time\ntime.sleep(40)\nprint('long')")
    long_id = r.get("execution_id") if st == 202 else None
    t.ok(long_id and wait_until(lambda: record(long_id).get("status") == "running", 20, 0.2)
         and record(long_id).get("node") == "node1", "a long run holds node1's one slot", record(long_id))

    # 2. A caller waiting on node1 for a run another node claimed gets its result.
    t0 = time.monotonic()
    st, r = submit(a, "print('sync')", wait=True)
    took = time.monotonic() - t0
    t.ok(st == 200 and r.get("status") == "success" and r.get("stdout") == "sync\n" and r.get("node") in ("node2", "node3"),
         f"POST ?wait=true on node1, claimed and run by {r.get('node') if r else None}: the result comes back "
         f"through node1 ({took:.2f} s)", (st, r))

    # 3. A cancel through node1 of a run another node claimed reaches that node.
    st, r = submit(a, "import time\nprint('before', flush=True)\ntime.sleep(60)")
    eid = r.get("execution_id") if st == 202 else None
    t.ok(eid and wait_until(lambda: record(eid).get("status") == "running", 20, 0.2)
         and record(eid).get("node") in ("node2", "node3"), "a run sent to node1 runs on another node", record(eid))
    time.sleep(1)   # "running" is the unit's start: the interpreter's first line comes a little later
    st, r = a.request("POST", f"/v1/executions/{eid}/cancel", {})
    t.eq(st, 202, "node1 accepts the cancel (202)")
    t.ok(wait_until(lambda: record(eid).get("status") == "cancelled", 15, 0.2) and record(eid).get("stdout") == "before\n",
         "cancelled where it ran, with what it printed", record(eid))

    # 4. Fairness between owners: 16 runs of the administrator, then 2 of a second caller, all sent
    # to node1 (busy): node2 and node3 (4 slots) claim the second caller's two before most of the
    # administrator's, which already has runs going on.
    admin_ids = []
    for i in range(16):
        st, r = submit(a, "import time\ntime.sleep(1)")
        if st == 202:
            admin_ids.append(r["execution_id"])
    user_ids = []
    for i in range(2):
        st, r = submit(a, "import time\ntime.sleep(1)", user=True)
        if st == 202:
            user_ids.append(r["execution_id"])
    t.eq((len(admin_ids), len(user_ids)), (16, 2), "16 + 2 submissions acknowledged")
    t.ok(wait_until(lambda: all(final(e) for e in admin_ids) and all(final(e, True) for e in user_ids), 90, 0.3),
         "all 18 finished")
    admin_started = sorted(record(e).get("started_at") or "" for e in admin_ids)
    user_started = max(record(e, user=True).get("started_at") or "~" for e in user_ids)
    after = sum(1 for s in admin_started if s > user_started)
    t.ok(after >= 8, f"the second caller's 2 runs started before {after} of the administrator's 16 (fair: >= 8)",
         (user_started, admin_started))

    # 5. A session's runs run on the node of the session, even with node1 busy and others idle, and
    # those sent to another node are routed there.
    sess = []
    for i in range(3):
        code = "open('/workspace/mark', 'w').write('from the first run')" if i == 0 else f"print({i})"
        st, r = submit(a, code, session_id="s-queue")
        if st == 202:
            sess.append(r["execution_id"])
    t.eq(len(sess), 3, "3 runs of a session created on node1 acknowledged")
    st, r = submit(b, "print(open('/workspace/mark').read())", session_id="s-queue")
    t.ok(st == 202 and r.get("status") == "queued", "a run of node1's session sent to node2: 202, queued", (st, r))
    routed = r.get("execution_id") if st == 202 else None
    if routed:
        sess.append(routed)
    time.sleep(3)
    t.ok(all(record(e).get("status") == "queued" for e in sess),
         "while node1's slot is busy they wait for it (no other node claims a session's run)",
         [record(e).get("status") for e in sess])
    a.request("POST", f"/v1/executions/{long_id}/cancel", {})
    t.ok(wait_until(lambda: all(final(e) for e in sess), 60, 0.3) and
         all(record(e).get("node") == "node1" and record(e).get("status") == "success" for e in sess),
         "once it is free, they run on node1, the one sent to node2 too", [(record(e).get("node"), record(e).get("status")) for e in sess])
    t.eq(record(routed).get("stdout"), "from the first run\n", "the routed run saw the session's files")
    st, r = submit(n3, "print(open('/workspace/mark').read())", session_id="s-queue", wait=True)
    t.ok(st == 200 and r.get("node") == "node1" and r.get("stdout") == "from the first run\n",
         "POST ?wait=true to node3 of a run of node1's session: run on node1, its result through node3", (st, r))
    st, r = b.request("GET", "/v1/sessions/s-queue")
    msg = ((r or {}).get("error") or {}).get("message", "")
    t.ok(st == 404 and "node1" in msg, "GET of the session on node2: 404, naming node1 which holds it", (st, r))
    # The session API's other requests on node2 look for it the same way (one read of the store, the
    # request suspended meanwhile), but a file's upload, refused before its body, where nothing waits.
    st, r = b.request("GET", "/v1/sessions/s-queue/files")
    msg = ((r or {}).get("error") or {}).get("message", "")
    t.ok(st == 404 and "node1" in msg, "GET of its files on node2: 404, naming node1", (st, r))
    st, r = b.request("DELETE", "/v1/sessions/s-queue")
    msg = ((r or {}).get("error") or {}).get("message", "")
    t.ok(st == 404 and "node1" in msg, "DELETE of it on node2: 404, naming node1 (nothing deleted)", (st, r))
    st, r = b.request("PUT", "/v1/sessions/s-queue/files/x.txt", body="data")
    msg = ((r or {}).get("error") or {}).get("message", "")
    t.ok(st == 404 and "on this node" in msg, "a file's upload to node2: 404 before its body, not held here", (st, r))
    st, r = b.request("POST", "/mcp", body={"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
        "name": "list_files", "arguments": {"session_id": "s-queue"}}})
    res = (r or {}).get("result") or {}
    text = "".join(c.get("text", "") for c in res.get("content") or [])
    t.ok(st == 200 and res.get("isError") is True and "node1" in text,
         "MCP's list_files through node2: refused, naming node1", (st, r))
    st, r = a.request("GET", "/v1/sessions/s-queue/files/mark")
    t.ok(st == 200, "its file on node1 is still there", (st, r))
    st, r = a.request("GET", "/v1/sessions/s-queue")
    t.ok(st == 200 and r.get("executions") == 5, "GET of it on node1: its 5 runs", (st, r))
    st, r = submit(b, "print(1)", session_id="s-queue", limits={"disk_mb": 7})
    t.ok(st == 409 and "disk_mb" in json.dumps(r), "a routed run asking for another disk_mb: 409, as on node1", (st, r))

    # 6. A cancel of runs still waiting in the shared queue, unclaimed (a session's, behind its busy
    # first run): through node1, which holds them, it claims the run first (without waiting for the
    # store) and ends it cancelled, never started; through node2 it reaches node1, which does the same;
    # once final, another cancel is 409 on either node.
    st, r = submit(a, "import time\ntime.sleep(60)", session_id="s-cancel")
    hold = r.get("execution_id") if st == 202 else None
    t.ok(hold and wait_until(lambda: record(hold).get("status") == "running", 20, 0.2),
         "a long run of session s-cancel runs on node1", record(hold) if hold else (st, r))
    waiting = []
    for i in range(2):
        st, r = submit(a, f"print({i})", session_id="s-cancel")
        if st == 202:
            waiting.append(r["execution_id"])
    t.ok(len(waiting) == 2 and all(record(e).get("status") == "queued" for e in waiting),
         "two more runs of it wait, queued", [record(e).get("status") for e in waiting])
    q1, q2 = (waiting + [None, None])[:2]
    st, r = a.request("POST", f"/v1/executions/{q1}/cancel", {})
    t.ok(st == 202 and r.get("status") == "cancelled",
         "a cancel through node1 of its queued, unclaimed run: 202, cancelled at once", (st, r))
    rec = record(q1, a)
    t.ok(rec.get("status") == "cancelled" and rec.get("started_at") is None and rec.get("node") == "node1",
         "its record: cancelled on node1, never started", rec)
    st, r = b.request("POST", f"/v1/executions/{q2}/cancel", {})
    t.eq(st, 202, "a cancel through node2 of node1's queued run: 202")
    t.ok(wait_until(lambda: record(q2).get("status") == "cancelled", 15, 0.2) and record(q2).get("started_at") is None,
         "node1 carries it out: cancelled, never started", record(q2))
    t.eq([a.request("POST", f"/v1/executions/{q1}/cancel", {})[0], b.request("POST", f"/v1/executions/{q2}/cancel", {})[0]],
         [409, 409], "a second cancel of either, on either node: 409")
    st, r = a.request("POST", f"/v1/executions/{hold}/cancel", {})
    t.eq(st, 202, "the long run cancelled too")

t.done()

#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Three sandboxd nodes sharing one PostgreSQL (issue 22), each in its own harness (cluster.py):
every node lists the others in its registry; 90 submissions spread over the three nodes' listeners,
with the server restarted in the middle, all finish, each once (on whichever node claimed it), and every record reads the same
from every node; a cancel sent to a node that does not run the execution reaches the one that does."""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "integration"))
from cluster import Cluster  # noqa: E402
from lib import Tap, pg_server, wait_until  # noqa: E402

BUILD = os.environ.get("SANDBOXD_BUILD_DIR") or sys.argv[1]
t = Tap()

with Cluster(3, BUILD) as c:
    a, b, n3 = c.nodes
    names = sorted(n.name for n in c.nodes)

    def alive_names(node):
        st, h = node.request("GET", "/v1/health")
        return sorted(x["name"] for x in (h or {}).get("nodes", []) if x.get("alive")) if st == 200 else None

    for n in c.nodes:
        t.ok(wait_until(lambda: alive_names(n) == names, 10, 0.2),
             f"{n.name}: the registry lists the three nodes alive", alive_names(n))
        st, h = n.request("GET", "/v1/health")
        t.eq((h or {}).get("node", {}).get("name"), n.name, f"{n.name}: health names this node")

    # 90 submissions spread over the three nodes; PostgreSQL restarted (immediate: a crash to its
    # clients) after the 45th. A submission refused meanwhile (503 store_error: nothing was recorded,
    # nothing runs) is sent again, as a client would; every acknowledged one must finish, once.
    ids, refused, other = [], 0, []
    for i in range(90):
        if i == 45:
            t.eq(pg_server("restart"), 0, "PostgreSQL restarted in the middle of the load")
        node = c.nodes[i % 3]
        for attempt in range(100):
            st, r = node.request("POST", "/v1/executions", {"language": "python", "code": f"print({i} * 3)"})
            if st == 202:
                ids.append((r["execution_id"], f"{i * 3}\n", i % 3))
                break
            if st == 503 and (r or {}).get("error", {}).get("code") == "store_error":
                refused += 1
                time.sleep(0.1)
                continue
            other.append((i, node.name, st, r))
            break
    t.eq(len(ids), 90, f"90 submissions acknowledged over the three nodes ({refused} refused during the restart "
         "and sent again)", other[:3])

    def final_everywhere():
        for eid, out, _ in ids:
            for n in c.nodes:
                st, r = n.request("GET", f"/v1/executions/{eid}")
                if st != 200 or r.get("status") != "success" or r.get("stdout") != out:
                    return False
        return True

    t.ok(wait_until(final_everywhere, 180, 0.5), "every execution finished, and reads the same from every node",
         [(eid, n.name, n.request("GET", f"/v1/executions/{eid}")) for eid, _, _ in ids[:3] for n in c.nodes])
    # Each once: one unit name per execution, the same from every node; the list of each node holds all.
    units = {}
    for eid, _, _ in ids:
        seen = {n.request("GET", f"/v1/executions/{eid}")[1].get("unit") for n in c.nodes}
        units[eid] = seen
    t.ok(all(len(u) == 1 and None not in u for u in units.values()), "each execution has one unit, seen alike",
         {k: v for k, v in units.items() if len(v) != 1})
    recs = {eid: a.request("GET", f"/v1/executions/{eid}")[1] for eid, _, _ in ids}
    # The shared queue: a node with a free slot claims what another accepted and cannot start yet, so
    # a run may end on another node than the one it was sent to, once either way.
    moved = sum(1 for (eid, _, k), r in zip(ids, recs.values()) if r.get("node") != f"node{k + 1}")
    t.ok(all(r.get("attempt") == 1 and r.get("node") in names for r in recs.values()),
         f"each ran once (attempt 1), on a node of the cluster ({moved} of 90 claimed by another node than the "
         "one that accepted it)", [r.get("node") for r in list(recs.values())[:6]])
    for n in c.nodes:
        st, lst = n.request("GET", "/v1/executions?limit=200")
        got = {e["execution_id"] for e in (lst or {}).get("executions", [])}
        t.ok(st == 200 and {eid for eid, _, _ in ids} <= got, f"{n.name}: the list holds all 90", (st, len(got)))

    # ?wait=true through a node that does not run the execution: it waits for the record to be final.
    st, r = a.request("POST", "/v1/executions",
                      {"language": "python", "code": "import time\ntime.sleep(2)\nprint('waited')"})
    eid = r.get("execution_id") if st == 202 else None
    st, r = b.request("GET", f"/v1/executions/{eid}?wait=true", timeout=60)
    t.ok(st == 200 and r.get("status") == "success" and r.get("stdout") == "waited\n" and r.get("node") == "node1",
         "GET ?wait=true on node2 of a run on node1 answers once it is final", (st, r))

    # A cancel sent to a node that does not run the execution reaches the one that does.
    st, r = a.request("POST", "/v1/executions",
                      {"language": "python", "code": "import time\nprint('before', flush=True)\ntime.sleep(60)"})
    eid = r.get("execution_id") if st == 202 else None
    t.ok(eid and wait_until(lambda: a.request("GET", f"/v1/executions/{eid}")[1].get("status") == "running", 30, 0.2),
         "a long run on node1 runs", (st, r))
    time.sleep(0.5)
    st, r = n3.request("POST", f"/v1/executions/{eid}/cancel", {})
    t.ok(st == 202 and r.get("node") == "node1", "node3 accepts its cancel (202), the record naming node1", (st, r))

    def cancelled():
        st, r = b.request("GET", f"/v1/executions/{eid}")
        return st == 200 and r.get("status") == "cancelled" and r.get("stdout") == "before\n"

    t.ok(wait_until(cancelled, 15, 0.2), "node1 cancelled it: cancelled, with what it printed, seen from node2",
         b.request("GET", f"/v1/executions/{eid}"))
    st, r = n3.request("POST", f"/v1/executions/{eid}/cancel", {})
    t.eq(st, 409, "a second cancel through node3: already finished")

t.done()

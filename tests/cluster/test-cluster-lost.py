#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A node lost with executions running on it (issue 22): three nodes on one PostgreSQL; ten runs on
node2, five of them asking to "retry", each with a callback; node2 is killed (SIGKILL to its
harness: its private systemd and every unit die with it). Within its lease + 5 s the other nodes
answer for its executions: those without retry are "orphaned" ("node node2 lost", attempt 1, no
output), those with retry run again on a surviving node as attempt 2 and succeed; nothing runs twice
without its record saying so, and the shared outbox delivers each callback exactly once; a run of a
session node2 held, sent to another node, is refused with the reason."""

import http.server
import json
import os
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "integration"))
from cluster import Cluster  # noqa: E402
from lib import Tap, wait_until  # noqa: E402

BUILD = os.environ.get("SANDBOXD_BUILD_DIR") or sys.argv[1]
LEASE = 5
t = Tap()

# The callback receiver: every POST, by the execution it is about.
posts = {}
lock = threading.Lock()


class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        eid = self.headers.get("Sandboxd-Execution-Id")
        try:
            status = json.loads(body).get("status")
        except ValueError:
            status = None
        with lock:
            posts.setdefault(eid, []).append(status)
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


receiver = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
threading.Thread(target=receiver.serve_forever, daemon=True).start()
hook = f"http://127.0.0.1:{receiver.server_address[1]}/hook"

# Ten at once on one node: more slots than the harness's 8.
extra_conf = ("[Callbacks]\nCallbackAllowInternalAddresses=yes\nCallbackBackoffBaseMS=200\n"
              "CallbackBackoffMaxSec=1\n[Daemon]\nMaxConcurrent=12\n")

with Cluster(3, BUILD, heartbeat=1, lease=LEASE, extra_conf=extra_conf) as c:
    n1, n2, n3 = c.nodes
    runs = {}
    for i in range(10):
        retry = i % 2 == 0
        st, r = n2.request("POST", "/v1/executions",
                           {"language": "python", "code": f"import time\ntime.sleep(20)\nprint('done', {i})",
                            "retry": retry, "callback_url": hook, "execution_id": f"lost_{i}"})
        t.ok(st == 202, f"run {i} (retry={retry}) accepted on node2", (st, r))
        runs[f"lost_{i}"] = retry

    def status_on(node, eid):
        st, r = node.request("GET", f"/v1/executions/{eid}")
        return r if st == 200 else {}

    t.ok(wait_until(lambda: all(status_on(n2, e).get("status") == "running" for e in runs), 30, 0.2),
         "the ten run on node2", {e: status_on(n2, e).get("status") for e in runs})
    t.ok(all(status_on(n2, e).get("node") == "node2" for e in runs), "their records name node2")

    # A session on node2 (its workspace is node2's tmpfs).
    st, r = n2.request("POST", "/v1/executions?wait=true",
                       {"language": "python", "code": "print('in the session')", "session_id": "lost-sess"})
    t.ok(st == 200 and r.get("status") == "success", "a session made on node2", (st, r))

    killed = time.monotonic()
    n2.stop(signal.SIGKILL)

    def settled():
        for eid, retry in runs.items():
            r = status_on(n1, eid)
            if retry and not (r.get("attempt") == 2 and r.get("node") in ("node1", "node3")):
                return False
            if not retry and r.get("status") != "orphaned":
                return False
        return True

    t.ok(wait_until(settled, LEASE + 5 + 3, 0.2),
         "within the lease + 5 s the other nodes took node2's executions over",
         {e: (status_on(n1, e).get("status"), status_on(n1, e).get("attempt"), status_on(n1, e).get("node"))
          for e in runs})
    took = time.monotonic() - killed
    print(f"# taken over {took:.1f} s after the kill (lease {LEASE} s)", flush=True)

    # A run of node2's session sent to node1 once node2 is gone: refused, naming the node.
    st, r = n1.request("POST", "/v1/executions",
                       {"language": "python", "code": "print(1)", "session_id": "lost-sess"})
    msg = ((r or {}).get("error") or {}).get("message", "")
    t.ok(st == 409 and "node2" in msg and "gone" in msg,
         "a run of node2's session sent to node1 after node2 was lost: 409, naming node2", (st, r))

    for eid, retry in runs.items():
        if retry:
            continue
        for n in (n1, n3):
            r = status_on(n, eid)
            t.ok(r.get("status") == "orphaned" and r.get("reason") == "node node2 lost" and r.get("attempt") == 1
                 and not r.get("stdout"),
                 f"{eid} on {n.name}: orphaned, \"node node2 lost\", attempt 1, no output", r)

    t.ok(wait_until(lambda: all(status_on(n3, e).get("status") == "success" for e, rt in runs.items() if rt),
                    60, 0.5),
         "the five with retry ran again elsewhere and succeeded",
         {e: status_on(n3, e).get("status") for e, rt in runs.items() if rt})
    for eid, retry in runs.items():
        if not retry:
            continue
        r1, r3 = status_on(n1, eid), status_on(n3, eid)
        i = eid.split("_")[1]
        t.ok(r1 == r3 and r1.get("attempt") == 2 and r1.get("stdout") == f"done {i}\n"
             and r1.get("node") in ("node1", "node3"),
             f"{eid}: attempt 2 on {r1.get('node')}, its output, the same from node1 and node3", (r1, r3))

    # Each callback once: one POST per execution, with its final status.
    def delivered():
        with lock:
            return all(len(posts.get(e, [])) >= 1 for e in runs)

    t.ok(wait_until(delivered, 60, 0.2), "every execution's callback was delivered",
         {e: posts.get(e) for e in runs})
    time.sleep(3)   # a second delivery, if any, would come within the backoff
    with lock:
        got = {e: list(posts.get(e, [])) for e in runs}
    t.ok(all(len(v) == 1 for v in got.values()), "each exactly once across the nodes", got)
    t.ok(all(got[e] == (["success"] if rt else ["orphaned"]) for e, rt in runs.items()),
         "each with its final status", got)

    # node2 comes back under its name: a new epoch; what it ran is not its own any more.
    n2.start()
    st, h = n2.request("GET", "/v1/health")
    t.ok(st == 200 and h["node"]["name"] == "node2" and h["node"]["epoch"] >= 2,
         "node2 comes back with a new epoch", h.get("node") if isinstance(h, dict) else h)
    time.sleep(2)
    t.ok(all(status_on(n2, e).get("status") in ("orphaned", "success") for e in runs),
         "and its restart changes none of the records the others finished",
         {e: status_on(n2, e).get("status") for e in runs})

receiver.shutdown()
t.done()

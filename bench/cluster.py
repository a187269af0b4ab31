#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Issue 22's bench: sandboxd with its store in PostgreSQL vs SQLite, one node vs three, and the
queue the PostgreSQL nodes share.

Runs on the host under tests/pg/pg-scratch (SANDBOXD_TEST_PG), with tests/cluster/cluster.py's nodes
(each a daemon in its own tests/harness/sandbox-harness, the API on loopback TCP with a key).
With Store= PostgreSQL a submission (not a session's run) is stored unclaimed; the node that
accepted it claims it before starting it (one UPDATE), and a node with free slots and nothing of
its own claims other nodes' queued work (store_claim_next(), FOR UPDATE SKIP LOCKED), woken by
NOTIFY sandboxd_queue (from a node with work it has no slot for) and a 1 s timer. The PostgreSQL
nodes also keep the registry's heartbeat (a write every NodeHeartbeatSec=, 1 s here).

1. Submit -> started latency, one node with Store= SQLite and one with Store= PostgreSQL, both up at
   once, requests alternated between them (one at a time): python print(1) with "start": "cold",
   and the default request (warm when the pool has a ready unit: the record's "start" says which;
   the table is split by it). Three figures: the record's started_at - created_at (the daemon's),
   the client's "c2s": before the POST -> the record's started_at (one host, one clock), and the
   client's "SSE": before the POST -> the SSE "running" event of a stream opened after the 202.
   The PostgreSQL node's figure includes its claim of its own submission (the UPDATE).
2. Throughput at client concurrency C (default 8, POST ?wait=true of the default print(1)):
   SQLite 1 node, PostgreSQL 1 node, PostgreSQL 3 nodes (round robin), REPS blocks each,
   alternated; per execution: the daemons' CPU (sandboxd processes below the harnesses, /proc),
   the nodes' private systemd (PID 1 of each harness), the PostgreSQL server's CPU (postmaster and
   its children) and its transactions (pg_stat_database.xact_commit).
3. Idle: the same per second and per node with no executions (the registry's heartbeat, the shared
   queue's 1 s claim timer, and the rest of the daemons' background work).
4. The shared queue, "claimed by another node": the three PostgreSQL nodes again, node1 restarted
   with MaxConcurrent=1 and its one slot held by a long run; one request at a time, alternated:
   sent to node1 (claimed and started by node2 or node3; at least --claim-spacing after the
   previous POST to node1, untimed, as node1 sends its NOTIFY at most every 50 ms), sent to
   node2/node3 (started by the node that accepted it), or a burst of two POSTs to node1 back to
   back. The same kinds and figures as 1 (no SSE figure: node1's event stream of a run another
   node claimed has no "running" event); a run counts as "claimed" when its record's "node" is
   not the node it was sent to. Then REPS throughput blocks at concurrency C, all sent to
   node1 (the others claim nearly all): the coordination cost per execution of the claim path.
"""

import argparse
import datetime
import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(TOP, "tests", "cluster"))
from cluster import Cluster  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def log(*a):
    print("#", *a, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- /proc accounting

def proc_table():
    """pid -> (ppid, comm, cpu seconds (own), cpu seconds of reaped children)."""
    t = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                s = f.read()
        except OSError:
            continue
        comm = s[s.index("(") + 1:s.rindex(")")]
        rest = s[s.rindex(")") + 2:].split()
        # rest[0] is field 3 (state): utime is field 14 -> rest[11]
        t[int(d)] = (int(rest[1]), comm, (int(rest[11]) + int(rest[12])) / TICK,
                     (int(rest[13]) + int(rest[14])) / TICK)
    return t


def descendants(t, root):
    kids = {}
    for pid, (ppid, *_rest) in t.items():
        kids.setdefault(ppid, []).append(pid)
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        for k in kids.get(p, []):
            out.append(k)
            todo.append(k)
    return out


def node_cpu(t, node):
    """(sandboxd CPU incl. its reaped children, the harness's systemd PID 1 own CPU) of one node."""
    d = s = 0.0
    for pid in descendants(t, node.proc.pid):
        ppid, comm, own, kids = t[pid]
        if comm == "sandboxd":
            d += own + kids
        elif comm == "systemd" and t.get(ppid, (0, ""))[1] != "systemd":
            # the namespace's PID 1 (its parent is the harness's unshare, not a systemd); its own
            # CPU only: its reaped children are the units' processes
            s += own
    return d, s


def pg_cpu(t, postmaster):
    if postmaster not in t:
        return 0.0
    c = t[postmaster][2] + t[postmaster][3]
    for pid in descendants(t, postmaster):
        c += t[pid][2]
    return c


def postmaster_pid(conninfo):
    host = dict(kv.split("=", 1) for kv in conninfo.split() if "=" in kv).get("host")
    with open(os.path.join(host, "data", "postmaster.pid")) as f:  # tests/pg/pg-scratch: DIR/data
        return int(f.readline())


def pg_xacts(conninfo):
    out = subprocess.run(["psql", conninfo, "-Atc",
                          "select pg_stat_force_next_flush(); "
                          "select sum(xact_commit + xact_rollback), sum(tup_inserted + tup_updated + tup_deleted) "
                          "from pg_stat_database"],
                         capture_output=True, text=True, timeout=30)
    if out.returncode != 0:
        # pg_stat_force_next_flush() is PostgreSQL 15+
        out = subprocess.run(["psql", conninfo, "-Atc",
                              "select sum(xact_commit + xact_rollback), sum(tup_inserted + tup_updated + tup_deleted) "
                              "from pg_stat_database"], capture_output=True, text=True, timeout=30)
    line = [ln for ln in out.stdout.splitlines() if "|" in ln][-1]
    a, b = line.split("|")
    return int(a), int(b)


def pg_table_writes(conninfo):
    """{table: rows inserted + updated + deleted} of the store's database (dbname of conninfo)."""
    out = subprocess.run(["psql", conninfo, "-Atc",
                          "select relname, n_tup_ins + n_tup_upd + n_tup_del from pg_stat_user_tables"],
                         capture_output=True, text=True, timeout=30)
    return {a: int(b) for a, b in (ln.split("|") for ln in out.stdout.splitlines() if "|" in ln)}


def table_rates(a, b, secs, per=1):
    return {k: (b.get(k, 0) - a.get(k, 0)) / secs / per for k in sorted(b) if b.get(k, 0) != a.get(k, 0)}


class Meter:
    """CPU and PostgreSQL counters around a block, for the given nodes (and the server)."""

    def __init__(self, nodes, conninfo, postmaster):
        self.nodes, self.conninfo, self.postmaster = nodes, conninfo, postmaster

    def snap(self):
        if self.conninfo:
            time.sleep(1.1)  # let the backends report their statistics (pgstat flushes each second)
            x = pg_xacts(self.conninfo)
        else:
            x = (0, 0)
        t = proc_table()
        d = s = 0.0
        for n in self.nodes:
            a, b = node_cpu(t, n)
            d, s = d + a, s + b
        return {"daemon": d, "pid1": s, "pg": pg_cpu(t, self.postmaster) if self.postmaster else 0.0,
                "xact": x[0], "tup": x[1], "t": time.monotonic()}

    @staticmethod
    def delta(a, b):
        return {k: b[k] - a[k] for k in a}


# ---------------------------------------------------------------- requests

def ts(s):
    return datetime.datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()


def submit_and_watch(node, body):
    """POST, then the SSE stream: client latency to "running", the record's figures."""
    t0 = time.time()
    st, r = node.request("POST", "/v1/executions", body)
    t_post = time.time()
    if st != 202:
        return {"error": f"POST {st} {r}"}
    eid = r["execution_id"]
    c = http.client.HTTPConnection("127.0.0.1", node.port, timeout=60)
    t_open = time.time()
    t_run = None
    final = None
    try:
        c.request("GET", f"/v1/executions/{eid}/events", headers={"Authorization": f"Bearer {node.cluster.key}"})
        resp = c.getresponse()
        if resp.status != 200:
            return {"error": f"events {resp.status}"}
        ev = None
        while True:
            line = resp.readline()
            if not line:
                break
            line = line.decode().rstrip("\r\n")
            if line.startswith("event:"):
                ev = line[6:].strip()
            elif line.startswith("data:"):
                data = json.loads(line[5:])
                if ev == "status" and data.get("status") == "running" and t_run is None:
                    t_run = time.time()
                elif ev == "result":
                    final = data
                    break
    finally:
        c.close()
    if final is None:
        st, final = node.request("GET", f"/v1/executions/{eid}?wait=true")
    if not final or final.get("status") != "success" or final.get("stdout") != "1\n":
        return {"error": f"record {final and final.get('status')} {final and final.get('error_type')}"}
    if not final.get("started_at") or t_run is None:
        return {"error": "no started_at / running event"}
    started = ts(final["started_at"])
    return {"server": started - ts(final["created_at"]), "client": t_run - t0, "post": t_post - t0,
            "c2s": started - t0, "replayed": started < t_open, "start": final.get("start") or "?",
            "node": final.get("node")}


def submit_only(node, body):
    """POST: the pending run (t0, t_post, id) or an error."""
    t0 = time.time()
    st, r = node.request("POST", "/v1/executions", body)
    t_post = time.time()
    if st != 202:
        return {"error": f"POST {st} {r}"}
    return {"t0": t0, "post": t_post - t0, "id": r["execution_id"], "sent_to": node}


def wait_result(p):
    """GET ?wait=true on the node it was sent to (which may not be the node that runs it): the
    record's figures, and before the POST -> the record's started_at (the same host clock)."""
    if "error" in p:
        return p
    st, final = p["sent_to"].request("GET", f"/v1/executions/{p['id']}?wait=true")
    if st != 200 or not final or final.get("status") != "success" or final.get("stdout") != "1\n":
        return {"error": f"record {st} {final and final.get('status')} {final and final.get('error_type')}"}
    if not final.get("started_at"):
        return {"error": "no started_at"}
    started = ts(final["started_at"])
    return {"server": started - ts(final["created_at"]), "c2s": started - p["t0"], "post": p["post"],
            "start": final.get("start") or "?", "node": final.get("node"), "t0": p["t0"]}


def submit_and_wait(node, body):
    return wait_result(submit_only(node, body))


def summarize(rs):
    """{n, server/c2s[/client] p50 p90 p99, post_p50[, replayed]} of a list of results."""
    v = {"n": len(rs), "post_p50": pct([r["post"] for r in rs], 50)}
    for f in ("server", "c2s", "client"):
        if all(f in r for r in rs):
            v[f] = [pct([r[f] for r in rs], p) for p in (50, 90, 99)]
    if all("replayed" in r for r in rs):
        v["replayed"] = sum(r["replayed"] for r in rs)
    return v


def metric(node, name):
    st, text = node.request("GET", "/metrics")
    if st != 200 or not isinstance(text, str):
        return None
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[-1])
    return None


def pct(xs, p):
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = (len(xs) - 1) * p / 100
    f = int(k)
    return xs[f] + (xs[min(f + 1, len(xs) - 1)] - xs[f]) * (k - f)


def throughput_block(nodes, count, conc):
    lock = threading.Lock()
    state = {"next": 0, "fail": 0, "starts": {}, "errors": []}

    def worker():
        while True:
            with lock:
                i = state["next"]
                if i >= count:
                    return
                state["next"] += 1
            node = nodes[i % len(nodes)]
            t0 = time.monotonic()
            try:
                st, r = node.request("POST", "/v1/executions?wait=true", {"language": "python", "code": "print(1)"})
                ok = st in (200, 201) and r.get("status") == "success" and r.get("stdout") == "1\n"
                why = None if ok else (st, r if not isinstance(r, dict) else
                                       {k: r.get(k) for k in ("execution_id", "status", "error_type", "error", "node")})
            except OSError as e:
                ok, r, why = False, None, repr(e)
            with lock:
                if not ok:
                    state["fail"] += 1
                    state["errors"].append({"node": node.name, "after_s": round(time.monotonic() - t0, 2), "why": why})
                    log(f"  failed: {state['errors'][-1]}")
                else:
                    s = r.get("start") or "?"
                    state["starts"][s] = state["starts"].get(s, 0) + 1

    th = [threading.Thread(target=worker) for _ in range(conc)]
    t0 = time.monotonic()
    for x in th:
        x.start()
    for x in th:
        x.join()
    return time.monotonic() - t0, state["fail"], state["starts"], state["errors"]


def wait_pool(nodes, timeout=15):
    """Until every node's python pool is full again (sandboxd_pool_ready_units >= target), bounded."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        full = True
        for n in nodes:
            st, m = n.request("GET", "/metrics")
            if st != 200 or not isinstance(m, str):
                return
            ready = target = None
            for line in m.splitlines():
                if line.startswith("sandboxd_pool_ready_units") and 'python' in line:
                    ready = float(line.split()[-1])
                elif line.startswith("sandboxd_pool_target_units"):
                    target = float(line.split()[-1])
            if ready is None or target is None:
                return
            full = full and ready >= target
        if full:
            return
        time.sleep(0.1)


# ---------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(TOP, "build"))
    ap.add_argument("--n", type=int, default=100, help="latency: runs per store and kind (cold, default)")
    ap.add_argument("--count", type=int, default=80, help="throughput: executions per block")
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--reps", type=int, default=3, help="throughput blocks per setup")
    ap.add_argument("--pool", type=int, default=2, help="[Pool] Size= of every node (0: off)")
    ap.add_argument("--idle", type=float, default=20, help="seconds of the idle measurement")
    ap.add_argument("--claim-n", type=int, default=None,
                    help="claim leg: runs per path (sent to busy node1, sent to a free node) and kind "
                         "(default: --n; 0: no claim leg)")
    ap.add_argument("--results-file")
    ap.add_argument("--claim-spacing", type=float, default=0.1,
                    help="claim leg: seconds at least between two POSTs to node1, untimed (a burst's two excepted)")
    ap.add_argument("--keep-logs", action="store_true", help="keep the nodes' logs (kept anyway when runs failed)")
    ap.add_argument("--report", metavar="JSON", help="print the tables of an earlier run's results file, and exit")
    a = ap.parse_args()
    if a.claim_n is None:
        a.claim_n = a.n
    if a.report:
        with open(a.report) as f:
            res = json.load(f)
        report(res, argparse.Namespace(**{**vars(a), **res["args"]}))
        return 0
    # bench/run's timeout (or ^C's TERM): unwind, so that every node's harness is stopped
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    pgc = os.environ.get("SANDBOXD_TEST_PG")
    if not pgc:
        print("bench/cluster.py: no SANDBOXD_TEST_PG: run under tests/pg/pg-scratch (bench/run --cluster)",
              file=sys.stderr)
        return 2
    build = os.path.abspath(a.build)
    pm = postmaster_pid(pgc)
    res = {"args": vars(a), "latency": {}, "throughput": {}, "idle": {}, "stamp": time.strftime('%Y%m%d-%H%M%S')}
    kinds = [("cold", {"language": "python", "code": "print(1)", "start": "cold"}),
             ("default", {"language": "python", "code": "print(1)"})]

    # -- phase 1 and the 1-node throughput: one SQLite node and one PostgreSQL node, both up
    sq = Cluster(1, build, pool_size=a.pool, conninfo="", prefix="sqlite")
    pg1 = Cluster(1, build, pool_size=a.pool, prefix="pg")
    try:
        log("starting the SQLite node and the PostgreSQL node")
        sq.start()
        pg1.start()
        setups = {"sqlite": sq.nodes[0], "pg": pg1.nodes[0]}
        wait_pool(setups.values(), 30)
        # warm-up, untimed
        for n in setups.values():
            for k, body in kinds:
                submit_and_watch(n, body)
        lat = {(s, k): [] for s in setups for k, _ in kinds}
        errors = []
        log(f"latency: {a.n} runs per store and kind, alternated")
        for i in range(a.n):
            order = [(s, k, b) for s in setups for k, b in kinds]
            if i % 2:
                order.reverse()
            for s, k, b in order:
                wait_pool([setups[s]], 3)  # untimed: a default request then finds a ready unit
                r = submit_and_watch(setups[s], b)
                if "error" in r:
                    errors.append((s, k, r["error"]))
                else:
                    lat[(s, k)].append(r)
        res["latency_errors"] = errors
        for (s, k), rs in lat.items():
            by = {}
            for r in rs:
                by.setdefault(r["start"], []).append(r)
            for st, rr in by.items():
                res["latency"][f"{s}-1/{k}/{st}"] = summarize(rr)

        # idle, both up
        log(f"idle: {a.idle} s")
        ms = {s: Meter([n], pgc if s == "pg" else "", pm if s == "pg" else None) for s, n in setups.items()}
        b0 = {s: m.snap() for s, m in ms.items()}
        w0 = pg_table_writes(pgc)
        time.sleep(a.idle)
        w1 = pg_table_writes(pgc)
        b1 = {s: m.snap() for s, m in ms.items()}
        for s in setups:
            d = Meter.delta(b0[s], b1[s])
            res["idle"][f"{s}-1"] = {k: v / d["t"] for k, v in d.items() if k != "t"}
        res["idle"]["pg-1"]["tables"] = table_rates(w0, w1, a.idle)

        log(f"throughput: {a.reps} blocks of {a.count} at c={a.concurrency}, SQLite and PostgreSQL alternated")
        for rep in range(a.reps):
            for s in (("sqlite", "pg") if rep % 2 == 0 else ("pg", "sqlite")):
                n = setups[s]
                wait_pool([n], 15)
                m = Meter([n], pgc if s == "pg" else "", pm if s == "pg" else None)
                x0 = m.snap()
                w0 = pg_table_writes(pgc) if s == "pg" else {}
                wall, fail, starts, errs = throughput_block([n], a.count, a.concurrency)
                wait_pool([n], 5)  # the pool's refill is charged to the block
                x1 = m.snap()
                w1 = pg_table_writes(pgc) if s == "pg" else {}
                res["throughput"].setdefault(f"{s}-1", []).append(
                    {"wall": wall, "fail": fail, "errors": errs, "starts": starts, "count": a.count, **Meter.delta(x0, x1),
                     "tables": table_rates(w0, w1, a.count)})
                log(f"  {s}-1 rep {rep}: {a.count / wall:.1f}/s, fail {fail}, {starts}")
    finally:
        stop_keep_logs(sq, res, a)
        stop_keep_logs(pg1, res, a)

    # -- three PostgreSQL nodes
    pg3 = Cluster(3, build, pool_size=a.pool, prefix="pg3-")
    try:
        log("starting three PostgreSQL nodes")
        pg3.start()
        nodes = pg3.nodes
        wait_pool(nodes, 30)
        for n in nodes:
            submit_and_watch(n, kinds[1][1])
        m = Meter(nodes, pgc, pm)
        time.sleep(3)  # the registry settles (every node sees the others)
        x0 = m.snap()
        w0 = pg_table_writes(pgc)
        time.sleep(a.idle)
        w1 = pg_table_writes(pgc)
        x1 = m.snap()
        d = Meter.delta(x0, x1)
        res["idle"]["pg-3"] = {k: v / d["t"] / 3 for k, v in d.items() if k != "t"}
        res["idle"]["pg-3"]["tables"] = table_rates(w0, w1, a.idle, 3)
        res["idle"]["pg-3"]["pg_total"] = d["pg"] / d["t"]
        log(f"throughput: {a.reps} blocks of {a.count} at c={a.concurrency} over three nodes")
        for rep in range(a.reps):
            wait_pool(nodes, 15)
            x0 = m.snap()
            w0 = pg_table_writes(pgc)
            c0 = sum(metric(n, "sandboxd_queue_claimed_by_other_nodes_total") or 0 for n in nodes)
            wall, fail, starts, errs = throughput_block(nodes, a.count, a.concurrency)
            wait_pool(nodes, 5)
            c1 = sum(metric(n, "sandboxd_queue_claimed_by_other_nodes_total") or 0 for n in nodes)
            x1 = m.snap()
            w1 = pg_table_writes(pgc)
            # claimed: runs another node claimed (by its 1 s timer: no node is short of slots here)
            res["throughput"].setdefault("pg-3", []).append(
                {"wall": wall, "fail": fail, "errors": errs, "starts": starts, "count": a.count, "claimed": c1 - c0,
                 **Meter.delta(x0, x1), "tables": table_rates(w0, w1, a.count)})
            log(f"  pg-3 rep {rep}: {a.count / wall:.1f}/s, fail {fail}, claimed by another node {c1 - c0:.0f}, {starts}")

        if a.claim_n > 0:
            claim_leg(res, a, pg3, pgc, pm, kinds)
    finally:
        stop_keep_logs(pg3, res, a)

    report(res, a)
    path = a.results_file or os.path.join(HERE, "results", f"cluster-{res['stamp']}.json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(res, f, indent=1)
    print(f"\nresults: {path}")
    nfail = len(res["latency_errors"]) + len(res.get("claim_errors", [])) + sum(b["fail"] for v in res["throughput"].values() for b in v)
    return 3 if nfail else 0


def stop_keep_logs(cl, res, a):
    """Stop the cluster; its nodes' logs are kept in bench/results/ when some run failed (or --keep-logs)."""
    for n in cl.nodes:
        try:
            n.stop()
        except Exception as e:  # noqa: BLE001 - Cluster.stop() tries again
            log(f"{n.name}: stop failed: {e}")
    nfail = len(res.get("latency_errors", [])) + len(res.get("claim_errors", [])) + \
        sum(b["fail"] for v in res["throughput"].values() for b in v)
    if a.keep_logs or nfail:
        import glob
        import shutil
        dst = os.path.join(HERE, "results", f"cluster-logs-{res['stamp']}")
        os.makedirs(dst, exist_ok=True)
        for f in glob.glob(os.path.join(cl.dir, "*.log")):
            shutil.copy(f, dst)
        res.setdefault("logs", dst)
    cl.stop()


HOLD_CODE = "import time\ntime.sleep(595)\nprint(1)"


def hold_slot(node, tries=5):
    """A long run started on node (its one slot held); its id, or None."""
    for _ in range(tries):
        st, r = node.request("POST", "/v1/executions",
                             {"language": "python", "code": HOLD_CODE, "limits": {"timeout_ms": 600000}})
        if st != 202:
            log(f"holder: POST {st} {r}")
            continue
        eid = r["execution_id"]
        end = time.monotonic() + 30
        rec = {}
        while time.monotonic() < end:
            rec = node.request("GET", f"/v1/executions/{eid}")[1] or {}
            if rec.get("status") == "running":
                break
            time.sleep(0.1)
        if rec.get("status") == "running" and rec.get("node") == node.name:
            return eid
        log(f"holder {eid}: {rec.get('status')} on {rec.get('node')}, not {node.name}: again")
        node.request("POST", f"/v1/executions/{eid}/cancel", {})
    return None


def claim_leg(res, a, cl, pgc, pm, kinds):
    """4. node1 (MaxConcurrent=1, its slot held) gets work the other two claim."""
    n1, n2, n3 = cl.nodes
    log(f"claim leg: restarting {n1.name} with MaxConcurrent=1")
    n1.stop()
    n1.add_conf("60-slots.conf", "[Daemon]\nMaxConcurrent=1\n")
    n1.start()
    time.sleep(3)  # the registry settles (every node sees node1's new epoch)
    holder = hold_slot(n1)
    if not holder:
        res["claim_errors"] = ["no holder run on node1"]
        log("claim leg: cannot hold node1's slot; skipped")
        return
    others = [n2, n3]
    wait_pool(others, 30)
    for k, body in kinds:  # warm-up, untimed: each path once
        submit_and_wait(n1, body)
        submit_and_wait(n2, body)
    m0 = {n.name: (metric(n, "sandboxd_queue_claimed_by_other_nodes_total"),
                   metric(n, "sandboxd_queue_claimed_from_other_nodes_total")) for n in cl.nodes}
    rs = {}
    errors = []
    last_to_n1 = time.time()  # the warm-up's

    def add(path, k, target, r, t_prev):
        if "error" in r:
            errors.append((path, k, r["error"]))
            return
        where = "claimed" if r["node"] != target.name else "local"
        r["sent"] = target.name
        r["gap"] = r["t0"] - t_prev  # since the previous POST to node1 (whose NOTIFY is rate-limited)
        rs.setdefault(f"pg-3 {where}{path}/{k}/{r['start']}", []).append(r)

    log(f"claim leg latency: {a.claim_n} runs per path and kind, alternated (sent to node1: claimed, at least "
        f"{a.claim_spacing * 1e3:.0f} ms after the previous POST to node1, and bursts of two; sent to node2/node3: "
        "started there)")
    for i in range(a.claim_n):
        order = [(path, k, b) for path in ("to-busy", "to-free", "burst") for k, b in kinds]
        if i % 2:
            order.reverse()
        for path, k, b in order:
            wait_pool(others, 3)  # untimed: a default request then finds a ready unit where it runs
            if path == "to-free":
                target = others[i % 2]
                add("", k, target, submit_and_wait(target, b), last_to_n1)
                continue
            # untimed: node1 tells the others of queued work at most every 50 ms (QUEUE_NOTIFY_USEC)
            time.sleep(max(0.0, last_to_n1 + a.claim_spacing - time.time()))
            t_prev = last_to_n1
            if path == "to-busy":
                r = submit_and_wait(n1, b)
                last_to_n1 = r.get("t0", time.time())
                add("", k, n1, r, t_prev)
                continue
            # a burst: two POSTs to node1 back to back (the second while the first may wait still)
            p1 = submit_only(n1, b)
            p2 = submit_only(n1, b)
            last_to_n1 = p2.get("t0", time.time())
            r1, r2 = wait_result(p1), wait_result(p2)
            add(" burst 1st", k, n1, r1, t_prev)
            add(" burst 2nd", k, n1, r2, r1.get("t0", t_prev))
    st = n1.request("GET", f"/v1/executions/{holder}")[1] or {}
    if st.get("status") != "running":
        errors.append(("holder", "-", f"node1's holder is {st.get('status')}: node1 had a free slot"))
    m1 = {n.name: (metric(n, "sandboxd_queue_claimed_by_other_nodes_total"),
                   metric(n, "sandboxd_queue_claimed_from_other_nodes_total")) for n in cl.nodes}
    res["claim_errors"] = errors
    res["claim_counters"] = {n: [(b[0] or 0) - (a_[0] or 0), (b[1] or 0) - (a_[1] or 0)]
                             for (n, a_), b in zip(m0.items(), m1.values())}
    for key, rr in rs.items():
        res["latency"][key] = summarize(rr)
        res["latency"][key]["ran_on"] = {x: sum(1 for r in rr if r["node"] == x) for x in sorted({r["node"] for r in rr})}
    res["claim_raw"] = {key: [[r["server"], r["c2s"], r["post"], r["sent"], r["node"], r["gap"], r["t0"]] for r in rr] for key, rr in rs.items()}

    # the claim path's cost per execution: everything sent to node1, the others claim
    m = Meter(cl.nodes, pgc, pm)
    log(f"claim leg throughput: {a.reps} blocks of {a.count} at c={a.concurrency}, all sent to node1 (one slot, held)")
    for rep in range(a.reps):
        wait_pool(others, 15)
        x0 = m.snap()
        w0 = pg_table_writes(pgc)
        c0 = metric(n1, "sandboxd_queue_claimed_by_other_nodes_total") or 0
        wall, fail, starts, errs = throughput_block([n1], a.count, a.concurrency)
        wait_pool(others, 5)
        c1 = metric(n1, "sandboxd_queue_claimed_by_other_nodes_total") or 0
        x1 = m.snap()
        w1 = pg_table_writes(pgc)
        res["throughput"].setdefault("pg-3q", []).append(
            {"wall": wall, "fail": fail, "errors": errs, "starts": starts, "count": a.count, "claimed": c1 - c0,
             **Meter.delta(x0, x1), "tables": table_rates(w0, w1, a.count)})
        log(f"  pg-3q rep {rep}: {a.count / wall:.1f}/s, fail {fail}, claimed {c1 - c0:.0f}, {starts}")
    n1.request("POST", f"/v1/executions/{holder}/cancel", {})


def rng(xs, fmt="{:.1f}"):
    """median [min-max] of a list"""
    xs = sorted(xs)
    med = xs[len(xs) // 2] if len(xs) % 2 else (xs[len(xs) // 2 - 1] + xs[len(xs) // 2]) / 2
    return f"{fmt.format(med)} [{fmt.format(xs[0])}-{fmt.format(xs[-1])}]"


def report(res, a):
    print(f"\n## Submit -> started latency, python print(1), one request at a time ({a.n} per store and kind on one "
          f"node, {a.claim_n} per path and kind on three; rows split by the record's start)")
    print("rec: the record's started_at - created_at (the daemon's clock, ms resolution); c2s: before the POST -> the "
          "record's started_at (one host clock); SSE: before the POST -> the SSE 'running' event; ms")
    print("sqlite-1/pg-1: one node each, alternated; pg-3 claimed: sent to node1 (MaxConcurrent=1, held), started by "
          "node2/node3 (the claim); pg-3 local: sent to node2/node3, started by it")
    print("pg-3 claimed burst 1st/2nd: two POSTs to node1 back to back (node1 tells the others of queued work at most "
          "every 50 ms: the 2nd may wait for their 1 s claim timer)")
    print(f"{'leg/request/start':30} {'n':>4} {'rec p50':>8} {'p90':>6} {'p99':>6} {'c2s p50':>8} {'p90':>6} {'p99':>6} "
          f"{'SSE p50':>8} {'p90':>6} {'p99':>6} {'POST p50':>8} {'replay':>6}")
    order = ("sqlite-1", "pg-1", "pg-3 local", "pg-3 claimed", "pg-3 claimed burst 1st", "pg-3 claimed burst 2nd",
             "pg-3 local burst 1st", "pg-3 local burst 2nd")
    for k in sorted(res["latency"], key=lambda k: (k.split("/")[1], order.index(k.split("/")[0]) if k.split("/")[0] in order else 9, k)):
        v = res["latency"][k]

        def tri(f):
            x = v.get(f)
            return f"{x[0]*1e3:8.1f} {x[1]*1e3:6.1f} {x[2]*1e3:6.1f}" if x else f"{'-':>8} {'-':>6} {'-':>6}"
        rep = f"{v['replayed']:6d}" if "replayed" in v else f"{'-':>6}"
        print(f"{k:30} {v['n']:4d} {tri('server')} {tri('c2s')} {tri('client')} {v['post_p50']*1e3:8.1f} {rep}")
    for k, v in res["latency"].items():
        if "ran_on" in v:
            print(f"  {k}: ran on {v['ran_on']}")
    if res.get("claim_counters"):
        print("claim leg counters (by_other_nodes, from_other_nodes): " +
              ", ".join(f"{n} {c[0]:.0f}/{c[1]:.0f}" for n, c in res["claim_counters"].items()))
    if res.get("claim_errors"):
        print(f"claim leg errors: {len(res['claim_errors'])}: {res['claim_errors'][:5]}")
    if res["latency_errors"]:
        print(f"errors: {len(res['latency_errors'])}: {res['latency_errors'][:5]}")
    print(f"\n## Throughput, python print(1) default request, c={a.concurrency}, {a.count} per block, "
          f"median [min-max] of {a.reps} blocks; CPU per execution in ms")
    print(f"{'setup':9} {'runs/s':>18} {'sandboxd ms/exec':>22} {'node PID1 ms/exec':>22} {'postgres ms/exec':>22} {'PG xacts/exec':>20} {'fail':>5}")
    print("(blocks with a failed request are left out of the medians when another block has none: a request "
          "that hangs holds its block for the client's 60 s timeout; n = blocks counted)")
    for s in ("sqlite-1", "pg-1", "pg-3", "pg-3q"):
        bl = res["throughput"].get(s, [])
        if not bl:
            continue
        nfail = sum(b["fail"] for b in bl)
        bl = [b for b in bl if not b["fail"]] or bl
        pgcol = rng([b["pg"] / b["count"] * 1e3 for b in bl]) if s != "sqlite-1" else "-"
        xcol = rng([b["xact"] / b["count"] for b in bl]) if s != "sqlite-1" else "-"
        print(f"{s:9} {rng([b['count'] / b['wall'] for b in bl]):>18} "
              f"{rng([b['daemon'] / b['count'] * 1e3 for b in bl]):>22} "
              f"{rng([b['pid1'] / b['count'] * 1e3 for b in bl]):>22} {pgcol:>22} {xcol:>20} "
              f"{nfail:5d} n={len(bl)}")
    for s, bl in res["throughput"].items():
        for i, b in enumerate(bl):
            for e in b.get("errors", []):
                print(f"failed: {s} block {i}: {e}")
    if res.get("logs"):
        print(f"the nodes' logs: {res['logs']}")
    starts = {s: {} for s in res["throughput"]}
    for s, bl in res["throughput"].items():
        for b in bl:
            for k, v in b["starts"].items():
                starts[s][k] = starts[s].get(k, 0) + v
    print("starts: " + "; ".join(f"{s}: {v}" for s, v in starts.items()))
    if res["throughput"].get("pg-3"):
        print("pg-3: claimed by a node other than the one sent to (every node had free slots): "
              f"{sum(b.get('claimed', 0) for b in res['throughput']['pg-3']):.0f} of "
              f"{sum(b['count'] for b in res['throughput']['pg-3'])}")
    if res["throughput"].get("pg-3q"):
        print("pg-3q: three nodes, everything sent to node1 (MaxConcurrent=1, held): claimed by node2/node3 "
              f"{sum(b['claimed'] for b in res['throughput']['pg-3q']):.0f} of "
              f"{sum(b['count'] for b in res['throughput']['pg-3q'])}")
    for s in ("pg-1", "pg-3", "pg-3q"):
        bl = [b for b in res["throughput"].get(s, []) if b.get("tables")]
        if bl:
            keys = sorted({k for b in bl for k in b["tables"]})
            print(f"{s} rows written per execution, by table (median of blocks; the heartbeat included): " +
                  ", ".join(f"{k} {sorted(b['tables'].get(k, 0) for b in bl)[len(bl) // 2]:.2f}" for k in keys))
    print(f"\n## Idle (no executions, {a.idle:.0f} s), per node and per second")
    print(f"{'setup':9} {'sandboxd ms/s':>14} {'node PID1 ms/s':>15} {'postgres ms/s':>14} {'PG xacts/s':>11} {'PG rows/s':>10}")
    for s in ("sqlite-1", "pg-1", "pg-3"):
        v = res["idle"].get(s)
        if not v:
            continue
        pgv = f"{v['pg']*1e3:14.2f}" if s != "sqlite-1" else f"{'-':>14}"
        xv = f"{v['xact']:11.2f} {v['tup']:10.2f}" if s != "sqlite-1" else f"{'-':>11} {'-':>10}"
        print(f"{s:9} {v['daemon']*1e3:14.2f} {v['pid1']*1e3:15.2f} {pgv} {xv}")
    for s in ("pg-1", "pg-3"):
        if res["idle"].get(s, {}).get("tables"):
            print(f"{s} idle rows written per second per node, by table: " +
                  ", ".join(f"{k} {v:.2f}" for k, v in res["idle"][s]["tables"].items()))
    print("(pg-1 idle is measured with the SQLite node up too; the PostgreSQL figures of pg-1 include the "
          "psql statistics queries of the meter itself, ~2 transactions per snapshot)")


if __name__ == "__main__":
    sys.exit(main())

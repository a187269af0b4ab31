#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""sandboxd load test: N asynchronous submissions of Python `print(1)` at a steady rate, 8 slots.

Runs INSIDE tests/harness/sandbox-harness (`bench/run --load` starts it). Sets MaxConcurrent= with a
drop-in in $SANDBOXD_CONFIG_DIR/sandboxd.conf.d/ and `systemctl reload sandboxd.service`, submits
`POST /v1/executions` (no wait, an idempotent execution_id per submission) on a fixed schedule,
waits for every execution with `GET /v1/executions/{id}?wait=true` on a pool of waiter threads,
and reports loss, queue latency and the daemon's RSS and open fds over time. Standard library only.
See bench/README.md.
"""

import argparse
import datetime
import http.client
import json
import os
import platform
import queue
import socket
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench  # noqa: E402  (bench.py in the same directory: HTTP client, footprint, statistics)

CODE = "print(1)"
EXPECTED = "1\n"


def ms(x):
    return None if x is None else round(x, 1)


class Waiters:
    """W threads, each with its own connection, waiting for executions in submission order."""

    def __init__(self, api, n):
        self.api = api
        self.q = queue.Queue()
        self.lock = threading.Lock()
        self.ok = 0
        self.wrong = []          # (id, why) for executions that finished otherwise than success + "1\n"
        self.lost = []           # (id, why) for executions we could not get a final answer for
        self.queue_ms = []       # started_at - created_at
        self.run_ms = []         # finished_at - started_at
        self.total_ms = []       # finished_at - created_at
        self.last_finished = None
        self.threads = [threading.Thread(target=self.work, daemon=True) for _ in range(n)]
        for t in self.threads:
            t.start()

    def finished(self):
        with self.lock:
            return self.ok + len(self.wrong) + len(self.lost)

    def work(self):
        while True:
            eid = self.q.get()
            if eid is None:
                return
            e, why = None, None
            for _attempt in range(5):      # bounded: 5 waits of up to 60 s each
                try:
                    status, payload = self.api.request("GET", f"/v1/executions/{eid}?wait=true")
                except (OSError, http.client.HTTPException, socket.timeout) as ex:
                    why = f"{type(ex).__name__}: {ex}"
                    self.api.local.conn = None
                    continue
                if status != 200:
                    why = f"HTTP {status}: {payload[:200]!r}"
                    time.sleep(0.2)
                    continue
                e = json.loads(payload)
                if e.get("status") in ("queued", "running"):
                    why = f"still {e.get('status')}"
                    e = None
                    continue
                break
            with self.lock:
                if e is None:
                    self.lost.append((eid, why))
                    continue
                if e.get("status") != "success" or e.get("stdout") != EXPECTED:
                    self.wrong.append((eid, f"status={e.get('status')} error_type={e.get('error_type')} "
                                            f"reason={e.get('reason')!r} stdout={str(e.get('stdout'))[:50]!r}"))
                else:
                    self.ok += 1
                try:
                    c, s, f = (bench.parse_ts(e[k]) for k in ("created_at", "started_at", "finished_at"))
                    self.queue_ms.append((s - c) * 1000.0)
                    self.run_ms.append((f - s) * 1000.0)
                    self.total_ms.append((f - c) * 1000.0)
                    self.last_finished = max(self.last_finished or f, f)
                except (KeyError, TypeError, ValueError):
                    pass

    def close(self, deadline):
        for _ in self.threads:
            self.q.put(None)
        for t in self.threads:
            t.join(max(0.0, deadline - time.monotonic()))
        return not any(t.is_alive() for t in self.threads)


def sample(api, probe, label, submitted, waiters, t0):
    fp = bench.daemon_footprint()
    try:
        h = api.health()
    except Exception:  # noqa: BLE001
        h = {}
    return {"at": label, "t_s": round(time.monotonic() - t0, 1), "submitted": submitted,
            "finished": waiters.finished(), "queued": h.get("queued"), "running": h.get("running"),
            "rss_kib": fp.get("VmRSS"), "hwm_kib": fp.get("VmHWM"), "fds": fp.get("fds"), "pid": fp.get("pid"),
            "daemon_cpu_ms": bench.proc_cpu_ms(fp.get("pid")), "systemd_cpu_ms": bench.proc_cpu_ms(1)}


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--count", type=int, default=10000, help="submissions (default 10000)")
    ap.add_argument("--rate", type=float, default=40.0, help="submissions per second (default 40)")
    ap.add_argument("--slots", type=int, default=8, help="MaxConcurrent= for the test (default 8)")
    ap.add_argument("--waiters", type=int, default=16, help="threads waiting for results (default 16)")
    ap.add_argument("--max-seconds", type=int, default=600,
                    help="stop submitting, and stop waiting, after this long in all (default 600)")
    ap.add_argument("--sample-every", type=int, default=1000, help="footprint sample every N submissions")
    ap.add_argument("--results", default=os.path.join(HERE, "results"))
    args = ap.parse_args()
    if not 1 <= args.count <= 100000 or not 0.1 <= args.rate <= 1000 or not 1 <= args.slots <= 4096 \
            or not 1 <= args.waiters <= 128 or not 10 <= args.max_seconds <= 3600:
        ap.error("out of range: --count 1..100000, --rate 0.1..1000, --slots 1..4096, --waiters 1..128, "
                 "--max-seconds 10..3600")
    sock = os.environ.get("SANDBOXD_SOCKET")
    if not sock or not os.environ.get("SANDBOXD_CONFIG_DIR"):
        print("load.py: run me through bench/run --load (SANDBOXD_SOCKET / SANDBOXD_CONFIG_DIR unset)",
              file=sys.stderr)
        return 2
    t_begin = time.monotonic()
    deadline = t_begin + args.max_seconds

    api = bench.Api(sock)
    for _ in range(100):
        try:
            api.health()
            break
        except (OSError, bench.BenchError, http.client.HTTPException):
            time.sleep(0.1)
    slots = bench.set_max_concurrent(api, args.slots)
    h0 = api.health()
    queue_max = h0.get("queue_max") or 256
    print(f"load: MaxConcurrent={slots} (drop-in + reload), queue bound {queue_max}; {args.count} submissions "
          f"at {args.rate:g}/s ({args.count / args.rate:.0f} s)", file=sys.stderr, flush=True)
    # Warm-up (not counted): page cache, the daemon's allocator, the workspace pool.
    warm_w = bench.Workload("print", "print", "python", CODE, [])
    for _ in range(5):
        try:
            api.run_once(warm_w)
        except Exception as e:  # noqa: BLE001
            print(f"load: warm-up execution failed: {e}", file=sys.stderr)
    time.sleep(1.0)

    waiters = Waiters(api, args.waiters)
    probe_t0 = time.monotonic()
    samples = [sample(api, None, "start", 0, waiters, probe_t0)]
    run_id = datetime.datetime.now().strftime("%H%M%S")
    submitted = 0
    accepted = 0
    rejected = []        # (id, why): 429 and other refusals
    ack_ms = []
    max_lag = 0.0
    stop_reason = None
    t0 = time.monotonic()
    next_check = t0 + 1.0
    for i in range(args.count):
        target = t0 + i / args.rate
        now = time.monotonic()
        if target > now:
            time.sleep(target - now)
        else:
            max_lag = max(max_lag, now - target)
        if time.monotonic() > deadline - 30:
            stop_reason = (f"stopped submitting after {submitted}: --max-seconds={args.max_seconds} would be "
                           "exceeded (30 s kept to drain)")
            break
        eid = f"load-{run_id}-{i:05d}"
        ts = time.perf_counter()
        status, payload, why = None, b"", None
        for _attempt in range(2):       # the id is idempotent: a retry never runs twice
            try:
                status, payload = api.request("POST", "/v1/executions",
                                              {"language": "python", "code": CODE, "execution_id": eid})
                break
            except (OSError, http.client.HTTPException) as ex:
                why = f"{type(ex).__name__}: {ex}"
                api.local.conn = None
        ack_ms.append((time.perf_counter() - ts) * 1000.0)
        submitted += 1
        if status in (200, 202):
            accepted += 1
            waiters.q.put(eid)
        else:
            rejected.append((eid, f"HTTP {status}: {payload[:200]!r}" if status else why))
            if status == 429:
                stop_reason = (f"daemon fell behind: 429 queue_full after {submitted} submissions "
                               f"(queue bound {queue_max})")
                break
        if submitted % args.sample_every == 0:
            samples.append(sample(api, None, f"{submitted} submitted", submitted, waiters, probe_t0))
            s = samples[-1]
            print(f"  load: {submitted}/{args.count} submitted, {s['finished']} finished, queued {s['queued']}, "
                  f"RSS {s['rss_kib']} KiB, fds {s['fds']}", file=sys.stderr, flush=True)
        if time.monotonic() >= next_check:
            next_check += 1.0
            try:
                hq = api.health().get("queued") or 0
            except Exception:  # noqa: BLE001
                hq = 0
            # Stop before the queue overflows: less than one second of submissions of headroom left.
            if hq > queue_max - args.rate:
                stop_reason = (f"daemon fell behind: {hq} executions queued (queue bound {queue_max}) after "
                               f"{submitted} submissions in {time.monotonic() - t0:.0f} s at {args.rate:g}/s; "
                               f"it finished {waiters.finished()} ({waiters.finished() / (time.monotonic() - t0):.1f}/s). "
                               "Use a lower --load-rate.")
                break
    t_submit = time.monotonic() - t0
    if stop_reason:
        print(f"load: {stop_reason}", file=sys.stderr, flush=True)
    print(f"load: submitted {submitted} in {t_submit:.0f} s; waiting for the rest", file=sys.stderr, flush=True)
    drained = waiters.close(deadline)
    t_all = time.monotonic() - t0
    # Settle, then the end footprint.
    bench.wait_idle(api, 10.0)
    samples.append(sample(api, None, "end (settled)", submitted, waiters, probe_t0))
    try:
        bench.set_max_concurrent(api, None)
    except Exception as e:  # noqa: BLE001
        print(f"load: could not remove the drop-in: {e}", file=sys.stderr)

    finished_ok = waiters.ok
    loss = submitted - finished_ok
    s0, s1 = samples[0], samples[-1]
    mid = next((s for s in samples if s["submitted"] >= 2000), None)
    fds_flat = s0["fds"] is not None and s1["fds"] == s0["fds"]
    pid_same = len({s["pid"] for s in samples}) == 1
    rss_growth_mid = (s1["rss_kib"] - mid["rss_kib"]) if mid and mid is not s1 and s1["rss_kib"] else None
    rss_flat = rss_growth_mid is not None and rss_growth_mid <= max(1024, 0.10 * mid["rss_kib"])
    n_fin = max(1, waiters.finished())
    d_daemon = (s1["daemon_cpu_ms"] - s0["daemon_cpu_ms"]) if pid_same and s1["daemon_cpu_ms"] is not None else None
    d_sysd = (s1["systemd_cpu_ms"] - s0["systemd_cpu_ms"]) if s1["systemd_cpu_ms"] is not None else None

    L = []
    P = L.append
    P("")
    P(f"sandboxd load test — Python print(1), {args.count} submissions asked at {args.rate:g}/s, "
      f"MaxConcurrent={slots}, queue bound {queue_max}, {args.waiters} waiters")
    P(f"{platform.node()} · kernel {platform.release()} · {os.cpu_count()} CPUs · {bench.systemd_version()}")
    P("")
    P(f"submitted {submitted} in {t_submit:.1f} s ({submitted / t_submit if t_submit else 0:.1f}/s achieved, "
      f"submitter at most {max_lag * 1000:.0f} ms behind schedule); all final after {t_all:.1f} s")
    P(f"accepted {accepted}, refused {len(rejected)}, finished with stdout '1\\n' {finished_ok}, "
      f"finished otherwise {len(waiters.wrong)}, no final answer {len(waiters.lost)}")
    P(f"LOSS = submitted − finished correctly = {loss}   {'PASS' if loss == 0 else 'FAIL'} (must be 0)")
    if stop_reason:
        P(f"STOPPED EARLY: {stop_reason}")
    if not drained:
        P(f"NOT DRAINED: waiters still busy at --max-seconds={args.max_seconds}")
    P("")
    P(f"{'latency, ms':32}{'p50':>9}{'p95':>9}{'p99':>9}{'max':>9}")
    for name, xs in (("queue (started_at − created_at)", waiters.queue_ms),
                     ("run (finished_at − started_at)", waiters.run_ms),
                     ("total (finished_at − created_at)", waiters.total_ms),
                     ("POST answer (202) at the client", ack_ms)):
        P(f"{name:32}{bench.fmt(bench.pct(xs, 50), 9)}{bench.fmt(bench.pct(xs, 95), 9)}"
          f"{bench.fmt(bench.pct(xs, 99), 9)}{bench.fmt(max(xs) if xs else None, 9)}")
    P("")
    P(f"{'daemon':18}{'t s':>7}{'submitted':>10}{'finished':>9}{'queued':>7}{'running':>8}{'RSS KiB':>9}{'fds':>5}"
      f"{'CPU s':>7}")
    for s in samples:
        P(f"{s['at']:18}{s['t_s']:>7}{s['submitted']:>10}{s['finished']:>9}{str(s['queued']):>7}{str(s['running']):>8}"
          f"{str(s['rss_kib']):>9}{str(s['fds']):>5}"
          f"{(s['daemon_cpu_ms'] or 0) / 1000:>7.1f}")
    P(f"open fds start → end: {s0['fds']} → {s1['fds']}   {'PASS (flat)' if fds_flat else 'FAIL (not flat)'}")
    if rss_growth_mid is None:
        P(f"RSS start → end: {s0['rss_kib']} → {s1['rss_kib']} KiB; flatness n/a (judged from the 2000th "
          "submission on, after KeepFinished=1024 filled)")
    else:
        P(f"RSS start → end: {s0['rss_kib']} → {s1['rss_kib']} KiB; from 2000 submissions on (after "
          f"KeepFinished=1024 filled): {rss_growth_mid:+d} KiB   {'PASS (flat)' if rss_flat else 'CHECK (grows)'}")
    if not pid_same:
        P("WARNING: sandboxd's MainPID changed during the test: it restarted")
    P(f"CPU per execution: daemon {bench.fmt(d_daemon / n_fin if d_daemon is not None else None, 0, 2)} ms, "
      f"systemd (PID 1) {bench.fmt(d_sysd / n_fin if d_sysd is not None else None, 0, 2)} ms")
    for what, lst in (("refused", rejected), ("finished otherwise", waiters.wrong), ("no final answer", waiters.lost)):
        for eid, why in lst[:3]:
            P(f"  {what}: {eid}: {why}")
    report = "\n".join(L)
    print(report)

    os.makedirs(args.results, exist_ok=True)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    path = os.path.join(args.results, f"load-{stamp}.json")
    doc = {
        "schema": 1, "when": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "args": vars(args), "slots": slots, "queue_max": queue_max,
        "submitted": submitted, "accepted": accepted, "refused": len(rejected), "finished_ok": finished_ok,
        "finished_wrong": len(waiters.wrong), "no_answer": len(waiters.lost), "loss": loss,
        "stop_reason": stop_reason, "drained": drained, "submit_seconds": t_submit, "total_seconds": t_all,
        "max_schedule_lag_ms": max_lag * 1000.0,
        "latency_ms": {name: {"p50": bench.pct(xs, 50), "p95": bench.pct(xs, 95), "p99": bench.pct(xs, 99),
                              "max": max(xs) if xs else None, "n": len(xs)}
                       for name, xs in (("queue", waiters.queue_ms), ("run", waiters.run_ms),
                                        ("total", waiters.total_ms), ("post_ack", ack_ms))},
        "samples": samples, "fds_flat": fds_flat, "rss_growth_from_2000_kib": rss_growth_mid, "rss_flat": rss_flat,
        "cpu_ms_per_exec": {"daemon": d_daemon / n_fin if d_daemon is not None else None,
                            "systemd": d_sysd / n_fin if d_sysd is not None else None},
        "errors": {"refused": rejected[:20], "wrong": waiters.wrong[:20], "lost": waiters.lost[:20]},
        "report": report,
    }
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
    print(f"\nresults: {os.path.relpath(path)}")
    if loss or not fds_flat or not pid_same:
        return 3
    return 4 if stop_reason else 0


if __name__ == "__main__":
    sys.exit(main())

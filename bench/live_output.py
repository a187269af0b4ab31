# SPDX-License-Identifier: LGPL-2.1-or-later
"""Live output latency (issue 18), run by `bench/run --live-output` inside tests/harness/sandbox-harness.

A program prints CLOCK_MONOTONIC (nanoseconds) every 100 ms, flushing each line; a reader of
GET /v1/executions/{id}/events compares each line with CLOCK_MONOTONIC when its stdout event
arrives (the same host clock: the unit has no time namespace). The figure is the time from the
program's write to the event's arrival at the client, p50/p95/max over every line of --runs
executions (--lines lines each), in two scenarios: "head", the lines are within the head cap
(forwarded per chunk), and "beyond head", the program first writes 128 KiB (more than the 64 KiB
head), so sandbox-exec forwards at most one frame per stream every 25 ms. Target: within 100 ms.

Results: a table on stdout, bench/results/live-output-<date>.json."""

import argparse
import datetime
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
import lib  # noqa: E402


def pct(xs, p):
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = min(len(xs) - 1, max(0, int(round(p / 100.0 * (len(xs) - 1)))))
    return xs[k]


def one_run(lines, interval, filler):
    code = ("import time, sys\n"
            f"sys.stdout.write('#' * {filler} + '\\n'); sys.stdout.flush()\n"
            f"for i in range({lines}):\n"
            "    sys.stdout.write('%d\\n' % time.clock_gettime_ns(time.CLOCK_MONOTONIC)); sys.stdout.flush()\n"
            f"    time.sleep({interval})\n")
    st, acc = lib.submit(code, limits={"timeout_ms": int(lines * interval * 1000) + 30000})
    if st != 202:
        raise SystemExit(f"submit: {st} {acc}")
    conn = lib.UnixConnection(lib.SOCKET, timeout=120)
    conn.request("GET", f"/v1/executions/{acc['execution_id']}/events")
    resp = conn.getresponse()
    lat, buf, event, result = [], "", None, None
    while True:
        line = resp.readline()
        if not line:
            break
        now = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        line = line.decode().rstrip("\n")
        if line.startswith("event: "):
            event = line[7:]
        elif line.startswith("data: ") and event == "stdout":
            buf += json.loads(line[6:])["text"]
            while "\n" in buf:
                ts, _, buf = buf.partition("\n")
                if ts.isdigit():
                    lat.append((now - int(ts)) / 1e6)
        elif line.startswith("data: ") and event == "result":
            result = json.loads(line[6:])
    conn.close()
    return lat, result


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--lines", type=int, default=50)
    ap.add_argument("--interval", type=float, default=0.1)
    a = ap.parse_args()

    out = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(), "runs": a.runs, "lines": a.lines,
           "interval_s": a.interval, "target_ms": 100, "scenarios": {}}
    for name, filler in (("head", 0), ("beyond head", 128 * 1024)):
        lat, starts = [], []
        for i in range(a.runs):
            got, res = one_run(a.lines, a.interval, filler)
            if not res or res.get("status") != "success":
                print(f"{name} run {i}: no successful result: {res}", file=sys.stderr)
            if len(got) != a.lines:
                print(f"{name} run {i}: {len(got)} of {a.lines} lines arrived as stdout events", file=sys.stderr)
            starts.append((res or {}).get("start"))
            lat += got
            print(f"{name} run {i + 1}/{a.runs}: {len(got)} lines, p50 {pct(got, 50):.2f} ms", file=sys.stderr)
        out["scenarios"][name] = {
            "starts": starts, "samples": len(lat),
            "p50_ms": pct(lat, 50), "p95_ms": pct(lat, 95), "max_ms": max(lat) if lat else None,
            "mean_ms": statistics.mean(lat) if lat else None,
        }
    print("Live output: program write -> stdout event at the reader (GET .../events)")
    print(f"{'scenario':<12} {'samples':>8} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8} {'target':>8}")
    ok = True
    for name, r in out["scenarios"].items():
        verdict = "PASS" if r["samples"] and r["p95_ms"] <= 100 else "MISS"
        ok = ok and r["samples"] > 0
        print(f"{name:<12} {r['samples']:>8} {r['p50_ms']:>8.2f} {r['p95_ms']:>8.2f} {r['max_ms'] or 0:>8.2f} {verdict:>8}")
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    path = os.path.join(HERE, "results", "live-output-" + datetime.datetime.now().strftime("%Y%m%d-%H%M%S") + ".json")
    with open(path, "w") as f:
        json.dump(out, f, indent=2)
    print(f"# {path}", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

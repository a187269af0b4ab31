#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The strong isolation tier (issue 21, docs/isolation.md) against bare gVisor, in one interleaved
run. Run by `bench/run --strong` inside tests/harness/sandbox-harness, whose daemon bench/run starts
with [Isolation] Strong=auto (SANDBOX_HARNESS_STRONG=auto).

For python `print(1)` and python `import numpy; print(1)` (each must print exactly "1\\n"):
  strong    POST /v1/executions?wait=true with "isolation": "strong" (the record must say tier strong):
            the strong tier's default request, which claims a strong unit of the warm pool ([Pool]
            StrongSize=) when one is ready (waited for in the latency rounds: start warm), else cold
  strong-cold  the same with "start": "cold": a unit started for the run (start cold)
  runsc     bare `runsc --platform=ptrace --network=none do /usr/bin/python3 -c CODE` on the host, as
            root, with its own --root and TMPDIR in a fresh directory below /var/lib
  cold      the standard tier with "start": "cold" (tier standard, start cold)
  warm      the standard tier's default request after the pool has a ready python unit (start warm);
            skipped when the daemon has no warm python unit
Latency: N rounds (--rounds, default 20, after --warmup 1), in each round every case once, the order
rotating from round to round; wall time as the client sees it, p50 and p90. Throughput: --concurrency
(8) clients in parallel, --tput-runs (M, default 48) runs per case, in --tput-rounds (2) interleaved
bursts; runs/s = successful runs / the bursts' wall time (the warm row there is the default request:
warm while the pool has units, cold after; the records' starts are counted). Every run must succeed
with the expected output, else it is counted as failed and printed. The target: p50(strong) /
p50(runsc) <= 1.2. "run p50": the record's started_at to finished_at (for the strong tier, runsc's
whole life: Sentry, gofer and the program); a second table splits the API rows' time at the
record's created_at, started_at and finished_at, with its duration_ms (sandbox-exec's figure: from
its start of the program, runsc for the strong tier, to the program's exit). The
API runs ask for cpu_cores = the machine's cores (--cpu-cores), since bare runsc has all of them.
Empty cgroups that failed bare runs leave at the host's top level (runsc-NNNNNN) are removed at the
end. Output: a table on stdout and bench/results/strong-<date>.json.
"""
import argparse
import datetime
import http.client
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOCKET = os.environ.get("SANDBOXD_SOCKET", "/run/sandboxd/api.sock")
TARGET = 1.2
RUNSC = "/usr/bin/runsc"
PYTHON = "/usr/bin/python3"
EXPECTED = "1\n"
WORKLOADS = {"print": ("python print(1)", "print(1)"),
             "numpy": ("python import numpy", "import numpy; print(1)")}
CASES = ("strong", "strong-cold", "runsc", "cold", "warm")
LABEL = {"strong": "strong tier (API)", "strong-cold": "strong cold (API)", "runsc": "bare runsc do",
         "cold": "standard cold (API)", "warm": "standard warm (API)"}
LIMITS = {"timeout_ms": 25000}
PHASES = ("to_created", "created_to_started", "started_to_finished", "finished_to_client", "duration_ms")


class RunError(Exception):
    pass


class Conn(http.client.HTTPConnection):
    def __init__(self):
        super().__init__("localhost", timeout=300)

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        s.connect(SOCKET)
        self.sock = s


def api(method, path, body=None):
    c = Conn()
    try:
        c.request(method, path, body=json.dumps(body).encode() if body is not None else None,
                  headers={"Content-Type": "application/json"})
        r = c.getresponse()
        data = r.read()
    finally:
        c.close()
    return r.status, json.loads(data or b"{}")


def pool_ready(preloaded, strong=False):
    """Ready python units of the kind a run takes: a strong run a unit of the strong tier
    ([Pool] StrongSize=); a standard run whose code names a module of [Pool] PythonPreload= (numpy)
    a preloaded unit, any other a plain one (warm_pool_claim())."""
    st, h = api("GET", "/v1/health")
    if st != 200:
        return 0
    pool = h.get("pool") or {}
    if strong:
        return int((pool.get("strong") or {}).get("python", 0))
    ready = int((pool.get("ready") or {}).get("python", 0))
    pre = int((pool.get("preloaded") or {}).get("python", 0))
    return pre if preloaded else ready - pre


def wait_ready(preloaded, timeout, strong=False):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pool_ready(preloaded, strong) > 0:
            return True
        time.sleep(0.05)
    return False


def api_run(code, case, starts=None, wait_warm=False):
    """One execution through the API, checked: (the client's wall time, the record's duration_ms)."""
    body = {"language": "python", "code": code, "limits": LIMITS}
    strong = case.startswith("strong")
    if strong:
        body["isolation"] = "strong"
    if case in ("cold", "strong-cold"):
        body["start"] = "cold"
    if wait_warm and not wait_ready("numpy" in code, 60, strong):
        raise RunError(f"{case}: no ready python unit of its kind within 60 s")
    w0 = time.time()
    t0 = time.monotonic()
    st, r = api("POST", "/v1/executions?wait=true", body)
    dt = (time.monotonic() - t0) * 1000
    w1 = time.time()
    if st != 200 or r.get("status") != "success" or r.get("stdout") != EXPECTED:
        raise RunError(f"{case}: HTTP {st} status={r.get('status')} error_type={r.get('error_type')} "
                       f"stdout={r.get('stdout')!r} stderr={(r.get('stderr') or '')[:300]!r}")
    tier = (r.get("isolation") or {}).get("tier")
    want = "strong" if strong else "standard"
    if tier != want:
        raise RunError(f"{case}: the record says tier {tier!r} ({r.get('isolation')}), not {want}")
    start = r.get("start")
    if starts is not None:
        starts[start if start in ("warm", "cold") else "none"] = starts.get(start if start in ("warm", "cold")
                                                                            else "none", 0) + 1
    if case in ("cold", "strong-cold") and start != "cold":
        raise RunError(f'{case}: asked for "start": "cold", the record says start={start!r}')
    if case in ("warm", "strong") and wait_warm and start != "warm":
        raise RunError(f"{case}: a ready unit was there, the record says start={start!r}")
    try:
        c, s, f = (parse_ts(r[k]) for k in ("created_at", "started_at", "finished_at"))
        phases = {"to_created": (c - w0) * 1000, "created_to_started": (s - c) * 1000,
                  "started_to_finished": (f - s) * 1000, "finished_to_client": (w1 - f) * 1000,
                  "duration_ms": float(r["duration_ms"])}
    except (KeyError, TypeError, ValueError):
        phases = None
    return dt, phases


RUNSC_FLAGS = []


def parse_ts(s):
    # "2026-11-30T03:20:00.123Z" (UTC, millisecond precision)
    return datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc).timestamp()


def runsc_argv(code, scratch):
    return [RUNSC, f"--root={scratch}/runsc-root", *RUNSC_FLAGS, "--platform=ptrace", "--network=none", "do",
            PYTHON, "-c", code]


def runsc_run(code, scratch):
    env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8",
           "TMPDIR": os.path.join(scratch, "tmp")}
    t0 = time.monotonic()
    try:
        p = subprocess.run(runsc_argv(code, scratch), cwd=os.path.join(scratch, "cwd"), env=env,
                           stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        raise RunError("runsc: timed out after 120 s") from None
    dt = (time.monotonic() - t0) * 1000
    if p.returncode != 0 or p.stdout != EXPECTED:
        raise RunError(f"runsc: exit {p.returncode} stdout={p.stdout!r} stderr={p.stderr[-300:]!r}")
    return dt, None


def one(case, code, scratch, starts=None, wait_warm=False):
    if case == "runsc":
        return runsc_run(code, scratch)
    return api_run(code, case, starts, wait_warm)


CGROUP_ROOT = "/sys/fs/cgroup"


def runsc_cgroups():
    """The cgroups `runsc do` makes (as root, without --ignore-cgroups): /runsc-NNNNNN in every
    hierarchy, removed by runsc when the run ends, but left behind (empty) when its sandbox fails to
    start. The harness has no cgroup namespace: these are the host's."""
    out = set()
    try:
        tops = [CGROUP_ROOT] + [os.path.join(CGROUP_ROOT, h) for h in os.listdir(CGROUP_ROOT)]
    except OSError:
        return out
    for h in tops:
        if os.path.islink(h) or not os.path.isdir(h):
            continue
        try:
            out.update(os.path.join(h, n) for n in os.listdir(h) if re.fullmatch(r"runsc-[0-9]{6}", n))
        except OSError:
            pass
    return out


def pct(xs, p):
    if not xs:
        return None
    s = sorted(xs)
    k = (len(s) - 1) * p / 100.0
    lo = int(k)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def burst(case, code, scratch, n, conc, starts):
    """n runs of one case by conc clients at once: (ok, failed, wall seconds, latencies, errors)."""
    lock = threading.Lock()
    todo = list(range(n))
    lat, errors = [], []

    def worker():
        while True:
            with lock:
                if not todo:
                    return
                todo.pop()
            try:
                dt, _ = one(case, code, scratch, starts)
                with lock:
                    lat.append(dt)
            except Exception as e:  # noqa: BLE001 - counted and printed
                with lock:
                    errors.append(str(e))
    threads = [threading.Thread(target=worker) for _ in range(conc)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return len(lat), len(errors), time.monotonic() - t0, lat, errors


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="5 rounds, 16 runs per case at c=8")
    ap.add_argument("--rounds", type=int, help="latency rounds per workload (default 20, quick 5)")
    ap.add_argument("--warmup", type=int, default=1, help="rounds not counted first (default 1)")
    ap.add_argument("--tput-runs", type=int, help="throughput: runs per case (default 48, quick 16)")
    ap.add_argument("--tput-rounds", type=int, default=2, help="throughput: interleaved bursts per case (2)")
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--workloads", default="print,numpy")
    ap.add_argument("--no-warm", action="store_true", help="leave out the standard tier's warm row")
    # The bare runsc row has every core of the machine; so, by default, has the sandbox (cpu_cores).
    ap.add_argument("--cpu-cores", type=float, default=float(os.cpu_count() or 1))
    ap.add_argument("--runsc-flag", action="append", default=[],
                    help="a global flag for the bare runsc row (e.g. --runsc-flag=--debug), repeatable")
    ap.add_argument("--results", default=os.path.join(HERE, "results"))
    args = ap.parse_args()
    rounds = args.rounds if args.rounds is not None else (5 if args.quick else 20)
    tput_runs = args.tput_runs if args.tput_runs is not None else (16 if args.quick else 48)
    LIMITS["cpu_cores"] = args.cpu_cores
    RUNSC_FLAGS.extend(args.runsc_flag)
    workloads = [w for w in args.workloads.split(",") if w]
    for w in workloads:
        if w not in WORKLOADS:
            print(f"bench/strong: unknown workload {w!r} (print, numpy)", file=sys.stderr)
            return 2

    st, h = api("GET", "/v1/health")
    iso = h.get("isolation") or {}
    if st != 200 or iso.get("policy") == "never" or not iso.get("strong_available", True):
        print(f"bench/strong: the daemon cannot run the strong tier: HTTP {st}, isolation {iso} "
              "(bench/run --strong starts it with SANDBOX_HARNESS_STRONG=auto)", file=sys.stderr)
        return 77
    if not os.access(RUNSC, os.X_OK):
        print(f"bench/strong: no {RUNSC}", file=sys.stderr)
        return 77
    cases = [c for c in CASES if not (c == "warm" and args.no_warm)]
    skipped = {}
    if "warm" in cases and not wait_ready(False, 30):
        skipped["warm"] = "no ready plain python unit of the warm pool within 30 s"
        cases.remove("warm")
        print(f"# warm row skipped: {skipped['warm']}", file=sys.stderr)
    # The strong row is the strong tier's default request: warm when the pool has a strong unit
    # ready (waited for in the latency rounds, as the warm row's), else cold.
    strong_warm = wait_ready(False, 60, strong=True)
    if not strong_warm:
        print("# the pool keeps no strong python unit ([Pool] StrongSize=0?): the strong row starts cold",
              file=sys.stderr)

    # runsc's --root and TMPDIR (`runsc do` keeps its state and the sandbox's chroot there) in a
    # fresh directory outside /tmp. World-searchable: runsc's sandbox process opens the chroot after
    # giving up its privileges (a 0700 directory fails with "error setting up chroot").
    scratch = tempfile.mkdtemp(prefix="bench-strong.", dir="/var/lib")
    os.chmod(scratch, 0o755)
    for d, mode in (("runsc-root", 0o700), ("tmp", 0o755), ("cwd", 0o755)):
        os.makedirs(os.path.join(scratch, d))
        os.chmod(os.path.join(scratch, d), mode)
    cgroups_before = runsc_cgroups()
    load_start = os.getloadavg()
    t_start = time.time()
    lat = {w: {c: [] for c in cases} for w in workloads}
    fails = {w: {c: [] for c in cases} for w in workloads}
    durs = {w: {c: [] for c in cases} for w in workloads}
    tput = {w: {c: {"ok": 0, "failed": 0, "seconds": 0.0, "latency_ms": [], "errors": [], "starts": {}}
                for c in cases} for w in workloads}
    try:
        for w in workloads:
            code = WORKLOADS[w][1]
            for i in range(args.warmup + rounds):
                order = cases[i % len(cases):] + cases[:i % len(cases)]
                line = []
                for c in order:
                    try:
                        dt, ph = one(c, code, scratch, wait_warm=(c == "warm" or (c == "strong" and strong_warm)))
                    except Exception as e:  # noqa: BLE001 - counted and printed
                        fails[w][c].append(str(e))
                        print(f"# FAILED {w} round {i} {c}: {e}", file=sys.stderr)
                        line.append(f"{c} FAILED")
                        continue
                    if i >= args.warmup:
                        lat[w][c].append(dt)
                        if ph is not None:
                            durs[w][c].append(ph)
                    line.append(f"{c} {dt:.0f}")
                print(f"# {w} round {i}{' (warm-up)' if i < args.warmup else ''}: {', '.join(line)} ms",
                      file=sys.stderr)
            per = max(1, tput_runs // args.tput_rounds)
            for r in range(args.tput_rounds if tput_runs > 0 else 0):
                n = per if r < args.tput_rounds - 1 else tput_runs - per * (args.tput_rounds - 1)
                order = cases[r % len(cases):] + cases[:r % len(cases)]
                for c in order:
                    t = tput[w][c]
                    ok, bad, secs, l, errs = burst(c, code, scratch, n, args.concurrency, t["starts"])
                    t["ok"] += ok
                    t["failed"] += bad
                    t["seconds"] += secs
                    t["latency_ms"] += l
                    t["errors"] += errs
                    for e in errs:
                        print(f"# FAILED {w} c={args.concurrency} {c}: {e}", file=sys.stderr)
                    print(f"# {w} c={args.concurrency} burst {r} {c}: {ok}/{n} ok in {secs:.1f} s "
                          f"({ok / secs:.2f}/s)", file=sys.stderr)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        # What the failed bare runs left (rmdir removes only an empty cgroup without tasks).
        removed = 0
        for d in sorted(runsc_cgroups() - cgroups_before, key=len, reverse=True):
            try:
                os.rmdir(d)
                removed += 1
            except OSError as e:
                print(f"# cannot remove {d}, left by a runsc run: {e}", file=sys.stderr)
        if removed:
            print(f"# removed {removed} empty cgroups left by failed runsc runs", file=sys.stderr)
    load_end = os.getloadavg()

    fmt = lambda x, f="9.0f": format(x, f) if x is not None else f"{'-':>{f.split('.')[0]}}"  # noqa: E731
    print(f"\n# {rounds} rounds (+{args.warmup} warm-up) interleaved; throughput: {tput_runs} runs per case at "
          f"c={args.concurrency}; cpu_cores={args.cpu_cores:g} for the API runs, the bare runsc row has all "
          f"{os.cpu_count()} cores; load average {load_start[0]:.2f} at the start, {load_end[0]:.2f} at the end")
    print(f"\n{'workload':<20} {'case':<22} {'p50 ms':>9} {'p90 ms':>9} {'run p50':>9} {'fail':>5} "
          f"{'c=' + str(args.concurrency) + ' runs/s':>12} {'c fail':>7} {'c p50 ms':>9}  c starts")
    summary = {}
    for w in workloads:
        summary[w] = {"cases": {}}
        for c in cases:
            xs, t = lat[w][c], tput[w][c]
            rate = t["ok"] / t["seconds"] if t["seconds"] > 0 else None
            row = {"label": LABEL[c], "p50_ms": pct(xs, 50), "p90_ms": pct(xs, 90), "n": len(xs),
                   "phases_p50_ms": {k: pct([x[k] for x in durs[w][c]], 50) for k in PHASES} if durs[w][c] else None,
                   "phases_ms": durs[w][c],
                   "failed": len(fails[w][c]), "failures": fails[w][c], "latency_ms": xs,
                   "throughput": {"concurrency": args.concurrency, "runs": tput_runs, "ok": t["ok"],
                                  "failed": t["failed"], "seconds": t["seconds"], "runs_per_s": rate,
                                  "p50_ms": pct(t["latency_ms"], 50), "p90_ms": pct(t["latency_ms"], 90),
                                  "starts": t["starts"], "failures": t["errors"]}}
            summary[w]["cases"][c] = row
            unit = row["phases_p50_ms"]["started_to_finished"] if row["phases_p50_ms"] else None
            print(f"{WORKLOADS[w][0]:<20} {LABEL[c]:<22} {fmt(row['p50_ms'])} {fmt(row['p90_ms'])} "
                  f"{fmt(unit)} {row['failed']:5d} {fmt(rate, '12.2f')} {t['failed']:7d} {fmt(pct(t['latency_ms'], 50))}  "
                  f"{' '.join(f'{k} {v}' for k, v in sorted(t['starts'].items())) or '-'}")
        s, b = summary[w]["cases"]["strong"]["p50_ms"], summary[w]["cases"]["runsc"]["p50_ms"]
        cold = summary[w]["cases"]["cold"]["p50_ms"]
        sc = summary[w]["cases"]["strong-cold"]["p50_ms"]
        summary[w]["ratio"] = s / b if s and b else None
        summary[w]["ratio_strong_cold"] = sc / b if sc and b else None
        summary[w]["strong_minus_cold_ms"] = s - cold if s and cold else None
        summary[w]["verdict"] = "n/a" if summary[w]["ratio"] is None else (
            "PASS" if summary[w]["ratio"] <= TARGET else "MISS")
    print(f"\n# where the API rows' time goes, p50 ms (the record's created_at, started_at, finished_at):")
    print(f"{'workload':<20} {'case':<22} {'to created':>11} {'to started':>11} {'to finished':>12} {'to client':>10}"
          f" {'duration_ms':>12}")
    for w in workloads:
        for c in cases:
            ph = summary[w]["cases"][c]["phases_p50_ms"]
            if ph:
                print(f"{WORKLOADS[w][0]:<20} {LABEL[c]:<22} " + " ".join(fmt(ph[k], f"{n}.0f") for k, n in zip(PHASES, (11, 11, 12, 10, 12))))
    print(f"\n{'workload':<20} {'strong p50 / bare runsc p50':>28} {'target':>8} {'verdict':>8} {'strong - cold ms':>17}"
          f" {'strong cold / bare runsc':>25}")
    for w in workloads:
        r = summary[w]
        print(f"{WORKLOADS[w][0]:<20} {fmt(r['ratio'], '28.2f')} {'≤ ' + str(TARGET):>8} {r['verdict']:>8} "
              f"{fmt(r['strong_minus_cold_ms'], '17.0f')} {fmt(r['ratio_strong_cold'], '25.2f')}")
    if skipped:
        print(f"\n# skipped: {skipped}")

    os.makedirs(args.results, exist_ok=True)
    out = os.path.join(args.results, time.strftime("strong-%Y%m%d-%H%M%S.json"))
    with open(out, "w") as f:
        json.dump({"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t_start)),
                   "rounds": rounds, "warmup": args.warmup, "tput_runs": tput_runs,
                   "tput_rounds": args.tput_rounds, "concurrency": args.concurrency, "target": TARGET,
                   "cpu_cores": args.cpu_cores, "host_cpus": os.cpu_count(),
                   "loadavg_start": load_start, "loadavg_end": load_end, "isolation": iso,
                   "commands": {"strong": {"language": "python", "code": "CODE", "isolation": "strong",
                                           "limits": LIMITS},
                                "runsc": runsc_argv("CODE", "SCRATCH"),
                                "cold": {"language": "python", "code": "CODE", "start": "cold", "limits": LIMITS},
                                "warm": {"language": "python", "code": "CODE", "limits": LIMITS}},
                   "workloads": {w: WORKLOADS[w][1] for w in workloads}, "skipped": skipped,
                   "results": summary}, f, indent=1)
    print(f"\n# {out}")
    failed = any(r["failed"] or r["throughput"]["failed"] for w in summary.values() for r in w["cases"].values())
    return 3 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

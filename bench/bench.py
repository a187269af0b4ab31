#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""sandboxd against its peers, interleaved in one run: `print(1)` in Python.

Runs INSIDE tests/harness/sandbox-harness (bench/run starts it): a private systemd with sandboxd
running, $SANDBOXD_SOCKET and $SANDBOXD_BUILD_DIR set, /run and /tmp private tmpfs.
Python standard library only. See bench/README.md for what is measured and how to read it.
"""

import argparse
import datetime
import http.client
import json
import os
import platform
import random
import shutil
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
CODE = "print(1)"
EXPECTED = "1\n"
PYTHON = "/usr/bin/python3"
RUN_TIMEOUT = 60          # seconds, one execution, any runner
BENCH_DIR = "/run/sandbox-bench"   # private tmpfs inside the harness

# /etc entries sandboxd binds read-only (sandboxd/unit-props.c, etc_entries[]).
ETC_ENTRIES = [
    "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/nsswitch.conf", "/etc/passwd",
    "/etc/group", "/etc/hosts", "/etc/localtime", "/etc/alternatives", "/etc/ssl", "/etc/ca-certificates",
    "/etc/mime.types", "/etc/python3", "/etc/python3.11",
]
# The fixed environment of sandboxd's units (unit-props.c, sandbox_environment()).
SANDBOX_ENV = [
    "PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/workspace", "PWD=/workspace", "TMPDIR=/tmp",
    "USER=sandbox", "LOGNAME=sandbox", "TZ=UTC", "LANG=C.UTF-8", "LC_ALL=C.UTF-8", "PYTHONHASHSEED=0",
    "SANDBOX_SEED=0",
]


class BenchError(Exception):
    pass


# --------------------------------------------------------------------------------------------
# sandboxd over HTTP: one persistent connection per worker thread.

class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout=RUN_TIMEOUT):
        super().__init__("localhost", timeout=timeout)
        self.unix_path = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        s.connect(self.unix_path)
        self.sock = s


class Api:
    def __init__(self, path):
        self.path = path
        self.local = threading.local()
        self.lock = threading.Lock()
        self.connections = 0
        self.reconnects = 0
        self.server_ms = []   # duration_ms as reported by sandboxd (ExecMainStart -> exit)
        self.phase = "warmup"
        self.phases = {}      # phase -> {"queued_to_started": [...], "started_to_finished": [...], "finished_to_client": [...]}

    def _conn(self):
        c = getattr(self.local, "conn", None)
        if c is None:
            c = UnixHTTPConnection(self.path)
            self.local.conn = c
            with self.lock:
                self.connections += 1
        return c

    def request(self, method, url, body=None):
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": "application/json"} if data is not None else {}
        for attempt in (0, 1):
            c = self._conn()
            try:
                c.request(method, url, body=data, headers=headers)
                r = c.getresponse()
                payload = r.read()
                if r.getheader("Connection", "").lower() == "close":
                    c.close()
                    self.local.conn = None
                return r.status, payload
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError,
                    http.client.CannotSendRequest, http.client.BadStatusLine):
                # The daemon closed an idle keep-alive connection: reconnect once.
                c.close()
                self.local.conn = None
                with self.lock:
                    self.reconnects += 1
                if attempt == 1:
                    raise
        raise BenchError("unreachable")

    def close_all(self):
        c = getattr(self.local, "conn", None)
        if c:
            c.close()

    def health(self):
        status, payload = self.request("GET", "/v1/health")
        if status != 200:
            raise BenchError(f"GET /v1/health: HTTP {status}: {payload[:200]!r}")
        return json.loads(payload)

    def run_once(self):
        t0 = time.time()
        status, payload = self.request("POST", "/v1/executions?wait=true",
                                       {"language": "python", "code": CODE})
        if status != 200:
            raise BenchError(f"HTTP {status}: {payload[:300]!r}")
        e = json.loads(payload)
        if e.get("status") != "success" or e.get("stdout") != EXPECTED:
            raise BenchError(f"status={e.get('status')} error_type={e.get('error_type')} "
                             f"reason={e.get('reason')!r} stdout={e.get('stdout')!r} stderr={str(e.get('stderr'))[:200]!r}")
        t_end = time.time()
        with self.lock:
            if isinstance(e.get("duration_ms"), (int, float)):
                self.server_ms.append(float(e["duration_ms"]))
            try:
                c, st, fi = (parse_ts(e[k]) for k in ("created_at", "started_at", "finished_at"))
            except (KeyError, TypeError, ValueError):
                return
            ph = self.phases.setdefault(self.phase, {"client_to_created": [], "created_to_started": [],
                                                     "started_to_finished": [], "finished_to_client": []})
            ph["client_to_created"].append((c - t0) * 1000.0)
            ph["created_to_started"].append((st - c) * 1000.0)
            ph["started_to_finished"].append((fi - st) * 1000.0)
            ph["finished_to_client"].append((t_end - fi) * 1000.0)


def parse_ts(s):
    # "2026-11-30T03:20:00.123Z" (UTC, millisecond precision)
    return datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc).timestamp()


# --------------------------------------------------------------------------------------------
# Command runners.

def run_cmd(argv, env=None):
    p = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=RUN_TIMEOUT, env=env)
    out = p.stdout.decode(errors="replace")
    if p.returncode != 0 or out != EXPECTED:
        raise BenchError(f"exit {p.returncode}, stdout={out[:100]!r}, stderr={p.stderr.decode(errors='replace')[-300:]!r}")


def prop_args(props):
    a = []
    for p in props:
        a += ["-p", p]
    return a


def naive_props():
    return [
        "DynamicUser=yes", "PrivateNetwork=yes", "PrivateDevices=yes", "PrivateIPC=yes",
        "ProtectProc=invisible", "ProcSubset=pid", "NoNewPrivileges=yes", "CapabilityBoundingSet=",
        "ProtectSystem=strict", "ProtectHome=yes", "MemoryMax=512M", "CPUQuota=100%", "TasksMax=128",
        "RuntimeMaxSec=30", "SystemCallFilter=@system-service",
    ]


def profile_props(drop=()):
    """sandboxd's unit profile (sandboxd/unit-props.c) as far as systemd-run can express it.
    `drop` removes groups of properties for the ablation. Not expressible: sandbox-exec (the helper
    that loads sandboxd's own seccomp filter and forks the program), the per-execution tmpfs mount
    unit, the control-channel socketpair, AddRef=."""
    groups = {
        "base": [
            "CollectMode=inactive-or-failed", "Type=simple", "WorkingDirectory=/workspace", "UMask=0022",
            "IgnoreSIGPIPE=no", "NoNewPrivileges=yes", "CapabilityBoundingSet=", "AmbientCapabilities=",
            "RestrictSUIDSGID=yes", f"RootDirectory={BENCH_DIR}/root", "MountAPIVFS=yes",
            "BindReadOnlyPaths=/usr",
            *[f"BindReadOnlyPaths=-{e}" for e in ETC_ENTRIES],
            f"BindReadOnlyPaths={BENCH_DIR}/empty:/sys",
            "PrivateIPC=yes", "ProtectHostname=yes",
            "MemoryAccounting=yes", "MemoryMax=512M", "MemorySwapMax=0", "CPUAccounting=yes",
            "CPUQuota=100%", "TasksAccounting=yes", "TasksMax=128", "RuntimeMaxSec=30",
            "KillMode=control-group", "KillSignal=SIGKILL", "SendSIGKILL=yes", "TimeoutStopSec=1",
            "LimitCORE=0", "LimitNOFILE=1024", "OOMScoreAdjust=500",
            *[f"Environment={e}" for e in SANDBOX_ENV],
        ],
        "DynamicUser": ["DynamicUser=yes"],
        "PrivateNetwork": ["PrivateNetwork=yes"],
        "ProtectProc": ["ProtectProc=invisible", "ProcSubset=pid"],
        "PrivateDevices": ["PrivateDevices=yes"],
        "Binds": [
            f"BindPaths={BENCH_DIR}/ws/workspace:/workspace",
            f"BindPaths={BENCH_DIR}/ws/tmp:/tmp",
            f"BindPaths={BENCH_DIR}/ws/tmp:/var/tmp",
            "TemporaryFileSystem=/dev/shm:mode=1777,nosuid,nodev,noexec,size=64M",
        ],
    }
    props = []
    for k, v in groups.items():
        if k not in drop:
            props += v
    return props


def setup_bench_root():
    """A skeleton like sandboxd's setup_directories() (sandboxd/manager.c), in the harness's private /run."""
    shutil.rmtree(BENCH_DIR, ignore_errors=True)
    root = f"{BENCH_DIR}/root"
    for d in ("usr", "etc", "proc", "dev", "run", "sys", "tmp", "var", "var/tmp", "workspace"):
        os.makedirs(f"{root}/{d}", mode=0o755, exist_ok=True)
    for target, name in (("usr/bin", "bin"), ("usr/sbin", "sbin"), ("usr/lib", "lib"), ("usr/lib64", "lib64")):
        os.symlink(target, f"{root}/{name}")
    os.makedirs(f"{BENCH_DIR}/empty", mode=0o555)
    for d in ("ws/workspace", "ws/tmp"):
        os.makedirs(f"{BENCH_DIR}/{d}")
        os.chmod(f"{BENCH_DIR}/{d}", 0o1777)


def systemd_run_argv(props):
    return ["systemd-run", "--wait", "--pipe", "--quiet", "--collect", *prop_args(props), PYTHON, "-c", CODE]


BWRAP_ARGV = ["bwrap", "--unshare-all", "--die-with-parent", "--ro-bind", "/usr", "/usr",
              "--symlink", "usr/lib64", "/lib64", "--symlink", "usr/lib", "/lib", "--symlink", "usr/bin", "/bin",
              "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", PYTHON, "-c", CODE]


# --------------------------------------------------------------------------------------------
# Statistics.

def pct(xs, p):
    if not xs:
        return None
    s = sorted(xs)
    k = (len(s) - 1) * p / 100.0
    lo = int(k)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def summarize(lat_ms, wall_s, n_ok, n_fail, errors):
    return {
        "n": n_ok, "failed": n_fail,
        "p50_ms": pct(lat_ms, 50), "p95_ms": pct(lat_ms, 95), "p99_ms": pct(lat_ms, 99),
        "mean_ms": sum(lat_ms) / len(lat_ms) if lat_ms else None,
        "min_ms": min(lat_ms) if lat_ms else None, "max_ms": max(lat_ms) if lat_ms else None,
        "wall_s": wall_s,
        "throughput_per_s": (n_ok / wall_s) if wall_s and n_ok else None,
        "errors": errors[:5],
    }


# --------------------------------------------------------------------------------------------
# The daemon's footprint.

def daemon_pid():
    p = subprocess.run(["systemctl", "show", "-P", "MainPID", "sandboxd"], stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, timeout=10)
    pid = int(p.stdout.decode().strip() or 0)
    return pid or None


def daemon_footprint():
    pid = daemon_pid()
    if not pid:
        return {"pid": None}
    r = {"pid": pid}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("VmRSS", "VmHWM", "Threads"):
                    r[k] = int(v.split()[0])
        r["fds"] = len(os.listdir(f"/proc/{pid}/fd"))
    except OSError as e:
        r["error"] = str(e)
    return r


class Sampler(threading.Thread):
    """Samples the daemon's RSS and fd count every 100 ms during the load: the peak, not just the end."""

    def __init__(self):
        super().__init__(daemon=True)
        self.stop_ev = threading.Event()
        self.max_rss = 0
        self.max_fds = 0
        self.pids = set()

    def run(self):
        pid = daemon_pid()
        while not self.stop_ev.wait(0.1):
            if not pid:
                break
            try:
                with open(f"/proc/{pid}/status") as f:
                    for line in f:
                        if line.startswith("VmRSS:"):
                            self.max_rss = max(self.max_rss, int(line.split()[1]))
                self.max_fds = max(self.max_fds, len(os.listdir(f"/proc/{pid}/fd")))
                self.pids.add(pid)
            except OSError:
                # The daemon restarted? Follow the new MainPID.
                pid = daemon_pid()
                if pid:
                    self.pids.add(pid)


# --------------------------------------------------------------------------------------------

class Runner:
    def __init__(self, key, label, fn, note=""):
        self.key, self.label, self.fn, self.note = key, label, fn, note


def timed(fn):
    t = time.perf_counter()
    try:
        fn()
        return (time.perf_counter() - t) * 1000.0, None
    except Exception as e:  # noqa: BLE001 — every failure is recorded, the run goes on
        return None, f"{type(e).__name__}: {e}"


class Bench:
    def __init__(self, args):
        self.args = args
        self.deadline = time.monotonic() + args.max_seconds
        self.truncated = False

    def out_of_time(self):
        if time.monotonic() > self.deadline:
            if not self.truncated:
                print(f"bench: --max-seconds={self.args.max_seconds} reached, skipping the remaining runs",
                      file=sys.stderr)
            self.truncated = True
            return True
        return False

    def latency_c1(self, runners, n):
        """Concurrency 1, interleaved: every round runs each runner once, in a shuffled order."""
        lat = {r.key: [] for r in runners}
        errs = {r.key: [] for r in runners}
        rng = random.Random(1)
        for i in range(n):
            if self.out_of_time():
                break
            order = list(runners)
            rng.shuffle(order)
            for r in order:
                ms, err = timed(r.fn)
                if err:
                    errs[r.key].append(err)
                else:
                    lat[r.key].append(ms)
            if (i + 1) % max(1, n // 5) == 0:
                print(f"  c=1: {i + 1}/{n} rounds", file=sys.stderr, flush=True)
        return {r.key: summarize(lat[r.key], sum(lat[r.key]) / 1000.0, len(lat[r.key]), len(errs[r.key]), errs[r.key])
                for r in runners}

    def throughput(self, runners, n, conc, rounds=3):
        """Concurrency `conc`: n runs per runner, split into `rounds` blocks; the blocks of all runners
        are interleaved (shuffled per round), so slow drift of the machine hits everyone alike."""
        lat = {r.key: [] for r in runners}
        errs = {r.key: [] for r in runners}
        wall = {r.key: 0.0 for r in runners}
        rng = random.Random(conc)
        per_round = [n // rounds + (1 if i < n % rounds else 0) for i in range(rounds)]
        with ThreadPoolExecutor(max_workers=conc) as pool:
            for k, m in enumerate(per_round):
                if self.out_of_time():
                    break
                order = list(runners)
                rng.shuffle(order)
                for r in order:
                    t = time.perf_counter()
                    for ms, err in pool.map(lambda _i, fn=r.fn: timed(fn), range(m)):
                        if err:
                            errs[r.key].append(err)
                        else:
                            lat[r.key].append(ms)
                    wall[r.key] += time.perf_counter() - t
                print(f"  c={conc}: round {k + 1}/{rounds}", file=sys.stderr, flush=True)
        return {r.key: summarize(lat[r.key], wall[r.key], len(lat[r.key]), len(errs[r.key]), errs[r.key])
                for r in runners}


def fmt(v, width=7, digits=1):
    if v is None:
        return "-".rjust(width)
    return f"{v:{width}.{digits}f}"


def ratio(a, b):
    if a is None or b is None or b == 0:
        return None
    return a / b


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="15 runs at c=1, 30 at c=2/8, no ablation")
    ap.add_argument("--n1", type=int, help="runs per runner at concurrency 1 (default 60, quick 15)")
    ap.add_argument("--nc", type=int, help="runs per runner at concurrency 2 and 8 (default 120, quick 30)")
    ap.add_argument("--ablation-n", type=int, default=20, help="runs per variant in the ablation (default 20)")
    ap.add_argument("--max-seconds", type=int, default=1500, help="stop starting new runs after this long")
    ap.add_argument("--results", default=os.path.join(HERE, "results"))
    args = ap.parse_args()
    n1 = args.n1 or (15 if args.quick else 60)
    nc = args.nc or (30 if args.quick else 120)
    for v in (n1, nc, args.ablation_n):
        if not 1 <= v <= 2000:
            ap.error("run counts must be within 1..2000")

    sock = os.environ.get("SANDBOXD_SOCKET")
    build = os.environ.get("SANDBOXD_BUILD_DIR")
    if not sock or not build:
        print("bench.py: run me through bench/run (SANDBOXD_SOCKET / SANDBOXD_BUILD_DIR unset)", file=sys.stderr)
        return 2
    ctl = os.path.join(build, "sandboxctl", "sandboxctl")
    setup_bench_root()

    api = Api(sock)
    for _ in range(100):
        try:
            api.health()
            break
        except (OSError, BenchError, http.client.HTTPException):
            time.sleep(0.1)
    health_before = api.health()

    ctl_env = dict(os.environ, SANDBOXD_SOCKET=sock)
    runners = [
        Runner("bare", "bare python3", lambda: run_cmd([PYTHON, "-c", CODE])),
        Runner("sandboxd_api", "sandboxd HTTP API", api.run_once,
               "POST /v1/executions?wait=true, persistent AF_UNIX connection per worker"),
        Runner("sandboxctl", "sandboxctl run", lambda: run_cmd([ctl, "run", "-c", CODE], env=ctl_env)),
        Runner("sr_naive", "systemd-run (naive hardening)", lambda: run_cmd(systemd_run_argv(naive_props()))),
        Runner("sr_profile", "systemd-run (sandboxd profile)", lambda: run_cmd(systemd_run_argv(profile_props()))),
    ]
    skipped = {}
    if shutil.which("bwrap"):
        runners.append(Runner("bwrap", "bwrap --unshare-all", lambda: run_cmd(BWRAP_ARGV)))
    else:
        skipped["bwrap"] = "skipped: not installed (tools/install-deps installs bubblewrap)"
    if shutil.which("runsc"):
        runners.append(Runner("runsc", "gVisor runsc do", lambda: run_cmd(
            ["runsc", "--network=none", "--platform=ptrace", "do", PYTHON, "-c", CODE])))
    else:
        skipped["runsc"] = "skipped: not installed"

    # Sanity first: every runner must work once, else it is dropped (with its error) rather than
    # polluting every table with failures.
    live = []
    for r in runners:
        ms, err = timed(r.fn)
        if err:
            skipped[r.key] = f"skipped: first run failed: {err}"
            print(f"bench: {r.label}: {skipped[r.key]}", file=sys.stderr)
        else:
            live.append(r)
    runners = live
    if not any(r.key == "sandboxd_api" for r in runners):
        print("bench: sandboxd does not run print(1); see the journal below", file=sys.stderr)

    fp_start = daemon_footprint()
    # Warm-up: page cache, systemd's unit-load paths, the daemon's allocator. Not measured.
    for _ in range(3):
        for r in runners:
            timed(r.fn)
    time.sleep(0.5)
    fp_idle = daemon_footprint()

    b = Bench(args)
    sampler = Sampler()
    sampler.start()
    t0 = time.monotonic()
    print(f"bench: concurrency 1, {n1} runs each, interleaved", file=sys.stderr, flush=True)
    api.phase = "c1"
    res_c1 = b.latency_c1(runners, n1)
    res_cn = {}
    for conc in (2, 8):
        api.phase = f"c{conc}"
        print(f"bench: concurrency {conc}, {nc} runs each", file=sys.stderr, flush=True)
        res_cn[conc] = b.throughput(runners, nc, conc)
    load_s = time.monotonic() - t0
    api.phase = "after"
    sampler.stop_ev.set()
    sampler.join()

    # Let the daemon settle (units collected, workspaces unmounted), then look again.
    for _ in range(50):
        try:
            h = api.health()
            if not h.get("running") and not h.get("queued"):
                break
        except Exception:  # noqa: BLE001
            pass
        time.sleep(0.1)
    time.sleep(1.0)
    fp_after = daemon_footprint()
    health_after = api.health()

    ablation = None
    if not args.quick and not b.out_of_time():
        print(f"bench: ablation, {args.ablation_n} runs each at concurrency 1", file=sys.stderr, flush=True)
        variants = [Runner("full", "sandboxd profile (all)", lambda: run_cmd(systemd_run_argv(profile_props())))]
        for drop, label in (("DynamicUser", "- DynamicUser"), ("PrivateNetwork", "- PrivateNetwork"),
                            ("ProtectProc", "- ProtectProc=invisible, ProcSubset=pid"),
                            ("PrivateDevices", "- PrivateDevices"),
                            ("Binds", "- BindPaths (workspace,/tmp,/var/tmp) + TemporaryFileSystem=/dev/shm")):
            variants.append(Runner(drop, label, lambda d=drop: run_cmd(systemd_run_argv(profile_props(drop=(d,))))))
        ok = []
        for v in variants:
            _, err = timed(v.fn)
            if err:
                print(f"bench: ablation {v.label}: first run failed: {err}", file=sys.stderr)
            else:
                ok.append(v)
        ablation = {"variants": {v.key: v.label for v in ok}, "results": b.latency_c1(ok, args.ablation_n)}
    api.close_all()

    # ---------------------------------------------------------------------------------------
    # Report.
    labels = {r.key: r.label for r in runners}
    keys = [r.key for r in runners]
    c1 = res_c1
    base_bare = c1.get("bare", {}).get("p50_ms")
    base_naive = c1.get("sr_naive", {}).get("p50_ms")
    tp8_bare = res_cn[8].get("bare", {}).get("throughput_per_s")
    tp8_naive = res_cn[8].get("sr_naive", {}).get("throughput_per_s")

    lines = []
    P = lines.append
    P("")
    P(f"sandboxd bench — print(1) in Python — {'quick' if args.quick else 'full'} run, "
      f"n={n1} at c=1, n={nc} at c=2 and c=8, interleaved")
    P(f"{platform.node()} · kernel {platform.release()} · {os.cpu_count()} CPUs · "
      f"{systemd_version()} · cgroup {cgroup_mode()}")
    P("")
    w = max(len(labels[k]) for k in keys) + 1
    P(f"{'latency, ms':{w}} |{'c=1 p50':>8}{'p95':>8}{'p99':>8} |{'c=2 /s':>8}{'p50':>8}{'p95':>8} |"
      f"{'c=8 /s':>8}{'p50':>8}{'p95':>8} | fail")
    P("-" * (w + 84))
    for k in keys:
        a, b2, b8 = c1[k], res_cn[2][k], res_cn[8][k]
        fails = a["failed"] + b2["failed"] + b8["failed"]
        P(f"{labels[k]:{w}} |{fmt(a['p50_ms'], 8)}{fmt(a['p95_ms'], 8)}{fmt(a['p99_ms'], 8)} |"
          f"{fmt(b2['throughput_per_s'], 8)}{fmt(b2['p50_ms'], 8)}{fmt(b2['p95_ms'], 8)} |"
          f"{fmt(b8['throughput_per_s'], 8)}{fmt(b8['p50_ms'], 8)}{fmt(b8['p95_ms'], 8)} | {fails}")
    P("")
    P(f"{'ratios':{w}} |{'c=1 p50 ×bare':>15}{'×naive':>9} |{'c=8 /s ×bare':>14}{'×naive':>9}")
    P("-" * (w + 50))
    for k in keys:
        p50 = c1[k]["p50_ms"]
        tp = res_cn[8][k]["throughput_per_s"]
        P(f"{labels[k]:{w}} |{fmt(ratio(p50, base_bare), 15, 2)}{fmt(ratio(p50, base_naive), 9, 2)} |"
          f"{fmt(ratio(tp, tp8_bare), 14, 2)}{fmt(ratio(tp, tp8_naive), 9, 2)}")
    if "sandboxd_api" in keys and "sr_naive" in keys:
        P("")
        P(f"HEADLINE: sandboxd (HTTP API) p50 {fmt(c1['sandboxd_api']['p50_ms'], 0)} ms vs systemd-run (naive "
          f"hardening) {fmt(base_naive, 0)} ms = ×{fmt(ratio(c1['sandboxd_api']['p50_ms'], base_naive), 0, 2)}; "
          f"c=8 throughput {fmt(res_cn[8]['sandboxd_api']['throughput_per_s'], 0)}/s vs "
          f"{fmt(tp8_naive, 0)}/s = ×{fmt(ratio(res_cn[8]['sandboxd_api']['throughput_per_s'], tp8_naive), 0, 2)}")
    if api.server_ms:
        P(f"sandboxd's duration_ms (unit ExecMainStart→exit, all API runs): p50 {fmt(pct(api.server_ms, 50), 0)} ms, "
          f"p95 {fmt(pct(api.server_ms, 95), 0)} ms; HTTP connections opened: {api.connections}, "
          f"reconnects: {api.reconnects}")
    if api.phases:
        P("")
        P("where sandboxd's time goes (HTTP API runs; the daemon's timestamps have 1 ms resolution), p50 / p95 ms:")
        cols = (("client_to_created", "send→created"), ("created_to_started", "created→started"),
                ("started_to_finished", "started→finished"), ("finished_to_client", "finished→answer"))
        P(f"  {'':5}" + "".join(f"{name:>20}" for _, name in cols))
        for phk in ("c1", "c2", "c8"):
            ph = api.phases.get(phk)
            if not ph:
                continue
            P(f"  {phk:5}" + "".join(f"{fmt(pct(ph[c], 50), 9)} /{fmt(pct(ph[c], 95), 8)} " for c, _ in cols))
    for k, why in skipped.items():
        P(f"{k}: {why}")
    P("")
    P("sandboxd daemon footprint        VmRSS KiB   VmHWM KiB   fds")
    for name, f in (("at start", fp_start), ("idle, after warm-up", fp_idle), ("after the load (settled)", fp_after)):
        P(f"  {name:29} {f.get('VmRSS', '-'):>9}   {f.get('VmHWM', '-'):>9}   {f.get('fds', '-'):>4}")
    P(f"  {'peak during the load (100 ms)':29} {sampler.max_rss or '-':>9}   {'':>9}   {sampler.max_fds or '-':>4}")
    if fp_start.get("pid") != fp_after.get("pid") or len(sampler.pids) > 1:
        P(f"  WARNING: sandboxd's MainPID changed during the run ({fp_start.get('pid')} -> {fp_after.get('pid')}): "
          "it restarted")
    if ablation:
        r = ablation["results"]
        full = r.get("full", {}).get("p50_ms")
        P("")
        P(f"ablation: systemd-run (sandboxd profile) minus one property group, c=1, n={args.ablation_n}")
        wa = max(len(v) for v in ablation["variants"].values()) + 1
        P(f"{'variant':{wa}} |{'p50':>8}{'p95':>8} |{'saves (p50)':>12}")
        P("-" * (wa + 32))
        for k, label in ablation["variants"].items():
            x = r[k]
            saves = (full - x["p50_ms"]) if (full is not None and x["p50_ms"] is not None and k != "full") else None
            P(f"{label:{wa}} |{fmt(x['p50_ms'], 8)}{fmt(x['p95_ms'], 8)} |{fmt(saves, 12)}"
              + (f"   ({x['failed']} failed)" if x["failed"] else ""))
    if b.truncated:
        P("")
        P(f"NOTE: stopped early at --max-seconds={args.max_seconds}; counts are smaller than asked")
    report = "\n".join(lines)
    print(report)

    # Errors, at most a few per runner.
    any_fail = False
    for phase, res in (("c=1", c1), ("c=2", res_cn[2]), ("c=8", res_cn[8])):
        for k, x in res.items():
            if x["failed"]:
                any_fail = True
                print(f"errors {phase} {labels[k]} ({x['failed']}): {x['errors'][:2]}", file=sys.stderr)

    os.makedirs(args.results, exist_ok=True)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    path = os.path.join(args.results, f"bench-{stamp}.json")
    doc = {
        "schema": 1, "when": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "mode": "quick" if args.quick else "full", "code": CODE,
        "host": {"node": platform.node(), "kernel": platform.release(), "cpus": os.cpu_count(),
                 "systemd": systemd_version(), "cgroup": cgroup_mode(), "python": platform.python_version()},
        "counts": {"c1": n1, "c2": nc, "c8": nc, "ablation": args.ablation_n if ablation else 0},
        "runners": {r.key: {"label": r.label, "note": r.note} for r in runners},
        "commands": {
            "bare": [PYTHON, "-c", CODE], "sandboxctl": [ctl, "run", "-c", CODE],
            "sr_naive": systemd_run_argv(naive_props()), "sr_profile": systemd_run_argv(profile_props()),
            "bwrap": BWRAP_ARGV,
        },
        "skipped": skipped,
        "c1": c1, "c2": res_cn[2], "c8": res_cn[8],
        "ratios": {k: {"c1_p50_vs_bare": ratio(c1[k]["p50_ms"], base_bare),
                       "c1_p50_vs_naive": ratio(c1[k]["p50_ms"], base_naive),
                       "c8_throughput_vs_bare": ratio(res_cn[8][k]["throughput_per_s"], tp8_bare),
                       "c8_throughput_vs_naive": ratio(res_cn[8][k]["throughput_per_s"], tp8_naive)} for k in keys},
        "sandboxd": {
            "server_duration_ms": {"p50": pct(api.server_ms, 50), "p95": pct(api.server_ms, 95), "n": len(api.server_ms)},
            "phases_ms": {phk: {c: {"p50": pct(v, 50), "p95": pct(v, 95), "max": max(v) if v else None, "n": len(v)}
                                for c, v in ph.items()} for phk, ph in api.phases.items()},
            "http_connections": api.connections, "http_reconnects": api.reconnects,
            "footprint": {"start": fp_start, "idle": fp_idle, "after": fp_after,
                          "peak_rss_kib": sampler.max_rss, "peak_fds": sampler.max_fds,
                          "pids_seen": sorted(sampler.pids)},
            "health_before": health_before, "health_after": health_after,
        },
        "ablation": ablation, "load_seconds": load_s, "truncated": b.truncated,
    }
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
    print(f"\nresults: {os.path.relpath(path)}")
    shutil.rmtree(BENCH_DIR, ignore_errors=True)
    if "sandboxd_api" not in keys:
        return 1
    return 3 if any_fail else 0


def systemd_version():
    try:
        p = subprocess.run(["systemctl", "--version"], stdout=subprocess.PIPE, timeout=10)
        return p.stdout.decode().split("\n")[0].split("(")[0].strip()
    except (OSError, subprocess.SubprocessError):
        return "systemd ?"


def cgroup_mode():
    try:
        st = os.statvfs("/sys/fs/cgroup/unified") if os.path.isdir("/sys/fs/cgroup/unified") else None
    except OSError:
        st = None
    if os.path.exists("/sys/fs/cgroup/cgroup.controllers"):
        return "v2 (unified)"
    return "hybrid (v1 controllers)" if st is not None else "v1"


if __name__ == "__main__":
    sys.exit(main())

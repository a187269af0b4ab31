#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""sandboxd against its peers, interleaved in one run: Python `print(1)`, Python `import numpy`,
Node `console.log(1)` and Bash `echo 1`.

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
import resource
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
NODE = "/usr/bin/node"
BASH = "/bin/bash"
RUN_TIMEOUT = 60          # seconds, one execution, any runner
BENCH_DIR = "/run/sandbox-bench"   # private tmpfs inside the harness

# /etc entries sandboxd binds read-only (sandboxd/unit/unit-props.c, etc_entries[]).
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
        self.phases = {}      # "workload:phase" -> {"client_to_created": [...], "created_to_started": [...], ...}
        self.sandbox_cpu = {}  # workload key -> [cpu_time_ms of every successful API run]
        self.server_ms_w = {}  # workload key -> [duration_ms]

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

    def run_once(self, w):
        t0 = time.time()
        status, payload = self.request("POST", "/v1/executions?wait=true",
                                       {"language": w.language, "code": w.code})
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
                self.server_ms_w.setdefault(w.key, []).append(float(e["duration_ms"]))
            if isinstance(e.get("cpu_time_ms"), (int, float)):
                self.sandbox_cpu.setdefault(w.key, []).append(float(e["cpu_time_ms"]))
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

class Workload:
    def __init__(self, key, label, language, code, bare_argv):
        self.key, self.label, self.language, self.code, self.bare_argv = key, label, language, code, bare_argv


WORKLOADS = [
    Workload("print", "Python print(1)", "python", CODE, [PYTHON, "-c", CODE]),
    Workload("numpy", "Python import numpy", "python", "import numpy; print(1)",
             [PYTHON, "-c", "import numpy; print(1)"]),
    Workload("node", "Node console.log(1)", "node", "console.log(1)", [NODE, "-e", "console.log(1)"]),
    Workload("bash", "Bash echo 1", "bash", "echo 1", [BASH, "-c", "echo 1"]),
]


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
        "RuntimeMaxSec=30",
        # @pkey: node (V8) calls pkey_alloc(), which @system-service lacks (SIGSYS, exit 255)
        "SystemCallFilter=@system-service @pkey",
    ]


def profile_props(drop=()):
    """sandboxd's unit profile (sandboxd/unit/unit-props.c) as far as systemd-run can express it.
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


def systemd_run_argv(props, argv=(PYTHON, "-c", CODE)):
    return ["systemd-run", "--wait", "--pipe", "--quiet", "--collect", *prop_args(props), *argv]


def bwrap_argv(argv=(PYTHON, "-c", CODE)):
    return ["bwrap", "--unshare-all", "--die-with-parent", "--ro-bind", "/usr", "/usr",
            "--symlink", "usr/lib64", "/lib64", "--symlink", "usr/lib", "/lib", "--symlink", "usr/bin", "/bin",
            # the same /etc entries sandboxd binds (numpy finds libblas through /etc/alternatives)
            *[a for e in ETC_ENTRIES for a in ("--ro-bind-try", e, e)],
            "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", *argv]


def runsc_argv(argv=(PYTHON, "-c", CODE)):
    return ["runsc", "--network=none", "--platform=ptrace", "do", *argv]


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

def wait_idle(api, timeout_s):
    """Wait (bounded) until the daemon runs and queues nothing, then one more second to settle."""
    for _ in range(int(timeout_s * 10)):
        try:
            h = api.health()
            if not h.get("running") and not h.get("queued"):
                break
        except Exception:  # noqa: BLE001
            pass
        time.sleep(0.1)
    time.sleep(1.0)


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

# CPU accounting: utime+stime of the daemon, systemd (PID 1 of the harness), dbus-daemon and
# journald from /proc/<pid>/stat; the waited-for child processes of this script (the client
# commands: bare interpreter, bwrap + program, systemd-run, sandboxctl) from RUSAGE_CHILDREN;
# the whole machine from /proc/stat.

CLK_TCK = os.sysconf("SC_CLK_TCK")


def unit_pid(unit):
    try:
        p = subprocess.run(["systemctl", "show", "-P", "MainPID", unit], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, timeout=10)
        return int(p.stdout.decode().strip() or 0) or None
    except (OSError, ValueError, subprocess.SubprocessError):
        return None


def proc_cpu_ms(pid):
    if not pid:
        return None
    try:
        with open(f"/proc/{pid}/stat") as f:
            rest = f.read().rsplit(")", 1)[1].split()
        # fields after ") ": state(3) ... utime(14) stime(15): indexes 11 and 12 in `rest`
        return (int(rest[11]) + int(rest[12])) * 1000.0 / CLK_TCK
    except (OSError, IndexError, ValueError):
        return None


def machine_busy_ms():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    # user nice system idle iowait irq softirq steal ...
    busy = v[0] + v[1] + v[2] + v[5] + v[6] + (v[7] if len(v) > 7 else 0)
    return busy * 1000.0 / CLK_TCK


CPU_KEYS = ("daemon", "systemd", "bus_journal", "client", "machine")


class CpuProbe:
    def __init__(self):
        self.refresh()

    def refresh(self):
        self.pids = {"daemon": daemon_pid(), "systemd": 1,
                     "dbus": unit_pid("dbus.service"), "journald": unit_pid("systemd-journald.service")}

    def snap(self):
        r = resource.getrusage(resource.RUSAGE_CHILDREN)
        d = {"pids": dict(self.pids),
             "daemon": proc_cpu_ms(self.pids["daemon"]), "systemd": proc_cpu_ms(1),
             "client": (r.ru_utime + r.ru_stime) * 1000.0, "machine": machine_busy_ms()}
        a, b = proc_cpu_ms(self.pids["dbus"]), proc_cpu_ms(self.pids["journald"])
        d["bus_journal"] = (a or 0.0) + (b or 0.0) if (a is not None or b is not None) else None
        return d

    @staticmethod
    def delta(before, after):
        out = {}
        for k in CPU_KEYS:
            if before.get(k) is None or after.get(k) is None or \
                    (k == "daemon" and before["pids"]["daemon"] != after["pids"]["daemon"]):
                out[k] = None
            else:
                out[k] = after[k] - before[k]
        return out


class CpuAcc:
    """Sum of CPU deltas over the blocks of one (workload, runner), and the executions they held."""

    def __init__(self):
        self.ms = {k: 0.0 for k in CPU_KEYS}
        self.bad = set()
        self.n = 0

    def add(self, d, n):
        for k in CPU_KEYS:
            if d.get(k) is None:
                self.bad.add(k)
            else:
                self.ms[k] += d[k]
        self.n += n

    def per_exec(self):
        if not self.n:
            return {k: None for k in CPU_KEYS}
        return {k: (None if k in self.bad else self.ms[k] / self.n) for k in CPU_KEYS}


# --------------------------------------------------------------------------------------------

class Runner:
    def __init__(self, key, label, fn, note="", sandboxd=False):
        self.key, self.label, self.fn, self.note, self.sandboxd = key, label, fn, note, sandboxd


def timed(fn):
    t = time.perf_counter()
    try:
        fn()
        return (time.perf_counter() - t) * 1000.0, None
    except Exception as e:  # noqa: BLE001 — every failure is recorded, the run goes on
        return None, f"{type(e).__name__}: {e}"


class Bench:
    def __init__(self, args, api, probe):
        self.args = args
        self.api = api
        self.probe = probe
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

    def settle(self, sandboxd):
        """After a block: let the daemon finish its trailing work (unit stop, workspace return), so
        that its CPU is charged to the block that caused it. Bounded: 5 s."""
        if sandboxd:
            for _ in range(100):
                try:
                    h = self.api.health()
                    if not h.get("running") and not h.get("queued"):
                        break
                except Exception:  # noqa: BLE001
                    pass
                time.sleep(0.05)
        time.sleep(0.05)

    def latency_c1(self, runners, n, label=""):
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
            if (i + 1) % max(1, n // 3) == 0:
                print(f"  {label} c=1: {i + 1}/{n} rounds", file=sys.stderr, flush=True)
        return {r.key: summarize(lat[r.key], sum(lat[r.key]) / 1000.0, len(lat[r.key]), len(errs[r.key]), errs[r.key])
                for r in runners}

    def throughput(self, runners, n, conc, cpu=None, label=""):
        """Concurrency `conc`: n runs per runner, split into up to 3 blocks of at least `conc` runs;
        the blocks of all runners are interleaved (shuffled per round), so slow drift of the machine
        hits everyone alike. CPU is sampled around every block (after the daemon settled) and added
        to cpu[runner key]."""
        lat = {r.key: [] for r in runners}
        errs = {r.key: [] for r in runners}
        wall = {r.key: 0.0 for r in runners}
        rng = random.Random(conc)
        rounds = max(1, min(3, n // conc))
        per_round = [n // rounds + (1 if i < n % rounds else 0) for i in range(rounds)]
        with ThreadPoolExecutor(max_workers=conc) as pool:
            for k, m in enumerate(per_round):
                if self.out_of_time():
                    break
                order = list(runners)
                rng.shuffle(order)
                for r in order:
                    before = self.probe.snap()
                    t = time.perf_counter()
                    nfail0 = len(errs[r.key])
                    nok0 = len(lat[r.key])
                    for ms, err in pool.map(lambda _i, fn=r.fn: timed(fn), range(m)):
                        if err:
                            errs[r.key].append(err)
                        else:
                            lat[r.key].append(ms)
                    wall[r.key] += time.perf_counter() - t
                    self.settle(r.sandboxd)
                    after = self.probe.snap()
                    if cpu is not None:
                        cpu.setdefault(r.key, CpuAcc()).add(
                            CpuProbe.delta(before, after),
                            (len(lat[r.key]) - nok0) + (len(errs[r.key]) - nfail0))
                print(f"  {label} c={conc}: round {k + 1}/{rounds}", file=sys.stderr, flush=True)
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


def set_max_concurrent(api, n):
    """MaxConcurrent=n through a drop-in in $SANDBOXD_CONFIG_DIR/sandboxd.conf.d/ and a reload
    (n=None removes the drop-in). Returns the slots /v1/health reports afterwards, or raises."""
    confdir = os.environ.get("SANDBOXD_CONFIG_DIR")
    if not confdir:
        raise BenchError("SANDBOXD_CONFIG_DIR is not set (run through bench/run)")
    d = os.path.join(confdir, "sandboxd.conf.d")
    path = os.path.join(d, "90-bench-slots.conf")
    if n is None:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
    else:
        os.makedirs(d, exist_ok=True)
        with open(path, "w") as f:
            f.write(f"# written by bench/ (removed when it ends)\n[Daemon]\nMaxConcurrent={n}\n")
    p = subprocess.run(["systemctl", "reload", "sandboxd.service"], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=30)
    if p.returncode != 0:
        raise BenchError(f"systemctl reload sandboxd.service: {p.stdout.decode(errors='replace')[-300:]}")
    want = n
    slots = None
    for _ in range(100):
        slots = api.health().get("slots")
        if want is None or slots == want:
            return slots
        time.sleep(0.1)
    raise BenchError(f"after the reload /v1/health reports slots={slots}, expected {want}")


def make_runners(w, api, ctl, ctl_env):
    runners = [
        Runner("bare", f"bare {os.path.basename(w.bare_argv[0])}", lambda: run_cmd(w.bare_argv)),
        Runner("sandboxd_api", "sandboxd HTTP API", lambda: api.run_once(w),
               "POST /v1/executions?wait=true, persistent AF_UNIX connection per worker", sandboxd=True),
        Runner("sandboxctl", "sandboxctl run", lambda: run_cmd([ctl, "run", "-l", w.language, "-c", w.code], env=ctl_env),
               sandboxd=True),
        Runner("sr_naive", "systemd-run (naive hardening)", lambda: run_cmd(systemd_run_argv(naive_props(), w.bare_argv))),
        Runner("sr_profile", "systemd-run (sandboxd profile)",
               lambda: run_cmd(systemd_run_argv(profile_props(), w.bare_argv))),
    ]
    skipped = {}
    if shutil.which("bwrap"):
        runners.append(Runner("bwrap", "bwrap --unshare-all", lambda: run_cmd(bwrap_argv(w.bare_argv))))
    else:
        skipped["bwrap"] = "skipped: not installed (tools/install-deps installs bubblewrap)"
    if shutil.which("runsc"):
        runners.append(Runner("runsc", "gVisor runsc do (ptrace)", lambda: run_cmd(runsc_argv(w.bare_argv))))
    else:
        skipped["runsc"] = "skipped: not installed"
    return runners, skipped


def commands_of(w, ctl):
    return {"bare": w.bare_argv, "sandboxd_api": {"language": w.language, "code": w.code},
            "sandboxctl": [ctl, "run", "-l", w.language, "-c", w.code],
            "sr_naive": systemd_run_argv(naive_props(), w.bare_argv),
            "sr_profile": systemd_run_argv(profile_props(), w.bare_argv),
            "bwrap": bwrap_argv(w.bare_argv), "runsc": runsc_argv(w.bare_argv)}
def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true",
                    help="print(1): 15 runs at c=1, 30 at c=2/8/32; other workloads 6 and 16; no ablation")
    ap.add_argument("--n1", type=int, help="print(1): runs per runner at c=1 (default 60, quick 15)")
    ap.add_argument("--nc", type=int, help="print(1): runs per runner at each c>1 (default 120, quick 30)")
    ap.add_argument("--n1-other", type=int, help="numpy/node/bash: runs per runner at c=1 (default 25, quick 6)")
    ap.add_argument("--nc-other", type=int, help="numpy/node/bash: runs per runner at each c>1 (default 50, quick 16)")
    ap.add_argument("--workloads", default=",".join(w.key for w in WORKLOADS),
                    help="comma-separated subset of " + ",".join(w.key for w in WORKLOADS))
    ap.add_argument("--concurrency", default="2,8,32", help="the concurrency levels above 1 (default 2,8,32)")
    ap.add_argument("--no-mc32", action="store_true",
                    help="skip the c=32 run of the sandboxd rows with MaxConcurrent=32")
    ap.add_argument("--ablation-n", type=int, default=20, help="runs per variant in the ablation (default 20)")
    ap.add_argument("--max-seconds", type=int, default=1200, help="stop starting new runs after this long")
    ap.add_argument("--results", default=os.path.join(HERE, "results"))
    args = ap.parse_args()
    n1 = args.n1 or (15 if args.quick else 60)
    nc = args.nc or (30 if args.quick else 120)
    n1o = args.n1_other or (6 if args.quick else 25)
    nco = args.nc_other or (16 if args.quick else 50)
    for v in (n1, nc, n1o, nco, args.ablation_n):
        if not 1 <= v <= 2000:
            ap.error("run counts must be within 1..2000")
    wmap = {w.key: w for w in WORKLOADS}
    try:
        workloads = [wmap[k] for k in args.workloads.split(",") if k]
        concs = sorted({int(c) for c in args.concurrency.split(",") if c})
    except (KeyError, ValueError) as e:
        ap.error(f"bad --workloads/--concurrency: {e}")
    if not workloads or any(not 2 <= c <= 64 for c in concs):
        ap.error("need at least one workload; concurrency levels within 2..64")

    def counts(w):
        n_1, n_c = (n1, nc) if w.key == "print" else (n1o, nco)
        return n_1, {c: max(n_c, 2 * c if not args.quick else c) for c in concs}

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
    probe = CpuProbe()
    fp_start = daemon_footprint()
    t_start = time.monotonic()

    # Sanity first: every runner must work once per workload, else it is dropped (with its error)
    # rather than polluting every table with failures. Then warm up: 2 more unmeasured runs each.
    plan = []
    skipped = {}
    for w in workloads:
        runners, sk = make_runners(w, api, ctl, ctl_env)
        for k, why in sk.items():
            skipped.setdefault(k, why)
        live = []
        for r in runners:
            _, err = timed(r.fn)
            if err:
                skipped[f"{w.key}/{r.key}"] = f"skipped: first run failed: {err}"
                print(f"bench: {w.label} / {r.label}: {skipped[f'{w.key}/{r.key}']}", file=sys.stderr)
            else:
                live.append(r)
        for _ in range(2):
            for r in live:
                timed(r.fn)
        plan.append((w, live))
    if not any(r.key == "sandboxd_api" for w, rs in plan if w.key == "print" for r in rs):
        print("bench: sandboxd does not run print(1); see the journal below", file=sys.stderr)
    time.sleep(0.5)
    fp_idle = daemon_footprint()
    probe.refresh()

    b = Bench(args, api, probe)
    sampler = Sampler()
    sampler.start()
    t0 = time.monotonic()
    res = {}
    cpu = {}
    for w, runners in plan:
        n_1, n_c = counts(w)
        res[w.key] = {}
        cpu[w.key] = {}
        print(f"bench: {w.label}: concurrency 1, {n_1} runs each, interleaved", file=sys.stderr, flush=True)
        api.phase = f"{w.key}:c1"
        res[w.key]["c1"] = b.latency_c1(runners, n_1, w.key)
        for conc in concs:
            api.phase = f"{w.key}:c{conc}"
            print(f"bench: {w.label}: concurrency {conc}, {n_c[conc]} runs each", file=sys.stderr, flush=True)
            res[w.key][f"c{conc}"] = b.throughput(runners, n_c[conc], conc, cpu=cpu[w.key], label=w.key)

    # c=32 again for the sandboxd rows, with MaxConcurrent=32 (drop-in + reload), then back.
    mc32 = {"done": False}
    if 32 in concs and not args.no_mc32 and not b.out_of_time():
        try:
            slots_before = api.health().get("slots")
            mc32["slots_before"] = slots_before
            mc32["slots"] = set_max_concurrent(api, 32)
            probe.refresh()
            for w, runners in plan:
                sd = [r for r in runners if r.sandboxd]
                if not sd:
                    continue
                _, n_c = counts(w)
                api.phase = f"{w.key}:c32mc32"
                print(f"bench: {w.label}: concurrency 32 with MaxConcurrent=32, {n_c[32]} runs each",
                      file=sys.stderr, flush=True)
                res[w.key]["c32_mc32"] = b.throughput(sd, n_c[32], 32, cpu=cpu[w.key].setdefault("_mc32", {}),
                                                      label=w.key)
            mc32["done"] = True
        except (BenchError, OSError, subprocess.SubprocessError) as e:
            mc32["error"] = str(e)
            print(f"bench: MaxConcurrent=32 run failed: {e}", file=sys.stderr)
        finally:
            try:
                mc32["slots_after"] = set_max_concurrent(api, None)
            except (BenchError, OSError, subprocess.SubprocessError) as e:
                print(f"bench: could not restore MaxConcurrent: {e}", file=sys.stderr)
    load_s = time.monotonic() - t0
    api.phase = "after"
    sampler.stop_ev.set()
    sampler.join()

    wait_idle(api, 5.0)
    fp_after = daemon_footprint()
    health_after = api.health()

    ablation = None
    if not args.quick and not b.out_of_time() and any(w.key == "print" for w in workloads):
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
        ablation = {"variants": {v.key: v.label for v in ok}, "results": b.latency_c1(ok, args.ablation_n, "ablation")}
    api.close_all()
    total_s = time.monotonic() - t_start

    # ---------------------------------------------------------------------------------------
    # Report.
    lines = []
    P = lines.append
    P("")
    P(f"sandboxd bench — {'quick' if args.quick else 'full'} run, {len(workloads)} workloads, interleaved "
      f"within each workload; {total_s:.0f} s")
    P(f"{platform.node()} · kernel {platform.release()} · {os.cpu_count()} CPUs · "
      f"{systemd_version()} · cgroup {cgroup_mode()} · sandboxd slots {health_before.get('slots')}, "
      f"queue {health_before.get('queue_max')}")
    others = [w.label for w in workloads if w.key != "print"]
    P(f"runs per runner: print(1) n={n1} at c=1, n={nc} at each c>1"
      + (f"; FEWER for {', '.join(others)}: n={n1o} at c=1, n={nco} at each c>1 (at least 2×c at c=32)"
         if others else ""))
    P("latencies in ms (wall clock, request/fork → answer/exit); /s = runs completed ÷ wall time of the row's blocks")
    headline = []
    cpu_rows = []
    for w, runners in plan:
        r = res[w.key]
        keys = [x.key for x in runners]
        labels = {x.key: x.label for x in runners}
        n_1, n_c = counts(w)
        P("")
        P(f"== {w.label}  (c=1 n={n_1}; " + ", ".join(f"c={c} n={n_c[c]}" for c in concs) + ")")
        wl = max([len(labels[k]) for k in keys] + [len("sandboxd HTTP API [MaxConcurrent=32]")]) + 1
        hdr = f"{'':{wl}} |{'c=1 p50':>8}{'p95':>7}{'p99':>7} |"
        for c in concs:
            hdr += f"{f'c={c} /s':>8}{'p50':>7}{'p95':>7} |"
        P(hdr + " fail")
        P("-" * (len(hdr) + 5))

        def row(label, a, cs):
            s = f"{label:{wl}} |"
            s += (f"{fmt(a['p50_ms'], 8)}{fmt(a['p95_ms'], 7)}{fmt(a['p99_ms'], 7)} |" if a else f"{'-':>8}{'-':>7}{'-':>7} |")
            fails = a["failed"] if a else 0
            for x in cs:
                if x is None:
                    s += f"{'-':>8}{'-':>7}{'-':>7} |"
                else:
                    s += f"{fmt(x['throughput_per_s'], 8)}{fmt(x['p50_ms'], 7)}{fmt(x['p95_ms'], 7)} |"
                    fails += x["failed"]
            return s + f" {fails}"
        for k in keys:
            P(row(labels[k], r["c1"][k], [r.get(f"c{c}", {}).get(k) for c in concs]))
        for k in keys:
            if k in r.get("c32_mc32", {}):
                P(row(f"{labels[k]} [MaxConcurrent=32]", None,
                      [r["c32_mc32"][k] if c == 32 else None for c in concs]))
        # Ratios.
        base = {b_: r["c1"].get(b_, {}).get("p50_ms") for b_ in ("bare", "sr_profile", "sr_naive")}
        ctp = 8 if 8 in concs else concs[-1]
        tpb = {b_: r[f"c{ctp}"].get(b_, {}).get("throughput_per_s") for b_ in ("bare", "sr_profile", "sr_naive")}
        P(f"{'ratios':{wl}} |{'c=1 p50 ×bare':>14}{'×sr-prof':>9}{'×sr-naive':>10} |"
          f"{f'c={ctp} /s ×bare':>15}{'×sr-prof':>9}{'×sr-naive':>10}")
        for k in keys:
            p50 = r["c1"][k]["p50_ms"]
            tp = r[f"c{ctp}"][k]["throughput_per_s"]
            P(f"{labels[k]:{wl}} |{fmt(ratio(p50, base['bare']), 14, 2)}{fmt(ratio(p50, base['sr_profile']), 9, 2)}"
              f"{fmt(ratio(p50, base['sr_naive']), 10, 2)} |{fmt(ratio(tp, tpb['bare']), 15, 2)}"
              f"{fmt(ratio(tp, tpb['sr_profile']), 9, 2)}{fmt(ratio(tp, tpb['sr_naive']), 10, 2)}")
        if "sandboxd_api" in keys:
            a = r["c1"]["sandboxd_api"]["p50_ms"]
            t = r[f"c{ctp}"]["sandboxd_api"]["throughput_per_s"]
            headline.append((w.label, a, ratio(a, base["bare"]), ratio(a, base["sr_profile"]), ratio(a, base["sr_naive"]),
                             t, ratio(t, tpb["bare"]), ratio(t, tpb["sr_profile"]), ratio(t, tpb["sr_naive"])))
        # CPU per execution.
        sb = api.sandbox_cpu.get(w.key, [])
        sb_mean = sum(sb) / len(sb) if sb else None
        P(f"{'CPU ms / execution (c>1 blocks)':{wl}} |{'daemon':>8}{'systemd':>9}{'dbus+jrnl':>10}{'clients':>9}"
          f"{'program':>9} |{'sum':>7} |{'machine':>8}{'n':>6}")
        for k in keys:
            acc = cpu[w.key].get(k)
            if not acc:
                continue
            pe = acc.per_exec()
            prog = sb_mean if k == "sandboxd_api" else None
            parts = [pe["daemon"] if k in ("sandboxd_api", "sandboxctl") else None, pe["systemd"], pe["bus_journal"],
                     pe["client"] if k != "sandboxd_api" else None, prog]
            tot = sum(x for x in parts if x is not None)
            P(f"{labels[k]:{wl}} |{fmt(parts[0], 8)}{fmt(parts[1], 9)}{fmt(parts[2], 10)}{fmt(parts[3], 9)}"
              f"{fmt(parts[4], 9)} |{fmt(tot, 7)} |{fmt(pe['machine'], 8)}{acc.n:>6}")
            cpu_rows.append({"workload": w.key, "runner": k, "n": acc.n, "per_exec_ms": pe, "program_ms": prog,
                             "sum_ms": tot})
        for k, acc in cpu[w.key].get("_mc32", {}).items():
            pe = acc.per_exec()
            P(f"{labels[k] + ' [MC=32]':{wl}} |{fmt(pe['daemon'], 8)}{fmt(pe['systemd'], 9)}{fmt(pe['bus_journal'], 10)}"
              f"{fmt(pe['client'] if k != 'sandboxd_api' else None, 9)}{fmt(sb_mean if k == 'sandboxd_api' else None, 9)} |"
              f"{'':>7} |{fmt(pe['machine'], 8)}{acc.n:>6}")
    P("")
    P("CPU columns: daemon = sandboxd's MainPID, systemd = PID 1 of the harness, dbus+jrnl = dbus-daemon + journald,")
    P("clients = the processes this script forked and waited for (interpreter, bwrap, systemd-run, sandboxctl),")
    P("program = sandboxd's cpu_time_ms of the execution's cgroup (sandbox-exec + program; API runs of that workload);")
    P("the program's CPU of systemd-run rows is in their unit's cgroup and not counted (see 'machine').")
    P("machine = all CPUs busy (/proc/stat) over the blocks ÷ executions: everything, including this script and")
    P("anything else running on the host. 10 ms clock ticks: single values below ~1 ms are noise.")
    if headline:
        P("")
        ctp = 8 if 8 in concs else concs[-1]
        P(f"HEADLINE — sandboxd HTTP API against bare execution and systemd-run (sr-prof = sandboxd's unit profile, "
          f"sr-naive = hand-written hardening)")
        wl = max(len(h[0]) for h in headline) + 1
        P(f"{'workload':{wl}} |{'c=1 p50':>8}{'×bare':>7}{'×sr-prof':>9}{'×sr-naive':>10} |{f'c={ctp} /s':>8}"
          f"{'×bare':>7}{'×sr-prof':>9}{'×sr-naive':>10}")
        for h in headline:
            P(f"{h[0]:{wl}} |{fmt(h[1], 8)}{fmt(h[2], 7, 2)}{fmt(h[3], 9, 2)}{fmt(h[4], 10, 2)} |{fmt(h[5], 8)}"
              f"{fmt(h[6], 7, 2)}{fmt(h[7], 9, 2)}{fmt(h[8], 10, 2)}")
    if api.server_ms:
        P(f"sandboxd's duration_ms (unit ExecMainStart→exit, all API runs): p50 {fmt(pct(api.server_ms, 50), 0)} ms, "
          f"p95 {fmt(pct(api.server_ms, 95), 0)} ms; HTTP connections opened: {api.connections}, "
          f"reconnects: {api.reconnects}")
    if api.phases:
        P("")
        P("where sandboxd's time goes (HTTP API runs; the daemon's timestamps have 1 ms resolution), p50 / p95 ms:")
        cols = (("client_to_created", "send→created"), ("created_to_started", "created→started"),
                ("started_to_finished", "started→finished"), ("finished_to_client", "finished→answer"))
        P(f"  {'':14}" + "".join(f"{name:>20}" for _, name in cols))
        for phk, ph in api.phases.items():
            if phk in ("warmup", "after") or not any(ph.values()):
                continue
            P(f"  {phk:14}" + "".join(f"{fmt(pct(ph[c], 50), 9)} /{fmt(pct(ph[c], 95), 8)} " for c, _ in cols))
    if mc32.get("done"):
        P(f"MaxConcurrent=32 (drop-in + reload): /v1/health slots {mc32.get('slots_before')} → {mc32.get('slots')} "
          f"→ {mc32.get('slots_after')} (restored)")
    elif "error" in mc32:
        P(f"MaxConcurrent=32 run FAILED: {mc32['error']}")
    for k, why in skipped.items():
        P(f"{k}: {why}")
    P("")
    P("sandboxd daemon footprint        VmRSS KiB   VmHWM KiB   fds")
    for name, f in (("at start", fp_start), ("idle, after warm-up", fp_idle), ("after the load (settled)", fp_after)):
        P(f"  {name:29} {f.get('VmRSS', '-'):>9}   {f.get('VmHWM', '-'):>9}   {f.get('fds', '-'):>4}")
    P(f"  {'peak under load (100 ms)':29} {sampler.max_rss or '-':>9}   {'':>9}   {sampler.max_fds or '-':>4}")
    if fp_start.get("pid") != fp_after.get("pid") or len(sampler.pids) > 1:
        P(f"  WARNING: sandboxd's MainPID changed during the run ({fp_start.get('pid')} -> {fp_after.get('pid')}): "
          "it restarted")
    if ablation:
        r = ablation["results"]
        full = r.get("full", {}).get("p50_ms")
        P("")
        P(f"ablation: systemd-run (sandboxd profile) minus one property group, print(1), c=1, n={args.ablation_n}")
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

    any_fail = False
    for w, runners in plan:
        labels = {x.key: x.label for x in runners}
        for phase, rr in res[w.key].items():
            for k, x in rr.items():
                if x["failed"]:
                    any_fail = True
                    print(f"errors {w.key} {phase} {labels.get(k, k)} ({x['failed']}): {x['errors'][:2]}",
                          file=sys.stderr)

    os.makedirs(args.results, exist_ok=True)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    path = os.path.join(args.results, f"bench-{stamp}.json")
    doc = {
        "schema": 2, "when": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "mode": "quick" if args.quick else "full",
        "host": {"node": platform.node(), "kernel": platform.release(), "cpus": os.cpu_count(),
                 "systemd": systemd_version(), "cgroup": cgroup_mode(), "python": platform.python_version()},
        "concurrency": concs,
        "workloads": {w.key: {"label": w.label, "language": w.language, "code": w.code,
                              "counts": {"c1": counts(w)[0], **{f"c{c}": n for c, n in counts(w)[1].items()}},
                              "runners": {x.key: {"label": x.label, "note": x.note} for x in rs},
                              "commands": commands_of(w, ctl),
                              "results": res[w.key],
                              "cpu_ms_per_exec": {k: {"n": acc.n, **acc.per_exec()}
                                                  for k, acc in cpu[w.key].items() if k != "_mc32"},
                              "cpu_ms_per_exec_mc32": {k: {"n": acc.n, **acc.per_exec()}
                                                       for k, acc in cpu[w.key].get("_mc32", {}).items()},
                              "sandbox_cpu_time_ms": {"mean": (sum(api.sandbox_cpu.get(w.key, [])) /
                                                               len(api.sandbox_cpu[w.key])) if api.sandbox_cpu.get(w.key) else None,
                                                      "p50": pct(api.sandbox_cpu.get(w.key, []), 50),
                                                      "n": len(api.sandbox_cpu.get(w.key, []))},
                              "server_duration_ms": {"p50": pct(api.server_ms_w.get(w.key, []), 50),
                                                     "p95": pct(api.server_ms_w.get(w.key, []), 95)}}
                      for w, rs in plan},
        "headline": [dict(zip(("workload", "c1_p50_ms", "c1_vs_bare", "c1_vs_sr_profile", "c1_vs_sr_naive",
                               "tp_per_s", "tp_vs_bare", "tp_vs_sr_profile", "tp_vs_sr_naive"), h)) for h in headline],
        "mc32": mc32,
        "skipped": skipped,
        "sandboxd": {
            "phases_ms": {phk: {c: {"p50": pct(v, 50), "p95": pct(v, 95), "max": max(v) if v else None, "n": len(v)}
                                for c, v in ph.items()} for phk, ph in api.phases.items()},
            "http_connections": api.connections, "http_reconnects": api.reconnects,
            "footprint": {"start": fp_start, "idle": fp_idle, "after": fp_after,
                          "peak_rss_kib": sampler.max_rss, "peak_fds": sampler.max_fds,
                          "pids_seen": sorted(sampler.pids)},
            "health_before": health_before, "health_after": health_after,
        },
        "ablation": ablation, "load_seconds": load_s, "total_seconds": total_s, "truncated": b.truncated,
        "report": report,
    }
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
    print(f"\nresults: {os.path.relpath(path)}")
    shutil.rmtree(BENCH_DIR, ignore_errors=True)
    if not any(r.key == "sandboxd_api" for _, rs in plan for r in rs):
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

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


# The default-request sandboxd row: "sandboxd_warm" with a warm pool, "sandboxd_api" without.
API_ROWS = ("sandboxd_warm", "sandboxd_api")


class BenchError(Exception):
    pass


class NotCounted(Exception):
    """A run that worked but does not belong to its row (the warm row's run that started cold):
    counted in `not_counted`, neither in the latencies nor in `failed`."""


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
        self.sandbox_cpu = {}  # (workload key, row key) -> [cpu_time_ms of every successful API run]
        self.server_ms_w = {}  # workload key -> [duration_ms]
        # "workload:phase" -> row key -> {"warm": n, "cold": n, "none": n}: the record's `start`
        # (warm pool, issue 15; "none" = the daemon does not say, i.e. no warm pool in this build)
        self.starts = {}
        self.ttfo_ms = {}      # workload key -> [time to first output of warm c=1 runs, ms]
        self.ttfo_src = None   # "record" or "metric" (see Ttfo)
        self.last = None       # the last record run_once saw (c=1 is single-threaded)

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

    def metrics(self):
        """GET /metrics, parsed: {(name, labels-text): value}; labels-text is what stands between
        the braces ("" without labels)."""
        status, payload = self.request("GET", "/metrics")
        if status != 200:
            raise BenchError(f"GET /metrics: HTTP {status}")
        m = {}
        for line in payload.decode(errors="replace").splitlines():
            if not line or line.startswith("#"):
                continue
            name_labels, _, value = line.rpartition(" ")
            name, _, labels = name_labels.partition("{")
            try:
                m[(name, labels.rstrip("}"))] = float(value)
            except ValueError:
                pass
        return m

    def pool_ready(self):
        """{language: ready units} from sandboxd_pool_ready_units, {} without a warm pool."""
        try:
            m = self.metrics()
        except (BenchError, OSError, http.client.HTTPException):
            return {}
        return {lab.split('"')[1]: v for (n, lab), v in m.items()
                if n == "sandboxd_pool_ready_units" and '"' in lab}

    def run_once(self, w, start=None, row="sandboxd_api", require_warm=False):
        """One POST ?wait=true. start: None (default request) or "cold" (the request field of the
        warm pool). require_warm: a run whose record does not say start=warm raises NotCounted."""
        t0 = time.time()
        body = {"language": w.language, "code": w.code}
        if start is not None:
            body["start"] = start
        status, payload = self.request("POST", "/v1/executions?wait=true", body)
        if status != 200:
            raise BenchError(f"HTTP {status}: {payload[:300]!r}")
        e = json.loads(payload)
        self.last = e
        if e.get("status") != "success" or e.get("stdout") != EXPECTED:
            raise BenchError(f"status={e.get('status')} error_type={e.get('error_type')} "
                             f"reason={e.get('reason')!r} stdout={e.get('stdout')!r} stderr={str(e.get('stderr'))[:200]!r}")
        t_end = time.time()
        how = e.get("start") if e.get("start") in ("warm", "cold") else "none"
        with self.lock:
            c = self.starts.setdefault(self.phase, {}).setdefault(row, {"warm": 0, "cold": 0, "none": 0})
            c[how] += 1
        if start == "cold" and how != "cold":
            raise BenchError(f'asked for "start": "cold", the record says start={e.get("start")!r}')
        if require_warm and how != "warm":
            raise NotCounted(f"start={e.get('start')!r}")
        with self.lock:
            if isinstance(e.get("duration_ms"), (int, float)):
                self.server_ms.append(float(e["duration_ms"]))
                self.server_ms_w.setdefault(w.key, []).append(float(e["duration_ms"]))
            if isinstance(e.get("cpu_time_ms"), (int, float)):
                self.sandbox_cpu.setdefault((w.key, row), []).append(float(e["cpu_time_ms"]))
            try:
                c, st, fi = (parse_ts(e[k]) for k in ("created_at", "started_at", "finished_at"))
            except (KeyError, TypeError, ValueError):
                return
            # with a warm pool, warm and cold runs apart: "print:c1 warm", "print:c1 cold"
            phk = self.phase if row == "sandboxd_api" else f"{self.phase} {row.replace('sandboxd_', '')}"
            ph = self.phases.setdefault(phk, {"client_to_created": [], "created_to_started": [],
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


def summarize(lat_ms, wall_s, n_ok, n_fail, errors, not_counted=0):
    return {
        "n": n_ok, "failed": n_fail, "not_counted": not_counted,
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


def proc_cpu_ms(pid, children=False):
    """utime+stime of pid (children=False) or cutime+cstime: the CPU of its children that it
    waited for (children=True)."""
    if not pid:
        return None
    try:
        with open(f"/proc/{pid}/stat") as f:
            rest = f.read().rsplit(")", 1)[1].split()
        # fields after ") ": state(3) ... utime(14) stime(15) cutime(16) cstime(17): indexes 11..14
        i = 13 if children else 11
        return (int(rest[i]) + int(rest[i + 1])) * 1000.0 / CLK_TCK
    except (OSError, IndexError, ValueError):
        return None


def machine_busy_ms():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    # user nice system idle iowait irq softirq steal ...
    busy = v[0] + v[1] + v[2] + v[5] + v[6] + (v[7] if len(v) > 7 else 0)
    return busy * 1000.0 / CLK_TCK


# children: cutime+cstime of PID 1, i.e. every process PID 1 reaped: the forked child of each unit
# (in systemd 252 the child sets up the unit's namespace and then execs the unit's program, so its
# set-up and the program are one process), the mount/umount helpers, and orphans.
CPU_KEYS = ("daemon", "systemd", "children", "dbus", "journald", "bus_journal", "client", "machine")


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
             "children": proc_cpu_ms(1, children=True),
             "client": (r.ru_utime + r.ru_stime) * 1000.0, "machine": machine_busy_ms()}
        a, b = proc_cpu_ms(self.pids["dbus"]), proc_cpu_ms(self.pids["journald"])
        d["dbus"], d["journald"] = a, b
        d["bus_journal"] = (a or 0.0) + (b or 0.0) if (a is not None or b is not None) else None
        return d

    @staticmethod
    def delta(before, after):
        out = {}
        for k in CPU_KEYS:
            if before.get(k) is None or after.get(k) is None or \
                    (k == "daemon" and before["pids"]["daemon"] != after["pids"]["daemon"]) or \
                    (k in ("dbus", "journald") and before["pids"][k] != after["pids"][k]):
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
    """fn runs once. At c=1 only: fn_c1 replaces fn if set, pre() runs before and post() after the
    timed part (the warm row waits there for a ready unit and reads the first-output histogram)."""

    def __init__(self, key, label, fn, note="", sandboxd=False, fn_c1=None, pre=None, post=None):
        self.key, self.label, self.fn, self.note, self.sandboxd = key, label, fn, note, sandboxd
        self.fn_c1, self.pre, self.post = fn_c1 or fn, pre, post


NOT_COUNTED = "not counted"


def timed(fn):
    t = time.perf_counter()
    try:
        fn()
        return (time.perf_counter() - t) * 1000.0, None
    except NotCounted:
        return None, NOT_COUNTED
    except Exception as e:  # noqa: BLE001 — every failure is recorded, the run goes on
        return None, f"{type(e).__name__}: {e}"


class Bench:
    def __init__(self, args, api, probe):
        self.args = args
        self.api = api
        self.probe = probe
        self.deadline = time.monotonic() + args.max_seconds
        self.truncated = False
        self.pool_full = {}   # language -> ready units of the warm pool when idle ({} = no pool)

    def out_of_time(self):
        if time.monotonic() > self.deadline:
            if not self.truncated:
                print(f"bench: --max-seconds={self.args.max_seconds} reached, skipping the remaining runs",
                      file=sys.stderr)
            self.truncated = True
            return True
        return False

    def settle(self, sandboxd):
        """After a block: let the daemon finish its trailing work (unit stop, workspace return and,
        with a warm pool, the refill of the claimed units), so that its CPU is charged to the block
        that caused it. Bounded: 5 s for the queue, 5 s for the pool."""
        if sandboxd:
            for _ in range(100):
                try:
                    h = self.api.health()
                    if not h.get("running") and not h.get("queued"):
                        break
                except Exception:  # noqa: BLE001
                    pass
                time.sleep(0.05)
            if self.pool_full:
                for _ in range(100):
                    ready = self.api.pool_ready()
                    if all(ready.get(k, 0) >= v for k, v in self.pool_full.items()):
                        break
                    time.sleep(0.05)
        time.sleep(0.05)

    def latency_c1(self, runners, n, label=""):
        """Concurrency 1, interleaved: every round runs each runner once, in a shuffled order."""
        lat = {r.key: [] for r in runners}
        errs = {r.key: [] for r in runners}
        nc = {r.key: 0 for r in runners}
        rng = random.Random(1)
        for i in range(n):
            if self.out_of_time():
                break
            order = list(runners)
            rng.shuffle(order)
            for r in order:
                ctx = r.pre() if r.pre else None
                ms, err = timed(r.fn_c1)
                if r.post:
                    r.post(ctx, err is None)
                if err == NOT_COUNTED:
                    nc[r.key] += 1
                elif err:
                    errs[r.key].append(err)
                else:
                    lat[r.key].append(ms)
            if (i + 1) % max(1, n // 3) == 0:
                print(f"  {label} c=1: {i + 1}/{n} rounds", file=sys.stderr, flush=True)
        return {r.key: summarize(lat[r.key], sum(lat[r.key]) / 1000.0, len(lat[r.key]), len(errs[r.key]), errs[r.key],
                                 nc[r.key])
                for r in runners}

    def throughput(self, runners, n, conc, cpu=None, label="", cpu_conc=None):
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
                    for acc in (cpu, cpu_conc):
                        if acc is not None:
                            acc.setdefault(r.key, CpuAcc()).add(
                                CpuProbe.delta(before, after),
                                (len(lat[r.key]) - nok0) + (len(errs[r.key]) - nfail0))
                print(f"  {label} c={conc}: round {k + 1}/{rounds}", file=sys.stderr, flush=True)
        return {r.key: summarize(lat[r.key], wall[r.key], len(lat[r.key]), len(errs[r.key]), errs[r.key])
                for r in runners}


# Rows that are POST /v1/executions over this script's connection (the client is this process).
HTTP_ROWS = ("sandboxd_api", "sandboxd_warm", "sandboxd_cold")


def pid1_plus_child(pe, program_ms):
    """PID 1's own CPU plus what it reaped, less the program's own CPU (estimated by the bare row)."""
    if pe.get("systemd") is None or pe.get("children") is None or program_ms is None:
        return None
    return pe["systemd"] + pe["children"] - program_ms


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


FIRST_OUTPUT_BUCKET = "sandboxd_execution_first_output_seconds_bucket"


def first_output_hist(api):
    """{upper bound in ms: cumulative count} of sandboxd_execution_first_output_seconds."""
    h = {}
    for (n, lab), v in api.metrics().items():
        if n != FIRST_OUTPUT_BUCKET:
            continue
        le = [x.split("=", 1)[1].strip('"') for x in lab.split(",") if x.startswith("le=")]
        if le:
            h[float("inf") if le[0] == "+Inf" else float(le[0]) * 1000.0] = v
    return h


def hist_quantile(bounds_of_runs, q):
    """Prometheus' histogram_quantile() over runs given by the upper bound (ms) of their bucket:
    linear within the bucket that holds the q-quantile; the +Inf bucket gives its lower bound."""
    if not bounds_of_runs:
        return None
    bounds = sorted(set(bounds_of_runs) | set(FIRST_OUTPUT_BOUNDS_MS))
    rank = q * len(bounds_of_runs)
    cum = 0
    lo = 0.0
    for hi in bounds:
        c = sum(1 for b in bounds_of_runs if b == hi)
        if c and cum + c >= rank:
            return lo if hi == float("inf") else lo + (hi - lo) * (rank - cum) / c
        cum += c
        lo = hi
    return lo


# sandboxd/model/metrics.c, seconds_bounds[], in ms (the first ones: enough to name a bucket's lower bound)
FIRST_OUTPUT_BOUNDS_MS = [5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1000.0, 2500.0, 5000.0]


class WarmHooks:
    """The warm row at c=1: before the timed run, wait (at most 3 s) for a ready unit of the
    language, so that "warm" measures a claim, not the refill; after it, the time to first output
    of a warm run: the record's own field if it has one (a number under a key containing
    "first_output"), else the bucket of sandboxd_execution_first_output_seconds the run added to
    (c=1 runs one execution at a time: GET /metrics before and after)."""

    def __init__(self, api, w):
        self.api, self.w = api, w

    def pre(self):
        for _ in range(60):
            if self.api.pool_ready().get(self.w.language, 0) >= 1:
                break
            time.sleep(0.05)
        try:
            return first_output_hist(self.api)
        except (BenchError, OSError, http.client.HTTPException):
            return None

    def post(self, before, ok):
        e = self.api.last
        if not ok or not e or e.get("start") != "warm":
            return
        for k, v in e.items():
            if "first_output" in k and isinstance(v, (int, float)) and not isinstance(v, bool):
                ms = v / 1000.0 if k.endswith("_us") or k.endswith("_usec") else \
                    v * 1000.0 if k.endswith("_s") or k.endswith("_seconds") else float(v)
                self.api.ttfo_ms.setdefault(self.w.key, []).append(ms)
                self.api.ttfo_src = f"record field {k}"
                return
        if before is None:
            return
        try:
            after = first_output_hist(self.api)
        except (BenchError, OSError, http.client.HTTPException):
            return
        grew = sorted(b for b, v in after.items() if v > before.get(b, 0))
        if grew:
            self.api.ttfo_ms.setdefault(self.w.key, []).append(grew[0])
            self.api.ttfo_src = "metric"


def detect_pool(api):
    """Does the daemon have the warm pool (issue 15)? It does if it accepts "start": "cold" and its
    record says start=cold. Then wait (at most 30 s) until the pool is filled: every pooled
    language has sandboxd_pool_target_units ready (without that gauge: ready units, and the counts
    were stable for 1 s). Returns {"api": bool, "why": …,
    "full": {language: ready units}}."""
    try:
        st, payload = api.request("POST", "/v1/executions?wait=true",
                                  {"language": "python", "code": CODE, "start": "cold"})
    except (OSError, http.client.HTTPException) as e:
        return {"api": False, "why": f"{type(e).__name__}: {e}", "full": {}}
    if st != 200:
        return {"api": False, "why": f'the daemon refuses "start": HTTP {st}: {payload[:160]!r}', "full": {}}
    e = json.loads(payload)
    if e.get("start") != "cold":
        return {"api": False, "why": f"the record has start={e.get('start')!r}", "full": {}}
    # sandboxd_pool_target_units (Size=), if the daemon exports it, says when the pool is full.
    try:
        target = api.metrics().get(("sandboxd_pool_target_units", ""))
    except (BenchError, OSError, http.client.HTTPException):
        target = None
    last, stable_since, t_end = None, time.monotonic(), time.monotonic() + 30
    while time.monotonic() < t_end:
        ready = api.pool_ready()
        if ready and target and all(v >= target for v in ready.values()):
            last = ready
            break
        if ready != last:
            last, stable_since = ready, time.monotonic()
        elif ready and all(v > 0 for v in ready.values()) and time.monotonic() - stable_since >= 1.0 and not target:
            break
        time.sleep(0.1)
    return {"api": True, "why": None, "full": {k: v for k, v in (last or {}).items() if v > 0}}


def make_runners(w, api, ctl, ctl_env, pool=None, baseline=False):
    """pool: detect_pool()'s answer. With a warm pool the default-request row is "sandboxd warm"
    (for a pooled language) and python workloads get a "sandboxd cold" row. baseline: only the
    rows the comparison with the previous main needs."""
    pool = pool or {"api": False, "full": {}}
    warm = pool["api"] and pool["full"].get(w.language, 0) > 0
    runners = [Runner("bare", f"bare {os.path.basename(w.bare_argv[0])}", lambda: run_cmd(w.bare_argv))]
    if warm:
        hooks = WarmHooks(api, w)
        runners.append(Runner("sandboxd_warm", "sandboxd warm (HTTP API)",
                              lambda: api.run_once(w, row="sandboxd_warm"),
                              "default request; at c=1 counted only if the record says start=warm",
                              sandboxd=True, fn_c1=lambda: api.run_once(w, row="sandboxd_warm", require_warm=True),
                              pre=hooks.pre, post=hooks.post))
    else:
        runners.append(Runner("sandboxd_api", "sandboxd HTTP API", lambda: api.run_once(w),
                              "POST /v1/executions?wait=true, persistent AF_UNIX connection per worker", sandboxd=True))
    if pool["api"] and w.language == "python":
        runners.append(Runner("sandboxd_cold", "sandboxd cold (HTTP API)",
                              lambda: api.run_once(w, start="cold", row="sandboxd_cold"),
                              '"start": "cold"', sandboxd=True))
    if not baseline:
        runners.append(Runner("sandboxctl", "sandboxctl run",
                              lambda: run_cmd([ctl, "run", "-l", w.language, "-c", w.code], env=ctl_env), sandboxd=True))
    runners.append(Runner("sr_none", "systemd-run (no properties)", lambda: run_cmd(systemd_run_argv([], w.bare_argv))))
    runners.append(Runner("sr_naive", "systemd-run (naive hardening)",
                          lambda: run_cmd(systemd_run_argv(naive_props(), w.bare_argv))))
    skipped = {}
    if baseline:
        return runners, skipped
    runners.append(Runner("sr_profile", "systemd-run (sandboxd profile)",
                          lambda: run_cmd(systemd_run_argv(profile_props(), w.bare_argv))))
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
            "sandboxd_warm": {"language": w.language, "code": w.code},
            "sandboxd_cold": {"language": w.language, "code": w.code, "start": "cold"},
            "sr_none": systemd_run_argv([], w.bare_argv),
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
    ap.add_argument("--results-file", help="write the JSON here instead of RESULTS/bench-<date>.json")
    ap.add_argument("--baseline-only", action="store_true",
                    help="the previous main's leg (bench/run --baseline): print(1) only, c=1 and c=8, rows bare, "
                         "sandboxd, systemd-run (no properties, naive hardening); no targets table")
    ap.add_argument("--baseline-json", help="the JSON of the --baseline-only leg of this run: its figures go "
                                            "into the targets table")
    ap.add_argument("--baseline-rev", default="", help="the commit the baseline leg ran (for the report)")
    args = ap.parse_args()
    if args.baseline_only:
        args.workloads, args.concurrency, args.no_mc32 = "print", "8", True
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
    pool = detect_pool(api)
    if pool["api"]:
        print(f"bench: warm pool: ready units when idle {pool['full']}", file=sys.stderr, flush=True)
    else:
        print(f"bench: no warm pool ({pool['why']}): no warm/cold rows", file=sys.stderr, flush=True)
    ctl_env = dict(os.environ, SANDBOXD_SOCKET=sock)
    probe = CpuProbe()
    fp_start = daemon_footprint()
    t_start = time.monotonic()

    # Sanity first: every runner must work once per workload, else it is dropped (with its error)
    # rather than polluting every table with failures. Then warm up: 2 more unmeasured runs each.
    plan = []
    skipped = {}
    for w in workloads:
        runners, sk = make_runners(w, api, ctl, ctl_env, pool, baseline=args.baseline_only)
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
    if not any(r.key in API_ROWS for w, rs in plan if w.key == "print" for r in rs):
        print("bench: sandboxd does not run print(1); see the journal below", file=sys.stderr)
    time.sleep(0.5)
    fp_idle = daemon_footprint()
    probe.refresh()

    b = Bench(args, api, probe)
    b.pool_full = pool["full"]
    sampler = Sampler()
    sampler.start()
    t0 = time.monotonic()
    res = {}
    cpu = {}
    cpu_conc = {}   # workload -> "c8" -> row -> CpuAcc: the same blocks, per concurrency
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
            res[w.key][f"c{conc}"] = b.throughput(runners, n_c[conc], conc, cpu=cpu[w.key], label=w.key,
                                                  cpu_conc=cpu_conc.setdefault(w.key, {}).setdefault(f"c{conc}", {}))

    # c=32 again for the sandboxd rows, with MaxConcurrent=32 (drop-in + reload), then back.
    mc32 = {"done": False}
    if 32 in concs and not args.no_mc32 and not b.out_of_time():
        try:
            slots_before = api.health().get("slots")
            mc32["slots_before"] = slots_before
            mc32["slots"] = set_max_concurrent(api, 32)
            probe.refresh()
            for w, runners in plan:
                sd = [r for r in runners if r.sandboxd and r.key != "sandboxd_cold"]
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
    if not args.quick and not args.baseline_only and not b.out_of_time() and any(w.key == "print" for w in workloads):
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
        api_key = next((k for k in API_ROWS if k in keys), None)
        if api_key:
            a = r["c1"][api_key]["p50_ms"]
            t = r[f"c{ctp}"][api_key]["throughput_per_s"]
            headline.append((f"{w.label} ({labels[api_key]})", a, ratio(a, base["bare"]), ratio(a, base["sr_profile"]), ratio(a, base["sr_naive"]),
                             t, ratio(t, tpb["bare"]), ratio(t, tpb["sr_profile"]), ratio(t, tpb["sr_naive"])))
        # CPU per execution.
        def prog_of(k):
            sb = api.sandbox_cpu.get((w.key, k), [])
            return sum(sb) / len(sb) if sb and k in HTTP_ROWS else None
        bare_acc = cpu[w.key].get("bare")
        bare_prog = bare_acc.per_exec()["client"] if bare_acc else None
        P(f"{'CPU ms / execution (c>1 blocks)':{wl}} |{'daemon':>8}{'PID 1':>7}{'children':>9}{'PID1+chld':>10}"
          f"{'dbus':>6}{'jrnl':>6}{'clients':>8}{'program':>8} |{'sum':>7} |{'machine':>8}{'n':>6}")
        for k in keys:
            acc = cpu[w.key].get(k)
            if not acc:
                continue
            pe = acc.per_exec()
            prog = prog_of(k)
            pid1_child = pid1_plus_child(pe, bare_prog) if k != "bare" else None   # no unit: nothing to say
            parts = [pe["daemon"] if (k in HTTP_ROWS or k == "sandboxctl") else None, pe["systemd"], pe["bus_journal"],
                     pe["client"] if k not in HTTP_ROWS else None, prog]
            tot = sum(x for x in parts if x is not None)
            P(f"{labels[k]:{wl}} |{fmt(parts[0], 8)}{fmt(pe['systemd'], 7)}{fmt(pe['children'], 9)}"
              f"{fmt(pid1_child, 10)}{fmt(pe['dbus'], 6)}{fmt(pe['journald'], 6)}{fmt(parts[3], 8)}"
              f"{fmt(parts[4], 8)} |{fmt(tot, 7)} |{fmt(pe['machine'], 8)}{acc.n:>6}")
            cpu_rows.append({"workload": w.key, "runner": k, "n": acc.n, "per_exec_ms": pe, "program_ms": prog,
                             "pid1_plus_child_ms": pid1_child, "program_estimate_ms": bare_prog, "sum_ms": tot})
        for k, acc in cpu[w.key].get("_mc32", {}).items():
            pe = acc.per_exec()
            P(f"{labels[k] + ' [MC=32]':{wl}} |{fmt(pe['daemon'], 8)}{fmt(pe['systemd'], 7)}{fmt(pe['children'], 9)}"
              f"{fmt(pid1_plus_child(pe, bare_prog), 10)}{fmt(pe['dbus'], 6)}{fmt(pe['journald'], 6)}"
              f"{fmt(pe['client'] if k not in HTTP_ROWS else None, 8)}{fmt(prog_of(k), 8)} |"
              f"{'':>7} |{fmt(pe['machine'], 8)}{acc.n:>6}")
        # Which path the default-request and cold rows took, per phase (the record's `start`).
        for k in keys:
            if k not in ("sandboxd_warm", "sandboxd_cold"):
                continue
            per = {ph.split(":", 1)[1]: c.get(k) for ph, c in api.starts.items()
                   if ph.startswith(f"{w.key}:") and c.get(k)}
            P(f"{labels[k] + ' start':{wl}} | " + "; ".join(
                f"{ph}: {c['warm']} warm, {c['cold']} cold" + (f", {c['none']} unsaid" if c["none"] else "")
                for ph, c in per.items())
              + (f"  (c=1: {r['c1'][k]['not_counted']} not warm, not counted)" if r['c1'][k].get('not_counted') else ""))
    P("")
    P("CPU columns: daemon = sandboxd's MainPID, PID 1 = systemd of the harness (its own utime+stime),")
    P("children = PID 1's cutime+cstime: every process it reaped (each unit's forked child, which sets up the")
    P("namespace and then becomes the unit's program; mount helpers), PID1+chld = PID 1 + children − the bare")
    P("row's client CPU of the same workload (the program's own CPU, estimated): systemd's work per execution,")
    P("dbus = dbus-daemon, jrnl = journald; sum = daemon + PID 1 + dbus + jrnl + clients + program,")
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
        P(f"  {'':19}" + "".join(f"{name:>20}" for _, name in cols))
        for phk, ph in api.phases.items():
            if phk.split()[0] in ("warmup", "after") or not any(ph.values()):
                continue
            P(f"  {phk:19}" + "".join(f"{fmt(pct(ph[c], 50), 9)} /{fmt(pct(ph[c], 95), 8)} " for c, _ in cols))
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
    def cpu_by_conc(wk):
        bare = {c: a.get("bare") for c, a in cpu_conc.get(wk, {}).items()}
        return {c: {k: {"n": acc.n, **acc.per_exec(),
                        "pid1_plus_child": pid1_plus_child(acc.per_exec(),
                                                           bare[c].per_exec()["client"] if bare[c] else None)}
                    for k, acc in a.items()}
                for c, a in cpu_conc.get(wk, {}).items()}

    baseline = None
    if args.baseline_json:
        try:
            with open(args.baseline_json) as f:
                baseline = json.load(f)
        except (OSError, ValueError) as e:
            P(f"baseline: cannot read {args.baseline_json}: {e}")
    tgt = []
    if not args.baseline_only:
        tgt = targets(res, {w.key: cpu_by_conc(w.key) for w, _ in plan}, api, baseline, args.baseline_rev)
        P("")
        P("Targets (issue 15) — measured side by side in this run" +
          (f"; previous main = {args.baseline_rev or '?'} in a second harness boot" if baseline else
           "; previous main: not measured (bench/run --no-baseline, or its leg failed)"))
        P(f"{'target':58} | {'measured':>9} {'reference':>9} | {'ratio':>6} {'limit':>7} | verdict")
        P("-" * 106)
        for t in tgt:
            lim = f"{t['op']} {t['limit']:.2f}" if t.get("limit") is not None else ""
            P(f"{t['target']:58} | {fmt(t['measured'], 9, 1)} {fmt(t.get('reference'), 9, 1)} | "
              f"{fmt(t.get('ratio'), 6, 2)} {lim:>7} | {t['verdict']}" + (f"  ({t['note']})" if t.get("note") else ""))
        if baseline:
            def fig(doc_res, ph, row, f):
                return ((doc_res or {}).get(ph, {}).get(row) or {}).get(f)
            br = baseline.get("workloads", {}).get("print", {}).get("results", {})
            P(f"  (the two boots, print(1): bare python3 c=1 p50 {fmt(fig(br, 'c1', 'bare', 'p50_ms'), 0, 1)} ms in the "
              f"previous main's leg, {fmt(fig(res.get('print'), 'c1', 'bare', 'p50_ms'), 0, 1)} ms here; systemd-run "
              f"(no properties) c=8 {fmt(fig(br, 'c8', 'sr_none', 'throughput_per_s'), 0, 1)} /s there, "
              f"{fmt(fig(res.get('print'), 'c8', 'sr_none', 'throughput_per_s'), 0, 1)} /s here)")
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
    path = args.results_file or os.path.join(args.results, f"bench-{stamp}.json")
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
                              "sandbox_cpu_time_ms": {k: {"mean": sum(v) / len(v), "p50": pct(v, 50), "n": len(v)}
                                                      for (wk, k), v in api.sandbox_cpu.items() if wk == w.key and v},
                              "starts": {ph.split(":", 1)[1]: c for ph, c in api.starts.items()
                                         if ph.startswith(f"{w.key}:")},
                              "first_output_ms_warm_c1": api.ttfo_ms.get(w.key, []),
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
        "role": "baseline" if args.baseline_only else "main",
        "warm_pool": pool,
        "cpu_ms_per_exec_by_concurrency": {w.key: cpu_by_conc(w.key) for w, _ in plan},
        "first_output_source": api.ttfo_src,
        "baseline": ({"rev": args.baseline_rev, "file": args.baseline_json,
                      "results": (baseline or {}).get("workloads", {}).get("print", {}).get("results"),
                      "cpu_ms_per_exec_by_concurrency": (baseline or {}).get("cpu_ms_per_exec_by_concurrency")}
                     if args.baseline_json else None),
        "targets": tgt,
        "report": report,
    }
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
    print(f"\nresults: {os.path.relpath(path)}")
    shutil.rmtree(BENCH_DIR, ignore_errors=True)
    if not any(r.key in API_ROWS for _, rs in plan for r in rs):
        return 1
    return 3 if any_fail else 0


def targets(res, cpu_conc, api, baseline, baseline_rev):
    """The targets of issue 15, each {"target", "measured", "reference", "ratio", "op", "limit",
    "verdict": PASS|MISS|n/a|info, "note"}; every figure from this run (the previous main's from its
    leg in the same bench/run)."""
    def get(wk, ph, row, field):
        return (res.get(wk, {}).get(ph, {}).get(row) or {}).get(field)

    def t(name, measured, reference, op, limit, note=""):
        r = ratio(measured, reference)
        if r is None:
            verdict = "n/a"
        else:
            verdict = "PASS" if (r <= limit if op == "≤" else r >= limit) else "MISS"
        return {"target": name, "measured": measured, "reference": reference, "ratio": r, "op": op,
                "limit": limit, "verdict": verdict, "note": note}

    def not_warm(wk):
        x = res.get(wk, {}).get("c1", {}).get("sandboxd_warm")
        if not x:
            return "no warm row: no warm pool"
        return f"n={x['n']} warm, {x['not_counted']} not warm (not counted)"

    b_res = (baseline or {}).get("workloads", {}).get("print", {}).get("results", {})
    b_cpu = (baseline or {}).get("cpu_ms_per_exec_by_concurrency", {}).get("print", {}).get("c8", {})
    b_row = "sandboxd_api"
    out = [
        t("warm print(1) p50 / bare python3 print(1) p50 [ms]", get("print", "c1", "sandboxd_warm", "p50_ms"),
          get("print", "c1", "bare", "p50_ms"), "≤", 0.35, not_warm("print")),
        t("warm import numpy p50 / bare python3 numpy p50 [ms]", get("numpy", "c1", "sandboxd_warm", "p50_ms"),
          get("numpy", "c1", "bare", "p50_ms"), "≤", 0.10, not_warm("numpy")),
        t("cold print(1) p50 / systemd-run (naive) p50 [ms]", get("print", "c1", "sandboxd_cold", "p50_ms"),
          get("print", "c1", "sr_naive", "p50_ms"), "≤", 0.5),
        t("cold import numpy p50 / systemd-run (naive) p50 [ms]", get("numpy", "c1", "sandboxd_cold", "p50_ms"),
          get("numpy", "c1", "sr_naive", "p50_ms"), "≤", 0.5),
        t("cold print(1) PID1+child CPU/exec, c=8 / prev. main [ms]",
          (cpu_conc.get("print", {}).get("c8", {}).get("sandboxd_cold") or {}).get("pid1_plus_child"),
          (b_cpu.get(b_row) or {}).get("pid1_plus_child"), "≤", 0.5,
          "PID 1 + its reaped children − bare program CPU"),
    ]
    api_row = "sandboxd_warm" if get("print", "c8", "sandboxd_warm", "n") is not None else "sandboxd_api"
    tp = get("print", "c8", api_row, "throughput_per_s")
    c8 = api.starts.get("print:c8", {}).get(api_row)
    note = f"{c8['warm']} warm, {c8['cold']} cold" if c8 and api_row == "sandboxd_warm" else ""
    out.append(t("print(1) c=8 /s, default request / prev. main", tp,
                 (b_res.get("c8", {}).get(b_row) or {}).get("throughput_per_s"), "≥", 1.5, note))
    out.append(t("print(1) c=8 /s, default request / systemd-run (no props)", tp,
                 get("print", "c8", "sr_none", "throughput_per_s"), "≥", 1.0, note))
    for wk in ("print", "numpy"):
        v = api.ttfo_ms.get(wk, [])
        from_metric = not (api.ttfo_src and api.ttfo_src.startswith("record"))
        p50 = (hist_quantile(v, 0.5) if from_metric else pct(v, 50)) if v else None
        bucket = ""
        if v and from_metric:
            hi = sorted(v)[(len(v) - 1) // 2]
            lo = max([b for b in FIRST_OUTPUT_BOUNDS_MS if b < hi], default=0.0)
            bucket = f" (histogram: the median run is in the {lo:g}–{hi:g} ms bucket; interpolated)"
        out.append({"target": f"time to first output p50, warm {wk} (c=1) [ms]", "measured": p50, "reference": None,
                    "ratio": None, "op": None, "limit": None, "verdict": "info" if v else "n/a",
                    "note": (f"n={len(v)}, from the {api.ttfo_src}" + bucket) if v else
                    "no warm runs"})
    return out


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

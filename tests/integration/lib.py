# SPDX-License-Identifier: LGPL-2.1-or-later
"""Helpers for the integration tests: a client for sandboxd's HTTP API on its unix socket, and TAP
output. These run inside tests/harness/sandbox-harness against the real daemon and systemd."""

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time

SOCKET = os.environ.get("SANDBOXD_SOCKET", "/run/sandboxd/api.sock")
BUILD = os.environ.get("SANDBOXD_BUILD_DIR", "build")


class UnixConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout=600):
        super().__init__("localhost", timeout=timeout)
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.path)


def _exchange(conn, method, path, body, headers, raw):
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    conn.request(method, path, body=data, headers=headers)
    resp = conn.getresponse()
    text = resp.read()
    conn.close()
    try:
        return resp.status, json.loads(text)
    except ValueError:
        return resp.status, {"_raw": text.decode("utf-8", "replace")}


def request(method, path, body=None, headers=None, raw=None, timeout=600):
    """Returns (status, parsed JSON body)."""
    h = {"Content-Type": "application/json"}
    h.update(headers or {})
    return _exchange(UnixConnection(SOCKET, timeout=timeout), method, path, body, h, raw)


def tcp_request(host, port, method, path, body=None, headers=None, raw=None, timeout=600):
    """The same over TCP (a Listen= or PistonListen= listener); headers as given, nothing added."""
    return _exchange(http.client.HTTPConnection(host, port, timeout=timeout), method, path, body,
                     headers or {}, raw)


# The suite's -pg leg (tests/integration/meson.build): the daemon's store is PostgreSQL, the
# connection string in SANDBOX_HARNESS_STORE (from tests/pg/pg-scratch); otherwise the SQLite file.
PG_STORE = os.environ.get("SANDBOX_HARNESS_STORE") or None
SQLITE_DB = "/var/lib/sandboxd/sandboxd.db"


def pg_server(cmd):
    """stop|start|restart the PostgreSQL server tests/pg/pg-scratch started, or pause|resume the
    backends of the daemon's connections (SIGSTOP, SIGCONT), through its control FIFO
    (SANDBOXD_TEST_PG_CONTROL); the command's status (0: done), -1 if no answer came in 90 s."""
    control = os.environ["SANDBOXD_TEST_PG_CONTROL"]
    status = control + ".status"

    def lines():
        try:
            with open(status) as f:
                return f.read().splitlines()
        except FileNotFoundError:
            return []
    before = len(lines())
    with open(control, "w") as f:
        f.write(cmd + "\n")
    wait_until(lambda: len(lines()) > before, 90, 0.05)
    now = lines()
    return int(now[-1].split()[1]) if len(now) > before else -1


def store_exec(sql, params=()):
    """A statement that changes the daemon's store, whichever backend it is (see store_row())."""
    if PG_STORE:
        _psql(sql, params)
        return
    import sqlite3
    db = sqlite3.connect(SQLITE_DB, timeout=10)
    try:
        with db:
            db.execute(sql, params)
    finally:
        db.close()


def _psql(sql, params):
    text = sql
    args = ["psql", "-X", "-q", "-A", "-t", "-F", "\x1f", "-v", "ON_ERROR_STOP=1", "-d", PG_STORE]
    for i, v in enumerate(params):
        text = text.replace("?", f":'v{i}'", 1)
        args += ["-v", f"v{i}={v}"]
    p = subprocess.run(args, input=text + ";\n", capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        raise RuntimeError(f"psql: {p.stderr.strip()}")
    return p.stdout


def store_row(sql, params=()):
    """The first row of a read-only query of the daemon's store, whichever backend it is, as a tuple
    of strings (PostgreSQL, through psql) or of SQLite's values; None without a row. `?` marks the
    parameters; with PostgreSQL they are passed as psql variables, quoted by psql (:'vN')."""
    if PG_STORE:
        out = _psql(sql, params)
        # One row: its fields, separated by US, and the newline psql ends it with.
        out = out[:-1] if out.endswith("\n") else out
        return tuple(out.split("\x1f")) if out else None
    import sqlite3
    db = sqlite3.connect(f"file:{SQLITE_DB}?mode=ro", uri=True, timeout=10)
    try:
        return db.execute(sql, params).fetchone()
    finally:
        db.close()


def skip_all(why):
    """The whole test skipped (exit 77), saying why."""
    print(f"1..0 # SKIP {why}", flush=True)
    sys.exit(77)


# The legs of the suite (tests/integration/meson.build): SANDBOXD_TEST_WARM=1, the pool on, every
# request a warm unit could serve waits for one to be ready, so the leg really runs warm;
# SANDBOX_HARNESS_POOL_SIZE=0, the pool off, everything runs cold. Either way Tap.done() checks that
# the leg ran as it says, from the records' "start".
WARM_LEG = os.environ.get("SANDBOXD_TEST_WARM") == "1"
COLD_LEG = os.environ.get("SANDBOX_HARNESS_POOL_SIZE") == "0"
STARTS = {}


def _note_start(res):
    if isinstance(res, dict) and res.get("execution_id") and res.get("start"):
        STARTS[res["execution_id"]] = res["start"]


def _maybe_wait_warm(language, fields):
    if WARM_LEG and fields.get("start") != "cold" and not fields.get("session_id") and not fields.get("files"):
        wait_pool_ready({"py": "python", "python3": "python", "sh": "bash", "js": "node",
                         "javascript": "node", "nodejs": "node"}.get(language, language), 1, 15)


def run(code, language="python", wait=True, **fields):
    body = {"language": language, "code": code}
    body.update(fields)
    _maybe_wait_warm(language, fields)
    status, res = request("POST", "/v1/executions" + ("?wait=true" if wait else ""), body)
    if wait and status != 200:
        raise AssertionError(f"POST returned {status}: {res}")
    _note_start(res)
    return res


def submit(code, language="python", **fields):
    body = {"language": language, "code": code}
    body.update(fields)
    _maybe_wait_warm(language, fields)
    return request("POST", "/v1/executions", body)


def get(eid, wait=False):
    st, res = request("GET", f"/v1/executions/{eid}" + ("?wait=true" if wait else ""))
    _note_start(res)
    return st, res


def health():
    return request("GET", "/v1/health")[1]


def service_dropin(name, text):
    """Write (text) or remove (None) the drop-in sandboxd.service.d/NAME.conf where the systemd in
    use reads it (the host's /run/systemd/system, or the harness's unit directory), then
    daemon-reload. Takes effect at the next (re)start of sandboxd.service."""
    conf = os.environ.get("SANDBOXD_CONFIG_DIR", "")
    if os.path.exists("/run/systemd/system/sandboxd.service"):
        unitdir = "/run/systemd/system"
    else:
        unitdir = os.path.join(os.path.dirname(conf), "units")
    path = os.path.join(unitdir, "sandboxd.service.d", name + ".conf")
    if text is None:
        if os.path.exists(path):
            os.unlink(path)
    else:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
    subprocess.run(["systemctl", "daemon-reload"], check=True)


def daemon_pid():
    return int(subprocess.check_output(["systemctl", "show", "-P", "MainPID", "sandboxd.service"]).strip())


def daemon_rss_kib():
    with open(f"/proc/{daemon_pid()}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def sandboxd_units():
    out = subprocess.run(["systemctl", "list-units", "--all", "--plain", "--no-legend", "sandboxd-*",
                          "run-sandboxd-*"], capture_output=True, text=True).stdout
    return [l.split()[0] for l in out.splitlines() if l.strip()]


def unit_state(unit):
    """ActiveState/SubState/Result/LoadState of a unit, for a test's diagnostics."""
    return subprocess.run(["systemctl", "show", "-P", "ActiveState", "-P", "SubState", "-P", "Result",
                           "-P", "LoadState", unit], capture_output=True, text=True).stdout.split()


def stop_while_run_ends(execution_id, verb):
    """Freeze sandboxd (SIGSTOP) until the running execution's unit has ended, then `systemctl VERB
    --no-block` it (stop or restart) and let it go on (systemd sends SIGCONT too, after SIGTERM): the
    run's report is waiting as the stop begins. (whether the unit ended meanwhile, its name, the
    frozen daemon's pid)."""
    wait_until(lambda: get(execution_id)[1].get("status") == "running", 60)
    unit = get(execution_id)[1].get("unit") or f"sandboxd-{execution_id}.service"
    # The record says running once the start is asked for; a slow PID 1 (the VM tier) may not have
    # the unit yet, and an unknown unit reads "inactive": wait for it to run first.
    wait_until(lambda: "running" in unit_state(unit), 60)
    old = daemon_pid()
    os.kill(old, signal.SIGSTOP)
    ended = wait_until(lambda: {"inactive", "failed"} & set(unit_state(unit)), 60)
    subprocess.run(["systemctl", verb, "--no-block", "sandboxd.service"], check=True)
    time.sleep(0.2)
    try:
        os.kill(old, signal.SIGCONT)
    except ProcessLookupError:
        pass
    return ended, unit, old


def pool_units():
    """The warm pool's units nobody has claimed (GET /v1/health: pool.units)."""
    try:
        return set(health().get("pool", {}).get("units", []))
    except (OSError, ValueError):
        return set()


def execution_units(prefix="sandboxd-"):
    """sandboxd's service units that belong to executions: every sandboxd-*.service but the warm
    pool's unclaimed ones. The pool is asked before and after listing, so a unit that joined or left
    it meanwhile is not mistaken for an execution's."""
    before = pool_units()
    units = [u for u in sandboxd_units() if u.startswith(prefix) and u.endswith(".service")]
    pool = before | pool_units()
    return [u for u in units if u not in pool]


def unit_of_pid(pid):
    """The systemd unit a process is in (from its cgroup path), or None."""
    try:
        with open(f"/proc/{pid}/cgroup") as f:
            for line in f:
                for part in line.strip().split(":", 2)[-1].split("/"):
                    if part.endswith(".service"):
                        return part
    except OSError:
        pass
    return None


def program_processes():
    """Processes of systemd's dynamic users (61184..65519: every program runs as one) outside the
    warm pool's unclaimed units (a preloaded interpreter waits there for its claim), as "uid args"."""
    before = pool_units()
    ps = subprocess.run(["ps", "-eo", "pid,uid,args"], capture_output=True, text=True).stdout
    pool = before | pool_units()
    left = []
    for line in ps.splitlines()[1:]:
        pid, uid, args = (line.split(None, 2) + [""])[:3]
        if 61184 <= int(uid) <= 65519 and unit_of_pid(pid) not in pool:
            left.append(f"{uid} {args}")
    return left


def sse_open(eid, last_id=None, timeout=300):
    conn = UnixConnection(SOCKET, timeout=timeout)
    h = {"Accept": "text/event-stream"}
    if last_id:
        h["Last-Event-ID"] = last_id
    conn.request("GET", f"/v1/executions/{eid}/events", headers=h)
    return conn, conn.getresponse()


def sse_iter(resp):
    """Yields {"id", "event", "data"} per event until the stream ends."""
    ev = {}
    while True:
        line = resp.readline()
        if not line:
            return
        line = line.decode("utf-8").rstrip("\n")
        if line.startswith(":"):
            continue            # a comment (": keepalive"), as the SSE standard says
        if line == "":
            if ev:
                if "data" in ev:
                    ev["data"] = json.loads(ev["data"])
                yield ev
            ev = {}
            continue
        k, _, v = line.partition(": ")
        ev[k] = v


def wait_stdout(eid, text, timeout=30.0):
    """Wait until the live output of execution eid (its events stream) holds text on stdout: the
    program wrote it and sandbox-exec has captured it, however slow the machine. False if the stream
    ends or timeout passes first."""
    conn, resp = sse_open(eid, timeout=timeout)
    seen = ""
    try:
        if resp.status != 200:
            return False
        for ev in sse_iter(resp):
            if ev.get("event") == "stdout":
                seen += ev["data"].get("text", "")
                if text in seen:
                    return True
            elif ev.get("event") == "result":
                return False
        return False
    except OSError:
        return False
    finally:
        conn.close()


def pool_ready_kinds(language="python"):
    """(preloaded, plain) ready units of language in the warm pool (GET /v1/health: pool.ready counts
    both kinds, pool.preloaded the preloaded ones where the pool keeps two: python with
    PythonPreload=); preloaded is None where it keeps one kind."""
    pool = health().get("pool", {})
    ready = pool.get("ready", {}).get(language, 0)
    if language in pool.get("preloaded", {}):
        pre = pool["preloaded"][language]
        return pre, ready - pre
    return None, ready


def wait_pool_ready(language="python", n=1, timeout=30.0):
    """Wait until the warm pool has n ready units of language, of each kind it keeps (a run takes
    the kind its source asks for: warm_wants_preload()); False if it never does."""
    def ready():
        pre, plain = pool_ready_kinds(language)
        return plain >= n and (pre is None or pre >= n)
    return wait_until(ready, timeout, 0.1)


class Tap:
    def __init__(self):
        self.n = 0
        self.failed = 0

    def ok(self, cond, name, detail=None):
        self.n += 1
        if cond:
            print(f"ok {self.n} - {name}", flush=True)
        else:
            self.failed += 1
            print(f"not ok {self.n} - {name}", flush=True)
            if detail is not None:
                for line in str(detail)[:4000].splitlines():
                    print(f"# {line}", flush=True)
        return cond

    def eq(self, got, want, name, ctx=None):
        return self.ok(got == want, name, f"got {got!r}, want {want!r}" + (f"\n{ctx}" if ctx else ""))

    def verdict(self, res, status, error_type, name):
        return self.ok(res.get("status") == status and res.get("error_type") == error_type,
                       f"{name}: {status}/{error_type}",
                       json.dumps({k: res.get(k) for k in ("status", "error_type", "exit_code", "signal", "reason",
                                                           "stdout", "stderr", "duration_ms")}, indent=1)[:3000])

    def done(self):
        warm = sum(1 for v in STARTS.values() if v == "warm")
        if COLD_LEG:
            self.ok(warm == 0 and STARTS, f"pool off: all {len(STARTS)} executions started cold",
                    {k: v for k, v in STARTS.items() if v == "warm"})
        elif WARM_LEG:
            self.ok(warm > 0, f"pool on: {warm} of {len(STARTS)} executions started warm", STARTS)
        print(f"1..{self.n}")
        print(f"# {self.n - self.failed} passed, {self.failed} failed", flush=True)
        sys.exit(1 if self.failed else 0)


def wait_until(pred, timeout=10.0, step=0.05):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(step)
    return pred()

# SPDX-License-Identifier: LGPL-2.1-or-later
"""The Python SDK against the real daemon (run inside tests/harness/sandbox-harness; TAP).

The package is first installed with pip from a copy of sdk/python into a temporary directory
(`pip install --no-build-isolation --no-index --target`, offline, with Debian's setuptools) and
imported from there, which proves pyproject.toml. Then every part of the surface runs against
sandboxd: success, a real timeout, a real OOM, a compile error, submit + wait, an idempotent submit,
the listing, a cancel, an artifact download, sessions and their files, live events, errors of the
API, and the README's example as written."""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SDK = os.path.dirname(HERE)
SOCKET = os.environ.get("SANDBOXD_SOCKET", "/run/sandboxd/api.sock")


class Tap:
    def __init__(self):
        self.n = self.failed = 0

    def ok(self, cond, name, detail=None):
        self.n += 1
        print(("ok" if cond else "not ok") + f" {self.n} - {name}", flush=True)
        if not cond:
            self.failed += 1
            if detail is not None:
                for line in str(detail)[:4000].splitlines():
                    print(f"# {line}", flush=True)
        return cond

    def eq(self, got, want, name):
        return self.ok(got == want, name, f"got {got!r}, want {want!r}")

    def done(self):
        print(f"1..{self.n}")
        print(f"# {self.n - self.failed} passed, {self.failed} failed", flush=True)
        sys.exit(1 if self.failed else 0)


def skip(why):
    print(f"1..0 # SKIP {why}", flush=True)
    sys.exit(77)


if not os.path.exists(SOCKET):
    skip(f"no sandboxd socket at {SOCKET} (run inside tests/harness/sandbox-harness)")


def builder():
    """An interpreter whose pip can build the package offline: pip, setuptools (>= 61) and wheel
    importable (Debian 12: python3-pip, python3-setuptools, python3-wheel)."""
    for py in (sys.executable, "/usr/bin/python3"):
        if py and os.path.exists(py) and subprocess.run(
                [py, "-c", "import setuptools, wheel, pip; assert int(setuptools.__version__.split('.')[0]) >= 61"],
                capture_output=True).returncode == 0:
            return py
    return None


t = Tap()
tmp = tempfile.mkdtemp(prefix="sdk-py-")
py = builder()
if py is None:
    skip("no python3 with pip, setuptools >= 61 and wheel to install the package offline "
         "(apt-get install python3-pip python3-setuptools python3-wheel)")
src = os.path.join(tmp, "src")
# pip builds in the source directory (build/, *.egg-info): a copy keeps the tree clean and lets
# several runs (make check's two builds) go at once.
shutil.copytree(SDK, src, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
target = os.path.join(tmp, "site")
p = subprocess.run([py, "-m", "pip", "install", "--no-build-isolation", "--no-deps", "--no-index",
                    "--disable-pip-version-check", "--target", target, src], capture_output=True, text=True)
if not t.ok(p.returncode == 0, f"pip install --no-build-isolation --target ({py})", p.stdout + p.stderr):
    t.done()
sys.path.insert(0, target)
import sandboxd  # noqa: E402
from sandboxd import APIError, Client, SandboxError  # noqa: E402

t.ok(sandboxd.__file__.startswith(target + os.sep), "imported from the pip-installed copy", sandboxd.__file__)
t.ok(os.path.exists(os.path.join(target, "sandboxd", "py.typed")), "py.typed installed")

c = Client("unix://" + SOCKET, timeout=30)
t.eq(c.health().status, "ok", "health")
langs = {l.name: l for l in c.languages()}
t.ok("python" in langs and langs["python"].available, "languages lists python", list(langs))

# ---- success ----
r = c.execute("python", "import sys\nprint('hello', sys.argv[1:])\n", args=["a b"])
t.ok(r.status == "success" and r.stdout == "hello ['a b']\n" and r.exit_code == 0, "execute: success with stdout",
     r.raw)
t.ok(re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", r.execution_id) is not None and r.record_id, "the SDK's execution_id",
     r.execution_id)

r = c.execute("python", "import sys\nprint(open('/workspace/input/d/in.txt').read() + sys.stdin.read(), end='')\n",
              files=[sandboxd.inline_file("d/in.txt", "from a file, ")], stdin="from stdin\n",
              limits=sandboxd.Limits(timeout_ms=20000, memory_mb=128))
t.ok(r.stdout == "from a file, from stdin\n" and r.limits.memory_mb == 128, "inline_file, stdin and Limits", r.raw)

# ---- failures, typed ----
try:
    c.execute("python", "import time\ntime.sleep(10)\n", limits={"timeout_ms": 500})
    t.ok(False, "timeout raises")
except sandboxd.ExecutionTimeout as e:
    t.ok(e.type == "timeout" and e.result.error_type == "timeout" and e.result.duration_ms < 5000,
         "timeout raises ExecutionTimeout with the result", e.result.raw)
try:
    c.execute("python", "x = []\nwhile True: x.append(bytearray(16 << 20))\n", limits={"memory_mb": 64})
    t.ok(False, "oom raises")
except sandboxd.OutOfMemory as e:
    t.ok(e.type == "oom" and e.result.status == "failed", "oom raises OutOfMemory", e.result.raw)
have_c = bool(langs.get("c") and langs["c"].available)
if have_c:
    try:
        c.execute("c", "int main( {\n")
        t.ok(False, "compile error raises")
    except sandboxd.CompileError as e:
        t.ok(e.type == "compile_error" and e.result.stderr, "c compile error raises CompileError", e.result.raw)
else:
    print("# c is not available here: the compile error case is skipped", flush=True)
r = c.execute("python", "raise SystemExit(3)\n", check=False)
t.ok(r.status == "failed" and r.error_type == "runtime_error" and r.exit_code == 3,
     "check=False returns the failed result", r.raw)
try:
    r.check()
    t.ok(False, "Execution.check raises")
except sandboxd.ProgramError as e:
    t.eq(e.result.exit_code, 3, "Execution.check raises ProgramError")

# ---- errors of the API ----
try:
    c.execute("no-such-language", "1")
    t.ok(False, "unknown language raises APIError")
except APIError as e:
    t.ok(e.status == 400 and e.code == "invalid_request" and e.field == "language",
         "unknown language: APIError 400 invalid_request, field language", (e.status, e.code, e.field, e.message))
# The harness runs the daemon with the strong tier off (Strong=never): asking for it is refused, the
# run never moved to the standard tier; a plain run's record says its tier.
try:
    c.execute("python", "print(1)\n", isolation="strong")
    t.ok(False, "isolation='strong' where the strong tier is off raises")
except APIError as e:
    t.ok(e.status == 422 and e.code == "unsupported" and e.field == "isolation",
         "isolation='strong' with Strong=never: APIError 422 unsupported, field isolation",
         (e.status, e.code, e.field, e.message))
r = c.execute("python", "print(1)\n")
t.eq(r.isolation, {"tier": "standard", "reasons": []}, "Execution.isolation: the standard tier, no reasons")
try:
    c.get("py-no-such-execution")
    t.ok(False, "unknown id raises")
except APIError as e:
    t.eq((e.status, e.code), (404, "not_found"), "unknown execution: APIError 404")

# ---- submit + wait; idempotency ----
eid = c.submit("python", "print(6 * 7)\n")
r = c.wait(eid, timeout=60)
t.ok(r.execution_id == eid and r.status == "success" and r.stdout == "42\n", "submit + wait", r.raw)
mine = "sdk-py-idem-%d" % os.getpid()
a = c.submit("python", "print('once')\n", execution_id=mine)
b = c.submit("python", "print('once')\n", execution_id=mine)
ra, rb = c.wait(a), c.get(b)
t.ok(a == b == mine and ra.record_id == rb.record_id, "the same execution_id twice: one execution", (a, b))
listed = [e for e in c.iter_executions(limit=1000) if e.execution_id == mine]
t.eq(len(listed), 1, "... listed once")
try:
    c.submit("python", "print('another body')\n", execution_id=mine)
    t.ok(False, "same id, other body: 409")
except APIError as e:
    t.eq((e.status, e.code), (409, "conflict"), "same id, other body: APIError 409 conflict")

# ---- list: pages and filters ----
all_ids = [e.execution_id for e in c.iter_executions(limit=2)]     # 9 executions so far: 5 pages
one_page = c.list(limit=1000)
t.ok(len(all_ids) == (9 if have_c else 8) and all_ids == [e.execution_id for e in one_page.executions] and one_page.next_cursor is None
     and {eid, mine} <= set(all_ids), "iter_executions: every page, each execution once, newest first", all_ids)
page = c.list(error_type="timeout", limit=5)
t.ok(page.executions and all(e.error_type == "timeout" for e in page.executions) and page.executions[0].stdout is None,
     "list(error_type=timeout)", [e.raw for e in page.executions])

# ---- cancel ----
eid = c.submit("python", "import time\nprint('started', flush=True)\ntime.sleep(60)\n")
deadline = time.monotonic() + 30
while c.get(eid).status != "running" and time.monotonic() < deadline:
    time.sleep(0.05)
c.cancel(eid)
r = c.wait(eid, timeout=60)
t.eq(r.status, "cancelled", "cancel of a sleeping run: cancelled")
try:
    c.cancel(eid)
    t.ok(False, "cancel of a finished execution: 409")
except APIError as e:
    t.eq(e.status, 409, "cancel of a finished execution: APIError 409")

# ---- artifacts ----
r = c.execute("python", "import os\nos.makedirs('/workspace/output', exist_ok=True)\n"
                        "open('/workspace/output/x.txt', 'w').write('artifact ' * 1000)\n")
arts = {a.path: a for a in r.artifacts or []}
t.ok("x.txt" in arts and arts["x.txt"].size == 9000, "the result lists the artifact", r.raw.get("artifacts"))
if "x.txt" in arts:
    dest = os.path.join(tmp, "x.txt")
    n = c.download_artifact(arts["x.txt"], dest)
    with open(dest) as f:
        t.ok(n == 9000 and f.read() == "artifact " * 1000, "download_artifact to a path", n)
    fresh = c.artifacts(r.execution_id)
    t.eq(c.download_artifact(fresh[0]), b"artifact " * 1000, "download_artifact of fresh URLs, as bytes")

# ---- sessions ----
sid = "sdk-py-sess-%d" % os.getpid()
c.execute("python", "open('/workspace/shared.txt', 'w').write('from run 1')\n", session_id=sid)
r = c.execute("python", "print(open('/workspace/shared.txt').read())\n", session_id=sid)
t.eq(r.stdout, "from run 1\n", "session: run 2 reads run 1's file")
c.put_file(sid, "put.txt", b"uploaded\n")
r = c.execute("python", "print(open('/workspace/put.txt').read(), end='')\n", session_id=sid)
t.eq(r.stdout, "uploaded\n", "session: put_file, then a run reads it")
t.eq(c.get_file(sid, "shared.txt"), b"from run 1", "session: get_file")
names = {e.name: e.type for e in c.list_files(sid).entries}
t.ok(names.get("shared.txt") == "file" and names.get("put.txt") == "file", "session: list_files", names)
c.delete_file(sid, "put.txt")
t.ok("put.txt" not in {e.name for e in c.list_files(sid).entries}, "session: delete_file")
s = c.get_session(sid)
t.ok(s.session_id == sid and s.executions == 3 and s.pending == 0, "get_session", s.raw)
t.ok(sid in [x.session_id for x in c.list_sessions()], "list_sessions")
c.delete_session(sid)
try:
    c.get_session(sid)
    t.ok(False, "deleted session: 404")
except APIError as e:
    t.eq(e.status, 404, "deleted session: APIError 404")

# ---- live events ----
eid = c.submit("python", "import time\nprint('early', flush=True)\ntime.sleep(1.5)\nprint('late', flush=True)\n")
seen = []
for ev in c.events(eid):
    seen.append((time.monotonic(), ev))
kinds = [ev.event for _, ev in seen]
first_out = next((ts for ts, ev in seen if ev.event == "stdout"), None)
t.ok(kinds[:2] == ["status", "status"] and kinds[-1] == "result", "events: statuses first, result last", kinds)
t.eq("".join(ev.text for _, ev in seen if ev.event == "stdout"), "early\nlate\n", "events: the stdout text")
t.ok(first_out is not None and seen[-1][0] - first_out >= 1.0, "events: output arrives before the end",
     [(round(ts - seen[0][0], 2), ev.event) for ts, ev in seen])
t.eq(seen[-1][1].result.stdout, "early\nlate\n", "events: the result event carries the execution")
mid = [ev for _, ev in seen if ev.event == "stdout"][0].id
rest = [ev.event for ev in c.events(eid, last_event_id=mid)]
t.eq(rest, ["stdout", "result"], "events(last_event_id=...) resumes after that event")

# ---- asyncio ----
import asyncio  # noqa: E402


async def async_part():
    async with sandboxd.AsyncClient("unix://" + SOCKET) as ac:
        rs = await asyncio.gather(*(ac.execute("python", f"print({i} * {i})") for i in range(3)))
        eid = await ac.submit("bash", "echo a; sleep 0.3; echo b")
        evs = [ev async for ev in ac.events(eid)]
        return rs, evs
rs, evs = asyncio.run(async_part())
t.eq([r.stdout for r in rs], ["0\n", "1\n", "4\n"], "AsyncClient: three executions at once")
t.eq("".join(ev.text or "" for ev in evs if ev.event == "stdout"), "a\nb\n", "AsyncClient: events")

# ---- the README's example, as written ----
with open(os.path.join(SDK, "README.md")) as f:
    readme = f.read()
with open(os.path.join(SDK, "examples", "quickstart.py")) as f:
    example = f.read()
blocks = re.findall(r"```python\n(.*?)```", readme, re.S)
t.ok(example in blocks, "README.md shows examples/quickstart.py as it is")
env = dict(os.environ, PYTHONPATH=target, SANDBOXD_ENDPOINT="unix://" + SOCKET)
p = subprocess.run([sys.executable, os.path.join(SDK, "examples", "quickstart.py")], capture_output=True, text=True,
                   env=env, timeout=120)
want = ("stdout: 45\nerror type: timeout\nThe program timed out after 500 ms (timeout_ms).\n"
        "live: line 1\nlive: line 2\nlive: line 3\nstatus: success\n")
t.ok(p.returncode == 0 and p.stdout == want, "examples/quickstart.py prints what the README says",
     f"rc {p.returncode}\n{p.stdout}\n{p.stderr}")
t.ok(want in readme, "... and the README shows that output")

# ---- a keyed TCP listener; retries across a restart of the daemon ----
CONF = os.environ.get("SANDBOXD_CONFIG_DIR")
if CONF:
    import hashlib
    import secrets
    import socket

    def free_port():
        with socket.socket() as so:
            so.bind(("127.0.0.1", 0))
            return so.getsockname()[1]
    port = free_port()
    key = secrets.token_urlsafe(32)
    keys = os.path.join(CONF, "sdk-py-api-keys")
    with open(keys, "w") as f:
        f.write(f"sdkpy sha256:{hashlib.sha256(key.encode()).hexdigest()}\n")
    os.chmod(keys, 0o600)
    os.makedirs(os.path.join(CONF, "sandboxd.conf.d"), exist_ok=True)
    with open(os.path.join(CONF, "sandboxd.conf.d", "50-sdk-py.conf"), "w") as f:
        # RequestHeaderTimeoutSec=1: sandboxd closes a keep-alive connection idle for a second.
        f.write(f"[Daemon]\nListen=127.0.0.1:{port}\nAPIKeysFile={keys}\nRequestHeaderTimeoutSec=1\n")
    # sandboxd stopped, then started without waiting: the next call's connection fails (no socket,
    # or refused) until the new instance listens, and the SDK tries again. (Stopped first, so that no
    # run is under way while it stops: that is the daemon's own business, test-restart's.)
    subprocess.run(["systemctl", "stop", "sandboxd.service"], check=True)
    subprocess.run(["systemctl", "start", "--no-block", "sandboxd.service"], check=True)
    rc = Client("unix://" + SOCKET, max_retries=12, backoff_base=0.1, backoff_max=2.0)
    r = rc.execute("python", "print('after the restart')\n")
    t.eq(r.stdout, "after the restart\n", "execute while sandboxd starts: retried until it answers")
    rc.close()
    # A kept-alive connection that sandboxd closed while idle is not used again: a cancel (never sent
    # twice) after 1.5 s idle gets the daemon's answer, not a reset.
    with Client("unix://" + SOCKET, idle_timeout=60, max_retries=0) as kc:
        kc.health()
        time.sleep(1.5)
        try:
            kc.cancel(r.execution_id)
            t.ok(False, "a cancel on a closed keep-alive connection")
        except APIError as e:
            t.eq(e.status, 409, "a connection the daemon closed while idle is replaced, not used")
    with Client(f"http://127.0.0.1:{port}", api_key=key, max_retries=5, backoff_base=0.1) as tc:
        r = tc.execute("python", "import os\nos.makedirs('/workspace/output', exist_ok=True)\n"
                                 "open('/workspace/output/t.txt', 'w').write('tcp')\nprint('over tcp')\n")
        t.eq(r.stdout, "over tcp\n", "TCP with an API key: execute")
        t.eq(tc.download_artifact(r.artifacts[0]) if r.artifacts else None, b"tcp", "TCP: artifact download")
        t.ok(r.execution_id in [e.execution_id for e in tc.iter_executions()], "TCP: the key's own listing")
    try:
        with Client(f"http://127.0.0.1:{port}", api_key=None) as anon:
            os.environ.pop("SANDBOXD_API_KEY", None)
            anon.health()
        t.ok(False, "TCP without a key: 401")
    except APIError as e:
        t.eq((e.status, e.code), (401, "unauthorized"), "TCP without a key: APIError 401 unauthorized")
else:
    print("# no SANDBOXD_CONFIG_DIR: the TCP listener part is skipped", flush=True)

c.close()
shutil.rmtree(tmp, ignore_errors=True)
t.done()

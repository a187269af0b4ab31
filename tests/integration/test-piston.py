# SPDX-License-Identifier: LGPL-2.1-or-later
# Piston API v2 (issue 19): the npm client piston-client 1.0.2, unmodified (tests/piston, installed by
# tools/install-deps), against PistonListen='s listener: runtimes(), python print(6*7) -> 42, a C
# compile error, stdin echoed back, piston-client's default args, a C program's exit code, a timeout,
# an unknown language. Then the routes with raw HTTP: the open listener serves only /api/v2 and runs
# as PistonOwner=; the unix socket and a keyed TCP listener serve Piston too (401 without a key);
# Piston's refusals ({"message"}, 400), files with encodings, memory and the ceilings.
import base64
import hashlib
import json
import os
import secrets
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from lib import *  # noqa: E402,F401,F403

t = Tap()
CONF = os.environ["SANDBOXD_CONFIG_DIR"]
CLIENT_DIR = os.environ.get("SANDBOXD_PISTON_CLIENT_DIR", "/var/lib/sandboxd-dev/piston-client")
SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "piston", "client.mjs")
HOST, PISTON_PORT, KEYED_PORT = "127.0.0.1", 18095, 18096



node = shutil.which("node")
if not node:
    skip_all("node is not installed (tools/install-deps installs nodejs)")
if not os.path.isfile(os.path.join(CLIENT_DIR, "node_modules", "piston-client", "index.js")):
    skip_all(f"piston-client is not installed in {CLIENT_DIR} (tools/install-deps installs it)")

key, bots_key = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
keys = os.path.join(CONF, "api-keys")
with open(keys, "w") as f:
    f.write(f"agent sha256:{hashlib.sha256(key.encode()).hexdigest()}\n")
    # The key named as PistonOwner=: it sees the open listener's executions, which are its own.
    f.write(f"bots sha256:{hashlib.sha256(bots_key.encode()).hexdigest()}\n")
os.chmod(keys, 0o600)
os.makedirs(os.path.join(CONF, "sandboxd.conf.d"), exist_ok=True)
with open(os.path.join(CONF, "sandboxd.conf.d", "50-piston.conf"), "w") as f:
    f.write(f"[Daemon]\nListen={HOST}:{KEYED_PORT}\nAPIKeysFile={keys}\n"
            f"PistonListen={HOST}:{PISTON_PORT}\nPistonOwner=bots\n")
subprocess.run(["systemctl", "restart", "sandboxd.service"], check=True)
t.ok(wait_until(lambda: health().get("status") == "ok", 30, 0.2), "sandboxd is up with PistonListen= and Listen=")


def tcp(port, method, path, body=None, headers=None, raw=None):
    return tcp_request(HOST, port, method, path, body=body, headers=headers, raw=raw, timeout=300)


# --- piston-client itself ---
p = subprocess.run([node, SCRIPT, f"http://{HOST}:{PISTON_PORT}"], capture_output=True, text=True, timeout=900,
                   env=dict(os.environ, SANDBOXD_PISTON_CLIENT_DIR=CLIENT_DIR))
try:
    out = json.loads(p.stdout.strip().splitlines()[-1])
except (ValueError, IndexError):
    out = {}
t.ok(out, "piston-client ran every call and printed its answers", (p.returncode, p.stdout[-2000:], p.stderr[-2000:]))

rt = out.get("runtimes") or []
byname = {r.get("language"): r for r in rt if isinstance(r, dict)}
t.ok(isinstance(rt, list) and {"python", "javascript", "c", "c++", "bash"} <= set(byname),
     "runtimes(): a list with Piston's names (python, javascript, c, c++, bash)", sorted(byname))
t.ok(all(isinstance(r.get("version"), str) and r["version"][0].isdigit() and isinstance(r.get("aliases"), list)
         for r in rt), "runtimes(): every entry has a dotted version and aliases", rt[:3])
t.eq((byname.get("javascript") or {}).get("runtime"), "node", "runtimes(): javascript runs on node")
t.ok("py" in (byname.get("python") or {}).get("aliases", []), "runtimes(): python's aliases include py",
     byname.get("python"))
langs = {l["name"]: l for l in request("GET", "/v1/languages")[1]["languages"]}
t.ok(byname.get("python", {}).get("version", "x") in (langs["python"].get("version") or ""),
     "runtimes(): python's version is the runtime's own (GET /v1/languages)",
     (byname.get("python"), langs["python"].get("version")))

py = out.get("python") or {}
t.eq((py.get("run") or {}).get("stdout"), "42\n", "execute('python', 'print(6*7)') -> run.stdout 42", py)
t.eq((py.get("run") or {}).get("output"), "42\n", "run.output is the output", py)
t.eq((py.get("run") or {}).get("code"), 0, "run.code 0", py)
t.ok((py.get("run") or {}).get("signal") is None and "compile" not in py, "no signal, no compile stage for python", py)
t.eq((py.get("language"), py.get("version")), ("python", byname.get("python", {}).get("version")),
     "the answer names Piston's language and the runtime's version", py)

ce = out.get("c_error") or {}
comp = ce.get("compile") or {}
t.ok(comp.get("code") not in (0, None) and "undefined_name" in (comp.get("stderr") or ""),
     "a C compile error: compile.code non-zero, compile.stderr has gcc's message", ce)
t.ok(comp.get("output") == comp.get("stderr") + comp.get("stdout", "") or "undefined_name" in comp.get("output", ""),
     "compile.output carries the message", comp)
t.ok((ce.get("run") or {}).get("code") is None and (ce.get("run") or {}).get("stdout") == "",
     "a C compile error: the run stage did not run", ce.get("run"))

st = out.get("stdin") or {}
t.eq((st.get("run") or {}).get("stdout"), "ECHO ME BACK\n", "stdin is the program's standard input, echoed back", st)

ar = out.get("args") or {}
t.eq((ar.get("run") or {}).get("stdout"), "1,2,3\n", "javascript gets piston-client's default args 1 2 3", ar)

ok = out.get("c_ok") or {}
t.eq(((ok.get("compile") or {}).get("code"), (ok.get("run") or {}).get("code"), (ok.get("run") or {}).get("stdout")),
     (0, 3, "4\n"), "C that compiles: compile.code 0, run.code 3 (its exit status), argc 4", ok)
t.eq((ok.get("run") or {}).get("status"), "RE", "a non-zero exit is status RE", ok.get("run"))

to = out.get("timeout") or {}
t.eq(((to.get("run") or {}).get("status"), (to.get("run") or {}).get("code")), ("TO", None),
     "runTimeout 500 on an endless loop: status TO, no exit code", to)
t.ok(400 <= ((to.get("run") or {}).get("wall_time") or 0) < 5000, "the timeout's wall_time is about 500 ms",
     to.get("run"))

un = out.get("unknown") or {}
t.eq(un.get("message"), "brainfuck-2.7.3 runtime is unknown", "an unknown language: Piston's message", un)

# --- the routes, raw ---
s, body = tcp(PISTON_PORT, "GET", "/v1/executions")
t.eq(s, 404, "the Piston listener serves nothing but /api/v2 (GET /v1/executions: 404)", body)
s, body = tcp(PISTON_PORT, "POST", "/v1/executions", raw=b'{"language":"python","code":"print(1)"}',
              headers={"Content-Type": "application/json"})
t.eq(s, 404, "... and POST /v1/executions is not found there either", body)
# A web page cannot use it: a browser's cross-site "simple" POST (text/plain, no preflight) carries
# Origin, a newer one Sec-Fetch-Site too.
for hdr in ({"Origin": "https://evil.example"}, {"Sec-Fetch-Site": "cross-site"}, {"Origin": "null"}):
    s, body = tcp(PISTON_PORT, "POST", "/api/v2/execute", headers=dict(hdr, **{"Content-Type": "text/plain"}),
                  body={"language": "python", "files": [{"content": "open('/workspace/output/pwned', 'w')"}]})
    t.eq(s, 403, f"the Piston listener refuses a request from a web page ({', '.join(hdr)})", body)
s, body = tcp(PISTON_PORT, "GET", "/api/v2/execute")
t.eq(s, 405, "GET /api/v2/execute: 405", body)
s, body = tcp(PISTON_PORT, "GET", "/api/v2/packages")
t.eq(s, 404, "a Piston route sandboxd does not serve: 404", body)

# The executions of the open listener are PistonOwner='s ("key:bots"): that key sees the six that ran.
s, bots = tcp(KEYED_PORT, "GET", "/v1/executions?limit=100", headers={"Authorization": f"Bearer {bots_key}"})
t.eq((s, sorted(e.get("language") for e in bots.get("executions", []))),
     (200, ["c", "c", "node", "python", "python", "python"]),
     "PistonOwner=bots: the key 'bots' lists exactly the six executions piston-client ran", bots)
s2, mine = tcp(KEYED_PORT, "GET", "/v1/executions?limit=100", headers={"Authorization": f"Bearer {key}"})
t.ok(s2 == 200 and not mine.get("executions"), "another key sees none of the Piston listener's executions", mine)

s, body = tcp(KEYED_PORT, "GET", "/api/v2/runtimes")
t.eq(s, 401, "the keyed listener wants a key for Piston's routes too", body)
s, body = tcp(KEYED_PORT, "POST", "/api/v2/execute", headers={"Authorization": f"Bearer {key}"},
              body={"language": "py", "version": "*", "files": [{"name": "x.py", "content": "print('keyed')"}]})
t.eq((s, (body.get("run") or {}).get("stdout")), (200, "keyed\n"), "POST /api/v2/execute with a key, alias py", body)
s2, mine = tcp(KEYED_PORT, "GET", "/v1/executions?limit=100", headers={"Authorization": f"Bearer {key}"})
t.eq(len(mine.get("executions", [])), 1, "that execution is the key's own", mine)

# On the unix socket, any Content-Type (piston-client sends text/plain).
s, body = request("POST", "/api/v2/execute", headers={"Content-Type": "text/plain;charset=UTF-8"},
                  body={"language": "bash", "version": "5", "files": [
                      {"content": base64.b64encode(b"cat /workspace/input/data.txt; echo \"$1\"").decode(),
                       "encoding": "base64"},
                      {"name": "data.txt", "content": "68656c6c6f0a", "encoding": "hex"}],
                      "args": ["arg one"], "run_memory_limit": 64 * 1024 * 1024})
t.eq((s, (body.get("run") or {}).get("stdout")), (200, "hello\narg one\n"),
     "unix socket: base64 program, a hex input file in /workspace/input, args, version '5' selects bash 5.x", body)

cases = [
    ({"version": "*", "files": [{"content": "x"}]}, "language is required as a string"),
    ({"language": "python", "version": "1.0", "files": [{"content": "x"}]}, "python-1.0 runtime is unknown"),
    ({"language": "python", "files": "print(1)"}, "files is required as an array"),
    ({"language": "python", "files": [{"name": "a.py"}]}, "files[0].content is required as a string"),
    ({"language": "python", "files": [{"content": "%%%", "encoding": "base64"}]}, "files[0].content is not valid base64"),
    ({"language": "python", "files": [{"content": "x"}], "run_timeout": 10 ** 9},
     "run_timeout cannot exceed the configured limit"),
    ({"language": "python", "files": [{"content": "x"}], "run_memory_limit": 1 << 50},
     "run_memory_limit cannot exceed the configured limit"),
    ({"language": "python", "files": [{"content": "x"}], "args": [1, 2]}, "args must be an array of strings"),
    ({"language": "python", "files": [{"content": "x"}, {"name": "../x", "content": "y"}]}, "files[0].path"),
]
for req, want in cases:
    s, body = request("POST", "/api/v2/execute", body=req)
    t.ok(s == 400 and want in (body.get("message") or ""), f"refused with 400 and Piston's message: {want}",
         (s, body))
s, body = request("POST", "/api/v2/execute", raw=b'{"language": "python", "language": "bash"}')
t.ok(s == 400 and "message" in body, "a key twice: 400 (strict JSON), as a message", (s, body))

# An OOM: the memory limit is the cgroup's, answered as a signal.
s, body = request("POST", "/api/v2/execute", body={
    "language": "python", "version": "3", "run_memory_limit": 32 * 1024 * 1024,
    "files": [{"content": "b = bytearray(512 * 1024 * 1024)\nprint(len(b))"}]})
run = body.get("run") or {}
t.ok(s == 200 and run.get("status") == "SG" and run.get("signal") == "SIGKILL" and run.get("code") is None,
     "run_memory_limit 32 MiB, 512 MiB allocated: status SG, SIGKILL", (s, body))
t.ok("memory" in (run.get("message") or "").lower(), "... and the message says memory", run.get("message"))

t.done()

# SPDX-License-Identifier: LGPL-2.1-or-later
# "stdin" (issue 18): the program's standard input, whole and byte for byte (512 KiB with NULs,
# newlines and unicode) in python, node, bash and a compiled language; none (or "") is EOF; the
# program cannot change it; MaxStdinBytes= refuses more with 413 naming the field; a queued run keeps
# its stdin across a SIGKILL of the daemon; sandboxctl --stdin FILE|- and D-Bus Execute carry it.
#
# "args" (issue 18): the program's arguments after itself, as its argv (python sys.argv[1:], node
# process.argv.slice(2), bash "$@"): spaces, quotes, unicode, the empty string, '$' and '%' arrive
# as given (systemd expands $NAME in ExecStart= words: sandboxd escapes them). The record echoes
# them. Refusals name the field. A run with args starts cold (a warm unit's command line is fixed);
# one without still runs warm and its program sees no arguments.
import base64
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from lib import *  # noqa: E402,F401,F403

t = Tap()
ARGS = ["a b", "it's", '"quoted"', "ünïcødé ✓", "", "$HOME", "${PATH}", "$$", "$", "%n %s %%", "--flag", "-c",
        "x\ny", "\t"]

PROGRAMS = {
    "python": "import sys, json\nprint(json.dumps(sys.argv[1:]))\n",
    "node": "console.log(JSON.stringify(process.argv.slice(2)));\n",
    # Each argument base64-encoded on a line of its own: the output's NULs and newlines are not kept as such.
    "bash": "echo $#\nfor a in \"$@\"; do printf '%s' \"$a\" | base64 -w0; echo; done\n",
    # A compiled language: the built binary's argv, each argument in hex on a line of its own.
    "c": "#include <stdio.h>\nint main(int argc, char **argv) {\n    printf(\"%d\\n\", argc - 1);\n"
         "    for (int i = 1; i < argc; i++) {\n        for (char *c = argv[i]; *c; c++)\n"
         "            printf(\"%02x\", (unsigned char) *c);\n        printf(\"\\n\");\n    }\n    return 0;\n}\n",
}


def argv_of(language, res):
    out = res.get("stdout", "")
    if language == "c":
        lines = out.split("\n")[:-1]
        if not lines or lines[0] != str(len(lines) - 1):
            return ["<count mismatch>", out]
        return [bytes.fromhex(x).decode() for x in lines[1:]]
    if language == "bash":
        lines = out.split("\n")[:-1]
        if not lines or lines[0] != str(len(lines) - 1):
            return ["<count mismatch>", out]
        return [base64.b64decode(x).decode() for x in lines[1:]]
    try:
        return json.loads(out)
    except ValueError:
        return ["<not JSON>", out]


def bus_execute(req):
    """D-Bus Execute with the request's JSON: (the execution, busctl's CompletedProcess)."""
    p = subprocess.run(["busctl", "--json=short", "call", "io.sandboxd.Sandbox1", "/io/sandboxd/Sandbox1",
                        "io.sandboxd.Sandbox1.Manager", "Execute", "s", json.dumps(req)], capture_output=True,
                       text=True, timeout=120)
    try:
        return json.loads(json.loads(p.stdout)["data"][0]), p
    except (ValueError, KeyError, IndexError):
        return {}, p


for language, code in PROGRAMS.items():
    res = run(code, language=language, args=ARGS)
    t.ok(res.get("status") == "success" and res.get("exit_code") == 0, f"{language}: runs with args",
         {k: res.get(k) for k in ("status", "exit_code", "stdout", "stderr", "error_message")})
    t.eq(argv_of(language, res), ARGS, f"{language}: its argv after itself is args, each word as given")
    t.eq(res.get("start"), "cold", f"{language}: a run with args starts cold")
    st, rec = get(res.get("execution_id"))
    t.ok(st == 200 and rec.get("args") == ARGS, f"{language}: the record echoes args", f"{st} {rec.get('args')}")
    res = run(code, language=language, args=[])
    t.eq(argv_of(language, res), [], f"{language}: args [] gives no arguments")

# Without args: no arguments, warm where the pool serves python (the harness has it on).
wait_pool_ready("python", 1, 15)
res = run(PROGRAMS["python"])
t.eq(argv_of("python", res), [], "python without args: sys.argv[1:] is []")
t.eq(res.get("start"), "warm", "python without args runs warm")
t.ok("args" not in res, "a record without args has no args field", res.get("args"))

# Refusals: 400, naming the field.
cases = [
    ("not an array", {"args": "a b"}, "args"),
    ("a number", {"args": ["a", 1]}, "args[1]"),
    ("null in the array", {"args": [None]}, "args[0]"),
    ("257 arguments", {"args": ["x"] * 257}, "args"),
    ("an argument of 4097 bytes", {"args": ["ok", "y" * 4097]}, "args[1]"),
    ("over 64 KiB in all", {"args": ["z" * 4096] * 17}, "args"),
    ("a NUL byte", {"args": ["a\u0000b"]}, "args[0]"),
]
for what, extra, field in cases:
    body = {"language": "python", "code": "print(1)"}
    body.update(extra)
    st, res = request("POST", "/v1/executions", body)
    err = res.get("error", {})
    t.ok(st == 400 and err.get("field") == field and "args" in err.get("message", ""),
         f"args {what}: 400 naming {field}", f"{st} {res}")

# At the limits: 256 arguments, one of 4096 bytes, all arrive.
big = ["%d" % i for i in range(255)] + ["w" * 4096]
res = run(PROGRAMS["python"], args=big)
t.eq(argv_of("python", res), big, "256 arguments, the last 4096 bytes long, all arrive")

# sandboxctl run ... -- ARGS: the words after "--" are the program's, options among them too.
ctl = os.path.join(BUILD, "sandboxctl", "sandboxctl")
CTL_ARGS = ["a", "b c", "--json", "-c", "", "ü"]
p = subprocess.run([ctl, "run", "-l", "python", "-c", PROGRAMS["python"], "--", *CTL_ARGS], capture_output=True,
                   text=True, timeout=120)
t.ok(p.returncode == 0 and p.stdout == json.dumps(CTL_ARGS) + "\n", "sandboxctl run -c CODE -- ARGS: the program's argv",
     f"{p.returncode} {p.stdout!r} {p.stderr!r}")
p = subprocess.run([ctl, "run", "-l", "bash", "-", "--", "x y", "z"], input='echo "$#:$1:$2"\n', capture_output=True,
                   text=True, timeout=120)
t.ok(p.returncode == 0 and p.stdout == "2:x y:z\n", "sandboxctl run -l bash - -- 'x y' z (code on stdin)",
     f"{p.returncode} {p.stdout!r} {p.stderr!r}")
p = subprocess.run([ctl, "status", "x", "--", "a"], capture_output=True, text=True, timeout=60)
t.ok(p.returncode != 0 and "'--'" in p.stderr, "sandboxctl status ID -- a: refused", f"{p.returncode} {p.stderr!r}")

# D-Bus: Execute takes the request's JSON, args included.
if shutil.which("busctl"):
    req = {"language": "node", "code": PROGRAMS["node"], "args": ["d bus", "", "✓"]}
    res, p = bus_execute(req)
    t.ok(argv_of("node", res) == req["args"] and res.get("args") == req["args"],
         "D-Bus Execute with args: node's argv, and the record echoes them", f"{p.stdout!r} {p.stderr!r}")
else:
    t.ok(True, "# SKIP no busctl")

# ---- stdin ----
import hashlib  # noqa: E402
import signal  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

STDIN_PROGRAMS = {
    "python": "import sys, hashlib\nd = sys.stdin.buffer.read()\nprint(len(d), hashlib.sha256(d).hexdigest())\n",
    "node": "const d = require('fs').readFileSync(0);\n"
            "console.log(d.length, require('crypto').createHash('sha256').update(d).digest('hex'));\n",
    "bash": "d=$(sha256sum)\necho \"${d%% *}\"\n",
    "c": "#include <stdio.h>\nint main(void) {\n    unsigned long n = 0, h = 5381; int c;\n"
         "    while ((c = getchar()) != EOF) { n++; h = h * 33 + (unsigned char) c; }\n"
         "    printf(\"%lu %lu\\n\", n, h);\n    return 0;\n}\n",
}


def djb2(b):
    h = 5381
    for c in b:
        h = (h * 33 + c) & 0xFFFFFFFFFFFFFFFF
    return h


def expect_of(language, data):
    if language == "bash":
        return hashlib.sha256(data).hexdigest() + "\n"
    if language == "c":
        return f"{len(data)} {djb2(data)}\n"
    return f"{len(data)} {hashlib.sha256(data).hexdigest()}\n"


# 512 KiB of text with newlines, unicode and NUL bytes (any byte a JSON string can carry).
line = "line ünïcødé ✓ \u0000 tab\there\n"
big = (line * (512 * 1024 // len(line.encode()) + 1))
big = big.encode()[:512 * 1024].decode("utf-8", "ignore")
big_bytes = big.encode()
for language, code in STDIN_PROGRAMS.items():
    res = run(code, language=language, stdin=big)
    t.ok(res.get("status") == "success" and res.get("stdout") == expect_of(language, big_bytes),
         f"{language}: reads {len(big_bytes)} bytes of stdin, whole and exact",
         {k: res.get(k) for k in ("status", "exit_code", "stdout", "stderr", "error_message")})
    t.eq(res.get("stdin_bytes"), len(big_bytes), f"{language}: the record says stdin_bytes")
    t.eq(res.get("start"), "cold", f"{language}: a run with stdin starts cold")
    res = run(code, language=language)
    t.eq(res.get("stdout"), expect_of(language, b""), f"{language}: without stdin it reads EOF at once")
    t.ok("stdin_bytes" not in res, f"{language}: a record without stdin has no stdin_bytes", res.get("stdin_bytes"))

res = run("a = input()\nb = input()\nprint(b, a)\ntry:\n    input()\nexcept EOFError:\n    print('EOF')\n",
          stdin="first\nsecond\n")
t.eq(res.get("stdout"), "second first\nEOF\n", "python input() reads line by line, then EOF")
res = run("import sys\nprint(repr(sys.stdin.read()))\n", stdin="")
t.ok(res.get("stdout") == "''\n" and "stdin_bytes" not in res, "stdin \"\" is none: EOF", res)

# The program cannot change its stdin: no write, no truncate, no growth (the memfd is sealed), and it
# is not a file of the workspace.
res = run("import os, errno\nfor what, f in (('write', lambda: os.write(0, b'x')), ('truncate', lambda: os.ftruncate(0, 0)),\n"
          "                  ('grow', lambda: os.ftruncate(0, 1 << 20))):\n"
          "    try:\n        f()\n        print(what, 'allowed')\n"
          "    except OSError as e:\n        print(what, errno.errorcode[e.errno])\n"
          "print(os.read(0, 100).decode())\n"
          "print(os.readlink('/proc/self/fd/0').startswith('/memfd:'))\n", stdin="kept")
out = res.get("stdout", "")
t.ok(all(f"{w} allowed" not in out for w in ("write", "truncate", "grow")) and "kept\n" in out and out.endswith("True\n"),
     "the program can neither write, truncate nor grow its stdin (a sealed memfd)", out)

# MaxStdinBytes= (default 1 MiB): at the cap accepted, one byte over refused with 413 naming stdin.
res = run(STDIN_PROGRAMS["python"], stdin="s" * (1024 * 1024))
t.eq(res.get("stdout"), expect_of("python", b"s" * (1024 * 1024)), "1 MiB of stdin (MaxStdinBytes= default): accepted")
st, res = request("POST", "/v1/executions", {"language": "python", "code": "1", "stdin": "s" * (1024 * 1024 + 1)})
err = res.get("error", {})
t.ok(st == 413 and err.get("field") == "stdin" and "MaxStdinBytes=" in err.get("message", ""),
     "1 MiB + 1 byte of stdin: 413 naming stdin and MaxStdinBytes=", f"{st} {err}")
for bad in (1, None, ["x"]):
    st, res = request("POST", "/v1/executions", {"language": "python", "code": "1", "stdin": bad})
    t.ok(st == 400 and res.get("error", {}).get("field") == "stdin", f"stdin {bad!r}: 400 naming stdin", f"{st} {res}")

# A queued run keeps its stdin across a SIGKILL of sandboxd: one slot, a sleeper holds it, the stdin
# run waits in the queue (stored with its request), the daemon dies and comes back, the run reads
# exactly what was sent.
confdir = os.environ["SANDBOXD_CONFIG_DIR"]
os.makedirs(f"{confdir}/sandboxd.conf.d", exist_ok=True)
with open(f"{confdir}/sandboxd.conf.d/50-stdin.conf", "w") as f:
    f.write("[Daemon]\nMaxConcurrent=1\n")
subprocess.run(["systemctl", "reload", "sandboxd.service"], check=True)
wait_until(lambda: health().get("slots") == 1, 10)
st1, _ = submit("import time\ntime.sleep(3)\n", start="cold", execution_id="stdin_hold")
st2, _ = submit(STDIN_PROGRAMS["python"], stdin="queued ✓\n" * 1000, start="cold", execution_id="stdin_queued")
t.ok(st1 == 202 and st2 == 202 and wait_until(lambda: health().get("queued") == 1, 10),
     "one slot: the stdin run waits in the queue", health())
old_pid = daemon_pid()
os.kill(old_pid, signal.SIGKILL)
t.ok(wait_until(lambda: subprocess.run(["systemctl", "is-active", "-q", "sandboxd.service"]).returncode == 0
                and daemon_pid() not in (0, old_pid), 30), "SIGKILL: systemd restarted sandboxd")
st, res = get("stdin_queued", wait=True)
t.ok(res.get("status") == "success" and res.get("stdout") == expect_of("python", ("queued ✓\n" * 1000).encode()),
     "the queued run resumed after the restart with its whole stdin", {k: res.get(k) for k in ("status", "stdout",
                                                                                               "error_message")})
get("stdin_hold", wait=True)
os.unlink(f"{confdir}/sandboxd.conf.d/50-stdin.conf")
subprocess.run(["systemctl", "reload", "sandboxd.service"], check=True)
wait_until(lambda: health().get("slots", 1) > 1, 10)

# sandboxctl run --stdin FILE | - (the code then comes from -c or a FILE).
with tempfile.NamedTemporaryFile("wb", suffix=".txt", delete=False) as f:
    f.write(big_bytes)
    stdin_file = f.name
p = subprocess.run([ctl, "run", "-l", "python", "-c", STDIN_PROGRAMS["python"], "--stdin", stdin_file],
                   capture_output=True, text=True, timeout=120)
t.ok(p.returncode == 0 and p.stdout == expect_of("python", big_bytes), "sandboxctl run --stdin FILE",
     f"{p.returncode} {p.stdout!r} {p.stderr!r}")
p = subprocess.run([ctl, "run", "-l", "bash", "-c", "tr a-z A-Z", "--stdin", "-"], input="from the pipe\n",
                   capture_output=True, text=True, timeout=120)
t.ok(p.returncode == 0 and p.stdout == "FROM THE PIPE\n", "sandboxctl run --stdin - (sandboxctl's own stdin)",
     f"{p.returncode} {p.stdout!r} {p.stderr!r}")
p = subprocess.run([ctl, "run", "-l", "bash", "-", "--stdin", "-"], input="echo x\n", capture_output=True, text=True,
                   timeout=60)
t.ok(p.returncode != 0 and "--stdin" in p.stderr, "sandboxctl run - --stdin -: refused (one standard input)",
     f"{p.returncode} {p.stderr!r}")
with open(stdin_file, "wb") as f:
    f.write(b"\xff\xfe not text")
p = subprocess.run([ctl, "run", "-l", "bash", "-c", "cat", "--stdin", stdin_file], capture_output=True, text=True,
                   timeout=60)
t.ok(p.returncode != 0 and "UTF-8" in p.stderr, "sandboxctl run --stdin FILE with invalid UTF-8: refused, saying why",
     f"{p.returncode} {p.stderr!r}")
os.unlink(stdin_file)

# D-Bus Execute: the request's JSON, stdin included.
if shutil.which("busctl"):
    req = {"language": "python", "code": STDIN_PROGRAMS["python"], "stdin": "über den Bus\n"}
    res, p = bus_execute(req)
    t.ok(res.get("stdout") == expect_of("python", req["stdin"].encode()) and
         res.get("stdin_bytes") == len(req["stdin"].encode()),
         "D-Bus Execute with stdin: the program reads it, the record counts it", f"{p.stdout!r} {p.stderr!r}")
else:
    t.ok(True, "# SKIP no busctl")

t.done()

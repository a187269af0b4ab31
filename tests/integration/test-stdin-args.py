# SPDX-License-Identifier: LGPL-2.1-or-later
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
    p = subprocess.run(["busctl", "--json=short", "call", "io.sandboxd.Sandbox1", "/io/sandboxd/Sandbox1",
                        "io.sandboxd.Sandbox1.Manager", "Execute", "s", json.dumps(req)], capture_output=True,
                       text=True, timeout=120)
    try:
        res = json.loads(json.loads(p.stdout)["data"][0])
    except (ValueError, KeyError, IndexError):
        res = {}
    t.ok(argv_of("node", res) == req["args"] and res.get("args") == req["args"],
         "D-Bus Execute with args: node's argv, and the record echoes them", f"{p.stdout!r} {p.stderr!r}")
else:
    t.ok(True, "# SKIP no busctl")

t.done()

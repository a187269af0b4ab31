# SPDX-License-Identifier: LGPL-2.1-or-later
# Language definitions are data (sandboxd.languages(5)): the vendor files the daemon starts with, a
# language added, masked, overridden and broken in CONFIG_DIR/languages/ and taken up by `systemctl
# reload sandboxd` without rebuilding anything, the 400 for a language whose runtime is missing, a
# compile step's own time limit, and one language's extra path and system calls invisible to another.
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from lib import *  # noqa: E402,F401,F403

t = Tap()
CONF = os.environ.get("SANDBOXD_CONFIG_DIR") or "/etc/sandboxd"
LANGS = os.path.join(CONF, "languages")
RO_DIR = "/opt/sandboxd-test-awk-ro"      # a host path only the awk language's units see
MARK = "awk-only-" + os.urandom(6).hex()


def reload():
    subprocess.run(["systemctl", "reload", "sandboxd.service"], check=True)


def put(name, text):
    os.makedirs(LANGS, exist_ok=True)
    with open(os.path.join(LANGS, name), "w") as f:
        f.write(text)


def languages():
    st, res = request("GET", "/v1/languages")
    assert st == 200, res
    return {l["name"]: l for l in res["languages"]}


# --- the vendor files -------------------------------------------------------------------------
ls = languages()
t.ok({"python", "node", "bash"} <= set(ls), "python, node and bash come from the vendor files", sorted(ls))
t.eq(ls["python"]["aliases"], ["python3", "py"], "python's aliases from python.conf")
t.eq((ls["bash"]["compiled"], ls["bash"]["available"]), (True, True), "bash: a compile step (bash -n), available")
t.ok(wait_until(lambda: all(languages()[n].get("version") for n in ("python", "node", "bash")), 20, 0.2),
     "the runtimes' versions are reported (Version=, probed as nobody)",
     {n: languages()[n].get("version") for n in ("python", "node", "bash")})
v = languages()["python"].get("version") or ""
t.ok(v.startswith("Python 3."), "python's version is what python3 --version prints", v)

# --- a language added in CONFIG_DIR/languages, taken up by a reload -----------------------------
os.makedirs(RO_DIR, exist_ok=True)
with open(os.path.join(RO_DIR, "data.txt"), "w") as f:
    f.write(MARK + "\n")
os.chmod(RO_DIR, 0o755)
os.chmod(os.path.join(RO_DIR, "data.txt"), 0o644)
AWK = f"""# awk, added by test-language-files
[Language]
Name=awk
Aliases=mawk
SourceFile=main.awk
Runtime=/usr/bin/mawk
Run=/usr/bin/mawk -f %s
Version=/usr/bin/mawk -W version

[Sandbox]
ReadOnlyPath={RO_DIR} test data only awk programs read
SystemCall=pkey_alloc only to show that another language's units do not get it
"""
put("awk.conf", AWK)
st, res = submit('BEGIN { print "x" }', "awk")
t.eq(st, 400, "before the reload awk is unknown", res)
reload()
ls = languages()
t.ok("awk" in ls and ls["awk"]["available"], "after systemctl reload awk is listed and available", ls.get("awk"))
r = run('BEGIN { print "hello from awk"; exit 3 }', "awk")
t.eq((r.get("stdout"), r.get("exit_code")), ("hello from awk\n", 3), "an awk program runs (no rebuild)", r)
r = run('BEGIN { print "by alias" }', "mawk")
t.verdict(r, "success", None, "awk by its alias")
r = run(f'BEGIN {{ while ((getline l < "{RO_DIR}/data.txt") > 0) print l }}', "awk")
t.eq(r.get("stdout"), MARK + "\n", "awk's units see its ReadOnlyPath=", r)

# --- no language's extras in another's units ----------------------------------------------------
r = run(f"import os\nprint(os.path.exists('{RO_DIR}'))")
t.eq(r.get("stdout"), "False\n", "python's units do not see awk's ReadOnlyPath=", r)
r = run(f"ls -d {RO_DIR} 2>&1; echo rc=$?", "bash")
t.ok("rc=0" not in (r.get("stdout") or ""), "bash's units do not see it either", r)
# pkey_alloc (330 on x86-64): node's and awk's SystemCall=, ENOSYS (38) in python's units.
r = run("import ctypes, ctypes.util\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "rc = libc.syscall(330, 0, 0)\nprint(rc, ctypes.get_errno())")
t.eq(r.get("stdout"), "-1 38\n", "pkey_alloc is ENOSYS in python's units (node's and awk's extra call)", r)

# --- a runtime that is not installed: listed, with the reason; a request gets a clear 400 --------
put("ghost.conf", "[Language]\nName=ghost\nSourceFile=main.gh\nRuntime=/nonexistent/ghost\n"
    "Run=/nonexistent/ghost %s\n")
reload()
g = languages().get("ghost") or {}
t.eq(g.get("available"), False, "a language whose runtime is missing is listed as not available", g)
t.ok("/nonexistent/ghost" in (g.get("reason") or ""), "... with the reason", g)
st, res = submit("x", "ghost")
t.eq(st, 400, "a request for it gets 400", res)
t.ok("not available" in json.dumps(res) and "/nonexistent/ghost" in json.dumps(res),
     "... saying it is not available and why", res)

# --- a ReadOnlyPath= over the sandbox's own directories: the language is refused ---------------
put("overrun.conf", "[Language]\nName=overrun\nSourceFile=main.o\nRuntime=/bin/true\nRun=/bin/true %s\n"
    "[Sandbox]\nReadOnlyPath=/var/lib/sandboxd a path the sandbox must never see\n")
reload()
o = languages().get("overrun") or {}
t.ok(o.get("available") is False and "ReadOnlyPath=/var/lib/sandboxd" in (o.get("reason") or ""),
     "a ReadOnlyPath= below the sandbox's own directories makes the language unavailable", o)

# --- a malformed file: refused with its path and line; the others keep working -------------------
put("broken.conf", "[Language]\nName=broken\nSourceFile=main.b\nRun=relative/path %s\n")
reload()
ls = languages()
t.ok("broken" not in ls and "awk" in ls and "python" in ls, "a malformed file is left out, the others load",
     sorted(ls))
r = run("print('still here')")
t.eq(r.get("stdout"), "still here\n", "python runs after a reload with a broken file", r)
out = subprocess.run(["journalctl", "-u", "sandboxd.service", "--no-pager", "-o", "cat", "-n", "400"],
                     capture_output=True, text=True).stdout
t.ok(os.path.join(LANGS, "broken.conf") + ":4:" in out, "the journal names the file and the line", out[-2000:])

# --- a compile step's own time limit ([Compile] TimeoutSec=) -------------------------------------
put("slowc.conf", "[Language]\nName=slowc\nSourceFile=main.s\nRuntime=/bin/sleep\nRun=/bin/true\n"
    "[Compile]\nCommand=/bin/sleep 60\nTimeoutSec=2\n")
reload()
r = run("x", "slowc", limits={"timeout_ms": 120000})
t.verdict(r, "failed", "timeout", "a compile step past its TimeoutSec= is stopped")
t.ok((r.get("duration_ms") or 0) < 40000, "... by its own limit, not the run's 120 s", r.get("duration_ms"))

# --- a compile step's own memory limit ([Compile] MemoryMB=, RLIMIT_DATA per process) ------------
# The "compiler" is python3 running the source, which allocates 200 MiB; the run step is /bin/true.
GREEDY = ("[Language]\nName={name}\nSourceFile=main.py\nRuntime=/usr/bin/python3\nRun=/bin/true\n"
          "[Compile]\nCommand=/usr/bin/python3 %s\nMemoryMB={mb}\n")
ALLOC = "x = bytearray(200 << 20)\nprint('compiled', len(x) >> 20)\n"
put("greedy1.conf", GREEDY.format(name="greedy1", mb=64))
put("greedy2.conf", GREEDY.format(name="greedy2", mb=1024))
reload()
r = run(ALLOC, "greedy1", limits={"memory_mb": 512})
t.verdict(r, "failed", "compile_error", "a compile step beyond its MemoryMB= fails as a compile error")
t.ok("MemoryError" in (r.get("stderr") or ""), "... with the compiler's own out-of-memory message", r.get("stderr"))
r = run(ALLOC, "greedy2", limits={"memory_mb": 512})
t.verdict(r, "success", None, "the same compile step within a larger MemoryMB= compiles")
t.eq(r.get("stdout"), "compiled 200\n", "... and its output is the compile step's", r)

# --- masking: an empty file in CONFIG_DIR/languages hides the vendor language --------------------
put("bash.conf", "")
reload()
st, res = submit("echo hi", "bash")
t.eq(st, 400, "an empty bash.conf masks bash", res)
os.unlink(os.path.join(LANGS, "bash.conf"))
reload()
r = run("echo back", "bash")
t.eq(r.get("stdout"), "back\n", "removing the mask brings bash back")

# --- an override: CONFIG_DIR/languages/python.conf wins over the vendor one -------------------------
vendor = None
for d in ("/usr/local/lib/sandboxd/languages", "/usr/lib/sandboxd/languages",
          os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "..", "languages")):
    if os.path.exists(os.path.join(d, "python.conf")):
        vendor = os.path.join(d, "python.conf")
        break
if t.ok(vendor is not None, "the vendor python.conf is found", vendor):
    with open(vendor) as f:
        text = f.read()
    put("python.conf", text.replace("Environment=PYTHONDONTWRITEBYTECODE=1",
                                    "Environment=PYTHONDONTWRITEBYTECODE=1 SANDBOXD_OVERRIDE=etc"))
    reload()
    r = run("import os\nprint(os.environ.get('SANDBOXD_OVERRIDE'))", start="cold")
    t.eq(r.get("stdout"), "etc\n", "an /etc python.conf overrides the vendor one", r)
    os.unlink(os.path.join(LANGS, "python.conf"))

# --- clean up ------------------------------------------------------------------------------------
for n in ("awk.conf", "ghost.conf", "broken.conf", "slowc.conf", "overrun.conf", "greedy1.conf", "greedy2.conf"):
    try:
        os.unlink(os.path.join(LANGS, n))
    except FileNotFoundError:
        pass
reload()
ls = languages()
t.ok("awk" not in ls and "ghost" not in ls, "after the files go and a reload, so do the languages", sorted(ls))
shutil.rmtree(RO_DIR, ignore_errors=True)
t.done()

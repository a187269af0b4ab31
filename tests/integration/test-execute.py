# SPDX-License-Identifier: LGPL-2.1-or-later
# Real programs in real units: every verdict a program can earn, the protocol's validation, the
# reproducible environment and idempotency.
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from lib import *  # noqa: E402,F401,F403

t = Tap()

# --- verdicts -------------------------------------------------------------------------------
r = run("print('hello')")
t.verdict(r, "success", None, "python hello")
t.eq(r["stdout"], "hello\n", "python stdout")
t.eq(r["exit_code"], 0, "python exit code 0")
t.eq((r["stdout_bytes"], r["stdout_lines"], r["stdout_truncated"]), (6, 1, False), "stdout counts")
# A cold start's unit is named after the execution; a warm one has the pool's name (test-warm-pool.py).
t.ok(r["unit"] == f"sandboxd-{r['execution_id']}.service" if r.get("start") == "cold" else
     r.get("start") == "warm" and r["unit"].startswith("sandboxd-warm-"),
     "unit name is sandboxd-<id>.service (cold) or the warm pool's", (r.get("start"), r["unit"]))
t.ok(isinstance(r["duration_ms"], int) and r["duration_ms"] >= 0, "duration_ms reported", r["duration_ms"])
t.ok(isinstance(r["peak_memory_mb"], (int, float)) and r["peak_memory_mb"] > 0, "peak_memory_mb reported",
     r["peak_memory_mb"])
t.ok(isinstance(r["cpu_time_ms"], int), "cpu_time_ms reported", r["cpu_time_ms"])

r = run("print('unclosed'")
t.verdict(r, "failed", "compile_error", "python SyntaxError")
t.ok("SyntaxError" in r["stderr"], "python syntax error message on stderr", r["stderr"])

r = run("def f():\n    raise ValueError('boom')\nf()\n")
t.verdict(r, "failed", "runtime_error", "python exception")
t.ok("ValueError: boom" in r["stderr"] and r["exit_code"] == 1, "traceback and exit 1", r["stderr"])

r = run("echo out; echo err >&2; exit 3", language="bash")
t.verdict(r, "failed", "runtime_error", "bash exit 3")
t.eq((r["exit_code"], r["stdout"], r["stderr"]), (3, "out\n", "err\n"), "bash exit code and streams")

r = run("if then fi", language="bash")
t.verdict(r, "failed", "compile_error", "bash syntax error")

r = run("import ctypes\nctypes.string_at(0)\n")
t.verdict(r, "failed", "runtime_error", "segfault")
t.eq((r["signal"], r["exit_code"]), (11, None), "segfault: signal 11, no exit code")

r = run("console.log('hi from node', 1 + 1)", language="node")
t.verdict(r, "success", None, "node hello")
t.eq(r["stdout"], "hi from node 2\n", "node stdout")

r = run("function (", language="node")
t.verdict(r, "failed", "compile_error", "node SyntaxError")

r = run("throw new Error('nope')", language="javascript")
t.verdict(r, "failed", "runtime_error", "node exception (alias javascript)")
t.ok("Error: nope" in r["stderr"], "node error on stderr", r["stderr"])

r = run("import sys; sys.exit(0)")
t.verdict(r, "success", None, "explicit exit 0")

# --- reproducible environment ----------------------------------------------------------------
code = ("import os, time, json\n"
        "print(json.dumps({'cwd': os.getcwd(), 'env': dict(os.environ), 'tz': time.tzname[0]}))\n")
r = run(code, env={"MY_VAR": "x y", "A_FIRST": "1"}, seed=42)
t.verdict(r, "success", None, "environment probe")
import json as _json  # noqa: E402
info = _json.loads(r["stdout"])
env = info["env"]
t.eq(info["cwd"], "/workspace", "cwd is /workspace")
for k, v in {"TZ": "UTC", "LANG": "C.UTF-8", "PYTHONHASHSEED": "0", "SANDBOX_SEED": "42", "HOME": "/workspace",
             "MY_VAR": "x y", "A_FIRST": "1", "TMPDIR": "/tmp"}.items():
    t.eq(env.get(k), v, f"env {k}")
leaked = [k for k in env if k in ("INVOCATION_ID", "NOTIFY_SOCKET", "SANDBOXD_SOCKET", "SANDBOXD_BUILD_DIR",
                                  "WATCHDOG_USEC", "JOURNAL_STREAM", "LISTEN_FDS", "SANDBOX_HARNESS")
          or k.startswith("SANDBOXD_")]
t.eq(leaked, [], "no daemon or harness environment reaches the sandbox")
r2 = run(code, env={"MY_VAR": "x y", "A_FIRST": "1"}, seed=42)
env2 = _json.loads(r2["stdout"])["env"]
t.eq(list(env2.items()), list(env.items()), "same request, same environment in the same order")

# --- protocol validation: nothing is started --------------------------------------------------
before = health()["finished"]
cases = [
    ({"language": "python", "code": "1", "bogus": 1}, 400, "bogus"),
    ({"language": "python"}, 400, "code"),
    ({"language": "cobol", "code": "1"}, 400, "language"),
    ({"language": "python", "code": 5}, 400, "code"),
    ({"language": "python", "code": "1", "limits": {"memory_mb": 10 ** 9}}, 400, "limits.memory_mb"),
    ({"language": "python", "code": "1", "limits": {"timeout_ms": "fast"}}, 400, "limits.timeout_ms"),
    ({"language": "python", "code": "1", "limits": {"cpu_cores": 64}}, 400, "limits.cpu_cores"),
    ({"language": "python", "code": "1", "limits": {"nope": 1}}, 400, "limits"),
    ({"language": "python", "code": "1", "env": {"LD_PRELOAD": "x"}}, 400, "env.LD_PRELOAD"),
    ({"language": "python", "code": "1", "env": {"1BAD": "x"}}, 400, "env.1BAD"),
    ({"language": "python", "code": "1", "execution_id": "../etc"}, 400, "execution_id"),
    ({"language": "python", "code": "1", "files": [{"path": "../x", "url": "http://h/"}]}, 400, "files[0].path"),
    ({"language": "python", "code": "1", "callback_url": "ftp://x/"}, 400, "callback_url"),
]
for body, want_status, field in cases:
    st, res = request("POST", "/v1/executions", body)
    err = res.get("error", {})
    t.ok(st == want_status and err.get("field") == field, f"refused {field} with {want_status}", f"{st} {res}")
st, res = request("POST", "/v1/executions", raw=b'{"language": "python", "code": ')
t.ok(st == 400 and res["error"]["code"] == "invalid_json", "truncated JSON refused", res)
st, res = request("POST", "/v1/executions", raw=b'{"language": "python", "code": "\xff"}')
t.ok(st == 400 and res["error"]["code"] == "invalid_json", "non-UTF-8 JSON refused", res)
# JSON that json-c reads one way and other parsers (a gateway that checked it) another: refused, the
# field naming the member. json-c alone took the last duplicate, cut a key at \u0000 and clamped 2^64.
REQ = b'{"language": "python", "code": "print(1)", '
for raw, field, what in (
        (REQ + b'"limits": {"memory_mb": 64, "memory_mb": 8192}}', "limits.memory_mb", "duplicate key 'memory_mb'"),
        (REQ + b'"language": "bash"}', "language", "duplicate key 'language'"),
        (REQ + b'"limits": {"memory_mb\\u0000": 8192}}', "limits", "a key contains \\u0000"),
        (REQ + b'"seed": 18446744073709551616}', "seed", "18446744073709551616 is out of range"),
        (REQ + b'"limits": {"timeout_ms": NaN}}', None, "NaN"),
        (REQ + b'"env": {"A": "a\tb"}}', "env.A", "raw control character U+0009")):
    st, res = request("POST", "/v1/executions", raw=raw)
    err = res.get("error", {})
    t.ok(st == 400 and err.get("code") == "invalid_json" and err.get("field") == field and what in err.get("message", ""),
         f"not strict JSON refused: {what}", (raw, st, res))
st, res = request("POST", "/v1/executions", raw=b"[" * 100 + b"]" * 100)
t.ok(st == 400, "deeply nested JSON refused", res)
st, res = request("POST", "/v1/executions", body={"language": "python", "code": "1"},
                  headers={"Content-Type": "text/plain"})
t.eq(st, 415, "wrong content type refused")
st, res = request("POST", "/v1/executions", raw=b'{"language":"python","code":"' + b"#" * (3 << 20) + b'"}')
t.ok(st == 413 and res["error"]["code"] == "too_large", "oversized body refused with 413", (st, res))
st, res = request("GET", "/v1/executions/does-not-exist")
t.eq(st, 404, "unknown execution is 404")
st, res = request("DELETE", "/v1/executions")
t.eq(st, 405, "wrong method is 405")
t.eq(health()["finished"], before, "no refused request started an execution")
# The record is final once the unit has ended; systemd collects the inactive unit a moment later.
t.ok(wait_until(lambda: not execution_units(), 10), "no unit left behind",
     [(u, unit_state(u)) for u in execution_units()])

# --- idempotency --------------------------------------------------------------------------
eid = "exec_idem_1"
st1, a = submit("import time; time.sleep(0.3); print('once')", execution_id=eid)
st2, b = submit("import time; time.sleep(0.3); print('once')", execution_id=eid)
t.ok(st1 == 202 and st2 in (200, 202) and a["execution_id"] == b["execution_id"] == eid,
     "resubmitting an execution_id returns the same execution", (st1, a, st2, b))
st, final = get(eid, wait=True)
t.verdict(final, "success", None, "idempotent execution ran")
st3, c = submit("print('different')", execution_id=eid)
t.eq(st3, 409, "same execution_id with a different request is a conflict")
fin_before = health()["finished"]
st4, d = request("POST", "/v1/executions?wait=true",
                 {"language": "python", "code": "import time; time.sleep(0.3); print('once')", "execution_id": eid})
t.ok(st4 == 200 and d["stdout"] == "once\n" and health()["finished"] == fin_before,
     "resubmitting a finished execution returns its result without a second run", (st4, d))

# --- cancel ---------------------------------------------------------------------------------
st, a = submit("import time\nprint('started', flush=True)\ntime.sleep(60)\n")
eid = a["execution_id"]
t.ok(wait_until(lambda: get(eid)[1]["status"] == "running", 10), "long execution is running")
st, c = request("POST", f"/v1/executions/{eid}/cancel")
t.eq(st, 202, "cancel accepted")
st, final = get(eid, wait=True)
t.ok(final["status"] == "cancelled" and final["error_type"] is None, "cancelled execution has status cancelled",
     final)
t.ok(final["unit"] and wait_until(lambda: final["unit"] not in sandboxd_units(), 10), "cancelled unit is gone",
     (final["unit"], sandboxd_units()))
st, c = request("POST", f"/v1/executions/{eid}/cancel")
t.eq(st, 409, "cancelling a finished execution is a conflict")
st, c = request("POST", "/v1/executions/nope/cancel")
t.eq(st, 404, "cancelling an unknown execution is 404")

# --- journal: one structured entry at start and one at the end, program output never -------
import subprocess as _sp  # noqa: E402
r = run("print('JOURNAL-PROBE-OUTPUT')", session_id="sess_journal")
eid = r["execution_id"]


def journal_entries():
    out = _sp.run(["journalctl", "--no-pager", "-o", "json", f"SANDBOXD_EXECUTION_ID={eid}"], capture_output=True,
                  text=True).stdout
    return [_json.loads(l) for l in out.splitlines() if l.strip()]


# journald writes what it received on its own time: the end entry, sent as the answer went out, was once
# not there yet for a journalctl run at once (ASan build, a VM beside it).
wait_until(lambda: len(journal_entries()) >= 2, 10)
entries = journal_entries()
t.eq([e.get("SANDBOXD_STATUS") for e in entries], ["running", "success"], "journal: a start and an end entry")
last = entries[-1] if entries else {}
t.ok(last.get("SANDBOXD_SESSION_ID") == "sess_journal" and last.get("SANDBOXD_LANGUAGE") == "python"
     and last.get("UNIT") == f"sandboxd-{eid}.service" and last.get("SANDBOXD_DURATION_MS", "").isdigit()
     and "SANDBOXD_PEAK_MEMORY_MB" in last and last.get("SANDBOXD_ERROR_TYPE") == "",
     "journal: the end entry carries the fields", last)
sess = _sp.run(["journalctl", "--no-pager", "-o", "cat", "SANDBOXD_SESSION_ID=sess_journal"], capture_output=True,
               text=True).stdout
t.ok(eid in sess, "journalctl SANDBOXD_SESSION_ID= pulls the session", sess)
unit_log = _sp.run(["journalctl", "--no-pager", "-o", "cat", "-u", get(eid)[1]["unit"]], capture_output=True,
                   text=True).stdout
t.ok(eid in unit_log and "JOURNAL-PROBE-OUTPUT" not in unit_log, "journalctl -u shows the run, not its output",
     unit_log)
# A client-chosen id: the journal carries it and the record id the unit is named after.
rn = run("print(1)", execution_id="journal_named", start="cold")
out = _sp.run(["journalctl", "--no-pager", "-o", "json", "SANDBOXD_EXECUTION_ID=journal_named"], capture_output=True,
              text=True).stdout
named = [_json.loads(l) for l in out.splitlines() if l.strip()]
t.ok(len(named) == 2 and rn.get("record_id") not in (None, "journal_named") and
     all(e.get("SANDBOXD_RECORD_ID") == rn["record_id"] and e.get("UNIT") == f"sandboxd-{rn['record_id']}.service"
         for e in named), "journal: the caller's id in SANDBOXD_EXECUTION_ID, the unit's in SANDBOXD_RECORD_ID",
     (rn.get("record_id"), named[-1:] and {k: named[-1].get(k) for k in ("SANDBOXD_RECORD_ID", "UNIT")}))
# A warm run's unit has the pool's name: the journal names the unit it really ran in, as the record does.
t.ok(wait_pool_ready(), "the warm pool has a python unit ready")
rw = run("print(1)", execution_id="journal_warm")
out = _sp.run(["journalctl", "--no-pager", "-o", "json", "SANDBOXD_EXECUTION_ID=journal_warm"], capture_output=True,
              text=True).stdout
warm = [_json.loads(l) for l in out.splitlines() if l.strip()]
t.ok(rw.get("start") == "warm" and rw["unit"].startswith("sandboxd-warm-") and len(warm) == 2 and
     all(e.get("UNIT") == rw["unit"] and e.get("SANDBOXD_RECORD_ID") == rw["record_id"] for e in warm),
     "journal: a warm run's entries name its (pool-named) unit and its record id",
     (rw.get("start"), rw.get("unit"), warm[-1:] and {k: warm[-1].get(k) for k in ("SANDBOXD_RECORD_ID", "UNIT")}))
allj = _sp.run(["journalctl", "--no-pager", "-o", "cat", "-g", "JOURNAL-PROBE-OUTPUT"], capture_output=True,
               text=True).stdout
t.eq(allj.strip(), "", "program output is nowhere in the journal")

# --- languages and health ---------------------------------------------------------------------
st, langs = request("GET", "/v1/languages")
names = {l["name"]: l for l in langs["languages"]}
t.ok(st == 200 and {"python", "node", "bash"} <= set(names), "languages lists python, node, bash", langs)
t.ok(all(names[n]["available"] for n in ("python", "node", "bash")), "runtimes available", langs)
h = health()
t.ok(h["status"] == "ok" and h["slots"] >= 1, "health", h)

# --- a waiting caller that goes away ------------------------------------------------------------
# POST ?wait=true and MCP's run_code hold the request open (api_wait_job()); a caller that hangs up
# meanwhile leaves the run going, and nothing of its wait behind (ASan's leg sees a leak or a use
# after free here).
import socket as _socket  # noqa: E402
import time as _time  # noqa: E402
for what, path, body in (
        ("POST /v1/executions?wait=true", "/v1/executions?wait=true",
         {"language": "python", "code": "import time\ntime.sleep(1.5)\nprint('after the hang-up')",
          "execution_id": "gone_wait"}),
        ("POST /mcp run_code", "/mcp",
         {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
          "params": {"name": "run_code", "arguments": {"language": "python",
                                                      "code": "import time\ntime.sleep(1.5)\nprint('mcp after')"}}})):
    data = _json.dumps(body).encode()
    sk = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    sk.connect(SOCKET)
    sk.sendall(f"POST {path} HTTP/1.1\r\nHost: l\r\nContent-Type: application/json\r\n"
               f"Accept: application/json, text/event-stream\r\nContent-Length: {len(data)}\r\n\r\n".encode() + data)
    started = wait_until(lambda: health().get("running", 0) == 1, 10)
    sk.close()
    t.ok(started, f"{what}: the run started while its caller waited", health())
    t.ok(wait_until(lambda: health().get("running", 1) == 0, 30), f"{what}: the caller hung up, the run went on to its end",
         health())
st, r = get("gone_wait")
t.ok(st == 200 and r.get("status") == "success" and r.get("stdout") == "after the hang-up\n",
     "the hung-up caller's execution finished and kept its output", r)
t.eq(health().get("status"), "ok", "sandboxd is fine after both hang-ups")

t.done()

# SPDX-License-Identifier: LGPL-2.1-or-later
# GET /metrics under a known workload: a fixed mix of verdicts gives exact counter values per label
# set and exact histogram counts; histograms are cumulative and end at +Inf == _count; the gauges
# come back to 0; promtool accepts the text. Then sandboxctl stats reports the same mix from the
# store, and sandboxctl top shows a running execution.
import hashlib
import http.client
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from lib import *  # noqa: E402,F401,F403

t = Tap()
ctl = os.path.join(BUILD, "sandboxctl", "sandboxctl")


def fetch_metrics(method="GET"):
    conn = UnixConnection(SOCKET, timeout=60)
    conn.request(method, "/metrics")
    resp = conn.getresponse()
    body = resp.read().decode()
    conn.close()
    return resp.status, resp.getheader("Content-Type"), body


SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse(text):
    """{(name, frozenset of (label, value))): float}; exits the test on a line it cannot read."""
    samples = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        if not m:
            t.ok(False, "every sample line parses", line)
            t.done()
        labels = frozenset(LABEL.findall(m.group(2) or ""))
        samples[(m.group(1), labels)] = float(m.group(3))
    return samples


def series(samples, name):
    return {dict(k[1]).get("le") if "le" in dict(k[1]) else tuple(sorted(k[1])): v
            for k, v in samples.items() if k[0] == name}


def value(samples, name, **labels):
    return samples.get((name, frozenset(labels.items())))


def executions_total(samples):
    return {(dict(k[1])["language"], dict(k[1])["status"], dict(k[1])["error_type"]): v
            for k, v in samples.items() if k[0] == "sandboxd_executions_total"}


HISTOGRAMS = ["sandboxd_execution_queue_wait_seconds", "sandboxd_execution_start_latency_seconds",
              "sandboxd_execution_duration_seconds", "sandboxd_execution_peak_memory_bytes",
              "sandboxd_execution_cpu_seconds", "sandboxd_execution_first_output_seconds"]


def check_histogram(samples, name):
    buckets = series(samples, name + "_bucket")
    count = value(samples, name + "_count")
    total = value(samples, name + "_sum")
    finite = sorted((float(le), v) for le, v in buckets.items() if le != "+Inf")
    counts = [v for _, v in finite] + [buckets.get("+Inf")]
    t.ok(None not in counts and all(a <= b for a, b in zip(counts, counts[1:])),
         f"{name}: buckets are cumulative", counts)
    t.eq(buckets.get("+Inf"), count, f"{name}: +Inf bucket == _count")
    t.ok(total is not None and total >= 0, f"{name}: _sum present", total)
    return count


# ---- before anything ran: every expected series exists, at 0 ----
st, ctype, text = fetch_metrics()
t.eq(st, 200, "GET /metrics answers 200")
t.ok(ctype and ctype.startswith("text/plain; version=0.0.4"), f"Content-Type is the 0.0.4 text format ({ctype})")
s0 = parse(text)
t.eq(sum(executions_total(s0).values()), 0, "no executions counted yet")
t.eq(value(s0, "sandboxd_executions_total", language="python", status="success", error_type="none"), 0.0,
     "the success series exists before the first execution")
st, _, _ = fetch_metrics("POST")
t.eq(st, 405, "POST /metrics is refused")

# ---- the known mix ----
MIX = [
    # (count, language, code, extra fields, status, error_type)
    (5, "python", "print('ok')", {}, "success", None),
    (3, "python", "import sys\nsys.exit(1)", {}, "failed", "runtime_error"),
    (2, "python", "def broken(:\n    pass", {}, "failed", "compile_error"),
    (1, "python", "import time\ntime.sleep(30)", {"limits": {"timeout_ms": 500}}, "failed", "timeout"),
    (1, "bash", "echo ok", {}, "success", None),
]
n_total = sum(row[0] for row in MIX)
for count, language, code, extra, status, error_type in MIX:
    for i in range(count):
        res = run(code, language=language, **extra)
        t.verdict(res, status, error_type, f"{language} #{i + 1}")

st, _, text = fetch_metrics()
s = parse(text)
want = {
    ("python", "success", "none"): 5,
    ("python", "failed", "runtime_error"): 3,
    ("python", "failed", "compile_error"): 2,
    ("python", "failed", "timeout"): 1,
    ("bash", "success", "none"): 1,
}
got = executions_total(s)
for key, n in want.items():
    t.eq(got.get(key), float(n), "sandboxd_executions_total{language=%s,status=%s,error_type=%s}" % key)
others = {k: v for k, v in got.items() if k not in want and v != 0}
t.eq(others, {}, "every other label set is 0")
t.eq(sum(got.values()), float(n_total), f"{n_total} executions counted in all")
t.ok(("node", "failed", "oom") in got, "the series of other languages exist (at 0)", sorted(got))

counts = {name: check_histogram(s, name) for name in HISTOGRAMS}
t.eq(counts["sandboxd_execution_duration_seconds"], float(n_total), "duration _count == finished executions")
t.eq(counts["sandboxd_execution_queue_wait_seconds"], float(n_total), "queue wait _count == executions started")
t.eq(counts["sandboxd_execution_start_latency_seconds"], float(n_total),
     "start latency _count == executions that ran")
t.ok(counts["sandboxd_execution_cpu_seconds"] <= n_total and counts["sandboxd_execution_peak_memory_bytes"] <= n_total,
     "CPU and memory observed at most once per execution", counts)
# Printed something (stdout or stderr): the 5 + 1 successes and the 2 syntax errors; the exits and
# the sleeper printed nothing.
t.eq(counts["sandboxd_execution_first_output_seconds"], 8.0, "time to first output: one per execution that printed")
dur = series(s, "sandboxd_execution_duration_seconds_bucket")
t.ok(dur.get("0.25", 99) <= n_total - 1 and dur.get("300") == n_total,
     "the timeout (>= 0.5 s) is above 0.25 s, everything below 300 s", dur)
t.ok(value(s, "sandboxd_execution_duration_seconds_sum") >= 0.5, "duration _sum includes the 0.5 s timeout")

t.eq(value(s, "sandboxd_executions_running"), 0.0, "gauge running == 0 afterwards")
t.eq(value(s, "sandboxd_executions_queued"), 0.0, "gauge queued == 0 afterwards")
t.eq(value(s, "sandboxd_slots"), float(health()["slots"]), "gauge slots == /v1/health slots")
t.eq(value(s, "sandboxd_queue_capacity"), float(health()["queue_max"]), "gauge queue_capacity == queue_max")
t.ok(value(s, "sandboxd_workspace_pool_ready") is not None, "gauge workspace_pool_ready present")
t.eq(value(s, "sandboxd_callback_outbox_size"), 0.0, "gauge callback_outbox_size == 0 (no callbacks yet)")
t.eq(value(s, "sandboxd_store_errors_total"), 0.0, "no store errors")
t.eq(value(s, "sandboxd_records_unsaved"), 0.0, "no final record waits to be written again")
t.eq(value(s, "sandboxd_dbus_reconnects_total"), 0.0, "no D-Bus reconnects")

promtool = shutil.which("promtool")
if promtool:
    p = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True)
    t.ok(p.returncode == 0 and not p.stdout.strip() and not p.stderr.strip(), "promtool check metrics passes",
         p.stdout + p.stderr)
else:
    t.n += 1
    print(f"ok {t.n} - promtool check metrics # SKIP promtool not installed", flush=True)

# ---- sandboxctl stats: the same mix, from the store ----
p = subprocess.run([ctl, "stats", "--json", "--window=1h"], capture_output=True, text=True)
t.eq(p.returncode, 0, "sandboxctl stats --json exits 0", p.stderr)
try:
    st_json = json.loads(p.stdout)
except ValueError:
    st_json = {}
t.eq(st_json.get("executions"), n_total, "stats: executions")
t.eq(st_json.get("finished"), n_total, "stats: finished")
t.eq(st_json.get("statuses", {}).get("success"), 6, "stats: 6 successes")
t.eq(st_json.get("statuses", {}).get("failed"), 6, "stats: 6 failures")
t.eq({k: v.get("count") for k, v in st_json.get("error_types", {}).items() if v.get("count")},
     {"runtime_error": 3, "compile_error": 2, "timeout": 1}, "stats: error type counts")
t.eq(st_json.get("error_types", {}).get("runtime_error", {}).get("share"), 0.25, "stats: runtime_error share")
t.eq(st_json.get("success_rate"), 0.5, "stats: success rate")
t.eq(st_json.get("duration_ms", {}).get("count"), n_total, "stats: durations of all finished")
d = st_json.get("duration_ms", {})
t.ok(d.get("p50") is not None and d["p50"] <= d["p95"] <= d["p99"] and d["p99"] >= 500,
     "stats: duration percentiles ordered, p99 is the timeout", d)
t.eq(st_json.get("complete"), True, "stats: complete")
p = subprocess.run([ctl, "stats"], capture_output=True, text=True)
t.ok(p.returncode == 0 and "runtime_error 3 (25.0%)" in p.stdout and "50.0%" in p.stdout,
     "sandboxctl stats (text) shows the shares", p.stdout + p.stderr)
p = subprocess.run([ctl, "stats", "--json", "--window=1s"], capture_output=True, text=True)
t.ok(p.returncode == 0 and json.loads(p.stdout or "{}").get("executions", -1) < n_total,
     "a narrower window sees fewer", p.stdout + p.stderr)

# ---- sandboxctl top ----
p = subprocess.run([ctl, "top", "--once"], capture_output=True, text=True)
t.ok(p.returncode == 0 and "No executions running." in p.stdout, "sandboxctl top --once exits 0 (nothing running)",
     p.stdout + p.stderr)

st, res = submit("import time\ntime.sleep(30)", execution_id="metrics_long")
t.eq(st, 202, "a long execution is accepted")
t.ok(wait_until(lambda: get("metrics_long")[1].get("status") == "running", 20), "it runs")
p = subprocess.run([ctl, "top", "--once"], capture_output=True, text=True)
# The unit as the record names it (after the record id for a cold start, the pool's name for a warm one).
t.ok(p.returncode == 0 and "metrics_long" in p.stdout and get("metrics_long")[1]["unit"] in p.stdout
     and "EXECUTION" in p.stdout and "512M" in p.stdout, "top --once lists it with unit and limits",
     p.stdout + p.stderr)
p = subprocess.run([ctl, "top", "--once", "--json"], capture_output=True, text=True)
t.ok(p.returncode == 0 and [e["execution_id"] for e in json.loads(p.stdout)["executions"]] == ["metrics_long"],
     "top --once --json lists it", p.stdout + p.stderr)
_, _, text = fetch_metrics()
t.eq(value(parse(text), "sandboxd_executions_running"), 1.0, "gauge running == 1 while it runs")
# The refreshing mode, into a pipe: frames one after the other, ended by SIGTERM (only this child).
top = subprocess.Popen([ctl, "top", "--interval=0.2"], stdout=subprocess.PIPE, text=True)
time.sleep(1)
top.terminate()
out, _ = top.communicate(timeout=10)
t.ok(top.returncode == 0 and out.count("sandboxd ") >= 2 and "\033[" not in out,
     "top refreshes, without escape sequences into a pipe, and ends cleanly on SIGTERM", out[-2000:])

request("POST", "/v1/executions/metrics_long/cancel", {})
res = get("metrics_long", wait=True)[1]
t.eq(res.get("status"), "cancelled", "cancelled")
_, _, text = fetch_metrics()
s = parse(text)
t.eq(value(s, "sandboxd_executions_total", language="python", status="cancelled", error_type="none"), 1.0,
     "the cancel is counted")
t.eq(sum(executions_total(s).values()), float(n_total + 1), "and nothing else changed")
t.eq(value(s, "sandboxd_executions_running"), 0.0, "gauge running back to 0")
t.eq(value(s, "sandboxd_execution_duration_seconds_count"), float(n_total + 1), "its duration is observed")

# ---- on TCP, /metrics needs a key like every request; a restart starts the counters over ----
CONF = os.environ["SANDBOXD_CONFIG_DIR"]
HOST, PORT = "127.0.0.1", 18081
KEYS = os.path.join(CONF, "api-keys-metrics")
key = secrets.token_urlsafe(32)
with open(KEYS, "w") as f:
    f.write(f"prometheus sha256:{hashlib.sha256(key.encode()).hexdigest()}\n")
os.chmod(KEYS, 0o600)
os.makedirs(os.path.join(CONF, "sandboxd.conf.d"), exist_ok=True)
with open(os.path.join(CONF, "sandboxd.conf.d", "50-metrics.conf"), "w") as f:
    f.write(f"[Daemon]\nListen={HOST}:{PORT}\nAPIKeysFile={KEYS}\n")
subprocess.run(["systemctl", "reset-failed", "sandboxd.service"], capture_output=True)
t.eq(subprocess.run(["systemctl", "restart", "sandboxd.service"]).returncode, 0, "restart with a TCP listener")


def tcp_metrics(headers):
    conn = http.client.HTTPConnection(HOST, PORT, timeout=30)
    conn.request("GET", "/metrics", headers=headers)
    resp = conn.getresponse()
    body = resp.read().decode()
    conn.close()
    return resp.status, body


t.eq(tcp_metrics({})[0], 401, "TCP: /metrics without a key is 401")
t.eq(tcp_metrics({"Authorization": "Bearer " + secrets.token_urlsafe(32)})[0], 401, "TCP: a wrong key is 401")
st, text = tcp_metrics({"Authorization": "Bearer " + key})
t.eq(st, 200, "TCP: /metrics with a key is 200")
s = parse(text)
t.eq(sum(executions_total(s).values()), 0.0, "after a restart the counters start over")
t.eq(value(s, "sandboxd_execution_duration_seconds_count"), 0.0, "... the histograms too")

t.done()

# SPDX-License-Identifier: LGPL-2.1-or-later
# Execution records in the store (SQLite, or PostgreSQL in the -pg leg): queries, pagination, survival
# across restarts, no record left "running" after a crash, and a broken (or foreign) database that
# fails start-up clearly.
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from lib import *  # noqa: E402,F401,F403

t = Tap()


def listing(**params):
    qs = "&".join(f"{k}={v}" for k, v in params.items())
    return request("GET", "/v1/executions" + (f"?{qs}" if qs else ""))


# A session of 12 runs: 4 failures, varied durations.
ids = []
for i in range(12):
    if i % 3 == 0:
        code = f"import sys\nprint({i})\nsys.exit(2)"
    else:
        code = f"import time\ntime.sleep({0.02 * (i % 5)})\nprint({i})"
    r = run(code, session_id="sess_records")
    ids.append(r["execution_id"])
run("print('other')", session_id="sess_other")

st, page = listing(session_id="sess_records")
t.eq(st, 200, "list answers")
got = [e["execution_id"] for e in page["executions"]]
t.eq(sorted(got), sorted(ids), "a session's executions, all of them")
t.eq(got, list(reversed(ids)), "newest first")
t.ok(all("stdout" not in e and "stdout_bytes" in e for e in page["executions"]),
     "listed records carry counts, not output")
st, page = listing(session_id="sess_records", failed="true")
t.eq(sorted(e["execution_id"] for e in page["executions"]), sorted(ids[0::3]), "failed=true: the failures")
st, page = listing(session_id="sess_records", error_type="runtime_error")
t.eq(len(page["executions"]), 4, "error_type filter")
st, page = listing(session_id="sess_records", status="success")
t.eq(len(page["executions"]), 8, "status filter")
st, page = listing(session_id="sess_records", order="duration_ms", limit="3")
d = [e["duration_ms"] for e in page["executions"]]
t.ok(d == sorted(d, reverse=True) and len(d) == 3 and page["next_cursor"], "slowest first, paged", page)

# Stable pagination: every execution exactly once across pages of 5.
seen, cursor, pages = [], None, 0
while True:
    params = {"session_id": "sess_records", "limit": "5"}
    if cursor:
        params["cursor"] = cursor
    st, page = listing(**params)
    seen += [e["execution_id"] for e in page["executions"]]
    cursor = page["next_cursor"]
    pages += 1
    if not cursor or pages > 10:
        break
t.ok(sorted(seen) == sorted(ids) and len(seen) == len(set(seen)) and pages == 3, f"3 pages, each once ({pages})",
     seen)
for bad in ({"cursor": "garbage"}, {"limit": "0"}, {"limit": "5000"}, {"status": "weird"}, {"order": "sideways"},
            {"session_id": "../x"}):
    st, res = listing(**bad)
    t.eq(st, 400, f"bad query {bad} refused")

# Records survive a restart, and a finished execution is found in the store by its id.
subprocess.run(["systemctl", "restart", "sandboxd.service"], check=True)
st, r = get(ids[1])
t.ok(st == 200 and r["stdout"] == "1\n" and r["status"] == "success", "a record survives a restart", r)
st, page = listing(session_id="sess_records")
t.eq(len(page["executions"]), 12, "the whole session survives a restart")
# Idempotency reaches the store: the same id and request after a restart is the old execution.
st, again = request("POST", "/v1/executions?wait=true",
                    {"language": "python", "code": "import sys\nprint(0)\nsys.exit(2)", "session_id": "sess_records",
                     "execution_id": "rec_idem"})
st2, again2 = request("POST", "/v1/executions?wait=true",
                      {"language": "python", "code": "import sys\nprint(0)\nsys.exit(2)",
                       "session_id": "sess_records", "execution_id": "rec_idem"})
subprocess.run(["systemctl", "restart", "sandboxd.service"], check=True)
st3, again3 = request("POST", "/v1/executions?wait=true",
                      {"language": "python", "code": "import sys\nprint(0)\nsys.exit(2)",
                       "session_id": "sess_records", "execution_id": "rec_idem"})
t.ok(st3 == 200 and again3["finished_at"] == again["finished_at"], "same id after a restart: same execution, no rerun",
     (again, again3))

# A crash (SIGKILL) while an execution runs: systemd restarts sandboxd, which adopts the running
# execution and gives it its real verdict and complete output.
st, a = submit("import time\nprint('before', flush=True)\ntime.sleep(2)\nprint('after')\nraise SystemExit(4)")
eid = a["execution_id"]
wait_until(lambda: get(eid)[1].get("status") == "running", 10)
time.sleep(0.3)
old_pid = daemon_pid()
os.kill(old_pid, 9)
t.ok(wait_until(lambda: subprocess.run(["systemctl", "is-active", "-q", "sandboxd.service"]).returncode == 0
                and daemon_pid() not in (0, old_pid), 15), "systemd restarted sandboxd after the crash")
st, r = get(eid, wait=True)
t.ok(st == 200 and r["status"] == "failed" and r["error_type"] == "runtime_error" and r["exit_code"] == 4
     and r["stdout"] == "before\nafter\n", "after a crash the running execution ends with its real verdict and output",
     r)
t.ok(r["unit"] and wait_until(lambda: r["unit"] not in sandboxd_units(), 10), "its unit is gone",
     (r["unit"], sandboxd_units()))

# With PostgreSQL (the -pg leg), the same for a database that is not sandboxd's: its marker table
# renamed away, the tables left. Start-up refuses it, names it, and touches nothing.
def psql(sql):
    return subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", PG_STORE, "-c", sql],
                          capture_output=True, text=True, timeout=60)


def unit_log_after_failure():
    """The unit's journal once systemd's own line of the failure is in it: systemctl start returns
    when the start job fails, journald may write that line a moment later (bounded wait)."""
    def read():
        return subprocess.run(["journalctl", "-u", "sandboxd.service", "-o", "cat", "--no-pager"],
                              capture_output=True, text=True).stdout
    wait_until(lambda: "status=1/FAILURE" in read(), 10)
    return read()


def start_refused(name, problem):
    start = subprocess.run(["systemctl", "start", "sandboxd.service"], capture_output=True, text=True)
    log = unit_log_after_failure()
    t.ok(start.returncode != 0 and "status=1/FAILURE" in log and "dumped core" not in log,
         f"start with {name} fails with exit status 1, no crash", (start.returncode, log[-800:]))
    t.ok("PostgreSQL database 'postgres'" in log and problem in log,
         f"the journal names the database and the problem ({name})", log[-1500:])
    subprocess.run(["systemctl", "stop", "sandboxd.service"], capture_output=True)
    subprocess.run(["systemctl", "reset-failed", "sandboxd.service"], capture_output=True)


if not PG_STORE:
    # A corrupted database: start-up fails with a message naming it, no crash.
    db = "/var/lib/sandboxd/sandboxd.db"
    subprocess.run(["systemctl", "stop", "sandboxd.service"], check=True)
    os.rename(db, db + ".good")
    for ext in ("-wal", "-shm"):
        if os.path.exists(db + ext):
            os.rename(db + ext, db + ".good" + ext)
    with open(db, "wb") as f:
        f.write(os.urandom(8192))
    start = subprocess.run(["systemctl", "start", "sandboxd.service"], capture_output=True, text=True)
    log = unit_log_after_failure()
    t.ok(start.returncode != 0 and "status=1/FAILURE" in log and "dumped core" not in log and "SIGSEGV" not in log,
         "start with a corrupted database fails with exit status 1, no crash", (start.returncode, log[-800:]))
    t.ok(db in log and ("corrupt" in log or "not a" in log), "the journal names the database and the problem",
         log[-1500:])
    subprocess.run(["systemctl", "stop", "sandboxd.service"], capture_output=True)
    subprocess.run(["systemctl", "reset-failed", "sandboxd.service"], capture_output=True)
    os.unlink(db)
    os.rename(db + ".good", db)
    for ext in ("-wal", "-shm"):
        if os.path.exists(db + ".good" + ext):
            os.rename(db + ".good" + ext, db + ext)
    subprocess.run(["systemctl", "start", "sandboxd.service"], check=True)
    st, r = get(ids[2])
    t.ok(st == 200 and r["stdout"] == "2\n", "with the good database back, the records are there", r)

else:
    subprocess.run(["systemctl", "stop", "sandboxd.service"], check=True)
    t.eq(psql("ALTER TABLE sandboxd_schema RENAME TO sandboxd_schema_away").returncode, 0, "the marker table renamed")
    start_refused("a database that is not sandboxd's", "not")
    t.eq(psql("ALTER TABLE sandboxd_schema_away RENAME TO sandboxd_schema").returncode, 0, "the marker table back")
    subprocess.run(["systemctl", "start", "sandboxd.service"], check=True)
    st, r = get(ids[2])
    t.ok(st == 200 and r["stdout"] == "2\n", "with the database back, the records are there", r)

# Retention: with RetentionSec=1 the periodic sweep purges finished records.
os.makedirs(f"{os.environ['SANDBOXD_CONFIG_DIR']}/sandboxd.conf.d", exist_ok=True)
ret_conf = f"{os.environ['SANDBOXD_CONFIG_DIR']}/sandboxd.conf.d/80-retention.conf"
r = run("print('old')", session_id="sess_retention")
with open(ret_conf, "w") as f:
    f.write("[Daemon]\nRetentionSec=1\nSweepIntervalSec=1\n")
subprocess.run(["systemctl", "reload", "sandboxd.service"], check=True)
t.ok(wait_until(lambda: listing(session_id="sess_retention")[1]["executions"] == [], 10),
     "records older than RetentionSec= are purged by the sweep")
st, r2 = get(r["execution_id"])
t.eq(st, 404, "a purged record is gone")
os.unlink(ret_conf)
subprocess.run(["systemctl", "reload", "sandboxd.service"], check=True)

# (With PostgreSQL, the server's disk is the server's: a full one is SQLSTATE 53100, ENOSPC, 507
# as here; test-store-pg checks the mapping.)
if not PG_STORE:
    # A full disk: the store lives on a tiny tmpfs. Submissions eventually fail with 507 and nothing
    # runs for them; every earlier record stays intact and readable.
    confdir = os.environ["SANDBOXD_CONFIG_DIR"]
    small = "/var/lib/sandboxd-small"
    os.makedirs(small, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=384k,mode=0755", "tmpfs", small], check=True)
    os.makedirs(f"{confdir}/sandboxd.conf.d", exist_ok=True)
    with open(f"{confdir}/sandboxd.conf.d/90-small.conf", "w") as f:
        f.write(f"[Daemon]\nDatabase={small}/sandboxd.db\n")
    # ProtectSystem=strict: a database outside the state directory needs ReadWritePaths= (sandboxd(8)).
    service_dropin("90-small", f"[Service]\nReadWritePaths={small}\n")
    subprocess.run(["systemctl", "restart", "sandboxd.service"], check=True)
    ok_ids, full = [], None
    for i in range(400):
        st, res = request("POST", "/v1/executions?wait=true",
                          {"language": "python", "code": f"print('x' * 3000, {i})", "session_id": "sess_full"})
        if st == 200:
            ok_ids.append(res["execution_id"])
            continue
        full = (st, res)
        break
    t.ok(full is not None and full[0] == 507 and full[1]["error"]["code"] == "store_error",
         f"a full disk fails the submission with 507 after {len(ok_ids)} records", full)
    msg = full[1]["error"].get("message", "") if full else ""
    t.ok("(the store is full)" in msg and "/" not in msg,
         "the caller is told the store is full, not the backend's own message (no path, no database name)", msg)
    # Units of the accepted runs may still wait to be collected by systemd: any other one ran for the
    # refused submission.
    units_now = [u for u in execution_units() if not any(e in u for e in ok_ids)]
    t.eq(units_now, [], "nothing ran for the refused submission")
    bad = [e for e in ok_ids if get(e)[1].get("status") != "success"]
    t.eq(bad, [], "every earlier record is intact")
    subprocess.run(["systemctl", "stop", "sandboxd.service"], check=True)
    os.unlink(f"{confdir}/sandboxd.conf.d/90-small.conf")
    service_dropin("90-small", None)
    subprocess.run(["umount", small], check=True)
    subprocess.run(["systemctl", "start", "sandboxd.service"], check=True)

t.done()

#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
# The daemon's side of issue 16 on loopback (the network lab, with its own namespaces, is
# test-network): a run with network gets its egress proxy, the program reaches a server named in
# HostsFile= and permitted by PermitAddresses= (the proxy runs in the harness's network namespace, so
# 127.0.0.1 is the test's own server) and nothing else; the record, `sandboxctl show`, the metrics
# and the journal carry the log; AllowDomains= is the ceiling; the proxy units never outlive the
# execution (end, cancel, timeout, a restart of sandboxd in the middle, whose pipe the fd store
# keeps).
import http.server
import json
import os
import stat
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
from lib import *  # noqa: E402,F401,F403

t = Tap()
CONF = os.environ["SANDBOXD_CONFIG_DIR"]
DROPIN = os.path.join(CONF, "sandboxd.conf.d")
BODY = b"hello from the proxy test\n"


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        self.wfile.write(BODY)

    def log_message(self, *args):
        pass


def proxy_units():
    return subprocess.run(["systemctl", "list-units", "--all", "--no-legend", "--plain", "sandboxd-proxy-*"],
                          capture_output=True, text=True).stdout.strip()


def no_proxy_units():
    return wait_until(lambda: proxy_units() == "", 10, 0.1)


def comm(pid):
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""



def metric(text, decision):
    for line in text.splitlines():
        if line.startswith(f'sandboxd_network_requests_total{{decision="{decision}"}} '):
            return int(line.split()[-1])
    return -1


srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
port = srv.server_address[1]
threading.Thread(target=srv.serve_forever, daemon=True).start()
ENTRY = f"web.test:{port}"

# Network off (the default): refused with the reason.
st, res = request("POST", "/v1/executions", {"language": "bash", "code": "true", "network": {"allow": [ENTRY]}})
t.eq(st, 400, "AllowDomains= empty: 400")
t.eq(res.get("error", {}).get("message"), "network is disabled on this server (AllowDomains= is empty)",
     "AllowDomains= empty: the message says so")

hosts = os.path.join(CONF, "proxy-test-hosts")
with open(hosts, "w") as f:
    f.write("# the test's server\n127.0.0.1 web.test other.test\n")
os.makedirs(DROPIN, exist_ok=True)
with open(os.path.join(DROPIN, "70-proxy-units.conf"), "w") as f:
    f.write(f"[Network]\nAllowDomains={ENTRY} *.example.org\nPermitAddresses=127.0.0.0/8\nHostsFile={hosts}\n")
subprocess.run(["systemctl", "reload", "sandboxd.service"], check=True)
time.sleep(0.3)

st, res = request("POST", "/v1/executions", {"language": "bash", "code": "true", "network": {"allow": ["evil.com"]}})
t.eq((st, res.get("error", {}).get("field")), (400, "network.allow[0]"), "outside AllowDomains=: 400 naming the entry")
st, res = request("POST", "/v1/executions", {"language": "bash", "code": "true",
                                             "network": {"allow": [ENTRY, "10.0.0.1"]}})
t.eq((st, res.get("error", {}).get("field")), (400, "network.allow[1]"), "an IP literal: 400 naming the entry")

_, m0 = request("GET", "/metrics")
m0 = m0.get("_raw", "")
res = run(f"curl -sS --max-time 10 http://{ENTRY}/; curl -sS --max-time 10 http://other.test:{port}/; "
          f"curl -sS --max-time 3 --noproxy '*' http://127.0.0.1:{port}/ || echo direct-failed",
          language="bash", network={"allow": [ENTRY]})
t.verdict(res, "success", None, "a run with network")
out = res.get("stdout") or ""
t.ok(BODY.decode() in out, "the allowed host's answer arrives through the proxy", out)
t.ok(f"sandboxd-proxy: other.test:{port}: not in the allowlist" in out, "another host: the proxy's refusal", out)
t.ok("direct-failed" in out, "no way around the proxy", out)
t.eq(res.get("start"), "cold", "a run with network starts cold")
net = res.get("network") or {}
reqs = net.get("requests") or []
t.eq(net.get("allow"), [ENTRY], "the record's allow list")
t.eq(net.get("requests_total"), 2, "two connections logged", json.dumps(net, indent=1))
allowed = [q for q in reqs if q.get("decision") == "allowed"]
denied = [q for q in reqs if q.get("decision") == "denied"]
t.ok(len(allowed) == 1 and allowed[0]["host"] == "web.test" and allowed[0]["port"] == port and
     allowed[0]["method"] == "GET" and allowed[0]["address"] == "127.0.0.1" and allowed[0]["bytes_down"] > len(BODY)
     and "reason" not in allowed[0], "the allowed entry", reqs)
t.ok(len(denied) == 1 and denied[0]["host"] == "other.test" and denied[0]["reason"] == "not in the allowlist" and
     "address" not in denied[0], "the denied entry, with its reason", reqs)
t.ok(all(str(q.get("started_at", "")).endswith("Z") for q in reqs), "started_at as the other timestamps", reqs)
t.ok(no_proxy_units(), "no proxy unit left after the run", proxy_units())
_, m1 = request("GET", "/metrics")
m1 = m1.get("_raw", "")
t.eq((metric(m1, "allowed") - metric(m0, "allowed"), metric(m1, "denied") - metric(m0, "denied")), (1, 1),
     "sandboxd_network_requests_total by decision")
j = subprocess.run(["journalctl", "--no-pager", "-o", "json", f"SANDBOXD_EXECUTION_ID={res['execution_id']}",
                    "SANDBOXD_NET_DECISION=denied"], capture_output=True, text=True).stdout
entries = [json.loads(line) for line in j.splitlines() if line.strip()]
t.ok(any(e.get("SANDBOXD_NET_HOST") == "other.test" and e.get("SANDBOXD_NET_REASON") == "not in the allowlist"
         for e in entries), "the journal has the denial with the execution's id", j[:2000])

ctl = os.path.join(os.environ.get("SANDBOXD_BUILD_DIR", os.path.join(os.path.dirname(__file__), "..", "..", "build")),
                   "sandboxctl", "sandboxctl")
if os.path.exists(ctl):
    show = subprocess.run([ctl, "show", res["execution_id"]], capture_output=True, text=True)
    t.ok(f"allowed GET web.test:{port} via 127.0.0.1" in show.stdout and "not in the allowlist" in show.stdout,
         "sandboxctl show prints the network log", show.stdout + show.stderr)
    r = subprocess.run([ctl, "run", "-l", "bash", "-c", f"curl -sS http://{ENTRY}/", "--allow-net", ENTRY],
                       capture_output=True, text=True)
    t.ok(r.returncode == 0 and BODY.decode() in r.stdout, "sandboxctl run --allow-net", r.stdout + r.stderr)

res = run(f"import os, urllib.request\nprint(urllib.request.urlopen('http://{ENTRY}/').read().decode().strip())\n"
          "print(os.environ['PIP_TARGET'], os.path.isdir('/workspace/.pkgs'))", network={"allow": [ENTRY]})
t.ok(BODY.decode().strip() in (res.get("stdout") or "") and "/workspace/.pkgs True" in (res.get("stdout") or ""),
     "python's urllib honours HTTP_PROXY; /workspace/.pkgs exists", res.get("stdout", "") + res.get("stderr", ""))

res = run("echo plain", language="bash")
t.eq(res.get("network"), None, "a run without network: network is null")

# Cancel and timeout: the proxy goes with the execution.
st, sub = submit("sleep 30", language="bash", network={"allow": [ENTRY]})
eid = sub["execution_id"]
wait_until(lambda: get(eid)[1].get("status") == "running", 10, 0.05)
# The proxy has no file system: its root is an empty read-only directory with /usr, the loader's /lib64,
# resolv.conf and its own /proc, /dev. Looked at from outside, through /proc/PID/root.
svc = next((u for u in proxy_units().split() if u.endswith(".service")), "")
pid = subprocess.run(["systemctl", "show", "-P", "MainPID", svc], capture_output=True, text=True).stdout.strip()
root = f"/proc/{pid}/root"


# Type=simple: started at the fork, the namespace set up just before the exec.
if not t.ok(wait_until(lambda: comm(pid) == "sandboxd-proxy", 10, 0.02), "the proxy runs", (svc, pid, comm(pid))):
    t.ok(False, "the proxy's journal", subprocess.run(["journalctl", "--no-pager", "-n", "30"],
                                                     capture_output=True, text=True).stdout)


def sockets_under(d):
    found = []
    for dirpath, dirs, files in os.walk(d):
        for n in dirs + files:
            try:
                if stat.S_ISSOCK(os.lstat(os.path.join(dirpath, n)).st_mode):
                    found.append(os.path.join(dirpath, n)[len(root):])
            except OSError:
                pass
    return found


try:
    top = sorted(os.listdir(root))
    etc = sorted(os.listdir(root + "/etc"))
    run_dir = sorted(os.listdir(root + "/run")) if os.path.isdir(root + "/run") else []
    socks = sockets_under(root + "/run") + sockets_under(root + "/tmp") + sockets_under(root + "/var")
    sys_dir = os.listdir(root + "/sys")
    # Mount points systemd made (ProtectHome= of DynamicUser=, PrivateTmp=): empty.
    empties = {d: os.listdir(root + "/" + d) for d in ("root", "home") if os.path.isdir(root + "/" + d)}
    var = sorted(os.listdir(root + "/var")) if os.path.isdir(root + "/var") else []
    statvfs = os.statvfs(root)
    # A binary outside /usr (a build tree, /opt) is bound alone at its own path: nothing else there.
    exe = os.readlink(f"/proc/{pid}/exe")
    exe_top = exe.split("/")[1]
    exe_tree = sorted(os.path.join(d, f)[len(root):] for d, _, fs in os.walk(root + "/" + exe_top) for f in fs) \
        if exe_top != "usr" else [exe]
except OSError as e:
    top, etc, run_dir, socks, sys_dir, empties, var, statvfs = [str(e)], [], [], [], [], {}, [], None
    exe, exe_top, exe_tree = "", "", []
t.ok(pid not in ("", "0") and not ({"srv", "opt", "boot", "mnt", "media", "work"} - {exe_top}) & set(top)
     and "usr" in top and "lib64" in top and all(v == [] for v in empties.values()) and var in ([], ["tmp"])
     and exe_tree == [exe],
     "the proxy's root: /usr, the loader's and its binary, no host's /srv, /opt, /home, /root, /var",
     (top, empties, var, exe, exe_tree))
t.ok(etc == ["resolv.conf"] or etc == [], "the proxy's /etc: resolv.conf alone", etc)
t.ok(socks == [] and not {"dbus", "sandboxd", "user", "log"} & set(run_dir),
     "the proxy's /run, /tmp, /var: none of the host's sockets", (run_dir, socks))
t.eq(sys_dir, [], "the proxy's /sys is empty")
t.ok(statvfs is not None and statvfs.f_flag & os.ST_RDONLY, "the proxy's root is read-only")
time.sleep(0.5)
request("POST", f"/v1/executions/{eid}/cancel")
_, r = get(eid, wait=True)
t.eq(r.get("status"), "cancelled", "a cancelled run with network")
t.ok(no_proxy_units(), "no proxy unit left after a cancel", proxy_units())
res = run("sleep 5", language="bash", limits={"timeout_ms": 300}, network={"allow": [ENTRY]})
t.verdict(res, "failed", "timeout", "a timed-out run with network")
t.ok(no_proxy_units(), "no proxy unit left after a timeout", proxy_units())

# A restart in the middle: the pipe waits in the fd store, the log is whole, the units go at the end.
st, sub = submit(f"curl -sS http://before.test:{port}/; sleep 3; curl -sS http://after.test:{port}/; echo done",
                 language="bash", network={"allow": [ENTRY]})
eid = sub["execution_id"]
# The restart once the program has made its first request (it runs, and its log has an entry): an
# ordering, not a time, so a slow machine (the VM tier under TCG) restarts at the same point.
wait_until(lambda: any(q.get("host") == "before.test"
                       for q in ((get(eid)[1].get("network") or {}).get("requests") or [])), 60, 0.1)
t.ok(proxy_units() != "", "the proxy runs while the execution does", proxy_units())
old = daemon_pid()
subprocess.run(["systemctl", "restart", "sandboxd.service"], check=True)
wait_until(lambda: daemon_pid() not in (0, old) and request("GET", "/v1/health", timeout=5)[0] == 200, 30, 0.1)
_, r = get(eid, wait=True)
t.verdict(r, "success", None, "a run with network across a restart")
hosts_logged = [q["host"] for q in (r.get("network") or {}).get("requests", [])]
t.eq(hosts_logged, ["before.test", "after.test"], "the log across the restart: before and after",
     json.dumps(r.get("network"), indent=1))
t.ok("restarted" in ((r.get("network") or {}).get("error") or ""), "the log says sandboxd restarted",
     r.get("network"))
t.ok(no_proxy_units(), "no proxy unit left after the restarted run", proxy_units())

t.done()

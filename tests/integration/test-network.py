# SPDX-License-Identifier: LGPL-2.1-or-later
# Network by allowlist (issue 16): real programs in real units reach a small "internet" in a network
# namespace this test creates (netlab.py: HTTP on 80 and 443, a TCP echo on 7000, a PEP 503 index
# serving a wheel built here), named through HostsFile= and permitted with PermitAddresses=, only
# through the per-execution egress proxy (sandboxd-proxy). Runs under sandbox-harness
# --private-network: the veth pair lives in the harness's own network namespace, never the host's.
#  - allowed: HTTP (python urllib with the proxy variables) and CONNECT (curl -p to :443): the bytes
#    arrive, the record's `network` log and the journal (SANDBOXD_NET_*) say "allowed" with byte
#    counts; the environment (proxy variables, PIP_TARGET, PYTHONPATH) and the program's interfaces
#    (lo only);
#  - refused, each failing inside the program with the proxy's answer, each logged "denied" with
#    its exact reason: a host outside the allowlist, a name resolving to 127.0.0.1, a port no entry
#    names (absolute form and CONNECT); a direct connection to the lab's address without the proxy
#    fails (no route: the program's namespace has only lo) and is in no log;
#  - a request without `network`: no proxy variables, nothing on 127.0.0.1:3128, `network` null;
#    a request naming a domain outside AllowDomains= (or an invalid entry): 400 naming the entry;
#  - `pip install` of the lab's wheel, `import` in the same run, and in a session's next turn
#    without network;
#  - caps: a download past MaxTransferMB= is cut ("byte cap reached") and the next request of the
#    run refused; 100 connections at once: those above MaxConnections= get 503 "connection cap
#    reached", requests_total counts all 100;
#  - the hostile corpus (test-isolation.py's probe) and network probes with an allowlist on: nothing
#    but the proxy is reachable.
# Skips (77) only if ip or pip is missing.
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from lib import *  # noqa: E402,F401,F403
import netlab  # noqa: E402

CONF = os.environ["SANDBOXD_CONFIG_DIR"]
PROXY = "http://127.0.0.1:3128"
ALLOW = ["files.lab.test", "pkgs.lab.test", "loop.lab.test"]
MAX_MB = 2
MAX_CONN = 8
CAP_BYTES = MAX_MB * 1024 * 1024

why = netlab.missing_tools()
if why is None and subprocess.run(["/usr/bin/python3", "-m", "pip", "--version"], capture_output=True).returncode != 0:
    why = "pip for /usr/bin/python3 is missing (apt-get install python3-pip)"
if why:
    print(f"1..0 # SKIP {why}")
    sys.exit(77)
if os.environ.get("SANDBOXD_NS_PID") and os.environ.get("SANDBOX_HARNESS_PRIVATE_NETWORK") != "1":
    # A private systemd in the host's network namespace: the veth pair would be the host's.
    print("Bail out! test-network needs sandbox-harness --private-network (it creates a veth pair)")
    sys.exit(1)

t = Tap()


IFACES = ("import array, fcntl, socket, struct\n"
          "def interfaces():\n"
          "    # SIOCGIFCONF on an inet socket (netlink is refused, /sys and /proc/net are not there)\n"
          "    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
          "    buf = array.array('B', bytes(40 * 64))\n"
          "    n = struct.unpack('iL', fcntl.ioctl(s.fileno(), 0x8912, struct.pack('iL', len(buf), buf.buffer_info()[0])))[0]\n"
          "    b = buf.tobytes()\n"
          "    names = sorted(b[i:i + 16].split(b'\\0', 1)[0].decode() for i in range(0, n, 40))\n"
          "    for name in ('eth0', %r, %r):\n"
          "        try:\n"
          "            socket.if_nametoindex(name); names.append(name)\n"
          "        except OSError:\n"
          "            pass\n"
          "    return names\n")


def net_run(code, language="python", allow=None, **fields):
    fields.setdefault("limits", {"timeout_ms": 120000})     # pip, 100 connections: room on a slow machine
    return run(code, language=language, network={"allow": list(allow or ALLOW)}, **fields)


def record(res):
    st, rec = get(res["execution_id"])
    return rec if st == 200 else {}


def netlog(rec):
    return rec.get("network") or {}


def entries(rec, **match):
    return [e for e in netlog(rec).get("requests") or [] if all(e.get(k) == v for k, v in match.items())]


def journal(eid):
    """The execution's SANDBOXD_NET_* journal entries."""
    out = subprocess.run(["journalctl", "--no-pager", "-o", "json", f"SANDBOXD_EXECUTION_ID={eid}"],
                         capture_output=True, text=True).stdout
    got = []
    for line in out.splitlines():
        try:
            j = json.loads(line)
        except ValueError:
            continue
        if "SANDBOXD_NET_DECISION" in j:
            got.append(j)
    return got


def journal_has(eid, **match):
    def find():
        return [j for j in journal(eid) if all(j.get("SANDBOXD_NET_" + k.upper()) == str(v) for k, v in match.items())]
    wait_until(lambda: find(), 10, 0.2)
    return find()


FIELDS = ("host", "port", "method", "decision", "reason", "address", "bytes_up", "bytes_down", "started_at", "duration_ms")


def check_entry_shape(rec, name):
    def bad(e):
        if not set(e) <= set(FIELDS) or not {"host", "port", "method", "decision", "bytes_up", "bytes_down",
                                             "started_at"} <= set(e):
            return True
        if e["decision"] == "denied":
            return not e.get("reason")
        return e["decision"] != "allowed" or e.get("reason") not in (None, "byte cap reached", "idle timeout")
    wrong = [e for e in netlog(rec).get("requests") or [] if bad(e)]
    t.ok(not wrong, f"{name}: every entry has the contract's fields", wrong)


def brief(res):
    return json.dumps({k: res.get(k) for k in ("status", "error_type", "exit_code", "stdout", "stderr", "network")},
                      indent=1)[:3500]


with netlab.NetLab(CONF, max_transfer_mb=MAX_MB, max_connections=MAX_CONN) as lab:
    # ---- allowed over HTTP (urllib honours the proxy variables) --------------------------------
    r = net_run(IFACES % (lab.veth, lab.peer) + "import os, socket, urllib.request\n"
                "for k in ('http_proxy', 'HTTP_PROXY', 'https_proxy', 'HTTPS_PROXY', 'no_proxy', 'NO_PROXY',\n"
                "          'PIP_TARGET', 'PYTHONPATH', 'npm_config_cache'):\n"
                "    print(k, os.environ.get(k))\n"
                "print('pkgs dir', os.path.isdir('/workspace/.pkgs'))\n"
                "print('interfaces', interfaces())\n"
                "print(urllib.request.urlopen('http://files.lab.test/hello', timeout=30).read().decode(), end='')\n")
    t.verdict(r, "success", None, "HTTP through the proxy: the program succeeds")
    out = r.get("stdout", "")
    t.ok("hello from the lab port 80 host files.lab.test\n" in out, "HTTP: the lab's answer arrives", brief(r))
    env = dict(l.split(" ", 1) for l in out.splitlines() if l.split(" ", 1)[0].lower().endswith(
        ("proxy", "pip_target", "pythonpath", "npm_config_cache")))
    t.eq({k: env.get(k) for k in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY")},
         {k: PROXY for k in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY")}, "the four proxy variables")
    t.eq((env.get("no_proxy"), env.get("NO_PROXY")), ("localhost,127.0.0.1,::1",) * 2, "no_proxy and NO_PROXY")
    t.eq((env.get("PIP_TARGET"), env.get("PYTHONPATH"), env.get("npm_config_cache")),
         ("/workspace/.pkgs", "/workspace/.pkgs", "/tmp/.npm"), "PIP_TARGET, PYTHONPATH, npm_config_cache")
    t.ok("pkgs dir True" in out, "/workspace/.pkgs exists before the program starts", out)
    t.ok("interfaces ['lo']" in out, "the program's network namespace has only lo", out)
    rec = record(r)
    n = netlog(rec)
    t.eq(n.get("allow"), ALLOW, "record: network.allow is the list in force", n)
    e = entries(rec, host="files.lab.test", port=80, method="GET", decision="allowed")
    t.ok(len(e) == 1 and e[0].get("address") == netlab.LAB and e[0]["bytes_up"] > 0 and e[0]["bytes_down"] > 0
         and "reason" not in e[0], "record: GET files.lab.test:80 allowed, address 198.18.0.2, bytes up and down > 0", n)
    t.eq(n.get("requests_total"), 1, "record: requests_total 1", n)
    check_entry_shape(rec, "HTTP")
    j = journal_has(r["execution_id"], host="files.lab.test", port=80, method="GET", decision="allowed")
    t.ok(len(j) == 1 and j[0].get("SANDBOXD_NET_ADDRESS") == netlab.LAB and int(j[0].get("SANDBOXD_NET_BYTES_DOWN", 0)) > 0
         and int(j[0].get("SANDBOXD_NET_BYTES_UP", 0)) > 0, "journal: SANDBOXD_NET_* of the allowed GET, bytes > 0",
         journal(r["execution_id"]))

    # ---- allowed through CONNECT (curl -p, HTTP inside the tunnel to :443) -----------------------
    r = net_run('curl -sS -p -x "$HTTP_PROXY" http://files.lab.test:443/hello', language="bash")
    t.verdict(r, "success", None, "CONNECT through the proxy: curl -p succeeds")
    t.eq(r.get("stdout"), "hello from the lab port 443 host files.lab.test:443\n", "CONNECT: the bytes arrive", brief(r))
    rec = record(r)
    e = entries(rec, host="files.lab.test", port=443, method="CONNECT", decision="allowed")
    t.ok(len(e) == 1 and e[0].get("address") == netlab.LAB and e[0]["bytes_up"] > 0 and e[0]["bytes_down"] > 0,
         "record: CONNECT files.lab.test:443 allowed with byte counts", netlog(rec))
    j = journal_has(r["execution_id"], host="files.lab.test", port=443, method="CONNECT", decision="allowed")
    t.ok(len(j) == 1 and int(j[0].get("SANDBOXD_NET_BYTES_DOWN", 0)) > 0, "journal: the CONNECT, allowed, bytes > 0",
         journal(r["execution_id"]))

    # ---- refused by the proxy: each fails in the program, each is logged with its reason ----------
    REFUSALS = [  # (label, host, port, method, reason, status)
        ("outside the allowlist", "other.lab.test", 80, "GET", "not in the allowlist", 403),
        ("resolves to 127.0.0.1", "loop.lab.test", 80, "GET", "internal address", 403),
        ("port not allowed", "files.lab.test", 7000, "GET", "port not allowed", 403),
        ("CONNECT outside the allowlist", "other.lab.test", 443, "CONNECT", "not in the allowlist", 403),
        ("CONNECT to a port not allowed", "files.lab.test", 7000, "CONNECT", "port not allowed", 403),
    ]
    code = ("import socket, urllib.request, urllib.error\n"
            "def get(url):\n"
            "    try:\n"
            "        return 'OK ' + urllib.request.urlopen(url, timeout=30).read().decode()\n"
            "    except urllib.error.HTTPError as e:\n"
            "        return f'HTTP {e.code} ' + e.read().decode().strip()\n"
            "    except OSError as e:\n"
            "        return 'ERR ' + str(e)\n"
            "def connect(host, port):\n"
            "    s = socket.create_connection(('127.0.0.1', 3128), timeout=30)\n"
            "    s.sendall(f'CONNECT {host}:{port} HTTP/1.1\\r\\nHost: {host}:{port}\\r\\n\\r\\n'.encode())\n"
            "    data = b''\n"
            "    while True:\n"
            "        b = s.recv(4096)\n"
            "        if not b: break\n"
            "        data += b\n"
            "    head, _, body = data.partition(b'\\r\\n\\r\\n')\n"
            "    return 'HTTP ' + head.split(b' ')[1].decode() + ' ' + body.decode().strip()\n")
    for label, host, port, method, reason, status in REFUSALS:
        if method == "CONNECT":
            code += f"print({label!r}, '|', connect({host!r}, {port}))\n"
        else:
            code += f"print({label!r}, '|', get('http://{host}:{port}/hello'))\n"
    r = net_run(code)
    t.verdict(r, "success", None, "refusals: the program ran")
    lines = dict(l.split(" | ", 1) for l in r.get("stdout", "").splitlines() if " | " in l)
    rec = record(r)
    for label, host, port, method, reason, status in REFUSALS:
        t.eq(lines.get(label), f"HTTP {status} sandboxd-proxy: {host}:{port}: {reason}",
             f"{label}: the program gets {status} and the reason", brief(r))
        e = entries(rec, host=host, port=port, method=method)
        t.ok(len(e) == 1 and e[0]["decision"] == "denied" and e[0].get("reason") == reason and "address" not in e[0],
             f"{label}: record says denied, '{reason}', no address", netlog(rec))
        t.ok(journal_has(r["execution_id"], host=host, port=port, decision="denied", reason=reason),
             f"{label}: journal says denied, '{reason}'", journal(r["execution_id"]))
    t.eq(netlog(rec).get("requests_total"), len(REFUSALS), "refusals: requests_total counts each", netlog(rec))
    check_entry_shape(rec, "refusals")

    # ---- a direct connection, without the proxy: no route, in no log -----------------------------
    r = net_run("import errno, socket\n"
                "for a in [('198.18.0.2', 80), ('198.18.0.1', 80), ('198.18.0.2', 7000)]:\n"
                "    try:\n"
                "        socket.create_connection(a, timeout=10).close(); print(a, 'CONNECTED')\n"
                "    except OSError as e:\n"
                "        print(a, errno.errorcode.get(e.errno, e.errno))\n")
    out = r.get("stdout", "")
    t.ok(out.count("ENETUNREACH") == 3 and "CONNECTED" not in out,
         "direct connections to the lab and our side fail: ENETUNREACH (only lo)", brief(r))
    rec = record(r)
    t.eq((netlog(rec).get("requests"), netlog(rec).get("requests_total")), ([], 0),
         "direct connections: nothing in the network log", netlog(rec))

    # ---- no network: today's behaviour ---------------------------------------------------------
    r = run("import os, socket\n"
            "print('proxy env', sorted(k for k in os.environ if k.lower() in ('http_proxy', 'https_proxy', 'no_proxy')))\n"
            "try:\n"
            "    socket.create_connection(('127.0.0.1', 3128), timeout=5).close(); print('3128 CONNECTED')\n"
            "except OSError as e:\n"
            "    print('3128', e.errno)\n")
    t.verdict(r, "success", None, "without network: the program runs")
    out = r.get("stdout", "")
    t.ok("proxy env []" in out and "CONNECTED" not in out, "without network: no proxy variables, nothing on 127.0.0.1:3128",
         brief(r))
    rec = record(r)
    t.ok("network" in rec and rec["network"] is None, "without network: record network is null", rec.get("network"))

    # ---- requests the daemon refuses (400 naming the entry) -----------------------------------------
    for allow, field, word in [(["files.lab.test", "example.org"], "network.allow[1]", "example.org"),
                               (["*"], "network.allow[0]", None),
                               (["198.18.0.2"], "network.allow[0]", None),
                               (["files.lab.test", "*.org"], "network.allow[1]", None)]:
        st, res = submit("print(1)", network={"allow": allow})
        err = res.get("error") or {}
        t.ok(st == 400 and err.get("field") == field and (word is None or word in err.get("message", "")),
             f"network.allow {allow}: 400 naming {field}", (st, res))
    st, res = submit("print(1)", network={"allow": []})
    t.eq(st, 400, "network.allow []: 400", res)
    st, res = submit("print(1)", network={"allow": ["files.lab.test"], "bogus": 1})
    t.eq(st, 400, "network with an unknown key: 400", res)

    # ---- pip install from the lab's index, import in the same run and in the next turn ------------------
    PIP = ("import importlib, subprocess, sys\n"
           "p = subprocess.run([sys.executable, '-m', 'pip', 'install', '--no-cache-dir', '--disable-pip-version-check',\n"
           "                    '--index-url', 'http://pkgs.lab.test/simple', '--trusted-host', 'pkgs.lab.test', 'sbxdemo'],\n"
           "                   capture_output=True, text=True)\n"
           "print('pip', p.returncode); print(p.stdout[-1500:]); print(p.stderr[-1500:], file=sys.stderr)\n"
           "importlib.invalidate_caches()\n"
           "import sbxdemo\n"
           "print('IMPORTED', sbxdemo.greet(), sbxdemo.__file__)\n")
    r = net_run(PIP, allow=["pkgs.lab.test"], session_id="netpip")
    t.verdict(r, "success", None, "pip install sbxdemo from the lab's index")
    out = r.get("stdout", "")
    t.ok("pip 0" in out and f"IMPORTED {netlab.GREETING} /workspace/.pkgs/sbxdemo/__init__.py" in out,
         "pip install lands in /workspace/.pkgs and imports in the same run", brief(r))
    rec = record(r)
    t.ok(entries(rec, host="pkgs.lab.test", port=80, method="GET", decision="allowed")
         and all(e["decision"] == "allowed" for e in netlog(rec).get("requests") or []),
         "pip: the index and the wheel fetched through the proxy, all allowed", netlog(rec))
    r = run("import os, sys\n"
            "print('HTTP_PROXY', os.environ.get('HTTP_PROXY'))\n"
            "import sbxdemo\nprint('IMPORTED', sbxdemo.greet())\n", session_id="netpip")
    t.verdict(r, "success", None, "session's next turn, without network, runs")
    t.ok("HTTP_PROXY None" in r.get("stdout", "") and f"IMPORTED {netlab.GREETING}" in r.get("stdout", ""),
         "the next turn (no network) imports the package installed by the previous one", brief(r))
    t.ok(record(r).get("network") is None, "the next turn's record: network null")
    request("DELETE", "/v1/sessions/netpip")

    # ---- npm install into the workspace's node_modules, require in the same run and the next turn -------
    NPM = ("command -v npm >/dev/null || { echo NO-NPM; exit 0; }\n"
           "cd /workspace && npm install --no-audit --no-fund --no-update-notifier --loglevel=error "
           f"http://pkgs.lab.test/npm/{netlab.NPM_TARBALL}; echo \"npm $?\"\n"
           "node -e 'console.log(\"REQUIRED\", require(\"sbxnpm\").greet())'\n")
    r = net_run(NPM, language="bash", allow=["pkgs.lab.test"], session_id="netnpm")
    out = r.get("stdout", "")
    if "NO-NPM" in out:
        for name in ("npm install from the lab", "npm: require in the same run", "npm: the tarball through the proxy",
                     "npm: the next turn requires it"):
            t.n += 1
            print(f"ok {t.n} - {name} # SKIP npm is not installed where the programs run", flush=True)
    else:
        t.verdict(r, "success", None, "npm install from the lab")
        t.ok("npm 0" in out and f"REQUIRED {netlab.NPM_GREETING}" in out,
             "npm: lands in /workspace/node_modules and requires in the same run", brief(r))
        t.ok(entries(record(r), host="pkgs.lab.test", port=80, method="GET", decision="allowed"),
             "npm: the tarball through the proxy, allowed", netlog(record(r)))
        r = run("console.log('REQUIRED', require('sbxnpm').greet(), process.env.HTTP_PROXY)\n",
                language="node", session_id="netnpm")
        t.ok(f"REQUIRED {netlab.NPM_GREETING} undefined" in r.get("stdout", ""),
             "npm: the next turn (no network) requires the package from node_modules", brief(r))
    request("DELETE", "/v1/sessions/netnpm")

    # ---- byte cap ----------------------------------------------------------------------------------
    big = 10 * CAP_BYTES
    r = net_run(f'curl -sS -x "$HTTP_PROXY" -o /workspace/big http://files.lab.test/bytes/{big}; echo "rc=$?"\n'
                'echo "size=$(stat -c %s /workspace/big 2>/dev/null || echo 0)"\n'
                'curl -sS -x "$HTTP_PROXY" -w "\\ncode=%{http_code}\\n" http://files.lab.test/hello\n', language="bash")
    out = r.get("stdout", "")
    m_rc = re.search(r"rc=(\d+)", out)
    m_size = re.search(r"size=(\d+)", out)
    size = int(m_size.group(1)) if m_size else -1
    t.ok(m_rc and m_rc.group(1) != "0" and 0 < size <= CAP_BYTES,
         f"byte cap: a {big}-byte download is cut at MaxTransferMB={MAX_MB} (got {size} bytes)", brief(r))
    t.ok("code=503" in out and "byte cap reached" in out, "byte cap: the next request of the run is refused 503", brief(r))
    rec = record(r)
    e = entries(rec, host="files.lab.test", reason="byte cap reached")
    cut = [x for x in e if x["decision"] == "allowed"]
    t.ok(len(cut) == 1 and cut[0]["bytes_up"] + cut[0]["bytes_down"] <= CAP_BYTES and cut[0]["bytes_down"] > 0,
         "byte cap: record has the cut download, allowed, reason 'byte cap reached', bytes <= the cap", netlog(rec))
    t.ok(len([x for x in e if x["decision"] == "denied"]) == 1, "byte cap: record has the refused request, denied",
         netlog(rec))

    # ---- 100 connections at once --------------------------------------------------------------------
    CONNS = ("import select, socket, time\n"
             f"N, CAP = 100, {MAX_CONN}\n"
             "socks = [socket.create_connection(('127.0.0.1', 3128), timeout=30) for _ in range(N)]\n"
             "# The proxy answers the ones past its cap at once, without reading: collect them first, sending\n"
             "# nothing on them (data left unread at close would turn the answer into a reset).\n"
             "answered, end = {}, time.monotonic() + 30\n"
             "while len(answered) < N - CAP and time.monotonic() < end:\n"
             "    ready, _, _ = select.select([s for s in socks if s not in answered], [], [], 1)\n"
             "    for s in ready:\n"
             "        data = b''\n"
             "        while True:\n"
             "            b = s.recv(4096)\n"
             "            if not b: break\n"
             "            data += b\n"
             "        answered[s] = data\n"
             "refused = [d for d in answered.values() if d.startswith(b'HTTP/1.1 503') and b'connection cap reached' in d]\n"
             "ok = 0\n"
             "for s in socks:\n"
             "    if s in answered: continue\n"
             "    s.sendall(b'GET http://files.lab.test/hello HTTP/1.1\\r\\nHost: files.lab.test\\r\\n\\r\\n')\n"
             "    data = b''\n"
             "    while True:\n"
             "        b = s.recv(4096)\n"
             "        if not b: break\n"
             "        data += b\n"
             "    ok += data.startswith(b'HTTP/1.') and b' 200 ' in data.split(b'\\r\\n')[0] and b'hello from the lab' in data\n"
             "print('refused', len(refused), 'answered', len(answered), 'ok', ok)\n"
             "print(next(iter(answered.values()), b'').decode(errors='replace')[:300])\n")
    r = net_run(CONNS)
    t.verdict(r, "success", None, "100 connections: the program ran")
    out = r.get("stdout", "")
    t.ok(f"refused {100 - MAX_CONN} answered {100 - MAX_CONN} ok {MAX_CONN}" in out,
         f"100 connections: {MAX_CONN} served, {100 - MAX_CONN} refused 503 'connection cap reached'", brief(r))
    rec = record(r)
    n = netlog(rec)
    t.eq(n.get("requests_total"), 100, "100 connections: requests_total counts all of them", {k: n.get(k) for k in ("requests_total",)})
    t.eq(len(entries(rec, decision="denied", reason="connection cap reached")), 100 - MAX_CONN,
         "100 connections: the refusals are logged, 'connection cap reached'")
    t.eq(len(entries(rec, decision="allowed", host="files.lab.test")), MAX_CONN, "100 connections: the served ones are logged")
    t.ok(journal_has(r["execution_id"], decision="denied", reason="connection cap reached"),
         "100 connections: the journal has the refusals")

    # ---- the hostile corpus and network probes, with an allowlist on -------------------------------------
    src = open(os.path.join(os.path.dirname(__file__), "test-isolation.py")).read()
    PROBE = re.search(r"^PROBE = r'''(.*?)'''", src, re.S | re.M).group(1)
    r = net_run(PROBE)
    t.verdict(r, "success", None, "hostile probe (test-isolation.py) with network: ran")
    try:
        o = json.loads(r.get("stdout", ""))
    except ValueError:
        o = {}
    for k in ("connect dbus", "connect journal", "connect devlog", "connect abstract dbus"):
        t.ok(o.get(k) not in (None, "CONNECTED"), f"with network: {k} fails ({o.get(k)})", brief(r))
    for k in ("unshare(CLONE_NEWUSER)", "unshare(CLONE_NEWNET)", "bpf", "mount", "setuid(0)", "ptrace(PTRACE_TRACEME)"):
        t.ok(o.get(k) not in (None, "ok"), f"with network: {k} denied ({o.get(k)})")
    for p in ("/etc/shadow", "/proc/1/environ", "/run/sandboxd/api.sock", "/run/dbus/system_bus_socket"):
        t.ok(o.get(p) is not None and not o[p].startswith("READ:"), f"with network: cannot read {p} ({o.get(p)})")
    t.eq(o.get("ls /run"), ["sandbox"], "with network: /run holds sandbox-exec's directory only")

    NETPROBE = (IFACES % (lab.veth, lab.peer) + "import errno, json, socket\n"
                "out = {}\n"
                "def tcp(host, port, fam=socket.AF_INET):\n"
                "    try:\n"
                "        s = socket.socket(fam, socket.SOCK_STREAM); s.settimeout(5); s.connect((host, port)); s.close()\n"
                "        return 'CONNECTED'\n"
                "    except OSError as e:\n"
                "        return errno.errorcode.get(e.errno, str(e))\n"
                "for h, p in [('198.18.0.2', 80), ('198.18.0.2', 443), ('198.18.0.2', 7000), ('198.18.0.1', 22),\n"
                "             ('10.0.0.1', 80), ('169.254.169.254', 80), ('8.8.8.8', 53), ('127.0.0.1', 22),\n"
                "             ('127.0.0.1', 53), ('127.0.0.1', 80), ('127.0.0.1', 3128)]:\n"
                "    out[f'{h}:{p}'] = tcp(h, p)\n"
                "out['[::1]:3128'] = tcp('::1', 3128, socket.AF_INET6)\n"
                "try:\n"
                "    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.sendto(b'x', ('8.8.8.8', 53)); out['udp 8.8.8.8:53'] = 'SENT'\n"
                "except OSError as e:\n"
                "    out['udp 8.8.8.8:53'] = errno.errorcode.get(e.errno, str(e))\n"
                "out['interfaces'] = interfaces()\n"
                "def via(line):\n"
                "    s = socket.create_connection(('127.0.0.1', 3128), timeout=30); s.sendall(line.encode())\n"
                "    data = b''\n"
                "    while True:\n"
                "        b = s.recv(4096)\n"
                "        if not b: break\n"
                "        data += b\n"
                "    return data.split(b'\\r\\n')[0].decode()\n"
                "out['CONNECT 198.18.0.2:80'] = via('CONNECT 198.18.0.2:80 HTTP/1.1\\r\\nHost: 198.18.0.2:80\\r\\n\\r\\n')\n"
                "out['CONNECT 169.254.169.254:80'] = via('CONNECT 169.254.169.254:80 HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n')\n"
                "out['GET 127.0.0.1:3128'] = via('GET http://127.0.0.1:3128/ HTTP/1.1\\r\\nHost: 127.0.0.1:3128\\r\\n\\r\\n')\n"
                "out['GET loop.lab.test:3128'] = via('GET http://loop.lab.test:3128/ HTTP/1.1\\r\\nHost: loop.lab.test:3128\\r\\n\\r\\n')\n"
                "print(json.dumps(out))\n")
    r = net_run(NETPROBE)
    t.verdict(r, "success", None, "network probe with an allowlist on: ran")
    try:
        o = json.loads(r.get("stdout", ""))
    except ValueError:
        o = {}
    t.eq(o.get("interfaces"), ["lo"], "network probe: only lo")
    t.eq(o.get("127.0.0.1:3128"), "CONNECTED", "network probe: the proxy is reachable", brief(r))
    reached = {k: v for k, v in o.items() if ":" in k and k != "127.0.0.1:3128" and not k.startswith(("CONNECT", "GET"))
               and v in ("CONNECTED", "SENT")}
    t.ok(o and not reached, "network probe: nothing but the proxy is reachable directly", o)
    for k in ("CONNECT 198.18.0.2:80", "CONNECT 169.254.169.254:80", "GET 127.0.0.1:3128", "GET loop.lab.test:3128"):
        # 400 for an IP literal or a Host header that is not the target's, 403 for a name refused.
        t.ok((o.get(k) or "").startswith(("HTTP/1.1 400", "HTTP/1.1 403")),
             f"network probe: {k} through the proxy refused ({o.get(k)})")
    rec = record(r)
    # Five: the bare connect to 127.0.0.1:3128 (closed without a request: a bad request) and the four.
    t.ok(netlog(rec).get("requests_total") == 5 and all(e["decision"] == "denied" for e in netlog(rec).get("requests") or []),
         "network probe: the proxy logged the five connections, all denied", netlog(rec))

    # ---- MaxLoggedRequests=: the record and the journal keep the first ones, and count them all ------
    lab.configure(MAX_MB, MAX_CONN, "MaxLoggedRequests=3")
    r = net_run('for i in 1 2 3 4 5 6 7 8; do curl -sS -o /dev/null -x "$HTTP_PROXY" http://files.lab.test/hello; done;'
                ' echo done', language="bash")
    t.verdict(r, "success", None, "MaxLoggedRequests=3: eight requests ran")
    n = netlog(record(r))
    t.ok(n.get("requests_total") == 8 and len(n.get("requests") or []) == 3,
         "MaxLoggedRequests=3: the record keeps 3 entries, requests_total 8", n)

    def totals():
        out = subprocess.run(["journalctl", "--no-pager", "-o", "json", f"SANDBOXD_EXECUTION_ID={r['execution_id']}"],
                             capture_output=True, text=True).stdout
        return [json.loads(line) for line in out.splitlines() if "SANDBOXD_NET_REQUESTS_TOTAL" in line]
    wait_until(lambda: totals(), 10, 0.2)
    t.ok([x.get("SANDBOXD_NET_REQUESTS_TOTAL") for x in totals()] == ["8"] and len(journal(r["execution_id"])) == 3,
         "MaxLoggedRequests=3: the journal has 3 entries one by one and the total, 8",
         (totals(), len(journal(r["execution_id"]))))

if t.failed:
    # The proxies' own stderr (their units' journal) and the daemon's network lines, for the reader.
    j = subprocess.run(["journalctl", "--no-pager", "-n", "80", "-o", "short-monotonic", "-u", "sandboxd-proxy-*"],
                       capture_output=True, text=True).stdout
    for line in j.splitlines()[-80:]:
        print("# proxy: " + line[:300])
t.ok(not os.path.exists(lab.dropin) and subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.find(
    lab.netns) < 0, "netlab torn down: no drop-in, no namespace")
t.done()

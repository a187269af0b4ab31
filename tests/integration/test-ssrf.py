# SPDX-License-Identifier: LGPL-2.1-or-later
# No server-side request forgery through sandboxd. A caller names the URL, sandboxd connects: so
# callbacks and input downloads go to public addresses only unless the configuration says otherwise
# (CallbackAllowInternalAddresses=no, InputAllowInternalAddresses=no, the defaults), whatever form
# the address takes, no proxy from the daemon's environment is used, and no answer tells a caller
# anything about the daemon's network. Real listeners on loopback (an HTTP server on 127.0.0.1 and
# on ::1, a closed port, a port whose accept queue is full, an HTTP proxy), the real daemon:
#  a) with the defaults, callbacks to 127.0.0.1 (open and closed port), localhost, [::1] and
#     [::ffff:127.0.0.1] fail after one attempt with last_error "refused: internal address", the
#     same for the open and the closed port, and never reach the listener; input files from there
#     are refused with the same class; the journal names the address for the operator;
#  b) with http_proxy and ALL_PROXY in the daemon's environment (a sandboxd.service drop-in):
#     private and link-local addresses and 127.0.0.1 in its IPv4-translated, IPv4-compatible,
#     NAT64, local-use NAT64, 6to4 and Teredo forms are refused the same way, callbacks and inputs;
#  c) with the opt-outs (a drop-in and a reload): a callback and a download reach the listener
#     directly and the proxy sees nothing; a closed port and a port that never completes the
#     connection give the same last_error, "connection failed", nothing of libcurl's text;
#  d) after a reload back to the default, 127.0.0.1 is refused again (no kept-alive connection);
#  and the proxy never saw a request.
import http.server
import os
import re
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
from lib import *  # noqa: E402,F401,F403

t = Tap()
CONF = os.environ["SANDBOXD_CONFIG_DIR"]
DROPIN = os.path.join(CONF, "sandboxd.conf.d")
# Where the unit the harness runs lives: the host's /run/systemd/system (PID 1 is systemd), or the
# private systemd's generated unit directory.
UNITDIR = "/run/systemd/system" if os.path.exists("/run/systemd/system/sandboxd.service") \
    else os.path.join(os.path.dirname(CONF), "units")
UNIT_DROPIN = os.path.join(UNITDIR, "sandboxd.service.d", "60-test-ssrf-proxy.conf")
REFUSED = "refused: internal address"


class Listener:
    """An HTTP server on a loopback address that records every request it gets."""

    def __init__(self, host, family=socket.AF_INET):
        self.requests = []      # (method, path, headers)
        self.lock = threading.Lock()
        rec = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"   # keeps connections alive: a reused one would skip the check

            def log_message(self, *args):
                pass

            def answer(self):
                n = int(self.headers.get("Content-Length") or 0)
                if n:
                    self.rfile.read(n)
                with rec.lock:
                    rec.requests.append((self.command, self.path, dict(self.headers)))
                out = b"name,value\nx,1\n"
                self.send_response(200)
                self.send_header("Content-Type", "text/csv")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            do_GET = do_POST = do_CONNECT = answer

        class Server(http.server.ThreadingHTTPServer):
            address_family = family

            def handle_error(self, request, client_address):
                pass

        self.server = Server((host, 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def seen(self):
        with self.lock:
            return list(self.requests)

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


def closed_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def reload_with(name, text):
    os.makedirs(DROPIN, exist_ok=True)
    path = os.path.join(DROPIN, name)
    if text is None:
        if os.path.exists(path):
            os.unlink(path)
    else:
        with open(path, "w") as f:
            f.write(text)
    subprocess.run(["systemctl", "reload", "sandboxd.service"], check=True)
    time.sleep(0.3)


def restart():
    old = daemon_pid()
    subprocess.run(["systemctl", "daemon-reload"], check=True)
    subprocess.run(["systemctl", "restart", "sandboxd.service"], check=True)
    return wait_until(lambda: daemon_pid() not in (0, old) and request("GET", "/v1/health", timeout=5)[0] == 200,
                      30, 0.1)


def daemon_environ():
    try:
        with open(f"/proc/{daemon_pid()}/environ", "rb") as f:
            return dict(v.split("=", 1) for v in f.read().decode(errors="replace").split("\0") if "=" in v)
    except OSError:
        return {}


def journal():
    return subprocess.run(["journalctl", "-u", "sandboxd.service", "--no-pager", "-o", "cat"],
                          capture_output=True, text=True).stdout


def callback_of(eid):
    st, rec = get(eid)
    return (rec or {}).get("callback") if st == 200 else None


def callbacks(urls, timeout=60):
    """Submit one execution per callback URL, wait until every delivery is final (or the time is up):
    {name: callback}."""
    ids = {}
    for name, url in urls:
        st, body = submit("print(1)", callback_url=url)
        t.eq(st, 202, f"{name}: submitted with callback_url {url}", body)
        ids[name] = body.get("execution_id")
    end = time.monotonic() + timeout
    out = {}
    for name, eid in ids.items():
        wait_until(lambda: (callback_of(eid) or {}).get("state") in ("delivered", "failed"),
                   max(0.1, end - time.monotonic()), 0.2)
        out[name] = callback_of(eid) or {}
        out[name]["execution_id"] = eid
    return out


def input_refused(name, url):
    path = re.sub(r"[^a-z0-9]+", "-", name) + ".csv"
    res = run("print('ran')", files=[{"path": path, "url": url}])
    t.verdict(res, "failed", "input_error", f"input {name}")
    t.eq(res.get("error_message"), f"files[0] '{path}': {REFUSED}", f"input {name}: refused, nothing more", res)
    return res


# Quick retries and one short attempt, so that what goes wrong ends soon.
reload_with("50-ssrf.conf", "[Callbacks]\nCallbackMaxAttempts=2\nCallbackTimeoutSec=2\n"
            "CallbackBackoffBaseMS=100\nCallbackBackoffMaxSec=1\n")

web = Listener("127.0.0.1")
try:
    web6 = Listener("::1", socket.AF_INET6)
except OSError:
    web6 = None
proxy = Listener("127.0.0.1")
CLOSED = closed_port()
P = web.port

try:
    # ---- a) the defaults: loopback in its plain forms -------------------------------------------
    urls = [("127.0.0.1 open port", f"http://127.0.0.1:{P}/hook"),
            ("127.0.0.1 closed port", f"http://127.0.0.1:{CLOSED}/hook"),
            ("localhost", f"http://localhost:{P}/hook"),
            ("IPv4-mapped ::ffff:127.0.0.1", f"http://[::ffff:127.0.0.1]:{P}/hook")]
    if web6:
        urls.append(("::1", f"http://[::1]:{web6.port}/hook"))
    got = callbacks(urls)
    for name, cb in got.items():
        t.eq((cb.get("state"), cb.get("attempts"), cb.get("last_error")), ("failed", 1, REFUSED),
             f"callback to {name}: failed at once, last_error '{REFUSED}'", cb)
    t.eq(got["127.0.0.1 open port"].get("last_error"), got["127.0.0.1 closed port"].get("last_error"),
         "an open and a closed port give the same last_error (nothing to scan)")
    t.eq(web.seen(), [], "the listener on 127.0.0.1 got no request")
    if web6:
        t.eq(web6.seen(), [], "the listener on ::1 got no request")
    else:
        print("# no IPv6 loopback here: [::1] not tried", flush=True)
    log = journal()
    t.ok(f"callback to http://127.0.0.1:{P}/hook failed ({REFUSED}: 127.0.0.1 (CallbackAllowInternalAddresses=no))"
         in log, "the journal names the refused address for the operator")

    open_in = input_refused("127.0.0.1 open port", f"http://127.0.0.1:{P}/data.csv")
    closed_in = input_refused("127.0.0.1 closed port", f"http://127.0.0.1:{CLOSED}/data.csv")
    input_refused("localhost", f"http://localhost:{P}/data.csv")
    input_refused("IPv4-mapped", f"http://[::ffff:127.0.0.1]:{P}/data.csv")
    t.eq(web.seen(), [], "the listener got no download request either")
    t.ok("127.0.0.1 (InputAllowInternalAddresses=no)" in journal(),
         "the journal names the address of a refused download")

    # ---- b) a proxy in the daemon's environment; the other internal forms -----------------------
    os.makedirs(os.path.dirname(UNIT_DROPIN), exist_ok=True)
    with open(UNIT_DROPIN, "w") as f:
        f.write("[Service]\n"
                f"Environment=http_proxy=http://127.0.0.1:{proxy.port} https_proxy=http://127.0.0.1:{proxy.port}\n"
                f"Environment=ALL_PROXY=http://127.0.0.1:{proxy.port} all_proxy=http://127.0.0.1:{proxy.port}\n")
    t.ok(restart(), "sandboxd restarted with a proxy in its environment")
    env = daemon_environ()
    t.eq((env.get("http_proxy"), env.get("ALL_PROXY")),
         (f"http://127.0.0.1:{proxy.port}", f"http://127.0.0.1:{proxy.port}"),
         "the daemon's environment has http_proxy and ALL_PROXY (else the proxy checks prove nothing)")

    urls = [("10.0.0.1 private", f"http://10.0.0.1:{P}/hook"),
            ("169.254.169.254 metadata", "http://169.254.169.254/latest/meta-data/"),
            ("192.168.1.1 private", f"http://192.168.1.1:{P}/hook"),
            ("127.0.0.1 with a proxy set", f"http://127.0.0.1:{P}/hook"),
            ("IPv4-translated ::ffff:0:7f00:1", f"http://[::ffff:0:7f00:1]:{P}/hook"),
            ("IPv4-compatible ::7f00:1", f"http://[::7f00:1]:{P}/hook"),
            ("NAT64 64:ff9b::7f00:1", f"http://[64:ff9b::7f00:1]:{P}/hook"),
            ("NAT64 64:ff9b::a9fe:a9fe (metadata)", "http://[64:ff9b::a9fe:a9fe]/latest/meta-data/"),
            ("local NAT64 64:ff9b:1::7f00:1", f"http://[64:ff9b:1::7f00:1]:{P}/hook"),
            ("6to4 2002:7f00:1::1", f"http://[2002:7f00:1::1]:{P}/hook"),
            ("Teredo 2001:0:808:808::80ff:fffe (client 127.0.0.1)", f"http://[2001:0:808:808::80ff:fffe]:{P}/hook"),
            ("unique local fd00::1", f"http://[fd00::1]:{P}/hook")]
    got = callbacks(urls)
    for name, cb in got.items():
        t.eq((cb.get("state"), cb.get("attempts"), cb.get("last_error")), ("failed", 1, REFUSED),
             f"callback to {name}: failed at once, last_error '{REFUSED}'", cb)
    for name, url in [("NAT64", f"http://[64:ff9b::7f00:1]:{P}/data.csv"),
                      ("local NAT64", f"http://[64:ff9b:1::7f00:1]:{P}/data.csv"),
                      ("6to4", f"http://[2002:7f00:1::1]:{P}/data.csv"),
                      ("Teredo", f"http://[2001:0:808:808::80ff:fffe]:{P}/data.csv"),
                      ("IPv4-translated", f"http://[::ffff:0:7f00:1]:{P}/data.csv"),
                      ("metadata", "http://169.254.169.254/latest/meta-data/")]:
        input_refused(name, url)
    t.eq(web.seen(), [], "b: the listener got no request")
    t.eq(proxy.seen(), [], "b: the proxy got no request")

    # ---- c) the opt-outs: loopback allowed, still no proxy, still no detail ---------------------
    reload_with("60-ssrf-allow.conf", "[Callbacks]\nCallbackAllowInternalAddresses=yes\n"
                "[Inputs]\nInputAllowInternalAddresses=yes\n")
    full = socket.socket()
    full.bind(("127.0.0.1", 0))
    full.listen(0)
    fillers = []
    for _ in range(3):      # the accept queue is full: the kernel drops further SYNs
        c = socket.socket()
        c.settimeout(0.5)
        try:
            c.connect(full.getsockname())
        except OSError:
            pass
        fillers.append(c)
    got = callbacks([("opt-out, listener", f"http://127.0.0.1:{P}/hook"),
                     ("opt-out, closed port", f"http://127.0.0.1:{CLOSED}/hook"),
                     ("opt-out, no answer to the connection", f"http://127.0.0.1:{full.getsockname()[1]}/hook")])
    for c in fillers:
        c.close()
    full.close()
    cb = got["opt-out, listener"]
    t.eq((cb.get("state"), cb.get("attempts")), ("delivered", 1), "opt-out: the callback to 127.0.0.1 is delivered", cb)
    posts = [r for r in web.seen() if r[0] == "POST" and r[2].get("Sandboxd-Execution-Id") == cb["execution_id"]]
    t.eq([(m, p) for m, p, _ in posts], [("POST", "/hook")], "opt-out: ... straight to the listener, not via the proxy",
         web.seen())
    want = "connection failed (gave up after 2 attempts)"
    t.eq(got["opt-out, closed port"].get("last_error"), want, "opt-out: a closed port: only the class",
         got["opt-out, closed port"])
    t.eq(got["opt-out, no answer to the connection"].get("last_error"), want,
         "opt-out: a port that never completes the connection: the same last_error as a closed one",
         got["opt-out, no answer to the connection"])

    res = run("print(open('/workspace/input/d.csv').read(), end='')",
              files=[{"path": "d.csv", "url": f"http://127.0.0.1:{P}/data.csv"}])
    t.eq((res.get("status"), res.get("stdout")), ("success", "name,value\nx,1\n"),
         "opt-out: an input file from 127.0.0.1 is downloaded", res)
    t.ok(("GET", "/data.csv") in [(m, p) for m, p, _ in web.seen()], "opt-out: ... from the listener itself")
    t.eq(proxy.seen(), [], "c: the proxy got no request")

    # ---- d) back to the default: refused again, also where a connection could be reused ---------
    reload_with("60-ssrf-allow.conf", None)
    before = len(web.seen())
    got = callbacks([("after the reload", f"http://127.0.0.1:{P}/hook")])
    t.eq((got["after the reload"].get("state"), got["after the reload"].get("last_error")), ("failed", REFUSED),
         "after a reload to CallbackAllowInternalAddresses=no, 127.0.0.1 is refused again", got["after the reload"])
    input_refused("after the reload", f"http://127.0.0.1:{P}/data.csv")
    t.eq(len(web.seen()), before, "d: the listener got nothing more")
    t.eq(proxy.seen(), [], "the proxy never got a request")
finally:
    if os.path.exists(UNIT_DROPIN):
        os.unlink(UNIT_DROPIN)
        restart()
    for name in ("50-ssrf.conf", "60-ssrf-allow.conf"):
        if os.path.exists(os.path.join(DROPIN, name)):
            os.unlink(os.path.join(DROPIN, name))
    subprocess.run(["systemctl", "reload", "sandboxd.service"], check=False)
    for s in (web, web6, proxy):
        if s:
            s.stop()

t.done()

# SPDX-License-Identifier: LGPL-2.1-or-later
"""A small "internet" for the network tests and the network bench (issue 16): a network namespace
sbxlab-PID joined to ours by a veth pair (198.18.0.1/30 here, 198.18.0.2/30 there, RFC 2544's
benchmarking range), real servers inside it (`ip netns exec`), a HostsFile naming them and a
sandboxd.conf.d drop-in ([Network]) that lets executions reach them through the egress proxy.

Run it only inside tests/harness/sandbox-harness --private-network: "our side" is then the
harness's own network namespace, never the host's.

Servers (one process, `python3 netlab.py serve DIR`, in the lab namespace, ended by PID):
  HTTP on 80 and on 443 (plain HTTP on 443 too: a CONNECT tunnel to :443 is tested by speaking HTTP
  through it, `curl -p -x $HTTP_PROXY http://files.lab.test:443/hello`):
    /hello             "hello from the lab port P host H\\n" (H: the Host header it got)
    /bytes/N           N bytes ('x'), Content-Length N, streamed in 1 MiB writes
    /slow/S            the headers and "slow\\n" after S seconds (at most 60)
    /simple/           a PEP 503 index; /simple/sbxdemo/ links to the wheel
    /packages/F        the wheel sbxdemo-1.0-py3-none-any.whl, built here with zipfile
    /npm/F             the npm package sbxnpm-1.0.0.tgz, built here with tarfile
  TCP echo on 7000 (a port no allowlist entry names: "port not allowed").

Names (HostsFile=): pkgs.lab.test, files.lab.test, other.lab.test -> 198.18.0.2; loop.lab.test ->
127.0.0.1 (an internal address PermitAddresses= does not cover).

    with NetLab(conf_dir) as lab:       # the drop-in is written and sandboxd reloaded
        ...
    (torn down on exit, also on failure: servers by PID, the namespace, the veth, the drop-in.)
"""

import base64
import hashlib
import http.server
import io
import os
import socket
import socketserver
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import zipfile

OURS = "198.18.0.1"
LAB = "198.18.0.2"
CIDR = "198.18.0.0/30"
HTTP_PORTS = (80, 443)
ECHO_PORT = 7000
NAMES = {"pkgs.lab.test": LAB, "files.lab.test": LAB, "other.lab.test": LAB, "loop.lab.test": "127.0.0.1"}
WHEEL = "sbxdemo-1.0-py3-none-any.whl"
GREETING = "hello from sbxdemo"
NPM_TARBALL = "sbxnpm-1.0.0.tgz"
NPM_GREETING = "hello from sbxnpm"


def build_npm_tarball():
    """A minimal npm package tarball: package/package.json and package/index.js."""
    files = {
        "package/package.json": b'{"name": "sbxnpm", "version": "1.0.0", "main": "index.js"}\n',
        "package/index.js": f'exports.greet = () => "{NPM_GREETING}";\n'.encode(),
    }
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def build_wheel():
    """A minimal pure-Python wheel (PEP 427): the package, METADATA, WHEEL and RECORD."""
    files = {
        "sbxdemo/__init__.py": f'VALUE = 42\n\n\ndef greet():\n    return "{GREETING}"\n'.encode(),
        "sbxdemo-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: sbxdemo\nVersion: 1.0\n"
                                          b"Summary: sandboxd's network test package\n",
        "sbxdemo-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: sandboxd-netlab\n"
                                       b"Root-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for name, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(data)}")
    record.append("sbxdemo-1.0.dist-info/RECORD,,")
    files["sbxdemo-1.0.dist-info/RECORD"] = ("\n".join(record) + "\n").encode()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in files.items():
            z.writestr(name, data)
    return buf.getvalue()


# ---- the servers (run in the lab namespace) --------------------------------------------------

class LabHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    wheel = b""
    npm_tarball = build_npm_tarball()

    def log_message(self, *args):
        pass

    def send(self, code, body, ctype="text/plain"):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        path = self.path.split("?", 1)[0]
        port = self.server.server_address[1]
        if path == "/hello":
            self.send(200, f"hello from the lab port {port} host {self.headers.get('Host', '')}\n".encode())
        elif path.startswith("/bytes/") and path[7:].isdigit():
            n = int(path[7:])
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(n))
            self.end_headers()
            chunk = b"x" * (1 << 20)
            try:
                while n > 0:
                    k = min(n, len(chunk))
                    self.wfile.write(chunk[:k])
                    n -= k
            except OSError:
                pass
        elif path.startswith("/slow/") and path[6:].isdigit():
            time.sleep(min(int(path[6:]), 60))
            self.send(200, b"slow\n")
        elif path in ("/simple", "/simple/"):
            self.send(200, b'<!DOCTYPE html><html><body><a href="/simple/sbxdemo/">sbxdemo</a></body></html>\n',
                      "text/html")
        elif path in ("/simple/sbxdemo", "/simple/sbxdemo/"):
            sha = hashlib.sha256(self.wheel).hexdigest()
            self.send(200, (f'<!DOCTYPE html><html><body><a href="/packages/{WHEEL}#sha256={sha}">{WHEEL}</a>'
                            f'</body></html>\n').encode(), "text/html")
        elif path == f"/packages/{WHEEL}":
            self.send(200, self.wheel, "application/octet-stream")
        elif path == f"/npm/{NPM_TARBALL}":
            self.send(200, self.npm_tarball, "application/octet-stream")
        else:
            self.send(404, b"not here\n")


class LabHTTPServer(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256


class EchoHandler(socketserver.BaseRequestHandler):
    def handle(self):
        while True:
            data = self.request.recv(65536)
            if not data:
                return
            self.request.sendall(data)


class EchoServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


def serve(wheel_path):
    with open(wheel_path, "rb") as f:
        LabHandler.wheel = f.read()
    servers = [LabHTTPServer((LAB, p), LabHandler) for p in HTTP_PORTS]
    servers.append(EchoServer((LAB, ECHO_PORT), EchoHandler))
    for s in servers[1:]:
        threading.Thread(target=s.serve_forever, daemon=True).start()
    print("ready", flush=True)
    servers[0].serve_forever()


# ---- the fixture (runs in the harness's namespace) ---------------------------------------------

def _ip(*args, check=True):
    return subprocess.run(["ip", *args], check=check, capture_output=True, text=True)


def missing_tools():
    """Why the lab cannot be built here, or None."""
    try:
        subprocess.run(["ip", "-V"], check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError):
        return "ip (iproute2) is missing"
    return None


class NetLab:
    def __init__(self, conf_dir, max_transfer_mb=None, max_connections=None, extra_conf="", dropin="50-netlab.conf"):
        self.conf_dir = conf_dir
        self.pid = os.getpid()
        self.netns = f"sbxlab-{self.pid}"
        self.veth = f"sbxl{self.pid}"[:13] + "a"   # IFNAMSIZ: at most 15 characters
        self.peer = self.veth[:-1] + "b"
        self.max_transfer_mb = max_transfer_mb
        self.max_connections = max_connections
        self.extra_conf = extra_conf
        # conf_dir None: only the namespace and its servers (no HostsFile, no drop-in, no reload).
        self.dropin = os.path.join(conf_dir, "sandboxd.conf.d", dropin) if conf_dir else None
        self.hosts_file = os.path.join(conf_dir, "netlab-hosts") if conf_dir else None
        self.tmp = None
        self.server = None
        self.made_ns = False
        self.made_veth = False
        self.wrote_dropin = False

    # -- life cycle
    def __enter__(self):
        try:
            self.setup()
        except BaseException:
            self.teardown()
            raise
        return self

    def __exit__(self, *exc):
        self.teardown()
        return False

    def setup(self):
        self.tmp = tempfile.mkdtemp(prefix="sbxlab-")
        self.wheel_path = os.path.join(self.tmp, WHEEL)
        with open(self.wheel_path, "wb") as f:
            f.write(build_wheel())
        _ip("netns", "add", self.netns)
        self.made_ns = True
        _ip("link", "add", self.veth, "type", "veth", "peer", "name", self.peer)
        self.made_veth = True
        _ip("link", "set", self.peer, "netns", self.netns)
        _ip("addr", "add", f"{OURS}/30", "dev", self.veth)
        _ip("link", "set", self.veth, "up")
        self.ns_ip("link", "set", "lo", "up")
        self.ns_ip("addr", "add", f"{LAB}/30", "dev", self.peer)
        self.ns_ip("link", "set", self.peer, "up")
        self.server = subprocess.Popen(["ip", "netns", "exec", self.netns, sys.executable, os.path.abspath(__file__),
                                        "serve", self.wheel_path],
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.server.stdout.readline()
        if line.strip() != "ready":
            raise RuntimeError(f"netlab: the lab's servers did not start: {line}{self.server.stderr.read()[:2000]}")
        # Reachable from our side (the veth is up once a TCP connection completes).
        end = time.monotonic() + 10
        while True:
            try:
                socket.create_connection((LAB, 80), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > end:
                    raise
                time.sleep(0.05)
        if self.conf_dir:
            with open(self.hosts_file, "w") as f:
                f.write("# netlab (tests/integration/netlab.py)\n")
                for name, addr in NAMES.items():
                    f.write(f"{addr} {name}\n")
            self.configure(self.max_transfer_mb, self.max_connections, self.extra_conf)

    def ns_ip(self, *args):
        return _ip("-n", self.netns, *args)

    def configure(self, max_transfer_mb=None, max_connections=None, extra_conf=""):
        """(Re)write the [Network] drop-in and reload sandboxd (the way test-ssrf changes the
        configuration): AllowDomains=*.lab.test, HostsFile=, PermitAddresses= the lab's /30."""
        text = ("# netlab (tests/integration/netlab.py)\n[Network]\nAllowDomains=*.lab.test\n"
                f"HostsFile={self.hosts_file}\nPermitAddresses={CIDR}\n")
        if max_transfer_mb is not None:
            text += f"MaxTransferMB={max_transfer_mb}\n"
        if max_connections is not None:
            text += f"MaxConnections={max_connections}\n"
        text += extra_conf
        os.makedirs(os.path.dirname(self.dropin), exist_ok=True)
        with open(self.dropin, "w") as f:
            f.write(text)
        self.wrote_dropin = True
        reload_daemon()

    def teardown(self):
        if self.server is not None:
            if self.server.poll() is None:
                # `ip netns exec` execs the server: the PID is the server's own.
                self.server.kill()
            try:
                self.server.wait(10)
            except subprocess.TimeoutExpired:
                pass
            self.server = None
        if self.wrote_dropin:
            try:
                os.unlink(self.dropin)
            except OSError:
                pass
            self.wrote_dropin = False
            reload_daemon(check=False)
        if self.hosts_file and os.path.exists(self.hosts_file):
            os.unlink(self.hosts_file)
        if self.made_veth:
            _ip("link", "del", self.veth, check=False)    # its peer goes with it
            self.made_veth = False
        if self.made_ns:
            _ip("netns", "del", self.netns, check=False)
            self.made_ns = False
        if self.tmp:
            for f in os.listdir(self.tmp):
                os.unlink(os.path.join(self.tmp, f))
            os.rmdir(self.tmp)
            self.tmp = None

    def url(self, path, host="files.lab.test", port=80):
        return f"http://{host}{'' if port == 80 else ':%d' % port}{path}"


def reload_daemon(check=True):
    subprocess.run(["systemctl", "reload", "sandboxd.service"], check=check)
    time.sleep(0.3)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "serve":
        serve(sys.argv[2])
    else:
        print("usage: netlab.py serve WHEEL", file=sys.stderr)
        sys.exit(2)

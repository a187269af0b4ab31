#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""sandboxd-proxy end to end, without systemd: the built binary, socket-activated the way systemd does
it (the listening socket as fd 3, LISTEN_FDS=1, LISTEN_PID), against real upstream servers this test
starts. Everything runs in a private network namespace (unshare -rn) with only `lo`, so that no
address outside this test is ever reached and DNS fails at once (no route to any name server); without
user namespaces it runs on the host's loopback and skips the one DNS case. Loopback is internal to the
proxy, so the allowed cases pass --permit=127.0.0.1/32 and name hosts with --host=NAME=127.0.0.1.
TAP on stdout. Usage: test-proxy.py PATH-TO-sandboxd-proxy"""
import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time

PROXY = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else None
IN_NETNS = os.environ.get("SANDBOXD_PROXY_TEST_NETNS") == "1"
WAIT = 30.0          # the longest any step waits for the proxy (a hang fails, it is not a measurement)


def reexec_in_netns():
    """Into a private user, network and (if possible) mount namespace: with the mount namespace the
    test bind-mounts its own resolv.conf over /etc/resolv.conf, naming the DNS server it runs on
    127.0.0.1:53, so the c-ares path is exercised too."""
    if IN_NETNS or os.environ.get("SANDBOXD_PROXY_TEST_NO_NETNS"):
        return
    for flags in ("-rnm", "-rn"):
        try:
            r = subprocess.run(["unshare", flags, "true"], capture_output=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            return
        if r.returncode == 0:
            env = dict(os.environ, SANDBOXD_PROXY_TEST_NETNS="1", SANDBOXD_PROXY_TEST_MOUNTNS=str(int(flags == "-rnm")))
            os.execvpe("unshare", ["unshare", flags, sys.executable, os.path.abspath(__file__)] + sys.argv[1:], env)


# ---- a DNS server on 127.0.0.1:53 (only inside the test's own namespaces) -----------------------

DNS_A = {b"dns.test": "127.0.0.1", b"dns-internal.test": "127.0.0.5"}
DNS_SILENT = {b"silent.test"}          # never answered: a query still pending at SIGTERM


def dns_serve(sock):
    while True:
        try:
            q, addr = sock.recvfrom(512)
        except OSError:
            return
        if len(q) < 12:
            continue
        labels, i = [], 12
        while i < len(q) and q[i] != 0:
            labels.append(q[i + 1:i + 1 + q[i]])
            i += 1 + q[i]
        name = b".".join(labels).lower()
        qtype = int.from_bytes(q[i + 1:i + 3], "big")
        question = q[12:i + 5]
        if name in DNS_SILENT:
            continue
        answers = b""
        rcode = 0
        if name in DNS_A and qtype == 1:
            answers = (b"\xc0\x0c\x00\x01\x00\x01\x00\x00\x00\x3c\x00\x04"
                       + socket.inet_aton(DNS_A[name]))
        elif name not in DNS_A:
            rcode = 3                   # NXDOMAIN
        header = q[:2] + bytes([0x81, 0x80 | rcode]) + b"\x00\x01" + (b"\x00\x01" if answers else b"\x00\x00") \
            + b"\x00\x00\x00\x00"
        sock.sendto(header + question + answers, addr)


def dns_setup():
    """True when names outside --host resolve through this test's DNS server."""
    if os.environ.get("SANDBOXD_PROXY_TEST_MOUNTNS") != "1":
        return False
    conf = os.path.join(SCRATCH, "resolv.conf")
    with open(conf, "w") as f:
        f.write("nameserver 127.0.0.1\n")
    if subprocess.run(["mount", "--bind", conf, os.path.realpath("/etc/resolv.conf")],
                      capture_output=True).returncode != 0:
        return False
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.bind(("127.0.0.1", 53))
    threading.Thread(target=dns_serve, args=(u,), daemon=True).start()
    return True


class Tap:
    def __init__(self):
        self.n = 0
        self.failed = 0

    def ok(self, cond, name, diag=None):
        self.n += 1
        print(("ok %d - %s" if cond else "not ok %d - %s") % (self.n, name), flush=True)
        if not cond:
            self.failed += 1
            if diag is not None:
                for line in str(diag).splitlines():
                    print("# " + line, flush=True)
        return cond

    def skip(self, name, why):
        self.n += 1
        print("ok %d - %s # SKIP %s" % (self.n, name, why), flush=True)

    def done(self):
        print("1..%d" % self.n, flush=True)
        sys.exit(1 if self.failed else 0)


T = Tap()
PROXIES = []


# ---- upstream servers --------------------------------------------------------------------------

class Server:
    """A TCP server on 127.0.0.1 with one thread per connection running handler(conn, self)."""

    def __init__(self, handler, address="127.0.0.1"):
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        self.sock = socket.socket(family, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((address, 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.handler = handler
        self.received = queue.Queue()
        self.sent = queue.Queue()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._run, args=(c,), daemon=True).start()

    def _run(self, c):
        try:
            c.settimeout(WAIT)
            self.handler(c, self)
        except OSError:
            pass
        finally:
            c.close()


def read_head(c):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = c.recv(65536)
        if not chunk:
            break
        data += chunk
    return data


def http_handler(c, srv):
    """Reads a head and its Content-Length body, answers with a body naming what it got."""
    data = read_head(c)
    head, _, rest = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-length":
            length = int(v.strip())
    while len(rest) < length:
        chunk = c.recv(65536)
        if not chunk:
            break
        rest += chunk
    # Whatever else arrives before the proxy closes its side (nothing should: one request only).
    c.settimeout(0.5)
    try:
        while True:
            chunk = c.recv(65536)
            if not chunk:
                break
            rest += chunk
    except OSError:
        pass
    srv.received.put(head + b"\r\n\r\n" + rest)
    body = b"hello from upstream: " + head.split(b"\r\n")[0] + b"\n"
    resp = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body)
    c.sendall(resp)
    srv.sent.put(resp)


def echo_handler(c, srv):
    total = 0
    while True:
        chunk = c.recv(65536)
        if not chunk:
            break
        c.sendall(chunk)
        total += len(chunk)
    srv.received.put(total)


BIG = 4 * 1024 * 1024


def big_handler(c, srv):
    read_head(c)
    c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % BIG)
    block = b"x" * 65536
    try:
        for _ in range(BIG // len(block)):
            c.sendall(block)
    except OSError:
        srv.received.put("cut")
        return
    srv.received.put("all")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


# ---- the proxy, socket-activated ---------------------------------------------------------------

class Proxy:
    def __init__(self, args, name="t"):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(128)
        self.port = self.sock.getsockname()[1]
        self.log = open(os.path.join(SCRATCH, "proxy-%s.log" % name), "w+")
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                hi = [os.dup(fd) for fd in (w, self.log.fileno(), self.sock.fileno())]
                os.dup2(hi[0], 1)
                os.dup2(hi[1], 2)
                os.dup2(hi[2], 3)
                env = dict(os.environ, LISTEN_FDS="1", LISTEN_PID=str(os.getpid()))
                env.pop("LISTEN_FDNAMES", None)
                os.execve(PROXY, [PROXY, "--execution-id=" + name] + args, env)
            finally:
                os._exit(127)
        os.close(w)
        self.sock.close()
        self.pid = pid
        self.out = os.fdopen(r, "rb")
        self.lines = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.out:
            self.lines.put(line)
        self.lines.put(None)

    def event(self, timeout=WAIT):
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            return None
        if line is None:
            return None
        assert len(line) <= 2048 and line.endswith(b"\n"), line
        return json.loads(line)

    def connect(self):
        c = socket.create_connection(("127.0.0.1", self.port), timeout=WAIT)
        return c

    def stop(self):
        PROXIES.append(self)
        try:
            os.kill(self.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        _, status = os.waitpid(self.pid, 0)
        return status

    def stderr(self):
        self.log.seek(0)
        return self.log.read()


def read_all(c):
    data = b""
    try:
        while True:
            chunk = c.recv(65536)
            if not chunk:
                break
            data += chunk
    except (ConnectionResetError, socket.timeout) as e:
        data += b"<%s>" % type(e).__name__.encode()
    return data


def exchange(proxy, request):
    c = proxy.connect()
    c.sendall(request)
    data = read_all(c)
    c.close()
    return data, proxy.event()


def expect_refusal(proxy, name, request, status, host, port, reason, method):
    data, ev = exchange(proxy, request)
    body = ("sandboxd-proxy: %s:%d: %s\n" % (host, port, reason)).encode()
    T.ok(data.startswith(b"HTTP/1.1 %d " % status) and data.endswith(b"\r\n\r\n" + body)
         and b"Connection: close\r\n" in data, "%s: %d and the reason" % (name, status), data)
    want = {"host": host, "port": port, "method": method, "decision": "denied", "reason": reason,
            "bytes_up": 0, "bytes_down": 0}
    T.ok(ev is not None and all(ev.get(k) == v for k, v in want.items()) and "address" not in ev
         and list(ev)[:5] == ["host", "port", "method", "decision", "reason"],
         "%s: the event line" % name, ev)
    return ev


def main():
    global SCRATCH
    if not PROXY or not os.access(PROXY, os.X_OK):
        print("1..0 # SKIP no sandboxd-proxy binary given")
        sys.exit(77)
    reexec_in_netns()
    if IN_NETNS:
        subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    SCRATCH = os.environ.get("MESON_BUILD_ROOT") or os.path.dirname(PROXY)
    SCRATCH = os.path.join(SCRATCH, "test-proxy.d")
    os.makedirs(SCRATCH, exist_ok=True)

    have_dns = dns_setup()
    http = Server(http_handler)
    echo = Server(echo_handler)
    big = Server(big_handler)
    closed = free_port()
    # A listener whose accept queue is full: the kernel drops further SYNs, so a connect to it hangs.
    stuck = socket.socket()
    stuck.bind(("127.0.0.1", 0))
    stuck.listen(0)
    fillers = []
    for _ in range(3):
        f = socket.socket()
        f.setblocking(False)
        f.connect_ex(stuck.getsockname())
        fillers.append(f)
    S = stuck.getsockname()[1]
    H, E, B = http.port, echo.port, big.port
    try:
        echo6 = Server(echo_handler, "::1")
    except OSError:
        echo6 = None

    common = ["--permit=127.0.0.1/32",
              "--allow=allowed.test:%d" % H, "--host=allowed.test=127.0.0.1",
              "--allow=tunnel.test:%d" % E, "--host=tunnel.test=127.0.0.1",
              "--allow=big.test:%d" % B, "--host=big.test=127.0.0.1",
              "--allow=inside.test:%d" % H, "--host=inside.test=127.0.0.2",
              "--allow=nx.invalid:%d" % H, "--allow=dns.test:%d" % E, "--allow=dns-internal.test:%d" % E,
              "--allow=silent.test:%d" % E,
              "--allow=closed.test:%d" % closed, "--host=closed.test=127.0.0.1",
              # the internal 127.0.0.2 skipped, 127.0.0.1 connected to
              "--allow=mixed.test:%d" % E, "--host=mixed.test=127.0.0.2", "--host=mixed.test=127.0.0.1",
              # 127.0.0.3 permitted but nothing listens there: refused, then the next address
              "--permit=127.0.0.3/32", "--allow=next.test:%d" % E, "--host=next.test=127.0.0.3",
              "--host=next.test=127.0.0.1",
              "--allow=stuck.test:%d" % S, "--host=stuck.test=127.0.0.1"]
    if echo6:
        common += ["--permit=::1", "--allow=six.test:%d" % echo6.port, "--host=six.test=::1"]

    # argv: usage errors exit 2.
    for args, why in ((["--execution-id=x", "--bogus=1"], "an unknown argument"),
                      (["--execution-id=x", "--permit=10.0.0.1/8"], "a CIDR with host bits"),
                      (["--execution-id=x", "--allow=127.0.0.1"], "an IP literal in --allow"),
                      (["--execution-id=x", "--host=a.test"], "--host without an address"),
                      (["--execution-id=x", "--max-connections=0"], "--max-connections=0"),
                      (["--execution-id=a b"], "an execution id with a space"),
                      (["--allow=a.test"], "no --execution-id")):
        r = subprocess.run([PROXY] + args, capture_output=True, timeout=WAIT)
        T.ok(r.returncode == 2 and r.stderr, "argv: %s exits 2 with a message" % why, r)

    p = Proxy(common, "main")

    # Allowed, absolute form: origin form upstream, hop-by-hop and Proxy-* headers gone, Connection:
    # close added, the body forwarded and the bytes after it not; byte counts as the server saw them.
    req = (b"POST http://allowed.test:%d/path/x?q=1&r=2 HTTP/1.1\r\nHost: allowed.test:%d\r\n"
           b"Proxy-Connection: keep-alive\r\nProxy-Authorization: Basic eA==\r\nConnection: keep-alive, X-Drop\r\n"
           b"X-Drop: 1\r\nUser-Agent: test\r\nContent-Length: 5\r\n\r\nhelloEXTRA-REQUEST" % (H, H))
    data, ev = exchange(p, req)
    got = http.received.get(timeout=WAIT)
    sent = http.sent.get(timeout=WAIT)
    T.ok(data == sent, "absolute form: the response arrives whole", data)
    T.ok(got.startswith(b"POST /path/x?q=1&r=2 HTTP/1.1\r\n") and got.endswith(b"\r\n\r\nhello"),
         "absolute form: origin form and exactly the body upstream", got)
    hl = got.lower()
    T.ok(b"proxy-" not in hl and b"keep-alive" not in hl and b"x-drop" not in hl
         and b"\r\nconnection: close\r\n" in hl and b"\r\nuser-agent: test\r\n" in hl
         and b"\r\nhost: allowed.test:%d\r\n" % H in hl,
         "absolute form: hop-by-hop and Proxy-* headers dropped, Connection: close", got)
    T.ok(ev and ev["decision"] == "allowed" and "reason" not in ev and ev["host"] == "allowed.test"
         and ev["port"] == H and ev["method"] == "POST" and ev["address"] == "127.0.0.1"
         and ev["bytes_up"] == len(got) and ev["bytes_down"] == len(sent)
         and list(ev) == ["host", "port", "method", "decision", "address", "bytes_up", "bytes_down",
                          "started_at", "duration_ms"]
         and abs(ev["started_at"] / 1e6 - time.time()) < 3600,
         "absolute form: the event line and its byte counts", ev)

    # A GET without a Host header gets one.
    data, ev = exchange(p, b"GET http://allowed.test:%d HTTP/1.0\r\n\r\n" % H)
    got = http.received.get(timeout=WAIT)
    T.ok(got.startswith(b"GET / HTTP/1.1\r\n") and b"\r\nHost: allowed.test:%d\r\n" % H in got
         and data.startswith(b"HTTP/1.1 200 OK"), "absolute form: GET, path '/' and a Host header added", got)
    http.sent.get(timeout=WAIT)

    # CONNECT: 200, then the tunnel both ways, 256 KiB each way.
    c = p.connect()
    c.sendall(b"CONNECT tunnel.test:%d HTTP/1.1\r\nHost: tunnel.test:%d\r\n\r\n" % (E, E))
    est = b""
    while not est.endswith(b"\r\n\r\n"):
        chunk = c.recv(1)
        if not chunk:
            break
        est += chunk
    T.ok(est == b"HTTP/1.1 200 Connection established\r\n\r\n", "CONNECT: 200 Connection established", est)
    payload = os.urandom(256 * 1024)
    threading.Thread(target=lambda: (c.sendall(payload), c.shutdown(socket.SHUT_WR)), daemon=True).start()
    back = read_all(c)
    c.close()
    ev = p.event()
    T.ok(back == payload, "CONNECT: the bytes come back through the tunnel (%d of %d)" % (len(back), len(payload)))
    T.ok(ev and ev["decision"] == "allowed" and ev["method"] == "CONNECT" and ev["host"] == "tunnel.test"
         and ev["port"] == E and ev["bytes_up"] == len(payload) and ev["bytes_down"] == len(payload)
         and ev["address"] == "127.0.0.1" and "reason" not in ev, "CONNECT: the event line and its byte counts", ev)
    T.ok(echo.received.get(timeout=WAIT) == len(payload), "CONNECT: the server got every byte")

    # Several addresses: internal ones skipped, a failed connect followed by the next address; IPv6.
    def tunnel(host, port, srv):
        c = p.connect()
        c.sendall(b"CONNECT %s:%d HTTP/1.1\r\n\r\n" % (host.encode(), port))
        first = c.recv(39)
        c.sendall(b"ping")
        c.shutdown(socket.SHUT_WR)
        rest = read_all(c)
        c.close()
        srv.received.get(timeout=WAIT)
        return first + rest, p.event()
    for host, why in (("mixed.test", "an internal address skipped"), ("next.test", "a refused connect, then the next")):
        data, ev = tunnel(host, E, echo)
        T.ok(data == b"HTTP/1.1 200 Connection established\r\n\r\nping" and ev and ev["decision"] == "allowed"
             and ev["address"] == "127.0.0.1" and ev["bytes_up"] == 4, "several addresses: %s" % why, (data, ev))
    if have_dns:
        data, ev = tunnel("dns.test", E, echo)
        T.ok(data.endswith(b"ping") and ev and ev["address"] == "127.0.0.1", "DNS (c-ares): a name resolved by the "
             "name server connects", (data, ev))
        expect_refusal(p, "DNS (c-ares): a name resolving to an internal address",
                       b"CONNECT dns-internal.test:%d HTTP/1.1\r\n\r\n" % E, 403, "dns-internal.test", E,
                       "internal address", "CONNECT")
    else:
        T.skip("DNS (c-ares)", "no private mount namespace for a resolv.conf of the test's own")
    if echo6:
        data, ev = tunnel("six.test", echo6.port, echo6)
        T.ok(data.endswith(b"ping") and ev and ev["address"] == "::1", "IPv6: CONNECT to ::1", (data, ev))
    else:
        T.skip("IPv6: CONNECT to ::1", "no ::1 here")

    # Refusals.
    expect_refusal(p, "not in the allowlist", b"CONNECT evil.test:443 HTTP/1.1\r\n\r\n", 403, "evil.test", 443,
                   "not in the allowlist", "CONNECT")
    expect_refusal(p, "port not allowed", b"GET http://allowed.test:%d/ HTTP/1.1\r\n\r\n" % (H + 1 if H < 65535 else 1),
                   403, "allowed.test", H + 1 if H < 65535 else 1, "port not allowed", "GET")
    expect_refusal(p, "internal address (127.0.0.2, outside --permit=127.0.0.1/32)",
                   b"GET http://inside.test:%d/ HTTP/1.1\r\n\r\n" % H, 403, "inside.test", H, "internal address", "GET")
    if IN_NETNS:
        expect_refusal(p, "name did not resolve", b"GET http://nx.invalid:%d/ HTTP/1.1\r\n\r\n" % H, 502,
                       "nx.invalid", H, "name did not resolve", "GET")
    else:
        T.skip("name did not resolve", "no private network namespace (unshare -rn), and no DNS query "
               "may leave this test")
    expect_refusal(p, "connect failed (a closed port)", b"CONNECT closed.test:%d HTTP/1.1\r\n\r\n" % closed, 502,
                   "closed.test", closed, "connect failed", "CONNECT")
    expect_refusal(p, "chunked request body", b"POST http://allowed.test:%d/ HTTP/1.1\r\n"
                   b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n" % H, 411, "allowed.test", H, "chunked request body",
                   "POST")
    expect_refusal(p, "smuggling shape (Content-Length and Transfer-Encoding)",
                   b"POST http://allowed.test:%d/ HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n"
                   b"\r\n0\r\n\r\n" % H, 400, "", 0, "bad request: both Content-Length and Transfer-Encoding", "")
    expect_refusal(p, "bare LF", b"GET http://allowed.test:%d/ HTTP/1.1\nHost: allowed.test\n\n" % H, 400, "", 0,
                   "bad request: LF without CR in the request head", "")
    expect_refusal(p, "https in the absolute form", b"GET https://allowed.test:%d/ HTTP/1.1\r\n\r\n" % H, 400, "", 0,
                   "bad request: scheme other than http (https goes through CONNECT)", "")
    expect_refusal(p, "a head over 16 KiB", b"GET http://allowed.test:%d/ HTTP/1.1\r\n" % H
                   + b"".join(b"X-%d: %s\r\n" % (i, b"a" * 1000) for i in range(20)), 400, "", 0,
                   "bad request: request head too large", "")

    # SIGTERM with a tunnel open and a client in the middle of its head: two lines, then exit 0.
    c1 = p.connect()
    c1.sendall(b"CONNECT tunnel.test:%d HTTP/1.1\r\n\r\n" % E)
    T.ok(c1.recv(100).startswith(b"HTTP/1.1 200"), "SIGTERM: a tunnel is open")
    c1.sendall(b"abc")
    T.ok(c1.recv(100) == b"abc", "SIGTERM: the tunnel carries bytes")
    c2 = p.connect()
    c2.sendall(b"GET http://allowed.test:%d/ HTTP/1.1\r\nHost: a" % H)
    if have_dns:
        c3 = p.connect()
        c3.sendall(b"CONNECT silent.test:%d HTTP/1.1\r\n\r\n" % E)
    time.sleep(0.2)             # let the proxy read the heads (no assertion depends on it)
    status = p.stop()
    evs = [p.event(), p.event()] + ([p.event()] if have_dns else [])
    T.ok(os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, "SIGTERM: exit 0", status)
    T.ok(p.event() is None, "SIGTERM: stdout at EOF after the lines")
    if have_dns:
        pending = [e for e in evs if e and e["host"] == "silent.test"]
        T.ok(len(pending) == 1 and pending[0]["reason"] == "name did not resolve",
             "SIGTERM: a query still pending gets its line", evs)
        evs = [e for e in evs if e not in pending]
        c3.close()
    tunnel = [e for e in evs if e and e["method"] == "CONNECT"]
    half = [e for e in evs if e and e["method"] == ""]
    T.ok(len(tunnel) == 1 and tunnel[0]["decision"] == "allowed" and tunnel[0]["bytes_up"] == 3
         and tunnel[0]["bytes_down"] == 3, "SIGTERM: the tunnel's line", evs)
    T.ok(len(half) == 1 and half[0]["decision"] == "denied" and half[0]["reason"].startswith("bad request: "),
         "SIGTERM: the half head's line", evs)
    T.ok(read_all(c1) in (b"", b"<ConnectionResetError>"), "SIGTERM: the tunnel is closed")
    c1.close()
    c2.close()
    log = p.stderr()
    T.ok("execution main" in log and "evil.test:443" in log and "not in the allowlist" in log,
         "stderr: decisions logged with the execution id", log[-2000:])

    # Head timeout: half a head, then nothing (slowloris).
    p = Proxy(common + ["--head-timeout-ms=300", "--connect-timeout-ms=300"], "head")
    expect_refusal(p, "connect timed out (a listener whose queue is full)",
                   b"CONNECT stuck.test:%d HTTP/1.1\r\n\r\n" % S, 504, "stuck.test", S, "connect timed out", "CONNECT")
    c = p.connect()
    c.sendall(b"GET http://allowed.test:%d/ HTTP/1.1\r\nHost: allo" % H)
    data = read_all(c)
    c.close()
    ev = p.event()
    T.ok(data.startswith(b"HTTP/1.1 400 ") and data.endswith(b"sandboxd-proxy: :0: head timeout\n"),
         "head timeout: the client is cut with a 400", data)
    T.ok(ev and ev["decision"] == "denied" and ev["reason"] == "head timeout" and ev["host"] == "",
         "head timeout: the event line", ev)
    T.ok(os.WEXITSTATUS(p.stop()) == 0, "head timeout: the proxy exits 0")

    # Idle timeout: an open tunnel nobody uses.
    p = Proxy(common + ["--idle-timeout-ms=300"], "idle")
    c = p.connect()
    c.sendall(b"CONNECT tunnel.test:%d HTTP/1.1\r\n\r\n" % E)
    first = c.recv(100)
    rest = read_all(c)
    c.close()
    ev = p.event()
    T.ok(first.startswith(b"HTTP/1.1 200") and rest == b"", "idle timeout: the tunnel is closed", (first, rest))
    T.ok(ev and ev["decision"] == "allowed" and ev["reason"] == "idle timeout", "idle timeout: the event line", ev)
    p.stop()

    # Byte cap: a 4 MiB download through a proxy allowed 100000 bytes in all.
    cap = 100000
    p = Proxy(common + ["--max-bytes=%d" % cap], "cap")
    data, ev = exchange(p, b"GET http://big.test:%d/file HTTP/1.1\r\n\r\n" % B)
    T.ok(data.startswith(b"HTTP/1.1 200 OK") and len(data) < BIG, "byte cap: the download is cut (%d bytes)" % len(data))
    T.ok(ev and ev["decision"] == "allowed" and ev["reason"] == "byte cap reached"
         and ev["bytes_up"] + ev["bytes_down"] <= cap and ev["bytes_down"] == len(data),
         "byte cap: the event line, bytes within the cap", ev)
    T.ok(big.received.get(timeout=WAIT) == "cut", "byte cap: the server's connection was closed")
    expect_refusal(p, "byte cap: a later request", b"CONNECT tunnel.test:%d HTTP/1.1\r\n\r\n" % E, 503,
                   "tunnel.test", E, "byte cap reached", "CONNECT")
    p.stop()

    # Connection cap: two clients hold their connections, the third is refused at once.
    p = Proxy(common + ["--max-connections=2", "--head-timeout-ms=60000"], "conncap")
    held = [p.connect(), p.connect()]
    for h in held:
        h.sendall(b"GET http://allowed.test:%d/ HTTP/1.1\r\n" % H)
    time.sleep(0.2)             # the two are accepted first (ordering only, nothing measured)
    data, ev = exchange(p, b"GET http://allowed.test:%d/ HTTP/1.1\r\n\r\n" % H)
    T.ok(data.startswith(b"HTTP/1.1 503 ") and data.endswith(b"sandboxd-proxy: :0: connection cap reached\n"),
         "connection cap: 503 over --max-connections", data)
    T.ok(ev and ev["decision"] == "denied" and ev["reason"] == "connection cap reached",
         "connection cap: the event line", ev)
    for h in held:
        h.close()
    evs = [p.event(), p.event()]
    T.ok(all(e and e["reason"].startswith("bad request: ") for e in evs), "connection cap: the held ones' lines", evs)
    data, ev = exchange(p, b"GET http://allowed.test:%d/ HTTP/1.1\r\n\r\n" % H)
    T.ok(data.startswith(b"HTTP/1.1 200") and ev and ev["decision"] == "allowed",
         "connection cap: served again once they closed", (data, ev))
    http.received.get(timeout=WAIT)
    http.sent.get(timeout=WAIT)
    T.ok(os.WEXITSTATUS(p.stop()) == 0, "connection cap: the proxy exits 0")

    # An ASan/UBSan build (make check-asan) reports on stderr; a plain build never writes these words.
    reports = [q.stderr() for q in PROXIES if "Sanitizer" in q.stderr() or "runtime error" in q.stderr()]
    T.ok(not reports, "no sanitizer report from any proxy (%d run)" % len(PROXIES), "\n".join(reports)[-3000:])
    T.done()


if __name__ == "__main__":
    main()

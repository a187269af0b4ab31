# SPDX-License-Identifier: LGPL-2.1-or-later
"""Helpers for the integration tests: a client for sandboxd's HTTP API on its unix socket, and TAP
output. These run inside tests/harness/sandbox-harness against the real daemon and systemd."""

import http.client
import json
import os
import socket
import subprocess
import sys
import time

SOCKET = os.environ.get("SANDBOXD_SOCKET", "/run/sandboxd/api.sock")
BUILD = os.environ.get("SANDBOXD_BUILD_DIR", "build")


class UnixConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout=600):
        super().__init__("localhost", timeout=timeout)
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.path)


def request(method, path, body=None, headers=None, raw=None, timeout=600):
    """Returns (status, parsed JSON body)."""
    conn = UnixConnection(SOCKET, timeout=timeout)
    h = {"Content-Type": "application/json"}
    h.update(headers or {})
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    conn.request(method, path, body=data, headers=h)
    resp = conn.getresponse()
    text = resp.read()
    conn.close()
    try:
        return resp.status, json.loads(text)
    except ValueError:
        return resp.status, {"_raw": text.decode("utf-8", "replace")}


def run(code, language="python", wait=True, **fields):
    body = {"language": language, "code": code}
    body.update(fields)
    status, res = request("POST", "/v1/executions" + ("?wait=true" if wait else ""), body)
    if wait and status != 200:
        raise AssertionError(f"POST returned {status}: {res}")
    return res


def submit(code, language="python", **fields):
    body = {"language": language, "code": code}
    body.update(fields)
    return request("POST", "/v1/executions", body)


def get(eid, wait=False):
    return request("GET", f"/v1/executions/{eid}" + ("?wait=true" if wait else ""))


def health():
    return request("GET", "/v1/health")[1]


def service_dropin(name, text):
    """Write (text) or remove (None) the drop-in sandboxd.service.d/NAME.conf where the systemd in
    use reads it (the host's /run/systemd/system, or the harness's unit directory), then
    daemon-reload. Takes effect at the next (re)start of sandboxd.service."""
    conf = os.environ.get("SANDBOXD_CONFIG_DIR", "")
    if os.path.exists("/run/systemd/system/sandboxd.service"):
        unitdir = "/run/systemd/system"
    else:
        unitdir = os.path.join(os.path.dirname(conf), "units")
    path = os.path.join(unitdir, "sandboxd.service.d", name + ".conf")
    if text is None:
        if os.path.exists(path):
            os.unlink(path)
    else:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
    subprocess.run(["systemctl", "daemon-reload"], check=True)


def daemon_pid():
    return int(subprocess.check_output(["systemctl", "show", "-P", "MainPID", "sandboxd.service"]).strip())


def daemon_rss_kib():
    with open(f"/proc/{daemon_pid()}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def sandboxd_units():
    out = subprocess.run(["systemctl", "list-units", "--all", "--plain", "--no-legend", "sandboxd-*",
                          "run-sandboxd-*"], capture_output=True, text=True).stdout
    return [l.split()[0] for l in out.splitlines() if l.strip()]


class Tap:
    def __init__(self):
        self.n = 0
        self.failed = 0

    def ok(self, cond, name, detail=None):
        self.n += 1
        if cond:
            print(f"ok {self.n} - {name}", flush=True)
        else:
            self.failed += 1
            print(f"not ok {self.n} - {name}", flush=True)
            if detail is not None:
                for line in str(detail)[:4000].splitlines():
                    print(f"# {line}", flush=True)
        return cond

    def eq(self, got, want, name, ctx=None):
        return self.ok(got == want, name, f"got {got!r}, want {want!r}" + (f"\n{ctx}" if ctx else ""))

    def verdict(self, res, status, error_type, name):
        return self.ok(res.get("status") == status and res.get("error_type") == error_type,
                       f"{name}: {status}/{error_type}",
                       json.dumps({k: res.get(k) for k in ("status", "error_type", "exit_code", "signal", "reason",
                                                           "stdout", "stderr", "duration_ms")}, indent=1)[:3000])

    def done(self):
        print(f"1..{self.n}")
        print(f"# {self.n - self.failed} passed, {self.failed} failed", flush=True)
        sys.exit(1 if self.failed else 0)


def wait_until(pred, timeout=10.0, step=0.05):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(step)
    return pred()

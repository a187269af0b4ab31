# SPDX-License-Identifier: LGPL-2.1-or-later
"""Several sandboxd nodes on one machine, sharing one PostgreSQL (issue 22): each node is a daemon in
its own test harness (tests/harness/sandbox-harness: a private systemd of its own), with the store in
the server tests/pg/pg-scratch started around the test (SANDBOXD_TEST_PG), a name of its own
([Cluster] NodeName=) and the API on a loopback TCP port with a key, where the test, on the host,
reaches every node. Nodes are stopped as an administrator would (SIGTERM to the harness: the daemon
stops, the private systemd ends) or killed (SIGKILL to the harness's process group: the namespace's
PID 1 dies with it, and every unit of the node with it, as a machine that loses power)."""

import hashlib
import http.client
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
HARNESS = os.path.join(TOP, "tests", "harness", "sandbox-harness")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Node:
    def __init__(self, cluster, name, extra_conf=""):
        self.cluster = cluster
        self.name = name
        self.port = free_port()
        self.dir = os.path.join(cluster.dir, name)
        self.conf = os.path.join(self.dir, "conf")
        self.proc = None
        self.log = None
        os.makedirs(os.path.join(self.conf, "sandboxd.conf.d"))
        for f in os.listdir(os.path.join(TOP, "tests", "harness", "conf")):
            src = os.path.join(TOP, "tests", "harness", "conf", f)
            if os.path.isfile(src):
                shutil.copy(src, self.conf)
        keys = os.path.join(self.dir, "api-keys")
        with open(keys, "w") as f:
            f.write(f"cluster-admin sha256:{hashlib.sha256(cluster.key.encode()).hexdigest()} admin\n")
            # A second caller, not an administrator: owner "key:cluster-user" (fairness between owners).
            f.write(f"cluster-user sha256:{hashlib.sha256(cluster.user_key.encode()).hexdigest()}\n")
        os.chmod(keys, 0o600)
        with open(os.path.join(self.conf, "sandboxd.conf.d", "50-cluster.conf"), "w") as f:
            f.write(f"[Daemon]\nListen=127.0.0.1:{self.port}\nAPIKeysFile={keys}\n"
                    f"[Cluster]\nNodeName={name}\nNodeHeartbeatSec={cluster.heartbeat}\n"
                    f"NodeLeaseSec={cluster.lease}\n{extra_conf}")

    def add_conf(self, name, text):
        """A drop-in of the node's own (None removes it); it takes effect at the next start."""
        path = os.path.join(self.conf, "sandboxd.conf.d", name)
        if text is None:
            if os.path.exists(path):
                os.unlink(path)
            return
        with open(path, "w") as f:
            f.write(text)

    def start(self, timeout=120):
        env = dict(os.environ)
        env.update({"SANDBOX_HARNESS_CONF": self.conf, "SANDBOX_HARNESS_STORE": self.cluster.conninfo,
                    "SANDBOX_HARNESS_POOL_SIZE": str(self.cluster.pool_size),
                    "SANDBOX_HARNESS_READ_WRITE_PATHS": " ".join(self.cluster.read_write_paths)})
        self.log = open(os.path.join(self.cluster.dir, f"{self.name}.log"), "ab")
        # A session of its own: SIGKILL reaches the harness and whatever it runs on the host side.
        self.proc = subprocess.Popen([HARNESS, "--build", self.cluster.build, "--", "sleep", "infinity"],
                                     env=env, stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log,
                                     start_new_session=True)
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name}: the harness exited with {self.proc.returncode}: {self.tail()}")
            try:
                if self.request("GET", "/v1/health", timeout=2)[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"{self.name}: no answer on port {self.port} after {timeout} s: {self.tail()}")

    def tail(self, n=3000):
        try:
            with open(os.path.join(self.cluster.dir, f"{self.name}.log"), "rb") as f:
                return f.read()[-n:].decode(errors="replace")
        except OSError:
            return ""

    def request(self, method, path, body=None, timeout=60, user=False):
        """As the administrator's key, or (user=True) as the second caller's."""
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            h = {"Authorization": f"Bearer {self.cluster.user_key if user else self.cluster.key}"}
            data = None
            if body is not None:
                data = json.dumps(body).encode()
                h["Content-Type"] = "application/json"
            c.request(method, path, body=data, headers=h)
            r = c.getresponse()
            raw = r.read()
            try:
                return r.status, json.loads(raw) if raw else None
            except ValueError:
                return r.status, raw.decode(errors="replace")
        finally:
            c.close()

    def stop(self, sig=signal.SIGTERM, timeout=90):
        """SIGTERM: the harness tears its systemd down in order. SIGKILL: the node dies at once."""
        if not self.proc or self.proc.poll() is not None:
            return
        try:
            if sig == signal.SIGKILL:
                os.killpg(self.proc.pid, signal.SIGKILL)
            else:
                self.proc.send_signal(sig)
        except ProcessLookupError:
            pass
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(30)
        self.log.close()


class Cluster:
    def __init__(self, n, build, heartbeat=1, lease=5, pool_size=0, extra_conf="", conninfo=None, prefix="node"):
        # conninfo: the nodes' Store=; None (the default) is tests/pg/pg-scratch's server
        # (SANDBOXD_TEST_PG); "" is each node's own SQLite file (bench/cluster.py's single-node leg:
        # the registry then holds that node alone).
        self.conninfo = os.environ.get("SANDBOXD_TEST_PG") if conninfo is None else conninfo
        if self.conninfo is None or (conninfo is None and not self.conninfo):
            raise RuntimeError("no SANDBOXD_TEST_PG: run under tests/pg/pg-scratch")
        self.build = build
        self.heartbeat, self.lease, self.pool_size = heartbeat, lease, pool_size
        self.key = secrets.token_urlsafe(32)
        self.user_key = secrets.token_urlsafe(32)
        # Below /var/lib, not /tmp (which each harness hides); only root may write its directories
        # (the API key file's checks).
        self.dir = tempfile.mkdtemp(prefix="sandboxd-cluster.", dir="/var/lib")
        # Directories the nodes' daemons may write besides their own (the unit's ProtectSystem=strict):
        # an ArtifactsDirectory= they share, say; extra_conf's function may add to it.
        self.read_write_paths = []
        # extra_conf: text appended to every node's drop-in (after its [Cluster] section: a section
        # may appear again), or a function of the cluster that returns it, for what lives in the
        # cluster's directory (a shared ArtifactsDirectory=, a shared key file).
        if callable(extra_conf):
            try:
                extra_conf = extra_conf(self)
            except BaseException:
                shutil.rmtree(self.dir, ignore_errors=True)
                raise
        self.nodes = [Node(self, f"{prefix}{i + 1}", extra_conf) for i in range(n)]

    def start(self):
        # One after the other: the first runs the schema's migrations, and two private systemds
        # booting at once on two CPUs only slow each other down.
        for node in self.nodes:
            node.start()

    def stop(self):
        for node in self.nodes:
            try:
                node.stop()
            except Exception as e:  # noqa: BLE001 - tear the others down regardless
                print(f"# {node.name}: stop failed: {e}", file=sys.stderr)
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc):
        self.stop()

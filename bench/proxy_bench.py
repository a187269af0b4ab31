#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""sandboxd-proxy's throughput: a 100 MiB download from a loopback server (sendfile), by curl directly
and through the proxy (absolute form and CONNECT), best of REPEAT. Timings, not pass/fail: run by
hand, `bench/proxy_bench.py build/sandboxd-proxy/sandboxd-proxy [MIB] [REPEAT]`. The target of issue 16:
through the proxy at least 0.8 of the direct rate."""
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

proxy = os.path.abspath(sys.argv[1])
mib = int(sys.argv[2]) if len(sys.argv) > 2 else 100
repeat = int(sys.argv[3]) if len(sys.argv) > 3 else 5

tmp = tempfile.mkdtemp(prefix="proxy-bench.", dir=os.environ.get("TMPDIR", "/var/tmp"))
path = os.path.join(tmp, "blob")
with open(path, "wb") as f:
    f.write(os.urandom(1 << 20) * mib)
size = os.path.getsize(path)


def serve(c):
    try:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = c.recv(65536)
            if not chunk:
                return
            data += chunk
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % size)
        with open(path, "rb") as f:
            c.sendfile(f)
    except OSError:
        pass
    finally:
        c.close()


srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", 0))
srv.listen(16)
port = srv.getsockname()[1]
threading.Thread(target=lambda: [threading.Thread(target=serve, args=(srv.accept()[0],), daemon=True).start()
                                 for _ in iter(int, 1)], daemon=True).start()

ls = socket.socket()
ls.bind(("127.0.0.1", 0))
ls.listen(16)
pport = ls.getsockname()[1]
pid = os.fork()
if pid == 0:
    fd = os.dup(ls.fileno())
    os.dup2(fd, 3)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    os.execve(proxy, [proxy, "--execution-id=bench", "--allow=blob.test:%d" % port,
                      "--host=blob.test=127.0.0.1", "--permit=127.0.0.1/32"],
              dict(os.environ, LISTEN_FDS="1", LISTEN_PID=str(os.getpid())))
ls.close()


def curl(*args):
    best = None
    for _ in range(repeat):
        t = time.monotonic()
        r = subprocess.run(["curl", "-sS", "-o", "/dev/null", "-w", "%{size_download}", *args],
                           capture_output=True, text=True, env=dict(os.environ, no_proxy=""))
        d = time.monotonic() - t
        assert r.returncode == 0 and int(r.stdout) == size, (r.returncode, r.stdout, r.stderr)
        best = d if best is None else min(best, d)
    return size / best / (1 << 20)


direct = curl("--noproxy", "*", "http://127.0.0.1:%d/blob" % port)
absolute = curl("-x", "http://127.0.0.1:%d" % pport, "http://blob.test:%d/blob" % port)
tunnel = curl("-p", "-x", "http://127.0.0.1:%d" % pport, "http://blob.test:%d/blob" % port)
with open("/proc/%d/stat" % pid) as f:
    fields = f.read().rsplit(")", 1)[1].split()
cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
os.kill(pid, signal.SIGTERM)
os.waitpid(pid, 0)
os.unlink(path)
os.rmdir(tmp)
print("direct:        %8.0f MiB/s" % direct)
print("absolute form: %8.0f MiB/s  (%.2f of direct)" % (absolute, absolute / direct))
print("CONNECT:       %8.0f MiB/s  (%.2f of direct)" % (tunnel, tunnel / direct))
print("proxy CPU:     %8.2f s per GiB relayed (user+system)" % (cpu / (2 * repeat * size / (1 << 30))))

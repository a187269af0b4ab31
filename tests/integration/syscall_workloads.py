# SPDX-License-Identifier: LGPL-2.1-or-later
"""Typical programs of each language, as an agent would write them, that together use what the
runtimes need from the kernel: the workloads behind the seccomp allow-list (sandboxd/unit/seccomp-policy.c).
Each prints "ok <name>" as its last line. Run in real units by tests/integration/test-syscalls.py
and, under strace, by tests/unit/sandbox-exec-driver.py (case workloads-no-enosys), which checks
that no system call of theirs meets the filter's ENOSYS. Paths are relative or below /tmp and
the workspace, so they also run outside a unit."""

WORKLOADS = {}


def workload(name, language, code):
    WORKLOADS[name] = (language, code)


workload("python-numpy", "python", r'''
import numpy as np
a = np.random.default_rng(0).random((300, 300))
b = a @ a.T
inv = np.linalg.inv(b + np.eye(300))
assert abs(float(np.trace(b @ inv)) - 300) < 300, np.trace(b @ inv)
print(round(float(np.trace(b)), 3), np.fft.fft(np.ones(8)).real[0])
print("ok python-numpy")
''')

workload("python-multiprocessing", "python", r'''
import multiprocessing as mp
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import shared_memory

def sq(x):
    return x * x

if __name__ == "__main__":
    for method in ("fork", "spawn", "forkserver"):
        with mp.get_context(method).Pool(2) as p:
            assert sum(p.map(sq, range(100))) == 328350, method
    q = mp.Queue()
    pr = mp.Process(target=q.put, args=(42,))
    pr.start()
    assert q.get(timeout=30) == 42
    pr.join()
    v, lock = mp.Value("i", 0), mp.Lock()
    with lock:
        v.value += 1
    s = shared_memory.SharedMemory(create=True, size=1024)
    s.buf[0] = 7
    s.close()
    s.unlink()
    with ProcessPoolExecutor(2) as ex:
        assert list(ex.map(sq, range(5))) == [0, 1, 4, 9, 16]
    print("ok python-multiprocessing")
''')

workload("python-threads-asyncio", "python", r'''
import asyncio, os, signal, tempfile, threading
from concurrent.futures import ThreadPoolExecutor

def work(n):
    return sum(range(n))

ts = [threading.Thread(target=work, args=(100000,)) for _ in range(4)]
[t.start() for t in ts]
[t.join() for t in ts]
ev = threading.Event()
threading.Timer(0.01, ev.set).start()
assert ev.wait(10)
with ThreadPoolExecutor(4) as ex:
    assert list(ex.map(work, [10, 20])) == [45, 190]

async def main():
    proc = await asyncio.create_subprocess_exec("echo", "async", stdout=asyncio.subprocess.PIPE)
    out, _ = await proc.communicate()
    assert out == b"async\n"
    assert await asyncio.gather(*(asyncio.to_thread(work, 10) for _ in range(3))) == [45] * 3
    path = os.path.join(tempfile.mkdtemp(), "s.sock")

    async def handle(r, w):
        w.write(await r.readline())
        await w.drain()
        w.close()

    srv = await asyncio.start_unix_server(handle, path=path)
    r, w = await asyncio.open_unix_connection(path)
    w.write(b"ping\n")
    assert await r.readline() == b"ping\n"
    w.close()
    srv.close()
    await srv.wait_closed()
    got = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGUSR1, got.set)
    os.kill(os.getpid(), signal.SIGUSR1)
    await asyncio.wait_for(got.wait(), 10)
    await asyncio.sleep(0.01)

asyncio.run(main())
print("ok python-threads-asyncio")
''')

workload("python-subprocess", "python", r'''
import subprocess, sys
assert subprocess.run(["echo", "hi"], capture_output=True, text=True).stdout == "hi\n"
out = subprocess.run("seq 1 100 | sort -rn | head -1", shell=True, capture_output=True, text=True).stdout
assert out == "100\n", out
assert subprocess.check_output([sys.executable, "-c", "print(6 * 7)"]) == b"42\n"
p = subprocess.Popen(["cat"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
assert p.communicate(b"x" * 100000)[0] == b"x" * 100000
try:
    subprocess.run(["sleep", "5"], timeout=0.2)
    raise AssertionError("no timeout")
except subprocess.TimeoutExpired:
    pass
assert subprocess.run(["false"]).returncode == 1
print("ok python-subprocess")
''')

workload("python-files", "python", r'''
import fcntl, hashlib, mmap, os, resource, select, shutil, signal, socket, sqlite3, tempfile, time, uuid
d = tempfile.mkdtemp()
db = sqlite3.connect(os.path.join(d, "t.db"))
db.execute("pragma journal_mode=wal")
db.execute("create table t(x)")
db.executemany("insert into t values (?)", [(i,) for i in range(1000)])
db.commit()
assert db.execute("select sum(x) from t").fetchone() == (499500,)
db.close()
with tempfile.NamedTemporaryFile(dir=d) as f:
    f.write(b"x")
    f.flush()
    os.fsync(f.fileno())
with tempfile.TemporaryFile() as f:
    f.write(b"y" * 100000)
    f.flush()
    m = mmap.mmap(f.fileno(), 0)
    assert m[:1] == b"y" and len(m) == 100000
    m.close()
shutil.copy2(os.path.join(d, "t.db"), os.path.join(d, "u.db"))
shutil.copytree(d, d + ".2")
shutil.rmtree(d + ".2")
with open(os.path.join(d, "lock"), "w") as f:
    fcntl.flock(f, fcntl.LOCK_EX)
    fcntl.lockf(f, fcntl.LOCK_UN)
fd = os.memfd_create("m")
os.write(fd, b"x")
os.close(fd)
os.mkfifo(os.path.join(d, "fifo"))
os.symlink("t.db", os.path.join(d, "link"))
os.link(os.path.join(d, "t.db"), os.path.join(d, "hard"))
os.rename(os.path.join(d, "hard"), os.path.join(d, "hard2"))
os.utime(os.path.join(d, "t.db"), (1, 1))
os.chmod(os.path.join(d, "t.db"), 0o600)
assert os.path.getsize(os.path.join(d, "u.db")) > 0 and os.readlink(os.path.join(d, "link")) == "t.db"
shutil.rmtree(d)
assert os.cpu_count() >= 1 and len(os.sched_getaffinity(0)) >= 1
resource.setrlimit(resource.RLIMIT_CORE, (0, resource.getrlimit(resource.RLIMIT_CORE)[1]))
assert shutil.disk_usage("/tmp").total > 0
a, b = socket.socketpair()
a.send(b"x")
assert b.recv(1) == b"x"
r, w = os.pipe()
os.write(w, b"z")
assert select.select([r], [], [], 1)[0] == [r]
ep = select.epoll()
ep.register(r, select.EPOLLIN)
assert ep.poll(1)
ep.close()
signal.signal(signal.SIGALRM, lambda *a: None)
signal.setitimer(signal.ITIMER_REAL, 0.01)
time.sleep(0.05)
assert time.monotonic() > 0 and time.process_time() >= 0 and time.thread_time() >= 0
print(hashlib.sha256(b"x").hexdigest()[:8], uuid.uuid4().version, len(os.urandom(8)), os.times().elapsed > 0)
import json, ssl, zlib, gzip, platform, locale
print(ssl.OPENSSL_VERSION.split()[0], len(gzip.compress(b"x" * 1000)), platform.system())
print("ok python-files")
''')

workload("node-workers", "node", r'''
const { Worker } = require('worker_threads');
const sab = new SharedArrayBuffer(4);
const code = `const { parentPort, workerData } = require('worker_threads');
Atomics.add(new Int32Array(workerData), 0, 1); parentPort.postMessage(21 * 2);`;
(async () => {
  const results = await Promise.all([1, 2, 3].map(() => new Promise((resolve, reject) => {
    const w = new Worker(code, { eval: true, workerData: sab });
    w.on('message', resolve); w.on('error', reject);
  })));
  if (results.join() !== '42,42,42' || new Int32Array(sab)[0] !== 3) throw new Error('workers');
  const big = []; for (let i = 0; i < 300000; i++) big.push({ i, s: 'x' + i });
  const wasm = new WebAssembly.Module(new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0]));
  if (!(wasm instanceof WebAssembly.Module)) throw new Error('wasm');
  await new Promise(r => setTimeout(r, 10));
  console.log('ok node-workers');
})();
''')

workload("node-child-process", "node", r'''
const cp = require('child_process');
if (cp.execSync('echo hi').toString() !== 'hi\n') throw new Error('execSync');
if (cp.execSync('seq 1 100 | sort -rn | head -1', { shell: '/bin/bash' }).toString() !== '100\n') throw new Error('pipe');
if (cp.spawnSync('cat', { input: 'x' }).stdout.toString() !== 'x') throw new Error('spawnSync');
cp.exec('echo async', (err, out) => {
  if (err || out !== 'async\n') throw new Error('exec');
  const c = cp.spawn(process.execPath, ['-e', 'console.log(6 * 7)']);
  let got = '';
  c.stdout.on('data', d => { got += d; });
  c.on('close', code => {
    if (code !== 0 || got !== '42\n') throw new Error('spawn node');
    console.log('ok node-child-process');
  });
});
''')

workload("node-fs-net", "node", r'''
const fs = require('fs'), os = require('os'), path = require('path'), net = require('net');
const crypto = require('crypto'), zlib = require('zlib');
(async () => {
  const d = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'n-'));
  const a = path.join(d, 'a');
  await fs.promises.writeFile(a, 'x'.repeat(100000));
  if ((await fs.promises.readFile(a)).length !== 100000) throw new Error('read');
  if (!(await fs.promises.stat(d)).isDirectory()) throw new Error('stat');
  await fs.promises.copyFile(a, path.join(d, 'b'));
  await fs.promises.rename(path.join(d, 'b'), path.join(d, 'c'));
  const fh = await fs.promises.open(path.join(d, 'c'), 'r+');
  await fh.sync(); await fh.datasync(); await fh.truncate(5); await fh.close();
  await fs.promises.symlink('a', path.join(d, 'l'));
  if (await fs.promises.readlink(path.join(d, 'l')) !== 'a') throw new Error('readlink');
  await fs.promises.chmod(a, 0o600); await fs.promises.utimes(a, 1, 1);
  if ((await fs.promises.readdir(d)).sort().join() !== 'a,c,l') throw new Error('readdir');
  const seen = new Promise(r => { const w = fs.watch(d, () => { w.close(); r(); }); });
  await fs.promises.writeFile(path.join(d, 'w'), 'x');
  await seen;
  await fs.promises.rm(d, { recursive: true });
  // os.cpus() is [] in a unit (ProcSubset=pid hides /proc/stat); the affinity mask is there.
  if (!(os.availableParallelism() >= 1 && os.totalmem() > 0 && os.uptime() >= 0)) throw new Error('os');
  crypto.createHash('sha256').update('x').digest('hex');
  if (crypto.randomBytes(8).length !== 8) throw new Error('random');
  await new Promise((r, j) => crypto.pbkdf2('a', 'b', 1000, 32, 'sha256', e => e ? j(e) : r()));
  await new Promise((r, j) => zlib.gzip('abc', e => e ? j(e) : r()));
  const sock = path.join(os.tmpdir(), `n-${process.pid}.sock`);
  const srv = net.createServer(s => s.end('pong'));
  await new Promise(r => srv.listen(sock, r));
  const got = await new Promise((r, j) => {
    let b = ''; const s = net.connect(sock); s.on('data', x => { b += x; }); s.on('close', () => r(b)); s.on('error', j);
  });
  srv.close();
  if (got !== 'pong') throw new Error('net');
  if (!(process.resourceUsage().maxRSS > 0 && process.memoryUsage().rss > 0)) throw new Error('usage');
  console.log('ok node-fs-net');
})();
''')

workload("bash-coreutils", "bash", r'''
set -euo pipefail
[ "$(seq 1 10000 | sort -n -r | head -1)" = 10000 ]
[ "$(printf 'b\na\nc\na\n' | sort | uniq -c | awk '{print $2}' | sed 's/a/A/' | grep -v c | tr '\n' ' ')" = "A b " ]
d=$(mktemp -d)
echo hello > "$d/f"
cp -a "$d/f" "$d/g"; mv "$d/g" "$d/h"; ln -s f "$d/l"; ln "$d/f" "$d/hard"; chmod 600 "$d/f"
touch -d '2020-01-01' "$d/f"; stat -c %s "$d/f" >/dev/null; ls -la "$d" >/dev/null; du -s "$d" >/dev/null
df /tmp >/dev/null; [ "$(find "$d" -type f | wc -l)" = 3 ]
tar -czf "$d.tgz" -C "$d" .; [ "$(tar -tzf "$d.tgz" | wc -l)" -ge 4 ]
[ "$(gzip -c "$d/f" | gunzip -c)" = hello ]
sha256sum "$d/f" >/dev/null; md5sum "$d/f" >/dev/null; base64 "$d/f" >/dev/null; od -c "$d/f" >/dev/null
xargs echo < "$d/f" >/dev/null; cat "$d/f" | tee "$d/t" >/dev/null; cmp "$d/f" "$d/t"
mkfifo "$d/p"; (echo fifo > "$d/p" &); [ "$(cat "$d/p")" = fifo ]
split -l 1 "$d/f" "$d/sp"; join <(echo "1 a") <(echo "1 b") >/dev/null; paste <(echo a) <(echo b) >/dev/null
diff "$d/f" "$d/hard"
[ "$(for i in 1 2 3; do echo $((i * i)); done | awk '{s += $1} END {print s}')" = 14 ]
coproc cat; echo co >&"${COPROC[1]}"; read -r x <&"${COPROC[0]}"; [ "$x" = co ]; kill "$COPROC_PID"
timeout 5 sleep 0.01; nice -n 5 true; shuf -n 1 -i 1-5 >/dev/null; truncate -s 100 "$d/f"
dd if=/dev/zero of="$d/z" bs=1k count=10 2>/dev/null; [ "$(wc -c < "$d/z")" = 10240 ]
date -u +%Y >/dev/null; id -u >/dev/null; uname -s >/dev/null; nproc >/dev/null; sleep 0.01
rm -rf "$d" "$d.tgz"
echo "ok bash-coreutils"
''')

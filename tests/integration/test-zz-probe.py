#!/usr/bin/env python3
# Throwaway probe (never committed): the strong tier's process tree in this machine's kernel.
import glob, os, sys, time, subprocess
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lib import *  # noqa
FORK = "import os, time\nn = 0\nwhile True:\n    try:\n        pid = os.fork()\n    except OSError as e:\n        print('stopped', n, e.errno)\n        break\n    if pid == 0:\n        time.sleep(60)\n        os._exit(0)\n    n += 1\ntime.sleep(30)\n"
subprocess.run(["sh", "-c", "mkdir -p /etc/sandboxd/sandboxd.conf.d; printf '[Isolation]\\nStrong=auto\\n' > /etc/sandboxd/sandboxd.conf.d/zz.conf"])
st, r = request("POST", "/v1/executions", {"language": "python", "code": FORK, "isolation": "strong", "limits": {"tasks": 12, "timeout_ms": 120000}})
print("# post", st, r)
eid = r.get("execution_id")
time.sleep(40)
procs = []
for f in glob.glob("/sys/fs/cgroup/**/sandboxd-exec*/cgroup.procs", recursive=True):
    print("#", f)
    procs = open(f).read().split()
for p in procs:
    try:
        st = open(f"/proc/{p}/stat").read()
        comm = st[st.index("(")+1:st.rindex(")")]
        fl = st.rsplit(")", 1)[1].split()
        cmd = open(f"/proc/{p}/cmdline", "rb").read()[:30]
        ids = [l for l in open(f"/proc/{p}/status").read().splitlines() if l.startswith(("Uid", "Gid", "Threads"))]
        print("#", p, "ppid", fl[1], comm, cmd, ids)
    except OSError as e:
        print("#", p, e)
    if b"sandbox-exec" in open(f"/proc/{p}/cmdline", "rb").read():
        for l in open(f"/proc/{p}/mountinfo").read().splitlines():
            if " /proc " in l or "proc" in l.split(" - ")[-1][:5]:
                print("# mount", l)
        print("#", [l for l in open(f"/proc/{p}/status").read().splitlines() if l.startswith(("Uid", "Gid", "Cap"))])
print("# final", get(eid, wait=True)[1])
print("1..1\nok 1 - probe")

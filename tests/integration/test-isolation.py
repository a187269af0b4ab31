# SPDX-License-Identifier: LGPL-2.1-or-later
# Attacks a sandboxed program might try, run for real: every one must fail.
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from lib import *  # noqa: E402,F401,F403

t = Tap()

PROBE = r'''
import ctypes, errno, json, os, socket
libc = ctypes.CDLL(None, use_errno=True)
out = {}
def tryopen(p):
    try:
        with open(p, 'rb') as f:
            return 'READ:' + repr(f.read(64))
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
for p in ['/root/.bashrc', '/etc/shadow', '/proc/1/environ', '/proc/1/cmdline', '/etc/sandboxd/sandboxd.conf',
          '/var/lib/sandboxd/root', '/home', '/srv', '/run/sandboxd/api.sock', '/run/dbus/system_bus_socket',
          '/run/systemd/private', '/run/systemd/journal/socket', '/dev/log', '/dev/kmsg', '/dev/sda', '/dev/vda',
          '/proc/kcore', '/sys/kernel/notes', '/proc/sysrq-trigger', '/proc/meminfo']:
    out[p] = tryopen(p)
out['ls /'] = sorted(os.listdir('/'))
out['ls /run'] = sorted(os.listdir('/run'))
out['ls /sys'] = sorted(os.listdir('/sys'))
out['ls /sys/fs/cgroup'] = sorted(os.listdir('/sys/fs/cgroup')) if os.path.isdir('/sys/fs/cgroup') else None
out['ls /etc'] = sorted(os.listdir('/etc'))
out['pids'] = sorted(int(x) for x in os.listdir('/proc') if x.isdigit())
out['uid'] = os.getuid()
out['pid'] = os.getpid()
out['release'] = os.uname().release
out['PR_GET_NO_NEW_PRIVS'] = libc.prctl(39, 0, 0, 0, 0)
try:
    out['ifaces'] = sorted(n for _, n in socket.if_nameindex())
except OSError as e:
    out['ifaces'] = errno.errorcode.get(e.errno, str(e.errno))
def inet_connect(addr):
    try:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM); s.settimeout(3); s.connect(addr); s.close(); return 'CONNECTED'
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e)) if e.errno else type(e).__name__
out['connect 1.1.1.1:53'] = inet_connect(('1.1.1.1', 53))
st = open('/proc/self/status').read()
out['caps'] = [l for l in st.splitlines() if l.startswith(('CapEff', 'CapPrm', 'CapBnd', 'CapAmb', 'NoNewPrivs', 'Seccomp'))]
def sock(fam, typ=socket.SOCK_STREAM):
    try:
        s = socket.socket(fam, typ); s.close(); return 'ok'
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
out['AF_INET'] = sock(socket.AF_INET)
out['AF_INET6'] = sock(socket.AF_INET6)
out['AF_NETLINK'] = sock(socket.AF_NETLINK, socket.SOCK_RAW)
out['AF_UNIX'] = sock(socket.AF_UNIX)
def unixconnect(p, typ=socket.SOCK_STREAM):
    try:
        s = socket.socket(socket.AF_UNIX, typ); s.connect(p); s.close(); return 'CONNECTED'
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
out['connect dbus'] = unixconnect('/run/dbus/system_bus_socket')
out['connect journal'] = unixconnect('/run/systemd/journal/socket', socket.SOCK_DGRAM)
out['connect devlog'] = unixconnect('/dev/log', socket.SOCK_DGRAM)
out['connect abstract dbus'] = unixconnect('\0/org/freedesktop/systemd1/private')
def sc(nr, *a):
    r = libc.syscall(nr, *[ctypes.c_long(x) for x in a])
    return 'ok' if r >= 0 else errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno()))
out['keyctl'] = sc(250, 0, 0, 0, 0)
out['io_uring_setup'] = sc(425, 1, 0)
out['unshare(CLONE_NEWUSER)'] = sc(272, 0x10000000)
out['unshare(CLONE_NEWNET)'] = sc(272, 0x40000000)
out['personality(PER_LINUX32)'] = sc(135, 8)
out['bpf'] = sc(321, 0, 0, 0)
out['perf_event_open'] = sc(298, 0, 0, -1, -1, 0)
out['userfaultfd'] = sc(323, 0)
out['ptrace(PTRACE_TRACEME)'] = sc(101, 0, 0, 0, 0)
out['mount'] = sc(165, 0, 0, 0, 0, 0)
out['setuid(0)'] = sc(105, 0)
out['chmod setuid'] = 'n/a'
try:
    open('/workspace/s', 'w').close(); os.chmod('/workspace/s', 0o4755)
    out['chmod setuid'] = oct(os.stat('/workspace/s').st_mode)
except OSError as e:
    out['chmod setuid'] = errno.errorcode.get(e.errno)
def writable(p):
    try:
        with open(os.path.join(p, '.w'), 'w') as f: f.write('x')
        os.unlink(os.path.join(p, '.w')); return 'WRITABLE'
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
for p in ['/', '/usr', '/etc', '/var', '/run', '/workspace', '/tmp', '/var/tmp', '/dev/shm']:
    out['write ' + p] = writable(p)
print(json.dumps(out))
'''

MEMORY_MB = 384
r = run(PROBE, limits={"memory_mb": MEMORY_MB})
t.verdict(r, "success", None, "probe ran")
try:
    o = json.loads(r["stdout"])
except ValueError:
    print("# " + r["stdout"][:2000] + r["stderr"][:2000])
    t.done()
# The strong tier (docs/isolation.md): the program runs under gVisor, whose kernel answers its system calls
# and shows it a view of its own. Where that view differs from the standard tier's, the checks below assert
# what confines the program there instead, each saying why.
STRONG = (r.get("isolation") or {}).get("tier") == "strong"
print(f"# tier: {(r.get('isolation') or {}).get('tier')}")
if STRONG:
    t.ok(o["release"] != os.uname().release, f"strong tier: the kernel the program sees is gVisor's ({o['release']}), "
         f"not the host's ({os.uname().release})", o["release"])

for p in ['/root/.bashrc', '/etc/shadow', '/proc/1/environ', '/proc/1/cmdline', '/etc/sandboxd/sandboxd.conf',
          '/var/lib/sandboxd/root', '/home', '/srv', '/run/sandboxd/api.sock', '/run/dbus/system_bus_socket',
          '/run/systemd/private', '/run/systemd/journal/socket', '/dev/log', '/dev/kmsg', '/dev/sda', '/dev/vda',
          '/proc/kcore', '/sys/kernel/notes', '/proc/sysrq-trigger', '/proc/meminfo']:
    if STRONG and p in ('/proc/1/environ', '/proc/1/cmdline'):
        # gVisor gives the program a pid namespace of its own, where it is pid 1: /proc/1 is itself.
        t.ok(o["pid"] == 1 and o[p].startswith("READ:"), f"strong tier: {p} is the program's own (it is pid 1)",
             (o["pid"], o[p]))
    elif STRONG and p == '/proc/meminfo':
        # gVisor's own /proc/meminfo: its total is the run's memory limit, never the host's (strong.c).
        total = o[p][5:].split("\\n")[0].split()
        t.ok(total[:1] == ["b'MemTotal:"] and total[1:] == [str(MEMORY_MB * 1024), "kB"],
             f"strong tier: /proc/meminfo's MemTotal is the run's memory_mb ({MEMORY_MB} MiB), not the host's", o[p])
    else:
        t.ok(not o[p].startswith("READ:"), f"cannot read {p} ({o[p]})", o[p])
t.ok(set(o["ls /"]) <= {"bin", "dev", "etc", "lib", "lib64", "proc", "root", "run", "sbin", "sys", "tmp", "usr", "var",
                        "workspace"}, "/ holds only the skeleton", o["ls /"])
# Nothing but the empty mount point ProtectControlGroups= remounts read-only.
t.ok(o["ls /sys"] in ([], ["fs"]) and o["ls /sys/fs/cgroup"] in (None, []), "/sys is empty",
     (o["ls /sys"], o["ls /sys/fs/cgroup"]))
t.ok("shadow" not in o["ls /etc"] and "sandboxd" not in o["ls /etc"] and "ssh" not in o["ls /etc"],
     "/etc holds only the runtime's files", o["ls /etc"])
t.eq(o["ls /run"], ["sandbox"], "/run holds sandbox-exec's directory only (no D-Bus, systemd, sandboxd)")
t.ok(len(o["pids"]) <= 3, f"only the sandbox's own processes are visible ({o['pids']})", o["pids"])
caps = {l.split(":")[0]: l.split(":")[1].strip() for l in o["caps"]}
if STRONG:
    # uid 0 of gVisor's user namespace, the one identity runsc --rootless maps (to the dynamic user on the
    # host), with no capability at all (next); gVisor's /proc/self/status has no CapAmb, NoNewPrivs or
    # Seccomp lines: the ambient set and no_new_privs are asked of its kernel instead.
    t.eq(o["uid"], 0, "strong tier: uid 0 of gVisor's user namespace (the dynamic user on the host)")
    t.eq((caps.get("CapEff"), caps.get("CapPrm"), caps.get("CapBnd"), caps.get("CapAmb", "0000000000000000")),
         ("0000000000000000",) * 4, "no capabilities at all")
    t.eq(o["PR_GET_NO_NEW_PRIVS"], 1, "no new privileges (prctl PR_GET_NO_NEW_PRIVS)")
    # Our filter is not loaded under gVisor (it would stop runsc): the program's calls go to gVisor's
    # kernel, never to the host's.
    t.ok(o["release"] != os.uname().release,
         f"strong tier: instead of our seccomp filter, gVisor's kernel ({o['release']}) answers every call", o["release"])
    # runsc --network=none: sockets are gVisor's netstack's, with a loopback and nothing else.
    t.eq(o["ifaces"], ["lo"], "strong tier: the only network interface is gVisor's loopback")
    t.ok(o["connect 1.1.1.1:53"] != "CONNECTED", f"strong tier: no route out ({o['connect 1.1.1.1:53']})",
         o["connect 1.1.1.1:53"])
else:
    t.ok(61184 <= o["uid"] <= 65519, f"runs as a dynamic user ({o['uid']})", o["uid"])
    t.eq((caps.get("CapEff"), caps.get("CapPrm"), caps.get("CapBnd"), caps.get("CapAmb")),
         ("0000000000000000",) * 4, "no capabilities at all")
    t.eq(caps.get("NoNewPrivs"), "1", "no new privileges")
    t.eq(caps.get("Seccomp"), "2", "a seccomp filter is loaded")
    for fam in ("AF_INET", "AF_INET6", "AF_NETLINK"):
        t.ok(o[fam] != "ok", f"no {fam} sockets ({o[fam]})", o[fam])
t.eq(o["AF_UNIX"], "ok", "AF_UNIX sockets work")
for k in ("connect dbus", "connect journal", "connect devlog", "connect abstract dbus"):
    t.ok(o[k] != "CONNECTED", f"{k}: {o[k]}", o[k])
# gVisor implements namespaces and ptrace in its own kernel: the program may make a user or network
# namespace, or be traced, inside gVisor, which is all it ever reaches (the release, checked above).
GVISOR_OWN = ("unshare(CLONE_NEWUSER)", "unshare(CLONE_NEWNET)", "ptrace(PTRACE_TRACEME)")
for k in ("keyctl", "io_uring_setup", "unshare(CLONE_NEWUSER)", "unshare(CLONE_NEWNET)", "personality(PER_LINUX32)",
          "bpf", "perf_event_open", "userfaultfd", "ptrace(PTRACE_TRACEME)", "mount", "setuid(0)"):
    if STRONG and k in GVISOR_OWN:
        t.ok(o[k] == "ok" and o["release"] != os.uname().release,
             f"strong tier: {k} is gVisor's own ({o[k]}, kernel {o['release']})", o[k])
    else:
        t.ok(o[k] != "ok", f"{k} denied ({o[k]})", o[k])
if STRONG:
    # gVisor's gofer sets the mode on the host, where RestrictSUIDSGID= refuses a setuid bit: the file keeps
    # its mode, without the bit.
    t.ok(o["chmod setuid"] == "EPERM" or (o["chmod setuid"].startswith("0o") and not int(o["chmod setuid"], 8) & 0o6000),
         f"no setuid files ({o['chmod setuid']})", o["chmod setuid"])
else:
    t.ok(o["chmod setuid"] in ("EPERM", "0o100755"), f"no setuid files ({o['chmod setuid']})", o["chmod setuid"])
for p in ["/", "/usr", "/etc", "/var", "/run"]:
    t.ok(o["write " + p] != "WRITABLE", f"{p} is read-only ({o['write ' + p]})", o["write " + p])
for p in ["/workspace", "/tmp", "/var/tmp", "/dev/shm"]:
    t.eq(o["write " + p], "WRITABLE", f"{p} is writable")

# Another execution's workspace is out of reach, even while it runs.
st, a = submit("import time\nopen('/workspace/secret.txt','w').write('s3cret')\ntime.sleep(3)\n")
time.sleep(1.0)
r = run("import os, glob\nprint(glob.glob('/run/sandboxd/workspaces/*'), glob.glob('/workspace/*'),"
        " os.path.exists('/workspace/../secret.txt'), [p for p in os.listdir('/proc') if p.isdigit()])")
t.ok("secret" not in r["stdout"], "a concurrent execution's files are invisible", r["stdout"])
get(a["execution_id"], wait=True)

# A forged journal line never reaches the host journal: output is captured, not logged.
marker = "FORGED-%d" % os.getpid()
r = run(f"import sys\nprint('<3>{marker}')\nprint('{marker}', file=sys.stderr)\n"
        f"import socket\ntry:\n    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)\n"
        f"    s.sendto(b'MESSAGE={marker}\\n', '/run/systemd/journal/socket')\nexcept OSError as e:\n    pass\n")
t.verdict(r, "success", None, "forging program ran")
time.sleep(0.5)
j = subprocess.run(["journalctl", "--no-pager", "-o", "cat", "-g", marker], capture_output=True, text=True).stdout
t.eq(j.strip(), "", "the forged line is not in the journal")

# No process survives its unit: a daemonized grandchild dies with it.
r = run("import os, time\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
        "        time.sleep(300)\n    os._exit(0)\nprint('parent done')\n")
t.verdict(r, "success", None, "daemonizing program")
time.sleep(0.5)
t.eq(program_processes(), [], "the daemonized grandchild did not survive")

# The helper's report cannot be forged by writing to the control socket or ptracing the helper.
r = run("import os\nfor fd in range(3, 64):\n    try:\n        os.write(fd, b'phase=run\\nexit=0\\n')\n"
        "    except OSError:\n        pass\nraise SystemExit(7)\n")
t.eq((r["status"], r["exit_code"]), ("failed", 7), "writes to stray fds do not change the verdict")

t.done()

# SPDX-License-Identifier: LGPL-2.1-or-later
# The seccomp filter is an allow-list: in a real unit, system calls it does not name answer ENOSYS
# (the newest ones included), the known-dangerous ones EPERM, and the typical programs of every
# language still run (tests/integration/syscall_workloads.py). A language row's extra calls reach
# its own programs only.
import json
import os
import platform
import sys

sys.path.insert(0, os.path.dirname(__file__))
from lib import *  # noqa: E402,F401,F403
from syscall_workloads import WORKLOADS  # noqa: E402

t = Tap()

if platform.machine() != "x86_64":
    # The raw numbers below are x86-64's; the workloads would run anywhere, but one test, one arch.
    print(f"1..0 # SKIP raw system call numbers are x86-64's, this is {platform.machine()}")
    sys.exit(77)

# Raw numbers through ctypes, so no library wrapper decides; arguments that fail harmlessly where
# the kernel gets to run the call. Numbers from 424 on are the same on every architecture.
ENOSYS_CALLS = {
    "io_setup": (206, 0, 0),
    "memfd_secret": (447, 0),
    "futex_waitv": (449, 0, 0, 0, 0, 0),
    "cachestat": (451, -1, 0, 0, 0),
    "statmount": (457, 0, 0, 0, 0),
    "listmount": (458, 0, 0, 0, 0),
    "lsm_get_self_attr": (459, 0, 0, 0, 0),
    "lsm_list_modules": (461, 0, 0, 0),
    "mseal": (462, 0, 0, 0),
    "open_tree_attr": (467, -1, 0, 0, 0, 0),
    "number 1000": (1000,),
    "msgget": (68, 0, 0),
    "splice": (275, -1, 0, -1, 0, 1, 0),
    "pkey_alloc (node's row only)": (330, 0, 0),
}
EPERM_CALLS = {
    "keyctl": (250, 0, 0, 0, 0),
    "add_key": (248, 0, 0, 0, 0, 0),
    "bpf": (321, 0, 0, 0),
    "perf_event_open": (298, 0, 0, -1, -1, 0),
    "userfaultfd": (323, 0),
    "io_uring_setup": (425, 1, 0),
    "ptrace(PTRACE_TRACEME)": (101, 0, 0, 0, 0),
    "process_vm_readv": (310, 1, 0, 0, 0, 0, 0),
    "mount": (165, 0, 0, 0, 0, 0),
    "open_tree": (428, -1, 0, 0),
    "fsopen": (430, 0, 0),
    "unshare(CLONE_NEWUSER)": (272, 0x10000000),
    "setns": (308, -1, 0),
    "clone(CLONE_NEWNS)": (56, 0x00020000 | 17, 0, 0, 0, 0),
    "personality(PER_LINUX32)": (135, 8),
    "kexec_load": (246, 0, 0, 0, 0),
    "init_module": (175, 0, 0, 0),
    "chroot": (161, 0),
}

PROBE = r'''
import ctypes, errno, json, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def sc(nr, *a):
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(x) for x in a])
    e = ctypes.get_errno()
    if nr == 56 and r == 0:
        os._exit(0)     # a clone that worked: the child goes, the parent reports
    if nr == 56 and r > 0:
        os.waitpid(r, 0)
    return "ok" if r >= 0 else errno.errorcode.get(e, str(e))
calls = json.loads(CALLS)
out = {k: sc(*v) for k, v in calls.items()}
out["release"] = os.uname().release
print(json.dumps(out))
'''.replace("CALLS", repr(json.dumps({**ENOSYS_CALLS, **EPERM_CALLS})))

r = run(PROBE)
t.verdict(r, "success", None, "raw system call probe ran")
try:
    o = json.loads(r["stdout"])
except ValueError:
    o = {}
STRONG = (r.get("isolation") or {}).get("tier") == "strong"
print(f"# tier: {(r.get('isolation') or {}).get('tier')}")
# The strong tier: our filter is not loaded under gVisor (it would stop runsc); every call goes to gVisor's
# kernel, which refuses it or answers it within the sandbox, never to the host's. So: the kernel answering
# is gVisor's, none of the calls succeeds, but those gVisor implements itself, inside its own namespaces.
GVISOR_OWN = {
    "msgget": "SysV message queues of gVisor's own IPC namespace",
    "unshare(CLONE_NEWUSER)": "a user namespace of gVisor's kernel",
    "clone(CLONE_NEWNS)": "a mount namespace of gVisor's kernel",
    "ptrace(PTRACE_TRACEME)": "gVisor's own ptrace, between the sandbox's processes",
}
if STRONG:
    t.ok(o.get("release") not in (None, os.uname().release),
         f"strong tier: the calls went to gVisor's kernel ({o.get('release')}), not the host's ({os.uname().release})",
         o.get("release"))
    for k in {**ENOSYS_CALLS, **EPERM_CALLS}:
        if k in GVISOR_OWN:
            t.eq(o.get(k), "ok", f"strong tier: {k}: {GVISOR_OWN[k]}")
        else:
            t.ok(o.get(k) not in (None, "ok"), f"strong tier: {k} refused by gVisor ({o.get(k)})", o.get(k))
else:
    for k in ENOSYS_CALLS:
        t.eq(o.get(k), "ENOSYS", f"{k}: ENOSYS (not on the allow-list)")
    for k in EPERM_CALLS:
        t.eq(o.get(k), "EPERM", f"{k}: EPERM (denied)")

# The typical programs, each in its own unit: they must succeed, and say so on their last line.
_kv = tuple(int(x) for x in platform.release().split("-")[0].split(".")[:2])
OLD_LINKAT = STRONG and _kv < (6, 10)
HARD_LINKS = {
    "python-files": ('os.link(os.path.join(d, "t.db"), os.path.join(d, "hard"))\n',
                     'try:\n    os.link(os.path.join(d, "t.db"), os.path.join(d, "hard"))\n'
                     '    raise SystemExit("a hard link worked under gVisor: update test-syscalls")\n'
                     'except FileNotFoundError:\n    shutil.copy(os.path.join(d, "t.db"), os.path.join(d, "hard"))\n'),
    "bash-coreutils": ('ln "$d/f" "$d/hard";',
                       'if ln "$d/f" "$d/hard" 2>/dev/null; then echo "a hard link worked under gVisor"; exit 9; fi; '
                       'cp "$d/f" "$d/hard";'),
}
for name, (language, code) in WORKLOADS.items():
    if name == "python-numpy" and not os.path.isdir("/usr/lib/python3/dist-packages/numpy"):
        # The VM image has no python3-numpy (the development hosts do, tools/install-deps).
        print(f"# {name}: skipped, numpy is not installed on this host")
        continue
    if OLD_LINKAT and name in HARD_LINKS:
        # Not a matter of confinement: gVisor's gofer makes a hard link with linkat(fd, "", AT_EMPTY_PATH),
        # which kernels before 6.10 allow only with CAP_DAC_READ_SEARCH on the host (docs/isolation.md).
        # There the link fails with ENOENT, which the workload asserts, and a copy stands in for it.
        old, new = HARD_LINKS[name]
        t.ok(old in code, f"strong tier, kernel {os.uname().release}: {name} still makes its hard link", code)
        code = code.replace(old, new)
    r = run(code, language=language, limits={"timeout_ms": 120000, "memory_mb": 1024})
    last = (r.get("stdout") or "").strip().splitlines()[-1:]
    ok = t.verdict(r, "success", None, f"{name} runs")
    t.ok(last == [f"ok {name}"], f"{name} got to its end", (r.get("stdout") or "")[-1500:] +
         "\n" + (r.get("stderr") or "")[-1500:] if ok else None)

# Node's row adds pkey_alloc/pkey_mprotect (Language.extra_syscalls): where the CPU and kernel have
# protection keys, V8 puts its WebAssembly code under one, which /proc/self/smaps shows. A node
# started by a Python program inherits Python's filter: ENOSYS, V8 falls back, no key, and the
# module still runs.
SMAPS_JS = ("const m = new WebAssembly.Module(new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1,"
            " 127, 3, 2, 1, 0, 7, 5, 1, 1, 102, 0, 0, 10, 6, 1, 4, 0, 65, 42, 11]));"
            " const f = new WebAssembly.Instance(m).exports.f; if (f() !== 42) throw new Error('wasm');"
            " const n = require('fs').readFileSync('/proc/self/smaps', 'utf8').split('\\n')"
            ".filter(l => /^ProtectionKey:\\s+[1-9]/.test(l)).length; console.log(n);")
with open("/proc/cpuinfo") as f:
    flags = next((l.split(":", 1)[1].split() for l in f if l.startswith("flags")), [])
if "pku" in flags and "ospke" in flags:
    r = run(SMAPS_JS, language="node")
    t.verdict(r, "success", None, "node reads its smaps")
    if STRONG:
        # gVisor's kernel has no protection keys (pkey_alloc: ENOSYS, above): V8 falls back, the module runs.
        t.eq(r.get("stdout", "").strip(), "0", "strong tier: no protection key under gVisor", r.get("stderr"))
    else:
        t.ok(r.get("stdout", "").strip().isdigit() and int(r["stdout"]) > 0,
             f"node's own filter lets V8 use a protection key ({r.get('stdout', '').strip()} keyed mappings)",
             r.get("stderr"))
    r = run("import subprocess\nprint(subprocess.run(['/usr/bin/node', '-e', %r], capture_output=True,"
            " text=True, check=True).stdout.strip())\n" % SMAPS_JS)
    t.verdict(r, "success", None, "node under python's filter runs")
    t.eq(r.get("stdout", "").strip(), "0", "node under python's filter has no protection key")
else:
    print("# the CPU or kernel has no protection keys (pku/ospke): the node row's extra calls"
          " are not observable here")

t.done()

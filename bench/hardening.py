#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""What systemd's kernel protections cost at unit start (ProtectKernel=, sandboxd.conf(5)): sandboxd's
own profile with and without them, interleaved in one run, Python print(1) at concurrency 1.

Per execution: the client's wall time (POST ?wait=true to the answer), created_at -> started_at
(queue, workspace, StartTransientUnit, until the unit runs: the unit start latency) and the CPU time
PID 1 (systemd) spent, from /proc/1/stat over each block. Runs INSIDE tests/harness/sandbox-harness
(bench/run --hardening). Python standard library only."""

import argparse
import datetime
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
from lib import request  # noqa: E402

CLK_TCK = os.sysconf("SC_CLK_TCK")


def pid1_cpu_ms():
    with open("/proc/1/stat") as f:
        rest = f.read().rsplit(")", 1)[1].split()
    return (int(rest[11]) + int(rest[12])) * 1000.0 / CLK_TCK


def parse_ts(s):
    return datetime.datetime.strptime(s.replace("Z", "+0000"), "%Y-%m-%dT%H:%M:%S.%f%z").timestamp()


def set_protect(on):
    d = os.path.join(os.environ["SANDBOXD_CONFIG_DIR"], "sandboxd.conf.d")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "60-bench-hardening.conf"), "w") as f:
        f.write("[Sandbox]\nProtectKernel=%s\n" % ("yes" if on else "no"))
    subprocess.run(["systemctl", "reload", "sandboxd.service"], check=True)
    time.sleep(0.3)


def one():
    t0 = time.monotonic()
    st, r = request("POST", "/v1/executions?wait=true", {"language": "python", "code": "print(1)"})
    wall = (time.monotonic() - t0) * 1000.0
    if st != 200 or r.get("status") != "success" or r.get("stdout") != "1\n":
        raise RuntimeError(f"execution failed: {st} {json.dumps(r)[:500]}")
    return wall, (parse_ts(r["started_at"]) - parse_ts(r["created_at"])) * 1000.0


# Each of systemd's kernel protections alone, on a plain hardened transient service started with
# systemd-run (the same PID 1 work, without sandboxd's own steps): what each one adds.
EACH = ["RestrictNamespaces=yes", "LockPersonality=yes", "RestrictRealtime=yes",
        "RestrictAddressFamilies=AF_UNIX", "SystemCallArchitectures=native", "ProtectKernelTunables=yes",
        "ProtectKernelModules=yes", "ProtectKernelLogs=yes", "ProtectClock=yes", "ProtectControlGroups=yes"]
BASE = ["DynamicUser=yes", "PrivateNetwork=yes", "PrivateDevices=yes", "PrivateIPC=yes", "ProtectProc=invisible",
        "ProcSubset=pid", "NoNewPrivileges=yes", "CapabilityBoundingSet=", "MemoryMax=512M", "TasksMax=128"]


def systemd_run(props):
    argv = ["systemd-run", "--wait", "--pipe", "--quiet", "--collect"]
    for p in props:
        argv += ["-p", p]
    t0 = time.monotonic()
    p = subprocess.run(argv + ["/usr/bin/python3", "-c", "print(1)"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode != 0 or p.stdout != b"1\n":
        raise RuntimeError(f"systemd-run {props[-1]}: {p.returncode} {p.stderr[-300:]!r}")
    return (time.monotonic() - t0) * 1000.0


def each_property(rounds, block):
    variants = [("(base)", BASE)] + [(e, BASE + [e]) for e in EACH] + [("all ten", BASE + EACH)]
    res = {name: {"wall": [], "pid1_ms": 0.0, "n": 0} for name, _ in variants}
    for rnd in range(rounds):
        order = variants if rnd % 2 == 0 else list(reversed(variants))
        for name, props in order:
            systemd_run(props)
            c0 = pid1_cpu_ms()
            for _ in range(block):
                res[name]["wall"].append(systemd_run(props))
            res[name]["pid1_ms"] += pid1_cpu_ms() - c0
            res[name]["n"] += block
    base = res["(base)"]
    b_wall, b_cpu = pct(base["wall"], 50), base["pid1_ms"] / base["n"]
    print(f"\nsystemd-run, a hardened base profile plus one protection, {rounds} interleaved blocks of {block}")
    print(f"{'property':<34} {'wall p50':>9} {'Δ wall':>8} {'PID 1 CPU/exec':>15} {'Δ CPU':>8}")
    out = {}
    for name, _ in variants:
        r = res[name]
        w, c = pct(r["wall"], 50), r["pid1_ms"] / r["n"]
        out[name] = {"wall_p50_ms": w, "pid1_cpu_ms_per_exec": c, "n": r["n"]}
        print(f"{name:<34} {w:8.1f}  {w - b_wall:+7.1f}  {c:13.2f} ms {c - b_cpu:+7.2f}")
    return out


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1))))] if xs else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=8, help="blocks per variant (interleaved)")
    ap.add_argument("--block", type=int, default=8, help="executions per block")
    ap.add_argument("--each-rounds", type=int, default=4, help="blocks per property in the systemd-run ablation")
    ap.add_argument("--each-block", type=int, default=4, help="starts per block in the systemd-run ablation")
    args = ap.parse_args()

    res = {v: {"wall": [], "start": [], "pid1_ms": 0.0, "n": 0} for v in ("with", "without")}
    for _ in range(3):          # warm-up: pool, page cache
        one()
    for rnd in range(args.rounds):
        for v in (("with", "without") if rnd % 2 == 0 else ("without", "with")):
            set_protect(v == "with")
            one()               # the first after a reload pays for the reload
            c0 = pid1_cpu_ms()
            for _ in range(args.block):
                w, s = one()
                res[v]["wall"].append(w)
                res[v]["start"].append(s)
            res[v]["pid1_ms"] += pid1_cpu_ms() - c0
            res[v]["n"] += args.block
    os.unlink(os.path.join(os.environ["SANDBOXD_CONFIG_DIR"], "sandboxd.conf.d", "60-bench-hardening.conf"))
    subprocess.run(["systemctl", "reload", "sandboxd.service"], check=False)

    out = {}
    print(f"sandboxd, python print(1), concurrency 1, {args.rounds} interleaved blocks of {args.block} per variant")
    print(f"{'variant':<34} {'wall p50':>9} {'wall p90':>9} {'start p50':>10} {'PID 1 CPU/exec':>15}")
    for v, label in (("without", "ProtectKernel=no"), ("with", "ProtectKernel=yes (default)")):
        r = res[v]
        out[v] = {"wall_p50_ms": pct(r["wall"], 50), "wall_p90_ms": pct(r["wall"], 90),
                  "start_p50_ms": pct(r["start"], 50), "pid1_cpu_ms_per_exec": r["pid1_ms"] / max(r["n"], 1),
                  "n": r["n"]}
        o = out[v]
        print(f"{label:<34} {o['wall_p50_ms']:8.1f}  {o['wall_p90_ms']:8.1f}  {o['start_p50_ms']:9.1f}  "
              f"{o['pid1_cpu_ms_per_exec']:13.2f} ms")
    w, wo = out["with"], out["without"]
    print(f"cost of the protections: wall p50 {w['wall_p50_ms'] - wo['wall_p50_ms']:+.1f} ms "
          f"({w['wall_p50_ms'] / wo['wall_p50_ms']:.3f}x), start p50 {w['start_p50_ms'] - wo['start_p50_ms']:+.1f} ms, "
          f"PID 1 CPU {w['pid1_cpu_ms_per_exec'] - wo['pid1_cpu_ms_per_exec']:+.2f} ms per execution")
    if args.each_rounds > 0:
        out["each"] = each_property(args.each_rounds, args.each_block)
    path = os.path.join(HERE, "results", "hardening-%s.json" % time.strftime("%Y%m%d-%H%M%S"))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
    print(f"# {path}")


if __name__ == "__main__":
    main()

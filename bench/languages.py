#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Compiled languages end to end (issue 17): hello world through sandboxd's HTTP API against the bare
compile-and-run of the same commands on the host, interleaved, in one run. Run by `bench/run
--languages` inside tests/harness/sandbox-harness.

For each language (default go, rust, c, java; python-data's `import pandas` is bench/environments.py)
and each of N rounds, in turn: the bare run (the language file's [Compile] Command=
and Run= with its Environment=, the source and the build output in a fresh directory of the host,
as root), one execution through the API from the warm pool (the daemon is reloaded with [Pool]
Languages= naming these languages; each warm run first waits for a ready unit), and one with
"start": "cold". Every run must succeed with the expected output, else it is counted as failed.
Ratios: p50(API) / p50(bare). Output: a table on stdout and bench/results/languages-<date>.json.
"""
import argparse
import http.client
import json
import os
import shlex
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
SOCKET = os.environ.get("SANDBOXD_SOCKET", "/run/sandboxd/api.sock")
CONF = os.environ.get("SANDBOXD_CONFIG_DIR", "/etc/sandboxd")
TARGET = 1.3

HELLO = {
    "go": ('package main\n\nimport "fmt"\n\nfunc main() {\n\tfmt.Println("hello")\n}\n', "main.go"),
    "rust": ('fn main() {\n    println!("hello");\n}\n', "main.rs"),
    "c": ('#include <stdio.h>\nint main(void) { puts("hello"); return 0; }\n', "main.c"),
    "cpp": ('#include <iostream>\nint main() { std::cout << "hello" << std::endl; }\n', "main.cpp"),
    "java": ('public class Main {\n    public static void main(String[] a) {\n'
             '        System.out.println("hello");\n    }\n}\n', "Main.java"),
}


class Conn(http.client.HTTPConnection):
    def __init__(self):
        super().__init__("localhost", timeout=300)

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        s.connect(SOCKET)
        self.sock = s


def api(method, path, body=None):
    c = Conn()
    c.request(method, path, body=json.dumps(body).encode() if body is not None else None,
              headers={"Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, json.loads(data or b"{}")


def pool_ready(language):
    st, h = api("GET", "/v1/health")
    return int(((h.get("pool") or {}).get("ready") or {}).get(language, 0)) if st == 200 else 0


def wait_ready(language, timeout=120):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pool_ready(language) > 0:
            return True
        time.sleep(0.05)
    return False


def parse_conf(path):
    """The keys bench needs from a language file: Run=, Command=, Environment= (words split as
    sandboxd.languages(5) says: shlex's POSIX rules are the same for what these files use)."""
    keys = {"Run": None, "Command": None, "Environment": [], "SourceFile": None}
    for line in open(path):
        line = line.strip()
        if not line or line[0] in "#;[" or "=" not in line:
            continue
        k, v = line.split("=", 1)
        k = k.strip()
        if k == "Environment":
            keys[k] += shlex.split(v.strip())
        elif k in keys:
            keys[k] = v.strip() if k == "SourceFile" else shlex.split(v.strip())
    return keys


def find_conf(name):
    for d in (os.path.join(CONF, "languages"), os.path.join(TOP, "languages"), "/usr/lib/sandboxd/languages",
              "/usr/local/lib/sandboxd/languages"):
        p = os.path.join(d, name + ".conf")
        if os.path.exists(p):
            return p
    return None


def bare_argv(words, src, work):
    """The sandbox's paths mapped to a scratch directory: the source, /tmp, /workspace."""
    out = []
    for w in words:
        w = w.replace("%%", "%").replace("%s", src).replace("/run/sandbox/", work + "/src/")
        for inside in ("/var/tmp/", "/tmp/", "/workspace/"):
            w = w.replace(inside, work + "/" + inside.strip("/").replace("/", "_") + "/")
        if w in ("/tmp", "/workspace", "/var/tmp"):
            w = work + "/" + w.strip("/").replace("/", "_")
        out.append(w)
    return out


def bare_run(conf, code, scratch):
    work = tempfile.mkdtemp(dir=scratch)
    try:
        for d in ("src", "tmp", "var_tmp", "workspace"):
            os.makedirs(os.path.join(work, d))
        src = os.path.join(work, "src", conf["SourceFile"])
        with open(src, "w") as f:
            f.write(code)
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": os.path.join(work, "workspace"),
               "TMPDIR": os.path.join(work, "tmp"), "LANG": "C.UTF-8"}
        for kv in conf["Environment"]:
            k, _, v = kv.partition("=")
            env[k] = bare_argv([v], src, work)[0]
        t0 = time.monotonic()
        if conf["Command"]:
            subprocess.run(bare_argv(conf["Command"], src, work), cwd=os.path.join(work, "workspace"), env=env,
                           check=True, capture_output=True, timeout=120)
        p = subprocess.run(bare_argv(conf["Run"], src, work), cwd=os.path.join(work, "workspace"), env=env,
                           check=True, capture_output=True, timeout=120, text=True)
        dt = (time.monotonic() - t0) * 1000
        if p.stdout.strip() != "hello":
            raise RuntimeError(f"bare output {p.stdout!r}")
        return dt
    finally:
        shutil.rmtree(work, ignore_errors=True)


CPU_CORES = 1.0


def api_run(language, code, start):
    body = {"language": language, "code": code,
            "limits": {"timeout_ms": 120000, "memory_mb": 1024, "cpu_cores": CPU_CORES}}
    if start == "cold":
        body["start"] = "cold"
    else:
        if not wait_ready(language):
            raise RuntimeError(f"no warm {language} unit became ready")
    t0 = time.monotonic()
    st, r = api("POST", "/v1/executions?wait=true", body)
    dt = (time.monotonic() - t0) * 1000
    if st != 200 or r.get("status") != "success" or (r.get("stdout") or "").strip() != "hello":
        raise RuntimeError(f"{language} {start}: HTTP {st} {r.get('status')} {r.get('error_type')} "
                           f"{(r.get('stderr') or '')[:300]!r}")
    if start == "warm" and r.get("start") != "warm":
        raise RuntimeError(f"{language}: asked warm, ran {r.get('start')}")
    return dt


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--languages", default="go,rust,c,java")
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--warmup", type=int, default=1)
    # The bare row has every core of the machine; so, by default, has the sandbox (cpu_cores).
    ap.add_argument("--cpu-cores", type=float, default=float(os.cpu_count() or 1))
    args = ap.parse_args()
    global CPU_CORES
    CPU_CORES = args.cpu_cores
    langs = [l for l in args.languages.split(",") if l]
    st, res = api("GET", "/v1/languages")
    avail = {l["name"]: l for l in res.get("languages", [])}
    langs = [l for l in langs if avail.get(l, {}).get("available")]
    missing = [l for l in args.languages.split(",") if l and l not in langs]
    if missing:
        print(f"# not available here, skipped: {', '.join(missing)}", file=sys.stderr)
    if not langs:
        print("bench/languages: no language to measure", file=sys.stderr)
        return 1

    # The pool: these languages, one ready unit each (Size=1), in a drop-in of the harness's config.
    dropin = os.path.join(CONF, "sandboxd.conf.d", "95-bench-languages.conf")
    os.makedirs(os.path.dirname(dropin), exist_ok=True)
    with open(dropin, "w") as f:
        f.write(f"[Pool]\nSize=1\nLanguages={' '.join(langs)}\n")
    subprocess.run(["systemctl", "reload", "sandboxd.service"], check=True)
    scratch = tempfile.mkdtemp(prefix="bench-languages.", dir="/var/lib")

    results = {}
    try:
        rows = [(l, HELLO[l][0], None) for l in langs if l in HELLO]
        for lang, code, _ in rows:
            conf = parse_conf(find_conf(lang))
            t = {"bare": [], "warm": [], "cold": [], "failed": 0}
            for i in range(args.warmup + args.rounds):
                try:
                    b = bare_run(conf, code, scratch)
                    w = api_run(lang, code, "warm")
                    c = api_run(lang, code, "cold")
                except Exception as e:  # noqa: BLE001 - counted and printed
                    t["failed"] += 1
                    print(f"# {lang}: {e}", file=sys.stderr)
                    continue
                if i >= args.warmup:
                    t["bare"].append(b)
                    t["warm"].append(w)
                    t["cold"].append(c)
                print(f"# {lang} round {i}: bare {b:.0f} ms, warm {w:.0f} ms, cold {c:.0f} ms", file=sys.stderr)
            results[lang] = t
    finally:
        os.unlink(dropin)
        subprocess.run(["systemctl", "reload", "sandboxd.service"], check=False)
        shutil.rmtree(scratch, ignore_errors=True)

    print(f"\n# cpu_cores={CPU_CORES:g} for the API runs; the bare ones have all {os.cpu_count()} cores")
    print(f"\n{'language':<28} {'bare p50':>9} {'warm p50':>9} {'cold p50':>9} {'warm/bare':>10} "
          f"{'cold/bare':>10} {'fail':>5}  target (≤ {TARGET}, best start)")
    summary = {}
    for lang, t in results.items():
        med = {k: statistics.median(v) if v else None for k, v in t.items() if k != "failed"}
        rw = med["warm"] / med["bare"] if med["warm"] and med["bare"] else None
        rc = med["cold"] / med["bare"] if med["cold"] and med["bare"] else None
        best = min(x for x in (rw, rc) if x is not None) if (rw or rc) else None
        verdict = "n/a" if best is None else ("PASS" if best <= TARGET else "MISS")
        fmt = lambda x: f"{x:9.0f}" if x is not None else f"{'-':>9}"  # noqa: E731
        fr = lambda x: f"{x:10.2f}" if x is not None else f"{'-':>10}"  # noqa: E731
        print(f"{lang:<28} {fmt(med['bare'])} {fmt(med['warm'])} {fmt(med['cold'])} {fr(rw)} {fr(rc)} "
              f"{t['failed']:5d}  {verdict}")
        summary[lang] = {"p50_ms": med, "warm_ratio": rw, "cold_ratio": rc, "verdict": verdict, "runs": t}
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    out = os.path.join(HERE, "results", time.strftime("languages-%Y%m%d-%H%M%S.json"))
    with open(out, "w") as f:
        json.dump({"rounds": args.rounds, "target": TARGET, "cpu_cores": CPU_CORES, "results": summary}, f, indent=1)
    print(f"\n# {out}")
    return 3 if any(t["failed"] for t in results.values()) else 0


if __name__ == "__main__":
    sys.exit(main())

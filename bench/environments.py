# SPDX-License-Identifier: LGPL-2.1-or-later
"""The python-data environment's benchmark (issue 17), run by `bench/run --environments` inside
tests/harness/sandbox-harness. One run, interleaved (API, bare, API, bare, ...):

  import pandas   end to end through the HTTP API (POST /v1/executions?wait=true with
                  "environment": "python-data": a warm unit of the environment, whose interpreter
                  has imported its Preload= (numpy, pandas), waited for before each run; and with
                  "start": "cold", a unit started for the run whose /usr overlay has the layer) vs bare
                  /usr/bin/python3 -c 'import pandas' on the host with the same layer on PYTHONPATH
                  (and its libraries on LD_LIBRARY_PATH, its Environment= variables set); wall time
                  as the client sees it, medians and p90. The ratio API / bare is the issue's figure.
  print(1)        the same pair without the import, so the unit's own start is visible beside it.

Results: a table on stdout, bench/results/environments-<date>.json."""

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
import lib  # noqa: E402

PYTHON = "/usr/bin/python3"


def manifest_env(envdir):
    env = {}
    with open(os.path.join(envdir, "manifest")) as f:
        for line in f:
            if line.startswith("Environment="):
                k, _, v = line[len("Environment="):].rstrip("\n").partition("=")
                env[k] = v
    return env


def bare(code, envdir):
    env = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8",
           "PYTHONPATH": os.path.join(envdir, "usr/lib/python3/dist-packages"),
           "LD_LIBRARY_PATH": os.path.join(envdir, "usr/lib/x86_64-linux-gnu")}
    env.update(manifest_env(envdir))
    t0 = time.monotonic()
    p = subprocess.run([PYTHON, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    dt = time.monotonic() - t0
    if p.returncode != 0:
        raise RuntimeError(f"bare {code!r}: {p.returncode} {p.stderr[-500:]}")
    return dt * 1000


def env_ready(environment):
    return lib.health().get("pool", {}).get("environments", {}).get(environment, 0)


def api(code, environment, start="auto"):
    body = {"language": "python", "code": code, "limits": {"timeout_ms": 60000, "memory_mb": 1024},
            "start": start}
    if environment:
        body["environment"] = environment
    if start == "auto":
        lib.wait_until(lambda: env_ready(environment) >= 1, 30, 0.05)
    t0 = time.monotonic()
    st, res = lib.request("POST", "/v1/executions?wait=true", body)
    dt = time.monotonic() - t0
    if st != 200 or res.get("status") != "success":
        raise RuntimeError(f"API {code!r}: {st} {json.dumps(res)[:500]}")
    return dt * 1000, res


def stats(xs):
    xs = sorted(xs)
    return {"n": len(xs), "p50": statistics.median(xs), "p90": xs[min(len(xs) - 1, int(0.9 * len(xs)))],
            "min": xs[0], "max": xs[-1]}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=15, help="runs per row (default 15), after one warm-up each")
    ap.add_argument("--environments-dir",
                    default=os.environ.get("SANDBOX_HARNESS_ENVIRONMENTS", "/var/lib/sandboxd-dev/environments"))
    ap.add_argument("--results", default=os.path.join(HERE, "results"))
    a = ap.parse_args()

    envdir = os.path.join(a.environments_dir, "python-data")
    if not os.path.isfile(os.path.join(envdir, "manifest")):
        print(f"environments bench: no python-data at {envdir} (tools/build-environment); skipping", file=sys.stderr)
        return 77

    rows = {
        "import pandas": ("import pandas", "python-data", "auto"),
        "pandas, cold": ("import pandas", "python-data", "cold"),
        "print(1)": ("print(1)", "python-data", "auto"),
        "print(1), cold": ("print(1)", "python-data", "cold"),
    }
    lat = {k: {"api": [], "bare": []} for k in rows}
    starts = {k: [] for k in rows}
    for name, (code, env, start) in rows.items():
        api(code, env, start)   # warm-up: page cache, the first unit of the kind
        bare(code, envdir)
    for i in range(a.reps):
        for name, (code, env, start) in rows.items():
            ms, res = api(code, env, start)
            lat[name]["api"].append(ms)
            starts[name].append(res.get("start"))
            lat[name]["bare"].append(bare(code, envdir))
        print(f"environments bench: {i + 1}/{a.reps}", file=sys.stderr, flush=True)

    out = {"reps": a.reps, "environment": "python-data", "starts": starts, "rows": {}}
    print(f"{'workload':<16} {'API p50':>9} {'API p90':>9} {'bare p50':>9} {'bare p90':>9} {'ratio p50':>9}  starts")
    for name in rows:
        sa, sb = stats(lat[name]["api"]), stats(lat[name]["bare"])
        ratio = sa["p50"] / sb["p50"]
        out["rows"][name] = {"api_ms": sa, "bare_ms": sb, "ratio_p50": ratio,
                             "api_raw_ms": lat[name]["api"], "bare_raw_ms": lat[name]["bare"]}
        print(f"{name:<16} {sa['p50']:>9.1f} {sa['p90']:>9.1f} {sb['p50']:>9.1f} {sb['p90']:>9.1f} {ratio:>9.2f}  "
              + ",".join(f"{s}={starts[name].count(s)}" for s in sorted(set(map(str, starts[name])))))
    imp = out["rows"]["import pandas"]
    added = imp["api_ms"]["p50"] - imp["bare_ms"]["p50"]
    print(f"import pandas: API adds {added:.0f} ms to bare python's {imp['bare_ms']['p50']:.0f} ms "
          f"(the unit's start: print(1) API - bare = "
          f"{out['rows']['print(1)']['api_ms']['p50'] - out['rows']['print(1)']['bare_ms']['p50']:.0f} ms)")
    os.makedirs(a.results, exist_ok=True)
    path = os.path.join(a.results, f"environments-{datetime.datetime.now().strftime('%Y%m%d-%H%M%S')}.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
    print(f"results: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

# SPDX-License-Identifier: LGPL-2.1-or-later
"""The egress proxy's benchmark (issue 16), run by `bench/run --network` inside
tests/harness/sandbox-harness --private-network. One run, against the lab of
tests/integration/netlab.py (a network namespace joined to the harness's by a veth pair, a Python
HTTP server in it):

  throughput  a 100 MiB download (curl -o /dev/null) through the proxy, from an execution with
              network allowed, vs the same download directly from the harness's own network
              namespace (which bench/run created: the proxy's side of the veth pair); --reps
              executions, each after a small warm-up request through the proxy (its start is not
              counted), interleaved with the direct ones; medians. Target: proxy / direct >= 0.8.
  latency     --requests small GETs each way, curl -w time_connect and time_starttransfer; the
              added latency per request is p50(through the proxy) - p50(direct) of
              time_starttransfer (connect through the proxy is the loopback connect to 127.0.0.1:3128;
              the proxy's own resolve and connect upstream fall in time to first byte). Printed (info).

Results: a table on stdout, bench/results/network-<date>.json."""

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
import lib  # noqa: E402
import netlab  # noqa: E402

MIB = 1024 * 1024


def curl_direct(args):
    p = subprocess.run(["curl", "-sS", "-o", "/dev/null", *args], capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        raise RuntimeError(f"direct curl {args}: {p.returncode} {p.stderr.strip()}")
    return p.stdout


def parse_pairs(text, tag):
    return [[float(x) for x in l.split()[1:]] for l in text.splitlines() if l.startswith(tag + " ")]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size-mib", type=int, default=100)
    ap.add_argument("--reps", type=int, default=5, help="downloads each way (the median counts)")
    ap.add_argument("--requests", type=int, default=25, help="small requests each way for the latency p50 (>= 20)")
    ap.add_argument("--results-file")
    a = ap.parse_args()
    if os.environ.get("SANDBOXD_NS_PID") and os.environ.get("SANDBOX_HARNESS_PRIVATE_NETWORK") != "1":
        print("bench/network.py: needs sandbox-harness --private-network", file=sys.stderr)
        return 1
    why = netlab.missing_tools()
    if why:
        print(f"bench/network.py: {why}; skipping", file=sys.stderr)
        return 77
    size = a.size_mib * MIB
    conf = os.environ["SANDBOXD_CONFIG_DIR"]
    # The caps well above the run's traffic: (reps + 1) downloads and the small requests.
    with netlab.NetLab(conf, max_transfer_mb=(a.reps + 2) * a.size_mib + 64, max_connections=64) as lab:
        big_direct = f"http://{netlab.LAB}/bytes/{size}"
        small_direct = f"http://{netlab.LAB}/hello"
        big = lab.url(f"/bytes/{size}")
        small = lab.url("/hello")
        W_DL = "%{speed_download} %{time_total} %{size_download}"
        W_LAT = "%{time_connect} %{time_starttransfer} %{time_total}"

        def proxy_exec(lines):
            # The warm-up request first: the proxy's start (socket activation, the first accept) is
            # not in the figures.
            script = f'curl -sS -x "$HTTP_PROXY" -o /dev/null {small} || exit 10\n' + lines
            res = lib.run(script, language="bash", network={"allow": ["files.lab.test"]},
                          limits={"timeout_ms": 120000})
            if res.get("status") != "success":
                raise RuntimeError(f"the execution failed: {json.dumps(res)[:3000]}")
            ids.append(res["execution_id"])
            return res["stdout"]

        def direct(w, url):
            return [float(x) for x in curl_direct(["-w", w, url]).split()]

        # Interleaved: direct, through the proxy (one execution), direct, ... so that both see the
        # same state of the machine; the latency block the same way, half of the direct requests
        # before the execution and half after.
        ids, direct_dl, proxy_dl, out = [], [], [], ""
        curl_direct([small_direct])
        for i in range(a.reps):
            print(f"bench/network: download {i + 1}/{a.reps}, direct and through the proxy", file=sys.stderr)
            direct_dl.append(direct(W_DL, big_direct))
            out = proxy_exec(f'printf "DL " && curl -sS -x "$HTTP_PROXY" -o /dev/null -w "{W_DL}\\n" {big} || exit 11\n')
            proxy_dl += parse_pairs(out, "DL")
        direct_dl.append(direct(W_DL, big_direct))
        print("bench/network: latency, direct and through the proxy", file=sys.stderr)
        direct_lat = [direct(W_LAT, small_direct) for _ in range(a.requests // 2)]
        out = proxy_exec(f'for i in $(seq {a.requests}); do\n'
                         f'  printf "LAT " && curl -sS -x "$HTTP_PROXY" -o /dev/null -w "{W_LAT}\\n" {small} || exit 12\n'
                         f'done\n')
        proxy_lat = parse_pairs(out, "LAT")
        direct_lat += [direct(W_LAT, small_direct) for _ in range(a.requests - a.requests // 2)]

    bad = [r for r in proxy_dl + direct_dl if int(r[2]) != size]
    if bad or len(proxy_dl) != a.reps or len(proxy_lat) != a.requests:
        print(f"bench/network: incomplete downloads or missing lines: {bad} {out[:2000]}", file=sys.stderr)
        return 1

    def med(rows, i):
        return statistics.median(r[i] for r in rows)

    tp_proxy = med(proxy_dl, 0) / MIB
    tp_direct = med(direct_dl, 0) / MIB
    ratio = tp_proxy / tp_direct if tp_direct else None
    con_p, con_d = med(proxy_lat, 0) * 1000, med(direct_lat, 0) * 1000
    ttfb_p, ttfb_d = med(proxy_lat, 1) * 1000, med(direct_lat, 1) * 1000
    added = ttfb_p - ttfb_d
    verdict = "n/a" if ratio is None else ("PASS" if ratio >= 0.8 else "MISS")

    print(f"\n=== Network (issue 16): {a.size_mib} MiB download, median of {a.reps} (direct: {len(direct_dl)}, interleaved); "
          f"{a.requests} small requests each way ===")
    print(f"{'':34} {'through the proxy':>18} {'direct':>10}")
    print(f"{'throughput [MiB/s]':34} {tp_proxy:18.1f} {tp_direct:10.1f}")
    print(f"{'time_connect p50 [ms]':34} {con_p:18.3f} {con_d:10.3f}")
    print(f"{'time_starttransfer p50 [ms]':34} {ttfb_p:18.3f} {ttfb_d:10.3f}")
    print("\nTargets (issue 16)")
    print(f"  throughput proxy / direct         {ratio:.3f}   (>= 0.8)   {verdict}")
    print(f"  added latency per request p50     {added:+.3f} ms (time_starttransfer, proxy - direct)   info")
    print(f"  connect p50 proxy / direct        {con_p:.3f} / {con_d:.3f} ms   info")

    doc = {"when": datetime.datetime.now(datetime.timezone.utc).isoformat(), "size_bytes": size, "reps": a.reps,
           "requests": a.requests,
           "proxy": {"downloads": proxy_dl, "latency": proxy_lat}, "direct": {"downloads": direct_dl, "latency": direct_lat},
           "fields": {"downloads": W_DL, "latency": W_LAT},
           "throughput_mib_s": {"proxy": tp_proxy, "direct": tp_direct, "ratio": ratio, "limit": 0.8, "verdict": verdict},
           "latency_ms_p50": {"connect_proxy": con_p, "connect_direct": con_d, "starttransfer_proxy": ttfb_p,
                              "starttransfer_direct": ttfb_d, "added": added},
           "execution_ids": ids}
    path = a.results_file or os.path.join(HERE, "results",
                                          "network-" + datetime.datetime.now().strftime("%Y%m%d-%H%M%S") + ".json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
    print(f"\nresults: {os.path.relpath(path)}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        print(f"bench/network: {e}", file=sys.stderr)
        sys.exit(1)

# SPDX-License-Identifier: LGPL-2.1-or-later
# Environments (issue 17): python-data, built by tools/build-environment from Debian's packages, is a
# read-only layer only its units see. The realistic data task: a CSV from /workspace/input read with
# pandas, a scikit-learn fit, a matplotlib plot to /workspace/output/plot.png that comes back as an
# artifact of type image/png (and an SVG). Without the environment `import pandas` fails with an
# error_message naming the module, the environment and what to do; a python run without it does not
# see the layer's files; an unknown environment, or one of another language, is a 400; GET
# /v1/languages lists it with its packages and versions; the host itself cannot import pandas.
import base64
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from lib import *  # noqa: E402,F401,F403

ENVS = os.environ.get("SANDBOX_HARNESS_ENVIRONMENTS", "/var/lib/sandboxd-dev/environments")
MANIFEST = os.path.join(ENVS, "python-data", "manifest")
if not os.path.isfile(MANIFEST):
    print(f"1..0 # SKIP no python-data environment at {ENVS} (run tools/build-environment)")
    sys.exit(77)

t = Tap()
LIMITS = {"timeout_ms": 120000, "memory_mb": 1024}

# ---- the host: the packages are not installed there -------------------------------------------
p = subprocess.run(["/usr/bin/python3", "-c", "import pandas"], capture_output=True, text=True)
t.ok(p.returncode != 0 and "No module named 'pandas'" in p.stderr, "the host's python3 cannot import pandas", p)

# ---- GET /v1/languages ------------------------------------------------------------------------
st, langs = request("GET", "/v1/languages")
py = next((x for x in langs.get("languages", []) if x.get("name") == "python"), {})
envs = {e["name"]: e for e in py.get("environments") or []}
t.ok("python-data" in envs, "GET /v1/languages: python lists python-data", py)
pk = {x["name"]: x["version"] for x in envs.get("python-data", {}).get("packages", [])}
for name in ("python3-pandas", "python3-numpy", "python3-sklearn", "python3-matplotlib", "python3-scipy"):
    t.ok(bool(pk.get(name)), f"python-data lists {name} with a version ({pk.get(name)})", pk)
others = [x["name"] for x in langs.get("languages", []) if x.get("name") != "python" and x.get("environments")]
t.eq(others, [], "no other language lists python-data")

# ---- the realistic data task ------------------------------------------------------------------
CSV = "x,y\n" + "".join(f"{i},{2 * i + 1 + (i % 3) * 0.1:.2f}\n" for i in range(50))
TASK = r"""
import pandas as pd
from sklearn.linear_model import LinearRegression
import matplotlib
import matplotlib.pyplot as plt

df = pd.read_csv('/workspace/input/data.csv')
m = LinearRegression().fit(df[['x']], df['y'])
print(f"rows={len(df)} slope={m.coef_[0]:.2f} backend={matplotlib.get_backend()}")
fig, ax = plt.subplots()
ax.scatter(df['x'], df['y'], s=4)
ax.plot(df['x'], m.predict(df[['x']]), color='red')
fig.savefig('/workspace/output/plot.png')
fig.savefig('/workspace/output/plot.svg')
"""
res = run(TASK, environment="python-data", limits=LIMITS,
          files=[{"path": "data.csv", "content_base64": base64.b64encode(CSV.encode()).decode()}])
t.verdict(res, "success", None, "data task in python-data")
t.eq(res.get("stderr"), "", "nothing on stderr (no fontconfig or matplotlib complaint)")
t.ok("rows=50 slope=2.00" in (res.get("stdout") or ""), "pandas read the CSV, scikit-learn fit it", res.get("stdout"))
t.ok("backend=agg" in (res.get("stdout") or "").lower(), "matplotlib is headless (Agg)", res.get("stdout"))
t.eq(res.get("environment"), "python-data", "the result names its environment")
arts = {a["path"]: a for a in (res.get("artifacts") or [])}
t.eq(arts.get("plot.png", {}).get("mime_type"), "image/png", "plot.png comes back as image/png", res.get("artifacts"))
t.eq(arts.get("plot.svg", {}).get("mime_type"), "image/svg+xml", "plot.svg comes back as image/svg+xml",
     res.get("artifacts"))
if "plot.png" in arts:
    conn = UnixConnection(SOCKET, timeout=60)
    conn.request("GET", arts["plot.png"]["url"])
    r = conn.getresponse()
    body = r.read()
    conn.close()
    t.ok(r.status == 200 and body.startswith(b"\x89PNG\r\n\x1a\n") and len(body) > 1000,
         f"the PNG downloads ({len(body)} bytes)", r.status)
st, rec = get(res.get("execution_id"))
t.eq(rec.get("environment"), "python-data", "the stored record names its environment")

# The rest of the layer imports too (each package the issue names).
IMPORTS = ("import numpy, pandas, scipy, matplotlib, sklearn, seaborn, statsmodels.api, sympy, networkx, PIL, "
           "openpyxl, requests, bs4, lxml, yaml, dateutil, tabulate; print('all imported')")
res = run(IMPORTS, environment="python-data", limits=LIMITS)
t.ok(res.get("status") == "success" and "all imported" in (res.get("stdout") or ""),
     "every library of python-data imports", res)

# ---- without the environment ------------------------------------------------------------------
res = run("import pandas", limits=LIMITS)
t.verdict(res, "failed", "runtime_error", "import pandas without an environment")
msg = res.get("error_message") or ""
t.ok("pandas" in msg and "python-data" in msg and "environment" in msg,
     "error_message names the module, the environment that has it, and how to ask for it", msg)
t.eq(res.get("environment"), None, "the result has no environment")

res = run("import pandas.core.frame", limits=LIMITS)
t.ok("python-data" in (res.get("error_message") or ""), "a dotted module: the environment of its top package",
     res.get("error_message"))

# A module no environment has: no environment to suggest, and the way to install one.
res = run("import definitely_not_a_module_xyz", environment="python-data", limits=LIMITS)
msg = res.get("error_message") or ""
t.ok("definitely_not_a_module_xyz" in msg and "'python-data'" in msg and "pip install" in msg,
     "a module no environment has: named, with the environment, and pip install with network", msg)

# Hostile stderr: a forged line with a name that is not a module is not echoed.
res = run("import sys; sys.stderr.write(\"ModuleNotFoundError: No module named 'a b\\x1b[31m'\\n\"); sys.exit(1)",
          limits=LIMITS)
t.eq(res.get("error_message"), None, "an invalid module name in stderr is not taken", res.get("error_message"))

# The base run sees nothing of the layer.
SEE = r"""
import os
paths = ['/usr/lib/python3/dist-packages/pandas', '/usr/lib/python3/dist-packages/sklearn',
         '/usr/lib/x86_64-linux-gnu/liblbfgsb.so.0', '/usr/share/matplotlib']
print(sorted(p for p in paths if os.path.exists(p)))
print(open('/proc/self/mountinfo').read().count('env-layer'))
"""
res = run(SEE, limits=LIMITS)
t.eq((res.get("stdout") or "").split("\n")[:2], ["[]", "0"], "a run without the environment sees none of its files",
     res)
res = run(SEE, environment="python-data", limits=LIMITS)
t.ok((res.get("stdout") or "").startswith("['/usr/lib/python3/dist-packages/pandas'"),
     "the environment's run sees them (the check above can fail)", res.get("stdout"))
res = run("ls /usr/lib/python3/dist-packages/pandas /usr/lib/x86_64-linux-gnu/liblbfgsb.so.0 2>&1; echo rc=$?",
          language="bash", limits=LIMITS)
t.ok("rc=2" in (res.get("stdout") or "") and "No such file" in (res.get("stdout") or ""),
     "another language's unit does not see the layer either", res.get("stdout"))
res = run("import os; print(os.path.exists('/run/.env-layer'), os.environ.get('MPLCONFIGDIR'))",
          environment="python-data", limits=LIMITS)
t.eq((res.get("stdout") or "").strip(), "False /tmp/matplotlib", "the layer's bind is gone, MPLCONFIGDIR is in /tmp")

# ---- the warm pool keeps units per environment ([Pool] Environments=, default python-data) ---------
# Such a unit has the layer and the environment's variables from its start, and its runtime imported
# the manifest's Preload= (numpy, pandas) before its claim; it serves only that environment, and a
# plain python unit serves only runs without one.
def env_ready(name="python-data"):
    return health().get("pool", {}).get("environments", {}).get(name, 0)


t.ok(wait_until(lambda: env_ready() >= 1, 60, 0.2), "health: pool.environments counts ready python-data units",
     health().get("pool"))
WARM_SEE = ("import sys, os; print('pandas' in sys.modules, os.environ.get('MPLBACKEND'));"
            "import pandas; print(pandas.__name__)")
res = run(WARM_SEE, environment="python-data", limits=LIMITS)
t.eq((res.get("start"), res.get("stdout")), ("warm", "True Agg\npandas\n"),
     "a run in python-data takes a warm unit of it: pandas imported already, its variables set", res)
t.ok(wait_until(lambda: env_ready() >= 1, 60, 0.2), "the claimed unit is replaced")
t.ok(wait_pool_ready("python", 1, 60), "plain python units are ready too")
res = run(SEE, limits=LIMITS)
t.eq((res.get("start"), (res.get("stdout") or "").split("\n")[:2]), ("warm", ["[]", "0"]),
     "a warm run without the environment never gets one of its units (sees none of its files)", res)
res = run(WARM_SEE, environment="python-data", limits=LIMITS, start="cold")
t.eq((res.get("start"), res.get("stdout")), ("cold", "False Agg\npandas\n"),
     "a cold run in python-data: the same program, nothing preloaded", res)

# ---- refusals ---------------------------------------------------------------------------------
st, res = submit("print(1)", environment="no-such-env")
t.ok(st == 400 and "no-such-env" in json.dumps(res) and "environment" in json.dumps(res),
     "unknown environment: 400 naming it", (st, res))
st, res = submit("echo hi", language="bash", environment="python-data")
t.ok(st == 400 and "python-data" in json.dumps(res) and "bash" in json.dumps(res),
     "an environment of another language: 400", (st, res))
st, res = submit("print(1)", environment="Bad/Name")
t.ok(st == 400 and "environment" in json.dumps(res), "an invalid name: 400", (st, res))
st, res = submit("print(1)", environment=7)
t.eq(st, 400, "a non-string environment: 400")

# ---- sandboxctl --------------------------------------------------------------------------------
CTL = os.path.join(BUILD, "sandboxctl", "sandboxctl")
p = subprocess.run([CTL, "run", "--environment=python-data", "--language=python", "--memory-mb=1024",
                    "-c", "import pandas; print('pandas', pandas.__version__)"], capture_output=True, text=True,
                   timeout=120)
t.ok(p.returncode == 0 and p.stdout.startswith("pandas 1."), "sandboxctl run --environment=python-data", p)
p = subprocess.run([CTL, "run", "--environment=nope", "-c", "print(1)"], capture_output=True, text=True, timeout=60)
t.ok(p.returncode != 0 and "nope" in p.stderr, "sandboxctl run --environment=nope: refused, named", p)

# ---- restart and reload -----------------------------------------------------------------------
# A run in the environment across a restart of sandboxd: adopted, its record keeps the environment
# (the store's column). After a reload the environments are read again and still serve.
st, acc = submit("import time, pandas; time.sleep(2); print('survived')", environment="python-data", limits=LIMITS)
t.eq(st, 202, "an asynchronous run in python-data is accepted")
subprocess.run(["systemctl", "restart", "sandboxd.service"], check=True)
wait_until(lambda: subprocess.run(["systemctl", "is-active", "-q", "sandboxd.service"]).returncode == 0, 30)
wait_until(lambda: os.path.exists(SOCKET), 30)
st, rec = get(acc.get("execution_id"), wait=True)
t.eq((rec.get("status"), (rec.get("stdout") or "").strip(), rec.get("environment")),
     ("success", "survived", "python-data"), "adopted across a restart, the record keeps its environment", rec)
subprocess.run(["systemctl", "reload", "sandboxd.service"], check=True)
res = run("import pandas; print(pandas.__version__)", environment="python-data", limits=LIMITS)
t.eq(res.get("status"), "success", "after a reload python-data still serves", res.get("stderr"))

t.done()

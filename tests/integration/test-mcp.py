# SPDX-License-Identifier: LGPL-2.1-or-later
# MCP (issue 18): the official TypeScript SDK's client, unmodified (tests/mcp, installed by
# tools/install-deps), talks to sandboxd over stdio (`sandboxctl mcp`, a bridge to POST /mcp) and
# over Streamable HTTP (POST /mcp on a TCP listener, with an API key): it lists the tools, runs
# python and gets 42, gets a PNG the program wrote as image content and a CSV as a resource link,
# sees a failed program as isError with the summary, a refused request as isError, get_execution
# and list_languages. Then the transport's edges with raw HTTP: 405 for GET, 202 for a notification,
# -32601, -32700, -32600, and 401 without a key on TCP.
import base64
import hashlib
import http.client
import json
import os
import secrets
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from lib import *  # noqa: E402,F401,F403

t = Tap()
CONF = os.environ["SANDBOXD_CONFIG_DIR"]
CLIENT_DIR = os.environ.get("SANDBOXD_MCP_CLIENT_DIR", "/var/lib/sandboxd-dev/mcp-client")
SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "mcp", "client.mjs")
SANDBOXCTL = os.path.join(BUILD, "sandboxctl", "sandboxctl")
HOST, PORT = "127.0.0.1", 18091




node = shutil.which("node")
if not node:
    skip_all("node is not installed (tools/install-deps installs nodejs)")
if not os.path.isdir(os.path.join(CLIENT_DIR, "node_modules", "@modelcontextprotocol", "sdk")):
    skip_all(f"the MCP SDK is not installed in {CLIENT_DIR} (tools/install-deps installs it)")

key = secrets.token_urlsafe(32)
keys = os.path.join(CONF, "api-keys")
with open(keys, "w") as f:
    f.write(f"mcp sha256:{hashlib.sha256(key.encode()).hexdigest()}\n")
os.chmod(keys, 0o600)
os.makedirs(os.path.join(CONF, "sandboxd.conf.d"), exist_ok=True)
with open(os.path.join(CONF, "sandboxd.conf.d", "50-mcp.conf"), "w") as f:
    f.write(f"[Daemon]\nListen={HOST}:{PORT}\nAPIKeysFile={keys}\n")
subprocess.run(["systemctl", "restart", "sandboxd.service"], check=True)
t.ok(wait_until(lambda: health().get("status") == "ok", 30, 0.2), "sandboxd is up with a TCP listener")


def run_client(*args, env=None):
    p = subprocess.run([node, SCRIPT, *args], capture_output=True, text=True, timeout=900,
                       env=dict(os.environ, SANDBOXD_MCP_CLIENT_DIR=CLIENT_DIR, **(env or {})))
    try:
        return json.loads(p.stdout.strip().splitlines()[-1]), p
    except (ValueError, IndexError):
        return {"error": "no JSON from the client"}, p


def texts(res):
    return "".join(c.get("text", "") for c in (res or {}).get("content", []) if c.get("type") == "text")


def check(name, out, p):
    t.ok("error" not in out, f"{name}: the SDK client connected and made every call", (out.get("error"), p.stderr[-2000:]))
    t.eq((out.get("server") or {}).get("name"), "sandboxd", f"{name}: serverInfo names sandboxd", out.get("server"))
    tools = {x["name"]: x for x in out.get("tools", [])}
    t.eq(sorted(tools), sorted(["run_code", "list_languages", "get_execution", "read_file", "write_file", "list_files"]),
         f"{name}: tools/list", sorted(tools))
    t.ok(all(x.get("inputSchema", {}).get("type") == "object" for x in tools.values()),
         f"{name}: every tool has an object inputSchema")
    t.ok(set(tools.get("run_code", {}).get("inputSchema", {}).get("required", [])) == {"language", "code"},
         f"{name}: run_code requires language and code", tools.get("run_code"))

    a = out.get("answer") or {}
    t.ok("42" in texts(a) and a.get("isError") is False, f"{name}: run_code print(6*7) gives 42, not an error", a)
    t.eq((a.get("structuredContent") or {}).get("status"), "success", f"{name}: the record is the structured content")

    s = out.get("stdin") or {}
    t.ok("hello" in texts(s) and (s.get("structuredContent") or {}).get("stdin_bytes") == 6,
         f"{name}: run_code with stdin: the program reads it", s)

    plot = out.get("plot") or {}
    imgs = [c for c in plot.get("content", []) if c.get("type") == "image"]
    links = [c for c in plot.get("content", []) if c.get("type") == "resource_link"]
    t.ok(len(imgs) == 1 and imgs[0].get("mimeType") == "image/png" and
         base64.b64decode(imgs[0].get("data", ""))[:8] == b"\x89PNG\r\n\x1a\n",
         f"{name}: the PNG the program wrote comes back as image content", plot.get("content"))
    t.ok(len(links) == 1 and links[0].get("name") == "data.csv" and "/artifacts/data.csv" in links[0].get("uri", ""),
         f"{name}: the CSV is a resource link to its artifact URL", links)

    if plot_env and name == "stdio":
        mpl = out.get("mpl") or {}
        pngs = [base64.b64decode(c.get("data", "")) for c in mpl.get("content", [])
                if c.get("type") == "image" and c.get("mimeType") == "image/png"]
        # A PNG's IHDR: width and height, big-endian, at bytes 16..24 (matplotlib's default figure
        # is 6.4 x 4.8 inches at 100 dpi).
        dims = [(int.from_bytes(b[16:20], "big"), int.from_bytes(b[20:24], "big")) for b in pngs
                if b[:8] == b"\x89PNG\r\n\x1a\n"]
        t.ok(mpl.get("isError") is False and "saved" in texts(mpl) and dims == [(640, 480)],
             f"{name}: a matplotlib plot ({plot_env}) comes back as a 640x480 PNG image", (dims, mpl))

    fail = out.get("failed") or {}
    t.ok(fail.get("isError") is True and "oops" in texts(fail), f"{name}: a failing program is isError, with its stderr", fail)
    t.eq((fail.get("structuredContent") or {}).get("exit_code"), 3, f"{name}: ... and its exit code in the record")
    ref = out.get("refused") or {}
    t.ok(ref.get("isError") is True and "cobol-9000" in texts(ref), f"{name}: a refused request is isError naming why", ref)

    g = out.get("get") or {}
    t.ok("42" in texts(g) and (g.get("structuredContent") or {}).get("execution_id") ==
         (a.get("structuredContent") or {}).get("execution_id"), f"{name}: get_execution returns the first run", g)
    gm = out.get("get_missing") or {}
    t.ok(gm.get("isError") is True and "no such execution" in texts(gm), f"{name}: get_execution of an unknown id", gm)
    langs = out.get("languages") or {}
    names = [x.get("name") for x in (langs.get("structuredContent") or {}).get("languages", [])]
    t.ok("python" in names and "python" in texts(langs), f"{name}: list_languages lists python", names)
    t.ok((out.get("s_run1") or {}).get("isError") is False, f"{name}: a run in a session", out.get("s_run1"))
    ls = out.get("s_list") or {}
    ents = {e.get("name"): e.get("type") for e in (ls.get("structuredContent") or {}).get("entries", [])}
    t.ok(ents.get("notes.txt") == "file" and ents.get("leak") == "symlink" and "notes.txt" in texts(ls),
         f"{name}: list_files shows the run's file and its planted link as a link", ls)
    t.eq(texts(out.get("s_read")), "turn one\n", f"{name}: read_file returns the text", out.get("s_read"))
    leak = out.get("s_leak") or {}
    t.ok(leak.get("isError") is True and "root:" not in json.dumps(leak), f"{name}: read_file of a planted link is "
         "refused, nothing of its target", leak)
    t.ok((out.get("s_write") or {}).get("isError") is False and (out.get("s_write_b64") or {}).get("isError") is False,
         f"{name}: write_file with content and with content_base64", (out.get("s_write"), out.get("s_write_b64")))
    t.ok("from the agent [0, 1, 2, 255]" in texts(out.get("s_run2")), f"{name}: the next run reads both files",
         out.get("s_run2"))
    rb = [c for c in (out.get("s_read_bin") or {}).get("content", []) if c.get("type") == "resource"]
    t.ok(len(rb) == 1 and rb[0]["resource"].get("blob") == "AAEC/w==", f"{name}: read_file of bytes: a base64 resource",
         out.get("s_read_bin"))
    tr = out.get("s_traversal") or {}
    t.ok(tr.get("isError") is True and "root:" not in json.dumps(tr), f"{name}: read_file ../../etc/passwd refused", tr)
    ns = out.get("s_nosession") or {}
    t.ok(ns.get("isError") is True and "no session" in texts(ns), f"{name}: list_files of an unknown session", ns)
    t.ok(out.get("ping") is True, f"{name}: ping")
    t.ok(isinstance(out.get("unknown_tool"), dict) and out["unknown_tool"].get("code") == -32602,
         f"{name}: an unknown tool is a JSON-RPC error (-32602)", out.get("unknown_tool"))


# The plot leg needs matplotlib, in the python-data environment (tools/install-deps builds it).
_, langs = request("GET", "/v1/languages")
plot_env = next((e.get("name") for l in (langs.get("languages") or []) if l.get("name") == "python"
                 for e in (l.get("environments") or []) if e.get("name") == "python-data"), None)
if not plot_env:
    print("# no python-data environment: the matplotlib leg is left out (tools/install-deps builds it)")
out, p = run_client("stdio", SANDBOXCTL, SOCKET, env={"SANDBOXD_MCP_PLOT_ENV": plot_env} if plot_env else None)
check("stdio", out, p)
out, p = run_client("http", f"http://{HOST}:{PORT}/mcp", key)
check("http", out, p)


# ---- the transport's edges, raw ----
def raw(method, body=None, auth=True, ctype="application/json", tcp=True):
    if tcp:
        conn = http.client.HTTPConnection(HOST, PORT, timeout=60)
    else:
        conn = UnixConnection(SOCKET, timeout=60)
    h = {"Accept": "application/json, text/event-stream"}
    if ctype:
        h["Content-Type"] = ctype
    if auth and tcp:
        h["Authorization"] = f"Bearer {key}"
    conn.request(method, "/mcp", body=body, headers=h)
    r = conn.getresponse()
    data = r.read()
    conn.close()
    try:
        return r.status, json.loads(data) if data else None
    except ValueError:
        return r.status, data


st, body = raw("GET")
t.eq(st, 405, "GET /mcp: 405 (no server-initiated stream)", body)
st, body = raw("POST", json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
t.eq((st, body), (202, None), "a notification: 202 and no body")
st, body = raw("POST", json.dumps({"jsonrpc": "2.0", "id": 1, "result": {}}))
t.eq((st, body), (202, None), "a response from the client: 202 and no body")
st, body = raw("POST", json.dumps({"jsonrpc": "2.0", "id": 7, "method": "resources/list"}))
t.eq((st, (body or {}).get("id"), (body or {}).get("error", {}).get("code")), (200, 7, -32601),
     "an unknown method: -32601 with the request's id", body)
st, body = raw("POST", "{not json")
t.eq((st, (body or {}).get("error", {}).get("code")), (400, -32700), "a body that is not JSON: -32700", body)
st, body = raw("POST", json.dumps({"jsonrpc": "1.0", "id": 2, "method": "ping"}))
t.eq((st, (body or {}).get("error", {}).get("code")), (400, -32600), "not JSON-RPC 2.0: -32600", body)
st, body = raw("POST", json.dumps([{"jsonrpc": "2.0", "id": 3, "method": "ping"}]))
t.eq((st, (body or {}).get("error", {}).get("code")), (400, -32600), "a batch (not in MCP 2025-06-18): -32600", body)
st, body = raw("POST", json.dumps({"jsonrpc": "2.0", "id": 4, "method": "ping"}), auth=False)
t.eq(st, 401, "TCP without an API key: 401", body)
st, body = raw("POST", json.dumps({"jsonrpc": "2.0", "id": 5, "method": "ping"}), ctype="text/plain")
t.eq(st, 415, "a body that is not application/json: 415", body)
st, body = raw("POST", json.dumps({"jsonrpc": "2.0", "id": "s", "method": "ping"}), tcp=False)
t.eq((st, body), (200, {"jsonrpc": "2.0", "id": "s", "result": {}}), "over the unix socket: ping answers", body)
st, body = raw("POST", json.dumps({"jsonrpc": "2.0", "id": 6, "method": "tools/call",
                                   "params": {"name": "run_code", "arguments": {"language": "python"}}}), tcp=False)
t.ok(st == 200 and ((body or {}).get("error", {}).get("code") == -32602 or (body or {}).get("result", {}).get("isError")),
     "run_code without code: an invalid-params error or an isError result", body)

# The bridge's own edges: a line that is not JSON, a notification (no output), EOF ends it with 0.
p = subprocess.run([SANDBOXCTL, "--socket", SOCKET, "mcp"], input='not json\n{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
                   '{"jsonrpc":"2.0","id":9,"method":"ping"}\n', capture_output=True, text=True, timeout=60)
lines = [json.loads(l) for l in p.stdout.splitlines()]
t.eq((p.returncode, [l.get("error", {}).get("code") if "error" in l else l.get("id") for l in lines]), (0, [-32700, 9]),
     "sandboxctl mcp: -32700 for a line that is not JSON, nothing for a notification, the ping's answer, exit 0 at EOF",
     (p.stdout, p.stderr))
p = subprocess.run([SANDBOXCTL, "--socket", "/nonexistent/api.sock", "mcp"], input='{"jsonrpc":"2.0","id":1,"method":"ping"}\n',
                   capture_output=True, text=True, timeout=60)
lines = [json.loads(l) for l in p.stdout.splitlines()]
t.ok(p.returncode == 0 and len(lines) == 1 and lines[0].get("error", {}).get("code") == -32603 and
     "cannot reach sandboxd" in lines[0]["error"].get("message", ""),
     "sandboxctl mcp without a daemon: a -32603 answer, not a crash", (p.stdout, p.stderr))

os.unlink(os.path.join(CONF, "sandboxd.conf.d", "50-mcp.conf"))
t.done()

# SPDX-License-Identifier: LGPL-2.1-or-later
# The network API: a TCP listener (Listen=) that wants an API key on every request, owners that
# see only their own executions, admins that see all, the unix socket unchanged, keys reloaded on
# SIGHUP, key files that are not safe (others can read, its group can write, in a directory its
# group can write; the callback key readable by others) refused at start and at reload, keys too
# short refused, `sandboxctl key new` usable as it prints, and Listen= refused off loopback.
# Loopback only.
import hashlib
import http.client
import json
import os
import secrets
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from lib import *  # noqa: E402,F401,F403

t = Tap()
CONF = os.environ["SANDBOXD_CONFIG_DIR"]
HOST, PORT = "127.0.0.1", 18080
KEYS = os.path.join(CONF, "api-keys")
SESSION = "sess_auth_" + secrets.token_hex(4)
SESSION_B = SESSION + "_b"      # a session belongs to its creator: B has its own

key_a, key_b, key_admin, key_c = (secrets.token_urlsafe(32) for _ in range(4))


def sha(k):
    return "sha256:" + hashlib.sha256(k.encode()).hexdigest()


def write_keys(rows, mode=0o600, path=KEYS):
    with open(path, "w") as f:
        f.write("# sandboxd API keys (test-auth)\n\n")
        for name, key, admin in rows:
            f.write(f"{name} {sha(key)}{' admin' if admin else ''}\n")
    os.chmod(path, mode)


def write_auth_conf(listen=f"{HOST}:{PORT}", keys=KEYS, extra=""):
    with open(os.path.join(CONF, "sandboxd.conf.d", "50-auth.conf"), "w") as f:
        f.write(f"[Daemon]\nListen={listen}\nAPIKeysFile={keys}\n{extra}")


def reload():
    subprocess.run(["systemctl", "reload", "sandboxd.service"], check=False)


SANDBOXD = os.path.join(BUILD, "sandboxd", "sandboxd")
SANDBOXCTL = os.path.join(BUILD, "sandboxctl", "sandboxctl")


def tcp(method, path, body=None, key=None, auth=None, timeout=120):
    """Returns (status, headers, parsed JSON body) from the TCP listener."""
    conn = http.client.HTTPConnection(HOST, PORT, timeout=timeout)
    h = {"Content-Type": "application/json"}
    if key is not None:
        h["Authorization"] = f"Bearer {key}"
    if auth is not None:
        h["Authorization"] = auth
    data = json.dumps(body).encode() if body is not None else None
    conn.request(method, path, body=data, headers=h)
    resp = conn.getresponse()
    text = resp.read()
    headers = {k.lower(): v for k, v in resp.getheaders()}
    conn.close()
    try:
        return resp.status, headers, json.loads(text)
    except ValueError:
        return resp.status, headers, {"_raw": text.decode("utf-8", "replace")}


def restart():
    subprocess.run(["systemctl", "reset-failed", "sandboxd.service"], capture_output=True)
    return subprocess.run(["systemctl", "restart", "sandboxd.service"], capture_output=True, text=True).returncode


def journal():
    return subprocess.run(["journalctl", "-u", "sandboxd.service", "--no-pager", "-n", "200"],
                          capture_output=True, text=True).stdout


def listed(status_body):
    return sorted(e["execution_id"] for e in status_body.get("executions", []))


os.makedirs(os.path.join(CONF, "sandboxd.conf.d"), exist_ok=True)
write_auth_conf()

# A key file that others can read: the daemon refuses to start, and says why.
write_keys([("alice", key_a, False)], mode=0o644)
t.ok(restart() != 0, "a world-readable key file fails the start")
t.ok(wait_until(lambda: "refusing the API key file: others can read it" in journal(), 10),
     "... with a clear message", journal()[-2000:])

# A key file its group can write: whoever is in that group could add an admin key.
write_keys([("alice", key_a, False)], mode=0o660)
t.ok(restart() != 0, "a group-writable key file fails the start")
t.ok(wait_until(lambda: f"refusing the API key file: its group can write it (mode 0660); chmod g-w {KEYS}"
                in journal(), 10), "... and the journal says why and what to do", journal()[-2000:])

# A good key file in a directory its group can write: the file could be replaced.
KEYDIR = os.path.join(CONF, "keys-g+w")
os.makedirs(KEYDIR, exist_ok=True)
os.chmod(KEYDIR, 0o770)
write_keys([("alice", key_a, False)], path=os.path.join(KEYDIR, "api-keys"))
write_auth_conf(keys=os.path.join(KEYDIR, "api-keys"))
t.ok(restart() != 0, "a key file in a group-writable directory fails the start")
t.ok(wait_until(lambda: f"its group can write its directory {KEYDIR} (mode 0770)" in journal(), 10),
     "... and the journal names the directory", journal()[-2000:])
os.chmod(KEYDIR, 0o700)
t.eq(restart(), 0, "the same file once its directory is 0700: the start succeeds")
write_auth_conf()

# The callback signing key readable by others: refused at start (it used to be a warning).
CB_KEY = os.path.join(CONF, "callback-test.key")
with open(CB_KEY, "w") as f:
    f.write(secrets.token_hex(32) + "\n")
os.chmod(CB_KEY, 0o644)
CB_DROPIN = os.path.join(CONF, "sandboxd.conf.d", "51-callback-key.conf")
with open(CB_DROPIN, "w") as f:
    f.write(f"[Callbacks]\nCallbackKeyFile={CB_KEY}\n")
write_keys([("alice", key_a, False)])
t.ok(restart() != 0, "a callback key that others can read fails the start")
t.ok(wait_until(lambda: f"{CB_KEY}: refusing the callback signing key (CallbackKeyFile=): others can read it"
                in journal(), 10), "... and the journal says why", journal()[-2000:])
os.chmod(CB_KEY, 0o600)
t.eq(restart(), 0, "with mode 0600 the callback key is taken")
os.unlink(CB_DROPIN)

write_keys([("alice", key_a, False), ("bob", key_b, False), ("root-ops", key_admin, True)])
t.eq(restart(), 0, "restart with Listen= and a 0600 key file")
try:
    socket.create_connection((HOST, PORT), timeout=5).close()
except OSError as e:
    # Listen= and APIKeysFile= reach the HTTP layer through manager.c (HttpSettings.listen,
    # .api_keys_file; http_reload_auth() on SIGHUP): without that nothing below can pass.
    print(f"Bail out! no TCP listener on {HOST}:{PORT} ({e}); is Listen= wired into http_new()?", flush=True)
    sys.exit(1)

# Unauthenticated: 401, the same answer whatever was wrong.
st, hd, no_auth = tcp("GET", "/v1/health")
t.eq(st, 401, "no Authorization: 401")
t.eq(hd.get("www-authenticate"), "Bearer", "401 carries WWW-Authenticate: Bearer")
t.eq(no_auth.get("error", {}).get("code"), "unauthorized", "error code unauthorized", no_auth)
st, _, wrong = tcp("GET", "/v1/health", key=secrets.token_urlsafe(32))
t.eq(st, 401, "wrong key: 401")
t.eq(wrong, no_auth, "a wrong key gets the same body as no key")
t.eq(tcp("GET", "/v1/health", key="alice")[0], 401, "a key's name is not the key")
t.eq(tcp("GET", "/v1/health", key="")[0], 401, "empty bearer: 401")
t.eq(tcp("GET", "/v1/health", key="x" * 600)[0], 401, "over-long bearer: 401")
t.eq(tcp("GET", "/v1/health", auth=f"Basic {key_a}")[0], 401, "another scheme: 401")
st, _, res = tcp("POST", "/v1/executions?wait=true", {"language": "python", "code": "print(1)"})
t.eq(st, 401, "no key, POST: 401 and nothing runs", res)
# An unauthenticated body is never read: the 401 comes as soon as the headers are in (a client that
# waits for "100 Continue" gets it without sending anything; one that does not may see the
# connection closed while it sends).
s = socket.create_connection((HOST, PORT), timeout=30)
s.sendall(b"POST /v1/executions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
          b"Content-Length: 3145728\r\nExpect: 100-continue\r\n\r\n")
first = s.recv(4096).split(b"\r\n", 1)[0]
s.close()
t.eq(first, b"HTTP/1.1 401 Unauthorized", "no key, oversized body: 401 before the body, not 413")

# With a key.
st, _, hl = tcp("GET", "/v1/health", key=key_a)
t.eq(st, 200, "good key: health 200", hl)
t.eq(tcp("GET", "/v1/health", auth=f"bearer {key_a}")[0], 200, "the scheme is case-insensitive")
st, _, ra = tcp("POST", "/v1/executions?wait=true", {"language": "python", "code": "print('from a')",
                                                     "session_id": SESSION}, key=key_a)
t.ok(st == 200 and ra.get("status") == "success" and ra.get("stdout") == "from a\n",
     "key A runs an execution (wait=true)", ra)
id_a = ra.get("execution_id")
st, _, rb = tcp("POST", "/v1/executions", {"language": "python", "code": "import time\ntime.sleep(60)",
                                           "session_id": SESSION_B}, key=key_b)
t.eq(st, 202, "key B submits a long execution", rb)
id_b = rb.get("execution_id")

# Owners.
t.eq(tcp("GET", f"/v1/executions/{id_b}", key=key_a)[0], 404, "A cannot read B's execution (404)")
t.eq(tcp("POST", f"/v1/executions/{id_b}/cancel", key=key_a)[0], 404, "A cannot cancel B's execution (404)")
t.eq(tcp("GET", f"/v1/executions/{id_a}", key=key_a)[0], 200, "A reads its own")
t.eq(tcp("GET", f"/v1/executions/{id_a}", key=key_b)[0], 404, "B cannot read A's")
st, _, la = tcp("GET", f"/v1/executions?session_id={SESSION}", key=key_a)
t.eq((st, listed(la)), (200, [id_a]), "A lists only its own", la)
st, _, lb = tcp("GET", f"/v1/executions?session_id={SESSION}", key=key_b)
t.eq((st, listed(lb)), (200, []), "B lists none of A's", lb)
st, _, lb = tcp("GET", f"/v1/executions?session_id={SESSION_B}", key=key_b)
t.eq((st, listed(lb)), (200, [id_b]), "B lists its own", lb)
st, _, ladm = tcp("GET", f"/v1/executions?session_id={SESSION}", key=key_admin)
st2, _, ladm2 = tcp("GET", f"/v1/executions?session_id={SESSION_B}", key=key_admin)
t.eq((st, st2, sorted(listed(ladm) + listed(ladm2))), (200, 200, sorted([id_a, id_b])), "the admin key lists both",
     (ladm, ladm2))
t.eq(tcp("GET", f"/v1/executions/{id_b}", key=key_admin)[0], 200, "the admin key reads B's")

# The unix socket: root sees everything, no key needed.
st, lu = request("GET", f"/v1/executions?session_id={SESSION}")
st2, lu2 = request("GET", f"/v1/executions?session_id={SESSION_B}")
t.eq((st, st2, sorted(listed(lu) + listed(lu2))), (200, 200, sorted([id_a, id_b])),
     "root on the unix socket lists both", (lu, lu2))
t.eq(get(id_a)[0], 200, "root on the unix socket reads A's")

# Ids a caller chooses are its own (scoped by owner): B using A's execution_id or session_id gets its
# own execution or session, learns nothing of A's (no 409, no 403), and cannot squat an id A will use.
EID = "job-" + secrets.token_hex(4)
st, _, xa = tcp("POST", "/v1/executions?wait=true", {"language": "python", "code": "print('A')", "execution_id": EID},
                key=key_a)
t.ok(st == 200 and xa.get("stdout") == "A\n" and xa.get("execution_id") == EID, "A runs its execution_id", xa)
st, _, xb = tcp("POST", "/v1/executions?wait=true", {"language": "python", "code": "print('B')", "execution_id": EID},
                key=key_b)
t.ok(st == 200 and xb.get("stdout") == "B\n" and xb.get("execution_id") == EID,
     "B's execution of the same execution_id is B's own: no conflict, B's code runs", xb)
rid_a, rid_b = xa.get("record_id"), xb.get("record_id")
t.ok(rid_a and rid_b and rid_a != rid_b and EID not in (rid_a, rid_b), "two records, two derived record ids",
     (rid_a, rid_b))
# Cold: named after the record id; warm: the pool's name. Never after the caller's id.
t.ok(EID not in (xa.get("unit") or EID) and
     (xa.get("unit") == f"sandboxd-{rid_a}.service" if xa.get("start") == "cold" else
      xa.get("start") == "warm" and xa["unit"].startswith("sandboxd-warm-")),
     "the unit is named after the record id (or the warm pool), not the caller's id", xa)
st, _, ga = tcp("GET", f"/v1/executions/{EID}", key=key_a)
st2, _, gb = tcp("GET", f"/v1/executions/{EID}", key=key_b)
t.eq((st, ga.get("stdout"), st2, gb.get("stdout")), (200, "A\n", 200, "B\n"), "each reads its own by the same id",
     (ga, gb))
t.eq(tcp("GET", f"/v1/executions/{rid_a}", key=key_b)[0], 404, "B cannot read A's by its record id")
t.eq(tcp("POST", f"/v1/executions/{rid_a}/cancel", key=key_b)[0], 404, "B cannot cancel A's by its record id")
st, _, gr = tcp("GET", f"/v1/executions/{rid_a}", key=key_a)
t.ok(st == 200 and gr.get("execution_id") == EID and gr.get("record_id") == rid_a, "A reads its own by record id",
     gr)
st, _, gadm = tcp("GET", f"/v1/executions/{rid_b}", key=key_admin)
t.ok(st == 200 and gadm.get("stdout") == "B\n", "the admin key reads B's by its record id", gadm)
st, _, again = tcp("POST", "/v1/executions?wait=true",
                   {"language": "python", "code": "print('A')", "execution_id": EID}, key=key_a)
t.ok(st == 200 and again.get("record_id") == rid_a and again.get("created_at") == xa.get("created_at"),
     "A's same request again is the same execution (idempotent), B's did not change that", again)
st, _, cf_ = tcp("POST", "/v1/executions", {"language": "python", "code": "print(2)", "execution_id": EID}, key=key_a)
t.ok(st == 409 and cf_.get("error", {}).get("field") == "execution_id",
     "A's own id with another request is still a conflict", cf_)
SQUAT = "job-" + secrets.token_hex(4)
st, _, sq = tcp("POST", "/v1/executions?wait=true", {"language": "python", "code": "print('squat')",
                                                     "execution_id": SQUAT}, key=key_b)
st2, _, mine = tcp("POST", "/v1/executions?wait=true", {"language": "python", "code": "print('mine')",
                                                        "execution_id": SQUAT}, key=key_a)
t.ok(st == 200 and st2 == 200 and mine.get("stdout") == "mine\n",
     "an id B took first is still A's to use: nothing squatted", (sq, mine))
st, _, wa = tcp("POST", "/v1/executions?wait=true",
                {"language": "python", "code": "open('/workspace/a.txt', 'w').write('A secret')",
                 "session_id": SESSION}, key=key_a)
t.verdict(wa, "success", None, "A writes a file in its session")
st, _, wb = tcp("POST", "/v1/executions?wait=true",
                {"language": "python", "code": "import os\nprint(sorted(os.listdir('/workspace')))",
                 "session_id": SESSION}, key=key_b)
t.ok(st == 200 and wb.get("stdout") == "['input', 'output']\n",
     "B's session of A's session_id is B's own (no 403), a fresh workspace: none of A's files", wb)
st, _, sa_ = tcp("GET", f"/v1/sessions/{SESSION}", key=key_a)
st2, _, sb_ = tcp("GET", f"/v1/sessions/{SESSION}", key=key_b)
t.ok(st == 200 and st2 == 200 and sa_.get("record_id") and sa_.get("record_id") != sb_.get("record_id") and
     wb.get("execution_id") in sb_.get("recent_executions", []) and
     wb.get("execution_id") not in sa_.get("recent_executions", []),
     "two sessions of one name, each listing only its own runs", (sa_, sb_))
t.eq(tcp("GET", f"/v1/sessions/{sa_.get('record_id')}", key=key_b)[0], 404, "B cannot see A's session by record id")
t.eq(tcp("DELETE", f"/v1/sessions/{SESSION}", key=key_b)[0], 200, "B deletes its own session of that name")
st, _, still = tcp("GET", f"/v1/sessions/{SESSION}", key=key_a)
t.ok(st == 200 and still.get("record_id") == sa_.get("record_id"), "A's session is untouched", still)
t.eq(request("GET", "/v1/health")[0], 200, "the unix socket needs no key")

# A key (and root) may cancel its own.
st, _, rc = tcp("POST", f"/v1/executions/{id_b}/cancel", key=key_b)
t.eq(st, 202, "B cancels its own", rc)
st, _, fb = tcp("GET", f"/v1/executions/{id_b}?wait=true", key=key_b)
t.eq(fb.get("status"), "cancelled", "... and it ends cancelled", fb)

# Reload (SIGHUP): alice is gone, carol is new; bob's key keeps working.
write_keys([("bob", key_b, False), ("carol", key_c, False), ("root-ops", key_admin, True)])
subprocess.run(["systemctl", "reload", "sandboxd.service"], check=False)
t.ok(wait_until(lambda: tcp("GET", "/v1/health", key=key_c)[0] == 200, 10), "after reload: a new key works")
t.eq(tcp("GET", "/v1/health", key=key_a)[0], 401, "after reload: a removed key is refused")
t.eq(tcp("GET", "/v1/health", key=key_b)[0], 200, "after reload: a kept key works")

# sandboxctl key new: its two lines used as they are, the first as the key, the second appended to
# the key file.
r = subprocess.run([SANDBOXCTL, "key", "new", "dave"], capture_output=True, text=True)
lines = r.stdout.splitlines()
t.ok(r.returncode == 0 and len(lines) == 2 and lines[1].startswith("dave sha256:"),
     "sandboxctl key new prints the key and the line", (r.returncode, r.stdout, r.stderr))
key_d = lines[0] if lines else ""
with open(KEYS, "a") as f:
    f.write(lines[1] + "\n" if len(lines) == 2 else "")
reload()
t.ok(wait_until(lambda: tcp("GET", "/v1/health", key=key_d)[0] == 200, 10),
     "after reload: the key from sandboxctl key new works as printed")
st, _, rd = tcp("POST", "/v1/executions?wait=true", {"language": "python", "code": "print('d')"}, key=key_d)
t.ok(st == 200 and rd.get("stdout") == "d\n", "... and runs an execution as its owner", rd)

# A key too short to carry 128 bits is refused even though its hash is in the file, and the
# journal names it; an unknown short key is just unknown.
with open(KEYS, "a") as f:
    f.write(f"weak {sha('hunter2hunter2')}\n")
reload()
t.eq(tcp("GET", "/v1/health", key=key_d)[0], 200, "reloaded with a short key in the file: the others still work")
t.eq(tcp("GET", "/v1/health", key="hunter2hunter2")[0], 401, "a key shorter than 22 characters: 401")
t.ok(wait_until(lambda: "refusing API key 'weak': too short" in journal(), 10),
     "... and the journal says which key and why", journal()[-2000:])

# A reload with a broken key file keeps the previous keys.
with open(KEYS, "a") as f:
    f.write("broken line\n")
reload()
t.ok(wait_until(lambda: "keeping the previous API keys" in journal(), 10), "a broken key file at reload is reported")
t.eq(tcp("GET", "/v1/health", key=key_c)[0], 200, "... and the previous keys stay")
t.eq(subprocess.run(["systemctl", "is-active", "sandboxd.service"], capture_output=True, text=True).stdout.strip(),
     "active", "... and the daemon keeps running")

# A reload with a key file its group can write: refused, the previous keys stay.
write_keys([("carol", key_c, False), ("erin", key_a, False)], mode=0o660)
reload()
t.ok(wait_until(lambda: "its group can write it (mode 0660); chmod g-w" in journal() and
                "keeping the previous API keys" in journal(), 10),
     "a group-writable key file at reload is refused, and the journal says why", journal()[-2000:])
t.eq(tcp("GET", "/v1/health", key=key_a)[0], 401, "... its new key is not taken")
t.eq(tcp("GET", "/v1/health", key=key_c)[0], 200, "... and the previous keys stay")
os.chmod(KEYS, 0o600)

# Listen= off loopback: a configuration error with FILE:LINE, in --check-config and at start;
# ListenAllowNonLoopback=yes allows it (only checked, never bound here: this network is the host's).
auth_conf = os.path.join(CONF, "sandboxd.conf.d", "50-auth.conf")
write_auth_conf(listen=f"0.0.0.0:{PORT}")
r = subprocess.run([SANDBOXD, "--check-config", f"--config-dir={CONF}"], capture_output=True, text=True)
t.ok(r.returncode != 0 and f"{auth_conf}:2: Listen=0.0.0.0:{PORT} is not a loopback address" in r.stderr
     and "ListenAllowNonLoopback=yes" in r.stderr, "--check-config refuses Listen=0.0.0.0 with FILE:LINE",
     (r.returncode, r.stdout, r.stderr))
reload()
t.ok(wait_until(lambda: f"Listen=0.0.0.0:{PORT} is not a loopback address" in journal(), 10),
     "a reload to Listen=0.0.0.0 fails and says why", journal()[-2000:])
t.eq(tcp("GET", "/v1/health", key=key_c)[0], 200, "... and the daemon keeps serving on loopback")
write_auth_conf(listen=f"[::]:{PORT}", extra="ListenAllowNonLoopback=yes\n")
r = subprocess.run([SANDBOXD, "--check-config", f"--config-dir={CONF}"], capture_output=True, text=True)
t.eq(r.returncode, 0, "--check-config takes Listen=[::] with ListenAllowNonLoopback=yes", r.stderr)
write_auth_conf(listen=f"[::]:{PORT}")
t.ok(restart() != 0, "a start with Listen=[::] fails")
t.ok(wait_until(lambda: f"{auth_conf}:2: Listen=[::]:{PORT} is not a loopback address" in journal(), 10),
     "... and the journal names the file and line", journal()[-2000:])
write_auth_conf()
t.eq(restart(), 0, "back on loopback, it starts")

# Socket activation: sandboxd.socket passes "api-tcp"; Listen= is dropped so that the passed socket
# is the only way in. A socket with another name is passed too and must not become a listener.
unitdir = "/run/systemd/system" if os.path.isdir("/run/systemd/system") and \
    os.path.exists("/run/systemd/system/sandboxd.service") else os.path.join(os.path.dirname(CONF), "units")
SOCK_PORT, OTHER_PORT = 18081, 18082
units = {
    "sandboxd.socket": open(os.path.join(os.path.dirname(__file__), "../../units/sandboxd.socket")).read()
    .replace("ListenStream=127.0.0.1:8080", f"ListenStream={HOST}:{SOCK_PORT}"),
    "sandboxd-other.socket": f"[Socket]\nListenStream={HOST}:{OTHER_PORT}\nFileDescriptorName=other\n"
                             "Service=sandboxd.service\n",
}
for name, text in units.items():
    with open(os.path.join(unitdir, name), "w") as f:
        f.write(text)
write_keys([("bob", key_b, False), ("carol", key_c, False), ("root-ops", key_admin, True)])   # the good file again
os.unlink(os.path.join(CONF, "sandboxd.conf.d", "50-auth.conf"))
with open(os.path.join(CONF, "sandboxd.conf.d", "50-auth.conf"), "w") as f:
    f.write(f"[Daemon]\nAPIKeysFile={KEYS}\n")
subprocess.run(["systemctl", "daemon-reload"], check=True)
subprocess.run(["systemctl", "stop", "sandboxd.service"], check=False)
r = subprocess.run(["systemctl", "start", "sandboxd.socket", "sandboxd-other.socket"], capture_output=True, text=True)
t.eq(r.returncode, 0, "sandboxd.socket starts", r.stderr)
try:
    PORT = SOCK_PORT
    st, _, hl = tcp("GET", "/v1/health", key=key_c)
    t.eq(st, 200, "socket activation: the first request starts sandboxd and is served", hl)
    t.eq(tcp("GET", "/v1/health")[0], 401, "socket activation: still no request without a key")
    t.eq(tcp("GET", "/v1/health", key=key_a)[0], 401, "socket activation: a removed key is refused")
    t.eq(request("GET", "/v1/health")[0], 200, "socket activation: the unix socket as before")
    t.ok(wait_until(lambda: "API on TCP socket passed by systemd" in journal(), 5), "the passed socket is named in the log")
    # The other socket is connected (systemd listens) but nobody serves it.
    s = socket.create_connection((HOST, OTHER_PORT), timeout=2)
    s.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n")
    try:
        answer = s.recv(100)
    except (socket.timeout, TimeoutError):
        answer = None
    s.close()
    t.eq(answer, None, "a passed socket not named api-* is not served")
finally:
    subprocess.run(["systemctl", "stop", "sandboxd.socket", "sandboxd-other.socket"], check=False)
    for name in units:
        os.unlink(os.path.join(unitdir, name))
    subprocess.run(["systemctl", "daemon-reload"], check=False)

t.done()

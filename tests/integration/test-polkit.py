# SPDX-License-Identifier: LGPL-2.1-or-later
# The D-Bus API's budgets at the edges (docs/dbus-api.md, "Limits"), against the harness's real
# dbus-daemon and polkitd: an interactive polkit check whose authentication agent never answers is
# refused after InteractiveAuthorizationTimeoutSec= with InteractiveAuthorizationTimedOut (and
# polkitd is told to cancel it); with a uid's interactive budget full, its next call that needs a
# password is refused at once with TooManyInteractiveAuthorizations while another uid is served; one
# connection over MaxPendingCallsPerConnection= is refused at once while another is served.
#
# The agent: a python3-dbus object registered with polkitd (RegisterAuthenticationAgent) for the
# unix-process subject (pid, start time, uid) of the client process, whose BeginAuthentication never
# replies. polkitd 122 finds it for a system-bus-name subject through the name's pid (no logind
# session is needed for a process-bound agent). The client is GIO: python3-dbus cannot set
# ALLOW_INTERACTIVE_AUTHORIZATION on a call.
import json
import os
import pwd
import select
import subprocess
import sys

try:
    import dbus
    import gi  # noqa: F401
    from gi.repository import Gio  # noqa: F401
except ImportError:
    if os.path.exists("/usr/bin/python3") and os.path.realpath(sys.executable) != os.path.realpath("/usr/bin/python3"):
        os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
    print("1..0 # SKIP python3-dbus or python3-gi is not installed (tools/install-deps)")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(__file__))
from lib import *  # noqa: E402,F401,F403

NAME, PATH, IFACE = "io.sandboxd.Sandbox1", "/io/sandboxd/Sandbox1", "io.sandboxd.Sandbox1.Manager"
ERR = "io.sandboxd.Sandbox1.Error."
TIMED_OUT = ERR + "InteractiveAuthorizationTimedOut"
TOO_MANY = ERR + "TooManyInteractiveAuthorizations"
LIMITS = "org.freedesktop.DBus.Error.LimitsExceeded"
NOBODY = 65534
RULES = "/etc/polkit-1/rules.d/60-sandboxd-polkit-test.rules"
CONF = os.environ.get("SANDBOXD_CONFIG_DIR", "")
DROPIN = os.path.join(CONF, "sandboxd.conf.d", "50-polkit-test.conf")
PER_CONNECTION = 4

t = Tap()

# Calls of one connection with or without ALLOW_INTERACTIVE_AUTHORIZATION, all sent at once when a
# line arrives on stdin; prints its unique name and pid first, then one JSON line per answer in the
# order they come, and stays connected until stdin ends. argv: METHOD:i|n:ARGUMENT ... Its own
# timeout (30 s) only guards against a hang.
CLIENT = r"""
import json, os, sys
from gi.repository import Gio, GLib
conn = Gio.bus_get_sync(Gio.BusType.SYSTEM, None)
print(json.dumps({"name": conn.get_unique_name(), "pid": os.getpid()}), flush=True)
sys.stdin.readline()
loop = GLib.MainLoop()
left = [len(sys.argv) - 1]
def done(c, res, i):
    try:
        print(json.dumps({"i": i, "ok": c.call_finish(res).unpack()[0]}), flush=True)
    except GLib.Error as e:
        name = Gio.DBusError.get_remote_error(e) or "(client) " + e.message     # e.g. its own timeout
        print(json.dumps({"i": i, "error": name, "message": e.message}), flush=True)
    left[0] -= 1
    if not left[0]:
        loop.quit()
for i, spec in enumerate(sys.argv[1:]):
    method, mode, arg = spec.split(":", 2)
    flags = Gio.DBusCallFlags.ALLOW_INTERACTIVE_AUTHORIZATION if mode == "i" else Gio.DBusCallFlags.NONE
    conn.call("io.sandboxd.Sandbox1", "/io/sandboxd/Sandbox1", "io.sandboxd.Sandbox1.Manager", method,
              GLib.Variant("(s)", (arg,)), GLib.VariantType("(s)"), flags, 30000, None, done, i)
loop.run()
sys.stdin.read()
"""

# An authentication agent for one process that never answers BeginAuthentication; prints
# "registered" (or why not), then "begin ACTION" and "cancel" as polkitd calls it.
AGENT = r"""
import sys, dbus, dbus.service
from dbus.mainloop.glib import DBusGMainLoop
from gi.repository import GLib
DBusGMainLoop(set_as_default=True)
pid, uid = int(sys.argv[1]), int(sys.argv[2])
with open(f"/proc/{pid}/stat") as f:
    start = int(f.read().rsplit(")", 1)[1].split()[19])      # field 22, starttime
bus = dbus.SystemBus()
held = []
IFACE = "org.freedesktop.PolicyKit1.AuthenticationAgent"
class Agent(dbus.service.Object):
    @dbus.service.method(IFACE, in_signature="sssa{ss}sa(sa{sv})", out_signature="", async_callbacks=("ok", "err"))
    def BeginAuthentication(self, action_id, message, icon, details, cookie, identities, ok, err):
        held.append((ok, err))       # never answered: a user who walked away from the prompt
        print("begin", action_id, flush=True)
    @dbus.service.method(IFACE, in_signature="s", out_signature="")
    def CancelAuthentication(self, cookie):
        print("cancel", flush=True)
Agent(bus, "/io/sandboxd/test/Agent")
authority = dbus.Interface(bus.get_object("org.freedesktop.PolicyKit1", "/org/freedesktop/PolicyKit1/Authority"),
                           "org.freedesktop.PolicyKit1.Authority")
subject = ("unix-process", {"pid": dbus.UInt32(pid), "start-time": dbus.UInt64(start), "uid": dbus.Int32(uid)})
try:
    authority.RegisterAuthenticationAgent(subject, "C", "/io/sandboxd/test/Agent")
except dbus.exceptions.DBusException as e:
    print("not registered:", e.get_dbus_name(), e.get_dbus_message(), flush=True)
    sys.exit(1)
print("registered", flush=True)
GLib.MainLoop().run()
"""


def as_uid(uid, *cmd):
    return ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups"] + list(cmd)


def spawn(cmd):
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    p.pending = b""
    return p


def line(p, timeout=60):
    """The next line of p's stdout, or None after timeout (a guard against a hang, not a timing check).
    Read with os.read: a buffered readline() would hide lines already read from select()."""
    fd = p.stdout.fileno()
    while b"\n" not in p.pending:
        ready, _, _ = select.select([fd], [], [], timeout)
        chunk = os.read(fd, 65536) if ready else b""
        if not chunk:
            return None
        p.pending += chunk
    s, p.pending = p.pending.split(b"\n", 1)
    return s.decode().strip()


def client(uid, *specs):
    p = spawn(as_uid(uid, "/usr/bin/python3", "-c", CLIENT, *specs))
    hello = json.loads(line(p) or "{}")
    return p, hello


def answers(p, n, timeout=60):
    """The next n answers of a client, in the order they arrived."""
    out = []
    for _ in range(n):
        s = line(p, timeout)
        if not s:
            break
        out.append(json.loads(s))
    return out


def end(p):
    p.stdin.close()
    p.wait(timeout=60)


def py_call(uid, method, arg):
    """One non-interactive call in a process of its own, as uid: {"ok": ...} or {"error": ..., "message": ...}."""
    p, _ = client(uid, f"{method}:n:{arg}")
    p.stdin.write("go\n")
    p.stdin.flush()
    r = answers(p, 1)
    end(p)
    return r[0] if r else {"error": "no answer"}


bus = dbus.SystemBus()
if not bus.name_has_owner(NAME):
    print(f"1..0 # SKIP {NAME} is not on the system bus (host mode: the bus policy is not installed)")
    sys.exit(77)
if not os.path.isdir("/etc/polkit-1/rules.d") or not CONF:
    print("1..0 # SKIP polkitd's rules directory or SANDBOXD_CONFIG_DIR is missing")
    sys.exit(77)
try:
    other = pwd.getpwnam("daemon")
except KeyError:
    print("1..0 # SKIP no user 'daemon' for the second uid")
    sys.exit(77)
nobody = pwd.getpwuid(NOBODY).pw_name
manager = dbus.Interface(bus.get_object(NAME, PATH), IFACE)

# ---- configuration: small budgets, a short timeout ----
os.makedirs(os.path.dirname(DROPIN), exist_ok=True)
with open(DROPIN, "w") as f:
    f.write(f"[Bus]\nMaxPendingCallsPerConnection={PER_CONNECTION}\nMaxInteractiveAuthorizations=8\n"
            "MaxInteractiveAuthorizationsPerUser=2\nInteractiveAuthorizationTimeoutSec=3\n")
rc = subprocess.run(["systemctl", "reload", "sandboxd.service"], capture_output=True, text=True)
t.eq(rc.returncode, 0, "sandboxd takes the [Bus] keys (systemctl reload)", rc.stderr)

# Reading others' executions: nobody only after an administrator's password, the other uid without.
with open(RULES, "w") as f:
    f.write('polkit.addRule(function(action, subject) {\n'
            '        if (action.id != "io.sandboxd.sandbox1.read-others")\n'
            '                return polkit.Result.NOT_HANDLED;\n'
            f'        if (subject.user == "{nobody}")\n'
            '                return polkit.Result.AUTH_ADMIN;\n'
            f'        if (subject.user == "{other.pw_name}")\n'
            '                return polkit.Result.YES;\n'
            '});\n')
os.chmod(RULES, 0o644)
subprocess.run(["systemctl", "restart", "polkit.service"], check=True)

# ---- an agent that never answers: the timeout, and the budget of one uid ----
cl, hello = client(NOBODY, "GetExecution:i:exec_polkit_a", "GetExecution:i:exec_polkit_b",
                   "GetExecution:i:exec_polkit_c")
agent = spawn(["/usr/bin/python3", "-c", AGENT, str(hello.get("pid", 0)), str(NOBODY)])
registered = line(agent)
if registered != "registered":
    t.ok(False, "an authentication agent registers for the client process", registered)
    cl.kill()
    agent.kill()
    os.unlink(RULES)
    os.unlink(DROPIN)
    t.done()
t.ok(True, "an authentication agent registers with polkitd for the client process (unix-process subject)")
cl.stdin.write("go\n")
cl.stdin.flush()
first = answers(cl, 1)
t.ok(first and first[0].get("i") == 2 and first[0].get("error") == TOO_MANY,
     f"with two interactive checks of uid {NOBODY} pending (MaxInteractiveAuthorizationsPerUser=2), its third "
     f"call that needs a password is answered first, at once: {TOO_MANY}", first)
t.ok(first and "MaxInteractiveAuthorizationsPerUser" in first[0].get("message", ""),
     "... and the message names the budget", first)
# Meanwhile another uid's call through polkit (without interaction) has its answer.
r = py_call(other.pw_uid, "GetExecution", "exec_polkit_none")
t.eq(r.get("error"), ERR + "NotFound",
     f"meanwhile {other.pw_name}'s GetExecution of another's id passes polkit and is answered (NotFound)", r)
r = py_call(NOBODY, "ListExecutions", "")
t.ok("ok" in r, f"... and so is a call of {nobody} that needs no polkit (ListExecutions)", r)
rest = answers(cl, 2)
t.eq(sorted((a.get("i"), a.get("error")) for a in rest), [(0, TIMED_OUT), (1, TIMED_OUT)],
     f"the two calls waiting at the silent agent are refused after InteractiveAuthorizationTimeoutSec=: {TIMED_OUT}",
     rest)
# The client stays connected: polkitd would also cancel the checks when it goes away.
seen = []
while len([s for s in seen if s == "cancel"]) < 2:
    s = line(agent, 30)
    if s is None:
        break
    seen.append(s)
t.eq(seen.count("begin io.sandboxd.sandbox1.read-others"), 2,
     "polkitd really asked the agent, for each of the two (BeginAuthentication)", seen)
t.eq(seen.count("cancel"), 2, "after the timeout sandboxd cancelled polkitd's checks (CancelAuthentication reached "
     "the agent while the client is still connected)", seen)
end(cl)
agent.kill()
agent.wait()

# The budget is free again: an interactive call without an agent is checked interactively (polkitd
# finds no agent and answers with a challenge), not refused by the budget.
cl, _ = client(NOBODY, "GetExecution:i:exec_polkit_d")
cl.stdin.write("go\n")
cl.stdin.flush()
r = answers(cl, 1)
t.eq(r and r[0].get("error"), "org.freedesktop.DBus.Error.InteractiveAuthorizationRequired",
     "after the timeouts the uid's budget is free again (no agent: InteractiveAuthorizationRequired)", r)
end(cl)

# ---- one connection over MaxPendingCallsPerConnection= ----
held = json.dumps({"language": "bash", "code": "sleep 120", "execution_id": "exec_polkit_sender",
                   "limits": {"timeout_ms": 150000}})
n = PER_CONNECTION + 2
cl, hello = client(0, *[f"Execute:n:{held}"] * n)
cl.stdin.write("go\n")
cl.stdin.flush()
refused = answers(cl, 2)
t.eq(sorted((a.get("i"), a.get("error")) for a in refused), [(n - 2, LIMITS), (n - 1, LIMITS)],
     f"{n} Execute calls held on one connection: the last 2 are refused at once as {LIMITS}", refused)
t.ok(all("MaxPendingCallsPerConnection" in a.get("message", "") and hello.get("name", "?") in a.get("message", "")
         for a in refused) and refused, "... naming the connection and MaxPendingCallsPerConnection=", refused)
try:
    reply = manager.GetExecution("exec_polkit_none_either", timeout=60)
    err = None
except dbus.exceptions.DBusException as e:
    err = e.get_dbus_name()
t.eq(err, ERR + "NotFound", "meanwhile another connection is served (GetExecution: NotFound)")
wait_until(lambda: get("exec_polkit_sender")[0] == 200, timeout=60)
st = request("POST", "/v1/executions/exec_polkit_sender/cancel")
t.eq(st[0], 202, "the held execution is cancelled over HTTP", st)
held_answers = answers(cl, PER_CONNECTION)
t.eq(sorted(str(json.loads(a["ok"]).get("status") if "ok" in a else a.get("error")) for a in held_answers),
     ["cancelled"] * PER_CONNECTION, f"the {PER_CONNECTION} held calls are all answered, with the execution",
     held_answers)
end(cl)

os.unlink(RULES)
os.unlink(DROPIN)
subprocess.run(["systemctl", "reload", "sandboxd.service"], check=True)
t.done()

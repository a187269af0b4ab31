#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# sandboxctl's command line, without a daemon: --help (each option once per command group, with
# that group's meaning; the same options as sandboxctl(1)), and the usage errors of every option
# group with their exit status and message, as TAP. The built binary itself, nothing mocked: none
# of these cases reaches the socket, except the last, which checks that a missing daemon is a 69.
# Usage: test-sandboxctl-cli.sh SANDBOXCTL MANPAGE_MD
set -u

if [ $# -ne 2 ]; then
        echo "Usage: $0 SANDBOXCTL MANPAGE_MD" >&2
        exit 2
fi
ctl=$1
man=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# A socket path that exists nowhere: a case that would reach the daemon fails visibly.
export SANDBOXD_SOCKET=$tmp/no-daemon.sock

# As a user runs it: getopt_long() names argv[0] in its messages.
sandboxctl() { (exec -a sandboxctl "$ctl" "$@"); }

n=0
failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() {
        n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"
        shift
        for l in "$@"; do printf '# %s\n' "$l"; done
}

# check NAME RC STDERR -- ARGS...: exit status RC and exactly the one line STDERR on stderr.
check() {
        local name=$1 want_rc=$2 want_err=$3 rc err
        shift 4
        sandboxctl "$@" >"$tmp/out" 2>"$tmp/err"
        rc=$?
        err=$(cat "$tmp/err")
        if [ "$rc" = "$want_rc" ] && [ "$err" = "$want_err" ]; then
                ok "$name"
        else
                not_ok "$name" "exit status $rc, expected $want_rc" "stderr: $err" "expected: $want_err"
        fi
}

# --- --help ---
sandboxctl --help >"$tmp/help" 2>"$tmp/err"
rc=$?
[ $rc -eq 0 ] && [ -s "$tmp/help" ] && [ ! -s "$tmp/err" ] && ok "--help exits 0 and prints the help" ||
        not_ok "--help exits 0 and prints the help" "exit status $rc" "stderr: $(cat "$tmp/err")"

# The option column of every section, as "SECTION<TAB>--option": "Options:" and each "Options for ...:".
awk '/^Options/ { section = $0; next }
     /^$/ { section = ""; next }
     section != "" && match($0, /^  (-[a-z] )? *--[a-z-]+/) {
             opt = substr($0, RSTART, RLENGTH); sub(/.*--/, "--", opt); print section "\t" opt
     }' "$tmp/help" >"$tmp/help-options"
[ "$(wc -l <"$tmp/help-options")" -ge 25 ] && ok "--help lists the options in sections" ||
        not_ok "--help lists the options in sections" "found: $(tr '\n\t' ', ' <"$tmp/help-options")"

dups=$(sort "$tmp/help-options" | uniq -d | tr '\t\n' ' ,')
[ -z "$dups" ] && ok "--help lists no option twice within one section" ||
        not_ok "--help lists no option twice within one section" "twice: $dups"

# --session is one spelling with a meaning per command group: the session to run in for run and
# submit, the session whose executions to list for list. Each group says which, once.
session_lines() { awk -v s="$1" '$0 == s { on = 1; next } /^$/ { on = 0 } on && /--session=/' "$tmp/help"; }
got=$(session_lines "Options for run and submit:")
[ "$(printf '%s\n' "$got" | grep -c .)" = 1 ] && [[ $got == *"Run in this session"* ]] &&
        ok "--help: --session once for run and submit, as the session to run in" ||
        not_ok "--help: --session once for run and submit, as the session to run in" "got: $got"
got=$(session_lines "Options for list:")
[ "$(printf '%s\n' "$got" | grep -c .)" = 1 ] && [[ $got == *"Only this session's executions"* ]] &&
        ok "--help: --session once for list, as a filter" ||
        not_ok "--help: --session once for list, as a filter" "got: $got"

# The man page documents the same options as --help (its OPTIONS entries are lines "`--name...").
cut -f2 "$tmp/help-options" | sort -u >"$tmp/help-set"
sed -n '/^## OPTIONS/,/^## EXIT STATUS/p' "$man" | grep -oE '^`(-[a-z]( [A-Z]+)?`, `)?--[a-z-]+' |
        grep -oE -- '--[a-z-]+$' | sort -u >"$tmp/man-set"
if [ -s "$tmp/man-set" ] && diff "$tmp/help-set" "$tmp/man-set" >"$tmp/diff"; then
        ok "--help and sandboxctl(1) list the same options"
else
        not_ok "--help and sandboxctl(1) list the same options" "$(cat "$tmp/diff")"
fi

out=$(sandboxctl --version)
[[ $out =~ ^sandboxctl\ [0-9]+\.[0-9]+ ]] && ok "--version" || not_ok "--version" "got: $out"

# --- the command ---
check "no command" 64 "sandboxctl: Missing command. See 'sandboxctl --help'." --
check "unknown command" 64 "sandboxctl: Unknown command 'frob'. See 'sandboxctl --help'." -- frob
check "too few arguments" 64 "sandboxctl: Too few arguments for 'status'." -- status
check "too many arguments" 64 "sandboxctl: Too many arguments for 'languages'." -- languages x
check "nodes takes no arguments" 64 "sandboxctl: Too many arguments for 'nodes'." -- nodes x
check "run without code" 64 "sandboxctl: Expected FILE, '-' (standard input) or -c CODE." -- run
check "run with FILE and -c" 64 "sandboxctl: Specify either FILE, '-' or -c CODE, not several." -- run -c x f.py
check "session with a wrong subcommand" 64 \
        "sandboxctl: Use 'session show ID', 'session delete ID' or 'session list'." -- session frob x

# --- each option group refuses the commands it does not apply to ---
check "an execution option on status" 64 "sandboxctl: Option --memory-mb only applies to 'run' and 'submit'." \
        -- status --memory-mb=64 e1
check "--session on health" 64 "sandboxctl: Option --session only applies to 'run', 'submit' and 'list'." \
        -- health --session=s1
check "--wait on run" 64 "sandboxctl: Option --wait only applies to 'status' and 'show'." -- run --wait -c x
check "a list option on run" 64 "sandboxctl: Option --status only applies to 'list'." -- run --status=failed -c x
check "--all on status" 64 "sandboxctl: Option --all only applies to 'list' and 'artifacts'." -- status --all e1
check "an artifacts option on list" 64 "sandboxctl: Option -o/--output only applies to 'artifacts'." -- list -o f
check "a top option on stats" 64 "sandboxctl: Option --once only applies to 'top'." -- stats --once
check "a list option on nodes" 64 "sandboxctl: Option --status only applies to 'list'." -- nodes --status=failed
check "a stats option on top" 64 "sandboxctl: Option --window only applies to 'stats'." -- top --window=1h
check "the first offending group is named" 64 "sandboxctl: Option -c/--code only applies to 'run' and 'submit'." \
        -- list --once -c x

# --- bad values, one or more per option group ---
check "--socket empty" 64 "sandboxctl: --socket: empty path." -- --socket= health
check "--client-timeout-ms not a number" 64 \
        "sandboxctl: --client-timeout-ms: 'soon' is not a valid non-negative integer." -- --client-timeout-ms=soon health
check "--timeout-ms negative" 64 "sandboxctl: --timeout-ms: '-1' is not a valid non-negative integer." \
        -- run --timeout-ms=-1 -c x
check "--cpu-cores infinite" 64 "sandboxctl: --cpu-cores: 'inf' is not a valid number." -- run --cpu-cores=inf -c x
check "--env without =" 64 "sandboxctl: --env: expected NAME=VALUE, got 'FOO'." -- run --env=FOO -c x
check "--input without a file" 64 "sandboxctl: Failed to open $tmp/none: No such file or directory" \
        -- run --input="$tmp/none" -c x
check "--input-url without PATH" 64 "sandboxctl: --input-url: expected URL=PATH, got 'http://x/'." \
        -- run --input-url=http://x/ -c x
check "--callback-url empty" 64 "sandboxctl: --callback-url: empty URL." -- run --callback-url= -c x
check "--order unknown" 64 "sandboxctl: --order: expected 'created_at' or 'duration_ms', got 'size'." \
        -- list --order=size
check "--limit not a number" 64 "sandboxctl: --limit: 'all' is not a valid non-negative integer." -- list --limit=all
check "--session empty for list" 64 "sandboxctl: --session: empty session ID." -- list --session=
check "--dest empty" 64 "sandboxctl: --dest: empty path." -- artifacts e1 --all --dest=
check "--get with --all" 64 "sandboxctl: Use either --get=PATH or --all, not both." -- artifacts e1 --all --get=a
check "--interval too short" 64 "sandboxctl: --interval: '0.01' is not a number of seconds between 0.1 and 86400." \
        -- top --interval=0.01
check "--window without a unit it knows" 64 \
        "sandboxctl: --window: '5x' is not a time span such as 90s, 30m, 1h or 7d." -- stats --window=5x
check "an unknown option" 64 "sandboxctl: unrecognized option '--frob'" -- --frob health

# --- order: options are parsed left to right, wherever the command is ---
check "--help after a bad value: the error" 64 \
        "sandboxctl: --timeout-ms: 'x' is not a valid non-negative integer." -- run --timeout-ms=x --help
sandboxctl --help --timeout-ms=x >/dev/null 2>&1 && ok "--help before a bad value: the help, exit 0" ||
        not_ok "--help before a bad value: the help, exit 0"

# --- key new: no daemon needed ---
check "key with a wrong subcommand" 64 "sandboxctl: Use 'key new [NAME]'." -- key frob
check "key new with a bad name" 64 "sandboxctl: Invalid key name 'a/b': use 1 to 64 of A-Z a-z 0-9 _ . -" \
        -- key new a/b
check "key new with an option of run" 64 "sandboxctl: Option --memory-mb only applies to 'run' and 'submit'." \
        -- key new ci --memory-mb=1
sandboxctl key new ci >"$tmp/key" 2>"$tmp/err"
rc=$?
key=$(sed -n 1p "$tmp/key")
line=$(sed -n 2p "$tmp/key")
want="ci sha256:$(printf %s "$key" | sha256sum | cut -d' ' -f1)"
[ $rc -eq 0 ] && [ ! -s "$tmp/err" ] && [ "$(wc -l <"$tmp/key")" -eq 2 ] && [[ $key =~ ^[A-Za-z0-9_-]{43}$ ]] &&
        [ "$line" = "$want" ] &&
        ok "key new NAME: a 43-character base64url key, then 'NAME sha256:<its SHA-256>'" ||
        not_ok "key new NAME: a 43-character base64url key, then 'NAME sha256:<its SHA-256>'" "exit status $rc" \
        "stdout: $(cat "$tmp/key")" "stderr: $(cat "$tmp/err")" "expected line: $want"
sandboxctl key new >"$tmp/key2" 2>&1
key2=$(sed -n 1p "$tmp/key2")
[ "$key2" != "$key" ] && [[ $(sed -n 2p "$tmp/key2") =~ ^key-[0-9a-f]{8}\ sha256:[0-9a-f]{64}$ ]] &&
        [ "$(sed -n 2p "$tmp/key2" | cut -c5-12)" = "$(printf %s "$key2" | sha256sum | cut -c1-8)" ] &&
        ok "key new: another key, named after its hash" ||
        not_ok "key new: another key, named after its hash" "got: $(cat "$tmp/key2")"
sandboxctl --json key new ci >"$tmp/key.json" 2>&1
python3 - "$tmp/key.json" <<'PY' && ok "key new --json: name, key, hash, line" || not_ok "key new --json: name, key, hash, line" "got: $(cat "$tmp/key.json")"
import hashlib, json, sys
o = json.load(open(sys.argv[1]))
h = "sha256:" + hashlib.sha256(o["key"].encode()).hexdigest()
sys.exit(0 if sorted(o) == ["hash", "key", "line", "name"] and o["name"] == "ci" and o["hash"] == h
         and o["line"] == "ci " + h and len(o["key"]) == 43 else 1)
PY

# --- the socket ---
long=/$(printf 'a%.0s' $(seq 120))
check "a socket path too long for sun_path" 64 "sandboxctl: Socket path '$long' is too long for a unix socket." \
        -- --socket="$long" health
sandboxctl health >/dev/null 2>"$tmp/err"
rc=$?
[ $rc -eq 69 ] && grep -q "^sandboxctl: Failed to connect to sandboxd at $SANDBOXD_SOCKET" "$tmp/err" &&
        ok "no daemon on \$SANDBOXD_SOCKET: exit status 69, and says where it looked" ||
        not_ok "no daemon on \$SANDBOXD_SOCKET: exit status 69, and says where it looked" "exit status $rc" \
        "stderr: $(cat "$tmp/err")"

echo "1..$n"
[ $failed -eq 0 ]

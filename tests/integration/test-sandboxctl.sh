#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# DRAFT. sandboxctl against the real daemon; run by tests/harness/sandbox-harness, which sets
# SANDBOXD_SOCKET and SANDBOXD_BUILD_DIR. Prints TAP; exits 1 if any test failed.
set -uo pipefail

ctl=${SANDBOXD_BUILD_DIR:?not run by the harness}/sandboxctl/sandboxctl
[ -x "$ctl" ] || { echo "Bail out! no sandboxctl binary at $ctl"; exit 1; }
: "${SANDBOXD_SOCKET:?not run by the harness}"

work=$(mktemp -d /tmp/test-sandboxctl.XXXXXX)
bg_pid=
cleanup() {
        # Only the background run this script started, by its PID.
        [ -n "$bg_pid" ] && kill "$bg_pid" 2>/dev/null
        rm -rf "$work"
}
trap cleanup EXIT

n=0
failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() {
        n=$((n + 1)); failed=1
        echo "not ok $n - $1"
        shift
        for line in "$@"; do echo "#   $line"; done
        [ -s "$work/err" ] && awk '{ print "#   stderr: " $0 }' "$work/err" | head -20
}
# check DESCRIPTION EXPECTED_RC CMD...: runs CMD with stdout in $work/out, stderr in $work/err.
check_rc() {
        local desc=$1 want=$2 rc=0
        shift 2
        "$@" >"$work/out" 2>"$work/err" || rc=$?
        if [ "$rc" -eq "$want" ]; then ok "$desc"; return 0; fi
        not_ok "$desc" "exit status $rc, expected $want"
        return 1
}
json_get() { # json_get FILE PYTHON-EXPRESSION-ON-d
        python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}

# The daemon may still be starting up.
for _ in $(seq 50); do "$ctl" health >/dev/null 2>&1 && break; sleep 0.2; done

check_rc "health answers ok" 0 "$ctl" health
check_rc "health --json" 0 "$ctl" health --json &&
        { [ "$(json_get "$work/out" 'd["status"]')" = ok ] && ok "health --json status is ok" ||
                not_ok "health --json status is ok"; }

if check_rc "run -c 'print(1)' exits 0" 0 "$ctl" run -c 'print(1)'; then
        [ "$(cat "$work/out")" = 1 ] && ok "run -c 'print(1)' prints 1" ||
                not_ok "run -c 'print(1)' prints 1" "got: $(head -c 200 "$work/out")"
fi

# Output passes through byte for byte: no newline added, streams kept apart.
if check_rc "run with output on both streams" 0 "$ctl" run -c \
        'import sys; sys.stdout.write("out"); sys.stderr.write("err")'; then
        [ "$(od -An -c "$work/out")" = "$(printf out | od -An -c)" ] &&
                [ "$(od -An -c "$work/err")" = "$(printf err | od -An -c)" ] &&
                ok "stdout and stderr exact" ||
                not_ok "stdout and stderr exact" "out: $(od -An -c "$work/out")" "err: $(od -An -c "$work/err")"
fi

check_rc "runtime error: exit code passes through" 3 "$ctl" run -c 'import sys; sys.exit(3)'
check_rc "killed by a signal: 128+signal" 143 "$ctl" run -c 'import os, signal; os.kill(os.getpid(), signal.SIGTERM)'
# A syntax error is a compile_error when the runner checks the source before running it.
check_rc "syntax error exits 65" 65 "$ctl" run -c 'def ('
check_rc "timeout exits 124" 124 "$ctl" run --timeout-ms 500 -c 'import time; time.sleep(30)'

printf 'echo from-file\n' >"$work/x.sh"
check_rc "language from the file extension (.sh → bash)" 0 "$ctl" run "$work/x.sh" &&
        { [ "$(cat "$work/out")" = from-file ] && ok "bash file output" || not_ok "bash file output"; }
check_rc "code from standard input" 0 "$ctl" run - <<<'print(6*7)' &&
        { [ "$(cat "$work/out")" = 42 ] && ok "stdin code output" || not_ok "stdin code output"; }

if check_rc "run --json of a failing program keeps its exit status" 3 "$ctl" run --json -c \
        'import sys; print("x"); sys.exit(3)'; then
        st=$(json_get "$work/out" 'd["status"] + " " + d["error_type"] + " " + str(d["exit_code"])' 2>&1)
        [ "$st" = "failed runtime_error 3" ] && ok "run --json gives valid JSON with status" ||
                not_ok "run --json gives valid JSON with status" "got: $st"
fi

printf 'print(1)\xff\n' >"$work/bad.py"
check_rc "code that is not UTF-8 is refused (64)" 64 "$ctl" run "$work/bad.py"
check_rc "a limit above its ceiling is refused (69)" 69 "$ctl" run --memory-mb 99999999 -c 'print(1)' &&
        { grep -q 'memory_mb' "$work/err" && ok "the error names the field" ||
                not_ok "the error names the field"; }
check_rc "status of an unknown execution exits 4" 4 "$ctl" status exec_does_not_exist
check_rc "usage error exits 64" 64 "$ctl" status

# submit, then status --wait.
if check_rc "submit prints an id" 0 "$ctl" submit -c 'print("queued")'; then
        id=$(cat "$work/out")
        if check_rc "status --wait $id" 0 "$ctl" status --wait --json "$id"; then
                st=$(json_get "$work/out" 'd["status"] + ":" + d["stdout"]' 2>&1)
                [ "$st" = "success:queued" ] && ok "submitted execution succeeded" ||
                        not_ok "submitted execution succeeded" "got: $st"
        fi
        check_rc "status (human) $id" 0 "$ctl" status "$id" &&
                { grep -q "Status: success" "$work/out" && ok "human status shows Status" ||
                        not_ok "human status shows Status"; }
        check_rc "cancel of a finished execution exits 69" 69 "$ctl" cancel "$id"
fi

# Cancel a waiting run from a second process: the run exits 130, the status is cancelled.
cid=test_cancel_$$
"$ctl" run --id "$cid" -c 'import time; time.sleep(60)' >"$work/bg-out" 2>"$work/bg-err" &
bg_pid=$!
running=
for _ in $(seq 100); do
        if "$ctl" status --json "$cid" >"$work/st" 2>/dev/null &&
           [ "$(json_get "$work/st" 'd["status"]' 2>/dev/null)" = running ]; then
                running=1
                break
        fi
        sleep 0.1
done
[ -n "$running" ] && ok "long run is running" || not_ok "long run is running"
check_rc "cancel $cid" 0 "$ctl" cancel "$cid"
rc=0
wait "$bg_pid" || rc=$?
bg_pid=
[ "$rc" -eq 130 ] && ok "cancelled run exits 130" || not_ok "cancelled run exits 130" "exit status $rc"
check_rc "status of the cancelled execution" 0 "$ctl" status --wait --json "$cid" &&
        { [ "$(json_get "$work/out" 'd["status"]')" = cancelled ] && ok "status is cancelled" ||
                not_ok "status is cancelled"; }

# list and show: three executions in one session, one of them failing. The session and execution
# IDs are unique to this run, so executions of earlier runs in the same store do not count.
lsess=sess_ctl_list_$$
lid_a=ctl_list_a_$$ lid_b=ctl_list_b_$$ lid_c=ctl_list_c_$$
check_rc "list: run $lid_a in $lsess" 0 "$ctl" run --session "$lsess" --id "$lid_a" -c 'print("list-a")'
check_rc "list: run $lid_b in $lsess" 0 "$ctl" run --session "$lsess" --id "$lid_b" -c 'print("list-b")'
check_rc "list: run $lid_c in $lsess (fails)" 5 "$ctl" run --session "$lsess" --id "$lid_c" -c 'import sys; sys.exit(5)'
ids_sorted=$(printf '%s\n' "$lid_a" "$lid_b" "$lid_c" | sort | tr '\n' ' ')

if check_rc "list --session --json" 0 "$ctl" list --session "$lsess" --json; then
        got=$(json_get "$work/out" '" ".join(sorted(e["execution_id"] for e in d["executions"])) + " "' 2>&1)
        [ "$got" = "$ids_sorted" ] && ok "list --session --json has the 3 executions" ||
                not_ok "list --session --json has the 3 executions" "got: $got"
        got=$(json_get "$work/out" 'all("stdout" not in e and "stdout_bytes" in e for e in d["executions"])' 2>&1)
        [ "$got" = True ] && ok "listed executions carry counts, not output" ||
                not_ok "listed executions carry counts, not output" "got: $got"
fi
if check_rc "list --session --failed --json" 0 "$ctl" list --session "$lsess" --failed --json; then
        got=$(json_get "$work/out" '" ".join(e["execution_id"] + ":" + e["status"] for e in d["executions"])' 2>&1)
        [ "$got" = "$lid_c:failed" ] && ok "list --failed has only the failed execution" ||
                not_ok "list --failed has only the failed execution" "got: $got"
fi
if check_rc "list --session --error-type=runtime_error --json" 0 \
        "$ctl" list --session "$lsess" --error-type runtime_error --json; then
        got=$(json_get "$work/out" 'len(d["executions"])' 2>&1)
        [ "$got" = 1 ] && ok "list --error-type filters" || not_ok "list --error-type filters" "got: $got"
fi
if check_rc "list --session (table)" 0 "$ctl" list --session "$lsess"; then
        missing=
        for i in "$lid_a" "$lid_b" "$lid_c"; do grep -q "^$i " "$work/out" || missing="$missing $i"; done
        [ -z "$missing" ] && ok "the table lists the 3 ids" || not_ok "the table lists the 3 ids" "missing:$missing"
        { head -1 "$work/out" | grep -q '^EXECUTION  *SESSION  *LANGUAGE  *STATUS  *ERROR  *EXIT  *DURATION  *PEAK MEM  *CREATED$' &&
                grep -q '^3 executions listed\.$' "$work/out" && ! grep -q '^More:' "$work/out"; } &&
                ok "the table has its header and footer" ||
                not_ok "the table has its header and footer" "got: $(head -c 600 "$work/out")"
fi
if check_rc "list --limit 1 --all --json" 0 "$ctl" list --session "$lsess" --limit 1 --all --json; then
        got=$(json_get "$work/out" '" ".join(sorted(e["execution_id"] for e in d["executions"])) + " " + str(d["next_cursor"])' 2>&1)
        [ "$got" = "${ids_sorted}None" ] && ok "list --limit 1 --all follows the cursor to all 3" ||
                not_ok "list --limit 1 --all follows the cursor to all 3" "got: $got"
fi
check_rc "list --limit 1 --all (table)" 0 "$ctl" list --session "$lsess" --limit 1 --all &&
        { grep -q '^3 executions listed\.$' "$work/out" && ok "list --all table lists 3" ||
                not_ok "list --all table lists 3" "got: $(head -c 600 "$work/out")"; }
# One page by hand: --limit 1 gives a cursor, and --cursor gives the next, different execution.
if check_rc "list --limit 1 --json" 0 "$ctl" list --session "$lsess" --limit 1 --json; then
        first=$(json_get "$work/out" 'd["executions"][0]["execution_id"]' 2>&1)
        cursor=$(json_get "$work/out" 'd["next_cursor"]' 2>&1)
        if check_rc "list --cursor" 0 "$ctl" list --session "$lsess" --limit 1 --cursor "$cursor" --json; then
                second=$(json_get "$work/out" 'd["executions"][0]["execution_id"]' 2>&1)
                [ "$first" != "$second" ] && [ "$ids_sorted" != "${ids_sorted/$second/}" ] &&
                        ok "the next page has another execution of the session" ||
                        not_ok "the next page has another execution of the session" "first: $first" "second: $second"
        fi
fi
check_rc "list --limit 1 (table)" 0 "$ctl" list --session "$lsess" --limit 1 &&
        { grep -q '^More: --cursor=.* or --all$' "$work/out" && ok "the table says there is more" ||
                not_ok "the table says there is more" "got: $(head -c 600 "$work/out")"; }
check_rc "list of an empty session exits 0" 0 "$ctl" list --session "sess_ctl_empty_$$" &&
        { grep -q '^0 executions listed\.$' "$work/out" && ok "empty list says 0 executions listed" ||
                not_ok "empty list says 0 executions listed" "got: $(head -c 300 "$work/out")"; }
check_rc "list --limit 0 is refused by the daemon (69)" 69 "$ctl" list --limit 0
check_rc "list with a forged cursor exits 69" 69 "$ctl" list --cursor 'forged!cursor'
check_rc "list --order with a bad value exits 64" 64 "$ctl" list --order name
check_rc "list with an argument exits 64" 64 "$ctl" list extra
check_rc "list option with another command exits 64" 64 "$ctl" status --all "$lid_a"
if check_rc "show $lid_a" 0 "$ctl" show "$lid_a"; then
        { grep -q "Execution: $lid_a\$" "$work/out" && grep -q '^-- stdout' "$work/out" &&
                grep -qx 'list-a' "$work/out"; } && ok "show prints the record and the run's stdout" ||
                not_ok "show prints the record and the run's stdout" "got: $(head -c 600 "$work/out")"
fi
check_rc "show --json $lid_c" 0 "$ctl" show --json "$lid_c" &&
        { [ "$(json_get "$work/out" 'd["status"] + ":" + str(d["exit_code"])')" = failed:5 ] &&
                ok "show --json gives the failed execution" || not_ok "show --json gives the failed execution"; }
check_rc "show of an unknown execution exits 4" 4 "$ctl" show exec_does_not_exist

check_rc "languages" 0 "$ctl" languages &&
        { grep -q '^python ' "$work/out" && ok "languages lists python" || not_ok "languages lists python"; }
check_rc "languages --json" 0 "$ctl" languages --json &&
        { json_get "$work/out" '[l["name"] for l in d["languages"]]' | grep -q python &&
                ok "languages --json lists python" || not_ok "languages --json lists python"; }

# SANDBOXD_SOCKET is honoured, and --socket wins over it.
check_rc "SANDBOXD_SOCKET pointing nowhere exits 69" 69 env SANDBOXD_SOCKET="$work/nope.sock" "$ctl" health &&
        { grep -q "$work/nope.sock" "$work/err" && ok "the error names the socket" ||
                not_ok "the error names the socket"; }
check_rc "--socket overrides SANDBOXD_SOCKET" 0 \
        env SANDBOXD_SOCKET="$work/nope.sock" "$ctl" --socket "$SANDBOXD_SOCKET" health

# A remote daemon: --url (or $SANDBOXD_URL) to a keyed TCP listener, the key from --api-key-file or
# $SANDBOXD_API_KEY, never on the command line.
port=18097
key=$(python3 -c 'import secrets; print(secrets.token_urlsafe(32))')
mkdir -p "$SANDBOXD_CONFIG_DIR/sandboxd.conf.d"
printf 'remote sha256:%s\n' "$(printf %s "$key" | sha256sum | cut -d' ' -f1)" > "$SANDBOXD_CONFIG_DIR/api-keys"
chmod 600 "$SANDBOXD_CONFIG_DIR/api-keys"
printf '[Daemon]\nListen=127.0.0.1:%s\nAPIKeysFile=%s\n' "$port" "$SANDBOXD_CONFIG_DIR/api-keys" \
        > "$SANDBOXD_CONFIG_DIR/sandboxd.conf.d/50-remote.conf"
systemctl restart sandboxd.service
for _ in $(seq 100); do "$ctl" health >/dev/null 2>&1 && break; sleep 0.2; done
printf '%s\n' "$key" > "$work/key"
url=http://127.0.0.1:$port
if check_rc "--url with --api-key-file: run -c 'print(6*7)'" 0 "$ctl" --url "$url" --api-key-file "$work/key" run -c 'print(6*7)'; then
        [ "$(cat "$work/out")" = 42 ] && ok "over TCP it prints 42" || not_ok "over TCP it prints 42" "got: $(head -c 200 "$work/out")"
fi
check_rc "SANDBOXD_URL and SANDBOXD_API_KEY: health" 0 env SANDBOXD_URL="$url/" SANDBOXD_API_KEY="$key" "$ctl" health
if check_rc "over TCP: submit a run that writes an artifact" 0 env SANDBOXD_URL="$url" SANDBOXD_API_KEY="$key" \
        "$ctl" run --json -c 'open("/workspace/output/r.txt", "w").write("remote\n")'; then
        rid=$(json_get "$work/out" 'd["execution_id"]')
        mkdir -p "$work/dl"
        check_rc "over TCP: artifacts download (a signed URL on the same listener)" 0 \
                env SANDBOXD_URL="$url" SANDBOXD_API_KEY="$key" "$ctl" artifacts "$rid" --all --dest "$work/dl" &&
                { [ "$(cat "$work/dl/r.txt" 2>/dev/null)" = remote ] && ok "the artifact came over TCP" ||
                        not_ok "the artifact came over TCP" "$(ls -la "$work/dl")"; }
        check_rc "over TCP: the key's own execution is listed" 0 env SANDBOXD_URL="$url" SANDBOXD_API_KEY="$key" \
                "$ctl" list --json &&
                { [ "$(json_get "$work/out" "len(d['executions']) == 2 and '$rid' in [e['execution_id'] for e in d['executions']]")" = True ] &&
                        ok "over TCP the list is the key's (its two runs), not the socket's" ||
                        not_ok "over TCP the list is the key's (its two runs), not the socket's" "$(head -c 600 "$work/out")"; }
fi
check_rc "--url without a key: 401, exit 69" 69 "$ctl" --url "$url" health &&
        { grep -qi "api key" "$work/err" && ok "the error says an API key is needed" ||
                not_ok "the error says an API key is needed"; }
check_rc "--url with a wrong key exits 69" 69 env SANDBOXD_API_KEY=not-the-key-but-long-enough-000000 "$ctl" --url "$url" health
check_rc "--url to a closed port exits 69" 69 env SANDBOXD_API_KEY="$key" "$ctl" --url http://127.0.0.1:1 health &&
        { grep -q "http://127.0.0.1:1" "$work/err" && ok "the error names the URL" || not_ok "the error names the URL"; }
check_rc "--url with a path is refused (64)" 64 "$ctl" --url "$url/v1" health
check_rc "--url of another scheme is refused (64)" 64 "$ctl" --url "ftp://127.0.0.1:$port" health
printf 'two words\n' > "$work/badkey"
check_rc "a key file whose first line is not a key is refused (64)" 64 "$ctl" --url "$url" --api-key-file "$work/badkey" health
check_rc "a missing key file is refused (64)" 64 "$ctl" --url "$url" --api-key-file "$work/nokey" health
rm -f "$SANDBOXD_CONFIG_DIR/sandboxd.conf.d/50-remote.conf"
systemctl restart sandboxd.service
for _ in $(seq 100); do "$ctl" health >/dev/null 2>&1 && break; sleep 0.2; done

echo "1..$n"
exit $failed

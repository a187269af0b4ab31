#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# sandboxd under a real systemd: READY, STATUS, reload on SIGHUP, clean stop and restart, and
# configuration errors that name file and line.
set -u
n=0; failed=0
ok() { n=$((n+1)); if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; failed=$((failed+1)); [ -n "${3:-}" ] && echo "$3" | sed 's/^/# /'; fi; }
check() { local name=$1; shift; if "$@" >/dev/null 2>&1; then ok 0 "$name"; else ok 1 "$name"; fi; }

build=${SANDBOXD_BUILD_DIR:?}
conf=${SANDBOXD_CONFIG_DIR:?}

check "sandboxd.service is active (READY=1 received, Type=notify)" test "$(systemctl show -P ActiveState sandboxd.service)" = active
status=$(systemctl show -P StatusText sandboxd.service)
check "STATUS= is reported ('$status')" test -n "$status"
check "the API socket exists" test -S /run/sandboxd/api.sock
check "health answers" curl -sf --unix-socket /run/sandboxd/api.sock http://l/v1/health
check "the watchdog is armed" test "$(systemctl show -P WatchdogUSec sandboxd.service)" != 0
pid=$(systemctl show -P MainPID sandboxd.service)

# Reload on SIGHUP (systemctl reload sends it): same process, new configuration.
mkdir -p "$conf/sandboxd.conf.d"
printf '[Daemon]\nMaxConcurrent=3\n' > "$conf/sandboxd.conf.d/50-lifecycle.conf"
check "systemctl reload succeeds" systemctl reload sandboxd.service
check "reload kept the process" test "$(systemctl show -P MainPID sandboxd.service)" = "$pid"
check "reload applied MaxConcurrent=3" sh -c "curl -s --unix-socket /run/sandboxd/api.sock http://l/v1/health | grep -q '\"slots\":3'"
check "reload is logged" sh -c "journalctl -u sandboxd.service -o cat --no-pager | grep -q 'Configuration reloaded'"

# systemctl reload waits for the daemon: with it stopped, the reload job stays open; once it runs
# again, the reload returns with the new configuration already in force.
printf '[Daemon]\nMaxConcurrent=5\n' > "$conf/sandboxd.conf.d/50-lifecycle.conf"
kill -STOP "$pid"
systemctl reload sandboxd.service & rpid=$!
sleep 2
check "systemctl reload does not return while the daemon has not reloaded" kill -0 "$rpid"
kill -CONT "$pid"
wait "$rpid"; rc=$?
ok "$rc" "the waiting reload succeeds" "rc=$rc"
check "the reload was in force when systemctl returned (MaxConcurrent=5)" sh -c "curl -s --unix-socket /run/sandboxd/api.sock http://l/v1/health | grep -q '\"slots\":5'"
# A configuration that does not load: systemctl reload fails, the previous one stays.
printf '[Daemon]\nMaxConcurrent=lots\n' > "$conf/sandboxd.conf.d/50-lifecycle.conf"
if systemctl reload sandboxd.service 2>/dev/null; then ok 1 "a reload of a broken configuration fails"; else ok 0 "a reload of a broken configuration fails"; fi
check "... and the previous configuration stays (MaxConcurrent=5)" sh -c "curl -s --unix-socket /run/sandboxd/api.sock http://l/v1/health | grep -q '\"slots\":5'"
check "... the service stays active" test "$(systemctl show -P ActiveState sandboxd.service)" = active
printf '[Daemon]\nMaxConcurrent=3\n' > "$conf/sandboxd.conf.d/50-lifecycle.conf"
check "a good reload after the bad one" systemctl reload sandboxd.service

# A configuration error names the file and the line: --check-config, and a failing start.
printf '[Daemon]\n# comment\nMaxConcurrent=2\nFrobnicate=yes\n' > "$conf/sandboxd.conf.d/70-bad.conf"
out=$("$build/sandboxd/sandboxd" --check-config --config-dir="$conf" 2>&1); rc=$?
expect="$conf/sandboxd.conf.d/70-bad.conf:4: unknown key 'Frobnicate' in section [Daemon]"
ok $([ $rc -ne 0 ] && [ "$out" = "$expect" ] && echo 0 || echo 1) "--check-config names file:line of an unknown key" "rc=$rc out=$out"
printf '[Limits]\nMaxMemoryMB=lots\n' > "$conf/sandboxd.conf.d/70-bad.conf"
out=$("$build/sandboxd/sandboxd" --check-config --config-dir="$conf" 2>&1)
ok $(echo "$out" | grep -q "70-bad.conf:2: MaxMemoryMB= takes a whole number, got 'lots'" && echo 0 || echo 1) "bad value names file:line" "$out"

# Stop: clean exit, socket gone, no units left.
systemctl stop sandboxd.service
check "stop: inactive" test "$(systemctl show -P ActiveState sandboxd.service)" = inactive
check "stop: exited cleanly (Result=success)" test "$(systemctl show -P Result sandboxd.service)" = success
check "stop: main process gone" sh -c "! kill -0 $pid 2>/dev/null"

# A start with the bad drop-in fails, and says why in the journal.
if systemctl start sandboxd.service 2>/dev/null; then ok 1 "start with a bad configuration fails"; else ok 0 "start with a bad configuration fails"; fi
check "the journal says which file and line" sh -c "journalctl -u sandboxd.service -o cat --no-pager | grep -q \"70-bad.conf:2: MaxMemoryMB=\""
rm -f "$conf/sandboxd.conf.d/70-bad.conf"
systemctl reset-failed sandboxd.service 2>/dev/null

check "start again" systemctl start sandboxd.service
check "runs code after a restart" sh -c "curl -sf --unix-socket /run/sandboxd/api.sock -H 'Content-Type: application/json' -d '{\"language\":\"bash\",\"code\":\"echo again\"}' 'http://l/v1/executions?wait=true' | grep -q '\"stdout\":\"again\\\\n\"'"

# The sweep at start: a sandboxd-*.service unit nobody tracks (left by a crash) is stopped.
systemctl stop sandboxd.service
systemd-run --quiet --unit=sandboxd-stray_leftover.service --slice=sandboxd.slice /bin/sleep 300
check "a stray execution unit runs while sandboxd is down" test "$(systemctl show -P ActiveState sandboxd-stray_leftover.service)" = active
systemctl start sandboxd.service
for _ in $(seq 1 50); do [ "$(systemctl show -P ActiveState sandboxd-stray_leftover.service)" = active ] || break; sleep 0.1; done
check "the start-up sweep stopped the stray unit" test "$(systemctl show -P ActiveState sandboxd-stray_leftover.service)" != active
check "the sweep is logged" sh -c "journalctl -u sandboxd.service -o cat --no-pager | grep -q 'stopping leftover unit sandboxd-stray_leftover.service'"

# SIGTERM while an execution runs: the daemon exits promptly and the execution goes on under
# systemd. A restart adopts it with its output; a stop+start adopts it without (systemd 252 drops
# the fd store on stop) but still gives it a verdict from the unit.
api() { curl -s --unix-socket /run/sandboxd/api.sock -H 'Content-Type: application/json' "$@"; }
id1=$(api -d '{"language":"python","code":"import time\nprint(1, flush=True)\ntime.sleep(2)\nprint(2)"}' http://l/v1/executions | python3 -c 'import json,sys; print(json.load(sys.stdin)["execution_id"])')
sleep 0.7
start=$(date +%s%N)
systemctl restart sandboxd.service
ms=$(( ($(date +%s%N) - start) / 1000000 ))
echo "# restart with a running execution took $ms ms"
out=$(api "http://l/v1/executions/$id1?wait=true")
ok $(echo "$out" | python3 -c 'import json,sys; r=json.load(sys.stdin); sys.exit(0 if r["status"]=="success" and r["stdout"]=="1\n2\n" else 1)' && echo 0 || echo 1) "restart: the running execution is adopted and finishes with its full output" "$out"

id2=$(api -d '{"language":"python","code":"import time\ntime.sleep(6)\nraise SystemExit(3)"}' http://l/v1/executions | python3 -c 'import json,sys; print(json.load(sys.stdin)["execution_id"])')
# Running (its unit started), not merely submitted: on a slow machine a fixed delay is not enough.
for _ in $(seq 1 200); do
        st2=$(api "http://l/v1/executions/$id2" | python3 -c 'import json,sys; print(json.load(sys.stdin)["status"])')
        [ "$st2" = running ] && break
        sleep 0.05
done
# Its unit, as the record names it (a warm unit has a name of its own).
unit2=$(api "http://l/v1/executions/$id2" | python3 -c 'import json,sys; print(json.load(sys.stdin)["unit"])')
systemctl stop sandboxd.service
check "stop: the execution's unit keeps running" test "$(systemctl show -P ActiveState "$unit2")" = active
systemctl start sandboxd.service
out=$(api "http://l/v1/executions/$id2?wait=true")
ok $(echo "$out" | python3 -c 'import json,sys; r=json.load(sys.stdin); sys.exit(0 if r["status"]=="failed" and r["exit_code"]==3 and "stopped" in r["reason"] else 1)' && echo 0 || echo 1) "stop+start: adopted, verdict from the unit's exit status, the reason says output was lost" "$out"
# The warm pool's unclaimed units (GET /v1/health) are nobody's execution: asked before and after the
# listing, so a unit that joined or left the pool meanwhile is not taken for a leftover.
pool_units() { api http://l/v1/health | python3 -c 'import json,sys; print("\n".join(json.load(sys.stdin).get("pool", {}).get("units", [])))' 2>/dev/null || true; }
for _ in $(seq 1 50); do
        p1=$(pool_units)
        units=$(systemctl list-units --all --plain --no-legend 'sandboxd-*' | awk '$3 == "active" || $3 == "deactivating" || $3 == "failed" {print $1}' | sort)
        p2=$(pool_units)
        left=$(comm -23 <(echo "$units" | sed '/^$/d') <(printf '%s\n%s\n' "$p1" "$p2" | sed '/^$/d' | sort -u))
        [ -z "$left" ] && break
        sleep 0.1
done
ok $([ -z "$left" ] && echo 0 || echo 1) "no execution unit is left" "$left"

echo "1..$n"
echo "# $((n-failed)) passed, $failed failed"
[ $failed = 0 ]

#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The harness must never touch the host: booting the private systemd twice, and killing the
# harness midway (SIGTERM and SIGKILL), leaves /tmp, /run and the mount table as they were and no
# systemd, dbus-daemon or journald behind.
set -u
build=${1:?usage: test-harness-safety.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
harness=$here/../harness/sandbox-harness
n=0; failed=0
ok() { n=$((n+1)); if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; failed=$((failed+1)); [ -n "${3:-}" ] && echo "$3" | sed 's/^/# /'; fi; }

[ "$(id -u)" = 0 ] || { echo "1..0 # SKIP needs root (namespaces, systemd as PID 1)"; exit 77; }
if [ "$(cat /proc/1/comm)" = systemd ]; then
        echo "1..0 # SKIP PID 1 is systemd: the harness uses the host's systemd, nothing to check"; exit 77
fi

canary=$(mktemp /tmp/harness-canary.XXXXXX); echo "still here" > "$canary"
# What a full boot's systemd-tmpfiles would take: entries of the host's /tmp old enough to be
# "aged out" (files and a directory tree, 60 days old). Only these and the harness's own names are
# judged below; whatever else comes and goes in /tmp and /var/tmp meanwhile is not the harness's.
aged=$(mktemp -d /tmp/harness-aged.XXXXXX)
mkdir -p "$aged/sub" && echo old > "$aged/sub/file" && echo old > "$aged/file"
touch -d '60 days ago' "$aged/sub/file" "$aged/file" "$aged/sub" "$aged"
snapshot() {
        ls -A /tmp | sort > "$1.tmp"
        ls -A /run | sort > "$1.run"
        findmnt -rn -o TARGET,SOURCE,FSTYPE | sort > "$1.mounts"
        ls -A /var/tmp | sort > "$1.vartmp"
        ls -d /var/lib/sandbox-harness/run.* 2>/dev/null | sort > "$1.state"
}
hierarchies=$(findmnt -rn -t cgroup,cgroup2 -o TARGET)
# The cgroup trees a harness made (sandbox-harness.PID in any hierarchy), and the processes in them.
trees() { for h in $hierarchies; do [ -d "$h/sandbox-harness.$1" ] && echo "$h/sandbox-harness.$1"; done; true; }
procs_of() { for d in $(trees "$1"); do find "$d" -name cgroup.procs -exec cat {} + 2>/dev/null; done | sort -u; }
ours() { # processes of the kinds the harness starts, in the cgroup trees of the harnesses this test ran
        local p
        for p in $harness_pids; do
                for q in $(procs_of "$p"); do ps -o pid=,comm= -p "$q" 2>/dev/null; done
        done | awk '$2 == "systemd" || $2 == "dbus-daemon" || $2 == "systemd-journal" || $2 == "sandboxd" {print}'
}
harness_pids=
work=$(mktemp -d /var/tmp/harness-safety.XXXXXX)
trap 'rm -rf "$work" "$canary" "$aged"' EXIT
snapshot "$work/before"

# Twice in a row, each really booting systemd and running code, in its own cgroup tree.
inside='systemctl is-active sandboxd.service && test "$(cat /proc/1/comm)" = systemd && touch /tmp/inside-only &&
        grep -E "^[0-9]+:(name=systemd)?:" /proc/1/cgroup | head -1 && echo inside-ok'
for i in 1 2; do
        out=$("$harness" --build "$build" -- sh -c "$inside" 2>&1)
        ok $(echo "$out" | grep -q inside-ok && echo 0 || echo 1) "harness run $i boots systemd and sandboxd" "$out"
        root=$(echo "$out" | sed -n 's|^[0-9]*:[^:]*:\(/sandbox-harness\.[0-9]*\)/init.scope$|\1|p')
        ok $([ -n "$root" ] && echo 0 || echo 1) "run $i: the private systemd's root is its own cgroup (${root:-none})" "$out"
        left=$([ -n "$root" ] && trees "${root##*.}")
        ok $([ -n "$root" ] && [ -z "$left" ] && echo 0 || echo 1) "run $i: its cgroup tree is gone after the run" "$left"
done
ok $([ ! -e /tmp/inside-only ] && echo 0 || echo 1) "a file made in the harness' /tmp is not in the host's /tmp"
leftovers=$(for h in $hierarchies; do ls -d "$h"/system.slice/sandboxd-* "$h"/sandboxd.slice/sandboxd-* 2>/dev/null; done | wc -l)
echo "# cgroups left at the hierarchies' top by harnesses of before (not by this one): $leftovers"

# Two at once: each in its own tree, both run code.
"$harness" --build "$build" -- sh -c 'sleep 2; curl -sf --unix-socket /run/sandboxd/api.sock -H "Content-Type: application/json" \
        -d "{\"language\":\"bash\",\"code\":\"echo one\"}" "http://l/v1/executions?wait=true"' > "$work/one.out" 2>&1 &
p1=$!
"$harness" --build "$build" -- sh -c 'sleep 2; curl -sf --unix-socket /run/sandboxd/api.sock -H "Content-Type: application/json" \
        -d "{\"language\":\"bash\",\"code\":\"echo two\"}" "http://l/v1/executions?wait=true"' > "$work/two.out" 2>&1 &
p2=$!
harness_pids="$p1 $p2"
for _ in $(seq 1 100); do [ -n "$(procs_of $p1)" ] && [ -n "$(procs_of $p2)" ] && break; sleep 0.1; done
ok $([ -n "$(trees $p1)" ] && [ -n "$(trees $p2)" ] && [ "$(trees $p1)" != "$(trees $p2)" ] && echo 0 || echo 1) \
        "two harnesses at once have two cgroup trees" "$(trees $p1) / $(trees $p2)"
wait $p1; r1=$?
wait $p2; r2=$?
ok $([ $r1 = 0 ] && grep -q '"stdout":"one\\n"' "$work/one.out" && [ $r2 = 0 ] && grep -q '"stdout":"two\\n"' "$work/two.out" && echo 0 || echo 1) \
        "both ran their execution" "$(cat "$work/one.out" "$work/two.out")"
ok $([ -z "$(trees $p1)$(trees $p2)" ] && echo 0 || echo 1) "both trees are gone" "$(trees $p1) $(trees $p2)"

# A checkout and build directory under /tmp (which the harness covers with a private tmpfs): the
# harness carries them in. The parts of the tree it uses, and the four binaries.
co=$(mktemp -d /tmp/harness-checkout.XXXXXX)
mkdir -p "$co/tests" "$co/build/sandboxd" "$co/build/sandbox-exec" "$co/build/sandboxd-net" "$co/build/sandboxctl"
cp -r "$here/../harness" "$co/tests/"
cp -r "$here/../../units" "$here/../../dbus" "$here/../../polkit" "$here/../../languages" "$co/"
cp "$build/sandboxd/sandboxd" "$co/build/sandboxd/"; cp "$build/sandbox-exec/sandbox-exec" "$co/build/sandbox-exec/"
cp "$build/sandboxd-net/sandboxd-net" "$co/build/sandboxd-net/"; cp "$build/sandboxctl/sandboxctl" "$co/build/sandboxctl/"
out=$(cd "$co/build" && "$co/tests/harness/sandbox-harness" --build "$co/build" -- sh -c \
        'curl -sf --unix-socket /run/sandboxd/api.sock -H "Content-Type: application/json" -d "{\"language\":\"bash\",\"code\":\"echo carried\"}" "http://l/v1/executions?wait=true" && test -x "$PWD/sandboxd/sandboxd"' 2>&1)
ok $(echo "$out" | grep -q '"stdout":"carried\\n"' && echo 0 || echo 1) "a checkout under /tmp runs under the harness" "$out"
ok $([ -x "$co/build/sandboxd/sandboxd" ] && [ -f "$co/tests/harness/sandbox-harness" ] && echo 0 || echo 1) \
        "... and is still there afterwards"
rm -rf "$co"

# Killed midway: SIGTERM, then SIGKILL (setpriv --pdeathsig takes the namespace down).
for sig in TERM KILL; do
        "$harness" --build "$build" -- sleep 300 >/dev/null 2>&1 &
        hp=$!
        harness_pids=$hp
        # wait until sandboxd runs inside
        for _ in $(seq 1 100); do ours | grep -q sandboxd && break; sleep 0.1; done
        ok $(ours | grep -q sandboxd && echo 0 || echo 1) "harness up before SIG$sig"
        kill -s "$sig" "$hp"
        wait "$hp" 2>/dev/null
        # Teardown is immediate for the kernel, but reaping a sanitized daemon (terabytes of shadow
        # mappings) can take seconds on a loaded machine: allow 30 s.
        t0=$(date +%s%N)
        for _ in $(seq 1 300); do [ -z "$(ours)" ] && break; sleep 0.1; done
        echo "# SIG$sig: the namespace was gone after $(( ($(date +%s%N) - t0) / 1000000 )) ms"
        ok $([ -z "$(ours)" ] && echo 0 || echo 1) "after SIG$sig: no systemd, dbus-daemon, journald or sandboxd left" "$(ours)"
        if [ $sig = TERM ]; then
                ok $([ -z "$(trees $hp)" ] && echo 0 || echo 1) "after SIGTERM: its cgroup tree is gone" "$(trees $hp)"
        else
                # A SIGKILLed harness cannot clean up: the next one removes the tree it left.
                "$harness" --build "$build" --no-daemon -- true >/dev/null 2>&1
                ok $([ -z "$(trees $hp)" ] && echo 0 || echo 1) "after SIGKILL: the next harness removed the tree it left" "$(trees $hp)"
        fi
done
# A SIGKILLed harness cannot remove its state directory itself; remove what it left, as an
# operator would, before comparing (its content is only the generated unit files).
for d in $(ls -d /var/lib/sandbox-harness/run.* 2>/dev/null); do grep -qx "$d" "$work/before.state" || rm -rf "$d"; done

snapshot "$work/after"
ok $([ -f "$aged/file" ] && [ -f "$aged/sub/file" ] && echo 0 || echo 1) "aged entries of the host's /tmp are still there (no tmpfiles clean-up ran)" "$(ls -laR "$aged" 2>&1)"
ok $([ "$(cat "$canary" 2>/dev/null)" = "still here" ] && echo 0 || echo 1) "the canary file in /tmp is intact"
# The names the harness or its systemd could leave: private tmp directories, harness state.
theirs='^(systemd-private-|sandbox-harness|inside-only)'
ok $(comm -13 "$work/before.tmp" "$work/after.tmp" | grep -Eq "$theirs" && echo 1 || echo 0) "nothing of the harness's in the host's /tmp" "$(comm -13 "$work/before.tmp" "$work/after.tmp" | grep -E "$theirs")"
ok $(comm -13 "$work/before.vartmp" "$work/after.vartmp" | grep -Eq "$theirs" && echo 1 || echo 0) "nothing of the harness's in the host's /var/tmp" "$(comm -13 "$work/before.vartmp" "$work/after.vartmp" | grep -E "$theirs")"
ok $(cmp -s "$work/before.run" "$work/after.run" && echo 0 || echo 1) "the host's /run is unchanged" "$(diff "$work/before.run" "$work/after.run")"
ok $(cmp -s "$work/before.mounts" "$work/after.mounts" && echo 0 || echo 1) "the host's mount table is unchanged" "$(diff "$work/before.mounts" "$work/after.mounts")"

# It refuses to run as non-root (skips).
if id nobody >/dev/null 2>&1; then
        setpriv --reuid=nobody --regid=nogroup --clear-groups "$harness" --build "$build" -- true >/dev/null 2>&1; rc=$?
        ok $([ $rc = 77 ] && echo 0 || echo 1) "as non-root it skips (77) instead of booting anything" "rc=$rc"
fi

echo "1..$n"
echo "# $((n-failed)) passed, $failed failed"
[ $failed = 0 ]

#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# sandbox-exec end to end, without systemd: every case of sandbox-exec-driver.py, as TAP.
# Usage: test-sandbox-exec.sh SANDBOX_EXEC DUMP_SECCOMP_BPF DRIVER_PY
set -u

if [ $# -ne 3 ]; then
        echo "Usage: $0 SANDBOX_EXEC DUMP_SECCOMP_BPF DRIVER_PY" >&2
        exit 2
fi
sandbox_exec=$1
dump=$2
driver=$3
python=${PYTHON:-python3}
# The cases of this run share one program UID (see UNPRIVILEGED in the driver).
export SANDBOX_EXEC_TEST_RUN=$$

mapfile -t cases < <("$python" "$driver" --list)
if [ ${#cases[@]} -eq 0 ]; then
        echo "Bail out! cannot list the driver's cases"
        exit 1
fi

echo "1..${#cases[@]}"
n=0
failed=0
for c in "${cases[@]}"; do
        n=$((n + 1))
        out=$("$python" "$driver" "$sandbox_exec" "$dump" "$c" 2>&1)
        rc=$?
        if [ $rc -eq 0 ]; then
                echo "ok $n - $c"
        elif [ $rc -eq 77 ]; then
                echo "ok $n - $c # SKIP"
        else
                echo "not ok $n - $c"
                failed=$((failed + 1))
        fi
        # Diagnostics as TAP comments.
        if [ -n "$out" ]; then
                printf '%s\n' "$out" | sed -e 's/^#*/#/'
        fi
done

[ $failed -eq 0 ]

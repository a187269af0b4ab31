#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The layout check can fail: on a copy of the tree, each kind of violation it exists for is planted
# once and must be reported (TAP).
set -u
check="$1"; src="$2"
work=$(mktemp -d "${TMPDIR:-/var/tmp}/layout-check.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
n=0; failed=0

fresh() {
        rm -rf "$work/tree"; mkdir -p "$work/tree"
        cp -r "$src/sandboxd" "$src/src" "$work/tree/"
        mkdir -p "$work/tree/tests/unit"
        cp "$src"/tests/unit/meson.build "$src"/tests/unit/test-*.c "$work/tree/tests/unit/"
        cp -r "$src/tests/fuzz" "$work/tree/tests/"
}

expect() {      # expect DESCRIPTION PATTERN
        n=$((n + 1))
        out=$("$check" "$work/tree" 2>&1); rc=$?
        if [ $rc -ne 0 ] && grep -q -- "$2" <<<"$out"; then
                echo "ok $n - $1"
        else
                echo "not ok $n - $1 (exit $rc)"; sed 's/^/# /' <<<"$out"; failed=$((failed + 1))
        fi
}

fresh
n=$((n + 1))
if out=$("$check" "$work/tree" 2>&1); then echo "ok $n - the tree as it is passes"; else
        echo "not ok $n - the tree as it is fails"; sed 's/^/# /' <<<"$out"; failed=$((failed + 1)); fi

fresh; sed -i '0,/#include "/s//#include "api\/api.h"\n#include "/' "$work/tree/sandboxd/model/conf.h"
expect "an upward include (model/ includes api/) fails" 'includes api/ (rank 6) from model/'
fresh; sed -i '0,/#include "/s//#include "store\/store.h"\n#include "/' "$work/tree/sandboxd/unit/unit-props.h"
expect "an include across one rank (unit/ includes store/) fails" 'includes store/ (rank 2) from unit/'
fresh; sed -i '0,/#include "/s//#include "job.h"\n#include "/' "$work/tree/sandboxd/api/api.c"
expect "another folder's header spelled bare fails" '"job.h" is neither in this folder'
fresh; sed -i '0,/#include "/s//#include "run\/job.h"\n#include "/' "$work/tree/sandboxd/run/runner.c"
expect "the own folder spelled with its name fails" 'is in this folder'
fresh; mkdir "$work/tree/sandboxd/extra"; echo 'int x;' > "$work/tree/sandboxd/extra/x.c"
expect "a folder not in the table fails" 'not in the layout table'
fresh; echo 'int unlisted;' > "$work/tree/sandboxd/run/unlisted.c"
expect "a source not listed in meson fails" 'unlisted.c: not listed'
fresh; echo 'int t;' > "$work/tree/tests/unit/test-unlisted.c"
expect "a unit test not listed in meson fails" 'test-unlisted.c: not listed'

fresh; echo 'int t;' > "$work/tree/tests/fuzz/fuzz-unlisted.c"
expect "a fuzz target not listed in meson fails" 'fuzz-unlisted.c: not listed'
fresh; rm -r "$work/tree/tests/fuzz/corpus/request"
expect "a fuzz target without a seed corpus fails" 'fuzz-request.c: no seed corpus'

echo "1..$n"
exit $((failed > 0))

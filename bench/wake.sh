#!/usr/bin/env bash
# What a wake costs through mcplex, against the sandbox's own resume time,
# measured in one run on 127.0.0.1 with sandbox-sim:
#   refuse mode (E2B/Cube style): direct = POST /__wake, then poll every 10 ms
#     until a call succeeds; through mcplex = one call, which finds the
#     sandbox paused, runs the wake hook and retries with backoff.
#   hold mode (Sandboxer style): direct = one call held by the paused sim;
#     through mcplex = the same call through the gateway.
#   bench/wake.sh [ROUNDS] [RESUME_MS]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${MX_BUILD_DIR:-build}
rounds=${1:-5}
resume_ms=${2:-700}
work=$(mktemp -d)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    [ -n "${MX_BENCH_KEEP:-}" ] && echo "kept $work" >&2 || rm -rf "$work"
}
trap cleanup EXIT

MX_BENCH_TOKEN=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
export MX_BENCH_TOKEN
printf 'Authorization: Bearer %s\n' "$MX_BENCH_TOKEN" >"$work/auth.hdr"
chmod 600 "$work/auth.hdr"

wait_file() { for _ in $(seq 1 200); do [ -s "$1" ] && return 0; sleep 0.05; done; return 1; }

start_pair() { # start_pair NAME SIM-ARGS...
    local name=$1
    shift
    "$build/sandbox-sim" --listen 127.0.0.1:0 --port-file "$work/$name.sim.port" \
        --bearer-env MX_BENCH_TOKEN --pause-after-ms 600000 "$@" 2>"$work/$name.sim.log" &
    pids+=($!)
    wait_file "$work/$name.sim.port"
    local sp
    sp=$(cat "$work/$name.sim.port")
    cat >"$work/$name.toml" <<CFG
[listen]
address = "127.0.0.1:0"
tls = false
[proxy]
log_level = "warn"
[servers.sim]
url = "http://127.0.0.1:$sp/mcp"
auth = "bearer"
secret = "env:MX_BENCH_TOKEN"
wake = "cmd:curl -sf -X POST -H @$work/auth.hdr http://127.0.0.1:$sp/__wake"
CFG
    "$build/mcplex" serve -c "$work/$name.toml" --port-file "$work/$name.gw.port" \
        2>"$work/$name.gw.log" &
    pids+=($!)
    wait_file "$work/$name.gw.port"
}

accept='Accept: application/json, text/event-stream'
ctype='Content-Type: application/json'
init='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}'
call='{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"message":"w"}}}'

session() { # session URL [auth-header-file] -> session id
    local extra=()
    [ -n "${2:-}" ] && extra=(-H "@$2")
    curl -sf -D - -o /dev/null -H "$accept" -H "$ctype" "${extra[@]}" "$1" -d "$init" |
        tr -d '\r' | awk -F': ' 'tolower($1)=="mcp-session-id"{print $2}'
}

# one call; prints milliseconds, or "fail"
timed_call() { # URL SID [auth-header-file]
    local extra=()
    [ -n "${3:-}" ] && extra=(-H "@$3")
    local out
    out=$(curl -s -o "$work/body" -w '%{http_code} %{time_total}' -H "$accept" -H "$ctype" \
        -H "Mcp-Session-Id: $2" -H 'MCP-Protocol-Version: 2025-06-18' "${extra[@]}" "$1" -d "$call")
    if [ "${out%% *}" = 200 ] && grep -q '"text":"w"' "$work/body"; then
        awk -v t="${out#* }" 'BEGIN{printf "%.0f\n", t*1000}'
    else
        echo fail
    fi
}

control() { curl -sf -o /dev/null -H "@$work/auth.hdr" -H "$ctype" "$1/__control" -d "$2"; }

median() { sort -n | awk '{a[NR]=$1} END{print (NR%2 ? a[(NR+1)/2] : int((a[NR/2]+a[NR/2+1])/2))}'; }

report() { # LABEL direct-file gateway-file
    local d g
    d=$(median <"$2")
    g=$(median <"$3")
    printf '%-30s %10s %10s %10s %14s\n' "$1" "$d" "$g" "$((g - d))" "$((g - resume_ms))"
}

printf '%s rounds, sandbox resume time %s ms\n' "$rounds" "$resume_ms"
printf '%-30s %10s %10s %10s %14s\n' "mode (median)" "direct ms" "mcplex ms" "added ms" "over resume ms"

# refuse mode
start_pair refuse --pause-mode refuse --refuse-status 503 --wake-ms "$resume_ms"
sim="http://127.0.0.1:$(cat "$work/refuse.sim.port")"
gw="http://127.0.0.1:$(cat "$work/refuse.gw.port")/mcp/sim"
dsid=$(session "$sim/mcp" "$work/auth.hdr")
gsid=$(session "$gw")
: >"$work/rd"
: >"$work/rg"
for _ in $(seq 1 "$rounds"); do
    control "$sim" '{"action":"pause"}'
    t0=$(date +%s%N)
    curl -sf -o /dev/null -H "@$work/auth.hdr" -H "$ctype" -X POST "$sim/__wake" -d '{}'
    for _ in $(seq 1 2000); do
        [ "$(timed_call "$sim/mcp" "$dsid" "$work/auth.hdr")" != fail ] && break
        sleep 0.01
    done
    echo $((($(date +%s%N) - t0) / 1000000)) >>"$work/rd"
    control "$sim" '{"action":"pause"}'
    r=$(timed_call "$gw" "$gsid")
    [ "$r" = fail ] && { echo "a call through mcplex failed:" >&2; cat "$work/body" >&2; exit 1; }
    echo "$r" >>"$work/rg"
done
report "refuse (503 until woken)" "$work/rd" "$work/rg"

# hold mode
start_pair hold --pause-mode hold --hold-ms "$resume_ms"
sim="http://127.0.0.1:$(cat "$work/hold.sim.port")"
gw="http://127.0.0.1:$(cat "$work/hold.gw.port")/mcp/sim"
dsid=$(session "$sim/mcp" "$work/auth.hdr")
gsid=$(session "$gw")
: >"$work/hd"
: >"$work/hg"
for _ in $(seq 1 "$rounds"); do
    control "$sim" '{"action":"pause"}'
    r=$(timed_call "$sim/mcp" "$dsid" "$work/auth.hdr")
    echo "$r" >>"$work/hd"
    control "$sim" '{"action":"pause"}'
    r=$(timed_call "$gw" "$gsid")
    [ "$r" = fail ] && { echo "a call through mcplex failed:" >&2; cat "$work/body" >&2; exit 1; }
    echo "$r" >>"$work/hg"
done
report "hold (first request held)" "$work/hd" "$work/hg"

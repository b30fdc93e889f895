#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# h2load: N tools/call (sandbox-sim's "add") over ONE HTTP/2 connection with
# M concurrent streams, through mcplex over TLS (h2 by ALPN), and for
# comparison straight to sandbox-sim over h2c (prior knowledge). Everything on
# 127.0.0.1 with ephemeral ports, a throwaway CA from `mcplex certs init` and
# a fresh random credential; stops what it started.
#   bench/h2load-call.sh [N [M]]        (defaults: 10000 100)
# MX_BUILD_DIR names the build directory (default: build).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${MX_BUILD_DIR:-build}
n=${1:-10000}
m=${2:-100}
work=$(mktemp -d)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT

wait_file() { # wait_file PATH: up to 5 s for a non-empty file
    for _ in $(seq 1 100); do [ -s "$1" ] && return 0; sleep 0.05; done
    echo "h2load-call: $1 did not appear" >&2
    exit 1
}

MX_BENCH_TOKEN=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
export MX_BENCH_TOKEN
"$build/sandbox-sim" --listen 127.0.0.1:0 --port-file "$work/sim.port" \
    --bearer-env MX_BENCH_TOKEN --log-level warn 2>"$work/sim.log" &
pids+=($!)
wait_file "$work/sim.port"
sim_port=$(cat "$work/sim.port")

"$build/mcplex" certs init --dir "$work/certs" >/dev/null
cat >"$work/mcplex.toml" <<CFG
[listen]
address = "127.0.0.1:0"
tls = true
cert = "$work/certs/localhost.pem"
key = "$work/certs/localhost.key"
[proxy]
log_level = "warn"
state_dir = "$work/state"
[servers.sim]
url = "http://127.0.0.1:$sim_port/mcp"
auth = "bearer"
secret = "env:MX_BENCH_TOKEN"
max_concurrency = $m
CFG
"$build/mcplex" serve -c "$work/mcplex.toml" --port-file "$work/mcplex.port" \
    2>"$work/mcplex.log" &
pids+=($!)
wait_file "$work/mcplex.port"
gw="https://127.0.0.1:$(cat "$work/mcplex.port")/mcp/sim"
ca=(--cacert "$work/certs/ca.pem" --noproxy '*' -sS)

# One MCP session; every call below carries its id.
init='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"h2load-call","version":"1"}}}'
hdrs=(-H 'content-type: application/json' -H 'accept: application/json, text/event-stream')
sid=$(curl "${ca[@]}" -D - -o /dev/null "${hdrs[@]}" -d "$init" "$gw" |
    tr -d '\r' | awk -F': ' 'tolower($1) == "mcp-session-id" { print $2 }')
[ -n "$sid" ] || { echo "h2load-call: initialize gave no session id" >&2; exit 1; }
session=(-H "mcp-session-id: $sid" -H 'mcp-protocol-version: 2025-06-18')
curl "${ca[@]}" -o /dev/null "${hdrs[@]}" "${session[@]}" \
    -d '{"jsonrpc":"2.0","method":"notifications/initialized"}' "$gw"

printf '%s' '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":3}}}' \
    >"$work/call.json"

echo "== through mcplex: TLS, h2 by ALPN, $n calls, 1 connection, $m streams"
echo "   h2load -n $n -c 1 -m $m -d call.json -H content-type... -H accept... -H mcp-session-id... $gw"
h2load -n "$n" -c 1 -m "$m" -d "$work/call.json" "${hdrs[@]}" "${session[@]}" "$gw"

echo
echo "== direct to sandbox-sim: h2c (prior knowledge), same calls"
dsid=$(curl -sS --noproxy '*' -D - -o /dev/null "${hdrs[@]}" \
    -H "authorization: Bearer $MX_BENCH_TOKEN" -d "$init" "http://127.0.0.1:$sim_port/mcp" |
    tr -d '\r' | awk -F': ' 'tolower($1) == "mcp-session-id" { print $2 }')
h2load -n "$n" -c 1 -m "$m" -d "$work/call.json" "${hdrs[@]}" \
    -H "authorization: Bearer $MX_BENCH_TOKEN" -H "mcp-session-id: $dsid" \
    -H 'mcp-protocol-version: 2025-06-18' "http://127.0.0.1:$sim_port/mcp"

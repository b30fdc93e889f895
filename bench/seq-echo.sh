#!/usr/bin/env bash
# 1,000 sequential requests of each kind (tools/call echo among them) against
# sandbox-sim, direct and through mcplex, interleaved in one run, measured by
# `mcplex bench`. Everything on 127.0.0.1, ephemeral ports,
# a fresh random credential; stops what it started.
#   bench/seq-echo.sh [N]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${MX_BUILD_DIR:-build}
n=${1:-1000}
work=$(mktemp -d)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT

MX_BENCH_TOKEN=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
export MX_BENCH_TOKEN
"$build/sandbox-sim" --listen 127.0.0.1:0 --port-file "$work/sim.port" \
    --bearer-env MX_BENCH_TOKEN 2>"$work/sim.log" &
pids+=($!)
for _ in $(seq 1 100); do [ -s "$work/sim.port" ] && break; sleep 0.05; done
sim_port=$(cat "$work/sim.port")

cat >"$work/mcplex.toml" <<CFG
[listen]
address = "127.0.0.1:0"
tls = false
[proxy]
log_level = "warn"
[servers.sim]
url = "http://127.0.0.1:$sim_port/mcp"
auth = "bearer"
secret = "env:MX_BENCH_TOKEN"
CFG
"$build/mcplex" serve -c "$work/mcplex.toml" --port-file "$work/mcplex.port" 2>"$work/mcplex.log" &
pids+=($!)
for _ in $(seq 1 100); do [ -s "$work/mcplex.port" ] && break; sleep 0.05; done
gw_port=$(cat "$work/mcplex.port")

"$build/mcplex" bench -c "$work/mcplex.toml" --gateway "http://127.0.0.1:$gw_port" \
    -n "$n" --concurrency 1 --call echo --args '{"message":"bench"}'

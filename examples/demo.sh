#!/usr/bin/env bash
# Runs mcplex in front of two sandbox-sim upstreams (one cookie, one bearer
# credential) on examples/configs/demo.toml, makes one real MCP call through
# the gateway, then keeps serving until Ctrl-C. With --once it stops after
# the call (used by the tests).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${MX_BUILD_DIR:-build}
once=0
[ "${1:-}" = "--once" ] && once=1

for bin in "$build/mcplex" "$build/sandbox-sim"; do
    [ -x "$bin" ] || { echo "demo: $bin is missing; build first (see README)" >&2; exit 1; }
done

work=$(mktemp -d)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 0' INT TERM

# Fresh random credentials per run: each sandbox knows only its own.
DEMO_FILES_TOKEN=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
DEMO_EVERYTHING_TOKEN=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
export DEMO_FILES_TOKEN DEMO_EVERYTHING_TOKEN

"$build/sandbox-sim" --listen 127.0.0.1:18101 --name files \
    --cookie __sbx_auth --cookie-env DEMO_FILES_TOKEN 2>"$work/files.log" &
pids+=($!)
"$build/sandbox-sim" --listen 127.0.0.1:18102 --name everything \
    --bearer-env DEMO_EVERYTHING_TOKEN 2>"$work/everything.log" &
pids+=($!)
# A copy of the config in the scratch directory: its relative trace path is
# taken there, next to the config, and the source tree stays clean.
cp examples/configs/demo.toml "$work/demo.toml"
"$build/mcplex" serve -c "$work/demo.toml" &
pids+=($!)

# TLS, the default: mcplex makes a local CA (name-constrained to localhost)
# and a localhost certificate in its state_dir at start; clients trust the CA.
base=https://127.0.0.1:8480
ca=$work/demo-state/certs/ca.pem
curl() { command curl --cacert "$ca" "$@"; }
for _ in $(seq 1 100); do
    [ -f "$ca" ] && curl -fsS "$base/health" >/dev/null 2>&1 && break
    sleep 0.1
done
curl -fsS "$base/health" >/dev/null || { echo "demo: mcplex did not start" >&2; exit 1; }

echo
echo "mcplex is serving:"
echo "  $base/mcp              (both sandboxes merged into one MCP server)"
echo "  $base/mcp/files        (sandbox 'files' alone, cookie credential injected)"
echo "  $base/mcp/everything   (sandbox 'everything' alone, bearer credential injected)"
echo "  $base/health"
echo "over TLS with the local CA $ca"
echo "(\`mcplex certs trust\` adds it to the system store; Node-based clients:"
echo " NODE_EXTRA_CA_CERTS=$ca)"
echo

# One real call through the gateway: initialize, tools/list, then tools/call.
accept='Accept: application/json, text/event-stream'
ctype='Content-Type: application/json'
sid=$(curl -fsS -D - -o /dev/null -H "$accept" -H "$ctype" "$base/mcp" \
    -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"demo","version":"1"}}}' |
    tr -d '\r' | awk -F': ' 'tolower($1)=="mcp-session-id"{print $2}')
curl -fsS -o /dev/null -H "$accept" -H "$ctype" -H "Mcp-Session-Id: $sid" \
    -H "MCP-Protocol-Version: 2025-06-18" "$base/mcp" \
    -d '{"jsonrpc":"2.0","method":"notifications/initialized"}'
echo "tools/list at $base/mcp (names both sandboxes share get their server's prefix):"
curl -fsS -H "$accept" -H "$ctype" -H "Mcp-Session-Id: $sid" \
    -H "MCP-Protocol-Version: 2025-06-18" "$base/mcp" \
    -d '{"jsonrpc":"2.0","id":2,"method":"tools/list"}' |
    grep -o '"name":"[^"]*"' | cut -d'"' -f4 | tr '\n' ' '
echo
echo
echo "tools/call files_echo through mcplex -> sandbox 'files':"
curl -fsS -H "$accept" -H "$ctype" -H "Mcp-Session-Id: $sid" \
    -H "MCP-Protocol-Version: 2025-06-18" "$base/mcp" \
    -d '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"files_echo","arguments":{"message":"hello through mcplex"}}}'
echo
echo

if [ "$once" = 1 ]; then
    exit 0
fi
echo "Point an MCP client at $base/mcp. Ctrl-C stops."
wait "${pids[2]}"

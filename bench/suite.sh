#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The comparison suite, one command: on 127.0.0.1 it starts two upstreams,
# sandbox-sim (a C MCP server, the fast one, JSON answers) and
# server-everything (the SDK's reference server on Node, SSE answers), and in
# front of them nginx as a plain reverse proxy that injects the same
# credential (the floor for any L7 proxy), mcplex (plain HTTP and TLS in front
# of sandbox-sim, plain in front of server-everything) and mcp-hub (npm,
# pinned in bench/package.json). mcplex is measured at both of its endpoints:
# the merged /mcp (one upstream behind it, so the tools keep their names) and
# /mcp/<server>; nginx proxies straight to the upstream. Then, contenders
# interleaved in each round:
#   latency  `mcplex bench --gateway <contender> [--merged]`: tools/call echo,
#            one at a time, direct and through the contender call by call,
#            with either upstream
#   load     wrk (HTTP/1.1, bench/check.lua checks every answer) and h2load
#            (h2c and h2 over TLS) at 16 and 64 connections; CPU time of the
#            proxy process(es) from /proc/<pid>/stat per call; a short wrk
#            row with server-everything
#   SDK      bench/mcpload.mjs (the official SDK client) at 16 workers,
#            the only client that speaks mcp-hub's legacy HTTP+SSE
# then once:
#   syscalls strace -c on nginx and mcplex over a short wrk load: system calls
#            per call, mcplex's most frequent, and every call that failed
#   memory   RSS, RssAnon and PSS after start, and peak RSS (VmHWM)
#   scale    memory per idle /mcp client session and tools/call latency with
#            1 … 10,000 idle sessions ([listen] max_sessions raised for it);
#            1 … 50 upstreams × 1,000 tools: the first initialize and
#            tools/list (every page) cold, again (cached), and on a second
#            start with the catalogue the first left in its state_dir
# and prints a markdown report (also written to --out), with two SVG plots
# next to it (OUT without .md, then -latency.svg and -added.svg).
#   bench/suite.sh [--smoke] [--rounds R] [--seconds S] [--out FILE]
# --smoke: every contender and client once for a moment, checked for errors,
# no times judged (CI). MX_BUILD_DIR names the build directory (build).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build=${MX_BUILD_DIR:-build}
case $build in /*) ;; *) build=$root/$build ;; esac

smoke=0
rounds=3
secs=5
out=bench-report.md
while [ $# -gt 0 ]; do
    case $1 in
    --smoke) smoke=1 ;;
    --rounds) rounds=$2; shift ;;
    --seconds) secs=$2; shift ;;
    --out) out=$2; shift ;;
    *) echo "usage: bench/suite.sh [--smoke] [--rounds R] [--seconds S] [--out FILE]" >&2; exit 2 ;;
    esac
    shift
done
n_lat=1000
n_ev=300 # server-everything takes milliseconds per request
concs="16 64"
sys_secs=2
max_sessions=20000 # the scale mcplex's [listen] max_sessions (default 4096)
sessions_levels="1 10 100 1000 10000"
upstream_levels="1 3 10 25 50"
tools_per=1000
if [ "$smoke" = 1 ]; then
    rounds=1
    secs=1
    n_lat=50
    n_ev=10
    concs=16
    sys_secs=1
    sessions_levels="1 10"
    upstream_levels="1 3"
    tools_per=10
fi

die() { echo "suite: $*" >&2; exit 1; }
for bin in "$build/mcplex" "$build/sandbox-sim"; do
    [ -x "$bin" ] || die "$bin is missing; build first"
done
for tool in nginx wrk h2load node curl strace; do
    command -v "$tool" >/dev/null || die "$tool is missing; run .ci/setup"
done
[ -d bench/node_modules/mcp-hub ] || die "bench/node_modules is missing; run .ci/setup (npm ci in bench)"
[ -f tests/js/bind-localhost.mjs ] || die "tests/js/bind-localhost.mjs is missing"
everything=$root/tests/js/node_modules/@modelcontextprotocol/server-everything/dist/index.js
[ -f "$everything" ] || die "server-everything is missing; run .ci/setup (npm ci in tests/js)"

work=$(mktemp -d)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    if [ -n "${MX_BENCH_KEEP:-}" ]; then echo "suite: kept $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT

wait_file() { for _ in $(seq 1 200); do [ -s "$1" ] && return 0; sleep 0.05; done; die "$1 did not appear"; }
free_port() {
    node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}
wait_http() { # URL [curl args...]
    local u=$1
    shift
    for _ in $(seq 1 300); do curl -s -o /dev/null --noproxy '*' "$@" "$u" && return 0; sleep 0.05; done
    die "$u did not answer"
}
cpu_ticks() { # PID... -> utime+stime of all, in clock ticks
    local t=0 p f
    for p in "$@"; do
        f=$(cut -d')' -f2 "/proc/$p/stat")
        t=$((t + $(awk '{print $12 + $13}' <<<"$f")))
    done
    echo "$t"
}
status_kb() { # FIELD PID... -> sum in kB (VmRSS, VmHWM, RssAnon, ...)
    local k=0 p
    for p in "${@:2}"; do k=$((k + $(awk -v f="$1:" '$1 == f {print $2}' "/proc/$p/status"))); done
    echo "$k"
}
pss_kb() { # PID... -> proportional set size, summed, in kB (shared pages divided by their users)
    local k=0 p
    for p in "$@"; do k=$((k + $(awk '$1 == "Pss:" {print $2}' "/proc/$p/smaps_rollup"))); done
    echo "$k"
}
hz=$(getconf CLK_TCK)

# ---- the upstream ----
MX_BENCH_TOKEN=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
export MX_BENCH_TOKEN
printf '%s' "$MX_BENCH_TOKEN" >"$work/sim.secret"
chmod 600 "$work/sim.secret"
"$build/sandbox-sim" --listen 127.0.0.1:0 --port-file "$work/sim.port" \
    --bearer-env MX_BENCH_TOKEN --log-level error 2>"$work/sim.log" &
pids+=($!)
sim_pid=$!
wait_file "$work/sim.port"
sim_port=$(cat "$work/sim.port")
sim=http://127.0.0.1:$sim_port/mcp

# server-everything in Streamable HTTP mode, as the integration tests start it:
# bound to 127.0.0.1 and behind the same bearer check (tests/js preloads)
PORT=0 MX_PORT_FILE=$work/ev.port MX_UPSTREAM_BEARER=$MX_BENCH_TOKEN \
    node --import "$root/tests/js/bind-localhost.mjs" --import "$root/tests/js/require-auth.mjs" \
    "$everything" streamableHttp >"$work/ev.log" 2>&1 &
pids+=($!)
wait_file "$work/ev.port"
ev_port=$(cat "$work/ev.port")
ev=http://127.0.0.1:$ev_port/mcp
wait_http "http://127.0.0.1:$ev_port/__auth_stats" -f

"$build/mcplex" certs init --dir "$work/certs" >/dev/null
ca=$work/certs/ca.pem

# ---- nginx: one worker, keepalive pool, injects the credential ----
ng_h1=$(free_port); ng_h2c=$(free_port); ng_tls=$(free_port)
mkdir -p "$work/nginx"
umask 077
cat >"$work/nginx/nginx.conf" <<CONF
worker_processes 1;
daemon off;
pid $work/nginx/nginx.pid;
error_log $work/nginx/error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    client_body_temp_path $work/nginx/body;
    proxy_temp_path $work/nginx/proxy;
    fastcgi_temp_path $work/nginx/fastcgi;
    uwsgi_temp_path $work/nginx/uwsgi;
    scgi_temp_path $work/nginx/scgi;
    keepalive_requests 1000000;
    upstream sim { server 127.0.0.1:$sim_port; keepalive 128; }
    upstream ev { server 127.0.0.1:$ev_port; keepalive 128; }
    server {
        listen 127.0.0.1:$ng_h1;
        listen 127.0.0.1:$ng_h2c http2;
        listen 127.0.0.1:$ng_tls ssl http2;
        ssl_certificate $work/certs/localhost.pem;
        ssl_certificate_key $work/certs/localhost.key;
        location = /mcp/sim {
            proxy_pass http://sim/mcp;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Authorization "Bearer $MX_BENCH_TOKEN";
            proxy_buffering off;
        }
        location = /mcp/ev {
            proxy_pass http://ev/mcp;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Authorization "Bearer $MX_BENCH_TOKEN";
            proxy_buffering off;
        }
    }
}
CONF
umask 022
nginx -c "$work/nginx/nginx.conf" -e "$work/nginx/error.log" 2>>"$work/nginx/stderr.log" &
pids+=($!)
ng_master=$!
wait_http "http://127.0.0.1:$ng_h1/"
ng_pids=("$ng_master" $(pgrep -P "$ng_master"))

# ---- mcplex: plain HTTP and TLS ----
start_mcplex() { # NAME TLS(true|false) [SERVER [URL [LISTEN-LINE]]] -> writes $work/NAME.port
    cat >"$work/$1.toml" <<CFG
[listen]
address = "127.0.0.1:0"
tls = $2
cert = "$work/certs/localhost.pem"
key = "$work/certs/localhost.key"
max_connections = 20000
${5:-}
[proxy]
log_level = "error"
state_dir = "$work/state-$1"
[servers.${3:-sim}]
url = "${4:-$sim}"
auth = "bearer"
secret = "file:$work/sim.secret"
max_concurrency = 256
CFG
    "$build/mcplex" serve -c "$work/$1.toml" --port-file "$work/$1.port" 2>"$work/$1.log" &
    pids+=($!)
    wait_file "$work/$1.port"
}
start_mcplex mcplex false
mx_pid=${pids[-1]}
mx_port=$(cat "$work/mcplex.port")
start_mcplex mcplex-tls true
mxt_pid=${pids[-1]}
mxt_port=$(cat "$work/mcplex-tls.port")
start_mcplex mcplex-ev false ev "$ev"
mxe_pid=${pids[-1]}
mxe_port=$(cat "$work/mcplex-ev.port")

# ---- mcp-hub (Node): its own config, state and home under $work ----
hub_port=$(free_port)
mkdir -p "$work/hub-home"
umask 077
cat >"$work/hub.json" <<CFG
{"mcpServers": {"sim": {"url": "$sim", "headers": {"Authorization": "Bearer $MX_BENCH_TOKEN"}}}}
CFG
umask 022
HOME=$work/hub-home XDG_STATE_HOME=$work/hub-home/state XDG_CONFIG_HOME=$work/hub-home/config \
    XDG_DATA_HOME=$work/hub-home/data XDG_CACHE_HOME=$work/hub-home/cache \
    node --import "$root/tests/js/bind-localhost.mjs" bench/node_modules/mcp-hub/dist/cli.js \
    --port "$hub_port" --config "$work/hub.json" >"$work/hub.log" 2>&1 &
pids+=($!)
hub_pid=$!
for _ in $(seq 1 600); do
    curl -s --noproxy '*' "http://127.0.0.1:$hub_port/api/health" 2>/dev/null | grep -q '"state":"ready"' && break
    sleep 0.05
done
curl -s --noproxy '*' "http://127.0.0.1:$hub_port/api/health" | grep -q '"state":"ready"' ||
    die "mcp-hub did not get ready (see $work/hub.log with MX_BENCH_KEEP=1)"

echo "suite: (${SECONDS}s) all started" >&2
sleep 0.5
# RSS counts the shared libraries' pages too; RssAnon is the process's own;
# PSS divides each shared page by the processes that map it
declare -A rss_idle anon_idle pss_idle
mem_idle() { # NAME PIDS...
    rss_idle[$1]=$(status_kb VmRSS "${@:2}")
    anon_idle[$1]=$(status_kb RssAnon "${@:2}")
    pss_idle[$1]=$(pss_kb "${@:2}")
}
mem_idle nginx "${ng_pids[@]}"
mem_idle mcplex "$mx_pid"
mem_idle mcplex-tls "$mxt_pid"
mem_idle mcplex-ev "$mxe_pid"
mem_idle mcp-hub "$hub_pid"

# Latency contenders: name -> base URL, mcplex-bench args (the config whose
# server is the direct side, the server, the endpoint), requests per row.
# "-mcp": mcplex's merged /mcp; otherwise /mcp/<server> (nginx: its location
# /mcp/<server>, proxied straight to the upstream). "ev-": server-everything.
declare -A base extra procs nreq
base[nginx]=http://127.0.0.1:$ng_h1;             extra[nginx]="--http1.1"
base[mcplex]=http://127.0.0.1:$mx_port;          extra[mcplex]="--http1.1"
base[mcplex-mcp]=${base[mcplex]};                extra[mcplex-mcp]="--http1.1 --merged"
base[nginx-tls]=https://127.0.0.1:$ng_tls;       extra[nginx-tls]="--cacert $ca"
base[mcplex-tls]=https://127.0.0.1:$mxt_port;    extra[mcplex-tls]="--cacert $ca"
base[mcplex-tls-mcp]=${base[mcplex-tls]};        extra[mcplex-tls-mcp]="--cacert $ca --merged"
base[ev-nginx]=${base[nginx]};                   extra[ev-nginx]="--http1.1"
base[ev-mcplex]=http://127.0.0.1:$mxe_port;      extra[ev-mcplex]="--http1.1"
base[ev-mcplex-mcp]=${base[ev-mcplex]};          extra[ev-mcplex-mcp]="--http1.1 --merged"
for name in nginx mcplex mcplex-mcp nginx-tls mcplex-tls mcplex-tls-mcp; do
    extra[$name]+=" -c $work/mcplex.toml --server sim"
    nreq[$name]=$n_lat
done
for name in ev-nginx ev-mcplex ev-mcplex-mcp; do
    extra[$name]+=" -c $work/mcplex-ev.toml --server ev"
    nreq[$name]=$n_ev
done
procs[nginx]="${ng_pids[*]}"; procs[nginx-tls]="${ng_pids[*]}"
procs[mcplex]=$mx_pid; procs[mcplex-tls]=$mxt_pid; procs[mcplex-ev]=$mxe_pid; procs[mcp-hub]=$hub_pid
lat_order=(nginx mcplex mcplex-mcp nginx-tls mcplex-tls mcplex-tls-mcp ev-nginx ev-mcplex ev-mcplex-mcp)

results=$work/results.tsv # kind name round key value
: >"$results"
rec() { printf '%s\t%s\t%s\t%s\t%s\n' "$@" >>"$results"; }
# jnum KEY: a number member of the one-line JSON object on stdin (no node
# start per call: this runs after every load)
# (awk reads to the end: a reader that quits early could SIGPIPE grep under pipefail)
jnum() { grep -o "\"$1\":[-0-9.eE+]*" | awk -F: 'NR == 1 { print $2 }'; }
jget() { node -e 'const o=JSON.parse(require("fs").readFileSync(0,"utf8"));const v=process.argv[1].split(".").reduce((a,k)=>a==null?a:a[k],o);console.log(v==null?"":v)' "$1"; }

# One session at URL (with optional auth header file); prints its id.
session() { # URL [curl args...]
    local u=$1
    shift
    curl -s --noproxy '*' -D - -o /dev/null "$@" -H 'Content-Type: application/json' \
        -H 'Accept: application/json, text/event-stream' "$u" \
        -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"suite","version":"1"}}}' |
        tr -d '\r' | awk -F': ' 'tolower($1)=="mcp-session-id"{print $2}'
}
printf 'Authorization: Bearer %s\n' "$MX_BENCH_TOKEN" >"$work/auth.hdr"
chmod 600 "$work/auth.hdr"

# /mcp has one upstream behind each mcplex, so the tools keep their names
# there: checked, not assumed (the loads below call "echo" at /mcp)
for gw in "${base[mcplex]}" "${base[ev-mcplex]}"; do
    sid=$(session "$gw/mcp")
    [ -n "$sid" ] || die "no session at $gw/mcp"
    curl -s --noproxy '*' -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
        -H "Mcp-Session-Id: $sid" -H 'MCP-Protocol-Version: 2025-06-18' "$gw/mcp" \
        -d '{"jsonrpc":"2.0","id":2,"method":"tools/list"}' | grep -q '"name":"echo"' ||
        die "$gw/mcp lists no tool named echo"
done

# ---- latency: mcplex bench against each contender, interleaved ----
latency_round() { # ROUND
    local r=$1 name j
    for name in "${lat_order[@]}"; do
        # shellcheck disable=SC2086
        j=$("$build/mcplex" bench --gateway "${base[$name]}" ${extra[$name]} \
            --call echo --args '{"message":"bench"}' -n "${nreq[$name]}" --concurrency 1 --json) ||
            die "mcplex bench against $name failed"
        node -e '
            const o = JSON.parse(require("fs").readFileSync(0, "utf8"));
            for (const row of o.rows)
                if (row.measure === "tools/call" || row.measure === "ping")
                    console.log([row.measure, row.path, row.ok, row.errors, row.p50_us, row.p90_us, row.p99_us].join("\t"));
        ' <<<"$j" | while IFS=$'\t' read -r m path ok err p50 p90 p99; do
            # errors are reported, not fatal: see the report's errors column
            [ "$ok" -gt 0 ] || die "latency $name $m $path: no successful request"
            local who=$name
            [ "$path" = direct ] && who=direct@$name
            rec lat "$who" "$r" "$m.errors" "$err"
            rec lat "$who" "$r" "$m.ok" "$ok"
            rec lat "$who" "$r" "$m.p50" "$p50"
            rec lat "$who" "$r" "$m.p90" "$p90"
            rec lat "$who" "$r" "$m.p99" "$p99"
        done
    done
}

# ---- load: wrk (h1) and h2load (h2c / h2) with CPU per call ----
# LOAD_SECS (environment) overrides --seconds for one load; the last wrk
# output stays in $work/wrk.out (the system-call rows read it)
load_one() { # ROUND TOOL NAME URL SESSION-URL CONC PIDS...
    local r=$1 tool=$2 name=$3 url=$4 surl=$5 conc=$6 d=${LOAD_SECS:-$secs}
    shift 6
    local sid c0 c1 reqs bad o
    if [ "${name#direct}" != "$name" ]; then
        sid=$(session "$surl" -H "@$work/auth.hdr")
    else
        sid=$(session "$surl" ${CURL_CA:+--cacert "$CURL_CA"})
    fi
    [ -n "$sid" ] || die "no session from $name"
    c0=$([ $# -gt 0 ] && cpu_ticks "$@" || echo 0)
    if [ "$tool" = wrk ]; then
        local auth=
        [ "${name#direct}" != "$name" ] && auth=$MX_BENCH_TOKEN
        o=$(MX_SESSION=$sid MX_BEARER=$auth wrk -t2 -c"$conc" -d"${d}s" --timeout 10s \
            -s bench/check.lua "$url" | tail -n 1)
        printf '%s\n' "$o" >"$work/wrk.out"
        reqs=$(jnum requests <<<"$o")
        bad=$(($(jnum bad <<<"$o") + $(jnum socket_errors <<<"$o")))
        rec load "$name" "$r" "wrk.c$conc.rps" "$(awk -v n="$reqs" -v d="$(jnum duration_us <<<"$o")" 'BEGIN{printf "%.0f", n*1e6/d}')"
    else
        local hdr=() h2=()
        [ "${name#direct}" != "$name" ] && hdr=(-H "authorization: Bearer $MX_BENCH_TOKEN")
        o=$(h2load -D "$d" -c "$conc" -m 1 -t 1 "${hdr[@]}" -d "$work/call.json" \
            -H 'content-type: application/json' -H 'accept: application/json, text/event-stream' \
            -H "mcp-session-id: $sid" -H 'mcp-protocol-version: 2025-06-18' "${h2[@]}" "$url")
        reqs=$(awk '/^requests:/ {print $8}' <<<"$o")
        # failed, errored, timed out, and any answer that was not 2xx
        bad=$(awk '/^requests:/ {r = $10 + $12 + $14} /^status codes:/ {gsub(",", ""); s = $5 + $7 + $9}
            END {print r + s}' <<<"$o")
        rec load "$name" "$r" "h2load.c$conc.rps" "$(awk '/^finished in/ {gsub(",",""); print $4}' <<<"$o" | cut -d. -f1)"
    fi
    c1=$([ $# -gt 0 ] && cpu_ticks "$@" || echo 0)
    [ "$bad" = 0 ] && [ "${reqs:-0}" -gt 0 ] || die "$tool $name c=$conc: $bad bad answers of ${reqs:-0}"
    if [ $# -gt 0 ]; then
        rec load "$name" "$r" "$tool.c$conc.cpu_us_per_call" \
            "$(awk -v t=$((c1 - c0)) -v hz="$hz" -v n="$reqs" 'BEGIN{printf "%.1f", t*1e6/hz/n}')"
    fi
}
printf '%s' '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"message":"bench"}}}' >"$work/call.json"

load_round() { # ROUND
    local r=$1 conc
    local ng=${base[nginx]}/mcp/sim mx=${base[mcplex]}/mcp/sim mxm=${base[mcplex]}/mcp
    local ngt=${base[nginx-tls]}/mcp/sim mxt=${base[mcplex-tls]}/mcp/sim mxtm=${base[mcplex-tls]}/mcp
    for conc in $concs; do
        load_one "$r" wrk direct "$sim" "$sim" "$conc"
        load_one "$r" wrk nginx "$ng" "$ng" "$conc" ${procs[nginx]}
        load_one "$r" wrk mcplex "$mx" "$mx" "$conc" ${procs[mcplex]}
        load_one "$r" wrk mcplex-mcp "$mxm" "$mxm" "$conc" ${procs[mcplex]}
        load_one "$r" h2load direct "$sim" "$sim" "$conc"
        load_one "$r" h2load nginx "http://127.0.0.1:$ng_h2c/mcp/sim" "$ng" "$conc" ${procs[nginx]}
        load_one "$r" h2load mcplex "$mx" "$mx" "$conc" ${procs[mcplex]}
        load_one "$r" h2load mcplex-mcp "$mxm" "$mxm" "$conc" ${procs[mcplex]}
        CURL_CA=$ca load_one "$r" h2load nginx-tls "$ngt" "$ngt" "$conc" ${procs[nginx]}
        CURL_CA=$ca load_one "$r" h2load mcplex-tls "$mxt" "$mxt" "$conc" ${procs[mcplex-tls]}
        CURL_CA=$ca load_one "$r" h2load mcplex-tls-mcp "$mxtm" "$mxtm" "$conc" ${procs[mcplex-tls]}
    done
    # server-everything (Node) is slow: one short wrk row at 16 connections
    local ngev=${base[nginx]}/mcp/ev mxev=${base[ev-mcplex]}/mcp/ev mxevm=${base[ev-mcplex]}/mcp
    local es=$((secs < 2 ? secs : 2))
    LOAD_SECS=$es load_one "$r" wrk direct-ev "$ev" "$ev" 16
    LOAD_SECS=$es load_one "$r" wrk ev-nginx "$ngev" "$ngev" 16 ${procs[nginx]}
    LOAD_SECS=$es load_one "$r" wrk ev-mcplex "$mxev" "$mxev" 16 ${procs[mcplex-ev]}
    LOAD_SECS=$es load_one "$r" wrk ev-mcplex-mcp "$mxevm" "$mxevm" 16 ${procs[mcplex-ev]}
}

# ---- the SDK client: nginx, mcplex (Streamable HTTP) and mcp-hub (SSE) ----
sdk_one() { # ROUND NAME URL KIND TOOL PIDS...
    local r=$1 name=$2 url=$3 kind=$4 tool=$5 c0 c1 o calls
    shift 5
    c0=$(cpu_ticks "$@")
    o=$(cd bench && node mcpload.mjs "$url" "$kind" "$tool" 16 "$secs" 1000000) ||
        die "mcpload against $name failed"
    c1=$(cpu_ticks "$@")
    calls=$(jnum calls <<<"$o")
    [ "$(jnum errors <<<"$o")" = 0 ] && [ "$calls" -gt 0 ] || die "mcpload $name: errors"
    rec sdk "$name" "$r" rps "$(jnum rps <<<"$o" | cut -d. -f1)"
    rec sdk "$name" "$r" p50 "$(jnum p50_us <<<"$o")"
    rec sdk "$name" "$r" p99 "$(jnum p99_us <<<"$o")"
    rec sdk "$name" "$r" cpu_us_per_call "$(awk -v t=$((c1 - c0)) -v hz="$hz" -v n="$calls" 'BEGIN{printf "%.1f", t*1e6/hz/n}')"
}
sdk_round() {
    sdk_one "$1" nginx "${base[nginx]}/mcp/sim" http echo ${procs[nginx]}
    sdk_one "$1" mcplex "${base[mcplex]}/mcp/sim" http echo ${procs[mcplex]}
    sdk_one "$1" mcplex-mcp "${base[mcplex]}/mcp" http echo ${procs[mcplex]}
    sdk_one "$1" mcp-hub "http://127.0.0.1:$hub_port/mcp" sse sim__echo ${procs[mcp-hub]}
}

for r in $(seq 1 "$rounds"); do
    echo "suite: round $r of $rounds (${SECONDS}s): latency" >&2
    latency_round "$r"
    echo "suite: round $r (${SECONDS}s): load" >&2
    load_round "$r"
    echo "suite: round $r (${SECONDS}s): SDK client" >&2
    sdk_round "$r"
    # rotate the latency order so no contender always runs first
    lat_order=("${lat_order[@]:1}" "${lat_order[0]}")
done

# ---- system calls per call: strace -c over a short wrk load ----
# strace stops the traced process at every system call, so the calls/s here
# mean nothing; the count per call does. The count covers the whole window
# (attach to detach), a little more than the load.
echo "suite: (${SECONDS}s) system calls" >&2
sys_one() { # NAME URL PIDS...
    local name=$1 url=$2 sp args=() n
    shift 2
    for p in "$@"; do args+=(-p "$p"); done
    strace -c -f -o "$work/strace.$name" "${args[@]}" 2>"$work/strace.$name.err" &
    sp=$!
    # attached when strace says so for every pid (it prints one line each)
    for _ in $(seq 1 100); do
        [ "$(grep -c 'attached' "$work/strace.$name.err" || true)" -ge $# ] && break
        sleep 0.05
    done
    [ "$(grep -c 'attached' "$work/strace.$name.err" || true)" -ge $# ] ||
        { kill "$sp" 2>/dev/null || true; die "strace could not attach to $name: $(head -c 300 "$work/strace.$name.err")"; }
    LOAD_SECS=$sys_secs load_one 1 wrk "sys-$name" "$url" "$url" 16
    kill -INT "$sp"
    wait "$sp" || true
    n=$(jnum requests <"$work/wrk.out")
    rec sys "$name" 1 calls "$n"
    # strace -c: "% time seconds usecs/call calls [errors] syscall", then "total"
    awk '$1 ~ /^[0-9.]+$/ && $NF ~ /^[a-z_0-9]+$/ { print $NF "\t" $4 "\t" (NF == 6 ? $5 : 0) }' \
        "$work/strace.$name" >"$work/strace.$name.tsv"
    grep -q $'^total\t' "$work/strace.$name.tsv" || die "strace $name: no summary"
    while IFS=$'\t' read -r sc c e; do
        rec sys "$name" 1 "sc.$sc" "$c $e"
    done <"$work/strace.$name.tsv"
}
# nginx: the master and its worker; mcplex: its one process, at both endpoints
sys_one nginx "${base[nginx]}/mcp/sim" "${ng_pids[@]}"
sys_one mcplex "${base[mcplex]}/mcp/sim" "$mx_pid"
sys_one mcplex-mcp "${base[mcplex]}/mcp" "$mx_pid"

declare -A rss_peak
rss_peak[nginx]=$(status_kb VmHWM "${ng_pids[@]}")
rss_peak[mcplex]=$(status_kb VmHWM "$mx_pid")
rss_peak[mcplex-tls]=$(status_kb VmHWM "$mxt_pid")
rss_peak[mcplex-ev]=$(status_kb VmHWM "$mxe_pid")
rss_peak[mcp-hub]=$(status_kb VmHWM "$hub_pid")

# ---- scale: idle /mcp client sessions on a fresh mcplex ----
echo "suite: (${SECONDS}s) scale" >&2
start_mcplex scale false sim "$sim" "max_sessions = $max_sessions"
rec meta cap 1 max_sessions "$max_sessions"
sc_pid=${pids[-1]}
sc_port=$(cat "$work/scale.port")
sc_url=http://127.0.0.1:$sc_port/mcp
session "$sc_url" >/dev/null # the upstream session and catalogue exist before we count
sleep 0.2
have=1
for level in $sessions_levels; do
    before=$(status_kb VmRSS "$sc_pid")
    add=$((level - have))
    if [ "$add" -gt 0 ]; then
        printf '%s' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"idle","version":"1"}}}' >"$work/init.json"
        o=$(h2load --h1 -n "$add" -c 4 -m 1 -d "$work/init.json" -H 'content-type: application/json' \
            -H 'accept: application/json, text/event-stream' "$sc_url")
        ok=$(awk '/^status codes:/ {gsub(",",""); print $3}' <<<"$o")
        # a refusal is an answer (503); a failed request is not
        [ "$(awk '/^requests:/ {print $10 + $12 + $14}' <<<"$o")" = 0 ] ||
            die "sessions $level: requests failed: $(grep '^requests:' <<<"$o")"
        # mcplex caps open client sessions ([listen] max_sessions, raised
        # above its default of 4,096); what it refused is reported, not fatal
        rec scale "$level" 1 refused $((add - ${ok:-0}))
        have=$level
    fi
    sleep 0.2
    after=$(status_kb VmRSS "$sc_pid")
    rec scale "$level" 1 anon_kb "$(status_kb RssAnon "$sc_pid")"
    rec scale "$level" 1 pss_kb "$(pss_kb "$sc_pid")"
    sess=$(curl -s --noproxy '*' "http://127.0.0.1:$sc_port/health" | jget mcp.sessions)
    # at the session cap the bench's own session is refused too (503):
    # reported as such, not fatal
    rec scale "$level" 1 sessions "$sess"
    rec scale "$level" 1 rss_kb "$after"
    for ep in sim mcp; do
        # shellcheck disable=SC2046
        if j=$("$build/mcplex" bench -c "$work/scale.toml" --gateway "http://127.0.0.1:$sc_port" --http1.1 \
            --server sim $([ "$ep" = mcp ] && echo --merged) --call echo --args '{"message":"bench"}' \
            -n "$((n_lat / 4))" --concurrency 1 --json); then
            p50=$(node -e 'const o=JSON.parse(require("fs").readFileSync(0,"utf8"));const r=o.rows.find(r=>r.measure==="tools/call"&&r.path==="gateway");console.log(r.p50_us, r.p99_us)' <<<"$j")
        else
            p50="refused refused"
        fi
        rec scale "$level" 1 "call_${ep}_p50_p99" "$p50"
    done
done

# ---- scale: 1 … 50 upstreams with $tools_per tools each at /mcp ----
echo "suite: (${SECONDS}s) upstreams" >&2
rpc() { # URL SID BODY -> "seconds<TAB>body" (one request, timed by curl)
    curl -s --noproxy '*' -o "$work/rpc.body" -w '%{time_total}' -H 'Content-Type: application/json' \
        -H 'Accept: application/json, text/event-stream' ${2:+-H "Mcp-Session-Id: $2"} \
        ${2:+-H 'MCP-Protocol-Version: 2025-06-18'} "$1" -d "$3"
}
# every page of tools/list; prints "milliseconds tools pages"
list_all() { # URL SID
    local cursor= ms=0 tools=0 pages=0 t body
    while :; do
        if [ -n "$cursor" ]; then
            body='{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"cursor":"'$cursor'"}}'
        else
            body='{"jsonrpc":"2.0","id":2,"method":"tools/list"}'
        fi
        t=$(rpc "$1" "$2" "$body")
        ms=$(awk -v a="$ms" -v b="$t" 'BEGIN{printf "%.3f", a + b * 1000}')
        tools=$((tools + $(grep -o '"inputSchema"' "$work/rpc.body" | wc -l)))
        pages=$((pages + 1))
        cursor=$(grep -o '"nextCursor":"[^"]*"' "$work/rpc.body" | cut -d'"' -f4 || true)
        [ -n "$cursor" ] && [ "$pages" -lt 1000 ] || break
    done
    echo "$ms $tools $pages"
}
max_up=${upstream_levels##* }
up_ports=()
for i in $(seq 1 "$max_up"); do
    "$build/sandbox-sim" --listen 127.0.0.1:0 --port-file "$work/up$i.port" --name "up$i" \
        --bearer-env MX_BENCH_TOKEN --extra-tools "$tools_per" --log-level error 2>"$work/up$i.log" &
    pids+=($!)
done
for i in $(seq 1 "$max_up"); do
    wait_file "$work/up$i.port"
    up_ports+=("$(cat "$work/up$i.port")")
done
for k in $upstream_levels; do
    {
        printf '[listen]\naddress = "127.0.0.1:0"\ntls = false\n'
        printf '[proxy]\nlog_level = "error"\nstate_dir = "%s"\npage_size = 10000\nfanout_timeout = "30s"\n' "$work/state-up$k"
        for i in $(seq 1 "$k"); do
            printf '[servers.up%d]\nurl = "http://127.0.0.1:%s/mcp"\nauth = "bearer"\nsecret = "file:%s"\n' \
                "$i" "${up_ports[$((i - 1))]}" "$work/sim.secret"
        done
    } >"$work/up$k.toml"
    # pass 1: a fresh state_dir, so the first initialize fans out to every
    # upstream; pass 2: a second start on the same state_dir, which answers
    # from the catalogue the first left there without contacting any upstream
    for pass in cold cat; do
        rm -f "$work/up$k.gw.port"
        "$build/mcplex" serve -c "$work/up$k.toml" --port-file "$work/up$k.gw.port" 2>>"$work/up$k.gw.log" &
        pids+=($!)
        up_pid=$!
        wait_file "$work/up$k.gw.port"
        u=http://127.0.0.1:$(cat "$work/up$k.gw.port")/mcp
        sleep 0.3
        if [ "$pass" = cold ]; then
            rec ups "$k" 1 rss_kb "$(status_kb VmRSS "$up_pid")"
            rec ups "$k" 1 anon_kb "$(status_kb RssAnon "$up_pid")"
            rec ups "$k" 1 pss_kb "$(pss_kb "$up_pid")"
        fi
        init='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"suite","version":"1"}}}'
        t_init=$(curl -s --noproxy '*' -D "$work/init.hdr" -o /dev/null -w '%{time_total}' \
            -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' "$u" -d "$init")
        sid=$(tr -d '\r' <"$work/init.hdr" | awk -F': ' 'tolower($1)=="mcp-session-id"{print $2}')
        [ -n "$sid" ] || die "upstreams $k ($pass): no session"
        rpc "$u" "$sid" '{"jsonrpc":"2.0","method":"notifications/initialized"}' >/dev/null
        read -r ms1 n1 p1 < <(list_all "$u" "$sid")
        read -r ms2 n2 p2 < <(list_all "$u" "$sid")
        want=$((k * (tools_per + 5)))
        [ "$n1" = "$want" ] && [ "$n2" = "$want" ] || die "upstreams $k ($pass): listed $n1/$n2 tools, want $want"
        sfx=
        [ "$pass" = cat ] && sfx=_cat
        rec ups "$k" 1 "init${sfx}_ms" "$(awk -v t="$t_init" 'BEGIN{printf "%.1f", t * 1000}')"
        rec ups "$k" 1 "list_first${sfx}_ms" "$ms1"
        rec ups "$k" 1 "list_again${sfx}_ms" "$ms2"
        rec ups "$k" 1 tools "$n1"
        rec ups "$k" 1 pages "$p1"
        if [ "$pass" = cold ]; then
            # the catalogue is written once every list of an upstream is in
            for _ in $(seq 1 200); do
                [ "$(find "$work/state-up$k/catalogue" -name '*.json' 2>/dev/null | wc -l)" -ge "$k" ] && break
                sleep 0.05
            done
            got=$(find "$work/state-up$k/catalogue" -name '*.json' 2>/dev/null | wc -l)
            [ "$got" -ge "$k" ] || die "upstreams $k: $got catalogue files of $k after the first start"
        fi
        kill "$up_pid"
        wait "$up_pid" 2>/dev/null || true
    done
done

# ---- report ----
mem=
for name in nginx mcplex mcplex-tls mcplex-ev mcp-hub; do
    mem+="$name=${rss_idle[$name]}/${rss_peak[$name]}/${anon_idle[$name]}/${pss_idle[$name]} "
done
node bench/report.mjs "$results" "$rounds" "$secs" "$n_lat" "${mem% }" "$smoke" "$n_ev" >"$work/report.md"
# the plots next to the report: OUT without .md, then -latency.svg and
# -added.svg; each must hold a curve (bar) per contender (and direct)
plots=${out%.md}
contenders=$(cut -f1,2 "$results" | awk -F'\t' '$1 == "lat" && $2 !~ /^direct@/ { print $2 }' | sort -u | wc -l)
while read -r svg n; do
    case $svg in
    *-latency.svg) want=$((contenders + 1)) ;;
    *) want=$((2 * contenders)) ;;
    esac
    [ "$n" -eq "$want" ] && [ "$(grep -c 'class="\(curve\|bar\)"' "$svg")" -eq "$want" ] ||
        die "plot $svg holds $n curves or bars, want $want"
done < <(node bench/plots.mjs "$results" "$plots")
printf '\n![tools/call latency by contender](%s)\n\n![added latency](%s)\n' \
    "$(basename "$plots")-latency.svg" "$(basename "$plots")-added.svg" >>"$work/report.md"
cp "$work/report.md" "$out"
cat "$out"
echo "suite: report written to $out" >&2

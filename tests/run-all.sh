#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The one test command, for developers and CI alike (run from anywhere):
#   1. .ci/setup (packages and tests/js/node_modules)
#   2. gcc Release build with -Werror into build/, ctest (and mcplex under valgrind)
#   3. clang Debug build with ASan+UBSan and -Werror into build-asan/, ctest
#   4. clang-format --dry-run --Werror over the C sources
#   5. a grep for banned libc functions
#   6. the include rule (tests/check-includes.sh, ARCHITECTURE.md)
# MX_BUILD_DIR_PREFIX (default "build") names the build directories:
# <prefix>/, <prefix>-asan/ and <prefix>-logs/.
#
# Every step runs even when an earlier one failed (a step that needs a failed
# build is skipped and counted as failed). Exits non-zero on any failure.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

JOBS=2
SRC_DIRS=(proxy config certs examples tests bench)
BANNED='strcpy|strcat|sprintf|vsprintf|strtok|atoi|atol|gets|strncpy'
PREFIX=${MX_BUILD_DIR_PREFIX:-build}
LOG_DIR=$PREFIX-logs

mkdir -p "$LOG_DIR"
declare -a SUMMARY=()
TESTS_PASSED=0
TESTS_FAILED=0
FAILED_STEPS=0

note() { printf '\n=== %s\n' "$*"; }

record() { # record STEP RESULT SECONDS [DETAIL]
    SUMMARY+=("$(printf '%-26s %-6s %5ss  %s' "$1" "$2" "$3" "${4:-}")")
    if [ "$2" != ok ]; then
        FAILED_STEPS=$((FAILED_STEPS + 1))
    fi
}

# run_logged NAME LOGFILE CMD...: output to the log; its tail on failure.
run_logged() {
    local name=$1 logf=$2
    shift 2
    if "$@" >"$logf" 2>&1; then
        return 0
    fi
    printf '%s failed; last lines of %s:\n' "$name" "$logf" >&2
    tail -n 80 "$logf" >&2
    return 1
}

step_setup() {
    local t0=$SECONDS
    note "setup"
    if .ci/setup; then
        record setup ok $((SECONDS - t0))
    else
        record setup FAIL $((SECONDS - t0))
    fi
}

# ctest_run NAME BUILD_DIR ARGS...: runs ctest, adds its counts to the totals.
# A label selection with no tests counts as nothing; a test that fails counts.
ctest_run() {
    local name=$1 dir=$2
    shift 2
    local logf=$LOG_DIR/${name// /-}.log t0=$SECONDS rc=0 line passed failed skipped total
    ( cd "$dir" && ctest --output-on-failure --no-tests=ignore "$@" ) 2>&1 | tee "$logf" || rc=$?
    line=$(grep -E '^[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$logf" | tail -n 1 || true)
    if [ -n "$line" ]; then
        failed=$(sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\1/' <<<"$line")
        total=$(sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\2/' <<<"$line")
        # ctest counts a Skipped test (SKIP_RETURN_CODE) among the passed; here it is not.
        skipped=$(grep -cE '^[[:space:]]*[0-9]+ - .* \(Skipped\)$' "$logf" || true)
        passed=$((total - failed - skipped))
        TESTS_PASSED=$((TESTS_PASSED + passed))
        TESTS_FAILED=$((TESTS_FAILED + failed))
    else
        passed=0
        failed=0
        skipped=0
    fi
    if [ "$rc" -eq 0 ]; then
        record "$name" ok $((SECONDS - t0)) "$passed passed, $skipped skipped"
    else
        [ "$failed" -gt 0 ] || TESTS_FAILED=$((TESTS_FAILED + 1))
        record "$name" FAIL $((SECONDS - t0)) "$passed passed, $failed failed"
    fi
    return 0
}

# build_and_test NAME DIR CMAKE_ARGS...
build_and_test() {
    local name=$1 dir=$2
    shift 2
    local t0=$SECONDS
    note "$name: configure and build in $dir"
    if ! run_logged "$name configure" "$LOG_DIR/$name-configure.log" \
        cmake -S . -B "$dir" -DMX_WERROR=ON "$@"; then
        record "$name build" FAIL $((SECONDS - t0)) "configure failed"
        TESTS_FAILED=$((TESTS_FAILED + 1))
        return 0
    fi
    if ! run_logged "$name build" "$LOG_DIR/$name-build.log" cmake --build "$dir" -j "$JOBS"; then
        record "$name build" FAIL $((SECONDS - t0)) "see $LOG_DIR/$name-build.log"
        TESTS_FAILED=$((TESTS_FAILED + 1))
        return 0
    fi
    record "$name build" ok $((SECONDS - t0))
    note "$name: unit, fuzz-replay and other tests (-j$JOBS)"
    ctest_run "$name unit" "$dir" -j "$JOBS" -LE 'integration|valgrind'
    # Integration tests start several processes each and some time them:
    # one at a time on a two-core machine.
    note "$name: integration tests"
    ctest_run "$name integration" "$dir" -L integration
    # mcplex under valgrind memcheck (defined in builds without sanitizers)
    note "$name: valgrind"
    ctest_run "$name valgrind" "$dir" -L valgrind
}

c_sources() {
    local dirs=()
    for d in "${SRC_DIRS[@]}"; do
        [ -d "$d" ] && dirs+=("$d")
    done
    [ "${#dirs[@]}" -gt 0 ] || return 0
    find "${dirs[@]}" -name node_modules -prune -o -type f \( -name '*.c' -o -name '*.h' \) -print0
}

step_format() {
    local t0=$SECONDS n
    note "clang-format --dry-run --Werror"
    n=$(c_sources | tr -cd '\0' | wc -c)
    if [ "$n" -eq 0 ]; then
        record clang-format ok $((SECONDS - t0)) "no files"
        return 0
    fi
    if c_sources | xargs -0 clang-format --dry-run --Werror; then
        record clang-format ok $((SECONDS - t0)) "$n files"
        TESTS_PASSED=$((TESTS_PASSED + 1))
    else
        record clang-format FAIL $((SECONDS - t0)) "run clang-format -i on the files above"
        TESTS_FAILED=$((TESTS_FAILED + 1))
    fi
}

step_banned() {
    local t0=$SECONDS hits
    note "banned functions ($BANNED)"
    # A call: the name not preceded by an identifier character (so snprintf,
    # fgets and strtok_r pass), then optional spaces and '('.
    hits=$(c_sources | xargs -0 -r grep -nE "(^|[^[:alnum:]_])($BANNED)[[:space:]]*\(" || true)
    if [ -z "$hits" ]; then
        record banned-functions ok $((SECONDS - t0))
        TESTS_PASSED=$((TESTS_PASSED + 1))
    else
        printf '%s\n' "$hits"
        record banned-functions FAIL $((SECONDS - t0)) "$(wc -l <<<"$hits") call(s)"
        TESTS_FAILED=$((TESTS_FAILED + 1))
    fi
}

# Every fuzz target under libFuzzer (clang, ASan+UBSan) for a bounded time,
# starting from its in-tree corpus; a crash fails the step and leaves its
# input in $LOG_DIR. MX_FUZZ_SECONDS per target (default 30).
step_fuzz() {
    local t0=$SECONDS dir=$PREFIX-fuzz secs=${MX_FUZZ_SECONDS:-30} failed=0 t
    note "fuzz smoke (${secs}s per target)"
    if ! run_logged "fuzz configure" "$LOG_DIR/fuzz-configure.log" \
        cmake -S . -B "$dir" -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug -DMX_WERROR=ON \
        -DMX_FUZZ=ON -DMX_SANITIZE=address,undefined ||
        ! run_logged "fuzz build" "$LOG_DIR/fuzz-build.log" cmake --build "$dir" -j "$JOBS"; then
        record fuzz FAIL $((SECONDS - t0)) "build failed"
        TESTS_FAILED=$((TESTS_FAILED + 1))
        return 0
    fi
    for bin in "$dir"/fuzz/fuzz_*; do
        t=${bin##*/fuzz_}
        mkdir -p "$dir/work-$t"
        if run_logged "fuzz $t" "$LOG_DIR/fuzz-$t.log" "$bin" -max_total_time="$secs" \
            -rss_limit_mb=2048 -artifact_prefix="$LOG_DIR/fuzz-$t-" "$dir/work-$t" \
            "tests/fuzz/corpus/$t"; then
            TESTS_PASSED=$((TESTS_PASSED + 1))
        else
            failed=$((failed + 1))
            TESTS_FAILED=$((TESTS_FAILED + 1))
        fi
    done
    if [ "$failed" -eq 0 ]; then
        record fuzz ok $((SECONDS - t0))
    else
        record fuzz FAIL $((SECONDS - t0)) "$failed target(s) crashed"
    fi
}

step_includes() {
    local t0=$SECONDS
    note "include rule (tests/check-includes.sh)"
    if tests/check-includes.sh; then
        record include-rule ok $((SECONDS - t0))
        TESTS_PASSED=$((TESTS_PASSED + 1))
    else
        record include-rule FAIL $((SECONDS - t0)) "see ARCHITECTURE.md, Layers"
        TESTS_FAILED=$((TESTS_FAILED + 1))
    fi
}

START=$SECONDS
step_setup

build_and_test gcc-release "$PREFIX" \
    -DCMAKE_C_COMPILER=gcc -DCMAKE_BUILD_TYPE=Release

# Any sanitizer report fails the test that triggered it; leaks included.
export ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:detect_stack_use_after_return=1:strict_string_checks=1:check_initialization_order=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
build_and_test clang-asan "$PREFIX-asan" \
    -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug -DMX_SANITIZE=address,undefined
unset ASAN_OPTIONS UBSAN_OPTIONS

step_fuzz
step_format
step_banned
step_includes

note "summary ($((SECONDS - START)) s)"
printf '%s\n' "${SUMMARY[@]}"
if [ "$FAILED_STEPS" -gt 0 ]; then
    printf 'FAILED: %d step(s)\n' "$FAILED_STEPS"
else
    printf 'all steps passed\n'
fi
# Last, alone on its line: the totals CI reads.
printf 'tests: %d passed, %d failed\n' "$TESTS_PASSED" "$TESTS_FAILED"
[ "$FAILED_STEPS" -eq 0 ]

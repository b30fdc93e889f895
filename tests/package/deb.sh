#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The Debian package, checked without changing the system: cpack -G DEB into
# a temporary directory; dpkg-deb -I (control fields, dependencies) and -c
# (the file list); dpkg-deb -x into a temporary root, where the extracted
# mcplex must run --version, its man page must render without warnings and
# name every command and option the binary has, the user unit must pass
# systemd-analyze (when present), and every library the binary needs must
# come from a declared dependency.
#
# With MX_PACKAGE_INSTALL=1 (CI sets it; it needs root) it also runs
# dpkg -i, /usr/bin/mcplex --version, and dpkg --purge. It never replaces an
# mcplex package that was installed before it ran.
#
# Before that, `cmake --install` into a temporary prefix must lay out the same
# files under that prefix.
#
# usage: deb.sh CPACK BUILD_DIR [CMAKE]
# Exit status: 0 passed, 1 failed, 77 skipped (no dpkg-deb: not Debian).
set -euo pipefail

cpack=$1
build=$2
cmake=${3:-cmake}

if ! command -v dpkg-deb >/dev/null 2>&1; then
    echo "skipped: dpkg-deb not found (not a Debian system)"
    exit 77
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/mcplex-deb.XXXXXX")
installed=0
cleanup() {
    if [ "$installed" = 1 ]; then
        dpkg --purge mcplex >/dev/null 2>&1 || echo "warning: dpkg --purge mcplex failed" >&2
    fi
    rm -rf "$tmp"
}
trap cleanup EXIT

fail() {
    echo "FAIL: $*" >&2
    exit 1
}
step() { printf '== %s\n' "$*"; }

step "cmake --install into a temporary prefix"
"$cmake" --install "$build" --prefix "$tmp/prefix" >"$tmp/install.log" 2>&1 ||
    { cat "$tmp/install.log" >&2; fail "cmake --install"; }
for f in bin/mcplex lib/systemd/user/mcplex.service share/man/man1/mcplex.1.gz \
    share/doc/mcplex/README.md share/doc/mcplex/examples/configs/demo.toml; do
    [ -f "$tmp/prefix/$f" ] || fail "cmake --install did not install $f"
done
[ -x "$tmp/prefix/bin/mcplex" ] || fail "the installed mcplex is not executable"
timeout 10 "$tmp/prefix/bin/mcplex" --version

step "cpack -G DEB"
if ! timeout 240 "$cpack" -G DEB -B "$tmp/out" --config "$build/CPackConfig.cmake" \
    >"$tmp/cpack.log" 2>&1; then
    cat "$tmp/cpack.log" >&2
    fail "cpack failed"
fi
shopt -s nullglob
debs=("$tmp"/out/*.deb)
shopt -u nullglob
[ "${#debs[@]}" -eq 1 ] || fail "expected one .deb in $tmp/out, found ${#debs[@]}"
deb=${debs[0]}
echo "built ${deb##*/}"

step "control fields (dpkg-deb -I)"
dpkg-deb -I "$deb"
field() { dpkg-deb -f "$deb" "$1"; }
[ "$(field Package)" = mcplex ] || fail "Package is '$(field Package)'"
[ "$(field Architecture)" = "$(dpkg --print-architecture)" ] ||
    fail "Architecture is '$(field Architecture)'"
version=$(field Version)
[ -n "$version" ] || fail "no Version"
[ -n "$(field Maintainer)" ] || fail "no Maintainer"
[ -n "$(field Description)" ] || fail "no Description"
depends=$(field Depends)
declared=()
IFS=',' read -ra parts <<<"$depends"
for p in "${parts[@]}"; do
    p=${p# }
    declared+=("${p%% *}")
done
has_dep() {
    local d
    for d in "${declared[@]}"; do
        [ "$d" = "$1" ] && return 0
    done
    return 1
}
for p in libc6 libcurl4 libev4 libhttp-parser2.9 libjansson4 libnghttp2-14 libssl3; do
    has_dep "$p" || fail "Depends lacks $p: $depends"
done

step "file list (dpkg-deb -c)"
dpkg-deb -c "$deb" | tee "$tmp/list.txt"
# tar's listing: perms owner/group size date time path
awk '{ print $6 }' "$tmp/list.txt" >"$tmp/paths.txt"
for want in ./usr/bin/mcplex ./usr/lib/systemd/user/mcplex.service \
    ./usr/share/man/man1/mcplex.1.gz ./usr/share/doc/mcplex/README.md \
    ./usr/share/doc/mcplex/examples/systemd/mcplex.service \
    ./usr/share/doc/mcplex/examples/configs/demo.toml; do
    grep -qxF "$want" "$tmp/paths.txt" || fail "$want is not in the package"
done
if grep -vE '^\./(usr/.*)?$' "$tmp/paths.txt"; then
    fail "files outside /usr (above)"
fi
if grep -E 'sandbox-sim|/tests?/|it_|test_|\.key$|\.pem$' "$tmp/paths.txt"; then
    fail "test programs or key material in the package (above)"
fi
if awk '$2 != "root/root"' "$tmp/list.txt" | grep .; then
    fail "files not owned by root/root (above)"
fi
grep -E ' \./usr/bin/mcplex$' "$tmp/list.txt" | grep -q '^-rwxr-xr-x' ||
    fail "/usr/bin/mcplex is not mode 0755"

step "dpkg-deb -x into a temporary root"
root=$tmp/root
dpkg-deb -x "$deb" "$root"
bin=$root/usr/bin/mcplex
got=$(timeout 10 "$bin" --version)
[ "$got" = "mcplex $version" ] || fail "--version says '$got', the package is $version"
echo "$got"

step "libraries: every NEEDED entry comes from a declared dependency"
sonames=$(readelf -d "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
[ -n "$sonames" ] || fail "readelf found no NEEDED entries"
for so in $sonames; do
    # awk reads to the end: exiting early could kill ldconfig with SIGPIPE,
    # which pipefail would turn into a silent failure of this script
    path=$(ldconfig -p | awk -v s="$so" '$1 == s && p == "" { p = $NF } END { if (p != "") print p }')
    [ -n "$path" ] || fail "$so is not known to ldconfig"
    owner=$(dpkg -S "$path" 2>/dev/null || dpkg -S "$(readlink -f "$path")" 2>/dev/null || true)
    owner=${owner%%:*}
    [ -n "$owner" ] || fail "no package owns $path ($so)"
    has_dep "$owner" || fail "$so comes from $owner, which Depends does not name"
    echo "$so: $owner"
done

step "man page"
man_gz=$root/usr/share/man/man1/mcplex.1.gz
if command -v man >/dev/null 2>&1; then
    MANWIDTH=100 man --warnings -l "$man_gz" >"$tmp/man.txt" 2>"$tmp/man.err" || true
elif command -v groff >/dev/null 2>&1; then
    gzip -dc "$man_gz" | groff -man -Tutf8 -ww >"$tmp/man.txt" 2>"$tmp/man.err" || true
else
    echo "neither man nor groff: rendering not checked"
    gzip -dc "$man_gz" >"$tmp/man.txt"
    : >"$tmp/man.err"
fi
if [ -s "$tmp/man.err" ]; then
    cat "$tmp/man.err" >&2
    fail "the man page renders with warnings"
fi
# roff escapes hyphens (\-); compare words with them removed
sed 's/\\-/-/g; s/‐/-/g' "$tmp/man.txt" >"$tmp/man.plain"
grep -q 'mcplex - local gateway' "$tmp/man.plain" || fail "the man page has no NAME line"
commands=$("$bin" --help | awk '/^commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 }')
[ -n "$commands" ] || fail "mcplex --help lists no commands"
for c in $commands; do
    grep -q "mcplex $c" "$tmp/man.plain" || fail "the man page does not cover 'mcplex $c'"
done
for c in serve status reload bench; do
    for opt in $("$bin" "$c" --help | grep -oE -- '--[a-z][a-z-]+' | sort -u); do
        grep -qF -- "$opt" "$tmp/man.plain" || fail "the man page lacks '$c $opt'"
    done
done
echo "covers: ${commands//$'\n'/ }"

step "systemd user unit"
unit=$root/usr/lib/systemd/user/mcplex.service
grep -qx 'ExecStart=mcplex serve' "$unit" || fail "ExecStart is not 'mcplex serve'"
# SIGHUP reloads (mcplex(1)): systemctl reload must send it
grep -qx 'ExecReload=kill -HUP $MAINPID' "$unit" || fail "ExecReload does not send SIGHUP"
grep -qx 'Restart=on-failure' "$unit" || fail "no Restart=on-failure"
grep -qx 'WantedBy=default.target' "$unit" || fail "not wanted by default.target"
if command -v systemd-analyze >/dev/null 2>&1; then
    # ExecStart is resolved on systemd's fixed search path, where nothing
    # is installed yet: verify a copy that names the extracted binary.
    mkdir -p "$tmp/unit" "$tmp/run"
    sed "s|^ExecStart=mcplex |ExecStart=$bin |" "$unit" >"$tmp/unit/mcplex.service"
    if ! MANPATH=$root/usr/share/man XDG_RUNTIME_DIR=$tmp/run \
        timeout 60 systemd-analyze --user verify "$tmp/unit/mcplex.service" >"$tmp/verify.log" 2>&1; then
        cat "$tmp/verify.log" >&2
        fail "systemd-analyze --user verify"
    fi
    echo "systemd-analyze --user verify: ok"
else
    echo "systemd-analyze not found: unit not verified"
fi

if [ "${MX_PACKAGE_INSTALL:-0}" = 1 ]; then
    step "dpkg -i (MX_PACKAGE_INSTALL=1)"
    [ "$(id -u)" -eq 0 ] || fail "MX_PACKAGE_INSTALL=1 needs root"
    if [ "$(dpkg-query -W -f='${Status}' mcplex 2>/dev/null || true)" = "install ok installed" ]; then
        echo "an mcplex package is installed already; not replacing it"
    else
        installed=1
        timeout 120 dpkg -i "$deb" || fail "dpkg -i"
        got=$(timeout 10 /usr/bin/mcplex --version)
        [ "$got" = "mcplex $version" ] || fail "installed --version says '$got'"
        echo "installed: $got"
        dpkg -L mcplex | grep -qx /usr/lib/systemd/user/mcplex.service ||
            fail "dpkg -L does not list the user unit"
        timeout 120 dpkg --purge mcplex >/dev/null || fail "dpkg --purge"
        installed=0
        [ ! -e /usr/bin/mcplex ] || fail "/usr/bin/mcplex is left after dpkg --purge"
        echo "removed again"
    fi
else
    echo "dpkg -i not run (set MX_PACKAGE_INSTALL=1, as root, to run it)"
fi
echo "PASS"

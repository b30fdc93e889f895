#!/bin/sh
# SPDX-License-Identifier: MIT
#
# A stdio MCP server that misbehaves before it becomes one, for it_stdio.c:
#
#   stdio-child.sh [--pid-file F] [--junk] [--sleep S] [--swallow] -- CMD [ARGS...]
#
#   --pid-file F  append this process's pid to F (CMD keeps it: exec)
#   --junk        write lines that are not JSON-RPC to stdout (text, broken
#                 JSON, JSON that is no message, an answer to nothing, a
#                 terminal escape, a line over 16 MiB) and noise to stderr,
#                 the first line naming the value of $MX_IT_JUNK_TOKEN
#   --sleep S     sleep S seconds first (a slow installer)
#   --swallow     read and drop the first line of stdin (an installer that
#                 re-execs and loses the first message)
#
# then exec CMD ARGS.
set -eu

pid_file=
junk=0
sleep_s=
swallow=0
while [ $# -gt 0 ]; do
    case "$1" in
    --pid-file) pid_file=$2; shift 2 ;;
    --junk) junk=1; shift ;;
    --sleep) sleep_s=$2; shift 2 ;;
    --swallow) swallow=1; shift ;;
    --) shift; break ;;
    *) echo "stdio-child.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
if [ $# -eq 0 ]; then
    echo "stdio-child.sh: no command" >&2
    exit 2
fi

if [ -n "$pid_file" ]; then
    echo $$ >>"$pid_file"
fi
if [ -n "$sleep_s" ]; then
    sleep "$sleep_s"
fi
if [ "$swallow" = 1 ]; then
    IFS= read -r _first || true
fi
if [ "$junk" = 1 ]; then
    echo "the token is ${MX_IT_JUNK_TOKEN:-unset}" >&2
    printf 'npm notice: installing packages\n'
    printf '{"jsonrpc": "2.0", "method": \n'
    printf '42\n'
    printf '[1, 2, 3]\n'
    printf '{"jsonrpc":"2.0","id":"nobody-asked","result":{}}\n'
    printf '\033[31mred banner\033[0m\r\n'
    head -c 17000000 /dev/zero | tr '\0' x
    printf '\n'
    i=0
    while [ $i -lt 300 ]; do
        echo "noise line $i" >&2
        i=$((i + 1))
    done
fi
exec "$@"

#!/usr/bin/env bash
# script_cost.sh [CYCLES] -- what each kind of lock costs a Redis server, counted
# in instructions rather than time, so that the figure is the same on a busy
# machine as on a quiet one: a redis-server of its own (a unix socket in a
# scratch directory) runs under valgrind's callgrind, and CYCLES (default
# 3000) acquire + release cycles of one variant, pipelined, go to it with the
# commands and the scripts of lua/ the library sends for that variant; its
# instruction count, minus that of a run with no command, ÷ CYCLES. One
# server per variant:
#   mutex      SET NX PX, then release.lua
#   permit K   acquire_permit.lua at limit K (every slot free), then
#              release.lua of the slot (K = 1, 8, 64)
#   reader     acquire_shared.lua, then release_shared.lua
# Prints a markdown table on stdout (bench/kinds.sh puts it in its report).
# Needs valgrind and redis-cli.
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
export LC_ALL=C

CYCLES=${1:-3000}
[[ $CYCLES =~ ^[1-9][0-9]*$ ]] || { echo "script_cost.sh: CYCLES wants a positive number" >&2; exit 2; }
command -v valgrind >/dev/null || fail "valgrind is not installed (make deps)"
command -v redis-cli >/dev/null || fail "redis-cli is not installed"
bench_scratch script-cost
SERVER_PID=""
# finish_hook: the server of a run cut short (Ctrl-C, an error)
finish_hook() { [[ -z $SERVER_PID ]] || { kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; }; }
TOKEN=0123456789abcdef0123456789abcdef01234567 # (a token's length: 40 characters)
TTL=10000

# instructions CYCLE_LINES: the instruction count of a callgrind-run server
# that loads the scripts and is sent CYCLES times the command lines
# CYCLE_LINES ("{i}" the cycle's number, "@NAME" the script NAME's sha1).
instructions() {
  local dir=$SCRATCH/run sock i name sha cmd
  rm -rf "$dir" && mkdir -p "$dir"
  sock=$dir/redis.sock
  valgrind --tool=callgrind --callgrind-out-file="$dir/cg.out" redis-server --port 0 --unixsocket "$sock" \
    --save '' --appendonly no --dir "$dir" >"$dir/log" 2>&1 &
  SERVER_PID=$!
  for ((i = 0; i < 300; i++)); do redis-cli -s "$sock" ping >/dev/null 2>&1 && break; sleep 0.1; done
  ((i < 300)) || fail "redis-server under valgrind did not answer (see $dir/log)"
  cmd=$1
  for name in acquire_permit acquire_shared release release_shared; do
    [[ $cmd == *"@$name "* ]] || continue
    sha=$(redis-cli -s "$sock" -x SCRIPT LOAD <"$ROOT/lua/$name.lua")
    cmd=${cmd//@$name /$sha }
  done
  # the cycles as RESP, pipelined
  awk -v n="$CYCLES" -v lines="$cmd" 'BEGIN {
      k = split(lines, L, "\n")
      for (i = 0; i < n; i++) for (j = 1; j <= k; j++) {
        if (L[j] == "") continue
        line = L[j]; gsub(/\{i\}/, i, line); m = split(line, w, " ")
        printf "*%d\r\n", m; for (a = 1; a <= m; a++) printf "$%d\r\n%s\r\n", length(w[a]), w[a]
      } }' | redis-cli -s "$sock" --pipe >/dev/null
  redis-cli -s "$sock" shutdown nosave >/dev/null 2>&1 || true
  wait "$SERVER_PID" || true
  SERVER_PID=""
  sed -n 's/^\(summary\|totals\): *\([0-9]*\).*/\2/p' "$dir/cg.out" | head -n 1
}

declare -A COST
BASE=$(instructions "")
per_cycle() { awk -v t="$1" -v b="$BASE" -v n="$CYCLES" 'BEGIN { printf "%.0f\n", (t - b) / n }'; }
note "server instructions: $CYCLES cycles a variant, redis-server under callgrind"
COST[mutex]=$(per_cycle "$(instructions "SET lock:{i} $TOKEN NX PX $TTL
EVALSHA @release 1 lock:{i} $TOKEN 1")")
for k in 1 8 64; do
  COST[permit$k]=$(per_cycle "$(instructions "EVALSHA @acquire_permit 1 sem:{i} $TOKEN $TTL $k
EVALSHA @release 1 sem:{i}:permit:0 $TOKEN p $k")")
done
COST[reader]=$(per_cycle "$(instructions "EVALSHA @acquire_shared 1 rw:{i} $TOKEN $TTL
EVALSHA @release_shared 1 rw:{i} $TOKEN 1")")

echo "| variant (one node) | server instructions per acquire + release cycle | ÷ mutex |"
echo "|---|---:|---:|"
for v in "mutex|mutex" "permit1|permit, limit 1" "permit8|permit, limit 8" "permit64|permit, limit 64" "reader|shared (a reader)"; do
  printf '| %s | %s | %s |\n' "${v#*|}" "${COST[${v%%|*}]}" "$(ratio_x "${COST[${v%%|*}]}" "${COST[mutex]}")"
done

#!/usr/bin/env bash
# kinds.sh [--quick] [--note TEXT] -- what a permit of a semaphore and a
# reader's lock cost next to a plain mutex (issue 15, item 6), on a 5-node
# cluster of its own (deploy/cluster.sh; always stopped at the end, also on
# Ctrl-C).
#
# Runs bench_kinds (bench/bench_kinds.c says what each row is): one caller,
# acquire + release cycles, the variants interleaved in rounds so that the
# noise of a shared machine falls on all of them alike. Full mode: 30 rounds
# of 300 cycles per variant (under a minute); it writes
# bench/RESULTS-kinds.md. --quick: 6 rounds of 100 (a few seconds), written
# to $BENCH_BUILD/bench/RESULTS-kinds-quick.md. --note TEXT: a paragraph for
# the report (what to read in the figures). The table is printed either way.
#
# Environment: BENCH_BUILD (default build-bench), the CMake build directory
# configured with -DREDLOCK_BUILD_BENCH=ON (`make bench-kinds` does it all).
set -euo pipefail
export LC_ALL=C

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BENCH_BUILD:-$ROOT/build-bench}
BIN=$BUILD/bench/bench_kinds
CLUSTER_SH=$ROOT/deploy/cluster.sh

QUICK=0
NOTE=""
while (($#)); do
  case $1 in
    --quick) QUICK=1 ;;
    --note) NOTE=${2:-}; shift ;;
    -h|--help) sed -n '2,16p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "kinds.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
  shift
done

if ((QUICK)); then
  MODE=quick ROUNDS=6 BLOCK=100 OUT_MD=$BUILD/bench/RESULTS-kinds-quick.md
else
  MODE=full ROUNDS=30 BLOCK=300 OUT_MD=$ROOT/bench/RESULTS-kinds.md
fi

START=$SECONDS
note() { printf '[%3ds] %s\n' "$((SECONDS - START))" "$*" >&2; }
fail() { note "error: $*"; exit 1; }

[[ -x $BIN ]] || fail "$BIN is not built (run: make bench-kinds)"
command -v redis-server >/dev/null || fail "redis-server is not installed"

SCRATCH=$(mktemp -d /tmp/redlock-bench-kinds.XXXXXX)
LOG=$SCRATCH/stderr.log
CLUSTER=""

finish() {
  local rc=$?
  [[ -z $CLUSTER ]] || "$CLUSTER_SH" stop -d "$CLUSTER" >/dev/null 2>&1 || true
  if ((rc != 0)) && [[ -s $LOG ]]; then
    echo "--- the run's last diagnostics:" >&2
    tail -n 20 "$LOG" >&2 || true
  fi
  rm -rf "$SCRATCH"
}
trap finish EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
CLUSTER=$SCRATCH/cluster
"$CLUSTER_SH" start -n 5 -d "$CLUSTER" >/dev/null 2>>"$LOG" || fail "deploy/cluster.sh could not start 5 nodes"
NODES=$(paste -sd, "$CLUSTER/nodes")
note "$MODE mode: $ROUNDS rounds of $BLOCK cycles per variant on 5 nodes"

STATUS=0
# --foreground: the run stays in our process group, so Ctrl-C reaches it
timeout --foreground -k 5 600 "$BIN" -u "$NODES" -r "$ROUNDS" -b "$BLOCK" >"$SCRATCH/table.md" 2>>"$LOG" || STATUS=$?
if ((STATUS == 130 || STATUS == 143)); then exit "$STATUS"; fi
"$CLUSTER_SH" stop -d "$CLUSTER" >/dev/null 2>>"$LOG" || true
CLUSTER=""
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)
grep -q '^| variant' "$SCRATCH/table.md" || fail "bench_kinds printed no table (exit $STATUS)"

DATE=$(date -u '+%Y-%m-%d %H:%M UTC')
CPU=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
REV=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo "?")
LOOSE=$(git -C "$ROOT" status --porcelain -- src include lua 2>/dev/null | awk '{ print $2 }' | paste -sd' ' -)
REDIS=$(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p')
VERSION=$("$BIN" --version 2>/dev/null || echo "?")
SHOWN="make bench-kinds"
((QUICK)) && SHOWN="make bench-kinds-quick"

mkdir -p "$(dirname "$OUT_MD")"
{
  echo "# libredlock: semaphores and read-write locks against a plain mutex (issue 15, item 6)"
  echo
  echo "\`$SHOWN\` (\`bench/kinds.sh$([[ $MODE == quick ]] && echo ' --quick')\`, which runs"
  echo "\`bench_kinds -u <5 local nodes> -r $ROUNDS -b $BLOCK\`), $DATE, $((SECONDS - START)) s."
  echo "Library at git $REV${LOOSE:+ with uncommitted changes in $LOOSE}; libredlock $VERSION; redis-server $REDIS;"
  echo "5 local redis-server masters started for the run, default options, TTL 10 s."
  echo "Machine: $(nproc) cores ($CPU), shared by the client, the 5 servers and other users;"
  echo "load average $LOAD_BEFORE before, $LOAD_AFTER after."
  echo
  echo "One caller cycles acquire + release, one attempt each (wait_ms 0 unless said), each variant on a"
  echo "resource of its own. The variants run interleaved: $ROUNDS rounds, each a block of $BLOCK cycles of every"
  echo "variant, the order rotated by one each round. Percentiles are over all the rounds' cycles; the ratio is"
  echo "the acquire + release p50 over the mutex's; the per-round range is that ratio computed inside each round"
  echo "(its block p50s), the least and the largest. The permits \"held by others\" are slots 0 .. k-1 taken by a"
  echo "second handle for the whole run, so the probe passes them and takes the last slot; the 8 other readers"
  echo "likewise hold the resource's hash. Targets (issue 15): a permit at limit 8 with a slot free ≤ 1.5 × the"
  echo "mutex, a reader ≤ 1.3 × (an exclusive lock is the mutex row); the busy rows have no target."
  if [[ -n $NOTE ]]; then
    echo
    echo "$NOTE"
  fi
  echo
  cat "$SCRATCH/table.md"
  ((STATUS == 0)) || { echo; echo "bench_kinds exited with status $STATUS."; }
} >"$OUT_MD"

echo
cat "$SCRATCH/table.md"
echo
echo "Report: $OUT_MD"
exit "$STATUS"

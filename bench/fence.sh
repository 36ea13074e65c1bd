#!/usr/bin/env bash
# fence.sh [--quick] [--note TEXT] [--runs N] -- what a fencing token costs
# next to a plain lock (issue 26, item 2), on a 5-node cluster of its own
# (deploy/cluster.sh; always stopped at the end, also on Ctrl-C).
#
# Runs bench_fence (bench/bench_fence.c says what each row is) N times in a
# row on the same cluster (default 3; --quick 1): one caller's acquire and
# acquire + release latency, plain and fenced handles interleaved in rounds
# with a floor of raw round trips over hiredis, then 32 threads' throughput
# in alternating blocks. Full mode: 30 rounds of 300 cycles per variant and
# 10 throughput rounds of 1 s per kind, per run (a few minutes in all); it
# writes bench/RESULTS-fence.md with every run's tables and the spread of
# the two headline ratios over the runs. --quick: 6 rounds of 100 cycles, 3
# throughput rounds of 0.5 s, one run (about 20 s), written to
# $BENCH_BUILD/bench/RESULTS-fence-quick.md. --note TEXT: a paragraph for
# the report; bench/fence-notes.md (what changed, where the time goes) is
# copied in after the headline. The tables are printed either way. The two
# targets (bench/targets.tsv) are judged on the medians over the runs;
# under bench/all.sh (`make bench`) they are rows of the summary.
#
# Environment: BENCH_BUILD (default build-bench), the CMake build directory
# configured with -DREDLOCK_BUILD_BENCH=ON (`make bench-fence` does it all).
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
export LC_ALL=C

BIN=$BUILD/bench/bench_fence

QUICK=0
NOTE=""
RUNS=""
while (($#)); do
  case $1 in
    --quick) QUICK=1 ;;
    --note) NOTE=${2:-}; shift ;;
    --runs) RUNS=${2:-}; shift ;;
    -h|--help) sed -n '2,20p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "fence.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
  shift
done

if ((QUICK)); then
  MODE=quick ARGS=(-r 6 -b 100 --tr 3 -d 0.5 --warmup 100) OUT_MD=$BUILD/bench/RESULTS-fence-quick.md
  RUNS=${RUNS:-1}
else
  MODE=full ARGS=(-r 30 -b 300 --tr 10 -d 1) OUT_MD=$ROOT/bench/RESULTS-fence.md
  RUNS=${RUNS:-3}
fi
[[ $RUNS =~ ^[1-9][0-9]*$ ]] || { echo "fence.sh: --runs wants a positive number" >&2; exit 2; }

[[ -x $BIN ]] || fail "$BIN is not built (run: make bench-fence)"
command -v redis-server >/dev/null || fail "redis-server is not installed"

DIAG_WHAT="the run's"
bench_scratch fence
cluster_up
note "$MODE mode: $RUNS run(s) of bench_fence ${ARGS[*]} on 5 nodes"

STATUS=0
for ((k = 1; k <= RUNS; k++)); do
  note "run $k/$RUNS"
  st=0
  # --foreground: the run stays in our process group, so Ctrl-C reaches it
  timeout --foreground -k 5 900 "$BIN" -u "$NODES" "${ARGS[@]}" >"$SCRATCH/run$k.md" 2>>"$LOG" || st=$?
  if ((st == 130 || st == 143)); then exit "$st"; fi
  ((st == 0)) || STATUS=$st
  grep -q '^| variant' "$SCRATCH/run$k.md" || fail "bench_fence printed no table in run $k (exit $st)"
done
cluster_down

# The two headline ratios of every run, one a line: the fenced row's
# "acquire p50 ÷ base" (serial) and its "÷ plain" in the throughput table.
column_of_runs() {
  local col=$1 pat=$2
  for ((k = 1; k <= RUNS; k++)); do
    grep -F "$pat" "$SCRATCH/run$k.md" | head -n 1 | awk -F'|' -v c="$col" '{ gsub(/[ ×]/, "", $c); print $c }'
  done
}
# spread_of COL PATTERN: "median× (least ..., largest ..., over N run(s))"
spread_of() {
  local v
  v=$(column_of_runs "$1" "$2")
  [[ -z $v ]] || printf '%s× (least %s×, largest %s×, over %d run(s))' "$(median <<<"$v")" "$(least <<<"$v")" \
    "$(most <<<"$v")" "$(grep -c . <<<"$v")"
}
SERIAL=$(spread_of 7 '| fenced (`opt.fencing')
THRU=$(spread_of 4 '| fenced |')
S_MED=$(column_of_runs 7 '| fenced (`opt.fencing' | median)
T_MED=$(column_of_runs 4 '| fenced |' | median)
# The serial target is judged against the floor of the same two rounds sent
# by hand: two round trips cannot cost less than two round trips.
FLOOR_PAT='| floor: 2 RT `MULTI` .. `EXEC`, then `MULTI` `GET` `INCRBY`'
F_MED=$(column_of_runs 7 "$FLOOR_PAT" | median)
SF=$(ratio "$S_MED" "$F_MED")
target serial_floor "$SF" "${SF:+$SF× ($S_MED× ÷ the floor $F_MED×, medians of $RUNS runs)}" "" "${SF:+$SF×}" - "floor: 1.00×"
target throughput "$T_MED" "${T_MED:+$T_MED×} (median of $RUNS runs)" "" "${T_MED:+$T_MED×}" - "plain 1.00×"

machine_info
VERSION=$("$BIN" --version 2>/dev/null || echo "?")
SHOWN="make bench-fence"
((QUICK)) && SHOWN="make bench-fence-quick"

mkdir -p "$(dirname "$OUT_MD")"
{
  echo "# libredlock: what a fencing token costs (issue 26, item 2)"
  echo
  echo "\`$SHOWN\` (\`bench/fence.sh$([[ $MODE == quick ]] && echo ' --quick')\`, which runs"
  echo "\`bench_fence -u <5 local nodes> ${ARGS[*]}\` $RUNS time(s) on one cluster), $DATE, $((SECONDS - START)) s."
  echo "Library at git $REV${LOOSE:+ with uncommitted changes in $LOOSE}; libredlock $VERSION; redis-server $REDIS_V;"
  echo "5 local redis-server masters started for the run, default options, TTL 10 s."
  echo "Machine: $(nproc) cores ($CPU), shared by the client, the 5 servers and other users;"
  echo "load average $LOAD_BEFORE before, $LOAD_AFTER after."
  echo
  echo "Two handles on the same nodes, one with \`opt.fencing = 1\`; every cycle is an acquire (one attempt) and"
  echo "a release of a resource of the variant's own. Serial: one caller, the variants interleaved in rounds"
  echo "(each round a block of cycles of every variant, the order rotated by one each round); percentiles over all"
  echo "rounds; \"÷ base\" is the p50 over plain's (the floor rows: over the floor's \`SET NX PX\`), its per-round"
  echo "range the same ratio inside each round. The floor rows send the commands by hand over hiredis, no library:"
  echo "they show what the round trips themselves cost here. Throughput: 32 threads share each handle, each on a"
  echo "resource of its own, blocks of plain and fenced alternating which goes first."
  echo "Targets (issue 26; bench/targets.tsv), judged on the medians over the runs:"
  echo
  targets_table "target (issue 26)"
  echo
  echo "**Headline over the runs** (median, least, largest): fenced acquire p50 ÷ plain ${SERIAL:-n/a};"
  echo "32-thread throughput ÷ plain ${THRU:-n/a}."
  if [[ -n $NOTE ]]; then
    echo
    echo "$NOTE"
  fi
  if [[ -s $ROOT/bench/fence-notes.md ]]; then
    echo
    cat "$ROOT/bench/fence-notes.md"
  fi
  for ((k = 1; k <= RUNS; k++)); do
    echo
    echo "## Run $k of $RUNS"
    echo
    cat "$SCRATCH/run$k.md"
  done
  ((STATUS == 0)) || { echo; echo "bench_fence exited with status $STATUS."; }
} >"$OUT_MD"

echo
for ((k = 1; k <= RUNS; k++)); do
  echo "## Run $k of $RUNS"
  echo
  cat "$SCRATCH/run$k.md"
  echo
done
echo "Fenced acquire p50 ÷ plain: ${SERIAL:-n/a}; 32-thread throughput ÷ plain: ${THRU:-n/a}."
echo
targets_table "target (issue 26)"
echo "Report: $OUT_MD"
exit "$STATUS"

#!/usr/bin/env bash
# kinds.sh [--quick] [--note TEXT] -- what a permit of a semaphore and a
# reader's lock cost next to a plain mutex (issue 15, item 6), on a 5-node
# cluster of its own (deploy/cluster.sh; always stopped at the end, also on
# Ctrl-C).
#
# Runs bench_kinds (bench/bench_kinds.c says what each row is): one caller,
# acquire + release cycles, the variants interleaved in rounds so that the
# noise of a shared machine falls on all of them alike; then
# bench/script_cost.sh: what each kind's commands and scripts cost a server,
# in instructions (valgrind), a figure the machine's load does not move. Full mode: 30 rounds
# of 300 cycles per variant (under a minute); it writes
# bench/RESULTS-kinds.md. --quick: 6 rounds of 100 (a few seconds), written
# to $BENCH_BUILD/bench/RESULTS-kinds-quick.md. --note TEXT: a paragraph for
# the report (what to read in the figures). The table is printed either way.
#
# Environment: BENCH_BUILD (default build-bench), the CMake build directory
# configured with -DREDLOCK_BUILD_BENCH=ON (`make bench-kinds` does it all).
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
export LC_ALL=C

BIN=$BUILD/bench/bench_kinds
bench_args kinds.sh "quick note" -- "$@"

if ((QUICK)); then
  MODE=quick ROUNDS=6 BLOCK=100 OUT_MD=$BUILD/bench/RESULTS-kinds-quick.md
else
  MODE=full ROUNDS=30 BLOCK=300 OUT_MD=$ROOT/bench/RESULTS-kinds.md
fi

[[ -x $BIN ]] || fail "$BIN is not built (run: make bench-kinds)"
command -v redis-server >/dev/null || fail "redis-server is not installed"

DIAG_WHAT="the run's"
bench_scratch kinds
cluster_up
note "$MODE mode: $ROUNDS rounds of $BLOCK cycles per variant on 5 nodes"

STATUS=0
# --foreground: the run stays in our process group, so Ctrl-C reaches it
timeout --foreground -k 5 600 "$BIN" -u "$NODES" -r "$ROUNDS" -b "$BLOCK" >"$SCRATCH/table.md" 2>>"$LOG" || STATUS=$?
if ((STATUS == 130 || STATUS == 143)); then exit "$STATUS"; fi
cluster_down
grep -q '^| variant' "$SCRATCH/table.md" || fail "bench_kinds printed no table (exit $STATUS)"
"$ROOT/bench/script_cost.sh" $((QUICK ? 500 : 3000)) >"$SCRATCH/cost.md" 2>>"$LOG" ||
  echo "(not measured: bench/script_cost.sh failed; its diagnostics are in the run's log)" >"$SCRATCH/cost.md"

# The targets (bench/targets.tsv) from bench_kinds' table, whose columns are
# variant, acquire p50, p99, acquire + release p50, p99, ÷ mutex, per-round
# range; they are rows of the summary of `make bench` too.
cell() { # cell VARIANT COLUMN: the table's cell (× and spaces dropped)
  awk -F ' *[|] *' -v v="$1" -v c="$2" '$2 == v { gsub(/×/, "", $c); print $c; exit }' "$SCRATCH/table.md"
}
# shellcheck disable=SC2016 # backquotes: Markdown code in the variant's name
MUTEX=$(cell 'mutex (`redlock_acquire_ex` + `redlock_release`)' 5)
for t in "permit8|permit, limit 8|permit, limit 8" "reader|shared (a reader)|reader (a shared lock)"; do
  IFS='|' read -r id variant what <<<"$t"
  r=$(cell "$variant" 7) p=$(cell "$variant" 5)
  target "$id" "$r" "${r:+$r× ($p vs $MUTEX µs; per round $(cell "$variant" 8))}" "$what: acquire + release p50" \
    "${p:+$p µs ($r×)}" "" "${MUTEX:+mutex: $MUTEX µs}"
done

machine_info
VERSION=$("$BIN" --version 2>/dev/null || echo "?")
targets_table "target (issue 15)" >"$SCRATCH/targets.md"
SHOWN="make bench-kinds"
((QUICK)) && SHOWN="make bench-kinds-quick"

mkdir -p "$(dirname "$OUT_MD")"
{
  echo "# libredlock: semaphores and read-write locks against a plain mutex (issue 15, item 6)"
  echo
  echo "\`$SHOWN\` (\`bench/kinds.sh$([[ $MODE == quick ]] && echo ' --quick')\`, which runs"
  echo "\`bench_kinds -u <5 local nodes> -r $ROUNDS -b $BLOCK\`), $DATE, $((SECONDS - START)) s."
  echo "Library at git $REV${LOOSE:+ with uncommitted changes in $LOOSE}; libredlock $VERSION; redis-server $REDIS_V;"
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
  echo "likewise hold the resource's hash. Targets (issue 15; bench/targets.tsv): below the table (an exclusive"
  echo "lock is the mutex row; the busy rows have no target)."
  if [[ -n $NOTE ]]; then
    echo
    echo "$NOTE"
  fi
  echo
  cat "$SCRATCH/table.md"
  ((STATUS == 0)) || { echo; echo "bench_kinds exited with status $STATUS."; }
  echo
  cat "$SCRATCH/targets.md"
  echo
  echo "What the server spends on each (\`bench/script_cost.sh\`): one redis-server of its own under valgrind's callgrind"
  echo "runs $((QUICK ? 500 : 3000)) acquire + release cycles of a variant, pipelined, with the commands and the lua/ scripts the"
  echo "library sends for it (a permit: every slot free); its instructions, less those of a run without commands, per"
  echo "cycle. Counted, not timed, so the figure does not move with the load of the machine; on 5 nodes sharing the"
  echo "client's cores, that work is most of what a permit or a reader adds to a mutex's cycle."
  echo
  cat "$SCRATCH/cost.md"
} >"$OUT_MD"

echo
cat "$SCRATCH/table.md"
echo
cat "$SCRATCH/targets.md"
echo
cat "$SCRATCH/cost.md"
echo
echo "Report: $OUT_MD"
exit "$STATUS"

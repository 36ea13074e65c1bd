#!/usr/bin/env bash
# lockdelay.sh [--quick] [--note TEXT] -- what a lock-delay costs
# (doc/safety.md, "Lock-delay"), on 5 masters of its own (deploy/cluster.sh
# start, always stopped at the end).
#
#   plain     bench_redlock -w serial: one caller's acquire and acquire +
#             release cycle p50 (SET NX PX, then the release script)
#   delayed   the same with --lock-delay 1000: every acquire is the
#             acquire_wait.lua script (the marker checked and written with
#             the lock), every release deletes the marker too
# The two alternate in REPS rounds; medians.
#
# Target (bench/targets.tsv): delayed acquire + release p50 <= 1.3 x plain.
# Full mode writes bench/RESULTS-lockdelay.md; --quick writes
# $BENCH_BUILD/bench/RESULTS-lockdelay-quick.md.
#
# Environment: BENCH_BUILD (default build-bench), the CMake build directory
# configured with -DREDLOCK_BUILD_BENCH=ON (`make bench-lockdelay` does it).
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
export LC_ALL=C

LIB=$BUILD/bench/bench_redlock
bench_args lockdelay.sh "quick note" -- "$@"
if ((QUICK)); then
  REPS=3 D=0.5 OUT_MD=$BUILD/bench/RESULTS-lockdelay-quick.md MODE=quick
else
  REPS=7 D=2 OUT_MD=$ROOT/bench/RESULTS-lockdelay.md MODE=full
fi
[[ -x $LIB ]] || fail "$LIB is not built (run: make bench-lockdelay)"

bench_scratch lockdelay
cluster_up
mapfile -t URI <"$CLUSTER/nodes"
NODES=$(IFS=,; echo "${URI[*]}")
note "$MODE mode: $REPS rounds of ${D} s per variant on 5 masters"

# run [ARGS...]: one serial bench_redlock run's RESULT line.
run() {
  timeout --foreground -k 5 300 "$LIB" -u "$NODES" -w serial -d "$D" --ttl 10000 --impl libredlock "$@" \
    2>>"$LOG" | grep '^RESULT' | tail -n 1
}
: >"$SCRATCH/rows"
for ((r = 1; r <= REPS; r++)); do
  p=$(run) q=$(run --lock-delay 1000)
  printf '%s %s %s %s\n' "$(kv "$p" acq_p50_us)" "$(kv "$p" cyc_p50_us)" "$(kv "$q" acq_p50_us)" \
    "$(kv "$q" cyc_p50_us)" >>"$SCRATCH/rows"
  note "round $r/$REPS: acquire p50 $(kv "$p" acq_p50_us) us plain, $(kv "$q" acq_p50_us) us with the delay"
done
col() { awk -v c="$1" '{ print $c }' "$SCRATCH/rows" | median; }
AP=$(col 1) CP=$(col 2) AD=$(col 3) CD=$(col 4)
RA=$(ratio "$AD" "$AP") RC=$(ratio "$CD" "$CP")
cluster_down

target delayed_cycle "$RC" "${RC:+${RC}× ($CD vs $CP µs)}" "" "${RC:+${RC}×}" - "no delay: 1.00×"
TARGETS=$(targets_table "target")

machine_info
mkdir -p "$(dirname "$OUT_MD")"
{
  echo "# libredlock: the cost of a lock-delay"
  echo
  echo "\`bench/lockdelay.sh$([[ $MODE == quick ]] && echo ' --quick')\` $(bench_stamp), $((SECONDS - START)) s;"
  echo "redis-server $REDIS_V. Machine: $(nproc) cores ($CPU), shared by the client and the 5 nodes; load"
  echo "average $LOAD_BEFORE before, $LOAD_AFTER after."
  echo
  echo "Five masters on loopback. Each round runs bench_redlock serial (one caller, acquire + release of"
  echo "distinct keys, ${D} s) without a lock-delay (SET NX PX) and with lock_delay_ms = 1000 (the"
  echo "acquire script checks and writes the marker, the release deletes it); medians over $REPS rounds,"
  echo "the two alternating."
  [[ -z $NOTE ]] || { echo; echo "$NOTE"; }
  echo
  echo "| handle | acquire p50 (µs) | lock cycle p50 (µs) |"
  echo "|---|---:|---:|"
  echo "| no lock-delay | $AP | $CP |"
  echo "| lock_delay_ms = 1000 | $AD | $CD |"
  echo "| with ÷ without | ${RA:-n/a}× | ${RC:-n/a}× |"
  echo
  echo "$TARGETS"
} >"$OUT_MD"
cat "$OUT_MD"

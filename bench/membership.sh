#!/usr/bin/env bash
# membership.sh [--quick] [--note TEXT] -- what changing the node set costs
# (doc/membership.md), on 6 masters of its own (deploy/cluster.sh start -n 6,
# always stopped at the end).
#
#   5 nodes   bench_redlock -w serial on nodes 0..4: one caller's acquire and
#             lock cycle p50
#   joint     the same with a joint handle: nodes 0..4 and next nodes
#             0..3 and 5 (one node leaves, one joins: 6 distinct nodes),
#             every grant needing a quorum of each list
#   6 nodes   a plain handle over all six nodes (quorum 4): what the sixth
#             node's fan-out costs by itself, for comparison
#   guarded   the 5-node handle again, its nodes holding the membership
#             record `redlock membership begin` writes (which accepts it):
#             every grant goes through the record's check
# The four alternate in REPS rounds (the records written before each
# guarded run and deleted after it); medians.
#
# Targets (bench/targets.tsv): joint serial p50 <= 1.1 x the plain
# handle's over the same six nodes (the fan-out a joint handle cannot
# avoid); guarded acquire + release p50 <= 1.35 x the same without records.
# Full mode writes bench/RESULTS-membership.md; --quick writes
# $BENCH_BUILD/bench/RESULTS-membership-quick.md.
#
# Environment: BENCH_BUILD (default build-bench), the CMake build directory
# configured with -DREDLOCK_BUILD_BENCH=ON (`make bench-membership` does it).
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
export LC_ALL=C

LIB=$BUILD/bench/bench_redlock
TOOL=$BUILD/src/cli/redlock
bench_args membership.sh "quick note" -- "$@"
if ((QUICK)); then
  REPS=3 D=0.5 OUT_MD=$BUILD/bench/RESULTS-membership-quick.md MODE=quick
else
  REPS=7 D=2 OUT_MD=$ROOT/bench/RESULTS-membership.md MODE=full
fi
[[ -x $LIB ]] || fail "$LIB is not built (run: make bench-membership)"
[[ -x $TOOL ]] || fail "$TOOL is not built (run: make bench-membership)"

bench_scratch membership
cluster_start 6 nodes6
mapfile -t URI <"$CLUSTER/nodes"
OLD=$(IFS=,; echo "${URI[*]:0:5}")
ALL6=$(IFS=,; echo "${URI[*]}")
NEW=$(IFS=,; echo "${URI[*]:0:4},${URI[5]}")
note "$MODE mode: $REPS rounds of ${D} s per variant on 6 masters"

# run [ARGS...]: one serial bench_redlock run's RESULT line on the 5 nodes.
run() {
  timeout --foreground -k 5 300 "$LIB" -u "$OLD" -w serial -d "$D" --ttl 10000 --impl libredlock "$@" \
    2>>"$LOG" | grep '^RESULT' | tail -n 1
}
# records begin|clear: the membership records of OLD -> NEW written by the
# tool (accepting OLD), or deleted from the six nodes.
records() {
  if [[ $1 == begin ]]; then
    "$TOOL" --nodes "$OLD" --next-nodes "$NEW" membership begin >>"$LOG" 2>&1 || fail "membership begin failed (see $LOG)"
  else
    for u in "${URI[@]}"; do redis-cli -p "${u##*:}" DEL redlock:membership >/dev/null || fail "DEL on $u"; done
  fi
}
: >"$SCRATCH/rows"
for ((r = 1; r <= REPS; r++)); do
  p=$(run) j=$(run --next-uris "$NEW") s=$(run -u "$ALL6")
  records begin
  g=$(run)
  records clear
  printf '%s %s %s %s %s %s %s %s\n' "$(kv "$p" acq_p50_us)" "$(kv "$p" cyc_p50_us)" "$(kv "$j" acq_p50_us)" \
    "$(kv "$j" cyc_p50_us)" "$(kv "$g" acq_p50_us)" "$(kv "$g" cyc_p50_us)" "$(kv "$s" acq_p50_us)" \
    "$(kv "$s" cyc_p50_us)" >>"$SCRATCH/rows"
  note "round $r/$REPS: acquire p50 $(kv "$p" acq_p50_us) us on 5 nodes, $(kv "$j" acq_p50_us) us joint," \
    "$(kv "$s" acq_p50_us) us on 6 nodes, $(kv "$g" acq_p50_us) us guarded"
done
col() { awk -v c="$1" '{ print $c }' "$SCRATCH/rows" | median; }
A5=$(col 1) C5=$(col 2) AJ=$(col 3) CJ=$(col 4) AG=$(col 5) CG=$(col 6) A6=$(col 7) C6=$(col 8)
R6=$(ratio "$A6" "$A5") R6C=$(ratio "$C6" "$C5")
RA=$(ratio "$AJ" "$A5") RC=$(ratio "$CJ" "$C5") RGA=$(ratio "$AG" "$A5") RG=$(ratio "$CG" "$C5")
cluster_down

RJ6=$(ratio "$AJ" "$A6")
target joint_serial "$RJ6" "${RJ6:+${RJ6}× ($AJ vs $A6 µs; ${RA}× the 5-node handle, $A5 µs)}" "" "${RJ6:+${RJ6}×}" - \
  "6 nodes, one list: 1.00×"
target guarded_cycle "$RG" "${RG:+${RG}× ($CG vs $C5 µs)}" "" "${RG:+${RG}×}" - "no records: 1.00×"
TARGETS=$(targets_table "target")

machine_info
mkdir -p "$(dirname "$OUT_MD")"
{
  echo "# libredlock: changing the node set"
  echo
  echo "\`bench/membership.sh$([[ $MODE == quick ]] && echo ' --quick')\` $(bench_stamp), $((SECONDS - START)) s;"
  echo "redis-server $REDIS_V. Machine: $(nproc) cores ($CPU), shared by the client and the 6 nodes; load"
  echo "average $LOAD_BEFORE before, $LOAD_AFTER after."
  echo
  echo "Six masters on loopback. Each round runs bench_redlock serial (one caller, acquire + release of"
  echo "distinct keys, ${D} s) with a 5-node handle (nodes 0..4, quorum 3) and with a joint handle (nodes"
  echo "0..4, next nodes 0..3 and 5: 6 distinct nodes, a quorum of 3 in each list), with a plain handle over"
  echo "the six (quorum 4: the sixth node's fan-out alone), and with the 5-node"
  echo "handle again while the nodes hold the membership record \`redlock membership begin\` writes (every"
  echo "grant and extend then runs the record's check in its script); medians over $REPS rounds, the four"
  echo "alternating."
  [[ -z $NOTE ]] || { echo; echo "$NOTE"; }
  echo
  echo "| handle | acquire p50 (µs) | lock cycle p50 (µs) |"
  echo "|---|---:|---:|"
  echo "| 5 nodes | $A5 | $C5 |"
  echo "| joint, 5 + 1 | $AJ | $CJ |"
  echo "| joint ÷ 5 nodes | ${RA:-n/a}× | ${RC:-n/a}× |"
  echo "| 6 nodes, one list | $A6 | $C6 |"
  echo "| 6 nodes ÷ 5 nodes | ${R6:-n/a}× | ${R6C:-n/a}× |"
  echo "| joint ÷ 6 nodes | ${RJ6:-n/a}× | $(ratio_x "$CJ" "$C6") |"
  echo "| 5 nodes, records checked | $AG | $CG |"
  echo "| checked ÷ 5 nodes | ${RGA:-n/a}× | ${RG:-n/a}× |"
  echo
  echo "$TARGETS"
} >"$OUT_MD"
cat "$OUT_MD"

#!/usr/bin/env bash
# replicated.sh [--quick] [--note TEXT] -- what counting votes after
# replication costs (issue 32, item 6), on Sentinel groups of its own:
# deploy/cluster.sh start -n 3 --sentinels 3 --replicas 1 (3 groups of a
# master and a replica, 3 sentinels; always stopped at the end).
#
#   serial       bench_redlock -w serial: one caller's acquire p50 and
#                cycles/s, min_replicas 1 against 0, interleaved in REPS rounds
#   floor        bench/floor (SET NX PX by hand over hiredis to the 3 masters)
#                against floor --wait-replicas 1 (SET and WAIT 1 in one
#                write), in the same rounds: what the servers themselves
#                charge for a vote counted after replication
#   32 threads   bench_redlock -w concurrent -t 32, the same way
#   failover     the time from a group's master's death (SIGKILL) to the first
#                grant on that group alone (the redlock tool, one node,
#                --wait), which its sentinels' promotion of the replica decides
#
# Targets (bench/targets.tsv): min_replicas 1 serial p50 <= 1.6 x min_replicas
# 0, 32-thread cycles/s >= 0.6 x. Full mode writes bench/RESULTS-replicated.md; --quick
# (fewer, shorter rounds) writes $BENCH_BUILD/bench/RESULTS-replicated-quick.md.
# Under bench/all.sh (`make bench`) the targets are rows of the summary.
#
# Environment: BENCH_BUILD (default build-bench), the CMake build directory
# configured with -DREDLOCK_BUILD_BENCH=ON (`make bench-replicated` does it).
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
export LC_ALL=C

LIB=$BUILD/bench/bench_redlock
FLOOR=$BUILD/bench/floor
TOOL=$BUILD/src/cli/redlock
bench_args replicated.sh "quick note" -- "$@"
if ((QUICK)); then
  REPS=3 D=0.5 OUT_MD=$BUILD/bench/RESULTS-replicated-quick.md MODE=quick
else
  REPS=7 D=2 OUT_MD=$ROOT/bench/RESULTS-replicated.md MODE=full
fi
[[ -x $LIB ]] || fail "$LIB is not built (run: make bench-replicated)"
[[ -x $TOOL ]] || fail "$TOOL is not built (run: make bench-replicated)"
[[ -x $FLOOR ]] || fail "$FLOOR is not built (run: make bench-replicated)"

bench_scratch replicated
cluster_start 3 groups --sentinels 3 --replicas 1
GROUPS_DIR=$CLUSTER
note "$MODE mode: $REPS rounds of ${D} s per variant on 3 Sentinel groups (1 replica each, 3 sentinels)"

# run WORKLOAD MIN_REPLICAS [ARGS...]: one bench_redlock run's RESULT line.
run() {
  local w=$1 m=$2
  shift 2
  timeout --foreground -k 5 300 "$LIB" -u "$NODES" -w "$w" -d "$D" --ttl 10000 --impl libredlock \
    --min-replicas "$m" --op-timeout 200 "$@" 2>>"$LOG" | grep '^RESULT' | tail -n 1
}
# floor_run [--wait-replicas N]: one serial floor run's acquire p50 (µs) on
# the groups' masters.
floor_run() {
  kv "$(timeout --foreground -k 5 300 "$FLOOR" -u "$MASTERS" -w serial -d "$D" --ttl 10000 "$@" 2>>"$LOG" |
    grep '^RESULT' | tail -n 1)" acq_p50_us
}
field() { kv "$2" "$1"; }

MASTERS=""
for g in 0 1 2; do
  MASTERS+="${MASTERS:+,}redis://127.0.0.1:$("$CLUSTER_SH" master -d "$GROUPS_DIR" "$g" 2>>"$LOG")"
done
: >"$SCRATCH/rows"
: >"$SCRATCH/floor"
for ((r = 1; r <= REPS; r++)); do
  printf '%s %s\n' "$(floor_run)" "$(floor_run --wait-replicas 1)" >>"$SCRATCH/floor"
  for m in 0 1; do
    s=$(run serial "$m")
    c=$(run concurrent "$m" -t 32)
    printf '%s %s %s %s %s\n' "$m" "$(field acq_p50_us "$s")" "$(field cps "$s")" "$(field cps "$c")" \
      "$(field errors "$c")" >>"$SCRATCH/rows"
    note "round $r/$REPS, min_replicas $m: serial p50 $(field acq_p50_us "$s") us, 32 threads $(field cps "$c") cycles/s"
  done
done
col() { awk -v m="$1" -v c="$2" '$1 == m { print $c }' "$SCRATCH/rows" | median; }
P0=$(col 0 2) P1=$(col 1 2) S0=$(col 0 3) S1=$(col 1 3) T0=$(col 0 4) T1=$(col 1 4)
RP=$(ratio "$P1" "$P0") RT=$(ratio "$T1" "$T0" 3)
F0=$(awk '{ print $1 }' "$SCRATCH/floor" | median) F1=$(awk '{ print $2 }' "$SCRATCH/floor" | median)
RF=$(ratio "$F1" "$F0")

# The failover: group 0's master killed; the time until a handle on that
# group alone (quorum 1) is granted a lock again, on the promoted replica.
G0=$(sed -n 1p "$GROUPS_DIR/nodes")
OLD=$("$CLUSTER_SH" master -d "$GROUPS_DIR" 0 2>>"$LOG")
MEMBER=$(awk -v p="$OLD" '$3 == p { print $1 "." $2 }' "$GROUPS_DIR/members")
T_KILL=$(date +%s%N)
"$CLUSTER_SH" kill -d "$GROUPS_DIR" "$MEMBER" >/dev/null 2>>"$LOG" || fail "could not kill $MEMBER"
"$TOOL" --nodes "$G0" --op-timeout 200ms --retry-delay 20ms acquire --ttl 5s --wait 60s bench:failover >/dev/null \
  2>>"$LOG" || fail "no grant on group 0 within 60 s of its master's death"
T_GRANT=$(date +%s%N)
FO_MS=$(((T_GRANT - T_KILL) / 1000000))
NEW=$("$CLUSTER_SH" master -d "$GROUPS_DIR" 0 2>>"$LOG" || echo "?")
note "failover: master $OLD killed, first grant on the promoted $NEW after $FO_MS ms"
cluster_down

RR=$(ratio "$RP" "$RF")
target serial_floor "$RR" "${RR:+${RR}× (${RP}× = $P1 vs $P0 µs, against the floor ${RF}×)}" "" "${RR:+${RR}×}" - "floor: 1.00×"
target throughput "$RT" "${RT:+${RT}× ($T1 vs $T0)}" "" "${RT:+${RT}×}" - "min_replicas 0: 1.00×"
TARGETS=$(targets_table "target (issue 32)")

machine_info
mkdir -p "$(dirname "$OUT_MD")"
{
  echo "# libredlock: votes counted after replication (issue 32)"
  echo
  echo "\`bench/replicated.sh$([[ $MODE == quick ]] && echo ' --quick')\` $(bench_stamp), $((SECONDS - START)) s;"
  echo "redis-server $REDIS_V. Machine: $(nproc) cores ($CPU), shared by the client, the 6 data nodes and the"
  echo "3 sentinels; load average $LOAD_BEFORE before, $LOAD_AFTER after."
  echo
  echo "Three Sentinel groups (\`redis+sentinel://\` nodes, quorum 2 of 3), each a master and one replica on"
  echo "loopback, watched by three sentinels. Each round runs bench_redlock once per variant: serial (one caller,"
  echo "acquire + release of distinct keys, ${D} s) and 32 threads (${D} s); medians over $REPS rounds,"
  echo "op timeout 200 ms. With \`min_replicas 1\` every acquire's write is followed by \`WAIT 1 T\`: a vote"
  echo "counts once the group's replica has the lock."
  [[ -z $NOTE ]] || { echo; echo "$NOTE"; }
  echo
  echo "| min_replicas | serial acquire p50 (µs) | serial cycles/s | 32 threads cycles/s |"
  echo "|---:|---:|---:|---:|"
  echo "| 0 | $P0 | $S0 | $T0 |"
  echo "| 1 | $P1 | $S1 | $T1 |"
  echo "| ratio 1 ÷ 0 | ${RP:-n/a}× | | ${RT:-n/a}× |"
  echo
  echo "The floor, in the same rounds: \`bench/floor\` sends \`SET NX PX\` by hand over hiredis to the three"
  echo "masters and returns at the quorum; with \`--wait-replicas 1\` each SET is followed in the same write by"
  echo "\`WAIT 1\`, and a yes counts once WAIT says the replica has it. Acquire p50: **$F0 µs** without,"
  echo "**$F1 µs** with (**${RF:-n/a}×**): what the servers themselves charge for a vote counted after replication"
  echo "on this machine, against the library's ${RP}×."
  echo
  echo "Failover: group 0's master (port $OLD) killed with SIGKILL; the first grant on that group alone (the"
  echo "redlock tool, one node, \`--wait\`, retries every 20 ms) came **$FO_MS ms** later, on the promoted"
  echo "replica (port $NEW). Sentinels: down-after 1000 ms, failover-timeout 3000 ms."
  echo
  echo "$TARGETS"
} >"$OUT_MD"
cat "$OUT_MD"

#!/usr/bin/env bash
# core.sh [--quick | --stats-only] [--note TEXT] -- libredlock's core benchmark suite
# (issue 4), in one run on one machine so that the ratios hold on a noisy
# shared box.
#
#   floor          bench/floor.c: hand-written hiredis fan-out (the cost the
#                  network and the servers impose)
#   libredlock     bench/bench_redlock.c: the same workloads through the library
#   node-redlock   bench/node/bench.js: npm redlock@5.0.0-beta.2 + ioredis 5
#                  (installed here into bench/node/node_modules; "n/a" if that fails)
#   server limit   redis-benchmark -P 16 against every node at once, SET and
#                  the release script's EVALSHA: the cycles/s the servers
#                  can complete (the SET-only figure, commands/s / (2N), is
#                  shown beside it), at the start of each repetition of
#                  the concurrency runs (median)
#
# It starts its own clusters with deploy/cluster.sh in a temporary directory
# (5 masters; 9 more for the N-scaling runs in full mode) and always stops
# them. Degraded runs kill one node, then pause two of five (SIGSTOP), and
# restore them afterwards, each time after a healthy run they are judged
# against (3 times in full mode).
#
# Full mode (`make bench-core`) writes bench/RESULTS-core.md and
# bench/latency.png (`make bench`, bench/all.sh, puts the file in
# bench/RESULTS.md); --quick (about 40 s) writes RESULTS-core-quick.md and
# latency-quick.png into the build directory, so a quick run never
# overwrites the full results.
# --stats-only (about a minute) runs only the cost of the statistics
# (redlock_stats' counters on and off, interleaved) and prints its table.
# --note TEXT: a paragraph for the report. The targets are rows of
# bench/targets.tsv.
#
# Environment: BENCH_BUILD (default build-bench), the CMake build directory
# configured with -DREDLOCK_BUILD_BENCH=ON (`make bench-core` does all of it).
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
export LC_ALL=C

FLOOR=$BUILD/bench/floor
LIB=$BUILD/bench/bench_redlock
bench_args core.sh "quick stats-only note" -- "$@"

if ((QUICK)); then
  MODE=quick
  REPS=3          # interleaved floor / libredlock / node-redlock repetitions
  D_SERIAL=0.6    # seconds per serial run
  D_CPU=0.5       # seconds per CPU run
  D_CONC=0.6      # seconds per concurrency level
  CONC_REPS=1     # repetitions of the concurrency levels
  D_CONT=0.8      # contended run
  D_DEG=0.8       # each degraded run
  DEG_REPS=1      # repetitions of the healthy, killed and paused runs
  D_SCALE=1       # each scaling run
  SCALE_REPS=1
  SCALE_NS="3 5"
  SCALE_CLUSTER=5 # quick: the scaling runs use subsets of the 5-node cluster
  RB_REQS=40000   # redis-benchmark requests per node
  MEM_CYCLES=50000
  MEM_THREADS=1   # the uncontended single-caller path, as in full mode
  MEM16_CYCLES=0  # quick: no 16-thread memory run
  NODE_WARMUP=50  # node-redlock warm-up cycles per run
  OUT_DIR=$BUILD/bench
  OUT_MD=$OUT_DIR/RESULTS-core-quick.md
  OUT_PNG=$OUT_DIR/latency-quick.png
else
  MODE=full
  REPS=5
  D_SERIAL=3
  D_CPU=2.5
  D_CONC=4
  CONC_REPS=3
  D_CONT=5
  D_DEG=5
  DEG_REPS=3
  D_SCALE=1.5
  SCALE_REPS=5
  SCALE_NS="3 5 7 9"
  SCALE_CLUSTER=9
  RB_REQS=400000
  MEM_CYCLES=1000000
  MEM_THREADS=1   # full: the uncontended single-caller path
  MEM16_CYCLES=1000000
  NODE_WARMUP=200
  OUT_DIR=$ROOT/bench
  OUT_MD=$OUT_DIR/RESULTS-core.md
  OUT_PNG=$OUT_DIR/latency.png
fi
THREADS_LIST="1 4 16 32 64"
CONTENDED_THREADS=8
TTL=10000

# ------------------------------------------------------------------ helpers

NOTE_WIDTH=4
[[ -x $FLOOR && -x $LIB ]] || fail "benchmarks not built in $BUILD (run: make bench, or configure with -DREDLOCK_BUILD_BENCH=ON)"
command -v redis-server >/dev/null || fail "redis-server is not installed"

bench_scratch core
TMP=$SCRATCH RAW=$SCRATCH/raw.txt ERRLOG=$LOG
: >"$RAW"

# start_cluster N NAME: N masters of their own in $TMP/NAME (lib.sh's
# cluster_start); sets CDIR.
start_cluster() {
  cluster_start "$1" "$2"
  CDIR=$CLUSTER
}

# uris DIR [N]: the first N (default all) URIs of a cluster, comma-separated.
uris() {
  if [[ -n ${2:-} ]]; then head -n "$2" "$1/nodes" | paste -sd, -; else paste -sd, "$1/nodes"; fi
}

# Results: R[TAG.KEY] holds the values of KEY from every run tagged TAG
# (space-separated; repeated runs add values), read back as their median.
declare -A R=()

record() {
  local tag=$1 kv k
  shift
  for kv in "$@"; do
    [[ $kv == *=* ]] || continue
    k=${kv%%=*}
    R[$tag.$k]="${R[$tag.$k]:+${R[$tag.$k]} }${kv#*=}"
  done
}

# val TAG KEY: the median of the recorded values ("" if none); values TAG
# KEY: each of them, one a line.
val() { tr ' ' '\n' <<<"${R[$1.$2]:-}" | grep . | median; }
values() { tr ' ' '\n' <<<"${R[$1.$2]:-}" | grep . || true; }

# run_bench TAG LABEL TIMEOUT CMD...: runs CMD, records its RESULT line.
run_bench() {
  local tag=$1 label=$2 limit=$3 out rc=0 line
  shift 3
  out=$(timeout -k 5 "$limit" "$@" 2>>"$ERRLOG") || rc=$?
  line=$(grep '^RESULT ' <<<"$out" | tail -n 1 || true)
  if [[ -z $line ]]; then
    note "$label: no result (exit $rc)"
    return 0
  fi
  ((rc == 0)) || note "$label: exit status $rc (result kept)"
  echo "$tag $line" >>"$RAW"
  # shellcheck disable=SC2086
  record "$tag" $line
  local summary="" k v
  for k in acq_p50_us cps grants_per_s handoff_p50_us cpu_us_per_cycle allocs_per_cycle rss_after_kb errors; do
    v=$(kv "$line" "$k")
    if [[ -n $v ]]; then summary+=" $k=$v"; fi
  done
  note "$label:$summary"
}

# vs A B DIGITS UNIT: "A UNIT vs B UNIT" for a target's measured column.
vs() { echo "$(dec "$1" "$3")$4 vs $(dec "$2" "$3")$4"; }
# us VALUE / per_s VALUE: a field of the summary of `make bench`, nothing
# without a value.
us() { fig "${1:-}" 1 " µs"; }
per_s() { fig "${1:-}" 0 "/s"; }

# ------------------------------------------------------------ preparations

note "libredlock benchmark suite, $MODE mode; scratch in $TMP"
LIB_VERSION=$("$LIB" --version 2>/dev/null || echo "?")

# node-redlock: the pinned packages in bench/node/node_modules.
NODE_OK=0 NODE_VERSIONS="n/a"
if ((STATS_ONLY)); then
  note "--stats-only: no node-redlock"
else
  node_redlock_setup bench.js
  ((NODE_OK)) || note "node-redlock unavailable (node or npm missing, or npm failed): its column will be n/a"
fi

node_bench() { # node_bench TAG LABEL ARGS...
  local tag=$1 label=$2
  shift 2
  ((NODE_OK)) || return 0
  run_bench "$tag" "$label" 120 node "$NODE_DIR/bench.js" --warmup "$NODE_WARMUP" "$@"
}

start_cluster 5 c5
C5=$CDIR
C5_STARTED=$SECONDS
U5=$(uris "$C5")
note "cluster of 5 up: $U5"

# ------------------------------------------------------- statistics cost

# What redlock_stats' counters cost (issue 16: at most 2 % of a cycle's
# CPU, no allocation): bench_redlock -w stats, one caller alternating
# blocks of 100 cycles between a handle with the counters on (the default)
# and one with them off (opt.stats = 0), each block's CPU added to its
# handle's sum, so the two see the same machine; repeated, medians.
# (Separate 2.5 s runs of each, interleaved, differed by up to ±5 % a pair
# on this shared machine, more than the 2 % the target allows.)
STATS_REPS=$((QUICK && !STATS_ONLY ? REPS : 5))
stats_cost_runs() {
  local rep
  for ((rep = 1; rep <= STATS_REPS; rep++)); do
    run_bench lib.stats "libredlock statistics on and off, alternating (rep $rep/$STATS_REPS)" 120 \
      "$LIB" -u "$U5" -w stats -d "$((QUICK ? 1 : 5))" --ttl "$TTL"
  done
}
# stats_table: the rows of the comparison, in markdown.
stats_table() {
  echo "| libredlock, N=5, one caller, blocks of 100 cycles alternating (median of $STATS_REPS runs) | statistics off | statistics on | difference |"
  echo "|---|---:|---:|---:|"
  printf '| client CPU per acquire+release cycle (µs) | %s | %s | %s |\n' "$(dec "$(val lib.stats cpu_off_us_per_cycle)" 2)" \
    "$(dec "$(val lib.stats cpu_on_us_per_cycle)" 2)" \
    "$(awk -v p="$(val lib.stats stats_pct)" 'BEGIN { if (p == "") print "n/a"; else printf "%+.2f %% (target: at most +2 %%)\n", p }')"
  printf '| heap allocations per cycle, whole process | %s | %s | |\n' \
    "$(dec "$(val lib.stats allocs_off_per_cycle)" 3)" "$(dec "$(val lib.stats allocs_on_per_cycle)" 3)"
  printf '| heap allocations per cycle by libredlock | %s | %s | |\n' \
    "$(dec "$(val lib.stats own_allocs_off_per_cycle)" 3)" "$(dec "$(val lib.stats own_allocs_on_per_cycle)" 3)"
  echo "| the runs' differences | $(values lib.stats stats_pct | awk '{ printf "%s%+.2f %%", (NR > 1 ? ", " : ""), $1 }') | | |"
}
if ((STATS_ONLY)); then
  stats_cost_runs
  echo
  echo "libredlock benchmarks: cost of the statistics ($(date -u +%Y-%m-%d))"
  echo
  stats_table
  exit 0
fi

# --------------------------------------------------------- serial and CPU

for ((rep = 1; rep <= REPS; rep++)); do
  run_bench floor.serial "floor serial (rep $rep/$REPS)" 120 "$FLOOR" -u "$U5" -w serial -d "$D_SERIAL" --ttl "$TTL"
  run_bench lib.serial "libredlock serial (rep $rep/$REPS)" 120 "$LIB" -u "$U5" -w serial -d "$D_SERIAL" --ttl "$TTL"
  if ((!QUICK || rep == 1)); then # quick: node-redlock once (its start-up costs a second)
    node_bench node.serial "node-redlock serial (rep $rep/$REPS)" -u "$U5" -w serial -d "$D_SERIAL" --ttl "$TTL"
  fi
done
for ((rep = 1; rep <= REPS; rep++)); do
  run_bench floor.cpu "floor cpu (rep $rep/$REPS)" 120 "$FLOOR" -u "$U5" -w cpu -d "$D_CPU" --ttl "$TTL"
  run_bench lib.cpu "libredlock cpu (rep $rep/$REPS)" 120 "$LIB" -u "$U5" -w cpu -d "$D_CPU" --ttl "$TTL"
done

# ------------------------------------------------------------ server limit

# server_limit WHEN: the servers' own limit, once: redis-benchmark -P 16 on
# all 5 nodes at once, SET NX PX (recorded as limit.set, in lock cycles/s),
# then the release script's EVALSHA (limit.mix); the keys flushed after.
server_limit() {
  local rb_pids=() i=0 k p uri hp sha rps s_rps e_rps total=0 set_limit mix mix_sum=0 mix_ok=1
  note "server limit ($1): redis-benchmark -P 16 on all 5 nodes at once ($RB_REQS requests each)"
  while read -r uri; do
    hp=${uri#redis://}
    redis-benchmark -h "${hp%:*}" -p "${hp##*:}" -n "$RB_REQS" -P 16 -c 50 -r 1000000 -q \
      SET 'key:__rand_int__' v NX PX 10000 </dev/null >"$TMP/rb.$i" 2>&1 &
    rb_pids+=($!)
    i=$((i + 1))
  done <"$C5/nodes"
  for p in "${rb_pids[@]}"; do wait "$p" || true; done
  for ((k = 0; k < i; k++)); do
    rps=$(tr '\r' '\n' <"$TMP/rb.$k" | sed -n 's/.*: \([0-9.]*\) requests per second.*/\1/p' | tail -n 1)
    [[ -n $rps ]] || { note "redis-benchmark on node $k printed no result"; rps=0; }
    total=$(awk -v a="$total" -v b="$rps" 'BEGIN { printf "%.1f", a + b }')
  done
  set_limit=$(awk -v t="$total" 'BEGIN { printf "%.1f", t / (2 * 5) }')
  echo "limit server commands_per_s=$total cycles_per_s=$set_limit" >>"$RAW"
  record limit set="$set_limit"
  note "server limit ($1): $total commands/s in total -> $set_limit lock cycles/s"

  # The limit the 32-thread target is judged against: a lock cycle is one SET
  # and one release-script EVALSHA per node, and the script costs the server
  # more than a SET. The same pipelined
  # benchmark with lua/release.lua gives each node's EVALSHA rate e_i; with its
  # SET rate s_i, node i completes 1 / (1/s_i + 1/e_i) cycles/s; the mix limit
  # is their mean (every node takes part in every cycle).
  rb_pids=()
  i=0
  while read -r uri; do
    hp=${uri#redis://}
    sha=$(redis-cli -h "${hp%:*}" -p "${hp##*:}" -x SCRIPT LOAD <"$ROOT/lua/release.lua" 2>>"$ERRLOG" || true)
    if [[ $sha =~ ^[0-9a-f]{40}$ ]]; then
      redis-benchmark -h "${hp%:*}" -p "${hp##*:}" -n "$RB_REQS" -P 16 -c 50 -r 1000000 -q \
        EVALSHA "$sha" 1 'key:__rand_int__' v </dev/null >"$TMP/rbe.$i" 2>&1 &
      rb_pids+=($!)
    fi
    i=$((i + 1))
  done <"$C5/nodes"
  for p in "${rb_pids[@]}"; do wait "$p" || true; done
  for ((k = 0; k < i; k++)); do
    s_rps=$(tr '\r' '\n' <"$TMP/rb.$k" 2>/dev/null | sed -n 's/.*: \([0-9.]*\) requests per second.*/\1/p' | tail -n 1)
    e_rps=$(tr '\r' '\n' <"$TMP/rbe.$k" 2>/dev/null | sed -n 's/.*: \([0-9.]*\) requests per second.*/\1/p' | tail -n 1)
    if [[ -z $s_rps || -z $e_rps ]]; then mix_ok=0; break; fi
    mix_sum=$(awk -v a="$mix_sum" -v s="$s_rps" -v e="$e_rps" 'BEGIN { printf "%.1f", a + 1 / (1 / s + 1 / e) }')
    echo "limit node$k set_rps=$s_rps evalsha_rps=$e_rps" >>"$RAW"
  done
  if ((mix_ok && i > 0)); then
    mix=$(awk -v t="$mix_sum" -v n="$i" 'BEGIN { printf "%.1f", t / n }')
    echo "limit server_mix cycles_per_s=$mix" >>"$RAW"
    record limit mix="$mix"
    note "server limit with the release script ($1): $mix lock cycles/s (SET + EVALSHA per node)"
  fi
  while read -r uri; do
    hp=${uri#redis://}
    redis-cli -h "${hp%:*}" -p "${hp##*:}" FLUSHALL >/dev/null 2>>"$ERRLOG" || true
  done <"$C5/nodes"
}

# -------------------------------------------------------------- concurrency

# Each level runs CONC_REPS times, libredlock and node-redlock interleaved
# (median shown): one 5 s run of many threads swings by 15 % here. The
# servers' limit is measured at the start of each repetition, and its
# median judged against: one measurement moved 23 % between two runs.
for ((rep = 1; rep <= CONC_REPS; rep++)); do
  server_limit "rep $rep/$CONC_REPS"
  for t in $THREADS_LIST; do
    run_bench "lib.conc$t" "libredlock $t threads (rep $rep/$CONC_REPS)" 120 "$LIB" -u "$U5" -w concurrent -t "$t" -d "$D_CONC" --ttl "$TTL"
    node_bench "node.conc$t" "node-redlock $t callers (rep $rep/$CONC_REPS)" -u "$U5" -w concurrent -t "$t" -d "$D_CONC" --ttl "$TTL"
  done
done
SERVER_LIMIT=$(val limit set) MIX_LIMIT=$(val limit mix)
run_bench lib.contended "libredlock contended ($CONTENDED_THREADS threads, one key)" 120 \
  "$LIB" -u "$U5" -w contended -t "$CONTENDED_THREADS" -d "$D_CONT" --ttl "$TTL"

# ------------------------------------------------------------ safety costs

# What the mechanisms beyond Redlock cost, against plain runs interleaved
# with them: fencing tokens (a second round), the restart quarantine with
# clock-jump checks at the default rate (INFO on connect, TIME once a second
# per node), and clock checks on every acquire (one TIME per node per
# acquire, pipelined ahead of the SET). max_ttl_ms = TTL: the cluster must be
# up for longer than that, or its nodes would be in their restart quarantine.
wait_s=$(((TTL / 1000 + 3) - (SECONDS - C5_STARTED)))
if ((wait_s > 0)); then
  note "waiting ${wait_s}s: the nodes must be up longer than max_ttl_ms ($TTL ms) for the quarantine runs"
  sleep "$wait_s"
fi
SAFE_REPS=$((QUICK ? 1 : REPS))
for ((rep = 1; rep <= SAFE_REPS; rep++)); do
  run_bench lib.plain "libredlock serial, plain (rep $rep/$SAFE_REPS)" 120 "$LIB" -u "$U5" -w serial -d "$D_SERIAL" --ttl "$TTL"
  run_bench lib.fenced "libredlock serial, fencing (rep $rep/$SAFE_REPS)" 120 "$LIB" -u "$U5" -w serial -d "$D_SERIAL" --ttl "$TTL" --fencing
  run_bench lib.guarded "libredlock serial, quarantine + clock checks 1/s (rep $rep/$SAFE_REPS)" 120 \
    "$LIB" -u "$U5" -w serial -d "$D_SERIAL" --ttl "$TTL" --max-ttl "$TTL"
  run_bench lib.clock0 "libredlock serial, clock check on every acquire (rep $rep/$SAFE_REPS)" 120 \
    "$LIB" -u "$U5" -w serial -d "$D_SERIAL" --ttl "$TTL" --max-ttl "$TTL" --clock-check 0
done
for ((rep = 1; rep <= CONC_REPS; rep++)); do
  run_bench lib.conc32.plain "libredlock 32 threads, plain (rep $rep/$CONC_REPS)" 120 \
    "$LIB" -u "$U5" -w concurrent -t 32 -d "$D_CONC" --ttl "$TTL"
  run_bench lib.conc32.fenced "libredlock 32 threads, fencing (rep $rep/$CONC_REPS)" 120 \
    "$LIB" -u "$U5" -w concurrent -t 32 -d "$D_CONC" --ttl "$TTL" --fencing
  run_bench lib.conc32.clock0 "libredlock 32 threads, clock check on every acquire (rep $rep/$CONC_REPS)" 120 \
    "$LIB" -u "$U5" -w concurrent -t 32 -d "$D_CONC" --ttl "$TTL" --max-ttl "$TTL" --clock-check 0
done

stats_cost_runs

# ---------------------------------------------------------------- degraded

# Each fault is judged against healthy runs of the same minutes: DEG_REPS
# times a healthy run, then node 4 killed, then nodes 3 and 4 paused (one
# run against a median of runs minutes earlier was off by 25 % here).
for ((rep = 1; rep <= DEG_REPS; rep++)); do
  run_bench lib.healthy "libredlock serial, healthy (rep $rep/$DEG_REPS)" 120 "$LIB" -u "$U5" -w serial -d "$D_DEG" --ttl "$TTL"
  "$CLUSTER_SH" kill 4 -d "$C5" >/dev/null 2>>"$ERRLOG" || fail "could not kill node 4"
  note "node 4 of 5 killed"
  run_bench lib.killed "libredlock serial, 1 of 5 killed (rep $rep/$DEG_REPS)" 120 "$LIB" -u "$U5" -w serial -d "$D_DEG" --ttl "$TTL"
  run_bench floor.killed "floor serial, 1 of 5 killed (rep $rep/$DEG_REPS)" 120 "$FLOOR" -u "$U5" -w serial -d "$D_DEG" --ttl "$TTL"
  "$CLUSTER_SH" restart 4 -d "$C5" >/dev/null 2>>"$ERRLOG" || fail "could not restart node 4"
  note "node 4 restarted"

  "$CLUSTER_SH" pause 3 -d "$C5" >/dev/null 2>>"$ERRLOG" || fail "could not pause node 3"
  "$CLUSTER_SH" pause 4 -d "$C5" >/dev/null 2>>"$ERRLOG" || fail "could not pause node 4"
  note "nodes 3 and 4 of 5 paused (SIGSTOP)"
  run_bench lib.paused "libredlock serial, 2 of 5 paused (rep $rep/$DEG_REPS)" 120 "$LIB" -u "$U5" -w serial -d "$D_DEG" --ttl "$TTL"
  run_bench floor.paused "floor serial, 2 of 5 paused (rep $rep/$DEG_REPS)" 120 "$FLOOR" -u "$U5" -w serial -d "$D_DEG" --ttl "$TTL"
  "$CLUSTER_SH" resume 3 -d "$C5" >/dev/null 2>>"$ERRLOG" || fail "could not resume node 3"
  "$CLUSTER_SH" resume 4 -d "$C5" >/dev/null 2>>"$ERRLOG" || fail "could not resume node 4"
  note "nodes 3 and 4 resumed"
  sleep 0.5 # let the resumed nodes work through the backlog they were sent
done

# ------------------------------------------------------------------ memory

MEM_LIMIT=$((QUICK ? 120 : 1800))
note "memory: $MEM_CYCLES cycles on $MEM_THREADS thread(s) (VmRSS before and after)"
MEM_T0=$SECONDS
run_bench lib.memory "libredlock memory ($MEM_CYCLES cycles)" "$MEM_LIMIT" \
  "$LIB" -u "$U5" -w memory -t "$MEM_THREADS" -n "$MEM_CYCLES" --ttl "$TTL"
MEM_WALL=$((SECONDS - MEM_T0))
if ((MEM16_CYCLES > 0)); then
  note "memory: $MEM16_CYCLES cycles on 16 threads"
  run_bench lib.memory16 "libredlock memory, 16 threads ($MEM16_CYCLES cycles)" "$MEM_LIMIT" \
    "$LIB" -u "$U5" -w memory -t 16 -n "$MEM16_CYCLES" --ttl "$TTL"
fi

# ----------------------------------------------------------------- scaling

if ((SCALE_CLUSTER == 5)); then
  CS=$C5
else
  "$CLUSTER_SH" stop -d "$C5" >/dev/null 2>>"$ERRLOG" || true # (the 9 take its place)
  start_cluster "$SCALE_CLUSTER" c$SCALE_CLUSTER
  CS=$CDIR
  note "cluster of $SCALE_CLUSTER up for the scaling runs"
fi
for ((rep = 1; rep <= SCALE_REPS; rep++)); do
  for n in $SCALE_NS; do
    if ((QUICK && n == 5)); then # quick: N=5 is the serial run above
      R[floor.n5.acq_p50_us]=${R[floor.serial.acq_p50_us]:-}
      R[lib.n5.acq_p50_us]=${R[lib.serial.acq_p50_us]:-}
      continue
    fi
    run_bench "floor.n$n" "floor serial N=$n (rep $rep/$SCALE_REPS)" 120 "$FLOOR" -u "$(uris "$CS" "$n")" -w serial -d "$D_SCALE" --ttl "$TTL"
    run_bench "lib.n$n" "libredlock serial N=$n (rep $rep/$SCALE_REPS)" 120 "$LIB" -u "$(uris "$CS" "$n")" -w serial -d "$D_SCALE" --ttl "$TTL"
  done
done
cluster_down
RUN_SECS=$((SECONDS - START))
note "measurements done in ${RUN_SECS}s; writing the report"

# ------------------------------------------------------------------ report

TABLE=$TMP/table.md
row() { # row LABEL FLOOR LIB NODE [DECIMALS]
  local d=${5:-0}
  printf '| %s | %s | %s | %s | %s | %s |\n' "$1" "$(dec "$2" "$d")" "$(dec "$3" "$d")" "$(dec "$4" "$d")" \
    "$(ratio_x "$3" "$2")" "$(ratio_x "$3" "$4")"
}
NV() { ((NODE_OK)) && val "$@" || echo ""; }
{
  echo "| workload | floor | libredlock | node-redlock | libredlock / floor | libredlock / node-redlock |"
  echo "|---|---:|---:|---:|---:|---:|"
  row "serial: acquire p50 (µs)" "$(val floor.serial acq_p50_us)" "$(val lib.serial acq_p50_us)" "$(NV node.serial acq_p50_us)" 1
  row "serial: acquire p99 (µs)" "$(val floor.serial acq_p99_us)" "$(val lib.serial acq_p99_us)" "$(NV node.serial acq_p99_us)" 1
  row "serial: acquire p99.9 (µs)" "$(val floor.serial acq_p999_us)" "$(val lib.serial acq_p999_us)" "$(NV node.serial acq_p999_us)" 1
  row "serial: cycle p50 (µs)" "$(val floor.serial cyc_p50_us)" "$(val lib.serial cyc_p50_us)" "$(NV node.serial cyc_p50_us)" 1
  row "serial: cycle p99 (µs)" "$(val floor.serial cyc_p99_us)" "$(val lib.serial cyc_p99_us)" "$(NV node.serial cyc_p99_us)" 1
  row "serial: cycles/s" "$(val floor.serial cps)" "$(val lib.serial cps)" "$(NV node.serial cps)"
  row "client CPU per cycle (µs, getrusage)" "$(val floor.cpu cpu_us_per_cycle)" "$(val lib.cpu cpu_us_per_cycle)" "$(NV node.serial cpu_us_per_cycle)" 1
  row "heap allocations per cycle (whole process)" "$(val floor.serial allocs_per_cycle)" "$(val lib.serial allocs_per_cycle)" "" 2
  row "… of which made by libredlock's own code" "" "$(val lib.serial own_allocs_per_cycle)" "" 2
  for t in $THREADS_LIST; do
    row "$t threads / callers, distinct keys: cycles/s" "" "$(val "lib.conc$t" cps)" "$(NV "node.conc$t" cps)"
  done
  for t in $THREADS_LIST; do
    row "$t threads / callers: cycle p50 (µs)" "" "$(val "lib.conc$t" cyc_p50_us)" "$(NV "node.conc$t" cyc_p50_us)" 0
  done
  row "server limit: -P16 SET + release EVALSHA per node (cycles/s)" "$MIX_LIMIT" "" ""
  row "server limit, informational: redis-benchmark -P16 SET NX PX, total ÷ 2N (cycles/s)" "$SERVER_LIMIT" "" ""
  row "contended, 8 threads one key: grants/s" "" "$(val lib.contended grants_per_s)" ""
  row "contended: handoff p50 (µs, release → next grant)" "" "$(val lib.contended handoff_p50_us)" "" 0
  row "contended: handoff p99 (µs)" "" "$(val lib.contended handoff_p99_us)" "" 0
  row "healthy, between the fault runs: acquire p50 (µs)" "" "$(val lib.healthy acq_p50_us)" "" 1
  row "1 of 5 killed: acquire p50 (µs)" "$(val floor.killed acq_p50_us)" "$(val lib.killed acq_p50_us)" "" 1
  row "2 of 5 paused: acquire p50 (µs)" "$(val floor.paused acq_p50_us)" "$(val lib.paused acq_p50_us)" "" 1
  row "2 of 5 paused: acquire p99 (µs)" "$(val floor.paused acq_p99_us)" "$(val lib.paused acq_p99_us)" "" 1
  for n in $SCALE_NS; do
    row "N=$n: acquire p50 (µs)" "$(val "floor.n$n" acq_p50_us)" "$(val "lib.n$n" acq_p50_us)" "" 1
  done
  first=${SCALE_NS%% *}
  last=${SCALE_NS##* }
  row "scaling: p50(N=$last) / p50(N=$first)" "$(ratio "$(val "floor.n$last" acq_p50_us)" "$(val "floor.n$first" acq_p50_us)")" \
    "$(ratio "$(val "lib.n$last" acq_p50_us)" "$(val "lib.n$first" acq_p50_us)")" "" 2
  row "memory, $MEM_THREADS thread(s): VmRSS after warm-up (KiB)" "" "$(val lib.memory rss_before_kb)" ""
  row "memory, $MEM_THREADS thread(s): VmRSS at 50 % of $MEM_CYCLES cycles (KiB)" "" "$(val lib.memory rss_at_50_pct_kb)" ""
  row "memory, $MEM_THREADS thread(s): VmRSS after $MEM_CYCLES cycles (KiB)" "" "$(val lib.memory rss_after_kb)" ""
  row "memory, $MEM_THREADS thread(s): heap allocations per cycle" "" "$(val lib.memory allocs_per_cycle)" "" 3
  if ((MEM16_CYCLES > 0)); then
    row "memory, 16 threads: VmRSS after warm-up (KiB)" "" "$(val lib.memory16 rss_before_kb)" ""
    row "memory, 16 threads: VmRSS at 50 % of $MEM16_CYCLES cycles (KiB)" "" "$(val lib.memory16 rss_at_50_pct_kb)" ""
    row "memory, 16 threads: VmRSS after $MEM16_CYCLES cycles (KiB)" "" "$(val lib.memory16 rss_after_kb)" ""
  fi
} >"$TABLE"

# The cost of the safety features, each against the plain runs interleaved with it.
SAFETY=$TMP/safety.md
srow() { # srow LABEL PLAIN WITH [DECIMALS]
  printf '| %s | %s | %s | %s |\n' "$1" "$(dec "$2" "${4:-1}")" "$(dec "$3" "${4:-1}")" "$(ratio_x "$3" "$2")"
}
{
  echo "| workload (libredlock, N=5) | plain | with the feature | ratio |"
  echo "|---|---:|---:|---:|"
  srow "fencing tokens: serial acquire p50 (µs)" "$(val lib.plain acq_p50_us)" "$(val lib.fenced acq_p50_us)"
  srow "fencing tokens: serial cycles/s" "$(val lib.plain cps)" "$(val lib.fenced cps)" 0
  srow "fencing tokens: 32 threads, cycles/s" "$(val lib.conc32.plain cps)" "$(val lib.conc32.fenced cps)" 0
  srow "restart quarantine + clock checks once a second: serial acquire p50 (µs)" "$(val lib.plain acq_p50_us)" "$(val lib.guarded acq_p50_us)"
  srow "restart quarantine + clock checks once a second: serial cycles/s" "$(val lib.plain cps)" "$(val lib.guarded cps)" 0
  srow "clock check on every acquire: serial acquire p50 (µs)" "$(val lib.plain acq_p50_us)" "$(val lib.clock0 acq_p50_us)"
  srow "clock check on every acquire: serial cycles/s" "$(val lib.plain cps)" "$(val lib.clock0 cps)" 0
  srow "clock check on every acquire: 32 threads, cycles/s" "$(val lib.conc32.plain cps)" "$(val lib.conc32.clock0 cps)" 0
} >"$SAFETY"

STATS_MD=$TMP/stats.md
stats_table >"$STATS_MD"

# Rows of the summary of `make bench` without a target of their own (the
# targets' rows come with the targets below).
summary "single caller, acquire + release cycles" "$(per_s "$(val lib.serial cps)")" "$(per_s "$(NV node.serial cps)")" \
  "$(per_s "$(val floor.serial cps)" | sed 's/^/floor: /')" "" ""
stats_off=$(val lib.stats cpu_off_us_per_cycle) stats_on=$(val lib.stats cpu_on_us_per_cycle)
stats_pct=$(awk -v p="$(val lib.stats stats_pct)" 'BEGIN { if (p != "") printf "%+.2f", p }')
target stats "$stats_pct" "${stats_pct:+$stats_pct % ($(vs "$stats_on" "$stats_off" 2 " µs"))}" \
  "statistics counters on, client CPU per cycle (single caller)" "$(us "$stats_on")${stats_pct:+ ($stats_pct %)}" "" \
  "$(us "$stats_off" | sed 's/^/counters off: /')"

# Run-to-run spread of the repeated runs (the medians above hide it).
SPREAD=$TMP/spread.md
spread() { # spread TAG KEY: "min / median / max (n runs)"
  local list=${R[$1.$2]:-}
  if [[ -z $list ]]; then echo "n/a"; return; fi
  tr ' ' '\n' <<<"$list" | sort -g | awk '{ a[NR] = $1 } END {
    m = (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2
    printf "%.1f / %.1f / %.1f (%d runs)\n", a[1], m, a[NR], NR }'
}
{
  echo "| acquire p50 (µs): min / median / max over the repeated runs | floor | libredlock |"
  echo "|---|---|---|"
  echo "| serial, N=5 | $(spread floor.serial acq_p50_us) | $(spread lib.serial acq_p50_us) |"
  for n in $SCALE_NS; do
    if ((QUICK && n == 5)); then continue; fi
    echo "| scaling, N=$n | $(spread "floor.n$n" acq_p50_us) | $(spread "lib.n$n" acq_p50_us) |"
  done
  echo "| client CPU µs/cycle (cpu runs) | $(spread floor.cpu cpu_us_per_cycle) | $(spread lib.cpu cpu_us_per_cycle) |"
  echo "| 32 threads / callers, cycles/s (first column: node-redlock) | $(spread node.conc32 cps) | $(spread lib.conc32 cps) |"
} >"$SPREAD"

# The targets (bench/targets.tsv), each also a row of the summary of `make bench`.
TARGETS=$TMP/targets.md
S50=$(val lib.serial acq_p50_us) F50=$(val floor.serial acq_p50_us)
r=$(ratio "$S50" "$F50")
target serial_p50 "$r" "${r:+$r× ($(vs "$S50" "$F50" 1 " µs"))}" "single caller, acquire p50" "$(us "$S50")" \
  "$(us "$(NV node.serial acq_p50_us)")" "$(us "$F50" | sed 's/^/floor: /')"
c=$(val lib.cpu cpu_us_per_cycle) fc=$(val floor.cpu cpu_us_per_cycle)
r=$(ratio "$c" "$fc")
target cpu "$r" "${r:+$r× ($(vs "$c" "$fc" 1 " µs"))}" "single caller, client CPU per acquire + release cycle" "$(us "$c")" \
  "$(us "$(NV node.serial cpu_us_per_cycle)")" "$(us "$fc" | sed 's/^/floor: /')"
c32=$(val lib.conc32 cps) n32=$(NV node.conc32 cps)
r=$(ratio "$c32" "$n32")
target conc32_node "$r" "${r:+$r× ($(vs "$c32" "$n32" 0 " cycles/s"))}" \
  "32 threads (node-redlock: 32 callers), distinct keys, cycles" "$(per_s "$c32")" "$(per_s "$n32")"
r=$(ratio "$c32" "$MIX_LIMIT")
target conc32_limit "$r" "${r:+$r× ($(vs "$c32" "$MIX_LIMIT" 0 " cycles/s"), the SET + EVALSHA limit; $(ratio_x "$c32" "$SERVER_LIMIT") of the SET-only limit $(dec "$SERVER_LIMIT" 0))}" \
  "32 threads, distinct keys, cycles against the servers' limit" "$(per_s "$c32")" "" \
  "$(per_s "$MIX_LIMIT" | sed 's/^/server limit: /')"
for t in paused2:paused:"2 of 5 nodes paused" killed1:killed:"1 of 5 nodes killed"; do
  IFS=: read -r id tag what <<<"$t"
  v=$(val "lib.$tag" acq_p50_us) h=$(val lib.healthy acq_p50_us)
  r=$(ratio "$v" "$h")
  target "$id" "$r" "${r:+$r× ($(vs "$v" "$h" 1 " µs"), the medians of $DEG_REPS interleaved run(s) each)}" \
    "$what, single caller, acquire p50" "$(us "$v")" "" "$(us "$h" | sed 's/^/healthy, the same minutes: /')"
done
lr=$(ratio "$(val "lib.n$last" acq_p50_us)" "$(val "lib.n$first" acq_p50_us)")
fr=$(ratio "$(val "floor.n$last" acq_p50_us)" "$(val "floor.n$first" acq_p50_us)")
dev=$(awk -v a="$lr" -v b="$fr" 'BEGIN { if (a == "" || b == "" || b == 0) exit; printf "%+.0f", (a / b - 1) * 100 }')
target scaling "$dev" "${dev:+$dev % against the floor growth (libredlock ${lr}×, floor ${fr}×, N=$last ÷ N=$first)}" \
  "scaling, acquire p50 with N=$last ÷ with N=$first" "${dev:+$lr× ($dev % against the floor ratio)}" "" "${fr:+floor: $fr×}"
al=$(val lib.serial allocs_per_cycle)
target allocs "$al" "${al:+$(dec "$al" 2) ($(dec "$(val lib.serial own_allocs_per_cycle)" 2) by libredlock itself, the rest in hiredis/libc; after 200 warm-up cycles)}" \
  "" "${al:+$(dec "$al" 2)}" "" "$(fig "$(val floor.serial allocs_per_cycle)" 2 | sed 's/^/floor: /')"
rb=$(val lib.memory rss_before_kb) ra=$(val lib.memory rss_after_kb) growth="" share=""
if [[ -n $rb && -n $ra ]]; then
  growth=$(awk -v a="$ra" -v b="$rb" 'BEGIN { printf "%+d", a - b }')
  share=$(awk -v a="$ra" -v b="$rb" 'BEGIN { m = b * 0.05; if (m < 512) m = 512; printf "%.3f", (a - b) / m }')
fi
target rss "$share" "${growth:+$growth KiB over $MEM_CYCLES cycles ($rb → $ra KiB, $(val lib.memory rss_at_50_pct_kb) at 50 %; $MEM_THREADS thread(s), $MEM_WALL s)}" \
  "resident size over $MEM_CYCLES cycles" "${growth:+$growth KiB ($rb → $ra KiB)}"
targets_table "target (issue 4)" >"$TARGETS"
# Machine and versions.
machine_info
CPU_MODEL=$CPU GIT_REV=$REV${LOOSE:+ + uncommitted changes in src/include/lua}
OS_NAME=$(. /etc/os-release 2>/dev/null && echo "${PRETTY_NAME:-?}" || echo "?")
MEM_TOTAL=$(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)
HIREDIS_V=$(pkg-config --modversion hiredis 2>/dev/null || echo "?")
NODE_V=$(node --version 2>/dev/null || echo "n/a")

# The plot.
PLOT_NOTE="not drawn (gnuplot missing)"
if command -v gnuplot >/dev/null; then
  z() { [[ -n ${1:-} ]] && echo "$1" || echo 0; }
  {
    echo '"serial N=5"' "$(z "$(val floor.serial acq_p50_us)")" "$(z "$(val floor.serial acq_p99_us)")" \
      "$(z "$(val lib.serial acq_p50_us)")" "$(z "$(val lib.serial acq_p99_us)")" \
      "$(z "$(NV node.serial acq_p50_us)")" "$(z "$(NV node.serial acq_p99_us)")"
    echo '"1 killed"' "$(z "$(val floor.killed acq_p50_us)")" "$(z "$(val floor.killed acq_p99_us)")" \
      "$(z "$(val lib.killed acq_p50_us)")" "$(z "$(val lib.killed acq_p99_us)")" 0 0
    echo '"2 paused"' "$(z "$(val floor.paused acq_p50_us)")" "$(z "$(val floor.paused acq_p99_us)")" \
      "$(z "$(val lib.paused acq_p50_us)")" "$(z "$(val lib.paused acq_p99_us)")" 0 0
  } >"$TMP/lat.dat"
  for t in $THREADS_LIST; do
    echo "$t $(z "$(val "lib.conc$t" cps)") $(z "$(NV "node.conc$t" cps)") $(z "$SERVER_LIMIT") $(z "$MIX_LIMIT")"
  done >"$TMP/thr.dat"
  for n in $SCALE_NS; do
    echo "$n $(z "$(val "floor.n$n" acq_p50_us)") $(z "$(val "lib.n$n" acq_p50_us)")"
  done >"$TMP/scale.dat"
  {
    echo "\"floor\" $(z "$(val floor.cpu cpu_us_per_cycle)")"
    echo "\"libredlock\" $(z "$(val lib.cpu cpu_us_per_cycle)")"
    echo "\"node-redlock\" $(z "$(NV node.serial cpu_us_per_cycle)")"
  } >"$TMP/cpu.dat"
  # room above the server-limit line for the key
  THR_YMAX=$(awk '{ for (i = 2; i <= 4; i++) if ($i > m) m = $i } END { printf "%d", (m > 0 ? m : 1000) * 1.45 }' "$TMP/thr.dat")
  cat >"$TMP/plot.gp" <<EOF
set terminal pngcairo size 1400,1000 font "DejaVu Sans,11"
set output "$OUT_PNG"
set multiplot layout 2,2 title "libredlock benchmarks ($MODE run, $DATE, $(nproc) cores, 5 local redis-server masters)" font ",13"
set grid ytics lc rgb "#dddddd"
set key top left
set style fill solid 0.85 border -1
set style data histograms

set title "Single caller: acquire latency (bar p50, whisker p99; log scale)"
set style histogram errorbars gap 2 lw 1.5
set ylabel "µs"
set logscale y
set yrange [10:*]
set key top left
plot "$TMP/lat.dat" using 2:2:3:xtic(1) title "floor" lc rgb "#999999", \
     "" using 4:4:5 title "libredlock" lc rgb "#1f77b4", \
     "" using 6:6:7 title "node-redlock (serial only)" lc rgb "#ff7f0e"
unset logscale y

set title "Throughput, distinct keys, one process"
set style data linespoints
set logscale x 2
set xlabel "threads (libredlock) / concurrent async callers (node-redlock)"
set ylabel "lock cycles/s"
set xrange [0.8:80]
set yrange [0:$THR_YMAX]
set key top left
plot "$TMP/thr.dat" using 1:2 title "libredlock" lw 2 pt 7 lc rgb "#1f77b4", \
     "" using 1:3 title "node-redlock" lw 2 pt 5 lc rgb "#ff7f0e", \
     "" using 1:4 title "server limit (redis-benchmark -P16 / 2N)" with lines dt 2 lw 2 lc rgb "#2ca02c", \
     "" using 1:(\$4/2) title "50% of server limit" with lines dt 3 lw 1.5 lc rgb "#2ca02c", \
     "" using 1:5 title "limit with the release script (SET + EVALSHA)" with lines dt 4 lw 1.5 lc rgb "#9467bd"
unset logscale x
unset xrange
unset xlabel
set yrange [0:*]

set title "Scaling: acquire p50 vs number of masters"
set xlabel "N (masters)"
set ylabel "µs"
set xtics (${SCALE_NS// /, })
set xrange [${SCALE_NS%% *}-0.5:${SCALE_NS##* }+0.5]
plot "$TMP/scale.dat" using 1:2 title "floor" lw 2 pt 7 lc rgb "#999999", \
     "" using 1:3 title "libredlock" lw 2 pt 7 lc rgb "#1f77b4"
unset xrange
set xtics autofreq
unset xlabel

set title "Client CPU per lock cycle (getrusage / process.cpuUsage)"
set style data histograms
set style histogram clustered gap 1
set boxwidth 0.6
set ylabel "µs CPU per cycle"
set key off
plot "$TMP/cpu.dat" using 2:xtic(1) lc rgb "#1f77b4"
unset multiplot
EOF
  if gnuplot "$TMP/plot.gp" 2>>"$ERRLOG"; then PLOT_NOTE="![latency and throughput]($(basename "$OUT_PNG"))"; else PLOT_NOTE="gnuplot failed"; fi
fi

{
  echo "# libredlock: core benchmark results (issue 4)"
  echo
  echo "Made by \`bench/core.sh$( ((QUICK)) && echo " --quick")\` ($MODE mode) at git $GIT_REV on $DATE; the measurements took ${RUN_SECS} s."
  echo "Everything below comes from this one run on one machine: compare the ratios, not the absolute numbers."
  echo
  echo "- **Machine**: $(nproc) cores, $CPU_MODEL, $MEM_TOTAL RAM; kernel $(uname -r); $OS_NAME"
  echo "- **Source**: git $GIT_REV"
  echo "- **Versions**: redis-server $REDIS_V, hiredis $HIREDIS_V, libredlock $LIB_VERSION (CMake Release build), node $NODE_V, node-redlock/ioredis: $NODE_VERSIONS"
  echo "- **Cluster**: 5 independent local redis-server masters (deploy/cluster.sh, TCP loopback); $SCALE_CLUSTER for the scaling runs."
  echo "- **Method**: serial runs of ${D_SERIAL} s, interleaved floor / libredlock / node-redlock, repeated $REPS× (median shown);"
  echo "  concurrency levels ${D_CONC} s each, repeated ${CONC_REPS}× interleaved with node-redlock (median); degraded runs ${D_DEG} s × $DEG_REPS, each after a healthy run; the server limit measured at the start of each concurrency repetition (median); scaling runs ${D_SCALE} s × $SCALE_REPS (interleaved); TTL ${TTL} ms, distinct keys,"
  echo "  libredlock with op_timeout_ms = 1000 and no retries (the contended run retries every 2 ± 1 ms)."
  echo "  Latencies are from the caller's side (µs); CPU is user + system time of the client process per acquire+release cycle."
  echo
  echo "## Results"
  echo
  cat "$TABLE"
  echo
  echo "Columns: **floor** = bench/floor.c, a bare hand-written fan-out over non-blocking hiredis contexts in one poll loop"
  echo "(SET NX PX to all, return at the majority, then a compare-and-delete EVAL the same way); **libredlock** = bench/bench_redlock.c"
  echo "through the public API; **node-redlock** = bench/node/bench.js (async callers in one node process, ioredis defaults)."
  echo "Allocations are counted by a malloc interposer in the benchmark binaries (every caller in the process, hiredis included)."
  echo
  echo "## Cost of the safety features (issue 6)"
  echo
  cat "$SAFETY"
  echo
  echo "Plain and feature runs are interleaved (serial $SAFE_REPS×, 32 threads $CONC_REPS×; medians). Fencing runs a second"
  echo "round (the write-back of the token); the quarantine reads INFO once per connection; clock checks send one TIME per node,"
  echo "pipelined ahead of an acquire's SET, at most once a second by default (clock_check_ms) or on every acquire (clock_check_ms = 0)."
  echo
  echo "## Cost of the statistics (issue 16)"
  echo
  cat "$STATS_MD"
  echo
  echo "On: the default (redlock_options_t.stats = 1); off: stats = 0. The counters are relaxed atomics bumped per call, per"
  echo "node vote and per round. bench_redlock -w stats runs one caller's acquire + release loop on two handles, one of each,"
  echo "alternating blocks of 100 cycles (off, on, on, off, ...) for 5 s, and adds each block's process CPU time to its handle."
  echo
  echo "## Targets (issue 4)"
  echo
  cat "$TARGETS"
  echo
  echo "Run-to-run spread (the machine is shared: a verdict whose margin is smaller than this spread is not resolved by one run):"
  echo
  cat "$SPREAD"
  echo
  echo "## Plot"
  echo
  echo "$PLOT_NOTE"
  echo
  echo "## Raw results"
  echo
  raw_details "$RAW" "every RESULT line of this run"
} >"$OUT_MD"

echo
echo "libredlock benchmarks ($MODE mode, $DATE; measurements ${RUN_SECS} s)"
echo
cat "$TABLE"
echo
cat "$SAFETY"
echo
cat "$STATS_MD"
echo
cat "$TARGETS"
echo
echo "Report: $OUT_MD"
echo "Plot:   $OUT_PNG"

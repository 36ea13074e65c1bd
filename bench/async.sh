#!/usr/bin/env bash
# async.sh [--quick] -- the non-blocking API's benchmark rows (issue 13,
# item 8), in one run on one machine so that the ratios hold:
#
#   async      bench/bench_async.c -w inflight -k K: one libuv loop thread,
#              K acquire + release cycles in flight on distinct keys
#   node       bench/node/bench.js -w concurrent -t K: node-redlock, K async
#              callers in one node process ("n/a" if npm cannot install it)
#   blocking   bench/bench_redlock.c -w concurrent -t K: the blocking API on
#              K threads, each its own acquire + release loop
#   front      bench/bench_front.c -k K: K threads whose blocking calls are
#              handed to one loop thread running the async API, each asleep
#              until its callback wakes it (the floor of a thread per call)
#   pending    bench_async -w pending: heap bytes per pending acquire
#              (10000 waiting on a resource held elsewhere)
#
# Headline: async with 256 in flight, node-redlock with 256 callers, the
# blocking API on 32 threads, the front on 32 threads (the blocking API's
# yardstick) and async with 32 in flight, interleaved, repeated (median).
# Sweep: the
# same three with K = 1, 2, 4, ..., 512 in flight (blocking: K threads, up
# to BLOCK_MAX, default 512). One cluster of 5 local masters
# (deploy/cluster.sh) for everything, always stopped at the end.
#
# Full mode writes bench/RESULTS-async.md and bench/async.png (`make bench`,
# bench/all.sh, puts the file in bench/RESULTS.md). --quick (about 1.5
# minutes) writes RESULTS-async-quick.md and async-quick.png into the build
# directory only. --note TEXT: a paragraph for the report. The targets are
# rows of bench/targets.tsv.
#
# Environment: BENCH_BUILD (default build-bench), the CMake build directory
# configured with -DREDLOCK_BUILD_BENCH=ON (`make bench-async` does it all);
# BLOCK_MAX.
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
export LC_ALL=C

ASYNC=$BUILD/bench/bench_async
LIB=$BUILD/bench/bench_redlock
WAKE=$BUILD/bench/bench_wake
FRONT=$BUILD/bench/bench_front
BLOCK_MAX=${BLOCK_MAX:-512}
bench_args async.sh "quick note" -- "$@"

LEVELS="1 2 4 8 16 32 64 128 256 512"
HEAD_K=256      # the headline's cycles in flight (async) and callers (node-redlock)
HEAD_T=32       # the headline's blocking threads
PENDING=10000   # pending acquires in the memory run
TTL=10000
if ((QUICK)); then
  MODE=quick REPS=1 D_HEAD=1.5 SWEEP_REPS=1 D_SWEEP=0.8 PENDING_REPS=1 RB_REQS=40000 NODE_WARMUP=50
  OUT_MD=$BUILD/bench/RESULTS-async-quick.md OUT_PNG=$BUILD/bench/async-quick.png
else
  MODE=full REPS=5 D_HEAD=4 SWEEP_REPS=3 D_SWEEP=3 PENDING_REPS=3 RB_REQS=200000 NODE_WARMUP=200
  OUT_MD=$ROOT/bench/RESULTS-async.md OUT_PNG=$ROOT/bench/async.png
fi

NOTE_WIDTH=4
[[ -x $ASYNC && -x $LIB && -x $FRONT ]] || fail "benchmarks not built in $BUILD (run: make bench-async)"
command -v redis-server >/dev/null || fail "redis-server is not installed"

bench_scratch async
TMP=$SCRATCH RAW=$SCRATCH/raw.txt ERRLOG=$LOG
: >"$RAW"
PROBLEMS=()

# go TAG LIMIT CMD...: runs one benchmark under a time limit and files its
# RESULT line under TAG in $RAW; a run without one, or with a non-zero
# exit, is listed in PROBLEMS (and its line, if any, kept).
go() {
  local tag=$1 limit=$2 out rc=0 line
  shift 2
  out=$(timeout -k 5 "$limit" "$@" 2>>"$ERRLOG") || rc=$?
  line=$(grep '^RESULT ' <<<"$out" | tail -n 1 || true)
  if [[ -z $line ]]; then
    note "$tag: no result (exit $rc)"
    PROBLEMS+=("$tag: no result (exit $rc)")
    return 0
  fi
  ((rc == 0)) || PROBLEMS+=("$tag: exit status $rc")
  echo "$tag $line" >>"$RAW"
  note "$tag:$(grep -o ' \(cps\|cyc_p50_us\|allocs_per_cycle\|bytes_per_pending\|errors\)=[^ ]*' <<<"$line" | tr -d '\n')"
}

# pick TAG KEY [median|min|max]: that statistic of KEY over TAG's runs
# ("" when there is none).
pick() {
  awk -v t="$1" -v k="$2=" '$1 == t { for (i = 2; i <= NF; i++) if (index($i, k) == 1) print substr($i, length(k) + 1) }' "$RAW" |
    case ${3:-median} in min) least ;; max) most ;; *) median ;; esac
}


# ------------------------------------------------------------ preparations

note "libredlock non-blocking API benchmarks, $MODE mode; scratch in $TMP"
ASYNC_VERSIONS=$("$ASYNC" --version 2>/dev/null || echo "?")

# node-redlock: the pinned packages in bench/node/node_modules.
node_redlock_setup bench.js
((NODE_OK)) || note "node-redlock unavailable: its column will be n/a"

cluster_up
CDIR=$CLUSTER U5=$NODES
note "cluster of 5 up: $U5"

# The three contenders at one level: K in flight / K callers / T threads.
async_run() { go "$1" 120 "$ASYNC" -u "$U5" -w inflight -k "$2" -d "$3" --ttl "$TTL"; }
node_run() { if ((NODE_OK)); then go "$1" 180 node "$NODE_DIR/bench.js" -u "$U5" -w concurrent -t "$2" -d "$3" --ttl "$TTL" --warmup "$NODE_WARMUP"; fi; }
block_run() { go "$1" 120 "$LIB" -u "$U5" -w concurrent -t "$2" -d "$3" --ttl "$TTL"; }
front_run() { go "$1" 120 "$FRONT" -u "$U5" -k "$2" -d "$3" --ttl "$TTL"; }

# ------------------------------------------------------------ measurements

for ((rep = 1; rep <= REPS; rep++)); do
  note "headline, rep $rep/$REPS"
  async_run head.async "$HEAD_K" "$D_HEAD"
  node_run head.node "$HEAD_K" "$D_HEAD"
  block_run head.block "$HEAD_T" "$D_HEAD"
  front_run head.front "$HEAD_T" "$D_HEAD"
  async_run head.async_t "$HEAD_T" "$D_HEAD"
done

for ((rep = 1; rep <= SWEEP_REPS; rep++)); do
  for k in $LEVELS; do
    note "sweep: $k in flight, rep $rep/$SWEEP_REPS"
    async_run "async.$k" "$k" "$D_SWEEP"
    node_run "node.$k" "$k" "$D_SWEEP"
    if ((k <= BLOCK_MAX)); then block_run "block.$k" "$k" "$D_SWEEP"; fi
  done
done

for ((rep = 1; rep <= PENDING_REPS; rep++)); do
  note "memory: $PENDING pending acquires, rep $rep/$PENDING_REPS"
  go pending 180 "$ASYNC" -u "$U5" -w pending -k "$PENDING" --ttl "$TTL"
done

# The servers' own ceiling, for reading the figures: SET NX PX pipelined 16
# deep by redis-benchmark on all 5 nodes at once; a cycle needs 2 commands a
# node, so the cycle limit is the total rate / 10.
note "server limit: redis-benchmark -P 16 SET NX PX on every node at once"
i=0
while read -r uri; do
  hp=${uri#redis://}
  redis-benchmark -h "${hp%:*}" -p "${hp##*:}" -n "$RB_REQS" -P 16 -c 50 -r 1000000 -q \
    SET 'key:__rand_int__' v NX PX 10000 </dev/null >"$TMP/rb.$i" 2>&1 &
  i=$((i + 1))
done <"$CDIR/nodes"
wait
LIMIT=$(cat "$TMP"/rb.* | tr '\r' '\n' | sed -n 's/.*: \([0-9.]*\) requests per second.*/\1/p' |
  awk '{ s += $1; n++ } END { if (n == 5) printf "%.0f\n", s / 10 }')
note "server limit: ${LIMIT:-n/a} cycles/s"
cluster_down

# What a thread wake-up costs here, with the servers stopped: a blocking call
# pays at least one (bench/wake.c).
if [[ -x $WAKE ]]; then
  note "wake-up cost: a futex round trip between two threads"
  go wake 60 "$WAKE"
fi
RUN_SECS=$((SECONDS - START))

# ------------------------------------------------------------------ tables

HEAD_MD=$TMP/head.md SWEEP_MD=$TMP/sweep.md MEM_MD=$TMP/mem.md TARGET_MD=$TMP/targets.md SPREAD_MD=$TMP/spread.md
a_cps=$(pick head.async cps) n_cps=$(pick head.node cps) b_cps=$(pick head.block cps)
{
  echo "| 5 nodes, distinct keys | libredlock async, 1 loop thread, $HEAD_K in flight | node-redlock, $HEAD_K callers | libredlock blocking, $HEAD_T threads | async / node-redlock | async / blocking |"
  echo "|---|---:|---:|---:|---:|---:|"
  printf '| cycles/s (acquire + release) | %s | %s | %s | %s | %s |\n' "$(dec "$a_cps" 0)" "$(dec "$n_cps" 0)" "$(dec "$b_cps" 0)" \
    "$(ratio_x "$a_cps" "$n_cps")" "$(ratio_x "$a_cps" "$b_cps")"
  for q in p50 p99; do
    a=$(pick head.async "cyc_${q}_us") n=$(pick head.node "cyc_${q}_us") b=$(pick head.block "cyc_${q}_us")
    printf '| cycle %s (µs) | %s | %s | %s | %s | %s |\n' "$q" "$(dec "$a" 0)" "$(dec "$n" 0)" "$(dec "$b" 0)" "$(ratio_x "$a" "$n")" "$(ratio_x "$a" "$b")"
  done
  a=$(pick head.async cpu_us_per_cycle) n=$(pick head.node cpu_us_per_cycle) b=$(pick head.block cpu_us_per_cycle)
  printf '| client CPU per cycle (µs, whole process) | %s | %s | %s | %s | %s |\n' "$(dec "$a" 1)" "$(dec "$n" 1)" "$(dec "$b" 1)" \
    "$(ratio_x "$a" "$n")" "$(ratio_x "$a" "$b")"
  printf '| heap allocations per cycle after warm-up, whole process | %s | n/a | %s | | |\n' \
    "$(dec "$(pick head.async allocs_per_cycle)" 3)" "$(dec "$(pick head.block allocs_per_cycle)" 3)"
  printf '| … made by the static link (libredlock, adapter, bench) | %s | n/a | %s | | |\n' \
    "$(dec "$(pick head.async own_allocs_per_cycle)" 3)" "$(dec "$(pick head.block own_allocs_per_cycle)" 3)"
  printf '| async: node votes not YES (%% of all, largest run; timeout / error / down votes) | %s (%s / %s / %s) | | | | |\n' \
    "$(dec "$(pick head.async votes_not_yes_pct max)" 2)" "$(dec "$(pick head.async votes_timeout max)" 0)" \
    "$(dec "$(pick head.async votes_error max)" 0)" "$(dec "$(pick head.async votes_down max)" 0)"
  printf '| errors (all runs) | %s | %s | %s | | |\n' "$(awk '$1 == "head.async"' "$RAW" | grep -o ' errors=[0-9]*' | awk -F= '{ s += $2 } END { print s + 0 }')" \
    "$(awk '$1 == "head.node"' "$RAW" | grep -o ' errors=[0-9]*' | awk -F= '{ s += $2 } END { print s + 0 }')" \
    "$(awk '$1 == "head.block"' "$RAW" | grep -o ' errors=[0-9]*' | awk -F= '{ s += $2 } END { print s + 0 }')"
  printf '| server limit: redis-benchmark -P16 SET NX PX on all 5, total ÷ 10 (cycles/s) | %s | | | | |\n' "$(dec "$LIMIT" 0)"
} >"$HEAD_MD"

{
  echo "| in flight K | async: cycles/s (1 loop thread) | async: cycle p50 (µs) | async: heap allocations per cycle | async: node votes not YES, % (largest run) | node-redlock, K callers: cycles/s | blocking, K threads: cycles/s | async / node-redlock | async / blocking |"
  echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
  for k in $LEVELS; do
    a=$(pick "async.$k" cps) n=$(pick "node.$k" cps) b=$(pick "block.$k" cps)
    printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$k" "$(dec "$a" 0)" "$(dec "$(pick "async.$k" cyc_p50_us)" 0)" \
      "$(dec "$(pick "async.$k" allocs_per_cycle)" 3)" "$(dec "$(pick "async.$k" votes_not_yes_pct max)" 2)" \
      "$(dec "$n" 0)" "$(dec "$b" 0)" "$(ratio_x "$a" "$n")" "$(ratio_x "$a" "$b")"
  done
} >"$SWEEP_MD"

name_b=$(pick pending resource_bytes)
{
  echo "| $PENDING acquires pending on one resource held by another redlock_t (median of $PENDING_REPS) | value |"
  echo "|---|---:|"
  printf '| heap in use, warm handle, none pending (bytes) | %s |\n' "$(dec "$(pick pending heap_base_b)" 0)"
  printf '| … with %s pending | %s |\n' "$((PENDING / 10))" "$(dec "$(pick pending heap_at_tenth_b)" 0)"
  printf '| … with %s pending | %s |\n' "$PENDING" "$(dec "$(pick pending heap_at_all_b)" 0)"
  printf '| bytes per pending acquire: (heap with %s − none) ÷ %s | %s |\n' "$PENDING" "$PENDING" "$(dec "$(pick pending bytes_per_pending)" 1)"
  printf '| … beyond the resource name (%s bytes with its NUL) | %s |\n' "$(dec "$name_b" 0)" "$(dec "$(pick pending bytes_per_pending_beyond_name)" 1)"
  printf '| marginal: (heap with %s − with %s) ÷ %s | %s |\n' "$PENDING" "$((PENDING / 10))" "$((PENDING - PENDING / 10))" \
    "$(dec "$(pick pending bytes_per_pending_marginal)" 1)"
  printf '| resident size per 1000 pending (KiB, VmRSS) | %s |\n' "$(dec "$(pick pending rss_kb_per_1000_pending)" 1)"
  printf '| heap after one redlock_async_cancel of all, callbacks run (bytes) | %s |\n' "$(dec "$(pick pending heap_after_cancel_b)" 0)"
  printf '| node votes error / down over the run, largest run (a burst beyond max_inflight marks a node down) | %s / %s |\n' \
    "$(dec "$(pick pending votes_error max)" 0)" "$(dec "$(pick pending votes_down max)" 0)"
  printf '| redlock_async_cancel returned / callbacks with CANCELLED / granted | %s / %s / %s |\n' \
    "$(dec "$(pick pending cancel_returned min)" 0)" "$(dec "$(pick pending cancelled min)" 0)" "$(dec "$(pick pending granted max)" 0)"
} >"$MEM_MD"

# The targets (bench/targets.tsv), each also a row of the summary of `make bench`.
# cps VALUE: "N cycles/s", nothing without a value.
cps() { if [[ -n ${1:-} ]]; then echo "$(dec "$1" 0) cycles/s"; fi; }
al=$(pick head.async allocs_per_cycle max)
pend=$(pick pending bytes_per_pending_beyond_name max)
r=$(ratio "$a_cps" "$n_cps" 4)
target node "$r" "${r:+$(dec "$r" 2)× ($(dec "$a_cps" 0) vs $(dec "$n_cps" 0) cycles/s)}" \
  "one loop thread, $HEAD_K in flight (node-redlock: $HEAD_K callers)" "$(cps "$a_cps")" "$(cps "$n_cps")"
r=$(ratio "$a_cps" "$b_cps" 4)
target blocking "$r" "${r:+$(dec "$r" 2)× ($(dec "$a_cps" 0) vs $(dec "$b_cps" 0) cycles/s)}" \
  "one loop thread, $HEAD_K in flight, against the blocking API" "$(cps "$a_cps")" "" \
  "$(cps "$b_cps" | sed "s/^/blocking, $HEAD_T threads: /")"
at_cps=$(pick head.async_t cps) f_cps=$(pick head.front cps)
r=$(ratio "$b_cps" "$f_cps" 4)
target blocking_front "$r" "${r:+$(dec "$r" 2)× ($(dec "$b_cps" 0) vs $(dec "$f_cps" 0) cycles/s)}" \
  "the blocking API on $HEAD_T threads, against $HEAD_T threads handed to one loop thread" "$(cps "$b_cps")" "" \
  "$(cps "$f_cps" | sed "s/^/front, $HEAD_T threads: /")"
target pending "$pend" "${pend:+$(dec "$pend" 1) B (largest of $PENDING_REPS runs; $PENDING pending)}" \
  "heap per pending acquire beyond the name ($PENDING pending)" "${pend:+$(dec "$pend" 0) B}"
target allocs "$al" "${al:+$(dec "$al" 4) (largest of $REPS runs; made by the static link: $(dec "$(pick head.async own_allocs_per_cycle max)" 4))}" \
  "heap allocations per cycle once warm, $HEAD_K in flight" "${al:+$(dec "$al" 4)}"
targets_table "target (issue 13)" >"$TARGET_MD"

{
  echo "| cycles/s over the headline's $REPS runs | min | median | max |"
  echo "|---|---:|---:|---:|"
  for t in head.async head.node head.block head.front head.async_t; do
    [[ -n $(pick "$t" cps) ]] || continue
    printf '| %s | %s | %s | %s |\n' "${t#head.}" "$(dec "$(pick "$t" cps min)" 0)" "$(dec "$(pick "$t" cps)" 0)" "$(dec "$(pick "$t" cps max)" 0)"
  done
} >"$SPREAD_MD"

# ------------------------------------------------------------------- plot

PLOT_NOTE="not drawn (gnuplot missing: make bench-deps installs gnuplot-nox)"
if command -v gnuplot >/dev/null; then
  z() { local v; v=$(pick "$1" "$2"); echo "${v:-NaN}"; } # gnuplot's missing value
  for k in $LEVELS; do
    echo "$k $(z "async.$k" cps) $(z "node.$k" cps) $(z "block.$k" cps) ${LIMIT:-NaN}" \
      "$(z "async.$k" cyc_p50_us) $(z "node.$k" cyc_p50_us) $(z "block.$k" cyc_p50_us)"
  done >"$TMP/sweep.dat"
  cat >"$TMP/plot.gp" <<EOF
set terminal pngcairo size 1400,560 font "DejaVu Sans,11"
set output "$OUT_PNG"
set datafile missing "NaN"
set multiplot layout 1,2 title "libredlock non-blocking API, one libuv loop thread ($MODE run, $(date -u +%Y-%m-%d), $(nproc) cores, 5 local redis-server masters)" font ",13"
set grid xtics ytics lc rgb "#dddddd"
set logscale x 2
set xrange [0.8:640]
set xlabel "cycles in flight K (async: on one thread; node-redlock: K callers; blocking: K threads)"
set style data linespoints
set key top left opaque
set title "Throughput, distinct keys"
set ylabel "acquire + release cycles/s"
set format y "%.0f"
set yrange [0:*]
set offsets 0, 0, graph 0.3, 0
plot "$TMP/sweep.dat" using 1:2 title "libredlock async, 1 loop thread" lw 2 pt 7 lc rgb "#1f77b4", \
     "" using 1:4 title "libredlock blocking, K threads" lw 2 pt 9 lc rgb "#2ca02c", \
     "" using 1:3 title "node-redlock, K async callers" lw 2 pt 5 lc rgb "#ff7f0e", \
     "" using 1:5 title "server limit (redis-benchmark -P16 SET ÷ 2N)" with lines dt 2 lw 1.5 lc rgb "#7f7f7f"
set title "Cycle latency p50 (log scale)"
set ylabel "µs"
set logscale y
set format y "%g"
set yrange [*:*]
set offsets 0, 0, 0, 0
plot "$TMP/sweep.dat" using 1:6 title "libredlock async, 1 loop thread" lw 2 pt 7 lc rgb "#1f77b4", \
     "" using 1:8 title "libredlock blocking, K threads" lw 2 pt 9 lc rgb "#2ca02c", \
     "" using 1:7 title "node-redlock, K async callers" lw 2 pt 5 lc rgb "#ff7f0e"
unset multiplot
EOF
  if gnuplot "$TMP/plot.gp" 2>>"$ERRLOG"; then PLOT_NOTE="![throughput and latency against cycles in flight]($(basename "$OUT_PNG"))"; else PLOT_NOTE="gnuplot failed"; fi
fi

# ----------------------------------------------------------------- report

machine_info
CPU_MODEL=$CPU
VIRT=$(systemd-detect-virt 2>/dev/null || true)
grep -q firecracker /proc/cmdline 2>/dev/null && VIRT="${VIRT:+$VIRT container in a }Firecracker VM"
GIT_REV=$REV${LOOSE:+ + files not as committed in src/include/lua: $LOOSE}
REPORT=$TMP/report.md
{
  echo "## Non-blocking API: one libuv loop thread (issue 13)"
  echo
  echo "Made by \`bench/async.sh$( ((QUICK)) && echo " --quick")\` ($MODE mode) at git ${GIT_REV%% *} on $DATE; the measurements took ${RUN_SECS} s. One run on one machine: compare the ratios."
  echo
  echo "- **Machine**: $(nproc) cores, ${CPU_MODEL:-?}, kernel $(uname -r)${VIRT:+, virtualized ($VIRT)}; the client and the 5 redis-server processes share those cores;"
  echo "  load average (1, 5, 15 min) $LOAD_BEFORE before the run, $LOAD_AFTER after it (the run's own load is about 2)."
  echo "- **Source**: git $GIT_REV; $ASYNC_VERSIONS (Release build); node $(node --version 2>/dev/null || echo n/a), $NODE_VERSIONS; redis-server $REDIS_V."
  echo "- **Cluster**: 5 independent local masters (deploy/cluster.sh, TCP loopback), one cluster for the whole run."
  echo "- **Method**: headline runs of ${D_HEAD} s, async / node-redlock / blocking interleaved, $REPS× (median); sweep levels ${D_SWEEP} s each, $SWEEP_REPS× (median);"
  echo "  TTL ${TTL} ms, a new key per cycle, one attempt per acquire (async wait_ms 0; blocking and node-redlock no retries), op_timeout_ms 1000."
  echo "  async = bench/bench_async.c -w inflight: K slots on one loop thread, each starting its next acquire from its release's callback;"
  echo "  cycles finished within the window are counted, after a warm-up of max(2000, 8K) cycles. Latency is from the acquire call to the release callback."
  echo "  blocking = bench/bench_redlock.c -w concurrent (one redlock_t, T threads, each an acquire + release loop); node-redlock = bench/node/bench.js -w concurrent."
  echo "  front = bench/bench_front.c: T threads, each an acquire + release loop of blocking calls handed to one loop thread that starts"
  echo "  them with redlock_async_batch (one write per node for all queued), each thread asleep on a futex word until its callback ran."
  echo
  if [[ -n $NOTE ]]; then
    echo "$NOTE"
    echo
  fi
  echo "### Headline: $HEAD_K in flight on one thread"
  echo
  cat "$HEAD_MD"
  echo
  echo "### Throughput against cycles in flight"
  echo
  cat "$SWEEP_MD"
  echo
  echo "Reading the node-votes column: on distinct keys every vote should be a YES. A round ends at its quorum, so a cycle"
  echo "can start its next round while the slowest node still owes replies; when the servers (sharing the cores with the"
  echo "client) cannot keep up, that node's backlog grows until it owes max_inflight (4096) requests, and it is marked down"
  echo "for reconnect_min_ms (50 ms): its votes are then DOWN (and the requests it owed, ERROR), and those cycles were"
  echo "decided by the other nodes. The library's first warnings of each run are in bench_async's stderr."
  echo
  echo "$PLOT_NOTE"
  echo
  echo "### Memory per pending acquire"
  echo
  cat "$MEM_MD"
  echo
  echo "bench_async -w pending: a blocking redlock_t of the same process holds the resource; the async handle (warmed up with 4000 cycles,"
  echo "256 in flight) then starts the acquires in batches of 500 every 10 ms, with wait_ms 120000 and retry_delay_ms 120000,"
  echo "so that each stays pending after its first refused attempt. Heap in use is glibc's"
  echo "mallinfo2() (uordblks + hblkhd, all arenas), read once it has not moved by more than 256 bytes for 200 ms (and at least 1 s after the last batch)."
  echo
  echo "### Targets"
  echo
  cat "$TARGET_MD"
  echo
  cat "$SPREAD_MD"
  if [[ -n $at_cps ]]; then
    echo
    echo "A thread per call against one loop thread, $HEAD_T cycles in flight either way: the blocking API makes"
    echo "$(ratio_x "$b_cps" "$at_cps") and the front $(ratio_x "$f_cps" "$at_cps") of async's $(dec "$at_cps" 0) cycles/s (medians). The front runs the async API"
    echo "itself, so what it loses is the threads' own cost: a sleep and a wake-up a call, and calls that reach the loop one"
    echo "thread at a time (doc/performance.md, \"The blocking handle under many threads\")."
  fi
  if [[ -n $(pick wake any_core_us) ]]; then
    echo
    echo "What a thread wake-up costs on this machine (bench/wake.c: two threads pass a turn back and forth on futex words,"
    echo "a round trip being two wake-ups and two context switches; measured with the servers stopped):"
    echo "$(dec "$(pick wake any_core_us)" 1) µs a round trip when the threads may run on any core (the woken thread's core is"
    echo "usually idle and must be roused), $(dec "$(pick wake one_core_us)" 1) µs with both on one core. A blocking call sleeps while"
    echo "its round is out and is woken once it is decided: at least one wake-up and one context switch a call, which the"
    echo "loop thread does not pay."
  fi
  if ((${#PROBLEMS[@]})); then
    echo
    echo "Runs that did not end cleanly (see the raw lines):"
    echo
    printf -- '- %s\n' "${PROBLEMS[@]}"
  fi
  echo
  raw_details "$RAW" "every RESULT line of this run"
} >"$REPORT"

mkdir -p "$(dirname "$OUT_MD")"
{
  echo "# libredlock: non-blocking API benchmark results"
  echo
  sed '1,2d' "$REPORT"
} >"$OUT_MD"
echo
echo "libredlock non-blocking API benchmarks ($MODE mode, $DATE; measurements ${RUN_SECS} s)"
echo
cat "$HEAD_MD"
echo
cat "$SWEEP_MD"
echo
cat "$MEM_MD"
echo
cat "$TARGET_MD"
((${#PROBLEMS[@]} == 0)) || printf 'problem: %s\n' "${PROBLEMS[@]}"
echo
echo "Report: $OUT_MD"
echo "Plot:   $OUT_PNG"

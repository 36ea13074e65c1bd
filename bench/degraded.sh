#!/usr/bin/env bash
# degraded.sh [--quick] [--note TEXT] -- lock availability while a minority
# of the 5 nodes fails (issue 23, item 6), everything with DEFAULT library
# options (only the nodes set), on a 5-node cluster of its own
# (deploy/cluster.sh; always stopped at the end, also on Ctrl-C or failure).
#
# The workload (issue 23): contenders on ONE resource, each holds it 5 ms,
# releases, works 5 ms elsewhere; acquire waits at most 3 s (--wait-ms
# 3000), then is called again. Shapes:
#   one   bench_handoff -w contend -t 8 --handles one: 1 process x 8 threads
#         sharing one redlock_t
#   two   two bench_handoff processes at once, -t 4 each (one redlock_t
#         each), on the same key; --shared-counter makes overlaps and
#         handoffs count across the two
#   node  bench/node/bench_handoff.js: node-redlock, 8 async tasks sharing
#         one Redlock ("n/a" when npm cannot install it)
# Faults, each its own phase (every shape under every fault); the fault is
# applied WARM seconds into the run, so the first timeout falls inside it:
#   healthy  nothing
#   paused1  node 1 SIGSTOPped (TCP still accepts, nothing answers)
#   killed1  node 1 SIGKILLed (connection refused)
#   paused2  nodes 1 and 3 SIGSTOPped
# After each phase the node is restored (SIGCONT, or deploy/cluster.sh
# restart) and every node checked up before the next.
#
# Measured over the window from the fault to the end of the run (the same
# window for healthy), from each grant's time (bench_handoff --timeline):
# grants/s, its % of the same shape's healthy rate, handoff p50/p99 (from
# a release made while someone waited to the next grant), busy % (grants x
# 5 ms / window), the longest time without a grant; overlapping holders over
# the whole run (must be 0).
#
# Full mode: REPS (2) interleaved repetitions of 10 s runs (fault at 2 s),
# about 5 minutes; writes bench/RESULTS-degraded.md and bench/degraded.png
# (grants/s over time, each fault and shape). --quick (about a minute): one
# repetition of 3.5 s runs (fault at 1 s), files in $BENCH_BUILD/bench only.
# --note TEXT: a paragraph for the report.
#
# Environment: BENCH_BUILD (default build-bench), the CMake build directory
# configured with -DREDLOCK_BUILD_BENCH=ON (`make bench-degraded` does it).
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
export LC_ALL=C

BIN=$BUILD/bench/bench_handoff
bench_args degraded.sh "quick note" -- "$@"

HOLD_MS=5 WORK_MS=5 WAIT_MS=3000 BUCKET_MS=100
FAULTS="healthy paused1 killed1 paused2"
SHAPES="one two node"
if ((QUICK)); then
  MODE=quick REPS=1 SECS=3.5 WARM=1
  OUT_DIR=$BUILD/bench OUT_MD=$BUILD/bench/RESULTS-degraded-quick.md OUT_PNG=$BUILD/bench/degraded-quick.png
else
  MODE=full REPS=2 SECS=10 WARM=2
  OUT_DIR=$ROOT/bench OUT_MD=$ROOT/bench/RESULTS-degraded.md OUT_PNG=$ROOT/bench/degraded.png
fi

[[ -x $BIN ]] || fail "$BIN is not built (run: make bench-degraded)"
command -v redis-server >/dev/null || fail "redis-server is not installed"

bench_scratch degraded
PHASES=$SCRATCH/phases.txt # "shape fault rep win_start win_end violations stuck" per phase
LINES=$SCRATCH/results.txt # "shape.fault.rep.proc RESULT ..." per run
: >"$PHASES"
: >"$LINES"
RUNNING=() # pids of the runs of the current phase (timeout wrappers)
TROUBLE=()

# finish_hook: the runs of a phase cut short, before the cluster stops.
finish_hook() {
  local p
  for p in "${RUNNING[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${RUNNING[@]}"; do wait "$p" 2>/dev/null || true; done
}

# ------------------------------------------------------------ node-redlock

node_redlock_setup bench_handoff.js
((NODE_OK)) || { note "node-redlock is not available: its rows will be n/a"; SHAPES="one two"; }

# ------------------------------------------------------------ the faults

node_pid() { cat "$CLUSTER/node$1/redis.pid"; }

# apply FAULT: signals the nodes directly (no script start-up between the
# recorded time and the signal).
apply() {
  case $1 in
    healthy) ;;
    paused1) kill -STOP "$(node_pid 1)" ;;
    killed1) kill -KILL "$(node_pid 1)" ;;
    paused2) kill -STOP "$(node_pid 1)" "$(node_pid 3)" ;;
  esac
}

# restore FAULT: every node back and answering.
restore() {
  case $1 in
    healthy) ;;
    paused1) "$CLUSTER_SH" resume 1 -d "$CLUSTER" >/dev/null 2>>"$LOG" ;;
    killed1) "$CLUSTER_SH" restart 1 -d "$CLUSTER" >/dev/null 2>>"$LOG" ;;
    paused2) "$CLUSTER_SH" resume 1 -d "$CLUSTER" >/dev/null 2>>"$LOG" &&
             "$CLUSTER_SH" resume 3 -d "$CLUSTER" >/dev/null 2>>"$LOG" ;;
  esac || fail "could not restore the nodes after '$1'"
  local i
  for i in 0 1 2 3 4; do
    redis-cli -u "$(sed -n "$((i + 1))p" "$CLUSTER/nodes")" ping 2>/dev/null | grep -q PONG ||
      fail "node $i does not answer after restoring '$1'"
  done
}

# ------------------------------------------------------------ one phase

# phase SHAPE FAULT REP: the shape's runs, the fault WARM s in, the restore;
# a line in $PHASES, the RESULT lines in $LINES, the timelines in $SCRATCH.
phase() {
  local shape=$1 fault=$2 rep=$3 tag="$1.$2.$3" key="bench:degraded:$1.$2.$3.$$" procs p i status
  local limit
  limit=$(awk -v s="$SECS" 'BEGIN { printf "%d", s + 30 }')
  note "rep $rep/$REPS, $fault: $shape"
  RUNNING=()
  case $shape in
    one)
      timeout -k 5 "$limit" "$BIN" -u "$NODES" -w contend -t 8 --handles one -d "$SECS" --hold-ms "$HOLD_MS" \
        --work-ms "$WORK_MS" --wait-ms "$WAIT_MS" --key "$key" --timeline "$SCRATCH/tl.$tag.0" \
        >"$SCRATCH/out.$tag.0" 2>>"$LOG" &
      RUNNING+=($!) ;;
    two)
      for i in 0 1; do
        timeout -k 5 "$limit" "$BIN" -u "$NODES" -w contend -t 4 --handles one -d "$SECS" --hold-ms "$HOLD_MS" \
          --work-ms "$WORK_MS" --wait-ms "$WAIT_MS" --key "$key" --shared-counter "$SCRATCH/counter.$tag" \
          --timeline "$SCRATCH/tl.$tag.$i" >"$SCRATCH/out.$tag.$i" 2>>"$LOG" &
        RUNNING+=($!)
      done ;;
    node)
      timeout -k 5 "$limit" node "$NODE_DIR/bench_handoff.js" -u "$NODES" -t 8 -d "$SECS" --hold-ms "$HOLD_MS" \
        --work-ms "$WORK_MS" --timeline "$SCRATCH/tl.$tag.0" >"$SCRATCH/out.$tag.0" 2>>"$LOG" &
      RUNNING+=($!) ;;
  esac
  sleep "$WARM"
  local fault_t=$EPOCHREALTIME
  apply "$fault"
  procs=${#RUNNING[@]}
  for ((i = 0; i < procs; i++)); do
    status=0
    wait "${RUNNING[i]}" || status=$?
    ((status == 0)) || TROUBLE+=("$tag, process $i: exit status $status")
  done
  RUNNING=()
  restore "$fault"

  # the window: from the fault (or the latest start) to the earliest end
  local res starts="" ends="" viol=0 stuck=0
  for ((i = 0; i < procs; i++)); do
    res=$(grep '^RESULT ' "$SCRATCH/out.$tag.$i" | tail -n 1 || true)
    if [[ -z $res || ! -s $SCRATCH/tl.$tag.$i ]]; then
      TROUBLE+=("$tag, process $i: no result")
      note "$tag, process $i: no result"
      return 0
    fi
    echo "$tag.$i $res" >>"$LINES"
    starts+=" $(kv "$res" start_epoch)" ends+=" $(kv "$res" end_epoch)"
    viol=$((viol + $(kv "$res" violations)))
    p=$(kv "$res" stuck_tasks)
    stuck=$((stuck + ${p:-0}))
  done
  awk -v f="$fault_t" -v s="$starts" -v e="$ends" -v shape="$shape" -v fault="$fault" -v rep="$rep" \
    -v viol="$viol" -v stuck="$stuck" 'BEGIN {
      n = split(s, a, " "); ws = f; for (i = 1; i <= n; i++) if (a[i] + 0 > ws) ws = a[i] + 0
      n = split(e, b, " "); we = b[1] + 0; for (i = 2; i <= n; i++) if (b[i] + 0 < we) we = b[i] + 0
      printf "%s %s %s %.6f %.6f %.6f %d %d\n", shape, fault, rep, f, ws, we, viol, stuck }' >>"$PHASES"
  if ((viol)); then note "$tag: $viol overlapping grants!"; fi
}


# ------------------------------------------------------------ the runs

cluster_up
note "$MODE mode; 5 nodes up: $NODES"

for ((rep = 1; rep <= REPS; rep++)); do
  for fault in $FAULTS; do
    # the shapes' order turns each repetition
    order=$SHAPES
    for ((k = 1; k < rep; k++)); do order="${order#* } ${order%% *}"; done
    for shape in $order; do phase "$shape" "$fault" "$rep"; done
  done
done
cluster_down
ELAPSED=$((SECONDS - START))

# ------------------------------------------------------------ the figures

# window SHAPE FAULT: every repetition's grants inside its window, as
# "rep seconds_since_fault handoff_us|-", and on stderr nothing.
window() {
  local shape=$1 fault=$2 rep f ws we
  while read -r s fa rep f ws we _; do
    [[ $s == "$shape" && $fa == "$fault" ]] || continue
    sort -g -k1,1 "$SCRATCH/tl.$shape.$fault.$rep".* | awk -v rep="$rep" -v f="$f" -v ws="$ws" -v we="$we" \
      '$1 + 0 >= ws && $1 + 0 < we { printf "%s %.6f %s\n", rep, $1 - f, $2 }'
  done <"$PHASES"
}

# stats SHAPE FAULT: "grants_per_s lowest_rep highest_rep p50 p99 busy gap_ms overlaps stuck reps"
# (empty without phases): grants over the windows of all repetitions, handoff
# percentiles (nearest rank) over their handoffs, the longest time without a
# grant (the window's start and end count as grants) in any repetition.
stats() {
  local shape=$1 fault=$2
  awk -v shape="$shape" -v fault="$fault" '$1 == shape && $2 == fault {
      n++; secs += $6 - $5; printf "W %s %.6f %.6f\n", $3, $5 - $4, $6 - $4; viol += $7; stuck += $8 }
    END { if (!n) exit 1; printf "T %.6f %d %d %d\n", secs, viol, stuck, n }' "$PHASES" >"$SCRATCH/w" || return 0
  window "$shape" "$fault" >"$SCRATCH/g"
  awk '$3 != "-" { print $3 }' "$SCRATCH/g" | sort -g >"$SCRATCH/h"
  local p50 p99
  p50=$(quantile 0.5 <"$SCRATCH/h")
  p99=$(quantile 0.99 <"$SCRATCH/h")
  awk -v hold="$HOLD_MS" -v p50="${p50:--}" -v p99="${p99:--}" '
    FNR == NR { if ($1 == "W") { from[$2] = $3; to[$2] = $4; last[$2] = $3 } else { secs = $2; viol = $3; stuck = $4; reps = $5 }; next }
    { cnt[$1]++; if ($2 - last[$1] > gap) gap = $2 - last[$1]; last[$1] = $2 }
    END {
      first = 1
      for (r in from) {
        if (to[r] - last[r] > gap) gap = to[r] - last[r]
        rate = cnt[r] / (to[r] - from[r]); total += cnt[r]
        if (first || rate < lo) lo = rate; if (first || rate > hi) hi = rate; first = 0
      }
      printf "%.3f %.3f %.3f %s %s %.3f %.1f %d %d %d\n", total / secs, lo, hi, p50, p99,
        100 * total * hold / 1000 / secs, gap * 1000, viol, stuck, reps }' "$SCRATCH/w" "$SCRATCH/g"
}


declare -A WHO=(
  [one]="libredlock, 1 process × 8 threads, one redlock_t"
  [two]="libredlock, 2 processes × 4 threads, one redlock_t each"
  [node]="node-redlock, 1 process × 8 async tasks"
)
declare -A WHAT=(
  [healthy]="healthy"
  [paused1]="1 node paused (SIGSTOP)"
  [killed1]="1 node killed (SIGKILL)"
  [paused2]="2 nodes paused (SIGSTOP)"
)
declare -A ST
for shape in one two node; do
  for fault in $FAULTS; do ST[$shape.$fault]=$(stats "$shape" "$fault"); done
done
# field N of a stats line
field() { awk -v n="$2" '{ print $n }' <<<"${ST[$1]:-}"; }

TABLE_MD=$SCRATCH/table.md
{
  echo "| shape | fault | grants/s | % of healthy | handoff p50 µs | handoff p99 µs | busy % | longest gap ms | overlaps |"
  echo "|---|---|---:|---:|---:|---:|---:|---:|---:|"
  for shape in one two node; do
    for fault in $FAULTS; do
      if [[ -z ${ST[$shape.$fault]:-} ]]; then
        echo "| ${WHO[$shape]} | ${WHAT[$fault]} | n/a | | | | | | |"
        continue
      fi
      rate=$(field "$shape.$fault" 1)
      shown=$(dec "$rate" 1)
      ((REPS == 1)) || shown="$shown ($(dec "$(field "$shape.$fault" 2)" 0)–$(dec "$(field "$shape.$fault" 3)" 0))"
      pct=$(ratio "$rate" "$(field "$shape.healthy" 1)")
      [[ -z $pct ]] || pct=$(awk -v r="$pct" 'BEGIN { printf "%.0f %%", 100 * r }')
      ov=$(field "$shape.$fault" 8)
      st=$(field "$shape.$fault" 9)
      ((st == 0)) || ov="$ov ($st tasks stuck at the end)"
      printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "${WHO[$shape]}" "${WHAT[$fault]}" "$shown" "${pct:-n/a}" \
        "$(dec "$(field "$shape.$fault" 4)" 0)" "$(dec "$(field "$shape.$fault" 5)" 0)" "$(dec "$(field "$shape.$fault" 6)" 1)" \
        "$(dec "$(field "$shape.$fault" 7)" 0)" "$ov"
    done
  done
} >"$TABLE_MD"

# The targets (bench/targets.tsv), each also a row of the summary of `make bench`.
pct() { local r; r=$(ratio "$(field "$1.$2" 1)" "$(field "$1.healthy" 1)" 3); [[ -z $r ]] || awk -v r="$r" 'BEGIN { printf "%.1f\n", 100 * r }'; }
# rate SHAPE FAULT: "grants/s (% of healthy)" for the summary
rate() { if [[ -n ${ST[$1.$2]:-} ]]; then echo "$(dec "$(field "$1.$2" 1)" 1)/s ($(dec "$(pct "$1" "$2")" 0) % of healthy)"; fi; }
healthy_rate() { if [[ -n ${ST[$1.healthy]:-} ]]; then echo "healthy: $(dec "$(field "$1.healthy" 1)" 1)/s"; fi; }
for t in one.paused1 two.paused1 one.killed1 two.killed1; do
  shape=${t%.*} fault=${t#*.}
  v=$(pct "$shape" "$fault")
  target "${shape}_$fault" "$v" "${v:+$(dec "$v" 0) %}" "" "$(rate "$shape" "$fault")" \
    "$(if [[ $shape == one ]]; then rate node "$fault"; fi)" "$(healthy_rate "$shape")"
done
for shape in one two; do
  p=$(field "$shape.paused1" 5) h=$(field "$shape.healthy" 5)
  v=$(ratio "$p" "$h" 3)
  np=""
  [[ $shape != one || -z ${ST[node.paused1]:-} ]] ||
    np="$(dec "$(field node.paused1 5)" 0) µs ($(dec "$(ratio "$(field node.paused1 5)" "$(field node.healthy 5)" 3)" 2) × healthy)"
  target "${shape}_p99" "$v" "${v:+$(dec "$v" 2) × ($(dec "$p" 0) vs $(dec "$h" 0) µs)}" "" \
    "$(fig "$p" 0 " µs")${v:+ ($(dec "$v" 2) × healthy)}" "$np" "$(fig "$h" 0 " µs" | sed 's/^/healthy: /')"
done
ov="" n=0
for shape in one two; do
  for fault in $FAULTS; do
    [[ -z ${ST[$shape.$fault]:-} ]] || { ov=$((${ov:-0} + $(field "$shape.$fault" 8))); n=$((n + 1)); }
  done
done
target overlaps "$ov" "${ov:-n/a} (in $n (shape, fault) cells)" "" "${ov:-n/a} (in $n cells)"
v=$(field one.healthy 4)
target healthy_p50 "$v" "$(fig "$v" 0 " µs")" "" "$(fig "$v" 0 " µs")" "$(fig "$(field node.healthy 4)" 0 " µs")"
v=$(field one.healthy 6)
target healthy_busy "$v" "$(fig "$v" 1 " %")" "" "$(fig "$v" 1 " %")" "$(fig "$(field node.healthy 6)" 1 " %")"
TARGETS_MD=$SCRATCH/targets.md
targets_table "target (issue 23)" >"$TARGETS_MD"

# ------------------------------------------------------------ the plot

# series SHAPE FAULT: "seconds_since_fault grants_per_s" per BUCKET_MS
# bucket, the mean over the repetitions whose window (or, before the fault,
# run) covers the whole bucket.
series() {
  local shape=$1 fault=$2
  while read -r s fa rep f ws we _; do
    [[ $s == "$shape" && $fa == "$fault" ]] || continue
    # before the fault the run's own start counts (the window starts at the fault)
    st=$(awk -v t="$(grep "^$shape.$fault.$rep\\." "$LINES" | tr ' ' '\n' | sed -n 's/^start_epoch=//p' | sort -g | tail -n 1)" \
      -v f="$f" 'BEGIN { printf "%.6f", t - f }')
    echo "R $rep $st $(awk -v we="$we" -v f="$f" 'BEGIN { printf "%.6f", we - f }')"
    cat "$SCRATCH/tl.$shape.$fault.$rep".* | awk -v rep="$rep" -v f="$f" '{ printf "G %s %.6f\n", rep, $1 - f }'
  done <"$PHASES" | awk -v b="$BUCKET_MS" '
    $1 == "R" { lo[$2] = $3; hi[$2] = $4; next }
    { k = $3 * 1000 / b; k = (k < 0 && k != int(k)) ? int(k) - 1 : int(k); c[$2 SUBSEP k]++ }
    END {
      first = 1
      for (r in lo) {
        a = int(lo[r] * 1000 / b) - 1; z = int(hi[r] * 1000 / b) + 1
        if (first || a < amin) amin = a; if (first || z > zmax) zmax = z; first = 0
      }
      for (k = amin; k <= zmax; k++) {
        n = 0; s = 0
        for (r in lo) if (k * b / 1000 >= lo[r] && (k + 1) * b / 1000 <= hi[r]) { n++; s += c[r SUBSEP k] }
        if (n) printf "%.3f %.2f\n", (k + 0.5) * b / 1000, s / n * 1000 / b
      }
    }'
}

PLOT_NOTE="(no plot: gnuplot is missing; make bench-deps installs gnuplot-nox)"
if command -v gnuplot >/dev/null; then
  declare -A COLOR=([healthy]="#2ca02c" [paused1]="#ff7f0e" [killed1]="#1f77b4" [paused2]="#d62728")
  GP=$SCRATCH/degraded.gp
  {
    echo "set terminal pngcairo size 1200,1100 font \"DejaVu Sans,10\""
    echo "set output \"$OUT_PNG\""
    echo "set termoption noenhanced"
    echo "set multiplot layout 3,1 title \"Grants/s over time, one resource, 5 local nodes, default options (${BUCKET_MS} ms buckets; the fault at 0 s; mean of $REPS repetition(s))\""
    echo "set grid ytics xtics lc rgb \"#dddddd\""
    echo "set xlabel \"seconds since the fault\""
    echo "set ylabel \"grants/s\""
    echo "set yrange [0:*]"
    echo "set key outside right top"
    echo "set arrow 1 from 0, graph 0 to 0, graph 1 nohead dt 3 lc rgb \"#7f7f7f\""
    echo "set xrange [-$WARM:$(awk -v s="$SECS" -v w="$WARM" 'BEGIN { print s - w }')]"
    for shape in one two node; do
      echo "set title \"${WHO[$shape]}\""
      curves=()
      for fault in $FAULTS; do
        f=$SCRATCH/series.$shape.$fault
        series "$shape" "$fault" >"$f"
        [[ -s $f ]] && curves+=("\"$f\" using 1:2 with lines lw 1.5 lc rgb \"${COLOR[$fault]}\" title \"${WHAT[$fault]}\"")
      done
      if ((${#curves[@]})); then
        printf 'plot %s' "${curves[0]}"
        for ((i = 1; i < ${#curves[@]}; i++)); do printf ', \\\n     %s' "${curves[i]}"; done
        echo
      else
        echo "set label 9 \"n/a\" at graph 0.5, graph 0.5 center"
        echo "plot [0:1] [0:1] NaN notitle"
        echo "unset label 9"
      fi
    done
    echo "unset multiplot"
  } >"$GP"
  mkdir -p "$OUT_DIR"
  if gnuplot "$GP" 2>>"$LOG"; then
    PLOT_NOTE="![grants/s over time, each fault and shape]($(basename "$OUT_PNG"))"
  else
    PLOT_NOTE="(gnuplot failed: no plot)"
  fi
fi

# ------------------------------------------------------------ the report

machine_info
[[ -z $LOOSE ]] || REV="$REV + uncommitted changes in $LOOSE"

mkdir -p "$OUT_DIR"
{
  echo "# libredlock: lock availability with a minority of nodes failing (issue 23, item 6)"
  echo
  echo "\`bench/degraded.sh$( ((QUICK)) && echo " --quick")\` (\`make bench-degraded$( ((QUICK)) && echo "-quick")\`), $DATE, ${ELAPSED} s."
  echo "Library at git $REV; $("$BIN" --version); node $(node --version 2>/dev/null || echo n/a), $NODE_VERSIONS; redis-server $REDIS_V; $(gnuplot --version 2>/dev/null || echo "no gnuplot")."
  echo "Machine: $(nproc) cores (${CPU:-?}), $(uname -sr), shared by the clients and the 5 redis-server processes -- and with another"
  echo "engineer's builds, which may run at the same time: load average $LOAD_BEFORE before, $LOAD_AFTER after. Compare rows of this run"
  echo "with each other, not with other machines."
  if [[ -n $NOTE ]]; then
    echo
    echo "$NOTE"
  fi
  echo
  echo "The workload (issue 23): contenders on ONE resource, each holds it $HOLD_MS ms, releases, works $WORK_MS ms elsewhere. libredlock:"
  echo "default options (only the nodes set), acquire with a wait bound of $WAIT_MS ms (called again after it), TTL 10 s;"
  echo "node-redlock: \`new Redlock(clients)\` (retryCount 10, retryDelay 200 ms, jitter 100 ms), ioredis defaults (no command timeout)."
  echo "Shapes: one process with 8 threads sharing one redlock_t (\`bench_handoff -w contend -t 8 --handles one\`); two such processes"
  echo "with 4 threads each on the same key (\`--shared-counter\`: the holder count and the last release in a shared mmap'd file, so"
  echo "overlaps and handoffs count across the two); node-redlock with 8 async tasks in one process. Each shape under each fault is"
  echo "a phase of $SECS s on this run's own 5 nodes; the fault is applied $WARM s in, and undone (SIGCONT, or \`deploy/cluster.sh"
  echo "restart\`) before the next phase: **paused** = SIGSTOP of the redis-server (TCP still accepts, nothing answers), node 1 (and"
  echo "node 3 for two); **killed** = SIGKILL of node 1 (connection refused). $REPS repetition(s), the phases interleaved (every shape"
  echo "under one fault, then the next fault; the shapes' order turned each repetition)."
  echo
  echo "- **grants/s**: grants from the fault to the end of the run (healthy: the same window) ÷ the window, over every repetition"
  echo "  (the range of the repetitions in brackets); **% of healthy**: ÷ the same shape's healthy rate."
  echo "- **handoff**: from a release made while another contender waited (inside acquire) to the next grant, in the window; for"
  echo "  two processes also from one process's release to the other's grant (one monotonic clock)."
  echo "- **busy**: grants × $HOLD_MS ms ÷ the window. **longest gap**: the longest time without a grant in the window (from the"
  echo "  fault), any repetition: how long the fault stalls the lock before the client recovers."
  echo "- **overlaps**: grants made while another contender (of any process of the shape) held the lock, over the whole run; must be 0."
  echo
  echo "### Grants per second, handoff and busy time"
  echo
  cat "$TABLE_MD"
  echo
  echo "### Targets"
  echo
  cat "$TARGETS_MD"
  echo
  echo "(The killed-node target is judged for both libredlock shapes; healthy handoff p50 and busy for the one-process shape, the"
  echo "workload of \`make bench-handoff\`.)"
  if ((${#TROUBLE[@]})); then
    echo
    echo "Runs that did not end cleanly:"
    echo
    printf -- '- %s\n' "${TROUBLE[@]}"
  fi
  echo
  echo "### Over time"
  echo
  echo "$PLOT_NOTE"
  echo
  raw_details "$LINES" "the RESULT lines of this run (whole runs, warm-up included)"
} >"$OUT_MD.tmp"
mv "$OUT_MD.tmp" "$OUT_MD"

echo
echo "degraded-nodes benchmark, $MODE mode ($DATE, ${ELAPSED} s)"
echo
cat "$TABLE_MD"
echo
cat "$TARGETS_MD"
((${#TROUBLE[@]} == 0)) || printf 'trouble: %s\n' "${TROUBLE[@]}"
echo
echo "Report: $OUT_MD"
echo "Plot:   $OUT_PNG"

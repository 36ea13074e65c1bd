#!/usr/bin/env bash
# scale.sh [--quick] [--note TEXT] -- cost in the number of locks and
# waiters (issue 24, item 6; doc/design.md, "Cost flat in locks and
# waiters"), default library options, on a 5-node cluster of its own
# (deploy/cluster.sh; always stopped at the end, also on Ctrl-C or failure).
# bench/bench_scale.c says what each run does.
#
# Runs, each a bench_scale process of its own, the nodes flushed between:
#   held      acquire + release of one other resource with 0 / 1 000 /
#             10 000 / 100 000 locks held (16 threads took them, TTL 600 s),
#             the time per lock of each 10 000 slice taken and released,
#             heap and RSS per held lock, and after releasing them all
#   async     handoff p50/p99 with 1 / 100 / 1 000 / 10 000 resources
#             waited on by one redlock_async_t on libuv; bytes per pending
#   blocking  the same with waiter threads on one redlock_t: 1 / 100 /
#             1 000 / 10 000 (one thread per waiter, 256 KiB stacks; the
#             quick mode stops at 100)
#   autoext   10 000 and 1 auto-extended locks (TTL 10 s): CPU, lateness
# Each step is bounded (BOUND seconds per held step, DEADLINE per run); a
# step past it is reported as "> bound" with what it reached.
#
# Full mode (about 5 to 8 minutes): writes bench/RESULTS-scale.md and
# bench/scale.png. --quick (about a minute; held up to 10 000, waiters up
# to 1 000, 1 000 auto-extended locks): files in $BENCH_BUILD/bench only.
# --note TEXT: a paragraph for the report.
#
# Environment: BENCH_BUILD (default build-bench), the CMake build directory
# configured with -DREDLOCK_BUILD_BENCH=ON (`make bench-scale` does it).
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
export LC_ALL=C

BIN=$BUILD/bench/bench_scale
bench_args scale.sh "quick note" -- "$@"

if ((QUICK)); then
  MODE=quick LEVELS=0,1000,10000 PROBES=100 BOUND=30 DEADLINE=30 SAMPLES=15
  WAITERS="1 100 1000" BWAITERS="1 100" EXTS="1000 1" WINDOW=8
  OUT_MD=$BUILD/bench/RESULTS-scale-quick.md OUT_PNG=$BUILD/bench/scale-quick.png
else
  MODE=full LEVELS=0,1000,10000,100000 PROBES=300 BOUND=150 DEADLINE=60 SAMPLES=30
  WAITERS="1 100 1000 10000" BWAITERS="1 100 1000 10000" EXTS="10000 1" WINDOW=20
  OUT_MD=$ROOT/bench/RESULTS-scale.md OUT_PNG=$ROOT/bench/scale.png
fi
BIG_HELD=${LEVELS##*,}
BIG_WAIT=${WAITERS##* }
BIG_EXT=${EXTS%% *}
TTL=10000

[[ -x $BIN ]] || fail "$BIN is not built (run: make bench-scale)"
command -v redis-server >/dev/null || fail "redis-server is not installed"
command -v redis-cli >/dev/null || fail "redis-cli is not installed"

bench_scratch scale
LINES=$SCRATCH/results.txt
: >"$LINES"
RUN_PID=""

# finish_hook: the run in progress, before the cluster stops.
finish_hook() {
  [[ -z $RUN_PID ]] || { kill -TERM "$RUN_PID" 2>/dev/null || true; wait "$RUN_PID" 2>/dev/null || true; }
}

cluster_up
note "$MODE mode on 5 nodes"

flush() {
  local u
  while read -r u; do redis-cli -u "$u" flushall >/dev/null 2>>"$LOG" || fail "FLUSHALL failed on $u"; done <"$CLUSTER/nodes"
}

# run LABEL ARGS...: one bench_scale process, bounded from outside too (its
# own bounds come first); its RESULT lines go to $LINES, the rest to the log.
run() {
  local label=$1 status=0
  shift
  flush
  note "$label"
  # --foreground: the run stays in our process group, so Ctrl-C reaches it
  timeout --foreground -k 5 900 "$BIN" -u "$NODES" "$@" >"$SCRATCH/out" 2>>"$LOG" &
  RUN_PID=$!
  wait "$RUN_PID" || status=$?
  RUN_PID=""
  if ((status == 130 || status == 143)); then exit "$status"; fi
  ((status == 0)) || note "$label: exit status $status"
  grep '^RESULT' "$SCRATCH/out" >>"$LINES" || true
  grep -v '^RESULT' "$SCRATCH/out" >>"$LOG" || true
}

run "held: levels $LEVELS (bound $BOUND s a step)" -w held --levels "$LEVELS" --slice 10000 --threads 16 \
  --probes "$PROBES" --bound "$BOUND" --deadline $((BOUND * 5))
for n in $WAITERS; do
  run "async handoff, $n waiting" -w async -k "$n" --samples "$SAMPLES" --deadline "$DEADLINE"
done
for n in $BWAITERS; do
  run "blocking handoff, $n waiting threads" -w blocking -k "$n" --samples "$SAMPLES" --deadline "$DEADLINE"
done
for n in $EXTS; do
  run "autoext, $n locks" -w autoext -k "$n" --ttl "$TTL" --window "$WINDOW" --threads 16 --bound "$BOUND" \
    --deadline $((BOUND * 3))
done
flush
cluster_down

# ------------------------------------------------------------ the report

# get WORKLOAD SELECTOR=VALUE FIELD: FIELD of the first RESULT line of
# WORKLOAD whose SELECTOR is VALUE ("" when there is none).
get() {
  awk -v w="workload=$1" -v sel=" $2 " -v f="$3" '
    $0 ~ (" " w " ") && (index($0 " ", sel) > 0) {
      for (i = 1; i <= NF; i++) { split($i, kv, "="); if (kv[1] == f) { print kv[2]; exit } }
    }' "$LINES"
}
us() { [[ -n $1 ]] && awk -v v="$1" 'BEGIN { if (v >= 10000) printf "%.1f ms", v / 1000; else printf "%.0f µs", v }' || echo "n/a"; }
# times_held A B: A ÷ B for the tables, n/a when it cannot be computed
times_held() { local r; r=$(ratio "$1" "$2"); echo "${r:-n/a}"; }
grouped() { awk -v v="$1" 'BEGIN { s = sprintf("%d", v); o = ""; while (length(s) > 3) { o = " " substr(s, length(s) - 2) o; s = substr(s, 1, length(s) - 3) } print s o }'; }

HELD_TABLE=$SCRATCH/held.md
P50_0=$(get held held=0 p50_us)
{
  echo "| locks held | acquire + release p50 | p99 | p50 / 0 held | time to take this step |"
  echo "|---:|---:|---:|---:|---:|"
  for l in ${LEVELS//,/ }; do
    reached=$(get held "held=$l" reached)
    bound=$(get held_bound "level=$l" held)
    if [[ -n $bound ]]; then
      hb=$(get held "held=$bound" p50_us)
      echo "| $(grouped "$l") | not reached: > $BOUND s (held $(grouped "$bound")) | | | > $BOUND s |"
      echo "| ($(grouped "$bound"), reached) | $(us "$hb") | $(us "$(get held "held=$bound" p99_us)") | $(times_held "$hb" "$P50_0") | |"
      break
    fi
    [[ -n $reached ]] || continue
    p50=$(get held "held=$l" p50_us)
    step=$(get held "held=$l" step_s)
    echo "| $(grouped "$l") | $(us "$p50") | $(us "$(get held "held=$l" p99_us)") | $(times_held "$p50" "$P50_0") | $(awk -v s="$step" 'BEGIN { printf "%.1f s", s }') |"
  done
} >"$HELD_TABLE"

SLICE_TABLE=$SCRATCH/slices.md
SLICE_DAT=$SCRATCH/slices.dat
{
  echo "| locks | take: µs per lock | release: µs per lock |"
  echo "|---|---:|---:|"
  awk '/workload=held_slice / || /workload=release_slice / {
         for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
         key = f["from"] ".." f["to"]; if (!(key in seen)) { seen[key] = 1; order[n++] = key }
         if ($0 ~ /held_slice/) take[key] = f["us_per_lock"]; else rel[key] = f["us_per_lock"] }
       END { for (i = 0; i < n; i++) { k = order[i]
               printf "| %s | %s | %s |\n", k, (k in take) ? sprintf("%.1f", take[k]) : "", (k in rel) ? sprintf("%.1f", rel[k]) : "" } }' "$LINES"
} >"$SLICE_TABLE"
awk '/workload=held_slice / { for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
       if (f["to"] > f["from"]) print f["to"], f["us_per_lock"] }' "$LINES" >"$SLICE_DAT"

HAND_TABLE=$SCRATCH/handoff.md
{
  echo "| waiters | async handoff p50 | p99 | samples | waiter rounds/s | process CPU | blocking handoff p50 | p99 | samples | waiter rounds/s | process CPU |"
  echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
  for n in $WAITERS; do
    row="| $(grouped "$n") |"
    if [[ $(get async "waiters=$n" timed_out) == 1 ]]; then
      row="$row > $DEADLINE s (run bound; $(get async "waiters=$n" samples) samples) | | | $(awk -v v="$(get async "waiters=$n" waiter_rounds_per_s)" 'BEGIN { printf "%.0f", v }') | |"
    elif [[ -n $(get async "waiters=$n" samples) ]]; then
      row="$row $(us "$(get async "waiters=$n" handoff_p50_us)") | $(us "$(get async "waiters=$n" handoff_p99_us)") | $(get async "waiters=$n" samples) | $(awk -v v="$(get async "waiters=$n" waiter_rounds_per_s)" 'BEGIN { printf "%.0f", v }') | $(awk -v v="$(get async "waiters=$n" cpu_pct)" 'BEGIN { printf "%.0f %%", v }') |"
    else
      row="$row n/a | | | | |"
    fi
    if [[ " $BWAITERS " != *" $n "* ]]; then
      row="$row not run (one thread per waiter) | | | | |"
    elif [[ $(get blocking "waiters=$n" timed_out) == 1 ]]; then
      row="$row > $DEADLINE s (run bound; $(get blocking "waiters=$n" samples) samples) | | | | |"
    elif [[ -n $(get blocking "waiters=$n" samples) ]]; then
      row="$row $(us "$(get blocking "waiters=$n" handoff_p50_us)") | $(us "$(get blocking "waiters=$n" handoff_p99_us)") | $(get blocking "waiters=$n" samples) | $(awk -v v="$(get blocking "waiters=$n" waiter_rounds_per_s)" 'BEGIN { printf "%.0f", v }') | $(awk -v v="$(get blocking "waiters=$n" cpu_pct)" 'BEGIN { printf "%.0f %%", v }') |"
    else
      row="$row n/a | | | | |"
    fi
    echo "$row"
  done
} >"$HAND_TABLE"

EXT_TABLE=$SCRATCH/autoext.md
{
  echo "| auto-extended locks | process CPU (% of one core) | least validity seen (% of TTL) | worst lateness (ms, % of TTL) | extensions made / expected | lost | time to take them | to release them |"
  echo "|---:|---:|---:|---:|---:|---:|---:|---:|"
  for n in $EXTS; do
    [[ -n $(get autoext "target=$n" locks) ]] || { echo "| $(grouped "$n") | n/a | | | | | | |"; continue; }
    g() { get autoext "target=$n" "$1"; }
    extra=""
    [[ $(g timed_out) == 1 ]] && extra=" (bound hit: $(g locks) taken / extended)"
    echo "| $(grouped "$n")$extra | $(awk -v v="$(g cpu_pct)" 'BEGIN { printf "%.2f %%", v }') | $(awk -v v="$(g min_validity_pct)" 'BEGIN { printf "%.1f %%", v }') | $(awk -v a="$(g late_ms)" -v b="$(g late_pct)" 'BEGIN { printf "%.0f ms (%.1f %%)", a, b }') | $(g extensions) / $(awk -v v="$(g extensions_expected)" 'BEGIN { printf "%.0f", v }') | $(g lost) | $(awk -v v="$(g fill_s)" 'BEGIN { printf "%.1f s", v }') | $(awk -v v="$(g release_s)" 'BEGIN { printf "%.1f s", v }') |"
  done
} >"$EXT_TABLE"

MEM_TABLE=$SCRATCH/mem.md
M() { get held_mem "target=$BIG_HELD" "$1"; }
A() { get async "waiters=$BIG_WAIT" "$1"; }
HELD_N=$(M held)
HEAP_GROWTH=$(awk -v a="$(M heap_peak_kb)" -v b="$(M heap_start_kb)" 'BEGIN { print a - b }')
HEAP_LEFT=$(awk -v a="$(M heap_after_release_kb)" -v b="$(M heap_start_kb)" 'BEGIN { print a - b }')
LEFT_PCT=$(awk -v l="$HEAP_LEFT" -v g="$HEAP_GROWTH" 'BEGIN { if (g <= 0) print "n/a"; else printf "%.1f", 100 * l / g }')
{
  echo "| what | count | heap per item | beyond the name | RSS per item |"
  echo "|---|---:|---:|---:|---:|"
  echo "| held lock (blocking) | $(grouped "${HELD_N:-0}") | $(awk -v v="$(M heap_per_lock)" 'BEGIN { printf "%.0f B", v }') | $(awk -v v="$(M heap_per_lock_beyond_name)" 'BEGIN { printf "%.0f B", v }') | $(awk -v v="$(M rss_per_lock)" 'BEGIN { printf "%.0f B", v }') |"
  if [[ -n $(A heap_per_pending) && ( $(A phase) -ge 3 || $(A hung) == 1 ) ]]; then
    echo "| pending async acquire$([[ $(A all_waiting) == 1 ]] || echo ' (not all counted waiting)') | $(grouped "$BIG_WAIT") | $(awk -v v="$(A heap_per_pending)" 'BEGIN { printf "%.0f B", v }') | $(awk -v v="$(A heap_per_pending_beyond_name)" 'BEGIN { printf "%.0f B", v }') | $(awk -v v="$(A rss_per_pending)" 'BEGIN { printf "%.0f B", v }') |"
  else
    echo "| pending async acquire | $(grouped "$BIG_WAIT") | n/a: the run did not get there | | |"
  fi
  echo
  echo "After releasing the $(grouped "${HELD_N:-0}") held locks ($(get held_mem "target=$BIG_HELD" released) released in $(awk -v v="$(M release_s)" 'BEGIN { printf "%.1f s", v }')):"
  echo "heap in use $(awk -v v="$HEAP_LEFT" 'BEGIN { printf "%+.0f KiB", v }') against the start (the peak was $(awk -v v="$HEAP_GROWTH" 'BEGIN { printf "%+.0f KiB", v }'), so $LEFT_PCT % of it stays);"
  echo "RSS $(M rss_start_kb) KiB at the start, $(M rss_peak_kb) KiB at the peak, $(M rss_after_release_kb) KiB after the release and"
  echo "$(M rss_after_trim_kb) KiB after malloc_trim(0) (glibc keeps freed pages mapped: RSS is not the library's to return)."
} >"$MEM_TABLE"

# targets
T_HELD=$(times_held "$(get held "held=$BIG_HELD" p50_us)" "$P50_0")
T_HELD_SAY="$T_HELD ×"
HB=$(get held_bound "level=$BIG_HELD" held)
if [[ -n $HB ]]; then # not reached: the ratio at what was held, and FAIL
  T_HELD=999 T_HELD_SAY="not reached in $BOUND s; $(times_held "$(get held "held=$HB" p50_us)" "$P50_0") × at $(grouped "$HB") held"
fi
A1=$(get async waiters=1 handoff_p50_us)
AB=$(get async "waiters=$BIG_WAIT" handoff_p50_us)
T_HAND=n/a T_HAND_SAY="n/a"
[[ $(get async "waiters=$BIG_WAIT" timed_out) == 0 && $(get async "waiters=$BIG_WAIT" samples) -gt 0 ]] 2>/dev/null &&
  T_HAND=$(times_held "$AB" "$A1") T_HAND_SAY="$(times_held "$AB" "$A1") ×"
[[ $(get async "waiters=$BIG_WAIT" timed_out) == 1 ]] && T_HAND=999 T_HAND_SAY="> $DEADLINE s run bound"
E() { get autoext "target=$BIG_EXT" "$1"; }
T_CPU=$(E cpu_pct); [[ -n $T_CPU && $(E timed_out) == 0 ]] || T_CPU=n/a
T_LATE=$(E late_pct); [[ -n $T_LATE && $(E timed_out) == 0 ]] || T_LATE=n/a
T_LOST=$(E lost)
T_MEM_HELD=$(M heap_per_lock_beyond_name); [[ -n $T_MEM_HELD ]] || T_MEM_HELD=n/a
T_MEM_PEND=n/a
[[ -n $(A heap_per_pending_beyond_name) && ( $(A phase) -ge 3 || $(A hung) == 1 ) ]] && T_MEM_PEND=$(A heap_per_pending_beyond_name)
TARGETS=$SCRATCH/targets.md
pct_or_na() { awk -v v="$1" -v f="$2" 'BEGIN { if (v == "n/a") print v; else printf f, v }'; }
T_LATE_SAY="$(pct_or_na "$T_LATE" "%.1f %%"), ${T_LOST:-?} lost"
T_LATE_SHOWN="$(pct_or_na "$T_LATE" "%.1f %%") of the TTL, ${T_LOST:-?} lost"
[[ ${T_LOST:-1} == 0 || $T_LATE == n/a ]] || T_LATE=999 # (one lost fails it)
target held "$T_HELD" "$T_HELD_SAY" "acquire + release p50 with $(grouped "$BIG_HELD") locks held" \
  "$(us "$(get held "held=$BIG_HELD" p50_us)") ($T_HELD_SAY)" "" "0 held: $(us "$P50_0")"
target handoff "$T_HAND" "$T_HAND_SAY" "async handoff p50 with $(grouped "$BIG_WAIT") waiting" "$(us "$AB") ($T_HAND_SAY)" "" \
  "1 waiting: $(us "$A1")"
target autoext_cpu "$T_CPU" "$(pct_or_na "$T_CPU" "%.2f %%") ($(grouped "$BIG_EXT") locks)" \
  "CPU of $(grouped "$BIG_EXT") auto-extended locks" "$(pct_or_na "$T_CPU" "%.2f %%") of one core"
target autoext_late "$T_LATE" "$T_LATE_SAY" "worst lateness of $(grouped "$BIG_EXT") auto-extended locks" \
  "$T_LATE_SHOWN"
target mem_held "$T_MEM_HELD" "$(pct_or_na "$T_MEM_HELD" "%.0f B")" "" "$(pct_or_na "$T_MEM_HELD" "%.0f B")"
target mem_pending "$T_MEM_PEND" "$(pct_or_na "$T_MEM_PEND" "%.0f B")" "" "$(pct_or_na "$T_MEM_PEND" "%.0f B")"
target heap_left "$LEFT_PCT" "$LEFT_PCT %" "heap left after releasing $(grouped "${HELD_N:-0}") held locks" \
  "$LEFT_PCT % of the growth"
targets_table "target (bench/targets.tsv)" >"$TARGETS"

# ------------------------------------------------------------ the plot

PLOT_NOTE=""
if command -v gnuplot >/dev/null; then
  awk -v lv="${LEVELS//,/ }" 'BEGIN { n = split(lv, L, " ") }
       /workload=held / { for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
         x = f["held"] < 1 ? 1 : f["held"]; print x, f["p50_us"] }' "$LINES" >"$SCRATCH/held.dat"
  awk '/workload=async / { for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
         if (f["timed_out"] == 0 && f["samples"] > 0) print f["waiters"], f["handoff_p50_us"] }' "$LINES" >"$SCRATCH/async.dat"
  awk '/workload=blocking / { for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
         if (f["timed_out"] == 0 && f["samples"] > 0) print f["waiters"], f["handoff_p50_us"] }' "$LINES" >"$SCRATCH/blocking.dat"
  plot_line() { [[ -s $1 ]] && printf "'%s' using 1:2 with linespoints lw 2 pt 7 title '%s'" "$1" "$2"; }
  SERIES=()
  for s in "$SCRATCH/held.dat|acquire + release p50 vs locks held (0 held drawn at 1)" \
           "$SCRATCH/async.dat|async handoff p50 vs waiters" \
           "$SCRATCH/blocking.dat|blocking handoff p50 vs waiting threads" \
           "$SLICE_DAT|time per lock taken in each 10 000 slice vs locks held at its end"; do
    p=$(plot_line "${s%%|*}" "${s#*|}") && SERIES+=("$p")
  done
  if ((${#SERIES[@]})); then
    mkdir -p "$(dirname "$OUT_PNG")"
    {
      echo "set terminal pngcairo size 1000,600 font 'sans,10'"
      echo "set output '$OUT_PNG'"
      echo "set title 'libredlock at scale (5 local nodes, default options, $MODE mode): flat lines = cost independent of the count'"
      echo "set logscale xy"
      echo "set xlabel 'locks held / waiters'"
      echo "set ylabel 'µs (log)'"
      echo "set key top left"
      echo "set grid"
      (IFS=,; echo "plot ${SERIES[*]}")
    } >"$SCRATCH/plot.gp"
    gnuplot "$SCRATCH/plot.gp" 2>>"$LOG" || PLOT_NOTE="(gnuplot failed: no plot)"
  fi
else
  PLOT_NOTE="(gnuplot is not installed: no plot)"
fi

machine_info
VERSION=$("$BIN" --version 2>/dev/null || echo "?")
SHOWN="make bench-scale"
((QUICK)) && SHOWN="make bench-scale-quick"

mkdir -p "$(dirname "$OUT_MD")"
{
  echo "# libredlock: cost in the number of locks and waiters (issue 24, item 6)"
  echo
  echo "\`$SHOWN\` (\`bench/scale.sh$([[ $MODE == quick ]] && echo ' --quick')\`), $DATE, $((SECONDS - START)) s."
  echo "Library at git $REV${LOOSE:+ with uncommitted changes in $LOOSE}; $VERSION; redis-server $REDIS_V;"
  echo "5 local redis-server masters started for the run (flushed between runs), default library options."
  echo "Machine: $(nproc) cores ($CPU), shared by the client, the 5 servers and other users"
  echo "(another engineer builds and runs tests on it); load average $LOAD_BEFORE before, $LOAD_AFTER after."
  echo "Plot: $(basename "$OUT_PNG") $PLOT_NOTE"
  if [[ -n $NOTE ]]; then
    echo
    echo "$NOTE"
  fi
  echo
  echo "## Targets (doc/design.md, Cost flat in locks and waiters)"
  echo
  cat "$TARGETS"
  echo
  echo "## 1. One more lock while many are held"
  echo
  echo "One \`redlock_t\`; 16 threads take distinct resources (TTL 600 s, one attempt each; reentrancy on, the"
  echo "default) in slices of 10 000 until the handle holds each count; then the main thread, holding nothing"
  echo "itself, runs $PROBES acquire + release cycles (\`wait_ms\` 0) of one other resource. Each step from one"
  echo "count to the next is bounded by $BOUND s: past it the taking stops and the count is \"not reached\"."
  echo
  cat "$HELD_TABLE"
  echo
  echo "Time per lock in each slice (wall time of the slice / its locks, 16 threads; flat = a linear total,"
  echo "growing = quadratic), and the same for releasing them all afterwards (16 threads, in the same slices):"
  echo
  cat "$SLICE_TABLE"
  echo
  echo "## 2. Handoff with many waiters"
  echo
  echo "A holder handle takes N resources (TTL 600 s); a waiter handle asks for each with \`wait_ms\` -1 (an"
  echo "acquire that ends \`TAKEN\` after its \`retry_count\` retries is asked again at once). Once the waiter's"
  echo "stats count N waits, $SAMPLES times: the holder releases one resource (a different one each time when"
  echo "N > 1); the handoff is the time from just before the release call to the waiter's grant for that"
  echo "resource. The waiter gives it back, the holder retakes it and the waiter asks again, so N stay waiting;"
  echo "50 ms between samples. Async: two \`redlock_async_t\` on one libuv loop (one thread). Blocking: a holder"
  echo "\`redlock_t\` and one waiter \`redlock_t\` shared by N threads, one per resource (256 KiB stacks; up to"
  echo "10 000 threads in the full mode). Waiter rounds/s: the rounds the"
  echo "waiter handle sent per second during the samples (its fallback polls: \`retry_delay_ms\` 200 ms apart per"
  echo "waiter); process CPU over the same time. Each run is bounded by $DEADLINE s."
  echo
  cat "$HAND_TABLE"
  echo
  echo "## 3. Auto-extended locks"
  echo
  echo "One \`redlock_t\`; 16 threads take K resources (TTL $TTL ms) and call \`redlock_autoextend\` with the default"
  echo "options (every TTL / 3 = 3 333 ms) on each right after its acquire. Once every lock has been extended once,"
  echo "a window of $WINDOW s: process CPU (getrusage, minus the sampling thread's own) per second of wall time, and"
  echo "every 100 ms each lock's \`redlock_lock_validity_ms\`. An extension on time never lets validity fall below"
  echo "due = TTL − drift − interval = 10 000 − 102 − 3 333 = 6 565 ms (65.6 % of TTL); lateness = due − the least"
  echo "validity seen (0 when it never fell below), reported in ms and % of the TTL. Sampling every 100 ms can miss"
  echo "up to 100 ms (1 % of the TTL) of a lateness, plus one sweep of the locks."
  echo
  cat "$EXT_TABLE"
  echo
  echo "## 4. Memory per held lock and per pending acquire"
  echo
  echo "Heap in use (mallinfo2: uordblks + hblkhd, every arena) and RSS (VmRSS) of the process before and after"
  echo "taking the locks of section 1 (the most held), and before and after the $(grouped "$BIG_WAIT") pending acquires of"
  echo "section 2 (read 200 ms after the waiter counted them all waiting, the holder's locks already taken); divided by"
  echo "the count. The name is the resource name with its NUL. The pending figure includes the waiter handle's"
  echo "subscriber connections (opened by its first wait), a fixed cost spread over the count. The 200 ms let the"
  echo "burst that asked for them all leave the connections' buffers, which give back what a burst grew them by."
  echo
  cat "$MEM_TABLE"
  if [[ -n $(A heap_per_pending_burst) && $(A phase) -ge 3 ]]; then
    echo
    echo "Read at the moment the waiter counted them all, during that burst: $(awk -v v="$(A heap_per_pending_burst)" 'BEGIN { printf "%.0f B", v }') of heap per pending acquire."
  fi
} >"$OUT_MD"

echo
cat "$TARGETS"
echo
cat "$HELD_TABLE"
echo
cat "$HAND_TABLE"
echo
cat "$EXT_TABLE"
echo
echo "Report: $OUT_MD"

#!/usr/bin/env bash
# handoff.sh [--quick] [--label NAME] [--note TEXT] -- waiting for a taken lock (issue 14,
# item 7), everything with DEFAULT options, on a 5-node cluster of its own
# (deploy/cluster.sh; always stopped at the end, also on Ctrl-C):
#
#   shared  bench_handoff -w contend: 8 threads sharing one redlock_t contend
#           for ONE resource; each holds it 5 ms, releases, works 5 ms
#   each    the same with one redlock_t per thread (as 8 processes would)
#   node    bench/node/bench_handoff.js: node-redlock, 8 async tasks sharing
#           one Redlock ("n/a" when npm cannot install it)
#   idle    bench_handoff -w idle: 64 waiters on a lock a separate handle
#           holds, on one redlock_t and on 64 of them: commands per second
#           the nodes process
#
# Full mode: shared, node and each interleaved, REPS (3) runs of 6 s each
# (percentiles over the handoffs of all runs, busy and fairness the median
# run), idle windows of 20 s; about 2 minutes. It writes the section NAME
# (--label, default "latest") of bench/RESULTS-handoff.md -- other sections
# stay as they are, so a "before" and an "after" can stand side by side --,
# the section's handoff CDFs to bench/handoff-cdf/, and bench/handoff.png,
# which draws the CDFs of every section. --note TEXT: a paragraph for the
# section (what was measured, what to read in it). --quick (about 20 s): one run of
# 3 s each, idle windows of 2 s, files in $BENCH_BUILD/bench only.
#
# Environment: BENCH_BUILD (default build-bench), the CMake build directory
# configured with -DREDLOCK_BUILD_BENCH=ON (`make bench-handoff` does it all).
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
export LC_ALL=C

BIN=$BUILD/bench/bench_handoff
bench_args handoff.sh "quick label note" -- "$@"
SLUG=$(tr '[:upper:]' '[:lower:]' <<<"$LABEL" | sed 's/[^a-z0-9]\{1,\}/-/g; s/^-//; s/-$//')
[[ -n $SLUG ]] || { echo "handoff.sh: --label needs a name with a letter or digit" >&2; exit 2; }

THREADS=8 WAITERS=64 HOLD_MS=5 WORK_MS=5
if ((QUICK)); then
  MODE=quick REPS=1 SECS=3 IDLE_SECS=2 SETTLE=0.5
  OUT_DIR=$BUILD/bench OUT_MD=$BUILD/bench/RESULTS-handoff-quick.md OUT_PNG=$BUILD/bench/handoff-quick.png
  CDF_DIR=$BUILD/bench/handoff-quick-cdf
else
  MODE=full REPS=3 SECS=6 IDLE_SECS=20 SETTLE=1
  OUT_DIR=$ROOT/bench OUT_MD=$ROOT/bench/RESULTS-handoff.md OUT_PNG=$ROOT/bench/handoff.png
  CDF_DIR=$ROOT/bench/handoff-cdf
fi

[[ -x $BIN ]] || fail "$BIN is not built (run: make bench-handoff)"
command -v redis-server >/dev/null || fail "redis-server is not installed"

bench_scratch handoff
LINES=$SCRATCH/results.txt # "TAG RESULT impl=..." per run
: >"$LINES"
TROUBLE=()

# measure TAG SECONDS_ALLOWED CMD...: one run; its RESULT line goes to
# $LINES under TAG, its table to stderr; a run without a RESULT line or with
# a non-zero exit is listed in TROUBLE.
measure() {
  local tag=$1 allowed=$2 out status=0 result
  shift 2
  # --foreground: the run stays in our process group, so Ctrl-C reaches it
  out=$(timeout --foreground -k 5 "$allowed" "$@" 2>>"$LOG") || status=$?
  # bash goes on after a child that took Ctrl-C and exited: stop here then
  if ((status == 130 || status == 143)); then exit "$status"; fi
  result=$(grep '^RESULT ' <<<"$out" | tail -n 1 || true)
  grep -v '^RESULT ' <<<"$out" | sed 's/^/        /' >&2 || true
  if [[ -z $result ]]; then
    TROUBLE+=("$tag: no result (exit $status)")
    note "$tag: no result (exit $status)"
    return 0
  fi
  ((status == 0)) || TROUBLE+=("$tag: exit status $status")
  echo "$tag $result" >>"$LINES"
}

# values TAG KEY: KEY's value in each of TAG's runs, one a line.
values() {
  awk -v tag="$1" -v key="$2=" '$1 == tag { for (i = 3; i <= NF; i++) if (index($i, key) == 1) print substr($i, length(key) + 1) }' "$LINES"
}
# mid TAG KEY / lowest TAG KEY / highest TAG KEY / total TAG KEY: the
# median, least, largest and sum of KEY over TAG's runs ("" without runs)
mid() { values "$1" "$2" | median; }
lowest() { values "$1" "$2" | least; }
highest() { values "$1" "$2" | most; }
total() { values "$1" "$2" | awk '{ s += $1 } END { if (NR) print s }'; }

# pooled TAG Q: the Q-quantile (nearest rank) of the handoffs of all of
# TAG's runs, in µs; Q 1 is the largest.
pooled() { cat "$SCRATCH/$1".*.us 2>/dev/null | quantile "$2"; }

# ------------------------------------------------------------ the runs

node_redlock_setup bench_handoff.js
((NODE_OK)) || note "node-redlock is not available: its rows will be n/a"

cluster_up
note "$MODE mode, label '$LABEL'; 5 nodes up: $NODES"

LIMIT=$(awk -v s="$SECS" 'BEGIN { printf "%d", s + 60 }')
for ((rep = 1; rep <= REPS; rep++)); do
  note "contention, run $rep/$REPS: libredlock, $THREADS threads on one redlock_t"
  measure shared "$LIMIT" "$BIN" -u "$NODES" -w contend -t "$THREADS" -d "$SECS" --hold-ms "$HOLD_MS" --work-ms "$WORK_MS" \
    --handles one --samples "$SCRATCH/shared.$rep.us"
  if ((NODE_OK)); then
    note "contention, run $rep/$REPS: node-redlock, $THREADS async tasks on one Redlock"
    measure node "$LIMIT" node "$NODE_DIR/bench_handoff.js" -u "$NODES" -t "$THREADS" -d "$SECS" --hold-ms "$HOLD_MS" \
      --work-ms "$WORK_MS" --samples "$SCRATCH/node.$rep.us"
  fi
  note "contention, run $rep/$REPS: libredlock, $THREADS threads, one redlock_t each"
  measure each "$LIMIT" "$BIN" -u "$NODES" -w contend -t "$THREADS" -d "$SECS" --hold-ms "$HOLD_MS" --work-ms "$WORK_MS" \
    --handles each --samples "$SCRATCH/each.$rep.us"
done
for handles in one each; do
  note "idle: $WAITERS waiters, handles: $handles"
  measure "idle-$handles" "$LIMIT" "$BIN" -u "$NODES" -w idle -t "$WAITERS" -d "$IDLE_SECS" --settle "$SETTLE" --handles "$handles" --retry-count 1000000
done
cluster_down
ELAPSED=$((SECONDS - START))

# ------------------------------------------------------------ the tables

declare -A WHO=(
  [shared]="libredlock, $THREADS threads, one redlock_t"
  [each]="libredlock, $THREADS threads, one redlock_t each"
  [node]="node-redlock, $THREADS async tasks, one Redlock"
)
CONTENDERS="shared each node"

CONTEND_MD=$SCRATCH/contend.md
{
  echo "| contender | handoffs | p50 µs | p90 µs | p99 µs | max µs | busy % (grants × $HOLD_MS ms) | held % (measured) | grants | least-served thread / mean | handoffs back to the releaser % |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
  for c in $CONTENDERS; do
    if [[ -z $(values "$c" grants) ]]; then
      echo "| ${WHO[$c]} | n/a | | | | | | | | | |"
      continue
    fi
    fair=$(dec "$(mid "$c" min_over_mean)" 2)
    ((REPS == 1)) || fair="$fair ($(dec "$(lowest "$c" min_over_mean)" 2)–$(dec "$(highest "$c" min_over_mean)" 2))"
    printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "${WHO[$c]}" "$(total "$c" handoffs)" \
      "$(dec "$(pooled "$c" 0.5)" 0)" "$(dec "$(pooled "$c" 0.9)" 0)" "$(dec "$(pooled "$c" 0.99)" 0)" "$(dec "$(pooled "$c" 1)" 0)" \
      "$(dec "$(mid "$c" busy_pct)" 1)" "$(dec "$(mid "$c" held_pct)" 1)" "$(total "$c" grants)" "$fair" \
      "$(dec "$(mid "$c" back_to_releaser_pct)" 0)"
  done
} >"$CONTEND_MD"

IDLE_MD=$SCRATCH/idle.md
{
  echo "| $WAITERS idle waiters on | requests per waiter per fallback interval, each node | rounds/s (all waiters) | commands/s per node, script-internal included (mean; max) | the same per waiter per interval, busiest node | commands/s per node by kind | acquires refused after retry_count, called again |"
  echo "|---|---:|---:|---:|---:|---|---:|"
  for handles in one each; do
    t=idle-$handles
    what="one redlock_t"
    [[ $handles == one ]] || what="$WAITERS redlock_t, one each"
    if [[ -z $(values "$t" cmds_per_s_mean) ]]; then
      echo "| $what | n/a | | | | | |"
      continue
    fi
    kinds=$(awk -v tag="$t" '$1 == tag { for (i = 3; i <= NF; i++) if ($i ~ /^cmds_[a-z]+=/ && $i !~ /^cmds_per_s/) {
      split(substr($i, 6), kv, "="); printf "%s%s %.1f", sep, toupper(kv[1]), kv[2]; sep = ", " } }' "$LINES")
    printf '| %s | %s | %s | %s; %s | %s | %s | %s |\n' "$what" "$(dec "$(mid "$t" requests_per_waiter_per_interval)" 3)" \
      "$(dec "$(mid "$t" rounds_per_s)" 1)" "$(dec "$(mid "$t" cmds_per_s_mean)" 1)" \
      "$(dec "$(mid "$t" cmds_per_s_max)" 1)" "$(dec "$(mid "$t" per_waiter_per_interval_max)" 3)" \
      "$kinds" "$(total "$t" taken_recalls)"
  done
} >"$IDLE_MD"

# The targets (bench/targets.tsv), each also a row of the summary of `make bench`.
node_p50=$(pooled node 0.5) node_p99=$(pooled node 0.99)
node_busy=$(mid node busy_pct) node_fair=$(mid node min_over_mean)
for c in shared each; do
  p50=$(pooled "$c" 0.5) p99=$(pooled "$c" 0.99) busy=$(mid "$c" busy_pct) fair=$(mid "$c" min_over_mean)
  r=$(ratio "$node_p50" "$p50" 3)
  w="${WHO[$c]#libredlock, }"
  target "${c}_p50" "$p50" "$(fig "$p50" 0 " µs")" "$w: handoff p50" "$(fig "$p50" 0 " µs")" "$(fig "$node_p50" 0 " µs")"
  target "${c}_p99" "$p99" "$(fig "$p99" 0 " µs")" "$w: handoff p99" "$(fig "$p99" 0 " µs")" "$(fig "$node_p99" 0 " µs")"
  target "${c}_busy" "$busy" "$(fig "$busy" 1 " %")" "$w: lock busy" "$(fig "$busy" 1 " %")" "$(fig "$node_busy" 1 " %")"
  target "${c}_fair" "$fair" "$(fig "$fair" 2)" "$w: least-served thread / mean grants" "$(fig "$fair" 2)" "$(fig "$node_fair" 2)"
  target "${c}_node" "$r" "${r:+$(dec "$r" 2) × ($(dec "$node_p50" 0) µs)}" "$w: handoff p50 against node-redlock's" \
    "$(fig "$p50" 0 " µs")" "$(fig "$node_p50" 0 " µs")${r:+ ($(dec "$r" 2) × ours)}"
done
for handles in one each; do
  v=$(mid "idle-$handles" requests_per_waiter_per_interval)
  what="one redlock_t"
  [[ $handles == one ]] || what="one redlock_t each"
  target "idle_$handles" "$v" "$(fig "$v" 3)" "$WAITERS idle waiters, $what: requests per waiter per fallback interval per node" \
    "$(fig "$v" 3)"
done

TARGETS_MD=$SCRATCH/targets.md
targets_table "target (issue 14)" >"$TARGETS_MD"

# ------------------------------------------------------------ the CDFs and the plot

# The section's curves: at most ~500 points of each contender's CDF (all
# runs' handoffs), "µs fraction", the first line naming them.
mkdir -p "$CDF_DIR"
rm -f "$CDF_DIR/$SLUG".*.tsv
for c in $CONTENDERS; do
  ls "$SCRATCH/$c".*.us >/dev/null 2>&1 || continue
  {
    echo "# $LABEL: ${WHO[$c]}"
    cat "$SCRATCH/$c".*.us | sort -g | awk '{ v[NR] = $1 } END {
      step = int((NR + 499) / 500); if (step < 1) step = 1
      for (i = 1; i <= NR; i++) if (i % step == 0 || i == 1 || i == NR) printf "%s %.5f\n", v[i], i / NR }'
  } >"$CDF_DIR/$SLUG.$c.tsv"
done

PLOT_NOTE="(no plot: gnuplot is missing; make bench-deps installs gnuplot-nox)"
if command -v gnuplot >/dev/null && ls "$CDF_DIR"/*.tsv >/dev/null 2>&1; then
  declare -A COLOR=([shared]="#1f77b4" [each]="#2ca02c" [node]="#ff7f0e")
  curves=() dash=0 last_slug=""
  for f in "$CDF_DIR"/*.tsv; do
    base=$(basename "$f" .tsv)
    s=${base%.*} c=${base##*.}
    [[ $s == "$last_slug" ]] || { dash=$((dash + 1)); last_slug=$s; }
    title=$(head -n 1 "$f" | sed 's/^# //; s/"/'"'"'/g')
    curves+=("\"$f\" using 1:2 with steps lw 2 dt $dash lc rgb \"${COLOR[$c]:-#7f7f7f}\" title \"$title\"")
  done
  {
    echo "set terminal pngcairo size 1200,820 font \"DejaVu Sans,11\""
    echo "set output \"$OUT_PNG\""
    echo "set termoption noenhanced" # names with _ stay as they are
    echo "set rmargin 6"
    echo "set format x \"%.0f\""
    echo "set title \"Handoff: a release made while others wait → the next grant ($THREADS contenders, one resource, 5 local nodes, default options)\""
    echo "set xlabel \"µs (log scale)\""
    echo "set ylabel \"fraction of handoffs ≤ x\""
    echo "set logscale x"
    echo "set yrange [0:1]"
    echo "set grid xtics mxtics ytics lc rgb \"#dddddd\""
    echo "set key below"
    echo "set arrow from 1000, graph 0 to 1000, graph 1 nohead dt 3 lc rgb \"#d62728\""
    echo "set label \"target p50 ≤ 1 ms\" at 1000, graph 0.96 offset 0.5,0 tc rgb \"#d62728\""
    echo "plot \\"
    for ((i = 0; i < ${#curves[@]}; i++)); do
      more=", \\"
      ((i + 1 < ${#curves[@]})) || more=""
      printf '     %s%s\n' "${curves[i]}" "$more"
    done
  } >"$SCRATCH/cdf.gp"
  if gnuplot "$SCRATCH/cdf.gp" 2>>"$LOG"; then
    PLOT_NOTE="![handoff latency CDFs of every section]($(basename "$OUT_PNG"))"
  else
    PLOT_NOTE="(gnuplot failed: no plot)"
  fi
fi

# ------------------------------------------------------------ the report

machine_info
STAMP=$(bench_stamp)
[[ -z $LOOSE ]] || REV="$REV + uncommitted changes in $LOOSE"

SECTION=$SCRATCH/section.md
{
  echo "<!-- handoff.sh: section $SLUG -->"
  echo "## $LABEL"
  echo
  echo "\`bench/handoff.sh$( ((QUICK)) && echo " --quick") --label '$LABEL'\`, $DATE, ${ELAPSED} s. Library at git $REV; $("$BIN" --version); node $(node --version 2>/dev/null || echo n/a), $NODE_VERSIONS; redis-server $REDIS_V."
  echo "Machine: $(nproc) cores (${CPU:-?}), shared by the client and the 5 redis-server processes; load average $LOAD_BEFORE before, $LOAD_AFTER after."
  if [[ -n $NOTE ]]; then
    echo
    echo "$NOTE"
  fi
  echo
  echo "### $THREADS contenders, one resource: each holds it $HOLD_MS ms, then works $WORK_MS ms"
  echo
  echo "$REPS run(s) of $SECS s per contender, interleaved. Percentiles over the handoffs of all runs; busy, held and fairness: the median run (range in brackets)."
  echo
  cat "$CONTEND_MD"
  echo
  echo "### Idle waiters: commands the nodes process"
  echo
  echo "A separate redlock_t holds the lock for the whole run; after ${SETTLE} s the nodes' INFO counters are read, and again after ${IDLE_SECS} s. Each waiter is one acquire call that waits without bound (retry_count raised to 1000000; with the default 3 a call gives up after 3 polls and is called again, one more immediate attempt each time). The target is judged on the requests the nodes receive: the waiters' rounds (redlock_stats), each one request to every node. The INFO columns count commands too, where those a script runs inside Redis count (an EVALSHA that calls SET and PTTL is 3). Fallback interval: retry_delay_ms, 200 ms by default."
  echo
  cat "$IDLE_MD"
  echo
  echo "### Targets"
  echo
  cat "$TARGETS_MD"
  if ((${#TROUBLE[@]})); then
    echo
    echo "Runs that did not end cleanly:"
    echo
    printf -- '- %s\n' "${TROUBLE[@]}"
  fi
  echo
  raw_details "$LINES" "the RESULT lines of this section"
  echo "<!-- handoff.sh: end $SLUG -->"
} >"$SECTION"

# The file: a fixed head, then the sections in their order, this one
# replaced where it was or appended.
mkdir -p "$OUT_DIR"
OLD_SECTIONS=$SCRATCH/sections.md
: >"$OLD_SECTIONS"
if [[ -f $OUT_MD ]]; then
  awk -v mine="<!-- handoff.sh: section $SLUG -->" -v file="$SECTION" '
    /^<!-- handoff.sh: section / { inside = 1; print ""; if ($0 == mine) { while ((getline l < file) > 0) print l; done = 1; skip = 1 } }
    inside && !skip { print }
    /^<!-- handoff.sh: end / { inside = 0; skip = 0 }
    END { if (!done) { print ""; while ((getline l < file) > 0) print l } }' "$OUT_MD" >"$OLD_SECTIONS"
else
  { echo; cat "$SECTION"; } >"$OLD_SECTIONS"
fi
{
  echo "# libredlock: waiting for a taken lock (handoff benchmark, issue 14 item 7)"
  echo
  echo "Last written by \`bench/handoff.sh$( ((QUICK)) && echo " --quick")\` (section '$LABEL') $STAMP; each section below names"
  echo "the commit and the date that made it."
  echo
  echo "Made by \`make bench-handoff\` (\`bench/handoff.sh --label NAME\`): each run rewrites its own section and keeps the others, so"
  echo "the polling baseline and later runs stand side by side. All options are the defaults (redlock_options_init with only the"
  echo "nodes set; node-redlock: \`new Redlock(clients)\`), TTL 10 s, 5 local redis-server masters started for the run."
  echo
  echo "- **handoff**: from a release made while another contender was waiting (inside acquire) to the next grant. The release time is"
  echo "  read just before the release call, on one monotonic clock; the next grant's time as its acquire returns. Releases with nobody"
  echo "  waiting give no sample. An acquire that ends REDLOCK_ERR_TAKEN after retry_count (3) retries is called again at once (the"
  echo "  contender still waits); node-redlock's ExecutionError after its 10 retries likewise."
  echo "- **busy**: grants × hold time (5 ms) ÷ run time; **held**: the measured time from grant to release call ÷ run time."
  echo "- **fairness**: the grants of the least-served contender ÷ the mean; and the share of handoffs that went back to the"
  echo "  contender that made the release (it comes back after its 5 ms of work)."
  echo "- node-redlock runs as 8 async tasks sharing one Redlock in one node process (its usual shape; waiting is timers and sockets,"
  echo "  so one event loop does not slow them): compare it with the first row, one redlock_t shared by 8 threads."
  echo
  echo "$PLOT_NOTE"
  cat "$OLD_SECTIONS"
} >"$OUT_MD.tmp"
mv "$OUT_MD.tmp" "$OUT_MD"

echo
echo "handoff benchmark, $MODE mode, label '$LABEL' ($DATE, ${ELAPSED} s)"
echo
cat "$CONTEND_MD"
echo
cat "$IDLE_MD"
echo
cat "$TARGETS_MD"
((${#TROUBLE[@]} == 0)) || printf 'trouble: %s\n' "${TROUBLE[@]}"
echo
echo "Report: $OUT_MD (section '$SLUG')"
echo "Plot:   $OUT_PNG"

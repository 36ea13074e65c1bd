#!/usr/bin/env bash
# all.sh [--quick] [--only NAME,...] -- every benchmark of bench/ in one
# sitting, at one commit, on one machine (issue 26, item 1): the suites of
# SUITES below one after another, each in its full mode, each starting and
# stopping its own local redis-server masters with deploy/cluster.sh; then
# bench/RESULTS.md, assembled from what they wrote in this run:
#
#   - a header: date, commit (and whether the tree was as committed),
#     machine, versions, load average before and after, total duration;
#   - one summary table: a row per headline workload or target of every
#     suite (libredlock, node-redlock where the suite has an equivalent,
#     the floor or the baseline the target compares with, the target, PASS
#     or FAIL), from the rows each suite wrote to $BENCH_SUMMARY;
#   - a section per suite: its duration and exit status, a link to its own
#     result file (bench/RESULTS-NAME.md) and that file's content.
# The suites redraw their plots (bench/*.png) in the same run.
#
# A suite that fails does not stop the others: its rows say ERROR with the
# reason, and all.sh exits 1 once the report is written (a target missed is
# a FAIL in the table, not a failure to run). Ctrl-C stops the suite running
# (it stops its own servers) and all.sh, without writing the report.
#
# --quick: every suite in its quick mode; their files and the report
# (RESULTS-quick.md) go to $BENCH_BUILD/bench, never over bench/*.md.
# --only NAME,...: only those suites (with --quick only: a full report
# always has every suite). Logs of each suite: $BENCH_BUILD/bench/all-logs/
# (all-quick-logs/ for --quick).
#
# all.sh --one NAME [--quick] [-- ARGS...]: the suite NAME alone, as
# `make bench-NAME` (and -quick) run it: its script with its full-mode
# arguments below (or --quick), then ARGS; it writes its own result file
# only (not bench/RESULTS.md) and all.sh exits with its status.
#
# Environment: BENCH_BUILD (default build-bench), the CMake build directory
# configured with -DREDLOCK_BUILD_BENCH=ON, every program of its target
# bench_all built (`make bench` and `make bench-quick` do it all).
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
export LC_ALL=C

# ------------------------------------------------------------ the suites
#
# One line a suite, run in this order:
#   NAME | SCRIPT (in bench/) | full-mode arguments | RESULT FILE (in bench/) |
#   PLOTS (in bench/, space-separated) | SECTION | TITLE
# Quick mode runs SCRIPT --quick, which writes RESULT FILE and PLOTS with
# "-quick" before the extension into $BENCH_BUILD/bench. SECTION: for a
# result file that keeps sections of older runs, the marker of the one this
# run writes ("handoff.sh: section latest" for the lines between
# "<!-- handoff.sh: section latest -->" and "<!-- handoff.sh: end latest -->");
# the report takes that section and what stands outside every section.
#
# To add a suite:
#   1. its script bench/NAME.sh sources bench/lib.sh, takes --quick and
#      --note TEXT (bench_args), writes
#      bench/RESULTS-NAME.md in full mode (its first lines naming the commit
#      and the date: `bench_stamp`, or machine_info's REV and DATE) and
#      RESULTS-NAME-quick.md into $BUILD/bench with --quick, and exits
#      non-zero only when it could not run;
#   2. its targets as rows of bench/targets.tsv, judged with `target ID
#      VALUE SHOWN WORKLOAD LIBREDLOCK NODE BASELINE` and printed with
#      `targets_table` (bench/lib.sh), which also makes them rows of the
#      summary; a headline workload without a target is a row of it with
#      `summary WORKLOAD LIBREDLOCK NODE BASELINE "" ""`; both write no
#      summary row when the script runs on its own;
#   3. a line below (the fields as above): `make bench-NAME` and
#      `make bench-NAME-quick` come from it (the Makefile reads this list);
#   4. its program in the bench_all list at the end of bench/CMakeLists.txt.
SUITES=(
  "core|core.sh||RESULTS-core.md|latency.png||Core: floor, libredlock and node-redlock (issue 4)"
  "async|async.sh||RESULTS-async.md|async.png||Non-blocking API on one libuv loop thread (issue 13)"
  "handoff|handoff.sh|--label latest|RESULTS-handoff.md|handoff.png|handoff.sh: section latest|Waiting for a taken lock (issue 14)"
  "degraded|degraded.sh||RESULTS-degraded.md|degraded.png||A minority of the nodes failing (issue 23)"
  "kinds|kinds.sh||RESULTS-kinds.md|||Semaphores and read-write locks against a mutex (issue 15)"
  "scale|scale.sh||RESULTS-scale.md|scale.png||Many locks and many waiters (issue 24)"
  "cluster|cluster.sh||RESULTS-cluster.md|||Redis Cluster nodes against plain nodes (issue 25)"
  "fence|fence.sh||RESULTS-fence.md|||Fencing tokens: plain and fenced acquire (issue 26)"
  "replicated|replicated.sh||RESULTS-replicated.md|||Votes counted after replication on Sentinel groups (issue 32)"
  "hosts|hosts.sh||RESULTS-hosts.md|||One node's host name unresolvable (issue 12)"
  "membership|membership.sh||RESULTS-membership.md|||Changing the node set: a joint handle against a plain one"
  "lockdelay|lockdelay.sh||RESULTS-lockdelay.md|||Lock-delay: acquire + release with and without (issue 42)"
)

# ------------------------------------------------------------ the command line

QUICK=0
ONLY=""
ONE=""
EXTRA=()
while (($#)); do
  case $1 in
    --quick) QUICK=1 ;;
    --only) ONLY=${2:-}; shift ;;
    --one) ONE=${2:-}; shift ;;
    --) shift; EXTRA=("$@"); break ;;
    -h|--help) sed -n '2,/^set -euo pipefail/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "all.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
  shift
done
if [[ -n $ONE ]]; then
  for s in "${SUITES[@]}"; do
    IFS='|' read -r name script fargs _ <<<"$s"
    [[ $name == "$ONE" ]] || continue
    if ((QUICK)); then args=(--quick); else read -r -a args <<<"$fargs"; fi
    cd "$ROOT" && exec "$ROOT/bench/$script" "${args[@]}" "${EXTRA[@]}"
  done
  echo "all.sh: no suite '$ONE' (the suites: $(printf '%s\n' "${SUITES[@]}" | cut -d'|' -f1 | paste -sd' ' -))" >&2
  exit 2
fi
((${#EXTRA[@]} == 0)) || { echo "all.sh: arguments after -- go with --one" >&2; exit 2; }
if [[ -n $ONLY ]] && ((!QUICK)); then
  echo "all.sh: --only goes with --quick (a full report has every suite; make bench-NAME runs one)" >&2
  exit 2
fi
for want in ${ONLY//,/ }; do
  found=0
  for s in "${SUITES[@]}"; do [[ ${s%%|*} == "$want" ]] && found=1; done
  ((found)) || { echo "all.sh: no suite '$want' (the suites: $(printf '%s\n' "${SUITES[@]}" | cut -d'|' -f1 | paste -sd' ' -))" >&2; exit 2; }
done

if ((QUICK)); then
  MODE=quick OUT_DIR=$BUILD/bench OUT_MD=$BUILD/bench/RESULTS-quick.md LOG_DIR=$BUILD/bench/all-quick-logs
  SUITE_LIMIT=1800
else
  MODE=full OUT_DIR=$ROOT/bench OUT_MD=$ROOT/bench/RESULTS.md LOG_DIR=$BUILD/bench/all-logs
  SUITE_LIMIT=7200
fi
# quick NAME: NAME as the quick mode writes it (RESULTS-x.md -> RESULTS-x-quick.md)
quick_name() { if ((QUICK)); then echo "${1%.*}-quick.${1##*.}"; else echo "$1"; fi; }

[[ -x $BUILD/bench/bench_redlock ]] || fail "the benchmarks are not built in $BUILD (run: make bench)"
mkdir -p "$OUT_DIR" "$LOG_DIR"
WORK=$(mktemp -d /tmp/redlock-bench-all.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ------------------------------------------------------------ before

STARTED=$(date -u '+%Y-%m-%d %H:%M:%S UTC')
T0=$SECONDS
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
REV=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo "?")
# every file not as committed (untracked ones too, ignored ones not), before
# the suites rewrite their result files
git -C "$ROOT" status --porcelain 2>/dev/null | awk '{ print $NF }' >"$WORK/dirty" || true
note "$MODE mode at git $REV; logs in $LOG_DIR"

# ------------------------------------------------------------ the runs

# run_suite LINE: runs one suite; leaves NAME.rc, NAME.secs, NAME.why and
# NAME.summary.tsv in $WORK. Its stderr is shown (prefixed) and kept in
# LOG_DIR/NAME.err, its stdout in LOG_DIR/NAME.out.
run_suite() {
  local name script fargs md plots section title args=() rc t why="" f
  IFS='|' read -r name script fargs md plots section title <<<"$1"
  if ((QUICK)); then args=(--quick); else read -r -a args <<<"$fargs"; fi
  : >"$WORK/$name.summary.tsv"
  note "suite $name: bench/$script ${args[*]}"
  touch "$WORK/$name.start"
  t=$SECONDS
  set +e
  # tee and sed ignore Ctrl-C: the suite stops on it, and may still say why
  (cd "$ROOT" && BENCH_SUITE=$name BENCH_SUMMARY=$WORK/$name.summary.tsv BENCH_BUILD=$BUILD \
    timeout --foreground -k 60 "$SUITE_LIMIT" "$ROOT/bench/$script" "${args[@]}") 2>&1 >"$LOG_DIR/$name.out" |
    (trap '' INT TERM; exec tee "$LOG_DIR/$name.err") | (trap '' INT TERM; exec sed -u "s/^/  $name | /") >&2
  rc=${PIPESTATUS[0]}
  set -e
  echo $((SECONDS - t)) >"$WORK/$name.secs"
  if ((rc == 130 || rc == 143)); then
    note "suite $name interrupted: stopping (no report written)"
    exit "$rc"
  fi
  f=$OUT_DIR/$(quick_name "$md")
  if ((rc == 124)); then
    why="did not end within $SUITE_LIMIT s (stopped)"
  elif ((rc != 0)); then
    # the reason: its last line that says one, else its last line
    why=$(grep -i 'error\|fail\|cannot\|could not\|not built\|not installed\|unknown' "$LOG_DIR/$name.err" | tail -n 1 || true)
    [[ -n $why ]] || why=$(grep -v '^ *$' "$LOG_DIR/$name.err" | tail -n 1 || true)
    why="exit status $rc: $(sed 's/^\[ *[0-9]*s\] //; s/^ *//' <<<"${why:-(nothing on stderr)}" | cut -c1-200)"
  fi
  if [[ -z $why && ( ! -f $f || $f -ot $WORK/$name.start ) ]]; then
    why="exit status 0, but $(basename "$f") was not written"
    rc=1
  fi
  echo "$rc" >"$WORK/$name.rc"
  echo "$why" >"$WORK/$name.why"
  note "suite $name: $( ((rc == 0)) && echo "done" || echo "FAILED ($why)") in $(cat "$WORK/$name.secs") s, $(wc -l <"$WORK/$name.summary.tsv") summary rows"
}

RAN=()
for s in "${SUITES[@]}"; do
  name=${s%%|*}
  if [[ -n $ONLY && ",$ONLY," != *",$name,"* ]]; then continue; fi
  RAN+=("$s")
  run_suite "$s"
done

# ------------------------------------------------------------ after

TOTAL=$((SECONDS - T0))
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)
ENDED=$(date -u '+%Y-%m-%d %H:%M:%S UTC')
CPU=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
MEM_TOTAL=$(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)
OS_NAME=$(sed -n 's/^PRETTY_NAME=//p' /etc/os-release 2>/dev/null | tr -d '"')
VIRT=$(systemd-detect-virt 2>/dev/null || true)
[[ $VIRT != none ]] || VIRT=""
REDIS_V=$(redis-server --version | sed -n 's/.* v=\([^ ]*\).*/\1/p')
HIREDIS_V=$(pkg-config --modversion hiredis 2>/dev/null || echo "?")
LIB_V=$("$BUILD/bench/bench_redlock" --version 2>/dev/null || echo "?")
NODE_V=$(node --version 2>/dev/null || echo "n/a")
NODE_REDLOCK_V=$(cd "$NODE_DIR" && timeout 30 node bench.js --version 2>/dev/null || echo "n/a")
GNUPLOT_V=$(gnuplot --version 2>/dev/null || echo "no gnuplot: no plots")
DIRTY=$(grep -c . "$WORK/dirty" || true)
if ((DIRTY == 0)); then
  TREE="the tree as committed"
else
  TREE="$DIRTY file(s) not as committed before the run: $(head -n 12 "$WORK/dirty" | paste -sd' ' -)"
  ((DIRTY <= 12)) || TREE+=" …"
fi

# esc TEXT: TEXT fit for a table cell
esc() { printf '%s\n' "${1//|/\\|}"; }

# The summary table, and the counts.
PASS=0 FAILED=0 NA=0 ERRORS=0
SUMMARY_MD=$WORK/summary.md
{
  echo "| suite | workload | libredlock | node-redlock | floor / baseline | target | verdict |"
  echo "|---|---|---|---|---|---|---|"
  for s in "${RAN[@]}"; do
    IFS='|' read -r name _ _ md _ _ _ <<<"$s"
    rc=$(cat "$WORK/$name.rc")
    while IFS=$'\t' read -r suite w l n b t v; do
      case $v in
        PASS) PASS=$((PASS + 1)); v="**PASS**" ;;
        FAIL) FAILED=$((FAILED + 1)); v="**FAIL**" ;;
        n/a) NA=$((NA + 1)) ;;
      esac
      printf '| [%s](#suite-%s) | %s | %s | %s | %s | %s | %s |\n' "$suite" "$name" "$(esc "$w")" "$(esc "$l")" \
        "$(esc "$n")" "$(esc "$b")" "$(esc "$t")" "$v"
    done <"$WORK/$name.summary.tsv"
    if ((rc != 0)); then
      ERRORS=$((ERRORS + 1))
      printf '| [%s](#suite-%s) | the suite did not complete (rows it wrote before it stopped, if any, are just above) | — | — | — | — | **ERROR**: %s |\n' \
        "$name" "$name" "$(esc "$(cat "$WORK/$name.why")")"
    elif [[ ! -s $WORK/$name.summary.tsv ]]; then
      printf '| [%s](#suite-%s) | no summary rows from this suite: see its section | — | — | — | — | n/a |\n' "$name" "$name"
    fi
  done
} >"$SUMMARY_MD"

# detail FILE SECTION: FILE's content for a section of the report: its
# level-1 title left out (the report's heading stands for it), its headings
# moved so that the highest is level 3, and with SECTION only that section
# of the ones the file keeps (and what stands outside them).
detail() {
  awk -v mark="${2:-}" '
    FNR == 1 { pass++; inside = 0; fence = 0 }
    FNR == 1 && /^# / { skipblank = 1; next }
    skipblank && /^$/ { skipblank = 0; next }
    { skipblank = 0 }
    mark != "" {
      split(mark, m, ": section ")
      if (index($0, "<!-- " m[1] ": section ") == 1) { inside = 1; keep = ($0 == "<!-- " mark " -->"); next }
      if (index($0, "<!-- " m[1] ": end ") == 1) { inside = 0; next }
      if (inside && !keep) next
    }
    /^```/ { fence = !fence }
    pass == 1 { if (!fence && match($0, /^#+ /) && (!top || RLENGTH - 1 < top)) top = RLENGTH - 1; next }
    !fence && /^#+ / && top { $0 = substr("######", 1, 3 - top) $0 }
    { print }' "$1" "$1" | cat -s
}

mkdir -p "$(dirname "$OUT_MD")"
{
  echo "# libredlock benchmark results"
  echo
  echo "Made by \`make bench$( ((QUICK)) && echo "-quick")\` (\`bench/all.sh$( ((QUICK)) && echo " --quick")\`, $MODE mode) at git $REV, from $STARTED to $ENDED ($((TOTAL / 60)) min $((TOTAL % 60)) s):"
  echo "every suite below, one after another in this one sitting, on this one machine. The machine is shared and noisy: compare the"
  echo "figures of one run with each other (the ratios), not with other machines or other runs."
  if [[ -n $ONLY ]]; then
    echo
    echo "**Partial run**: only the suites $ONLY (\`--only\`)."
  fi
  echo
  echo "- **Commit**: $REV; $TREE."
  echo "- **Machine**: $(nproc) cores, ${CPU:-?}, $MEM_TOTAL RAM; kernel $(uname -r); ${OS_NAME:-?}${VIRT:+; virtualized ($VIRT)}."
  echo "- **Versions**: redis-server $REDIS_V, hiredis $HIREDIS_V, libredlock $LIB_V (CMake Release build), node $NODE_V, node-redlock: $NODE_REDLOCK_V; $GNUPLOT_V."
  echo "- **Load average** (1, 5, 15 min): $LOAD_BEFORE before the run, $LOAD_AFTER after it."
  echo "- **Cluster setup**: each suite starts its own independent local redis-server masters with \`deploy/cluster.sh\` (5 on TCP"
  echo "  loopback, default configuration; the core suite's scaling runs add a cluster of 9; the Redis Cluster suite has 3 masters"
  echo "  and 3 Redis Clusters of 3 primaries instead; the host-name suite runs in a private network namespace) and stops them"
  echo "  when it ends; one suite at a time, so the servers and the clients have the machine to themselves but for other users."
  echo "- **Suites**: ${#RAN[@]} run, $((${#RAN[@]} - ERRORS)) completed, $ERRORS failed to complete."
  echo
  echo "## Summary"
  echo
  echo "One row per headline workload or target of every suite, as each suite judged it (its section has the detail)."
  echo "**floor / baseline**: the hand-written hiredis fan-out (\"floor\"), or what the target compares with (healthy nodes, the"
  echo "plain mutex, one waiter, ...). — : no equivalent, or no target."
  echo
  cat "$SUMMARY_MD"
  echo
  echo "$PASS passed, $FAILED failed, $NA not measured (n/a)$( ((ERRORS)) && echo "; $ERRORS suite(s) did not complete")."
  echo
  echo "## Suites"
  echo
  echo "| suite | what | script | result file | plots | duration | exit |"
  echo "|---|---|---|---|---|---:|---|"
  for s in "${RAN[@]}"; do
    IFS='|' read -r name script fargs md plots _ title <<<"$s"
    f=$(quick_name "$md")
    shown=""
    for p in $plots; do
      p=$(quick_name "$p")
      if [[ -f $OUT_DIR/$p && ! $OUT_DIR/$p -ot $WORK/$name.start ]]; then shown+="[$p]($p) "; else shown+="$p (not redrawn) "; fi
    done
    rc=$(cat "$WORK/$name.rc")
    how="bench/$script${fargs:+ $fargs}"
    ((!QUICK)) || how="bench/$script --quick"
    exit_shown=0
    ((rc == 0)) || exit_shown=$(esc "ERROR: $(cat "$WORK/$name.why")")
    file_shown="[$f]($f)"
    [[ -f $OUT_DIR/$f && ! $OUT_DIR/$f -ot $WORK/$name.start ]] || file_shown="$f (not written in this run)"
    # shellcheck disable=SC2016 # backquotes: Markdown code
    printf '| [%s](#suite-%s) | %s | `%s` | %s | %s | %s s | %s |\n' "$name" "$name" "$title" "$how" \
      "$file_shown" "${shown:-—}" "$(cat "$WORK/$name.secs")" "$exit_shown"
  done
  echo
  echo "Each suite's own log: \`${LOG_DIR#"$ROOT"/}/NAME.err\` (progress) and \`NAME.out\` (what it printed)."
  for s in "${RAN[@]}"; do
    IFS='|' read -r name script fargs md _ section title <<<"$s"
    f=$OUT_DIR/$(quick_name "$md")
    rc=$(cat "$WORK/$name.rc")
    echo
    echo "<a id=\"suite-$name\"></a>"
    echo
    echo "## $title"
    echo
    echo "Suite \`$name\`: \`bench/$script$( ((QUICK)) && echo " --quick" || echo "${fargs:+ $fargs}")\`, $(cat "$WORK/$name.secs") s, exit status $rc$( ((rc == 0)) || echo " (**ERROR**: $(cat "$WORK/$name.why"))")."
    if [[ -f $f && ! $f -ot $WORK/$name.start ]]; then
      echo "Its own file, written in this run: [$(basename "$f")]($(basename "$f")); its content follows."
      echo
      detail "$f" "$section"
    else
      echo "It wrote no result file in this run; the last lines of its log:"
      echo
      echo '```'
      tail -n 15 "$LOG_DIR/$name.err" 2>/dev/null || true
      echo '```'
    fi
  done
  if ((!QUICK)); then
    echo
    echo "## Other result files"
    echo
    echo "Not made by \`make bench\`, and not rerun: [RESULTS-split.md](RESULTS-split.md), a one-off comparison of the blocking API"
    echo "before and after the core split (issue 13, item 5); it says at its top which commits it measured."
  fi
} >"$WORK/report.md"
mv "$WORK/report.md" "$OUT_MD"

echo
echo "libredlock benchmarks, $MODE mode, at git $REV: ${#RAN[@]} suites in $TOTAL s"
echo
cat "$SUMMARY_MD"
echo
echo "$PASS passed, $FAILED failed, $NA not measured (n/a)$( ((ERRORS)) && echo "; $ERRORS suite(s) did not complete")."
echo
echo "Report: $OUT_MD"
((ERRORS == 0))

#!/usr/bin/env bash
# fence.sh [--quick] [--note TEXT] [--runs N] -- what a fencing token costs
# next to a plain lock (issue 26, item 2), on a 5-node cluster of its own
# (deploy/cluster.sh; always stopped at the end, also on Ctrl-C).
#
# Runs bench_fence (bench/bench_fence.c says what each row is) N times in a
# row on the same cluster (default 3; --quick 1): one caller's acquire and
# acquire + release latency, plain and fenced handles interleaved in rounds
# with a floor of raw round trips over hiredis, then 32 threads' throughput
# in alternating blocks. Full mode: 30 rounds of 300 cycles per variant and
# 10 throughput rounds of 1 s per kind, per run (a few minutes in all); it
# writes bench/RESULTS-fence.md with every run's tables and the spread of
# the two headline ratios over the runs. --quick: 6 rounds of 100 cycles, 3
# throughput rounds of 0.5 s, one run (about 20 s), written to
# $BENCH_BUILD/bench/RESULTS-fence-quick.md. --note TEXT: a paragraph for
# the report; bench/fence-notes.md (what changed, where the time goes) is
# copied in after the headline. The tables are printed either way. Under
# bench/all.sh (`make bench`) the two targets are rows of the summary.
#
# Environment: BENCH_BUILD (default build-bench), the CMake build directory
# configured with -DREDLOCK_BUILD_BENCH=ON (`make bench-fence` does it all).
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
export LC_ALL=C

BIN=$BUILD/bench/bench_fence

QUICK=0
NOTE=""
RUNS=""
while (($#)); do
  case $1 in
    --quick) QUICK=1 ;;
    --note) NOTE=${2:-}; shift ;;
    --runs) RUNS=${2:-}; shift ;;
    -h|--help) sed -n '2,20p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "fence.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
  shift
done

if ((QUICK)); then
  MODE=quick ARGS=(-r 6 -b 100 --tr 3 -d 0.5 --warmup 100) OUT_MD=$BUILD/bench/RESULTS-fence-quick.md
  RUNS=${RUNS:-1}
else
  MODE=full ARGS=(-r 30 -b 300 --tr 10 -d 1) OUT_MD=$ROOT/bench/RESULTS-fence.md
  RUNS=${RUNS:-3}
fi
[[ $RUNS =~ ^[1-9][0-9]*$ ]] || { echo "fence.sh: --runs wants a positive number" >&2; exit 2; }

[[ -x $BIN ]] || fail "$BIN is not built (run: make bench-fence)"
command -v redis-server >/dev/null || fail "redis-server is not installed"

SCRATCH=$(mktemp -d /tmp/redlock-bench-fence.XXXXXX)
LOG=$SCRATCH/stderr.log
CLUSTER=""

finish() {
  local rc=$?
  [[ -z $CLUSTER ]] || "$CLUSTER_SH" stop -d "$CLUSTER" >/dev/null 2>&1 || true
  if ((rc != 0)) && [[ -s $LOG ]]; then
    echo "--- the run's last diagnostics:" >&2
    tail -n 20 "$LOG" >&2 || true
  fi
  rm -rf "$SCRATCH"
}
trap finish EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
CLUSTER=$SCRATCH/cluster
"$CLUSTER_SH" start -n 5 -d "$CLUSTER" >/dev/null 2>>"$LOG" || fail "deploy/cluster.sh could not start 5 nodes"
NODES=$(paste -sd, "$CLUSTER/nodes")
note "$MODE mode: $RUNS run(s) of bench_fence ${ARGS[*]} on 5 nodes"

STATUS=0
for ((k = 1; k <= RUNS; k++)); do
  note "run $k/$RUNS"
  st=0
  # --foreground: the run stays in our process group, so Ctrl-C reaches it
  timeout --foreground -k 5 900 "$BIN" -u "$NODES" "${ARGS[@]}" >"$SCRATCH/run$k.md" 2>>"$LOG" || st=$?
  if ((st == 130 || st == 143)); then exit "$st"; fi
  ((st == 0)) || STATUS=$st
  grep -q '^| variant' "$SCRATCH/run$k.md" || fail "bench_fence printed no table in run $k (exit $st)"
done
"$CLUSTER_SH" stop -d "$CLUSTER" >/dev/null 2>>"$LOG" || true
CLUSTER=""
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)

# The two headline ratios of every run: the fenced row's "acquire p50 ÷ base"
# (serial) and its "÷ plain" in the throughput table.
spread() {
  local col=$1 pat=$2
  for ((k = 1; k <= RUNS; k++)); do
    grep -F "$pat" "$SCRATCH/run$k.md" | head -n 1 | awk -F'|' -v c="$col" '{ gsub(/[ ×]/, "", $c); print $c }'
  done | sort -g | awk '{ v[NR] = $1 } END { if (NR) printf "%s× (least %s×, largest %s×, over %d run(s))", v[int((NR + 1) / 2)], v[1], v[NR], NR }'
}
SERIAL=$(spread 7 '| fenced (`opt.fencing')
THRU=$(spread 4 '| fenced |')

# The summary rows of `make bench` (bench/all.sh): the medians over the runs
# against the issue's targets.
median_of() { awk '{ print $1 }' <<<"$1" | tr -d '×'; }
verdict() { awk -v v="$1" -v op="$2" -v lim="$3" 'BEGIN { if (v == "") print "n/a"; else if (op == "le" ? v + 0 <= lim + 0 : v + 0 >= lim + 0) print "PASS"; else print "FAIL" }'; }
S_MED=$(median_of "$SERIAL")
T_MED=$(median_of "$THRU")
summary "fenced acquire, one caller: p50 ÷ plain (median of $RUNS runs)" "${S_MED:+$S_MED×}" - "plain 1.00×" "≤ 2.0×" \
  "$(verdict "$S_MED" le 2.0)"
summary "fenced acquire + release, 32 threads: cycles/s ÷ plain (median of $RUNS runs)" "${T_MED:+$T_MED×}" - \
  "plain 1.00×" "≥ 0.6×" "$(verdict "$T_MED" ge 0.6)"

DATE=$(date -u '+%Y-%m-%d %H:%M UTC')
CPU=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
REV=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo "?")
LOOSE=$(git -C "$ROOT" status --porcelain -- src include lua 2>/dev/null | awk '{ print $2 }' | paste -sd' ' -)
REDIS=$(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p')
VERSION=$("$BIN" --version 2>/dev/null || echo "?")
SHOWN="make bench-fence"
((QUICK)) && SHOWN="make bench-fence-quick"

mkdir -p "$(dirname "$OUT_MD")"
{
  echo "# libredlock: what a fencing token costs (issue 26, item 2)"
  echo
  echo "\`$SHOWN\` (\`bench/fence.sh$([[ $MODE == quick ]] && echo ' --quick')\`, which runs"
  echo "\`bench_fence -u <5 local nodes> ${ARGS[*]}\` $RUNS time(s) on one cluster), $DATE, $((SECONDS - START)) s."
  echo "Library at git $REV${LOOSE:+ with uncommitted changes in $LOOSE}; libredlock $VERSION; redis-server $REDIS;"
  echo "5 local redis-server masters started for the run, default options, TTL 10 s."
  echo "Machine: $(nproc) cores ($CPU), shared by the client, the 5 servers and other users;"
  echo "load average $LOAD_BEFORE before, $LOAD_AFTER after."
  echo
  echo "Two handles on the same nodes, one with \`opt.fencing = 1\`; every cycle is an acquire (one attempt) and"
  echo "a release of a resource of the variant's own. Serial: one caller, the variants interleaved in rounds"
  echo "(each round a block of cycles of every variant, the order rotated by one each round); percentiles over all"
  echo "rounds; \"÷ base\" is the p50 over plain's (the floor rows: over the floor's \`SET NX PX\`), its per-round"
  echo "range the same ratio inside each round. The floor rows send the commands by hand over hiredis, no library:"
  echo "they show what the round trips themselves cost here. Throughput: 32 threads share each handle, each on a"
  echo "resource of its own, blocks of plain and fenced alternating which goes first."
  echo "Targets (issue 26): fenced acquire serial p50 ≤ 2.0 × plain, 32-thread throughput ≥ 0.6 × plain."
  echo
  echo "**Headline over the runs** (median, least, largest): fenced acquire p50 ÷ plain $SERIAL;"
  echo "32-thread throughput ÷ plain $THRU."
  if [[ -n $NOTE ]]; then
    echo
    echo "$NOTE"
  fi
  if [[ -s $ROOT/bench/fence-notes.md ]]; then
    echo
    cat "$ROOT/bench/fence-notes.md"
  fi
  for ((k = 1; k <= RUNS; k++)); do
    echo
    echo "## Run $k of $RUNS"
    echo
    cat "$SCRATCH/run$k.md"
  done
  ((STATUS == 0)) || { echo; echo "bench_fence exited with status $STATUS."; }
} >"$OUT_MD"

echo
for ((k = 1; k <= RUNS; k++)); do
  echo "## Run $k of $RUNS"
  echo
  cat "$SCRATCH/run$k.md"
  echo
done
echo "Fenced acquire p50 ÷ plain: $SERIAL; 32-thread throughput ÷ plain: $THRU."
echo "Report: $OUT_MD"
exit "$STATUS"

# shellcheck shell=bash disable=SC2034 # it sets variables for the scripts that source it
# bench/lib.sh -- what the benchmark scripts of bench/ share. Sourced, never
# run: `. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"` right after the script's
# `set -euo pipefail`.
#
# It sets ROOT (the checkout), BUILD (BENCH_BUILD, default build-bench) and
# CLUSTER_SH, and gives:
#   bench_args NAME OPTIONS -- "$@"  the command line (sets QUICK, NOTE, LABEL)
#   note / fail                      progress and fatal errors on stderr
#   bench_scratch NAME               a scratch directory, its log, the traps
#   cluster_up / cluster_down        the script's own 5 local masters
#   cluster_start N NAME [ARGS...]   other masters or Redis Clusters of its own
#   node_redlock_setup SCRIPT        node-redlock from bench/node, or n/a
#   machine_info                     DATE, CPU, REV, LOOSE, REDIS_V
#   target ID VALUE SHOWN [...]      judges a measurement against its row of bench/targets.tsv
#   targets_table [TITLE]            the suite's targets table, PASS/FAIL, with the counts
#   summary ...                      a row of `make bench`'s summary table (without a target)
#   ratio, ratio_x, median, least, most, quantile, kv, dec, fig   numbers
#   raw_details FILE SUMMARY         a run's RESULT lines, folded, for a report
#   bench_stamp                      "at git REV on DATE" for a report's first lines
# Each of them leaves the script's own output as it was before it was
# shared: the texts below are the scripts' own.

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BENCH_BUILD:-$ROOT/build-bench}
CLUSTER_SH=$ROOT/deploy/cluster.sh
NODE_DIR=$ROOT/bench/node

# bench_args NAME OPTIONS -- ARGS...: reads the script's command line.
# OPTIONS: the options it takes besides -h/--help, among "quick", "note",
# "label" and "stats-only" (space-separated). Sets QUICK and STATS_ONLY (0
# or 1), NOTE (--note TEXT, default empty) and LABEL (--label NAME, default
# "latest"). --help prints the script's opening comment, from its second
# line to the last line before `set -euo pipefail`.
bench_args() {
  local name=$1 allowed=" $2 "
  shift 3
  QUICK=0 STATS_ONLY=0 NOTE="" LABEL=latest
  while (($#)); do
    case $1 in
      --quick) [[ $allowed == *" quick "* ]] || bench_bad_arg "$name" "$1"; QUICK=1 ;;
      --stats-only) [[ $allowed == *" stats-only "* ]] || bench_bad_arg "$name" "$1"; STATS_ONLY=1 ;;
      --note) [[ $allowed == *" note "* ]] || bench_bad_arg "$name" "$1"; NOTE=${2:-}; shift ;;
      --label) [[ $allowed == *" label "* ]] || bench_bad_arg "$name" "$1"; LABEL=${2:-}; shift ;;
      -h|--help)
        sed -n '2,/^set -euo pipefail/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
        exit 0 ;;
      *) bench_bad_arg "$name" "$1" ;;
    esac
    shift
  done
}
bench_bad_arg() { echo "$1: unknown argument '$2' (try --help)" >&2; exit 2; }

# note TEXT: a progress line on stderr, seconds since START; fail TEXT: the
# same as an error, and exit 1. NOTE_WIDTH: the seconds' width (default 3).
START=$SECONDS
note() { printf "[%${NOTE_WIDTH:-3}ds] %s\n" "$((SECONDS - START))" "$*" >&2; }
fail() { note "error: $*"; exit 1; }

# bench_scratch NAME: SCRATCH (/tmp/redlock-bench-NAME.XXXXXX) and LOG (its
# stderr.log, empty), CLUSTER empty, and the traps: on exit, whatever
# happened, bench_finish stops the clusters and removes SCRATCH. A script
# with more to stop defines finish_hook (run first, before the clusters are
# stopped). DIAG_WHAT names the diagnostics shown when the script fails
# (default "the runs'").
bench_scratch() {
  SCRATCH=$(mktemp -d "/tmp/redlock-bench-$1.XXXXXX")
  LOG=$SCRATCH/stderr.log
  : >"$LOG"
  CLUSTER=""
  CLUSTER_DIRS=()
  trap bench_finish EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
}
bench_finish() {
  local rc=$? d
  if declare -F finish_hook >/dev/null; then finish_hook || true; fi
  # stop also resumes paused nodes
  for d in "${CLUSTER_DIRS[@]}"; do "$CLUSTER_SH" stop -d "$d" >/dev/null 2>&1 || true; done
  if ((rc != 0)) && [[ -s $LOG ]]; then
    echo "--- ${DIAG_WHAT:-"the runs'"} last diagnostics:" >&2
    tail -n 20 "$LOG" >&2 || true
  fi
  rm -rf "$SCRATCH"
}

# cluster_up: 5 masters in $SCRATCH/cluster (CLUSTER), their URIs in NODES,
# the load average before in LOAD_BEFORE. cluster_start N NAME [ARGS...]:
# the same for N masters in $SCRATCH/NAME, or what deploy/cluster.sh's
# start makes of N with ARGS (--cluster-shards K: N Redis Clusters of K
# primaries); a script may start several (one NAME each): CLUSTER and NODES
# are the last one's, LOAD_BEFORE is from before the first. cluster_down:
# stops every one (the EXIT trap does it too), LOAD_AFTER.
cluster_up() { cluster_start 5 cluster; }
cluster_start() {
  local n=$1 name=$2
  shift 2
  ((${#CLUSTER_DIRS[@]})) || LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
  CLUSTER=$SCRATCH/$name
  CLUSTER_DIRS+=("$CLUSTER")
  "$CLUSTER_SH" start -n "$n" "$@" -d "$CLUSTER" >/dev/null 2>>"$LOG" ||
    fail "deploy/cluster.sh could not start $n nodes${*:+ ($*)}"
  NODES=$(paste -sd, "$CLUSTER/nodes")
}
cluster_down() {
  local d
  for d in "${CLUSTER_DIRS[@]}"; do "$CLUSTER_SH" stop -d "$d" >/dev/null 2>>"$LOG" || true; done
  CLUSTER_DIRS=()
  CLUSTER=""
  LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)
}

# node_redlock_setup SCRIPT: installs the pinned node-redlock into
# bench/node/node_modules when it is missing or bench/node/package.json
# changed since (npm ci; npm install without a lock file, or when ci
# fails), then asks bench/node/SCRIPT --version. NODE_OK 1 and
# NODE_VERSIONS ("redlock=... ioredis=...") when it answers, else 0 and n/a.
node_redlock_setup() {
  NODE_OK=0 NODE_VERSIONS=n/a
  if command -v node >/dev/null && command -v npm >/dev/null; then
    if [[ ! -f $NODE_DIR/node_modules/redlock/package.json || ! -f $NODE_DIR/node_modules/ioredis/package.json ||
          $NODE_DIR/package.json -nt $NODE_DIR/node_modules/.package-lock.json ]]; then
      note "installing node-redlock (npm) into bench/node/node_modules"
      { [[ -f $NODE_DIR/package-lock.json ]] && (cd "$NODE_DIR" && timeout 180 npm ci --no-audit --no-fund --loglevel=error); } \
        >>"$LOG" 2>&1 ||
        (cd "$NODE_DIR" && timeout 180 npm install --no-audit --no-fund --loglevel=error) >>"$LOG" 2>&1 || true
    fi
    NODE_VERSIONS=$(node "$NODE_DIR/$1" --version 2>>"$LOG" || echo n/a)
    if [[ $NODE_VERSIONS == *n/a* ]]; then NODE_VERSIONS=n/a; else NODE_OK=1; fi
  fi
}

# machine_info: DATE (minutes, UTC), CPU (model name), REV (short commit),
# LOOSE (files of src/, include/ and lua/ not as committed, space-separated),
# REDIS_V (redis-server's version).
machine_info() {
  DATE=$(date -u '+%Y-%m-%d %H:%M UTC')
  CPU=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
  REV=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo "?")
  LOOSE=$(git -C "$ROOT" status --porcelain -- src include lua 2>/dev/null | awk '{ print $2 }' | paste -sd' ' -)
  REDIS_V=$(redis-server --version | sed -n 's/.* v=\([^ ]*\).*/\1/p')
}

# bench_stamp: "at git REV[ (+ uncommitted changes)] on DATE", for the first
# lines of a report (needs machine_info).
bench_stamp() {
  printf 'at git %s%s on %s' "$REV" "${LOOSE:+ (with uncommitted changes in src/include/lua)}" "$DATE"
}

# raw_details FILE SUMMARY: FILE (the RESULT lines of a run) as a folded
# block of a report, SUMMARY its title.
raw_details() {
  printf '<details><summary>%s</summary>\n\n```\n' "$2"
  cat "$1"
  printf '```\n\n</details>\n'
}

# dec VALUE DIGITS: VALUE with DIGITS decimals, "n/a" when empty (or "-").
dec() { if [[ -n ${1:-} && $1 != - ]]; then awk -v v="$1" -v d="$2" 'BEGIN { printf "%.*f\n", d, v }'; else echo "n/a"; fi; }

# fig VALUE DIGITS [SUFFIX]: VALUE with DIGITS decimals and SUFFIX (" µs"),
# nothing when VALUE is empty or "-" (a summary field, written "—" then).
fig() { if [[ -n ${1:-} && $1 != - ]]; then printf '%s%s\n' "$(dec "$1" "$2")" "${3:-}"; fi; }

# ------------------------------------------------------------ the summary

# summary WORKLOAD LIBREDLOCK NODE_REDLOCK BASELINE TARGET VERDICT: one row
# of the summary table at the top of bench/RESULTS.md (bench/all.sh), as a
# line "SUITE<TAB>WORKLOAD<TAB>...<TAB>VERDICT" appended to $BENCH_SUMMARY;
# nothing when BENCH_SUMMARY is not set (a script run on its own). SUITE is
# $BENCH_SUITE (all.sh sets it), else the script's name. Empty fields are
# (or "-") written "—"; VERDICT is PASS, FAIL, n/a (not measured) or — (no target);
# MISS counts as FAIL. BASELINE is the floor, or what the target compares
# with (healthy nodes, the plain mutex, one waiter, ...).
summary() {
  [[ -n ${BENCH_SUMMARY:-} ]] || return 0
  local suite=${BENCH_SUITE:-$(basename "$0" .sh)} f out="" verdict
  verdict=$(sed 's/\*//g; s/^ *//; s/ .*//' <<<"${6:-}")
  case $verdict in
    PASS|pass) verdict=PASS ;;
    FAIL|fail|MISS|miss) verdict=FAIL ;;
    ""|—|-) verdict=— ;;
    *) verdict=n/a ;;
  esac
  for f in "$1" "$2" "$3" "$4" "$5"; do
    f=${f//$'\t'/ }
    [[ $f != - ]] || f=""
    out+="${f:-—}"$'\t'
  done
  printf '%s\t%s%s\n' "$suite" "$out" "$verdict" >>"$BENCH_SUMMARY"
}

# ------------------------------------------------------------ the targets

# Every target of every suite is one row of bench/targets.tsv (its header
# says the columns): the suite, an id, the workload as shown, the
# comparison (le, ge or lt), the threshold and the unit shown after it. A
# suite judges its measurement of row ID with `target`, and prints its
# table with `targets_table`; the rows are that file's alone.
TARGETS_TSV=$ROOT/bench/targets.tsv
SUITE=${BENCH_SUITE:-$(basename "$0" .sh)}
TARGET_LINES=() TARGET_IDS=()
TARGETS_PASSED=0 TARGETS_FAILED=0 TARGETS_NA=0

# target_spec ID: sets T_WORKLOAD, T_OP (le, ge, lt), T_LIMIT, T_UNIT and
# T_TEXT (the target as shown: "≤ 1.15 × floor") from this suite's row ID of
# bench/targets.tsv; fails (exit 1) when there is none or it is malformed.
target_spec() {
  local line
  line=$(awk -F '\t' -v s="$SUITE" -v id="$1" '$1 == s && $2 == id { print $3 "\t" $4 "\t" $5 "\t" $6; exit }' "$TARGETS_TSV")
  [[ -n $line ]] || fail "bench/targets.tsv has no target '$1' for the suite '$SUITE'"
  IFS=$'\t' read -r T_WORKLOAD T_OP T_LIMIT T_UNIT <<<"$line"
  case $T_OP in
    le) T_TEXT="≤" ;;
    ge) T_TEXT="≥" ;;
    lt) T_TEXT="<" ;;
    *) fail "bench/targets.tsv: $SUITE $1 compares with '$T_OP' (le, ge or lt)" ;;
  esac
  [[ $T_LIMIT =~ ^-?[0-9]+([.][0-9]+)?$ ]] || fail "bench/targets.tsv: $SUITE $1 has the threshold '$T_LIMIT' (a number)"
  T_TEXT+=" $T_LIMIT$T_UNIT"
}

# target ID VALUE SHOWN [WORKLOAD LIBREDLOCK NODE BASELINE]: judges VALUE (a
# number; empty, "-" or "n/a": not measured) against this suite's row ID of
# bench/targets.tsv; keeps its row of the targets table (SHOWN: the
# measurement as the table says it, VALUE when empty) and, when the summary
# fields are given, its row of the summary of `make bench` (WORKLOAD
# defaults to the row's, LIBREDLOCK to SHOWN). Counts it in TARGETS_PASSED,
# TARGETS_FAILED or TARGETS_NA.
target() {
  local id=$1 v=${2:-} shown=${3:-} res verdict
  target_spec "$id"
  [[ $v != - && $v != n/a ]] || v=""
  if [[ -z $v ]]; then
    res="n/a" verdict="n/a"
    TARGETS_NA=$((TARGETS_NA + 1))
  else
    res=$(awk -v m="$v" -v l="$T_LIMIT" -v op="$T_OP" 'BEGIN {
      ok = op == "ge" ? m + 0 >= l + 0 : op == "lt" ? m + 0 < l + 0 : m + 0 <= l + 0
      if (l + 0 == 0) margin = ""
      else if (op == "ge") margin = sprintf(" (%.0f %% %s the limit)", (m / l - 1) * 100 * (ok ? 1 : -1), ok ? "over" : "short of")
      else margin = sprintf(" (%.0f %% %s the limit)", (1 - m / l) * 100 * (ok ? 1 : -1), ok ? "under" : "over")
      printf "%s%s\n", ok ? "PASS" : "FAIL", margin }')
    verdict=${res%% *}
    if [[ $verdict == PASS ]]; then TARGETS_PASSED=$((TARGETS_PASSED + 1)); else TARGETS_FAILED=$((TARGETS_FAILED + 1)); fi
  fi
  TARGET_IDS+=("$id")
  [[ $res == n/a ]] || res="**${res%% *}**${res#"${res%% *}"}"
  TARGET_LINES+=("| $T_WORKLOAD | $T_TEXT | ${shown:-${v:-n/a}} | $res |")
  if (($# > 3)); then summary "${4:-$T_WORKLOAD}" "${5:-${shown:-$v}}" "${6:-}" "${7:-}" "$T_TEXT" "$verdict"; fi
}

# targets_table [TITLE]: the targets table of this run's rows (and, as not
# measured, this suite's rows of bench/targets.tsv it never judged), then a
# line with the counts.
targets_table() {
  local id rest x seen
  printf '| %s | target | measured | verdict |\n|---|---|---:|---|\n' "${1:-target}"
  ((${#TARGET_LINES[@]} == 0)) || printf '%s\n' "${TARGET_LINES[@]}"
  while IFS=$'\t' read -r _ id rest; do
    seen=0
    for x in "${TARGET_IDS[@]}"; do [[ $x != "$id" ]] || seen=1; done
    if ((!seen)); then
      target_spec "$id"
      printf '| %s | %s | not measured in this run | n/a |\n' "$T_WORKLOAD" "$T_TEXT"
      TARGETS_NA=$((TARGETS_NA + 1))
    fi
  done < <(awk -F '\t' -v s="$SUITE" '$1 == s' "$TARGETS_TSV")
  printf '\n%d passed, %d failed, %d not measured.\n' "$TARGETS_PASSED" "$TARGETS_FAILED" "$TARGETS_NA"
}

# ------------------------------------------------------------ numbers

# ratio A B [DIGITS]: A ÷ B with DIGITS decimals (default 2); nothing when
# either is missing (empty, "-", "n/a") or B is 0.
ratio() {
  awk -v a="${1:-}" -v b="${2:-}" -v d="${3:-2}" 'BEGIN {
    if (a == "" || b == "" || a == "-" || b == "-" || a == "n/a" || b == "n/a" || b + 0 == 0) exit
    printf "%.*f\n", d, a / b }'
}

# ratio_x A B: A ÷ B as "1.23×", n/a when it cannot be computed.
ratio_x() { local r; r=$(ratio "$@"); if [[ -n $r ]]; then echo "${r}×"; else echo "n/a"; fi; }

# median, least, most: of the numbers on stdin, one a line (nothing when
# there are none); the median of an even count is the mean of the middle two.
median() {
  sort -g | awk '{ v[NR] = $1 } END { if (NR) printf "%.6g\n", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
least() { sort -g | head -n 1; }
most() { sort -g | tail -n 1; }

# quantile Q: the Q-quantile (nearest rank) of the numbers on stdin; Q 1 is
# the largest (nothing when there are none).
quantile() {
  sort -g | awk -v q="$1" '{ v[NR] = $1 } END { if (!NR) exit; r = int(q * NR); if (r < q * NR) r++; if (r < 1) r = 1; print v[r] }'
}

# kv LINE KEY: the value of KEY=VALUE in a RESULT line (nothing when absent).
kv() { tr ' ' '\n' <<<"$1" | sed -n "s/^$2=//p" | head -n 1; }

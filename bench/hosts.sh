#!/usr/bin/env bash
# bench/hosts.sh -- acquire latency on 5 nodes with one node's host name
# unresolvable (its resolver drops every query), beside the all-healthy
# run (issue 12). Target: p99 within 1.5x of the healthy p99.
#
# Runs inside test/hosts/ns_run.sh: a private network namespace with a
# 5-node cluster, Debian's standard /etc/hosts (nodes named `localhost`)
# and a resolver address where bench/dns_blackhole drops every query.
# healthy:  5 x redis://localhost:PORT
# one dead: 4 x redis://localhost:PORT + redis://redis-3.test:PORT
# interleaved, REPS times each (median shown); each run a serial acquire +
# release loop of SECS seconds (bench_redlock -w serial, default options
# but no retries). Prints a Markdown table; writes it to $OUT (default:
# bench/RESULTS-hosts.md in full mode, the build directory with --quick).
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
root=$ROOT
REPS=${REPS:-3} SECS=${SECS:-5} OUT=${OUT:-$ROOT/bench/RESULTS-hosts.md}
QUICK=${HOSTS_QUICK:-0} # the run inside the namespace learns --quick from the first
if [[ ${1:-} == --quick ]]; then QUICK=1 REPS=1 SECS=1 OUT=$BUILD/bench/RESULTS-hosts-quick.md; shift; fi

if [[ ${1:-} != --inside ]]; then
  [[ -x $BUILD/bench/bench_redlock && -x $BUILD/bench/dns_blackhole ]] ||
    { echo "hosts.sh: build the benchmarks first (make bench-build)" >&2; exit 1; }
  REPS=$REPS SECS=$SECS OUT=$OUT BENCH_BUILD=$BUILD HOSTS_QUICK=$QUICK \
    "$root/test/hosts/ns_run.sh" "$root/deploy/cluster.sh" "$0" --inside
  exit $?
fi

"$BUILD/bench/dns_blackhole" 127.0.0.53 &
hole=$!
trap 'kill $hole 2>/dev/null' EXIT
mapfile -t ports < <(sed 's/.*://' "$REDLOCK_CLUSTER_DIR/nodes")
healthy=$(printf 'redis://localhost:%s,' "${ports[@]}")
healthy=${healthy%,}
dead="redis://localhost:${ports[0]},redis://localhost:${ports[1]},redis://localhost:${ports[2]},redis://localhost:${ports[3]},redis://redis-3.test:${ports[4]}"

declare -A vals=()
# run TAG URIS: one serial run; appends its acquire p50/p99 to vals.
run() {
  local line
  line=$("$BUILD/bench/bench_redlock" -u "$2" -w serial -d "$SECS" --op-timeout 50 | grep '^RESULT')
  for k in acq_p50_us acq_p99_us cps errors; do
    vals[$1.$k]+="$(sed -n "s/.* $k=\([^ ]*\).*/\1/p" <<<"$line") "
  done
}
for ((r = 0; r < REPS; r++)); do run healthy "$healthy"; run dead "$dead"; done

median() { tr ' ' '\n' <<<"$1" | grep . | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
h50=$(median "${vals[healthy.acq_p50_us]}") h99=$(median "${vals[healthy.acq_p99_us]}")
d50=$(median "${vals[dead.acq_p50_us]}") d99=$(median "${vals[dead.acq_p99_us]}")
ratio=$(awk -v a="$d99" -v b="$h99" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')
verdict=$(awk -v r="$ratio" 'BEGIN { print (r <= 1.5 ? "pass" : "MISS") }')
machine_info
summary "1 of 5 node names unresolvable, serial acquire p99" "$(fig "$d99" 1 " µs") ($ratio × healthy)" "" \
  "all 5 resolvable: $(fig "$h99" 1 " µs")" "≤ 1.5 × healthy" "$verdict"
mkdir -p "$(dirname "$OUT")"
{
  echo "## Node host names: one name unresolvable ($(date -u +%Y-%m-%d), ${REPS}x${SECS} s serial runs, median)"
  echo
  echo "Made by \`bench/hosts.sh$( ((QUICK)) && echo " --quick")\` $(bench_stamp)."
  echo
  echo "| 5 nodes by name | acquire p50 (µs) | acquire p99 (µs) | cycles/s | errors |"
  echo "|---|---|---|---|---|"
  echo "| all 5 resolvable (localhost) | $h50 | $h99 | $(median "${vals[healthy.cps]}") | $(median "${vals[healthy.errors]}") |"
  echo "| 1 of 5 unresolvable (resolver drops queries) | $d50 | $d99 | $(median "${vals[dead.cps]}") | $(median "${vals[dead.errors]}") |"
  echo
  echo "Target: p99 with one name unresolvable within 1.5x of the healthy p99: $ratio x, **$verdict**."
} | tee "$OUT"

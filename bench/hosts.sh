#!/usr/bin/env bash
# bench/hosts.sh [--quick] [--note TEXT] -- acquire latency on 5 nodes with
# one node's host name unresolvable (its resolver drops every query), beside
# the all-healthy run (issue 12). Target (bench/targets.tsv): p99 within
# 1.5x of the healthy p99.
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
if [[ ${1:-} != --inside ]]; then
  bench_args hosts.sh "quick note" -- "$@"
  ((!QUICK)) || REPS=1 SECS=1 OUT=$BUILD/bench/RESULTS-hosts-quick.md
  [[ -x $BUILD/bench/bench_redlock && -x $BUILD/bench/dns_blackhole ]] ||
    { echo "hosts.sh: build the benchmarks first (make bench-build)" >&2; exit 1; }
  # (the run inside the namespace learns the command line from these)
  REPS=$REPS SECS=$SECS OUT=$OUT BENCH_BUILD=$BUILD HOSTS_QUICK=$QUICK HOSTS_NOTE=$NOTE \
    "$root/test/hosts/ns_run.sh" "$root/deploy/cluster.sh" "$0" --inside
  exit $?
fi
QUICK=${HOSTS_QUICK:-0} NOTE=${HOSTS_NOTE:-}

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
    vals[$1.$k]+="$(kv "$line" "$k") "
  done
}
for ((r = 0; r < REPS; r++)); do run healthy "$healthy"; run dead "$dead"; done

# mid TAG.KEY: the median of its runs
mid() { tr ' ' '\n' <<<"${vals[$1]}" | grep . | median; }
h50=$(mid healthy.acq_p50_us) h99=$(mid healthy.acq_p99_us)
d50=$(mid dead.acq_p50_us) d99=$(mid dead.acq_p99_us)
r99=$(ratio "$d99" "$h99")
machine_info
target p99 "$r99" "${r99:+$r99× ($d99 vs $h99 µs)}" "1 of 5 node names unresolvable, serial acquire p99" \
  "$(fig "$d99" 1 " µs")${r99:+ ($r99 × healthy)}" "" "all 5 resolvable: $(fig "$h99" 1 " µs")"
mkdir -p "$(dirname "$OUT")"
{
  echo "## Node host names: one name unresolvable ($(date -u +%Y-%m-%d), ${REPS}x${SECS} s serial runs, median)"
  echo
  echo "Made by \`bench/hosts.sh$( ((QUICK)) && echo " --quick")\` $(bench_stamp)."
  echo
  echo "| 5 nodes by name | acquire p50 (µs) | acquire p99 (µs) | cycles/s | errors |"
  echo "|---|---|---|---|---|"
  echo "| all 5 resolvable (localhost) | $h50 | $h99 | $(mid healthy.cps) | $(mid healthy.errors) |"
  echo "| 1 of 5 unresolvable (resolver drops queries) | $d50 | $d99 | $(mid dead.cps) | $(mid dead.errors) |"
  if [[ -n $NOTE ]]; then
    echo
    echo "$NOTE"
  fi
  echo
  targets_table "target (issue 12)"
} | tee "$OUT"

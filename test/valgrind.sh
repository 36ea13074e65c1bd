#!/usr/bin/env bash
# valgrind.sh SUPP BINARY [ARGS...] -- runs a Criterion test binary under
# valgrind memcheck, following its forked test workers, and fails when any
# process reported an error or a leak. Criterion does not pass a worker's
# exit status through, so the per-process logs are what decide. Programs the
# tests run (bash, cluster.sh, redis-server) are not traced. Threads are
# scheduled fairly: valgrind runs one at a time, and by default one can
# starve the others (a handle's I/O thread) for seconds on a busy machine.
set -u
supp=$1
shift
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
valgrind --quiet --fair-sched=try --trace-children=yes --trace-children-skip='/bin/*,/usr/*,*/cluster.sh,*/redis-*' --leak-check=full --show-leak-kinds=definite,indirect \
  --errors-for-leak-kinds=definite,indirect --error-exitcode=99 --suppressions="$supp" \
  --log-file="$logs/vg.%p.log" "$@"
rc=$?
reported=$(grep -l '==[0-9]*==' "$logs"/vg.*.log 2>/dev/null)
if [ -n "$reported" ]; then
  echo "valgrind reported problems:"
  cat $reported
  exit 1
fi
exit $rc

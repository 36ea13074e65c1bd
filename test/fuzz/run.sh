#!/usr/bin/env bash
# Runs the libFuzzer targets (what `make fuzz` does after building them).
#
#   test/fuzz/run.sh BUILD_DIR SECONDS [TARGET...]
#
# For each target (default: every fuzz_* binary built in BUILD_DIR/test/fuzz):
#  1. the saved inputs in test/fuzz/crashes/TARGET/ are run once each, as
#     regression tests: none may crash;
#  2. the target fuzzes for SECONDS on a scratch copy of its seed corpus
#     test/fuzz/corpus/TARGET/ (with test/fuzz/dict/TARGET.dict if there is
#     one), so nothing is written into the source tree. A crashing input is
#     saved as BUILD_DIR/test/fuzz/artifacts/TARGET-crash-<sha1>; the log is
#     BUILD_DIR/test/fuzz/logs/TARGET.log.
# FUZZ_JOBS targets (default: the number of CPUs) run at once, each for
# its full SECONDS on a core of its own. Prints one line per target (runs,
# executions per second, coverage) as each ends, and exits 1 if any target
# crashed, leaked, timed out or ran out of memory.
set -uo pipefail

if [ $# -lt 2 ]; then
    echo "usage: $0 BUILD_DIR SECONDS [TARGET...]" >&2
    exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
bin=$(cd "$1" && pwd)/test/fuzz
secs=$2
shift 2
if [ $# -gt 0 ]; then
    targets=("$@")
else
    targets=()
    for exe in "$bin"/fuzz_*; do
        [ -x "$exe" ] && [ -f "$exe" ] && targets+=("$(basename "$exe")")
    done
fi
if [ ${#targets[@]} -eq 0 ]; then
    echo "fuzz: no targets built in $bin" >&2
    exit 1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/redlock-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$bin/artifacts" "$bin/logs"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# fuzz_target T: steps 1 and 2 for target T; returns 1 if it failed.
fuzz_target() {
    local t=$1 exe=$bin/$1 log=$bin/logs/$1.log replay f rc runs speed cov args fail=0
    if [ ! -x "$exe" ]; then
        echo "fuzz: $t: not built" >&2
        return 1
    fi
    : > "$log"

    # 1. saved crash inputs (regressions)
    if [ -d "$here/crashes/$t" ] && [ -n "$(ls -A "$here/crashes/$t")" ]; then
        replay=$bin/logs/$t.replay.log
        : > "$replay"
        for f in "$here/crashes/$t"/*; do
            if ! "$exe" -runs=1 "$f" >> "$replay" 2>&1; then
                echo "fuzz: $t: saved input crashes/$t/$(basename "$f") still fails (see $replay)" >&2
                fail=1
            fi
        done
    fi

    # 2. a bounded run on a scratch copy of the seeds
    mkdir -p "$work/$t"
    if [ -d "$here/corpus/$t" ]; then cp "$here/corpus/$t"/* "$work/$t"/ 2>/dev/null; fi
    args=(-max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
          -artifact_prefix="$bin/artifacts/$t-")
    [ -f "$here/dict/$t.dict" ] && args+=(-dict="$here/dict/$t.dict")
    "$exe" "${args[@]}" "$work/$t" >> "$log" 2>&1
    rc=$?
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
    cov=$(grep -oE 'cov: [0-9]+ ft: [0-9]+ corp: [0-9]+/[0-9]+[a-zA-Z]*' "$log" | tail -n 1)
    if [ $rc -eq 0 ]; then
        printf 'fuzz: %-14s ok      %9s runs  %6s exec/s  %s\n' "$t" "${runs:-?}" "${speed:-?}" "$cov"
    else
        # one write, so that lines of targets running beside it do not cut in
        { printf 'fuzz: %-14s FAILED  %9s runs  (exit %d; input saved in %s)\n' "$t" "${runs:-?}" $rc "$bin/artifacts"
          grep -E 'invariant failed|ERROR: |SUMMARY: |Test unit written' "$log" | head -n 8; } | cat >&2
        fail=1
    fi
    return $fail
}

# At most FUZZ_JOBS targets at once; each leaves its verdict in $work/T.rc.
jobs_max=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 1)}
[[ $jobs_max =~ ^[1-9][0-9]*$ ]] || jobs_max=1
for t in "${targets[@]}"; do
    while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do wait -n; done
    ( fuzz_target "$t"; echo $? > "$work/$t.rc" ) &
done
wait
fail=0
for t in "${targets[@]}"; do
    [ "$(cat "$work/$t.rc" 2>/dev/null)" = 0 ] || fail=1
done
exit $fail

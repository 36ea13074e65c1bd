#!/usr/bin/env bash
# soak.sh [SECONDS] -- `make soak`: a randomised schedule of the faults that
# lie within Redlock's assumptions, against one 5-node cluster, for SECONDS
# (default $SOAK_SECONDS, else 300), while 3 worker processes of 2 threads
# contend for one lock. Then the checker judges the whole history and a
# summary is printed: acquisitions, faults by kind, overlaps, lost updates,
# stale writes and the slowest recovery after a heal.
#
# The topology is the partition one (lib.sh netns_setup): clients in one
# network namespace, each node reached over its own veth pair, so every
# fault kind can be drawn. Nodes persist with appendonly yes + appendfsync
# always, so an immediate restart is within the assumptions; the delayed
# restart deletes the node's data first (--flush) and waits TTL + 0.3-2 s.
# One fault is active at a time; after each heal the schedule waits for the
# next acquisition (at most FAULT_LIVENESS_MS) and a short calm.
#
# Fault kinds: pause_minority (SIGSTOP 1-2 nodes), pause_majority (3-4),
# kill_restart_persist (kill -9 1-3 nodes, restart at once), restart_delayed
# (kill -9 1-3 nodes, restart empty after more than the TTL),
# partition_minority / partition_majority (iptables DROP to 1-2 / 3-4 nodes),
# slow_node (DEBUG SLEEP 0.1-2 s on one node), clock_jump (SIMULATED: one
# node's TTLs cut by half the TTL, a few times). Durations 0.5-3 s.
#
# Exit status: 0 when the checker found no violation and liveness held.
set -euo pipefail
NAME=soak # read by lib.sh
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SOAK_SECONDS=${1:-${SOAK_SECONDS:-300}}
if ! [[ $SOAK_SECONDS =~ ^[0-9]+$ ]] || ((10#$SOAK_SECONDS == 0)); then die "SOAK_SECONDS must be a positive number of seconds"; fi
FAULT_TIMEOUT_S=$((10#$SOAK_SECONDS + 300))
TTL=1000
LIVENESS_MS=${FAULT_LIVENESS_MS:-4000}
KINDS=(pause_minority pause_majority kill_restart_persist restart_delayed partition_minority partition_majority
  slow_node clock_jump)
declare -A COUNT=()
for k in "${KINDS[@]}"; do COUNT[$k]=0; done
RECOVERY_WAITS=0

# pick K: sets PICKED to K distinct random node indexes.
pick() { mapfile -t PICKED < <(shuf -i 0-$((N_NODES - 1)) -n "$1"); }
rand() { echo $(($1 + RANDOM % ($2 - $1 + 1))); }

# wait_recovered HEAL_US: waits until a worker logs an acquisition made
# after HEAL_US (records are appended after each release), at most
# LIVENESS_MS; only the bytes appended since the heal are scanned.
declare -A OFFSET=()
mark_logs() {
  local f
  for f in "$RUN"/hist/*.log; do OFFSET[$f]=$(stat -c %s "$f"); done
}
wait_recovered() {
  local heal=$1 limit f
  limit=$((heal + (LIVENESS_MS + 1000) * 1000))
  while (($(now_us) < limit)); do
    for f in "$RUN"/hist/*.log; do
      if tail -c +"$((${OFFSET[$f]:-0} + 1))" "$f" | awk -v h="$heal" '$1 == "R" && $6 >= h { f = 1; exit } END { exit !f }'; then
        return 0
      fi
    done
    sleep 0.1
  done
  log "no acquisition within $LIVENESS_MS ms of the heal (the checker will report it)"
  RECOVERY_WAITS=$((RECOVERY_WAITS + 1))
}

# run_fault KIND: applies one fault of KIND and heals it.
run_fault() {
  local kind=$1 d i live="" j
  d=$(rand 500 3000)
  ((d >= 1500)) && live=live
  case $kind in
    pause_minority)
      pick "$(rand 1 2)"
      event fault "$kind" "$live"
      for i in "${PICKED[@]}"; do cl pause "$i"; done
      sleep_ms "$d"
      for i in "${PICKED[@]}"; do cl resume "$i"; done ;;
    pause_majority)
      pick "$(rand 3 4)"
      event fault "$kind"
      for i in "${PICKED[@]}"; do cl pause "$i"; done
      sleep_ms "$d"
      for i in "${PICKED[@]}"; do cl resume "$i"; done ;;
    kill_restart_persist)
      pick "$(rand 1 3)"
      event fault "$kind"
      for i in "${PICKED[@]}"; do cl kill "$i"; done
      for i in "${PICKED[@]}"; do cl restart "$i"; done ;;
    restart_delayed)
      pick "$(rand 1 3)"
      event fault "$kind"
      for i in "${PICKED[@]}"; do cl kill "$i"; done
      sleep_ms $((TTL + $(rand 300 2000)))
      for i in "${PICKED[@]}"; do cl restart "$i" --flush; done ;;
    partition_minority)
      pick "$(rand 1 2)"
      event fault "$kind" "$live"
      partition "${PICKED[@]}"
      sleep_ms "$d"
      heal_partition ;;
    partition_majority)
      pick "$(rand 3 4)"
      event fault "$kind"
      partition "${PICKED[@]}"
      sleep_ms "$d"
      heal_partition ;;
    slow_node)
      pick 1
      d=$(rand 100 2000)
      live=""
      ((d >= 1500)) && live=live
      event fault "$kind" "$live"
      slow_node "${PICKED[0]}" "$((d / 1000)).$(printf '%03d' $((d % 1000)))" ;;
    clock_jump)
      pick 1
      event fault "$kind" "$live"
      for ((j = 0; j < d / 150; j++)); do
        jump_clock "${PICKED[0]}" $((TTL / 2))
        sleep 0.15
      done ;;
  esac
  mark_logs
  event heal "$kind"
  COUNT[$kind]=$((COUNT[$kind] + 1))
}

setup_run
netns_setup
cluster_start --persist
log "soak for $SOAK_SECONDS s: ${KINDS[*]}"
start_workers 3 2 $(((SOAK_SECONDS + 120) * 1000)) --ttl-ms "$TTL" --hold-ms 1-20 --margin-ms 200
event start soak
end=$((T0 + SOAK_SECONDS * 1000000))
sleep_ms 1000
while (($(now_us) < end)); do
  kind=${KINDS[RANDOM % ${#KINDS[@]}]}
  run_fault "$kind"
  wait_recovered "$(tail -n 1 "$RUN/hist/events" | awk '{print $2}')"
  sleep_ms "$(rand 300 1500)"
done
event end soak
log "schedule over; stopping the workers"
for p in "${WPIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
wait_workers 30000

rc=0
check --liveness-ms "$LIVENESS_MS" --min-acquisitions 100 >"$RUN/check.out" || rc=$?
grep -v '^    pid' "$RUN/check.out" | grep -vE '^  (heal|fault) ' || true
faults=0
for k in "${KINDS[@]}"; do faults=$((faults + COUNT[$k])); done
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$RESULT_LINE"; }
echo
echo "== soak summary ($SOAK_SECONDS s schedule, $(field duration_ms) ms of history)"
echo "   acquisitions       $(field acquisitions)"
list=""
for k in "${KINDS[@]}"; do list+="${list:+, }$k ${COUNT[$k]}"; done
echo "   faults             $faults: $list"
echo "   overlaps           $(field overlaps)"
echo "   lost updates       $(field lost_updates)"
echo "   stale writes       $(field stale_writes)"
echo "   liveness failures  $(field liveness_failures) (slowest recovery after a heal: $(field max_recovery_ms) ms)"
echo "   verdict            $(field verdict)"
exit "$rc"

#!/usr/bin/env bash
# scenario.sh NAME -- one fault-injection scenario (a CTest with label fault).
#
# Each scenario starts its own 5-master cluster with deploy/cluster.sh in a
# fresh temporary directory, runs several worker processes (test/fault/
# worker.c) that contend for one lock and read-modify-write a protected
# value, injects real faults on a schedule, then runs the checker
# (checker.c) on the merged histories. The EXIT trap always stops the
# cluster and removes whatever the scenario created (see lib.sh).
#
# Within the algorithm's assumptions (expected: no overlap, no lost update,
# an acquisition within FAULT_LIVENESS_MS of every heal, and acquisitions
# during every minority fault):
#   pause_minority        SIGSTOP 2 of 5 nodes for 3 s, then SIGCONT
#   pause_one             SIGSTOP 1 of 5 nodes for 4 s while 3 processes contend:
#                         it is suspect after its first timeout, then skipped,
#                         and rejoins after SIGCONT (doc/design.md, "A silent minority")
#   pause_rolling         silent minorities that change under contention: node 0
#                         paused, then node 3 too, node 0 resumed, node 1
#                         paused, all resumed -- one or two silent nodes for 4 s
#   pause_majority        SIGSTOP 3 of 5 nodes for 2.5 s (> TTL), then SIGCONT
#   kill_restart_persist  kill -9 3 of 5 nodes while a lock is held and restart
#                         them at once, twice; appendonly yes + appendfsync always
#   restart_delayed       kill -9 3 of 5 nodes while a lock is held, restart them
#                         empty (no persistence) after TTL + 1 s
#   partition_minority    iptables DROP between the clients and 2 of 5 nodes
#   partition_majority    iptables DROP between the clients and 3 of 5 nodes
#                         (clients and nodes in network namespaces this
#                         scenario creates, one veth pair per node)
#   slow_node             one node in DEBUG SLEEP 2 s, then 10 stalls of 150 ms
#   sentinel_failover     3 Sentinel groups (master + replica each), votes counted
#                         after replication (min_replicas 1), under contention:
#                         group 0's master killed (promoted replica after
#                         down-after 1 s) and restarted, healed once the
#                         sentinels made it the new master's replica (about
#                         10 s); then group 1 failed over by SENTINEL FAILOVER,
#                         healed the same way. A group without its replica
#                         cannot vote; the two others carry the lock
#   clock_jump            SIMULATED forward clock jumps on one node: its keys'
#                         TTLs cut by FAULT_JUMP_MS (500 = half the TTL, 40
#                         times the drift allowance) every 100-200 ms for 3 s.
#                         Safe because every holder finishes well before its
#                         key on the jumping node runs out (TTL - jump); see
#                         outside_clock_jump for when it does not
#   membership            the node set changes from OLD = nodes 0,1,2 to NEW =
#                         nodes 2,3,4 under contention, by `redlock membership`
#                         begin, advance and finish (doc/membership.md): old
#                         clients give way to joint ones, joint ones to new
#                         ones, while a forgotten old client tries all along;
#                         node 2 (in both lists) is killed and restarted with
#                         its data during begin, node 3 during finish. The
#                         forgotten client must be refused from advance on
#                         (outside_membership_bare shows the overlap without)
# Outside the assumptions (the checker MUST report the violation; the test
# passes when it does):
#   outside_restart_majority  kill -9 3 of 5 nodes while a lock is held and
#                         restart them at once WITHOUT persistence: a second
#                         client acquires while the first still holds
#   outside_paused_client a client stops (SIGSTOP) inside its critical
#                         section for 2.5 x TTL, is resumed, and writes
#                         without checking its validity
#   outside_membership_bare  membership's redeploys without its steps (no
#                         records): the forgotten old client and the new
#                         clients share only node 2, and both take the lock
#   outside_clock_jump    a third one: a holder with exactly a bare majority
#                         loses its key on one node to a SIMULATED clock jump
#                         past the TTL; a second client takes the lock
# Checker proofs (no cluster):
#   bypass                the workers skip the lock entirely; the checker
#                         must find overlaps and lost updates
#
# Environment: FAULT_WORKER, FAULT_CHECK, FAULT_CLI (the redlock tool),
# REDLOCK_CLUSTER_SH (CTest sets them), FAULT_KEEP=1 keeps the run directory, FAULT_LIVENESS_MS (4000),
# FAULT_JUMP_MS (clock_jump's simulated jump, default 500).
set -euo pipefail
NAME=${1:-}
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

TTL=1000
LIVENESS_MS=${FAULT_LIVENESS_MS:-4000}
JUMP_MS=${FAULT_JUMP_MS:-500}
PROCS=3
THREADS=2
COMMON=(--ttl-ms "$TTL" --hold-ms 1-8 --margin-ms 200)

# expect_safe: the verdict for the scenarios within the assumptions.
expect_safe() { check --liveness-ms "$LIVENESS_MS" --min-acquisitions 20 "$@"; }

kill_nodes() { local i; for i in "$@"; do cl kill "$i"; done; }
restart_nodes() { local i; for i in "$@"; do cl restart "$i" ${FLUSH:+--flush}; done; }

sc_bypass() {
  setup_run
  start_workers "$PROCS" "$THREADS" 3000 --nodes "" --no-lock --hold-ms 0-3 --retry-delay-ms 4 --retry-jitter-ms 0
  wait_workers 20000
  check --expect-violation overlap,lost
}

sc_sentinel_failover() {
  local m
  setup_run
  sentinel_start
  start_workers "$PROCS" "$THREADS" 90000 "${COMMON[@]}" --min-replicas 1 --op-timeout-ms 200
  at 1500
  m=$(group_master 0)
  event fault kill_master_g0 live
  cl kill "$m"
  at 4500
  cl restart "$m"
  await_replicated 0 40000
  event heal kill_master_g0
  sleep_ms 1000
  event fault failover_g1 live
  cl failover 1 -t 60000
  await_replicated 1 40000
  event heal failover_g1
  sleep_ms 3000
  end_workers
  wait_workers 20000
  expect_safe
}

sc_pause_minority() {
  setup_run
  cluster_start
  start_workers "$PROCS" "$THREADS" 60000 "${COMMON[@]}"
  at 1500
  event fault pause_minority live
  cl pause 0
  cl pause 1
  at 4500
  cl resume 0
  cl resume 1
  event heal pause_minority
  after_last_heal
  expect_safe
}

sc_pause_one() {
  setup_run
  cluster_start
  start_workers "$PROCS" "$THREADS" 60000 "${COMMON[@]}"
  at 1500
  event fault pause_one live
  cl pause 2
  at 5500
  cl resume 2
  event heal pause_one
  after_last_heal
  expect_safe
}

sc_pause_rolling() {
  setup_run
  cluster_start
  start_workers "$PROCS" "$THREADS" 60000 "${COMMON[@]}"
  at 1500
  event fault pause_rolling live
  cl pause 0
  at 2500
  cl pause 3
  at 3500
  cl resume 0
  at 4000
  cl pause 1
  at 5500
  cl resume 1
  cl resume 3
  event heal pause_rolling
  after_last_heal
  expect_safe
}

sc_pause_majority() {
  setup_run
  cluster_start
  start_workers "$PROCS" "$THREADS" 60000 "${COMMON[@]}"
  at 1500
  event fault pause_majority
  cl pause 0
  cl pause 1
  cl pause 2
  at 4000
  cl resume 0
  cl resume 1
  cl resume 2
  event heal pause_majority
  after_last_heal
  expect_safe
}

# Long holds so the holder is usually still inside its critical section
# when its nodes come back: only persistence keeps the others out.
# after_last_heal: the workload goes on for the liveness window after the
# last heal, then ends (a restart that took long under load would
# otherwise heal after a fixed-length workload had ended).
after_last_heal() {
  sleep_ms $((LIVENESS_MS + 1000))
  end_workers
  wait_workers 20000
}

sc_kill_restart_persist() {
  local round
  setup_run
  cluster_start --persist
  start_workers "$PROCS" "$THREADS" 60000 --ttl-ms 2000 --hold-ms 100-600 --margin-ms 300
  for round in 1500 5000; do
    at "$round"
    wait_lock_held 3 3000 || log "no lock held after 3 s; killing anyway"
    event fault kill_restart_persist
    kill_nodes 0 1 2
    restart_nodes 0 1 2
    event heal kill_restart_persist
    log "after the restart node 0 has the lock key with PTTL $(rcli 0 PTTL "$RESOURCE") ms (-2: released meanwhile)"
  done
  after_last_heal
  expect_safe --min-acquisitions 8
}

sc_restart_delayed() {
  setup_run
  cluster_start
  start_workers "$PROCS" "$THREADS" 60000 "${COMMON[@]}"
  at 1500
  wait_lock_held 3 3000 || log "no lock held after 3 s; killing anyway"
  event fault restart_delayed
  kill_nodes 0 1 2
  sleep_ms $((TTL + 1000))
  FLUSH=1 restart_nodes 0 1 2
  event heal restart_delayed
  after_last_heal
  expect_safe
}

sc_partition_minority() {
  setup_run
  netns_setup
  cluster_start
  start_workers "$PROCS" "$THREADS" 60000 "${COMMON[@]}"
  at 1500
  event fault partition_minority live
  partition 0 1
  at 4500
  heal_partition
  event heal partition_minority
  after_last_heal
  expect_safe
}

sc_partition_majority() {
  setup_run
  netns_setup
  cluster_start
  start_workers "$PROCS" "$THREADS" 60000 "${COMMON[@]}"
  at 1500
  event fault partition_majority
  partition 0 1 2
  at 4000
  heal_partition
  event heal partition_majority
  after_last_heal
  expect_safe
}

sc_slow_node() {
  local k
  setup_run
  cluster_start
  start_workers "$PROCS" "$THREADS" 60000 "${COMMON[@]}"
  at 1500
  event fault slow_node live
  slow_node 0 2
  for ((k = 0; k < 10; k++)); do
    slow_node 0 0.15
    sleep 0.1
  done
  event heal slow_node
  after_last_heal
  expect_safe
}

sc_clock_jump() {
  local limit
  setup_run
  cluster_start
  start_workers "$PROCS" "$THREADS" 60000 "${COMMON[@]}"
  at 1500
  log "SIMULATED clock jumps: node 0's key TTLs cut by $JUMP_MS ms every 100-200 ms (no real clock is changed)"
  event fault clock_jump live
  wall_ms
  limit=$((WALL_MS + 3000))
  while wall_ms && ((WALL_MS < limit)); do
    jump_clock 0 "$JUMP_MS"
    sleep_ms $((100 + RANDOM % 101))
  done
  event heal clock_jump
  after_last_heal
  expect_safe
}

# membership_change [bare]: sc_membership's schedule; bare: the redeploys
# alone, no step taken (no records: nothing refuses the forgotten client).
membership_change() {
  local -a u
  local old new done_us late refused bare=${1:-}
  setup_run
  cluster_start --persist
  IFS=, read -r -a u <<<"$URIS"
  old="${u[0]},${u[1]},${u[2]}" new="${u[2]},${u[3]},${u[4]}"
  member() {
    if [[ -n $bare ]]; then
      [[ $1 != advance ]] || sleep_ms $((TTL + 1000)) # (the wait alone)
      return 0
    fi
    # a step writes every node or none, and may be taken again: on a loaded
    # machine (the sanitizer runs) a node may miss the tool's timeouts once
    local try
    for try in 1 2 3; do
      "$FAULT_CLI" --connect-timeout 2s --op-timeout 2s --nodes "$old" --next-nodes "$new" membership "$@" \
        >>"$RUN/membership.out" 2>&1 && return 0
      log "redlock membership $* failed (try $try)"
    done
    cat "$RUN/membership.out" >&2
    die "redlock membership $* failed"
  }
  start_workers 1 "$THREADS" 16000 "${COMMON[@]}" --nodes "$old" # w0: the forgotten old client
  start_workers 1 "$THREADS" 3500 "${COMMON[@]}" --nodes "$old"
  at 1000
  member begin
  event note begun
  at 1500
  start_workers 2 "$THREADS" 8500 "${COMMON[@]}" --nodes "$old" --next-nodes "$new"
  at 2500
  event fault kill_restart_shared_node
  kill_nodes 2
  restart_nodes 2
  event heal kill_restart_shared_node
  at 4000
  member advance --max-ttl "${TTL}ms"
  done_us=$(now_us)
  event note advanced
  start_workers 2 "$THREADS" 12000 "${COMMON[@]}" --nodes "$new"
  at 10500
  member finish
  event note finished
  at 11500
  event fault kill_restart_new_node
  kill_nodes 3
  restart_nodes 3
  event heal kill_restart_new_node
  at 16000
  wait_workers 30000
  if [[ -n $bare ]]; then
    check --expect-violation overlap
    return
  fi
  expect_safe
  # the forgotten client: no grant once advance was done, and refusals
  late=$(awk -v t="$done_us" '$1 == "R" && $6 > t { n++ } END { print n + 0 }' "$RUN/hist/w0.log")
  refused=$(awk '$1 == "S" { for (i = 2; i < NF; i++) if ($i == "refused") print $(i + 1) }' "$RUN/hist/w0.log")
  log "forgotten old client: ${refused:-0} acquire calls refused by the records, $late granted after advance"
  ((late == 0)) || die "the forgotten old client was granted $late times after advance"
  ((${refused:-0} > 0)) || die "the forgotten old client was never refused"
}

sc_membership() { membership_change; }
sc_outside_membership_bare() { membership_change bare; }

sc_outside_restart_majority() {
  local round
  setup_run
  cluster_start
  # Holds of 2.5-3.5 s; the nodes are killed within 0.3 s of a fresh
  # acquisition and are back within about 0.5 s, and reconnects are capped
  # at 200 ms: the others compete for the wiped majority while the holder
  # still has 2 s or more of its critical section ahead.
  start_workers 2 2 10000 --ttl-ms 6000 --hold-ms 2500-3500 --margin-ms 500 --reconnect-max-ms 200
  for round in 0 5000; do
    at "$round"
    wait_lock_fresh 3 5700 4000 || log "no fresh lock within 4 s; restarting anyway"
    event fault restart_majority_no_persistence
    kill_nodes 0 1 2
    restart_nodes 0 1 2
    event note restart_majority_no_persistence
  done
  wait_workers 20000
  check --expect-violation overlap,lost
}

# Kleppmann's case, made deterministic: the holder gets exactly a bare
# majority (nodes 3 and 4 hold a foreign key that then vanishes), node 0's
# clock leaps past the TTL (SIMULATED by the TTL rewrite), and a second
# client wins nodes 0, 3 and 4 while the first still holds.
sc_outside_clock_jump() {
  setup_run
  cluster_start
  rcli 3 SET "$RESOURCE" foreign PX 30000 >/dev/null
  rcli 4 SET "$RESOURCE" foreign PX 30000 >/dev/null
  start_workers 1 1 8000 --ttl-ms 5000 --hold-ms 3000 --margin-ms 500 --max-acquisitions 1
  wait_lock_held 0 3000 || die "the first client did not acquire nodes 0-2"
  rcli 3 DEL "$RESOURCE" >/dev/null
  rcli 4 DEL "$RESOURCE" >/dev/null
  log "the holder has exactly nodes 0, 1, 2; SIMULATED clock jump: node 0's TTLs cut by 5000 ms"
  event fault clock_jump_bare_majority
  jump_clock 0 5000
  start_workers 1 1 4000 --ttl-ms 5000 --hold-ms 10-20 --margin-ms 500 --max-acquisitions 1
  wait_workers 20000
  check --expect-violation overlap,lost
}

sc_outside_paused_client() {
  local marker="" pid limit
  setup_run
  cluster_start
  start_workers "$PROCS" "$THREADS" 8000 "${COMMON[@]}"
  start_workers 1 1 8000 "${COMMON[@]}" --stall-at 2
  wall_ms
  limit=$((WALL_MS + 6000))
  while [[ -z $marker ]] && wall_ms && ((WALL_MS < limit)); do
    marker=$(compgen -G "$RUN/hist/stalled.*" | grep -v '\.tmp$' | head -n 1 || true)
    sleep 0.02
  done
  [[ -n $marker ]] || die "the stalling worker never reached its critical section"
  read -r pid _ <"$marker"
  event fault client_paused_past_ttl
  log "worker $pid stopped itself inside its critical section; resuming it in $((TTL * 5 / 2)) ms"
  sleep_ms $((TTL * 5 / 2))
  kill -CONT "$pid"
  event note client_resumed
  wait_workers 20000
  check --expect-violation lost,stale
}

case $NAME in
  bypass | pause_minority | pause_one | pause_rolling | pause_majority | kill_restart_persist | restart_delayed | partition_minority | \
    partition_majority | slow_node | clock_jump | sentinel_failover | membership | outside_membership_bare | \
    outside_restart_majority | \
    outside_paused_client | outside_clock_jump)
    "sc_$NAME" ;;
  *)
    echo "usage: $0 SCENARIO  (bypass pause_minority pause_one pause_rolling pause_majority kill_restart_persist" >&2
    echo "       restart_delayed" >&2
    echo "       partition_minority partition_majority slow_node clock_jump sentinel_failover membership" >&2
    echo "       outside_restart_majority outside_membership_bare" >&2
    echo "       outside_paused_client outside_clock_jump)" >&2
    exit 2 ;;
esac

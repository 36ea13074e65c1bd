# shellcheck shell=bash
# lib.sh -- the fault-injection harness, sourced by scenario.sh and soak.sh.
#
# A run lives in its own directory RUN (mktemp -d /tmp/redlock-fault.XXXXXX):
#   RUN/cluster/     the 5-node cluster, started and always stopped by us
#   RUN/value        the protected value (not a lock node): "COUNTER TAG"
#   RUN/hist/        wN.log (worker histories), events (the fault schedule)
#   RUN/wN.out       the workers' stdout/stderr
# The EXIT trap kills our workers and helpers (by pid), stops the cluster,
# deletes our network namespaces (which takes their veth pairs and iptables
# rules with them) and removes RUN, unless the run failed or FAULT_KEEP=1,
# in which case RUN keeps the histories and the node logs for a post-mortem.
#
# Environment: FAULT_WORKER, FAULT_CHECK, FAULT_CLI (the binaries; CTest sets them),
# REDLOCK_CLUSTER_SH (deploy/cluster.sh), FAULT_KEEP=1 (keep RUN),
# FAULT_TIMEOUT_S (default 150: the run ends itself, cleanly, after that).

set -euo pipefail
export LC_ALL=C

FAULT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$FAULT_DIR/../.." && pwd)
: "${FAULT_WORKER:=$ROOT/build/test/fault_worker}"
: "${FAULT_CHECK:=$ROOT/build/test/fault_check}"
: "${FAULT_CLI:=$ROOT/build/src/cli/redlock}"
: "${REDLOCK_CLUSTER_SH:=$ROOT/deploy/cluster.sh}"
CLUSTER_SH=$REDLOCK_CLUSTER_SH
RESOURCE=fault:resource
N_NODES=5

NAME=${NAME:-fault}
RUN=""
CDIR=""
NS_C=""          # client namespace (partition topology only)
NS_S=""          # server namespace
NSX_C=()         # prefix that runs a command in the client namespace
NSX_S=()         # ... in the server namespace
PORTS=()         # node ports
HOSTS=()         # node addresses as the clients see them
URIS=""          # comma-separated node URIs for the workers
WPIDS=()         # worker processes
BGPIDS=()        # background nemesis helpers
DROPPED=()       # node indexes whose traffic is dropped now
T0=0             # monotonic us when the workload started
RESULT_LINE=""   # the checker's FAULT-RESULT line

T0_MS=0          # the wall clock in ms at T0 (for log lines)

# now_us: the monotonic clock the workers' histories use (the checker's),
# for the schedule's events; a process per call.
now_us() { "$FAULT_CHECK" now; }

# wall_ms: sets WALL_MS to the wall clock in ms, without a process: for
# the deadlines of polling loops and the log's times.
wall_ms() {
  local t=${EPOCHREALTIME/[.,]/}
  WALL_MS=$((10#$t / 1000))
}

# log MSG: a timestamped line on stderr (seconds since the workload began).
log() {
  local ms
  wall_ms
  ms=$((WALL_MS - (T0_MS ? T0_MS : WALL_MS)))
  printf '[%s %3d.%03ds] %s\n' "$NAME" $((ms / 1000)) $((ms % 1000)) "$*" >&2
}

die() {
  log "FAIL: $*"
  exit 1
}

# event KIND NAME [live]: appends to the schedule the checker reads.
event() {
  printf 'E %s %s %s %s\n' "$(now_us)" "$1" "$2" "${3:-}" >>"$RUN/hist/events"
  log "event: $*"
}

# at MS: sleeps until MS milliseconds after the workload began.
at() {
  local t left
  t=$(now_us)
  left=$((T0 + $1 * 1000 - t))
  if ((left > 0)); then sleep "$((left / 1000000)).$(printf '%06d' $((left % 1000000)))"; fi
}

sleep_ms() { sleep "$(($1 / 1000)).$(printf '%03d' $(($1 % 1000)))"; }

# ------------------------------------------------------------------ setup

setup_run() {
  [[ -x $FAULT_WORKER ]] || die "no worker binary at $FAULT_WORKER (build first, or set FAULT_WORKER)"
  [[ -x $FAULT_CHECK ]] || die "no checker binary at $FAULT_CHECK (build first, or set FAULT_CHECK)"
  [[ -x $CLUSTER_SH ]] || die "no cluster script at $CLUSTER_SH"
  command -v redis-cli >/dev/null || die "redis-cli is missing (Debian package redis-tools)"
  RUN=$(mktemp -d /tmp/redlock-fault.XXXXXX)
  CDIR=$RUN/cluster
  mkdir -p "$RUN/hist"
  printf '%-63s\n' "0 init" >"$RUN/value"
  trap cleanup EXIT
  trap 'exit 130' INT TERM HUP
  # A run that hangs is ended by SIGTERM from this watchdog, so the EXIT
  # trap still cleans up (a SIGKILL, e.g. from a CTest timeout, would leave
  # the daemonized nodes and the namespaces behind).
  (
    sleep "${FAULT_TIMEOUT_S:-150}" &
    sp=$!
    trap 'kill "$sp" 2>/dev/null; exit 0' TERM
    wait "$sp"
    printf '[%s] FAIL: still running after %s s; stopping it\n' "$NAME" "${FAULT_TIMEOUT_S:-150}" >&2
    kill -TERM $$
  ) &
  BGPIDS+=($!)
  log "run directory $RUN"
}

# cleanup: the EXIT trap. Leaves no process, namespace, veth or rule behind.
cleanup() {
  local rc=$? p ns left deadline
  set +e
  trap - EXIT INT TERM HUP
  for p in "${BGPIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
  for p in "${WPIDS[@]}"; do
    kill -CONT "$p" 2>/dev/null
    kill -TERM "$p" 2>/dev/null
  done
  deadline=$((SECONDS + 5))
  for p in "${WPIDS[@]}" "${BGPIDS[@]}"; do
    while kill -0 "$p" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.05; done
    kill -KILL "$p" 2>/dev/null
    wait "$p" 2>/dev/null
  done
  if [[ -n $CDIR && -d $CDIR ]]; then
    if ((rc != 0)); then
      for p in "$CDIR"/node*/redis.log; do [[ -f $p ]] && cp "$p" "$RUN/$(basename "$(dirname "$p")").log"; done
    fi
    "$CLUSTER_SH" stop -d "$CDIR" >/dev/null 2>&1 || log "warning: cluster.sh stop failed in $CDIR"
  fi
  for ns in "$NS_C" "$NS_S"; do
    [[ -n $ns ]] || continue
    if ip netns list 2>/dev/null | grep -qw "$ns"; then
      for p in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
      ip netns del "$ns" 2>/dev/null || log "warning: could not delete network namespace $ns"
    fi
  done
  if [[ -n $RUN && -d $RUN ]]; then
    if ((rc == 0)) && [[ ${FAULT_KEEP:-0} != 1 ]]; then
      rm -rf -- "$RUN"
    else
      log "histories kept in $RUN"
    fi
  fi
  exit "$rc"
}

# ------------------------------------------------------------------ cluster

# cluster_start [--persist]: 5 masters in RUN/cluster (inside the server
# namespace when there is one); fills PORTS, HOSTS and URIS.
cluster_start() {
  local i
  "${NSX_S[@]}" "$CLUSTER_SH" start -n "$N_NODES" -d "$CDIR" "$@" >/dev/null 2>"$RUN/cluster-start.err" ||
    { cat "$RUN/cluster-start.err" >&2; die "cluster.sh start failed"; }
  URIS=""
  for ((i = 0; i < N_NODES; i++)); do
    read -r "PORTS[i]" <"$CDIR/node$i/port"
    if [[ -n $NS_S ]]; then
      HOSTS[i]=10.199.$i.2
      # The node is a separate host for the clients: listen on its veth
      # address too, and keep it in redis.conf for restarts.
      rcli "$i" CONFIG SET bind "127.0.0.1 ${HOSTS[i]}" >/dev/null || die "node $i: CONFIG SET bind failed"
      rcli "$i" CONFIG REWRITE >/dev/null || die "node $i: CONFIG REWRITE failed"
    else
      HOSTS[i]=127.0.0.1
    fi
    URIS+="${URIS:+,}redis://${HOSTS[i]}:${PORTS[i]}"
  done
  log "cluster up: $URIS${NS_S:+ (nodes in namespace $NS_S, clients in $NS_C)}"
}

# sentinel_start: 3 Sentinel groups of a master and a replica, watched by 3
# sentinels (down-after 1000 ms), in RUN/cluster; fills URIS (one node per
# group). Members are addressed G.M (cl kill 0.1), see group_master.
sentinel_start() {
  "$CLUSTER_SH" start -n 3 --sentinels 3 --replicas 1 --down-after 1000 -d "$CDIR" >/dev/null \
    2>"$RUN/cluster-start.err" || { cat "$RUN/cluster-start.err" >&2; die "cluster.sh start --sentinels failed"; }
  URIS=$(paste -sd, "$CDIR/nodes")
  log "sentinel groups up: $URIS"
}

# group_master G: prints G.M, the member of Sentinel group G its sentinels
# name master now.
group_master() {
  local port
  port=$("$CLUSTER_SH" master "$1" -d "$CDIR" 2>>"$RUN/cluster.err") || die "cluster.sh master $1 failed"
  awk -v g="$1" -v p="$port" '$1 == g && $3 == p { print g "." $2; found = 1 } END { exit !found }' "$CDIR/members" ||
    die "group $1's master (port $port) is not a member"
}

# await_replicated G TIMEOUT_MS: waits until Sentinel group G's master has
# its replica online again (after a failover the sentinels reconfigure the
# old master as a replica at their next look, about 10 s); dies on timeout.
await_replicated() {
  local limit port
  wall_ms
  limit=$((WALL_MS + $2))
  while wall_ms && ((WALL_MS < limit)); do
    port=$("$CLUSTER_SH" master "$1" -d "$CDIR" 2>/dev/null) &&
      timeout 5 redis-cli -p "$port" INFO replication 2>/dev/null | grep -q '^slave0:.*state=online' && return 0
    sleep 0.1
  done
  die "group $1's master has no replica online after $2 ms"
}

# end_workers: asks every worker to finish its current cycle and stop.
end_workers() {
  local p
  for p in "${WPIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
}

# cl VERB [I] [args]: deploy/cluster.sh on our cluster.
cl() {
  "${NSX_S[@]}" "$CLUSTER_SH" "$@" -d "$CDIR" >/dev/null 2>>"$RUN/cluster.err" ||
    { tail -n 5 "$RUN/cluster.err" >&2; die "cluster.sh $* failed"; }
}

# rcli I ARGS...: redis-cli against node I from the nodes' own host.
rcli() {
  local i=$1
  shift
  "${NSX_S[@]}" timeout 5 redis-cli -h 127.0.0.1 -p "${PORTS[i]}" "$@"
}

# wait_lock_held I TIMEOUT_MS: waits until node I holds the lock key (a
# client is inside its critical section, or about to be); 1 on timeout.
wait_lock_held() {
  local i=$1 limit
  wall_ms
  limit=$((WALL_MS + $2))
  while wall_ms && ((WALL_MS < limit)); do
    [[ $(rcli "$i" EXISTS "$RESOURCE" 2>/dev/null) == 1 ]] && return 0
    sleep 0.01
  done
  return 1
}

# wait_lock_fresh I MIN_PTTL_MS TIMEOUT_MS: waits until node I holds the
# lock key with at least MIN_PTTL_MS left (a holder that acquired it just
# now, with most of its critical section ahead); 1 on timeout.
wait_lock_fresh() {
  local i=$1 limit t
  wall_ms
  limit=$((WALL_MS + $3))
  while wall_ms && ((WALL_MS < limit)); do
    t=$(rcli "$i" PTTL "$RESOURCE" 2>/dev/null) || t=-2
    [[ $t =~ ^[0-9]+$ ]] && ((t >= $2)) && return 0
    sleep 0.01
  done
  return 1
}

# ------------------------------------------------------------------ network

# netns_setup: the partition topology. Clients run in namespace NS_C, the
# nodes in NS_S; node I is reached over its own veth pair, client side
# 10.199.I.1/30, node side 10.199.I.2/30. Addresses exist only inside these
# two namespaces, so no packet of the test ever leaves them.
netns_setup() {
  local i c s
  local need="the partition scenarios need root, iproute2 ('ip netns', veth) and iptables (Debian package iptables)"
  (($(id -u) == 0)) || die "not root: $need"
  command -v ip >/dev/null || die "no 'ip' command: $need"
  command -v iptables >/dev/null || die "no 'iptables' command: $need"
  NS_C=rlfault$$c
  NS_S=rlfault$$s
  ip netns add "$NS_C" || die "ip netns add $NS_C failed: $need"
  ip netns add "$NS_S" || die "ip netns add $NS_S failed: $need"
  NSX_C=(ip netns exec "$NS_C")
  NSX_S=(ip netns exec "$NS_S")
  "${NSX_C[@]}" ip link set lo up
  "${NSX_S[@]}" ip link set lo up
  for ((i = 0; i < N_NODES; i++)); do
    c=rf$$c$i
    s=rf$$s$i
    ip link add "$c" netns "$NS_C" type veth peer name "$s" netns "$NS_S" || die "cannot create veth pair $c/$s: $need"
    "${NSX_C[@]}" ip addr add "10.199.$i.1/30" dev "$c"
    "${NSX_S[@]}" ip addr add "10.199.$i.2/30" dev "$s"
    "${NSX_C[@]}" ip link set "$c" up
    "${NSX_S[@]}" ip link set "$s" up
  done
  "${NSX_C[@]}" iptables -w -L OUTPUT -n >/dev/null 2>&1 || die "iptables does not work in namespace $NS_C: $need"
  log "network: client namespace $NS_C, server namespace $NS_S, $N_NODES veth pairs"
}

# reachable I: 0 when node I answers PING from the client namespace.
reachable() {
  [[ $("${NSX_C[@]}" timeout 0.5 redis-cli -h "${HOSTS[$1]}" -p "${PORTS[$1]}" PING 2>/dev/null) == PONG ]]
}

# healed I: 0 once node I answers PING again, trying for up to 5 s (a
# loaded machine may take more than one try's 0.5 s to answer).
healed() {
  local try
  for ((try = 0; try < 10; try++)); do reachable "$1" && return 0; done
  return 1
}

# probe WANT I...: checks in parallel that every node I is reachable
# (WANT up, within healed's bound) or not (WANT down) from the clients;
# dies naming the first that is not as expected.
probe() {
  local want=$1 i st
  shift
  local -A pid=()
  for i in "$@"; do
    if [[ $want == up ]]; then healed "$i" & else reachable "$i" & fi
    pid[$i]=$!
  done
  for i in "$@"; do
    st=0
    wait "${pid[$i]}" || st=$?
    if [[ $want == down && $st == 0 ]]; then
      die "iptables DROP had no effect: node $i still answers through the partition"
    fi
    if [[ $want == up && $st != 0 ]]; then die "node $i unreachable after the partition healed"; fi
  done
}

# partition I...: drops every packet between the clients and nodes I...
# (both directions, in the client namespace), then proves it took effect.
partition() {
  local i
  for i in "$@"; do
    "${NSX_C[@]}" iptables -w -A OUTPUT -d "${HOSTS[i]}" -j DROP || die "iptables -A OUTPUT failed"
    "${NSX_C[@]}" iptables -w -A INPUT -s "${HOSTS[i]}" -j DROP || die "iptables -A INPUT failed"
    DROPPED+=("$i")
  done
  probe down "$@"
}

# heal_partition: removes every DROP rule and checks the nodes answer again.
heal_partition() {
  local i
  for i in "${DROPPED[@]}"; do
    "${NSX_C[@]}" iptables -w -D OUTPUT -d "${HOSTS[i]}" -j DROP
    "${NSX_C[@]}" iptables -w -D INPUT -s "${HOSTS[i]}" -j DROP
  done
  probe up "${DROPPED[@]}"
  DROPPED=()
}

# ------------------------------------------------------------------ faults

# jump_clock I JUMP_MS: a SIMULATED forward jump of node I's clock by
# JUMP_MS: every key's remaining TTL shrinks by JUMP_MS (keys that had less
# left expire now), as if the node's wall clock had leapt ahead. Debian's
# redis-server cannot run under libfaketime, so this rewrite stands in for
# a real clock step; it is one atomic script on that node.
JUMP_LUA='local n = 0
for _, k in ipairs(redis.call("KEYS", "*")) do
  local t = redis.call("PTTL", k)
  if t > 0 then
    if t > tonumber(ARGV[1]) then redis.call("PEXPIRE", k, t - tonumber(ARGV[1])) else redis.call("DEL", k) end
    n = n + 1
  end
end
return n'
jump_clock() {
  rcli "$1" EVAL "$JUMP_LUA" 0 "$2" >/dev/null || die "node $1: clock-jump script failed"
}

# slow_node I SECONDS: node I stops answering for SECONDS (DEBUG SLEEP; the
# command returns when the node wakes up).
slow_node() {
  rcli "$1" DEBUG SLEEP "$2" >/dev/null 2>&1 || die "node $1: DEBUG SLEEP failed"
}

# ------------------------------------------------------------------ workload

# start_workers PROCS THREADS DURATION_MS [worker options...]: PROCS
# processes of THREADS contending threads each (in the client namespace
# when there is one).
start_workers() {
  local procs=$1 threads=$2 dur=$3 p k
  shift 3
  k=${#WPIDS[@]}
  T0=${T0:-0}
  if ((T0 == 0)); then
    T0=$(now_us)
    wall_ms
    T0_MS=$WALL_MS
  fi
  for ((p = k; p < k + procs; p++)); do
    "${NSX_C[@]}" "$FAULT_WORKER" --nodes "$URIS" --resource "$RESOURCE" --value "$RUN/value" \
      --log "$RUN/hist/w$p.log" --threads "$threads" --duration-ms "$dur" "$@" >"$RUN/w$p.out" 2>&1 &
    WPIDS+=($!)
  done
}

# wait_workers TIMEOUT_MS: waits for every worker; fails on a worker error
# or one that outlives the timeout.
wait_workers() {
  local p limit rc=0 st
  wall_ms
  limit=$((WALL_MS + $1))
  for p in "${WPIDS[@]}"; do
    while kill -0 "$p" 2>/dev/null; do
      wall_ms
      ((WALL_MS < limit)) || die "worker $p still running ${1} ms after the workload's end"
      sleep 0.05
    done
    st=0
    wait "$p" || st=$?
    if ((st != 0)); then
      log "worker $p exited with status $st:"
      sed 's/^/    /' "$RUN"/w*.out >&2
      rc=1
    fi
  done
  WPIDS=()
  ((rc == 0)) || die "a worker failed"
}

# check ARGS...: runs the checker on the histories; prints its report.
check() {
  local rc=0 out
  out=$("$FAULT_CHECK" check --dir "$RUN/hist" --value "$RUN/value" --name "$NAME" "$@") || rc=$?
  printf '%s\n' "$out"
  RESULT_LINE=$(grep '^FAULT-RESULT' <<<"$out" || true)
  return "$rc"
}

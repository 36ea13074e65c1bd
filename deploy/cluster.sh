#!/usr/bin/env bash
# cluster.sh - run N independent local redis-server masters (no replication,
# no Redis Cluster) for libredlock's tests, demos and benchmarks.
#
# Layout of a cluster directory DIR:
#   DIR/.redlock-cluster   marker: this directory was made by cluster.sh
#   DIR/n                  number of nodes
#   DIR/nodes              one URI per line: redis://127.0.0.1:PORT
#   DIR/nodes.unix         (--unix only) one URI per line: unix:///DIR/nodeI/redis.sock
#   DIR/nodeI/             redis.conf, port, redis.pid, redis.log, redis.sock, data/
#
# stdout carries only the requested data (URIs, status lines, usage);
# every diagnostic goes to stderr.  Run `cluster.sh help` for usage.
set -euo pipefail
export LC_ALL=C

PROG=${0##*/}
REDIS_SERVER=${REDIS_SERVER:-redis-server}
REDIS_CLI=${REDIS_CLI:-redis-cli}
MARKER=.redlock-cluster
PORT_MIN=20000
PORT_MAX=59999
READY_TIMEOUT_MS=5000   # per launch: time allowed until the node answers
TERM_TIMEOUT_MS=2000    # stop: SIGTERM grace period before SIGKILL
BIND_TRIES=5            # launches per node when its port turns out taken
MAX_NODES=64

# Options (filled by parse_args).
VERB=""
DIR=""
N=5
INDEX=""
PERSIST=0
UNIX=0
FLUSH=0

# Per-node bookkeeping used while waiting for launches (indexed by node).
declare -a LOGOFF=() DEADLINE=() TRIES=()
declare -A TAKEN=()     # ports seen in use or already handed out
NOW=0
PICKED=0
REAP=()                 # pids stopped by stop_nodes (for wait_reaped)

usage() {
  cat <<EOF
Usage: $PROG VERB [options]

  start [-n N] [-d DIR] [--persist] [--unix]
        Start N (default 5) independent redis-server masters on free loopback
        ports. DIR defaults to \$REDLOCK_CLUSTER_DIR, else a new
        mktemp -d /tmp/redlock-cluster.XXXXXX. A cluster already running in DIR
        is stopped first. --persist: appendonly yes + appendfsync always.
        --unix: each node also listens on DIR/nodeI/redis.sock (DIR/nodes.unix).
        Prints the node URIs (DIR/nodes), one per line, and nothing else.
  stop [-d DIR]
        Stop every node (SIGCONT, SIGTERM, SIGKILL after 2 s) and remove DIR.
        Succeeds when nothing is running; safe to call twice.
  status [-d DIR]
        One line per node: INDEX URI PID STATE (STATE: up, paused or down).
  pause I | resume I | kill I [-d DIR]
        SIGSTOP / SIGCONT / SIGKILL node I (0-based). kill removes the pid file.
  restart I [--flush] [-d DIR]
        (Re)start node I on the same port with the same config, killing it
        first if it still runs. --flush deletes its data files first (a restart
        that lost everything). Waits until it answers PING.
  uris [--unix] [-d DIR]
        Print DIR/nodes (or DIR/nodes.unix).
  help  Print this text.

Every verb but start needs -d DIR or \$REDLOCK_CLUSTER_DIR.
Exit status: 0 ok, 1 failure, 2 usage error.
EOF
}

log() { printf '%s: %s\n' "$PROG" "$*" >&2; }
die() { log "error: $*"; exit 1; }
usage_error() { log "$*"; log "run '$PROG help' for usage"; exit 2; }

# now_ms: sets NOW to the wall clock in milliseconds (no subshell).
now_ms() { local us=${EPOCHREALTIME//[!0-9]/}; NOW=$((us / 1000)); }

# ---------------------------------------------------------------- arguments

parse_args() {
  [[ $# -gt 0 ]] || usage_error "missing verb"
  VERB=$1
  shift
  while [[ $# -gt 0 ]]; do
    case $1 in
      -n) [[ $# -ge 2 ]] || usage_error "-n needs a value"; N=$2; shift 2 ;;
      -d) [[ $# -ge 2 ]] || usage_error "-d needs a value"; DIR=$2; shift 2 ;;
      --persist) PERSIST=1; shift ;;
      --unix) UNIX=1; shift ;;
      --flush) FLUSH=1; shift ;;
      -h|--help) VERB=help; shift ;;
      [0-9]*)
        [[ $1 =~ ^[0-9]+$ && -z $INDEX ]] || usage_error "bad argument '$1'"
        INDEX=$((10#$1)); shift ;;
      *) usage_error "unknown argument '$1'" ;;
    esac
  done
  if ! [[ $N =~ ^[0-9]+$ ]] || ((10#$N < 1 || 10#$N > MAX_NODES)); then
    usage_error "-n must be 1..$MAX_NODES"
  fi
  N=$((10#$N))
}

# resolve_dir: makes DIR absolute from -d or $REDLOCK_CLUSTER_DIR (or fails).
resolve_dir() {
  if [[ -z $DIR ]]; then DIR=${REDLOCK_CLUSTER_DIR:-}; fi
  [[ -n $DIR ]] || usage_error "no cluster directory: use -d DIR or set REDLOCK_CLUSTER_DIR"
  DIR=$(realpath -m -- "$DIR")
  [[ $DIR != / ]] || die "refusing to use / as cluster directory"
  [[ $DIR != *[\"\\]* ]] || die "cluster directory must not contain '\"' or '\\'"
}

# is_cluster_dir: true when DIR was made by cluster.sh.
is_cluster_dir() { [[ -f $DIR/$MARKER || -f $DIR/nodes ]]; }

# need_cluster: fails unless DIR is a cluster directory.
need_cluster() { is_cluster_dir || die "no cluster in $DIR"; }

# node_count: sets NODES to the number of nodes in DIR.
node_count() {
  NODES=0
  if [[ -s $DIR/n ]]; then read -r NODES <"$DIR/n" || true; return 0; fi
  while [[ -d $DIR/node$NODES ]]; do NODES=$((NODES + 1)); done
}

# need_index: fails unless INDEX names an existing node.
need_index() {
  [[ -n $INDEX ]] || usage_error "$VERB needs a node index"
  node_count
  ((INDEX < NODES)) || die "node $INDEX does not exist (cluster has $NODES nodes)"
}

# node_port I: sets PORT to node I's port.
node_port() { PORT=""; read -r PORT <"$DIR/node$1/port" || true; }

# ---------------------------------------------------------------- processes

# proc_state PID: sets PSTATE to the /proc state letter ("" if gone).
proc_state() {
  local stat=""
  PSTATE=""
  { read -r stat <"/proc/$1/stat"; } 2>/dev/null || return 0
  stat=${stat##*) }
  PSTATE=${stat%% *}
}

# is_alive PID: true while PID exists and is not a zombie.
is_alive() {
  proc_state "$1"
  [[ -n $PSTATE && $PSTATE != Z && $PSTATE != X ]]
}

# is_ours PID: true when PID is a live redis-server whose working directory
# (redis chdirs to its `dir`) is one of DIR's node data directories.
is_ours() {
  local comm="" cwd=""
  { read -r comm <"/proc/$1/comm"; } 2>/dev/null || return 1
  [[ $comm == redis-server ]] || return 1
  cwd=$(readlink "/proc/$1/cwd" 2>/dev/null) || return 1
  [[ $cwd =~ ^(.*)/node[0-9]+/data$ && ${BASH_REMATCH[1]} == "$DIR" ]]
}

# node_pid I: sets PID to node I's running (possibly paused) redis-server;
# returns 1 (PID empty) when the node is down or the pid file is stale.
node_pid() {
  PID=""
  local f=$DIR/node$1/redis.pid p=""
  [[ -s $f ]] || return 1
  read -r p <"$f" || true
  [[ $p =~ ^[0-9]+$ ]] && is_alive "$p" && is_ours "$p" || return 1
  PID=$p
}

# wait_dead TIMEOUT_MS PID...: waits until every PID is gone or a zombie;
# returns 1 if some are still alive at the deadline.
wait_dead() {
  local limit=$1 p alive
  shift
  now_ms
  limit=$((NOW + limit))
  while :; do
    alive=0
    for p in "$@"; do
      if is_alive "$p"; then alive=1; break; fi
    done
    ((alive)) || return 0
    now_ms
    ((NOW < limit)) || return 1
    sleep 0.02
  done
}

# wait_reaped TIMEOUT_MS PID...: waits until zombies among PID are reaped by
# their parent (a lazy init leaves them around for a while); never fails.
wait_reaped() {
  local limit=$1 p left
  shift
  now_ms
  limit=$((NOW + limit))
  while :; do
    left=0
    for p in "$@"; do
      if [[ -e /proc/$p ]]; then left=1; break; fi
    done
    ((left)) || return 0
    now_ms
    ((NOW < limit)) || return 0
    sleep 0.05
  done
}

# cluster_pids: sets PIDS to every redis-server of DIR (pid files, plus a
# /proc scan by working directory to catch nodes without a pid file yet).
cluster_pids() {
  local -A seen=()
  local f p d
  PIDS=()
  for f in "$DIR"/node*/redis.pid; do
    [[ -s $f ]] || continue
    read -r p <"$f" || true
    if [[ $p =~ ^[0-9]+$ ]] && is_alive "$p" && is_ours "$p"; then seen[$p]=1; fi
  done
  for d in /proc/[0-9]*; do
    p=${d#/proc/}
    [[ -z ${seen[$p]:-} ]] || continue
    if is_ours "$p" && is_alive "$p"; then seen[$p]=1; fi
  done
  PIDS=("${!seen[@]}")
}

# stop_nodes: terminates every redis-server of DIR; 1 if one survives.
stop_nodes() {
  local p
  cluster_pids
  rm -f "$DIR"/node*/redis.pid
  ((${#PIDS[@]})) || return 0
  log "stopping ${#PIDS[@]} redis-server process(es) in $DIR"
  for p in "${PIDS[@]}"; do kill -CONT "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  if ! wait_dead "$TERM_TIMEOUT_MS" "${PIDS[@]}"; then
    log "SIGTERM grace period over, sending SIGKILL"
    for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
    if ! wait_dead 2000 "${PIDS[@]}"; then
      log "error: redis-server still alive after SIGKILL: ${PIDS[*]}"
      return 1
    fi
  fi
  REAP+=("${PIDS[@]}")
}

# kill_node I: SIGCONT + SIGKILL node I if it runs, waits for its death and
# removes its pid file; 1 if it survives.
kill_node() {
  if node_pid "$1"; then
    kill -CONT "$PID" 2>/dev/null || true
    kill -KILL "$PID" 2>/dev/null || true
    wait_dead 2000 "$PID" || { log "error: node $1 (pid $PID) survived SIGKILL"; return 1; }
  fi
  rm -f "$DIR/node$1/redis.pid"
}

# ---------------------------------------------------------------- ports

# scan_ports: marks every local TCP port in use (any state) as taken.
scan_ports() {
  local line port
  while read -r line; do
    port=${line##*:}
    if [[ $port =~ ^[0-9]+$ ]]; then TAKEN[$port]=1; fi
  done < <(ss -tanH 2>/dev/null | awk '{print $4}')
}

# pick_port: sets PICKED to a random untaken loopback port in
# PORT_MIN..PORT_MAX, avoiding the kernel's ephemeral range when that leaves
# enough ports (a killed node's port must still be free at its restart).
pick_port() {
  local elo=0 ehi=0 lo1=$PORT_MIN hi1=$PORT_MAX lo2=1 hi2=0 n1 n2 r try
  if read -r elo ehi </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null; then
    if ((elo > PORT_MIN && ehi >= elo)); then
      hi1=$((elo - 1 < PORT_MAX ? elo - 1 : PORT_MAX))
      lo2=$((ehi + 1)); hi2=$PORT_MAX
    fi
    if ((hi1 - lo1 + 1 + (hi2 >= lo2 ? hi2 - lo2 + 1 : 0) < 2000)); then
      lo1=$PORT_MIN; hi1=$PORT_MAX; lo2=1; hi2=0
    fi
  fi
  n1=$((hi1 - lo1 + 1))
  n2=$((hi2 >= lo2 ? hi2 - lo2 + 1 : 0))
  for ((try = 0; try < 1000; try++)); do
    r=$(((${SRANDOM:-$((RANDOM << 15 | RANDOM))}) % (n1 + n2)))
    if ((r < n1)); then PICKED=$((lo1 + r)); else PICKED=$((lo2 + r - n1)); fi
    if [[ -z ${TAKEN[$PICKED]:-} ]]; then TAKEN[$PICKED]=1; return 0; fi
  done
  die "no free port found in $PORT_MIN..$PORT_MAX"
}

# ---------------------------------------------------------------- nodes

# write_conf I PORT: writes node I's redis.conf and port file.
write_conf() {
  local i=$1 port=$2 nd=$DIR/node$1
  {
    printf '# generated by cluster.sh: node %d of %s\n' "$i" "$DIR"
    printf 'bind 127.0.0.1\nport %d\nprotected-mode no\n' "$port"
    printf 'daemonize yes\nsupervised no\nalways-show-logo no\n'
    printf 'pidfile "%s/redis.pid"\nlogfile "%s/redis.log"\ndir "%s/data"\n' "$nd" "$nd" "$nd"
    printf 'save ""\n'
    if ((PERSIST)); then
      printf 'appendonly yes\nappendfsync always\n'
    else
      printf 'appendonly no\n'
    fi
    printf 'enable-debug-command yes\n'
    if ((UNIX)); then
      printf 'unixsocket "%s/redis.sock"\nunixsocketperm 700\n' "$nd"
    fi
  } >"$nd/redis.conf"
  printf '%d\n' "$port" >"$nd/port"
}

# launch_node I: starts node I from its redis.conf (redis daemonizes itself);
# remembers where its new log starts and when it must answer.
launch_node() {
  local i=$1 nd=$DIR/node$1
  rm -f "$nd/redis.pid"
  LOGOFF[i]=$(stat -c %s "$nd/redis.log" 2>/dev/null || echo 0)
  now_ms
  DEADLINE[i]=$((NOW + READY_TIMEOUT_MS))
  # A subshell that closes inherited descriptors (e.g. a test runner's
  # sockets) so the daemon keeps none of them open.
  (
    for fd in "/proc/$BASHPID/fd/"*; do
      fd=${fd##*/}
      if ((fd > 2)); then eval "exec $fd>&-" 2>/dev/null || true; fi
    done
    cd "$nd/data" && exec "$REDIS_SERVER" "$nd/redis.conf"
  ) </dev/null >>"$nd/redis.log" 2>&1
}

# check_node I: 0 ready (our process answers), 1 not yet, 2 port taken,
# 3 redis-server died.
check_node() {
  local i=$1 nd=$DIR/node$1 pid="" out="" newlog=""
  node_port "$i"
  if [[ -s $nd/redis.pid ]]; then read -r pid <"$nd/redis.pid" || true; fi
  if [[ -n $pid ]] && is_alive "$pid"; then
    out=$(timeout 1 "$REDIS_CLI" -h 127.0.0.1 -p "$PORT" info server </dev/null 2>/dev/null) || true
    if [[ $out == *"process_id:$pid"[!0-9]* ]]; then return 0; fi
    return 1
  fi
  newlog=$(tail -c +"$((LOGOFF[i] + 1))" "$nd/redis.log" 2>/dev/null) || true
  if [[ $newlog == *"Failed listening on port"* ]]; then return 2; fi
  if [[ -n $pid ]]; then return 3; fi
  if [[ $newlog =~ pid=([0-9]+),\ just\ started ]] && ! is_alive "${BASH_REMATCH[1]}"; then
    return 3
  fi
  return 1
}

# show_log I: copies the tail of node I's log to stderr.
show_log() {
  log "last lines of $DIR/node$1/redis.log:"
  tail -n 15 "$DIR/node$1/redis.log" 2>/dev/null | sed 's/^/    /' >&2 || true
}

# wait_ready MODE I...: waits until every listed node answers. A node whose
# port is taken is relaunched, on a new port when MODE is newport, else on
# the same one after a pause. Returns 1 (with diagnostics) on failure.
wait_ready() {
  local mode=$1 i rc
  shift
  local -a pending=("$@") next
  while ((${#pending[@]})); do
    next=()
    for i in "${pending[@]}"; do
      rc=0
      check_node "$i" || rc=$?
      case $rc in
        0) ;;
        1)
          now_ms
          if ((NOW > DEADLINE[i])); then
            log "error: node $i (port $PORT) did not answer within ${READY_TIMEOUT_MS} ms"
            show_log "$i"
            return 1
          fi
          next+=("$i") ;;
        2)
          TRIES[i]=$((${TRIES[i]:-0} + 1))
          if ((TRIES[i] >= BIND_TRIES)); then
            log "error: node $i: port $PORT taken, gave up after $BIND_TRIES tries"
            show_log "$i"
            return 1
          fi
          if [[ $mode == newport ]]; then
            pick_port
            log "node $i: port $PORT taken, retrying on $PICKED"
            write_conf "$i" "$PICKED"
          else
            log "node $i: port $PORT taken, retrying"
            sleep 0.3
          fi
          launch_node "$i" || { log "error: node $i: redis-server failed"; show_log "$i"; return 1; }
          next+=("$i") ;;
        *)
          log "error: node $i: redis-server exited"
          show_log "$i"
          return 1 ;;
      esac
    done
    pending=("${next[@]}")
    if ((${#pending[@]})); then sleep 0.02; fi
  done
}

# ---------------------------------------------------------------- verbs

# prepare_start_dir: makes DIR (or a fresh temp dir) ready and empty of nodes.
prepare_start_dir() {
  if [[ -z $DIR && -z ${REDLOCK_CLUSTER_DIR:-} ]]; then
    DIR=$(mktemp -d /tmp/redlock-cluster.XXXXXX)
    log "cluster directory: $DIR (export REDLOCK_CLUSTER_DIR=$DIR)"
  fi
  resolve_dir
  if [[ -e $DIR && ! -d $DIR ]]; then die "$DIR exists and is not a directory"; fi
  if [[ -d $DIR ]]; then
    if is_cluster_dir; then
      stop_nodes || die "could not stop the cluster already running in $DIR"
      rm -rf "$DIR"/node[0-9]* "$DIR/nodes" "$DIR/nodes.unix" "$DIR/n"
    elif [[ -n $(ls -A "$DIR") ]]; then
      die "$DIR is not empty and not a cluster directory; refusing to use it"
    fi
  fi
  mkdir -p "$DIR"
  : >"$DIR/$MARKER"
}

# start_abort STATUS: EXIT trap of start; on failure stops what started.
start_abort() {
  (($1 != 0)) || return 0
  stop_nodes || true
  if ((${#REAP[@]})); then wait_reaped 5000 "${REAP[@]}"; fi
  log "start failed; logs kept in $DIR (remove with: $PROG stop -d $DIR)"
}

cmd_start() {
  local i sock
  REAP=()
  prepare_start_dir
  trap 'start_abort $?' EXIT
  trap 'exit 130' INT TERM
  scan_ports
  for ((i = 0; i < N; i++)); do
    mkdir -p "$DIR/node$i/data"
    if ((UNIX)); then
      sock=$DIR/node$i/redis.sock
      ((${#sock} < 108)) || die "unix socket path too long (${#sock} > 107): $sock"
    fi
    pick_port
    write_conf "$i" "$PICKED"
  done
  for ((i = 0; i < N; i++)); do
    launch_node "$i" || { show_log "$i"; die "node $i: redis-server failed to start"; }
  done
  wait_ready newport $(seq 0 $((N - 1))) || die "cluster did not come up"
  {
    for ((i = 0; i < N; i++)); do node_port "$i"; printf 'redis://127.0.0.1:%s\n' "$PORT"; done
  } >"$DIR/nodes.tmp"
  if ((UNIX)); then
    for ((i = 0; i < N; i++)); do printf 'unix://%s/node%d/redis.sock\n' "$DIR" "$i"; done >"$DIR/nodes.unix"
  fi
  printf '%d\n' "$N" >"$DIR/n"
  mv -f "$DIR/nodes.tmp" "$DIR/nodes"
  trap - EXIT INT TERM
  log "$N nodes up in $DIR"
  cat "$DIR/nodes"
}

cmd_stop() {
  REAP=()
  resolve_dir
  if [[ ! -d $DIR ]]; then log "nothing to stop: $DIR does not exist"; return 0; fi
  if ! is_cluster_dir; then log "nothing to stop: $DIR is not a cluster directory"; return 0; fi
  stop_nodes || die "could not stop every node in $DIR"
  rm -rf -- "$DIR"
  if ((${#REAP[@]})); then wait_reaped 5000 "${REAP[@]}"; fi
  log "stopped; removed $DIR"
}

cmd_status() {
  local i state
  resolve_dir
  need_cluster
  node_count
  for ((i = 0; i < NODES; i++)); do
    node_port "$i"
    state=down
    if node_pid "$i"; then
      proc_state "$PID"
      if [[ $PSTATE == [Tt] ]]; then state=paused; else state=up; fi
    fi
    printf '%d redis://127.0.0.1:%s %s %s\n' "$i" "$PORT" "${PID:--}" "$state"
  done
}

# wait_state I WANT: waits (up to 1 s) until node I's stopped-ness is WANT
# (stopped|running).
wait_state() {
  local limit
  now_ms
  limit=$((NOW + 1000))
  while :; do
    proc_state "$PID"
    if [[ $2 == stopped && $PSTATE == [Tt] ]]; then return 0; fi
    if [[ $2 == running && $PSTATE != [Tt] ]]; then return 0; fi
    now_ms
    ((NOW < limit)) || die "node $1 (pid $PID) did not become $2"
    sleep 0.01
  done
}

cmd_pause() {
  resolve_dir; need_cluster; need_index
  node_pid "$INDEX" || die "node $INDEX is down"
  kill -STOP "$PID"
  wait_state "$INDEX" stopped
}

cmd_resume() {
  resolve_dir; need_cluster; need_index
  node_pid "$INDEX" || die "node $INDEX is down"
  kill -CONT "$PID"
  wait_state "$INDEX" running
}

cmd_kill() {
  resolve_dir; need_cluster; need_index
  if ! node_pid "$INDEX"; then log "node $INDEX is already down"; fi
  kill_node "$INDEX" || exit 1
}

cmd_restart() {
  local nd
  resolve_dir; need_cluster; need_index
  nd=$DIR/node$INDEX
  kill_node "$INDEX" || exit 1
  if ((FLUSH)); then
    rm -rf "$nd/data"
    mkdir -p "$nd/data"
  fi
  launch_node "$INDEX" || { show_log "$INDEX"; die "node $INDEX: redis-server failed to start"; }
  if ! wait_ready sameport "$INDEX"; then
    kill_node "$INDEX" || true
    die "node $INDEX did not come back"
  fi
}

cmd_uris() {
  local f=nodes
  resolve_dir
  ((UNIX)) && f=nodes.unix
  [[ -f $DIR/$f ]] || die "no $DIR/$f"
  cat "$DIR/$f"
}

main() {
  parse_args "$@"
  case $VERB in
    start) cmd_start ;;
    stop) cmd_stop ;;
    status) cmd_status ;;
    pause) cmd_pause ;;
    resume) cmd_resume ;;
    kill) cmd_kill ;;
    restart) cmd_restart ;;
    uris) cmd_uris ;;
    help) usage ;;
    *) usage_error "unknown verb '$VERB'" ;;
  esac
}

main "$@"

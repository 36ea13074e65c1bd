#!/usr/bin/env bash
# cluster.sh - run local Redis servers for libredlock's tests, demos and
# benchmarks: N independent redis-server masters (no replication, no Redis
# Cluster), or, with --cluster-shards, N independent Redis Clusters (each one
# Redlock node, doc/design.md, "Cluster routing"), or, with --sentinels, N groups of a
# master and its replicas watched by Redis Sentinels (each group one Redlock
# node).
#
# Layout of a cluster directory DIR (plain nodes):
#   DIR/.redlock-cluster   marker: this directory was made by cluster.sh
#   DIR/n                  number of nodes
#   DIR/nodes              one URI per line: redis://127.0.0.1:PORT
#   DIR/nodes.unix         (--unix only) one URI per line: unix:///DIR/nodeI/redis.sock
#   DIR/nodeI/             redis.conf, port, redis.pid, redis.log, redis.sock, data/
#
# Layout of a directory of Redis Clusters (start --cluster-shards K):
#   DIR/.redlock-cluster   marker, as above
#   DIR/n                  number of members of all clusters together
#   DIR/nodes              one URI per Redis Cluster, its primaries at creation
#                          as seeds: redis+cluster://127.0.0.1:P1?seed=127.0.0.1:P2&seed=...
#   DIR/members            one line per member: CLUSTER MEMBER PORT ROLE PRIMARY
#                            CLUSTER  0-based cluster index (line of DIR/nodes)
#                            MEMBER   0-based member index within its cluster
#                            PORT     client port on 127.0.0.1
#                            ROLE     primary or replica, at creation
#                            PRIMARY  for a replica, the MEMBER it replicated
#                                     at creation; "-" for a primary
#                          Line L (0-based) describes DIR/nodeL; the lines of a
#                          cluster are consecutive, MEMBER ascending.
#   DIR/slots              the slot map at creation, one line per range:
#                          CLUSTER START END MEMBER (START..END inclusive)
#   DIR/create.C.log       output of `redis-cli --cluster create` for cluster C
#   DIR/nodeL/             as for plain nodes, plus busport (the cluster bus
#                          port) and nodes.conf (the member's cluster-config-file,
#                          outside data/ so that restart --flush keeps its identity)
# Members are addressed as C.M (cluster C, member M) by status, pause, resume,
# kill, restart and failover; plain numbers address plain nodes only.
#
# Layout of a directory of Sentinel groups (start --sentinels S):
#   DIR/.redlock-cluster   marker, as above
#   DIR/n                  number of data nodes of all groups together
#   DIR/groups             number of groups
#   DIR/nodes              one URI per group gG, all sentinels named:
#                          redis+sentinel://127.0.0.1:S0/gG?sentinel=127.0.0.1:S1&sentinel=...
#   DIR/members            one line per data node: GROUP MEMBER PORT ROLE
#                            GROUP    0-based group index (line of DIR/nodes)
#                            MEMBER   0 the master at creation, 1..R its replicas
#                            PORT     client port on 127.0.0.1
#                            ROLE     master or replica, at creation
#                          Line L (0-based) describes DIR/nodeL; the lines of a
#                          group are consecutive, MEMBER ascending.
#   DIR/sentinels          one line per sentinel: K PORT
#   DIR/nodeL/             as for plain nodes (the sentinels rewrite redis.conf
#                          when they reconfigure the node)
#   DIR/sentinelK/         sentinel.conf (rewritten by the sentinel), port,
#                          redis.pid, redis.log; the sentinel's working directory
# Data nodes are addressed as G.M (group G, member M), sentinels as s.K, by
# status, pause, resume, kill and restart; failover and master take a group G.
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
MAX_MEMBERS=128         # cluster mode: members of all clusters together
CREATE_TIMEOUT_S=60     # cluster mode: limit of one `redis-cli --cluster create`
START_SETTLE_MS=30000   # cluster mode: start's wait for ok clusters
SETTLE_MS=15000         # cluster mode: other verbs' wait (failover, restart, settle)
MAX_SENTINELS=16        # sentinel mode: sentinels shared by all groups
SENT_BASE=1000          # sentinel mode: node index I >= SENT_BASE names sentinel I - SENT_BASE

# Options (filled by parse_args).
VERB=""
DIR=""
N=5
INDEX=""
PERSIST=0
UNIX=0
FLUSH=0
N_SET=0
ADDR=""                 # member address C.M
SHARDS=0                # --cluster-shards K (0: plain nodes)
REPLICAS=""             # --replicas R
NODE_TIMEOUT_MS=1000    # --node-timeout MS
FULL_COVERAGE=yes       # --full-coverage yes|no
FO_MODE=takeover        # --mode (failover)
WAIT_MS=""              # -t MS (cluster mode waits)
SENTINELS=""            # --sentinels S (start: Sentinel groups)
DOWN_AFTER_MS=1000      # --down-after MS

# Per-node bookkeeping used while waiting for launches (indexed by node).
declare -a LOGOFF=() DEADLINE=() TRIES=()
declare -A TAKEN=()     # ports seen in use or already handed out
NOW=0
PICKED=0
REAP=()                 # pids stopped by stop_nodes (for wait_reaped)
LABEL=""                # how messages name the addressed node or member

# Cluster mode: one entry per member, indexed by its flat index L (DIR/nodeL,
# line L of DIR/members).
declare -a M_CL=() M_MEM=() M_PORT=() M_ROLE=() M_OF=()
declare -a C_FIRST=() C_SIZE=()   # per cluster: flat index of member 0, members
CLUSTERS=0

# Sentinel mode (the M_* and C_* arrays above hold the data nodes and groups).
declare -a S_PORT=()    # per sentinel K: its port
declare -a REPL_OF=()   # per data node at start: its master's port ("" for a master)
NSENT=0

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
  start --cluster-shards K [--replicas R] [-n N] [-d DIR] [--persist]
        [--node-timeout MS] [--full-coverage yes|no] [-t MS]
        Start N (default 3) independent Redis Clusters, each of K (>= 3)
        primaries and R (default 0) replicas per primary, made by
        \`redis-cli --cluster create\`; waits (up to -t MS, default
        $START_SETTLE_MS) until every member reports cluster_state:ok, all
        members agree on the nodes and the slot map, and every replica's link
        is up. --node-timeout: cluster-node-timeout (default 1000 ms, so a
        failover takes about 2 s); --full-coverage: cluster-require-full-coverage
        (default yes). Replicas fail over whatever their data's age
        (cluster-replica-validity-factor 0) and never migrate to another
        primary. Prints one URI per cluster (DIR/nodes):
          redis+cluster://127.0.0.1:P1?seed=127.0.0.1:P2&seed=127.0.0.1:P3
        the cluster's primaries at creation as seeds. DIR/members lists the
        members: CLUSTER MEMBER PORT ROLE PRIMARY (see the script's header).
  start --sentinels S [-n G] [--replicas R] [--down-after MS] [-d DIR]
        [--persist] [-t MS]
        Start G (default 3) groups gI of one redis-server master and R
        (default 1) replicas, and S (1..$MAX_SENTINELS) Redis Sentinels that all
        monitor every group (quorum S/2+1, down-after-milliseconds MS, default
        1000; failover-timeout 3000; parallel-syncs 1). Waits (up to -t MS,
        default $START_SETTLE_MS) until every replica's link is up and every
        sentinel knows every group's R replicas and the S-1 other sentinels.
        Prints one URI per group (DIR/nodes):
          redis+sentinel://127.0.0.1:S0/gI?sentinel=127.0.0.1:S1&sentinel=...
        DIR/members lists the data nodes: GROUP MEMBER PORT ROLE; DIR/sentinels
        the sentinels: K PORT (see the script's header).
  stop [-d DIR]
        Stop every node, member or sentinel (SIGCONT, SIGTERM, SIGKILL after
        2 s) and remove DIR. Succeeds when nothing is running; safe to call
        twice.
  status [C.M] [-d DIR]
        One line per node: INDEX URI PID STATE (STATE: up, paused or down).
        Redis Clusters: one line per member (only C.M's if given):
        C.M redis://127.0.0.1:PORT PID STATE ROLE (ROLE now: primary,
        replica, or - when not up).
  pause I | resume I | kill I [-d DIR]
        SIGSTOP / SIGCONT / SIGKILL node I (0-based). kill removes the pid file.
  restart I [--flush] [-d DIR]
        (Re)start node I on the same port with the same config, killing it
        first if it still runs. --flush deletes its data files first (a restart
        that lost everything). Waits until it answers PING.
  pause C.M | resume C.M | kill C.M | restart C.M [--flush] [-t MS] [-d DIR]
        The same for member M of Redis Cluster C (0-based, as in DIR/members).
        A member keeps its cluster identity (nodeL/nodes.conf) across restart
        --flush. restart then also waits, when every member of the cluster
        runs, until the cluster has settled as after start (-t MS, default
        $SETTLE_MS).
  failover C.M [--mode takeover|force|coordinated] [-t MS] [-d DIR]
        Make replica C.M its shard's primary: CLUSTER FAILOVER TAKEOVER
        (default: no agreement asked, the last writes may be lost), FORCE (the
        primary is not asked), or coordinated (plain CLUSTER FAILOVER: the
        primary stops writes until the replica caught up; needs it up). Waits
        until C.M is primary and the running members agree and report
        cluster_state:ok (-t MS, default $SETTLE_MS).
  status [G.M|s.K] [-d DIR]
        Sentinel groups: one line per data node, G.M PORT ROLE STATE (ROLE
        now: master, replica, or - when not up), then one per sentinel,
        s.K PORT sentinel STATE (only the one addressed, if given).
  pause G.M | resume G.M | kill G.M | restart G.M [--flush] [-d DIR]
  pause s.K | resume s.K | kill s.K | restart s.K [-d DIR]
        The same for member M of Sentinel group G (0-based, as in DIR/members)
        or sentinel K. A restarted node comes back with its config file as it
        stands (the sentinels rewrite it when they reconfigure the node); the
        sentinels then reconfigure it as they see fit (restart does not wait).
  failover G [-t MS] [-d DIR]
        Sentinel groups: SENTINEL FAILOVER gG on the first running sentinel
        that accepts it (retried until the deadline), then waits until every
        running sentinel names the same new master, other than the one before
        the call (-t MS, default $SETTLE_MS). Prints the new master's port.
  master G [-d DIR]
        Sentinel groups: print the port of gG's master as the first running
        sentinel that answers names it.
  settle [C] [-t MS] [-d DIR]
        Wait until cluster C (default: every cluster) has settled: its running
        members report cluster_state:ok and agree on the nodes, their roles,
        failures and slots; when all its members run, every replica's link is
        up. Paused and killed members are not asked.
  uris [--unix] [-d DIR]
        Print DIR/nodes (or DIR/nodes.unix).
  members [-d DIR]
        Print DIR/members (Redis Clusters and Sentinel groups only).
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
      -n) [[ $# -ge 2 ]] || usage_error "-n needs a value"; N=$2; N_SET=1; shift 2 ;;
      -d) [[ $# -ge 2 ]] || usage_error "-d needs a value"; DIR=$2; shift 2 ;;
      --persist) PERSIST=1; shift ;;
      --unix) UNIX=1; shift ;;
      --flush) FLUSH=1; shift ;;
      --cluster-shards) [[ $# -ge 2 ]] || usage_error "$1 needs a value"; SHARDS=$2; shift 2 ;;
      --replicas) [[ $# -ge 2 ]] || usage_error "$1 needs a value"; REPLICAS=$2; shift 2 ;;
      --node-timeout) [[ $# -ge 2 ]] || usage_error "$1 needs a value"; NODE_TIMEOUT_MS=$2; shift 2 ;;
      --full-coverage) [[ $# -ge 2 ]] || usage_error "$1 needs a value"; FULL_COVERAGE=$2; shift 2 ;;
      --mode) [[ $# -ge 2 ]] || usage_error "$1 needs a value"; FO_MODE=$2; shift 2 ;;
      -t) [[ $# -ge 2 ]] || usage_error "-t needs a value"; WAIT_MS=$2; shift 2 ;;
      --sentinels) [[ $# -ge 2 ]] || usage_error "$1 needs a value"; SENTINELS=$2; shift 2 ;;
      --down-after) [[ $# -ge 2 ]] || usage_error "$1 needs a value"; DOWN_AFTER_MS=$2; shift 2 ;;
      s.[0-9]*)
        [[ $1 =~ ^s\.([0-9]+)$ && -z $INDEX && -z $ADDR ]] || usage_error "bad argument '$1'"
        ADDR=s.$((10#${BASH_REMATCH[1]})); shift ;;
      -h|--help) VERB=help; shift ;;
      [0-9]*)
        if [[ $1 =~ ^([0-9]+)\.([0-9]+)$ && -z $INDEX && -z $ADDR ]]; then
          ADDR=$((10#${BASH_REMATCH[1]})).$((10#${BASH_REMATCH[2]})); shift; continue
        fi
        [[ $1 =~ ^[0-9]+$ && -z $INDEX && -z $ADDR ]] || usage_error "bad argument '$1'"
        INDEX=$((10#$1)); shift ;;
      *) usage_error "unknown argument '$1'" ;;
    esac
  done
  check_cluster_args
  if ! [[ $N =~ ^[0-9]+$ ]] || ((10#$N < 1 || 10#$N > MAX_NODES)); then
    usage_error "-n must be 1..$MAX_NODES"
  fi
  N=$((10#$N))
}

# in_range V MIN MAX: true when V is a decimal number in MIN..MAX.
in_range() { [[ $1 =~ ^[0-9]{1,9}$ ]] && ((10#$1 >= $2 && 10#$1 <= $3)); }

# check_cluster_args: validates the cluster-mode options; picks the default
# number of clusters (3) when start --cluster-shards has no -n.
check_cluster_args() {
  if [[ $VERB == start && $SHARDS != 0 ]]; then
    [[ -z $SENTINELS ]] || usage_error "--cluster-shards and --sentinels exclude each other"
    in_range "$SHARDS" 3 64 ||
      usage_error "--cluster-shards must be 3..64 (redis-cli --cluster create needs 3 primaries)"
    SHARDS=$((10#$SHARDS))
    in_range "${REPLICAS:-0}" 0 8 || usage_error "--replicas must be 0..8"
    REPLICAS=$((10#${REPLICAS:-0}))
    ((N_SET)) || N=3
    ((UNIX == 0)) || usage_error "--unix is for plain nodes only"
  elif [[ $VERB == start && -n $SENTINELS ]]; then
    check_sentinel_args
  elif [[ -n $REPLICAS ]]; then
    usage_error "--replicas needs start --cluster-shards K or --sentinels S"
  elif [[ -n $SENTINELS ]]; then
    usage_error "--sentinels is an option of start"
  fi
  in_range "$DOWN_AFTER_MS" 100 600000 || usage_error "--down-after must be 100..600000 (ms)"
  DOWN_AFTER_MS=$((10#$DOWN_AFTER_MS))
  in_range "$NODE_TIMEOUT_MS" 100 600000 || usage_error "--node-timeout must be 100..600000 (ms)"
  NODE_TIMEOUT_MS=$((10#$NODE_TIMEOUT_MS))
  [[ $FULL_COVERAGE == yes || $FULL_COVERAGE == no ]] || usage_error "--full-coverage must be yes or no"
  [[ $FO_MODE =~ ^(takeover|force|coordinated)$ ]] || usage_error "--mode must be takeover, force or coordinated"
  if [[ -n $WAIT_MS ]]; then
    in_range "$WAIT_MS" 1 86400000 || usage_error "-t must be 1..86400000 (ms)"
    WAIT_MS=$((10#$WAIT_MS))
  fi
}

# check_sentinel_args: validates start --sentinels S; picks the default
# number of groups (3) and of replicas per group (1).
check_sentinel_args() {
  in_range "$SENTINELS" 1 "$MAX_SENTINELS" || usage_error "--sentinels must be 1..$MAX_SENTINELS"
  SENTINELS=$((10#$SENTINELS))
  in_range "${REPLICAS:-1}" 0 8 || usage_error "--replicas must be 0..8"
  REPLICAS=$((10#${REPLICAS:-1}))
  ((N_SET)) || N=3
  ((UNIX == 0)) || usage_error "--unix is for plain nodes only"
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

# node_dir I: sets ND to node I's directory: DIR/nodeI, or DIR/sentinelK for
# I = SENT_BASE + K (a sentinel; in messages "sentinel K").
node_dir() {
  if (($1 < SENT_BASE)); then ND=$DIR/node$1; else ND=$DIR/sentinel$(($1 - SENT_BASE)); fi
}

# node_name I: sets NAME to how messages name node I when no LABEL applies.
node_name() {
  if (($1 < SENT_BASE)); then NAME="node $1"; else NAME="sentinel $(($1 - SENT_BASE))"; fi
}

# node_port I: sets PORT to node I's port.
node_port() { PORT=""; node_dir "$1"; read -r PORT <"$ND/port" || true; }

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
# (redis chdirs to its `dir`) is one of DIR's node data directories or
# sentinel directories.
is_ours() {
  local comm="" d
  { read -r comm <"/proc/$1/comm"; } 2>/dev/null || return 1
  [[ $comm == redis-server ]] || return 1
  # (-ef compares the directories themselves: no readlink process per check)
  for d in "$DIR"/node*/data "$DIR"/sentinel*; do
    [[ /proc/$1/cwd -ef $d ]] && return 0
  done
  return 1
}

# node_pid I: sets PID to node I's running (possibly paused) redis-server;
# returns 1 (PID empty) when the node is down or the pid file is stale.
node_pid() {
  PID=""
  local f p=""
  node_dir "$1"
  f=$ND/redis.pid
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
  for f in "$DIR"/node*/redis.pid "$DIR"/sentinel*/redis.pid; do
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
  rm -f "$DIR"/node*/redis.pid "$DIR"/sentinel*/redis.pid
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
  node_name "$1"
  if node_pid "$1"; then
    kill -CONT "$PID" 2>/dev/null || true
    kill -KILL "$PID" 2>/dev/null || true
    wait_dead 2000 "$PID" || { log "error: ${LABEL:-$NAME} (pid $PID) survived SIGKILL"; return 1; }
  fi
  node_dir "$1"
  rm -f "$ND/redis.pid"
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

# write_conf I PORT [BUSPORT]: writes node I's redis.conf and port file; with
# BUSPORT, a Redis Cluster member's (cluster bus on BUSPORT, busport file).
# Starting Sentinel groups (SENTINELS set), a data node's, a replica of
# REPL_OF[I] when that is set.
write_conf() {
  local i=$1 port=$2 bus=${3:-} nd=$DIR/node$1
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
    if [[ -n $bus ]]; then
      printf 'cluster-enabled yes\ncluster-config-file "%s/nodes.conf"\n' "$nd"
      printf 'cluster-port %d\ncluster-node-timeout %d\n' "$bus" "$NODE_TIMEOUT_MS"
      printf 'cluster-replica-validity-factor 0\ncluster-allow-replica-migration no\n'
      printf 'cluster-require-full-coverage %s\n' "$FULL_COVERAGE"
      # A replica's full sync starts at once instead of after 5 s.
      printf 'repl-diskless-sync-delay 0\n'
    fi
    if [[ -n $SENTINELS ]]; then
      printf 'repl-diskless-sync-delay 0\n'
      if [[ -n ${REPL_OF[i]:-} ]]; then printf 'replicaof 127.0.0.1 %d\n' "${REPL_OF[i]}"; fi
    fi
  } >"$nd/redis.conf"
  printf '%d\n' "$port" >"$nd/port"
  if [[ -n $bus ]]; then printf '%d\n' "$bus" >"$nd/busport"; fi
}

# write_sentinel_conf K PORT: writes sentinel K's sentinel.conf and port
# file; it monitors every group gG at its master's port M_PORT[C_FIRST[G]].
write_sentinel_conf() {
  local k=$1 port=$2 sd=$DIR/sentinel$1 g q=$((SENTINELS / 2 + 1))
  {
    printf '# generated by cluster.sh: sentinel %d of %s\n' "$k" "$DIR"
    printf 'bind 127.0.0.1\nport %d\nprotected-mode no\n' "$port"
    printf 'daemonize yes\nsupervised no\nalways-show-logo no\n'
    printf 'pidfile "%s/redis.pid"\nlogfile "%s/redis.log"\ndir "%s"\n' "$sd" "$sd" "$sd"
    for ((g = 0; g < CLUSTERS; g++)); do
      printf 'sentinel monitor g%d 127.0.0.1 %d %d\n' "$g" "${M_PORT[C_FIRST[g]]}" "$q"
      printf 'sentinel down-after-milliseconds g%d %d\n' "$g" "$DOWN_AFTER_MS"
      printf 'sentinel failover-timeout g%d 3000\nsentinel parallel-syncs g%d 1\n' "$g" "$g"
    done
  } >"$sd/sentinel.conf"
  printf '%d\n' "$port" >"$sd/port"
}

# launch_node I: starts node I from its redis.conf, or sentinel I - SENT_BASE
# from its sentinel.conf (redis daemonizes itself); remembers where its new
# log starts and when it must answer.
launch_node() {
  local i=$1 nd wd
  local -a conf
  node_dir "$i"
  nd=$ND
  if ((i < SENT_BASE)); then
    wd=$nd/data conf=("$nd/redis.conf")
  else
    wd=$nd conf=("$nd/sentinel.conf" --sentinel)
  fi
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
    cd "$wd" && exec "$REDIS_SERVER" "${conf[@]}"
  ) </dev/null >>"$nd/redis.log" 2>&1
}

# check_node I: 0 ready (our process answers), 1 not yet, 2 port taken,
# 3 redis-server died.
check_node() {
  local i=$1 nd pid="" out="" newlog=""
  node_port "$i"
  nd=$ND
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
  node_dir "$1"
  log "last lines of $ND/redis.log:"
  tail -n 15 "$ND/redis.log" 2>/dev/null | sed 's/^/    /' >&2 || true
}

# wait_ready MODE I...: waits until every listed node answers. A node whose
# port is taken is relaunched, on a new port when MODE is newport, else on
# the same one after a pause. Returns 1 (with diagnostics) on failure.
wait_ready() {
  local mode=$1 i rc port
  shift
  local -a pending=("$@") next
  while ((${#pending[@]})); do
    next=()
    for i in "${pending[@]}"; do
      rc=0
      node_name "$i"
      check_node "$i" || rc=$?
      case $rc in
        0) ;;
        1)
          now_ms
          if ((NOW > DEADLINE[i])); then
            log "error: $NAME (port $PORT) did not answer within ${READY_TIMEOUT_MS} ms"
            show_log "$i"
            return 1
          fi
          next+=("$i") ;;
        2)
          TRIES[i]=$((${TRIES[i]:-0} + 1))
          if ((TRIES[i] >= BIND_TRIES)); then
            log "error: $NAME: port $PORT taken, gave up after $BIND_TRIES tries"
            show_log "$i"
            return 1
          fi
          if [[ $mode == newport ]] && ((i >= SENT_BASE)); then
            pick_port
            log "$NAME: port $PORT taken, retrying on $PICKED"
            write_sentinel_conf $((i - SENT_BASE)) "$PICKED"
          elif [[ $mode == newport && -s $DIR/node$i/busport ]]; then
            pick_port
            port=$PICKED
            pick_port
            log "node $i: port $PORT or its bus port taken, retrying on $port (bus $PICKED)"
            rm -f "$DIR/node$i/nodes.conf"
            write_conf "$i" "$port" "$PICKED"
          elif [[ $mode == newport ]]; then
            pick_port
            log "$NAME: port $PORT taken, retrying on $PICKED"
            write_conf "$i" "$PICKED"
          else
            log "$NAME: port $PORT taken, retrying"
            sleep 0.3
          fi
          launch_node "$i" || { log "error: $NAME: redis-server failed"; show_log "$i"; return 1; }
          next+=("$i") ;;
        *)
          log "error: $NAME: redis-server exited"
          show_log "$i"
          return 1 ;;
      esac
    done
    pending=("${next[@]}")
    if ((${#pending[@]})); then sleep 0.02; fi
  done
}

# ---------------------------------------------------------------- Redis Clusters

# is_cmode: true when DIR holds Redis Clusters (it has a members file but no
# sentinels file).
is_cmode() { [[ -f $DIR/members && ! -f $DIR/sentinels ]]; }

# is_smode: true when DIR holds Sentinel groups (it has a sentinels file).
is_smode() { [[ -f $DIR/sentinels ]]; }

# resp_read FD: reads one reply from FD onto RCLI_OUT as redis-cli prints
# it to a pipe (a status, an error's or a bulk string's text, an integer, an
# empty line for nil, an array one element a line, nested ones flattened);
# fails on a malformed reply, a closed connection or 2 s of silence.
resp_read() {
  local fd=$1 line n k data
  IFS= read -r -t 2 -u "$fd" line || return 1
  line=${line%$'\r'}
  case $line in
    [+:-]*) RCLI_OUT+="${line:1}"$'\n' ;;
    \$-1 | \*-1) RCLI_OUT+=$'\n' ;;
    \$*)
      n=${line:1}
      [[ $n =~ ^[0-9]+$ ]] || return 1
      IFS= read -r -t 2 -N $((n + 2)) -u "$fd" data || return 1
      RCLI_OUT+="${data:0:n}"$'\n' ;;
    \**)
      n=${line:1}
      [[ $n =~ ^[0-9]+$ ]] || return 1
      for ((k = 0; k < n; k++)); do resp_read "$fd" || return 1; done ;;
    *) return 1 ;;
  esac
}

# rcli PORT ARG...: prints the answer of 127.0.0.1:PORT to the command ARG...
# as redis-cli would (see resp_read), without the CRs of CLUSTER INFO and
# INFO; fails if it did not answer. It speaks RESP over bash's /dev/tcp
# rather than running redis-cli: the settle and restart loops poll every
# member many times, and a process per poll was most of their cost.
rcli() {
  local LC_ALL=C port=$1 fd req a ok=0
  shift
  req="*$#"$'\r\n'
  for a in "$@"; do req+="\$${#a}"$'\r\n'"$a"$'\r\n'; done
  { exec {fd}<>"/dev/tcp/127.0.0.1/$port"; } 2>/dev/null || return 1
  RCLI_OUT=""
  printf '%s' "$req" >&"$fd" 2>/dev/null && resp_read "$fd" && ok=1
  exec {fd}>&-
  ((ok)) || return 1
  RCLI_OUT=${RCLI_OUT//$'\r'/}
  printf '%s\n' "${RCLI_OUT%$'\n'}"
}

# load_members: fills M_*, C_FIRST, C_SIZE and CLUSTERS from DIR/members.
load_members() {
  local c m p r o i=0
  M_CL=() M_MEM=() M_PORT=() M_ROLE=() M_OF=() C_FIRST=() C_SIZE=()
  CLUSTERS=0
  [[ -f $DIR/members ]] || die "no $DIR/members"
  while read -r c m p r o; do
    [[ -n $c ]] || continue
    [[ $c =~ ^[0-9]+$ && $m =~ ^[0-9]+$ && $p =~ ^[0-9]+$ ]] || die "bad line in $DIR/members: $c $m $p $r $o"
    M_CL[i]=$c M_MEM[i]=$m M_PORT[i]=$p M_ROLE[i]=$r M_OF[i]=${o:--}
    if ((m == 0)); then C_FIRST[c]=$i; CLUSTERS=$((c + 1)); fi
    C_SIZE[c]=$((m + 1))
    i=$((i + 1))
  done <"$DIR/members"
  ((CLUSTERS)) || die "$DIR/members lists no member"
}

# resolve_target: for the verbs that address one node, sets INDEX (the
# node's directory number) and LABEL from the argument: C.M in a directory
# of Redis Clusters, a plain index otherwise.
resolve_target() {
  local c m
  if [[ $ADDR == s.* ]] && ! is_smode; then die "$DIR has no sentinels (no $ADDR)"; fi
  if is_smode; then resolve_starget; return; fi
  if ! is_cmode; then
    [[ -z $ADDR ]] || die "$DIR holds plain nodes: address a node by its index, not $ADDR"
    need_index
    LABEL="node $INDEX"
    return 0
  fi
  [[ -z $INDEX ]] || die "$DIR holds Redis Clusters: address a member as C.M (cluster C, member M), not $INDEX"
  [[ -n $ADDR ]] || usage_error "$VERB needs a member C.M"
  load_members
  c=${ADDR%.*} m=${ADDR#*.}
  ((c < CLUSTERS)) || die "cluster $c does not exist (there are $CLUSTERS)"
  ((m < C_SIZE[c])) || die "member $ADDR does not exist (cluster $c has ${C_SIZE[c]} members)"
  INDEX=$((C_FIRST[c] + m))
  LABEL="member $ADDR"
}

# member_running L: true when member L's redis-server runs and is not paused.
member_running() {
  node_pid "$1" || return 1
  proc_state "$PID"
  [[ $PSTATE != [Tt] ]]
}

# member_role L: sets ROLE_NOW to member L's role as it answers ROLE
# (primary or replica), "" when it does not answer.
member_role() {
  local out
  ROLE_NOW=""
  out=$(rcli "${M_PORT[$1]}" role) || return 0
  case ${out%%$'\n'*} in
    master) ROLE_NOW=primary ;;
    slave) ROLE_NOW=replica ;;
  esac
}

# member_view PORT: sets VSTATE to the member's cluster_state and VIEW to its
# CLUSTER NODES in a form to compare with other members' (sorted lines of:
# id, port, primary or replica, its primary's id or -, ok/pfail/fail/
# handshake, slot ranges without migration marks); 1 if it does not answer.
member_view() {
  local nodes info
  VIEW="" VSTATE=""
  nodes=$(rcli "$1" cluster nodes) || return 1
  info=$(rcli "$1" cluster info) || return 1
  if [[ $info =~ cluster_state:([a-z]+) ]]; then VSTATE=${BASH_REMATCH[1]}; fi
  VIEW=$(awk 'NF >= 8 {
      f = $3; role = "other"; st = "ok"; s = ""; port = $2
      sub(/^.*:/, "", port); sub(/@.*$/, "", port)
      if (f ~ /master/) role = "primary"; else if (f ~ /slave/) role = "replica"
      if (f ~ /fail\?/) st = "pfail"; else if (f ~ /fail/) st = "fail"
      if (f ~ /handshake|noaddr/) st = "handshake"
      for (i = 9; i <= NF; i++) if ($i !~ /^\[/) s = s " " $i
      print $1, port, role, $4, st s
    }' <<<"$nodes" | sort)
}

# cluster_settled C: true when cluster C has settled (usage: settle); else
# sets WHY to what is missing.
cluster_settled() {
  local c=$1 i first=-1 all=1 ref="" lines info st orphan
  WHY=""
  for ((i = C_FIRST[c]; i < C_FIRST[c] + C_SIZE[c]; i++)); do
    if ! member_running "$i"; then all=0; continue; fi
    if ! member_view "${M_PORT[i]}"; then WHY="member $c.${M_MEM[i]} does not answer"; return 1; fi
    if [[ $VSTATE != ok ]]; then WHY="member $c.${M_MEM[i]} reports cluster_state:${VSTATE:-?}"; return 1; fi
    lines=$(grep -c . <<<"$VIEW" || true)
    if ((lines != C_SIZE[c])); then
      WHY="member $c.${M_MEM[i]} knows $lines nodes, not ${C_SIZE[c]}"
      return 1
    fi
    if [[ $VIEW == *handshake* || $VIEW == *" other "* ]]; then
      WHY="member $c.${M_MEM[i]} is still in a handshake"
      return 1
    fi
    if ((first < 0)); then
      first=$i ref=$VIEW
    elif [[ $VIEW != "$ref" ]]; then
      WHY="members $c.${M_MEM[first]} and $c.${M_MEM[i]} disagree on the nodes or slots"
      return 1
    fi
  done
  if ((first < 0)); then WHY="no member of cluster $c runs"; return 1; fi
  # The members that do not run are known to have failed, and a failed
  # primary with slots is replaced when a replica of it runs.
  for ((i = C_FIRST[c]; i < C_FIRST[c] + C_SIZE[c]; i++)); do
    member_running "$i" && continue
    st=$(awk -v p="${M_PORT[i]}" '$2 == p { print $5 }' <<<"$ref")
    if [[ $st != fail ]]; then
      WHY="member $c.${M_MEM[i]} does not run but is flagged ${st:-unknown}, not fail"
      return 1
    fi
  done
  orphan=$(awk '$3 == "primary" && $5 == "fail" && NF > 5 { owner[$1] = 1 }
      $3 == "replica" && $5 == "ok" { live[$4] = 1 }
      END { for (id in owner) if (id in live) print id }' <<<"$ref")
  if [[ -n $orphan ]]; then
    WHY="a failed primary of cluster $c still holds slots; its replica has not taken over yet"
    return 1
  fi
  ((all)) || return 0
  if [[ $ref == *fail* ]]; then WHY="cluster $c still flags a member as failing"; return 1; fi
  for ((i = C_FIRST[c]; i < C_FIRST[c] + C_SIZE[c]; i++)); do
    info=$(rcli "${M_PORT[i]}" info replication) || { WHY="member $c.${M_MEM[i]} does not answer"; return 1; }
    if [[ $info == *role:slave* && $info != *master_link_status:up* ]]; then
      WHY="replica $c.${M_MEM[i]} has no link to its primary yet"
      return 1
    fi
  done
}

# settle_wait TIMEOUT_MS C...: waits until every listed cluster has settled;
# 1 (after saying what is missing) if one has not by the deadline.
settle_wait() {
  local limit=$1 c
  shift
  local -a pending=("$@") next
  now_ms
  limit=$((NOW + limit))
  while :; do
    next=()
    for c in "${pending[@]}"; do
      cluster_settled "$c" || next+=("$c")
    done
    ((${#next[@]})) || return 0
    pending=("${next[@]}")
    now_ms
    if ((NOW >= limit)); then
      log "error: not settled: cluster(s) ${pending[*]}: $WHY"
      return 1
    fi
    sleep 0.1
  done
}

# create_clusters: runs `redis-cli --cluster create` for every cluster at
# once, over its members in member order (redis-cli picks the primaries),
# each one's output in DIR/create.C.log; 1 if one failed.
create_clusters() {
  local c i rc=0
  local -a pids=() addrs
  for ((c = 0; c < CLUSTERS; c++)); do
    addrs=()
    for ((i = C_FIRST[c]; i < C_FIRST[c] + C_SIZE[c]; i++)); do addrs+=("127.0.0.1:${M_PORT[i]}"); done
    timeout "$CREATE_TIMEOUT_S" "$REDIS_CLI" --cluster create "${addrs[@]}" \
      --cluster-replicas "$REPLICAS" --cluster-yes </dev/null >"$DIR/create.$c.log" 2>&1 &
    pids[c]=$!
  done
  for ((c = 0; c < CLUSTERS; c++)); do
    if ! wait "${pids[c]}"; then
      log "error: redis-cli --cluster create failed for cluster $c; its output:"
      sed -e 's/\x1b\[[0-9;]*m//g' -e 's/^/    /' "$DIR/create.$c.log" >&2 || true
      rc=1
    fi
  done
  return "$rc"
}

# record_layout: from each settled cluster's member 0 (CLUSTER NODES), sets
# M_ROLE and M_OF and writes DIR/members, DIR/slots and DIR/nodes.
record_layout() {
  local c i m id addr flags pri slots port uri sep f out
  local -A by_port=() by_id=()
  local -a sl
  : >"$DIR/slots.tmp"
  : >"$DIR/nodes.tmp"
  for ((c = 0; c < CLUSTERS; c++)); do
    out=$(rcli "${M_PORT[C_FIRST[c]]}" cluster nodes) || die "member $c.0 does not answer CLUSTER NODES"
    by_port=() by_id=()
    for ((i = C_FIRST[c]; i < C_FIRST[c] + C_SIZE[c]; i++)); do by_port[${M_PORT[i]}]=${M_MEM[i]}; done
    while read -r id addr _; do
      port=${addr#*:} port=${port%%@*}
      [[ -n ${by_port[$port]:-} ]] || die "cluster $c knows a node that is not its member: $addr"
      by_id[$id]=${by_port[$port]}
    done <<<"$out"
    while read -r id addr flags pri _ _ _ _ slots; do
      m=${by_id[$id]} i=$((C_FIRST[c] + by_id[$id]))
      if [[ $flags == *master* ]]; then
        M_ROLE[i]=primary M_OF[i]=-
        read -ra sl <<<"$slots"
        for f in "${sl[@]}"; do
          if [[ $f =~ ^([0-9]+)-([0-9]+)$ ]]; then
            printf '%d %d %d %d\n' "$c" "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}" "$m"
          elif [[ $f =~ ^[0-9]+$ ]]; then
            printf '%d %d %d %d\n' "$c" "$f" "$f" "$m"
          fi
        done >>"$DIR/slots.tmp"
      else
        M_ROLE[i]=replica M_OF[i]=${by_id[$pri]:--}
      fi
    done <<<"$out"
    uri="" sep="?"
    for ((i = C_FIRST[c]; i < C_FIRST[c] + C_SIZE[c]; i++)); do
      [[ ${M_ROLE[i]} == primary ]] || continue
      if [[ -z $uri ]]; then
        uri="redis+cluster://127.0.0.1:${M_PORT[i]}"
      else
        uri+="${sep}seed=127.0.0.1:${M_PORT[i]}" sep="&"
      fi
    done
    printf '%s\n' "$uri" >>"$DIR/nodes.tmp"
  done
  for ((i = 0; i < ${#M_PORT[@]}; i++)); do
    printf '%d %d %d %s %s\n' "${M_CL[i]}" "${M_MEM[i]}" "${M_PORT[i]}" "${M_ROLE[i]}" "${M_OF[i]}"
  done >"$DIR/members.tmp"
  sort -n -k1,1 -k2,2 "$DIR/slots.tmp" >"$DIR/slots"
  rm -f "$DIR/slots.tmp"
  mv -f "$DIR/members.tmp" "$DIR/members"
  mv -f "$DIR/nodes.tmp" "$DIR/nodes"
}

# ---------------------------------------------------------------- Sentinel groups

# load_sentinels: fills S_PORT and NSENT from DIR/sentinels.
load_sentinels() {
  local k p
  S_PORT=() NSENT=0
  [[ -f $DIR/sentinels ]] || die "no $DIR/sentinels"
  while read -r k p; do
    [[ -n $k ]] || continue
    [[ $k =~ ^[0-9]+$ && $p =~ ^[0-9]+$ ]] || die "bad line in $DIR/sentinels: $k $p"
    S_PORT[k]=$p NSENT=$((k + 1))
  done <"$DIR/sentinels"
  ((NSENT)) || die "$DIR/sentinels lists no sentinel"
}

# resolve_starget: resolve_target for Sentinel groups: G.M names data node
# M of group G, s.K sentinel K (INDEX SENT_BASE + K).
resolve_starget() {
  local c m k
  [[ -z $INDEX ]] ||
    die "$DIR holds Sentinel groups: address a data node as G.M (group G, member M) or a sentinel as s.K, not $INDEX"
  [[ -n $ADDR ]] || usage_error "$VERB needs a data node G.M or a sentinel s.K"
  load_members
  load_sentinels
  if [[ $ADDR == s.* ]]; then
    k=${ADDR#s.}
    ((k < NSENT)) || die "sentinel $k does not exist (there are $NSENT)"
    INDEX=$((SENT_BASE + k))
    LABEL="sentinel $k"
    return 0
  fi
  c=${ADDR%.*} m=${ADDR#*.}
  ((c < CLUSTERS)) || die "group $c does not exist (there are $CLUSTERS)"
  ((m < C_SIZE[c])) || die "member $ADDR does not exist (group $c has ${C_SIZE[c]} members)"
  INDEX=$((C_FIRST[c] + m))
  LABEL="member $ADDR"
}

# need_group: for the verbs that take a group G (failover, master): loads
# the members and sentinels and fails unless INDEX names a group.
need_group() {
  [[ -z $ADDR ]] || usage_error "$VERB takes a group index G, not $ADDR"
  [[ -n $INDEX ]] || usage_error "$VERB needs a group index G"
  load_members
  load_sentinels
  ((INDEX < CLUSTERS)) || die "group $INDEX does not exist (there are $CLUSTERS)"
}

# sentinel_master K G: sets MPORT to the port sentinel K names as group G's
# master; 1 (MPORT empty) if it does not answer or knows no such master.
sentinel_master() {
  local out
  MPORT=""
  out=$(rcli "${S_PORT[$1]}" sentinel get-master-addr-by-name "g$2") || return 1
  [[ $out == *$'\n'* && ${out##*$'\n'} =~ ^[0-9]+$ ]] || return 1
  MPORT=${out##*$'\n'}
}

# first_master G: sets MPORT to group G's master as the first running
# sentinel that answers names it; 1 if none does.
first_master() {
  local k
  for ((k = 0; k < NSENT; k++)); do
    member_running $((SENT_BASE + k)) || continue
    sentinel_master "$k" "$1" && return 0
  done
  return 1
}

# wait_until LIMIT CHECK ARG...: runs CHECK ARG... until it succeeds; 1 (after
# logging the last check's WHY) once the clock (ms, as now_ms) passes LIMIT.
wait_until() {
  local limit=$1
  shift
  while ! "$@"; do
    now_ms
    if ((NOW >= limit)); then log "error: $WHY"; return 1; fi
    sleep 0.1
  done
}

# replicas_linked: true when every replica at creation reports
# master_link_status:up; else sets WHY.
replicas_linked() {
  local i info
  WHY=""
  for ((i = 0; i < ${#M_PORT[@]}; i++)); do
    [[ ${M_ROLE[i]} == replica ]] || continue
    if ! info=$(rcli "${M_PORT[i]}" info replication); then
      WHY="replica ${M_CL[i]}.${M_MEM[i]} does not answer"
      return 1
    fi
    if [[ $info != *master_link_status:up* ]]; then
      WHY="replica ${M_CL[i]}.${M_MEM[i]} has no link to its master yet"
      return 1
    fi
  done
}

# sentinels_know: true when every sentinel reports, for every group, R
# replicas (num-slaves) and the S-1 other sentinels; else sets WHY.
sentinels_know() {
  local k g out ns no
  WHY=""
  for ((k = 0; k < NSENT; k++)); do
    for ((g = 0; g < CLUSTERS; g++)); do
      out=$(rcli "${S_PORT[k]}" sentinel master "g$g") || { WHY="sentinel $k does not answer"; return 1; }
      read -r ns no < <(awk 'NR % 2 == 1 { k = $0; next }
          k == "num-slaves" { s = $0 } k == "num-other-sentinels" { o = $0 }
          END { print (s == "" ? "-" : s), (o == "" ? "-" : o) }' <<<"$out")
      if [[ $ns != "$((C_SIZE[g] - 1))" ]]; then
        WHY="sentinel $k knows $ns replica(s) of g$g, not $((C_SIZE[g] - 1))"
        return 1
      fi
      if [[ $no != "$((NSENT - 1))" ]]; then
        WHY="sentinel $k knows $no other sentinel(s) of g$g, not $((NSENT - 1))"
        return 1
      fi
    done
  done
}

# sgroup_switched G OLD: true when every running sentinel names the same
# master of group G, on a port other than OLD (then in MPORT); else sets WHY.
sgroup_switched() {
  local g=$1 old=$2 k port=""
  WHY=""
  for ((k = 0; k < NSENT; k++)); do
    member_running $((SENT_BASE + k)) || continue
    sentinel_master "$k" "$g" || { WHY="sentinel $k does not name g$g's master"; return 1; }
    if [[ $MPORT == "$old" ]]; then WHY="sentinel $k still names port $old as g$g's master"; return 1; fi
    if [[ -z $port ]]; then
      port=$MPORT
    elif [[ $MPORT != "$port" ]]; then
      WHY="sentinels name ports $port and $MPORT as g$g's master"
      return 1
    fi
  done
  [[ -n $port ]] || { WHY="no sentinel runs"; return 1; }
  MPORT=$port
}

# start_data_nodes I...: writes the configs of data nodes I... on new ports,
# launches them, waits until they answer and sets their M_PORT.
start_data_nodes() {
  local i
  for i; do pick_port; write_conf "$i" "$PICKED"; done
  for i; do launch_node "$i" || { show_log "$i"; die "node $i: redis-server failed to start"; }; done
  wait_ready newport "$@" || return 1
  for i; do node_port "$i"; M_PORT[i]=$PORT; done
}

# record_sgroups: writes DIR/members, DIR/sentinels, DIR/groups, DIR/n and
# DIR/nodes from M_*, C_* and S_PORT.
record_sgroups() {
  local g i k uri sep
  for ((i = 0; i < ${#M_PORT[@]}; i++)); do
    printf '%d %d %d %s\n' "${M_CL[i]}" "${M_MEM[i]}" "${M_PORT[i]}" "${M_ROLE[i]}"
  done >"$DIR/members.tmp"
  for ((k = 0; k < NSENT; k++)); do printf '%d %d\n' "$k" "${S_PORT[k]}"; done >"$DIR/sentinels.tmp"
  for ((g = 0; g < CLUSTERS; g++)); do
    uri="redis+sentinel://127.0.0.1:${S_PORT[0]}/g$g" sep="?"
    for ((k = 1; k < NSENT; k++)); do uri+="${sep}sentinel=127.0.0.1:${S_PORT[k]}" sep="&"; done
    printf '%s\n' "$uri"
  done >"$DIR/nodes.tmp"
  printf '%d\n' "$CLUSTERS" >"$DIR/groups"
  printf '%d\n' "${#M_PORT[@]}" >"$DIR/n"
  mv -f "$DIR/members.tmp" "$DIR/members"
  mv -f "$DIR/sentinels.tmp" "$DIR/sentinels"
  mv -f "$DIR/nodes.tmp" "$DIR/nodes"
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
      rm -rf "$DIR"/node[0-9]* "$DIR/nodes" "$DIR/nodes.unix" "$DIR/n" \
        "$DIR/members" "$DIR/slots" "$DIR"/create.[0-9]*.log \
        "$DIR"/sentinel[0-9]* "$DIR/sentinels" "$DIR/groups"
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
  if ((SHARDS)); then cmd_start_clusters; return; fi
  if [[ -n $SENTINELS ]]; then cmd_start_sgroups; return; fi
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

# cmd_start_clusters: start --cluster-shards K (see usage).
cmd_start_clusters() {
  local c m i p size total
  size=$((SHARDS * (REPLICAS + 1)))
  total=$((N * size))
  ((total <= MAX_MEMBERS)) || usage_error "$N clusters of $size members exceed $MAX_MEMBERS members"
  REAP=()
  prepare_start_dir
  trap 'start_abort $?' EXIT
  trap 'exit 130' INT TERM
  scan_ports
  CLUSTERS=$N
  for ((c = 0; c < N; c++)); do
    C_FIRST[c]=$((c * size)) C_SIZE[c]=$size
    for ((m = 0; m < size; m++)); do
      i=$((c * size + m))
      M_CL[i]=$c M_MEM[i]=$m
      mkdir -p "$DIR/node$i/data"
      pick_port
      p=$PICKED
      pick_port
      write_conf "$i" "$p" "$PICKED"
    done
  done
  for ((i = 0; i < total; i++)); do
    launch_node "$i" || { show_log "$i"; die "node $i: redis-server failed to start"; }
  done
  wait_ready newport $(seq 0 $((total - 1))) || die "cluster members did not come up"
  for ((i = 0; i < total; i++)); do node_port "$i"; M_PORT[i]=$PORT; done
  log "creating $N Redis Cluster(s) of $SHARDS primaries with $REPLICAS replica(s) each"
  create_clusters || die "cluster creation failed"
  settle_wait "${WAIT_MS:-$START_SETTLE_MS}" $(seq 0 $((N - 1))) || die "clusters did not settle"
  record_layout
  printf '%d\n' "$total" >"$DIR/n"
  trap - EXIT INT TERM
  log "$N Redis Cluster(s), $total members, up in $DIR"
  cat "$DIR/nodes"
}

# cmd_start_sgroups: start --sentinels S (see usage).
cmd_start_sgroups() {
  local g m i k size total limit
  local -a masters=() replicas=() sents=()
  size=$((REPLICAS + 1))
  total=$((N * size))
  ((total <= MAX_MEMBERS)) || usage_error "$N groups of $size data nodes exceed $MAX_MEMBERS data nodes"
  REAP=()
  prepare_start_dir
  trap 'start_abort $?' EXIT
  trap 'exit 130' INT TERM
  scan_ports
  now_ms
  limit=$((NOW + ${WAIT_MS:-$START_SETTLE_MS}))
  CLUSTERS=$N NSENT=$SENTINELS
  for ((g = 0; g < N; g++)); do
    C_FIRST[g]=$((g * size)) C_SIZE[g]=$size
    for ((m = 0; m < size; m++)); do
      i=$((g * size + m))
      M_CL[i]=$g M_MEM[i]=$m
      mkdir -p "$DIR/node$i/data"
      if ((m == 0)); then M_ROLE[i]=master masters+=("$i"); else M_ROLE[i]=replica replicas+=("$i"); fi
    done
  done
  # Masters first: a replica's config names its master's final port.
  start_data_nodes "${masters[@]}" || die "masters did not come up"
  if ((${#replicas[@]})); then
    for i in "${replicas[@]}"; do REPL_OF[i]=${M_PORT[C_FIRST[M_CL[i]]]}; done
    start_data_nodes "${replicas[@]}" || die "replicas did not come up"
    wait_until "$limit" replicas_linked || die "replicas did not link to their masters"
  fi
  # Then the sentinels, which find the replicas in their masters' INFO.
  for ((k = 0; k < NSENT; k++)); do
    mkdir -p "$DIR/sentinel$k"
    pick_port
    write_sentinel_conf "$k" "$PICKED"
    sents+=($((SENT_BASE + k)))
  done
  for i in "${sents[@]}"; do
    launch_node "$i" || { show_log "$i"; die "sentinel $((i - SENT_BASE)): redis-server failed to start"; }
  done
  wait_ready newport "${sents[@]}" || die "sentinels did not come up"
  for ((k = 0; k < NSENT; k++)); do node_port $((SENT_BASE + k)); S_PORT[k]=$PORT; done
  log "waiting for $NSENT sentinel(s) to discover $N group(s) and each other"
  wait_until "$limit" sentinels_know || die "sentinels did not settle"
  record_sgroups
  trap - EXIT INT TERM
  log "$N Sentinel group(s) of 1 master and $REPLICAS replica(s), $NSENT sentinel(s), up in $DIR"
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
  if is_smode; then status_sgroups; return; fi
  if is_cmode; then status_members; return; fi
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

# status_members: status of a directory of Redis Clusters (all members, or
# the one addressed).
status_members() {
  local i from=0 to state role
  load_members
  to=${#M_PORT[@]}
  if [[ -n $ADDR || -n $INDEX ]]; then
    resolve_target
    from=$INDEX to=$((INDEX + 1))
  fi
  for ((i = from; i < to; i++)); do
    state=down role=-
    if node_pid "$i"; then
      proc_state "$PID"
      if [[ $PSTATE == [Tt] ]]; then
        state=paused
      else
        state=up
        member_role "$i"
        role=${ROLE_NOW:--}
      fi
    fi
    printf '%d.%d redis://127.0.0.1:%s %s %s %s\n' "${M_CL[i]}" "${M_MEM[i]}" "${M_PORT[i]}" \
      "${PID:--}" "$state" "$role"
  done
}

# status_sgroups: status of a directory of Sentinel groups (every data node
# and sentinel, or the one addressed).
status_sgroups() {
  local i k
  local -a which=()
  load_members
  load_sentinels
  if [[ -n $ADDR || -n $INDEX ]]; then
    resolve_target
    which=("$INDEX")
  else
    for ((i = 0; i < ${#M_PORT[@]}; i++)); do which+=("$i"); done
    for ((k = 0; k < NSENT; k++)); do which+=($((SENT_BASE + k))); done
  fi
  for i in "${which[@]}"; do status_sline "$i"; done
}

# status_sline I: prints data node I's status line (G.M PORT ROLE STATE) or,
# for I >= SENT_BASE, the sentinel's (s.K PORT sentinel STATE).
status_sline() {
  local i=$1 state=down role=-
  node_port "$i"
  if node_pid "$i"; then
    proc_state "$PID"
    if [[ $PSTATE == [Tt] ]]; then
      state=paused
    else
      state=up
      if ((i < SENT_BASE)); then
        member_role "$i"
        case $ROLE_NOW in primary) role=master ;; replica) role=replica ;; esac
      fi
    fi
  fi
  if ((i < SENT_BASE)); then
    printf '%d.%d %s %s %s\n' "${M_CL[i]}" "${M_MEM[i]}" "$PORT" "$role" "$state"
  else
    printf 's.%d %s sentinel %s\n' $((i - SENT_BASE)) "$PORT" "$state"
  fi
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
    ((NOW < limit)) || die "${LABEL:-node $1} (pid $PID) did not become $2"
    sleep 0.01
  done
}

cmd_pause() {
  resolve_dir; need_cluster; resolve_target
  node_pid "$INDEX" || die "$LABEL is down"
  kill -STOP "$PID"
  wait_state "$INDEX" stopped
}

cmd_resume() {
  resolve_dir; need_cluster; resolve_target
  node_pid "$INDEX" || die "$LABEL is down"
  kill -CONT "$PID"
  wait_state "$INDEX" running
}

cmd_kill() {
  resolve_dir; need_cluster; resolve_target
  if ! node_pid "$INDEX"; then log "$LABEL is already down"; fi
  kill_node "$INDEX" || exit 1
}

cmd_restart() {
  local nd
  resolve_dir; need_cluster; resolve_target
  node_dir "$INDEX"
  nd=$ND
  ((FLUSH == 0 || INDEX < SENT_BASE)) || usage_error "--flush is for data nodes, not sentinels"
  kill_node "$INDEX" || exit 1
  if ((FLUSH)); then
    rm -rf "$nd/data"
    mkdir -p "$nd/data"
  fi
  launch_node "$INDEX" || { show_log "$INDEX"; die "$LABEL: redis-server failed to start"; }
  if ! wait_ready sameport "$INDEX"; then
    kill_node "$INDEX" || true
    die "$LABEL did not come back"
  fi
  if is_cmode; then settle_after_restart; fi
}

# settle_after_restart: after a member's restart, waits until its cluster
# has settled when all its members run (else says why it does not wait).
settle_after_restart() {
  local c=${M_CL[INDEX]} i
  for ((i = C_FIRST[c]; i < C_FIRST[c] + C_SIZE[c]; i++)); do
    if ! member_running "$i"; then
      log "$LABEL is back; not waiting for cluster $c to settle: member $c.${M_MEM[i]} is down or paused"
      return 0
    fi
  done
  settle_wait "${WAIT_MS:-$SETTLE_MS}" "$c" || die "$LABEL is back but cluster $c did not settle"
}

# need_cmode: fails unless DIR holds Redis Clusters.
need_cmode() {
  is_cmode || die "$DIR holds no Redis Clusters (start one with: $PROG start --cluster-shards K)"
}

cmd_failover() {
  local c limit out
  local -a how=()
  resolve_dir; need_cluster
  if is_smode; then failover_sgroup; return; fi
  need_cmode; resolve_target
  c=${M_CL[INDEX]}
  member_running "$INDEX" || die "$LABEL is down or paused"
  member_role "$INDEX"
  [[ $ROLE_NOW == replica ]] || die "$LABEL is not a replica (role: ${ROLE_NOW:-no answer})"
  case $FO_MODE in
    takeover) how=(TAKEOVER) ;;
    force) how=(FORCE) ;;
  esac
  out=$(rcli "${M_PORT[INDEX]}" cluster failover "${how[@]}") || die "$LABEL does not answer"
  [[ $out == OK ]] || die "$LABEL: CLUSTER FAILOVER ${how[*]}: $out"
  now_ms
  limit=$((NOW + ${WAIT_MS:-$SETTLE_MS}))
  while :; do
    member_role "$INDEX"
    [[ $ROLE_NOW != primary ]] || break
    now_ms
    ((NOW < limit)) || die "$LABEL did not become primary (failover mode $FO_MODE)"
    sleep 0.05
  done
  now_ms
  settle_wait $((limit > NOW ? limit - NOW : 1)) "$c" || die "$LABEL is primary but cluster $c did not settle"
  log "$LABEL is primary"
}

# failover_sgroup: failover G of Sentinel groups (see usage).
failover_sgroup() {
  local g k old limit out last="" by=-1
  need_group
  g=$INDEX
  first_master "$g" || die "no running sentinel names g$g's master"
  old=$MPORT
  now_ms
  limit=$((NOW + ${WAIT_MS:-$SETTLE_MS}))
  while :; do
    for ((k = 0; k < NSENT; k++)); do
      member_running $((SENT_BASE + k)) || continue
      out=$(rcli "${S_PORT[k]}" sentinel failover "g$g") || { last="sentinel $k does not answer"; continue; }
      if [[ $out == OK ]]; then by=$k; break; fi
      last="sentinel $k: $out"
    done
    ((by < 0)) || break
    now_ms
    ((NOW < limit)) || die "no sentinel accepted SENTINEL FAILOVER g$g (last: ${last:-no sentinel runs})"
    sleep 0.2
  done
  log "sentinel $by fails g$g over (master was port $old)"
  wait_until "$limit" sgroup_switched "$g" "$old" || die "g$g did not fail over"
  log "g$g's master is now port $MPORT"
  printf '%s\n' "$MPORT"
}

cmd_master() {
  resolve_dir; need_cluster
  is_smode || die "$DIR holds no Sentinel groups (start some with: $PROG start --sentinels S)"
  need_group
  first_master "$INDEX" || die "no running sentinel names g$INDEX's master"
  printf '%s\n' "$MPORT"
}

cmd_settle() {
  local -a which=()
  resolve_dir; need_cluster; need_cmode
  [[ -z $ADDR ]] || usage_error "settle takes a cluster index C, not a member"
  load_members
  if [[ -n $INDEX ]]; then
    ((INDEX < CLUSTERS)) || die "cluster $INDEX does not exist (there are $CLUSTERS)"
    which=("$INDEX")
  else
    mapfile -t which < <(seq 0 $((CLUSTERS - 1)))
  fi
  settle_wait "${WAIT_MS:-$SETTLE_MS}" "${which[@]}" || exit 1
}

cmd_members() {
  resolve_dir; need_cluster
  is_smode || need_cmode
  cat "$DIR/members"
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
    failover) cmd_failover ;;
    settle) cmd_settle ;;
    members) cmd_members ;;
    master) cmd_master ;;
    help) usage ;;
    *) usage_error "unknown verb '$VERB'" ;;
  esac
}

main "$@"

#!/usr/bin/env bash
# compose_test.sh - `make compose-test`: the three compose files of deploy/
# brought up for real on a Docker engine, unchanged, and checked with the
# project's own `redlock` tool.
#
#   test/deploy/compose_test.sh [--cli PATH] [masters] [sentinel] [cluster]
#
#   masters   deploy/docker-compose.yml: deploy/failover.sh --compose runs its
#             compose experiments (minority, majority, pause, restart).
#   sentinel  deploy/docker-compose.sentinel.yml: a lock taken with
#             --min-replicas 1 survives the kill of group g1's master (the
#             sentinels promote its replica, which has the lock's key); a
#             fresh client is refused while it is held, granted after its
#             release.
#   cluster   deploy/docker-compose.cluster.yml: a lock over the three Redis
#             Clusters, its key on the member that owns the key's slot in
#             each; with one primary killed the lock is still granted.
# Default: all three, in this order. Each project is taken down (`down -v`)
# after its check, and at exit whatever is still up, also on failure or
# Ctrl-C. One line per compose file gives its result at the end.
#
# The engine: the running one if `docker info` answers. Otherwise Debian's
# dockerd (make deps) is started in a private network and mount namespace
# (unshare --net --mount; vfs storage, data and exec roots in a temporary
# folder) and stopped at exit: the machine's own network, firewall and
# Docker files are never touched. This script runs itself again inside that
# namespace, so the containers' 127.0.0.1 and the clients' are the same.
#
# The image: redis:7 as the engine has it or can pull it; else a stand-in of
# that name (FROM scratch, imported from a folder): this machine's
# /usr/bin/redis-server and /usr/bin/redis-cli, their shared libraries, and a
# static busybox for `sh` and the tools the compose files' shell commands
# use. A stand-in made on a running engine is removed again at exit.
#
# Compose: `docker compose` (v2) if it answers, else `docker-compose` (1.29).
# The tool: --cli PATH, else $REDLOCK_CLI, else build/src/cli/redlock.
# Exit status: 0 when every file passed, 1 when one did not, 2 on a usage
# error or a missing prerequisite.
set -euo pipefail
export LC_ALL=C

PROG=compose-test
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
DEPLOY=$ROOT/deploy
CLI=${REDLOCK_CLI:-$ROOT/build/src/cli/redlock}
CHECKS=()
INNER=""          # --inner DIR: this process runs inside the private namespace, DIR its folder

log() { printf '%s: %s\n' "$PROG" "$*" >&2; }
die() { log "error: $*"; exit 2; }

while (($#)); do
  case $1 in
    --cli) (($# >= 2)) || die "--cli needs a path"; CLI=$2; shift 2 ;;
    --inner) (($# >= 2)) || die "--inner needs a folder"; INNER=$2; shift 2 ;;
    masters|sentinel|cluster) CHECKS+=("$1"); shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$1' (try --help)" ;;
  esac
done
((${#CHECKS[@]})) || CHECKS=(masters sentinel cluster)
[[ -x $CLI ]] || die "no redlock tool at '$CLI': build it (make build) or pass --cli PATH"
CLI=$(cd "$(dirname "$CLI")" && pwd)/$(basename "$CLI")
for tool in redis-server redis-cli; do
  command -v "$tool" >/dev/null || die "$tool is not installed (make deps installs Debian's redis-server and redis-tools)"
done

# ------------------------------------------------------------ the engine

# The private engine's folder (outside the namespace: removed at exit).
PRIVATE=""
ENGINE_PID=""
STANDIN_MADE=0
PROJECTS=()       # compose projects that may be up: "NAME FILE"
BG=()             # background clients, stopped at exit

# stop_pid PID SECONDS: SIGTERM, SIGKILL after SECONDS; reaps it.
stop_pid() {
  local i
  kill -TERM "$1" 2>/dev/null || return 0
  for ((i = 0; i < $2 * 10; i++)); do
    kill -0 "$1" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}

# ns_leftovers: the processes of this network namespace other than this
# shell and its current subshell (what a stopped engine may leave).
ns_leftovers() {
  local me p
  me=$(readlink /proc/self/ns/net)
  for p in /proc/[0-9]*; do
    p=${p#/proc/}
    [[ $p != "$$" && $p != "$BASHPID" ]] || continue
    [[ $(readlink "/proc/$p/ns/net" 2>/dev/null) == "$me" ]] && echo "$p"
  done
  return 0
}

cleanup() {
  local rc=$? p entry
  trap - EXIT INT TERM HUP
  for p in "${BG[@]}"; do stop_pid "$p" 3; done
  ((${#PROJECTS[@]} == 0)) || log "taking down: ${PROJECTS[*]%% *}"
  for entry in "${PROJECTS[@]}"; do
    # shellcheck disable=SC2086 # "NAME FILE", split on purpose
    compose_down $entry
  done
  if ((STANDIN_MADE)) && [[ -z $INNER ]]; then
    docker rmi redis:7 >/dev/null 2>&1 || log "warning: could not remove the stand-in image redis:7"
  fi
  if [[ -n $ENGINE_PID ]]; then
    stop_pid "$ENGINE_PID" 30
    # A container shim or proxy the engine left would keep the namespace.
    for p in $(ns_leftovers); do kill -KILL "$p" 2>/dev/null || true; done
  fi
  if [[ -n $PRIVATE ]]; then
    rm -rf -- "$PRIVATE" || log "warning: could not remove $PRIVATE"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

# start_engine DIR: Debian's dockerd with its state in DIR, in its own
# session (a terminal's Ctrl-C reaches the checks, which then take their
# projects down while the engine still runs); waits until it answers.
start_engine() {
  local dir=$1 i
  command -v dockerd >/dev/null || die "no Docker engine answers and dockerd is not installed (make deps installs docker.io)"
  ip link set lo up
  # The namespace's own /run: the engine finds no socket or state of the machine's.
  mount -t tmpfs -o mode=755 tmpfs /run
  echo '{}' >"$dir/daemon.json"
  export DOCKER_HOST=unix://$dir/docker.sock DOCKER_CONFIG=$dir/client
  setsid dockerd --config-file "$dir/daemon.json" --storage-driver vfs --data-root "$dir/data" \
    --exec-root "$dir/exec" --pidfile "$dir/dockerd.pid" -H "$DOCKER_HOST" >"$dir/dockerd.log" 2>&1 &
  ENGINE_PID=$!
  for ((i = 0; i < 600; i++)); do
    docker info >/dev/null 2>&1 && return 0
    kill -0 "$ENGINE_PID" 2>/dev/null || break
    sleep 0.1
  done
  tail -n 20 "$dir/dockerd.log" >&2
  die "the private dockerd did not answer within 60 s (its log is above)"
}

if [[ -z $INNER ]] && ! docker info >/dev/null 2>&1; then
  [[ $(id -u) == 0 ]] || die "no Docker engine answers, and starting a private one needs root (unshare, dockerd)"
  command -v unshare >/dev/null || die "no Docker engine answers and unshare (util-linux) is missing"
  PRIVATE=$(mktemp -d /tmp/redlock-compose.XXXXXX)
  log "no Docker engine answers: starting dockerd in a private network and mount namespace ($PRIVATE)"
  rc=0
  unshare --net --mount -- "$0" --cli "$CLI" --inner "$PRIVATE" "${CHECKS[@]}" || rc=$?
  exit "$rc"
fi
[[ -z $INNER ]] || start_engine "$INNER"

# ------------------------------------------------------------ compose

if docker compose version >/dev/null 2>&1; then DC=(docker compose)
elif command -v docker-compose >/dev/null 2>&1; then DC=(docker-compose)
else die "neither 'docker compose' nor 'docker-compose' is installed (make deps installs Debian's docker-compose)"; fi

# Project names of this run: a user's own `deploy` project is never touched.
PREFIX=redlock-test-$$

# compose NAME FILE ARGS...: the compose command on FILE as project NAME.
compose() {
  local name=$1 file=$2
  shift 2
  COMPOSE_PROJECT_NAME=$name "${DC[@]}" -f "$file" "$@"
}

# compose_down NAME FILE: takes the project down with its volumes.
compose_down() {
  compose "$1" "$2" down -v --remove-orphans >/dev/null 2>&1 || log "warning: could not take project $1 down"
  local keep=() entry
  for entry in "${PROJECTS[@]}"; do [[ $entry == "$1 $2" ]] || keep+=("$entry"); done
  PROJECTS=("${keep[@]}")
}

# ------------------------------------------------------------ the image

# The label the stand-in image carries, so that a later run knows it.
STANDIN_LABEL=org.libredlock.stand-in

# make_standin: imports the stand-in redis:7 from a folder holding redis-server,
# redis-cli, their libraries (ldd) and a static busybox with its applets in /bin.
make_standin() {
  local dir root bin lib applet busybox
  dir=$(mktemp -d "${INNER:-/tmp}/standin.XXXXXX")
  root=$dir/rootfs
  mkdir -p "$root/usr/bin" "$root/bin" "$root/data" "$root/tmp"
  chmod 1777 "$root/tmp"
  for bin in /usr/bin/redis-server /usr/bin/redis-cli; do
    [[ -x $bin ]] || { rm -rf -- "$dir"; die "$bin is missing: the stand-in image is made from it"; }
    cp -L "$bin" "$root/usr/bin/"
    while read -r lib; do
      mkdir -p "$root$(dirname "$lib")"
      cp -L "$lib" "$root$lib"
    done < <(ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }')
  done
  busybox=$(command -v busybox || true)
  if [[ -z $busybox ]] || ldd "$busybox" >/dev/null 2>&1; then
    rm -rf -- "$dir"
    die "no static busybox ('${busybox:-none}'): make deps installs busybox-static, the stand-in image's sh"
  fi
  cp "$busybox" "$root/bin/busybox"
  for applet in $("$busybox" --list); do
    [[ -e $root/bin/$applet ]] || ln -s busybox "$root/bin/$applet"
  done
  tar -C "$root" -c . | docker import --change 'WORKDIR /data' --change 'VOLUME /data' \
    --change 'CMD ["redis-server"]' --change "LABEL $STANDIN_LABEL=$(redis-server --version | awk '{ print $3 }')" \
    - redis:7 >/dev/null
  rm -rf -- "$dir"
}

# ensure_image: redis:7 from the engine or a registry, else the stand-in.
ensure_image() {
  local standin
  if standin=$(docker image inspect -f "{{ index .Config.Labels \"$STANDIN_LABEL\" }}" redis:7 2>/dev/null); then
    [[ -n $standin && $standin != "<no value>" ]] || { echo "redis:7 as the engine has it"; return 0; }
  fi
  if docker pull -q redis:7 >/dev/null 2>&1; then
    echo "redis:7 pulled from the registry"
    return 0
  fi
  make_standin
  [[ -n $INNER ]] || STANDIN_MADE=1
  echo "stand-in redis:7 (no registry answered): $(redis-server --version | cut -d' ' -f1-3), redis-cli, static busybox"
}

# ------------------------------------------------------------ helpers

# wait_for SECONDS WHAT COMMAND...: runs COMMAND every 0.2 s until it
# succeeds; fails naming WHAT when SECONDS pass first.
wait_for() {
  local limit=$(($1 * 5)) what=$2 i
  shift 2
  for ((i = 0; i < limit; i++)); do
    "$@" >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  say "timed out after $limit polls waiting for: $what"
  return 1
}

say() { printf '  %s\n' "$*"; }

# rcli PORT ARGS...: redis-cli on 127.0.0.1:PORT, raw output.
rcli() {
  local port=$1
  shift
  redis-cli -p "$port" --raw "$@"
}

# The test clients' per-node timeouts: the defaults (100 ms to connect, 50 ms
# a reply) are for a quiet network, and a machine busy with an engine and its
# containers is not one.
CLIENT_OPTS=(--connect-timeout 1s --op-timeout 1s)

# start_holder NODES RESOURCE TTL FLAGS...: a background `redlock exec`
# holding RESOURCE (its command waits until killed); sets HOLDER. Fails
# when the command does not start within 30 s.
start_holder() {
  local nodes=$1 res=$2 ttl=$3 marker
  shift 3
  marker=$(mktemp -u "${INNER:-/tmp}/holder.XXXXXX")
  "$CLI" --nodes "$nodes" "${CLIENT_OPTS[@]}" "$@" -v exec --ttl "$ttl" --wait 20s "$res" -- sh -c 'touch "$1"; exec sleep 600' sh "$marker" \
    >/dev/null 2>"$marker.log" &
  HOLDER=$!
  BG+=("$HOLDER")
  if ! wait_for 30 "the holder of $res to run its command" test -e "$marker"; then
    sed 's/^/    /' "$marker.log"
    rm -f -- "$marker" "$marker.log"
    return 1
  fi
  rm -f -- "$marker" "$marker.log"
}

# stop_holder: SIGTERM to the holder (the tool passes it on and releases).
stop_holder() {
  stop_pid "$HOLDER" 10
  local keep=() p
  for p in "${BG[@]}"; do [[ $p == "$HOLDER" ]] || keep+=("$p"); done
  BG=("${keep[@]}")
}

# try_lock NODES RESOURCE WAIT FLAGS...: one `redlock exec` of `true`; prints its exit status.
try_lock() {
  local nodes=$1 res=$2 wait=$3 rc=0
  shift 3
  "$CLI" --nodes "$nodes" "${CLIENT_OPTS[@]}" "$@" exec --ttl 5s --wait "$wait" "$res" -- true >/dev/null 2>&1 || rc=$?
  echo "$rc"
}

# compose_up NAME FILE SECONDS WHAT READY...: brings project NAME of FILE up
# (taken down at exit) and waits up to SECONDS until READY succeeds.
compose_up() {
  local name=$1 file=$2 secs=$3 what=$4 out
  shift 4
  PROJECTS+=("$name $file")
  DETAIL="could not bring $(basename "$file") up"
  out=$(compose "$name" "$file" up -d 2>&1) || { printf '%s\n' "$out" | tail -n 5; return 1; }
  DETAIL="not ready within $secs s: $what"
  wait_for "$secs" "$what" "$@"
}

# ------------------------------------------------------------ the checks
# Each prints what it does, indented, and sets DETAIL; returns 0 on success.

check_masters() {
  local file=$DEPLOY/docker-compose.yml name=$PREFIX-masters out rc=0
  PROJECTS+=("$name $file")
  out=$(mktemp "${INNER:-/tmp}/failover.XXXXXX")
  COMPOSE_PROJECT_NAME=$name "$DEPLOY/failover.sh" --compose --cli "$CLI" minority majority pause restart 2>&1 |
    tee "$out" | sed 's/^/  | /' || rc=$?
  DETAIL="failover.sh --compose: $(grep -E '^[0-9]+ of [0-9]+ experiments' "$out" || echo "no summary line, exit $rc")"
  rm -f -- "$out"
  compose_down "$name" "$file"
  return "$rc"
}

# The sentinel file's groups: g1 7401/7402, g2 7411/7412, g3 7421/7422.
SENTINEL_PORTS=(27401 27402 27403)
sentinel_nodes() {
  local g uris=()
  for g in g1 g2 g3; do
    uris+=("redis+sentinel://127.0.0.1:27401/$g?sentinel=127.0.0.1:27402&sentinel=127.0.0.1:27403")
  done
  (IFS=,; echo "${uris[*]}")
}

# sentinels_ready: every sentinel sees each group's master, its replica and
# the two other sentinels (a failover needs both).
sentinels_ready() {
  local s g info
  for s in "${SENTINEL_PORTS[@]}"; do
    for g in g1 g2 g3; do
      info=$(rcli "$s" sentinel master "$g" | paste -sd' ') || return 1
      [[ " $info " == *" num-slaves 1 "* && " $info " == *" num-other-sentinels 2 "* && " $info " == *" flags master "* ]] ||
        return 1
    done
  done
}

# g1_master_is PORT: a majority of the sentinels name PORT as g1's master.
g1_master_is() {
  local s n=0
  for s in "${SENTINEL_PORTS[@]}"; do
    [[ $(rcli "$s" sentinel get-master-addr-by-name g1 2>/dev/null | tail -n 1) == "$1" ]] && n=$((n + 1))
  done
  ((n >= 2))
}

# pttl_rises PORT KEY: the key's PTTL on PORT went up since the last call
# (an extension reached that node); the last reading is in LAST_PTTL.
pttl_rises() {
  local now
  now=$(rcli "$1" pttl "$2") || return 1
  ((now > 0)) || return 1
  if ((now > LAST_PTTL)); then LAST_PTTL=$now; return 0; fi
  LAST_PTTL=$now
  return 1
}

check_sentinel() {
  local file=$DEPLOY/docker-compose.sentinel.yml name=$PREFIX-sentinel nodes res rc_b rc_c
  res=compose-test:sentinel:$$
  nodes=$(sentinel_nodes)
  compose_up "$name" "$file" 90 "3 sentinels seeing 3 groups of a master and a replica, and each other" \
    sentinels_ready || return 1
  say "up: 3 groups of a master and a replica, 3 sentinels"
  DETAIL="the holder with --min-replicas 1 did not get the lock"
  # TTL 60 s: A's key on g1's replica outlives the failover (down-after 5 s).
  start_holder "$nodes" "$res" 60s --min-replicas 1 || return 1
  say "holder A: redlock --min-replicas 1 exec --ttl 60s $res -- sleep (extends every 20 s)"
  DETAIL="A's key is not on g1's replica"
  [[ $(rcli 7402 exists "$res") == 1 ]] || return 1
  compose "$name" "$file" kill g1-master >/dev/null 2>&1
  say "killed g1-master (127.0.0.1:7401)"
  DETAIL="the sentinels did not promote g1's replica"
  wait_for 90 "the sentinels to name 7402 g1's master" g1_master_is 7402 || return 1
  DETAIL="the promoted replica does not have A's key"
  [[ $(rcli 7402 exists "$res") == 1 ]] || return 1
  say "the sentinels promoted g1's replica (127.0.0.1:7402), which has A's key"
  # An extension after the promotion: A's lock lives on past the failover.
  DETAIL="A did not extend its lock after the failover"
  LAST_PTTL=0
  pttl_rises 7411 "$res" || true
  wait_for 60 "an extension of A's lock after the promotion" pttl_rises 7411 "$res" || return 1
  DETAIL="A's command ended during the failover"
  kill -0 "$HOLDER" 2>/dev/null || return 1
  say "A still runs, and extended its lock after the failover"
  rc_b=$(try_lock "$nodes" "$res" 0 --min-replicas 1)
  say "client B, a fresh handle: redlock exec --wait 0 $res -> exit $rc_b"
  DETAIL="B got exit $rc_b while A held the lock, expected 75"
  [[ $rc_b == 75 ]] || return 1
  stop_holder
  rc_c=$(try_lock "$nodes" "$res" 10s --min-replicas 1)
  say "A released; client C: redlock exec --wait 10s $res -> exit $rc_c"
  DETAIL="C got exit $rc_c after A's release, expected 0"
  [[ $rc_c == 0 ]] || return 1
  DETAIL="a lock taken with --min-replicas 1 survived the kill of g1's master (replica promoted with its key); B refused (75) while it was held; C granted (0) after its release"
  compose_down "$name" "$file"
}

# The cluster file's clusters: members 7101-7103, 7201-7203, 7301-7303.
CLUSTERS=(71 72 73)
cluster_nodes() {
  local c uris=()
  for c in "${CLUSTERS[@]}"; do uris+=("redis+cluster://127.0.0.1:${c}01?seed=127.0.0.1:${c}02&seed=127.0.0.1:${c}03"); done
  (IFS=,; echo "${uris[*]}")
}

# clusters_ready: every member of the three clusters reports cluster_state:ok.
clusters_ready() {
  local c m
  for c in "${CLUSTERS[@]}"; do
    for m in 1 2 3; do
      rcli "$c$(printf '%02d' "$m")" cluster info | grep -q '^cluster_state:ok' || return 1
    done
  done
}

# slot_owner PORT KEY: the port of the primary of PORT's cluster that
# owns KEY's slot, from CLUSTER KEYSLOT and CLUSTER NODES.
slot_owner() {
  local slot
  slot=$(rcli "$1" cluster keyslot "$2") || return 1
  rcli "$1" cluster nodes | awk -v s="$slot" '$3 ~ /master/ {
      for (i = 9; i <= NF; i++) {
        n = split($i, r, "-"); lo = r[1]; hi = (n == 2) ? r[2] : r[1]
        if ($i !~ /^\[/ && s + 0 >= lo + 0 && s + 0 <= hi + 0) { split($2, a, "[:@]"); print a[2]; exit }
      }
    }'
}

# keys_on_their_shards RESOURCE CLUSTER...: in each cluster the lock's key
# ({RESOURCE} on cluster nodes: the resource is its hash tag) is on the
# member its slot names and on no other member.
keys_on_their_shards() {
  local res="{$1}" c m owner port
  shift
  for c in "$@"; do
    owner=$(slot_owner "${c}02" "$res")
    [[ -n $owner ]] || { say "cluster ${c}xx: no member owns the slot of $res"; return 1; }
    for m in 1 2 3; do
      port=$c$(printf '%02d' "$m")
      if [[ $port == "$owner" ]]; then
        [[ $(rcli "$port" exists "$res") == 1 ]] || { say "$res is not on $port, which owns its slot"; return 1; }
      else
        [[ $(rcli "$port" exists "$res" 2>/dev/null) != 1 ]] || { say "$res is on $port, which does not own its slot"; return 1; }
      fi
    done
    say "cluster ${c}xx: $res (slot $(rcli "${c}02" cluster keyslot "$res")) is on $owner, the member that owns its slot, only"
  done
}

check_cluster() {
  local file=$DEPLOY/docker-compose.cluster.yml name=$PREFIX-cluster nodes res rc owner victim
  nodes=$(cluster_nodes)
  compose_up "$name" "$file" 120 "the three clusters' members to report cluster_state:ok" clusters_ready || return 1
  say "up: 3 Redis Clusters of 3 primaries, made by their init services"
  res=compose-test:cluster:$$:a
  DETAIL="no lock over the three clusters"
  start_holder "$nodes" "$res" 30s || return 1
  say "holder: redlock exec --ttl 30s $res -- sleep"
  DETAIL="a key is not where its slot says"
  keys_on_their_shards "$res" "${CLUSTERS[@]}" || return 1
  stop_holder
  # The primary owning the next resource's slot in cluster 1: its kill
  # takes cluster 1's vote away, and clusters 2 and 3 still make a quorum.
  res=compose-test:cluster:$$:b
  owner=$(slot_owner 7102 "$res")
  [[ -n $owner ]] || { DETAIL="no primary of cluster 1 owns the slot of $res"; return 1; }
  victim=cluster1-$((10#${owner#71}))
  compose "$name" "$file" kill "$victim" >/dev/null 2>&1
  say "killed $victim (127.0.0.1:$owner), the primary of cluster 1 that owns the slot of $res"
  DETAIL="no lock with one primary of cluster 1 down"
  start_holder "$nodes" "$res" 30s || return 1
  say "holder: redlock exec --ttl 30s $res -- sleep -> granted by clusters 2 and 3"
  keys_on_their_shards "$res" 72 73 || { DETAIL="a key is not where its slot says"; return 1; }
  stop_holder
  rc=$(try_lock "$nodes" "$res" 10s)
  DETAIL="a fresh client got exit $rc with one primary down, expected 0"
  [[ $rc == 0 ]] || return 1
  say "a fresh client, with $victim still down: exit 0"
  DETAIL="a lock over the three clusters, each key on the member its slot names; with a primary of cluster 1 killed still granted"
  compose_down "$name" "$file"
}

# ------------------------------------------------------------ main

IMAGE=$(ensure_image)
printf 'Engine: %s; compose: %s; image: %s\nTool: %s\n' \
  "$([[ -n $INNER ]] && echo "private dockerd $(dockerd --version | cut -d' ' -f3 | tr -d ,) (vfs) in a network namespace" ||
    echo "the running one")" "${DC[*]} $("${DC[@]}" version --short 2>/dev/null || true)" "$IMAGE" "$CLI"

declare -A FILE_OF=([masters]=docker-compose.yml [sentinel]=docker-compose.sentinel.yml [cluster]=docker-compose.cluster.yml)
RESULTS=()
failed=0
for c in "${CHECKS[@]}"; do
  printf '\n== deploy/%s ==\n' "${FILE_OF[$c]}"
  DETAIL=""
  t0=$SECONDS
  if "check_$c"; then
    RESULTS+=("deploy/${FILE_OF[$c]}: ok ($((SECONDS - t0)) s): $DETAIL")
  else
    failed=1
    RESULTS+=("deploy/${FILE_OF[$c]}: FAILED ($((SECONDS - t0)) s): $DETAIL")
    for p in "${BG[@]}"; do stop_pid "$p" 3; done
    BG=()
    for entry in "${PROJECTS[@]}"; do
      # shellcheck disable=SC2086 # "NAME FILE", split on purpose
      compose_down $entry
    done
  fi
done
echo
for line in "${RESULTS[@]}"; do echo "$PROG: $line"; done
exit "$failed"

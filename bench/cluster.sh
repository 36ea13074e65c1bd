#!/usr/bin/env bash
# cluster.sh [--quick] [--note TEXT] -- acquire + release on Redlock nodes
# that are whole Redis Clusters against plain single-master nodes, and the
# load on each shard as the keys spread (issue 25, item 8; DESIGN.md 10).
#
# Starts with deploy/cluster.sh 3 plain masters and 3 Redis Clusters of 3
# primaries each (always stopped at the end, also on Ctrl-C or failure),
# then runs bench_cluster (bench/bench_cluster.c says what it measures) twice:
#   spread    every cycle a fresh resource, so on the clusters the keys
#             spread over the shards; CONFIG RESETSTAT on every member
#             before, INFO commandstats after: the calls each shard served
#             and its share of its cluster's
#   one slot  the same, the cluster handle's resources all under one hash
#             tag, so each cluster serves them from one shard as a plain
#             node does: what the routing itself costs, apart from spreading
# Both runs interleave plain and cluster in rounds (serial blocks, then
# blocks of 8 threads), so the noise of a shared machine falls on both.
#
# Full mode: 30 rounds of 300 serial cycles and 1 s of 8 threads per handle
# per run (about 5 minutes in all); writes bench/RESULTS-cluster.md.
# --quick: 5 rounds of 100 cycles and 300 ms (under a minute), written to
# $BENCH_BUILD/bench/RESULTS-cluster-quick.md. --note TEXT: a paragraph for
# the report. The tables are printed either way.
#
# Environment: BENCH_BUILD (default build-bench), the CMake build directory
# configured with -DREDLOCK_BUILD_BENCH=ON (`make bench-cluster` does it all).
set -euo pipefail
export LC_ALL=C

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BENCH_BUILD:-$ROOT/build-bench}
BIN=$BUILD/bench/bench_cluster
CLUSTER_SH=$ROOT/deploy/cluster.sh

QUICK=0
NOTE=""
while (($#)); do
  case $1 in
    --quick) QUICK=1 ;;
    --note) NOTE=${2:-}; shift ;;
    -h|--help) sed -n '2,26p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "cluster.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
  shift
done

NODES=3 SHARDS=3 THREADS=8 TAG=onetag
if ((QUICK)); then
  MODE=quick ROUNDS=5 BLOCK=100 CONC_MS=300 OUT_MD=$BUILD/bench/RESULTS-cluster-quick.md
else
  MODE=full ROUNDS=30 BLOCK=300 CONC_MS=1000 OUT_MD=$ROOT/bench/RESULTS-cluster.md
fi

START=$SECONDS
note() { printf '[%3ds] %s\n' "$((SECONDS - START))" "$*" >&2; }
fail() { note "error: $*"; exit 1; }

[[ -x $BIN ]] || fail "$BIN is not built (run: make bench-cluster)"
command -v redis-server >/dev/null || fail "redis-server is not installed"
command -v redis-cli >/dev/null || fail "redis-cli is not installed"
REDIS=$(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p')
[[ ${REDIS%%.*} =~ ^[0-9]+$ ]] && ((${REDIS%%.*} >= 7)) ||
  fail "redis-server $REDIS: cluster nodes need Redis 7.0 or later (sharded pub/sub)"

SCRATCH=$(mktemp -d /tmp/redlock-bench-cluster.XXXXXX)
LOG=$SCRATCH/stderr.log
: >"$LOG"
PLAIN=""
CLUSTERS=""

# stop_all: stops what this script started (only its own directories).
stop_all() {
  if [[ -n $PLAIN ]]; then "$CLUSTER_SH" stop -d "$PLAIN" >/dev/null 2>>"$LOG" || true; PLAIN=""; fi
  if [[ -n $CLUSTERS ]]; then "$CLUSTER_SH" stop -d "$CLUSTERS" >/dev/null 2>>"$LOG" || true; CLUSTERS=""; fi
}

finish() {
  local rc=$?
  stop_all
  if ((rc != 0)) && [[ -s $LOG ]]; then
    echo "--- the run's last diagnostics:" >&2
    tail -n 20 "$LOG" >&2 || true
  fi
  rm -rf "$SCRATCH"
}
trap finish EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# rcli PORT ARGS...: one command to a local server, \r stripped.
rcli() { local p=$1; shift; redis-cli -h 127.0.0.1 -p "$p" "$@" 2>>"$LOG" | tr -d '\r'; }

# Every server of the run, one per line: KIND NODE MEMBER PORT (KIND plain
# or cluster; a plain node's MEMBER is 0).
servers() {
  awk '{ sub(/.*:/, ""); print "plain", NR - 1, 0, $0 }' "$PLAIN/nodes"
  awk '{ print "cluster", $1, $2, $3 }' "$CLUSTERS/members"
}

# reset_stats: CONFIG RESETSTAT on every server of the run.
reset_stats() {
  local kind node member port out
  while read -r kind node member port; do
    out=$(rcli "$port" config resetstat) || fail "$kind $node.$member (port $port) does not answer"
    [[ $out == OK ]] || fail "CONFIG RESETSTAT on port $port: $out"
  done < <(servers)
}

# collect_stats FILE: INFO commandstats of every server of the run, one
# line per command: KIND NODE MEMBER PORT COMMAND CALLS USEC REJECTED FAILED,
# and from INFO stats the reads from client connections (COMMAND "@reads",
# CALLS total_reads_processed): commands per read tell how much the
# requests of the threads were batched into one read.
collect_stats() {
  local kind node member port
  while read -r kind node member port; do
    rcli "$port" info commandstats | awk -v pre="$kind $node $member $port" -F'[:,=]' '
      /^cmdstat_/ {
        name = substr($1, 9); calls = usec = rej = fl = 0
        for (i = 2; i < NF; i += 2) {
          if ($i == "calls") calls = $(i + 1)
          else if ($i == "usec") usec = $(i + 1)
          else if ($i == "rejected_calls") rej = $(i + 1)
          else if ($i == "failed_calls") fl = $(i + 1)
        }
        print pre, name, calls, usec, rej, fl
      }'
    rcli "$port" info stats | awk -v pre="$kind $node $member $port" -F: \
      '$1 == "total_reads_processed" { print pre, "@reads", $2 + 0, 0, 0, 0 }'
  done < <(servers) >"$1"
}

# run_bench LABEL OUT [ARGS...]: one bench_cluster run; its table in OUT,
# its last "calls" line in OUT.calls. Returns its exit status.
run_bench() {
  local label=$1 out=$2 status=0
  shift 2
  note "$label: $ROUNDS rounds of $BLOCK serial cycles and $CONC_MS ms of $THREADS threads per handle"
  # --foreground: the run stays in our process group, so Ctrl-C reaches it
  timeout --foreground -k 5 1200 "$BIN" -p "$(paste -sd, "$PLAIN/nodes")" -c "$(paste -sd, "$CLUSTERS/nodes")" \
    -r "$ROUNDS" -b "$BLOCK" -t "$THREADS" -d "$CONC_MS" "$@" >"$out" 2>>"$LOG" || status=$?
  if ((status == 130 || status == 143)); then exit "$status"; fi
  grep '^bench_cluster: calls ' "$LOG" | tail -n 1 >"$out.calls" || true
  grep -q '^| measure' "$out" || fail "$label: bench_cluster printed no table (exit $status)"
  ((status == 0)) || note "$label: bench_cluster exited with status $status"
  return "$status"
}

# Lock calls are the commands the library sends per cycle on these nodes:
# SET (acquire, wait_ms 0) and EVALSHA (release; EVAL if a script was
# missing). The commands its scripts run (GET, DEL, SPUBLISH / PUBLISH) are
# counted by Redis too and shown apart; CONFIG and INFO are this script's.
AWK_CLASSES='
function lockcmd(c) { return c == "set" || c == "evalsha" || c == "eval" || c == "evalsha_ro" || c == "eval_ro" }
function ours(c) { return c == "config|resetstat" || c == "info" }
function upname(c) { gsub(/\|/, " ", c); return toupper(c) }
function addname(list, c,   n, a, i, out) {
  n = split(list, a, "+"); a[++n] = c
  for (i = n; i > 1 && a[i - 1] > a[i]; i--) { out = a[i]; a[i] = a[i - 1]; a[i - 1] = out }
  out = a[1]; for (i = 2; i <= n; i++) out = out "+" a[i]
  return out
}
function setup(c) { return c ~ /\|/ || c == "ping" || c == "hello" || c == "auth" || c == "select" || c == "asking" || c == "ssubscribe" || c == "subscribe" || c == "time" || c == "readonly" }'

# shard_table STATS: the per-shard table (markdown) of a run's stats, with
# the slots each primary served at creation ($SCRATCH/slots).
shard_table() {
  awk "$AWK_CLASSES"'
    FNR == NR { slots[$1 " " $4] += $3 - $2 + 1; next }
    $1 != "cluster" { next }
    {
      k = $2 " " $3; port[k] = $4
      if (!(k in seen)) { seen[k] = 1; order[++n] = k }
      if (lockcmd($5)) { lock[k] += $6; lockus[k] += $7; tot[$2] += $6; if ($5 == "set") set[k] += $6; else ev[k] += $6 }
      else if (ours($5) || $5 ~ /^@/) { }
      else if (setup($5)) { other[k] = other[k] (other[k] == "" ? "" : ", ") upname($5) " " $6 }
      else { inner[k] += $6; innm[k] = addname(innm[k], upname($5)) }
      rej[k] += $8
    }
    END {
      print "| cluster.member | port | slots (share) | SET | EVALSHA / EVAL | lock calls | share of the cluster'"'"'s lock calls | server µs per lock call | run inside scripts | redirected / rejected | other commands |"
      print "|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---|"
      for (i = 1; i <= n; i++) {
        k = order[i]; split(k, a, " ")
        printf "| %d.%d | %s | %d (%.1f %%) | %d | %d | %d | **%.1f %%** | %.1f | %d (%s) | %d | %s |\n",
          a[1], a[2], port[k], slots[k], 100 * slots[k] / 16384, set[k], ev[k], lock[k],
          tot[a[1]] ? 100 * lock[k] / tot[a[1]] : 0, lock[k] ? lockus[k] / lock[k] : 0,
          inner[k], innm[k] == "" ? "none" : innm[k], rej[k], other[k] == "" ? "none" : other[k]
      }
    }' "$SCRATCH/slots" "$1"
}

# node_table STATS CALLS: per Redlock node, the lock calls its servers
# received against the calls the handle made (acquires + releases).
node_table() {
  local calls
  calls=$(cat "$2")
  awk -v calls="$calls" "$AWK_CLASSES"'
    {
      k = $1 " " $2
      if (!(k in seen)) { seen[k] = 1; order[++n] = k }
      if (!((k, $3) in m)) { m[k, $3] = 1; mem[k]++ }
      if (lockcmd($5)) lock[k] += $6
      if ($5 == "@reads") reads[k] += $6
      rej[k] += $8
    }
    END {
      split(calls, f, /[ =]/)
      for (i = 1; i in f; i++) if (f[i] ~ /_(acquires|releases)$/) made[substr(f[i], 1, index(f[i], "_") - 1)] += f[i + 1]
      print "| Redlock node | servers | lock calls received | calls made by its handle (acquires + releases) | redirected / rejected | reads from clients | lock calls per read |"
      print "|---|---:|---:|---:|---:|---:|---:|"
      for (i = 1; i <= n; i++) {
        k = order[i]; split(k, a, " ")
        printf "| %s %d | %s | %d | %d | %d | %d | %.2f |\n", a[1], a[2], mem[k] (a[1] == "plain" ? " master" : " primaries"),
          lock[k], made[a[1]], rej[k], reads[k], reads[k] ? lock[k] / reads[k] : 0
      }
    }' "$1"
}

# slot_line STATS: one sentence, per cluster the share of its lock calls
# each member served, in member order.
slot_line() {
  awk "$AWK_CLASSES"'
    $1 == "cluster" { if ($2 + 1 > nc) nc = $2 + 1; if ($3 + 1 > nm) nm = $3 + 1 }
    $1 == "cluster" && lockcmd($5) { l[$2, $3] += $6; t[$2] += $6 }
    END {
      for (c = 0; c < nc; c++) {
        s = ""
        for (m = 0; m < nm; m++) s = s (m ? ", " : "") sprintf("%d.%d %.1f %%", c, m, t[c] ? 100 * l[c, m] / t[c] : 0)
        printf "%s of %d lock calls%s", s, t[c], c + 1 < nc ? "; " : ".\n"
      }
    }' "$1"
}

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
PLAIN=$SCRATCH/plain
"$CLUSTER_SH" start -n "$NODES" -d "$PLAIN" >/dev/null 2>>"$LOG" || fail "deploy/cluster.sh could not start $NODES masters"
CLUSTERS=$SCRATCH/clusters
"$CLUSTER_SH" start --cluster-shards "$SHARDS" -n "$NODES" -d "$CLUSTERS" >/dev/null 2>>"$LOG" ||
  fail "deploy/cluster.sh could not start $NODES clusters of $SHARDS primaries"
cp "$CLUSTERS/slots" "$SCRATCH/slots" # the slot map at creation, kept past the stop
note "$MODE mode: $NODES plain masters and $NODES clusters x $SHARDS primaries up"

STATUS=0
reset_stats
run_bench "spread keys" "$SCRATCH/spread.md" || STATUS=$?
collect_stats "$SCRATCH/spread.stats"
reset_stats
run_bench "one slot (--tag $TAG)" "$SCRATCH/oneslot.md" --tag "$TAG" || STATUS=$?
collect_stats "$SCRATCH/oneslot.stats"
TAG_SLOT=$(rcli "$(awk 'NR == 1 { print $3 }' "$CLUSTERS/members")" cluster keyslot "{$TAG}")
stop_all
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)

shard_table "$SCRATCH/spread.stats" >"$SCRATCH/shards.md"
node_table "$SCRATCH/spread.stats" "$SCRATCH/spread.md.calls" >"$SCRATCH/nodes.md"
node_table "$SCRATCH/oneslot.stats" "$SCRATCH/oneslot.md.calls" >"$SCRATCH/nodes-oneslot.md"
slot_line "$SCRATCH/spread.stats" >"$SCRATCH/spread.line"
slot_line "$SCRATCH/oneslot.stats" >"$SCRATCH/oneslot.line"

DATE=$(date -u '+%Y-%m-%d %H:%M UTC')
CPU=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
REV=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo "?")
LOOSE=$(git -C "$ROOT" status --porcelain -- src include lua 2>/dev/null | awk '{ print $2 }' | paste -sd' ' -)
VERSION=$("$BIN" --version 2>/dev/null || echo "?")
SHOWN="make bench-cluster"
((QUICK)) && SHOWN="make bench-cluster-quick"

mkdir -p "$(dirname "$OUT_MD")"
{
  echo "# libredlock: Redis Cluster nodes against plain nodes (issue 25, item 8)"
  echo
  echo "\`$SHOWN\` (\`bench/cluster.sh$([[ $MODE == quick ]] && echo ' --quick')\`, which runs"
  echo "\`bench_cluster -p <3 masters> -c <3 clusters> -r $ROUNDS -b $BLOCK -t $THREADS -d $CONC_MS\`, then the same with"
  echo "\`--tag $TAG\`), $DATE, $((SECONDS - START)) s."
  echo "Library at git $REV${LOOSE:+ with uncommitted changes in $LOOSE}; libredlock $VERSION; redis-server $REDIS."
  echo "Started for the run with deploy/cluster.sh: $NODES plain redis-server masters (\`redis://\`) and $NODES Redis"
  echo "Clusters of $SHARDS primaries each, no replicas (\`redis+cluster://\`, each cluster one Redlock node), all on 127.0.0.1;"
  echo "default library options, TTL 10 s."
  echo "Machine: $(nproc) cores ($CPU), shared by the client, the $((NODES + NODES * SHARDS)) servers and other users;"
  echo "load average $LOAD_BEFORE before, $LOAD_AFTER after."
  echo
  echo "Two \`redlock_t\` handles in one process, one over the $NODES masters, one over the $NODES clusters. Every cycle is"
  echo "\`redlock_acquire_ex\` (one attempt, \`wait_ms\` 0) + \`redlock_release\` of a resource never used before. $ROUNDS"
  echo "rounds; in each, both handles run a serial block of $BLOCK cycles from one thread, then a block of $THREADS threads"
  echo "on the one handle, each cycling resources of its own, for $CONC_MS ms; the handle that goes first alternates"
  echo "from round to round, so the noise of the machine falls on both alike. The values are over all the rounds"
  echo "(cycles/s: cycles done ÷ time in the blocks); \"cluster ÷ plain\" is above 1 where cluster nodes take"
  echo "longer, below 1 where they do fewer cycles per second; the per-round ratio is the same computed inside each"
  echo "round from its two blocks: its median, least and largest."
  echo
  echo "**Reading the figures.** This machine has $(nproc) cores and is shared (other engineers build and run tests on"
  echo "it), so absolute figures are noisy: compare the ratios, which the interleaving keeps fair. On $(nproc) cores,"
  echo "$((NODES * SHARDS)) cluster primaries cannot show the throughput a cluster gives on real hardware, where each shard has"
  echo "a core (or a host) of its own and the shards add up: here they only take turns on the same cores with the"
  echo "client. What this run can show is that the routing costs little per operation (the one-slot run isolates it)"
  echo "and that the keys spread evenly over the shards (section 2)."
  if [[ -n $NOTE ]]; then
    echo
    echo "$NOTE"
  fi
  echo
  echo "## 1. Acquire + release, cluster nodes against plain nodes"
  echo
  echo "### Keys spread over the shards (every resource a fresh name)"
  echo
  cat "$SCRATCH/spread.md"
  echo
  echo "### Every cluster key in one slot (\`--tag $TAG\`: resources \`{$TAG}:...\`, slot $TAG_SLOT)"
  echo
  echo "The same run with the cluster handle's resources all under one hash tag: each cluster then serves them from"
  echo "one shard over one connection, as a plain node serves all, while the library still computes the slot and"
  echo "routes every command. Where this run shows cluster ≈ plain and the one above does not, the difference is"
  echo "the spreading (more server processes and connections taking turns on the cores), not the routing."
  echo
  cat "$SCRATCH/oneslot.md"
  echo
  echo "Where the lock calls of this run went: $(cat "$SCRATCH/oneslot.line") Per Redlock node (columns as in"
  echo "section 2):"
  echo
  cat "$SCRATCH/nodes-oneslot.md"
  echo
  echo "## 2. Load per shard as the keys spread"
  echo
  echo "\`CONFIG RESETSTAT\` on every server before the spread-keys run, \`INFO commandstats\` after (warm-up included)."
  echo "Lock calls are the commands the library sends per cycle: \`SET\` (the acquire) and \`EVALSHA\` (the release;"
  echo "\`EVAL\` if a script was missing). Redis also counts the commands run inside the release script (\`GET\`, \`DEL\`,"
  echo "\`SPUBLISH\` on cluster nodes, \`PUBLISH\` on plain ones), shown apart; \"other commands\" are the library's"
  echo "set-up (slot map, script loads). Slots are those each primary served at creation. Server µs per lock call:"
  echo "commandstats' usec of the lock calls (a script's includes the commands it ran) ÷ their number."
  echo
  cat "$SCRATCH/shards.md"
  echo
  echo "Shares: $(cat "$SCRATCH/spread.line")"
  echo
  echo "Per Redlock node, the lock calls its servers received against the calls its handle made: each acquire and"
  echo "each release sends one command to every node, so the two match when every command went straight to the shard"
  echo "that serves its key (a \`MOVED\` or \`ASK\` shows as a redirected call). One redirect per cluster at most, at"
  echo "member 0, is by design: the library sends a cluster node's first command over the node's own connection"
  echo "(to its first seed) while the slot map is on its way, and follows the \`MOVED\`; more would come from maps"
  echo "reloaded after a shard connection failed. Reads from clients: INFO stats'"
  echo "\`total_reads_processed\` of the node's servers; lock calls per read above 1 mean that requests of several"
  echo "threads reached a server in one read (the handle writes what its threads queued for one connection at once)."
  echo
  cat "$SCRATCH/nodes.md"
  ((STATUS == 0)) || { echo; echo "bench_cluster exited with status $STATUS (failed calls are counted under the tables)."; }
} >"$OUT_MD"

echo
cat "$SCRATCH/spread.md"
echo
cat "$SCRATCH/oneslot.md"
echo
cat "$SCRATCH/shards.md"
echo
cat "$SCRATCH/nodes.md"
echo
echo "Report: $OUT_MD"
exit "$STATUS"

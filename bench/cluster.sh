#!/usr/bin/env bash
# cluster.sh [--quick] [--note TEXT] -- acquire + release on Redlock nodes
# that are whole Redis Clusters against plain single-master nodes, and the
# load on each shard as the keys spread (issue 25, item 8; doc/design.md, "Cluster routing").
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
# Two targets of its own, PASS/FAIL in the report's section 3: with every
# key in one slot, serial acquire p50 at most 1.2 x the plain nodes'; keys
# spread, each shard 30-37 % of its cluster's lock calls. Those and the
# headline figures (serial acquire p50 and 8-thread cycles/s against plain,
# spread and in one slot) are also rows of the summary of `make bench`
# (bench/all.sh, suite "cluster").
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
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
export LC_ALL=C

BIN=$BUILD/bench/bench_cluster
bench_args cluster.sh "quick note" -- "$@"

# N_NODES Redlock nodes of each kind (NODES is lib.sh's: a cluster's URIs)
N_NODES=3 SHARDS=3 THREADS=8 TAG=onetag
if ((QUICK)); then
  MODE=quick ROUNDS=5 BLOCK=100 CONC_MS=300 OUT_MD=$BUILD/bench/RESULTS-cluster-quick.md
else
  MODE=full ROUNDS=30 BLOCK=300 CONC_MS=1000 OUT_MD=$ROOT/bench/RESULTS-cluster.md
fi

[[ -x $BIN ]] || fail "$BIN is not built (run: make bench-cluster)"
command -v redis-server >/dev/null || fail "redis-server is not installed"
command -v redis-cli >/dev/null || fail "redis-cli is not installed"
machine_info
if [[ ! ${REDIS_V%%.*} =~ ^[0-9]+$ ]] || ((${REDIS_V%%.*} < 7)); then
  fail "redis-server $REDIS_V: cluster nodes need Redis 7.0 or later (sharded pub/sub)"
fi

DIAG_WHAT="the run's"
bench_scratch cluster
PLAIN=""
CLUSTERS=""

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

# Both handles' op timeout: 16 threads and 12 redis-servers share the 2
# cores here, and at the default 50 ms 2 releases in 407 161 timed out in
# the full run at e6cc93f (a failed call fails the run: bench_cluster
# exits non-zero on any).
OP_TIMEOUT=200

# run_bench LABEL OUT [ARGS...]: one bench_cluster run; its table in OUT,
# its last "calls" line in OUT.calls. Returns its exit status.
run_bench() {
  local label=$1 out=$2 status=0
  shift 2
  note "$label: $ROUNDS rounds of $BLOCK serial cycles and $CONC_MS ms of $THREADS threads per handle"
  # --foreground: the run stays in our process group, so Ctrl-C reaches it
  timeout --foreground -k 5 1200 "$BIN" -p "$(paste -sd, "$PLAIN/nodes")" -c "$(paste -sd, "$CLUSTERS/nodes")" \
    -r "$ROUNDS" -b "$BLOCK" -t "$THREADS" -d "$CONC_MS" --op-timeout "$OP_TIMEOUT" "$@" >"$out" 2>>"$LOG" ||
    status=$?
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

# measure TABLE NAME: "PLAIN CLUSTER RATIO" of the measure NAME in a
# bench_cluster table (columns: measure, plain, cluster, cluster ÷ plain,
# per-round ratio); nothing when the table lacks it.
measure() {
  awk -F ' *[|] *' -v m="$2" '$2 == m { printf "%s %s %.2f\n", $3, $4, $5; exit }' "$1"
}

# shares STATS: over every member of every cluster, its share of its
# cluster's lock calls: "LARGEST MEMBER SMALLEST MEMBER OUTSIDE MEMBERS",
# shares in %, OUTSIDE the members whose share is not within SHARE_LO ..
# SHARE_HI %.
shares() {
  awk -v lo="$SHARE_LO" -v hi="$SHARE_HI" "$AWK_CLASSES"'
    $1 == "cluster" { k = $2 "." $3; if (!(k in l)) { l[k] = 0; nm++ }; c[k] = $2 }
    $1 == "cluster" && lockcmd($5) { l[k] += $6; t[$2] += $6 }
    END {
      if (!nm) exit
      big = -1; small = 101
      for (k in l) {
        v = t[c[k]] ? 100 * l[k] / t[c[k]] : 0; n++
        if (v > big) { big = v; bk = k }
        if (v < small) { small = v; sk = k }
        if (v < lo || v > hi) out++
      }
      printf "%.1f %s %.1f %s %d %d\n", big, bk, small, sk, out, n
    }' "$1"
}

cluster_start "$N_NODES" plain
PLAIN=$CLUSTER
cluster_start "$N_NODES" clusters --cluster-shards "$SHARDS"
CLUSTERS=$CLUSTER
cp "$CLUSTERS/slots" "$SCRATCH/slots" # the slot map at creation, kept past the stop
note "$MODE mode: $N_NODES plain masters and $N_NODES clusters x $SHARDS primaries up"

STATUS=0
reset_stats
run_bench "spread keys" "$SCRATCH/spread.md" || STATUS=$?
collect_stats "$SCRATCH/spread.stats"
reset_stats
run_bench "one slot (--tag $TAG)" "$SCRATCH/oneslot.md" --tag "$TAG" || STATUS=$?
collect_stats "$SCRATCH/oneslot.stats"
TAG_SLOT=$(rcli "$(awk 'NR == 1 { print $3 }' "$CLUSTERS/members")" cluster keyslot "{$TAG}")
cluster_down

shard_table "$SCRATCH/spread.stats" >"$SCRATCH/shards.md"
node_table "$SCRATCH/spread.stats" "$SCRATCH/spread.md.calls" >"$SCRATCH/nodes.md"
node_table "$SCRATCH/oneslot.stats" "$SCRATCH/oneslot.md.calls" >"$SCRATCH/nodes-oneslot.md"
slot_line "$SCRATCH/spread.stats" >"$SCRATCH/spread.line"
slot_line "$SCRATCH/oneslot.stats" >"$SCRATCH/oneslot.line"

# The headline figures, for the summary of `make bench` (bench/all.sh), and
# the two targets that can be argued (section 3 of the report says why).
SERIAL="serial: acquire p50 µs" CONC="$THREADS threads: cycles/s"
target_spec routing
SHARE_LO=30 SHARE_HI=37 ROUTE_MAX=$T_LIMIT EVEN=$(awk -v n="$SHARDS" 'BEGIN { printf "%.1f", 100 / n }')
read -r sp_p sp_c sp_r < <(measure "$SCRATCH/spread.md" "$SERIAL") || true
read -r st_p st_c st_r < <(measure "$SCRATCH/spread.md" "$CONC") || true
read -r op_p op_c op_r < <(measure "$SCRATCH/oneslot.md" "$SERIAL") || true
read -r ot_p ot_c ot_r < <(measure "$SCRATCH/oneslot.md" "$CONC") || true
read -r big big_m small small_m outside members < <(shares "$SCRATCH/spread.stats") || true
summary "Redis Cluster nodes, keys spread: serial acquire p50" "${sp_c:+$sp_c µs ($sp_r × plain)}" "" \
  "${sp_p:+plain nodes: $sp_p µs}" "" ""
summary "Redis Cluster nodes, keys spread: $THREADS threads, cycles/s" "${st_c:+$st_c/s ($st_r × plain)}" "" \
  "${st_p:+plain nodes: $st_p/s}" "" ""
summary "Redis Cluster nodes, all keys in one slot: $THREADS threads, cycles/s" "${ot_c:+$ot_c/s ($ot_r × plain)}" "" \
  "${ot_p:+plain nodes: $ot_p/s}" "" ""
target routing "${op_r:-}" "${op_r:+$op_r× ($op_c against $op_p µs)}" \
  "Redis Cluster nodes, all keys in one slot (the routing's own cost): serial acquire p50" \
  "${op_c:+$op_c µs ($op_r × plain)}" "" "${op_p:+plain nodes: $op_p µs}"
target spread "${outside:-}" "${outside:+$outside (${members:+$((members - outside)) of $members shards within, $small–$big %})}" \
  "Redis Cluster nodes, keys spread: shards outside $SHARE_LO–$SHARE_HI % of their cluster's lock calls" \
  "${big:+$outside (largest share $big %, member $big_m; smallest $small %, member $small_m)}" "" \
  "even over $SHARDS shards: $EVEN %"
targets_table "target (bench/targets.tsv)" >"$SCRATCH/targets.md"

VERSION=$("$BIN" --version 2>/dev/null || echo "?")
SHOWN="make bench-cluster"
((QUICK)) && SHOWN="make bench-cluster-quick"

mkdir -p "$(dirname "$OUT_MD")"
{
  echo "# libredlock: Redis Cluster nodes against plain nodes (issue 25, item 8)"
  echo
  echo "Made by \`$SHOWN\` (\`bench/cluster.sh$([[ $MODE == quick ]] && echo ' --quick')\`) $(bench_stamp), in $((SECONDS - START)) s;"
  echo "it runs \`bench_cluster -p <3 masters> -c <3 clusters> -r $ROUNDS -b $BLOCK -t $THREADS -d $CONC_MS\`, then the same"
  echo "with \`--tag $TAG\`. libredlock $VERSION${LOOSE:+ (uncommitted: $LOOSE)}; redis-server $REDIS_V."
  echo "Started for the run with deploy/cluster.sh: $N_NODES plain redis-server masters (\`redis://\`) and $N_NODES Redis"
  echo "Clusters of $SHARDS primaries each, no replicas (\`redis+cluster://\`, each cluster one Redlock node), all on 127.0.0.1;"
  echo "default library options, TTL 10 s."
  echo "Machine: $(nproc) cores ($CPU), shared by the client, the $((N_NODES + N_NODES * SHARDS)) servers and other users;"
  echo "load average $LOAD_BEFORE before, $LOAD_AFTER after."
  echo
  echo "Two \`redlock_t\` handles in one process, one over the $N_NODES masters, one over the $N_NODES clusters. Every cycle is"
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
  echo "$((N_NODES * SHARDS)) cluster primaries cannot show the throughput a cluster gives on real hardware, where each shard has"
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
  echo "that serves its key (a \`MOVED\` or \`ASK\` shows as a redirected call). None is expected: a new handle's"
  echo "first commands to a cluster node wait for its slot map and then go straight to their shard; redirects would"
  echo "come from maps gone stale (a failover, a slot moved). Fewer calls received than made are requests that timed"
  echo "out on the loaded machine: their node or shard is then skipped until a probe answers (README, \"When a node"
  echo "goes silent\"). Reads from clients: INFO stats'"
  echo "\`total_reads_processed\` of the node's servers; lock calls per read above 1 mean that requests of several"
  echo "threads reached a server in one read (the handle writes what its threads queued for one connection at once)."
  echo
  cat "$SCRATCH/nodes.md"
  echo
  echo "## 3. Targets"
  echo
  echo "Issue 25 sets no figures for this benchmark; these two are this script's own, set where a bound can be argued."
  echo "With every key in one slot a cluster node serves the cycle as a plain node does, the library adding the slot"
  echo "computation and the routing, so its serial acquire p50 should stay within $ROUTE_MAX × the plain nodes' (the"
  echo "\"cluster ÷ plain\" of section 1's one-slot table). Fresh resource names hash evenly over the slots, which the"
  echo "$SHARDS primaries of a cluster split in equal parts, so each should serve $SHARE_LO–$SHARE_HI % of its cluster's lock calls"
  echo "(even: $EVEN %; section 2). The other figures have no target: the throughputs swing with the load of a shared"
  echo "machine far more than the routing could move them (see the per-round ranges), and with the keys spread they"
  echo "measure how $((N_NODES * SHARDS)) server processes share $(nproc) cores rather than the library."
  echo
  cat "$SCRATCH/targets.md"
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
cat "$SCRATCH/targets.md"
echo
echo "Report: $OUT_MD"
exit "$STATUS"

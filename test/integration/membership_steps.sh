#!/usr/bin/env bash
# membership_steps.sh REDLOCK -- `redlock membership` against the fixture
# cluster ($REDLOCK_CLUSTER_DIR, $REDLOCK_CLUSTER_SH): the records each step
# writes (read back with show --json and with redis-cli), steps out of order
# refused with 64 naming the phase, a record of another change refused
# unless --force, the wait of advance, the old, joint and new handles each
# step grants (exit 0) or refuses (78; an old holder's extend 2, its
# release never), a node that cannot be written
# failing the step with 69 naming it, and --skip for a dead node that is
# leaving. OLD = nodes 0,1,2 and NEW = nodes 1,2,3 (node 0 leaves, node 3
# joins). Exits non-zero on the first failed check; always restarts what it
# killed and removes every record it wrote.
set -u
CLI=${1:?usage: membership_steps.sh PATH-TO-REDLOCK}
: "${REDLOCK_CLUSTER_DIR:?}" "${REDLOCK_CLUSTER_SH:?}"
mapfile -t U <"$REDLOCK_CLUSTER_DIR/nodes"
OLD="${U[0]},${U[1]},${U[2]}"
NEW="${U[1]},${U[2]},${U[3]}"
KEY=redlock:membership
out=$(mktemp -d)
killed=()
port() { echo "${U[$1]##*:}"; }
cleanup() {
  local i
  for i in "${killed[@]}"; do "$REDLOCK_CLUSTER_SH" restart "$i" -d "$REDLOCK_CLUSTER_DIR" >/dev/null 2>&1; done
  for i in 0 1 2 3 4; do redis-cli -p "$(port $i)" DEL "$KEY" steps:held >/dev/null 2>&1; done
  rm -rf "$out"
}
trap cleanup EXIT
NAME=membership_steps.sh OUT=$out
# shellcheck source=../support/expect.sh
. "$(dirname "$0")/../support/expect.sh"
# field I NAME: node I's record field NAME, read by redis-cli.
field() { redis-cli -p "$(port "$1")" HGET "$KEY" "$2"; }
# grants OLD JOINT NEW: the exit codes of `exec` through an old, a joint
# and a new handle: 0 granted, 78 refused by the records.
grants() {
  local i=0 want
  local -a lists=("--nodes $OLD" "--nodes $OLD --next-nodes $NEW" "--nodes $NEW")
  for want in "$@"; do
    # shellcheck disable=SC2086
    expect "$want" "$CLI" ${lists[i]} exec --ttl 2s --wait 0 "steps:grants:$i" -- true
    [[ $want == 0 ]] || said stderr "membership records do not accept"
    i=$((i + 1))
  done
}
for i in 0 1 2 3 4; do redis-cli -p "$(port $i)" DEL "$KEY" steps:held >/dev/null || fail "redis-cli cannot reach node $i"; done

# before: no records, every configuration accepted
expect 0 "$CLI" --nodes "$OLD" --next-nodes "$NEW" membership show
[[ $(grep -c "no record: accepts every configuration" "$out/stdout") == 4 ]] || fail "show: $(cat "$out/stdout")"
expect 64 "$CLI" --nodes "$OLD" --next-nodes "$NEW" membership advance --max-ttl 1s
said stderr "has no record, phase none: advance comes after begin"
expect 64 "$CLI" --nodes "$OLD" membership begin
said stderr "--next-nodes"
expect 64 "$CLI" --nodes "$OLD" --next-nodes "redis+cluster://127.0.0.1:1,${U[1]},${U[2]}" membership begin
said stderr "is a Redis Cluster, where handles check no record"

# begin: OLD and JOINT accepted on the four nodes, node 4 untouched
grants 0 0 0
expect 0 "$CLI" --nodes "$OLD" acquire --ttl 30s steps:held
token=$(cat "$out/stdout")
expect 0 "$CLI" --nodes "$OLD" --next-nodes "$NEW" membership begin
said stdout "4 nodes now begun"
expect 0 "$CLI" --nodes "$OLD" --next-nodes "$NEW" membership show --json
python3 - "$out/stdout" <<'EOF' || fail "show --json after begin: $(cat "$out/stdout")"
import json, sys
d = json.load(open(sys.argv[1]))
assert [n["phase"] for n in d["nodes"]] == ["begun"] * 4, d
assert all(n["accepts"] == [d["old"], d["joint"]] and n["accepts_this_handle"] for n in d["nodes"]), d
assert [n["lists"] for n in d["nodes"]] == ["old", "both", "both", "new"], d
EOF
[[ $(field 3 phase) == begun && $(field 1 old) == *"127.0.0.1:$(port 0)/0"* ]] || fail "node 3's record: $(field 3 phase) $(field 1 old)"
[[ -z $(field 4 phase) ]] || fail "node 4, in neither list, got a record"
# out of order, and another change
grants 0 0 78
expect 0 "$CLI" --nodes "$OLD" extend --ttl 30s steps:held "$token"
expect 64 "$CLI" --nodes "$OLD" --next-nodes "$NEW" membership finish
said stderr "is at phase begun: finish comes after advance"
expect 64 "$CLI" --nodes "$OLD" --next-nodes "${U[1]},${U[2]},${U[4]}" membership begin
said stderr "holds the record of another change (phase begun"
expect 64 "$CLI" --nodes "$OLD" --next-nodes "$NEW" membership advance
said stderr "--max-ttl DUR is required"

# advance: JOINT alone, the wait, then JOINT and NEW
expect 0 "$CLI" --nodes "$OLD" --next-nodes "$NEW" membership advance --max-ttl 1s
said stdout "4 nodes now joint"
said stdout "waiting 2000 ms"
said stdout "4 nodes now advanced"
[[ $(field 2 accepts) == "$(field 2 change) $(field 2 new_fp)" ]] || fail "advanced accepts '$(field 2 accepts)'"
grants 78 0 0
# the old holder's extend is refused (exit 2, the records named), its release is not
expect 2 "$CLI" --nodes "$OLD" extend --ttl 30s steps:held "$token"
said stderr "membership records do not accept"
expect 0 "$CLI" --nodes "$OLD" release steps:held "$token"

# finish: NEW's nodes accept NEW only, node 0 (left) nothing
expect 0 "$CLI" --nodes "$OLD" --next-nodes "$NEW" membership finish
said stdout "3 nodes now finished"
said stdout "1 node now left"
[[ $(field 3 accepts) == "$(field 3 new_fp)" && $(field 0 phase) == left && -z $(field 0 accepts) ]] ||
  fail "after finish: node 3 accepts '$(field 3 accepts)', node 0 $(field 0 phase) '$(field 0 accepts)'"
expect 0 "$CLI" --nodes "$NEW" membership show
[[ $(grep -c "finished, accepts NEW .*; this handle accepted" "$out/stdout") == 3 ]] || fail "show: $(cat "$out/stdout")"
grants 78 78 0

# the next change, NEW -> {1,2,4}: node 3 leaves, dead. Every step must
# write every node, so begin fails naming it; --skip lets it go, but only
# a leaving node, and at most quorum - 1 of them.
NEXT="${U[1]},${U[2]},${U[4]}"
"$REDLOCK_CLUSTER_SH" kill 3 -d "$REDLOCK_CLUSTER_DIR" >/dev/null 2>&1 || fail "cannot kill node 3"
killed+=(3)
expect 69 "$CLI" --op-timeout 200ms --nodes "$NEW" --next-nodes "$NEXT" membership begin
said stderr "node '${U[3]}' did not answer"
expect 64 "$CLI" --nodes "$NEW" --next-nodes "$NEXT" membership begin --skip "${U[1]}"
said stderr "only a node that is leaving"
expect 64 "$CLI" --nodes "$NEW" --next-nodes "$NEXT" membership begin --skip "${U[3]}" --skip "${U[0]}"
said stderr "only a node that is leaving"
expect 0 "$CLI" --op-timeout 200ms --nodes "$NEW" --next-nodes "$NEXT" membership begin --skip "${U[3]}"
said stdout "3 nodes now begun"
[[ $(field 4 phase) == begun ]] || fail "node 4 did not get the new change's record"
echo "membership_steps.sh: all checks passed"

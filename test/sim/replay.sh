#!/usr/bin/env bash
# replay.sh SIM -- redlock-sim's determinism and replay (CTest sim_replay):
#  1. seeds run in one process give, seed for seed, the trace hash (and
#     ops, faults, events) that each gives when run alone, in another order;
#  2. the JSON line is the last line and has the fields the interface
#     names; the same command gives the same trace_hash twice;
#  3. the first violating seed of pause-without-fencing, replayed with
#     --seed S --seeds 1 --trace, shows its lost update again with the
#     same trace hash, and prints the events that led to it.
set -euo pipefail
sim=$1
fail() { echo "replay.sh: FAIL: $*" >&2; exit 1; }

together=$("$sim" --scenario safe --seed 11 --seeds 6 --verbose | grep '^seed ')
for s in 16 13 11; do
  alone=$("$sim" --scenario safe --seed "$s" --seeds 1 --verbose | grep '^seed ')
  want=$(grep "^seed $s:" <<<"$together")
  [ "$alone" = "$want" ] || fail "seed $s alone: '$alone', among others: '$want'"
done
echo "ok: seeds 11-16 together and 16, 13, 11 alone agree"

j1=$("$sim" --scenario safe --seed 5 --seeds 3 --json | tail -n 1)
j2=$("$sim" --scenario safe --seed 5 --seeds 3 --json | tail -n 1)
for k in runs ops faults violations first_violation_seed trace_hash expected violations_by_kind \
         stale_writes_refused faults_by_kind floors; do
  grep -q "\"$k\":" <<<"$j1" || fail "JSON line lacks $k: $j1"
done
h1=$(sed 's/.*"trace_hash":"\([0-9a-f]*\)".*/\1/' <<<"$j1")
h2=$(sed 's/.*"trace_hash":"\([0-9a-f]*\)".*/\1/' <<<"$j2")
[ "$h1" = "$h2" ] || fail "the same seeds gave trace hashes $h1 and $h2"
echo "ok: JSON fields present, trace_hash $h1 twice"

out=$("$sim" --scenario pause-without-fencing --seeds 200 --first --json --verbose)
seed=$(tail -n 1 <<<"$out" | sed 's/.*"first_violation_seed":\([0-9]*\).*/\1/')
[[ "$seed" =~ ^[0-9]+$ ]] || fail "no violating seed found: $(tail -n 1 <<<"$out")"
first=$(grep "^seed $seed: .*events" <<<"$out")
again=$("$sim" --scenario pause-without-fencing --seed "$seed" --seeds 1 --trace)
grep -q "VIOLATION (lost-update)" <<<"$again" || fail "seed $seed replayed shows no lost update"
grep -q "store write applied" <<<"$again" || fail "seed $seed's trace shows no store write"
[ "$(grep "^seed $seed: .*events" <<<"$again")" = "$first" ] || fail "seed $seed replayed differs: $first"
echo "ok: violating seed $seed replayed with its trace ($(wc -l <<<"$again") lines)"

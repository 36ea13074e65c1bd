#!/usr/bin/env bash
# cli_steps.sh REDLOCK -- the redlock tool's step commands as a deploy
# script uses them, against the fixture cluster ($REDLOCK_CLUSTER_DIR,
# $REDLOCK_CLUSTER_SH): acquire -> extend -> release, a second acquire
# meanwhile exits 1, the three ways of passing the token, --json, the exit
# codes (1 not held, 2 bad input, 3 no quorum with three nodes paused),
# malformed tokens never printed back, and stats (table and Prometheus).
# Exits non-zero on the first failed check; always resumes what it paused.
set -u
CLI=${1:?usage: cli_steps.sh PATH-TO-REDLOCK}
: "${REDLOCK_CLUSTER_DIR:?}" "${REDLOCK_CLUSTER_SH:?}"
REDLOCK_NODES=$(paste -sd, "$REDLOCK_CLUSTER_DIR/nodes")
export REDLOCK_NODES
res=cli-steps-$$
out=$(mktemp -d)
paused=()
cleanup() {
  local i
  for i in "${paused[@]}"; do "$REDLOCK_CLUSTER_SH" resume "$i" -d "$REDLOCK_CLUSTER_DIR" >/dev/null 2>&1; done
  rm -rf "$out"
}
trap cleanup EXIT
NAME=cli_steps.sh OUT=$out
# shellcheck source=../support/expect.sh
. "$(dirname "$0")/../support/expect.sh"

# acquire prints the token, and only that
expect 0 "$CLI" acquire --ttl 5s "$res"
tok=$(cat "$out/stdout")
[[ $tok =~ ^[0-9a-f]{40}$ ]] || fail "acquire printed '$tok', not a token"

# a second acquire meanwhile is refused with 1, and says why
expect 1 "$CLI" acquire "$res"
grep -q "held by another owner" "$out/stderr" || fail "no reason: $(cat "$out/stderr")"
[[ ! -s $out/stdout ]] || fail "a refused acquire printed something"

# extend: token as argument, from the environment, from stdin
expect 0 "$CLI" extend --ttl 20s "$res" "$tok"
STEP_TOKEN=$tok expect 0 "$CLI" extend --token-env STEP_TOKEN --ttl 20s "$res"
expect 0 "$CLI" extend --token-stdin --ttl 20s "$res" <<<"$tok"
expect 1 "$CLI" acquire --wait 300ms "$res" # still held after all that

# bad input is 2, and a malformed token is never printed back
bad=${tok:0:39}X
expect 2 "$CLI" extend "$res" "$bad"
grep -q "character 40" "$out/stderr" || fail "no position in: $(cat "$out/stderr")"
grep -q "${tok:0:8}" "$out/stderr" && fail "the token was printed back: $(cat "$out/stderr")"
expect 2 "$CLI" release "$res" "${tok}0"
grep -q "${tok:0:8}" "$out/stderr" && fail "the token was printed back: $(cat "$out/stderr")"
expect 2 "$CLI" extend "$res"                               # no token at all
expect 2 "$CLI" extend --token-env NO_SUCH_VARIABLE_HERE "$res"
expect 2 "$CLI" extend --token-stdin "$res" "$tok" </dev/null # two sources
expect 2 "$CLI" acquire --ttl 0 "$res"
expect 2 "$CLI" acquire --nodes redis://bad-uri:x "$res"
expect 2 env -u REDLOCK_NODES "$CLI" acquire "$res"

# no quorum is 3: three of five nodes paused
for i in 0 1 2; do
  "$REDLOCK_CLUSTER_SH" pause "$i" -d "$REDLOCK_CLUSTER_DIR" >/dev/null || fail "cannot pause node $i"
  paused+=("$i")
done
expect 3 "$CLI" extend --op-timeout 200ms "$res" "$tok"
for i in 0 1 2; do "$REDLOCK_CLUSTER_SH" resume "$i" -d "$REDLOCK_CLUSTER_DIR" >/dev/null || fail "cannot resume node $i"; done
paused=()

# release frees it: a new acquire gets it; a second release is 1 (not held)
expect 0 "$CLI" release --token-stdin "$res" <<<"$tok"
expect 1 "$CLI" release "$res" "$tok"
grep -q "may not have run alone" "$out/stderr" || fail "no warning: $(cat "$out/stderr")"

# --json: the whole report
expect 0 "$CLI" acquire --json --fencing --ttl 5s "$res"
/usr/bin/python3 - "$out/stdout" <<'PY' || fail "bad --json output: $(cat "$out/stdout")"
import json, re, sys
r = json.load(open(sys.argv[1]))
assert r["result"] == "ok" and r["command"] == "acquire", r
assert re.fullmatch("[0-9a-f]{40}", r["token"]), r["token"]
assert r["fence"] > 0 and 0 < r["validity_ms"] <= 5000, r
assert r["n_nodes"] == 5 and r["quorum"] == 3 and r["yes"] >= 3, r
assert len(r["nodes"]) == 5 and all(n["node"].startswith("redis://") for n in r["nodes"]), r
assert sum(1 for n in r["nodes"] if n["vote"] == "yes" and n["rtt_us"] >= 0) >= 3, r
open(sys.argv[1] + ".tok", "w").write(r["token"])
PY
tok=$(cat "$out/stdout.tok")
expect 1 "$CLI" acquire --json "$res"
/usr/bin/python3 -c 'import json,sys; r=json.load(sys.stdin); assert r["result"] == "taken" and r["token"] is None, r' \
  <"$out/stdout" || fail "bad --json refusal: $(cat "$out/stdout")"
expect 0 "$CLI" release --json "$res" "$tok"
grep -q '"result":"ok"' "$out/stdout" || fail "release --json: $(cat "$out/stdout")"

# stats: the probe, as a table and as Prometheus text
expect 0 "$CLI" stats --count 3 "$res"
grep -q "3 granted" "$out/stdout" || fail "stats: $(cat "$out/stdout")"
grep -Eq "^  acquire +ok +3$" "$out/stdout" || fail "stats table: $(cat "$out/stdout")"
expect 0 "$CLI" stats --count 2 --prometheus "$res"
grep -q '^redlock_acquires_total{result="ok"} 2$' "$out/stdout" || fail "stats --prometheus: $(head -20 "$out/stdout")"
expect 64 "$CLI" stats --count lots # stats is a query command: the exec table
echo "cli_steps.sh: all checks passed"

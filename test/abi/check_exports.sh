#!/usr/bin/env bash
# check_exports.sh [--expect-fail REGEX] LIBRARY HEADER [CC [INCLUDE_DIR]]
#
# Passes (exit 0) when the shared LIBRARY exports exactly the functions that
# HEADER declares: every defined dynamic symbol is a redlock_* name that the
# header declares, and every function the header declares (static inline
# ones aside) is exported. Prints the exported and declared counts, and on a
# failure every name that breaks the rule; exit 1 then.
#
# The declarations come from the compiler itself (GCC's -aux-info: the
# prototype of every function the header declares, after preprocessing), so
# comments, macros and line breaks in the header cannot fool the list. The
# version node (an absolute symbol named like REDLOCK_0) is not a name a
# program can bind to and is left out of the exports.
#
# --expect-fail REGEX: the self-test mode; passes only when the check fails
# and its report matches REGEX (the fault it was given was found).
set -uo pipefail
if [ "${1:-}" = --expect-fail ]; then
  want=$2
  shift 2
  out=$("$0" "$@" 2>&1)
  rc=$?
  echo "$out"
  if [ "$rc" = 1 ] && grep -Eq -- "$want" <<<"$out"; then
    echo "ok: the check failed as expected (/$want/)"
    exit 0
  fi
  echo "FAIL: expected the check to fail with /$want/ (exit $rc)" >&2
  exit 1
fi
lib=${1:?usage: check_exports.sh LIBRARY HEADER [CC [INCLUDE_DIR]]}
header=${2:?usage: check_exports.sh LIBRARY HEADER [CC [INCLUDE_DIR]]}
cc=${3:-gcc}
incdir=${4:-$(dirname "$header")}

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

if ! nm -D --defined-only "$lib" >"$tmp/nm"; then
  echo "check_exports: cannot read the dynamic symbols of $lib" >&2
  exit 1
fi
awk '!($2 == "A" && $3 ~ /^REDLOCK_[0-9.]+$/) { sub(/@.*/, "", $3); print $3 }' "$tmp/nm" | sort -u >"$tmp/exported"

if ! "$cc" -std=c11 -fsyntax-only -aux-info "$tmp/aux" -I "$incdir" -x c "$header"; then
  echo "check_exports: $cc cannot compile $header" >&2
  exit 1
fi
grep -v '^/\* compiled from' "$tmp/aux" | grep -v '\bstatic\b' |
  grep -o '\bredlock_[A-Za-z0-9_]* (' | sed 's/ ($//' | sort -u >"$tmp/declared"

nexp=$(wc -l <"$tmp/exported")
ndecl=$(wc -l <"$tmp/declared")
echo "$lib: $nexp names exported; $header: $ndecl functions declared"
if [ "$ndecl" = 0 ]; then
  echo "FAIL: no redlock_* function found in $header" >&2
  exit 1
fi

rc=0
foreign=$(grep -v '^redlock_' "$tmp/exported")
if [ -n "$foreign" ]; then
  echo "FAIL: $(grep -cv '^redlock_' "$tmp/exported") exported names are not redlock_*, e.g.:" >&2
  echo "$foreign" | head -20 | sed 's/^/  /' >&2
  rc=1
fi
undeclared=$(comm -23 "$tmp/exported" "$tmp/declared" | grep '^redlock_')
if [ -n "$undeclared" ]; then
  echo "FAIL: exported redlock_* names that $header does not declare:" >&2
  echo "$undeclared" | sed 's/^/  /' >&2
  rc=1
fi
missing=$(comm -13 "$tmp/exported" "$tmp/declared")
if [ -n "$missing" ]; then
  echo "FAIL: functions $header declares that $lib does not export:" >&2
  echo "$missing" | sed 's/^/  /' >&2
  rc=1
fi
[ "$rc" != 0 ] || echo "ok: the exports are exactly the header's functions"
exit $rc

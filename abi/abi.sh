#!/usr/bin/env bash
# abi/abi.sh dump LIBRARY OUT     write LIBRARY's ABI (abigail XML) to OUT
# abi/abi.sh check LIBRARY BASE   compare LIBRARY against the baseline BASE
# abi/abi.sh symbols LIBRARY FILE VERSION
#                                 add LIBRARY's exported functions that the
#                                 Debian symbols FILE lacks, as new in VERSION
#
# The ABI is what abidw (Debian's abigail-tools) reads from the library's
# debug information: its exported functions with their types, reduced to the
# types include/ defines (--headers-dir, --drop-private-types: the opaque
# handles' insides are the library's business) and to the exported
# interfaces. No paths of the machine and no DT_NEEDED list are written, so
# the baseline is the same from any build directory and any build type
# (Debug and RelWithDebInfo give the same file).
#
# check passes (exit 0) when LIBRARY is compatible with BASE: nothing
# changed, or functions were only added. It fails (exit 1) on anything else
# a program built against BASE could notice: a function removed, or a
# public type or a function's signature changed (abidiff's "incompatible"
# bit, or any change left once additions are set aside), and when abidiff
# itself fails. abidiff's report is printed either way. doc/abi.md says
# when a failure is right and what to do then.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
include=$(cd "$here/../include" && pwd)

# dump LIBRARY OUT: abidw with the options the baseline is written with.
dump() {
  abidw --headers-dir "$include" --drop-private-types --exported-interfaces-only \
    --no-corpus-path --no-comp-dir-path --no-elf-needed --short-locs --type-id-style hash --out-file "$2" "$1"
}

# symbols LIBRARY FILE VERSION: the exported names FILE (a Debian symbols
# file, debian/libredlock0.symbols) does not list yet are added, with their
# version node, as first in VERSION; the lines already there stay as they
# are (a name is never taken out: that is an incompatible change, which
# comes with a new SONAME and a new symbols file). Sorted like
# dpkg-gensymbols writes them.
symbols() {
  local lib=$1 file=$2 version=$3 tmp
  tmp=$(mktemp -d) || return 1
  nm -D --defined-only "$lib" | awk '$2 == "A" && $3 !~ /@/ { $3 = $3 "@" $3 } { print $3 }' |
    sed 's/@@*/@/' | sort -u >"$tmp/exported"
  sed -n 's/^ \([^ ]*\) .*/\1/p' "$file" | sort -u >"$tmp/listed"
  comm -23 "$tmp/exported" "$tmp/listed" | sed "s/\$/ $version/; s/^/ /" >"$tmp/new"
  if [ -s "$tmp/new" ]; then
    { grep -v '^ ' "$file"; { grep '^ ' "$file"; cat "$tmp/new"; } | LC_ALL=C sort; } >"$tmp/file"
    cp "$tmp/file" "$file"
    echo "abi.sh: $file: $(wc -l <"$tmp/new") names added as new in $version:"
    cat "$tmp/new"
  else
    echo "abi.sh: $file lists every exported name"
  fi
  rm -rf "$tmp"
}

cmd=${1:-}
lib=${2:-}
file=${3:-}
if [ "$cmd" = symbols ]; then
  [ -n "${4:-}" ] && [ -f "$file" ] || { echo "usage: abi/abi.sh symbols LIBRARY FILE VERSION" >&2; exit 2; }
  symbols "$lib" "$file" "$4"
  exit
fi
if [ -z "$lib" ] || [ -z "$file" ] || { [ "$cmd" != dump ] && [ "$cmd" != check ]; }; then
  echo "usage: abi/abi.sh dump|check LIBRARY FILE" >&2
  exit 2
fi
command -v abidw >/dev/null || { echo "abi.sh: abidw not found (Debian package abigail-tools; make deps)" >&2; exit 1; }
[ -f "$lib" ] || { echo "abi.sh: no library $lib" >&2; exit 1; }

if [ "$cmd" = dump ]; then
  dump "$lib" "$file" || { echo "abi.sh: abidw failed on $lib" >&2; exit 1; }
  echo "abi.sh: wrote $file ($(grep -c '<elf-symbol ' "$file") symbols)"
  exit 0
fi

[ -f "$file" ] || { echo "abi.sh: no baseline $file (make abi-update writes it)" >&2; exit 1; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
dump "$lib" "$tmp/new.abi" || { echo "abi.sh: abidw failed on $lib" >&2; exit 1; }
abidiff "$file" "$tmp/new.abi"
rc=$?
# abidiff's exit status is a bit set: 1 error, 2 usage, 4 ABI change,
# 8 incompatible change.
if [ $((rc & 3)) != 0 ]; then
  echo "FAIL: abidiff could not compare (exit $rc)" >&2
  exit 1
fi
if [ $((rc & 8)) != 0 ]; then
  echo "FAIL: incompatible ABI change against $file (abidiff exit $rc)" >&2
  exit 1
fi
if [ $((rc & 4)) != 0 ]; then
  abidiff --no-added-syms "$file" "$tmp/new.abi" >"$tmp/rest"
  rest=$?
  if [ "$rest" != 0 ]; then
    echo "FAIL: the ABI changed beyond added functions against $file (abidiff exit $rc, $rest without the additions)" >&2
    exit 1
  fi
  echo "ok: compatible with $file (functions added only; make abi-update records them)"
  exit 0
fi
echo "ok: compatible with $file: no change, or only changes abidiff deems harmless (an enumerator appended)"

# expect.sh -- checks for the redlock tool's shell tests, sourced. The
# sourcing script sets NAME (its name in messages) and OUT (a scratch
# directory that holds each command's stdout and stderr).
#   fail MSG           says MSG and exits 1
#   expect CODE CMD... runs CMD (stdout to $OUT/stdout, stderr to
#                      $OUT/stderr) and fails unless it exits CODE
#   said STREAM TEXT   fails unless $OUT/STREAM (stdout or stderr) holds TEXT
fail() { echo "$NAME: FAIL: $*" >&2; exit 1; }
expect() {
  local want=$1 rc=0
  shift
  "$@" >"$OUT/stdout" 2>"$OUT/stderr" || rc=$?
  [[ $rc == "$want" ]] || fail "'$*' exited $rc, expected $want; stdout: $(cat "$OUT/stdout"); stderr: $(cat "$OUT/stderr")"
}
said() { grep -qF -- "$2" "$OUT/$1" || fail "$1 lacks '$2': $(cat "$OUT/$1")"; }

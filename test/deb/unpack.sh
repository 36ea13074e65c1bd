# unpack.sh -- sourced by the package checks (check_dev.sh, check_python.sh)
# after they set dist, version and src: a temporary directory tmp, removed
# on exit with the cluster a check may start in tmp/cluster; fail MESSAGE;
# unpack PACKAGE...: each PACKAGE_VERSION_*.deb of dist (exactly one each)
# extracted into root=tmp/root with dpkg-deb -x, nothing installed.
tmp=$(mktemp -d) || exit 1
root=$tmp/root
cleanup() {
  [ ! -d "$tmp/cluster" ] || "$src/deploy/cluster.sh" stop -d "$tmp/cluster" >/dev/null 2>&1
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

unpack() {
  local pkg found
  for pkg in "$@"; do
    found=("$dist/${pkg}_${version}_"*.deb)
    [ ${#found[@]} = 1 ] && [ -f "${found[0]}" ] || fail "expected one ${pkg}_${version}_*.deb in $dist, found: ${found[*]}"
    dpkg-deb -x "${found[0]}" "$root" || fail "dpkg-deb -x ${found[0]}"
    echo "unpacked $(basename "${found[0]}")"
  done
}

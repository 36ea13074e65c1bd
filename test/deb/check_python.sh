#!/usr/bin/env bash
# check_python.sh DIST_DIR VERSION SOURCE_DIR
#
# python3-libredlock as a user gets it: unpacks libredlock0_VERSION_*.deb
# and python3-libredlock_VERSION_all.deb from DIST_DIR into a temporary root
# (dpkg-deb -x, nothing installed on the machine), then Debian's python3
# imports the module from that root, loads libredlock.so.0 from it through
# the dynamic loader's search (LD_LIBRARY_PATH, not LIBREDLOCK_LIBRARY), and
# takes, extends and releases a lock on 3 local redis-server masters
# (deploy/cluster.sh, always stopped). Exit 0 when all holds; 1 with the
# reason otherwise.
set -uo pipefail
dist=${1:?usage: check_python.sh DIST_DIR VERSION SOURCE_DIR}
version=${2:?usage: check_python.sh DIST_DIR VERSION SOURCE_DIR}
src=${3:?usage: check_python.sh DIST_DIR VERSION SOURCE_DIR}

# shellcheck source=test/deb/unpack.sh
. "$(dirname "$0")/unpack.sh"
unpack libredlock0 python3-libredlock
site=$root/usr/lib/python3/dist-packages
[ -f "$site/libredlock/__init__.py" ] || fail "no usr/lib/python3/dist-packages/libredlock/__init__.py in python3-libredlock"
dpkg-deb -f "$dist/python3-libredlock_${version}_all.deb" Depends | grep -q 'libredlock0' ||
  fail "python3-libredlock does not depend on libredlock0"

"$src/deploy/cluster.sh" start -n 3 -d "$tmp/cluster" >/dev/null || fail "cluster.sh start"
nodes=$(paste -sd, "$tmp/cluster/nodes")
env -u LIBREDLOCK_LIBRARY -u PYTHONPATH PYTHONPATH="$site" PYTHONDONTWRITEBYTECODE=1 \
  LD_LIBRARY_PATH="$root/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH)" /usr/bin/python3 - "$nodes" "$root" <<'PY' ||
import sys
import libredlock

nodes, root = sys.argv[1].split(","), sys.argv[2]
assert libredlock.__file__.startswith(root), f"libredlock imported from {libredlock.__file__}, not the package"
maps = [line.split()[-1] for line in open("/proc/self/maps") if "libredlock.so" in line]
assert maps and all(m.startswith(root) for m in maps), f"libredlock.so.0 loaded from {set(maps)}, not the package"
with libredlock.Redlock(nodes) as rl, rl.lock("deb:python", ttl=10.0) as lk:
    assert lk.valid()
    lk.extend(20.0)
print("ok: python3-libredlock locked, extended and released on", len(nodes), "nodes")
PY
  fail "python3-libredlock does not work from the unpacked packages (above)"
echo "ok: python3-libredlock $version works with libredlock0 $version alone"

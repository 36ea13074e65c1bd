#!/usr/bin/env bash
# check_dev.sh DIST_DIR VERSION SOURCE_DIR
#
# The packages as a user gets them: unpacks libredlock0_VERSION_*.deb and
# libredlock-dev_VERSION_*.deb from DIST_DIR into a temporary root
# (dpkg-deb -x, nothing installed on the machine) and builds SOURCE_DIR's
# examples/basic.c against that root alone:
#   1. with pkg-config (redlock.pc, its prefix pointed at the root): linked
#      to the shared library, and with --static to libredlock.a;
#   2. with CMake's find_package(redlock) (the -dev package's CMake files):
#      the targets redlock::redlock and redlock::redlock_static.
# Every build must have read redlock.h and libredlock.* from the root
# (the compiler's and linker's traces show which files they opened), the
# shared builds must resolve libredlock.so.0 in the root, and each program
# must acquire, extend and release a lock on 3 local redis-server masters
# (deploy/cluster.sh, always stopped). Also checks the licence where the
# packages name it (debian/copyright, redlock.pc, the CMake package) and
# the packaged library's exports (test/abi/check_exports.sh), and builds
# examples/lock.cpp with the -dev package's C++ header and runs it.
# Exit 0 when all holds; 1 with the reason otherwise.
set -uo pipefail
dist=${1:?usage: check_dev.sh DIST_DIR VERSION SOURCE_DIR}
version=${2:?usage: check_dev.sh DIST_DIR VERSION SOURCE_DIR}
src=${3:?usage: check_dev.sh DIST_DIR VERSION SOURCE_DIR}
cc=${CC:-cc}

# shellcheck source=test/deb/unpack.sh
. "$(dirname "$0")/unpack.sh"
unpack libredlock0 libredlock-dev
triplet=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
libdir=$root/usr/lib/$triplet
[ -f "$root/usr/include/redlock.h" ] || fail "no usr/include/redlock.h in the packages"

# The packaged library (built by debhelper with its own flags) exports the
# header's functions and nothing else, like the project's build.
"$src/test/abi/check_exports.sh" "$libdir/libredlock.so.0" "$root/usr/include/redlock.h" || fail "libredlock0's exports"

# The licence, where the packages name it.
grep -q '^License: BSD-3-Clause' "$root/usr/share/doc/libredlock0/copyright" || fail "libredlock0's copyright names no BSD-3-Clause"
grep -q '^License: BSD-3-Clause' "$libdir/pkgconfig/redlock.pc" || fail "redlock.pc names no BSD-3-Clause licence"
grep -q 'BSD-3-Clause' "$libdir/cmake/redlock/redlockConfig.cmake" || fail "redlockConfig.cmake names no BSD-3-Clause licence"

# from_root TRACE WHAT: every line of TRACE naming WHAT is a file of the root.
from_root() {
  local lines
  lines=$(grep -E "$2" "$1")
  [ -n "$lines" ] || fail "$1 shows no $2 at all"
  if grep -E "$2" "$1" | grep -vq "$root"; then
    grep -E "$2" "$1" | grep -v "$root" >&2
    fail "a build used $2 from outside the unpacked packages (above)"
  fi
}

# 1. pkg-config, prefix moved to the root.
export PKG_CONFIG_PATH=$libdir/pkgconfig
pc() { pkg-config --define-variable=prefix="$root/usr" "$@" redlock; }
pc --exists || fail "pkg-config cannot find redlock in $PKG_CONFIG_PATH"
cflags=$(pc --cflags) && libs=$(pc --libs) && static_libs=$(pc --static --libs) || fail "pkg-config redlock"
echo "pkg-config: --cflags $cflags; --libs $libs; --static --libs $static_libs"
# shellcheck disable=SC2086
"$cc" -H $cflags "$src/examples/basic.c" -o "$tmp/basic_pc" $libs -Wl,--trace >"$tmp/pc.trace" 2>&1 ||
  { cat "$tmp/pc.trace" >&2; fail "basic.c does not build with pkg-config's flags"; }
from_root "$tmp/pc.trace" 'redlock\.h'
from_root "$tmp/pc.trace" 'libredlock\.'
static_libs=${static_libs/-lredlock/-l:libredlock.a}
# shellcheck disable=SC2086
"$cc" -H $cflags "$src/examples/basic.c" -o "$tmp/basic_pc_static" $static_libs -Wl,--trace >"$tmp/pcs.trace" 2>&1 ||
  { cat "$tmp/pcs.trace" >&2; fail "basic.c does not link libredlock.a with pkg-config --static's flags"; }
from_root "$tmp/pcs.trace" 'libredlock\.a'
readelf -d "$tmp/basic_pc_static" | grep -q 'libredlock' && fail "the static build still needs a libredlock.so"

# 2. CMake's find_package, searching the root only for redlock.
mkdir -p "$tmp/cmake"
cat >"$tmp/cmake/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.21)
project(redlock_deb_check LANGUAGES C)
find_package(redlock $version REQUIRED CONFIG)
message(STATUS "redlock_DIR=\${redlock_DIR} redlock_LICENSE=\${redlock_LICENSE}")
add_executable(basic_cmake $src/examples/basic.c)
target_link_libraries(basic_cmake PRIVATE redlock::redlock)
add_executable(basic_cmake_static $src/examples/basic.c)
target_link_libraries(basic_cmake_static PRIVATE redlock::redlock_static)
CMAKE
cmake -S "$tmp/cmake" -B "$tmp/cmake/build" -DCMAKE_PREFIX_PATH="$root/usr" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF \
  -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF >"$tmp/cmake.log" 2>&1 || { cat "$tmp/cmake.log" >&2; fail "find_package(redlock)"; }
grep -q "redlock_DIR=$libdir/cmake/redlock redlock_LICENSE=BSD-3-Clause" "$tmp/cmake.log" ||
  { cat "$tmp/cmake.log" >&2; fail "find_package(redlock) did not take the root's package, or it names no licence"; }
cmake --build "$tmp/cmake/build" -- VERBOSE=1 >"$tmp/cmake.build" 2>&1 || { cat "$tmp/cmake.build" >&2; fail "basic.c does not build with CMake"; }
from_root "$tmp/cmake.build" '(-I|isystem) *[^ ]*include( |$)|libredlock\.'

# The shared builds find libredlock.so.0 in the root.
export LD_LIBRARY_PATH=$libdir
for prog in basic_pc cmake/build/basic_cmake; do
  ldd "$tmp/$prog" | grep 'libredlock\.so\.0 => ' >"$tmp/ldd" || fail "$prog does not need libredlock.so.0"
  grep -q "=> $libdir/libredlock.so.0 " "$tmp/ldd" || { cat "$tmp/ldd" >&2; fail "$prog resolves libredlock.so.0 outside the root"; }
done

# Each program takes, extends and releases a lock on 3 local masters.
"$src/deploy/cluster.sh" start -n 3 -d "$tmp/cluster" >/dev/null || fail "cluster.sh start"
export REDLOCK_NODES
REDLOCK_NODES=$(paste -sd, "$tmp/cluster/nodes")
for prog in basic_pc basic_pc_static cmake/build/basic_cmake cmake/build/basic_cmake_static; do
  "$tmp/$prog" >"$tmp/run.out" 2>&1 || { st=$?; cat "$tmp/run.out" >&2; fail "$prog exited $st"; }
  grep -Eq '^released: [23] of 3 nodes confirmed' "$tmp/run.out" || { cat "$tmp/run.out" >&2; fail "$prog did not release on a quorum"; }
  echo "ok: $prog acquired, extended and released on 3 nodes"
done
echo "ok: examples/basic.c builds and runs against libredlock0 and libredlock-dev $version alone"

# The C++ wrapper from the -dev package: examples/lock.cpp, C++17 with
# warnings as errors, against the root's headers and library, on the nodes.
cxx=${CXX:-c++}
"$cxx" -std=c++17 -Wall -Wextra -Werror -H -I"$root/usr/include" "$src/examples/lock.cpp" -o "$tmp/lock_cpp" \
  "$libdir/libredlock.so" -Wl,--trace >"$tmp/cpp.trace" 2>&1 || { cat "$tmp/cpp.trace" >&2; fail "lock.cpp does not build"; }
from_root "$tmp/cpp.trace" 'redlock\.hpp'
# shellcheck disable=SC2046
"$tmp/lock_cpp" $(tr ',' ' ' <<<"$REDLOCK_NODES") >"$tmp/run.out" 2>&1 || { st=$?; cat "$tmp/run.out" >&2; fail "lock_cpp exited $st"; }
echo "ok: examples/lock.cpp builds against libredlock-dev's redlock/redlock.hpp and runs"

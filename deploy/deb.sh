#!/usr/bin/env bash
# deploy/deb.sh OUT_DIR SCRATCH_DIR
#
# Builds libredlock's Debian packages (debian/: libredlock0, libredlock-dev,
# redlock-tools, python3-libredlock) from this checkout and leaves the .deb files, with the
# .changes and .buildinfo, in OUT_DIR; then runs lintian on them and fails
# when it reports an error. dpkg-buildpackage writes its results next to the
# source tree, so the tree (the files git knows, committed or not, and the
# untracked ones .gitignore does not exclude) is copied to
# SCRATCH_DIR/libredlock-VERSION first; SCRATCH_DIR is emptied on every run.
# Needs debhelper, dpkg-dev, lintian and the build dependencies of
# debian/control (`make deps` installs them; `make deb` runs this).
set -euo pipefail
out=${1:?usage: deploy/deb.sh OUT_DIR SCRATCH_DIR}
scratch=${2:?usage: deploy/deb.sh OUT_DIR SCRATCH_DIR}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

# The package's version is the project's: debian/changelog must name the
# version of CMakeLists.txt's project(), or the packages would lie.
cmake_version=$(sed -n 's/^project(libredlock VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
deb_version=$(dpkg-parsechangelog -S Version)
if [ "$cmake_version" != "$deb_version" ]; then
  echo "deb.sh: debian/changelog is at $deb_version but CMakeLists.txt at $cmake_version;" \
    "add a debian/changelog entry (dch -v $cmake_version)" >&2
  exit 1
fi

rm -rf "$scratch"
src="$scratch/libredlock-$deb_version"
mkdir -p "$src" "$out"
if git -C "$root" rev-parse --git-dir >/dev/null 2>&1; then
  git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do
    [ -e "$f" ] && printf '%s\0' "$f"
  done | tar --null -T - -cf - | tar -xf - -C "$src"
else
  tar --exclude='./build*' --exclude=./dist --exclude=./.git -cf - . | tar -xf - -C "$src"
fi

echo "deb.sh: building libredlock $deb_version in $src"
(cd "$src" && DEB_BUILD_OPTIONS="parallel=${JOBS:-2} ${DEB_BUILD_OPTIONS:-}" \
  dpkg-buildpackage -b -us -uc)

changes="libredlock_${deb_version}_$(dpkg-architecture -qDEB_HOST_ARCH).changes"
# The packages this version built (an earlier version's stay where they are).
for f in $(awk '/^Files:/ { on = 1; next } /^[^ ]/ { on = 0 } on { print $5 }' "$scratch/$changes") "$changes"; do
  mv -f "$scratch/$f" "$out/"
done
echo "deb.sh: packages in $out:"
(cd "$out" && ls -l $(awk '/^Files:/ { on = 1; next } /^[^ ]/ { on = 0 } on && /\.deb$/ { print $5 }' "$changes"))

echo "deb.sh: lintian $changes"
lintian --fail-on error --display-info "$out/$changes"
echo "deb.sh: lintian reports no errors"

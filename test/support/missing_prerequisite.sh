#!/bin/sh
# missing_prerequisite.sh TOOL PACKAGE [COMMAND ARG...]
#
# Stands in front of the command of a test whose TOOL CMake did not find
# when it configured the build (test/CMakeLists.txt): runs nothing, says
# which tool is missing and which Debian package provides it, and exits 1,
# so that a missing prerequisite fails the suite instead of taking the test
# out of it.
tool=${1:?usage: missing_prerequisite.sh TOOL PACKAGE [COMMAND ARG...]}
package=${2:?usage: missing_prerequisite.sh TOOL PACKAGE [COMMAND ARG...]}
shift 2
echo "FAIL: this test needs $tool, which CMake did not find when it configured the build" >&2
echo "  (the command not run: $*)" >&2
echo "  install the Debian package $package (\`make deps\` does) and configure again (\`make build\`)" >&2
exit 1

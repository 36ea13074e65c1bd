#!/usr/bin/env bash
# fixture_cluster.sh VERB [options] -- deploy/cluster.sh for the fixture
# clusters of the integration tests (test/CMakeLists.txt), whose nodes run
# at a higher CPU priority (nice -10) when this runs as root.
#
# CTest runs tests of two groups at once, each against a cluster of its
# own. An acquire returns once a majority granted and a short grace (a few
# round trips, at least 0.5 ms) ran out, and many tests then check that the
# lock's key is on every node: a node that the neighbouring test's load
# kept off the CPU past that grace would get its SET only later. The nodes
# started and restarted through this script (CTest's fixture, and the
# tests' restarts: REDLOCK_CLUSTER_SH) answer ahead of the test programs.
set -u
here=$(cd "$(dirname "$0")" && pwd)
cluster_sh=$here/../../deploy/cluster.sh
if [ "$(id -u)" = 0 ]; then exec nice -n -10 "$cluster_sh" "$@"; fi
exec "$cluster_sh" "$@"

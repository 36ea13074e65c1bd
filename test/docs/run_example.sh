#!/usr/bin/env bash
# run_example.sh PROGRAM -- runs an example of examples/ with the fixture
# cluster's node URIs ($REDLOCK_CLUSTER_DIR/nodes) as its arguments, in the
# order of that file, and exits with its status. examples/fencing.c reads
# its first argument as the store and the rest as its lock nodes, so the
# first node is its store and not one of its lock nodes.
set -euo pipefail
prog=${1:?usage: run_example.sh PROGRAM}
nodes_file=${REDLOCK_CLUSTER_DIR:?REDLOCK_CLUSTER_DIR is not set}/nodes
mapfile -t nodes < "$nodes_file"
[ "${#nodes[@]}" -ge 3 ] || { echo "run_example.sh: fewer than 3 nodes in $nodes_file" >&2; exit 1; }
exec "$prog" "${nodes[@]}"

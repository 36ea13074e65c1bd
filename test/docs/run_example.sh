#!/usr/bin/env bash
# run_example.sh [--store] PROGRAM -- runs an example of examples/ with the
# fixture cluster's node URIs ($REDLOCK_CLUSTER_DIR/nodes) as its arguments,
# and exits with its status. --store: the first node is given first, as the
# store of examples/fencing.c, and the others as its lock nodes (so the
# store is not one of the lock nodes).
set -euo pipefail
store=0
if [ "${1:-}" = --store ]; then store=1; shift; fi
prog=${1:?usage: run_example.sh [--store] PROGRAM}
nodes_file=${REDLOCK_CLUSTER_DIR:?REDLOCK_CLUSTER_DIR is not set}/nodes
mapfile -t nodes < "$nodes_file"
[ "${#nodes[@]}" -ge 3 ] || { echo "run_example.sh: fewer than 3 nodes in $nodes_file" >&2; exit 1; }
if [ "$store" = 1 ]; then
  args=("${nodes[0]}" "${nodes[@]:1}")
else
  args=("${nodes[@]}")
fi
exec "$prog" "${args[@]}"

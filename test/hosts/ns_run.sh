#!/usr/bin/env bash
# ns_run.sh [--hosts-only] CLUSTER_SH PROGRAM [ARGS...]
#
# Runs PROGRAM (a host-name test) with a name service of its own, without
# touching the machine's files: in a private mount namespace, a test
# /etc/hosts (Debian's standard localhost lines, where `localhost` is ::1
# first and 127.0.0.1 second), /etc/resolv.conf (nameserver 127.0.0.53,
# where the test may bind a socket that drops every query) and
# /etc/nsswitch.conf (files, then dns) are bind-mounted over the real ones.
#
# By default it also enters a private network namespace (loopback only,
# so the test may add ip6tables rules and bind port 53 without touching
# the machine), starts a 5-node cluster there with CLUSTER_SH and one
# redis-server listening on [::1] only, and stops them all afterwards.
# PROGRAM gets REDLOCK_CLUSTER_DIR, RL_HOSTS_FILE (the mounted hosts file,
# which it may rewrite) and RL_V6_PORT.
#
# --hosts-only: only the mount namespace (the machine's network, so
# PROGRAM can reach fixtures started outside, such as the TLS nodes).
#
# Where namespaces are unavailable this fails with a message: the test is
# never skipped and counted as passed.
set -u
hosts_only=0
if [[ ${1:-} == --hosts-only ]]; then hosts_only=1; shift; fi
if [[ $# -lt 2 ]]; then echo "usage: ns_run.sh [--hosts-only] CLUSTER_SH PROGRAM [ARGS...]" >&2; exit 2; fi

if [[ ${RL_NS_INSIDE:-0} != 1 ]]; then
  flags=(--mount --propagation private)
  what="mount"
  [[ $hosts_only == 1 ]] || flags+=(--net) what="mount and network"
  started=$(mktemp)
  RL_NS_INSIDE=1 RL_NS_STARTED=$started unshare "${flags[@]}" -- "$0" "$@"
  rc=$?
  if [[ ! -s $started ]]; then
    echo "ns_run.sh: could not enter a private $what namespace (unshare ${flags[*]}: exit $rc)." >&2
    echo "ns_run.sh: the host-name tests need them (root, or user namespaces): FAILED, not skipped." >&2
    rc=1
  fi
  rm -f "$started"
  exit $rc
fi

echo inside >"$RL_NS_STARTED"
cluster_sh=$1
shift
dir=$(mktemp -d /tmp/rl-hosts.XXXXXX)
cleanup() {
  if [[ $hosts_only == 0 ]]; then
    "$cluster_sh" stop -d "$dir/cluster" >/dev/null 2>&1
    [[ -f $dir/v6.pid ]] && kill -9 "$(cat "$dir/v6.pid")" 2>/dev/null
  fi
  rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail() { echo "ns_run.sh: $*" >&2; exit 1; }

printf '127.0.0.1\tlocalhost\n::1\t\tlocalhost ip6-localhost ip6-loopback\nff02::1\t\tip6-allnodes\nff02::2\t\tip6-allrouters\n' >"$dir/hosts"
printf 'nameserver 127.0.0.53\n' >"$dir/resolv.conf"
printf 'hosts: files dns\n' >"$dir/nsswitch.conf"
for f in hosts resolv.conf nsswitch.conf; do
  mount --bind "$dir/$f" "/etc/$f" || fail "cannot bind-mount a test /etc/$f"
done
export RL_HOSTS_FILE=$dir/hosts

if [[ $hosts_only == 0 ]]; then
  ip link set lo up || fail "cannot bring up the loopback interface of the test network namespace"
  "$cluster_sh" start -n 5 -d "$dir/cluster" >/dev/null || fail "cluster.sh could not start 5 nodes"
  export REDLOCK_CLUSTER_DIR=$dir/cluster RL_V6_PORT=6391
  redis-server --port "$RL_V6_PORT" --bind ::1 --save '' --appendonly no --daemonize yes \
    --pidfile "$dir/v6.pid" --dir "$dir" --logfile "$dir/v6.log" >/dev/null || fail "no redis-server on [::1]"
  for _ in $(seq 50); do redis-cli -h ::1 -p "$RL_V6_PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
fi
"$@"

#!/bin/sh
# check_compose.sh COMPOSE_FILE [clusters] -- the CTests deploy_compose_config
# and deploy_compose_cluster_config.
#
# Validates a compose file without a Docker engine, with Debian's
# docker-compose (installed by `make deps`; its absence is a failure):
#   - `docker-compose config -q` accepts the file;
# deploy/docker-compose.yml (no second argument):
#   - exactly five services, each an image redis:7 master whose command turns
#     on appendonly with appendfsync always and has no replicaof/slaveof;
#   - each has a redis-cli ping healthcheck, its own host port and its own
#     named volume on /data.
# deploy/docker-compose.cluster.yml (second argument `clusters`):
#   - nine members: image redis:7 on the host's network, cluster-enabled,
#     bound to 127.0.0.1 on a port (and cluster bus port + 10000) of their
#     own, appendonly yes + appendfsync always, no replicaof/slaveof, a
#     redis-cli ping healthcheck on their port, a named volume on /data;
#   - three one-shot init services (restart "no", host network) that each run
#     `redis-cli --cluster create` over three members' 127.0.0.1 ports with
#     --cluster-yes and no replicas, and depend on those three services being
#     healthy; every member belongs to exactly one of them.
# deploy/docker-compose.sentinel.yml (second argument `sentinels`):
#   - three masters and three replicas (image redis:7, host network, bound to
#     127.0.0.1, appendonly yes + appendfsync always, a named volume on
#     /data), each replica the replica of a master and each master with one;
#   - three sentinels (redis-server --sentinel) that each watch every master
#     with quorum 2 and wait for every data node.
# The normalized `docker-compose config` output is checked with python3 and
# PyYAML, both dependencies of Debian's docker-compose.
set -eu
file=${1:?usage: check_compose.sh COMPOSE_FILE [clusters|sentinels]}
mode=${2:-masters}

if ! command -v docker-compose >/dev/null 2>&1; then
  echo "FAIL: docker-compose is not installed (make deps installs Debian's docker-compose)"
  exit 1
fi
if ! docker-compose -f "$file" config -q; then
  echo "FAIL: docker-compose config rejected $file"
  exit 1
fi
if [ "$mode" = clusters ]; then
  docker-compose -f "$file" config | python3 -c '
import re, shlex, sys, yaml

cfg = yaml.safe_load(sys.stdin)
services = cfg.get("services") or {}
volumes = cfg.get("volumes") or {}
errors = []

def args_of(svc):
    cmd = svc.get("command") or []
    return shlex.split(cmd) if isinstance(cmd, str) else [str(a) for a in cmd]

members, inits = {}, {}
for name, svc in sorted(services.items()):
    args = args_of(svc)
    text = " ".join(args)
    if args[:1] == ["redis-server"]:
        members[name] = (svc, args)
    elif "redis-cli --cluster create" in text:
        inits[name] = (svc, text)
    else:
        errors.append("%s: neither a redis-server member nor a cluster init service" % name)
if len(members) != 9:
    errors.append("want 9 cluster members, found %d: %s" % (len(members), ", ".join(sorted(members))))
if len(inits) != 3:
    errors.append("want 3 init services, found %d: %s" % (len(inits), ", ".join(sorted(inits))))

port_of, used, vols = {}, {}, {}
for name, (svc, args) in sorted(members.items()):
    image = str(svc.get("image", ""))
    if not (image == "redis:7" or image.startswith("redis:7.") or image.startswith("redis:7-")):
        errors.append("%s: image %r is not redis:7" % (name, image))
    if svc.get("network_mode") != "host":
        errors.append("%s: not on the host network (the cluster announces its addresses)" % name)
    if svc.get("ports"):
        errors.append("%s: publishes ports, which the host network does not need" % name)
    pairs = {args[i]: args[i + 1] for i in range(len(args) - 1) if args[i].startswith("--")}
    for opt, want in (("--cluster-enabled", "yes"), ("--bind", "127.0.0.1"), ("--appendonly", "yes"),
                      ("--appendfsync", "always")):
        if pairs.get(opt) != want:
            errors.append("%s: no %s %s" % (name, opt, want))
    if not pairs.get("--cluster-config-file"):
        errors.append("%s: no --cluster-config-file" % name)
    if any(a.lstrip("-") in ("replicaof", "slaveof") for a in args):
        errors.append("%s: is a replica (replicaof/slaveof)" % name)
    port = pairs.get("--port", "")
    if not port.isdigit() or not 1024 <= int(port) <= 55535:
        errors.append("%s: port %r is not 1024..55535 (its bus is port + 10000)" % (name, port))
        continue
    port_of[name] = port
    for p in (int(port), int(port) + 10000):
        if p in used:
            errors.append("%s: port %d also used by %s" % (name, p, used[p]))
        used[p] = name
    test = svc.get("healthcheck", {}).get("test") or []
    test = " ".join(test) if isinstance(test, list) else str(test)
    if "redis-cli" not in test or "ping" not in test or port not in test.split():
        errors.append("%s: no redis-cli -p %s ping healthcheck" % (name, port))
    data = [str(v).split(":")[0] for v in svc.get("volumes") or [] if ":/data" in str(v)]
    if len(data) != 1 or data[0] not in volumes:
        errors.append("%s: want one named volume on /data, found %s" % (name, data))
    for v in data:
        if v in vols:
            errors.append("%s: volume %s also used by %s" % (name, v, vols[v]))
        vols[v] = name

by_port = {p: n for n, p in port_of.items()}
owner = {}
for name, (svc, text) in sorted(inits.items()):
    if str(svc.get("restart", "no")) != "no":
        errors.append("%s: restart is %r, not \"no\" (one-shot)" % (name, svc.get("restart")))
    if svc.get("network_mode") != "host":
        errors.append("%s: not on the host network" % name)
    m = re.search(r"redis-cli --cluster create((?: +[^ -][^ ]*)+)(.*)", text)
    addrs = m.group(1).split() if m else []
    rest = m.group(2) if m else ""
    if "--cluster-yes" not in rest:
        errors.append("%s: no --cluster-yes" % name)
    r = re.search(r"--cluster-replicas +(\d+)", rest)
    if r and r.group(1) != "0":
        errors.append("%s: --cluster-replicas %s, want no replicas" % (name, r.group(1)))
    if len(addrs) != 3:
        errors.append("%s: creates a cluster of %d members, want 3: %s" % (name, len(addrs), addrs))
    deps = svc.get("depends_on") or {}
    for a in addrs:
        host, _, port = a.rpartition(":")
        member = by_port.get(port)
        if host != "127.0.0.1" or member is None:
            errors.append("%s: %s is no member at 127.0.0.1" % (name, a))
            continue
        if member in owner:
            errors.append("%s: member %s also in the cluster of %s" % (name, member, owner[member]))
        owner[member] = name
        cond = deps.get(member, {}).get("condition") if isinstance(deps, dict) else None
        if cond != "service_healthy":
            errors.append("%s: does not wait for %s to be healthy" % (name, member))
for name in sorted(set(port_of) - set(owner)):
    errors.append("%s: in no cluster" % name)
for e in errors:
    print("FAIL: " + e)
if errors:
    sys.exit(1)
print("ok: %d Redis Clusters of 3 primaries (redis:7, host network, appendonly yes + appendfsync always), "
      "ports %s" % (len(inits), ", ".join(sorted(port_of.values()))))
'
  exit
fi
if [ "$mode" = sentinels ]; then
  docker-compose -f "$file" config | python3 -c '
import re, shlex, sys, yaml

cfg = yaml.safe_load(sys.stdin)
services = cfg.get("services") or {}
volumes = cfg.get("volumes") or {}
errors = []

def args_of(svc):
    cmd = svc.get("command") or []
    return shlex.split(cmd) if isinstance(cmd, str) else [str(a) for a in cmd]

def opt(args, name):
    return args[args.index(name) + 1] if name in args[:-1] else None

data, sentinels = {}, {}
for name, svc in sorted(services.items()):
    args = args_of(svc)
    if svc.get("image") != "redis:7":
        errors.append("%s: image %r, want redis:7" % (name, svc.get("image")))
    if svc.get("network_mode") != "host":
        errors.append("%s: not on the host network" % name)
    vols = [str(v).split(":")[0] for v in svc.get("volumes") or [] if ":/data" in str(v)]
    if len(vols) != 1 or vols[0] not in volumes:
        errors.append("%s: want one named volume on /data, found %s" % (name, vols))
    if args[:1] == ["redis-server"]:
        data[name] = args
        if opt(args, "--appendonly") != "yes" or opt(args, "--appendfsync") != "always":
            errors.append("%s: not appendonly yes + appendfsync always" % name)
        if opt(args, "--bind") != "127.0.0.1":
            errors.append("%s: not bound to 127.0.0.1" % name)
    elif "--sentinel" in " ".join(args):
        sentinels[name] = " ".join(args)
    else:
        errors.append("%s: neither a data node nor a sentinel" % name)
masters = {opt(a, "--port"): n for n, a in data.items() if "--replicaof" not in a}
replicas = {n: a for n, a in data.items() if "--replicaof" in a}
if len(masters) != 3 or len(replicas) != 3:
    errors.append("want 3 masters and 3 replicas, found %d and %d" % (len(masters), len(replicas)))
for n, a in replicas.items():
    i = a.index("--replicaof")
    if a[i + 1:i + 3][:1] != ["127.0.0.1"] or a[i + 2] not in masters:
        errors.append("%s: replicaof %s is not one of the masters" % (n, " ".join(a[i + 1:i + 3])))
if sorted(a[a.index("--replicaof") + 2] for a in replicas.values()) != sorted(masters):
    errors.append("each master must have exactly one replica")
if len(sentinels) != 3:
    errors.append("want 3 sentinels, found %d" % len(sentinels))
for n, text in sentinels.items():
    mon = re.findall(r"sentinel monitor (\S+) 127\.0\.0\.1 (\d+) (\d+)", text)
    if sorted(p for _, p, _ in mon) != sorted(masters) or any(q != "2" for _, _, q in mon):
        errors.append("%s: does not watch every master with quorum 2: %s" % (n, mon))
    deps = services[n].get("depends_on") or {}
    if sorted(deps) != sorted(data):
        errors.append("%s: does not wait for every data node" % n)
for e in errors:
    print("FAIL: " + e)
if errors:
    sys.exit(1)
print("ok: 3 Sentinel groups (master + replica, appendonly yes + appendfsync always) and 3 sentinels, quorum 2")
'
  exit
fi
docker-compose -f "$file" config | python3 -c '
import shlex, sys, yaml

cfg = yaml.safe_load(sys.stdin)
services = cfg.get("services") or {}
volumes = cfg.get("volumes") or {}
errors = []
if len(services) != 5:
    errors.append("want 5 services, found %d: %s" % (len(services), ", ".join(sorted(services))))
ports, vols = {}, {}
for name, svc in sorted(services.items()):
    image = str(svc.get("image", ""))
    if not (image == "redis:7" or image.startswith("redis:7.") or image.startswith("redis:7-")):
        errors.append("%s: image %r is not redis:7" % (name, image))
    cmd = svc.get("command") or []
    args = shlex.split(cmd) if isinstance(cmd, str) else [str(a) for a in cmd]
    pairs = {args[i]: args[i + 1] for i in range(len(args) - 1) if args[i].startswith("--")}
    if pairs.get("--appendonly") != "yes":
        errors.append("%s: no --appendonly yes" % name)
    if pairs.get("--appendfsync") != "always":
        errors.append("%s: no --appendfsync always" % name)
    if any(a.lstrip("-") in ("replicaof", "slaveof") for a in args):
        errors.append("%s: is a replica (replicaof/slaveof)" % name)
    test = svc.get("healthcheck", {}).get("test") or []
    test = " ".join(test) if isinstance(test, list) else str(test)
    if "redis-cli" not in test or "ping" not in test:
        errors.append("%s: no redis-cli ping healthcheck" % name)
    published = []
    for p in svc.get("ports") or []:
        if isinstance(p, dict):
            published.append(str(p.get("published")))
        else:
            parts = str(p).split("/")[0].split(":")
            if len(parts) >= 2:
                published.append(parts[-2])
    if len(published) != 1:
        errors.append("%s: want one published port, found %s" % (name, published))
    for hp in published:
        if hp in ports:
            errors.append("%s: host port %s also used by %s" % (name, hp, ports[hp]))
        ports[hp] = name
    data = [str(v).split(":")[0] for v in svc.get("volumes") or [] if ":/data" in str(v)]
    if len(data) != 1 or data[0] not in volumes:
        errors.append("%s: want one named volume on /data, found %s" % (name, data))
    for v in data:
        if v in vols:
            errors.append("%s: volume %s also used by %s" % (name, v, vols[v]))
        vols[v] = name
for e in errors:
    print("FAIL: " + e)
if errors:
    sys.exit(1)
print("ok: %d independent redis:7 masters, appendonly yes + appendfsync always, host ports %s"
      % (len(services), ", ".join(sorted(ports))))
'

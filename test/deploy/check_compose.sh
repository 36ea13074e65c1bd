#!/bin/sh
# check_compose.sh COMPOSE_FILE -- the CTest deploy_compose_config.
#
# Validates deploy/docker-compose.yml without a Docker engine, with Debian's
# docker-compose (installed by `make deps`; its absence is a failure):
#   - `docker-compose config -q` accepts the file;
#   - exactly five services, each an image redis:7 master whose command turns
#     on appendonly with appendfsync always and has no replicaof/slaveof;
#   - each has a redis-cli ping healthcheck, its own host port and its own
#     named volume on /data.
# The normalized `docker-compose config` output is checked with python3 and
# PyYAML, both dependencies of Debian's docker-compose.
set -eu
file=${1:?usage: check_compose.sh COMPOSE_FILE}

if ! command -v docker-compose >/dev/null 2>&1; then
  echo "FAIL: docker-compose is not installed (make deps installs Debian's docker-compose)"
  exit 1
fi
if ! docker-compose -f "$file" config -q; then
  echo "FAIL: docker-compose config rejected $file"
  exit 1
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

#!/usr/bin/env bash
# tls_nodes.sh start|stop DIR -- TLS test nodes for test_tls.c.
# start: makes certificates with the openssl command (a test CA, a server
# certificate for localhost/127.0.0.1, one for the wrong host, one from an
# untrusted CA, a client certificate) and starts redis-server nodes:
#   good     TLS, trusted certificate for localhost and 127.0.0.1
#   wrongname TLS, trusted certificate for wrong.example only
#   untrusted TLS, certificate from a CA the client does not trust
#   mutual   TLS, client certificates required
#   plain    no TLS
#   sentinel a Sentinel on a TLS port only (server certificate), watching
#            the good node as master "tg" over TLS (tls-replication yes)
# and writes DIR/ports ("name port" lines). stop: kills them, removes DIR.
set -euo pipefail
cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "usage: $0 start|stop DIR" >&2; exit 2; }

stop() {
  for pidf in "$dir"/*.pid; do
    [ -f "$pidf" ] || continue
    pid=$(cat "$pidf")
    kill -CONT "$pid" 2>/dev/null || true
    kill -KILL "$pid" 2>/dev/null || true
  done
  [ -f "$dir/ports" ] && rm -rf "$dir"
  return 0
}

# cert NAME CA SUBJECT_CN SAN: key + certificate signed by CA (ca or other).
cert() {
  openssl req -newkey rsa:2048 -nodes -keyout "$dir/$1.key" -out "$dir/$1.csr" -subj "/CN=$3" 2>/dev/null
  printf 'subjectAltName=%s\n' "$4" > "$dir/$1.ext"
  openssl x509 -req -in "$dir/$1.csr" -CA "$dir/$2.crt" -CAkey "$dir/$2.key" -CAcreateserial \
    -out "$dir/$1.crt" -days 2 -extfile "$dir/$1.ext" 2>/dev/null
}

free_port() {
  local p
  while :; do
    p=$((20000 + RANDOM % 12000))
    ss -tanH 2>/dev/null | awk '{print $4}' | grep -q ":$p\$" || { echo "$p"; return; }
  done
}

# node NAME TLS(yes/no) CERT AUTHCLIENTS: starts it on a free port; a port
# taken between the look and the bind (fixtures start side by side) costs a
# retry on another one, up to 5 tries.
node() {
  local port args try i
  for try in 1 2 3 4 5; do
    port=$(free_port)
    args=(--bind 127.0.0.1 --save "" --appendonly no --daemonize yes --dir "$dir"
          --pidfile "$dir/$1.pid" --logfile "$dir/$1.log")
    if [ "$2" = yes ]; then
      args+=(--port 0 --tls-port "$port" --tls-cert-file "$dir/$3.crt" --tls-key-file "$dir/$3.key"
             --tls-ca-cert-file "$dir/ca.crt" --tls-auth-clients "$4")
    else
      args+=(--port "$port")
    fi
    : > "$dir/$1.log"
    redis-server "${args[@]}"
    for i in $(seq 50); do
      grep -q "Ready to accept connections" "$dir/$1.log" 2>/dev/null && { echo "$1 $port" >> "$dir/ports"; return 0; }
      grep -q "Address already in use" "$dir/$1.log" 2>/dev/null && break
      sleep 0.1
    done
  done
  return 0 # (the start's check below reports it)
}

# sentinel: a TLS-only sentinel (config file DIR/sentinel.conf, which it
# rewrites) monitoring the good node as "tg"; recorded in DIR/ports once it
# answers SENTINEL GET-MASTER-ADDR-BY-NAME over TLS. Retried like node().
sentinel() {
  local port good try i
  good=$(awk '$1 == "good" {print $2}' "$dir/ports")
  [ -n "$good" ] || return 0
  for try in 1 2 3 4 5; do
    port=$(free_port)
    cat > "$dir/sentinel.conf" <<CONF
bind 127.0.0.1
port 0
tls-port $port
tls-cert-file $dir/server.crt
tls-key-file $dir/server.key
tls-ca-cert-file $dir/ca.crt
tls-auth-clients optional
tls-replication yes
daemonize yes
dir $dir
pidfile $dir/sentinel.pid
logfile $dir/sentinel.log
sentinel monitor tg 127.0.0.1 $good 1
sentinel down-after-milliseconds tg 5000
CONF
    : > "$dir/sentinel.log"
    redis-server "$dir/sentinel.conf" --sentinel
    for i in $(seq 50); do
      if redis-cli --tls --cacert "$dir/ca.crt" -h 127.0.0.1 -p "$port" \
           SENTINEL GET-MASTER-ADDR-BY-NAME tg 2>/dev/null | grep -qx "$good"; then
        echo "sentinel $port" >> "$dir/ports"
        return 0
      fi
      grep -q "Address already in use" "$dir/sentinel.log" 2>/dev/null && break
      sleep 0.1
    done
    [ -f "$dir/sentinel.pid" ] && kill -KILL "$(cat "$dir/sentinel.pid")" 2>/dev/null && rm -f "$dir/sentinel.pid"
  done
  return 0
}

case "$cmd" in
start)
  stop
  mkdir -p "$dir"
  for ca in ca other; do
    openssl req -x509 -newkey rsa:2048 -nodes -keyout "$dir/$ca.key" -out "$dir/$ca.crt" -days 2 \
      -subj "/CN=libredlock test $ca" 2>/dev/null
  done
  cert server ca localhost "DNS:localhost,IP:127.0.0.1"
  cert wrong ca wrong.example "DNS:wrong.example"
  cert untrusted other localhost "DNS:localhost,IP:127.0.0.1"
  cert client ca libredlock-client "DNS:client"
  : > "$dir/ports"
  node good yes server optional
  node wrongname yes wrong optional
  node untrusted yes untrusted optional
  node mutual yes server yes
  node plain no "" ""
  sentinel
  for i in $(seq 50); do
    up=0
    for f in "$dir"/*.pid; do [ -f "$f" ] && up=$((up + 1)); done
    [ "$up" -eq 6 ] && [ "$(wc -l < "$dir/ports")" -eq 6 ] && break
    sleep 0.1
  done
  [ "$up" -eq 6 ] && [ "$(wc -l < "$dir/ports")" -eq 6 ] || { echo "tls_nodes.sh: nodes did not start" >&2; tail -n 3 "$dir"/*.log >&2; stop; exit 1; }
  sleep 0.2
  ;;
stop) stop ;;
*) echo "usage: $0 start|stop DIR" >&2; exit 2 ;;
esac

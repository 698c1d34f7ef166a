#!/usr/bin/env bash
# A local 3-member etcd cluster for tests and demos (the store of dmhost's cluster, issue 11), from
# Debian's etcd-server, no systemd needed: members e1, e2, e3, each in a folder of its own under
# ${DMH_ETCD_DIR:-/tmp/dmhost-etcd}, on 127.0.0.1.
#
#   scripts/etcd.sh start|stop|status|env|endpoints|kill NAME|restart NAME
#
# Ports: member i (1..3) serves clients on BASE+100*(i-1) and its peers on that port + 1, BASE being
# ${DMH_ETCD_PORT_BASE:-22379} (so 22379/22380, 22479/22480, 22579/22580). See docs/cluster.md.
#
# DMH_ETCD_TLS=1: another cluster (folder DMH_ETCD_DIR + "-tls", ports BASE + 1000) whose clients
# must come over TLS with a client certificate of its CA (--client-cert-auth) and authenticate as
# an etcd user (auth enabled). At its first start it makes, with openssl, under <folder>/pki: a CA,
# the members' certificate (127.0.0.1, localhost), client certificates `dmhost`, `root` and
# `other`, a second CA (`wrong-ca.pem`, for tests), and password files (mode 0600) of the users it
# adds with etcdctl: root, `dmhost` (role `dmhost`: read-write on the prefix /dmhost/ only) and
# `other` (role `other`: read-write on /other/ only). `env` also prints DMH_ETCD_FLAGS (the flags
# a master or worker needs: --etcd-cacert, --etcd-cert, --etcd-key, --etcd-user dmhost,
# --etcd-password-file), DMH_ETCD_PKI and DMH_ETCD_PREFIX (/dmhost). Tokens live 5 s without use
# (--auth-token-ttl 5), so that clients renew them in every test.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=proc.sh
. "$(dirname "$0")/proc.sh"

tls=${DMH_ETCD_TLS:-}
[ "$tls" = 0 ] && tls=""
etcd_dir=$(realpath -m "${DMH_ETCD_DIR:-/tmp/dmhost-etcd}${tls:+-tls}")
port_base=${DMH_ETCD_PORT_BASE:-22379}
[[ $port_base =~ ^[0-9]+$ ]] && [ -n "$tls" ] && port_base=$((port_base + 1000))
pki=$etcd_dir/pki
scheme=http${tls:+s}
members=(e1 e2 e3)
start_timeout=30
stop_timeout=20

die() {
  echo "etcd.sh: $*" >&2
  exit 1
}

usage() {
  echo "usage: $0 start|stop|status|env|endpoints|kill NAME|restart NAME" >&2
  exit 2
}

index_of() { # member; 0..2
  local i
  for i in "${!members[@]}"; do
    [ "${members[$i]}" = "$1" ] && {
      echo "$i"
      return 0
    }
  done
  die "no member '$1': the members are ${members[*]}"
}

client_port() { echo $((port_base + 100 * $(index_of "$1"))); }
peer_port() { echo $((port_base + 100 * $(index_of "$1") + 1)); }

endpoints() { # the client URLs, comma-separated
  local m out=""
  for m in "${members[@]}"; do out+="${out:+,}$scheme://127.0.0.1:$(client_port "$m")"; done
  echo "$out"
}

initial_cluster() {
  local m out=""
  for m in "${members[@]}"; do out+="${out:+,}$m=http://127.0.0.1:$(peer_port "$m")"; done
  echo "$out"
}

# The pid of a live member, or nothing.
live_pid() { # member
  proc_pid "$etcd_dir/$1/etcd.pid" "--data-dir $etcd_dir/$1/data "
}

# True while the process launch() started runs, even before setsid has exec'd etcd (its command
# line is then still bash's, so live_pid would not know it yet).
launched_alive() { # member
  [ -n "$(proc_pid "$etcd_dir/$1/etcd.pid" "")" ]
}

# True when the member answers /health with "true": etcd 3.4 says so only when the cluster has a
# leader and a read through raft succeeds. Plain bash (/dev/tcp): no curl or etcdctl needed.
healthy() { # member
  local reply
  if [ -n "$tls" ]; then
    reply=$(curl -s -m 3 --cacert "$pki/ca.pem" --cert "$pki/root.pem" --key "$pki/root-key.pem" \
      "https://127.0.0.1:$(client_port "$1")/health" 2>/dev/null) || return 1
    [[ $reply == *'"health":"true"'* ]]
    return
  fi
  reply=$(
    exec 2>/dev/null
    exec 3<>"/dev/tcp/127.0.0.1/$(client_port "$1")" || exit 1
    printf 'GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3
    timeout 3 cat <&3
  ) || return 1
  [[ $reply == *'"health":"true"'* ]]
}

log_tail() { # member
  echo "--- last lines of $etcd_dir/$1/etcd.log:" >&2
  tail -n 15 "$etcd_dir/$1/etcd.log" >&2 2>/dev/null || true
}

launch() { # member
  local m=$1 dir=$etcd_dir/$1 cp pp state=new
  cp=$(client_port "$m")
  pp=$(peer_port "$m")
  mkdir -p "$dir"
  # A member with data rejoins with it (the --initial-* flags are then ignored by etcd).
  [ -d "$dir/data/member" ] && state=existing
  # Own session, every descriptor redirected and the lock (fd 9) closed, so that neither ctest nor
  # the next etcd.sh waits on the member. The token is per folder: members of two clusters started
  # from two folders never join each other.
  local sec=()
  [ -n "$tls" ] && sec=(--cert-file "$pki/server.pem" --key-file "$pki/server-key.pem"
    --client-cert-auth --trusted-ca-file "$pki/ca.pem" --auth-token-ttl 5)
  setsid etcd --name "$m" --data-dir "$dir/data" "${sec[@]}" \
    --listen-client-urls "$scheme://127.0.0.1:$cp" --advertise-client-urls "$scheme://127.0.0.1:$cp" \
    --listen-peer-urls "http://127.0.0.1:$pp" --initial-advertise-peer-urls "http://127.0.0.1:$pp" \
    --initial-cluster "$(initial_cluster)" --initial-cluster-state "$state" \
    --initial-cluster-token "dmh-$(printf '%s' "$etcd_dir" | cksum | cut -d' ' -f1)" \
    --logger zap --log-level warn \
    </dev/null >>"$dir/etcd.log" 2>&1 9>&- &
  echo $! >"$dir/etcd.pid"
}

# Waits until every member named answers /health; fails early, with the log, if one exits.
wait_ready() { # members...
  local deadline=$((SECONDS + start_timeout)) m pending
  while :; do
    pending=()
    for m in "$@"; do
      if ! launched_alive "$m"; then
        echo "etcd.sh: member $m (127.0.0.1:$(client_port "$m")) exited during start-up;" \
          "see $etcd_dir/$m/etcd.log" >&2
        log_tail "$m"
        return 1
      fi
      healthy "$m" || pending+=("$m")
    done
    [ ${#pending[@]} -eq 0 ] && return 0
    if [ "$SECONDS" -ge "$deadline" ]; then
      echo "etcd.sh: member(s) ${pending[*]} not healthy (no leader, or not answering) within" \
        "${start_timeout}s" >&2
      for m in "${pending[@]}"; do log_tail "$m"; done
      return 1
    fi
    sleep 0.1
  done
}

# ---- DMH_ETCD_TLS=1: certificates, users ----

# a key and a certificate signed by CA $2 (folder pki, name $1, subject $3, extensions $4)
pki_cert() { # name ca subject ext
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$pki/$1-key.pem" \
    -subj "$3" -out "$pki/$1.csr" 2>/dev/null
  openssl x509 -req -in "$pki/$1.csr" -CA "$pki/$2.pem" -CAkey "$pki/$2-key.pem" \
    -CAcreateserial -days 3650 -out "$pki/$1.pem" -extfile <(printf '%s\n' "$4") 2>/dev/null
  chmod 600 "$pki/$1-key.pem"
  rm -f "$pki/$1.csr"
}

pki_ca() { # name cn
  openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 3650 \
    -keyout "$pki/$1-key.pem" -subj "/CN=$2" -out "$pki/$1.pem" 2>/dev/null
  chmod 600 "$pki/$1-key.pem"
}

# The CA and certificates, once per folder. The client certificates have no CommonName: etcd 3.4's
# JSON gateway answers 400 to a client certificate with one ("CommonName of client sending a request
# against gateway will be ignored"); the user is the token's. The members' CN is no etcd user.
make_pki() {
  [ -f "$pki/done" ] && return 0
  command -v openssl >/dev/null || die "openssl not found; run scripts/deps.sh"
  rm -rf "$pki"
  mkdir -p "$pki"
  chmod 700 "$pki"
  pki_ca ca "dmhost test etcd CA"
  pki_ca wrong-ca "another CA"
  pki_cert server ca "/CN=etcd member" "subjectAltName=IP:127.0.0.1,DNS:localhost
extendedKeyUsage=serverAuth,clientAuth"
  local u
  for u in root dmhost other; do
    pki_cert "$u" ca "/O=dmhost test/OU=$u" "extendedKeyUsage=clientAuth"
    (umask 077 && openssl rand -hex 16 >"$pki/$u.password")
  done
  pki_cert wrong-client wrong-ca "/O=dmhost test/OU=dmhost" "extendedKeyUsage=clientAuth"
  touch "$pki/done"
}

ctl_root() { # etcdctl args... as root
  ETCDCTL_API=3 etcdctl --endpoints "$(endpoints)" --cacert "$pki/ca.pem" --cert "$pki/root.pem" \
    --key "$pki/root-key.pem" "$@"
}

# Users and roles, then auth on: once per folder (etcd keeps them in its data).
setup_auth() {
  [ -f "$etcd_dir/auth-done" ] && return 0
  command -v etcdctl >/dev/null || die "etcdctl not found; run scripts/deps.sh (etcd-client)"
  local u
  for u in root dmhost other; do
    ctl_root user get "$u" >/dev/null 2>&1 ||
      ctl_root user add "$u" --new-user-password "$(cat "$pki/$u.password")" >/dev/null
  done
  ctl_root user grant-role root root >/dev/null
  ctl_root role add dmhost >/dev/null 2>&1 || true
  ctl_root role grant-permission dmhost --prefix=true readwrite /dmhost/ >/dev/null
  ctl_root user grant-role dmhost dmhost >/dev/null
  ctl_root role add other >/dev/null 2>&1 || true
  ctl_root role grant-permission other --prefix=true readwrite /other/ >/dev/null
  ctl_root user grant-role other other >/dev/null
  # (etcdctl logs that it could not authenticate before auth is on: shown only on failure)
  local out
  out=$(ctl_root --user "root:$(cat "$pki/root.password")" auth enable 2>&1) ||
    die "etcdctl auth enable failed: $out"
  touch "$etcd_dir/auth-done"
}

start_members() { # members...
  local m launched=()
  for m in "$@"; do
    [ -n "$(live_pid "$m")" ] && continue
    for p in $(client_port "$m") $(peer_port "$m"); do
      if port_taken "$p"; then
        echo "etcd.sh: port $p (member $m) is taken by another process, perhaps the etcd of" \
          "another DMH_ETCD_DIR; stop it or set DMH_ETCD_PORT_BASE" >&2
        return 1
      fi
    done
    launched+=("$m")
  done
  for m in "${launched[@]}"; do launch "$m"; done
  wait_ready "$@"
}

wait_dead() { # member
  proc_wait_dead "$1" "member $1"
}

stop_member() { # member
  local m=$1 pid deadline
  pid=$(live_pid "$m")
  [ -n "$pid" ] || return 0
  kill -TERM "$pid" 2>/dev/null || true
  deadline=$((SECONDS + stop_timeout))
  while [ -n "$(live_pid "$m")" ]; do
    if [ "$SECONDS" -ge "$deadline" ]; then
      echo "etcd.sh: member $m (pid $pid) did not stop within ${stop_timeout}s; killing it" >&2
      kill -KILL "$pid" 2>/dev/null || true
      wait_dead "$m"
      break
    fi
    sleep 0.05
  done
}

kill_member() { # member
  local pid
  pid=$(live_pid "$1")
  if [ -z "$pid" ]; then
    echo "etcd.sh: member $1 is not running" >&2
    return 0
  fi
  kill -KILL "$pid"
  wait_dead "$1"
}

status_member() { # member; prints one line, true when it is healthy
  local m=$1 pid
  pid=$(live_pid "$m")
  if [ -z "$pid" ]; then
    echo "$m: stopped (127.0.0.1:$(client_port "$m"), $etcd_dir/$m)"
    return 1
  fi
  if healthy "$m"; then
    echo "$m: running, pid $pid, 127.0.0.1:$(client_port "$m"), $etcd_dir/$m"
    return 0
  fi
  echo "$m: pid $pid alive but not healthy on 127.0.0.1:$(client_port "$m") (no leader?);" \
    "see $etcd_dir/$m/etcd.log"
  return 1
}

[ $# -ge 1 ] || usage
cmd=$1
name=""
case $cmd in
  start | stop | status | env | endpoints) [ $# -eq 1 ] || usage ;;
  kill | restart)
    [ $# -eq 2 ] || usage
    name=$2
    index_of "$name" >/dev/null
    ;;
  *) usage ;;
esac
if ! [[ $port_base =~ ^[0-9]+$ ]] || [ "$port_base" -lt 1024 ] || [ $((port_base + 201)) -ge 32768 ]; then
  die "DMH_ETCD_PORT_BASE must be a number from 1024 to 32566 (ports below 32768), not '$port_base'"
fi
case $cmd in
  endpoints)
    endpoints
    exit 0
    ;;
  env)
    # the folder and base as given (the -tls folder and +1000 ports are derived again from them)
    echo "export DMH_ETCD_DIR='$(realpath -m "${DMH_ETCD_DIR:-/tmp/dmhost-etcd}")'"
    echo "export DMH_ETCD_PORT_BASE=${DMH_ETCD_PORT_BASE:-22379}"
    echo "export DMH_ETCD_ENDPOINTS='$(endpoints)'"
    if [ -n "$tls" ]; then
      echo "export DMH_ETCD_TLS=1"
      echo "export DMH_ETCD_PKI='$pki'"
      echo "export DMH_ETCD_PREFIX=/dmhost"
      echo "export DMH_ETCD_FLAGS='--etcd-cacert $pki/ca.pem --etcd-cert $pki/dmhost.pem" \
        "--etcd-key $pki/dmhost-key.pem --etcd-user dmhost --etcd-password-file $pki/dmhost.password'"
    else
      echo "export DMH_ETCD_FLAGS=''"
      echo "export DMH_ETCD_PREFIX=''"
    fi
    exit 0
    ;;
esac
command -v etcd >/dev/null || die "etcd not found; run scripts/deps.sh (installs etcd-server)"

mkdir -p "$etcd_dir"
# One etcd.sh at a time per folder (parallel ctest fixtures, a user in another shell).
exec 9>"$etcd_dir/lock"
flock -w 120 9 || die "another etcd.sh holds $etcd_dir/lock for more than 120s"

case $cmd in
  start)
    [ -z "$tls" ] || make_pki
    start_members "${members[@]}"
    [ -z "$tls" ] || setup_auth
    ;;
  stop)
    # One after the other: a leader told to stop hands its leadership to a live member first,
    # which takes milliseconds when the others run and its full request timeout (~7 s) when they
    # are stopping at the same moment.
    for m in "${members[@]}"; do stop_member "$m"; done
    ;;
  status)
    rc=0
    for m in "${members[@]}"; do status_member "$m" || rc=3; done
    exit "$rc"
    ;;
  kill) kill_member "$name" ;;
  restart) stop_member "$name" && start_members "$name" ;;
esac

#!/usr/bin/env bash
# Local MariaDB servers for tests and demos: a source (binlog on, ROW, GTID), a second source
# `source2` (the same settings, its own server_id and GTID domain: shard merges) and a target, each
# in a folder of its own under ${DMH_DB_DIR:-/tmp/dmhost-db}, no systemd needed.
#
#   scripts/mariadb.sh start|stop|status|restart-source|restart-source2|restart-target|kill-target|env
#
# Ports: ${DMH_SOURCE_PORT:-13306}, ${DMH_TARGET_PORT:-13307} and ${DMH_SOURCE2_PORT:-source port + 2} on
# 127.0.0.1; root has an empty password; the source's server_id is ${DMH_SOURCE_SERVER_ID:-1} (read
# at each start), source2's 3. See docs/servers.md.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=proc.sh
. "$(dirname "$0")/proc.sh"

db_dir=$(realpath -m "${DMH_DB_DIR:-/tmp/dmhost-db}")
source_port=${DMH_SOURCE_PORT:-13306}
target_port=${DMH_TARGET_PORT:-13307}
# source2 follows the source's port unless told, so a private pair (benchmarks, helpers) never
# collides with the default one's source2.
source2_port=${DMH_SOURCE2_PORT:-$((source_port + 2))}
start_timeout=30
stop_timeout=20

die() {
  echo "mariadb.sh: $*" >&2
  exit 1
}

usage() {
  echo "usage: $0 start|stop|status|restart-source|restart-source2|restart-target|kill-target|env" >&2
  exit 2
}

port_of() { # instance
  case $1 in
    source) echo "$source_port" ;;
    source2) echo "$source2_port" ;;
    *) echo "$target_port" ;;
  esac
}

# The client tools read /etc/mysql and ~/.my.cnf unless told not to; those may point at another
# server's socket or set options we do not expect.
client() { # instance, mariadb args...
  local inst=$1
  shift
  mariadb --no-defaults --protocol=tcp -h127.0.0.1 -P"$(port_of "$inst")" -uroot \
    --connect-timeout=2 "$@"
}

write_cnf() { # instance
  local inst=$1 dir=$db_dir/$1 port server_id
  port=$(port_of "$inst")
  # DMH_SOURCE_SERVER_ID: a restart-source with another id makes the source "another server" for
  # a replica (the relay's upstream-switch test); only ever for a private pair.
  case $inst in
    source) server_id=${DMH_SOURCE_SERVER_ID:-1} ;;
    source2) server_id=3 ;;
    *) server_id=2 ;;
  esac
  [[ $server_id =~ ^[0-9]+$ ]] || die "DMH_SOURCE_SERVER_ID must be a number, not '$server_id'"
  mkdir -p "$dir/data" "$dir/tmp"
  {
    echo "# Written by scripts/mariadb.sh; rewritten at every start."
    echo "[mariadbd]"
    [ "$(id -u)" -eq 0 ] && echo "user = root"
    echo "datadir = $dir/data"
    # Each instance needs its own tmpdir: two sharing /tmp once collided on temporary tables.
    echo "tmpdir = $dir/tmp"
    echo "socket = $dir/mariadbd.sock"
    echo "pid-file = $dir/mariadbd.pid"
    echo "log-error = $dir/mariadbd.log"
    echo "port = $port"
    echo "bind-address = 127.0.0.1"
    echo "skip-name-resolve"
    echo "server_id = $server_id"
    echo "max_allowed_packet = 64M"
    echo "character-set-server = utf8mb4"
    # DMH_BUFFER_POOL: benchmarks give the servers room to hold their data (bench/dump-load.sh)
    echo "innodb_buffer_pool_size = ${DMH_BUFFER_POOL:-256M}"
    # Tests want speed, not durability across a power cut. DMH_TARGET_DURABLE=1 (bench/sync's
    # DURABLE=1) makes the target what production runs: a binlog (the replica's applied
    # transactions in it too), a log flush and a binlog sync at every commit.
    if [ "$inst" = target ] && [ -n "${DMH_TARGET_DURABLE:-}" ]; then
      echo "innodb_flush_log_at_trx_commit = 1"
      echo "sync_binlog = 1"
      echo "log_bin = $dir/data/mysql-bin"
      echo "binlog_format = ROW"
      echo "log_slave_updates = ON"
    else
      echo "innodb_flush_log_at_trx_commit = 2"
      echo "sync_binlog = 0"
    fi
    # TLS for the dmh_tls account (REQUIRE SSL); plain connections stay allowed (tls_files).
    echo "ssl_ca = $db_dir/tls/ca.pem"
    echo "ssl_cert = $db_dir/tls/server-cert.pem"
    echo "ssl_key = $db_dir/tls/server-key.pem"
    if [ "$inst" != target ]; then
      echo "log_bin = $dir/data/mysql-bin"
      echo "binlog_format = ROW"
      echo "binlog_row_image = FULL"
      # Without it the binlog carries no column names, signedness or charsets.
      echo "binlog_row_metadata = FULL"
      echo "binlog_checksum = CRC32"
      echo "gtid_strict_mode = ON"
      # Each source its own domain, as the shards of a real estate would have.
      if [ "$inst" = source2 ]; then echo "gtid_domain_id = 1"; else echo "gtid_domain_id = 0"; fi
      # Small, so tests see rotations.
      echo "max_binlog_size = 16M"
      # A server kept between runs (a developer's) grew 20 GiB of binlog over a few days of test
      # runs: files older than a day go at a rotation (no test reads that far back).
      echo "binlog_expire_logs_seconds = 86400"
    elif [ -z "${DMH_TARGET_DURABLE:-}" ]; then
      echo "skip-log-bin"
    fi
  } >"$dir/my.cnf"
}

# The pair's TLS files, made once with openssl into $db_dir/tls: a CA (ca.pem, ca-key.pem) and the
# servers' certificate for 127.0.0.1 and localhost signed by it (server-cert.pem, server-key.pem).
# Tests read ca.pem to connect with ssl-ca and make their own wrong CA.
tls_files() {
  local d=$db_dir/tls
  [ -s "$d/server-cert.pem" ] && [ -s "$d/ca.pem" ] && return 0
  command -v openssl >/dev/null || die "openssl is needed for the servers' TLS files (scripts/deps.sh)"
  mkdir -p "$d"
  (
    set -e
    cd "$d"
    openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=dmhost test CA" \
      -keyout ca-key.pem -out ca.pem
    openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" -keyout server-key.pem \
      -out server.csr
    printf 'subjectAltName = IP:127.0.0.1, DNS:localhost\n' >server.ext
    openssl x509 -req -in server.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days 3650 \
      -extfile server.ext -out server-cert.pem
    rm -f server.csr server.ext
  ) >"$d/openssl.log" 2>&1 || { cat "$d/openssl.log" >&2; rm -f "$d/server-cert.pem"; die "could not make the TLS files in $d"; }
}

# The pid of a live instance, or nothing. The server writes its pid file late in its start-up, so
# the pid launch() saw counts too.
live_pid() { # instance
  local dir=$db_dir/$1 f pid
  for f in "$dir/mariadbd.pid" "$dir/launched.pid"; do
    pid=$(proc_pid "$f" "--defaults-file=$dir/my.cnf")
    if [ -n "$pid" ]; then
      echo "$pid"
      return 0
    fi
  done
}

# True when the server on the instance's port is this instance (another server may hold the port).
answers() { # instance
  local got
  got=$(client "$1" -N -B -e 'select @@datadir' 2>/dev/null) || return 1
  [ "${got%/}" = "$db_dir/$1/data" ]
}

log_tail() { # instance
  echo "--- last lines of $db_dir/$1/mariadbd.log:" >&2
  tail -n 15 "$db_dir/$1/mariadbd.log" >&2 2>/dev/null || true
}

init_instance() { # instance
  local inst=$1 dir=$db_dir/$1
  # A datadir without the marker is a failed init: start over (it holds no data yet).
  rm -rf "$dir/data" "$dir/tmp"
  mkdir -p "$dir/data" "$dir/tmp"
  if ! mariadb-install-db --defaults-file="$dir/my.cnf" --user=root \
    --auth-root-authentication-method=normal --skip-test-db >"$dir/install.log" 2>&1; then
    echo "mariadb.sh: mariadb-install-db failed for the $inst; see $dir/install.log:" >&2
    tail -n 15 "$dir/install.log" >&2
    return 1
  fi
}

launch() { # instance
  local inst=$1 dir=$db_dir/$1
  # Own session, every descriptor redirected and the lock (fd 9) closed, so that neither ctest
  # (waiting for the pipes) nor the next mariadb.sh (waiting for the lock) waits on the server.
  setsid mariadbd --defaults-file="$dir/my.cnf" </dev/null >>"$dir/mariadbd.log" 2>&1 9>&- &
  # Not a process group leader, so setsid execs in place: $! is the server itself. Its pid file
  # comes only late in the start-up, this one at once.
  echo $! >"$dir/launched.pid"
}

# Accounts: root over TCP from 127.0.0.1 with an empty password, dmh_limited for privilege
# tests, and dmh_tls (password 'tls', all privileges) that the servers accept only over TLS. Not binlogged, so a fresh source has an empty GTID position.
setup_accounts() { # instance
  local inst=$1 grant
  if [ "$inst" != target ]; then
    grant="GRANT SELECT ON *.* TO 'dmh_limited'@'127.0.0.1';"
  else
    grant=""
  fi
  client "$inst" -e "
    SET sql_log_bin = 0;
    CREATE USER IF NOT EXISTS 'root'@'127.0.0.1' IDENTIFIED BY '';
    GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION;
    CREATE USER IF NOT EXISTS 'dmh_limited'@'127.0.0.1' IDENTIFIED BY 'limited';
    CREATE USER IF NOT EXISTS 'dmh_tls'@'127.0.0.1' IDENTIFIED BY 'tls' REQUIRE SSL;
    GRANT ALL PRIVILEGES ON *.* TO 'dmh_tls'@'127.0.0.1';
    $grant"
}

# Waits until the instance answers; fails early, with the log, if the server dies.
wait_ready() { # instance
  local inst=$1 deadline=$((SECONDS + start_timeout)) pid
  while :; do
    pid=$(live_pid "$inst")
    if [ -z "$pid" ]; then
      echo "mariadb.sh: the $inst server (port $(port_of "$inst")) exited during start-up;" \
        "see $db_dir/$inst/mariadbd.log" >&2
      log_tail "$inst"
      return 1
    fi
    answers "$inst" && return 0
    if [ "$SECONDS" -ge "$deadline" ]; then
      echo "mariadb.sh: the $inst server (pid $pid) did not answer on 127.0.0.1:$(port_of "$inst")" \
        "within ${start_timeout}s; see $db_dir/$inst/mariadbd.log" >&2
      log_tail "$inst"
      return 1
    fi
    sleep 0.1
  done
}

start_instances() { # instances...
  local inst launched=() pids=() rc=0
  for inst in "$@"; do
    # Running (perhaps still starting): wait_ready below decides.
    [ -n "$(live_pid "$inst")" ] && continue
    if port_taken "$(port_of "$inst")"; then
      echo "mariadb.sh: port $(port_of "$inst") (the $inst) is taken by another process, perhaps" \
        "servers of another DMH_DB_DIR; stop them or set DMH_SOURCE_PORT/DMH_TARGET_PORT/DMH_SOURCE2_PORT" >&2
      return 1
    fi
    launched+=("$inst")
  done
  [ ${#launched[@]} -eq 0 ] || tls_files
  for inst in "${launched[@]}"; do
    write_cnf "$inst"
    rm -f "$db_dir/$inst/mariadbd.pid" "$db_dir/$inst/launched.pid"
    if [ ! -e "$db_dir/$inst/initialized" ]; then
      init_instance "$inst" &
      pids+=($!)
    fi
  done
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  [ "$rc" -eq 0 ] || return 1
  for inst in "${launched[@]}"; do launch "$inst"; done
  for inst in "$@"; do wait_ready "$inst" || rc=1; done
  [ "$rc" -eq 0 ] || return 1
  for inst in "${launched[@]}"; do
    if ! setup_accounts "$inst"; then
      echo "mariadb.sh: could not create the test accounts on the $inst" >&2
      return 1
    fi
    touch "$db_dir/$inst/initialized"
  done
}

stop_instance() { # instance
  local inst=$1 pid deadline
  pid=$(live_pid "$inst")
  [ -n "$pid" ] || return 0
  # mariadb-admin waits for the shutdown itself; the loop below covers a server that ignores it.
  mariadb-admin --no-defaults --protocol=tcp -h127.0.0.1 -P"$(port_of "$inst")" -uroot \
    --connect-timeout=5 shutdown >/dev/null 2>&1 || kill -TERM "$pid" 2>/dev/null || true
  deadline=$((SECONDS + stop_timeout))
  while [ -n "$(live_pid "$inst")" ]; do
    if [ "$SECONDS" -ge "$deadline" ]; then
      echo "mariadb.sh: the $inst server (pid $pid) did not stop within ${stop_timeout}s;" \
        "killing it" >&2
      kill -KILL "$pid" 2>/dev/null || true
      wait_dead "$inst"
      break
    fi
    sleep 0.05
  done
}

wait_dead() { # instance
  proc_wait_dead "$1" "the $1 server"
}

kill_instance() { # instance
  local inst=$1 pid
  pid=$(live_pid "$inst")
  if [ -z "$pid" ]; then
    echo "mariadb.sh: the $inst server is not running" >&2
    return 0
  fi
  kill -KILL "$pid"
  wait_dead "$inst"
}

status_instance() { # instance; prints one line, true when it answers
  local inst=$1 pid
  pid=$(live_pid "$inst")
  if [ -z "$pid" ]; then
    echo "$inst: stopped (127.0.0.1:$(port_of "$inst"), $db_dir/$inst)"
    return 1
  fi
  if answers "$inst"; then
    echo "$inst: running, pid $pid, 127.0.0.1:$(port_of "$inst"), $db_dir/$inst"
    return 0
  fi
  echo "$inst: pid $pid alive but not answering on 127.0.0.1:$(port_of "$inst");" \
    "see $db_dir/$inst/mariadbd.log"
  return 1
}

print_env() {
  cat <<EOF
export DMH_DB_DIR='$db_dir'
export DMH_SOURCE_HOST=127.0.0.1
export DMH_SOURCE_PORT=$source_port
export DMH_SOURCE_USER=root
export DMH_SOURCE_PASSWORD=''
export DMH_TARGET_HOST=127.0.0.1
export DMH_TARGET_PORT=$target_port
export DMH_TARGET_USER=root
export DMH_TARGET_PASSWORD=''
export DMH_SOURCE2_HOST=127.0.0.1
export DMH_SOURCE2_PORT=$source2_port
EOF
}

[ $# -eq 1 ] || usage
cmd=$1
if [ "$cmd" = env ]; then
  print_env
  exit 0
fi
case $cmd in
  start | stop | status | restart-source | restart-source2 | restart-target | kill-target) ;;
  *) usage ;;
esac
command -v mariadbd >/dev/null ||
  die "mariadbd not found; run scripts/deps.sh (installs mariadb-server)"
[ "$source_port" != "$target_port" ] && [ "$source2_port" != "$source_port" ] &&
  [ "$source2_port" != "$target_port" ] ||
  die "DMH_SOURCE_PORT, DMH_TARGET_PORT and DMH_SOURCE2_PORT must differ ($source_port, $target_port, $source2_port)"

mkdir -p "$db_dir"
# One mariadb.sh at a time per folder (parallel ctest fixtures, a user in another shell).
exec 9>"$db_dir/lock"
flock -w 120 9 || die "another mariadb.sh holds $db_dir/lock for more than 120s"

case $cmd in
  start) start_instances source target source2 ;;
  stop)
    stop_instance source &
    p=$!
    stop_instance source2 &
    p2=$!
    stop_instance target
    wait "$p"
    wait "$p2"
    ;;
  status)
    rc=0
    status_instance source || rc=3
    status_instance target || rc=3
    status_instance source2 || rc=3
    exit "$rc"
    ;;
  restart-source) stop_instance source && start_instances source ;;
  restart-source2) stop_instance source2 && start_instances source2 ;;
  restart-target) stop_instance target && start_instances target ;;
  kill-target) kill_instance target ;;
esac

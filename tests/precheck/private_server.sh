#!/usr/bin/env bash
# A private MariaDB server on a unix socket only (no port to collide with the shared pair), with a
# collation no stock server has: latin1_dmhtest_ci (id 250, a copy of latin1_swedish_ci, added to a
# copy of the charsets folder). The precheck's target_charset test reads a table of it as its
# source; the test pair's target lacks the collation.
#
#   private_server.sh start DIR   # prints nothing; the socket is DIR/sock once it answers
#   private_server.sh stop DIR
set -euo pipefail
cmd=$1 dir=$2
die() { echo "private_server: $*" >&2; exit 1; }
case $cmd in
start)
  rm -rf "$dir"
  mkdir -p "$dir/data" "$dir/tmp"
  charsets=$(mariadbd --verbose --help 2>/dev/null | awk '$1 == "character-sets-dir" { print $2 }')
  [ -d "$charsets" ] || charsets=/usr/share/mysql/charsets
  cp -r "$charsets" "$dir/charsets"
  sed -i 's|^\(  <collation name="latin1_spanish_ci".*\)$|\1\n  <collation name="latin1_dmhtest_ci"\tid="250"/>|' \
    "$dir/charsets/Index.xml"
  grep -q latin1_dmhtest_ci "$dir/charsets/Index.xml" || die "could not add the collation to Index.xml"
  # the weights of latin1_swedish_ci once more, under the new name
  awk '/<collation name="latin1_swedish_ci">/ { copy = 1 }
       { print; if (copy) block = block (block ? "\n" : "") $0 }
       copy && /<\/collation>/ { copy = 0; sub(/latin1_swedish_ci/, "latin1_dmhtest_ci", block);
                                 print ""; print block }' \
    "$charsets/latin1.xml" >"$dir/charsets/latin1.xml"
  {
    echo "[mariadbd]"
    [ "$(id -u)" -eq 0 ] && echo "user = root"
    echo "datadir = $dir/data"
    echo "tmpdir = $dir/tmp"
    echo "socket = $dir/sock"
    echo "pid-file = $dir/mariadbd.pid"
    echo "log-error = $dir/mariadbd.log"
    echo "skip-networking"
    echo "skip-log-bin"
    echo "server_id = 77"
    echo "character-sets-dir = $dir/charsets"
    echo "innodb_buffer_pool_size = 32M"
  } >"$dir/my.cnf"
  mariadb-install-db --defaults-file="$dir/my.cnf" --user="$(id -un)" \
    --auth-root-authentication-method=normal --skip-test-db >"$dir/install.log" 2>&1 ||
    { cat "$dir/install.log" >&2; die "mariadb-install-db failed"; }
  nohup mariadbd --defaults-file="$dir/my.cnf" >/dev/null 2>&1 &
  echo $! >"$dir/launched.pid"
  for _ in $(seq 1 300); do
    mariadb-admin --no-defaults -S "$dir/sock" -uroot ping >/dev/null 2>&1 && exit 0
    sleep 0.1
  done
  cat "$dir/mariadbd.log" >&2
  die "the server did not answer on $dir/sock"
  ;;
stop)
  pid=$(cat "$dir/launched.pid" 2>/dev/null || true)
  [ -n "$pid" ] || exit 0
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 100); do
    state=$(awk '/^State:/ { print $2 }' "/proc/$pid/status" 2>/dev/null || true)
    [ -z "$state" ] || [ "$state" = Z ] && break
    sleep 0.1
  done
  rm -rf "$dir"
  ;;
*) die "usage: private_server.sh start|stop DIR" ;;
esac

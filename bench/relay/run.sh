#!/usr/bin/env bash
# Relay benchmark: pull the same binlog files from the local source with the relay unit (run by
# tests/relay's relay_driver) and with `mariadb-binlog --read-from-remote-server --raw`; median of
# N runs; MB/s, events/s, ratio, peak RSS. See bench/relay/README.md.
#
#   bench/relay/run.sh [BUILD_DIR]      (default /tmp/build-relay; needs relay_driver built)
#
# Env: RUNS (3), OLTP_TRX (260000: ~2.1 M events), BULK_MB (520), FSYNC (never|flush|rotate,
# default flush), KEEP=1 to keep the work folder, SKIP_GEN=1 to reuse the last generated range.
set -euo pipefail

build=${1:-/tmp/build-relay}
runs=${RUNS:-3}
oltp_trx=${OLTP_TRX:-260000}
bulk_mb=${BULK_MB:-520}
fsync=${FSYNC:-flush}
host=${DMH_SOURCE_HOST:-127.0.0.1}
port=${DMH_SOURCE_PORT:-13306}
user=${DMH_SOURCE_USER:-root}
work=${BENCH_DIR:-/tmp/dmh-relay-bench}
driver=$build/tests/relay/relay_driver
so=$build/plugins/dmhost-relay.so
db=relay_bench

[ -x "$driver" ] || { echo "run.sh: $driver not built (make -C $build relay_driver)" >&2; exit 1; }
[ -f "$so" ] || { echo "run.sh: $so not built" >&2; exit 1; }

sql() { mariadb --no-defaults --protocol=tcp -h"$host" -P"$port" -u"$user" -N -B "$@"; }
master_file() { sql -e 'SHOW MASTER STATUS' | cut -f1; }

mkdir -p "$work"
range=$work/ranges

# ---- generate: each workload between two FLUSH LOGS, so it fills whole files ----
gen() { # name, SQL
  sql -e 'FLUSH LOGS'
  local first last
  first=$(master_file)
  sql -D "$db" -e "$2"
  sql -e 'FLUSH LOGS'
  last=$(sql -e 'SHOW BINARY LOGS' | cut -f1 | grep -B1 -x "$(master_file)" | head -1)
  echo "$1 $first $last" >>"$range"
}

if [ -z "${SKIP_GEN:-}" ] || [ ! -s "$range" ]; then
  : >"$range"
  sql -e "DROP DATABASE IF EXISTS $db; CREATE DATABASE $db; USE $db;
    CREATE TABLE $db.oltp (id INT PRIMARY KEY, k INT, c CHAR(120), pad CHAR(60));
    CREATE TABLE $db.bulk (id INT PRIMARY KEY, v VARCHAR(1000), w VARCHAR(1000));
    INSERT INTO $db.oltp SELECT seq, seq, REPEAT('c', 120), REPEAT('p', 60) FROM seq_1_to_100000;"
  # OLTP: small transactions of an update and an insert/delete pair (8 events each).
  sql <<SQL
DELIMITER //
CREATE PROCEDURE $db.oltp_run(n INT) BEGIN
  DECLARE i INT DEFAULT 0;
  WHILE i < n DO
    START TRANSACTION;
    UPDATE $db.oltp SET k = k + 1 WHERE id = 1 + (i * 7919) % 100000;
    DELETE FROM $db.oltp WHERE id = 200000 + i - 1;
    INSERT INTO $db.oltp VALUES (200000 + i, i, 'x', 'y');
    COMMIT;
    SET i = i + 1;
  END WHILE;
END //
DELIMITER ;
SQL
  echo "generating OLTP: $oltp_trx transactions..." >&2
  gen oltp "CALL $db.oltp_run($oltp_trx)"
  echo "generating bulk: ${bulk_mb} MB of multi-row inserts..." >&2
  rows=$((bulk_mb * 1024 * 1024 / 2000))
  gen bulk "INSERT INTO $db.bulk SELECT seq, REPEAT('v', 1000), REPEAT('w', 990) FROM seq_1_to_$rows"
fi

datadir=$(sql -e 'SELECT @@log_bin_basename')
datadir=$(dirname "$datadir")

files_of() { # first last -> the list
  sql -e 'SHOW BINARY LOGS' | cut -f1 | awk -v a="$1" -v b="$2" '$0>=a && $0<=b'
}

count_events() { # files...
  python3 - "$@" <<'EOF'
import struct, sys
n = 0
for f in sys.argv[1:]:
    with open(f, 'rb') as fp:
        data = fp.read()
    at = 4
    while at + 19 <= len(data):
        size = struct.unpack_from('<I', data, at + 9)[0]
        if size < 19:
            break
        at += size
        n += 1
print(n)
EOF
}

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }


# True when a relay.meta under the relay dir names a file after `last`.
meta_past() { # relay_dir last
  local f l name=
  for f in "$1"/*/relay.meta; do
    [ -f "$f" ] || continue
    while IFS= read -r l; do
      case $l in 'binlog-name = "'*)
        name=${l#binlog-name = \"}
        name=${name%\"}
        ;;
      esac
    done <"$f" 2>/dev/null || true
  done
  [ -n "$name" ] && [ $((10#${name##*.})) -gt $((10#${2##*.})) ]
}

# One relay run: pull [first, last] from first's start; time until relay.meta names a file after
# last. Prints "seconds peak_rss_kb".
relay_run() { # first last
  local d=$work/relay-run rd
  rm -rf "$d"
  mkdir -p "$d"
  rd=$d/relay
  local sid=$((900000 + RANDOM))
  cat >"$d/source.cfg" <<EOF
source-id = "relay_bench";
enable-relay = true;
relay-dir = "$rd";
from = { host = "$host"; port = $port; user = "$user"; password = "${DMH_SOURCE_PASSWORD:-}"; };
unit-paths = { relay = "$so"; };
relay = { server-id = $sid; binlog-name = "$1"; fsync = "$fsync"; };
EOF
  # The wait below forks nothing (bash builtins only; `read -t` on an idle FIFO is the sleep), so
  # the poll takes no CPU from the relay on a 2-core machine.
  mkfifo "$d/idle"
  exec 9<>"$d/idle"
  local t0 t1
  t0=$EPOCHREALTIME
  /usr/bin/time -f '%M' -o "$d/rss" "$driver" "$d/source.cfg" "$d/work" >"$d/log" 2>&1 &
  local tpid=$!
  # wait for relay.meta to name the file after `last` (the relay may already be further: others
  # write to the source too)
  while ! meta_past "$rd" "$2"; do
    if ! kill -0 "$tpid" 2>/dev/null; then echo "relay driver died; see $d/log" >&2; cat "$d/log" >&2; exit 1; fi
    read -r -t 0.005 -u 9 _ || true
  done
  t1=$EPOCHREALTIME
  exec 9>&-
  pkill -TERM -P "$tpid" 2>/dev/null || true
  wait "$tpid" || true
  # the files must be the source's, byte for byte
  for f in $(files_of "$1" "$2"); do
    cmp -s "$rd"/*/"$f" "$datadir/$f" || { echo "relay file $f differs from the source's" >&2; exit 1; }
  done
  echo "$(echo "$t1 - $t0" | bc -l) $(cat "$d/rss")"
}

binlog_run() { # first last
  local d=$work/mb-run
  rm -rf "$d"
  mkdir -p "$d"
  local t0 t1
  local files
  files=$(files_of "$1" "$2" | tr '\n' ' ')
  t0=$EPOCHREALTIME
  # shellcheck disable=SC2086
  /usr/bin/time -f '%M' -o "$d/rss" mariadb-binlog --no-defaults --read-from-remote-server --raw \
    --host="$host" --port="$port" --user="$user" --result-file="$d/" $files
  t1=$EPOCHREALTIME
  echo "$(echo "$t1 - $t0" | bc -l) $(cat "$d/rss")"
}

printf '%-5s %-14s %9s %8s %10s %12s %9s\n' load tool seconds MB/s events/s peak_RSS_MB ratio
while read -r name first last; do
  files=$(files_of "$first" "$last")
  bytes=0
  paths=()
  for f in $files; do
    bytes=$((bytes + $(stat -c %s "$datadir/$f")))
    paths+=("$datadir/$f")
  done
  events=$(count_events "${paths[@]}")
  rs=() ms=() rr=() mr=()
  for _ in $(seq "$runs"); do
    read -r s k < <(relay_run "$first" "$last")
    rs+=("$s")
    rr+=("$k")
    read -r s k < <(binlog_run "$first" "$last")
    ms+=("$s")
    mr+=("$k")
  done
  r_med=$(printf '%s\n' "${rs[@]}" | median)
  m_med=$(printf '%s\n' "${ms[@]}" | median)
  r_rss=$(printf '%s\n' "${rr[@]}" | sort -g | tail -1)
  m_rss=$(printf '%s\n' "${mr[@]}" | sort -g | tail -1)
  mb=$(echo "$bytes / 1048576" | bc -l)
  ratio=$(echo "$m_med / $r_med" | bc -l)
  printf '%-5s %-14s %9.3f %8.1f %10.0f %12.1f %9s   (%s files, %.0f MB, %s events)\n' "$name" relay "$r_med" \
    "$(echo "$mb / $r_med" | bc -l)" "$(echo "$events / $r_med" | bc -l)" "$(echo "$r_rss / 1024" | bc -l)" \
    "$(printf '%.2fx' "$ratio")" "$(echo "$files" | wc -w)" "$mb" "$events"
  printf '%-5s %-14s %9.3f %8.1f %10.0f %12.1f\n' "$name" mariadb-binlog "$m_med" \
    "$(echo "$mb / $m_med" | bc -l)" "$(echo "$events / $m_med" | bc -l)" "$(echo "$m_rss / 1024" | bc -l)"
done <"$range"

[ -n "${KEEP:-}" ] || rm -rf "$work/relay-run" "$work/mb-run"

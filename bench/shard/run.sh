#!/usr/bin/env bash
# Shard-merge benchmark (issue 22): `dmhost serve` merging 16 shard tables (4 schemas x 4 tables of
# one source: serve binds one source, as a DM-worker does; several sources merge through the
# cluster) into one target table, against the same rows from one table of the same source into
# one target table (the same servers, the same sync, the same transactions), then the cost of one
# coordinated DDL (shard-mode pessimistic): an ADD COLUMN issued on all 16 shards, timed from the
# last shard's ALTER to the column on the target and the lock gone. Prints rows/s of both, the
# ratio and the DDL's median ms; see README.md.
#
#   bench/shard/run.sh [BUILD_DIR]     (default build/ of this repository: host/dmhost, host/dmctl, plugins/)
#
# Env: ROWS (20000 rows per shard), TXN_ROWS (20 rows per source transaction), DDLS (5 coordinated
# DDLs, median of), MODE (pessimistic), KEEP=1 (keep the work folder and leave the servers running).
# Servers: scripts/mariadb.sh of its own, DMH_DB_DIR=/tmp/dmh-bench-shard-db, ports 14506/14507
# (BENCH_DB_DIR, BENCH_SOURCE_PORT, BENCH_TARGET_PORT override).
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
build=$(realpath -m "${1:-$repo/build}")
rows=${ROWS:-20000}
txn_rows=${TXN_ROWS:-20}
ddls=${DDLS:-5}
mode=${MODE:-pessimistic}
work=${BENCH_DIR:-/tmp/dmh-shard-bench}
dmhost=$build/host/dmhost dmctl=$build/host/dmctl plugins=$build/plugins
shards=16 # 4 schemas x 4 tables

die() {
  echo "shard bench: $*" >&2
  exit 1
}
note() { echo "== $*" >&2; }
[ -x "$dmhost" ] && [ -x "$dmctl" ] || die "$dmhost or $dmctl missing: build first"
build_type=$(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$build/CMakeCache.txt" 2>/dev/null || true)
[ "$build_type" = Release ] || echo "shard bench: WARNING: $build is a '${build_type:-unknown}' build, not Release" >&2

export DMH_DB_DIR=${BENCH_DB_DIR:-/tmp/dmh-bench-shard-db} DMH_SOURCE_PORT=${BENCH_SOURCE_PORT:-14506}
export DMH_TARGET_PORT=${BENCH_TARGET_PORT:-14507}
eval "$(bash "$repo/scripts/mariadb.sh" env)"
sql() { # port args...
  local p=$1
  shift
  mariadb --no-defaults --protocol=tcp -h127.0.0.1 -P"$p" -uroot -N -B "$@"
}
s1() { sql "$DMH_SOURCE_PORT" "$@"; }
tg() { sql "$DMH_TARGET_PORT" "$@"; }
ctl() { "$dmctl" --state-dir "$work/state" --timeout 120 "$@"; }
now_ms() { date +%s%3N; }
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

rm -rf "$work" && mkdir -p "$work"
bash "$repo/scripts/mariadb.sh" start >/dev/null
pid=
cleanup() {
  local rc=$?
  [ -z "$pid" ] || { kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; } || true
  if [ -z "${KEEP:-}" ]; then
    bash "$repo/scripts/mariadb.sh" stop >/dev/null 2>&1 || true
    rm -rf "$work"
  fi
  exit "$rc"
}
trap cleanup EXIT

# shard k (1..16): schema shop_<(k-1)/4+1>, table orders_<(k-1)%4+1>; ids are k * 10^9 + n, so the
# merged table's key stays unique without extract columns.
schema_of() { echo "shop_$((($1 - 1) / 4 + 1))"; }
table_of() { echo "orders_$((($1 - 1) % 4 + 1))"; }
on_source() { s1 "${@:2}"; }
ddl_cols='id BIGINT PRIMARY KEY, k INT NOT NULL, c VARCHAR(64) NOT NULL'
for db in shop_1 shop_2 shop_3 shop_4; do s1 -e "DROP DATABASE IF EXISTS $db; CREATE DATABASE $db"; done
s1 -e "DROP DATABASE IF EXISTS single; CREATE DATABASE single; CREATE TABLE single.orders ($ddl_cols)"
for k in $(seq 1 $shards); do
  on_source "$k" -e "CREATE TABLE $(schema_of "$k").$(table_of "$k") ($ddl_cols)"
done
tg -e "DROP DATABASE IF EXISTS shop; DROP DATABASE IF EXISTS single; DROP DATABASE IF EXISTS dm_meta;
       CREATE DATABASE shop; CREATE TABLE shop.orders ($ddl_cols);
       CREATE DATABASE single; CREATE TABLE single.orders ($ddl_cols)"
read -r f1 p1 < <(s1 -e 'SHOW MASTER STATUS' | cut -f1,2)

# The binlog ranges: ROWS rows per shard in transactions of TXN_ROWS, shard after shard, then the
# same rows into one table.
gen() { # k rows base -> SQL
  local k=$1 n=$2 base=$3 i
  for ((i = 0; i < n; i += txn_rows)); do
    echo "INSERT INTO $(schema_of "$k").$(table_of "$k") SELECT $base + seq, seq % 1000, MD5(seq) FROM seq_$((i + 1))_to_$((i + txn_rows));"
  done
}
note "writing $((rows * shards)) rows into 16 shards, then the same into one table"
{ echo "USE shop_1;"; for k in $(seq 1 $shards); do gen "$k" "$rows" $((k * 1000000000)); done; } | s1 # seq_* needs a schema
read -r sf sp < <(s1 -e 'SHOW MASTER STATUS' | cut -f1,2)
{ echo "USE single;"; for ((i = 0; i < rows * shards; i += txn_rows)); do
  echo "INSERT INTO single.orders SELECT seq, seq % 1000, MD5(seq) FROM seq_$((i + 1))_to_$((i + txn_rows));"
done; } | s1

cat >"$work/source1.cfg" <<CFG
source-id = "s1";
from = { host = "127.0.0.1"; port = $DMH_SOURCE_PORT; user = "root"; password = ""; };
CFG
task_cfg() { # name instances routes shard-mode
  cat <<CFG
name = "$1";
task-mode = "incremental";
$4
target-database = { host = "127.0.0.1"; port = $DMH_TARGET_PORT; user = "root"; password = ""; };
mysql-instances = ( $2 );
block-allow-list = { shop = { do-dbs = ["~^shop_[0-9]+\$"]; }; single = { do-dbs = ["single"]; }; };
routes = { $3 };
supervisor = { auto-resume = { enable = false; }; };
CFG
}
task_cfg merged "{ source-id = \"s1\"; block-allow-list = \"shop\"; route-rules = [\"orders\"];
  meta = { binlog-name = \"$f1\"; binlog-pos = $p1; }; }" \
  'orders = { schema-pattern = "shop_*"; table-pattern = "orders_*"; target-schema = "shop"; target-table = "orders"; };' \
  "shard-mode = \"$mode\";" >"$work/merged.cfg"
task_cfg single "{ source-id = \"s1\"; block-allow-list = \"single\";
  meta = { binlog-name = \"$sf\"; binlog-pos = $sp; }; }" "" "" >"$work/single.cfg"

"$dmhost" serve --state-dir "$work/state" --plugin-dir "$plugins" --log-level warn >"$work/serve.log" 2>&1 &
pid=$!
for _ in $(seq 1 200); do ctl query-status >/dev/null 2>&1 && break; sleep 0.1; done
ctl operate-source create "$work/source1.cfg" >/dev/null

total=$((rows * shards))
timed_task() { # name file db -> seconds on stdout
  local t0 n
  t0=$(now_ms)
  ctl start-task "$2" >"$work/start-$1.json" || die "start-task $1: $(cat "$work/start-$1.json")"
  while :; do
    n=$(tg -e "SELECT COUNT(*) FROM $3.orders")
    [ "$n" -ge "$total" ] && break
    [ $(($(now_ms) - t0)) -lt 1800000 ] || die "$1: $n of $total rows after 30 min"
    sleep 0.05
  done
  echo "scale=3; ($(now_ms) - $t0) / 1000" | bc
}
note "merged: 16 shards -> shop.orders"
t_merged=$(timed_task merged "$work/merged.cfg" shop)
note "single: one table -> single.orders"
t_single=$(timed_task single "$work/single.cfg" single)
ctl stop-task single >/dev/null || true

note "coordinated DDL x $ddls ($mode)"
lock_gone() { ctl shard-ddl-lock merged >"$work/locks.json" 2>/dev/null && jq -e '(.locks // []) | length == 0' "$work/locks.json" >/dev/null; }
costs=()
for r in $(seq 1 "$ddls"); do
  for k in $(seq 1 $shards); do
    on_source "$k" -e "ALTER TABLE $(schema_of "$k").$(table_of "$k") ADD COLUMN x$r INT NOT NULL DEFAULT $r"
  done
  t_last=$(now_ms)
  while [ "$(tg -e "SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = 'shop' AND TABLE_NAME = 'orders' AND COLUMN_NAME = 'x$r'")" != 1 ] || ! lock_gone; do
    [ $(($(now_ms) - t_last)) -lt 120000 ] || die "DDL $r did not reach the target within 120 s (see $work/serve.log)"
    sleep 0.01
  done
  costs+=($(($(now_ms) - t_last)))
done
# the merge is exact: the target holds every shard row once
tn=$(tg -e "SELECT COUNT(*), COUNT(DISTINCT id) FROM shop.orders")
[ "$tn" = "$total	$total" ] || die "shop.orders holds '$tn' (count, distinct ids), not $total"

rate() { echo "scale=0; $total / $1" | bc; }
printf '\n| job | rows | seconds | rows/s |\n|---|---|---|---|\n'
printf '| 16 shards -> one table, shard-mode %s | %d | %s | %s |\n' "$mode" "$total" "$t_merged" "$(rate "$t_merged")"
printf '| one table of one source -> one table | %d | %s | %s |\n' "$total" "$t_single" "$(rate "$t_single")"
printf '\nratio merged/single (rows/s): %s\n' "$(echo "scale=2; $t_single / $t_merged" | bc)"
printf 'coordinated ADD COLUMN on 16 shards, last ALTER -> column on the target and no lock: median %s ms (runs: %s)\n' \
  "$(printf '%s\n' "${costs[@]}" | median)" "${costs[*]}"

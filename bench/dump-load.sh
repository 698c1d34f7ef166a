#!/usr/bin/env bash
# Dump and load speed, side by side in one run on the same data, against what a user would pick
# instead: our dump vs mydumper (same threads) and mariadb-dump --single-transaction; our load vs
# myloader (same threads) and the mariadb client. Median of RUNS runs (default 3). Prints data size,
# seconds, MB/s, rows/s, ratio to each peer and our peak memory.
#
#   bench/dump-load.sh [--rows N] [--tables T] [--threads K] [--runs R] [--dump-only]
# Defaults: 8 tables x 700,000 sysbench rows (about 1.1 GB as SQL), 4 threads, 3 runs.
# --dump-only: our dump and mydumper only (no mariadb-dump, no loads), for sizes whose loads take
# too long; the data size is then that of our dump's .sql files.
# Servers: a pair of scripts/mariadb.sh of its own (started and stopped here), with
# innodb_flush_log_at_trx_commit=2, sync_binlog=0 and a buffer pool on both sides that holds the
# data: 3 GiB, or 320 bytes a row when that is more (BENCH_BUFFER_POOL overrides).
set -euo pipefail
cd "$(dirname "$0")/.."
rows=700000 tables=8 threads=4 runs=3 dump_only=
while [ $# -gt 0 ]; do
  case $1 in
  --rows) rows=$2; shift 2 ;;
  --tables) tables=$2; shift 2 ;;
  --threads) threads=$2; shift 2 ;;
  --runs) runs=$2; shift 2 ;;
  --dump-only) dump_only=1; shift ;;
  *) echo "usage: $0 [--rows N] [--tables T] [--threads K] [--runs R] [--dump-only]" >&2; exit 2 ;;
  esac
done
bash scripts/deps.sh
command -v mydumper >/dev/null || { [ "$(id -u)" = 0 ] && apt-get install -y -q mydumper >/dev/null; }
build=${BUILD_DIR:-build/bench}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j "$(nproc)" --target dmhost dmhost_dump dmhost_load >/dev/null
# The sysbench tables take ~255 bytes a row on disk (8 x 2M rows: 3.8 GiB); with a pool smaller
# than that both tools wait on the source's reads from outside the pool (8 x 2M in a 3 GiB pool: ours
# 14.6 s, mydumper 14.6 s; in 5 GiB: 8.3 and 13.6 s).
pool_mib=$((rows * tables * 320 / 1048576))
[ "$pool_mib" -ge 3072 ] || pool_mib=3072
# A pair of its own (so no test shares it), with a buffer pool that holds the data, as on a server
# sized for its data: then both tools are measured, not the disk. BENCH_DB_DIR/ports override.
export DMH_DB_DIR=${BENCH_DB_DIR:-/tmp/dmhost-bench-db} DMH_SOURCE_PORT=${BENCH_SOURCE_PORT:-14306}
export DMH_TARGET_PORT=${BENCH_TARGET_PORT:-14307} DMH_BUFFER_POOL=${BENCH_BUFFER_POOL:-${pool_mib}M}
bash scripts/mariadb.sh start >/dev/null
trap 'bash scripts/mariadb.sh stop >/dev/null 2>&1' EXIT
eval "$(bash scripts/mariadb.sh env)"
src=(--no-defaults --protocol=tcp -h"$DMH_SOURCE_HOST" -P"$DMH_SOURCE_PORT" -u"$DMH_SOURCE_USER")
dst=(--no-defaults --protocol=tcp -h"$DMH_TARGET_HOST" -P"$DMH_TARGET_PORT" -u"$DMH_TARGET_USER")
db=bench_dl
work=${BENCH_DIR:-/tmp/dmhost-bench-dl}
rm -rf "$work" && mkdir -p "$work"

echo "== data: $tables tables x $rows rows in $db"
bash scripts/sample-data.sh --rows "$rows" --tables "$tables" --db "$db" >/dev/null
total_rows=$((rows * tables))

cat >"$work/source.cfg" <<CFG
source-id = "bench";
from = { host = "$DMH_SOURCE_HOST"; port = $DMH_SOURCE_PORT; user = "$DMH_SOURCE_USER"; password = ""; };
CFG
task() { # mode target-db
  cat >"$work/task-$1.cfg" <<CFG
name = "bench";
task-mode = "$1";
target-database = { host = "$DMH_TARGET_HOST"; port = $DMH_TARGET_PORT; user = "$DMH_TARGET_USER"; password = ""; };
mysql-instances = ( { source-id = "bench"; block-allow-list = "b"; route-rules = ["r"]; } );
block-allow-list = { b = { do-dbs = ["$db"]; }; };
routes = { r = { schema-pattern = "$db"; target-schema = "$2"; }; };
dump = { threads = $threads; };
load = { pool-size = $threads; dir = "$work/ours-dump"; on-duplicate = "error"; };
CFG
}
task dump "${db}_ours"
task load "${db}_ours"

# seconds and peak RSS (KiB) of a command, via /usr/bin/time
timed() { # outfile cmd...
  local out=$1; shift
  /usr/bin/time -f '%e %M' -o "$out.time" "$@" >"$out.log" 2>&1 || { cat "$out.log" >&2; return 1; }
  cat "$out.time"
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
reset_target() { mariadb "${dst[@]}" -e "DROP DATABASE IF EXISTS \`$1\`; DROP DATABASE IF EXISTS dm_meta"; }

declare -A secs mem
for run in $(seq 1 "$runs"); do
  echo "== run $run/$runs"
  rm -rf "$work/ours-work" "$work/ours-dump" "$work/mydumper" "$work/dump.sql"
  read -r s m <<<"$(timed "$work/ours-dump-run" "$build/host/dmhost" run --quiet --source "$work/source.cfg" \
    --task "$work/task-dump.cfg" --work-dir "$work/ours-work" --plugin-dir "$build/plugins")"
  mv "$work/ours-work/tasks/bench/bench/dump" "$work/ours-dump"
  secs[ours_dump]+="$s "; mem[ours_dump]+="$m "
  read -r s m <<<"$(timed "$work/mydumper-run" mydumper -h "$DMH_SOURCE_HOST" -P "$DMH_SOURCE_PORT" \
    -u "$DMH_SOURCE_USER" -B "$db" -t "$threads" -r 100000 -o "$work/mydumper")"
  secs[mydumper]+="$s "
  [ -z "$dump_only" ] || continue
  read -r s m <<<"$(timed "$work/mdump-run" sh -c "mariadb-dump ${src[*]} --single-transaction \
    --databases $db > $work/dump.sql")"
  secs[mariadb_dump]+="$s "

  reset_target "${db}_ours"
  read -r s m <<<"$(timed "$work/ours-load-run" "$build/host/dmhost" run --quiet --source "$work/source.cfg" \
    --task "$work/task-load.cfg" --work-dir "$work/ours-lwork" --plugin-dir "$build/plugins")"
  rm -rf "$work/ours-lwork"
  secs[ours_load]+="$s "; mem[ours_load]+="$m "
  reset_target "$db"
  read -r s m <<<"$(timed "$work/myloader-run" myloader -h "$DMH_TARGET_HOST" -P "$DMH_TARGET_PORT" \
    -u "$DMH_TARGET_USER" -t "$threads" -d "$work/mydumper" -o)"
  secs[myloader]+="$s "
  reset_target "$db"
  read -r s m <<<"$(timed "$work/client-run" sh -c "mariadb ${dst[*]} < $work/dump.sql")"
  secs[mariadb_client]+="$s "
done
reset_target "$db"; reset_target "${db}_ours"

if [ -n "$dump_only" ]; then
  bytes=$(cat "$work"/ours-dump/*.sql | wc -c)
else
  bytes=$(stat -c %s "$work/dump.sql")
fi
mb=$(awk -v b="$bytes" 'BEGIN {printf "%.0f", b / 1048576}')
echo
echo "data: $tables tables, $total_rows rows, $mb MiB as SQL ($([ -n "$dump_only" ] && echo "our dump" || echo mariadb-dump)); $threads threads; median of $runs"
printf '%-28s %8s %9s %12s %9s\n' job seconds MiB/s rows/s "ours is"
line() { # label key ours-key
  local t o
  t=$(echo "${secs[$2]}" | tr ' ' '\n' | grep . | median)
  o=$(echo "${secs[$3]}" | tr ' ' '\n' | grep . | median)
  awk -v l="$1" -v t="$t" -v o="$o" -v mb="$mb" -v r="$total_rows" -v self="$([ "$2" = "$3" ] && echo 1)" \
    'BEGIN { printf "%-28s %8.2f %9.0f %12.0f %9s\n", l, t, mb / t, r / t, self ? "-" : sprintf("%.2fx", t / o) }'
}
line "dump: dmhost" ours_dump ours_dump
line "dump: mydumper -t $threads" mydumper ours_dump
if [ -z "$dump_only" ]; then
  line "dump: mariadb-dump" mariadb_dump ours_dump
  line "load: dmhost" ours_load ours_load
  line "load: myloader -t $threads" myloader ours_load
  line "load: mariadb client" mariadb_client ours_load
fi
peak() { echo "${mem[$1]:-}" | tr ' ' '\n' | grep . | sort -n | tail -1; }
if [ -n "$dump_only" ]; then
  echo "peak RSS of dmhost: dump $(peak ours_dump) KiB"
else
  echo "peak RSS of dmhost: dump $(peak ours_dump) KiB, load $(peak ours_load) KiB"
fi
echo "(\"ours is\" = peer seconds / our seconds: above 1x we are faster)"

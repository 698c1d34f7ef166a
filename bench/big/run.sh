#!/usr/bin/env bash
# A whole migration of a large source under writes (issue 25): `dmhost run` in task-mode all (dump,
# load, sync reading the relay) against mydumper + myloader + the target as a MariaDB replica from
# the dump's position, on the same data, the same writer and the same stopping rule, to the end of
# the sync catch-up. Prints the seconds of each phase, the total, the ratio to the peers, rows/s,
# MiB/s, the peak RSS of every dmhost process and the peak disk of the dump and the relay; every
# run ends with CHECKSUM TABLE of every table equal on both sides. See README.md.
#
#   bench/big/run.sh [--gb N] [--kill] [--build DIR]
#
# --gb N    size of the source's data (information_schema data_length), default 10; 0.2 is a
#           quick check
# --kill    a second run of ours with one kill -9 of dmhost in each phase (dump, load, sync), each
#           followed by a restart of the same command; still equal at the end
# --build   the build folder (default build/bench, built here in Release)
# Env: RATE (writer transactions/s, 100), TAIL (seconds the writer goes on once the sync or the
# replica has started, 5), THREADS (4: dump, load, sync workers, mydumper/myloader -t,
# slave_parallel_threads), BUFFER_POOL (2G on both servers), TIMEOUT (seconds any wait may take,
# 7200), SKIP_PEERS=1, SKIP_OURS=1, KEEP=1 (keep the data folders, the dumps and the servers).
# Servers: a pair of scripts/mariadb.sh of its own, /tmp/dmh-bench-big-db, ports 14506/14507/14508
# (BENCH_DB_DIR, BENCH_SOURCE_PORT, BENCH_TARGET_PORT, BENCH_SOURCE2_PORT override); the work folder
# /tmp/dmh-bench-big (BENCH_DIR).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
gb=10 kill_run='' build=$repo/build/bench
while [ $# -gt 0 ]; do
  case $1 in
  --gb) gb=$2; shift 2 ;;
  --kill) kill_run=1; shift ;;
  --build) build=$(realpath -m "$2"); shift 2 ;;
  *) echo "usage: $0 [--gb N] [--kill] [--build DIR]" >&2; exit 2 ;;
  esac
done
[[ $gb =~ ^[0-9]+(\.[0-9]+)?$ ]] || { echo "big bench: --gb wants a number of GiB, not '$gb'" >&2; exit 2; }
rate=${RATE:-100} tail_s=${TAIL:-5} threads=${THREADS:-4} timeout=${TIMEOUT:-7200}
work=${BENCH_DIR:-/tmp/dmh-bench-big}
db=bench_big ctl=bench_big_ctl task=big srcid=big-src sbtables=8
dmhost=$build/host/dmhost

# shellcheck source-path=SCRIPTDIR source=../lib/sysbench.sh
. "$repo/bench/lib/sysbench.sh"
die() { echo "big bench: $*" >&2; exit 1; }
note() { echo "== [$(date -u +%T)] $*" >&2; }
now() { echo "$EPOCHREALTIME"; }
since() { awk -v a="$1" -v b="${2:-$EPOCHREALTIME}" 'BEGIN {printf "%.1f", b - a}'; }

command -v mydumper >/dev/null || [ -n "${SKIP_PEERS:-}" ] || { [ "$(id -u)" = 0 ] &&
  apt-get install -y -q mydumper >/dev/null; } || die "mydumper is needed: apt-get install mydumper"
if [ -z "${SKIP_OURS:-}" ]; then
  cmake -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$build" -j "$(nproc)" --target dmhost dmhost_dump dmhost_load dmhost_sync \
    dmhost_relay >/dev/null
fi

export DMH_DB_DIR=${BENCH_DB_DIR:-/tmp/dmh-bench-big-db} DMH_SOURCE_PORT=${BENCH_SOURCE_PORT:-14506}
export DMH_TARGET_PORT=${BENCH_TARGET_PORT:-14507} DMH_SOURCE2_PORT=${BENCH_SOURCE2_PORT:-14508}
export DMH_BUFFER_POOL=${BUFFER_POOL:-2G}
eval "$(bash "$repo/scripts/mariadb.sh" env)"
src=(--no-defaults --protocol=tcp -h"$DMH_SOURCE_HOST" -P"$DMH_SOURCE_PORT" -u"$DMH_SOURCE_USER")
dst=(--no-defaults --protocol=tcp -h"$DMH_TARGET_HOST" -P"$DMH_TARGET_PORT" -u"$DMH_TARGET_USER")
ssql() { mariadb "${src[@]}" -N -B "$@"; }
tsql() { mariadb "${dst[@]}" -N -B "$@"; }

rm -rf "$work" && mkdir -p "$work"
bash "$repo/scripts/mariadb.sh" start >/dev/null
dm_pid='' writer_pid=''
cleanup() {
  local rc=$?
  [ -z "$dm_pid" ] || kill -9 "$dm_pid" 2>/dev/null || true
  [ -z "$writer_pid" ] || { ssql -e "SET sql_log_bin = 0; UPDATE $ctl.ctl SET stop = 1" 2>/dev/null;
    kill "$writer_pid" 2>/dev/null; } || true
  wait 2>/dev/null || true
  if [ -z "${KEEP:-}" ]; then
    bash "$repo/scripts/mariadb.sh" stop >/dev/null 2>&1 || true
    rm -rf "$work" "$DMH_DB_DIR"
  else
    echo "big bench: kept $work and the servers of $DMH_DB_DIR" >&2
  fi
  exit "$rc"
}
trap cleanup EXIT
rm -f "$work/idle" && mkfifo "$work/idle" && exec 8<>"$work/idle"
nap() { read -r -t "$1" -u 8 _ || true; } # sleep without a fork
alive() { # pid: running, not a zombie
  local s
  s=$(awk '/^State:/ {print $2}' "/proc/$1/status" 2>/dev/null || true)
  [ -n "$s" ] && [ "$s" != Z ] && [ "$s" != X ]
}
hwm_kb() { awk '/^VmHWM:/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
du_b() { du -sb "$@" 2>/dev/null | awk '{s += $1} END {print s + 0}'; }
max() { awk -v a="$1" -v b="$2" 'BEGIN {print (a > b ? a : b)}'; }
pos_ge() { # FILE:POS FILE:POS -> the first at or past the second (false when either is no position)
  [[ $1 =~ \.[0-9]+:[0-9]+$ && $2 =~ \.[0-9]+:[0-9]+$ ]] || return 1
  local a=${1%:*} b=${2%:*}
  local an=$((10#${a##*.})) bn=$((10#${b##*.}))
  [ "$an" -gt "$bn" ] || { [ "$an" -eq "$bn" ] && [ "${1##*:}" -ge "${2##*:}" ]; }
}

# ---- the data: sysbench tables, a wide table, a LOB table, ~gb GiB of data_length ---------------
# Shares of the size and the data_length of one row (measured at 0.2 GiB: the sizes printed below
# tell how close they came): 60% sysbench rows (~230 B), 15% wide rows (~540 B), 25% LOB rows
# (10-100 KB text + 1-8 KB binary, ~60 KB).
bytes=$(awk -v g="$gb" 'BEGIN {printf "%.0f", g * 1073741824}')
sbrows=$(awk -v b="$bytes" -v t="$sbtables" 'BEGIN {printf "%d", 0.60 * b / 230 / t + 1}')
widerows=$(awk -v b="$bytes" 'BEGIN {printf "%d", 0.15 * b / 540 + 1}')
lobrows=$(awk -v b="$bytes" 'BEGIN {printf "%d", 0.25 * b / 61000 + 1}')
total_rows=$((sbrows * sbtables + widerows + lobrows))

insert_chunks() { # rows chunk "INSERT ... SELECT ... FROM" (seq_A_to_B appended, then ";")
  local n=$1 step=$2 a b
  for ((a = 1; a <= n; a += step)); do
    b=$((a + step - 1 > n ? n : a + step - 1))
    echo "$3 seq_${a}_to_$b;"
  done
}
data_sql() {
  local i wcols='' wdefs='' j
  echo "SET sql_log_bin = 0; DROP DATABASE IF EXISTS $db; CREATE DATABASE $db; USE $db;"
  echo "DROP DATABASE IF EXISTS $ctl; CREATE DATABASE $ctl; CREATE TABLE $ctl.ctl (stop INT NOT NULL);"
  echo "INSERT INTO $ctl.ctl VALUES (0);"
  for i in $(seq 1 "$sbtables"); do
    sbtest_table_sql "$db" "$i"
    sbtest_fill_sql "$db" "$i" "$sbrows" 500000
  done
  # wide: 40 columns of the common types
  for j in $(seq 1 8); do
    wdefs+="i$j INT NOT NULL, b$j BIGINT, v$j VARCHAR(40) NOT NULL, d$j DATETIME(3), x$j DECIMAL(14,4), "
    wcols+="(seq * $j) % 1000003, seq * 1000 + $j, CONCAT(MD5(seq + $j), '-$j'),
      '2020-01-01' + INTERVAL (seq * $j) % 100000000 SECOND, (seq % 100000) / 7 + $j, "
  done
  echo "CREATE TABLE wide (id INT NOT NULL PRIMARY KEY, $wdefs note VARCHAR(64)) ENGINE=InnoDB;"
  insert_chunks "$widerows" 200000 "INSERT INTO wide SELECT seq, $wcols NULL FROM"
  # lob: a LONGTEXT of 10-100 KB and a BLOB of 1-8 KB per row
  echo "CREATE TABLE lob (id INT NOT NULL PRIMARY KEY, title VARCHAR(100) NOT NULL, body LONGTEXT NOT NULL,
    bin BLOB NOT NULL, KEY title (title)) ENGINE=InnoDB;"
  insert_chunks "$lobrows" 1000 "INSERT INTO lob SELECT seq, CONCAT('row ', seq),
    LEFT(REPEAT(CONCAT(MD5(seq), SHA1(seq)), 1400), 10240 + (seq * 7919) % 92161),
    LEFT(REPEAT(UNHEX(SHA2(seq, 256)), 256), 1024 + (seq * 104729) % 7169) FROM"
}
# The writer: sysbench oltp_write_only's four statements on a random sysbench table in each
# transaction, every 10th also an update of a wide row, every 25th a new LOB body, paced to `rate`
# per second, until $ctl.ctl says stop (set with sql_log_bin = 0: neither dmhost nor the replica
# sees the control table). A deadlock or lock wait rolls back and goes on. Returns its count.
writer_sql() {
  echo "SET sql_log_bin = 0;"
  sbtest_proc_sql "$ctl.w" "rate INT" "  WHILE (SELECT stop FROM $ctl.ctl) = 0 DO" "$db" "$sbtables" "$sbrows" \
    "    IF i % 10 = 0 THEN
      UPDATE $db.wide SET i1 = i1 + 1, v2 = MD5(RAND()), d3 = NOW(3), note = CONCAT('w', i)
        WHERE id = 1 + FLOOR(RAND() * $widerows);
    END IF;
    IF i % 25 = 0 THEN
      UPDATE $db.lob SET body = LEFT(REPEAT(MD5(RAND()), 3200), 10240 + FLOOR(RAND() * 92161))
        WHERE id = 1 + FLOOR(RAND() * $lobrows);
    END IF;" "  SELECT i;"
}

note "data: ~$gb GiB in $db: $sbtables x $sbrows sysbench rows, $widerows wide rows, $lobrows LOB rows"
t=$(now)
ssql -e 'RESET MASTER'
{ data_sql; writer_sql; } | ssql
ssql -e 'FLUSH BINARY LOGS'
# fresh statistics: information_schema shows the last ones (the LOB table's pages were not in them)
ssql -e "SELECT CONCAT('ANALYZE TABLE \`$db\`.\`', table_name, '\`;') FROM information_schema.tables
  WHERE table_schema = '$db'" | ssql >/dev/null
read -r data_b index_b < <(ssql -e "SELECT SUM(data_length), SUM(index_length) FROM information_schema.tables
  WHERE table_schema = '$db'")
data_mib=$(awk -v b="$data_b" 'BEGIN {printf "%.0f", b / 1048576}')
gen_s=$(since "$t")
note "generated in $gen_s s: data_length $data_mib MiB, index_length $((index_b / 1048576)) MiB, $total_rows rows"
ssql -e "SELECT table_name, table_rows, ROUND(data_length / 1048576) FROM information_schema.tables
  WHERE table_schema = '$db' ORDER BY table_name" | awk '{printf "   %-10s ~%s rows, %s MiB\n", $1, $2, $3}' >&2
tables=$(ssql -e "SELECT GROUP_CONCAT(CONCAT('\`$db\`.\`', table_name, '\`')) FROM information_schema.tables
  WHERE table_schema = '$db'")

# ---- what every run shares ----------------------------------------------------------------------
reset_target() {
  tsql -e "STOP SLAVE; RESET SLAVE ALL" >/dev/null 2>&1 || true
  tsql -e "DROP DATABASE IF EXISTS $db; DROP DATABASE IF EXISTS dm_meta"
}
start_writer() {
  ssql -e "SET sql_log_bin = 0; UPDATE $ctl.ctl SET stop = 0"
  ssql -e "CALL $ctl.w($rate)" >"$1/writer.out" 2>"$1/writer.err" &
  writer_pid=$!
}
# Stops the writer at its next transaction; END_POS/END_GTID: the source's position after its last
# commit, WRITES: its transactions.
stop_writer() { # dir
  ssql -e "SET sql_log_bin = 0; UPDATE $ctl.ctl SET stop = 1"
  wait "$writer_pid" || die "the writer failed: $(cat "$1/writer.err")"
  writer_pid=''
  WRITES=$(tail -n1 "$1/writer.out")
  END_POS=$(ssql -e 'SHOW MASTER STATUS' | awk '{print $1 ":" $2}')
  END_GTID=$(ssql -e 'SELECT @@gtid_binlog_pos')
}
# CHECKSUM TABLE of every table, both sides equal (after the writer stopped and the target caught up)
check_equal() { # label dir
  ssql -e "CHECKSUM TABLE $tables" >"$2/source.checksums"
  tsql -e "CHECKSUM TABLE $tables" >"$2/target.checksums"
  grep -qv $'\tNULL$' "$2/target.checksums" || die "$1: the target has none of the tables"
  cmp -s "$2/source.checksums" "$2/target.checksums" || {
    diff "$2/source.checksums" "$2/target.checksums" >&2 || true
    die "$1: THE TARGET DIFFERS FROM THE SOURCE (CHECKSUM TABLE above: source <, target >; kept in $2)"
  }
  note "$1: CHECKSUM TABLE of all $(wc -l <"$2/source.checksums") tables equal on both sides"
}

# ---- ours: dmhost run, task-mode all, relay on -----------------------------------------------------
# Results per run label: phase ends (seconds from the start), peak RSS of each process, disk peaks.
declare -A R
ours_cfgs() { # dir
  cat >"$1/source.cfg" <<CFG
source-id = "$srcid";
enable-relay = true;
relay-dir = "$1/relay";
from = { host = "$DMH_SOURCE_HOST"; port = $DMH_SOURCE_PORT; user = "$DMH_SOURCE_USER"; password = ""; };
CFG
  cat >"$1/task.cfg" <<CFG
name = "$task";
task-mode = "all";
meta-schema = "dm_meta";
target-database = { host = "$DMH_TARGET_HOST"; port = $DMH_TARGET_PORT; user = "$DMH_TARGET_USER"; password = ""; };
mysql-instances = ( { source-id = "$srcid"; block-allow-list = "b"; } );
block-allow-list = { b = { do-dbs = ["$db"]; }; };
supervisor = { auto-resume = { enable = false; }; };
dump = { threads = $threads; };
load = { pool-size = $threads; on-duplicate = "error"; };
sync = { worker-count = $threads; };
CFG
}
checkpoint() { tsql -e "SELECT CONCAT(binlog_name, ':', binlog_pos) FROM dm_meta.${task}_syncer_checkpoint
  WHERE is_global = 1" 2>/dev/null || true; }
loaded() { tsql -e "SELECT COALESCE(SUM(\`offset\`), 0) FROM dm_meta.${task}_loader_checkpoint" 2>/dev/null || echo 0; }
dm_start() { # dir n: dmhost run in the background (dm_pid), its log dir/run-n.log
  "$dmhost" run --quiet --source "$1/source.cfg" --task "$1/task.cfg" --work-dir "$1/work" \
    --plugin-dir "$build/plugins" >"$1/run-$2.log" 2>&1 &
  dm_pid=$!
  RSS+=("$2:0")
}
# One poll: the process alive, its peak RSS, the disk peaks, the phase ends seen in the logs.
poll_ours() { # dir
  alive "$dm_pid" || { tail -n 30 "$1"/run-*.log >&2; die "dmhost exited (logs: $1/run-*.log)"; }
  RSS[-1]="${RSS[-1]%%:*}:$(hwm_kb "$dm_pid")"
  if [ "$EPOCHSECONDS" != "${last_du:-}" ]; then # disk once a second: du walks the folder
    last_du=$EPOCHSECONDS
    dump_peak=$(max "$dump_peak" "$(du_b "$1/work/tasks/$task/$srcid/dump")")
    relay_peak=$(max "$relay_peak" "$(du_b "$1/relay")")
  fi
  [ -n "$t_dump" ] || ! grep -qs "dump unit finished" "$1"/run-*.log || t_dump=$(since "$t0")
  [ -n "$t_load" ] || ! grep -qs "load unit finished" "$1"/run-*.log || t_load=$(since "$t0")
}
poll_until() { # dir what cmd...: poll_ours until cmd succeeds
  local d=$1 what=$2 deadline=$((SECONDS + timeout))
  shift 2
  until "$@"; do
    poll_ours "$d"
    [ "$SECONDS" -lt "$deadline" ] || die "ours: $what did not happen within $timeout s (logs: $d/run-*.log)"
    nap 0.2
  done
}
kill_dm() { # dir phase: kill -9 now; the phase must still be running
  local n=${#RSS[@]}
  poll_ours "$1"
  kill -9 "$dm_pid"
  wait "$dm_pid" 2>/dev/null || true
  dm_pid=''
  case $2 in
  dump) ! grep -qs "dump unit finished" "$1/run-$n.log" || die "the kill in the dump came after its end" ;;
  load) ! grep -qs "load unit finished" "$1/run-$n.log" || die "the kill in the load came after its end" ;;
  esac
  note "ours: kill -9 during the $2 landed (process $n; its peak RSS $((${RSS[-1]#*:} / 1024)) MiB)"
  KILLS+="$2 "
}
has() { grep -qs "$2" "$1"/run-*.log; } # dir text: in any of the run's logs
synced_to() { pos_ge "$(checkpoint)" "$1"; }
dump_written() { [ "$(du_b "$1/work/tasks/$task/$srcid/dump")" -gt 0 ]; } # dir
load_committed() { [ "$(loaded)" -gt "$load_before" ]; }
has_checkpoint() { [ -n "$(checkpoint)" ]; }
elapsed() { awk -v a="$1" -v b="$EPOCHREALTIME" -v s="$2" 'BEGIN {exit !(b - a >= s)}'; } # since secs
ours_run() { # label kills(0|1)
  local d=$work/$1 n=1
  mkdir -p "$d"
  ours_cfgs "$d"
  reset_target
  RSS=() KILLS='' t_dump='' t_load='' dump_peak=0 relay_peak=0
  start_writer "$d"
  note "ours ($1): dmhost run, task-mode all, relay on, $threads threads; writer at $rate txn/s"
  t0=$(now)
  dm_start "$d" $n
  if [ "$2" = 1 ]; then
    # in the dump once its first file is there
    poll_until "$d" "the dump's first file" dump_written "$d"
    kill_dm "$d" dump
    n=$((n + 1)) && dm_start "$d" $n
    # in the load once it committed something in this process
    poll_until "$d" "the load's start" grep -qs "load: loading" "$d/run-$n.log"
    load_before=$(loaded)
    poll_until "$d" "a load commit" load_committed
    kill_dm "$d" load
    n=$((n + 1)) && dm_start "$d" $n
  fi
  poll_until "$d" "the load's end" has "$d" "load unit finished"
  poll_until "$d" "the sync's first checkpoint" has_checkpoint
  local ts
  ts=$(now)
  if [ "$2" = 1 ]; then
    poll_until "$d" "2 s of sync" elapsed "$ts" 2
    kill_dm "$d" sync
    n=$((n + 1)) && dm_start "$d" $n
  fi
  poll_until "$d" "$tail_s s of writes after the sync started" elapsed "$ts" "$tail_s"
  stop_writer "$d"
  poll_until "$d" "the catch-up to $END_POS" synced_to "$END_POS"
  local t_end
  t_end=$(since "$t0")
  poll_ours "$d"
  kill -TERM "$dm_pid"
  wait "$dm_pid" || echo "big bench: WARNING: dmhost exited with $? after SIGTERM" >&2
  dm_pid=''
  if grep -h -m1 -E "Duplicate entry|\((1062|1180)\)" "$d"/run-*.log >"$d/errors" 2>/dev/null; then
    die "ours ($1): a duplicate key in the logs: $(cat "$d/errors")"
  fi
  check_equal "ours ($1)" "$d"
  R[$1.dump]=$t_dump R[$1.load]=$(awk -v a="$t_load" -v b="$t_dump" 'BEGIN {printf "%.1f", a - b}')
  R[$1.sync]=$(awk -v a="$t_end" -v b="$t_load" 'BEGIN {printf "%.1f", a - b}') R[$1.total]=$t_end
  R[$1.rss]="${RSS[*]}" R[$1.dumpdisk]=$dump_peak R[$1.relaydisk]=$relay_peak R[$1.writes]=$WRITES
  R[$1.kills]=$KILLS R[$1.gtid]=$END_GTID
  note "ours ($1): dump ${R[$1.dump]} s, load ${R[$1.load]} s, catch-up ${R[$1.sync]} s, total $t_end s;" \
    "$WRITES writer transactions up to $END_POS (GTID $END_GTID)"
  # the next run's disk: a dump and a relay as large as the data are not kept unless asked
  [ -n "${KEEP:-}" ] || rm -rf "$d/work" "$d/relay"
}

# ---- the peers: mydumper, myloader, the target as a replica from the dump's position ------------
timed() { # dir name cmd...: seconds and peak RSS (KiB) into T_S, T_KB
  local d=$1 n=$2
  shift 2
  /usr/bin/time -f '%e %M' -o "$d/$n.time" "$@" >"$d/$n.log" 2>&1 || { tail -n 20 "$d/$n.log" >&2; die "$n failed"; }
  read -r T_S T_KB <"$d/$n.time"
}
slave() { # column -> its value in SHOW SLAVE STATUS
  mariadb "${dst[@]}" -E -e 'SHOW SLAVE STATUS' 2>/dev/null | awk -v c="$1" '{k = $1; sub(/:$/, "", k)} k == c {print $2; exit}'
}
replica_at() { # FILE:POS: the SQL thread executed up to it (fails on a replica error)
  local e
  e=$(slave Last_SQL_Error)$(slave Last_IO_Error)
  [ -z "$e" ] || die "replica error: $e"
  pos_ge "$(slave Relay_Master_Log_File):$(slave Exec_Master_Log_Pos)" "$1"
}
replica_relay_b() { du_b "$DMH_DB_DIR"/target/data/*relay-bin.[0-9]*; }
peers_run() {
  local d=$work/peers
  mkdir -p "$d"
  reset_target
  start_writer "$d"
  note "peers: mydumper -t $threads, myloader -t $threads, replica slave_parallel_threads=$threads"
  t0=$(now)
  timed "$d" mydumper mydumper -h "$DMH_SOURCE_HOST" -P "$DMH_SOURCE_PORT" -u "$DMH_SOURCE_USER" -B "$db" \
    -t "$threads" -r 100000 -o "$d/dump"
  R[peers.dump]=$T_S R[peers.dumpdisk]=$(du_b "$d/dump") R[peers.rss]="mydumper:$T_KB"
  local file pos
  file=$(awk '/^SHOW MASTER STATUS/ {m = 1} m && $1 == "Log:" {print $2; exit}' "$d/dump/metadata")
  pos=$(awk '/^SHOW MASTER STATUS/ {m = 1} m && $1 == "Pos:" {print $2; exit}' "$d/dump/metadata")
  [[ -n $file && -n $pos ]] || die "no position in mydumper's metadata: $(cat "$d/dump/metadata")"
  timed "$d" myloader myloader -h "$DMH_TARGET_HOST" -P "$DMH_TARGET_PORT" -u "$DMH_TARGET_USER" \
    -t "$threads" -d "$d/dump" -o
  R[peers.load]=$T_S R[peers.rss]+=" myloader:$T_KB"
  local ts deadline
  ts=$(now)
  tsql -e "SET GLOBAL slave_parallel_threads = $threads; SET GLOBAL slave_parallel_mode = 'optimistic';
    CHANGE MASTER TO MASTER_HOST = '$DMH_SOURCE_HOST', MASTER_PORT = $DMH_SOURCE_PORT,
      MASTER_USER = '$DMH_SOURCE_USER', MASTER_PASSWORD = '', MASTER_LOG_FILE = '$file',
      MASTER_LOG_POS = $pos, MASTER_USE_GTID = no;
    START SLAVE"
  relay_peak=0 deadline=$((SECONDS + timeout))
  until elapsed "$ts" "$tail_s"; do
    relay_peak=$(max "$relay_peak" "$(replica_relay_b)")
    nap 0.5
  done
  stop_writer "$d"
  until replica_at "$END_POS"; do
    relay_peak=$(max "$relay_peak" "$(replica_relay_b)")
    [ "$SECONDS" -lt "$deadline" ] || die "the replica did not reach $END_POS within $timeout s"
    nap 0.2
  done
  R[peers.sync]=$(since "$ts") R[peers.total]=$(since "$t0") R[peers.relaydisk]=$relay_peak
  R[peers.writes]=$WRITES
  tsql -e 'STOP SLAVE; RESET SLAVE ALL'
  check_equal "peers" "$d"
  note "peers: dump ${R[peers.dump]} s, load ${R[peers.load]} s, catch-up ${R[peers.sync]} s," \
    "total ${R[peers.total]} s; $WRITES writer transactions up to $END_POS"
  [ -n "${KEEP:-}" ] || rm -rf "$d/dump"
}

runs=()
[ -n "${SKIP_OURS:-}" ] || { ours_run ours 0; runs+=(ours); }
[ -n "${SKIP_PEERS:-}" ] || { peers_run; runs+=(peers); }
[ -z "$kill_run" ] || [ -n "${SKIP_OURS:-}" ] || { ours_run ours-kill 1; runs+=(ours-kill); }

# ---- the summary ----------------------------------------------------------------------------------
{
  echo
  echo "source: $data_mib MiB data_length (+$((index_b / 1048576)) MiB indexes), $total_rows rows in" \
    "$sbtables sysbench tables x $sbrows, wide x $widerows (41 columns), lob x $lobrows (10-100 KB" \
    "LONGTEXT + 1-8 KB BLOB); writer $rate txn/s until $tail_s s after the sync started; $threads" \
    "threads; buffer pools $DMH_BUFFER_POOL; $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
  printf '| %-9s | %7s | %7s | %9s | %7s | %5s | %9s | %6s | %-26s | %9s | %9s | %6s |\n' run dump_s \
    load_s catchup_s total_s ratio rows/s MiB/s "peak RSS MiB" "dump MiB" "relay MiB" writes
  printf '|%s|\n' "-----------|---------|---------|-----------|---------|-------|-----------|--------|----------------------------|-----------|-----------|--------"
  for r in "${runs[@]}"; do
    rss=$(for e in ${R[$r.rss]}; do printf '%s:%.0f ' "${e%%:*}" "$(awk -v k="${e#*:}" 'BEGIN {print k / 1024}')"; done)
    [ "$r" != peers ] || rss=${rss//mydumper/md} rss=${rss//myloader/ml}
    awk -v r="$r" -v d="${R[$r.dump]}" -v l="${R[$r.load]}" -v s="${R[$r.sync]}" -v t="${R[$r.total]}" \
      -v p="${R[peers.total]:-}" -v rows="$total_rows" -v mib="$data_mib" -v rss="${rss% }" \
      -v dd="${R[$r.dumpdisk]}" -v rd="${R[$r.relaydisk]}" -v w="${R[$r.writes]}" 'BEGIN {
      printf "| %-9s | %7.1f | %7.1f | %9.1f | %7.1f | %5s | %9.0f | %6.1f | %-26s | %9.0f | %9.1f | %6d |\n",
        r, d, l, s, t, (p == "" || r == "peers") ? "-" : sprintf("%.2fx", p / t), rows / (d + l),
        mib / (d + l), rss, dd / 1048576, rd / 1048576, w }'
  done
  echo "(ratio = the peers' total / this total: above 1x faster; rows/s and MiB/s over dump + load;"
  echo " peak RSS per process: ours each dmhost run in order (n:MiB), the peers' md = mydumper, ml = myloader;"
  echo " dump MiB / relay MiB: peak disk of our dump and relay folders, mydumper's folder and the replica's relay logs)"
  [ -z "${R[ours-kill.kills]:-}" ] || echo "ours-kill: kill -9 during ${R[ours-kill.kills]% } (each restarted), then equal"
  echo "every run: CHECKSUM TABLE of all tables equal on both sides after the catch-up"
} | tee "$work/summary.txt"

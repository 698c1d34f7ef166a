#!/usr/bin/env bash
# Sync benchmark: apply the same binlog range (a sysbench oltp_write_only-shaped workload) to the
# same starting state with our sync unit (`dmhost run`, task-mode incremental, worker-count 1 and 8)
# and with the target as a MariaDB replica of the source (slave_parallel_threads 0 and 4,
# optimistic; IO thread first, only the SQL thread timed). Then the lag of each under a steady
# write load. Prints seconds, rows/s, transactions/s, the ratio and our peak RSS; see README.md.
#
#   bench/sync/run.sh [BUILD_DIR]          (default build/ of this repository: host/dmhost, plugins/*.so)
#
# Env: TXNS (260000: >1 M row changes), TABLES (8), ROWS (100000 per table), RUNS (1, median of),
# WORKERS ("1 8"), REPLICA_THREADS ("0 4"; DURABLE=1: "0 4 8"), REPLICA_MODES (slave_parallel_mode
# of each REPLICA_THREADS > 0: "optimistic"; DURABLE=1: "optimistic conservative"), GEN_STREAMS (2), LAG_SECONDS (60), LAG_RATE (2000 txn/s),
# LAG_ROWS (ROWS), SYNC_TIMEOUT (1800 s), SYNC_EXTRA (more lines for the task's sync section),
# METADATA (FULL: the source's binlog_row_metadata while the range is written; NO_LOG or MINIMAL make
# our sync decode through its schema tracker, see bench/sync/tracker.sh), BUFFER_POOL (2G), SKIP_GEN=1 (reuse the last generated range), SKIP_OURS=1, SKIP_REPLICA=1,
# SKIP_LAG=1, KEEP=1 (keep the run folders and leave the server pair running), FENCING_TOKEN (our
# sync runs with `--fencing-token N`: the fenced checkpoint statements, docs/sdk.md "Fencing"),
# SCRAPE=1 (our sync runs with `--listen 127.0.0.1:0` and GET /metrics is scraped every second
# while it applies: the cost of the metrics, README.md), VALIDATOR ("none": the continuous
# validator's modes our sync runs with, each on the same range, e.g. "none fast full": its overhead,
# README.md "Validator"), DURABLE=1 (the target as production runs it: a binlog,
# innodb_flush_log_at_trx_commit=1, sync_binlog=1; each run prints the target's log fsyncs and
# binlog group commits).
# Servers: a pair of scripts/mariadb.sh of its own, DMH_DB_DIR=/tmp/dmh-bench-sync-db, ports
# 14406/14407 (BENCH_DB_DIR, BENCH_SOURCE_PORT, BENCH_TARGET_PORT override).
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
build=$(realpath -m "${1:-$repo/build}")
txns=${TXNS:-260000}
tables=${TABLES:-8}
rows=${ROWS:-100000}
runs=${RUNS:-1}
workers=${WORKERS:-1 8}
durable=${DURABLE:-}
if [ -n "$durable" ]; then
  replica_threads=${REPLICA_THREADS:-0 4 8} replica_modes=${REPLICA_MODES:-optimistic conservative}
else
  replica_threads=${REPLICA_THREADS:-0 4} replica_modes=${REPLICA_MODES:-optimistic}
fi
for m in $replica_modes; do
  case $m in conservative | optimistic | aggressive | minimal | none) ;;
  *) echo "sync bench: REPLICA_MODES: '$m' is not a slave_parallel_mode" >&2; exit 2 ;; esac
done
gen_streams=${GEN_STREAMS:-2}
lag_seconds=${LAG_SECONDS:-60}
lag_rate=${LAG_RATE:-2000}
lag_rows=${LAG_ROWS:-$rows}
sync_timeout=${SYNC_TIMEOUT:-1800}
metadata=${METADATA:-FULL}
scrape=${SCRAPE:-}
validator=${VALIDATOR:-none}
for m in $validator; do
  case $m in none | fast | full) ;; *) echo "sync bench: VALIDATOR: '$m' is not none, fast or full" >&2; exit 2 ;; esac
done
vmode=none # the validator mode of the next start_ours
# The databases of the next start_ours: the range runs take $db alone, so the source's writes after
# P1 (an earlier run's lag phase, kept by SKIP_GEN=1) are read past, never applied to a target
# whose bench_lag they no longer fit (duplicate keys); the lag run takes both.
ours_dbs=''
work=${BENCH_DIR:-/tmp/dmh-sync-bench}
db=bench_sync    # the timed workload
ldb=bench_lag    # the steady-load workload (its own tables, so the range P0..P1 never changes)
pdb=bench_probe  # target only: lag samples
task_name=bench
cp_table=${CP_TABLE:-${task_name}_syncer_checkpoint}
dmhost=$build/host/dmhost
sync_so=$build/plugins/dmhost-sync.so

die() {
  echo "sync bench: $*" >&2
  exit 1
}
note() { echo "== $*" >&2; }

export DMH_DB_DIR=${BENCH_DB_DIR:-/tmp/dmh-bench-sync-db} DMH_SOURCE_PORT=${BENCH_SOURCE_PORT:-14406}
export DMH_TARGET_PORT=${BENCH_TARGET_PORT:-14407} DMH_BUFFER_POOL=${BUFFER_POOL:-2G}
export DMH_TARGET_DURABLE=$durable # scripts/mariadb.sh: the target's binlog and flush settings
eval "$(bash "$repo/scripts/mariadb.sh" env)"
src=(--no-defaults --protocol=tcp -h"$DMH_SOURCE_HOST" -P"$DMH_SOURCE_PORT" -u"$DMH_SOURCE_USER")
dst=(--no-defaults --protocol=tcp -h"$DMH_TARGET_HOST" -P"$DMH_TARGET_PORT" -u"$DMH_TARGET_USER")
ssql() { mariadb "${src[@]}" -N -B "$@"; }
tsql() { mariadb "${dst[@]}" -N -B "$@"; }

ours=1
if [ -n "${SKIP_OURS:-}" ]; then
  ours=
elif [ ! -x "$dmhost" ] || [ ! -f "$sync_so" ]; then
  echo "sync bench: WARNING: $dmhost or $sync_so missing: our sync is NOT measured" >&2
  ours=
fi
build_type=$(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$build/CMakeCache.txt" 2>/dev/null || true)
[ -z "$ours" ] || [ "$build_type" = Release ] ||
  echo "sync bench: WARNING: $build is a '${build_type:-unknown}' build, not Release" >&2

mkdir -p "$work"
bash "$repo/scripts/mariadb.sh" start >/dev/null
# A target still running from a run with the other DURABLE gets this run's settings.
want_flush=2
[ -z "$durable" ] || want_flush=1
if [ "$(tsql -e 'SELECT @@innodb_flush_log_at_trx_commit')" != "$want_flush" ]; then
  note "the target runs with other flush settings than DURABLE='$durable' asks: restarting it"
  bash "$repo/scripts/mariadb.sh" restart-target >/dev/null
fi
cleanup() {
  local rc=$?
  [ -z "${dm_pid:-}" ] || { kill -TERM "$dm_pid" 2>/dev/null && wait "$dm_pid" 2>/dev/null; } || true
  for p in ${bg_pids:-}; do kill -TERM "$p" 2>/dev/null || true; done
  tsql -e 'STOP SLAVE; RESET SLAVE ALL' >/dev/null 2>&1 || true
  [ -n "${KEEP:-}" ] || bash "$repo/scripts/mariadb.sh" stop >/dev/null 2>&1 || true
  exit "$rc"
}
trap cleanup EXIT

# ---- helpers ---------------------------------------------------------------------------------

# One long-lived client on the target for polling: no fork per poll on a 2-core machine.
coproc TQ { exec mariadb "${dst[@]}" -N -B -n --force 2>>"$work/target-poll.err"; }
tq() { # query -> its rows in TQ_OUT (an error gives no rows; see target-poll.err)
  TQ_OUT=()
  printf '%s;\nSELECT "#EOR";\n' "$1" >&"${TQ[1]}"
  local l
  while IFS= read -r -t 60 l <&"${TQ[0]}"; do
    [ "$l" = "#EOR" ] && return 0
    TQ_OUT+=("$l")
  done
  die "the polling client on the target stopped answering"
}
rm -f "$work/idle" && mkfifo "$work/idle" && exec 8<>"$work/idle"
nap() { read -r -t "$1" -u 8 _ || true; } # sleep without a fork

seq_of() { echo $((10#${1##*.})); } # mysql-bin.000012 -> 12
pos_ge() { # file pos FILE POS: (file, pos) >= (FILE, POS)
  local a b
  a=$(seq_of "$1") b=$(seq_of "$3")
  [ "$a" -gt "$b" ] || { [ "$a" -eq "$b" ] && [ "$2" -ge "$4" ]; }
}
master_pos() { ssql -e 'SHOW MASTER STATUS' | cut -f1,2; }
gtid_seq() { # "0-1-123" -> 123 (domain 0 only)
  echo "$1" | tr ',' '\n' | awk -F- '$1 == 0 {print $3}' | grep . || echo 0
}
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
alive() { # pid: a running (not zombie) process
  local s
  s=$(awk '/^State:/ {print $2}' "/proc/$1/status" 2>/dev/null || true)
  [ -n "$s" ] && [ "$s" != Z ] && [ "$s" != X ]
}
hwm_kb() { awk '/^VmHWM:/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }

# shellcheck source-path=SCRIPTDIR source=../lib/sysbench.sh
. "$repo/bench/lib/sysbench.sh"
sbtest_sql() { # schema tables rows: create and fill sysbench-shaped tables, deterministic content
  local s=$1 n=$2 r=$3 i
  echo "USE \`$s\`;" # seq_1_to_N lives in the current schema
  for i in $(seq 1 "$n"); do
    sbtest_table_sql "$s" "$i"
    sbtest_fill_sql "$s" "$i" "$r"
  done
}

# The write procedure: sysbench oltp_write_only's four statements (index update, non-index update,
# delete, insert of the same id) in one transaction on a random table. gen(n, rate, secs): n
# transactions (0: no limit), paced to `rate` per second (0: as fast as it goes), for at most
# `secs` seconds (0: no limit). A deadlock between streams rolls the transaction back and retries.
gen_proc_sql() { # schema tables rows
  sbtest_proc_sql "\`$1\`.gen" "n INT, rate INT, secs DOUBLE" "  txn_loop: WHILE n = 0 OR i < n DO
    IF secs > 0 AND UNIX_TIMESTAMP(SYSDATE(6)) - t0 >= secs THEN LEAVE txn_loop; END IF;" "$1" "$2" "$3"
}

checksums() { # side(ssql|tsql) schema tables -> "table checksum" lines
  local list i
  # shellcheck disable=SC2016
  list=$(for i in $(seq 1 "$3"); do printf '`%s`.sbtest%s,' "$2" "$i"; done)
  "$1" -e "CHECKSUM TABLE ${list%,}" | awk '{print $1, $2}'
}

# ---- 1-3: starting state P0, the workload, P1 ------------------------------------------------
state=$work/state
if [ -z "${SKIP_GEN:-}" ] || [ ! -s "$state" ] || [ ! -s "$work/p0.sql" ]; then
  note "data: $tables tables x $rows rows in $db on the source"
  tsql -e 'STOP SLAVE; RESET SLAVE ALL' >/dev/null 2>&1 || true
  # A private pair: drop the binlogs of earlier generations (each is ~0.6 GB at full size).
  ssql -e 'RESET MASTER'
  { echo "SET sql_log_bin = 0; DROP DATABASE IF EXISTS $db; CREATE DATABASE $db;"
    sbtest_sql "$db" "$tables" "$rows"
    gen_proc_sql "$db" "$tables" "$rows"; } | ssql
  ssql -e "SET GLOBAL binlog_row_metadata = $metadata"
  ssql -e 'FLUSH LOGS'
  read -r p0_file p0_pos <<<"$(master_pos)"
  p0_gtid=$(ssql -e 'SELECT @@gtid_binlog_pos')
  note "P0 = $p0_file:$p0_pos (gtid '$p0_gtid'); dumping it for the target resets"
  mariadb-dump "${src[@]}" --single-transaction --skip-dump-date "$db" >"$work/p0.sql"

  note "workload: $txns transactions in $gen_streams streams"
  t0=$EPOCHREALTIME
  pids=()
  for s in $(seq 1 "$gen_streams"); do
    n=$((txns / gen_streams + (s <= txns % gen_streams ? 1 : 0)))
    ssql -e "CALL $db.gen($n, 0, 0)" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || die "the workload generator failed"; done
  read -r p1_file p1_pos <<<"$(master_pos)"
  p1_gtid=$(ssql -e 'SELECT @@gtid_binlog_pos')
  note "generated in $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.1f", b - a}') s;" \
    "P1 = $p1_file:$p1_pos (gtid '$p1_gtid')"

  # bytes between P0 and P1, and the row changes in them
  bytes=$(ssql -e 'SHOW BINARY LOGS' | awk -v f0="$p0_file" -v p0="$p0_pos" -v f1="$p1_file" -v p1="$p1_pos" '
    $1 >= f0 && $1 <= f1 { b += ($1 == f1 ? p1 : $2) - ($1 == f0 ? p0 : 0) } END { print b }')
  datadir=$(dirname "$(ssql -e 'SELECT @@log_bin_basename')")
  files=$(ssql -e 'SHOW BINARY LOGS' | cut -f1 | awk -v a="$p0_file" -v b="$p1_file" '$0 >= a && $0 <= b' |
    sed "s|^|$datadir/|")
  note "counting row changes with mariadb-binlog -v"
  # shellcheck disable=SC2086
  read -r row_changes xids < <(mariadb-binlog --no-defaults --base64-output=decode-rows -v \
    --start-position="$p0_pos" $files --stop-position="$p1_pos" |
    awk '/^### (INSERT INTO|UPDATE|DELETE FROM) / {r++} /^#.*[ \t]Xid = [0-9]+$/ {x++} END {print r + 0, x + 0}')
  txns_done=$(($(gtid_seq "$p1_gtid") - $(gtid_seq "$p0_gtid")))
  [ "$txns_done" -eq "$xids" ] || die "GTIDs say $txns_done transactions, the binlog has $xids commits"
  [ "$txns_done" -eq "$txns" ] || die "$txns transactions asked, $txns_done in the binlog"
  checksums ssql "$db" "$tables" >"$work/p1.checksums"
  cat >"$state" <<EOF
p0_file=$p0_file p0_pos=$p0_pos p0_gtid='$p0_gtid'
p1_file=$p1_file p1_pos=$p1_pos p1_gtid='$p1_gtid'
bytes=$bytes row_changes=$row_changes txns_done=$txns_done gen_tables=$tables gen_rows=$rows
gen_metadata=$metadata
EOF
fi
# shellcheck disable=SC1090
. "$state"
# shellcheck disable=SC2154 # set by $state
tables=$gen_tables rows=$gen_rows
mib=$(awk -v b="$bytes" 'BEGIN {printf "%.1f", b / 1048576}')
metadata=${gen_metadata:-FULL}
echo "binlog range: $p0_file:$p0_pos .. $p1_file:$p1_pos, $mib MiB, $txns_done transactions," \
  "$row_changes row changes ($tables tables x $rows rows), binlog_row_metadata=$metadata"
flush=$(tsql -e "SELECT CONCAT('innodb_flush_log_at_trx_commit=', @@innodb_flush_log_at_trx_commit,
  ' sync_binlog=', @@sync_binlog, ' sync_relay_log=', @@sync_relay_log,
  ' sync_relay_log_info=', @@sync_relay_log_info, ' buffer_pool=', @@innodb_buffer_pool_size DIV 1048576, 'M')")
echo "target: $flush (same for both tools)"

reset_target() { # the target back to P0's state
  tsql -e "STOP SLAVE; RESET SLAVE ALL" >/dev/null 2>&1 || true
  [ -z "$durable" ] || tsql -e "RESET MASTER" # the earlier runs' binlog of the target
  tsql -e "DROP DATABASE IF EXISTS dm_meta; DROP DATABASE IF EXISTS $db; CREATE DATABASE $db"
  tsql "$db" <"$work/p0.sql"
}
check_target() { # label: the target's tables equal the source's at P1
  checksums tsql "$db" "$tables" >"$work/target.checksums"
  cmp -s "$work/p1.checksums" "$work/target.checksums" || {
    diff "$work/p1.checksums" "$work/target.checksums" >&2 || true
    die "$1: THE TARGET DIFFERS FROM THE SOURCE AT P1 (CHECKSUM TABLE above: source <, target >)"
  }
}

# Where a durable target's time goes: InnoDB's fsyncs (MariaDB 10.11 counts the redo log's in
# Innodb_data_fsyncs; it has no Innodb_os_log_fsyncs) and binlog (group) commits: with
# sync_binlog=1 one binlog fsync per group commit.
flush_counters() { # -> FLUSH_COUNTERS "innodb_fsyncs binlog_commits binlog_group_commits"
  tq "SHOW GLOBAL STATUS WHERE Variable_name IN ('Innodb_data_fsyncs', 'Binlog_commits', 'Binlog_group_commits')"
  FLUSH_COUNTERS=$(printf '%s\n' "${TQ_OUT[@]}" | awk '{v[$1] = $2}
    END {print v["Innodb_data_fsyncs"] + 0, v["Binlog_commits"] + 0, v["Binlog_group_commits"] + 0}')
}
flush_delta() { # before after -> "fsyncs/commits/group_commits" between them
  echo "$1 $2" | awk '{printf "%d/%d/%d", $4 - $1, $5 - $2, $6 - $3}'
}

# ---- 4: the MariaDB replica --------------------------------------------------------------------
slave_cols=()
slave_field() { # name -> its value in the last SHOW SLAVE STATUS row polled
  local i
  for i in "${!slave_cols[@]}"; do
    [ "${slave_cols[$i]}" = "$1" ] || continue
    echo "${SLAVE_ROW[$i]}"
    return 0
  done
  die "SHOW SLAVE STATUS has no column $1"
}
poll_slave() {
  tq 'SHOW SLAVE STATUS'
  [ "${#TQ_OUT[@]}" -gt 0 ] || die "SHOW SLAVE STATUS is empty"
  # tabs are IFS white space (empty fields would vanish): split on \x1f instead
  IFS=$'\x1f' read -r -a SLAVE_ROW <<<"${TQ_OUT[0]//$'\t'/$'\x1f'}"
  local e
  e=$(slave_field Last_IO_Error)$(slave_field Last_SQL_Error)
  [ -z "$e" ] || die "replica error: $e"
}
start_replica() { # threads file pos mode: configure, start the IO thread only
  tsql -e "SET GLOBAL slave_parallel_threads = $1; SET GLOBAL slave_parallel_mode = '${4:-optimistic}';
    CHANGE MASTER TO MASTER_HOST = '$DMH_SOURCE_HOST', MASTER_PORT = $DMH_SOURCE_PORT,
      MASTER_USER = '$DMH_SOURCE_USER', MASTER_PASSWORD = '${DMH_SOURCE_PASSWORD:-}',
      MASTER_LOG_FILE = '$2', MASTER_LOG_POS = $3, MASTER_USE_GTID = no;
    START SLAVE IO_THREAD"
  IFS=$'\x1f' read -r -a slave_cols < <(mariadb "${dst[@]}" -B -e 'SHOW SLAVE STATUS' | head -1 | tr '\t' '\037')
}
# The run functions set globals (RUN_S, RUN_KB, ...) instead of printing: a $(...) subshell would
# lose the coprocess and dm_pid.
replica_run() { # threads mode -> RUN_S, RUN_FLUSH
  reset_target
  start_replica "$1" "$p0_file" "$p0_pos" "$2"
  local t0 t1 deadline=$((SECONDS + sync_timeout))
  while :; do
    poll_slave
    pos_ge "$(slave_field Master_Log_File)" "$(slave_field Read_Master_Log_Pos)" "$p1_file" "$p1_pos" && break
    [ "$SECONDS" -lt "$deadline" ] || die "the replica's IO thread did not reach P1 in $sync_timeout s"
    nap 0.05
  done
  # The SQL thread stops by itself at P1 (the source's binlog may go on: the lag runs' writes).
  flush_counters
  local f0=$FLUSH_COUNTERS
  t0=$EPOCHREALTIME
  tq "START SLAVE SQL_THREAD UNTIL MASTER_LOG_FILE = '$p1_file', MASTER_LOG_POS = $p1_pos"
  deadline=$((SECONDS + sync_timeout))
  while :; do
    poll_slave
    pos_ge "$(slave_field Relay_Master_Log_File)" "$(slave_field Exec_Master_Log_Pos)" "$p1_file" "$p1_pos" &&
      break
    [ "$SECONDS" -lt "$deadline" ] || die "the replica did not apply up to P1 in $sync_timeout s" \
      "(SQL thread running: $(slave_field Slave_SQL_Running); see $work/target-poll.err)"
    nap 0.05
  done
  t1=$EPOCHREALTIME
  flush_counters
  RUN_FLUSH=$(flush_delta "$f0" "$FLUSH_COUNTERS")
  tsql -e 'STOP SLAVE; RESET SLAVE ALL'
  check_target "replica, slave_parallel_threads=$1 $2"
  RUN_S=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", b - a}')
}

# ---- 5: our sync -------------------------------------------------------------------------------
write_cfgs() { # dir workers file pos
  cat >"$1/source.cfg" <<CFG
source-id = "bench";
enable-gtid = false;
enable-relay = false;
from = { host = "$DMH_SOURCE_HOST"; port = $DMH_SOURCE_PORT; user = "$DMH_SOURCE_USER"; password = "${DMH_SOURCE_PASSWORD:-}"; };
CFG
  cat >"$1/task.cfg" <<CFG
name = "$task_name";
task-mode = "incremental";
meta-schema = "dm_meta";
target-database = { host = "$DMH_TARGET_HOST"; port = $DMH_TARGET_PORT; user = "$DMH_TARGET_USER"; password = "${DMH_TARGET_PASSWORD:-}"; };
mysql-instances = ( { source-id = "bench"; block-allow-list = "b";
                      meta = { binlog-name = "$3"; binlog-pos = $4; }; } );
block-allow-list = { b = { do-dbs = [${ours_dbs:-"\"$db\", \"$ldb\""}]; }; };
unit-paths = { sync = "$sync_so"; };
sync = {
  worker-count = $2;
$([ "$vmode" = none ] || echo "  validator = { mode = \"$vmode\"; };")
${SYNC_EXTRA:-}
};
CFG
}
cp_pos() { # -> CP_F CP_P: the global checkpoint, or empty
  CP_F='' CP_P=''
  tq "SELECT binlog_name, binlog_pos FROM \`dm_meta\`.\`$cp_table\` WHERE is_global = 1"
  [ "${#TQ_OUT[@]}" -eq 0 ] || IFS=$'\t' read -r CP_F CP_P <<<"${TQ_OUT[0]}"
}
start_ours() { # dir workers file pos: dmhost in the background, dm_pid
  local listen=$scrape
  [ "$vmode" = none ] || listen=1 # the validator's counts are read from the task's status
  rm -rf "$1" && mkdir -p "$1"
  write_cfgs "$1" "$2" "$3" "$4"
  "$dmhost" run --quiet --source "$1/source.cfg" --task "$1/task.cfg" --work-dir "$1/work" \
    --plugin-dir "$build/plugins" ${FENCING_TOKEN:+--fencing-token "$FENCING_TOKEN"} \
    ${listen:+--listen 127.0.0.1:0} >"$1/log" 2>&1 &
  dm_pid=$!
  [ -z "$scrape" ] || start_scraper "$1"
}
listen_port() { # dir -> the port of dmhost's --listen (also in dir/port), or empty after 10 s
  local port='' _i
  for _i in $(seq 1 200); do
    port=$(grep -oE 'control plane on http://127\.0\.0\.1:[0-9]+' "$1/log" 2>/dev/null | sed 's/.*://' || true)
    [ -n "$port" ] && break
    nap 0.05
  done
  [ -z "$port" ] || echo "$port" >"$1/port"
  echo "$port"
}
start_scraper() { # dir: GET /metrics every second while dmhost runs (scraper_pid); count in dir/scrapes
  (
    port=$(listen_port "$1")
    [ -n "$port" ] || { echo "sync bench: WARNING: no --listen port in $1/log: no scrapes" >&2; exit 0; }
    while kill -0 "$dm_pid" 2>/dev/null; do
      curl -s --noproxy '*' -o "$1/metrics.last" "http://127.0.0.1:$port/metrics" && echo >>"$1/scrapes"
      sleep 1
    done
  ) &
  scraper_pid=$!
}
wait_ours() { # dir file pos timeout: until the checkpoint reaches (file, pos); peak RSS in dm_hwm
  local deadline=$((SECONDS + $4))
  dm_hwm=0
  while :; do
    if ! alive "$dm_pid"; then
      tail -n 30 "$1/log" >&2
      die "dmhost exited before its checkpoint reached $2:$3 (log: $1/log)"
    fi
    dm_hwm=$(hwm_kb "$dm_pid")
    cp_pos
    [ -n "$CP_P" ] && pos_ge "$CP_F" "$CP_P" "$2" "$3" && return 0
    [ "$SECONDS" -lt "$deadline" ] ||
      die "dmhost: the checkpoint did not reach $2:$3 within $4 s (at '$CP_F $CP_P'; log: $1/log)"
    nap 0.05
  done
}
stop_ours() { # [dir]
  local h
  h=$(hwm_kb "$dm_pid")
  [ "$h" -le "${dm_hwm:-0}" ] || dm_hwm=$h
  # CPU seconds (user + system) of the process: what our sync itself spends, whatever the target
  # or the machine's other load make the wall time
  dm_cpu=$(awk -v t="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / t }' "/proc/$dm_pid/stat" \
    2>/dev/null || echo 0)
  # What serving cost it: the CPU seconds of the HTTP server's connection threads (the daemon's
  # own dmhost_http_cpu_seconds_total, every scrape so far; this last one's own cost is not in it)
  http_cpu=
  if [ -n "$scrape" ] && [ -s "${1:-}/port" ]; then
    http_cpu=$(curl -s --noproxy '*' "http://127.0.0.1:$(cat "$1/port")/metrics" |
      awk '$1 == "dmhost_http_cpu_seconds_total" {print $2}')
  fi
  kill -TERM "$dm_pid"
  wait "$dm_pid" || echo "sync bench: WARNING: dmhost exited with $? after SIGTERM" >&2
  dm_pid=
  if [ -n "$scrape" ]; then
    wait "$scraper_pid" 2>/dev/null || true
    scraper_pid=
  fi
}
val_status() { # port -> VAL_CHECKED VAL_PENDING VAL_SKIPPED VAL_ERRORS SYNC_ROWS (empty: no answer)
  # `dmhost run` serves GET /metrics only: the validator's counts are its metrics (docs/metrics.md)
  curl -s --noproxy '*' --max-time 10 -o "$work/metrics.last" "http://127.0.0.1:$1/metrics" ||
    : >"$work/metrics.last"
  IFS='|' read -r VAL_CHECKED VAL_PENDING VAL_SKIPPED VAL_ERRORS SYNC_ROWS < <(awk -v OFS='|' '
    { n = $1; sub(/\{.*/, "", n); v[n] = $NF }
    END { print v["dmhost_validator_checked_rows"], v["dmhost_validator_pending_rows"],
      v["dmhost_validator_skipped_rows"], v["dm_validator_validator_error_count"],
      v["dmhost_sync_finished_rows_total"] }' "$work/metrics.last")
}
val_catch_up() { # dir: at the sync's end, the validator's counts; then until nothing is pending
  local port t0 deadline=$((SECONDS + sync_timeout))
  port=$(cat "$1/port" 2>/dev/null || listen_port "$1")
  [ -n "$port" ] || die "no --listen port in $1/log: the validator's counts cannot be read"
  t0=$EPOCHREALTIME
  val_status "$port"
  [ -n "$VAL_PENDING" ] || die "GET /metrics has no dmhost_validator_pending_rows (validator $vmode; answer: $work/metrics.last, log: $1/log)"
  VAL_AT_END="$VAL_CHECKED $VAL_PENDING $SYNC_ROWS"
  while [ "$VAL_PENDING" != 0 ]; do
    [ "$SECONDS" -lt "$deadline" ] || die "the validator still had $VAL_PENDING rows pending $sync_timeout s after the sync's end"
    nap 0.2
    val_status "$port"
    [ -n "$VAL_PENDING" ] || die "GET /metrics stopped answering (log: $1/log)"
  done
  VAL_CATCHUP=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.2f", b - a}')
  [ "${VAL_ERRORS:-0}" -eq 0 ] || die "the validator found $VAL_ERRORS error rows on a correct sync"
}
target_cpu() { # the target server's CPU seconds (user + system) so far
  awk -v t="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / t }' \
    "/proc/$(cat "$DMH_DB_DIR/target/mariadbd.pid")/stat" 2>/dev/null || echo 0
}
ours_run() { # workers -> RUN_S, RUN_KB, RUN_TCPU (validator: VAL_AT_END, VAL_CATCHUP, ...)
  local d=$work/ours-w$1 t0 t1 c0 c1
  reset_target
  c0=$(target_cpu)
  flush_counters
  local f0=$FLUSH_COUNTERS
  t0=$EPOCHREALTIME
  ours_dbs="\"$db\"" start_ours "$d" "$1" "$p0_file" "$p0_pos"
  [ "$vmode" = none ] || [ -n "$(listen_port "$d")" ] || die "no --listen port in $d/log"
  wait_ours "$d" "$p1_file" "$p1_pos" "$sync_timeout"
  t1=$EPOCHREALTIME
  # The target's CPU seconds while the sync applied (the validator's probes are in them): on a
  # shared machine the wall time follows the others' load, the CPU seconds much less.
  c1=$(target_cpu)
  flush_counters
  RUN_FLUSH=$(flush_delta "$f0" "$FLUSH_COUNTERS")
  RUN_TCPU=$(awk -v a="$c0" -v b="$c1" 'BEGIN {printf "%.2f", b - a}')
  # The sync's time ends at its checkpoint; how far the validator is behind then, and how long it
  # takes to settle what is pending, is measured after (not in the sync's seconds).
  [ "$vmode" = none ] || val_catch_up "$d"
  stop_ours "$d"
  # the HTTP server's CPU as a share of the process's, computed once and printed from there
  RUN_HTTP=$(awk -v h="${http_cpu:-0}" -v c="$dm_cpu" 'BEGIN {printf "%.3f", (c > 0 ? 100 * h / c : 0)}')
  [ -z "$scrape" ] || echo "   $(wc -l <"$d/scrapes" 2>/dev/null || echo 0) scrapes of GET /metrics;" \
    "the HTTP server's threads used ${http_cpu:-?} s of CPU: $RUN_HTTP% of dmhost's $dm_cpu s" >&2
  check_target "our sync, worker-count=$1"
  RUN_S=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", b - a}') RUN_KB=$dm_hwm RUN_CPU=$dm_cpu
}

# ---- timed runs --------------------------------------------------------------------------------
declare -A secs rss cpus https vals tcpus flushes
labels=()
if [ -z "${SKIP_REPLICA:-}" ]; then
  for th in $replica_threads; do
    modes=$replica_modes
    [ "$th" -gt 0 ] || modes=- # no parallel mode without parallel threads
    for pm in $modes; do
      l=replica:$th:$pm
      labels+=("$l")
      for r in $(seq 1 "$runs"); do
        note "replica, slave_parallel_threads=$th, mode $pm, run $r/$runs"
        replica_run "$th" "${pm/#-/optimistic}"
        s=$RUN_S
        echo "   $s s; the target's InnoDB fsyncs/binlog commits/group commits $RUN_FLUSH" >&2
        secs[$l]+="$s "
        flushes[$l]+="$RUN_FLUSH "
      done
    done
  done
fi
if [ -n "$ours" ]; then
  for w in $workers; do
    for m in $validator; do labels+=("ours:$w:$m"); done
    for r in $(seq 1 "$runs"); do
      # the modes alternate within each run, so a change of the machine's load hits them alike
      for m in $validator; do
        l=ours:$w:$m vmode=$m
        note "our sync, worker-count=$w, validator $m, run $r/$runs"
        ours_run "$w"
        s=$RUN_S k=$RUN_KB
        echo "   $s s, $RUN_CPU s of CPU, the target's $RUN_TCPU s, peak RSS $((k / 1024)) MiB;" \
          "the target's InnoDB fsyncs/binlog commits/group commits $RUN_FLUSH" >&2
        flushes[$l]+="$RUN_FLUSH "
        secs[$l]+="$s "
        rss[$l]+="$k "
        cpus[$l]+="$RUN_CPU "
        tcpus[$l]+="$RUN_TCPU "
        https[$l]+="$RUN_HTTP "
        if [ "$m" != none ]; then
          read -r vc vp vr <<<"$VAL_AT_END"
          echo "   validator at the sync's end: $vc rows checked, $vp pending (sync: $vr rows);" \
            "nothing pending $VAL_CATCHUP s later, $VAL_CHECKED checked, $VAL_SKIPPED skipped" >&2
          vals[$l]+="$vc/$vp/$vr/$VAL_CATCHUP/$VAL_CHECKED/$VAL_SKIPPED "
        fi
      done
    done
  done
  vmode=none
fi

med() { echo "${secs[$1]}" | tr ' ' '\n' | grep . | median; }
best_replica='' best_replica_s='' best_ours='' best_ours_s=''
for l in "${labels[@]}"; do
  s=$(med "$l")
  case $l in
  replica:*) if [ -z "$best_replica_s" ] || awk -v a="$s" -v b="$best_replica_s" 'BEGIN {exit !(a < b)}'; then
    best_replica=${l#replica:} best_replica_s=$s; fi ;;
  ours:*:none) if [ -z "$best_ours_s" ] || awk -v a="$s" -v b="$best_ours_s" 'BEGIN {exit !(a < b)}'; then
    best_ours=${l#ours:} best_ours=${best_ours%:none} best_ours_s=$s; fi ;;
  esac
done

# LAG_REPLICA ("threads:mode", e.g. 4:optimistic) and LAG_WORKERS: the lag of these without timed
# runs (WORKERS=" " REPLICA_THREADS=" " skip those), else of the best measured of each.
best_replica=${LAG_REPLICA:-$best_replica} best_ours=${LAG_WORKERS:-$best_ours}
[ -n "$ours" ] || best_ours=

# ---- 6: lag under a steady load ----------------------------------------------------------------
lag_lines=()
lag_setup() { # both sides: bench_lag with identical content (not binlogged), the probe on the target
  local ddl
  ddl="DROP DATABASE IF EXISTS $ldb; CREATE DATABASE $ldb;
    $(sbtest_sql "$ldb" "$tables" "$lag_rows")
    CREATE TABLE $ldb.heartbeat (id INT PRIMARY KEY, ts DATETIME(6) NOT NULL);
    INSERT INTO $ldb.heartbeat VALUES (1, SYSDATE(6));
    CREATE TABLE $ldb.beats (id BIGINT AUTO_INCREMENT PRIMARY KEY, ts DATETIME(6) NOT NULL);"
  { echo "SET sql_log_bin = 0; $ddl"
    gen_proc_sql "$ldb" "$tables" "$lag_rows"
    cat <<SQL
DELIMITER //
CREATE PROCEDURE $ldb.beat(secs DOUBLE)
BEGIN
  DECLARE t0 DOUBLE DEFAULT UNIX_TIMESTAMP(SYSDATE(6));
  WHILE UNIX_TIMESTAMP(SYSDATE(6)) - t0 < secs DO
    -- the row the age samples read, and one row per beat for the arrivals (several beats can
    -- arrive in one batch: each is counted)
    START TRANSACTION;
    UPDATE $ldb.heartbeat SET ts = SYSDATE(6) WHERE id = 1;
    INSERT INTO $ldb.beats (ts) VALUES (SYSDATE(6));
    COMMIT;
    DO SLEEP(0.1);
  END WHILE;
END //
DELIMITER ;
SQL
  } | ssql
  tsql -e "STOP SLAVE; RESET SLAVE ALL" >/dev/null 2>&1 || true
  { echo "DROP DATABASE IF EXISTS dm_meta; $ddl"
    cat <<SQL
DROP DATABASE IF EXISTS $pdb; CREATE DATABASE $pdb;
CREATE TABLE $pdb.samples (n INT AUTO_INCREMENT PRIMARY KEY, lag_us BIGINT);
CREATE TABLE $pdb.arrivals (n INT AUTO_INCREMENT PRIMARY KEY, lag_us BIGINT);
DELIMITER //
CREATE PROCEDURE $pdb.sample(secs DOUBLE)
BEGIN
  DECLARE t0 DOUBLE DEFAULT UNIX_TIMESTAMP(SYSDATE(6));
  DECLARE next_age DOUBLE DEFAULT 0;
  DECLARE seen BIGINT DEFAULT 0;
  DECLARE top BIGINT;
  DECLARE cur DATETIME(6);
  SELECT COALESCE(MAX(id), 0) INTO seen FROM $ldb.beats;
  WHILE UNIX_TIMESTAMP(SYSDATE(6)) - t0 < secs DO
    SELECT ts INTO cur FROM $ldb.heartbeat WHERE id = 1;
    -- arrivals: each beat's delay until it is visible here (polled every ~1 ms), whatever the
    -- phase of beat and sample; samples: the age of the last beat every 100 ms (the age includes
    -- 0-100 ms of the beat's own period)
    SELECT COALESCE(MAX(id), 0) INTO top FROM $ldb.beats;
    IF top > seen THEN
      INSERT INTO $pdb.arrivals (lag_us) SELECT TIMESTAMPDIFF(MICROSECOND, ts, SYSDATE(6))
        FROM $ldb.beats WHERE id > seen AND id <= top;
      SET seen = top;
    END IF;
    IF UNIX_TIMESTAMP(SYSDATE(6)) >= next_age THEN
      INSERT INTO $pdb.samples (lag_us) VALUES (TIMESTAMPDIFF(MICROSECOND, cur, SYSDATE(6)));
      SET next_age = UNIX_TIMESTAMP(SYSDATE(6)) + 0.1;
    END IF;
    DO SLEEP(0.001);
  END WHILE;
END //
DELIMITER ;
SQL
  } | tsql
  read -r pl_file pl_pos <<<"$(master_pos)"
}
lag_load() { # label: the heartbeat, then the paced load with the sampler -> LAG_LINE
  local g0 g1 pe_file pe_pos
  g0=$(gtid_seq "$(ssql -e 'SELECT @@gtid_binlog_pos')")
  ssql -e "CALL $ldb.beat($lag_seconds + 3)" &
  bg_pids="$!"
  nap 1.5 # the first beats reach the target before sampling starts
  ssql -e "CALL $ldb.gen(0, $lag_rate, $lag_seconds)" &
  bg_pids+=" $!"
  tsql -e "CALL $pdb.sample($lag_seconds)" || die "the lag sampler failed"
  for p in $bg_pids; do wait "$p" || die "the steady load failed"; done
  bg_pids=
  g1=$(gtid_seq "$(ssql -e 'SELECT @@gtid_binlog_pos')")
  read -r pe_file pe_pos <<<"$(master_pos)"
  echo "$pe_file $pe_pos $((g1 - g0))" >"$work/lag-end"
  LAG_LINE=
  local t
  for t in samples arrivals; do
    LAG_LINE+=$(tsql -e "SELECT lag_us FROM $pdb.$t ORDER BY lag_us" | awk -v l="$1 ($t)" \
      -v rate="$(awk -v n="$((g1 - g0))" -v s="$lag_seconds" 'BEGIN {printf "%.0f", n / s}')" '
      function pct(p,  i) { i = int(NR * p + 0.5); if (i < 1) i = 1; return a[i] }
      {a[NR] = $1 / 1e6} END {
        if (NR == 0) { print l ": no samples"; exit }
        printf "%-40s %8.3f %8.3f %8.3f %8d %10s\n", l, pct(0.5), pct(0.99), a[NR], NR, rate }')
    [ "$t" = arrivals ] || LAG_LINE+=$'\n'
  done
}
lag_check() { # label: the lag tables equal on both sides
  local a b
  a=$(checksums ssql "$ldb" "$tables") b=$(checksums tsql "$ldb" "$tables")
  [ "$a" = "$b" ] || die "$1: after the steady load the target's $ldb differs from the source's"
}
if [ -z "${SKIP_LAG:-}" ] && [ "$lag_seconds" -gt 0 ]; then
  if [ -n "$best_replica" ]; then
    note "lag: replica, slave_parallel_threads=$best_replica, $lag_rate txn/s for $lag_seconds s"
    lag_setup
    bm=${best_replica#*:}
    start_replica "${best_replica%%:*}" "$pl_file" "$pl_pos" "${bm/#-/optimistic}"
    tsql -e 'START SLAVE SQL_THREAD'
    lag_load "replica threads=$best_replica"
    read -r pe_file pe_pos _ <"$work/lag-end"
    deadline=$((SECONDS + 120))
    while :; do
      poll_slave
      pos_ge "$(slave_field Relay_Master_Log_File)" "$(slave_field Exec_Master_Log_Pos)" "$pe_file" "$pe_pos" &&
        break
      [ "$SECONDS" -lt "$deadline" ] || die "the replica did not catch up with the steady load in 120 s"
      nap 0.1
    done
    tsql -e 'STOP SLAVE; RESET SLAVE ALL'
    lag_check "replica"
    lag_lines+=("$LAG_LINE")
  fi
  if [ -n "$best_ours" ]; then
    note "lag: our sync, worker-count=$best_ours, $lag_rate txn/s for $lag_seconds s"
    lag_setup
    d=$work/ours-lag
    start_ours "$d" "$best_ours" "$pl_file" "$pl_pos"
    lag_load "dmhost sync workers=$best_ours"
    read -r pe_file pe_pos _ <"$work/lag-end"
    wait_ours "$d" "$pe_file" "$pe_pos" 120
    stop_ours
    lag_check "our sync"
    lag_lines+=("$LAG_LINE (peak RSS $((dm_hwm / 1024)) MiB)")
  fi
fi

# ---- 7: summary --------------------------------------------------------------------------------
{
  echo
  echo "binlog: $p0_file:$p0_pos .. $p1_file:$p1_pos, $mib MiB, $txns_done transactions, $row_changes row changes, binlog_row_metadata=$metadata"
  echo "target: $flush; median of $runs; build $build (${build_type:-?});" \
    "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
  printf '%-32s %8s %10s %9s %7s %8s %7s %9s\n' tool/config seconds rows/s txn/s ratio peak_MiB cpu_s tgt_cpu_s
  for l in "${labels[@]}"; do
    s=$(med "$l")
    case $l in
    replica:*) tm=${l#replica:} name="replica threads=${tm%%:*}"
      [ "${tm#*:}" = - ] || name+=" ${tm#*:}"
      m=- c=- tc=- ;;
    ours:*) wm=${l#ours:} name="dmhost sync workers=${wm%%:*}"
      [ "${wm#*:}" = none ] || name+=" val=${wm#*:}"
      m=$(echo "${rss[$l]}" | tr ' ' '\n' | grep . | sort -g | tail -1)
      m=$(awk -v k="$m" 'BEGIN {printf "%.1f", k / 1024}')
      c=$(echo "${cpus[$l]}" | tr ' ' '\n' | grep . | median)
      tc=$(echo "${tcpus[$l]}" | tr ' ' '\n' | grep . | median) ;;
    esac
    awk -v n="$name" -v s="$s" -v r="$row_changes" -v t="$txns_done" -v b="${best_replica_s:-}" -v m="$m" \
      -v c="$c" -v tc="$tc" 'BEGIN { printf "%-32s %8.2f %10.0f %9.0f %7s %8s %7s %9s\n", n, s, r / s,
               t / s, b == "" ? "-" : sprintf("%.2fx", b / s), m, c, tc }'
  done
  echo "(cpu_s: user + system seconds of the dmhost process; tgt_cpu_s: of the target server while" \
    "our sync applied (the validator's probes in it), medians)"
  if [ -n "$scrape" ]; then
    for l in "${labels[@]}"; do
      [ -z "${https[$l]:-}" ] ||
        echo "(SCRAPE=1, $l: the HTTP server's threads used" \
          "$(echo "${https[$l]}" | tr ' ' '\n' | grep . | median)% of dmhost's CPU seconds, median)"
    done
  fi
  echo "(ratio = best replica config's seconds / these seconds: above 1x faster than the replica)"
  echo "the target's Innodb_data_fsyncs/Binlog_commits/Binlog_group_commits while each applied, per run:"
  for l in "${labels[@]}"; do
    [ -z "${flushes[$l]:-}" ] || printf '  %-30s %s\n' "$l" "${flushes[$l]% }"
  done
  for l in "${labels[@]}"; do
    [ -n "${vals[$l]:-}" ] || continue
    wm=${l#ours:} none_l=ours:${wm%%:*}:none
    ov=-
    [ -z "${secs[$none_l]:-}" ] ||
      ov=$(awk -v a="$(med "$none_l")" -v b="$(med "$l")" 'BEGIN {printf "%+.1f%%", 100 * (a / b - 1)}')
    echo "validator ${wm#*:}, ${wm%%:*} workers: the sync's rows/s $ov against validator none's (medians);" \
      "per run checked/pending at the sync's end/sync rows/seconds until nothing pending/checked/skipped:" \
      "${vals[$l]% }"
  done
  if [ "${#lag_lines[@]}" -gt 0 ]; then
    echo
    echo "lag under a steady load ($lag_rate txn/s asked, $lag_seconds s; heartbeat every 100 ms, its" \
      "age is part of the lag; src_txn/s counts the heartbeats too):"
    echo "(samples: the heartbeat's age every 100 ms, as before; arrivals: each beat's delay until" \
      "the target showed it, polled every ~1 ms: the lag without the beat's period)"
    printf '%-40s %8s %8s %8s %8s %10s\n' tool/config p50_s p99_s max_s samples src_txn/s
    printf '%s\n' "${lag_lines[@]}"
  fi
  [ -n "$ours" ] || echo "NOTE: our sync was not measured (SKIP_OURS, or no $sync_so)"
} | tee "$work/summary.txt"

[ -n "${KEEP:-}" ] || rm -rf "$work"/ours-*

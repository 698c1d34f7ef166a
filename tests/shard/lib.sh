# What the shard-merge tests share (sourced after `cd` to the source folder, with $tag, $work and
# $t0 set): two sources (source and source2 of scripts/mariadb.sh), each with 2 schemas x 4 tables
# routed into one target table, writers on all 16 tables, `dmhost serve` driven by dmctl, and the
# union check. docs/shard.md "Tests".
. tests/crash/lib.sh
src2() { mariadb --no-defaults --protocol=tcp -h"$DMH_SOURCE2_HOST" -P"$DMH_SOURCE2_PORT" -u"${DMH_SOURCE2_USER:-root}" "$@"; }
# The shards "client schema table", client src (source s1) or src2 (source s2; only with
# n_src=2); shard k (0-based, in this order) writes ids in [(k+1)*10^7, (k+2)*10^7): keys stay
# unique in the merged table.
n_src=${n_src:-2}
CLIENTS=(src)
[ "$n_src" = 2 ] && CLIENTS+=(src2)
SHARDS=()
for c in "${CLIENTS[@]}"; do
  if [ $c = src ]; then p=a; else p=b; fi
  for s in 1 2; do for t in 1 2 3 4; do SHARDS+=("$c ${db_prefix}_$p$s t_$t"); done; done
done
wl_pids=()
ctl() { "$dmctl" --state-dir "$work/state" --timeout 60 "$@"; }
# jq -e FILTER on the answer of dmctl ARGS... (the answer kept in $work/last.json)
ctl_jq() { # filter args...
  local f=$1
  shift
  ctl "$@" >"$work/last.json" 2>&1 || true
  jq -e "$f" "$work/last.json" >/dev/null 2>&1
}
shard_fail() {
  echo "$tag: FAILED: $*" >&2
  [ -f "$work/serve.log" ] && { echo "--- end of serve.log:" >&2; tail -n 40 "$work/serve.log" >&2; }
  [ -f "$work/last.json" ] && { echo "--- last dmctl answer:" >&2; head -c 3000 "$work/last.json" >&2; echo >&2; }
  exit 1
}
shard_cleanup() {
  local rc=$?
  touch "$work/stop"
  for p in "${wl_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  [ -n "${pid:-}" ] && kill -9 "$pid" 2>/dev/null
  wait 2>/dev/null || true
  if [ "${KEEP:-}" ]; then echo "$tag: work folder kept: $work"; else rm -rf "$work"; fi
  exit "$rc"
}
# The sources' schemas and tables, the target table, the source files and the task file (mode
# incremental from each source's current position, shard-mode pessimistic).
shard_setup() { # task meta
  local task=$1 meta=$2 c d
  for c in "${CLIENTS[@]}"; do
    if [ $c = src ]; then p=a; else p=b; fi
    for s in 1 2; do
      d=${db_prefix}_$p$s
      $c -e "DROP DATABASE IF EXISTS \`$d\`; CREATE DATABASE \`$d\`"
      for t in 1 2 3 4; do $c "$d" -e "CREATE TABLE t_$t (id BIGINT PRIMARY KEY, v INT NOT NULL, s VARCHAR(32))"; done
    done
  done
  tgt -e "DROP DATABASE IF EXISTS \`${db_prefix}\`; DROP DATABASE IF EXISTS \`$meta\`;
          CREATE DATABASE \`${db_prefix}\`;
          CREATE TABLE \`${db_prefix}\`.orders (id BIGINT PRIMARY KEY, v INT NOT NULL, s VARCHAR(32))"
  read -r f1 p1 < <(src -N -B -e "SHOW MASTER STATUS" | awk '{ print $1, $2 }')
  local f2="" p2=0 inst2="" dbs="\"${db_prefix}_a1\", \"${db_prefix}_a2\""
  if [ "$n_src" = 2 ]; then
    read -r f2 p2 < <(src2 -N -B -e "SHOW MASTER STATUS" | awk '{ print $1, $2 }')
    inst2=",
  { source-id = \"s2\"; block-allow-list = \"b\"; route-rules = [\"r\"]; meta = { binlog-name = \"$f2\"; binlog-pos = $p2; }; }"
    dbs+=", \"${db_prefix}_b1\", \"${db_prefix}_b2\""
  fi
  cat >"$work/s1.cfg" <<CFG
source-id = "s1";
from = { host = "$DMH_SOURCE_HOST"; port = $DMH_SOURCE_PORT; user = "$DMH_SOURCE_USER"; password = ""; };
CFG
  cat >"$work/s2.cfg" <<CFG
source-id = "s2";
from = { host = "$DMH_SOURCE2_HOST"; port = $DMH_SOURCE2_PORT; user = "${DMH_SOURCE2_USER:-root}"; password = ""; };
CFG
  cat >"$work/task.cfg" <<CFG
name = "$task";
task-mode = "incremental";
shard-mode = "pessimistic";
meta-schema = "$meta";
target-database = { host = "$DMH_TARGET_HOST"; port = $DMH_TARGET_PORT; user = "$DMH_TARGET_USER"; password = ""; };
mysql-instances = (
  { source-id = "s1"; block-allow-list = "b"; route-rules = ["r"]; meta = { binlog-name = "$f1"; binlog-pos = $p1; }; }$inst2
);
block-allow-list = { b = { do-dbs = [$dbs]; }; };
routes = { r = { schema-pattern = "${db_prefix}_*"; table-pattern = "t_*"; target-schema = "${db_prefix}"; target-table = "orders"; }; };
supervisor = { auto-resume = { enable = false; }; };
sync = { worker-count = 2; batch = 200; batch-ms = 50; status-interval = 200; };
CFG
}
# A writer on the 8 shards of one client, in the background: each round inserts a row into every
# shard, updates one and deletes one, until $work/stop exists. Columns are named, so the rows fit
# the tables before and after an ADD COLUMN with a default. Each writer started numbers its rows
# from its own million (writer_runs) so a later one never repeats an earlier one's ids.
writer_runs=0
writer() { # client first-shard-index [shards: 8]
  local c=$1 k0=$2 ns=${3:-8}
  writer_runs=$((writer_runs + 1))
  (
    n=$((writer_runs * 1000000))
    while [ ! -e "$work/stop" ]; do
      if [ -e "$work/pause" ]; then # writers_pause: say so between rounds, wait
        touch "$work/paused-$BASHPID"
        while [ -e "$work/pause" ] && [ ! -e "$work/stop" ]; do sleep 0.05; done
        rm -f "$work/paused-$BASHPID"
        continue
      fi
      n=$((n + 1))
      q=""
      for i in $(seq 0 $((ns - 1))); do
        read -r _ d t <<<"${SHARDS[$((k0 + i))]}"
        base=$(((k0 + i + 1) * 10000000))
        q+="INSERT INTO \`$d\`.$t (id, v, s) VALUES ($((base + n)), $n, 'w$n');"
        [ $((n % 3)) = 0 ] && q+="UPDATE \`$d\`.$t SET v = v + 1000 WHERE id = $((base + n - 2));"
        [ $((n % 5)) = 0 ] && q+="DELETE FROM \`$d\`.$t WHERE id = $((base + n - 4));"
      done
      $c -e "$q" 2>>"$work/writer-$c.err" || true
      sleep 0.05
    done
  ) &
  wl_pids+=($!)
}
# writers_pause: every writer finishes its round and waits (until writers_go); returns once all
# do. For a script's own cut-over that a real tool makes safe by means a script lacks.
writers_pause() {
  touch "$work/pause"
  wait_for 60 "the writers did not pause" writers_paused
}
writers_paused() { [ "$(find "$work" -maxdepth 1 -name 'paused-*' | wc -l)" = "${#wl_pids[@]}" ]; }
writers_go() { rm -f "$work/pause"; }
stop_writers() {
  touch "$work/stop"
  for p in "${wl_pids[@]}"; do wait "$p" 2>/dev/null || true; done
  wl_pids=()
}
# The union of the shards (and of $work/extra.txt: rows of shards dropped since) and the target
# table, same columns, sorted: equal?
union_equal() { # columns
  local cols=$1 e
  : >"$work/union.txt"
  [ -f "$work/extra.txt" ] && cat "$work/extra.txt" >>"$work/union.txt"
  for e in "${SHARDS[@]}"; do
    read -r c d t <<<"$e"
    [ -e "$work/dropped-$d.$t" ] && continue
    $c -N -B -e "SELECT $cols FROM \`$d\`.$t" >>"$work/union.txt"
  done
  sort -o "$work/union.txt" "$work/union.txt"
  tgt -N -B -e "SELECT $cols FROM \`${db_prefix}\`.orders" | sort >"$work/target.txt"
  cmp -s "$work/union.txt" "$work/target.txt"
}
# Does the target table have column $1?
target_has() {
  [ "$(tgt -N -B -e "SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = '${db_prefix}' AND TABLE_NAME = 'orders' AND COLUMN_NAME = '$1'")" = 1 ]
}
# How many times a sync ran a shard lock's DDL on the target (its log line)
exec_count() { grep -c "shard lock .* executed" "$work/serve.log" || true; }
# Checkpoint rows of s1's tables in state $1 (held, resync)
shard_rows() {
  tgt -N -B -e "SELECT COUNT(*) FROM \`$meta\`.\`${task}_syncer_checkpoint\` WHERE id = 's1' AND
                cp_schema <> '' AND JSON_UNQUOTE(JSON_EXTRACT(table_info, '\$.shard.state')) = '$1'" 2>/dev/null || echo 0
}
rows_are() { [ "$(shard_rows "$1")" = "$2" ]; }
alter() { # shard index, column definition
  read -r c d t <<<"${SHARDS[$1]}"
  $c -e "ALTER TABLE \`$d\`.$t ADD COLUMN $2"
}
no_lock() { ctl_jq ".result and ([.locks[] | select(.ID == \"$lock_id\")] | length == 0)" shard-ddl-lock "$task"; }
lock_shows() { # jq filter on the lock
  ctl_jq ".result and ([.locks[] | select(.ID == \"$lock_id\")] | length == 1) and
          (.locks[] | select(.ID == \"$lock_id\") | $1)" shard-ddl-lock "$task"
}
running() {
  local want='["Running"]'
  [ "$n_src" = 2 ] && want='["Running", "Running"]'
  ctl_jq "[.sources[].subTaskStatus[0].stage] == $want" query-status "$task"
}

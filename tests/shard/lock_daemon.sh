#!/usr/bin/env bash
# shard-ddl-lock against `dmhost serve` (issue 22), with the real servers and units: a task with
# shard-mode = "pessimistic" merging two sources' tables, one source bound here.
#  1. no lock yet: `shard-ddl-lock` and `shard-ddl-lock lk` list none; an unknown task is 14003;
#  2. the daemon killed (-9) and a half-arrived lock left in the task's shard.json (source lk-b
#     arrived, lk-a not): after the restart `shard-ddl-lock lk` lists it rebuilt (waiting, owner
#     lk-b, synced/unsynced, tables of each side) before any unit asked, and /metrics shows DM's
#     dm_master_ddl_state_number{task="lk"}: Un-synced 1, Synced 0;
#  3. unlock errors: an unknown ID (14030), an owner not arrived (14032), an owner that does not run
#     the DDL in time (14033: lk-b runs nowhere; the lock then waits again), options without unlock;
#  4. unlock --force-remove: the lock is gone, from the listing and from shard.json (the gauge: 0);
#  5. the sync's side of a lock, DM's gauges of the source (dm_syncer_unsynced_table_number{table}
#     and dm_syncer_shard_lock_resolving) step by step: before any DDL no unsynced series and
#     resolving 0; after the DDL of the first of lk-a's two tables 1 unsynced, resolving 0; after
#     the second's 0 unsynced and resolving 1 (lk-a waits for the lock, which waits for lk-b);
#  6. stop-task removes the task's shard.json (and the gauges' series, the master's and the sync's).
# The end-to-end run with DDLs is the sync side's test (tests/shard/ of the sync's branch).
#
#   lock_daemon.sh <dmhost> <dmctl> <plugin dir> <source dir>
set -euo pipefail
dmhost=$1 dmctl=$2 plugins=$3 src_dir=$4
cd "$src_dir"
tag=shard_lock_daemon db=shard_lk tdb=shard_lk_t meta=shard_lk_meta
work=$(mktemp -d /tmp/dmh-shardlk-XXXXXX)
t0=$SECONDS
. tests/crash/lib.sh
pid=""
cleanup() {
  local rc=$?
  [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
  if [ "${KEEP:-}" ]; then echo "$tag: work folder kept: $work"; else rm -rf "$work"; fi
  exit "${rc:-1}"
}
trap cleanup EXIT
fail() {
  echo "$tag: FAILED: $*" >&2
  [ -f "$work/serve.log" ] && { echo "--- end of serve.log:" >&2; tail -n 30 "$work/serve.log" >&2; }
  exit 1
}
ctl() { "$dmctl" --state-dir "$work/state" --timeout 60 "$@"; }
ctl_jq() { # filter args...
  local f=$1
  shift
  ctl "$@" >"$work/last.json" || true
  jq -e "$f" "$work/last.json" >/dev/null || { cat "$work/last.json" >&2; return 1; }
}
serve() {
  serve_up --listen 127.0.0.1:0
  addr=$(grep -oE 'control plane on http://127\.0\.0\.1:[0-9]+' "$work/serve.log" | tail -1 | sed 's|.*http://||')
}
# DM's dm_master_ddl_state_number of task lk in /metrics: "<Un-synced> <Synced>", or "" without it
ddl_state() {
  curl -sS --noproxy '*' "http://$addr/metrics" >"$work/metrics.txt" || return 1
  awk '/^dm_master_ddl_state_number\{task="lk",type="Un-synced"\}/ { u = $NF }
       /^dm_master_ddl_state_number\{task="lk",type="Synced"\}/ { s = $NF }
       END { if (u != "" || s != "") print u, s }' "$work/metrics.txt"
}
# DM's sync gauges of task lk on source lk-a: "<unsynced of orders> <resolving>", "-" for a missing one
sync_gauges() {
  curl -sS --noproxy '*' "http://$addr/metrics" >"$work/metrics.txt" || return 1
  awk '/^dm_syncer_unsynced_table_number\{task="lk",source_id="lk-a",.*table="`shard_lk_t`\.`orders`"\}/ { u = $NF }
       /^dm_syncer_shard_lock_resolving\{task="lk",source_id="lk-a",/ { r = $NF }
       END { print (u == "" ? "-" : u), (r == "" ? "-" : r) }' "$work/metrics.txt"
}
wait_gauges() { # want when
  for _ in $(seq 1 300); do [ "$(sync_gauges)" = "$1" ] && return 0; sleep 0.1; done
  fail "$2: unsynced and resolving are '$(sync_gauges)', not '$1': $(grep -E '^dm_syncer_(unsynced|shard_lock)' "$work/metrics.txt")"
}
stage_is() { ctl_jq ".sources[0].subTaskStatus[0].stage == \"$1\"" query-status lk 2>/dev/null; }

src -e "DROP DATABASE IF EXISTS \`$db\`; CREATE DATABASE \`$db\`;
        CREATE TABLE \`$db\`.orders_1 (id INT PRIMARY KEY, v VARCHAR(40));
        CREATE TABLE \`$db\`.orders_1b (id INT PRIMARY KEY, v VARCHAR(40));"
tgt -e "DROP DATABASE IF EXISTS \`$tdb\`; DROP DATABASE IF EXISTS \`$meta\`; CREATE DATABASE \`$tdb\`;
        CREATE TABLE \`$tdb\`.orders (id INT PRIMARY KEY, v VARCHAR(40));"
read -r bfile bpos < <(src -N -B -e "SHOW MASTER STATUS" | awk '{ print $1, $2 }')
crash_source_cfg lk-a
cat >"$work/task.cfg" <<CFG
name = "lk";
task-mode = "incremental";
shard-mode = "pessimistic";
meta-schema = "$meta";
target-database = { host = "$DMH_TARGET_HOST"; port = $DMH_TARGET_PORT; user = "$DMH_TARGET_USER"; password = ""; };
mysql-instances = (
  { source-id = "lk-a"; block-allow-list = "b"; route-rules = ["r"];
    meta = { binlog-name = "$bfile"; binlog-pos = $bpos; }; },
  { source-id = "lk-b"; block-allow-list = "b"; route-rules = ["r"];
    meta = { binlog-name = "$bfile"; binlog-pos = $bpos; }; }
);
block-allow-list = { b = { do-dbs = ["$db"]; }; };
routes = { r = { schema-pattern = "$db"; table-pattern = "orders_*"; target-schema = "$tdb";
                 target-table = "orders"; }; };
supervisor = { auto-resume = { enable = false; }; };
CFG

serve
ctl operate-source create "$work/source.cfg" >/dev/null || fail "operate-source create"
ctl_jq '.result' start-task "$work/task.cfg" || fail "start-task"
wait_for 30 "the task is not Running" stage_is Running

# 1. no lock
ctl_jq '.result and (.locks == [])' shard-ddl-lock || fail "locks listed before any"
ctl_jq '.result and (.locks == [])' shard-ddl-lock lk || fail "locks of lk listed before any"
ctl_jq '.result == false and .error.ErrCode == 14003' shard-ddl-lock nosuch ||
  fail "an unknown task was not DM_ERR_NOT_FOUND"
ctl_jq '.result == false and .error.ErrCode == 14002 and (.msg | contains("go with unlock"))' \
  shard-ddl-lock lk -o lk-a || fail "-o without unlock was not refused"
log "no lock listed; unknown task refused"

# 2. a half-arrived lock in shard.json, the daemon killed and restarted
kill -9 "$pid"
wait "$pid" 2>/dev/null || true
pid=""
ddl="ALTER TABLE \`$tdb\`.\`orders\` ADD COLUMN \`note\` INT"
jq -n --arg db "$db" --arg tdb "$tdb" --arg ddl "$ddl" '{
  version: 1, nextOpID: 1,
  sources: [
    {task: "lk", source: "lk-a", targetSchema: $tdb, targetTable: "orders",
     tables: [{schema: $db, table: "orders_1"}, {schema: $db, table: "orders_1b"}]},
    {task: "lk", source: "lk-b", targetSchema: $tdb, targetTable: "orders",
     tables: [{schema: $db, table: "orders_2"}, {schema: $db, table: "orders_3"}]}],
  infos: [
    {task: "lk", source: "lk-b", targetSchema: $tdb, targetTable: "orders", ddls: [$ddl],
     tables: [{schema: $db, table: "orders_2"}, {schema: $db, table: "orders_3"}],
     pos: {name: "mysql-bin.000001", pos: 4, gtid: ""}, queued: false}],
  ops: []}' >"$work/state/tasks/lk/shard.json"
serve
id="lk-\`$tdb\`.\`orders\`"
ctl_jq ".result and (.locks | length) == 1 and .locks[0].ID == \"$id\" and
        .locks[0].state == \"waiting\" and .locks[0].owner == \"lk-b\" and
        .locks[0].mode == \"pessimistic\" and .locks[0].synced == [\"lk-b\"] and
        .locks[0].unsynced == [\"lk-a\"] and
        .locks[0].tables[\"lk-a\"].unsynced == [\"\`$db\`.\`orders_1\`\", \"\`$db\`.\`orders_1b\`\"] and
        (.locks[0].tables[\"lk-b\"].synced | length) == 2" shard-ddl-lock lk ||
  fail "the lock was not rebuilt from shard.json at start"
jq -e --arg d "$ddl" '.locks[0].DDLs == [$d]' "$work/last.json" >/dev/null ||
  fail "the lock's DDLs are not the owner's"
ctl_jq ".result and (.locks | length) == 1" shard-ddl-lock || fail "the lock is not in the list of all"
[ "$(ddl_state)" = "1 0" ] || fail "dm_master_ddl_state_number is not 1 Un-synced, 0 Synced: $(grep ddl_state "$work/metrics.txt")"
log "lock rebuilt at start: $id waiting, owner lk-b; dm_master_ddl_state_number Un-synced 1"

# 3. unlock errors
ctl_jq '.result == false and .error.ErrCode == 14030' shard-ddl-lock unlock "lk-\`x\`.\`y\`" ||
  fail "an unknown lock ID was not DM_ERR_SHARD_LOCK_NOT_FOUND"
ctl_jq '.result == false and .error.ErrCode == 14032 and (.msg | contains("lk-b"))' \
  shard-ddl-lock unlock "$id" -o lk-a || fail "an owner not arrived was not DM_ERR_SHARD_NOT_WAITING"
ctl_jq '.result == false and .error.ErrCode == 14002' shard-ddl-lock unlock "$id" -a skip ||
  fail "-a without -s -d -t was not refused"
ctl_jq '.result == false and .error.ErrCode == 14033' shard-ddl-lock unlock "$id" ||
  fail "an owner that runs nowhere was not DM_ERR_SHARD_OWNER_EXEC"
ctl_jq '.result and .locks[0].state == "waiting" and .locks[0].unsynced == ["lk-a"]' \
  shard-ddl-lock lk || fail "the lock does not wait again after a failed unlock"
jq -e '.ops == []' "$work/state/tasks/lk/shard.json" >/dev/null ||
  fail "the withdrawn exec is still in shard.json"
log "unlock errors: 14030, 14032, 14033 (lock waits again)"

# 4. --force-remove
ctl_jq '.result and .state == "resolved"' shard-ddl-lock unlock "$id" --force-remove ||
  fail "unlock --force-remove"
ctl_jq '.result and .locks == []' shard-ddl-lock lk || fail "the lock is still listed"
jq -e '.infos == [] and .ops == [] and (.sources | length) == 2' \
  "$work/state/tasks/lk/shard.json" >/dev/null || fail "shard.json still holds the lock"
stage_is Running || fail "the task is not Running any more"
[ "$(ddl_state)" = "0 0" ] || fail "dm_master_ddl_state_number is not 0 0 once the lock is gone: $(grep ddl_state "$work/metrics.txt")"
log "unlock --force-remove: lock gone, dm_master_ddl_state_number 0"

# 5. the sync's gauges, DDL by DDL (lk-b's tables stay members: the lock waits for it)
tbl="\`$tdb\`.\`orders\`"
g=$(sync_gauges)
[ "$g" = "- 0" ] || fail "before any DDL: unsynced and resolving are '$g', not '- 0': $(grep -E '^dm_syncer_(unsynced|shard_lock)' "$work/metrics.txt")"
src -e "ALTER TABLE \`$db\`.orders_1 ADD COLUMN note2 INT"
wait_gauges "1 0" "after orders_1's DDL"
log "after orders_1's DDL: dm_syncer_unsynced_table_number{table=\"$tbl\"} 1, resolving 0"
src -e "ALTER TABLE \`$db\`.orders_1b ADD COLUMN note2 INT"
wait_gauges "0 1" "after orders_1b's DDL"
ctl_jq ".result and .locks[0].state == \"waiting\" and .locks[0].synced == [\"lk-a\"] and
        .locks[0].unsynced == [\"lk-b\"]" shard-ddl-lock lk ||
  fail "lk-a arrived, but the lock does not wait for lk-b"
log "after orders_1b's DDL: unsynced 0, dm_syncer_shard_lock_resolving 1 (the lock waits for lk-b)"

# 6. stop-task
ctl_jq '.result' stop-task lk || fail "stop-task"
[ ! -e "$work/state/tasks/lk/shard.json" ] || fail "shard.json outlived stop-task"
[ -z "$(ddl_state)" ] || fail "dm_master_ddl_state_number of lk outlived stop-task"
[ "$(sync_gauges)" = "- -" ] || fail "the sync's shard gauges of lk outlived stop-task: $(sync_gauges)"
log "stop-task removed shard.json and the task's dm_master_ddl_state_number and sync gauges"
tgt -e "DROP DATABASE IF EXISTS \`$tdb\`; DROP DATABASE IF EXISTS \`$meta\`;"
src -e "DROP DATABASE IF EXISTS \`$db\`;"
log "ok"

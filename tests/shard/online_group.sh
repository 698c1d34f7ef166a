#!/usr/bin/env bash
# Online DDL inside a shard group (issue 22, docs/shard.md "Online DDL" -> "Inside a shard group"):
# `dmhost serve`, shard-mode pessimistic, source s1 with 2 schemas x 4 tables merged into one
# target table, a writer on every shard all along. pt-online-schema-change runs the same
# `--alter "ADD COLUMN ..."` on each shard table, one after the other (so at different moments):
#   - after each of the first 7 cut-overs the table is held at it (its checkpoint row `held`, the
#     recorded ALTER routed for the target in the row's table_info ddls), the tool's record in
#     `<meta>`.`<task>_onlineddl` is gone, and the target has no new column;
#   - kill -9 of the daemon with 4 tables held: after the restart the 4 are held again with the
#     same statements (their only copy is the checkpoint rows), and the lock completes;
#   - after the last cut-over the column is on the target, the ALTER ran once (the sync's
#     "executed" log line), the lock is gone, no held row, no record, no `_t_new`/`_t_old` table
#     or trigger of the tool on the target, and once the writers stop the target equals the union
#     of the shards.
#
#   online_group.sh <dmhost> <dmctl> <plugin dir> <source dir>
set -euo pipefail
dmhost=$1 dmctl=$2 plugins=$3 src_dir=$4
cd "$src_dir"
tag=shard_online_group db_prefix=shog task=shog meta=shog_meta n_src=1
work=$(mktemp -d /tmp/dmh-shardog-XXXXXX)
t0=$SECONDS
pid=""
. tests/shard/lib.sh
trap shard_cleanup EXIT
fail() { shard_fail "$@"; }
command -v pt-online-schema-change >/dev/null ||
  fail "pt-online-schema-change is not installed (scripts/deps.sh: percona-toolkit)"
lock_id="$task-\`$db_prefix\`.\`orders\`"
cp_table="\`$meta\`.\`${task}_syncer_checkpoint\`"
n=${#SHARDS[@]}
col="note VARCHAR(32) NOT NULL DEFAULT 'n'"

# pt-online-schema-change on shard k, to its end (cut-over, old table and triggers dropped)
osc() { # shard index
  local c d t
  read -r c d t <<<"${SHARDS[$1]}"
  echo "== $d.$t" >>"$work/osc.log"
  pt-online-schema-change --alter "ADD COLUMN $col" --execute --recursion-method none \
    --chunk-time 0.2 --no-check-replication-filters \
    "D=$d,t=$t,h=$DMH_SOURCE_HOST,P=$DMH_SOURCE_PORT,u=$DMH_SOURCE_USER${DMH_SOURCE_PASSWORD:+,p=$DMH_SOURCE_PASSWORD}" \
    >>"$work/osc.log" 2>&1 || fail "pt-online-schema-change on $d.$t failed: $(tail -n 5 "$work/osc.log")"
  # the precondition: the tool swapped its copy in on the source (its RENAME is in the binlog)
  [ "$(src -N -B -e "SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = '$d'
                     AND TABLE_NAME = '$t' AND COLUMN_NAME = 'note'")" = 1 ] ||
    fail "pt-online-schema-change left $d.$t without the column on the source"
  [ "$(src -N -B -e "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = '$d'
                     AND TABLE_NAME LIKE '\\_%'")" = 0 ] || fail "pt-online-schema-change left a table of its own in $d"
}
# held rows whose recorded statements are the tool's ALTER routed for the target table
held_with_alter() {
  [ "$(tgt -N -B -e "SELECT COUNT(*) FROM $cp_table WHERE id = 's1' AND cp_schema <> '' AND
        JSON_UNQUOTE(JSON_EXTRACT(table_info, '\$.shard.state')) = 'held' AND
        JSON_LENGTH(table_info, '\$.shard.ddls') = 1 AND
        JSON_UNQUOTE(JSON_EXTRACT(table_info, '\$.shard.ddls[0]')) LIKE '%\`$db_prefix\`.\`orders\`%ADD COLUMN%note%'" 2>/dev/null)" = "$1" ]
}
records() { tgt -N -B -e "SELECT COUNT(*) FROM \`$meta\`.\`${task}_onlineddl\`" 2>/dev/null || echo -1; }
# the target's tables and triggers other than the merged table
target_extra() {
  tgt -N -B -e "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = '$db_prefix'
                AND TABLE_NAME <> 'orders'
                UNION ALL SELECT TRIGGER_NAME FROM information_schema.TRIGGERS
                WHERE TRIGGER_SCHEMA = '$db_prefix' OR TRIGGER_SCHEMA LIKE '${db_prefix}\\_%'"
}
step() { # shard index, how many are then held
  osc "$1"
  wait_for 120 "shard $1's cut-over did not hold its table ($2 held rows with the ALTER)" held_with_alter "$2"
  target_has note && fail "the target has the column after $2 of $n cut-overs"
  [ "$(records)" = 0 ] || fail "the tool's record is still in ${task}_onlineddl after shard $1's cut-over"
  [ "$(exec_count)" = 0 ] || fail "a shard DDL ran with $2 of $n arrived"
  log "cut-over $2 of $n (shard $1): held, no column on the target"
}

shard_setup "$task" "$meta"
# the task follows online schema changes (DM's default, said here so the test does not hang on it)
sed -i 's/^shard-mode = "pessimistic";/&\nonline-ddl = true;/' "$work/task.cfg"
serve
ctl operate-source create "$work/s1.cfg" >/dev/null || fail "operate-source create s1"
ctl_jq '.result' start-task "$work/task.cfg" || fail "start-task"
wait_for 30 "the subtask is not Running" running
writer src 0
sleep 1
log "running, writers on $n shards"

order=($(printf '%s\n' $(seq 0 $((n - 1))) | shuf))
for i in 0 1 2 3; do
  step "${order[$i]}" $((i + 1))
  sleep "0.$((RANDOM % 9))"
done
no_lock || fail "a lock is listed before every table of the source arrived"

# kill -9 with 4 held: their statements live only in the checkpoint rows now
kill -9 "$pid"
wait "$pid" 2>/dev/null || true
pid=""
log "killed -9 with 4 tables held"
serve
wait_for 60 "the subtask is not Running after the restart" running
wait_for 60 "the 4 tables are not held with the ALTER after the restart" held_with_alter 4
target_has note && fail "the target has the column after the restart with 4 of $n arrived"

for i in 4 5 6; do
  step "${order[$i]}" $((i + 1))
  sleep "0.$((RANDOM % 9))"
done
osc "${order[7]}"
wait_for 120 "the target did not get the column after the last cut-over" target_has note
wait_for 60 "the lock was not resolved" no_lock
wait_for 60 "the checkpoint still holds rows of held tables" rows_are held 0
log "the last cut-over: the column is on the target, the lock resolved"
sleep 2
stop_writers
wait_for 180 "the target is not the union of the shards" union_equal "id, v, s, note"
[ "$(exec_count)" = 1 ] || fail "the ALTER ran $(exec_count) times, not once"
[ "$(records)" = 0 ] || fail "a record of the tool is left in ${task}_onlineddl"
extra=$(target_extra)
[ -z "$extra" ] || fail "the tool's tables or triggers reached the target: $extra"
wait_for 30 "no held or re-synced row may be left" rows_are resync 0
running || fail "the subtask is not Running at the end"
if grep -E "Duplicate entry|\[code 36" "$work/serve.log"; then fail "serve.log has a duplicate key or a sync error"; fi
log "union equal ($(wc -l <"$work/union.txt") rows), the ALTER ran once, no tool table on the target"
kill "$pid"
wait "$pid" || fail "dmhost serve did not exit 0 on SIGTERM"
pid=""
log "passed"

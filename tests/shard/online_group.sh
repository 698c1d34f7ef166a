#!/usr/bin/env bash
# Online DDL inside a shard group (issue 22, docs/shard.md "Online DDL" -> "Inside a shard group"):
# `dmhost serve`, shard-mode pessimistic, source s1 with 2 schemas x 4 tables merged into one
# target table, a writer on every shard all along. The same ADD COLUMN by an online schema change
# on each shard table, one after the other (so at different moments), by
# pt-online-schema-change `--alter "ADD COLUMN ..."` (TOOLS=ptosc, the default) or by gh-ost's
# statement shapes (TOOLS=ghost; TOOLS=mixed: see tool_of):
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
# each TOOLS variant its own schemas, task and files, so CTest may run two at once
v=${TOOLS:-}
v=${v#ptosc}
tag=shard_online_group${v:+_$v} db_prefix=shog$v task=shog$v meta=shog${v}_meta n_src=1
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
# gh-ost's statement shapes on shard k (as tests/shard/online_ghost.sh replays them, in short): the
# changelog, the ghost and its ALTER, the sentry; the copy and the atomic cut-over under the lock of
# t that gh-ost takes (LOCK TABLES, not logged: no write of t between the copy and the swap), the
# RENAME from a second session waiting on that lock; then the changelog and the old table dropped.
ghost() { # shard index
  local c d t T G C D id
  read -r c d t <<<"${SHARDS[$1]}"
  T="\`$d\`.\`$t\`" G="\`$d\`.\`_${t}_gho\`" C="\`$d\`.\`_${t}_ghc\`" D="\`$d\`.\`_${t}_del\`"
  src -e "create /* gh-ost */ table $C (id bigint unsigned auto_increment, last_update timestamp not null
            default current_timestamp on update current_timestamp, hint varchar(64) charset ascii not null,
            value varchar(4096) charset ascii not null, primary key(id), unique key hint_uidx(hint)) auto_increment=256;
          create /* gh-ost */ table $G like $T;
          alter /* gh-ost */ table $G ADD COLUMN $col;
          insert /* gh-ost */ into $C (id, hint, value) values (NULLIF(0, 0), 'state', 'GhostTableMigrated')
            on duplicate key update last_update=NOW(), value=VALUES(value);
          create /* gh-ost */ table $D (id int auto_increment primary key) engine=InnoDB comment='ghost-cut-over-sentry'"
  # gh-ost's cut-over relies on the server granting the waiting RENAME before any waiting write of
  # t once its lock session ends; a script cannot make sure of that (a writer's row could land in
  # t just before t becomes _del: lost on the source, kept on the target), so the writers pause
  writers_pause
  rm -f "$work/ghlock.out"
  (echo "SELECT CONNECTION_ID(); LOCK TABLES $T WRITE, $G WRITE, $D WRITE;
         insert ignore /* gh-ost */ into $G (id, v, s) select id, v, s from $T;
         drop /* gh-ost */ table if exists $D; SELECT 'LOCKED'; SELECT SLEEP(120);" |
    src -n -N -B >"$work/ghlock.out" 2>&1) &
  local lk=$!
  wait_for 60 "gh-ost's lock session did not copy under its lock" grep -q LOCKED "$work/ghlock.out"
  id=$(head -1 "$work/ghlock.out")
  src -e "rename /* gh-ost */ table $T to $D, $G to $T" >"$work/ghrename.out" 2>&1 &
  local rn=$!
  wait_for 60 "gh-ost's RENAME does not wait on the lock" ghost_rename_waits
  src -e "KILL QUERY $id"
  wait "$lk" || true
  wait "$rn" || fail "gh-ost's RENAME of $d.$t failed: $(cat "$work/ghrename.out")"
  writers_go
  src -e "drop /* gh-ost */ table if exists $C; drop /* gh-ost */ table if exists $D"
  [ "$(src -N -B -e "SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = '$d'
                     AND TABLE_NAME = '$t' AND COLUMN_NAME = 'note'")" = 1 ] ||
    fail "gh-ost's shapes left $d.$t without the column on the source"
}
ghost_rename_waits() {
  [ "$(src -N -B -e "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE 'rename%table%\\_gho%'
                     AND STATE LIKE 'Waiting for table metadata lock%'")" = 1 ]
}
# the shard's online schema change: TOOLS=ptosc (the default) pt-online-schema-change on every
# shard, TOOLS=ghost gh-ost's shapes on every shard, TOOLS=mixed every other one each (the two
# tools write the same ALTER differently, `ALTER TABLE` vs `alter /* gh-ost */ table`: one DDL in
# the lock, as DM compares restored statements). CTest runs ptosc and mixed.
tool_of() { # position in the order
  case "${TOOLS:-ptosc}" in
    ghost) echo gh-ost ;;
    mixed) if [ $(($1 % 2)) = 0 ]; then echo pt-osc; else echo gh-ost; fi ;;
    *) echo pt-osc ;;
  esac
}
online() { # position in the order
  if [ "$(tool_of "$1")" = pt-osc ]; then osc "${order[$1]}"; else ghost "${order[$1]}"; fi
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
step() { # position in the order, how many are then held
  online "$1"
  wait_for 120 "shard ${order[$1]}'s cut-over did not hold its table ($2 held rows with the ALTER)" held_with_alter "$2"
  target_has note && fail "the target has the column after $2 of $n cut-overs"
  [ "$(records)" = 0 ] || fail "the tool's record is still in ${task}_onlineddl after shard ${order[$1]}'s cut-over"
  [ "$(exec_count)" = 0 ] || fail "a shard DDL ran with $2 of $n arrived"
  log "cut-over $2 of $n (shard ${order[$1]}, $(tool_of "$1")): held, no column on the target"
}

shard_setup "$task" "$meta"
# the task follows online schema changes (DM's default, said here so the test does not hang on it)
sed -i 's/^shard-mode = "pessimistic";/&\nonline-ddl = true;/' "$work/task.cfg"
serve_up
ctl operate-source create "$work/s1.cfg" >/dev/null || fail "operate-source create s1"
ctl_jq '.result' start-task "$work/task.cfg" || fail "start-task"
wait_for 30 "the subtask is not Running" running
writer src 0
sleep 1
log "running, writers on $n shards"

order=($(printf '%s\n' $(seq 0 $((n - 1))) | shuf))
for i in 0 1 2 3; do
  step "$i" $((i + 1))
  sleep "0.$((RANDOM % 9))"
done
no_lock || fail "a lock is listed before every table of the source arrived"

# kill -9 with 4 held: their statements live only in the checkpoint rows now
kill -9 "$pid"
wait "$pid" 2>/dev/null || true
pid=""
log "killed -9 with 4 tables held"
serve_up
wait_for 60 "the subtask is not Running after the restart" running
wait_for 60 "the 4 tables are not held with the ALTER after the restart" held_with_alter 4
target_has note && fail "the target has the column after the restart with 4 of $n arrived"

for i in 4 5 6; do
  step "$i" $((i + 1))
  sleep "0.$((RANDOM % 9))"
done
online 7
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

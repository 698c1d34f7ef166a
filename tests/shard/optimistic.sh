#!/usr/bin/env bash
# Optimistic shard DDL end to end (issue 22, docs/shard.md "Optimistic mode" and "Tests"): `dmhost
# serve` with one source (serve binds one; its coordinator sees only its own sources), 2 schemas x
# 4 tables, all 8 routed into one target table.
#
# 1. ADD COLUMN with a default on one shard while all shards keep writing old-shape rows: the
#    target has the column at once (the first shard's DDL ran), old rows get the default; the
#    other 15 shards' same ADD COLUMN are skipped (the lock's log: one exec); union equal.
# 2. An incompatible MODIFY (INT to VARCHAR) on one shard: that table is held, shown by
#    shard-ddl-lock with its stage, the others go on (their rows arrive); unlock of a table that
#    is not held is refused (14032); `unlock -a exec` runs the held DDL on the target and the held
#    table's rows are re-synced; union equal.
# 4. strict-optimistic-shard-mode (a second task from here on): a conflict pauses the subtask with
#    DM_ERR_SYNC_SHARD_CONFLICT 36019 and nothing runs on the target.
# 3. DROP COLUMN of a NOT NULL column without a default on one shard: held, its later rows wait;
#    the others drop it one by one (each skipped or held), and when the last drops it the lock
#    resolves by itself: the target drops the column once and the held tables' rows are
#    re-synced; union equal.
#
#   optimistic.sh <dmhost> <dmctl> <plugin dir> <source dir>
set -euo pipefail
dmhost=$1 dmctl=$2 plugins=$3 src_dir=$4
cd "$src_dir"
tag=shard_optimistic db_prefix=sho task=sho meta=sho_meta n_src=1
work=$(mktemp -d /tmp/dmh-shardo-XXXXXX)
t0=$SECONDS
pid=""
. tests/shard/lib.sh
trap shard_cleanup EXIT
fail() { shard_fail "$@"; }
lock_id="$task-\`$db_prefix\`.\`orders\`"

shard_setup "$task" "$meta"
sed -i 's/^shard-mode = "pessimistic";/shard-mode = "optimistic";/' "$work/task.cfg"
grep -q '^shard-mode = "optimistic";' "$work/task.cfg" || fail "the task file is not optimistic"
serve_up
ctl operate-source create "$work/s1.cfg" >/dev/null || fail "operate-source create s1"
ctl_jq '.result' start-task "$work/task.cfg" || fail "start-task"
running() { ctl_jq '[.sources[].subTaskStatus[0].stage] == ["Running"]' query-status "$task"; }
wait_for 30 "the subtasks are not Running" running
writer src 0
sleep 1
log "running, a writer on the 8 shards"
alter() { # shard index, ALTER TABLE clause
  read -r c d t <<<"${SHARDS[$1]}"
  $c -e "ALTER TABLE \`$d\`.$t $2"
}
# the lock's answers as the coordinator logs them
answers() { grep -c "lock .*: \`.*\`.\`.*\` of source .*: $1" "$work/serve.log" || true; }
col_type() {
  tgt -N -B -e "SELECT DATA_TYPE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = '${db_prefix}' AND TABLE_NAME = 'orders' AND COLUMN_NAME = '$1'"
}
skips_at_least() { [ "$(answers skip)" -ge "$1" ]; }
c1_is() { [ "$(col_type c1)" = "$1" ]; }
row_c1_is() { [ "$(tgt -N -B -e "SELECT c1 FROM \`${db_prefix}\`.orders WHERE id = $1")" = "$2" ]; }
row_there() { [ "$(tgt -N -B -e "SELECT COUNT(*) FROM \`${db_prefix}\`.orders WHERE id = $1")" = 1 ]; }
target_lacks() { ! target_has "$1"; }
table_stage() { # schema table jq-string
  ctl_jq ".result and ([.locks[] | select(.ID == \"$lock_id\") | .tables[] | select(.schema == \"$1\" and .table == \"$2\") | .stage] == [\"$3\"])" shard-ddl-lock "$task"
}

# ---- 1: ADD COLUMN with a default, shard by shard, under writes ----
alter 0 "ADD COLUMN c1 INT NOT NULL DEFAULT 5"
wait_for 60 "the target did not get c1 from the first shard's DDL" target_has c1
[ "$(answers exec)" = 1 ] || fail "the first ADD COLUMN was not one exec ($(answers exec))"
log "1: the first shard's ADD COLUMN ran on the target at once"
for k in $(seq 1 7 | shuf); do alter "$k" "ADD COLUMN c1 INT NOT NULL DEFAULT 5"; done
wait_for 60 "the other 7 ADD COLUMNs were not all answered" skips_at_least 7
[ "$(answers exec)" = 1 ] || fail "an ADD COLUMN after the first ran on the target"
stop_writers
wait_for 120 "the target is not the union of the shards (1)" union_equal "id, v, s, c1"
running || fail "a subtask is not Running after case 1"
log "1: union equal ($(wc -l <"$work/union.txt") rows), one ADD COLUMN on the target"

# ---- 2: an incompatible MODIFY on one shard: held, unlock -a exec ----
rm -f "$work/stop"
writer src 1 7
read -r _ d0 t0n <<<"${SHARDS[0]}"
alter 0 "MODIFY c1 VARCHAR(20) NOT NULL DEFAULT '5'"
wait_for 60 "shard-ddl-lock does not show the MODIFY's table held" table_stage "$d0" "$t0n" "skip and wait for redirect"
src -e "INSERT INTO \`$d0\`.$t0n (id, v, s, c1) VALUES (10000001, 1, 'held', 'text')"
before=$(tgt -N -B -e "SELECT COUNT(*) FROM \`${db_prefix}\`.orders WHERE id BETWEEN 20000000 AND 29999999")
sleep 1
after=$(tgt -N -B -e "SELECT COUNT(*) FROM \`${db_prefix}\`.orders WHERE id BETWEEN 20000000 AND 29999999")
[ "$after" -gt "$before" ] || fail "the other shards' rows do not arrive while one table is held"
[ "$(tgt -N -B -e "SELECT COUNT(*) FROM \`${db_prefix}\`.orders WHERE id = 10000001")" = 0 ] ||
  fail "a held table's row reached the target"
[ "$(col_type c1)" = int ] || fail "the target's c1 changed before unlock"
read -r _ d1 t1n <<<"${SHARDS[1]}"
ctl_jq '.result == false and .error.ErrCode == 14032' shard-ddl-lock unlock "$lock_id" -s s1 -d "$d1" -t "$t1n" -a exec ||
  fail "unlock of a table that is not held was not refused with 14032"
ctl_jq '.result' shard-ddl-lock unlock "$lock_id" -s s1 -d "$d0" -t "$t0n" -a exec || fail "unlock -a exec"
wait_for 60 "the target's c1 is not varchar after unlock -a exec" c1_is varchar
wait_for 60 "the held table's row was not re-synced" row_c1_is 10000001 text
log "2: held (the others' rows go on), unlocked with exec, its rows re-synced"
# the other shards make the same change: each is held until the last, whose DDL resolves the lock
for k in $(seq 1 6 | shuf); do alter "$k" "MODIFY c1 VARCHAR(20) NOT NULL DEFAULT '5'"; done
read -r _ d1 t1n <<<"${SHARDS[1]}"
wait_for 60 "a shard's MODIFY was not held while others still have INT" table_stage "$d1" "$t1n" "skip and wait for redirect"
alter 7 "MODIFY c1 VARCHAR(20) NOT NULL DEFAULT '5'"
wait_for 60 "the lock was not resolved by the last MODIFY" \
  ctl_jq ".result and ([.locks[] | select(.ID == \"$lock_id\")] | length == 0)" shard-ddl-lock "$task"
stop_writers
wait_for 120 "the target is not the union of the shards (2)" union_equal "id, v, s, c1"
running || fail "a subtask is not Running after case 2"
log "2: the last MODIFY resolved the lock, the held tables re-synced; union equal"

# ---- 3: DROP of a NOT NULL column without a default, resolved when every shard dropped it ----
alter 0 "DROP COLUMN v"
wait_for 60 "shard-ddl-lock does not show the DROP's table held" table_stage "$d0" "$t0n" "skip and wait for redirect"
src -e "INSERT INTO \`$d0\`.$t0n (id, s, c1) VALUES (10000002, 'after drop', 'x')"
for k in $(seq 1 6 | shuf); do alter "$k" "DROP COLUMN v"; done
sleep 2
target_has v || fail "the target dropped v before the last shard did"
alter 7 "DROP COLUMN v"
wait_for 60 "the target still has v after the last shard dropped it" target_lacks v
# the re-sync reads up to the block point; with the source quiet that is the binlog's end, which
# it only sees passed once another event comes (sync_resync.c): a table outside the task moves
# the binlog on meanwhile
src -e "CREATE DATABASE IF NOT EXISTS sho_beat; CREATE TABLE IF NOT EXISTS sho_beat.b (i INT)"
beat_and_row_there() { src -e "INSERT INTO sho_beat.b VALUES (1)"; row_there "$@"; }
wait_for 60 "the held rows were not re-synced after the resolution" beat_and_row_there 10000002
wait_for 120 "the target is not the union of the shards (3)" union_equal "id, s, c1"
running || fail "a subtask is not Running after case 3"
log "3: held until the last DROP, which ran once; re-synced; union equal"

# ---- 4: strict-optimistic-shard-mode: a conflict pauses the subtask with 36019 ----
ctl_jq '.result' stop-task "$task" || fail "stop-task"
read -r f1 p1 < <(src -N -B -e "SHOW MASTER STATUS" | awk '{ print $1, $2 }')
sed -e 's/^name = .*/name = "sho2";/' -e 's/^meta-schema = .*/meta-schema = "sho2_meta";/' \
  -e 's/^shard-mode = "optimistic";/shard-mode = "optimistic"; strict-optimistic-shard-mode = true;/' \
  -e "s/binlog-name = \"[^\"]*\"; binlog-pos = [0-9]*;/binlog-name = \"$f1\"; binlog-pos = $p1;/" \
  "$work/task.cfg" >"$work/task2.cfg"
grep -q "strict-optimistic-shard-mode = true" "$work/task2.cfg" || fail "the strict task file"
tgt -e "DROP DATABASE IF EXISTS sho2_meta"
ctl_jq '.result' start-task "$work/task2.cfg" || fail "start-task (strict)"
wait_for 30 "the strict task is not Running" ctl_jq '[.sources[].subTaskStatus[0].stage] == ["Running"]' query-status sho2
alter 0 "CHANGE s s2 VARCHAR(32)"
wait_for 60 "the strict task did not pause with 36019 at the conflict" \
  ctl_jq '[.sources[].subTaskStatus[0].stage] == ["Paused"] and ([.. | objects | select(has("ErrCode")) | .ErrCode] | any(. == 36019))' query-status sho2
target_has s && target_lacks s2 || fail "the strict task ran the conflicting DDL"
log "4: strict mode paused the subtask with 36019 at a RENAME COLUMN; nothing ran on the target"
ctl stop-task sho2 >/dev/null || true
tgt -e "DROP DATABASE IF EXISTS sho2_meta"
src -e "DROP DATABASE IF EXISTS sho_beat"
kill "$pid"
wait "$pid" || fail "dmhost serve did not exit 0 on SIGTERM"
pid=""
log "passed"

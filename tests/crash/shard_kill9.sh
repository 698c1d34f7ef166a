#!/usr/bin/env bash
# kill -9 of `dmhost serve` at each step of a pessimistic shard lock (issue 22, docs/shard.md
# "Resuming after kill -9"), two sources x 2 schemas x 4 tables merged into one target table under
# writers. One round per kill, each an ADD COLUMN on all 16 shards (s1's first, so s1 is the owner):
#   (a) half arrived: s1 synced, s2 has 4 of 8 shards held;
#   (b) all arrived, before the exec: the owner's first write (its DDL mark on the global row) is
#       held up by a row lock another session holds;
#   (c) after the owner's DDL ran on the target, before its `resync` transaction (a row lock on
#       one of its held tables' checkpoint rows);
#   (d) during the re-sync: its batch waits on a row lock of a row it must insert (taken once the
#       DDL ran, behind a lock as in (c));
# each precondition asserted before the kill; then restart, the lock resolves. At the end the
# target is the union of the shards, and each round's ALTER ran once (the sync's log line: a
# replay finds the column and logs no second "executed").
#
#   shard_kill9.sh <dmhost> <dmctl> <plugin dir> <source dir>
set -euo pipefail
dmhost=$1 dmctl=$2 plugins=$3 src_dir=$4
cd "$src_dir"
tag=shard_kill9 db_prefix=shk task=shk meta=shk_meta
work=$(mktemp -d /tmp/dmh-shardk-XXXXXX)
t0=$SECONDS
pid=""
. tests/shard/lib.sh
cleanup() {
  local rc=$? h
  for h in "${holders[@]}"; do kill "$h" 2>/dev/null || true; done
  (exit $rc)
  shard_cleanup
}
trap cleanup EXIT
fail() { shard_fail "$@"; }
lock_id="$task-\`$db_prefix\`.\`orders\`"
cp_table="\`$meta\`.\`${task}_syncer_checkpoint\`"

# A target session NAME that takes a lock ($2: statements inside its transaction) and keeps it
# until hold_release NAME; waits until it has it.
declare -A holders=()
hold_start() { # name sql
  rm -f "$work/holder-$1.out"
  (echo "SELECT CONNECTION_ID(); START TRANSACTION; $2; SELECT 'HELD'; SELECT SLEEP(600);" |
    tgt -n -N -B >"$work/holder-$1.out" 2>&1) &
  holders[$1]=$!
  wait_for 20 "the holder session $1 did not take its lock" grep -q HELD "$work/holder-$1.out"
}
hold_release() { # name
  local id
  id=$(head -1 "$work/holder-$1.out")
  tgt -e "KILL $id" 2>/dev/null || true
  wait "${holders[$1]}" 2>/dev/null || true
  unset "holders[$1]"
}
alter() { # shard index, column
  read -r c d t <<<"${SHARDS[$1]}"
  $c -e "ALTER TABLE \`$d\`.$t ADD COLUMN $2 INT NOT NULL DEFAULT 5"
}
lock_shows() { # jq filter on the lock
  ctl_jq ".result and ([.locks[] | select(.ID == \"$lock_id\")] | length == 1) and
          (.locks[] | select(.ID == \"$lock_id\") | $1)" shard-ddl-lock "$task"
}
no_lock() { ctl_jq ".result and ([.locks[] | select(.ID == \"$lock_id\")] | length == 0)" shard-ddl-lock "$task"; }
running() { ctl_jq '[.sources[].subTaskStatus[0].stage] == ["Running", "Running"]' query-status "$task"; }
kill9() {
  kill -9 "$pid"
  wait "$pid" 2>/dev/null || true
  pid=""
  log "killed -9 at ($1)"
}
restart() {
  serve
  wait_for 60 "the subtasks are not Running after the restart" running
}
# s1's 8 shards, then s1 must show synced (it is the owner)
s1_arrives() { # column
  for k in $(printf '%s\n' 0 1 2 3 4 5 6 7 | shuf); do alter "$k" "$1"; done
  wait_for 60 "s1 did not arrive at the lock ($1)" lock_shows '.synced == ["s1"] and .state == "waiting"'
}
held_rows() { # state: rows of s1's held tables in it
  tgt -N -B -e "SELECT COUNT(*) FROM $cp_table WHERE id = 's1' AND cp_schema <> '' AND
                JSON_UNQUOTE(JSON_EXTRACT(table_info, '\$.shard.state')) = '$1'"
}
read -r _ d0 t0name <<<"${SHARDS[0]}"
row0="id = 's1' AND cp_schema = '$d0' AND cp_table = '$t0name'"

shard_setup "$task" "$meta"
serve
ctl operate-source create "$work/s1.cfg" >/dev/null || fail "operate-source create s1"
ctl operate-source create "$work/s2.cfg" >/dev/null || fail "operate-source create s2"
ctl_jq '.result' start-task "$work/task.cfg" || fail "start-task"
wait_for 30 "the subtasks are not Running" running
writer src 0
writer src2 8
sleep 1

# (a) half arrived
s1_arrives ca
for k in 8 9 10 11; do alter "$k" ca; done
sleep 2
lock_shows '.unsynced == ["s2"]' || fail "(a) s2 is not unsynced before the kill"
target_has ca && fail "(a) the target has the column before the kill"
kill9 a
restart
for k in 12 13 14 15; do alter "$k" ca; done
wait_for 60 "(a) the column did not reach the target after the restart" target_has ca
wait_for 30 "(a) the lock was not resolved" no_lock
log "(a) resolved after the restart"

# (b) all arrived, the owner's exec held up before it wrote anything
s1_arrives cb
hold_start g "SELECT * FROM $cp_table WHERE id = 's1' AND cp_schema = '' AND cp_table = '' FOR UPDATE"
for k in $(seq 8 15); do alter "$k" cb; done
wait_for 60 "(b) the lock is not synced with every shard arrived" lock_shows '.state == "synced"'
sleep 1
target_has cb && fail "(b) the DDL ran though the owner's mark is held up"
kill9 b
hold_release g
restart
wait_for 60 "(b) the column did not reach the target after the restart" target_has cb
wait_for 30 "(b) the lock was not resolved" no_lock
log "(b) resolved after the restart"

# (c) after the owner's DDL, before its resync transaction
s1_arrives cc
hold_start r "SELECT * FROM $cp_table WHERE $row0 FOR UPDATE"
for k in $(seq 8 15); do alter "$k" cc; done
wait_for 60 "(c) the owner did not run the DDL" target_has cc
sleep 1
[ "$(held_rows resync)" = 0 ] || fail "(c) s1's rows moved to resync though one is locked"
kill9 c
hold_release r
restart
wait_for 30 "(c) the lock was not resolved" no_lock
log "(c) resolved after the restart"

# (d) during the re-sync: a row written to shard 0 after its DDL is locked on the target
alter 0 cd
sleep 1
x=$(src -N -B -e "SELECT MAX(id) FROM \`$d0\`.$t0name")
for k in $(printf '%s\n' 1 2 3 4 5 6 7 | shuf); do alter "$k" cd; done
wait_for 60 "(d) s1 did not arrive" lock_shows '.synced == ["s1"]'
hold_start r "SELECT * FROM $cp_table WHERE $row0 FOR UPDATE"
for k in $(seq 8 15); do alter "$k" cd; done
wait_for 60 "(d) the owner did not run the DDL" target_has cd
[ "$(tgt -N -B -e "SELECT COUNT(*) FROM \`$db_prefix\`.orders WHERE id = $x")" = 0 ] ||
  fail "(d) row $x of shard 0 (after its DDL) is on the target before the re-sync"
# row x locked first (the DDL ran: no metadata lock in its way now), then the resync transaction
# is let go: the re-sync's batch with row x waits on the holder
hold_start x "INSERT INTO \`$db_prefix\`.orders (id, v, s) VALUES ($x, -1, 'lock')"
hold_release r
resync_begun() { [ "$(held_rows resync)" != 0 ]; }
wait_for 60 "(d) s1's rows did not move to resync" resync_begun
sleep 1
[ "$(held_rows resync)" != 0 ] || fail "(d) the re-sync ended though row $x is locked"
kill9 d
hold_release x
restart
wait_for 30 "(d) the lock was not resolved" no_lock
log "(d) resolved after the restart"

sleep 2
stop_writers
wait_for 180 "the target is not the union of the shards" union_equal "id, v, s, ca, cb, cc, cd"
[ "$(exec_count)" = 4 ] || fail "the 4 rounds' ALTERs ran $(exec_count) times, not once each"
running || fail "a subtask is not Running at the end"
grep -E "Duplicate entry|\[code 36" "$work/serve.log" && fail "serve.log has a duplicate key or a sync error"
log "union equal ($(wc -l <"$work/union.txt") rows), each ALTER once; passed"

#!/usr/bin/env bash
# kill -9 of `dmhost serve` at each step of a pessimistic shard lock (issue 22, docs/shard.md
# "Resuming after kill -9"): source s1, 2 schemas x 4 tables merged into one target table under a
# writer (`dmhost serve` binds one source: s1 is the lock's only member and its owner). One round
# per kill, each an ADD COLUMN on all 8 shards:
#   (a) half arrived: 4 tables held (their checkpoint rows);
#   (b) all arrived, the exec sent, its DDL not run: the owner's ALTER waits on the target for a
#       metadata lock another session holds (the lock shows `synced`); the dead daemon's waiting
#       ALTER is killed on the target after the kill;
#   (c) after the owner's DDL ran on the target, before its `resync` transaction (a row lock on
#       one of the held tables' checkpoint rows);
#   (d) during the re-sync: its batch waits on a row lock of a row it must insert (a row of shard
#       0 inserted after its DDL, outside the writer's ids), taken once the DDL ran, while (c)'s
#       lock still holds;
# each precondition asserted before the kill; then restart, the lock resolves. At the end the
# target is the union of the shards, and each round's ALTER ran once (the sync's log line: a
# replay finds the column and logs no second "executed").
#
#   shard_kill9.sh <dmhost> <dmctl> <plugin dir> <source dir>
set -euo pipefail
dmhost=$1 dmctl=$2 plugins=$3 src_dir=$4
cd "$src_dir"
tag=shard_kill9 db_prefix=shk task=shk meta=shk_meta n_src=1
work=$(mktemp -d /tmp/dmh-shardk-XXXXXX)
t0=$SECONDS
pid=""
. tests/shard/lib.sh
cleanup() {
  local rc=$? h
  for h in "${!holders[@]}"; do hold_release "$h"; done
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
  id=$(head -1 "$work/holder-$1.out" 2>/dev/null || true)
  [ -n "$id" ] && { tgt -e "KILL $id" 2>/dev/null || true; }
  wait "${holders[$1]}" 2>/dev/null || true
  unset "holders[$1]"
}
add() { alter "$1" "$2 INT NOT NULL DEFAULT 5"; }
kill9() {
  kill -9 "$pid"
  wait "$pid" 2>/dev/null || true
  pid=""
  log "killed -9 at ($1)"
}
# The dead daemon's connections to the target: killed there, so that a statement of it waiting
# for a lock cannot run (and commit) once the lock goes. Only statements on this test's schemas
# (`shk`, `shk_meta`): other tests share the target and its user (CI: a concurrent load lost its
# connection to an unfiltered kill).
kill_orphans() {
  local id
  for id in $(tgt -N -B -e "SELECT ID FROM information_schema.PROCESSLIST WHERE USER = '$DMH_TARGET_USER'
                            AND ID <> CONNECTION_ID() AND COMMAND = 'Query' AND INFO NOT LIKE '%SLEEP(600)%'
                            AND INFO LIKE '%$db_prefix%'"); do
    tgt -e "KILL $id" 2>/dev/null || true
  done
}
restart() {
  serve_up
  wait_for 60 "the subtasks are not Running after the restart" running
}
read -r _ d0 t0name <<<"${SHARDS[0]}"
row0="id = 's1' AND cp_schema = '$d0' AND cp_table = '$t0name'"

shard_setup "$task" "$meta"
serve_up
ctl operate-source create "$work/s1.cfg" >/dev/null || fail "operate-source create s1"
ctl_jq '.result' start-task "$work/task.cfg" || fail "start-task"
wait_for 30 "the subtask is not Running" running
writer src 0
sleep 1
# 7 of the 8 shards in a random order, waits until the sync holds them
seven() { # column
  for k in $(printf '%s\n' 0 1 2 3 4 5 6 | shuf); do add "$k" "$1"; done
  wait_for 60 "7 tables are not held ($1)" rows_are held 7
}

# (a) half arrived
for k in 0 1 2 3; do add "$k" ca; done
wait_for 60 "(a) 4 tables are not held" rows_are held 4
target_has ca && fail "(a) the target has the column before the kill"
kill9 a
restart
wait_for 60 "(a) the 4 tables are not held after the restart" rows_are held 4
for k in 4 5 6 7; do add "$k" ca; done
wait_for 60 "(a) the column did not reach the target after the restart" target_has ca
wait_for 30 "(a) the lock was not resolved" no_lock
log "(a) resolved after the restart"

# (b) all arrived, the exec sent, the DDL not run: the owner's ALTER waits for the metadata lock
# of a target session that read the table in an open transaction; after the kill, the dead
# daemon's waiting ALTER is killed on the target (the server would run it once the lock goes)
seven cb
hold_start m "SELECT COUNT(*) FROM \`$db_prefix\`.orders"
add 7 cb
wait_for 60 "(b) the lock is not synced with every shard arrived" lock_shows '.state == "synced"'
alter_waits() { [ -n "$(tgt -N -B -e "SELECT ID FROM information_schema.PROCESSLIST WHERE INFO LIKE 'ALTER TABLE%cb%'")" ]; }
wait_for 60 "(b) the owner's ALTER does not wait on the target" alter_waits
target_has cb && fail "(b) the DDL ran though the table's metadata lock is held"
kill9 b
kill_orphans
hold_release m
target_has cb && fail "(b) the dead daemon's ALTER ran"
restart
wait_for 60 "(b) the column did not reach the target after the restart" target_has cb
wait_for 30 "(b) the lock was not resolved" no_lock
log "(b) resolved after the restart"

# (c) after the owner's DDL, before its resync transaction
seven cc
hold_start r "SELECT * FROM $cp_table WHERE $row0 FOR UPDATE"
add 7 cc
wait_for 60 "(c) the owner did not run the DDL" target_has cc
sleep 1
rows_are resync 0 || fail "(c) the rows moved to resync though one is locked"
kill9 c
kill_orphans
hold_release r
rows_are held 8 || fail "(c) the rows are not held after the kill"
restart
wait_for 30 "(c) the lock was not resolved" no_lock
log "(c) resolved after the restart"

# (d) during the re-sync: a row written to shard 0 after its DDL is locked on the target
add 0 cd
# a row of its own, after the DDL, outside the writer's ids (which it may delete again: a re-sync
# batch compacts an insert and its delete away)
x=$((10000000 + 9000000))
src -e "INSERT INTO \`$d0\`.$t0name (id, v, s) VALUES ($x, 1, 'after the DDL')"
for k in $(printf '%s\n' 1 2 3 4 5 6 | shuf); do add "$k" cd; done
wait_for 60 "(d) 7 tables are not held" rows_are held 7
hold_start r "SELECT * FROM $cp_table WHERE $row0 FOR UPDATE"
add 7 cd
wait_for 60 "(d) the owner did not run the DDL" target_has cd
[ "$(tgt -N -B -e "SELECT COUNT(*) FROM \`$db_prefix\`.orders WHERE id = $x")" = 0 ] ||
  fail "(d) row $x of shard 0 (after its DDL) is on the target before the re-sync"
# row x locked first (the DDL ran: no metadata lock in its way now), then the resync transaction
# is let go: the re-sync's batch with row x waits on the holder
hold_start x "INSERT INTO \`$db_prefix\`.orders (id, v, s) VALUES ($x, -1, 'lock')"
hold_release r
wait_for 60 "(d) the rows did not move to resync" rows_are resync 8
sleep 1
rows_are resync 8 || fail "(d) the re-sync ended though row $x is locked"
kill9 d
kill_orphans
hold_release x
restart
wait_for 30 "(d) the lock was not resolved" no_lock
wait_for 30 "(d) rows of the re-sync are left" rows_are resync 0
log "(d) resolved after the restart"

sleep 2
stop_writers
wait_for 180 "the target is not the union of the shards" union_equal "id, v, s, ca, cb, cc, cd"
[ "$(exec_count)" = 4 ] || fail "the 4 rounds' ALTERs ran $(exec_count) times, not once each"
running || fail "the subtask is not Running at the end"
if grep -E "Duplicate entry|\[code 36" "$work/serve.log"; then fail "serve.log has a duplicate key or a sync error"; fi
log "union equal ($(wc -l <"$work/union.txt") rows), each ALTER once; passed"

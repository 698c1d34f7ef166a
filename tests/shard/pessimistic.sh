#!/usr/bin/env bash
# Pessimistic shard DDL end to end (issue 22, docs/shard.md "Tests"): `dmhost serve` with two
# sources (source and source2), 2 schemas x 4 tables each, all 16 routed into one target table, a
# writer on each source's 8 tables all along.
#
# Round 1: ADD COLUMN on every shard at a different moment. Until the last one arrives the target
# table has no new column; once one source's 8 tables all arrived, `shard-ddl-lock` shows it synced
# and the other unsynced. After the last: the column is there, the ALTER ran exactly once (the
# target writes no binlog: counted by the sync's log line), and once the writers stop the target
# equals the union of the shards (ids are disjoint per shard).
# Round 2: ADD COLUMN on 15 shards, one of source s2 missing: the lock shows s2 unsynced; unlock
# errors (unknown ID, an owner not arrived); `shard-ddl-lock unlock ID` runs it for s1 (s2 stays
# held); the missing shard's ALTER then opens the next lock, unlocked for s2 (the DDL is already
# there: no second ALTER); union equal.
#
#   pessimistic.sh <dmhost> <dmctl> <plugin dir> <source dir>
set -euo pipefail
dmhost=$1 dmctl=$2 plugins=$3 src_dir=$4
cd "$src_dir"
tag=shard_pessimistic db_prefix=shp task=shp meta=shp_meta
work=$(mktemp -d /tmp/dmh-shardp-XXXXXX)
t0=$SECONDS
pid=""
. tests/shard/lib.sh
trap shard_cleanup EXIT
fail() { shard_fail "$@"; }
lock_id="$task-\`$db_prefix\`.\`orders\`"

shard_setup "$task" "$meta"
serve
ctl operate-source create "$work/s1.cfg" >/dev/null || fail "operate-source create s1"
ctl operate-source create "$work/s2.cfg" >/dev/null || fail "operate-source create s2"
ctl_jq '.result' start-task "$work/task.cfg" || fail "start-task"
running() { ctl_jq '[.sources[].subTaskStatus[0].stage] == ["Running", "Running"]' query-status "$task"; }
wait_for 30 "the subtasks are not Running" running
writer src 0
writer src2 8
sleep 1
log "running, writers on 16 shards"

# ---- round 1: ADD COLUMN note on each shard at a different moment ----
alter() { # shard index, column definition
  read -r c d t <<<"${SHARDS[$1]}"
  $c -e "ALTER TABLE \`$d\`.$t ADD COLUMN $2"
}
lock_shows() { # jq filter on the lock
  ctl_jq ".result and ([.locks[] | select(.ID == \"$lock_id\")] | length == 1) and
          (.locks[] | select(.ID == \"$lock_id\") | $1)" shard-ddl-lock "$task"
}
# s1's 8 shards and 4 of s2's, in a random order, with pauses between
order=$(printf '%s\n' 0 1 2 3 4 5 6 7 8 9 10 11 | shuf)
for k in $order; do
  alter "$k" "note VARCHAR(32) NOT NULL DEFAULT 'n'"
  sleep "0.$((RANDOM % 5))"
  target_has note && fail "the target has the column after shard $k only"
done
wait_for 60 "shard-ddl-lock does not show s1 synced and s2 unsynced" \
  lock_shows '.synced == ["s1"] and .unsynced == ["s2"] and .state == "waiting"'
target_has note && fail "the target has the column before s2 arrived"
[ "$(exec_count)" = 0 ] || fail "a DDL ran before the last shard arrived"
log "12 of 16 arrived: lock waiting, s1 synced, s2 unsynced, no column on the target"
for k in 12 13 14; do
  alter "$k" "note VARCHAR(32) NOT NULL DEFAULT 'n'"
  sleep 0.5
  target_has note && fail "the target has the column after shard $k ($((k + 1)) of 16)"
done
alter 15 "note VARCHAR(32) NOT NULL DEFAULT 'n'"
wait_for 60 "the target did not get the column after the last shard arrived" target_has note
wait_for 30 "the lock was not resolved" ctl_jq ".result and ([.locks[] | select(.ID == \"$lock_id\")] | length == 0)" shard-ddl-lock "$task"
log "the last shard arrived: the column is on the target, the lock resolved"
sleep 2
stop_writers
wait_for 120 "the target is not the union of the shards (round 1)" union_equal "id, v, s, note"
[ "$(exec_count)" = 1 ] || fail "the ALTER ran $(exec_count) times, not once"
running || fail "a subtask is not Running after round 1"
log "round 1: union equal ($(wc -l <"$work/union.txt") rows), the ALTER ran once"

# ---- round 2: one shard of s2 missing, unlock ----
rm -f "$work/stop"
writer src 0
writer src2 8
missing=15
for k in $(printf '%s\n' $(seq 0 14) | shuf); do
  alter "$k" "note2 INT NOT NULL DEFAULT 7"
  sleep "0.$((RANDOM % 3))"
done
wait_for 60 "shard-ddl-lock does not show s2 unsynced with one shard missing" \
  lock_shows '.synced == ["s1"] and .unsynced == ["s2"]'
sleep 1
target_has note2 && fail "the target has note2 with a shard missing"
ctl_jq '.result == false and .error.ErrCode == 14030' shard-ddl-lock unlock "$task-\`nope\`.\`nope\`" ||
  fail "unlock of an unknown lock was not refused with 14030"
ctl_jq '.result == false and .error.ErrCode == 14032' shard-ddl-lock unlock "$lock_id" -o s2 ||
  fail "unlock with an owner that has not arrived was not refused with 14032"
ctl_jq '.result' shard-ddl-lock unlock "$lock_id" || fail "shard-ddl-lock unlock"
wait_for 60 "the target did not get note2 after unlock" target_has note2
log "15 of 16: unlock ran it for s1"
# the missing shard arrives: the next lock, for s2 alone now
alter "$missing" "note2 INT NOT NULL DEFAULT 7"
wait_for 60 "the missing shard's arrival did not open the next lock for s2" \
  lock_shows '(.synced | index("s2")) != null'
ctl_jq '.result' shard-ddl-lock unlock "$lock_id" -o s2 || fail "shard-ddl-lock unlock of the next lock"
wait_for 30 "the next lock was not resolved" ctl_jq ".result and ([.locks[] | select(.ID == \"$lock_id\")] | length == 0)" shard-ddl-lock "$task"
sleep 2
stop_writers
wait_for 120 "the target is not the union of the shards (round 2)" union_equal "id, v, s, note, note2"
running || fail "a subtask is not Running after round 2"
[ "$(exec_count)" = 2 ] || fail "round 2's ALTER ran $(($(exec_count) - 1)) times, not once"
log "round 2: union equal ($(wc -l <"$work/union.txt") rows)"
kill "$pid"
wait "$pid" || fail "dmhost serve did not exit 0 on SIGTERM"
pid=""
log "passed"

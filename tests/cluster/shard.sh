#!/usr/bin/env bash
# Pessimistic shard DDL in the cluster (issue 22, docs/shard.md "Tests", docs/cluster.md "Shard DDL
# locks"): 3 masters, workers w1 and w2 bound to sources s1 (source) and s2 (source2), a spare w3;
# each source has 2 schemas x 4 tables, all 16 routed into one target table, a writer on each
# source's 8 tables all along. ADD COLUMN on every shard table at different moments:
#  1. all of s1's 8 and 4 of s2's: the lock is listed waiting (s1 synced, s2 unsynced), the target
#     has no column;
#  2. kill -9 of w2, the worker of the half-arrived s2: s2 is bound to w3 after the lease, its
#     subtask runs there from the checkpoint (held tables still held), the lock is unchanged;
#  3. two more of s2's; kill -9 of the leader master while the lock is still half arrived; the
#     last two of s2's: the next leader resumes the lock from etcd, exec goes to the owner, the
#     target gets the column; the lock is resolved; an unlock through the follower is forwarded to
#     the leader (its "no such lock" comes back);
#  4. after the writers stop: the target is the union of the 16 shards, the ALTER ran once (the
#     workers' "executed" log lines), both subtasks Running;
#  5. one shard missing (docs/shard.md step 8): ADD COLUMN note2 on 15 of 16 (s2's last missing):
#     the lock waits with s2 unsynced; unlock with an owner not arrived is 14032; `shard-ddl-lock
#     unlock ID` runs it once for s1, whose 8 held tables re-sync and go on while s2's 7 stay held;
#     the missing shard's later ALTER opens the next lock (s2 synced, s1 unsynced, owner s2), whose
#     unlock finds the column there (no second ALTER); union equal.
#
#   shard.sh <dmhost> <dmctl> <plugin dir> <source dir>
#
# KEEP=1 keeps the work folder.
set -euo pipefail
dmhost=$1 dmctl=$2 plugins=$3 src_dir=$4
cd "$src_dir"
tag=cluster_shard db_prefix=clsh task=clsh meta=clsh_meta tasks=$task
work=$(mktemp -d /tmp/dmh-cluster-shard-XXXXXX)
t0=$SECONDS
. tests/crash/lib.sh
. tests/shard/lib.sh # the shards, the writers, the union (its ctl, wait_for and fail are replaced)
. tests/cluster/lib.sh
m_port[3]=$((DMH_ETCD_PORT_BASE + 23))
cleanup() {
  touch "$work/stop"
  for p in "${wl_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait "${wl_pids[@]}" 2>/dev/null || true
  cluster_cleanup
}
trap cleanup EXIT
lock_id="$task-\`$db_prefix\`.\`orders\`"
# a live master to ask (the leader may be killed)
am=1
mctl() { ctl "$am" "$@"; }
exec_count() { cat "$work"/w*.log | grep -c "shard lock .* executed" || true; }
lock_shows() { # jq filter on the lock, through master $am
  mctl shard-ddl-lock "$task" | jq -e ".result and ([.locks[] | select(.ID == \"$lock_id\")] | length == 1) and
    (.locks[] | select(.ID == \"$lock_id\") | $1)"
}
lock_gone() {
  mctl shard-ddl-lock "$task" | jq -e ".result and ([.locks[] | select(.ID == \"$lock_id\")] | length == 0)"
}
alter() { # shard index
  read -r c d t <<<"${SHARDS[$1]}"
  $c -e "ALTER TABLE \`$d\`.$t ADD COLUMN note VARCHAR(32) NOT NULL DEFAULT 'n'"
}

shard_setup "$task" "$meta"
for m in 1 2 3; do start_master "$m"; done
wait_for 20 "m1 does not answer" ctl 1 list-member
start_worker w1
start_worker w2
wait_for 20 "w1 and w2 did not register" members_are 1 "w1 free 
w2 free "
source_create 1 s1
source_create 2 s2
wait_for 20 "s1 and s2 were not bound to w1 and w2" members_are 1 "w1 bound s1
w2 bound s2"
start_worker w3
wait_for 20 "w3 did not register free" members_are 1 "w1 bound s1
w2 bound s2
w3 free "
task_start 3 task
wait_for 60 "the subtask of s1 does not run" task_running "$task" s1 1
wait_for 60 "the subtask of s2 does not run" task_running "$task" s2 1
writer src 0
writer src2 8
log "3 masters; w1 bound s1, w2 bound s2, w3 free; $task running; writers on 16 shards"

# ---- 1. s1's 8 shards and 4 of s2's ----
for k in $(printf '%s\n' 0 1 2 3 4 5 6 7 8 9 10 11 | shuf); do
  alter "$k"
  sleep "0.$((RANDOM % 4))"
  target_has note && fail "the target has the column after shard $k only"
done
wait_for 60 "shard-ddl-lock does not show s1 synced and s2 unsynced" \
  lock_shows '.synced == ["s1"] and .unsynced == ["s2"] and .state == "waiting" and .owner == "s1"'
target_has note && fail "the target has the column before s2 arrived"
[ "$(exec_count)" = 0 ] || fail "a DDL ran before the last shard arrived"
log "12 of 16 arrived: the lock waits (s1 synced, s2 unsynced), no column on the target"

# ---- 2. kill -9 of the half-arrived source's worker ----
w2pid=${pid[w2]}
kill -9 "$w2pid"
wait "$w2pid" 2>/dev/null || true
unset "pid[w2]"
proc_alive "$w2pid" && fail "precondition: w2 still runs after kill -9"
wait_for 40 "s2 was not bound to w3 after w2's lease" members_are 1 "w1 bound s1
w3 bound s2"
wait_for 60 "the subtask of s2 does not run on w3" task_running "$task" s2 1
[ "$(task_worker "$task" s2 1)" = w3 ] || fail "s2's subtask is not w3's: $(task_worker "$task" s2 1)"
lock_shows '.synced == ["s1"] and .unsynced == ["s2"] and .state == "waiting"' ||
  fail "the lock changed with w2's kill -9: $(mctl shard-ddl-lock "$task")"
target_has note && fail "the target has the column after w2's kill"
log "kill -9 of w2: s2 on w3, its subtask running from the checkpoint; the lock still waits"

# ---- 3. kill -9 of the leader while half arrived ----
alter 12
alter 13
sleep 1
target_has note && fail "the target has the column with 14 of 16"
leader=$(ctl 1 list-member --master | jq -r '.members[] | select(.leader) | .leader.name')
[[ $leader =~ ^m[123]$ ]] || fail "no leader to kill: $leader"
lk=${leader#m} lpid=${pid[$leader]}
kill -9 "$lpid"
wait "$lpid" 2>/dev/null || true
unset "pid[$leader]"
proc_alive "$lpid" && fail "precondition: the leader $leader still runs after kill -9"
am=$((lk % 3 + 1))
alter 14
alter 15
log "kill -9 of the leader $leader with 14 of 16 arrived; the last 2 arrived after it"
new_leader() {
  local l
  l=$(mctl list-member --master | jq -r '.members[] | select(.leader) | .leader.name')
  [[ $l =~ ^m[123]$ ]] && [ "$l" != "$leader" ]
}
wait_for 40 "no other master leads after $leader's kill -9" new_leader
wait_for 60 "the target did not get the column after the last shard arrived" target_has note
wait_for 30 "the lock was not resolved" lock_gone
log "the next leader resumed the lock: the column is on the target, the lock resolved"
# unlock is the leader's: the live follower forwards it and the leader's refusal comes back
leader2=$(mctl list-member --master | jq -r '.members[] | select(.leader) | .leader.name')
fm=""
for m in 1 2 3; do [ "m$m" != "$leader" ] && [ "m$m" != "$leader2" ] && fm=$m; done
[ -n "$fm" ] || fail "no live follower (killed $leader, leader $leader2)"
out=$(ctl "$fm" shard-ddl-lock unlock "$task-\`nope\`.\`nope\`" || true)
jq -e '.result == false and .error.ErrCode == 14030' <<<"$out" >/dev/null ||
  fail "unlock of an unknown lock through the follower m$fm: not the leader's 14030: $out"
log "unlock through the follower m$fm: forwarded, the leader's 14030 (no such lock) came back"

# ---- 4. the union, one ALTER ----
sleep 2
stop_writers
wait_for 120 "the target is not the union of the shards" union_equal "id, v, s, note"
[ "$(exec_count)" = 1 ] || fail "the ALTER ran $(exec_count) times, not once"
task_running "$task" s1 "$am" || fail "the subtask of s1 is not Running"
task_running "$task" s2 "$am" || fail "the subtask of s2 is not Running"
no_dup "$work"/w*.log
log "union equal ($(wc -l <"$work/union.txt") rows), the ALTER ran once, both subtasks Running"

# ---- 5. one shard missing: unlock, then its late arrival opens the next lock ----
rm -f "$work/stop"
writer src 0
writer src2 8
for k in $(printf '%s\n' $(seq 0 14) | shuf); do
  read -r c d t <<<"${SHARDS[$k]}"
  $c -e "ALTER TABLE \`$d\`.$t ADD COLUMN note2 INT NOT NULL DEFAULT 7"
  sleep "0.$((RANDOM % 3))"
done
wait_for 60 "shard-ddl-lock does not show s2 unsynced with one shard missing" \
  lock_shows '.synced == ["s1"] and .unsynced == ["s2"] and .state == "waiting"'
wait_for 60 "s1's 8 tables are not held" rows_are held 8
target_has note2 && fail "the target has note2 with a shard missing"
out=$(mctl shard-ddl-lock unlock "$lock_id" -o s2 || true)
jq -e '.result == false and .error.ErrCode == 14032' <<<"$out" >/dev/null ||
  fail "unlock with an owner that has not arrived was not refused with 14032: $out"
out=$(mctl shard-ddl-lock unlock "$lock_id" || true)
jq -e '.result' <<<"$out" >/dev/null || fail "shard-ddl-lock unlock: $out"
wait_for 60 "the target did not get note2 after unlock" target_has note2
[ "$(exec_count)" = 2 ] || fail "unlock ran the ALTER $(($(exec_count) - 1)) times, not once"
wait_for 60 "s1's held tables were not re-synced after unlock" rows_are held 0
wait_for 60 "s1's re-sync did not end after unlock" rows_are resync 0
s2_held=$(tgt -N -B -e "SELECT COUNT(*) FROM \`$meta\`.\`${task}_syncer_checkpoint\` WHERE id = 's2' AND
  cp_schema <> '' AND JSON_UNQUOTE(JSON_EXTRACT(table_info, '\$.shard.state')) = 'held'")
[ "$s2_held" = 7 ] || fail "s2 has $s2_held held tables after the unlock, not its 7 arrived"
# s1's part of the target (ids below shard 8's) is the union of s1's shards, note2 included
s1_equal() {
  local k c d t
  for k in 0 1 2 3 4 5 6 7; do
    read -r c d t <<<"${SHARDS[$k]}"
    $c -N -B -e "SELECT id, v, s, note, note2 FROM \`$d\`.$t"
  done | sort >"$work/union-s1.txt"
  tgt -N -B -e "SELECT id, v, s, note, note2 FROM \`$db_prefix\`.orders WHERE id < 90000000" |
    sort >"$work/target-s1.txt"
  cmp -s "$work/union-s1.txt" "$work/target-s1.txt"
}
stop_writers
wait_for 120 "s1's part of the target is not the union of its shards after unlock" s1_equal
rm -f "$work/stop"
writer src 0
writer src2 8
log "15 of 16: unlock ran note2 once for s1, its tables re-synced (s1's part equal); s2's 7 still held"
# docs/shard.md step 8: the missing shard's later arrival opens the next lock, waiting for s1
read -r c d t <<<"${SHARDS[15]}"
$c -e "ALTER TABLE \`$d\`.$t ADD COLUMN note2 INT NOT NULL DEFAULT 7"
wait_for 60 "the missing shard's arrival did not open the next lock for s2" \
  lock_shows '.synced == ["s2"] and .unsynced == ["s1"] and .state == "waiting" and .owner == "s2"'
out=$(mctl shard-ddl-lock unlock "$lock_id" || true)
jq -e '.result' <<<"$out" >/dev/null || fail "shard-ddl-lock unlock of the next lock: $out"
wait_for 60 "the next lock was not resolved" lock_gone
sleep 2
stop_writers
wait_for 120 "the target is not the union of the shards (round 5)" union_equal "id, v, s, note, note2"
[ "$(exec_count)" = 2 ] || fail "note2 ran $(($(exec_count) - 1)) times, not once (s2's exec finds it there)"
task_running "$task" s1 "$am" || fail "the subtask of s1 is not Running after round 5"
task_running "$task" s2 "$am" || fail "the subtask of s2 is not Running after round 5"
no_dup "$work"/w*.log
log "unlock with a shard missing: note2 once, s2's late arrival opened the next lock, unlocked; union equal"
for n in w1 w3 m1 m2 m3; do [ -n "${pid[$n]:-}" ] && stop_proc "$n"; done
log "PASSED"

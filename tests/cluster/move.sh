#!/usr/bin/env bash
# Issue 11: subtasks moved in their dump and load phases. Real processes on the fixture's etcd,
# driven by dmctl --master-addr: one `dmhost master`; w1 bound to source1, w2 to source2 (no
# relay), w3 and w4 free. task1 (db1 from source1, consistency snapshot) is held in its dump: a
# source session keeps `LOCK TABLES blk WRITE` on db1, so the dump's read of blk waits. task2
# (db2 from source2) is held in its load: db2.blk exists on the target with the row id 1, which a
# target session keeps locked, so the load's batch of blk waits while the other tables finish
# (asserted in its checkpoint). Write workloads run on both databases throughout. Then kill -9 of
# w1 and w2 at once, and both locks let go (the killed load's batch may still commit on the
# server: its connection is gone but its statements were sent). After the lease the master binds
# the sources to w3 and w4, whose dump folders are empty: both subtasks start over at the dump
# unit (the load of task2 is fresh without a dump to continue: load_is_fresh_task), and task2's
# load empties the tables the old load wrote to before it loads the new dump (its checkpoint rows
# name another dump_id; the log says so), as the old rows of db2 were changed by the workload
# since. Both reach the sync. Then etcd member e1 is killed for 5 s: no binding, lease or task
# changes. After the writes stop both targets equal their sources; no error on w3 and w4, no
# duplicate key.
#
#   move.sh <dmhost> <dmctl> <plugin dir> <source dir>
#
# KEEP=1 keeps the work folder. Servers from `scripts/mariadb.sh env`, etcd from `scripts/etcd.sh env`.
set -euo pipefail
dmhost=$1 dmctl=$2 plugins=$3 src_dir=$4
cd "$src_dir"
work=$(mktemp -d /tmp/dmh-cluster-move-XXXXXX)
t0=$SECONDS tag=cluster_move tasks="task1 task2"
db1=cluster_move_db1 db2=cluster_move_db2 meta=cluster_move_meta
cp_table="\`$meta\`.\`task2_syncer_checkpoint\`"
load_cp="\`$meta\`.\`task2_loader_checkpoint\`"
. tests/crash/lib.sh
. tests/crash/fence_lib.sh # lock_session, end_lock_session, wait_lock_wait
. tests/cluster/lib.sh
wl_pids=() e1_killed=""
cleanup() {
  [ -z "$e1_killed" ] || bash scripts/etcd.sh restart e1 >/dev/null 2>&1 || true
  stop_workload
  end_lock_session || true
  cluster_cleanup
}
trap cleanup EXIT

# ---- the sources: the workload's tables, a fill and the table blk; source and task files ----
for db in $db1 $db2; do
  sed "s/sync_wl/$db/g" tests/sql/sync-workload.sql | src
  src "$db" -e "CALL sync_fill(2000); CREATE TABLE blk (id INT PRIMARY KEY, v INT);
    INSERT INTO blk SELECT seq, seq FROM seq_1_to_300"
done
tgt -e "DROP DATABASE IF EXISTS \`$db1\`; DROP DATABASE IF EXISTS \`$db2\`; DROP DATABASE IF EXISTS \`$meta\`"
for s in 1 2; do
  cat >"$work/source$s.cfg" <<CFG
source-id = "source$s";
server-id = 424220$s;
from = { host = "$DMH_SOURCE_HOST"; port = $DMH_SOURCE_PORT; user = "$DMH_SOURCE_USER"; password = ""; };
CFG
done
crash_task_cfg task1 "$meta" "$db1" source1 >"$work/task1.cfg" <<CFG
supervisor = { auto-resume = { enable = false; }; };
dump = { consistency = "snapshot"; };
sync = { worker-count = 4; batch = 100; batch-ms = 50; status-interval = 200; };
CFG
crash_task_cfg task2 "$meta" "$db2" source2 >"$work/task2.cfg" <<CFG
supervisor = { auto-resume = { enable = false; }; };
load = { pool-size = 2; };
sync = { worker-count = 4; batch = 100; batch-ms = 50; status-interval = 200; };
CFG

# ---- the cluster: m1; w1 bound to source1, w2 to source2; w3 and w4 free ----
start_master 1
start_worker w1
wait_for 10 "w1 did not register free" members_are 1 "w1 free "
source_create 1 source1
wait_for 10 "source1 was not bound to w1" members_are 1 "w1 bound source1"
start_worker w2
wait_for 10 "w2 did not register free" members_are 1 "w1 bound source1
w2 free "
source_create 1 source2
wait_for 10 "source2 was not bound to w2" members_are 1 "w1 bound source1
w2 bound source2"
start_worker w3
start_worker w4
wait_for 10 "w3 and w4 did not register free" members_are 1 "w1 bound source1
w2 bound source2
w3 free 
w4 free "
rm -f "$work/stop"
for c in 1 2; do
  workload_client "$db1" 5 $((c * 1000003 + RANDOM))
  workload_client "$db2" 5 $((c * 2000003 + RANDOM))
done

# ---- task2 held in its load: blk's row 1 locked on the target ----
tgt -e "CREATE DATABASE \`$db2\`; CREATE TABLE \`$db2\`.blk (id INT PRIMARY KEY, v INT);
  INSERT INTO \`$db2\`.blk VALUES (1, 1)"
lock_session "$db2" "BEGIN; SELECT * FROM blk WHERE id = 1 FOR UPDATE; DO SLEEP(600); ROLLBACK"
task_start 1 task2
wait_lock_wait "trx_query LIKE '%blk%'" "${pid[w2]}" || fail "task2's load on w2 did not wait on blk"
# every other table of db2 loaded by w2 (their files at end_pos), blk's file not
for _ in $(seq 1 300); do
  [ "$(tgt -N -B -e "SELECT COUNT(*) FROM $load_cp WHERE cp_table <> 'blk' AND \`offset\` < end_pos" 2>/dev/null || echo x)" = 0 ] && break
  sleep 0.1
done
loaded=$(tgt -N -B -e "SELECT COUNT(*), SUM(cp_table <> 'blk' AND \`offset\` = end_pos),
  SUM(cp_table = 'blk' AND \`offset\` < end_pos), COUNT(DISTINCT dump_id) FROM $load_cp")
read -r n_files n_done n_blk n_dumps <<<"$loaded"
[ "$n_files" -gt 1 ] && [ "$n_done" = $((n_files - 1)) ] && [ "$n_blk" = 1 ] && [ "$n_dumps" = 1 ] ||
  fail "task2's load checkpoint is not 'every file loaded but blk's' (files, done, blk, dumps): $loaded"
old_dump=$(tgt -N -B -e "SELECT DISTINCT dump_id FROM $load_cp")
log "task2 on w2: $n_done of $n_files files loaded (dump $old_dump), blk's batch waits on the target lock"

# ---- task1 held in its dump: blk locked on the source ----
lock_session "$db1" "LOCK TABLES blk WRITE; DO SLEEP(600)" src
task_start 1 task1
blk_waits() { src -N -B -e "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE STATE LIKE
  '%metadata lock%' AND INFO LIKE '%$db1%blk%'"; }
for _ in $(seq 1 150); do
  [ "$(blk_waits)" -gt 0 ] && break
  sleep 0.1
done
[ "$(blk_waits)" -gt 0 ] || fail "task1's dump on w1 did not wait on blk"
grep -q "unit=dump\] dump: snapshot" "$work/w1.log" || fail "w1 did not start task1's dump"
[ -e "$work/w1" ] && [ -z "$(find "$work/w1" -name metadata -path '*task1*')" ] ||
  fail "task1's dump on w1 finished before the kill"
log "task1 on w1: its dump waits on the source's lock of blk"

# ---- kill -9 of w1 and w2; the locks let go; the workloads go on ----
kill -9 "${pid[w1]}" "${pid[w2]}"
wait "${pid[w1]}" "${pid[w2]}" 2>/dev/null || true
unset "pid[w1]" "pid[w2]"
killed=$SECONDS
end_lock_session
log "w1 and w2 killed (kill -9); locks released"
# which free worker gets which source depends on which lease expires first (free workers by name)
moved_to_free() { members_are 1 "w3 bound source1
w4 bound source2" || members_are 1 "w3 bound source2
w4 bound source1"; }
wait_for 30 "the sources did not move to w3 and w4" moved_to_free
wt1=$(members 1 | awk '$3 == "source1" {print $1}') wt2=$(members 1 | awk '$3 == "source2" {print $1}')
bindings=$(members 1 | sort)
log "sources bound to w3 and w4 $((SECONDS - killed)) s after the kill (source1 on $wt1, source2 on $wt2)"

# ---- both start over at the dump; task2's load replaces the old dump's tables ----
for t in task1:$wt1 task2:$wt2; do
  for _ in $(seq 1 600); do grep -q "task=${t%:*} source=source[12] unit=sync\] sync: reading" "$work/${t#*:}.log" && break; sleep 0.1; done
  grep -q "task=${t%:*} source=source[12] unit=sync\] sync: reading" "$work/${t#*:}.log" ||
    fail "${t%:*} did not reach the sync on ${t#*:}"
  grep -q "\[${t%:*}\] starting at the dump unit" "$work/${t#*:}.log" ||
    fail "${t%:*} did not start over at the dump unit on ${t#*:}"
done
log "task1 and task2 started over at the dump on $wt1 and $wt2; both sync"

# ---- one etcd member killed (the first of every process's endpoint list): nothing stops ----
bash scripts/etcd.sh kill e1 >/dev/null
e1_killed=1
n3=$(lines "$work/w3.log") n4=$(lines "$work/w4.log")
sleep 5 # more than a keepalive round (TTL / 3): the workers renew through e2 or e3
members_are 1 "$bindings" || fail "the bindings changed with e1 down: $(members 1 | tr '\n' ';')"
task_running task1 source1 1 >/dev/null || fail "task1 does not run with e1 down"
task_running task2 source2 1 >/dev/null || fail "task2 does not run with e1 down"
{ tail -n +$((n3 + 1)) "$work/w3.log"; tail -n +$((n4 + 1)) "$work/w4.log"; } | grep -E "15041|fenced|Paused" &&
  fail "a worker paused with one etcd member down"
bash scripts/etcd.sh restart e1 >/dev/null
e1_killed=""
log "etcd member e1 killed for 5 s: bindings, leases and tasks unchanged"

# ---- the writes stop: both targets equal their sources, no error, no duplicate key ----
stop_workload
for db in $db1 $db2; do
  for _ in $(seq 1 60); do
    bash scripts/checksum.sh "$db" >"$work/checksum.out" 2>&1 && break
    sleep 1
  done
  bash scripts/checksum.sh "$db" >"$work/checksum.out" 2>&1 ||
    fail "the target differs from the source in $db: $(cat "$work/checksum.out")"
done
no_dup "$work"/w3.log "$work"/w4.log
# (after the data: a load that kept the old dump's finished files leaves the targets unequal)
grep -q "unit=load\] load: the checkpoint has rows of this source but .* no complete dump" "$work/$wt2.log" ||
  fail "$wt2's load did not find task2's checkpoint without a dump"
grep -q "load: the checkpoint held this source's rows for another dump ($old_dump;" "$work/$wt2.log" ||
  fail "$wt2's load did not replace the old dump's tables"
[ "$(tgt -N -B -e "SELECT COUNT(DISTINCT dump_id), MIN(dump_id) <> '$old_dump' FROM $load_cp")" = "1	1" ] ||
  fail "task2's load checkpoint does not name one new dump"
for w in w3 w4; do
  grep -q "\[code [0-9]*\]" "$work/$w.log" && fail "$w logged an error: $(grep -m1 "\[code" "$work/$w.log")"
done
for n in w3 w4 m1; do stop_proc "$n"; done
log "passed: both targets equal their sources after moves in dump and load"
tgt -e "DROP DATABASE IF EXISTS \`$db1\`; DROP DATABASE IF EXISTS \`$db2\`; DROP DATABASE IF EXISTS \`$meta\`"
src -e "DROP DATABASE IF EXISTS \`$db1\`; DROP DATABASE IF EXISTS \`$db2\`"

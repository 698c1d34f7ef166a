#!/usr/bin/env bash
# Issue 11: a frozen worker (a paused VM, a partition) comes back long after its lease; its late
# commits must be refused by the fencing token. Real processes on the fixture's etcd, driven by
# dmctl --master-addr: one `dmhost master`, worker w2 bound to source1 (no relay) with a mode-all
# task (on-duplicate "error") syncing under writes, worker w1 free. A target session locks t_pk so
# that one of w2's sync workers waits inside its batch transaction (its checkpoint row already
# moved, locked by it); w2 is frozen right there (SIGSTOP) and the lock released, so w2's
# transaction stays open on the target. After w2's lease (TTL 10 s) the master binds source1 to w1
# (list-member), whose raise of the checkpoint rows to its token (the new binding's
# create_revision) must wait for w2's open transaction (asserted in the server's lock waits). 14 s
# after the freeze w2 is thawed (SIGCONT): its open transaction may still commit (w1's raise waits
# for it, and reads the checkpoint after it), but nothing after that: w2 either meets the fence
# (DM_ERR_FENCED 36016, "fenced off: a newer worker (token T1)") or pauses by its own keepalive rule
# (DM_ERR_CLUSTER_WORKER_FENCED 15041) first; the test says which and accepts only these. Then:
# the checkpoint rows all carry w1's token (never w2's again), w1 keeps syncing and keeps the
# source, w2 registers again free and does not take it back, and after the writes stop the target
# equals the source with no duplicate key in any log.
#
#   frozen.sh <dmhost> <dmctl> <plugin dir> <source dir>
#
# KEEP=1 keeps the work folder. Servers from `scripts/mariadb.sh env`, etcd from `scripts/etcd.sh env`.
set -euo pipefail
dmhost=$1 dmctl=$2 plugins=$3 src_dir=$4
cd "$src_dir"
work=$(mktemp -d /tmp/dmh-cluster-frozen-XXXXXX)
t0=$SECONDS tag=cluster_frozen tasks=task1
db=cluster_frozen_db meta=cluster_frozen_meta audit=cluster_frozen_audit
cp_table="\`$meta\`.\`task1_syncer_checkpoint\`"
. tests/crash/lib.sh
# lock_session, end_lock_session and wait_lock_wait of the fencing tests; fail and no_dup are the
# cluster's (lib.sh after it)
. tests/crash/fence_lib.sh
. tests/cluster/lib.sh
wl_pids=()
cleanup() {
  stop_workload
  end_lock_session || true # (its KILL fails once the session ended; set -e would end the cleanup)
  cluster_cleanup
}
trap cleanup EXIT
# the distinct tokens of the sync checkpoint rows, comma-separated
tokens() { tgt -N -B -e "SELECT GROUP_CONCAT(DISTINCT fence ORDER BY fence) FROM $cp_table"; }

# ---- the source: the workload's tables and a fill; the source and task files ----
sed "s/sync_wl/$db/g" tests/sql/sync-workload.sql | src
src "$db" -e "CALL sync_fill(2000)"
tgt -e "DROP DATABASE IF EXISTS \`$db\`; DROP DATABASE IF EXISTS \`$meta\`; DROP DATABASE IF EXISTS \`$audit\`"
cat >"$work/source1.cfg" <<CFG
source-id = "source1";
server-id = 4242101;
from = { host = "$DMH_SOURCE_HOST"; port = $DMH_SOURCE_PORT; user = "$DMH_SOURCE_USER"; password = ""; };
CFG
crash_task_cfg task1 "$meta" "$db" source1 >"$work/task1.cfg" <<CFG
supervisor = { auto-resume = { enable = false; }; };
load = { on-duplicate = "error"; };
sync = { worker-count = 4; batch = 100; batch-ms = 50; status-interval = 200; };
CFG

# ---- the cluster: m1, w2 bound to source1, then w1 free ----
start_master 1
start_worker w2
wait_for 10 "w2 did not register free" members_are 1 "w2 free "
source_create 1 source1
wait_for 10 "source1 was not bound to w2" members_are 1 "w2 bound source1"
start_worker w1
wait_for 10 "w1 did not register free" members_are 1 "w1 free 
w2 bound source1"
task_start 1 task1
rm -f "$work/stop"
for c in 1 2; do workload_client "$db" 5 $((c * 1000003 + RANDOM)); done
wait_for 60 "task1 does not run on w2" ctl_jq 1 '[.sources[].subTaskStatus[]
  | select(.worker == "w2" and .stage == "Running")] | length == 1' query-status task1
for _ in $(seq 1 300); do grep -q "unit=sync\] sync: reading" "$work/w2.log" && break; sleep 0.1; done
grep -q "unit=sync\] sync: reading" "$work/w2.log" || fail "w2 did not reach sync"
sleep 1
t2=$(tokens)
[[ "$t2" =~ ^[1-9][0-9]*$ ]] || fail "w2's checkpoint rows carry tokens '$t2', not one"
# every committed change of a checkpoint row with the token it carries, in the order of that row's
# lock (the trigger runs while the change holds it): its insert is part of the worker's
# transaction, so a refused or rolled-back commit leaves none
tgt -e "DROP DATABASE IF EXISTS \`$audit\`; CREATE DATABASE \`$audit\`;
  CREATE TABLE \`$audit\`.cp (id BIGINT AUTO_INCREMENT PRIMARY KEY, r VARCHAR(400), fence BIGINT, conn BIGINT);
  CREATE TRIGGER \`$meta\`.frozen_cp_ins AFTER INSERT ON $cp_table FOR EACH ROW
    INSERT INTO \`$audit\`.cp (r, fence, conn) VALUES (CONCAT_WS('/', NEW.id, NEW.cp_schema, NEW.cp_table), NEW.fence, CONNECTION_ID());
  CREATE TRIGGER \`$meta\`.frozen_cp_upd AFTER UPDATE ON $cp_table FOR EACH ROW
    INSERT INTO \`$audit\`.cp (r, fence, conn) VALUES (CONCAT_WS('/', NEW.id, NEW.cp_schema, NEW.cp_table), NEW.fence, CONNECTION_ID())"
for _ in $(seq 1 50); do
  [ "$(tgt -N -B -e "SELECT COUNT(*) FROM \`$audit\`.cp WHERE fence = $t2")" -gt 0 ] && break
  sleep 0.1
done
[ "$(tgt -N -B -e "SELECT COUNT(*) FROM \`$audit\`.cp WHERE fence = $t2")" -gt 0 ] ||
  fail "the audit trigger saw no commit of w2"
log "task1 syncs on w2 under writes (checkpoint $(checkpoint), rows at w2's token $t2); w1 free"

# ---- w2 frozen inside a batch transaction ----
lock_session "$db" "BEGIN; SELECT COUNT(*) FROM t_pk FOR UPDATE; DO SLEEP(60); ROLLBACK"
wait_lock_wait "trx_query LIKE '%t_pk%'" "${pid[w2]}" || fail "no sync worker of w2 waited on the locked rows"
kill -STOP "${pid[w2]}"
frozen=$SECONDS
proc_stopped "${pid[w2]}" || fail "w2 is not stopped 5 s after SIGSTOP"
log "w2 frozen (SIGSTOP) with $lock_waits sync transaction(s) waiting on t_pk"

# ---- after w2's lease: source1 on w1, whose raise waits for w2's open transactions ----
for _ in $(seq 1 250); do
  members_are 1 "w1 bound source1" && break
  sleep 0.1
done
members_are 1 "w1 bound source1" || fail "source1 did not move to w1: $(members 1 | tr '\n' ';')"
moved=$((SECONDS - frozen))
[ "$moved" -ge 6 ] || fail "source1 moved ${moved} s after the freeze, before w2's lease could expire"
log "source1 bound to w1 ${moved} s after the freeze (list-member: w1 bound source1, w2 gone)"
# w1's locking read or raise of the checkpoint rows, behind a sync worker of w2 that moved its row
wait_lock_wait "trx_query LIKE '%cp_table%' OR trx_query LIKE '%\`fence\`%'" "${pid[w1]}" ||
  fail "w1's raise of the checkpoint rows did not wait for w2's open transaction"
grep -q "unit=sync\] sync: reading" "$work/w1.log" && fail "w1 read its checkpoint while w2's transaction was open"
[ "$(tokens)" = "$t2" ] || fail "the checkpoint rows moved off w2's token while its transaction was open: $(tokens)"
log "w1's raise waits for w2's open transaction; releasing the lock"
# w2's batches go through on the server now (each is sent with its COMMIT), before w1's raise
end_lock_session
for _ in $(seq 1 300); do grep -q "unit=sync\] sync: reading" "$work/w1.log" && break; sleep 0.1; done
grep -q "unit=sync\] sync: reading" "$work/w1.log" || fail "w1 did not sync task1 after w2's transaction ended"
grep -qE "unit=(dump|load)\]" "$work/w1.log" && fail "w1 dumped or loaded task1 again instead of syncing on"
t1=$(tokens)
if ! [[ "$t1" =~ ^[1-9][0-9]*$ ]] || [ "$t1" -le "$t2" ]; then
  fail "w1's checkpoint rows carry tokens '$t1', not one above w2's $t2"
fi
log "w1 syncs task1 from the checkpoint at token $t1 (w2 still frozen)"

# ---- w2 thawed 14 s after the freeze ----
while [ $((SECONDS - frozen)) -lt 14 ]; do sleep 0.1; done
n2=$(lines "$work/w2.log")
kill -CONT "${pid[w2]}"
log "w2 thawed (SIGCONT) $((SECONDS - frozen)) s after the freeze"
# what w2 did once thawed: its next commit refused by the fence (36016), or its subtasks paused by
# its own keepalive rule (15041) before it tried one; either way its subtask ends
fenced_re="fenced off: a newer worker \(token $t1\)"
for _ in $(seq 1 150); do
  tail -n +$((n2 + 1)) "$work/w2.log" | grep -qE "$fenced_re|\[code 15041\]|15041" && break
  sleep 0.1
done
after=$(tail -n +$((n2 + 1)) "$work/w2.log")
refused=$(grep -cE "$fenced_re" <<<"$after" || true)
paused=$(grep -cE "15041" <<<"$after" || true)
[ "$refused" -gt 0 ] || [ "$paused" -gt 0 ] ||
  fail "w2 neither met the fence (36016) nor paused by its keepalive rule (15041) after SIGCONT"
if [ "$refused" -gt 0 ]; then
  grep -q 36016 <<<"$after" || fail "w2's fence error is not 36016"
fi
first=$(grep -oE "$fenced_re|15041" <<<"$after" | head -1)
[ "$first" = 15041 ] && first="paused by its keepalive rule (15041)" || first="refused by the fence (36016)"
log "w2 after SIGCONT: first $first; $refused line(s) with 36016, $paused with 15041"

# ---- w2 does not take the source back; w1 goes on at its token ----
wait_for 20 "w2 did not register again free: $(members 1 | tr '\n' ';')" members_are 1 "w1 bound source1
w2 free "
for _ in $(seq 1 8); do
  members_are 1 "w1 bound source1
w2 free " || fail "the binding moved after w2 came back: $(members 1 | tr '\n' ';')"
  [ "$(tokens)" = "$t1" ] || fail "a checkpoint row left w1's token $t1 after w2 came back: $(tokens)"
  sleep 0.2
done
[ "$(task_worker task1 source1 1)" = w1 ] || fail "task1 does not run on w1"
ctl_jq 1 '[.sources[].subTaskStatus[] | select(.worker == "w2")] | length == 0' query-status task1 \
  >/dev/null || fail "w2 still reports a subtask of task1"
before=$(checkpoint)
sleep 1
[ "$(checkpoint)" != "$before" ] || fail "w1's checkpoint does not move ($before)"
log "w1 keeps source1 and syncs at token $t1 (checkpoint $before -> $(checkpoint)); w2 free"

# no checkpoint row committed under an older token after w1's raise of that row
late=$(tgt -N -B -e "SELECT COUNT(*), GROUP_CONCAT(DISTINCT a.r), GROUP_CONCAT(DISTINCT a.fence),
  GROUP_CONCAT(DISTINCT a.conn) FROM \`$audit\`.cp a JOIN (SELECT r, MIN(id) AS raised
  FROM \`$audit\`.cp WHERE fence = $t1 GROUP BY r) b ON a.r = b.r AND a.id > b.raised
  WHERE a.fence < $t1")
[ "$(cut -f1 <<<"$late")" = 0 ] ||
  fail "checkpoint rows committed after w1's raise under an older token (count, rows, tokens, connections): $late"
rows=$(tgt -N -B -e "SELECT COUNT(DISTINCT r) FROM \`$audit\`.cp WHERE fence = $t1")
[ "$rows" -gt 0 ] || fail "the audit saw no raise of w1"
log "the audit: $(tgt -N -B -e "SELECT COUNT(*) FROM \`$audit\`.cp WHERE fence = $t2") commits at w2's token; $rows row(s) raised to $t1, none moved under an older token after"

# ---- the writes stop: the target equals the source, no duplicate key ----
stop_workload
for _ in $(seq 1 60); do
  bash scripts/checksum.sh "$db" >"$work/checksum.out" 2>&1 && break
  sleep 1
done
bash scripts/checksum.sh "$db" >"$work/checksum.out" 2>&1 ||
  fail "the target differs from the source: $(cat "$work/checksum.out")"
no_dup "$work"/w*.log
[ "$(tokens)" = "$t1" ] || fail "the checkpoint rows carry $(tokens) at the end, not w1's $t1"
grep -q "\[code [0-9]*\]" "$work/w1.log" && fail "w1 logged an error: $(grep -m1 "\[code" "$work/w1.log")"
for n in w1 w2 m1; do stop_proc "$n"; done
log "passed: target equals source at checkpoint $(checkpoint), no duplicate key"
tgt -e "DROP DATABASE IF EXISTS \`$db\`; DROP DATABASE IF EXISTS \`$meta\`; DROP DATABASE IF EXISTS \`$audit\`"
src -e "DROP DATABASE IF EXISTS \`$db\`"

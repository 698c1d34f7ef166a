#!/usr/bin/env bash
# Fencing (issue 11): two workers running one source's sync subtask, the first one stale. Worker A
# (`dmhost run --fencing-token 1`, mode all) syncs under a write workload; a target session locks
# t_pk so that one of A's workers waits inside its batch transaction (its checkpoint row already
# moved, locked by it); A is frozen (SIGSTOP) right there, as a paused VM would be. Worker B (token
# 2, its own work folder, as another machine) starts: its locking read of the checkpoint rows must
# wait for A's open transaction (asserted in the server's lock waits), then B raises the rows to
# its token and syncs on. A is thawed (SIGCONT): it must stop with DM_ERR_FENCED (36016) and commit
# nothing more; a worker C with the lower token 1 must not even start. After the workload stops B
# catches up: the target equals the source table by table, no run logs a duplicate key.
# Then the workers' own transactions: E (token 3) syncs, the worker rows alone are raised to 4, and
# E's next batch is refused at its workers' first statement (every part rolled back: F, token 4,
# goes on from the checkpoint without a duplicate key, and the target equals the source). Last, a
# run with token 0 (no fencing) syncs a few more transactions with the target's general log on:
# none of its statements moves or checks a fence (the unfenced path is the one of before).
#   fence_sync.sh <dmhost> <plugin dir> <source dir>
#
# KEEP=1 keeps the work folder. Servers from `scripts/mariadb.sh env`.
set -euo pipefail
dmhost=$1 plugins=$2 src_dir=$3
cd "$src_dir"
name=fencesync db=crash_fencesync meta=crash_fencesync_meta
cp_table="\`$meta\`.\`${name}_syncer_checkpoint\`"
work=$(mktemp -d /tmp/dmh-$name-XXXXXX)
t0=$SECONDS tag=fence_sync
. tests/crash/lib.sh
. tests/crash/fence_lib.sh
wl_pids=() glog="" glog_was=""
# the general log is the target's, global: put back off and at its old file (a file in $work,
# removed below, left as general_log_file made the next test's `SET GLOBAL general_log = ON` fail)
glog_restore() {
  tgt -e "SET GLOBAL general_log = 0" 2>/dev/null || true
  [ -n "$glog_was" ] && tgt -e "SET GLOBAL general_log_file = '$glog_was'" 2>/dev/null || true
}
cleanup() {
  stop_workload
  [ -n "$glog" ] && glog_restore
  fence_cleanup
}
trap cleanup EXIT
wait_log() { # file seconds regex [pid]
  local i
  for i in $(seq 1 $(($2 * 20))); do
    grep -qE "$3" "$1" 2>/dev/null && return 0
    [ -n "${4:-}" ] && ! proc_alive "$4" && return 1
    sleep 0.05
  done
  return 1
}
# ---- the source: tables, fill, the workload ----
sed "s/sync_wl/$db/g" tests/sql/sync-workload.sql | src
src "$db" -e "CALL sync_fill(3000)"
tgt -e "DROP DATABASE IF EXISTS \`$db\`; DROP DATABASE IF EXISTS \`$meta\`"
crash_source_cfg fence-src
# auto-resume on: a stale worker's resumable errors (its binlog stream taken over by the new
# worker's, which has the same replica server_id) are retried, and the retry meets the fence
crash_task_cfg "$name" "$meta" "$db" fence-src >"$work/task.cfg" <<CFG
supervisor = { auto-resume = { enable = true; backoff-initial = 0.2; backoff-max = 0.5; }; };
dump = { threads = 2; };
load = { pool-size = 2; on-duplicate = "error"; };
sync = { worker-count = 4; batch = 100; batch-ms = 50; status-interval = 200; };
CFG
start_workload() {
  rm -f "$work/stop"
  for c in 1 2; do workload_client "$db" 5 $((c * 1000003 + RANDOM)); done
}
# waits until the checkpoint reaches the source's position, while $1 runs
catch_up() { # pid
  local want got=""
  want=$(master)
  for _ in $(seq 1 600); do
    got=$(checkpoint)
    [ "$got" = "$want" ] && return 0
    proc_alive "$1" || fail "the run exited before catching up"
    sleep 0.1
  done
  fail "the checkpoint stands at $got, the source at $want"
}
stop_run() { # pid log: SIGTERM, exit 0, nothing wrong in its log
  kill -TERM "$1"
  local rc=0
  wait_exit "$1" 30 || rc=$?
  [ "$rc" -eq 0 ] || fail "$(basename "$2" .log) exited $rc after SIGTERM"
  no_dup "$2"
  grep -qE "\[code [0-9]+\]|dmhost: error" "$2" && fail "$(basename "$2" .log) logged an error"
  return 0
}
start_workload

# ---- A (token 1): dump, load, then sync under the workload ----
start_run a 1
a=$run_pid
wait_log "$work/a.log" 60 "sync: reading" "$a" || fail "A did not reach sync"
sleep 1
tokens=$(tgt -N -B -e "SELECT GROUP_CONCAT(DISTINCT fence) FROM $cp_table")
[ "$tokens" = 1 ] || fail "A's checkpoint rows carry tokens '$tokens', not 1"
log "A syncs (checkpoint $(checkpoint), rows at token 1)"

# a target session holds every row of t_pk: a worker of A that touches one waits in its batch
lock_session "$db" "BEGIN; SELECT COUNT(*) FROM t_pk FOR UPDATE; DO SLEEP(60); ROLLBACK"
wait_lock_wait "trx_query LIKE '%t_pk%'" "$a" || fail "no worker of A waited on the locked rows"
kill -STOP "$a"
log "A frozen (SIGSTOP) with $lock_waits worker transaction(s) waiting on t_pk (lock session $lock_id)"

# ---- B (token 2): its raise waits for A's open transaction, then it owns the rows ----
start_run b 2
b=$run_pid
wait_lock_wait "trx_query LIKE '%SELECT \`cp_table\`%' OR trx_query LIKE '%SET \`fence\` = 2%'" "$b" ||
  fail "B's read of the checkpoint rows did not wait for A's transaction"
grep -q "sync: reading" "$work/b.log" && fail "B read its checkpoint while A's transaction was open"
log "B's locking read of the checkpoint waits for A's open transaction; releasing the lock"
end_lock_session
wait_log "$work/b.log" 30 "sync: reading" "$b" || fail "B did not start syncing"
tokens=$(tgt -N -B -e "SELECT GROUP_CONCAT(DISTINCT fence) FROM $cp_table")
[ "$tokens" = 2 ] || fail "B's checkpoint rows carry tokens '$tokens', not 2"
before=$(checkpoint)
for _ in $(seq 1 100); do
  [ "$(checkpoint)" != "$before" ] && break
  sleep 0.1
done
[ "$(checkpoint)" != "$before" ] || fail "B's checkpoint does not move"
log "B syncs at token 2 (checkpoint $before -> $(checkpoint))"

# ---- A thawed: fenced off, nothing more committed ----
kill -CONT "$a"
rc=0
wait_exit "$a" 30 || rc=$?
[ "$rc" -ne 255 ] || fail "A still runs 30 s after SIGCONT"
[ "$rc" -eq 1 ] || fail "A exited $rc, not 1"
grep -q "fenced off: a newer worker (token 2)" "$work/a.log" || fail "A did not stop fenced off"
grep -q '"ErrCode": *36016\|36016' "$work/a.log" || fail "A's error is not 36016"
no_dup "$work/a.log"
# where the fence stopped it: a commit of the batch it held (a worker's part or the global row),
# or, after a resumable error (its binlog stream taken over), the raise at its restart
log "A stopped after $(grep -c "auto-resuming" "$work/a.log" || true) auto-resume(s):" \
  "$(grep -o 'sync ([^)]*): fenced off: a newer worker (token 2)' "$work/a.log" | head -1)"

# ---- C (token 1) cannot start on rows at token 2 ----
start_run c 1
c=$run_pid
rc=0
wait_exit "$c" 30 || rc=$?
[ "$rc" -eq 1 ] || fail "C (token 1) exited $rc, not 1"
grep -q "fenced off: a newer worker (token 2)" "$work/c.log" || fail "C was not refused by the fence"
grep -q "sync: reading" "$work/c.log" && fail "C read the binlog"
log "C (token 1) refused at start"

# ---- the workload stops; B catches up ----
sleep 1
stop_workload
catch_up "$b"
stop_run "$b" "$work/b.log"
bash scripts/checksum.sh "$db" || fail "target differs from source"
log "B caught up at $(checkpoint); target equals source"

# ---- a worker's batch transaction refused: E (token 3) syncs; the worker rows alone are raised
# to 4 by hand (a successor's raise that reached them first), so E's next batch meets the fence
# at its workers' first statement, not at the global row: every part rolls back ----
start_workload
start_run e 3
e=$run_pid
wait_log "$work/e.log" 30 "sync: reading" "$e" || fail "E (token 3) did not start syncing"
sleep 0.5
tgt -e "UPDATE $cp_table SET fence = 4 WHERE cp_table <> ''"
rc=0
wait_exit "$e" 30 || rc=$?
[ "$rc" -eq 1 ] || fail "E exited $rc, not 1, after its worker rows were raised"
grep -qE "sync \(moving worker [0-9]+'s row\): fenced off: a newer worker \(token 4\)" \
  "$work/e.log" || fail "E was not fenced off at a worker's row"
no_dup "$work/e.log"
start_run f 4
f=$run_pid
wait_log "$work/f.log" 30 "sync: reading" "$f" || fail "F (token 4) did not start syncing"
sleep 1
stop_workload
catch_up "$f"
stop_run "$f" "$work/f.log"
bash scripts/checksum.sh "$db" >/dev/null || fail "target differs from source after E and F"
log "E (token 3) stopped: $(grep -oE "sync \(moving worker [0-9]+'s row\)" "$work/e.log" | head -1)" \
  "fenced off; F (token 4) went on from the checkpoint; target equals source"

# ---- token 0: no fencing, no statement about it ----
glog_was=$(tgt -N -e "SELECT @@global.general_log_file")
[ -n "$glog_was" ] || fail "could not read the target's general_log_file"
glog=$work/general.log
tgt -e "SET GLOBAL general_log_file = '$glog'; SET GLOBAL general_log = 1"
start_run d 0
d=$run_pid
wait_log "$work/d.log" 30 "sync: reading" "$d" || fail "D (token 0) did not start syncing"
src "$db" -e "CALL workload(20, 4242)"
catch_up "$d"
stop_run "$d" "$work/d.log"
glog_restore
updates=$(grep -c "_syncer_checkpoint" "$glog" || true)
[ "$updates" -gt 0 ] || fail "the general log holds no checkpoint statement of D"
fenced='`fence` (=|<)|@dmhost_fence'
grep -qE "$fenced" "$glog" && fail "D (token 0) sent a fencing statement: $(grep -m1 -E "$fenced" "$glog")"
bash scripts/checksum.sh "$db" >/dev/null || fail "target differs from source after D"
log "D (token 0): $updates checkpoint statements, none names the fence; target equals source"
tgt -e "DROP DATABASE IF EXISTS \`$db\`; DROP DATABASE IF EXISTS \`$meta\`"
src -e "DROP DATABASE IF EXISTS \`$db\`"
log "passed"

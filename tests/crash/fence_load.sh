#!/usr/bin/env bash
# Fencing of the load (issue 11): a dump is made once; worker A (`dmhost run --fencing-token 1`,
# mode load from that folder, on-duplicate "error") loads it; a target session holds an
# uncommitted row with the last id of t_pk, so A's worker on t_pk waits inside a batch transaction
# (earlier batches committed); A is frozen (SIGSTOP) there and the session ends. Worker B (token 2)
# raises the checkpoint rows and loads from their offsets: it waits for A's open transactions, in
# its raise or in its inserts (asserted). A is thawed (SIGCONT): its batch's checkpoint update is
# refused, the batch rolls back, A stops with DM_ERR_FENCED (36016). B finishes with no duplicate key (on-duplicate
# "error": a row A committed past the checkpoint would be one), and the target equals the source.
#
#   fence_load.sh <dmhost> <plugin dir> <source dir>
#
# KEEP=1 keeps the work folder. Servers from `scripts/mariadb.sh env`.
set -euo pipefail
dmhost=$1 plugins=$2 src_dir=$3
cd "$src_dir"
name=fenceload db=crash_fenceload meta=crash_fenceload_meta
cp_table="\`$meta\`.\`${name}_loader_checkpoint\`"
work=$(mktemp -d /tmp/dmh-$name-XXXXXX)
t0=$SECONDS tag=fence_load
. tests/crash/lib.sh
. tests/crash/fence_lib.sh
trap fence_cleanup EXIT

sed "s/sync_wl/$db/g" tests/sql/sync-workload.sql | src
src "$db" -e "CALL sync_fill(20000)"
tgt -e "DROP DATABASE IF EXISTS \`$db\`; DROP DATABASE IF EXISTS \`$meta\`"
crash_source_cfg fence-load-src
crash_task_cfg "$name" "$meta" "$db" fence-load-src >"$work/dump.cfg" <<CFG
CFG
sed -i 's/task-mode = "all"/task-mode = "dump"/' "$work/dump.cfg"
"$dmhost" run --source "$work/source.cfg" --task "$work/dump.cfg" --work-dir "$work/w-dump" \
  --plugin-dir "$plugins" --quiet >"$work/dump.log" 2>&1 || fail "the dump failed"
dump_dir=$work/w-dump/tasks/$name/fence-load-src/dump
[ -f "$dump_dir/metadata" ] || fail "no dump in $dump_dir"
crash_task_cfg "$name" "$meta" "$db" fence-load-src >"$work/task.cfg" <<CFG
load = { dir = "$dump_dir"; pool-size = 2; on-duplicate = "error"; batch-bytes = 16384; };
CFG
sed -i 's/task-mode = "all"/task-mode = "load"/' "$work/task.cfg"
# t_pk made on the target as the source has it, and its last id held by an open transaction
last=$(src -N -B "$db" -e "SELECT MAX(id) FROM t_pk")
tgt -e "CREATE DATABASE \`$db\`"
src -N -B "$db" -e "SHOW CREATE TABLE t_pk" | cut -f2 | sed 's/\\n/\n/g' | tgt "$db"
lock_session "$db" "BEGIN; INSERT INTO t_pk (id) VALUES ($last); DO SLEEP(60); ROLLBACK"

# ---- A (token 1) loads until its t_pk worker waits on the held id ----
start_run a 1
a=$run_pid
wait_lock_wait "trx_query LIKE '%INTO \`t_pk\`%'" "$a" || fail "A's worker never waited on the held id of t_pk"
done_bytes=$(tgt -N -B -e "SELECT SUM(\`offset\`) FROM $cp_table WHERE filename LIKE '%t_pk%'")
[ "${done_bytes:-0}" -gt 0 ] || fail "A committed nothing of t_pk before the held id"
kill -STOP "$a"
end_lock_session
log "A frozen (SIGSTOP) inside a batch of t_pk ($done_bytes bytes of it committed); lock released"

# ---- B (token 2): raises the rows, then waits for A's open transaction ----
start_run b 2
b=$run_pid
# B waits for A: in its raise, when A's other worker was frozen between its checkpoint update and
# its COMMIT (it holds that row), else in its inserts into t_pk after the raise
wait_lock_wait "trx_query LIKE '%INTO \`t_pk\`%' OR trx_query LIKE '%SET \`fence\` = 2%'" "$b" ||
  fail "B never waited on A's open transaction"
log "B waits for A's open transaction ($(tgt -N -B -e "SELECT IF(COUNT(*), 'in its raise',
  'on t_pk after its raise') FROM information_schema.INNODB_TRX WHERE trx_state = 'LOCK WAIT'
  AND trx_query LIKE '%SET \`fence\` = 2%'"))"

# ---- A thawed: its batch is refused ----
kill -CONT "$a"
rc=0
wait_exit "$a" 30 || rc=$?
[ "$rc" -eq 1 ] || fail "A exited $rc, not 1"
# fenced at a checkpoint update, or (a statement of its batch meeting a row B loaded meanwhile)
# reported as fenced after its rollback
grep -qE "load( \(moving the row of [^)]*\))?: fenced off: a newer worker \(token 2\)" "$work/a.log" ||
  fail "A did not stop fenced off"
tokens=$(tgt -N -B -e "SELECT GROUP_CONCAT(DISTINCT fence) FROM $cp_table")
[ "$tokens" = 2 ] || fail "the checkpoint rows carry tokens '$tokens', not 2"
log "A stopped: $(grep -oE "load( \(moving the row of [^)]*\))?: fenced off" "$work/a.log" | head -1)"
rc=0
wait_exit "$b" 60 || rc=$?
[ "$rc" -eq 0 ] || fail "B exited $rc"
grep -q "load: finished" "$work/b.log" || fail "B did not finish the load"
no_dup "$work/b.log"
bash scripts/checksum.sh "$db" || fail "target differs from source"
log "B finished the load; target equals source"
tgt -e "DROP DATABASE IF EXISTS \`$db\`; DROP DATABASE IF EXISTS \`$meta\`"
src -e "DROP DATABASE IF EXISTS \`$db\`"
log "passed"

#!/usr/bin/env bash
# Online DDL with pt-online-schema-change (issue 22; docs/shard.md, "Online DDL"): a mode-all task
# on a table of $ROWS rows (500000 by default) with writers running, then
# `pt-online-schema-change --alter "ADD COLUMN ..." --execute` against the source. A --plugin hook
# holds the tool right before its cut-over (RENAME TABLE t TO _t_old, _t_new TO t): there, once
# the target holds the ghost's record in `<meta>`.`<task>_onlineddl`, `dmhost run` is killed with
# -9, the record must still be there, and a new run goes on. Then the tool swaps, and that run is
# killed with -9 inside the cut-over (the ALTER on the target, the checkpoint not yet past it); a
# third run replays it. At the end:
#   - the target's t has the new column and every row (scripts/checksum.sh against the source),
#   - no _t_new / _t_old and no trigger on the target, no record left,
#   - the ALTER was recorded once, and run once: the replay's attempt is answered "already done".
# Without online DDL the cut-over is skipped and the rows after it no longer fit the target.
# With META=NO_LOG the source writes no column names (binlog_row_metadata, restored at the end):
# the rows after the cut-over decode only if the schema tracker followed the ghost's ALTER.
#
#   online_ptosc.sh <dmhost> <plugin dir> <source dir>    ROWS=N (default 500000), META=NO_LOG
set -euo pipefail
dmhost=$1 plugins=$2 src_dir=$3
rows=${ROWS:-500000}
cd "$src_dir"
name=ptosc db=shard_ptosc meta=shard_ptosc_meta
cp_table="\`$meta\`.\`${name}_syncer_checkpoint\`"
work=$(mktemp -d /tmp/dmh-ptosc-XXXXXX)
t0=$SECONDS tag="online pt-osc"
. tests/crash/lib.sh
pid="" wl_pid="" osc_pid="" lock_pid="" cur_log=""
cleanup() {
  touch "$work/stop" "$work/go"
  [ -n "$wl_pid" ] && wait "$wl_pid" 2>/dev/null
  [ -n "$osc_pid" ] && kill "$osc_pid" 2>/dev/null && wait "$osc_pid" 2>/dev/null
  [ -n "$lock_pid" ] && kill "$lock_pid" 2>/dev/null && wait "$lock_pid" 2>/dev/null
  [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  [ -n "${META:-}" ] && { src -e "SET GLOBAL binlog_row_metadata = FULL" || true; }
  if [ "${KEEP:-}" ]; then echo "work folder kept: $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM
fail() {
  echo "$tag: FAILED: $*" >&2
  [ -n "$cur_log" ] && [ -f "$cur_log" ] && { echo "--- end of $cur_log:" >&2; tail -n 25 "$cur_log" >&2; }
  [ -f "$work/osc.log" ] && { echo "--- end of osc.log:" >&2; tail -n 15 "$work/osc.log" >&2; }
  exit 1
}
command -v pt-online-schema-change >/dev/null || fail "pt-online-schema-change is not installed (scripts/deps.sh: percona-toolkit)"
wait_for() { # seconds command...: until the command succeeds
  local end=$((SECONDS + $1))
  shift
  until "$@"; do
    [ $SECONDS -lt $end ] || return 1
    sleep 0.1
  done
}
check_log() {
  local errs
  errs=$(grep -E "\[ERROR\]|\[code [0-9]+\]|dmhost: error" "$1" || true)
  [ -z "$errs" ] || fail "$(basename "$1") logged an error: $(head -3 <<<"$errs")"
}
tgt_q() { tgt -N -B -e "$1" 2>/dev/null || true; }
records() { tgt_q "SELECT COUNT(*) FROM \`$meta\`.\`${name}_onlineddl\` WHERE ghost_table = '_t_new'"; }
has_records() { [ "$(records)" = "$1" ]; }
at_checkpoint() { pos_at_or_past "$(checkpoint)" "$1"; }

# ---- the source: t with $rows rows, a procedure the writers call ----
[ -n "${META:-}" ] && src -e "SET GLOBAL binlog_row_metadata = $META"
src -e "DROP DATABASE IF EXISTS \`$db\`; CREATE DATABASE \`$db\`"
tgt -e "DROP DATABASE IF EXISTS \`$db\`; DROP DATABASE IF EXISTS \`$meta\`"
src "$db" -e "
CREATE TABLE t (id INT PRIMARY KEY, a INT NOT NULL, b VARCHAR(40), c DATETIME(3));
INSERT INTO t SELECT seq, seq % 1000, CONCAT('row ', seq), '2026-01-01' FROM mysql.seq_1_to_$rows;
DELIMITER //
CREATE PROCEDURE w(i INT)
BEGIN
  START TRANSACTION;
  INSERT INTO t (id, a, b, c) VALUES ($rows + i, i, CONCAT('new ', i), NOW(3));
  UPDATE t SET a = a + 1, b = CONCAT('upd ', i) WHERE id = 1 + (i * 7919) % $rows;
  DELETE FROM t WHERE id = 1 + (i * 104729) % $rows;
  COMMIT;
END//
DELIMITER ;"

crash_source_cfg ptosc-src
crash_task_cfg "$name" "$meta" "$db" ptosc-src >"$work/task.cfg" <<CFG
supervisor = { auto-resume = { enable = false; }; };
sync = { worker-count = 4; batch-ms = 20; status-interval = 200; };
CFG
run_no=0
start_run() {
  run_no=$((run_no + 1))
  cur_log=$work/run-$run_no.log
  "$dmhost" run --source "$work/source.cfg" --task "$work/task.cfg" --work-dir "$work/w" \
    --plugin-dir "$plugins" --log-level info >"$cur_log" 2>&1 &
  pid=$!
  wait_for 300 grep -q "sync: reading" "$cur_log" || fail "run $run_no: the sync did not start"
}
start_run
log "run 1: $rows rows dumped and loaded, sync reading"

# ---- the writers ----
(
  i=1
  while [ ! -e "$work/stop" ]; do
    for k in 1 2 3 4 5; do echo "CALL w($((i + k)));"; done | src "$db" 2>>"$work/writer.err" || true
    i=$((i + 5))
    sleep 0.02
  done
) &
wl_pid=$!

# ---- pt-online-schema-change, held before its swap by a plugin until $work/go exists ----
cat >"$work/hold.pl" <<PERL
package pt_online_schema_change_plugin;
use strict;
sub new { my (\$class, %args) = @_; return bless { %args }, \$class; }
sub before_swap_tables {
  open(my \$f, '>', '$work/ready'); close(\$f);
  for (1 .. 6000) { last if -e '$work/go'; select(undef, undef, undef, 0.1); }
}
1;
PERL
pt-online-schema-change --alter "ADD COLUMN note VARCHAR(32) NOT NULL DEFAULT 'none'" --execute \
  --recursion-method none --plugin "$work/hold.pl" --chunk-time 0.2 --no-check-replication-filters \
  "D=$db,t=t,h=$DMH_SOURCE_HOST,P=$DMH_SOURCE_PORT,u=$DMH_SOURCE_USER${DMH_SOURCE_PASSWORD:+,p=$DMH_SOURCE_PASSWORD}" \
  >"$work/osc.log" 2>&1 &
osc_pid=$!
wait_for 600 test -e "$work/ready" || fail "pt-online-schema-change did not reach its swap"
log "pt-osc copied the table and waits before its swap"
# the precondition: the ALTER of the ghost is in the source's binlog before the swap
[ "$(src -N -B -e "SHOW CREATE TABLE \`$db\`._t_new" | grep -c '`note`')" = 1 ] ||
  fail "the ghost _t_new has no column note on the source"
wait_for 300 has_records 1 || fail "the target has no record of the ghost _t_new"
grep -qE "online DDL at .*ALTER TABLE of ghost table \`$db\`.\`_t_new\` recorded" "$cur_log" ||
  fail "the sync did not log the recorded ALTER"
[ "$(tgt_q "SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = '$db' AND TABLE_NAME = 't' AND COLUMN_NAME = 'note'")" = 0 ] ||
  fail "the ALTER ran on the target before the cut-over"

# ---- kill -9 between the ALTER and the cut-over; the record survives ----
kill -9 "$pid" || fail "run 1 was not running when killed"
wait "$pid" 2>/dev/null || true
pid=""
check_log "$cur_log"
[ "$(records)" = 1 ] || fail "the record of _t_new did not survive the kill"
log "killed run 1; the record is on the target"
sleep 0.5
start_run

# ---- kill -9 inside the cut-over: after the ALTER ran on the target, before the checkpoint
# transaction that deletes the record commits. A target session holds the record's row lock, so
# that transaction waits on its DELETE; once the ALTER is on the target, the run is killed and its
# waiting server thread too (the server would finish a dead client's statements), then the lock
# goes. The checkpoint still marks the RENAME as being applied and the record is there: the next
# run replays the cut-over, the target answers "duplicate column", counted as done. ----
tgt -e "START TRANSACTION; SELECT COUNT(*) FROM \`$meta\`.\`${name}_onlineddl\` FOR UPDATE; SELECT '$name-lock', SLEEP(300)" \
  >/dev/null 2>&1 &
lock_pid=$!
thread() { tgt_q "SELECT ID FROM information_schema.PROCESSLIST WHERE ID <> CONNECTION_ID() AND INFO LIKE '$1' LIMIT 1"; }
lock_held() { [ -n "$(thread "SELECT _$name-lock_%")" ]; }
wait_for 30 lock_held || fail "the lock on the record did not take"
touch "$work/go"
has_note() { [ "$(tgt_q "SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = '$db' AND TABLE_NAME = 't' AND COLUMN_NAME = 'note'")" = 1 ]; }
waiting() { [ -n "$(thread "%DELETE FROM%$meta%onlineddl%")" ]; }
wait_for 300 has_note || fail "the cut-over's ALTER did not reach the target"
wait_for 30 waiting || fail "the cut-over's checkpoint transaction is not waiting on the record"
kill -9 "$pid" || fail "run 2 was not running when killed"
wait "$pid" 2>/dev/null || true
pid=""
check_log "$cur_log"
tgt -e "KILL $(thread "%DELETE FROM%$meta%onlineddl%")" || fail "cannot end the dead run's transaction"
tgt -e "KILL $(thread "SELECT _$name-lock_%")" || true
wait "$lock_pid" 2>/dev/null || true
[ "$(records)" = 1 ] || fail "the record of _t_new is gone though its cut-over did not commit"
mark=$(tgt_q "SELECT JSON_VALUE(table_info, '\$.ddl') FROM $cp_table WHERE is_global = 1")
[ -n "$mark" ] && [ "$mark" != null ] || fail "the checkpoint does not mark the cut-over as being applied"
log "killed run 2 inside the cut-over at $mark (ALTER on the target, record kept)"
start_run
rc=0
wait "$osc_pid" || rc=$?
osc_pid=""
[ "$rc" -eq 0 ] || fail "pt-online-schema-change exited $rc"
grep -q "Swapped original and new tables OK" "$work/osc.log" || fail "pt-osc did not swap the tables"
log "pt-osc swapped the tables and dropped the old one"
sleep 1

# ---- the end: writers stop, the sync catches up ----
touch "$work/stop"
wait "$wl_pid"
wl_pid=""
bad=$(writer_failures "$work/writer.err")
[ -z "$bad" ] || fail "a writer failed: $(echo "$bad" | head -3)"
want=$(master)
wait_for 300 at_checkpoint "$want" || fail "the sync did not catch up: checkpoint $(checkpoint), source $want"
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
pid=""
[ "$rc" -eq 0 ] || fail "the last run exited $rc after SIGTERM"
check_log "$cur_log"
log "caught up at $want; comparing"
bash scripts/checksum.sh "$db" || fail "target differs from source"
[ "$(tgt_q "SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = '$db' AND TABLE_NAME = 't' AND COLUMN_NAME = 'note'")" = 1 ] ||
  fail "the target's t has no column note"
[ "$(tgt_q "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = '$db' AND TABLE_NAME IN ('_t_new', '_t_old')")" = 0 ] ||
  fail "a tool's table is on the target"
[ "$(tgt_q "SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = '$db'")" = 0 ] ||
  fail "a trigger is on the target"
[ "$(records)" = 0 ] || fail "the record of _t_new is left after the cut-over"
recorded=$(cat "$work"/run-*.log | grep -cE "ALTER TABLE of ghost table \`$db\`.\`_t_new\` recorded" || true)
cutover=$(cat "$work"/run-*.log | grep -cE "cut-over of ghost table \`$db\`.\`_t_new\` to \`$db\`.\`t\`: its 1 recorded" || true)
# run 2's cut-over, and run 3's replay of it, which the target answered "already done"
[ "$recorded" = 1 ] && [ "$cutover" = 2 ] ||
  fail "the ALTER was recorded $recorded time(s) and its cut-over met $cutover time(s), not 1 and 2"
grep -qE "the DDL at $mark ran before the restart .*Duplicate column name 'note'.*counted as done" "$work/run-3.log" ||
  fail "run 3 did not count the replayed ALTER as done"
[ -z "${META:-}" ] || [ "$(src -N -B -e "SELECT @@global.binlog_row_metadata")" = "$META" ] ||
  fail "binlog_row_metadata changed under the test"
log "PASS ($rows rows${META:+, binlog_row_metadata $META})"

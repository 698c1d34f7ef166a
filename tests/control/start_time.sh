#!/usr/bin/env bash
# DM's `start-task --start-time` (issue 23) against the real servers: an incremental task starts
# its sync at the first transaction that began at or after the time, found on the source.
#  1. the source's table st_e2e.t gets rows 1-3, the binlog is rotated, the time T is taken (the
#     source's clock, past the rows' second), rows 4-6 follow; the target has the empty table;
#  2. refused, nothing kept: a time after the last transaction (11013, naming the binlog's end), a
#     time of no DM form (11013), a task-mode all task (its sync starts where its dump ends);
#  3. start-task --start-time T: rows 4-6 reach the target, 1-3 never (they are before T), a
#     row written later arrives; the answer names the position;
#  4. restarted (SIGTERM, serve again): the sync goes on from its checkpoint, not from T again
#     (no row twice: the target holds exactly 4-8); the position is kept in state.json.
#
#   start_time.sh <dmhost> <dmctl> <plugin dir> <source dir>
set -euo pipefail
dmhost=$1 dmctl=$2 plugins=$3 src_dir=$4
cd "$src_dir"
tag=start_time db=st_e2e meta=st_e2e_meta
work=$(mktemp -d /tmp/dmh-start-time-XXXXXX)
t0=$SECONDS
. tests/crash/lib.sh
serve_begin
ctl() { "$dmctl" --state-dir "$work/state" --timeout 120 "$@"; }
ids() { tgt -N -B -e "SELECT GROUP_CONCAT(id ORDER BY id) FROM \`$db\`.t" 2>/dev/null; }
ids_are() { [ "$(ids)" = "$1" ]; }

# ---- 1. the rows before and after T ----
rows_around_time "$db" "$meta"
crash_source_cfg st-src
crash_task_cfg st "$meta" "$db" st-src >"$work/task-st.cfg" <<'CFG'
supervisor = { auto-resume = { enable = false; }; };
sync = { batch-ms = 50; };
CFG
sed 's/task-mode = "all"/task-mode = "incremental"/' "$work/task-st.cfg" >"$work/task.cfg"
crash_task_cfg sta "$meta" "$db" st-src >"$work/task-all.cfg" </dev/null
serve_up
ctl operate-source create "$work/source.cfg" >/dev/null || fail "operate-source create"
log "source rows 1-3, rotate, T = $T (source time), rows 4-6"

# ---- 2. refusals ----
late=$(src -N -B -e "SELECT DATE_FORMAT(NOW() + INTERVAL 1 HOUR, '%Y-%m-%d %H:%i:%s')")
out=$(ctl start-task --start-time "$late" "$work/task.cfg" 2>&1) && fail "a time after the last transaction was taken: $out"
grep -q '"ErrCode": *11013' <<<"$out" && grep -q "has no transaction that began then or later" <<<"$out" ||
  fail "a time after the last transaction not refused with 11013: $out"
out=$(ctl start-task --start-time "yesterday" "$work/task.cfg" 2>&1) && fail "start-time 'yesterday' was taken: $out"
grep -q '"ErrCode": *11013' <<<"$out" || fail "start-time 'yesterday' not refused with 11013: $out"
out=$(ctl start-task --start-time "$T" "$work/task-all.cfg" 2>&1) && fail "a task-mode all task took --start-time: $out"
grep -q "use task-mode incremental" <<<"$out" || fail "task-mode all not refused naming why: $out"
out=$(ctl query-status 2>&1)
grep -q '"taskName"' <<<"$out" && fail "a refused start-task left a task: $out"
log "refused: a time after the binlog's end, a time of no DM form, a task-mode all task; no task kept"

# ---- 3. from T ----
ctl start-task --start-time "$T" "$work/task.cfg" >"$work/start.json" || fail "start-task --start-time: $(cat "$work/start.json")"
grep -q "source st-src's sync starts at" "$work/start.json" || fail "the answer names no position: $(cat "$work/start.json")"
wait_for 60 "the target did not come to hold rows 4,5,6" ids_are "4,5,6"
[ "$(ids)" = "4,5,6" ] || fail "the target holds $(ids)"
src "$db" -e "INSERT INTO t VALUES (7, 'later')"
wait_for 60 "the row written later did not arrive" ids_are "4,5,6,7"
log "started at T: rows 4-7 on the target, 1-3 not ($(jq -r .msg "$work/start.json"))"

# ---- 4. a restart goes on from the checkpoint ----
grep -q '"startPosition"' "$work/state/state.json" || fail "state.json keeps no start position"
kill -TERM "$pid"
wait "$pid" || fail "dmhost serve exited $? after SIGTERM"
pid=""
serve_up
src "$db" -e "INSERT INTO t VALUES (8, 'restarted')"
wait_for 60 "after the restart the target does not hold 4-8" ids_are "4,5,6,7,8"
ctl stop-task st >/dev/null || fail "stop-task"
log "restarted: on from the checkpoint, rows 4-8 once each"
log "PASSED"

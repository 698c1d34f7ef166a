#!/usr/bin/env bash
# A task's life with DM's options (issue 23: DM's OpenAPI create, start and delete of a task), end
# to end against the real servers: `dmhost serve` with our own units, driven by dmctl and by raw
# requests on the socket (the arguments dmctl has no flag for, as the HTTP API sends them). A
# mode-all task `tl` copies database tl_e2e (table t1, 200 rows).
#  1. start-task stage "Stopped": prechecked and kept, query-status says New, nothing reaches the
#     target (no database, no checkpoint table), and so after a restart of the daemon (persisted
#     expected Paused);
#  2. resume-task starts it: the target equals the source (checksum); resume-task remove-meta of a
#     task that ran is refused;
#  3. stop-task force=false of the Running task: refused with DM's message, it still runs;
#     force=true stops and removes it;
#  4. start-task again (keep the meta): it resumes from its checkpoints: a row changed on the target
#     only keeps its value (no re-copy), rows written meanwhile arrive, the rest equals the source;
#  5. stop-task remove-meta: its meta-schema tables and tracker schemas are gone, another task's
#     (`tlx_...`, a foreign `_dmt_` schema) stay; started again it copies from scratch: the changed
#     row has the source's value again;
#  6. dmctl's stop-task stops a Running task (no force: DM's dmctl); dmctl start-task --remove-meta
#     starts from scratch too.
#
#   task_life.sh <dmhost> <dmctl> <plugin dir> <source dir>
set -euo pipefail
dmhost=$1 dmctl=$2 plugins=$3 src_dir=$4
cd "$src_dir"
tag=task_life db=tl_e2e meta=tl_e2e_meta
work=$(mktemp -d /tmp/dmh-task-life-XXXXXX)
t0=$SECONDS
. tests/crash/lib.sh
pid=""
cleanup() {
  local rc=$?
  [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
  if [ "${KEEP:-}" ]; then echo "$tag: work folder kept: $work"; else rm -rf "$work"; fi
  exit "${rc:-1}"
}
trap cleanup EXIT
fail() {
  echo "$tag: FAILED: $*" >&2
  [ -f "$work/last.json" ] && { echo "--- last answer:" >&2; cat "$work/last.json" >&2; }
  [ -f "$work/serve.log" ] && { echo "--- end of serve.log:" >&2; tail -n 30 "$work/serve.log" >&2; }
  exit 1
}
ctl() { "$dmctl" --state-dir "$work/state" --timeout 60 "$@"; }
# jq -e FILTER on the answer of dmctl ARGS...
ctl_jq() { # filter args...
  local f=$1
  shift
  ctl "$@" >"$work/last.json" || true
  jq -e "$f" "$work/last.json" >/dev/null
}
# jq -e FILTER on the answer of a raw request (JSON) on the daemon's socket
raw_jq() { # filter request
  python3 - "$work/state/dmhost.sock" "$2" >"$work/last.json" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(120)
s.connect(sys.argv[1])
s.sendall(sys.argv[2].encode() + b"\n")
s.shutdown(socket.SHUT_WR)
out = b""
while True:
    b = s.recv(65536)
    if not b:
        break
    out += b
sys.stdout.write(out.decode())
PY
  jq -e "$1" "$work/last.json" >/dev/null
}
stop_serve() {
  kill -TERM "$pid"
  wait "$pid" || fail "dmhost serve exited $? after SIGTERM"
  pid=""
}
stage_is() { ctl_jq ".sources[0].subTaskStatus[0].stage == \"$1\"" query-status tl 2>/dev/null; }
syncing() { ctl_jq '.sources[0].subTaskStatus[0].stage == "Running" and
  .sources[0].subTaskStatus[0].unit == "Sync"' query-status tl 2>/dev/null; }
tgt_v() { tgt -N -B -e "SELECT v FROM \`$db\`.t1 WHERE id = $1"; }
# the task's own tables in the meta-schema and its tracker schemas on the target
meta_count() { tgt -N -B -e "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = '$meta'
  AND TABLE_NAME IN ('tl_loader_checkpoint', 'tl_syncer_checkpoint', 'tl_onlineddl', 'tl_loader_keys',
  'tl_syncer_xa', 'tl_validator_checkpoint', 'tl_validator_pending_change',
  'tl_validator_error_change')"; }
schema_exists() { [ "$(tgt -N -B -e "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = '$1'")" = 1 ]; }
# the tracker's schemas of (tl, tl-src) (other tests leave theirs on the shared target): the
# prefix is the SDK's for that pair, pinned by test_sdk_task_meta
tracker_schemas() { tgt -N -B -e "SELECT COUNT(*) FROM information_schema.SCHEMATA
  WHERE LEFT(SCHEMA_NAME, 18) = '_dmt_2f135204e75d_'"; }

src -e "DROP DATABASE IF EXISTS \`$db\`; CREATE DATABASE \`$db\`;
        CREATE TABLE \`$db\`.t1 (id INT PRIMARY KEY, v VARCHAR(40));"
src "$db" -e "INSERT INTO t1 SELECT seq, CONCAT('v', seq) FROM seq_1_to_200;"
tgt -e "DROP DATABASE IF EXISTS \`$db\`; DROP DATABASE IF EXISTS \`$meta\`;
        DROP DATABASE IF EXISTS \`_dmt_000000000000_tlx\`;"
crash_source_cfg tl-src
crash_task_cfg tl "$meta" "$db" tl-src >"$work/task.cfg" <<'CFG'
supervisor = { auto-resume = { enable = false; }; };
sync = { batch-ms = 50; };
CFG

serve_up
ctl operate-source create "$work/source.cfg" >/dev/null || fail "operate-source create"

# 1. created stopped
raw_jq '.result and (.sources | length == 1) and .sources[0].result' \
  "{\"cmd\":\"start-task\",\"args\":{\"path\":\"$work/task.cfg\",\"stage\":\"Stopped\"}}" ||
  fail "start-task stage Stopped"
stage_is New || fail "a task created stopped is not New"
raw_jq '.result == false and (.msg | contains("\"Stopped\""))' \
  "{\"cmd\":\"start-task\",\"args\":{\"path\":\"$work/task.cfg\",\"stage\":\"Paused\"}}" ||
  fail "start-task stage Paused was not refused naming the stages taken"
stop_serve
serve_up
stage_is New || fail "a task created stopped is not New after a restart"
[ -d "$work/state/tasks/tl" ] || fail "the task created stopped is not kept in the state dir"
schema_exists "$db" && fail "the target has database $db though the task never started"
# (the precheck creates the meta-schema itself, checking it may: the task's tables are what counts)
[ "$(meta_count)" = 0 ] || fail "the target has the task's checkpoint tables though it never started"
log "created stopped: New (also after a restart), nothing on the target"

# 2. resume-task starts it
ctl_jq '.result' resume-task tl || fail "resume-task of the task created stopped"
wait_for 60 "the task does not reach its sync unit" syncing
wait_for 30 "the target does not equal the source" t1_same "$db"
[ "$(tgt -N -B -e "SELECT COUNT(*) FROM \`$db\`.t1")" = 200 ] || fail "the target has not 200 rows"
raw_jq '.result == false and .error.ErrCode == 13001 and (.msg | contains("has run"))' \
  '{"cmd":"resume-task","args":{"name":"tl","remove-meta":true}}' ||
  fail "resume-task remove-meta of a task that ran was not refused"
log "resumed: target = source"

# 3. stop without force refused, with force done
raw_jq '.result == false and .error.ErrCode == 13001 and
  (.msg | contains("task tl have running subtasks, please stop them or delete task with force."))' \
  '{"cmd":"stop-task","args":{"name":"tl","force":false}}' ||
  fail "stop-task force=false of a Running task was not refused with DM's message"
raw_jq '.result == false and (.msg | contains("must be true or false"))' \
  '{"cmd":"stop-task","args":{"name":"tl","force":"yes"}}' || fail "stop-task force=\"yes\" was not refused"
syncing || fail "a refused stop-task moved the task"
syncing || fail "a refused stop-task moved the task"
src "$db" -e "INSERT INTO t1 VALUES (201, 'before the stop')"
wait_for 30 "row 201 did not reach the target" t1_same "$db"
# (the string, as an HTTP query parameter gives it)
raw_jq '.result' '{"cmd":"stop-task","args":{"name":"tl","force":"true"}}' || fail "stop-task force=\"true\""
ctl_jq '.result == false' query-status tl || fail "the task is still there after stop-task force"
[ "$(meta_count)" -ge 2 ] || fail "precondition: the task's checkpoint tables are not on the target"
log "stop without force refused; with force stopped"

# 4. started again, keeping its meta: resumes from the checkpoints
tgt "$db" -e "UPDATE t1 SET v = 'target only' WHERE id = 7"
src "$db" -e "INSERT INTO t1 VALUES (202, 'while stopped'), (203, 'while stopped')"
ctl_jq '.result' start-task "$work/task.cfg" || fail "start-task after the stop"
wait_for 60 "the task does not reach its sync unit again" syncing
wait_for 30 "rows 202-203 did not reach the target" \
  test "$(tgt -N -B -e "SELECT COUNT(*) FROM \`$db\`.t1 WHERE id IN (202, 203)")" = 2
[ "$(tgt_v 7)" = "target only" ] || fail "row 7 was copied again: the task did not resume from its checkpoints"
[ "$(tgt -N -B -e "SELECT COUNT(*) FROM \`$db\`.t1")" = 203 ] || fail "the target has not 203 rows"
log "started again with its meta: resumed (row 7 untouched, new rows in)"

# 5. stop-task remove-meta: exactly the task's meta goes
tgt -e "CREATE TABLE \`$meta\`.tlx_syncer_checkpoint (id INT); CREATE DATABASE \`_dmt_000000000000_tlx\`;"
[ "$(tracker_schemas)" -ge 1 ] || fail "precondition: no tracker schema of the task on the target"
raw_jq '.result and .removedMeta.tables == 8' \
  '{"cmd":"stop-task","args":{"name":"tl","force":true,"remove-meta":true}}' ||
  fail "stop-task remove-meta"
[ "$(meta_count)" = 0 ] || fail "the task's meta-schema tables are still on the target"
[ "$(tracker_schemas)" = 0 ] || fail "the task's tracker schemas are still on the target"
tgt -e "SELECT 1 FROM \`$meta\`.tlx_syncer_checkpoint" >/dev/null || fail "another task's table was dropped"
schema_exists _dmt_000000000000_tlx || fail "another tracker's schema was dropped"
[ ! -e "$work/state/tasks/tl/tl-src" ] || fail "the task's work folder is still in the state dir"
ctl_jq '.result' start-task "$work/task.cfg" || fail "start-task after stop-task remove-meta"
wait_for 60 "the task does not reach its sync unit after remove-meta" syncing
wait_for 30 "the target does not equal the source after remove-meta" t1_same "$db"
[ "$(tgt_v 7)" = v7 ] || fail "row 7 was not copied again after remove-meta"
log "stop-task remove-meta: only its meta dropped, started again from scratch"

# 6. dmctl: stop-task of a Running task (no force, DM's dmctl), start-task --remove-meta
tgt "$db" -e "UPDATE t1 SET v = 'target only' WHERE id = 8"
ctl_jq '.result' stop-task tl || fail "dmctl stop-task of a Running task"
ctl_jq '.result and .removedMeta.tables == 8' start-task --remove-meta "$work/task.cfg" ||
  fail "dmctl start-task --remove-meta"
wait_for 60 "the task does not reach its sync unit after --remove-meta" syncing
wait_for 30 "the target does not equal the source after --remove-meta" t1_same "$db"
[ "$(tgt_v 8)" = v8 ] || fail "row 8 was not copied again after start-task --remove-meta"
log "dmctl stop-task, start-task --remove-meta: from scratch"

ctl_jq '.result' stop-task tl || fail "the last stop-task"
stop_serve
src -e "DROP DATABASE IF EXISTS \`$db\`"
tgt -e "DROP DATABASE IF EXISTS \`$db\`; DROP DATABASE IF EXISTS \`$meta\`;
        DROP DATABASE IF EXISTS \`_dmt_000000000000_tlx\`;"
log "ok"

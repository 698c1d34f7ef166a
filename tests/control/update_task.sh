#!/usr/bin/env bash
# update-task end to end (issue 13: the unit contract's update slot gets a caller), against the real
# servers: `dmhost serve` with our own units, driven by dmctl. A mode-incremental task syncs tables
# t1 and t2 of one database with a block-allow-list that allows t1 only.
#  1. update-task on the Running task is refused (DM_ERR_UPDATE_STAGE) and changes nothing;
#  2. paused: a file that changes meta-schema is refused (DM_ERR_UPDATE_IDENTITY) naming its line;
#  3. a file that allows both tables but gives the sync unit a wrong-typed setting: the sync's
#     update fails (DM_ERR_UPDATE_FAILED); one with a misspelt sync setting is refused naming its
#     line (DM_ERR_CONFIG_UNKNOWN inside); the old rules stay: after resume t1 goes on and t2 is still not
#     replicated;
#  4. a file that allows both tables and sets worker-count = 2: taken; after resume writes to both
#     tables reach the target (compared by checksum) and the sync runs with 2 workers;
#  5. the daemon restarted: it runs the new file (worker-count 2, t2 still replicated).
#
#   update_task.sh <dmhost> <dmctl> <plugin dir> <source dir>
set -euo pipefail
dmhost=$1 dmctl=$2 plugins=$3 src_dir=$4
cd "$src_dir"
tag=update_task db=upd_e2e meta=upd_e2e_meta
work=$(mktemp -d /tmp/dmh-update-XXXXXX)
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
  [ -f "$work/serve.log" ] && { echo "--- end of serve.log:" >&2; tail -n 30 "$work/serve.log" >&2; }
  exit 1
}
ctl() { "$dmctl" --state-dir "$work/state" --timeout 60 "$@"; }
# jq -e FILTER on the answer of dmctl ARGS...
ctl_jq() { # filter args...
  local f=$1
  shift
  ctl "$@" >"$work/last.json" || true
  jq -e "$f" "$work/last.json" >/dev/null || { cat "$work/last.json" >&2; return 1; }
}
stage_is() { ctl_jq ".sources[0].subTaskStatus[0].stage == \"$1\"" query-status upd 2>/dev/null; }
count() { "$1" -N -B -e "SELECT COUNT(*) FROM \`$db\`.\`$2\`"; }
same_count() { [ "$(count src "$1")" = "$(count tgt "$1")" ]; }

src -e "DROP DATABASE IF EXISTS \`$db\`; CREATE DATABASE \`$db\`;
        CREATE TABLE \`$db\`.t1 (id INT PRIMARY KEY, v VARCHAR(40));
        CREATE TABLE \`$db\`.t2 (id INT PRIMARY KEY, v VARCHAR(40));"
tgt -e "DROP DATABASE IF EXISTS \`$db\`; DROP DATABASE IF EXISTS \`$meta\`; CREATE DATABASE \`$db\`;
        CREATE TABLE \`$db\`.t1 (id INT PRIMARY KEY, v VARCHAR(40));
        CREATE TABLE \`$db\`.t2 (id INT PRIMARY KEY, v VARCHAR(40));"
read -r bfile bpos < <(src -N -B -e "SHOW MASTER STATUS" | awk '{ print $1, $2 }')
crash_source_cfg upd-src
# task.cfg: $1 the tables allowed, $2 the meta-schema, $3 the sync section
task_cfg() {
  local tables=$1 ms=$2 sync=$3
  cat <<CFG
name = "upd";
task-mode = "incremental";
meta-schema = "$ms";
target-database = { host = "$DMH_TARGET_HOST"; port = $DMH_TARGET_PORT; user = "$DMH_TARGET_USER"; password = ""; };
mysql-instances = ( {
  source-id = "upd-src";
  block-allow-list = "b";
  meta = { binlog-name = "$bfile"; binlog-pos = $bpos; };
} );
block-allow-list = { b = { do-dbs = ["$db"]; do-tables = ( $tables ); }; };
supervisor = { auto-resume = { enable = false; }; };
sync = { batch-ms = 50; $sync };
CFG
}
one='{ db-name = "'$db'"; tbl-name = "t1"; }'
both="$one"', { db-name = "'$db'"; tbl-name = "t2"; }'
task_cfg "$one" "$meta" "" >"$work/task.cfg"
task_cfg "$both" "other_meta" "" >"$work/task-meta.cfg"
task_cfg "$both" "$meta" 'worker-count = "two";' >"$work/task-bad.cfg"
task_cfg "$both" "$meta" 'worker-count = 2;' >"$work/task-both.cfg"
task_cfg "$both" "$meta" 'worker-cnt = 2;' >"$work/task-typo.cfg"
sync_line=$(grep -n '^sync = ' "$work/task-typo.cfg" | cut -d: -f1)
meta_line=$(grep -n '^meta-schema' "$work/task-meta.cfg" | cut -d: -f1)

serve_up
ctl operate-source create "$work/source.cfg" >/dev/null || fail "operate-source create"
ctl_jq '.result' start-task "$work/task.cfg" || fail "start-task"
wait_for 20 "the task is not Running" stage_is Running
src -e "INSERT INTO \`$db\`.t1 VALUES (1, 'a'), (2, 'b'); INSERT INTO \`$db\`.t2 VALUES (1, 'x');"
wait_for 20 "t1 did not reach the target" same_count t1
[ "$(count tgt t2)" = 0 ] || fail "t2 replicated though the block-allow-list allows t1 only"
log "running: t1 replicated, t2 not"

# 1. a Running task: refused, nothing changed
cp "$work/state/tasks/upd/task.cfg" "$work/copy-before.cfg"
ctl_jq '.result == false and .error.ErrCode == 13010 and (.msg | contains("is Running")) and
        (.msg | contains("pause-task upd"))' update-task "$work/task-both.cfg" ||
  fail "update-task of a Running task was not refused with 13010"
cmp -s "$work/state/tasks/upd/task.cfg" "$work/copy-before.cfg" ||
  fail "a refused update-task changed the task's copy"
stage_is Running || fail "a refused update-task moved the task"
log "update-task on Running refused"

ctl_jq '.result' pause-task upd || fail "pause-task"
stage_is Paused || fail "not Paused after pause-task"

# 2. identity: meta-schema keys the checkpoints
ctl_jq ".result == false and .error.ErrCode == 14010 and
        (.msg | contains(\"task-meta.cfg:$meta_line:\")) and (.msg | contains(\"meta-schema\"))" \
  update-task "$work/task-meta.cfg" || fail "a changed meta-schema was not refused naming line $meta_line"
log "identity change refused at line $meta_line"

# 3. the sync's update fails: the old rules stay for the whole task
ctl_jq '.result == false and .error.ErrCode == 13012 and (.msg | contains("worker-count")) and
        (.msg | contains("old settings stay"))' update-task "$work/task-bad.cfg" ||
  fail "a wrong-typed sync setting was not refused by the unit's update"
cmp -s "$work/state/tasks/upd/task.cfg" "$work/copy-before.cfg" ||
  fail "a refused update-task changed the task's copy"
# ... and so does a setting the sync does not read (the check the host runs after init)
ctl_jq ".result == false and .error.ErrCode == 13012 and (.msg | contains(\"task-typo.cfg:$sync_line:\")) and
        (.msg | contains(\"unknown setting\")) and (.msg | contains(\"sync.worker-cnt\"))" update-task "$work/task-typo.cfg" ||
  fail "a misspelt sync setting was not refused naming its line $sync_line"
ctl_jq '.result' resume-task upd || fail "resume-task after the refused update"
src -e "INSERT INTO \`$db\`.t1 VALUES (3, 'c'); INSERT INTO \`$db\`.t2 VALUES (2, 'y');"
wait_for 20 "t1 did not reach the target after the refused update" same_count t1
[ "$(count src t2)" = 2 ] || fail "precondition: the source's t2 has not 2 rows"
[ "$(count tgt t2)" = 0 ] || fail "t2 replicated after a refused update: the new rules took effect"
ctl_jq '.sources[0].subTaskStatus[0].syncStatus.workerCount == 8' query-status upd ||
  fail "the sync does not run with its old worker-count"
log "refused update kept the old rules"

# t2's ignored rows go on the source only, so that from here the tables compare whole
src -e "DELETE FROM \`$db\`.t2; INSERT INTO \`$db\`.t1 VALUES (4, 'd');"
wait_for 20 "t1 did not reach the target" same_count t1

# 4. the update is taken
ctl_jq '.result' pause-task upd || fail "pause-task"
# --dry-run: every check passes, nothing changes (what a cluster's master asks each worker)
ctl_jq '.result and (.msg | contains("dry run")) and .sources[0].result' \
  update-task --dry-run "$work/task-both.cfg" || fail "update-task --dry-run of the paused task"
cmp -s "$work/state/tasks/upd/task.cfg" "$work/copy-before.cfg" ||
  fail "update-task --dry-run changed the task's copy"
ctl_jq '.result' update-task --dry-run "$work/task-meta.cfg" >/dev/null &&
  fail "update-task --dry-run took a changed meta-schema"
ctl_jq '.result and (.sources | length == 1) and .sources[0].result' update-task "$work/task-both.cfg" ||
  fail "update-task of the paused task failed"
cmp -s "$work/state/tasks/upd/task.cfg" "$work/task-both.cfg" || fail "the task's copy is not the new file"
stage_is Paused || fail "update-task moved the task out of Paused"
ctl_jq '.result' resume-task upd || fail "resume-task after update-task"
src -e "INSERT INTO \`$db\`.t1 VALUES (5, 'e'), (6, 'f'); INSERT INTO \`$db\`.t2 VALUES (10, 'p'), (11, 'q');
        UPDATE \`$db\`.t2 SET v = 'q2' WHERE id = 11;"
wait_for 20 "t2 did not reach the target after update-task" same_count t2
wait_for 20 "t1 did not reach the target after update-task" same_count t1
bash scripts/checksum.sh "$db" >"$work/checksum.txt" || { cat "$work/checksum.txt"; fail "target differs from source"; }
ctl_jq '.sources[0].subTaskStatus[0].syncStatus.workerCount == 2' query-status upd ||
  fail "the sync does not run with the updated worker-count"
log "updated: both tables replicated, worker-count 2"

# 5. a restart runs the new file
kill -TERM "$pid"
wait "$pid" || fail "dmhost serve did not exit 0 on SIGTERM"
pid=""
serve_up
wait_for 20 "the task is not Running after the restart" stage_is Running
src -e "INSERT INTO \`$db\`.t2 VALUES (12, 'r');"
wait_for 20 "t2 not replicated after the restart" same_count t2
ctl_jq '.sources[0].subTaskStatus[0].syncStatus.workerCount == 2' query-status upd ||
  fail "the restarted sync does not run with the updated worker-count"
bash scripts/checksum.sh "$db" >"$work/checksum.txt" || { cat "$work/checksum.txt"; fail "target differs from source"; }
ctl stop-task upd >/dev/null || true
log "restart runs the new file; passed"

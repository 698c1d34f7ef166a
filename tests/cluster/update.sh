#!/usr/bin/env bash
# update-task through a cluster's master (host/cluster/master/master_update.c): two masters, two
# workers, two sources (two source-ids on the one source server), one mode-all task reading
# upd_db1 from the first and upd_db2 from the second, each worker running one subtask.
#  1. the task runs: update-task is refused (13010, DM's rule: every subtask paused), a file
#     changing task-mode too (14010); etcd's text of the task stays as it was;
#  2. pause-task; update-task --dry-run through the follower (forwarded to the leader): every worker
#     checks it, nothing changes; then update-task through the follower with each source's
#     block-allow-list widened (upd_db1x, upd_db2x): etcd's text and each worker's own copy are the
#     new file (and sync worker-count 3), get-config through a master shows it;
#  3. resume-task: the tables created in the new databases while paused reach the target on both
#     sources, as do the old ones (checksums equal); query-status says both syncs run 3 workers.
#
#   update.sh <dmhost> <dmctl> <plugin dir> <source dir>
set -euo pipefail
dmhost=$1 dmctl=$2 plugins=$3 src_dir=$4
cd "$src_dir"
work=$(mktemp -d /tmp/dmh-cluster-update-XXXXXX)
t0=$SECONDS tag=cluster_update tasks="clup"
dbs=(upd_db1 upd_db2 upd_db1x upd_db2x) meta=cluster_upd_meta
. tests/crash/lib.sh
. tests/cluster/lib.sh
drop_all() {
  local d
  for d in "${dbs[@]}"; do
    src -e "DROP DATABASE IF EXISTS \`$d\`" 2>/dev/null || true
    tgt -e "DROP DATABASE IF EXISTS \`$d\`" 2>/dev/null || true
  done
  tgt -e "DROP DATABASE IF EXISTS \`$meta\`" 2>/dev/null || true
}
cleanup() {
  drop_all
  cluster_cleanup
}
trap cleanup EXIT
etcd_get() { ETCDCTL_API=3 etcdctl --endpoints "$DMH_ETCD_ENDPOINTS" get --prefix "$1" 2>/dev/null; }
stored() { etcd_get "$prefix/task/clup"; }
# task clup's subtask on source $1 has stage $2 (through master 1)
sub_stage() { ctl 1 query-status clup | jq -e --arg s "$1" --arg st "$2" '[.. | objects |
  select(.name == "clup" and .source == $s and .stage == $st)] | length > 0'; }
same() { # db...
  local d
  for d in "$@"; do t1_same "$d" || return 1; done
}
task_file() { # do-dbs of ups1, do-dbs of ups2, task-mode, sync worker-count
  cat <<CFG
name = "clup";
task-mode = "${3:-all}";
meta-schema = "$meta";
target-database = { host = "$DMH_TARGET_HOST"; port = $DMH_TARGET_PORT; user = "$DMH_TARGET_USER"; password = ""; };
mysql-instances = ( { source-id = "ups1"; block-allow-list = "b1"; },
                    { source-id = "ups2"; block-allow-list = "b2"; } );
block-allow-list = { b1 = { do-dbs = [$1]; }; b2 = { do-dbs = [$2]; }; };
supervisor = { auto-resume = { enable = false; }; };
sync = { worker-count = ${4:-8}; };
CFG
}

drop_all
for d in upd_db1 upd_db2; do
  src -e "CREATE DATABASE \`$d\`; CREATE TABLE \`$d\`.t1 (id INT PRIMARY KEY, v VARCHAR(40));"
  src "$d" -e "INSERT INTO t1 SELECT seq, CONCAT('$d', seq) FROM seq_1_to_100;"
done
for s in ups1 ups2; do
  crash_source_cfg "$s"
  mv "$work/source.cfg" "$work/$s.cfg"
done
task_file '"upd_db1"' '"upd_db2"' >"$work/clup.cfg"
task_file '"upd_db1", "upd_db1x"' '"upd_db2", "upd_db2x"' all 3 >"$work/clup-new.cfg"
task_file '"upd_db1"' '"upd_db2"' incremental >"$work/clup-mode.cfg"

master_up 1
master_up 2
start_worker w1
start_worker w2
source_create 1 ups1
source_create 1 ups2
two_bound() { [ "$(members 1 | grep -c ' bound ups')" = 2 ]; }
wait_for 30 "ups1 and ups2 were not bound to w1 and w2" two_bound
leader=$(etcd_get "$prefix/leader" | sed -n 2p)
case $leader in m1) follower=2 ;; m2) follower=1 ;; *) fail "no master leads: \"$leader\"" ;; esac
task_start 1 clup
wait_for 60 "clup does not run on ups1" task_running clup ups1 1
wait_for 60 "clup does not run on ups2" task_running clup ups2 1
wait_for 60 "the target does not equal the source" same upd_db1 upd_db2
log "clup runs on both workers ($(members 1 | tr '\n' ' ')); $leader leads"

# 1. refusals while running; nothing changed
before=$(stored)
[ -n "$before" ] || fail "no task text in etcd"
out=$(ctl "$follower" update-task "$work/clup-new.cfg" 2>&1) && fail "update-task of a running task was taken: $out"
jq -e '.error.ErrCode == 13010' <<<"$out" >/dev/null || fail "update-task of a running task: not 13010: $out"
out=$(ctl 1 update-task "$work/clup-mode.cfg" 2>&1) && fail "a changed task-mode was taken: $out"
jq -e '.error.ErrCode == 14010 and (.msg | contains("task-mode"))' <<<"$out" >/dev/null ||
  fail "a changed task-mode: not 14010 naming it: $out"
[ "$(stored)" = "$before" ] || fail "a refused update-task changed the task's text in etcd"
for s in ups1 ups2; do
  task_running clup "$s" 1 >/dev/null || fail "a refused update-task moved the task on $s"
done
log "running: update-task refused (13010), task-mode change refused (14010), etcd unchanged"

# 2. paused: a dry run, then the update through the follower
ctl 1 pause-task clup >"$work/ctl.out" || fail "pause-task: $(cat "$work/ctl.out")"
wait_for 60 "clup is not Paused on ups1" sub_stage ups1 Paused
wait_for 60 "clup is not Paused on ups2" sub_stage ups2 Paused
for d in upd_db1x upd_db2x; do
  src -e "CREATE DATABASE \`$d\`; CREATE TABLE \`$d\`.t1 (id INT PRIMARY KEY, v VARCHAR(40));"
  src "$d" -e "INSERT INTO t1 SELECT seq, CONCAT('$d', seq) FROM seq_1_to_50;"
done
out=$(ctl "$follower" update-task --dry-run "$work/clup-new.cfg" 2>&1) || fail "update-task --dry-run: $out"
jq -e '(.msg | contains("dry run")) and ([.sources[] | select(.result)] | length == 2)' \
  <<<"$out" >/dev/null || fail "update-task --dry-run did not answer for both sources: $out"
[ "$(stored)" = "$before" ] || fail "update-task --dry-run changed the task's text in etcd"
grep -rqs upd_db1x "$work/w1" "$work/w2" && fail "update-task --dry-run changed a worker's copy"
out=$(ctl "$follower" update-task "$work/clup-new.cfg" 2>&1) || fail "update-task through m$follower: $out"
jq -e '.result and ([.sources[] | select(.result)] | length == 2)' <<<"$out" >/dev/null ||
  fail "update-task did not answer for both sources: $out"
stored | grep -q upd_db2x || fail "etcd's text of the task is not the new file: $(stored)"
for w in w1 w2; do
  grep -rlqs 'upd_db1x' "$work/$w" || fail "worker $w's copy of the task is not the new file"
done
ctl_jq 1 '.. | strings | select(contains("upd_db1x"))' get-config task clup >/dev/null ||
  fail "get-config task clup through m1 does not show the new file"
for s in ups1 ups2; do
  sub_stage "$s" Paused >/dev/null || fail "the update moved the task on $s"
done
log "paused: dry run changed nothing; update-task through m$follower: etcd and both workers' copies new"

# 3. resume: the new rules run on both workers
ctl 1 resume-task clup >"$work/ctl.out" || fail "resume-task: $(cat "$work/ctl.out")"
wait_for 60 "clup does not run on ups1 after resume" task_running clup ups1 1
wait_for 60 "clup does not run on ups2 after resume" task_running clup ups2 1
src upd_db1 -e "INSERT INTO t1 SELECT seq, 'after' FROM seq_101_to_120;"
src upd_db2x -e "INSERT INTO t1 SELECT seq, 'after' FROM seq_51_to_70;"
wait_for 60 "the target does not equal the source in the four databases" same "${dbs[@]}"
# each worker's sync runs the new worker-count (query-status through the masters)
workers_at() { ctl "$1" query-status clup | jq -e '[.sources[].subTaskStatus[] |
  select(.syncStatus.workerCount == 3)] | length == 2'; }
wait_for 30 "the subtasks do not run the new worker-count 3 (through m1)" workers_at 1
wait_for 30 "the subtasks do not run the new worker-count 3 (through m2)" workers_at 2
log "resumed: upd_db1x (ups1) and upd_db2x (ups2) reached the target, checksums equal; sync worker-count 3 on both"

for p in w1 w2 m2 m1; do stop_proc "$p"; done
log "PASSED"

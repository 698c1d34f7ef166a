#!/usr/bin/env bash
# A task's life with DM's options in a cluster (issue 23; the daemon's half is
# tests/control/task_life.sh): one `dmhost master`, one `dmhost worker`, one source, a mode-all
# task, driven by dmctl --master-addr and by raw requests on the master's POST /control (the
# arguments dmctl has no flag for, as the HTTP API sends them).
#  1. start-task stage "Stopped": the master stores the stage key Paused, the worker creates the
#     subtask and leaves it New: query-status through the master says New, no row reaches the target;
#  2. resume-task starts it: the target equals the source;
#  3. stop-task force=false refused with DM's message (the task runs on), force=true stops it: its
#     keys leave etcd; resume-task remove-meta of the task that ran is refused (13001);
#  2b/3b. dmctl config export and import through the master: the files are etcd's texts, masked;
#     an import of masked files is refused; with the passwords back the source is kept and the
#     task started again;
#  4. DM's operate-leader with dmctl on the only master: evict answers once its leader key is gone
#     (nobody leads: no other master), cancel-evict: it leads again.
#
#   task_life.sh <dmhost> <dmctl> <plugin dir> <source dir>
set -euo pipefail
dmhost=$1 dmctl=$2 plugins=$3 src_dir=$4
cd "$src_dir"
work=$(mktemp -d /tmp/dmh-cluster-tasklife-XXXXXX)
t0=$SECONDS tag=cluster_task_life tasks="cltl"
db=cluster_tl_db meta=cluster_tl_meta
. tests/crash/lib.sh
. tests/cluster/lib.sh
cleanup() {
  src -e "DROP DATABASE IF EXISTS \`$db\`" 2>/dev/null || true
  tgt -e "DROP DATABASE IF EXISTS \`$db\`; DROP DATABASE IF EXISTS \`$meta\`" 2>/dev/null || true
  cluster_cleanup
}
trap cleanup EXIT
etcd_get() { ETCDCTL_API=3 etcdctl --endpoints "$DMH_ETCD_ENDPOINTS" get --prefix "$1" 2>/dev/null; }
# jq -e FILTER on the master's answer to the raw request (JSON) on POST /control
raw_jq() { # filter request
  curl -sS --max-time 60 -X POST -H 'Content-Type: application/json' --data-binary "$2" \
    "http://127.0.0.1:${m_port[1]}/control" >"$work/last.json" || return 1
  jq -e "$1" "$work/last.json" >/dev/null || { cat "$work/last.json" >&2; return 1; }
}
stage_is() { ctl 1 query-status cltl | jq -e --arg s "$1" '[.. | objects | select(.name == "cltl" and
  .source == "cltlsrc" and .stage == $s)] | length > 0'; }
# the worker's own state: the task leaves it when the worker has stopped its subtask
gone() { jq -e '.tasks | length == 0' "$work/w1/state.json" >/dev/null; }

src -e "DROP DATABASE IF EXISTS \`$db\`; CREATE DATABASE \`$db\`;
        CREATE TABLE \`$db\`.t1 (id INT PRIMARY KEY, v VARCHAR(40));"
src "$db" -e "INSERT INTO t1 SELECT seq, CONCAT('v', seq) FROM seq_1_to_100;"
tgt -e "DROP DATABASE IF EXISTS \`$db\`; DROP DATABASE IF EXISTS \`$meta\`"
crash_source_cfg cltlsrc
mv "$work/source.cfg" "$work/cltlsrc.cfg"
crash_task_cfg cltl "$meta" "$db" cltlsrc >"$work/cltl.cfg" <<'CFG'
supervisor = { auto-resume = { enable = false; }; };
CFG

master_up 1
start_worker w1
source_create 1 cltlsrc
wait_for 30 "cltlsrc was not bound to w1" members_are 1 "w1 bound cltlsrc"

# 1. created stopped
req=$(jq -n --rawfile c "$work/cltl.cfg" '{cmd: "start-task", args: {path: "/cluster/cltl.cfg",
  content: $c, stage: "Stopped"}}')
raw_jq '.result' "$req" || fail "start-task stage Stopped through m1"
stages=$(etcd_get "$prefix/stage/")
grep -qx Paused <<<"$stages" || fail "the stage key of a task created stopped is not Paused: $stages"
wait_for 60 "the task created stopped is not New on w1" stage_is New
tgt -N -B -e "SHOW DATABASES" | grep -qx "$db" && fail "the target has $db though the task never started"
log "created stopped: stage key Paused, New on w1, nothing on the target"

# 2. resume-task starts it
ctl 1 resume-task cltl >"$work/ctl.out" || fail "resume-task: $(cat "$work/ctl.out")"
wait_for 60 "cltl does not run on w1" task_running cltl cltlsrc 1
wait_for 60 "the target does not equal the source" t1_same "$db"
[ "$(tgt -N -B -e "SELECT COUNT(*) FROM \`$db\`.t1")" = 100 ] || fail "the target has not 100 rows"
log "resumed: target = source"

# 2b. dmctl config export through the master: etcd's texts, DM's folders, passwords masked
ctl 1 config export -d "$work/export" >"$work/ctl.out" || fail "config export through m1: $(cat "$work/ctl.out")"
for f in sources/cltlsrc.cfg tasks/cltl.cfg; do
  [ "$(stat -c %a "$work/export/$f")" = 600 ] || fail "exported $f is not 0600"
  grep -q 'password = "\*\*\*\*\*\*"' "$work/export/$f" || fail "exported $f holds no masked password"
done
grep -q 'name = "cltl"' "$work/export/tasks/cltl.cfg" || fail "the exported task is not cltl's text"
out=$(ctl 1 config import -d "$work/export" 2>&1) && fail "an import of masked files was taken: $out"
grep -q '\*\*\*\*\*\*' <<<"$out" || fail "the masked import was refused without saying why: $out"
log "config export through m1: sources/ and tasks/ with etcd's texts, 0600, masked; import of them refused"

# 3. stop without force refused, with force done; remove-meta refused on a master
raw_jq '.result == false and .error.ErrCode == 13001 and
  (.msg | contains("task cltl have running subtasks, please stop them or delete task with force."))' \
  '{"cmd":"stop-task","args":{"name":"cltl","force":false}}' ||
  fail "stop-task force=false of a Running task was not refused with DM's message"
grep -qx Running <<<"$(etcd_get "$prefix/stage/")" || fail "a refused stop-task changed the stage keys"
task_running cltl cltlsrc 1 >/dev/null || fail "a refused stop-task moved the task"
raw_jq '.result == false and .error.ErrCode == 13001 and
  (.msg | contains("first start of a task created stopped only"))' \
  '{"cmd":"resume-task","args":{"name":"cltl","remove-meta":true}}' ||
  fail "resume-task remove-meta of a task that ran was not refused on a master"
gone && fail "precondition: the task is not in w1's state"
raw_jq '.result' '{"cmd":"stop-task","args":{"name":"cltl","force":true}}' || fail "stop-task force=true"
[ -z "$(etcd_get "$prefix/stage/")" ] || fail "the task's stage keys are still in etcd"
wait_for 60 "the task is still on w1 after stop-task force" gone
log "stop without force refused; resume-task remove-meta refused on a master; with force stopped"

# 3b. config import through the master, the passwords put back: the source kept, the task started
sed -i 's/password = "\*\*\*\*\*\*"/password = ""/' "$work/export/sources/cltlsrc.cfg" \
  "$work/export/tasks/cltl.cfg"
ctl 1 config import -d "$work/export" >"$work/ctl.out" || fail "config import through m1: $(cat "$work/ctl.out")"
jq -e '(.sources[0].msg | startswith("kept: source cltlsrc")) and .tasks[0].msg == "started"' \
  "$work/ctl.out" >/dev/null || fail "the import did not keep cltlsrc and start cltl: $(cat "$work/ctl.out")"
wait_for 60 "the imported cltl does not run on w1" task_running cltl cltlsrc 1
raw_jq '.result' '{"cmd":"stop-task","args":{"name":"cltl","force":true}}' || fail "stop-task of the imported task"
wait_for 60 "the imported task is still on w1 after stop-task" gone
log "config import through m1: cltlsrc kept, cltl started again on w1, stopped"

# 4. operate-leader: the key is gone when evict answers; the worker's state is not touched
leader_is() { [ "$(etcd_get "$prefix/leader" | sed -n 2p)" = "$1" ]; }
leader_is m1 || fail "precondition: m1 does not lead"
ctl_jq 1 '.result and (.msg | contains("stopped leading"))' operate-leader evict >/dev/null ||
  fail "dmctl operate-leader evict of m1"
leader_is "" || fail "the evicted m1's leader key is still in etcd when evict answered"
{ ctl 1 operate-leader resign || true; } | jq -e '.result == false and
  (.msg | contains("invalid operate '"'"'resign'"'"' on leader"))' >/dev/null ||
  fail "operate-leader resign was not refused with DM's words"
ctl_jq 1 '.result and (.msg | contains("campaigns again"))' operate-leader cancel-evict >/dev/null ||
  fail "dmctl operate-leader cancel-evict of m1"
wait_for 10 "m1 does not lead again after cancel-evict" leader_is m1
log "operate-leader: evicted (no leader), cancel-evict: m1 leads again"

for p in w1 m1; do stop_proc "$p"; done
log "PASSED"

#!/usr/bin/env bash
# start-task --start-time and --remove-meta through a cluster's masters (issue 23,
# host/cluster/master/master_start.c, host/cluster/worker/cluster_worker_start.c): two masters,
# one worker, one source.
#  1. --start-time: rows 1-3 on the source, the binlog rotated, T taken, rows 4-6; refused (nothing
#     in etcd): a task-mode all task, a time after the last transaction (11013); then an
#     incremental task started through the follower (forwarded to the leader) with --start-time T:
#     the options key names the position, rows 4-6 (and 7, written later) reach the target, 1-3
#     never;
#  2. --remove-meta: a mode-all task ran (target = source) and was stopped; the target's table is
#     dropped meanwhile; --start-time with it on a task-mode all task refused; start-task
#     --remove-meta through the follower: the worker drops the task's meta tables, dumps again, the meta tables are
#     there again and target = source (checksum), the start's revision kept in cluster.start;
#  3. the worker killed (kill -9) after that start and restarted: the meta is not dropped again
#     (no new DROP in its log, the dump is not run again: rows deleted on the target behind the
#     task's back stay deleted), rows written before and after the kill reach the target once;
#  4. killed again and the task taken out of its state.json (a crash after the worker kept the
#     start in cluster.start, before its registry kept the task): started anew from etcd, the
#     options are not applied twice, the sync goes on from its checkpoint;
#  5. start-task --remove-meta of the task while it runs: refused (13001, DM's "subtask exists
#     while remove-meta is true"), nothing dropped;
#  6. stop-task with remove-meta (DM's DELETE with keep_meta=false) through the follower: the
#     worker drops the meta and the work folder after the stop, not again after its restart;
#     resume-task's remove-meta of the task that ran refused (13001: a task created stopped only,
#     resume_opts.sh); started again without options: dumped from scratch.
#
#   start_opts.sh <dmhost> <dmctl> <plugin dir> <source dir>
set -euo pipefail
dmhost=$1 dmctl=$2 plugins=$3 src_dir=$4
cd "$src_dir"
work=$(mktemp -d /tmp/dmh-cluster-startopts-XXXXXX)
t0=$SECONDS tag=cluster_start_opts tasks="csi csa"
db1=cst_db1 db2=cst_db2 meta=cst_meta
. tests/crash/lib.sh
. tests/cluster/lib.sh
cleanup() {
  cluster_drop_dbs "$db1" "$db2" "$meta"
  cluster_cleanup
}
trap cleanup EXIT
ids() { tgt -N -B -e "SELECT GROUP_CONCAT(id ORDER BY id) FROM \`$db1\`.t" 2>/dev/null; }
ids_are() { [ "$(ids)" = "$1" ]; }
src_now() { src -N -B -e "SELECT UNIX_TIMESTAMP()"; }
meta_tables() { tgt -N -B -e "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = '$meta'
  AND TABLE_NAME LIKE 'csa\\_%'"; }
drops() { grep -c "remove-meta of task csa: DROP" "$work/w1.log" || true; }
stage_is() { ctl 1 query-status "$1" | jq -e --arg t "$1" --arg s "$2" '[.. | objects
  | select(.name == $t and .source == "cstsrc" and .stage == $s)] | length > 0'; }

# ---- 1. --start-time ----
src -e "DROP DATABASE IF EXISTS \`$db1\`; CREATE DATABASE \`$db1\`;
        CREATE TABLE \`$db1\`.t (id INT PRIMARY KEY, v VARCHAR(20));
        INSERT INTO \`$db1\`.t VALUES (1, 'before'), (2, 'before'), (3, 'before'); FLUSH BINARY LOGS;"
before=$(src_now)
next_second() { [ "$(src_now)" -gt "$before" ]; }
wait_for 10 "the source's clock did not move on" next_second
T=$(src -N -B -e "SELECT DATE_FORMAT(NOW(), '%Y-%m-%d %H:%i:%s')")
src "$db1" -e "INSERT INTO t VALUES (4, 'after'); INSERT INTO t VALUES (5, 'after'), (6, 'after');"
tgt -e "DROP DATABASE IF EXISTS \`$db1\`; DROP DATABASE IF EXISTS \`$db2\`; DROP DATABASE IF EXISTS \`$meta\`;
        CREATE DATABASE \`$db1\`; CREATE TABLE \`$db1\`.t (id INT PRIMARY KEY, v VARCHAR(20));"
crash_source_cfg cstsrc
mv "$work/source.cfg" "$work/cstsrc.cfg"
crash_task_cfg csi "$meta" "$db1" cstsrc <<'CFG' | sed 's/task-mode = "all"/task-mode = "incremental"/' >"$work/csi.cfg"
supervisor = { auto-resume = { enable = false; }; };
sync = { batch-ms = 50; };
CFG
crash_task_cfg csiall "$meta" "$db1" cstsrc >"$work/csiall.cfg" </dev/null

master_up 1
master_up 2
start_worker w1
source_create 1 cstsrc
wait_for 30 "cstsrc was not bound to w1" members_are 1 "w1 bound cstsrc"
leader=$(etcd_val "$prefix/leader")
case $leader in m1) follower=2 ;; m2) follower=1 ;; *) fail "no master leads: \"$leader\"" ;; esac

out=$(ctl 1 start-task --start-time "$T" "$work/csiall.cfg" 2>&1) && fail "a task-mode all task took --start-time: $out"
grep -q "use task-mode incremental" <<<"$out" || fail "task-mode all not refused naming why: $out"
late=$(src -N -B -e "SELECT DATE_FORMAT(NOW() + INTERVAL 1 HOUR, '%Y-%m-%d %H:%i:%s')")
out=$(ctl "$follower" start-task --start-time "$late" "$work/csi.cfg" 2>&1) && fail "a time after the last transaction was taken: $out"
jq -e '.error.ErrCode == 11013' <<<"$out" >/dev/null || fail "a time after the last transaction: not 11013: $out"
[ -z "$(etcd_val "$prefix/task/csi")$(etcd_val "$prefix/task/csiall")" ] || fail "a refused start-task wrote its task into etcd"
log "refused on a master: --start-time of a task-mode all task, a time after the binlog's end (11013); nothing in etcd"

ctl "$follower" start-task --start-time "$T" "$work/csi.cfg" >"$work/start.json" ||
  fail "start-task --start-time through m$follower: $(cat "$work/start.json")"
grep -q "source cstsrc's sync starts at" "$work/start.json" || fail "the answer names no position: $(cat "$work/start.json")"
opts=$(etcd_val "$prefix/start/csi/cstsrc")
jq -e '.remove_meta and (.start.name | length > 0) and .binding > 0' <<<"$opts" >/dev/null ||
  fail "etcd holds no options of csi's start on cstsrc: \"$opts\""
trev=$(etcd_kv "$prefix/task/csi" | jq -r '.kvs[0].create_revision')
orev=$(etcd_kv "$prefix/start/csi/cstsrc" | jq -r '.kvs[0].mod_revision')
[ "$trev" = "$orev" ] || fail "the options (revision $orev) were not written with the task key ($trev)"
wait_for 60 "the target did not come to hold rows 4,5,6" ids_are "4,5,6"
src "$db1" -e "INSERT INTO t VALUES (7, 'later')"
wait_for 60 "the row written later did not arrive" ids_are "4,5,6,7"
log "start-task --start-time T through the follower m$follower: rows 4-7 on the target, 1-3 not ($(jq -r .msg "$work/start.json"))"
ctl 1 stop-task csi >"$work/ctl.out" || fail "stop-task csi: $(cat "$work/ctl.out")"
[ -z "$(etcd_val "$prefix/start/csi/cstsrc")" ] || fail "stop-task left csi's options in etcd"

# ---- 2. --remove-meta ----
src -e "DROP DATABASE IF EXISTS \`$db2\`; CREATE DATABASE \`$db2\`;
        CREATE TABLE \`$db2\`.t1 (id INT PRIMARY KEY, v VARCHAR(40));"
src "$db2" -e "INSERT INTO t1 SELECT seq, CONCAT('v', seq) FROM seq_1_to_100;"
crash_task_cfg csa "$meta" "$db2" cstsrc >"$work/csa.cfg" <<'CFG'
supervisor = { auto-resume = { enable = false; }; };
sync = { batch-ms = 50; };
CFG
task_start 1 csa
wait_for 60 "csa does not run" task_running csa cstsrc 1
wait_for 60 "csa: the target does not equal the source" t1_same "$db2"
[ "$(meta_tables)" -gt 0 ] || fail "precondition: csa has no meta tables in $meta"
ctl 1 stop-task csa >"$work/ctl.out" || fail "stop-task csa: $(cat "$work/ctl.out")"
no_status() { [ -z "$(ETCDCTL_API=3 etcdctl --endpoints "$DMH_ETCD_ENDPOINTS" get --prefix --keys-only "$prefix/status/w1/$1/")" ]; }
wait_for 30 "csa's subtask was not stopped on w1" no_status csa
[ "$(meta_tables)" -gt 0 ] || fail "precondition: stop-task dropped csa's meta tables"
tgt -e "DROP DATABASE \`$db2\`"
src "$db2" -e "INSERT INTO t1 SELECT seq, CONCAT('w', seq) FROM seq_101_to_120;"
out=$(ctl 1 start-task "$work/csa.cfg" --remove-meta --start-time "$T" 2>&1) && fail "a task-mode all task took --start-time with --remove-meta: $out"
grep -q "use task-mode incremental" <<<"$out" || fail "task-mode all with --remove-meta --start-time not refused naming why: $out"
[ -z "$(etcd_val "$prefix/task/csa")" ] || fail "a refused start-task wrote csa into etcd"
raw_out=$(ctl 1 stop-task csa 2>&1) && fail "stop-task of a task not in the cluster was taken: $raw_out"
[ "$(drops)" = 0 ] || fail "precondition: w1 dropped csa's meta before start-task --remove-meta"
ctl "$follower" start-task --remove-meta "$work/csa.cfg" >"$work/start.json" ||
  fail "start-task --remove-meta through m$follower: $(cat "$work/start.json")"
wait_for 60 "w1 did not drop csa's meta" bash -c "[ \"\$(grep -c 'remove-meta of task csa: DROP' '$work/w1.log')\" -gt 0 ]"
wait_for 60 "csa does not run after --remove-meta" task_running csa cstsrc 1
wait_for 60 "csa after --remove-meta: the target does not equal the source (dumped again)" t1_same "$db2"
[ "$(meta_tables)" -gt 0 ] || fail "csa's meta tables were not made again"
srev=$(etcd_kv "$prefix/task/csa" | jq -r '.kvs[0].create_revision')
[ "$(tr -d '\n' <"$work/w1/tasks/csa/cluster.start")" = "$srev" ] ||
  fail "w1 keeps no record of the start's options (cluster.start: $(cat "$work/w1/tasks/csa/cluster.start" 2>&1), start $srev)"
n_drops=$(drops)
log "start-task --remove-meta through m$follower: w1 dropped csa's meta ($n_drops DROPs), dumped again: target = source, meta tables made again, start $srev kept"

# ---- 3. kill -9 after the start: the meta is not dropped again ----
src "$db2" -e "INSERT INTO t1 SELECT seq, CONCAT('x', seq) FROM seq_121_to_130;"
wait_for 60 "rows 121-130 did not reach the target" t1_same "$db2"
# a row deleted on the target behind the task's back: a dump run again would bring it back
tgt "$db2" -e "DELETE FROM t1 WHERE id = 1"
kill -9 "${pid[w1]}"
wait "${pid[w1]}" 2>/dev/null || true
unset "pid[w1]"
src "$db2" -e "INSERT INTO t1 SELECT seq, CONCAT('y', seq) FROM seq_131_to_140;"
w1_lines=$(lines "$work/w1.log")
start_worker w1
wait_for 60 "csa does not run after w1's restart" task_running csa cstsrc 1
src "$db2" -e "INSERT INTO t1 SELECT seq, CONCAT('z', seq) FROM seq_141_to_150;"
tgt_rows() { [ "$(tgt -N -B -e "SELECT COUNT(*) FROM \`$db2\`.t1 WHERE id > 130")" = 20 ]; }
wait_for 60 "rows 131-150 did not reach the target after the restart" tgt_rows
[ "$(drops)" = "$n_drops" ] || fail "w1 dropped csa's meta again after the restart ($(drops) DROPs, $n_drops before)"
tail -n +"$((w1_lines + 1))" "$work/w1.log" | grep -q "remove-meta of task csa" &&
  fail "w1 removed csa's meta again after the restart"
[ -z "$(tgt -N -B -e "SELECT id FROM \`$db2\`.t1 WHERE id = 1")" ] ||
  fail "row 1, deleted on the target, is back: the dump ran again after the restart"
[ "$(tgt -N -B -e "SELECT COUNT(*) FROM \`$db2\`.t1")" = 149 ] ||
  fail "the target holds $(tgt -N -B -e "SELECT COUNT(*) FROM \`$db2\`.t1") rows, not 149"
src "$db2" -e "DELETE FROM t1 WHERE id = 1"
wait_for 60 "after the restart: the target does not equal the source" t1_same "$db2"
log "w1 killed (kill -9) and restarted: csa's meta not dropped again, no dump again, rows 131-150 once"

# ---- 4. the crash between the record and the registry's state.json: the record holds ----
# kill -9 again and take csa out of w1's state.json, as if w1 died after it dropped the meta and
# kept the start in cluster.start but before the registry kept the task: the restarted w1 starts
# csa anew from etcd, finds the start applied and drops nothing (the sync goes on from its
# checkpoint: row 2, deleted on the target behind the task's back, is not dumped again)
tgt "$db2" -e "DELETE FROM t1 WHERE id = 2"
kill -9 "${pid[w1]}"
wait "${pid[w1]}" 2>/dev/null || true
unset "pid[w1]"
jq -e '[.tasks[] | select(.name == "csa")] | length == 1' "$work/w1/state.json" >/dev/null ||
  fail "precondition: w1's state.json does not keep csa: $(cat "$work/w1/state.json")"
jq 'del(.tasks[] | select(.name == "csa"))' "$work/w1/state.json" >"$work/state.json.new"
mv "$work/state.json.new" "$work/w1/state.json"
w1_lines=$(lines "$work/w1.log")
start_worker w1
applied_before() { tail -n +"$((w1_lines + 1))" "$work/w1.log" | grep -q "were applied before: the meta is not dropped again"; }
wait_for 60 "w1 did not start csa anew from etcd knowing its options applied" applied_before
wait_for 60 "csa does not run after w1's second restart" task_running csa cstsrc 1
src "$db2" -e "INSERT INTO t1 SELECT seq, CONCAT('q', seq) FROM seq_151_to_160;"
tgt_rows2() { [ "$(tgt -N -B -e "SELECT COUNT(*) FROM \`$db2\`.t1 WHERE id > 150")" = 10 ]; }
wait_for 60 "rows 151-160 did not reach the target after the second restart" tgt_rows2
[ "$(drops)" = "$n_drops" ] || fail "w1 dropped csa's meta again after the second restart"
[ -z "$(tgt -N -B -e "SELECT id FROM \`$db2\`.t1 WHERE id = 2")" ] ||
  fail "row 2, deleted on the target, is back: the dump ran again after the second restart"
src "$db2" -e "DELETE FROM t1 WHERE id = 2"
wait_for 60 "after the second restart: the target does not equal the source" t1_same "$db2"
log "w1 killed again, csa gone from its state.json: started anew from etcd, the start's options not applied twice (cluster.start), on from the checkpoint"

# ---- 5. remove-meta of a task that runs: refused, nothing dropped ----
out=$(ctl "$follower" start-task --remove-meta "$work/csa.cfg" 2>&1) && fail "start-task --remove-meta of a running task was taken: $out"
jq -e '.error.ErrCode == 13001 and (.msg | contains("still has a subtask of task csa"))' <<<"$out" >/dev/null ||
  fail "start-task --remove-meta of a running task: not refused with 13001 naming the subtask: $out"
[ "$(drops)" = "$n_drops" ] || fail "a refused start-task --remove-meta dropped csa's meta"
task_running csa cstsrc 1 >/dev/null || fail "a refused start-task --remove-meta stopped csa"
log "start-task --remove-meta of the running csa refused (13001), nothing dropped"

# ---- 6. stop-task with remove-meta (DM's DELETE, keep_meta=false) through the follower ----
raw() { # master request: the answer of POST /control
  curl -sS --max-time 60 -X POST -H 'Content-Type: application/json' --data-binary "$2" \
    "http://127.0.0.1:${m_port[$1]}/control"
}
out=$(raw "$follower" '{"cmd":"resume-task","args":{"name":"csa","remove-meta":true}}')
jq -e '.result == false and .error.ErrCode == 13001 and
  (.msg | contains("first start of a task created stopped only"))' <<<"$out" >/dev/null ||
  fail "resume-task remove-meta of a task that ran was not refused on a master: $out"
out=$(raw "$follower" '{"cmd":"stop-task","args":{"name":"csa","force":true,"remove-meta":true}}')
jq -e '.result' <<<"$out" >/dev/null || fail "stop-task remove-meta through m$follower: $out"
[ -z "$(etcd_val "$prefix/task/csa")" ] || fail "stop-task remove-meta left csa in etcd"
jq -e '.stop and .remove_meta' <<<"$(etcd_val "$prefix/start/csa/cstsrc")" >/dev/null ||
  fail "etcd holds no stop-task remove-meta for cstsrc's worker: $(etcd_val "$prefix/start/csa/cstsrc")"
dropped_again() { [ "$(drops)" -gt "$n_drops" ]; }
wait_for 60 "w1 did not drop csa's meta after stop-task remove-meta" dropped_again
wait_for 30 "csa's subtask was not stopped on w1" no_status csa
[ "$(meta_tables)" = 0 ] || fail "csa's meta tables are still on the target after stop-task remove-meta"
[ ! -e "$work/w1/tasks/csa/cstsrc" ] || fail "csa's work folder is still in w1's state dir"
n_drops=$(drops)
stop_proc w1
start_worker w1
wait_for 30 "w1 does not serve cstsrc after its restart" members_are 1 "w1 bound cstsrc"
src "$db2" -e "INSERT INTO t1 SELECT seq, CONCAT('r', seq) FROM seq_161_to_170;"
task_start 1 csa
wait_for 60 "csa does not run after the stop with remove-meta" task_running csa cstsrc 1
wait_for 60 "csa started again: the target does not equal the source (dumped again)" t1_same "$db2"
[ "$(drops)" = "$n_drops" ] || fail "w1 dropped csa's meta again after its restart or at the plain start"
log "stop-task remove-meta through m$follower: w1 dropped csa's meta and work folder after the stop, not again after a restart; started again from scratch: target = source"

ctl 1 stop-task csa >"$work/ctl.out" || fail "stop-task csa: $(cat "$work/ctl.out")"
for p in m1 m2 w1; do stop_proc "$p"; done
no_dup "$work"/*.log
log "PASSED"

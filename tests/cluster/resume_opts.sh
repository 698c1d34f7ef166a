#!/usr/bin/env bash
# DM's OpenAPI start of a task created stopped, through a cluster's masters (issue 23's last piece,
# host/cluster/master/master_start.c master_resume_prepare, host/cluster/worker/
# cluster_worker_start.c cw_start_resume): DM v6's flow, the task created stopped, then POST /api/v1/tasks/{task-name}/start with DM's StartTaskRequest {remove_meta,
# start_time, safe_mode_time_duration}. Before the change a master refused remove_meta and took
# start_time and safe_mode_time_duration without applying them. Two masters, one worker, one
# source; every request through the follower (forwarded to the leader).
#  1. rows 1-3 on the source, the binlog rotated, T taken, rows 4-6; an incremental task created
#     stopped (start-task stage Stopped, what DM's POST /api/v1/tasks maps to; that route with
#     DM's Task JSON on a master: cluster_dm_yaml) (New on w1, its stage key the Paused of its creation); refused, nothing
#     written (no options key, the stage key unchanged, nothing copied): a safe_mode_time_duration
#     of no Go form (400), a start_time after the binlog's end (11013);
#  2. started with start_time T and safe_mode_time_duration "90s": etcd's options key holds the
#     position and the duration, marked resume, written with the stage key's flip; the target
#     holds exactly the source's rows after T (row by row), then a row written later; w1's sync
#     logs its timed safe mode of 90 s and query-status through the master shows it (reason
#     safe-mode-duration, its end), w1 keeps the start in cluster.start;
#  3. the three options on the task that has run (paused, then started again): each refused
#     (13001) naming it, nothing written; a plain start (no options) still resumes it;
#  4. remove_meta: a mode-all task ran (target = source), was deleted keeping its meta and created
#     again stopped; the target's table dropped meanwhile; w1 restarted (the task restored, New);
#     started with remove_meta: w1 drops the meta, dumps again, target = source (checksum);
#  5. w1 killed (kill -9) and restarted: the meta is not dropped again (cluster.start), the rows
#     written meanwhile arrive once.
#
#   resume_opts.sh <dmhost> <dmctl> <plugin dir> <source dir>
set -euo pipefail
dmhost=$1 dmctl=$2 plugins=$3 src_dir=$4
cd "$src_dir"
work=$(mktemp -d /tmp/dmh-cluster-resumeopts-XXXXXX)
t0=$SECONDS tag=cluster_resume_opts tasks="rsi rsa"
db1=rso_db1 db2=rso_db2 meta=rso_meta
. tests/crash/lib.sh
. tests/cluster/lib.sh
cleanup() {
  cluster_drop_dbs "$db1" "$db2" "$meta"
  cluster_cleanup
}
trap cleanup EXIT
ids() { tgt -N -B -e "SELECT IFNULL(GROUP_CONCAT(id ORDER BY id), '') FROM \`$db1\`.t" 2>/dev/null; }
ids_are() { [ "$(ids)" = "$1" ]; }
rows_after() { "$1" -N -B -e "SELECT id, v FROM \`$db1\`.t WHERE id > $2 ORDER BY id"; }
drops() { grep -c "remove-meta of task rsa: DROP" "$work/w1.log" || true; }
stage_is() { ctl 1 query-status "$1" | jq -e --arg t "$1" --arg s "$2" '[.. | objects
  | select(.name == $t and .source == "rsosrc" and .stage == $s)] | length > 0'; }
# DM's OpenAPI on master $1: METHOD PATH [BODY]; the status in $status, the body in $work/out
expect() { [ "$status" = "$1" ] || fail "$2: HTTP $status, want $1: $(head -c 600 "$work/out")"; }
# the stage key of task $1 as it was written at its creation (version 1), no options key
untouched() {
  [ "$(etcd_field "$prefix/stage/$1/rsosrc" version)" = 1 ] &&
    [ -z "$(etcd_val "$prefix/start/$1/rsosrc")" ]
}
# create task $1 ($work/$1.cfg) stopped through master $2: start-task with stage Stopped, the
# command DM's POST /api/v1/tasks maps to (the task's file here is libconfig, not DM's JSON)
create_stopped() {
  jq -n --arg p "$work/$1.cfg" --rawfile c "$work/$1.cfg" \
    '{cmd: "start-task", args: {path: $p, content: $c, stage: "Stopped"}}' >"$work/create.json"
  curl -sS -m 60 --noproxy '*' -X POST -H 'Content-Type: application/json' \
    --data-binary "@$work/create.json" "http://127.0.0.1:${m_port[$2]}/control" >"$work/out" ||
    fail "curl POST /control start-task $1 on m$2"
  jq -e '.result' "$work/out" >/dev/null || fail "start-task $1 stage Stopped through m$2: $(cat "$work/out")"
}

# ---- 1. the rows around T, the task created stopped; refusals write nothing ----
rows_around_time "$db1" "$meta"
crash_source_cfg rsosrc
mv "$work/source.cfg" "$work/rsosrc.cfg"
crash_task_cfg rsi "$meta" "$db1" rsosrc <<'CFG' | sed 's/task-mode = "all"/task-mode = "incremental"/' >"$work/rsi.cfg"
supervisor = { auto-resume = { enable = false; }; };
sync = { batch-ms = 50; };
CFG
crash_task_cfg rsa "$meta" "$db2" rsosrc >"$work/rsa.cfg" <<'CFG'
supervisor = { auto-resume = { enable = false; }; };
CFG

master_up 1
master_up 2
start_worker w1
source_create 1 rsosrc
wait_for 30 "rsosrc was not bound to w1" members_are 1 "w1 bound rsosrc"
leader=$(etcd_val "$prefix/leader")
case $leader in m1) f=2 ;; m2) f=1 ;; *) fail "no master leads: \"$leader\"" ;; esac

create_stopped rsi "$f"
wait_for 60 "rsi is not New on w1" stage_is rsi New
{ [ "$(etcd_val "$prefix/stage/rsi/rsosrc")" = Paused ] && untouched rsi; } ||
  fail "precondition: rsi's stage key is not the Paused of its creation: $(etcd_kv "$prefix/stage/rsi/rsosrc")"

call "$f" POST /tasks/rsi/start '{"safe_mode_time_duration": "ten seconds"}'
expect 400 "a safe_mode_time_duration of no Go form"
jq -e '.error_code > 0 and (.error_msg | contains("safe_mode_time_duration"))' "$work/out" >/dev/null ||
  fail "the bad duration's refusal names no safe_mode_time_duration: $(cat "$work/out")"
late=$(src -N -B -e "SELECT DATE_FORMAT(NOW() + INTERVAL 1 HOUR, '%Y-%m-%d %H:%i:%s')")
call "$f" POST /tasks/rsi/start "{\"start_time\": \"$late\"}"
expect 400 "a start_time after the binlog's end"
jq -e '.error_code == 11013' "$work/out" >/dev/null || fail "a start_time after the binlog's end: not 11013: $(cat "$work/out")"
untouched rsi || fail "a refused start wrote into etcd: $(etcd_kv "$prefix/stage/rsi/rsosrc") $(etcd_val "$prefix/start/rsi/rsosrc")"
stage_is rsi New >/dev/null || fail "a refused start moved rsi: $(ctl 1 query-status rsi 2>&1)"
[ "$(ids)" = "" ] || fail "a refused start copied rows: $(ids)"
log "rsi created stopped through m$f; refused, nothing written: a bad duration (400), a start_time after the binlog's end (11013)"

# ---- 2. start_time T, safe_mode_time_duration 90s ----
call "$f" POST /tasks/rsi/start "{\"start_time\": \"$T\", \"safe_mode_time_duration\": \"90s\"}"
expect 200 "POST /tasks/rsi/start with start_time and safe_mode_time_duration through m$f"
opts=$(etcd_val "$prefix/start/rsi/rsosrc")
jq -e '.resume and .remove_meta and (.start.name | length > 0) and .binding > 0 and
  .safe_mode_duration == "90s"' <<<"$opts" >/dev/null || fail "etcd holds no resume options of rsi: \"$opts\""
[ "$(etcd_field "$prefix/start/rsi/rsosrc" mod_revision)" = "$(etcd_field "$prefix/stage/rsi/rsosrc" mod_revision)" ] ||
  fail "the options were not written with the stage key's flip: $(etcd_kv "$prefix/start/rsi/rsosrc") $(etcd_kv "$prefix/stage/rsi/rsosrc")"
[ "$(etcd_val "$prefix/stage/rsi/rsosrc")" = Running ] || fail "rsi's stage key is not Running"
wait_for 60 "the target did not come to hold rows 4,5,6 (it holds $(ids))" ids_are "4,5,6"
[ "$(rows_after tgt 0)" = "$(rows_after src 3)" ] || fail "the target's rows are not the source's after T: $(rows_after tgt 0)"
src "$db1" -e "INSERT INTO t VALUES (7, 'later')"
wait_for 60 "row 7 did not arrive (the target holds $(ids))" ids_are "4,5,6,7"
[ "$(rows_after tgt 0)" = "$(rows_after src 3)" ] || fail "the target's rows are not the source's after T: $(rows_after tgt 0)"
window() { grep -q "safe mode for safe-mode-duration 90.000s" "$work/w1.log"; }
wait_for 60 "w1's sync logs no safe mode of 90 s: $(grep -i 'safe mode' "$work/w1.log" | tail -3)" window
# the status through the master (w1's published query-status entry) says the timed safe mode
timed() { ctl 1 query-status rsi | jq -e '[.. | objects | select(.safeModeReason? == "safe-mode-duration"
  and (.safeModeUntil? // "" | startswith("20")))] | length > 0'; }
wait_for 60 "query-status through m1 says no timed safe mode: $(ctl 1 query-status rsi | grep -i safemode)" timed
srev=$(etcd_field "$prefix/stage/rsi/rsosrc" mod_revision)
[ "$(tr -d '\n' <"$work/w1/tasks/rsi/cluster.start")" = "$srev" ] ||
  fail "w1 keeps no record of the start (cluster.start: $(cat "$work/w1/tasks/rsi/cluster.start" 2>&1), start $srev)"
log "POST /tasks/rsi/start start_time T, safe_mode_time_duration 90s through m$f: rows 4-7 as on the source, 1-3 not; w1's sync in safe mode for 90 s"

# ---- 3. the options on a task that has run: refused by name; a plain start resumes ----
call "$f" POST /tasks/rsi/stop '{}'
expect 200 "POST /tasks/rsi/stop"
wait_for 60 "rsi did not pause" stage_is rsi Paused
ver=$(etcd_field "$prefix/stage/rsi/rsosrc" version)
for m in "\"start_time\": \"$T\"|start-time" '"remove_meta": true|remove-meta' \
  '"safe_mode_time_duration": "1m"|safe-mode-duration'; do
  call "$f" POST /tasks/rsi/start "{${m%|*}}"
  expect 400 "${m#*|} on a task that has run"
  jq -e --arg m "${m#*|}" '.error_code == 13001 and (.error_msg | contains("resume-task rsi with " + $m))
    and (.error_msg | contains("first start of a task created stopped"))' "$work/out" >/dev/null ||
    fail "${m#*|} on a task that has run: $(cat "$work/out")"
done
[ "$(etcd_field "$prefix/stage/rsi/rsosrc" version)" = "$ver" ] || fail "a refused start wrote rsi's stage key"
[ "$(etcd_field "$prefix/stage/rsi/rsosrc" mod_revision)" = "$(etcd_field "$prefix/start/rsi/rsosrc" mod_revision)" ] &&
  fail "precondition: the pause did not write rsi's stage key"
jq -e '.safe_mode_duration == "90s"' <<<"$(etcd_val "$prefix/start/rsi/rsosrc")" >/dev/null ||
  fail "a refused start rewrote rsi's options: $(etcd_val "$prefix/start/rsi/rsosrc")"
src "$db1" -e "INSERT INTO t VALUES (8, 'paused')"
call "$f" POST /tasks/rsi/start '{}'
expect 200 "a plain POST /tasks/rsi/start"
wait_for 60 "rsi does not run after a plain start" task_running rsi rsosrc 1
wait_for 60 "row 8 did not arrive (the target holds $(ids))" ids_are "4,5,6,7,8"
log "start_time, remove_meta, safe_mode_time_duration refused on rsi that has run (13001), nothing written; a plain start resumed it"

# ---- 4. remove_meta: a mode-all task that ran, deleted keeping its meta, created again ----
src -e "DROP DATABASE IF EXISTS \`$db2\`; CREATE DATABASE \`$db2\`;
        CREATE TABLE \`$db2\`.t1 (id INT PRIMARY KEY, v VARCHAR(40));"
src "$db2" -e "INSERT INTO t1 SELECT seq, CONCAT('v', seq) FROM seq_1_to_100;"
tgt -e "DROP DATABASE IF EXISTS \`$db2\`"
create_stopped rsa "$f"
call "$f" POST /tasks/rsa/start '{}'
expect 200 "POST /tasks/rsa/start (no options)"
wait_for 60 "rsa does not run" task_running rsa rsosrc 1
wait_for 60 "rsa: the target does not equal the source" t1_same "$db2"
call "$f" POST /tasks/rsa/stop '{}'
expect 200 "POST /tasks/rsa/stop"
wait_for 60 "rsa did not pause" stage_is rsa Paused
call "$f" DELETE "/tasks/rsa?force=true&keep_meta=true"
expect 204 "DELETE rsa keep_meta=true"
no_status() { [ -z "$(ETCDCTL_API=3 etcdctl --endpoints "$DMH_ETCD_ENDPOINTS" get --prefix --keys-only "$prefix/status/w1/$1/")" ]; }
wait_for 30 "rsa's subtask was not stopped on w1" no_status rsa
tgt -e "DROP DATABASE \`$db2\`"
src "$db2" -e "INSERT INTO t1 SELECT seq, CONCAT('w', seq) FROM seq_101_to_120;"
create_stopped rsa "$f"
wait_for 60 "rsa is not New on w1" stage_is rsa New
# w1 restarted while rsa waits: its registry restores the task (not `never run` to it any more);
# the leader's check of the stage key vouches that nothing of it ran (first_start)
restored() { grep -q "worker w1 restored" <(tail -n +"$((w1_lines + 1))" "$work/w1.log"); }
w1_lines=$(lines "$work/w1.log")
stop_proc w1
start_worker w1
wait_for 60 "w1 did not restore after its restart" restored
wait_for 60 "rsa is not New on w1 after its restart" stage_is rsa New
[ "$(drops)" = 0 ] || fail "precondition: w1 dropped rsa's meta before the start with remove_meta"
call "$f" POST /tasks/rsa/start '{"remove_meta": true}'
expect 200 "POST /tasks/rsa/start remove_meta"
jq -e '.resume and .remove_meta and (has("start") | not)' <<<"$(etcd_val "$prefix/start/rsa/rsosrc")" >/dev/null ||
  fail "etcd holds no resume remove_meta of rsa: $(etcd_val "$prefix/start/rsa/rsosrc")"
dropped() { [ "$(drops)" -gt 0 ]; }
wait_for 60 "w1 did not drop rsa's meta" dropped
wait_for 60 "rsa does not run after remove_meta" task_running rsa rsosrc 1
wait_for 60 "rsa after remove_meta: the target does not equal the source (dumped again)" t1_same "$db2"
n_drops=$(drops)
log "rsa ran, deleted keeping its meta, created again stopped, its target dropped, w1 restarted; started with remove_meta: w1 dropped the meta ($n_drops DROPs), dumped again: target = source"

# ---- 5. kill -9 after that start: the meta is not dropped again ----
kill -9 "${pid[w1]}"
wait "${pid[w1]}" 2>/dev/null || true
unset "pid[w1]"
src "$db2" -e "INSERT INTO t1 SELECT seq, CONCAT('y', seq) FROM seq_121_to_130;"
w1_lines=$(lines "$work/w1.log")
start_worker w1
wait_for 60 "rsa does not run after w1's restart" task_running rsa rsosrc 1
src "$db2" -e "INSERT INTO t1 SELECT seq, CONCAT('z', seq) FROM seq_131_to_140;"
wait_for 60 "after w1's restart: the target does not equal the source" t1_same "$db2"
[ "$(drops)" = "$n_drops" ] || fail "w1 dropped rsa's meta again after the restart ($(drops) DROPs, $n_drops before)"
tail -n +"$((w1_lines + 1))" "$work/w1.log" | grep -q "remove-meta of task rsa" &&
  fail "w1 removed rsa's meta again after the restart"
[ "$(tgt -N -B -e "SELECT COUNT(*) FROM \`$db2\`.t1")" = 140 ] ||
  fail "the target holds $(tgt -N -B -e "SELECT COUNT(*) FROM \`$db2\`.t1") rows, not 140"
log "w1 killed (kill -9) and restarted: rsa's meta not dropped again, rows 121-140 once"

for t in rsi rsa; do ctl 1 stop-task "$t" >"$work/ctl.out" || fail "stop-task $t: $(cat "$work/ctl.out")"; done
for p in m1 m2 w1; do stop_proc "$p"; done
no_dup "$work"/*.log
log "PASSED"

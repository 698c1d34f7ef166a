#!/usr/bin/env bash
# DM's OpenAPI start with its options (issue 23, "DM drop-in") against the real servers: DM v6's
# flow, a task created stopped by POST /api/v1/tasks, then POST /api/v1/tasks/{task-name}/start
# with DM's StartTaskRequest {remove_meta, start_time, safe_mode_time_duration}. Before the change
# the three were refused by name (400 "is not done").
#  1. the source's table gets rows 1-3, the binlog is rotated, the time T is taken (the source's
#     clock, past the rows' second), rows 4-6 follow; an incremental task is created from DM's
#     Task JSON (New, nothing copied);
#  2. a safe_mode_time_duration of no Go form is refused 400 in DM's error body naming the member,
#     the task left New;
#  3. started with start_time T and safe_mode_time_duration "90s": the target holds exactly the
#     source's rows after T (compared row by row), and the sync says its timed safe mode of 90 s
#     (query-status' safeModeReason and safeModeUntil, the log's line);
#  4. the three options on the task that has run: each refused 400 naming it (what to do instead);
#  5. remove_meta: the task paused and deleted with keep_meta=true (its checkpoint kept), a row
#     written while no task runs, the task created again (its meta the source's end after that
#     row) and started with remove_meta=true: its old checkpoint gone (the sync starts at the meta,
#     not where the kept checkpoint would go on: the row of the gap never copied), a row written
#     later copied; its safe_mode_time_duration "2m" taken by a task file without a sync section;
#  every answer checked against DM's spec (tests/control/dm_openapi_check.py).
#
#   dm_start.sh <dmhost> <dmctl> <plugin dir> <source dir>
set -euo pipefail
dmhost=$1 dmctl=$2 plugins=$3 src_dir=$4
cd "$src_dir"
tag=dm_start db=dm_start_e2e meta=dm_start_meta task=dm_start
work=$(mktemp -d /tmp/dmh-dm-start-XXXXXX)
t0=$SECONDS
py=/usr/bin/python3
. tests/crash/lib.sh
serve_begin
cp_table="\`$meta\`.\`${task}_syncer_checkpoint\`"
ctl() { "$dmctl" --state-dir "$work/state" --timeout 60 "$@"; }
ids() { tgt -N -B -e "SELECT IFNULL(GROUP_CONCAT(id ORDER BY id), '') FROM \`$db\`.t" 2>/dev/null; }
ids_are() { [ "$(ids)" = "$1" ]; }
rows_after() { "$1" -N -B -e "SELECT id, v FROM \`$db\`.t WHERE id > $2 ORDER BY id"; }

# ---- 1. the rows before and after T; the task created stopped ----
rows_around_time "$db" "$meta"

"$py" - "$src_dir/tests/config/dm-openapi/noShardTask.json" "$work" <<PY
import json, sys
t = json.load(open(sys.argv[1]))
t.update({"name": "$task", "meta_schema": "$meta", "task_mode": "incremental"})
del t["timezone"]
t["target_config"] = {"host": "$DMH_TARGET_HOST", "port": $DMH_TARGET_PORT,
                      "user": "$DMH_TARGET_USER", "password": "${DMH_TARGET_PASSWORD:-}"}
del t["source_config"]["full_migrate_conf"]
t["source_config"]["incr_migrate_conf"] = {"repl_batch": 100, "repl_threads": 2, "safe_mode": False}
t["source_config"]["source_conf"] = [{"source_name": "start-src"}]
t["table_migrate_rule"] = [{"source": {"source_name": "start-src", "schema": "$db", "table": "t"},
                            "target": {"schema": "$db", "table": "t"}}]
json.dump({"task": t}, open(sys.argv[2] + "/create.json", "w"))
s = {"source_name": "start-src", "host": "$DMH_SOURCE_HOST", "port": $DMH_SOURCE_PORT,
     "user": "$DMH_SOURCE_USER", "password": "${DMH_SOURCE_PASSWORD:-}", "enable_gtid": False,
     "enable": True}
json.dump({"source": s}, open(sys.argv[2] + "/source.json", "w"))
PY
body() { echo "$1" >"$work/body.json"; }

. tests/control/dm_http.sh
dm_http_serve "$work/serve.log"
stage_is() { ctl query-status "$task" 2>/dev/null | grep -q "\"stage\": *\"$1\""; }

call POST /sources "$work/source.json"
expect 201 "POST /sources"
call POST /tasks "$work/create.json"
expect 201 "POST /tasks"
stage_is New || fail "the created task is not New: $(ctl query-status "$task" 2>&1)"
log "rows 1-3, rotate, T = $T (source time), rows 4-6; task $task created stopped (New)"

# ---- 2. a bad duration: 400 naming the member, the task left as it was ----
body '{"safe_mode_time_duration": "ten seconds"}'
call POST "/tasks/$task/start" "$work/body.json"
expect 400 "a safe_mode_time_duration of no Go form"
jq -e '.error_code > 0 and (.error_msg | contains("safe_mode_time_duration"))' "$work/out" >/dev/null ||
  fail "the bad duration's refusal names no safe_mode_time_duration: $(cat "$work/out")"
stage_is New || fail "a refused start moved the task: $(ctl query-status "$task" 2>&1)"
[ "$(ids)" = "" ] || fail "a refused start copied rows: $(ids)"
log "safe_mode_time_duration \"ten seconds\" refused: $(jq -r .error_msg "$work/out" | head -c 160)"

# ---- 3. start_time T and a timed safe mode of 90 s ----
body "{\"start_time\": \"$T\", \"safe_mode_time_duration\": \"90s\"}"
call POST "/tasks/$task/start" "$work/body.json"
expect 200 "POST start with start_time and safe_mode_time_duration"
wait_for 60 "the target did not come to hold rows 4,5,6 (it holds $(ids))" ids_are "4,5,6"
[ "$(rows_after tgt 0)" = "$(rows_after src 3)" ] ||
  fail "the target's rows are not the source's after T: $(rows_after tgt 0)"
ctl query-status "$task" >"$work/qs.json" || fail "query-status: $(cat "$work/qs.json")"
grep -q '"safeModeReason": *"safe-mode-duration"' "$work/qs.json" &&
  grep -q '"safeModeUntil": *"20' "$work/qs.json" ||
  fail "the status says no timed safe mode: $(grep -i safemode "$work/qs.json")"
grep -q "safe mode for safe-mode-duration 90.000s" "$work/serve.log" ||
  fail "the sync's log says no safe mode of 90 s: $(grep -i 'safe mode' "$work/serve.log")"
log "started at T with 90s of safe mode: rows 4-6 on the target as on the source, 1-3 not;" \
  "$(grep -o '"safeModeUntil": *"[^"]*"' "$work/qs.json")"

# ---- 4. the options on a task that has run: refused by name ----
for m in "\"start_time\": \"$T\"|start_time" '"remove_meta": true|remove_meta' \
  '"safe_mode_time_duration": "1m"|safe_mode_time_duration'; do
  body "{${m%|*}}"
  call POST "/tasks/$task/start" "$work/body.json"
  expect 400 "${m#*|} on a task that has run"
  jq -e --arg m "${m#*|}" '.error_msg | contains("start'"'"'s " + $m + "): the task has run")' \
    "$work/out" >/dev/null || fail "${m#*|} on a task that has run: $(cat "$work/out")"
done
stage_is Running || fail "a refused start moved the task: $(ctl query-status "$task" 2>&1)"
log "start_time, remove_meta, safe_mode_time_duration refused on the task that has run"

# ---- 5. remove_meta: deleted keeping its meta, created again, started from scratch ----
src "$db" -e "INSERT INTO t VALUES (7, 'kept')"
wait_for 60 "row 7 did not arrive" ids_are "4,5,6,7"
call POST "/tasks/$task/stop"
expect 200 "POST stop"
wait_for 60 "the task did not pause" stage_is Paused
call DELETE "/tasks/$task?force=true&keep_meta=true"
expect 204 "DELETE keep_meta=true"
old=$(checkpoint)
[ -n "$old" ] || fail "DELETE keep_meta=true did not keep the checkpoint ($cp_table)"
src "$db" -e "INSERT INTO t VALUES (8, 'gap')"
gap_end=$(master)
# an incremental task starts at its meta (DM refuses one with neither meta nor start_time): the
# source's end after row 8; a task that kept its checkpoint would go on from there, row 8 copied
jq --arg f "${gap_end%:*}" --argjson p "${gap_end##*:}" \
  '.task.source_config.source_conf[0] += {binlog_name: $f, binlog_pos: $p} |
   del(.task.source_config.incr_migrate_conf)' "$work/create.json" >"$work/create2.json"
call POST /tasks "$work/create2.json"
expect 201 "POST /tasks again"
body '{"remove_meta": true, "safe_mode_time_duration": "2m"}'
call POST "/tasks/$task/start" "$work/body.json"
expect 200 "POST start remove_meta=true"
grep -q "remove-meta of task $task: DROP TABLE IF EXISTS \`$meta\`.\`${task}_syncer_checkpoint\`" \
  "$work/serve.log" || fail "the start dropped no syncer checkpoint"
# a task file with no sync section (DM's Task without incr_migrate_conf): the subtask is made
# again for the section the start sets, whose duration the sync takes
grep -q "task $task: its subtask on start-src made again" "$work/serve.log" ||
  fail "the start did not make the subtask again for its sync section"
# the sync logs its window once it runs, after the start's answer: waited for (the ASan run's miss)
for _ in $(seq 1 600); do
  grep -q "safe mode for safe-mode-duration 120.000s" "$work/serve.log" && break
  sleep 0.1
done
grep -q "safe mode for safe-mode-duration 120.000s" "$work/serve.log" ||
  fail "safe_mode_time_duration 2m on a task file without a sync section: $(grep 'safe mode' "$work/serve.log")"
src "$db" -e "INSERT INTO t VALUES (9, 'after remove_meta')"
wait_for 60 "row 9 did not arrive after remove_meta (the target holds $(ids))" ids_are "4,5,6,7,9"
new=$(checkpoint)
pos_at_or_past "$new" "$gap_end" ||
  fail "the checkpoint $new is not past the source's end $gap_end at the start (the old one: $old)"
[ "$(rows_after tgt 0)" = "$(src -N -B -e "SELECT id, v FROM \`$db\`.t WHERE id > 3 AND id <> 8 ORDER BY id")" ] ||
  fail "the target's rows: $(rows_after tgt 0)"
log "remove_meta: the old checkpoint $old dropped, the new one $new past the gap's end $gap_end;" \
  "row 8 (written with no task) not copied, row 9 copied"

call DELETE "/tasks/$task?force=true"
expect 204 "DELETE force=true"
call DELETE /sources/start-src
expect 204 "DELETE source"
dm_http_end
tgt -e "DROP DATABASE IF EXISTS \`$db\`; DROP DATABASE IF EXISTS \`$meta\`"
src -e "DROP DATABASE IF EXISTS \`$db\`"
log "PASSED"

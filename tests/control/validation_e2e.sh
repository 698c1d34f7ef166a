#!/usr/bin/env bash
# The continuous validator end to end (issue 24, docs/validation.md): the sync unit's real
# validator driven by `dmctl validation` through `dmhost serve`, a mode-all task of one table of
# 3,000 rows with `sync.validator` mode full (1 s validate-interval and meta-flush-interval, 3 s
# row-error-delay), a writer updating rows 1-2000 on the source all along.
#  1. status: the validator Running, mode full, processed rows growing, no error rows, result
#     null, the table Running (--table-stage stopped: none); query-status's validation fields;
#  2. a difference the sync does not make: triggers on the target land the sync's writes of row
#     2500 with another `pad` and those of row 2900 under another key; the source changes both
#     once (the writer never touches them): show-error lists exactly those two, with the key, both
#     values and DM's error types;
#  3. ignore-error ID, resolve-error ID, clear-error --all change what show-error --error
#     all|ignored|unprocessed and status's errorRowsStatus answer;
#  4. stop: Stopped, processed no longer grows (the sync goes on); a second stop is no change;
#     pause-task/resume-task keep it stopped;
#  5. start --mode fast refused as DM's master does (the validator was enabled before; a bad --mode
#     refused with dmctl's words); start runs it again (full), a second start no change; update
#     --cutover-binlog-pos is shown in status.
#
#   validation_e2e.sh <dmhost> <dmctl> <plugin dir> <source dir>
set -euo pipefail
dmhost=$1 dmctl=$2 plugins=$3 src_dir=$4
cd "$src_dir"
tag=validation_e2e db=vi_e2e meta=vi_e2e_meta
work=$(mktemp -d /tmp/dmh-vie-XXXXXX)
t0=$SECONDS
. tests/crash/lib.sh
serve_begin
vie_cleanup() { # the writer is told to end first (it ends within 50 statements), then the rest
  local rc=$?
  touch "$work/stop" 2>/dev/null || true
  if [ -n "${wpid:-}" ]; then
    for _ in $(seq 1 100); do kill -0 "$wpid" 2>/dev/null || break; sleep 0.1; done
  fi
  (exit "$rc")
  serve_cleanup
}
trap vie_cleanup EXIT
for tool in jq; do command -v $tool >/dev/null || fail "$tool is needed"; done
ctl() { "$dmctl" --state-dir "$work/state" --timeout 120 "$@"; }
# val ARGS: `dmctl validation ARGS`, the answer in $work/v.json (the exit code not judged here)
val() { ctl validation "$@" >"$work/v.json" 2>"$work/v.err" || true; }
vjq() { jq -e "$1" "$work/v.json" >/dev/null 2>&1; }
vshow() { cat "$work/v.json" "$work/v.err" 2>/dev/null; }
status() { val status vi; }
# the processed rows of the status in $work/v.json: insert+update+delete
processed() {
  jq -r '.validators[0].processedRowsStatus' "$work/v.json" | sed 's/.*: //' | tr '/' '\n' |
    awk '{ s += $1 } END { print s + 0 }'
}
processed_now() { status >/dev/null; processed; }
processed_gt() { [ "$(processed_now)" -gt "$1" ]; }
errors_shown() { # FILTER N: show-error --error FILTER lists N rows
  val show-error --error "$1" vi
  vjq ".result and (.error | length) == $2"
}
sum() { "$1" -N -B -e "SELECT COUNT(*), BIT_XOR(CRC32(CONCAT_WS('#', id, v, pad))) FROM \`$db\`.t"; }
same_sum() { [ "$(sum src)" = "$(sum tgt)" ]; }
ticks() { src -N -B -e "SELECT SUM(v) FROM \`$db\`.t WHERE id <= 2000"; }
ticks_ge() { [ "$(ticks)" -ge "$1" ]; }
qs_jq() {
  ctl query-status vi >"$work/qs.json" 2>/dev/null || true
  jq -e "$1" "$work/qs.json" >/dev/null
}
start_writer() {
  rm -f "$work/stop"
  (
    while [ ! -e "$work/stop" ]; do
      for _ in $(seq 1 50); do
        echo "UPDATE \`$db\`.t SET v = v + 1 WHERE id = $((RANDOM % 2000 + 1)); DO SLEEP(0.002);"
      done
    done | src 2>>"$work/writer.err"
  ) &
  wpid=$!
}
# the sync goes on: the target got 50 more writer updates than it had (bounded wait)
sync_moves_on() {
  local base
  base=$(tgt -N -B -e "SELECT SUM(v) FROM \`$db\`.t WHERE id <= 2000")
  tgt_ge() { [ "$(tgt -N -B -e "SELECT SUM(v) FROM \`$db\`.t WHERE id <= 2000")" -ge "$1" ]; }
  wait_for 60 "the sync did not go on under the writer" tgt_ge $((base + 50))
}

src -e "DROP DATABASE IF EXISTS \`$db\`; CREATE DATABASE \`$db\`; USE \`$db\`;
        CREATE TABLE \`$db\`.t (id INT PRIMARY KEY, v INT NOT NULL, pad VARCHAR(40));
        INSERT INTO \`$db\`.t SELECT seq, 0, CONCAT('p', seq) FROM seq_1_to_3000;"
tgt -e "DROP DATABASE IF EXISTS \`$db\`; DROP DATABASE IF EXISTS \`$meta\`;"
crash_source_cfg vi-src
crash_task_cfg vi "$meta" "$db" vi-src >"$work/task.cfg" <<'CFG'
supervisor = { auto-resume = { enable = false; }; };
sync = { batch-ms = 50;
         validator = { mode = "full"; validate-interval = "1s"; row-error-delay = "3s";
                       meta-flush-interval = "1s"; }; };
CFG
serve_listen "$dmhost" "$plugins" || fail "dmhost serve did not listen"
ctl operate-source create "$work/source.cfg" >/dev/null || fail "operate-source create"
ctl start-task "$work/task.cfg" >"$work/start.json" || fail "start-task: $(cat "$work/start.json")"
# refused while the task is still in its dump or load (if caught there: 3,000 rows load fast)
ctl query-status vi >"$work/qs.json" 2>/dev/null || true
if jq -e '.sources[0].subTaskStatus[0].unit | test("Dump|Load")' "$work/qs.json" >/dev/null 2>&1; then
  val start vi
  unit=$(jq -r '.sources[0].subTaskStatus[0].unit' "$work/qs.json")
  if vjq '.result == false' && grep -q "13030\|Sync\|sync" "$work/v.json" "$work/v.err"; then
    log "0. validation start in the $unit unit: refused ($(jq -c '.msg' "$work/v.json" 2>/dev/null))"
  elif qs_jq '.sources[0].subTaskStatus[0].unit == "Sync"'; then
    log "0. (the task reached its sync during the refusal check: not judged)"
  else
    fail "validation start in the $unit unit was not refused: $(vshow)"
  fi
else
  log "0. (the load was over before the refusal check: not judged)"
fi
wait_for 120 "the sync did not start" qs_jq '.sources[0].subTaskStatus[0].unit == "Sync" and
  .sources[0].subTaskStatus[0].stage == "Running"'
wait_for 120 "the table did not reach the target" same_sum

# the target's own difference, from now on: row 2500 lands with another pad, row 2900 elsewhere
for ev in UPDATE INSERT; do # one statement each (no BEGIN ... END: no delimiter needed)
  tgt -e "CREATE TRIGGER \`$db\`.t_$ev BEFORE $ev ON \`$db\`.t FOR EACH ROW
          SET NEW.pad = IF(NEW.id = 2500, 'tampered', NEW.pad),
              NEW.id = IF(NEW.id = 2900, 102900, NEW.id)"
done

# 1. under the writer: Running, processed growing, no errors
start_writer
wait_for 60 "precondition: the writer did not start: $(cat "$work/writer.err" 2>/dev/null)" ticks_ge 100
status
vjq '.result and .msg == "" and (.validators | length) == 1 and .validators[0] as $v |
     $v.task == "vi" and $v.source == "vi-src" and $v.mode == "full" and $v.stage == "Running" and
     $v.result == null and $v.errorRowsStatus == "new/ignored/resolved: 0/0/0" and
     ($v.processedRowsStatus | startswith("insert/update/delete: ")) and
     ($v.pendingRowsStatus | startswith("insert/update/delete: ")) and
     ($v.validatorBinlog | test("^\\(.+, [0-9]+\\)$")) and $v.cutoverBinlogPos == "" and
     (.tableStatuses | length) == 1 and .tableStatuses[0].srcTable == "`vi_e2e`.`t`" and
     .tableStatuses[0].dstTable == "`vi_e2e`.`t`" and .tableStatuses[0].stage == "Running" and
     .tableStatuses[0].source == "vi-src"' || fail "status under the writer: $(vshow)"
p1=$(processed)
wait_for 60 "the processed rows do not grow under the writer (at $p1)" processed_gt "$p1"
val status --table-stage stopped vi
vjq '.result and (.tableStatuses | length) == 0 and (.validators | length) == 1' ||
  fail "status --table-stage stopped: $(vshow)"
val status --table-stage running vi
vjq '(.tableStatuses | length) == 1' || fail "status --table-stage running: $(vshow)"
# a row is first probed after validate-interval (1 s): checked grows from then on
wait_for 60 "query-status's validation fields (see qs.json)" \
  qs_jq '.sources[0].subTaskStatus[0].syncStatus as $s | $s.validationStage == "Running" and
       $s.validationMode == "full" and $s.validationChecked > 0 and $s.validationErrors == 0'
log "1. Running, full, processed $p1 -> $(processed), no errors; query-status agrees"

# 2. the difference, found with DM's words (row 2900 deleted on the target behind the sync's back:
# whether the sync updates it in place or re-inserts it, the trigger keeps it off key 2900)
tgt -e "DELETE FROM \`$db\`.t WHERE id = 2900;"
src -e "UPDATE \`$db\`.t SET pad = 'changed' WHERE id IN (2500, 2900);"
wait_for 90 "the two differences are not listed: $(vshow)" errors_shown unprocessed 2
vjq '[.error[] | select(.errorType == "Column data not matched" and .message == "2500" and
        .status == "NewErr" and .srcTable == "`vi_e2e`.`t`" and .dstTable == "`vi_e2e`.`t`" and
        (.srcData | contains("changed")) and (.dstData | contains("tampered")))] | length == 1' ||
  fail "row 2500 is not listed as Column data not matched with both values: $(vshow)"
vjq '[.error[] | select(.errorType == "Expected rows not exist" and .message == "2900" and
        (.srcData | contains("changed")))] | length == 1' ||
  fail "row 2900 is not listed as Expected rows not exist: $(vshow)"
id2500=$(jq -r '.error[] | select(.message == "2500") | .id' "$work/v.json")
id2900=$(jq -r '.error[] | select(.message == "2900") | .id' "$work/v.json")
sed -n 1,200p "$work/v.json" >"$work/show-error.txt"
status
vjq '.validators[0].errorRowsStatus == "new/ignored/resolved: 2/0/0"' || fail "status after: $(vshow)"
log "2. show-error: 2500 Column data not matched (id $id2500), 2900 Expected rows not exist (id $id2900)"

# 3. ignore, resolve, clear
val ignore-error vi "$id2500"
vjq '.result' || fail "ignore-error: $(vshow)"
errors_shown unprocessed 1 || fail "unprocessed after ignore: $(vshow)"
vjq '.error[0].id == "'"$id2900"'"' || fail "unprocessed after ignore: $(vshow)"
errors_shown ignored 1 || fail "ignored after ignore: $(vshow)"
vjq '.error[0].id == "'"$id2500"'" and .error[0].status == "IgnoredErr"' || fail "ignored: $(vshow)"
errors_shown all 2 || fail "all after ignore: $(vshow)"
val resolve-error vi "$id2900"
vjq '.result' || fail "resolve-error: $(vshow)"
errors_shown unprocessed 0 || fail "unprocessed after resolve: $(vshow)"
errors_shown all 2 || fail "all after resolve: $(vshow)"
vjq '[.error[] | select(.status == "ResolvedErr")] | length == 1' || fail "resolved: $(vshow)"
status
vjq '.validators[0].errorRowsStatus == "new/ignored/resolved: 0/1/1"' || fail "status: $(vshow)"
val clear-error vi --all
vjq '.result' || fail "clear-error --all: $(vshow)"
errors_shown all 0 || fail "all after clear: $(vshow)"
val clear-error vi
vjq '.result | not' && grep -q "either \`--all\` or \`error-id\` should be set" "$work/v.json" "$work/v.err" ||
  fail "clear-error without an id nor --all: $(vshow)"
log "3. ignore/resolve/clear-error change show-error's answers and errorRowsStatus"

# 4. stop: Stopped, nothing processed any more; kept across pause/resume
val stop vi
vjq '.result and .msg == "success" and .sources[0].result' || fail "validation stop: $(vshow)"
status
vjq '.validators[0].stage == "Stopped"' || fail "status after stop: $(vshow)"
p2=$(processed)
sync_moves_on
[ "$(processed_now)" = "$p2" ] || fail "processed grew after stop: $p2 -> $(processed)"
val stop vi
vjq '.result and .msg == "success"' || fail "a second stop is no change in DM (success): $(vshow)"
ctl pause-task vi >/dev/null || fail "pause-task"
wait_for 60 "the task is not Paused" qs_jq '.sources[0].subTaskStatus[0].stage == "Paused"'
ctl resume-task vi >/dev/null || fail "resume-task"
wait_for 60 "the task is not Running" qs_jq '.sources[0].subTaskStatus[0].stage == "Running"'
sync_moves_on
status
vjq '.validators[0].stage == "Stopped"' || fail "status after pause/resume: $(vshow)"
[ "$(processed)" = "$p2" ] || fail "processed grew after pause/resume: $p2 -> $(processed)"
qs_jq '.sources[0].subTaskStatus[0].syncStatus.validationStage == "Stopped"' ||
  fail "query-status after resume: $(jq -c '.sources[0].subTaskStatus[0].syncStatus' "$work/qs.json")"
log "4. stopped: processed stays $p2 while the sync goes on, also over pause-task/resume-task"

# 5. start --mode fast; a bad mode; the cutover point
val start vi --mode slow
vjq '.result | not' 2>/dev/null || true
grep -q 'mode should be either `full` or `fast`, current is `slow`' "$work/v.json" "$work/v.err" ||
  fail "a bad --mode was not refused with DM's words: $(vshow)"
val start vi --mode fast # DM's master: an explicit mode enables, and this one was enabled before
vjq '.result | not' &&
  grep -q "all target validator has enabled, cannot do 'validation start' with explicit mode or start-time" \
    "$work/v.json" || fail "start --mode on an enabled validator was not refused with DM's words: $(vshow)"
status
vjq '.validators[0].stage == "Stopped"' || fail "a refused start changed the stage: $(vshow)"
val start vi
vjq '.result and .msg == "success"' || fail "validation start: $(vshow)"
status
vjq '.validators[0].stage == "Running" and .validators[0].mode == "full"' ||
  fail "status after start: $(vshow)"
val start vi
vjq '.result and .msg == "success"' || fail "a second start is no change in DM (success): $(vshow)"
wait_for 60 "the processed rows do not grow after start (at $p2)" processed_gt "$p2"
file=$(src -N -B -e "SHOW MASTER STATUS" | awk '{ print $1 }')
far="${file%.*}.999999"
val update vi --cutover-binlog-pos "($far, 4)"
vjq '.result and .msg == "success"' || fail "validation update: $(vshow)"
status
vjq '.validators[0].cutoverBinlogPos == "('"$far"', 4)"' || fail "the cutover is not shown: $(vshow)"
cp "$work/v.json" "$work/status.txt"
val update vi --cutover-binlog-pos "$far:4"
vjq '.result | not' || fail "a cutover in another form was taken: $(vshow)"
qs_jq '.sources[0].subTaskStatus[0].syncStatus.validationStage == "Running" and
       .sources[0].subTaskStatus[0].syncStatus.validationMode == "full"' ||
  fail "query-status after start: $(jq -c '.sources[0].subTaskStatus[0].syncStatus' "$work/qs.json")"
log "5. start --mode on it refused (DM's words), start: Running full, processed growing; cutover ($far, 4) shown"
if [ "${VALIDATION_E2E_TRANSCRIPT:-}" ]; then
  cat "$work/status.txt" "$work/show-error.txt" >"$VALIDATION_E2E_TRANSCRIPT"
fi
log "passed"

#!/usr/bin/env bash
# dmctl verify TASK and POST /api/v1/dmhost/tasks/{task-name}/verify (issue 24, docs/verify.md)
# against the real servers: `dmhost serve --listen` runs a mode-all task of two tables, synced.
#  1. running: equal (exit 0), the answer says the task runs (quiet false) and was compared at the
#     sync's checkpoint (at_checkpoint, no lag warning: tests/control/verify_checkpoint.sh);
#  2. paused: equal and quiet, each table's row count the source's;
#  3. no lock held by a verify: with a verify over the socket and one over HTTP blocked on a target
#     table's lock, query-status, resume-task and pause-task answer within 10 s each; past the
#     daemon's --idle-timeout (2 s) the two verifies are still answered, equal;
#  4. a target row changed and one deleted: exit 1, both keys named; --fix-sql FILE written by
#     dmctl (0600, the statements of both rows, none in the printed answer); an existing file or a
#     link at the name refused (43103) before anything runs, left as it was; the file applied with
#     the mariadb client: the next verify exits 0 and the rows are the source's;
#  5. the HTTP route answers the same (equal, then different with its statements, which repair);
#  6. refusals: an unknown task (14003, exit 2; the route: an error answer), bad arguments (14002),
#     a cross-site browser request, another uid (closed at accept);
#  7. SIGTERM while a verify of 100,000 chunks runs: the daemon exits 0 within 30 s, the verify
#     answers 43107 (cancelled) for what it had not compared.
#
#   verify_task.sh <dmhost> <dmctl> <plugin dir> <source dir>
set -euo pipefail
dmhost=$1 dmctl=$2 plugins=$3 src_dir=$4
cd "$src_dir"
tag=verify_task db=vt_e2e meta=vt_e2e_meta
work=$(mktemp -d /tmp/dmh-vtask-XXXXXX)
t0=$SECONDS
. tests/crash/lib.sh
serve_begin
lockpid=""
vt_cleanup() { # the lock session too; serve_cleanup keeps the exit status it is called with
  local rc=$?
  if [ -n "$lockpid" ]; then kill "$lockpid" 2>/dev/null || true; fi
  (exit "$rc")
  serve_cleanup
}
trap vt_cleanup EXIT
for tool in curl jq; do command -v $tool >/dev/null || fail "$tool is needed"; done
ctl() { "$dmctl" --state-dir "$work/state" --timeout 120 "$@"; }
# dmctl verify ARGS: its answer in $work/v.json, its exit code in $vrc
verify() {
  vrc=0
  ctl verify "$@" >"$work/v.json" || vrc=$?
}
vjq() { jq -e "$1" "$work/v.json" >/dev/null || { cat "$work/v.json" >&2; return 1; }; }
count() { "$1" -N -B -e "SELECT COUNT(*) FROM \`$db\`.\`$2\`"; }
same_count() { [ "$(count src "$1")" = "$(count tgt "$1")" ]; }
stage_is() {
  ctl query-status vt >"$work/qs.json" 2>/dev/null || true
  jq -e ".sources[0].subTaskStatus[0].stage == \"$1\"" "$work/qs.json" >/dev/null
}
post() { # path body: the status in $status, the answer in $work/out
  status=$(curl -s -o "$work/out" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
    --data-binary "$2" "http://$addr$1") || fail "curl POST $1"
}

src -e "DROP DATABASE IF EXISTS \`$db\`; CREATE DATABASE \`$db\`; USE \`$db\`;
        CREATE TABLE \`$db\`.t1 (id INT PRIMARY KEY, v VARCHAR(40));
        CREATE TABLE \`$db\`.t2 (a INT, b VARCHAR(8), n INT NULL, PRIMARY KEY (a, b));
        INSERT INTO \`$db\`.t1 SELECT seq, CONCAT('v', seq) FROM seq_1_to_300;
        INSERT INTO \`$db\`.t2 SELECT seq % 7, CONCAT('k', seq), IF(seq % 5 = 0, NULL, seq)
          FROM seq_1_to_200;"
tgt -e "DROP DATABASE IF EXISTS \`$db\`; DROP DATABASE IF EXISTS \`$meta\`;"
crash_source_cfg vt-src
crash_task_cfg vt "$meta" "$db" vt-src >"$work/task.cfg" <<'CFG'
supervisor = { auto-resume = { enable = false; }; };
sync = { batch-ms = 50; };
CFG
# a short --idle-timeout: a verify waiting longer than it must still be answered (step 3)
serve_listen "$dmhost" "$plugins" --idle-timeout 2 || fail "dmhost serve did not listen"
serve_start_to_sync "$dmctl" vt
src -e "INSERT INTO \`$db\`.t1 VALUES (301, 'late');"
wait_for 60 "t1 did not reach the target" same_count t1
wait_for 60 "t2 did not reach the target" same_count t2
log "synced: t1 $(count tgt t1) rows, t2 $(count tgt t2) rows"

# 1. running: equal, but the answer says differences could be lag
stage_is Running || fail "precondition: the task is not Running"
verify vt
[ "$vrc" = 0 ] || fail "verify of the synced running task: exit $vrc, want 0: $(cat "$work/v.json")"
vjq '.result and .task == "vt" and .verify == "equal" and .quiet == false and
     .reports[0].source == "vt-src" and .reports[0].stage == "Running" and
     .reports[0].quiet == false and .reports[0].at_checkpoint and
     (.reports[0] | has("warning") | not)' ||
  fail "a running task's answer does not say it runs, compared at its checkpoint"
log "1. running: equal, quiet false, compared at the sync's checkpoint"

# 2. paused: quiet, every table with the source's rows
ctl pause-task vt >/dev/null || fail "pause-task"
wait_for 30 "the task is not Paused" stage_is Paused
verify vt --chunk-rows 50
[ "$vrc" = 0 ] || fail "verify of the paused task: exit $vrc: $(cat "$work/v.json")"
n1=$(count src t1) n2=$(count src t2)
vjq ".verify == \"equal\" and .quiet and .reports[0].quiet and (.reports[0] | has(\"warning\") | not)
     and .reports[0].result == \"equal\" and (.reports[0].tables | length) == 2 and
     ([.reports[0].tables[] | select(.target == \"$db.t1\")][0] | .rows == $n1 and .chunks > 1) and
     ([.reports[0].tables[] | select(.target == \"$db.t2\")][0].rows == $n2)" ||
  fail "the paused task's answer is not equal and quiet with the source's row counts"
log "2. paused: equal and quiet ($n1 + $n2 rows)"

# 3. a verify that waits holds no lock of the daemon: the target's t1 locked by another session
tgt -e "LOCK TABLES \`$db\`.t1 WRITE; SELECT SLEEP(300);" >/dev/null 2>&1 &
lockpid=$!
sleeper() { tgt -N -B -e "SELECT ID FROM information_schema.PROCESSLIST WHERE INFO = 'SELECT SLEEP(300)'"; }
has_sleeper() { [ -n "$(sleeper)" ]; }
wait_for 30 "the lock session did not start" has_sleeper
# dmctl without --timeout: no limit of its own for a verify
("$dmctl" --state-dir "$work/state" verify vt >"$work/bg.json"; echo $? >"$work/bg.rc") &
bgpid=$!
(curl -s -o "$work/bg-http.json" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
  --data-binary '{}' "http://$addr/api/v1/dmhost/tasks/vt/verify" >"$work/bg-http.status") &
httppid=$!
blocked() {
  [ "$(tgt -N -B -e "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE STATE LIKE
        'Waiting for table metadata lock%'")" -ge 1 ]
}
blocked2() {
  [ "$(tgt -N -B -e "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE STATE LIKE
        'Waiting for table metadata lock%'")" -ge 2 ]
}
wait_for 60 "the two verifies did not reach the locked table" blocked2
s0=$SECONDS
for c in "query-status vt" "resume-task vt" "pause-task vt"; do
  s=$SECONDS
  # shellcheck disable=SC2086
  timeout 10 "$dmctl" --state-dir "$work/state" $c >"$work/c.json" ||
    fail "$c did not answer within 10 s while a verify ran: $(cat "$work/c.json")"
  jq -e '.result' "$work/c.json" >/dev/null || fail "$c failed while a verify ran: $(cat "$work/c.json")"
  log "  $c answered in $((SECONDS - s)) s while the verify waited"
done
[ ! -f "$work/bg.rc" ] || fail "precondition: the verify ended before the commands were asked"
# past the daemon's --idle-timeout (2 s) twice over, both verifies still waiting for their answer
past_idle() { [ $((SECONDS - s0)) -ge 5 ]; }
wait_for 30 "time did not pass" past_idle
[ ! -f "$work/bg.rc" ] && [ ! -s "$work/bg-http.status" ] || fail "precondition: a verify ended early"
blocked2 || fail "precondition: the verifies no longer wait on the lock"
tgt -e "KILL $(sleeper)" || fail "could not end the lock session"
wait "$lockpid" 2>/dev/null || true
lockpid=""
wait "$bgpid" || true
[ "$(cat "$work/bg.rc")" = 0 ] && jq -e '.verify == "equal"' "$work/bg.json" >/dev/null ||
  fail "the verify that waited did not end equal: $(cat "$work/bg.json")"
wait "$httppid" || true
[ "$(cat "$work/bg-http.status")" = 200 ] && jq -e '.verify == "equal"' "$work/bg-http.json" >/dev/null ||
  fail "the HTTP verify that waited past --idle-timeout was not answered: $(cat "$work/bg-http.status") $(cat "$work/bg-http.json")"
wait_for 30 "the task is not Paused" stage_is Paused
log "3. query-status, resume-task, pause-task answered during a verify; the socket's and HTTP's verify answered after $((SECONDS - s0)) s (--idle-timeout 2)"

# 4. differences: a row changed, a row deleted on the target
tgt -e "UPDATE \`$db\`.t1 SET v = 'changed' WHERE id = 7; DELETE FROM \`$db\`.t1 WHERE id = 11;
        DELETE FROM \`$db\`.t2 WHERE a = 3 AND b = 'k3';"
echo "keep me" >"$work/exists.sql"
verify vt --fix-sql "$work/exists.sql"
[ "$vrc" = 2 ] || fail "--fix-sql over an existing file: exit $vrc, want 2"
vjq '.result == false and .error.ErrCode == 43103 and (has("reports") | not)' ||
  fail "--fix-sql over an existing file was not refused before the run"
[ "$(cat "$work/exists.sql")" = "keep me" ] || fail "the existing file was changed"
ln -s "$work/elsewhere.sql" "$work/link.sql"
verify vt --fix-sql "$work/link.sql"
[ "$vrc" = 2 ] && vjq '.error.ErrCode == 43103' || fail "--fix-sql through a link was not refused"
[ ! -e "$work/elsewhere.sql" ] || fail "a file was written through the link"
verify vt --fix-sql "$work/fix.sql"
[ "$vrc" = 1 ] || fail "verify with differences: exit $vrc, want 1: $(cat "$work/v.json")"
vjq ".result and .verify == \"different\" and .reports[0].result == \"different\" and
     ([.reports[0].tables[] | select(.target == \"$db.t1\")][0] |
       .rows_changed == 1 and .rows_missing == 1 and
       ([.differences[] | select(.kind == \"changed\" and .key.id == \"7\")] | length) == 1 and
       ([.differences[] | select(.kind == \"missing\" and .key.id == \"11\")] | length) == 1) and
     ([.reports[0].tables[] | select(.target == \"$db.t2\")][0] |
       .rows_missing == 1 and .differences[0].key.a == \"3\" and .differences[0].key.b == \"k3\") and
     .fix_sql_file == \"$work/fix.sql\" and (.reports[0] | has(\"fix_sql\") | not)" ||
  fail "the differences were not named by key, or the statements were printed"
[ "$(stat -c %a "$work/fix.sql")" = 600 ] || fail "the fix file is not 0600"
grep -q "REPLACE INTO \`$db\`.\`t1\`.*'7', 'v7'" "$work/fix.sql" &&
  grep -q "REPLACE INTO \`$db\`.\`t1\`.*'11', 'v11'" "$work/fix.sql" &&
  grep -q "REPLACE INTO \`$db\`.\`t2\`.*'3', 'k3'" "$work/fix.sql" ||
  fail "the fix file lacks the rows' statements: $(cat "$work/fix.sql")"
tgt <"$work/fix.sql" || fail "the fix file did not apply"
verify vt
[ "$vrc" = 0 ] && vjq '.verify == "equal"' || fail "verify after the fix: exit $vrc: $(cat "$work/v.json")"
[ "$(tgt -N -B -e "SELECT v FROM \`$db\`.t1 WHERE id IN (7, 11) ORDER BY id" | tr '\n' ' ')" = "v7 v11 " ] ||
  fail "the fixed rows are not the source's"
log "4. differences named, fix file written by dmctl, applied: equal"

# 5. the HTTP route: the same answer
post "/api/v1/dmhost/tasks/vt/verify" '{"chunk_rows": 50, "threads": "2"}'
[ "$status" = 200 ] || fail "POST verify: HTTP $status: $(cat "$work/out")"
jq -e ".result and .verify == \"equal\" and .quiet and
       ([.reports[0].tables[] | select(.target == \"$db.t1\")][0].rows == $n1)" "$work/out" >/dev/null ||
  fail "the route's answer is not equal: $(cat "$work/out")"
tgt -e "UPDATE \`$db\`.t2 SET n = -1 WHERE a = 1 AND b = 'k1';"
post "/api/v1/dmhost/tasks/vt/verify" '{"source_name_list": ["vt-src"], "fix_sql": true}'
[ "$status" = 200 ] || fail "POST verify (different): HTTP $status: $(cat "$work/out")"
jq -e '.verify == "different" and (.reports[0].fix_sql | contains("REPLACE INTO"))' "$work/out" \
  >/dev/null || fail "the route's answer lacks the difference or its statements: $(cat "$work/out")"
jq -r '.reports[0].fix_sql' "$work/out" | tgt || fail "the route's statements did not apply"
[ "$(tgt -N -B -e "SELECT n FROM \`$db\`.t2 WHERE a = 1 AND b = 'k1'")" = 1 ] ||
  fail "the route's statements did not restore the row"
post "/api/v1/dmhost/tasks/vt/verify" ''
[ "$status" = 200 ] && jq -e '.verify == "equal"' "$work/out" >/dev/null ||
  fail "POST verify without a body: HTTP $status: $(cat "$work/out")"
log "5. the route: equal, different with statements that repair, equal"

# 6. refusals
verify nosuch
[ "$vrc" = 2 ] && vjq '.result == false and .error.ErrCode == 14003 and (.msg | contains("nosuch"))' ||
  fail "an unknown task: exit $vrc: $(cat "$work/v.json")"
post "/api/v1/dmhost/tasks/nosuch/verify" '{}'
jq -e '.result == false and .error.ErrCode == 14003' "$work/out" >/dev/null ||
  fail "the route on an unknown task: HTTP $status: $(cat "$work/out")"
verify vt --chunk-rows 0
[ "$vrc" = 2 ] && vjq '.error.ErrCode == 14002 and (.msg | contains("chunk-rows"))' ||
  fail "--chunk-rows 0 was not refused: $(cat "$work/v.json")"
verify vt -s other-src
[ "$vrc" = 2 ] && vjq '.error.ErrCode == 14003 and (.msg | contains("other-src"))' ||
  fail "a source the task does not read was not refused: $(cat "$work/v.json")"
post "/api/v1/dmhost/tasks/vt/verify" '{"threads": 65}'
[ "$status" != 200 ] || jq -e '.result == false' "$work/out" >/dev/null ||
  fail "threads 65 was not refused: $(cat "$work/out")"
# a web page the operator's browser shows: refused before the command runs
status=$(curl -s -o "$work/out" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
  -H 'Origin: https://evil.example' -H 'Sec-Fetch-Site: cross-site' --data-binary '{}' \
  "http://$addr/api/v1/dmhost/tasks/vt/verify")
[ "$status" = 403 ] && ! grep -q '"reports"' "$work/out" ||
  fail "a cross-site request was not refused: HTTP $status: $(cat "$work/out")"
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
  crc=0
  setpriv --reuid=65534 --regid=65534 --clear-groups curl -s -o "$work/out" -X POST \
    -H 'Content-Type: application/json' --data-binary '{}' \
    "http://$addr/api/v1/dmhost/tasks/vt/verify" || crc=$?
  [ "$crc" != 0 ] && ! grep -q '"reports"' "$work/out" 2>/dev/null ||
    fail "another uid's request was answered: $(cat "$work/out")"
  log "   uid 65534: closed (curl exit $crc)"
else
  log "   (not root: the other-uid refusal is test_control_http_access's)"
fi
log "6. unknown task, bad arguments, cross-site and another uid refused"

# 7. a shutdown does not wait for a long verify: it stops at its next chunk, answers, exits 0
# (under ASan: nothing leaked, LeakSanitizer at exit). 100,000 chunks of one row take minutes.
for side in src tgt; do
  "$side" -e "CREATE TABLE \`$db\`.big (id INT PRIMARY KEY);
              INSERT INTO \`$db\`.big SELECT seq FROM \`$db\`.seq_1_to_100000"
done
began() { [ "$(grep -c 'task vt source vt-src: comparing' "$work/serve.log")" -gt "$1" ]; }
ended() { [ "$(grep -cE 'task vt source vt-src: (equal|different|not proven)' "$work/serve.log")" -gt "$1" ]; }
n_began=$(grep -c 'task vt source vt-src: comparing' "$work/serve.log" || true)
n_ended=$(grep -cE 'task vt source vt-src: (equal|different|not proven)' "$work/serve.log" || true)
(
  lrc=0
  "$dmctl" --state-dir "$work/state" verify vt --chunk-rows 1 >"$work/long.json" || lrc=$?
  echo $lrc >"$work/long.rc"
) &
longpid=$!
wait_for 30 "the long verify did not begin" began "$n_began"
ended "$n_ended" && fail "precondition: the long verify ended before the shutdown"
s0=$SECONDS
kill -TERM "$pid"
gone() { ! proc_alive "$pid"; }
wait_for 30 "dmhost serve did not exit within 30 s of SIGTERM with a verify running" gone
src_rc=0
wait "$pid" || src_rc=$?
pid=""
[ "$src_rc" = 0 ] || fail "dmhost serve did not exit 0 on SIGTERM (exit $src_rc)"
wait "$longpid" || true
[ "$(cat "$work/long.rc")" = 2 ] &&
  jq -e '.verify == "error" and ([.reports[0].tables[] | select(.error.ErrCode == 43107)] | length) >= 1
         and .reports[0].error.ErrCode == 43107' "$work/long.json" >/dev/null ||
  fail "the cut verify did not answer 43107 (exit $(cat "$work/long.rc")): $(head -c 2000 "$work/long.json")"
grep -q 'task vt source vt-src: not proven (error): verify: cancelled' "$work/serve.log" ||
  fail "the serve log does not say the verify was cancelled"
log "7. SIGTERM during a verify of 100,000 chunks: exit 0 in $((SECONDS - s0)) s, the verify answered 43107"
log "passed"

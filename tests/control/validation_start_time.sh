#!/usr/bin/env bash
# The validator's start-time (issue 24, docs/validation.md "start-time"; DM's
# getInitialBinlogPosition): a validator without a checkpoint starts at the first transaction that
# began at or after the time, not where the sync stands.
#  1. A mode-all task with the validator off (mode none) syncs rows 1-100 (before T) and 101-200
#     (at or after T: written once the source's clock passed T); the sync applies both, then the
#     target's copies of row 50 and row 150 are changed behind the sync's back.
#  2. `dmctl validation start vst --start-time T` on the running, idle sync: the validator replays
#     the binlog from T's transaction (the coordinator's catch-up at its next boundary) and reports
#     row 150 as an error row, never row 50 (before T). Without the start-time it would start where
#     the sync is and report neither (the precondition of the assertion: both changed rows differ).
#  3. `validation stop`, rows synced meanwhile (row 250 then changed on the target), `validation
#     start`: it goes on from its checkpoint, as DM's validator reads on from there: row 250 found.
#  4. A second task whose libconfig `validator.start-time` is later than the source's last
#     transaction: the validator stops with DM's "too late" error in its status (11013), the sync
#     goes on.
#
#   validation_start_time.sh <dmhost> <dmctl> <plugin dir> <source dir>
set -euo pipefail
dmhost=$1 dmctl=$2 plugins=$3 src_dir=$4
cd "$src_dir"
tag=validation_start_time db=vst_db meta=vst_meta db2=vst_db2 meta2=vst_meta2
work=$(mktemp -d /tmp/dmh-vst-XXXXXX)
t0=$SECONDS
. tests/crash/lib.sh
serve_begin
for tool in jq; do command -v $tool >/dev/null || fail "$tool is needed"; done
ctl() { "$dmctl" --state-dir "$work/state" --timeout 120 "$@"; }
val() { ctl validation "$@" >"$work/v.json" 2>"$work/v.err" || true; }
vjq() { jq -e "$1" "$work/v.json" >/dev/null 2>&1; }
vshow() { cat "$work/v.json" "$work/v.err" 2>/dev/null; }
qs_jq() { # task filter
  ctl query-status "$1" >"$work/qs.json" 2>/dev/null || true
  jq -e "$2" "$work/qs.json" >/dev/null
}
rows_on_target() { [ "$(tgt -N -B -e "SELECT COUNT(*) FROM \`$1\`.t")" = "$2" ]; }
src_time_ge() { [ "$(src -N -B -e "SELECT NOW() >= '$1'")" = 1 ]; }
errors_listed() { # task: show-error lists at least one row
  val show-error --error all "$1"
  vjq '.result and (.error | length) >= 1'
}

src -e "DROP DATABASE IF EXISTS \`$db\`; DROP DATABASE IF EXISTS \`$db2\`;
        CREATE DATABASE \`$db\`; CREATE DATABASE \`$db2\`; USE \`$db2\`;
        CREATE TABLE \`$db\`.t (id INT PRIMARY KEY, pad VARCHAR(40) NOT NULL);
        CREATE TABLE \`$db2\`.t (id INT PRIMARY KEY, pad VARCHAR(40) NOT NULL);
        INSERT INTO \`$db2\`.t SELECT seq, 'x' FROM seq_1_to_10;"
tgt -e "DROP DATABASE IF EXISTS \`$db\`; DROP DATABASE IF EXISTS \`$meta\`;
        DROP DATABASE IF EXISTS \`$db2\`; DROP DATABASE IF EXISTS \`$meta2\`;"
crash_source_cfg vst-src
crash_task_cfg vst "$meta" "$db" vst-src >"$work/task.cfg" <<'CFG'
supervisor = { auto-resume = { enable = false; }; };
sync = { batch-ms = 50;
         validator = { validate-interval = "1s"; row-error-delay = "2s"; meta-flush-interval = "1s"; }; };
CFG
serve_listen "$dmhost" "$plugins" || fail "dmhost serve did not listen"
ctl operate-source create "$work/source.cfg" >/dev/null || fail "operate-source create"
ctl start-task "$work/task.cfg" >"$work/start.json" || fail "start-task: $(cat "$work/start.json")"
wait_for 120 "the sync did not start" qs_jq vst '.sources[0].subTaskStatus[0].unit == "Sync" and
  .sources[0].subTaskStatus[0].stage == "Running"'

# 1. rows before T, then (the source's clock past T) rows at or after it
src "$db" -e "INSERT INTO t SELECT seq, 'before' FROM seq_1_to_100"
T=$(src -N -B -e "SELECT NOW() + INTERVAL 2 SECOND")
wait_for 30 "the source's clock did not reach $T" src_time_ge "$T"
src "$db" -e "INSERT INTO t SELECT seq, 'after' FROM seq_101_to_200"
wait_for 60 "the sync did not apply the 200 rows" rows_on_target "$db" 200
tgt -e "UPDATE \`$db\`.t SET pad = 'tampered' WHERE id IN (50, 150)"
[ "$(tgt -N -B -e "SELECT COUNT(*) FROM \`$db\`.t WHERE pad = 'tampered'")" = 2 ] ||
  fail "precondition: the two target rows were not changed"
val status vst
vjq '.validators[0].stage == "Stopped" or (.validators | length) == 0 or .validators[0].mode == "none"' ||
  fail "precondition: the validator runs before the start: $(vshow)"
log "1. rows 1-100 before $T, 101-200 after, rows 50 and 150 changed on the target"

# 2. validation start --start-time T: row 150 found, row 50 not
val start vst --start-time "$T"
vjq '.result == true' || fail "validation start --start-time: $(vshow)"
wait_for 120 "the validator did not report row 150: $(vshow)" errors_listed vst
grep -q "validator: start-time $T: from " "$work/serve.log" ||
  fail "the serve log does not say where the start-time put the validator"
val show-error --error all vst
vjq '[.error[].message] == ["150"]' || fail "show-error after --start-time $T: $(vshow)"
vjq '.error[0].errorType == "Column data not matched" and (.error[0].dstData | test("tampered"))' ||
  fail "row 150's error: $(vshow)"
log "2. validation start --start-time: row 150 reported, row 50 (before the time) not"

# 3. stopped by a command, the sync goes on (row 250 synced, then changed on the target), started
#    again: the span is fed from its checkpoint (DM's validator reads on from there), row 250 found
val stop vst
vjq '.result == true' || fail "validation stop: $(vshow)"
src "$db" -e "INSERT INTO t SELECT seq, 'while stopped' FROM seq_201_to_300"
wait_for 60 "the sync did not apply rows 201-300" rows_on_target "$db" 300
tgt -e "UPDATE \`$db\`.t SET pad = 'tampered' WHERE id = 250"
val start vst
vjq '.result == true' || fail "validation start after the stop: $(vshow)"
row_250_listed() {
  val show-error --error all vst
  vjq '[.error[].message] | index("250") != null'
}
wait_for 120 "row 250, changed while the validator was stopped, was not reported" row_250_listed
val show-error --error all vst
vjq '[.error[].message] | sort == ["150", "250"]' || fail "after the restart: $(vshow)"
log "3. stop, rows synced meanwhile, start: the span fed again, row 250 reported (row 50 still not)"

# 4. a start-time after the source's last transaction: DM's too-late error, the sync goes on
T2=$(src -N -B -e "SELECT NOW() + INTERVAL 1 HOUR")
crash_task_cfg vst2 "$meta2" "$db2" vst-src >"$work/task2.cfg" <<CFG
supervisor = { auto-resume = { enable = false; }; };
sync = { batch-ms = 50;
         validator = { mode = "full"; start-time = "$T2"; }; };
CFG
ctl start-task "$work/task2.cfg" >"$work/start2.json" || fail "start-task vst2: $(cat "$work/start2.json")"
wait_for 120 "vst2's sync did not start" qs_jq vst2 '.sources[0].subTaskStatus[0].unit == "Sync" and
  .sources[0].subTaskStatus[0].stage == "Running"'
too_late() {
  val status vst2
  vjq '.validators[0].stage == "Stopped" and (.validators[0].result.errors[0].Message | test("start-time '"$T2"': the source has no transaction"))'
}
wait_for 60 "vst2's validator did not stop with the too-late error (its status: $work/v.json, KEEP=1)" too_late
src -e "INSERT INTO \`$db2\`.t VALUES (11, 'y')"
wait_for 60 "vst2's sync did not go on after its validator stopped" rows_on_target "$db2" 11
log "4. a start-time after the last transaction: the validator stopped with it, the sync goes on"
log "PASS"

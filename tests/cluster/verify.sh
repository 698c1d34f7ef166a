#!/usr/bin/env bash
# dmctl verify TASK through a cluster's master (issue 24; the daemon's half is
# tests/control/verify_task.sh): one `dmhost master`, one `dmhost worker`, one source, a mode-all
# task synced. The master forwards verify to the source's worker, which runs it on its registry:
#  1. equal (exit 0), the report of the source with the worker's stage (Running: quiet false);
#  2. a target row changed: exit 1 naming its key; --fix-sql FILE written by dmctl from the
#     statements the worker answered through the master; applied: equal again (exit 0), the row the
#     source's;
#  3. an unknown task (14003, exit 2) and a source the task does not read refused by the master.
#
#   verify.sh <dmhost> <dmctl> <plugin dir> <source dir>
set -euo pipefail
dmhost=$1 dmctl=$2 plugins=$3 src_dir=$4
cd "$src_dir"
work=$(mktemp -d /tmp/dmh-cluster-verify-XXXXXX)
t0=$SECONDS tag=cluster_verify tasks="clvf"
db=cluster_vf_db meta=cluster_vf_meta
. tests/crash/lib.sh
. tests/cluster/lib.sh
cleanup() {
  src -e "DROP DATABASE IF EXISTS \`$db\`" 2>/dev/null || true
  tgt -e "DROP DATABASE IF EXISTS \`$db\`; DROP DATABASE IF EXISTS \`$meta\`" 2>/dev/null || true
  cluster_cleanup
}
trap cleanup EXIT
# dmctl verify through m1: the answer in $work/v.json, the exit code in $vrc
verify() {
  vrc=0
  "$dmctl" --master-addr "127.0.0.1:${m_port[1]}" --timeout 120 verify "$@" >"$work/v.json" || vrc=$?
}
vjq() { jq -e "$1" "$work/v.json" >/dev/null || { cat "$work/v.json" >&2; return 1; }; }

src -e "DROP DATABASE IF EXISTS \`$db\`; CREATE DATABASE \`$db\`;
        CREATE TABLE \`$db\`.t1 (id INT PRIMARY KEY, v VARCHAR(40));"
src "$db" -e "INSERT INTO t1 SELECT seq, CONCAT('v', seq) FROM seq_1_to_120;"
tgt -e "DROP DATABASE IF EXISTS \`$db\`; DROP DATABASE IF EXISTS \`$meta\`"
crash_source_cfg clvfsrc
mv "$work/source.cfg" "$work/clvfsrc.cfg"
crash_task_cfg clvf "$meta" "$db" clvfsrc >"$work/clvf.cfg" <<'CFG'
supervisor = { auto-resume = { enable = false; }; };
CFG

master_up 1
start_worker w1
source_create 1 clvfsrc
wait_for 30 "clvfsrc was not bound to w1" members_are 1 "w1 bound clvfsrc"
task_start 1 clvf
wait_for 60 "clvf does not run on w1" task_running clvf clvfsrc 1
wait_for 60 "the target does not equal the source" t1_same "$db"

# 1. equal, through the master, from the worker
verify clvf
[ "$vrc" = 0 ] || fail "verify through m1: exit $vrc, want 0: $(cat "$work/v.json")"
vjq '.result and .task == "clvf" and .verify == "equal" and (.reports | length) == 1 and
     .reports[0].source == "clvfsrc" and .reports[0].result == "equal" and
     .reports[0].tables[0].rows == 120 and .reports[0].stage == "Running" and .quiet == false' ||
  fail "the master's answer is not the worker's equal report"
log "1. verify through m1: equal, run by w1 (stage Running, quiet false)"

# 2. a difference, its fix written by dmctl
tgt -e "UPDATE \`$db\`.t1 SET v = 'changed' WHERE id = 42;"
verify clvf -s clvfsrc --fix-sql "$work/fix.sql"
[ "$vrc" = 1 ] || fail "verify with a changed row: exit $vrc, want 1: $(cat "$work/v.json")"
vjq '.verify == "different" and .reports[0].tables[0].rows_changed == 1 and
     .reports[0].tables[0].differences[0].key.id == "42" and (.reports[0] | has("fix_sql") | not)' ||
  fail "the changed row was not named by key"
[ "$(stat -c %a "$work/fix.sql")" = 600 ] || fail "the fix file is not 0600"
grep -q "REPLACE INTO .*'42', 'v42'" "$work/fix.sql" || fail "the fix file lacks row 42: $(cat "$work/fix.sql")"
tgt <"$work/fix.sql" || fail "the fix file did not apply"
verify clvf
[ "$vrc" = 0 ] || fail "verify after the fix: exit $vrc: $(cat "$work/v.json")"
[ "$(tgt -N -B -e "SELECT v FROM \`$db\`.t1 WHERE id = 42")" = v42 ] || fail "row 42 is not the source's"
log "2. a changed row named, the fix written by dmctl and applied: equal"

# 3. refusals by the master
verify nosuch
[ "$vrc" = 2 ] && vjq '.result == false and .error.ErrCode == 14003 and (.msg | contains("nosuch"))' ||
  fail "an unknown task through m1: exit $vrc"
verify clvf -s other
[ "$vrc" = 2 ] && vjq '.result == false and .error.ErrCode == 14003 and (.msg | contains("other"))' ||
  fail "a source the task does not read: exit $vrc"
log "3. an unknown task and source refused by m1"
stop_proc w1
stop_proc m1
log "passed"

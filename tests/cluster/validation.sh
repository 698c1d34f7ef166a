#!/usr/bin/env bash
# dmctl validation through a cluster's master (issue 24; the daemon's half is
# tests/control/test_validation.c): one `dmhost master`, one `dmhost worker`, one source, an
# incremental task whose sync is the fake sync with a validation_op (tests/fixtures,
# fake-sync-val: a tiny in-memory validator, so this test does not depend on plugins/sync's). The
# master forwards each subcommand to the worker of the subtask's source and answers DM's shapes:
#  1. status: DM's validators/tableStatuses from the worker's unit, the worker named;
#  2. start --mode fast, then status Running/fast; a second start (no change), one with a mode
#     (the unit's refusal); show-error and ignore-error; stop --all-task;
#  3. refusals: an unknown task (14003, DM's words), a bad --mode (the master's own parse, DM's
#     words), a source the task does not read.
#
#   validation.sh <dmhost> <dmctl> <plugin dir> <source dir>
set -euo pipefail
dmhost=$1 dmctl=$2 plugins=$3 src_dir=$4
cd "$src_dir"
work=$(mktemp -d /tmp/dmh-cluster-validation-XXXXXX)
t0=$SECONDS tag=cluster_validation tasks="clval"
. tests/crash/lib.sh
. tests/cluster/lib.sh
# the fake unit comes from a unit folder of the workers (never /tmp: docs/security.md), named by
# the task file's unit-paths, which a master and a worker take only with the flag
fake="$(dirname "$plugins")/tests/fixtures/fake-sync-val.so"
[ -f "$fake" ] || { echo "$tag: $fake is not built" >&2; exit 1; }
units=$(mktemp -d "$(dirname "$plugins")/validation-units.XXXXXX")
cp "$fake" "$units/"
chmod 0755 "$units" "$units/fake-sync-val.so"
worker_extra=(--unit-dir "$units" --allow-submitted-unit-paths)
cleanup() {
  cluster_cleanup
  rm -rf "$units"
}
trap cleanup EXIT
# dmctl validation through m1: the answer in $work/v.json, the exit code in $vrc
val() {
  vrc=0
  ctl 1 validation "$@" >"$work/v.json" || vrc=$?
}
vjq() { jq -e "$1" "$work/v.json" >/dev/null || { cat "$work/v.json" >&2; return 1; }; }
# the last answer: exit code $1 and jq filter $2 true, or the test fails saying $3
want() {
  [ "$vrc" = "$1" ] || fail "$3: exit $vrc, want $1: $(cat "$work/v.json")"
  vjq "$2" || fail "$3"
}

crash_source_cfg clvsrc
mv "$work/source.cfg" "$work/clvsrc.cfg"
cat >"$work/clval.cfg" <<CFG
name = "clval";
task-mode = "incremental";
target-database = { host = "$DMH_TARGET_HOST"; port = $DMH_TARGET_PORT; user = "$DMH_TARGET_USER"; password = ""; };
mysql-instances = ( { source-id = "clvsrc"; } );
unit-paths = { sync = "$units/fake-sync-val.so"; };
sync = { items = 0; item-ms = 10; };
supervisor = { auto-resume = { enable = false; }; };
ignore-checking-items = ["all"]; # the fake sync reads nothing
CFG

# the master loads the task file too: it must take the unit path as well
"$dmhost" master --name m1 --etcd "$DMH_ETCD_ENDPOINTS" "${etcd_flags[@]}" --etcd-prefix "$prefix" \
  --listen "127.0.0.1:${m_port[1]}" --allow-submitted-unit-paths >>"$work/m1.log" 2>&1 &
pid[m1]=$!
wait_for 20 "m1 does not answer" ctl 1 list-member
start_worker w1
source_create 1 clvsrc
wait_for 30 "clvsrc was not bound to w1" members_are 1 "w1 bound clvsrc"
task_start 1 clval
wait_for 60 "clval does not run on w1" task_running clval clvsrc 1

# 1. status through the master, answered by w1's unit
val status clval
want 0 '.result and (.validators | length) == 1 and .validators[0].task == "clval" and
  .validators[0].source == "clvsrc" and .validators[0].stage == "Stopped" and
  (.tableStatuses | length) == 2 and .sources[0].worker == "w1" and
  .sources[0].source == "clvsrc"' "status through m1 is not the worker's"
log "1. validation status through m1: w1's validator (Stopped, 2 tables)"

# 2. start, status, errors, stop --all-task
val start clval --mode fast
want 0 '.result and .msg == "success" and .sources[0].result' "validation start through m1"
val status --table-stage running clval
want 0 '.validators[0].stage == "Running" and .validators[0].mode == "fast" and
  (.tableStatuses | length) == 1' "status after start"
val start clval
want 0 '.result and .msg == "success"' "a second start is no change (DM: success)"
val start clval --mode full
want 1 '.result == false and .sources[0].result == false and
  (.msg | contains("all target validator has enabled"))' \
  "a start with a mode on an enabled validator was not refused by the unit"
val show-error clval
want 0 '(.error | length) == 3 and .error[0].status == "NewErr"' "show-error through m1"
val ignore-error clval 1
want 0 '.result' "ignore-error through m1"
val show-error --error ignored clval
want 0 '(.error | length) == 1 and .error[0].id == "1"' "the ignored error is not shown"
val stop --all-task
want 0 '.result and .msg == "success" and .sources[0].task == "clval"' \
  "validation stop --all-task through m1"
val status clval
want 0 '.validators[0].stage == "Stopped"' "stop did not reach the worker"
log "2. start, errors, stop --all-task through m1: at w1's validator"

# 3. refusals (DM's words hold backquotes: the filters are single-quoted on purpose)
# shellcheck disable=SC2016
{
  val status nosuch
  want 1 '.result == false and .error.ErrCode == 14003 and
    .msg == "cannot get subtask by task name `nosuch`"' "an unknown task through m1"
  val start clval --mode slow
  want 1 '.error.ErrCode == 14002 and
    (.msg | contains("mode should be either `full` or `fast`, current is `slow`"))' \
    "a bad --mode through m1"
}
val stop clval -s other
want 1 '.error.ErrCode == 14003 and (.msg | contains("[other]"))' "a source the task does not read"
log "3. an unknown task, a bad mode, another source refused by m1"
stop_proc w1
stop_proc m1
log "passed"

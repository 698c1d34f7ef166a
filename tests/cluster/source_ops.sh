#!/usr/bin/env bash
# operate-source disable|enable|update through the masters (DM's source `enable` flag and its
# PUT /api/v1/sources/{name}): two `dmhost master` processes (m1 leads, m2 forwards to it), one
# `dmhost worker`, one source, a mode-all task.
#  1. disable through m2: the flag in etcd, the task Paused on w1; resume-task and start-task of
#     another task on the source refused (14013), nothing written; rows written meanwhile stay on
#     the source;
#  2. enable through m1: the task runs again on w1 and the rows reach the target;
#  3. update with the task running refused (14012), the text in etcd unchanged; paused but with
#     its relay running (start-relay) refused too;
#  4. stop-relay, update (server-id changed): w1's source takes the new text (its copy in w1's
#     state dir); resume-task: more rows reach the target, target = source.
#
#   source_ops.sh <dmhost> <dmctl> <plugin dir> <source dir>
set -euo pipefail
dmhost=$1 dmctl=$2 plugins=$3 src_dir=$4
cd "$src_dir"
work=$(mktemp -d /tmp/dmh-cluster-srcops-XXXXXX)
t0=$SECONDS tag=cluster_source_ops tasks="cso"
db=cluster_so_db meta=cluster_so_meta
. tests/crash/lib.sh
. tests/cluster/lib.sh
cleanup() {
  src -e "DROP DATABASE IF EXISTS \`$db\`" 2>/dev/null || true
  tgt -e "DROP DATABASE IF EXISTS \`$db\`; DROP DATABASE IF EXISTS \`$meta\`;
          DROP DATABASE IF EXISTS \`${meta}2\`" 2>/dev/null || true
  cluster_cleanup
}
trap cleanup EXIT
etcd_get() { ETCDCTL_API=3 etcdctl --endpoints "$DMH_ETCD_ENDPOINTS" get --print-value-only "$1" 2>/dev/null; }
stage_is() { ctl 1 query-status cso | jq -e --arg s "$1" '[.. | objects | select(.name == "cso" and
  .source == "csosrc" and .stage == $s)] | length > 0'; }
rows() { tgt -N -B -e "SELECT COUNT(*) FROM \`$db\`.t1"; }
# dmctl ARGS... through master $1 must fail with code $2; its answer in $work/ctl.out
refused() { # master code args...
  local m=$1 code=$2
  shift 2
  ctl "$m" "$@" >"$work/ctl.out" && fail "dmctl $* was taken: $(cat "$work/ctl.out")"
  jq -e --argjson c "$code" '.result == false and .error.ErrCode == $c' "$work/ctl.out" >/dev/null ||
    fail "dmctl $* was not refused with $code: $(cat "$work/ctl.out")"
}
relay_kept() { etcd_get "$prefix/worker/w1" | jq -e --arg s "$1" '.relay == $s'; }

src -e "DROP DATABASE IF EXISTS \`$db\`; CREATE DATABASE \`$db\`;
        CREATE TABLE \`$db\`.t1 (id INT PRIMARY KEY, v VARCHAR(40));"
src "$db" -e "INSERT INTO t1 SELECT seq, CONCAT('v', seq) FROM seq_1_to_100;"
tgt -e "DROP DATABASE IF EXISTS \`$db\`; DROP DATABASE IF EXISTS \`$meta\`"
crash_source_cfg csosrc
mv "$work/source.cfg" "$work/csosrc.cfg"
crash_task_cfg cso "$meta" "$db" csosrc >"$work/cso.cfg" <<'CFG'
supervisor = { auto-resume = { enable = false; }; };
CFG
crash_task_cfg cso2 "${meta}2" "$db" csosrc >"$work/cso2.cfg" </dev/null

master_up 1
master_up 2
start_worker w1
source_create 1 csosrc
wait_for 30 "csosrc was not bound to w1" members_are 1 "w1 bound csosrc"
task_start 1 cso
wait_for 60 "cso does not run on w1" task_running cso csosrc 1
wait_for 60 "the target does not equal the source" t1_same "$db"
log "cso runs on w1: target = source"

# 1. disable through the follower m2 (forwarded to the leader)
ctl 2 operate-source disable -s csosrc >"$work/ctl.out" || fail "operate-source disable through m2: $(cat "$work/ctl.out")"
jq -e '.result and ([.tasks[].task] == ["cso"])' "$work/ctl.out" >/dev/null ||
  fail "disable did not answer that it paused cso: $(cat "$work/ctl.out")"
etcd_get "$prefix/disabled/csosrc" | jq -e '.paused == ["cso"]' >/dev/null ||
  fail "the disabled flag in etcd is not {paused: [cso]}: $(etcd_get "$prefix/disabled/csosrc")"
[ "$(etcd_get "$prefix/stage/cso/csosrc")" = Paused ] || fail "disable did not set cso's stage key Paused"
wait_for 60 "cso is not Paused on w1 after disable" stage_is Paused
src "$db" -e "INSERT INTO t1 SELECT seq, CONCAT('w', seq) FROM seq_101_to_200;"
refused 1 14013 resume-task cso
grep -q "source: csosrc is not enabled" "$work/ctl.out" || fail "resume-task's refusal lacks DM's words: $(cat "$work/ctl.out")"
refused 2 14013 start-task "$work/cso2.cfg"
[ -z "$(etcd_get "$prefix/task/cso2")" ] || fail "a refused start-task wrote cso2"
[ "$(etcd_get "$prefix/stage/cso/csosrc")" = Paused ] || fail "a refused resume-task changed the stage key"
[ "$(rows)" = 100 ] || fail "rows reached the target while the source was disabled"
ctl 1 operate-source disable -s csosrc >"$work/ctl.out" || fail "a second disable: $(cat "$work/ctl.out")"
jq -e '.tasks == []' "$work/ctl.out" >/dev/null || fail "a second disable changed something: $(cat "$work/ctl.out")"
log "disabled through m2: cso Paused on w1; resume-task and start-task refused 14013"

# 2. enable: what the disable paused runs again
ctl 1 operate-source enable -s csosrc >"$work/ctl.out" || fail "operate-source enable: $(cat "$work/ctl.out")"
jq -e '[.tasks[].task] == ["cso"]' "$work/ctl.out" >/dev/null || fail "enable did not resume cso: $(cat "$work/ctl.out")"
[ -z "$(etcd_get "$prefix/disabled/csosrc")" ] || fail "the disabled flag is still in etcd after enable"
wait_for 60 "cso does not run on w1 after enable" task_running cso csosrc 1
wait_for 60 "the rows written while disabled did not reach the target" t1_same "$db"
[ "$(rows)" = 200 ] || fail "the target has not 200 rows after enable"
log "enabled: cso runs again, the rows written meanwhile reached the target"

# 3. update refused while cso runs, and while its relay runs
sed 's/^source-id = .*/&\nserver-id = 4242;/' "$work/csosrc.cfg" >"$work/csosrc-new.cfg"
before=$(etcd_get "$prefix/source/csosrc")
refused 2 14012 operate-source update "$work/csosrc-new.cfg"
grep -q "Running: cso" "$work/ctl.out" || fail "the refusal does not name cso: $(cat "$work/ctl.out")"
[ "$(etcd_get "$prefix/source/csosrc")" = "$before" ] || fail "a refused update changed the text in etcd"
ctl 1 pause-task cso >"$work/ctl.out" || fail "pause-task: $(cat "$work/ctl.out")"
wait_for 60 "cso is not Paused on w1" stage_is Paused
ctl 1 start-relay -s csosrc w1 >"$work/ctl.out" || fail "start-relay: $(cat "$work/ctl.out")"
wait_for 60 "w1 does not keep csosrc's relay" relay_kept csosrc
refused 1 14012 operate-source update "$work/csosrc-new.cfg"
grep -q "its relay runs" "$work/ctl.out" || fail "the refusal does not name the relay: $(cat "$work/ctl.out")"
[ "$(etcd_get "$prefix/source/csosrc")" = "$before" ] || fail "a refused update changed the text in etcd"
log "update refused (14012) while cso ran and while its relay ran; nothing written"

# 4. relay stopped, the update taken by w1
ctl 1 stop-relay -s csosrc w1 >"$work/ctl.out" || fail "stop-relay: $(cat "$work/ctl.out")"
wait_for 60 "w1 still keeps csosrc's relay" relay_kept ""
grep -q "server-id = 4242" "$work/w1/sources/csosrc/source.cfg" && fail "precondition: w1 holds the new text already"
ctl 1 operate-source update "$work/csosrc-new.cfg" >"$work/ctl.out" || fail "operate-source update: $(cat "$work/ctl.out")"
etcd_get "$prefix/source/csosrc" | jq -e '.config | contains("server-id = 4242")' >/dev/null ||
  fail "the updated text is not in etcd"
took() { grep -q "server-id = 4242" "$work/w1/sources/csosrc/source.cfg"; }
wait_for 60 "w1's source did not take the updated text" took
wait_for 10 "w1 did not log the update" grep -q "source csosrc: took the updated text" "$work/w1.log"
src "$db" -e "INSERT INTO t1 SELECT seq, CONCAT('u', seq) FROM seq_201_to_300;"
ctl 1 resume-task cso >"$work/ctl.out" || fail "resume-task after the update: $(cat "$work/ctl.out")"
wait_for 60 "cso does not run on w1 after the update" task_running cso csosrc 1
wait_for 60 "the target does not equal the source after the update" t1_same "$db"
[ "$(rows)" = 300 ] || fail "the target has not 300 rows"
log "updated after pause and stop-relay: w1 took server-id 4242, cso resumed, target = source"

for p in w1 m2 m1; do stop_proc "$p"; done
log "PASSED"

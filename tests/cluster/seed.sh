#!/usr/bin/env bash
# Issue 11's seed scenario end to end, real processes only: two `dmhost master` (one leads) and three
# `dmhost worker` w1 w2 w3 (each its own state dir) on the fixture's 3-member etcd, driven only by
# `dmctl --master-addr`. Two sources (source1, source2: two files, two source-ids, the one source
# server of the test pair, each with enable-relay), two mode-all tasks (task1: db1 from source1,
# task2: db2 from source2, into the one target). operate-source create both; transfer-source
# source1 w2 and source2 w3 (w1 stays free); list-member shows w2 and w3 at relay for them, w1 free;
# start-task both; a write workload on both schemas; then the rolling restart: each worker in name
# order gets SIGTERM (exit 0 asserted) and starts again on its state dir, and the next one waits
# until it runs again (its log says so after the new start). Throughout, a monitor polls
# query-status and list-member through the masters (alternately) and fails on any subtask error,
# on a source not served by an online worker at relay for it, or on a binding moved. After the
# workload stops both targets equal their sources and no log has a duplicate key
# (on-duplicate "error"). Then kill -9 of w2: after its lease (TTL 10 s) source1 moves to the free
# w1, which runs task1 on; the targets equal the sources again.
#
#   seed.sh <dmhost> <dmctl> <plugin dir> <source dir>
#
# KEEP=1 keeps the work folder. Servers from `scripts/mariadb.sh env`, etcd from `scripts/etcd.sh env`.
set -euo pipefail
dmhost=$1 dmctl=$2 plugins=$3 src_dir=$4
cd "$src_dir"
work=$(mktemp -d /tmp/dmh-cluster-seed-XXXXXX)
t0=$SECONDS tag=cluster_seed tasks="task1 task2"
db1=cluster_seed_db1 db2=cluster_seed_db2 meta=cluster_seed_meta
cp_table="\`$meta\`.\`task1_syncer_checkpoint\`"
. tests/crash/lib.sh
. tests/cluster/lib.sh
wl_pids=() mon_pid=""
# swap-unit's new build comes from a unit folder of the workers (never /tmp, nor a folder they write
# into: docs/security.md), and a path a master forwards is taken only with the flag
units=$(mktemp -d "$(dirname "$plugins")/seed-units.XXXXXX")
worker_extra=(--unit-dir "$units" --allow-submitted-unit-paths)
cleanup() {
  # (a monitor that ended by itself is no failure here: set -e would end the cleanup)
  [ -z "$mon_pid" ] || kill "$mon_pid" 2>/dev/null || true
  stop_workload
  cluster_cleanup
  rm -rf "$units"
}
trap cleanup EXIT

# The monitor (in the background): every ~0.3 s, through m1 and m2 in turn, query-status of both
# tasks must carry no error (a result other than null/true, a non-empty "errors" anywhere) and,
# while $work/want exists, list-member must show exactly its bindings (every source served by its
# worker at relay). The first violation goes to $work/monitor.err and the monitor ends; each sample
# adds a line to $work/monitor.samples.
monitor() {
  local m=1 t out want
  while [ ! -e "$work/monitor.stop" ]; do
    for t in task1 task2; do
      out=$(ctl "$m" query-status "$t") || { echo "query-status $t through m$m failed: $out" >"$work/monitor.err"; return; }
      if ! jq -e '[.. | objects | select((has("result") and .result != null and .result != true)
          or ((.errors // []) | length > 0))] | length == 0' <<<"$out" >/dev/null; then
        echo "query-status $t through m$m shows an error: $out" >"$work/monitor.err"
        return
      fi
    done
    # read once, before the sample: the scenario removes or rewrites the file meanwhile
    want=$(cat "$work/want" 2>/dev/null || true)
    if [ -n "$want" ]; then
      out=$(members "$m" | sort)
      [ "$out" = "$want" ] || {
        echo "list-member through m$m: $(tr '\n' ';' <<<"$out") wanted $(tr '\n' ';' <<<"$want")" >"$work/monitor.err"
        return
      }
    fi
    echo "m$m" >>"$work/monitor.samples"
    m=$((3 - m))
    sleep 0.3
  done
}
monitor_ok() { [ ! -e "$work/monitor.err" ] || fail "monitor: $(cat "$work/monitor.err")"; }
start_workload() {
  rm -f "$work/stop"
  workload_client "$db1" 3 $((RANDOM + 1))
  workload_client "$db2" 3 $((RANDOM + 1))
}
# after the workload stopped: both targets equal their sources (within 60 s), no duplicate key
targets_equal() {
  for _ in $(seq 1 60); do
    bash scripts/checksum.sh "$db1" "$db2" >"$work/checksum.out" 2>&1 && break
    sleep 1
  done
  bash scripts/checksum.sh "$db1" "$db2" >"$work/checksum.out" 2>&1 ||
    fail "a target differs from its source: $(cat "$work/checksum.out")"
  no_dup "$work"/w*.log
}
# until the lines of log $1 after line $2 match $3 (seconds $4)
wait_log_after() {
  for _ in $(seq 1 $(($4 * 10))); do
    tail -n +$(($2 + 1)) "$1" | grep -qE "$3" && return 0
    monitor_ok
    sleep 0.1
  done
  return 1
}

# ---- the source: two schemas, each with the workload's tables and a fill ----
for db in "$db1" "$db2"; do
  sed "s/sync_wl/$db/g" tests/sql/sync-workload.sql | src
  src "$db" -e "CALL sync_fill(2000)"
  tgt -e "DROP DATABASE IF EXISTS \`$db\`"
done
tgt -e "DROP DATABASE IF EXISTS \`$meta\`"
for s in 1 2; do
  cat >"$work/source$s.cfg" <<CFG
source-id = "source$s";
server-id = $((4242000 + s));
enable-relay = true;
from = { host = "$DMH_SOURCE_HOST"; port = $DMH_SOURCE_PORT; user = "$DMH_SOURCE_USER"; password = ""; };
CFG
  db=$([ "$s" = 1 ] && echo "$db1" || echo "$db2")
  crash_task_cfg "task$s" "$meta" "$db" "source$s" >"$work/task$s.cfg" <<CFG
supervisor = { auto-resume = { enable = false; }; };
load = { on-duplicate = "error"; };
sync = { batch-ms = 50; status-interval = 200; };
CFG
done

# ---- the cluster ----
start_master 1
start_master 2
# w1 joins after the sources are placed: a source's relay starts with its binding (enable-relay)
# and stays on the worker after a transfer, which would leave w1 at relay for the source first
# bound there (a worker at relay takes no other source) until a stop-relay (tested below)
for w in w2 w3; do start_worker "$w"; done
wait_for 10 "the masters did not answer list-member" ctl 1 list-member
wait_for 10 "the workers did not all register free" members_are 2 "w2 free 
w3 free "
leader=$(ctl 1 list-member --master | jq -r '.members[] | select(.leader) | .leader.name')
[ "$leader" = m1 ] || [ "$leader" = m2 ] || fail "no leader in list-member"
follower=$([ "$leader" = m1 ] && echo 2 || echo 1)
log "masters up, $leader leads; w2 w3 registered free"

# ---- sources: created, then transferred onto w2 and w3 ----
source_create 1 source1
source_create 2 source2
# the leader binds each source at once to a free worker; move them where the scenario wants them
wait_for 10 "the sources were not bound" bash -c "[ \$(\"$dmctl\" --master-addr 127.0.0.1:${m_port[1]} list-member --worker | grep -c '\"stage\": *\"relay\"') -eq 2 ]"
members 1 >"$work/first.members"
ctl "$follower" transfer-source source1 w2 >"$work/ctl.out" || fail "transfer-source source1 w2: $(cat "$work/ctl.out")"
ctl "$follower" transfer-source source2 w3 >"$work/ctl.out" || fail "transfer-source source2 w3: $(cat "$work/ctl.out")"
start_worker w1
want_bound="w1 free 
w2 relay source1
w3 relay source2"
wait_for 20 "w2, w3 not at relay for source1, source2 with w1 free: $(members 1 | tr '\n' ';')" \
  members_are 1 "$want_bound"
log "source1 at relay on w2, source2 on w3, w1 free (list-member)"

# ---- start-relay / stop-relay through the master: the relay a transfer leaves behind ----
ctl 1 transfer-source source1 w1 >"$work/ctl.out" || fail "transfer-source source1 w1: $(cat "$work/ctl.out")"
wait_for 20 "the transfer to w1 did not leave source1's relay on w2: $(members 1 | tr '\n' ';')" \
  members_are 1 "w1 relay source1
w2 relay source1
w3 relay source2"
ctl 2 stop-relay -s source1 w2 >"$work/ctl.out" || fail "stop-relay -s source1 w2: $(cat "$work/ctl.out")"
wait_for 20 "stop-relay did not free w2: $(members 1 | tr '\n' ';')" members_are 1 "w1 relay source1
w2 free 
w3 relay source2"
ctl 1 stop-relay -s source1 >"$work/ctl.out" || fail "stop-relay -s source1 (w1): $(cat "$work/ctl.out")"
wait_for 20 "stop-relay did not stop w1's relay: $(members 1 | tr '\n' ';')" members_are 1 "w1 bound source1
w2 free 
w3 relay source2"
ctl 2 start-relay -s source1 w1 >"$work/ctl.out" || fail "start-relay -s source1 w1: $(cat "$work/ctl.out")"
wait_for 20 "start-relay did not start w1's relay: $(members 1 | tr '\n' ';')" members_are 1 "w1 relay source1
w2 free 
w3 relay source2"
ctl 1 stop-relay -s source2 w1 >"$work/ctl.out" && fail "stop-relay of a source w1 neither serves nor relays was taken"
ctl 1 start-relay -s source1 w2 >"$work/ctl.out" && fail "start-relay on w2, not bound to source1, was taken"
# the freed w2 is given a source again; the relay left on w1 is stopped the same way
ctl 2 transfer-source source1 w2 >"$work/ctl.out" || fail "transfer-source source1 w2: $(cat "$work/ctl.out")"
wait_for 20 "source1 did not go back to w2: $(members 1 | tr '\n' ';')" members_are 1 "w1 relay source1
w2 relay source1
w3 relay source2"
ctl 1 stop-relay -s source1 w1 >"$work/ctl.out" || fail "stop-relay -s source1 w1: $(cat "$work/ctl.out")"
wait_for 20 "stop-relay did not free w1: $(members 1 | tr '\n' ';')" members_are 1 "$want_bound"
log "start-relay/stop-relay: the relay left on w2 by a transfer stopped (w2 free, bound again later), w1's stopped and started"

# ---- tasks, and the workload on both schemas ----
task_start 1 task1
task_start 2 task2
wait_for 60 "task1 does not run on source1" task_running task1 source1 1
wait_for 60 "task2 does not run on source2" task_running task2 source2 2
# the summary (query-status without a name) sums up what the workers report
wait_for 10 "query-status does not sum both tasks up as Running: $(ctl 1 query-status)" \
  ctl_jq 1 '[.tasks[] | select(.taskStatus == "Running" and ([.sources[].stage] == ["Running"]))]
    | length == 2' query-status
ctl 1 query-status task1 >"$work/qs1.json"
ctl 1 query-status >"$work/qs.json"
echo "$want_bound" | sort >"$work/want"
monitor &
mon_pid=$!
start_workload
log "task1 runs on w2, task2 on w3; workload on both schemas; monitor polling"
sleep 3
monitor_ok

# ---- the rolling restart: w1, w2, w3 in turn ----
for w in w1 w2 w3; do
  stop_proc "$w"
  n=$(lines "$work/$w.log")
  ts=$SECONDS
  start_worker "$w"
  wait_log_after "$work/$w.log" "$n" "worker $w running" 20 || fail "$w did not start again"
  grep -q "still alive (TTL 10 s): kept" <<<"$(tail -n +$((n + 1)) "$work/$w.log")" ||
    fail "$w did not keep its lease across the restart"
  if [ "$w" != w1 ]; then
    wait_log_after "$work/$w.log" "$n" "sync: reading" 30 || fail "$w's subtask did not sync again"
  fi
  log "$w restarted (SIGTERM, exit 0, running again after $((SECONDS - ts)) s)"
  sleep 2
  monitor_ok
done
members_are 1 "$(cat "$work/want")" || fail "the bindings moved: $(members 1 | tr '\n' ';')"
if [ "$(task_worker task1 source1 2)" != w2 ] || [ "$(task_worker task2 source2 2)" != w3 ]; then
  fail "the subtasks are not where their sources are bound"
fi
sleep 2
stop_workload
targets_equal
monitor_ok
log "rolling restart done: $(wc -l <"$work/monitor.samples") samples, no error, bindings unmoved; targets equal, no duplicate key"

# ---- kill -9 of w2: after its lease source1 moves to the free w1, task1 goes on there ----
rm -f "$work/want" # the bindings change now; the monitor still checks every status for errors
start_workload
sleep 1
kill -9 "${pid[w2]}"
wait "${pid[w2]}" 2>/dev/null || true
proc_alive "${pid[w2]}" && fail "w2 survived kill -9"
unset 'pid[w2]'
ts=$SECONDS
# The relay of the moved source starts at the file of task1's sync checkpoint, not at the source's
# current file: a rotation now puts the current file past it (w2 is dead, nothing moves the
# checkpoint), and the relay folder w1 kept of source1 (from the relay commands above) goes, so
# w1's relay starts anew.
cp_file=$(tgt -N -B -e "SELECT binlog_name FROM $cp_table WHERE id = 'source1' AND is_global = 1")
src -e "FLUSH BINARY LOGS"
cur_file=$(src -N -B -e "SHOW MASTER STATUS" | cut -f1)
[ -n "$cp_file" ] && [ "$cp_file" != "$cur_file" ] || fail "checkpoint file '$cp_file', current '$cur_file': no rotation between"
w1_relay="$work/w1/sources/source1/relay"
[ -d "$w1_relay" ] || fail "w1 kept no relay folder of source1 at $w1_relay"
rm -rf "$w1_relay"
for _ in $(seq 1 250); do
  members 1 | grep -qx "w1 relay source1" && break
  monitor_ok
  sleep 0.1
done
grep -qx "w1 relay source1" <<<"$(members 1)" || fail "source1 did not move to w1: $(members 1 | tr '\n' ';')"
moved=$((SECONDS - ts))
[ "$moved" -ge 7 ] || fail "source1 moved ${moved} s after the kill, before w2's lease could expire"
grep -q "^w2 " <<<"$(members 1)" && fail "w2 is still listed after its lease: $(members 1 | tr '\n' ';')"
grep -qx "w3 relay source2" <<<"$(members 1)" || fail "source2 left w3: $(members 1 | tr '\n' ';')"
wait_for 60 "task1 does not run on w1" ctl_jq 2 '[.sources[].subTaskStatus[]
  | select(.worker == "w1" and .stage == "Running")] | length == 1' query-status task1
grep -q "unit=sync\] sync: reading" "$work/w1.log" || fail "w1 did not sync task1"
relay_first=$(ls "$w1_relay"/*/ | grep -E '\.[0-9]+$' | sort | head -n 1)
[ "$relay_first" = "$cp_file" ] ||
  fail "w1's relay starts at '$relay_first', not at task1's checkpoint file '$cp_file' (current '$cur_file')"
grep -q "source source1: its relay starts at $cp_file" "$work/w1.log" || fail "w1 did not log its relay's start"
grep -qE "unit=(dump|load)\]" "$work/w1.log" && fail "w1 dumped or loaded task1 again instead of syncing on"
printf 'w1 relay source1\nw3 relay source2\n' >"$work/want"
log "kill -9 of w2: source1 at relay on w1 ${moved} s later, task1 runs there"

# ---- the commands of a source's worker, through the masters (forwarded to its --listen) ----
ctl_jq 2 '.result == true' binlog list task2 >/dev/null || fail "binlog list task2 through m2: $(ctl 2 binlog list task2)"
# purge-relay: w3 keeps source2's relay; once task2's sync reads past its first file (the
# rotation above), the files before the second go
w3_relay=$(ls -d "$work"/w3/sources/source2/relay/*/ | head -n 1)
relay_files=$(ls "$w3_relay" | grep -E '\.[0-9]+$' | sort)
[ "$(wc -l <<<"$relay_files")" -ge 2 ] || fail "w3's relay of source2 has one file: $relay_files"
second=$(sed -n 2p <<<"$relay_files")
cp2="\`$meta\`.\`task2_syncer_checkpoint\`"
for _ in $(seq 1 100); do
  [[ "$(tgt -N -B -e "SELECT binlog_name FROM $cp2 WHERE id = 'source2' AND is_global = 1")" > "$(head -n 1 <<<"$relay_files")" ]] && break
  sleep 0.1
done
ctl_jq 1 '.result == true and .removed >= 1' purge-relay -s source2 -f "$second" >/dev/null ||
  fail "purge-relay -s source2 -f $second through m1: $(ctl 1 purge-relay -s source2 -f "$second")"
[ -e "$w3_relay/$(head -n 1 <<<"$relay_files")" ] && fail "purge-relay through m1 left w3's first relay file"
# swap-unit: task2's sync on w3 replaced by another copy of the build, at a safe point
cp "$plugins/dmhost-sync.so" "$units/dmhost-sync-2.so"
ctl_jq 1 '.result == true and ([.workers[] | select(.worker == "w3" and .source == "source2"
  and .answer.result == true)] | length == 1)' swap-unit task2 --unit sync --path "$units/dmhost-sync-2.so" >/dev/null ||
  fail "swap-unit task2 through m1: $(ctl 1 swap-unit task2 --unit sync --path "$units/dmhost-sync-2.so")"
wait_for 30 "task2 does not run on w3 after the swap" task_running task2 source2 1
log "binlog list, purge-relay (w3's files before $second) and swap-unit (task2 on w3) through the masters"
sleep 3
stop_workload
targets_equal
monitor_ok
touch "$work/monitor.stop"
wait "$mon_pid" 2>/dev/null || true
mon_pid=""
monitor_ok
# every process left ends on SIGTERM with exit 0 (a sanitizer's report would make it 1)
for n in w1 w3 m1 m2; do
  stop_proc "$n"
done
log "passed: $(wc -l <"$work/monitor.samples") samples in all, targets equal, no duplicate key"

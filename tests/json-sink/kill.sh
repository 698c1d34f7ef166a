#!/bin/bash
# json-sink exactly once across kill -9, without the daemon: the relay unit and the sink (its
# out-of-tree builds v1 and v2) each run by unit_run (the fake host of dmhost-unit-check, as a
# process of its own) against the real servers, while a writer makes inserts, updates (several
# rows per statement too) and deletes with known ids. The sink is killed with SIGKILL $KILLS times
# at random moments (asserted each time: its checkpoint moved since the start before, and moves
# again after the restart; and at least one kill landed while lines past the checkpoint were
# written: the restart says it cut them), then stopped (SIGTERM) and replaced by version 2 on the same work
# folder, as a hot-swap does (pause, close, init the new build, process). Writes stop; the sink
# reaches the source's end. check.py: each change (file, pos, row) once, in binlog order per file,
# versions 1 then 2; the changes applied to empty copies of the tables on the target (they were
# created after the start position) equal the source.
#
# META=NO_LOG (or MINIMAL) sets the source's binlog_row_metadata for the run (FULL again at the
# end): the binlog then names no columns (nor, with NO_LOG, signedness or ENUM values), which the
# sink takes from the source's information_schema (asserted: it says so).
#
#   kill.sh <unit_run> <plugin dir> <source dir> <unit v1> <unit v2> [kills]
set -euo pipefail
run=$1 plugins=$2 src_dir=$3 v1=$4 v2=$5 kills=${6:-4}
tag=json_sink_kill
cd "$src_dir"
work=$(mktemp -d /tmp/dmh-jsonsink-kill-XXXXXX)
db=js_kill
. tests/json-sink/lib.sh
relay_pid="" sink_pid=""
cleanup() {
  [[ ${META:-} ]] && src -e "SET GLOBAL binlog_row_metadata = FULL"
  touch "$work/stop"
  [[ -n $writer ]] && { wait "$writer" 2>/dev/null || true; }
  for p in $sink_pid $relay_pid; do { kill -9 "$p" && wait "$p"; } 2>/dev/null || true; done
  if [[ ${KEEP:-} ]]; then echo "$tag: work folder kept: $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
fail() {
  echo "$tag: FAILED: $*" >&2
  for f in "$work"/sink-*.log "$work/relay.log"; do
    [[ -f $f ]] && { echo "--- end of $f:" >&2; tail -n 15 "$f" >&2; }
  done
  exit 1
}
[[ -f $v1 && -f $v2 ]] || fail "no unit builds ($v1, $v2): run json_sink_build"
rnd() { awk -v r="$RANDOM" -v lo="$1" -v hi="$2" 'BEGIN { printf "%.2f", lo + (r % 1000) / 1000 * (hi - lo) }'; }

tgt -e "DROP DATABASE IF EXISTS $db"
[[ ${META:-} ]] && src -e "SET GLOBAL binlog_row_metadata = $META"
read -r meta_name meta_pos _ < <(src -N -e "SHOW MASTER STATUS")
js_schema src "$js_fill"
js_schema tgt
from="from = { host = \"$DMH_SOURCE_HOST\"; port = $DMH_SOURCE_PORT; user = \"$DMH_SOURCE_USER\"; password = \"\"; };"
cat >"$work/relay.cfg" <<CFG
$from
source-id = "js-kill-src"; enable-gtid = true; relay-dir = "$work/relay";
relay = { binlog-name = "$meta_name"; };
CFG
cat >"$work/sink.cfg" <<CFG
$from
relay-dir = "$work/relay";
name = "jskill"; source-id = "js-kill-src"; do-dbs = ["$db"];
meta = { binlog-name = "$meta_name"; binlog-pos = $meta_pos; };
json-sink = { output-dir = "$work/out"; layout = "per-table"; flush-interval = 1000; flush-batch = 1000; };
CFG
"$run" "$plugins/dmhost-relay.so" "$work/relay.cfg" "$work/root" relay >>"$work/relay.log" 2>&1 &
relay_pid=$!
sink_start() { # unit, log
  "$run" "$1" "$work/sink.cfg" "$work/root" sink >>"$work/$2" 2>&1 &
  sink_pid=$!
}
sink_start "$v1" sink-v1.log
js_writer_start
cp=$(js_wait_moved "$work/root" 120 "") || fail "the sink wrote no checkpoint within 120 s"
log "first checkpoint $cp"
grep -q "fresh=1" "$work/sink-v1.log" || fail "the first run was not fresh"
# at least $kills kills, and on until one landed while lines past the checkpoint were written (the
# restart says it cut them), at most 20
i=0
while ((i < kills || (i < 20 && $(grep -c "cutting" "$work/sink-v1.log") == 0))); do
  i=$((i + 1))
  next=$(js_wait_moved "$work/root" 60 "$cp") || fail "the checkpoint did not move from $cp under writes"
  cp=$next
  sleep "$(rnd 0.1 1.5)"
  at=$(js_checkpoint "$work/root")
  kill -9 "$sink_pid"
  wait "$sink_pid" 2>/dev/null || true
  sink_pid=""
  # past the checkpoint: what the killed run wrote and must not count (often a torn line)
  sizes=$(du -cb "$work"/out/*.jsonl | tail -1 | cut -f1)
  log "kill -9 #$i with the checkpoint at $at (moved past $cp), $sizes bytes in the files"
  sink_start "$v1" sink-v1.log
  cp=$(js_wait_moved "$work/root" 60 "$at") || fail "after kill #$i the checkpoint stays at $at"
done
grep -c "fresh=0" "$work/sink-v1.log" | grep -qx "$i" || fail "a restart after a kill was fresh"
cuts=$(grep -c "cutting" "$work/sink-v1.log" || true)
((cuts > 0)) || fail "no kill of $i landed while lines past the checkpoint were written"
log "$i kills; $cuts restarts cut lines written past the checkpoint"

# the swap: stop v1 at a safe point, v2 on the same work folder
kill -TERM "$sink_pid"
wait "$sink_pid" || fail "v1 did not stop cleanly on SIGTERM"
at=$(js_checkpoint "$work/root")
sink_start "$v2" sink-v2.log
cp=$(js_wait_moved "$work/root" 60 "$at") || fail "v2 does not move the checkpoint from $at"
log "v2 took over at $at"
sleep 1
js_writer_stop
log "writes stopped after $(cat "$work/writer.count") calls; source at $(master)"
js_wait_caught_up "$work/root" 120
lines=$(cat "$work"/out/*.jsonl | wc -l)
log "caught up at $(js_checkpoint "$work/root") with $lines lines"
kill -TERM "$sink_pid"
wait "$sink_pid" || fail "v2 did not stop cleanly on SIGTERM"
sink_pid=""
kill -TERM "$relay_pid"
wait "$relay_pid" || true
relay_pid=""
grep -q "unit_run: process" "$work"/sink-*.log && fail "a sink run failed: $(grep -h "unit_run: process" "$work"/sink-*.log | head -3)"
[[ -f $work/out/$db.t1.jsonl && -f $work/out/$db.t2.jsonl ]] || fail "layout per-table: no $db.t1.jsonl / $db.t2.jsonl"
if [[ ${META:-} ]]; then
  grep -q "names from the source's information_schema" "$work"/sink-v1.log ||
    fail "with binlog_row_metadata = $META the sink did not take the names from information_schema"
fi
js_check "$work/out" --min-version-2 1
src -e "DROP DATABASE $db"
tgt -e "DROP DATABASE $db"
log "ok"

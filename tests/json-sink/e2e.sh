#!/bin/bash
# json-sink end to end (examples/json-sink, issue 13), against the real servers:
#  - a task `units = ["dump", "load", "json-sink"]` on a source with the relay on, run by
#    `dmhost serve` and dmctl, the sink loaded from its out-of-tree build (unit-paths);
#  - a writer doing inserts, updates (also several rows per statement) and deletes with known
#    ids on two tables all along;
#  - kill -9 of the daemon while the sink writes (asserted: its checkpoint moved before the kill
#    and moves again after the restart, and a kill landed while lines past the checkpoint were in
#    the files: the restart cut them);
#  - dmctl swap-unit to the version 2 build while it runs (asserted: query-status shows 2.0.0);
#  - writes stop, the sink catches up with the source's end (SHOW MASTER STATUS).
# Then check.py: each change once (file, pos, row), in binlog order per file, versions 1 then 2;
# the target after the load with the JSON changes applied (plain INSERTs: a doubled change hits
# a duplicate key) equals the source, row by row.
#
#   e2e.sh <dmhost> <dmctl> <plugin dir> <source dir> <unit v1> <unit v2>
# KEEP=1 keeps the work folder.
set -euo pipefail
dmhost=$1 dmctl=$2 plugins=$3 src_dir=$4 v1=$5 v2=$6
tag=json_sink_e2e
cd "$src_dir"
work=$(mktemp -d /tmp/dmh-jsonsink-e2e-XXXXXX)
db=js_e2e
. tests/json-sink/lib.sh
state=$work/state task=jse2e
pid=""
cleanup() {
  touch "$work/stop"
  [[ -n $writer ]] && { wait "$writer" 2>/dev/null || true; }
  [[ -n $pid ]] && { { kill -9 "$pid" && wait "$pid"; } 2>/dev/null || true; }
  if [[ ${KEEP:-} ]]; then echo "$tag: work folder kept: $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
fail() {
  echo "$tag: FAILED: $*" >&2
  [[ -f $work/serve.log ]] && { echo "--- end of serve.log:" >&2; tail -n 30 "$work/serve.log" >&2; }
  exit 1
}
[[ -f $v1 && -f $v2 ]] || fail "no unit builds ($v1, $v2): run json_sink_build"
ctl() { "$dmctl" --state-dir "$state" "$@"; }
serve() {
  # the sink's out-of-tree builds: a unit folder of the daemon (docs/security.md)
  "$dmhost" serve --state-dir "$state" --plugin-dir "$plugins" --unit-dir "$(dirname "$v1")" \
    --log-level info >>"$work/serve.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 300); do
    ctl query-status >/dev/null 2>&1 && return 0
    sleep 0.05
  done
  fail "dmhost serve does not answer"
}
# json-sinkStatus field $1 of the task (query-status)
status_field() {
  ctl query-status "$task" >"$work/status.json" || fail "query-status"
  jq -r --arg k "$1" '[.. | objects | select(has("json-sinkStatus")) | .["json-sinkStatus"][$k]] | last' "$work/status.json"
}

# ---- the source: two tables with rows before the task starts; the target gets them by load ----
tgt -e "DROP DATABASE IF EXISTS $db; DROP DATABASE IF EXISTS ${db}_meta"
js_schema src "$js_fill"

cat >"$work/source.cfg" <<CFG
source-id = "js-src";
from = { host = "$DMH_SOURCE_HOST"; port = $DMH_SOURCE_PORT; user = "$DMH_SOURCE_USER"; password = ""; };
enable-relay = true;
relay-dir = "$work/relay";
CFG
cat >"$work/task.cfg" <<CFG
name = "$task";
units = ["dump", "load", "json-sink"];
unit-paths = { json-sink = "$v1"; };
meta-schema = "${db}_meta";
target-database = { host = "$DMH_TARGET_HOST"; port = $DMH_TARGET_PORT; user = "$DMH_TARGET_USER"; password = ""; };
mysql-instances = ( { source-id = "js-src"; block-allow-list = "b"; } );
block-allow-list = { b = { do-dbs = ["$db"]; }; };
json-sink = { output-dir = "$work/out"; layout = "per-table"; flush-interval = 1000; };
CFG

serve
ctl operate-source create "$work/source.cfg" >/dev/null || fail "operate-source create"
ctl start-task "$work/task.cfg" >"$work/start.json" || fail "start-task: $(cat "$work/start.json")"
log "task started"
js_writer_start

# ---- kill -9 while the sink writes ----
# Until a kill lands while lines past the checkpoint are in the files (the restart says it cut
# them; with flush-interval 1000 that is most of the time), at most 5 kills.
cp=$(js_wait_moved "$state" 120 "") || fail "the sink wrote no checkpoint within 120 s"
log "first checkpoint $cp"
kills=0
while ((kills == 0 || (kills < 5 && $(grep -c "cutting" "$work/serve.log") == 0))); do
  kills=$((kills + 1))
  next=$(js_wait_moved "$state" 30 "$cp") || fail "the sink's checkpoint did not move from $cp under writes"
  sleep 0.3
  at=$(js_checkpoint "$state")
  kill -9 "$pid"
  wait "$pid" 2>/dev/null || true
  pid=""
  log "kill -9 #$kills of dmhost serve with the checkpoint at $at (it moved $cp -> $next -> $at before)"
  serve
  cp=$(js_wait_moved "$state" 60 "$at") || fail "after the restart the checkpoint stays at $at"
  log "after the restart: checkpoint $cp"
done
grep -q "cutting" "$work/serve.log" || fail "no kill of $kills landed while lines past the checkpoint were written"

# ---- hot-swap to version 2 while it runs ----
ctl swap-unit "$task" --unit json-sink --path "$v2" >"$work/swap.json" || fail "swap-unit: $(cat "$work/swap.json")"
[[ $(status_field sinkVersion) == 2 ]] || fail "after swap-unit json-sinkStatus does not say sinkVersion 2: $(cat "$work/status.json")"
ver=$(jq -r '[.. | objects | select(has("unitVersion")) | .unitVersion] | last' "$work/status.json")
[[ $ver == 2.0.0 ]] || fail "after swap-unit query-status shows unitVersion $ver"
log "swapped to 2.0.0"
cp_swap=$(js_checkpoint "$state")
js_wait_moved "$state" 30 "$cp_swap" >/dev/null || fail "after the swap the checkpoint stays at $cp_swap"
sleep 1

# ---- writes stop; the sink reaches the source's end ----
js_writer_stop
log "writes stopped after $(cat "$work/writer.count") calls; source at $(master)"
js_wait_caught_up "$state" 60
lines=$(cat "$work"/out/*.jsonl | wc -l)
log "caught up at $(js_checkpoint "$state") with $lines lines; linesPerSecond of the last instance: $(status_field linesPerSecond)"
# the relay's purge follows the sink: the task's reader file, which the host held at the dump's
# position while the dump and load ran, now names the file of the sink's checkpoint (the sink took
# the hold over under the task's name) and no other reader is left behind
cp_end=$(js_checkpoint "$state")
held=$(head -1 "$work/relay/readers/$task" 2>/dev/null)
[[ ${held#*/} == "${cp_end%%:*}" ]] || fail "readers/$task names '$held', not the sink's checkpoint file ${cp_end%%:*}"
[[ $(ls "$work/relay/readers" | wc -l) == 1 ]] || fail "other reader files in the relay: $(ls "$work/relay/readers")"
kill -TERM "$pid"
wait "$pid" || fail "dmhost serve did not exit 0 on SIGTERM"
pid=""

# ---- the JSON changes on the target's copy (the load's) equal the source ----
[[ -f $work/out/$db.t1.jsonl && -f $work/out/$db.t2.jsonl ]] || fail "layout per-table: no $db.t1.jsonl / $db.t2.jsonl"
js_check "$work/out" --min-version-2 1
src -e "DROP DATABASE $db"
tgt -e "DROP DATABASE $db; DROP DATABASE IF EXISTS ${db}_meta"
log "ok"

#!/usr/bin/env bash
# The sync's continuous validator across a kill -9 of `dmhost run` (issue 24, docs/validation.md):
# a task in mode incremental with validator mode full, row-error-delay long enough that a row the
# target holds differently (a trigger on the target's table makes row 5 land with another `v`) is
# still pending when the run is killed, once the validator flushed its checkpoint (meta-flush-
# interval 1 s) with that row pending and every insert processed. The next run reads the pending
# rows back: the difference becomes an error row (the right key, both values) and no other row
# does, while a writer keeps changing the other rows; the processed counts go on from the flush.
#
#   kill9_validator.sh <dmhost> <plugin dir> <source dir>
set -euo pipefail
dmhost=$1 plugins=$2 src_dir=$3
cd "$src_dir"
name=kill9val db=crash_kill9val meta=crash_kill9val_meta
cp_table="\`$meta\`.\`${name}_syncer_checkpoint\`"
vcp="\`$meta\`.\`${name}_validator_checkpoint\`"
vpend="\`$meta\`.\`${name}_validator_pending_change\`"
verr="\`$meta\`.\`${name}_validator_error_change\`"
work=$(mktemp -d /tmp/dmh-$name-XXXXXX)
t0=$SECONDS tag=kill9_validator
. tests/crash/lib.sh
pid="" wpid=""
cleanup() {
  [ -n "$wpid" ] && kill "$wpid" 2>/dev/null && wait "$wpid" 2>/dev/null
  [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  if [ "${KEEP:-}" ]; then echo "$tag: work folder kept: $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
fail() {
  echo "$tag: FAILED: $*" >&2
  for f in "$work"/run*.log; do [ -f "$f" ] && { echo "--- end of $f:" >&2; tail -n 20 "$f" >&2; }; done
  exit 1
}
q() { tgt -N -B -e "$1" 2>/dev/null || true; }

src -e "DROP DATABASE IF EXISTS $db; CREATE DATABASE $db;
        CREATE TABLE $db.t (id INT PRIMARY KEY, v INT, s VARCHAR(20))"
tgt -e "DROP DATABASE IF EXISTS $db; DROP DATABASE IF EXISTS $meta; CREATE DATABASE $db;
        CREATE TABLE $db.t (id INT PRIMARY KEY, v INT, s VARCHAR(20));
        CREATE TRIGGER $db.bi BEFORE INSERT ON $db.t FOR EACH ROW
          SET NEW.v = IF(NEW.id = 5, NEW.v + 1000, NEW.v)"
read -r file pos <<<"$(src -N -B -e "SHOW MASTER STATUS" | awk '{ print $1, $2 }')"
crash_source_cfg kv-src
cat >"$work/task.cfg" <<CFG
name = "$name";
task-mode = "incremental";
meta-schema = "$meta";
target-database = { host = "$DMH_TARGET_HOST"; port = $DMH_TARGET_PORT; user = "$DMH_TARGET_USER"; password = ""; };
mysql-instances = ( { source-id = "kv-src"; block-allow-list = "b";
                      meta = { binlog-name = "$file"; binlog-pos = $pos; }; } );
block-allow-list = { b = { do-dbs = ["$db"]; }; };
sync = { worker-count = 2; batch-ms = 20;
         validator = { mode = "full"; validate-interval = "1s"; row-error-delay = "25s";
                       meta-flush-interval = "1s"; batch-query-size = 16; }; };
CFG
run() { # log
  "$dmhost" run --source "$work/source.cfg" --task "$work/task.cfg" --work-dir "$work/w" \
    --plugin-dir "$plugins" --log-level info >"$1" 2>&1 &
  pid=$!
}
run "$work/run1.log"
for i in $(seq 1 50); do echo "INSERT INTO t VALUES ($i, $i, 'r$i');"; done | src "$db"
# a writer keeps changing every row but 5 (in flight: never an error)
(
  n=0
  while :; do
    src "$db" -e "UPDATE t SET v = v + 1, s = 'w$n' WHERE id <> 5 AND id % 7 = $((n % 7))" || true
    n=$((n + 1))
    sleep 0.05
  done
) &
wpid=$!
has_pending() { [ "$(q "SELECT COUNT(*) FROM $vpend WHERE row_pk = '5'")" = 1 ]; }
processed() { [ "$(q "SELECT procd_ins FROM $vcp WHERE source = 'kv-src'")" = 50 ]; }
wait_for 60 "row 5 never became a flushed pending row" has_pending
wait_for 60 "the validator's checkpoint never counted the 50 inserts" processed
[ "$(q "SELECT COUNT(*) FROM $verr")" = 0 ] || fail "an error row before row-error-delay"
kill -9 "$pid"
wait "$pid" 2>/dev/null || true
log "killed with row 5 pending, $(q "SELECT CONCAT(binlog_name, ':', binlog_pos) FROM $vcp") flushed"
run "$work/run2.log"
is_error() {
  [ "$(q "SELECT COUNT(*) FROM $verr WHERE row_pk = '5' AND error_type = 2 AND status = 1
          AND JSON_EXTRACT(data, '\$[1]') = 5 AND JSON_EXTRACT(dst_data, '\$[1]') = 1005")" = 1 ]
}
wait_for 90 "the pending row 5 was not reported after the restart" is_error
kill "$wpid" 2>/dev/null || true
wait "$wpid" 2>/dev/null || true
wpid=""
# the writer's last changes settle: nothing pending any more, still exactly one error
settled() { [ "$(q "SELECT COUNT(*) FROM $vpend")" = 0 ]; }
wait_for 60 "pending rows never settled" settled
[ "$(q "SELECT COUNT(*) FROM $verr")" = 1 ] || fail "rows in flight became errors: $(q "SELECT row_pk, error_type FROM $verr")"
[ "$(q "SELECT procd_ins >= 50 AND procd_upd > 0 FROM $vcp")" = 1 ] || fail "processed counts lost: $(q "SELECT * FROM $vcp")"
kill "$pid"
wait "$pid" || fail "the second run did not stop cleanly"
pid=""
for f in "$work"/run1.log "$work"/run2.log; do
  errs=$(grep -E "\[ERROR\]|\[code [0-9]+\]|dmhost: error" "$f" || true)
  [ -z "$errs" ] || fail "$(basename "$f") logged an error: $(head -3 <<<"$errs")"
done
tgt -e "DROP DATABASE IF EXISTS $db; DROP DATABASE IF EXISTS $meta"
src -e "DROP DATABASE IF EXISTS $db"
log "passed"

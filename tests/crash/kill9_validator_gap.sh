#!/usr/bin/env bash
# The continuous validator loses no row across a kill -9 (issue 24, docs/validation.md, "The
# consistency argument"): with meta-flush-interval 10m its checkpoint is flushed only at a clean
# stop (run 0), at a validator's first start and after each DDL (an ALTER TABLE on table `u` in run
# 1). After that DDL a difference is applied (a trigger on the target's `t` makes row 5 land with
# another `v`) and fed, pending and NOT flushed (asserted from the meta tables), then the run is
# killed. The next run replays the span between the validator's checkpoint and the sync's for the
# validator only: row 5 becomes an error row (right key, both values), no other row does, the
# processed counts are exact (no row fed twice or lost), nothing is applied twice (the target
# equals the source by checksum once row 5 is set right), and the log shows the replay with no DDL
# in the span. RELAY=1: the sync reads the relay log.
#
#   kill9_validator_gap.sh <dmhost> <plugin dir> <source dir>
set -euo pipefail
dmhost=$1 plugins=$2 src_dir=$3
cd "$src_dir"
relay=${RELAY:-0}
if [ "$relay" = 1 ]; then name=kill9vgapr; else name=kill9vgap; fi
db=crash_$name meta=crash_${name}_meta
cp_table="\`$meta\`.\`${name}_syncer_checkpoint\`"
vcp="\`$meta\`.\`${name}_validator_checkpoint\`"
vpend="\`$meta\`.\`${name}_validator_pending_change\`"
verr="\`$meta\`.\`${name}_validator_error_change\`"
work=$(mktemp -d /tmp/dmh-$name-XXXXXX)
t0=$SECONDS tag=kill9_validator_gap
[ "$relay" = 1 ] && tag="kill9_validator_gap (relay)"
. tests/crash/lib.sh
pid=""
cleanup() {
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
vpos() { q "SELECT CONCAT(binlog_name, ':', binlog_pos) FROM $vcp WHERE source = 'vg-src'"; }
caught_up() { pos_at_or_past "$(checkpoint)" "$1"; }

src -e "DROP DATABASE IF EXISTS $db; CREATE DATABASE $db;
        CREATE TABLE $db.t (id INT PRIMARY KEY, v INT, s VARCHAR(20));
        CREATE TABLE $db.u (id INT PRIMARY KEY, a INT)"
tgt -e "DROP DATABASE IF EXISTS $db; DROP DATABASE IF EXISTS $meta; CREATE DATABASE $db;
        CREATE TABLE $db.t (id INT PRIMARY KEY, v INT, s VARCHAR(20));
        CREATE TABLE $db.u (id INT PRIMARY KEY, a INT);
        CREATE TRIGGER $db.bi BEFORE INSERT ON $db.t FOR EACH ROW
          SET NEW.v = IF(NEW.id = 5, NEW.v + 1000, NEW.v)"
read -r file pos <<<"$(src -N -B -e "SHOW MASTER STATUS" | awk '{ print $1, $2 }')"
crash_source_cfg vg-src
[ "$relay" = 1 ] && printf 'enable-relay = true;\nrelay-dir = "%s";\n' "$work/relay" >>"$work/source.cfg"
cat >"$work/task.cfg" <<CFG
name = "$name";
task-mode = "incremental";
meta-schema = "$meta";
target-database = { host = "$DMH_TARGET_HOST"; port = $DMH_TARGET_PORT; user = "$DMH_TARGET_USER"; password = ""; };
mysql-instances = ( { source-id = "vg-src"; block-allow-list = "b";
                      meta = { binlog-name = "$file"; binlog-pos = $pos; }; } );
block-allow-list = { b = { do-dbs = ["$db"]; }; };
sync = { worker-count = 2; batch-ms = 20;
         validator = { mode = "full"; validate-interval = "1s"; row-error-delay = "15s";
                       meta-flush-interval = "10m"; batch-query-size = 16; }; };
CFG
run() { # log
  "$dmhost" run --source "$work/source.cfg" --task "$work/task.cfg" --work-dir "$work/w" \
    --plugin-dir "$plugins" --log-level info >"$1" 2>&1 &
  pid=$!
}
stop_run() {
  kill "$pid"
  wait "$pid" || fail "a run did not stop cleanly"
  pid=""
}

# ---- run 0: rows validated and flushed at a clean stop ----
run "$work/run0.log"
{
  for i in $(seq 1 20); do [ "$i" = 5 ] || echo "INSERT INTO t VALUES ($i, $i, 'r$i');"; done
  for i in $(seq 1 10); do echo "INSERT INTO u VALUES ($i, $i);"; done
} | src "$db"
m=$(master)
wait_for 60 "run 0 never applied the inserts" caught_up "$m"
stop_run
p0=$(vpos)
[ -n "$p0" ] || fail "the clean stop flushed no validator checkpoint"

# ---- run 1: a DDL, then the difference, fed and not flushed; kill -9 ----
run "$work/run1.log"
src "$db" -e "UPDATE u SET a = a + 100 WHERE id <= 3" # fed before the DDL: not in the span
src "$db" -e "ALTER TABLE u ADD COLUMN b INT"
m_ddl=$(master)
wait_for 60 "run 1 never applied the ALTER" caught_up "$m_ddl"
m5=$(master) # before row 5
{
  echo "INSERT INTO t VALUES (5, 5, 'r5');"
  for i in $(seq 21 50); do echo "INSERT INTO t VALUES ($i, $i, 'r$i');"; done
  for i in $(seq 11 20); do echo "INSERT INTO u VALUES ($i, $i, $i);"; done
} | src "$db"
m=$(master)
wait_for 60 "run 1 never applied the inserts" caught_up "$m"
src "$db" -e "UPDATE t SET v = v + 1 WHERE id <> 5; UPDATE u SET a = a + 1"
m=$(master)
wait_for 60 "run 1 never applied the updates" caught_up "$m"
# the precondition: row 5 was fed, and the validator's flushed checkpoint is before it
probed() { grep -q . <<<"$(q "SELECT 1 FROM $db.t WHERE id = 5")"; }
wait_for 30 "row 5 is not on the target" probed
p1=$(vpos)
pos_at_or_past "$m5" "$p1" || fail "the validator's flushed checkpoint $p1 is not before row 5 ($m5)"
[ "$(q "SELECT COUNT(*) FROM $vpend WHERE row_pk = '5'")" = 0 ] || fail "row 5 was flushed as pending"
[ "$(q "SELECT COUNT(*) FROM $verr")" = 0 ] || fail "an error row before the kill"
kill -9 "$pid"
wait "$pid" 2>/dev/null || true
pid=""
log "killed: the validator's checkpoint at $p1 (run 0 flushed $p0, the ALTER ends by $m_ddl), row 5 at $m5"

# ---- run 2: the span replayed for the validator only ----
run "$work/run2.log"
is_error() {
  [ "$(q "SELECT COUNT(*) FROM $verr WHERE row_pk = '5' AND error_type = 2 AND status = 1
          AND JSON_EXTRACT(data, '\$[1]') = 5 AND JSON_EXTRACT(dst_data, '\$[1]') = 1005")" = 1 ]
}
wait_for 90 "the difference at row 5, fed after the last flush, was not reported after the restart" is_error
src "$db" -e "UPDATE t SET s = 'after' WHERE id <> 5"
m=$(master)
wait_for 60 "run 2 never applied the last update" caught_up "$m"
stop_run # flushes the counts
[ "$(q "SELECT COUNT(*) FROM $verr")" = 1 ] || fail "other rows became errors: $(q "SELECT row_pk, error_type FROM $verr")"
# every row change fed exactly once: 70 inserts, 3 + 69 + 49 updates
counts=$(q "SELECT CONCAT(procd_ins, '/', procd_upd, '/', procd_del) FROM $vcp")
[ "$counts" = "70/121/0" ] || fail "processed insert/update/delete $counts, not 70/121/0"
grep -q "validator: replay: its checkpoint" "$work/run2.log" || fail "run 2 does not log the replay"
grep -q "validator: replay: done" "$work/run2.log" || fail "run 2's replay did not finish"
! grep -q "a DDL lies in the span" "$work/run2.log" || fail "the replayed span held the ALTER"
pos_at_or_past "$p1" "$m_ddl" || fail "the validator's checkpoint $p1 did not move past the ALTER ($m_ddl)"
if [ "$relay" = 1 ]; then
  grep -q "sync: reading the relay log" "$work/run2.log" || fail "sync does not read the relay log"
fi
for f in "$work"/run*.log; do
  errs=$(grep -E "\[ERROR\]|\[code [0-9]+\]|dmhost: error" "$f" || true)
  [ -z "$errs" ] || fail "$(basename "$f") logged an error: $(head -3 <<<"$errs")"
done
dup=$(dup_key_line "$work"/run*.log)
[ -z "$dup" ] || fail "a row applied twice: $dup"
# nothing applied twice or lost: the target equals the source once the trigger's change is undone
tgt "$db" -e "DROP TRIGGER bi; UPDATE t SET v = 5 WHERE id = 5"
bash scripts/checksum.sh "$db" || fail "target differs from source"
tgt -e "DROP DATABASE IF EXISTS $db; DROP DATABASE IF EXISTS $meta"
src -e "DROP DATABASE IF EXISTS $db"
log "passed"

#!/usr/bin/env bash
# Online DDL with gh-ost's statements (issue 22; docs/shard.md, "Online DDL"). gh-ost is not
# packaged, so its statement shapes (go/logic/applier.go, as docs/shard.md lists them) are replayed
# here against the source of a running mode-all task, in its order and with its sessions:
#   the changelog `_t_ghc` (created, then heartbeat rows every 100 ms from a session of its own),
#   `create table _t_gho like t`, `alter table _t_gho ADD COLUMN ...`,
#   the row copy `insert ignore into _t_gho ... select ... from t ... lock in share mode` in chunks
#   (one session), the binlog-driven changes `replace into` / `delete from _t_gho` (a second
#   session) while writers change t,
#   the atomic cut-over: the sentry `create table _t_del ... comment='ghost-cut-over-sentry'`,
#   writes held (gh-ost's LOCK TABLES t WRITE, not logged), the last changes applied, `drop table
#   if exists _t_del`, `rename table t to _t_del, _t_gho to t`, writes resumed;
#   then `drop table if exists _t_ghc` and `drop table if exists _t_del`.
# Between the ALTER and the cut-over, once the target holds the ghost's record, `dmhost run` is
# killed with -9: the record must survive and a new run go on. At the end the target's t has the
# new column and every row (scripts/checksum.sh), none of _t_gho/_t_ghc/_t_del, no record, and the
# ALTER was recorded once and run once.
#
#   online_ghost.sh <dmhost> <plugin dir> <source dir>         ROWS=N (default 300000: 500000 took ~95 s on the loaded CI machine)
set -euo pipefail
dmhost=$1 plugins=$2 src_dir=$3
rows=${ROWS:-300000}
cd "$src_dir"
name=ghost db=shard_ghost meta=shard_ghost_meta
cp_table="\`$meta\`.\`${name}_syncer_checkpoint\`"
work=$(mktemp -d /tmp/dmh-ghost-XXXXXX)
t0=$SECONDS tag="online gh-ost"
. tests/crash/lib.sh
pid="" wl_pid="" hb_pid="" ap_pid="" cur_log=""
cleanup() {
  touch "$work/stop" "$work/hb-stop" "$work/ap-stop"
  rm -f "$work/hold"
  for p in $wl_pid $hb_pid $ap_pid; do wait "$p" 2>/dev/null || true; done
  [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  if [ "${KEEP:-}" ]; then echo "work folder kept: $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM
fail() {
  echo "$tag: FAILED: $*" >&2
  [ -n "$cur_log" ] && [ -f "$cur_log" ] && { echo "--- end of $cur_log:" >&2; tail -n 25 "$cur_log" >&2; }
  exit 1
}
wait_for() { # seconds command...: until the command succeeds
  local end=$((SECONDS + $1))
  shift
  until "$@"; do
    [ $SECONDS -lt $end ] || return 1
    sleep 0.1
  done
}
check_log() {
  local errs
  errs=$(grep -E "\[ERROR\]|\[code [0-9]+\]|dmhost: error" "$1" || true)
  [ -z "$errs" ] || fail "$(basename "$1") logged an error: $(head -3 <<<"$errs")"
}
tgt_q() { tgt -N -B -e "$1" 2>/dev/null || true; }
records() { tgt_q "SELECT COUNT(*) FROM \`$meta\`.\`${name}_onlineddl\` WHERE ghost_table = '_t_gho'"; }
has_records() { [ "$(records)" = "$1" ]; }
at_checkpoint() { pos_at_or_past "$(checkpoint)" "$1"; }
T="\`$db\`.\`t\`" G="\`$db\`.\`_t_gho\`" C="\`$db\`.\`_t_ghc\`" D="\`$db\`.\`_t_del\`"
cols="\`id\`, \`a\`, \`b\`, \`c\`"

# ---- the source: t with $rows rows, a procedure the writers call ----
src -e "DROP DATABASE IF EXISTS \`$db\`; CREATE DATABASE \`$db\`"
tgt -e "DROP DATABASE IF EXISTS \`$db\`; DROP DATABASE IF EXISTS \`$meta\`"
src "$db" -e "
CREATE TABLE t (id INT PRIMARY KEY, a INT NOT NULL, b VARCHAR(40), c DATETIME(3));
INSERT INTO t SELECT seq, seq % 1000, CONCAT('row ', seq), '2026-01-01' FROM mysql.seq_1_to_$rows;
DELIMITER //
CREATE PROCEDURE w(i INT)
BEGIN
  START TRANSACTION;
  INSERT INTO t (id, a, b, c) VALUES ($rows + i, i, CONCAT('new ', i), NOW(3));
  UPDATE t SET a = a + 1, b = CONCAT('upd ', i) WHERE id = 1 + (i * 7919) % $rows;
  DELETE FROM t WHERE id = 1 + (i * 104729) % $rows;
  COMMIT;
END//
DELIMITER ;"

crash_source_cfg ghost-src
crash_task_cfg "$name" "$meta" "$db" ghost-src >"$work/task.cfg" <<CFG
supervisor = { auto-resume = { enable = false; }; };
sync = { worker-count = 4; batch-ms = 20; status-interval = 200; };
CFG
run_no=0
start_run() {
  run_no=$((run_no + 1))
  cur_log=$work/run-$run_no.log
  "$dmhost" run --source "$work/source.cfg" --task "$work/task.cfg" --work-dir "$work/w" \
    --plugin-dir "$plugins" --log-level info >"$cur_log" 2>&1 &
  pid=$!
  wait_for 300 grep -q "sync: reading" "$cur_log" || fail "run $run_no: the sync did not start"
}
start_run
log "run 1: $rows rows dumped and loaded, sync reading"

# ---- the writers on t (held while $work/hold exists: gh-ost's LOCK TABLES at the cut-over) ----
(
  i=1
  while [ ! -e "$work/stop" ]; do
    if [ -e "$work/hold" ]; then
      touch "$work/held"
      sleep 0.05
      continue
    fi
    rm -f "$work/held"
    for k in 1 2 3 4 5; do echo "CALL w($((i + k)));"; done | src "$db" 2>>"$work/writer.err" || true
    i=$((i + 5))
    sleep 0.02
  done
) &
wl_pid=$!

# ---- gh-ost: the changelog and its heartbeat ----
src -e "create /* gh-ost */ table $C (
  id bigint unsigned auto_increment, last_update timestamp not null DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP,
  hint varchar(64) charset ascii not null, value varchar(4096) charset ascii not null,
  primary key(id), unique key hint_uidx(hint)) auto_increment=256 comment='gh-ost changelog'"
(
  while [ ! -e "$work/hb-stop" ]; do
    src -e "insert /* gh-ost */ into $C (id, hint, value) values (NULLIF(2, 0), 'heartbeat', NOW(6))
      on duplicate key update last_update=NOW(), value=VALUES(value)" 2>>"$work/hb.err" || true
    sleep 0.1
  done
) &
hb_pid=$!
src -e "insert /* gh-ost */ into $C (id, hint, value) values (NULLIF(0, 0), 'state', 'GhostTableMigrated')
  on duplicate key update last_update=NOW(), value=VALUES(value)"

# ---- the ghost table, its ALTER ----
src -e "create /* gh-ost */ table $G like $T"
src -e "alter /* gh-ost */ table $G ADD COLUMN note VARCHAR(32) NOT NULL DEFAULT 'none'"

# ---- the binlog-driven applier (second session): recent changes of t replayed on the ghost ----
(
  while [ ! -e "$work/ap-stop" ]; do
    hi=$(src -N -B -e "SELECT IFNULL(MAX(id), 0) FROM $T")
    src -e "replace /* gh-ost $T */ into $G ($cols) (select $cols from $T where id > $rows and id > $hi - 200);
      delete /* gh-ost $T */ from $G where id between $rows + 1 and $hi - 200 and id not in (select id from $T where id > $rows)" \
      2>>"$work/applier.err" || true
    sleep 0.1
  done
) &
ap_pid=$!

# ---- the row copy (first session), in chunks ----
chunk=20000
for ((lo = 0; lo < rows; lo += chunk)); do
  src -e "insert /* gh-ost $T */ ignore into $G ($cols)
    (select $cols from $T force index (PRIMARY) where (id > $lo and id <= $((lo + chunk))) lock in share mode)"
done
log "gh-ost copied the table"

# ---- kill -9 between the ALTER and the cut-over; the record survives ----
wait_for 300 has_records 1 || fail "the target has no record of the ghost _t_gho"
grep -qE "online DDL at .*ALTER TABLE of ghost table \`$db\`.\`_t_gho\` recorded" "$cur_log" ||
  fail "the sync did not log the recorded ALTER"
[ "$(tgt_q "SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = '$db' AND TABLE_NAME = 't' AND COLUMN_NAME = 'note'")" = 0 ] ||
  fail "the ALTER ran on the target before the cut-over"
kill -9 "$pid" || fail "run 1 was not running when killed"
wait "$pid" 2>/dev/null || true
pid=""
check_log "$cur_log"
[ "$(records)" = 1 ] || fail "the record of _t_gho did not survive the kill"
log "killed run 1; the record is on the target"
sleep 0.5
start_run

# ---- the cut-over ----
src -e "create /* gh-ost */ table $D (id int auto_increment primary key) engine=InnoDB comment='ghost-cut-over-sentry'"
touch "$work/hold"
wait_for 60 test -e "$work/held" || fail "the writers did not stop for the cut-over"
touch "$work/ap-stop"
wait "$ap_pid"
ap_pid=""
# the last events, as gh-ost applies them under its lock: the ghost equals t
src -e "replace /* gh-ost $T */ into $G ($cols) (select $cols from $T);
  delete /* gh-ost $T */ from $G where id not in (select id from $T)"
src -e "insert /* gh-ost */ into $C (id, hint, value) values (NULLIF(0, 0), 'state', 'AllEventsUpToLockProcessed')
  on duplicate key update last_update=NOW(), value=VALUES(value)"
src -e "drop /* gh-ost */ table if exists $D"
src -e "rename /* gh-ost */ table $T to $D, $G to $T"
rm -f "$work/hold"
log "cut-over done; writers resumed"
sleep 1
touch "$work/hb-stop"
wait "$hb_pid"
hb_pid=""
src -e "drop /* gh-ost */ table if exists $C"
src -e "drop /* gh-ost */ table if exists $D"
[ "$(src -N -B -e "SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = '$db' AND TABLE_NAME = 't' AND COLUMN_NAME = 'note'")" = 1 ] ||
  fail "the precondition: the source's t has no column note after the cut-over"

# ---- the end: writers stop, the sync catches up ----
touch "$work/stop"
wait "$wl_pid"
wl_pid=""
bad=$(writer_failures "$work/writer.err")
[ -z "$bad" ] || fail "a writer failed: $(echo "$bad" | head -3)"
for f in applier hb; do
  [ -s "$work/$f.err" ] && fail "the $f session failed: $(head -3 "$work/$f.err")"
done
want=$(master)
wait_for 300 at_checkpoint "$want" || fail "the sync did not catch up: checkpoint $(checkpoint), source $want"
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
pid=""
[ "$rc" -eq 0 ] || fail "the last run exited $rc after SIGTERM"
check_log "$cur_log"
log "caught up at $want; comparing"
bash scripts/checksum.sh "$db" || fail "target differs from source"
[ "$(tgt_q "SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = '$db' AND TABLE_NAME = 't' AND COLUMN_NAME = 'note'")" = 1 ] ||
  fail "the target's t has no column note"
[ "$(tgt_q "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = '$db' AND TABLE_NAME IN ('_t_gho', '_t_ghc', '_t_del')")" = 0 ] ||
  fail "a tool's table is on the target"
[ "$(records)" = 0 ] || fail "the record of _t_gho is left after the cut-over"
recorded=$(cat "$work"/run-*.log | grep -cE "ALTER TABLE of ghost table \`$db\`.\`_t_gho\` recorded" || true)
cutover=$(cat "$work"/run-*.log | grep -cE "cut-over of ghost table \`$db\`.\`_t_gho\` to \`$db\`.\`t\`: its 1 recorded" || true)
[ "$recorded" = 1 ] && [ "$cutover" = 1 ] ||
  fail "the ALTER was recorded $recorded and applied $cutover time(s), not once"
log "PASS ($rows rows)"

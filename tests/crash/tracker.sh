#!/usr/bin/env bash
# The schema tracker (issue 12): mode all from a source at binlog_row_metadata = $META (NO_LOG,
# MariaDB's default, or MINIMAL, MySQL 8's), so the binlog names no columns, with a writer running
# and DDL mid-stream: add, drop and rename a column, rename a table, create a table, drop one.
# After each DDL has reached the target, `dmhost run` is killed with -9 at once and started again
# (the restart must decode the next rows with the structure after the DDL). Then the writer stops,
# a last run catches up and stops with SIGTERM: the target must equal the source, table by table,
# and no run may log an error or a duplicate key.
#
#   tracker.sh <dmhost> <plugin dir> <source dir>       META=NO_LOG|MINIMAL (default NO_LOG)
#
# It sets a global of the shared source for its duration (RUN_SERIAL), restored at the end.
set -euo pipefail
dmhost=$1 plugins=$2 src_dir=$3
meta_mode=${META:-NO_LOG}
cd "$src_dir"
name=trk_$(tr 'A-Z' 'a-z' <<<"$meta_mode")
db=crash_$name meta=crash_${name}_meta
cp_table="\`$meta\`.\`${name}_syncer_checkpoint\`"
work=$(mktemp -d /tmp/dmh-$name-XXXXXX)
t0=$SECONDS tag="tracker ($meta_mode)"
. tests/crash/lib.sh
pid="" wl_pid="" cur_log=""
cleanup() {
  touch "$work/stop"
  [ -n "$wl_pid" ] && wait "$wl_pid" 2>/dev/null
  [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  # the pair's setting (scripts/mariadb.sh), whatever an interrupted run left behind
  src -e "SET GLOBAL binlog_row_metadata = FULL" || true
  if [ "${KEEP:-}" ]; then echo "work folder kept: $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM
fail() {
  echo "tracker ($meta_mode): FAILED: $*" >&2
  [ -n "$cur_log" ] && [ -f "$cur_log" ] && { echo "--- end of $cur_log:" >&2; tail -n 25 "$cur_log" >&2; }
  exit 1
}
wait_log() { # file seconds regex
  local i
  for i in $(seq 1 $(($2 * 20))); do
    grep -qE "$3" "$1" 2>/dev/null && return 0
    sleep 0.05
  done
  return 1
}
check_log() {
  [ -n "$(dup_key_line "$1")" ] && fail "$(basename "$1") hit a duplicate key"
  local errs
  errs=$(grep -E "\[ERROR\]|\[code [0-9]+\]|dmhost: error" "$1" || true)
  [ -z "$errs" ] || fail "$(basename "$1") logged an error: $(head -3 <<<"$errs")"
}

# ---- the source, at the metadata level under test (only new binlog events are affected) ----
src -e "SET GLOBAL binlog_row_metadata = $meta_mode"
src -e "DROP DATABASE IF EXISTS \`$db\`; CREATE DATABASE \`$db\` CHARACTER SET latin1"
tgt -e "DROP DATABASE IF EXISTS \`$db\`; DROP DATABASE IF EXISTS \`$meta\`"
# columns whose decoding needs what NO_LOG leaves out: unsigned values above the signed range,
# ENUM/SET by name, a latin1 text next to a utf8mb4 one, a key not in the first column
src "$db" -e "
CREATE TABLE t1 (id INT UNSIGNED NOT NULL, u BIGINT UNSIGNED, s TINYINT UNSIGNED,
  e ENUM('red','green','blue'), st SET('a','b','c'), l VARCHAR(40), m TEXT CHARACTER SET utf8mb4,
  d DECIMAL(12,3), ts DATETIME(3), gone INT, old_name VARCHAR(20), PRIMARY KEY (id));
CREATE TABLE t2 (k VARCHAR(20) CHARACTER SET utf8mb4 NOT NULL, v INT, UNIQUE KEY (k));
CREATE TABLE t3 (id INT PRIMARY KEY, n MEDIUMINT UNSIGNED);
DELIMITER //
CREATE PROCEDURE w(i INT)
BEGIN
  INSERT INTO t1 (id, u, s, e, st, l, m, d, ts)
    VALUES (i, 18446744073709551000 + (i % 600), 200 + (i % 50), ELT(1 + i % 3, 'red', 'green', 'blue'),
            ELT(1 + i % 3, 'a,b', 'c', 'a,c'), CONCAT('caf', CHAR(233), i), CONCAT('naïve ✓ ', i),
            i / 7, NOW(3));
  UPDATE t1 SET u = u - 1, e = 'blue' WHERE id = i - 3;
  DELETE FROM t1 WHERE id = i - 7 AND i % 5 = 0;
  INSERT INTO t2 (k, v) VALUES (CONCAT('k', i % 50), i) ON DUPLICATE KEY UPDATE v = v + 1;
  IF (SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 't3') > 0 THEN
    REPLACE INTO t3 VALUES (i % 100, 16000000 + i);
  END IF;
END//
DELIMITER ;"
for i in $(seq 1 300); do echo "CALL w($i);"; done | src "$db"

crash_source_cfg trk-src
crash_task_cfg "$name" "$meta" "$db" trk-src >"$work/task.cfg" <<CFG
supervisor = { auto-resume = { enable = false; }; };
load = { on-duplicate = "error"; };
sync = { worker-count = 4; batch = 100; batch-ms = 20; status-interval = 200; };
CFG
run_no=0
start_run() {
  run_no=$((run_no + 1))
  cur_log=$work/run-$run_no.log
  "$dmhost" run --source "$work/source.cfg" --task "$work/task.cfg" --work-dir "$work/w" \
    --plugin-dir "$plugins" ${TRK_LOG:+--log-level "$TRK_LOG"} >"$cur_log" 2>&1 &
  pid=$!
  wait_log "$cur_log" 60 "sync: reading" || fail "run $run_no: the sync did not start"
}
kill_run() {
  kill -9 "$pid" 2>/dev/null || fail "run $run_no was not running when killed"
  wait "$pid" 2>/dev/null || true
  pid=""
  check_log "$cur_log"
}

# ---- the writer: the procedure in a loop until $work/stop exists ----
(
  i=1000
  while [ ! -e "$work/stop" ]; do
    for k in 1 2 3 4 5; do echo "CALL w($((i + k)));"; done | src "$db" 2>>"$work/writer.err" || true
    i=$((i + 5))
    sleep 0.02
  done
) &
wl_pid=$!

start_run
log "run 1: mode all done, sync reading (the dump seeded the tracker)"
grep -q "schema tracker: .* seeded from the dump's schema files" "$cur_log" ||
  fail "the dump's schema files did not seed the tracker"

# Each DDL: run on the source, wait until the target has it, kill -9 at once, start again.
# $2: a query on the target that prints 1 once the DDL is there.
ddl() {
  src "$db" -e "$1"
  local ok=0
  for _ in $(seq 1 400); do
    [ "$(tgt -N -B -e "$2" 2>/dev/null)" = 1 ] && { ok=1; break; }
    sleep 0.025
  done
  [ "$ok" = 1 ] || fail "the DDL '$1' did not reach the target"
  kill_run
  log "killed right after: $1"
  sleep 0.3 # rows with the new structure pile up meanwhile
  start_run
}
col() { echo "SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = '$db' AND TABLE_NAME = '$1' AND COLUMN_NAME = '$2'"; }
tbl() { echo "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = '$db' AND TABLE_NAME = '$1'"; }
sleep 1
ddl "ALTER TABLE t1 ADD COLUMN added INT UNSIGNED NOT NULL DEFAULT 4000000000 AFTER id" "$(col t1 added)"
ddl "ALTER TABLE t1 DROP COLUMN gone" "SELECT 1 - ($(col t1 gone))"
src "$db" -e "UPDATE t1 SET old_name = CONCAT('o', id) WHERE id % 3 = 0"
ddl "ALTER TABLE t1 CHANGE old_name new_name VARCHAR(30)" "$(col t1 new_name)"
src "$db" -e "UPDATE t1 SET new_name = CONCAT('n', id) WHERE id % 4 = 0"
ddl "RENAME TABLE t3 TO t3_moved" "$(tbl t3_moved)"
ddl "CREATE TABLE t4 (a INT UNSIGNED PRIMARY KEY, b ENUM('x','y') NOT NULL, c VARCHAR(10) CHARACTER SET utf8mb4)" "$(tbl t4)"
src "$db" -e "INSERT INTO t4 VALUES (4294967295, 'y', '✓'), (1, 'x', NULL); CREATE TABLE t5 LIKE t2; INSERT INTO t5 SELECT * FROM t2; UPDATE t5 SET v = v + 1"
ddl "DROP TABLE t5" "SELECT 1 - ($(tbl t5))"
src "$db" -e "UPDATE t4 SET b = 'x', c = 'é' WHERE a = 4294967295"
sleep 1

# ---- the end: writes stop, a last run catches up ----
touch "$work/stop"
wait "$wl_pid"
wl_pid=""
bad=$(writer_failures "$work/writer.err")
[ -z "$bad" ] || fail "the writer failed: $(echo "$bad" | head -3)"
want=$(src -N -B -e "SHOW MASTER STATUS" | awk '{ print $1 ":" $2 }')
got=""
for _ in $(seq 1 600); do
  got=$(checkpoint)
  [ "$got" = "$want" ] && break
  kill -0 "$pid" 2>/dev/null || fail "dmhost exited before catching up"
  sleep 0.1
done
[ "$got" = "$want" ] || fail "the sync did not catch up: checkpoint $got, source $want"
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
pid=""
[ "$rc" -eq 0 ] || fail "the last run exited $rc after SIGTERM"
check_log "$cur_log"
# the source wrote no column names all along (else this test proves nothing)
[ "$(src -N -B -e "SELECT @@global.binlog_row_metadata")" = "$meta_mode" ] ||
  fail "binlog_row_metadata changed under the test"
log "caught up at $got after $run_no runs; comparing"
bash scripts/checksum.sh "$db" || fail "target differs from source"
[ "$(tgt -N -B -e "$(tbl t3_moved)")" = 1 ] && [ "$(tgt -N -B -e "$(tbl t5)")" = 0 ] ||
  fail "the renamed or dropped table is not so on the target"
log "PASS"

#!/bin/bash
# json-sink's column cache and DDL, on a source whose binlog names no columns
# (binlog_row_metadata = NO_LOG for the run, FULL again at the end; sets a global of the shared
# source: RUN_SERIAL): the relay and the sink run by unit_run; rows are written and the sink
# catches up (it has read the table's two column names from information_schema); then
# ALTER TABLE ADD COLUMN and more rows: the sink must drop its cached names at the ALTER it reads
# and write the new rows with all three names. (Kept, the old two names would not fit the new
# table map: its rows would be named col1..col3.) Then transaction ends as the SDK's tracker reads
# them: a BEGIN ... ROLLBACK group (a MyISAM change, statement format) and a committed transaction
# with SAVEPOINT and ROLLBACK TO inside, its rows (MyISAM's too) all written.
#
#   ddl.sh <unit_run> <plugin dir> <source dir> <unit>
set -euo pipefail
run=$1 plugins=$2 src_dir=$3 unit=$4
tag=json_sink_ddl
cd "$src_dir"
work=$(mktemp -d /tmp/dmh-jsonsink-ddl-XXXXXX)
db=js_ddl
. tests/json-sink/lib.sh
relay_pid="" sink_pid=""
cleanup() {
  src -e "SET GLOBAL binlog_row_metadata = FULL" || true
  for p in $sink_pid $relay_pid; do { kill -9 "$p" && wait "$p"; } 2>/dev/null || true; done
  if [[ ${KEEP:-} ]]; then echo "$tag: work folder kept: $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
fail() {
  echo "$tag: FAILED: $*" >&2
  [[ -f $work/sink.log ]] && { echo "--- end of sink.log:" >&2; tail -n 15 "$work/sink.log" >&2; }
  exit 1
}
[[ -f $unit ]] || fail "no unit build $unit: run json_sink_build"
src -e "SET GLOBAL binlog_row_metadata = NO_LOG"
read -r meta_name meta_pos _ < <(src -N -e "SHOW MASTER STATUS")
src -e "DROP DATABASE IF EXISTS $db; CREATE DATABASE $db; CREATE TABLE $db.t (id INT PRIMARY KEY, v VARCHAR(20))"
from="from = { host = \"$DMH_SOURCE_HOST\"; port = $DMH_SOURCE_PORT; user = \"$DMH_SOURCE_USER\"; password = \"\"; };"
printf '%s\nsource-id = "js-ddl-src"; enable-gtid = true; relay-dir = "%s";\nrelay = { binlog-name = "%s"; };\n' \
  "$from" "$work/relay" "$meta_name" >"$work/relay.cfg"
printf '%s\nrelay-dir = "%s";\nname = "jsddl"; source-id = "js-ddl-src"; do-dbs = ["%s"];\nmeta = { binlog-name = "%s"; binlog-pos = %s; };\njson-sink = { output-dir = "%s"; layout = "stream"; flush-interval = 20; };\n' \
  "$from" "$work/relay" "$db" "$meta_name" "$meta_pos" "$work/out" >"$work/sink.cfg"
"$run" "$plugins/dmhost-relay.so" "$work/relay.cfg" "$work/root" relay >"$work/relay.log" 2>&1 &
relay_pid=$!
"$run" "$unit" "$work/sink.cfg" "$work/root" sink >"$work/sink.log" 2>&1 &
sink_pid=$!
src "$db" -e "INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c')"
js_wait_caught_up "$work/root" 60
grep -q "names no columns of $db.t .*: 2 names" "$work/sink.log" ||
  fail "the sink did not read t's two names from information_schema (binlog_row_metadata NO_LOG)"
src "$db" -e "ALTER TABLE t ADD COLUMN w INT DEFAULT 7; INSERT INTO t VALUES (4, 'd', 40), (5, 'e', 50)"
js_wait_caught_up "$work/root" 60
# transaction ends as the SDK's tracker reads them: a transaction that changed a MyISAM table and
# rolled back is logged BEGIN ... ROLLBACK (in statement format: row format logs m's row as a
# group of its own), a group complete at its ROLLBACK; ROLLBACK TO a savepoint is a statement
# inside its transaction, whose rows all come (m's stay on the source)
src "$db" -e "CREATE TABLE m (id INT PRIMARY KEY) ENGINE=MyISAM"
src "$db" -e "SET SESSION binlog_format = STATEMENT;
  BEGIN; INSERT INTO t VALUES (6, 'f', 60); INSERT INTO m VALUES (1); ROLLBACK"
src "$db" -e "BEGIN; INSERT INTO m VALUES (2); SAVEPOINT s; INSERT INTO m VALUES (3);
  ROLLBACK TO SAVEPOINT s; INSERT INTO t VALUES (7, 'g', 70); COMMIT"
js_wait_caught_up "$work/root" 60
# both cases are in the binlog the sink read (else the test shows nothing of them)
mariadb-binlog --no-defaults -R --protocol=tcp -h"$DMH_SOURCE_HOST" -P"$DMH_SOURCE_PORT" \
  -u"$DMH_SOURCE_USER" "$meta_name" >"$work/binlog.txt" 2>/dev/null || true
grep -qi "^ROLLBACK TO" "$work/binlog.txt" && grep -q "^ROLLBACK$" "$work/binlog.txt" ||
  fail "the source's binlog has no ROLLBACK TO or no ROLLBACK: the cases are not read"
# a rotation with no transaction after it: the idle sink's checkpoint follows into the new file
# (it stayed at the old file's last transaction before)
src -e "FLUSH BINARY LOGS"
js_wait_caught_up "$work/root" 30
kill -TERM "$sink_pid"
wait "$sink_pid" || fail "the sink did not stop cleanly"
sink_pid=""
grep -q "names no columns of $db.t .*: 3 names" "$work/sink.log" ||
  fail "after the ALTER the sink did not read t's names again"
python3 - "$work/out/changes.jsonl" <<'PY' || fail "the lines do not carry the names of their time"
import json, sys
rows = {}
for text in open(sys.argv[1], encoding="utf-8"):
    line = json.loads(text)
    rows[(line["source"]["table"], line["after"]["id"])] = line["after"]
want = {("t", 1): {"id": 1, "v": "a"}, ("t", 2): {"id": 2, "v": "b"},
        ("t", 3): {"id": 3, "v": "c"}, ("t", 4): {"id": 4, "v": "d", "w": 40},
        ("t", 5): {"id": 5, "v": "e", "w": 50}, ("m", 2): {"id": 2},
        ("m", 3): {"id": 3}, ("t", 7): {"id": 7, "v": "g", "w": 70}}
if rows != want:
    print("json_sink_ddl: got %s" % rows, file=sys.stderr)
    sys.exit(1)
PY
src -e "DROP DATABASE $db"
log "ok: names before and after the ALTER; a rolled-back MyISAM group kept, ROLLBACK TO inside"

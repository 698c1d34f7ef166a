#!/bin/bash
# dmhost-unit-check on the out-of-tree json-sink build (json_sink_build), against the real servers:
# a relay folder is made first by our relay unit (run through dmhost-unit-check too, from the file
# the source writes into before the rows below), then the sink gets a --config with that
# relay-dir, the source, do-dbs and a meta position before the rows: every check must pass, and
# the kept work folders must hold JSON lines of the rows (the checks really ran the sink over
# them). Last, the same config without relay-dir: init refuses, naming the source and
# enable-relay.
#
#   unit_check.sh <dmhost-unit-check> <build dir> <source dir> <unit>
set -euo pipefail
tool=$1 build=$(cd "$2" && pwd) src_dir=$3 unit=$4
tag=json_sink_unit_check
fail() { echo "$tag: FAILED: $*" >&2; exit 1; }
[[ -f $unit ]] || fail "no unit build $unit: run json_sink_build"
eval "$(bash "$src_dir/scripts/mariadb.sh" env)"
src() { mariadb --no-defaults --protocol=tcp -h"$DMH_SOURCE_HOST" -P"$DMH_SOURCE_PORT" -u"$DMH_SOURCE_USER" "$@"; }

work=$build/tests/json-sink/work-unit-check
rm -rf "$work"
mkdir -p "$work/keep"
db=js_uc
src -e "DROP DATABASE IF EXISTS $db"
# a fresh binlog file: the relay copies it from its start, and on the shared source (other tests
# write tens of MB) a file already large took the relay's short check run all its time (CI, ASan:
# the rows below were never reached, the sink wrote 0 lines)
src -e "FLUSH BINARY LOGS"
read -r binlog_name binlog_pos _ < <(src -N -e "SHOW MASTER STATUS")
src -e "CREATE DATABASE $db; USE $db; CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(200));
  INSERT INTO t SELECT seq, REPEAT('x', 150) FROM seq_1_to_3000;
  UPDATE t SET v = 'changed' WHERE id <= 500; DELETE FROM t WHERE id > 2900;"
read -r end_name end_pos _ < <(src -N -e "SHOW MASTER STATUS")

from="from = { host = \"$DMH_SOURCE_HOST\"; port = $DMH_SOURCE_PORT; user = \"$DMH_SOURCE_USER\"; password = \"\"; };"
printf '%s\nsource-id = "uc-js-src"; enable-gtid = true; relay-dir = "%s";\nrelay = { binlog-name = "%s"; };\n' \
  "$from" "$work/relay" "$binlog_name" >"$work/relay.cfg"
"$tool" "$build/plugins/dmhost-relay.so" --config "$work/relay.cfg" >"$work/relay.out" ||
  { cat "$work/relay.out"; fail "the relay unit did not pass (it makes the relay folder)"; }
ls "$work/relay"/*/"$binlog_name" >/dev/null || fail "the relay folder has no $binlog_name"
# the precondition of what follows: the relay holds the rows (their file up to their end, or a
# later file when the source moved on)
relay_has_rows() {
  local f
  f=$(ls "$work/relay"/*/"$end_name" 2>/dev/null | head -1)
  [[ -n $f ]] && (($(stat -c %s "$f") >= end_pos))
}
relay_has_rows || fail "the relay's run stopped before the rows' end ($end_name:$end_pos): $(ls -l "$work/relay"/*/)"

sink_cfg() { # relay-dir line
  printf '%s\n%s\nname = "uc-json"; source-id = "uc-js-src"; do-dbs = ["%s"];\nmeta = { binlog-name = "%s"; binlog-pos = %s; };\njson-sink = { layout = "stream"; flush-interval = 20; };\n' \
    "$from" "$1" "$db" "$binlog_name" "$binlog_pos"
}
sink_cfg "relay-dir = \"$work/relay\";" >"$work/sink.cfg"
cat "$work/sink.cfg"
TMPDIR=$work/keep bash "$src_dir/tests/unit_check/expect.sh" "$tool" "$unit" "$work/sink.cfg" pass ||
  fail "json-sink does not pass dmhost-unit-check"
# what the checks ran produced lines of the rows above (expect.sh's run removed its folders; run
# the fresh check's path again, keeping them)
TMPDIR=$work/keep "$tool" "$unit" --config "$work/sink.cfg" --keep >"$work/keep.out" || true
lines=$(find "$work/keep" -name changes.jsonl -exec cat {} + | grep -c "\"db\":\"$db\"" || true)
echo "$tag: $lines JSON lines of $db in the kept work folders"
((lines >= 3000)) || fail "the checks' runs wrote $lines lines of $db, expected the 3000 inserts at least"

sink_cfg "" >"$work/norelay.cfg"
out=$("$tool" "$unit" --config "$work/norelay.cfg" 2>&1 || true)
grep -q "enable-relay" <<<"$out" && grep -q "uc-js-src" <<<"$out" ||
  { printf '%s\n' "$out"; fail "without relay-dir init did not refuse naming the source and enable-relay"; }
src -e "DROP DATABASE $db"
echo "$tag: ok"

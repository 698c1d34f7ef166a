#!/bin/bash
# plugins.sh TOOL BUILD_DIR SOURCE_DIR KIND EXPECT
# dmhost-unit-check on our own KIND unit (BUILD_DIR/plugins/dmhost-KIND.so) against the test
# servers (scripts/mariadb.sh env), with a --config made for it here: the source gets a small
# schema of its own, the meta-schema and the target's copy are dropped first so the task is fresh,
# the load gets a dump made by `dmhost run` (mode dump), the relay an empty relay-dir. EXPECT as in
# expect.sh: "pass", or the one check a known issue makes fail.
set -euo pipefail
tool=$1 build=$2 src_dir=$3 kind=$4 expect=$5
eval "$(bash "$src_dir/scripts/mariadb.sh" env)"
src() { mariadb --no-defaults --protocol=tcp -h"$DMH_SOURCE_HOST" -P"$DMH_SOURCE_PORT" -u"$DMH_SOURCE_USER" "$@"; }
tgt() { mariadb --no-defaults --protocol=tcp -h"$DMH_TARGET_HOST" -P"$DMH_TARGET_PORT" -u"$DMH_TARGET_USER" "$@"; }

work=$build/tests/unit_check/work-$kind
rm -rf "$work"
mkdir -p "$work"
db=uc_$kind meta=uc_meta_$kind
# the dump and the load get enough rows to still be at work when the checks stop or kill them
rows=2000
[[ $kind == load || $kind == dump ]] && rows=600000
tgt -e "DROP DATABASE IF EXISTS $meta; DROP DATABASE IF EXISTS $db;"
src -e "DROP DATABASE IF EXISTS $db;"
# where the sync starts: before the schema is made, so it applies the DDL and then the writes
read -r binlog_name binlog_pos _ < <(src -N -e "SHOW MASTER STATUS")
src -e "CREATE DATABASE $db; USE $db; CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(200));
  INSERT INTO t SELECT seq, REPEAT('x', 150) FROM seq_1_to_$rows;"

endpoints="from = { host = \"$DMH_SOURCE_HOST\"; port = $DMH_SOURCE_PORT; user = \"$DMH_SOURCE_USER\"; password = \"\"; };
target-database = { host = \"$DMH_TARGET_HOST\"; port = $DMH_TARGET_PORT; user = \"$DMH_TARGET_USER\"; password = \"\"; };
do-dbs = [\"$db\"];"
cfg=$work/$kind.cfg
case $kind in
dump)
  printf '%s\nname = "uc-dump"; source-id = "uc-src"; task-mode = "dump";\ndump = { threads = 2; };\n' \
    "$endpoints" >"$cfg" ;;
load)
  # a dump of the schema, made by the host with our own dump unit
  cat >"$work/source.cfg" <<CFG
source-id = "uc-src";
from = { host = "$DMH_SOURCE_HOST"; port = $DMH_SOURCE_PORT; user = "$DMH_SOURCE_USER"; password = ""; };
CFG
  cat >"$work/task.cfg" <<CFG
name = "uc-load-dump";
task-mode = "dump";
target-database = { host = "$DMH_TARGET_HOST"; port = $DMH_TARGET_PORT; user = "$DMH_TARGET_USER"; password = ""; };
mysql-instances = ( { source-id = "uc-src"; block-allow-list = "b"; } );
block-allow-list = { b = { do-dbs = ["$db"]; }; };
ignore-checking-items = ["all"];
CFG
  "$build/host/dmhost" run --source "$work/source.cfg" --task "$work/task.cfg" \
    --work-dir "$work/run" --plugin-dir "$build/plugins" --quiet
  dump_dir=$(dirname "$(find "$work/run" -name metadata -print -quit)")
  [[ -f $dump_dir/metadata ]] || { echo "plugins.sh: no dump made in $work/run" >&2; exit 1; }
  printf '%s\nname = "uc-load"; source-id = "uc-src"; task-mode = "load"; meta-schema = "%s";\nload = { dir = "%s"; };\n' \
    "$endpoints" "$meta" "$dump_dir" >"$cfg" ;;
sync)
  printf '%s\nname = "uc-sync"; source-id = "uc-src"; task-mode = "incremental"; meta-schema = "%s";\nmeta = { binlog-name = "%s"; binlog-pos = %s; };\nsync = { };\n' \
    "$endpoints" "$meta" "$binlog_name" "$binlog_pos" >"$cfg"
  # writes all along, so every run of the sync has events to apply
  (for i in $(seq 100000 100600); do
    src -e "INSERT INTO $db.t VALUES ($i, 'w')" 2>/dev/null || break
    sleep 0.05
  done) &
  writer=$! ;;
relay)
  printf '%s\nsource-id = "uc-src"; enable-gtid = true; relay-dir = "%s";\nrelay = { };\n' \
    "$endpoints" "$work/relay" >"$cfg" ;;
esac
cat "$cfg"
status=0
bash "$src_dir/tests/unit_check/expect.sh" "$tool" "$build/plugins/dmhost-$kind.so" "$cfg" "$expect" || status=$?
if [[ -n ${writer:-} ]]; then
  kill "$writer" 2>/dev/null || true
  wait "$writer" 2>/dev/null || true
fi
tgt -e "DROP DATABASE IF EXISTS $meta; DROP DATABASE IF EXISTS $db;"
src -e "DROP DATABASE IF EXISTS $db;"
exit $status

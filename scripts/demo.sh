#!/usr/bin/env bash
# The demo: a full migration between two local MariaDB servers that it starts itself.
#   1. install what is missing (Debian), build
#   2. start a source (binlog, GTID) and a target (scripts/mariadb.sh)
#   3. fill the source with sample data (scripts/sample-data.sh)
#   4. run a task in mode `full` (dump -> load) with `dmhost run`
#   5. show both sides equal, table by table (scripts/checksum.sh)
# ROWS (default 20000 per table) sizes the sample. DEMO_DIR (default /tmp/dmhost-demo) keeps the
# config files and the task's work dir.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
build=${BUILD_DIR:-build/demo}
echo "== build ($build)"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j "$(nproc)" --target dmhost dmhost_dump dmhost_load >/dev/null

echo "== start the local source and target"
bash scripts/mariadb.sh start
eval "$(bash scripts/mariadb.sh env)"

echo "== sample data on the source"
bash scripts/sample-data.sh --rows "${ROWS:-20000}"

demo=${DEMO_DIR:-/tmp/dmhost-demo}
rm -rf "$demo"
mkdir -p "$demo"
# A demo is repeatable: the target starts empty of what the task writes.
mariadb --no-defaults --protocol=tcp -h"$DMH_TARGET_HOST" -P"$DMH_TARGET_PORT" -u"$DMH_TARGET_USER" \
  -e 'DROP DATABASE IF EXISTS demo; DROP DATABASE IF EXISTS demo_shop; DROP DATABASE IF EXISTS dm_meta'

cat >"$demo/source.cfg" <<CFG
# The upstream server (see examples/source.cfg for every setting).
source-id = "demo-source";
enable-gtid = true;
from = { host = "$DMH_SOURCE_HOST"; port = $DMH_SOURCE_PORT; user = "$DMH_SOURCE_USER"; password = "$DMH_SOURCE_PASSWORD"; };
CFG
cat >"$demo/task.cfg" <<CFG
# Mode full: dump the selected schemas, then load them into the target.
name = "demo";
task-mode = "full";
meta-schema = "dm_meta";
target-database = { host = "$DMH_TARGET_HOST"; port = $DMH_TARGET_PORT; user = "$DMH_TARGET_USER"; password = "$DMH_TARGET_PASSWORD"; };
mysql-instances = ( { source-id = "demo-source"; block-allow-list = "demo"; } );
block-allow-list = { demo = { do-dbs = ["demo", "demo_shop"]; }; };
dump = { threads = 4; };
load = { pool-size = 4; on-duplicate = "error"; };
CFG

echo "== dmhost run (mode full)"
"$build/host/dmhost" run --source "$demo/source.cfg" --task "$demo/task.cfg" \
  --work-dir "$demo/work" --plugin-dir "$build/plugins"

echo "== source and target, table by table"
bash scripts/checksum.sh demo demo_shop
echo "== the target equals the source. Files: $demo (configs, dump, checkpoints)."
echo "   Stop the servers with: scripts/mariadb.sh stop"

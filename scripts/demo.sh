#!/usr/bin/env bash
# The demo: a live migration between two local MariaDB servers that it starts itself.
#   1. install what is missing (Debian), build
#   2. start a source (binlog, GTID) and a target (scripts/mariadb.sh)
#   3. fill the source with sample data (scripts/sample-data.sh)
#   4. run a task in mode `all` (dump -> load -> sync) with `dmhost run` in the background, while
#      the source keeps changing (inserts, updates, deletes, a key update, an ALTER TABLE)
#   5. once the sync has caught up, stop the task and show both sides equal, table by table
#      (scripts/checksum.sh)
# ROWS (default 20000 per table) sizes the sample. DEMO_DIR (default /tmp/dmhost-demo) keeps the
# config files and the task's work dir.
#
#   scripts/demo.sh --web   the same task under the daemon (`dmhost serve --listen`, started by
#                           `dmctl start-task`), its status page (docs/status-page.md) at
#                           http://127.0.0.1:8261/ (DEMO_PORT) from the start; after step 4 the
#                           source keeps changing, a round every 2 s, until Ctrl-C; then step 5.
set -euo pipefail
cd "$(dirname "$0")/.."
web=
case "${1:-}" in
--web) web=1 ;;
"") ;;
*) echo "usage: scripts/demo.sh [--web]" >&2; exit 2 ;;
esac
port=${DEMO_PORT:-8261}
bash scripts/deps.sh
build=${BUILD_DIR:-build/demo}
echo "== build ($build)"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j "$(nproc)" --target dmhost dmctl dmhost_dump dmhost_load dmhost_sync >/dev/null

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
# Mode all: dump the selected schemas, load them into the target, then replay the source's binlog
# from the dump's position on.
name = "demo";
task-mode = "all";
meta-schema = "dm_meta";
target-database = { host = "$DMH_TARGET_HOST"; port = $DMH_TARGET_PORT; user = "$DMH_TARGET_USER"; password = "$DMH_TARGET_PASSWORD"; };
mysql-instances = ( { source-id = "demo-source"; block-allow-list = "demo"; } );
block-allow-list = { demo = { do-dbs = ["demo", "demo_shop"]; }; };
dump = { threads = 4; };
load = { pool-size = 4; on-duplicate = "error"; };
sync = { worker-count = 4; };
CFG

src() { mariadb --no-defaults --protocol=tcp -h"$DMH_SOURCE_HOST" -P"$DMH_SOURCE_PORT" -u"$DMH_SOURCE_USER" "$@"; }
tgt() { mariadb --no-defaults --protocol=tcp -h"$DMH_TARGET_HOST" -P"$DMH_TARGET_PORT" -u"$DMH_TARGET_USER" "$@"; }

if [ -z "$web" ]; then
  echo "== dmhost run (mode all) in the background; log: $demo/dmhost.log"
  "$build/host/dmhost" run --source "$demo/source.cfg" --task "$demo/task.cfg" \
    --work-dir "$demo/work" --plugin-dir "$build/plugins" >"$demo/dmhost.log" 2>&1 &
  pid=$!
else
  # its own session: the Ctrl-C that ends the rounds below is not the daemon's
  echo "== dmhost serve --listen 127.0.0.1:$port in the background; log: $demo/dmhost.log"
  setsid "$build/host/dmhost" serve --state-dir "$demo/state" --plugin-dir "$build/plugins" \
    --listen "127.0.0.1:$port" >"$demo/dmhost.log" 2>&1 &
  pid=$!
fi
trap 'kill "$pid" 2>/dev/null || true' EXIT
if [ -n "$web" ]; then
  for _ in $(seq 1 100); do
    grep -q "control plane on http://" "$demo/dmhost.log" && break
    kill -0 "$pid" 2>/dev/null || { cat "$demo/dmhost.log"; echo "dmhost stopped early" >&2; exit 1; }
    sleep 0.1
  done
  grep -q "control plane on http://" "$demo/dmhost.log" ||
    { cat "$demo/dmhost.log"; echo "dmhost is not listening on 127.0.0.1:$port" >&2; exit 1; }
  dmctl() { "$build/host/dmctl" --state-dir "$demo/state" "$@" >>"$demo/dmctl.log"; }
  dmctl operate-source create "$demo/source.cfg" || { cat "$demo/dmctl.log"; exit 1; }
  dmctl start-task "$demo/task.cfg" || { cat "$demo/dmctl.log"; exit 1; }
  echo "== task demo started (dmctl start-task); the status page: open http://127.0.0.1:$port/ in a browser on this machine"
fi

# the source goes on changing while the task dumps, loads and syncs
echo "== changes on the source while the task runs"
for round in 1 2 3 4 5; do
  src demo_shop -e "
    BEGIN;
    INSERT INTO demo_shop.orders (customer_id, amount, status, note, created_at)
      SELECT 1 + seq % 1000, seq * 1.5, 'new', CONCAT('demo round $round'), NOW(6) FROM seq_1_to_200;
    UPDATE demo_shop.orders SET status = 'paid', amount = amount + 1 WHERE id % 97 = $round;
    DELETE FROM demo_shop.order_items WHERE order_id % 113 = $round;
    COMMIT;
    UPDATE demo.sbtest1 SET k = k + 1 WHERE id % 50 = $round;
    UPDATE demo_shop.customers SET email = CONCAT('moved', id, '-$round@example.com') WHERE id = $round;
    DELETE FROM demo_shop.audit_log WHERE event = 'logout' AND MINUTE(at) = $round;"
  [ "$round" = 3 ] && src -e "ALTER TABLE demo_shop.customers ADD COLUMN vip BOOLEAN NOT NULL DEFAULT FALSE"
  [ "$round" = 4 ] && src -e "UPDATE demo_shop.customers SET vip = TRUE WHERE country = 'IS'"
  sleep 1
done

if [ -n "$web" ]; then
  echo "== the source keeps changing, a round every 2 s: watch http://127.0.0.1:$port/; Ctrl-C ends it"
  stop_rounds=
  trap 'stop_rounds=1' INT
  round=6
  while [ -z "$stop_rounds" ]; do
    kill -0 "$pid" 2>/dev/null || { cat "$demo/dmhost.log"; echo "dmhost stopped early" >&2; exit 1; }
    src demo_shop -e "
      INSERT INTO demo_shop.orders (customer_id, amount, status, note, created_at)
        SELECT 1 + seq % 1000, seq * 1.5, 'new', CONCAT('demo round $round'), NOW(6) FROM seq_1_to_500;
      UPDATE demo.sbtest1 SET k = k + 1 WHERE id % 50 = $((round % 50));" || true
    round=$((round + 1))
    sleep 2 || true
  done
  trap - INT
  echo
fi

# caught up: the sync checkpoint (DM's table) reached the source's binlog position
read -r file pos < <(src -N -e 'SHOW MASTER STATUS' | cut -f1,2)
echo "== waiting for the sync to reach the source's position $file:$pos"
for _ in $(seq 1 600); do
  kill -0 "$pid" 2>/dev/null || { cat "$demo/dmhost.log"; echo "dmhost stopped early" >&2; exit 1; }
  at=$(tgt -N -e "SELECT CONCAT(binlog_name, ' ', binlog_pos) FROM dm_meta.demo_syncer_checkpoint WHERE is_global = 1" 2>/dev/null || true)
  if [ -n "$at" ]; then
    read -r f p <<<"$at"
    if [[ "$f" > "$file" ]] || { [ "$f" = "$file" ] && [ "$p" -ge "$pos" ]; }; then break; fi
  fi
  sleep 0.2
done
kill -TERM "$pid"
wait "$pid" || true
trap - EXIT
grep -E "starting at|finished|paused at" "$demo/dmhost.log" | sed 's/^/   /' | tail -6

echo "== source and target, table by table"
bash scripts/checksum.sh demo demo_shop
echo "== the target equals the source. Files: $demo (configs, dump, checkpoints, log)."
echo "   Stop the servers with: scripts/mariadb.sh stop"

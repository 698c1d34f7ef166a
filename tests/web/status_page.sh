#!/usr/bin/env bash
# The status page in headless Chromium (issue 14), against the real servers: `dmhost serve
# --listen 127.0.0.1:0` with two tasks on one source (enable-relay), a real mode-all task whose sync applies a
# writer's rows stamped 30 s in the past (faster than it applies them) (a replication lag for the chart) and a task of the fake
# units of tests/fixtures whose slow dump gives a progress bar that moves. Once the daemon has
# sampled some seconds of lag, status_page.py opens the page and checks it (progress, lag chart
# pixels and history from before the page, pause/resume with query-status agreeing, relay
# stop/start with operate-source show agreeing) and saves screenshots in the output folder. chromium, chromedriver or python3-selenium missing: the
# test fails (scripts/deps.sh installs them).
#
#   status_page.sh <dmhost> <dmctl> <plugin dir> <source dir> <fake dump> <fake load> <fake sync> <out dir>
set -euo pipefail
dmhost=$1 dmctl=$2 plugins=$3 src_dir=$4 fdump=$5 fload=$6 fsync=$7 out=$8
cd "$src_dir"
tag=status_page db=status_page meta=status_page_meta
work=$(mktemp -d /tmp/dmh-status-page-XXXXXX)
t0=$SECONDS
. tests/crash/lib.sh
serve_begin
. tests/web/browser.sh
web_need_browser
rm -rf "$out" && mkdir -p "$out"

src -e "DROP DATABASE IF EXISTS $db; CREATE DATABASE $db;
  CREATE TABLE $db.t (id INT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(64)) ENGINE=InnoDB;
  INSERT INTO $db.t (v) SELECT CONCAT('row', seq) FROM $db.seq_1_to_100;"
tgt -e "DROP DATABASE IF EXISTS $db; DROP DATABASE IF EXISTS $meta;"
crash_source_cfg mysql-p1
printf 'enable-relay = true;\nrelay-dir = "%s";\n' "$work/relay" >>"$work/source.cfg" # the relay buttons
crash_task_cfg page_sync "$meta" "$db" mysql-p1 >"$work/sync.cfg" <<'CFG'
sync = { batch-ms = 20; };
CFG
cat >"$work/fake.cfg" <<CFG
name = "page_fake";
task-mode = "full";
target-database = { host = "127.0.0.1"; port = 2; user = "root"; password = ""; };
mysql-instances = ( { source-id = "mysql-p1"; } );
unit-paths = { dump = "$fdump"; load = "$fload"; sync = "$fsync"; };
supervisor = { stop-timeout = 5; auto-resume = { enable = false; }; };
ignore-checking-items = ["all"]; # the fake units reach no server
dump = { items = 6000; item-ms = 8; };
CFG

# the fake units' folder is a unit folder of the daemon (docs/security.md)
serve_listen "$dmhost" "$plugins" --unit-dir "$(dirname "$fdump")" || fail "the daemon did not listen"
ctl() { "$dmctl" --state-dir "$work/state" "$@"; }
ctl operate-source create "$work/source.cfg" >/dev/null || fail "operate-source create"
ctl start-task "$work/sync.cfg" >"$work/start.json" || fail "start-task page_sync: $(cat "$work/start.json")"
ctl start-task "$work/fake.cfg" >"$work/start.json" || fail "start-task page_fake: $(cat "$work/start.json")"
for _ in $(seq 1 300); do
  ctl query-status page_sync >"$work/status.json" 2>/dev/null || true
  grep -q '"unit": *"Sync"' "$work/status.json" && break
  sleep 0.1
done
grep -q '"unit": *"Sync"' "$work/status.json" || fail "the sync did not start: $(cat "$work/status.json")"
log "both tasks running on $addr"

# The writer: one session inserting 200 rows a statement, stamped 30 s in the past, faster
# than the sync applies them, so its lag is 30 s and more while the page samples it.
{
  for i in $(seq 1 4000); do
    echo "SET timestamp = DEFAULT; SET timestamp = UNIX_TIMESTAMP() - 30;"
    echo "INSERT INTO $db.t (v) SELECT CONCAT('w$i-', seq) FROM $db.seq_1_to_200;"
  done
} >"$work/writes.sql"
src <"$work/writes.sql" &
wpid=$!
# The page opens once the daemon has sampled the lag for a while (3 samples, one above 0): the
# chart must show that time, from before the page existed.
lag_seen=""
for _ in $(seq 1 200); do
  curl -sS --noproxy '*' "http://$addr/api/v1/dmhost/tasks/page_sync/lag" >"$work/lag.json" 2>/dev/null || true
  if "$py" -c 'import json, sys
s = json.load(open(sys.argv[1]))["sources"][0]["samples"]
sys.exit(0 if len(s) >= 3 and max(v for _, v in s) > 0 else 1)' "$work/lag.json" 2>/dev/null; then
    lag_seen=1
    break
  fi
  sleep 0.2
done
[ -n "$lag_seen" ] || fail "the daemon kept no lag history of page_sync: $(cat "$work/lag.json")"
log "the daemon has sampled page_sync's lag: $(head -c 300 "$work/lag.json")"

"$py" "$src_dir/tests/web/status_page.py" "http://$addr/" "$dmctl" "$work/state" "$out" ||
  fail "the browser check failed (screenshots in $out)"
kill "$wpid" 2>/dev/null || true
wait "$wpid" 2>/dev/null || true
wpid=""
kill -TERM "$pid"
wait "$pid" || fail "the daemon exited $? on SIGTERM"
pid=""
# The writer's rows are dropped: the servers are shared by the suite.
src -e "DROP DATABASE $db;"
tgt -e "DROP DATABASE $db; DROP DATABASE IF EXISTS $meta;"
log "passed; screenshots in $out"

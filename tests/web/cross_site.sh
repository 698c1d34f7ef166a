#!/usr/bin/env bash
# A web page of another origin against the daemon's HTTP API (issue 20, item 1), in headless
# Chromium against the real servers: `dmhost serve --listen 127.0.0.1:0` with no source and no task,
# a real MariaDB source the attacker's page names. cross_site.py serves the attacker's page from
# another origin (a python http.server on another 127.0.0.1 port) that tries every write route
# (no-cors text/plain POSTs, text/plain form POSTs to /control, preflighted PUT/DELETE and JSON
# POSTs), then plays DNS rebinding (a page at http://rebind.test:PORT/ mapped to 127.0.0.1: same
# origin as the daemon, foreign Host) reading every GET route. Then, over the socket (dmctl):
# no source, no task; the daemon's log names the refusals (15015, 15016, 15017).
#
#   cross_site.sh <dmhost> <dmctl> <plugin dir> <source dir>
set -euo pipefail
dmhost=$1 dmctl=$2 plugins=$3 src_dir=$4
cd "$src_dir"
tag=cross_site db=cross_site meta=cross_site_meta
work=$(mktemp -d /tmp/dmh-cross-site-XXXXXX)
t0=$SECONDS
. tests/crash/lib.sh
serve_begin
. tests/web/browser.sh
web_need_browser

src -e "DROP DATABASE IF EXISTS $db; CREATE DATABASE $db;
  CREATE TABLE $db.t (id INT PRIMARY KEY, v VARCHAR(64)) ENGINE=InnoDB; INSERT INTO $db.t VALUES (1, 'a');"
tgt -e "DROP DATABASE IF EXISTS $db; DROP DATABASE IF EXISTS $meta;"
# The attacker's files: a valid source and a valid task on it (the page sends their text).
crash_source_cfg mysql-xs
crash_task_cfg xs_task "$meta" "$db" mysql-xs >"$work/task.cfg" </dev/null

serve_listen "$dmhost" "$plugins" || fail "the daemon did not listen"
log "daemon on $addr, state dir $work/state"
"$py" "$src_dir/tests/web/cross_site.py" "$addr" "$dmctl" "$work/state" "$work/source.cfg" \
  "$work/task.cfg" "$work/serve.log" || fail "the cross-site check failed"
kill -TERM "$pid"
wait "$pid" || fail "the daemon exited $? on SIGTERM"
pid=""
src -e "DROP DATABASE $db;"
tgt -e "DROP DATABASE IF EXISTS $db; DROP DATABASE IF EXISTS $meta;"
log "passed"

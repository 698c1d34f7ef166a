# What the crash tests share (sourced, after `cd` to the source folder): the servers of
# `scripts/mariadb.sh env`, their clients, a log line, the sync checkpoint and the source's
# position, and the config files of a mode-all task. The caller sets $tag (log prefix), $t0
# ($SECONDS at its start), $work (its folder) and $cp_table (the quoted checkpoint table).
eval "$(bash scripts/mariadb.sh env)"
src() { mariadb --no-defaults --protocol=tcp -h"$DMH_SOURCE_HOST" -P"$DMH_SOURCE_PORT" -u"$DMH_SOURCE_USER" "$@"; }
tgt() { mariadb --no-defaults --protocol=tcp -h"$DMH_TARGET_HOST" -P"$DMH_TARGET_PORT" -u"$DMH_TARGET_USER" "$@"; }
log() { echo "$tag: [$((SECONDS - t0))s] $*"; }
# The first line of FILE... that tells of a duplicate key (ER_DUP_ENTRY 1062, or 1180, an error
# during COMMIT, as an XA commit of a row already there reports it), or nothing. The server's
# errors as our logs carry them ("ERROR 1062 (23000): ...", "... (1062)", "code 1062"), never a
# bare number: a fencing token or a lease may well be 1062 or 1180.
dup_key_line() {
  grep -h -m1 -E "Duplicate entry|during COMMIT|(ERROR|code) (1062|1180)\b|\((1062|1180)\)" "$@" || true
}
# the global row's position, or nothing
checkpoint() { tgt -N -B -e "SELECT CONCAT(binlog_name, ':', binlog_pos) FROM $cp_table WHERE is_global = 1" 2>/dev/null || true; }
master() { src -N -B -e "SHOW MASTER STATUS" | awk '{ print $1 ":" $2 }'; }
# DB.t1's CHECKSUM TABLE on SIDE (src or tgt), nothing when the table is not there; DB.t1 the
# same on both sides (and there)
t1_checksum() { "$1" -N -B -e "CHECKSUM TABLE \`$2\`.t1" 2>/dev/null | awk '$2 != "NULL" { print $2 }'; }
t1_same() { # db
  local a
  a=$(t1_checksum tgt "$1")
  [ -n "$a" ] && [ "$(t1_checksum src "$1")" = "$a" ]
}
# Is binlog position A (FILE:POS) at or past B? Other tests write to the same source meanwhile, so
# a position read from the source is a lower bound, never one a checkpoint must equal.
pos_at_or_past() { # A B
  [ -n "$1" ] && [ -n "$2" ] || return 1
  local a=${1%:*} b=${2%:*}
  local an=$((10#${a##*.})) bn=$((10#${b##*.}))
  [ "$an" -gt "$bn" ] || { [ "$an" -eq "$bn" ] && [ "${1##*:}" -ge "${2##*:}" ]; }
}
# The errors in a writer's stderr (FILE) other than a deadlock or a lock wait timeout (1213, 1205):
# those the source rolled back whole, as an application would see and retry, so the source never
# had the transaction and a comparison with the target is unaffected; pt-osc's triggers and row
# copy deadlock with a writer now and then (CI: `CALL w(46)` against the copy). Empty: none.
# Besides deadlocks and lock waits, an online-DDL tool's swap may drop its `_X_new` table while a
# writer's statement runs the tool's trigger on it (ERROR 1146 naming `_X_new`): the statement
# fails on the source and is not in its binlog, so it is no failure of the sync under test.
writer_failures() { # file
  [ -s "$1" ] || return 0
  grep '^ERROR' "$1" | grep -v '^ERROR 1213 \|^ERROR 1205 ' |
    grep -v "^ERROR 1146 .*\._[A-Za-z0-9_]*_new' doesn't exist" || true
}
# The workload clients (pids in wl_pids) stop at their next round once $work/stop exists.
stop_workload() {
  touch "$work/stop"
  for p in "${wl_pids[@]}"; do wait "$p" 2>/dev/null || true; done
  wl_pids=()
}
# A workload client in the background (its pid added to wl_pids): `CALL workload(N, seed)` on DB
# in a loop, the seed moving on each round, until $work/stop exists (stop_workload).
workload_client() { # db n seed
  (
    seed=$3
    while [ ! -e "$work/stop" ]; do
      src "$1" -e "CALL workload($2, $seed)" 2>/dev/null || true
      seed=$((seed + 7919))
      sleep 0.02
    done
  ) &
  wl_pids+=($!)
}
# Has process $1 stopped (SIGSTOP)? kill(2) returns before every thread of the target reached
# the stop, so this waits for /proc to say T (up to 5 s).
proc_stopped() {
  for _ in $(seq 1 50); do
    [ "$(awk '/^State:/ {print $2}' "/proc/$1/status" 2>/dev/null)" = T ] && return 0
    sleep 0.1
  done
  return 1
}
# Is process $1 running? PID 1 reaps lazily here: a zombie passes `kill -0`.
proc_alive() { [ -n "$1" ] && [ -d "/proc/$1" ] && [ "$(awk '/^State:/ {print $2}' "/proc/$1/status" 2>/dev/null)" != Z ]; }
# $work/source.cfg for source-id $1
crash_source_cfg() {
  cat >"$work/source.cfg" <<CFG
source-id = "$1";
from = { host = "$DMH_SOURCE_HOST"; port = $DMH_SOURCE_PORT; user = "$DMH_SOURCE_USER"; password = ""; };
CFG
}
# A mode-all task file on stdout: name, meta schema, database, source-id, then its own lines
# (supervisor, dump, load, sync sections) on stdin.
crash_task_cfg() { # name meta db source-id
  cat <<CFG
name = "$1";
task-mode = "all";
meta-schema = "$2";
target-database = { host = "$DMH_TARGET_HOST"; port = $DMH_TARGET_PORT; user = "$DMH_TARGET_USER"; password = ""; };
mysql-instances = ( { source-id = "$4"; block-allow-list = "b"; } );
block-allow-list = { b = { do-dbs = ["$3"]; }; };
CFG
  cat
}

# `dmhost serve --listen 127.0.0.1:0` with its state and serve.log in $work, in the background:
# sets $pid and $addr (the HOST:PORT it logged); returns 1 if it did not listen within 10 s.
serve_listen() { # dmhost plugin-dir [more flags]
  "$1" serve --state-dir "$work/state" --plugin-dir "$2" --listen 127.0.0.1:0 "${@:3}" \
    --log-level info >"$work/serve.log" 2>&1 &
  pid=$!
  addr=""
  for _ in $(seq 1 100); do
    addr=$(grep -oE 'control plane on http://127\.0\.0\.1:[0-9]+' "$work/serve.log" | sed 's|.*http://||' || true)
    [ -n "$addr" ] && return 0
    sleep 0.1
  done
  return 1
}
# With the daemon of serve_listen: `operate-source create $work/source.cfg` and
# `start-task $work/task.cfg` through dmctl, then wait up to 60 s for the task's sync unit to run
# ($work/status.json: its last query-status); fail() otherwise.
serve_start_to_sync() { # dmctl task-name
  local ctl=("$1" --state-dir "$work/state")
  "${ctl[@]}" operate-source create "$work/source.cfg" >/dev/null || fail "operate-source create"
  "${ctl[@]}" start-task "$work/task.cfg" >"$work/start.json" ||
    fail "start-task: $(cat "$work/start.json")"
  for _ in $(seq 1 600); do
    "${ctl[@]}" query-status "$2" >"$work/status.json" 2>/dev/null || true
    grep -q '"unit": *"Sync"' "$work/status.json" && grep -q '"stage": *"Running"' "$work/status.json" && return 0
    sleep 0.1
  done
  fail "the sync did not start: $(cat "$work/status.json")"
}
# `dmhost serve` of $dmhost on $work/state with the units of $plugins, its log appended to
# $work/serve.log, more flags after; sets $pid and waits (30 s) until `ctl query-status` (the
# caller's dmctl wrapper) answers, else fail().
serve_up() { # [more flags]
  "$dmhost" serve --state-dir "$work/state" --plugin-dir "$plugins" --log-level info "$@" \
    >>"$work/serve.log" 2>&1 &
  pid=$!
  wait_for 30 "dmhost serve did not answer" ctl query-status
}
# Stop a test with daemon: the message and the end of its serve.log.
serve_fail() {
  echo "$tag: FAILED: $*" >&2
  [ -f "$work/serve.log" ] && { echo "--- end of serve.log:" >&2; tail -n 30 "$work/serve.log" >&2; }
  exit 1
}
# The EXIT trap of a test with a daemon ($pid) and a writer ($wpid), either empty: both killed,
# $work removed unless KEEP is set; the exit status kept.
serve_cleanup() {
  local rc=$?
  if [ -n "${wpid:-}" ]; then kill "$wpid" 2>/dev/null || true; fi
  if [ -n "${pid:-}" ]; then kill -9 "$pid" 2>/dev/null || true; fi
  wait 2>/dev/null || true
  if [ "${KEEP:-}" ]; then echo "$tag: work folder kept: $work"; else rm -rf "$work"; fi
  exit "$rc"
}
# A test with a daemon begins: no daemon or writer yet, serve_cleanup on exit, fail = serve_fail.
serve_begin() {
  pid="" wpid=""
  trap serve_cleanup EXIT
  fail() { serve_fail "$@"; }
}
# Wait up to `seconds` for `cmd...` to succeed (polled every 0.1 s), else fail with `message`.
wait_for() { # seconds message cmd...
  local s=$1 m=$2
  shift 2
  for _ in $(seq 1 $((s * 10))); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
  fail "$m"
}
# DM's start time between rows (start_time.sh, dm_start.sh): on the source DB.t (id, v) gets rows
# 1-3, the binlog is rotated, T is set to the source's clock (its time zone, DM's form
# "YYYY-MM-DD HH:MM:SS") once past their second, rows 4-6 follow; on the target DB.t is empty and
# META is gone.
rows_around_time() { # db meta
  local before
  src -e "DROP DATABASE IF EXISTS \`$1\`; CREATE DATABASE \`$1\`;
          CREATE TABLE \`$1\`.t (id INT PRIMARY KEY, v VARCHAR(20));
          INSERT INTO \`$1\`.t VALUES (1, 'before'), (2, 'before'), (3, 'before'); FLUSH BINARY LOGS;"
  before=$(src -N -B -e "SELECT UNIX_TIMESTAMP()")
  for _ in $(seq 1 100); do
    [ "$(src -N -B -e "SELECT UNIX_TIMESTAMP()")" -gt "$before" ] && break
    sleep 0.1
  done
  T=$(src -N -B -e "SELECT DATE_FORMAT(NOW(), '%Y-%m-%d %H:%i:%s')")
  [ "$(src -N -B -e "SELECT UNIX_TIMESTAMP('$T')")" -gt "$before" ] || fail "the source's clock did not move on"
  src "$1" -e "INSERT INTO t VALUES (4, 'after'); INSERT INTO t VALUES (5, 'after'), (6, 'after');"
  tgt -e "DROP DATABASE IF EXISTS \`$1\`; DROP DATABASE IF EXISTS \`$2\`; CREATE DATABASE \`$1\`;
          CREATE TABLE \`$1\`.t (id INT PRIMARY KEY, v VARCHAR(20));"
}

#!/usr/bin/env bash
# kill -9 of `dmhost run` at random moments of a mode-all task while a write workload runs on the
# source (tests/sql/sync-workload.sql: inserts, updates and deletes, also of primary and unique keys,
# in multi-statement transactions, some rolled back), ten times; once, the TARGET server restarted
# while sync applies (auto-resume on for that run: the task must come back to Running and go on).
# Once the sync has started, a third client runs XA transactions on a table of their own: each
# prepared on one connection and committed (or, one in three, rolled back) from another after the
# next one is prepared, so kills land between prepares and commits (docs/sync.md, XA transactions).
# Then the workload stops, a last run catches up with the source's binlog (the sync checkpoint's
# global row reaches SHOW MASTER STATUS) and is stopped with SIGTERM: the target must equal the
# source table by table, and no run may log a duplicate key or an error (the run that loses its
# target may log only connection errors).
#
#   kill9_sync.sh <dmhost> <plugin dir> <source dir> [kills]
#
# RELAY=1: the source file turns the relay on (enable-relay, relay-dir), so sync reads the relay log.
# KEEP=1 keeps the work folder (logs, configs) under /tmp. CASE_CHANGES=0 leaves out the workload's
# key updates that change only the case of t_comp's VARCHAR key (equal under its collation).
# ROWS (20000) sizes the tables, BATCH (200) and BATCH_MS (50) the sync's batches, WL_TXNS (10) and
# WL_SLEEP (0.02) the workload's calls, XA_SLEEP (0.2) the XA client's. Servers from
# `scripts/mariadb.sh env`.
set -euo pipefail
dmhost=$1 plugins=$2 src_dir=$3 kills=${4:-10}
relay=${RELAY:-0}
cd "$src_dir"
if [ "$relay" = 1 ]; then name=kill9sync_relay; else name=kill9sync; fi
db=crash_$name meta=crash_${name}_meta
cp_table="\`$meta\`.\`${name}_syncer_checkpoint\`"
work=$(mktemp -d /tmp/dmh-$name-XXXXXX)
t0=$SECONDS
if [ "$relay" = 1 ]; then tag="kill9_sync (relay)"; else tag=kill9_sync; fi
. tests/crash/lib.sh
pid="" wl_pids=() lock_pid="" started=0
xa_prefix="kx_${name}_$$_"
# Prepared XA transactions whose xid matches the awk regular expression $1, rolled back: a prepared
# XA transaction outlives its connection and a server restart and holds its locks for good (the
# DROP DATABASE below then fails after innodb_lock_wait_timeout, 1205).
xa_rollback() {
  src -N -B -e "XA RECOVER" 2>/dev/null | awk -v re="$1" '$3 == 0 && $4 ~ re { print $4 }' |
    while read -r x; do src -e "XA ROLLBACK '$x'" || true; done
}
# this run's, left by a failure
xa_rollback_ours() { xa_rollback "^$xa_prefix"; }
cleanup() {
  stop_workload
  xa_rollback_ours
  [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  # the target must be up for whatever runs next, even when we failed while it was down
  bash scripts/mariadb.sh start >/dev/null 2>&1 || true
  if [ "${KEEP:-}" ]; then echo "$tag: work folder kept: $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
fail() {
  echo "$tag: FAILED: $*" >&2
  [ -n "${cur_log:-}" ] && [ -f "$cur_log" ] && { echo "--- end of $cur_log:" >&2; tail -n 25 "$cur_log" >&2; }
  exit 1
}
# seconds, random in [lo, hi) with two decimals
rnd() { awk -v r="$RANDOM" -v lo="$1" -v hi="$2" 'BEGIN { printf "%.2f", lo + (r % 1000) / 1000 * (hi - lo) }'; }
# waits up to $2 s for the regular expression $3 in file $1
wait_log() {
  local i
  for i in $(seq 1 $(($2 * 20))); do
    grep -qE "$3" "$1" 2>/dev/null && return 0
    [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null && return 1
    sleep 0.05
  done
  return 1
}
alive() { proc_alive "$pid"; }
# no duplicate key, no error; $2 = 1 allows connection errors (the run losing its target)
check_log() {
  [ -n "$(dup_key_line "$1")" ] && fail "$(basename "$1") hit a duplicate key"
  local errs
  # units log their failures at WARN with a code; the host's own are ERROR lines
  errs=$(grep -E "\[ERROR\]|\[code [0-9]+\]|dmhost: error|\"RawCause\"" "$1" || true)
  if [ "${2:-0}" = 1 ]; then
    errs=$(grep -vE "connect|connection|server has gone away|Lost connection|shutdown|2013|2006|2003|1053|DB_CONNECT" <<<"$errs" || true)
  fi
  [ -z "$errs" ] || fail "$(basename "$1") logged an error: $(head -3 <<<"$errs")"
}

# ---- the source: tables, fill, the workload's procedures ----
# An earlier run of this test killed before its cleanup (a CI cut short, servers kept) left its
# prepared XA transactions in $db: theirs (kx_NAME_PID_, or kx<pid>_ before the name was in it).
xa_rollback "^kx_${name}_[0-9]+_|^kx[0-9]+_"
sed "s/sync_wl/$db/g" tests/sql/sync-workload.sql | src
src "$db" -e "CALL sync_fill(${ROWS:-20000}); REPLACE INTO wl_meta VALUES ('case', ${CASE_CHANGES:-1})"
src "$db" -e "CREATE TABLE t_xa (id INT PRIMARY KEY, n INT, v INT)"
tgt -e "DROP DATABASE IF EXISTS \`$db\`; DROP DATABASE IF EXISTS \`$meta\`"

crash_source_cfg crash-sync-src
[ "$relay" = 1 ] && printf 'enable-relay = true;\nrelay-dir = "%s";\n' "$work/relay" >>"$work/source.cfg"
task_cfg() { # auto-resume true|false
  crash_task_cfg "$name" "$meta" "$db" crash-sync-src <<CFG
supervisor = { auto-resume = { enable = $1; backoff-initial = 0.2; backoff-max = 1; }; };
dump = { threads = 2; chunk-rows = 5000; };
load = { pool-size = 2; on-duplicate = "error"; };
sync = { worker-count = 4; batch = ${BATCH:-200}; batch-ms = ${BATCH_MS:-50}; status-interval = 200; };
CFG
}
task_cfg false >"$work/task.cfg"
task_cfg true >"$work/task-ar.cfg"
start_run() { # task file, log file, extra args...
  local t=$1 l=$2
  shift 2
  "$dmhost" run --source "$work/source.cfg" --task "$t" --work-dir "$work/w" --plugin-dir "$plugins" \
    "$@" >"$l" 2>&1 &
  pid=$!
  started=$(date +%s.%N)
  cur_log=$l
}

# ---- the workload: two clients calling the procedure in a loop until $work/stop exists ----
for c in 1 2; do
  (
    seed=$((c * 1000003 + RANDOM)) n=0
    while [ ! -e "$work/stop" ]; do
      # a deadlock between the two clients can escape the procedure's handler: counted, not fatal
      if ! src "$db" -e "CALL workload(${WL_TXNS:-10}, $seed)" 2>"$work/workload-$c.last"; then
        if grep -qE "ERROR (1213|1205)" "$work/workload-$c.last"; then
          echo "$n" >>"$work/workload-$c.deadlocks"
        else
          cat "$work/workload-$c.last" >>"$work/workload-$c.err"
        fi
      fi
      seed=$((seed + 7919)) n=$((n + 1))
      sleep "${WL_SLEEP:-0.02}"
    done
    echo "$n" >"$work/workload-$c.calls"
  ) &
  wl_pids+=($!)
done
log "source filled (${ROWS:-20000} rows in t_pk), workload running; work folder $work"

# The XA client: started once the sync has a checkpoint (a transaction prepared before the dump's
# position and committed after it cannot be synced: a documented limit). XA n inserts 200 rows and
# changes rows of XA n-2 (ended by then); XA n-1 ends after XA n is prepared.
xa_client() {
  local n=0 prev="" verb old
  while [ ! -e "$work/stop" ]; do
    n=$((n + 1)) old=$(((n - 2) * 1000))
    # rows of XA n-2 by their keys only: a range would also lock the next row, XA n-1's (prepared)
    src "$db" -e "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED; XA START '$xa_prefix$n';
      INSERT INTO t_xa SELECT $n * 1000 + seq, $n, seq FROM seq_1_to_200;
      UPDATE t_xa SET v = v + $n WHERE id IN ($(seq -s, $((old + 1)) $((old + 50))));
      DELETE FROM t_xa WHERE id IN ($(seq -s, $((old + 190)) $((old + 200))));
      XA END '$xa_prefix$n'; XA PREPARE '$xa_prefix$n'" 2>>"$work/workload-xa.err" || break
    if [ -n "$prev" ]; then
      if [ $((RANDOM % 3)) -eq 0 ]; then verb=ROLLBACK; else verb=COMMIT; fi
      src -e "XA $verb '$prev'" 2>>"$work/workload-xa.err" || break
    fi
    prev=$xa_prefix$n
    sleep "${XA_SLEEP:-0.2}"
  done
  [ -z "$prev" ] || src -e "XA COMMIT '$prev'" 2>>"$work/workload-xa.err"
  echo "$n" >"$work/workload-xa.calls"
}
xa_started=0

# ---- kills ----
mid=$(((kills + 1) / 2)) in_sync=0 units=""
for i in $(seq 1 "$kills"); do
  if [ "$xa_started" = 0 ] && [ -n "$(checkpoint)" ]; then
    xa_client &
    wl_pids+=($!)
    xa_started=$i
    log "run $i: the sync has a checkpoint; XA client started"
  fi
  if [ "$i" -eq "$mid" ]; then
    # the target restarted while sync applies; auto-resume on for this run
    start_run "$work/task-ar.cfg" "$work/run-$i.log"
    wait_log "$work/run-$i.log" 60 "sync: reading" || fail "run $i: sync did not start"
    sleep "$(rnd 0.5 1.5)"
    before=$(checkpoint)
    log "run $i: restarting the target while sync applies (checkpoint $before)"
    bash scripts/mariadb.sh restart-target >/dev/null
    # paused by the lost connection, auto-resumed: back to Running, sync reads again, moves on
    wait_log "$work/run-$i.log" 30 "auto-resuming after a resumable error" ||
      fail "run $i: no auto-resume after the target restart"
    for _ in $(seq 1 300); do
      awk '/auto-resuming after a resumable error/ { r = 1 } r && /sync: reading/ { f = 1 }
        END { exit !f }' "$work/run-$i.log" && break
      alive || fail "run $i: dmhost exited after the target restart"
      sleep 0.1
    done
    after=$before
    for _ in $(seq 1 200); do
      after=$(checkpoint)
      [ -n "$after" ] && [ "$after" != "$before" ] && break
      alive || fail "run $i: dmhost exited after the target restart"
      sleep 0.1
    done
    [ "$after" != "$before" ] || fail "run $i: the checkpoint did not move after the target restart"
    # the progress line (every 5 s) after the resume shows the sync unit Running
    for _ in $(seq 1 120); do
      awk '/auto-resuming after a resumable error/ { r = 1 } r && /\[progress\]/ { l = $0 }
        END { exit !(l ~ /Running/) }' "$work/run-$i.log" && break
      alive || fail "run $i: dmhost exited after the target restart"
      sleep 0.1
    done
    awk '/auto-resuming after a resumable error/ { r = 1 } r && /\[progress\]/ { l = $0 }
      END { exit !(l ~ /Running/) }' "$work/run-$i.log" ||
      fail "run $i: no progress line shows the task Running after the resume"
    log "run $i: task back to Running, checkpoint $before -> $after"
    sleep "$(rnd 0.5 1.5)"
  elif [ "$i" -eq 3 ] || [ "$i" -eq $((kills - 2)) ]; then
    # a kill while a batch is half committed: a target session locks a range of t_pk, so the
    # worker whose part touches it waits while the others commit theirs; the lock is held on into
    # the next run (whose checkpoint read must wait for that worker's transaction)
    start_run "$work/task.cfg" "$work/run-$i.log" --quiet
    wait_log "$work/run-$i.log" 30 "sync: reading" || fail "run $i: sync did not start"
    sleep "$(rnd 0.3 1)"
    x=$((RANDOM % (2 * ${ROWS:-20000}) + 1))
    tgt "$db" -e "BEGIN; SELECT COUNT(*) FROM t_pk WHERE id BETWEEN $x AND $x + 1500 FOR UPDATE;
      DO SLEEP(4); ROLLBACK" >"$work/lock-$i.out" 2>&1 &
    lock_pid=$!
    sleep "$(rnd 1 2)"
    waiting=$(tgt -N -B -e "SELECT COUNT(*) FROM information_schema.INNODB_TRX
      WHERE trx_state = 'LOCK WAIT' AND trx_query LIKE '%$db%'")
    log "run $i: ids $x..$((x + 1500)) of t_pk locked on the target, $waiting worker(s) waiting"
  else
    start_run "$work/task.cfg" "$work/run-$i.log" --quiet
    wait_log "$work/run-$i.log" 30 "starting at the" || fail "run $i did not start"
    sleep "$(rnd 0.5 3)"
    if [ -n "$lock_pid" ]; then
      # InnoDB may pick the locking session as a deadlock's victim (its range lock against a
      # worker's row locks): then it held nothing, which the run survives like any other kill
      if ! wait "$lock_pid"; then
        grep -q "ERROR 1213" "$work"/lock-*.out ||
          fail "the locking session failed: $(cat "$work"/lock-*.out)"
        log "run $i: the locking session was a deadlock's victim (1213): it held no lock"
      fi
      rm -f "$work"/lock-*.out
      lock_pid=""
      # how long the checkpoint read waited for the killed process's transactions
      read_at=$(date -d "$(grep -m1 "sync: reading" "$work/run-$i.log" | cut -c2-24)" +%s.%N)
      log "run $i: sync read its checkpoint $(awk -v a="$started" -v b="$read_at" \
        'BEGIN { printf "%.2f", b - a }') s after the start"
    fi
  fi
  alive || { wait "$pid" || true; fail "run $i exited before its kill"; }
  kill -9 "$pid"
  wait "$pid" 2>/dev/null || true
  pid=""
  if [ -n "$lock_pid" ] && [ "$i" -eq 3 ]; then
    # the killed process's waiting connections live on in the server; here they are killed (their
    # parts roll back: the next run finds the worker rows at two positions and rebuilds the batch);
    # at the second such kill they are left to commit once the lock goes, while the next run's
    # checkpoint read waits for them
    zombies=$(tgt -N -B -e "SELECT trx_mysql_thread_id FROM information_schema.INNODB_TRX
      WHERE trx_state = 'LOCK WAIT' AND trx_query LIKE '%$db%'")
    for z in $zombies; do tgt -e "KILL $z" 2>/dev/null || true; done
    log "run $i: killed $(wc -w <<<"$zombies") waiting connection(s) of the killed dmhost"
  fi
  # which unit ran when the kill landed: the supervisor's last word on it
  unit=$(grep -oE "starting at the [a-z]+ unit|unit finished; next: [a-z]+" "$work/run-$i.log" |
    tail -1 | awk '{ print $1 == "starting" ? $4 : $NF }')
  units+="${unit:-?} "
  [ "$unit" = sync ] && in_sync=$((in_sync + 1))
  check_log "$work/run-$i.log" "$([ "$i" -eq "$mid" ] && echo 1 || echo 0)"
  log "kill $i during ${unit:-?} (checkpoint $(checkpoint), source $(master))"
done
[ "$in_sync" -ge $((kills * 7 / 10)) ] ||
  fail "only $in_sync of $kills kills landed during sync ($units)"

# ---- the last run: goes on under the workload, then catches up once the workload stops ----
start_run "$work/task.cfg" "$work/final.log" --quiet
wait_log "$work/final.log" 60 "sync: reading" || fail "the last run did not reach sync"
if [ "$relay" = 1 ]; then
  grep -q "sync: reading the relay log" "$work/final.log" || fail "sync does not read the relay log"
fi
sleep 3
stop_workload
calls=$(cat "$work"/workload-[12].calls 2>/dev/null | awk '{ s += $1 } END { print s }')
[ -s "$work/workload-1.err" ] || [ -s "$work/workload-2.err" ] || [ -s "$work/workload-xa.err" ] &&
  fail "the workload failed: $(cat "$work"/workload-*.err | head -3)"
xa_calls=$(cat "$work/workload-xa.calls" 2>/dev/null || echo 0)
[ "$xa_calls" -ge 5 ] || fail "the XA client ran $xa_calls XA transactions (started at run $xa_started)"
want=$(master)
log "workload stopped after $calls calls and $xa_calls XA transactions (from run $xa_started);" \
  "source at $want, waiting for the checkpoint"
got=""
for _ in $(seq 1 1200); do
  got=$(checkpoint)
  [ "$got" = "$want" ] && break
  alive || fail "the last run exited before catching up"
  sleep 0.1
done
[ "$got" = "$want" ] || fail "the checkpoint stands at $got, the source at $want after 120 s"
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
pid=""
[ "$rc" -eq 0 ] || fail "the last run exited $rc after SIGTERM"
check_log "$work/final.log"
# an XA commit with nothing stored would mean a prepare the sync passed without storing it
grep -l "nothing of it is stored" "$work"/run-*.log "$work/final.log" &&
  fail "an XA commit found nothing stored for its prepare"
log "caught up at $got; comparing"
bash scripts/checksum.sh "$db" || fail "target differs from source"
# restarts that found a batch half committed (some workers' rows ahead): informative, it is random
rebuilt=$(cat "$work"/run-*.log "$work/final.log" | grep -c "rebuilding that batch" || true)
log "$kills kills ($in_sync during sync: $units), one target restart, $rebuilt restart(s) rebuilt a" \
  "half-committed batch; target equals source"
tgt -e "DROP DATABASE IF EXISTS \`$db\`; DROP DATABASE IF EXISTS \`$meta\`"
src -e "DROP DATABASE IF EXISTS \`$db\`"

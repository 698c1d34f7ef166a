# What the fencing tests (fence_sync.sh, fence_load.sh) share, sourced after lib.sh: workers as
# `dmhost run --fencing-token` processes, a target session holding locks, lock waits, the end.
# The caller sets $dmhost, $plugins and has $work/source.cfg and $work/task.cfg.
pids=() lock_id=""
# start_run WORKER TOKEN: its own work folder (another machine) and log $work/WORKER.log; $run_pid
start_run() {
  "$dmhost" run --source "$work/source.cfg" --task "$work/task.cfg" --work-dir "$work/w-$1" \
    --plugin-dir "$plugins" --quiet --fencing-token "$2" >"$work/$1.log" 2>&1 &
  run_pid=$!
  pids+=("$run_pid")
}
# lock_session DB SQL [tgt|src]: a session of the target (or of the source) in the background
# runs SQL (which holds its locks, e.g. with a long SLEEP) until end_lock_session kills it; one per
# server at a time; $lock_id is the connection of the last one started.
declare -A lock_pids=() lock_ids=()
lock_session() {
  local cli=${3:-tgt}
  "$cli" -N -B -n "$1" -e "SELECT CONNECTION_ID(); $2" >"$work/lock-$cli.out" 2>&1 &
  lock_pids[$cli]=$!
  for _ in $(seq 1 50); do [ -s "$work/lock-$cli.out" ] && break; sleep 0.1; done
  lock_id=$(head -1 "$work/lock-$cli.out")
  [ -n "$lock_id" ] || fail "the lock session on $cli did not start"
  lock_ids[$cli]=$lock_id
}
# end_lock_session [tgt|src]: ends that server's lock session (all of them without an argument)
end_lock_session() {
  local cli
  for cli in ${1:-${!lock_pids[@]}}; do
    [ -n "${lock_pids[$cli]:-}" ] || continue
    [ -n "${lock_ids[$cli]:-}" ] && "$cli" -e "KILL ${lock_ids[$cli]}" 2>/dev/null
    kill -9 "${lock_pids[$cli]}" 2>/dev/null || true
    wait "${lock_pids[$cli]}" 2>/dev/null || true
    unset "lock_pids[$cli]" "lock_ids[$cli]"
  done
  return 0
}
# wait_lock_wait CONDITION PID: until a transaction that meets CONDITION (SQL on
# information_schema.INNODB_TRX, e.g. "trx_query LIKE '%t_pk%'") waits for a lock (up to 15 s,
# while PID runs); 1 if none did. $lock_waits: how many wait.
wait_lock_wait() {
  for _ in $(seq 1 150); do
    lock_waits=$(tgt -N -B -e "SELECT COUNT(*) FROM information_schema.INNODB_TRX
      WHERE trx_state = 'LOCK WAIT' AND ($1)")
    [ "$lock_waits" -gt 0 ] && return 0
    proc_alive "$2" || return 1
    sleep 0.1
  done
  return 1
}
# wait_exit PID SECONDS: returns the exit status of the run, 255 while it still runs
wait_exit() {
  local rc=0
  for _ in $(seq 1 $(($2 * 10))); do
    proc_alive "$1" || break
    sleep 0.1
  done
  proc_alive "$1" && return 255
  wait "$1" || rc=$?
  return "$rc"
}
no_dup() { [ -z "$(dup_key_line "$@")" ] || fail "a duplicate key in $*: $(dup_key_line "$@")"; }
fail() {
  echo "$tag: FAILED: $*" >&2
  echo "--- the target's sessions and transactions:" >&2
  tgt -e "SELECT ID, COMMAND, TIME, STATE, LEFT(INFO, 120) FROM information_schema.PROCESSLIST
    WHERE COMMAND <> 'Sleep'; SELECT trx_mysql_thread_id, trx_state, LEFT(trx_query, 120)
    FROM information_schema.INNODB_TRX" >&2 2>&1 || true
  for l in "$work"/*.log; do
    [ -f "$l" ] && { echo "--- end of $l:" >&2; tail -n 15 "$l" >&2; }
  done
  exit 1
}
# the end of a test: thaws and kills what still runs, ends the lock session, removes $work
fence_cleanup() {
  for p in "${pids[@]}"; do
    kill -CONT "$p" 2>/dev/null || true
    kill -9 "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
  done
  end_lock_session
  if [ "${KEEP:-}" ]; then echo "$tag: work folder kept: $work"; else rm -rf "$work"; fi
}

#!/usr/bin/env bash
# GET /metrics of `dmhost serve --listen` during a real mode-all task with the relay on, against
# the real servers (issue 14): the dump and load publish their finished rows and progress, then,
# while a writer inserts on the source with binlog timestamps 100 s in the past (SET timestamp),
# scrapes show the sync's finished rows and transactions growing, its applied position and the
# relay's moving on, and a replication lag of 100 s or more (the writer outpaces the sync); once
# the sync has caught up, the lag is 0, and DM's histograms of the lag and of the transactions'
# time on the target have counted, and so has the interval between moves of the global checkpoint
# row (DM's dm_syncer_flush_checkpoints_time_interval). Every scrape passes `promtool check
# metrics` (tests/promtool_check.h's rule: only the lint findings about DM's own counter names are
# accepted); a missing promtool fails the test. Then stop-task: the task's series are gone.
#
#   metrics_sync.sh <dmhost> <dmctl> <plugin dir> <source dir>
set -euo pipefail
dmhost=$1 dmctl=$2 plugins=$3 src_dir=$4
cd "$src_dir"
tag=metrics_sync name=metrics_sync db=metrics_sync meta=metrics_sync_meta
work=$(mktemp -d /tmp/dmh-metrics-sync-XXXXXX)
t0=$SECONDS
. tests/crash/lib.sh
serve_begin
command -v promtool >/dev/null ||
  fail "promtool is not installed (Debian package prometheus: scripts/deps.sh installs it)"

# ---- promtool: clean, or lint findings about DM's own names only ----
# DM's names the linter finds fault with: the one list, tests/promtool_check.h's
dm_names="^($(sed -n '/promtool_dm_names\[\] = {/,/^};/p' tests/promtool_check.h |
  grep -o '"[a-z_]*"' | tr -d '"' | paste -sd '|')) "
[ "$(grep -o '|' <<<"$dm_names" | wc -l)" -ge 10 ] ||
  fail "read no list of DM's names from tests/promtool_check.h: $dm_names"
check_promtool() { # file
  local out rc=0
  out=$(promtool check metrics <"$1" 2>&1) || rc=$?
  [ "$rc" = 0 ] && return 0
  if [ "$rc" = 3 ] && ! grep -vqE "$dm_names" <<<"$out"; then return 0; fi
  fail "promtool check metrics exited $rc on $1: $out"
}
# value of the sample $2 (name{labels} exactly) in file $1, or empty
value() { awk -v s="$2" 'index($0, s " ") == 1 { print $NF; exit }' "$1"; }
n=0
scrape() { # -> $work/scrape.N, its name in $last
  n=$((n + 1))
  last="$work/scrape.$n"
  curl -sS --noproxy '*' -o "$last" -w '%{http_code} %{content_type}\n' "http://$addr/metrics" \
    >"$last.status" || fail "GET /metrics failed"
  grep -q '^200 text/plain; version=0.0.4' "$last.status" || fail "GET /metrics: $(cat "$last.status")"
  check_promtool "$last"
}

# ---- source data and configs ----
src -e "DROP DATABASE IF EXISTS $db; CREATE DATABASE $db;
  CREATE TABLE $db.t (id INT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(64)) ENGINE=InnoDB;
  INSERT INTO $db.t (v) SELECT CONCAT('row', seq) FROM $db.seq_1_to_2000;
  ANALYZE TABLE $db.t;"
tgt -e "DROP DATABASE IF EXISTS $db; DROP DATABASE IF EXISTS $meta;"
crash_source_cfg mysql-m1
printf 'enable-relay = true;\nrelay-dir = "%s";\n' "$work/relay" >>"$work/source.cfg"
crash_task_cfg "$name" "$meta" "$db" mysql-m1 >"$work/task.cfg" <<'CFG'
sync = { worker-count = 2; batch-ms = 20; };
CFG
# the daemon's worker name, DM's `worker` label the host adds after source_id
worker="dmhost@$(hostname)"
task="task=\"metrics_sync\",source_id=\"mysql-m1\",worker=\"$worker\""

# ---- the daemon ----
serve_listen "$dmhost" "$plugins" || fail "the daemon did not listen"
ctl() { "$dmctl" --state-dir "$work/state" "$@"; }
serve_start_to_sync "$dmctl" "$name"
log "task running its sync on $addr"

# ---- dump and load: done, their counters final ----
scrape
[ "$(value "$last" "dumpling_dump_finished_rows{$task}")" = 2000 ] ||
  fail "dumpling_dump_finished_rows is not 2000: $(grep dumpling "$last")"
# the schema's estimate (analysed: InnoDB's TABLE_ROWS is near 2000, never 0), DM's board's divisor
est=$(value "$last" "dumpling_dump_estimate_total_rows{$task}")
awk -v e="${est:-0}" 'BEGIN { exit !(e > 0) }' ||
  fail "dumpling_dump_estimate_total_rows is not above 0: $(grep dumpling "$last")"
[ "$(value "$last" "dm_loader_progress{$task}")" = 100 ] ||
  fail "dm_loader_progress is not 100: $(grep loader "$last")"
[ "$(value "$last" "dmhost_load_finished_rows_total{$task}")" = 2000 ] ||
  fail "dmhost_load_finished_rows_total is not 2000: $(grep load_finished "$last")"
[ "$(value "$last" "dm_worker_task_state{$task}")" = 2 ] || fail "dm_worker_task_state is not 2 (Running)"

# ---- the writer: binlog timestamps 100 s in the past, faster than the sync applies ----
{
  for i in $(seq 1 1000); do
    echo "SET timestamp = DEFAULT; SET timestamp = UNIX_TIMESTAMP() - 100;"
    echo "INSERT INTO $db.t (v) SELECT CONCAT('w$i-', seq) FROM $db.seq_1_to_500;"
  done
} >"$work/writes.sql"
src <"$work/writes.sql" &
wpid=$!

rows=() txns=() pos=() lag=() rpos=()
for i in $(seq 1 8); do
  sleep 0.25
  scrape
  rows+=("$(value "$last" "dmhost_sync_finished_rows_total{$task}")")
  txns+=("$(value "$last" "dm_syncer_finished_transaction_total{$task}")")
  lag+=("$(value "$last" "dm_syncer_replication_lag_gauge{$task}")")
  f=$(value "$last" "dm_syncer_binlog_file{$task,node=\"syncer\"}")
  p=$(value "$last" "dm_syncer_binlog_pos{$task,node=\"syncer\"}")
  pos+=("$(awk -v f="${f:-0}" -v p="${p:-0}" 'BEGIN { printf "%.0f", f * 4294967296 + p }')")
  f=$(value "$last" "dm_relay_binlog_file{task=\"\",source_id=\"mysql-m1\",worker=\"$worker\",node=\"relay\"}")
  p=$(value "$last" "dm_relay_binlog_pos{task=\"\",source_id=\"mysql-m1\",worker=\"$worker\",node=\"relay\"}")
  rpos+=("$(awk -v f="${f:-0}" -v p="${p:-0}" 'BEGIN { printf "%.0f", f * 4294967296 + p }')")
done
log "rows ${rows[*]} | txns ${txns[*]} | lag ${lag[*]} | pos ${pos[*]} | relay ${rpos[*]}"
grow() { # name values...: non-decreasing, and the last above the first
  local what=$1 prev="" first=""
  shift
  for v in "$@"; do
    [ -n "$v" ] || fail "$what missing from a scrape"
    [ -z "$first" ] && first=$v
    [ -z "$prev" ] || awk -v a="$prev" -v b="$v" 'BEGIN { exit !(b >= a) }' || fail "$what went down: $*"
    prev=$v
  done
  awk -v a="$first" -v b="$prev" 'BEGIN { exit !(b > a) }' || fail "$what did not grow: $*"
}
grow "finished rows" "${rows[@]}"
grow "finished transactions" "${txns[@]}"
grow "the sync's binlog position" "${pos[@]}"
grow "the relay's binlog position" "${rpos[@]}"
max_lag=$(printf '%s\n' "${lag[@]}" | sort -n | tail -1)
awk -v l="$max_lag" 'BEGIN { exit !(l >= 95 && l <= 200) }' ||
  fail "no scrape showed the writer's 100 s lag: ${lag[*]}"

wait "$wpid" || fail "the writer failed"
wpid=""
caught=""
for _ in $(seq 1 100); do
  scrape
  [ "$(value "$last" "dm_syncer_replication_lag_gauge{$task}")" = 0 ] && { caught=1; break; }
  sleep 0.2
done
[ -n "$caught" ] || fail "the lag did not come back to 0 after the writes: $(grep lag_gauge "$last")"
final_rows=$(value "$last" "dmhost_sync_finished_rows_total{$task}")
[ "$final_rows" = 500000 ] || fail "finished rows $final_rows, not the 500000 written"
# DM's histograms of the sync: each transaction on the target timed, each lag observed
for h in dm_syncer_txn_duration_time dm_syncer_replication_lag; do
  c=$(value "$last" "${h}_count{$task}")
  awk -v c="${c:-0}" 'BEGIN { exit !(c > 0) }' || fail "$h counted nothing: $(grep "^${h}_count" "$last")"
  [ "$(value "$last" "${h}_bucket{$task,le=\"+Inf\"}")" = "$c" ] || fail "$h: +Inf bucket is not its count"
done

# DM's dm_syncer_flush_checkpoints_time_interval: one observation per move of the global
# checkpoint row after the first of the run (each batch's commit moves it here; DM's every 30 s,
# hence buckets from 1 ms below DM's 1..1001 s). The intervals follow each other, so together
# they fit in the time this test ran; the writer outpaces the sync, so most are under a second.
h=dm_syncer_flush_checkpoints_time_interval
cp_count=$(value "$last" "${h}_count{$task}")
cp_sum=$(value "$last" "${h}_sum{$task}")
awk -v c="${cp_count:-0}" 'BEGIN { exit !(c > 0) }' || fail "$h counted no move: $(grep "^$h" "$last")"
[ "$(value "$last" "${h}_bucket{$task,le=\"+Inf\"}")" = "$cp_count" ] || fail "$h: +Inf bucket is not its count"
awk -v s="$cp_sum" -v t=$((SECONDS - t0 + 1)) 'BEGIN { exit !(s > 0 && s <= t) }' ||
  fail "$h: intervals of $cp_sum s in all, not within the test's $((SECONDS - t0)) s"
# the buckets: cumulative counts by upper bound; the range of the moves is between the first
# bucket that holds any and the first that holds all
read -r lo hi below1 < <(grep "^${h}_bucket{$task,le=" "$last" |
  sed -E 's/.*le="([^"]*)"} (.*)/\1 \2/' | awk -v c="$cp_count" '
    $2 > 0 && lo == "" { lo = prev == "" ? 0 : prev }
    $2 == c && hi == "" { hi = $1 }
    $1 == "1" { b1 = $2 }
    { prev = $1 }
    END { print lo, hi, b1 }')
[ -n "$hi" ] && [ -n "$below1" ] || fail "$h: no buckets read: $(grep "^${h}_bucket" "$last" | head -3)"
awk -v b="$below1" -v c="$cp_count" 'BEGIN { exit !(b * 2 >= c) }' ||
  fail "$h: $below1 of $cp_count moves under 1 s: $(grep "^${h}_bucket" "$last" | tr '\n' ' ')"
log "checkpoint: $cp_count moves of the global row after the first, $(printf %.2f "$cp_sum") s in all, each in (${lo} s, ${hi} s]; $below1 under 1 s"

ctl stop-task "$name" >/dev/null || fail "stop-task"
scrape
! grep -q "$task" "$last" || fail "the task's series are still there after stop-task: $(grep "$task" "$last" | head -3)"
kill -TERM "$pid"
wait "$pid" || fail "the daemon exited $? on SIGTERM"
pid=""
log "passed ($n scrapes, every one through promtool)"

#!/usr/bin/env bash
# `dmhost run` coordinates its shard DDL locks too (issue 22, docs/shard.md "What is persisted"):
# one source, 2 schemas x 4 tables routed into one target table, writers on every shard, a task
# with shard-mode = "pessimistic", the process's locks in <work-dir>/tasks/<task>/shard.json.
#  1. the sync reports its 8 tables to the coordinator: shard.json holds them;
#  2. ADD COLUMN on 4 shards, then `dmhost run` killed (-9) and started again; ADD COLUMN on 3
#     more: no column on the target, no info put (the source is not ready);
#  3. the last shard: the column is on the target, the ALTER ran once, the lock is gone from
#     shard.json; once the writers stop the target equals the union of the shards.
#
#   run_lock.sh <dmhost> <dmctl> <plugin dir> <source dir>
set -euo pipefail
dmhost=$1 dmctl=$2 plugins=$3 src_dir=$4
cd "$src_dir"
tag=shard_run_lock db_prefix=shr task=shr meta=shr_meta n_src=1
work=$(mktemp -d /tmp/dmh-shardr-XXXXXX)
t0=$SECONDS
pid=""
. tests/shard/lib.sh
trap shard_cleanup EXIT
fail() { shard_fail "$@"; }
sj="$work/run/tasks/$task/shard.json"
run() {
  "$dmhost" run --source "$work/s1.cfg" --task "$work/task.cfg" --work-dir "$work/run" \
    --plugin-dir "$plugins" --log-level info --quiet >>"$work/serve.log" 2>&1 &
  pid=$!
}
sj_has() { [ -f "$sj" ] && jq -e "$1" "$sj" >/dev/null 2>&1; }

shard_setup "$task" "$meta"
run
wait_for 60 "the sync did not report its 8 tables to the coordinator" \
  sj_has '(.sources | length) == 1 and (.sources[0].tables | length) == 8 and .sources[0].source == "s1"'
writer src 0
log "running under dmhost run, 8 tables reported in $sj"

col="note VARCHAR(32) NOT NULL DEFAULT 'n'"
order=($(printf '%s\n' $(seq 0 7) | shuf))
for k in "${order[@]:0:4}"; do alter "$k" "$col"; done
sleep 1
kill -9 "$pid"
wait "$pid" 2>/dev/null || true
pid=""
target_has note && fail "the target has the column with 4 of 8 shards altered"
run
for k in "${order[@]:4:3}"; do alter "$k" "$col"; done
wait_for 30 "the held rows of 7 shards are not there" rows_are held 7
target_has note && fail "the target has the column with 7 of 8 shards altered"
sj_has '.infos == []' || fail "an info was put before every table of the source was held"
log "7 of 8 arrived across a kill -9: no column, no info"

alter "${order[7]}" "$col"
wait_for 60 "the column did not reach the target" target_has note
wait_for 30 "the lock is still in shard.json" sj_has '.infos == [] and .ops == []'
[ "$(exec_count)" = 1 ] || fail "the ALTER ran $(exec_count) times"
stop_writers
wait_for 60 "the target is not the union of the shards" union_equal "id, v, s, note"
log "the last shard arrived: column once, union equal"
kill -TERM "$pid"
wait "$pid" 2>/dev/null || true
pid=""
tgt -e "DROP DATABASE IF EXISTS \`$db_prefix\`; DROP DATABASE IF EXISTS \`$meta\`;"
log "ok"

#!/usr/bin/env bash
# kill -9 of `dmhost run` at random moments of a mode-full task, ten times, then a last run to the
# end: the target must equal the source table by table, and no run may ever hit a duplicate key
# (on-duplicate = "error" makes one fatal). A kill during dump must lead to a clean re-dump, one
# during load to a resume from the loader checkpoint (asserted from the logs).
#
#   kill9.sh <dmhost> <plugin dir> <source dir> [kills]
set -euo pipefail
dmhost=$1 plugins=$2 src_dir=$3 kills=${4:-10}
cd "$src_dir"
tag=kill9 t0=$SECONDS
. tests/crash/lib.sh
db=crash_kill9
work=$(mktemp -d /tmp/dmh-kill9-XXXXXX)
trap '[ "${KEEP:-}" ] || rm -rf "$work"' EXIT
fail() { echo "kill9: FAILED: $*" >&2; exit 1; }
# bytes the load has committed so far (its checkpoint rows on the target; 0 before it starts)
loaded() {
  tgt -N -B -e "SELECT COALESCE(SUM(\`offset\`), 0) FROM crash_meta.crash_loader_checkpoint" \
    2>/dev/null || echo 0
}

bash scripts/sample-data.sh --rows 150000 --tables 4 --db "$db" >/dev/null
tgt -e "DROP DATABASE IF EXISTS \`$db\`; DROP DATABASE IF EXISTS crash_meta"
cat >"$work/source.cfg" <<CFG
source-id = "crash-src";
from = { host = "$DMH_SOURCE_HOST"; port = $DMH_SOURCE_PORT; user = "$DMH_SOURCE_USER"; password = ""; };
CFG
cat >"$work/task.cfg" <<CFG
name = "crash";
task-mode = "full";
meta-schema = "crash_meta";
target-database = { host = "$DMH_TARGET_HOST"; port = $DMH_TARGET_PORT; user = "$DMH_TARGET_USER"; password = ""; };
mysql-instances = ( { source-id = "crash-src"; block-allow-list = "b"; } );
block-allow-list = { b = { do-dbs = ["$db"]; }; };
supervisor = { auto-resume = { enable = false; }; };
dump = { threads = 2; chunk-rows = 20000; };
load = { pool-size = 2; on-duplicate = "error"; batch-bytes = 262144; };
CFG
args=(run --quiet --source "$work/source.cfg" --task "$work/task.cfg" --work-dir "$work/w"
  --plugin-dir "$plugins")

dumps=0 loads=0
for i in $(seq 1 "$kills"); do
  # dmhost itself in the background (not a shell function: its pid would be a subshell's)
  "$dmhost" "${args[@]}" >"$work/run-$i.log" 2>&1 &
  pid=$!
  # random moments that follow the run, however fast or loaded the machine is: the first three
  # once the dump has its snapshot (0 .. 0.1 s after: an idle machine writes these 119 MB in
  # ~0.25 s), the others once the load has committed something in this run (its checkpoint rows
  # on the target moved), then 0 .. 0.15 s more: a fixed delay after the load's start either let an
  # idle machine finish the whole load in one run or killed a loaded one before its first commit,
  # and the later runs had nothing to resume. A run of the first three that finds the dump done
  # already is killed in its load the same way.
  if [ "$i" -gt 3 ]; then mark="load: loading"; else mark="dump: snapshot of\|load: loading"; fi
  for _ in $(seq 1 1500); do
    grep -qs "$mark\|task crash finished\|load unit finished" "$work/run-$i.log" && break
    sleep 0.02
  done
  if grep -qs "load: loading" "$work/run-$i.log"; then
    before=$(loaded)
    for _ in $(seq 1 1500); do
      [ "$(loaded)" -gt "$before" ] && break
      grep -qs "task crash finished" "$work/run-$i.log" && break
      sleep 0.02
    done
    span=15
  else
    span=10
  fi
  sleep "$(awk -v r="$RANDOM" -v s="$span" 'BEGIN { printf "%.2f", (r % s) / 100 }')"
  kill -9 "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  pgrep -f "$work/task.cfg" >/dev/null && fail "a killed dmhost is still running"
  dup=$(dup_key_line "$work/run-$i.log")
  [ -z "$dup" ] || fail "run $i hit a duplicate key: $dup"
  # a run that took a snapshot dumped; a run whose load started with bytes already done resumed
  dumped=$(grep -c "dump: snapshot of" "$work/run-$i.log" || true)
  resumed=$(grep -oE "load: loading .*: [0-9]+ of [0-9]+ bytes left" "$work/run-$i.log" |
    awk '{ if ($(NF-4) != $(NF-2)) print 1 }' | head -1 || true)
  dumps=$((dumps + (dumped > 0))) loads=$((loads + ${resumed:-0}))
  echo "kill $i: dumped=$dumped resumed-load=${resumed:-0}" \
    "$(grep -oE '[0-9]+ of [0-9]+ bytes left' "$work/run-$i.log" | head -1 || true)"
done
"$dmhost" "${args[@]}" >"$work/final.log" 2>&1 || { cat "$work/final.log"; fail "the last run did not finish"; }
grep -q "Duplicate entry" "$work/final.log" && fail "the last run hit a duplicate key"
[ "$dumps" -ge 2 ] || fail "only $dumps killed runs were dumping: the test did not cover the dump"
[ "$loads" -ge 2 ] || fail "only $loads killed runs resumed a load: the test did not cover it"
bash scripts/checksum.sh "$db" || fail "target differs from source"
echo "kill9: $kills kills ($dumps runs dumped, $loads resumed a load); target equals source"
tgt -e "DROP DATABASE IF EXISTS \`$db\`; DROP DATABASE IF EXISTS crash_meta"

#!/usr/bin/env bash
# The schema tracker's cost: bench/sync/run.sh twice, our sync only (no replica, no lag phase), once
# on a range written at binlog_row_metadata=FULL (the binlog names the columns) and once at NO_LOG
# (the tracker completes every table map), same transaction count and shape, same data size, each
# the median of RUNS; prints both and the overhead. Target of issue 12: under 5%.
#
#   bench/sync/tracker.sh [BUILD_DIR]     env: as run.sh (TXNS, ROWS, TABLES, WORKERS, RUNS=3, ...)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export SKIP_REPLICA=1 SKIP_LAG=1 RUNS=${RUNS:-3} WORKERS=${WORKERS:-8}
base=${BENCH_DIR:-/tmp/dmh-sync-bench}
for m in FULL NO_LOG; do
  echo "== binlog_row_metadata=$m" >&2
  METADATA=$m BENCH_DIR=$base-$m bash "$here/run.sh" "$@" >"$base-$m.out"
done
# the seconds of each worker count from each summary
secs() { awk '/^dmhost sync workers=/ { split($3, w, "="); print w[2], $4, $NF }' "$base-$1/summary.txt"; }
echo
grep -h "^binlog:" "$base-FULL/summary.txt" "$base-NO_LOG/summary.txt"
printf '%-22s %8s %8s %9s %8s %8s %9s\n' "workers" "FULL_s" "NO_LOG_s" "overhead" "FULL_cpu" "NOLOG_cpu" "cpu_over"
join <(secs FULL | sort) <(secs NO_LOG | sort) |
  awk '{ printf "%-22s %8.2f %8.2f %8.1f%% %8.2f %8.2f %8.1f%%\n", "dmhost sync workers=" $1, $2, $4,
         ($4 / $2 - 1) * 100, $3, $5, ($5 / $3 - 1) * 100 }'
echo "(medians of $RUNS runs each; overhead = NO_LOG / FULL - 1, of the wall time and of the process's"
echo " CPU seconds; target: under 5%. On a shared machine the wall time follows the others' load.)"

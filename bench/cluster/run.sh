#!/usr/bin/env bash
# Cluster benchmark (issue 11): N fake workers (bench_cluster_sim: a lease, a registration and a
# keeper thread each, no subtasks) and M sources against a real 3-member etcd (scripts/etcd.sh) and
# one real `dmhost master` leading. Prints the time to bind every source that can be bound, the time
# until a dead worker's source is bound elsewhere, etcd requests per worker per second at rest, the
# p99 of `dmctl --master-addr ... query-status`, and the peak RSS of the master and of the
# simulation per worker. See bench/cluster/README.md.
#
#   bench/cluster/run.sh [BUILD_DIR]     (default build/plain; builds dmhost, dmctl and the sim)
#
# Two runs, each with a master of its own under a prefix of its own:
#   1. N workers, N-2 sources: all bound, two workers left free for the two moves (keepalive
#      stopped as after kill -9, lease revoked as after a clean stop); then a real `dmhost worker`
#      joins, free (every source is bound), for an idle worker's peak RSS and traffic;
#   2. N workers, M sources (M > N): only N can be bound (a worker serves one source), no move.
# Env: N (100), M (1000), IDLE_S (20), CALLS (200), MASTER_PORT (etcd port base + 301); the etcd of scripts/etcd.sh
# with DMH_ETCD_DIR and DMH_ETCD_PORT_BASE (started here when it is not running, stopped after).
# Quick run: N=20 M=200 IDLE_S=10 CALLS=50.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(realpath -m "${1:-$root/build/plain}")
n=${N:-100}
m=${M:-1000}
idle_s=${IDLE_S:-20}
calls=${CALLS:-200}
port=${MASTER_PORT:-$((${DMH_ETCD_PORT_BASE:-22379} + 301))}
etcd=$root/scripts/etcd.sh

[ "$n" -ge 3 ] || { echo "run.sh: N must be 3 or more" >&2; exit 2; }
cmake --build "$build" --target dmhost dmctl bench_cluster_sim >/dev/null
sim=$build/bench/cluster/bench_cluster_sim
dmhost=$build/host/dmhost
dmctl=$build/host/dmctl

started_etcd=0
if ! "$etcd" status >/dev/null 2>&1; then
  "$etcd" start >/dev/null
  started_etcd=1
fi
eps=$("$etcd" endpoints)
master_pid=
work=$(mktemp -d /tmp/bench-cluster.XXXXXX)
log=$work/master.log
cleanup() {
  local rc=$?
  [ -n "$master_pid" ] && kill "$master_pid" 2>/dev/null && wait "$master_pid" 2>/dev/null
  [ "$started_etcd" = 1 ] && "$etcd" stop >/dev/null
  if [ "$rc" = 0 ]; then rm -rf "$work"; else echo "run.sh: failed; logs kept in $work" >&2; fi
  return 0
}
trap cleanup EXIT

hwm() { awk '/^VmHWM/ {print $2}' "/proc/$1/status"; }

run() { # workers, sources
  local prefix=/bench-cluster-$$-$2
  echo "== N=$1 workers, M=$2 sources (prefix $prefix, master at 127.0.0.1:$port)"
  "$dmhost" master --name bench-m1 --etcd "$eps" --etcd-prefix "$prefix" \
    --listen "127.0.0.1:$port" --log-level warn >"$log" 2>&1 &
  master_pid=$!
  SIM_DMHOST=$dmhost SIM_PLUGIN_DIR=$build/plugins SIM_STATE_DIR=$work/worker-$2 \
    "$sim" "$eps" "$prefix" "127.0.0.1:$port" "$dmctl" "$1" "$2" "$idle_s" "$calls"
  echo "master peak RSS: $(hwm "$master_pid") KiB"
  kill "$master_pid"
  wait "$master_pid" || { echo "run.sh: the master exited with $? (log $log)" >&2; exit 1; }
  master_pid=
}

echo "etcd: $eps; $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
run "$n" $((n - 2))
run "$n" "$m"

#!/usr/bin/env bash
# `dmhost verify` against pt-table-checksum and CHECKSUM TABLE on the same tables (bench/README.md).
#
#   bench/verify/run.sh [BUILD_DIR] [--tables T] [--rows N] [--runs R]
#
# Data: T sysbench-shaped tables (id INT PRIMARY KEY, k INT, c CHAR(120), pad CHAR(60)) of N rows
# each, the same on the source and the target of scripts/mariadb.sh (its ports: DMH_SOURCE_PORT,
# DMH_TARGET_PORT). Each tool's median of R runs:
#  - dmhost verify (default --chunk-rows), both sides in one run, --threads 1 and 2; its peak RSS;
#  - pt-table-checksum: it compares a master with its replicas by replicating its checksum
#    statements (binlog_format=STATEMENT), which a source and target that are no replication pair
#    cannot do (its --recursion-method dsn=... only names replicas to read: the checksums must have
#    arrived there by replication). So it runs once on each side with --recursion-method=none
#    (its "do not find replicas") and the two percona.checksums tables are compared by chunk: the
#    same chunking and checksums, without the replication. Its chunks are fixed at 10,000 rows
#    (--chunk-size 10000 --chunk-time 0, dmhost's default chunk-rows): with its default dynamic
#    sizing (--chunk-time 0.5) the two sides' chunks differ and cannot be paired;
#  - CHECKSUM TABLE of every table on each side (whole tables: it says that they differ, not where).
# Then one row is changed on the target and each must find it. Not in CI.
#
# BUFFER_POOL (default 3G) sizes both servers' InnoDB buffer pools when this script starts them
# (scripts/mariadb.sh's DMH_BUFFER_POOL): at 8 x 1 M rows a side holds ~1.8 GB, which the tests'
# 256 MiB pools would read from disk on every pass. Servers already running keep theirs: the pool
# in effect is printed.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$root/build/release
tables=4 rows=200000 runs=3
while [ $# -gt 0 ]; do
  case $1 in
    --tables) tables=$2; shift 2 ;;
    --rows) rows=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    -*) echo "usage: $0 [BUILD_DIR] [--tables T] [--rows N] [--runs R]" >&2; exit 2 ;;
    *) build=$1; shift ;;
  esac
done
dmhost=$build/host/dmhost
[ -x "$dmhost" ] || {
  echo "no $dmhost: cmake -S $root -B $build -DCMAKE_BUILD_TYPE=Release && cmake --build $build" >&2
  exit 1
}
if ! command -v pt-table-checksum >/dev/null; then
  echo "installing percona-toolkit (Debian's package) for pt-table-checksum" >&2
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get install -y percona-toolkit >/dev/null
fi
sp=${DMH_SOURCE_PORT:-13306}
tp=${DMH_TARGET_PORT:-13307}
export DMH_BUFFER_POOL=${BUFFER_POOL:-3G}
bash "$root/scripts/mariadb.sh" start >/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
src() { mariadb --no-defaults --protocol=tcp -h127.0.0.1 -P"$sp" -uroot -N -B "$@"; }
dst() { mariadb --no-defaults --protocol=tcp -h127.0.0.1 -P"$tp" -uroot -N -B "$@"; }
db=dmh_bench_verify

echo "data: $tables tables x $rows rows on both sides; buffer pools: source" \
  "$(src -e 'SELECT @@innodb_buffer_pool_size DIV 1048576')" MiB, target \
  "$(dst -e 'SELECT @@innodb_buffer_pool_size DIV 1048576')" MiB >&2
fill="DROP DATABASE IF EXISTS $db; CREATE DATABASE $db; USE $db;"
for i in $(seq 1 "$tables"); do
  fill+="CREATE TABLE t$i (id INT PRIMARY KEY, k INT NOT NULL, c CHAR(120) NOT NULL,
    pad CHAR(60) NOT NULL, KEY (k));
  INSERT INTO t$i SELECT seq, seq * 7919 % $rows, SHA2(seq, 384), SHA2(seq + $i, 224)
    FROM seq_1_to_$rows;"
done
echo "load before: $(uptime)" >&2
t_fill=$(date +%s)
src -e "$fill" &
dst -e "$fill"
wait
echo "filled in $(($(date +%s) - t_fill)) s" >&2
total=$((tables * rows))

cat >"$work/source.cfg" <<EOF
source-id = "bench-src";
from = { host = "127.0.0.1"; port = $sp; user = "root"; password = ""; };
EOF
cat >"$work/task.cfg" <<EOF
name = "bench-verify";
task-mode = "full";
target-database = { host = "127.0.0.1"; port = $tp; user = "root"; password = ""; };
mysql-instances = ( { source-id = "bench-src"; block-allow-list = "bal"; } );
block-allow-list = { bal = { do-dbs = ["$db"]; }; };
EOF

now() { date +%s.%N; }
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

verify_once() { # [threads]: prints "seconds exit peak_kib"
  python3 - "$dmhost" "$work" "${1:-1}" <<'EOF'
import resource, subprocess, sys, time
t = time.monotonic()
rc = subprocess.call([sys.argv[1], "verify", "--source", sys.argv[2] + "/source.cfg", "--task",
                      sys.argv[2] + "/task.cfg", "--json", "--threads", sys.argv[3]],
                     stdout=open(sys.argv[2] + "/v.json", "w"))
print("%.3f %d %d" % (time.monotonic() - t, rc, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))
EOF
}
pt_once() { # port: pt-table-checksum of one side into its own percona.checksums
  pt-table-checksum "h=127.0.0.1,P=$1,u=root" --databases "$db" --recursion-method=none \
    --no-check-binlog-format --no-check-replication-filters --replicate percona.checksums \
    --chunk-size 10000 --chunk-time 0 \
    --no-version-check >"$work/pt-$1.txt" 2>&1 || true
}
pt_both() { # prints seconds; then percona.checksums of each side compared by chunk
  local t0
  t0=$(now)
  pt_once "$sp"
  pt_once "$tp"
  echo "$(now) - $t0" | bc
}
pt_diff() { # the chunks whose count or crc differ
  local q="SELECT db, tbl, chunk, this_cnt, this_crc FROM percona.checksums ORDER BY db, tbl, chunk"
  diff <(src -e "$q") <(dst -e "$q") | grep -c '^<' || true
}
sums_both() {
  local t0 list
  list=$(seq -s, -f "$db.t%g" 1 "$tables")
  t0=$(now)
  src -e "CHECKSUM TABLE $list" >"$work/cs-src.txt"
  dst -e "CHECKSUM TABLE $list" >"$work/cs-dst.txt"
  echo "$(now) - $t0" | bc
}

declare -a v_s v2_s pt_s cs_s
peak=0
for r in $(seq 1 "$runs"); do
  read -r s rc kib < <(verify_once)
  [ "$rc" -eq 0 ] || { echo "dmhost verify: exit $rc on equal tables" >&2; cat "$work/v.json" >&2; exit 1; }
  v_s+=("$s")
  [ "$kib" -gt "$peak" ] && peak=$kib
  read -r s rc kib < <(verify_once 2)
  [ "$rc" -eq 0 ] || { echo "dmhost verify --threads 2: exit $rc on equal tables" >&2; exit 1; }
  v2_s+=("$s")
  pt_s+=("$(pt_both)")
  cs_s+=("$(sums_both)")
  echo "run $r: verify ${v_s[-1]}s (--threads 2: ${s}s), pt-table-checksum ${pt_s[-1]}s, CHECKSUM TABLE ${cs_s[-1]}s" >&2
done
[ "$(pt_diff)" -eq 0 ] || echo "pt-table-checksum: the equal sides' chunks differ?" >&2

# one row changed on the target: who finds it
dst -e "UPDATE $db.t1 SET c = 'changed' WHERE id = $((rows / 2))"
read -r _ v_rc _ < <(verify_once)
pt_both >/dev/null
pt_found=$(pt_diff)
sums_both >/dev/null
cs_found=$(diff "$work/cs-src.txt" "$work/cs-dst.txt" | grep -c '^<' || true)
v_row=$(python3 -c "import json; d=json.load(open('$work/v.json')); \
print([r['key'] for t in d['tables'] for r in t['differences'] or []])")

row() { # name, seconds
  printf '| %s | %.2f | %s | %.2fx |\n' "$1" "$2" \
    "$(printf '%.0f' "$(echo "$total / $2" | bc -l)")" "$(echo "$2 / $vm" | bc -l)"
}
vm=$(printf '%s\n' "${v_s[@]}" | median)
echo
echo "$tables tables x $rows rows ($total rows), both sides; median of $runs"
echo "| tool | seconds | rows/s (per side) | its time / dmhost verify's |"
echo "|---|---|---|---|"
row "dmhost verify" "$vm"
row "dmhost verify --threads 2" "$(printf '%s\n' "${v2_s[@]}" | median)"
row "pt-table-checksum (each side, --recursion-method=none)" "$(printf '%s\n' "${pt_s[@]}" | median)"
row "CHECKSUM TABLE (each side)" "$(printf '%s\n' "${cs_s[@]}" | median)"
echo
echo "dmhost verify peak RSS: $((peak / 1024)) MiB"
echo "one row changed on the target: dmhost verify exit $v_rc, rows $v_row;" \
  "pt-table-checksum: $pt_found differing chunk(s); CHECKSUM TABLE: $cs_found differing table(s)"
echo "load after: $(uptime)"
src -e "DROP DATABASE $db; DROP DATABASE IF EXISTS percona"
dst -e "DROP DATABASE $db; DROP DATABASE IF EXISTS percona"

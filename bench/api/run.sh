#!/usr/bin/env bash
# HTTP API benchmark: 200 keep-alive clients asking GET /api/v1/dmhost/tasks/inc/status of
# `dmhost serve --listen` with a running task, and the same requests, by the same client, of nginx
# serving a copy of the daemon's answer as a static file: the ceiling of this client on this
# machine, so the ratio says what the daemon's work costs whatever the machine's speed of the
# hour. Each phase is run RUNS times in turn (ours, nginx, ours, ...): paced (each client every
# 50 ms) and a closed loop (the throughput). Prints rate, mean, p50, p99, worst of each run, and
# the medians' ratio. The client is tests/control/test_api_load.c's (one epoll thread, its own
# HTTP/1.1); no bound is checked here (the test checks them).
#
#   bench/api/run.sh [BUILD_DIR]      (default build/release: a Release build of the tests, e.g.
#                                      cmake -B build/release -DCMAKE_BUILD_TYPE=Release &&
#                                      cmake --build build/release --target test_control_api_load)
#
# Env: SECONDS_EACH (30), RUNS (3), CLIENTS (200), NGINX_PORT (14480).
# Installs nginx-light when missing (as root); nginx runs as this user in a temp folder, on
# 127.0.0.1 only, with 2 worker processes (one a core here), keep-alive unbounded, no access log.
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
build=$(realpath -m "${1:-$repo/build/release}")
secs=${SECONDS_EACH:-30}
runs=${RUNS:-3}
clients=${CLIENTS:-200}
port=${NGINX_PORT:-14480}
bin=$build/tests/control/test_control_api_load
[ -x "$bin" ] || { echo "bench/api: no $bin: build the target test_control_api_load in $build" >&2; exit 1; }
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] ||
  { [ "$(id -u)" = 0 ] && apt-get install -y -q nginx-light >/dev/null; }
nginx=$(command -v nginx || echo /usr/sbin/nginx)
[ -x "$nginx" ] || { echo "bench/api: nginx is not installed (apt-get install nginx-light)" >&2; exit 1; }

work=$(mktemp -d /tmp/dmh-bench-api.XXXXXX)
chmod 755 "$work" # nginx's workers run as another user when started by root
cleanup() {
  [ -f "$work/nginx.pid" ] && kill "$(cat "$work/nginx.pid")" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

load() { # label, then env assignments; prints the client's result line
  local label=$1; shift
  env DMH_API_LOAD_TEST_ONLY="200 clients" DMH_API_LOAD_CLIENTS="$clients" \
    DMH_API_LOAD_SECONDS="$secs" DMH_API_LOAD_P99_MS=1e9 DMH_API_LOAD_WORST_MS=1e9 \
    DMH_API_LOAD_CPU_RATIO=1e9 "$@" "$bin" >"$work/load.log" 2>&1 || true
  grep -E "clients( in a closed loop|, each)|the first error" "$work/load.log" | sed "s/^ */$label: /"
}

# the daemon's answer, saved by a short run, served by nginx as it is
echo "== the daemon's answer to copy (a 2 s closed loop)"
load "dmhost (warm-up)" DMH_API_LOAD_SECONDS=2 DMH_API_LOAD_INTERVAL_MS=0 DMH_API_LOAD_SAVE="$work/answer.json"
[ -s "$work/answer.json" ] || { echo "bench/api: the daemon's answer was not saved" >&2; exit 1; }
mkdir -p "$work/root/api/v1/dmhost/tasks/inc" "$work/tmp"
install -m 644 "$work/answer.json" "$work/root/api/v1/dmhost/tasks/inc/status"
cat >"$work/nginx.conf" <<EOF
worker_processes 2;
pid $work/nginx.pid;
error_log $work/error.log;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path $work/tmp; proxy_temp_path $work/tmp; fastcgi_temp_path $work/tmp;
  uwsgi_temp_path $work/tmp; scgi_temp_path $work/tmp;
  keepalive_requests 1000000000;
  keepalive_timeout 120s;
  default_type application/json;
  server { listen 127.0.0.1:$port; root $work/root; }
}
EOF
"$nginx" -c "$work/nginx.conf" -p "$work"
for _ in $(seq 50); do [ -s "$work/nginx.pid" ] && break; sleep 0.1; done

out=$work/results
for phase in 50 0; do
  name=$([ "$phase" = 0 ] && echo "closed loop" || echo "paced, every ${phase} ms")
  echo "== $name: $clients clients, $secs s a run, $runs runs each"
  for r in $(seq "$runs"); do
    load "dmhost" DMH_API_LOAD_INTERVAL_MS="$phase" | tee -a "$out.$phase.dmhost"
    load "nginx" DMH_API_LOAD_INTERVAL_MS="$phase" DMH_API_LOAD_ADDR="127.0.0.1:$port" |
      tee -a "$out.$phase.nginx"
  done
done

median() { # file, the field's pattern (e.g. "p99 [0-9.]+ ms"): its median over the runs
  grep -oE "$2" "$1" | grep -oE "[0-9.]+( ms|/s)" | grep -oE "^[0-9.]+" | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'
}
echo "== medians"
printf "%-24s %12s %10s %10s %10s %10s\n" phase server "rate/s" "mean ms" "p99 ms" "worst ms"
for phase in 50 0; do
  for who in dmhost nginx; do
    f=$out.$phase.$who
    printf "%-24s %12s %10s %10s %10s %10s\n" "$([ "$phase" = 0 ] && echo "closed loop" || echo "every $phase ms")" \
      "$who" "$(median "$f" "\(([0-9]+)/s\)")" "$(median "$f" "mean [0-9.]+ ms")" \
      "$(median "$f" "p99 [0-9.]+ ms")" "$(median "$f" "worst [0-9.]+ ms")"
  done
done
ours=$(median "$out.0.dmhost" "\(([0-9]+)/s\)")
theirs=$(median "$out.0.nginx" "\(([0-9]+)/s\)")
echo "closed loop: dmhost serves $(awk -v a="$ours" -v b="$theirs" 'BEGIN {printf "%.2f", a / b}')x" \
  "the rate of nginx serving its answer as a file ($(wc -c <"$work/answer.json") bytes)"

#!/usr/bin/env bash
# DM's alert rules (tests/control/dm-alerts/dm_worker.rules.yml, unchanged) against `dmhost serve`,
# the real servers and a real Prometheus (issue 23):
#   - a real `prometheus` (Debian's) loads DM's rule file, scrapes the daemon every second and
#     evaluates every second; the daemon runs a relay and a mode-all task;
#   - two faults: the relay's binlog stream is cut (its Binlog Dump connection killed on the
#     source: a read error of the stream, which the relay survives by reconnecting), and the sync
#     meets an error that is not resumable (its target table dropped, then a row written);
#   - DM's alerts for them, DM_fail_to_read_binlog_from_master and
#     DM_sync_process_exists_with_error, are firing in Prometheus' /api/v1/alerts with the
#     daemon's labels (task, source_id, worker, resumable_err="false" behind it);
#   - `promtool test rules` (tests/control/dm_alerts_unit.py) on series made from two scrapes of
#     the same daemon, healthy and faulted: the rules fire on the faulted series only.
# A missing prometheus or promtool fails the test. DMH_PROMETHEUS_PORT: Prometheus' port (default:
# a free one).
#
#   metrics_alerts.sh <dmhost> <dmctl> <plugin dir> <source dir>
set -euo pipefail
dmhost=$1 dmctl=$2 plugins=$3 src_dir=$4
cd "$src_dir"
tag=metrics_alerts name=metrics_alerts db=metrics_alerts meta=metrics_alerts_meta
work=$(mktemp -d /tmp/dmh-metrics-alerts-XXXXXX)
t0=$SECONDS
rules="$src_dir/tests/control/dm-alerts/dm_worker.rules.yml"
. tests/crash/lib.sh
serve_begin
prom_pid=""
cleanup_all() {
  local rc=$?
  if [ -n "$prom_pid" ]; then kill "$prom_pid" 2>/dev/null || true; fi
  (exit "$rc")
  serve_cleanup
}
trap cleanup_all EXIT
for tool in prometheus promtool python3; do
  command -v "$tool" >/dev/null || fail "$tool is not installed (scripts/deps.sh installs it)"
done
python3 -c 'import yaml' 2>/dev/null || fail "python3-yaml is not installed (scripts/deps.sh)"

n=0
scrape() { # -> $work/scrape.N, its name in $last
  n=$((n + 1))
  last="$work/scrape.$n"
  curl -sS --noproxy '*' -o "$last" "http://$addr/metrics" || fail "GET /metrics failed"
}
value() { awk -v s="$2" 'index($0, s " ") == 1 { print $NF; exit }' "$1"; }

# ---- source data, configs, the daemon ----
src -e "DROP DATABASE IF EXISTS $db; CREATE DATABASE $db;
  CREATE TABLE $db.t (id INT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(64)) ENGINE=InnoDB;
  INSERT INTO $db.t (v) VALUES ('a'), ('b');"
tgt -e "DROP DATABASE IF EXISTS $db; DROP DATABASE IF EXISTS $meta;"
crash_source_cfg mysql-alerts
# a server-id of this run's own: a Binlog Dump of an earlier run killed with -9 may linger on the
# source until it next writes to it, and would refuse the same id
printf 'enable-relay = true;\nrelay-dir = "%s";\nserver-id = %d;\n' "$work/relay" \
  $((1000000 + RANDOM * 32768 + RANDOM)) >>"$work/source.cfg"
crash_task_cfg "$name" "$meta" "$db" mysql-alerts >"$work/task.cfg" <<'CFG'
supervisor = { auto-resume = { enable = false; }; };
CFG
worker="dmhost@$(hostname)"
serve_listen "$dmhost" "$plugins" || fail "the daemon did not listen"
ctl() { "$dmctl" --state-dir "$work/state" "$@"; }
serve_start_to_sync "$dmctl" "$name"
log "task running its sync on $addr"

# ---- Prometheus with DM's rules, scraping the daemon ----
port=${DMH_PROMETHEUS_PORT:-$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}
cat >"$work/prometheus.yml" <<CFG
global: { scrape_interval: 1s, evaluation_interval: 1s }
rule_files: ["$rules"]
scrape_configs:
  - job_name: dmhost
    static_configs: [ { targets: ["$addr"] } ]
CFG
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/prom" \
  --web.listen-address="127.0.0.1:$port" >"$work/prometheus.log" 2>&1 &
prom_pid=$!
prom="http://127.0.0.1:$port"
up=""
for _ in $(seq 1 600); do
  curl -sf --noproxy '*' "$prom/api/v1/query?query=dm_relay_read_error_count" >"$work/q.json" 2>/dev/null &&
    grep -q '"value"' "$work/q.json" && { up=1; break; }
  proc_alive "$prom_pid" || fail "prometheus exited: $(tail -5 "$work/prometheus.log")"
  sleep 0.1
done
[ -n "$up" ] || fail "Prometheus never scraped the daemon's dm_relay_read_error_count: $(tail -5 "$work/prometheus.log")"
curl -sf --noproxy '*' "$prom/api/v1/rules" >"$work/rules.json" || fail "GET /api/v1/rules"
grep -q '"DM_sync_process_exists_with_error"' "$work/rules.json" || fail "DM's rules are not loaded: $(head -c 300 "$work/rules.json")"
log "prometheus on $prom scrapes the daemon with DM's rules"

# the healthy scrape: DM's counters exist at 0 (so the first error is a change); the relay's read
# errors steady (a stream refused meanwhile counts too, as in DM)
relay_sel="dm_relay_read_error_count{task=\"\",source_id=\"mysql-alerts\",worker=\"$worker\"}"
sync_sel="dm_syncer_exit_with_error_count{task=\"$name\",source_id=\"mysql-alerts\",worker=\"$worker\",resumable_err=\"false\"}"
prev=""
for _ in $(seq 1 60); do
  scrape
  cur=$(value "$last" "$relay_sel")
  [ -n "$cur" ] && [ "$cur" = "$prev" ] && break
  prev=$cur
  sleep 1
done
healthy=$last
relay0=$(value "$healthy" "$relay_sel")
[ -n "$relay0" ] || fail "no $relay_sel: $(grep relay_read "$healthy")"
[ "$relay0" = 0 ] || log "the relay counted $relay0 read error(s) before the fault: $(grep -c refused "$work/serve.log") refusals in serve.log"
[ "$(value "$healthy" "$sync_sel")" = 0 ] || fail "no $sync_sel at 0: $(grep exit_with "$healthy")"
[ -n "$(value "$healthy" dm_worker_cpu_usage)" ] || fail "no dm_worker_cpu_usage: $(grep cpu_usage "$healthy")"
# the relay's other series DM's rules and boards read: its folder's space, its sub-folder
for t in capacity available; do
  v=$(value "$healthy" "dm_relay_space{task=\"\",source_id=\"mysql-alerts\",worker=\"$worker\",type=\"$t\"}")
  awk -v v="${v:-0}" 'BEGIN { exit !(v > 0) }' || fail "dm_relay_space $t is not above 0: $(grep relay_space "$healthy")"
done
grep -qE "^dm_relay_sub_dir_index\{task=\"\",source_id=\"mysql-alerts\",worker=\"$worker\",node=\"$DMH_SOURCE_HOST:$DMH_SOURCE_PORT\",uuid=\"[^\"]+\.0*1\"\} 1\$" "$healthy" ||
  fail "no dm_relay_sub_dir_index of the relay's first sub-folder: $(grep sub_dir "$healthy")"
for _ in $(seq 1 30); do # Prometheus holds a sample of them at 0
  curl -sf --noproxy '*' "$prom/api/v1/query?query=count_over_time(dm_syncer_exit_with_error_count%5B1m%5D)" >"$work/q.json" || true
  grep -q '"value"' "$work/q.json" && break
  sleep 0.2
done
sleep 2 # two more scrapes of the healthy values, so the fault is a change in every window

# ---- fault 1: the relay's binlog stream cut on the source ----
# the daemon's connections to the source (its local ports), and of those the Binlog Dump one
ports=$(ss -tnpH "dport = :$DMH_SOURCE_PORT" 2>/dev/null | awk -v p="pid=$pid," 'index($0, p) { split($4, a, ":"); print a[length(a)] }')
[ -n "$ports" ] || fail "no connection of the daemon to the source in ss"
killed=""
for _ in $(seq 1 50); do
  while read -r id host cmd; do
    [ "$cmd" = "Binlog Dump" ] || continue
    for p in $ports; do
      if [ "${host##*:}" = "$p" ]; then
        src -e "KILL CONNECTION $id" && killed=$id
      fi
    done
  done < <(src -N -B -e "SELECT id, host, command FROM information_schema.processlist" | tr '\t' ' ' |
    awk '{ id = $1; host = $2; $1 = ""; $2 = ""; sub(/^ +/, ""); print id, host, $0 }')
  [ -n "$killed" ] && break
  sleep 0.1
  ports=$(ss -tnpH "dport = :$DMH_SOURCE_PORT" 2>/dev/null | awk -v p="pid=$pid," 'index($0, p) { split($4, a, ":"); print a[length(a)] }')
done
[ -n "$killed" ] || fail "no Binlog Dump connection of the daemon on the source"
log "killed the relay's Binlog Dump connection $killed"

# ---- fault 2: a sync error that is not resumable (its target table gone) ----
tgt -e "DROP TABLE $db.t"
src -e "INSERT INTO $db.t (v) VALUES ('c');"
faulted=""
for _ in $(seq 1 600); do
  scrape
  if awk -v a="$(value "$last" "$relay_sel")" -v b="$relay0" 'BEGIN { exit !(a > b) }' &&
    [ "$(value "$last" "$sync_sel")" = 1 ]; then
    faulted=$last
    break
  fi
  sleep 0.2
done
[ -n "$faulted" ] || fail "the counters did not move: $(grep -E 'relay_read_error|syncer_exit' "$last")"
ctl query-status "$name" >"$work/status.json" 2>/dev/null || true
grep -q '"stage": *"Paused"' "$work/status.json" || fail "the task is not paused: $(cat "$work/status.json")"
log "faults counted: relay read errors $relay0 -> $(value "$faulted" "$relay_sel"), sync exits with a non-resumable error 1"

# ---- the alerts firing in Prometheus ----
firing() { # alertname label=value...: is such an alert firing?
  python3 - "$work/alerts.json" "$@" <<'PY'
import json, sys
alerts = json.load(open(sys.argv[1]))['data']['alerts']
want = dict(a.split('=', 1) for a in sys.argv[3:])
ok = any(a['labels'].get('alertname') == sys.argv[2] and a['state'] == 'firing' and
         all(a['labels'].get(k) == v for k, v in want.items()) for a in alerts)
sys.exit(0 if ok else 1)
PY
}
fired=""
for _ in $(seq 1 600); do
  curl -sf --noproxy '*' "$prom/api/v1/alerts" >"$work/alerts.json" || true
  if [ -s "$work/alerts.json" ] &&
    firing DM_fail_to_read_binlog_from_master source_id=mysql-alerts "worker=$worker" level=critical &&
    firing DM_sync_process_exists_with_error "task=$name" source_id=mysql-alerts "worker=$worker" \
      resumable_err=false; then
    fired=1
    break
  fi
  sleep 0.2
done
[ -n "$fired" ] || fail "DM's alerts are not firing in Prometheus: $(cat "$work/alerts.json")"
log "firing in Prometheus: DM_fail_to_read_binlog_from_master, DM_sync_process_exists_with_error"

# ---- promtool test rules on the recorded series ----
python3 tests/control/dm_alerts_unit.py "$rules" "$work" "$addr" dmhost "$healthy" "$faulted" \
  "DM_fail_to_read_binlog_from_master=$relay_sel" \
  "DM_sync_process_exists_with_error=$sync_sel" >"$work/promtool.out" 2>&1 ||
  fail "promtool test rules: $(cat "$work/promtool.out")"
log "promtool test rules passed on the recorded series"

ctl stop-task "$name" >/dev/null || fail "stop-task"
kill -TERM "$pid"
wait "$pid" || fail "the daemon exited $? on SIGTERM"
pid=""
log "passed"

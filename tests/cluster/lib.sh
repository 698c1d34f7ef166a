# What the cluster scenarios (seed.sh, frozen.sh) share, sourced after tests/crash/lib.sh: the
# fixture's etcd, `dmhost master` and `dmhost worker` processes (their pids in pid[NAME], logs in
# $work/NAME.log), dmctl through a master, list-member and query-status read with jq, waiting, the
# end. The caller sets $dmhost, $dmctl, $plugins, $work, $tag and $tasks (the task names its
# failure report shows). With DMH_ETCD_TLS=1 (the etcd_tls fixture) the processes reach etcd over
# TLS as etcd user `dmhost` ($DMH_ETCD_FLAGS), under the prefix its role allows; every master and
# worker gets the cluster key $work/cluster.key.
eval "$(bash scripts/etcd.sh env)"
prefix=${DMH_ETCD_PREFIX:-}/dmh-$tag-$$-$RANDOM
(umask 077 && openssl rand -hex 32 >"$work/cluster.key")
# shellcheck disable=SC2206 # the flags are words without blanks (scripts/etcd.sh env)
etcd_flags=($DMH_ETCD_FLAGS --cluster-key "$work/cluster.key")
m_port=(0 $((DMH_ETCD_PORT_BASE + 21)) $((DMH_ETCD_PORT_BASE + 22)))
declare -A pid=()

no_dup() { [ -z "$(dup_key_line "$@")" ] || fail "a duplicate key in $*: $(dup_key_line "$@")"; }
fail() {
  echo "$tag: FAILED: $*" >&2
  echo "--- list-member and query-status through m1:" >&2
  ctl 1 list-member --worker >&2 || true
  for t in $tasks; do ctl 1 query-status "$t" >&2 || true; done
  for l in "$work"/*.log "$work"/monitor.*; do
    [ -f "$l" ] && { echo "--- end of $l:" >&2; tail -n 20 "$l" >&2; }
  done
  exit 1
}
# the end of a scenario: thaws and kills every process still running, removes $work (KEEP=1 keeps it)
cluster_cleanup() {
  local n
  for n in "${!pid[@]}"; do
    kill -CONT "${pid[$n]}" 2>/dev/null || true
    kill -9 "${pid[$n]}" 2>/dev/null || true
  done
  for n in "${!pid[@]}"; do wait "${pid[$n]}" 2>/dev/null || true; done
  if [ "${KEEP:-}" ]; then echo "$tag: work folder kept: $work"; else rm -rf "$work"; fi
}

# drops databases $@ on both servers, quietly (a scenario's cleanup: its databases and meta)
cluster_drop_dbs() {
  local d
  for d in "$@"; do
    src -e "DROP DATABASE IF EXISTS \`$d\`" 2>/dev/null || true
    tgt -e "DROP DATABASE IF EXISTS \`$d\`" 2>/dev/null || true
  done
}
# etcd as the test reads it (etcdctl): key $1's JSON, its value, and its field $2 (0 when absent)
etcd_kv() { ETCDCTL_API=3 etcdctl --endpoints "$DMH_ETCD_ENDPOINTS" get -w json "$1" 2>/dev/null; }
etcd_val() { etcd_kv "$1" | jq -r '.kvs[0].value // "" | @base64d'; }
etcd_field() { etcd_kv "$1" | jq -r ".kvs[0].$2 // 0"; }

# dmctl through master $1 (1 or 2); prints its JSON answer, returns its exit status
ctl() {
  local m=$1
  shift
  "$dmctl" --master-addr "127.0.0.1:${m_port[$m]}" --timeout 10 "$@"
}
# through master $1 (1 or 2): operate-source create / start-task of $work/$2.cfg, or the test fails
source_create() { ctl "$1" operate-source create "$work/$2.cfg" >"$work/ctl.out" ||
  fail "operate-source create $2 through m$1: $(cat "$work/ctl.out")"; }
task_start() { ctl "$1" start-task "$work/$2.cfg" >"$work/ctl.out" ||
  fail "start-task $2 through m$1: $(cat "$work/ctl.out")"; }
start_master() { # 1|2
  "$dmhost" master --name "m$1" --etcd "$DMH_ETCD_ENDPOINTS" "${etcd_flags[@]}" --etcd-prefix "$prefix" \
    --listen "127.0.0.1:${m_port[$1]}" >>"$work/m$1.log" 2>&1 &
  pid[m$1]=$!
}
# start_master, then wait until it answers dmctl
master_up() { # 1|2
  start_master "$1"
  wait_for 20 "m$1 does not answer" ctl "$1" list-member
}
# worker_extra: more flags for every worker (a scenario's --unit-dir, --allow-submitted-unit-paths)
worker_extra=()
start_worker() { # name
  "$dmhost" worker --name "$1" --etcd "$DMH_ETCD_ENDPOINTS" "${etcd_flags[@]}" --etcd-prefix "$prefix" \
    --state-dir "$work/$1" --plugin-dir "$plugins" --listen 127.0.0.1:0 "${worker_extra[@]}" \
    >>"$work/$1.log" 2>&1 &
  pid[$1]=$!
}
# SIGTERM to process NAME: it must end within 30 s with exit 0 (a sanitizer's report makes it 1)
stop_proc() { # name
  local rc=0
  kill -TERM "${pid[$1]}"
  for _ in $(seq 1 300); do proc_alive "${pid[$1]}" || break; sleep 0.1; done
  proc_alive "${pid[$1]}" && fail "$1 still runs 30 s after SIGTERM"
  wait "${pid[$1]}" || rc=$?
  [ "$rc" -eq 0 ] || fail "$1 exited $rc after SIGTERM"
  unset "pid[$1]"
}
# DM's HTTP API on master $1: METHOD PATH (under /api/v1) [JSON BODY]; the answer in $work/out,
# its HTTP status in $status
call() { # master method path [body]
  local args=(-sS -m 60 --noproxy '*' -o "$work/out" -w '%{http_code}' -X "$2"
    "http://127.0.0.1:${m_port[$1]}/api/v1$3")
  [ $# -ge 4 ] && args+=(-H 'Content-Type: application/json' --data-binary "$4")
  status=$(curl "${args[@]}") || fail "curl $2 $3 on m$1"
}
# jq -e FILTER on the answer of dmctl ARGS... through master $1
ctl_jq() {
  local m=$1 f=$2
  shift 2
  ctl "$m" "$@" | jq -e "$f"
}
# the workers' stage and source in list-member, one "name stage source" line each
members() { ctl "$1" list-member --worker | jq -r '.members[] | select(.worker) | .worker.workers[] |
  "\(.name) \(.stage) \(.source // "")"'; }
# the rows of `members` equal to $2 (lines), through master $1
members_are() { [ "$(members "$1" | sort)" = "$2" ]; }
# task $1's subtask on source $2 reports stage Running through master $3
task_running() {
  ctl "$3" query-status "$1" | jq -e --arg t "$1" --arg s "$2" '[.. | objects
    | select(.name == $t and .source == $s and .stage == "Running")] | length > 0'
}
# the worker named in query-status for task $1's subtask on source $2 (through master $3)
task_worker() {
  ctl "$3" query-status "$1" | jq -r --arg s "$2" '[.sources[]? | select(.sourceStatus.source == $s)
    | .subTaskStatus[]? | select(.stage == "Running") | .worker] | first // ""'
}
# lines in a log (to read only what a restarted process wrote)
lines() { wc -l <"$1"; }

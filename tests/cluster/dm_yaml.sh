#!/usr/bin/env bash
# DM's YAML source and task files, and DM's Source and Task JSON, on a cluster's masters (issue
# 23): the master translates the YAML into libconfig (as `dmhost convert` does) and from there it
# goes the way a libconfig file goes: the same checks and trust, the password sealed with the
# cluster key, libconfig text in etcd, the workers unchanged. Two masters, two workers, every
# request through the follower (forwarded where the leader decides) unless said otherwise.
#  1. refusals naming the user's file and line with the error code, nothing in etcd: a source file
#     with a misspelt key (11002), a task file with a YAML syntax error (11001), a source file
#     whose password-file lies outside the master's --secrets-dir (the trust of sent content:
#     11007);
#  2. dmctl operate-source create of a DM source.yaml whose password is in DM's encrypted form
#     (`dmhost encrypt --dm`): etcd holds libconfig text with `password-encrypted`, neither DM's
#     form nor the password; w1 (no DM key) is bound to it;
#  3. check-task and start-task of a DM task.yaml (mysql-instances with mydumper-config-name,
#     loader-config-name, syncer-config-name): pre-check passed, the data arrives (checksums),
#     query-status through both masters shows the subtask Running;
#  4. pause-task, update-task of the YAML with syncers' worker-count 3: etcd's text and the
#     worker's copy take it, resumed the sync runs worker-count 3 and new rows arrive;
#  5. DM's OpenAPI: POST /api/v1/sources (DM's Source JSON, 201, DM's Source answered, password
#     hidden), POST /api/v1/tasks (DM's Task JSON, 201, {task, check_result}), the task created
#     stopped, POST /api/v1/tasks/{name}/start (200): the data arrives, DM's status says Running;
#     the task paused (POST .../stop), PUT /api/v1/sources/{name} with DM's JSON: sealed in etcd,
#     the task started again, new rows arrive.
#
#   dm_yaml.sh <dmhost> <dmctl> <plugin dir> <source dir>
#
# KEEP=1 keeps the work folder.
set -euo pipefail
dmhost=$1 dmctl=$2 plugins=$3 src_dir=$4
cd "$src_dir"
work=$(mktemp -d /tmp/dmh-cluster-dmyaml-XXXXXX)
t0=$SECONDS tag=cluster_dm_yaml tasks="ytask apitask"
db=cl_yaml_db db2=cl_yaml_api meta=cl_yaml_meta meta2=cl_yaml_api_meta user=dmh_yaml_cl
. tests/crash/lib.sh
. tests/cluster/lib.sh
pw="Yaml-cl-$(openssl rand -hex 8)"
cleanup() {
  src -e "DROP USER IF EXISTS '$user'@'127.0.0.1'" 2>/dev/null || true
  cluster_drop_dbs "$db" "$db2" "$meta" "$meta2"
  cluster_cleanup
}
trap cleanup EXIT
etcd_get() { ETCDCTL_API=3 etcdctl --endpoints "$DMH_ETCD_ENDPOINTS" get --prefix "$1" 2>/dev/null; }
# the source or task file text etcd keeps under key $1
stored_text() { etcd_val "$1" | jq -r '.config // ""'; }
# dmctl through the follower must fail with code $1, its message naming $2 and not the temp copy
refused() { # code where args...
  local code=$1 where=$2 out
  shift 2
  out=$(ctl "$f" "$@" 2>&1) && fail "$* was taken: $out"
  jq -e --argjson c "$code" --arg w "$where" '.error.ErrCode == $c and (.msg | contains($w))' \
    <<<"$out" >/dev/null || fail "$*: not $code naming $where: $out"
  grep -q dmh-sent <<<"$out" && fail "$*: the refusal names the master's temp copy: $out"
  return 0
}
# DM's OpenAPI on master $1: METHOD PATH [BODY]; the status in $status, the body in $work/out
expect() { # status filter what
  [ "$status" = "$1" ] || fail "$3: HTTP $status, want $1: $(head -c 600 "$work/out")"
  jq -e "$2" "$work/out" >/dev/null || fail "$3: the answer is not $2: $(head -c 600 "$work/out")"
}

src <<SQL
DROP USER IF EXISTS '$user'@'127.0.0.1';
CREATE USER '$user'@'127.0.0.1' IDENTIFIED BY '$pw';
GRANT ALL ON *.* TO '$user'@'127.0.0.1';
SQL
cluster_drop_dbs "$db" "$db2" "$meta" "$meta2"
for d in "$db" "$db2"; do
  src -e "CREATE DATABASE \`$d\`; CREATE TABLE \`$d\`.t1 (id INT PRIMARY KEY, v VARCHAR(40));"
  src "$d" -e "INSERT INTO t1 SELECT seq, CONCAT('$d', seq) FROM seq_1_to_100;"
done
mkdir -m 0700 "$work/secrets"
(umask 077 && openssl rand -hex 32 >"$work/secrets/dm.key")
enc=$(printf '%s\n' "$pw" | "$dmhost" encrypt --dm --secret-key-path "$work/secrets/dm.key")

# DM's files, as DM's docs write them
cat >"$work/source.yaml" <<YAML
source-id: "yamlsrc"
enable-gtid: false
from:
  host: "$DMH_SOURCE_HOST"
  port: $DMH_SOURCE_PORT
  user: "$user"
  password: "$enc"
YAML
task_yaml() { # worker-count
  cat <<YAML
name: "ytask"
task-mode: all
meta-schema: "$meta"
target-database:
  host: "$DMH_TARGET_HOST"
  port: $DMH_TARGET_PORT
  user: "$DMH_TARGET_USER"
  password: ""
mysql-instances:
  - source-id: "yamlsrc"
    block-allow-list: "bal"
    mydumper-config-name: "global"
    loader-config-name: "global"
    syncer-config-name: "global"
block-allow-list:
  bal:
    do-dbs: ["$db"]
mydumpers:
  global:
    threads: 2
loaders:
  global:
    pool-size: 4
syncers:
  global:
    worker-count: $1
YAML
}
task_yaml 4 >"$work/task.yaml"
task_yaml 3 >"$work/task-new.yaml"
printf 'source-id: "badsrc"\nfrom:\n  host: "%s"\n  port: %d\n  usr: "%s"\n' \
  "$DMH_SOURCE_HOST" "$DMH_SOURCE_PORT" "$user" >"$work/typo.yaml"
printf 'name: "badtask"\ntask-mode: all\nmeta-schema: "%s\n' "$meta" >"$work/syntax.yaml"
printf 'source-id: "pwfile"\nfrom:\n  host: "%s"\n  port: %d\n  user: "%s"\n  password-file: "%s"\n' \
  "$DMH_SOURCE_HOST" "$DMH_SOURCE_PORT" "$user" "$work/outside.pw" >"$work/pwfile.yaml"
(umask 077 && printf '%s\n' "$pw" >"$work/outside.pw")

worker_flags=("${etcd_flags[@]}")
etcd_flags=("${worker_flags[@]}" --secrets-dir "$work/secrets" --secret-key-path "$work/secrets/dm.key")
master_up 1
master_up 2
etcd_flags=("${worker_flags[@]}")
start_worker w1
leader=$(etcd_val "$prefix/leader")
case $leader in m1) f=2 ;; m2) f=1 ;; *) fail "no master leads: \"$leader\"" ;; esac

# ---- 1. refusals naming the user's file and line, nothing written ----
refused 11002 "typo.yaml:5" operate-source create "$work/typo.yaml"
refused 11001 "syntax.yaml:" start-task "$work/syntax.yaml"
refused 11001 "syntax.yaml:" check-task "$work/syntax.yaml"
refused 11007 "pwfile.yaml:6" operate-source create "$work/pwfile.yaml"
[ -z "$(etcd_get "$prefix/source/")$(etcd_get "$prefix/task/")" ] ||
  fail "a refused file reached etcd: $(etcd_get "$prefix/source/") $(etcd_get "$prefix/task/")"
log "refused through m$f, naming file:line: a misspelt key (11002), a YAML syntax error (11001), a password-file outside --secrets-dir (11007)"

# ---- 2. DM's source.yaml, its password in DM's form ----
ctl "$f" operate-source create "$work/source.yaml" >"$work/ctl.out" ||
  fail "operate-source create source.yaml through m$f: $(cat "$work/ctl.out")"
stored=$(stored_text "$prefix/source/yamlsrc")
grep -q 'source-id = "yamlsrc"' <<<"$stored" || fail "etcd's source text is not libconfig: $stored"
grep -q 'password-encrypted' <<<"$stored" || fail "yamlsrc's password is not sealed: $stored"
grep -qF -- "$pw" <<<"$stored" && fail "the password is in etcd in clear: $stored"
grep -qF -- "$enc" <<<"$stored" && fail "DM's form reached etcd: $stored"
wait_for 30 "yamlsrc was not bound to w1" members_are 1 "w1 bound yamlsrc"
log "source.yaml created through m$f: etcd holds libconfig, the password sealed; bound to w1"

# ---- 3. DM's task.yaml: check-task, start-task, the data arrives ----
out=$(ctl "$f" check-task "$work/task.yaml" 2>&1) || fail "check-task task.yaml through m$f: $out"
jq -e '.msg | contains("pre-check is passed")' <<<"$out" >/dev/null || fail "check-task: $out"
ctl "$f" start-task "$work/task.yaml" >"$work/ctl.out" ||
  fail "start-task task.yaml through m$f: $(cat "$work/ctl.out")"
grep -q 'mysql-instances = ' <<<"$(stored_text "$prefix/task/ytask")" ||
  fail "etcd's task text is not libconfig: $(stored_text "$prefix/task/ytask")"
wait_for 60 "ytask does not run on w1 (through m1)" task_running ytask yamlsrc 1
wait_for 60 "ytask does not run on w1 (through m2)" task_running ytask yamlsrc 2
wait_for 60 "the target does not equal the source in $db" t1_same "$db"
[ "$(tgt -N -B -e "SELECT COUNT(*) FROM \`$db\`.t1")" = 100 ] || fail "the target has not 100 rows"
log "task.yaml checked and started through m$f: Running through both masters, target = source"

# ---- 4. update-task with the YAML ----
ctl 1 pause-task ytask >"$work/ctl.out" || fail "pause-task: $(cat "$work/ctl.out")"
paused() { ctl 1 query-status ytask | jq -e '[.. | objects | select(.name == "ytask" and
  .source == "yamlsrc" and .stage == "Paused")] | length > 0'; }
wait_for 60 "ytask is not Paused" paused
out=$(ctl "$f" update-task "$work/task-new.yaml" 2>&1) || fail "update-task task-new.yaml through m$f: $out"
jq -e '.result and ([.sources[] | select(.result)] | length == 1)' <<<"$out" >/dev/null ||
  fail "update-task did not answer for yamlsrc: $out"
grep -q 'worker-count = 3' <<<"$(stored_text "$prefix/task/ytask")" ||
  fail "etcd's task text is not the new file: $(stored_text "$prefix/task/ytask")"
ctl 1 resume-task ytask >"$work/ctl.out" || fail "resume-task: $(cat "$work/ctl.out")"
wait_for 60 "ytask does not run after resume" task_running ytask yamlsrc 1
workers_at() { ctl "$f" query-status ytask | jq -e '[.sources[].subTaskStatus[] |
  select(.syncStatus.workerCount == 3)] | length == 1'; }
wait_for 30 "the subtask does not run the new worker-count 3" workers_at
src "$db" -e "INSERT INTO t1 SELECT seq, 'after' FROM seq_101_to_120;"
wait_for 60 "the rows after the update did not arrive" t1_same "$db"
log "update-task task-new.yaml through m$f: etcd and w1 took it, worker-count 3, rows arrive"

# ---- 5. DM's OpenAPI with DM's JSON bodies ----
start_worker w2
call "$f" POST /sources "$(jq -n --arg h "$DMH_SOURCE_HOST" --argjson p "$DMH_SOURCE_PORT" \
  --arg u "$user" --arg pw "$pw" '{source: {source_name: "apisrc", host: $h, port: $p, user: $u,
  password: $pw, enable_gtid: false, enable: true}}')"
expect 201 '.source_name == "apisrc" and .password == "******" and .enable == true and
  .port > 0' "POST /api/v1/sources through m$f"
stored=$(stored_text "$prefix/source/apisrc")
grep -q 'password-encrypted' <<<"$stored" || fail "apisrc's password is not sealed: $stored"
grep -qF -- "$pw" <<<"$stored" && fail "apisrc's password is in etcd in clear: $stored"
wait_for 30 "apisrc was not bound to w2" members_are 1 "w1 bound yamlsrc
w2 bound apisrc"
call "$f" POST /tasks "$(jq -n --arg h "$DMH_TARGET_HOST" --argjson p "$DMH_TARGET_PORT" \
  --arg u "$DMH_TARGET_USER" --arg db "$db2" --arg meta "$meta2" '{task: {name: "apitask",
  task_mode: "all", meta_schema: $meta, enhance_online_schema_change: true,
  on_duplicate: "replace", target_config: {host: $h, port: $p, user: $u, password: ""},
  source_config: {source_conf: [{source_name: "apisrc"}]},
  table_migrate_rule: [{source: {source_name: "apisrc", schema: $db, table: ""}}]}}')"
expect 201 '.task.name == "apitask" and (.check_result | type == "string")' \
  "POST /api/v1/tasks through m$f"
[ "$(etcd_val "$prefix/stage/apitask/apisrc")" = Paused ] ||
  fail "apitask was not created stopped: $(etcd_kv "$prefix/stage/apitask/apisrc")"
grep -q 'mysql-instances = ' <<<"$(stored_text "$prefix/task/apitask")" ||
  fail "etcd's apitask text is not libconfig: $(stored_text "$prefix/task/apitask")"
call "$f" POST /tasks/apitask/start '{}'
expect 200 'true' "POST /api/v1/tasks/apitask/start through m$f"
wait_for 60 "apitask does not run on w2" task_running apitask apisrc 1
wait_for 60 "the target does not equal the source in $db2" t1_same "$db2"
call "$f" GET /tasks/apitask/status
expect 200 '.total == 1 and .data[0].name == "apitask" and .data[0].source_name == "apisrc" and
  .data[0].stage == "Running"' "GET /api/v1/tasks/apitask/status through m$f"
log "POST /api/v1/sources and /api/v1/tasks with DM's JSON through m$f, then /start: target = source"
# PUT of the source (DM's rule: its task paused first), the password given: sealed again
call "$f" POST /tasks/apitask/stop '{}'
expect 200 'true' "POST /api/v1/tasks/apitask/stop through m$f"
src_put() { call "$f" PUT /sources/apisrc "$(jq -n --arg h "$DMH_SOURCE_HOST" \
  --argjson p "$DMH_SOURCE_PORT" --arg u "$user" --arg pw "$pw" '{source: {source_name: "apisrc",
  host: $h, port: $p, user: $u, password: $pw, enable_gtid: false, enable: true}}')"; [ "$status" = 200 ]; }
wait_for 60 "PUT /api/v1/sources/apisrc was not taken once apitask paused" src_put
expect 200 '.source_name == "apisrc" and .password == "******"' "PUT /api/v1/sources/apisrc"
stored=$(stored_text "$prefix/source/apisrc")
grep -q 'password-encrypted' <<<"$stored" || fail "apisrc's updated password is not sealed: $stored"
grep -qF -- "$pw" <<<"$stored" && fail "apisrc's updated password is in etcd in clear: $stored"
call "$f" POST /tasks/apitask/start '{}'
expect 200 'true' "POST /api/v1/tasks/apitask/start after the source's update"
src "$db2" -e "INSERT INTO t1 SELECT seq, 'after' FROM seq_101_to_110;"
wait_for 60 "the rows after the source's update did not arrive" t1_same "$db2"
log "PUT /api/v1/sources/apisrc with DM's JSON through m$f (apitask paused): sealed in etcd; resumed, rows arrive"
if grep -rlF -- "$pw" "$work" | grep -v outside.pw; then fail "the plain password is in the files above"; fi

for p in w2 w1 m2 m1; do stop_proc "$p"; done
log "PASSED"

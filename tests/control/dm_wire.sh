#!/usr/bin/env bash
# DM's OpenAPI routes that take a Task or a Source, against the real servers (issue 23): a
# `dmhost serve --listen` driven by curl as DM's WebUI drives dm-master. The source is created
# from DM's Source JSON (POST /api/v1/sources: 201, password hidden); DM's fixture Task
# (tests/config/dm-openapi/noShardTask.json, pointed at the test's servers) is converted
# (POST /api/v1/tasks/converters: 201, its DM YAML), created (POST /api/v1/tasks: 201
# OperateTaskResponse, the task New in query-status, Stopped in DM's status, no row copied), started
# (POST .../start with no body: the rows arrive), updated while paused (PUT, a wrong name refused
# naming both), refused on DELETE while Running (force false by default) and deleted with
# force=true (204). Each of those routes answered 400 "not translated" before the wiring.
#
#   dm_wire.sh <dmhost> <dmctl> <plugin dir> <source dir>
set -euo pipefail
dmhost=$1 dmctl=$2 plugins=$3 src_dir=$4
cd "$src_dir"
eval "$(bash scripts/mariadb.sh env)"
py=/usr/bin/python3
db=dm_wire copy=dm_wire_copy meta=dm_wire_meta
work=$(mktemp -d /tmp/dmh-wire-XXXXXX)
pid=
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  [ "${KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "dm_wire: FAILED: $*" >&2
  [ -f "$work/run.log" ] && tail -40 "$work/run.log" >&2
  exit 1
}
src() { mariadb --no-defaults --protocol=tcp -h"$DMH_SOURCE_HOST" -P"$DMH_SOURCE_PORT" -u"$DMH_SOURCE_USER" ${DMH_SOURCE_PASSWORD:+-p"$DMH_SOURCE_PASSWORD"} "$@"; }
tgt() { mariadb --no-defaults --protocol=tcp -h"$DMH_TARGET_HOST" -P"$DMH_TARGET_PORT" -u"$DMH_TARGET_USER" ${DMH_TARGET_PASSWORD:+-p"$DMH_TARGET_PASSWORD"} "$@"; }

bash scripts/sample-data.sh --rows 300 --tables 1 --db "$db" >/dev/null
tgt -e "DROP DATABASE IF EXISTS $copy; DROP DATABASE IF EXISTS $db; DROP DATABASE IF EXISTS $meta"

# DM's fixture Task, pointed at the test's servers (TLS by contents and physical import go: dmhost
# refuses them, test_config_openapi), and DM's Source
"$py" - "$src_dir/tests/config/dm-openapi/noShardTask.json" "$work" <<PY
import json, sys
t = json.load(open(sys.argv[1]))
t["name"] = "dm_wire"
t["meta_schema"] = "$meta"
del t["timezone"]
t["target_config"] = {"host": "$DMH_TARGET_HOST", "port": $DMH_TARGET_PORT,
                      "user": "$DMH_TARGET_USER", "password": "$DMH_TARGET_PASSWORD"}
full = t["source_config"]["full_migrate_conf"]
for k in ("security", "pd_addr", "import_mode"):
    del full[k]
full.update({"export_threads": 2, "import_threads": 2})
t["source_config"]["incr_migrate_conf"] = {"repl_batch": 100, "repl_threads": 2, "safe_mode": False}
t["source_config"]["source_conf"] = [{"source_name": "wire-src"}]
t["table_migrate_rule"] = [{"source": {"source_name": "wire-src", "schema": "$db", "table": "sbtest1"},
                            "target": {"schema": "$copy"}}]
json.dump({"task": t}, open(sys.argv[2] + "/create.json", "w"))
t["source_config"]["incr_migrate_conf"]["repl_batch"] = 50
json.dump({"task": t}, open(sys.argv[2] + "/update.json", "w"))
s = {"source_name": "wire-src", "host": "$DMH_SOURCE_HOST", "port": $DMH_SOURCE_PORT,
     "user": "$DMH_SOURCE_USER", "password": "$DMH_SOURCE_PASSWORD", "enable_gtid": False,
     "enable": True}
json.dump({"source": s}, open(sys.argv[2] + "/source.json", "w"))
PY

ctl() { "$dmctl" --state-dir "$work/state" --timeout 60 "$@"; }
. tests/control/dm_http.sh
dm_http_serve "$work/run.log"
jget() { "$py" -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$work/out" "$1"; }

call POST /sources "$work/source.json"
expect 201 "POST /sources"
[ "$(jget 'd["source_name"], d["password"]')" = "('wire-src', '******')" ] || fail "the Source answered: $(cat "$work/out")"

"$py" -c 'import json,sys; json.dump({"task": json.load(open(sys.argv[1]))["task"]}, open(sys.argv[2], "w"))' \
  "$work/create.json" "$work/conv.json"
call POST /tasks/converters "$work/conv.json"
expect 201 "POST /tasks/converters"
yaml=$(jget 'd["task_config_file"]')
[[ "$yaml" == *"name: dm_wire"* ]] || fail "converters: no DM YAML: $(cat "$work/out")"
[ "$(jget 'd["task"]["name"]')" = dm_wire ] || fail "converters: no Task"

call POST /tasks "$work/create.json"
expect 201 "POST /tasks"
[ "$(jget 'd["check_result"]')" = "pre-check is passed. " ] || fail "check_result: $(cat "$work/out")"
[ "$(jget 'd["task"]["name"]')" = dm_wire ] || fail "the Task answered"
ctl query-status dm_wire >"$work/qs.out" 2>&1 || true
grep -q '"stage": *"New"' "$work/qs.out" || { cat "$work/qs.out"; fail "the created task is not New"; }
call GET /tasks/dm_wire/status
expect 200 "GET status"
[ "$(jget 'd["data"][0]["stage"]')" = Stopped ] || fail "DM's stage of New: $(cat "$work/out")"
[ -z "$(tgt -N -B -e "SHOW DATABASES LIKE '$copy'")" ] || fail "a created task copied before its start"

# DM's scripts: curl -X POST with no body and no Content-Type
call POST /tasks/dm_wire/start
expect 200 "POST start"
rows() { "$1" -N -B -e "SELECT COUNT(*) FROM \`$2\`.sbtest1" 2>/dev/null || echo none; }
want=$(rows src "$db")
for _ in $(seq 1 120); do
  [ "$(rows tgt "$copy")" = "$want" ] && break
  kill -0 "$pid" 2>/dev/null || fail "dmhost serve exited"
  sleep 1
done
[ "$(rows tgt "$copy")" = "$want" ] || fail "the started task did not copy $want rows"

call DELETE /tasks/dm_wire
expect 400 "DELETE a Running task without force"
grep -q "delete task with force" "$work/out" || fail "the DELETE refusal: $(cat "$work/out")"

call POST /tasks/dm_wire/stop
expect 200 "POST stop"
for _ in $(seq 1 120); do
  qs=$(ctl query-status dm_wire 2>/dev/null || true)
  [[ "$qs" =~ \"stage\":\ *\"Paused\" ]] && break
  sleep 1
done
call PUT /tasks/other "$work/update.json"
expect 400 "PUT under another name"
grep -q '\\"other\\".*\\"dm_wire\\"' "$work/out" || fail "PUT's name refusal: $(cat "$work/out")"
call PUT /tasks/dm_wire "$work/update.json"
expect 200 "PUT"
[ "$(jget 'd["task"]["source_config"]["incr_migrate_conf"]["repl_batch"]')" = 50 ] ||
  fail "PUT's answer: $(cat "$work/out")"

call DELETE "/tasks/dm_wire?force=true"
expect 204 "DELETE force=true"
ctl query-status dm_wire >"$work/qs.out" 2>&1 && fail "the deleted task is still there"
call DELETE /sources/wire-src
expect 204 "DELETE source"
# every answer above against DM's own spec (the coverage is control_dm_openapi's)
dm_http_end
echo "dm_wire: Source and Task created by DM's JSON, created task New, started by DM's start ($want" \
  "rows copied), PUT checked and applied, DELETE refused without force and done with it"
tgt -e "DROP DATABASE IF EXISTS $copy; DROP DATABASE IF EXISTS $db; DROP DATABASE IF EXISTS $meta"
src -e "DROP DATABASE IF EXISTS $db"

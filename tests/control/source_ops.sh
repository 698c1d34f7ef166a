#!/usr/bin/env bash
# The source's commands of DM's OpenAPI (issue 23) end to end against the real servers: `dmhost
# serve` with our own units, a mode-incremental task on database so_e2e (tables t1, t2 routed to
# t2r, a view v1) and a second database named with a backquote (so`q) the task does not take.
#  1. source-schemas: the source's schemas without the system ones; with DB its tables, not views,
#     a name with a backquote quoted safely;
#  2. task-tables: the tables the block-allow-list keeps, each routed (t2 -> t2r), no view, nothing
#     of so`q; the schema and table patterns; an unknown source and a bad pattern refused;
#  3. operate-source update: refused while the task runs (14012, the copy unchanged); paused, the
#     new file (another server-id) is taken, shown, and the resumed task replicates; with
#     --keep-password the stored password stays (the new file's wrong one is not used);
#  4. operate-source disable pauses the task and refuses resume-task (14013, DM's "source: X is
#     not enabled"); the flag survives a restart; enable resumes the task, and the rows written
#     meanwhile reach the target (checksum).
#
#   source_ops.sh <dmhost> <dmctl> <plugin dir> <source dir>
set -euo pipefail
dmhost=$1 dmctl=$2 plugins=$3 src_dir=$4
cd "$src_dir"
tag=source_ops db=so_e2e meta=so_e2e_meta qdb='so`q'
work=$(mktemp -d /tmp/dmh-srcops-XXXXXX)
t0=$SECONDS
. tests/crash/lib.sh
pid=""
cleanup() {
  local rc=$?
  [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
  if [ "${KEEP:-}" ]; then echo "$tag: work folder kept: $work"; else rm -rf "$work"; fi
  exit "${rc:-1}"
}
trap cleanup EXIT
fail() {
  echo "$tag: FAILED: $*" >&2
  [ -f "$work/serve.log" ] && { echo "--- end of serve.log:" >&2; tail -n 30 "$work/serve.log" >&2; }
  exit 1
}
ctl() { "$dmctl" --state-dir "$work/state" --timeout 60 "$@"; }
ctl_jq() { # filter args...
  local f=$1
  shift
  ctl "$@" >"$work/last.json" || true
  jq -e "$f" "$work/last.json" >/dev/null || { cat "$work/last.json" >&2; return 1; }
}
# A request of the protocol on the daemon's socket (the commands dmctl has not): its answer.
req() { # json
  python3 - "$work/state/dmhost.sock" "$1" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(60)
s.connect(sys.argv[1])
s.sendall(sys.argv[2].encode() + b"\n")
buf = b""
while not buf.endswith(b"\n"):
    chunk = s.recv(65536)
    if not chunk:
        break
    buf += chunk
sys.stdout.write(buf.decode())
PY
}
req_jq() { # filter json
  req "$2" >"$work/last.json" || true
  jq -e "$1" "$work/last.json" >/dev/null || { cat "$work/last.json" >&2; return 1; }
}
stage_is() { ctl_jq ".sources[0].subTaskStatus[0].stage == \"$1\"" query-status so 2>/dev/null; }
count() { "$1" -N -B -e "SELECT COUNT(*) FROM \`$db\`.\`$2\`"; }
same_count() { [ "$(count src "$1")" = "$(count tgt "$2")" ]; }

src -e "DROP DATABASE IF EXISTS \`$db\`; DROP DATABASE IF EXISTS \`so\`\`q\`; CREATE DATABASE \`$db\`;
        CREATE TABLE \`$db\`.t1 (id INT PRIMARY KEY, v VARCHAR(40));
        CREATE TABLE \`$db\`.t2 (id INT PRIMARY KEY, v VARCHAR(40));
        CREATE VIEW \`$db\`.v1 AS SELECT id FROM \`$db\`.t1;
        CREATE DATABASE \`so\`\`q\`; CREATE TABLE \`so\`\`q\`.x (id INT PRIMARY KEY);"
tgt -e "DROP DATABASE IF EXISTS \`$db\`; DROP DATABASE IF EXISTS \`$meta\`; CREATE DATABASE \`$db\`;
        CREATE TABLE \`$db\`.t1 (id INT PRIMARY KEY, v VARCHAR(40));
        CREATE TABLE \`$db\`.t2r (id INT PRIMARY KEY, v VARCHAR(40));"
read -r bfile bpos < <(src -N -B -e "SHOW MASTER STATUS" | awk '{ print $1, $2 }')
source_cfg() { # server-id password
  cat <<CFG
source-id = "so-src";
server-id = $1;
from = { host = "$DMH_SOURCE_HOST"; port = $DMH_SOURCE_PORT; user = "$DMH_SOURCE_USER"; password = "$2"; };
CFG
}
source_cfg 424201 "" >"$work/source.cfg"
source_cfg 424202 "" >"$work/source-new.cfg"
source_cfg 424203 "not-the-password" >"$work/source-keep.cfg"
{ source_cfg 424203 ""; echo "enable = false;"; } >"$work/source-off.cfg"
sed "s/port = $DMH_SOURCE_PORT;/port = 1;/" "$work/source-keep.cfg" >"$work/source-elsewhere.cfg"
# DM's YAML (what the API's translator sends) with a wrong password, kept out by --keep-password
cat >"$work/source-keep.yaml" <<YAML
source-id: "so-src"
server-id: 424204
from:
  host: "$DMH_SOURCE_HOST"
  port: $DMH_SOURCE_PORT
  user: "$DMH_SOURCE_USER"
  password: "yaml-not-the-password"
YAML
{ source_cfg 424203 ""; echo "enable = true;"; } >"$work/source-on.cfg"
cat >"$work/task.cfg" <<CFG
name = "so";
task-mode = "incremental";
meta-schema = "$meta";
target-database = { host = "$DMH_TARGET_HOST"; port = $DMH_TARGET_PORT; user = "$DMH_TARGET_USER"; password = ""; };
mysql-instances = ( {
  source-id = "so-src";
  block-allow-list = "b";
  route-rules = ["r2"];
  meta = { binlog-name = "$bfile"; binlog-pos = $bpos; };
} );
block-allow-list = { b = { do-dbs = ["$db"]; }; };
routes = { r2 = { schema-pattern = "$db"; table-pattern = "t2"; target-schema = "$db"; target-table = "t2r"; }; };
supervisor = { auto-resume = { enable = false; }; };
sync = { batch-ms = 50; };
CFG

serve_up
ctl_jq '.result' operate-source create "$work/source.cfg" || fail "operate-source create"
ctl_jq '.result' start-task "$work/task.cfg" || fail "start-task"
wait_for 30 "the task is not Running" stage_is Running
src -e "INSERT INTO \`$db\`.t1 VALUES (1, 'a'); INSERT INTO \`$db\`.t2 VALUES (1, 'x');"
wait_for 30 "t2 did not reach t2r" same_count t2 t2r
log "running: t2 routed to t2r"

# 1. source-schemas
req_jq '.result and (.schemas | index("so_e2e") != null) and (.schemas | index("so`q") != null) and
        ([.schemas[] | select(. == "mysql" or . == "information_schema" or . == "performance_schema"
          or . == "sys")] | length == 0)' '{"cmd": "source-schemas", "args": {"source": "so-src"}}' ||
  fail "source-schemas: the schemas (so_e2e and so\`q, no system schema) are not listed"
req_jq '.result and .tables == ["x"]' \
  '{"cmd": "source-schemas", "args": {"source": "so-src", "database": "so`q"}}' ||
  fail "source-schemas so\`q: not [\"x\"]"
req_jq '.result and .tables == ["t1", "t2"]' \
  '{"cmd": "source-schemas", "args": {"source": "so-src", "database": "so_e2e"}}' ||
  fail "source-schemas so_e2e: not [t1, t2] (the view v1 must not appear)"
req_jq '.result == false and .error.ErrCode == 14003' \
  '{"cmd": "source-schemas", "args": {"source": "no-such"}}' || fail "an unknown source was not refused"
log "source-schemas: schemas, tables, no view, no system schema"

# 2. task-tables
req_jq '.result and (.targets | length == 2) and
        (.targets | index({"source_schema": "so_e2e", "source_table": "t1", "target_schema": "so_e2e", "target_table": "t1"}) != null) and
        (.targets | index({"source_schema": "so_e2e", "source_table": "t2", "target_schema": "so_e2e", "target_table": "t2r"}) != null)' \
  '{"cmd": "task-tables", "args": {"name": "so", "source": "so-src"}}' ||
  fail "task-tables: not t1 -> t1 and t2 -> t2r alone"
req_jq '.result and (.targets | length == 1) and .targets[0].target_table == "t2r"' \
  '{"cmd": "task-tables", "args": {"name": "so", "source": "so-src", "schema": "^so_e2e$", "table": "2$"}}' ||
  fail "task-tables with patterns: not t2 alone"
req_jq '.result and (.targets | length == 0)' \
  '{"cmd": "task-tables", "args": {"name": "so", "source": "so-src", "schema": "q"}}' ||
  fail "task-tables: so\`q's tables (not in the block-allow-list) were listed"
req_jq '.result == false and .error.ErrCode == 14002' \
  '{"cmd": "task-tables", "args": {"name": "so", "source": "so-src", "table": "("}}' ||
  fail "a bad table pattern was not refused"
req_jq '.result == false and .error.ErrCode == 14003' \
  '{"cmd": "task-tables", "args": {"name": "so", "source": "other"}}' ||
  fail "task-tables of a source the task does not read was not refused"
log "task-tables: kept tables routed, patterns, refusals"

# 3. operate-source update
copy="$work/state/sources/so-src/source.cfg"
ctl_jq '.result == false and .error.ErrCode == 14012 and (.msg | contains("can only be updated")) and
        (.msg | contains("so"))' operate-source update "$work/source-new.cfg" ||
  fail "update of a source with a Running task was not refused with 14012"
cmp -s "$copy" "$work/source.cfg" || fail "a refused update changed the source's copy"
stage_is Running || fail "a refused update moved the task"
ctl_jq '.result' pause-task so || fail "pause-task"
ctl_jq '.result' operate-source update "$work/source-new.cfg" || fail "update of the paused task's source"
cmp -s "$copy" "$work/source-new.cfg" || fail "the source's copy is not the new file"
ctl_jq '.sources[0].serverID == 424202 and .sources[0].enable' operate-source show -s so-src ||
  fail "operate-source show does not give the new server-id"
ctl_jq '.result' resume-task so || fail "resume-task after the update"
wait_for 30 "the task is not Running after the update" stage_is Running
src -e "INSERT INTO \`$db\`.t1 VALUES (2, 'b'); INSERT INTO \`$db\`.t2 VALUES (2, 'y');"
wait_for 30 "t1 did not reach the target after the update" same_count t1 t1
wait_for 30 "t2 did not reach t2r after the update" same_count t2 t2r
# --keep-password: the new file's password is not taken, the stored (empty) one is
ctl_jq '.result' pause-task so || fail "pause-task"
grep -q 'port = 1;' "$work/source-elsewhere.cfg" || fail "precondition: the other server's file"
ctl_jq '.result == false and .error.ErrCode == 11004 and (.msg | contains("keeps the password for the server"))' \
  operate-source update "$work/source-elsewhere.cfg" --keep-password ||
  fail "--keep-password with another server was not refused"
ctl_jq '.sources[0].serverID == 424202' operate-source show -s so-src || fail "a refused update changed the source"
ctl_jq '.result' operate-source update "$work/source-keep.cfg" --keep-password ||
  fail "update --keep-password"
grep -q 'not-the-password' "$copy" && fail "--keep-password stored the new file's password"
ctl_jq '.sources[0].serverID == 424203' operate-source show -s so-src ||
  fail "operate-source show does not give the kept-password file's server-id"
ctl_jq '.result' operate-source update "$work/source-keep.yaml" --keep-password ||
  fail "update --keep-password of a YAML file"
grep -q 'not-the-password' "$copy" && fail "--keep-password stored the YAML file's password"
ctl_jq '.sources[0].serverID == 424204' operate-source show -s so-src ||
  fail "operate-source show does not give the YAML file's server-id"
ctl_jq '.result' resume-task so || fail "resume-task after update --keep-password"
src -e "INSERT INTO \`$db\`.t1 VALUES (3, 'c');"
wait_for 30 "t1 did not reach the target after update --keep-password" same_count t1 t1
stage_is Running || fail "the task is not Running with the kept password"
# DM's `enable` in the file: an update saying false disables the source, true enables it again
ctl_jq '.result' pause-task so || fail "pause-task"
ctl_jq '.result' operate-source update "$work/source-off.cfg" || fail "update with enable = false"
ctl_jq '.sources[0].enable == false' operate-source show -s so-src || fail "enable = false did not disable"
ctl_jq '.result == false and .error.ErrCode == 14013' resume-task so ||
  fail "resume-task after an update with enable = false was not refused"
ctl_jq '.result' operate-source update "$work/source-on.cfg" || fail "update with enable = true"
ctl_jq '.sources[0].enable' operate-source show -s so-src || fail "enable = true did not enable"
ctl_jq '.result' resume-task so || fail "resume-task after an update with enable = true"
wait_for 30 "the task is not Running after the enabling update" stage_is Running
log "update: refused while Running, taken when paused, --keep-password keeps the stored password, enable in the file"

# 4. disable / enable
ctl_jq '.result and (.tasks | length == 1) and .tasks[0].task == "so" and .tasks[0].result' \
  operate-source disable -s so-src || fail "operate-source disable"
stage_is Paused || fail "disable did not pause the task"
ctl_jq '.result == false and .error.ErrCode == 14013 and (.msg | contains("source: so-src is not enabled"))' \
  resume-task so || fail "resume-task on a disabled source was not refused with DM's message"
src -e "INSERT INTO \`$db\`.t1 VALUES (4, 'd'); INSERT INTO \`$db\`.t2 VALUES (4, 'z');"
kill -TERM "$pid"
wait "$pid" || fail "dmhost serve did not exit 0 on SIGTERM"
pid=""
jq -e '.sources[0].enable == false and .tasks[0].pausedBySource == true' "$work/state/state.json" \
  >/dev/null || fail "state.json does not keep the disabled flag"
serve_up
ctl_jq '.sources[0].enable == false' operate-source show -s so-src || fail "the flag did not survive the restart"
stage_is Running && fail "the task of a disabled source runs after the restart"
ctl_jq '.result == false and .error.ErrCode == 14013' resume-task so ||
  fail "resume-task after the restart was not refused"
[ "$(count tgt t1)" = 3 ] || fail "rows reached the target while the source was disabled"
ctl_jq '.result and .tasks[0].task == "so" and .tasks[0].result' operate-source enable -s so-src ||
  fail "operate-source enable"
wait_for 30 "enable did not resume the task" stage_is Running
wait_for 30 "t1 did not reach the target after enable" same_count t1 t1
wait_for 30 "t2 did not reach t2r after enable" same_count t2 t2r
[ "$(tgt -N -B -e "CHECKSUM TABLE \`$db\`.t1" | awk '{print $2}')" = \
  "$(src -N -B -e "CHECKSUM TABLE \`$db\`.t1" | awk '{print $2}')" ] || fail "t1 differs from the source"
[ "$(tgt -N -B -e "SELECT GROUP_CONCAT(id, v ORDER BY id) FROM \`$db\`.t2r")" = \
  "$(src -N -B -e "SELECT GROUP_CONCAT(id, v ORDER BY id) FROM \`$db\`.t2")" ] || fail "t2r differs from t2"
ctl_jq '.sources[0].enable' operate-source show -s so-src || fail "show does not say enabled"
ctl stop-task so >/dev/null || true
src -e "DROP DATABASE IF EXISTS \`so\`\`q\`"
log "disable paused, refused resume across a restart, enable resumed; passed"

#!/usr/bin/env bash
# DM's dmctl command lines (issue 23), as DM's own tests dm/tests/dmctl_basic and
# dm/tests/dmctl_command write them, against a real `dmhost serve` with a source and an
# incremental task, each answer's shape checked with jq (DM's `result`, `msg`, `sources[]`):
#  - -s SOURCE on pause-task/resume-task/query-status (repeated, "a,b", before the command) acts on
#    those sources' subtasks only; a source not the task's is refused, so is start-task -s;
#  - the global flags after the command, DM's --config file (master-addr over HTTP, rpc-timeout),
#    --ssl-* as the --tls-* flags, DM_MASTER_ADDR;
#  - the interactive mode: a command per line of stdin, `exit` ends;
#  - binlog-schema list/update/delete on the paused task (its refusals while Running);
#  - DM's older names (operate-schema, handle-error, show-ddl-locks, unlock-ddl-lock) answer as the
#    lines they are translated into; a DM flag meaning nothing here is refused by name.
#
#   dmctl_dm.sh <dmhost> <dmctl> <plugin dir> <source dir>
set -euo pipefail
dmhost=$1 dmctl=$2 plugins=$3 src_dir=$4
cd "$src_dir"
tag=dmctl_dm db=dmctl_dm meta=dmctl_dm_meta task=dmctl_dm
work=$(mktemp -d /tmp/dmh-dmctl-dm-XXXXXX)
t0=$SECONDS
. tests/crash/lib.sh
serve_begin
ctl() { "$dmctl" --state-dir "$work/state" --timeout 60 "$@"; }
# expect FILTER DMCTL-ARGS...: jq -e FILTER holds on dmctl's answer (dmctl's own flags given)
expect_raw() {
  local f=$1
  shift
  "$dmctl" "$@" >"$work/last.json" 2>&1 || true
  jq -e "$f" "$work/last.json" >/dev/null || { cat "$work/last.json" >&2; fail "dmctl $*: not $f"; }
}
expect() { # FILTER COMMAND...: through the socket
  local f=$1
  shift
  expect_raw "$f" --state-dir "$work/state" --timeout 60 "$@"
}
stage() { ctl query-status "$task" 2>/dev/null | jq -r '.sources[0].subTaskStatus[0].stage'; }
stage_is() { [ "$(stage)" = "$1" ]; }

src -e "DROP DATABASE IF EXISTS \`$db\`; CREATE DATABASE \`$db\`; CREATE TABLE \`$db\`.t (id INT PRIMARY KEY)"
tgt -e "DROP DATABASE IF EXISTS \`$db\`; DROP DATABASE IF EXISTS \`$meta\`; CREATE DATABASE \`$db\`;
        CREATE TABLE \`$db\`.t (id INT PRIMARY KEY)"
read -r f1 p1 < <(src -N -B -e "SHOW MASTER STATUS" | awk '{ print $1, $2 }')
crash_source_cfg s1
cat >"$work/task.cfg" <<CFG
name = "$task";
task-mode = "incremental";
meta-schema = "$meta";
target-database = { host = "$DMH_TARGET_HOST"; port = $DMH_TARGET_PORT; user = "$DMH_TARGET_USER"; password = ""; };
mysql-instances = ( { source-id = "s1"; block-allow-list = "b"; meta = { binlog-name = "$f1"; binlog-pos = $p1; }; } );
block-allow-list = { b = { do-dbs = ["$db"]; }; };
supervisor = { auto-resume = { enable = false; }; };
sync = { batch-ms = 50; };
CFG

serve_listen "$dmhost" "$plugins" || fail "dmhost serve did not listen"
wait_for 20 "dmhost serve did not answer" ctl query-status >/dev/null
expect '.result' operate-source create "$work/source.cfg"
# DM's "check-task $TASK_CONF -e N -w N": at most N failures and N warnings shown, no passed check
ctl check-task "$work/task.cfg" >"$work/check.json" || true
jq -e '(.checkResult.results | length) > 0' "$work/check.json" >/dev/null ||
  fail "precondition: check-task lists no check"
expect '(.checkResult.results | length) == 0 and .checkResult.summary.total > 0' \
  check-task "$work/task.cfg" -e 0 -w 0
expect '[.checkResult.results[] | select(.state == "pass")] == []' check-task "$work/task.cfg" -e 5
expect '.result == false and (.msg | contains("-w takes a count"))' check-task "$work/task.cfg" -w x
expect '.result and (.sources | length == 1)' start-task "$work/task.cfg"
wait_for 30 "the task is not Running" stage_is Running
log "task running on s1"

# -s: DM's dmctl_command lines "pause-task -s mysql-replica-01", "query-status -s $SOURCE_ID1,..."
# (a `dmhost serve` binds one source, as DM's worker: the master's -s over several is test_master's)
expect '.result and ([.tasks[] | select(.taskName == "'$task'") | .sources[].source] == ["s1"])' \
  query-status -s s1,s2
expect '.result and ([.tasks[] | select(.taskName == "'$task'")] == [])' query-status -s s2
expect '.result and (.sources | length == 1) and .sources[0].sourceStatus.source == "s1"' \
  query-status -s s1 "$task"
expect '.result == false and (.msg | contains("no subtask")) and (.msg | contains("s2"))' \
  query-status -s s2 "$task"
expect '.result and (.sources | length == 1) and .sources[0].source == "s1"' pause-task -s s1 "$task"
wait_for 30 "pause-task -s s1 did not pause the task" stage_is Paused
expect '.result == false and (.msg | contains("no subtask")) and (.msg | contains("xxx"))' \
  resume-task -s xxx "$task"
expect '.result == false and (.msg | contains("-s is not an option")) ' check-task -s s1 "$work/task.cfg"
expect '.result == false and (.msg | contains("starts a task on all of its sources"))' \
  start-task -s s1 "$work/task.cfg"
stage_is Paused || fail "a refused command moved the task"
expect '.result and (.sources | length == 1)' resume-task --source s1 "$task"
wait_for 30 "resume-task -s s1 did not resume the task" stage_is Running
# DM's -s before the command (a flag of every command there)
expect '.result and .sources[0].sourceStatus.source == "s1" and (.sources | length == 1)' \
  -s s1 query-status "$task"
log "-s on pause/resume/query-status; refused on start/check-task"

# DM's "query-status test --more", "start-relay -s $SOURCE_ID1", "pause-relay -s ...", "resume-relay"
expect '.result and (.sources | length == 1)' query-status "$task" --more
relay_expected() { ctl operate-source show s1 | jq -r '[.. | .relayExpected? // empty][0]'; }
expect '.result' start-relay -s s1
[ "$(relay_expected)" = Running ] || fail "start-relay did not set the relay's expected stage"
expect '.result and ([.sources[] | .source] == ["s1"]) and .sources[0].result' pause-relay -s s1
[ "$(relay_expected)" = Stopped ] || fail "pause-relay did not stop the relay"
expect '.result == false and (.sources | length == 2) and .sources[0].result and
        (.sources[1].result == false) and .sources[1].source == "nope"' resume-relay -s s1,nope
[ "$(relay_expected)" = Running ] || fail "resume-relay did not start the relay"
expect '.result == false and (.msg | contains("-s SOURCE is required"))' pause-relay
expect '.result' stop-relay -s s1
log "query-status --more, pause-relay/resume-relay"

# DM's [task-name | task-file]: "pause-task $cur/conf/dm-task.yaml" (the name read from the file)
expect '.result and (.sources | length == 1)' pause-task "$work/task.cfg"
wait_for 30 "pause-task TASK-FILE did not pause the task" stage_is Paused
printf '# DM task file\n---\nname: %s\ntask-mode: incremental\n' "$task" >"$work/dm-task.yaml"
expect '.result and (.sources[0].subTaskStatus[0].stage == "Paused")' query-status "$work/dm-task.yaml"
expect '.result' resume-task "$work/dm-task.yaml"
wait_for 30 "resume-task TASK-FILE did not resume the task" stage_is Running
printf 'task-mode: all\n' >"$work/noname.yaml"
expect '.result == false and (.msg | contains("without a top-level task name"))' stop-task "$work/noname.yaml"
# DM's binlog-schema (dm/tests/dmctl_basic's "binlog-schema list|update|delete -s SOURCE TASK DB
# TABLE"): the sync's schema tracker, refused while Running (DM's words), then on the paused task
expect '.result == false and (.msg | contains("current stage is Running but not paused"))' \
  binlog-schema list -s s1 "$task"
expect '.result == false and (.msg | contains("-s SOURCE is required"))' binlog-schema list "$task"
expect '.result and (.sources | length == 1)' pause-task "$task"
wait_for 30 "pause-task did not pause the task" stage_is Paused
expect '.result == false and (.msg | contains("from-source and from-target can not be used together"))' \
  binlog-schema update -s s1 "$task" "$db" t --from-source --from-target
expect '.result and .sources[0].result' binlog-schema update -s s1 "$task" "$db" t --from-target
expect '.result and (.sources[0].items | index("'$db'") != null) and (.sources[0].msg | contains("\"'$db'\""))' \
  binlog-schema list -s s1 "$task"
expect '.result and .sources[0].items == ["t"]' binlog-schema list -s s1 "$task" "$db"
expect '.result and (.sources[0].msg | startswith("CREATE TABLE `t`"))' \
  binlog-schema list -s s1 "$task" "$db" t
printf 'CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(7))\n' >"$work/t.sql"
expect '.result' binlog-schema update -s s1 "$task" "$db" t "$work/t.sql" --flush --sync
expect '.result and (.sources[0].msg | contains("`v` varchar(7)"))' \
  binlog-schema list -s s1 "$task" "$db" t
# the attack: a client on the socket names a file of the daemon's and no content; the daemon must
# not read it (its text would come back in the target's syntax error)
printf 'secret-of-the-daemon\n' >"$work/daemon-only.txt"
python3 - "$work/state/dmhost.sock" "$task" "$db" "$work/daemon-only.txt" >"$work/raw.json" <<'PY'
import json, socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
req = {"cmd": "binlog-schema", "args": {"op": "update", "name": sys.argv[2], "source": "s1",
       "database": sys.argv[3], "table": "t", "path": sys.argv[4]}}
s.sendall(json.dumps(req).encode() + b"\n")
print(s.makefile().readline())
PY
jq -e '.result == false and (.msg | contains("must come in the request")) and
       ((tostring | contains("secret-of-the-daemon")) | not)' "$work/raw.json" >/dev/null ||
  fail "binlog-schema read a file the client named: $(cat "$work/raw.json")"
expect '.result and (.sources[0].msg | contains("`v` varchar(7)"))' \
  binlog-schema list -s s1 "$task" "$db" t
expect '.result' binlog-schema delete -s s1 "$task" "$db" t
expect '.result == false and (.sources[0].msg | contains("holds no structure"))' \
  binlog-schema list -s s1 "$task" "$db" t
# DM's older names (DM's hidden operate-schema, handle-error, show-ddl-locks, unlock-ddl-lock):
# each old line answers exactly as the new line it is translated into (both asked in turn, a
# line that changes something undone in between)
same() { # LABEL: the answers of ans old ... and ans new ... are one JSON
  cmp -s <(jq -S . "$work/old.json") <(jq -S . "$work/new.json") ||
    { diff <(jq -S . "$work/old.json") <(jq -S . "$work/new.json") >&2; fail "$1: the old line answers otherwise"; }
  jq -e . "$work/old.json" >/dev/null || fail "$1: no JSON answer"
}
ans() { # old|new COMMAND...
  local f=$1
  shift
  ctl "$@" >"$work/$f.json" 2>&1 || true
}
ans old operate-schema set -s s1 "$task" -d "$db" -t t "$work/t.sql" --flush --sync
ans new binlog-schema update -s s1 "$task" "$db" t "$work/t.sql" --flush --sync
same "operate-schema set"
jq -e .result "$work/old.json" >/dev/null || fail "precondition: operate-schema set failed: $(cat "$work/old.json")"
ans old operate-schema get -s s1 "$work/task.cfg" -d "$db" -t t --flush
ans new binlog-schema list -s s1 "$task" "$db" t
same "operate-schema get (a task file)"
jq -e '.sources[0].msg | contains("`v` varchar(7)")' "$work/old.json" >/dev/null ||
  fail "precondition: operate-schema get shows no structure: $(cat "$work/old.json")"
ans old operate-schema remove --source s1 "$task" --database "$db" --table t --sync=false
ctl binlog-schema update -s s1 "$task" "$db" t "$work/t.sql" >/dev/null
ans new binlog-schema delete -s s1 "$task" "$db" t
same "operate-schema remove"
ans old operate-schema get -s s1 "$task" -d "$db" -t t
ans new binlog-schema list -s s1 "$task" "$db" t
same "operate-schema get (removed)"
jq -e '.result == false' "$work/old.json" >/dev/null || fail "operate-schema remove left the structure"
ans old handle-error "$task" -b "$f1:$p1" replace "ALTER TABLE t ADD c INT" "SELECT 1"
ctl binlog revert "$task" -b "$f1:$p1" >/dev/null
ans new binlog replace "$task" -b "$f1:$p1" "ALTER TABLE t ADD c INT" "SELECT 1"
same "handle-error replace"
jq -e .result "$work/old.json" >/dev/null || fail "precondition: handle-error replace failed: $(cat "$work/old.json")"
ans old handle-error "$work/task.cfg" revert -b "$f1:$p1"
ctl binlog replace "$task" -b "$f1:$p1" "ALTER TABLE t ADD c INT" "SELECT 1" >/dev/null
ans new binlog revert "$task" -b "$f1:$p1"
same "handle-error revert (a task file)"
ans old -s s1 handle-error "$task" skip
ctl binlog revert "$task" >/dev/null
ans new binlog skip "$task" -s s1
same "handle-error skip"
ctl binlog revert "$task" >/dev/null
ans old show-ddl-locks
ans new shard-ddl-lock
same "show-ddl-locks"
ans old show-ddl-locks "$work/task.cfg"
ans new shard-ddl-lock "$task"
same "show-ddl-locks TASK-FILE"
ans old unlock-ddl-lock "$task-\`$db\`.\`t\`" -f -o s1
ans new shard-ddl-lock unlock "$task-\`$db\`.\`t\`" --force-remove --owner s1
same "unlock-ddl-lock"
# a flag of DM's that means nothing here is refused by name, nothing sent
expect '.result == false and (.msg | contains("DM'"'"'s -s is refused"))' show-ddl-locks -s s1 "$task"
expect '.result == false and (.msg | contains("DM'"'"'s --flush=false is refused"))' \
  operate-schema set -s s1 "$task" -d "$db" -t t "$work/t.sql" --flush=false
expect '.result == false and (.msg | contains("invalid operation \"inject\""))' handle-error "$task" inject
expect '.result == false and (.msg | contains("-d/--database is required"))' operate-schema get -s s1 "$task" -t t
log "DM's older names: operate-schema, handle-error, show-ddl-locks, unlock-ddl-lock"
expect '.result' resume-task "$task"
wait_for 30 "resume-task did not resume the task" stage_is Running
log "binlog-schema list/update/delete"

# DM's commands dmhost does not serve: refused locally, saying what to do instead
expect '.result == false and (.msg | contains("dmhost encrypt"))' encrypt 123456
# DM's --start-time: check-task takes it and answers as without it; start-task's is
# control_start_time's (here the task is mode all and exists: refused for that, not the flag)
ctl check-task "$work/task.cfg" --start-time '2021-10-21 00:01:00' >"$work/check-st.json" || true
[ "$(jq -c .checkResult.summary "$work/check-st.json")" = "$(jq -c .checkResult.summary "$work/check.json")" ] ||
  fail "check-task --start-time does not answer as check-task: $(cat "$work/check-st.json")"
expect '.result == false and (.msg | contains("already exists"))' \
  start-task "$work/task.cfg" --start-time '2021-10-21 00:01:00'
expect '.result == false and (.msg | contains("an option of start-task, check-task and validation start only"))' \
  query-status --start-time '2021-10-21 00:01:00'
expect '.result == false and (.msg | contains("a check removes nothing"))' check-task --remove-meta "$work/task.cfg"
log "task files for names, DM's refused commands"

# global flags after the command; DM's --config; --ssl-*; DM_MASTER_ADDR
expect_raw '.result and (.sources | length == 1)' query-status "$task" --state-dir "$work/state"
printf '# dmctl.toml as DM writes it\nmaster-addr = "%s"\nrpc-timeout = "1m"\n' "$addr" >"$work/dmctl.toml"
expect_raw '.result and (.sources | length == 1)' --config "$work/dmctl.toml" query-status "$task"
expect_raw '.result and (.sources | length == 1)' query-status -s s1 "$task" --config "$work/dmctl.toml"
printf 'master-addr = "%s"\nmaster-adr = "x"\n' "$addr" >"$work/bad.toml"
expect_raw '.result == false and (.msg | contains("bad.toml:2:")) and (.msg | contains("master-adr"))' \
  --config "$work/bad.toml" query-status
expect_raw '.result == false and (.msg | contains("go with --master-addr"))' \
  query-status --ssl-ca ca.pem --ssl-cert c.pem --ssl-key k.pem --state-dir "$work/state"
expect_raw '.result == false and (.msg | contains("--tls-key"))' \
  --master-addr "$addr" --ssl-ca ca.pem --ssl-cert c.pem query-status
expect_raw '.result == false and (.msg | contains("not a number of seconds"))' \
  --state-dir "$work/state" query-status --rpc-timeout 5x
DM_MASTER_ADDR=$addr expect_raw '.result and (.sources | length == 1)' query-status "$task"
log "global flags after the command, --config, --ssl-*, DM_MASTER_ADDR"

# the interactive mode: one answer per command line, `exit` ends (the line after it is not run)
printf 'query-status -s s1 %s\n\n  query-status "%s"  \nexit\npause-task %s\n' "$task" "$task" "$task" |
  "$dmctl" --state-dir "$work/state" >"$work/interactive.json" || fail "the interactive mode did not exit 0"
jq -s -e 'length == 2 and (.[0].sources | length == 1) and (.[1].sources | length == 1)' \
  "$work/interactive.json" >/dev/null || { cat "$work/interactive.json" >&2; fail "interactive answers"; }
stage_is Running || fail "the line after exit was run"
log "interactive mode"

expect '.result' stop-task "$task"
# DM's "operate-source stop $SOURCE_ID1 $SOURCE_ID2": one answer, an entry per source
expect '.result == false and (.sources | length == 2) and (.sources[0].result == false) and
        .sources[1].result and .sources[1].source == "s1"' operate-source stop nope s1
expect '.result and (.sources | length == 0)' operate-source show
log "operate-source with several sources"
log "passed"

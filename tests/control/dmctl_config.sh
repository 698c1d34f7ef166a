#!/usr/bin/env bash
# dmctl config|get-config task|source NAME (DM's, issue 23) against a real `dmhost serve`: the
# answer is DM's {result, msg, cfg} with the stored file's text, and a password is never in it.
# The attack: a source in DM's YAML and a task in libconfig whose accounts' passwords hold quotes
# and a newline (real accounts on the source and target, so the daemon takes the files); the
# stored copies hold the passwords (precondition), the answers, over the socket and over HTTP,
# hold no piece of them and "******" instead; an unknown name is 14003. config master|worker NAME:
# the daemon's own command line (started with DM's key file: its path shows, its bytes never).
# operate-source --print-sample-config: DM's sample, printed without a daemon, which dmhost binds.
# config export|import (DM's): the files in DM's folders (0700, 0600, passwords masked, no file
# written over); import refuses a masked password before sending anything, keeps what exists,
# creates and starts the rest; the restored passwords carry a new row to the target.
#
#   dmctl_config.sh <dmhost> <dmctl> <plugin dir> <source dir>
set -euo pipefail
dmhost=$1 dmctl=$2 plugins=$3 src_dir=$4
cd "$src_dir"
tag=dmctl_config db=dmctl_config meta=dmctl_config_meta task=dmctl_config user=dmctl_config
work=$(mktemp -d /tmp/dmh-dmctl-config-XXXXXX)
t0=$SECONDS
. tests/crash/lib.sh
serve_begin
ctl() { "$dmctl" --state-dir "$work/state" --timeout 60 "$@"; }
expect() { # FILTER COMMAND...: through the socket
  local f=$1
  shift
  "$dmctl" --state-dir "$work/state" --timeout 60 "$@" >"$work/last.json" 2>&1 || true
  jq -e "$f" "$work/last.json" >/dev/null || { cat "$work/last.json" >&2; fail "dmctl $*: not $f"; }
}
# no piece of either password in FILE
clean() {
  local hits
  hits=$(grep -c -e 'Cf-Src' -e 'Cf-Tgt' -e 'line-two' "$1" || true)
  [ "$hits" = 0 ] || { cat "$1" >&2; fail "$2: a password is in the answer"; }
}

# the passwords: SQL literals (MariaDB's escapes), and as the files write them
src_pw_sql="'Cf-Src-q\"u''o\\\\te\\nline-two-s'"
tgt_pw_sql="'Cf-Tgt-\"x''y\\nline-two-t'"
cleanup_users() {
  src -e "DROP USER IF EXISTS '$user'@'%'" || true
  tgt -e "DROP USER IF EXISTS '$user'@'%'" || true
}
trap 'cleanup_users; serve_cleanup' EXIT
cleanup_users
src -e "DROP DATABASE IF EXISTS \`$db\`; CREATE DATABASE \`$db\`; CREATE TABLE \`$db\`.t (id INT PRIMARY KEY);
        CREATE USER '$user'@'%' IDENTIFIED BY $src_pw_sql; GRANT ALL ON *.* TO '$user'@'%'"
tgt -e "DROP DATABASE IF EXISTS \`$db\`; DROP DATABASE IF EXISTS \`$meta\`; CREATE DATABASE \`$db\`;
        CREATE TABLE \`$db\`.t (id INT PRIMARY KEY);
        CREATE USER '$user'@'%' IDENTIFIED BY $tgt_pw_sql; GRANT ALL ON *.* TO '$user'@'%'"
read -r f1 p1 < <(src -N -B -e "SHOW MASTER STATUS" | awk '{ print $1, $2 }')
# DM's YAML source (all_mode-source1.yaml's shape): a double-quoted password with \" \\ \n
cat >"$work/source.yaml" <<CFG
# MySQL Configuration.
source-id: $tag
enable-gtid: false
from:
  host: $DMH_SOURCE_HOST
  user: $user
  password: "Cf-Src-q\"u'o\\\\te\nline-two-s"
  port: $DMH_SOURCE_PORT
CFG
cat >"$work/task.cfg" <<CFG
name = "$task";
task-mode = "incremental";
meta-schema = "$meta";
target-database = { host = "$DMH_TARGET_HOST"; port = $DMH_TARGET_PORT; user = "$user";
  password = "Cf-Tgt-\"x'y"
             "\nline-two-t"; };
mysql-instances = ( { source-id = "$tag"; block-allow-list = "b"; meta = { binlog-name = "$f1"; binlog-pos = $p1; }; } );
block-allow-list = { b = { do-dbs = ["$db"]; }; };
supervisor = { auto-resume = { enable = false; }; };
CFG

# DM's key of encrypted passwords (a secret file): config master|worker names it, never its bytes
openssl rand -hex 32 >"$work/dm.key"
chmod 600 "$work/dm.key"
dm_key=$(cat "$work/dm.key")
serve_listen "$dmhost" "$plugins" --secret-key-path "$work/dm.key" || fail "dmhost serve did not listen"
for _ in $(seq 1 200); do ctl query-status >/dev/null 2>&1 && break; sleep 0.1; done
expect '.result' operate-source create "$work/source.yaml"
expect '.result' start-task "$work/task.cfg"
# precondition: the stored copies hold the passwords (else the answers prove nothing)
[ "$(grep -rl -e 'Cf-Src' -e 'Cf-Tgt' "$work/state" | wc -l)" -ge 2 ] ||
  fail "precondition: the state dir's copies do not hold the passwords"

expect '.result and .msg == "" and (.cfg | contains("source-id: '$tag'")) and
        (.cfg | contains("  password: \"******\"\n  port: '$DMH_SOURCE_PORT'"))' config source "$tag"
clean "$work/last.json" "config source"
expect '.result and (.cfg | contains("name = \"'$task'\";")) and
        (.cfg | contains("password = \"******\"; };"))' config task "$task"
clean "$work/last.json" "config task"
expect '.result and (.cfg | contains("password: \"******\""))' get-config source "$tag"
clean "$work/last.json" "get-config source"
expect '.result and (.cfg | contains("mysql-instances"))' get-config task "$task"
clean "$work/last.json" "get-config task"
log "config/get-config task|source: the stored text, passwords masked"

# over HTTP (dmctl --master-addr): the same answer
"$dmctl" --master-addr "$addr" --timeout 60 config task "$task" >"$work/http.json" || true
jq -e '.result and (.cfg | contains("******"))' "$work/http.json" >/dev/null ||
  { cat "$work/http.json" >&2; fail "config task over HTTP"; }
clean "$work/http.json" "config task over HTTP"
log "over HTTP"

# -p FILE (DM's config --path; get-config's -f): written on dmctl's side, 0600, the masked text;
# never over an existing file or through a link planted at the name
expect '.result and .msg == "write config to file '"$work"'/out.cfg succeed" and .cfg == ""' \
  config task "$task" -p "$work/out.cfg"
[ "$(stat -c %a "$work/out.cfg")" = 600 ] || fail "the -p file is not 0600"
grep -q 'password = "\*\*\*\*\*\*"; };' "$work/out.cfg" || fail "the -p file: $(cat "$work/out.cfg")"
clean "$work/out.cfg" "config task -p"
expect '.result and (.msg | contains("out.yaml succeed"))' get-config source "$tag" -f "$work/out.yaml"
cmp -s "$work/out.yaml" <(jq -r -j .cfg <(ctl config source "$tag")) || fail "-f differs from cfg"
echo keep >"$work/kept"
ln -s "$work/kept" "$work/link"
expect '.result == false and (.msg | contains("never overwritten"))' config task "$task" -p "$work/kept"
expect '.result == false and (.msg | contains("cannot write"))' config task "$task" --path "$work/link"
[ "$(cat "$work/kept")" = keep ] || fail "an existing file was written"
expect '.result == false and (.msg | contains("needs a file name"))' config task "$task" -p
log "-p FILE / -f FILE"

expect '.result == false and .error.ErrCode == 14003 and (.msg | contains("nope"))' config task nope
expect '.result == false and .error.ErrCode == 14003' config source nope
expect '.result == false and (.msg | contains("not one of task, source, master, worker"))' \
  config tasks "$task"
log "refusals"

# config master|worker NAME (DM's GetCfg): the daemon is the cluster's one master and worker, named
# as list-member names it; its settings are its command line, the key file by path only
self=$(ctl list-member --worker | jq -r '.members[0].worker.workers[0].name')
[ -n "$self" ] && [ "$self" != null ] || fail "list-member named no worker"
keyfile_line="--secret-key-path $work/dm.key"
for what in master worker; do
  expect '.result and .msg == "" and .format == "flags" and
          (.cfg | split("\n") | index("--state-dir '"$work"'/state") != null) and
          (.cfg | split("\n") | index("--listen '"$addr"'") != null) and
          (.cfg | split("\n") | index("'"$keyfile_line"'") != null) and
          (.cfg | split("\n") | index("--log-level info") != null)' config "$what" "$self"
  grep -q "$dm_key" "$work/last.json" && fail "config $what: the key file's contents are in the answer"
  expect '.result and (.cfg | contains("--secret-key-path"))' get-config "$what" "$self"
  expect '.result == false and .error.ErrCode == 14003 and (.msg | startswith("'"$what"' not found"))' \
    config "$what" nope
  # over HTTP: the same, the state dir given relative to itself as every path there
  "$dmctl" --master-addr "$addr" --timeout 60 config "$what" "$self" >"$work/http.json" || true
  jq -e '.result and (.cfg | split("\n") | index("--state-dir .") != null) and
         (.cfg | contains("'"$keyfile_line"'"))' "$work/http.json" >/dev/null ||
    { cat "$work/http.json" >&2; fail "config $what over HTTP"; }
  grep -q "$dm_key" "$work/http.json" && fail "config $what over HTTP: the key's contents are in it"
done
expect '.result and (.msg | contains("succeed")) and .cfg == ""' config worker "$self" -p "$work/worker.flags"
grep -qx -- "$keyfile_line" "$work/worker.flags" || fail "-p: $(cat "$work/worker.flags")"
log "config master|worker: the daemon's command line, no secret in it"

# DM's config export|import: the whole loop against this daemon, DM's layout (sources/, tasks/)
stage() { ctl query-status "$task" 2>/dev/null | jq -r '.sources[0].subTaskStatus[0].stage'; }
stage_is() { [ "$(stage)" = "$1" ]; }
exp=$work/exp srcf=$work/exp/sources/$tag.yaml taskf=$work/exp/tasks/$task.cfg
expect '.result and .msg == "export configs to directory `'"$exp"'` succeed" and
        .sources == [{"source": "'$tag'", "file": "'"$srcf"'"}] and
        .tasks == [{"task": "'$task'", "file": "'"$taskf"'"}]' config export -d "$exp"
for d in "$exp" "$exp/sources" "$exp/tasks"; do
  [ "$(stat -c %a "$d")" = 700 ] || fail "config export: folder $d is $(stat -c %a "$d"), not 0700"
done
for f in "$srcf" "$taskf"; do
  [ "$(stat -c %a "$f")" = 600 ] || fail "config export: $f is $(stat -c %a "$f"), not 0600"
  clean "$f" "config export $f"
done
grep -q '^  password: "\*\*\*\*\*\*"$' "$srcf" || fail "config export: the source's password is not masked: $(cat "$srcf")"
grep -q 'password = "\*\*\*\*\*\*"; };' "$taskf" || fail "config export: the task's password is not masked: $(cat "$taskf")"
# an existing file is never written over: refused naming it, nothing written
cp "$taskf" "$work/task-before"
expect '.result == false and (.msg | contains("'"$srcf"' exists")) and (.msg | contains("nothing was written"))' \
  config export --dir "$exp"
cmp -s "$taskf" "$work/task-before" || fail "a refused export wrote a file"
# DM's default folder: ./configs
(cd "$work" && ctl config export >/dev/null) || fail "config export into ./configs"
[ -f "$work/configs/sources/$tag.yaml" ] && [ -f "$work/configs/tasks/$task.cfg" ] ||
  fail "config export: DM's default folder ./configs was not written"
# over HTTP (dmctl --master-addr): the same files
"$dmctl" --master-addr "$addr" --timeout 60 config export -d "$work/exp-http" >"$work/http.json" || true
jq -e '.result' "$work/http.json" >/dev/null || { cat "$work/http.json" >&2; fail "config export over HTTP"; }
cmp -s "$srcf" "$work/exp-http/sources/$tag.yaml" && cmp -s "$taskf" "$work/exp-http/tasks/$task.cfg" ||
  fail "config export over HTTP wrote other files"
log "config export: 0700 folders, 0600 files, passwords masked, no file written over"

expect '.result == false and .error.ErrCode == 11004 and (.msg | contains("'"$srcf"' still holds a password masked")) and
        (.msg | contains("nothing was sent"))' config import -d "$exp"
# the real passwords put back: each exported file is the stored one with its one password value
# masked (checked: the text around it is the original's), so the original value goes in its place
put_back() { # ORIGINAL EXPORTED
  python3 - "$1" "$2" <<'PY' || fail "put_back $2"
import sys
o, e = open(sys.argv[1]).read(), open(sys.argv[2]).read()
p = 0
while p < min(len(o), len(e)) and o[p] == e[p]:
    p += 1
s = 0
while s < min(len(o), len(e)) - p and o[len(o) - 1 - s] == e[len(e) - 1 - s]:
    s += 1
assert e[p:len(e) - s] in ('"******"', '******'), repr(e[p:len(e) - s])
open(sys.argv[2], "w").write(e[:p] + o[p:len(o) - s] + e[len(e) - s:])
PY
}
put_back "$work/source.yaml" "$srcf"
# import reads every file first: the task's file still masked refuses the whole import, before
# the source is sent (stopped first, so a source sent would be seen)
expect '.result' stop-task "$task"
expect '.result' operate-source stop -s "$tag"
expect '.result == false and (.msg | contains("'"$taskf"' still holds a password masked"))' config import -d "$exp"
expect '.result and (.sources | length == 0)' operate-source show
put_back "$work/task.cfg" "$taskf"
[ "$(stat -c %a "$srcf")$(stat -c %a "$taskf")" = 600600 ] || fail "put_back changed the modes"
# while the source and the task exist: both kept, reported, not an error
expect '.result' operate-source create "$work/source.yaml"
expect '.result' start-task "$work/task.cfg"
wait_for 30 "the task is not Running" stage_is Running
expect '.result and (.msg | contains("import configs from directory")) and
        .sources[0].result and (.sources[0].msg | startswith("kept: ")) and
        .tasks[0].result and (.tasks[0].msg | startswith("kept: "))' config import -d "$exp"
"$dmctl" --master-addr "$addr" --timeout 60 config import -d "$exp" >"$work/http.json" || true
jq -e '.result and (.sources[0].msg | startswith("kept: ")) and (.tasks[0].msg | startswith("kept: "))' \
  "$work/http.json" >/dev/null || { cat "$work/http.json" >&2; fail "config import over HTTP"; }
# stopped: created and started from the folder alone
expect '.result' stop-task "$task"
expect '.result' operate-source stop -s "$tag"
expect '.result and .sources == [{"file": "'"$srcf"'", "result": true, "msg": "created"}] and
        .tasks == [{"file": "'"$taskf"'", "result": true, "msg": "started"}]' config import -d "$exp"
wait_for 30 "the imported task is not Running" stage_is Running
# the restored passwords work: a row written on the source reaches the target
src -e "INSERT INTO \`$db\`.t VALUES (4242)"
row_there() { [ "$(tgt -N -B -e "SELECT COUNT(*) FROM \`$db\`.t WHERE id = 4242")" = 1 ]; }
wait_for 60 "the row did not reach the target through the imported task: $(ctl query-status "$task")" row_there
log "config import: masked refused before sending, kept while running, created and started"

expect '.result' stop-task "$task"
expect '.result' operate-source stop -s "$tag"

# DM's operate-source --print-sample-config (-p): printed by dmctl, nothing contacted (no daemon at
# that state dir); dmhost reads it: bound with this test's server and account put in
"$dmctl" --state-dir "$work/none" operate-source --print-sample-config >"$work/sample.yaml" ||
  fail "operate-source --print-sample-config did not exit 0"
"$dmctl" --state-dir "$work/none" operate-source -p >"$work/sample-p.yaml" || fail "operate-source -p"
cmp -s "$work/sample.yaml" "$work/sample-p.yaml" || fail "-p and --print-sample-config differ"
sample=$(cat "$work/sample.yaml")
[[ $sample == *"source-id: mysql-replica-01"* && $sample == *"password: '123456'"* ]] ||
  fail "the sample is not DM's: $sample"
sed -e "s/mysql-replica-01/${tag}_sample/" -e "s/host: 127.0.0.1/host: $DMH_SOURCE_HOST/" \
  -e "s/port: 3306/port: $DMH_SOURCE_PORT/" -e "s/user: root/user: $DMH_SOURCE_USER/" \
  -e "s/password: '123456'/password: ''/" "$work/sample.yaml" >"$work/mine.yaml"
expect '.result' operate-source create "$work/mine.yaml"
expect '.result and (.cfg | contains("server-id: 101"))' config source "${tag}_sample"
expect '.result' operate-source stop -s "${tag}_sample"
log "operate-source --print-sample-config"
log "passed"

#!/usr/bin/env bash
# dmctl config|get-config task|source NAME (DM's, issue 23) against a real `dmhost serve`: the
# answer is DM's {result, msg, cfg} with the stored file's text, and a password is never in it.
# The attack: a source in DM's YAML and a task in libconfig whose accounts' passwords hold quotes
# and a newline (real accounts on the source and target, so the daemon takes the files); the
# stored copies hold the passwords (precondition), the answers, over the socket and over HTTP,
# hold no piece of them and "******" instead; an unknown name is 14003; master/worker refused.
# operate-source --print-sample-config: DM's sample, printed without a daemon, which dmhost binds.
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

serve_listen "$dmhost" "$plugins" || fail "dmhost serve did not listen"
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
expect '.result == false and (.msg | contains("keeps no master configuration file"))' \
  config master m1
expect '.result == false and (.msg | contains("not one of task, source"))' config tasks "$task"
expect '.result == false and (.msg | contains("config export: not served by dmhost yet"))' \
  config export -d "$work/exp"
log "refusals"

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

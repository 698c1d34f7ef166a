#!/usr/bin/env bash
# DM's encrypted passwords end to end, against the real servers (issue 23): an account with a
# random password; DM YAML source and task files whose `password` is DM's encrypted form (as
# `dmctl encrypt` prints it), made by `dmhost encrypt --dm` for the source and by the openssl CLI
# (an independent AES-256-CFB) for the target, and `dmhost encrypt --dm`'s output decrypted by the
# openssl CLI: the form is DM's both ways. `dmhost run --secret-key-path KEY` (DM's master flag)
# runs the mode-full task to a target equal to the source; the plain password is in no output or
# file. Then DM's behaviour without the right key: another key or none uses what it has as the
# password, the server refuses the account, and the message says the password may be DM's form
# with another key (never the password); a key file readable by others is refused; `dmhost check`
# and the daemon (`dmhost serve --secret-key-path`, dmctl operate-source/start-task with the
# YAML files) decrypt too, and the daemon's status and state files hold no plain password.
#
#   dm_secret_run.sh <dmhost> <dmctl> <plugin dir> <source dir>
set -euo pipefail
dmhost=$1 dmctl=$2 plugins=$3 src_dir=$4
cd "$src_dir"
eval "$(bash scripts/mariadb.sh env)"
db=dmsec_e2e
work=$(mktemp -d /tmp/dmh-dmsecret-XXXXXX)
pid=
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  [ "${KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "dm_secret_run: FAILED: $*" >&2; exit 1; }
# SQL on stdin, so that the password is never in a process argument of the test either
src() { mariadb --no-defaults --protocol=tcp -h"$DMH_SOURCE_HOST" -P"$DMH_SOURCE_PORT" -u"$DMH_SOURCE_USER" ${DMH_SOURCE_PASSWORD:+-p"$DMH_SOURCE_PASSWORD"} "$@"; }
tgt() { mariadb --no-defaults --protocol=tcp -h"$DMH_TARGET_HOST" -P"$DMH_TARGET_PORT" -u"$DMH_TARGET_USER" ${DMH_TARGET_PASSWORD:+-p"$DMH_TARGET_PASSWORD"} "$@"; }
no_plain() { # where: the plain password in no file under $work
  if grep -rlF -- "$pw" "$work"; then fail "the plain password is in the files above ($1)"; fi
}

pw="DmSec-$(openssl rand -hex 12)"
for side in src tgt; do
  "$side" <<SQL
CREATE OR REPLACE USER 'dmh_dmsec'@'127.0.0.1' IDENTIFIED BY '$pw';
GRANT ALL PRIVILEGES ON *.* TO 'dmh_dmsec'@'127.0.0.1';
SQL
done
# precondition: the account does not let anyone in without its password
if mariadb --no-defaults --protocol=tcp -h"$DMH_SOURCE_HOST" -P"$DMH_SOURCE_PORT" -udmh_dmsec \
  -e 'SELECT 1' >/dev/null 2>&1; then
  fail "dmh_dmsec logs in without a password: the test would prove nothing"
fi

bash scripts/sample-data.sh --rows 2000 --tables 2 --db "$db" >/dev/null
tgt -e "DROP DATABASE IF EXISTS \`$db\`; DROP DATABASE IF EXISTS dmsec_meta"

(umask 077 && openssl rand -hex 32 >"$work/key.txt" && openssl rand -hex 32 >"$work/other.txt")
key=$(cat "$work/key.txt")

# dmhost's DM form, decrypted by openssl: base64(iv[16] '@' AES-256-CFB(plain))
enc_src=$(printf '%s\n' "$pw" | "$dmhost" encrypt --dm --secret-key-path "$work/key.txt")
case $enc_src in *"$pw"*) fail "the encrypted form holds the plain password" ;; esac
hex=$(printf '%s' "$enc_src" | base64 -d | od -An -v -tx1 | tr -d ' \n')
[ "${hex:32:2}" = 40 ] || fail "no '@' after the 16-byte iv in $enc_src"
back=$(printf '%s' "${hex:34}" | xxd -r -p |
  openssl enc -d -aes-256-cfb -K "$key" -iv "${hex:0:32}")
[ "$back" = "$pw" ] || fail "openssl does not decrypt dmhost encrypt --dm's output to the password"
# openssl's, decrypted by dmhost (the target's password below)
iv=$(openssl rand -hex 16)
enc_tgt=$({ printf '%s' "$iv" | xxd -r -p; printf '@'
  printf '%s' "$pw" | openssl enc -e -aes-256-cfb -K "$key" -iv "$iv"; } | base64 -w0)
[ -n "$enc_tgt" ] || fail "openssl made no value"

cat >"$work/source.yaml" <<YAML
source-id: dmsec-src
enable-gtid: false
enable-relay: false
from:
  host: $DMH_SOURCE_HOST
  port: $DMH_SOURCE_PORT
  user: dmh_dmsec
  password: $enc_src
YAML
cat >"$work/task.yaml" <<YAML
name: dmsec
task-mode: full
meta-schema: dmsec_meta
target-database:
  host: "$DMH_TARGET_HOST"
  port: $DMH_TARGET_PORT
  user: dmh_dmsec
  password: "$enc_tgt"
mysql-instances:
  - source-id: dmsec-src
    block-allow-list: b
block-allow-list:
  b:
    do-dbs: ["$db"]
YAML
run() { # key log
  "$dmhost" run --log-level debug ${1:+--secret-key-path "$1"} --source "$work/source.yaml" \
    --task "$work/task.yaml" --work-dir "$work/w" --plugin-dir "$plugins" >"$work/$2" 2>&1
}
run "$work/key.txt" run.log || { cat "$work/run.log"; fail "dmhost run did not finish"; }
grep -q "$db" "$work/run.log" || fail "the run log does not mention $db: did the task run?"
bash scripts/checksum.sh "$db" || fail "target differs from source"
[ -n "$(find "$work/w" -type f | head -1)" ] || fail "the work dir is empty: nothing was checked"
no_plain "dmhost run"

# dmhost check with the key: the precheck connects as the account
"$dmhost" check --secret-key-path "$work/key.txt" --source "$work/source.yaml" \
  --task "$work/task.yaml" >"$work/check.log" 2>&1 || { cat "$work/check.log"; fail "dmhost check"; }

# another key: DM's behaviour, other bytes as the password, the account refused, and the hint
tgt -e "DROP DATABASE IF EXISTS \`$db\`; DROP DATABASE IF EXISTS dmsec_meta"
rm -rf "$work/w"
if run "$work/other.txt" wrong.log; then fail "a run with another key succeeded"; fi
out=$(cat "$work/wrong.log")
case $out in *"Access denied"*) ;; *) echo "$out"; fail "no access denied with another key" ;; esac
case $out in *"from.password\` is DM's encrypted form and was decrypted with the key of --secret-key-path: it may have been encrypted with another key"*) ;;
  *) echo "$out"; fail "no hint that the key may be another" ;; esac
# the same without the precheck: the unit's own refused connection carries the hint
{ cat "$work/task.yaml"; echo 'ignore-checking-items: ["all"]'; } >"$work/task-nocheck.yaml"
rm -rf "$work/w"
if "$dmhost" run --secret-key-path "$work/other.txt" --source "$work/source.yaml" \
  --task "$work/task-nocheck.yaml" --work-dir "$work/w" --plugin-dir "$plugins" \
  >"$work/wrong-unit.log" 2>&1; then fail "a run with another key and no precheck succeeded"; fi
out=$(cat "$work/wrong-unit.log")
case $out in *"Access denied"*"it may have been encrypted with another key"*) ;;
  *) echo "$out"; fail "the unit's refused connection has no hint" ;; esac
# no key: used as written, and the hint says so
if run "" nokey.log; then fail "a run without the key succeeded"; fi
out=$(cat "$work/nokey.log")
case $out in *"looks like DM's encrypted form, used as written since this process has no --secret-key-path"*) ;;
  *) echo "$out"; fail "no hint that the password looks DM-encrypted" ;; esac
# the new door: a key file others may read is refused before anything runs
chmod 0644 "$work/other.txt"
rc=0
"$dmhost" run --secret-key-path "$work/other.txt" --source "$work/source.yaml" \
  --task "$work/task.yaml" --work-dir "$work/w" >"$work/open.log" 2>&1 || rc=$?
[ "$rc" -eq 2 ] || { cat "$work/open.log"; fail "an open key file: exit $rc, not 2"; }
grep -q "dmhost run: --secret-key-path: the key file $work/other.txt is readable by others (mode 0644)" \
  "$work/open.log" || { cat "$work/open.log"; fail "the open key file's refusal"; }
no_plain "the wrong key, no key, an open key"

# ---- the daemon: dmhost serve --secret-key-path, the YAML files through dmctl ----
ctl() { "$dmctl" --state-dir "$work/state" --timeout 60 "$@"; }
"$dmhost" serve --state-dir "$work/state" --plugin-dir "$plugins" \
  --secret-key-path "$work/key.txt" >"$work/serve.log" 2>&1 &
pid=$!
for _ in $(seq 1 40); do ctl query-status >/dev/null 2>&1 && break; sleep 0.5; done
ctl operate-source create "$work/source.yaml" >"$work/ctl.out" 2>&1 ||
  { cat "$work/ctl.out"; fail "operate-source create source.yaml"; }
ctl start-task "$work/task.yaml" >"$work/ctl.out" 2>&1 ||
  { cat "$work/ctl.out"; fail "start-task task.yaml"; }
done_=
for _ in $(seq 1 120); do
  ctl query-status dmsec >"$work/status.out" 2>&1 || true
  stage=$(jq -r '.sources[0].subTaskStatus[0].stage' "$work/status.out" 2>/dev/null || true)
  [ "$stage" = Finished ] && { done_=1; break; }
  [ "$stage" = Paused ] && { cat "$work/status.out"; fail "the task paused"; }
  sleep 1
done
[ -n "$done_" ] || { cat "$work/status.out"; fail "the daemon's task did not finish"; }
bash scripts/checksum.sh "$db" || fail "target differs from source (daemon)"
ctl query-status >>"$work/status.out" 2>&1 || true
kill -TERM "$pid"
wait "$pid" || fail "dmhost serve did not exit 0 on SIGTERM"
pid=
no_plain "the daemon's state, status and log"

echo "dm_secret_run: DM-encrypted passwords (dmhost encrypt --dm and openssl, each decrypted by" \
  "the other) ran a mode-full task under dmhost run and serve with --secret-key-path; another" \
  "key or none is refused by the server with the hint; an open key file refused; the plain" \
  "password in no output or file ($(find "$work" -type f | wc -l) files)"
for side in src tgt; do "$side" -e "DROP USER IF EXISTS 'dmh_dmsec'@'127.0.0.1'"; done
tgt -e "DROP DATABASE IF EXISTS \`$db\`; DROP DATABASE IF EXISTS dmsec_meta"
src -e "DROP DATABASE IF EXISTS \`$db\`"

#!/usr/bin/env bash
# Secrets end to end, against the real servers: an account with a random password, the password
# encrypted by `dmhost encrypt` from stdin, a `dmhost run` of a mode-full task with only the
# encrypted form in the source and task files. The task must finish with the target equal to the
# source, and the plain password must appear in no output and no file under the work dir (logs,
# dump files, checkpoints, the config files themselves).
#
#   secret_run.sh <dmhost> <plugin dir> <source dir>
set -euo pipefail
dmhost=$1 plugins=$2 src_dir=$3
cd "$src_dir"
eval "$(bash scripts/mariadb.sh env)"
db=sec_e2e
work=$(mktemp -d /tmp/dmh-secret-XXXXXX)
trap '[ "${KEEP:-}" ] || rm -rf "$work"' EXIT
fail() { echo "secret_run: FAILED: $*" >&2; exit 1; }
# SQL on stdin, so that the password is never in a process argument of the test either
src() { mariadb --no-defaults --protocol=tcp -h"$DMH_SOURCE_HOST" -P"$DMH_SOURCE_PORT" -u"$DMH_SOURCE_USER" "$@"; }
tgt() { mariadb --no-defaults --protocol=tcp -h"$DMH_TARGET_HOST" -P"$DMH_TARGET_PORT" -u"$DMH_TARGET_USER" "$@"; }

pw="Sec-$(openssl rand -hex 12)"
for side in src tgt; do
  "$side" <<SQL
CREATE OR REPLACE USER 'dmh_sec'@'127.0.0.1' IDENTIFIED BY '$pw';
GRANT ALL PRIVILEGES ON *.* TO 'dmh_sec'@'127.0.0.1';
SQL
done
# precondition: the account does not let anyone in without its password
if mariadb --no-defaults --protocol=tcp -h"$DMH_SOURCE_HOST" -P"$DMH_SOURCE_PORT" -udmh_sec \
  -e 'SELECT 1' >/dev/null 2>&1; then
  fail "dmh_sec logs in without a password: the test would prove nothing"
fi

bash scripts/sample-data.sh --rows 3000 --tables 2 --db "$db" >/dev/null
tgt -e "DROP DATABASE IF EXISTS \`$db\`; DROP DATABASE IF EXISTS sec_meta"

(umask 077 && openssl rand -hex 32 >"$work/dm.key")
enc=$(printf '%s\n' "$pw" | "$dmhost" encrypt --secret-key-path "$work/dm.key" 2>"$work/encrypt.err")
[ -n "$enc" ] || fail "dmhost encrypt printed nothing: $(cat "$work/encrypt.err")"
case $enc in *"$pw"*) fail "the encrypted form holds the plain password" ;; esac

cat >"$work/source.cfg" <<CFG
source-id = "sec-src";
secret-key-path = "dm.key";
from = { host = "$DMH_SOURCE_HOST"; port = $DMH_SOURCE_PORT; user = "dmh_sec";
         password-encrypted = "$enc"; };
CFG
cat >"$work/task.cfg" <<CFG
name = "sec";
task-mode = "full";
meta-schema = "sec_meta";
secret-key-path = "$work/dm.key";
target-database = { host = "$DMH_TARGET_HOST"; port = $DMH_TARGET_PORT; user = "dmh_sec";
                    password-encrypted = "$enc"; };
mysql-instances = ( { source-id = "sec-src"; block-allow-list = "b"; } );
block-allow-list = { b = { do-dbs = ["$db"]; }; };
supervisor = { auto-resume = { enable = false; }; };
CFG
"$dmhost" run --log-level debug --source "$work/source.cfg" --task "$work/task.cfg" \
  --work-dir "$work/w" --plugin-dir "$plugins" >"$work/run.log" 2>&1 ||
  { cat "$work/run.log"; fail "dmhost run did not finish"; }
grep -q "$db" "$work/run.log" || fail "the run log does not mention $db: did the task run?"
bash scripts/checksum.sh "$db" || fail "target differs from source"


# the plain password: in no file under the work dir (logs, dump files, checkpoints, configs)
[ -n "$(find "$work/w" -type f | head -1)" ] || fail "the work dir is empty: nothing was checked"
if grep -rlF -- "$pw" "$work"; then fail "the plain password is in the files above"; fi

# and a wrong key is refused before any connection, naming the setting, not the secret
(umask 077 && openssl rand -hex 32 >"$work/dm.key")
if "$dmhost" run --source "$work/source.cfg" --task "$work/task.cfg" --work-dir "$work/w" \
  --plugin-dir "$plugins" >"$work/wrong.log" 2>&1; then
  fail "a run with the wrong key succeeded"
fi
grep -q "source.cfg:4: .from.password-encrypted. in the source file does not decrypt" "$work/wrong.log" ||
  { cat "$work/wrong.log"; fail "no coded error naming from.password-encrypted"; }
grep -q "11004" "$work/wrong.log" || { cat "$work/wrong.log"; fail "the error has no code"; }
if grep -rlF -- "$pw" "$work"; then fail "the plain password is in the files above"; fi

echo "secret_run: mode full with encrypted passwords finished, target equals source;" \
  "the plain password is in no output or file (checked $(find "$work" -type f | wc -l) files)"
for side in src tgt; do "$side" -e "DROP USER IF EXISTS 'dmh_sec'@'127.0.0.1'"; done
tgt -e "DROP DATABASE IF EXISTS \`$db\`; DROP DATABASE IF EXISTS sec_meta"
src -e "DROP DATABASE IF EXISTS \`$db\`"

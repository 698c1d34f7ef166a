#!/usr/bin/env bash
# `dmhost verify` (host/verify/, docs/verify.md) against the fixtures' real servers: equal tables
# of several key kinds (int, composite, varchar, a NOT NULL unique key, none; NULLs, TIMESTAMP,
# BLOB) and a route merging two tables report equal; differences injected on the target (a row
# deleted, changed, added, a row of the table without key changed, a merged row deleted) are found,
# each row named, with the differences' exit code; the fix file, applied with the mariadb client,
# makes the next verify equal (and CHECKSUM TABLE agree); --fix-sql never writes over a file or
# through a link; a NULL where only the target allows one is found (the checksum names the columns
# nullable on either side); a table missing on the target is an error naming it; --threads 3 finds
# the same, and behind a session's table lock gives up after 10 s (43102) rather than hold the
# target's writes; a merge's chunks bounded on each shard; --at-checkpoint without a sync checkpoint is refused (43106); 200,000 rows by chunks of 1,000 stay within a memory bound.
#
#   test_verify.sh DMHOST        (ports: DMH_SOURCE_PORT, DMH_TARGET_PORT as scripts/mariadb.sh)
set -euo pipefail
dmhost=$1
sp=${DMH_SOURCE_PORT:-13306}
tp=${DMH_TARGET_PORT:-13307}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fails=0
pass=0

src() { mariadb --no-defaults --protocol=tcp -h127.0.0.1 -P"$sp" -uroot -N -B "$@"; }
dst() { mariadb --no-defaults --protocol=tcp -h127.0.0.1 -P"$tp" -uroot -N -B "$@"; }
ok() {
  pass=$((pass + 1))
  echo "ok: $*"
}
fail() {
  fails=$((fails + 1))
  echo "FAIL: $*" >&2
}
check() { # description, then a command that must succeed
  local what=$1
  shift
  if "$@"; then ok "$what"; else fail "$what"; fi
}

# The precondition: the command exists (without the change, dmhost knows no `verify`).
"$dmhost" verify --help >/dev/null || {
  echo "FAIL: dmhost has no verify command" >&2
  exit 1
}

cat >"$work/source.cfg" <<EOF
source-id = "verify-src";
from = { host = "127.0.0.1"; port = $sp; user = "root"; password = ""; };
EOF
task() { # name, do-dbs list
  cat <<EOF
name = "$1";
task-mode = "full";
target-database = { host = "127.0.0.1"; port = $tp; user = "root"; password = ""; };
mysql-instances = ( { source-id = "verify-src"; block-allow-list = "bal"; route-rules = ["merge"]; } );
block-allow-list = { bal = { do-dbs = [$2]; }; };
routes = { merge = { schema-pattern = "dmh_verify_m"; table-pattern = "s*";
                     target-schema = "dmh_verify_m"; target-table = "merged"; }; };
EOF
}
task verify '"dmh_verify_a", "dmh_verify_m"' >"$work/task.cfg"
task verify-big '"dmh_verify_big"' >"$work/task-big.cfg"

# ---- the data: the same on both sides ----
schema_a="
DROP DATABASE IF EXISTS dmh_verify_a; CREATE DATABASE dmh_verify_a; USE dmh_verify_a;
CREATE TABLE t_int (id INT PRIMARY KEY, v VARCHAR(20) NULL, ts TIMESTAMP NULL, b BLOB NULL);
CREATE TABLE t_comp (a INT, b VARCHAR(10), v INT NULL, PRIMARY KEY (a, b));
CREATE TABLE t_vchar (k VARCHAR(32) PRIMARY KEY, d DOUBLE NULL);
CREATE TABLE t_uniq (id INT NULL, u VARCHAR(10) NOT NULL, UNIQUE KEY uk (u));
CREATE TABLE t_nokey (a INT NULL, b VARCHAR(10) NULL);
DROP DATABASE IF EXISTS dmh_verify_m; CREATE DATABASE dmh_verify_m;"
data_a="USE dmh_verify_a; SET time_zone = '+00:00';
INSERT INTO t_int SELECT seq, IF(seq % 7 = 0, NULL, CONCAT('v', seq)),
  IF(seq % 5 = 0, NULL, FROM_UNIXTIME(1600000000 + seq)), IF(seq % 3 = 0, NULL, UNHEX(SHA1(seq)))
  FROM seq_1_to_3000;
INSERT INTO t_comp SELECT seq % 50, CONCAT('k', seq), IF(seq % 9 = 0, NULL, seq) FROM seq_1_to_1200;
INSERT INTO t_vchar SELECT CONCAT('key-', seq), seq / 3 FROM seq_1_to_800;
INSERT INTO t_uniq SELECT IF(seq % 4 = 0, NULL, seq), CONCAT('u', seq) FROM seq_1_to_600;
INSERT INTO t_nokey SELECT seq % 10, IF(seq % 6 = 0, NULL, CONCAT('n', seq % 13)) FROM seq_1_to_400;"
src -e "$schema_a
CREATE TABLE dmh_verify_m.s1 (id INT PRIMARY KEY, v VARCHAR(20));
CREATE TABLE dmh_verify_m.s2 (id INT PRIMARY KEY, v VARCHAR(20));
$data_a
INSERT INTO dmh_verify_m.s1 SELECT seq, CONCAT('one', seq) FROM seq_1_to_1500;
INSERT INTO dmh_verify_m.s2 SELECT seq + 100000, CONCAT('two', seq) FROM seq_1_to_1500;"
# the target's TIMESTAMPs written in another time zone: the same instants
dst -e "$schema_a
CREATE TABLE dmh_verify_m.merged (id INT PRIMARY KEY, v VARCHAR(20));
${data_a/+00:00/+05:00}
INSERT INTO dmh_verify_m.merged SELECT seq, CONCAT('one', seq) FROM seq_1_to_1500;
INSERT INTO dmh_verify_m.merged SELECT seq + 100000, CONCAT('two', seq) FROM seq_1_to_1500;"

run() { # out-file, then verify's arguments; the exit code in $rc (RUN_TIMEOUT: killed after it, 124)
  local out=$1
  shift
  set +e
  timeout "${RUN_TIMEOUT:-0}" "$dmhost" verify --source "$work/source.cfg" "$@" >"$out" 2>"$out.err"
  rc=$?
  set -e
}
jq_py() { # file, python expression over `d` (the parsed document): must hold
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); t={x['target']:x for x in d['tables']}; sys.exit(0 if ($2) else 1)" "$1"
}

# ---- equal ----
run "$work/eq.txt" --task "$work/task.cfg" --chunk-rows 500
check "equal tables: exit 0 (got $rc)" test "$rc" -eq 0
check "equal tables: the report says equal" grep -q 'verify: 6 table(s), .* rows: equal' "$work/eq.txt"
check "the table without key: said so" grep -q 'no key: compared as a whole' "$work/eq.txt"
run "$work/eq.json" --task "$work/task.cfg" --chunk-rows 500 --json
check "equal --json: exit 0" test "$rc" -eq 0
check "equal --json: the document" jq_py "$work/eq.json" "d['result'] == 'equal' and len(d['tables']) == 6 and \
  t['dmh_verify_a.t_int']['chunks'] == 7 and t['dmh_verify_a.t_int']['rows'] == 3000 and \
  t['dmh_verify_a.t_comp']['key'] == ['a', 'b'] and t['dmh_verify_a.t_uniq']['key'] == ['u'] and \
  t['dmh_verify_a.t_nokey']['no_key'] and t['dmh_verify_a.t_nokey']['chunks'] == 1 and \
  sorted(t['dmh_verify_m.merged']['sources']) == ['dmh_verify_m.s1', 'dmh_verify_m.s2'] and \
  t['dmh_verify_m.merged']['rows'] == 3000 and d['source_snapshot']['binlog_file'] != ''"
# a merge's chunks are bounded on every shard: s1 (ids 1-1500) and s2 (100001-101500) by 500 rows
# give 3 + 3 chunks and the empty last one; walking s1 alone gave 4, the last holding all of s2
check "merge: every shard's rows bounded per chunk (7 chunks)" jq_py "$work/eq.json" \
  "t['dmh_verify_m.merged']['chunks'] == 7"

# DM's YAML files, read as dmhost check and run read them: the same verdict
cat >"$work/source.yaml" <<EOF
source-id: verify-src
from: {host: 127.0.0.1, port: $sp, user: root, password: ""}
EOF
cat >"$work/task.yaml" <<EOF
name: verify
task-mode: full
target-database: {host: 127.0.0.1, port: $tp, user: root, password: ""}
mysql-instances:
  - {source-id: verify-src, block-allow-list: bal, route-rules: [merge]}
block-allow-list:
  bal: {do-dbs: [dmh_verify_a, dmh_verify_m]}
routes:
  merge: {schema-pattern: dmh_verify_m, table-pattern: "s*", target-schema: dmh_verify_m, target-table: merged}
EOF
set +e
"$dmhost" verify --source "$work/source.yaml" --task "$work/task.yaml" --chunk-rows 500 >"$work/yaml.txt" 2>&1
rc=$?
set -e
check "DM's YAML files: exit 0, the same 6 tables (got $rc)" grep -q 'verify: 6 table(s), .* rows: equal' "$work/yaml.txt"
# rules that take nothing: nothing proven, an error (not "equal")
task verify-none '"dmh_verify_no_such_db"' >"$work/task-none.cfg"
run "$work/none.txt" --task "$work/task-none.cfg"
check "rules taking no table: exit 2 with 43105 (got $rc)" \
  grep -q 'code 43105.*take no table of source verify-src' "$work/none.txt.err"

# ---- differences injected on the target ----
dst -e "USE dmh_verify_a; SET time_zone = '+00:00';
DELETE FROM t_int WHERE id = 17;
UPDATE t_int SET ts = '2001-02-03 04:05:06', b = 0x00ff WHERE id = 2999;
UPDATE t_comp SET v = 999 WHERE a = 5 AND b = 'k5';
INSERT INTO t_vchar VALUES ('zzz-extra', 1.5);
UPDATE t_uniq SET id = NULL WHERE u = 'u10';
UPDATE t_nokey SET b = 'changed' WHERE a = 3 AND b = 'n3' LIMIT 1;
DELETE FROM dmh_verify_m.merged WHERE id = 100005;"
run "$work/diff.json" --task "$work/task.cfg" --chunk-rows 500 --json --fix-sql "$work/fix.sql"
check "differences: exit 1 (got $rc)" test "$rc" -eq 1
check "differences: each row named" jq_py "$work/diff.json" "d['result'] == 'different' and \
  d['tables_differing'] == 6 and \
  [(r['kind'], r['key']) for r in t['dmh_verify_a.t_int']['differences']] == \
    [('missing', {'id': '17'}), ('changed', {'id': '2999'})] and \
  [r['target']['ts'] for r in t['dmh_verify_a.t_int']['differences'][1:]] == ['2001-02-03 04:05:06'] and \
  [r['target']['b'] for r in t['dmh_verify_a.t_int']['differences'][1:]] == ['0x00ff'] and \
  t['dmh_verify_a.t_int']['differing_chunks'] == 2 and \
  [(r['kind'], r['key']) for r in t['dmh_verify_a.t_comp']['differences']] == [('changed', {'a': '5', 'b': 'k5'})] and \
  t['dmh_verify_a.t_comp']['differences'][0]['source']['v'] == '5' and \
  t['dmh_verify_a.t_comp']['differences'][0]['target']['v'] == '999' and \
  [(r['kind'], r['key']) for r in t['dmh_verify_a.t_vchar']['differences']] == [('extra', {'k': 'zzz-extra'})] and \
  [(r['kind'], r['key']) for r in t['dmh_verify_a.t_uniq']['differences']] == [('changed', {'u': 'u10'})] and \
  t['dmh_verify_a.t_uniq']['differences'][0]['target']['id'] is None and \
  sorted(r['kind'] for r in t['dmh_verify_a.t_nokey']['differences']) == ['extra', 'missing'] and \
  [r['target']['b'] for r in t['dmh_verify_a.t_nokey']['differences'] if r['kind'] == 'extra'] == ['changed'] and \
  [(r['kind'], r['key']) for r in t['dmh_verify_m.merged']['differences']] == [('missing', {'id': '100005'})] and \
  t['dmh_verify_m.merged']['rows_missing'] == 1 and t['dmh_verify_m.merged']['rows_extra'] == 0"
# the same with 3 threads (snapshots opened under FLUSH TABLES WITH READ LOCK): the same finding
run "$work/diff3.json" --task "$work/task.cfg" --chunk-rows 500 --json --threads 3
check "--threads 3: exit 1 (got $rc)" test "$rc" -eq 1
check "--threads 3: the same tables and rows as one thread" python3 -c "
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
key = lambda d: [(t['target'], t['rows'], t['chunks'], t['differences']) for t in d['tables']]
sys.exit(0 if key(a) == key(b) else 1)" "$work/diff.json" "$work/diff3.json"
run "$work/diff3.txt" --task "$work/task.cfg" --chunk-rows 500 --threads 3
check "--threads 3, text: each table's rows under its own line" python3 -c "
import sys
lines = open(sys.argv[1]).read().splitlines()
at = [i for i, l in enumerate(lines) if l.startswith('\`dmh_verify_a\`.\`t_int\`')][0]
sys.exit(0 if lines[at + 1].startswith('  missing on target: \`id\`=') else 1)" "$work/diff3.txt"
# a session's LOCK TABLES on the target: the FTWRL of --threads gives up after 10 s with 43102
# (the target's writes waited with it only so long), not held until the lock ends (MariaDB's lock_wait_timeout: a day)
dst -e "CREATE DATABASE dmh_verify_lk; CREATE TABLE dmh_verify_lk.t (id INT PRIMARY KEY);
  CREATE TABLE dmh_verify_lk.w (id INT PRIMARY KEY)"
dst -e "LOCK TABLES dmh_verify_lk.t WRITE; SELECT SLEEP(300)" >/dev/null 2>&1 &
lockpid=$!
holder() { dst -e "SELECT ID FROM information_schema.PROCESSLIST WHERE INFO = 'SELECT SLEEP(300)'"; }
for _ in $(seq 300); do [ -n "$(holder)" ] && break; sleep 0.1; done
check "precondition: a session holds LOCK TABLES on the target" test -n "$(holder)"
t0=$(date +%s)
# without the bound verify waits for the lock: killed at 100 s (exit 124)
RUN_TIMEOUT=100 run "$work/locked.txt" --task "$work/task.cfg" --chunk-rows 500 --threads 2
took=$(($(date +%s) - t0))
check "--threads 2 behind a table lock: exit 2 (got $rc)" test "$rc" -eq 2
check "--threads 2 behind a table lock: given up after the bound (${took} s), not held" test "$took" -lt 60
check "--threads 2 behind a table lock: 43102, what waited and what to do" \
  grep -q "code 43102.*waited 10 s.*--threads 1" "$work/locked.txt.err"
check "the lock still held: the target's writes go on once verify gave up" \
  timeout 60 mariadb --no-defaults --protocol=tcp -h127.0.0.1 -P"$tp" -uroot \
  -e "INSERT INTO dmh_verify_lk.w VALUES (1)"
check "the lock still held when the write landed" test -n "$(holder)"
dst -e "KILL $(holder)" || true
wait "$lockpid" || true
dst -e "DROP DATABASE dmh_verify_lk"
check "the fix file: mode 0600" test "$(stat -c %a "$work/fix.sql")" = 600
check "the fix file: no temp file left" test ! -e "$work/fix.sql.tmp"
run "$work/diff.txt" --task "$work/task.cfg" --chunk-rows 500
check "differences, text: exit 1" test "$rc" -eq 1
check "differences, text: the rows" grep -q "missing on target: \`id\`='17'" "$work/diff.txt"
check "differences, text: the summary" grep -q 'differ' "$work/diff.txt"

# ---- the fix applied: equal again ----
dst <"$work/fix.sql"
run "$work/fixed.txt" --task "$work/task.cfg" --chunk-rows 500
check "after the fix: exit 0 (got $rc; $(grep -v ': equal' "$work/fixed.txt" | head -3))" test "$rc" -eq 0
for tb in dmh_verify_a.t_int dmh_verify_a.t_comp dmh_verify_a.t_vchar dmh_verify_a.t_uniq dmh_verify_a.t_nokey; do
  a=$(src -e "CHECKSUM TABLE $tb" | cut -f2)
  b=$(dst -e "CHECKSUM TABLE $tb" | cut -f2)
  check "after the fix: CHECKSUM TABLE $tb equal ($a, $b)" test "$a" = "$b"
done

# ---- columns: one the target lacks is a difference by name; one only the target has is not ----
src -e "CREATE TABLE dmh_verify_a.t_cols (id INT PRIMARY KEY, a INT, gone INT);
  INSERT INTO dmh_verify_a.t_cols VALUES (1, 1, 1), (2, NULL, 2)"
dst -e "CREATE TABLE dmh_verify_a.t_cols (id INT PRIMARY KEY, more INT DEFAULT 7, a INT);
  INSERT INTO dmh_verify_a.t_cols (id, a) VALUES (1, 1), (2, NULL)"
run "$work/cols.json" --task "$work/task.cfg" --json
check "a column the target lacks: exit 1 (got $rc)" test "$rc" -eq 1
check "a column the target lacks: named, the rows equal" jq_py "$work/cols.json" \
  "t['dmh_verify_a.t_cols']['missing_columns'] == '\`gone\`' and \
   t['dmh_verify_a.t_cols']['state'] == 'different' and t['dmh_verify_a.t_cols']['rows'] == 2 and \
   t['dmh_verify_a.t_cols']['differing_chunks'] == 0 and d['tables_differing'] == 1"
src -e "DROP TABLE dmh_verify_a.t_cols"
dst -e "DROP TABLE dmh_verify_a.t_cols"

# ---- where the NULLs are: a column NOT NULL on the source but nullable on the target ----
# The rows join alike without the target's ISNULLs ('1#p#q#r' both: CONCAT_WS skips the NULL), so
# the checksum must name the column when either side allows NULL there.
src -e "CREATE TABLE dmh_verify_a.t_nulls (id INT PRIMARY KEY, a VARCHAR(10) NOT NULL, b VARCHAR(10) NOT NULL);
  INSERT INTO dmh_verify_a.t_nulls VALUES (1, 'p', 'q#r'), (2, 's', 't')"
dst -e "CREATE TABLE dmh_verify_a.t_nulls (id INT PRIMARY KEY, a VARCHAR(10) NULL, b VARCHAR(10) NOT NULL);
  INSERT INTO dmh_verify_a.t_nulls VALUES (1, NULL, 'p#q#r'), (2, 's', 't')"
check "the precondition: the two rows 1 join alike" test \
  "$(src -e "SELECT CONCAT_WS('#', id, a, b) FROM dmh_verify_a.t_nulls WHERE id = 1")" = \
  "$(dst -e "SELECT CONCAT_WS('#', id, a, b) FROM dmh_verify_a.t_nulls WHERE id = 1")"
run "$work/nulls.json" --task "$work/task.cfg" --json
check "a NULL only the target allows: exit 1 (got $rc)" test "$rc" -eq 1
check "a NULL only the target allows: row 1 differs, row 2 not" jq_py "$work/nulls.json" \
  "t['dmh_verify_a.t_nulls']['rows_changed'] == 1 and t['dmh_verify_a.t_nulls']['differing_chunks'] == 1"
src -e "DROP TABLE dmh_verify_a.t_nulls"
dst -e "DROP TABLE dmh_verify_a.t_nulls"

# ---- --fix-sql's door: never over a file, never through a link ----
echo "keep me" >"$work/existing.sql"
run "$work/att1.txt" --task "$work/task.cfg" --fix-sql "$work/existing.sql"
check "--fix-sql over an existing file: refused (exit 2)" test "$rc" -eq 2
check "--fix-sql over an existing file: said so" grep -q 'never overwritten' "$work/att1.txt.err"
check "--fix-sql over an existing file: the file kept" test "$(cat "$work/existing.sql")" = "keep me"
echo "victim" >"$work/victim"
ln -s "$work/victim" "$work/link.sql"
ln -s "$work/nowhere" "$work/dangling.sql"
run "$work/att2.txt" --task "$work/task.cfg" --fix-sql "$work/link.sql"
check "--fix-sql through a link: refused" test "$rc" -eq 2
check "--fix-sql through a link: the target kept" test "$(cat "$work/victim")" = "victim"
run "$work/att3.txt" --task "$work/task.cfg" --fix-sql "$work/dangling.sql"
check "--fix-sql through a dangling link: refused, nothing created" \
  test "$rc" -eq 2 -a ! -e "$work/nowhere"

# ---- --at-checkpoint without a sync, and a table missing on the target ----
run "$work/ckpt.txt" --task "$work/task.cfg" --at-checkpoint
check "--at-checkpoint of a task whose sync never ran: exit 2 (got $rc)" test "$rc" -eq 2
check "--at-checkpoint of a task whose sync never ran: said so (43106)" grep -q 'code 43106.*has no sync checkpoint' "$work/ckpt.txt.err"
src -e "CREATE TABLE dmh_verify_a.t_only (id INT PRIMARY KEY)"
run "$work/miss.json" --task "$work/task.cfg" --json
check "a table missing on the target: exit 2" test "$rc" -eq 2
check "a table missing on the target: named, with code and workaround" jq_py "$work/miss.json" \
  "d['result'] == 'error' and t['dmh_verify_a.t_only']['error']['ErrCode'] == 43101 and \
   'dmh_verify_a' in t['dmh_verify_a.t_only']['error']['Message'] and \
   t['dmh_verify_a.t_only']['error']['Workaround'] != '' and t['dmh_verify_a.t_int']['state'] == 'equal'"
src -e "DROP TABLE dmh_verify_a.t_only"

# ---- memory: 200,000 rows by chunks of 1,000, with a difference to diff ----
# Peak RSS of verify over 20,000 rows, then over 200,000 (~50 MB of rows): a verify that streams
# holds one chunk whatever the size, so the two peaks are near (a sanitized build's peaks are
# higher, its difference is not); one that held the table would grow by ~45 MB.
peak_rss() { # out-file: prints "exit peak_kib" (ASan's quarantine of freed memory kept small)
  ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=4" python3 - "$dmhost" "$work/source.cfg" "$work/task-big.cfg" "$1" <<'EOF2'
import resource, subprocess, sys
with open(sys.argv[4], "w") as out:
    rc = subprocess.call([sys.argv[1], "verify", "--source", sys.argv[2], "--task", sys.argv[3],
                          "--chunk-rows", "1000", "--json"], stdout=out)
print(rc, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
EOF2
}
big="DROP DATABASE IF EXISTS dmh_verify_big; CREATE DATABASE dmh_verify_big; USE dmh_verify_big;
CREATE TABLE dmh_verify_big.t (id INT PRIMARY KEY, pad VARCHAR(255));
INSERT INTO dmh_verify_big.t SELECT seq, REPEAT(CHAR(65 + seq % 26), 250) FROM seq_1_to_20000;"
more="USE dmh_verify_big; INSERT INTO t SELECT seq, REPEAT(CHAR(65 + seq % 26), 250) FROM seq_20001_to_200000;"
src -e "$big"
dst -e "$big UPDATE dmh_verify_big.t SET pad = 'x' WHERE id = 12345;"
read -r small_rc small_kb < <(peak_rss "$work/small.json")
check "20k rows: one difference found (exit $small_rc)" test "$small_rc" -eq 1
src -e "$more"
dst -e "$more"
read -r big_rc big_kb < <(peak_rss "$work/big.json")
check "200k rows: one difference found (exit $big_rc)" test "$big_rc" -eq 1
check "200k rows: 201 chunks, the row named" jq_py "$work/big.json" \
  "t['dmh_verify_big.t']['chunks'] == 201 and t['dmh_verify_big.t']['rows'] == 200000 and \
   [r['key'] for r in t['dmh_verify_big.t']['differences']] == [{'id': '12345'}]"
check "200k rows: peak RSS ${big_kb} KiB within 8 MiB of 20k rows' ${small_kb} KiB" \
  test "$((big_kb - small_kb))" -lt 8192

src -e "DROP DATABASE dmh_verify_a; DROP DATABASE dmh_verify_m; DROP DATABASE dmh_verify_big"
dst -e "DROP DATABASE dmh_verify_a; DROP DATABASE dmh_verify_m; DROP DATABASE dmh_verify_big"
echo "test_verify: $pass passed, $fails failed"
[ "$fails" -eq 0 ]

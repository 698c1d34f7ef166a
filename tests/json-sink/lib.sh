# What the json-sink tests share (sourced after `cd` to the source folder, with $tag, $work and
# $db set): the servers, a log line, the schema and write workload, the sink's checkpoint, position
# comparison, and the final check (check.py, then the changes applied to the target's copy).
eval "$(bash scripts/mariadb.sh env)"
src() { mariadb --no-defaults --protocol=tcp -h"$DMH_SOURCE_HOST" -P"$DMH_SOURCE_PORT" -u"$DMH_SOURCE_USER" "$@"; }
tgt() { mariadb --no-defaults --protocol=tcp -h"$DMH_TARGET_HOST" -P"$DMH_TARGET_PORT" -u"$DMH_TARGET_USER" "$@"; }
t0=$SECONDS
log() { echo "$tag: [$((SECONDS - t0))s] $*"; }
master() { src -N -B -e "SHOW MASTER STATUS" | awk '{ print $1 ":" $2 }'; }

# Two tables of every kind of value the sink writes, and wl(k): one transaction of an insert, an
# update and a delete of t1 (ids known from k) and a several-row update of t2, every fourth call a
# 400-row update of t1 (a big statement: the sink is busy a while), every fifth a delete and an
# insert of t2 in autocommit.
js_schema() { # server function, extra statements on $db (e.g. rows to fill)
  "$1" -e "DROP DATABASE IF EXISTS $db; CREATE DATABASE $db; USE $db;
  CREATE TABLE t1 (id INT PRIMARY KEY, v VARCHAR(64) CHARACTER SET utf8mb4, n INT,
    d DECIMAL(12,2), dt DATETIME(3), ts TIMESTAMP NULL, b VARBINARY(16), e ENUM('x','y','z'),
    u BIGINT UNSIGNED);
  CREATE TABLE t2 (id INT PRIMARY KEY, note TEXT, q SMALLINT UNSIGNED);
  DELIMITER //
  CREATE PROCEDURE wl(k INT)
  BEGIN
    START TRANSACTION;
    INSERT INTO t1 VALUES (100000 + k, CONCAT('new ', k, ' ☃ \"q\" \\\\'), k, k * 1.25, NOW(3),
      NOW(), UNHEX(MD5(k)), 'y', 18446744073709551615 - k);
    UPDATE t1 SET n = n + 1, v = CONCAT('upd ', k), b = NULL WHERE id = 1 + k % 2000;
    DELETE FROM t1 WHERE id = 1 + (k * 7 + 3) % 2000;
    UPDATE t2 SET q = q - 1, note = CONCAT(note, k) WHERE id BETWEEN 1 + k % 450 AND 4 + k % 450;
    COMMIT;
    IF k % 4 = 0 THEN
      UPDATE t1 SET n = n + 1 WHERE id BETWEEN 1 + k % 1500 AND 400 + k % 1500;
    END IF;
    IF k % 5 = 0 THEN
      DELETE FROM t2 WHERE id = 1 + k % 500;
      INSERT INTO t2 VALUES (1000 + k, 'ins', k % 65000);
    END IF;
  END //
  DELIMITER ;
  ${2:-}"
}
js_fill="INSERT INTO t1 SELECT seq, CONCAT('row ', seq, ' é'), seq, seq / 7, '2024-01-02 03:04:05.123',
    '2024-05-06 07:08:09', UNHEX(MD5(seq)), ELT(1 + seq % 3, 'x', 'y', 'z'), 18446744073709551615 - seq
    FROM seq_1_to_2000;
  INSERT INTO t2 SELECT seq, REPEAT('n', seq % 50), 65000 FROM seq_1_to_500;"

# The writer: wl(1), wl(2), ... until $work/stop exists; the last k in $work/writer.count.
writer=""
js_writer_start() {
  (
    k=1
    while [[ ! -e $work/stop ]]; do
      src "$db" -e "CALL wl($k)" 2>>"$work/writer.log" || true
      k=$((k + 1))
      sleep 0.01
    done
    echo "$k" >"$work/writer.count"
  ) &
  writer=$!
}
js_writer_stop() {
  touch "$work/stop"
  [[ -n $writer ]] && wait "$writer"
  writer=""
}

# The sink's checkpoint under folder $1 as "file:pos", or nothing before the first.
js_checkpoint() {
  local f
  f=$(find "$1" -name json-sink.checkpoint 2>/dev/null | head -1)
  [[ -n $f ]] && awk '$1 == "binlog-name" { n = $2 } $1 == "binlog-pos" { p = $2 } END { if (n != "") print n ":" p }' "$f"
}
# Is position $1 (file:pos) at or after $2?
js_reached() {
  [[ -n $1 && -n $2 ]] || return 1
  python3 -c 'import sys
def k(s):
    n, p = s.rsplit(":", 1)
    return (int(n.rsplit(".", 1)[1]), int(p))
sys.exit(0 if k(sys.argv[1]) >= k(sys.argv[2]) else 1)' "$1" "$2"
}
# Waits up to $2 s for the checkpoint under $1 to be past $3 (file:pos; "" for any); prints it.
js_wait_moved() {
  local c
  for _ in $(seq 1 $(($2 * 10))); do
    c=$(js_checkpoint "$1")
    if [[ -n $c && $c != "$3" ]] && { [[ -z $3 ]] || js_reached "$c" "$3"; }; then
      echo "$c"
      return 0
    fi
    sleep 0.1
  done
  return 1
}
# Waits up to $2 s for the checkpoint under $1 to reach the source's end now.
js_wait_caught_up() {
  local end
  end=$(master)
  for _ in $(seq 1 $(($2 * 10))); do
    js_reached "$(js_checkpoint "$1")" "$end" && return 0
    sleep 0.1
  done
  fail "the sink stays at $(js_checkpoint "$1"), the source is at $end"
}

# check.py over output folder $1 (its extra arguments after), then its SQL applied to the target's
# copy of $db, which must then equal the source's.
js_check() {
  local out=$1
  shift
  python3 tests/json-sink/check.py "$out" "$db" "$@" >"$work/apply.sql" || fail "check.py"
  tgt <"$work/apply.sql" 2>"$work/apply.err" || fail "applying the changes failed: $(head -3 "$work/apply.err")"
  local s t
  s=$(js_digest src) t=$(js_digest tgt)
  [[ $s == "$t" ]] || fail "target + changes differs from the source: source $s, target $t"
  log "target + changes == source ($(tr '\n' ' ' <<<"$s"))"
}
js_digest() { # server function
  "$1" -N -B "$db" -e "SET time_zone = '+00:00';
    SELECT COUNT(*), IFNULL(SUM(CRC32(CONCAT_WS('|', id, v, n, d, dt, ts, HEX(b), e, u))), 0) FROM t1;
    SELECT COUNT(*), IFNULL(SUM(CRC32(CONCAT_WS('|', id, note, q))), 0) FROM t2;"
}

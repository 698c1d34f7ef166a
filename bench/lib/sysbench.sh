# shellcheck shell=bash
# sysbench-shaped tables and their write transaction, as SQL text on stdout (sourced by the bench
# scripts: bench/sync/run.sh, bench/big/run.sh). Content is deterministic: both sides of a bench
# built from the same calls hold the same rows.

# CREATE TABLE `schema`.sbtestI (id, k, c CHAR(120), pad CHAR(60), key on k)
sbtest_table_sql() { # schema i
  cat <<SQL
CREATE TABLE \`$1\`.sbtest$2 (id INT NOT NULL AUTO_INCREMENT PRIMARY KEY, k INT NOT NULL DEFAULT 0,
  c CHAR(120) NOT NULL DEFAULT '', pad CHAR(60) NOT NULL DEFAULT '', KEY k_$2 (k)) ENGINE=InnoDB;
SQL
}

# Its rows 1..rows from MariaDB's seq_A_to_B tables (in the current schema: `USE` one first), in
# statements of at most `chunk` rows (default: one statement), so a large table is no single
# transaction of gigabytes.
sbtest_fill_sql() { # schema i rows [chunk]
  local s=$1 i=$2 r=$3 step=${4:-$3} a b
  for ((a = 1; a <= r; a += step)); do
    b=$((a + step - 1 > r ? r : a + step - 1))
    cat <<SQL
INSERT INTO \`$s\`.sbtest$i (id, k, c, pad)
  SELECT seq, 1 + (seq * 7919 + $i) % $r, CONCAT(MD5(seq), MD5(seq + 1), MD5(seq + 2), LEFT(MD5(seq + 3), 23)),
         CONCAT(MD5(seq + $i), LEFT(MD5(seq + 7), 27)) FROM seq_${a}_to_$b;
SQL
  done
}

# sysbench oltp_write_only's four statements on sbtestI, for a stored procedure's body: an index
# update of row `a`, a non-index update of row `b`, a delete and an insert of row `d` (a, b and d
# are the procedure's variables; ids in 1..rows).
sbtest_txn_sql() { # schema i rows
  cat <<SQL
      UPDATE \`$1\`.sbtest$2 SET k = k + 1 WHERE id = a;
      UPDATE \`$1\`.sbtest$2 SET c = CONCAT(MD5(RAND()), MD5(RAND()), MD5(RAND()), LEFT(MD5(RAND()), 23)) WHERE id = b;
      DELETE FROM \`$1\`.sbtest$2 WHERE id = d;
      INSERT INTO \`$1\`.sbtest$2 (id, k, c, pad) VALUES (d, 1 + FLOOR(RAND() * $3),
        CONCAT(MD5(RAND()), MD5(RAND()), MD5(RAND()), LEFT(MD5(RAND()), 23)), CONCAT(MD5(RAND()), LEFT(MD5(RAND()), 27)));
SQL
}

# A stored procedure PROC(PARAMS) running those transactions, each on a random one of `tables`
# sbtest tables, paced to its parameter `rate` per second (0: as fast as it goes), while the loop
# head LOOP allows (a `WHILE ... DO` line, and any early exit after it); EXTRA runs in each
# transaction after the four statements, END once the loop is done. A deadlock or lock wait rolls
# the transaction back and goes on. Its variables: i (transactions committed), t0 (its start).
sbtest_proc_sql() { # proc params loop schema tables rows [extra] [end]
  local p=$1 params=$2 loop=$3 s=$4 n=$5 r=$6 extra=${7:-} end=${8:-} i
  cat <<SQL
DROP PROCEDURE IF EXISTS $p;
DELIMITER //
CREATE PROCEDURE $p($params)
BEGIN
  DECLARE i, t, a, b, d INT DEFAULT 0;
  DECLARE failed INT DEFAULT 0;
  DECLARE t0 DOUBLE DEFAULT UNIX_TIMESTAMP(SYSDATE(6));
  DECLARE ahead DOUBLE;
  DECLARE CONTINUE HANDLER FOR 1213, 1205 SET failed = 1;
  SET autocommit = 0;
$loop
    SET t = 1 + FLOOR(RAND() * $n), a = 1 + FLOOR(RAND() * $r), b = 1 + FLOOR(RAND() * $r),
        d = 1 + FLOOR(RAND() * $r), failed = 0;
    CASE t
SQL
  for i in $(seq 1 "$n"); do
    echo "    WHEN $i THEN"
    sbtest_txn_sql "$s" "$i" "$r"
  done
  echo "    END CASE;"
  [ -z "$extra" ] || echo "$extra"
  cat <<SQL
    IF failed THEN ROLLBACK; ELSE COMMIT; SET i = i + 1; END IF;
    IF rate > 0 THEN
      SET ahead = t0 + i / rate - UNIX_TIMESTAMP(SYSDATE(6));
      IF ahead > 0.002 THEN DO SLEEP(ahead); END IF;
    END IF;
  END WHILE;
  SET autocommit = 1;
${end:+$end
}END //
DELIMITER ;
SQL
}

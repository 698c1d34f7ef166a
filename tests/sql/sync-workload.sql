-- A write workload for the sync unit's tests (tests/crash/kill9_sync.sh): four tables of the shapes
-- a binlog replayer gets wrong, and two procedures. Database `sync_wl`; a test loads it under a name
-- of its own by replacing that name (as testdb_exec_file_renaming does for all-types.sql):
--
--   sed 's/sync_wl/mytest_db/g' tests/sql/sync-workload.sql | mariadb -h127.0.0.1 -P13306 -uroot
--
--   t_pk     INT primary key only, sysbench-like (id, k + index, c, pad)
--   t_uk     primary key and a UNIQUE secondary key `u`
--   t_nokey  no key at all: duplicate rows, NULLs
--   t_comp   composite VARCHAR + INT primary key; the VARCHAR changes case (equal under the
--            table's case-insensitive collation, different bytes)
--   wl_meta  the fill size (the workload's key space is 1..2*rows); a row ('case', 0) turns the
--            case changes of t_comp's key off
--
--   CALL sync_fill(rows);        replaces the content: t_pk and t_uk get `rows` rows, the others half
--   CALL workload(n, seed);      n transactions of 1-6 random statements, one in ten rolled back
--
-- workload's statements: single-row INSERT (ON DUPLICATE KEY UPDATE), UPDATE of non-key columns,
-- UPDATE of the primary key to a free id, UPDATE of the unique column to a free value, moving a
-- unique value from one row to another, REPLACE (which may delete two rows), DELETE, and multi-row
-- INSERT / UPDATE / DELETE / primary key shifts over ranges. It never fails on a duplicate key (free
-- values are looked up, and what could still collide uses IGNORE); any other error (a deadlock
-- when two clients run it) rolls back that transaction and goes on. The random numbers are a
-- linear congruential generator seeded by `seed` (@wl_seed), so one client's sequence of statements
-- is the same at every run.
SET NAMES utf8mb4;
DROP DATABASE IF EXISTS sync_wl;
CREATE DATABASE sync_wl CHARACTER SET utf8mb4;
USE sync_wl;

CREATE TABLE t_pk (
  id INT NOT NULL PRIMARY KEY,
  k INT NOT NULL DEFAULT 0,
  c CHAR(60) NOT NULL DEFAULT '',
  pad VARCHAR(60) NOT NULL DEFAULT '',
  KEY k_1 (k)
) ENGINE = InnoDB;

CREATE TABLE t_uk (
  id INT NOT NULL PRIMARY KEY,
  u INT NOT NULL,
  v VARCHAR(40),
  n INT NOT NULL DEFAULT 0,
  UNIQUE KEY uk_u (u)
) ENGINE = InnoDB;

CREATE TABLE t_nokey (
  a INT,
  b VARCHAR(40),
  c INT
) ENGINE = InnoDB;

CREATE TABLE t_comp (
  name VARCHAR(32) NOT NULL,
  seq INT NOT NULL,
  val INT NOT NULL DEFAULT 0,
  note VARCHAR(60),
  PRIMARY KEY (name, seq)
) ENGINE = InnoDB;

CREATE TABLE wl_meta (
  k VARCHAR(16) NOT NULL PRIMARY KEY,
  v INT NOT NULL
) ENGINE = InnoDB;

DELIMITER //

-- A random integer in lo..hi from the session's generator (@wl_seed).
CREATE FUNCTION wl_rnd(lo INT, hi INT) RETURNS INT NOT DETERMINISTIC NO SQL
BEGIN
  SET @wl_seed = (IFNULL(@wl_seed, 1) * 1103515245 + 12345) % 2147483648;
  RETURN lo + (@wl_seed DIV 65536) % (hi - lo + 1);
END//

-- Some text of length lo..hi.
CREATE FUNCTION wl_text(lo INT, hi INT) RETURNS VARCHAR(60) NOT DETERMINISTIC NO SQL
  RETURN LEFT(REPEAT(CONCAT(MD5(wl_rnd(0, 1000000000)), '-'), 2), wl_rnd(lo, hi))//

CREATE PROCEDURE sync_fill(nrows INT)
BEGIN
  DELETE FROM t_pk;
  DELETE FROM t_uk;
  DELETE FROM t_nokey;
  DELETE FROM t_comp;
  REPLACE INTO wl_meta VALUES ('rows', nrows);
  INSERT INTO t_pk (id, k, c, pad)
    SELECT seq, seq % 997, LEFT(REPEAT(MD5(seq), 2), 60), MD5(seq * 7) FROM seq_1_to_10000000
    WHERE seq <= nrows;
  INSERT INTO t_uk (id, u, v, n)
    SELECT seq, seq * 2, IF(seq % 17 = 0, NULL, MD5(seq)), seq % 13 FROM seq_1_to_10000000
    WHERE seq <= nrows;
  INSERT INTO t_nokey (a, b, c)
    SELECT seq % (nrows DIV 10 + 1), IF(seq % 11 = 0, NULL, CONCAT('b', seq % 7)), seq % 5
    FROM seq_1_to_10000000 WHERE seq <= nrows DIV 2;
  INSERT INTO t_comp (name, seq, val, note)
    SELECT CONCAT('n', seq % 50), seq, seq % 100, IF(seq % 9 = 0, NULL, MD5(seq))
    FROM seq_1_to_10000000 WHERE seq <= nrows DIV 2;
END//

CREATE PROCEDURE workload(n INT, seed INT)
BEGIN
  DECLARE i, j, m, op, sub, w, x, y, z, tries, sz INT DEFAULT 0;
  DECLARE case_changes INT DEFAULT 1;
  DECLARE s VARCHAR(32);
  SELECT v INTO sz FROM wl_meta WHERE k = 'rows';
  SELECT IFNULL(MAX(v), 1) INTO case_changes FROM wl_meta WHERE k = 'case';
  SET @wl_seed = seed;
  WHILE i < n DO
    SET i = i + 1;
    txn: BEGIN
      -- a deadlock or lock wait timeout (two clients): that transaction is rolled back
      DECLARE EXIT HANDLER FOR SQLEXCEPTION ROLLBACK;
      START TRANSACTION;
      SET m = wl_rnd(1, 6), j = 0;
      WHILE j < m DO
        SET j = j + 1, op = wl_rnd(1, 16), sub = wl_rnd(1, 4), x = wl_rnd(1, 2 * sz), w = wl_rnd(1, 20);
        CASE op
        WHEN 1 THEN -- one row in; an existing id becomes an update
          INSERT INTO t_pk (id, k, c, pad) VALUES (x, wl_rnd(0, 996), wl_text(10, 60), wl_text(0, 60))
            ON DUPLICATE KEY UPDATE k = k + 1, c = VALUES(c);
        WHEN 2 THEN -- non-key columns of one row
          UPDATE t_pk SET k = wl_rnd(0, 996), c = wl_text(10, 60) WHERE id = x;
        WHEN 3 THEN -- the primary key of one row, to a free id
          SELECT MIN(id) INTO x FROM t_pk WHERE id >= x;
          SET tries = 0, y = wl_rnd(1, 2 * sz);
          WHILE tries < 5 AND EXISTS (SELECT 1 FROM t_pk WHERE id = y) DO
            SET tries = tries + 1, y = wl_rnd(1, 2 * sz);
          END WHILE;
          UPDATE IGNORE t_pk SET id = y, pad = 'moved' WHERE id = x;
        WHEN 4 THEN
          DELETE FROM t_pk WHERE id = x;
        WHEN 5 THEN -- a range in, existing ids kept or updated
          IF sub <= 2 THEN
            INSERT IGNORE INTO t_pk (id, k, c, pad)
              SELECT seq, seq % 997, 'range insert', wl_text(0, 60) FROM seq_1_to_10000000
              WHERE seq BETWEEN x AND x + w;
          ELSE
            INSERT INTO t_pk (id, k, c, pad)
              SELECT seq, seq % 997, 'range upsert', '' FROM seq_1_to_10000000
              WHERE seq BETWEEN x AND x + w
              ON DUPLICATE KEY UPDATE k = t_pk.k + 1, pad = 'upserted';
          END IF;
        WHEN 6 THEN -- non-key columns of a range, by key or by the secondary index
          IF sub <= 2 THEN
            UPDATE t_pk SET k = k + 1, pad = wl_text(0, 60) WHERE id BETWEEN x AND x + w + 10;
          ELSE
            SET y = wl_rnd(0, 996);
            UPDATE t_pk SET k = k + 1, c = 'by k' WHERE k BETWEEN y AND y + 1;
          END IF;
        WHEN 7 THEN
          DELETE FROM t_pk WHERE id BETWEEN x AND x + w DIV 2;
        WHEN 8 THEN -- primary keys of a range shifted by one (each row onto its neighbour's old id)
          IF sub <= 2 THEN
            UPDATE IGNORE t_pk SET id = id + 1 WHERE id BETWEEN x AND x + w DIV 2 ORDER BY id DESC;
          ELSE
            UPDATE IGNORE t_pk SET id = id - 1 WHERE id BETWEEN x AND x + w DIV 2 ORDER BY id ASC;
          END IF;
        WHEN 9 THEN -- one row in t_uk, free id and free unique value
          SET tries = 0, y = wl_rnd(1, 4 * sz);
          WHILE tries < 5 AND EXISTS (SELECT 1 FROM t_uk WHERE u = y) DO
            SET tries = tries + 1, y = wl_rnd(1, 4 * sz);
          END WHILE;
          INSERT IGNORE INTO t_uk (id, u, v, n) VALUES (x, y, IF(sub = 1, NULL, wl_text(1, 40)), sub);
        WHEN 10 THEN -- the unique column of one row, to a free value
          SET tries = 0, y = wl_rnd(1, 4 * sz);
          WHILE tries < 5 AND EXISTS (SELECT 1 FROM t_uk WHERE u = y) DO
            SET tries = tries + 1, y = wl_rnd(1, 4 * sz);
          END WHILE;
          IF sub <= 2 THEN
            UPDATE IGNORE t_uk SET u = y, n = n + 1 WHERE id = x;
          ELSE -- both keys of one row at once
            SET z = wl_rnd(1, 2 * sz);
            UPDATE IGNORE t_uk SET u = y, id = z WHERE id = x;
          END IF;
        WHEN 11 THEN -- a unique value moves from one row to another (the order matters downstream)
          SELECT MIN(id) INTO x FROM t_uk WHERE id >= x;
          SET y = NULL;
          SELECT u INTO y FROM t_uk WHERE id = x;
          IF y IS NOT NULL THEN
            SET tries = 0, z = wl_rnd(1, 4 * sz);
            WHILE tries < 5 AND EXISTS (SELECT 1 FROM t_uk WHERE u = z) DO
              SET tries = tries + 1, z = wl_rnd(1, 4 * sz);
            END WHILE;
            UPDATE IGNORE t_uk SET u = z WHERE id = x;
            UPDATE IGNORE t_uk SET u = y, v = 'took u' WHERE id = (SELECT MIN(id) FROM t_uk WHERE id > x);
          END IF;
        WHEN 12 THEN -- REPLACE: may delete the row with this id and another one with this u
          SET y = wl_rnd(1, 4 * sz);
          REPLACE INTO t_uk (id, u, v, n) VALUES (x, y, 'replaced', sub);
        WHEN 13 THEN -- deletes; or a row deleted and its unique value taken by a new row
          IF sub = 1 THEN
            DELETE FROM t_uk WHERE id BETWEEN x AND x + w DIV 3;
          ELSEIF sub = 2 THEN
            DELETE FROM t_uk WHERE id = x;
          ELSE
            SET y = NULL;
            SELECT u INTO y FROM t_uk WHERE id = (SELECT MIN(id) FROM t_uk WHERE id >= x);
            IF y IS NOT NULL THEN
              DELETE FROM t_uk WHERE u = y;
              SET tries = 0, z = wl_rnd(1, 2 * sz);
              WHILE tries < 5 AND EXISTS (SELECT 1 FROM t_uk WHERE id = z) DO
                SET tries = tries + 1, z = wl_rnd(1, 2 * sz);
              END WHILE;
              INSERT IGNORE INTO t_uk (id, u, v, n) VALUES (z, y, 'reborn', 0);
            END IF;
          END IF;
        WHEN 14 THEN -- no key: duplicates, NULLs, several rows per value of a
          SET y = wl_rnd(0, sz DIV 10);
          IF sub = 1 THEN
            INSERT INTO t_nokey (a, b, c) VALUES (y, CONCAT('b', wl_rnd(0, 6)), wl_rnd(0, 4)),
              (y, CONCAT('b', wl_rnd(0, 6)), wl_rnd(0, 4)), (y, NULL, wl_rnd(0, 4));
          ELSEIF sub = 2 THEN
            UPDATE t_nokey SET c = c + 1, b = IF(c % 3 = 0, NULL, CONCAT('b', c)) WHERE a = y;
          ELSEIF sub = 3 THEN
            DELETE FROM t_nokey WHERE a = y LIMIT 2;
          ELSE
            DELETE FROM t_nokey WHERE a = y AND b IS NULL LIMIT 1;
          END IF;
        WHEN 15 THEN -- composite key: insert, non-key update, key update, case change, delete
          SET s = CONCAT('n', wl_rnd(0, 49)), y = wl_rnd(1, sz);
          IF sub = 1 THEN
            INSERT INTO t_comp (name, seq, val, note) VALUES (s, y, wl_rnd(0, 99), wl_text(0, 60))
              ON DUPLICATE KEY UPDATE val = val + 1;
          ELSEIF sub = 2 THEN
            UPDATE t_comp SET val = val + 1, note = IF(val % 4 = 0, NULL, wl_text(1, 60))
              WHERE name = s AND seq BETWEEN y AND y + 20;
          ELSEIF sub = 3 THEN
            SET z = wl_rnd(1, sz);
            IF wl_rnd(0, 1) = 0 THEN
              UPDATE IGNORE t_comp SET seq = z WHERE name = s AND seq = (SELECT MIN(seq) FROM t_comp WHERE name = s AND seq >= y);
            ELSE
              UPDATE IGNORE t_comp SET name = CONCAT('m', wl_rnd(0, 49)) WHERE name = s AND seq BETWEEN y AND y + 5;
            END IF;
          ELSE
            IF wl_rnd(0, 1) = 0 AND case_changes THEN
              UPDATE t_comp SET name = IF(BINARY name = LOWER(name), UPPER(name), LOWER(name))
                WHERE name = s AND seq BETWEEN y AND y + 30;
            ELSE
              DELETE FROM t_comp WHERE name = s AND seq BETWEEN y AND y + 10;
            END IF;
          END IF;
        ELSE -- 16: non-key columns of many rows by the secondary index
          SET y = wl_rnd(0, 996);
          UPDATE t_pk SET pad = wl_text(0, 60) WHERE k = y;
        END CASE;
      END WHILE;
      IF wl_rnd(1, 10) = 1 THEN
        ROLLBACK;
      ELSE
        COMMIT;
      END IF;
    END txn;
  END WHILE;
END//

DELIMITER ;

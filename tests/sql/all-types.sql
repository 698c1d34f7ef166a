-- Every MariaDB (10.11) column type, with edge values, for tests that copy data and must get every
-- byte back: types_db.all_types (one column per type), types_db.no_pk (no primary key, duplicate
-- rows, rows equal under a case-insensitive collation but not byte for byte), types_db.auto_zero
-- (an AUTO_INCREMENT key holding 0) and types_db.`weird.name/表 x` (names that need quoting).
--
-- Load: mariadb -h127.0.0.1 -P13306 -uroot < tests/sql/all-types.sql   (drops types_db first)
--
-- Row ids of all_types:
--   1 minimum values          2 maximum values          3 zeros and zero dates
--   4 NULL in every nullable column                      5 empty strings
--   6 quotes, backslashes, newlines, ';', NUL; every byte 0x00..0xff in binary columns
--   7 multibyte text (emoji, CJK, RTL, combining), latin1 bytes 0x80..0xff, 2 MiB blob
--   8 awkward floats (-0, denormals, 0.1), fractional seconds, spatial shapes with holes
--   9-14 FLOAT and DOUBLE values whose text form is easy to get wrong
--
-- Measured on 10.11: MariaDB stores -0 as 0; the text protocol prints FLOAT with 6 significant
-- digits, so a copy through text (mariadb-dump) changes the FLOAT of rows 1, 2, 12 and 13;
-- SELECT CAST(c_float AS DOUBLE) gives the exact value.

-- Zero dates and 0 in an AUTO_INCREMENT column, as the dump and load units' sessions allow;
-- strict, so a value that does not fit fails the load instead of being silently changed.
SET sql_mode = 'NO_AUTO_VALUE_ON_ZERO,STRICT_ALL_TABLES';
SET NAMES utf8mb4;
-- TIMESTAMP values are given in UTC.
SET time_zone = '+00:00';

DROP DATABASE IF EXISTS types_db;
CREATE DATABASE types_db CHARACTER SET utf8mb4;
USE types_db;

CREATE TABLE all_types (
  id INT NOT NULL PRIMARY KEY,
  -- integers
  c_tinyint TINYINT NULL,
  c_tinyint_u TINYINT UNSIGNED NULL,
  c_smallint SMALLINT NULL,
  c_smallint_u SMALLINT UNSIGNED NULL,
  c_mediumint MEDIUMINT NULL,
  c_mediumint_u MEDIUMINT UNSIGNED NULL,
  c_int INT NULL,
  c_int_u INT UNSIGNED NULL,
  c_bigint BIGINT NULL,
  c_bigint_u BIGINT UNSIGNED NULL,
  c_bool BOOLEAN NULL,
  c_int_zerofill INT(8) UNSIGNED ZEROFILL NULL,
  -- fixed and floating point
  c_decimal65 DECIMAL(65,30) NULL,
  c_decimal10 DECIMAL(10,2) NULL,
  c_decimal_int DECIMAL(20,0) NULL,
  c_float FLOAT NULL,
  c_double DOUBLE NULL,
  -- bits
  c_bit1 BIT(1) NULL,
  c_bit5 BIT(5) NULL,
  c_bit64 BIT(64) NULL,
  -- time
  c_date DATE NULL,
  c_time TIME NULL,
  c_time6 TIME(6) NULL,
  c_datetime DATETIME NULL,
  c_datetime6 DATETIME(6) NULL,
  c_timestamp TIMESTAMP NULL DEFAULT NULL,
  c_timestamp6 TIMESTAMP(6) NULL DEFAULT NULL,
  c_year YEAR NULL,
  -- text, utf8mb4
  c_char CHAR(20) CHARACTER SET utf8mb4 NULL,
  c_varchar VARCHAR(300) CHARACTER SET utf8mb4 NULL,
  c_tinytext TINYTEXT CHARACTER SET utf8mb4 NULL,
  c_text TEXT CHARACTER SET utf8mb4 NULL,
  c_mediumtext MEDIUMTEXT CHARACTER SET utf8mb4 NULL,
  c_longtext LONGTEXT CHARACTER SET utf8mb4 NULL,
  c_varchar_bin VARCHAR(50) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
  -- text, latin1 (MariaDB's latin1 is cp1252: 0x80 is the euro sign)
  c_char_latin1 CHAR(20) CHARACTER SET latin1 NULL,
  c_varchar_latin1 VARCHAR(300) CHARACTER SET latin1 NULL,
  c_text_latin1 TEXT CHARACTER SET latin1 NULL,
  -- binary
  c_binary BINARY(16) NULL,
  c_varbinary VARBINARY(300) NULL,
  c_tinyblob TINYBLOB NULL,
  c_blob BLOB NULL,
  c_mediumblob MEDIUMBLOB NULL,
  c_longblob LONGBLOB NULL,
  -- lists and documents
  -- Values of 4-byte characters (emoji) are stored, but SHOW CREATE TABLE prints them as '?'
  -- (metadata is utf8mb3), so no schema copy can recreate them: 3-byte '日' is the widest here.
  c_enum ENUM('', 'a', 'b', 'ç', '日', 'with space') NULL,
  c_set SET('x', 'y', 'z', 'é') NULL,
  c_json JSON NULL,
  -- types from MariaDB's type plugins
  c_inet4 INET4 NULL,
  c_inet6 INET6 NULL,
  c_uuid UUID NULL,
  -- spatial
  c_geometry GEOMETRY NULL,
  c_point POINT NULL,
  c_linestring LINESTRING NULL,
  c_polygon POLYGON NULL,
  c_multipoint MULTIPOINT NULL,
  c_multilinestring MULTILINESTRING NULL,
  c_multipolygon MULTIPOLYGON NULL,
  c_geomcollection GEOMETRYCOLLECTION NULL,
  -- generated: the dump leaves them out, the target computes them
  c_virtual BIGINT AS (c_int + 1) VIRTUAL,
  c_stored VARCHAR(320) CHARACTER SET utf8mb4 AS (CONCAT('[', c_varchar, ']')) STORED
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

-- Every byte value once, in order: 0x00 0x01 ... 0xff.
SET @all_bytes = (SELECT UNHEX(GROUP_CONCAT(LPAD(HEX(seq), 2, '0') ORDER BY seq SEPARATOR ''))
                  FROM seq_0_to_255);

-- 1: minimum values
INSERT INTO all_types (id, c_tinyint, c_tinyint_u, c_smallint, c_smallint_u, c_mediumint,
  c_mediumint_u, c_int, c_int_u, c_bigint, c_bigint_u, c_bool, c_int_zerofill,
  c_decimal65, c_decimal10, c_decimal_int, c_float, c_double,
  c_bit1, c_bit5, c_bit64,
  c_date, c_time, c_time6, c_datetime, c_datetime6, c_timestamp, c_timestamp6, c_year,
  c_char, c_varchar, c_tinytext, c_text, c_mediumtext, c_longtext, c_varchar_bin,
  c_char_latin1, c_varchar_latin1, c_text_latin1,
  c_binary, c_varbinary, c_tinyblob, c_blob, c_mediumblob, c_longblob,
  c_enum, c_set, c_json, c_inet4, c_inet6, c_uuid,
  c_geometry, c_point, c_linestring, c_polygon, c_multipoint, c_multilinestring, c_multipolygon,
  c_geomcollection)
VALUES (1, -128, 0, -32768, 0, -8388608, 0, -2147483648, 0, -9223372036854775808, 0, FALSE, 0,
  -99999999999999999999999999999999999.999999999999999999999999999999, -99999999.99,
  -99999999999999999999, -3.402823466e38, -1.7976931348623157e308,
  b'0', b'00000', b'0000000000000000000000000000000000000000000000000000000000000000',
  '1000-01-01', '-838:59:59', '-838:59:59.999999', '1000-01-01 00:00:00',
  '1000-01-01 00:00:00.000000', '1970-01-01 00:00:01', '1970-01-01 00:00:01.000000', 1901,
  'a', 'a', 'a', 'a', 'a', 'a', 'A',
  'a', 'a', 'a',
  UNHEX('000102030405060708090A0B0C0D0E0F'), 0x00, 0x00, 0x00, 0x00, 0x00,
  '', 'x', '[]', '0.0.0.0', '::', '00000000-0000-0000-0000-000000000000',
  ST_GeomFromText('POINT(-180 -90)'), ST_GeomFromText('POINT(-180 -90)'),
  ST_GeomFromText('LINESTRING(-1 -1,-2 -2)'),
  ST_GeomFromText('POLYGON((-1 -1,-1 -2,-2 -2,-1 -1))'),
  ST_GeomFromText('MULTIPOINT(-1 -1)'), ST_GeomFromText('MULTILINESTRING((-1 -1,-2 -2))'),
  ST_GeomFromText('MULTIPOLYGON(((-1 -1,-1 -2,-2 -2,-1 -1)))'),
  ST_GeomFromText('GEOMETRYCOLLECTION(POINT(-1 -1))'));

-- 2: maximum values
INSERT INTO all_types (id, c_tinyint, c_tinyint_u, c_smallint, c_smallint_u, c_mediumint,
  c_mediumint_u, c_int, c_int_u, c_bigint, c_bigint_u, c_bool, c_int_zerofill,
  c_decimal65, c_decimal10, c_decimal_int, c_float, c_double,
  c_bit1, c_bit5, c_bit64,
  c_date, c_time, c_time6, c_datetime, c_datetime6, c_timestamp, c_timestamp6, c_year,
  c_char, c_varchar, c_tinytext, c_text, c_mediumtext, c_longtext, c_varchar_bin,
  c_char_latin1, c_varchar_latin1, c_text_latin1,
  c_binary, c_varbinary, c_tinyblob, c_blob, c_mediumblob, c_longblob,
  c_enum, c_set, c_json, c_inet4, c_inet6, c_uuid,
  c_geometry, c_point, c_linestring, c_polygon, c_multipoint, c_multilinestring, c_multipolygon,
  c_geomcollection)
VALUES (2, 127, 255, 32767, 65535, 8388607, 16777215, 2147483647, 4294967295,
  9223372036854775807, 18446744073709551615, TRUE, 4294967295,
  99999999999999999999999999999999999.999999999999999999999999999999, 99999999.99,
  99999999999999999999, 3.402823466e38, 1.7976931348623157e308,
  b'1', b'11111', b'1111111111111111111111111111111111111111111111111111111111111111',
  '9999-12-31', '838:59:59', '838:59:59.999999', '9999-12-31 23:59:59',
  '9999-12-31 23:59:59.999999', '2038-01-19 03:14:07', '2038-01-19 03:14:07.999999', 2155,
  -- CHAR(20) full of 4-byte characters: 80 bytes in a 20-character column
  REPEAT('😀', 20), REPEAT('z', 300), REPEAT('é', 127), REPEAT('Ω', 32767),
  REPEAT('long ', 100000), REPEAT('longer ', 300000), REPEAT('Z', 50),
  REPEAT('ÿ', 20), REPEAT('ÿ', 300), REPEAT('ÿ', 65535),
  UNHEX('F0F1F2F3F4F5F6F7F8F9FAFBFCFDFEFF'), REPEAT(0xFF, 300), REPEAT(0xFF, 255),
  REPEAT(0xFF, 65535), REPEAT(0xFF, 100000), REPEAT(0xFF, 200000),
  'with space', 'x,y,z,é', '{"n": 18446744073709551615, "f": 1.7976931348623157e308}',
  '255.255.255.255', 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff',
  'ffffffff-ffff-ffff-ffff-ffffffffffff',
  ST_GeomFromText('POINT(180 90)'), ST_GeomFromText('POINT(1e300 -1e-300)'),
  ST_GeomFromText('LINESTRING(0 0,1 1,2 4,3 9,4 16,5 25)'),
  ST_GeomFromText('POLYGON((0 0,100 0,100 100,0 100,0 0))'),
  ST_GeomFromText('MULTIPOINT(1 1,2 2,3 3)'),
  ST_GeomFromText('MULTILINESTRING((0 0,1 1),(2 2,3 3))'),
  ST_GeomFromText('MULTIPOLYGON(((0 0,1 0,1 1,0 0)),((5 5,6 5,6 6,5 5)))'),
  ST_GeomFromText('GEOMETRYCOLLECTION(POINT(1 1),LINESTRING(0 0,1 1),POLYGON((0 0,1 0,1 1,0 0)))'));

-- 3: zeros and zero dates
INSERT INTO all_types (id, c_tinyint, c_tinyint_u, c_smallint, c_smallint_u, c_mediumint,
  c_mediumint_u, c_int, c_int_u, c_bigint, c_bigint_u, c_bool, c_int_zerofill,
  c_decimal65, c_decimal10, c_decimal_int, c_float, c_double,
  c_bit1, c_bit5, c_bit64,
  c_date, c_time, c_time6, c_datetime, c_datetime6, c_timestamp, c_timestamp6, c_year,
  c_char, c_varchar, c_text, c_varchar_latin1, c_binary, c_blob, c_enum, c_set, c_json,
  c_inet4, c_inet6, c_uuid, c_point)
VALUES (3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 42,
  0, 0, 0, 0, 0,
  b'0', b'10101', 0x8000000000000001,
  '0000-00-00', '00:00:00', '-00:00:00.000001', '0000-00-00 00:00:00',
  '0000-00-00 00:00:00.000000', '0000-00-00 00:00:00', '0000-00-00 00:00:00.000000', 0,
  '0', '0', '0', '0', 0x00, 0x00, 'a', '', '0',
  '0.0.0.1', '::1', '00000000-0000-0000-0000-000000000001', ST_GeomFromText('POINT(0 0)'));
-- A DATETIME with zero month and day (allowed: NO_ZERO_IN_DATE is not set).
UPDATE all_types SET c_datetime = '2024-00-00 00:00:00' WHERE id = 3;

-- 4: NULL in every nullable column (generated columns compute NULL)
INSERT INTO all_types (id) VALUES (4);

-- 5: empty strings (BINARY(16) pads '' with 16 zero bytes; JSON must hold a valid document)
INSERT INTO all_types (id, c_char, c_varchar, c_tinytext, c_text, c_mediumtext, c_longtext,
  c_varchar_bin, c_char_latin1, c_varchar_latin1, c_text_latin1,
  c_binary, c_varbinary, c_tinyblob, c_blob, c_mediumblob, c_longblob, c_enum, c_set, c_json)
VALUES (5, '', '', '', '', '', '', '', '', '', '', '', '', '', '', '', '', '', '', '""');

-- 6: characters that break naive quoting, and every byte value in the binary columns
SET @nasty = CONCAT('it''s "quoted" `ticked` \\back\\slash\\ \\\\ end\\', '\n',
                    'line 2\r\nline 3; DROP TABLE all_types; -- not a comment /* nor this */ #',
                    '\0', 'after NUL \Z ctrl-Z \t tab %_ wildcards', '\0');
INSERT INTO all_types (id, c_char, c_varchar, c_tinytext, c_text, c_mediumtext, c_longtext,
  c_varchar_bin, c_char_latin1, c_varchar_latin1, c_text_latin1,
  c_binary, c_varbinary, c_tinyblob, c_blob, c_mediumblob, c_longblob, c_enum, c_set, c_json)
VALUES (6, 'a''b"c\\d;e\nf\0g', @nasty, @nasty, @nasty, @nasty, @nasty, 'x\0y\0',
  'a''b"c\\d;e\nf\0g', @nasty, CONVERT(@all_bytes USING latin1),
  SUBSTR(@all_bytes, 1, 16), @all_bytes, SUBSTR(@all_bytes, 1, 255), @all_bytes,
  REPEAT(@all_bytes, 256), REVERSE(@all_bytes),
  'b', 'y', '{"s": "quote \\" backslash \\\\ newline \\n nul \\u0000 ;", "k\\"ey": [1, "\\t"]}');

-- 7: multibyte text, latin1 high bytes, a 2 MiB blob (bigger than one dump statement)
INSERT INTO all_types (id, c_char, c_varchar, c_tinytext, c_text, c_mediumtext, c_longtext,
  c_varchar_bin, c_char_latin1, c_varchar_latin1, c_text_latin1,
  c_binary, c_varbinary, c_blob, c_longblob, c_enum, c_set, c_json,
  c_inet4, c_inet6, c_uuid, c_int, c_datetime6, c_time6)
VALUES (7, '😀🐙👍🏽 日本語', 'Zoë Ångström, 山田太郎, Иван, שלום, أحمد, 𠜎𠝹, é (e + U+0301), ß, ﬁ',
  '👨‍👩‍👧‍👦 family (ZWJ sequence)', REPEAT('日本語テキスト 😀 ', 1000), 'Ω≈ç√∫˜µ≤≥÷',
  REPEAT('ünïcödé ', 50000), 'Ünïcödé',
  'é', CONVERT(SUBSTR(@all_bytes, 129) USING latin1), 'café, naïve, € £ ¥ © ® ½ ÿ',
  UNHEX('00FF00FF00FF00FF00FF00FF00FF00FF'), 0x80, REPEAT(REVERSE(@all_bytes), 200),
  REPEAT(@all_bytes, 8192), '日', 'é,x', '{"emoji": "😀", "cjk": "日本", "esc": "\\u00e9"}',
  '192.168.1.1', '::ffff:1.2.3.4', '123e4567-e89b-12d3-a456-426655440000', 7,
  '2024-02-29 12:34:56.000001', '123:45:06.5');

-- 8: awkward floating point, fractional seconds, spatial shapes with holes
INSERT INTO all_types (id, c_decimal65, c_decimal10, c_decimal_int, c_float, c_double,
  c_time, c_time6, c_datetime6, c_timestamp6, c_year, c_bigint, c_bigint_u, c_int_zerofill,
  c_varchar, c_inet6, c_geometry, c_polygon, c_multipolygon, c_geomcollection)
VALUES (8, -0.000000000000000000000000000001, -0.01, -1, -0.0e0, -0.0e0,
  '-00:00:01', '-12:00:00.5', '2000-01-01 00:00:00.999999', '2001-09-09 01:46:40.123456', 2000,
  -1, 9223372036854775808, 1,
  'trailing spaces   ', '2001:db8::8a2e:370:7334',
  ST_GeomFromText('POLYGON((0 0,10 0,10 10,0 10,0 0),(2 2,3 2,3 3,2 2))'),
  ST_GeomFromText('POLYGON((0 0,10 0,10 10,0 10,0 0),(2 2,3 2,3 3,2 2))'),
  ST_GeomFromText('MULTIPOLYGON(((0 0,10 0,10 10,0 0),(1 1,2 1,2 2,1 1)),((20 20,30 20,30 30,20 20)))'),
  ST_GeomFromText('GEOMETRYCOLLECTION(MULTIPOINT(1 1,2 2),GEOMETRYCOLLECTION(POINT(3 3)))'));
-- Floating point values whose text form is easy to get wrong.
INSERT INTO all_types (id, c_float, c_double) VALUES
  (9, 1.17549e-38, 2.2250738585072014e-308),   -- smallest normal
  (10, 1e-45, 5e-324),                          -- smallest denormal
  (11, 0.1, 0.1),                               -- not exact in binary
  (12, 16777217, 9007199254740993),             -- beyond the mantissa: rounds
  (13, 3.14159274, 0.30000000000000004),
  (14, -1.5e-7, 1.0000000000000002);

-- No primary key: duplicate rows (also duplicates holding NULL), and rows equal under the
-- case-insensitive collation but different byte for byte.
CREATE TABLE no_pk (
  a INT NULL,
  b VARCHAR(20) NULL,
  c DOUBLE NULL,
  d BLOB NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
INSERT INTO no_pk VALUES
  (1, 'dup', 1.5, 0x00), (1, 'dup', 1.5, 0x00), (1, 'dup', 1.5, 0x00),
  (NULL, NULL, NULL, NULL), (NULL, NULL, NULL, NULL),
  (2, 'abc', 0, 'x'), (2, 'ABC', 0, 'x'), (2, 'Abc', 0, 'x'), (2, 'abc', 0, 'x'),
  (3, 'é', -0.0e0, ''), (3, 'É', 0, ''), (3, 'e', 0, NULL);

-- An AUTO_INCREMENT key holding 0: loads as 0 only with NO_AUTO_VALUE_ON_ZERO.
CREATE TABLE auto_zero (
  id INT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  v VARCHAR(10) NOT NULL
) ENGINE=InnoDB;
INSERT INTO auto_zero (id, v) VALUES (0, 'zero'), (1, 'one'), (5, 'five');

-- Names that need quoting everywhere: a reserved word, spaces, a dot and a slash (escaped in dump
-- file names), a backtick, non-ASCII.
CREATE TABLE `weird.name/表 x` (
  `select` INT NOT NULL PRIMARY KEY,
  `col with space` VARCHAR(20) NULL,
  `ünï 列` INT NULL,
  `back``tick` INT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
INSERT INTO `weird.name/表 x` VALUES (1, 'one', 1, 1), (2, NULL, NULL, NULL), (-1, 'minus', -1, -1);

/* How the DDL reader (plugins/sync/sync_ddl.c) reads a statement's text: statements it leaves as
 * they are, refusals that name the byte, a ';' between statements, and the text read as the source
 * wrote it (sql_mode NO_BACKSLASH_ESCAPES and ANSI_QUOTES, multi-byte charsets). */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cunit_run.h"
#include "sync_ddl.h"
#include "sync_ddl_test_util.h"

/* ---- OTHER ------------------------------------------------------------------------------------
 */

static void test_other_left_as_is(void) {
  static const char *const other[] = {
      "CREATE VIEW v AS SELECT * FROM orders",
      "CREATE OR REPLACE ALGORITHM=MERGE VIEW shop.v AS SELECT 1",
      "CREATE DEFINER=`root`@`%` TRIGGER trg BEFORE INSERT ON t FOR EACH ROW SET NEW.a = 1",
      "DROP VIEW IF EXISTS v",
      "ALTER VIEW v AS SELECT 1",
      "GRANT SELECT ON shop.* TO 'u'@'%'",
      "CREATE USER u IDENTIFIED BY 'p'",
      "RENAME USER a TO b",
      "ANALYZE TABLE orders",
      "OPTIMIZE TABLE orders",
      "CREATE TEMPORARY SEQUENCE s",
      "DROP PROCEDURE IF EXISTS p",
      "SET @x = 'unterminated", /* does not even lex: still handed over whole */
      "/*!40101 SET NAMES utf8 */",
      "-- only a comment\n",
      "",
      "BEGIN",
  };
  for (size_t k = 0; k < sizeof other / sizeof other[0]; k++) {
    sync_ddl d;
    char msg[256];
    CU_ASSERT_EQUAL_FATAL(sync_ddl_parse(other[k], strlen(other[k]), "shop", &d, msg, sizeof msg),
                          0);
    CU_ASSERT_EQUAL_FATAL(d.n, 1);
    CU_ASSERT_EQUAL(d.stmts[0].kind, SYNC_DDL_OTHER);
    CU_ASSERT_STRING_EQUAL(d.stmts[0].sql, other[k]);
    CU_ASSERT_EQUAL(d.stmts[0].n_refs, 0);
    CU_ASSERT_FALSE(d.stmts[0].has_other);
    CU_ASSERT_EQUAL(d.stmts[0].subject.schema[0], '\0');
    dm_buf out = {0};
    CU_ASSERT_EQUAL(sync_ddl_rewrite(&d.stmts[0], test_route, (void *)&R_BOTH, false, &out), 0);
    CU_ASSERT_STRING_EQUAL(out.p, other[k]);
    dm_buf_free(&out);
    sync_ddl_free(&d);
  }
}

/* ---- errors -----------------------------------------------------------------------------------
 */

static void expect_error(const char *sql, const char *db, unsigned flags, const char *want) {
  sync_ddl d = {(sync_ddl_stmt *)&d, 99, 7}; /* garbage in: parse must set it */
  char msg[512];
  int rc = sync_ddl_parse_mode(sql, strlen(sql), db, flags, &d, msg, sizeof msg);
  CU_ASSERT_EQUAL(rc, -1);
  CU_ASSERT_EQUAL(d.n, 0);
  CU_ASSERT_PTR_NULL(d.stmts);
  if (strcmp(msg, want) != 0)
    fprintf(stderr, "\n%s\n  got  %s\n  want %s\n", sql, msg, want);
  CU_ASSERT_STRING_EQUAL(msg, want);
}

static void test_errors_name_the_byte(void) {
  expect_error("DROP TABLE", "shop", 0,
               "drop table: expected a table name at byte 10 (end of "
               "statement)");
  expect_error("DROP TABLE a,, b", "shop", 0,
               "drop table: expected a table name at byte 13, near \", b\"");
  expect_error("DROP TABLE t", "", 0,
               "drop table: table name without a schema, and the event has no default database "
               "at byte 11, near \"t\"");
  expect_error("RENAME TABLE a b", "shop", 0, "rename table: expected TO at byte 15, near \"b\"");
  expect_error("DROP DATABASE shop extra", "", 0,
               "drop database: unexpected text after the statement at byte 19, near \"extra\"");
  expect_error("CREATE TABLE IF EXISTS t (a int)", "shop", 0,
               "create table: expected NOT after IF at byte 16, near \"EXISTS t (a int)\"");
  expect_error("CREATE TABLE `unterminated (a int)", "shop", 0,
               "create table: unterminated `quoted` name at byte 13, near \"`unterminated (a "
               "int)\"");
  expect_error("CREATE TABLE t (a int) /*!50100 PARTITION BY HASH (a)", "shop", 0,
               "create table: unterminated versioned comment at byte 23, near \"/*!50100 PARTITION "
               "BY HA\"");
  expect_error("ALTER DATABASE CHARACTER SET x", "", 0,
               "alter database: no database named, and the event has no default database at "
               "byte 15, near \"CHARACTER SET x\"");
  expect_error("CREATE INDEX i ON", "shop", 0,
               "create index: expected a table name after ON at byte 17 (end of statement)");
  expect_error("DROP INDEX i FROM t", "shop", 0,
               "drop index: expected ON at byte 13, near \"FROM t\"");
  expect_error("ALTER TABLE t RENAME TO", "shop", 0,
               "alter table: expected a table name after RENAME at byte 23 (end of statement)");
  expect_error("CREATE TABLE t (a int, FOREIGN KEY (a) REFERENCES (id))", "shop", 0,
               "create table: expected a table name after REFERENCES at byte 50, near \"(id))\"");
  expect_error("TRUNCATE TABLE", "shop", 0,
               "truncate table: expected a table name at byte 14 (end of statement)");
  expect_error("CREATE DATABASE ``", "", 0, "create database: empty name at byte 16, near \"``\"");
  /* Splitting would cut the comment open: refused, not mangled. */
  expect_error("DROP TABLE a /*!50000 , b */", "shop", 0,
               "drop table: cannot split a list that crosses a versioned comment at byte 22, near "
               "\", b */\"");
  /* The excerpt stops at the end of the line. */
  expect_error("DROP TABLE a b\nmore", "shop", 0,
               "drop table: unexpected text after the statement at byte 13, near \"b\"");

  char longname[400];
  memset(longname, 'x', 300);
  longname[300] = '\0';
  char sql[512];
  snprintf(sql, sizeof sql, "DROP TABLE %s", longname);
  sync_ddl d;
  char msg[512];
  CU_ASSERT_EQUAL(sync_ddl_parse(sql, strlen(sql), "shop", &d, msg, sizeof msg), -1);
  CU_ASSERT_PTR_NOT_NULL(strstr(msg, "name longer than 255 bytes at byte 11"));
  /* 255 bytes is the most a name may hold, and it is kept whole. */
  snprintf(sql, sizeof sql, "DROP TABLE `%.255s`", longname);
  CU_ASSERT_EQUAL_FATAL(sync_ddl_parse(sql, strlen(sql), "shop", &d, msg, sizeof msg), 0);
  CU_ASSERT_EQUAL(strlen(d.stmts[0].subject.table), 255);
  sync_ddl_free(&d);
}

/* sql_mode NO_BACKSLASH_ESCAPES: 'C:\' is a whole string, so the REFERENCES after it is found;
 * read with backslash escapes, the same text is an unterminated string. */
static void test_no_backslash_escapes(void) {
  const char *sql = "CREATE TABLE t (a varchar(3) DEFAULT 'C:\\', b int REFERENCES orders(id))";
  sync_ddl d;
  char msg[256];
  CU_ASSERT_EQUAL_FATAL(sync_ddl_parse_mode(sql, strlen(sql), "shop", SYNC_DDL_NO_BACKSLASH_ESCAPES,
                                            &d, msg, sizeof msg),
                        0);
  dm_buf out = {0};
  CU_ASSERT_EQUAL(sync_ddl_rewrite(&d.stmts[0], test_route, (void *)&R_TABLE, false, &out), 0);
  CU_ASSERT_STRING_EQUAL(out.p, "CREATE TABLE `shop`.`t` (a varchar(3) DEFAULT 'C:\\', b int "
                                "REFERENCES `shop`.`orders_all`(id))");
  dm_buf_free(&out);
  sync_ddl_free(&d);
  expect_error(sql, "shop", 0,
               "create table: unterminated string at byte 37, near \"'C:\\', b int REFERENCES \"");
  /* And with escapes on, an escaped quote does not end the string. */
  const char *esc = "CREATE TABLE t (a char(3) DEFAULT 'it\\'s REFERENCES x')";
  CU_ASSERT_EQUAL_FATAL(sync_ddl_parse(esc, strlen(esc), "shop", &d, msg, sizeof msg), 0);
  CU_ASSERT_EQUAL(d.stmts[0].n_refs, 1);
  sync_ddl_free(&d);
}

/* ---- one statement only --------------------------------------------------------------------
 */

/* Regression (issue 9): a DDL whose text holds a ';' followed by more text was handed to a
 * multi-statement target connection whole, so a second statement ran there. Now the parser
 * refuses it, whatever the kind; a ';' inside a string, a name or a comment, or one at the very
 * end, is no second statement. */
static void test_top_level_semicolon(void) {
  static const struct {
    const char *sql;
    int rc;
  } cases[] = {
      {"CREATE TABLE t (a INT); CREATE TABLE other.pwn (x INT)", SYNC_DDL_MULTI},
      {"CREATE TABLE t (a INT);CREATE TABLE other.pwn (x INT) -- ", SYNC_DDL_MULTI},
      {"DROP TABLE t; DROP DATABASE other", SYNC_DDL_MULTI},
      {"ALTER TABLE t ADD c INT; GRANT ALL ON *.* TO x", SYNC_DDL_MULTI},
      {"CREATE DATABASE d; DROP DATABASE other", SYNC_DDL_MULTI},
      {"RENAME TABLE a TO b; DROP TABLE c", SYNC_DDL_MULTI},
      {"TRUNCATE t; DROP TABLE c", SYNC_DDL_MULTI},
      {"CREATE INDEX i ON t (a); DROP TABLE c", SYNC_DDL_MULTI},
      {"DROP TABLE t;;", SYNC_DDL_MULTI},
      {"CREATE TABLE t (a INT) /*!50100 ; DROP TABLE c */", SYNC_DDL_MULTI},
      /* a regular comment does not nest: the first star-slash ends it */
      {"CREATE TABLE t (a INT) /* 99999 /* */ ; CREATE TABLE other.x (b INT) -- */",
       SYNC_DDL_MULTI},
      {"CREATE TEMPORARY TABLE t (a INT); DROP TABLE c", SYNC_DDL_MULTI},
      {"CREATE TABLE t (a INT COMMENT ';')", 0},
      {"CREATE TABLE t (a INT COMMENT \"; x\")", 0},
      {"CREATE TABLE `t;x` (a INT)", 0},
      {"CREATE TABLE t (a INT) /* ; x */", 0},
      {"CREATE TABLE t (a INT) -- ; x", 0},
      {"CREATE TABLE t (a INT) # ; x", 0},
      {"DROP TABLE t;", 0},
      {"DROP TABLE t ; ", 0},
      {"DROP TABLE t; -- a comment after the end", 0},
      {"CREATE TABLE t (a VARCHAR(3) DEFAULT 'it\\'s;')", 0},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    sync_ddl d;
    char msg[256];
    const char *sql = cases[k].sql;
    int rc = sync_ddl_parse(sql, strlen(sql), "shop", &d, msg, sizeof msg);
    if (rc != cases[k].rc)
      fprintf(stderr, "\n%s: rc %d (%s)\n", sql, rc, msg);
    CU_ASSERT_EQUAL(rc, cases[k].rc);
    if (cases[k].rc == SYNC_DDL_MULTI) {
      CU_ASSERT_EQUAL(d.n, 0);
      CU_ASSERT_PTR_NOT_NULL(strstr(msg, "a ';' ends the statement and more text follows at"));
    }
    sync_ddl_free(&d);
  }
  /* where the first statement ends: the unit parses that part alone to see what it is about */
  sync_ddl d;
  char msg[256];
  const char *two = "DROP TABLE t; DROP DATABASE other";
  CU_ASSERT_EQUAL(sync_ddl_parse(two, strlen(two), "shop", &d, msg, sizeof msg), SYNC_DDL_MULTI);
  CU_ASSERT_EQUAL(d.multi_at, 12);
  /* statements the unit does not run are handed over whole (and skipped by the unit) */
  const char *other = "SET @a = 1; SET @b = 2";
  CU_ASSERT_EQUAL(sync_ddl_parse(other, strlen(other), "shop", &d, msg, sizeof msg), 0);
  CU_ASSERT_EQUAL(d.stmts[0].kind, SYNC_DDL_OTHER);
  sync_ddl_free(&d);
}

/* The two texts of issue 9's attack: one statement on the source (under NO_BACKSLASH_ESCAPES, or
 * under SET NAMES gbk, where 0xBF 0x5C is one character), two when read with backslash escapes
 * byte by byte. Read under the event's flags, each is one CREATE TABLE naming one table. */
static void test_read_as_the_source(void) {
  static const char nbe[] = "CREATE TABLE t1 (a VARCHAR(10) DEFAULT '\\', b INT COMMENT '); "
                            "CREATE TABLE other.pwn1 (x INT) -- ')";
  static const char gbk[] = "CREATE TABLE t2 (a INT COMMENT '\xbf\x5c', b INT COMMENT '); "
                            "CREATE TABLE other.pwn2 (x INT) -- ')";
  const struct {
    const char *sql;
    unsigned flags;
  } cases[] = {{nbe, SYNC_DDL_NO_BACKSLASH_ESCAPES}, {gbk, SYNC_DDL_MB_GBK}};
  for (size_t k = 0; k < 2; k++) {
    sync_ddl d;
    char msg[256];
    const char *sql = cases[k].sql;
    CU_ASSERT_EQUAL(sync_ddl_parse_mode(sql, strlen(sql), "app", 0, &d, msg, sizeof msg),
                    SYNC_DDL_MULTI);
    CU_ASSERT_EQUAL_FATAL(
        sync_ddl_parse_mode(sql, strlen(sql), "app", cases[k].flags, &d, msg, sizeof msg), 0);
    CU_ASSERT_EQUAL_FATAL(d.n, 1);
    CU_ASSERT_EQUAL(d.stmts[0].kind, SYNC_DDL_CREATE_TABLE);
    CU_ASSERT_EQUAL(d.stmts[0].n_refs, 1);
    CU_ASSERT_STRING_EQUAL(d.stmts[0].subject.schema, "app");
    dm_buf out = {0};
    CU_ASSERT_EQUAL(sync_ddl_rewrite(&d.stmts[0], NULL, NULL, false, &out), 0);
    /* only the name changed; the rewritten text reads the same way again */
    CU_ASSERT_STRING_EQUAL(out.p + strlen("CREATE TABLE `app`.`t1`"),
                           sql + strlen("CREATE TABLE t1"));
    sync_ddl d2;
    CU_ASSERT_EQUAL(sync_ddl_parse_mode(out.p, out.len, "", cases[k].flags, &d2, msg, sizeof msg),
                    0);
    sync_ddl_free(&d2);
    dm_buf_free(&out);
    sync_ddl_free(&d);
  }
}

/* ANSI_QUOTES: "..." is a name without backslash escapes; gbk/big5/sjis characters whose second
 * byte is a backtick or a backslash stay one character, in names as in strings. */
static void test_quotes_and_charsets(void) {
  sync_ddl d;
  char msg[256];
  const char *ansi = "CREATE TABLE \"my\"\"t\" (a INT REFERENCES \"p\\\"(id))";
  CU_ASSERT_EQUAL_FATAL(
      sync_ddl_parse_mode(ansi, strlen(ansi), "shop", SYNC_DDL_ANSI_QUOTES, &d, msg, sizeof msg),
      0);
  CU_ASSERT_STRING_EQUAL(d.stmts[0].subject.table, "my\"t");
  CU_ASSERT_EQUAL_FATAL(d.stmts[0].n_refs, 2);
  CU_ASSERT_STRING_EQUAL(d.stmts[0].refs[1].name.table, "p\\");
  sync_ddl_free(&d);

  /* gbk 0x81 0x60: a character whose second byte is a backtick, inside a quoted name */
  const char *bq = "DROP TABLE `\x81\x60x`";
  CU_ASSERT_EQUAL_FATAL(
      sync_ddl_parse_mode(bq, strlen(bq), "shop", SYNC_DDL_MB_GBK, &d, msg, sizeof msg), 0);
  CU_ASSERT_STRING_EQUAL(d.stmts[0].subject.table, "\x81\x60x");
  dm_buf out = {0};
  CU_ASSERT_EQUAL(sync_ddl_rewrite(&d.stmts[0], NULL, NULL, false, &out), 0);
  CU_ASSERT_STRING_EQUAL(out.p, "DROP TABLE `shop`.`\x81\x60x`"); /* not doubled: no quote */
  dm_buf_free(&out);
  sync_ddl_free(&d);
  /* byte by byte the same text is a name "\x81" and an open quote */
  CU_ASSERT_EQUAL(sync_ddl_parse_mode(bq, strlen(bq), "shop", 0, &d, msg, sizeof msg), -1);

  /* sjis 0x95 0x5c (a kanji) in a string: no escape */
  const char *sj = "CREATE TABLE t (a INT COMMENT '\x95\x5c', b INT REFERENCES p (id))";
  CU_ASSERT_EQUAL_FATAL(
      sync_ddl_parse_mode(sj, strlen(sj), "shop", SYNC_DDL_MB_SJIS, &d, msg, sizeof msg), 0);
  CU_ASSERT_EQUAL(d.stmts[0].n_refs, 2);
  sync_ddl_free(&d);
  /* big5 0xA5 0x5C */
  const char *b5 = "CREATE TABLE t (a INT COMMENT '\xa5\x5c', b INT REFERENCES p (id))";
  CU_ASSERT_EQUAL_FATAL(
      sync_ddl_parse_mode(b5, strlen(b5), "shop", SYNC_DDL_MB_BIG5, &d, msg, sizeof msg), 0);
  CU_ASSERT_EQUAL(d.stmts[0].n_refs, 2);
  sync_ddl_free(&d);

  /* A routed name the server would read with its closing backtick inside a gbk character (the
   * UTF-8 name "€" is E2 82 AC: gbk reads E2 82, then AC and the backtick as one character):
   * refused, not written. */
  static const route_rule utf8_rules[] = {{"shop", "orders", NULL, "\xe2\x82\xac"}};
  static const route_set R_UTF8 = {utf8_rules, 1};
  const char *dr = "DROP TABLE orders";
  CU_ASSERT_EQUAL_FATAL(
      sync_ddl_parse_mode(dr, strlen(dr), "shop", SYNC_DDL_MB_GBK, &d, msg, sizeof msg), 0);
  CU_ASSERT_EQUAL(sync_ddl_rewrite(&d.stmts[0], test_route, (void *)&R_UTF8, false, &out), -1);
  dm_buf_free(&out);
  sync_ddl_free(&d);
  CU_ASSERT_EQUAL_FATAL(sync_ddl_parse_mode(dr, strlen(dr), "shop", 0, &d, msg, sizeof msg), 0);
  CU_ASSERT_EQUAL(sync_ddl_rewrite(&d.stmts[0], test_route, (void *)&R_UTF8, false, &out), 0);
  CU_ASSERT_STRING_EQUAL(out.p, "DROP TABLE `shop`.`\xe2\x82\xac`");
  dm_buf_free(&out);
  sync_ddl_free(&d);

  /* versioned comments: 5 or 6 digits are a version; fewer are statement text */
  const char *vc = "CREATE TABLE t (a INT) /*!12 COMMENT 'x' */";
  CU_ASSERT_EQUAL(sync_ddl_parse(vc, strlen(vc), "shop", &d, msg, sizeof msg), 0);
  sync_ddl_free(&d);

  CU_ASSERT_EQUAL(sync_ddl_flags((1ull << 20) | (1ull << 2), "gbk"),
                  SYNC_DDL_NO_BACKSLASH_ESCAPES | SYNC_DDL_ANSI_QUOTES | SYNC_DDL_MB_GBK);
  CU_ASSERT_EQUAL(sync_ddl_flags(0, "utf8mb4"), 0);
  CU_ASSERT_EQUAL(sync_ddl_flags(0, NULL), 0);
  CU_ASSERT_EQUAL(sync_ddl_flags(0, "cp932"), SYNC_DDL_MB_SJIS);
  CU_ASSERT_EQUAL(sync_ddl_flags(0, "big5"), SYNC_DDL_MB_BIG5);
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"other statements left as-is", test_other_left_as_is},
      {"errors name the byte", test_errors_name_the_byte},
      {"NO_BACKSLASH_ESCAPES", test_no_backslash_escapes},
      {"a ';' between statements is refused", test_top_level_semicolon},
      {"read under the event's sql_mode and charset", test_read_as_the_source},
      {"ANSI_QUOTES, multi-byte charsets", test_quotes_and_charsets},
  };
  return dmh_cunit_run("sync_ddl_read", NULL, NULL, tests, sizeof tests / sizeof tests[0]);
}

/*
 * DM's collation_compatible: strict (dmhost/ddl_collation.h): which CREATE DATABASE / CREATE TABLE
 * forms get the source's collation written in, where, and which are left as written. Before it,
 * `collation_compatible: strict` was refused and no statement got a collation: every expected
 * text below with a COLLATE was the input unchanged.
 */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cunit_run.h"
#include "dmhost/ddl_collation.h"
#include "dmhost/sql_lex.h"

static dm_collations *src;

/* A MariaDB 10.11 source's rows (a few), `utf8` as utf8mb3, the server at utf8mb4_general_ci. */
static int suite_init(void) {
  src = dm_collations_new();
  if (!src)
    return -1;
  static const struct {
    unsigned id;
    const char *name, *cs;
    bool def;
  } rows[] = {{45, "utf8mb4_general_ci", "utf8mb4", true},
              {46, "utf8mb4_bin", "utf8mb4", false},
              {224, "utf8mb4_unicode_ci", "utf8mb4", false},
              {8, "latin1_swedish_ci", "latin1", true},
              {47, "latin1_bin", "latin1", false},
              {33, "utf8mb3_general_ci", "utf8mb3", true},
              {63, "binary", "binary", true},
              {28, "GBK_CHINESE_CI", "GBK", true},
              {0, "uca1400_ai_ci", NULL, false}};
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
    if (dm_collations_add(src, rows[i].id, rows[i].name, rows[i].cs, rows[i].def) != 0)
      return -1;
  return dm_collations_set_utf8(src, "utf8mb3") ||
         dm_collations_set_server(src, "utf8mb4_general_ci");
}

static int suite_clean(void) {
  dm_collations_free(src);
  return 0;
}

/* Runs the adjustment on in; `want` NULL: left as written (0). Prints both when they differ. */
static void check_opts(const char *in, const char *want, const dm_ddl_collation_opts *o,
                       const char *note_part) {
  char *out = (char *)1, note[512];
  size_t out_len = 99;
  int rc = dm_ddl_add_collations(in, strlen(in), src, o, &out, &out_len, note, sizeof note);
  if (!want) {
    CU_ASSERT_EQUAL(rc, 0);
    CU_ASSERT_PTR_NULL(out);
    if (rc != 0 || out)
      fprintf(stderr, "\nin:   %s\nout:  %s\nwant: unchanged\n", in, out ? out : "(null)");
  } else {
    CU_ASSERT_EQUAL(rc, 1);
    CU_ASSERT_PTR_NOT_NULL(out);
    if (out && out != (char *)1) {
      CU_ASSERT_STRING_EQUAL(out, want);
      CU_ASSERT_EQUAL(out_len, strlen(out));
      if (strcmp(out, want) != 0)
        fprintf(stderr, "\nin:   %s\nout:  %s\nwant: %s\n", in, out, want);
    }
  }
  if (note_part) {
    CU_ASSERT_PTR_NOT_NULL(strstr(note, note_part));
    if (!strstr(note, note_part))
      fprintf(stderr, "\nnote: %s\nwant: ...%s...\n", note, note_part);
  }
  if (out != (char *)1)
    free(out);
}

static void check(const char *in, const char *want) {
  check_opts(in, want, NULL, NULL);
}

/* The set: defaults by charset in any case, `utf8` as the source reads it, names by id. */
static void test_set(void) {
  CU_ASSERT_STRING_EQUAL(dm_collations_default(src, "utf8mb4"), "utf8mb4_general_ci");
  CU_ASSERT_STRING_EQUAL(dm_collations_default(src, "UTF8MB4"), "utf8mb4_general_ci");
  CU_ASSERT_STRING_EQUAL(dm_collations_default(src, "gbk"), "gbk_chinese_ci");
  CU_ASSERT_STRING_EQUAL(dm_collations_default(src, "utf8"), "utf8mb3_general_ci");
  CU_ASSERT_PTR_NULL(dm_collations_default(src, "koi8r"));
  CU_ASSERT_STRING_EQUAL(dm_collations_name(src, 224), "utf8mb4_unicode_ci");
  CU_ASSERT_PTR_NULL(dm_collations_name(src, 9999));
  CU_ASSERT_STRING_EQUAL(dm_collations_server(src), "utf8mb4_general_ci");
  /* MariaDB 11.2+'s character_set_collations wins over IS_DEFAULT */
  dm_collations *m = dm_collations_new();
  CU_ASSERT_FATAL(m != NULL);
  CU_ASSERT_EQUAL(dm_collations_add(m, 45, "utf8mb4_general_ci", "utf8mb4", true), 0);
  CU_ASSERT_EQUAL(dm_collations_add(m, 8, "latin1_swedish_ci", "latin1", true), 0);
  CU_ASSERT_EQUAL(dm_collations_set_defaults(
                      m, " utf8mb4 = utf8mb4_uca1400_ai_ci,ucs2=ucs2_uca1400_ai_ci,junk,=x"),
                  0);
  CU_ASSERT_STRING_EQUAL(dm_collations_default(m, "utf8mb4"), "utf8mb4_uca1400_ai_ci");
  CU_ASSERT_STRING_EQUAL(dm_collations_default(m, "ucs2"), "ucs2_uca1400_ai_ci");
  CU_ASSERT_STRING_EQUAL(dm_collations_default(m, "latin1"), "latin1_swedish_ci");
  CU_ASSERT_PTR_NULL(dm_collations_default(m, "utf8")); /* not told what utf8 names */
  CU_ASSERT_PTR_NULL(dm_collations_server(m));
  const char *in = "CREATE TABLE t (a text) DEFAULT CHARSET=utf8mb4";
  char *out = NULL;
  CU_ASSERT_EQUAL(dm_ddl_add_collations(in, strlen(in), m, NULL, &out, NULL, NULL, 0), 1);
  CU_ASSERT_STRING_EQUAL(out, "CREATE TABLE t (a text) DEFAULT CHARSET=utf8mb4 COLLATE "
                              "utf8mb4_uca1400_ai_ci");
  free(out);
  dm_collations_free(m);
}

/* CREATE TABLE at table level: a charset without a collation gets the source's default of it;
 * charset and collation, or a collation alone, are the table's own; neither is left to the
 * database's default. */
static void test_table_level(void) {
  check_opts("CREATE TABLE t (a int) DEFAULT CHARSET=utf8mb4",
             "CREATE TABLE t (a int) DEFAULT CHARSET=utf8mb4 COLLATE utf8mb4_general_ci", NULL,
             "table: COLLATE utf8mb4_general_ci");
  check("CREATE TABLE t (a int) ENGINE=InnoDB CHARACTER SET latin1 COMMENT='x'",
        "CREATE TABLE t (a int) ENGINE=InnoDB CHARACTER SET latin1 COLLATE latin1_swedish_ci "
        "COMMENT='x'");
  check("create table t (a int) char set = LATIN1, engine=innodb",
        "create table t (a int) char set = LATIN1 COLLATE latin1_swedish_ci, engine=innodb");
  check("CREATE TABLE t (a int) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin", NULL);
  check("CREATE TABLE t (a int) COLLATE utf8mb4_bin DEFAULT CHARSET utf8mb4", NULL);
  check("CREATE TABLE t (a int) COLLATE=latin1_bin", NULL);
  check_opts("CREATE TABLE t (a varchar(10), b int)", NULL, NULL,
             "table names no charset: it takes its database's default collation");
  check("CREATE TABLE t (a int) ENGINE=InnoDB", NULL);
  /* the last charset of the options is the table's */
  check("CREATE TABLE t (a int) CHARSET latin1 CHARSET utf8mb4",
        "CREATE TABLE t (a int) CHARSET latin1 CHARSET utf8mb4 COLLATE utf8mb4_general_ci");
  /* DEFAULT is the database's: no charset named */
  check("CREATE TABLE t (a int) DEFAULT CHARSET = DEFAULT", NULL);
  /* `utf8` as the source reads it, the charset in any case, quoted values */
  check("CREATE TABLE t (a int) CHARSET utf8",
        "CREATE TABLE t (a int) CHARSET utf8 COLLATE utf8mb3_general_ci");
  check("CREATE TABLE t (a int) CHARSET 'UTF8MB4'",
        "CREATE TABLE t (a int) CHARSET 'UTF8MB4' COLLATE utf8mb4_general_ci");
  check("CREATE TABLE t (a int) CHARSET `gbk`",
        "CREATE TABLE t (a int) CHARSET `gbk` COLLATE gbk_chinese_ci");
  /* a charset the source does not have: left as written, and said */
  check_opts("CREATE TABLE t (a int) CHARSET koi8r", NULL, NULL,
             "charset koi8r is unknown on the source");
  /* MySQL 8's default_collation_for_utf8mb4 of the event */
  dm_ddl_collation_opts o = {.utf8mb4_default = "utf8mb4_0900_ai_ci"};
  check_opts("CREATE TABLE t (a int) CHARSET utf8mb4",
             "CREATE TABLE t (a int) CHARSET utf8mb4 COLLATE utf8mb4_0900_ai_ci", &o, NULL);
  check_opts("CREATE TABLE t (a int) CHARSET latin1",
             "CREATE TABLE t (a int) CHARSET latin1 COLLATE latin1_swedish_ci", &o, NULL);
}

/* Columns: a charset without a collation gets the source's default of it, also in a table that
 * names neither; COLLATE, BINARY after the type, and what sits in parentheses (lengths, ENUM
 * values, defaults, generated expressions, CHECK) are the column's own. */
static void test_columns(void) {
  check_opts("CREATE TABLE t (\n"
             "  `a` varchar(10) CHARACTER SET latin1 NOT NULL,\n"
             "  `b` varchar(10) CHARSET latin1 COLLATE latin1_bin,\n"
             "  `c` text,\n"
             "  `d` char(3) BINARY CHARSET latin1,\n"
             "  `e` enum('x','CHARSET y') CHARACTER SET utf8mb4 DEFAULT 'x',\n"
             "  `f` varchar(20) AS (CAST(a AS CHAR CHARACTER SET utf8mb4)) VIRTUAL,\n"
             "  `g` varchar(5) COLLATE utf8mb4_bin,\n"
             "  `h` binary(16),\n"
             "  i char(4) char set latin1,\n"
             "  PRIMARY KEY (`a`),\n"
             "  CONSTRAINT `k` CHECK (CONVERT(c USING latin1) <> ''),\n"
             "  KEY `x` (`b`)\n"
             ")",
             "CREATE TABLE t (\n"
             "  `a` varchar(10) CHARACTER SET latin1 COLLATE latin1_swedish_ci NOT NULL,\n"
             "  `b` varchar(10) CHARSET latin1 COLLATE latin1_bin,\n"
             "  `c` text,\n"
             "  `d` char(3) BINARY CHARSET latin1,\n"
             "  `e` enum('x','CHARSET y') CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci "
             "DEFAULT 'x',\n"
             "  `f` varchar(20) AS (CAST(a AS CHAR CHARACTER SET utf8mb4)) VIRTUAL,\n"
             "  `g` varchar(5) COLLATE utf8mb4_bin,\n"
             "  `h` binary(16),\n"
             "  i char(4) char set latin1 COLLATE latin1_swedish_ci,\n"
             "  PRIMARY KEY (`a`),\n"
             "  CONSTRAINT `k` CHECK (CONVERT(c USING latin1) <> ''),\n"
             "  KEY `x` (`b`)\n"
             ")",
             NULL, "column `a`: COLLATE latin1_swedish_ci");
  /* columns and the table both */
  check("CREATE TABLE t (a varchar(3) CHARSET utf8) CHARSET=latin1",
        "CREATE TABLE t (a varchar(3) CHARSET utf8 COLLATE utf8mb3_general_ci) CHARSET=latin1 "
        "COLLATE latin1_swedish_ci");
  /* a column named like a keyword, quoted */
  check("CREATE TABLE t (`CHARSET` varchar(3) CHARSET latin1, `key` int)",
        "CREATE TABLE t (`CHARSET` varchar(3) CHARSET latin1 COLLATE latin1_swedish_ci, `key` "
        "int)");
  /* a table with a collation of its own still has its columns done (DM's order) */
  check("CREATE TABLE t (a text CHARSET latin1) COLLATE utf8mb4_bin",
        "CREATE TABLE t (a text CHARSET latin1 COLLATE latin1_swedish_ci) COLLATE utf8mb4_bin");
}

/* CREATE DATABASE: a charset without a collation gets the source's default; neither gets the
 * collation the caller gives (the server collation of the event), or nothing without one. */
static void test_database(void) {
  check("CREATE DATABASE d CHARACTER SET = latin1",
        "CREATE DATABASE d CHARACTER SET = latin1 COLLATE latin1_swedish_ci");
  check("CREATE SCHEMA IF NOT EXISTS `d` DEFAULT CHARSET utf8mb4 COMMENT 'CHARSET latin1'",
        "CREATE SCHEMA IF NOT EXISTS `d` DEFAULT CHARSET utf8mb4 COLLATE utf8mb4_general_ci "
        "COMMENT 'CHARSET latin1'");
  check("CREATE DATABASE d COLLATE latin1_bin", NULL);
  check("CREATE DATABASE d DEFAULT CHARACTER SET latin1 DEFAULT COLLATE latin1_bin", NULL);
  check("CREATE DATABASE d", NULL);
  dm_ddl_collation_opts o = {.database_collation = "utf8mb4_unicode_ci"};
  check_opts("CREATE DATABASE d", "CREATE DATABASE d COLLATE utf8mb4_unicode_ci", &o,
             "database names no charset: COLLATE utf8mb4_unicode_ci");
  check_opts("create database if not exists `my db` comment 'x';",
             "create database if not exists `my db` COLLATE utf8mb4_unicode_ci comment 'x';", &o,
             NULL);
  check_opts("CREATE OR REPLACE DATABASE d -- CHARSET latin1\n",
             "CREATE OR REPLACE DATABASE d COLLATE utf8mb4_unicode_ci -- CHARSET latin1\n", &o,
             NULL);
  /* the charset wins over the caller's collation */
  check_opts("CREATE DATABASE d CHARSET latin1",
             "CREATE DATABASE d CHARSET latin1 COLLATE latin1_swedish_ci", &o, NULL);
  /* a collation name that is no plain name is never written */
  dm_ddl_collation_opts bad = {.database_collation = "x; DROP"};
  check_opts("CREATE DATABASE d", NULL, &bad, "no plain name");
}

/* IF NOT EXISTS, OR REPLACE, TEMPORARY; comments (plain ones hide what they hold, versioned ones
 * run: the collation goes inside, next to its charset); qualified and quoted names; ANSI_QUOTES. */
static void test_forms(void) {
  check("CREATE TABLE IF NOT EXISTS `db`.`t``x` (a int) DEFAULT CHARSET=latin1;",
        "CREATE TABLE IF NOT EXISTS `db`.`t``x` (a int) DEFAULT CHARSET=latin1 COLLATE "
        "latin1_swedish_ci;");
  check("CREATE OR REPLACE TEMPORARY TABLE t (a int) CHARSET latin1",
        "CREATE OR REPLACE TEMPORARY TABLE t (a int) CHARSET latin1 COLLATE latin1_swedish_ci");
  check("CREATE TABLE t (a int) /* CHARSET latin1 */ ENGINE=InnoDB # CHARSET gbk\n"
        "-- CHARSET gbk\n DEFAULT CHARSET utf8mb4 /* end */",
        "CREATE TABLE t (a int) /* CHARSET latin1 */ ENGINE=InnoDB # CHARSET gbk\n"
        "-- CHARSET gbk\n DEFAULT CHARSET utf8mb4 COLLATE utf8mb4_general_ci /* end */");
  check("CREATE DATABASE /*!32312 IF NOT EXISTS*/ `d` /*!40100 DEFAULT CHARACTER SET latin1 */",
        "CREATE DATABASE /*!32312 IF NOT EXISTS*/ `d` /*!40100 DEFAULT CHARACTER SET latin1 "
        "COLLATE latin1_swedish_ci */");
  check("CREATE TABLE t (a int) /*M!100100 CHARSET=latin1*/",
        "CREATE TABLE t (a int) /*M!100100 CHARSET=latin1 COLLATE latin1_swedish_ci*/");
  check("CREATE TABLE t (a varchar(2) COMMENT 'CHARSET latin1') COMMENT 'CHARACTER SET gbk'", NULL);
  check("CREATE TABLE `a b`.`c.d` (`x y` char(1) CHARACTER SET \"latin1\") ",
        "CREATE TABLE `a b`.`c.d` (`x y` char(1) CHARACTER SET \"latin1\" COLLATE "
        "latin1_swedish_ci) ");
  dm_ddl_collation_opts ansi = {.lex_flags = DM_SQL_ANSI_QUOTES};
  check_opts("CREATE TABLE \"t\" (\"a\" char(1) CHARSET latin1)",
             "CREATE TABLE \"t\" (\"a\" char(1) CHARSET latin1 COLLATE latin1_swedish_ci)", &ansi,
             NULL);
  /* partitions and a MERGE table's UNION = (...) are options, not a query */
  check("CREATE TABLE t (a int) CHARSET latin1 PARTITION BY HASH(a) PARTITIONS 2",
        "CREATE TABLE t (a int) CHARSET latin1 COLLATE latin1_swedish_ci PARTITION BY HASH(a) "
        "PARTITIONS 2");
  check("CREATE TABLE m (a int) ENGINE=MERGE UNION=(t1,t2) CHARSET latin1",
        "CREATE TABLE m (a int) ENGINE=MERGE UNION=(t1,t2) CHARSET latin1 COLLATE "
        "latin1_swedish_ci");
}

/* What is left alone: LIKE, the SELECT of CREATE ... SELECT (its COLLATE and CONVERT are the
 * query's), other statements (DM adjusts CREATE only), text the lexer cannot read. */
static void test_left_alone(void) {
  check("CREATE TABLE t LIKE u", NULL);
  check("CREATE TABLE t (LIKE u)", NULL);
  check("CREATE TABLE IF NOT EXISTS t LIKE `u`", NULL);
  check("CREATE TABLE t CHARSET latin1 AS SELECT _utf8mb4'x' COLLATE utf8mb4_bin AS a",
        "CREATE TABLE t CHARSET latin1 COLLATE latin1_swedish_ci AS SELECT _utf8mb4'x' COLLATE "
        "utf8mb4_bin AS a");
  check("CREATE TABLE t (a text CHARSET latin1) IGNORE SELECT CONVERT(b USING gbk) AS a FROM u",
        "CREATE TABLE t (a text CHARSET latin1 COLLATE latin1_swedish_ci) IGNORE SELECT "
        "CONVERT(b USING gbk) AS a FROM u");
  check("CREATE TABLE t (SELECT 1 AS a) CHARSET latin1", NULL);
  check("ALTER TABLE t CONVERT TO CHARACTER SET latin1", NULL);
  check("ALTER DATABASE d CHARACTER SET latin1", NULL);
  check("CREATE INDEX i ON t (a)", NULL);
  check("INSERT INTO t VALUES ('CREATE TABLE x (a int) CHARSET latin1')", NULL);
  check("", NULL);
  check_opts("CREATE TABLE t (a varchar(3) CHARSET latin1 DEFAULT 'x) CHARSET latin1", NULL, NULL,
             "cannot be read");
  check("CREATE TABLE t (a int) CHARSET", NULL);
  check("CREATE TABLE t (a int) CHARSET =", NULL);
}

/* gbk text (a multi-byte character whose second byte is a backtick or a backslash) is read as
 * the server reads it under that client charset. */
static void test_multibyte(void) {
  /* 0x81 0x60: one gbk character; read byte by byte the 0x60 would end the name early */
  const char in[] = "CREATE TABLE `\x81\x60` (`a` char(1) CHARSET latin1)";
  const char want[] = "CREATE TABLE `\x81\x60` (`a` char(1) CHARSET latin1 COLLATE "
                      "latin1_swedish_ci)";
  dm_ddl_collation_opts o = {.lex_flags = DM_SQL_MB_GBK};
  check_opts(in, want, &o, NULL);
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"the source's set", test_set},
      {"table level", test_table_level},
      {"columns", test_columns},
      {"create database", test_database},
      {"statement forms", test_forms},
      {"left alone", test_left_alone},
      {"multi-byte client charset", test_multibyte},
  };
  return dmh_cunit_run("sdk_ddl_collation", suite_init, suite_clean, tests,
                       sizeof tests / sizeof tests[0]);
}

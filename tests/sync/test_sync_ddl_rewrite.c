/* What the DDL reader (plugins/sync/sync_ddl.c) writes back: passwords redacted in the text it
 * logs, the details of the route rewrite (the names the route sees, a route that fails), DM's
 * IF [NOT] EXISTS added for a replay, and the event names of each kind. */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cunit_run.h"
#include "sync_ddl.h"
#include "sync_ddl_test_util.h"

/* ---- redaction ------------------------------------------------------------------------------
 */

/* Regression (issue 9): a skipped CREATE USER ... IDENTIFIED BY '...' was logged verbatim at
 * INFO, and failing DDL text went into query-status with its passwords. */
static void test_redact(void) {
  static const struct {
    const char *sql;
    unsigned flags;
    const char *want;
  } cases[] = {
      {"CREATE USER u IDENTIFIED BY 'secret'", 0, "CREATE USER u IDENTIFIED BY '***'"},
      {"CREATE USER 'u'@'%' IDENTIFIED BY \"secret\"", 0,
       "CREATE USER 'u'@'%' IDENTIFIED BY '***'"},
      {"GRANT ALL ON *.* TO u IDENTIFIED BY 'secret' WITH GRANT OPTION", 0,
       "GRANT ALL ON *.* TO u IDENTIFIED BY '***' WITH GRANT OPTION"},
      {"CREATE USER u IDENTIFIED BY PASSWORD '*94BDCEBE19083CE2A1F959FD02F964C7AF4CFC29'", 0,
       "CREATE USER u IDENTIFIED BY PASSWORD '***'"},
      {"SET PASSWORD FOR 'u'@'h' = PASSWORD('secret')", 0,
       "SET PASSWORD FOR 'u'@'h' = PASSWORD('***')"},
      {"SET PASSWORD = '*94BDCEBE19083CE2A1F959FD02F964C7AF4CFC29'", 0, "SET PASSWORD = '***'"},
      {"ALTER USER u IDENTIFIED VIA ed25519 USING PASSWORD('secret')", 0,
       "ALTER USER u IDENTIFIED VIA ed25519 USING PASSWORD('***')"},
      {"CREATE USER u IDENTIFIED WITH mysql_native_password AS '*94BD'", 0,
       "CREATE USER u IDENTIFIED WITH mysql_native_password AS '***'"},
      {"CREATE USER u IDENTIFIED VIA pam USING 'secret' OR unix_socket", 0,
       "CREATE USER u IDENTIFIED VIA pam USING '***' OR unix_socket"},
      {"SELECT OLD_PASSWORD(CONCAT('sec', _latin1'ret'))", 0,
       "SELECT OLD_PASSWORD(CONCAT('***', _latin1'***'))"},
      {"CREATE SERVER s FOREIGN DATA WRAPPER mysql OPTIONS (USER 'u', PASSWORD 'secret')", 0,
       "CREATE SERVER s FOREIGN DATA WRAPPER mysql OPTIONS (USER 'u', PASSWORD '***')"},
      {"CREATE TABLE f (a INT) ENGINE=FEDERATED CONNECTION='mysql://u:secret@h/d/t'", 0,
       "CREATE TABLE f (a INT) ENGINE=FEDERATED CONNECTION='***'"},
      {"CREATE TABLE p (a INT, b VARCHAR(60) AS (PASSWORD('secret')))", 0,
       "CREATE TABLE p (a INT, b VARCHAR(60) AS (PASSWORD('***')))"},
      /* the literal as the server reads it: escaped quotes, NO_BACKSLASH_ESCAPES, gbk */
      {"CREATE USER u IDENTIFIED BY 'se\\'cret' -- x", 0, "CREATE USER u IDENTIFIED BY '***' -- x"},
      {"CREATE USER u IDENTIFIED BY 'secret\\' COMMENT 'x'", SYNC_DDL_NO_BACKSLASH_ESCAPES,
       "CREATE USER u IDENTIFIED BY '***' COMMENT 'x'"},
      {"CREATE USER u IDENTIFIED BY '\xbf\x5c' COMMENT 'x'", SYNC_DDL_MB_GBK,
       "CREATE USER u IDENTIFIED BY '***' COMMENT 'x'"},
      /* text the lexer cannot read is left out */
      {"CREATE USER u IDENTIFIED BY 'secret", 0,
       "CREATE USER u IDENTIFIED BY  [unreadable rest left out]"},
      /* nothing to hide */
      {"ALTER TABLE t ADD c VARCHAR(5) DEFAULT 'by'", 0,
       "ALTER TABLE t ADD c VARCHAR(5) DEFAULT 'by'"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    dm_buf out = {0};
    const char *sql = cases[k].sql;
    CU_ASSERT_EQUAL(sync_ddl_redact(sql, strlen(sql), cases[k].flags, 0, &out), 0);
    if (!out.p || strcmp(out.p, cases[k].want) != 0)
      fprintf(stderr, "\n%s\n  got  %s\n  want %s\n", sql, out.p ? out.p : "(null)", cases[k].want);
    CU_ASSERT_STRING_EQUAL(out.p ? out.p : "", cases[k].want);
    dm_buf_free(&out);
  }
  /* cut to max bytes */
  dm_buf out = {0};
  const char *longer = "CREATE USER u IDENTIFIED BY 'secret' PASSWORD EXPIRE NEVER";
  CU_ASSERT_EQUAL(sync_ddl_redact(longer, strlen(longer), 0, 20, &out), 0);
  CU_ASSERT_STRING_EQUAL(out.p, "CREATE USER u IDE...");
  dm_buf_free(&out);

  /* the verb only */
  char verb[64];
  sync_ddl_verb("create user 'bob'@'%' IDENTIFIED BY 'secret'", 44, 0, verb, sizeof verb);
  CU_ASSERT_STRING_EQUAL(verb, "CREATE USER");
  sync_ddl_verb("SET PASSWORD FOR bob = PASSWORD('x')", 36, 0, verb, sizeof verb);
  CU_ASSERT_STRING_EQUAL(verb, "SET PASSWORD FOR");
  sync_ddl_verb("CREATE USER bob IDENTIFIED BY 'x'", 33, 0, verb, sizeof verb);
  CU_ASSERT_STRING_EQUAL(verb, "CREATE USER BOB");
  sync_ddl_verb("'x'", 3, 0, verb, sizeof verb);
  CU_ASSERT_STRING_EQUAL(verb, "(a statement)");

  /* a server message quoting the statement back */
  char said[256] = "You have an error near 'secret' COMMENT 'x'' at line 1";
  const char *failing = "CREATE USER u IDENTIFIED BY 'secret' COMMENT 'x'";
  sync_ddl_scrub(failing, strlen(failing), 0, said, sizeof said);
  CU_ASSERT_STRING_EQUAL(said, "You have an error near '***' COMMENT 'x'' at line 1");
}

/* ---- rewrite details --------------------------------------------------------------------------
 */

static void empty_route(void *arg, const char *schema, const char *table, char *out_schema,
                        size_t schema_len, char *out_table, size_t table_len) {
  (void)arg, (void)schema, (void)table, (void)schema_len;
  out_schema[0] = '\0';
  if (out_table && table_len)
    out_table[0] = '\0';
}

/* The route sees (schema, NULL) for database names and (schema, table) for tables, resolved. */
typedef struct seen {
  char calls[8][600];
  int n;
} seen;

static void recording_route(void *arg, const char *schema, const char *table, char *out_schema,
                            size_t schema_len, char *out_table, size_t table_len) {
  (void)out_schema, (void)schema_len, (void)out_table, (void)table_len;
  seen *s = arg;
  if (s->n < 8)
    snprintf(s->calls[s->n++], sizeof s->calls[0], "%s|%s", schema, table ? table : "(null)");
  CU_ASSERT_EQUAL(out_table == NULL, table == NULL);
}

static void test_rewrite_details(void) {
  sync_ddl d;
  char msg[256];
  const char *sql = "RENAME TABLE a TO other.b";
  CU_ASSERT_EQUAL_FATAL(sync_ddl_parse(sql, strlen(sql), "shop", &d, msg, sizeof msg), 0);
  seen s = {.n = 0};
  dm_buf out = {0};
  CU_ASSERT_EQUAL(sync_ddl_rewrite(&d.stmts[0], recording_route, &s, false, &out), 0);
  CU_ASSERT_EQUAL(s.n, 2);
  CU_ASSERT_STRING_EQUAL(s.calls[0], "shop|a");
  CU_ASSERT_STRING_EQUAL(s.calls[1], "other|b");
  /* A route that keeps everything leaves only the qualification. */
  CU_ASSERT_STRING_EQUAL(out.p, "RENAME TABLE `shop`.`a` TO `other`.`b`");
  /* rewrite appends: the buffer may already hold a batch. */
  CU_ASSERT_EQUAL(sync_ddl_rewrite(&d.stmts[0], NULL, NULL, false, &out), 0);
  CU_ASSERT_STRING_EQUAL(out.p, "RENAME TABLE `shop`.`a` TO `other`.`b`RENAME TABLE `shop`.`a` TO "
                                "`other`.`b`");
  dm_buf_reset(&out);
  CU_ASSERT_EQUAL(sync_ddl_rewrite(&d.stmts[0], empty_route, NULL, false, &out), -1);
  sync_ddl_free(&d);

  sql = "DROP DATABASE shop";
  CU_ASSERT_EQUAL_FATAL(sync_ddl_parse(sql, strlen(sql), "", &d, msg, sizeof msg), 0);
  s.n = 0;
  dm_buf_reset(&out);
  CU_ASSERT_EQUAL(sync_ddl_rewrite(&d.stmts[0], recording_route, &s, false, &out), 0);
  CU_ASSERT_EQUAL(s.n, 1);
  CU_ASSERT_STRING_EQUAL(s.calls[0], "shop|(null)");
  CU_ASSERT_TRUE(d.stmts[0].refs[0].schema_only);
  sync_ddl_free(&d);

  /* Bytes past len are not part of the statement (the event's buffer need not end in NUL). */
  const char buf[] = "TRUNCATE orders; garbage";
  CU_ASSERT_EQUAL_FATAL(sync_ddl_parse(buf, 16, "shop", &d, msg, sizeof msg), 0);
  CU_ASSERT_STRING_EQUAL(d.stmts[0].sql, "TRUNCATE orders;");
  dm_buf_reset(&out);
  CU_ASSERT_EQUAL(sync_ddl_rewrite(&d.stmts[0], test_route, (void *)&R_BOTH, false, &out), 0);
  CU_ASSERT_STRING_EQUAL(out.p, "TRUNCATE `merged`.`orders_all`;");
  sync_ddl_free(&d);
  dm_buf_free(&out);
}

/* Issue 10 item 2: a CREATE DATABASE / CREATE TABLE / DROP replayed on a target that already has
 * (or lacks) the object failed with 1007/1050/1008/1051. The rewrite the unit runs now adds what
 * DM's SplitDDL adds, built around the parsed tokens (names still re-quoted from their values),
 * and only there: nothing else of the text moves. */
static void test_idempotent(void) {
  static const struct {
    const char *sql, *db, *want; /* want: the last part of a split statement */
  } cases[] = {
      {"CREATE DATABASE shop", "", "CREATE DATABASE IF NOT EXISTS `shop_tgt`"},
      {"create schema `shop` character set utf8mb4", "",
       "create schema IF NOT EXISTS `shop_tgt` character set utf8mb4"},
      {"CREATE DATABASE IF NOT EXISTS shop", "", "CREATE DATABASE IF NOT EXISTS `shop_tgt`"},
      {"CREATE DATABASE /*!32312 IF NOT EXISTS*/ `shop`", "",
       "CREATE DATABASE /*!32312 IF NOT EXISTS*/ `shop_tgt`"},
      {"CREATE OR REPLACE DATABASE shop", "", "CREATE OR REPLACE DATABASE `shop_tgt`"},
      {"DROP DATABASE shop", "", "DROP DATABASE IF EXISTS `shop_tgt`"},
      {"DROP SCHEMA IF EXISTS shop", "", "DROP SCHEMA IF EXISTS `shop_tgt`"},
      {"CREATE TABLE t (id INT PRIMARY KEY)", "shop",
       "CREATE TABLE IF NOT EXISTS `shop_tgt`.`t` (id INT PRIMARY KEY)"},
      {"CREATE TABLE`t`(id INT)", "shop", "CREATE TABLE IF NOT EXISTS`shop_tgt`.`t`(id INT)"},
      {"CREATE TABLE u LIKE t", "shop",
       "CREATE TABLE IF NOT EXISTS `shop_tgt`.`u` LIKE `shop_tgt`.`t`"},
      {"CREATE TABLE IF NOT EXISTS t (id INT)", "shop",
       "CREATE TABLE IF NOT EXISTS `shop_tgt`.`t` (id INT)"},
      {"CREATE OR REPLACE TABLE t (id INT)", "shop",
       "CREATE OR REPLACE TABLE `shop_tgt`.`t` (id INT)"},
      {"CREATE TABLE t SELECT 1 AS a", "shop", "CREATE TABLE `shop_tgt`.`t` SELECT 1 AS a"},
      {"DROP TABLE t", "shop", "DROP TABLE IF EXISTS `shop_tgt`.`t`"},
      {"DROP TABLES a, `b` RESTRICT", "shop", "DROP TABLES IF EXISTS `shop_tgt`.`b` RESTRICT"},
      /* each part of a split DROP gets its own clause */
      {"DROP TABLE a, b", "shop", "DROP TABLE IF EXISTS `shop_tgt`.`b`"},
      {"DROP TABLE IF EXISTS t", "shop", "DROP TABLE IF EXISTS `shop_tgt`.`t`"},
      {"DROP INDEX i ON t", "shop", "DROP INDEX IF EXISTS i ON `shop_tgt`.`t`"},
      {"DROP INDEX IF EXISTS i ON t", "shop", "DROP INDEX IF EXISTS i ON `shop_tgt`.`t`"},
      /* as DM: CREATE INDEX, ALTER, RENAME and TRUNCATE are left as they came */
      {"CREATE INDEX i ON t (a)", "shop", "CREATE INDEX i ON `shop_tgt`.`t` (a)"},
      {"ALTER TABLE t ADD COLUMN c INT", "shop", "ALTER TABLE `shop_tgt`.`t` ADD COLUMN c INT"},
      {"RENAME TABLE t TO u", "shop", "RENAME TABLE `shop_tgt`.`t` TO `shop_tgt`.`u`"},
      {"TRUNCATE t", "shop", "TRUNCATE `shop_tgt`.`t`"},
      /* a name that looks like the clause is still a quoted name after it */
      {"DROP TABLE `IF EXISTS`", "shop", "DROP TABLE IF EXISTS `shop_tgt`.`IF EXISTS`"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    sync_ddl d;
    char msg[256];
    CU_ASSERT_EQUAL_FATAL(
        sync_ddl_parse(cases[k].sql, strlen(cases[k].sql), cases[k].db, &d, msg, sizeof msg), 0);
    CU_ASSERT_TRUE_FATAL(d.n >= 1);
    const sync_ddl_stmt *st = &d.stmts[d.n - 1];
    dm_buf out = {0};
    CU_ASSERT_EQUAL(sync_ddl_rewrite(st, test_route, (void *)&R_SCHEMA, true, &out), 0);
    if (!out.p || strcmp(out.p, cases[k].want) != 0)
      fprintf(stderr, "\n%s\n  got  %s\n  want %s\n", cases[k].sql, out.p ? out.p : "(null)",
              cases[k].want);
    CU_ASSERT_STRING_EQUAL(out.p, cases[k].want);
    /* still one statement of the same kind, about the same (routed) name */
    sync_ddl again;
    CU_ASSERT_EQUAL(sync_ddl_parse(out.p, out.len, "", &again, msg, sizeof msg), 0);
    CU_ASSERT_EQUAL(again.n, 1);
    if (again.n == 1) {
      CU_ASSERT_EQUAL(again.stmts[0].kind, st->kind);
      CU_ASSERT_PTR_NULL(again.stmts[0].if_clause); /* nothing more to add: a fixed point */
      CU_ASSERT_STRING_EQUAL(again.stmts[0].subject.table, st->subject.table);
    }
    sync_ddl_free(&again);
    dm_buf_free(&out);
    /* not asked for: the text as before */
    CU_ASSERT_EQUAL(sync_ddl_rewrite(st, NULL, NULL, false, &out), 0);
    if (!strstr(cases[k].sql, "IF"))
      CU_ASSERT_PTR_NULL(strstr(out.p, " IF "));
    dm_buf_free(&out);
    sync_ddl_free(&d);
  }
}

static void test_event_names(void) {
  static const struct {
    sync_ddl_kind k;
    const char *name;
  } names[] = {
      {SYNC_DDL_CREATE_DATABASE, "create database"}, {SYNC_DDL_DROP_DATABASE, "drop database"},
      {SYNC_DDL_CREATE_TABLE, "create table"},       {SYNC_DDL_DROP_TABLE, "drop table"},
      {SYNC_DDL_RENAME_TABLE, "rename table"},       {SYNC_DDL_ALTER_TABLE, "alter table"},
      {SYNC_DDL_TRUNCATE_TABLE, "truncate table"},   {SYNC_DDL_CREATE_INDEX, "create index"},
      {SYNC_DDL_DROP_INDEX, "drop index"},
  };
  for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
    CU_ASSERT_STRING_EQUAL(sync_ddl_event_name(names[k].k), names[k].name);
  CU_ASSERT_PTR_NULL(sync_ddl_event_name(SYNC_DDL_OTHER));
  CU_ASSERT_PTR_NULL(sync_ddl_event_name(SYNC_DDL_ALTER_DATABASE));
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"passwords redacted, verbs only", test_redact},
      {"rewrite details", test_rewrite_details},
      {"event names", test_event_names},
      {"idempotent CREATE/DROP as DM writes them", test_idempotent},
  };
  return dmh_cunit_run("sync_ddl_rewrite", NULL, NULL, tests, sizeof tests / sizeof tests[0]);
}

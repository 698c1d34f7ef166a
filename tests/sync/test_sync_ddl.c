/* DDL statements of the binlog: kind, names, split and route rewrite (plugins/sync/sync_ddl.c).
 * Every case compares exact strings, then checks two properties: each part of a split statement
 * parses again alone to the same subject, and each rewritten statement parses with no default
 * database at all (so every name in it is qualified). */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cunit_run.h"
#include "sync_ddl.h"

/* ---- routes -----------------------------------------------------------------------------------
 */

/* A rule with table NULL routes the schema and every table in it (a DM schema route: the tables
 * keep their names); to_* NULL keeps that part. The first matching rule wins. */
typedef struct route_rule {
  const char *schema, *table, *to_schema, *to_table;
} route_rule;

typedef struct route_set {
  const route_rule *rules;
  int n;
} route_set;

static void test_route(void *arg, const char *schema, const char *table, char *out_schema,
                       size_t schema_len, char *out_table, size_t table_len) {
  const route_set *rs = arg;
  for (int k = 0; k < rs->n; k++) {
    const route_rule *r = &rs->rules[k];
    if (strcmp(r->schema, schema) != 0)
      continue;
    if (r->table && (!table || strcmp(r->table, table) != 0))
      continue;
    if (r->to_schema)
      snprintf(out_schema, schema_len, "%s", r->to_schema);
    if (table && r->to_table)
      snprintf(out_table, table_len, "%s", r->to_table);
    return;
  }
}

static const route_rule schema_rules[] = {{"shop", NULL, "shop_tgt", NULL}};
static const route_rule table_rules[] = {{"shop", "orders", NULL, "orders_all"}};
static const route_rule both_rules[] = {{"shop", "orders", "merged", "orders_all"},
                                        {"shop", NULL, "merged", NULL}};
static const route_rule odd_rules[] = {{"shop", "orders", "a`b", "ünï $x"}};
static const route_set R_SCHEMA = {schema_rules, 1};
static const route_set R_TABLE = {table_rules, 1};
static const route_set R_BOTH = {both_rules, 2};
static const route_set R_ODD = {odd_rules, 1};

/* ---- the cases --------------------------------------------------------------------------------
 */

typedef struct want_stmt {
  const char *schema, *table;   /* subject */
  const char *oschema, *otable; /* other; NULL: has_other is false */
  const char *sql;              /* this part's sql; NULL: the input as-is */
  const char *rewritten;
} want_stmt;

typedef struct ddl_case {
  const char *sql;
  const char *db;
  const route_set *routes; /* NULL: no route, names only qualified */
  sync_ddl_kind kind;
  bool temporary, as_select;
  int n;
  want_stmt w[3];
} ddl_case;

static const ddl_case cases[] = {
    /* CREATE DATABASE: plain, IF NOT EXISTS, mysqldump's versioned comments, OR REPLACE. */
    {"CREATE DATABASE shop",
     "",
     &R_SCHEMA,
     SYNC_DDL_CREATE_DATABASE,
     false,
     false,
     1,
     {{"shop", "", NULL, NULL, NULL, "CREATE DATABASE `shop_tgt`"}}},
    {"create schema if not exists `shop` /* c */ CHARACTER SET utf8mb4",
     "other",
     &R_SCHEMA,
     SYNC_DDL_CREATE_DATABASE,
     false,
     false,
     1,
     {{"shop", "", NULL, NULL, NULL,
       "create schema if not exists `shop_tgt` /* c */ CHARACTER SET utf8mb4"}}},
    {"CREATE DATABASE /*!32312 IF NOT EXISTS*/ `shop` /*!40100 DEFAULT CHARACTER SET latin1 */",
     "",
     &R_SCHEMA,
     SYNC_DDL_CREATE_DATABASE,
     false,
     false,
     1,
     {{"shop", "", NULL, NULL, NULL,
       "CREATE DATABASE /*!32312 IF NOT EXISTS*/ `shop_tgt` /*!40100 DEFAULT CHARACTER SET "
       "latin1 */"}}},
    {"CREATE OR REPLACE DATABASE shop",
     "",
     &R_BOTH,
     SYNC_DDL_CREATE_DATABASE,
     false,
     false,
     1,
     {{"shop", "", NULL, NULL, NULL, "CREATE OR REPLACE DATABASE `merged`"}}},
    /* DROP DATABASE */
    {"DROP DATABASE IF EXISTS `shop`",
     "",
     &R_SCHEMA,
     SYNC_DDL_DROP_DATABASE,
     false,
     false,
     1,
     {{"shop", "", NULL, NULL, NULL, "DROP DATABASE IF EXISTS `shop_tgt`"}}},
    {"drop SCHEMA shop;",
     "x",
     &R_SCHEMA,
     SYNC_DDL_DROP_DATABASE,
     false,
     false,
     1,
     {{"shop", "", NULL, NULL, NULL, "drop SCHEMA `shop_tgt`;"}}},
    /* ALTER DATABASE, named or of the default database (the name is inserted). */
    {"ALTER DATABASE shop CHARACTER SET utf8mb4",
     "",
     &R_SCHEMA,
     SYNC_DDL_ALTER_DATABASE,
     false,
     false,
     1,
     {{"shop", "", NULL, NULL, NULL, "ALTER DATABASE `shop_tgt` CHARACTER SET utf8mb4"}}},
    {"ALTER DATABASE DEFAULT CHARACTER SET latin1",
     "shop",
     &R_SCHEMA,
     SYNC_DDL_ALTER_DATABASE,
     false,
     false,
     1,
     {{"shop", "", NULL, NULL, NULL, "ALTER DATABASE `shop_tgt` DEFAULT CHARACTER SET latin1"}}},
    {"alter schema\tCOLLATE = utf8mb4_bin",
     "shop",
     NULL,
     SYNC_DDL_ALTER_DATABASE,
     false,
     false,
     1,
     {{"shop", "", NULL, NULL, NULL, "alter schema `shop`\tCOLLATE = utf8mb4_bin"}}},
    /* CREATE TABLE: names inside strings stay; versioned comment after the name; default db. */
    {"CREATE TABLE orders (id INT PRIMARY KEY, note VARCHAR(20) DEFAULT 'shop.orders')",
     "shop",
     &R_BOTH,
     SYNC_DDL_CREATE_TABLE,
     false,
     false,
     1,
     {{"shop", "orders", NULL, NULL, NULL,
       "CREATE TABLE `merged`.`orders_all` (id INT PRIMARY KEY, note VARCHAR(20) DEFAULT "
       "'shop.orders')"}}},
    {"create table if not exists `shop`.`orders` (`id` int) ENGINE=InnoDB /*!50100 PARTITION BY "
     "HASH (id) PARTITIONS 4 */",
     "",
     &R_TABLE,
     SYNC_DDL_CREATE_TABLE,
     false,
     false,
     1,
     {{"shop", "orders", NULL, NULL, NULL,
       "create table if not exists `shop`.`orders_all` (`id` int) ENGINE=InnoDB /*!50100 "
       "PARTITION BY HASH (id) PARTITIONS 4 */"}}},
    {"CREATE TEMPORARY TABLE tmp1 (a int)",
     "shop",
     NULL,
     SYNC_DDL_CREATE_TABLE,
     true,
     false,
     1,
     {{"shop", "tmp1", NULL, NULL, NULL, "CREATE TEMPORARY TABLE `shop`.`tmp1` (a int)"}}},
    {"CREATE OR REPLACE TABLE shop.orders (a int)",
     "",
     &R_SCHEMA,
     SYNC_DDL_CREATE_TABLE,
     false,
     false,
     1,
     {{"shop", "orders", NULL, NULL, NULL, "CREATE OR REPLACE TABLE `shop_tgt`.`orders` (a int)"}}},
    /* LIKE names a second table; unqualified, it is in the default database. */
    {"CREATE TABLE orders_copy LIKE shop.orders",
     "shop",
     &R_BOTH,
     SYNC_DDL_CREATE_TABLE,
     false,
     false,
     1,
     {{"shop", "orders_copy", "shop", "orders", NULL,
       "CREATE TABLE `merged`.`orders_copy` LIKE `merged`.`orders_all`"}}},
    {"CREATE TABLE IF NOT EXISTS b (LIKE `a`)",
     "shop",
     NULL,
     SYNC_DDL_CREATE_TABLE,
     false,
     false,
     1,
     {{"shop", "b", "shop", "a", NULL, "CREATE TABLE IF NOT EXISTS `shop`.`b` (LIKE `shop`.`a`)"}}},
    /* REFERENCES: an unqualified target is in the created table's schema (shop), not the
     * default database (elsewhere); both forms, table constraint and column shortcut. */
    {"CREATE TABLE shop.items (id INT, oid INT, CONSTRAINT fk FOREIGN KEY (oid) REFERENCES orders "
     "(id) ON DELETE CASCADE, x INT REFERENCES other.things(id))",
     "elsewhere",
     &R_BOTH,
     SYNC_DDL_CREATE_TABLE,
     false,
     false,
     1,
     {{"shop", "items", NULL, NULL, NULL,
       "CREATE TABLE `merged`.`items` (id INT, oid INT, CONSTRAINT fk FOREIGN KEY (oid) "
       "REFERENCES `merged`.`orders_all` (id) ON DELETE CASCADE, x INT REFERENCES "
       "`other`.`things`(id))"}}},
    /* CREATE ... SELECT (statement format): the SELECT's tables are left as written. */
    {"CREATE TABLE t2 AS SELECT * FROM orders",
     "shop",
     &R_SCHEMA,
     SYNC_DDL_CREATE_TABLE,
     false,
     true,
     1,
     {{"shop", "t2", NULL, NULL, NULL, "CREATE TABLE `shop_tgt`.`t2` AS SELECT * FROM orders"}}},
    /* Comments of every sort between the words, spaces inside a qualified name. */
    {"/* leading */ CREATE -- line\n TABLE # hash\n `shop` . `orders` (a int)",
     "",
     &R_TABLE,
     SYNC_DDL_CREATE_TABLE,
     false,
     false,
     1,
     {{"shop", "orders", NULL, NULL, NULL,
       "/* leading */ CREATE -- line\n TABLE # hash\n `shop`.`orders_all` (a int)"}}},
    /* ANSI-quoted names; mixed quoting. */
    {"CREATE TABLE \"shop\".\"orders\" (a int)",
     "",
     &R_TABLE,
     SYNC_DDL_CREATE_TABLE,
     false,
     false,
     1,
     {{"shop", "orders", NULL, NULL, NULL, "CREATE TABLE `shop`.`orders_all` (a int)"}}},
    {"CREATE TABLE `shop`.orders (a int) COMMENT 'x'",
     "",
     &R_TABLE,
     SYNC_DDL_CREATE_TABLE,
     false,
     false,
     1,
     {{"shop", "orders", NULL, NULL, NULL,
       "CREATE TABLE `shop`.`orders_all` (a int) COMMENT 'x'"}}},
    /* MariaDB-only executable comments count too; a doubled quote inside "..." is one. */
    {"DROP TABLE /*M!100100 IF EXISTS */ t",
     "shop",
     NULL,
     SYNC_DDL_DROP_TABLE,
     false,
     false,
     1,
     {{"shop", "t", NULL, NULL, NULL, "DROP TABLE /*M!100100 IF EXISTS */ `shop`.`t`"}}},
    {"CREATE TABLE \"sh\"\"op\".t (a int)",
     "",
     NULL,
     SYNC_DDL_CREATE_TABLE,
     false,
     false,
     1,
     {{"sh\"op", "t", NULL, NULL, NULL, "CREATE TABLE `sh\"op`.`t` (a int)"}}},
    /* Backticks inside names are doubled again; non-ASCII and $ in unquoted names. */
    {"CREATE TABLE `we``ird`.`tä$1` (a int)",
     "",
     NULL,
     SYNC_DDL_CREATE_TABLE,
     false,
     false,
     1,
     {{"we`ird", "tä$1", NULL, NULL, NULL, "CREATE TABLE `we``ird`.`tä$1` (a int)"}}},
    {"CREATE TABLE bücher$2 (a int)",
     "ünï",
     NULL,
     SYNC_DDL_CREATE_TABLE,
     false,
     false,
     1,
     {{"ünï", "bücher$2", NULL, NULL, NULL, "CREATE TABLE `ünï`.`bücher$2` (a int)"}}},
    {"CREATE TABLE orders (a int)",
     "shop",
     &R_ODD,
     SYNC_DDL_CREATE_TABLE,
     false,
     false,
     1,
     {{"shop", "orders", NULL, NULL, NULL, "CREATE TABLE `a``b`.`ünï $x` (a int)"}}},
    /* DROP TABLE: one table as-is; a list split into one valid statement per table, each with
     * the shared head and tail (the binlog's "generated by server" comment, RESTRICT). */
    {"DROP TABLE orders",
     "shop",
     &R_TABLE,
     SYNC_DDL_DROP_TABLE,
     false,
     false,
     1,
     {{"shop", "orders", NULL, NULL, NULL, "DROP TABLE `shop`.`orders_all`"}}},
    {"DROP TABLE IF EXISTS `shop`.`orders`,`shop`.`items` /* generated by server */",
     "",
     &R_TABLE,
     SYNC_DDL_DROP_TABLE,
     false,
     false,
     2,
     {{"shop", "orders", NULL, NULL,
       "DROP TABLE IF EXISTS `shop`.`orders` /* generated by server */",
       "DROP TABLE IF EXISTS `shop`.`orders_all` /* generated by server */"},
      {"shop", "items", NULL, NULL, "DROP TABLE IF EXISTS `shop`.`items` /* generated by server */",
       "DROP TABLE IF EXISTS `shop`.`items` /* generated by server */"}}},
    {"drop temporary table if exists a, other.b RESTRICT",
     "shop",
     NULL,
     SYNC_DDL_DROP_TABLE,
     true,
     false,
     2,
     {{"shop", "a", NULL, NULL, "drop temporary table if exists a RESTRICT",
       "drop temporary table if exists `shop`.`a` RESTRICT"},
      {"other", "b", NULL, NULL, "drop temporary table if exists other.b RESTRICT",
       "drop temporary table if exists `other`.`b` RESTRICT"}}},
    /* A quoted first name glued to EXISTS: the other parts get a space, not "EXISTSb". */
    {"DROP TABLE IF EXISTS`a`,b CASCADE",
     "shop",
     &R_SCHEMA,
     SYNC_DDL_DROP_TABLE,
     false,
     false,
     2,
     {{"shop", "a", NULL, NULL, "DROP TABLE IF EXISTS`a` CASCADE",
       "DROP TABLE IF EXISTS`shop_tgt`.`a` CASCADE"},
      {"shop", "b", NULL, NULL, "DROP TABLE IF EXISTS b CASCADE",
       "DROP TABLE IF EXISTS `shop_tgt`.`b` CASCADE"}}},
    {"DROP TABLES a /* x */ ,b,\n c;",
     "shop",
     &R_BOTH,
     SYNC_DDL_DROP_TABLE,
     false,
     false,
     3,
     {{"shop", "a", NULL, NULL, "DROP TABLES a;", "DROP TABLES `merged`.`a`;"},
      {"shop", "b", NULL, NULL, "DROP TABLES b;", "DROP TABLES `merged`.`b`;"},
      {"shop", "c", NULL, NULL, "DROP TABLES c;", "DROP TABLES `merged`.`c`;"}}},
    /* Everything inside one versioned comment splits fine: the comment stays whole. */
    {"/*!40000 DROP TABLE a, b */",
     "shop",
     NULL,
     SYNC_DDL_DROP_TABLE,
     false,
     false,
     2,
     {{"shop", "a", NULL, NULL, "/*!40000 DROP TABLE a */", "/*!40000 DROP TABLE `shop`.`a` */"},
      {"shop", "b", NULL, NULL, "/*!40000 DROP TABLE b */", "/*!40000 DROP TABLE `shop`.`b` */"}}},
    /* RENAME TABLE: one pair as-is; a list split per pair, in order (a swap still works). */
    {"RENAME TABLE orders TO orders_old",
     "shop",
     &R_TABLE,
     SYNC_DDL_RENAME_TABLE,
     false,
     false,
     1,
     {{"shop", "orders", "shop", "orders_old", NULL,
       "RENAME TABLE `shop`.`orders_all` TO `shop`.`orders_old`"}}},
    {"RENAME TABLE shop.a TO shop.tmp, shop.b TO shop.a, shop.tmp TO shop.b",
     "",
     &R_SCHEMA,
     SYNC_DDL_RENAME_TABLE,
     false,
     false,
     3,
     {{"shop", "a", "shop", "tmp", "RENAME TABLE shop.a TO shop.tmp",
       "RENAME TABLE `shop_tgt`.`a` TO `shop_tgt`.`tmp`"},
      {"shop", "b", "shop", "a", "RENAME TABLE shop.b TO shop.a",
       "RENAME TABLE `shop_tgt`.`b` TO `shop_tgt`.`a`"},
      {"shop", "tmp", "shop", "b", "RENAME TABLE shop.tmp TO shop.b",
       "RENAME TABLE `shop_tgt`.`tmp` TO `shop_tgt`.`b`"}}},
    {"rename tables if exists a nowait to b, c to other.d;",
     "shop",
     NULL,
     SYNC_DDL_RENAME_TABLE,
     false,
     false,
     2,
     {{"shop", "a", "shop", "b", "rename tables if exists a nowait to b;",
       "rename tables if exists `shop`.`a` nowait to `shop`.`b`;"},
      {"shop", "c", "other", "d", "rename tables if exists c to other.d;",
       "rename tables if exists `shop`.`c` to `other`.`d`;"}}},
    /* ALTER TABLE, with RENAME [TO] (the new name), RENAME COLUMN/INDEX (not a table), foreign
     * keys, EXCHANGE PARTITION, the whole statement in a versioned comment. */
    {"ALTER TABLE orders ADD COLUMN note TEXT",
     "shop",
     &R_BOTH,
     SYNC_DDL_ALTER_TABLE,
     false,
     false,
     1,
     {{"shop", "orders", NULL, NULL, NULL,
       "ALTER TABLE `merged`.`orders_all` ADD COLUMN note TEXT"}}},
    {"ALTER TABLE shop.orders RENAME TO orders_v2",
     "shop",
     &R_TABLE,
     SYNC_DDL_ALTER_TABLE,
     false,
     false,
     1,
     {{"shop", "orders", "shop", "orders_v2", NULL,
       "ALTER TABLE `shop`.`orders_all` RENAME TO `shop`.`orders_v2`"}}},
    {"alter table `shop`.`t` rename `archive`.`t`, ALGORITHM=COPY",
     "",
     NULL,
     SYNC_DDL_ALTER_TABLE,
     false,
     false,
     1,
     {{"shop", "t", "archive", "t", NULL,
       "alter table `shop`.`t` rename `archive`.`t`, ALGORITHM=COPY"}}},
    {"ALTER TABLE t RENAME COLUMN a TO b, RENAME INDEX i TO j, RENAME KEY k TO l",
     "shop",
     NULL,
     SYNC_DDL_ALTER_TABLE,
     false,
     false,
     1,
     {{"shop", "t", NULL, NULL, NULL,
       "ALTER TABLE `shop`.`t` RENAME COLUMN a TO b, RENAME INDEX i TO j, RENAME KEY k TO l"}}},
    {"ALTER ONLINE IGNORE TABLE IF EXISTS items ADD CONSTRAINT fk FOREIGN KEY (oid) REFERENCES "
     "orders(id)",
     "shop",
     &R_BOTH,
     SYNC_DDL_ALTER_TABLE,
     false,
     false,
     1,
     {{"shop", "items", NULL, NULL, NULL,
       "ALTER ONLINE IGNORE TABLE IF EXISTS `merged`.`items` ADD CONSTRAINT fk FOREIGN KEY (oid) "
       "REFERENCES `merged`.`orders_all`(id)"}}},
    {"ALTER TABLE p EXCHANGE PARTITION p0 WITH TABLE orders",
     "shop",
     &R_TABLE,
     SYNC_DDL_ALTER_TABLE,
     false,
     false,
     1,
     {{"shop", "p", NULL, NULL, NULL,
       "ALTER TABLE `shop`.`p` EXCHANGE PARTITION p0 WITH TABLE `shop`.`orders_all`"}}},
    {"/*!40000 ALTER TABLE `orders` DISABLE KEYS */",
     "shop",
     &R_TABLE,
     SYNC_DDL_ALTER_TABLE,
     false,
     false,
     1,
     {{"shop", "orders", NULL, NULL, NULL,
       "/*!40000 ALTER TABLE `shop`.`orders_all` DISABLE KEYS */"}}},
    /* MariaDB 10.7's partition conversions name a second table. */
    {"ALTER TABLE p CONVERT PARTITION p1 TO TABLE orders",
     "shop",
     &R_TABLE,
     SYNC_DDL_ALTER_TABLE,
     false,
     false,
     1,
     {{"shop", "p", NULL, NULL, NULL,
       "ALTER TABLE `shop`.`p` CONVERT PARTITION p1 TO TABLE `shop`.`orders_all`"}}},
    {"ALTER TABLE p CONVERT TABLE orders TO PARTITION p1 VALUES LESS THAN (10)",
     "shop",
     &R_BOTH,
     SYNC_DDL_ALTER_TABLE,
     false,
     false,
     1,
     {{"shop", "p", NULL, NULL, NULL,
       "ALTER TABLE `merged`.`p` CONVERT TABLE `merged`.`orders_all` TO PARTITION p1 VALUES LESS "
       "THAN (10)"}}},
    /* TRUNCATE [TABLE] */
    {"TRUNCATE orders",
     "shop",
     &R_TABLE,
     SYNC_DDL_TRUNCATE_TABLE,
     false,
     false,
     1,
     {{"shop", "orders", NULL, NULL, NULL, "TRUNCATE `shop`.`orders_all`"}}},
    {"truncate table `shop`.`orders`;",
     "",
     &R_SCHEMA,
     SYNC_DDL_TRUNCATE_TABLE,
     false,
     false,
     1,
     {{"shop", "orders", NULL, NULL, NULL, "truncate table `shop_tgt`.`orders`;"}}},
    /* CREATE/DROP INDEX: the table after ON is routed, the index name is not. */
    {"CREATE UNIQUE INDEX idx_a USING BTREE ON orders (a)",
     "shop",
     &R_TABLE,
     SYNC_DDL_CREATE_INDEX,
     false,
     false,
     1,
     {{"shop", "orders", NULL, NULL, NULL,
       "CREATE UNIQUE INDEX idx_a USING BTREE ON `shop`.`orders_all` (a)"}}},
    {"create or replace fulltext index if not exists ft on shop.docs (body)",
     "",
     &R_SCHEMA,
     SYNC_DDL_CREATE_INDEX,
     false,
     false,
     1,
     {{"shop", "docs", NULL, NULL, NULL,
       "create or replace fulltext index if not exists ft on `shop_tgt`.`docs` (body)"}}},
    {"DROP INDEX IF EXISTS `idx_a` ON orders",
     "shop",
     &R_TABLE,
     SYNC_DDL_DROP_INDEX,
     false,
     false,
     1,
     {{"shop", "orders", NULL, NULL, NULL, "DROP INDEX IF EXISTS `idx_a` ON `shop`.`orders_all`"}}},
    {"DROP INDEX `PRIMARY` ON shop.t ALGORITHM=INPLACE",
     "",
     NULL,
     SYNC_DDL_DROP_INDEX,
     false,
     false,
     1,
     {{"shop", "t", NULL, NULL, NULL, "DROP INDEX `PRIMARY` ON `shop`.`t` ALGORITHM=INPLACE"}}},
};

static bool name_is(const sync_ddl_name *n, const char *schema, const char *table) {
  return strcmp(n->schema, schema) == 0 && strcmp(n->table, table) == 0;
}

static void check_case(const ddl_case *c) {
  sync_ddl d;
  char msg[512];
  int rc = sync_ddl_parse(c->sql, strlen(c->sql), c->db, &d, msg, sizeof msg);
  CU_ASSERT_EQUAL_FATAL(rc, 0);
  if (d.n != c->n)
    fprintf(stderr, "\n%s: %d statements, want %d\n", c->sql, d.n, c->n);
  CU_ASSERT_EQUAL_FATAL(d.n, c->n);
  for (int k = 0; k < d.n; k++) {
    const sync_ddl_stmt *s = &d.stmts[k];
    const want_stmt *w = &c->w[k];
    CU_ASSERT_EQUAL(s->kind, c->kind);
    CU_ASSERT_EQUAL(s->temporary, c->temporary);
    CU_ASSERT_EQUAL(s->as_select, c->as_select);
    CU_ASSERT_TRUE(name_is(&s->subject, w->schema, w->table));
    CU_ASSERT_EQUAL(s->has_other, w->oschema != NULL);
    if (w->oschema)
      CU_ASSERT_TRUE(name_is(&s->other, w->oschema, w->otable));
    CU_ASSERT_STRING_EQUAL(s->sql, w->sql ? w->sql : c->sql);
    CU_ASSERT_EQUAL(s->sql_len, strlen(s->sql));

    sync_buf out = {0};
    CU_ASSERT_EQUAL(
        sync_ddl_rewrite(s, c->routes ? test_route : NULL, (void *)c->routes, false, &out), 0);
    if (!out.p || strcmp(out.p, w->rewritten) != 0)
      fprintf(stderr, "\n%s\n  got  %s\n  want %s\n", c->sql, out.p ? out.p : "(null)",
              w->rewritten);
    CU_ASSERT_STRING_EQUAL(out.p, w->rewritten);

    /* A part is a statement of its own: alone it parses to one statement about the same name. */
    sync_ddl again;
    CU_ASSERT_EQUAL(sync_ddl_parse(s->sql, s->sql_len, c->db, &again, msg, sizeof msg), 0);
    CU_ASSERT_EQUAL(again.n, 1);
    if (again.n == 1) {
      CU_ASSERT_EQUAL(again.stmts[0].kind, c->kind);
      CU_ASSERT_TRUE(name_is(&again.stmts[0].subject, w->schema, w->table));
    }
    sync_ddl_free(&again);

    /* The rewrite needs no default database any more. */
    rc = sync_ddl_parse(out.p, out.len, "", &again, msg, sizeof msg);
    if (rc != 0)
      fprintf(stderr, "\nrewritten %s: %s\n", out.p, msg);
    CU_ASSERT_EQUAL(rc, 0);
    CU_ASSERT_EQUAL(again.n, 1);
    if (again.n == 1)
      CU_ASSERT_EQUAL(again.stmts[0].kind, c->kind);
    sync_ddl_free(&again);
    sync_buf_free(&out);
  }
  sync_ddl_free(&d);
  CU_ASSERT_PTR_NULL(d.stmts);
}

static void test_cases(void) {
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
    check_case(&cases[k]);
}

/* Every prefix of every case (a QUERY event cut anywhere, quotes and comments left open) either
 * parses, and then rewrites, or fails with a message and nothing allocated; under ASan this also
 * proves no read goes past len. */
static void test_every_prefix(void) {
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    size_t len = strlen(cases[k].sql);
    for (size_t cut = 0; cut <= len; cut++) {
      char *sql = malloc(cut ? cut : 1); /* exactly cut bytes, no NUL: ASan sees any overread */
      CU_ASSERT_PTR_NOT_NULL_FATAL(sql);
      memcpy(sql, cases[k].sql, cut);
      sync_ddl d;
      char msg[256];
      int rc = sync_ddl_parse(sql, cut, cases[k].db, &d, msg, sizeof msg);
      CU_ASSERT_TRUE(rc == 0 || rc == -1 || rc == SYNC_DDL_MULTI);
      if (rc == 0) {
        CU_ASSERT_TRUE(d.n >= 1);
        for (int j = 0; j < d.n; j++) {
          sync_buf out = {0};
          CU_ASSERT_EQUAL(sync_ddl_rewrite(&d.stmts[j], test_route, (void *)&R_BOTH, true, &out),
                          0);
          sync_buf_free(&out);
        }
      } else {
        CU_ASSERT_EQUAL(d.n, 0);
        CU_ASSERT_TRUE(msg[0] != '\0');
      }
      sync_ddl_free(&d);
      free(sql);
    }
  }
}

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
    sync_buf out = {0};
    CU_ASSERT_EQUAL(sync_ddl_rewrite(&d.stmts[0], test_route, (void *)&R_BOTH, false, &out), 0);
    CU_ASSERT_STRING_EQUAL(out.p, other[k]);
    sync_buf_free(&out);
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
  sync_buf out = {0};
  CU_ASSERT_EQUAL(sync_ddl_rewrite(&d.stmts[0], test_route, (void *)&R_TABLE, false, &out), 0);
  CU_ASSERT_STRING_EQUAL(out.p, "CREATE TABLE `shop`.`t` (a varchar(3) DEFAULT 'C:\\', b int "
                                "REFERENCES `shop`.`orders_all`(id))");
  sync_buf_free(&out);
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
    sync_buf out = {0};
    CU_ASSERT_EQUAL(sync_ddl_rewrite(&d.stmts[0], NULL, NULL, false, &out), 0);
    /* only the name changed; the rewritten text reads the same way again */
    CU_ASSERT_STRING_EQUAL(out.p + strlen("CREATE TABLE `app`.`t1`"),
                           sql + strlen("CREATE TABLE t1"));
    sync_ddl d2;
    CU_ASSERT_EQUAL(sync_ddl_parse_mode(out.p, out.len, "", cases[k].flags, &d2, msg, sizeof msg),
                    0);
    sync_ddl_free(&d2);
    sync_buf_free(&out);
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
  sync_buf out = {0};
  CU_ASSERT_EQUAL(sync_ddl_rewrite(&d.stmts[0], NULL, NULL, false, &out), 0);
  CU_ASSERT_STRING_EQUAL(out.p, "DROP TABLE `shop`.`\x81\x60x`"); /* not doubled: no quote */
  sync_buf_free(&out);
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
  sync_buf_free(&out);
  sync_ddl_free(&d);
  CU_ASSERT_EQUAL_FATAL(sync_ddl_parse_mode(dr, strlen(dr), "shop", 0, &d, msg, sizeof msg), 0);
  CU_ASSERT_EQUAL(sync_ddl_rewrite(&d.stmts[0], test_route, (void *)&R_UTF8, false, &out), 0);
  CU_ASSERT_STRING_EQUAL(out.p, "DROP TABLE `shop`.`\xe2\x82\xac`");
  sync_buf_free(&out);
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
    sync_buf out = {0};
    const char *sql = cases[k].sql;
    CU_ASSERT_EQUAL(sync_ddl_redact(sql, strlen(sql), cases[k].flags, 0, &out), 0);
    if (!out.p || strcmp(out.p, cases[k].want) != 0)
      fprintf(stderr, "\n%s\n  got  %s\n  want %s\n", sql, out.p ? out.p : "(null)", cases[k].want);
    CU_ASSERT_STRING_EQUAL(out.p ? out.p : "", cases[k].want);
    sync_buf_free(&out);
  }
  /* cut to max bytes */
  sync_buf out = {0};
  const char *longer = "CREATE USER u IDENTIFIED BY 'secret' PASSWORD EXPIRE NEVER";
  CU_ASSERT_EQUAL(sync_ddl_redact(longer, strlen(longer), 0, 20, &out), 0);
  CU_ASSERT_STRING_EQUAL(out.p, "CREATE USER u IDE...");
  sync_buf_free(&out);

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
  sync_buf out = {0};
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
  sync_buf_reset(&out);
  CU_ASSERT_EQUAL(sync_ddl_rewrite(&d.stmts[0], empty_route, NULL, false, &out), -1);
  sync_ddl_free(&d);

  sql = "DROP DATABASE shop";
  CU_ASSERT_EQUAL_FATAL(sync_ddl_parse(sql, strlen(sql), "", &d, msg, sizeof msg), 0);
  s.n = 0;
  sync_buf_reset(&out);
  CU_ASSERT_EQUAL(sync_ddl_rewrite(&d.stmts[0], recording_route, &s, false, &out), 0);
  CU_ASSERT_EQUAL(s.n, 1);
  CU_ASSERT_STRING_EQUAL(s.calls[0], "shop|(null)");
  CU_ASSERT_TRUE(d.stmts[0].refs[0].schema_only);
  sync_ddl_free(&d);

  /* Bytes past len are not part of the statement (the event's buffer need not end in NUL). */
  const char buf[] = "TRUNCATE orders; garbage";
  CU_ASSERT_EQUAL_FATAL(sync_ddl_parse(buf, 16, "shop", &d, msg, sizeof msg), 0);
  CU_ASSERT_STRING_EQUAL(d.stmts[0].sql, "TRUNCATE orders;");
  sync_buf_reset(&out);
  CU_ASSERT_EQUAL(sync_ddl_rewrite(&d.stmts[0], test_route, (void *)&R_BOTH, false, &out), 0);
  CU_ASSERT_STRING_EQUAL(out.p, "TRUNCATE `merged`.`orders_all`;");
  sync_ddl_free(&d);
  sync_buf_free(&out);
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
    sync_buf out = {0};
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
    sync_buf_free(&out);
    /* not asked for: the text as before */
    CU_ASSERT_EQUAL(sync_ddl_rewrite(st, NULL, NULL, false, &out), 0);
    if (!strstr(cases[k].sql, "IF"))
      CU_ASSERT_PTR_NULL(strstr(out.p, " IF "));
    sync_buf_free(&out);
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

/* The block-allow list of the rename cases: the tables of schema shop listed in arg ("t,u,"). */
static bool rename_allowed(void *arg, const char *schema, const char *table) {
  char list[128], want[SYNC_DDL_NAME_MAX + 2];
  snprintf(list, sizeof list, ",%s", (const char *)arg);
  snprintf(want, sizeof want, ",%s,", table);
  return strcmp(schema, "shop") == 0 && strstr(list, want) != NULL;
}

/* RENAME judged on both sides (sync_ddl_rename.c): per part, the verdict of the table it moves,
 * followed through the statement; the first part of a chain that enters the set. */
static void test_rename_plan(void) {
  static const struct {
    const char *sql, *allowed;
    int into;
    sync_rename_verdict v[4];
  } cases[] = {
      /* both ends replicated, routed or not */
      {"RENAME TABLE t TO u", "t,u,", -1, {SYNC_RENAME_APPLY}},
      /* a swap through a name the list leaves out: every part runs (DM would skip two of three) */
      {"RENAME TABLE t TO tmp, u TO t, tmp TO u",
       "t,u,",
       -1,
       {SYNC_RENAME_APPLY, SYNC_RENAME_APPLY, SYNC_RENAME_APPLY}},
      /* DM's own example: a TO b, c TO a, with c left out: a leaves as b (in), c enters as a */
      {"RENAME TABLE a TO b, c TO a", "a,b,", 1, {SYNC_RENAME_APPLY, SYNC_RENAME_INTO}},
      {"RENAME TABLE x TO y", "t,", -1, {SYNC_RENAME_NEITHER}},
      {"RENAME TABLE t TO gone", "t,", -1, {SYNC_RENAME_OUT}},
      {"RENAME TABLE u TO u2, x TO t", "t,u,u2,", 1, {SYNC_RENAME_APPLY, SYNC_RENAME_INTO}},
      /* gh-ost and pt-online-schema-change cut-overs under a list narrowed to t */
      {"RENAME TABLE t TO _t_del, _t_gho TO t", "t,", -1, {SYNC_RENAME_GHOST, SYNC_RENAME_GHOST}},
      {"RENAME TABLE t TO _t_old, _t_new TO t", "t,", -1, {SYNC_RENAME_GHOST, SYNC_RENAME_GHOST}},
      /* the same shape with a table that is no copy of t: refused */
      {"RENAME TABLE t TO _t_del, other TO t", "t,", 1, {SYNC_RENAME_OUT, SYNC_RENAME_INTO}},
      /* a copy in another schema is no cut-over */
      {"RENAME TABLE t TO _t_del, elsewhere._t_gho TO t",
       "t,",
       1,
       {SYNC_RENAME_OUT, SYNC_RENAME_INTO}},
      /* ALTER TABLE ... RENAME TO moves a table too; CREATE TABLE ... LIKE does not */
      {"ALTER TABLE x RENAME TO t, ADD COLUMN c INT", "t,", 0, {SYNC_RENAME_INTO}},
      {"CREATE TABLE t LIKE x", "t,", -1, {SYNC_RENAME_NONE}},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    sync_ddl d = {0};
    char msg[256];
    CU_ASSERT_EQUAL_FATAL(
        sync_ddl_parse(cases[k].sql, strlen(cases[k].sql), "shop", &d, msg, sizeof msg), 0);
    sync_rename_part parts[4];
    CU_ASSERT_FATAL(d.n <= 4);
    int into = sync_rename_plan(&d, rename_allowed, (void *)cases[k].allowed, parts);
    if (into != cases[k].into)
      fprintf(stderr, "%s: into %d, expected %d\n", cases[k].sql, into, cases[k].into);
    CU_ASSERT_EQUAL(into, cases[k].into);
    for (int i = 0; i < d.n; i++) {
      if (parts[i].verdict != cases[k].v[i])
        fprintf(stderr, "%s: part %d verdict %d, expected %d\n", cases[k].sql, i,
                (int)parts[i].verdict, (int)cases[k].v[i]);
      CU_ASSERT_EQUAL(parts[i].verdict, cases[k].v[i]);
    }
    sync_ddl_free(&d);
  }
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"RENAME judged on both sides", test_rename_plan},
      {"every kind: names, split, rewrite", test_cases},
      {"every prefix parses or fails cleanly", test_every_prefix},
      {"other statements left as-is", test_other_left_as_is},
      {"errors name the byte", test_errors_name_the_byte},
      {"NO_BACKSLASH_ESCAPES", test_no_backslash_escapes},
      {"a ';' between statements is refused", test_top_level_semicolon},
      {"read under the event's sql_mode and charset", test_read_as_the_source},
      {"ANSI_QUOTES, multi-byte charsets", test_quotes_and_charsets},
      {"passwords redacted, verbs only", test_redact},
      {"rewrite details", test_rewrite_details},
      {"event names", test_event_names},
      {"idempotent CREATE/DROP as DM writes them", test_idempotent},
  };
  return dmh_cunit_run("sync_ddl", NULL, NULL, tests, sizeof tests / sizeof tests[0]);
}

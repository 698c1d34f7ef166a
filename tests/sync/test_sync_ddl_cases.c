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
#include "sync_ddl_test_util.h"

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

    dm_buf out = {0};
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
    dm_buf_free(&out);
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
          dm_buf out = {0};
          CU_ASSERT_EQUAL(sync_ddl_rewrite(&d.stmts[j], test_route, (void *)&R_BOTH, true, &out),
                          0);
          dm_buf_free(&out);
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

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"every kind: names, split, rewrite", test_cases},
      {"every prefix parses or fails cleanly", test_every_prefix},
  };
  return dmh_cunit_run("sync_ddl_cases", NULL, NULL, tests, sizeof tests / sizeof tests[0]);
}

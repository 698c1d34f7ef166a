/*
 * Optimistic shard DDL's structures as the sync reads them (plugins/sync/sync_structure.c) on the
 * real target server, read back by the host's join (host/core/shard/shard_join.c): the two sides
 * of one JSON format agree, on what information_schema really says. Then the scratch check: the
 * DDL on a copy of the target table (the target itself untouched, the copy gone), a statement the
 * target refuses, and the lock's answer with the check's result in `after`.
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cunit_run.h"
#include "shard_join.h"
#include "shard_optimistic.h"
#include "sync_ddl.h"
#include "sync_structure.h"
#include "testdb.h"

#define DB "ts_opt_struct"
#define SHADOW "ts_opt_struct_shadow"

static MYSQL *dst;

static int suite_init(void) {
  if (!(dst = testdb_connect(TESTDB_TARGET)))
    return -1;
  return testdb_recreate_db(dst, DB) == 0 && testdb_recreate_db(dst, SHADOW) == 0 ? 0 : -1;
}

static int suite_clean(void) {
  testdb_exec(dst, "DROP DATABASE IF EXISTS " DB "; DROP DATABASE IF EXISTS " SHADOW);
  testdb_close(dst);
  return 0;
}

/* The structure of DB.table read by the sync's side and parsed by the host's. */
static void read_table(const char *table, dmh_sj_table *t) {
  dm_buf b = {0};
  char msg[512] = "", why[DMH_SJ_WHY_MAX] = "";
  int rc = sync_structure_json(dst, DB, table, &b, msg, sizeof msg);
  if (rc != 0)
    fprintf(stderr, "%s: %s\n", table, msg);
  CU_ASSERT_EQUAL_FATAL(rc, 0);
  rc = dmh_sj_table_from_json(b.p, t, why, sizeof why);
  if (rc != 0)
    fprintf(stderr, "%s: %s in %s\n", table, why, b.p);
  CU_ASSERT_EQUAL_FATAL(rc, 0);
  dm_buf_free(&b);
}

static void test_read(void) {
  CU_ASSERT_EQUAL_FATAL(
      testdb_exec(dst, "CREATE TABLE " DB ".t (id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT, "
                       "name VARCHAR(32) CHARACTER SET utf8mb4 NOT NULL DEFAULT 'x', "
                       "note TEXT, price DECIMAL(10,2), at DATETIME(3), "
                       "kind ENUM('a','it''s','c') DEFAULT 'a', n INT, "
                       "PRIMARY KEY (id), UNIQUE KEY uk (name(8), n), KEY k (n))"),
      0);
  dmh_sj_table t;
  read_table("t", &t);
  CU_ASSERT_EQUAL_FATAL(t.n_cols, 7);
  const dmh_sj_column *id = dmh_sj_column_find(&t, "id"), *name = dmh_sj_column_find(&t, "name"),
                      *price = dmh_sj_column_find(&t, "price"), *at = dmh_sj_column_find(&t, "at"),
                      *kind = dmh_sj_column_find(&t, "kind"), *n = dmh_sj_column_find(&t, "n");
  CU_ASSERT_STRING_EQUAL(id->type, "bigint");
  CU_ASSERT_TRUE(id->is_unsigned);
  CU_ASSERT_FALSE(id->nullable);
  CU_ASSERT_PTR_NULL(id->default_value);
  CU_ASSERT_STRING_EQUAL(name->type, "varchar");
  CU_ASSERT_EQUAL(name->length, 32);
  CU_ASSERT_STRING_EQUAL(name->charset, "utf8mb4");
  CU_ASSERT_STRING_EQUAL(name->default_value, "'x'");
  CU_ASSERT_EQUAL(price->length, 10);
  CU_ASSERT_EQUAL(price->scale, 2);
  CU_ASSERT_EQUAL(at->scale, 3);
  CU_ASSERT_EQUAL_FATAL(kind->n_members, 3);
  CU_ASSERT_STRING_EQUAL(kind->members[1], "it's");
  CU_ASSERT_TRUE(n->nullable);
  CU_ASSERT_STRING_EQUAL(n->default_value, "NULL"); /* MariaDB's DEFAULT NULL */
  CU_ASSERT_EQUAL_FATAL(t.n_idx, 3);
  CU_ASSERT_STRING_EQUAL(t.idx[0].name, "PRIMARY");
  CU_ASSERT_TRUE(t.idx[0].unique);
  bool found_uk = false;
  for (uint32_t i = 0; i < t.n_idx; i++)
    if (strcmp(t.idx[i].name, "uk") == 0) {
      found_uk = true;
      CU_ASSERT_TRUE(t.idx[i].unique);
      CU_ASSERT_STRING_EQUAL(t.idx[i].columns, "name(8),n");
    }
  CU_ASSERT_TRUE(found_uk);
  /* the same table written by hand in another order of columns is equal */
  CU_ASSERT_EQUAL_FATAL(testdb_exec(dst, "CREATE TABLE " DB ".t_same LIKE " DB ".t"), 0);
  dmh_sj_table same;
  read_table("t_same", &same);
  CU_ASSERT_TRUE(dmh_sj_equal(&t, &same));
  dmh_sj_table_free(&same);
  dmh_sj_table_free(&t);
  dm_buf b = {0};
  char msg[256];
  CU_ASSERT_EQUAL(sync_structure_json(dst, DB, "nope", &b, msg, sizeof msg), 1);
  CU_ASSERT_EQUAL(b.len, 0);
  dm_buf_free(&b);
}

/* Real ALTERs, compared as the lock compares them: ADD COLUMN grows, widen grows, a rename does
 * not compare, ADD INDEX shrinks. */
static void test_alters_compare(void) {
  static const struct {
    const char *alter;
    int rc, cmp; /* of dmh_sj_compare(before, after) */
  } cases[] = {
      {"ADD COLUMN c INT", 0, -1},      {"ADD COLUMN c INT NOT NULL DEFAULT 5", 0, -1},
      {"MODIFY v VARCHAR(64)", 0, -1},  {"MODIFY v CHAR(10)", 0, 1},
      {"CHANGE v w VARCHAR(10)", 1, 0}, {"MODIFY v DATETIME", 1, 0},
      {"ADD INDEX kv (v)", 0, 1},       {"DROP COLUMN v", 0, 1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    CU_ASSERT_EQUAL_FATAL(testdb_exec(dst, "DROP TABLE IF EXISTS " DB ".a; CREATE TABLE " DB
                                           ".a (id INT NOT NULL PRIMARY KEY, v VARCHAR(10))"),
                          0);
    dmh_sj_table before, after;
    read_table("a", &before);
    CU_ASSERT_EQUAL_FATAL(testdb_execf(dst, "ALTER TABLE " DB ".a %s", cases[i].alter), 0);
    read_table("a", &after);
    int cmp = 99;
    char why[DMH_SJ_WHY_MAX] = "";
    int rc = dmh_sj_compare(&before, &after, &cmp, why, sizeof why);
    if (rc != cases[i].rc || (rc == 0 && cmp != cases[i].cmp))
      fprintf(stderr, "%s: rc %d cmp %d (%s)\n", cases[i].alter, rc, cmp, why);
    CU_ASSERT_EQUAL(rc, cases[i].rc);
    if (rc == 0)
      CU_ASSERT_EQUAL(cmp, cases[i].cmp);
    dmh_sj_table_free(&before);
    dmh_sj_table_free(&after);
  }
}

/* The scratch check of `sql` (a DDL of the source table src.orders_1, routed to DB.orders):
 * what it appends. */
static int scratch(const char *sql, dm_buf *out) {
  sync_ddl d;
  char msg[512];
  CU_ASSERT_EQUAL_FATAL(sync_ddl_parse(sql, strlen(sql), "src", &d, msg, sizeof msg), 0);
  int rc = sync_structure_scratch(dst, SHADOW, "_dmt_scratch", DB, "orders", &d, "src", "orders_1",
                                  out, msg, sizeof msg);
  if (rc != 0)
    fprintf(stderr, "scratch %s: %s\n", sql, msg);
  sync_ddl_free(&d);
  return rc;
}

static void test_scratch(void) {
  CU_ASSERT_EQUAL_FATAL(testdb_exec(dst, "CREATE TABLE " DB ".orders (id INT NOT NULL, "
                                         "c_table VARCHAR(64) NOT NULL, PRIMARY KEY (c_table, "
                                         "id))"),
                        0);
  dm_buf b = {0};
  CU_ASSERT_EQUAL_FATAL(scratch("ALTER TABLE orders_1 ADD COLUMN note VARCHAR(20) DEFAULT ''", &b),
                        0);
  CU_ASSERT_PTR_NOT_NULL(strstr(b.p, "\"target\":{\"columns\":["));
  CU_ASSERT_PTR_NOT_NULL(strstr(b.p, "\"name\":\"note\""));
  CU_ASSERT_PTR_NOT_NULL(strstr(b.p, "\"name\":\"c_table\""));
  /* the target itself is untouched and the copy is gone */
  long long n = -1;
  CU_ASSERT_EQUAL(testdb_query_int(dst, &n,
                                   "SELECT COUNT(*) FROM information_schema.COLUMNS WHERE "
                                   "TABLE_SCHEMA = '" DB "' AND TABLE_NAME = 'orders' AND "
                                   "COLUMN_NAME = 'note'"),
                  0);
  CU_ASSERT_EQUAL(n, 0);
  CU_ASSERT_EQUAL(testdb_query_int(dst, &n,
                                   "SELECT COUNT(*) FROM information_schema.TABLES WHERE "
                                   "TABLE_SCHEMA = '" SHADOW "'"),
                  0);
  CU_ASSERT_EQUAL(n, 0);

  /* a statement the target refuses: its message */
  dm_buf_reset(&b);
  CU_ASSERT_EQUAL_FATAL(scratch("ALTER TABLE orders_1 ADD COLUMN e INT AFTER nope", &b), 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(b.p, "\"target_error\":\"Unknown column 'nope'"));

  /* no target table: nothing to say */
  CU_ASSERT_EQUAL_FATAL(testdb_exec(dst, "RENAME TABLE " DB ".orders TO " DB ".orders_x"), 0);
  dm_buf_reset(&b);
  CU_ASSERT_EQUAL_FATAL(scratch("ALTER TABLE orders_1 ADD COLUMN e INT", &b), 0);
  CU_ASSERT_EQUAL(b.len, 0);
  CU_ASSERT_EQUAL_FATAL(testdb_exec(dst, "RENAME TABLE " DB ".orders_x TO " DB ".orders"), 0);
  dm_buf_free(&b);
}

/* The whole path of one info on real structures: before/after of a source table, the scratch
 * check's result appended to after, the lock's answer. The target narrows `id` to SMALLINT: the
 * shard's ADD COLUMN would run, but the target could not take the join's INT: held. */
static void test_lock_with_scratch(void) {
  CU_ASSERT_EQUAL_FATAL(testdb_exec(dst, "DROP TABLE IF EXISTS " DB ".orders_1; CREATE TABLE " DB
                                         ".orders_1 (id INT NOT NULL PRIMARY KEY)"),
                        0);
  dm_buf before = {0}, after = {0};
  char msg[256];
  CU_ASSERT_EQUAL_FATAL(sync_structure_json(dst, DB, "orders_1", &before, msg, sizeof msg), 0);
  CU_ASSERT_EQUAL_FATAL(testdb_exec(dst, "ALTER TABLE " DB ".orders_1 ADD COLUMN c INT"), 0);
  CU_ASSERT_EQUAL_FATAL(sync_structure_json(dst, DB, "orders_1", &after, msg, sizeof msg), 0);
  CU_ASSERT_EQUAL_FATAL(testdb_exec(dst, "ALTER TABLE " DB ".orders MODIFY id SMALLINT NOT NULL"),
                        0);
  /* as sync_tracker_scratch does: the check's member goes inside after's object */
  after.len--;
  CU_ASSERT_EQUAL_FATAL(dm_buf_putc(&after, ','), 0);
  CU_ASSERT_EQUAL_FATAL(scratch("ALTER TABLE orders_1 ADD COLUMN c INT", &after), 0);
  CU_ASSERT_EQUAL_FATAL(dm_buf_putc(&after, '}'), 0);

  dmh_opt_lock *l = dmh_opt_lock_new("task-`" DB "`.`orders`");
  const char *ddls[] = {"ALTER TABLE `" DB "`.`orders` ADD COLUMN `c` INT"};
  dm_shard_info info = {.ddls = ddls,
                        .n_ddls = 1,
                        .schema = "src",
                        .table = "orders_1",
                        .before = before.p,
                        .after = after.p};
  dmh_opt_result r;
  CU_ASSERT_EQUAL_FATAL(dmh_opt_lock_try_sync(l, "s1", &info, &r), 0);
  CU_ASSERT_EQUAL(r.verdict, DMH_OPT_CONFLICT);
  CU_ASSERT_PTR_NOT_NULL(strstr(r.message, "column `id`: the target would be smallint"));
  dmh_opt_result_free(&r);
  dmh_opt_lock_free(l);

  /* the target as wide as the shards: the same info runs */
  CU_ASSERT_EQUAL_FATAL(testdb_exec(dst, "ALTER TABLE " DB ".orders MODIFY id INT NOT NULL"), 0);
  after.len = 0;
  CU_ASSERT_EQUAL_FATAL(sync_structure_json(dst, DB, "orders_1", &after, msg, sizeof msg), 0);
  after.len--;
  CU_ASSERT_EQUAL_FATAL(dm_buf_putc(&after, ','), 0);
  CU_ASSERT_EQUAL_FATAL(scratch("ALTER TABLE orders_1 ADD COLUMN c INT", &after), 0);
  CU_ASSERT_EQUAL_FATAL(dm_buf_putc(&after, '}'), 0);
  info.after = after.p;
  l = dmh_opt_lock_new("task-`" DB "`.`orders`");
  CU_ASSERT_EQUAL_FATAL(dmh_opt_lock_try_sync(l, "s1", &info, &r), 0);
  if (r.verdict != DMH_OPT_EXEC)
    fprintf(stderr, "%s\n", r.message);
  CU_ASSERT_EQUAL(r.verdict, DMH_OPT_EXEC);
  dmh_opt_result_free(&r);
  dmh_opt_lock_free(l);
  dm_buf_free(&before);
  dm_buf_free(&after);
}

/* The tracker's after: the statements on a copy of the shadow, the shadow unchanged. */
static void test_try_on_copy(void) {
  CU_ASSERT_EQUAL_FATAL(testdb_exec(dst, "DROP TABLE IF EXISTS " DB ".shadow_t; CREATE TABLE " DB
                                         ".shadow_t (id INT NOT NULL PRIMARY KEY)"),
                        0);
  const char *sql = "ALTER TABLE shadow_t ADD COLUMN c INT, ADD INDEX kc (c)";
  sync_ddl d;
  char msg[512], refused[512];
  CU_ASSERT_EQUAL_FATAL(sync_ddl_parse(sql, strlen(sql), "src", &d, msg, sizeof msg), 0);
  dm_buf b = {0};
  CU_ASSERT_EQUAL_FATAL(sync_structure_try(dst, SHADOW, "_dmt_after_copy", DB, "shadow_t", &d,
                                           "src", "shadow_t", &b, refused, sizeof refused, msg,
                                           sizeof msg),
                        0);
  dmh_sj_table after;
  char why[DMH_SJ_WHY_MAX];
  CU_ASSERT_EQUAL_FATAL(dmh_sj_table_from_json(b.p, &after, why, sizeof why), 0);
  CU_ASSERT_PTR_NOT_NULL(dmh_sj_column_find(&after, "c"));
  CU_ASSERT_EQUAL(after.n_idx, 2);
  dmh_sj_table_free(&after);
  dmh_sj_table shadow;
  read_table("shadow_t", &shadow);
  CU_ASSERT_PTR_NULL(dmh_sj_column_find(&shadow, "c")); /* the original is untouched */
  dmh_sj_table_free(&shadow);
  sync_ddl_free(&d);
  /* a statement the copy refuses; a table that is not there */
  sql = "ALTER TABLE shadow_t DROP COLUMN nope";
  CU_ASSERT_EQUAL_FATAL(sync_ddl_parse(sql, strlen(sql), "src", &d, msg, sizeof msg), 0);
  dm_buf_reset(&b);
  CU_ASSERT_EQUAL(sync_structure_try(dst, SHADOW, "_dmt_after_copy", DB, "shadow_t", &d, "src",
                                     "shadow_t", &b, refused, sizeof refused, msg, sizeof msg),
                  1);
  CU_ASSERT_PTR_NOT_NULL(strstr(refused, "nope"));
  CU_ASSERT_EQUAL(b.len, 0);
  CU_ASSERT_EQUAL(sync_structure_try(dst, SHADOW, "_dmt_after_copy", DB, "no_such", &d, "src",
                                     "shadow_t", &b, refused, sizeof refused, msg, sizeof msg),
                  2);
  sync_ddl_free(&d);
  dm_buf_free(&b);
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"read", test_read},
      {"alters_compare", test_alters_compare},
      {"scratch", test_scratch},
      {"lock_with_scratch", test_lock_with_scratch},
      {"try_on_copy", test_try_on_copy},
  };
  return dmh_cunit_run("shard_structure", suite_init, suite_clean, tests,
                       sizeof tests / sizeof tests[0]);
}

/*
 * Issue 10 (behave as DM does): a target table whose columns are a superset of the source's.
 *  - mode all (dump, load, sync) into target tables with two more columns than the source (one
 *    with a DEFAULT, one nullable without one) and the source's in another order: the load
 *    refused them (DM_ERR_LOAD_TABLE_MISMATCH); now the load and the sync's inserts, updates and
 *    deletes fill the source's columns by name and leave the extra ones at their defaults, for a
 *    table with a primary key and one without a key;
 *  - a target table lacking a column the source sends stopped the sync with the server's
 *    "Unknown column" on the first row; an extra NOT NULL column without a default got the
 *    server's implicit 0. Both are refused now with DM_ERR_SYNC_COLUMNS naming table and column.
 * Databases h10_col*.
 */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cunit_run.h"
#include "dmhost/error.h"
#include "sync_test_util.h"
#include "testdb.h"

static MYSQL *src, *dst;

static int suite_init(void) {
  return ts_suite_open(&src, &dst);
}

static int suite_clean(void) {
  ts_suite_close(&src, &dst);
  return 0;
}

/* The rows of a query as one string: cells '|'-separated, rows ';'-separated (NULL as \N). */
static void sc_rows(MYSQL *m, const char *q, char *out, size_t len) {
  out[0] = '\0';
  MYSQL_RES *r = NULL;
  if (mysql_query(m, q) != 0 || !(r = mysql_store_result(m))) {
    snprintf(out, len, "error: %s", mysql_error(m));
    return;
  }
  size_t n = 0;
  unsigned nf = mysql_num_fields(r);
  MYSQL_ROW row;
  while ((row = mysql_fetch_row(r)) != NULL && n < len)
    for (unsigned i = 0; i < nf && n < len; i++)
      n += (size_t)snprintf(out + n, len - n, "%s%s", row[i] ? row[i] : "\\N",
                            i + 1 < nf ? "|" : ";");
  mysql_free_result(r);
}

/* The source's rows of `table` equal the target's (source columns only), row by row, and every
 * target row has its extra columns at their defaults. */
static void sc_compare(const char *table, const char *cols, const char *order) {
  char q[512], a[8192], b[8192];
  snprintf(q, sizeof q, "SELECT %s FROM h10_col.%s ORDER BY %s", cols, table, order);
  sc_rows(src, q, a, sizeof a);
  sc_rows(dst, q, b, sizeof b);
  if (strcmp(a, b) != 0)
    fprintf(stderr, "%s differs:\n source %s\n target %s\n", table, a, b);
  CU_ASSERT_STRING_EQUAL(a, b);
  CU_ASSERT(strlen(a) > 0);
  CU_ASSERT_EQUAL(lt_count(dst,
                           "SELECT COUNT(*) FROM h10_col.%s WHERE extra_d <> 7 OR extra_n IS "
                           "NOT NULL",
                           table),
                  0);
}

static void test_mode_all_wider_target(void) {
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  testdb_recreate_db(src, "h10_col");
  testdb_recreate_db(dst, "h10_col");
  lt_drop_checkpoint(dst, "h10_col");
  lt_exec(dst, "DROP TABLE IF EXISTS dm_meta.`h10_col_syncer_checkpoint`");
  lt_exec(src, "CREATE TABLE h10_col.t (id int NOT NULL PRIMARY KEY, v varchar(20), n int)");
  lt_exec(src, "CREATE TABLE h10_col.k (a int, b varchar(10))");
  lt_exec(src, "INSERT INTO h10_col.t VALUES (1,'one',10),(2,'two',NULL),(3,NULL,30)");
  lt_exec(src, "INSERT INTO h10_col.k VALUES (1,'x'),(2,NULL),(3,'z')");
  lt_exec(dst, "CREATE TABLE h10_col.t (extra_d int NOT NULL DEFAULT 7, n int, v varchar(20), "
               "id int NOT NULL PRIMARY KEY, extra_n varchar(5))");
  lt_exec(dst, "CREATE TABLE h10_col.k (b varchar(10), extra_d int NOT NULL DEFAULT 7, a int, "
               "extra_n varchar(5))");
  lt_task t = {.name = "h10_col",
               .mode = "all",
               .instance = "block-allow-list = \"only\";",
               .extra = "block-allow-list = { only = { do-dbs = [\"h10_col\"]; }; };\n",
               .sync = TS_SYNC};
  CU_ASSERT_FATAL(lt_config(&e, &t) == 0);
  dmh_subtask *st = lt_subtask(&e);
  dm_error err;
  CU_ASSERT_FATAL(st && dmh_subtask_start(st, &err) == 0);
  /* dump and load first: the sync's checkpoint table appears when the sync unit starts */
  for (double end = lt_now() + 60; lt_now() < end && dmh_subtask_stage(st) == DMH_STAGE_RUNNING &&
                                   lt_count(dst, "SELECT COUNT(*) FROM information_schema.TABLES "
                                                 "WHERE TABLE_SCHEMA = 'dm_meta' AND TABLE_NAME = "
                                                 "'h10_col_syncer_checkpoint'") == 0;
       lt_sleep_ms(50))
    ;
  bool caught = dmh_subtask_stage(st) == DMH_STAGE_RUNNING && ts_catch_up("h10_col", 60000);
  char msg[1024] = "", raw[600] = "";
  int code = lt_first_error(st, msg, sizeof msg, raw, sizeof raw, NULL);
  if (code)
    fprintf(stderr, "error %d: %s (%s)\n", code, msg, raw);
  CU_ASSERT_EQUAL_FATAL(code, 0);
  CU_ASSERT_FATAL(caught);
  /* the load's rows */
  sc_compare("t", "id,v,n", "id");
  sc_compare("k", "a,b", "a");
  /* the sync's */
  lt_exec(src, "INSERT INTO h10_col.t VALUES (4,'four',40),(5,NULL,NULL)");
  lt_exec(src, "UPDATE h10_col.t SET v = 'uno', n = 11 WHERE id = 1");
  lt_exec(src, "UPDATE h10_col.t SET id = 6 WHERE id = 3");
  lt_exec(src, "DELETE FROM h10_col.t WHERE id = 2");
  lt_exec(src, "INSERT INTO h10_col.k VALUES (4,'w')");
  lt_exec(src, "UPDATE h10_col.k SET b = 'y' WHERE a = 1");
  lt_exec(src, "DELETE FROM h10_col.k WHERE a = 2");
  CU_ASSERT(ts_catch_up("h10_col", 30000));
  code = lt_first_error(st, msg, sizeof msg, raw, sizeof raw, NULL);
  if (code)
    fprintf(stderr, "error %d: %s (%s)\n", code, msg, raw);
  CU_ASSERT_EQUAL(code, 0);
  sc_compare("t", "id,v,n", "id");
  sc_compare("k", "a,b", "a");
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM h10_col.t"), 4);
  ts_stop(st);
  lt_teardown(&e);
}

/* A target table that does not take every row of the source: the sync stops at the first row
 * event with a coded error naming the table and the column. */
static void sc_refused(const char *db, const char *target_ddl, const char *part) {
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  testdb_recreate_db(src, db);
  testdb_recreate_db(dst, db);
  lt_exec(src, "CREATE TABLE %s.t (id int NOT NULL PRIMARY KEY, v int, gone int)", db);
  lt_exec(dst, target_ddl, db);
  CU_ASSERT_FATAL(ts_config(&e, db, db, NULL, NULL) == 0);
  dmh_subtask *st = ts_start(&e);
  lt_exec(src, "INSERT INTO %s.t VALUES (1, 1, 1)", db);
  CU_ASSERT_EQUAL(dmh_subtask_wait_settled(st, 30000), DMH_STAGE_PAUSED);
  char msg[1024] = "";
  bool resumable = true;
  CU_ASSERT_EQUAL(lt_first_error(st, msg, sizeof msg, NULL, 0, &resumable), DM_ERR_SYNC_COLUMNS);
  CU_ASSERT(lt_has(msg, part));
  CU_ASSERT_FALSE(resumable);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM %s.t", db), 0);
  ts_stop(st);
  lt_teardown(&e);
}

static void test_target_lacks_column(void) {
  sc_refused("h10_colm", "CREATE TABLE %s.t (id int NOT NULL PRIMARY KEY, v int)",
             "table `h10_colm`.`t` on the target (for `h10_colm`.`t` of the source) has no "
             "column `gone`");
}

static void test_target_extra_unfilled(void) {
  sc_refused("h10_colu",
             "CREATE TABLE %s.t (id int NOT NULL PRIMARY KEY, v int, gone int, must int NOT NULL)",
             "has column `must`, which the source lacks, NOT NULL without a default");
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"mode all into wider target tables", test_mode_all_wider_target},
      {"a target table lacking a source column", test_target_lacks_column},
      {"an extra target column nothing fills", test_target_extra_unfilled},
  };
  return dmh_cunit_run("sync_columns", suite_init, suite_clean, tests,
                       sizeof tests / sizeof tests[0]);
}

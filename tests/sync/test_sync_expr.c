/*
 * DM's expression filters (issue 23) against the real pair (CTest fixture mariadb), mode
 * incremental. The first test is DM's own integration test (dm/tests/expression_filter: the rules
 * of conf/dm-task2.yaml, the statements of data/db1.prepare2.sql and db1.increment2.sql, its
 * expected counts), on dmhost: a generated column, a column dropped (the rule then skips nothing)
 * and added back as a generated column, NOW(), arithmetic on doubles, the old and new rows of an
 * update (AND), text in a latin1 table compared with a UTF-8 literal. Every row DM's test marks
 * should_skip = 1 must be absent or updated away on the target, every other one present.
 *
 * The second: a delete rule, and a rule the target cannot evaluate (an unknown function): the
 * sync stops before the row with DM_ERR_CONFIG_INVALID naming the table; update-task with the
 * rule fixed and resume go on, each row applied or skipped once (checked against the source).
 */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cunit_run.h"
#include "sync_test_util.h"
#include "testdb.h"

static MYSQL *src, *dst;

static void tse_drop(void) {
  lt_exec(src, "DROP DATABASE IF EXISTS tse_expr");
  lt_exec(dst, "DROP DATABASE IF EXISTS tse_expr");
}

static int suite_init(void) {
  if (ts_suite_open(&src, &dst) < 0 || lt_exec(src, "USE mysql") != 0)
    return -1;
  tse_drop();
  return 0;
}

static int suite_clean(void) {
  if (src && dst)
    tse_drop();
  ts_suite_close(&src, &dst);
  return 0;
}

static long long tse_count(const char *where) {
  return lt_count(dst, "SELECT COUNT(*) FROM tse_expr.%s", where);
}

/* DM's conf/dm-task2.yaml rules, in the task file's libconfig form (schema renamed). */
static const char tse_rules[] =
    "expression-filter = {\n"
    "  even_c = { schema = \"tse_expr\"; table = \"t2\"; insert-value-expr = \"c % 2 = 0\"; };\n"
    "  always_false = { schema = \"tse_expr\"; table = \"t2\"; update-old-value-expr = \"1 = 0\";"
    " update-new-value-expr = \"1 = 0\"; };\n"
    "  future_date = { schema = \"tse_expr\"; table = \"t3\"; insert-value-expr = \"ts > NOW()\"; "
    "};\n"
    "  pythagorean = { schema = \"tse_expr\"; table = \"t4\"; insert-value-expr = \"a*a + b*b = "
    "c*c\"; };\n"
    "  update_old_lt_100 = { schema = \"tse_expr\"; table = \"t5\"; update-old-value-expr = \"c > "
    "100\"; };\n"
    "  update_new_lt_100 = { schema = \"tse_expr\"; table = \"t5\"; update-new-value-expr = \"c > "
    "100\"; };\n"
    "  update_old_and_new = { schema = \"tse_expr\"; table = \"t5\"; update-old-value-expr = \"c = "
    "1\"; update-new-value-expr = \"c = 2\"; };\n"
    "  only_muller = { schema = \"tse_expr\"; table = \"t6\"; insert-value-expr = \"name != "
    "'M\xc3\xbcller'\"; };\n"
    "  e02 = { schema = \"tse_expr\"; table = \"t7\"; update-new-value-expr = \"r = 'a'\"; };\n"
    "};\n";

static const char tse_inst[] =
    "expression-filters = [\"even_c\", \"always_false\", \"future_date\", \"pythagorean\", "
    "\"update_old_lt_100\", \"update_new_lt_100\", \"update_old_and_new\", \"only_muller\", "
    "\"e02\"];";

static void test_sync_expr_dm(void) {
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  /* db1.prepare2.sql: on both sides (mode incremental starts after it) */
  static const char *const prepare[] = {
      "CREATE DATABASE tse_expr",
      "CREATE TABLE tse_expr.t2 (id INT PRIMARY KEY, should_skip INT, c INT, gen INT AS (id + 1))",
      "CREATE TABLE tse_expr.t6 (id INT, name VARCHAR(20), msg TEXT, PRIMARY KEY (id)) CHARACTER "
      "SET latin1",
      "INSERT INTO tse_expr.t6 (id, name, msg) VALUES (0, 'M\xc3\xbcller', 'M\xc3\xbcller')",
      "CREATE TABLE tse_expr.t7 (a BIGINT PRIMARY KEY, r VARCHAR(10), s INT)",
      "INSERT INTO tse_expr.t7 VALUES (1, 'a', 2)",
  };
  for (size_t i = 0; i < sizeof prepare / sizeof *prepare; i++) {
    CU_ASSERT_FATAL(lt_exec(src, "%s", prepare[i]) == 0);
    CU_ASSERT_FATAL(lt_exec(dst, "%s", prepare[i]) == 0);
  }
  CU_ASSERT_FATAL(ts_config_inst(&e, "ts_expr", "do-dbs = [\"tse_expr\"];", tse_inst, tse_rules,
                                 NULL, NULL) == 0);
  dmh_subtask *st = ts_start(&e);
  CU_ASSERT_FATAL(st != NULL && dmh_subtask_stage(st) == DMH_STAGE_RUNNING);

  /* db1.increment2.sql */
  static const char *const increment[] = {
      /* a generated column */
      "INSERT INTO tse_expr.t2 (id, should_skip, c) VALUES (1, 0, 1), (2, 1, 2)",
      /* the table's structure changes */
      "ALTER TABLE tse_expr.t2 ADD COLUMN d INT",
      "INSERT INTO tse_expr.t2 (id, should_skip, c) VALUES (3, 0, 3), (4, 1, 4)",
      /* the rule's column is gone: it skips nothing */
      "ALTER TABLE tse_expr.t2 DROP COLUMN c",
      "INSERT INTO tse_expr.t2 (id, should_skip) VALUES (5, 0), (6, 0)",
      /* ... and back, as a generated column */
      "ALTER TABLE tse_expr.t2 ADD COLUMN c INT AS (id + 1)",
      "INSERT INTO tse_expr.t2 (id, should_skip, d) VALUES (7, 1, 100), (8, 0, 200), (10, 2, "
      "300)",
      "UPDATE tse_expr.t2 SET should_skip = 0 WHERE id = 10",
      /* a new table */
      "CREATE TABLE tse_expr.t3 (id INT PRIMARY KEY, should_skip INT, ts DATETIME)",
      "INSERT INTO tse_expr.t3 VALUES (1, 0, '1999-01-01'), (2, 1, '2040-01-01')",
      "CREATE TABLE tse_expr.t4 (id INT PRIMARY KEY, should_skip INT, a DOUBLE, b DOUBLE, c "
      "DOUBLE)",
      "INSERT INTO tse_expr.t4 VALUES (1, 0, 1, 2, 3), (2, 1, 3, 4, 5)",
      /* UPDATE */
      "CREATE TABLE tse_expr.t5 (id INT PRIMARY KEY, should_skip INT, c INT)",
      "INSERT INTO tse_expr.t5 VALUES (1, 0, 99), (2, 0, 101), (3, 0, 1)",
      "UPDATE tse_expr.t5 SET should_skip = 1, c = 110 WHERE id = 1",
      "UPDATE tse_expr.t5 SET should_skip = 1, c = 20 WHERE id = 2",
      "UPDATE tse_expr.t5 SET should_skip = 1, c = 2 WHERE c = 1",
      /* update-old-value-expr and update-new-value-expr: AND */
      "INSERT INTO tse_expr.t5 VALUES (4, 1, 1)",
      "UPDATE tse_expr.t5 SET should_skip = 0, c = 3 WHERE c = 1",
      "INSERT INTO tse_expr.t6 (id, name, msg) VALUES (1, 'M\xc3\xbcller', 'M\xc3\xbcller'), (2, "
      "'X \xc3\x86 A-12', 'X \xc3\x86 A-12')",
      "ALTER TABLE tse_expr.t6 ADD COLUMN name2 VARCHAR(20) CHARACTER SET latin1 DEFAULT "
      "'M\xc3\xbcller'",
      /* pingcap/tiflow#7774 */
      "UPDATE tse_expr.t7 SET s = s + 1 WHERE a = 1",
      "ALTER TABLE tse_expr.t5 ADD COLUMN dummy INT",
  };
  for (size_t i = 0; i < sizeof increment / sizeof *increment; i++)
    CU_ASSERT_FATAL(lt_exec(src, "%s", increment[i]) == 0);
  /* the precondition: the source holds every row DM's test writes */
  CU_ASSERT_EQUAL_FATAL(lt_count(src, "SELECT COUNT(*) FROM tse_expr.t2"), 9);
  CU_ASSERT_EQUAL_FATAL(lt_count(src, "SELECT COUNT(*) FROM tse_expr.t5 WHERE should_skip = 1"), 3);
  CU_ASSERT(ts_catch_up("ts_expr", 120000));
  CU_ASSERT(ts_clean_run(st));

  /* DM's run.sh, count by count */
  CU_ASSERT_EQUAL(tse_count("t2"), 6);
  CU_ASSERT_EQUAL(tse_count("t2 WHERE should_skip = 0"), 6);
  CU_ASSERT_EQUAL(tse_count("t2 WHERE should_skip = 1"), 0);
  CU_ASSERT_EQUAL(tse_count("t3"), 1);
  CU_ASSERT_EQUAL(tse_count("t3 WHERE should_skip = 1"), 0);
  CU_ASSERT_EQUAL(tse_count("t4"), 1);
  CU_ASSERT_EQUAL(tse_count("t4 WHERE should_skip = 1"), 0);
  CU_ASSERT_EQUAL(tse_count("t5"), 4);
  CU_ASSERT_EQUAL(tse_count("t5 WHERE should_skip = 1"), 0);
  CU_ASSERT_EQUAL(tse_count("t6 WHERE name = 'M\xc3\xbcller' AND msg = 'M\xc3\xbcller' AND name2 "
                            "= 'M\xc3\xbcller'"),
                  2);
  CU_ASSERT_EQUAL(tse_count("t6 WHERE name != 'M\xc3\xbcller'"), 0);
  CU_ASSERT_EQUAL(tse_count("t7 WHERE r = 'a' AND s = 2"), 1);
  CU_ASSERT_EQUAL(tse_count("t7 WHERE r = 'a' AND s = 3"), 0);
  /* and exactly which rows: the ones DM keeps, with their values */
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT GROUP_CONCAT(id ORDER BY id) = '1,3,5,6,8,10' FROM "
                                "tse_expr.t2"),
                  1);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT GROUP_CONCAT(CONCAT(id, ':', c) ORDER BY id) = "
                                "'1:99,2:101,3:1,4:3' FROM tse_expr.t5"),
                  1);
  ts_stop(st);
  lt_teardown(&e);
}

static void test_sync_expr_delete_and_bad_rule(void) {
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  tse_drop();
  static const char *const prepare[] = {
      "CREATE DATABASE tse_expr",
      "CREATE TABLE tse_expr.d (id INT PRIMARY KEY, v INT, t TIMESTAMP(3) NULL)",
      "CREATE TABLE tse_expr.b (id INT PRIMARY KEY, v INT)",
  };
  for (size_t i = 0; i < sizeof prepare / sizeof *prepare; i++) {
    CU_ASSERT_FATAL(lt_exec(src, "%s", prepare[i]) == 0);
    CU_ASSERT_FATAL(lt_exec(dst, "%s", prepare[i]) == 0);
  }
  static const char rules[] =
      "expression-filter = {\n"
      "  keep_big = { schema = \"tse_expr\"; table = \"d\"; delete-value-expr = \"v >= 5 AND t "
      "> '2020-01-01'\"; };\n"
      "  bad = { schema = \"tse_expr\"; table = \"b\"; insert-value-expr = \"no_such_fn(v) = "
      "1\"; };\n"
      "};\n";
  CU_ASSERT_FATAL(ts_config_inst(&e, "ts_expr_del", "do-dbs = [\"tse_expr\"];",
                                 "expression-filters = [\"keep_big\", \"bad\"];", rules, NULL,
                                 NULL) == 0);
  dmh_subtask *st = ts_start(&e);
  CU_ASSERT_FATAL(st != NULL && dmh_subtask_stage(st) == DMH_STAGE_RUNNING);
  CU_ASSERT(lt_exec(src, "INSERT INTO tse_expr.d SELECT seq, seq, '2024-05-06 07:08:09.123' FROM "
                         "seq_1_to_9") == 0);
  CU_ASSERT(lt_exec(src, "DELETE FROM tse_expr.d WHERE id IN (2, 6, 7)") == 0);
  CU_ASSERT(ts_catch_up("ts_expr_del", 120000));
  /* the deletes of rows with v >= 5 are skipped: 6 and 7 stay on the target, 2 is gone */
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT GROUP_CONCAT(id ORDER BY id) = '1,3,4,5,6,7,8,9' FROM "
                                "tse_expr.d"),
                  1);
  /* the rule the target cannot evaluate: the sync stops at the row, before applying it */
  CU_ASSERT(lt_exec(src, "INSERT INTO tse_expr.b VALUES (1, 1), (2, 2)") == 0);
  CU_ASSERT_EQUAL_FATAL(dmh_subtask_wait_settled(st, 120000), DMH_STAGE_PAUSED);
  char msg[1024], raw[1024];
  CU_ASSERT_EQUAL(lt_first_error(st, msg, sizeof msg, raw, sizeof raw, NULL),
                  DM_ERR_CONFIG_INVALID);
  CU_ASSERT_PTR_NOT_NULL(strstr(msg, "`tse_expr`.`b`"));
  CU_ASSERT_PTR_NOT_NULL(strstr(raw, "no_such_fn"));
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM tse_expr.b"), 0);
  /* update-task: the rule fixed (skip even v); resume applies the odd row once */
  char path[512];
  snprintf(path, sizeof path, "%s/next.cfg", e.dir);
  FILE *f = fopen(e.task->path, "r");
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  static char text[65536];
  size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = '\0';
  char *at = strstr(text, "no_such_fn(v) = 1");
  CU_ASSERT_PTR_NOT_NULL_FATAL(at);
  memcpy(at, "v % 2 = 0        ", strlen("no_such_fn(v) = 1"));
  f = fopen(path, "w");
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  fputs(text, f);
  fclose(f);
  dmh_task_config *next = NULL;
  dm_error err;
  CU_ASSERT_EQUAL_FATAL(dmh_task_config_load(path, &next, &err), 0);
  CU_ASSERT_EQUAL_FATAL(dmh_subtask_update_check(st, next, false, &err), 0);
  CU_ASSERT_EQUAL_FATAL(dmh_subtask_update_apply(st, next, &err), 0);
  CU_ASSERT_EQUAL_FATAL(dmh_subtask_resume(st, &err), 0);
  CU_ASSERT(lt_exec(src, "INSERT INTO tse_expr.b VALUES (3, 3), (4, 4)") == 0);
  CU_ASSERT(ts_catch_up("ts_expr_del", 120000));
  CU_ASSERT(ts_clean_run(st));
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT GROUP_CONCAT(id ORDER BY id) = '1,3' FROM tse_expr.b"), 1);
  ts_stop(st);
  dmh_task_config_free(next);
  lt_teardown(&e);
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"DM's expression_filter test: its rules, statements and counts", test_sync_expr_dm},
      {"a delete rule; a rule the target refuses stops the sync, update-task fixes it",
       test_sync_expr_delete_and_bad_rule},
  };
  return dmh_cunit_run("sync_expr", suite_init, suite_clean, tests, sizeof tests / sizeof tests[0]);
}

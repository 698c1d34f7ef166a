/*
 * DM's matching rules end to end (issue 10, item 4): a mode-full task (dump -> load against the
 * real servers, CTest fixture mariadb) whose block-allow-list and routes are written as DM users
 * write them. Before the fix plain names were compared exactly and case-sensitively, so
 * do-dbs = ["LR_Upper_DB*"] matched no schema, and "~^t[\d]+" (RE2's digit class, read as POSIX
 * a '\' or a 'd') matched no table: nothing was copied. Now the wildcard picks lr_upper_db1 (not
 * lr_other), the regex t1 and t22 (not tx), and the routes (wildcards too, case folded) put them
 * where they say.
 */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <string.h>

#include "cunit_run.h"
#include "load_test_util.h"
#include "testdb.h"

static MYSQL *src, *dst;

static void lr_clean(void) {
  static const char *const dbs[] = {"lr_upper_db1", "lr_other", "lr_routed"}, *const tasks[] = {
                                                                                  "lr_rules"};
  lt_drop_all(dst, dbs, 3, tasks, 1);
}

static int suite_init(void) {
  src = lt_source();
  if (!src || lt_suite_open(&dst, lr_clean) != 0)
    return 1;
  static const char *const sql[] = {
      "CREATE TABLE lr_upper_db1.t1 (id INT PRIMARY KEY)",
      "CREATE TABLE lr_upper_db1.t22 (id INT PRIMARY KEY)",
      "CREATE TABLE lr_upper_db1.tx (id INT PRIMARY KEY)",
      "CREATE TABLE lr_other.t1 (id INT PRIMARY KEY)",
      "INSERT INTO lr_upper_db1.t1 SELECT seq FROM seq_1_to_11",
      "INSERT INTO lr_upper_db1.t22 SELECT seq FROM seq_1_to_22",
      "INSERT INTO lr_upper_db1.tx SELECT seq FROM seq_1_to_5",
      "INSERT INTO lr_other.t1 SELECT seq FROM seq_1_to_3",
  };
  if (lt_exec(src, "USE mysql") != 0 || testdb_recreate_db(src, "lr_upper_db1") != 0 ||
      testdb_recreate_db(src, "lr_other") != 0)
    return 1;
  for (size_t i = 0; i < sizeof sql / sizeof *sql; i++)
    if (testdb_exec(src, sql[i]) != 0)
      return 1;
  return 0;
}

static int suite_clean(void) {
  if (src) {
    lt_exec(src, "DROP DATABASE IF EXISTS lr_upper_db1");
    lt_exec(src, "DROP DATABASE IF EXISTS lr_other");
  }
  testdb_close(src);
  src = NULL;
  return lt_suite_close(&dst, lr_clean);
}

static long long lr_schemas(const char *name) {
  return lt_count(dst, "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = '%s'",
                  name);
}

static long long lr_tables(const char *db) {
  return lt_count(dst, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = '%s'",
                  db);
}

static void test_dm_matching(void) {
  /* the precondition: the source has what the rules must tell apart */
  CU_ASSERT_EQUAL_FATAL(lt_count(src, "SELECT COUNT(*) FROM lr_upper_db1.tx"), 5);
  CU_ASSERT_EQUAL_FATAL(lt_count(src, "SELECT COUNT(*) FROM lr_other.t1"), 3);

  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  lt_task t = {
      .name = "lr_rules",
      .mode = "full",
      .instance = "block-allow-list = \"bal\"; route-rules = [\"to-routed\", \"t22\"];",
      .extra =
          "block-allow-list = { bal = {\n"
          "  do-dbs = [\"LR_Upper_DB*\"];\n"
          "  do-tables = ( { db-name = \"lr_upper_db?\"; tbl-name = \"~^t[\\\\d]+\"; } );\n"
          "}; };\n"
          "routes = {\n"
          "  to-routed = { schema-pattern = \"LR_UPPER_DB*\"; target-schema = \"lr_routed\"; };\n"
          "  t22 = { schema-pattern = \"lr_upper_db[0-9]\"; table-pattern = \"T2?\";\n"
          "          target-schema = \"lr_routed\"; target-table = \"t_twenty_two\"; };\n"
          "};\n",
      .load = "pool-size = 2;"};
  CU_ASSERT_FATAL(lt_config(&e, &t) == 0);
  dmh_subtask *st;
  dmh_stage s = lt_run(&e, &st, 120000);
  char msg[1200];
  bool resumable;
  if (s != DMH_STAGE_FINISHED && lt_first_error(st, msg, sizeof msg, NULL, 0, &resumable))
    fprintf(stderr, "error: %s (resumable %d)\n", msg, resumable);
  CU_ASSERT_EQUAL(s, DMH_STAGE_FINISHED);

  /* the wildcard and the regex chose t1 and t22 of lr_upper_db1, the routes renamed them */
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM lr_routed.t1"), 11);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM lr_routed.t_twenty_two"), 22);
  CU_ASSERT_EQUAL(lr_tables("lr_routed"), 2); /* not tx */
  CU_ASSERT_EQUAL(lr_schemas("lr_upper_db1"), 0);
  CU_ASSERT_EQUAL(lr_schemas("lr_other"), 0);
  dmh_subtask_destroy(st);
  lt_teardown(&e);
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"block-allow-list and routes as DM matches them", test_dm_matching},
  };
  return dmh_cunit_run("load_rules", suite_init, suite_clean, tests,
                       sizeof tests / sizeof tests[0]);
}

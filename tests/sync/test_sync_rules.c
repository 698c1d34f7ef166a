/*
 * DM's matching rules in the sync unit (issue 10, item 4), against the real pair (CTest fixture
 * mariadb): a task in mode incremental whose do-dbs is the wildcard "TS_Upper*" and whose route's
 * schema-pattern is "TS_UPPER?" replicates what is written to ts_upper1 (created after the task
 * started: the CREATE DATABASE, CREATE TABLE and rows come through the binlog) into
 * ts_upper_routed, and nothing of ts_other. Before the fix names were compared exactly and
 * case-sensitively: the wildcard matched no schema and nothing was replicated.
 */
#include <CUnit/Basic.h>
#include <stdio.h>

#include "cunit_run.h"
#include "sync_test_util.h"
#include "testdb.h"

static MYSQL *src, *dst;

static void tsr_drop(void) {
  static const char *const dbs[] = {"ts_upper1", "ts_other", "ts_upper_routed"};
  for (size_t i = 0; i < sizeof dbs / sizeof *dbs; i++) {
    lt_exec(src, "DROP DATABASE IF EXISTS %s", dbs[i]);
    lt_exec(dst, "DROP DATABASE IF EXISTS %s", dbs[i]);
  }
}

static int suite_init(void) {
  src = lt_source();
  dst = lt_target();
  ts_init(src, dst);
  if (!src || !dst || lt_exec(src, "USE mysql") != 0) /* seq_1_to_N wants a current schema */
    return -1;
  tsr_drop();
  return 0;
}

static int suite_clean(void) {
  if (src && dst)
    tsr_drop();
  testdb_close(src);
  testdb_close(dst);
  return 0;
}

static long long tsr_schemas(const char *name) {
  return lt_count(dst, "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = '%s'",
                  name);
}

static void test_sync_wildcards_and_case(void) {
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  CU_ASSERT_FATAL(ts_config(&e, "ts_rules", "TS_Upper*",
                            "routes = { r = { schema-pattern = \"TS_UPPER?\"; target-schema = "
                            "\"ts_upper_routed\"; }; };\n",
                            NULL) == 0);
  dmh_subtask *st = ts_start(&e);
  CU_ASSERT_FATAL(st != NULL && dmh_subtask_stage(st) == DMH_STAGE_RUNNING);
  static const char *const sql[] = {
      "CREATE DATABASE ts_upper1",
      "CREATE TABLE ts_upper1.t1 (id INT PRIMARY KEY, v INT)",
      "INSERT INTO ts_upper1.t1 SELECT seq, seq * 2 FROM seq_1_to_40",
      "CREATE DATABASE ts_other",
      "CREATE TABLE ts_other.t1 (id INT PRIMARY KEY, v INT)",
      "INSERT INTO ts_other.t1 SELECT seq, seq FROM seq_1_to_5",
      "UPDATE ts_upper1.t1 SET v = v + 1 WHERE id <= 10",
      "DELETE FROM ts_upper1.t1 WHERE id > 30",
  };
  for (size_t i = 0; i < sizeof sql / sizeof *sql; i++)
    CU_ASSERT(lt_exec(src, "%s", sql[i]) == 0);
  /* the precondition: the source has both schemas, the rows are in the binlog */
  CU_ASSERT_EQUAL_FATAL(lt_count(src, "SELECT COUNT(*) FROM ts_other.t1"), 5);
  CU_ASSERT(ts_catch_up("ts_rules", 30000));

  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM ts_upper_routed.t1"), 30);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT SUM(v) FROM ts_upper_routed.t1"),
                  lt_count(src, "SELECT SUM(v) FROM ts_upper1.t1"));
  CU_ASSERT_EQUAL(tsr_schemas("ts_upper1"), 0);
  CU_ASSERT_EQUAL(tsr_schemas("ts_other"), 0);
  ts_stop(st);
  lt_teardown(&e);
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"do-dbs wildcard and a route, case folded", test_sync_wildcards_and_case},
  };
  return dmh_cunit_run("sync_rules", suite_init, suite_clean, tests,
                       sizeof tests / sizeof tests[0]);
}

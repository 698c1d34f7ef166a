/*
 * The precheck's items that only a global of the source can make fail: binlog_format STATEMENT,
 * binlog_row_image MINIMAL, and max_connections below what the task opens. Each global is set for
 * one check and restored at once (and again in the clean-up); CTest runs this file alone
 * (RUN_SERIAL), as other tests read the same source's binlog.
 */
#include <stdio.h>
#include <string.h>

#include "cunit_run.h"
#include "precheck_test_util.h"
#include "testdb.h"

static MYSQL *src;
static long long max_conn = -1;

static int suite_init(void) {
  if (!(src = lt_source()))
    return 1;
  if (testdb_query_int(src, &max_conn, "SELECT @@GLOBAL.max_connections") < 0)
    return 1;
  return lt_exec(src, "DROP DATABASE IF EXISTS pcg_db") || lt_exec(src, "CREATE DATABASE pcg_db") ||
         lt_exec(src, "CREATE TABLE pcg_db.t (id INT PRIMARY KEY)");
}

static void pg_restore(void) {
  lt_exec(src, "SET GLOBAL binlog_format = 'ROW'");
  lt_exec(src, "SET GLOBAL binlog_row_image = 'FULL'");
  if (max_conn > 0)
    lt_exec(src, "SET GLOBAL max_connections = %lld", max_conn);
}

static int suite_clean(void) {
  pg_restore();
  lt_exec(src, "DROP DATABASE IF EXISTS pcg_db");
  testdb_close(src);
  return 0;
}

static int pg_config(lt_env *e, const char *mode, const char *extra) {
  char x[1024];
  snprintf(x, sizeof x,
           "block-allow-list = { bal = { do-dbs = [\"pcg_db\"]; }; };\n"
           "dump = { threads = 60; };\n%s",
           extra ? extra : "");
  lt_task t = {.name = "pcg", .mode = mode, .instance = "block-allow-list = \"bal\";", .extra = x};
  return lt_config(e, &t);
}

/* The check with `set` in force on the source, restored before asserting. */
static int pg_run_with(lt_env *e, const char *set, dmh_precheck *pc) {
  if (lt_exec(src, "%s", set) != 0)
    return -1;
  int rc = pt_run(e, pc);
  pg_restore();
  return rc;
}

static void test_binlog_format(void) {
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  CU_ASSERT_FATAL(pg_config(&e, "incremental", NULL) == 0);
  dmh_precheck pc;
  CU_ASSERT_FATAL(pg_run_with(&e, "SET GLOBAL binlog_format = 'STATEMENT'", &pc) == 0);
  CU_ASSERT(pt_is(&pc, "binlog_format", DMH_CHECK_FAIL,
                  "the source's binlog_format is STATEMENT, the sync needs ROW"));
  CU_ASSERT(lt_has(pt_item(&pc, "binlog_format")->instruction, "SET GLOBAL binlog_format"));
  CU_ASSERT_EQUAL(pc.n_fail, 1);
  dmh_precheck_free(&pc);
  /* ignored: the same source passes */
  CU_ASSERT_FATAL(pg_config(&e, "incremental", "ignore-checking-items = [\"binlog_format\"];") ==
                  0);
  CU_ASSERT_FATAL(pg_run_with(&e, "SET GLOBAL binlog_format = 'STATEMENT'", &pc) == 0);
  CU_ASSERT_PTR_NULL(pt_item(&pc, "binlog_format"));
  CU_ASSERT_EQUAL(pc.n_fail, 0);
  dmh_precheck_free(&pc);
  lt_teardown(&e);
}

static void test_binlog_row_image(void) {
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  CU_ASSERT_FATAL(pg_config(&e, "all", NULL) == 0);
  dmh_precheck pc;
  CU_ASSERT_FATAL(pg_run_with(&e, "SET GLOBAL binlog_row_image = 'MINIMAL'", &pc) == 0);
  CU_ASSERT(pt_is(&pc, "binlog_row_image", DMH_CHECK_FAIL,
                  "the source's binlog_row_image is MINIMAL, the sync needs FULL"));
  CU_ASSERT_EQUAL(pc.n_fail, 1);
  dmh_precheck_free(&pc);
  lt_teardown(&e);
}

/* max_connections just above what is in use (MariaDB's floor is 10): the dump's 60 threads + 1
 * do not fit. */
static void test_max_connections(void) {
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  CU_ASSERT_FATAL(pg_config(&e, "full", NULL) == 0);
  long long used = -1;
  CU_ASSERT_FATAL(testdb_query_int(src, &used,
                                   "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS "
                                   "WHERE VARIABLE_NAME = 'THREADS_CONNECTED'") == 0);
  char set[128];
  snprintf(set, sizeof set, "SET GLOBAL max_connections = %lld", used + 2);
  dmh_precheck pc;
  CU_ASSERT_FATAL(pg_run_with(&e, set, &pc) == 0);
  CU_ASSERT(pt_is(&pc, "conn_number_checking", DMH_CHECK_FAIL, "the source accepts "));
  CU_ASSERT(pt_is(&pc, "conn_number_checking", DMH_CHECK_FAIL,
                  "the task opens up to 61 (dump threads + 1: 61"));
  dmh_precheck_free(&pc);
  /* restored: it passes */
  CU_ASSERT_FATAL(pt_run(&e, &pc) == 0);
  CU_ASSERT(pt_is(&pc, "conn_number_checking", DMH_CHECK_PASS, NULL));
  dmh_precheck_free(&pc);
  lt_teardown(&e);
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"binlog_format STATEMENT", test_binlog_format},
      {"binlog_row_image MINIMAL", test_binlog_row_image},
      {"max_connections", test_max_connections},
  };
  return dmh_cunit_run("precheck_globals", suite_init, suite_clean, tests,
                       sizeof tests / sizeof tests[0]);
}

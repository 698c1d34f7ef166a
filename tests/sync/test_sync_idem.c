/*
 * Issue 10 item 2: CREATE DATABASE / CREATE TABLE / DROP ... replayed on a target that already has
 * (or lacks) the object. Before, outside crash replay, each paused the task with the target's
 * error (1007, 1050, 1051, 1008; 1091 for DROP INDEX); DM's SplitDDL makes them idempotent (IF
 * NOT EXISTS / IF EXISTS) and so does the sync unit now (docs/sync.md, "Idempotent DDL"). Mode
 * incremental against the real pair: the task stays Running and the rows written after each DDL
 * arrive, compared with the source.
 */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <string.h>

#include "cunit_run.h"
#include "load_test_util.h"
#include "sync_test_util.h"
#include "testdb.h"

static MYSQL *src, *dst;

static int suite_init(void) {
  return ts_suite_open(&src, &dst);
}

static int suite_clean(void) {
  lt_exec(src, "DROP DATABASE IF EXISTS ts_idem");
  lt_exec(dst, "DROP DATABASE IF EXISTS ts_idem");
  ts_suite_close(&src, &dst);
  return 0;
}

/* Runs one source statement, waits until the task applied it, and says whether the task still
 * runs (printing its first error when not). */
static bool idem_step(dmh_subtask *st, const char *sql) {
  if (lt_exec(src, "%s", sql) != 0)
    return false;
  bool caught = ts_catch_up("ts_idem", 20000);
  dmh_stage stage = dmh_subtask_stage(st);
  if (!caught || stage != DMH_STAGE_RUNNING) {
    char msg[1024] = "", raw[1024] = "";
    int code = lt_first_error(st, msg, sizeof msg, raw, sizeof raw, NULL);
    fprintf(stderr, "after \"%s\": stage %d, error %d: %s / %s\n", sql, (int)stage, code, msg, raw);
    return false;
  }
  return true;
}

static void test_idempotent_ddl(void) {
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  lt_exec(src, "DROP DATABASE IF EXISTS ts_idem");
  lt_exec(dst, "DROP DATABASE IF EXISTS ts_idem");
  /* before the task's start position: the source has `gone` and an index on k; the target
   * (made by hand) lacks both, and already has the table t the source is about to create */
  CU_ASSERT_FATAL(lt_exec(src, "CREATE DATABASE ts_idem") == 0);
  CU_ASSERT_FATAL(lt_exec(src, "CREATE TABLE ts_idem.gone (x INT PRIMARY KEY)") == 0);
  CU_ASSERT_FATAL(lt_exec(src, "CREATE TABLE ts_idem.k (id INT PRIMARY KEY, a INT, KEY i (a))") ==
                  0);
  CU_ASSERT_FATAL(lt_exec(dst, "CREATE DATABASE ts_idem") == 0);
  CU_ASSERT_FATAL(lt_exec(dst, "CREATE TABLE ts_idem.k (id INT PRIMARY KEY, a INT)") == 0);
  CU_ASSERT_FATAL(lt_exec(dst, "CREATE TABLE ts_idem.t (id INT PRIMARY KEY, a INT)") == 0);
  CU_ASSERT_FATAL(ts_config(&e, "ts_idem", "ts_idem", NULL, NULL) == 0);
  dmh_subtask *st = ts_start(&e);
  CU_ASSERT_FATAL(st != NULL);
  CU_ASSERT_FATAL(dmh_subtask_stage(st) == DMH_STAGE_RUNNING);
  /* the preconditions: each of these fails on the target as the source wrote it */
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM information_schema.TABLES WHERE "
                                "TABLE_SCHEMA = 'ts_idem' AND TABLE_NAME IN ('t', 'k')"),
                  2);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM information_schema.TABLES WHERE "
                                "TABLE_SCHEMA = 'ts_idem' AND TABLE_NAME = 'gone'"),
                  0);

  CU_ASSERT(idem_step(st, "DROP TABLE ts_idem.gone"));                            /* was 1051 */
  CU_ASSERT(idem_step(st, "DROP INDEX i ON ts_idem.k"));                          /* was 1091 */
  CU_ASSERT(idem_step(st, "CREATE TABLE ts_idem.t (id INT PRIMARY KEY, a INT)")); /* was 1050 */
  CU_ASSERT(idem_step(st, "INSERT INTO ts_idem.t VALUES (1, 1), (2, 2), (3, 3)"));
  CU_ASSERT(idem_step(st, "INSERT INTO ts_idem.k VALUES (1, 2), (2, 4)"));
  CU_ASSERT(ts_equal("ts_idem", "ts_idem"));

  /* the database: gone from the target when the source drops it (was 1008) ... */
  CU_ASSERT_FATAL(lt_exec(dst, "DROP DATABASE ts_idem") == 0);
  CU_ASSERT(idem_step(st, "DROP DATABASE ts_idem"));
  /* ... and there already when the source creates it (was 1007) */
  CU_ASSERT_FATAL(lt_exec(dst, "CREATE DATABASE ts_idem") == 0);
  CU_ASSERT(idem_step(st, "CREATE DATABASE ts_idem"));
  CU_ASSERT(idem_step(st, "CREATE TABLE ts_idem.after (id INT PRIMARY KEY, b VARCHAR(10))"));
  CU_ASSERT(idem_step(st, "INSERT INTO ts_idem.after VALUES (1, 'one'), (2, 'two')"));
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM ts_idem.after"), 2);
  CU_ASSERT(ts_equal("ts_idem", "ts_idem"));
  CU_ASSERT_EQUAL(dmh_subtask_stage(st), DMH_STAGE_RUNNING);
  ts_stop(st);
  lt_teardown(&e);
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"CREATE/DROP replayed over what the target has or lacks", test_idempotent_ddl},
  };
  return dmh_cunit_run("sync_idem", suite_init, suite_clean, tests, sizeof tests / sizeof tests[0]);
}

/*
 * A row bigger than the load's old fixed line limit (issue 9, item 8), dump -> load against the
 * real servers (CTest fixture mariadb). Before the fix the load refused any line over 128 MiB (its
 * buffer stopped doubling past LOAD_LINE_MAX = 64 MiB) with DM_ERR_LOAD_FILE_FORMAT and the advice
 * that the dump cuts statements at statement-size, which it does not for one row; what the
 * target takes is its max_allowed_packet. Here one row of 66 MiB of NUL bytes (each escaped as
 * \0: a 132 MiB line): with the target at 64M it fails with DM_ERR_LOAD_PACKET_TOO_BIG naming
 * the file, the line and the target's real limit, not resumable; raised to 256M at runtime, a
 * new subtask loads it, equal to the source.
 */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cunit_run.h"
#include "dmhost/error.h"
#include "load_test_util.h"
#include "testdb.h"

#define LT_DB "lt_big"
#define LT_ROW (66L << 20) /* bytes of the big row: escaped, more than 128 MiB */

static MYSQL *src, *dst;

static void lt_clean(void) {
  static const char *const dbs[] = {LT_DB}, *const tasks[] = {"lt_big"};
  lt_drop_all(dst, dbs, 1, tasks, 1);
}

static int suite_init(void) {
  /* New connections see the raised limits (max_allowed_packet is read-only per session). */
  MYSQL *s = lt_source();
  int rc = s ? lt_exec(s, "SET GLOBAL max_allowed_packet = 128 * 1024 * 1024") : -1;
  testdb_close(s);
  src = lt_source();
  if (rc != 0 || !src || lt_suite_open(&dst, lt_clean) != 0)
    return 1;
  /* Not into the binlog: a 66 MiB event would be too big for other tests' binlog readers. */
  return lt_exec(src, "SET SESSION sql_log_bin = 0") == 0 && testdb_recreate_db(src, LT_DB) == 0 &&
                 lt_exec(src, "CREATE TABLE " LT_DB ".big (id INT PRIMARY KEY, b LONGBLOB)") == 0 &&
                 lt_exec(src,
                         "INSERT INTO " LT_DB ".big VALUES (1, 'small'), (2, REPEAT(CHAR(0), "
                         "%ld))",
                         LT_ROW) == 0 &&
                 lt_count(src, "SELECT LENGTH(b) FROM " LT_DB ".big WHERE id = 2") == LT_ROW
             ? 0
             : 1;
}

static int suite_clean(void) {
  if (src) {
    lt_exec(src, "DROP DATABASE IF EXISTS " LT_DB);
    lt_exec(src, "SET GLOBAL max_allowed_packet = 64 * 1024 * 1024");
  }
  if (dst)
    lt_exec(dst, "SET GLOBAL max_allowed_packet = 64 * 1024 * 1024");
  testdb_close(src);
  src = NULL;
  return lt_suite_close(&dst, lt_clean);
}

static void test_big_row(void) {
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  CU_ASSERT_FATAL(lt_exec(dst, "SET GLOBAL max_allowed_packet = 64 * 1024 * 1024") == 0);
  lt_task t = {.name = "lt_big",
               .mode = "full",
               .instance = "block-allow-list = \"only\";",
               .extra = "block-allow-list = { only = { do-dbs = [\"" LT_DB "\"]; }; };"};
  CU_ASSERT_FATAL(lt_config(&e, &t) == 0);
  dmh_subtask *st;
  double t0 = lt_now();
  CU_ASSERT_EQUAL(lt_run(&e, &st, 120000), DMH_STAGE_PAUSED);
  char msg[1200];
  bool resumable = true;
  CU_ASSERT_EQUAL(lt_first_error(st, msg, sizeof msg, NULL, 0, &resumable),
                  DM_ERR_LOAD_PACKET_TOO_BIG);
  CU_ASSERT_FALSE(resumable);
  CU_ASSERT(lt_has(msg, "the statement of line 2 (byte "));
  CU_ASSERT(lt_has(msg, "/" LT_DB ".big.000000.sql (into `" LT_DB "`.`big`) is "));
  CU_ASSERT(lt_has(msg, "its max_allowed_packet is 67108864 bytes; raise it to at least "));
  /* the small row's statement ran, the big one did not: the batch was rolled back */
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM " LT_DB ".big"), 0);
  dmh_subtask_destroy(st);

  CU_ASSERT_FATAL(lt_exec(dst, "SET GLOBAL max_allowed_packet = 256 * 1024 * 1024") == 0);
  dmh_stage s = lt_run(&e, &st, 120000);
  if (s != DMH_STAGE_FINISHED && lt_first_error(st, msg, sizeof msg, NULL, 0, NULL))
    fprintf(stderr, "error: %s\n", msg);
  CU_ASSERT_EQUAL(s, DMH_STAGE_FINISHED);
  char diff[1024];
  int rc = testdb_compare_schemas(src, dst, LT_DB, LT_DB, diff, sizeof diff);
  if (rc != 0)
    fprintf(stderr, "%s\n", diff);
  CU_ASSERT_EQUAL(rc, 0);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT LENGTH(b) FROM " LT_DB ".big WHERE id = 2"), LT_ROW);
  fprintf(stderr, "big row: dump + failed load + load in %.1f s\n", lt_now() - t0);
  dmh_subtask_destroy(st);
  lt_teardown(&e);
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"a row over the old line limit", test_big_row},
  };
  return dmh_cunit_run("load_big", suite_init, suite_clean, tests, sizeof tests / sizeof tests[0]);
}

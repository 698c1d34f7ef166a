/*
 * The global checkpoint row is written after the next batch is handed to the workers, so on a
 * durable target its round trip and commit flush overlap the workers' instead of leaving them
 * idle (bench/sync/README.md, "Durable target"). Shown with locks, no timing: the global row's
 * write is held by a lock on that row; the next batch must still commit.
 *
 * Before: the coordinator wrote the global row of batch n before it handed batch n+1 to the
 * workers, so with the row locked batch n+1 never reached the target.
 *
 * Both batches are 300 row changes, split over the workers: a batch of at most 256 is solo, and
 * its own transaction moves the global row (sync_run_batch.c, SYNC_SOLO_ROWS).
 */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <string.h>

#include "cunit_run.h"
#include "dmhost/sdk.h"
#include "load_test_util.h"
#include "sync_test_util.h"
#include "testdb.h"

#define DB "ts_overlap"
#define TASK "ts_overlap"

static MYSQL *src, *dst;

static int suite_init(void) {
  return ts_suite_open(&src, &dst);
}

static int suite_clean(void) {
  ts_suite_close(&src, &dst);
  return 0;
}

/* Waits until `sql` (one number) gives `want` on m; false after timeout_ms. */
static bool wait_int(MYSQL *m, long long want, int timeout_ms, const char *sql) {
  for (double end = lt_now() + timeout_ms / 1000.0; lt_now() < end; lt_sleep_ms(20)) {
    long long v = -1;
    if (testdb_query_int(m, &v, "%s", sql) == 0 && v == want)
      return true;
  }
  return false;
}

static void test_global_row_after_dispatch(void) {
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  lt_exec(src, "DROP DATABASE IF EXISTS " DB);
  lt_exec(dst, "DROP DATABASE IF EXISTS " DB);
  CU_ASSERT_FATAL(ts_config(&e, TASK, DB, NULL,
                            "worker-count = 2; batch-ms = 20; status-interval = 100;") == 0);
  dmh_subtask *st = ts_start(&e);
  CU_ASSERT_FATAL(st != NULL);
  CU_ASSERT_FATAL(lt_exec(src, "CREATE DATABASE " DB "; CREATE TABLE " DB
                               ".t (id INT PRIMARY KEY, v INT); INSERT INTO " DB
                               ".t SELECT seq, 0 FROM " DB ".seq_1_to_600") == 0);
  CU_ASSERT_FATAL(ts_catch_up(TASK, 30000)); /* quiet: no batch in flight, the global row moved */

  MYSQL *row_lock = lt_target(), *global_lock = lt_target();
  CU_ASSERT_FATAL(row_lock != NULL && global_lock != NULL);
  /* batch B (ids 1-300) waits for row_lock in the worker of id 1 ... */
  CU_ASSERT_FATAL(lt_exec(row_lock, "BEGIN; SELECT * FROM " DB ".t WHERE id = 1 FOR UPDATE") == 0);
  CU_ASSERT_FATAL(lt_exec(src, "UPDATE " DB ".t SET v = 10 WHERE id <= 300") == 0);
  /* the worker's statement blocked on it for half a second (information_schema.innodb_trx did not
   * list such a waiting upsert on one 10.11 server: the processlist does) */
  CU_ASSERT_FATAL(
      wait_int(dst, 1, 30000,
               "SELECT COUNT(*) > 0 FROM information_schema.processlist WHERE info LIKE "
               "'% `" DB "`.`t`%' AND id <> CONNECTION_ID() AND time_ms > 500"));
  /* ... the global row is locked (by its unique key: a scan would lock the worker rows too),
   * then batch C (ids 301-600) is read while B still applies */
  long long locked = -1;
  CU_ASSERT_FATAL(lt_exec(global_lock, "BEGIN") == 0);
  CU_ASSERT_FATAL(testdb_query_int(global_lock, &locked,
                                   "SELECT COUNT(*) FROM dm_meta." TASK
                                   "_syncer_checkpoint WHERE id = 'lsrc' AND cp_schema = '' "
                                   "AND cp_table = '' FOR UPDATE") == 0);
  CU_ASSERT_FATAL(locked == 1);
  char file[256] = "";
  unsigned long before_c = 0;
  ts_master(file, &before_c, NULL);
  CU_ASSERT_FATAL(lt_exec(src, "UPDATE " DB ".t SET v = 20 WHERE id > 300") == 0);
  lt_sleep_ms(200); /* not needed for the outcome: gives C's batch time to close behind B */
  /* B commits; its global row waits for global_lock, C must commit all the same */
  CU_ASSERT_FATAL(lt_exec(row_lock, "ROLLBACK") == 0);
  CU_ASSERT(wait_int(dst, 300, 30000, "SELECT COUNT(*) FROM " DB ".t WHERE v = 20"));
  /* the global row (a consistent read, not blocked) still stands before B's end */
  long long gpos = -1;
  char gfile[256] = "";
  CU_ASSERT(testdb_query_value(dst, gfile, sizeof gfile,
                               "SELECT binlog_name FROM dm_meta." TASK
                               "_syncer_checkpoint WHERE is_global = 1") == 0);
  CU_ASSERT(testdb_query_int(dst, &gpos,
                             "SELECT binlog_pos FROM dm_meta." TASK
                             "_syncer_checkpoint WHERE is_global = 1") == 0);
  int c = strcmp(gfile, file);
  CU_ASSERT(gfile[0] != '\0' && (c < 0 || (c == 0 && (unsigned long long)gpos < before_c)));
  CU_ASSERT_FATAL(lt_exec(global_lock, "ROLLBACK") == 0);
  mysql_close(row_lock);
  mysql_close(global_lock);

  CU_ASSERT(ts_catch_up(TASK, 30000));
  CU_ASSERT(ts_equal(DB, DB));
  CU_ASSERT(ts_clean_run(st));
  ts_stop(st);
  lt_teardown(&e);
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"the global row is written while the next batch applies", test_global_row_after_dispatch},
  };
  return dmh_cunit_run("sync_overlap", suite_init, suite_clean, tests,
                       sizeof tests / sizeof tests[0]);
}

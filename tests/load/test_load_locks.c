/*
 * A load worker whose batch is rolled back by a lock wait timeout or a deadlock runs it again
 * from its last commit instead of pausing the task (two workers inserting into one table, or into
 * a merged table, may deadlock on a unique key; InnoDB's own advice is to run the transaction
 * again). Before, the load paused with DM_ERR_DB_QUERY at the first one ("Deadlock found when
 * trying to get lock" made test_load's deferred-keys case fail now and then).
 *
 * Here another session holds the row lock of a key the dump inserts until after the load's first
 * lock wait timed out (innodb_lock_wait_timeout lowered to 1 s on the target for this test: it
 * changes a global, so the test runs alone). The load must wait, time out, try again and finish
 * with every row once.
 */
#include <CUnit/Basic.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cunit_run.h"
#include "load_test_util.h"
#include "testdb.h"

#define LT_DB "lt_lockw"

static MYSQL *dst;

static void lt_clean(void) {
  static const char *const dbs[] = {LT_DB}, *const tasks[] = {LT_DB};
  lt_drop_all(dst, dbs, 1, tasks, 1);
}

static int suite_init(void) {
  return lt_suite_open(&dst, lt_clean) == 0 &&
                 lt_exec(dst, "SET GLOBAL innodb_lock_wait_timeout = 1") == 0
             ? 0
             : 1;
}

static int suite_clean(void) {
  if (dst)
    lt_exec(dst, "SET GLOBAL innodb_lock_wait_timeout = 50");
  return lt_suite_close(&dst, lt_clean);
}

typedef struct locker {
  MYSQL *c;
  int hold_ms;
} locker;

/* Holds the lock taken by the caller's INSERT for hold_ms, then rolls it back. */
static void *locker_main(void *arg) {
  locker *l = arg;
  lt_sleep_ms(l->hold_ms);
  lt_exec(l->c, "ROLLBACK");
  return NULL;
}

static void test_load_lock_wait_retried(void) {
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  static const char schema[] = "CREATE TABLE `t` (\n  `id` int(11) NOT NULL,\n  `v` varchar(10) "
                               "DEFAULT NULL,\n  PRIMARY KEY (`id`)\n);\n";
  lt_write_metadata(&e, "mysql-bin.000001", 4, "");
  lt_write(&e, LT_DB "-schema-create.sql", "CREATE DATABASE IF NOT EXISTS `" LT_DB "`;\n");
  lt_write(&e, LT_DB ".t-schema.sql", schema);
  lt_write(&e, LT_DB ".t.000000.sql",
           "INSERT INTO `t` (`id`,`v`) VALUES (1,'a'),(2,'b'),(3,'c');\n"
           "INSERT INTO `t` (`id`,`v`) VALUES (4,'d');\n");
  /* The table exists with the dump's definition; another session holds id 2's lock. */
  CU_ASSERT_EQUAL_FATAL(lt_exec(dst, "CREATE DATABASE " LT_DB), 0);
  CU_ASSERT_EQUAL_FATAL(lt_exec(dst, "CREATE TABLE " LT_DB ".t (id INT NOT NULL, v VARCHAR(10) "
                                     "DEFAULT NULL, PRIMARY KEY (id))"),
                        0);
  locker l = {.c = testdb_connect(TESTDB_TARGET), .hold_ms = 2500};
  CU_ASSERT_PTR_NOT_NULL_FATAL(l.c);
  CU_ASSERT_EQUAL_FATAL(lt_exec(l.c, "BEGIN"), 0);
  CU_ASSERT_EQUAL_FATAL(lt_exec(l.c, "INSERT INTO " LT_DB ".t VALUES (2, 'lock')"), 0);
  pthread_t tid;
  CU_ASSERT_EQUAL_FATAL(pthread_create(&tid, NULL, locker_main, &l), 0);

  lt_task t = {.name = LT_DB, .load = "pool-size = 1;"};
  CU_ASSERT_FATAL(lt_config(&e, &t) == 0);
  dmh_subtask *st = NULL;
  char *log = NULL;
  double t0 = lt_now();
  dmh_stage s = lt_run_logged(&e, &st, 30000, &log);
  double took = lt_now() - t0;
  pthread_join(tid, NULL);
  testdb_close(l.c);
  char msg[600];
  if (s != DMH_STAGE_FINISHED && st && lt_first_error(st, msg, sizeof msg, NULL, 0, NULL))
    fprintf(stderr, "error: %s\n", msg);
  CU_ASSERT_EQUAL(s, DMH_STAGE_FINISHED);
  /* the precondition: the load did wait for the lock and was rolled back at least once */
  CU_ASSERT(took >= 2.0);
  CU_ASSERT(log && lt_has(log, "Lock wait timeout exceeded"));
  CU_ASSERT(log && lt_has(log, "running it again from byte 0"));
  /* every row once, the dump's values (the locker's 'lock' was rolled back) */
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM " LT_DB ".t"), 4);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM " LT_DB ".t WHERE id = 2 AND v = 'b'"), 1);
  free(log);
  if (st)
    dmh_subtask_destroy(st);
  lt_teardown(&e);
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"a lock wait timeout runs the batch again", test_load_lock_wait_retried},
  };
  return dmh_cunit_run("load lock retries", suite_init, suite_clean, tests,
                       sizeof tests / sizeof *tests);
}

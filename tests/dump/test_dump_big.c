/*
 * The dump unit on a big table (1.2 M rows, ~90 MB of SQL): memory stays bounded whatever the
 * table size, the speed is measured, and pause/resume, stop and kill mid-dump end in a clean
 * complete dump. Plus the snapshot test: while the dump runs, transactions move value between
 * rows of two tables (sums constant); the dump, loaded back, must keep the sums, i.e. every
 * thread saw one snapshot.
 */
#include <CUnit/Basic.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cunit_run.h"
#include "dump_test_util.h"

#define BIG_ROWS 1200000
static MYSQL *src;

static int big_setup(void) {
  if (dt_exec(src, "DROP DATABASE IF EXISTS dmh_dump_big") != 0 ||
      dt_exec(src, "CREATE DATABASE dmh_dump_big") != 0 || dt_exec(src, "USE dmh_dump_big") != 0 ||
      dt_exec(src, "CREATE TABLE dmh_dump_big.big (id BIGINT PRIMARY KEY, a INT, s VARCHAR(100), "
                   "d DATETIME, pad CHAR(30))") != 0)
    return -1;
  double t0 = dt_now();
  int rc = dt_exec(src,
                   "INSERT INTO dmh_dump_big.big SELECT seq, seq %% 1000, CONCAT('some text ', "
                   "seq, ' and more'), '2024-01-02 03:04:05' + INTERVAL seq SECOND, 'pad' FROM "
                   "seq_1_to_%d",
                   BIG_ROWS);
  printf("\n  created %d rows in %.1f s\n", BIG_ROWS, dt_now() - t0);
  if (rc != 0)
    return -1;
  /* The four tests' precondition: the whole table is there (each counts its rows against
   * BIG_ROWS, and the mid-dump ones need it big enough to stop in). A failed setup fails the run:
   * the suite counts as failed in main. */
  long long have = dt_query_ll(src, "SELECT COUNT(*) FROM dmh_dump_big.big");
  if (have != BIG_ROWS) {
    fprintf(stderr, "setup: dmh_dump_big.big holds %lld rows, not %d\n", have, BIG_ROWS);
    return -1;
  }
  return 0;
}

static int big_teardown(void) {
  dt_exec(src, "DROP DATABASE IF EXISTS dmh_dump_big");
  return 0;
}

static int big_env(dt_env *e, const char *name, const char *dump) {
  return dt_setup(e, name, "root", "", dt_source_port(), "block-allow-list = \"bal\";",
                  "block-allow-list = { bal = { do-dbs = [\"dmh_dump_big\"]; }; };", dump);
}

/* The dump folder holds a complete dump of the big table and nothing half-written. */
static void big_check_complete(dt_env *e) {
  long long rows;
  long bad;
  int files = dt_data_files(e->dump_dir, "dmh_dump_big.big", &rows, &bad);
  CU_ASSERT(files >= 1);
  CU_ASSERT_EQUAL(rows, BIG_ROWS);
  CU_ASSERT_EQUAL(bad, 0);
  CU_ASSERT_EQUAL(dt_count_suffix(e->dump_dir, ".tmp"), 0);
  CU_ASSERT(dt_exists(e->dump_dir, "metadata"));
  CU_ASSERT(dt_exists(e->dump_dir, "dmh_dump_big.big-schema.sql"));
}

static void test_memory_and_speed(void) {
  dt_env e;
  CU_ASSERT_FATAL(big_env(&e, "dump-mem", "threads = 4;") == 0);
  long hwm0 = dt_vm_hwm_kb();
  dmh_subtask *st;
  double t0 = dt_now();
  dmh_stage stage = dt_run(&e, &st, 300000);
  double secs = dt_now() - t0;
  long hwm1 = dt_vm_hwm_kb();
  CU_ASSERT_EQUAL_FATAL(stage, DMH_STAGE_FINISHED);
  long bytes = dt_status_int(st, "finishedBytes");
  printf("\n  dump of %d rows, %.1f MB: %.2f s, %.0f rows/s, %.1f MB/s; VmHWM %ld -> %ld kB\n",
         BIG_ROWS, bytes / 1e6, secs, BIG_ROWS / secs, bytes / 1e6 / secs, hwm0, hwm1);
  CU_ASSERT(bytes > 60 * 1000 * 1000);
  /* A dump that held a table, or even one chunk of it (100000 rows, ~17 MB), in memory would grow
   * by far more than this; 4 workers need ~4 x (1 MiB statement + net buffer). */
  CU_ASSERT(hwm1 - hwm0 < 64 * 1024);
  CU_ASSERT_EQUAL(dt_status_int(st, "finishedRows"), BIG_ROWS);
  CU_ASSERT_EQUAL(dt_status_int(st, "completedTables"), 1);
  /* chunk-filesize 64 MiB by default: more than one file per chunk never, but several chunks */
  big_check_complete(&e);
  dmh_subtask_destroy(st);
  dt_teardown(&e);
}

static void test_pause_resume(void) {
  dt_env e;
  CU_ASSERT_FATAL(big_env(&e, "dump-pause", "threads = 1; chunk-rows = 100000;") == 0);
  dmh_subtask *st = dt_subtask(&e);
  CU_ASSERT_PTR_NOT_NULL_FATAL(st);
  dm_error err;
  CU_ASSERT_FATAL(dmh_subtask_start(st, &err) == 0);
  CU_ASSERT_FATAL(dt_wait_rows(st, 100000, 60000));
  double t0 = dt_now();
  CU_ASSERT_EQUAL_FATAL(dmh_subtask_pause(st, &err), 0);
  double pause_s = dt_now() - t0;
  printf("\n  paused after %ld rows in %.3f s\n", dt_status_int(st, "finishedRows"), pause_s);
  CU_ASSERT(pause_s < 2.0);
  CU_ASSERT_EQUAL(dmh_subtask_stage(st), DMH_STAGE_PAUSED);
  CU_ASSERT_FALSE(dt_exists(e.dump_dir, "metadata"));
  CU_ASSERT(dt_status_int(st, "finishedRows") < BIG_ROWS);
  CU_ASSERT_EQUAL_FATAL(dmh_subtask_resume(st, &err), 0);
  CU_ASSERT_EQUAL(dmh_subtask_wait_settled(st, 300000), DMH_STAGE_FINISHED);
  CU_ASSERT_EQUAL(dt_status_int(st, "finishedRows"), BIG_ROWS);
  big_check_complete(&e);
  dmh_subtask_destroy(st);
  dt_teardown(&e);
}

/* Stop (or kill) mid-dump, then a new subtask on the same folder: it removes the old files and
 * dumps again from a new snapshot. */
static void stop_then_redump(bool kill) {
  dt_env e;
  CU_ASSERT_FATAL(big_env(&e, kill ? "dump-kill" : "dump-stop",
                          "threads = 3; chunk-rows = 50000; chunk-filesize = 1048576;") == 0);
  dmh_subtask *st = dt_subtask(&e);
  CU_ASSERT_PTR_NOT_NULL_FATAL(st);
  dm_error err;
  CU_ASSERT_FATAL(dmh_subtask_start(st, &err) == 0);
  CU_ASSERT_FATAL(dt_wait_rows(st, 200000, 60000));
  double t0 = dt_now();
  CU_ASSERT_EQUAL(kill ? dmh_subtask_kill(st, &err) : dmh_subtask_stop(st, &err), 0);
  CU_ASSERT(dt_now() - t0 < 3.0);
  CU_ASSERT_EQUAL(dmh_subtask_stage(st), DMH_STAGE_STOPPED);
  CU_ASSERT_FALSE(dt_exists(e.dump_dir, "metadata"));
  long long rows;
  long bad;
  int files = dt_data_files(e.dump_dir, "dmh_dump_big.big", &rows, &bad);
  CU_ASSERT(files > 0); /* something was dumped, and is removed below */
  CU_ASSERT(rows < BIG_ROWS);
  dmh_subtask_destroy(st);
  /* The source is not left sending the abandoned chunks (see test_dump's write error test). */
  long long busy = -1;
  for (int i = 0; i < 100 && busy != 0; i++, dt_sleep_ms(20))
    busy = dt_query_ll(src, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE "
                            "'SELECT %%dmh_dump_big%%' AND ID <> CONNECTION_ID()");
  CU_ASSERT_EQUAL(busy, 0);

  CU_ASSERT_EQUAL(dt_run(&e, &st, 300000), DMH_STAGE_FINISHED);
  big_check_complete(&e);
  /* 1 MiB files: many, numbered without gaps from 000000 */
  files = dt_data_files(e.dump_dir, "dmh_dump_big.big", &rows, &bad);
  char last[64];
  snprintf(last, sizeof last, "dmh_dump_big.big.%06d.sql", files - 1);
  CU_ASSERT(files > 50);
  CU_ASSERT(dt_exists(e.dump_dir, last));
  dmh_subtask_destroy(st);
  dt_teardown(&e);
}

static void test_stop_then_redump(void) {
  stop_then_redump(false);
}
static void test_kill_then_redump(void) {
  stop_then_redump(true);
}

/* ---- snapshot consistency ---- */

#define SNAP_ROWS 200000
static atomic_bool snap_stop;
static atomic_long snap_commits;

/* Moves 1 from a random row to another of the same table, and 1 from acc_a to acc_b, in one
 * transaction: SUM(acc_a.v) + SUM(acc_b.v) and SUM(acc_a.v) - (moves to acc_b) never change. */
static void *snap_writer(void *arg) {
  (void)arg;
  MYSQL *m = dt_connect(dt_source_port());
  if (!m)
    return NULL;
  unsigned seed = 42;
  while (!atomic_load(&snap_stop)) {
    int r1 = (int)(rand_r(&seed) % SNAP_ROWS) + 1, r2 = (int)(rand_r(&seed) % SNAP_ROWS) + 1;
    int r3 = (int)(rand_r(&seed) % SNAP_ROWS) + 1;
    if (dt_exec(m, "BEGIN") != 0 ||
        dt_exec(m, "UPDATE dmh_dump_snap.acc_a SET v = v - 2 WHERE id = %d", r1) != 0 ||
        dt_exec(m, "UPDATE dmh_dump_snap.acc_a SET v = v + 1 WHERE id = %d", r2) != 0 ||
        dt_exec(m, "UPDATE dmh_dump_snap.acc_b SET v = v + 1 WHERE id = %d", r3) != 0 ||
        dt_exec(m, "COMMIT") != 0)
      break;
    atomic_fetch_add(&snap_commits, 1);
  }
  mysql_close(m);
  return NULL;
}

static void test_snapshot_consistency(void) {
  CU_ASSERT_FATAL(dt_exec(src, "DROP DATABASE IF EXISTS dmh_dump_snap") == 0);
  CU_ASSERT_FATAL(dt_exec(src, "CREATE DATABASE dmh_dump_snap") == 0);
  CU_ASSERT_FATAL(dt_exec(src, "USE dmh_dump_snap") == 0);
  for (int i = 0; i < 2; i++) {
    const char *t = i ? "acc_b" : "acc_a";
    CU_ASSERT_FATAL(dt_exec(src,
                            "CREATE TABLE dmh_dump_snap.%s (id INT PRIMARY KEY, v INT, "
                            "note VARCHAR(64))",
                            t) == 0);
    CU_ASSERT_FATAL(dt_exec(src,
                            "INSERT INTO dmh_dump_snap.%s SELECT seq, 100, REPEAT('n', 60) "
                            "FROM seq_1_to_%d",
                            t, SNAP_ROWS) == 0);
  }
  atomic_store(&snap_stop, false);
  atomic_store(&snap_commits, 0);
  pthread_t w;
  CU_ASSERT_FATAL(pthread_create(&w, NULL, snap_writer, NULL) == 0);
  dt_sleep_ms(300);
  dt_env e;
  /* Small chunks and rows: the dump takes a while and each table is spread over all threads. */
  CU_ASSERT_FATAL(dt_setup(&e, "dump-snap", "root", "", dt_source_port(),
                           "block-allow-list = \"bal\";",
                           "block-allow-list = { bal = { do-dbs = [\"dmh_dump_snap\"]; }; };",
                           "threads = 4; chunk-rows = 10000; rows = 50;") == 0);
  dmh_subtask *st;
  long before = atomic_load(&snap_commits);
  dmh_stage stage = dt_run(&e, &st, 120000);
  long during = atomic_load(&snap_commits) - before;
  atomic_store(&snap_stop, true);
  pthread_join(w, NULL);
  CU_ASSERT_EQUAL_FATAL(stage, DMH_STAGE_FINISHED);
  printf("\n  %ld transactions committed while the dump ran\n", during);
  CU_ASSERT(during > 10);
  long long rows;
  long bad;
  CU_ASSERT(dt_data_files(e.dump_dir, "dmh_dump_snap.acc_a", &rows, &bad) >= 4);
  CU_ASSERT_EQUAL(rows, SNAP_ROWS);
  CU_ASSERT_FATAL(dt_load_with_client(e.dump_dir, "dmh_dump_snap", "dmh_dump_snap_chk") == 0);
  MYSQL *tgt = dt_connect(dt_target_port());
  CU_ASSERT_PTR_NOT_NULL_FATAL(tgt);
  long long a = dt_query_ll(tgt, "SELECT SUM(v) FROM dmh_dump_snap_chk.acc_a");
  long long b = dt_query_ll(tgt, "SELECT SUM(v) FROM dmh_dump_snap_chk.acc_b");
  long long moved = b - 100LL * SNAP_ROWS;
  printf("  dumped: acc_a %lld, acc_b %lld (%lld transactions in the snapshot)\n", a, b, moved);
  CU_ASSERT_EQUAL(a + b, 200LL * SNAP_ROWS);
  CU_ASSERT_EQUAL(a, 100LL * SNAP_ROWS - moved);
  CU_ASSERT(moved > 0); /* the snapshot is not from before the writer started */
  dt_exec(tgt, "DROP DATABASE IF EXISTS dmh_dump_snap_chk");
  mysql_close(tgt);
  dmh_subtask_destroy(st);
  dt_teardown(&e);
  dt_exec(src, "DROP DATABASE IF EXISTS dmh_dump_snap");
}

int main(void) {
  src = dt_connect(dt_source_port());
  if (!src)
    return 1;
  static const dmh_cunit_test big[] = {
      {"memory bounded, speed", test_memory_and_speed},
      {"pause mid-dump, resume", test_pause_resume},
      {"stop mid-dump, redump", test_stop_then_redump},
      {"kill mid-dump, redump", test_kill_then_redump},
  };
  static const dmh_cunit_test snap[] = {
      {"one snapshot across threads", test_snapshot_consistency},
  };
  static const dmh_cunit_suite suites[] = {
      {"dump big table", big_setup, big_teardown, big, sizeof big / sizeof big[0]},
      {"dump snapshot", NULL, NULL, snap, sizeof snap / sizeof snap[0]},
  };
  int failed = dmh_cunit_run_suites(suites, sizeof suites / sizeof suites[0], NULL);
  mysql_close(src);
  return failed;
}

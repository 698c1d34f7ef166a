/*
 * Issue 10 item 1 on the real pair: mode incremental with the relay on, started together with a
 * fresh relay. Before, the sync opened the relay's first file a few milliseconds after the relay
 * created it and before it wrote the header, and the task paused at once with DM_ERR 30003
 * (DM_ERR_BINLOG_INCOMPLETE, "...: incomplete event at offset 4: the file has no format
 * description", not resumable); with the relay slower still, DM_ERR_BINLOG_PURGED ("the relay
 * started after it"). Now a relay file not written yet is waited for.
 *
 * The race made certain: the relay folder holds the file the task starts in with only its 4-byte
 * magic (the state the sync used to meet) before the task starts; the relay starts later and
 * writes it. Then the race itself: relay and task started together, several times.
 */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cunit_run.h"
#include "dmhost/binlog.h"
#include "load_test_util.h"
#include "sync_test_util.h"
#include "testdb.h"

#define RS_DB "ts_rstart"
#define RS_ROUNDS 10

static MYSQL *src, *dst;

static int suite_init(void) {
  return ts_suite_open(&src, &dst);
}

static int suite_clean(void) {
  lt_exec(src, "DROP DATABASE IF EXISTS " RS_DB);
  lt_exec(dst, "DROP DATABASE IF EXISTS " RS_DB);
  ts_suite_close(&src, &dst);
  return 0;
}

/* The task of mode incremental from the source's current position, relay on (in e->dir/relay),
 * the relay's first start at the start of the task's file (the source's current one may be a
 * later one by the time the relay starts: tests running alongside rotate the binlog). The file
 * goes to `file`. */
static int rs_config(lt_env *e, char *file) {
  for (int tries = 0; tries < 5; tries++) {
    char more[400], source_extra[1024], after[256] = "";
    unsigned long pos = 0;
    ts_master(file, &pos, NULL);
    snprintf(more, sizeof more, "binlog-name = \"%s\";", file);
    lt_relay_settings(e, more, source_extra, sizeof source_extra);
    if (ts_config_source(e, RS_DB, RS_DB, NULL, NULL, source_extra) != 0)
      return -1;
    ts_master(after, &pos, NULL);
    if (strcmp(after, file) == 0)
      return 0; /* the task's meta, taken in between, is in `file` too */
  }
  return -1;
}

static void rs_fresh_db(void) {
  testdb_recreate_db(src, RS_DB);
  testdb_recreate_db(dst, RS_DB);
  lt_exec(src, "CREATE TABLE " RS_DB ".t (id INT PRIMARY KEY, a INT)");
  lt_exec(dst, "CREATE TABLE " RS_DB ".t (id INT PRIMARY KEY, a INT)");
}

/* The relay has created the file the task starts in and written its magic only. */
static void test_header_not_written_yet(void) {
  rs_fresh_db();
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  char file[256] = "";
  CU_ASSERT_FATAL(rs_config(&e, file) == 0);
  /* the relay's sub-folder for this source (MariaDB: <domain>-<server id>), its index, and the
   * source's current file with 4 bytes: what a relay leaves between create and first write */
  char uuid[128], sub[600], path[900];
  CU_ASSERT_FATAL(testdb_query_value(src, uuid, sizeof uuid,
                                     "SELECT CONCAT(@@gtid_domain_id, '-', @@server_id)") == 0);
  CU_ASSERT_FATAL(ts_relay_folder(e.dir, uuid, sub, sizeof sub) == 0);
  snprintf(path, sizeof path, "%s/%s", sub, file);
  FILE *f = fopen(path, "w");
  CU_ASSERT_FATAL(f && fwrite(DM_BINLOG_MAGIC, 1, DM_BINLOG_MAGIC_LEN, f) == DM_BINLOG_MAGIC_LEN &&
                  fclose(f) == 0);

  dmh_subtask *relay = lt_relay(&e);
  CU_ASSERT_FATAL(relay != NULL);
  dmh_subtask *st = lt_subtask_relay(&e, relay);
  CU_ASSERT_FATAL(st != NULL);
  dm_error err;
  CU_ASSERT_FATAL(dmh_subtask_start(st, &err) == 0);
  double end = lt_now() + 20;
  while (dmh_subtask_stage(st) != DMH_STAGE_RUNNING && lt_now() < end)
    lt_sleep_ms(10);
  lt_sleep_ms(500); /* the old sync paused within milliseconds here */
  CU_ASSERT(ts_clean_run(st));
  /* precondition: the file was still header-less all that time (nobody wrote it) */
  struct stat sb;
  CU_ASSERT(stat(path, &sb) == 0 && sb.st_size == DM_BINLOG_MAGIC_LEN);
  /* waiting is a safe point: pause and resume reach it */
  CU_ASSERT_EQUAL(dmh_subtask_pause(st, &err), 0);
  CU_ASSERT_EQUAL(dmh_subtask_wait_settled(st, 5000), DMH_STAGE_PAUSED);
  CU_ASSERT_EQUAL(dmh_subtask_resume(st, &err), 0);

  /* the relay starts and writes the file; rows written from now on arrive */
  CU_ASSERT_FATAL(dmh_subtask_start(relay, &err) == 0);
  CU_ASSERT(lt_exec(src, "INSERT INTO " RS_DB ".t VALUES (1, 10), (2, 20), (3, 30)") == 0);
  CU_ASSERT(lt_exec(src, "UPDATE " RS_DB ".t SET a = a + 1 WHERE id = 2") == 0);
  CU_ASSERT(ts_catch_up(RS_DB, 30000));
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM " RS_DB ".t"), 3);
  CU_ASSERT(ts_equal(RS_DB, RS_DB));
  CU_ASSERT(ts_clean_run(st));
  CU_ASSERT(stat(path, &sb) == 0 && sb.st_size > DM_BINLOG_MAGIC_LEN);
  ts_stop(st);
  ts_stop(relay);
  lt_teardown(&e);
}

/* The race itself: a fresh relay and the task started together, RS_ROUNDS times. */
static void test_started_together(void) {
  rs_fresh_db();
  int clean = 0;
  for (int round = 0; round < RS_ROUNDS; round++) {
    lt_env e;
    CU_ASSERT_FATAL(lt_init(&e) == 0);
    char file[256];
    CU_ASSERT_FATAL(rs_config(&e, file) == 0);
    dmh_subtask *relay = lt_relay(&e);
    CU_ASSERT_FATAL(relay != NULL);
    dmh_subtask *st = lt_subtask_relay(&e, relay);
    CU_ASSERT_FATAL(st != NULL);
    dm_error err;
    CU_ASSERT_FATAL(dmh_subtask_start(relay, &err) == 0);
    CU_ASSERT_FATAL(dmh_subtask_start(st, &err) == 0);
    CU_ASSERT(lt_exec(src, "INSERT INTO " RS_DB ".t VALUES (%d, %d)", 100 + round, round) == 0);
    bool caught = ts_catch_up(RS_DB, 20000);
    bool ok = ts_clean_run(st);
    CU_ASSERT(caught);
    CU_ASSERT(ok);
    clean += caught && ok;
    ts_stop(st);
    ts_stop(relay);
    lt_teardown(&e);
  }
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM " RS_DB ".t"), RS_ROUNDS);
  CU_ASSERT(ts_equal(RS_DB, RS_DB));
  fprintf(stderr, "%d of %d starts together with a fresh relay ran clean\n", clean, RS_ROUNDS);
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"a relay file without its header at the task's start", test_header_not_written_yet},
      {"task and a fresh relay started together", test_started_together},
  };
  return dmh_cunit_run("sync_relay_start", suite_init, suite_clean, tests,
                       sizeof tests / sizeof tests[0]);
}

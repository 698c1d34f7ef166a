/*
 * Mode all with the relay on: the relay file holding the dump's position survives a purge while
 * the load has not finished, and the sync then starts there.
 *
 * Regression: nothing registered the dump's position while dump and load ran (only the sync
 * registers its checkpoint's file, from its first batch on). An hourly purge on a small disk (here
 * by age, every file made two hours old) removed the relay file the sync was to start from, and
 * the task stopped for good with the binlog purged. Before the fix this test saw the file removed.
 * The load is held up by a table the target has with another definition (it pauses with
 * DM_ERR_LOAD_TABLE_MISMATCH after the dump took its position); meanwhile the source writes and
 * rotates its binlog several times and the relay follows it.
 */
#include <CUnit/Basic.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cunit_run.h"
#include "dmhost/relay_folder.h"
#include "dmhost/relay_purge.h"
#include "dmhost/relay_reader.h"
#include "dmhost/sdk.h"
#include "load_test_util.h"
#include "testdb.h"

#define DB "h_relay_hold"

static MYSQL *src, *dst;

static int suite_init(void) {
  src = lt_source();
  dst = lt_target();
  return src && dst ? 0 : 1;
}

static int suite_clean(void) {
  if (src && dst) {
    lt_exec(src, "DROP DATABASE IF EXISTS " DB);
    lt_exec(dst, "DROP DATABASE IF EXISTS " DB);
  }
  testdb_close(src);
  testdb_close(dst);
  return 0;
}

static void rh_master_file(char *file, size_t len) {
  file[0] = '\0';
  testdb_query_value(src, file, len, "SHOW MASTER STATUS");
}

/* Waits until the relay writes the source's current file. */
static bool rh_relay_at_master(const char *relay_dir, int timeout_ms) {
  char want[256], sub[256], file[256];
  rh_master_file(want, sizeof want);
  double end = lt_now() + timeout_ms / 1000.0;
  while (lt_now() < end) {
    if (dm_relay_current(relay_dir, sub, sizeof sub, file, sizeof file) == 0 &&
        strcmp(file, want) == 0)
      return true;
    lt_sleep_ms(20);
  }
  fprintf(stderr, "the relay did not reach %s\n", want);
  return false;
}

/* Writes a little and rotates the source's binlog n times; the relay follows. */
static void rh_rotate(const char *relay_dir, int n, int from) {
  for (int i = 0; i < n; i++) {
    CU_ASSERT(lt_exec(src, "INSERT INTO " DB ".t SELECT seq, seq * 3 FROM " DB ".seq_%d_to_%d",
                      from + 100 * i, from + 100 * i + 99) == 0);
    CU_ASSERT(lt_exec(src, "UPDATE " DB ".t SET v = v + 1 WHERE id %% 7 = %d", i) == 0);
    CU_ASSERT(lt_exec(src, "FLUSH BINARY LOGS") == 0);
  }
  CU_ASSERT(rh_relay_at_master(relay_dir, 20000));
}

static bool rh_file_exists(const char *relay_dir, const char *file) {
  char sub[256], path[PATH_MAX];
  struct stat sb;
  if (dm_relay_locate(relay_dir, file, sub, sizeof sub) < 0)
    return false;
  snprintf(path, sizeof path, "%s/%s/%s", relay_dir, sub, file);
  return stat(path, &sb) == 0;
}

/* Every relay file two hours old, for a purge by age (purge-expires = 1 hour). */
static int rh_age_files(const char *relay_dir) {
  char sub[256], file[256];
  if (dm_relay_current(relay_dir, sub, sizeof sub, file, sizeof file) < 0)
    return 0;
  char cmd[PATH_MAX + 128];
  snprintf(cmd, sizeof cmd, "find '%s/%s' -name '*.[0-9]*' -exec touch -d '-2 hours' {} +",
           relay_dir, sub);
  return system(cmd) == 0 ? 1 : -1;
}

static bool rh_target_equal(int timeout_ms) {
  double end = lt_now() + timeout_ms / 1000.0;
  char diff[1024] = "";
  while (lt_now() < end) {
    if (testdb_compare_schemas(src, dst, DB, DB, diff, sizeof diff) == 0)
      return true;
    lt_sleep_ms(100);
  }
  fprintf(stderr, "target differs: %s\n", diff);
  return false;
}

static void test_relay_hold(void) {
  lt_exec(dst, "DROP TABLE IF EXISTS dm_meta.`" DB "_syncer_checkpoint`");
  lt_drop_checkpoint(dst, DB);
  CU_ASSERT_FATAL(testdb_recreate_db(src, DB) == 0);
  CU_ASSERT_FATAL(lt_exec(src,
                          "CREATE TABLE " DB ".t (id INT PRIMARY KEY, v INT);"
                          "INSERT INTO " DB ".t SELECT seq, seq FROM " DB ".seq_1_to_2000") == 0);
  /* the load stops at this table: same name, another definition */
  CU_ASSERT_FATAL(testdb_recreate_db(dst, DB) == 0);
  CU_ASSERT_FATAL(lt_exec(dst, "CREATE TABLE " DB ".t (id INT PRIMARY KEY, other CHAR(3))") == 0);

  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  char relay_dir[400], source_extra[1024], extra[256];
  snprintf(relay_dir, sizeof relay_dir, "%s/relay", e.dir);
  snprintf(source_extra, sizeof source_extra,
           "enable-relay = true;\nrelay-dir = \"%s\";\nunit-paths = { relay = \"%s\"; };\n"
           "relay = { status-interval = 100; fsync = \"never\"; purge-interval = 0; };\n",
           relay_dir, RELAY_SO);
  snprintf(extra, sizeof extra, "block-allow-list = { only = { do-dbs = [\"%s\"]; }; };\n", DB);
  lt_task t = {.name = DB,
               .mode = "all",
               .instance = "block-allow-list = \"only\";",
               .extra = extra,
               .load = "pool-size = 2;",
               .sync = "worker-count = 2; batch-ms = 20; status-interval = 100;",
               .source_extra = source_extra,
               .supervisor = "init-timeout = 10; stop-timeout = 5; relay-catchup-timeout = 60; "
                             "relay-catchup-poll = 50; auto-resume = { enable = false; };"};
  CU_ASSERT_FATAL(lt_config(&e, &t) == 0);

  char rwork[400];
  snprintf(rwork, sizeof rwork, "%s/relay-work", e.dir);
  dmh_subtask_opts ro = {.source = e.source, .work_root = rwork};
  dm_error err;
  dmh_subtask *relay = dmh_subtask_create_relay(&ro, &err);
  CU_ASSERT_FATAL(relay != NULL);
  CU_ASSERT_FATAL(dmh_subtask_start(relay, &err) == 0);
  /* The relay has started writing (its first file, its relay.meta) before the source rotates:
   * else, slow to start (ASan), it began at the file the dump takes its position in, and left no
   * file before it for the purge to remove (2 of 6 runs under ASan). */
  char cur_sub[256], cur_file[256];
  double until = lt_now() + 20;
  while (dm_relay_current(relay_dir, cur_sub, sizeof cur_sub, cur_file, sizeof cur_file) < 0 &&
         lt_now() < until)
    lt_sleep_ms(20);
  CU_ASSERT_FATAL(lt_now() < until);
  /* relay files before the dump's: a purge has something to remove */
  rh_rotate(relay_dir, 2, 100000);

  char p_file[256];
  rh_master_file(p_file, sizeof p_file); /* the dump takes its position in this file */
  dmh_subtask_opts o = {.task = e.task, .source = e.source, .work_root = e.work, .relay = relay};
  dmh_subtask *st = dmh_subtask_create(&o, &err);
  CU_ASSERT_FATAL(st != NULL);
  CU_ASSERT_FATAL(dmh_subtask_start(st, &err) == 0);
  /* precondition: the dump ran and took its position, the load stopped on the table */
  CU_ASSERT_EQUAL_FATAL(dmh_subtask_wait_settled(st, 60000), DMH_STAGE_PAUSED);
  char msg[1024], raw[512];
  CU_ASSERT_EQUAL(lt_first_error(st, msg, sizeof msg, raw, sizeof raw, NULL),
                  DM_ERR_LOAD_TABLE_MISMATCH);
  char rsub[256], rfile[256];
  bool held = dm_relay_reader_read(relay_dir, DB, rsub, sizeof rsub, rfile, sizeof rfile);
  fprintf(stderr, "dump position in %s; the task's reader file: %s/%s\n", p_file,
          held ? rsub : "(none)", held ? rfile : "");
  CU_ASSERT(held && strcmp(rfile, p_file) == 0);

  /* the source moves on through several files while the load waits */
  rh_rotate(relay_dir, 4, 200000);
  CU_ASSERT_FATAL(rh_file_exists(relay_dir, p_file));
  CU_ASSERT_EQUAL_FATAL(rh_age_files(relay_dir), 1);
  dm_relay_purge_opts po = {.relay_dir = relay_dir, .expires_hours = 1};
  int removed = 0;
  CU_ASSERT_EQUAL(dm_relay_purge(&po, &removed, &err), 0);
  fprintf(stderr, "purge removed %d relay file(s)\n", removed);
  CU_ASSERT(removed >= 1); /* the purge ran: the files before the dump's went */
  CU_ASSERT(rh_file_exists(relay_dir, p_file));

  /* the load can go on: it finishes, the sync starts at the dump's position */
  CU_ASSERT_FATAL(lt_exec(dst, "DROP TABLE " DB ".t") == 0);
  CU_ASSERT_FATAL(dmh_subtask_resume(st, &err) == 0);
  CU_ASSERT(lt_exec(src, "DELETE FROM " DB ".t WHERE id %% 5 = 0") == 0);
  CU_ASSERT(rh_target_equal(60000));
  CU_ASSERT_EQUAL(dmh_subtask_stage(st), DMH_STAGE_RUNNING);
  CU_ASSERT(lt_status_int(st, "totalRows") > 0);
  /* the sync has taken the reader file over */
  CU_ASSERT(dm_relay_reader_read(relay_dir, DB, rsub, sizeof rsub, rfile, sizeof rfile));
  dmh_subtask_stop(st, &err);
  dmh_subtask_destroy(st);
  dmh_subtask_stop(relay, &err);
  dmh_subtask_destroy(relay);
  lt_teardown(&e);
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"regression: a purge during the load keeps the dump's relay file", test_relay_hold},
  };
  return dmh_cunit_run("relay hold", suite_init, suite_clean, tests,
                       sizeof tests / sizeof tests[0]);
}

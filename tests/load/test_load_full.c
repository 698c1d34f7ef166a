/*
 * The load unit behind the real dump unit (mode full: dump -> load) on tables of a few hundred
 * thousand rows, compared with the source by checksum and cell by cell (dmh_testdb): a plain run
 * (with every column type of tests/sql/all-types.sql), a load paused, stopped and continued by a
 * new subtask, a load killed and continued, and the target server restarted mid-load with
 * auto-resume. The last three use on-duplicate = "error": a row loaded twice would fail them, a
 * row lost would fail the comparison.
 */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cunit_run.h"
#include "dmhost/error.h"
#include "load_test_util.h"
#include "testdb.h"

#define LT_DB "lt_full"
#define LT_TYPES "lt_full_types"

static MYSQL *src, *dst;

static const char *const lt_targets[] = {LT_DB,        LT_TYPES,     "lt_full_r1",
                                         "lt_full_r2", "lt_full_r3", "lt_full_r4"};
static const char *const lt_tasks[] = {"lt_full", "lt_resume", "lt_restart", "lt_kill", "lt_keys"};

static void lt_clean_target(void) {
  for (size_t i = 0; i < sizeof lt_targets / sizeof *lt_targets; i++)
    lt_exec(dst, "DROP DATABASE IF EXISTS `%s`", lt_targets[i]);
  for (size_t i = 0; i < sizeof lt_tasks / sizeof *lt_tasks; i++)
    lt_drop_checkpoint(dst, lt_tasks[i]);
}

/* Three tables: 300k rows with a secondary key, 200k without a primary key, 100k with text. */
static int lt_make_source(void) {
  if (testdb_recreate_db(src, LT_DB) != 0)
    return -1;
  static const char *const sql[] = {
      "USE " LT_DB, /* seq_1_to_N tables need a current database */
      "CREATE TABLE " LT_DB ".a (id INT NOT NULL PRIMARY KEY, k INT NOT NULL, "
      "c CHAR(60) NOT NULL, d DECIMAL(12,3), ts DATETIME(6), b VARBINARY(16), KEY k_1 (k))",
      "INSERT INTO " LT_DB ".a SELECT seq, (seq * 7919) % 100003, "
      "CONCAT('row-', seq, '-', REPEAT('x', seq % 40)), seq / 7, "
      "TIMESTAMP('2020-01-01') + INTERVAL seq SECOND + INTERVAL seq % 1000 MICROSECOND, "
      "IF(seq % 5 = 0, NULL, UNHEX(LPAD(HEX(seq), 8, '0'))) FROM seq_1_to_300000",
      "CREATE TABLE " LT_DB ".b (x INT, y VARCHAR(20), z DOUBLE)",
      "INSERT INTO " LT_DB ".b SELECT seq % 1000, IF(seq % 3 = 0, NULL, CONCAT('y', seq % 77)), "
      "seq / 3 FROM seq_1_to_200000",
      "CREATE TABLE " LT_DB ".c (id BIGINT UNSIGNED NOT NULL PRIMARY KEY, t TEXT, "
      "e ENUM('a','b','c'), j DATE) DEFAULT CHARSET = utf8mb4",
      "INSERT INTO " LT_DB ".c SELECT seq * 1000003, CONCAT('línea ', seq, '\n\t\\\\''\"', "
      "REPEAT('é', seq % 50)), ELT(1 + seq % 3, 'a', 'b', 'c'), "
      "DATE('2001-01-01') + INTERVAL seq % 9000 DAY FROM seq_1_to_100000",
  };
  for (size_t i = 0; i < sizeof sql / sizeof *sql; i++)
    if (testdb_exec(src, sql[i]) != 0)
      return -1;
  return testdb_load_all_types(src, LT_TYPES);
}

static int suite_init(void) {
  src = lt_source();
  dst = lt_target();
  if (!src || !dst)
    return 1;
  lt_clean_target();
  return lt_make_source() == 0 ? 0 : 1;
}

static int suite_clean(void) {
  if (dst)
    lt_clean_target();
  if (src) {
    lt_exec(src, "DROP DATABASE IF EXISTS " LT_DB);
    lt_exec(src, "DROP DATABASE IF EXISTS " LT_TYPES);
  }
  testdb_close(src);
  testdb_close(dst);
  src = dst = NULL;
  return 0;
}

/* Data cell by cell, and every table's SHOW CREATE TABLE: the deferred secondary keys are back. */
static void lt_assert_equal(const char *db_src, const char *db_dst) {
  char diff[1024];
  int rc = testdb_compare_schemas(src, dst, db_src, db_dst, diff, sizeof diff);
  if (rc != 0)
    fprintf(stderr, "%s vs %s: %s\n", db_src, db_dst, diff);
  CU_ASSERT_EQUAL(rc, 0);
  char q[256];
  snprintf(q, sizeof q,
           "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = '%s' ORDER BY 1",
           db_src);
  MYSQL_RES *r = NULL;
  CU_ASSERT_FATAL(mysql_query(src, q) == 0 && (r = mysql_store_result(src)) != NULL);
  CU_ASSERT(mysql_num_rows(r) > 0);
  MYSQL_ROW row;
  while ((row = mysql_fetch_row(r)) != NULL)
    CU_ASSERT(lt_same_create(src, db_src, dst, db_dst, row[0]));
  mysql_free_result(r);
}

static void lt_print_error(dmh_subtask *st) {
  char msg[600], raw[600];
  if (lt_first_error(st, msg, sizeof msg, raw, sizeof raw, NULL))
    fprintf(stderr, "error: %s (%s)\n", msg, raw);
}

/* A task of mode full over lt_full, routed to `to` (NULL: not routed). */
static int lt_full_config(lt_env *e, const char *task, const char *to, const char *load,
                          const char *sup) {
  char instance[256], extra[512];
  snprintf(instance, sizeof instance, "block-allow-list = \"only\";%s",
           to ? " route-rules = [\"r\"];" : "");
  snprintf(extra, sizeof extra,
           "block-allow-list = { only = { do-dbs = [\"%s\"%s]; }; };\n"
           "routes = { r = { schema-pattern = \"%s\"; target-schema = \"%s\"; }; };\n",
           LT_DB, to ? "" : ", \"" LT_TYPES "\"", LT_DB, to ? to : "unused");
  lt_task t = {.name = task,
               .mode = "full",
               .instance = instance,
               .extra = extra,
               .load = load,
               .supervisor = sup};
  return lt_config(e, &t);
}

static void test_full_end_to_end(void) {
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  CU_ASSERT_FATAL(lt_full_config(&e, "lt_full", NULL, NULL, NULL) == 0);
  dmh_subtask *st;
  double t0 = lt_now();
  dmh_stage s = lt_run(&e, &st, 240000);
  double secs = lt_now() - t0;
  if (s != DMH_STAGE_FINISHED)
    lt_print_error(st);
  CU_ASSERT_EQUAL_FATAL(s, DMH_STAGE_FINISHED);
  long long bytes = lt_status_int(st, "totalBytes");
  fprintf(stderr, "full: 600k rows + all types, %lld dump bytes, dump + load in %.2f s\n", bytes,
          secs);
  CU_ASSERT_EQUAL(lt_status_int(st, "finishedBytes"), bytes);
  /* the dump's position reached the load's status (the host hands it to sync in mode all) */
  char pos[256];
  CU_ASSERT(strncmp(lt_status_str(st, "metaBinlog", pos, sizeof pos), "(mysql-bin.", 11) == 0);
  lt_assert_equal(LT_DB, LT_DB);
  lt_assert_equal(LT_TYPES, LT_TYPES);
  dmh_subtask_destroy(st);
  lt_teardown(&e);
}

static const char lt_slow_load[] = "on-duplicate = \"error\"; batch-bytes = 65536; pool-size = 2;";

/* Pause mid-load, stop, and a new subtask finishes the load: equal, no duplicate-key error. */
static void test_full_resume(void) {
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  CU_ASSERT_FATAL(lt_full_config(&e, "lt_resume", "lt_full_r1", lt_slow_load, NULL) == 0);
  dmh_subtask *st = lt_subtask(&e);
  CU_ASSERT_FATAL(st != NULL);
  dm_error err;
  CU_ASSERT_FATAL(dmh_subtask_start(st, &err) == 0);
  CU_ASSERT_FATAL(lt_wait_bytes(st, 1, 120000));
  CU_ASSERT_EQUAL(dmh_subtask_pause(st, &err), 0);
  CU_ASSERT_EQUAL(dmh_subtask_stage(st), DMH_STAGE_PAUSED);
  long long done = lt_status_int(st, "finishedBytes"), total = lt_status_int(st, "totalBytes");
  fprintf(stderr, "resume: paused at %lld of %lld bytes\n", done, total);
  CU_ASSERT(done > 0 && done < total);
  CU_ASSERT(lt_count(dst, "SELECT COUNT(*) FROM lt_full_r1.a") < 300000);
  CU_ASSERT_EQUAL(dmh_subtask_stop(st, &err), 0);
  dmh_subtask_destroy(st);

  /* A new subtask: dump and load are not fresh; the load goes on from its checkpoint. */
  dmh_stage s = lt_run(&e, &st, 240000);
  if (s != DMH_STAGE_FINISHED)
    lt_print_error(st);
  CU_ASSERT_EQUAL(s, DMH_STAGE_FINISHED);
  CU_ASSERT_EQUAL(lt_status_int(st, "finishedBytes"), total);
  lt_assert_equal(LT_DB, "lt_full_r1");
  dmh_subtask_destroy(st);
  lt_teardown(&e);
}

/* kill mid-load while the workers' statements are blocked on the target (the tables are locked
 * by this test): kill must make them return at once; a new subtask then finishes the load. */
static void test_full_kill(void) {
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  CU_ASSERT_FATAL(lt_full_config(&e, "lt_kill", "lt_full_r3", lt_slow_load, NULL) == 0);
  dmh_subtask *st = lt_subtask(&e);
  CU_ASSERT_FATAL(st != NULL);
  dm_error err;
  CU_ASSERT_FATAL(dmh_subtask_start(st, &err) == 0);
  CU_ASSERT_FATAL(lt_wait_bytes(st, 1, 120000));
  CU_ASSERT_EQUAL(
      lt_exec(dst, "LOCK TABLES lt_full_r3.a WRITE, lt_full_r3.b WRITE, lt_full_r3.c WRITE"), 0);
  /* LOCK TABLES returns once the workers' open batches committed; let their counters settle */
  lt_sleep_ms(300);
  long long before = lt_status_int(st, "finishedBytes");
  lt_sleep_ms(500);
  CU_ASSERT_EQUAL(lt_status_int(st, "finishedBytes"), before); /* blocked */
  double t0 = lt_now();
  CU_ASSERT_EQUAL(dmh_subtask_kill(st, &err), 0);
  double secs = lt_now() - t0;
  CU_ASSERT_EQUAL(dmh_subtask_stage(st), DMH_STAGE_STOPPED);
  CU_ASSERT(secs < 2.0);
  CU_ASSERT_EQUAL(lt_exec(dst, "UNLOCK TABLES"), 0);
  dmh_subtask_destroy(st);
  dmh_stage s = lt_run(&e, &st, 240000);
  if (s != DMH_STAGE_FINISHED)
    lt_print_error(st);
  CU_ASSERT_EQUAL(s, DMH_STAGE_FINISHED);
  lt_assert_equal(LT_DB, "lt_full_r3");
  dmh_subtask_destroy(st);
  lt_teardown(&e);
}

/* The target restarts mid-load: the lost connections are resumable errors, the host resumes the
 * subtask, and the load goes on from its checkpoint. */
static void test_full_target_restart(void) {
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  CU_ASSERT_FATAL(lt_full_config(&e, "lt_restart", "lt_full_r2", lt_slow_load,
                                 "init-timeout = 10; stop-timeout = 5; auto-resume = { enable = "
                                 "true; backoff-initial = 1; backoff-max = 2; };") == 0);
  dmh_subtask *st = lt_subtask(&e);
  CU_ASSERT_FATAL(st != NULL);
  dm_error err;
  CU_ASSERT_FATAL(dmh_subtask_start(st, &err) == 0);
  CU_ASSERT_FATAL(lt_wait_bytes(st, 1, 120000));
  CU_ASSERT_EQUAL(system("bash " MARIADB_SH " restart-target >/dev/null"), 0);
  double end = lt_now() + 240;
  dmh_stage s;
  while ((s = dmh_subtask_stage(st)) != DMH_STAGE_FINISHED && lt_now() < end) {
    bool resumable = true;
    if (s == DMH_STAGE_STOPPED ||
        (s == DMH_STAGE_PAUSED &&
         (dmh_subtask_manually_paused(st) ||
          (lt_first_error(st, NULL, 0, NULL, 0, &resumable) != 0 && !resumable))))
      break;
    lt_sleep_ms(50);
  }
  if (s != DMH_STAGE_FINISHED)
    lt_print_error(st);
  CU_ASSERT_EQUAL(s, DMH_STAGE_FINISHED);
  /* the connection of this test died with the server */
  testdb_close(dst);
  dst = lt_target();
  CU_ASSERT_FATAL(dst != NULL);
  lt_assert_equal(LT_DB, "lt_full_r2");
  dmh_subtask_destroy(st);
  lt_teardown(&e);
}

/* Waits until an ALTER TABLE of `db`.`table` runs on the target. */
static bool lt_wait_alter(const char *db, const char *table, int timeout_ms) {
  double end = lt_now() + timeout_ms / 1000.0;
  while (lt_now() < end) {
    if (lt_count(dst,
                 "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE "
                 "'ALTER TABLE `%s`.`%s` %%'",
                 db, table) > 0)
      return true;
    lt_sleep_ms(5);
  }
  return false;
}

/* The load is stopped, then killed, while it adds the deferred key of table a (its data is in):
 * a transaction of this test holds a metadata lock on the table so the ALTER waits, which pins
 * the moment. Each time the key is still pending; the last run adds it, and the target equals
 * the source, keys included (on-duplicate = error: no row is loaded twice). */
static void test_full_keys_interrupted(void) {
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  CU_ASSERT_FATAL(lt_full_config(&e, "lt_keys", "lt_full_r4", lt_slow_load, NULL) == 0);
  const char *pending = "SELECT COUNT(*) FROM dm_meta.lt_keys_loader_keys WHERE target_schema = "
                        "'lt_full_r4' AND target_table = 'a' AND done = 0";
  const char *has_key = "SELECT COUNT(*) FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = "
                        "'lt_full_r4' AND TABLE_NAME = 'a' AND INDEX_NAME = 'k_1'";
  for (int round = 0; round < 2; round++) {
    dmh_subtask *st = lt_subtask(&e);
    CU_ASSERT_FATAL(st != NULL);
    dm_error err;
    if (round == 1) /* the data is in: the ALTER comes first */
      CU_ASSERT_EQUAL(lt_exec(dst, "START TRANSACTION"), 0);
    CU_ASSERT_FATAL(dmh_subtask_start(st, &err) == 0);
    if (round == 0) { /* the tables exist once bytes are loaded */
      CU_ASSERT_FATAL(lt_wait_bytes(st, 1, 120000));
      CU_ASSERT_EQUAL(lt_exec(dst, "START TRANSACTION"), 0);
    }
    CU_ASSERT(lt_count(dst, "SELECT COUNT(*) FROM lt_full_r4.a WHERE id = 1") >= 0);
    CU_ASSERT_FATAL(lt_wait_alter("lt_full_r4", "a", 240000));
    double t0 = lt_now();
    if (round == 0) {
      CU_ASSERT_EQUAL(dmh_subtask_stop(st, &err), 0); /* the ALTER is interrupted */
    } else {
      CU_ASSERT_EQUAL(dmh_subtask_kill(st, &err), 0); /* the ALTER goes on without us */
    }
    CU_ASSERT(lt_now() - t0 < 3.0);
    CU_ASSERT_EQUAL(dmh_subtask_stage(st), DMH_STAGE_STOPPED);
    CU_ASSERT_EQUAL(lt_count(dst, "%s", pending), 1);
    if (round == 0)
      CU_ASSERT_EQUAL(lt_count(dst, "%s", has_key), 0);
    CU_ASSERT_EQUAL(lt_exec(dst, "COMMIT"), 0);
    /* the ALTER came after the table's data (read after the COMMIT: the transaction's snapshot
     * is older) */
    CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM lt_full_r4.a"), 300000);
    dmh_subtask_destroy(st);
  }
  dmh_subtask *st;
  dmh_stage s = lt_run(&e, &st, 240000);
  if (s != DMH_STAGE_FINISHED)
    lt_print_error(st);
  CU_ASSERT_EQUAL(s, DMH_STAGE_FINISHED);
  CU_ASSERT_EQUAL(lt_count(dst, "%s", pending), 0);
  CU_ASSERT_EQUAL(lt_count(dst, "%s", has_key), 1);
  lt_assert_equal(LT_DB, "lt_full_r4");
  dmh_subtask_destroy(st);
  lt_teardown(&e);
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"mode full end to end, compared by checksum", test_full_end_to_end},
      {"pause, stop, new subtask: resumes from the checkpoint", test_full_resume},
      {"kill, new subtask: resumes from the checkpoint", test_full_kill},
      {"target restarted mid-load, auto-resumed", test_full_target_restart},
      {"stop and kill while adding the deferred keys", test_full_keys_interrupted},
  };
  return dmh_cunit_run("load_full", suite_init, suite_clean, tests, sizeof tests / sizeof tests[0]);
}

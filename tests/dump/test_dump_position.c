/*
 * Regression test for issue 10, item 3: mode full required REPLICATION CLIENT (BINLOG MONITOR)
 * and read SHOW MASTER STATUS although no sync follows; DM's own full-mode test runs with an
 * account without it. Before the fix the dump refused such a user ("lacks REPLICATION CLIENT")
 * in every mode. Now (the real dump and load units, the real servers):
 * - a source user with SELECT and RELOAD only (what a dump needs besides the position) runs mode
 *   full to the end, the target equal to the source by checksum, and both the log and the dump's
 *   metadata say there is no binlog position and why;
 * - the same user in mode all is refused by the dump's privilege check naming REPLICATION CLIENT;
 * - with BINLOG MONITOR granted, mode full records the position as before;
 * - a dump without a position is refused where a sync follows: by the load in mode load&sync, by
 *   the dump in mode all finding such a dump complete in its folder.
 */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cunit_run.h"
#include "dmhost/error.h"
#include "load_test_util.h"
#include "testdb.h"

#define DB "dmh_dump_nopos"
#define USER "dmh_dump_nopos"
#define PASSWORD "nopos"
#define RULES "block-allow-list = \"bal\";"
#define BAL "block-allow-list = { bal = { do-dbs = [\"" DB "\"]; }; };"

static MYSQL *src, *dst;
static const char *const tasks[] = {"dump_nopos_full", "dump_nopos_all", "dump_nopos_priv",
                                    "dump_nopos_ls", "dump_nopos_reuse"};

/* The dump's metadata of a subtask run in e (malloc'd), or NULL. */
static char *read_metadata(const lt_env *e) {
  char path[400];
  snprintf(path, sizeof path, "%s/dump/metadata", e->work);
  FILE *f = fopen(path, "r");
  if (!f)
    return NULL;
  char *text = calloc(1, 1 << 16);
  if (text)
    (void)!fread(text, 1, (1 << 16) - 1, f);
  fclose(f);
  return text;
}

/* The precondition of every test: the user really may not read the binlog position. */
static void assert_no_position_privilege(void) {
  MYSQL *m = testdb_connect_as(TESTDB_SOURCE, USER, PASSWORD, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL(m);
  CU_ASSERT_NOT_EQUAL(mysql_query(m, "SHOW MASTER STATUS"), 0);
  CU_ASSERT_EQUAL(mysql_errno(m), 1227); /* ER_SPECIFIC_ACCESS_DENIED_ERROR */
  testdb_close(m);
}

static void run_config_extra(lt_env *e, const char *task, const char *mode, const char *user,
                             const char *password, const char *extra) {
  lt_task t = {.name = task,
               .mode = mode,
               .instance = RULES,
               .extra = extra,
               .source_user = user,
               .source_password = password};
  CU_ASSERT_FATAL(lt_config(e, &t) == 0);
}

static void run_config(lt_env *e, const char *task, const char *mode, const char *user,
                       const char *password) {
  run_config_extra(e, task, mode, user, password, BAL);
}

/* Runs `task` in mode full as the test user in a fresh e; its log in *log. Finished or fatal. */
static dmh_subtask *run_full(lt_env *e, const char *task, char **log) {
  CU_ASSERT_FATAL(lt_init(e) == 0);
  run_config(e, task, "full", USER, PASSWORD);
  dmh_subtask *st = NULL;
  dmh_stage stage = lt_run_logged(e, &st, 60000, log);
  char msg[1200] = "";
  int code = st ? lt_first_error(st, msg, sizeof msg, NULL, 0, NULL) : -1;
  if (stage != DMH_STAGE_FINISHED)
    fprintf(stderr, "stage %s, error %d: %s\n", dmh_stage_name(stage), code, msg);
  CU_ASSERT_EQUAL_FATAL(stage, DMH_STAGE_FINISHED);
  return st;
}

/* Runs e's task: it must pause with the non-resumable error `code`, whose message goes to msg. */
static void expect_refused(lt_env *e, int code, char *msg, size_t len) {
  dmh_subtask *st = NULL;
  CU_ASSERT_EQUAL(lt_run(e, &st, 30000), DMH_STAGE_PAUSED);
  bool resumable = true;
  CU_ASSERT_EQUAL(lt_first_error(st, msg, len, NULL, 0, &resumable), code);
  CU_ASSERT_FALSE(resumable);
  dmh_subtask_destroy(st);
}

static void test_full_without_position(void) {
  assert_no_position_privilege();
  lt_env e;
  char *log = NULL;
  dmh_subtask *st = run_full(&e, "dump_nopos_full", &log);

  /* the target holds the source's data */
  char diff[1024] = "";
  int cmp = testdb_compare_schemas(src, dst, DB, DB, diff, sizeof diff);
  if (cmp != 0)
    fprintf(stderr, "compare: %s\n", diff);
  CU_ASSERT_EQUAL(cmp, 0);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM " DB ".a"), 20000);

  /* the log: the dump's warning, naming the privilege, and the load's */
  CU_ASSERT(lt_has(log, "[WARN] [task=dump_nopos_full source=lsrc unit=dump] dump: no binlog "
                        "position: the user `" USER "` may not run SHOW MASTER STATUS (it lacks "
                        "REPLICATION CLIENT, called BINLOG MONITOR"));
  CU_ASSERT(lt_has(log, "going on without it, as task mode full has no sync"));
  CU_ASSERT(lt_has(log, "load: the dump in "));
  CU_ASSERT(lt_has(log, "has no binlog position (its metadata: no binlog position: the user"));
  CU_ASSERT(lt_has(log, "loading it, as no sync follows in task mode full"));
  /* the metadata: the reason instead of the position section */
  char *meta = read_metadata(&e);
  CU_ASSERT_PTR_NOT_NULL_FATAL(meta);
  CU_ASSERT(lt_has(meta, "\nWarning: no binlog position: the user `" USER "` may not run SHOW "
                         "MASTER STATUS (it lacks REPLICATION CLIENT"));
  CU_ASSERT(lt_lacks(meta, "SHOW MASTER STATUS:\n"));
  CU_ASSERT(lt_lacks(meta, "\tLog: "));
  CU_ASSERT(lt_has(meta, "\t`" DB "`.`a`\trows=20000"));
  CU_ASSERT(lt_has(meta, "Finished dump at: "));
  free(meta);
  free(log);
  dmh_subtask_destroy(st);

  /* The same work folder in mode all (the task's mode changed): the complete dump has no
   * position for the sync, and the dump says so instead of handing nothing on. */
  run_config(&e, "dump_nopos_reuse", "all", NULL, NULL);
  char msg[1200];
  expect_refused(&e, DM_ERR_DUMP_NO_POSITION, msg, sizeof msg);
  CU_ASSERT(lt_has(msg, "dump: the sync of task mode all must continue from a binlog position, "
                        "but "));
  CU_ASSERT(lt_has(msg,
                   "/metadata is a complete dump without one (no binlog position: the user `" USER
                   "` may not run SHOW MASTER STATUS"));
  lt_teardown(&e);
}

static void test_all_refused(void) {
  assert_no_position_privilege();
  lt_exec(dst, "DROP DATABASE IF EXISTS " DB); /* the test before loaded it */
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  /* flush: auto (the default) would take a snapshot, whose position needs no privilege */
  run_config_extra(&e, "dump_nopos_all", "all", USER, PASSWORD,
                   BAL "\ndump = { consistency = \"flush\"; };");
  char msg[1200];
  expect_refused(&e, DM_ERR_DB_PRIVILEGE, msg, sizeof msg);
  CU_ASSERT(lt_has(msg, "dump: the source user `" USER "` on "));
  CU_ASSERT(lt_has(msg, " lacks REPLICATION CLIENT ("));
  CU_ASSERT(lt_has(msg, "BINLOG MONITOR since MariaDB 10.5"));
  CU_ASSERT(lt_has(msg, "GRANT REPLICATION CLIENT ON *.* TO the user"));
  char *meta = read_metadata(&e);
  CU_ASSERT_PTR_NULL(meta); /* refused before the snapshot */
  free(meta);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE "
                                "SCHEMA_NAME = '" DB "'"),
                  0);
  lt_teardown(&e);
}

static void test_full_with_privilege(void) {
  CU_ASSERT_FATAL(lt_exec_unlogged(src, "GRANT BINLOG MONITOR ON *.* TO '" USER "'@'127.0.0.1'") ==
                  0);
  lt_env e;
  char *log = NULL;
  dmh_subtask *st = run_full(&e, "dump_nopos_priv", &log);
  CU_ASSERT(lt_exec_unlogged(src, "REVOKE BINLOG MONITOR ON *.* FROM '" USER "'@'127.0.0.1'") == 0);
  char *meta = read_metadata(&e);
  CU_ASSERT_PTR_NOT_NULL_FATAL(meta);
  CU_ASSERT(lt_has(meta, "SHOW MASTER STATUS:\n\tLog: mysql-bin."));
  CU_ASSERT(lt_has(meta, "\tGTID:0-"));
  CU_ASSERT(lt_lacks(meta, "Warning: "));
  CU_ASSERT(lt_lacks(log, "no binlog position"));
  CU_ASSERT(lt_has(log, "dump: snapshot of 4 connections at (mysql-bin."));
  free(meta);
  free(log);
  dmh_subtask_destroy(st);
  lt_teardown(&e);
}

static void test_load_sync_refuses(void) {
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  CU_ASSERT_FATAL(lt_write(&e, "metadata",
                           "Started dump at: 2026-12-01 10:00:00\n"
                           "Warning: no binlog position: the user `u` may not run SHOW MASTER "
                           "STATUS\n\nTABLES:\nFinished dump at: 2026-12-01 10:00:01\n") == 0);
  char load[600];
  snprintf(load, sizeof load, "dir = \"%s\";", e.dump_dir);
  lt_task t = {.name = "dump_nopos_ls", .mode = "load&sync", .load = load};
  CU_ASSERT_FATAL(lt_config(&e, &t) == 0);
  char msg[1200];
  expect_refused(&e, DM_ERR_DUMP_NO_POSITION, msg, sizeof msg);
  CU_ASSERT(lt_has(msg, "load: the sync of task mode load&sync must continue from a binlog "
                        "position, but the dump in "));
  CU_ASSERT(lt_has(msg, " has none (its metadata: no binlog position: the user `u` may not run"));
  lt_teardown(&e);
}

static void clean(void) {
  lt_drop_all(dst, (const char *const[]){DB}, 1, tasks, sizeof tasks / sizeof *tasks);
}

static int suite_init(void) {
  src = lt_source();
  dst = lt_target();
  if (!src || !dst)
    return 1;
  clean();
  static const char *const sql[] = {
      "USE " DB, /* seq_1_to_N tables need a current database */
      "CREATE TABLE a (id INT PRIMARY KEY, v VARCHAR(40), d DECIMAL(10,2))",
      "INSERT INTO a SELECT seq, CONCAT('row ', seq), seq / 7 FROM seq_1_to_20000",
      "CREATE TABLE b (x INT, y TEXT)",
      "INSERT INTO b SELECT seq % 100, REPEAT('é', seq % 30) FROM seq_1_to_3000",
  };
  if (testdb_recreate_db(src, DB) != 0)
    return 1;
  for (size_t i = 0; i < sizeof sql / sizeof *sql; i++)
    if (testdb_exec(src, sql[i]) != 0)
      return 1;
  /* What a dump needs besides the binlog position: SELECT (the tables) and RELOAD (FLUSH TABLES
   * WITH READ LOCK). No REPLICATION CLIENT / BINLOG MONITOR / SUPER. */
  return lt_account(src, USER, PASSWORD, "SELECT, RELOAD ON *.*") ? 1 : 0;
}

static int suite_clean(void) {
  return lt_suite_close_account(&src, &dst, clean, DB, USER);
}

static const dmh_cunit_test tests_list[] = {
    {"mode full without REPLICATION CLIENT: loads, warns, no position", test_full_without_position},
    {"mode all without REPLICATION CLIENT: refused, naming it", test_all_refused},
    {"mode full with BINLOG MONITOR: the position as before", test_full_with_privilege},
    {"mode load&sync: a dump without a position is refused", test_load_sync_refuses},
};

int main(void) {
  return dmh_cunit_run("dump without a binlog position", suite_init, suite_clean, tests_list,
                       sizeof tests_list / sizeof tests_list[0]);
}

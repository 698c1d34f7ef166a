/*
 * Issue 11: a subtask moved to another worker in its dump or load phase. The dump folder is local
 * to the worker that made it, so the new worker finds the target's load checkpoint of the old
 * worker's dump but no folder to continue it with. Before, the subtask started at the load unit
 * (its checkpoint had rows) and stopped on the missing folder; and a load of a new dump took a
 * file the old one had finished as loaded, keeping an older snapshot of that table under a sync
 * that starts at the new dump's position. Now the load is fresh when its folder holds no complete
 * dump (the subtask starts over from its dump unit), every checkpoint row names its dump
 * (`dump_id`), and the load of another dump empties the tables the old load wrote to before it
 * loads (refused with DM_ERR_LOAD_OTHER_DUMP where another source loads into the same table).
 * Against the real servers (CTest fixture mariadb); every database name starts with lt_mv.
 */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cunit_run.h"
#include "dmhost/error.h"
#include "load_test_util.h"

static MYSQL *dst;

static const char *const mv_dbs[] = {"lt_mv", "lt_mvm", "lt_mvf"};
static const char *const mv_tasks[] = {"lt_mv", "lt_mvm", "lt_mvf"};

static void mv_clean(void) {
  lt_drop_all(dst, mv_dbs, sizeof mv_dbs / sizeof *mv_dbs, mv_tasks,
              sizeof mv_tasks / sizeof *mv_tasks);
  MYSQL *src = lt_source();
  if (src) {
    lt_exec(src, "DROP DATABASE IF EXISTS lt_mvf");
    mysql_close(src);
  }
}

static int suite_init(void) {
  return lt_suite_open(&dst, mv_clean);
}

static int suite_clean(void) {
  return lt_suite_close(&dst, mv_clean);
}

static const char mv_schema_a[] = "CREATE TABLE `a` (`id` int NOT NULL, `v` varbinary(10) DEFAULT "
                                  "NULL, PRIMARY KEY (`id`)) ENGINE=InnoDB";
static const char mv_schema_b[] = "CREATE TABLE `b` (`id` int NOT NULL, PRIMARY KEY (`id`)) "
                                  "ENGINE=InnoDB";

/* The old worker's dump of `db`: a (3 rows) loads, b holds a duplicate key within its file, so
 * with on-duplicate "error" the load stops there: a loaded, b not (the state a move leaves). */
static void mv_first_dump(lt_env *e, const char *db) {
  char name[64], text[128];
  lt_write_metadata(e, "mysql-bin.000001", 4, "");
  snprintf(name, sizeof name, "%s-schema-create.sql", db);
  snprintf(text, sizeof text, "CREATE DATABASE IF NOT EXISTS `%s`;\n", db);
  lt_write(e, name, text);
  snprintf(name, sizeof name, "%s.a-schema.sql", db);
  lt_write(e, name, mv_schema_a);
  snprintf(name, sizeof name, "%s.b-schema.sql", db);
  lt_write(e, name, mv_schema_b);
  snprintf(name, sizeof name, "%s.a.000000.sql", db);
  lt_write(e, name, "INSERT INTO `a` (`id`,`v`) VALUES (1,0x6f6c64),(2,0x6f6c64),(3,0x6f6c64);\n");
  snprintf(name, sizeof name, "%s.b.000000.sql", db);
  lt_write(e, name, "INSERT INTO `b` (`id`) VALUES (10),(10);\n");
}

/* The new worker's dump, taken later: row 1 changed, 2 and 3 deleted, 4 new; b fixed. */
static void mv_second_dump(lt_env *e, const char *db) {
  char name[64];
  lt_write_metadata(e, "mysql-bin.000002", 99, "");
  snprintf(name, sizeof name, "%s.a.000000.sql", db);
  lt_write(e, name, "INSERT INTO `a` (`id`,`v`) VALUES (1,0x6e6577),(4,0x6e6577);\n");
  snprintf(name, sizeof name, "%s.b.000000.sql", db);
  lt_write(e, name, "INSERT INTO `b` (`id`) VALUES (10),(11);\n");
}

/* Runs the first dump's load to its stop on b; asserts the state a move leaves behind. */
static void mv_first_load(lt_env *e, const char *task, const char *db) {
  dmh_subtask *st;
  CU_ASSERT_EQUAL_FATAL(lt_run(e, &st, 30000), DMH_STAGE_PAUSED);
  CU_ASSERT_EQUAL(lt_first_error(st, NULL, 0, NULL, 0, NULL), DM_ERR_DB_QUERY);
  dmh_subtask_destroy(st);
  CU_ASSERT_EQUAL_FATAL(lt_count(dst, "SELECT COUNT(*) FROM %s.a", db), 3);
  CU_ASSERT_EQUAL_FATAL(lt_count(dst, "SELECT COUNT(*) FROM %s.b", db), 0);
  /* every row names the first dump */
  CU_ASSERT_EQUAL_FATAL(lt_count(dst,
                                 "SELECT COUNT(DISTINCT dump_id) FROM dm_meta.`%s_loader_"
                                 "checkpoint` WHERE LENGTH(dump_id) = 16",
                                 task),
                        1);
}

static void test_load_other_dump(void) {
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  lt_task t = {.name = "lt_mv", .load = "on-duplicate = \"error\"; pool-size = 1;"};
  CU_ASSERT_FATAL(lt_config(&e, &t) == 0);
  mv_first_dump(&e, "lt_mv");
  mv_first_load(&e, "lt_mv", "lt_mv");

  mv_second_dump(&e, "lt_mv");
  dmh_subtask *st;
  char *log = NULL;
  dmh_stage s = lt_run_logged(&e, &st, 30000, &log);
  char msg[600] = "";
  if (s != DMH_STAGE_FINISHED)
    lt_first_error(st, msg, sizeof msg, NULL, 0, NULL);
  CU_ASSERT_EQUAL(s, DMH_STAGE_FINISHED);
  if (msg[0])
    fprintf(stderr, "second load: %s\n", msg);
  /* exactly the new dump's rows: none of the older snapshot stays */
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM lt_mv.a"), 2);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM lt_mv.a WHERE v = 'new'"), 2);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM lt_mv.a WHERE id IN (2, 3)"), 0);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM lt_mv.b"), 2);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(DISTINCT dump_id) FROM "
                                "dm_meta.lt_mv_loader_checkpoint"),
                  1);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM dm_meta.lt_mv_loader_checkpoint WHERE "
                                "`offset` < end_pos"),
                  0);
  CU_ASSERT(log && lt_has(log, "for another dump") && lt_has(log, "Emptied the 1 target table"));
  free(log);
  dmh_subtask_destroy(st);
  lt_teardown(&e);
}

/* A table the old load wrote to, where another source loads too (merged): its rows of this
 * source cannot be taken out alone. Refused, not resumable, nothing emptied. */
static void test_load_other_dump_merged(void) {
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  lt_task t = {.name = "lt_mvm", .load = "on-duplicate = \"error\"; pool-size = 1;"};
  CU_ASSERT_FATAL(lt_config(&e, &t) == 0);
  mv_first_dump(&e, "lt_mvm");
  mv_first_load(&e, "lt_mvm", "lt_mvm");
  /* another source's row for a table routed to the same target table */
  CU_ASSERT_FATAL(lt_exec(dst, "INSERT INTO dm_meta.lt_mvm_loader_checkpoint (id, filename, "
                               "cp_schema, cp_table, `offset`, end_pos) VALUES ('other-source', "
                               "'lt_mvm.a.000000.sql', 'lt_mvm', 'a', 10, 10)") == 0);
  mv_second_dump(&e, "lt_mvm");
  dmh_subtask *st;
  CU_ASSERT_EQUAL(lt_run(&e, &st, 30000), DMH_STAGE_PAUSED);
  char msg[600] = "";
  bool resumable = true;
  CU_ASSERT_EQUAL(lt_first_error(st, msg, sizeof msg, NULL, 0, &resumable), DM_ERR_LOAD_OTHER_DUMP);
  CU_ASSERT(lt_has(msg, "`lt_mvm`.`a`, where other sources load too"));
  CU_ASSERT_FALSE(resumable);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM lt_mvm.a"), 3);
  dmh_subtask_destroy(st);
  lt_teardown(&e);
}

/* Mode full (the real dump unit) whose dump folder is gone, as on the worker a subtask moved to
 * in its load phase, with the source changed since: the subtask starts over at the dump unit and
 * the target ends equal to the source. */
static void test_load_moved_full(void) {
  MYSQL *src = lt_source();
  CU_ASSERT_FATAL(src != NULL);
  CU_ASSERT_FATAL(lt_exec(src,
                          "DROP DATABASE IF EXISTS lt_mvf; CREATE DATABASE lt_mvf; "
                          "CREATE TABLE lt_mvf.a (id INT PRIMARY KEY, v VARCHAR(10)); "
                          "USE lt_mvf; INSERT INTO a SELECT seq, 'old' FROM seq_1_to_500") == 0);
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  lt_task t = {.name = "lt_mvf",
               .mode = "full",
               .instance = "block-allow-list = \"only\";",
               .extra = "block-allow-list = { only = { do-dbs = [\"lt_mvf\"]; }; };\n"};
  CU_ASSERT_FATAL(lt_config(&e, &t) == 0);
  dmh_subtask *st;
  CU_ASSERT_EQUAL_FATAL(lt_run(&e, &st, 60000), DMH_STAGE_FINISHED);
  dmh_subtask_destroy(st);
  CU_ASSERT_EQUAL_FATAL(lt_count(dst, "SELECT COUNT(*) FROM lt_mvf.a"), 500);

  /* the new worker: no dump folder; the source moved on */
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s/dump'", e.work);
  CU_ASSERT_FATAL(system(cmd) == 0);
  CU_ASSERT_FATAL(lt_exec(src, "DELETE FROM lt_mvf.a WHERE id > 400; UPDATE lt_mvf.a SET v = "
                               "'new' WHERE id <= 10") == 0);
  char *log = NULL;
  dmh_stage s = lt_run_logged(&e, &st, 60000, &log);
  CU_ASSERT_EQUAL(s, DMH_STAGE_FINISHED);
  CU_ASSERT(log && lt_has(log, "starting at the dump unit") && lt_has(log, "starts over"));
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM lt_mvf.a"), 400);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM lt_mvf.a WHERE v = 'new'"), 10);
  free(log);
  dmh_subtask_destroy(st);
  lt_teardown(&e);
  mysql_close(src);
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"another dump's checkpoint: its tables emptied, the new dump loaded", test_load_other_dump},
      {"another dump's checkpoint on a merged table: refused", test_load_other_dump_merged},
      {"mode full, the dump folder gone: starts over at the dump", test_load_moved_full},
  };
  return dmh_cunit_run("load_moved", suite_init, suite_clean, tests, sizeof tests / sizeof *tests);
}

/*
 * Issue 10 (behave as DM does), the load side of merged and wider target tables, against the real
 * target (CTest fixture mariadb):
 *  - two subtasks loading into one merged target table (a route each) raced to create it: both saw
 *    it missing, both ran CREATE TABLE, one stopped with ERROR 1050, not resumable. Now both finish
 *    with the rows of both;
 *  - a target table with more columns than the dump (with defaults, or nullable) was refused with
 *    DM_ERR_LOAD_TABLE_MISMATCH; now rows go in by the dump's column names and the extra columns
 *    keep their defaults. A target lacking a dump column, or with an extra column nothing can fill,
 *    is still refused, naming it.
 * Every database name starts with lt_mg.
 */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <string.h>

#include "cunit_run.h"
#include "dmhost/error.h"
#include "load_test_util.h"

static MYSQL *dst;

static const char *const mg_dbs[] = {"lt_mg", "lt_mgs", "lt_mgx"};
static const char *const mg_tasks[] = {"lt_mg1", "lt_mg2", "lt_mgx"};

static void mg_clean(void) {
  lt_drop_all(dst, mg_dbs, sizeof mg_dbs / sizeof *mg_dbs, mg_tasks,
              sizeof mg_tasks / sizeof *mg_tasks);
}

static int suite_init(void) {
  return lt_suite_open(&dst, mg_clean);
}

static int suite_clean(void) {
  return lt_suite_close(&dst, mg_clean);
}

static const char mg_schema[] = "CREATE TABLE `t` (`id` int NOT NULL, `v` varbinary(10) DEFAULT "
                                "NULL, PRIMARY KEY (`id`)) ENGINE=InnoDB";

/* A dump of lt_mgs.t with rows first..first+2, and a task routing it to lt_mg.t. */
static int mg_setup(lt_env *e, const char *task, int first) {
  if (lt_init(e) != 0)
    return -1;
  char rows[256];
  snprintf(rows, sizeof rows, "INSERT INTO `t` (`id`,`v`) VALUES (%d,0x61),(%d,0x62),(%d,NULL);\n",
           first, first + 1, first + 2);
  lt_write_metadata(e, "mysql-bin.000001", 4, "");
  lt_write(e, "lt_mgs-schema-create.sql", "CREATE DATABASE IF NOT EXISTS `lt_mgs`;\n");
  lt_write(e, "lt_mgs.t-schema.sql", mg_schema);
  lt_write(e, "lt_mgs.t.000000.sql", rows);
  lt_task t = {
      .name = task,
      .instance = "route-rules = [\"db\", \"tables\"];",
      .extra = "routes = {\n"
               "  db = { schema-pattern = \"lt_mgs\"; target-schema = \"lt_mg\"; };\n"
               "  tables = { schema-pattern = \"lt_mgs\"; table-pattern = \"t\"; "
               "target-schema = \"lt_mg\"; target-table = \"t\"; };\n"
               "};\n",
  };
  return lt_config(e, &t);
}

static void mg_report(dmh_subtask *st, const char *who) {
  char msg[600], raw[600];
  int code = lt_first_error(st, msg, sizeof msg, raw, sizeof raw, NULL);
  if (code)
    fprintf(stderr, "%s: error %d: %s (%s)\n", who, code, msg, raw);
}

/* Two subtasks create the merged table at the same moment: both are held on the target schema's
 * lock (a LOCK TABLES of another table of it) just before they check for the table, then let go
 * together. Several rounds, each on a fresh schema. */
static void test_load_merge_race(void) {
  lt_env e1, e2;
  CU_ASSERT_FATAL(mg_setup(&e1, "lt_mg1", 1) == 0);
  CU_ASSERT_FATAL(mg_setup(&e2, "lt_mg2", 101) == 0);
  MYSQL *locker = lt_target();
  CU_ASSERT_FATAL(locker != NULL);
  for (int round = 0; round < 6; round++) {
    lt_exec(dst, "DROP DATABASE IF EXISTS lt_mg");
    lt_exec(dst, "CREATE DATABASE lt_mg");
    lt_exec(dst, "CREATE TABLE lt_mg.lockme (i int)");
    lt_drop_checkpoint(dst, "lt_mg1");
    lt_drop_checkpoint(dst, "lt_mg2");
    lt_exec(locker, "LOCK TABLES lt_mg.lockme WRITE");
    dmh_subtask *a = lt_subtask(&e1), *b = lt_subtask(&e2);
    CU_ASSERT_FATAL(a && b);
    dm_error err;
    CU_ASSERT_FATAL(dmh_subtask_start(a, &err) == 0);
    CU_ASSERT_FATAL(dmh_subtask_start(b, &err) == 0);
    /* precondition: both wait on the schema's lock, neither has looked for the table yet */
    long long waiting = 0;
    for (double end = lt_now() + 20; waiting < 2 && lt_now() < end; lt_sleep_ms(20))
      waiting = lt_count(dst, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO "
                              "LIKE 'CREATE DATABASE IF NOT EXISTS `lt_mg`%%' AND STATE LIKE "
                              "'Waiting for%%lock'");
    CU_ASSERT_EQUAL(waiting, 2);
    lt_exec(locker, "UNLOCK TABLES");
    dmh_stage sa = dmh_subtask_wait_settled(a, 30000), sb = dmh_subtask_wait_settled(b, 30000);
    mg_report(a, "lt_mg1");
    mg_report(b, "lt_mg2");
    CU_ASSERT_EQUAL(sa, DMH_STAGE_FINISHED);
    CU_ASSERT_EQUAL(sb, DMH_STAGE_FINISHED);
    CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM lt_mg.t"), 6);
    CU_ASSERT_EQUAL(lt_count(dst, "SELECT SUM(id) FROM lt_mg.t"), 1 + 2 + 3 + 101 + 102 + 103);
    dmh_subtask_destroy(a);
    dmh_subtask_destroy(b);
    if (sa != DMH_STAGE_FINISHED || sb != DMH_STAGE_FINISHED)
      break;
  }
  mysql_close(locker);
  lt_teardown(&e1);
  lt_teardown(&e2);
}

/* Runs task lt_mgx (mode load) over the dump in e into lt_mgx.t, whose target table the caller
 * made; returns the stage, the first error in code/msg. */
static dmh_stage mg_run_x(lt_env *e, const char *data, int *code, char *msg, size_t len) {
  lt_drop_checkpoint(dst, "lt_mgx");
  lt_write(e, "lt_mgx.t.000000.sql", data);
  lt_task t = {.name = "lt_mgx"};
  CU_ASSERT_FATAL(lt_config(e, &t) == 0);
  dmh_subtask *st;
  dmh_stage s = lt_run(e, &st, 30000);
  *code = lt_first_error(st, msg, len, NULL, 0, NULL);
  dmh_subtask_destroy(st);
  return s;
}

static const char mg_x_rows[] =
    "INSERT INTO `t` (`id`,`v`) VALUES (1,0x61),(2,NULL);\n"
    "INSERT INTO `t` VALUES (3,0x63);\n"; /* a dumper that writes no column list */

/* A target table with the dump's columns in another order and two more: one with a DEFAULT, one
 * nullable without one. */
static void test_load_superset(void) {
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  lt_write_metadata(&e, "mysql-bin.000001", 4, "");
  lt_write(&e, "lt_mgx.t-schema.sql", mg_schema);
  lt_exec(dst, "DROP DATABASE IF EXISTS lt_mgx");
  lt_exec(dst, "CREATE DATABASE lt_mgx");
  lt_exec(dst, "CREATE TABLE lt_mgx.t (extra_d int NOT NULL DEFAULT 7, v varbinary(10), "
               "id int NOT NULL PRIMARY KEY, extra_n varchar(5))");
  int code;
  char msg[600] = "";
  dmh_stage s = mg_run_x(&e, mg_x_rows, &code, msg, sizeof msg);
  if (code)
    fprintf(stderr, "superset: %d %s\n", code, msg);
  CU_ASSERT_EQUAL(s, DMH_STAGE_FINISHED);
  CU_ASSERT_EQUAL(code, 0);
  /* row by row: the dump's columns by name, the extra ones at their defaults */
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM lt_mgx.t"), 3);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM lt_mgx.t WHERE id = 1 AND v = 'a' AND "
                                "extra_d = 7 AND extra_n IS NULL"),
                  1);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM lt_mgx.t WHERE id = 2 AND v IS NULL AND "
                                "extra_d = 7 AND extra_n IS NULL"),
                  1);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM lt_mgx.t WHERE id = 3 AND v = 'c' AND "
                                "extra_d = 7 AND extra_n IS NULL"),
                  1);

  /* a data line whose column list is not the schema file's is refused, nothing of it runs */
  lt_exec(dst, "DELETE FROM lt_mgx.t");
  s = mg_run_x(&e, "INSERT INTO `t` (`v`,`id`) VALUES (0x61,1);\n", &code, msg, sizeof msg);
  CU_ASSERT_EQUAL(s, DMH_STAGE_PAUSED);
  CU_ASSERT_EQUAL(code, DM_ERR_LOAD_BAD_STATEMENT);
  CU_ASSERT(lt_has(msg, "expected the columns of the table's schema file, in its order"));
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM lt_mgx.t"), 0);

  /* the same definition, created beforehand: accepted */
  lt_exec(dst, "DROP TABLE lt_mgx.t");
  lt_exec(dst, "CREATE TABLE lt_mgx.t (id int NOT NULL PRIMARY KEY, v varbinary(10))");
  s = mg_run_x(&e, mg_x_rows, &code, msg, sizeof msg);
  CU_ASSERT_EQUAL(s, DMH_STAGE_FINISHED);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM lt_mgx.t"), 3);

  /* a target lacking a dump column: refused, naming it */
  lt_exec(dst, "DROP TABLE lt_mgx.t");
  lt_exec(dst, "CREATE TABLE lt_mgx.t (id int NOT NULL PRIMARY KEY, extra_d int DEFAULT 7)");
  s = mg_run_x(&e, mg_x_rows, &code, msg, sizeof msg);
  CU_ASSERT_EQUAL(s, DMH_STAGE_PAUSED);
  CU_ASSERT_EQUAL(code, DM_ERR_LOAD_TABLE_MISMATCH);
  CU_ASSERT(lt_has(msg, "column `v` (varbinary(10) NULL in the dump) is missing on the target"));
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM lt_mgx.t"), 0);

  /* an extra column that nothing fills (NOT NULL, no default): refused, naming it */
  lt_exec(dst, "DROP TABLE lt_mgx.t");
  lt_exec(dst, "CREATE TABLE lt_mgx.t (id int NOT NULL PRIMARY KEY, v varbinary(10), "
               "must int NOT NULL)");
  s = mg_run_x(&e, mg_x_rows, &code, msg, sizeof msg);
  CU_ASSERT_EQUAL(s, DMH_STAGE_PAUSED);
  CU_ASSERT_EQUAL(code, DM_ERR_LOAD_TABLE_MISMATCH);
  CU_ASSERT(lt_has(msg, "column `must` (int(11) NOT NULL) exists on the target but not in the "
                        "dump, and has no default"));
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM lt_mgx.t"), 0);
  lt_teardown(&e);
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"two loads create one merged table at once", test_load_merge_race},
      {"a target table with more columns than the dump", test_load_superset},
  };
  return dmh_cunit_run("load_merge", suite_init, suite_clean, tests,
                       sizeof tests / sizeof tests[0]);
}

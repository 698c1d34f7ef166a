/*
 * DM's binlog event filters with the Error action and the finer DDL events (issue 23), against the
 * real pair (CTest fixture mariadb), mode incremental:
 *
 *  - `events: ["drop column"]`, Ignore: ALTER TABLE ... DROP COLUMN is skipped (the target keeps
 *    the column) while ADD COLUMN on the same table is applied. Before the classifier every ALTER
 *    was "alter table" and the rule matched nothing.
 *  - `events: ["truncate table"]`, Error: the sync stops at the TRUNCATE with
 *    DM_ERR_SYNC_FILTER_ERROR naming the rule, the table, the event and the statement; the rows
 *    before it are on the target, the ones after it are not, and the checkpoint is not past it.
 *    Before, Error was refused by the config and had no verdict.
 *  - update-task with the rule changed (it no longer names the truncate) and resume: the TRUNCATE
 *    and everything after it apply once, and the target equals the source cell by cell.
 */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cunit_run.h"
#include "sync_test_util.h"
#include "testdb.h"

static MYSQL *src, *dst;

static void tsf_drop(void) {
  static const char *const dbs[] = {"tsf_main", "tsf_cols"};
  for (size_t i = 0; i < sizeof dbs / sizeof *dbs; i++) {
    lt_exec(src, "DROP DATABASE IF EXISTS %s", dbs[i]);
    lt_exec(dst, "DROP DATABASE IF EXISTS %s", dbs[i]);
  }
}

static int suite_init(void) {
  if (ts_suite_open(&src, &dst) < 0 || lt_exec(src, "USE mysql") != 0)
    return -1;
  tsf_drop();
  return 0;
}

static int suite_clean(void) {
  if (src && dst)
    tsf_drop();
  ts_suite_close(&src, &dst);
  return 0;
}

static long long tsf_columns(const char *table) {
  return lt_count(dst,
                  "SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = "
                  "'tsf_cols' AND TABLE_NAME = '%s'",
                  table);
}

/* The task file of e with `from` replaced by `to` (once), loaded as the next file of the task. */
static dmh_task_config *tsf_next(const lt_env *e, const char *from, const char *to) {
  FILE *f = fopen(e->task->path, "r");
  if (!f)
    return NULL;
  static char text[65536];
  size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = '\0';
  char *at = strstr(text, from);
  if (!at)
    return NULL;
  char path[512], *out = malloc(n + strlen(to) + 1);
  if (!out)
    return NULL;
  sprintf(out, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
  snprintf(path, sizeof path, "%s/next.cfg", e->dir);
  f = fopen(path, "w");
  if (f) {
    fputs(out, f);
    fclose(f);
  }
  free(out);
  dmh_task_config *next = NULL;
  dm_error err;
  if (!f || dmh_task_config_load(path, &next, &err) < 0) {
    fprintf(stderr, "next task file: %s\n", f ? err.message : "cannot write");
    return NULL;
  }
  return next;
}

/* The subtask paused with DM_ERR_SYNC_FILTER_ERROR, its message naming each of wants. */
/* ... and the position of the event it stopped at, as the message names it ("the delete at
 * FILE:POS"), in file (256 bytes) and *pos. */
static void tsf_expect_stop(dmh_subtask *st, const char *const *wants, size_t n, char *file,
                            unsigned long *pos) {
  CU_ASSERT_EQUAL_FATAL(dmh_subtask_wait_settled(st, 120000), DMH_STAGE_PAUSED);
  char msg[1024], raw[1024], at[256];
  CU_ASSERT_EQUAL(lt_first_error(st, msg, sizeof msg, raw, sizeof raw, NULL),
                  DM_ERR_SYNC_FILTER_ERROR);
  for (size_t i = 0; i < n; i++)
    if (!strstr(msg, wants[i])) {
      fprintf(stderr, "message lacks %s: %s\n", wants[i], msg);
      CU_FAIL("the error names the rule, event, table and statement");
    }
  ts_error_at(msg, at, sizeof at);
  char *colon = strrchr(at, ':');
  CU_ASSERT_PTR_NOT_NULL_FATAL(colon);
  *colon = '\0';
  snprintf(file, 256, "%s", at);
  *pos = strtoul(colon + 1, NULL, 10);
  CU_ASSERT(*pos > 4);
}

/* The task's global checkpoint is at or before file:pos (the stopped event's: the source is
 * shared, so a position read from it before the event may be behind a checkpoint that skipped
 * other tests' events since). */
static bool tsf_checkpoint_before(const char *task, const char *file, unsigned long pos) {
  char cp_file[256] = "";
  long long cp_pos = -1;
  if (testdb_query_value(dst, cp_file, sizeof cp_file,
                         "SELECT binlog_name FROM dm_meta.%s_syncer_checkpoint WHERE is_global = 1",
                         task) != 0 ||
      testdb_query_int(dst, &cp_pos,
                       "SELECT binlog_pos FROM dm_meta.%s_syncer_checkpoint WHERE is_global = 1",
                       task) != 0)
    return false;
  int c = strcmp(cp_file, file);
  return c < 0 || (c == 0 && cp_pos <= (long long)pos);
}

/* update-task with `from` replaced by `to` in the task file, then resume. The new file must
 * outlive the subtask: returned for the caller to free after ts_stop. */
static dmh_task_config *tsf_update_resume(const lt_env *e, dmh_subtask *st, const char *from,
                                          const char *to) {
  dmh_task_config *next = tsf_next(e, from, to);
  CU_ASSERT_FATAL(next != NULL);
  dm_error err;
  CU_ASSERT_EQUAL_FATAL(dmh_subtask_update_check(st, next, false, &err), 0);
  CU_ASSERT_EQUAL_FATAL(dmh_subtask_update_apply(st, next, &err), 0);
  CU_ASSERT_EQUAL_FATAL(dmh_subtask_resume(st, &err), 0);
  return next;
}

static void test_sync_filter_error_and_drop_column(void) {
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  static const char *const setup[] = {
      "CREATE DATABASE tsf_main",
      "CREATE TABLE tsf_main.t (id INT PRIMARY KEY, v INT)",
      "CREATE DATABASE tsf_cols",
      "CREATE TABLE tsf_cols.w (id INT PRIMARY KEY, a INT, b INT)",
  };
  for (size_t i = 0; i < sizeof setup / sizeof *setup; i++) {
    CU_ASSERT_FATAL(lt_exec(src, "%s", setup[i]) == 0);
    CU_ASSERT_FATAL(lt_exec(dst, "%s", setup[i]) == 0);
  }
  static const char *const rule_error =
      "f2 = { schema-pattern = \"tsf_main\"; table-pattern = \"*\"; events = [\"truncate "
      "table\"]; action = \"Error\"; };";
  char rules[1024];
  snprintf(rules, sizeof rules,
           "filters = { f1 = { schema-pattern = \"tsf_cols\"; table-pattern = \"w\"; events = "
           "[\"drop column\"]; action = \"Ignore\"; };\n%s };",
           rule_error);
  CU_ASSERT_FATAL(ts_config_bal(&e, "ts_filter", "do-dbs = [\"tsf_main\", \"tsf_cols\"];", rules,
                                NULL, NULL) == 0);
  dmh_subtask *st = ts_start(&e);
  CU_ASSERT_FATAL(st != NULL && dmh_subtask_stage(st) == DMH_STAGE_RUNNING);

  CU_ASSERT(lt_exec(src, "ALTER TABLE tsf_cols.w DROP COLUMN b") == 0);
  CU_ASSERT(lt_exec(src, "ALTER TABLE tsf_cols.w ADD COLUMN c INT") == 0);
  CU_ASSERT(lt_exec(src, "INSERT INTO tsf_main.t SELECT seq, seq FROM seq_1_to_30") == 0);
  char file[256] = "";
  unsigned long before = 0;
  ts_master(file, &before, NULL); /* the TRUNCATE starts at or after this position */
  CU_ASSERT(lt_exec(src, "TRUNCATE TABLE tsf_main.t") == 0);
  CU_ASSERT(lt_exec(src, "INSERT INTO tsf_main.t SELECT seq, seq * 3 FROM seq_1_to_7") == 0);
  /* the precondition: the source holds the rows after the truncate only */
  CU_ASSERT_EQUAL_FATAL(lt_count(src, "SELECT COUNT(*) FROM tsf_main.t"), 7);

  static const char *const wants[] = {"\"f2\"", "truncate table", "`tsf_main`.`t`",
                                      "TRUNCATE TABLE tsf_main.t"};
  char ev_file[256] = "";
  unsigned long ev_pos = 0;
  tsf_expect_stop(st, wants, sizeof wants / sizeof *wants, ev_file, &ev_pos);
  /* the rows before the TRUNCATE applied, it and what follows not; the checkpoint is before it */
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM tsf_main.t"), 30);
  /* the event it stopped at is ours (at or past where the source was before it was written), and
   * the checkpoint is not past it */
  CU_ASSERT(strcmp(ev_file, file) > 0 || (strcmp(ev_file, file) == 0 && ev_pos >= before));
  CU_ASSERT(tsf_checkpoint_before("ts_filter", ev_file, ev_pos));
  /* drop column ignored, add column applied */
  CU_ASSERT_EQUAL(tsf_columns("w"), 4);
  CU_ASSERT_EQUAL(lt_count(dst,
                           "SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = "
                           "'tsf_cols' AND TABLE_NAME = 'w' AND COLUMN_NAME IN ('b', 'c')"),
                  2);

  /* update-task: the rule no longer names the truncate; resume applies it and the rest once */
  dmh_task_config *next =
      tsf_update_resume(&e, st, "events = [\"truncate table\"]", "events = [\"drop view\"]");
  CU_ASSERT(ts_catch_up("ts_filter", 60000));
  CU_ASSERT(ts_clean_run(st));
  CU_ASSERT(ts_equal("tsf_main", "tsf_main"));
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT SUM(v) FROM tsf_main.t"), 3 * 28);
  ts_stop(st);
  dmh_task_config_free(next); /* after the subtask: it held the file as its task */
  lt_teardown(&e);
}

/* An Error rule on a row change ("delete"): the sync stops before the transaction that holds it
 * (its insert is not applied either); update-task with the rule on "none" and resume apply it. */
static void test_sync_filter_error_row(void) {
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  static const char *const setup = "CREATE TABLE tsf_main.r (id INT PRIMARY KEY, v INT)";
  lt_exec(src, "CREATE DATABASE IF NOT EXISTS tsf_main");
  lt_exec(dst, "CREATE DATABASE IF NOT EXISTS tsf_main");
  lt_exec(src, "DROP TABLE IF EXISTS tsf_main.r");
  lt_exec(dst, "DROP TABLE IF EXISTS tsf_main.r");
  CU_ASSERT_FATAL(lt_exec(src, "%s", setup) == 0);
  CU_ASSERT_FATAL(lt_exec(dst, "%s", setup) == 0);
  CU_ASSERT_FATAL(
      ts_config_bal(&e, "ts_filter_row", "do-dbs = [\"tsf_main\"];",
                    "filters = { f1 = { schema-pattern = \"tsf_main\"; table-pattern = \"r\"; "
                    "events = [\"delete\"]; action = \"Error\"; };\n"
                    "f2 = { schema-pattern = \"tsf_other\"; events = [\"all\"]; action = "
                    "\"Ignore\"; }; };",
                    NULL, NULL) == 0);
  dmh_subtask *st = ts_start(&e);
  CU_ASSERT_FATAL(st != NULL && dmh_subtask_stage(st) == DMH_STAGE_RUNNING);
  CU_ASSERT(lt_exec(src, "INSERT INTO tsf_main.r SELECT seq, seq FROM seq_1_to_10") == 0);
  CU_ASSERT(ts_catch_up("ts_filter_row", 60000));
  char file[256] = "";
  unsigned long before = 0;
  ts_master(file, &before, NULL);
  CU_ASSERT(lt_exec(src, "BEGIN; INSERT INTO tsf_main.r VALUES (11, 11); DELETE FROM tsf_main.r "
                         "WHERE id = 1; COMMIT") == 0);
  CU_ASSERT(lt_exec(src, "INSERT INTO tsf_main.r VALUES (12, 12)") == 0);
  static const char *const wants[] = {"\"f1\"", "delete", "`tsf_main`.`r`"};
  char ev_file[256] = "";
  unsigned long ev_pos = 0;
  tsf_expect_stop(st, wants, sizeof wants / sizeof *wants, ev_file, &ev_pos);
  /* nothing of the transaction applied, the checkpoint before it */
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM tsf_main.r"), 10);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM tsf_main.r WHERE id = 11"), 0);
  CU_ASSERT(strcmp(ev_file, file) > 0 || (strcmp(ev_file, file) == 0 && ev_pos >= before));
  CU_ASSERT(tsf_checkpoint_before("ts_filter_row", ev_file, ev_pos));
  dmh_task_config *next = tsf_update_resume(&e, st, "events = [\"delete\"]", "events = [\"none\"]");
  CU_ASSERT(ts_catch_up("ts_filter_row", 60000));
  CU_ASSERT(ts_clean_run(st));
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM tsf_main.r"), 11);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT SUM(v) FROM tsf_main.r"),
                  lt_count(src, "SELECT SUM(v) FROM tsf_main.r"));
  ts_stop(st);
  dmh_task_config_free(next);
  lt_teardown(&e);
}

/* A multi-clause ALTER whose clauses the rules split (drop column skipped, add column not): DM
 * would run the ADD alone; dmhost runs an ALTER whole or not at all, so it stops before it, naming
 * both clauses. With the rule changed (update-task) the ALTER runs whole on resume. */
static void test_sync_filter_split_alter(void) {
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  static const char *const setup = "CREATE TABLE tsf_cols.m (id INT PRIMARY KEY, a INT)";
  lt_exec(src, "CREATE DATABASE IF NOT EXISTS tsf_cols");
  lt_exec(dst, "CREATE DATABASE IF NOT EXISTS tsf_cols");
  lt_exec(src, "DROP TABLE IF EXISTS tsf_cols.m");
  lt_exec(dst, "DROP TABLE IF EXISTS tsf_cols.m");
  CU_ASSERT_FATAL(lt_exec(src, "%s", setup) == 0);
  CU_ASSERT_FATAL(lt_exec(dst, "%s", setup) == 0);
  CU_ASSERT_FATAL(
      ts_config_bal(&e, "ts_filter_split", "do-dbs = [\"tsf_cols\"];",
                    "filters = { f1 = { schema-pattern = \"tsf_cols\"; table-pattern = \"m\"; "
                    "events = [\"drop column\"]; action = \"Ignore\"; };\n"
                    "f2 = { schema-pattern = \"tsf_other\"; events = [\"all\"]; action = "
                    "\"Ignore\"; }; };",
                    NULL, NULL) == 0);
  dmh_subtask *st = ts_start(&e);
  CU_ASSERT_FATAL(st != NULL && dmh_subtask_stage(st) == DMH_STAGE_RUNNING);
  CU_ASSERT(lt_exec(src, "ALTER TABLE tsf_cols.m DROP COLUMN a, ADD COLUMN e INT") == 0);
  static const char *const wants[] = {"\"f1\"", "drop column", "add column", "`tsf_cols`.`m`"};
  char ev_file[256] = "";
  unsigned long ev_pos = 0;
  tsf_expect_stop(st, wants, sizeof wants / sizeof *wants, ev_file, &ev_pos);
  CU_ASSERT(tsf_checkpoint_before("ts_filter_split", ev_file, ev_pos));
  CU_ASSERT_EQUAL(lt_count(dst,
                           "SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = "
                           "'tsf_cols' AND TABLE_NAME = 'm' AND COLUMN_NAME = 'a'"),
                  1);
  dmh_task_config *next =
      tsf_update_resume(&e, st, "events = [\"drop column\"]", "events = [\"none\"]");
  CU_ASSERT(ts_catch_up("ts_filter_split", 60000));
  CU_ASSERT(ts_clean_run(st));
  CU_ASSERT_EQUAL(lt_count(dst,
                           "SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = "
                           "'tsf_cols' AND TABLE_NAME = 'm' AND COLUMN_NAME IN ('a', 'e')"),
                  1);
  ts_stop(st);
  dmh_task_config_free(next);
  lt_teardown(&e);
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"Error stops before the event; update-task and resume apply it; drop column Ignore",
       test_sync_filter_error_and_drop_column},
      {"Error on a row change stops before its transaction", test_sync_filter_error_row},
      {"a multi-clause ALTER the rules split stops before it", test_sync_filter_split_alter},
  };
  return dmh_cunit_run("sync_filter", suite_init, suite_clean, tests,
                       sizeof tests / sizeof tests[0]);
}

/*
 * Issue 23, DM's `session` of `target-database` and `from` (docs/config.md, "session"): the
 * variables reach every unit connection after the unit's own set-up, so the file's value wins.
 * Mode full (real dump and load) over a row the source took in its lenient sql_mode (a zero
 * date): the units' own session loads it; with `session = { sql_mode = "...NO_ZERO_DATE..." }` on
 * the target the load refuses it, naming the server's error, which only the file's sql_mode can
 * cause. Variables that would change how rows are read are refused when the task file is read.
 */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "cunit_run.h"
#include "dmhost/error.h"
#include "load_test_util.h"
#include "testdb.h"

#define LS_DB "lt_session"

static MYSQL *src, *dst;

static int suite_init(void) {
  src = lt_source();
  dst = lt_target();
  if (!src || !dst)
    return 1;
  lt_exec(dst, "DROP DATABASE IF EXISTS " LS_DB);
  if (testdb_recreate_db(src, LS_DB) != 0 ||
      lt_exec(src, "CREATE TABLE " LS_DB ".t (id INT PRIMARY KEY, d DATE, v VARCHAR(20))") != 0 ||
      lt_exec(src, "SET SESSION sql_mode = ''") != 0 ||
      lt_exec(src, "INSERT INTO " LS_DB ".t VALUES (1, '0000-00-00', 'zero'), (2, '2024-02-29', "
                   "'leap')") != 0)
    return 1;
  lt_exec(src, "SET SESSION sql_mode = DEFAULT");
  return 0;
}

static int suite_clean(void) {
  lt_exec(dst, "DROP DATABASE IF EXISTS " LS_DB);
  lt_exec(src, "DROP DATABASE IF EXISTS " LS_DB);
  lt_drop_checkpoint(dst, "lt_session");
  testdb_close(src);
  testdb_close(dst);
  return 0;
}

static int ls_config(lt_env *e, const char *target_extra, const char *from_extra) {
  lt_task t = {.name = "lt_session",
               .mode = "full",
               .instance = "block-allow-list = \"only\";",
               .extra = "block-allow-list = { only = { do-dbs = [\"" LS_DB "\"]; }; };",
               .target_extra = target_extra,
               .from_extra = from_extra};
  return lt_config(e, &t);
}

static void test_session_wins(void) {
  lt_env e;
  dmh_subtask *st = NULL;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  /* without a session: the units' lenient sql_mode takes the zero date (the precondition) */
  CU_ASSERT_FATAL(ls_config(&e, NULL, "session = { max_statement_time = 300; };") == 0);
  CU_ASSERT_EQUAL_FATAL(lt_run(&e, &st, 120000), DMH_STAGE_FINISHED);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM " LS_DB ".t WHERE d = '0000-00-00'"), 1);
  char diff[512] = "";
  CU_ASSERT_EQUAL(testdb_compare_schemas(src, dst, LS_DB, LS_DB, diff, sizeof diff), 0);
  dmh_subtask_destroy(st);
  lt_exec(dst, "DROP DATABASE " LS_DB);
  lt_drop_checkpoint(dst, "lt_session");

  /* with the file's strict sql_mode on the target: the same row is refused by the target */
  CU_ASSERT_FATAL(ls_config(&e,
                            "session = { sql_mode = \"STRICT_ALL_TABLES,NO_ZERO_DATE\"; "
                            "tidb_retry_limit = \"10\"; };",
                            NULL) == 0);
  dmh_stage stage = lt_run(&e, &st, 120000);
  CU_ASSERT_EQUAL(stage, DMH_STAGE_PAUSED);
  if (stage != DMH_STAGE_PAUSED)
    fprintf(stderr, "stage %d, rows %lld\n", (int)stage,
            lt_count(dst, "SELECT COUNT(*) FROM " LS_DB ".t"));
  char msg[1024] = "", raw[1024] = "";
  lt_first_error(st, msg, sizeof msg, raw, sizeof raw, NULL);
  CU_ASSERT_PTR_NOT_NULL(strstr(raw, "1292")); /* Incorrect date value: '0000-00-00' */
  dmh_subtask_destroy(st);
  lt_exec(dst, "DROP DATABASE IF EXISTS " LS_DB);
  lt_drop_checkpoint(dst, "lt_session");

  /* a variable the target does not know: the start is refused (the load's first connect, to see
   * whether the task is fresh), naming it */
  CU_ASSERT_FATAL(ls_config(&e, "session = { no_such_variable = 1; };", NULL) == 0);
  st = lt_subtask(&e);
  CU_ASSERT_PTR_NOT_NULL_FATAL(st);
  dm_error err = {0};
  CU_ASSERT_NOT_EQUAL(dmh_subtask_start(st, &err), 0);
  CU_ASSERT_EQUAL(err.code, DM_ERR_CONFIG_INVALID);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "`target-database.session.no_such_variable`"));
  dmh_subtask_destroy(st);
  lt_teardown(&e);
}

/* Refused when the file is read: a zone (the task's `timezone` does that), charsets, the binlog
 * switch, and a name that would need quoting. */
static void test_session_refused(void) {
  static const struct {
    const char *extra, *want;
  } cases[] = {
      {"session = { time_zone = \"+08:00\"; };", "the task's `timezone` names a zone"},
      {"session = { character_set_client = \"latin1\"; };", "every value's bytes as binary"},
      {"session = { Collation_Connection = \"utf8mb4_bin\"; };", "every value's bytes as binary"},
      {"session = { sql_log_bin = false; };", "the target's binlog must keep"},
      {"session = { bad = [1, 2]; };", "must be a string, a number or true/false"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char path[] = "/tmp/dmh-session-XXXXXX";
    int fd = mkstemp(path);
    CU_ASSERT_FATAL(fd >= 0);
    FILE *f = fdopen(fd, "w");
    CU_ASSERT_FATAL(f != NULL);
    fprintf(f,
            "name = \"ls\"; task-mode = \"full\";\n"
            "target-database = { host = \"127.0.0.1\"; user = \"root\"; %s };\n"
            "mysql-instances = ( { source-id = \"lsrc\"; } );\n",
            cases[i].extra);
    fclose(f);
    dmh_task_config *t = NULL;
    dm_error err = {0};
    CU_ASSERT_NOT_EQUAL(dmh_task_config_load(path, &t, &err), 0);
    unlink(path);
    CU_ASSERT_PTR_NULL(t);
    CU_ASSERT_EQUAL(err.code, DM_ERR_CONFIG_INVALID);
    if (!strstr(err.message, cases[i].want))
      fprintf(stderr, "case %zu: %s\n", i, err.message);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, cases[i].want));
  }
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"the file's session wins over the units' own", test_session_wins},
      {"session variables refused when the file is read", test_session_refused},
  };
  return dmh_cunit_run("load_session", suite_init, suite_clean, tests,
                       sizeof tests / sizeof tests[0]);
}

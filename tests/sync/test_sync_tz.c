/*
 * Issue 23, DM's `timezone` and the zone of replayed DDL (plugins/sync/sync_tz.c, docs/sync.md
 * "Time zones"). A TIMESTAMP literal in a DDL (a column's DEFAULT) is read in the session's zone;
 * before, the sync replayed every DDL at '+00:00', so a source session at '+05:00' left the target
 * a default five hours off. Mode incremental against the real pair: the DDL of a '+05:00' session
 * and of a SYSTEM one give the target the source's defaults (the same instants), rows that take
 * them arrive equal, and the task's `timezone` is checked on the target at the start.
 */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <string.h>

#include "cunit_run.h"
#include "load_test_util.h"
#include "sync_test_util.h"
#include "testdb.h"

static MYSQL *src, *dst;

static int suite_init(void) {
  return ts_suite_open(&src, &dst);
}

static int suite_clean(void) {
  lt_exec(src, "DROP DATABASE IF EXISTS ts_tz");
  lt_exec(dst, "DROP DATABASE IF EXISTS ts_tz");
  ts_suite_close(&src, &dst);
  return 0;
}

/* The default of ts_tz.a.<col> as that server shows it at '+00:00' (the instant, in UTC). */
static void column_default(MYSQL *m, const char *col, char *out, size_t len) {
  char q[512];
  out[0] = '\0';
  snprintf(q, sizeof q,
           "SELECT COLUMN_DEFAULT FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = 'ts_tz' "
           "AND TABLE_NAME = 'a' AND COLUMN_NAME = '%s'",
           col);
  if (lt_exec(m, "SET time_zone = '+00:00'") != 0 || mysql_query(m, q) != 0)
    return;
  MYSQL_RES *r = mysql_store_result(m);
  MYSQL_ROW row = r ? mysql_fetch_row(r) : NULL;
  if (row && row[0])
    snprintf(out, len, "%s", row[0]);
  if (r)
    mysql_free_result(r);
}

/* Runs one statement in a source session at `zone`, and waits until the task applied it. */
static bool tz_step(dmh_subtask *st, const char *zone, const char *sql) {
  if (lt_exec(src, "SET time_zone = '%s'", zone) != 0 || lt_exec(src, "%s", sql) != 0)
    return false;
  lt_exec(src, "SET time_zone = DEFAULT");
  if (!ts_catch_up("ts_tz", 60000))
    return false;
  return ts_clean_run(st);
}

static void test_ddl_zones(void) {
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  lt_exec(src, "DROP DATABASE IF EXISTS ts_tz");
  lt_exec(dst, "DROP DATABASE IF EXISTS ts_tz");
  CU_ASSERT_FATAL(lt_exec(src, "CREATE DATABASE ts_tz") == 0);
  CU_ASSERT_FATAL(lt_exec(dst, "CREATE DATABASE ts_tz") == 0);
  CU_ASSERT_FATAL(ts_config(&e, "ts_tz", "ts_tz", NULL, TS_SYNC " timezone = \"+03:00\";") == 0);
  dmh_subtask *st = ts_start(&e);
  CU_ASSERT_FATAL(st != NULL);
  CU_ASSERT_FATAL(dmh_subtask_stage(st) == DMH_STAGE_RUNNING);

  /* a session at +05:00: midnight there is 19:00 UTC the day before */
  CU_ASSERT_FATAL(tz_step(st, "+05:00",
                          "CREATE TABLE ts_tz.a (id INT PRIMARY KEY, "
                          "c TIMESTAMP NULL DEFAULT '2024-01-01 00:00:00')"));
  char s_def[64], t_def[64];
  column_default(src, "c", s_def, sizeof s_def);
  column_default(dst, "c", t_def, sizeof t_def);
  CU_ASSERT_STRING_EQUAL(s_def, "'2023-12-31 19:00:00'"); /* the precondition: a shifted default */
  CU_ASSERT_STRING_EQUAL(t_def, s_def);

  /* a SYSTEM session: the source's own system zone, whatever `timezone` says */
  CU_ASSERT_FATAL(tz_step(
      st, "SYSTEM", "ALTER TABLE ts_tz.a ADD d TIMESTAMP NULL DEFAULT '2024-06-01 12:00:00'"));
  column_default(src, "d", s_def, sizeof s_def);
  column_default(dst, "d", t_def, sizeof t_def);
  CU_ASSERT(s_def[0] != '\0');
  CU_ASSERT_STRING_EQUAL(t_def, s_def);

  /* another zone again, then rows that take the defaults: equal cell by cell */
  CU_ASSERT_FATAL(tz_step(
      st, "-07:30", "ALTER TABLE ts_tz.a ADD e TIMESTAMP NULL DEFAULT '2024-03-10 02:30:00'"));
  column_default(src, "e", s_def, sizeof s_def);
  column_default(dst, "e", t_def, sizeof t_def);
  CU_ASSERT_STRING_EQUAL(s_def, "'2024-03-10 10:00:00'");
  CU_ASSERT_STRING_EQUAL(t_def, s_def);
  CU_ASSERT(tz_step(st, "+09:00", "INSERT INTO ts_tz.a (id) VALUES (1), (2)"));
  CU_ASSERT(
      tz_step(st, "+00:00", "INSERT INTO ts_tz.a VALUES (3, NOW(), NULL, '2001-02-03 04:05:06')"));
  CU_ASSERT(ts_equal("ts_tz", "ts_tz"));
  ts_stop(st);
  lt_teardown(&e);
}

/* A `timezone` the target does not know stops the sync at its start, naming the setting; one that
 * cannot be a zone's name is refused when the task is read. */
static void test_bad_timezone(void) {
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  lt_exec(src, "CREATE DATABASE IF NOT EXISTS ts_tz");
  CU_ASSERT_FATAL(ts_config(&e, "ts_tz", "ts_tz", NULL, TS_SYNC " timezone = \"Mars/Olympus\";") ==
                  0);
  dmh_subtask *st = ts_start(&e);
  CU_ASSERT_FATAL(st != NULL);
  char msg[1024] = "", raw[1024] = "";
  int code = 0;
  double end = lt_now() + 60;
  while ((code = lt_first_error(st, msg, sizeof msg, raw, sizeof raw, NULL)) == 0 && lt_now() < end)
    lt_sleep_ms(20);
  CU_ASSERT_EQUAL(code, DM_ERR_CONFIG_INVALID);
  CU_ASSERT_PTR_NOT_NULL(strstr(msg, "`timezone` \"Mars/Olympus\" is not a time zone the target"));
  ts_stop(st);

  CU_ASSERT_FATAL(
      ts_config(&e, "ts_tz", "ts_tz", NULL, TS_SYNC " timezone = \"+08:00'; DROP TABLE x\";") == 0);
  st = lt_subtask(&e);
  dm_error err = {0};
  int rc = st ? dmh_subtask_start(st, &err) : -1;
  code = rc != 0 ? err.code : 0;
  end = lt_now() + 60;
  while (code == 0 && (code = lt_first_error(st, msg, sizeof msg, raw, sizeof raw, NULL)) == 0 &&
         lt_now() < end)
    lt_sleep_ms(20);
  if (rc != 0)
    snprintf(msg, sizeof msg, "%s", err.message);
  CU_ASSERT_EQUAL(code, DM_ERR_CONFIG_INVALID);
  CU_ASSERT_PTR_NOT_NULL(strstr(msg, "setting `timezone` must be a time zone's name"));
  ts_stop(st);
  lt_teardown(&e);
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"DDL replayed at its session's time zone", test_ddl_zones},
      {"a timezone the target does not know, or no zone at all", test_bad_timezone},
  };
  return dmh_cunit_run("sync_tz", suite_init, suite_clean, tests, sizeof tests / sizeof tests[0]);
}

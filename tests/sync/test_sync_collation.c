/*
 * DM's collation_compatible: strict (docs/config.md, "collation_compatible") against the real pair
 * (CTest fixture mariadb), both paths that create databases and tables on the target: the load
 * (mode load, a hand-made dump whose schema files name a charset without a collation, as MySQL 5.7
 * and MariaDB before 10.3.37 print them, and a database with neither) and the sync (mode
 * incremental, the source's own CREATE DATABASE / CREATE TABLE). Each runs once loose, once
 * strict.
 *
 * The target's global collation_server is set to another collation than the source's while the
 * suite runs (RUN_SERIAL), so a database created without a charset gets the target's choice: the
 * loose load shows it (the precondition), the strict load carries the source's. On both servers
 * (MariaDB 10.11) a charset's default collation is the same, so what strict adds after a named
 * charset is checked in the statements the target ran (its general log, on for the suite): the
 * source's collations written in with strict, none with loose. The sync replays each DDL's
 * session (collation_server included), so its CREATE DATABASE without a charset already gets the
 * source's collation loose; strict writes it into the statement.
 *
 * Before: `collation_compatible` was no setting of the libconfig file (refused as unknown), and
 * DM's YAML `collation_compatible: strict` was refused ("strict is not built"); no statement got
 * a collation.
 */
#include <CUnit/Basic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cunit_run.h"
#include "dmhost/ddl_collation.h"
#include "sync_test_util.h"
#include "testdb.h"

static MYSQL *src, *dst;
static char src_coll[64];                /* the source's @@global.collation_server */
static char tgt_coll[64];                /* the target's, for the suite: another one */
static char saved_coll[64];              /* the target's before the suite */
static char saved_log[8], saved_out[32]; /* general_log, log_output before the suite */

static const char *const tc_dbs[] = {"tc_load_loose", "tc_load_strict", "tc_sync_loose",
                                     "tc_sync_strict"};
static const char *const tc_tasks[] = {"tc_load_loose", "tc_load_strict", "tc_sync_loose",
                                       "tc_sync_strict"};

static void tc_drop(void) {
  for (size_t i = 0; i < sizeof tc_dbs / sizeof *tc_dbs; i++)
    lt_exec(src, "DROP DATABASE IF EXISTS `%s`", tc_dbs[i]);
  lt_drop_all(dst, tc_dbs, sizeof tc_dbs / sizeof *tc_dbs, tc_tasks,
              sizeof tc_tasks / sizeof *tc_tasks);
}

/* One value of a query (the first column of the first row) into out; "" when none. */
static void tc_value(MYSQL *m, char *out, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void tc_value(MYSQL *m, char *out, size_t len, const char *fmt, ...) {
  char q[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(q, sizeof q, fmt, ap);
  va_end(ap);
  out[0] = '\0';
  if (mysql_query(m, q) != 0) {
    fprintf(stderr, "%s: %s\n", q, mysql_error(m));
    return;
  }
  MYSQL_RES *r = mysql_store_result(m);
  MYSQL_ROW row = r ? mysql_fetch_row(r) : NULL;
  if (row && row[0])
    snprintf(out, len, "%s", row[0]);
  if (r)
    mysql_free_result(r);
}

static int suite_init(void) {
  if (ts_suite_open(&src, &dst) < 0)
    return -1;
  tc_value(src, src_coll, sizeof src_coll, "SELECT @@global.collation_server");
  tc_value(dst, saved_coll, sizeof saved_coll, "SELECT @@global.collation_server");
  tc_value(dst, saved_log, sizeof saved_log, "SELECT @@global.general_log");
  tc_value(dst, saved_out, sizeof saved_out, "SELECT @@global.log_output");
  if (!src_coll[0] || !saved_coll[0] || !saved_log[0] || !saved_out[0])
    return -1;
  /* the same charset as the source's, another collation of it */
  snprintf(tgt_coll, sizeof tgt_coll, "%s",
           strcmp(src_coll, "utf8mb4_unicode_ci") == 0 ? "utf8mb4_general_ci"
                                                       : "utf8mb4_unicode_ci");
  tc_drop();
  if (lt_exec(dst, "SET GLOBAL collation_server = '%s'", tgt_coll) != 0 ||
      lt_exec(dst, "SET GLOBAL log_output = 'TABLE'") != 0 ||
      lt_exec(dst, "TRUNCATE TABLE mysql.general_log") != 0 ||
      lt_exec(dst, "SET GLOBAL general_log = ON") != 0)
    return -1;
  return 0;
}

static int suite_clean(void) {
  if (src && dst) {
    lt_exec(dst, "SET GLOBAL general_log = %s", saved_log);
    lt_exec(dst, "SET GLOBAL log_output = '%s'", saved_out);
    lt_exec(dst, "TRUNCATE TABLE mysql.general_log");
    lt_exec(dst, "SET GLOBAL collation_server = '%s'", saved_coll);
    tc_drop();
  }
  ts_suite_close(&src, &dst);
  return 0;
}

/* The collation of a database, a table or a column on the target. */
static void tc_db(const char *db, char *out, size_t len) {
  tc_value(dst, out, len,
           "SELECT DEFAULT_COLLATION_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = "
           "'%s'",
           db);
}

static void tc_table(const char *db, const char *t, char *out, size_t len) {
  tc_value(dst, out, len,
           "SELECT TABLE_COLLATION FROM information_schema.TABLES WHERE TABLE_SCHEMA = '%s' AND "
           "TABLE_NAME = '%s'",
           db, t);
}

static void tc_column(const char *db, const char *t, const char *c, char *out, size_t len) {
  tc_value(dst, out, len,
           "SELECT COLLATION_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = '%s' AND "
           "TABLE_NAME = '%s' AND COLUMN_NAME = '%s'",
           db, t, c);
}

/* The CREATE TABLE the target ran for `db`.`t` (the load's and the sync's form), from its general
 * log; "" when it ran none. */
static void tc_ran(const char *db, const char *t, char *out, size_t len) {
  tc_value(dst, out, len,
           "SELECT CONVERT(argument USING utf8mb4) FROM mysql.general_log WHERE command_type = "
           "'Query' AND argument LIKE 'CREATE TABLE IF NOT EXISTS `%s`.`%s`%%' ORDER BY "
           "event_time DESC LIMIT 1",
           db, t);
}

static bool tc_eq(const char *got, const char *want, const char *what) {
  if (strcmp(got, want) == 0)
    return true;
  fprintf(stderr, "\n%s: \"%s\", expected \"%s\"\n", what, got, want);
  return false;
}

/* The source's set as the units read it (dm_collations_read): ids, defaults, the server's, `utf8`;
 * MariaDB 10.10+'s uca1400 collations by their full names and ids. */
static void test_source_set(void) {
  dm_collations *c = NULL;
  dm_error err = {0};
  CU_ASSERT_EQUAL_FATAL(dm_collations_read(src, "test", &c, &err), 0);
  CU_ASSERT_STRING_EQUAL(dm_collations_name(c, 45), "utf8mb4_general_ci");
  CU_ASSERT_STRING_EQUAL(dm_collations_name(c, 8), "latin1_swedish_ci");
  CU_ASSERT_STRING_EQUAL(dm_collations_default(c, "latin1"), "latin1_swedish_ci");
  CU_ASSERT_STRING_EQUAL(dm_collations_default(c, "utf8mb4"), "utf8mb4_general_ci");
  CU_ASSERT_STRING_EQUAL(dm_collations_server(c), src_coll);
  char v[64];
  tc_value(src, v, sizeof v, "SELECT CHARSET(CONVERT('' USING utf8))");
  CU_ASSERT_STRING_EQUAL(dm_collations_default(c, "utf8"), dm_collations_default(c, v));
  tc_value(src, v, sizeof v,
           "SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = "
           "'information_schema' AND TABLE_NAME = 'COLLATION_CHARACTER_SET_APPLICABILITY' AND "
           "COLUMN_NAME = 'FULL_COLLATION_NAME'");
  if (strcmp(v, "1") == 0) /* MariaDB 10.10+ */
    CU_ASSERT_STRING_EQUAL(dm_collations_name(c, 2048) ?: "", "utf8mb3_uca1400_ai_ci");
  dm_collations_free(c);
}

/* The load: a dump of the form MySQL 5.7 writes (a charset without a collation at table and
 * column level) and a database file without a charset. */
static void tc_load(const char *db, bool strict) {
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  char name[128], text[1024];
  lt_write_metadata(&e, "mysql-bin.000001", 4, "");
  snprintf(name, sizeof name, "%s-schema-create.sql", db);
  snprintf(text, sizeof text, "CREATE DATABASE IF NOT EXISTS `%s`;\n", db);
  lt_write(&e, name, text);
  snprintf(name, sizeof name, "%s.t1-schema.sql", db);
  lt_write(&e, name,
           "CREATE TABLE `t1` (\n"
           "  `id` int(11) NOT NULL,\n"
           "  `a` varchar(10) CHARACTER SET latin1 DEFAULT NULL,\n"
           "  `b` varchar(10) DEFAULT NULL,\n"
           "  PRIMARY KEY (`id`)\n"
           ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;\n");
  snprintf(name, sizeof name, "%s.t1.000000.sql", db);
  lt_write(&e, name, "INSERT INTO `t1` (`id`,`a`,`b`) VALUES (1,'x','y');\n");
  snprintf(name, sizeof name, "%s.t2-schema.sql", db);
  lt_write(&e, name,
           "CREATE TABLE `t2` (\n"
           "  `id` int(11) NOT NULL,\n"
           "  `c` varchar(10) DEFAULT NULL,\n"
           "  PRIMARY KEY (`id`)\n"
           ") ENGINE=InnoDB;\n");
  lt_task t = {.name = db, .extra = strict ? "collation_compatible = \"strict\";" : NULL};
  CU_ASSERT_FATAL(lt_config(&e, &t) == 0);
  CU_ASSERT_EQUAL(e.task->collation_strict, strict);
  dmh_subtask *st;
  char *log = NULL;
  dmh_stage s = lt_run_logged(&e, &st, 60000, &log);
  CU_ASSERT_FATAL(st != NULL);
  char msg[600];
  if (s != DMH_STAGE_FINISHED && lt_first_error(st, msg, sizeof msg, NULL, 0, NULL))
    fprintf(stderr, "error: %s\n", msg);
  CU_ASSERT_EQUAL_FATAL(s, DMH_STAGE_FINISHED);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM `%s`.t1", db), 1);

  char v[256], ran[2048];
  const char *want = strict ? src_coll : tgt_coll;
  /* the database without a charset: the source's server collation, or (loose) the target's */
  tc_db(db, v, sizeof v);
  CU_ASSERT(tc_eq(v, want, "database"));
  /* ... and the table without one, which takes its database's */
  tc_table(db, "t2", v, sizeof v);
  CU_ASSERT(tc_eq(v, want, "t2"));
  tc_column(db, "t2", "c", v, sizeof v);
  CU_ASSERT(tc_eq(v, want, "t2.c"));
  /* a charset named without a collation: the source's default of it, written in when strict */
  tc_table(db, "t1", v, sizeof v);
  CU_ASSERT(tc_eq(v, "utf8mb4_general_ci", "t1"));
  tc_column(db, "t1", "a", v, sizeof v);
  CU_ASSERT(tc_eq(v, "latin1_swedish_ci", "t1.a"));
  tc_ran(db, "t1", ran, sizeof ran);
  CU_ASSERT_FATAL(ran[0] != '\0');
  if (strict) {
    CU_ASSERT(lt_has(ran, "CHARACTER SET latin1 COLLATE latin1_swedish_ci DEFAULT NULL"));
    CU_ASSERT(lt_has(ran, "DEFAULT CHARSET=utf8mb4 COLLATE utf8mb4_general_ci"));
    CU_ASSERT(lt_has(log, "load: collation_compatible strict: "));
  } else {
    CU_ASSERT(lt_lacks(ran, "COLLATE"));
    CU_ASSERT(lt_lacks(log, "collation_compatible"));
  }
  free(log);
  dmh_subtask_destroy(st);
  lt_teardown(&e);
}

static void test_load_loose(void) {
  tc_load("tc_load_loose", false);
}

static void test_load_strict(void) {
  tc_load("tc_load_strict", true);
}

/* The sync: the source's CREATE DATABASE (no charset) and CREATE TABLEs, replayed. */
static void tc_sync(const char *db, bool strict) {
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  char bal[128];
  snprintf(bal, sizeof bal, "do-dbs = [\"%s\"];", db);
  CU_ASSERT_FATAL(ts_config_bal(&e, db, bal, strict ? "collation_compatible = \"strict\";" : NULL,
                                NULL, NULL) == 0);
  dmh_subtask *st = ts_start(&e);
  CU_ASSERT_FATAL(st != NULL && dmh_subtask_stage(st) == DMH_STAGE_RUNNING);
  CU_ASSERT_FATAL(lt_exec(src, "CREATE DATABASE `%s`", db) == 0);
  CU_ASSERT_FATAL(lt_exec(src,
                          "CREATE TABLE `%s`.t1 (id INT PRIMARY KEY, a VARCHAR(10) CHARACTER SET "
                          "latin1, b VARCHAR(10)) DEFAULT CHARSET=utf8mb4",
                          db) == 0);
  CU_ASSERT_FATAL(lt_exec(src, "CREATE TABLE `%s`.t2 (id INT PRIMARY KEY, c VARCHAR(10))", db) ==
                  0);
  CU_ASSERT_FATAL(lt_exec(src, "INSERT INTO `%s`.t1 VALUES (1, 'x', 'y')", db) == 0);
  CU_ASSERT_FATAL(ts_catch_up(db, 30000));
  CU_ASSERT(ts_clean_run(st));
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM `%s`.t1", db), 1);

  char v[256], ran[2048];
  /* the event's session carries the source's collation_server: the source's either way */
  tc_db(db, v, sizeof v);
  CU_ASSERT(tc_eq(v, src_coll, "database"));
  tc_table(db, "t2", v, sizeof v);
  CU_ASSERT(tc_eq(v, src_coll, "t2"));
  tc_table(db, "t1", v, sizeof v);
  CU_ASSERT(tc_eq(v, "utf8mb4_general_ci", "t1"));
  tc_column(db, "t1", "a", v, sizeof v);
  CU_ASSERT(tc_eq(v, "latin1_swedish_ci", "t1.a"));
  tc_ran(db, "t1", ran, sizeof ran);
  CU_ASSERT_FATAL(ran[0] != '\0');
  char cdb[256];
  tc_value(dst, cdb, sizeof cdb,
           "SELECT CONVERT(argument USING utf8mb4) FROM mysql.general_log WHERE command_type = "
           "'Query' AND argument LIKE 'CREATE DATABASE IF NOT EXISTS `%s`%%' ORDER BY event_time "
           "DESC LIMIT 1",
           db);
  CU_ASSERT_FATAL(cdb[0] != '\0');
  if (strict) {
    CU_ASSERT(lt_has(ran, "CHARACTER SET latin1 COLLATE latin1_swedish_ci, b VARCHAR(10)"));
    CU_ASSERT(lt_has(ran, "DEFAULT CHARSET=utf8mb4 COLLATE utf8mb4_general_ci"));
    char want[128];
    snprintf(want, sizeof want, "`%s` COLLATE %s", db, src_coll);
    CU_ASSERT(lt_has(cdb, want));
  } else {
    CU_ASSERT(lt_lacks(ran, "COLLATE"));
    CU_ASSERT(lt_lacks(cdb, "COLLATE"));
  }
  ts_stop(st);
  lt_teardown(&e);
}

static void test_sync_loose(void) {
  tc_sync("tc_sync_loose", false);
}

static void test_sync_strict(void) {
  tc_sync("tc_sync_strict", true);
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"the source's collations", test_source_set},
      {"load, loose: the target's collations (the precondition)", test_load_loose},
      {"load, strict: the source's collations", test_load_strict},
      {"sync, loose: the DDL as written", test_sync_loose},
      {"sync, strict: the source's collations written in", test_sync_strict},
  };
  return dmh_cunit_run("sync_collation", suite_init, suite_clean, tests,
                       sizeof tests / sizeof tests[0]);
}

/*
 * Names whose escaped file names are too long (issue 9, item 7), dump -> load against the real
 * servers (CTest fixture mariadb). Before the fix the dump named a file `<db>.<table>.000000.sql`
 * whatever the length: a 64-character schema and table full of `.`, `@`, `/` (5 bytes each when
 * escaped) and multibyte characters made a name over NAME_MAX, open() failed with ENAMETOOLONG,
 * and the error was DM_ERR_IO, resumable: auto-resume took the source's read lock again and
 * again. Now such a part is shortened (prefix + `@~` + hash), the load maps it back through the
 * schema files' statements, and the tables come out equal to the source, row by row.
 */
#include <CUnit/Basic.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cunit_run.h"
#include "dmhost/dump_format.h"
#include "dmhost/error.h"
#include "load_test_util.h"
#include "testdb.h"

/* 64 characters each (MariaDB's most): 4 + 30 x 2, and 1 + 31 x 2 + 1. (The server's own file
 * names escape them too, as @002e and @0p..: more `.` would not fit there.) */
#define LT_X2(s) s s
#define LT_X4(s) LT_X2(LT_X2(s))
#define LT_X8(s) LT_X2(LT_X4(s))
#define LT_X16(s) LT_X2(LT_X8(s))
#define LT_X30(s) LT_X16(s) LT_X8(s) LT_X4(s) LT_X2(s)
#define LT_DB "lt_n" LT_X30(".é")
#define LT_T31 LT_X30(".ü") ".ü"
#define LT_TA "t" LT_T31 "A"
#define LT_TB "t" LT_T31 "B"

static MYSQL *src, *dst;

static void lt_clean(void) {
  static const char *const dbs[] = {LT_DB}, *const tasks[] = {"lt_names"};
  lt_drop_all(dst, dbs, 1, tasks, 1);
}

static int suite_init(void) {
  src = lt_source();
  if (!src || lt_suite_open(&dst, lt_clean) != 0)
    return 1;
  static const char *const sql[] = {
      "SET NAMES utf8mb4",
      "CREATE TABLE `" LT_DB "`.`" LT_TA "` (id INT PRIMARY KEY, v VARCHAR(20))",
      "CREATE TABLE `" LT_DB "`.`" LT_TB "` (id INT PRIMARY KEY, v VARCHAR(20))",
      "CREATE TABLE `" LT_DB "`.plain (id INT PRIMARY KEY)",
      "INSERT INTO `" LT_DB "`.`" LT_TA "` SELECT seq, CONCAT('a', seq) FROM seq_1_to_500",
      "INSERT INTO `" LT_DB "`.`" LT_TB "` SELECT seq, CONCAT('b', seq) FROM seq_1_to_300",
      "INSERT INTO `" LT_DB "`.plain SELECT seq FROM seq_1_to_7",
  };
  if (lt_exec(src, "USE mysql") != 0 || testdb_recreate_db(src, LT_DB) != 0)
    return 1;
  for (size_t i = 0; i < sizeof sql / sizeof *sql; i++)
    if (testdb_exec(src, sql[i]) != 0)
      return 1;
  return 0;
}

static int suite_clean(void) {
  if (src)
    lt_exec(src, "DROP DATABASE IF EXISTS `" LT_DB "`");
  testdb_close(src);
  src = NULL;
  return lt_suite_close(&dst, lt_clean);
}

/* The longest file name in dir, and how many hold a shortened part. */
static size_t lt_longest(const char *dir, int *shortened) {
  DIR *d = opendir(dir);
  size_t most = 0;
  *shortened = 0;
  struct dirent *e;
  while (d && (e = readdir(d)) != NULL) {
    size_t n = strlen(e->d_name);
    most = n > most ? n : most;
    *shortened += strstr(e->d_name, DM_DUMP_NAME_SHORT_MARK) != NULL;
  }
  if (d)
    closedir(d);
  return most;
}

static void test_long_names(void) {
  /* The precondition: escaped, these names make file names over NAME_MAX (255). */
  CU_ASSERT_EQUAL_FATAL(strlen(LT_DB), 4 + 30 * 3);
  CU_ASSERT_EQUAL_FATAL(strlen(LT_TA), 1 + 31 * 3 + 1);
  size_t escaped_db = 4 + 30 * (5 + 2), escaped_t = 1 + 31 * (5 + 2) + 1;
  CU_ASSERT_FATAL(escaped_db + 1 + escaped_t + strlen(".000000.sql") > 255);

  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  lt_task t = {.name = "lt_names",
               .mode = "full",
               .instance = "block-allow-list = \"only\";",
               .extra = "block-allow-list = { only = { do-dbs = [\"" LT_DB "\"]; }; };",
               .load = "pool-size = 2;"};
  CU_ASSERT_FATAL(lt_config(&e, &t) == 0);
  dmh_subtask *st;
  dmh_stage s = lt_run(&e, &st, 120000);
  char msg[1200];
  bool resumable;
  if (s != DMH_STAGE_FINISHED && lt_first_error(st, msg, sizeof msg, NULL, 0, &resumable))
    fprintf(stderr, "error: %s (resumable %d)\n", msg, resumable);
  CU_ASSERT_EQUAL(s, DMH_STAGE_FINISHED);

  char dump[400];
  snprintf(dump, sizeof dump, "%s/dump", e.work);
  int shortened;
  size_t most = lt_longest(dump, &shortened);
  fprintf(stderr, "longest dump file name: %zu bytes; %d shortened\n", most, shortened);
  CU_ASSERT(most <= 255);
  /* the schema-create file, 3 schema files, 3 data files */
  CU_ASSERT_EQUAL(shortened, 7);

  char diff[1024];
  int rc = testdb_compare_schemas(src, dst, LT_DB, LT_DB, diff, sizeof diff);
  if (rc != 0)
    fprintf(stderr, "%s\n", diff);
  CU_ASSERT_EQUAL(rc, 0);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM `" LT_DB "`.`" LT_TA "`"), 500);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM `" LT_DB "`.`" LT_TB "` WHERE v LIKE 'b%%'"),
                  300);
  dmh_subtask_destroy(st);
  lt_teardown(&e);
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"names over NAME_MAX when escaped", test_long_names},
  };
  return dmh_cunit_run("load_names", suite_init, suite_clean, tests,
                       sizeof tests / sizeof tests[0]);
}

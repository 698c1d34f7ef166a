/*
 * Issue 23, DM's mydumper `where` (docs/dump.md, "where"): mode full (real dump and load) with a
 * condition on the rows, ANDed with every chunk's key range (chunk-rows small, so a table is many
 * chunks, and one table without a key, one chunk): the target holds exactly the source's rows that
 * match, compared cell by cell. A condition that could end the chunk's own, read other tables or
 * files, or run more statements is refused when the task starts, and nothing is dumped.
 */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <string.h>

#include "cunit_run.h"
#include "dmhost/error.h"
#include "load_test_util.h"
#include "testdb.h"

#define LW_DB "lt_where"
#define LW_WANT "lt_where_want"

static MYSQL *src, *dst;

static int suite_init(void) {
  src = lt_source();
  dst = lt_target();
  if (!src || !dst)
    return 1;
  lt_exec(dst, "DROP DATABASE IF EXISTS " LW_DB);
  lt_exec(src, "DROP DATABASE IF EXISTS " LW_WANT);
  static const char *const sql[] = {
      "USE " LW_DB, /* seq_1_to_N tables need a current database */
      "CREATE TABLE " LW_DB ".k (id INT PRIMARY KEY, grp INT, v VARCHAR(20))",
      "INSERT INTO " LW_DB ".k SELECT seq, seq % 3, CONCAT('k', seq) FROM seq_1_to_5000",
      "CREATE TABLE " LW_DB ".nokey (grp INT, v VARCHAR(20))",
      "INSERT INTO " LW_DB ".nokey SELECT seq % 3, CONCAT('n', seq) FROM seq_1_to_300",
      /* what the target must hold: the same tables with the matching rows only */
      "CREATE DATABASE " LW_WANT,
      "CREATE TABLE " LW_WANT ".k SELECT * FROM " LW_DB ".k WHERE (grp = 1 OR v = 'k3')",
      "ALTER TABLE " LW_WANT ".k ADD PRIMARY KEY (id)",
      "CREATE TABLE " LW_WANT ".nokey SELECT * FROM " LW_DB ".nokey WHERE (grp = 1 OR v = 'k3')",
  };
  if (testdb_recreate_db(src, LW_DB) != 0)
    return 1;
  for (size_t i = 0; i < sizeof sql / sizeof *sql; i++)
    if (lt_exec(src, "%s", sql[i]) != 0)
      return 1;
  return 0;
}

static int suite_clean(void) {
  lt_exec(dst, "DROP DATABASE IF EXISTS " LW_DB);
  lt_exec(src, "DROP DATABASE IF EXISTS " LW_DB);
  lt_exec(src, "DROP DATABASE IF EXISTS " LW_WANT);
  lt_drop_checkpoint(dst, "lt_where");
  testdb_close(src);
  testdb_close(dst);
  return 0;
}

static int lw_config(lt_env *e, const char *where) {
  char extra[512];
  snprintf(extra, sizeof extra,
           "block-allow-list = { only = { do-dbs = [\"" LW_DB "\"]; }; };\n"
           "dump = { chunk-rows = 500; where = \"%s\"; };",
           where);
  lt_task t = {.name = "lt_where",
               .mode = "full",
               .instance = "block-allow-list = \"only\";",
               .extra = extra};
  return lt_config(e, &t);
}

static void test_where_rows(void) {
  lt_env e;
  dmh_subtask *st = NULL;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  CU_ASSERT_FATAL(lw_config(&e, "grp = 1 OR v = 'k3'") == 0);
  CU_ASSERT_EQUAL_FATAL(lt_run(&e, &st, 120000), DMH_STAGE_FINISHED);
  /* the precondition: the condition keeps a part of each table, and k was dumped in chunks */
  CU_ASSERT_EQUAL(lt_count(src, "SELECT COUNT(*) FROM " LW_WANT ".k"), 1668);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM " LW_DB ".k"), 1668);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM " LW_DB ".nokey"), 100);
  char diff[512] = "";
  int rc = testdb_compare_tables(src, dst, LW_WANT, LW_DB, "k", diff, sizeof diff);
  if (rc != 0)
    fprintf(stderr, "k: %s\n", diff);
  CU_ASSERT_EQUAL(rc, 0);
  dmh_subtask_destroy(st);
  lt_teardown(&e);
}

/* Each is refused at the start, naming why; nothing reaches the target. */
static void test_where_refused(void) {
  static const char *const bad[] = {
      "0) UNION SELECT user, password, 1 FROM mysql.user -- ",
      "1 = 1) OR (1 = 1",
      "id > 0; DROP TABLE " LW_DB ".k",
      "id IN (SELECT id FROM other.secret)",
      "v = LOAD_FILE('/etc/passwd')",
      "id > 0 /* comment */",
      "v = 'not closed",
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    lt_exec(dst, "DROP DATABASE IF EXISTS " LW_DB);
    lt_drop_checkpoint(dst, "lt_where");
    lt_env e;
    CU_ASSERT_FATAL(lt_init(&e) == 0);
    char where[256];
    /* the libconfig string: a quote in it escaped */
    size_t o = 0;
    for (const char *p = bad[i]; *p && o + 2 < sizeof where; p++) {
      if (*p == '"' || *p == '\\')
        where[o++] = '\\';
      where[o++] = *p;
    }
    where[o] = '\0';
    CU_ASSERT_FATAL(lw_config(&e, where) == 0);
    dmh_subtask *st = lt_subtask(&e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(st);
    dm_error err = {0};
    CU_ASSERT_NOT_EQUAL(dmh_subtask_start(st, &err), 0);
    CU_ASSERT_EQUAL(err.code, DM_ERR_CONFIG_INVALID);
    if (!strstr(err.message, "setting `where` must be a condition"))
      fprintf(stderr, "case %zu: %s\n", i, err.message);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "setting `where` must be a condition"));
    CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE "
                                  "SCHEMA_NAME = '" LW_DB "'"),
                    0);
    dmh_subtask_destroy(st);
    lt_teardown(&e);
  }
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"DM's where: only the matching rows, in every chunk", test_where_rows},
      {"a where that reaches beyond the row is refused", test_where_refused},
  };
  return dmh_cunit_run("load_where", suite_init, suite_clean, tests,
                       sizeof tests / sizeof tests[0]);
}

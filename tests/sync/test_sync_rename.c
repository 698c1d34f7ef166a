/*
 * RENAME TABLE checked on both sides (issue 12), against the real pair (CTest fixture mariadb): a
 * task in mode incremental, each part of a RENAME judged by where the table it moves comes from
 * and where it ends (docs/sync.md, "RENAME TABLE").
 *
 * - gh-ost's cut-over, `RENAME TABLE t TO _t_del, _t_gho TO t`, with online-ddl off, under a
 *   block-allow list narrowed to `t` (so _t_gho and _t_del are left out): the target keeps `t` and its rows, and the rows
 *   written to the new `t` after the cut-over reach it. Regression: each part was judged by its
 *   old name alone, so `t TO _t_del` ran on the target (t gone there) and `_t_gho TO t` was
 *   skipped; the rows after the cut-over then found no table.
 * - a swap of two replicated tables through a third name, routed: applied, every part, and the
 *   rows written after it land in the swapped tables.
 * - a table brought into the replicated set from outside (`RENAME x TO t`, x left out), in one
 *   statement with a part that could be applied: the task pauses with DM_ERR_SYNC_RENAME_INTO
 *   naming both tables, and nothing of the statement ran on the target.
 * - a table moved out of the set (`RENAME t TO gone`, gone left out): skipped, the target keeps
 *   `t`; a rename of two tables both left out: skipped.
 * - online-ddl on (issue 22): gh-ost's cut-over with no ALTER recorded for its ghost pauses with
 *   DM_ERR_SYNC_GHOST_NO_RECORD, and one whose trash side matches no rule with
 *   DM_ERR_CONFIG_ONLINE_DDL_RULES; nothing of either ran. The same RENAME in a schema the task
 *   leaves out is not judged: the task goes on.
 */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cunit_run.h"
#include "dmhost/error.h"
#include "sync_test_util.h"
#include "testdb.h"

static MYSQL *src, *dst;

#define DB "ts_ren"
#define DB2 "ts_ren2"
#define DB2_ROUTED "ts_ren2_routed"

static void tsn_drop(void) {
  static const char *const dbs[] = {DB, DB2, DB2_ROUTED};
  for (size_t i = 0; i < sizeof dbs / sizeof *dbs; i++) {
    lt_exec(src, "DROP DATABASE IF EXISTS %s", dbs[i]);
    lt_exec(dst, "DROP DATABASE IF EXISTS %s", dbs[i]);
  }
}

static int suite_init(void) {
  if (ts_suite_open(&src, &dst) != 0 || lt_exec(src, "USE mysql") != 0) /* for seq_1_to_N */
    return -1;
  tsn_drop();
  return 0;
}

static int suite_clean(void) {
  if (src && dst)
    tsn_drop();
  ts_suite_close(&src, &dst);
  return 0;
}

static long long tsn_tables(MYSQL *m, const char *db, const char *table) {
  return lt_count(m,
                  "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = '%s' AND "
                  "TABLE_NAME = '%s'",
                  db, table);
}

/* The table on the target equal to the source's, row by row. */
static bool tsn_same(const char *db_src, const char *db_dst, const char *table) {
  char diff[1024] = "";
  int rc = testdb_compare_tables(src, dst, db_src, db_dst, table, diff, sizeof diff);
  if (rc != 0)
    fprintf(stderr, "%s.%s vs %s.%s: %s\n", db_src, table, db_dst, table, diff);
  return rc == 0;
}

/* Runs the statements on the source. */
static void tsn_run(const char *const *sql, size_t n) {
  for (size_t i = 0; i < n; i++)
    CU_ASSERT(lt_exec(src, "%s", sql[i]) == 0);
}

typedef struct tsn_ctx {
  lt_env *e;
  dmh_subtask *st;
  const char *const *sql;
  size_t n;
  bool caught_up;
} tsn_ctx;

/* The statements, then waits until the task applied them (under lt_capture_stderr). */
static void tsn_apply(void *arg) {
  tsn_ctx *c = arg;
  tsn_run(c->sql, c->n);
  c->caught_up = ts_catch_up("ts_ren", 30000);
}

/* Task ts_ren in mode incremental, the block-allow list narrowed to the tables of DB whose names
 * match `tables` (a DM pattern), with `extra` settings (may be NULL), started. */
static dmh_subtask *tsn_start(lt_env *e, const char *tables, const char *extra) {
  char bal[256];
  snprintf(bal, sizeof bal,
           "do-dbs = [\"" DB "\"]; do-tables = ( { db-name = \"" DB "\"; tbl-name = \"%s\"; } );",
           tables);
  CU_ASSERT_FATAL(lt_init(e) == 0);
  CU_ASSERT_FATAL(ts_config_bal(e, "ts_ren", bal, extra, NULL, NULL) == 0);
  dmh_subtask *st = ts_start(e);
  CU_ASSERT_FATAL(st != NULL && dmh_subtask_stage(st) == DMH_STAGE_RUNNING);
  return st;
}

static void test_ghost_cut_over(void) {
  lt_env e;
  /* online-ddl off: the rules of docs/sync.md (with it on, the default, a cut-over without a
   * recorded ALTER is DM_ERR_SYNC_GHOST_NO_RECORD: tests/shard/online_*.sh) */
  dmh_subtask *st = tsn_start(&e, "t", "online-ddl = false;\n");
  /* the rows before: t through the binlog */
  static const char *const before[] = {
      "CREATE DATABASE " DB,
      "CREATE TABLE " DB ".t (id INT PRIMARY KEY, v VARCHAR(20))",
      "INSERT INTO " DB ".t SELECT seq, CONCAT('v', seq) FROM seq_1_to_300",
  };
  tsn_run(before, sizeof before / sizeof *before);
  CU_ASSERT_FATAL(ts_catch_up("ts_ren", 30000));
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM " DB ".t"), 300);
  /* gh-ost: the ghost table, the copy, a change applied to both, the cut-over, then rows */
  static const char *const ghost[] = {
      "CREATE TABLE " DB "._t_gho LIKE " DB ".t",
      "CREATE TABLE " DB "._t_ghc (id INT PRIMARY KEY, hint VARCHAR(64))",
      "INSERT INTO " DB "._t_gho SELECT * FROM " DB ".t",
      "UPDATE " DB ".t SET v = 'during' WHERE id <= 10",
      "UPDATE " DB "._t_gho SET v = 'during' WHERE id <= 10",
      "RENAME TABLE " DB ".t TO " DB "._t_del, " DB "._t_gho TO " DB ".t",
      "INSERT INTO " DB ".t SELECT seq, CONCAT('after', seq) FROM seq_301_to_400",
      "UPDATE " DB ".t SET v = 'moved' WHERE id BETWEEN 11 AND 20",
      "DELETE FROM " DB ".t WHERE id BETWEEN 21 AND 25",
      "DROP TABLE " DB "._t_del, " DB "._t_ghc",
  };
  tsn_ctx c = {.e = &e, .st = st, .sql = ghost, .n = sizeof ghost / sizeof *ghost};
  char *log = lt_capture_stderr(tsn_apply, &c);
  CU_ASSERT(c.caught_up);
  CU_ASSERT_EQUAL(dmh_subtask_stage(st), DMH_STAGE_RUNNING);
  /* the precondition: the source's t is the former ghost, with the rows after the cut-over */
  CU_ASSERT_EQUAL(lt_count(src, "SELECT COUNT(*) FROM " DB ".t"), 395);
  CU_ASSERT_EQUAL(tsn_tables(src, DB, "_t_del"), 0);
  CU_ASSERT_EQUAL(tsn_tables(dst, DB, "t"), 1);
  CU_ASSERT_EQUAL(tsn_tables(dst, DB, "_t_del"), 0);
  CU_ASSERT_EQUAL(tsn_tables(dst, DB, "_t_gho"), 0);
  CU_ASSERT(tsn_same(DB, DB, "t"));
  CU_ASSERT(lt_has(log, "swaps `" DB "`.`_t_gho` in for `" DB "`.`t`"));
  free(log);
  ts_stop(st);
  lt_teardown(&e);
}

static void test_swap_routed(void) {
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  CU_ASSERT_FATAL(ts_config(&e, "ts_ren", DB2,
                            "routes = { r = { schema-pattern = \"" DB2
                            "\"; target-schema = \"" DB2_ROUTED "\"; }; };\n",
                            NULL) == 0);
  dmh_subtask *st = ts_start(&e);
  CU_ASSERT_FATAL(st != NULL && dmh_subtask_stage(st) == DMH_STAGE_RUNNING);
  static const char *const sql[] = {
      "CREATE DATABASE " DB2,
      "CREATE TABLE " DB2 ".a (id INT PRIMARY KEY, v INT)",
      "CREATE TABLE " DB2 ".b (id INT PRIMARY KEY, v INT, w INT)",
      "INSERT INTO " DB2 ".a SELECT seq, seq FROM seq_1_to_50",
      "INSERT INTO " DB2 ".b SELECT seq, -seq, seq FROM seq_1_to_70",
      "RENAME TABLE " DB2 ".a TO " DB2 ".tmp, " DB2 ".b TO " DB2 ".a, " DB2 ".tmp TO " DB2 ".b",
      "INSERT INTO " DB2 ".a VALUES (1000, 1, 2)",
      "INSERT INTO " DB2 ".b VALUES (1000, 3)",
  };
  tsn_run(sql, sizeof sql / sizeof *sql);
  CU_ASSERT(ts_catch_up("ts_ren", 30000));
  CU_ASSERT_EQUAL(dmh_subtask_stage(st), DMH_STAGE_RUNNING);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM " DB2_ROUTED ".a"), 71);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM " DB2_ROUTED ".b"), 51);
  CU_ASSERT_EQUAL(tsn_tables(dst, DB2_ROUTED, "tmp"), 0);
  CU_ASSERT(tsn_same(DB2, DB2_ROUTED, "a"));
  CU_ASSERT(tsn_same(DB2, DB2_ROUTED, "b"));
  ts_stop(st);
  lt_teardown(&e);
}

static void test_into_out_neither(void) {
  lt_exec(src, "DROP DATABASE IF EXISTS " DB);
  lt_exec(dst, "DROP DATABASE IF EXISTS " DB);
  lt_env e;
  dmh_subtask *st = tsn_start(&e, "~^(t|u|u2)$", NULL);
  static const char *const sql[] = {
      "CREATE DATABASE " DB,
      "CREATE TABLE " DB ".t (id INT PRIMARY KEY)",
      "INSERT INTO " DB ".t SELECT seq FROM seq_1_to_20",
      "CREATE TABLE " DB ".x (id INT PRIMARY KEY)",
      "CREATE TABLE " DB ".y (id INT PRIMARY KEY)",
      "INSERT INTO " DB ".x SELECT seq FROM seq_1_to_5",
      /* out of the set: skipped, the target keeps t */
      "RENAME TABLE " DB ".t TO " DB ".gone",
      /* neither side replicated: skipped */
      "RENAME TABLE " DB ".y TO " DB ".y2",
      "CREATE TABLE " DB ".u (id INT PRIMARY KEY)",
      "INSERT INTO " DB ".u SELECT seq FROM seq_1_to_3",
  };
  tsn_run(sql, sizeof sql / sizeof *sql);
  CU_ASSERT_FATAL(ts_catch_up("ts_ren", 30000));
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM " DB ".t"), 20);
  CU_ASSERT_EQUAL(tsn_tables(dst, DB, "gone"), 0);
  CU_ASSERT_EQUAL(tsn_tables(dst, DB, "y2"), 0);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM " DB ".u"), 3);
  /* into the set from outside, next to a part that alone would run: nothing runs, the task
   * pauses naming both tables */
  CU_ASSERT(lt_exec(src, "RENAME TABLE " DB ".u TO " DB ".u2, " DB ".x TO " DB ".t") == 0);
  double end = lt_now() + 30;
  while (dmh_subtask_stage(st) == DMH_STAGE_RUNNING && lt_now() < end)
    lt_sleep_ms(50);
  CU_ASSERT_EQUAL(dmh_subtask_stage(st), DMH_STAGE_PAUSED);
  char msg[1200] = "", raw[512] = "";
  bool resumable = true;
  CU_ASSERT_EQUAL(lt_first_error(st, msg, sizeof msg, raw, sizeof raw, &resumable),
                  DM_ERR_SYNC_RENAME_INTO);
  CU_ASSERT_FALSE(resumable);
  fprintf(stderr, "into the set: %s\n", msg);
  CU_ASSERT(lt_has(msg, "brings `" DB "`.`x`, which the block-allow list leaves out, into the "
                        "replicated set as `" DB "`.`t`"));
  CU_ASSERT(lt_has(msg, "nothing of the statement ran"));
  /* never half-applied: u was not renamed on the target */
  CU_ASSERT_EQUAL(tsn_tables(dst, DB, "u"), 1);
  CU_ASSERT_EQUAL(tsn_tables(dst, DB, "u2"), 0);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM " DB ".t"), 20);
  ts_stop(st);
  lt_teardown(&e);
}

/* online-ddl on (the default; issue 22): a cut-over-shaped RENAME the task must refuse, before any
 * of it runs. `rename` runs after t (20 rows) and a ghost _t_gho made LIKE t. */
static void tsn_online_refused(const char *rename, int code, const char *want) {
  lt_exec(src, "DROP DATABASE IF EXISTS " DB);
  lt_exec(dst, "DROP DATABASE IF EXISTS " DB);
  lt_env e;
  dmh_subtask *st = tsn_start(&e, "~^(t|_t_bak)$", NULL);
  static const char *const sql[] = {
      "CREATE DATABASE " DB,
      "CREATE TABLE " DB ".t (id INT PRIMARY KEY)",
      "INSERT INTO " DB ".t SELECT seq FROM seq_1_to_20",
      "CREATE TABLE " DB "._t_gho LIKE " DB ".t",
      "INSERT INTO " DB "._t_gho SELECT * FROM " DB ".t",
  };
  tsn_run(sql, sizeof sql / sizeof *sql);
  CU_ASSERT_FATAL(ts_catch_up("ts_ren", 30000));
  CU_ASSERT_EQUAL(tsn_tables(dst, DB, "_t_gho"), 0); /* a ghost: neither created nor filled */
  CU_ASSERT(lt_exec(src, "%s", rename) == 0);
  double end = lt_now() + 30;
  while (dmh_subtask_stage(st) == DMH_STAGE_RUNNING && lt_now() < end)
    lt_sleep_ms(50);
  CU_ASSERT_EQUAL(dmh_subtask_stage(st), DMH_STAGE_PAUSED);
  char msg[1200] = "", raw[512] = "";
  bool resumable = true;
  CU_ASSERT_EQUAL(lt_first_error(st, msg, sizeof msg, raw, sizeof raw, &resumable), code);
  CU_ASSERT_FALSE(resumable);
  fprintf(stderr, "refused: %s\n", msg);
  CU_ASSERT(lt_has(msg, want));
  /* nothing of it ran: t is still t on the target, with its rows */
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM " DB ".t"), 20);
  CU_ASSERT_EQUAL(tsn_tables(dst, DB, "_t_bak"), 0);
  ts_stop(st);
  lt_teardown(&e);
}

/* gh-ost's cut-over with no ALTER recorded for the ghost (DM's 36046) */
static void test_online_no_record(void) {
  tsn_online_refused("RENAME TABLE " DB ".t TO " DB "._t_del, " DB "._t_gho TO " DB ".t",
                     DM_ERR_SYNC_GHOST_NO_RECORD,
                     "swaps ghost table `" DB "`.`_t_gho` in for `" DB "`.`t`");
}

/* a cut-over whose trash side matches no rule (DM's ErrConfigOnlineDDLMistakeRegex) */
static void test_online_rules_miss(void) {
  tsn_online_refused("RENAME TABLE " DB ".t TO " DB "._t_bak, " DB "._t_gho TO " DB ".t",
                     DM_ERR_CONFIG_ONLINE_DDL_RULES,
                     "`" DB "`.`_t_bak` matches no rule of trash-table-rules");
}

/* a cut-over-shaped RENAME the rules would refuse (trash side matches no rule), in a schema the
 * task does not replicate: another application's business on a shared source, never judged by
 * this task's rules (CI once paused a task with 11012 on another test's half cut-over) */
static void test_online_out_of_scope(void) {
  tsn_drop();
  lt_env e;
  dmh_subtask *st = tsn_start(&e, "t", NULL);
  static const char *const sql[] = {
      "CREATE DATABASE " DB,
      "CREATE TABLE " DB ".t (id INT PRIMARY KEY)",
      "INSERT INTO " DB ".t SELECT seq FROM seq_1_to_20",
      "CREATE DATABASE " DB2,
      "CREATE TABLE " DB2 ".t (id INT PRIMARY KEY)",
      "CREATE TABLE " DB2 "._t_gho LIKE " DB2 ".t",
      "RENAME TABLE " DB2 ".t TO " DB2 "._t_bak, " DB2 "._t_gho TO " DB2 ".t",
      "INSERT INTO " DB ".t SELECT seq FROM seq_21_to_30",
  };
  tsn_run(sql, sizeof sql / sizeof *sql);
  CU_ASSERT(ts_catch_up("ts_ren", 30000));
  CU_ASSERT_EQUAL(dmh_subtask_stage(st), DMH_STAGE_RUNNING);
  /* the precondition: the RENAME ran on the source */
  CU_ASSERT_EQUAL(tsn_tables(src, DB2, "_t_bak"), 1);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM " DB ".t"), 30);
  CU_ASSERT_EQUAL(tsn_tables(dst, DB2, "t"), 0);
  CU_ASSERT_EQUAL(tsn_tables(dst, DB2, "_t_bak"), 0);
  ts_stop(st);
  lt_teardown(&e);
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"gh-ost cut-over under a narrowed block-allow list keeps t", test_ghost_cut_over},
      {"swap of two replicated tables through a third, routed", test_swap_routed},
      {"out of the set, neither side, into the set (paused, nothing ran)", test_into_out_neither},
      {"online-ddl: a cut-over without a record (paused, nothing ran)", test_online_no_record},
      {"online-ddl: a cut-over the trash rules miss (paused, nothing ran)", test_online_rules_miss},
      {"online-ddl: a cut-over in a schema the task leaves out (not judged)",
       test_online_out_of_scope},
  };
  return dmh_cunit_run("sync_rename", suite_init, suite_clean, tests,
                       sizeof tests / sizeof tests[0]);
}

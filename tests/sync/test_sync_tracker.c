/*
 * Issue 12, the schema tracker (docs/sync.md), against the real pair; tests/crash/tracker.sh has
 * mode all with DDL and kill -9. Here:
 *   - mode incremental from a NO_LOG source: the tracker learns the table from the target (shadow
 *     table made with CREATE TABLE ... LIKE), follows an ALTER, and the rows (unsigned values
 *     above the signed range, ENUM by name, latin1 text) arrive equal;
 *   - NO_LOG and a table neither the tracker nor the target has: DM_ERR_SYNC_NO_SCHEMA;
 *   - FULL metadata, a shadow table that no longer matches the source: DM_ERR_SYNC_SCHEMA naming
 *     the column as the binlog and as the tracker have it;
 *   - NO_LOG and shards merged into a target table with a route's extract column (issue 22): the
 *     shadow learnt from the target has the column, the tracker's structure leaves it out;
 *   - binlog-schema (the unit's schema_op slot, ABI 1.2) on a paused subtask: list and get by the
 *     source's names, refused while Running; a column added on both sides outside the binlog stops
 *     the sync (DM_ERR_SYNC_SCHEMA) until update (from a CREATE, --from-source, --from-target)
 *     fixes the tracked structure; delete, and the table is learnt again from the target.
 * It sets binlog_row_metadata, a global of the shared source (RUN_SERIAL), restored after.
 */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <string.h>

#include "cunit_run.h"
#include "dmhost/error.h"
#include "dmhost/task_meta.h"
#include "sync_test_util.h"
#include "testdb.h"

static MYSQL *src, *dst;

static int suite_init(void) {
  return ts_suite_open(&src, &dst);
}

static int suite_clean(void) {
  lt_exec(src, "SET GLOBAL binlog_row_metadata = FULL");
  lt_exec(src, "DROP DATABASE IF EXISTS ts_trk");
  lt_exec(dst, "DROP DATABASE IF EXISTS ts_trk");
  ts_suite_close(&src, &dst);
  return 0;
}

/* The shadow schemas on the target holding `table` (information_schema). */
/* The prefix of this file's tracker's shadow schemas (every task here is ts_trk on lsrc): the
 * target is shared with the other tests (ctest -j2), whose trackers may shadow a table of the same
 * name (a fresh-clone CI altered another test's `w`). */
static const char *trk_prefix(void) {
  static char p[DM_TRACKER_PREFIX_LEN + 1];
  if (!p[0])
    CU_ASSERT_FATAL(dm_tracker_schema_prefix("ts_trk", "lsrc", p, sizeof p) == 0);
  return p;
}

static long long shadows_of(const char *table) {
  return lt_count(dst,
                  "SELECT COUNT(*) FROM information_schema.TABLES WHERE LEFT(TABLE_SCHEMA, %d) = "
                  "'%s' AND TABLE_NAME = '%s'",
                  DM_TRACKER_PREFIX_LEN, trk_prefix(), table);
}

/* Waits until the subtask leaves Running (an error) or timeout; its first error's code. */
static int wait_error(dmh_subtask *st, char *msg, size_t len, int timeout_ms) {
  for (double end = lt_now() + timeout_ms / 1000.0;
       lt_now() < end && dmh_subtask_stage(st) == DMH_STAGE_RUNNING; lt_sleep_ms(50))
    ;
  return lt_first_error(st, msg, len, NULL, 0, NULL);
}

/* Everything written is applied within timeout_ms, without an error. */
static void caught_up_clean(dmh_subtask *st, int timeout_ms) {
  bool caught = ts_catch_up("ts_trk", timeout_ms);
  char msg[1024] = "";
  int code = lt_first_error(st, msg, sizeof msg, NULL, 0, NULL);
  if (code)
    fprintf(stderr, "error %d: %s\n", code, msg);
  CU_ASSERT_EQUAL(code, 0);
  CU_ASSERT(caught);
}

static void fresh(void) {
  lt_exec(src, "DROP DATABASE IF EXISTS ts_trk");
  lt_exec(dst, "DROP DATABASE IF EXISTS ts_trk");
  CU_ASSERT_FATAL(lt_exec(src, "CREATE DATABASE ts_trk CHARACTER SET latin1") == 0);
  CU_ASSERT_FATAL(lt_exec(dst, "CREATE DATABASE ts_trk CHARACTER SET latin1") == 0);
}

/* The source at NO_LOG, a task in mode incremental from here on ts_trk, started. */
static dmh_subtask *start_no_log(lt_env *e) {
  CU_ASSERT_FATAL(lt_exec(src, "SET GLOBAL binlog_row_metadata = NO_LOG") == 0);
  CU_ASSERT_FATAL(lt_init(e) == 0);
  CU_ASSERT_FATAL(ts_config(e, "ts_trk", "ts_trk", NULL, NULL) == 0);
  dmh_subtask *st = ts_start(e);
  CU_ASSERT_FATAL(st != NULL);
  return st;
}

static void stop_no_log(lt_env *e, dmh_subtask *st) {
  ts_stop(st);
  lt_teardown(e);
  lt_exec(src, "SET GLOBAL binlog_row_metadata = FULL");
}

static const char T_DDL[] =
    "CREATE TABLE ts_trk.t (id INT UNSIGNED NOT NULL PRIMARY KEY, big BIGINT UNSIGNED, "
    "e ENUM('red','it''s','blue'), l VARCHAR(20), m VARCHAR(20) CHARACTER SET utf8mb4)";

static void test_incremental_no_log(void) {
  fresh();
  CU_ASSERT_FATAL(lt_exec(src, T_DDL) == 0);
  CU_ASSERT_FATAL(lt_exec(dst, T_DDL) == 0);
  lt_env e;
  dmh_subtask *st = start_no_log(&e);
  CU_ASSERT(lt_exec(src, "INSERT INTO ts_trk.t VALUES (4294967295, 18446744073709551615, "
                         "'it''s', CONCAT('caf', CHAR(233)), 'naïve ✓'), (1, 9223372036854775808, "
                         "'blue', NULL, '')") == 0);
  CU_ASSERT(lt_exec(src, "UPDATE ts_trk.t SET e = 'red', big = big - 1 WHERE id = 4294967295") ==
            0);
  CU_ASSERT(lt_exec(src, "ALTER TABLE ts_trk.t ADD COLUMN u SMALLINT UNSIGNED DEFAULT 65535 "
                         "AFTER id, DROP COLUMN l") == 0);
  CU_ASSERT(lt_exec(src, "INSERT INTO ts_trk.t (id, u, big, e, m) VALUES (7, 65000, 1, 'it''s', "
                         "'✓')") == 0);
  CU_ASSERT(lt_exec(src, "DELETE FROM ts_trk.t WHERE id = 1") == 0);
  caught_up_clean(st, 30000);
  /* the tracker learnt the table from the target: its shadow is there, with the ALTER done */
  CU_ASSERT_EQUAL(lt_count(dst,
                           "SELECT COUNT(*) FROM information_schema.COLUMNS c JOIN "
                           "information_schema.COLUMNS d USING (TABLE_SCHEMA, TABLE_NAME) "
                           "WHERE LEFT(c.TABLE_SCHEMA, %d) = '%s' AND c.TABLE_NAME = 't' "
                           "AND c.COLUMN_NAME = 'big' AND d.COLUMN_NAME = 'u'",
                           DM_TRACKER_PREFIX_LEN, trk_prefix()),
                  1);
  CU_ASSERT(ts_equal("ts_trk", "ts_trk"));
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM ts_trk.t WHERE id = 4294967295 AND big = "
                                "18446744073709551614 AND e = 'red'"),
                  1);
  stop_no_log(&e, st);
}

static void test_no_schema(void) {
  fresh();
  CU_ASSERT_FATAL(lt_exec(src, "CREATE TABLE ts_trk.nowhere (id INT PRIMARY KEY, v INT)") == 0);
  lt_env e;
  dmh_subtask *st = start_no_log(&e);
  CU_ASSERT(lt_exec(src, "INSERT INTO ts_trk.nowhere VALUES (1, 2)") == 0);
  char msg[1024] = "";
  CU_ASSERT_EQUAL(wait_error(st, msg, sizeof msg, 30000), DM_ERR_SYNC_NO_SCHEMA);
  CU_ASSERT(lt_has(msg, "`ts_trk`.`nowhere`"));
  CU_ASSERT(lt_has(msg, "binlog_row_metadata"));
  stop_no_log(&e, st);
}

static void test_full_mismatch(void) {
  fresh();
  CU_ASSERT_FATAL(lt_exec(src, "SET GLOBAL binlog_row_metadata = FULL") == 0);
  CU_ASSERT_FATAL(lt_exec(src, "CREATE TABLE ts_trk.w (id INT PRIMARY KEY, b INT)") == 0);
  lt_exec(dst, "DROP DATABASE ts_trk");
  lt_drop_checkpoint(dst, "ts_trk");
  lt_exec(dst, "DROP TABLE IF EXISTS dm_meta.`ts_trk_syncer_checkpoint`");
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  lt_task t = {.name = "ts_trk",
               .mode = "all",
               .instance = "block-allow-list = \"only\";",
               .extra = "block-allow-list = { only = { do-dbs = [\"ts_trk\"]; }; };\n",
               .sync = TS_SYNC};
  CU_ASSERT_FATAL(lt_config(&e, &t) == 0);
  dmh_subtask *st = lt_subtask(&e);
  dm_error err;
  CU_ASSERT_FATAL(st && dmh_subtask_start(st, &err) == 0);
  /* the dump seeds the tracker: wait for the shadow of w */
  for (double end = lt_now() + 60; lt_now() < end && shadows_of("w") == 0; lt_sleep_ms(50))
    ;
  CU_ASSERT_FATAL(shadows_of("w") == 1);
  CU_ASSERT_FATAL(ts_catch_up("ts_trk", 30000));
  /* a tracker that drifted from the source: its shadow's b is now c */
  char shadow[128] = "";
  CU_ASSERT_FATAL(testdb_query_value(dst, shadow, sizeof shadow,
                                     "SELECT TABLE_SCHEMA FROM information_schema.TABLES WHERE "
                                     "LEFT(TABLE_SCHEMA, %d) = '%s' AND TABLE_NAME = 'w'",
                                     DM_TRACKER_PREFIX_LEN, trk_prefix()) == 0);
  CU_ASSERT_FATAL(lt_exec(dst, "ALTER TABLE `%s`.w CHANGE b c INT", shadow) == 0);
  CU_ASSERT(lt_exec(src, "INSERT INTO ts_trk.w VALUES (1, 2)") == 0);
  char msg[1024] = "";
  CU_ASSERT_EQUAL(wait_error(st, msg, sizeof msg, 30000), DM_ERR_SYNC_SCHEMA);
  CU_ASSERT(lt_has(msg, "`b` in the binlog"));
  CU_ASSERT(lt_has(msg, "`c` in the tracker"));
  CU_ASSERT(lt_has(msg, shadow));
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM ts_trk.w"), 0); /* nothing applied */
  ts_stop(st);
  lt_teardown(&e);
}

/* Issue 22: a merged table with the route's extract column, from a NO_LOG source. The tracker
 * learns the shards from the target, whose table has the extract column the source lacks: before
 * the tracker left it out, the shadow had one column more than the binlog (DM_ERR_SYNC_SCHEMA). */
static void test_no_log_extract(void) {
  fresh();
  CU_ASSERT_FATAL(lt_exec(src, "CREATE TABLE ts_trk.o_1 (id INT PRIMARY KEY, v INT)") == 0);
  CU_ASSERT_FATAL(lt_exec(src, "CREATE TABLE ts_trk.o_2 (id INT PRIMARY KEY, v INT)") == 0);
  CU_ASSERT_FATAL(lt_exec(dst, "CREATE TABLE ts_trk.o (id INT, v INT, c_table VARCHAR(8) NOT "
                               "NULL, PRIMARY KEY (c_table, id))") == 0);
  CU_ASSERT_FATAL(lt_exec(src, "SET GLOBAL binlog_row_metadata = NO_LOG") == 0);
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  CU_ASSERT_FATAL(ts_config(&e, "ts_trk", "ts_trk",
                            "routes = { r = { schema-pattern = \"ts_trk\"; table-pattern = "
                            "\"o_?\"; target-schema = \"ts_trk\"; target-table = \"o\"; "
                            "extract-table = { table-regexp = \"o_(.*)\"; target-column = "
                            "\"c_table\"; }; }; };\n",
                            NULL) == 0);
  dmh_subtask *st = ts_start(&e);
  CU_ASSERT_FATAL(st != NULL);
  for (int t = 1; t <= 2; t++) {
    CU_ASSERT(lt_exec(src, "INSERT INTO ts_trk.o_%d VALUES (1, %d), (2, %d)", t, t, 10 * t) == 0);
    CU_ASSERT(lt_exec(src, "UPDATE ts_trk.o_%d SET v = v + 100 WHERE id = 1", t) == 0);
    CU_ASSERT(lt_exec(src, "DELETE FROM ts_trk.o_%d WHERE id = 2", t) == 0);
  }
  caught_up_clean(st, 30000);
  /* the precondition: learnt from the target (the shadow has the extract column) */
  CU_ASSERT_EQUAL(lt_count(dst,
                           "SELECT COUNT(*) FROM information_schema.COLUMNS WHERE "
                           "LEFT(TABLE_SCHEMA, %d) = '%s' AND TABLE_NAME = 'o_1' AND "
                           "COLUMN_NAME = 'c_table'",
                           DM_TRACKER_PREFIX_LEN, trk_prefix()),
                  1);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM ts_trk.o"), 2);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT v FROM ts_trk.o WHERE c_table = '1' AND id = 1"), 101);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT v FROM ts_trk.o WHERE c_table = '2' AND id = 1"), 102);
  stop_no_log(&e, st);
}

/* binlog-schema through dmh_subtask_schema_op: the items of the answer as one "a,b" string. */
static int schema_op(dmh_subtask *st, dm_schema_op_kind op, const char *db, const char *table,
                     dm_schema_from from, const char *sql, char *out, size_t len, dm_error *err) {
  dm_schema_req req = {
      .op = op, .from = from, .db = db, .table = table, .sql = sql, .flush = true, .sync = true};
  json_object *items = NULL;
  out[0] = '\0';
  int rc = dmh_subtask_schema_op(st, &req, &items, err);
  if (rc == 0) {
    size_t n = json_object_array_length(items), at = 0;
    for (size_t i = 0; i < n && at < len; i++)
      at += (size_t)snprintf(out + at, len - at, "%s%s", i ? "," : "",
                             json_object_get_string(json_object_array_get_idx(items, i)));
    json_object_put(items);
  } else {
    fprintf(stderr, "schema_op %d: [%d] %s\n", (int)op, err->code, err->message);
  }
  return rc;
}

/* A column added to ts_trk.s on both sides outside the binlog, then a row of it: the tracker
 * (NO_LOG) no longer matches the binlog and the sync stops with DM_ERR_SYNC_SCHEMA (Paused). */
static void hidden_column(dmh_subtask *st, const char *col, int id) {
  CU_ASSERT_FATAL(lt_exec_unlogged(src, "ALTER TABLE ts_trk.s ADD COLUMN %s INT", col) == 0);
  CU_ASSERT_FATAL(lt_exec(dst, "ALTER TABLE ts_trk.s ADD COLUMN %s INT", col) == 0);
  CU_ASSERT_FATAL(lt_exec(src, "INSERT INTO ts_trk.s (id, a, %s) VALUES (%d, %d, %d)", col, id, id,
                          10 * id) == 0);
  char msg[1024] = "";
  CU_ASSERT_EQUAL(wait_error(st, msg, sizeof msg, 60000), DM_ERR_SYNC_SCHEMA);
  CU_ASSERT_EQUAL(dmh_subtask_stage(st), DMH_STAGE_PAUSED);
}

static void resume_and_check(dmh_subtask *st) {
  dm_error err;
  CU_ASSERT_FATAL(dmh_subtask_resume(st, &err) == 0);
  caught_up_clean(st, 60000);
  CU_ASSERT(ts_equal("ts_trk", "ts_trk"));
}

static void test_binlog_schema(void) {
  fresh();
  CU_ASSERT_FATAL(lt_exec(src, "CREATE TABLE ts_trk.s (id INT PRIMARY KEY, a INT)") == 0);
  CU_ASSERT_FATAL(lt_exec(dst, "CREATE TABLE ts_trk.s (id INT PRIMARY KEY, a INT)") == 0);
  lt_env e;
  dmh_subtask *st = start_no_log(&e);
  CU_ASSERT(lt_exec(src, "INSERT INTO ts_trk.s VALUES (1, 1)") == 0);
  CU_ASSERT(lt_exec(src, "ALTER TABLE ts_trk.s ADD COLUMN b VARCHAR(10)") == 0);
  CU_ASSERT(lt_exec(src, "INSERT INTO ts_trk.s VALUES (2, 2, 'two')") == 0);
  CU_ASSERT_FATAL(ts_catch_up("ts_trk", 60000));
  char out[4096];
  dm_error err;
  /* DM's rule: only while Paused */
  CU_ASSERT_EQUAL(schema_op(st, DM_SCHEMA_LIST_SCHEMAS, "", "", 0, NULL, out, sizeof out, &err),
                  -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_SCHEMA_STAGE);
  CU_ASSERT(lt_has(err.message, "current stage is Running but not paused"));
  CU_ASSERT_FATAL(dmh_subtask_pause(st, &err) == 0);

  /* the source's names, not the shadows' */
  CU_ASSERT_FATAL(schema_op(st, DM_SCHEMA_LIST_SCHEMAS, "", "", 0, NULL, out, sizeof out, &err) ==
                  0);
  CU_ASSERT(lt_has(out, "ts_trk"));
  CU_ASSERT(strstr(out, "_dmt_") == NULL);
  CU_ASSERT_FATAL(
      schema_op(st, DM_SCHEMA_LIST_TABLES, "ts_trk", "", 0, NULL, out, sizeof out, &err) == 0);
  CU_ASSERT_STRING_EQUAL(out, "s");
  CU_ASSERT_EQUAL(
      schema_op(st, DM_SCHEMA_LIST_TABLES, "ts_trk_none", "", 0, NULL, out, sizeof out, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_NOT_FOUND);
  CU_ASSERT_FATAL(schema_op(st, DM_SCHEMA_GET, "ts_trk", "s", 0, NULL, out, sizeof out, &err) == 0);
  CU_ASSERT(lt_has(out, "CREATE TABLE `s`"));
  CU_ASSERT(lt_has(out, "`b` varchar(10)")); /* the ALTER the binlog had */
  CU_ASSERT_EQUAL(schema_op(st, DM_SCHEMA_GET, "ts_trk", "nope", 0, NULL, out, sizeof out, &err),
                  -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_NOT_FOUND);
  /* a statement that is not a CREATE TABLE: refused, the shadow unchanged */
  CU_ASSERT_EQUAL(schema_op(st, DM_SCHEMA_SET, "ts_trk", "s", DM_SCHEMA_FROM_SQL,
                            "DROP TABLE ts_trk.s", out, sizeof out, &err),
                  -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_SYNC_SCHEMA);
  CU_ASSERT_EQUAL(schema_op(st, DM_SCHEMA_SET, "ts_trk", "s", DM_SCHEMA_FROM_SQL,
                            "CREATE TABLE s (id INT PRIMARY KEY, a INT, b NOTATYPE)", out,
                            sizeof out, &err),
                  -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_SYNC_SCHEMA);
  CU_ASSERT_FATAL(schema_op(st, DM_SCHEMA_GET, "ts_trk", "s", 0, NULL, out, sizeof out, &err) == 0);
  CU_ASSERT(lt_has(out, "`b` varchar(10)"));
  resume_and_check(st);

  /* update from a CREATE (names of another table: replaced by db.table, as DM does) */
  hidden_column(st, "c", 3);
  CU_ASSERT_FATAL(schema_op(st, DM_SCHEMA_SET, "ts_trk", "s", DM_SCHEMA_FROM_SQL,
                            "CREATE TABLE other.x (id INT PRIMARY KEY, a INT, b VARCHAR(10), c "
                            "INT)",
                            out, sizeof out, &err) == 0);
  CU_ASSERT_FATAL(schema_op(st, DM_SCHEMA_GET, "ts_trk", "s", 0, NULL, out, sizeof out, &err) == 0);
  CU_ASSERT(lt_has(out, "CREATE TABLE `s`"));
  CU_ASSERT(lt_has(out, "`c` int"));
  resume_and_check(st);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT c FROM ts_trk.s WHERE id = 3"), 30);

  /* --from-source */
  hidden_column(st, "d", 4);
  CU_ASSERT_FATAL(schema_op(st, DM_SCHEMA_SET, "ts_trk", "s", DM_SCHEMA_FROM_UPSTREAM, NULL, out,
                            sizeof out, &err) == 0);
  resume_and_check(st);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT d FROM ts_trk.s WHERE id = 4"), 40);

  /* --from-target */
  hidden_column(st, "f", 5);
  CU_ASSERT_FATAL(schema_op(st, DM_SCHEMA_SET, "ts_trk", "s", DM_SCHEMA_FROM_DOWNSTREAM, NULL, out,
                            sizeof out, &err) == 0);
  CU_ASSERT_FATAL(schema_op(st, DM_SCHEMA_GET, "ts_trk", "s", 0, NULL, out, sizeof out, &err) == 0);
  CU_ASSERT(lt_has(out, "`f` int"));
  resume_and_check(st);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT f FROM ts_trk.s WHERE id = 5"), 50);

  /* delete: forgotten, then learnt again from the target when a row needs it */
  CU_ASSERT_FATAL(dmh_subtask_pause(st, &err) == 0);
  CU_ASSERT_FATAL(schema_op(st, DM_SCHEMA_REMOVE, "ts_trk", "s", 0, NULL, out, sizeof out, &err) ==
                  0);
  CU_ASSERT_EQUAL(shadows_of("s"), 0);
  CU_ASSERT_EQUAL(schema_op(st, DM_SCHEMA_GET, "ts_trk", "s", 0, NULL, out, sizeof out, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_NOT_FOUND);
  CU_ASSERT(lt_exec(src, "INSERT INTO ts_trk.s (id, a, f) VALUES (6, 6, 60)") == 0);
  resume_and_check(st);
  CU_ASSERT_EQUAL(shadows_of("s"), 1);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT f FROM ts_trk.s WHERE id = 6"), 60);
  stop_no_log(&e, st);
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"mode incremental, NO_LOG: learnt from the target, ALTER followed", test_incremental_no_log},
      {"NO_LOG, a table known nowhere: DM_ERR_SYNC_NO_SCHEMA", test_no_schema},
      {"FULL metadata against a drifted tracker: DM_ERR_SYNC_SCHEMA", test_full_mismatch},
      {"NO_LOG, a merged table with an extract column", test_no_log_extract},
      {"binlog-schema list/get/update/delete on a paused subtask", test_binlog_schema},
  };
  return dmh_cunit_run("sync_tracker", suite_init, suite_clean, tests,
                       sizeof tests / sizeof tests[0]);
}

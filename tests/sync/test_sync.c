/*
 * The sync unit against the real pair, mode incremental from a `meta` taken just before the
 * changes: every column type (tests/sql/all-types.sql) created, inserted, updated and deleted
 * through the binlog and compared cell by cell; tables of every key shape (primary key only,
 * primary + unique, composite, none) with key updates and many changes of one row inside a batch
 * (compaction); DDL mid-stream; routes and filters; GTID and file/position starts; a purged
 * binlog; a source without FULL row metadata; a DDL the target refuses, then skipped with a binlog
 * operator; a restart from the checkpoint with another worker count.
 */
#include <CUnit/Basic.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "binlog_ops.h"
#include "cunit_run.h"
#include "dmhost/error.h"
#include "dmhost/sdk.h"
#include "load_test_util.h"
#include "sync_test_util.h"
#include "testdb.h"

static MYSQL *src, *dst;

static int suite_init(void) {
  return ts_suite_open(&src, &dst);
}

static int suite_clean(void) {
  ts_suite_close(&src, &dst);
  return 0;
}

/* ---- every column type ---- */

static void test_sync_types(void) {
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  lt_exec(src, "DROP DATABASE IF EXISTS ts_types");
  lt_exec(dst, "DROP DATABASE IF EXISTS ts_types");
  CU_ASSERT_FATAL(ts_config(&e, "ts_types", "ts_types", NULL, NULL) == 0);
  dmh_subtask *st = ts_start(&e);
  CU_ASSERT_FATAL(st != NULL);
  CU_ASSERT_EQUAL(dmh_subtask_stage(st), DMH_STAGE_RUNNING);
  /* CREATE DATABASE, CREATE TABLEs and the rows all come through the binlog */
  CU_ASSERT_FATAL(testdb_load_all_types(src, "ts_types") == 0);
  CU_ASSERT(ts_catch_up("ts_types", 30000));
  CU_ASSERT(ts_equal("ts_types", "ts_types"));
  /* every row updated (every column through the after image), then some deleted */
  CU_ASSERT(lt_exec(src, "UPDATE ts_types.all_types SET id = id + 1000 ORDER BY id DESC") == 0);
  /* rows equal under the column's collation but not byte for byte ('abc', 'ABC'): whole-row
   * matching must pick the very row the source changed */
  CU_ASSERT(lt_exec(src, "UPDATE ts_types.no_pk SET c = 9 WHERE b = BINARY 'Abc'") == 0);
  CU_ASSERT(lt_exec(src, "UPDATE ts_types.no_pk SET d = CONCAT('u', IFNULL(d, ''))") == 0);
  CU_ASSERT(ts_catch_up("ts_types", 30000));
  CU_ASSERT(ts_equal("ts_types", "ts_types"));
  CU_ASSERT(lt_exec(src, "DELETE FROM ts_types.all_types WHERE id %% 2 = 0") == 0);
  CU_ASSERT(lt_exec(src, "DELETE FROM ts_types.no_pk WHERE b = BINARY 'ABC'") == 0);
  CU_ASSERT(lt_exec(src, "DELETE FROM ts_types.no_pk WHERE b = BINARY 'É'") == 0);
  CU_ASSERT(ts_catch_up("ts_types", 30000));
  CU_ASSERT(ts_equal("ts_types", "ts_types"));
  long long rows = lt_status_int(st, "totalRows");
  CU_ASSERT(rows > 20);
  char buf[512];
  CU_ASSERT(strstr(lt_status_str(st, "syncerBinlog", buf, sizeof buf), "mysql-bin") != NULL);
  ts_stop(st);
  lt_teardown(&e);
}

/* ---- key shapes, key updates, compaction ---- */

static void test_sync_keys(void) {
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  static const char *const ddl =
      "CREATE TABLE ts_keys.pk (id INT PRIMARY KEY, k INT, c VARCHAR(40), KEY (k));"
      "CREATE TABLE ts_keys.uk (id INT PRIMARY KEY, u INT NOT NULL, c VARCHAR(40), UNIQUE (u));"
      "CREATE TABLE ts_keys.comp (a VARCHAR(20), b INT, c TEXT, PRIMARY KEY (a, b));"
      "CREATE TABLE ts_keys.nk (a INT, b VARCHAR(20), c DOUBLE);"
      "CREATE TABLE ts_keys.nuk (a INT NOT NULL, b INT, UNIQUE (a));";
  testdb_recreate_db(src, "ts_keys");
  testdb_recreate_db(dst, "ts_keys");
  CU_ASSERT_FATAL(lt_exec(src, "%s", ddl) == 0);
  CU_ASSERT_FATAL(lt_exec(dst, "%s", ddl) == 0);
  CU_ASSERT_FATAL(
      lt_exec(src, "USE ts_keys; INSERT INTO ts_keys.pk SELECT seq, seq %% 10, CONCAT('v', seq) "
                   "FROM seq_1_to_2000") == 0);
  CU_ASSERT_FATAL(
      lt_exec(dst, "USE ts_keys; INSERT INTO ts_keys.pk SELECT seq, seq %% 10, CONCAT('v', seq) "
                   "FROM seq_1_to_2000") == 0);
  CU_ASSERT_FATAL(ts_config(&e, "ts_keys", "ts_keys", NULL,
                            "worker-count = 3; batch = 100000; batch-ms = 300; "
                            "status-interval = 100;") == 0);
  dmh_subtask *st = ts_start(&e);
  CU_ASSERT_FATAL(st != NULL);
  static const char *const work[] = {
      /* many changes of one row inside one batch: compaction must give the net change */
      "BEGIN; INSERT INTO ts_keys.pk VALUES (5001, 1, 'a'); UPDATE ts_keys.pk SET c = 'b' WHERE "
      "id = 5001; UPDATE ts_keys.pk SET c = 'c', k = 7 WHERE id = 5001; COMMIT",
      "BEGIN; INSERT INTO ts_keys.pk VALUES (5002, 1, 'x'); DELETE FROM ts_keys.pk WHERE id = "
      "5002; COMMIT",
      "BEGIN; DELETE FROM ts_keys.pk WHERE id = 10; INSERT INTO ts_keys.pk VALUES (10, 99, "
      "'again'); COMMIT",
      "UPDATE ts_keys.pk SET id = id + 100000 WHERE id BETWEEN 100 AND 199",
      "UPDATE ts_keys.pk SET id = id - 100000 WHERE id BETWEEN 100100 AND 100149",
      "UPDATE ts_keys.pk SET k = k + 1 WHERE id % 7 = 0",
      "DELETE FROM ts_keys.pk WHERE id BETWEEN 500 AND 600",
      "USE ts_keys",
      "INSERT INTO ts_keys.pk SELECT seq, 0, 'new' FROM seq_500_to_550",
      /* unique keys: a value moves from one row to another, swaps through a free value */
      "INSERT INTO ts_keys.uk SELECT seq, seq, 'u' FROM seq_1_to_100",
      "BEGIN; UPDATE ts_keys.uk SET u = 1000 WHERE id = 1; UPDATE ts_keys.uk SET u = 1 WHERE id "
      "= 2; UPDATE ts_keys.uk SET u = 2 WHERE id = 1; COMMIT",
      "BEGIN; DELETE FROM ts_keys.uk WHERE id = 3; INSERT INTO ts_keys.uk VALUES (300, 3, 'took "
      "3'); COMMIT",
      "UPDATE ts_keys.uk SET id = id + 1000 WHERE id > 90",
      "INSERT INTO ts_keys.comp VALUES ('a', 1, 'x'), ('a', 2, NULL), ('b', 1, 'é')",
      "UPDATE ts_keys.comp SET b = 3 WHERE a = 'a' AND b = 2",
      "UPDATE ts_keys.comp SET a = 'z' WHERE a = 'b'",
      /* no key: identical rows, NULLs, doubles; one of two identical rows deleted/updated */
      "INSERT INTO ts_keys.nk VALUES (1, 'd', 0.1), (1, 'd', 0.1), (2, NULL, NULL), (3, 'x', "
      "1e300)",
      "DELETE FROM ts_keys.nk WHERE a = 1 LIMIT 1",
      "UPDATE ts_keys.nk SET b = 'was null' WHERE b IS NULL",
      "UPDATE ts_keys.nk SET c = c * 2 WHERE a = 3",
      "INSERT INTO ts_keys.nuk VALUES (1, NULL), (2, 2), (3, NULL)",
      "UPDATE ts_keys.nuk SET a = a + 10",
      "DELETE FROM ts_keys.nuk WHERE a = 12",
      "BEGIN; INSERT INTO ts_keys.pk VALUES (9000, 0, 'rolled back'); ROLLBACK",
  };
  for (size_t i = 0; i < sizeof work / sizeof *work; i++)
    CU_ASSERT(lt_exec(src, "%s", work[i]) == 0);
  CU_ASSERT(ts_catch_up("ts_keys", 30000));
  CU_ASSERT(ts_equal("ts_keys", "ts_keys"));
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM ts_keys.pk WHERE id = 9000"), 0);
  CU_ASSERT_EQUAL(dmh_subtask_stage(st), DMH_STAGE_RUNNING);

  /* stop, more writes, start again with another worker count: continues from the checkpoint */
  ts_stop(st);
  CU_ASSERT(lt_exec(src, "UPDATE ts_keys.pk SET c = CONCAT(c, '+') WHERE id < 300") == 0);
  CU_ASSERT(lt_exec(src, "DELETE FROM ts_keys.uk WHERE id < 50") == 0);
  lt_task t = {.name = "ts_keys",
               .mode = "incremental",
               .extra = "block-allow-list = { b = { do-dbs = [\"ts_keys\"]; }; };",
               .sync = "worker-count = 7; batch-ms = 20; status-interval = 100;"};
  char inst[256];
  snprintf(inst, sizeof inst, "block-allow-list = \"b\"; meta = { binlog-name = \"x.000001\"; };");
  t.instance = inst; /* meta is ignored once a checkpoint exists */
  CU_ASSERT_FATAL(lt_config(&e, &t) == 0);
  st = ts_start(&e);
  CU_ASSERT(ts_catch_up("ts_keys", 30000));
  CU_ASSERT(ts_equal("ts_keys", "ts_keys"));
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM dm_meta.ts_keys_syncer_checkpoint WHERE "
                                "cp_table LIKE '\\_worker\\_%%'"),
                  7);
  ts_stop(st);
  lt_teardown(&e);
}

/* ---- DDL, routes, filters ---- */

static void test_sync_ddl(void) {
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  lt_exec(src, "DROP DATABASE IF EXISTS ts_ddl");
  lt_exec(dst, "DROP DATABASE IF EXISTS ts_ddl_routed");
  CU_ASSERT_FATAL(ts_config(&e, "ts_ddl", "ts_ddl",
                            "routes = { r = { schema-pattern = \"ts_ddl\"; target-schema = "
                            "\"ts_ddl_routed\"; }; };",
                            NULL) == 0);
  dmh_subtask *st = ts_start(&e);
  CU_ASSERT_FATAL(st != NULL);
  static const char *const work[] = {
      "CREATE DATABASE ts_ddl",
      "CREATE TABLE ts_ddl.t (id INT PRIMARY KEY, a INT)",
      "USE ts_ddl",
      "INSERT INTO ts_ddl.t SELECT seq, seq FROM seq_1_to_100",
      "ALTER TABLE ts_ddl.t ADD COLUMN b VARCHAR(10) DEFAULT 'bee'",
      "UPDATE ts_ddl.t SET b = CONCAT('b', id) WHERE id < 50",
      "ALTER TABLE ts_ddl.t MODIFY COLUMN a BIGINT",
      "UPDATE ts_ddl.t SET a = a * 10000000000 WHERE id < 10",
      "ALTER TABLE ts_ddl.t DROP COLUMN b",
      "INSERT INTO ts_ddl.t VALUES (1000, 1)",
      "CREATE TABLE ts_ddl.u LIKE ts_ddl.t",
      "INSERT INTO ts_ddl.u SELECT * FROM ts_ddl.t WHERE id < 20",
      "RENAME TABLE ts_ddl.u TO ts_ddl.u2",
      "UPDATE ts_ddl.u2 SET a = 0",
      "CREATE TABLE ts_ddl.gone (x INT)",
      "INSERT INTO ts_ddl.gone VALUES (1)",
      "DROP TABLE ts_ddl.gone",
      "CREATE TABLE ts_ddl.tr (x INT PRIMARY KEY)",
      "INSERT INTO ts_ddl.tr SELECT seq FROM seq_1_to_10",
      "TRUNCATE TABLE ts_ddl.tr",
      "INSERT INTO ts_ddl.tr VALUES (42)",
      "USE ts_ddl",
  };
  for (size_t i = 0; i < sizeof work / sizeof *work; i++)
    CU_ASSERT(lt_exec(src, "%s", work[i]) == 0);
  /* an unqualified DDL in a default database */
  CU_ASSERT(lt_exec(src, "USE ts_ddl; CREATE TABLE v (id INT PRIMARY KEY); INSERT INTO v "
                         "VALUES (7)") == 0);
  CU_ASSERT(ts_catch_up("ts_ddl", 30000));
  CU_ASSERT(ts_equal("ts_ddl", "ts_ddl_routed"));
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM information_schema.TABLES WHERE "
                                "TABLE_SCHEMA = 'ts_ddl'"),
                  0);
  CU_ASSERT_EQUAL(dmh_subtask_stage(st), DMH_STAGE_RUNNING);
  ts_stop(st);
  lt_teardown(&e);
}

static void test_sync_filters(void) {
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  testdb_recreate_db(src, "ts_filt");
  testdb_recreate_db(dst, "ts_filt");
  static const char *const ddl = "CREATE TABLE ts_filt.keep (id INT PRIMARY KEY, v INT);"
                                 "CREATE TABLE ts_filt.log (id INT PRIMARY KEY, v INT);";
  CU_ASSERT_FATAL(lt_exec(src, "%s", ddl) == 0);
  CU_ASSERT_FATAL(lt_exec(dst, "%s", ddl) == 0);
  CU_ASSERT_FATAL(
      ts_config(&e, "ts_filt", "ts_filt",
                "filters = { f1 = { schema-pattern = \"ts_filt\"; table-pattern = \"log\"; "
                "events = [\"delete\"]; action = \"Ignore\"; };\n"
                "f2 = { schema-pattern = \"ts_filt\"; events = [\"drop table\"]; sql-pattern = "
                "[\"^ALTER TABLE .*keep\"]; action = \"Ignore\"; }; };",
                NULL) == 0);
  dmh_subtask *st = ts_start(&e);
  CU_ASSERT_FATAL(st != NULL);
  CU_ASSERT(
      lt_exec(src,
              "USE ts_filt; INSERT INTO ts_filt.keep SELECT seq, seq FROM seq_1_to_20; INSERT INTO "
              "ts_filt.log SELECT seq, seq FROM seq_1_to_20") == 0);
  CU_ASSERT(lt_exec(src, "DELETE FROM ts_filt.keep WHERE id <= 5; DELETE FROM ts_filt.log WHERE "
                         "id <= 5; UPDATE ts_filt.log SET v = 0") == 0);
  CU_ASSERT(lt_exec(src, "ALTER TABLE ts_filt.keep ADD COLUMN w INT") == 0);
  CU_ASSERT(lt_exec(src, "CREATE TABLE ts_filt.tmp (x INT); DROP TABLE ts_filt.tmp") == 0);
  CU_ASSERT(ts_catch_up("ts_filt", 30000));
  /* deletes of `log` ignored, its updates applied; the ALTER ignored by sql-pattern; the DROP of
   * tmp ignored by event */
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM ts_filt.keep"), 15);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM ts_filt.log"), 20);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT SUM(v) FROM ts_filt.log"), 1 + 2 + 3 + 4 + 5);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM information_schema.COLUMNS WHERE "
                                "TABLE_SCHEMA = 'ts_filt' AND TABLE_NAME = 'keep'"),
                  2);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM information_schema.TABLES WHERE "
                                "TABLE_SCHEMA = 'ts_filt' AND TABLE_NAME = 'tmp'"),
                  1);
  ts_stop(st);
  lt_teardown(&e);
}

/* ---- positions ---- */

static void test_sync_gtid_start(void) {
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  testdb_recreate_db(src, "ts_gtid");
  testdb_recreate_db(dst, "ts_gtid");
  CU_ASSERT_FATAL(lt_exec(src, "CREATE TABLE ts_gtid.t (id INT PRIMARY KEY)") == 0);
  CU_ASSERT_FATAL(lt_exec(dst, "CREATE TABLE ts_gtid.t (id INT PRIMARY KEY)") == 0);
  CU_ASSERT(lt_exec(src, "INSERT INTO ts_gtid.t VALUES (1), (2)") == 0); /* before: not synced */
  char gtid[512] = "", inst[1024];
  testdb_query_value(src, gtid, sizeof gtid, "SELECT @@GLOBAL.gtid_binlog_pos");
  snprintf(inst, sizeof inst, "block-allow-list = \"b\"; meta = { binlog-gtid = \"%s\"; };", gtid);
  lt_drop_checkpoint(dst, "ts_gtid");
  lt_exec(dst, "DROP TABLE IF EXISTS dm_meta.ts_gtid_syncer_checkpoint");
  lt_task t = {.name = "ts_gtid",
               .mode = "incremental",
               .instance = inst,
               .extra = "block-allow-list = { b = { do-dbs = [\"ts_gtid\"]; }; };",
               .sync = TS_SYNC};
  CU_ASSERT_FATAL(lt_config(&e, &t) == 0);
  CU_ASSERT(lt_exec(src, "INSERT INTO ts_gtid.t VALUES (3), (4)") == 0);
  dmh_subtask *st = ts_start(&e);
  CU_ASSERT(lt_exec(src, "INSERT INTO ts_gtid.t VALUES (5)") == 0);
  CU_ASSERT(ts_catch_up("ts_gtid", 30000));
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM ts_gtid.t"), 3);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT MIN(id) FROM ts_gtid.t"), 3);
  char g2[512] = "";
  testdb_query_value(dst, g2, sizeof g2,
                     "SELECT binlog_gtid FROM dm_meta.ts_gtid_syncer_checkpoint WHERE is_global");
  CU_ASSERT(g2[0] != '\0');
  ts_stop(st);
  lt_teardown(&e);
}

static void test_sync_purged(void) {
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  char inst[512];
  /* a file the source does not have (any more) */
  snprintf(inst, sizeof inst,
           "block-allow-list = \"b\"; meta = { binlog-name = \"mysql-bin.000000\"; binlog-pos = "
           "4; };");
  lt_exec(dst, "DROP TABLE IF EXISTS dm_meta.ts_purged_syncer_checkpoint");
  lt_task t = {.name = "ts_purged",
               .mode = "incremental",
               .instance = inst,
               .extra = "block-allow-list = { b = { do-dbs = [\"ts_purged\"]; }; };",
               .sync = TS_SYNC};
  CU_ASSERT_FATAL(lt_config(&e, &t) == 0);
  dmh_subtask *st;
  dmh_stage s = lt_run(&e, &st, 30000);
  CU_ASSERT_EQUAL(s, DMH_STAGE_PAUSED);
  char msg[1024], raw[1024];
  bool resumable = true;
  int code = lt_first_error(st, msg, sizeof msg, raw, sizeof raw, &resumable);
  CU_ASSERT_EQUAL(code, DM_ERR_BINLOG_PURGED);
  CU_ASSERT(!resumable);
  fprintf(stderr, "purged: %s / %s\n", msg, raw);
  ts_stop(st);
  lt_teardown(&e);
}

static void test_sync_no_start(void) {
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  lt_exec(dst, "DROP TABLE IF EXISTS dm_meta.ts_nostart_syncer_checkpoint");
  lt_task t = {.name = "ts_nostart", .mode = "incremental", .sync = TS_SYNC};
  CU_ASSERT_FATAL(lt_config(&e, &t) == 0);
  dmh_subtask *st;
  CU_ASSERT_EQUAL(lt_run(&e, &st, 30000), DMH_STAGE_PAUSED);
  char msg[1024];
  CU_ASSERT_EQUAL(lt_first_error(st, msg, sizeof msg, NULL, 0, NULL), DM_ERR_SYNC_NO_START);
  CU_ASSERT(strstr(msg, "meta") != NULL);
  ts_stop(st);
  lt_teardown(&e);
}

static void test_sync_precheck(void) {
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  CU_ASSERT_FATAL(ts_config(&e, "ts_pre", "ts_pre", NULL, NULL) == 0);
  /* binlog_row_metadata needs no check since the schema tracker; the row image still does */
  CU_ASSERT_FATAL(lt_exec(src, "SET GLOBAL binlog_row_image = MINIMAL") == 0);
  dmh_subtask *st;
  dmh_stage s = lt_run(&e, &st, 30000);
  lt_exec(src, "SET GLOBAL binlog_row_image = FULL");
  CU_ASSERT_EQUAL(s, DMH_STAGE_PAUSED);
  char msg[1024];
  CU_ASSERT_EQUAL(lt_first_error(st, msg, sizeof msg, NULL, 0, NULL), DM_ERR_SYNC_PRECHECK);
  CU_ASSERT(strstr(msg, "binlog_row_image") != NULL);
  ts_stop(st);
  lt_teardown(&e);
}

/* an account that may only SELECT on the source: the precheck names what it lacks */
static void test_sync_precheck_privileges(void) {
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  char inst[256];
  snprintf(inst, sizeof inst,
           "block-allow-list = \"b\"; meta = { binlog-name = \"mysql-bin.000001\"; };");
  lt_exec(dst, "DROP TABLE IF EXISTS dm_meta.ts_priv_syncer_checkpoint");
  lt_task t = {.name = "ts_priv",
               .mode = "incremental",
               .instance = inst,
               .extra = "block-allow-list = { b = { do-dbs = [\"ts_priv\"]; }; };",
               .sync = TS_SYNC,
               .source_user = "dmh_limited",
               .source_password = "limited"};
  CU_ASSERT_FATAL(lt_config(&e, &t) == 0);
  dmh_subtask *st;
  CU_ASSERT_EQUAL(lt_run(&e, &st, 30000), DMH_STAGE_PAUSED);
  char msg[1024];
  bool resumable = true;
  CU_ASSERT_EQUAL(lt_first_error(st, msg, sizeof msg, NULL, 0, &resumable), DM_ERR_SYNC_PRECHECK);
  CU_ASSERT(!resumable);
  CU_ASSERT(strstr(msg, "dmh_limited") != NULL);
  CU_ASSERT(strstr(msg, "REPLICATION SLAVE") != NULL);
  ts_stop(st);
  lt_teardown(&e);
}

/* a table of the binlog that the target does not have: paused, naming both names; once the
 * table is created, resume goes on from the same place */
static void test_sync_missing_table(void) {
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  testdb_recreate_db(src, "ts_miss");
  testdb_recreate_db(dst, "ts_miss");
  CU_ASSERT_FATAL(lt_exec(src, "CREATE TABLE ts_miss.t (id INT PRIMARY KEY, v INT)") == 0);
  CU_ASSERT_FATAL(ts_config(&e, "ts_miss", "ts_miss", NULL, NULL) == 0);
  dmh_subtask *st = ts_start(&e);
  CU_ASSERT(lt_exec(src, "INSERT INTO ts_miss.t VALUES (1, 1), (2, 2)") == 0);
  CU_ASSERT_EQUAL(dmh_subtask_wait_settled(st, 30000), DMH_STAGE_PAUSED);
  char msg[1024];
  bool resumable = true;
  CU_ASSERT_EQUAL(lt_first_error(st, msg, sizeof msg, NULL, 0, &resumable), DM_ERR_SYNC_TABLE);
  CU_ASSERT(!resumable);
  CU_ASSERT(strstr(msg, "`ts_miss`.`t`") != NULL);
  CU_ASSERT(lt_exec(dst, "CREATE TABLE ts_miss.t (id INT PRIMARY KEY, v INT)") == 0);
  dm_error err;
  CU_ASSERT_EQUAL(dmh_subtask_resume(st, &err), 0);
  CU_ASSERT(ts_catch_up("ts_miss", 30000));
  CU_ASSERT(ts_equal("ts_miss", "ts_miss"));
  ts_stop(st);
  lt_teardown(&e);
}

/* Mode load&sync: a dump folder (hand-made, its metadata at the source's position when the rows
 * were as in the files) is loaded, then the sync starts at that position, handed over by the load
 * unit: the changes after it arrive, the ones before it are not applied twice. */
static void test_sync_load_and_sync(void) {
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  testdb_recreate_db(src, "ts_ls");
  lt_exec(dst, "DROP DATABASE IF EXISTS ts_ls");
  lt_drop_checkpoint(dst, "ts_ls");
  lt_exec(dst, "DROP TABLE IF EXISTS dm_meta.ts_ls_syncer_checkpoint");
  static const char *const schema = "CREATE TABLE `t` (\n  `id` int(11) NOT NULL,\n  `v` "
                                    "varchar(20) DEFAULT NULL,\n  PRIMARY KEY (`id`)\n) "
                                    "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;\n";
  CU_ASSERT_FATAL(lt_exec(src, "CREATE TABLE ts_ls.t (id INT PRIMARY KEY, v VARCHAR(20)); INSERT "
                               "INTO ts_ls.t VALUES (1, 'one'), (2, 'two'), (3, 'three')") == 0);
  char file[256] = "", gtid[512] = "";
  unsigned long pos = 0;
  ts_master(file, &pos, gtid);
  lt_write_metadata(&e, file, pos, gtid);
  lt_write(&e, "ts_ls-schema-create.sql", "CREATE DATABASE IF NOT EXISTS `ts_ls`;\n");
  lt_write(&e, "ts_ls.t-schema.sql", schema);
  lt_write(&e, "ts_ls.t.000000.sql",
           "INSERT INTO `t` (`id`,`v`) VALUES (1,'one'),(2,'two'),(3,'three');\n");
  /* after the dump's position */
  CU_ASSERT(lt_exec(src, "INSERT INTO ts_ls.t VALUES (4, 'four'); UPDATE ts_ls.t SET v = 'uno' "
                         "WHERE id = 1; DELETE FROM ts_ls.t WHERE id = 2") == 0);
  char load[600];
  snprintf(load, sizeof load, "dir = \"%s\"; on-duplicate = \"error\";", e.dump_dir);
  lt_task t = {.name = "ts_ls",
               .mode = "load&sync",
               .instance = "block-allow-list = \"b\";",
               .extra = "block-allow-list = { b = { do-dbs = [\"ts_ls\"]; }; };",
               .load = load,
               .sync = TS_SYNC};
  CU_ASSERT_FATAL(lt_config(&e, &t) == 0);
  dmh_subtask *st = ts_start(&e);
  CU_ASSERT(ts_catch_up("ts_ls", 30000));
  CU_ASSERT(ts_equal("ts_ls", "ts_ls"));
  char g[512] = "";
  testdb_query_value(dst, g, sizeof g,
                     "SELECT binlog_gtid FROM dm_meta.ts_ls_syncer_checkpoint WHERE is_global");
  CU_ASSERT(gtid[0] == '\0' || g[0] != '\0');
  CU_ASSERT_EQUAL(dmh_subtask_stage(st), DMH_STAGE_RUNNING);
  ts_stop(st);
  lt_teardown(&e);
}

/* ---- a DDL the target refuses, then `binlog skip` ---- */

static void test_sync_ddl_operator(void) {
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  testdb_recreate_db(src, "ts_op");
  testdb_recreate_db(dst, "ts_op");
  CU_ASSERT_FATAL(lt_exec(src, "CREATE TABLE ts_op.t (id INT PRIMARY KEY)") == 0);
  /* the target already has the column the source is about to add */
  CU_ASSERT_FATAL(lt_exec(dst, "CREATE TABLE ts_op.t (id INT PRIMARY KEY, c INT)") == 0);
  CU_ASSERT_FATAL(ts_config(&e, "ts_op", "ts_op", NULL, NULL) == 0);
  dmh_subtask *st = ts_start(&e);
  CU_ASSERT(lt_exec(src, "INSERT INTO ts_op.t VALUES (1)") == 0);
  char file[256];
  unsigned long pos;
  ts_master(file, &pos, NULL);
  CU_ASSERT(lt_exec(src, "ALTER TABLE ts_op.t ADD COLUMN c INT") == 0);
  CU_ASSERT(lt_exec(src, "INSERT INTO ts_op.t VALUES (2, 20)") == 0);
  CU_ASSERT_EQUAL(dmh_subtask_wait_settled(st, 30000), DMH_STAGE_PAUSED);
  char msg[1024], raw[1024];
  CU_ASSERT_EQUAL(lt_first_error(st, msg, sizeof msg, raw, sizeof raw, NULL), DM_ERR_SYNC_DDL);
  fprintf(stderr, "ddl error: %s / %s\n", msg, raw);
  CU_ASSERT(strstr(msg, file) != NULL);
  CU_ASSERT(strstr(raw, "1060") != NULL); /* duplicate column */
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM ts_op.t"), 1);
  /* skip the event, through the store `dmctl binlog skip` writes */
  dm_error err;
  char *store = dmh_binlog_ops_path(e.work);
  dmh_binlog_op op = {.kind = DM_BINLOG_OP_SKIP};
  bool replaced = false;
  CU_ASSERT_EQUAL(dmh_binlog_ops_put(store, &op, &replaced, &err), 0);
  free(store);
  CU_ASSERT_EQUAL(dmh_subtask_resume(st, &err), 0);
  CU_ASSERT(ts_catch_up("ts_op", 30000));
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM ts_op.t"), 2);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT c FROM ts_op.t WHERE id = 2"), 20);
  ts_stop(st);
  lt_teardown(&e);
}

/* replace (the failing event, no -b) and inject (-b FILE:POS from the error) */
static void test_sync_replace_inject(void) {
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  testdb_recreate_db(src, "ts_op2");
  testdb_recreate_db(dst, "ts_op2");
  CU_ASSERT_FATAL(lt_exec(src, "CREATE TABLE ts_op2.t (id INT PRIMARY KEY)") == 0);
  /* the target has c already, as text */
  CU_ASSERT_FATAL(lt_exec(dst, "CREATE TABLE ts_op2.t (id INT PRIMARY KEY, c VARCHAR(5))") == 0);
  CU_ASSERT_FATAL(ts_config(&e, "ts_op2", "ts_op2", NULL, NULL) == 0);
  dmh_subtask *st = ts_start(&e);
  CU_ASSERT(lt_exec(src, "ALTER TABLE ts_op2.t ADD COLUMN c INT") == 0);
  CU_ASSERT(lt_exec(src, "INSERT INTO ts_op2.t VALUES (1, 123456)") == 0);
  CU_ASSERT_EQUAL(dmh_subtask_wait_settled(st, 30000), DMH_STAGE_PAUSED);
  char msg[1024];
  CU_ASSERT_EQUAL(lt_first_error(st, msg, sizeof msg, NULL, 0, NULL), DM_ERR_SYNC_DDL);
  dm_error err;
  char *store = dmh_binlog_ops_path(e.work);
  bool replaced;
  /* replace: make the target's column what the source's is */
  char *sql = "ALTER TABLE ts_op2.t MODIFY c INT";
  dmh_binlog_op rep = {.kind = DM_BINLOG_OP_REPLACE, .sqls = &sql, .n_sqls = 1};
  CU_ASSERT_EQUAL(dmh_binlog_ops_put(store, &rep, &replaced, &err), 0);
  CU_ASSERT_EQUAL(dmh_subtask_resume(st, &err), 0);
  CU_ASSERT(ts_catch_up("ts_op2", 30000));
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT c FROM ts_op2.t WHERE id = 1"), 123456);
  dmh_binlog_ops left = {0};
  CU_ASSERT_EQUAL(dmh_binlog_ops_load(store, &left, &err), 0);
  CU_ASSERT_EQUAL(left.n, 0); /* used once, then forgotten */
  dmh_binlog_ops_clear(&left);

  /* inject: an index on a column the target lacks; the operator adds the column first */
  CU_ASSERT(lt_exec(dst, "ALTER TABLE ts_op2.t DROP COLUMN c") == 0);
  CU_ASSERT(lt_exec(src, "ALTER TABLE ts_op2.t ADD INDEX ic (c)") == 0);
  CU_ASSERT_EQUAL(dmh_subtask_wait_settled(st, 30000), DMH_STAGE_PAUSED);
  CU_ASSERT_EQUAL(lt_first_error(st, msg, sizeof msg, NULL, 0, NULL), DM_ERR_SYNC_DDL);
  char at[300];
  ts_error_at(msg, at, sizeof at);
  CU_ASSERT(strstr(at, "mysql-bin.") == at);
  char *add = "ALTER TABLE ts_op2.t ADD COLUMN c INT";
  dmh_binlog_op inj = {.kind = DM_BINLOG_OP_INJECT, .sqls = &add, .n_sqls = 1};
  CU_ASSERT_EQUAL(dmh_binlog_pos_parse(at, inj.at, &err), 0);
  CU_ASSERT_EQUAL(dmh_binlog_ops_put(store, &inj, &replaced, &err), 0);
  CU_ASSERT_EQUAL(dmh_subtask_resume(st, &err), 0);
  CU_ASSERT(lt_exec(src, "INSERT INTO ts_op2.t VALUES (2, 7)") == 0);
  CU_ASSERT(ts_catch_up("ts_op2", 30000));
  CU_ASSERT_EQUAL(dmh_subtask_stage(st), DMH_STAGE_RUNNING);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT c FROM ts_op2.t WHERE id = 2"), 7);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM information_schema.STATISTICS WHERE "
                                "TABLE_SCHEMA = 'ts_op2' AND INDEX_NAME = 'ic'"),
                  1);
  free(store);
  ts_stop(st);
  lt_teardown(&e);
}

/* Waits (60 s at most) until the unit's status `key` is `want` (NULL: present). */
static void ts_wait_status(dmh_subtask *st, const char *key, const char *want) {
  char buf[128];
  double until = lt_now() + 60;
  while (lt_now() < until) {
    lt_status_str(st, key, buf, sizeof buf);
    if (want ? strcmp(buf, want) == 0 : buf[0] != '\0')
      return;
    lt_sleep_ms(50);
  }
  fprintf(stderr, "status %s: \"%s\", not \"%s\" after 60 s\n", key, buf, want ? want : "*");
}

/* A target that diverged (a row the source inserts later is there already): without safe mode
 * the insert fails with DM_ERR_SYNC_APPLY; with it, the row is overwritten and the tables agree. */
static void test_sync_safe_mode(void) {
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  static const char *const ddl =
      "CREATE TABLE ts_safe.pk (id INT PRIMARY KEY, v VARCHAR(10));"
      "CREATE TABLE ts_safe.uk (id INT PRIMARY KEY, u INT NOT NULL, UNIQUE (u));";
  testdb_recreate_db(src, "ts_safe");
  testdb_recreate_db(dst, "ts_safe");
  CU_ASSERT_FATAL(lt_exec(src, "%s", ddl) == 0);
  CU_ASSERT_FATAL(lt_exec(dst, "%s", ddl) == 0);
  CU_ASSERT_FATAL(lt_exec(dst, "INSERT INTO ts_safe.pk VALUES (5, 'stale'); INSERT INTO "
                               "ts_safe.uk VALUES (5, 50)") == 0);
  /* safe-mode-duration unset (dmhost's default: the checkpoint is committed with every batch): a
   * first start (no clean stop recorded) enters no safe mode */
  CU_ASSERT_FATAL(ts_config(&e, "ts_safe", "ts_safe", NULL, TS_SYNC) == 0);
  dmh_subtask *st = ts_start(&e);
  char sbuf[128];
  CU_ASSERT_STRING_EQUAL(lt_status_str(st, "safeMode", sbuf, sizeof sbuf), "false");
  CU_ASSERT_STRING_EQUAL(lt_status_str(st, "safeModeReason", sbuf, sizeof sbuf), "");
  CU_ASSERT(lt_exec(src, "INSERT INTO ts_safe.pk VALUES (5, 'fresh')") == 0);
  CU_ASSERT_EQUAL(dmh_subtask_wait_settled(st, 30000), DMH_STAGE_PAUSED);
  char msg[1024], raw[1024];
  CU_ASSERT_EQUAL(lt_first_error(st, msg, sizeof msg, raw, sizeof raw, NULL), DM_ERR_SYNC_APPLY);
  CU_ASSERT(strstr(raw, "Duplicate entry") != NULL);
  ts_stop(st);

  /* DM's refusals: a duration without a unit; safe-mode true with "0s" */
  static const struct {
    const char *sync, *want;
  } bad[] = {
      {"safe-mode-duration = \"60\";",
       "sync: setting `safe-mode-duration` must be a duration string"},
      {"safe-mode-duration = 60;", "sync: setting `safe-mode-duration` must be a duration string"},
      {"safe-mode = true; safe-mode-duration = \"0s\";",
       "sync: setting `safe-mode` true conflicts with `safe-mode-duration` \"0s\""}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    CU_ASSERT_FATAL(ts_config(&e, "ts_safe_bad", "ts_safe", NULL, bad[i].sync) == 0);
    dmh_subtask *b = lt_subtask(&e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    dm_error berr = {0};
    CU_ASSERT_EQUAL(dmh_subtask_start(b, &berr), -1);
    CU_ASSERT_EQUAL(berr.code, DM_ERR_CONFIG_INVALID);
    if (!strstr(berr.message, bad[i].want))
      fprintf(stderr, "got: %s\n", berr.message);
    CU_ASSERT_PTR_NOT_NULL(strstr(berr.message, bad[i].want));
    dmh_subtask_destroy(b);
  }

  /* the restart after that error stop (no clean stop recorded): safe mode for the duration, so
   * the failed INSERT, replayed, overwrites the stale row, as does a new one over a stale row */
  char inst[256];
  snprintf(inst, sizeof inst, "block-allow-list = \"b\"; meta = { binlog-name = \"x.000001\"; };");
  lt_task t = {.name = "ts_safe",
               .mode = "incremental",
               .instance = inst,
               .extra = "block-allow-list = { b = { do-dbs = [\"ts_safe\"]; }; };",
               .sync = TS_SYNC " safe-mode-duration = \"15s\";"};
  CU_ASSERT_FATAL(lt_config(&e, &t) == 0);
  st = ts_start(&e);
  CU_ASSERT_FATAL(st != NULL);
  ts_wait_status(st, "safeModeReason", "safe-mode-duration");
  CU_ASSERT_STRING_EQUAL(lt_status_str(st, "safeMode", sbuf, sizeof sbuf), "true");
  CU_ASSERT_STRING_EQUAL(lt_status_str(st, "safeModeReason", sbuf, sizeof sbuf),
                         "safe-mode-duration");
  CU_ASSERT(strlen(lt_status_str(st, "safeModeUntil", sbuf, sizeof sbuf)) == 20); /* ...Z */
  CU_ASSERT(lt_exec(src, "INSERT INTO ts_safe.uk VALUES (5, 50)") == 0);
  CU_ASSERT(ts_catch_up("ts_safe", 30000));
  CU_ASSERT_EQUAL(dmh_subtask_stage(st), DMH_STAGE_RUNNING);
  CU_ASSERT(ts_equal("ts_safe", "ts_safe"));
  /* then it leaves safe mode (the window is 15 s) */
  ts_wait_status(st, "safeMode", "false");
  CU_ASSERT_STRING_EQUAL(lt_status_str(st, "safeMode", sbuf, sizeof sbuf), "false");
  CU_ASSERT_STRING_EQUAL(lt_status_str(st, "safeModeReason", sbuf, sizeof sbuf), "");
  /* a clean stop, a restart with the same duration: no automatic safe mode */
  ts_stop(st);
  st = ts_start(&e);
  CU_ASSERT_FATAL(st != NULL);
  ts_wait_status(st, "syncerBinlog", NULL); /* the start is done */
  CU_ASSERT_STRING_EQUAL(lt_status_str(st, "safeMode", sbuf, sizeof sbuf), "false");
  CU_ASSERT(lt_exec(dst, "INSERT INTO ts_safe.pk VALUES (7, 'stale')") == 0);
  CU_ASSERT(lt_exec(src, "INSERT INTO ts_safe.pk VALUES (7, 'fresh')") == 0);
  CU_ASSERT_EQUAL(dmh_subtask_wait_settled(st, 30000), DMH_STAGE_PAUSED);
  CU_ASSERT_EQUAL(lt_first_error(st, msg, sizeof msg, raw, sizeof raw, NULL), DM_ERR_SYNC_APPLY);
  CU_ASSERT(strstr(raw, "Duplicate entry") != NULL);
  ts_stop(st);

  /* the same task again, in safe mode: continues from its checkpoint */
  t.sync = "safe-mode = true; worker-count = 2; status-interval = 100;";
  CU_ASSERT_FATAL(lt_config(&e, &t) == 0);
  st = ts_start(&e);
  CU_ASSERT(lt_exec(src, "INSERT INTO ts_safe.uk VALUES (6, 60)") == 0);
  CU_ASSERT(lt_exec(src, "UPDATE ts_safe.uk SET u = 61 WHERE id = 6") == 0);
  CU_ASSERT(lt_exec(src, "UPDATE ts_safe.pk SET v = 'fresher' WHERE id = 5") == 0);
  CU_ASSERT(ts_catch_up("ts_safe", 30000));
  CU_ASSERT(ts_equal("ts_safe", "ts_safe"));
  CU_ASSERT_EQUAL(dmh_subtask_stage(st), DMH_STAGE_RUNNING);
  ts_stop(st);
  lt_teardown(&e);
}

/* Row changes of the big transaction below: 10,000 inserts and updates of t, 5,000 inserts into
 * n, 3,333 deletes from t (id % 3 = 0) and 714 from n (b % 7 = 0). */
#define TS_BIG_CHANGES (10000 + 10000 + 5000 + 3333 + 714)

/* How far the target's checkpoint is into the transaction that starts at file:pos: the most row
 * changes a worker row records there (table_info.rows), or -1 when no worker row is at that
 * position (before the transaction, or past it). */
static long long ts_big_applied(const char *file, unsigned long pos) {
  long long rows = -1;
  if (testdb_query_int(
          dst, &rows,
          "SELECT COALESCE(MAX(CAST(JSON_VALUE(table_info, '$.rows') AS UNSIGNED)), "
          "-1) FROM dm_meta.ts_big_syncer_checkpoint WHERE cp_table LIKE '\\_worker\\_%%' "
          "AND binlog_name = '%s' AND binlog_pos = %lu",
          file, pos) != 0)
    return -1;
  return rows;
}

/* A transaction of 29,047 row changes with batches of 200: it is split into batches (the
 * checkpoint is then its start plus a row count); kills while it is applied and restarts give
 * the same table as the source, and no duplicate key (plain INSERTs for new rows). Each kill is
 * sent once the checkpoint moved into the transaction in that round, and must leave the
 * checkpoint inside it (0 < rows < all): a kill before or after the transaction fails the test. */
static void test_sync_big_txn(void) {
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  static const char *const ddl = "CREATE TABLE ts_big.t (id INT PRIMARY KEY, v INT, c VARCHAR(40));"
                                 "CREATE TABLE ts_big.n (a INT, b INT);";
  testdb_recreate_db(src, "ts_big");
  testdb_recreate_db(dst, "ts_big");
  CU_ASSERT_FATAL(lt_exec(src, "%s", ddl) == 0);
  CU_ASSERT_FATAL(lt_exec(dst, "%s", ddl) == 0);
  CU_ASSERT_FATAL(ts_config(&e, "ts_big", "ts_big", NULL,
                            "worker-count = 3; batch = 200; status-interval = 100;") == 0);
  char file[256] = "";
  unsigned long start = 0; /* where the transaction's GTID event starts (test_sync runs alone) */
  ts_master(file, &start, NULL);
  CU_ASSERT_FATAL(file[0] != '\0');
  CU_ASSERT(lt_exec(src, "USE ts_big; BEGIN; INSERT INTO ts_big.t SELECT seq, seq, REPEAT('x', "
                         "30) FROM seq_1_to_10000; UPDATE ts_big.t SET v = v * 2; INSERT INTO "
                         "ts_big.n SELECT seq %% 100, seq FROM seq_1_to_5000; DELETE FROM "
                         "ts_big.t WHERE id %% 3 = 0; DELETE FROM ts_big.n WHERE b %% 7 = 0; "
                         "COMMIT") == 0);
  dm_error err;
  long long last = 0;
  for (int round = 0; round < 4; round++) {
    dmh_subtask *st = lt_subtask(&e);
    CU_ASSERT_FATAL(st != NULL);
    CU_ASSERT_FATAL(dmh_subtask_start(st, &err) == 0);
    /* this round applied part of the transaction: kill now */
    long long seen = -1;
    for (double end = lt_now() + 30; lt_now() < end && seen <= last; lt_sleep_ms(2))
      seen = ts_big_applied(file, start);
    CU_ASSERT_EQUAL(dmh_subtask_stage(st), DMH_STAGE_RUNNING);
    CU_ASSERT_EQUAL(dmh_subtask_kill(st, &err), 0);
    dmh_subtask_destroy(st);
    long long now = ts_big_applied(file, start);
    fprintf(stderr, "big transaction, kill %d: %lld -> %lld of %d row changes applied\n", round + 1,
            last, now, TS_BIG_CHANGES);
    CU_ASSERT(seen > last);                         /* it moved in this round */
    CU_ASSERT(now >= seen && now < TS_BIG_CHANGES); /* the kill landed inside it */
    last = now;
  }
  dmh_subtask *st = ts_start(&e);
  CU_ASSERT(ts_catch_up("ts_big", 60000));
  CU_ASSERT(ts_equal("ts_big", "ts_big"));
  CU_ASSERT_EQUAL(dmh_subtask_stage(st), DMH_STAGE_RUNNING);
  CU_ASSERT_EQUAL(ts_big_applied(file, start), -1); /* and then past it */
  ts_stop(st);
  lt_teardown(&e);
}

/* Regression: the sync kept every table map it had read, by table id, in an array it scanned at
 * each row event. MariaDB gives a table a new id each time it is opened again (FLUSH TABLES), so
 * the maps grew without bound: here 60 tables flushed 100 times left ~6,000 maps alive. Now a map
 * lives while transactions use it: at most the tables of two consecutive transactions. */
#define TS_MAPS_TABLES 60
#define TS_MAPS_FLUSHES 100
static void test_sync_table_maps(void) {
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  testdb_recreate_db(src, "ts_maps");
  testdb_recreate_db(dst, "ts_maps");
  char sql[8192];
  size_t n = 0;
  for (int t = 0; t < TS_MAPS_TABLES; t++)
    n += (size_t)snprintf(sql + n, sizeof sql - n,
                          "CREATE TABLE ts_maps.t%d (id INT PRIMARY KEY, v INT);", t);
  CU_ASSERT_FATAL(lt_exec(src, "%s", sql) == 0);
  CU_ASSERT_FATAL(lt_exec(dst, "%s", sql) == 0);
  CU_ASSERT_FATAL(ts_config(&e, "ts_maps", "ts_maps", NULL, NULL) == 0);
  char file0[256] = "";
  unsigned long pos0 = 0;
  ts_master(file0, &pos0, NULL);
  dmh_subtask *st = ts_start(&e);
  CU_ASSERT_FATAL(st != NULL);
  long long peak_seen = 0;
  for (int round = 0; round < TS_MAPS_FLUSHES; round++) {
    /* LOCAL: the flush itself stays out of the binlog; the next use of each table gets a new id */
    n = (size_t)snprintf(sql, sizeof sql, "FLUSH LOCAL TABLES; BEGIN;");
    for (int t = 0; t < TS_MAPS_TABLES; t++)
      n += (size_t)snprintf(sql + n, sizeof sql - n, "INSERT INTO ts_maps.t%d VALUES (%d, %d);", t,
                            round, t);
    snprintf(sql + n, sizeof sql - n, "COMMIT; UPDATE ts_maps.t%d SET v = v + 1;",
             round % TS_MAPS_TABLES);
    CU_ASSERT_FATAL(lt_exec(src, "%s", sql) == 0);
    if (round % 10 == 9) {
      long long live = lt_status_int(st, "tableMaps");
      if (live > peak_seen)
        peak_seen = live;
    }
  }
  CU_ASSERT(ts_catch_up("ts_maps", 60000));
  CU_ASSERT(ts_equal("ts_maps", "ts_maps"));
  /* precondition: the flushes gave the tables new ids (more ids than the bound below) */
  char file1[256] = "";
  unsigned long pos1 = 0;
  ts_master(file1, &pos1, NULL);
  long long ids = 0;
  if (strcmp(file0, file1) == 0) {
    MYSQL_RES *res = NULL;
    char q[512];
    snprintf(q, sizeof q, "SHOW BINLOG EVENTS IN '%s' FROM %lu", file0, pos0);
    CU_ASSERT_FATAL(mysql_query(src, q) == 0 && (res = mysql_store_result(src)) != NULL);
    /* distinct ids: a new id is larger than every one before it (a global counter) */
    unsigned long long last_max = 0;
    MYSQL_ROW row;
    while ((row = mysql_fetch_row(res)))
      if (row[2] && strcmp(row[2], "Table_map") == 0 && row[5] && strstr(row[5], "ts_maps")) {
        const char *p = strstr(row[5], "table_id: ");
        unsigned long long id = p ? strtoull(p + 10, NULL, 10) : 0;
        if (id > last_max) {
          last_max = id;
          ids++;
        }
      }
    mysql_free_result(res);
  }
  fprintf(stderr, "table maps: %lld table ids in the binlog, live %lld, peak %lld (sampled %lld)\n",
          ids, lt_status_int(st, "tableMaps"), lt_status_int(st, "tableMapsPeak"), peak_seen);
  if (strcmp(file0, file1) == 0)
    CU_ASSERT(ids >= (long long)TS_MAPS_FLUSHES * TS_MAPS_TABLES / 2);
  long long live = lt_status_int(st, "tableMaps"), peak = lt_status_int(st, "tableMapsPeak");
  CU_ASSERT(live >= 0 && live <= TS_MAPS_TABLES);
  CU_ASSERT(peak >= TS_MAPS_TABLES && peak <= 2 * TS_MAPS_TABLES);
  CU_ASSERT(peak_seen <= 2 * TS_MAPS_TABLES);
  CU_ASSERT(lt_status_int(st, "totalRows") >= (long long)TS_MAPS_FLUSHES * (TS_MAPS_TABLES + 1));
  CU_ASSERT_EQUAL(dmh_subtask_stage(st), DMH_STAGE_RUNNING);
  ts_stop(st);
  lt_exec(src, "DROP DATABASE IF EXISTS ts_maps");
  lt_exec(dst, "DROP DATABASE IF EXISTS ts_maps");
  lt_teardown(&e);
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"every column type through the binlog", test_sync_types},
      {"key shapes, key updates, compaction, restart", test_sync_keys},
      {"DDL mid-stream with a route", test_sync_ddl},
      {"binlog event filters", test_sync_filters},
      {"GTID start", test_sync_gtid_start},
      {"purged binlog", test_sync_purged},
      {"no start position", test_sync_no_start},
      {"precheck: binlog_row_image", test_sync_precheck},
      {"precheck: privileges", test_sync_precheck_privileges},
      {"a table the target lacks", test_sync_missing_table},
      {"mode load&sync: the sync starts at the dump's position", test_sync_load_and_sync},
      {"refused DDL, binlog skip", test_sync_ddl_operator},
      {"binlog replace (failing event) and inject (-b)", test_sync_replace_inject},
      {"safe mode over a diverged target", test_sync_safe_mode},
      {"a transaction bigger than a batch, killed while applied", test_sync_big_txn},
      {"table maps stay bounded over 100 FLUSH TABLES", test_sync_table_maps},
  };
  return dmh_cunit_run("sync", suite_init, suite_clean, tests, sizeof tests / sizeof tests[0]);
}

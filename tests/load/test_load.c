/*
 * The load unit (dmhost-load.so) on hand-written dump folders (docs/dump-format.md), run by the
 * supervisor against the real target (CTest fixture mariadb): mode load end to end, routes,
 * on-duplicate policies, an existing table of another definition, incomplete dump folders, a wrong
 * password and missing privileges. Every database name starts with lt_ (tests run in parallel).
 */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cunit_run.h"
#include "dmhost/error.h"
#include "dmhost/sdk.h"
#include "load_test_util.h"
#include "testdb.h"

static MYSQL *dst;

static const char *const lt_dbs[] = {"lt_basic", "lt_rsrc", "lt_rdst", "lt_dup",     "lt_mis",
                                     "lt_miss",  "lt_priv", "lt_keys", "lt_keys_ref"};
static const char *const lt_tasks[] = {
    "lt_basic", "lt_route", "lt_dup_replace", "lt_dup_ignore", "lt_dup_error", "lt_mis",
    "lt_miss",  "lt_miss2", "lt_pw",          "lt_priv",       "lt_keys"};

static void lt_clean(void) {
  lt_drop_all(dst, lt_dbs, sizeof lt_dbs / sizeof *lt_dbs, lt_tasks,
              sizeof lt_tasks / sizeof *lt_tasks);
}

static int suite_init(void) {
  return lt_suite_open(&dst, lt_clean);
}

static int suite_clean(void) {
  return lt_suite_close(&dst, lt_clean);
}

static const char lt_t1_schema[] = "CREATE TABLE `t1` (\n"
                                   "  `id` int(11) NOT NULL,\n"
                                   "  `name` varbinary(20) DEFAULT NULL,\n"
                                   "  `ts` datetime(6) DEFAULT NULL,\n"
                                   "  PRIMARY KEY (`id`)\n"
                                   ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;\n";

/* Mode load end to end on a hand-made folder: files of two tables (one with a `.` in its name,
 * escaped as @002e), several statements a file, a *.tmp file to ignore; then a second run finishes
 * at once and still reports the dump's position. */
static void test_load_handmade(void) {
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  lt_write_metadata(&e, "mysql-bin.000003", 1234, "0-1-100");
  lt_write(&e, "lt_basic-schema-create.sql",
           "CREATE DATABASE IF NOT EXISTS `lt_basic` /*!40100 DEFAULT CHARACTER SET utf8mb4 */;\n");
  lt_write(&e, "lt_basic.t1-schema.sql", lt_t1_schema);
  lt_write(&e, "lt_basic.t1.000000.sql",
           "INSERT INTO `t1` (`id`,`name`,`ts`) VALUES (1,0x616263,'2024-01-02 "
           "03:04:05.123456'),(2,NULL,NULL);\n"
           "INSERT INTO `t1` (`id`,`name`,`ts`) VALUES (3,'',NULL);\n");
  lt_write(&e, "lt_basic.t1.000001.sql",
           "INSERT INTO `t1` (`id`,`name`,`ts`) VALUES (4,0x0a0d,NULL);\n");
  lt_write(&e, "lt_basic.t1.000002.sql.tmp", "INSERT INTO garbage");
  lt_write(&e, "lt_basic.a@002eb-schema.sql",
           "CREATE TABLE `a.b` (\n  `x` int(11) NOT NULL,\n  PRIMARY KEY (`x`)\n);\n");
  lt_write(&e, "lt_basic.a@002eb.000000.sql", "INSERT INTO `a.b` (`x`) VALUES (7),(8);\n");
  lt_task t = {.name = "lt_basic"};
  CU_ASSERT_FATAL(lt_config(&e, &t) == 0);

  dmh_subtask *st;
  dmh_stage s = lt_run(&e, &st, 30000);
  CU_ASSERT_FATAL(st != NULL);
  char msg[600];
  if (s != DMH_STAGE_FINISHED && lt_first_error(st, msg, sizeof msg, NULL, 0, NULL))
    fprintf(stderr, "error: %s\n", msg);
  CU_ASSERT_EQUAL(s, DMH_STAGE_FINISHED);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM lt_basic.t1"), 4);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM lt_basic.t1 WHERE id = 1 AND name = 'abc' "
                                "AND ts = '2024-01-02 03:04:05.123456'"),
                  1);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM lt_basic.t1 WHERE id = 4 AND name = "
                                "0x0a0d"),
                  1);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM lt_basic.t1 WHERE id = 3 AND name = ''"), 1);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT SUM(x) FROM lt_basic.`a.b`"), 15);
  char buf[256];
  CU_ASSERT_STRING_EQUAL(lt_status_str(st, "metaBinlog", buf, sizeof buf),
                         "(mysql-bin.000003, 1234)");
  CU_ASSERT_STRING_EQUAL(lt_status_str(st, "metaBinlogGtid", buf, sizeof buf), "0-1-100");
  long long total = lt_status_int(st, "totalBytes");
  CU_ASSERT(total > 0);
  CU_ASSERT_EQUAL(lt_status_int(st, "finishedBytes"), total);
  CU_ASSERT_STRING_EQUAL(lt_status_str(st, "progress", buf, sizeof buf), "100.00 %");
  /* DM's checkpoint: one row per data file, all at their end. */
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM dm_meta.lt_basic_loader_checkpoint WHERE "
                                "id = 'lsrc' AND `offset` = end_pos"),
                  3);
  dmh_subtask_destroy(st);

  /* A later run: the load is finished already; nothing runs again (the rows would be doubled
   * into a table without a key, and a duplicate would fail with on-duplicate = error). */
  lt_exec(dst, "DELETE FROM lt_basic.t1 WHERE id = 2");
  double t0 = lt_now();
  s = lt_run(&e, &st, 30000);
  CU_ASSERT_EQUAL(s, DMH_STAGE_FINISHED);
  CU_ASSERT(lt_now() - t0 < 5.0);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM lt_basic.t1"), 3);
  CU_ASSERT_STRING_EQUAL(lt_status_str(st, "metaBinlog", buf, sizeof buf),
                         "(mysql-bin.000003, 1234)");
  CU_ASSERT_EQUAL(lt_status_int(st, "finishedBytes"), total);
  dmh_subtask_destroy(st);
  lt_teardown(&e);
}

/* Two source tables merged into one target table, in a renamed schema. */
static void test_load_routes(void) {
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  lt_write_metadata(&e, "mysql-bin.000001", 4, "");
  lt_write(&e, "lt_rsrc-schema-create.sql", "CREATE DATABASE IF NOT EXISTS `lt_rsrc`;\n");
  const char *schema =
      "CREATE TABLE `%s` (`id` int NOT NULL, `v` varchar(10), PRIMARY KEY (`id`));";
  char text[512];
  snprintf(text, sizeof text, schema, "t_1");
  lt_write(&e, "lt_rsrc.t_1-schema.sql", text);
  snprintf(text, sizeof text, schema, "t_2");
  lt_write(&e, "lt_rsrc.t_2-schema.sql", text);
  lt_write(&e, "lt_rsrc.t_1.000000.sql",
           "INSERT INTO `t_1` (`id`,`v`) VALUES (1,0x61),(2,0x62),(3,0x63);\n");
  lt_write(&e, "lt_rsrc.t_2.000000.sql",
           "INSERT INTO `t_2` (`id`,`v`) VALUES (4,0x64),(5,0x65);\n");
  lt_task t = {
      .name = "lt_route",
      .instance = "route-rules = [\"db\", \"tables\"];",
      .extra = "routes = {\n"
               "  db = { schema-pattern = \"lt_rsrc\"; target-schema = \"lt_rdst\"; };\n"
               "  tables = { schema-pattern = \"lt_rsrc\"; table-pattern = \"t_*\"; "
               "target-schema = \"lt_rdst\"; target-table = \"t\"; };\n"
               "};\n",
  };
  CU_ASSERT_FATAL(lt_config(&e, &t) == 0);
  dmh_subtask *st;
  dmh_stage s = lt_run(&e, &st, 30000);
  char msg[600];
  if (s != DMH_STAGE_FINISHED && lt_first_error(st, msg, sizeof msg, NULL, 0, NULL))
    fprintf(stderr, "error: %s\n", msg);
  CU_ASSERT_EQUAL(s, DMH_STAGE_FINISHED);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM lt_rdst.t"), 5);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT SUM(id) FROM lt_rdst.t"), 15);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE "
                                "SCHEMA_NAME = 'lt_rsrc'"),
                  0);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM information_schema.TABLES WHERE "
                                "TABLE_SCHEMA = 'lt_rdst'"),
                  1);
  dmh_subtask_destroy(st);
  lt_teardown(&e);
}

static const char lt_dup_schema[] =
    "CREATE TABLE `t` (`id` int NOT NULL, `v` varbinary(10) DEFAULT NULL, PRIMARY KEY (`id`))";

/* A target holding row 1 already; the dump has rows 1 ('new') and 2. */
static dmh_stage lt_dup_run(lt_env *e, const char *task, const char *policy, dmh_subtask **st) {
  lt_exec(dst, "DROP DATABASE IF EXISTS lt_dup");
  lt_exec(dst, "CREATE DATABASE lt_dup");
  lt_exec(dst, "USE lt_dup");
  lt_exec(dst, "%s", lt_dup_schema);
  lt_exec(dst, "INSERT INTO lt_dup.t VALUES (1, 'old')");
  char load[128];
  snprintf(load, sizeof load, "on-duplicate = \"%s\";", policy);
  lt_task t = {.name = task, .load = load};
  if (lt_config(e, &t) != 0)
    return DMH_STAGE_NEW;
  return lt_run(e, st, 30000);
}

static void test_load_on_duplicate(void) {
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  lt_write_metadata(&e, "mysql-bin.000001", 4, "");
  lt_write(&e, "lt_dup.t-schema.sql", lt_dup_schema);
  lt_write(&e, "lt_dup.t.000000.sql",
           "INSERT INTO `t` (`id`,`v`) VALUES (2,0x74776f);\n"
           "INSERT INTO `t` (`id`,`v`) VALUES (1,0x6e6577);\n");
  dmh_subtask *st;
  /* replace (DM's default): the dump's row wins */
  CU_ASSERT_EQUAL(lt_dup_run(&e, "lt_dup_replace", "replace", &st), DMH_STAGE_FINISHED);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM lt_dup.t"), 2);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM lt_dup.t WHERE id = 1 AND v = 'new'"), 1);
  dmh_subtask_destroy(st);
  /* ignore: the target's row stays */
  CU_ASSERT_EQUAL(lt_dup_run(&e, "lt_dup_ignore", "ignore", &st), DMH_STAGE_FINISHED);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM lt_dup.t"), 2);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM lt_dup.t WHERE id = 1 AND v = 'old'"), 1);
  dmh_subtask_destroy(st);
  /* error: the load stops at the duplicate, naming file and byte offset; retrying cannot help */
  CU_ASSERT_EQUAL(lt_dup_run(&e, "lt_dup_error", "error", &st), DMH_STAGE_PAUSED);
  char msg[600], raw[600];
  bool resumable = true;
  CU_ASSERT_EQUAL(lt_first_error(st, msg, sizeof msg, raw, sizeof raw, &resumable),
                  DM_ERR_DB_QUERY);
  CU_ASSERT(lt_has(msg, "lt_dup.t.000000.sql"));
  CU_ASSERT(lt_has(msg, "line 2 (byte 48) of "));
  CU_ASSERT(lt_has(msg, "`lt_dup`.`t`"));
  CU_ASSERT(lt_has(raw, "Duplicate entry '1'"));
  CU_ASSERT_FALSE(resumable);
  /* the statement before the failing one is committed with the checkpoint, not the failing one */
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM lt_dup.t"), 1);
  dmh_subtask_destroy(st);
  lt_teardown(&e);
}

/* A target table with another definition: a coded error naming the table and the column. */
static void test_load_table_mismatch(void) {
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  lt_write_metadata(&e, "mysql-bin.000001", 4, "");
  lt_write(&e, "lt_mis.t-schema.sql", lt_dup_schema);
  lt_write(&e, "lt_mis.t.000000.sql", "INSERT INTO `t` (`id`,`v`) VALUES (2,0x74776f);\n");
  lt_exec(dst, "CREATE DATABASE lt_mis");
  lt_exec(dst, "CREATE TABLE lt_mis.t (id int NOT NULL PRIMARY KEY, v bigint)");
  lt_task t = {.name = "lt_mis"};
  CU_ASSERT_FATAL(lt_config(&e, &t) == 0);
  dmh_subtask *st;
  CU_ASSERT_EQUAL(lt_run(&e, &st, 30000), DMH_STAGE_PAUSED);
  char msg[600];
  bool resumable = true;
  CU_ASSERT_EQUAL(lt_first_error(st, msg, sizeof msg, NULL, 0, &resumable),
                  DM_ERR_LOAD_TABLE_MISMATCH);
  CU_ASSERT(lt_has(msg, "table `lt_mis`.`t` exists on the target"));
  CU_ASSERT(lt_has(msg, "column `v` is bigint(20) NULL on the target but varbinary(10) NULL in the "
                        "dump"));
  CU_ASSERT_FALSE(resumable);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM lt_mis.t"), 0);
  dmh_subtask_destroy(st);
  lt_teardown(&e);
}

/* Incomplete dump folders: no metadata; a file the checkpoint still needs is gone. */
static void test_load_missing_files(void) {
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  lt_write(&e, "lt_miss.t-schema.sql", lt_dup_schema);
  lt_write(&e, "lt_miss.t.000000.sql", "INSERT INTO `t` (`id`,`v`) VALUES (1,0x61);\n");
  /* the second file fails (a duplicate within itself): its checkpoint row stays at 0 */
  lt_write(&e, "lt_miss.t.000001.sql", "INSERT INTO `t` (`id`,`v`) VALUES (10,0x61),(10,0x62);\n");
  lt_task t = {.name = "lt_miss", .load = "on-duplicate = \"error\";"};
  CU_ASSERT_FATAL(lt_config(&e, &t) == 0);
  dmh_subtask *st;
  char msg[600];
  bool resumable = true;
  CU_ASSERT_EQUAL(lt_run(&e, &st, 30000), DMH_STAGE_PAUSED);
  CU_ASSERT_EQUAL(lt_first_error(st, msg, sizeof msg, NULL, 0, &resumable),
                  DM_ERR_LOAD_DUMP_INCOMPLETE);
  CU_ASSERT(lt_has(msg, "has no `metadata` file"));
  CU_ASSERT(lt_has(msg, e.dump_dir));
  CU_ASSERT_FALSE(resumable);
  dmh_subtask_destroy(st);

  lt_write_metadata(&e, "mysql-bin.000001", 4, "");
  CU_ASSERT_EQUAL(lt_run(&e, &st, 30000), DMH_STAGE_PAUSED);
  CU_ASSERT_EQUAL(lt_first_error(st, msg, sizeof msg, NULL, 0, NULL), DM_ERR_DB_QUERY);
  CU_ASSERT(lt_has(msg, "lt_miss.t.000001.sql"));
  dmh_subtask_destroy(st);
  char path[512];
  snprintf(path, sizeof path, "%s/lt_miss.t.000001.sql", e.dump_dir);
  CU_ASSERT_EQUAL(unlink(path), 0);
  CU_ASSERT_EQUAL(lt_run(&e, &st, 30000), DMH_STAGE_PAUSED);
  CU_ASSERT_EQUAL(lt_first_error(st, msg, sizeof msg, NULL, 0, &resumable),
                  DM_ERR_LOAD_DUMP_INCOMPLETE);
  CU_ASSERT(lt_has(msg, "lt_miss.t.000001.sql is in the load checkpoint"));
  CU_ASSERT(lt_has(msg, "no longer in the dump folder"));
  CU_ASSERT_FALSE(resumable);
  dmh_subtask_destroy(st);

  /* a data file without its schema file */
  lt_write(&e, "lt_miss.u.000000.sql", "INSERT INTO `u` (`id`) VALUES (1);\n");
  t.name = "lt_miss2";
  CU_ASSERT_FATAL(lt_config(&e, &t) == 0);
  CU_ASSERT_EQUAL(lt_run(&e, &st, 30000), DMH_STAGE_PAUSED);
  CU_ASSERT_EQUAL(lt_first_error(st, msg, sizeof msg, NULL, 0, NULL), DM_ERR_LOAD_FILE_FORMAT);
  CU_ASSERT(lt_has(msg, "lt_miss.u.000000.sql"));
  CU_ASSERT(lt_has(msg, "without its `<db>.<table>-schema.sql`"));
  dmh_subtask_destroy(st);
  lt_teardown(&e);
}

/* A wrong password: DM_ERR_DB_CONNECT naming the target, not resumable (dm_db_connect, as every
 * unit's connection: auto-resume retrying a refused account helps nothing and may lock it out;
 * fix the password, then resume-task). */
static void test_load_wrong_password(void) {
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  lt_write_metadata(&e, "mysql-bin.000001", 4, "");
  lt_task t = {.name = "lt_pw", .target_password = "wrong-password"};
  CU_ASSERT_FATAL(lt_config(&e, &t) == 0);
  dmh_subtask *st = lt_subtask(&e);
  CU_ASSERT_FATAL(st != NULL);
  dm_error err;
  memset(&err, 0, sizeof err);
  int rc = dmh_subtask_start(st, &err);
  char msg[600], raw[600];
  bool resumable = false;
  int code = rc < 0 ? err.code : lt_first_error(st, msg, sizeof msg, raw, sizeof raw, &resumable);
  if (rc < 0) {
    dm_strlcpy(msg, err.message, sizeof msg);
    dm_strlcpy(raw, err.raw_cause, sizeof raw);
    resumable = err.resumable;
  }
  CU_ASSERT_EQUAL(code, DM_ERR_DB_CONNECT);
  testdb_params p;
  testdb_params_get(TESTDB_TARGET, &p);
  char where[300];
  snprintf(where, sizeof where, "cannot connect to the target %s:%u as `root`", p.host, p.port);
  CU_ASSERT(lt_has(msg, where));
  CU_ASSERT(lt_has(raw, "Access denied"));
  CU_ASSERT_FALSE(resumable);
  dmh_subtask_destroy(st);
  lt_teardown(&e);
}

/* An unreachable target (nothing listens on port 1): DM_ERR_DB_CONNECT naming host:port, resumable
 * (the server may come back), and nothing was written anywhere. */
static void test_load_unreachable_target(void) {
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  lt_write_metadata(&e, "mysql-bin.000001", 4, "");
  lt_task t = {.name = "lt_unreach", .target_port = 1};
  CU_ASSERT_FATAL(lt_config(&e, &t) == 0);
  dmh_subtask *st = lt_subtask(&e);
  CU_ASSERT_FATAL(st != NULL);
  dm_error err;
  memset(&err, 0, sizeof err);
  int rc = dmh_subtask_start(st, &err);
  char msg[600], raw[600];
  bool resumable = false;
  int code = rc < 0 ? err.code : lt_first_error(st, msg, sizeof msg, raw, sizeof raw, &resumable);
  if (rc < 0) {
    dm_strlcpy(msg, err.message, sizeof msg);
    resumable = err.resumable;
  }
  CU_ASSERT_EQUAL(code, DM_ERR_DB_CONNECT);
  CU_ASSERT(lt_has(msg, ":1 as `root`"));
  CU_ASSERT_TRUE(resumable);
  dmh_subtask_destroy(st);
  lt_teardown(&e);
}

/* A user without the privileges the load needs: DM_ERR_DB_PRIVILEGE naming what is missing. */
static void test_load_privileges(void) {
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  lt_write_metadata(&e, "mysql-bin.000001", 4, "");
  lt_write(&e, "lt_priv.t-schema.sql", lt_dup_schema);
  lt_write(&e, "lt_priv.t.000000.sql", "INSERT INTO `t` (`id`,`v`) VALUES (2,0x74776f);\n");
  lt_task t = {.name = "lt_priv", .target_user = "dmh_limited", .target_password = "limited"};
  CU_ASSERT_FATAL(lt_config(&e, &t) == 0);
  dmh_subtask *st;
  CU_ASSERT_EQUAL(lt_run(&e, &st, 30000), DMH_STAGE_PAUSED);
  char msg[600];
  bool resumable = true;
  CU_ASSERT_EQUAL(lt_first_error(st, msg, sizeof msg, NULL, 0, &resumable), DM_ERR_DB_PRIVILEGE);
  CU_ASSERT(lt_has(msg, "user `dmh_limited`"));
  CU_ASSERT(lt_has(msg, "lacks SELECT, INSERT, UPDATE, CREATE on `dm_meta`"));
  CU_ASSERT(lt_has(msg, "SELECT, INSERT, DELETE, CREATE, ALTER on `lt_priv`"));
  CU_ASSERT_FALSE(resumable);
  dmh_subtask_destroy(st);
  lt_teardown(&e);
}

/* Three tables of the deferred-keys cases: plain keys (composite, prefix, with a comment) beside a
 * unique one; an AUTO_INCREMENT column whose only key is a plain one (that key must stay in the
 * CREATE); a foreign key (nothing is deferred). */
static const char *const lt_keys_schemas[][2] = {
    {"t", "CREATE TABLE `t` (\n"
          "  `id` int(11) NOT NULL AUTO_INCREMENT,\n"
          "  `u` int(11) NOT NULL,\n"
          "  `k` int(11) NOT NULL,\n"
          "  `s` varchar(40) NOT NULL,\n"
          "  `note` text DEFAULT NULL,\n"
          "  PRIMARY KEY (`id`),\n"
          "  UNIQUE KEY `u_1` (`u`),\n"
          "  KEY `k_s` (`k`,`s`),\n"
          "  KEY `s_p` (`s`(10)) COMMENT 'prefix, with a comma',\n"
          "  KEY `n_p` (`note`(20))\n"
          ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci"},
    {"a", "CREATE TABLE `a` (\n"
          "  `x` int(11) NOT NULL,\n"
          "  `n` bigint(20) NOT NULL AUTO_INCREMENT,\n"
          "  KEY `n` (`n`),\n"
          "  KEY `x` (`x`)\n"
          ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci"},
    {"f", "CREATE TABLE `f` (\n"
          "  `id` int(11) NOT NULL,\n"
          "  `tid` int(11) DEFAULT NULL,\n"
          "  PRIMARY KEY (`id`),\n"
          "  KEY `tid` (`tid`),\n"
          "  CONSTRAINT `f_t` FOREIGN KEY (`tid`) REFERENCES `t` (`id`)\n"
          ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci"},
};

static void lt_keys_assert_same(void) {
  for (size_t i = 0; i < sizeof lt_keys_schemas / sizeof *lt_keys_schemas; i++)
    CU_ASSERT(lt_same_create(dst, "lt_keys_ref", dst, "lt_keys", lt_keys_schemas[i][0]));
}

/* defer-secondary-keys: the tables end with the keys the dump has (SHOW CREATE TABLE equals that
 * of the dump's statement run directly); a load whose data was in but whose ALTER never ran (a
 * crash between the two, made here by dropping keys and marking them pending) adds them at the
 * next run without loading a row again; and with the setting off nothing is deferred. */
static void test_load_deferred_keys(void) {
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  lt_write_metadata(&e, "mysql-bin.000001", 4, "");
  lt_exec(dst, "CREATE DATABASE lt_keys_ref");
  for (size_t i = 0; i < sizeof lt_keys_schemas / sizeof *lt_keys_schemas; i++) {
    char name[64], text[1024];
    CU_ASSERT_EQUAL(lt_exec(dst, "USE lt_keys_ref"), 0);
    CU_ASSERT_EQUAL(lt_exec(dst, "%s", lt_keys_schemas[i][1]), 0);
    snprintf(name, sizeof name, "lt_keys.%s-schema.sql", lt_keys_schemas[i][0]);
    snprintf(text, sizeof text, "%s;\n", lt_keys_schemas[i][1]);
    lt_write(&e, name, text);
  }
  lt_write(&e, "lt_keys.t.000000.sql",
           "INSERT INTO `t` (`id`,`u`,`k`,`s`,`note`) VALUES (1,10,5,'abc',NULL),"
           "(2,20,5,'abd','x'),(3,30,6,'b',NULL);\n");
  lt_write(&e, "lt_keys.t.000001.sql",
           "INSERT INTO `t` (`id`,`u`,`k`,`s`,`note`) VALUES (4,40,7,'c','yy');\n");
  lt_write(&e, "lt_keys.a.000000.sql", "INSERT INTO `a` (`x`,`n`) VALUES (1,1),(2,2),(3,3);\n");
  lt_write(&e, "lt_keys.f.000000.sql", "INSERT INTO `f` (`id`,`tid`) VALUES (1,1),(2,NULL);\n");
  lt_task t = {.name = "lt_keys", .load = "on-duplicate = \"error\";"};
  CU_ASSERT_FATAL(lt_config(&e, &t) == 0);
  dmh_subtask *st;
  char msg[600];
  dmh_stage s = lt_run(&e, &st, 30000);
  if (s != DMH_STAGE_FINISHED && lt_first_error(st, msg, sizeof msg, NULL, 0, NULL))
    fprintf(stderr, "error: %s\n", msg);
  CU_ASSERT_EQUAL_FATAL(s, DMH_STAGE_FINISHED);
  dmh_subtask_destroy(st);
  lt_keys_assert_same();
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM lt_keys.t"), 4);
  /* what was deferred: the plain keys of t, `x` of a; not u_1, not `n`, nothing of f */
  const char *q = "SELECT COUNT(*) FROM dm_meta.lt_keys_loader_keys WHERE id = 'lsrc' AND "
                  "target_schema = 'lt_keys'";
  CU_ASSERT_EQUAL(lt_count(dst, "%s AND done = 1", q), 2);
  CU_ASSERT_EQUAL(lt_count(dst,
                           "%s AND target_table = 't' AND key_defs = 'KEY `k_s` (`k`,`s`)\n"
                           "KEY `s_p` (`s`(10)) COMMENT ''prefix, with a comma''\n"
                           "KEY `n_p` (`note`(20))'",
                           q),
                  1);
  CU_ASSERT_EQUAL(lt_count(dst, "%s AND target_table = 'a' AND key_defs = 'KEY `x` (`x`)'", q), 1);

  /* The data is in, t's keys are not, the record says pending: the state a crash between the
   * last batch and the ALTER leaves. The next run adds them (on-duplicate = error: a row loaded
   * again would fail it). */
  CU_ASSERT_EQUAL(lt_exec(dst, "ALTER TABLE lt_keys.t DROP KEY k_s, DROP KEY s_p, DROP KEY n_p"),
                  0);
  CU_ASSERT_EQUAL(lt_exec(dst, "UPDATE dm_meta.lt_keys_loader_keys SET done = 0 WHERE "
                               "target_table = 't'"),
                  0);
  s = lt_run(&e, &st, 30000);
  if (s != DMH_STAGE_FINISHED && lt_first_error(st, msg, sizeof msg, NULL, 0, NULL))
    fprintf(stderr, "error: %s\n", msg);
  CU_ASSERT_EQUAL(s, DMH_STAGE_FINISHED);
  dmh_subtask_destroy(st);
  lt_keys_assert_same();
  CU_ASSERT_EQUAL(lt_count(dst, "%s AND done = 1", q), 2);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM lt_keys.t"), 4);

  /* defer-secondary-keys = false: created with every key, nothing recorded */
  lt_exec(dst, "DROP DATABASE lt_keys");
  lt_drop_checkpoint(dst, "lt_keys");
  t.load = "defer-secondary-keys = false;";
  CU_ASSERT_FATAL(lt_config(&e, &t) == 0);
  CU_ASSERT_EQUAL(lt_run(&e, &st, 30000), DMH_STAGE_FINISHED);
  dmh_subtask_destroy(st);
  lt_keys_assert_same();
  CU_ASSERT_EQUAL(lt_count(dst, "%s", q), 0);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM lt_keys.a"), 3);
  lt_teardown(&e);
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"mode load end to end on a hand-made folder", test_load_handmade},
      {"routes: merge two tables, rename the schema", test_load_routes},
      {"on-duplicate replace, ignore, error", test_load_on_duplicate},
      {"existing table of another definition", test_load_table_mismatch},
      {"incomplete dump folders", test_load_missing_files},
      {"wrong password", test_load_wrong_password},
      {"unreachable target", test_load_unreachable_target},
      {"missing privileges", test_load_privileges},
      {"deferred secondary keys", test_load_deferred_keys},
  };
  return dmh_cunit_run("load", suite_init, suite_clean, tests, sizeof tests / sizeof tests[0]);
}

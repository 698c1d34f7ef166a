/*
 * The precheck (host/precheck/precheck*.c, docs/precheck.md) against the real servers: a passing
 * run, each item failing (or warning) on purpose with its message, the items a mode applies,
 * ignore-checking-items, and start-task, check-task and `dmhost run` refused by a failed item.
 * Per-test accounts and task settings only: no global of the shared servers changes here
 * (test_precheck_globals does that, alone).
 */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "control.h"
#include "cunit_run.h"
#include "dmhost/sdk.h"
#include "precheck_test_util.h"
#include "registry.h"
#include "run.h"
#include "testdb.h"

static MYSQL *src, *dst;

#define PT_BAL(db) "block-allow-list = { bal = { do-dbs = [\"" db "\"]; }; };\n"
#define PT_INST "block-allow-list = \"bal\";"

static const char *const pt_accounts[] = {"pc_sel", "pc_noslave", "pc_tsel", "pc_tlim"};

static int suite_init(void) {
  if (!(src = lt_source()) || !(dst = lt_target()))
    return 1;
  return lt_exec(src, "DROP DATABASE IF EXISTS pc_db") || lt_exec(src, "CREATE DATABASE pc_db") ||
         lt_exec(src, "CREATE TABLE pc_db.t (id INT PRIMARY KEY, v VARCHAR(10))") ||
         lt_exec(src, "DROP DATABASE IF EXISTS pc_nokey") ||
         lt_exec(src, "CREATE DATABASE pc_nokey") ||
         lt_exec(src, "CREATE TABLE pc_nokey.nk (a INT NULL, b INT, UNIQUE KEY (a))") ||
         lt_exec(src, "CREATE TABLE pc_nokey.ok (a INT NOT NULL, b INT, UNIQUE KEY (a))") ||
         lt_exec(src, "CREATE TABLE pc_nokey.bare (a INT)");
}

static int suite_clean(void) {
  for (size_t i = 0; i < sizeof pt_accounts / sizeof pt_accounts[0]; i++) {
    lt_account_drop(src, pt_accounts[i]);
    lt_account_drop(dst, pt_accounts[i]);
  }
  lt_exec(src, "DROP DATABASE IF EXISTS pc_db");
  lt_exec(src, "DROP DATABASE IF EXISTS pc_nokey");
  lt_exec(dst, "DROP DATABASE IF EXISTS pc_db");
  testdb_close(src);
  testdb_close(dst);
  return 0;
}

/* A task on pc_db (mode, more top-level settings) into e. */
/* The dump's consistency that needs RELOAD (the default, auto, takes what the account may). */
#define PT_FLUSH "dump = { consistency = \"flush\"; };\n"

static int pt_config(lt_env *e, const char *name, const char *mode, const char *extra,
                     lt_task *more) {
  char x[2048];
  snprintf(x, sizeof x, "%s%s", PT_BAL("pc_db"), extra ? extra : "");
  lt_task t = more ? *more : (lt_task){0};
  t.name = name;
  t.mode = mode;
  t.instance = PT_INST;
  t.extra = x;
  return lt_config(e, &t);
}

/* Everything as the test pair is set up: no item fails or warns; the JSON has DM's shape. */
static void test_pass(void) {
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  CU_ASSERT_FATAL(pt_config(&e, "pc_pass", "all", NULL, NULL) == 0);
  dmh_precheck pc;
  CU_ASSERT_FATAL(pt_run(&e, &pc) == 0);
  static const char *const items[] = {"version",
                                      "server_id",
                                      "binlog_enable",
                                      "binlog_format",
                                      "binlog_row_image",
                                      "dump_privilege",
                                      "replication_privilege",
                                      "target_privilege",
                                      "target_writable",
                                      "table_schema",
                                      "target_charset",
                                      "auto_increment_ID",
                                      "conn_number_checking"};
  for (size_t i = 0; i < sizeof items / sizeof items[0]; i++)
    CU_ASSERT(pt_is(&pc, items[i], DMH_CHECK_PASS, NULL));
  CU_ASSERT_PTR_NULL(pt_item(&pc, "relay_disk_space")); /* the relay is off */
  CU_ASSERT_EQUAL(pc.n, (int)(sizeof items / sizeof items[0]));
  CU_ASSERT_EQUAL(pc.n_fail + pc.n_warn, 0);
  dm_error err;
  CU_ASSERT_EQUAL(dmh_precheck_refusal(&pc, "x", &err), 0);
  json_object *o = dmh_precheck_json(&pc), *sum, *v, *res;
  CU_ASSERT_FATAL(json_object_object_get_ex(o, "summary", &sum));
  CU_ASSERT(json_object_object_get_ex(sum, "passed", &v) && json_object_get_boolean(v));
  CU_ASSERT(json_object_object_get_ex(sum, "total", &v) && json_object_get_int(v) == pc.n);
  CU_ASSERT_FATAL(json_object_object_get_ex(o, "results", &res));
  json_object *r0 = json_object_array_get_idx(res, 0);
  CU_ASSERT(json_object_object_get_ex(r0, "id", &v) && json_object_get_int(v) == 1);
  CU_ASSERT(json_object_object_get_ex(r0, "name", &v) &&
            strcmp(json_object_get_string(v), "version") == 0);
  CU_ASSERT(json_object_object_get_ex(r0, "state", &v) &&
            strcmp(json_object_get_string(v), "pass") == 0);
  CU_ASSERT(json_object_object_get_ex(r0, "extra", &v) &&
            strcmp(json_object_get_string(v), "lsrc") == 0);
  CU_ASSERT(json_object_object_get_ex(r0, "desc", &v));
  CU_ASSERT(!json_object_object_get_ex(r0, "instruction", &v)); /* only when not passed */
  json_object_put(o);
  dmh_precheck_free(&pc);
  lt_teardown(&e);
}

static void test_version(void) {
  static const struct {
    const char *v;
    dmh_check_state want;
  } cases[] = {
      {"10.11.6-MariaDB-0+deb12u1-log", DMH_CHECK_PASS},
      {"10.5.0-MariaDB", DMH_CHECK_PASS},
      {"11.4.2-MariaDB", DMH_CHECK_PASS},
      {"10.4.32-MariaDB", DMH_CHECK_FAIL},
      {"5.5.68-MariaDB", DMH_CHECK_FAIL},
      {"8.0.36", DMH_CHECK_WARN},
      {"5.7.44-log", DMH_CHECK_WARN},
      {"5.6.51", DMH_CHECK_FAIL},
      {"garbage", DMH_CHECK_FAIL},
  };
  char why[256];
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    dmh_check_state s = dmh_precheck_version(cases[i].v, why, sizeof why);
    if (s != cases[i].want)
      fprintf(stderr, "%s: %d (%s)\n", cases[i].v, (int)s, why);
    CU_ASSERT_EQUAL(s, cases[i].want);
  }
  dmh_precheck_version("10.4.32-MariaDB", why, sizeof why);
  CU_ASSERT(lt_has(why, "MariaDB 10.4 is older than 10.5"));
}

/* dump_privilege follows the dump's own table (dmhost/grants.h): SELECT alone is enough for
 * consistency snapshot, not for flush (RELOAD) or, with a sync to follow, lock (REPLICATION
 * CLIENT). */
static void test_dump_privilege(void) {
  CU_ASSERT_FATAL(lt_account(src, "pc_sel", "pw", "SELECT, LOCK TABLES ON *.*") == 0);
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  lt_task acc = {.source_user = "pc_sel", .source_password = "pw"};
  dmh_precheck pc;
  CU_ASSERT_FATAL(pt_config(&e, "pc_dumppriv", "full", PT_FLUSH, &acc) == 0);
  CU_ASSERT_FATAL(pt_run(&e, &pc) == 0);
  CU_ASSERT(
      pt_is(&pc, "dump_privilege", DMH_CHECK_FAIL, "the source account `pc_sel` on 127.0.0.1:"));
  CU_ASSERT(pt_is(&pc, "dump_privilege", DMH_CHECK_FAIL,
                  "lacks RELOAD, which the dump needs with consistency flush"));
  CU_ASSERT_PTR_NULL(pt_item(&pc, "replication_privilege")); /* mode full: no sync */
  CU_ASSERT(lt_has(pt_item(&pc, "dump_privilege")->instruction, "GRANT"));
  dmh_precheck_free(&pc);
  /* the default, auto, takes the best mode the account may: SELECT is enough */
  CU_ASSERT_FATAL(pt_config(&e, "pc_dumppriv", "full", NULL, &acc) == 0);
  CU_ASSERT_FATAL(pt_run(&e, &pc) == 0);
  CU_ASSERT(pt_is(&pc, "dump_privilege", DMH_CHECK_PASS, NULL));
  dmh_precheck_free(&pc);

  CU_ASSERT_FATAL(
      pt_config(&e, "pc_dumppriv", "all", "dump = { consistency = \"lock\"; };\n", &acc) == 0);
  CU_ASSERT_FATAL(pt_run(&e, &pc) == 0);
  CU_ASSERT(pt_is(&pc, "dump_privilege", DMH_CHECK_FAIL,
                  "lacks REPLICATION CLIENT, which the dump needs with consistency lock and a "
                  "sync to follow"));
  dmh_precheck_free(&pc);

  CU_ASSERT_FATAL(
      pt_config(&e, "pc_dumppriv", "full", "dump = { consistency = \"snapshot\"; };\n", &acc) == 0);
  CU_ASSERT_FATAL(pt_run(&e, &pc) == 0);
  CU_ASSERT(pt_is(&pc, "dump_privilege", DMH_CHECK_PASS, NULL));
  dmh_precheck_free(&pc);
  lt_teardown(&e);
}

/* No REPLICATION SLAVE: the binlog cannot be read. BINLOG MONITOR counts as REPLICATION CLIENT. */
static void test_replication_privilege(void) {
  CU_ASSERT_FATAL(lt_account(src, "pc_noslave", "pw", "SELECT, RELOAD, BINLOG MONITOR ON *.*") ==
                  0);
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  lt_task acc = {.source_user = "pc_noslave", .source_password = "pw"};
  CU_ASSERT_FATAL(pt_config(&e, "pc_replpriv", "all", NULL, &acc) == 0);
  dmh_precheck pc;
  CU_ASSERT_FATAL(pt_run(&e, &pc) == 0);
  CU_ASSERT(pt_is(&pc, "replication_privilege", DMH_CHECK_FAIL,
                  "the source account `pc_noslave` on 127.0.0.1:"));
  CU_ASSERT(pt_is(&pc, "replication_privilege", DMH_CHECK_FAIL, "lacks REPLICATION SLAVE ("));
  CU_ASSERT(pt_is(&pc, "dump_privilege", DMH_CHECK_PASS, NULL));
  CU_ASSERT_EQUAL(pc.n_fail, 1);
  dm_error err;
  CU_ASSERT_EQUAL(dmh_precheck_refusal(&pc, "start-task pc_replpriv", &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_PRECHECK_FAILED);
  CU_ASSERT(lt_has(err.message, "start-task pc_replpriv: the precheck failed: "
                                "replication_privilege (lsrc): the source account `pc_noslave`"));
  CU_ASSERT(lt_has(err.raw_cause, "1 of 13 item(s) failed"));
  CU_ASSERT_FALSE(err.resumable);
  dmh_precheck_free(&pc);
  lt_teardown(&e);
}

/* A "source" without a binary log (the test pair's target runs skip-log-bin) and with the target's
 * own server_id. */
static void test_binlog_enable_and_same_server(void) {
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  CU_ASSERT_FATAL(pt_config(&e, "pc_nobinlog", "incremental", NULL, NULL) == 0);
  testdb_params tp;
  testdb_params_get(TESTDB_TARGET, &tp);
  e.source->from.ep.port = (int)tp.port; /* the source is the target server */
  long long log_bin = -1;
  CU_ASSERT_FATAL(testdb_query_int(dst, &log_bin, "SELECT @@GLOBAL.log_bin") == 0);
  CU_ASSERT_EQUAL_FATAL(log_bin, 0); /* the precondition */
  dmh_precheck pc;
  CU_ASSERT_FATAL(pt_run(&e, &pc) == 0);
  CU_ASSERT(pt_is(&pc, "binlog_enable", DMH_CHECK_FAIL,
                  "the source's log_bin is OFF, the sync needs ON"));
  CU_ASSERT(pt_is(&pc, "server_id", DMH_CHECK_FAIL,
                  "the source and the target have the same "
                  "server_id"));
  CU_ASSERT_PTR_NULL(pt_item(&pc, "dump_privilege")); /* mode incremental: no dump */
  dmh_precheck_free(&pc);
  lt_teardown(&e);
}

/* The task's sync reads the binlog with the source's own server_id. */
static void test_server_id_replica(void) {
  long long id = -1;
  CU_ASSERT_FATAL(testdb_query_int(src, &id, "SELECT @@GLOBAL.server_id") == 0);
  CU_ASSERT_FATAL(id > 0);
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  char sync[64];
  snprintf(sync, sizeof sync, "server-id = %lld;", id);
  lt_task more = {.sync = sync};
  CU_ASSERT_FATAL(pt_config(&e, "pc_sid", "incremental", NULL, &more) == 0);
  dmh_precheck pc;
  CU_ASSERT_FATAL(pt_run(&e, &pc) == 0);
  char want[160];
  snprintf(want, sizeof want,
           "the sync's server-id (task file) is %lld, the source's own server_id", id);
  CU_ASSERT(pt_is(&pc, "server_id", DMH_CHECK_FAIL, want));
  dmh_precheck_free(&pc);

  /* the relay's, when the relay reads the binlog */
  char relay[512];
  snprintf(relay, sizeof relay,
           "enable-relay = true;\nrelay-dir = \"%s/relay\";\nrelay = { server-id = %lld; };\n",
           e.dir, id);
  lt_task more2 = {.source_extra = relay};
  CU_ASSERT_FATAL(pt_config(&e, "pc_sid", "incremental", NULL, &more2) == 0);
  CU_ASSERT_FATAL(pt_run(&e, &pc) == 0);
  snprintf(want, sizeof want,
           "the relay's server-id (source file) is %lld, the source's own server_id", id);
  CU_ASSERT(pt_is(&pc, "server_id", DMH_CHECK_FAIL, want));
  dmh_precheck_free(&pc);
  lt_teardown(&e);
}

/* A table without a primary key or NOT NULL unique key is a warning, which refuses nothing. */
static void test_table_keys(void) {
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  lt_task t = {.name = "pc_keys", .mode = "all", .instance = PT_INST, .extra = PT_BAL("pc_nokey")};
  CU_ASSERT_FATAL(lt_config(&e, &t) == 0);
  dmh_precheck pc;
  CU_ASSERT_FATAL(pt_run(&e, &pc) == 0);
  CU_ASSERT(pt_is(&pc, "table_schema", DMH_CHECK_WARN,
                  "2 replicated table(s) have neither a primary key nor a NOT NULL unique key: "
                  "`pc_nokey`.`bare`, `pc_nokey`.`nk`"));
  char buf[1024];
  CU_ASSERT(lt_lacks(pt_msgs(pt_item(&pc, "table_schema"), buf, sizeof buf), "`ok`"));
  CU_ASSERT_EQUAL(pc.n_fail, 0);
  CU_ASSERT_EQUAL(pc.n_warn, 1);
  dm_error err;
  CU_ASSERT_EQUAL(dmh_precheck_refusal(&pc, "x", &err), 0);
  dmh_precheck_free(&pc);
  lt_teardown(&e);
}

/* auto_increment_ID (docs/shard.md, "Merged keys and the precheck"): two tables of pc_ai with an
 * AUTO_INCREMENT primary key routed into one target table. Fails while no extract column keeps
 * their ids apart (no extract group and no target table; a target key without the extract
 * column), warns as DM does once the target's key has it; a table routed alone passes. */
static void pc_ai_run(const char *name, const char *extract, dmh_precheck *pc) {
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  char extra[1024];
  snprintf(extra, sizeof extra,
           "block-allow-list = { bal = { do-dbs = [\"pc_ai\"]; }; };\n"
           "routes = { m = { schema-pattern = \"pc_ai\"; table-pattern = \"t?\"; target-schema "
           "= \"pc_ai_m\"; target-table = \"t\"; %s }; };\n",
           extract);
  lt_task t = {
      .name = name, .mode = "all", .instance = PT_INST " route-rules = [\"m\"];", .extra = extra};
  CU_ASSERT_FATAL(lt_config(&e, &t) == 0);
  CU_ASSERT_FATAL(pt_run(&e, pc) == 0);
  lt_teardown(&e);
}

static void test_auto_increment(void) {
  CU_ASSERT_FATAL(lt_exec(src, "DROP DATABASE IF EXISTS pc_ai") == 0);
  CU_ASSERT_FATAL(lt_exec(src, "CREATE DATABASE pc_ai") == 0);
  CU_ASSERT(lt_exec(src, "CREATE TABLE pc_ai.t1 (id INT AUTO_INCREMENT PRIMARY KEY, v INT)") == 0);
  CU_ASSERT(lt_exec(src, "CREATE TABLE pc_ai.t2 (id INT AUTO_INCREMENT PRIMARY KEY, v INT)") == 0);
  CU_ASSERT(lt_exec(src, "CREATE TABLE pc_ai.solo (id INT AUTO_INCREMENT PRIMARY KEY)") == 0);
  lt_exec(dst, "DROP DATABASE IF EXISTS pc_ai_m");
  static const char ext[] =
      "extract-table = { table-regexp = \"t(.*)\"; target-column = \"c_table\"; };";
  dmh_precheck pc;
  char buf[2048];

  /* no extract column, no target table */
  pc_ai_run("pc_ai1", "", &pc);
  CU_ASSERT(pt_is(&pc, "auto_increment_ID", DMH_CHECK_FAIL,
                  "`pc_ai`.`t1` merges 2 table(s) of this source into `pc_ai_m`.`t`; its key "
                  "`PRIMARY` (id) holds AUTO_INCREMENT column `id`, and its route fills no "
                  "extract column"));
  CU_ASSERT(lt_lacks(pt_msgs(pt_item(&pc, "auto_increment_ID"), buf, sizeof buf), "solo"));
  dm_error err;
  CU_ASSERT_EQUAL(dmh_precheck_refusal(&pc, "x", &err), -1); /* a failed item refuses the run */
  dmh_precheck_free(&pc);

  /* an extract column, and a target table whose key lacks it */
  CU_ASSERT_FATAL(lt_exec(dst, "CREATE DATABASE pc_ai_m") == 0);
  CU_ASSERT(lt_exec(dst, "CREATE TABLE pc_ai_m.t (id INT PRIMARY KEY, v INT, c_table "
                         "VARCHAR(64) NOT NULL DEFAULT '')") == 0);
  pc_ai_run("pc_ai2", ext, &pc);
  CU_ASSERT(pt_is(&pc, "auto_increment_ID", DMH_CHECK_FAIL,
                  "and the target's key `PRIMARY` (id) has no extract column: rows of different "
                  "shards with the same `id` would overwrite each other"));
  dmh_precheck_free(&pc);

  /* the target's key has the extract column: DM's warning, nothing refused */
  CU_ASSERT(lt_exec(dst, "ALTER TABLE pc_ai_m.t DROP PRIMARY KEY, ADD PRIMARY KEY (id, c_table)") ==
            0);
  pc_ai_run("pc_ai3", ext, &pc);
  CU_ASSERT(pt_is(&pc, "auto_increment_ID", DMH_CHECK_WARN,
                  "sourceID lsrc table `pc_ai`.`t1` of sharding `pc_ai_m`.`t` have auto-increment "
                  "key, please make sure them don't conflict in target table!"));
  CU_ASSERT_EQUAL(dmh_precheck_refusal(&pc, "x", &err), 0);
  dmh_precheck_free(&pc);

  /* the item is ignored when asked */
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  lt_task t = {.name = "pc_ai4",
               .mode = "all",
               .instance = PT_INST " route-rules = [\"m\"];",
               .extra = "block-allow-list = { bal = { do-dbs = [\"pc_ai\"]; }; };\n"
                        "routes = { m = { schema-pattern = \"pc_ai\"; table-pattern = \"t?\"; "
                        "target-schema = \"pc_ai_x\"; target-table = \"t\"; }; };\n"
                        "ignore-checking-items = [\"auto_increment_ID\"];\n"};
  CU_ASSERT_FATAL(lt_config(&e, &t) == 0);
  CU_ASSERT_FATAL(pt_run(&e, &pc) == 0);
  CU_ASSERT_PTR_NULL(pt_item(&pc, "auto_increment_ID"));
  dmh_precheck_free(&pc);
  lt_teardown(&e);
  lt_exec(src, "DROP DATABASE IF EXISTS pc_ai");
  lt_exec(dst, "DROP DATABASE IF EXISTS pc_ai_m");
}

/* A target account that may only read; then one with the two schemas granted (by LIKE patterns,
 * as SHOW GRANTS prints them). */
static void test_target_privilege(void) {
  CU_ASSERT_FATAL(lt_account(dst, "pc_tsel", "pw", "SELECT ON *.*") == 0);
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  lt_task acc = {.target_user = "pc_tsel", .target_password = "pw"};
  CU_ASSERT_FATAL(pt_config(&e, "pc_tpriv", "full", NULL, &acc) == 0);
  dmh_precheck pc;
  CU_ASSERT_FATAL(pt_run(&e, &pc) == 0);
  CU_ASSERT(
      pt_is(&pc, "target_privilege", DMH_CHECK_FAIL, "the target account `pc_tsel` on 127.0.0.1:"));
  CU_ASSERT(pt_is(&pc, "target_privilege", DMH_CHECK_FAIL,
                  "lacks INSERT, UPDATE, DELETE, CREATE, DROP, ALTER on `dm_meta` (the meta "
                  "schema: checkpoints)"));
  CU_ASSERT(pt_is(&pc, "target_privilege", DMH_CHECK_FAIL, "on `pc_db` (a replicated schema)"));
  CU_ASSERT(pt_is(&pc, "target_writable", DMH_CHECK_FAIL, "on the target as `pc_tsel`"));
  CU_ASSERT(pt_is(&pc, "target_writable", DMH_CHECK_FAIL, "denied"));
  dmh_precheck_free(&pc);

  CU_ASSERT_FATAL(lt_exec_unlogged(dst, "GRANT ALL ON `dm\\_meta`.* TO 'pc_tsel'@'127.0.0.1'") ==
                  0);
  CU_ASSERT_FATAL(lt_exec_unlogged(dst, "GRANT ALL ON `pc%%`.* TO 'pc_tsel'@'127.0.0.1'") == 0);
  CU_ASSERT_FATAL(pt_run(&e, &pc) == 0);
  CU_ASSERT(pt_is(&pc, "target_privilege", DMH_CHECK_PASS, NULL));
  CU_ASSERT(pt_is(&pc, "target_writable", DMH_CHECK_PASS, NULL));
  dmh_precheck_free(&pc);
  lt_teardown(&e);
}

/* The account's MAX_USER_CONNECTIONS 3 against a load pool of 8 (+1 checkpoint connection). */
static void test_conn_limit(void) {
  CU_ASSERT_FATAL(lt_account(dst, "pc_tlim", "pw", "ALL ON *.*") == 0);
  CU_ASSERT_FATAL(lt_exec_unlogged(dst, "ALTER USER 'pc_tlim'@'127.0.0.1' WITH "
                                        "MAX_USER_CONNECTIONS 3") == 0);
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  lt_task acc = {.target_user = "pc_tlim", .target_password = "pw", .load = "pool-size = 8;"};
  CU_ASSERT_FATAL(pt_config(&e, "pc_conn", "full", NULL, &acc) == 0);
  dmh_precheck pc;
  CU_ASSERT_FATAL(pt_run(&e, &pc) == 0);
  CU_ASSERT(pt_is(&pc, "conn_number_checking", DMH_CHECK_FAIL,
                  "the target accepts 3 more connection(s) ("));
  CU_ASSERT(pt_is(&pc, "conn_number_checking", DMH_CHECK_FAIL,
                  "the account's max_user_connections 3, 1 in use), the task opens up to 9 (load "
                  "pool-size + 1: 9"));
  dmh_precheck_free(&pc);
  lt_teardown(&e);
}

/* The relay's purge-remain-space above the folder's free space: a warning. */
static void test_relay_disk(void) {
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  char relay[1024];
  lt_relay_settings(&e, "purge-remain-space = 1048576;", relay, sizeof relay);
  lt_task more = {.source_extra = relay};
  CU_ASSERT_FATAL(pt_config(&e, "pc_relay", "all", NULL, &more) == 0);
  dmh_precheck pc;
  CU_ASSERT_FATAL(pt_run(&e, &pc) == 0);
  char want[512];
  snprintf(want, sizeof want, "the relay folder %s/relay has ", e.dir);
  CU_ASSERT(pt_is(&pc, "relay_disk_space", DMH_CHECK_WARN, want));
  CU_ASSERT(pt_is(&pc, "relay_disk_space", DMH_CHECK_WARN,
                  "less than the relay's purge-remain-space 1048576 GB"));
  CU_ASSERT(pt_is(&pc, "server_id", DMH_CHECK_PASS, NULL));
  CU_ASSERT_EQUAL(pc.n_fail, 0);
  dmh_precheck_free(&pc);
  lt_teardown(&e);
}

/* target_charset: a source table in a collation the target lacks. The test pair runs one MariaDB
 * build on both sides, so the source here is a private server (private_server.sh: a unix socket,
 * a collation latin1_dmhtest_ci added to its charsets folder). */
static void test_target_charset(void) {
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  char dir[400], cmd[1200], sock[420], path[420];
  snprintf(dir, sizeof dir, "%s/private", e.dir);
  snprintf(sock, sizeof sock, "%s/sock", dir);
  snprintf(cmd, sizeof cmd, "bash %s start %s", PRIVATE_SERVER_SH, dir);
  CU_ASSERT_EQUAL_FATAL(system(cmd), 0);
  MYSQL *p = mysql_init(NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  CU_ASSERT_PTR_NOT_NULL(mysql_real_connect(p, "localhost", "root", "", NULL, 0, sock, 0));
  CU_ASSERT_EQUAL(lt_exec(p, "CREATE DATABASE pc_db"), 0);
  CU_ASSERT_EQUAL(lt_exec(p, "CREATE TABLE pc_db.t (a VARCHAR(8) COLLATE latin1_dmhtest_ci "
                             "PRIMARY KEY) DEFAULT CHARSET latin1"),
                  0);
  CU_ASSERT_EQUAL(lt_exec(p, "CREATE TABLE pc_db.u (a INT PRIMARY KEY)"), 0);
  /* the precondition: the target lacks the collation */
  long long n = -1;
  CU_ASSERT_FATAL(testdb_query_int(dst, &n,
                                   "SELECT COUNT(*) FROM information_schema.COLLATIONS WHERE "
                                   "COLLATION_NAME = 'latin1_dmhtest_ci'") == 0);
  CU_ASSERT_EQUAL_FATAL(n, 0);

  CU_ASSERT_FATAL(pt_config(&e, "pc_coll", "full", NULL, NULL) == 0);
  FILE *f = fopen((snprintf(path, sizeof path, "%s/private.cfg", e.dir), path), "w");
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  fprintf(f,
          "source-id = \"lsrc\";\nfrom = { host = \"localhost\"; socket = \"%s\"; user = "
          "\"root\"; password = \"\"; };\n",
          sock);
  fclose(f);
  dm_error err;
  dmh_source_config_free(e.source);
  e.source = NULL;
  CU_ASSERT_FATAL(dmh_source_config_load(path, &e.source, &err) == 0);
  dmh_precheck pc;
  CU_ASSERT_FATAL(pt_run(&e, &pc) == 0);
  CU_ASSERT(pt_is(&pc, "target_charset", DMH_CHECK_FAIL,
                  "the target has no collation latin1_dmhtest_ci, used by `pc_db`.`t`"));
  char buf[1024];
  CU_ASSERT(lt_lacks(pt_msgs(pt_item(&pc, "target_charset"), buf, sizeof buf), "`u`"));
  CU_ASSERT(pt_is(&pc, "dump_privilege", DMH_CHECK_PASS, NULL)); /* it did read the server */
  CU_ASSERT_EQUAL(pc.n_fail, 1);
  dmh_precheck_free(&pc);
  mysql_close(p);
  snprintf(cmd, sizeof cmd, "bash %s stop %s", PRIVATE_SERVER_SH, dir);
  CU_ASSERT_EQUAL(system(cmd), 0);
  lt_teardown(&e);
}

/* Which items each mode runs; mode load never connects to the source. */
static void test_modes(void) {
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  dmh_precheck pc;
  CU_ASSERT_FATAL(pt_config(&e, "pc_modes", "dump", NULL, NULL) == 0);
  CU_ASSERT_FATAL(pt_run(&e, &pc) == 0);
  CU_ASSERT(pt_is(&pc, "dump_privilege", DMH_CHECK_PASS, NULL));
  CU_ASSERT(pt_is(&pc, "version", DMH_CHECK_PASS, NULL));
  CU_ASSERT(pt_is(&pc, "conn_number_checking", DMH_CHECK_PASS, NULL));
  CU_ASSERT_PTR_NULL(pt_item(&pc, "binlog_format"));
  CU_ASSERT_PTR_NULL(pt_item(&pc, "target_privilege"));
  CU_ASSERT_PTR_NULL(pt_item(&pc, "target_charset"));
  CU_ASSERT_EQUAL(pc.n, 3);
  dmh_precheck_free(&pc);

  CU_ASSERT_FATAL(pt_config(&e, "pc_modes", "load", NULL, NULL) == 0);
  e.source->from.ep.port = 1; /* nothing listens: mode load must not need it */
  CU_ASSERT_FATAL(pt_run(&e, &pc) == 0);
  CU_ASSERT(pt_is(&pc, "target_privilege", DMH_CHECK_PASS, NULL));
  CU_ASSERT(pt_is(&pc, "target_writable", DMH_CHECK_PASS, NULL));
  CU_ASSERT(pt_is(&pc, "conn_number_checking", DMH_CHECK_PASS, NULL));
  CU_ASSERT_EQUAL(pc.n, 3);
  dmh_precheck_free(&pc);

  /* a target nobody answers on: its items fail with the connection's error */
  CU_ASSERT_FATAL(pt_config(&e, "pc_modes", "full", NULL, NULL) == 0);
  e.task->target.ep.port = 1;
  CU_ASSERT_FATAL(pt_run(&e, &pc) == 0);
  CU_ASSERT(pt_is(&pc, "target_writable", DMH_CHECK_FAIL, "not checked: precheck: "));
  CU_ASSERT(pt_is(&pc, "dump_privilege", DMH_CHECK_PASS, NULL));
  dmh_precheck_free(&pc);
  lt_teardown(&e);
}

/* ignore-checking-items: the failing item is skipped; "all" skips every one. */
static void test_ignore(void) {
  CU_ASSERT_FATAL(lt_account(src, "pc_noslave", "pw", "SELECT, RELOAD, BINLOG MONITOR ON *.*") ==
                  0);
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  lt_task acc = {.source_user = "pc_noslave", .source_password = "pw"};
  dmh_precheck pc;
  CU_ASSERT_FATAL(pt_config(&e, "pc_ign", "all", NULL, &acc) == 0);
  CU_ASSERT_FATAL(pt_run(&e, &pc) == 0);
  CU_ASSERT_EQUAL_FATAL(pc.n_fail, 1); /* the precondition: it fails when not ignored */
  dmh_precheck_free(&pc);
  CU_ASSERT_FATAL(pt_config(&e, "pc_ign", "all",
                            "ignore-checking-items = [\"replication_privilege\"];\n", &acc) == 0);
  CU_ASSERT_FATAL(pt_run(&e, &pc) == 0);
  CU_ASSERT_PTR_NULL(pt_item(&pc, "replication_privilege"));
  CU_ASSERT(pt_is(&pc, "binlog_format", DMH_CHECK_PASS, NULL));
  CU_ASSERT_EQUAL(pc.n_fail, 0);
  CU_ASSERT_EQUAL(pc.n, 12);
  dmh_precheck_free(&pc);
  /* DM's names without a dmhost item load and skip nothing */
  CU_ASSERT_FATAL(
      pt_config(&e, "pc_ign", "all",
                "ignore-checking-items = [\"online_ddl\", \"schema_of_shard_tables\"];\n",
                NULL) == 0);
  CU_ASSERT_FATAL(pt_run(&e, &pc) == 0);
  CU_ASSERT_EQUAL(pc.n, 13);
  CU_ASSERT_PTR_NOT_NULL(pt_item(&pc, "conn_number_checking"));
  dmh_precheck_free(&pc);
  /* DM's name of a dmhost item (conn_number) skips that item; DM's other items without a
   * counterpart (issue 23: meta_position, primary_key, Lightning's) load and skip nothing */
  CU_ASSERT_FATAL(pt_config(&e, "pc_ign", "all",
                            "ignore-checking-items = [\"conn_number\", \"meta_position\", "
                            "\"primary_key\", \"free_space\", \"downstream_table_empty\"];\n",
                            NULL) == 0);
  CU_ASSERT_FATAL(pt_run(&e, &pc) == 0);
  CU_ASSERT_EQUAL(pc.n, 12);
  CU_ASSERT_PTR_NULL(pt_item(&pc, "conn_number_checking"));
  CU_ASSERT_PTR_NOT_NULL(pt_item(&pc, "table_schema"));
  dmh_precheck_free(&pc);
  CU_ASSERT_FATAL(pt_config(&e, "pc_ign", "all", "ignore-checking-items = [\"all\"];\n", &acc) ==
                  0);
  CU_ASSERT_FATAL(pt_run(&e, &pc) == 0);
  CU_ASSERT_EQUAL(pc.n, 0);
  dmh_precheck_free(&pc);
  lt_teardown(&e);
}

static void pt_run_main(void *arg) {
  char **argv = arg;
  int argc = 0;
  while (argv[argc])
    argc++;
  int *rc = (int *)argv[argc + 1];
  *rc = dmh_run_main(argc, argv);
}

/* `dmhost run` refuses the task before any unit runs; the precheck's error says why. */
static void test_run_refused(void) {
  CU_ASSERT_FATAL(lt_account(src, "pc_sel", "pw", "SELECT, LOCK TABLES ON *.*") == 0);
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  lt_task acc = {.source_user = "pc_sel", .source_password = "pw"};
  CU_ASSERT_FATAL(pt_config(&e, "pc_run", "full", PT_FLUSH, &acc) == 0);
  char spath[400], tpath[400], work[400];
  snprintf(spath, sizeof spath, "%s/source.cfg", e.dir);
  snprintf(tpath, sizeof tpath, "%s/task.cfg", e.dir);
  snprintf(work, sizeof work, "%s/run-work", e.dir);
  int rc = -1;
  char *argv[] = {"run",        "--source", spath,     "--task", tpath,
                  "--work-dir", work,       "--quiet", NULL,     (char *)&rc};
  char *log = lt_capture_stderr(pt_run_main, argv);
  CU_ASSERT_PTR_NOT_NULL_FATAL(log);
  CU_ASSERT_EQUAL(rc, 1);
  CU_ASSERT(lt_has(log, "[code 26001, task-check] run pc_run: the precheck failed: "
                        "dump_privilege (lsrc): the source account `pc_sel`"));
  CU_ASSERT(lt_has(log, "lacks RELOAD"));
  struct stat st;
  CU_ASSERT_EQUAL(stat(work, &st), -1); /* nothing ran */
  free(log);
  lt_teardown(&e);
}

static json_object *pt_request(const char *cmd, const char *key, const char *value) {
  json_object *req = json_object_new_object(), *args = json_object_new_object();
  json_object_object_add(args, key, json_object_new_string(value));
  json_object_object_add(req, "cmd", json_object_new_string(cmd));
  json_object_object_add(req, "args", args);
  return req;
}

/* The result of a failed item in a response's checkResult, or NULL. */
static json_object *pt_json_item(json_object *resp, const char *name) {
  json_object *cr, *res, *v;
  if (!json_object_object_get_ex(resp, "checkResult", &cr) ||
      !json_object_object_get_ex(cr, "results", &res))
    return NULL;
  for (size_t i = 0; i < json_object_array_length(res); i++) {
    json_object *r = json_object_array_get_idx(res, i);
    if (json_object_object_get_ex(r, "name", &v) && strcmp(json_object_get_string(v), name) == 0)
      return r;
  }
  return NULL;
}

/* The daemon: check-task answers DM's checker JSON; start-task is refused with the precheck's
 * error and keeps nothing; with the item ignored the task starts. */
static void test_start_task(void) {
  CU_ASSERT_FATAL(lt_account(src, "pc_sel", "pw", "SELECT, LOCK TABLES ON *.*") == 0);
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  lt_task acc = {.source_user = "pc_sel", .source_password = "pw"};
  CU_ASSERT_FATAL(pt_config(&e, "pc_start", "dump", PT_FLUSH, &acc) == 0);
  char state[400], spath[400], tpath[400];
  snprintf(state, sizeof state, "%s/state", e.dir);
  snprintf(spath, sizeof spath, "%s/source.cfg", e.dir);
  snprintf(tpath, sizeof tpath, "%s/task.cfg", e.dir);
  /* the builds' folder is the daemon's plugin folder: it loads units only from there */
  char plugins[512];
  snprintf(plugins, sizeof plugins, "%s", DUMP_SO);
  *strrchr(plugins, '/') = '\0';
  dmh_registry_opts ro = {.state_dir = state, .plugin_dir = plugins};
  dmh_registry *reg = NULL;
  dm_error err;
  CU_ASSERT_FATAL(dmh_registry_open(&ro, &reg, &err) == 0);
  json_object *resp = json_object_new_object();
  CU_ASSERT_FATAL(dmh_registry_source_create(reg, spath, resp, &err) == 0);
  json_object_put(resp);

  /* check-task through the dispatcher, as dmctl sends it */
  json_object *req = pt_request("check-task", "path", tpath), *v, *r;
  resp = dmh_control_handle(reg, req);
  json_object_put(req);
  CU_ASSERT(json_object_object_get_ex(resp, "result", &v) && !json_object_get_boolean(v));
  CU_ASSERT(json_object_object_get_ex(resp, "msg", &v) &&
            lt_has(json_object_get_string(v), "check-task pc_start: the precheck failed: "
                                              "dump_privilege (lsrc)"));
  CU_ASSERT_PTR_NOT_NULL_FATAL(r = pt_json_item(resp, "dump_privilege"));
  CU_ASSERT(json_object_object_get_ex(r, "state", &v) &&
            strcmp(json_object_get_string(v), "fail") == 0);
  CU_ASSERT(json_object_object_get_ex(r, "instruction", &v));
  json_object *errs, *e0;
  CU_ASSERT_FATAL(json_object_object_get_ex(r, "errors", &errs));
  e0 = json_object_array_get_idx(errs, 0);
  CU_ASSERT(json_object_object_get_ex(e0, "severity", &v) &&
            strcmp(json_object_get_string(v), "fail") == 0);
  CU_ASSERT(json_object_object_get_ex(e0, "short_error", &v) &&
            lt_has(json_object_get_string(v), "lacks RELOAD"));
  json_object_put(resp);

  /* start-task: refused, nothing kept */
  resp = json_object_new_object();
  CU_ASSERT_EQUAL(dmh_registry_task_start(reg, tpath, resp, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_PRECHECK_FAILED);
  CU_ASSERT(lt_has(err.message, "start-task pc_start: the precheck failed: dump_privilege (lsrc): "
                                "the source account `pc_sel`"));
  CU_ASSERT_PTR_NOT_NULL(pt_json_item(resp, "dump_privilege"));
  json_object_put(resp);
  resp = json_object_new_object();
  CU_ASSERT_EQUAL(dmh_registry_query_status(reg, "pc_start", resp, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_NOT_FOUND);
  json_object_put(resp);
  char copy[600];
  snprintf(copy, sizeof copy, "%s/tasks/pc_start", state);
  struct stat st;
  CU_ASSERT_EQUAL(stat(copy, &st), -1);

  /* ignored: the start goes on past the precheck (the dump unit then meets the same missing
   * privilege itself, which is its own error, not the precheck's) */
  CU_ASSERT_FATAL(pt_config(&e, "pc_start", "dump",
                            "ignore-checking-items = [\"dump_privilege\"];\n", &acc) == 0);
  resp = json_object_new_object();
  int rc = dmh_registry_task_start(reg, tpath, resp, &err);
  if (rc < 0)
    CU_ASSERT_NOT_EQUAL(err.code, DM_ERR_PRECHECK_FAILED);
  json_object_put(resp);
  resp = json_object_new_object();
  CU_ASSERT_EQUAL(dmh_registry_query_status(reg, "pc_start", resp, &err), 0);
  json_object_put(resp);
  resp = json_object_new_object();
  CU_ASSERT_EQUAL(dmh_registry_task_stop(reg, "pc_start", resp, &err), 0);
  json_object_put(resp);
  dmh_registry_shutdown(reg);
  lt_teardown(&e);
}

/* `dmhost check`: the table, exit 1 on a failed item and 0 when all pass. */
static void test_check_command(void) {
  CU_ASSERT_FATAL(lt_account(src, "pc_sel", "pw", "SELECT, LOCK TABLES ON *.*") == 0);
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  lt_task acc = {.source_user = "pc_sel", .source_password = "pw"};
  CU_ASSERT_FATAL(pt_config(&e, "pc_cmd", "full", PT_FLUSH, &acc) == 0);
  char cmd[1200], out[8192];
  snprintf(cmd, sizeof cmd, "%s check --source %s/source.cfg --task %s/task.cfg", DMHOST_BIN, e.dir,
           e.dir);
  FILE *p = popen(cmd, "r");
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  size_t n = fread(out, 1, sizeof out - 1, p);
  out[n] = '\0';
  int status = pclose(p);
  CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 1);
  CU_ASSERT(lt_has(out, "fail  dump_privilege         lsrc"));
  CU_ASSERT(lt_has(out, "      fail: the source account `pc_sel`"));
  CU_ASSERT(lt_has(out, "      fix: GRANT the privileges named"));
  CU_ASSERT(lt_has(out, "passed, 0 warnings, 1 failed"));

  CU_ASSERT_FATAL(pt_config(&e, "pc_cmd", "full", NULL, NULL) == 0);
  p = popen(cmd, "r");
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  n = fread(out, 1, sizeof out - 1, p);
  out[n] = '\0';
  status = pclose(p);
  CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  CU_ASSERT(lt_has(out, "pass  dump_privilege"));
  CU_ASSERT(lt_has(out, "0 warnings, 0 failed"));
  lt_teardown(&e);
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"a passing run, DM's JSON", test_pass},
      {"version strings", test_version},
      {"dump_privilege by consistency", test_dump_privilege},
      {"replication_privilege", test_replication_privilege},
      {"binlog_enable and server_id (no binlog, same server)", test_binlog_enable_and_same_server},
      {"server_id of the sync", test_server_id_replica},
      {"table_schema warns", test_table_keys},
      {"target_privilege and target_writable", test_target_privilege},
      {"conn_number_checking", test_conn_limit},
      {"relay_disk_space warns", test_relay_disk},
      {"target_charset: a collation the target lacks", test_target_charset},
      {"auto_increment_ID: merged AUTO_INCREMENT keys", test_auto_increment},
      {"items by mode", test_modes},
      {"ignore-checking-items", test_ignore},
      {"dmhost run refused", test_run_refused},
      {"check-task and start-task", test_start_task},
      {"dmhost check", test_check_command},
  };
  return dmh_cunit_run("precheck", suite_init, suite_clean, tests, sizeof tests / sizeof tests[0]);
}

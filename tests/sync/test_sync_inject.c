/*
 * Issue 9 against the real pair: what a source account may do to the target through the DDL the
 * sync replays, and what of a statement's text reaches logs and query-status.
 *
 * The attacker is an account of the source with CREATE and ALTER on one schema only. Before the
 * fix, its DDL ran on a multi-statement target connection under SET NAMES binary and a fixed
 * sql_mode, so text that was one statement on the source (under NO_BACKSLASH_ESCAPES, or under
 * SET NAMES gbk where 0xBF 0x5C is one character) was two on the target, and the second one
 * created a table in another schema with the task's target account. A skipped CREATE USER was
 * logged verbatim at INFO, and a failing DDL went into query-status with its password.
 */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "binlog_ops.h"
#include "cunit_run.h"
#include "dmhost/error.h"
#include "dmhost/sdk.h"
#include "load_test_util.h"
#include "log.h"
#include "sync_test_util.h"
#include "testdb.h"

#define APP "ts_inj_app"
#define OTHER "ts_inj_other"
#define EVIL "dmh_inj_evil"
#define EVIL_PW "inj-evil-pw"

static MYSQL *src, *dst, *evil;

static int suite_init(void) {
  src = lt_source();
  dst = lt_target();
  if (!src || !dst)
    return -1;
  ts_init(src, dst);
  /* the attacker: CREATE and ALTER on APP, nothing else */
  if (lt_account(src, EVIL, EVIL_PW, "CREATE, ALTER ON " APP ".*") != 0)
    return -1;
  evil = testdb_connect_as(TESTDB_SOURCE, EVIL, EVIL_PW, NULL);
  if (!evil)
    fprintf(stderr, "cannot connect as %s: %s\n", EVIL, testdb_last_error()->message);
  return evil ? 0 : -1;
}

static int suite_clean(void) {
  testdb_close(evil);
  lt_account_drop(src, EVIL);
  testdb_close(src);
  testdb_close(dst);
  return 0;
}

/* Runs one query on the attacker's connection (no client-side splitting at ';'). */
static int evil_query(const char *sql) {
  if (mysql_real_query(evil, sql, (unsigned long)strlen(sql)) != 0) {
    fprintf(stderr, "attacker's query failed: %s\n", mysql_error(evil));
    return -1;
  }
  do {
    MYSQL_RES *r = mysql_store_result(evil);
    if (r)
      mysql_free_result(r);
  } while (mysql_next_result(evil) == 0);
  return 0;
}

static long long count_tables(MYSQL *m, const char *db) {
  return lt_count(m, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = '%s'",
                  db);
}

/* information_schema.COLUMNS.<what> of APP.table.col, as text. */
static void column_info(MYSQL *m, const char *what, const char *table, const char *col, char *out,
                        size_t len) {
  out[0] = '\0';
  testdb_query_value(m, out, len,
                     "SELECT %s FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = '" APP
                     "' AND TABLE_NAME = '%s' AND COLUMN_NAME = '%s'",
                     what, table, col);
}

static void fresh_schemas(void) {
  testdb_recreate_db(src, APP);
  testdb_recreate_db(dst, APP);
  testdb_recreate_db(src, OTHER);
  testdb_recreate_db(dst, OTHER);
}

/* One attack: the attacker runs `ddl` (one statement on the source) between `set` and `reset`
 * of its session; read byte by byte with backslash escapes it is two, the second creating a table
 * in OTHER. The sync must create APP.<table> exactly as the source did (the information_schema
 * expressions `same` of its columns a and b agree), and nothing in OTHER. */
typedef struct attack {
  const char *task, *set, *ddl, *reset, *table;
  const char *same[2]; /* of column a, of column b */
} attack;

static const attack attacks[] = {
    /* NO_BACKSLASH_ESCAPES: '\' is a whole string on the source; the default keeps its one
     * backslash */
    {"ts_inj_nbe",
     "SET SESSION sql_mode = 'NO_BACKSLASH_ESCAPES'",
     "CREATE TABLE " APP ".t1 (a VARCHAR(60) DEFAULT '\\', b INT COMMENT "
     "'); CREATE TABLE " OTHER ".pwn1 (x INT) -- ')",
     "SET SESSION sql_mode = DEFAULT",
     "t1",
     {"HEX(COLUMN_DEFAULT)", "COLUMN_COMMENT"}},
    /* SET NAMES gbk: 0xBF 0x5C is one character, its 0x5C no backslash (a VARBINARY default, so
     * that the first statement is valid on the target read either way) */
    {"ts_inj_gbk",
     "SET NAMES gbk",
     "CREATE TABLE " APP ".t2 (a VARBINARY(60) DEFAULT '\xbf\x5c', b INT COMMENT "
     "'); CREATE TABLE " OTHER ".pwn2 (x INT) -- ')",
     "SET NAMES utf8mb4",
     "t2",
     {"HEX(COLUMN_DEFAULT)", "COLUMN_COMMENT"}},
};

static void run_attack(const attack *a) {
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  fresh_schemas();
  CU_ASSERT_FATAL(ts_config(&e, a->task, APP, NULL, NULL) == 0);
  dmh_subtask *st = ts_start(&e);
  CU_ASSERT_FATAL(st != NULL && dmh_subtask_stage(st) == DMH_STAGE_RUNNING);
  CU_ASSERT_FATAL(evil_query(a->set) == 0);
  CU_ASSERT_FATAL(evil_query(a->ddl) == 0);
  CU_ASSERT_FATAL(evil_query(a->reset) == 0);
  /* the attack reached the binlog: one table in APP on the source, nothing in OTHER */
  CU_ASSERT_EQUAL_FATAL(count_tables(src, APP), 1);
  CU_ASSERT_EQUAL_FATAL(count_tables(src, OTHER), 0);

  CU_ASSERT(ts_catch_up(a->task, 30000));
  CU_ASSERT_EQUAL(dmh_subtask_stage(st), DMH_STAGE_RUNNING);
  CU_ASSERT_EQUAL(count_tables(dst, OTHER), 0); /* before the fix: the attacker's table */
  CU_ASSERT_EQUAL(count_tables(dst, APP), 1);
  for (int k = 0; k < 2; k++) {
    char s[256], d[256];
    const char *col = k ? "b" : "a";
    column_info(src, a->same[k], a->table, col, s, sizeof s);
    column_info(dst, a->same[k], a->table, col, d, sizeof d);
    if (strcmp(s, d) != 0)
      fprintf(stderr, "%s of %s.%s: source %s, target %s\n", a->same[k], a->table, col, s, d);
    CU_ASSERT_STRING_EQUAL(s, d);
  }
  ts_stop(st);
  lt_teardown(&e);
}

static void test_no_backslash_escapes(void) {
  run_attack(&attacks[0]);
  char def[64];
  column_info(dst, "HEX(COLUMN_DEFAULT)", "t1", "a", def, sizeof def);
  CU_ASSERT_STRING_EQUAL(def, "275C5C27"); /* '\\': information_schema's quoting of one '\' */
}

static void test_gbk(void) {
  run_attack(&attacks[1]);
}

/* A statement the parser reads as two is refused with a coded, non-resumable error naming its
 * position, nothing of it runs, and `binlog skip` goes past it; one about a schema the task leaves
 * out is skipped. MariaDB writes one statement per event and patches the comments it skipped, so
 * from a real source the one text that reaches the refusal is "--" followed by DEL (0x7f): the
 * server takes it for a comment, the parser, erring on the side of refusing, does not (it stands in
 * for a crafted event of a hostile upstream). */
static void test_second_statement_refused(void) {
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  fresh_schemas();
  CU_ASSERT_FATAL(ts_config(&e, "ts_inj2", APP, NULL, NULL) == 0);
  dmh_subtask *st = ts_start(&e);
  CU_ASSERT_FATAL(st != NULL);
  /* about a schema the task leaves out: skipped like any DDL there (a source user must not be
   * able to pause every task with text about its own schema), and nothing of it runs */
  CU_ASSERT_FATAL(lt_exec(src, "CREATE TABLE " OTHER ".t4 (a INT) --\x7f ; CREATE TABLE " APP
                               ".pwn4 (x INT)") == 0);
  CU_ASSERT_EQUAL_FATAL(count_tables(src, OTHER), 1);
  CU_ASSERT(ts_catch_up("ts_inj2", 30000));
  CU_ASSERT_EQUAL(dmh_subtask_stage(st), DMH_STAGE_RUNNING);
  CU_ASSERT_EQUAL(count_tables(dst, APP), 0);
  CU_ASSERT_EQUAL(count_tables(dst, OTHER), 0);
  char file[256];
  unsigned long pos;
  ts_master(file, &pos, NULL);
  static const char nested[] =
      "CREATE TABLE " APP ".t3 (a INT) --\x7f ; CREATE TABLE " OTHER ".pwn3 (x INT)";
  CU_ASSERT_FATAL(evil_query(nested) == 0);
  CU_ASSERT_EQUAL_FATAL(count_tables(src, APP), 1);
  CU_ASSERT_EQUAL(dmh_subtask_wait_settled(st, 30000), DMH_STAGE_PAUSED);
  char msg[1024], at[300];
  bool resumable = true;
  CU_ASSERT_EQUAL(lt_first_error(st, msg, sizeof msg, NULL, 0, &resumable), DM_ERR_SYNC_DDL_MULTI);
  fprintf(stderr, "refused: %s\n", msg);
  CU_ASSERT(!resumable);
  ts_error_at(msg, at, sizeof at);
  /* the DDL's own event: after the GTID event at the position read before it */
  CU_ASSERT(strncmp(at, file, strlen(file)) == 0 && at[strlen(file)] == ':' &&
            strtoul(at + strlen(file) + 1, NULL, 10) > pos);
  CU_ASSERT_EQUAL(count_tables(dst, OTHER), 0);
  CU_ASSERT_EQUAL(count_tables(dst, APP), 0); /* nothing of it ran */
  /* the operator decides: skip it, and the task goes on */
  dm_error err;
  char *store = dmh_binlog_ops_path(e.work);
  dmh_binlog_op op = {.kind = DM_BINLOG_OP_SKIP};
  bool replaced = false;
  CU_ASSERT_EQUAL(dmh_binlog_pos_parse(at, op.at, &err), 0);
  CU_ASSERT_EQUAL(dmh_binlog_ops_put(store, &op, &replaced, &err), 0);
  free(store);
  CU_ASSERT_EQUAL(dmh_subtask_resume(st, &err), 0);
  CU_ASSERT(lt_exec(src, "CREATE TABLE " APP ".after (id INT PRIMARY KEY)") == 0);
  CU_ASSERT(ts_catch_up("ts_inj2", 30000));
  CU_ASSERT_EQUAL(dmh_subtask_stage(st), DMH_STAGE_RUNNING);
  CU_ASSERT_EQUAL(count_tables(dst, APP), 1);
  CU_ASSERT_EQUAL(count_tables(dst, OTHER), 0);
  ts_stop(st);
  lt_teardown(&e);
}

typedef struct secret_run {
  lt_env e;
  dmh_subtask *st;
  char status[16384]; /* query-status of the paused task */
  int code;
} secret_run;

static void secret_statements(void *arg) {
  secret_run *r = arg;
  r->st = ts_start(&r->e);
  if (!r->st)
    return;
  /* skipped by the sync (not a DDL on tables) */
  lt_exec(src, "CREATE USER 'dmh_inj_pw'@'127.0.0.1' IDENTIFIED BY 'secret-create-user'");
  lt_exec(src, "SET PASSWORD FOR 'dmh_inj_pw'@'127.0.0.1' = PASSWORD('secret-set-password')");
  lt_exec(src, "DROP USER 'dmh_inj_pw'@'127.0.0.1'");
  /* replayed (a no-op: the target has the table, and CREATE TABLE runs with IF NOT EXISTS) */
  lt_exec(src, "CREATE TABLE " APP ".pw (a INT)");
  /* replayed, and refused by the target (the column is there already) */
  lt_exec(src, "ALTER TABLE " APP ".pw ADD COLUMN b VARCHAR(60) AS (PASSWORD('secret-in-ddl'))");
  dmh_subtask_wait_settled(r->st, 30000);
  json_object *o = dmh_subtask_status_json(r->st);
  dm_strlcpy(r->status, o ? json_object_to_json_string(o) : "", sizeof r->status);
  json_object_put(o);
  r->code = lt_first_error(r->st, NULL, 0, NULL, 0, NULL);
  ts_stop(r->st);
}

/* No password of a replayed or skipped statement in any log line (DEBUG included) or in
 * query-status; INFO lines name the statement's verb only. */
static void test_no_password_in_logs(void) {
  static secret_run r;
  memset(&r, 0, sizeof r);
  CU_ASSERT_FATAL(lt_init(&r.e) == 0);
  fresh_schemas();
  CU_ASSERT_FATAL(lt_exec(dst, "CREATE TABLE " APP ".pw (a INT, b INT)") == 0);
  CU_ASSERT_FATAL(ts_config(&r.e, "ts_inj3", APP, NULL, NULL) == 0);
  char *logs = lt_capture_stderr(secret_statements, &r);
  CU_ASSERT_PTR_NOT_NULL_FATAL(logs);
  /* the statements reached the sync: the skips were logged, the DDL failed */
  CU_ASSERT_PTR_NOT_NULL(strstr(logs, "is not a DDL on tables: skipped (CREATE USER"));
  CU_ASSERT_PTR_NOT_NULL(strstr(logs, "is not a DDL on tables: skipped (SET PASSWORD FOR)"));
  CU_ASSERT_EQUAL(r.code, DM_ERR_SYNC_DDL);
  CU_ASSERT_PTR_NOT_NULL(strstr(r.status, "PASSWORD('***')"));
  /* and no secret anywhere */
  CU_ASSERT_PTR_NULL(strstr(logs, "secret"));
  CU_ASSERT_PTR_NULL(strstr(r.status, "secret"));
  if (strstr(logs, "secret") || strstr(r.status, "secret"))
    fprintf(stderr, "logs:\n%s\nstatus:\n%s\n", logs, r.status);
  free(logs);
  lt_teardown(&r.e);
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"NO_BACKSLASH_ESCAPES: one statement stays one", test_no_backslash_escapes},
      {"SET NAMES gbk: one statement stays one", test_gbk},
      {"a second statement is refused, coded, with its position", test_second_statement_refused},
      {"no password in logs or query-status", test_no_password_in_logs},
  };
  return dmh_cunit_run("sync_inject", suite_init, suite_clean, tests,
                       sizeof tests / sizeof tests[0]);
}

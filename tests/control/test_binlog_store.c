/* The binlog operators' store and the `binlog` command's parsing (host/core/unit/unit_operators.c,
 * host/control/operator_cmd.c), without a daemon. */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "binlog_cmd.h"
#include "binlog_ops.h"
#include "cunit_run.h"
#include "dmhost/sdk.h"

static char store_dir[64];

typedef struct split_case {
  const char *text;
  int n;
  const char *want[3];
} split_case;

static void test_sql_split(void) {
  static const split_case cases[] = {
      {"ALTER TABLE a ADD c INT", 1, {"ALTER TABLE a ADD c INT"}},
      {"  A; B ;C;  ", 3, {"A", "B", "C"}},
      {"UPDATE t SET s = 'a;b'; DELETE FROM t", 2, {"UPDATE t SET s = 'a;b'", "DELETE FROM t"}},
      {"SELECT \"x\\\";y\"; SELECT 1", 2, {"SELECT \"x\\\";y\"", "SELECT 1"}},
      {"SELECT 'it''s;'; SELECT 2", 2, {"SELECT 'it''s;'", "SELECT 2"}},
      {"CREATE TABLE `a;b` (c INT)", 1, {"CREATE TABLE `a;b` (c INT)"}},
      {"SELECT 1 /* ; */; SELECT 2", 2, {"SELECT 1 /* ; */", "SELECT 2"}},
      {"SELECT 1 -- a;b\n; SELECT 2", 2, {"SELECT 1 -- a;b", "SELECT 2"}},
      {"SELECT 1 # x;y\n", 1, {"SELECT 1 # x;y"}},
      {"SELECT 1--2; SELECT 3", 2, {"SELECT 1--2", "SELECT 3"}}, /* "--" without a space */
      {" ; ;; ", 0, {NULL}},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char **sqls = NULL;
    int n = 0;
    dm_error err;
    CU_ASSERT_EQUAL_FATAL(dmh_binlog_sql_split(cases[i].text, &sqls, &n, &err), 0);
    CU_ASSERT_EQUAL(n, cases[i].n);
    for (int k = 0; k < n && k < cases[i].n; k++)
      if (strcmp(sqls[k], cases[i].want[k]) != 0) {
        fprintf(stderr, "\n  split of \"%s\": statement %d is \"%s\", expected \"%s\"\n",
                cases[i].text, k, sqls[k], cases[i].want[k]);
        CU_FAIL("wrong statement");
      }
    dmh_binlog_sqls_free(sqls, n);
  }
  static const char *const bad[] = {"SELECT 'open", "SELECT 1 /* open", "SELECT `x"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char **sqls = NULL;
    int n = 0;
    dm_error err;
    CU_ASSERT_EQUAL(dmh_binlog_sql_split(bad[i], &sqls, &n, &err), -1);
    CU_ASSERT_EQUAL(err.code, DM_ERR_CONTROL_REQUEST);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "not closed"));
    dmh_binlog_sqls_free(sqls, n);
  }
}

static void test_pos_parse(void) {
  char at[DMH_BINLOG_AT_MAX];
  dm_error err;
  CU_ASSERT_EQUAL(dmh_binlog_pos_parse("mysql-bin.000001:1234", at, &err), 0);
  CU_ASSERT_STRING_EQUAL(at, "mysql-bin.000001:1234");
  CU_ASSERT_EQUAL(dmh_binlog_pos_parse("mysql-bin|000001.000003:004", at, &err), 0);
  CU_ASSERT_STRING_EQUAL(at, "mysql-bin|000001.000003:4"); /* DM's relay names; normalized */
  static const char *const bad[] = {"mysql-bin.000001",         ":4", "f:", "f:12a", "f:3",
                                    "f:99999999999999999999999"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    CU_ASSERT_EQUAL(dmh_binlog_pos_parse(bad[i], at, &err), -1);
    CU_ASSERT_EQUAL(err.code, DM_ERR_CONTROL_REQUEST);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "FILE:POS"));
  }
}

static dmh_binlog_op store_op(dm_binlog_op_kind kind, const char *at, const char *sql) {
  dmh_binlog_op op = {.kind = kind};
  dm_strlcpy(op.at, at, sizeof op.at);
  if (sql) {
    dm_error err;
    CU_ASSERT_EQUAL(dmh_binlog_sql_split(sql, &op.sqls, &op.n_sqls, &err), 0);
  }
  return op;
}

static void test_store(void) {
  char root[128], path[160];
  snprintf(root, sizeof root, "%s/tasks/t1/mysql-01", store_dir); /* created by put */
  snprintf(path, sizeof path, "%s/%s", root, DMH_BINLOG_OPS_FILE);
  dm_error err;
  dmh_binlog_op got;
  /* no folder yet: nothing, not an error */
  CU_ASSERT_EQUAL(dmh_binlog_ops_find(path, "mysql-bin.000001", 900, true, &got, &err), 0);

  dmh_binlog_op failing = store_op(DM_BINLOG_OP_REPLACE, "", "ALTER TABLE a ADD c INT; SELECT 1");
  dmh_binlog_op at900 = store_op(DM_BINLOG_OP_SKIP, "mysql-bin.000001:900", NULL);
  bool replaced = true;
  CU_ASSERT_EQUAL(dmh_binlog_ops_put(path, &failing, &replaced, &err), 0);
  CU_ASSERT_FALSE(replaced);
  CU_ASSERT_EQUAL(dmh_binlog_ops_put(path, &at900, &replaced, &err), 0);
  CU_ASSERT_EQUAL(dmh_binlog_ops_put(path, &at900, &replaced, &err), 0);
  CU_ASSERT_TRUE(replaced);

  /* by position; the failing one only with `failing` and when no position matches */
  CU_ASSERT_EQUAL(dmh_binlog_ops_find(path, "mysql-bin.000001", 900, true, &got, &err), 1);
  CU_ASSERT_EQUAL(got.kind, DM_BINLOG_OP_SKIP);
  dmh_binlog_op_clear(&got);
  CU_ASSERT_EQUAL(dmh_binlog_ops_find(path, "mysql-bin.000001", 1000, false, &got, &err), 0);
  CU_ASSERT_EQUAL(dmh_binlog_ops_find(path, "mysql-bin.000001", 1000, true, &got, &err), 1);
  CU_ASSERT_EQUAL(got.kind, DM_BINLOG_OP_REPLACE);
  CU_ASSERT_EQUAL_FATAL(got.n_sqls, 2);
  CU_ASSERT_STRING_EQUAL(got.sqls[1], "SELECT 1");
  CU_ASSERT_STRING_EQUAL(got.at, "");
  dmh_binlog_op_clear(&got);
  CU_ASSERT_EQUAL(dmh_binlog_ops_find(path, "mysql-bin.000002", 900, false, &got, &err), 0);

  int removed = 0;
  CU_ASSERT_EQUAL(dmh_binlog_ops_remove(path, "", &removed, &err), 0);
  CU_ASSERT_EQUAL(removed, 1);
  dmh_binlog_ops ops;
  CU_ASSERT_EQUAL(dmh_binlog_ops_load(path, &ops, &err), 0);
  CU_ASSERT_EQUAL(ops.n, 1);
  dmh_binlog_ops_clear(&ops);
  CU_ASSERT_EQUAL(dmh_binlog_ops_remove(path, NULL, &removed, &err), 0);
  CU_ASSERT_EQUAL(removed, 1);
  CU_ASSERT_NOT_EQUAL(access(path, F_OK), 0); /* the last one takes the file with it */

  /* a damaged file is refused with its path, not read as empty */
  FILE *f = fopen(path, "w");
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  fputs("{\"version\": 1, \"operators\": [{\"op\": \"frob\", \"binlogPos\": \"\", \"sqls\": []}]}",
        f);
  fclose(f);
  CU_ASSERT_EQUAL(dmh_binlog_ops_find(path, "mysql-bin.000001", 900, true, &got, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_STATE);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, path));
  unlink(path);
  dmh_binlog_op_clear(&failing);
  dmh_binlog_op_clear(&at900);
}

/* The request checks shared by dmctl binlog and dmhost binlog. */
static void test_request(void) {
  static const struct {
    const char *argv[6];
    int argc;
    const char *error; /* NULL: accepted */
  } cases[] = {
      {{"skip", "t1"}, 2, NULL},
      {{"skip", "t1", "-b", "mysql-bin.000001:4"}, 4, NULL},
      {{"replace", "t1", "-s", "mysql-01", "A; B"}, 5, NULL},
      {{"inject", "t1", "--", "-- comment\nSELECT 1"}, 4, NULL},
      {{"list", "t1"}, 2, NULL},
      {{"revert", "t1", "--binlog-pos=f:10"}, 3, NULL},
      {{"skip"}, 1, "task name is missing"},
      {{"skip", "t1", "-b"}, 3, "needs a value"},
      {{"skip", "t1", "-x"}, 3, "is not an option"},
      {{"replace", "t1"}, 2, "give the SQL statements"},
      {{"skip", "t1", "SELECT 1"}, 3, "takes no SQL"},
      {{"list", "t1", "-b", "f:10"}, 4, "takes no -b"},
      {{"revert", "t1", "-b", "f"}, 4, "FILE:POS"},
      {{"undo", "t1"}, 2, "is not skip, replace, inject, list or revert"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    dm_error err;
    json_object *args =
        dmh_binlog_args_from_argv(cases[i].argc, (char **)(uintptr_t)cases[i].argv, &err);
    dmh_binlog_req req;
    int rc = args ? dmh_binlog_req_parse(args, &req, &err) : -1;
    if (rc == 0)
      dmh_binlog_req_free(&req);
    if (cases[i].error) {
      CU_ASSERT_EQUAL(rc, -1);
      CU_ASSERT_EQUAL(err.code, DM_ERR_CONTROL_REQUEST);
      if (rc == -1 && !strstr(err.message, cases[i].error)) {
        fprintf(stderr, "\n  case %zu: \"%s\" not in \"%s\"\n", i, cases[i].error, err.message);
        CU_FAIL("wrong message");
      }
    } else {
      if (rc != 0)
        fprintf(stderr, "\n  case %zu refused: %s\n", i, err.message);
      CU_ASSERT_EQUAL(rc, 0);
    }
    json_object_put(args);
  }
}

int main(void) {
  snprintf(store_dir, sizeof store_dir, "/tmp/dmh-binlog-XXXXXX");
  if (!mkdtemp(store_dir))
    return 1;
  static const dmh_cunit_test tests[] = {
      {"SQL split on top-level ';'", test_sql_split},
      {"binlog position", test_pos_parse},
      {"store: put, find, remove", test_store},
      {"request checks", test_request},
  };
  int failed =
      dmh_cunit_run("binlog operators store", NULL, NULL, tests, sizeof tests / sizeof tests[0]);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", store_dir);
  if (system(cmd) != 0)
    return 1;
  return failed;
}

/*
 * `dmctl binlog` end-to-end: operators registered, listed and reverted over the socket, kept
 * across a daemon restart, dropped by stop-task, and seen by a unit through the binlog_operator
 * service (the fake sync unit's binlog-op-item setting), which forgets them on
 * binlog_operator_done.
 */
#include <CUnit/Basic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cunit_run.h"
#include "dmhost/sdk.h"
#include "e2e_util.h"

static const char *const sync_slow = "sync = { items = 0; item-ms = 20; };";

static void ops_start_task(const char *name, const char *units) {
  char file[64];
  snprintf(file, sizeof file, "%s.cfg", name);
  e2e_task(file, name, "incremental", "mysql-01", units);
  json_object *o = NULL;
  CU_ASSERT_EQUAL_FATAL(e2e_dmctl(&o, "start-task", file, NULL), 0);
  json_object_put(o);
}

static void ops_store_path(const char *task, char *out, size_t len) {
  snprintf(out, len, "%s/tasks/%s/mysql-01/binlog-operators.json", e2e_state, task);
}

/* dmctl's answer was refused with `code`, its message naming `needle`. */
static void ops_expect_error(int rc, json_object *o, int code, const char *needle) {
  CU_ASSERT_EQUAL(rc, 1);
  CU_ASSERT_FALSE(e2e_bool(o, "result"));
  CU_ASSERT_EQUAL(e2e_int(o, "error.ErrCode"), code);
  CU_ASSERT_TRUE(e2e_contains(e2e_str(o, "msg"), needle));
  json_object_put(o);
}

static size_t ops_count(const char *task) {
  json_object *o = NULL;
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "binlog", "list", task, NULL), 0);
  json_object *list = e2e_get(o, "sources.0.operators");
  size_t n = list ? json_object_array_length(list) : (size_t)-1;
  json_object_put(o);
  return n;
}

static void test_register_list_revert(void) {
  CU_ASSERT_EQUAL_FATAL(e2e_setup(), 0);
  e2e_begin();
  /* a relay-dir of its own: stop-task must also drop the task's relay reader file */
  e2e_write("source.cfg",
            "source-id = \"mysql-01\";\nenable-relay = false;\nrelay-dir = \"%s/relaydir\";\n"
            "from = { host = \"127.0.0.1\"; port = 1; user = \"root\"; password = \"\"; };\n"
            "unit-paths = { relay = \"%s\"; };\nrelay = { items = 0; item-ms = 20; };\n",
            e2e_dir, FAKE_RELAY);
  e2e_create_source();
  ops_start_task("t1", sync_slow);
  json_object *o = NULL;

  CU_ASSERT_EQUAL(e2e_dmctl(&o, "binlog", "skip", "t1", "-b", "mysql-bin.000001:900", NULL), 0);
  CU_ASSERT_TRUE(e2e_str_is(o, "op", "skip"));
  CU_ASSERT_TRUE(e2e_str_is(o, "task", "t1"));
  CU_ASSERT_TRUE(e2e_str_is(o, "sources.0.source", "mysql-01"));
  CU_ASSERT_TRUE(e2e_str_is(o, "sources.0.operator.binlogPos", "mysql-bin.000001:900"));
  json_object_put(o);
  /* one string split on ';' at top level: the quoted ';' stays inside its statement */
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "binlog", "replace", "t1", "-s", "mysql-01",
                            "ALTER TABLE a ADD c INT; UPDATE b SET s = 'x;y'", NULL),
                  0);
  CU_ASSERT_TRUE(e2e_str_is(o, "sources.0.operator.op", "replace"));
  CU_ASSERT_TRUE(e2e_str_is(o, "sources.0.operator.binlogPos", ""));
  CU_ASSERT_TRUE(e2e_str_is(o, "sources.0.operator.sqls.1", "UPDATE b SET s = 'x;y'"));
  json_object_put(o);
  /* the raw protocol, statements as an array */
  o = e2e_raw("{\"cmd\": \"binlog\", \"args\": {\"op\": \"inject\", \"name\": \"t1\", "
              "\"binlogPos\": \"mysql-bin.000002:1000\", \"sqls\": [\"CREATE TABLE x (a INT)\", "
              "\"CREATE TABLE y (a INT)\"]}}");
  CU_ASSERT_TRUE(e2e_bool(o, "result"));
  CU_ASSERT_EQUAL(json_object_array_length(e2e_get(o, "sources.0.operator.sqls")), 2);
  json_object_put(o);
  /* the same position again replaces, and says so */
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "binlog", "skip", "t1", "-b", "mysql-bin.000002:1000", NULL), 0);
  CU_ASSERT_TRUE(e2e_contains(e2e_str(o, "sources.0.msg"), "replaced"));
  json_object_put(o);
  CU_ASSERT_EQUAL(ops_count("t1"), 3);

  /* refusals */
  int rc = e2e_dmctl(&o, "binlog", "skip", "nosuch", NULL);
  ops_expect_error(rc, o, DM_ERR_NOT_FOUND, "nosuch");
  rc = e2e_dmctl(&o, "binlog", "skip", "t1", "-b", "mysql-bin.000001", NULL);
  ops_expect_error(rc, o, DM_ERR_CONTROL_REQUEST, "FILE:POS");
  rc = e2e_dmctl(&o, "binlog", "skip", "t1", "-b", "mysql-bin.000001:12x", NULL);
  ops_expect_error(rc, o, DM_ERR_CONTROL_REQUEST, "FILE:POS");
  rc = e2e_dmctl(&o, "binlog", "replace", "t1", NULL);
  ops_expect_error(rc, o, DM_ERR_CONTROL_REQUEST, "give the SQL statements");
  rc = e2e_dmctl(&o, "binlog", "inject", "t1", " ; ", NULL);
  ops_expect_error(rc, o, DM_ERR_CONTROL_REQUEST, "give the SQL statements");
  rc = e2e_dmctl(&o, "binlog", "skip", "t1", "DROP TABLE x", NULL);
  ops_expect_error(rc, o, DM_ERR_CONTROL_REQUEST, "takes no SQL");
  rc = e2e_dmctl(&o, "binlog", "skip", "t1", "-s", "mysql-02", NULL);
  ops_expect_error(rc, o, DM_ERR_NOT_FOUND, "mysql-02");
  rc = e2e_dmctl(&o, "binlog", "frob", "t1", NULL);
  ops_expect_error(rc, o, DM_ERR_CONTROL_REQUEST, "frob");

  /* revert by position; a second revert finds nothing */
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "binlog", "revert", "t1", "-b", "mysql-bin.000001:900", NULL), 0);
  CU_ASSERT_EQUAL(e2e_int(o, "sources.0.removed"), 1);
  json_object_put(o);
  rc = e2e_dmctl(&o, "binlog", "revert", "t1", "-b", "mysql-bin.000001:900", NULL);
  ops_expect_error(rc, o, DM_ERR_NOT_FOUND, "mysql-bin.000001:900");
  CU_ASSERT_EQUAL(ops_count("t1"), 2);

  /* a restart keeps them (they are in the subtask's work root in the state dir) */
  CU_ASSERT_EQUAL(e2e_stop(), 0);
  CU_ASSERT_FATAL(e2e_start());
  CU_ASSERT_EQUAL(ops_count("t1"), 2);
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "binlog", "list", "t1", NULL), 0);
  CU_ASSERT_TRUE(e2e_str_is(o, "sources.0.operators.0.op", "replace"));
  CU_ASSERT_TRUE(e2e_str_is(o, "sources.0.operators.1.binlogPos", "mysql-bin.000002:1000"));
  json_object_put(o);

  /* stop-task drops them: a task started again under the name starts clean */
  char store[600];
  ops_store_path("t1", store, sizeof store);
  CU_ASSERT_EQUAL(access(store, F_OK), 0);
  /* what the sync unit writes into the relay folder while it reads it (docs/relay.md, Readers) */
  char readers[400], reader[420], other[420];
  snprintf(readers, sizeof readers, "%s/relaydir/readers", e2e_dir);
  snprintf(reader, sizeof reader, "%s/t1", readers);
  snprintf(other, sizeof other, "%s/t2", readers);
  char cmd[2000];
  snprintf(cmd, sizeof cmd,
           "mkdir -p '%s' && echo '0-1.000001/mysql-bin.000001' > '%s' && "
           "echo '0-1.000001/mysql-bin.000001' > '%s'",
           readers, reader, other);
  CU_ASSERT_EQUAL(system(cmd), 0);
  CU_ASSERT_EQUAL(e2e_dmctl(NULL, "stop-task", "t1", NULL), 0);
  CU_ASSERT_NOT_EQUAL(access(store, F_OK), 0);
  CU_ASSERT_NOT_EQUAL(access(reader, F_OK), 0); /* gone with the task */
  CU_ASSERT_EQUAL(access(other, F_OK), 0);      /* another task's stays */
  CU_ASSERT_EQUAL(e2e_stop(), 0);
  e2e_teardown();
}

/* Poll the sync unit's events.log of `task` until it holds `needle` (or 10 s pass). */
static char *ops_wait_event(const char *task, const char *needle) {
  char path[600];
  snprintf(path, sizeof path, "%s/tasks/%s/mysql-01/sync/events.log", e2e_state, task);
  double deadline = e2e_now() + 10;
  char *text = NULL;
  while (e2e_now() < deadline) {
    free(text);
    text = e2e_read_file(path);
    if (text && strstr(text, needle))
      return text;
    e2e_sleep_ms(20);
  }
  fprintf(stderr, "\n  %s: no \"%s\" in:\n%s\n", path, needle, text ? text : "(no file)");
  free(text);
  return NULL;
}

/* The flow DM's binlog command is for: a statement fails, the task pauses on the error, the user
 * registers an operator, the task resumes (without resume-task) and the unit gets the operator
 * through the service, applies it and reports it done, and the host forgets it. */
static void test_unit_gets_operator(void) {
  CU_ASSERT_EQUAL_FATAL(e2e_setup(), 0);
  e2e_begin();
  e2e_create_source();
  /* item 5 fails once (not resumable: it waits for the user) and asks for an operator */
  ops_start_task("t1", "sync = { items = 0; item-ms = 5; fail-at = 5; fail-resumable = false; "
                       "binlog-op-item = 5; };");
  ops_start_task("t2", "sync = { items = 0; item-ms = 5; fail-at = 3; fail-resumable = false; "
                       "binlog-op-item = 3; };");
  CU_ASSERT_TRUE(e2e_wait_stage("t1", "Paused", 10));
  CU_ASSERT_TRUE(e2e_wait_stage("t2", "Paused", 10));
  char *ev = ops_wait_event("t1", "binlog-op none");
  CU_ASSERT_PTR_NOT_NULL(ev);
  free(ev);

  /* without -b: for the failing event; the paused-by-error subtask is resumed */
  json_object *o = NULL;
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "binlog", "replace", "t1",
                            "ALTER TABLE a ADD c INT; ALTER TABLE b ADD d INT", NULL),
                  0);
  CU_ASSERT_TRUE(e2e_bool(o, "sources.0.resumed"));
  json_object_put(o);
  ev = ops_wait_event("t1", "binlog-op-done");
  CU_ASSERT_PTR_NOT_NULL(ev);
  CU_ASSERT_TRUE(e2e_contains(
      ev, "binlog-op replace at= sqls=ALTER TABLE a ADD c INT|ALTER TABLE b ADD d INT"));
  free(ev);
  CU_ASSERT_TRUE(e2e_wait_stage("t1", "Running", 5));
  CU_ASSERT_EQUAL(ops_count("t1"), 0);
  char store[600];
  ops_store_path("t1", store, sizeof store);
  CU_ASSERT_NOT_EQUAL(access(store, F_OK), 0);

  /* with -b: found by the event's position */
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "binlog", "skip", "t2", "-b", "mysql-bin.000001:300", NULL), 0);
  json_object_put(o);
  ev = ops_wait_event("t2", "binlog-op-done");
  CU_ASSERT_PTR_NOT_NULL(ev);
  CU_ASSERT_TRUE(e2e_contains(ev, "binlog-op skip at=mysql-bin.000001:300 sqls="));
  free(ev);
  CU_ASSERT_EQUAL(ops_count("t2"), 0);
  CU_ASSERT_EQUAL(e2e_stop(), 0);
  e2e_teardown();
}

int main(void) {
  signal(SIGPIPE, SIG_IGN);
  static const dmh_cunit_test tests[] = {
      {"register, list, revert, restart, stop-task", test_register_list_revert},
      {"a failing unit gets the operator", test_unit_gets_operator},
  };
  return dmh_cunit_run("binlog operators e2e", NULL, NULL, tests, sizeof tests / sizeof tests[0]);
}

/*
 * End-to-end: `dmhost serve` as a child process with its own state dir, driven by the dmctl
 * executable (and by raw requests on the socket), with the fake units of tests/fixtures. Each test
 * starts from an empty state dir and stops its daemon with SIGTERM, checking it exits 0.
 */
#include <CUnit/Basic.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "control_socket.h"
#include "cunit_run.h"
#include "dmhost/sdk.h"

#include "e2e_util.h"

/* ---- tests ---- */

static void test_operate_source(void) {
  CU_ASSERT_FATAL(e2e_setup() == 0);
  e2e_begin();
  json_object *o = NULL;
  /* show before create: an empty list, worker free */
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "operate-source", "show", NULL), 0);
  CU_ASSERT_EQUAL(json_object_array_length(e2e_get(o, "sources")), 0);
  CU_ASSERT(e2e_str_is(o, "worker.stage", "free"));
  json_object_put(o);

  CU_ASSERT_EQUAL(e2e_dmctl(&o, "operate-source", "create", "source.cfg", NULL), 0);
  CU_ASSERT(e2e_bool(o, "result"));
  CU_ASSERT(e2e_str_is(o, "sources.0.source", "mysql-01"));
  CU_ASSERT(e2e_str_is(o, "worker.stage", "bound"));
  CU_ASSERT(e2e_str_is(o, "worker.source", "mysql-01"));
  json_object_put(o);

  /* The file was copied: changing the original changes nothing. */
  e2e_write("source.cfg", "garbage that does not parse");
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "operate-source", "show", "-s", "mysql-01", NULL), 0);
  CU_ASSERT(e2e_str_is(o, "sources.0.source", "mysql-01"));
  CU_ASSERT(e2e_contains(e2e_str(o, "sources.0.file"), "/state/sources/mysql-01/source.cfg"));
  CU_ASSERT(e2e_str_is(o, "sources.0.relayExpected", "Stopped"));
  CU_ASSERT_PTR_NULL(e2e_get(o, "sources.0.relayStatus"));
  CU_ASSERT(e2e_str_is(o, "worker.stage", "bound"));
  json_object_put(o);

  /* One source per worker, as in DM. */
  e2e_source("source2.cfg", "mysql-02", false);
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "operate-source", "create", "source2.cfg", NULL), 1);
  CU_ASSERT_FALSE(e2e_bool(o, "result"));
  CU_ASSERT_EQUAL(e2e_int(o, "error.ErrCode"), DM_ERR_EXISTS);
  CU_ASSERT(e2e_str_is(o, "error.ErrClass", "control"));
  CU_ASSERT(e2e_contains(e2e_str(o, "msg"), "bound to source \"mysql-01\""));
  CU_ASSERT(e2e_contains(e2e_str(o, "msg"), "operate-source stop -s mysql-01"));
  CU_ASSERT(e2e_str_is(o, "sources.0.source", "mysql-02"));
  json_object_put(o);

  /* A relative path would mean another file once the source file is copied into the state dir. */
  e2e_write("source3.cfg",
            "source-id = \"mysql-03\";\n"
            "from = { host = \"127.0.0.1\"; port = 1; user = \"root\"; password = \"\"; };\n"
            "unit-paths = { relay = \"units/fake-relay.so\"; };\n");
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "operate-source", "stop", "mysql-01", NULL), 0);
  json_object_put(o);
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "operate-source", "create", "source3.cfg", NULL), 1);
  CU_ASSERT_EQUAL(e2e_int(o, "error.ErrCode"), DM_ERR_CONFIG_INVALID);
  CU_ASSERT(e2e_contains(e2e_str(o, "msg"), "unit-paths.relay is a relative path"));
  CU_ASSERT(e2e_contains(e2e_str(o, "msg"), "give an absolute path"));
  CU_ASSERT(e2e_str_is(o, "worker.stage", "free")); /* nothing half-created */
  json_object_put(o);
  e2e_source("source.cfg", "mysql-01", false);
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "operate-source", "create", "source.cfg", NULL), 0);
  json_object_put(o);

  CU_ASSERT_EQUAL(e2e_dmctl(&o, "operate-source", "show", "-s", "mysql-02", NULL), 1);
  CU_ASSERT_EQUAL(e2e_int(o, "error.ErrCode"), DM_ERR_NOT_FOUND);
  json_object_put(o);

  CU_ASSERT_EQUAL(e2e_dmctl(&o, "operate-source", "stop", "-s", "mysql-01", NULL), 0);
  CU_ASSERT(e2e_str_is(o, "worker.stage", "free"));
  json_object_put(o);
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "operate-source", "create", "source2.cfg", NULL), 0);
  CU_ASSERT(e2e_str_is(o, "worker.source", "mysql-02"));
  json_object_put(o);
  CU_ASSERT_EQUAL(e2e_stop(), 0);
  e2e_teardown();
}

static void test_task_runs_to_finish(void) {
  CU_ASSERT_FATAL(e2e_setup() == 0);
  e2e_begin();
  e2e_create_source();
  e2e_task("task.cfg", "t1", "full", "mysql-01",
           "dump = { items = 20; item-ms = 40; };\nload = { items = 10; item-ms = 10; };");
  json_object *o = NULL;
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "start-task", "task.cfg", NULL), 0);
  CU_ASSERT(e2e_str_is(o, "sources.0.source", "mysql-01"));
  CU_ASSERT(e2e_bool(o, "sources.0.result"));
  json_object_put(o);

  /* Running in DM's shape while the dump works, */
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "query-status", "t1", NULL), 0);
  CU_ASSERT(e2e_str_is(o, "sources.0.sourceStatus.source", "mysql-01"));
  CU_ASSERT_PTR_NOT_NULL(e2e_str(o, "sources.0.sourceStatus.worker"));
  CU_ASSERT(e2e_str_is(o, "sources.0.subTaskStatus.0.name", "t1"));
  CU_ASSERT(e2e_str_is(o, "sources.0.subTaskStatus.0.stage", "Running"));
  CU_ASSERT(e2e_str_is(o, "sources.0.subTaskStatus.0.unit", "Dump"));
  CU_ASSERT_PTR_NOT_NULL(e2e_get(o, "sources.0.subTaskStatus.0.dumpStatus"));
  json_object_put(o);
  /* and in the list. */
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "query-status", NULL), 0);
  CU_ASSERT(e2e_str_is(o, "tasks.0.taskName", "t1"));
  CU_ASSERT(e2e_str_is(o, "tasks.0.taskStatus", "Running"));
  CU_ASSERT(e2e_str_is(o, "tasks.0.sources.0.source", "mysql-01"));
  CU_ASSERT(e2e_str_is(o, "tasks.0.sources.0.stage", "Running"));
  json_object_put(o);

  CU_ASSERT(e2e_wait_stage("t1", "Finished", 30));
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "query-status", NULL), 0);
  CU_ASSERT(e2e_str_is(o, "tasks.0.taskStatus", "Finished"));
  json_object_put(o);
  bool in_order;
  CU_ASSERT_EQUAL(e2e_items("t1", "dump", &in_order), 20);
  CU_ASSERT(in_order);
  CU_ASSERT_EQUAL(e2e_items("t1", "load", &in_order), 10);
  CU_ASSERT(in_order);

  /* A second start of the same name is refused; a task on an unknown source names it. */
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "start-task", "task.cfg", NULL), 1);
  CU_ASSERT_EQUAL(e2e_int(o, "error.ErrCode"), DM_ERR_EXISTS);
  CU_ASSERT(e2e_contains(e2e_str(o, "msg"), "task \"t1\" already exists"));
  json_object_put(o);
  e2e_task("task-x.cfg", "tx", "full", "mysql-99", "");
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "start-task", "task-x.cfg", NULL), 1);
  CU_ASSERT_EQUAL(e2e_int(o, "error.ErrCode"), DM_ERR_NOT_FOUND);
  CU_ASSERT(e2e_contains(e2e_str(o, "msg"), "\"mysql-99\""));
  CU_ASSERT(e2e_contains(e2e_str(o, "msg"), "operate-source create"));
  json_object_put(o);
  /* ... and leaves nothing behind. */
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "query-status", "tx", NULL), 1);
  CU_ASSERT_EQUAL(e2e_int(o, "error.ErrCode"), DM_ERR_NOT_FOUND);
  json_object_put(o);

  /* A task over two sources gets a subtask for the one bound here; the other is named. */
  e2e_write("task-2src.cfg",
            "name = \"t2\";\ntask-mode = \"incremental\";\n"
            "target-database = { host = \"127.0.0.1\"; port = 2; user = \"root\"; password = "
            "\"\"; };\n"
            "mysql-instances = ( { source-id = \"mysql-01\"; }, { source-id = \"mysql-02\"; } );\n"
            "unit-paths = { sync = \"%s\"; };\nsync = { items = 3; item-ms = 1; };\n"
            "ignore-checking-items = [\"all\"];\n",
            FAKE_SYNC);
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "start-task", "task-2src.cfg", NULL), 0);
  CU_ASSERT(e2e_contains(e2e_str(o, "msg"), "source(s) mysql-02 of the task are not bound"));
  CU_ASSERT_EQUAL(json_object_array_length(e2e_get(o, "sources")), 1);
  CU_ASSERT(e2e_str_is(o, "sources.0.source", "mysql-01"));
  json_object_put(o);
  CU_ASSERT(e2e_wait_stage("t2", "Finished", 10));
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "stop-task", "t2", NULL), 0);
  json_object_put(o);

  /* stop-task removes it. */
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "stop-task", "t1", NULL), 0);
  CU_ASSERT(e2e_str_is(o, "op", "Stop"));
  json_object_put(o);
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "query-status", NULL), 0);
  CU_ASSERT_EQUAL(json_object_array_length(e2e_get(o, "tasks")), 0);
  json_object_put(o);
  CU_ASSERT_EQUAL(e2e_stop(), 0);
  e2e_teardown();
}

/* dmctl check-task prints DM's checker JSON; a task whose precheck fails is refused by start-task
 * and leaves nothing. The fake source and target (ports 1 and 2) answer nobody: every item fails
 * with the connection's error; with ignore-checking-items = ["all"] nothing is checked. */
static void test_check_task(void) {
  CU_ASSERT_FATAL(e2e_setup() == 0);
  e2e_begin();
  e2e_create_source();
  e2e_write("checked.cfg",
            "name = \"tc\";\ntask-mode = \"full\";\n"
            "target-database = { host = \"127.0.0.1\"; port = 2; user = \"root\"; password = "
            "\"\"; };\n"
            "mysql-instances = ( { source-id = \"mysql-01\"; } );\n"
            "unit-paths = { dump = \"%s\"; load = \"%s\"; };\n",
            FAKE_DUMP, FAKE_LOAD);
  json_object *o = NULL;
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "check-task", "checked.cfg", NULL), 1);
  CU_ASSERT_EQUAL(e2e_int(o, "error.ErrCode"), DM_ERR_PRECHECK_FAILED);
  CU_ASSERT(e2e_str_is(o, "error.ErrClass", "task-check"));
  CU_ASSERT_FALSE(e2e_bool(o, "checkResult.summary.passed"));
  CU_ASSERT(e2e_int(o, "checkResult.summary.failed") > 0);
  CU_ASSERT(e2e_str_is(o, "checkResult.results.0.name", "version"));
  CU_ASSERT(e2e_str_is(o, "checkResult.results.0.state", "fail"));
  CU_ASSERT(e2e_str_is(o, "checkResult.results.0.extra", "mysql-01"));
  CU_ASSERT(e2e_str_is(o, "checkResult.results.0.errors.0.severity", "fail"));
  CU_ASSERT(e2e_contains(e2e_str(o, "checkResult.results.0.errors.0.short_error"),
                         "not checked: precheck: "));
  CU_ASSERT_PTR_NOT_NULL(e2e_str(o, "checkResult.results.0.instruction"));
  json_object_put(o);
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "start-task", "checked.cfg", NULL), 1);
  CU_ASSERT_EQUAL(e2e_int(o, "error.ErrCode"), DM_ERR_PRECHECK_FAILED);
  CU_ASSERT(e2e_contains(e2e_str(o, "msg"), "start-task tc: the precheck failed: version "
                                            "(mysql-01): not checked"));
  json_object_put(o);
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "query-status", "tc", NULL), 1);
  CU_ASSERT_EQUAL(e2e_int(o, "error.ErrCode"), DM_ERR_NOT_FOUND);
  json_object_put(o);
  e2e_task("ignored.cfg", "ti", "full", "mysql-01", "");
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "check-task", "ignored.cfg", NULL), 0);
  CU_ASSERT(e2e_bool(o, "checkResult.summary.passed"));
  CU_ASSERT_EQUAL(e2e_int(o, "checkResult.summary.total"), 0);
  CU_ASSERT(e2e_str_is(o, "msg", "pre-check is passed"));
  json_object_put(o);
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "check-task", NULL), 1); /* dmctl's own usage check */
  CU_ASSERT(e2e_contains(e2e_str(o, "msg"), "check-task: missing argument"));
  json_object_put(o);
  CU_ASSERT_EQUAL(e2e_stop(), 0);
  e2e_teardown();
}

static void test_pause_resume(void) {
  CU_ASSERT_FATAL(e2e_setup() == 0);
  e2e_begin();
  e2e_create_source();
  e2e_task("task.cfg", "inc", "incremental", "mysql-01", "sync = { items = 0; item-ms = 10; };");
  json_object *o = NULL;
  CU_ASSERT_EQUAL_FATAL(e2e_dmctl(&o, "start-task", "task.cfg", NULL), 0);
  json_object_put(o);
  CU_ASSERT(e2e_wait_stage("inc", "Running", 5));

  CU_ASSERT_EQUAL(e2e_dmctl(&o, "pause-task", "inc", NULL), 0);
  CU_ASSERT(e2e_str_is(o, "op", "Pause"));
  CU_ASSERT(e2e_bool(o, "sources.0.result"));
  json_object_put(o);
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "query-status", NULL), 0);
  CU_ASSERT(e2e_str_is(o, "tasks.0.taskStatus", "Paused"));
  CU_ASSERT(e2e_str_is(o, "tasks.0.expectedStage", "Paused"));
  json_object_put(o);
  /* Paused means paused: nothing is written any more. */
  bool in_order;
  int n1 = e2e_items("inc", "sync", &in_order);
  e2e_sleep_ms(200);
  CU_ASSERT_EQUAL(e2e_items("inc", "sync", &in_order), n1);

  /* A second pause is refused by the supervisor with its stage code. */
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "pause-task", "inc", NULL), 1);
  CU_ASSERT_EQUAL(e2e_int(o, "error.ErrCode"), DM_ERR_STAGE);
  CU_ASSERT(e2e_contains(e2e_str(o, "msg"), "in stage Paused"));
  json_object_put(o);

  /* The source is in use: operate-source stop names the task. */
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "operate-source", "stop", "-s", "mysql-01", NULL), 1);
  CU_ASSERT_EQUAL(e2e_int(o, "error.ErrCode"), DM_ERR_EXISTS);
  CU_ASSERT(e2e_contains(e2e_str(o, "msg"), "used by task inc"));
  json_object_put(o);

  CU_ASSERT_EQUAL(e2e_dmctl(&o, "resume-task", "inc", NULL), 0);
  CU_ASSERT(e2e_str_is(o, "op", "Resume"));
  json_object_put(o);
  CU_ASSERT(e2e_wait_stage("inc", "Running", 5));
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "query-status", NULL), 0);
  CU_ASSERT(e2e_str_is(o, "tasks.0.expectedStage", "Running"));
  json_object_put(o);
  e2e_sleep_ms(200);
  int n2 = e2e_items("inc", "sync", &in_order);
  CU_ASSERT(n2 > n1);
  CU_ASSERT(in_order);

  CU_ASSERT_EQUAL(e2e_dmctl(&o, "pause-task", "nope", NULL), 1);
  CU_ASSERT_EQUAL(e2e_int(o, "error.ErrCode"), DM_ERR_NOT_FOUND);
  CU_ASSERT(e2e_contains(e2e_str(o, "msg"), "task \"nope\" does not exist"));
  json_object_put(o);
  CU_ASSERT_EQUAL(e2e_stop(), 0);
  e2e_teardown();
}

/* A pause that waits for a slow unit holds only that task's command lock: query-status and
 * commands on other tasks answer meanwhile (registry.h, "Locking"). */
static void test_slow_pause_blocks_nobody(void) {
  CU_ASSERT_FATAL(e2e_setup() == 0);
  e2e_begin();
  e2e_create_source();
  e2e_task("slow.cfg", "slow", "incremental", "mysql-01",
           "sync = { items = 0; item-ms = 10; ignore-stop-ms = 2000; };");
  e2e_task("fast.cfg", "fast", "incremental", "mysql-01", "sync = { items = 0; item-ms = 10; };");
  json_object *o = NULL;
  CU_ASSERT_EQUAL_FATAL(e2e_dmctl(&o, "start-task", "slow.cfg", NULL), 0);
  json_object_put(o);
  CU_ASSERT_EQUAL_FATAL(e2e_dmctl(&o, "start-task", "fast.cfg", NULL), 0);
  json_object_put(o);
  double t0 = e2e_now();
  pid_t pauser = e2e_dmctl_async("pause-task", "slow");
  CU_ASSERT_FATAL(pauser > 0);
  e2e_sleep_ms(300);
  double q0 = e2e_now();
  char *stage = e2e_stage("slow");
  CU_ASSERT(e2e_now() - q0 < 1.0);
  CU_ASSERT(stage && strcmp(stage, "Pausing") == 0);
  free(stage);
  q0 = e2e_now();
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "pause-task", "fast", NULL), 0);
  json_object_put(o);
  CU_ASSERT(e2e_now() - q0 < 1.0);
  int status = 0;
  CU_ASSERT_EQUAL(waitpid(pauser, &status, 0), pauser);
  CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  CU_ASSERT(e2e_now() - t0 >= 1.5); /* it did wait for the unit */
  CU_ASSERT(e2e_wait_stage("slow", "Paused", 1));
  CU_ASSERT_EQUAL(e2e_stop(), 0);
  e2e_teardown();
}

/* Many clients at once on one task, ending with stop-task racing the others: every client gets
 * an answer, the daemon stays consistent (the task is gone, state.json agrees) and exits 0. Run
 * under the sanitizers this is the registry's locking test. */
static void test_concurrent_commands(void) {
  CU_ASSERT_FATAL(e2e_setup() == 0);
  e2e_begin();
  e2e_create_source();
  e2e_task("task.cfg", "busy", "incremental", "mysql-01", "sync = { items = 0; item-ms = 5; };");
  json_object *o = NULL;
  CU_ASSERT_EQUAL_FATAL(e2e_dmctl(&o, "start-task", "task.cfg", NULL), 0);
  json_object_put(o);
  static const char *const cmds[] = {"pause-task",  "resume-task",  "query-status", "pause-task",
                                     "resume-task", "query-status", "stop-task",    "pause-task",
                                     "resume-task", "query-status", "resume-task",  "pause-task"};
  pid_t pids[sizeof cmds / sizeof cmds[0]];
  for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
    pids[i] = e2e_dmctl_async(cmds[i], "busy");
  for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
    int status = -1;
    CU_ASSERT_EQUAL(waitpid(pids[i], &status, 0), pids[i]);
    /* 0 or 1 (e.g. a pause of a task already paused, or one removed meanwhile), never a crash */
    CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) <= 1);
  }
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "query-status", "busy", NULL), 1);
  CU_ASSERT_EQUAL(e2e_int(o, "error.ErrCode"), DM_ERR_NOT_FOUND);
  json_object_put(o);
  char path[512];
  snprintf(path, sizeof path, "%s/state.json", e2e_state);
  char *state = e2e_read_file(path);
  CU_ASSERT(state && !strstr(state, "busy"));
  free(state);
  /* the name is free again */
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "start-task", "task.cfg", NULL), 0);
  json_object_put(o);
  CU_ASSERT_EQUAL(e2e_stop(), 0);
  e2e_teardown();
}

/* SIGTERM while a task runs: the daemon pauses it at a safe point and exits 0; the next start
 * brings it back Running from its checkpoint and it finishes with every item exactly once. A task
 * paused by the user comes back New and waits for resume-task. */
static void test_restart_resumes(void) {
  CU_ASSERT_FATAL(e2e_setup() == 0);
  e2e_begin();
  e2e_create_source();
  e2e_task("task.cfg", "t1", "full", "mysql-01",
           "dump = { items = 40; item-ms = 50; };\nload = { items = 5; item-ms = 10; };");
  e2e_task("task2.cfg", "t2", "incremental", "mysql-01", "sync = { items = 0; item-ms = 10; };");
  json_object *o = NULL;
  CU_ASSERT_EQUAL_FATAL(e2e_dmctl(&o, "start-task", "task.cfg", NULL), 0);
  json_object_put(o);
  CU_ASSERT_EQUAL_FATAL(e2e_dmctl(&o, "start-task", "task2.cfg", NULL), 0);
  json_object_put(o);
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "pause-task", "t2", NULL), 0);
  json_object_put(o);
  e2e_sleep_ms(500);
  bool in_order;
  int before = e2e_items("t1", "dump", &in_order);
  CU_ASSERT(before > 0 && before < 40);

  CU_ASSERT_EQUAL(e2e_stop(), 0);
  int at_stop = e2e_items("t1", "dump", &in_order);
  CU_ASSERT(at_stop < 40);
  CU_ASSERT(in_order);

  CU_ASSERT_FATAL(e2e_start());
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "query-status", NULL), 0);
  CU_ASSERT(e2e_str_is(o, "worker.stage", "bound"));
  CU_ASSERT(e2e_str_is(o, "worker.source", "mysql-01"));
  json_object_put(o);
  char *stage = e2e_stage("t1");
  CU_ASSERT(stage && (strcmp(stage, "Running") == 0 || strcmp(stage, "Finished") == 0));
  free(stage);
  CU_ASSERT(e2e_wait_stage("t2", "New", 1));
  CU_ASSERT(e2e_wait_stage("t1", "Finished", 30));
  CU_ASSERT_EQUAL(e2e_items("t1", "dump", &in_order), 40);
  CU_ASSERT(in_order); /* each item exactly once, in order */
  CU_ASSERT_EQUAL(e2e_items("t1", "load", &in_order), 5);
  CU_ASSERT(in_order);

  /* The paused task starts again on resume-task, from its checkpoint. */
  int t2_before = e2e_items("t2", "sync", &in_order);
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "resume-task", "t2", NULL), 0);
  json_object_put(o);
  CU_ASSERT(e2e_wait_stage("t2", "Running", 5));
  e2e_sleep_ms(200);
  CU_ASSERT(e2e_items("t2", "sync", &in_order) > t2_before);
  CU_ASSERT(in_order);
  CU_ASSERT_EQUAL(e2e_stop(), 0);
  e2e_teardown();
}

/* The DM bug end to end: a relay bound to mysql-01 survives a restart as stage relay, and
 * mysql-02 is refused. */
static void test_relay_binding_survives_restart(void) {
  CU_ASSERT_FATAL(e2e_setup() == 0);
  e2e_begin();
  e2e_create_source();
  json_object *o = NULL;
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "start-relay", "-s", "mysql-01", NULL), 0);
  CU_ASSERT(e2e_str_is(o, "worker.stage", "relay"));
  json_object_put(o);
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "start-relay", "-s", "mysql-01", NULL), 1);
  CU_ASSERT_EQUAL(e2e_int(o, "error.ErrCode"), DM_ERR_EXISTS);
  CU_ASSERT(e2e_contains(e2e_str(o, "msg"), "already runs"));
  json_object_put(o);

  CU_ASSERT_EQUAL(e2e_stop(), 0);
  CU_ASSERT_FATAL(e2e_start());
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "operate-source", "show", NULL), 0);
  CU_ASSERT(e2e_str_is(o, "worker.stage", "relay"));
  CU_ASSERT(e2e_str_is(o, "worker.source", "mysql-01"));
  CU_ASSERT(e2e_str_is(o, "sources.0.relayExpected", "Running"));
  CU_ASSERT(e2e_str_is(o, "sources.0.relayStatus.stage", "Running"));
  CU_ASSERT_PTR_NOT_NULL(e2e_get(o, "sources.0.relayStatus.relayBinlog"));
  json_object_put(o);

  e2e_source("source2.cfg", "mysql-02", false);
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "operate-source", "create", "source2.cfg", NULL), 1);
  CU_ASSERT_EQUAL(e2e_int(o, "error.ErrCode"), DM_ERR_EXISTS);
  CU_ASSERT(e2e_contains(e2e_str(o, "msg"), "bound to source \"mysql-01\" with its relay running"));
  json_object_put(o);

  /* query-status of a task shows the relay beside the subtask. */
  e2e_task("task.cfg", "inc", "incremental", "mysql-01", "sync = { items = 0; item-ms = 10; };");
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "start-task", "task.cfg", NULL), 0);
  json_object_put(o);
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "query-status", "inc", NULL), 0);
  CU_ASSERT(e2e_str_is(o, "sources.0.sourceStatus.relayStatus.stage", "Running"));
  json_object_put(o);
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "stop-task", "inc", NULL), 0);
  json_object_put(o);

  CU_ASSERT_EQUAL(e2e_dmctl(&o, "stop-relay", "-s", "mysql-01", NULL), 0);
  CU_ASSERT(e2e_str_is(o, "worker.stage", "bound"));
  json_object_put(o);
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "operate-source", "show", NULL), 0);
  CU_ASSERT(e2e_str_is(o, "sources.0.relayStatus.stage", "Stopped"));
  json_object_put(o);
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "stop-relay", "-s", "mysql-01", NULL), 1);
  CU_ASSERT_EQUAL(e2e_int(o, "error.ErrCode"), DM_ERR_NOT_FOUND);
  json_object_put(o);
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "operate-source", "stop", "-s", "mysql-01", NULL), 0);
  CU_ASSERT(e2e_str_is(o, "worker.stage", "free"));
  json_object_put(o);

  /* After a restart the worker is free, and mysql-02 may bind. */
  CU_ASSERT_EQUAL(e2e_stop(), 0);
  CU_ASSERT_FATAL(e2e_start());
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "operate-source", "create", "source2.cfg", NULL), 0);
  CU_ASSERT(e2e_str_is(o, "worker.source", "mysql-02"));
  json_object_put(o);
  CU_ASSERT_EQUAL(e2e_stop(), 0);
  e2e_teardown();
}

/* enable-relay in the source file starts the relay on create (bound -> relay). */
static void test_enable_relay(void) {
  CU_ASSERT_FATAL(e2e_setup() == 0);
  e2e_source("source.cfg", "mysql-01", true);
  CU_ASSERT_FATAL(e2e_start());
  json_object *o = NULL;
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "operate-source", "create", "source.cfg", NULL), 0);
  CU_ASSERT(e2e_str_is(o, "worker.stage", "relay"));
  json_object_put(o);
  /* operate-source stop goes relay -> bound -> free, stopping the relay on the way. */
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "operate-source", "stop", "-s", "mysql-01", NULL), 0);
  CU_ASSERT(e2e_str_is(o, "worker.stage", "free"));
  json_object_put(o);
  CU_ASSERT_EQUAL(e2e_stop(), 0);
  e2e_teardown();
}

/* update-task (issue 13) with the fake units, which have no update slot: a changed section of
 * theirs is refused before anything changes (DM_ERR_UPDATE_UNSUPPORTED, naming the unit, the file
 * and "stop and start"); a file that leaves their sections as they are is taken, also by a task
 * restored as paused (its subtask left New, no instance open). Before this command existed dmctl
 * refused update-task as unknown. */
static void test_update_task(void) {
  CU_ASSERT_FATAL(e2e_setup() == 0);
  e2e_begin();
  e2e_create_source();
  e2e_task("task.cfg", "t1", "full", "mysql-01", "dump = { items = 0; item-ms = 10; };");
  e2e_task("task-dump.cfg", "t1", "full", "mysql-01", "dump = { items = 0; item-ms = 20; };");
  e2e_task("task-same.cfg", "t1", "full", "mysql-01",
           "# the same settings\ndump = { item-ms = 10; items = 0; };");
  json_object *o = NULL;
  CU_ASSERT_EQUAL_FATAL(e2e_dmctl(&o, "start-task", "task.cfg", NULL), 0);
  json_object_put(o);
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "pause-task", "t1", NULL), 0);
  json_object_put(o);
  char copy_path[400];
  snprintf(copy_path, sizeof copy_path, "%s/tasks/t1/task.cfg", e2e_state);
  char *before = e2e_read_file(copy_path);
  CU_ASSERT_PTR_NOT_NULL_FATAL(before);

  CU_ASSERT_EQUAL(e2e_dmctl(&o, "update-task", "task-dump.cfg", NULL), 1);
  CU_ASSERT_EQUAL(e2e_int(o, "error.ErrCode"), DM_ERR_UPDATE_UNSUPPORTED);
  CU_ASSERT(e2e_contains(e2e_str(o, "msg"), "the dump unit fake 1"));
  CU_ASSERT(e2e_contains(e2e_str(o, "msg"), "task-dump.cfg:8"));
  CU_ASSERT(e2e_contains(e2e_str(o, "msg"), "stop and start the task"));
  CU_ASSERT_EQUAL(e2e_int(o, "sources.0.error.ErrCode"), DM_ERR_UPDATE_UNSUPPORTED);
  json_object_put(o);
  char *after = e2e_read_file(copy_path);
  CU_ASSERT(after && strcmp(before, after) == 0); /* nothing changed */
  free(after);
  CU_ASSERT(e2e_wait_stage("t1", "Paused", 1));

  CU_ASSERT_EQUAL(e2e_dmctl(&o, "update-task", "task-same.cfg", NULL), 0);
  CU_ASSERT(e2e_bool(o, "sources.0.result"));
  json_object_put(o);
  after = e2e_read_file(copy_path);
  CU_ASSERT(after && e2e_contains(after, "# the same settings"));
  free(after);

  /* restored as paused: New, and update-task takes it; resume-task starts it */
  CU_ASSERT_EQUAL(e2e_stop(), 0);
  CU_ASSERT_FATAL(e2e_start());
  CU_ASSERT(e2e_wait_stage("t1", "New", 5));
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "update-task", "task.cfg", NULL), 0);
  json_object_put(o);
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "resume-task", "t1", NULL), 0);
  json_object_put(o);
  CU_ASSERT(e2e_wait_stage("t1", "Running", 5));
  /* and Running: refused */
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "update-task", "task-same.cfg", NULL), 1);
  CU_ASSERT_EQUAL(e2e_int(o, "error.ErrCode"), DM_ERR_UPDATE_STAGE);
  json_object_put(o);
  free(before);
  CU_ASSERT_EQUAL(e2e_stop(), 0);
  e2e_teardown();
}

static void test_swap_unit(void) {
  CU_ASSERT_FATAL(e2e_setup() == 0);
  e2e_begin();
  e2e_create_source();
  /* a dump that never finishes, so that it is the running unit throughout */
  e2e_task("task.cfg", "t1", "full", "mysql-01", "dump = { items = 0; item-ms = 10; };");
  json_object *o = NULL;
  CU_ASSERT_EQUAL_FATAL(e2e_dmctl(&o, "start-task", "task.cfg", NULL), 0);
  json_object_put(o);

  /* A build of another ABI major: refused with the loader's code, the old build keeps running. */
  CU_ASSERT_EQUAL(
      e2e_dmctl(&o, "swap-unit", "t1", "--unit", "dump", "--path", FAKE_DUMP_ABI2, NULL), 1);
  CU_ASSERT_FALSE(e2e_bool(o, "result"));
  CU_ASSERT_EQUAL(e2e_int(o, "error.ErrCode"), DM_ERR_SWAP);
  CU_ASSERT(e2e_str_is(o, "error.RawCause", "code 12004")); /* DM_ERR_UNIT_ABI_MAJOR */
  CU_ASSERT(e2e_contains(e2e_str(o, "msg"), FAKE_DUMP_ABI2));
  CU_ASSERT_EQUAL(e2e_int(o, "sources.0.error.ErrCode"), DM_ERR_SWAP);
  json_object_put(o);
  CU_ASSERT(e2e_wait_stage("t1", "Running", 1));
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "query-status", "t1", NULL), 0);
  CU_ASSERT(e2e_str_is(o, "sources.0.subTaskStatus.0.unitVersion", "1"));
  json_object_put(o);

  /* A kind the mode does not run. */
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "swap-unit", "t1", "--unit", "sync", "--path", FAKE_SYNC_V2, NULL),
                  1);
  CU_ASSERT_EQUAL(e2e_int(o, "error.ErrCode"), DM_ERR_NO_SUCH_UNIT);
  json_object_put(o);

  /* A good build: swapped at a safe point, and kept across a restart (state.json unitPaths). */
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "swap-unit", "t1", "--unit", "dump", "--path", FAKE_DUMP_V2, NULL),
                  0);
  json_object_put(o);
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "query-status", "t1", NULL), 0);
  CU_ASSERT(e2e_str_is(o, "sources.0.subTaskStatus.0.unitVersion", "2"));
  CU_ASSERT(e2e_str_is(o, "sources.0.subTaskStatus.0.stage", "Running"));
  json_object_put(o);
  CU_ASSERT_EQUAL(e2e_stop(), 0);
  CU_ASSERT_FATAL(e2e_start());
  CU_ASSERT(e2e_wait_stage("t1", "Running", 5));
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "query-status", "t1", NULL), 0);
  CU_ASSERT(e2e_str_is(o, "sources.0.subTaskStatus.0.unitVersion", "2"));
  json_object_put(o);
  e2e_sleep_ms(100);
  bool in_order;
  CU_ASSERT(e2e_items("t1", "dump", &in_order) > 0);
  CU_ASSERT(in_order); /* neither the swap nor the restart lost or doubled an item */
  CU_ASSERT_EQUAL(e2e_stop(), 0);
  e2e_teardown();
}

static void e2e_expect_request_error(json_object *o, const char *needle) {
  CU_ASSERT_PTR_NOT_NULL_FATAL(o);
  CU_ASSERT_FALSE(e2e_bool(o, "result"));
  CU_ASSERT_EQUAL(e2e_int(o, "error.ErrCode"), DM_ERR_CONTROL_REQUEST);
  CU_ASSERT(e2e_str_is(o, "error.ErrClass", "control"));
  CU_ASSERT(e2e_str_is(o, "error.ErrLevel", "low"));
  CU_ASSERT(e2e_contains(e2e_str(o, "error.Workaround"), "dmctl help"));
  CU_ASSERT(e2e_contains(e2e_str(o, "msg"), needle));
  json_object_put(o);
}

static void test_bad_requests(void) {
  CU_ASSERT_FATAL(e2e_setup() == 0);
  e2e_begin();
  json_object *o = NULL;
  /* dmctl refuses what it cannot parse, in the same shape */
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "frobnicate", NULL), 1);
  e2e_expect_request_error(o, "unknown command \"frobnicate\"");
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "pause-task", NULL), 1);
  e2e_expect_request_error(o, "pause-task: missing argument");
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "start-relay", NULL), 1);
  e2e_expect_request_error(o, "-s SOURCE is required");
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "operate-source", "destroy", NULL), 1);
  e2e_expect_request_error(o, "\"destroy\" is not create, update, show, stop, enable or disable");
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "swap-unit", "t", "--unit", "sync", NULL), 1);
  e2e_expect_request_error(o, "--path NEW.so are required");

  /* the daemon refuses bad requests on the socket */
  e2e_expect_request_error(e2e_raw("this is not json"), "not valid JSON");
  e2e_expect_request_error(e2e_raw("{\"cmd\": \"frobnicate\"}"), "unknown command \"frobnicate\"");
  e2e_expect_request_error(e2e_raw("[1, 2]"), "not a JSON object");
  e2e_expect_request_error(e2e_raw("{\"args\": {}}"), "no \"cmd\" string");
  e2e_expect_request_error(e2e_raw("{\"cmd\": \"pause-task\"}"), "argument \"name\" is missing");
  e2e_expect_request_error(e2e_raw("{\"cmd\": \"pause-task\", \"args\": {\"name\": 7}}"),
                           "must be a non-empty string");
  e2e_expect_request_error(
      e2e_raw("{\"cmd\": \"pause-task\", \"args\": {\"name\": \"t\", \"force\": true}}"),
      "unknown argument \"force\"");
  e2e_expect_request_error(e2e_raw("{\"cmd\": \"start-task\", \"args\": {\"path\": \"t.cfg\"}}"),
                           "must be an absolute path");
  e2e_expect_request_error(
      e2e_raw("{\"cmd\": \"swap-unit\", \"args\": {\"name\": \"t\", \"unit\": \"relay\", "
              "\"path\": \"/x.so\"}}"),
      "is not one of a task's kinds");

  /* help lists the protocol's commands */
  o = e2e_raw("{\"cmd\": \"help\"}");
  CU_ASSERT(e2e_bool(o, "result"));
  CU_ASSERT(json_object_array_length(e2e_get(o, "commands")) >= 10);
  json_object_put(o);

  /* a config error reaches the user with the config's code and file */
  e2e_write("broken.cfg", "name = ;\n");
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "start-task", "broken.cfg", NULL), 1);
  CU_ASSERT_EQUAL(e2e_int(o, "error.ErrCode"), DM_ERR_CONFIG_PARSE);
  CU_ASSERT(e2e_contains(e2e_str(o, "msg"), "broken.cfg"));
  json_object_put(o);

  /* dmctl help works without a daemon */
  CU_ASSERT_EQUAL(e2e_stop(), 0);
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "help", NULL), 0);
  CU_ASSERT(e2e_str_is(o, "commands.0.cmd", "operate-source"));
  json_object_put(o);
  /* and without a daemon every other command says so */
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "query-status", NULL), 1);
  CU_ASSERT_EQUAL(e2e_int(o, "error.ErrCode"), DM_ERR_CONTROL);
  CU_ASSERT(e2e_contains(e2e_str(o, "msg"), "dmhost.sock"));
  json_object_put(o);
  e2e_teardown();
}

/* Several requests on one connection, newline-delimited, answered in order. */
static void test_pipelined_requests(void) {
  CU_ASSERT_FATAL(e2e_setup() == 0);
  e2e_begin();
  char sock[400];
  snprintf(sock, sizeof sock, "%s/dmhost.sock", e2e_state);
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  CU_ASSERT_FATAL(fd >= 0);
  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  dm_strlcpy(addr.sun_path, sock, sizeof addr.sun_path);
  CU_ASSERT_EQUAL_FATAL(connect(fd, (struct sockaddr *)&addr, sizeof addr), 0);
  const char *reqs = "{\"cmd\": \"query-status\"}\n\n{\"cmd\": \"operate-source\", \"args\": "
                     "{\"op\": \"show\"}}\r\n{\"cmd\": \"nope\"}"; /* the last without a newline */
  CU_ASSERT_EQUAL(write(fd, reqs, strlen(reqs)), (ssize_t)strlen(reqs));
  shutdown(fd, SHUT_WR);
  char buf[16384];
  size_t n = 0;
  ssize_t r;
  while (n < sizeof buf - 1 && (r = read(fd, buf + n, sizeof buf - 1 - n)) > 0)
    n += (size_t)r;
  buf[n] = '\0';
  close(fd);
  char *save = NULL;
  char *l1 = strtok_r(buf, "\n", &save), *l2 = strtok_r(NULL, "\n", &save),
       *l3 = strtok_r(NULL, "\n", &save);
  CU_ASSERT_PTR_NULL(strtok_r(NULL, "\n", &save)); /* three answers, the blank line none */
  json_object *o1 = l1 ? json_tokener_parse(l1) : NULL, *o2 = l2 ? json_tokener_parse(l2) : NULL,
              *o3 = l3 ? json_tokener_parse(l3) : NULL;
  CU_ASSERT_PTR_NOT_NULL(e2e_get(o1, "tasks"));
  CU_ASSERT_PTR_NOT_NULL(e2e_get(o2, "sources"));
  CU_ASSERT_PTR_NULL(e2e_get(o2, "tasks"));
  CU_ASSERT_EQUAL(e2e_int(o3, "error.ErrCode"), DM_ERR_CONTROL_REQUEST);
  json_object_put(o1);
  json_object_put(o2);
  json_object_put(o3);
  CU_ASSERT_EQUAL(e2e_stop(), 0);
  e2e_teardown();
}

/* A damaged state.json keeps the daemon from starting, naming the file and the code. */
static void test_corrupt_state(void) {
  CU_ASSERT_FATAL(e2e_setup() == 0);
  CU_ASSERT_EQUAL_FATAL(mkdir(e2e_state, 0700), 0);
  char path[512];
  snprintf(path, sizeof path, "%s/state.json", e2e_state);
  FILE *f = fopen(path, "w");
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  fputs("{\"version\": 1, \"worker\": ", f);
  fclose(f);
  CU_ASSERT_FALSE(e2e_start_ex(true));
  char *text = e2e_serve_log();
  CU_ASSERT(e2e_contains(text, "code 14005"));
  CU_ASSERT(e2e_contains(text, path));
  CU_ASSERT(e2e_contains(text, "is not valid JSON"));
  free(text);
  e2e_teardown();
}

int main(void) {
  signal(SIGPIPE, SIG_IGN);
  static const dmh_cunit_test tests[] = {
      {"operate-source create/show/stop", test_operate_source},
      {"start-task runs to Finished", test_task_runs_to_finish},
      {"check-task, start-task refused by the precheck", test_check_task},
      {"pause-task / resume-task", test_pause_resume},
      {"a slow pause blocks no other request", test_slow_pause_blocks_nobody},
      {"concurrent commands on one task", test_concurrent_commands},
      {"SIGTERM and restart resume the task", test_restart_resumes},
      {"relay binding survives a restart (DM bug)", test_relay_binding_survives_restart},
      {"enable-relay", test_enable_relay},
      {"swap-unit", test_swap_unit},
      {"update-task with units that have no update slot", test_update_task},
      {"bad requests", test_bad_requests},
      {"pipelined requests", test_pipelined_requests},
      {"corrupt state.json", test_corrupt_state},
  };
  return dmh_cunit_run("control e2e", NULL, NULL, tests, sizeof tests / sizeof tests[0]);
}

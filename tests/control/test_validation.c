/*
 * `dmctl validation` end to end (issue 24): `dmhost serve` with the fake sync whose validation_op
 * keeps a tiny validator (tests/fixtures/fake_validation.c), driven by dmctl: every subcommand and
 * flag, DM's answer shapes, the call made while the unit's process runs (the fake logs how many
 * process calls were in flight), on a paused task too, and the refusals: DM's argument rules, no
 * such task, a sync without the slot (13031), a subtask still in its dump (13030).
 */
#include <CUnit/Basic.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cunit_run.h"
#include "dmhost/sdk.h"

#include "e2e_util.h"

/* A task file as e2e_task's, the sync unit `sync` (a path). */
static void val_task(const char *file, const char *name, const char *mode, const char *sync,
                     const char *units) {
  e2e_write(file,
            "name = \"%s\";\ntask-mode = \"%s\";\n"
            "target-database = { host = \"127.0.0.1\"; port = 2; user = \"root\"; password = \"\"; "
            "};\n"
            "mysql-instances = ( { source-id = \"mysql-01\"; } );\n"
            "unit-paths = { dump = \"%s\"; load = \"%s\"; sync = \"%s\"; };\n"
            "supervisor = { stop-timeout = 5; auto-resume = { enable = false; }; };\n"
            "ignore-checking-items = [\"all\"];\n%s\n",
            name, mode, FAKE_DUMP, FAKE_LOAD, sync, units);
}

static void val_start(const char *file, const char *name) {
  json_object *o = NULL;
  CU_ASSERT_EQUAL_FATAL(e2e_dmctl(&o, "start-task", file, NULL), 0);
  json_object_put(o);
  CU_ASSERT_FATAL(e2e_wait_stage(name, "Running", 30));
}

/* The fake sync's events.log of `task` holds `needle` (polled up to 10 s). */
static bool val_event(const char *task, const char *needle) {
  char path[600];
  snprintf(path, sizeof path, "%s/tasks/%s/mysql-01/sync/events.log", e2e_state, task);
  for (double t0 = e2e_now(); e2e_now() - t0 < 10; e2e_sleep_ms(50)) {
    char *text = e2e_read_file(path);
    bool found = text && strstr(text, needle);
    free(text);
    if (found)
      return true;
  }
  return false;
}

static size_t val_len(json_object *o, const char *path) {
  json_object *a = e2e_get(o, path);
  return json_object_is_type(a, json_type_array) ? json_object_array_length(a) : (size_t)-1;
}

/* Every subcommand on a Running task, then on a Paused one. */
static void test_validation_commands(void) {
  CU_ASSERT_FATAL(e2e_setup() == 0);
  e2e_begin();
  e2e_create_source();
  val_task("val.cfg", "val", "incremental", FAKE_SYNC_VAL, "sync = { items = 0; item-ms = 10; };");
  val_start("val.cfg", "val");
  json_object *o = NULL;

  /* status while the sync's process runs: the precondition asserted by the fake (running=1) */
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "validation", "status", "val", NULL), 0);
  CU_ASSERT(e2e_bool(o, "result"));
  CU_ASSERT_EQUAL(val_len(o, "validators"), 1);
  CU_ASSERT(e2e_str_is(o, "validators.0.task", "val"));
  CU_ASSERT(e2e_str_is(o, "validators.0.source", "mysql-01"));
  CU_ASSERT(e2e_str_is(o, "validators.0.stage", "Stopped"));
  CU_ASSERT(e2e_str_is(o, "validators.0.errorRowsStatus", "new/ignored/resolved: 3/0/0"));
  CU_ASSERT_EQUAL(val_len(o, "tableStatuses"), 2);
  CU_ASSERT(e2e_str_is(o, "tableStatuses.0.srcTable", "`db`.`t1`"));
  CU_ASSERT(e2e_str_is(o, "sources.0.source", "mysql-01"));
  CU_ASSERT_PTR_NULL(e2e_get(o, "sources.0.items"));
  json_object_put(o);
  CU_ASSERT(val_event("val", "validation 3 running=1"));
  char *stage = e2e_stage("val");
  CU_ASSERT_STRING_EQUAL(stage ? stage : "", "Running");
  free(stage);

  /* start: DM's {result, msg "success", sources} */
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "validation", "start", "val", "--mode", "fast", "--start-time",
                            "2026-12-04 00:00:00", NULL),
                  0);
  CU_ASSERT(e2e_bool(o, "result"));
  CU_ASSERT(e2e_str_is(o, "msg", "success"));
  CU_ASSERT(e2e_bool(o, "sources.0.result"));
  CU_ASSERT(e2e_str_is(o, "sources.0.source", "mysql-01"));
  json_object_put(o);
  CU_ASSERT(val_event("val", "validation 1 running=1"));
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "validation", "status", "val", NULL), 0);
  CU_ASSERT(e2e_str_is(o, "validators.0.stage", "Running"));
  CU_ASSERT(e2e_str_is(o, "validators.0.mode", "fast"));
  CU_ASSERT(e2e_str_is(o, "validators.0.startTime", "2026-12-04 00:00:00"));
  json_object_put(o);
  /* a second start is no change (DM: success); one with a mode: the unit's refusal, per source */
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "validation", "start", "val", NULL), 0);
  CU_ASSERT(e2e_str_is(o, "msg", "success"));
  json_object_put(o);
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "validation", "start", "val", "--mode", "full", NULL), 1);
  CU_ASSERT_FALSE(e2e_bool(o, "result"));
  CU_ASSERT_FALSE(e2e_bool(o, "sources.0.result"));
  CU_ASSERT_EQUAL(e2e_int(o, "sources.0.error.ErrCode"), DM_ERR_STAGE);
  CU_ASSERT(e2e_contains(e2e_str(o, "msg"), "all target validator has enabled"));
  json_object_put(o);
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "validation", "status", "val", NULL), 0);
  CU_ASSERT(e2e_str_is(o, "validators.0.mode", "fast")); /* the refused start changed nothing */
  json_object_put(o);

  /* status --table-stage */
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "validation", "status", "--table-stage", "stopped", "val", NULL),
                  0);
  CU_ASSERT_EQUAL(val_len(o, "tableStatuses"), 1);
  CU_ASSERT(e2e_str_is(o, "tableStatuses.0.stage", "Stopped"));
  json_object_put(o);

  /* show-error (unprocessed by default), ignore, resolve, clear */
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "validation", "show-error", "val", NULL), 0);
  CU_ASSERT(e2e_bool(o, "result"));
  CU_ASSERT_EQUAL(val_len(o, "error"), 3);
  CU_ASSERT(e2e_str_is(o, "error.0.id", "1"));
  CU_ASSERT(e2e_str_is(o, "error.0.status", "NewErr"));
  json_object_put(o);
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "validation", "ignore-error", "val", "1", NULL), 0);
  CU_ASSERT(e2e_bool(o, "result"));
  json_object_put(o);
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "validation", "resolve-error", "val", "2", NULL), 0);
  json_object_put(o);
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "validation", "show-error", "--error", "ignored", "val", NULL), 0);
  CU_ASSERT_EQUAL(val_len(o, "error"), 1);
  CU_ASSERT(e2e_str_is(o, "error.0.id", "1"));
  CU_ASSERT(e2e_str_is(o, "error.0.status", "IgnoredErr"));
  json_object_put(o);
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "validation", "show-error", "--error", "all", "val", NULL), 0);
  CU_ASSERT_EQUAL(val_len(o, "error"), 3);
  json_object_put(o);
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "validation", "status", "val", NULL), 0);
  CU_ASSERT(e2e_str_is(o, "validators.0.errorRowsStatus", "new/ignored/resolved: 1/1/1"));
  json_object_put(o);
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "validation", "clear-error", "val", "--all", NULL), 0);
  json_object_put(o);
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "validation", "show-error", "--error", "all", "val", NULL), 0);
  CU_ASSERT_EQUAL(val_len(o, "error"), 0);
  json_object_put(o);
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "validation", "ignore-error", "val", "2", NULL), 1);
  CU_ASSERT_EQUAL(e2e_int(o, "sources.0.error.ErrCode"), DM_ERR_NOT_FOUND);
  json_object_put(o);

  /* update the cutover point */
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "validation", "update", "val", "--cutover-binlog-pos",
                            "(mysql-bin.000001, 5989)", NULL),
                  0);
  CU_ASSERT(e2e_str_is(o, "msg", "success"));
  json_object_put(o);
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "validation", "status", "val", NULL), 0);
  CU_ASSERT(e2e_str_is(o, "validators.0.cutoverBinlogPos", "(mysql-bin.000001, 5989)"));
  json_object_put(o);

  /* stop, stop again (no change: DM's success), start --all-task with -s */
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "validation", "stop", "val", NULL), 0);
  CU_ASSERT(e2e_str_is(o, "msg", "success"));
  json_object_put(o);
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "validation", "stop", "val", NULL), 0);
  CU_ASSERT(e2e_str_is(o, "msg", "success"));
  json_object_put(o);
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "validation", "status", "val", NULL), 0);
  CU_ASSERT(e2e_str_is(o, "validators.0.stage", "Stopped"));
  json_object_put(o);
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "validation", "start", "--all-task", "-s", "mysql-01", NULL), 0);
  CU_ASSERT(e2e_str_is(o, "sources.0.task", "val"));
  json_object_put(o);

  /* on a Paused task too */
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "pause-task", "val", NULL), 0);
  json_object_put(o);
  CU_ASSERT_FATAL(e2e_wait_stage("val", "Paused", 30));
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "validation", "stop", "val", NULL), 0);
  json_object_put(o);
  CU_ASSERT(val_event("val", "validation 2 running=0"));
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "validation", "status", "val", NULL), 0);
  CU_ASSERT(e2e_str_is(o, "validators.0.stage", "Stopped"));
  json_object_put(o);
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "resume-task", "val", NULL), 0);
  json_object_put(o);
  CU_ASSERT(e2e_wait_stage("val", "Running", 30));
  CU_ASSERT_EQUAL(e2e_stop(), 0);
  e2e_teardown();
}

/* dmctl validation ARGS... fails (exit not 0) with `want` in its msg. */
static void val_refused(const char *want, const char *a1, const char *a2, const char *a3,
                        const char *a4, const char *a5) {
  json_object *o = NULL;
  int rc = e2e_dmctl(&o, "validation", a1, a2, a3, a4, a5, NULL);
  CU_ASSERT_NOT_EQUAL(rc, 0);
  const char *msg = o ? e2e_str(o, "msg") : NULL;
  if (!msg || !strstr(msg, want)) {
    fprintf(stderr, "validation %s %s: want \"%s\", got \"%s\"\n", a1, a2 ? a2 : "", want,
            msg ? msg : "(no answer)");
    CU_FAIL("refusal");
  }
  json_object_put(o);
}

static void test_validation_refusals(void) {
  CU_ASSERT_FATAL(e2e_setup() == 0);
  e2e_begin();
  e2e_create_source();
  val_task("val.cfg", "val", "incremental", FAKE_SYNC_VAL, "sync = { items = 0; item-ms = 10; };");
  val_start("val.cfg", "val");
  /* DM's argument rules, in DM's words */
  val_refused("either `task-name` or `all-task` should be set", "start", "--all-task", "val", NULL,
              NULL);
  val_refused("either `task-name` or `all-task` should be set", "stop", NULL, NULL, NULL, NULL);
  val_refused("mode should be either `full` or `fast`, current is `slow`", "start", "val", "--mode",
              "slow", NULL);
  val_refused("start-time should be in the format like", "start", "val", "--start-time",
              "yesterday", NULL);
  val_refused("task name should be specified", "status", NULL, NULL, NULL, NULL);
  val_refused("stage should be either `running` or `stopped`", "status", "val", "--table-stage",
              "paused", NULL);
  val_refused("error flag should be either `all`, `ignored`, or `unprocessed`", "show-error", "val",
              "--error", "resolved", NULL);
  val_refused("either `--all` or `error-id` should be set", "ignore-error", "val", NULL, NULL,
              NULL);
  val_refused("either `--all` or `error-id` should be set", "clear-error", "val", "1", "--all",
              NULL);
  val_refused("`error-id` should be integer", "resolve-error", "val", "x1", NULL, NULL);
  val_refused("invalid binlog pos, should be like (mysql-bin.000001, 2345)", "update", "val",
              "--cutover-binlog-pos", "(mysql-bin.000001)", NULL);
  val_refused("the pos should be digital", "update", "val", "--cutover-binlog-pos",
              "(mysql-bin.000001, x)", NULL);
  val_refused("give --cutover-binlog-pos", "update", "val", NULL, NULL, NULL);
  val_refused("--mode is not taken here", "stop", "val", "--mode", "full", NULL);
  val_refused("is not start, stop, status", "pause", "val", NULL, NULL, NULL);
  /* no such task, DM's master's words and dmhost's code */
  json_object *o = NULL;
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "validation", "status", "nope", NULL), 1);
  CU_ASSERT(e2e_str_is(o, "msg", "cannot get subtask by task name `nope`"));
  CU_ASSERT_EQUAL(e2e_int(o, "error.ErrCode"), DM_ERR_NOT_FOUND);
  json_object_put(o);
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "validation", "start", "val", "-s", "mysql-09", NULL), 1);
  CU_ASSERT(e2e_str_is(o, "msg", "cannot get subtask by task name `val` and sources `[mysql-09]`"));
  json_object_put(o);
  /* a member the row has not: refused before any unit is asked */
  o = e2e_raw("{\"cmd\":\"validation\",\"args\":{\"op\":\"status\",\"name\":\"val\",\"x\":1}}");
  CU_ASSERT_FALSE(e2e_bool(o, "result"));
  json_object_put(o);
  CU_ASSERT_FALSE(val_event("val", "validation 1 running"));

  /* a sync without the slot */
  val_task("plain.cfg", "plain", "incremental", FAKE_SYNC, "sync = { items = 0; item-ms = 10; };");
  val_start("plain.cfg", "plain");
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "validation", "status", "plain", NULL), 1);
  CU_ASSERT_EQUAL(e2e_int(o, "sources.0.error.ErrCode"), DM_ERR_VALIDATION_UNSUPPORTED);
  CU_ASSERT(e2e_contains(e2e_str(o, "msg"), "has no validation_op slot"));
  json_object_put(o);

  /* the subtask still in its dump: the validator runs with the sync */
  val_task("dump.cfg", "indump", "all", FAKE_SYNC_VAL,
           "dump = { items = 0; item-ms = 10; };\nsync = { items = 0; item-ms = 10; };");
  val_start("dump.cfg", "indump");
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "validation", "start", "indump", NULL), 1);
  CU_ASSERT_EQUAL(e2e_int(o, "sources.0.error.ErrCode"), DM_ERR_VALIDATION_UNIT);
  CU_ASSERT(e2e_contains(e2e_str(o, "msg"), "current unit is dump"));
  json_object_put(o);
  /* --all-task: each task's answer, the failures in msg */
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "validation", "start", "--all-task", NULL), 1);
  CU_ASSERT_EQUAL(val_len(o, "sources"), 3);
  json_object_put(o);
  CU_ASSERT_EQUAL(e2e_stop(), 0);
  e2e_teardown();
}

int main(void) {
  signal(SIGPIPE, SIG_IGN);
  static const dmh_cunit_test tests[] = {
      {"validation: every subcommand, running and paused", test_validation_commands},
      {"validation: refusals", test_validation_refusals},
  };
  return dmh_cunit_run("control validation", NULL, NULL, tests, sizeof tests / sizeof tests[0]);
}

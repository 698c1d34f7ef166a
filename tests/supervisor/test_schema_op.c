/*
 * binlog-schema's rules on a subtask (schema_op.c, DM's SubTask.OperateSchema): refused while
 * Running (13020), while paused in another unit than the sync (13021), and on a sync build
 * without the schema_op slot (13022, the fake sync has none); never a call into the unit. The
 * slot itself, on the real sync unit against MariaDB: test_sync_tracker.
 */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <string.h>

#include "cunit_run.h"
#include "harness.h"

#define FAST_SUP                                                                                   \
  "init-timeout = 5; stop-timeout = 2; relay-catchup-timeout = 5; relay-catchup-poll = 10; "       \
  "auto-resume = { enable = false; };"

static int op(dmh_subtask *st, dm_error *err) {
  dm_schema_req req = {.op = DM_SCHEMA_LIST_SCHEMAS, .db = "", .table = ""};
  json_object *items = NULL;
  int rc = dmh_subtask_schema_op(st, &req, &items, err);
  CU_ASSERT(rc == 0 || items == NULL);
  json_object_put(items);
  return rc;
}

static bool wait_unit(dmh_subtask *st, const char *unit) {
  char buf[32] = "";
  for (double end = harness_now() + 30; harness_now() < end; harness_sleep_ms(5))
    if (strcmp(harness_status_str(st, "unit", buf, sizeof buf), unit) == 0)
      return true;
  return false;
}

static void test_rules(void) {
  harness h;
  CU_ASSERT_FATAL(harness_setup(&h, "all", FAST_SUP,
                                "dump = { items = 400; item-ms = 20; }; load = { items = 2; }; "
                                "sync = { items = 0; item-ms = 5; };") == 0);
  dmh_subtask *st = harness_subtask(&h, NULL);
  CU_ASSERT_FATAL(st != NULL);
  dm_error err;
  CU_ASSERT_EQUAL(op(st, &err), -1); /* New: not Paused */
  CU_ASSERT_EQUAL(err.code, DM_ERR_SCHEMA_STAGE);
  CU_ASSERT_EQUAL_FATAL(dmh_subtask_start(st, &err), 0);
  CU_ASSERT_FATAL(wait_unit(st, "Dump"));
  CU_ASSERT_EQUAL(dmh_subtask_pause(st, &err), 0);
  CU_ASSERT_EQUAL(dmh_subtask_stage(st), DMH_STAGE_PAUSED);
  CU_ASSERT_EQUAL(op(st, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_SCHEMA_UNIT);
  CU_ASSERT(strstr(err.message, "only available for syncer") &&
            strstr(err.message, "current unit is dump"));
  CU_ASSERT_EQUAL(dmh_subtask_stage(st), DMH_STAGE_PAUSED); /* nothing moved */
  CU_ASSERT_EQUAL(harness_events(&h, "dump", "resume"), 0);
  dmh_subtask_destroy(st);
  harness_teardown(&h);
}

static void test_sync_without_slot(void) {
  harness h;
  CU_ASSERT_FATAL(
      harness_setup(&h, "incremental", FAST_SUP, "sync = { items = 0; item-ms = 5; };") == 0);
  dmh_subtask *st = harness_subtask(&h, NULL);
  CU_ASSERT_FATAL(st != NULL);
  dm_error err;
  CU_ASSERT_EQUAL_FATAL(dmh_subtask_start(st, &err), 0);
  CU_ASSERT_FATAL(wait_unit(st, "Sync"));
  CU_ASSERT_EQUAL(op(st, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_SCHEMA_STAGE);
  CU_ASSERT(strstr(err.message, "current stage is Running but not paused, invalid") != NULL);
  CU_ASSERT_EQUAL(dmh_subtask_pause(st, &err), 0);
  CU_ASSERT_EQUAL(op(st, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_SCHEMA_UNSUPPORTED);
  CU_ASSERT(strstr(err.message, "no schema_op slot") != NULL);
  CU_ASSERT_EQUAL(dmh_subtask_resume(st, &err), 0); /* the commands were released */
  CU_ASSERT_EQUAL(dmh_subtask_stage(st), DMH_STAGE_RUNNING);
  dmh_subtask_destroy(st);
  harness_teardown(&h);
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"refused unless Paused in the sync unit", test_rules},
      {"a sync build without the slot", test_sync_without_slot},
  };
  return dmh_cunit_run("schema_op", NULL, NULL, tests, sizeof tests / sizeof tests[0]);
}

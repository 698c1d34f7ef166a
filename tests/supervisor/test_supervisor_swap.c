/*
 * test_supervisor's cases of changing a running subtask's units (supervisor_cases.h): hot-swap
 * (swap.c) and update-task (update.c). Fake units, as in test_supervisor.c.
 */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <string.h>

#include "supervisor_cases.h"

/* ---- hot-swap ---- */

void test_swap_mid_run(void) {
  harness h;
  SETUP(&h, "dump", NULL, "dump = { items = 300; item-ms = 2; };");
  dmh_subtask *st = harness_subtask(&h, NULL);
  dm_error err;
  CU_ASSERT_EQUAL_FATAL(dmh_subtask_start(st, &err), 0);
  harness_sleep_ms(150);
  char buf[32];
  CU_ASSERT_STRING_EQUAL(harness_status_str(st, "unitVersion", buf, sizeof buf), "1");
  long before = harness_status_int(st, "next");
  CU_ASSERT(before > 1 && before < 300);
  CU_ASSERT_EQUAL(dmh_subtask_swap_unit(st, "dump", FAKE_DUMP_V2, &err), 0);
  CU_ASSERT_EQUAL(dmh_subtask_stage(st), DMH_STAGE_RUNNING);
  CU_ASSERT_STRING_EQUAL(harness_status_str(st, "unitVersion", buf, sizeof buf), "2");
  CU_ASSERT_EQUAL(dmh_subtask_wait_settled(st, 10000), DMH_STAGE_FINISHED);
  long n;
  CU_ASSERT_EQUAL(harness_out_sequence(&h, "dump", &n), 0); /* exactly 1..300, none twice */
  CU_ASSERT_EQUAL(n, 300);
  CU_ASSERT_EQUAL(harness_events(&h, "dump", "close v1"), 1);
  CU_ASSERT_EQUAL(harness_events(&h, "dump", "init v2"), 1);
  CU_ASSERT_EQUAL(harness_events(&h, "dump", "VIOLATION"), 0);
  dmh_subtask_destroy(st);
  harness_teardown(&h);
}

void test_swap_refused_keeps_old(void) {
  harness h;
  SETUP(&h, "dump", NULL, "dump = { items = 200; item-ms = 2; };");
  dmh_subtask *st = harness_subtask(&h, NULL);
  dm_error err;
  CU_ASSERT_EQUAL_FATAL(dmh_subtask_start(st, &err), 0);
  harness_sleep_ms(50);
  CU_ASSERT_EQUAL(dmh_subtask_swap_unit(st, "dump", FAKE_DUMP_ABI2, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_SWAP);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "ABI 2.0"));
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "fake-dump-abi2"));
  /* a build of another kind is refused as well */
  CU_ASSERT_EQUAL(dmh_subtask_swap_unit(st, "dump", FAKE_SYNC, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_SWAP);
  CU_ASSERT_EQUAL(dmh_subtask_swap_unit(st, "sync", FAKE_SYNC, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_NO_SUCH_UNIT);
  char buf[32];
  CU_ASSERT_EQUAL(dmh_subtask_stage(st), DMH_STAGE_RUNNING);
  CU_ASSERT_STRING_EQUAL(harness_status_str(st, "unitVersion", buf, sizeof buf), "1");
  CU_ASSERT_EQUAL(harness_events(&h, "dump", "pause"), 0); /* never even paused */
  CU_ASSERT_EQUAL(dmh_subtask_wait_settled(st, 10000), DMH_STAGE_FINISHED);
  long n;
  CU_ASSERT_EQUAL(harness_out_sequence(&h, "dump", &n), 0);
  CU_ASSERT_EQUAL(n, 200);
  dmh_subtask_destroy(st);
  harness_teardown(&h);
}

void test_swap_while_paused(void) {
  harness h;
  SETUP(&h, "dump", NULL, "dump = { items = 100; item-ms = 1; };");
  dmh_subtask *st = harness_subtask(&h, NULL);
  dm_error err;
  CU_ASSERT_EQUAL_FATAL(dmh_subtask_start(st, &err), 0);
  harness_sleep_ms(30);
  CU_ASSERT_EQUAL(dmh_subtask_pause(st, &err), 0);
  CU_ASSERT_EQUAL(dmh_subtask_swap_unit(st, "dump", FAKE_DUMP_V2, &err), 0);
  CU_ASSERT_EQUAL(dmh_subtask_stage(st), DMH_STAGE_PAUSED); /* stays paused */
  CU_ASSERT_EQUAL(dmh_subtask_resume(st, &err), 0);
  CU_ASSERT_EQUAL(dmh_subtask_wait_settled(st, 10000), DMH_STAGE_FINISHED);
  long n;
  CU_ASSERT_EQUAL(harness_out_sequence(&h, "dump", &n), 0);
  CU_ASSERT_EQUAL(n, 100);
  char buf[32];
  CU_ASSERT_STRING_EQUAL(harness_status_str(st, "unitVersion", buf, sizeof buf), "2");
  dmh_subtask_destroy(st);
  harness_teardown(&h);
}

/* ---- update-task (update.c) ---- */

static dmh_task_config *upd_file(harness *h, const char *name, const char *units) {
  dmh_task_config *t = harness_task_file(h, name, "all", NULL, units);
  CU_ASSERT_FATAL(t != NULL);
  return t;
}

/* Mode all in its sync phase: dump, load and sync all open (finished units stay open), each with
 * an update slot. A file whose load section makes its update fail: refused, and the dump, updated
 * before it, is updated again with its old section (all or nothing); the sync is never asked.
 * Then a good file: every unit takes it, in chain order; Running refuses; a subtask never started
 * takes a file only when the caller allows New. Before update.c no host called update. */
void test_update_all_or_nothing(void) {
  harness h;
  const char *units = "dump = { items = 3; }; load = { items = 3; }; "
                      "sync = { items = 0; item-ms = 5; };";
  SETUP(&h, "all", NULL, units);
  dmh_subtask_opts o = {.task = h.task, .source = h.source, .work_root = h.work};
  o.unit_paths[DMH_KIND_DUMP] = FAKE_DUMP_UPD;
  o.unit_paths[DMH_KIND_LOAD] = FAKE_LOAD_UPD;
  o.unit_paths[DMH_KIND_SYNC] = FAKE_SYNC_UPD;
  dm_error err;
  dmh_subtask *st = dmh_subtask_create(&o, &err);
  CU_ASSERT_FATAL(st != NULL);
  dmh_task_config *bad = upd_file(&h, "bad.cfg",
                                  "dump = { items = 3; item-ms = 7; }; "
                                  "load = { items = 3; update-fail = true; }; "
                                  "sync = { items = 0; item-ms = 9; };");
  dmh_task_config *good = upd_file(&h, "good.cfg",
                                   "dump = { items = 3; item-ms = 7; }; load = { items = 3; }; "
                                   "sync = { items = 0; item-ms = 9; };");

  /* New, never started: only when the caller says a restored paused task may take it */
  CU_ASSERT_EQUAL(dmh_subtask_update_check(st, good, false, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_UPDATE_STAGE);
  CU_ASSERT_EQUAL(dmh_subtask_update_check(st, good, true, &err), 0);

  CU_ASSERT_EQUAL_FATAL(dmh_subtask_start(st, &err), 0);
  char buf[32];
  double until = harness_now() + 10;
  while (strcmp(harness_status_str(st, "unit", buf, sizeof buf), "Sync") != 0 &&
         harness_now() < until)
    harness_sleep_ms(5);
  CU_ASSERT_STRING_EQUAL_FATAL(buf, "Sync");
  CU_ASSERT_EQUAL(dmh_subtask_update_check(st, good, true, &err), -1); /* Running */
  CU_ASSERT_EQUAL(err.code, DM_ERR_UPDATE_STAGE);
  CU_ASSERT(strstr(err.message, "is Running") && strstr(err.message, "pause-task t1"));
  CU_ASSERT_EQUAL(dmh_subtask_pause(st, &err), 0);

  dmh_subtask_hold_commands(st);
  CU_ASSERT_EQUAL(dmh_subtask_update_check(st, bad, false, &err), 0);
  CU_ASSERT_EQUAL(dmh_subtask_update_apply(st, bad, &err), -1);
  dmh_subtask_release_commands(st);
  CU_ASSERT_EQUAL(err.code, DM_ERR_UPDATE_FAILED);
  CU_ASSERT(strstr(err.message, "load unit") && strstr(err.message, "update refused") &&
            strstr(err.message, "old settings stay"));
  /* the dump took the new section, then its old one again; the sync was not asked */
  CU_ASSERT_EQUAL(harness_events(&h, "dump", "update item-ms=7"), 1);
  CU_ASSERT_EQUAL(harness_events(&h, "dump", "update item-ms=1"), 1);
  CU_ASSERT(harness_first_line(&h, "dump", "update item-ms=7") <
            harness_first_line(&h, "dump", "update item-ms=1"));
  CU_ASSERT_EQUAL(harness_events(&h, "load", "update refused"), 1);
  CU_ASSERT_EQUAL(harness_events(&h, "sync", "update"), 0);

  dmh_subtask_hold_commands(st);
  CU_ASSERT_EQUAL(dmh_subtask_update_check(st, good, false, &err), 0);
  CU_ASSERT_EQUAL(dmh_subtask_update_apply(st, good, &err), 0);
  dmh_subtask_release_commands(st);
  CU_ASSERT_EQUAL(harness_events(&h, "dump", "update item-ms=7"), 2);
  CU_ASSERT_EQUAL(harness_events(&h, "load", "update item-ms=1"), 1);
  CU_ASSERT_EQUAL(harness_events(&h, "sync", "update item-ms=9"), 1);
  CU_ASSERT_EQUAL(dmh_subtask_stage(st), DMH_STAGE_PAUSED); /* stays paused */
  CU_ASSERT_EQUAL(dmh_subtask_resume(st, &err), 0);
  CU_ASSERT_EQUAL(dmh_subtask_stage(st), DMH_STAGE_RUNNING);
  dmh_subtask_destroy(st);
  dmh_task_config_free(bad);
  dmh_task_config_free(good);
  harness_teardown(&h);
}

/*
 * The supervisor's stage machine against fake units: each rule of supervisor.h is a test here.
 * The fakes log every item to out.log, so "nothing lost, nothing doubled" is checked as the exact
 * sequence 1..n, and every overlapping call as a VIOLATION line in events.log. This file holds the
 * stage machine's cases (chains and modes, init, pause, resume, stop, kill, auto-resume) and the
 * program's main; test_supervisor_relay.c and test_supervisor_swap.c hold the rest
 * (supervisor_cases.h).
 */
#include <CUnit/Basic.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cunit_run.h"
#include "supervisor_cases.h"

static void test_full_chain_finishes(void) {
  harness h;
  SETUP(&h, "full", NULL, "dump = { items = 50; }; load = { items = 30; };");
  dmh_subtask *st = harness_subtask(&h, NULL);
  CU_ASSERT_FATAL(st != NULL);
  CU_ASSERT_EQUAL(dmh_subtask_stage(st), DMH_STAGE_NEW);
  dm_error err;
  CU_ASSERT_EQUAL_FATAL(dmh_subtask_start(st, &err), 0);
  CU_ASSERT_EQUAL(dmh_subtask_wait_settled(st, 10000), DMH_STAGE_FINISHED);
  long n;
  CU_ASSERT_EQUAL(harness_out_sequence(&h, "dump", &n), 0);
  CU_ASSERT_EQUAL(n, 50);
  CU_ASSERT_EQUAL(harness_out_sequence(&h, "load", &n), 0);
  CU_ASSERT_EQUAL(n, 30);
  char buf[64];
  CU_ASSERT_STRING_EQUAL(harness_status_str(st, "unit", buf, sizeof buf), "Load");
  CU_ASSERT_STRING_EQUAL(harness_status_str(st, "stage", buf, sizeof buf), "Finished");
  dmh_subtask_destroy(st);
  CU_ASSERT_EQUAL(harness_events(&h, "dump", "close"), 1);
  CU_ASSERT_EQUAL(harness_events(&h, "load", "close"), 1);
  harness_teardown(&h);
}

/* Each mode runs the chain DM runs for it. */
static void test_mode_chains(void) {
  static const struct {
    const char *mode;
    const char *first, *last;
    int n;
  } cases[] = {
      {"all", "Dump", "Sync", 3},  {"full", "Dump", "Load", 2}, {"incremental", "Sync", "Sync", 1},
      {"dump", "Dump", "Dump", 1}, {"load", "Load", "Load", 1}, {"load&sync", "Load", "Sync", 2},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    harness h;
    SETUP(&h, cases[i].mode, NULL,
          "dump = { items = 3; }; load = { items = 3; }; sync = { items = 3; };");
    dmh_subtask *st = harness_subtask(&h, NULL);
    CU_ASSERT_FATAL(st != NULL);
    dm_error err;
    CU_ASSERT_EQUAL_FATAL(dmh_subtask_start(st, &err), 0);
    char buf[64];
    CU_ASSERT_EQUAL(dmh_subtask_wait_settled(st, 10000), DMH_STAGE_FINISHED);
    CU_ASSERT_STRING_EQUAL(harness_status_str(st, "unit", buf, sizeof buf), cases[i].last);
    int ran = 0;
    long n;
    const char *kinds[] = {"dump", "load", "sync"};
    for (int k = 0; k < 3; k++) {
      harness_out_sequence(&h, kinds[k], &n);
      ran += n == 3;
    }
    CU_ASSERT_EQUAL(ran, cases[i].n);
    dmh_subtask_destroy(st);
    harness_teardown(&h);
  }
}

/* is_fresh_task from the last unit backwards: a load checkpoint means dump is skipped. */
static void test_is_fresh_skips_finished_units(void) {
  harness h;
  SETUP(&h, "full", NULL, "dump = { items = 5; }; load = { items = 10; };");
  char path[1400];
  snprintf(path, sizeof path,
           "mkdir -p %s/load && echo 4 > %s/load/checkpoint && "
           "printf '1\\n2\\n3\\n' > %s/load/out.log",
           h.work, h.work, h.work);
  CU_ASSERT_FATAL(system(path) == 0);
  dmh_subtask *st = harness_subtask(&h, NULL);
  dm_error err;
  CU_ASSERT_EQUAL_FATAL(dmh_subtask_start(st, &err), 0);
  CU_ASSERT_EQUAL(dmh_subtask_wait_settled(st, 10000), DMH_STAGE_FINISHED);
  long n;
  CU_ASSERT_EQUAL(harness_out_sequence(&h, "dump", &n), 0);
  CU_ASSERT_EQUAL(n, 0); /* dump never ran */
  CU_ASSERT_EQUAL(harness_events(&h, "dump", "close"), 1);
  CU_ASSERT_EQUAL(harness_out_sequence(&h, "load", &n), 0);
  CU_ASSERT_EQUAL(n, 10); /* continued from its checkpoint: 4..10 added once */
  dmh_subtask_destroy(st);
  harness_teardown(&h);
}

/* A failed init closes the units initialised before it, and the subtask is Stopped. */
static void test_init_failure_closes_earlier_units(void) {
  harness h;
  SETUP(&h, "all", NULL, "dump = { items = 5; }; load = { init-fail = true; };");
  dmh_subtask *st = harness_subtask(&h, NULL);
  dm_error err;
  CU_ASSERT_EQUAL(dmh_subtask_start(st, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_UNIT_INIT);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "init failed"));
  CU_ASSERT_EQUAL(dmh_subtask_stage(st), DMH_STAGE_STOPPED);
  CU_ASSERT_EQUAL(harness_events(&h, "dump", "init"), 1);
  CU_ASSERT_EQUAL(harness_events(&h, "dump", "close"), 1);
  CU_ASSERT_EQUAL(harness_events(&h, "sync", "init"), 0); /* never reached */
  CU_ASSERT_EQUAL(harness_first_error(st, NULL, 0), DM_ERR_UNIT_INIT);
  dmh_subtask_destroy(st);
  harness_teardown(&h);
}

/* A unit that cannot read its checkpoint stops the start; the error names that unit and slot,
 * and every unit initialised is closed again. */
static void test_is_fresh_failure(void) {
  harness h;
  SETUP(&h, "full", NULL, "dump = { items = 5; }; load = { fresh-fail = true; };");
  dmh_subtask *st = harness_subtask(&h, NULL);
  dm_error err;
  CU_ASSERT_EQUAL(dmh_subtask_start(st, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_CHECKPOINT);
  CU_ASSERT_EQUAL(dmh_subtask_stage(st), DMH_STAGE_STOPPED);
  json_object *o = dmh_subtask_status_json(st), *res, *errs, *ctx;
  CU_ASSERT_FATAL(json_object_object_get_ex(o, "result", &res) && res &&
                  json_object_object_get_ex(res, "errors", &errs));
  json_object *e0 = json_object_array_get_idx(errs, 0);
  CU_ASSERT_FATAL(e0 && json_object_object_get_ex(e0, "Context", &ctx));
  CU_ASSERT_PTR_NOT_NULL(strstr(json_object_get_string(ctx), "unit=load"));
  CU_ASSERT_PTR_NOT_NULL(strstr(json_object_get_string(ctx), "slot=is_fresh_task"));
  json_object_put(o);
  CU_ASSERT_EQUAL(harness_events(&h, "dump", "close"), 1);
  CU_ASSERT_EQUAL(harness_events(&h, "load", "close"), 1);
  long n;
  harness_out_sequence(&h, "dump", &n);
  CU_ASSERT_EQUAL(n, 0); /* nothing ran */
  dmh_subtask_destroy(st);
  harness_teardown(&h);
}

/* init is bounded by init-timeout; the late instance is killed and closed by its own thread. */
static void test_init_timeout(void) {
  harness h;
  SETUP(&h, "dump", "init-timeout = 0.3; stop-timeout = 2; auto-resume = { enable = false; };",
        "dump = { init-ms = 1000; };");
  dmh_subtask *st = harness_subtask(&h, NULL);
  dm_error err;
  double t0 = harness_now();
  CU_ASSERT_EQUAL(dmh_subtask_start(st, &err), -1);
  double took = harness_now() - t0;
  CU_ASSERT_EQUAL(err.code, DM_ERR_UNIT_TIMEOUT);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "300 ms"));
  CU_ASSERT(took >= 0.25 && took < 0.9);
  harness_sleep_ms(1000); /* the late init finishes: it must clean up after itself */
  CU_ASSERT_EQUAL(harness_events(&h, "dump", "kill"), 1);
  CU_ASSERT_EQUAL(harness_events(&h, "dump", "close"), 1);
  dmh_subtask_destroy(st);
  harness_teardown(&h);
}

/* Settings the unit never reads are refused with file, line and name. */
static void test_unknown_unit_setting(void) {
  harness h;
  SETUP(&h, "dump", NULL, "dump = {\n  items = 5;\n  itemz = 7;\n};");
  dmh_subtask *st = harness_subtask(&h, NULL);
  dm_error err;
  CU_ASSERT_EQUAL(dmh_subtask_start(st, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_CONFIG_UNKNOWN);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "dump.itemz"));
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "task.cfg:"));
  CU_ASSERT_EQUAL(harness_events(&h, "dump", "close"), 1);
  dmh_subtask_destroy(st);
  harness_teardown(&h);
}

/* pause returns only after process returned: the unit keeps going 300 ms after the token. */
static void test_pause_waits_for_unit(void) {
  harness h;
  SETUP(&h, "dump", NULL, "dump = { items = 0; item-ms = 2; ignore-stop-ms = 300; };");
  dmh_subtask *st = harness_subtask(&h, NULL);
  dm_error err;
  CU_ASSERT_EQUAL_FATAL(dmh_subtask_start(st, &err), 0);
  harness_sleep_ms(50);
  double t0 = harness_now();
  CU_ASSERT_EQUAL(dmh_subtask_pause(st, &err), 0);
  CU_ASSERT(harness_now() - t0 >= 0.28);
  CU_ASSERT_EQUAL(dmh_subtask_stage(st), DMH_STAGE_PAUSED);
  CU_ASSERT_EQUAL(harness_status_int(st, "inCall"), 0);
  CU_ASSERT_EQUAL(harness_events(&h, "dump", "pause"), 1);
  long before = harness_status_int(st, "next");
  harness_sleep_ms(100);
  CU_ASSERT_EQUAL(harness_status_int(st, "next"), before); /* nothing runs while paused */
  CU_ASSERT_EQUAL(dmh_subtask_resume(st, &err), 0);
  harness_sleep_ms(50);
  CU_ASSERT(harness_status_int(st, "next") > before);
  CU_ASSERT_EQUAL(harness_status_int(st, "resumeCalls"), 1);
  CU_ASSERT_EQUAL(dmh_subtask_stop(st, &err), 0);
  long n;
  CU_ASSERT_EQUAL(harness_out_sequence(&h, "dump", &n), 0);
  CU_ASSERT_EQUAL(harness_events(&h, "dump", "VIOLATION"), 0);
  dmh_subtask_destroy(st);
  harness_teardown(&h);
}

/*
 * Regression (DM's classic): resume issued while a pause is still in progress started a second
 * process() while the first had not returned. Here the unit takes 400 ms to return after the
 * token; a resume sent meanwhile may only take effect once the stage is truly Paused (it queues
 * behind the pause), and no call may overlap: the fake logs a VIOLATION if one does.
 */
typedef struct {
  dmh_subtask *st;
  int rc;
} cmd_arg;

static void *pause_thread(void *p) {
  cmd_arg *a = p;
  dm_error err;
  a->rc = dmh_subtask_pause(a->st, &err);
  return NULL;
}

static void *resume_thread(void *p) {
  cmd_arg *a = p;
  dm_error err;
  a->rc = dmh_subtask_resume(a->st, &err);
  return NULL;
}

static void test_resume_during_pause_refused(void) {
  harness h;
  SETUP(&h, "dump", NULL, "dump = { items = 0; item-ms = 1; ignore-stop-ms = 400; };");
  dmh_subtask *st = harness_subtask(&h, NULL);
  dm_error err;
  CU_ASSERT_EQUAL_FATAL(dmh_subtask_start(st, &err), 0);
  harness_sleep_ms(30);
  cmd_arg pa = {.st = st}, ra = {.st = st};
  pthread_t pt, rt;
  pthread_create(&pt, NULL, pause_thread, &pa);
  CU_ASSERT(harness_wait_stage(st, DMH_STAGE_PAUSING, 1000));
  char buf[32];
  CU_ASSERT_STRING_EQUAL(harness_status_str(st, "stage", buf, sizeof buf), "Pausing");
  CU_ASSERT_EQUAL(harness_status_int(st, "inCall"), 1); /* the unit is still inside process */
  pthread_create(&rt, NULL, resume_thread, &ra);        /* resume while pausing */
  harness_sleep_ms(100);
  CU_ASSERT_EQUAL(harness_status_int(st, "resumeCalls"), 0); /* it did not start anything */
  CU_ASSERT_EQUAL(dmh_subtask_stage(st), DMH_STAGE_PAUSING);
  pthread_join(pt, NULL);
  pthread_join(rt, NULL);
  CU_ASSERT_EQUAL(pa.rc, 0);
  CU_ASSERT_EQUAL(ra.rc, 0); /* taken once the stage was Paused */
  CU_ASSERT_EQUAL(dmh_subtask_stage(st), DMH_STAGE_RUNNING);
  for (int i = 0; i < 200 && harness_status_int(st, "resumeCalls") < 1; i++)
    harness_sleep_ms(5); /* the new runner reaches the unit's resume */
  CU_ASSERT_EQUAL(harness_status_int(st, "resumeCalls"), 1);
  /* and it took effect only after the unit's pause: the fake logs both, in the order they ran */
  CU_ASSERT_EQUAL(harness_events(&h, "dump", "pause"), 1);
  CU_ASSERT_EQUAL(harness_first_line(&h, "dump", "pause"), 1);
  CU_ASSERT(harness_first_line(&h, "dump", "resume") > harness_first_line(&h, "dump", "pause"));
  CU_ASSERT_EQUAL(dmh_subtask_resume(st, &err), -1); /* Running: refused */
  CU_ASSERT_EQUAL(err.code, DM_ERR_STAGE);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "stage Running"));
  CU_ASSERT_EQUAL(dmh_subtask_stop(st, &err), 0);
  CU_ASSERT_EQUAL(harness_events(&h, "dump", "VIOLATION"), 0);
  long n;
  CU_ASSERT_EQUAL(harness_out_sequence(&h, "dump", &n), 0);
  dmh_subtask_destroy(st);
  harness_teardown(&h);
}

/* Resume while Pausing is refused even when the pause itself has timed out. */
static void test_resume_refused_while_pausing(void) {
  harness h;
  SETUP(&h, "dump", "stop-timeout = 0.2; auto-resume = { enable = false; };",
        "dump = { items = 0; item-ms = 1; ignore-stop-ms = 700; };");
  dmh_subtask *st = harness_subtask(&h, NULL);
  dm_error err;
  CU_ASSERT_EQUAL_FATAL(dmh_subtask_start(st, &err), 0);
  harness_sleep_ms(30);
  CU_ASSERT_EQUAL(dmh_subtask_pause(st, &err), -1); /* the unit did not return in 200 ms */
  CU_ASSERT_EQUAL(err.code, DM_ERR_UNIT_TIMEOUT);
  CU_ASSERT_EQUAL(dmh_subtask_stage(st), DMH_STAGE_PAUSING);
  CU_ASSERT_EQUAL(dmh_subtask_resume(st, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_STAGE);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "stage Pausing"));
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "accepted from Paused or Stopped"));
  /* when the unit finally returns, the runner completes the pause */
  CU_ASSERT(harness_wait_stage(st, DMH_STAGE_PAUSED, 2000));
  CU_ASSERT_EQUAL(harness_events(&h, "dump", "pause"), 1);
  CU_ASSERT_EQUAL(dmh_subtask_resume(st, &err), 0);
  CU_ASSERT_EQUAL(dmh_subtask_kill(st, &err), 0);
  CU_ASSERT_EQUAL(harness_events(&h, "dump", "VIOLATION"), 0);
  dmh_subtask_destroy(st);
  harness_teardown(&h);
}

static void test_commands_refused_from_wrong_stages(void) {
  harness h;
  SETUP(&h, "dump", NULL, "dump = { items = 3; };");
  dmh_subtask *st = harness_subtask(&h, NULL);
  dm_error err;
  CU_ASSERT_EQUAL(dmh_subtask_resume(st, &err), -1); /* New */
  CU_ASSERT_EQUAL(err.code, DM_ERR_STAGE);
  CU_ASSERT_EQUAL(dmh_subtask_pause(st, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_STAGE);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "stage New"));
  CU_ASSERT_EQUAL_FATAL(dmh_subtask_start(st, &err), 0);
  CU_ASSERT_EQUAL(dmh_subtask_wait_settled(st, 5000), DMH_STAGE_FINISHED);
  CU_ASSERT_EQUAL(dmh_subtask_start(st, &err), -1);
  CU_ASSERT_EQUAL(dmh_subtask_resume(st, &err), -1); /* Finished */
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "stage Finished"));
  CU_ASSERT_EQUAL(dmh_subtask_pause(st, &err), -1);
  CU_ASSERT_EQUAL(dmh_subtask_stop(st, &err), 0);
  CU_ASSERT_EQUAL(dmh_subtask_stop(st, &err), -1); /* already Stopped */
  CU_ASSERT_EQUAL(err.code, DM_ERR_STAGE);
  dmh_subtask_destroy(st);
  harness_teardown(&h);
}

/* Resume from Stopped re-inits the units, which continue from their checkpoints. */
static void test_resume_from_stopped(void) {
  harness h;
  SETUP(&h, "dump", NULL, "dump = { items = 200; item-ms = 1; };");
  dmh_subtask *st = harness_subtask(&h, NULL);
  dm_error err;
  CU_ASSERT_EQUAL_FATAL(dmh_subtask_start(st, &err), 0);
  harness_sleep_ms(40);
  CU_ASSERT_EQUAL(dmh_subtask_stop(st, &err), 0);
  CU_ASSERT_EQUAL(harness_events(&h, "dump", "close"), 1);
  CU_ASSERT_EQUAL(dmh_subtask_resume(st, &err), 0);
  CU_ASSERT_EQUAL(dmh_subtask_wait_settled(st, 10000), DMH_STAGE_FINISHED);
  long n;
  CU_ASSERT_EQUAL(harness_out_sequence(&h, "dump", &n), 0);
  CU_ASSERT_EQUAL(n, 200);
  CU_ASSERT_EQUAL(harness_events(&h, "dump", "init"), 2);
  dmh_subtask_destroy(st);
  harness_teardown(&h);
}

/* Pausing a subtask paused by an error marks it manual: auto-resume leaves it alone. */
static void test_pause_after_error_is_manual(void) {
  harness h;
  SETUP(&h, "dump",
        "stop-timeout = 2; auto-resume = { enable = true; backoff-initial = 0.3; backoff-max = 5; "
        "};",
        "dump = { items = 20; item-ms = 1; fail-at = 5; };");
  dmh_subtask *st = harness_subtask(&h, NULL);
  dm_error err;
  CU_ASSERT_EQUAL_FATAL(dmh_subtask_start(st, &err), 0);
  CU_ASSERT_EQUAL(dmh_subtask_wait_settled(st, 5000), DMH_STAGE_PAUSED);
  CU_ASSERT_EQUAL(harness_first_error(st, NULL, 0), DM_ERR_DB_CONNECT);
  CU_ASSERT_FALSE(dmh_subtask_manually_paused(st));
  CU_ASSERT_EQUAL(dmh_subtask_pause(st, &err), 0);
  CU_ASSERT_TRUE(dmh_subtask_manually_paused(st));
  harness_sleep_ms(800);
  CU_ASSERT_EQUAL(dmh_subtask_stage(st), DMH_STAGE_PAUSED); /* not auto-resumed */
  CU_ASSERT_EQUAL(dmh_subtask_pause(st, &err), -1);         /* already manually paused */
  CU_ASSERT_EQUAL(dmh_subtask_resume(st, &err), 0);
  CU_ASSERT_EQUAL(dmh_subtask_wait_settled(st, 5000), DMH_STAGE_FINISHED);
  long n;
  CU_ASSERT_EQUAL(harness_out_sequence(&h, "dump", &n), 0);
  CU_ASSERT_EQUAL(n, 20);
  dmh_subtask_destroy(st);
  harness_teardown(&h);
}

/* A resumable error is resumed automatically, with a back-off that doubles. */
static void test_auto_resume_backoff(void) {
  harness h;
  SETUP(&h, "dump",
        "stop-timeout = 2; auto-resume = { enable = true; backoff-initial = 0.2; backoff-max = 5; "
        "};",
        "dump = { items = 20; item-ms = 0; fail-at = 5; fail-times = 3; };");
  dmh_subtask *st = harness_subtask(&h, NULL);
  dm_error err;
  double t0 = harness_now();
  CU_ASSERT_EQUAL_FATAL(dmh_subtask_start(st, &err), 0);
  CU_ASSERT(harness_wait_stage(st, DMH_STAGE_FINISHED, 10000));
  double took = harness_now() - t0;
  /* 0.2 + 0.4 + 0.8 s of back-off before the fourth try gets through */
  CU_ASSERT(took >= 1.35);
  CU_ASSERT(took < 4.0);
  CU_ASSERT_EQUAL(harness_status_int(st, "resumeCalls"), 3);
  long n;
  CU_ASSERT_EQUAL(harness_out_sequence(&h, "dump", &n), 0);
  CU_ASSERT_EQUAL(n, 20);
  dmh_subtask_destroy(st);
  harness_teardown(&h);
}

/* A non-resumable error (binlog purged upstream) is never auto-resumed. */
static void test_no_auto_resume_for_fatal(void) {
  harness h;
  SETUP(&h, "dump",
        "stop-timeout = 2; auto-resume = { enable = true; backoff-initial = 0.1; backoff-max = 1; "
        "};",
        "dump = { items = 20; fail-at = 3; fail-resumable = false; };");
  dmh_subtask *st = harness_subtask(&h, NULL);
  dm_error err;
  CU_ASSERT_EQUAL_FATAL(dmh_subtask_start(st, &err), 0);
  CU_ASSERT_EQUAL(dmh_subtask_wait_settled(st, 5000), DMH_STAGE_PAUSED);
  harness_sleep_ms(600);
  CU_ASSERT_EQUAL(dmh_subtask_stage(st), DMH_STAGE_PAUSED);
  CU_ASSERT_EQUAL(harness_status_int(st, "resumeCalls"), 0);
  char msg[256];
  CU_ASSERT_EQUAL(harness_first_error(st, msg, sizeof msg), DM_ERR_BINLOG_PURGED);
  CU_ASSERT_PTR_NOT_NULL(strstr(msg, "injected fatal failure"));
  dmh_subtask_destroy(st);
  harness_teardown(&h);
}

/* stop is bounded while a unit ignores the token: the unit's kill slot gets it out. */
static void test_stop_bounded_by_kill(void) {
  harness h;
  SETUP(&h, "dump", "stop-timeout = 0.3; auto-resume = { enable = false; };",
        "dump = { items = 0; block-until-kill = true; };");
  dmh_subtask *st = harness_subtask(&h, NULL);
  dm_error err;
  CU_ASSERT_EQUAL_FATAL(dmh_subtask_start(st, &err), 0);
  harness_sleep_ms(50);
  double t0 = harness_now();
  CU_ASSERT_EQUAL(dmh_subtask_stop(st, &err), 0);
  double took = harness_now() - t0;
  CU_ASSERT(took >= 0.25 && took < 1.0);
  CU_ASSERT_EQUAL(dmh_subtask_stage(st), DMH_STAGE_STOPPED);
  CU_ASSERT_EQUAL(harness_events(&h, "dump", "kill"), 1);
  CU_ASSERT_EQUAL(harness_events(&h, "dump", "close"), 1);
  CU_ASSERT_EQUAL(harness_events(&h, "dump", "VIOLATION"), 0);
  dmh_subtask_destroy(st);
  harness_teardown(&h);
}

/* kill does not wait for the token: kill is called at once. */
static void test_kill_immediate(void) {
  harness h;
  SETUP(&h, "dump", "stop-timeout = 5; auto-resume = { enable = false; };",
        "dump = { items = 0; block-until-kill = true; };");
  dmh_subtask *st = harness_subtask(&h, NULL);
  dm_error err;
  CU_ASSERT_EQUAL_FATAL(dmh_subtask_start(st, &err), 0);
  harness_sleep_ms(50);
  double t0 = harness_now();
  CU_ASSERT_EQUAL(dmh_subtask_kill(st, &err), 0);
  CU_ASSERT(harness_now() - t0 < 0.5);
  CU_ASSERT_EQUAL(dmh_subtask_stage(st), DMH_STAGE_STOPPED);
  CU_ASSERT(harness_events(&h, "dump", "kill") >= 1);
  dmh_subtask_destroy(st);
  harness_teardown(&h);
}

/* A unit that ignores both the token and kill: stop is still bounded, the thread is abandoned,
 * and resume is refused (two instances could otherwise share one checkpoint). The thread returns
 * later and must find its subtask still there (ASan checks it does not touch freed memory). */
static void test_stop_abandons_hung_unit(void) {
  harness h;
  SETUP(&h, "dump", "stop-timeout = 0.2; auto-resume = { enable = false; };",
        "dump = { items = 0; hang-ms = 1200; };");
  dmh_subtask *st = harness_subtask(&h, NULL);
  dm_error err;
  CU_ASSERT_EQUAL_FATAL(dmh_subtask_start(st, &err), 0);
  harness_sleep_ms(50);
  double t0 = harness_now();
  CU_ASSERT_EQUAL(dmh_subtask_stop(st, &err), -1);
  double took = harness_now() - t0;
  CU_ASSERT(took >= 0.35 && took < 1.0); /* two stop-timeouts, not the unit's 1.2 s */
  CU_ASSERT_EQUAL(err.code, DM_ERR_UNIT_ABANDONED);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "abandoned"));
  CU_ASSERT_EQUAL(dmh_subtask_stage(st), DMH_STAGE_STOPPED);
  CU_ASSERT_EQUAL(harness_events(&h, "dump", "kill"), 1);
  CU_ASSERT_EQUAL(harness_events(&h, "dump", "close"), 0); /* never closed under its thread */
  CU_ASSERT_EQUAL(dmh_subtask_resume(st, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_UNIT_ABANDONED);
  dmh_subtask_destroy(st);
  harness_sleep_ms(1300); /* the abandoned thread comes back and finds its subtask intact */
  CU_ASSERT_EQUAL(harness_events(&h, "dump", "VIOLATION"), 0);
  harness_teardown(&h);
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"full chain finishes", test_full_chain_finishes},
      {"mode chains", test_mode_chains},
      {"is_fresh skips finished units", test_is_fresh_skips_finished_units},
      {"init failure closes earlier units", test_init_failure_closes_earlier_units},
      {"init timeout", test_init_timeout},
      {"is_fresh_task failure", test_is_fresh_failure},
      {"unknown unit setting", test_unknown_unit_setting},
      {"pause waits for the unit", test_pause_waits_for_unit},
      {"regression: resume during pause", test_resume_during_pause_refused},
      {"resume refused while pausing", test_resume_refused_while_pausing},
      {"commands from wrong stages", test_commands_refused_from_wrong_stages},
      {"resume from stopped", test_resume_from_stopped},
      {"pause after error is manual", test_pause_after_error_is_manual},
      {"auto-resume back-off", test_auto_resume_backoff},
      {"no auto-resume for fatal errors", test_no_auto_resume_for_fatal},
      {"stop bounded by kill", test_stop_bounded_by_kill},
      {"kill immediate", test_kill_immediate},
      {"stop abandons a hung unit", test_stop_abandons_hung_unit},
      {"relay catch-up reached", test_relay_catchup_reached},
      {"regression: the relay file of a task's dump is held", test_relay_hold_during_dump},
      {"relay catch-up at master", test_relay_catchup_at_master},
      {"relay catch-up timeout", test_relay_catchup_timeout},
      {"relay catch-up: one status call a poll", test_relay_catchup_one_status_per_poll},
      {"relay catch-up interrupted by stop", test_relay_catchup_interrupted_by_stop},
      {"relay catch-up pause/resume", test_relay_catchup_pause_resume},
      {"swap mid-run", test_swap_mid_run},
      {"swap refused keeps old build", test_swap_refused_keeps_old},
      {"swap while paused", test_swap_while_paused},
      {"update-task: all or nothing over the units", test_update_all_or_nothing},
  };
  return dmh_cunit_run("supervisor", NULL, NULL, tests, sizeof tests / sizeof tests[0]);
}

/*
 * The supervisor's stage machine against fake units: each rule of supervisor.h is a test here.
 * The fakes log every item to out.log, so "nothing lost, nothing doubled" is checked as the exact
 * sequence 1..n, and every overlapping call as a VIOLATION line in events.log.
 */
#include <CUnit/Basic.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cunit_run.h"
#include "dmhost/relay_folder.h"
#include "dmhost/relay_purge.h"
#include "dmhost/relay_reader.h"
#include "harness.h"

#define SETUP(h, mode, sup, units) CU_ASSERT_FATAL(harness_setup(h, mode, sup, units) == 0)
#define FAST_SUP                                                                                   \
  "init-timeout = 5; stop-timeout = 2; relay-catchup-timeout = 5; relay-catchup-poll = 10; "       \
  "auto-resume = { enable = false; };"

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

/* ---- relay catch-up between load and sync ---- */

static void test_relay_catchup_reached(void) {
  harness h;
  SETUP(&h, "all", NULL,
        "dump = { items = 2; }; load = { items = 2; meta-pos = 2000; }; "
        "sync = { items = 3; };");
  dmh_subtask *relay = harness_relay(&h, "items = 0; item-ms = 5; master-pos = 5000;");
  CU_ASSERT_FATAL(relay != NULL);
  dm_error err;
  /* the relay starts late, so the wait is real */
  dmh_subtask *st = harness_subtask(&h, relay);
  CU_ASSERT_FATAL(st != NULL);
  CU_ASSERT_EQUAL_FATAL(dmh_subtask_start(st, &err), 0);
  harness_sleep_ms(200);
  CU_ASSERT_EQUAL(dmh_subtask_stage(st), DMH_STAGE_RUNNING);
  char buf[16];
  CU_ASSERT_STRING_EQUAL(harness_status_str(st, "waitingRelayCatchUp", buf, sizeof buf), "true");
  long n;
  harness_out_sequence(&h, "sync", &n);
  CU_ASSERT_EQUAL(n, 0); /* sync has not started before the relay caught up */
  CU_ASSERT_EQUAL_FATAL(dmh_subtask_start(relay, &err), 0);
  CU_ASSERT_EQUAL(dmh_subtask_wait_settled(st, 5000), DMH_STAGE_FINISHED);
  dm_position rp;
  CU_ASSERT_TRUE(dmh_subtask_unit_position(relay, DM_UNIT_RELAY, "relayBinlog", &rp));
  CU_ASSERT(rp.pos >= 2000);
  CU_ASSERT_EQUAL(harness_out_sequence(&h, "sync", &n), 0);
  CU_ASSERT_EQUAL(n, 3);
  dmh_subtask_destroy(st);
  dmh_subtask_destroy(relay);
  harness_teardown(&h);
}

/* ---- the task's place in the relay log while dump and load run ---- */

static void relay_hold_write(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  fputs(text, f);
  fclose(f);
}

/* A relay folder as the relay writes it (the SDK's writer): one sub-folder, files 1..last,
 * relay.meta at last; again: the relay has written on to `last`. */
static void relay_hold_folder(const char *relay, int last) {
  char path[600], sub[300];
  dm_error err;
  CU_ASSERT_EQUAL_FATAL(dm_relay_index_last(relay, sub, sizeof sub, &err), 0);
  if (!sub[0]) /* the relay's first start */
    CU_ASSERT_EQUAL_FATAL(dm_relay_index_add(relay, "0-1", 0600, sub, sizeof sub, &err), 0);
  CU_ASSERT_STRING_EQUAL_FATAL(sub, "0-1.000001");
  for (int i = 1; i <= last; i++) {
    snprintf(path, sizeof path, "%s/0-1.000001/mysql-bin.%06d", relay, i);
    relay_hold_write(path, "");
  }
  dm_relay_meta m = {.binlog_pos = 4};
  snprintf(m.binlog_name, sizeof m.binlog_name, "mysql-bin.%06d", last);
  snprintf(path, sizeof path, "%s/0-1.000001", relay);
  CU_ASSERT_EQUAL_FATAL(dm_relay_meta_write(path, &m, 0600, false, &err), 0);
}

static bool relay_hold_has(const char *relay, int num) {
  char path[600];
  struct stat sb;
  snprintf(path, sizeof path, "%s/0-1.000001/mysql-bin.%06d", relay, num);
  return stat(path, &sb) == 0;
}

/* Regression: nothing registered a mode-all task's place in the relay log before its sync's first
 * checkpoint, so a purge while the dump ran removed the file the dump's position (taken at its
 * start) is in: here the relay moves from file 3 to file 5 during the dump, and a purge of
 * everything the relay no longer writes removed file 3. Now the host holds the relay's file from
 * before the dump runs, then the dump's position's file (the load's metaBinlog here) from when it
 * is known. */
static void test_relay_hold_during_dump(void) {
  harness h;
  SETUP(&h, "all", NULL,
        "dump = { items = 40; item-ms = 10; }; "
        "load = { items = 2; meta-file = \"mysql-bin.000004\"; meta-pos = 300; }; "
        "sync = { items = 0; };");
  dmh_subtask *relay = harness_relay(&h, "items = 0; item-ms = 5; master-pos = 5000;");
  CU_ASSERT_FATAL(relay != NULL);
  char dir[400], sub[64] = "", file[64] = "";
  snprintf(dir, sizeof dir, "%s/relay", h.dir);
  relay_hold_folder(dir, 3);
  dmh_subtask *st = harness_subtask(&h, relay);
  CU_ASSERT_FATAL(st != NULL);
  dm_error err;
  CU_ASSERT_EQUAL_FATAL(dmh_subtask_start(st, &err), 0);
  harness_sleep_ms(100);
  char buf[32];
  CU_ASSERT_STRING_EQUAL(harness_status_str(st, "unit", buf, sizeof buf), "Dump");
  CU_ASSERT_TRUE(dm_relay_reader_read(dir, "t1", sub, sizeof sub, file, sizeof file));
  CU_ASSERT_STRING_EQUAL(file, "mysql-bin.000003");
  /* the relay writes on into file 5; a purge of all it no longer writes keeps the task's file */
  relay_hold_folder(dir, 5);
  /* "keep 1 PiB free": every file no one needs goes */
  dm_relay_purge_opts po = {.relay_dir = dir, .remain_space_gb = INT64_C(1) << 20};
  int removed = 0;
  CU_ASSERT_EQUAL(dm_relay_purge(&po, &removed, &err), 0);
  CU_ASSERT_EQUAL(removed, 2);
  CU_ASSERT_FALSE(relay_hold_has(dir, 2));
  CU_ASSERT_TRUE(relay_hold_has(dir, 3));
  /* after the load: the dump's position's file, while the sync waits for the relay */
  double end = harness_now() + 5;
  while (!dmh_subtask_unit_position(st, DM_UNIT_LOAD, "metaBinlog", &(dm_position){0}) &&
         harness_now() < end)
    harness_sleep_ms(10);
  end = harness_now() + 5;
  while (harness_now() < end &&
         !(dm_relay_reader_read(dir, "t1", sub, sizeof sub, file, sizeof file) &&
           strcmp(file, "mysql-bin.000004") == 0))
    harness_sleep_ms(10);
  CU_ASSERT_STRING_EQUAL(sub, "0-1.000001");
  CU_ASSERT_STRING_EQUAL(file, "mysql-bin.000004");
  dmh_subtask_stop(st, &err);
  dmh_subtask_destroy(st);
  dmh_subtask_destroy(relay);
  harness_teardown(&h);
}

/* A relay exactly at the source's position, with nothing new coming, has caught up. */
static void test_relay_catchup_at_master(void) {
  harness h;
  SETUP(&h, "load&sync", NULL, "load = { items = 1; meta-pos = 1000; }; sync = { items = 1; };");
  dmh_subtask *relay = harness_relay(&h, "items = 0; item-ms = 1; master-pos = 1000;");
  dm_error err;
  CU_ASSERT_EQUAL_FATAL(dmh_subtask_start(relay, &err), 0);
  harness_sleep_ms(100); /* relay sits at master-pos 1000, idle */
  dmh_subtask *st = harness_subtask(&h, relay);
  CU_ASSERT_EQUAL_FATAL(dmh_subtask_start(st, &err), 0);
  CU_ASSERT_EQUAL(dmh_subtask_wait_settled(st, 3000), DMH_STAGE_FINISHED);
  dmh_subtask_destroy(st);
  dmh_subtask_destroy(relay);
  harness_teardown(&h);
}

static void test_relay_catchup_timeout(void) {
  harness h;
  SETUP(&h, "load&sync",
        "relay-catchup-timeout = 0.4; relay-catchup-poll = 20; auto-resume = { enable = false; };",
        "load = { items = 1; meta-pos = 9000; }; sync = { items = 1; };");
  dmh_subtask *relay = harness_relay(&h, "items = 0; item-ms = 1; master-pos = 1000;");
  dm_error err;
  CU_ASSERT_EQUAL_FATAL(dmh_subtask_start(relay, &err), 0);
  dmh_subtask *st = harness_subtask(&h, relay);
  double t0 = harness_now();
  CU_ASSERT_EQUAL_FATAL(dmh_subtask_start(st, &err), 0);
  CU_ASSERT_EQUAL(dmh_subtask_wait_settled(st, 3000), DMH_STAGE_PAUSED);
  CU_ASSERT(harness_now() - t0 >= 0.35);
  char msg[512];
  CU_ASSERT_EQUAL(harness_first_error(st, msg, sizeof msg), DM_ERR_RELAY_CATCHUP_TIMEOUT);
  CU_ASSERT_PTR_NOT_NULL(strstr(msg, "(mysql-bin.000001, 9000)"));
  CU_ASSERT_PTR_NOT_NULL(strstr(msg, "(mysql-bin.000001, 1000)"));
  long n;
  harness_out_sequence(&h, "sync", &n);
  CU_ASSERT_EQUAL(n, 0);
  dmh_subtask_destroy(st);
  dmh_subtask_destroy(relay);
  harness_teardown(&h);
}

/* The catch-up wait asks the relay's status slot once a poll: it asked up to three times (the
 * written position, the caught-up flag, the source's position, each a whole status), and one
 * typed question is one call. Here the relay has caught up at 1000, short of the dump's 9000, so
 * every poll needs all three answers until the wait times out. */
static void test_relay_catchup_one_status_per_poll(void) {
  harness h;
  SETUP(&h, "load&sync",
        "relay-catchup-timeout = 0.45; relay-catchup-poll = 100; "
        "auto-resume = { enable = false; };",
        "load = { items = 1; meta-pos = 9000; }; sync = { items = 1; };");
  dmh_subtask *relay =
      harness_relay(&h, "items = 0; item-ms = 1; master-pos = 1000; log-status = true;");
  CU_ASSERT_FATAL(relay != NULL);
  dm_error err;
  CU_ASSERT_EQUAL_FATAL(dmh_subtask_start(relay, &err), 0);
  dmh_relay_progress rp = {0};
  double end = harness_now() + 5;
  while (!(dmh_subtask_relay_progress(relay, &rp) && rp.caught_up) && harness_now() < end)
    harness_sleep_ms(10);
  CU_ASSERT_TRUE_FATAL(rp.caught_up);
  /* one question, one call, every answer */
  int before = harness_relay_events(&h, "status");
  CU_ASSERT_TRUE(dmh_subtask_relay_progress(relay, &rp));
  CU_ASSERT_EQUAL(harness_relay_events(&h, "status") - before, 1);
  CU_ASSERT_TRUE(rp.caught_up);
  CU_ASSERT_TRUE(rp.has_written && rp.written.pos == 1000);
  CU_ASSERT_TRUE(rp.has_master && rp.master.pos == 1000);
  CU_ASSERT_STRING_EQUAL(rp.master.name, "mysql-bin.000001");

  dmh_subtask *st = harness_subtask(&h, relay);
  CU_ASSERT_FATAL(st != NULL);
  before = harness_relay_events(&h, "status");
  double t0 = harness_now();
  CU_ASSERT_EQUAL_FATAL(dmh_subtask_start(st, &err), 0);
  CU_ASSERT_EQUAL(dmh_subtask_wait_settled(st, 5000), DMH_STAGE_PAUSED);
  double took = harness_now() - t0;
  CU_ASSERT_EQUAL(harness_first_error(st, NULL, 0), DM_ERR_RELAY_CATCHUP_TIMEOUT);
  /* a poll at the start of the wait and one after each full poll interval within it */
  int calls = harness_relay_events(&h, "status") - before;
  int polls_max = (int)(took / 0.1) + 1;
  CU_ASSERT(calls >= 2);
  CU_ASSERT(calls <= polls_max);
  if (calls > polls_max)
    fprintf(stderr, "%d status calls in %.2f s: at most %d polls\n", calls, took, polls_max);
  dmh_subtask_destroy(st);
  dmh_subtask_destroy(relay);
  harness_teardown(&h);
}

static void test_relay_catchup_interrupted_by_stop(void) {
  harness h;
  SETUP(&h, "load&sync",
        "relay-catchup-timeout = 30; relay-catchup-poll = 50; auto-resume = { enable = false; };",
        "load = { items = 1; meta-pos = 9000; }; sync = { items = 1; };");
  dmh_subtask *relay = harness_relay(&h, "items = 0; item-ms = 1; master-pos = 1000;");
  dm_error err;
  dmh_subtask *st = harness_subtask(&h, relay);
  CU_ASSERT_EQUAL_FATAL(dmh_subtask_start(st, &err), 0);
  harness_sleep_ms(150);
  double t0 = harness_now();
  CU_ASSERT_EQUAL(dmh_subtask_stop(st, &err), 0);
  CU_ASSERT(harness_now() - t0 < 0.5);
  CU_ASSERT_EQUAL(dmh_subtask_stage(st), DMH_STAGE_STOPPED);
  dmh_subtask_destroy(st);
  dmh_subtask_destroy(relay);
  harness_teardown(&h);
}

/* Pause during the wait, then resume: the wait starts over and sync follows. */
static void test_relay_catchup_pause_resume(void) {
  harness h;
  SETUP(&h, "load&sync", NULL, "load = { items = 1; meta-pos = 500; }; sync = { items = 2; };");
  dmh_subtask *relay = harness_relay(&h, "items = 0; item-ms = 2; master-pos = 800;");
  dm_error err;
  dmh_subtask *st = harness_subtask(&h, relay);
  CU_ASSERT_EQUAL_FATAL(dmh_subtask_start(st, &err), 0);
  harness_sleep_ms(100);
  CU_ASSERT_EQUAL(dmh_subtask_pause(st, &err), 0);
  CU_ASSERT_EQUAL(dmh_subtask_start(relay, &err), 0);
  CU_ASSERT_EQUAL(dmh_subtask_resume(st, &err), 0);
  CU_ASSERT_EQUAL(dmh_subtask_wait_settled(st, 5000), DMH_STAGE_FINISHED);
  long n;
  CU_ASSERT_EQUAL(harness_out_sequence(&h, "sync", &n), 0);
  CU_ASSERT_EQUAL(n, 2);
  dmh_subtask_destroy(st);
  dmh_subtask_destroy(relay);
  harness_teardown(&h);
}

/* ---- hot-swap ---- */

static void test_swap_mid_run(void) {
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

static void test_swap_refused_keeps_old(void) {
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

static void test_swap_while_paused(void) {
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
static void test_update_all_or_nothing(void) {
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

/*
 * Random interleavings of pause, resume, stop, kill and swap from several threads against one
 * subtask, run under ThreadSanitizer in CI. After every step a checker holds off commands and
 * checks that the stage agrees with what the unit is doing (no stage but Running, Pausing or
 * Stopping while the unit is inside process/resume); at the end, that no call ever overlapped
 * (the fake writes a VIOLATION line for that) and that the items form exactly 1..n. The storm is
 * 10,000 commands (and 2,500 for the slow unit) in the ThreadSanitizer build, 2,500 (and 625) in
 * the others, about 14 s and 6 s here; the run fails when fewer were sent.
 */
#include <CUnit/Basic.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cunit_run.h"
#include "harness.h"

#define THREADS 4

/* The least the build runs (CMake: 10,000 under ThreadSanitizer, 2,500 else); DMH_STRESS_COMMANDS
 * may ask for more, never for less: a smaller storm fails the run. */
#ifndef DMH_STRESS_MIN
#define DMH_STRESS_MIN 2500
#endif
static int stress_commands = DMH_STRESS_MIN; /* the first test's total */
static atomic_long stress_sent;              /* commands sent by every worker of every test */

typedef struct {
  dmh_subtask *st;
  unsigned seed;
  int commands;
  atomic_int *ok_count;
} worker_arg;

static void *stress_worker(void *p) {
  worker_arg *a = p;
  for (int i = 0; i < a->commands; i++) {
    dm_error err;
    int rc;
    switch (rand_r(&a->seed) % 10) {
    case 0:
    case 1:
    case 2:
      rc = dmh_subtask_pause(a->st, &err);
      break;
    case 3:
    case 4:
    case 5:
    case 6:
      rc = dmh_subtask_resume(a->st, &err);
      break;
    case 7:
      rc = dmh_subtask_stop(a->st, &err);
      break;
    case 8:
      rc = dmh_subtask_kill(a->st, &err);
      break;
    default: {
      json_object *o = dmh_subtask_status_json(a->st);
      json_object_put(o);
      rc = 0;
    }
    }
    /* a refusal must always be a stage error, never anything else */
    if (rc < 0 && err.code != DM_ERR_STAGE) {
      fprintf(stderr, "unexpected error %d: %s\n", err.code, err.message);
      CU_FAIL("unexpected error code from a command");
    }
    atomic_fetch_add(&stress_sent, 1);
    if (rc == 0)
      atomic_fetch_add(a->ok_count, 1);
    if (rand_r(&a->seed) % 4 == 0)
      harness_sleep_ms((int)(rand_r(&a->seed) % 3));
  }
  return NULL;
}

typedef struct {
  dmh_subtask *st;
  atomic_bool stop;
  atomic_int checks, bad;
} checker_arg;

static void *stress_checker(void *p) {
  checker_arg *c = p;
  while (!atomic_load(&c->stop)) {
    dmh_subtask_hold_commands(c->st);
    dmh_stage s = dmh_subtask_stage(c->st);
    long in_call = harness_status_int(c->st, "inCall"); /* -1 when the instance is closed */
    /* with commands held, only the runner moves: Running may become Paused or Finished, never
     * the reverse, so a settled stage seen first must find the unit outside process */
    if ((s == DMH_STAGE_PAUSED || s == DMH_STAGE_STOPPED || s == DMH_STAGE_FINISHED ||
         s == DMH_STAGE_NEW) &&
        in_call > 0) {
      fprintf(stderr, "stage %s with the unit inside process\n", dmh_stage_name(s));
      atomic_fetch_add(&c->bad, 1);
    }
    if (s == DMH_STAGE_PAUSING || s == DMH_STAGE_RESUMING || s == DMH_STAGE_STOPPING) {
      fprintf(stderr, "transient stage %s seen with no command in flight\n", dmh_stage_name(s));
      atomic_fetch_add(&c->bad, 1);
    }
    dmh_subtask_release_commands(c->st);
    atomic_fetch_add(&c->checks, 1);
    harness_sleep_ms(1);
  }
  return NULL;
}

static void run_stress(const char *units) {
  harness h;
  CU_ASSERT_FATAL(harness_setup(&h, "dump",
                                "init-timeout = 5; stop-timeout = 5; auto-resume = { enable = "
                                "true; backoff-initial = 0.01; backoff-max = 0.05; };",
                                units) == 0);
  dmh_subtask *st = harness_subtask(&h, NULL);
  CU_ASSERT_FATAL(st != NULL);
  dm_error err;
  CU_ASSERT_EQUAL_FATAL(dmh_subtask_start(st, &err), 0);
  atomic_int ok = 0;
  long sent0 = atomic_load(&stress_sent);
  worker_arg w[THREADS];
  pthread_t t[THREADS], ct;
  checker_arg c = {.st = st};
  pthread_create(&ct, NULL, stress_checker, &c);
  for (int i = 0; i < THREADS; i++) {
    w[i] = (worker_arg){.st = st,
                        .seed = 1234u + (unsigned)i * 7919u,
                        .commands = stress_commands / THREADS,
                        .ok_count = &ok};
    pthread_create(&t[i], NULL, stress_worker, &w[i]);
  }
  for (int i = 0; i < THREADS; i++)
    pthread_join(t[i], NULL);
  atomic_store(&c.stop, true);
  pthread_join(ct, NULL);
  long sent = atomic_load(&stress_sent) - sent0;
  printf("\n  %ld commands sent, %d accepted, %d consistency checks\n", sent, atomic_load(&ok),
         atomic_load(&c.checks));
  CU_ASSERT_EQUAL(sent, (long)(stress_commands / THREADS) * THREADS); /* every worker ran all */
  CU_ASSERT_EQUAL(atomic_load(&c.bad), 0);
  CU_ASSERT(atomic_load(&ok) > stress_commands / 10); /* the mix really exercised transitions */
  /* let it finish if it can: resume whatever state it is in */
  dmh_stage s = dmh_subtask_wait_settled(st, 5000);
  if (s == DMH_STAGE_PAUSED || s == DMH_STAGE_STOPPED)
    CU_ASSERT_EQUAL(dmh_subtask_resume(st, &err), 0);
  dmh_subtask_destroy(st);
  CU_ASSERT_EQUAL(harness_events(&h, "dump", "VIOLATION"), 0);
  long n;
  CU_ASSERT_EQUAL(harness_out_sequence(&h, "dump", &n), 0);
  CU_ASSERT(n > 0);
  harness_teardown(&h);
}

/* A unit that never finishes, polls fast and sometimes fails: every transition is hot. */
static void test_stress_endless(void) {
  run_stress("dump = { items = 0; item-ms = 1; fail-at = 50; fail-times = 3; };");
}

/* A unit that ignores the token for a while: pauses and stops overlap with a running unit. */
static void test_stress_slow_return(void) {
  stress_commands /= 4;
  run_stress("dump = { items = 0; item-ms = 1; ignore-stop-ms = 3; };");
}

int main(void) {
  const char *env = getenv("DMH_STRESS_COMMANDS");
  if (env && atoi(env) > 0)
    stress_commands = atoi(env);
  int first = stress_commands;
  static const dmh_cunit_test tests[] = {
      {"random commands, endless unit", test_stress_endless},
      {"random commands, slow-returning unit", test_stress_slow_return},
  };
  int failed =
      dmh_cunit_run("supervisor stress", NULL, NULL, tests, sizeof tests / sizeof tests[0]);
  /* The storm this build promises (issue 10: 10,000 commands under TSan) really ran. */
  long want = first + first / 4;
  printf("%ld commands sent in all (at least %d + %d wanted)\n", (long)atomic_load(&stress_sent),
         DMH_STRESS_MIN, DMH_STRESS_MIN / 4);
  if (first < DMH_STRESS_MIN || atomic_load(&stress_sent) < want - 2 * THREADS) {
    fprintf(stderr,
            "FAILED: the storm sent %ld commands; this build runs at least %d + %d "
            "(DMH_STRESS_COMMANDS=%d)\n",
            (long)atomic_load(&stress_sent), DMH_STRESS_MIN, DMH_STRESS_MIN / 4, first);
    failed++;
  }
  return failed ? 1 : 0;
}

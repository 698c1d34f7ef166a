/*
 * The sync unit in mode all (dump -> load -> sync, the real units) while the writer of
 * sync_all_util.h keeps changing the source; the target is compared with the source cell by cell:
 *  - mode all reading the source directly, and with the relay on (relay subtask of the source);
 *  - 30 rounds of pause / short sleep / resume while sync runs (never Pausing left behind, no
 *    error ever, in particular no duplicate key);
 *  - a burst of inserts + updates of a table without a key (whole-row causality, full scans).
 * Each test prints its timings and the deadlocks the target saw between the workers.
 */
#include <CUnit/Basic.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cunit_run.h"
#include "dmhost/error.h"
#include "sync_all_util.h"
#include "testdb.h"

static void sa_mode_all(const char *db, bool relay_on) {
  sa_case c;
  sa_case_begin(&c, db, relay_on, sa_sup_auto);
  dmh_subtask *relay = NULL;
  if (relay_on) {
    relay = lt_relay(&c.e);
    CU_ASSERT_FATAL(relay != NULL);
    dm_error err;
    CU_ASSERT_FATAL(dmh_subtask_start(relay, &err) == 0);
  }
  sa_writer *w = &sa_w;
  sa_writer_start(w, db, relay_on ? 7 : 3);
  lt_sleep_ms(500); /* writes before the dump */
  double t1 = lt_now();
  dmh_subtask *st = sa_start(&c.e, relay);
  CU_ASSERT_FATAL(st != NULL);
  bool in_sync = sa_wait_sync(st, 1, 60000);
  CU_ASSERT(in_sync);
  double t_sync = lt_now() - t1;
  /* the sync runs a while with the writer: 150 more commits (a loaded machine writes slower: on
   * two cores at load 15-20, 3 s once held only 76, and the writer's own check failed) */
  if (in_sync)
    CU_ASSERT(sa_writer_wait_commits(w, 150, 120000));
  sa_writer_stop(w);
  double caught = sa_catch_up(st, db, db, 60000);
  sa_assert_no_error(st, db);
  CU_ASSERT_EQUAL(dmh_subtask_stage(st), DMH_STAGE_RUNNING);
  fprintf(stderr, "%s: dump + load%s until sync ran: %.2f s, %lld rows synced, catch-up %.2f s\n",
          db, relay_on ? " + relay catch-up" : "", t_sync, lt_status_int(st, "totalRows"), caught);
  sa_assert_equal(db);
  dmh_subtask_destroy(st); /* before the relay it reads */
  dmh_subtask_destroy(relay);
  sa_case_end(&c, NULL);
}

static void test_mode_all_direct(void) {
  sa_mode_all("h6_sa_direct", false);
}

static void test_mode_all_relay(void) {
  sa_mode_all("h6_sa_relay", true);
}

/* 30 rounds of pause / sleep / resume while sync applies the writer's changes. */
static void test_pause_resume_storm(void) {
  const char *db = "h6_sa_storm";
  sa_case c;
  sa_case_begin(&c, db, false, sa_sup_manual);
  sa_writer *w = &sa_w;
  sa_writer_start(w, db, 11);
  lt_sleep_ms(200);
  dmh_subtask *st = sa_case_start(&c, NULL, 1);
  unsigned s = 12345;
  double worst_pause = 0, worst_resume = 0;
  int bad_stage = 0, lock_errors = 0;
  for (int round = 0; round < 30; round++) {
    dm_error err;
    if (dmh_subtask_stage(st) == DMH_STAGE_PAUSED) {
      /* paused by an error since the last resume: only a resumable one (a deadlock between the
       * workers on the target) is tolerated, and counted; never a duplicate key */
      char msg[600], raw[600];
      bool resumable = false;
      int code = lt_first_error(st, msg, sizeof msg, raw, sizeof raw, &resumable);
      fprintf(stderr, "round %d: paused by error %d (%s): %s (%s)\n", round, code,
              resumable ? "resumable" : "not resumable", msg, raw);
      CU_ASSERT(code != 0 && resumable);
      CU_ASSERT_PTR_NULL(strstr(raw, "Duplicate entry"));
      CU_ASSERT_PTR_NULL(strstr(msg, "Duplicate entry"));
      lock_errors++;
    } else {
      sa_assert_no_error(st, "before pause");
      CU_ASSERT_EQUAL(dmh_subtask_stage(st), DMH_STAGE_RUNNING);
    }
    double p0 = lt_now();
    int rc = dmh_subtask_pause(st, &err);
    double p = lt_now() - p0;
    if (rc != 0)
      fprintf(stderr, "round %d: pause: %s\n", round, err.message);
    CU_ASSERT_EQUAL(rc, 0);
    dmh_stage stage = dmh_subtask_stage(st);
    if (stage != DMH_STAGE_PAUSED) {
      bad_stage++;
      fprintf(stderr, "round %d: stage %s after pause returned\n", round, dmh_stage_name(stage));
    }
    CU_ASSERT_EQUAL(stage, DMH_STAGE_PAUSED);
    CU_ASSERT(dmh_subtask_manually_paused(st));
    if (p > worst_pause)
      worst_pause = p;
    lt_sleep_ms((int)(sa_rand(&s) % 120));
    CU_ASSERT_EQUAL(dmh_subtask_stage(st), DMH_STAGE_PAUSED); /* nothing moved it meanwhile */
    double r0 = lt_now();
    rc = dmh_subtask_resume(st, &err);
    if (rc != 0)
      fprintf(stderr, "round %d: resume: %s\n", round, err.message);
    CU_ASSERT_EQUAL(rc, 0);
    double r = lt_now() - r0;
    if (r > worst_resume)
      worst_resume = r;
    lt_sleep_ms((int)(sa_rand(&s) % 150));
  }
  CU_ASSERT_EQUAL(bad_stage, 0);
  long long rows = lt_status_int(st, "totalRows");
  sa_writer_stop(w);
  double caught = sa_catch_up(st, db, db, 60000);
  sa_assert_no_error(st, "after the storm");
  CU_ASSERT_EQUAL(dmh_subtask_stage(st), DMH_STAGE_RUNNING);
  fprintf(stderr,
          "storm: 30 rounds, longest pause %.3f s, longest resume %.3f s, %lld rows synced in the "
          "last run, catch-up %.2f s, %d round(s) found it paused by a resumable error\n",
          worst_pause, worst_resume, rows, caught, lock_errors);
  CU_ASSERT(worst_pause < 5.0);
  sa_assert_equal(db);
  sa_case_end(&c, st);
}

/* Row changes of a table without a key: each UPDATE .. LIMIT 1 scans the table and locks every
 * row it reads (InnoDB), so two workers that both changed such a table in one batch would deadlock
 * on the target. The unit gives all changes of a keyless table one causality group (one worker);
 * written when they were spread by whole-row causality, this test checks the result: no error at
 * all, and the target equal to the source. */
static void test_keyless_workers(void) {
  const char *db = "h6_sa_keyless";
  sa_case c;
  sa_case_begin(&c, db, false, sa_sup_manual);
  dmh_subtask *st = sa_case_start(&c, NULL, 0);
  /* 400 transactions, each: a new row, and an update of an old one found by its value */
  MYSQL *m = lt_source();
  CU_ASSERT_FATAL(m != NULL);
  lt_exec(m, "USE `%s`", db);
  for (int i = 0; i < 400; i++)
    lt_exec(m,
            "START TRANSACTION; INSERT INTO t_nokey VALUES (%d, 'burst', %d); "
            "UPDATE t_nokey SET c = c + 1 WHERE a = %d AND c = %d; COMMIT",
            5000 + i, i, (i + 1) % 1000, i + 1); /* initially a = seq % 1000, c = seq */
  testdb_close(m);
  /* the unit gets there, or pauses with the error */
  double end = lt_now() + 30;
  while (lt_now() < end && dmh_subtask_stage(st) == DMH_STAGE_RUNNING &&
         lt_count(dst, "SELECT COUNT(*) FROM `%s`.t_nokey WHERE b = 'burst'", db) < 400)
    lt_sleep_ms(20);
  char msg[600], raw[600];
  bool resumable = false;
  int code = lt_first_error(st, msg, sizeof msg, raw, sizeof raw, &resumable);
  if (code != 0)
    fprintf(stderr, "keyless: stage %s, error %d (%s): %s (%s)\n",
            dmh_stage_name(dmh_subtask_stage(st)), code, resumable ? "resumable" : "not resumable",
            msg, raw);
  CU_ASSERT_EQUAL(code, 0);
  CU_ASSERT_EQUAL(dmh_subtask_stage(st), DMH_STAGE_RUNNING);
  double caught = sa_catch_up(st, db, db, 60000); /* resumes after such an error */
  fprintf(stderr, "keyless: catch-up %.2f s\n", caught);
  sa_assert_equal(db);
  sa_case_end(&c, st);
}

/* SYNC_ALL_ONLY=word runs only the tests whose name holds it. */
int main(void) {
  static const dmh_cunit_test tests[] = {
      {"mode all with writes going on, source read directly", test_mode_all_direct},
      {"mode all with writes going on, relay on", test_mode_all_relay},
      {"pause/resume storm during sync", test_pause_resume_storm},
      {"workers do not fail each other on a table without a key", test_keyless_workers},
  };
  static const dmh_cunit_suite suite = {"sync_all_writes", sa_suite_init, sa_suite_clean, tests,
                                        sizeof tests / sizeof tests[0]};
  return dmh_cunit_run_suites(&suite, 1, "SYNC_ALL_ONLY");
}

/*
 * test_supervisor's cases of the relay (supervisor_cases.h): the catch-up wait between load and
 * sync, and the relay file a task holds while its dump and load run. Fake units, as in
 * test_supervisor.c.
 */
#include <CUnit/Basic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "dmhost/relay_folder.h"
#include "dmhost/relay_purge.h"
#include "dmhost/relay_reader.h"
#include "supervisor_cases.h"

/* ---- relay catch-up between load and sync ---- */

void test_relay_catchup_reached(void) {
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
void test_relay_hold_during_dump(void) {
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
void test_relay_catchup_at_master(void) {
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

void test_relay_catchup_timeout(void) {
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
void test_relay_catchup_one_status_per_poll(void) {
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

void test_relay_catchup_interrupted_by_stop(void) {
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
void test_relay_catchup_pause_resume(void) {
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

/*
 * The relay unit when its upstream changes, against a PRIVATE pair of servers this test starts
 * (scripts/mariadb.sh with its own DMH_DB_DIR and ports) and stops: it restarts the source with
 * another server_id and runs RESET MASTER, which must never happen to the shared servers.
 *   - another server_id (DM's uuid "<domain>-<server_id>" changes): a new sub-folder
 *     <uuid>.000002 listed in server-uuid.index, continued from the relay's GTID set; its files
 *     byte for byte the new upstream's;
 *   - RESET MASTER while the relay streams, and again while it is paused: the source's history no
 *     longer holds the relay log; a new sub-folder each time, from the source's first binlog, and
 *     the relay keeps pulling (files identical to the new upstream's, the subtask never failed).
 */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cunit_run.h"
#include "dmhost/sdk.h"
#include "relay_test_util.h"
#include "testdb.h"

static char up_db_dir[128];
static bool up_started;

static void up_sleep_ms(int ms) {
  struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static int up_mariadb(const char *env, const char *cmd) {
  char line[512];
  snprintf(line, sizeof line, "%s bash '%s' %s >'%s/mariadb.sh.log' 2>&1", env ? env : "",
           MARIADB_SH, cmd, up_db_dir);
  int rc = system(line);
  if (rc != 0) {
    snprintf(line, sizeof line, "cat '%s/mariadb.sh.log' >&2", up_db_dir);
    if (system(line) != 0)
      fprintf(stderr, "mariadb.sh %s failed\n", cmd);
  }
  return rc;
}

/* A private set of servers on free ports (mariadb.sh refuses taken ones: try a few). */
static int up_suite_init(void) {
  snprintf(up_db_dir, sizeof up_db_dir, "/tmp/dmh-relay-up-XXXXXX");
  if (!mkdtemp(up_db_dir))
    return -1;
  setenv("DMH_DB_DIR", up_db_dir, 1);
  srand((unsigned)getpid() ^ (unsigned)time(NULL));
  for (int attempt = 0; attempt < 5 && !up_started; attempt++) {
    if (attempt > 0)
      up_mariadb(NULL, "stop"); /* the half of the pair that did start holds the data dir */
    /* below the kernel's ephemeral range (32768-60999), where outgoing connections take ports */
    int port = 20000 + 3 * (rand() % 4000);
    char p[16];
    snprintf(p, sizeof p, "%d", port);
    setenv("DMH_SOURCE_PORT", p, 1);
    snprintf(p, sizeof p, "%d", port + 1);
    setenv("DMH_TARGET_PORT", p, 1);
    /* mariadb.sh starts the second source too: on a port of the pair's own, never the shared
     * fixture's (which another test may have started: then every attempt failed) */
    snprintf(p, sizeof p, "%d", port + 2);
    setenv("DMH_SOURCE2_PORT", p, 1);
    up_started = up_mariadb(NULL, "start") == 0;
  }
  return up_started ? 0 : -1;
}

static int up_suite_clean(void) {
  if (up_started)
    up_mariadb(NULL, "stop");
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", up_db_dir);
  if (!getenv("RELAY_TEST_KEEP") && system(cmd) != 0)
    fprintf(stderr, "could not remove %s\n", up_db_dir);
  return 0;
}

/* Wait until the index lists `n` sub-folders and the newest one's relay.meta reaches the source's
 * position. */
static int up_wait(rt_env *e, MYSQL *c, int n, int timeout_ms) {
  dm_position target;
  if (rt_master_pos(c, &target) < 0)
    return -1;
  char subs[16][256];
  int have = 0;
  for (int waited = 0; waited < timeout_ms; waited += 100) {
    have = rt_relay_index(e, subs, 16);
    if (have == n)
      return rt_wait_relay(e, &target, timeout_ms - waited);
    up_sleep_ms(100);
  }
  fprintf(stderr, "the index lists %d sub-folders, not %d, after %d ms\n", have, n, timeout_ms);
  return -1;
}

static bool up_running(dmh_subtask *relay) {
  return dmh_subtask_stage(relay) == DMH_STAGE_RUNNING;
}

/* The source restarts as server 7: sub-folder 0-7.000002 follows 0-1.000001, continued from the
 * relay's GTID set (a mid-file start with a filler), identical to the new upstream's files. */
static void test_server_id_switch(void) {
  rt_env e;
  CU_ASSERT_EQUAL_FATAL(rt_setup(&e, "relay_up_sid", "heartbeat-period = 1; backoff-max = 1;"), 0);
  MYSQL *c = testdb_connect(TESTDB_SOURCE);
  CU_ASSERT_PTR_NOT_NULL_FATAL(c);
  testdb_recreate_db(c, e.name);
  dmh_subtask *relay = rt_relay_start(&e);
  CU_ASSERT_PTR_NOT_NULL_FATAL(relay);
  CU_ASSERT_EQUAL(rt_workload(c, e.name, 150, 1), 0);
  CU_ASSERT_EQUAL(up_wait(&e, c, 1, 30000), 0);
  dm_position before;
  char sub1[256];
  CU_ASSERT_EQUAL(rt_relay_meta(&e, sub1, sizeof sub1, &before), 0);
  CU_ASSERT_STRING_EQUAL(sub1, "0-1.000001");
  char gtid[256];
  CU_ASSERT_EQUAL(testdb_query_value(c, gtid, sizeof gtid, "SELECT @@gtid_binlog_pos"), 0);
  CU_ASSERT_STRING_EQUAL(before.gtid, gtid); /* the old sub-folder holds everything of server 1 */
  testdb_close(c);

  CU_ASSERT_EQUAL_FATAL(up_mariadb("DMH_SOURCE_SERVER_ID=7", "restart-source"), 0);
  c = testdb_connect(TESTDB_SOURCE);
  CU_ASSERT_PTR_NOT_NULL_FATAL(c);
  long long sid = 0;
  CU_ASSERT_EQUAL(testdb_query_int(c, &sid, "SELECT @@server_id"), 0);
  CU_ASSERT_EQUAL(sid, 7);
  CU_ASSERT_EQUAL(rt_workload(c, e.name, 150, 2), 0);
  CU_ASSERT_EQUAL(testdb_exec(c, "FLUSH LOGS"), 0);
  CU_ASSERT_EQUAL(rt_workload(c, e.name, 100, 3), 0);
  CU_ASSERT_EQUAL_FATAL(up_wait(&e, c, 2, 60000), 0);
  CU_ASSERT_TRUE(up_running(relay));

  char subs[4][256];
  CU_ASSERT_EQUAL(rt_relay_index(&e, subs, 4), 2);
  CU_ASSERT_STRING_EQUAL(subs[0], "0-1.000001");
  CU_ASSERT_STRING_EQUAL(subs[1], "0-7.000002");
  uint64_t bytes = 0;
  int mid = 0;
  /* the old sub-folder is still the old upstream's files up to its relay.meta */
  CU_ASSERT(rt_compare_sub(&e, "0-1.000001", &bytes, NULL) >= 1);
  /* the new one: a GTID start from the old one's set (the source resolves it to the start of the
   * file the restart began, or mid-file with a filler before), and the file FLUSH LOGS closed */
  CU_ASSERT(rt_compare_sub(&e, "0-7.000002", &bytes, &mid) >= 2);
  CU_ASSERT(mid <= 1);
  CU_ASSERT(bytes > 10000);
  dm_position after;
  CU_ASSERT_EQUAL(rt_relay_meta(&e, NULL, 0, &after), 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(after.gtid, "0-7-")); /* the new server's transactions */
  CU_ASSERT_EQUAL(testdb_query_value(c, gtid, sizeof gtid, "SELECT @@gtid_binlog_pos"), 0);
  CU_ASSERT_STRING_EQUAL(after.gtid, gtid);
  dm_error err;
  CU_ASSERT_EQUAL(dmh_subtask_stop(relay, &err), 0);
  dmh_subtask_destroy(relay);
  testdb_close(c);
  rt_teardown(&e);
}

/* RESET MASTER while the relay streams (the dump thread answers "could not find next log"), then
 * while it is paused (found at connect time): a new sub-folder each time, from mysql-bin.000001,
 * whole files identical to the new upstream's; the relay never stops. */
static void test_reset_master(void) {
  rt_env e;
  CU_ASSERT_EQUAL_FATAL(rt_setup(&e, "relay_up_reset", "heartbeat-period = 1; backoff-max = 1;"),
                        0);
  MYSQL *c = testdb_connect(TESTDB_SOURCE);
  CU_ASSERT_PTR_NOT_NULL_FATAL(c);
  testdb_recreate_db(c, e.name);
  char uuid[64];
  long long sid = 0;
  CU_ASSERT_EQUAL(testdb_query_int(c, &sid, "SELECT @@server_id"), 0);
  snprintf(uuid, sizeof uuid, "0-%lld", sid);
  dmh_subtask *relay = rt_relay_start(&e);
  CU_ASSERT_PTR_NOT_NULL_FATAL(relay);
  CU_ASSERT_EQUAL(rt_workload(c, e.name, 200, 4), 0);
  CU_ASSERT_EQUAL(testdb_exec(c, "FLUSH LOGS"), 0);
  CU_ASSERT_EQUAL(rt_workload(c, e.name, 50, 5), 0);
  CU_ASSERT_EQUAL_FATAL(up_wait(&e, c, 1, 30000), 0);

  /* live */
  CU_ASSERT_EQUAL_FATAL(testdb_exec(c, "RESET MASTER"), 0);
  CU_ASSERT_EQUAL(rt_workload(c, e.name, 100, 6), 0);
  CU_ASSERT_EQUAL(testdb_exec(c, "FLUSH LOGS"), 0);
  CU_ASSERT_EQUAL(rt_workload(c, e.name, 50, 7), 0);
  CU_ASSERT_EQUAL_FATAL(up_wait(&e, c, 2, 60000), 0);
  CU_ASSERT_TRUE(up_running(relay));
  char subs[4][256], want[300];
  CU_ASSERT_EQUAL(rt_relay_index(&e, subs, 4), 2);
  snprintf(want, sizeof want, "%s.000002", uuid);
  CU_ASSERT_STRING_EQUAL(subs[1], want);
  uint64_t bytes = 0;
  int mid = -1;
  CU_ASSERT_EQUAL(rt_compare_sub(&e, subs[1], &bytes, &mid), 2); /* mysql-bin.000001, 000002 */
  CU_ASSERT_EQUAL(mid, 0);                                       /* from the first byte */
  dm_position p;
  CU_ASSERT_EQUAL(rt_relay_meta(&e, NULL, 0, &p), 0);
  CU_ASSERT_STRING_EQUAL(p.name, "mysql-bin.000002");
  char gtid[256];
  CU_ASSERT_EQUAL(testdb_query_value(c, gtid, sizeof gtid, "SELECT @@gtid_binlog_pos"), 0);
  CU_ASSERT_STRING_EQUAL(p.gtid, gtid);

  /* while paused: found when the relay connects again */
  dm_error err;
  CU_ASSERT_EQUAL(dmh_subtask_pause(relay, &err), 0);
  CU_ASSERT_EQUAL_FATAL(testdb_exec(c, "RESET MASTER"), 0);
  CU_ASSERT_EQUAL(rt_workload(c, e.name, 80, 8), 0);
  CU_ASSERT_EQUAL(dmh_subtask_resume(relay, &err), 0);
  CU_ASSERT_EQUAL_FATAL(up_wait(&e, c, 3, 60000), 0);
  CU_ASSERT_TRUE(up_running(relay));
  CU_ASSERT_EQUAL(rt_relay_index(&e, subs, 4), 3);
  snprintf(want, sizeof want, "%s.000003", uuid);
  CU_ASSERT_STRING_EQUAL(subs[2], want);
  CU_ASSERT_EQUAL(rt_compare_sub(&e, subs[2], &bytes, &mid), 1);
  CU_ASSERT_EQUAL(mid, 0);
  /* the previous sub-folder stays as it was (the source's files of those names are gone) */
  char path[700];
  snprintf(path, sizeof path, "%s/%s/mysql-bin.000002", e.relay_dir, subs[1]);
  CU_ASSERT_EQUAL(access(path, F_OK), 0);

  /* and it keeps pulling */
  CU_ASSERT_EQUAL(rt_workload(c, e.name, 50, 9), 0);
  CU_ASSERT_EQUAL(up_wait(&e, c, 3, 30000), 0);
  CU_ASSERT_EQUAL(rt_compare_sub(&e, subs[2], &bytes, NULL), 1);
  CU_ASSERT_EQUAL(dmh_subtask_stop(relay, &err), 0);
  dmh_subtask_destroy(relay);
  testdb_close(c);
  rt_teardown(&e);
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"source restarted with another server_id: new sub-folder", test_server_id_switch},
      {"RESET MASTER live and while paused: new sub-folders", test_reset_master},
  };
  return dmh_cunit_run("relay_upstream", up_suite_init, up_suite_clean, tests,
                       sizeof tests / sizeof tests[0]);
}

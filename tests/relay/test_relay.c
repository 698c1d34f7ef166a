/*
 * The relay unit against the real source (FIXTURES_REQUIRED mariadb): relay files byte for byte
 * equal to the source's binlog files after a write workload with rotations; kill -9 mid-stream and
 * restart, several times; a restart of the source mid-stream; a damaged relay file recovered; a
 * prompt pause with no traffic; the status the host's catch-up wait reads.
 */
#include <CUnit/Basic.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cunit_run.h"
#include "dmhost/binlog.h"
#include "dmhost/relay_folder.h"
#include "dmhost/relay_reader.h"
#include "dmhost/sdk.h"
#include "registry.h"
#include "relay_test_util.h"
#include "testdb.h"

static double t_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void t_sleep_ms(int ms) {
  struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* Workload, FLUSH LOGS, workload; the relay reaches the source; files identical. */
static void test_identical_with_rotation(void) {
  rt_env e;
  CU_ASSERT_EQUAL_FATAL(rt_setup(&e, "relay_ident", "status-interval = 100;"), 0);
  MYSQL *c = testdb_connect(TESTDB_SOURCE);
  CU_ASSERT_PTR_NOT_NULL_FATAL(c);
  testdb_recreate_db(c, e.name);
  dmh_subtask *relay = rt_relay_start(&e);
  CU_ASSERT_PTR_NOT_NULL_FATAL(relay);
  CU_ASSERT_EQUAL(rt_workload(c, e.name, 300, 1), 0);
  CU_ASSERT_EQUAL(testdb_exec(c, "FLUSH LOGS"), 0);
  CU_ASSERT_EQUAL(rt_workload(c, e.name, 300, 2), 0);
  dm_position target;
  CU_ASSERT_EQUAL(rt_master_pos(c, &target), 0);
  CU_ASSERT_EQUAL(rt_wait_relay(&e, &target, 30000), 0);
  uint64_t bytes = 0;
  int files = rt_compare(&e, &bytes);
  CU_ASSERT(files >= 2); /* FLUSH LOGS made at least one closed file */
  CU_ASSERT(bytes > 100000);
  /* the status the host's catch-up wait reads */
  dm_position rp, mp;
  bool caught = false;
  for (int i = 0; i < 100 && !caught; i++) {
    dmh_relay_progress rprog;
    caught = dmh_subtask_relay_progress(relay, &rprog) && rprog.caught_up;
    if (!caught)
      t_sleep_ms(50);
  }
  CU_ASSERT_TRUE(caught);
  CU_ASSERT_TRUE(dmh_subtask_unit_position(relay, DM_UNIT_RELAY, DM_STATUS_RELAY_BINLOG, &rp));
  CU_ASSERT_TRUE(dmh_subtask_unit_position(relay, DM_UNIT_RELAY, DM_STATUS_MASTER_BINLOG, &mp));
  CU_ASSERT(dm_position_compare_file(&rp, &target) >= 0);
  CU_ASSERT(rp.gtid[0] != '\0');
  json_object *js = dmh_subtask_status_json(relay);
  const char *txt = json_object_to_json_string(js);
  CU_ASSERT_PTR_NOT_NULL(strstr(txt, "relaySubDir"));
  CU_ASSERT_PTR_NOT_NULL(strstr(txt, "masterBinlogGtid"));
  json_object_put(js);
  /* pause is prompt with no traffic */
  dm_error err;
  double t0 = t_now();
  CU_ASSERT_EQUAL(dmh_subtask_pause(relay, &err), 0);
  CU_ASSERT(t_now() - t0 < 2.0);
  CU_ASSERT_EQUAL(rt_workload(c, e.name, 50, 3), 0);
  CU_ASSERT_EQUAL(dmh_subtask_resume(relay, &err), 0);
  CU_ASSERT_EQUAL(rt_master_pos(c, &target), 0);
  CU_ASSERT_EQUAL(rt_wait_relay(&e, &target, 30000), 0);
  CU_ASSERT(rt_compare(&e, &bytes) >= 2);
  dmh_subtask_destroy(relay);
  testdb_execf(c, "DROP DATABASE `%s`", e.name);
  testdb_close(c);
  rt_teardown(&e);
}

/* kill -9 of the process mid-stream, restart, several times: still identical. */
static void test_kill9_restarts(void) {
  rt_env e;
  CU_ASSERT_EQUAL_FATAL(rt_setup(&e, "relay_kill9", "fsync = \"never\";"), 0);
  MYSQL *c = testdb_connect(TESTDB_SOURCE);
  CU_ASSERT_PTR_NOT_NULL_FATAL(c);
  testdb_recreate_db(c, e.name);
  for (int round = 0; round < 5; round++) {
    CU_ASSERT_EQUAL_FATAL(rt_driver_start(&e), 0);
    CU_ASSERT_EQUAL(rt_workload(c, e.name, 150, 10 + round), 0);
    if (round == 2)
      CU_ASSERT_EQUAL(testdb_exec(c, "FLUSH LOGS"), 0);
    t_sleep_ms(50 + 97 * round % 300);
    rt_driver_kill9(&e);
  }
  CU_ASSERT_EQUAL(rt_workload(c, e.name, 100, 99), 0);
  CU_ASSERT_EQUAL_FATAL(rt_driver_start(&e), 0);
  dm_position target;
  CU_ASSERT_EQUAL(rt_master_pos(c, &target), 0);
  CU_ASSERT_EQUAL(rt_wait_relay(&e, &target, 30000), 0);
  uint64_t bytes = 0;
  CU_ASSERT(rt_compare(&e, &bytes) >= 2);
  CU_ASSERT_EQUAL(rt_driver_stop(&e), 0);
  /* after a clean stop, relay.meta still matches the file */
  CU_ASSERT(rt_compare(&e, &bytes) >= 2);
  testdb_execf(c, "DROP DATABASE `%s`", e.name);
  testdb_close(c);
  rt_teardown(&e);
}

/* Damaged relay files: the tail truncated mid-event, a byte flipped inside the last transaction;
 * restart recovers (truncates, fetches again) and the files are identical again. */
static void test_damaged_file_recovered(void) {
  rt_env e;
  CU_ASSERT_EQUAL_FATAL(rt_setup(&e, "relay_damage", ""), 0);
  MYSQL *c = testdb_connect(TESTDB_SOURCE);
  CU_ASSERT_PTR_NOT_NULL_FATAL(c);
  testdb_recreate_db(c, e.name);
  dmh_subtask *relay = rt_relay_start(&e);
  CU_ASSERT_PTR_NOT_NULL_FATAL(relay);
  CU_ASSERT_EQUAL(rt_workload(c, e.name, 200, 5), 0);
  dm_position target, meta;
  CU_ASSERT_EQUAL(rt_master_pos(c, &target), 0);
  CU_ASSERT_EQUAL(rt_wait_relay(&e, &target, 30000), 0);
  dm_error err;
  CU_ASSERT_EQUAL(dmh_subtask_stop(relay, &err), 0);
  char sub[256], path[900];
  CU_ASSERT_EQUAL_FATAL(rt_relay_meta(&e, sub, sizeof sub, &meta), 0);
  snprintf(path, sizeof path, "%s/%s/%s", e.relay_dir, sub, meta.name);
  /* 1: cut the last 10 bytes (mid-event) */
  CU_ASSERT_EQUAL(truncate(path, (off_t)meta.pos - 10), 0);
  CU_ASSERT_EQUAL(dmh_subtask_resume(relay, &err), 0);
  CU_ASSERT_EQUAL(rt_wait_relay(&e, &target, 30000), 0);
  uint64_t bytes;
  CU_ASSERT(rt_compare(&e, &bytes) >= 1);
  CU_ASSERT_EQUAL(dmh_subtask_stop(relay, &err), 0);
  /* 2: flip a byte 200 bytes before the end: the SDK reader names the offset... */
  CU_ASSERT_EQUAL_FATAL(rt_relay_meta(&e, sub, sizeof sub, &meta), 0);
  snprintf(path, sizeof path, "%s/%s/%s", e.relay_dir, sub, meta.name);
  int fd = open(path, O_RDWR);
  CU_ASSERT_FATAL(fd >= 0);
  unsigned char b;
  CU_ASSERT_EQUAL(pread(fd, &b, 1, (off_t)meta.pos - 200), 1);
  b ^= 0x5a;
  CU_ASSERT_EQUAL(pwrite(fd, &b, 1, (off_t)meta.pos - 200), 1);
  close(fd);
  dm_binlog_reader *rd = NULL;
  CU_ASSERT_EQUAL_FATAL(dm_binlog_reader_open_file(&rd, path, NULL, &err), 0);
  dm_binlog_event ev;
  int rc;
  while ((rc = dm_binlog_reader_next(rd, &ev, &err)) == 1)
    ;
  CU_ASSERT_EQUAL(rc, -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_BINLOG_CORRUPT);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, meta.name));
  dm_binlog_reader_close(rd);
  /* ...and the relay recovers on its next start */
  CU_ASSERT_EQUAL(dmh_subtask_resume(relay, &err), 0);
  CU_ASSERT_EQUAL(rt_workload(c, e.name, 20, 6), 0);
  CU_ASSERT_EQUAL(rt_master_pos(c, &target), 0);
  CU_ASSERT_EQUAL(rt_wait_relay(&e, &target, 30000), 0);
  CU_ASSERT(rt_compare(&e, &bytes) >= 1);
  dmh_subtask_destroy(relay);
  testdb_execf(c, "DROP DATABASE `%s`", e.name);
  testdb_close(c);
  rt_teardown(&e);
}

/* The source restarts mid-stream: the relay reconnects (inside process, the subtask stays
 * Running) and the files are identical. */
static void test_source_restart(void) {
  rt_env e;
  CU_ASSERT_EQUAL_FATAL(rt_setup(&e, "relay_srcrst", "heartbeat-period = 1; backoff-max = 1;"), 0);
  MYSQL *c = testdb_connect(TESTDB_SOURCE);
  CU_ASSERT_PTR_NOT_NULL_FATAL(c);
  testdb_recreate_db(c, e.name);
  dmh_subtask *relay = rt_relay_start(&e);
  CU_ASSERT_PTR_NOT_NULL_FATAL(relay);
  CU_ASSERT_EQUAL(rt_workload(c, e.name, 200, 7), 0);
  testdb_close(c);
  CU_ASSERT_EQUAL(system("bash " MARIADB_SH " restart-source >/dev/null"), 0);
  c = testdb_connect(TESTDB_SOURCE);
  CU_ASSERT_PTR_NOT_NULL_FATAL(c);
  CU_ASSERT_EQUAL(rt_workload(c, e.name, 200, 8), 0);
  dm_position target;
  CU_ASSERT_EQUAL(rt_master_pos(c, &target), 0);
  CU_ASSERT_EQUAL(rt_wait_relay(&e, &target, 60000), 0);
  CU_ASSERT_EQUAL(dmh_subtask_stage(relay), DMH_STAGE_RUNNING);
  uint64_t bytes;
  CU_ASSERT(rt_compare(&e, &bytes) >= 2); /* the restart rotated the binlog */
  dmh_subtask_destroy(relay);
  testdb_execf(c, "DROP DATABASE `%s`", e.name);
  testdb_close(c);
  rt_teardown(&e);
}

/* purge-relay through the registry: refused while a reader needs a file, then removes the files
 * before FILE; the relay keeps running and its files stay identical. */
static void test_purge_relay_command(void) {
  rt_env e;
  CU_ASSERT_EQUAL_FATAL(rt_setup(&e, "relay_purgecmd", ""), 0);
  MYSQL *c = testdb_connect(TESTDB_SOURCE);
  CU_ASSERT_PTR_NOT_NULL_FATAL(c);
  testdb_recreate_db(c, e.name);
  char state[400];
  snprintf(state, sizeof state, "%s/state", e.dir);
  /* the builds' folder is the daemon's plugin folder: it loads units only from there */
  char plugins[512];
  snprintf(plugins, sizeof plugins, "%s", RELAY_SO);
  *strrchr(plugins, '/') = '\0';
  dmh_registry_opts ro = {.state_dir = state, .plugin_dir = plugins};
  dmh_registry *reg = NULL;
  dm_error err;
  CU_ASSERT_EQUAL_FATAL(dmh_registry_open(&ro, &reg, &err), 0);
  json_object *resp = json_object_new_object();
  CU_ASSERT_EQUAL(dmh_registry_source_create(reg, e.source_cfg, resp, &err), 0);
  json_object_put(resp);
  for (int i = 0; i < 3; i++) {
    CU_ASSERT_EQUAL(rt_workload(c, e.name, 40, 30 + i), 0);
    CU_ASSERT_EQUAL(testdb_exec(c, "FLUSH LOGS"), 0);
  }
  dm_position target;
  CU_ASSERT_EQUAL(rt_master_pos(c, &target), 0);
  CU_ASSERT_EQUAL_FATAL(rt_wait_relay(&e, &target, 30000), 0);
  char sub[256], first[256] = "", second[256] = "", path[900];
  dm_position meta;
  CU_ASSERT_EQUAL_FATAL(rt_relay_meta(&e, sub, sizeof sub, &meta), 0);
  /* the relay's oldest two files */
  dm_relay_file *files;
  int n_files;
  CU_ASSERT_EQUAL_FATAL(dm_relay_files(e.relay_dir, sub, &files, &n_files, &err), 0);
  CU_ASSERT_FATAL(n_files >= 2);
  dm_strlcpy(first, files[0].name, sizeof first);
  dm_strlcpy(second, files[1].name, sizeof second);
  free(files);
  CU_ASSERT_EQUAL_FATAL(dm_relay_reader_register(e.relay_dir, "sync-t1", sub, first, 0600, &err),
                        0);
  resp = json_object_new_object();
  CU_ASSERT_EQUAL(dmh_registry_relay_purge(reg, e.name, second, resp, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_RELAY_PURGE_IN_USE);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "reader sync-t1"));
  json_object_put(resp);
  CU_ASSERT_EQUAL(dm_relay_reader_remove(e.relay_dir, "sync-t1", &err), 0);
  resp = json_object_new_object();
  CU_ASSERT_EQUAL(dmh_registry_relay_purge(reg, e.name, second, resp, &err), 0);
  json_object *v = NULL;
  CU_ASSERT_TRUE(json_object_object_get_ex(resp, "removed", &v));
  CU_ASSERT_EQUAL(json_object_get_int(v), 1);
  json_object_put(resp);
  snprintf(path, sizeof path, "%s/%s/%s", e.relay_dir, sub, first);
  CU_ASSERT_NOT_EQUAL(access(path, F_OK), 0);
  snprintf(path, sizeof path, "%s/%s/%s", e.relay_dir, sub, second);
  CU_ASSERT_EQUAL(access(path, F_OK), 0);
  /* the relay was resumed: it follows new writes */
  CU_ASSERT_EQUAL(rt_workload(c, e.name, 40, 40), 0);
  CU_ASSERT_EQUAL(rt_master_pos(c, &target), 0);
  CU_ASSERT_EQUAL(rt_wait_relay(&e, &target, 30000), 0);
  uint64_t bytes;
  CU_ASSERT(rt_compare(&e, &bytes) >= 2);
  dmh_registry_shutdown(reg);
  testdb_execf(c, "DROP DATABASE `%s`", e.name);
  testdb_close(c);
  rt_teardown(&e);
}

#ifdef FAKE_SYNC_SO
/* Mode all with the real dump and load and a fake sync: the supervisor's catch-up wait between
 * load and sync is released by the real relay reaching the dump's end position. */
static void test_catchup_mode_all(void) {
  rt_env e;
  CU_ASSERT_EQUAL_FATAL(rt_setup(&e, "relay_catchup", "status-interval = 100;"), 0);
  MYSQL *c = testdb_connect(TESTDB_SOURCE), *t = testdb_connect(TESTDB_TARGET);
  CU_ASSERT_PTR_NOT_NULL_FATAL(c);
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  testdb_recreate_db(c, e.name);
  testdb_execf(t, "DROP DATABASE IF EXISTS `%s`; DROP DATABASE IF EXISTS `%s_meta`", e.name,
               e.name);
  CU_ASSERT_EQUAL(rt_workload(c, e.name, 100, 21), 0);
  dmh_subtask *relay = rt_relay_start(&e);
  CU_ASSERT_PTR_NOT_NULL_FATAL(relay);
  testdb_params tp;
  testdb_params_get(TESTDB_TARGET, &tp);
  char path[400], root[400];
  snprintf(path, sizeof path, "%s/task.cfg", e.dir);
  snprintf(root, sizeof root, "%s/task-work", e.dir);
  FILE *fp = fopen(path, "w");
  CU_ASSERT_PTR_NOT_NULL_FATAL(fp);
  fprintf(fp,
          "name = \"%s\";\ntask-mode = \"all\";\nmeta-schema = \"%s_meta\";\n"
          "target-database = { host = \"%s\"; port = %u; user = \"%s\"; password = \"%s\"; };\n"
          "mysql-instances = ( { source-id = \"%s\"; block-allow-list = \"b\"; } );\n"
          "block-allow-list = { b = { do-dbs = [\"%s\"]; }; };\n"
          "unit-paths = { dump = \"%s\"; load = \"%s\"; sync = \"%s\"; };\n"
          "supervisor = { init-timeout = 10; stop-timeout = 5; relay-catchup-timeout = 60; "
          "relay-catchup-poll = 50; auto-resume = { enable = false; }; };\n"
          "sync = { items = 0; item-ms = 20; };\n",
          e.name, e.name, tp.host, tp.port, tp.user, tp.password, e.name, e.name, DUMP_SO, LOAD_SO,
          FAKE_SYNC_SO);
  fclose(fp);
  dmh_task_config *task = NULL;
  dm_error err;
  CU_ASSERT_EQUAL_FATAL(dmh_task_config_load(path, &task, &err), 0);
  dmh_subtask_opts o = {.task = task, .source = e.source, .work_root = root, .relay = relay};
  dmh_subtask *st = dmh_subtask_create(&o, &err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(st);
  CU_ASSERT_EQUAL(dmh_subtask_start(st, &err), 0);
  /* more writes while dump and load run: the relay must get past the dump's end position */
  CU_ASSERT_EQUAL(rt_workload(c, e.name, 50, 22), 0);
  bool in_sync = false;
  char out[500];
  snprintf(out, sizeof out, "%s/sync/out.log", root);
  for (int i = 0; i < 1200 && !in_sync; i++) {
    struct stat sb;
    in_sync = stat(out, &sb) == 0 && sb.st_size > 0;
    if (!in_sync)
      t_sleep_ms(50);
  }
  CU_ASSERT_TRUE(in_sync);
  json_object *js = dmh_subtask_status_json(st), *v = NULL;
  CU_ASSERT_TRUE(json_object_object_get_ex(js, "unit", &v));
  CU_ASSERT_STRING_EQUAL(json_object_get_string(v), "Sync");
  CU_ASSERT_TRUE(json_object_object_get_ex(js, "waitingRelayCatchUp", &v));
  CU_ASSERT_FALSE(json_object_get_boolean(v));
  if (!in_sync)
    fprintf(stderr, "status: %s\n", json_object_to_json_string(js));
  json_object_put(js);
  dmh_subtask_destroy(st);
  dmh_task_config_free(task);
  dmh_subtask_destroy(relay);
  testdb_execf(c, "DROP DATABASE `%s`", e.name);
  testdb_execf(t, "DROP DATABASE IF EXISTS `%s`; DROP DATABASE IF EXISTS `%s_meta`", e.name,
               e.name);
  testdb_close(c);
  testdb_close(t);
  rt_teardown(&e);
}
#endif

/* RELAY_TEST_ONLY=word runs only the tests whose name holds it (the source restart disturbs
 * everything else using the servers). */
int main(void) {
  static const dmh_cunit_test tests[] = {
      {"identical with rotation, status, prompt pause", test_identical_with_rotation},
      {"kill -9 and restart several times", test_kill9_restarts},
      {"damaged file recovered", test_damaged_file_recovered},
      {"purge-relay command", test_purge_relay_command},
      {"source restart mid-stream", test_source_restart},
#ifdef FAKE_SYNC_SO
      {"catch-up wait of mode all released by the relay", test_catchup_mode_all},
#endif
  };
  static const dmh_cunit_suite suite = {"relay", NULL, NULL, tests, sizeof tests / sizeof tests[0]};
  return dmh_cunit_run_suites(&suite, 1, "RELAY_TEST_ONLY");
}

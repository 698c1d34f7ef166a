/*
 * The sync unit's continuous validator (issue 24, docs/validation.md) against the real pair
 * (CTest fixture mariadb), mode incremental, validator in the task's `sync.validator` group.
 *
 * A difference is made on the target deterministically by triggers on the target's table (the
 * sync's writes of row 5 land with another `v`, those of row 6 under another key), so the rows
 * the validator probes differ whatever the timing. Full mode reports both ("Column data not
 * matched" with both values, "Expected rows not exist") within row-error-delay; the rows the
 * source keeps changing meanwhile (in flight) never become errors. Fast mode reports the missing
 * row only.
 */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <time.h>

#include <dmhost/clock.h>

#include "cunit_run.h"
#include "metrics.h"
#include "sync_test_util.h"
#include "testdb.h"

static MYSQL *src, *dst;

static void tsv_drop(void) {
  lt_exec(src, "DROP DATABASE IF EXISTS tsv_val");
  lt_exec(dst, "DROP DATABASE IF EXISTS tsv_val");
}

static int suite_init(void) {
  if (ts_suite_open(&src, &dst) < 0)
    return -1;
  tsv_drop();
  return 0;
}

static int suite_clean(void) {
  if (src && dst)
    tsv_drop();
  ts_suite_close(&src, &dst);
  return 0;
}

/* worker-count: DM's default (4) unless said */
#define TSV_SYNC_N(mode, workers)                                                                  \
  TS_SYNC " validator = { mode = \"" mode "\"; validate-interval = \"1s\"; "                       \
          "row-error-delay = \"3s\"; batch-query-size = 7; meta-flush-interval = \"1s\"; " workers \
          " };"
#define TSV_SYNC(mode) TSV_SYNC_N(mode, "")

/* Waits until `sql` (a count) on the target is at least `want`; returns the last count. */
static long long tsv_wait_count(const char *sql, long long want, int timeout_ms) {
  int64_t end = dm_clock_ns() + (int64_t)timeout_ms * 1000000;
  long long n = -1;
  while (dm_clock_ns() < end) {
    n = lt_count(dst, "%s", sql);
    if (n >= want)
      return n;
    struct timespec ts = {0, 100 * 1000000};
    nanosleep(&ts, NULL);
  }
  return n;
}

/* Waits until the status says nothing is pending (every fed row checked or an error). */
static bool tsv_wait_settled(dmh_subtask *st, int timeout_ms) {
  int64_t end = dm_clock_ns() + (int64_t)timeout_ms * 1000000;
  char buf[64];
  while (dm_clock_ns() < end) {
    if (!strcmp(lt_status_str(st, "validationPending", buf, sizeof buf), "0") &&
        strcmp(lt_status_str(st, "validationChecked", buf, sizeof buf), "0") != 0)
      return true;
    struct timespec ts = {0, 100 * 1000000};
    nanosleep(&ts, NULL);
  }
  return false;
}

/* The value of the validator's metric `name` of this task at GET /metrics once it is `want` (the
 * checking thread sets them right after the status's counts move), or the last one after 10 s;
 * -1: not published. */
static long long tsv_metric(const char *name, const char *task, long long want) {
  char pre[160];
  snprintf(pre, sizeof pre, "\n%s{task=\"%s\",", name, task);
  int64_t stop = dm_clock_ns() + 10 * 1000000000ll;
  long long v = -1;
  do {
    char *text = dmh_metrics_render(dmh_metrics_process(), NULL);
    const char *at = text ? strstr(text, pre) : NULL;
    const char *end = at ? strchr(at, '}') : NULL;
    v = end && end[1] == ' ' ? atoll(end + 2) : -1;
    free(text);
    struct timespec ts = {0, 50 * 1000000};
    if (v != want)
      nanosleep(&ts, NULL);
  } while (v != want && dm_clock_ns() < stop);
  return v;
}

static void tsv_run(const char *task, const char *sync, bool full) {
  tsv_drop();
  static const char *const both[] = {
      "CREATE DATABASE tsv_val",
      "CREATE TABLE tsv_val.t (id INT PRIMARY KEY, v INT, s VARCHAR(20)) CHARACTER SET utf8mb4",
  };
  for (size_t i = 0; i < sizeof both / sizeof *both; i++) {
    CU_ASSERT_FATAL(lt_exec(src, "%s", both[i]) == 0);
    CU_ASSERT_FATAL(lt_exec(dst, "%s", both[i]) == 0);
  }
  /* the target's own difference: row 5 lands with v + 1000, row 6 as row 1006 */
  CU_ASSERT_FATAL(lt_exec(dst, "CREATE TRIGGER tsv_val.bi BEFORE INSERT ON tsv_val.t FOR EACH ROW "
                               "BEGIN IF NEW.id = 5 THEN SET NEW.v = NEW.v + 1000; END IF; IF "
                               "NEW.id = 6 THEN SET NEW.id = 1006; END IF; END") == 0);
  CU_ASSERT_FATAL(lt_exec(dst,
                          "CREATE TRIGGER tsv_val.bu BEFORE UPDATE ON tsv_val.t FOR EACH ROW "
                          "BEGIN IF NEW.id = 5 THEN SET NEW.v = NEW.v + 1000; END IF; END") == 0);
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  CU_ASSERT_FATAL(ts_config(&e, task, "tsv_val", NULL, sync) == 0);
  dmh_subtask *st = ts_start(&e);
  CU_ASSERT_FATAL(st != NULL && dmh_subtask_stage(st) == DMH_STAGE_RUNNING);
  char buf[64];
  CU_ASSERT_STRING_EQUAL(lt_status_str(st, "validationMode", buf, sizeof buf),
                         full ? "full" : "fast");
  for (int id = 1; id <= 20; id++)
    CU_ASSERT(lt_exec(src, "INSERT INTO tsv_val.t VALUES (%d, %d, 'r%d')", id, id, id) == 0);
  CU_ASSERT_FATAL(ts_catch_up(task, 120000)); /* no insert merges with a later change */
  /* rows in flight: changed again and again while the validator probes them */
  for (int round = 0; round < 30; round++)
    CU_ASSERT(lt_exec(src,
                      "UPDATE tsv_val.t SET v = v + 1, s = CONCAT('u', %d) WHERE id NOT IN (5, 6)",
                      round) == 0);
  CU_ASSERT_FATAL(ts_catch_up(task, 120000));
  CU_ASSERT(lt_exec(src, "DELETE FROM tsv_val.t WHERE id IN (19, 20)") == 0);
  CU_ASSERT_FATAL(ts_catch_up(task, 120000));
  char q[256];
  snprintf(q, sizeof q,
           "SELECT COUNT(*) FROM dm_meta.%s_validator_error_change WHERE source = 'lsrc'", task);
  long long want = full ? 2 : 1;
  CU_ASSERT_EQUAL(tsv_wait_count(q, want, 120000), want);
  CU_ASSERT(tsv_wait_settled(st, 120000));
  /* the status's counts are metrics too (bench/sync/run.sh VALIDATOR reads them from dmhost run) */
  long long checked = lt_status_int(st, "validationChecked");
  CU_ASSERT(checked > 0);
  CU_ASSERT_EQUAL(tsv_metric("dmhost_validator_pending_rows", task, 0), 0);
  CU_ASSERT_EQUAL(tsv_metric("dmhost_validator_checked_rows", task, checked), checked);
  CU_ASSERT_EQUAL(tsv_metric("dmhost_validator_skipped_rows", task, 0), 0);
  /* exactly those: the rows in flight are no errors */
  CU_ASSERT_EQUAL(lt_count(dst, "%s", q), want);
  CU_ASSERT_EQUAL(lt_count(dst,
                           "SELECT COUNT(*) FROM dm_meta.%s_validator_error_change WHERE row_pk = "
                           "'6' AND error_type = 1 AND status = 1 AND src_table_name = 't' AND "
                           "dst_schema_name = 'tsv_val' AND JSON_EXTRACT(data, '$[0]') = 6",
                           task),
                  1);
  CU_ASSERT_EQUAL(lt_count(dst,
                           "SELECT COUNT(*) FROM dm_meta.%s_validator_error_change WHERE row_pk = "
                           "'5' AND error_type = 2 AND JSON_EXTRACT(data, '$[1]') = 5 AND "
                           "JSON_EXTRACT(dst_data, '$[1]') = 1005",
                           task),
                  full ? 1 : 0);
  CU_ASSERT_STRING_EQUAL(lt_status_str(st, "validationStage", buf, sizeof buf), "Running");
  CU_ASSERT_STRING_EQUAL(lt_status_str(st, "validationErrors", buf, sizeof buf), full ? "2" : "1");
  CU_ASSERT(ts_clean_run(st));
  ts_stop(st);
  /* the pause flushed the checkpoint row: every row change processed */
  CU_ASSERT_EQUAL(lt_count(dst,
                           "SELECT procd_ins = 20 AND procd_upd >= 1 AND procd_del = 2 FROM "
                           "dm_meta.%s_validator_checkpoint WHERE source = 'lsrc'",
                           task),
                  1);
  lt_teardown(&e);
}

static void test_val_full(void) {
  tsv_run("ts_valfull", TSV_SYNC("full"), true);
}

/* worker-count 1: the same differences found, no false one, on one checking thread (the other
 * tests run DM's default 4) */
static void test_val_full_one(void) {
  tsv_run("ts_valfull1", TSV_SYNC_N("full", "worker-count = 1;"), true);
}

static void test_val_fast(void) {
  tsv_run("ts_valfast", TSV_SYNC("fast"), false);
}

/* Mode none (the default): no validator keys in the status, no validator tables on the target;
 * `validation stop` refused as DM's master refuses it, `validation start` enables it. */
static void test_val_none(void) {
  tsv_drop();
  CU_ASSERT_FATAL(lt_exec(src, "CREATE DATABASE tsv_val") == 0);
  CU_ASSERT_FATAL(lt_exec(dst, "CREATE DATABASE tsv_val") == 0);
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  CU_ASSERT_FATAL(ts_config(&e, "ts_valnone", "tsv_val", NULL, NULL) == 0);
  dmh_subtask *st = ts_start(&e);
  CU_ASSERT_FATAL(st != NULL && dmh_subtask_stage(st) == DMH_STAGE_RUNNING);
  CU_ASSERT(lt_exec(src, "CREATE TABLE tsv_val.t (id INT PRIMARY KEY)") == 0);
  CU_ASSERT(lt_exec(src, "INSERT INTO tsv_val.t VALUES (1), (2)") == 0);
  CU_ASSERT(ts_catch_up("ts_valnone", 120000));
  char buf[64];
  CU_ASSERT_STRING_EQUAL(lt_status_str(st, "validationStage", buf, sizeof buf), "");
  CU_ASSERT_EQUAL(
      lt_count(dst, "SELECT COUNT(*) FROM information_schema.TABLES WHERE "
                    "TABLE_SCHEMA = 'dm_meta' AND TABLE_NAME LIKE 'ts\\_valnone\\_validator%%'"),
      0);
  /* DM's master: a validator never enabled cannot be stopped; `validation start` enables it (mode
   * full), and a second start is no change */
  dm_validation_req rq = {.op = DM_VALIDATION_STOP};
  json_object *items = NULL;
  dm_error err = {0};
  CU_ASSERT_EQUAL(dmh_subtask_validation_op(st, &rq, &items, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_STAGE);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "some target validator(ts_valnone with source "));
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, ") is not enabled"));
  json_object_put(items);
  rq.op = DM_VALIDATION_START;
  for (int i = 0; i < 2; i++) {
    items = NULL;
    CU_ASSERT_EQUAL(dmh_subtask_validation_op(st, &rq, &items, &err), 0);
    json_object_put(items);
  }
  CU_ASSERT_STRING_EQUAL(lt_status_str(st, "validationStage", buf, sizeof buf), "Running");
  CU_ASSERT_STRING_EQUAL(lt_status_str(st, "validationMode", buf, sizeof buf), "full");
  CU_ASSERT(ts_clean_run(st));
  ts_stop(st);
  lt_teardown(&e);
}

/* The pending set is bounded: with room for 3 rows and 40 rows that stay different (a trigger),
 * the sync is not held (it catches up), at most 3 rows wait, the rest are counted as skipped. */
static void test_val_bounded(void) {
  tsv_drop();
  static const char *const both[] = {
      "CREATE DATABASE tsv_val",
      "CREATE TABLE tsv_val.t (id INT PRIMARY KEY, v INT)",
  };
  for (size_t i = 0; i < sizeof both / sizeof *both; i++) {
    CU_ASSERT_FATAL(lt_exec(src, "%s", both[i]) == 0);
    CU_ASSERT_FATAL(lt_exec(dst, "%s", both[i]) == 0);
  }
  CU_ASSERT_FATAL(lt_exec(dst, "CREATE TRIGGER tsv_val.bi BEFORE INSERT ON tsv_val.t FOR EACH ROW "
                               "SET NEW.v = NEW.v + 1000") == 0);
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  CU_ASSERT_FATAL(ts_config(&e, "ts_valbound", "tsv_val", NULL,
                            TS_SYNC " validator = { mode = \"full\"; row-error-delay = \"1h\"; "
                                    "max-pending-row-count = 3; };") == 0);
  dmh_subtask *st = ts_start(&e);
  CU_ASSERT_FATAL(st != NULL && dmh_subtask_stage(st) == DMH_STAGE_RUNNING);
  for (int id = 1; id <= 40; id++)
    CU_ASSERT(lt_exec(src, "INSERT INTO tsv_val.t VALUES (%d, %d)", id, id) == 0);
  CU_ASSERT(ts_catch_up("ts_valbound", 120000));
  /* every row differs, so each one is waiting or skipped: wait until all 40 are one or the other
   * (the last batch is fed right after its checkpoint moved) */
  char buf[64];
  int pending = 0;
  long long skipped = 0;
  int64_t end = dm_clock_ns() + 60 * 1000000000LL;
  while (dm_clock_ns() < end) {
    pending = atoi(lt_status_str(st, "validationPending", buf, sizeof buf));
    skipped = atoll(lt_status_str(st, "validationSkipped", buf, sizeof buf));
    if (pending + skipped >= 40)
      break;
    struct timespec ts = {0, 100 * 1000000};
    nanosleep(&ts, NULL);
  }
  CU_ASSERT(pending >= 1 && pending <= 3);
  CU_ASSERT_EQUAL(pending + skipped, 40);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM tsv_val.t"), 40); /* the sync was not held */
  CU_ASSERT(ts_clean_run(st));
  ts_stop(st);
  lt_teardown(&e);
}

/* A DDL drops a column the waiting rows' probes name: the target refuses their statement, they
 * are left unvalidated (skipped, nothing waits for ever), and rows fed after the DDL are probed
 * with the new columns. */
static void test_val_ddl(void) {
  tsv_drop();
  static const char *const both[] = {
      "CREATE DATABASE tsv_val",
      "CREATE TABLE tsv_val.t (id INT PRIMARY KEY, v INT, s INT)",
  };
  for (size_t i = 0; i < sizeof both / sizeof *both; i++) {
    CU_ASSERT_FATAL(lt_exec(src, "%s", both[i]) == 0);
    CU_ASSERT_FATAL(lt_exec(dst, "%s", both[i]) == 0);
  }
  CU_ASSERT_FATAL(lt_exec(dst, "CREATE TRIGGER tsv_val.bi BEFORE INSERT ON tsv_val.t FOR EACH ROW "
                               "SET NEW.v = IF(NEW.id < 100, NEW.v + 1000, NEW.v)") == 0);
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  CU_ASSERT_FATAL(ts_config(&e, "ts_valddl", "tsv_val", NULL,
                            TS_SYNC " validator = { mode = \"full\"; row-error-delay = \"1h\"; "
                                    "validate-interval = \"1s\"; };") == 0);
  dmh_subtask *st = ts_start(&e);
  CU_ASSERT_FATAL(st != NULL && dmh_subtask_stage(st) == DMH_STAGE_RUNNING);
  for (int id = 1; id <= 5; id++)
    CU_ASSERT(lt_exec(src, "INSERT INTO tsv_val.t VALUES (%d, %d, %d)", id, id, id) == 0);
  CU_ASSERT(ts_catch_up("ts_valddl", 120000));
  char buf[64];
  int64_t end = dm_clock_ns() + 60 * 1000000000LL;
  while (dm_clock_ns() < end &&
         strcmp(lt_status_str(st, "validationPending", buf, sizeof buf), "5"))
    nanosleep(&(struct timespec){0, 100 * 1000000}, NULL);
  CU_ASSERT_STRING_EQUAL(buf, "5"); /* all different, waiting for row-error-delay */
  CU_ASSERT(lt_exec(src, "ALTER TABLE tsv_val.t DROP COLUMN s") == 0);
  CU_ASSERT(lt_exec(src, "INSERT INTO tsv_val.t VALUES (100, 100)") == 0);
  CU_ASSERT(ts_catch_up("ts_valddl", 120000));
  end = dm_clock_ns() + 60 * 1000000000LL;
  while (dm_clock_ns() < end &&
         strcmp(lt_status_str(st, "validationPending", buf, sizeof buf), "0"))
    nanosleep(&(struct timespec){0, 100 * 1000000}, NULL);
  CU_ASSERT_STRING_EQUAL(buf, "0");
  CU_ASSERT_STRING_EQUAL(lt_status_str(st, "validationSkipped", buf, sizeof buf), "5");
  CU_ASSERT_STRING_EQUAL(lt_status_str(st, "validationErrors", buf, sizeof buf), "0");
  CU_ASSERT(ts_clean_run(st));
  ts_stop(st);
  lt_teardown(&e);
}

/* A TRUNCATE, an ALTER and a DROP TABLE of tables whose rows wait (different on the target by a
 * trigger, so each would become an error after row-error-delay): the sync tells the validator, the
 * waiting rows are dropped (skipped) and never become errors. A row fed after the TRUNCATE, as
 * different, becomes the only error: the rows before it had waited longer, so had they been kept
 * they would be errors first. */
static void test_val_ddl_drops(void) {
  tsv_drop();
  CU_ASSERT_FATAL(lt_exec(src, "CREATE DATABASE tsv_val") == 0);
  CU_ASSERT_FATAL(lt_exec(dst, "CREATE DATABASE tsv_val") == 0);
  static const char *const names[] = {"ta", "tb", "tc"};
  for (int i = 0; i < 3; i++) {
    CU_ASSERT_FATAL(lt_exec(src, "CREATE TABLE tsv_val.%s (id INT PRIMARY KEY, v INT)", names[i]) ==
                    0);
    CU_ASSERT_FATAL(lt_exec(dst, "CREATE TABLE tsv_val.%s (id INT PRIMARY KEY, v INT)", names[i]) ==
                    0);
    CU_ASSERT_FATAL(lt_exec(dst,
                            "CREATE TRIGGER tsv_val.bi_%s BEFORE INSERT ON tsv_val.%s FOR EACH ROW "
                            "SET NEW.v = NEW.v + 1000",
                            names[i], names[i]) == 0);
  }
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  CU_ASSERT_FATAL(ts_config(&e, "ts_valdrop", "tsv_val", NULL,
                            TS_SYNC " validator = { mode = \"full\"; row-error-delay = \"4s\"; "
                                    "validate-interval = \"1s\"; };") == 0);
  dmh_subtask *st = ts_start(&e);
  CU_ASSERT_FATAL(st != NULL && dmh_subtask_stage(st) == DMH_STAGE_RUNNING);
  for (int i = 0; i < 3; i++)
    CU_ASSERT(lt_exec(src, "INSERT INTO tsv_val.%s VALUES (1, 1), (2, 2), (3, 3)", names[i]) == 0);
  CU_ASSERT(ts_catch_up("ts_valdrop", 120000));
  char buf[64];
  int64_t end = dm_clock_ns() + 60 * 1000000000LL;
  while (dm_clock_ns() < end &&
         strcmp(lt_status_str(st, "validationPending", buf, sizeof buf), "9"))
    nanosleep(&(struct timespec){0, 100 * 1000000}, NULL);
  CU_ASSERT_STRING_EQUAL_FATAL(buf, "9"); /* all different, waiting for row-error-delay */
  CU_ASSERT(lt_exec(src, "TRUNCATE TABLE tsv_val.ta") == 0);
  CU_ASSERT(lt_exec(src, "ALTER TABLE tsv_val.tb ADD COLUMN x INT") == 0);
  CU_ASSERT(lt_exec(src, "DROP TABLE tsv_val.tc") == 0);
  CU_ASSERT(lt_exec(src, "INSERT INTO tsv_val.ta VALUES (10, 10)") == 0);
  CU_ASSERT(ts_catch_up("ts_valdrop", 120000));
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM tsv_val.ta"), 1); /* precondition */
  const char *q = "SELECT COUNT(*) FROM dm_meta.ts_valdrop_validator_error_change";
  CU_ASSERT_EQUAL(tsv_wait_count(q, 1, 120000), 1);
  CU_ASSERT_EQUAL(lt_count(dst,
                           "SELECT COUNT(*) FROM dm_meta.ts_valdrop_validator_error_change WHERE "
                           "src_table_name = 'ta' AND row_pk = '10' AND error_type = 2"),
                  1);
  CU_ASSERT_STRING_EQUAL(lt_status_str(st, "validationSkipped", buf, sizeof buf), "9");
  CU_ASSERT_STRING_EQUAL(lt_status_str(st, "validationErrors", buf, sizeof buf), "1");
  CU_ASSERT_STRING_EQUAL(lt_status_str(st, "validationPending", buf, sizeof buf), "0");
  CU_ASSERT(ts_clean_run(st));
  ts_stop(st);
  lt_teardown(&e);
}

/* A run over fresh tables: tsv_val made again, `both` on source and target, `trig` (the target's
 * differences) on the target, task `task` started with `sync`. */
static dmh_subtask *tsv_setup(lt_env *e, const char *task, const char *sync,
                              const char *const *both, size_t n_both, const char *const *trig,
                              size_t n_trig) {
  tsv_drop();
  CU_ASSERT_FATAL(lt_exec(src, "CREATE DATABASE tsv_val") == 0);
  CU_ASSERT_FATAL(lt_exec(dst, "CREATE DATABASE tsv_val") == 0);
  for (size_t i = 0; i < n_both; i++) {
    CU_ASSERT_FATAL(lt_exec(src, "%s", both[i]) == 0);
    CU_ASSERT_FATAL(lt_exec(dst, "%s", both[i]) == 0);
  }
  for (size_t i = 0; i < n_trig; i++)
    CU_ASSERT_FATAL(lt_exec(dst, "%s", trig[i]) == 0);
  CU_ASSERT_FATAL(lt_init(e) == 0);
  CU_ASSERT_FATAL(ts_config(e, task, "tsv_val", NULL, sync) == 0);
  dmh_subtask *st = ts_start(e);
  CU_ASSERT_FATAL(st != NULL && dmh_subtask_stage(st) == DMH_STAGE_RUNNING);
  return st;
}

/* Waits until the status key `key` reads `want`; returns whether it did. */
static bool tsv_wait_status(dmh_subtask *st, const char *key, const char *want, int timeout_ms) {
  int64_t end = dm_clock_ns() + (int64_t)timeout_ms * 1000000;
  char buf[64];
  while (strcmp(lt_status_str(st, key, buf, sizeof buf), want) != 0) {
    if (dm_clock_ns() >= end)
      return false;
    nanosleep(&(struct timespec){0, 100 * 1000000}, NULL);
  }
  return true;
}

/* A paused task's validator (DM's SubTask.Pause stops the units, never the validator): its stage
 * stays Running and it goes on checking the waiting rows. Three rows differ on the target (a
 * trigger) and wait; the task is paused; the target is mended behind it: the rows are checked
 * and settle while the task is still paused. After the resume, new rows are fed again. */
static void test_val_paused(void) {
  static const char *const both[] = {
      "CREATE TABLE tsv_val.t (id INT PRIMARY KEY, v INT)",
  };
  static const char *const trig[] = {
      "CREATE TRIGGER tsv_val.bi BEFORE INSERT ON tsv_val.t FOR EACH ROW SET NEW.v = NEW.v + 1000",
  };
  lt_env e;
  dmh_subtask *st = tsv_setup(
      &e, "ts_valpause",
      TS_SYNC
      " validator = { mode = \"full\"; row-error-delay = \"1h\"; validate-interval = \"1s\"; };",
      both, sizeof both / sizeof *both, trig, sizeof trig / sizeof *trig);
  CU_ASSERT(lt_exec(src, "INSERT INTO tsv_val.t VALUES (1, 1), (2, 2), (3, 3)") == 0);
  CU_ASSERT(ts_catch_up("ts_valpause", 120000));
  CU_ASSERT_FATAL(tsv_wait_status(st, "validationPending", "3", 60000)); /* all three differ */
  dm_error err;
  CU_ASSERT_FATAL(dmh_subtask_pause(st, &err) == 0);
  CU_ASSERT_FATAL(dmh_subtask_stage(st) == DMH_STAGE_PAUSED);
  char buf[64];
  CU_ASSERT_STRING_EQUAL(lt_status_str(st, "validationStage", buf, sizeof buf), "Running");
  CU_ASSERT(lt_exec(dst, "UPDATE tsv_val.t SET v = v - 1000") == 0); /* mended */
  CU_ASSERT(tsv_wait_status(st, "validationPending", "0", 60000));
  CU_ASSERT_EQUAL(dmh_subtask_stage(st), DMH_STAGE_PAUSED); /* settled while paused */
  CU_ASSERT_STRING_EQUAL(lt_status_str(st, "validationErrors", buf, sizeof buf), "0");
  CU_ASSERT_FATAL(dmh_subtask_resume(st, &err) == 0);
  CU_ASSERT(lt_exec(src, "INSERT INTO tsv_val.t VALUES (4, 4)") == 0);
  CU_ASSERT(ts_catch_up("ts_valpause", 120000));
  CU_ASSERT(tsv_wait_status(st, "validationPending", "1", 60000)); /* fed again after resume */
  CU_ASSERT_STRING_EQUAL(lt_status_str(st, "validationStage", buf, sizeof buf), "Running");
  CU_ASSERT(ts_clean_run(st));
  ts_stop(st);
  lt_teardown(&e);
}

/* DM's validator keys a row by the primary key, else the first unique key whose columns are all
 * NOT NULL (sqlmodel's UniqueNotNullIdx), and skips a table with neither ("no primary key"). tu has
 * only a NOT NULL UNIQUE key, tp a primary key and another unique key (row changes in binlog
 * order, not compacted), tn only a nullable unique key. The target's triggers make code c5's row of
 * tu and id 5's of tp differ: both are errors; a key change of tu (c2 -> c9: DM's SplitUpdate, a
 * delete and an insert) is none; tn's rows are skipped and its table status says why. */
static void test_val_unique_key(void) {
  static const char *const both[] = {
      "CREATE TABLE tsv_val.tu (id INT, code VARCHAR(10) NOT NULL, v INT, UNIQUE KEY (code))",
      "CREATE TABLE tsv_val.tp (id INT PRIMARY KEY, code VARCHAR(10), v INT, UNIQUE KEY (code))",
      "CREATE TABLE tsv_val.tn (id INT, v INT, UNIQUE KEY (id))",
  };
  static const char *const trig[] = {
      "CREATE TRIGGER tsv_val.bu BEFORE INSERT ON tsv_val.tu FOR EACH ROW "
      "SET NEW.v = IF(NEW.code = 'c5', NEW.v + 1000, NEW.v)",
      "CREATE TRIGGER tsv_val.bp BEFORE INSERT ON tsv_val.tp FOR EACH ROW "
      "SET NEW.v = IF(NEW.id = 5, NEW.v + 1000, NEW.v)",
  };
  lt_env e;
  dmh_subtask *st = tsv_setup(
      &e, "ts_valuk",
      TS_SYNC
      " validator = { mode = \"full\"; row-error-delay = \"2s\"; validate-interval = \"1s\"; };",
      both, sizeof both / sizeof *both, trig, sizeof trig / sizeof *trig);
  for (int id = 1; id <= 6; id++) {
    CU_ASSERT(lt_exec(src, "INSERT INTO tsv_val.tu VALUES (%d, 'c%d', %d)", id, id, id) == 0);
    CU_ASSERT(lt_exec(src, "INSERT INTO tsv_val.tp VALUES (%d, 'c%d', %d)", id, id, id) == 0);
    CU_ASSERT(lt_exec(src, "INSERT INTO tsv_val.tn VALUES (%d, %d)", id, id) == 0);
  }
  CU_ASSERT(lt_exec(src, "UPDATE tsv_val.tu SET code = 'c9', v = 9 WHERE code = 'c2'") == 0);
  CU_ASSERT(lt_exec(src, "UPDATE tsv_val.tp SET v = v + 1 WHERE id IN (1, 3)") == 0);
  CU_ASSERT(lt_exec(src, "DELETE FROM tsv_val.tu WHERE code = 'c4'") == 0);
  CU_ASSERT(ts_catch_up("ts_valuk", 120000));
  /* precondition: the triggers bit, the key change landed */
  CU_ASSERT_FATAL(lt_count(dst, "SELECT COUNT(*) FROM tsv_val.tu WHERE code = 'c5' AND v = 1005") ==
                  1);
  CU_ASSERT_FATAL(lt_count(dst, "SELECT COUNT(*) FROM tsv_val.tp WHERE id = 5 AND v = 1005") == 1);
  CU_ASSERT_FATAL(lt_count(dst, "SELECT COUNT(*) FROM tsv_val.tu WHERE code IN ('c2', 'c9')") == 1);
  const char *q = "SELECT COUNT(*) FROM dm_meta.ts_valuk_validator_error_change";
  CU_ASSERT_EQUAL(tsv_wait_count(q, 2, 120000), 2);
  CU_ASSERT(tsv_wait_settled(st, 120000));
  CU_ASSERT_EQUAL(lt_count(dst, "%s", q), 2); /* those two only */
  CU_ASSERT_EQUAL(lt_count(dst,
                           "SELECT COUNT(*) FROM dm_meta.ts_valuk_validator_error_change WHERE "
                           "src_table_name = 'tu' AND row_pk LIKE '%%c5%%' AND error_type = 2"),
                  1);
  CU_ASSERT_EQUAL(lt_count(dst,
                           "SELECT COUNT(*) FROM dm_meta.ts_valuk_validator_error_change WHERE "
                           "src_table_name = 'tp' AND row_pk = '5' AND error_type = 2"),
                  1);
  char buf[64];
  /* tn's 6 inserts; tu and tp: 12 inserts, 3 updates (one split), 1 delete, none skipped */
  CU_ASSERT_STRING_EQUAL(lt_status_str(st, "validationSkipped", buf, sizeof buf), "6");
  dm_validation_req req = {.op = DM_VALIDATION_STATUS, .table_stage = "stopped"};
  json_object *items = NULL;
  dm_error err;
  CU_ASSERT_FATAL(dmh_subtask_validation_op(st, &req, &items, &err) == 0);
  bool said = false;
  int stopped = 0;
  for (size_t i = 0; i < json_object_array_length(items); i++) {
    const char *it = json_object_get_string(json_object_array_get_idx(items, i));
    if (!strstr(it, "\"srcTable\""))
      continue;
    stopped++;
    said = said || (strstr(it, "`tsv_val`.`tn`") && strstr(it, "\"message\":\"no primary key\""));
  }
  json_object_put(items);
  CU_ASSERT(said);
  CU_ASSERT_EQUAL(stopped, 1); /* tu and tp are validated */
  CU_ASSERT(ts_clean_run(st));
  ts_stop(st);
  lt_teardown(&e);
}

/* worker-count 3 checks rows on three threads (DM's validate workers, a row by its key's hash):
 * a row of ta (different on the target, so probed every second) is probed while a test session
 * holds LOCK TABLES ta WRITE on the target, so the worker probing it waits (asserted: a probe waits
 * for the table's lock); tb's rows, fed then, are checked meanwhile by the other workers. One
 * thread would wait with them. */
static void test_val_workers(void) {
  static const char *const both[] = {
      "CREATE TABLE tsv_val.ta (id INT PRIMARY KEY, v INT)",
      "CREATE TABLE tsv_val.tb (id INT PRIMARY KEY, v INT)",
  };
  static const char *const trig[] = {
      "CREATE TRIGGER tsv_val.bi BEFORE INSERT ON tsv_val.ta FOR EACH ROW SET NEW.v = NEW.v + 1000",
  };
  lt_env e;
  dmh_subtask *st = tsv_setup(
      &e, "ts_valwork",
      TS_SYNC
      " validator = { mode = \"full\"; row-error-delay = \"1h\"; validate-interval = \"1s\"; "
      "worker-count = 3; batch-query-size = 2; };",
      both, sizeof both / sizeof *both, trig, sizeof trig / sizeof *trig);
  CU_ASSERT(lt_exec(src, "INSERT INTO tsv_val.ta VALUES (1, 1)") == 0);
  CU_ASSERT(ts_catch_up("ts_valwork", 120000));
  CU_ASSERT_FATAL(tsv_wait_status(st, "validationPending", "1", 60000));
  MYSQL *lk = testdb_connect(TESTDB_TARGET);
  CU_ASSERT_FATAL(lk != NULL);
  CU_ASSERT_FATAL(lt_exec(lk, "LOCK TABLES tsv_val.ta WRITE") == 0);
  /* precondition: a probe of ta waits for the lock (within validate-interval) */
  const char *waiting = "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE STATE LIKE "
                        "'Waiting for table%%' AND INFO LIKE '%%tsv_val%%ta%%'";
  CU_ASSERT_FATAL(tsv_wait_count(waiting, 1, 60000) >= 1);
  char buf[64];
  long long checked = atoll(lt_status_str(st, "validationChecked", buf, sizeof buf));
  for (int id = 1; id <= 30; id++)
    CU_ASSERT(lt_exec(src, "INSERT INTO tsv_val.tb VALUES (%d, %d)", id, id) == 0);
  CU_ASSERT(ts_catch_up("ts_valwork", 120000));
  int64_t end = dm_clock_ns() + 30 * 1000000000LL;
  long long now = checked;
  while (dm_clock_ns() < end &&
         (now = atoll(lt_status_str(st, "validationChecked", buf, sizeof buf))) < checked + 5)
    nanosleep(&(struct timespec){0, 100 * 1000000}, NULL);
  CU_ASSERT(now >= checked + 5);          /* tb's rows checked while ta's probe waits */
  CU_ASSERT(lt_count(dst, waiting) >= 1); /* it still waits */
  CU_ASSERT(lt_exec(lk, "UNLOCK TABLES") == 0);
  testdb_close(lk);
  CU_ASSERT(tsv_wait_status(st, "validationPending", "1", 60000)); /* ta's row only */
  CU_ASSERT_STRING_EQUAL(lt_status_str(st, "validationErrors", buf, sizeof buf), "0");
  CU_ASSERT(ts_clean_run(st));
  ts_stop(st);
  lt_teardown(&e);
}

/* validate-interval, DM's way: a row is first probed once it has waited, so a row the source
 * changes again meanwhile is probed once, in its last image (it was probed after every batch that
 * fed it: here 5 rounds of 30 rows, each fed on its own, were 150 probes). The probe is the
 * batched one (sync_val_probe.c): one `IN (...)` of the 30 keys settles them all. */
static void test_val_coalesced(void) {
  tsv_drop();
  static const char *const both[] = {
      "CREATE DATABASE tsv_val",
      "CREATE TABLE tsv_val.t (id INT PRIMARY KEY, v INT, s VARCHAR(10)) CHARACTER SET utf8mb4",
  };
  for (size_t i = 0; i < sizeof both / sizeof *both; i++) {
    CU_ASSERT_FATAL(lt_exec(src, "%s", both[i]) == 0);
    CU_ASSERT_FATAL(lt_exec(dst, "%s", both[i]) == 0);
  }
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  CU_ASSERT_FATAL(ts_config(&e, "ts_valco", "tsv_val", NULL,
                            TS_SYNC " validator = { mode = \"full\"; validate-interval = \"20s\"; "
                                    "worker-count = 1; };") == 0);
  dmh_subtask *st = ts_start(&e);
  CU_ASSERT_FATAL(st != NULL && dmh_subtask_stage(st) == DMH_STAGE_RUNNING);
  int64_t t0 = dm_clock_ns();
  CU_ASSERT(lt_exec(src, "INSERT INTO tsv_val.t SELECT seq, 0, NULL FROM tsv_val.seq_1_to_30") ==
            0);
  CU_ASSERT(ts_catch_up("ts_valco", 120000));
  char buf[64];
  for (int round = 1; round <= 4; round++) {
    CU_ASSERT(lt_exec(src, "UPDATE tsv_val.t SET v = v + 1, s = IF(id %% 2, 'Ab', NULL)") == 0);
    CU_ASSERT(ts_catch_up("ts_valco", 120000));
  }
  /* precondition: every round was fed (and nothing probed yet) within the interval */
  CU_ASSERT_STRING_EQUAL(lt_status_str(st, "validationPending", buf, sizeof buf), "30");
  CU_ASSERT_STRING_EQUAL(lt_status_str(st, "validationChecked", buf, sizeof buf), "0");
  CU_ASSERT_FATAL(dm_clock_ns() - t0 < 20 * 1000000000LL);
  CU_ASSERT(tsv_wait_settled(st, 90000));
  CU_ASSERT_STRING_EQUAL(lt_status_str(st, "validationChecked", buf, sizeof buf), "30");
  CU_ASSERT_STRING_EQUAL(lt_status_str(st, "validationErrors", buf, sizeof buf), "0");
  CU_ASSERT(ts_clean_run(st));
  ts_stop(st);
  lt_teardown(&e);
}

/* A sync with a backlog (the batch it applies began more than 10 s ago): new rows wait for it, past
 * validate-interval, so the probes do not take the target from the sync's apply; once it has
 * caught up they are checked. ta's 20 rows are applied (and fed), then the sync is held behind a
 * target lock on tb: once its batch is over 10 s old, ta's rows (due 30 s after they were fed)
 * stay pending past their validate-interval; the lock let go, they are checked. (Not by rows written
 * "an hour ago" with SET TIMESTAMP: the shared source's binlog would lose its time order, which a
 * start-time lookup of another test relies on.) */
static void test_val_backlog(void) {
  static const char *const both[] = {
      "CREATE TABLE tsv_val.ta (id INT PRIMARY KEY, v INT)",
      "CREATE TABLE tsv_val.tb (id INT PRIMARY KEY, v INT)",
  };
  lt_env e;
  dmh_subtask *st =
      tsv_setup(&e, "ts_valback",
                TS_SYNC " validator = { mode = \"fast\"; validate-interval = \"30s\"; "
                        "row-error-delay = \"1h\"; };",
                both, sizeof both / sizeof *both, NULL, 0);
  CU_ASSERT(lt_exec(src, "INSERT INTO tsv_val.ta SELECT seq, seq FROM tsv_val.seq_1_to_20") == 0);
  CU_ASSERT(ts_catch_up("ts_valback", 120000));
  int64_t fed = dm_clock_ns();
  MYSQL *lk = testdb_connect(TESTDB_TARGET);
  CU_ASSERT_FATAL(lk != NULL);
  CU_ASSERT_FATAL(lt_exec(lk, "LOCK TABLES tsv_val.tb WRITE") == 0);
  CU_ASSERT(lt_exec(src, "INSERT INTO tsv_val.tb VALUES (1, 1)") == 0);
  /* precondition: the sync waits for the lock soon enough that its batch is 10 s old (and more)
   * well before ta's rows are due, and they were not probed before */
  const char *waiting = "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE STATE LIKE "
                        "'Waiting for table%%' AND INFO LIKE '%%tsv_val%%tb%%'";
  CU_ASSERT_FATAL(tsv_wait_count(waiting, 1, 60000) >= 1);
  char buf[64];
  CU_ASSERT_FATAL(dm_clock_ns() - fed < 10 * 1000000000LL);
  CU_ASSERT_STRING_EQUAL_FATAL(lt_status_str(st, "validationChecked", buf, sizeof buf), "0");
  /* the rows are due 30 s after they were fed: 4 s more, and still not probed */
  int64_t until = fed + 34 * 1000000000LL;
  while (dm_clock_ns() < until)
    nanosleep(&(struct timespec){0, 100 * 1000000}, NULL);
  CU_ASSERT_STRING_EQUAL(lt_status_str(st, "validationChecked", buf, sizeof buf), "0");
  CU_ASSERT_STRING_EQUAL(lt_status_str(st, "validationPending", buf, sizeof buf), "20");
  CU_ASSERT(lt_count(dst, waiting) >= 1); /* the sync still waits */
  CU_ASSERT(lt_exec(lk, "UNLOCK TABLES") == 0);
  testdb_close(lk);
  CU_ASSERT(ts_catch_up("ts_valback", 120000));
  /* caught up: ta's rows, due, are checked; tb's waits its own validate-interval */
  CU_ASSERT(tsv_wait_status(st, "validationChecked", "20", 60000));
  CU_ASSERT_STRING_EQUAL(lt_status_str(st, "validationPending", buf, sizeof buf), "1");
  CU_ASSERT_STRING_EQUAL(lt_status_str(st, "validationErrors", buf, sizeof buf), "0");
  CU_ASSERT(ts_clean_run(st));
  ts_stop(st);
  lt_teardown(&e);
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"full: a changed and a missing target row are errors, rows in flight are not",
       test_val_full},
      {"full, worker-count 1: the same errors, none false", test_val_full_one},
      {"fast: the missing row only", test_val_fast},
      {"none: no validator, no keys, no tables", test_val_none},
      {"bounded: max-pending-row-count holds, the sync goes on", test_val_bounded},
      {"a DDL under waiting rows: refused probes are skipped, new rows probed", test_val_ddl},
      {"TRUNCATE, ALTER, DROP TABLE under waiting rows: dropped, never errors", test_val_ddl_drops},
      {"a paused task: the validator stays Running and checks the waiting rows", test_val_paused},
      {"a NOT NULL unique key is a key, a table without one is skipped", test_val_unique_key},
      {"worker-count 3: rows are checked while one worker's probe waits", test_val_workers},
      {"validate-interval: a row changed again meanwhile is probed once", test_val_coalesced},
      {"a sync with a backlog: new rows wait for it, then are checked", test_val_backlog},
  };
  return dmh_cunit_run("sync_validator", suite_init, suite_clean, tests,
                       sizeof tests / sizeof tests[0]);
}

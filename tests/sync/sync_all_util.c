/* Helpers of the mode-all tests (sync_all_util.h): the databases, the subtask's status and
 * checkpoint, the comparison of source and target, the task's files. */
#include "sync_all_util.h"

#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dmhost/error.h"
#include "testdb.h"

static const char sa_sync[] =
    "worker-count = 4; batch = 500; batch-ms = 50; status-interval = 100;";

const char sa_sup_auto[] =
    "init-timeout = 10; stop-timeout = 5; relay-catchup-timeout = 60; relay-catchup-poll = 50; "
    "auto-resume = { enable = true; backoff-initial = 0.05; backoff-max = 0.2; };";
const char sa_sup_manual[] =
    "init-timeout = 10; stop-timeout = 5; auto-resume = { enable = false; };";

MYSQL *src, *dst;

/* ---- databases ---- */

/* The databases this process made (sa_make_source), which its suite's clean-up drops: only those,
 * as the other mode-all suite may be running beside it on its own. */
static const char *sa_made[16];
static size_t sa_n_made;

static void sa_clean(const char *db) {
  lt_exec(src, "DROP DATABASE IF EXISTS `%s`", db);
  lt_exec(dst, "DROP DATABASE IF EXISTS `%s`", db);
  lt_exec(dst, "DROP TABLE IF EXISTS dm_meta.`%s_syncer_checkpoint`", db);
  lt_drop_checkpoint(dst, db);
}

int sa_make_source(const char *db) {
  size_t k = 0;
  while (k < sa_n_made && strcmp(sa_made[k], db) != 0)
    k++;
  if (k == sa_n_made && sa_n_made < sizeof sa_made / sizeof *sa_made)
    sa_made[sa_n_made++] = db;
  sa_clean(db);
  if (testdb_recreate_db(src, db) != 0)
    return -1;
  char sql[8][600];
  snprintf(sql[0], sizeof sql[0], "USE `%s`", db);
  snprintf(sql[1], sizeof sql[1],
           "CREATE TABLE t_pk (id INT NOT NULL PRIMARY KEY, v INT NOT NULL, s VARCHAR(40), "
           "d DECIMAL(10,2)) DEFAULT CHARSET = utf8mb4;"
           "INSERT INTO t_pk SELECT seq, seq %% 1000, CONCAT('pk-', seq, IF(seq %% 7 = 0, 'é''\"', "
           "'')), IF(seq %% 11 = 0, NULL, seq / 3) FROM seq_1_to_%d",
           SA_PK_ROWS);
  snprintf(sql[2], sizeof sql[2],
           "CREATE TABLE t_uk (id INT NOT NULL PRIMARY KEY, u INT NOT NULL, v INT, "
           "UNIQUE KEY uk_u (u));"
           "INSERT INTO t_uk SELECT seq, seq * 2, seq FROM seq_1_to_%d",
           SA_UK_ROWS);
  snprintf(sql[3], sizeof sql[3],
           "CREATE TABLE t_nokey (a INT, b VARCHAR(20), c INT);"
           "INSERT INTO t_nokey SELECT seq %% 1000, CONCAT('nk', seq %% 37), seq FROM "
           "seq_1_to_%d",
           SA_NK_ROWS);
  snprintf(sql[4], sizeof sql[4],
           "CREATE TABLE t_comp (a INT NOT NULL, b INT NOT NULL, v VARCHAR(30), w BIGINT, "
           "PRIMARY KEY (a, b));"
           "INSERT INTO t_comp SELECT seq DIV 10, seq %% 10, CONCAT('c', seq), seq * 1000003 FROM "
           "seq_0_to_%d",
           SA_CK_ROWS - 1);
  snprintf(sql[5], sizeof sql[5], "CREATE TABLE marker (id INT NOT NULL PRIMARY KEY, at INT)");
  for (int i = 0; i < 6; i++)
    if (testdb_exec(src, sql[i]) != 0)
      return -1;
  return 0;
}

/* ---- subtask helpers ---- */

const char *sa_str(dmh_subtask *st, const char *key, char *buf, size_t len) {
  json_object *o = dmh_subtask_status_json(st), *v;
  buf[0] = '\0';
  if (json_object_object_get_ex(o, key, &v) && v)
    snprintf(buf, len, "%s", json_object_get_string(v));
  json_object_put(o);
  return buf;
}

static bool sa_has(dmh_subtask *st, const char *key) {
  json_object *o = dmh_subtask_status_json(st), *v;
  bool has = json_object_object_get_ex(o, key, &v);
  json_object_put(o);
  return has;
}

static void sa_print_status(dmh_subtask *st) {
  json_object *o = dmh_subtask_status_json(st);
  fprintf(stderr, "status: %s\n", json_object_to_json_string(o));
  json_object_put(o);
}

/* Waits until the subtask is Running in its sync unit with rows applied. */
bool sa_wait_sync(dmh_subtask *st, long long rows, int timeout_ms) {
  double end = lt_now() + timeout_ms / 1000.0;
  char u[32];
  while (lt_now() < end) {
    dmh_stage s = dmh_subtask_stage(st);
    if (s == DMH_STAGE_RUNNING && strcmp(sa_str(st, "unit", u, sizeof u), "Sync") == 0 &&
        lt_status_int(st, "totalRows") >= rows)
      return true;
    if (s == DMH_STAGE_STOPPED || s == DMH_STAGE_FINISHED ||
        (s == DMH_STAGE_PAUSED && !sa_has(st, "autoResumeIn")))
      break; /* a pause that auto-resume ends is waited for */
    lt_sleep_ms(20);
  }
  sa_print_status(st);
  return false;
}

typedef struct sa_pos {
  char name[128];
  unsigned long long pos;
} sa_pos;

static int sa_pos_cmp(const sa_pos *a, const sa_pos *b) {
  int c = strcmp(a->name, b->name);
  return c ? c : (a->pos > b->pos) - (a->pos < b->pos);
}

static bool sa_row_pos(MYSQL *m, const char *q, sa_pos *out) {
  memset(out, 0, sizeof *out);
  MYSQL_RES *r = NULL;
  MYSQL_ROW row;
  bool ok = mysql_query(m, q) == 0 && (r = mysql_store_result(m)) != NULL &&
            (row = mysql_fetch_row(r)) != NULL && row[0] && row[1];
  if (ok) {
    snprintf(out->name, sizeof out->name, "%s", row[0]);
    out->pos = strtoull(row[1], NULL, 10);
  }
  if (r)
    mysql_free_result(r);
  return ok;
}

/* After the writer stopped: a marker transaction, then the checkpoint's global row must reach the
 * source's SHOW MASTER STATUS, and the status must say synced. Returns the seconds it took (<0:
 * not reached). */
double sa_catch_up(dmh_subtask *st, const char *db, const char *task, int timeout_ms) {
  lt_exec(src,
          "INSERT INTO `%s`.marker VALUES (1, UNIX_TIMESTAMP()) ON DUPLICATE KEY UPDATE at = "
          "at + 1",
          db);
  sa_pos m, c = {{0}, 0};
  CU_ASSERT_FATAL(sa_row_pos(src, "SHOW MASTER STATUS", &m));
  char q[300];
  snprintf(q, sizeof q,
           "SELECT binlog_name, binlog_pos FROM dm_meta.`%s_syncer_checkpoint` WHERE is_global = 1",
           task);
  double t0 = lt_now(), end = t0 + timeout_ms / 1000.0;
  bool reached = false;
  while (lt_now() < end) {
    if (sa_row_pos(dst, q, &c) && sa_pos_cmp(&c, &m) >= 0) {
      reached = true;
      break;
    }
    dmh_stage s = dmh_subtask_stage(st);
    bool resumable = false;
    if (s == DMH_STAGE_STOPPED || s == DMH_STAGE_FINISHED ||
        (s == DMH_STAGE_PAUSED &&
         (dmh_subtask_manually_paused(st) ||
          (lt_first_error(st, NULL, 0, NULL, 0, &resumable) != 0 && !resumable))))
      break; /* a paused task waits for auto-resume */
    if (s == DMH_STAGE_PAUSED && !sa_has(st, "autoResumeIn")) {
      /* paused by a resumable error, no auto-resume configured: resume as it would */
      char msg[600];
      lt_first_error(st, msg, sizeof msg, NULL, 0, NULL);
      fprintf(stderr, "catch-up: resuming after a resumable error: %s\n", msg);
      dm_error err;
      dmh_subtask_resume(st, &err);
    }
    lt_sleep_ms(20);
  }
  double secs = lt_now() - t0;
  if (!reached) {
    fprintf(stderr, "catch-up: checkpoint at %s:%llu, source at %s:%llu, stage %s\n", c.name, c.pos,
            m.name, m.pos, dmh_stage_name(dmh_subtask_stage(st)));
    sa_print_status(st);
    CU_ASSERT(reached);
    return -1;
  }
  /* the status agrees (masterBinlog is read every 100 ms) */
  char v[16] = "";
  for (int i = 0; i < 100 && strcmp(v, "true") != 0; i++) {
    lt_status_str(st, "synced", v, sizeof v);
    if (strcmp(v, "true") != 0)
      lt_sleep_ms(20);
  }
  if (strcmp(v, "true") != 0)
    sa_print_status(st);
  CU_ASSERT_STRING_EQUAL(v, "true");
  return secs;
}

void sa_assert_equal(const char *db) {
  char diff[1024];
  double t0 = lt_now();
  int rc = testdb_compare_schemas(src, dst, db, db, diff, sizeof diff);
  if (rc != 0)
    fprintf(stderr, "%s: source and target differ: %s\n", db, diff);
  CU_ASSERT_EQUAL(rc, 0);
  fprintf(stderr, "%s: compared in %.2f s: %lld + %lld + %lld + %lld rows\n", db, lt_now() - t0,
          lt_count(src, "SELECT COUNT(*) FROM `%s`.t_pk", db),
          lt_count(src, "SELECT COUNT(*) FROM `%s`.t_uk", db),
          lt_count(src, "SELECT COUNT(*) FROM `%s`.t_nokey", db),
          lt_count(src, "SELECT COUNT(*) FROM `%s`.t_comp", db));
}

/* With the writer held between transactions: catch up and compare (the writer goes on after). */
void sa_equal_now(dmh_subtask *st, sa_writer *w, const char *db, const char *when) {
  atomic_store(&w->hold, true);
  for (int i = 0; i < 1000 && !atomic_load(&w->held); i++)
    lt_sleep_ms(2);
  double caught = sa_catch_up(st, db, db, 60000);
  fprintf(stderr, "%s: %s: caught up in %.2f s\n", db, when, caught);
  sa_assert_equal(db);
  atomic_store(&w->hold, false);
}

/* Deadlocks the target detected so far (all of them between the sync unit's workers: nothing
 * else writes there). */
long long sa_deadlocks(void) {
  char v[32] = "";
  MYSQL_RES *r = NULL;
  MYSQL_ROW row;
  if (mysql_query(dst, "SHOW GLOBAL STATUS LIKE 'Innodb_deadlocks'") == 0 &&
      (r = mysql_store_result(dst)) && (row = mysql_fetch_row(r)) && row[1])
    snprintf(v, sizeof v, "%s", row[1]);
  if (r)
    mysql_free_result(r);
  return atoll(v);
}

/* No error in the result (a duplicate key would mean a change applied twice). */
void sa_assert_no_error(dmh_subtask *st, const char *when) {
  char msg[600], raw[600];
  int code = lt_first_error(st, msg, sizeof msg, raw, sizeof raw, NULL);
  if (code != 0)
    fprintf(stderr, "%s: error %d: %s (%s)\n", when, code, msg, raw);
  CU_ASSERT_EQUAL(code, 0);
  CU_ASSERT_PTR_NULL(strstr(raw, "Duplicate entry"));
}

/* The task of mode all over `db` (task named like it); source_extra: relay settings. */
int sa_config(lt_env *e, const char *db, const char *source_extra, const char *sup) {
  char instance[64], extra[256];
  snprintf(instance, sizeof instance, "block-allow-list = \"only\";");
  snprintf(extra, sizeof extra, "block-allow-list = { only = { do-dbs = [\"%s\"]; }; };\n", db);
  lt_task t = {.name = db,
               .mode = "all",
               .instance = instance,
               .extra = extra,
               .load = "pool-size = 2;",
               .sync = sa_sync,
               .source_extra = source_extra,
               .supervisor = sup};
  return lt_config(e, &t);
}

dmh_subtask *sa_start(lt_env *e, dmh_subtask *relay) {
  dmh_subtask *st = lt_subtask_relay(e, relay);
  if (!st)
    return NULL;
  dm_error err;
  if (dmh_subtask_start(st, &err) < 0) {
    fprintf(stderr, "start: %s\n", err.message);
    dmh_subtask_destroy(st);
    return NULL;
  }
  return st;
}

/* ---- the suite ---- */

int sa_suite_init(void) {
  src = lt_source();
  dst = lt_target();
  return src && dst ? 0 : 1;
}

int sa_suite_clean(void) {
  sa_writer_stop(&sa_w);
  if (src && dst)
    for (size_t i = 0; i < sa_n_made; i++)
      sa_clean(sa_made[i]);
  sa_n_made = 0;
  testdb_close(src);
  testdb_close(dst);
  src = dst = NULL;
  return 0;
}

/* ---- one case of mode all ---- */

void sa_case_begin(sa_case *c, const char *db, bool relay, const char *sup) {
  c->db = db;
  c->t0 = lt_now();
  sa_writer_stop(&sa_w);
  c->dl0 = sa_deadlocks();
  CU_ASSERT_FATAL(sa_make_source(db) == 0);
  CU_ASSERT_FATAL(lt_init(&c->e) == 0);
  char source_extra[1024] = "";
  if (relay)
    lt_relay_settings(&c->e, NULL, source_extra, sizeof source_extra);
  CU_ASSERT_FATAL(sa_config(&c->e, db, source_extra, sup) == 0);
}

dmh_subtask *sa_case_start(sa_case *c, dmh_subtask *relay, long long rows) {
  dmh_subtask *st = sa_start(&c->e, relay);
  CU_ASSERT_PTR_NOT_NULL_FATAL(st);
  CU_ASSERT_FATAL(sa_wait_sync(st, rows, 60000));
  return st;
}

void sa_case_end(sa_case *c, dmh_subtask *st) {
  dmh_subtask_destroy(st);
  lt_teardown(&c->e);
  fprintf(stderr, "%s: %.2f s in all, %lld deadlock(s) between the sync workers on the target\n",
          c->db, lt_now() - c->t0, sa_deadlocks() - c->dl0);
}

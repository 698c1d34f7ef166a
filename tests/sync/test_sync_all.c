/*
 * The sync unit in mode all (dump -> load -> sync) with the real units, under the supervisor in
 * this process, while a writer thread keeps changing the source: random multi-statement
 * transactions (inserts, value updates, primary and unique key changes and swaps, deletes,
 * delete + re-insert of a key, multi-row changes, rollbacks) on four tables (int PK, PK + UNIQUE,
 * no key, composite PK) from before the dump starts until sync has run a while. After the writer
 * stops, a marker transaction is written, the sync checkpoint's global row must reach the
 * source's SHOW MASTER STATUS, and the target must equal the source cell by cell.
 *
 *  - mode all reading the source directly, and with the relay on (relay subtask of the source);
 *  - 30 rounds of pause / short sleep / resume while sync runs (never Pausing left behind, no
 *    error ever, in particular no duplicate key);
 *  - hot-swap of the sync unit to another build (a copy whose version string is patched)
 * mid-stream;
 *  - stop, then kill, each followed by a new subtask on the same work dir and task (a process
 *    restart): it starts at the sync unit (dump and load are not run again) from the checkpoint;
 *  - a batch committed by some workers and not by another (kill while one worker waits on a row
 *    this test locks), then a restart: the rebuilt batch must give the worker behind its own part;
 *  - a burst of inserts + updates of a table without a key (whole-row causality, full scans).
 * Each test prints its timings and the deadlocks the target saw between the workers.
 * SYNC_ALL_ONLY=word runs the tests whose name holds it; SA_WRITER_NO_KEYLESS=1 keeps the writer
 * off the table without a key.
 *
 * Small batches (batch = 500, batch-ms = 50) and 4 workers give many batches and causality cases.
 */
#include <CUnit/Basic.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cunit_run.h"
#include "dmhost/error.h"
#include "load_test_util.h"
#include "testdb.h"

#define SA_PK_ROWS 20000
#define SA_UK_ROWS 10000
#define SA_NK_ROWS 5000
#define SA_CK_ROWS 10000 /* 1000 values of a x 10 of b */

static const char sa_sync[] =
    "worker-count = 4; batch = 500; batch-ms = 50; status-interval = 100;";

/* Resumable errors (a lost connection, a deadlock on the target) are resumed at once, as a
 * production task would after its back-off; non-resumable ones wait (and fail the test). */
static const char sa_sup_auto[] =
    "init-timeout = 10; stop-timeout = 5; relay-catchup-timeout = 60; relay-catchup-poll = 50; "
    "auto-resume = { enable = true; backoff-initial = 0.05; backoff-max = 0.2; };";
static const char sa_sup_manual[] =
    "init-timeout = 10; stop-timeout = 5; auto-resume = { enable = false; };";

static MYSQL *src, *dst;

/* ---- databases ---- */

static const char *const sa_dbs[] = {"h6_sa_direct",  "h6_sa_relay",   "h6_sa_storm", "h6_sa_swap",
                                     "h6_sa_restart", "h6_sa_keyless", "h6_sa_split"};

static void sa_clean(const char *db) {
  lt_exec(src, "DROP DATABASE IF EXISTS `%s`", db);
  lt_exec(dst, "DROP DATABASE IF EXISTS `%s`", db);
  lt_exec(dst, "DROP TABLE IF EXISTS dm_meta.`%s_syncer_checkpoint`", db);
  lt_drop_checkpoint(dst, db);
}

static int sa_make_source(const char *db) {
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

/* ---- the writer ---- */

typedef struct sa_writer {
  pthread_t th;
  const char *db;
  unsigned seed;
  atomic_bool stop;
  atomic_bool hold, held; /* hold: wait between transactions; held: waiting now */
  atomic_long commits, rollbacks, failed, rows;
  int next; /* fresh keys */
  bool running;
} sa_writer;

static unsigned sa_rand(unsigned *s) {
  *s = *s * 1103515245u + 12345u;
  return (*s >> 8) & 0xffffff;
}

/* One statement; false when the server refused it (the transaction is then rolled back). */
static bool sa_q(sa_writer *w, MYSQL *c, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static bool sa_q(sa_writer *w, MYSQL *c, const char *fmt, ...) {
  char sql[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(sql, sizeof sql, fmt, ap);
  va_end(ap);
  if (mysql_query(c, sql) != 0) {
    long f = atomic_fetch_add(&w->failed, 1);
    if (f < 5 || mysql_errno(c) != 1062)
      fprintf(stderr, "writer: %s: %s\n", sql, mysql_error(c));
    return false;
  }
  MYSQL_RES *r = mysql_store_result(c);
  if (r)
    mysql_free_result(r);
  long long n = (long long)mysql_affected_rows(c);
  if (n > 0)
    atomic_fetch_add(&w->rows, (long)n);
  return true;
}

/* Two rows' u values of t_uk (locked for the transaction); false if either is missing. */
static bool sa_two_u(MYSQL *c, int a, int b, long long *ua, long long *ub) {
  char q[200];
  snprintf(q, sizeof q, "SELECT id, u FROM t_uk WHERE id IN (%d, %d) FOR UPDATE", a, b);
  if (mysql_query(c, q) != 0)
    return false;
  MYSQL_RES *r = mysql_store_result(c);
  if (!r)
    return false;
  int found = 0;
  MYSQL_ROW row;
  while ((row = mysql_fetch_row(r))) {
    if (atoi(row[0]) == a)
      *ua = atoll(row[1]), found |= 1;
    else
      *ub = atoll(row[1]), found |= 2;
  }
  mysql_free_result(r);
  return found == 3;
}

/* One random statement (or a few that belong together). */
static bool sa_op(sa_writer *w, MYSQL *c, unsigned *s) {
  int x = 1 + (int)(sa_rand(s) % (SA_PK_ROWS + 2000)), y = 1 + (int)(sa_rand(s) % SA_PK_ROWS);
  int r = (int)sa_rand(s);
  unsigned op = sa_rand(s) % 16;
  if ((op == 10 || op == 11) && getenv("SA_WRITER_NO_KEYLESS"))
    op = 14; /* investigation: leave the table without a key alone */
  switch (op) {
  case 0: { /* multi-row insert of new keys */
    int n = 1 + r % 5, id = w->next;
    w->next += n;
    char v[512];
    size_t len = 0;
    for (int i = 0; i < n; i++)
      len += (size_t)snprintf(v + len, sizeof v - len, "%s(%d, %d, 'new-%d', %d.25)", i ? "," : "",
                              id + i, r % 977, r, i);
    return sa_q(w, c, "INSERT INTO t_pk VALUES %s", v);
  }
  case 1: /* value update of a range */
    return sa_q(w, c,
                "UPDATE t_pk SET v = v + 1, s = CONCAT('u', %d, '''') WHERE id BETWEEN %d AND %d",
                r, x, x + r % 20);
  case 2: /* primary key moved to a new value */
    return sa_q(w, c, "UPDATE t_pk SET id = %d WHERE id = %d", w->next++, x);
  case 3: /* primary keys of two rows swapped */
    if (x == y)
      return true;
    return sa_q(w, c, "UPDATE t_pk SET id = %d WHERE id = %d", -x, x) &&
           sa_q(w, c, "UPDATE t_pk SET id = %d WHERE id = %d", x, y) &&
           sa_q(w, c, "UPDATE t_pk SET id = %d WHERE id = %d", y, -x);
  case 4: /* deletes */
    return sa_q(w, c, "DELETE FROM t_pk WHERE id = %d OR id BETWEEN %d AND %d", x, y, y + r % 4);
  case 5: /* a key deleted and inserted again */
    return sa_q(w, c, "DELETE FROM t_pk WHERE id = %d", x) &&
           sa_q(w, c, "INSERT INTO t_pk VALUES (%d, %d, 'again-%d', NULL)", x, r % 100, r);
  case 6: /* unique key table: values */
    return sa_q(w, c, "UPDATE t_uk SET v = v * 3 + %d WHERE id IN (%d, %d, %d)", r % 10,
                x % SA_UK_ROWS, y % SA_UK_ROWS, (x + y) % SA_UK_ROWS);
  case 7: { /* unique key values of two rows swapped */
    int a = 1 + x % SA_UK_ROWS, b = 1 + y % SA_UK_ROWS;
    long long ua, ub;
    if (a == b || !sa_two_u(c, a, b, &ua, &ub))
      return true;
    int tmp = -(w->next++);
    return sa_q(w, c, "UPDATE t_uk SET u = %d WHERE id = %d", tmp, a) &&
           sa_q(w, c, "UPDATE t_uk SET u = %lld WHERE id = %d", ua, b) &&
           sa_q(w, c, "UPDATE t_uk SET u = %lld WHERE id = %d", ub, a);
  }
  case 8: { /* a unique value freed by a delete and taken by a new row */
    int a = 1 + x % SA_UK_ROWS;
    long long ua, ub;
    if (!sa_two_u(c, a, a == 1 ? 2 : 1, &ua, &ub))
      return true;
    int id = w->next++;
    return sa_q(w, c, "DELETE FROM t_uk WHERE id = %d", a) &&
           sa_q(w, c, "INSERT INTO t_uk VALUES (%d, %lld, %d)", id, ua, r % 1000);
  }
  case 9: /* unique key moved to a new value, primary key moved */
    return sa_q(w, c, "UPDATE t_uk SET u = %d WHERE id = %d", w->next++, 1 + x % SA_UK_ROWS) &&
           sa_q(w, c, "UPDATE t_uk SET id = %d WHERE id = %d", w->next++, 1 + y % SA_UK_ROWS);
  case 10: /* no key: inserts (duplicates too), updates and deletes by value */
    return sa_q(w, c, "INSERT INTO t_nokey VALUES (%d, 'nk%d', %d), (%d, 'nk%d', %d)", x % 1000,
                r % 37, r % 5, x % 1000, r % 37, r % 5) &&
           sa_q(w, c, "UPDATE t_nokey SET c = c + 1, b = 'upd' WHERE a = %d", y % 1000);
  case 11:
    return sa_q(w, c, "DELETE FROM t_nokey WHERE a = %d LIMIT %d", x % 1000, 1 + r % 2);
  case 12: /* composite key: a part of the key changed */
    return sa_q(w, c, "UPDATE t_comp SET b = b + 100000 WHERE a = %d AND b = %d", x % 1000, r % 10);
  case 13: /* composite key: rows of one a deleted, new ones inserted */
    return sa_q(w, c, "DELETE FROM t_comp WHERE a = %d", y % 1000) &&
           sa_q(w, c, "INSERT INTO t_comp VALUES (%d, %d, 'n', %d), (%d, %d, 'n2', NULL)", y % 1000,
                w->next, r, y % 1000, w->next + 1) &&
           ((w->next += 2), true);
  case 14:
    return sa_q(w, c, "UPDATE t_comp SET v = CONCAT(v, 'x'), w = w + 1 WHERE a BETWEEN %d AND %d",
                x % 1000, x % 1000 + 3);
  default: /* many rows in one statement */
    return sa_q(w, c, "UPDATE t_pk SET v = v + 1 WHERE id %% 97 = %d AND id < 6000", r % 97);
  }
}

static void *sa_writer_main(void *arg) {
  sa_writer *w = arg;
  MYSQL *c = testdb_connect(TESTDB_SOURCE);
  if (!c)
    return NULL;
  char use[128];
  snprintf(use, sizeof use, "USE `%s`", w->db);
  testdb_exec(c, use);
  unsigned s = w->seed;
  while (!atomic_load(&w->stop)) {
    if (atomic_load(&w->hold)) {
      atomic_store(&w->held, true);
      lt_sleep_ms(2);
      continue;
    }
    atomic_store(&w->held, false);
    bool ok = mysql_query(c, "START TRANSACTION") == 0;
    int n = 1 + (int)(sa_rand(&s) % 5);
    for (int i = 0; ok && i < n; i++)
      ok = sa_op(w, c, &s);
    if (!ok || sa_rand(&s) % 10 == 0) {
      mysql_query(c, "ROLLBACK");
      if (ok)
        atomic_fetch_add(&w->rollbacks, 1);
    } else if (mysql_query(c, "COMMIT") == 0) {
      atomic_fetch_add(&w->commits, 1);
    } else {
      fprintf(stderr, "writer: COMMIT: %s\n", mysql_error(c));
      atomic_fetch_add(&w->failed, 1);
    }
    lt_sleep_ms(1 + (int)(sa_rand(&s) % 3));
  }
  testdb_close(c);
  return NULL;
}

static void sa_writer_stop(sa_writer *w);

/* The writer of the running test (a failed CU_ASSERT_FATAL leaves it running: the next test and
 * the suite's clean-up stop it). */
static sa_writer sa_w;

static void sa_writer_start(sa_writer *w, const char *db, unsigned seed) {
  sa_writer_stop(w);
  memset(w, 0, sizeof *w);
  w->db = db;
  w->seed = seed;
  w->next = 1000000;
  atomic_init(&w->stop, false);
  atomic_init(&w->hold, false);
  atomic_init(&w->held, false);
  w->running = pthread_create(&w->th, NULL, sa_writer_main, w) == 0;
  CU_ASSERT(w->running);
}

static void sa_writer_stop(sa_writer *w) {
  if (!w->running)
    return;
  atomic_store(&w->stop, true);
  pthread_join(w->th, NULL);
  w->running = false;
  fprintf(stderr, "writer: %ld commits, %ld rollbacks, %ld refused statements, %ld rows\n",
          atomic_load(&w->commits), atomic_load(&w->rollbacks), atomic_load(&w->failed),
          atomic_load(&w->rows));
  CU_ASSERT(atomic_load(&w->commits) > 100);
}

/* ---- subtask helpers ---- */

static const char *sa_str(dmh_subtask *st, const char *key, char *buf, size_t len) {
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
static bool sa_wait_sync(dmh_subtask *st, long long rows, int timeout_ms) {
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
static double sa_catch_up(dmh_subtask *st, const char *db, const char *task, int timeout_ms) {
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

static void sa_assert_equal(const char *db) {
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
static void sa_equal_now(dmh_subtask *st, sa_writer *w, const char *db, const char *when) {
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
static long long sa_deadlocks(void) {
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
static void sa_assert_no_error(dmh_subtask *st, const char *when) {
  char msg[600], raw[600];
  int code = lt_first_error(st, msg, sizeof msg, raw, sizeof raw, NULL);
  if (code != 0)
    fprintf(stderr, "%s: error %d: %s (%s)\n", when, code, msg, raw);
  CU_ASSERT_EQUAL(code, 0);
  CU_ASSERT_PTR_NULL(strstr(raw, "Duplicate entry"));
}

/* The task of mode all over `db` (task named like it); source_extra: relay settings. */
static int sa_config(lt_env *e, const char *db, const char *source_extra, const char *sup) {
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

static dmh_subtask *sa_start(lt_env *e, dmh_subtask *relay) {
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

/* ---- stderr capture (the host's log lines) ---- */

typedef struct sa_capture {
  int saved;
  char path[400];
} sa_capture;

static void sa_capture_begin(sa_capture *c, const char *dir) {
  snprintf(c->path, sizeof c->path, "%s/captured.log", dir);
  fflush(stderr);
  c->saved = dup(STDERR_FILENO);
  int fd = open(c->path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd >= 0) {
    dup2(fd, STDERR_FILENO);
    close(fd);
  }
}

/* Restores stderr, shows what was captured there, returns it (caller frees). */
static char *sa_capture_end(sa_capture *c) {
  fflush(stderr);
  dup2(c->saved, STDERR_FILENO);
  close(c->saved);
  FILE *f = fopen(c->path, "r");
  if (!f)
    return strdup("");
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *text = calloc(1, (size_t)n + 1);
  if (text && fread(text, 1, (size_t)n, f) != (size_t)n)
    text[0] = '\0';
  fclose(f);
  fputs(text ? text : "", stderr);
  return text ? text : strdup("");
}

/* ---- tests ---- */

static int suite_init(void) {
  src = lt_source();
  dst = lt_target();
  return src && dst ? 0 : 1;
}

static int suite_clean(void) {
  sa_writer_stop(&sa_w);
  if (src && dst)
    for (size_t i = 0; i < sizeof sa_dbs / sizeof *sa_dbs; i++)
      sa_clean(sa_dbs[i]);
  testdb_close(src);
  testdb_close(dst);
  src = dst = NULL;
  return 0;
}

/* Mode all from start to a caught-up sync with the writer running throughout. */
static void sa_mode_all(const char *db, bool relay_on) {
  double t0 = lt_now();
  sa_writer_stop(&sa_w);
  long long dl0 = sa_deadlocks();
  CU_ASSERT_FATAL(sa_make_source(db) == 0);
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  char source_extra[1024] = "";
  if (relay_on)
    lt_relay_settings(&e, NULL, source_extra, sizeof source_extra);
  CU_ASSERT_FATAL(sa_config(&e, db, source_extra, sa_sup_auto) == 0);
  dmh_subtask *relay = NULL;
  if (relay_on) {
    relay = lt_relay(&e);
    CU_ASSERT_FATAL(relay != NULL);
    dm_error err;
    CU_ASSERT_FATAL(dmh_subtask_start(relay, &err) == 0);
  }
  sa_writer *w = &sa_w;
  sa_writer_start(w, db, relay_on ? 7 : 3);
  lt_sleep_ms(500); /* writes before the dump */
  double t1 = lt_now();
  dmh_subtask *st = sa_start(&e, relay);
  CU_ASSERT_FATAL(st != NULL);
  bool in_sync = sa_wait_sync(st, 1, 60000);
  CU_ASSERT(in_sync);
  double t_sync = lt_now() - t1;
  if (in_sync)
    lt_sleep_ms(3000); /* sync runs a while with the writer */
  sa_writer_stop(w);
  double caught = sa_catch_up(st, db, db, 60000);
  sa_assert_no_error(st, db);
  CU_ASSERT_EQUAL(dmh_subtask_stage(st), DMH_STAGE_RUNNING);
  fprintf(stderr, "%s: dump + load%s until sync ran: %.2f s, %lld rows synced, catch-up %.2f s\n",
          db, relay_on ? " + relay catch-up" : "", t_sync, lt_status_int(st, "totalRows"), caught);
  sa_assert_equal(db);
  dmh_subtask_destroy(st);
  dmh_subtask_destroy(relay);
  lt_teardown(&e);
  fprintf(stderr, "%s: %.2f s in all, %lld deadlock(s) between the sync workers on the target\n",
          db, lt_now() - t0, sa_deadlocks() - dl0);
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
  double t0 = lt_now();
  sa_writer_stop(&sa_w);
  long long dl0 = sa_deadlocks();
  CU_ASSERT_FATAL(sa_make_source(db) == 0);
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  CU_ASSERT_FATAL(sa_config(&e, db, NULL, sa_sup_manual) == 0);
  sa_writer *w = &sa_w;
  sa_writer_start(w, db, 11);
  lt_sleep_ms(200);
  dmh_subtask *st = sa_start(&e, NULL);
  CU_ASSERT_FATAL(st != NULL);
  CU_ASSERT_FATAL(sa_wait_sync(st, 1, 60000));
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
  dmh_subtask_destroy(st);
  lt_teardown(&e);
  fprintf(stderr, "%s: %.2f s in all, %lld deadlock(s) between the sync workers on the target\n",
          db, lt_now() - t0, sa_deadlocks() - dl0);
}

/* A copy of dmhost-sync.so with its version string "0.1.0" patched to "0.1.9" (same length):
 * a build the status can tell apart. Returns the number of places patched. */
static int sa_patched_copy(const char *from, const char *to) {
  FILE *f = fopen(from, "rb");
  if (!f)
    return -1;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc((size_t)n);
  if (!b || fread(b, 1, (size_t)n, f) != (size_t)n) {
    fclose(f);
    free(b);
    return -1;
  }
  fclose(f);
  static const char ver[] = "\0000.1.0"; /* NUL, then the string and its NUL */
  int patched = 0;
  for (long i = 0; i + (long)sizeof ver <= n; i++)
    if (memcmp(b + i, ver, sizeof ver) == 0) {
      b[i + 5] = '9';
      patched++;
    }
  FILE *o = fopen(to, "wb");
  if (!o || fwrite(b, 1, (size_t)n, o) != (size_t)n) {
    if (o)
      fclose(o);
    free(b);
    return -1;
  }
  fclose(o);
  chmod(to, 0755);
  free(b);
  return patched;
}

static void test_swap_mid_stream(void) {
  const char *db = "h6_sa_swap";
  double t0 = lt_now();
  sa_writer_stop(&sa_w);
  long long dl0 = sa_deadlocks();
  CU_ASSERT_FATAL(sa_make_source(db) == 0);
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  CU_ASSERT_FATAL(sa_config(&e, db, NULL, sa_sup_auto) == 0);
  char newso[400];
  snprintf(newso, sizeof newso, "%s/new-build-dmhost-sync.so", e.dir);
  int patched = sa_patched_copy(SYNC_SO, newso);
  fprintf(stderr, "swap: version string patched in %d place(s)\n", patched);
  CU_ASSERT_FATAL(patched >= 1);
  sa_writer *w = &sa_w;
  sa_writer_start(w, db, 21);
  lt_sleep_ms(200);
  dmh_subtask *st = sa_start(&e, NULL);
  CU_ASSERT_FATAL(st != NULL);
  CU_ASSERT_FATAL(sa_wait_sync(st, 1, 60000));
  char v[64];
  CU_ASSERT_STRING_EQUAL(sa_str(st, "unitBuild", v, sizeof v), "dmhost-sync");
  CU_ASSERT_STRING_EQUAL(sa_str(st, "unitVersion", v, sizeof v), "0.1.0");
  lt_sleep_ms(1000);
  long long before = lt_status_int(st, "totalRows");
  dm_error err;
  sa_capture cap;
  sa_capture_begin(&cap, e.dir);
  double s0 = lt_now();
  int rc = dmh_subtask_swap_unit(st, "sync", newso, &err);
  double swap_secs = lt_now() - s0;
  char *log = sa_capture_end(&cap);
  if (rc != 0)
    fprintf(stderr, "swap: %s\n", err.message);
  CU_ASSERT_EQUAL(rc, 0);
  /* the host logs which build it swapped to; the status shows the new version */
  CU_ASSERT_PTR_NOT_NULL(strstr(log, newso));
  CU_ASSERT_PTR_NOT_NULL(strstr(log, "0.1.0 -> dmhost-sync 0.1.9"));
  free(log);
  CU_ASSERT_STRING_EQUAL(sa_str(st, "unitVersion", v, sizeof v), "0.1.9");
  CU_ASSERT_STRING_EQUAL(sa_str(st, "unit", v, sizeof v), "Sync");
  CU_ASSERT_EQUAL(dmh_subtask_stage(st), DMH_STAGE_RUNNING);
  /* the new instance goes on (its counters start at 0) */
  double end = lt_now() + 20;
  long long after = 0;
  while (lt_now() < end && (after = lt_status_int(st, "totalRows")) <= 0)
    lt_sleep_ms(20);
  CU_ASSERT(after > 0);
  lt_sleep_ms(1000);
  sa_writer_stop(w);
  double caught = sa_catch_up(st, db, db, 60000);
  sa_assert_no_error(st, "after the swap");
  CU_ASSERT_STRING_EQUAL(sa_str(st, "unitVersion", v, sizeof v), "0.1.9");
  fprintf(stderr,
          "swap: %lld rows by the old build, swap took %.3f s, %lld rows by the new one, catch-up "
          "%.2f s\n",
          before, swap_secs, lt_status_int(st, "totalRows"), caught);
  sa_assert_equal(db);
  dmh_subtask_destroy(st);
  lt_teardown(&e);
  fprintf(stderr, "%s: %.2f s in all, %lld deadlock(s) between the sync workers on the target\n",
          db, lt_now() - t0, sa_deadlocks() - dl0);
}

static long long sa_mtime_ns(const char *path) {
  struct stat sb;
  if (stat(path, &sb) != 0)
    return -1;
  return (long long)sb.st_mtim.tv_sec * 1000000000LL + sb.st_mtim.tv_nsec;
}

/* Stop (then kill) mid-stream; a new subtask on the same work dir goes on from the checkpoint. */
static void test_stop_restart(void) {
  const char *db = "h6_sa_restart";
  double t0 = lt_now();
  sa_writer_stop(&sa_w);
  long long dl0 = sa_deadlocks();
  CU_ASSERT_FATAL(sa_make_source(db) == 0);
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  CU_ASSERT_FATAL(sa_config(&e, db, NULL, sa_sup_auto) == 0);
  sa_writer *w = &sa_w;
  sa_writer_start(w, db, 31);
  lt_sleep_ms(200);
  dmh_subtask *st = sa_start(&e, NULL);
  CU_ASSERT_FATAL(st != NULL);
  CU_ASSERT_FATAL(sa_wait_sync(st, 1, 60000));
  char meta[400];
  snprintf(meta, sizeof meta, "%s/dump/metadata", e.work);
  long long meta_mtime = sa_mtime_ns(meta);
  CU_ASSERT(meta_mtime > 0);
  long long loaded = lt_count(dst, "SELECT COUNT(*) FROM dm_meta.`%s_loader_checkpoint`", db);
  lt_sleep_ms(700);
  sa_equal_now(st, w, db, "before the stop");
  for (int round = 0; round < 2; round++) {
    lt_sleep_ms(1000);
    dm_error err;
    long long rows = lt_status_int(st, "totalRows");
    double s0 = lt_now();
    int rc = round == 0 ? dmh_subtask_stop(st, &err) : dmh_subtask_kill(st, &err);
    double secs = lt_now() - s0;
    if (rc != 0)
      fprintf(stderr, "%s: %s\n", round == 0 ? "stop" : "kill", err.message);
    CU_ASSERT_EQUAL(rc, 0);
    CU_ASSERT_EQUAL(dmh_subtask_stage(st), DMH_STAGE_STOPPED);
    sa_assert_no_error(st, round == 0 ? "stop" : "kill");
    fprintf(stderr, "restart: %s took %.3f s after %lld rows\n", round == 0 ? "stop" : "kill", secs,
            rows);
    dmh_subtask_destroy(st);
    lt_sleep_ms(300); /* the writer goes on while "the process" is down */
    /* as a new process would: a new subtask on the same work dir, task and checkpoints */
    sa_capture cap;
    sa_capture_begin(&cap, e.dir);
    st = sa_start(&e, NULL);
    char unit[32] = "";
    if (st)
      sa_str(st, "unit", unit, sizeof unit);
    lt_sleep_ms(300);
    char *log = sa_capture_end(&cap);
    CU_ASSERT_FATAL(st != NULL);
    CU_ASSERT_STRING_EQUAL(unit, "Sync"); /* dump and load are done: not run again */
    CU_ASSERT_PTR_NOT_NULL(strstr(log, "starting at the sync unit"));
    CU_ASSERT_PTR_NULL(strstr(log, "dump unit finished"));
    CU_ASSERT_PTR_NULL(strstr(log, "sync: first start"));
    free(log);
    CU_ASSERT(sa_wait_sync(st, 1, 30000));
    lt_sleep_ms(700);
    sa_equal_now(st, w, db, round == 0 ? "after stop + restart" : "after kill + restart");
  }
  sa_writer_stop(w);
  double caught = sa_catch_up(st, db, db, 60000);
  sa_assert_no_error(st, "after the restarts");
  CU_ASSERT_EQUAL(sa_mtime_ns(meta), meta_mtime); /* the dump did not run again */
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM dm_meta.`%s_loader_checkpoint`", db), loaded);
  fprintf(stderr, "restart: catch-up %.2f s\n", caught);
  sa_assert_equal(db);
  dmh_subtask_destroy(st);
  lt_teardown(&e);
  fprintf(stderr, "%s: %.2f s in all, %lld deadlock(s) between the sync workers on the target\n",
          db, lt_now() - t0, sa_deadlocks() - dl0);
}

/* Row changes of a table without a key: each UPDATE .. LIMIT 1 scans the table and locks every
 * row it reads (InnoDB), so two workers that both changed such a table in one batch would deadlock
 * on the target. The unit gives all changes of a keyless table one causality group (one worker);
 * written when they were spread by whole-row causality, this test checks the result: no error at
 * all, and the target equal to the source. */
static void test_keyless_workers(void) {
  const char *db = "h6_sa_keyless";
  double t0 = lt_now();
  sa_writer_stop(&sa_w);
  long long dl0 = sa_deadlocks();
  CU_ASSERT_FATAL(sa_make_source(db) == 0);
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  CU_ASSERT_FATAL(sa_config(&e, db, NULL, sa_sup_manual) == 0);
  dmh_subtask *st = sa_start(&e, NULL);
  CU_ASSERT_FATAL(st != NULL);
  CU_ASSERT_FATAL(sa_wait_sync(st, 0, 60000));
  /* 400 transactions, each: a new row, and an update of an old one found by its value */
  MYSQL *c = lt_source();
  CU_ASSERT_FATAL(c != NULL);
  lt_exec(c, "USE `%s`", db);
  for (int i = 0; i < 400; i++)
    lt_exec(c,
            "START TRANSACTION; INSERT INTO t_nokey VALUES (%d, 'burst', %d); "
            "UPDATE t_nokey SET c = c + 1 WHERE a = %d AND c = %d; COMMIT",
            5000 + i, i, (i + 1) % 1000, i + 1); /* initially a = seq % 1000, c = seq */
  testdb_close(c);
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
  dmh_subtask_destroy(st);
  lt_teardown(&e);
  fprintf(stderr, "%s: %.2f s in all, %lld deadlock(s) between the sync workers on the target\n",
          db, lt_now() - t0, sa_deadlocks() - dl0);
}

/* A batch whose parts were committed by some workers and not by another (what a crash or kill
 * between the workers' commits leaves): one worker's statement waits on a row this test locks on
 * the target while the others commit, then the subtask is killed and the orphaned statement too.
 * A new subtask (a restarted process) rebuilds the batch and only the worker behind applies its
 * part: that must be the part it had (docs: "the same batch ... gives every worker the same part
 * again"). Before the batch, a change of t_uk makes the first instance see t_uk before t_pk; the
 * new instance sees t_pk first. */
static void test_kill_split_batch(void) {
  const char *db = "h6_sa_split";
  double t0 = lt_now();
  sa_writer_stop(&sa_w);
  long long dl0 = sa_deadlocks();
  CU_ASSERT_FATAL(sa_make_source(db) == 0);
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  CU_ASSERT_FATAL(sa_config(&e, db, NULL, sa_sup_manual) == 0);
  dmh_subtask *st = sa_start(&e, NULL);
  CU_ASSERT_FATAL(st != NULL);
  CU_ASSERT_FATAL(sa_wait_sync(st, 0, 60000));
  CU_ASSERT(lt_exec(src, "UPDATE `%s`.t_uk SET v = v + 1 WHERE id = 1", db) == 0);
  CU_ASSERT(sa_catch_up(st, db, db, 30000) >= 0);
  MYSQL *locker = lt_target();
  CU_ASSERT_FATAL(locker != NULL);
  CU_ASSERT(lt_exec(locker, "START TRANSACTION") == 0);
  CU_ASSERT(lt_count(locker, "SELECT COUNT(*) FROM `%s`.t_pk WHERE id = 5 FOR UPDATE", db) == 1);
  /* one transaction, one batch: 400 rows of t_pk spread over the 4 workers */
  CU_ASSERT(lt_exec(src, "UPDATE `%s`.t_pk SET v = v + 1000 WHERE id BETWEEN 1 AND 400", db) == 0);
  char q[300];
  snprintf(q, sizeof q,
           "SELECT COUNT(DISTINCT binlog_pos) FROM dm_meta.`%s_syncer_checkpoint` WHERE is_global "
           "= 0",
           db);
  double end = lt_now() + 20;
  while (lt_now() < end && lt_count(dst, "%s", q) < 2)
    lt_sleep_ms(10);
  CU_ASSERT_FATAL(lt_count(dst, "%s", q) == 2); /* the worker rows disagree */
  lt_sleep_ms(200);
  dm_error err;
  CU_ASSERT(dmh_subtask_kill(st, &err) == 0);
  dmh_subtask_destroy(st);
  /* the orphaned statement of the blocked worker dies too (as with a crashed process whose
   * connection the server rolls back) */
  long long orphan = lt_count(dst,
                              "SELECT MIN(ID) FROM information_schema.PROCESSLIST WHERE ID <> "
                              "CONNECTION_ID() AND COMMAND = 'Query' AND INFO LIKE '%%%s%%'",
                              db);
  fprintf(stderr, "split: killing the orphaned worker statement, connection %lld\n", orphan);
  if (orphan > 0)
    lt_exec(dst, "KILL %lld", orphan);
  lt_exec(locker, "ROLLBACK");
  testdb_close(locker);
  lt_sleep_ms(200);
  CU_ASSERT(lt_count(dst, "%s", q) == 2);
  st = sa_start(&e, NULL);
  CU_ASSERT_FATAL(st != NULL);
  double caught = sa_catch_up(st, db, db, 30000);
  sa_assert_no_error(st, "after the rebuilt batch");
  fprintf(
      stderr, "split: catch-up %.2f s, rows of the batch on the target: %lld of 400\n", caught,
      lt_count(dst, "SELECT COUNT(*) FROM `%s`.t_pk WHERE id BETWEEN 1 AND 400 AND v >= 1000", db));
  sa_assert_equal(db);
  dmh_subtask_destroy(st);
  lt_teardown(&e);
  fprintf(stderr, "%s: %.2f s in all, %lld deadlock(s) between the sync workers on the target\n",
          db, lt_now() - t0, sa_deadlocks() - dl0);
}

/* SYNC_ALL_ONLY=word runs only the tests whose name holds it. */
int main(void) {
  static const dmh_cunit_test tests[] = {
      {"mode all with writes going on, source read directly", test_mode_all_direct},
      {"mode all with writes going on, relay on", test_mode_all_relay},
      {"pause/resume storm during sync", test_pause_resume_storm},
      {"swap of the sync unit mid-stream", test_swap_mid_stream},
      {"stop and kill, restarted from the checkpoint", test_stop_restart},
      {"kill between the commits of one batch, restart", test_kill_split_batch},
      {"workers do not fail each other on a table without a key", test_keyless_workers},
  };
  static const dmh_cunit_suite suite = {"sync_all", suite_init, suite_clean, tests,
                                        sizeof tests / sizeof tests[0]};
  return dmh_cunit_run_suites(&suite, 1, "SYNC_ALL_ONLY");
}

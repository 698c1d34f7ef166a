/*
 * The sync unit in mode all (dump -> load -> sync, the real units), replaced or restarted while
 * the writer of sync_all_util.h keeps changing the source; the target is compared with the source
 * cell by cell:
 *  - hot-swap of the sync unit to another build (a copy whose version string is patched)
 *    mid-stream;
 *  - stop, then kill, each followed by a new subtask on the same work dir and task (a process
 *    restart): it starts at the sync unit (dump and load are not run again) from the checkpoint;
 *  - a batch committed by some workers and not by another (kill while one worker waits on a row
 *    this test locks), then a restart: the rebuilt batch must give the worker behind its own part;
 *    the same with a batch that the source's rotation ended (no transaction end to stop at);
 *  - the source's end of the binlog stream killed mid-stream: opened again, no pause.
 * Each test prints its timings and the deadlocks the target saw between the workers.
 */
#include <CUnit/Basic.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cunit_run.h"
#include "dmhost/error.h"
#include "sync_all_util.h"
#include "testdb.h"

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
  sa_case c;
  sa_case_begin(&c, db, false, sa_sup_auto);
  char newso[400];
  snprintf(newso, sizeof newso, "%s/new-build-dmhost-sync.so", c.e.dir);
  int patched = sa_patched_copy(SYNC_SO, newso);
  fprintf(stderr, "swap: version string patched in %d place(s)\n", patched);
  CU_ASSERT_FATAL(patched >= 1);
  sa_writer *w = &sa_w;
  sa_writer_start(w, db, 21);
  lt_sleep_ms(200);
  dmh_subtask *st = sa_case_start(&c, NULL, 1);
  char v[64];
  CU_ASSERT_STRING_EQUAL(sa_str(st, "unitBuild", v, sizeof v), "dmhost-sync");
  CU_ASSERT_STRING_EQUAL(sa_str(st, "unitVersion", v, sizeof v), "0.1.0");
  lt_sleep_ms(1000);
  long long before = lt_status_int(st, "totalRows");
  dm_error err;
  sa_capture cap;
  sa_capture_begin(&cap, c.e.dir);
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
  sa_case_end(&c, st);
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
  sa_case c;
  sa_case_begin(&c, db, false, sa_sup_auto);
  sa_writer *w = &sa_w;
  sa_writer_start(w, db, 31);
  lt_sleep_ms(200);
  dmh_subtask *st = sa_case_start(&c, NULL, 1);
  char meta[400];
  snprintf(meta, sizeof meta, "%s/dump/metadata", c.e.work);
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
    sa_capture_begin(&cap, c.e.dir);
    st = sa_start(&c.e, NULL);
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
  sa_case_end(&c, st);
}

/* Whether a statement waits on a row lock of db.table, as SHOW ENGINE INNODB STATUS lists it
 * ("RECORD LOCKS ... of table `db`.`table` ... waiting"). information_schema.INNODB_TRX is no
 * witness: on MariaDB 10.11 it did not list the sync worker's waiting transaction (a multi-row
 * INSERT) that the engine status showed as LOCK WAIT. */
static bool sa_lock_waiting(MYSQL *m, const char *db, const char *table) {
  char want[300];
  snprintf(want, sizeof want, "of table `%s`.`%s` ", db, table);
  bool found = false;
  if (mysql_query(m, "SHOW ENGINE INNODB STATUS") != 0)
    return false;
  MYSQL_RES *res = mysql_store_result(m);
  MYSQL_ROW row = res ? mysql_fetch_row(res) : NULL;
  if (row && mysql_num_fields(res) >= 3 && row[2]) {
    for (const char *l = strstr(row[2], want); l && !found; l = strstr(l + 1, want)) {
      const char *eol = strchr(l, '\n');
      const char *w = strstr(l, " waiting");
      found = w && (!eol || w < eol);
    }
  }
  mysql_free_result(res);
  return found;
}

/* A split batch: the subtask with one worker blocked on a lock the test's `locker` holds on the
 * target, its other workers committed. */
typedef struct sa_split {
  const char *db;
  char behind[900]; /* the worker rows behind the furthest one (a count) */
  char ahead[400];  /* the furthest worker row: binlog_name, binlog_pos */
  char row0[300];   /* worker 0's row, read with a lock, NOWAIT */
  MYSQL *locker;
} sa_split;

static void sa_split_init(sa_split *s, const char *db) {
  s->db = db;
  /* A worker row is a position and the rows done of the transaction there (a batch closed inside a
   * transaction when batch-ms passed between its events) */
  char wq[300];
  snprintf(wq, sizeof wq,
           "SELECT binlog_name n, binlog_pos p, COALESCE(JSON_VALUE(table_info, '$.rows'), 0) + "
           "0 r FROM dm_meta.`%s_syncer_checkpoint` WHERE is_global = 0",
           db);
  snprintf(s->behind, sizeof s->behind,
           "SELECT COUNT(*) FROM (%s) w JOIN (%s ORDER BY n DESC, p DESC, r DESC LIMIT 1) m ON "
           "(w.n, w.p, w.r) <> (m.n, m.p, m.r)",
           wq, wq);
  snprintf(s->ahead, sizeof s->ahead, "%s ORDER BY n DESC, p DESC, r DESC LIMIT 1", wq);
  snprintf(s->row0, sizeof s->row0,
           "SELECT COUNT(*) FROM dm_meta.`%s_syncer_checkpoint` WHERE id = 'lsrc' AND cp_schema = "
           "'' AND cp_table = '_worker_000' FOR UPDATE NOWAIT",
           db);
  s->locker = NULL;
}

/* Whether another transaction holds worker 0's checkpoint row (a NOWAIT read refused). */
static bool sa_row0_locked(sa_split *s) {
  if (mysql_query(dst, s->row0) == 0) {
    mysql_free_result(mysql_store_result(dst));
    return false;
  }
  return mysql_errno(dst) == 1205; /* ER_LOCK_WAIT_TIMEOUT */
}

/* Waits for the split that lasts: a worker waits on the locker's row of db.table, and exactly one
 * worker row (its own) is behind the others (which wait for it: one batch is in flight at a
 * time). A count of distinct worker rows alone also sees the moment between two workers' commits
 * of a batch nothing blocks (seen in a CI run under ASan: 2 distinct rows, then 1 a moment later).
 * With `solo` (the locker holds a worker row other than worker 0's), a solo batch that waits
 * instead ends the wait (false, *solo set): worker 0 waits on the checkpoint table holding its own
 * row, and no worker row is ahead (sync_run_batch.c, SYNC_SOLO_ROWS). */
static bool sa_split_wait(sa_split *s, const char *db, const char *table, bool *solo) {
  double end = lt_now() + 30;
  bool split = false;
  while (!split && lt_now() < end) {
    bool waiting = sa_lock_waiting(dst, db, table);
    long long behind = lt_count(dst, "%s", s->behind);
    split = waiting && behind == 1;
    if (solo && waiting && behind == 0 && sa_row0_locked(s)) {
      *solo = true;
      return false;
    }
    if (!split)
      lt_sleep_ms(10);
  }
  if (!split)
    fprintf(stderr, "split: not reached: a worker waiting on the lock: %s, %lld row(s) behind\n",
            sa_lock_waiting(dst, db, table) ? "yes" : "no", lt_count(dst, "%s", s->behind));
  return split;
}

/* The subtask killed, and the orphaned statement of the blocked worker too (as with a crashed
 * process whose connection the server rolls back); the locker's transaction ends, and `behind`
 * worker rows are still behind the furthest. Then a new subtask (a restarted process) must rebuild
 * the batch (if any row was behind) and catch up; it is returned running. */
static dmh_subtask *sa_split_kill_restart(sa_split *s, lt_env *e, dmh_subtask *st,
                                          long long behind) {
  dm_error err;
  CU_ASSERT(dmh_subtask_kill(st, &err) == 0);
  dmh_subtask_destroy(st);
  long long orphan = lt_count(dst,
                              "SELECT MIN(ID) FROM information_schema.PROCESSLIST WHERE ID <> "
                              "CONNECTION_ID() AND COMMAND = 'Query' AND INFO LIKE '%%%s%%'",
                              s->db);
  fprintf(stderr, "split: killing the orphaned worker statement, connection %lld\n", orphan);
  if (orphan > 0)
    lt_exec(dst, "KILL %lld", orphan);
  lt_exec(s->locker, "ROLLBACK");
  testdb_close(s->locker);
  s->locker = NULL;
  double end = lt_now() + 30; /* the killed connection ends (its transaction rolled back) */
  while (orphan > 0 && lt_now() < end &&
         lt_count(dst, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = %lld",
                  orphan) != 0)
    lt_sleep_ms(10);
  CU_ASSERT(lt_count(dst, "%s", s->behind) == behind); /* the kill left the rows as they were */
  st = sa_start(e, NULL);
  CU_ASSERT_FATAL(st != NULL);
  double caught = sa_catch_up(st, s->db, s->db, 30000);
  sa_assert_no_error(st, "after the rebuilt batch");
  fprintf(stderr, "split: catch-up after the restart %.2f s\n", caught);
  return st;
}

/* s->locker opened, in a transaction that locks worker w's checkpoint row (by its unique key: a
 * scan would lock the other workers' rows too). */
static bool sa_lock_worker_row(sa_split *s, int w) {
  s->locker = lt_target();
  return s->locker && lt_exec(s->locker, "START TRANSACTION") == 0 &&
         lt_count(s->locker,
                  "SELECT COUNT(*) FROM dm_meta.`%s_syncer_checkpoint` WHERE id = 'lsrc' AND "
                  "cp_schema = '' AND cp_table = '_worker_%03d' FOR UPDATE",
                  s->db, w) == 1;
}

/* The locker's transaction ended, the connection closed (a failed precondition's way out: else the
 * blocked worker holds the suite's end up). */
static void sa_split_release(sa_split *s) {
  if (s->locker) {
    lt_exec(s->locker, "ROLLBACK");
    testdb_close(s->locker);
    s->locker = NULL;
  }
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
  sa_case c;
  sa_case_begin(&c, db, false, sa_sup_manual);
  dmh_subtask *st = sa_case_start(&c, NULL, 0);
  CU_ASSERT(lt_exec(src, "UPDATE `%s`.t_uk SET v = v + 1 WHERE id = 1", db) == 0);
  CU_ASSERT(sa_catch_up(st, db, db, 30000) >= 0);
  sa_split s;
  sa_split_init(&s, db);
  s.locker = lt_target();
  CU_ASSERT_FATAL(s.locker != NULL);
  CU_ASSERT(lt_exec(s.locker, "START TRANSACTION") == 0);
  CU_ASSERT(lt_count(s.locker, "SELECT COUNT(*) FROM `%s`.t_pk WHERE id = 5 FOR UPDATE", db) == 1);
  /* one transaction, one batch (or a few, on a loaded machine): 400 rows of t_pk spread over the
   * 4 workers */
  CU_ASSERT(lt_exec(src, "UPDATE `%s`.t_pk SET v = v + 1000 WHERE id BETWEEN 1 AND 400", db) == 0);
  bool split = sa_split_wait(&s, db, "t_pk", NULL);
  if (!split)
    sa_split_release(&s);
  CU_ASSERT_FATAL(split);
  st = sa_split_kill_restart(&s, &c.e, st, 1);
  fprintf(
      stderr, "split: rows of the batch on the target: %lld of 400\n",
      lt_count(dst, "SELECT COUNT(*) FROM `%s`.t_pk WHERE id BETWEEN 1 AND 400 AND v >= 1000", db));
  sa_assert_equal(db);
  sa_case_end(&c, st);
}

/* Whether (file, pos) is the end of an event between transactions: the rotation at the end of an
 * older file, or one of the events that open a file (format description, GTID list, binlog
 * checkpoint) before its first transaction. */
static bool sa_outside_end(const char *file, unsigned long long pos) {
  char q[300];
  snprintf(q, sizeof q, "SHOW BINLOG EVENTS IN '%s' FROM 4 LIMIT 8", file);
  bool found = false;
  if (mysql_query(src, q) == 0) {
    MYSQL_RES *res = mysql_store_result(src);
    MYSQL_ROW row;
    while (res && !found && (row = mysql_fetch_row(res)) != NULL) {
      /* Log_name, Pos, Event_type, Server_id, End_log_pos, Info */
      if (row[2] && row[4] && strtoull(row[4], NULL, 10) == pos)
        found = strcmp(row[2], "Format_desc") == 0 || strcmp(row[2], "Gtid_list") == 0 ||
                strcmp(row[2], "Binlog_checkpoint") == 0;
      if (row[2] && strcmp(row[2], "Gtid") == 0)
        break; /* the first transaction */
    }
    mysql_free_result(res);
  }
  if (!found) {
    if (mysql_query(src, "SHOW BINARY LOGS") == 0) {
      MYSQL_RES *res = mysql_store_result(src);
      MYSQL_ROW row;
      bool next = false; /* a newer file follows: this one ends with its rotation */
      unsigned long long size = 0;
      bool seen = false;
      while (res && (row = mysql_fetch_row(res)) != NULL) {
        if (seen)
          next = true;
        if (row[0] && row[1] && strcmp(row[0], file) == 0) {
          seen = true;
          size = strtoull(row[1], NULL, 10);
        }
      }
      mysql_free_result(res);
      found = seen && next && size == pos;
    }
  }
  return found;
}

/* As above, but the batch ends at the source's rotation, not at a transaction end: a worker's
 * checkpoint row is locked on the target, FLUSH BINARY LOGS makes a batch of the rotation's
 * events alone, and the kill comes while that worker waits. The restart must end its rebuild at
 * that event too; a rebuild that compared positions at transaction ends only read on past it (seen
 * in a CI run, 'a DDL ... lies inside the batch'; here 'not a transaction end'). Other tests write
 * to the same source: a batch that ended at one of their (filtered) transactions is let go and the
 * case tried again. */
static void test_kill_split_rotation(void) {
  const char *db = "h6_sa_rot";
  sa_case c;
  sa_case_begin(&c, db, false, sa_sup_manual);
  dmh_subtask *st = sa_case_start(&c, NULL, 0);
  sa_split s;
  sa_split_init(&s, db);
  char cp[200];
  snprintf(cp, sizeof cp, "%s_syncer_checkpoint", db);
  bool rotated = false;
  for (int attempt = 1; attempt <= 10 && !rotated; attempt++) {
    CU_ASSERT_FATAL(sa_catch_up(st, db, db, 30000) >= 0);
    CU_ASSERT_FATAL(sa_lock_worker_row(&s, 1));
    CU_ASSERT(lt_exec(src, "FLUSH BINARY LOGS") == 0);
    bool solo = false;
    bool split = sa_split_wait(&s, "dm_meta", cp, &solo);
    if (!split)
      sa_split_release(&s);
    if (solo) { /* another test's (filtered) transaction came first, in a solo batch */
      fprintf(stderr, "rotation: attempt %d: a solo batch waits on the row: again\n", attempt);
      continue;
    }
    CU_ASSERT_FATAL(split);
    char name[128] = "";
    long long pos = -1;
    MYSQL_RES *res = NULL;
    MYSQL_ROW row;
    if (mysql_query(dst, s.ahead) == 0 && (res = mysql_store_result(dst)) != NULL &&
        (row = mysql_fetch_row(res)) != NULL && row[0] && row[1]) {
      snprintf(name, sizeof name, "%s", row[0]);
      pos = strtoll(row[1], NULL, 10);
    }
    mysql_free_result(res);
    rotated = pos > 0 && sa_outside_end(name, (unsigned long long)pos);
    fprintf(stderr, "rotation: attempt %d: the split batch ends at %s:%lld, %s\n", attempt, name,
            pos, rotated ? "an event between transactions" : "a transaction's end: again");
    if (!rotated)
      sa_split_release(&s);
  }
  CU_ASSERT_FATAL(rotated);
  st = sa_split_kill_restart(&s, &c.e, st, 1);
  sa_assert_equal(db);
  sa_case_end(&c, st);
}

/* A batch of a few row changes goes to worker 0 alone, whose one transaction moves every worker's
 * row (docs/sync.md, "solo"; split, three workers would commit and one wait): with worker 2's row
 * locked on the target, a one-row change leaves no worker row ahead while worker 0 waits holding
 * its own row; a kill there restarts without a rebuild, and the change is applied once. */
static void test_kill_solo_batch(void) {
  const char *db = "h6_sa_solo";
  sa_case c;
  sa_case_begin(&c, db, false, sa_sup_manual);
  dmh_subtask *st = sa_case_start(&c, NULL, 0);
  CU_ASSERT_FATAL(sa_catch_up(st, db, db, 30000) >= 0);
  sa_split s;
  sa_split_init(&s, db);
  CU_ASSERT_FATAL(sa_lock_worker_row(&s, 2));
  long long v0 = lt_count(dst, "SELECT v FROM `%s`.t_pk WHERE id = 7", db);
  CU_ASSERT_FATAL(v0 >= 0);
  CU_ASSERT(lt_exec(src, "UPDATE `%s`.t_pk SET v = v + 1 WHERE id = 7", db) == 0);
  char cp[200];
  snprintf(cp, sizeof cp, "%s_syncer_checkpoint", db);
  bool solo = false;
  bool split = sa_split_wait(&s, "dm_meta", cp, &solo);
  fprintf(stderr, "solo: a one-row batch with worker 2's row locked: %s\n",
          solo    ? "worker 0 waits, no row ahead"
          : split ? "split"
                  : "neither");
  if (!solo)
    sa_split_release(&s);
  CU_ASSERT_FATAL(solo);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT v FROM `%s`.t_pk WHERE id = 7", db), v0);
  st = sa_split_kill_restart(&s, &c.e, st, 0);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT v FROM `%s`.t_pk WHERE id = 7", db), v0 + 1);
  sa_assert_equal(db);
  sa_case_end(&c, st);
}

/* The ids of the source's Binlog Dump threads that serve this process (their client port is one of
 * this process's sockets: /proc/self/fd against /proc/net/tcp), up to max; the count. */
static int sa_own_dump_threads(long long *ids, int max) {
  unsigned long inodes[256];
  int ni = 0;
  char path[64], link[64];
  for (int fd = 0; fd < 1024 && ni < 256; fd++) {
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(path, link, sizeof link - 1);
    if (n <= 0)
      continue;
    link[n] = '\0';
    unsigned long ino;
    if (sscanf(link, "socket:[%lu]", &ino) == 1)
      inodes[ni++] = ino;
  }
  unsigned ports[256];
  int np = 0;
  FILE *f = fopen("/proc/net/tcp", "r");
  char line[512];
  while (f && fgets(line, sizeof line, f) && np < 256) {
    unsigned lport, rport;
    unsigned long ino;
    if (sscanf(line, " %*d: %*x:%x %*x:%x %*x %*x:%*x %*x:%*x %*x %*d %*d %lu", &lport, &rport,
               &ino) != 3)
      continue;
    for (int i = 0; i < ni; i++)
      if (inodes[i] == ino)
        ports[np++] = lport;
  }
  if (f)
    fclose(f);
  int found = 0;
  if (mysql_query(src, "SELECT ID, HOST FROM information_schema.PROCESSLIST WHERE COMMAND = "
                       "'Binlog Dump'") == 0) {
    MYSQL_RES *res = mysql_store_result(src);
    MYSQL_ROW row;
    while (res && (row = mysql_fetch_row(res)) != NULL && found < max) {
      const char *colon = row[1] ? strrchr(row[1], ':') : NULL;
      unsigned port = colon ? (unsigned)strtoul(colon + 1, NULL, 10) : 0;
      for (int i = 0; i < np; i++)
        if (port && ports[i] == port) {
          ids[found++] = strtoll(row[0], NULL, 10);
          break;
        }
    }
    mysql_free_result(res);
  }
  return found;
}

/* The source's side of the sync's binlog stream is killed twice while the writer goes on (a
 * network cut, a source that closed the connection): the sync opens the stream again where it
 * stood, without a pause or an error (docs/sync.md), and the target ends equal to the source. Before,
 * the task paused with 20001 and waited for auto-resume (or a user); a source stalled for 10 s
 * beside a loaded CI did that to test_sync_validator. */
static void test_stream_cut(void) {
  const char *db = "h6_sa_cut";
  sa_case c;
  sa_case_begin(&c, db, false, sa_sup_manual);
  sa_writer *w = &sa_w;
  sa_writer_start(w, db, 41);
  dmh_subtask *st = sa_case_start(&c, NULL, 1);
  long long before[8], now[8];
  int n = sa_own_dump_threads(before, 8);
  CU_ASSERT_FATAL(n == 1); /* this process's one stream (relay off, no validator) */
  for (int cut = 1; cut <= 2; cut++) {
    long long rows = lt_status_int(st, "totalRows");
    CU_ASSERT(lt_exec(src, "KILL CONNECTION %lld", before[0]) == 0);
    /* a new Binlog Dump of this process, and rows applied after it: the stream goes on */
    double end = lt_now() + 60;
    bool again = false;
    while (!again && lt_now() < end && dmh_subtask_stage(st) == DMH_STAGE_RUNNING) {
      again = sa_own_dump_threads(now, 8) == 1 && now[0] != before[0] &&
              lt_status_int(st, "totalRows") > rows;
      if (!again)
        lt_sleep_ms(20);
    }
    fprintf(stderr,
            "cut %d: Binlog Dump %lld killed, then %lld serves the sync (%lld rows since)\n", cut,
            before[0], again ? now[0] : -1LL, lt_status_int(st, "totalRows") - rows);
    CU_ASSERT_FATAL(again);
    CU_ASSERT_EQUAL(dmh_subtask_stage(st), DMH_STAGE_RUNNING);
    CU_ASSERT_EQUAL(lt_first_error(st, NULL, 0, NULL, 0, NULL), 0);
    before[0] = now[0];
  }
  CU_ASSERT(sa_writer_wait_commits(w, 150, 60000)); /* the writer's own bound (sa_writer_stop) */
  sa_writer_stop(w);
  double caught = sa_catch_up(st, db, db, 60000);
  CU_ASSERT(caught >= 0);
  sa_assert_no_error(st, "after the cuts");
  sa_assert_equal(db);
  sa_case_end(&c, st);
}

/* SYNC_ALL_ONLY=word runs only the tests whose name holds it. */
int main(void) {
  static const dmh_cunit_test tests[] = {
      {"swap of the sync unit mid-stream", test_swap_mid_stream},
      {"stop and kill, restarted from the checkpoint", test_stop_restart},
      {"kill between the commits of one batch, restart", test_kill_split_batch},
      {"kill between the commits of a batch a rotation ended, restart", test_kill_split_rotation},
      {"kill while a solo batch waits, restart without a rebuild", test_kill_solo_batch},
      {"the source's stream cut mid-stream, opened again", test_stream_cut},
  };
  static const dmh_cunit_suite suite = {"sync_all_restart", sa_suite_init, sa_suite_clean, tests,
                                        sizeof tests / sizeof tests[0]};
  return dmh_cunit_run_suites(&suite, 1, "SYNC_ALL_ONLY");
}

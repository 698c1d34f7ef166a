/*
 * The sync unit in mode all (dump -> load -> sync, the real units), replaced or restarted while
 * the writer of sync_all_util.h keeps changing the source; the target is compared with the source
 * cell by cell:
 *  - hot-swap of the sync unit to another build (a copy whose version string is patched)
 *    mid-stream;
 *  - stop, then kill, each followed by a new subtask on the same work dir and task (a process
 *    restart): it starts at the sync unit (dump and load are not run again) from the checkpoint;
 *  - a batch committed by some workers and not by another (kill while one worker waits on a row
 *    this test locks), then a restart: the rebuilt batch must give the worker behind its own part.
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
  /* a worker row is a position and the rows done of the transaction there: on a loaded machine
   * the coordinator may close the batch inside the 400-row transaction (batch-ms passed between
   * its row events), and then the committed workers stand at the same binlog_pos as the blocked
   * one with more rows done */
  char q[400];
  snprintf(q, sizeof q,
           "SELECT COUNT(DISTINCT binlog_name, binlog_pos, COALESCE(JSON_VALUE(table_info, "
           "'$.rows'), 0)) FROM dm_meta.`%s_syncer_checkpoint` WHERE is_global = 0",
           db);
  double end = lt_now() + 20;
  while (lt_now() < end && lt_count(dst, "%s", q) < 2)
    lt_sleep_ms(10);
  bool split = lt_count(dst, "%s", q) == 2; /* the worker rows disagree */
  if (!split)
    lt_exec(locker, "ROLLBACK"); /* else the blocked worker holds the suite's end up */
  CU_ASSERT_FATAL(split);
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
      {"swap of the sync unit mid-stream", test_swap_mid_stream},
      {"stop and kill, restarted from the checkpoint", test_stop_restart},
      {"kill between the commits of one batch, restart", test_kill_split_batch},
  };
  static const dmh_cunit_suite suite = {"sync_all_restart", sa_suite_init, sa_suite_clean, tests,
                                        sizeof tests / sizeof tests[0]};
  return dmh_cunit_run_suites(&suite, 1, "SYNC_ALL_ONLY");
}

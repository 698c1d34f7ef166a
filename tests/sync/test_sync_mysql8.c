/*
 * Issue 12, "binlog completeness", end to end: a MySQL 8 source's binlog (the fixture
 * tests/fixtures/mysql8/mysql-bin.000001: GTIDs, PREVIOUS_GTIDS, zstd and uncompressed transaction
 * payloads, v2 row events, one payload written by a real MySQL 8.0) placed as a relay file in a
 * relay folder (DM's layout, docs/relay.md), read by the sync unit of a task in mode incremental
 * and applied to the real MariaDB target. The checkpoint's binlog_gtid holds the MySQL GTID set
 * (DM's format); after a restart the unit starts from that set and moves it on.
 *
 * Before: the payloads' rows were never applied (the events went to the "nothing to apply"
 * branch), and the checkpoint's binlog_gtid stayed "" (MySQL GTID events were ignored).
 */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cunit_run.h"
#include "load_test_util.h"
#include "sync_test_util.h"
#include "testdb.h"

#define M8_TASK "ts_mysql8"
#define M8_SID "5a1c7e2e-9b3f-11ec-8a8f-0242ac110002"
#define M8_FILE "mysql-bin.000001"

static MYSQL *src, *dst;

static int suite_init(void) {
  return ts_suite_open(&src, &dst);
}

static int suite_clean(void) {
  lt_exec(dst, "DROP DATABASE IF EXISTS demo");
  ts_suite_close(&src, &dst);
  return 0;
}

/* Appends (or writes) the bytes of file `from` to `to`. */
static bool m8_copy(const char *from, const char *to, const char *mode) {
  FILE *in = fopen(from, "rb"), *out = fopen(to, mode);
  bool ok = in && out;
  char buf[4096];
  size_t n;
  while (ok && (n = fread(buf, 1, sizeof buf, in)) > 0)
    ok = fwrite(buf, 1, n, out) == n;
  if (in)
    fclose(in);
  if (out && fclose(out) != 0)
    ok = false;
  return ok;
}

static long m8_size(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0 ? (long)sb.st_size : -1;
}

static void m8_gtid(char *out, size_t len) {
  out[0] = '\0';
  testdb_query_value(dst, out, len,
                     "SELECT binlog_gtid FROM dm_meta." M8_TASK "_syncer_checkpoint WHERE "
                     "is_global = 1");
}

static dmh_subtask *m8_start(lt_env *e) {
  dmh_subtask *st = ts_start(e);
  CU_ASSERT_PTR_NOT_NULL(st);
  if (st && dmh_subtask_stage(st) != DMH_STAGE_RUNNING) {
    char msg[1024] = "";
    lt_first_error(st, msg, sizeof msg, NULL, 0, NULL);
    fprintf(stderr, "not running: %s\n", msg);
    CU_FAIL("start");
  }
  return st;
}

static void test_mysql8_relay_file(void) {
  testdb_recreate_db(dst, "demo");
  CU_ASSERT_FATAL(lt_exec(dst,
                          "CREATE TABLE demo.movies (movie_id INT PRIMARY KEY, "
                          "title VARCHAR(256), year INT, country VARCHAR(256), genre "
                          "VARCHAR(256), actors VARCHAR(1024), director VARCHAR(512), "
                          "composer VARCHAR(256), screenwriter VARCHAR(256), cinematography "
                          "VARCHAR(256), production_company VARCHAR(256)) CHARSET utf8mb4") == 0);
  /* movie 1 as it stood before the source's UPDATE (the real payload's before-image) */
  CU_ASSERT_FATAL(
      lt_exec(dst, "INSERT INTO demo.movies VALUES (1, 'Once Upon a Time in the West', 1968, "
                   "'Italy', 'Western', 'Claudia Cardinale|Charles Bronson|Henry Fonda|Gabriele "
                   "Ferzetti|Frank Wolff|Al Mulock|Jason Robards|Woody Strode|Jack Elam|Lionel "
                   "Stander|Paolo Stoppa|Keenan Wynn|Aldo Sambrell', 'Sergio Leone', 'Ennio "
                   "Morricone', 'Sergio Leone|Sergio Donati|Dario Argento|Bernardo Bertolucci', "
                   "'Tonino Delli Colli', 'Paramount Pictures')") == 0);

  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  /* the relay folder: index, the source's sub-folder (MySQL: its server uuid), the file */
  char sub[600], path[900];
  CU_ASSERT_FATAL(ts_relay_folder(e.dir, M8_SID, sub, sizeof sub) == 0);
  snprintf(path, sizeof path, "%s/" M8_FILE, sub);
  CU_ASSERT_FATAL(m8_copy(DMH_MYSQL8_FIXTURE, path, "wb"));
  long size = m8_size(path);
  CU_ASSERT_FATAL(size == m8_size(DMH_MYSQL8_FIXTURE) && size > 1000);

  /* the relay on for the source (its folder read by the sync), no relay subtask: nothing but the
   * fixture writes the folder; the task starts at the file's start with no GTID set */
  char source_extra[1024], inst[512], extra[256];
  lt_relay_settings(&e, NULL, source_extra, sizeof source_extra);
  snprintf(inst, sizeof inst,
           "block-allow-list = \"b\"; meta = { binlog-name = \"" M8_FILE "\"; binlog-pos = 4; };");
  snprintf(extra, sizeof extra, "block-allow-list = { b = { do-dbs = [\"demo\"]; }; };\n");
  lt_drop_checkpoint(dst, M8_TASK);
  lt_exec(dst, "DROP TABLE IF EXISTS dm_meta.`" M8_TASK "_syncer_checkpoint`");
  lt_task t = {.name = M8_TASK,
               .mode = "incremental",
               .instance = inst,
               .extra = extra,
               .sync = TS_SYNC,
               .source_extra = source_extra};
  CU_ASSERT_FATAL(lt_config(&e, &t) == 0);

  dmh_subtask *st = m8_start(&e);
  CU_ASSERT(ts_wait_checkpoint(M8_TASK, M8_FILE, (unsigned long)size, 30000));
  char text[512];
  /* the real payload's UPDATE, the zstd payload's INSERTs, the plain DELETE, the uncompressed
   * payload's UPDATE */
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM demo.movies"), 2);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM demo.movies WHERE movie_id = 1 AND genre = "
                                "'Western|Action' AND year = 1968 AND production_company = "
                                "'Paramount Pictures'"),
                  1);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM demo.movies WHERE movie_id = 2 AND title = "
                                "'The Good, the Bad and the Ugly' AND year = 1967 AND actors = "
                                "'Clint Eastwood|Eli Wallach|Lee Van Cleef'"),
                  1);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM demo.movies WHERE movie_id = 3"), 0);
  /* the executed set: PREVIOUS_GTIDS :1-5 and the four transactions :6-9, as DM writes it */
  m8_gtid(text, sizeof text);
  CU_ASSERT_STRING_EQUAL(text, M8_SID ":1-9");
  ts_stop(st);

  /* one more transaction after a restart: the unit starts from the checkpoint's set (not
   * re-reading the PREVIOUS_GTIDS at the file's start) and adds :10 to it */
  char more[600];
  snprintf(more, sizeof more, "%s-more", DMH_MYSQL8_FIXTURE);
  CU_ASSERT_FATAL(m8_copy(more, path, "ab"));
  long size2 = m8_size(path);
  CU_ASSERT_FATAL(size2 > size);
  st = m8_start(&e);
  CU_ASSERT(ts_wait_checkpoint(M8_TASK, M8_FILE, (unsigned long)size2, 30000));
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM demo.movies WHERE movie_id = 4 AND title = "
                                "'Il mercenario' AND screenwriter IS NULL"),
                  1);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM demo.movies"), 3);
  m8_gtid(text, sizeof text);
  CU_ASSERT_STRING_EQUAL(text, M8_SID ":1-10");
  char msg[1024] = "";
  CU_ASSERT_EQUAL(lt_first_error(st, msg, sizeof msg, NULL, 0, NULL), 0);
  CU_ASSERT_EQUAL(dmh_subtask_stage(st), DMH_STAGE_RUNNING);
  ts_stop(st);
  lt_teardown(&e);
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"a MySQL 8 relay file applied, its GTID set checkpointed", test_mysql8_relay_file},
  };
  return dmh_cunit_run("sync mysql8", suite_init, suite_clean, tests,
                       sizeof tests / sizeof tests[0]);
}

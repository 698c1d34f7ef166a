/*
 * Issue 12, binlog completeness: a source writing compressed events (log_bin_compress = ON,
 * log_bin_compress_min_len = 10: QUERY_COMPRESSED and the compressed rows events, zlib). Before,
 * the sync paused on the first compressed rows event (DM_ERR_BINLOG_UNSUPPORTED) and passed over a
 * compressed DDL as if it were nothing. Mode incremental against the real pair: inserts, updates,
 * deletes of rows big enough to be compressed and DDL arrive, the target equals the source, and
 * the source's binlog really holds compressed events of each kind (read back with the SDK).
 * Changes two globals of the shared source for its duration (RUN_SERIAL), restored after.
 */
#include <CUnit/Basic.h>
#include <libgen.h>
#include <stdio.h>
#include <string.h>

#include "cunit_run.h"
#include "dmhost/binlog.h"
#include "load_test_util.h"
#include "sync_test_util.h"
#include "testdb.h"

static MYSQL *src, *dst;
static char min_len0[32] = "256"; /* the source's log_bin_compress_min_len before */

static void compress_off(void) {
  lt_exec(src, "SET GLOBAL log_bin_compress = OFF");
  lt_exec(src, "SET GLOBAL log_bin_compress_min_len = %s", min_len0);
}

static int suite_init(void) {
  if (ts_suite_open(&src, &dst) < 0)
    return -1;
  testdb_query_value(src, min_len0, sizeof min_len0, "SELECT @@global.log_bin_compress_min_len");
  return 0;
}

static int suite_clean(void) {
  compress_off();
  lt_exec(src, "DROP DATABASE IF EXISTS ts_comp");
  lt_exec(dst, "DROP DATABASE IF EXISTS ts_comp");
  ts_suite_close(&src, &dst);
  return 0;
}

/* Counts the events of each type in the source's binlog `file` from `pos` to its end. */
static void count_types(const char *file, unsigned long pos, unsigned counts[256]) {
  char base[512] = "";
  CU_ASSERT_FATAL(testdb_query_value(src, base, sizeof base, "SELECT @@log_bin_basename") == 0);
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dirname(base), file);
  dm_binlog_file_options o = {.start_pos = pos};
  dm_binlog_reader *r;
  dm_error err;
  CU_ASSERT_FATAL(dm_binlog_reader_open_file(&r, path, &o, &err) == 0);
  dm_binlog_event ev;
  int rc;
  while ((rc = dm_binlog_reader_next(r, &ev, &err)) == 1)
    counts[ev.header.type]++;
  CU_ASSERT_EQUAL(rc, 0);
  dm_binlog_reader_close(r);
}

static void test_compressed_sync(void) {
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  lt_exec(src, "DROP DATABASE IF EXISTS ts_comp");
  lt_exec(dst, "DROP DATABASE IF EXISTS ts_comp");
  CU_ASSERT_FATAL(lt_exec(src, "CREATE DATABASE ts_comp") == 0);
  CU_ASSERT_FATAL(lt_exec(dst, "CREATE DATABASE ts_comp") == 0);
  char file[256];
  unsigned long pos;
  ts_master(file, &pos, NULL);
  CU_ASSERT_FATAL(ts_config(&e, "ts_comp", "ts_comp", NULL, NULL) == 0);
  dmh_subtask *st = ts_start(&e);
  CU_ASSERT_FATAL(st != NULL);

  CU_ASSERT_FATAL(lt_exec(src, "SET GLOBAL log_bin_compress_min_len = 10") == 0);
  CU_ASSERT_FATAL(lt_exec(src, "SET GLOBAL log_bin_compress = ON") == 0);
  /* DDL (compressed statements), then rows of ~1 KiB each (compressed images) */
  CU_ASSERT(lt_exec(src, "CREATE TABLE ts_comp.t (id INT PRIMARY KEY, a VARCHAR(2000), "
                         "b TEXT, n INT) COMMENT 'compressed events of MariaDB, zlib'") == 0);
  for (int i = 0; i < 50; i++)
    CU_ASSERT(lt_exec(src,
                      "INSERT INTO ts_comp.t VALUES (%d, REPEAT('abc%d', 200), "
                      "REPEAT(CONCAT('row ', %d), 100), %d)",
                      i, i, i, i) == 0);
  CU_ASSERT(lt_exec(src, "UPDATE ts_comp.t SET a = REPEAT('xyz', 300), n = n + 1000 "
                         "WHERE id %% 3 = 0") == 0);
  CU_ASSERT(lt_exec(src, "DELETE FROM ts_comp.t WHERE id %% 5 = 1") == 0);
  CU_ASSERT(lt_exec(src, "ALTER TABLE ts_comp.t ADD COLUMN extra VARCHAR(100) DEFAULT "
                         "'the default of the column added while compressed'") == 0);
  CU_ASSERT(lt_exec(src, "INSERT INTO ts_comp.t VALUES (100, REPEAT('q', 900), 'b', 1, "
                         "REPEAT('e', 90))") == 0);
  CU_ASSERT(lt_exec(src, "CREATE TABLE ts_comp.u (id INT PRIMARY KEY, s VARCHAR(500))") == 0);
  CU_ASSERT(lt_exec(src, "INSERT INTO ts_comp.u SELECT id, REPEAT('u', 400) FROM ts_comp.t") == 0);
  compress_off();

  /* the precondition: the binlog holds compressed statements and rows of each kind */
  unsigned counts[256] = {0};
  count_types(file, pos, counts);
  printf("\ncompressed events: query %u, write %u, update %u, delete %u (v2: %u %u %u)\n",
         counts[DM_BINLOG_QUERY_COMPRESSED], counts[DM_BINLOG_WRITE_ROWS_COMPRESSED_V1],
         counts[DM_BINLOG_UPDATE_ROWS_COMPRESSED_V1], counts[DM_BINLOG_DELETE_ROWS_COMPRESSED_V1],
         counts[DM_BINLOG_WRITE_ROWS_COMPRESSED_V2], counts[DM_BINLOG_UPDATE_ROWS_COMPRESSED_V2],
         counts[DM_BINLOG_DELETE_ROWS_COMPRESSED_V2]);
  CU_ASSERT(counts[DM_BINLOG_QUERY_COMPRESSED] >= 3);
  CU_ASSERT(counts[DM_BINLOG_WRITE_ROWS_COMPRESSED_V1] +
                counts[DM_BINLOG_WRITE_ROWS_COMPRESSED_V2] >=
            50);
  CU_ASSERT(counts[DM_BINLOG_UPDATE_ROWS_COMPRESSED_V1] +
                counts[DM_BINLOG_UPDATE_ROWS_COMPRESSED_V2] >=
            1);
  CU_ASSERT(counts[DM_BINLOG_DELETE_ROWS_COMPRESSED_V1] +
                counts[DM_BINLOG_DELETE_ROWS_COMPRESSED_V2] >=
            1);

  bool caught = ts_catch_up("ts_comp", 30000);
  if (!caught || dmh_subtask_stage(st) != DMH_STAGE_RUNNING) {
    char msg[1024] = "", raw[1024] = "";
    int code = lt_first_error(st, msg, sizeof msg, raw, sizeof raw, NULL);
    fprintf(stderr, "stage %d, error %d: %s / %s\n", (int)dmh_subtask_stage(st), code, msg, raw);
  }
  CU_ASSERT(caught);
  CU_ASSERT_EQUAL(dmh_subtask_stage(st), DMH_STAGE_RUNNING);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM ts_comp.t"), 41);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM ts_comp.u"), 41);
  CU_ASSERT(ts_equal("ts_comp", "ts_comp"));
  ts_stop(st);
  lt_teardown(&e);
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"compressed statements and rows (log_bin_compress) synced", test_compressed_sync},
  };
  return dmh_cunit_run("sync_compress", suite_init, suite_clean, tests,
                       sizeof tests / sizeof tests[0]);
}

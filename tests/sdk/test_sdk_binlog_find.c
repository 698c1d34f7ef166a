/*
 * dmhost/binlog_find.h (DM's --start-time) against the real source: DM's time forms, and the
 * position of a time: before the oldest binlog (its start), after the last transaction (refused
 * by the caller: the end is said), and in range, exactly the transaction that began first at or
 * after the time, with the GTID state before it. control_start_time drives the same through
 * start-task; here every case of the finder is asserted on its own, the "before" one too.
 */
#include <CUnit/Basic.h>
#include <mysql.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cunit_run.h"
#include "dmhost/binlog_find.h"
#include "dmhost/sdk.h"
#include "testdb.h"

#define DB "sdk_binlog_find"

static testdb_params src_params;
static dm_db_endpoint src_ep;
static MYSQL *conn;

static int suite_init(void) {
  if (testdb_params_get(TESTDB_SOURCE, &src_params) < 0 || !(conn = testdb_connect(TESTDB_SOURCE)))
    return -1;
  src_ep = (dm_db_endpoint){.host = src_params.host,
                            .port = (int)src_params.port,
                            .user = src_params.user,
                            .password = src_params.password};
  return testdb_recreate_db(conn, DB) ||
                 testdb_exec(conn, "CREATE TABLE " DB ".t (id INT PRIMARY KEY) ENGINE=InnoDB")
             ? -1
             : 0;
}

static int suite_clean(void) {
  if (conn) {
    testdb_exec(conn, "DROP DATABASE IF EXISTS " DB);
    testdb_close(conn);
  }
  return 0;
}

static dm_binlog_stream_options stream_opts(void) {
  return (dm_binlog_stream_options){.source = &src_ep,
                                    .server_id = 4100000000u + (uint32_t)(time(NULL) % 1000),
                                    .connect_timeout_s = 10,
                                    .read_timeout_s = 60,
                                    .omit_annotate_rows = true,
                                    .source_size = (uint32_t)sizeof(dm_db_endpoint)};
}

static void test_parse_forms(void) {
  int64_t t = 0;
  dm_error err;
  /* with an offset or Z: no server needed, exact */
  CU_ASSERT_EQUAL(dm_binlog_parse_start_time(conn, "2021-10-21T00:01:00+08:00", &t, &err), 0);
  CU_ASSERT_EQUAL(t, 1634745660);
  CU_ASSERT_EQUAL(dm_binlog_parse_start_time(conn, "2021-10-20 16:01:00Z", &t, &err), 0);
  CU_ASSERT_EQUAL(t, 1634745660);
  CU_ASSERT_EQUAL(dm_binlog_parse_start_time(conn, "2021-10-20T10:01:00-06:00", &t, &err), 0);
  CU_ASSERT_EQUAL(t, 1634745660);
  /* without: the source's time zone, as the source reads it */
  long long want = 0;
  CU_ASSERT_FATAL(testdb_query_int(conn, &want, "SELECT UNIX_TIMESTAMP('2021-10-21 00:01:00')") ==
                  0);
  CU_ASSERT_EQUAL(dm_binlog_parse_start_time(conn, "2021-10-21 00:01:00", &t, &err), 0);
  CU_ASSERT_EQUAL(t, want);
  CU_ASSERT_EQUAL(dm_binlog_parse_start_time(conn, "2021-10-21T00:01:00", &t, &err), 0);
  CU_ASSERT_EQUAL(t, want);
  static const char *const bad[] = {"yesterday",
                                    "2021-10-21",
                                    "2021-13-01 00:00:00",
                                    "2021-10-21 24:00:00",
                                    "2021-10-21 00:01:00+0800",
                                    "2021-10-21 00:01:00 ",
                                    "2021-10-21 00:01:00'; DROP DATABASE x; --"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    err.code = 0;
    CU_ASSERT_EQUAL(dm_binlog_parse_start_time(conn, bad[i], &t, &err), -1);
    CU_ASSERT_EQUAL(err.code, DM_ERR_CONFIG_START_TIME);
  }
}

/* The source's first and last binlog files and the last one's size. */
static void binlogs(char *first, char *last, unsigned long long *last_size) {
  CU_ASSERT_FATAL(mysql_query(conn, "SHOW BINARY LOGS") == 0);
  MYSQL_RES *res = mysql_store_result(conn);
  CU_ASSERT_FATAL(res != NULL);
  MYSQL_ROW row;
  first[0] = '\0';
  while ((row = mysql_fetch_row(res))) {
    if (!first[0])
      snprintf(first, DM_POSITION_NAME_MAX, "%s", row[0]);
    snprintf(last, DM_POSITION_NAME_MAX, "%s", row[0]);
    *last_size = strtoull(row[1], NULL, 10);
  }
  mysql_free_result(res);
}

static void test_before_and_after(void) {
  dm_binlog_stream_options so = stream_opts();
  dm_position p;
  dm_binlog_time_where where = DM_BINLOG_TIME_IN_RANGE;
  dm_error err;
  char first[DM_POSITION_NAME_MAX], last[DM_POSITION_NAME_MAX];
  unsigned long long size = 0;
  /* 1 s after the epoch: before every binlog the source keeps */
  CU_ASSERT_EQUAL_FATAL(dm_binlog_find_by_time(conn, &so, 1, &p, &where, &err), 0);
  binlogs(first, last, &size);
  CU_ASSERT_EQUAL(where, DM_BINLOG_TIME_BEFORE);
  CU_ASSERT_STRING_EQUAL(p.name, first);
  CU_ASSERT_EQUAL(p.pos, 4);
  /* an hour from now: after the last transaction; the end of the last file is said */
  long long now = 0;
  CU_ASSERT_FATAL(testdb_query_int(conn, &now, "SELECT UNIX_TIMESTAMP()") == 0);
  /* Other tests write to the shared source meanwhile: the end said lies between the last file's
   * end before the search and its end after. */
  dm_position end_before = {0}, end_after = {0};
  binlogs(first, end_before.name, &size);
  end_before.pos = size;
  CU_ASSERT_EQUAL_FATAL(dm_binlog_find_by_time(conn, &so, now + 3600, &p, &where, &err), 0);
  binlogs(first, end_after.name, &size);
  end_after.pos = size;
  CU_ASSERT_EQUAL(where, DM_BINLOG_TIME_AFTER);
  CU_ASSERT(dm_position_compare_file(&p, &end_before) >= 0);
  CU_ASSERT(dm_position_compare_file(&p, &end_after) <= 0);
  CU_ASSERT(p.pos >= 4);
}

/* Rows 1 and 2 in a new binlog file, the clock past their second, then row 3 and another new
 * file: the time T of row 3's second finds row 3's transaction in the file before, with the GTID
 * state after row 2. */
static void test_in_range(void) {
  long long before = 0, now = 0;
  char gtid_before[DM_POSITION_GTID_MAX] = "", file[DM_POSITION_NAME_MAX] = "";
  CU_ASSERT_FATAL(testdb_exec(conn, "FLUSH BINARY LOGS") == 0);
  CU_ASSERT_FATAL(testdb_exec(conn, "INSERT INTO " DB ".t VALUES (1)") == 0);
  CU_ASSERT_FATAL(testdb_exec(conn, "INSERT INTO " DB ".t VALUES (2)") == 0);
  CU_ASSERT_FATAL(testdb_query_int(conn, &before, "SELECT UNIX_TIMESTAMP()") == 0);
  CU_ASSERT_FATAL(testdb_query_value(conn, gtid_before, sizeof gtid_before,
                                     "SELECT @@GLOBAL.gtid_binlog_pos") == 0);
  /* the next second on the source's clock (an event, not a sleep of a fixed length) */
  for (int i = 0; i < 300 && now <= before; i++) {
    nanosleep(&(struct timespec){0, 10000000}, NULL);
    CU_ASSERT_FATAL(testdb_query_int(conn, &now, "SELECT UNIX_TIMESTAMP()") == 0);
  }
  CU_ASSERT_FATAL(now > before);
  CU_ASSERT_FATAL(testdb_exec(conn, "INSERT INTO " DB ".t VALUES (3)") == 0);
  char gtid_row3[DM_POSITION_GTID_MAX] = "";
  CU_ASSERT_FATAL(testdb_query_value(conn, gtid_row3, sizeof gtid_row3, "SELECT @@last_gtid") == 0);
  CU_ASSERT_FATAL(gtid_row3[0] != '\0');
  MYSQL_RES *res = NULL;
  CU_ASSERT_FATAL(mysql_query(conn, "SHOW MASTER STATUS") == 0 && (res = mysql_store_result(conn)));
  MYSQL_ROW row = mysql_fetch_row(res);
  CU_ASSERT_FATAL(row != NULL);
  snprintf(file, sizeof file, "%s", row[0]);
  uint64_t row3_end = strtoull(row[1], NULL, 10);
  mysql_free_result(res);
  /* a new file at once, in row 3's second as a rule: the file that holds row 3 is the one before
   * the last that began at or before T (the fresh-clone CI's miss: another test's FLUSH landed in
   * T's second and the search stopped at that empty file, "no transaction then or later") */
  CU_ASSERT_FATAL(testdb_exec(conn, "FLUSH BINARY LOGS") == 0);

  dm_binlog_stream_options so = stream_opts();
  dm_position p;
  dm_binlog_time_where where = DM_BINLOG_TIME_AFTER;
  dm_error err;
  CU_ASSERT_EQUAL_FATAL(dm_binlog_find_by_time(conn, &so, now, &p, &where, &err), 0);
  CU_ASSERT_EQUAL(where, DM_BINLOG_TIME_IN_RANGE);
  /* The source is shared with other tests, whose transactions may land between row 2 and row 3,
   * in T's second before row 3 (the fresh-clone CI's miss: the GTID state before the found
   * transaction held one more GTID than gtid_before). What holds whatever they write: rows 1 and
   * 2 are before the found transaction, row 3 is not; it is before row 3's end. */
  dm_position row3 = {.pos = row3_end};
  snprintf(row3.name, sizeof row3.name, "%s", file);
  CU_ASSERT(dm_position_compare_file(&p, &row3) < 0);
  CU_ASSERT_EQUAL(dm_gtid_set_contains(p.gtid, gtid_before), 1);
  CU_ASSERT_EQUAL(dm_gtid_set_contains(p.gtid, gtid_row3), 0);
  /* the event there is row 3's transaction's GTID event, begun at or after T */
  dm_binlog_reader *r = NULL;
  so.file = p.name;
  so.pos = p.pos;
  so.non_blocking = true;
  CU_ASSERT_EQUAL_FATAL(dm_binlog_reader_open_stream(&r, &so, &err), 0);
  dm_binlog_event ev;
  int rc;
  bool seen = false;
  while (!seen && (rc = dm_binlog_reader_next(r, &ev, &err)) == 1) {
    if (ev.artificial || ev.header.type == DM_BINLOG_FORMAT_DESCRIPTION)
      continue;
    CU_ASSERT_EQUAL(ev.header.type, DM_BINLOG_GTID);
    CU_ASSERT_EQUAL(ev.offset, p.pos);
    CU_ASSERT(ev.header.timestamp >= now);
    seen = true;
  }
  dm_binlog_reader_close(r);
  CU_ASSERT(seen);
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"DM's time forms: offsets exact, none in the source's zone, others refused",
       test_parse_forms},
      {"before the oldest binlog, after the last transaction", test_before_and_after},
      {"in range: the first transaction at or after the time, the GTID state before it",
       test_in_range},
  };
  return dmh_cunit_run("binlog_find", suite_init, suite_clean, tests,
                       sizeof tests / sizeof tests[0]);
}

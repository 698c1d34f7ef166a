/*
 * SQL literals for binlog row values (plugins/sync/sync_sql.c), against the real source/target
 * pair: rows inserted on the source are read back from its binlog with the SDK, every cell made a
 * literal by sync_sql_value, the rows replayed on the target as INSERT ... VALUES (literals) on a
 * session that ran SYNC_SQL_SESSION; then the target must equal the source cell by cell, every
 * literal must compare equal to its own cell (`col <=> literal`, what whole-row matching of
 * tables without a key relies on) on both servers, and indexes must serve `col = literal`.
 *
 * Two data sets: tests/sql/all-types.sql (every MariaDB 10.11 type with edge values, shared with
 * the dump/load tests) and this file's edge table, whose non-NULL values differ in every column
 * so that `col <=> literal` must match exactly one row: charsets whose second byte can be 0x5c
 * (sjis, gbk), UTF-16, every fraction width 0..6 of TIME/DATETIME/TIMESTAMP, +-838:59:59, dates
 * with zero parts and invalid days, the ENUM error value, BINARY(n) trailing zeros, INET4/INET6/
 * UUID bytes 0x27 and 0x5c, BIT(64), FLOAT/DOUBLE extremes and denormals.
 */
#include <CUnit/Basic.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cunit_run.h"
#include "dmhost/binlog.h"
#include "dmhost/binlog_rows.h"
#include "dmhost/host.h"
#include "sync_sql.h"
#include "testdb.h"

#define DB_TYPES "h2_sync_sql_types"
#define DB_EDGE "h2_sync_sql_edge"
#define DB_ZIP "h2_sync_sql_zip"
#define EDGE_ROWS 5

static MYSQL *src, *dst;         /* testdb sessions (utf8mb4) for setup and comparison */
static MYSQL *src_raw, *dst_raw; /* sessions that ran SYNC_SQL_SESSION */
static sync_charsets *charsets;

/* ---- binlog rows as literals ---- */

/* One replayed row: its table and each column's name and literal (NULL for SQL NULL); for an
 * update also the before image's literals. */
typedef struct lit_row {
  char table[128];
  uint8_t kind; /* dm_binlog_rows_kind */
  uint32_t n;
  char **names;
  char **lits;
  char **before; /* DM_ROWS_UPDATE only */
} lit_row;

typedef struct lit_rows {
  lit_row *v;
  size_t n, cap;
  int errors;          /* sync_sql_value failures */
  dm_error last_error; /* the last of them */
} lit_rows;

static void lit_rows_free(lit_rows *rs) {
  for (size_t i = 0; i < rs->n; i++) {
    for (uint32_t c = 0; c < rs->v[i].n; c++) {
      free(rs->v[i].names[c]);
      free(rs->v[i].lits[c]);
      if (rs->v[i].before)
        free(rs->v[i].before[c]);
    }
    free(rs->v[i].before);
    free(rs->v[i].names);
    free(rs->v[i].lits);
  }
  free(rs->v);
  memset(rs, 0, sizeof *rs);
}

static void source_position(char *file, size_t len, uint64_t *pos) {
  MYSQL_RES *res = NULL;
  CU_ASSERT_FATAL(mysql_query(src, "SHOW MASTER STATUS") == 0 &&
                  (res = mysql_store_result(src)) != NULL);
  MYSQL_ROW row = mysql_fetch_row(res);
  CU_ASSERT_FATAL(row != NULL);
  snprintf(file, len, "%s", row[0]);
  *pos = strtoull(row[1], NULL, 10);
  mysql_free_result(res);
}

/* A literal per cell of one image (NULL for SQL NULL). */
static char **image_literals(const dm_binlog_table_map *tm, const dm_binlog_value *vals, dm_buf *b,
                             lit_rows *out) {
  char **lits = calloc(tm->column_count, sizeof *lits);
  CU_ASSERT_FATAL(lits != NULL);
  for (uint32_t c = 0; c < tm->column_count; c++) {
    if (vals[c].kind == DM_VAL_NULL)
      continue;
    dm_error err;
    dm_buf_reset(b);
    if (sync_sql_value(b, &vals[c], &tm->columns[c], charsets, &err) < 0) {
      out->errors++;
      out->last_error = err;
      continue;
    }
    CU_ASSERT(strlen(b->p) == b->len); /* NUL bytes never appear unescaped */
    lits[c] = strdup(b->p);
  }
  return lits;
}

/* Every rows event of database `db` in the source's binlog from file:pos to its end, each
 * row's cells turned into literals. */
static void read_rows(const char *file, uint64_t pos, const char *db, lit_rows *out) {
  testdb_params p;
  CU_ASSERT_FATAL(testdb_params_get(TESTDB_SOURCE, &p) == 0);
  dm_db_endpoint ep = {.host = p.host, .port = (int)p.port, .user = p.user, .password = p.password};
  dm_binlog_stream_options o = {.source = &ep,
                                .server_id = 8100 + (uint32_t)(getpid() % 500),
                                .file = file,
                                .pos = pos,
                                .non_blocking = true};
  dm_error err;
  dm_binlog_reader *r = NULL;
  int rc = dm_binlog_reader_open_stream(&r, &o, &err);
  if (rc < 0)
    fprintf(stderr, "%s / %s\n", err.message, err.raw_cause);
  CU_ASSERT_FATAL(rc == 0);
  dm_binlog_table_map *tm = NULL;
  dm_binlog_value *vals = NULL, *before = NULL;
  dm_buf b = {0};
  dm_binlog_event ev;
  while ((rc = dm_binlog_reader_next(r, &ev, &err)) == 1) {
    const dm_binlog_format *fmt = dm_binlog_reader_format(r);
    if (ev.artificial)
      continue;
    if (ev.header.type == DM_BINLOG_TABLE_MAP) {
      dm_binlog_table_map_free(tm);
      free(vals);
      free(before);
      CU_ASSERT_FATAL(dm_binlog_table_map_decode(fmt, &ev, &tm, &err) == 0);
      CU_ASSERT_FATAL(tm->has_column_names); /* binlog_row_metadata=FULL */
      vals = calloc(tm->column_count, sizeof *vals);
      before = calloc(tm->column_count, sizeof *before);
      continue;
    }
    if (!dm_binlog_is_rows_event(ev.header.type) || !tm || strcmp(tm->db.ptr, db) != 0)
      continue;
    dm_binlog_rows rows;
    CU_ASSERT_FATAL(dm_binlog_rows_begin(fmt, &ev, &rows, &err) == 0);
    CU_ASSERT_FATAL(rows.kind != DM_ROWS_DELETE);
    while ((rc = dm_binlog_rows_next(&rows, tm, before, vals, &err)) == 1) {
      if (out->n == out->cap) {
        out->cap = out->cap ? out->cap * 2 : 16;
        out->v = realloc(out->v, out->cap * sizeof *out->v);
        CU_ASSERT_FATAL(out->v != NULL);
      }
      lit_row *lr = &out->v[out->n++];
      snprintf(lr->table, sizeof lr->table, "%s", tm->table.ptr);
      lr->kind = rows.kind;
      lr->n = tm->column_count;
      lr->names = calloc(lr->n, sizeof *lr->names);
      for (uint32_t c = 0; c < lr->n; c++)
        lr->names[c] = strndup(tm->columns[c].name.ptr, tm->columns[c].name.len);
      lr->lits = image_literals(tm, vals, &b, out);
      lr->before = rows.kind == DM_ROWS_UPDATE ? image_literals(tm, before, &b, out) : NULL;
    }
    CU_ASSERT(rc == 0);
  }
  if (rc < 0)
    fprintf(stderr, "%s / %s\n", err.message, err.raw_cause);
  CU_ASSERT(rc == 0);
  dm_buf_free(&b);
  free(vals);
  free(before);
  dm_binlog_table_map_free(tm);
  dm_binlog_reader_close(r);
}

/* Is `name` one of the table's generated columns (the target computes them: not inserted)? */
static int is_generated(const char *db, const char *table, const char *name) {
  long long n = 0;
  CU_ASSERT(testdb_query_int(dst, &n,
                             "SELECT COUNT(*) FROM information_schema.COLUMNS WHERE "
                             "TABLE_SCHEMA='%s' AND TABLE_NAME='%s' AND COLUMN_NAME='%s' AND "
                             "EXTRA LIKE '%%GENERATED%%'",
                             db, table, name) == 0);
  return n > 0;
}

/*
 * Warnings of the last statement on the target other than the one the ENUM error value always
 * raises: MariaDB stores index 0 only from an invalid value (here: the number 0) and warns
 * "Data truncated for column 'c_enum'" (1265) even though 0 is what the source holds.
 */
static int unexpected_warnings(void) {
  if (mysql_warning_count(dst_raw) == 0)
    return 0;
  int n = 0;
  MYSQL_RES *res = NULL;
  CU_ASSERT_FATAL(mysql_query(dst_raw, "SHOW WARNINGS") == 0 &&
                  (res = mysql_store_result(dst_raw)) != NULL);
  MYSQL_ROW row;
  while ((row = mysql_fetch_row(res)) != NULL)
    if (!(strcmp(row[1], "1265") == 0 && strstr(row[2], "'c_enum'"))) {
      fprintf(stderr, "warning %s: %s\n", row[1], row[2]);
      n++;
    }
  mysql_free_result(res);
  return n;
}

/* Each row on the SYNC_SQL_SESSION target session: a write as INSERT INTO db.table (columns)
 * VALUES (literals), an update as UPDATE ... SET col = literal, ... WHERE every column of the
 * before image matches (col <=> literal: the whole-row match of a table without a key) LIMIT 1. */
static void replay(const char *db, const lit_rows *rs) {
  for (size_t i = 0; i < rs->n; i++) {
    const lit_row *lr = &rs->v[i];
    dm_buf cols = {0}, vals = {0}, q = {0};
    if (lr->kind == DM_ROWS_UPDATE) {
      dm_buf_puts(&q, "UPDATE ");
      sync_sql_qualified(&q, db, lr->table);
      dm_buf_puts(&q, " SET ");
    }
    for (uint32_t c = 0; c < lr->n; c++) {
      if (is_generated(db, lr->table, lr->names[c]))
        continue;
      const char *lit = lr->lits[c] ? lr->lits[c] : "NULL";
      if (lr->kind == DM_ROWS_UPDATE) {
        if (vals.len)
          dm_buf_putc(&vals, ',');
        sync_sql_ident(&vals, lr->names[c], strlen(lr->names[c]));
        dm_buf_printf(&vals, "=%s", lit);
        continue;
      }
      if (cols.len) {
        dm_buf_putc(&cols, ',');
        dm_buf_putc(&vals, ',');
      }
      sync_sql_ident(&cols, lr->names[c], strlen(lr->names[c]));
      dm_buf_puts(&vals, lit);
    }
    if (lr->kind == DM_ROWS_UPDATE) {
      dm_buf_printf(&q, "%s WHERE ", vals.p);
      for (uint32_t c = 0; c < lr->n; c++) {
        if (c)
          dm_buf_puts(&q, " AND ");
        sync_sql_ident(&q, lr->names[c], strlen(lr->names[c]));
        dm_buf_printf(&q, " <=> %s", lr->before[c] ? lr->before[c] : "NULL");
      }
      dm_buf_puts(&q, " LIMIT 1");
    } else {
      dm_buf_puts(&q, "INSERT INTO ");
      sync_sql_qualified(&q, db, lr->table);
      dm_buf_printf(&q, " (%s) VALUES (%s)", cols.p, vals.p);
    }
    CU_ASSERT(mysql_real_query(dst_raw, q.p, q.len) == 0);
    if (mysql_errno(dst_raw))
      fprintf(stderr, "replay of %s row %zu: %s\n", lr->table, i, mysql_error(dst_raw));
    CU_ASSERT(mysql_affected_rows(dst_raw) == 1);
    CU_ASSERT(unexpected_warnings() == 0);
    dm_buf_free(&cols);
    dm_buf_free(&vals);
    dm_buf_free(&q);
  }
}

/* COUNT(*) of db.table WHERE `col` <=> lit [AND `key` <=> key_lit] on a SYNC_SQL_SESSION. */
static long long count_matching(MYSQL *conn, const char *db, const lit_row *lr, uint32_t c,
                                int key) {
  dm_buf q = {0};
  dm_buf_puts(&q, "SELECT COUNT(*) FROM ");
  sync_sql_qualified(&q, db, lr->table);
  dm_buf_puts(&q, " WHERE ");
  sync_sql_ident(&q, lr->names[c], strlen(lr->names[c]));
  dm_buf_printf(&q, " <=> %s", lr->lits[c]);
  if (key >= 0) {
    dm_buf_puts(&q, " AND ");
    sync_sql_ident(&q, lr->names[key], strlen(lr->names[key]));
    dm_buf_printf(&q, " <=> %s", lr->lits[key]);
  }
  long long n = -1;
  if (testdb_query_int(conn, &n, "%s", q.p) < 0)
    n = -1;
  dm_buf_free(&q);
  return n;
}

/* Each non-NULL cell's literal matches its row on both servers: alone (want_alone = 1 when the
 * table's non-NULL values are all distinct) and together with the key column `key_col`. */
static void check_cells(const char *db, const lit_rows *rs, const char *table, const char *key_col,
                        int want_alone) {
  size_t checked = 0;
  for (size_t i = 0; i < rs->n; i++) {
    const lit_row *lr = &rs->v[i];
    if (strcmp(lr->table, table) != 0)
      continue;
    int key = -1;
    for (uint32_t c = 0; c < lr->n; c++)
      if (strcmp(lr->names[c], key_col) == 0)
        key = (int)c;
    CU_ASSERT_FATAL(key >= 0 && lr->lits[key] != NULL);
    bool superseded = false; /* a later image of the same row (an update) replaced this one */
    for (size_t j = i + 1; j < rs->n; j++)
      if (strcmp(rs->v[j].table, table) == 0 && rs->v[j].lits[key] &&
          strcmp(rs->v[j].lits[key], lr->lits[key]) == 0)
        superseded = true;
    if (superseded)
      continue;
    for (uint32_t c = 0; c < lr->n; c++) {
      if (!lr->lits[c])
        continue;
      MYSQL *sides[2] = {src_raw, dst_raw};
      for (int s = 0; s < 2; s++) {
        long long with_key = count_matching(sides[s], db, lr, c, key);
        long long alone = want_alone ? count_matching(sides[s], db, lr, c, -1) : 1;
        if (with_key != 1 || alone != 1) {
          size_t l = strlen(lr->lits[c]);
          fprintf(stderr, "%s: %s.%s row %zu column %s: literal %.*s%s matches %lld (alone %lld)\n",
                  s ? "target" : "source", db, table, i, lr->names[c], l > 200 ? 200 : (int)l,
                  lr->lits[c], l > 200 ? "..." : "", with_key, alone);
        }
        CU_ASSERT(with_key == 1);
        CU_ASSERT(alone == 1);
      }
      checked++;
    }
  }
  CU_ASSERT(checked > 0);
}

static void assert_tables_equal(const char *db, const char *table) {
  char diff[1024] = "";
  int rc = testdb_compare_tables(src, dst, db, db, table, diff, sizeof diff);
  if (rc != 0)
    fprintf(stderr, "%s.%s: %s\n", db, table, diff);
  CU_ASSERT(rc == 0);
}

/* ---- the data sets ---- */

/* tests/sql/all-types.sql: loaded on the source (binlogged), schema only on the target. */
static void test_all_types(void) {
  char file[256];
  uint64_t pos;
  CU_ASSERT_FATAL(testdb_load_all_types(dst, DB_TYPES) == 0);
  CU_ASSERT_FATAL(testdb_execf(dst, "DELETE FROM " DB_TYPES ".all_types; DELETE FROM " DB_TYPES
                                    ".no_pk; DELETE FROM " DB_TYPES
                                    ".auto_zero; DELETE FROM " DB_TYPES ".`weird.name/表 x`") == 0);
  source_position(file, sizeof file, &pos);
  CU_ASSERT_FATAL(testdb_load_all_types(src, DB_TYPES) == 0);
  lit_rows rs = {0};
  read_rows(file, pos, DB_TYPES, &rs);
  CU_ASSERT(rs.errors == 0);
  CU_ASSERT(rs.n >= 14);
  replay(DB_TYPES, &rs);
  char diff[1024] = "";
  int rc = testdb_compare_schemas(src, dst, DB_TYPES, DB_TYPES, diff, sizeof diff);
  if (rc != 0)
    fprintf(stderr, "%s\n", diff);
  CU_ASSERT(rc == 0);
  assert_tables_equal(DB_TYPES, "all_types");
  check_cells(DB_TYPES, &rs, "all_types", "id", 0);
  check_cells(DB_TYPES, &rs, "auto_zero", "id", 0);
  lit_rows_free(&rs);
}

/* One column of the edge table: its type, whether it is indexed, and the source's SQL for each
 * row's value (NULL: SQL NULL). Non-NULL values of a column all differ (under its collation). */
typedef struct edge_col {
  const char *name, *type;
  int indexed;
  const char *v[EDGE_ROWS];
} edge_col;

static const edge_col edge_cols[] = {
    {"k",
     "VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci NOT NULL",
     0,
     {"'k''1\\\\'", "'K2-日本'", "'k3-😀'", "'k4\t'", "'k5'"}},
    /* sjis and gbk: 0x955c, 0x815c end in the byte of a backslash */
    {"c_sjis",
     "VARCHAR(20) CHARACTER SET sjis",
     1,
     {"_sjis X'955C'", "_sjis X'5C'", "_sjis X'27955C27'", "_sjis X'8140955C5C'", NULL}},
    {"c_sjis_char",
     "CHAR(4) CHARACTER SET sjis",
     0,
     {"_sjis X'955C955C'", "_sjis X'41'", NULL, NULL, NULL}},
    {"c_gbk",
     "VARCHAR(20) CHARACTER SET gbk",
     1,
     {"_gbk X'815C'", "_gbk X'5C5C'", "_gbk X'B0A1815C'", "_gbk X'27'", NULL}},
    {"c_utf16",
     "VARCHAR(20) CHARACTER SET utf16",
     0,
     {"_utf16 X'0027005C0000'", "_utf16 X'275C'", "_utf16 X'D83DDE00'", "_utf16 X'0041'", NULL}},
    {"c_utf8mb4_bin",
     "VARCHAR(40) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin",
     1,
     {"'a''b\\\\c'", "_utf8mb4 X'7800790D0A'", "'tail '", "'😀'", NULL}},
    {"c_utf8mb3", "VARCHAR(20) CHARACTER SET utf8mb3", 0, {"'ü\\\\'", "''''", "'z'", "''", NULL}},
    {"c_latin1",
     "VARCHAR(20) CHARACTER SET latin1",
     1,
     {"_latin1 X'80'", "_latin1 X'FF5C27'", "'\\\\'", "'plain'", NULL}},
    {"c_text",
     "TEXT CHARACTER SET utf8mb4",
     0,
     {"'multi\\nline\\r\\n'", "'\\0'", "REPEAT('x', 60000)", "'日本語'", NULL}},
    {"c_binary", "BINARY(8)", 1, {"X'01'", "X'0001'", "X'00'", "X'FFFFFFFFFFFFFF5C'", NULL}},
    {"c_varbinary", "VARBINARY(300)", 1, {"@all_bytes", "X''", "X'00'", "X'5C27'", NULL}},
    {"c_blob", "BLOB", 0, {"@all_bytes", "X'5C'", "X'27'", "X'000000'", NULL}},
    {"c_date", "DATE", 1, {"'2024-00-00'", "'2023-02-31'", "'0000-00-00'", "'9999-12-31'", NULL}},
    {"c_time0", "TIME(0)", 1, {"'838:59:59'", "'-838:59:59'", "'-00:00:01'", "'00:00:00'", NULL}},
    {"c_time1",
     "TIME(1)",
     0,
     {"'838:59:59.9'", "'-838:59:59.9'", "'-00:00:00.1'", "'0:0:0'", NULL}},
    {"c_time2", "TIME(2)", 0, {"'12:00:00.99'", "'-12:00:00.01'", "'00:00:00'", "'-1:0:0'", NULL}},
    {"c_time3", "TIME(3)", 0, {"'-00:00:00.001'", "'837:00:00.999'", "'0:0:0'", "'1:2:3'", NULL}},
    {"c_time4", "TIME(4)", 0, {"'-00:00:00.0001'", "'1:00:00.9999'", "'0:0:0'", "'5:0:0'", NULL}},
    {"c_time5", "TIME(5)", 0, {"'-00:00:00.00001'", "'2:0:0.99999'", "'0:0:0'", "'6:0:0'", NULL}},
    {"c_time6",
     "TIME(6)",
     1,
     {"'838:59:59.999999'", "'-838:59:59.999999'", "'-00:00:00.000001'", "'0:0:0'", NULL}},
    {"c_datetime0",
     "DATETIME(0)",
     1,
     {"'9999-12-31 23:59:59'", "'1000-01-01 00:00:00'", "'0000-00-00 00:00:00'",
      "'2024-00-05 01:02:03'", NULL}},
    {"c_datetime1",
     "DATETIME(1)",
     0,
     {"'9999-12-31 23:59:59.9'", "'1000-01-01 00:00:00.1'", "'0000-00-00 00:00:00'",
      "'2023-02-31 00:00:00'", NULL}},
    {"c_datetime2",
     "DATETIME(2)",
     0,
     {"'2024-01-01 00:00:00.99'", "'2024-01-01 00:00:00.01'", "'0000-00-00 00:00:00'",
      "'2024-01-01 00:00:00'", NULL}},
    {"c_datetime3",
     "DATETIME(3)",
     0,
     {"'2024-01-01 00:00:00.999'", "'2024-01-01 00:00:00.001'", "'0000-00-00 00:00:00.000'",
      "'2024-01-01 00:00:00.5'", NULL}},
    {"c_datetime4",
     "DATETIME(4)",
     0,
     {"'2024-01-01 00:00:00.9999'", "'2024-01-01 00:00:00.0001'", "'0000-00-00 00:00:00'",
      "'2024-01-01 00:00:00'", NULL}},
    {"c_datetime5",
     "DATETIME(5)",
     0,
     {"'2024-01-01 00:00:00.99999'", "'2024-01-01 00:00:00.00001'", "'0000-00-00 00:00:00'",
      "'2024-01-01 00:00:00'", NULL}},
    {"c_datetime6",
     "DATETIME(6)",
     1,
     {"'9999-12-31 23:59:59.999999'", "'1000-01-01 00:00:00.000001'", "'0000-00-00 00:00:00'",
      "'2024-02-29 12:34:56.5'", NULL}},
    {"c_ts0",
     "TIMESTAMP(0) NULL",
     1,
     {"'2038-01-19 03:14:07'", "'1970-01-01 00:00:01'", "'0000-00-00 00:00:00'",
      "'2024-03-31 01:30:00'", NULL}},
    {"c_ts1",
     "TIMESTAMP(1) NULL",
     0,
     {"'2038-01-19 03:14:07.9'", "'1970-01-01 00:00:01.1'", "'0000-00-00 00:00:00'",
      "'2024-10-27 01:30:00'", NULL}},
    {"c_ts2",
     "TIMESTAMP(2) NULL",
     0,
     {"'2038-01-19 03:14:07.99'", "'1970-01-01 00:00:01.01'", "'0000-00-00 00:00:00'",
      "'2000-01-01 00:00:00'", NULL}},
    {"c_ts3",
     "TIMESTAMP(3) NULL",
     0,
     {"'2038-01-19 03:14:07.999'", "'1970-01-01 00:00:01.001'", "'0000-00-00 00:00:00'",
      "'2000-01-01 00:00:00'", NULL}},
    {"c_ts4",
     "TIMESTAMP(4) NULL",
     0,
     {"'2038-01-19 03:14:07.9999'", "'1970-01-01 00:00:01.0001'", "'0000-00-00 00:00:00'",
      "'2000-01-01 00:00:00'", NULL}},
    {"c_ts5",
     "TIMESTAMP(5) NULL",
     0,
     {"'2038-01-19 03:14:07.99999'", "'1970-01-01 00:00:01.00001'", "'0000-00-00 00:00:00'",
      "'2000-01-01 00:00:00'", NULL}},
    {"c_ts6",
     "TIMESTAMP(6) NULL",
     1,
     {"'2038-01-19 03:14:07.999999'", "'1970-01-01 00:00:01.000001'", "'0000-00-00 00:00:00'",
      "'2000-01-01 00:00:00.5'", NULL}},
    {"c_year", "YEAR", 1, {"0", "1901", "2155", "2000", NULL}},
    {"c_enum",
     "ENUM('a','b','it''s','c\\\\d','ü') CHARACTER SET utf8mb4",
     1,
     {"''", "'it''s'", "'c\\\\d'", "'ü'", NULL}},
    {"c_set",
     "SET('x','y','z','w''q') CHARACTER SET latin1",
     1,
     {"''", "'x,y,z,w''q'", "'w''q'", "'y'", NULL}},
    {"c_bit1", "BIT(1)", 0, {"0", "1", NULL, NULL, NULL}},
    {"c_bit13", "BIT(13)", 0, {"b'1111111111111'", "0", "b'1010'", "92", NULL}},
    {"c_bit64",
     "BIT(64)",
     1,
     {"0xFFFFFFFFFFFFFFFF", "0", "0x8000000000000000", "b'1011100'", NULL}},
    {"c_tinyint", "TINYINT", 0, {"-128", "127", "0", "-1", NULL}},
    {"c_tinyint_u", "TINYINT UNSIGNED", 0, {"255", "0", "1", "128", NULL}},
    {"c_mediumint", "MEDIUMINT", 0, {"-8388608", "8388607", "0", "-1", NULL}},
    {"c_mediumint_u", "MEDIUMINT UNSIGNED", 0, {"16777215", "0", "8388608", "1", NULL}},
    {"c_bigint", "BIGINT", 1, {"-9223372036854775808", "9223372036854775807", "0", "-1", NULL}},
    {"c_bigint_u",
     "BIGINT UNSIGNED",
     1,
     {"18446744073709551615", "0", "9223372036854775808", "1", NULL}},
    {"c_decimal65",
     "DECIMAL(65,30)",
     1,
     {"99999999999999999999999999999999999.999999999999999999999999999999",
      "-99999999999999999999999999999999999.999999999999999999999999999999",
      "0.000000000000000000000000000001", "0", NULL}},
    {"c_decimal38",
     "DECIMAL(38,38)",
     0,
     {"0.99999999999999999999999999999999999999", "-0.00000000000000000000000000000000000001", "0",
      "-0.5", NULL}},
    {"c_decimal5", "DECIMAL(5,2)", 0, {"-999.99", "999.99", "0", "0.01", NULL}},
    {"c_float", "FLOAT", 1, {"1.1", "-3.40282347e38", "1.17549435e-38", "1.4e-45", NULL}},
    {"c_double", "DOUBLE", 1, {"4.9e-324", "-1.7976931348623157e308", "0.1", "-0e0", NULL}},
    {"c_json",
     "JSON",
     0,
     {"'{\"a\": \"it''s \\\\\\\\ \\\\\"q\\\\\"\"}'", "'[]'", "'null'", "'\"\\\\u0000\"'", NULL}},
    {"c_geometry",
     "GEOMETRY",
     0,
     {"ST_GeomFromText('POINT(1 2)', 4326)", "ST_GeomFromText('LINESTRING(0 0,1 1)')",
      "ST_GeomFromText('POLYGON((0 0,0 1,1 1,0 0))')", "ST_GeomFromText('MULTIPOINT(92 39)')",
      NULL}},
    {"c_point",
     "POINT",
     0,
     {"POINT(0.1, -0.2)", "POINT(1e300, -1e-300)", "POINT(0, 0)", "POINT(92, 39)", NULL}},
    {"c_inet4", "INET4", 1, {"'0.0.0.0'", "'255.255.255.255'", "'92.39.0.0'", "'0.0.0.92'", NULL}},
    {"c_inet6", "INET6", 1, {"'::'", "'::1'", "'ffff::5c27'", "'2001:db8::'", NULL}},
    {"c_uuid",
     "UUID",
     1,
     {"'00000000-0000-0000-0000-000000000000'", "'01234567-89ab-1def-8123-456789abcdef'",
      "'6ccd780c-baba-4026-9564-5b8c656024db'", "'5c5c5c5c-2727-1000-8000-00000000005c'", NULL}},
};
#define N_EDGE_COLS (sizeof edge_cols / sizeof edge_cols[0])

static void create_edge_table(MYSQL *conn) {
  dm_buf q = {0};
  dm_buf_puts(&q, "CREATE TABLE " DB_EDGE ".edge (");
  for (size_t c = 0; c < N_EDGE_COLS; c++)
    dm_buf_printf(&q, "%s %s, ", edge_cols[c].name, edge_cols[c].type);
  dm_buf_puts(&q, "PRIMARY KEY (k)");
  for (size_t c = 0; c < N_EDGE_COLS; c++)
    if (edge_cols[c].indexed)
      dm_buf_printf(&q, ", KEY ix_%s (%s%s)", edge_cols[c].name, edge_cols[c].name,
                    strstr(edge_cols[c].type, "BLOB") ? "(10)" : "");
  dm_buf_puts(&q, ") DEFAULT CHARSET=utf8mb4");
  CU_ASSERT_FATAL(testdb_recreate_db(conn, DB_EDGE) == 0);
  CU_ASSERT_FATAL(testdb_exec(conn, q.p) == 0);
  dm_buf_free(&q);
}

/* The `key` column of EXPLAIN SELECT ... WHERE `col` = lit [FORCE INDEX]; "" for none. */
static void explain_key(const char *col, const char *index, const char *lit, char *out,
                        size_t len) {
  dm_buf q = {0};
  dm_buf_puts(&q, "EXPLAIN SELECT * FROM " DB_EDGE ".edge");
  if (index)
    dm_buf_printf(&q, " FORCE INDEX (%s)", index);
  dm_buf_printf(&q, " WHERE `%s` = %s", col, lit);
  out[0] = '\0';
  MYSQL_RES *res = NULL;
  if (mysql_real_query(dst_raw, q.p, q.len) == 0 && (res = mysql_store_result(dst_raw))) {
    MYSQL_ROW row = mysql_fetch_row(res);
    MYSQL_FIELD *f = mysql_fetch_fields(res);
    for (unsigned i = 0; row && i < mysql_num_fields(res); i++)
      if (strcmp(f[i].name, "key") == 0 && row[i])
        snprintf(out, len, "%s", row[i]);
    mysql_free_result(res);
  } else {
    fprintf(stderr, "%s: %s\n", q.p, mysql_error(dst_raw));
  }
  dm_buf_free(&q);
}

static void test_edge_values(void) {
  create_edge_table(src);
  create_edge_table(dst);
  /* The source as permissive as a source can be: zero dates, invalid days, the ENUM error value,
   * TIMESTAMP text in UTC. */
  CU_ASSERT_FATAL(testdb_exec(src, "USE " DB_EDGE "; SET SESSION sql_mode='ALLOW_INVALID_DATES'; "
                                   "SET time_zone='+00:00'; SET @all_bytes = (SELECT "
                                   "UNHEX(GROUP_CONCAT(LPAD(HEX(seq), 2, '0') ORDER BY seq "
                                   "SEPARATOR '')) FROM seq_0_to_255)") == 0);
  char file[256];
  uint64_t pos;
  source_position(file, sizeof file, &pos);
  for (int r = 0; r < EDGE_ROWS; r++) {
    dm_buf q = {0};
    dm_buf_puts(&q, "INSERT INTO " DB_EDGE ".edge (");
    for (size_t c = 0; c < N_EDGE_COLS; c++)
      dm_buf_printf(&q, "%s%s", c ? "," : "", edge_cols[c].name);
    dm_buf_puts(&q, ") VALUES (");
    for (size_t c = 0; c < N_EDGE_COLS; c++)
      dm_buf_printf(&q, "%s%s", c ? "," : "", edge_cols[c].v[r] ? edge_cols[c].v[r] : "NULL");
    dm_buf_puts(&q, ")");
    CU_ASSERT(testdb_exec(src, q.p) == 0);
    dm_buf_free(&q);
  }
  CU_ASSERT(testdb_exec(src, "SET SESSION sql_mode=DEFAULT") == 0);
  lit_rows rs = {0};
  read_rows(file, pos, DB_EDGE, &rs);
  CU_ASSERT(rs.errors == 0);
  CU_ASSERT_FATAL(rs.n == EDGE_ROWS);
  replay(DB_EDGE, &rs);
  assert_tables_equal(DB_EDGE, "edge");
  check_cells(DB_EDGE, &rs, "edge", "k", 1);

  /* Indexes serve `col = literal`: the VARCHAR primary key by itself, the others when forced
   * (FORCE INDEX cannot make an index usable for a literal it cannot compare with). */
  for (size_t i = 0; i < rs.n; i++) {
    const lit_row *lr = &rs.v[i];
    for (uint32_t c = 0; c < lr->n; c++) {
      const edge_col *ec = &edge_cols[c];
      if (!lr->lits[c] || (c > 0 && !ec->indexed))
        continue;
      char key[128], want[128];
      snprintf(want, sizeof want, c == 0 ? "PRIMARY" : "ix_%s", ec->name);
      explain_key(ec->name, c == 0 ? NULL : want, lr->lits[c], key, sizeof key);
      if (strcmp(key, want) != 0)
        fprintf(stderr, "EXPLAIN ... WHERE %s = %s: key '%s'\n", ec->name, lr->lits[c], key);
      CU_ASSERT_STRING_EQUAL(key, want);
    }
  }
  lit_rows_free(&rs);
}

/* A compressed column's bytes are not decoded: its values cannot become literals, and the error
 * names the column (its NULLs still can). */
static void test_compressed_column(void) {
  CU_ASSERT_FATAL(testdb_recreate_db(src, DB_ZIP) == 0);
  CU_ASSERT_FATAL(testdb_exec(src, "CREATE TABLE " DB_ZIP ".z (id INT PRIMARY KEY, "
                                   "packed VARCHAR(200) COMPRESSED, note BLOB COMPRESSED)") == 0);
  char file[256];
  uint64_t pos;
  source_position(file, sizeof file, &pos);
  CU_ASSERT_FATAL(
      testdb_exec(src, "INSERT INTO " DB_ZIP ".z VALUES (1, NULL, NULL), (2, 'abc', NULL)") == 0);
  lit_rows rs = {0};
  read_rows(file, pos, DB_ZIP, &rs);
  CU_ASSERT_FATAL(rs.n == 2);
  CU_ASSERT(rs.errors == 1);
  CU_ASSERT(rs.last_error.code == DM_ERR_BINLOG_UNSUPPORTED);
  CU_ASSERT(strstr(rs.last_error.message, "`packed`") != NULL);
  CU_ASSERT(strstr(rs.last_error.message, "compressed") != NULL);
  CU_ASSERT_STRING_EQUAL(rs.v[0].lits[0], "1");
  CU_ASSERT_PTR_NULL(rs.v[0].lits[1]);
  lit_rows_free(&rs);
}

/* ---- without the binlog ---- */

static dm_binlog_column named_column(const char *name, uint8_t type) {
  dm_binlog_column c = {.type = type, .real_type = type};
  c.name.ptr = name;
  c.name.len = (uint32_t)strlen(name);
  return c;
}

static void test_identifiers(void) {
  dm_buf b = {0};
  CU_ASSERT(sync_sql_ident(&b, "a`b``c", 6) == 0);
  CU_ASSERT_STRING_EQUAL(b.p, "`a``b````c`");
  dm_buf_reset(&b);
  CU_ASSERT(sync_sql_qualified(&b, "d`b", "表 x") == 0);
  CU_ASSERT_STRING_EQUAL(b.p, "`d``b`.`表 x`");
  dm_buf_reset(&b);
  CU_ASSERT(sync_sql_ident(&b, "", 0) == 0);
  CU_ASSERT_STRING_EQUAL(b.p, "``");
  /* The server takes them back as the same names. */
  char v[64];
  CU_ASSERT(testdb_query_value(dst, v, sizeof v, "SELECT 1 AS `a``b````c`") == 0);
  dm_buf_free(&b);
}

static void test_charsets(void) {
  CU_ASSERT_STRING_EQUAL(sync_charsets_name(charsets, 63), "binary");
  CU_ASSERT_STRING_EQUAL(sync_charsets_name(charsets, 45), "utf8mb4"); /* utf8mb4_general_ci */
  CU_ASSERT_STRING_EQUAL(sync_charsets_name(charsets, 8), "latin1");
  CU_ASSERT_STRING_EQUAL(sync_charsets_name(charsets, 28), "gbk");
  CU_ASSERT_PTR_NULL(sync_charsets_name(charsets, 0));
  CU_ASSERT_PTR_NULL(sync_charsets_name(charsets, 65000));
  CU_ASSERT_PTR_NULL(sync_charsets_name(NULL, 45));
  /* Without a charset table (or for an unknown collation) a string goes without introducer. */
  dm_binlog_column col = named_column("s", DM_COL_VARCHAR);
  col.collation = 45;
  dm_binlog_value v = {.kind = DM_VAL_STRING};
  v.v.s.ptr = (const uint8_t *)"a'\\";
  v.v.s.len = 3;
  dm_buf b = {0};
  dm_error err;
  CU_ASSERT(sync_sql_value(&b, &v, &col, NULL, &err) == 0);
  CU_ASSERT_STRING_EQUAL(b.p, "'a\\'\\\\'");
  dm_buf_reset(&b);
  CU_ASSERT(sync_sql_value(&b, &v, &col, charsets, &err) == 0);
  CU_ASSERT_STRING_EQUAL(b.p, "_utf8mb4'a\\'\\\\'");
  dm_buf_free(&b);
}

/* What the table cannot exercise on a MariaDB source: MySQL binary JSON, partial JSON updates,
 * values outside the image, non-finite floats. */
static void test_kinds_without_source(void) {
  dm_buf b = {0};
  dm_error err;
  /* MySQL binary JSON: the small object {"k": "it's \"q\" \\xyzw!"}: count, size, key entry
   * (offset, length), value entry (string at offset 12), key, string (length 15, then bytes). */
  static const uint8_t obj[] = {0x00, 0x01, 0x00, 0x1c, 0x00, 0x0b, 0x00, 0x01, 0x00, 0x0c,
                                0x0c, 0x00, 'k',  0x0f, 'i',  't',  '\'', 's',  ' ',  '"',
                                'q',  '"',  ' ',  '\\', 'x',  'y',  'z',  'w',  '!'};
  dm_binlog_column jc = named_column("j", DM_COL_JSON);
  dm_binlog_value jv = {.kind = DM_VAL_JSON};
  jv.v.s.ptr = obj;
  jv.v.s.len = sizeof obj;
  char want[128];
  long n = dm_binlog_json_to_text(obj, sizeof obj, want, sizeof want, &err);
  CU_ASSERT_FATAL(n > 0);
  CU_ASSERT(sync_sql_value(&b, &jv, &jc, charsets, &err) == 0);
  /* The literal reads back as the SDK's JSON text, byte for byte. */
  char got[128], hex_want[256];
  for (long i = 0; i < n; i++)
    sprintf(hex_want + 2 * i, "%02X", (unsigned char)want[i]);
  CU_ASSERT(testdb_query_value(dst_raw, got, sizeof got, "SELECT HEX(%s)", b.p) == 0);
  CU_ASSERT_STRING_EQUAL(got, hex_want);
  /* Bad binary JSON is reported as such. */
  static const uint8_t bad[] = {0x7f, 0x00};
  jv.v.s.ptr = bad;
  jv.v.s.len = sizeof bad;
  CU_ASSERT(sync_sql_value(&b, &jv, &jc, charsets, &err) == -1);
  CU_ASSERT(err.code == DM_ERR_BINLOG_CORRUPT);
  /* A partial JSON update has no value to write. */
  jv.kind = DM_VAL_JSON_DIFF;
  CU_ASSERT(sync_sql_value(&b, &jv, &jc, charsets, &err) == -1);
  CU_ASSERT(err.code == DM_ERR_BINLOG_UNSUPPORTED);
  CU_ASSERT(strstr(err.message, "`j`") != NULL);
  /* A column outside the row image is the caller's mistake. */
  dm_binlog_value absent = {.kind = DM_VAL_ABSENT};
  CU_ASSERT(sync_sql_value(&b, &absent, &jc, charsets, &err) == -1);
  CU_ASSERT(err.code == DM_ERR_INTERNAL);
  /* MariaDB stores no NaN or infinity. */
  dm_binlog_column dc = named_column("d", DM_COL_DOUBLE);
  dm_binlog_value dv = {.kind = DM_VAL_DOUBLE};
  dv.v.f = NAN;
  CU_ASSERT(sync_sql_value(&b, &dv, &dc, charsets, &err) == -1);
  CU_ASSERT(err.code == DM_ERR_BINLOG_UNSUPPORTED);
  CU_ASSERT(strstr(err.message, "`d`") != NULL);
  /* -0 keeps its sign, and every double has an exponent (a DOUBLE literal). */
  dm_buf_reset(&b);
  dv.v.f = -0.0;
  CU_ASSERT(sync_sql_value(&b, &dv, &dc, charsets, &err) == 0);
  CU_ASSERT_STRING_EQUAL(b.p, "-0e0");
  /* ENUM index 0 and an ENUM/SET without names go as numbers; a wide charset as hex. */
  dm_binlog_column ec = named_column("e", DM_COL_ENUM);
  dm_binlog_value ev = {.kind = DM_VAL_ENUM};
  ev.v.u = 3;
  dm_buf_reset(&b);
  CU_ASSERT(sync_sql_value(&b, &ev, &ec, charsets, &err) == 0);
  CU_ASSERT_STRING_EQUAL(b.p, "3");
  dm_binlog_column uc = named_column("u", DM_COL_VARCHAR);
  uc.collation = 54; /* utf16_general_ci */
  dm_binlog_value uv = {.kind = DM_VAL_STRING};
  uv.v.s.ptr = (const uint8_t *)"\0'";
  uv.v.s.len = 2;
  dm_buf_reset(&b);
  CU_ASSERT(sync_sql_value(&b, &uv, &uc, charsets, &err) == 0);
  CU_ASSERT_STRING_EQUAL(b.p, "_utf16 X'0027'");
  dm_buf_free(&b);
}

/* ---- suite ---- */

static int suite_init(void) {
  src = testdb_connect(TESTDB_SOURCE);
  dst = testdb_connect(TESTDB_TARGET);
  src_raw = testdb_connect(TESTDB_SOURCE);
  dst_raw = testdb_connect(TESTDB_TARGET);
  if (!src || !dst || !src_raw || !dst_raw)
    return -1;
  if (testdb_exec(src_raw, SYNC_SQL_SESSION) < 0 || testdb_exec(dst_raw, SYNC_SQL_SESSION) < 0)
    return -1;
  dm_error err;
  if (sync_charsets_load(dst_raw, &charsets, &err) < 0) {
    fprintf(stderr, "%s / %s\n", err.message, err.raw_cause);
    return -1;
  }
  return 0;
}

static int suite_clean(void) {
  sync_charsets_free(charsets);
  const char *dbs[] = {DB_TYPES, DB_EDGE, DB_ZIP};
  for (size_t i = 0; i < 3; i++) {
    if (src)
      testdb_execf(src, "DROP DATABASE IF EXISTS `%s`", dbs[i]);
    if (dst)
      testdb_execf(dst, "DROP DATABASE IF EXISTS `%s`", dbs[i]);
  }
  testdb_close(src);
  testdb_close(dst);
  testdb_close(src_raw);
  testdb_close(dst_raw);
  return 0;
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"identifiers quote backticks", test_identifiers},
      {"charset table from the target; strings with and without introducer", test_charsets},
      {"MySQL JSON, partial JSON, absent, NaN, -0, ENUM numbers, UTF-16 hex",
       test_kinds_without_source},
      {"all-types.sql through the binlog: target equals source, literals match cells",
       test_all_types},
      {"edge values: every literal matches exactly its cell, indexes usable", test_edge_values},
      {"compressed column: DM_ERR_BINLOG_UNSUPPORTED naming it", test_compressed_column},
  };
  return dmh_cunit_run("sync_sql", suite_init, suite_clean, tests, sizeof tests / sizeof tests[0]);
}

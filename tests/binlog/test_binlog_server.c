/*
 * The binlog library on real binlogs written by the local source (CTest fixture mariadb):
 * tests/sql/all-types.sql plus updates and deletes are written, the files are closed with FLUSH
 * BINARY LOGS and read back from the source's datadir. Every row event of binlog_test.all_types is
 * replayed in memory (updates' and deletes' before-images must equal the row as last written) and
 * the result is compared, column by column, with what the server returns. The same files then come
 * through the stream reader, from file/position and from a GTID, byte for byte; damaged and
 * truncated copies give the errors recovery relies on.
 */
#include <CUnit/Basic.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cunit_run.h"
#include "dmhost/binlog.h"
#include "dmhost/binlog_rows.h"
#include "testdb.h"

#define DB "binlog_test"
#define MAX_FILES 64
#define MAX_IDS 32
#define FMT_CAP (8u << 20)

static MYSQL *src;
static char bin_dir[512];          /* folder of the source's binlog files */
static char files[MAX_FILES][256]; /* the files the workload went into, closed */
static int n_files;
static char gtid0[256];      /* @@gtid_binlog_pos before the workload */
static char gtid_flush[256]; /* @@gtid_binlog_pos just before the FLUSH that began its file */
static char tmp_dir[256];
static dm_db_endpoint endpoint;
static testdb_params params;

/* ---- one stored event per file position, to compare the stream with the files ---- */
typedef struct stored_event {
  uint64_t offset;
  uint32_t len;
  uint8_t *raw;
} stored_event;
typedef struct stored_file {
  stored_event *ev;
  size_t n;
} stored_file;
static stored_file stored[MAX_FILES];

static void assert_contains(const char *text, const char *part) {
  if (!strstr(text, part)) {
    fprintf(stderr, "'%s' lacks '%s'\n", text, part);
    CU_FAIL("text");
  }
}

static int query_row(const char *sql, char *a, size_t alen, char *b, size_t blen) {
  if (mysql_query(src, sql) != 0) {
    fprintf(stderr, "%s: %s\n", sql, mysql_error(src));
    return -1;
  }
  MYSQL_RES *res = mysql_store_result(src);
  MYSQL_ROW row = res ? mysql_fetch_row(res) : NULL;
  if (!row) {
    if (res)
      mysql_free_result(res);
    return -1;
  }
  if (a)
    snprintf(a, alen, "%s", row[0] ? row[0] : "");
  if (b)
    snprintf(b, blen, "%s", row[1] ? row[1] : "");
  mysql_free_result(res);
  return 0;
}

static int file_index(const char *name) {
  for (int i = 0; i < n_files; i++)
    if (strcmp(files[i], name) == 0)
      return i;
  return -1;
}

static int suite_init(void) {
  src = testdb_connect(TESTDB_SOURCE);
  if (!src)
    return 1;
  testdb_params_get(TESTDB_SOURCE, &params);
  endpoint.host = params.host;
  endpoint.port = (int)params.port;
  endpoint.user = params.user;
  endpoint.password = params.password;
  char base[512], first[256], last[256], pos[64];
  if (query_row("SELECT @@log_bin_basename, @@gtid_binlog_pos", base, sizeof base, gtid0,
                sizeof gtid0) < 0)
    return 1;
  char *slash = strrchr(base, '/');
  if (!slash)
    return 1;
  *slash = '\0';
  snprintf(bin_dir, sizeof bin_dir, "%s", base);
  /* A fresh source (a fresh clone's CI) has written no GTID yet, and an empty gtid_binlog_pos
   * gives the GTID tests nothing to start from: one binlogged statement first. */
  if (testdb_exec(src, "DROP DATABASE IF EXISTS dmh_binlog_seed") < 0)
    return 1;
  /* A fresh file for the workload; others' events may share it (the servers are shared). */
  if (query_row("SELECT @@gtid_binlog_pos, 1", gtid_flush, sizeof gtid_flush, NULL, 0) < 0 ||
      testdb_exec(src, "FLUSH BINARY LOGS") < 0 ||
      query_row("SHOW MASTER STATUS", first, sizeof first, pos, sizeof pos) < 0 ||
      query_row("SELECT @@gtid_binlog_pos, 1", gtid0, sizeof gtid0, NULL, 0) < 0)
    return 1;
  if (testdb_load_all_types(src, DB) < 0)
    return 1;
  if (testdb_exec(src, "USE " DB ";"
                       "UPDATE all_types SET c_int = 42, c_varchar = 'changed' WHERE id IN (1, 2);"
                       "UPDATE all_types SET c_datetime6 = '2020-02-02 02:02:02.020202', "
                       "  c_decimal65 = -c_decimal65, c_bit64 = b'1010', c_time6 = '-01:02:03.4' "
                       "  WHERE id = 8;"
                       "UPDATE all_types SET c_blob = REVERSE(c_blob), c_enum = 'a', "
                       "  c_set = 'x,z' WHERE id = 6;"
                       "DELETE FROM all_types WHERE id IN (9, 13)") < 0)
    return 1;
  if (query_row("SHOW MASTER STATUS", last, sizeof last, pos, sizeof pos) < 0 ||
      testdb_exec(src, "FLUSH BINARY LOGS") < 0)
    return 1;
  /* every file from first to last, in order */
  if (mysql_query(src, "SHOW BINARY LOGS") != 0)
    return 1;
  MYSQL_RES *res = mysql_store_result(src);
  MYSQL_ROW row;
  bool in = false;
  while ((row = mysql_fetch_row(res))) {
    if (strcmp(row[0], first) == 0)
      in = true;
    if (in && n_files < MAX_FILES)
      snprintf(files[n_files++], sizeof files[0], "%s", row[0]);
    if (strcmp(row[0], last) == 0)
      in = false;
  }
  mysql_free_result(res);
  snprintf(tmp_dir, sizeof tmp_dir, "/tmp/test_binlog_server.XXXXXX");
  if (!mkdtemp(tmp_dir))
    return 1;
  return n_files > 0 ? 0 : 1;
}

static int suite_clean(void) {
  if (src)
    testdb_execf(src, "DROP DATABASE IF EXISTS %s", DB);
  testdb_close(src);
  for (int i = 0; i < MAX_FILES; i++) {
    for (size_t k = 0; k < stored[i].n; k++)
      free(stored[i].ev[k].raw);
    free(stored[i].ev);
  }
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_dir);
  if (tmp_dir[0] && system(cmd) != 0)
    fprintf(stderr, "could not remove %s\n", tmp_dir);
  return 0;
}

static void path_of(int i, char *out, size_t len) {
  if (snprintf(out, len, "%s/%s", bin_dir, files[i]) >= (int)len)
    out[0] = '\0'; /* too long a path: opening "" fails with a clear error */
}

/* ---- replay of binlog_test.all_types ---- */

typedef struct cell {
  bool present, is_null;
  uint8_t kind;
  char *text;
  size_t len;
} cell;
typedef struct replay {
  dm_binlog_table_map *tm; /* the latest map of all_types */
  cell rows[MAX_IDS][128];
  bool live[MAX_IDS];
  int writes, updates, deletes;
  char *buf;
} replay;

static void cell_set(cell *c, const dm_binlog_value *v, const dm_binlog_column *col, char *buf) {
  free(c->text);
  memset(c, 0, sizeof *c);
  c->present = true;
  c->kind = v->kind;
  if (v->kind == DM_VAL_NULL) {
    c->is_null = true;
    return;
  }
  long n = dm_binlog_value_format(v, col, buf, FMT_CAP);
  CU_ASSERT_FATAL(n >= 0 && (size_t)n < FMT_CAP);
  c->text = malloc((size_t)n + 1);
  memcpy(c->text, buf, (size_t)n + 1);
  c->len = (size_t)n;
}

static bool cell_equal(const cell *c, const dm_binlog_value *v, const dm_binlog_column *col,
                       char *buf) {
  if (v->kind == DM_VAL_NULL)
    return c->is_null;
  if (c->is_null)
    return false;
  long n = dm_binlog_value_format(v, col, buf, FMT_CAP);
  return n >= 0 && (size_t)n == c->len && memcmp(buf, c->text, c->len) == 0;
}

static int64_t row_id(const dm_binlog_value *vals) {
  return vals[0].kind == DM_VAL_INT ? vals[0].v.i : -1;
}

static void replay_rows(replay *rp, const dm_binlog_format *fmt, const dm_binlog_event *ev) {
  dm_error err;
  dm_binlog_rows rows;
  CU_ASSERT_EQUAL_FATAL(dm_binlog_rows_begin(fmt, ev, &rows, &err), 0);
  if (!rp->tm || rows.table_id != rp->tm->table_id)
    return; /* another table */
  uint32_t cc = rp->tm->column_count;
  dm_binlog_value *before = calloc(cc, sizeof *before), *after = calloc(cc, sizeof *after);
  int rc;
  while ((rc = dm_binlog_rows_next(&rows, rp->tm, before, after, &err)) == 1) {
    if (rows.kind == DM_ROWS_WRITE) {
      int64_t id = row_id(after);
      CU_ASSERT_FATAL(id >= 1 && id < MAX_IDS);
      for (uint32_t i = 0; i < cc; i++)
        cell_set(&rp->rows[id][i], &after[i], &rp->tm->columns[i], rp->buf);
      rp->live[id] = true;
      rp->writes++;
      continue;
    }
    int64_t id = row_id(before);
    CU_ASSERT_FATAL(id >= 1 && id < MAX_IDS && rp->live[id]);
    for (uint32_t i = 0; i < cc; i++) {
      if (!cell_equal(&rp->rows[id][i], &before[i], &rp->tm->columns[i], rp->buf)) {
        fprintf(stderr, "row %" PRId64 " column %.*s: before-image differs from the last write\n",
                id, (int)rp->tm->columns[i].name.len, rp->tm->columns[i].name.ptr);
        CU_FAIL("before image");
      }
    }
    if (rows.kind == DM_ROWS_DELETE) {
      rp->live[id] = false;
      rp->deletes++;
    } else {
      CU_ASSERT_EQUAL(row_id(after), id);
      for (uint32_t i = 0; i < cc; i++)
        cell_set(&rp->rows[id][i], &after[i], &rp->tm->columns[i], rp->buf);
      rp->updates++;
    }
  }
  if (rc < 0)
    fprintf(stderr, "%s\n", err.message);
  CU_ASSERT_EQUAL(rc, 0);
  free(before);
  free(after);
}

/* Reads all files, replays all_types, stores every event for the stream tests. */
static void read_and_replay(replay *rp) {
  for (int f = 0; f < n_files; f++) {
    char path[800];
    path_of(f, path, sizeof path);
    dm_error err;
    dm_binlog_reader *r;
    CU_ASSERT_EQUAL_FATAL(dm_binlog_reader_open_file(&r, path, NULL, &err), 0);
    dm_binlog_event ev;
    int rc;
    uint64_t expect_off = 4;
    while ((rc = dm_binlog_reader_next(r, &ev, &err)) == 1) {
      CU_ASSERT_EQUAL(ev.offset, expect_off);
      CU_ASSERT_EQUAL(ev.header.next_pos, ev.offset + ev.raw_len);
      CU_ASSERT_STRING_EQUAL(ev.file, files[f]);
      expect_off = ev.offset + ev.raw_len;
      stored_file *sf = &stored[f];
      sf->ev = realloc(sf->ev, (sf->n + 1) * sizeof *sf->ev);
      sf->ev[sf->n].offset = ev.offset;
      sf->ev[sf->n].len = ev.raw_len;
      sf->ev[sf->n].raw = malloc(ev.raw_len);
      memcpy(sf->ev[sf->n].raw, ev.raw, ev.raw_len);
      sf->n++;
      const dm_binlog_format *fmt = dm_binlog_reader_format(r);
      if (ev.header.type == DM_BINLOG_TABLE_MAP) {
        dm_binlog_table_map *tm;
        CU_ASSERT_EQUAL_FATAL(dm_binlog_table_map_decode(fmt, &ev, &tm, &err), 0);
        if (strcmp(tm->db.ptr, DB) == 0 && strcmp(tm->table.ptr, "all_types") == 0) {
          dm_binlog_table_map_free(rp->tm);
          rp->tm = tm;
        } else {
          dm_binlog_table_map_free(tm);
        }
      } else if (dm_binlog_is_rows_event(ev.header.type)) {
        replay_rows(rp, fmt, &ev);
      }
    }
    if (rc < 0)
      fprintf(stderr, "%s\n", err.message);
    CU_ASSERT_EQUAL(rc, 0);
    struct stat st;
    CU_ASSERT_EQUAL(stat(path, &st), 0);
    CU_ASSERT_EQUAL(dm_binlog_reader_offset(r), (uint64_t)st.st_size);
    dm_binlog_reader_close(r);
  }
}

/* The server's view of every column, compared with the replayed rows. */
static void compare_with_server(replay *rp) {
  const dm_binlog_table_map *tm = rp->tm;
  char sql[16384] = "SELECT ";
  size_t at = strlen(sql);
  for (uint32_t i = 0; i < tm->column_count; i++) {
    const dm_binlog_column *c = &tm->columns[i];
    const char *fmtx = "`%.*s`";
    if (c->real_type == DM_COL_FLOAT || c->real_type == DM_COL_DOUBLE)
      fmtx = "CAST(`%.*s` AS DOUBLE)"; /* exact, where the text protocol rounds FLOAT */
    else if (c->real_type == DM_COL_BIT || c->real_type == DM_COL_TINY ||
             c->real_type == DM_COL_SHORT || c->real_type == DM_COL_INT24 ||
             c->real_type == DM_COL_LONG || c->real_type == DM_COL_LONGLONG)
      fmtx = "`%.*s` + 0"; /* BIT as a number, ZEROFILL without its padding */
    else if (c->name.len == 7 && memcmp(c->name.ptr, "c_inet4", 7) == 0)
      fmtx = "CAST(`%.*s` AS BINARY(4))";
    else if (c->name.len == 7 && memcmp(c->name.ptr, "c_inet6", 7) == 0)
      fmtx = "CAST(`%.*s` AS BINARY(16))";
    at += (size_t)snprintf(sql + at, sizeof sql - at, i ? ", " : "");
    at += (size_t)snprintf(sql + at, sizeof sql - at, fmtx, (int)c->name.len, c->name.ptr);
  }
  snprintf(sql + at, sizeof sql - at, " FROM " DB ".all_types ORDER BY id");
  CU_ASSERT_EQUAL_FATAL(testdb_exec(src, "SET NAMES binary, time_zone = '+00:00'"), 0);
  CU_ASSERT_EQUAL_FATAL(mysql_query(src, sql), 0);
  MYSQL_RES *res = mysql_use_result(src);
  CU_ASSERT_PTR_NOT_NULL_FATAL(res);
  MYSQL_ROW row;
  int n_rows = 0, n_cells = 0;
  bool seen[MAX_IDS] = {0};
  while ((row = mysql_fetch_row(res))) {
    unsigned long *lens = mysql_fetch_lengths(res);
    int id = atoi(row[0]);
    CU_ASSERT_FATAL(id >= 1 && id < MAX_IDS);
    CU_ASSERT(rp->live[id]);
    seen[id] = true;
    n_rows++;
    for (uint32_t i = 0; i < tm->column_count; i++) {
      const dm_binlog_column *c = &tm->columns[i];
      cell *cl = &rp->rows[id][i];
      CU_ASSERT(cl->present);
      bool ok;
      if (!row[i]) {
        ok = cl->is_null;
      } else if (cl->is_null) {
        ok = false;
      } else if (c->real_type == DM_COL_FLOAT) {
        ok = (float)strtod(cl->text, NULL) == (float)strtod(row[i], NULL);
      } else if (c->real_type == DM_COL_DOUBLE) {
        ok = strtod(cl->text, NULL) == strtod(row[i], NULL);
      } else if (c->name.len == 6 && memcmp(c->name.ptr, "c_uuid", 6) == 0) {
        /* MariaDB logs a UUID in its record order, not as printed: check the size only */
        ok = cl->len == 16;
      } else {
        ok = lens[i] == cl->len && memcmp(row[i], cl->text, cl->len) == 0;
      }
      n_cells++;
      if (!ok) {
        fprintf(stderr, "row %d column %.*s (%s): server '%.*s' (%lu bytes), binlog '%.*s' (%zu)\n",
                id, (int)c->name.len, c->name.ptr, dm_binlog_value_kind_name(cl->kind),
                (int)(lens[i] > 80 ? 80 : lens[i]), row[i] ? row[i] : "NULL", lens[i],
                (int)(cl->len > 80 ? 80 : cl->len), cl->text ? cl->text : "NULL", cl->len);
        CU_FAIL("a decoded value differs from the server's");
      }
    }
  }
  mysql_free_result(res);
  testdb_exec(src, "SET NAMES utf8mb4");
  for (int id = 1; id < MAX_IDS; id++)
    CU_ASSERT_EQUAL(seen[id], rp->live[id]);
  CU_ASSERT_EQUAL(n_rows, 12); /* 14 inserted, 2 deleted */
  CU_ASSERT(n_cells >= 12 * 60);
}

static void test_read_files_and_values(void) {
  replay *rp = calloc(1, sizeof *rp);
  rp->buf = malloc(FMT_CAP);
  read_and_replay(rp);
  CU_ASSERT_PTR_NOT_NULL_FATAL(rp->tm);
  CU_ASSERT_EQUAL(rp->writes, 14);
  CU_ASSERT_EQUAL(rp->updates, 1 + 2 + 1 + 1); /* row 3's zero-month update, then ours */
  CU_ASSERT_EQUAL(rp->deletes, 2);
  const dm_binlog_table_map *tm = rp->tm;
  CU_ASSERT_EQUAL(tm->column_count, 61);
  CU_ASSERT(tm->has_column_names);
  /* table map metadata from binlog_row_metadata=FULL */
  for (uint32_t i = 0; i < tm->column_count; i++) {
    const dm_binlog_column *c = &tm->columns[i];
    if (c->name.len == 2 && memcmp(c->name.ptr, "id", 2) == 0) {
      CU_ASSERT(c->in_primary_key);
      CU_ASSERT(!c->nullable);
    }
    if (c->name.len == 11 && memcmp(c->name.ptr, "c_bigint_u", 10) == 0) {
      CU_ASSERT(c->is_unsigned);
    }
    if (c->name.len == 6 && memcmp(c->name.ptr, "c_enum", 6) == 0) {
      CU_ASSERT_EQUAL(c->real_type, DM_COL_ENUM);
      CU_ASSERT_EQUAL(c->n_values, 6);
    }
    if (c->name.len == 5 && memcmp(c->name.ptr, "c_set", 5) == 0) {
      CU_ASSERT_EQUAL(c->real_type, DM_COL_SET);
      CU_ASSERT_EQUAL(c->n_values, 4);
      CU_ASSERT(c->values[3].len == 2 && memcmp(c->values[3].ptr, "\xc3\xa9", 2) == 0);
    }
    if (c->name.len == 12 && memcmp(c->name.ptr, "c_decimal65", 11) == 0) {
      CU_ASSERT_EQUAL(c->precision, 65);
      CU_ASSERT_EQUAL(c->scale, 30);
    }
    if (c->name.len == 7 && memcmp(c->name.ptr, "c_time6", 7) == 0)
      CU_ASSERT_EQUAL(c->fsp, 6);
    if (c->name.len == 13 && memcmp(c->name.ptr, "c_text_latin1", 13) == 0)
      CU_ASSERT_EQUAL(c->collation, 8); /* latin1_swedish_ci */
    if (c->name.len == 8 && memcmp(c->name.ptr, "c_binary", 8) == 0)
      CU_ASSERT_EQUAL(c->collation, DM_BINLOG_COLLATION_BINARY);
  }
  compare_with_server(rp);
  for (int id = 0; id < MAX_IDS; id++)
    for (int i = 0; i < 128; i++)
      free(rp->rows[id][i].text);
  dm_binlog_table_map_free(rp->tm);
  free(rp->buf);
  free(rp);
}

/* The seq_no of domain `domain` in a GTID position "D-S-N,D-S-N..."; -1 when it has none. */
static long long gtid_seq_of(const char *pos, unsigned long domain) {
  for (const char *p = pos; p && *p;) {
    char *end;
    unsigned long d = strtoul(p, &end, 10);
    const char *last = strchr(end, ',');
    const char *dash = NULL;
    for (const char *q = end; *q && (!last || q < last); q++)
      if (*q == '-')
        dash = q;
    if (d == domain && dash)
      return strtoll(dash + 1, NULL, 10);
    p = last ? last + 1 : NULL;
  }
  return -1;
}

/* Does the GTID list `list` hold, for the domain of `hi`, a seq_no between lo's and hi's? */
static bool gtid_between(const char *list, const char *lo, const char *hi) {
  unsigned long domain = strtoul(hi, NULL, 10);
  long long s = gtid_seq_of(list, domain), a = gtid_seq_of(lo, domain), b = gtid_seq_of(hi, domain);
  return s >= 0 && b >= 0 && (a < 0 || a <= s) && s <= b;
}

/* Some decoded events of the workload: GTID, QUERY with its status variables, XID. */
static void test_event_kinds(void) {
  char path[800];
  path_of(0, path, sizeof path);
  dm_error err;
  dm_binlog_reader *r;
  CU_ASSERT_EQUAL_FATAL(dm_binlog_reader_open_file(&r, path, NULL, &err), 0);
  dm_binlog_event ev;
  int seen_gtid_list = 0, seen_gtid = 0, seen_create = 0, seen_xid = 0, seen_annotate = 0,
      seen_checkpoint = 0;
  while (dm_binlog_reader_next(r, &ev, &err) == 1) {
    const dm_binlog_format *fmt = dm_binlog_reader_format(r);
    switch (ev.header.type) {
    case DM_BINLOG_FORMAT_DESCRIPTION:
      CU_ASSERT(fmt->mariadb);
      CU_ASSERT_EQUAL(fmt->checksum_alg, DM_BINLOG_CHECKSUM_CRC32);
      CU_ASSERT_EQUAL(fmt->binlog_version, 4);
      break;
    case DM_BINLOG_GTID_LIST: {
      dm_binlog_gtid_list l;
      char text[512];
      CU_ASSERT_EQUAL(dm_binlog_decode_gtid_list(fmt, &ev, &l, &err), 0);
      CU_ASSERT_EQUAL(dm_binlog_gtid_list_format(&l, text, sizeof text), 0);
      /* the state when the file was started: one GTID per domain and server. Other tests write
       * to the shared source at the same time, so it lies between the state read before the FLUSH
       * and gtid0, read after it (equal to both when nothing else wrote). */
      if (seen_gtid_list++ == 0 && !gtid_between(text, gtid_flush, gtid0)) {
        fprintf(stderr, "GTID list '%s' is not between '%s' and '%s'\n", text, gtid_flush, gtid0);
        CU_FAIL("GTID list");
      }
      break;
    }
    case DM_BINLOG_BINLOG_CHECKPOINT: {
      dm_binlog_checkpoint cp;
      CU_ASSERT_EQUAL(dm_binlog_decode_checkpoint(fmt, &ev, &cp, &err), 0);
      CU_ASSERT(cp.file.len > 4 && memcmp(cp.file.ptr, "mysql-bin.", 10) == 0);
      seen_checkpoint++;
      break;
    }
    case DM_BINLOG_GTID: {
      dm_binlog_gtid g;
      CU_ASSERT_EQUAL(dm_binlog_decode_gtid(fmt, &ev, &g, &err), 0);
      CU_ASSERT_EQUAL(g.domain_id, 0);
      CU_ASSERT_EQUAL(g.server_id, 1);
      CU_ASSERT(g.seq_no > 0);
      seen_gtid++;
      break;
    }
    case DM_BINLOG_QUERY: {
      dm_binlog_query q;
      CU_ASSERT_EQUAL_FATAL(dm_binlog_decode_query(fmt, &ev, &q, &err), 0);
      CU_ASSERT_EQUAL(q.unknown_status_code, -1);
      if (q.query.len > 20 && memcmp(q.query.ptr, "CREATE TABLE all_types", 22) == 0 &&
          q.db.len == strlen(DB) && memcmp(q.db.ptr, DB, q.db.len) == 0) {
        seen_create++;
        CU_ASSERT(q.has_sql_mode);
        /* all-types.sql: NO_AUTO_VALUE_ON_ZERO (0x80000) and STRICT_ALL_TABLES (0x400000) */
        CU_ASSERT_EQUAL(q.sql_mode, 0x80000 | 0x400000);
        CU_ASSERT(q.has_charset);
        CU_ASSERT_EQUAL(q.charset_client, 45); /* SET NAMES utf8mb4 (utf8mb4_general_ci) */
      }
      break;
    }
    case DM_BINLOG_XID: {
      uint64_t xid;
      CU_ASSERT_EQUAL(dm_binlog_decode_xid(fmt, &ev, &xid, &err), 0);
      seen_xid++;
      break;
    }
    case DM_BINLOG_ANNOTATE_ROWS: {
      dm_binlog_str s;
      CU_ASSERT_EQUAL(dm_binlog_decode_annotate(fmt, &ev, &s, &err), 0);
      CU_ASSERT(s.len > 0);
      seen_annotate++;
      break;
    }
    default:
      break;
    }
  }
  dm_binlog_reader_close(r);
  CU_ASSERT(seen_gtid_list >= 1);
  CU_ASSERT(seen_checkpoint >= 1);
  CU_ASSERT(seen_gtid >= 5);
  CU_ASSERT(seen_xid >= 5);
  CU_ASSERT(seen_annotate >= 5);
  if (n_files == 1)
    CU_ASSERT_EQUAL(seen_create, 1);
}

static int stream_server_id(int k) {
  return 7100 + (int)(getpid() % 400) * 2 + k;
}

/* The stream from (first file, 4) gives the files' events byte for byte. */
static void test_stream_from_file_pos(void) {
  CU_ASSERT_FATAL(stored[0].n > 0);
  dm_binlog_stream_options o = {.source = &endpoint,
                                .server_id = (uint32_t)stream_server_id(0),
                                .file = files[0],
                                .pos = 4,
                                .non_blocking = true};
  dm_error err;
  dm_binlog_reader *r;
  int rc = dm_binlog_reader_open_stream(&r, &o, &err);
  if (rc < 0)
    fprintf(stderr, "%s / %s\n", err.message, err.raw_cause);
  CU_ASSERT_EQUAL_FATAL(rc, 0);
  dm_binlog_event ev;
  size_t matched = 0, idx[MAX_FILES] = {0}, artificial = 0;
  bool past = false;
  while (!past && (rc = dm_binlog_reader_next(r, &ev, &err)) == 1) {
    if (ev.artificial) {
      artificial++;
      continue;
    }
    int f = file_index(ev.file);
    if (f < 0) {
      past = true; /* the file after the last one of the workload */
      break;
    }
    stored_file *sf = &stored[f];
    CU_ASSERT_FATAL(idx[f] < sf->n);
    stored_event *se = &sf->ev[idx[f]++];
    CU_ASSERT_EQUAL(ev.offset, se->offset);
    CU_ASSERT_EQUAL(ev.raw_len, se->len);
    if (ev.raw_len == se->len && memcmp(ev.raw, se->raw, se->len) == 0)
      matched++;
    else
      fprintf(stderr, "stream event %s@%" PRIu64 " differs from the file\n", ev.file, ev.offset);
    dm_position p;
    dm_binlog_reader_position(r, &p);
    if (ev.header.type != DM_BINLOG_ROTATE)
      CU_ASSERT_EQUAL(p.pos, ev.offset + ev.raw_len);
  }
  if (rc < 0)
    fprintf(stderr, "%s\n", err.message);
  CU_ASSERT(rc >= 0);
  size_t total = 0;
  for (int f = 0; f < n_files; f++) {
    total += stored[f].n;
    CU_ASSERT_EQUAL(idx[f], stored[f].n);
  }
  CU_ASSERT_EQUAL(matched, total);
  CU_ASSERT(artificial >= 1); /* the stream opens with an artificial ROTATE */
  dm_binlog_reader_close(r);
}

/* A GTID start: the stream begins after gtid0, at the workload's first transaction. */
static void test_stream_from_gtid(void) {
  dm_binlog_stream_options o = {.source = &endpoint,
                                .server_id = (uint32_t)stream_server_id(1),
                                .gtid = gtid0,
                                .non_blocking = true};
  dm_error err;
  dm_binlog_reader *r;
  int rc = dm_binlog_reader_open_stream(&r, &o, &err);
  if (rc < 0)
    fprintf(stderr, "%s / %s\n", err.message, err.raw_cause);
  CU_ASSERT_EQUAL_FATAL(rc, 0);
  uint64_t want_seq = 0;
  const char *dash = strrchr(gtid0, '-');
  if (dash)
    want_seq = strtoull(dash + 1, NULL, 10) + 1;
  dm_binlog_event ev;
  bool found = false;
  int n = 0;
  while (!found && n++ < 1000 && (rc = dm_binlog_reader_next(r, &ev, &err)) == 1) {
    if (ev.artificial || ev.header.type != DM_BINLOG_GTID)
      continue;
    dm_binlog_gtid g;
    CU_ASSERT_EQUAL_FATAL(dm_binlog_decode_gtid(dm_binlog_reader_format(r), &ev, &g, &err), 0);
    CU_ASSERT_EQUAL(g.seq_no, want_seq);
    int f = file_index(ev.file);
    CU_ASSERT_FATAL(f >= 0);
    bool same = false;
    for (size_t k = 0; k < stored[f].n; k++)
      if (stored[f].ev[k].offset == ev.offset)
        same = stored[f].ev[k].len == ev.raw_len &&
               memcmp(stored[f].ev[k].raw, ev.raw, ev.raw_len) == 0;
    CU_ASSERT(same);
    found = true;
  }
  CU_ASSERT(found);
  dm_binlog_reader_close(r);
}

static void test_stream_purged(void) {
  dm_binlog_stream_options o = {.source = &endpoint,
                                .server_id = (uint32_t)stream_server_id(0),
                                .file = "mysql-bin.999999",
                                .pos = 4,
                                .non_blocking = true};
  dm_error err;
  dm_binlog_reader *r = NULL;
  int rc = dm_binlog_reader_open_stream(&r, &o, &err);
  if (rc == 0) {
    dm_binlog_event ev;
    do
      rc = dm_binlog_reader_next(r, &ev, &err);
    while (rc == 1 && ev.artificial);
    dm_binlog_reader_close(r);
  }
  CU_ASSERT_EQUAL(rc, -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_BINLOG_PURGED);
  CU_ASSERT_EQUAL(err.resumable, 0);
  assert_contains(err.raw_cause, "1236");
  assert_contains(err.raw_cause, "Could not find first log file");
}

/* Regression: the stream reader hands each event back to libmariadb for reuse, and the library
 * frees it when a fetch fails or the stream ends; freeing it again in close was a double free
 * (the crash that once made the reader allocate a fresh event per fetch). A non-blocking stream
 * read to its end, asked again, then closed, under ASan. */
static void test_stream_end_then_close(void) {
  char file[256], pos[64];
  CU_ASSERT_EQUAL_FATAL(query_row("SHOW MASTER STATUS", file, sizeof file, pos, sizeof pos), 0);
  dm_binlog_stream_options o = {.source = &endpoint,
                                .server_id = (uint32_t)stream_server_id(1),
                                .file = file,
                                .pos = 4,
                                .non_blocking = true};
  dm_error err;
  dm_binlog_reader *r;
  CU_ASSERT_EQUAL_FATAL(dm_binlog_reader_open_stream(&r, &o, &err), 0);
  dm_binlog_event ev;
  int rc, n = 0;
  while ((rc = dm_binlog_reader_next(r, &ev, &err)) == 1)
    n++;
  CU_ASSERT_EQUAL(rc, 0);
  CU_ASSERT(n >= 3); /* the artificial ROTATE, the format description, the GTID list at least */
  CU_ASSERT_EQUAL(dm_binlog_reader_next(r, &ev, &err), 0);
  dm_binlog_reader_close(r);
}

static void test_stream_connect_error(void) {
  dm_db_endpoint bad = endpoint;
  bad.port = 1;
  dm_binlog_stream_options o = {
      .source = &bad, .server_id = 9, .file = "mysql-bin.000001", .connect_timeout_s = 2};
  dm_error err;
  dm_binlog_reader *r;
  CU_ASSERT_EQUAL(dm_binlog_reader_open_stream(&r, &o, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_DB_CONNECT);
  CU_ASSERT_EQUAL(err.resumable, 1);
  assert_contains(err.message, ":1");
}

static void *interrupt_later(void *arg) {
  struct timespec ts = {1, 500000000};
  nanosleep(&ts, NULL);
  dm_binlog_reader_interrupt(arg);
  return NULL;
}

/* Heartbeats come through flagged artificial; interrupt wakes a blocked next. */
static void test_stream_heartbeat_and_interrupt(void) {
  char file[256], pos[64];
  CU_ASSERT_EQUAL_FATAL(query_row("SHOW MASTER STATUS", file, sizeof file, pos, sizeof pos), 0);
  dm_binlog_stream_options o = {.source = &endpoint,
                                .server_id = (uint32_t)stream_server_id(0),
                                .file = file,
                                .pos = strtoull(pos, NULL, 10),
                                .heartbeat_ms = 200};
  dm_error err;
  dm_binlog_reader *r;
  CU_ASSERT_EQUAL_FATAL(dm_binlog_reader_open_stream(&r, &o, &err), 0);
  pthread_t t;
  CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, interrupt_later, r), 0);
  dm_binlog_event ev;
  int rc, heartbeats = 0, others = 0;
  while ((rc = dm_binlog_reader_next(r, &ev, &err)) == 1) {
    if (ev.header.type != DM_BINLOG_HEARTBEAT && !ev.artificial)
      others++;
    if (ev.header.type == DM_BINLOG_HEARTBEAT) {
      CU_ASSERT(ev.artificial);
      dm_binlog_str f;
      CU_ASSERT_EQUAL(dm_binlog_decode_heartbeat(dm_binlog_reader_format(r), &ev, &f, &err), 0);
      CU_ASSERT(f.len > 10 && memcmp(f.ptr, "mysql-bin.", 10) == 0);
      heartbeats++;
    }
  }
  pthread_join(t, NULL);
  CU_ASSERT_EQUAL(rc, 0); /* interrupted: the end, not an error */
  /* The source sends heartbeats only when idle: on a source busy with other tests' writes there
   * may be one or none in 1.5 s (seen in a parallel run: events and a single heartbeat). Idle, a
   * heartbeat every 200 ms gives about 7. */
  if (others > 0)
    fprintf(stderr, "note: source busy (%d events), %d heartbeats seen\n", others, heartbeats);
  else
    CU_ASSERT(heartbeats >= 2);
  dm_binlog_reader_close(r);
}

/* dm_binlog_reader_pending: false when nothing of the source's is here (checked only while the
 * source's binlog stood still around the call: the servers are shared with other tests), true once
 * a transaction was written, before anything of it was read; dm_binlog_reader_fd polls readable
 * when it comes. */
static void test_stream_pending(void) {
  CU_ASSERT_EQUAL_FATAL(
      testdb_exec(src, "CREATE OR REPLACE TABLE " DB ".pending (id INT PRIMARY KEY)"), 0);
  char file[256], pos[64];
  CU_ASSERT_EQUAL_FATAL(query_row("SHOW MASTER STATUS", file, sizeof file, pos, sizeof pos), 0);
  dm_binlog_stream_options o = {.source = &endpoint,
                                .server_id = (uint32_t)stream_server_id(0),
                                .file = file,
                                .pos = strtoull(pos, NULL, 10)};
  dm_error err;
  dm_binlog_reader *r;
  CU_ASSERT_EQUAL_FATAL(dm_binlog_reader_open_stream(&r, &o, &err), 0);
  dm_binlog_event ev;
  int quiet_checks = 0;
  for (int round = 0; round < 3; round++) {
    /* a transaction; its events arrive: pending says so before any is read */
    CU_ASSERT_EQUAL_FATAL(testdb_execf(src, "INSERT INTO " DB ".pending VALUES (%d)", round), 0);
    bool pending = dm_binlog_reader_pending(r);
    if (!pending) { /* not here yet: its descriptor says when */
      struct pollfd p = {.fd = dm_binlog_reader_fd(r), .events = POLLIN};
      CU_ASSERT_FATAL(p.fd >= 0);
      CU_ASSERT_EQUAL(poll(&p, 1, 30000), 1);
      pending = dm_binlog_reader_pending(r);
    }
    CU_ASSERT_FATAL(pending);
    /* read up to its XID (or another test's: any transaction end will do) */
    int rc;
    while ((rc = dm_binlog_reader_next(r, &ev, &err)) == 1 && ev.header.type != DM_BINLOG_XID)
      ;
    CU_ASSERT_EQUAL_FATAL(rc, 1);
    dm_position at;
    dm_binlog_reader_position(r, &at);
    char f1[256], p1[64], f2[256], p2[64];
    CU_ASSERT_EQUAL_FATAL(query_row("SHOW MASTER STATUS", f1, sizeof f1, p1, sizeof p1), 0);
    pending = dm_binlog_reader_pending(r);
    CU_ASSERT_EQUAL_FATAL(query_row("SHOW MASTER STATUS", f2, sizeof f2, p2, sizeof p2), 0);
    if (strcmp(f1, at.name) == 0 && strtoull(p1, NULL, 10) == at.pos && strcmp(f2, f1) == 0 &&
        strcmp(p2, p1) == 0) {
      CU_ASSERT_FALSE(pending); /* everything written was read, and nothing came meanwhile */
      quiet_checks++;
    }
    CU_ASSERT_EQUAL(testdb_execf(src, "DELETE FROM " DB ".pending WHERE id = %d", round), 0);
    while ((rc = dm_binlog_reader_next(r, &ev, &err)) == 1 && ev.header.type != DM_BINLOG_XID)
      ;
    CU_ASSERT_EQUAL(rc, 1);
  }
  if (quiet_checks == 0)
    fprintf(stderr, "note: the source was never quiet: \"nothing here\" not checked\n");
  dm_binlog_reader_interrupt(r);
  CU_ASSERT(dm_binlog_reader_pending(r)); /* interrupted: next returns at once */
  dm_binlog_reader_close(r);
}

static int copy_file(const char *from, const char *to) {
  char cmd[1700];
  snprintf(cmd, sizeof cmd, "cp '%s' '%s'", from, to);
  return system(cmd);
}

/* A byte flipped inside an event: DM_ERR_BINLOG_CORRUPT naming the file and the event's offset. */
static void test_damaged_copy(void) {
  CU_ASSERT_FATAL(stored[0].n > 6);
  char path[800], copy[600];
  path_of(0, path, sizeof path);
  snprintf(copy, sizeof copy, "%s/damaged-%s", tmp_dir, files[0]);
  CU_ASSERT_EQUAL_FATAL(copy_file(path, copy), 0);
  stored_event *victim = &stored[0].ev[5];
  int fd = open(copy, O_RDWR);
  CU_ASSERT_FATAL(fd >= 0);
  uint8_t b;
  off_t at = (off_t)(victim->offset + victim->len / 2 + 10);
  CU_ASSERT_EQUAL(pread(fd, &b, 1, at), 1);
  b ^= 0x5a;
  CU_ASSERT_EQUAL(pwrite(fd, &b, 1, at), 1);
  close(fd);
  dm_error err;
  dm_binlog_reader *r;
  CU_ASSERT_EQUAL_FATAL(dm_binlog_reader_open_file(&r, copy, NULL, &err), 0);
  dm_binlog_event ev;
  int rc, n = 0;
  while ((rc = dm_binlog_reader_next(r, &ev, &err)) == 1)
    n++;
  CU_ASSERT_EQUAL(rc, -1);
  CU_ASSERT_EQUAL(n, 5);
  CU_ASSERT_EQUAL(err.code, DM_ERR_BINLOG_CORRUPT);
  char off[64];
  snprintf(off, sizeof off, "offset %" PRIu64, victim->offset);
  assert_contains(err.message, copy);
  assert_contains(err.message, off);
  assert_contains(err.message, "expected CRC32 0x");
  assert_contains(err.message, "computed 0x");
  dm_binlog_reader_close(r);
}

/* A copy cut inside an event: "incomplete event at offset N", and the offset to truncate at. */
static void test_truncated_copy(void) {
  CU_ASSERT_FATAL(stored[0].n > 8);
  char path[800], copy[600];
  path_of(0, path, sizeof path);
  snprintf(copy, sizeof copy, "%s/cut-%s", tmp_dir, files[0]);
  CU_ASSERT_EQUAL_FATAL(copy_file(path, copy), 0);
  stored_event *victim = &stored[0].ev[7];
  CU_ASSERT_EQUAL_FATAL(truncate(copy, (off_t)(victim->offset + victim->len - 1)), 0);
  dm_error err;
  dm_binlog_reader *r;
  CU_ASSERT_EQUAL_FATAL(dm_binlog_reader_open_file(&r, copy, NULL, &err), 0);
  dm_binlog_event ev;
  int rc, n = 0;
  while ((rc = dm_binlog_reader_next(r, &ev, &err)) == 1)
    n++;
  CU_ASSERT_EQUAL(rc, -1);
  CU_ASSERT_EQUAL(n, 7);
  CU_ASSERT_EQUAL(err.code, DM_ERR_BINLOG_INCOMPLETE);
  char off[80];
  snprintf(off, sizeof off, "incomplete event at offset %" PRIu64, victim->offset);
  assert_contains(err.message, off);
  CU_ASSERT_EQUAL(dm_binlog_reader_offset(r), victim->offset);
  dm_binlog_reader_close(r);
}

/* Opening mid-file at an event boundary: the format is known (checksums checked) and the first
 * event is the one asked for. */
static void test_open_mid_file(void) {
  CU_ASSERT_FATAL(stored[0].n > 4);
  char path[800];
  path_of(0, path, sizeof path);
  stored_event *want = &stored[0].ev[3];
  dm_binlog_file_options o = {.start_pos = want->offset};
  dm_error err;
  dm_binlog_reader *r;
  CU_ASSERT_EQUAL_FATAL(dm_binlog_reader_open_file(&r, path, &o, &err), 0);
  CU_ASSERT_EQUAL(dm_binlog_reader_format(r)->checksum_alg, DM_BINLOG_CHECKSUM_CRC32);
  dm_binlog_event ev;
  CU_ASSERT_EQUAL_FATAL(dm_binlog_reader_next(r, &ev, &err), 1);
  CU_ASSERT_EQUAL(ev.offset, want->offset);
  CU_ASSERT(ev.has_checksum);
  CU_ASSERT(ev.raw_len == want->len && memcmp(ev.raw, want->raw, want->len) == 0);
  dm_binlog_reader_close(r);
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"read closed files, replay every column type against the server",
       test_read_files_and_values},
      {"event kinds: GTID list, checkpoint, GTID, query status, XID, annotate", test_event_kinds},
      {"stream from file/pos is byte-identical", test_stream_from_file_pos},
      {"stream from a GTID", test_stream_from_gtid},
      {"stream: purged binlog", test_stream_purged},
      {"stream: connect error", test_stream_connect_error},
      {"stream: heartbeats and interrupt", test_stream_heartbeat_and_interrupt},
      {"stream: pending", test_stream_pending},
      {"stream: read to the end, close (event reuse)", test_stream_end_then_close},
      {"damaged copy", test_damaged_copy},
      {"truncated copy", test_truncated_copy},
      {"open mid-file", test_open_mid_file},
  };
  return dmh_cunit_run("binlog_server", suite_init, suite_clean, tests,
                       sizeof tests / sizeof tests[0]);
}

/*
 * MySQL 8 binlogs (issue 12, "binlog completeness"): the fixture
 * tests/fixtures/mysql8/mysql-bin.000001 (a real MySQL 8.0 TRANSACTION_PAYLOAD plus synthetic
 * events, see its README) read through the file reader: previous-GTIDs and GTID events into a MySQL
 * GTID set, zstd and uncompressed transaction payloads read event by event, table maps with
 * optional metadata, v2 row events with extra data, every row value checked. Then payloads damaged
 * or forged in every field: a coded error (DM_ERR_BINLOG_CORRUPT / _UNSUPPORTED), never a crash or
 * a large allocation; and a large payload read in a window the size of its largest event.
 *
 * Before this change a TRANSACTION_PAYLOAD came through raw only: its rows were never seen.
 */
#include <CUnit/Basic.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "binlog_builder.h"
#include "cunit_run.h"
#include "dmhost/binlog.h"
#include "dmhost/binlog_rows.h"
#include "dmhost/position.h"

#define SID_TEXT "5a1c7e2e-9b3f-11ec-8a8f-0242ac110002"

/* One row image as text: "v1|v2|NULL|..." (absent columns as "-"). */
static void row_text(const dm_binlog_value *v, const dm_binlog_table_map *tm, char *out,
                     size_t len) {
  size_t at = 0;
  out[0] = '\0';
  for (uint32_t i = 0; i < tm->column_count && at + 1 < len; i++) {
    char cell[512];
    if (v[i].kind == DM_VAL_ABSENT)
      snprintf(cell, sizeof cell, "-");
    else if (v[i].kind == DM_VAL_NULL)
      snprintf(cell, sizeof cell, "NULL");
    else if (dm_binlog_value_format(&v[i], &tm->columns[i], cell, sizeof cell) < 0) {
      fprintf(stderr, "\n  column %u: a %s value does not format\n", i,
              dm_binlog_value_kind_name(v[i].kind));
      CU_FAIL("format");
    }
    at += (size_t)snprintf(out + at, len - at, "%s%s", i ? "|" : "", cell);
  }
}

#define M1_BEFORE                                                                                  \
  "1|Once Upon a Time in the West|1968|Italy|Western|Claudia Cardinale|Charles Bronson|Henry "     \
  "Fonda|Gabriele Ferzetti|Frank Wolff|Al Mulock|Jason Robards|Woody Strode|Jack Elam|Lionel "     \
  "Stander|Paolo Stoppa|Keenan Wynn|Aldo Sambrell|Sergio Leone|Ennio Morricone|Sergio "            \
  "Leone|Sergio Donati|Dario Argento|Bernardo Bertolucci|Tonino Delli Colli|Paramount Pictures"
#define M1_AFTER                                                                                   \
  "1|Once Upon a Time in the West|1968|Italy|Western|Action|Claudia Cardinale|Charles "            \
  "Bronson|Henry Fonda|Gabriele Ferzetti|Frank Wolff|Al Mulock|Jason Robards|Woody Strode|Jack "   \
  "Elam|Lionel Stander|Paolo Stoppa|Keenan Wynn|Aldo Sambrell|Sergio Leone|Ennio "                 \
  "Morricone|Sergio Leone|Sergio Donati|Dario Argento|Bernardo Bertolucci|Tonino Delli "           \
  "Colli|Paramount Pictures"
#define M2                                                                                         \
  "2|The Good, the Bad and the Ugly|1966|Italy|Western|Clint Eastwood|Eli Wallach|Lee Van "        \
  "Cleef|Sergio Leone|Ennio Morricone|Age & Scarpelli|Sergio Leone|Tonino Delli Colli|PEA"
#define M2_1967                                                                                    \
  "2|The Good, the Bad and the Ugly|1967|Italy|Western|Clint Eastwood|Eli Wallach|Lee Van "        \
  "Cleef|Sergio Leone|Ennio Morricone|Age & Scarpelli|Sergio Leone|Tonino Delli Colli|PEA"
#define M3                                                                                         \
  "3|Per un pugno di dollari \xe2\x80\x93 \xc3\xa9t\xc3\xa9|1964|Italy|Western|Clint "             \
  "Eastwood|Sergio Leone|NULL|NULL|NULL|Jolly Film"

/* What the walk over the fixture saw. */
typedef struct walk {
  int n_outer, n_payloads, n_inner, n_gtids, n_maps;
  char rows[16][1400]; /* "W:after", "U:before>after", "D:before" in order */
  int n_rows;
  dm_mysql_gtid_set executed;
  dm_binlog_payload_info info[4];
  uint32_t extra_len[8];
  char inner_types[256];
} walk;

static void walk_event(walk *w, const dm_binlog_format *fmt, const dm_binlog_event *ev,
                       dm_binlog_table_map **tm, bool in_payload) {
  dm_error err = {0};
  if (in_payload) {
    w->n_inner++;
    size_t l = strlen(w->inner_types);
    snprintf(w->inner_types + l, sizeof w->inner_types - l, "%s%s", l ? "," : "",
             dm_binlog_event_type_name(ev->header.type));
    CU_ASSERT_FALSE(ev->has_checksum);
    CU_ASSERT_EQUAL(ev->body_len, ev->raw_len - DM_BINLOG_HEADER_LEN);
  }
  switch (ev->header.type) {
  case DM_BINLOG_MYSQL_PREVIOUS_GTIDS: {
    CU_ASSERT_EQUAL_FATAL(dm_binlog_decode_previous_gtids_set(fmt, ev, &w->executed, &err), 0);
    char text[128];
    CU_ASSERT_TRUE(dm_mysql_gtid_set_format(&w->executed, text, sizeof text) > 0);
    CU_ASSERT_STRING_EQUAL(text, SID_TEXT ":1-5");
    CU_ASSERT_EQUAL(dm_binlog_decode_previous_gtids(fmt, ev, text, sizeof text, &err), 0);
    CU_ASSERT_STRING_EQUAL(text, SID_TEXT ":1-5");
    break;
  }
  case DM_BINLOG_MYSQL_GTID: {
    dm_binlog_mysql_gtid g;
    CU_ASSERT_EQUAL_FATAL(dm_binlog_decode_mysql_gtid(fmt, ev, &g, &err), 0);
    w->n_gtids++;
    CU_ASSERT_EQUAL(g.gno, 5 + w->n_gtids);
    CU_ASSERT_TRUE(g.has_logical_clock && g.sequence_number == w->n_gtids);
    CU_ASSERT_TRUE(g.has_commit_ts &&
                   g.immediate_commit_ts == 1646406641000000ull + 5 + (uint64_t)w->n_gtids);
    CU_ASSERT_TRUE(g.has_server_version && g.original_server_version == 80028);
    char text[64];
    CU_ASSERT_EQUAL(dm_binlog_mysql_gtid_format(&g, text, sizeof text), 0);
    char want[64];
    snprintf(want, sizeof want, SID_TEXT ":%d", 5 + w->n_gtids);
    CU_ASSERT_STRING_EQUAL(text, want);
    CU_ASSERT_FALSE(dm_mysql_gtid_set_has(&w->executed, g.sid, (uint64_t)g.gno));
    CU_ASSERT_EQUAL(dm_mysql_gtid_set_add(&w->executed, g.sid, (uint64_t)g.gno), 0);
    break;
  }
  case DM_BINLOG_TABLE_MAP: {
    dm_binlog_table_map_free(*tm);
    *tm = NULL;
    CU_ASSERT_EQUAL_FATAL(dm_binlog_table_map_decode(fmt, ev, tm, &err), 0);
    w->n_maps++;
    CU_ASSERT_EQUAL((*tm)->table_id, 84);
    CU_ASSERT_STRING_EQUAL((*tm)->db.ptr, "demo");
    CU_ASSERT_STRING_EQUAL((*tm)->table.ptr, "movies");
    CU_ASSERT_EQUAL_FATAL((*tm)->column_count, 11);
    CU_ASSERT_EQUAL((*tm)->columns[0].type, 3);
    CU_ASSERT_EQUAL((*tm)->columns[1].type, 15);
    CU_ASSERT_EQUAL((*tm)->columns[5].type, 15);
    /* optional metadata: signedness and default charset (the real map's own), names (added to
     * the real one), the primary key (synthetic maps only) */
    CU_ASSERT_TRUE((*tm)->has_optional_metadata);
    CU_ASSERT_EQUAL((*tm)->columns[1].collation, 255);
    CU_ASSERT_TRUE((*tm)->columns[0].has_signedness && !(*tm)->columns[0].is_unsigned);
    CU_ASSERT_TRUE((*tm)->has_column_names);
    CU_ASSERT_TRUE((*tm)->columns[0].name.len == 8 &&
                   memcmp((*tm)->columns[0].name.ptr, "movie_id", 8) == 0);
    CU_ASSERT_TRUE((*tm)->columns[10].name.len == 18 &&
                   memcmp((*tm)->columns[10].name.ptr, "production_company", 18) == 0);
    CU_ASSERT_EQUAL((*tm)->columns[0].in_primary_key, w->n_maps > 1);
    CU_ASSERT_FALSE((*tm)->columns[1].in_primary_key);
    break;
  }
  default:
    if (dm_binlog_is_rows_event(ev->header.type)) {
      CU_ASSERT_PTR_NOT_NULL_FATAL(*tm);
      dm_binlog_rows rows;
      CU_ASSERT_EQUAL_FATAL(dm_binlog_rows_begin(fmt, ev, &rows, &err), 0);
      if (w->n_rows < 8)
        w->extra_len[w->n_rows] = rows.extra_len;
      dm_binlog_value before[11], after[11];
      int rc;
      while ((rc = dm_binlog_rows_next(&rows, *tm, before, after, &err)) == 1 && w->n_rows < 16) {
        char b[600] = "", a[600] = "";
        if (rows.kind != DM_ROWS_WRITE)
          row_text(before, *tm, b, sizeof b);
        if (rows.kind != DM_ROWS_DELETE)
          row_text(after, *tm, a, sizeof a);
        char *out = w->rows[w->n_rows++];
        if (rows.kind == DM_ROWS_WRITE)
          snprintf(out, 1400, "W:%s", a);
        else if (rows.kind == DM_ROWS_UPDATE)
          snprintf(out, 1400, "U:%s>%s", b, a);
        else
          snprintf(out, 1400, "D:%s", b);
      }
      CU_ASSERT_EQUAL(rc, 0);
    }
    break;
  }
}

static dm_binlog_format test_fmt;

static void test_fixture(void) {
  dm_error err = {0};
  dm_binlog_reader *r;
  CU_ASSERT_EQUAL_FATAL(dm_binlog_reader_open_file(&r, DMH_MYSQL8_FIXTURE, NULL, &err), 0);
  dm_binlog_payload *pl;
  CU_ASSERT_EQUAL_FATAL(dm_binlog_payload_new(&pl, &err), 0);
  walk *w = calloc(1, sizeof *w);
  dm_binlog_table_map *tm = NULL;
  dm_binlog_event ev;
  int rc;
  while ((rc = dm_binlog_reader_next(r, &ev, &err)) == 1) {
    const dm_binlog_format *fmt = dm_binlog_reader_format(r);
    w->n_outer++;
    CU_ASSERT_TRUE(ev.has_checksum);
    if (ev.header.type == DM_BINLOG_FORMAT_DESCRIPTION) {
      CU_ASSERT_FALSE(fmt->mariadb);
      CU_ASSERT_EQUAL(fmt->version_major, 8);
    }
    if (ev.header.type != DM_BINLOG_TRANSACTION_PAYLOAD) {
      walk_event(w, fmt, &ev, &tm, false);
      continue;
    }
    CU_ASSERT_EQUAL_FATAL(dm_binlog_payload_begin(pl, fmt, &ev, &err), 0);
    if (w->n_payloads < 4)
      w->info[w->n_payloads] = *dm_binlog_payload_get_info(pl);
    w->n_payloads++;
    dm_binlog_event in;
    while ((rc = dm_binlog_payload_next(pl, &in, &err)) == 1) {
      CU_ASSERT_EQUAL(in.offset, ev.offset);
      CU_ASSERT_EQUAL(in.header.next_pos, ev.header.next_pos);
      CU_ASSERT_STRING_EQUAL(in.file, ev.file);
      CU_ASSERT_EQUAL(in.header.server_id, 223344);
      CU_ASSERT_EQUAL(in.raw[13] | in.raw[14] | in.raw[15] | in.raw[16], 0); /* as written: 0 */
      walk_event(w, fmt, &in, &tm, true);
    }
    if (rc < 0)
      fprintf(stderr, "\n  payload: %s\n", err.message);
    CU_ASSERT_EQUAL(rc, 0);
    CU_ASSERT_EQUAL(dm_binlog_payload_next(pl, &in, &err), -1); /* nothing begun */
  }
  if (rc < 0)
    fprintf(stderr, "\n  reader: %s\n", err.message);
  CU_ASSERT_EQUAL(rc, 0);

  /* FDE, previous-GTIDs, 4 GTIDs, 3 payloads, BEGIN + map + rows + XID */
  CU_ASSERT_EQUAL(w->n_outer, 2 + 4 + 3 + 4);
  CU_ASSERT_EQUAL(w->n_payloads, 3);
  CU_ASSERT_EQUAL(w->n_gtids, 4);
  CU_ASSERT_EQUAL(w->n_inner, 12);
  CU_ASSERT_STRING_EQUAL(w->inner_types,
                         "QUERY,TABLE_MAP,UPDATE_ROWS_V2,XID,QUERY,TABLE_MAP,WRITE_ROWS_V2,XID,"
                         "QUERY,TABLE_MAP,UPDATE_ROWS_V2,XID");
  CU_ASSERT_EQUAL(w->n_maps, 4);
  CU_ASSERT_EQUAL(w->info[0].compression, DM_BINLOG_PAYLOAD_ZSTD);
  CU_ASSERT_TRUE(w->info[0].uncompressed_size > 960); /* the real one, names added */
  CU_ASSERT_EQUAL(w->info[1].compression, DM_BINLOG_PAYLOAD_ZSTD);
  CU_ASSERT_EQUAL(w->info[2].compression, DM_BINLOG_PAYLOAD_NONE);
  CU_ASSERT_EQUAL(w->info[2].payload_size, w->info[2].uncompressed_size);

  CU_ASSERT_EQUAL_FATAL(w->n_rows, 5);
  CU_ASSERT_STRING_EQUAL(w->rows[0], "U:" M1_BEFORE ">" M1_AFTER);
  CU_ASSERT_STRING_EQUAL(w->rows[1], "W:" M2);
  CU_ASSERT_STRING_EQUAL(w->rows[2], "W:" M3);
  CU_ASSERT_STRING_EQUAL(w->rows[3], "D:" M3);
  CU_ASSERT_STRING_EQUAL(w->rows[4], "U:" M2 ">" M2_1967);
  CU_ASSERT_EQUAL(w->extra_len[3], 6); /* the DELETE v2's extra data */
  CU_ASSERT_EQUAL(w->extra_len[0], 0);

  char text[128];
  CU_ASSERT_TRUE(dm_mysql_gtid_set_format(&w->executed, text, sizeof text) > 0);
  CU_ASSERT_STRING_EQUAL(text, SID_TEXT ":1-9");
  CU_ASSERT_EQUAL(dm_gtid_set_contains(text, SID_TEXT ":3-9"), 1);
  dm_mysql_gtid_set_free(&w->executed);
  dm_binlog_table_map_free(tm);
  free(w);
  dm_binlog_payload_free(pl);
  dm_binlog_reader_close(r);
}

/* ---- forged and damaged payloads ---- */

/* The real payload exactly as a MySQL 8.0 server wrote it (its body: fields and zstd data). */
static void test_real_payload(void) {
  bb body = {0}, file = {0};
  FILE *f = fopen(DMH_MYSQL8_BODY, "rb");
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  uint8_t buf[1024];
  size_t n = fread(buf, 1, sizeof buf, f);
  fclose(f);
  CU_ASSERT_EQUAL_FATAL(n, 465);
  bb_put(&body, buf, n);
  bb_event(&file, DM_BINLOG_TRANSACTION_PAYLOAD, &body, 0);
  dm_binlog_event ev, in;
  dm_error err = {0};
  CU_ASSERT_EQUAL_FATAL(
      dm_binlog_event_from_bytes(file.p, file.len, &test_fmt, true, "real", 4, &ev, &err), 0);
  dm_binlog_payload *pl;
  CU_ASSERT_EQUAL_FATAL(dm_binlog_payload_new(&pl, &err), 0);
  CU_ASSERT_EQUAL_FATAL(dm_binlog_payload_begin(pl, &test_fmt, &ev, &err), 0);
  const dm_binlog_payload_info *info = dm_binlog_payload_get_info(pl);
  CU_ASSERT_EQUAL(info->compression, DM_BINLOG_PAYLOAD_ZSTD);
  CU_ASSERT_EQUAL(info->payload_size, 451);
  CU_ASSERT_EQUAL(info->uncompressed_size, 960);
  static const uint8_t types[] = {DM_BINLOG_QUERY, DM_BINLOG_TABLE_MAP, DM_BINLOG_UPDATE_ROWS_V2,
                                  DM_BINLOG_XID};
  int k = 0, rc;
  dm_binlog_table_map *tm = NULL;
  while ((rc = dm_binlog_payload_next(pl, &in, &err)) == 1) {
    CU_ASSERT_FATAL(k < 4);
    CU_ASSERT_EQUAL(in.header.type, types[k]);
    CU_ASSERT_EQUAL(in.header.server_id, 223344);
    CU_ASSERT_EQUAL(in.header.timestamp, 1646406641);
    if (k == 0) {
      dm_binlog_query q;
      CU_ASSERT_EQUAL_FATAL(dm_binlog_decode_query(&test_fmt, &in, &q, &err), 0);
      CU_ASSERT_TRUE(q.query.len == 5 && memcmp(q.query.ptr, "BEGIN", 5) == 0);
      CU_ASSERT_EQUAL(q.thread_id, 12);
    } else if (k == 1) {
      CU_ASSERT_EQUAL_FATAL(dm_binlog_table_map_decode(&test_fmt, &in, &tm, &err), 0);
      CU_ASSERT_EQUAL(tm->table_id, 84);
      CU_ASSERT_EQUAL(tm->column_count, 11);
      CU_ASSERT_TRUE(tm->has_optional_metadata);
      CU_ASSERT_FALSE(tm->has_column_names); /* binlog_row_metadata = MINIMAL */
      CU_ASSERT_EQUAL(tm->columns[3].collation, 255);
      CU_ASSERT_EQUAL(tm->columns[5].max_len, 4096);
    } else if (k == 2) {
      dm_binlog_rows rows;
      CU_ASSERT_EQUAL_FATAL(dm_binlog_rows_begin(&test_fmt, &in, &rows, &err), 0);
      CU_ASSERT_EQUAL(rows.kind, DM_ROWS_UPDATE);
      dm_binlog_value before[11], after[11];
      CU_ASSERT_EQUAL_FATAL(dm_binlog_rows_next(&rows, tm, before, after, &err), 1);
      char b[600], a[600];
      row_text(before, tm, b, sizeof b);
      row_text(after, tm, a, sizeof a);
      CU_ASSERT_STRING_EQUAL(b, M1_BEFORE);
      CU_ASSERT_STRING_EQUAL(a, M1_AFTER);
      CU_ASSERT_EQUAL(dm_binlog_rows_next(&rows, tm, before, after, &err), 0);
    } else {
      uint64_t xid;
      CU_ASSERT_EQUAL(dm_binlog_decode_xid(&test_fmt, &in, &xid, &err), 0);
      CU_ASSERT_EQUAL(xid, 31);
    }
    k++;
  }
  CU_ASSERT_EQUAL(rc, 0);
  CU_ASSERT_EQUAL(k, 4);
  dm_binlog_table_map_free(tm);
  dm_binlog_payload_free(pl);
  free(body.p);
  free(file.p);
}

/* A payload event body: the fields (any subset, -1 = left out), then data. */
static void payload_body(bb *b, int64_t compression, int64_t usize, int64_t psize, const void *data,
                         size_t n) {
  b->len = 0;
  int64_t vals[3] = {compression, usize, psize};
  const uint8_t types[3] = {2, 3, 1};
  for (int i = 0; i < 3; i++) {
    if (vals[i] < 0)
      continue;
    bb v = {0};
    bb_packed(&v, (uint64_t)vals[i]);
    bb_packed(b, types[i]);
    bb_packed(b, v.len);
    bb_put(b, v.p, v.len);
    free(v.p);
  }
  bb_packed(b, 0);
  bb_put(b, data, n);
}

static uint8_t *zstd_of(const void *d, size_t n, size_t *out_len) {
  size_t cap = ZSTD_compressBound(n);
  uint8_t *z = malloc(cap);
  *out_len = ZSTD_compress(z, cap, d, n, 3);
  CU_ASSERT_FALSE_FATAL(ZSTD_isError(*out_len));
  return z;
}

/* Inner events: n XIDs (27 bytes each: header + 8). */
static void inner_xids(bb *b, int n, size_t pad) {
  for (int i = 0; i < n; i++) {
    uint32_t size = (uint32_t)(19 + 8 + pad);
    bb_uint(b, 1700000000, 4), bb_uint(b, pad ? DM_BINLOG_ROWS_QUERY : DM_BINLOG_XID, 1);
    bb_uint(b, 1, 4), bb_uint(b, size, 4), bb_uint(b, 0, 4), bb_uint(b, 0, 2);
    bb_uint(b, (uint64_t)i + 1, 8);
    for (size_t k = 0; k < pad; k++)
      bb_uint(b, 'a' + (k % 26), 1);
  }
}

/* Runs begin + next to the end on a body; returns the code of the error (0 if none) and the
 * message. *events: inner events read. */
static int32_t run_payload(const bb *body, char *msg, size_t msg_len, int *events, size_t *window) {
  bb file = {0};
  bb_event(&file, DM_BINLOG_TRANSACTION_PAYLOAD, body, 0);
  dm_binlog_event ev;
  dm_error err = {0};
  CU_ASSERT_EQUAL_FATAL(
      dm_binlog_event_from_bytes(file.p, file.len, &test_fmt, true, "x.000001", 1234, &ev, &err),
      0);
  dm_binlog_payload *pl;
  CU_ASSERT_EQUAL_FATAL(dm_binlog_payload_new(&pl, &err), 0);
  *events = 0;
  int rc = dm_binlog_payload_begin(pl, &test_fmt, &ev, &err);
  if (rc == 0) {
    dm_binlog_event in;
    while ((rc = dm_binlog_payload_next(pl, &in, &err)) == 1)
      (*events)++;
  }
  if (window)
    *window = dm_binlog_payload_buffer_size(pl);
  dm_binlog_payload_free(pl);
  free(file.p);
  snprintf(msg, msg_len, "%s", rc < 0 ? err.message : "");
  return rc < 0 ? err.code : 0;
}

static void expect_error(const bb *body, int32_t code, const char *part) {
  char msg[512];
  int events;
  size_t window;
  int32_t got = run_payload(body, msg, sizeof msg, &events, &window);
  if (got != code || !strstr(msg, part))
    fprintf(stderr, "\n  got %d `%s`, expected %d with `%s`\n", got, msg, code, part);
  CU_ASSERT_EQUAL(got, code);
  CU_ASSERT_PTR_NOT_NULL(strstr(msg, part));
  if (code == DM_ERR_BINLOG_CORRUPT) {
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "x.000001"));
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "offset 1234"));
  }
  CU_ASSERT_TRUE(window <= 64 * 1024); /* nothing large was ever allocated */
}

static void test_payload_refused(void) {
  bb raw = {0}, body = {0};
  inner_xids(&raw, 3, 0);
  size_t zn;
  uint8_t *z = zstd_of(raw.p, raw.len, &zn);
  char msg[512];
  int events;
  /* the good one first: the builder is right */
  payload_body(&body, 0, (int64_t)raw.len, (int64_t)zn, z, zn);
  CU_ASSERT_EQUAL(run_payload(&body, msg, sizeof msg, &events, NULL), 0);
  CU_ASSERT_EQUAL(events, 3);
  /* no uncompressed size with zstd: nothing to bound it by */
  payload_body(&body, 0, -1, (int64_t)zn, z, zn);
  expect_error(&body, DM_ERR_BINLOG_CORRUPT, "claims 0 uncompressed bytes");
  /* 2 GiB claimed */
  payload_body(&body, 0, 2ll << 30, (int64_t)zn, z, zn);
  expect_error(&body, DM_ERR_BINLOG_CORRUPT, "claims 2147483648 uncompressed bytes");
  /* 100 MiB from a few bytes: beyond zstd's ratio */
  payload_body(&body, 0, 100ll << 20, (int64_t)zn, z, zn);
  expect_error(&body, DM_ERR_BINLOG_CORRUPT, "claims 104857600 uncompressed bytes");
  /* less than one event header */
  payload_body(&body, 0, 10, (int64_t)zn, z, zn);
  expect_error(&body, DM_ERR_BINLOG_CORRUPT, "claims 10 uncompressed bytes");
  /* claims more than it holds: short */
  payload_body(&body, 0, (int64_t)raw.len + 27, (int64_t)zn, z, zn);
  expect_error(&body, DM_ERR_BINLOG_CORRUPT, "short of");
  /* claims less: the last event runs past the claim */
  payload_body(&body, 0, (int64_t)raw.len - 27, (int64_t)zn, z, zn);
  expect_error(&body, DM_ERR_BINLOG_CORRUPT, "inflates past");
  payload_body(&body, 0, (int64_t)raw.len - 5, (int64_t)zn, z, zn);
  expect_error(&body, DM_ERR_BINLOG_CORRUPT, "left of the payload");
  /* payload size disagreeing with what follows (cut event) */
  payload_body(&body, 0, (int64_t)raw.len, (int64_t)zn + 10, z, zn);
  expect_error(&body, DM_ERR_BINLOG_CORRUPT, "payload size");
  payload_body(&body, 0, (int64_t)raw.len, -1, z, zn);
  expect_error(&body, DM_ERR_BINLOG_CORRUPT, "(missing)");
  /* cut zstd data (the size field says so) */
  payload_body(&body, 0, (int64_t)raw.len, (int64_t)zn - 6, z, zn - 6);
  expect_error(&body, DM_ERR_BINLOG_CORRUPT, "TRANSACTION_PAYLOAD");
  /* damaged zstd data */
  uint8_t *bad = malloc(zn);
  memcpy(bad, z, zn);
  for (size_t i = 6; i < zn; i += 3)
    bad[i] ^= 0x5a;
  payload_body(&body, 0, (int64_t)raw.len, (int64_t)zn, bad, zn);
  expect_error(&body, DM_ERR_BINLOG_CORRUPT, "TRANSACTION_PAYLOAD");
  free(bad);
  /* bytes after the frame */
  uint8_t *tail = malloc(zn + 4);
  memcpy(tail, z, zn);
  memcpy(tail + zn, "junk", 4);
  payload_body(&body, 0, (int64_t)raw.len, (int64_t)zn + 4, tail, zn + 4);
  expect_error(&body, DM_ERR_BINLOG_CORRUPT, "after the end");
  free(tail);
  /* another compression type */
  payload_body(&body, 7, (int64_t)raw.len, (int64_t)zn, z, zn);
  expect_error(&body, DM_ERR_BINLOG_UNSUPPORTED, "compression type 7");
  /* a field list running past the event */
  body.len = 0;
  bb_packed(&body, 3), bb_packed(&body, 200), bb_uint(&body, 1, 1);
  expect_error(&body, DM_ERR_BINLOG_CORRUPT, "runs past the event");
  body.len = 0;
  bb_uint(&body, 254, 1); /* a packed integer cut short */
  expect_error(&body, DM_ERR_BINLOG_CORRUPT, "field list runs past");
  /* uncompressed (type none) with a size that disagrees */
  payload_body(&body, 255, (int64_t)raw.len + 1, (int64_t)raw.len, raw.p, raw.len);
  expect_error(&body, DM_ERR_BINLOG_CORRUPT, "uncompressed bytes");
  /* an inner event whose size is below a header, or beyond the payload */
  bb ev = {0};
  inner_xids(&ev, 1, 0);
  ev.p[9] = 5;
  payload_body(&body, 255, (int64_t)ev.len, (int64_t)ev.len, ev.p, ev.len);
  expect_error(&body, DM_ERR_BINLOG_CORRUPT, "below its header");
  ev.p[9] = 200;
  payload_body(&body, 255, (int64_t)ev.len, (int64_t)ev.len, ev.p, ev.len);
  expect_error(&body, DM_ERR_BINLOG_CORRUPT, "claims 200 bytes, 27 are left");
  ev.p[9] = 27;
  /* the payload ends inside a header */
  bb_uint(&ev, 0, 6);
  payload_body(&body, 255, (int64_t)ev.len, (int64_t)ev.len, ev.p, ev.len);
  expect_error(&body, DM_ERR_BINLOG_CORRUPT, "inside an event header");
  free(ev.p);
  /* a zstd bomb: one real event, then 64 MiB of zeros (a few KiB compressed), claiming the one
   * event: inflation stops at the claim */
  size_t big = 64u << 20;
  uint8_t *bomb = calloc(1, big);
  bb one = {0};
  inner_xids(&one, 1, 0);
  memcpy(bomb, one.p, one.len);
  size_t bn;
  uint8_t *bz = zstd_of(bomb, big, &bn);
  free(bomb);
  payload_body(&body, 0, (int64_t)one.len, (int64_t)bn, bz, bn);
  expect_error(&body, DM_ERR_BINLOG_CORRUPT, "inflates past the size it claims");
  CU_ASSERT_EQUAL(run_payload(&body, msg, sizeof msg, &events, NULL), DM_ERR_BINLOG_CORRUPT);
  CU_ASSERT_EQUAL(events, 1); /* the event before the bomb came through */
  free(one.p);
  free(bz);
  free(z);
  free(raw.p);
  free(body.p);
}

/* A big transaction is read in a window the size of its largest event, not of the transaction. */
static void test_payload_streamed(void) {
  bb raw = {0}, body = {0};
  inner_xids(&raw, 20000, 0);   /* 540 KB of XIDs */
  inner_xids(&raw, 1, 200000);  /* one 200 KB event */
  inner_xids(&raw, 2000, 4000); /* 8 MB of 4 KB events */
  size_t zn;
  uint8_t *z = zstd_of(raw.p, raw.len, &zn);
  payload_body(&body, 0, (int64_t)raw.len, (int64_t)zn, z, zn);
  char msg[256];
  int events;
  size_t window;
  CU_ASSERT_EQUAL(run_payload(&body, msg, sizeof msg, &events, &window), 0);
  CU_ASSERT_EQUAL(events, 22001);
  fprintf(stderr, "\n  %zu bytes in %zu compressed, window %zu bytes\n", raw.len, zn, window);
  CU_ASSERT_TRUE(window >= 200027 && window < 400000);
  /* the events come out intact: each XID's number, each padding */
  bb file = {0};
  bb_event(&file, DM_BINLOG_TRANSACTION_PAYLOAD, &body, 0);
  dm_binlog_event ev, in;
  dm_error err;
  CU_ASSERT_EQUAL_FATAL(
      dm_binlog_event_from_bytes(file.p, file.len, &test_fmt, true, "x", 4, &ev, &err), 0);
  dm_binlog_payload *pl;
  CU_ASSERT_EQUAL_FATAL(dm_binlog_payload_new(&pl, &err), 0);
  for (int round = 0; round < 2; round++) { /* reused for a second payload */
    CU_ASSERT_EQUAL_FATAL(dm_binlog_payload_begin(pl, &test_fmt, &ev, &err), 0);
    int n = 0, bad = 0, rc;
    while ((rc = dm_binlog_payload_next(pl, &in, &err)) == 1) {
      uint64_t xid = 0;
      for (int k = 7; k >= 0; k--)
        xid = xid << 8 | in.body[k];
      int want = n < 20000 ? n + 1 : n == 20000 ? 1 : n - 20000;
      bad += xid != (uint64_t)want;
      if (in.header.type == DM_BINLOG_ROWS_QUERY)
        bad += in.body[8] != 'a' || in.body[in.body_len - 1] != 'a' + ((in.body_len - 9) % 26);
      n++;
    }
    CU_ASSERT_EQUAL(rc, 0);
    CU_ASSERT_EQUAL(n, 22001);
    CU_ASSERT_EQUAL(bad, 0);
  }
  dm_binlog_payload_free(pl);
  free(file.p);
  free(z);
  free(raw.p);
  free(body.p);
}

int main(void) {
  dm_binlog_format_default(&test_fmt, DM_BINLOG_CHECKSUM_CRC32);
  static const dmh_cunit_test tests[] = {
      {"the MySQL 8 fixture: GTIDs, payloads, rows", test_fixture},
      {"the real payload as the server wrote it", test_real_payload},
      {"forged and damaged payloads refused", test_payload_refused},
      {"a big payload in a small window", test_payload_streamed},
  };
  return dmh_cunit_run("binlog mysql8", NULL, NULL, tests, sizeof tests / sizeof tests[0]);
}

/*
 * The binlog library on hand-built files (no server): MySQL 8.0 events the local MariaDB cannot
 * write (GTID with logical clock and commit timestamps, previous-GTIDs, v2 row events with extra
 * data, partial JSON updates, binary JSON), query status variables, an unknown event type passed
 * on raw, follow mode on a growing file (never a half-written event), and damaged headers.
 *
 * `test_binlog_bytes --write-seed FILE` writes the MySQL file image as a fuzz seed.
 */
#include <CUnit/Basic.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "binlog_builder.h"
#include "cunit_run.h"
#include "dmhost/binlog.h"
#include "dmhost/binlog_rows.h"

static char tmp_dir[128];

static const uint8_t sid[16] = {0x3e, 0x11, 0xfa, 0x47, 0x71, 0xca, 0x11, 0xe1,
                                0x9e, 0x33, 0xc8, 0x0a, 0xa9, 0x42, 0x95, 0x62};
#define SID_TEXT "3e11fa47-71ca-11e1-9e33-c80aa9429562"

/* {"a": 1, "b": [true, null, "x"], "c": 1.5} as MySQL's binary JSON (small object). */
static void json_doc(bb *b) {
  bb_uint(b, 0x00, 1);                 /* small object */
  bb_uint(b, 3, 2);                    /* count */
  bb_uint(b, 51, 2);                   /* size */
  bb_uint(b, 25, 2), bb_uint(b, 1, 2); /* key entries */
  bb_uint(b, 26, 2), bb_uint(b, 1, 2);
  bb_uint(b, 27, 2), bb_uint(b, 1, 2);
  bb_uint(b, 0x05, 1), bb_uint(b, 1, 2);  /* a: int16 1, inlined */
  bb_uint(b, 0x02, 1), bb_uint(b, 28, 2); /* b: small array at 28 */
  bb_uint(b, 0x0b, 1), bb_uint(b, 43, 2); /* c: double at 43 */
  bb_str(b, "abc");
  bb_uint(b, 3, 2), bb_uint(b, 15, 2);    /* array: count, size */
  bb_uint(b, 0x04, 1), bb_uint(b, 1, 2);  /* true */
  bb_uint(b, 0x04, 1), bb_uint(b, 0, 2);  /* null */
  bb_uint(b, 0x0c, 1), bb_uint(b, 13, 2); /* "x" at 13 */
  bb_uint(b, 1, 1), bb_str(b, "x");
  double d = 1.5;
  uint64_t bits;
  memcpy(&bits, &d, 8);
  bb_uint(b, bits, 8);
}
#define JSON_DOC_TEXT "{\"a\": 1, \"b\": [true, null, \"x\"], \"c\": 1.5}"

typedef struct mysql_file {
  bb file;
  size_t off_prev, off_gtid, off_query, off_map, off_write, off_partial, off_xid, off_unknown,
      off_incident, off_rotate;
} mysql_file;

/* A MySQL 8.0 binlog: previous-GTIDs, a transaction with a table map, a v2 insert and a partial
 * JSON update, an unknown event type, an incident and the closing ROTATE. */
static void build_mysql_file(mysql_file *m) {
  memset(m, 0, sizeof *m);
  bb_start_file(&m->file, "8.0.36");
  bb b = {0};
  /* PREVIOUS_GTIDS: one sid, [1,6) and [7,10) */
  bb_uint(&b, 1, 8);
  bb_put(&b, sid, 16);
  bb_uint(&b, 2, 8);
  bb_uint(&b, 1, 8), bb_uint(&b, 6, 8), bb_uint(&b, 7, 8), bb_uint(&b, 10, 8);
  m->off_prev = bb_event(&m->file, DM_BINLOG_MYSQL_PREVIOUS_GTIDS, &b, 0);
  b.len = 0;
  /* GTID: flags, sid, gno, logical clock, both commit timestamps, length, both versions */
  bb_uint(&b, 1, 1);
  bb_put(&b, sid, 16);
  bb_uint(&b, 23, 8);
  bb_uint(&b, 2, 1), bb_uint(&b, 5, 8), bb_uint(&b, 6, 8);
  bb_uint(&b, (1ull << 55) | 1700000000000001ull, 7);
  bb_uint(&b, 1699999999000000ull, 7);
  bb_packed(&b, 1000);
  bb_uint(&b, 0x80000000u | 80036, 4), bb_uint(&b, 80030, 4);
  m->off_gtid = bb_event(&m->file, DM_BINLOG_MYSQL_GTID, &b, 0);
  b.len = 0;
  /* QUERY BEGIN with status variables */
  bb status = {0};
  bb_uint(&status, 0, 1), bb_uint(&status, 0x4000, 4);                    /* flags2 */
  bb_uint(&status, 1, 1), bb_uint(&status, 0x80000 | 0x400000, 8);        /* sql_mode */
  bb_uint(&status, 6, 1), bb_uint(&status, 3, 1), bb_str(&status, "std"); /* catalog */
  bb_uint(&status, 4, 1), bb_uint(&status, 255, 2), bb_uint(&status, 255, 2),
      bb_uint(&status, 8, 2);                                                /* charsets */
  bb_uint(&status, 5, 1), bb_uint(&status, 6, 1), bb_str(&status, "+02:00"); /* time_zone */
  bb_uint(&status, 11, 1), bb_uint(&status, 4, 1), bb_str(&status, "root"), bb_uint(&status, 9, 1),
      bb_str(&status, "localhost");                                               /* invokers */
  bb_uint(&status, 12, 1), bb_uint(&status, 2, 1), bb_put(&status, "a\0bb\0", 5); /* dbs */
  bb_uint(&status, 18, 1), bb_uint(&status, 255, 2);
  bb_uint(&status, 0x7f, 1); /* a code from the future: stops the parse */
  bb_uint(&b, 77, 4), bb_uint(&b, 0, 4), bb_uint(&b, 2, 1), bb_uint(&b, 0, 2);
  bb_uint(&b, status.len, 2);
  bb_put(&b, status.p, status.len);
  bb_put(&b, "db\0", 3);
  bb_str(&b, "BEGIN");
  free(status.p);
  m->off_query = bb_event(&m->file, DM_BINLOG_QUERY, &b, 0);
  b.len = 0;
  /* TABLE_MAP db.t (id INT UNSIGNED, j JSON, d DECIMAL(10,2), y YEAR, name VARCHAR(20)) */
  bb_uint(&b, 91, 6), bb_uint(&b, 1, 2);
  bb_uint(&b, 2, 1), bb_put(&b, "db\0", 3), bb_uint(&b, 1, 1), bb_put(&b, "t\0", 2);
  bb_packed(&b, 5);
  bb_uint(&b, DM_COL_LONG, 1), bb_uint(&b, DM_COL_JSON, 1), bb_uint(&b, DM_COL_NEWDECIMAL, 1),
      bb_uint(&b, DM_COL_YEAR, 1), bb_uint(&b, DM_COL_VARCHAR, 1);
  bb_packed(&b, 5);
  bb_uint(&b, 4, 1);                                         /* JSON: 4 length bytes */
  bb_uint(&b, 10, 1), bb_uint(&b, 2, 1);                     /* DECIMAL(10,2) */
  bb_uint(&b, 80, 2);                                        /* VARCHAR: 80 bytes */
  bb_uint(&b, 0x1e, 1);                                      /* nullable: all but id */
  bb_uint(&b, 1, 1), bb_packed(&b, 1), bb_uint(&b, 0x80, 1); /* SIGNEDNESS: id unsigned */
  bb names = {0};
  const char *const nm[] = {"id", "j", "d", "y", "name"};
  for (int i = 0; i < 5; i++)
    bb_packed(&names, strlen(nm[i])), bb_str(&names, nm[i]);
  bb_uint(&b, 4, 1), bb_packed(&b, names.len), bb_put(&b, names.p, names.len);
  free(names.p);
  bb_uint(&b, 2, 1), bb_packed(&b, 1), bb_packed(&b, 45);     /* DEFAULT_CHARSET utf8mb4 */
  bb_uint(&b, 8, 1), bb_packed(&b, 1), bb_packed(&b, 0);      /* SIMPLE_PRIMARY_KEY: id */
  bb_uint(&b, 12, 1), bb_packed(&b, 1), bb_uint(&b, 0xf8, 1); /* COLUMN_VISIBILITY: skipped */
  m->off_map = bb_event(&m->file, DM_BINLOG_TABLE_MAP, &b, 0);
  b.len = 0;
  /* WRITE_ROWS v2 with 3 bytes of extra data: (7, doc, -12.34, 2024, 'héllo') */
  bb doc = {0};
  json_doc(&doc);
  bb_uint(&b, 91, 6), bb_uint(&b, 1, 2), bb_uint(&b, 5, 2), bb_put(&b, "\x00\x01x", 3);
  bb_packed(&b, 5), bb_uint(&b, 0x1f, 1);
  bb_uint(&b, 0x00, 1); /* no NULLs */
  bb_uint(&b, 7, 4);
  bb_uint(&b, doc.len, 4), bb_put(&b, doc.p, doc.len);
  bb_put(&b, "\x7f\xff\xff\xf3\xdd", 5); /* -12.34 */
  bb_uint(&b, 124, 1);
  bb_uint(&b, 6, 1), bb_str(&b, "h\xc3\xa9llo");
  m->off_write = bb_event(&m->file, DM_BINLOG_WRITE_ROWS_V2, &b, 0);
  b.len = 0;
  /* PARTIAL_UPDATE_ROWS: before (7, doc, NULL, NULL, NULL), after j: REPLACE $.a 2, y NULL */
  bb_uint(&b, 91, 6), bb_uint(&b, 1, 2), bb_uint(&b, 2, 2);
  bb_packed(&b, 5), bb_uint(&b, 0x1f, 1), bb_uint(&b, 0x0b, 1); /* after: id, j, y */
  bb_uint(&b, 0x1c, 1);                                         /* before NULLs: d, y, name */
  bb_uint(&b, 7, 4), bb_uint(&b, doc.len, 4), bb_put(&b, doc.p, doc.len);
  bb_packed(&b, 1), bb_uint(&b, 0x01, 1); /* value options: partial JSON; j is partial */
  bb_uint(&b, 0x04, 1);                   /* after NULLs: y (third present column) */
  bb_uint(&b, 7, 4);
  bb diff = {0};
  bb_uint(&diff, 0, 1), bb_packed(&diff, 3), bb_str(&diff, "$.a");
  bb_packed(&diff, 3), bb_uint(&diff, 0x05, 1), bb_uint(&diff, 2, 2);
  bb_uint(&diff, 2, 1), bb_packed(&diff, 3), bb_str(&diff, "$.c");
  bb_uint(&b, diff.len, 4), bb_put(&b, diff.p, diff.len);
  free(diff.p);
  free(doc.p);
  m->off_partial = bb_event(&m->file, DM_BINLOG_PARTIAL_UPDATE_ROWS, &b, 0);
  b.len = 0;
  bb_uint(&b, 4242, 8);
  m->off_xid = bb_event(&m->file, DM_BINLOG_XID, &b, 0);
  b.len = 0;
  bb_str(&b, "from the future");
  m->off_unknown = bb_event(&m->file, 222, &b, DM_BINLOG_F_IGNORABLE);
  b.len = 0;
  bb_uint(&b, 1, 2), bb_uint(&b, 4, 1), bb_str(&b, "lost");
  m->off_incident = bb_event(&m->file, DM_BINLOG_INCIDENT, &b, 0);
  b.len = 0;
  bb_uint(&b, 4, 8), bb_str(&b, "binlog.000002");
  m->off_rotate = bb_event(&m->file, DM_BINLOG_ROTATE, &b, 0);
  free(b.p);
}

static void write_file(const char *path, const uint8_t *p, size_t n) {
  FILE *f = fopen(path, "wb");
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  CU_ASSERT_EQUAL(fwrite(p, 1, n, f), n);
  fclose(f);
}

static void append_file(const char *path, const uint8_t *p, size_t n) {
  FILE *f = fopen(path, "ab");
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  CU_ASSERT_EQUAL(fwrite(p, 1, n, f), n);
  fclose(f);
}

static void assert_contains(const char *text, const char *part) {
  if (!strstr(text, part)) {
    fprintf(stderr, "'%s' lacks '%s'\n", text, part);
    CU_FAIL("text");
  }
}

static void test_mysql_events(void) {
  mysql_file m;
  build_mysql_file(&m);
  char path[256];
  snprintf(path, sizeof path, "%s/binlog.000001", tmp_dir);
  write_file(path, m.file.p, m.file.len);
  dm_error err;
  dm_binlog_reader *r;
  CU_ASSERT_EQUAL_FATAL(dm_binlog_reader_open_file(&r, path, NULL, &err), 0);
  dm_binlog_event ev;
  dm_binlog_table_map *tm = NULL;
  int n = 0, rc;
  char text[512];
  while ((rc = dm_binlog_reader_next(r, &ev, &err)) == 1) {
    n++;
    const dm_binlog_format *fmt = dm_binlog_reader_format(r);
    if (ev.offset == m.off_prev) {
      CU_ASSERT_FALSE(fmt->mariadb);
      CU_ASSERT_EQUAL(fmt->version_major, 8);
      CU_ASSERT_EQUAL(dm_binlog_decode_previous_gtids(fmt, &ev, text, sizeof text, &err), 0);
      CU_ASSERT_STRING_EQUAL(text, SID_TEXT ":1-5:7-9");
      CU_ASSERT_EQUAL(dm_binlog_decode_previous_gtids(fmt, &ev, text, 20, &err), -1);
    } else if (ev.offset == m.off_gtid) {
      dm_binlog_mysql_gtid g;
      CU_ASSERT_EQUAL_FATAL(dm_binlog_decode_mysql_gtid(fmt, &ev, &g, &err), 0);
      CU_ASSERT_EQUAL(dm_binlog_mysql_gtid_format(&g, text, sizeof text), 0);
      CU_ASSERT_STRING_EQUAL(text, SID_TEXT ":23");
      CU_ASSERT(g.has_logical_clock && g.last_committed == 5 && g.sequence_number == 6);
      CU_ASSERT(g.has_commit_ts);
      CU_ASSERT_EQUAL(g.immediate_commit_ts, 1700000000000001ull);
      CU_ASSERT_EQUAL(g.original_commit_ts, 1699999999000000ull);
      CU_ASSERT(g.has_transaction_length && g.transaction_length == 1000);
      CU_ASSERT(g.has_server_version && g.immediate_server_version == 80036 &&
                g.original_server_version == 80030);
    } else if (ev.offset == m.off_query) {
      dm_binlog_query q;
      CU_ASSERT_EQUAL_FATAL(dm_binlog_decode_query(fmt, &ev, &q, &err), 0);
      CU_ASSERT_EQUAL(q.thread_id, 77);
      CU_ASSERT(q.db.len == 2 && memcmp(q.db.ptr, "db", 2) == 0);
      CU_ASSERT(q.query.len == 5 && memcmp(q.query.ptr, "BEGIN", 5) == 0);
      CU_ASSERT(q.has_flags2 && q.flags2 == 0x4000);
      CU_ASSERT(q.has_sql_mode && q.sql_mode == (0x80000 | 0x400000));
      CU_ASSERT(q.catalog.len == 3 && memcmp(q.catalog.ptr, "std", 3) == 0);
      CU_ASSERT(q.has_charset && q.charset_client == 255 && q.collation_server == 8);
      CU_ASSERT(q.has_time_zone && q.time_zone.len == 6 && !memcmp(q.time_zone.ptr, "+02:00", 6));
      CU_ASSERT(q.user.len == 4 && q.host.len == 9);
      CU_ASSERT_EQUAL(q.n_updated_dbs, 2);
      CU_ASSERT(q.has_default_collation_utf8 && q.default_collation_utf8 == 255);
      CU_ASSERT_EQUAL(q.unknown_status_code, 0x7f);
    } else if (ev.offset == m.off_map) {
      CU_ASSERT_EQUAL_FATAL(dm_binlog_table_map_decode(fmt, &ev, &tm, &err), 0);
      CU_ASSERT_EQUAL(tm->table_id, 91);
      CU_ASSERT_STRING_EQUAL(tm->db.ptr, "db");
      CU_ASSERT_STRING_EQUAL(tm->table.ptr, "t");
      CU_ASSERT_EQUAL(tm->column_count, 5);
      CU_ASSERT_EQUAL(tm->n_json_columns, 1);
      CU_ASSERT(tm->columns[0].is_unsigned && tm->columns[0].in_primary_key);
      CU_ASSERT(!tm->columns[0].nullable && tm->columns[1].nullable);
      CU_ASSERT(tm->columns[2].has_signedness && !tm->columns[2].is_unsigned);
      CU_ASSERT(!tm->columns[3].has_signedness); /* MySQL: YEAR is not numeric here */
      CU_ASSERT_EQUAL(tm->columns[4].collation, 45);
      CU_ASSERT(tm->columns[4].name.len == 4 && !memcmp(tm->columns[4].name.ptr, "name", 4));
    } else if (ev.offset == m.off_write) {
      dm_binlog_rows rows;
      CU_ASSERT_EQUAL_FATAL(dm_binlog_rows_begin(fmt, &ev, &rows, &err), 0);
      CU_ASSERT_EQUAL(rows.version, 2);
      CU_ASSERT(rows.extra_len == 3 && rows.extra && rows.extra[2] == 'x');
      dm_binlog_value v[5];
      CU_ASSERT_EQUAL_FATAL(dm_binlog_rows_next(&rows, tm, NULL, v, &err), 1);
      CU_ASSERT(v[0].kind == DM_VAL_UINT && v[0].v.u == 7);
      CU_ASSERT_EQUAL(v[1].kind, DM_VAL_JSON);
      long len = dm_binlog_json_to_text(v[1].v.s.ptr, v[1].v.s.len, text, sizeof text, &err);
      CU_ASSERT_EQUAL(len, (long)strlen(JSON_DOC_TEXT));
      CU_ASSERT_STRING_EQUAL(text, JSON_DOC_TEXT);
      char small[8];
      CU_ASSERT_EQUAL(dm_binlog_json_to_text(v[1].v.s.ptr, v[1].v.s.len, small, sizeof small, &err),
                      len); /* the needed length, truncated text */
      CU_ASSERT_EQUAL(strlen(small), 7);
      CU_ASSERT(v[2].kind == DM_VAL_DECIMAL);
      CU_ASSERT_STRING_EQUAL(v[2].v.dec, "-12.34");
      CU_ASSERT(v[3].kind == DM_VAL_YEAR && v[3].v.u == 2024);
      CU_ASSERT(v[4].kind == DM_VAL_STRING && v[4].v.s.len == 6);
      CU_ASSERT_EQUAL(dm_binlog_rows_next(&rows, tm, NULL, v, &err), 0);
    } else if (ev.offset == m.off_partial) {
      dm_binlog_rows rows;
      CU_ASSERT_EQUAL_FATAL(dm_binlog_rows_begin(fmt, &ev, &rows, &err), 0);
      CU_ASSERT(rows.partial && rows.kind == DM_ROWS_UPDATE);
      dm_binlog_value before[5], after[5];
      int k = dm_binlog_rows_next(&rows, tm, before, after, &err);
      if (k < 0)
        fprintf(stderr, "%s\n", err.message);
      CU_ASSERT_EQUAL_FATAL(k, 1);
      CU_ASSERT_EQUAL(before[1].kind, DM_VAL_JSON);
      CU_ASSERT_EQUAL(before[2].kind, DM_VAL_NULL);
      CU_ASSERT_EQUAL(after[1].kind, DM_VAL_JSON_DIFF);
      CU_ASSERT_EQUAL(after[2].kind, DM_VAL_ABSENT);
      CU_ASSERT_EQUAL(after[3].kind, DM_VAL_NULL);
      size_t cur = 0;
      dm_binlog_json_diff d;
      CU_ASSERT_EQUAL(dm_binlog_json_diff_next(&after[1], &cur, &d, &err), 1);
      CU_ASSERT(d.op == DM_JSON_DIFF_REPLACE && d.path.len == 3 && !memcmp(d.path.ptr, "$.a", 3));
      CU_ASSERT_EQUAL(dm_binlog_json_to_text(d.value, d.value_len, text, sizeof text, &err), 1);
      CU_ASSERT_STRING_EQUAL(text, "2");
      CU_ASSERT_EQUAL(dm_binlog_json_diff_next(&after[1], &cur, &d, &err), 1);
      CU_ASSERT(d.op == DM_JSON_DIFF_REMOVE && d.value == NULL);
      CU_ASSERT_EQUAL(dm_binlog_json_diff_next(&after[1], &cur, &d, &err), 0);
      CU_ASSERT(dm_binlog_value_format(&after[1], &tm->columns[1], text, sizeof text) > 0);
      CU_ASSERT_STRING_EQUAL(text, "REPLACE $.a 2; REMOVE $.c");
    } else if (ev.offset == m.off_xid) {
      uint64_t xid;
      CU_ASSERT(dm_binlog_decode_xid(fmt, &ev, &xid, &err) == 0 && xid == 4242);
    } else if (ev.offset == m.off_unknown) {
      /* passed on raw, bytes intact */
      CU_ASSERT_EQUAL(ev.header.type, 222);
      CU_ASSERT_STRING_EQUAL(dm_binlog_event_type_name(222), "UNKNOWN");
      CU_ASSERT(ev.body_len == 15 && memcmp(ev.body, "from the future", 15) == 0);
      CU_ASSERT(memcmp(ev.raw, m.file.p + m.off_unknown, ev.raw_len) == 0);
    } else if (ev.offset == m.off_incident) {
      dm_binlog_incident inc;
      CU_ASSERT_EQUAL(dm_binlog_decode_incident(fmt, &ev, &inc, &err), 0);
      CU_ASSERT(inc.type == 1 && inc.message.len == 4 && !memcmp(inc.message.ptr, "lost", 4));
    } else if (ev.offset == m.off_rotate) {
      dm_binlog_rotate rot;
      CU_ASSERT_EQUAL(dm_binlog_decode_rotate(fmt, &ev, &rot, &err), 0);
      CU_ASSERT_EQUAL(rot.position, 4);
      CU_ASSERT(rot.next_file.len == 13 && !memcmp(rot.next_file.ptr, "binlog.000002", 13));
    }
  }
  if (rc < 0)
    fprintf(stderr, "%s\n", err.message);
  CU_ASSERT_EQUAL(rc, 0);
  CU_ASSERT_EQUAL(n, 11);
  /* a rows event against a table map of another shape is refused, not misread */
  dm_binlog_table_map_free(tm);
  dm_binlog_reader_close(r);
  free(m.file.p);
}

/* A growing file: the follow reader returns an event only once all its bytes are written. */
typedef struct follow_state {
  const char *path;
  const bb *file;
  size_t written;
  size_t steps[8];
  int n_steps, step;
  uint64_t offsets[8]; /* where the reader waited */
  bool give_up;
} follow_state;

static bool follow_wait(void *arg, const char *path, uint64_t offset) {
  follow_state *s = arg;
  CU_ASSERT_STRING_EQUAL(path, s->path);
  if (s->step < 8)
    s->offsets[s->step] = offset;
  if (s->give_up || s->step >= s->n_steps)
    return false;
  size_t upto = s->steps[s->step++];
  append_file(s->path, s->file->p + s->written, upto - s->written);
  s->written = upto;
  return true;
}

static void test_follow(void) {
  mysql_file m;
  build_mysql_file(&m);
  char path[256];
  snprintf(path, sizeof path, "%s/follow.000001", tmp_dir);
  /* at first: everything up to the middle of the table map */
  size_t map_len = m.off_write - m.off_map;
  write_file(path, m.file.p, m.off_map + map_len / 2);
  follow_state st = {.path = path, .file = &m.file, .written = m.off_map + map_len / 2};
  st.steps[st.n_steps++] = m.off_map + map_len - 1; /* one byte short */
  st.steps[st.n_steps++] = m.off_write + 10;        /* the map, and the insert's header */
  st.steps[st.n_steps++] = m.file.len;              /* the rest */
  dm_binlog_file_options o = {.follow = true, .wait = follow_wait, .wait_arg = &st};
  dm_error err;
  dm_binlog_reader *r;
  CU_ASSERT_EQUAL_FATAL(dm_binlog_reader_open_file(&r, path, &o, &err), 0);
  dm_binlog_event ev;
  int rc, n = 0;
  uint64_t last_type = 0;
  while ((rc = dm_binlog_reader_next(r, &ev, &err)) == 1) {
    n++;
    /* whole events only: checksum verified, bytes equal to what was meant to be written */
    CU_ASSERT(ev.offset + ev.raw_len <= st.written);
    CU_ASSERT(memcmp(ev.raw, m.file.p + ev.offset, ev.raw_len) == 0);
    last_type = ev.header.type;
  }
  CU_ASSERT_EQUAL(rc, 0);
  CU_ASSERT_EQUAL(n, 11);
  CU_ASSERT_EQUAL(last_type, DM_BINLOG_ROTATE);
  /* the reader waited at the table map twice, then at the insert; after ROTATE it did not wait */
  CU_ASSERT_EQUAL(st.step, 3);
  CU_ASSERT_EQUAL(st.offsets[0], m.off_map);
  CU_ASSERT_EQUAL(st.offsets[1], m.off_map);
  CU_ASSERT_EQUAL(st.offsets[2], m.off_write);
  dm_binlog_reader_close(r);

  /* a wait that gives up ends next() with 0; the next call continues at the same event */
  write_file(path, m.file.p, m.off_xid + 3);
  follow_state st2 = {.path = path, .file = &m.file, .written = m.off_xid + 3, .give_up = true};
  o.wait_arg = &st2;
  CU_ASSERT_EQUAL_FATAL(dm_binlog_reader_open_file(&r, path, &o, &err), 0);
  n = 0;
  while ((rc = dm_binlog_reader_next(r, &ev, &err)) == 1)
    n++;
  CU_ASSERT_EQUAL(rc, 0);
  CU_ASSERT_EQUAL(n, 7); /* up to the partial update */
  CU_ASSERT_EQUAL(dm_binlog_reader_offset(r), m.off_xid);
  append_file(path, m.file.p + m.off_xid + 3, m.file.len - m.off_xid - 3);
  CU_ASSERT_EQUAL(dm_binlog_reader_next(r, &ev, &err), 1);
  CU_ASSERT_EQUAL(ev.offset, m.off_xid);
  CU_ASSERT_EQUAL(ev.header.type, DM_BINLOG_XID);
  dm_binlog_reader_close(r);
  free(m.file.p);
}

static void test_damaged_headers(void) {
  mysql_file m;
  build_mysql_file(&m);
  char path[256];
  snprintf(path, sizeof path, "%s/bad.000001", tmp_dir);
  dm_error err;
  dm_binlog_reader *r;
  dm_binlog_event ev;
  /* not a binlog */
  write_file(path, (const uint8_t *)"hello world, not a binlog", 25);
  CU_ASSERT_EQUAL(dm_binlog_reader_open_file(&r, path, NULL, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_BINLOG_CORRUPT);
  assert_contains(err.message, "not a binlog file");
  assert_contains(err.message, path);
  /* a size field of 3 GB at the insert: corrupt (its next position disagrees), no allocation */
  uint8_t *copy = malloc(m.file.len);
  memcpy(copy, m.file.p, m.file.len);
  copy[m.off_write + 12] = 0xc0;
  write_file(path, copy, m.file.len);
  CU_ASSERT_EQUAL_FATAL(dm_binlog_reader_open_file(&r, path, NULL, &err), 0);
  int rc;
  while ((rc = dm_binlog_reader_next(r, &ev, &err)) == 1)
    ;
  CU_ASSERT_EQUAL(rc, -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_BINLOG_CORRUPT);
  char off[64];
  snprintf(off, sizeof off, "offset %zu", m.off_write);
  assert_contains(err.message, off);
  assert_contains(err.message, "damaged event header");
  CU_ASSERT(dm_binlog_reader_buffer_size(r) <= (1u << 20));
  dm_binlog_reader_close(r);
  /* a size below the header */
  memcpy(copy, m.file.p, m.file.len);
  copy[m.off_xid + 9] = 5, copy[m.off_xid + 10] = 0, copy[m.off_xid + 11] = 0,
                   copy[m.off_xid + 12] = 0;
  write_file(path, copy, m.file.len);
  CU_ASSERT_EQUAL_FATAL(dm_binlog_reader_open_file(&r, path, NULL, &err), 0);
  while ((rc = dm_binlog_reader_next(r, &ev, &err)) == 1)
    ;
  CU_ASSERT_EQUAL(rc, -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_BINLOG_CORRUPT);
  assert_contains(err.message, "below the 19-byte header");
  dm_binlog_reader_close(r);
  /* cut inside a header: incomplete, at that event's offset */
  write_file(path, m.file.p, m.off_xid + 7);
  CU_ASSERT_EQUAL_FATAL(dm_binlog_reader_open_file(&r, path, NULL, &err), 0);
  while ((rc = dm_binlog_reader_next(r, &ev, &err)) == 1)
    ;
  CU_ASSERT_EQUAL(rc, -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_BINLOG_INCOMPLETE);
  snprintf(off, sizeof off, "incomplete event at offset %zu", m.off_xid);
  assert_contains(err.message, off);
  CU_ASSERT_EQUAL(dm_binlog_reader_offset(r), m.off_xid);
  dm_binlog_reader_close(r);
  /* only the magic */
  write_file(path, m.file.p, 4);
  CU_ASSERT_EQUAL(dm_binlog_reader_open_file(&r, path, NULL, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_BINLOG_INCOMPLETE);
  assert_contains(err.message, "incomplete event at offset 4");
  free(copy);
  free(m.file.p);
}

/* Binary JSON edge cases: nesting limit, offsets outside their container, opaque values. */
static void test_json_edges(void) {
  char text[256];
  dm_error err;
  /* [[[[...]]]] 200 deep: refused, not a stack overflow */
  bb deep = {0};
  bb_uint(&deep, 0x02, 1);
  for (int i = 0; i < 200; i++) {
    size_t left = 200 - (size_t)i;
    bb_uint(&deep, 1, 2), bb_uint(&deep, (uint16_t)(7 * left), 2);
    bb_uint(&deep, 0x02, 1), bb_uint(&deep, 7, 2);
  }
  CU_ASSERT_EQUAL(dm_binlog_json_to_text(deep.p, deep.len, text, sizeof text, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_BINLOG_CORRUPT);
  free(deep.p);
  /* an offset past the object */
  bb bad = {0};
  bb_uint(&bad, 0x02, 1), bb_uint(&bad, 1, 2), bb_uint(&bad, 7, 2), bb_uint(&bad, 0x0c, 1),
      bb_uint(&bad, 200, 2);
  CU_ASSERT_EQUAL(dm_binlog_json_to_text(bad.p, bad.len, text, sizeof text, &err), -1);
  free(bad.p);
  /* opaque DECIMAL(5,2) 123.45 and a string with quotes and control bytes */
  bb op = {0};
  bb_uint(&op, 0x0f, 1), bb_uint(&op, DM_COL_NEWDECIMAL, 1), bb_uint(&op, 5, 1);
  bb_uint(&op, 5, 1), bb_uint(&op, 2, 1), bb_put(&op, "\x80\x7b\x2d", 3);
  CU_ASSERT(dm_binlog_json_to_text(op.p, op.len, text, sizeof text, &err) > 0);
  CU_ASSERT_STRING_EQUAL(text, "123.45");
  op.len = 0;
  bb_uint(&op, 0x0c, 1), bb_uint(&op, 6, 1), bb_put(&op, "a\"b\n\x01\\", 6);
  CU_ASSERT(dm_binlog_json_to_text(op.p, op.len, text, sizeof text, &err) > 0);
  CU_ASSERT_STRING_EQUAL(text, "\"a\\\"b\\n\\u0001\\\\\"");
  free(op.p);
}

/* ---- MariaDB compressed events (log_bin_compress) ---- */

/* One event of `type` with `body` as bytes in *raw and read back into *ev (CRC32 on). */
static void comp_event(bb *raw, uint8_t type, const bb *body, dm_binlog_event *ev) {
  raw->len = 0;
  bb_event(raw, type, body, 0);
  dm_binlog_format fmt;
  dm_binlog_format_default(&fmt, DM_BINLOG_CHECKSUM_CRC32);
  dm_error err;
  CU_ASSERT_EQUAL_FATAL(
      dm_binlog_event_from_bytes(raw->p, raw->len, &fmt, true, "mem", 4, ev, &err), 0);
}

/* Uncompress ev, expecting failure with `code` and `what` in the message, and nothing allocated
 * when `no_alloc`. */
static void comp_refused(const dm_binlog_event *ev, dm_error_code code, const char *what,
                         bool no_alloc) {
  dm_binlog_format fmt;
  dm_binlog_format_default(&fmt, DM_BINLOG_CHECKSUM_CRC32);
  uint8_t *buf = NULL;
  size_t cap = 0;
  dm_binlog_event out;
  dm_error err;
  CU_ASSERT_EQUAL(dm_binlog_event_uncompress(&fmt, ev, &buf, &cap, &out, &err), -1);
  CU_ASSERT_EQUAL(err.code, code);
  assert_contains(err.message, what);
  if (no_alloc)
    CU_ASSERT_EQUAL(cap, 0);
  CU_ASSERT(cap <= 64 * 1024); /* never the claimed size */
  free(buf);
}

/* One event of `type` with the body given in hex (a real server's bytes, checksum left out). */
static void xa_event(bb *raw, uint8_t type, const char *hex, dm_binlog_event *ev) {
  bb body = {0};
  for (size_t i = 0; hex[i] && hex[i + 1]; i += 2) {
    unsigned v;
    sscanf(hex + i, "%2x", &v);
    bb_uint(&body, v, 1);
  }
  comp_event(raw, type, &body, ev);
  free(body.p);
}

/* MariaDB 10.11's XA events, bytes from its binlog: `XA START 'x1'; ...; XA PREPARE 'x1'` (GTID
 * flagged PREPARED_XA with the XID and extra flags after it, XA_PREPARE), `XA COMMIT 'x1'` from
 * another connection (GTID flagged COMPLETED_XA), a prepare with a group commit id and a bqual.
 * Before, the GTID decoder skipped 6 bytes of padding before the XID that the server only writes
 * when nothing follows the flags, and refused every XA GTID as too short. */
static void test_xa_events(void) {
  dm_binlog_format fmt;
  dm_binlog_format_default(&fmt, DM_BINLOG_CHECKSUM_CRC32);
  dm_error err;
  bb raw = {0};
  dm_binlog_event ev;
  dm_binlog_gtid g;
  char text[DM_BINLOG_XID_TEXT_MAX];

  xa_event(&raw, DM_BINLOG_GTID, "0300000000000000000000004c010000000200783101ff", &ev);
  CU_ASSERT_EQUAL_FATAL(dm_binlog_decode_gtid(&fmt, &ev, &g, &err), 0);
  CU_ASSERT_EQUAL(g.seq_no, 3);
  CU_ASSERT_EQUAL(g.flags, DM_BINLOG_GTID_PREPARED_XA | DM_BINLOG_GTID_TRANSACTIONAL |
                               DM_BINLOG_GTID_ALLOW_PARALLEL);
  CU_ASSERT_EQUAL(g.xa.format_id, 1);
  CU_ASSERT_EQUAL(g.xa.gtrid_len, 2);
  CU_ASSERT_EQUAL(g.xa.bqual_len, 0);
  CU_ASSERT(memcmp(g.xa.data, "x1", 2) == 0);
  CU_ASSERT_EQUAL(dm_binlog_xid_format(&g.xa, text, sizeof text), 0);
  CU_ASSERT_STRING_EQUAL(text, "X'7831',X'',1");
  CU_ASSERT_EQUAL(dm_binlog_xid_format(&g.xa, text, 12), -1); /* one byte short */
  dm_binlog_gtid prepared = g;

  dm_binlog_xa_prepare xp;
  bb raw2 = {0};
  dm_binlog_event ev2;
  xa_event(&raw2, DM_BINLOG_XA_PREPARE,
           "00010000000200000000000000"
           "7831",
           &ev2);
  CU_ASSERT_EQUAL_FATAL(dm_binlog_decode_xa_prepare(&fmt, &ev2, &xp, &err), 0);
  CU_ASSERT_FALSE(xp.one_phase);
  CU_ASSERT(dm_binlog_xid_equal(&xp.xid, &prepared.xa));

  /* the commit, standalone (its group is the XA COMMIT statement) */
  xa_event(&raw, DM_BINLOG_GTID, "0500000000000000000000008d0100000002007831", &ev);
  CU_ASSERT_EQUAL_FATAL(dm_binlog_decode_gtid(&fmt, &ev, &g, &err), 0);
  CU_ASSERT_EQUAL(g.flags & (DM_BINLOG_GTID_COMPLETED_XA | DM_BINLOG_GTID_STANDALONE),
                  DM_BINLOG_GTID_COMPLETED_XA | DM_BINLOG_GTID_STANDALONE);
  CU_ASSERT(dm_binlog_xid_equal(&g.xa, &xp.xid));

  /* a group commit id before the XID; gtrid 'x2', bqual 'bq', format 7 */
  xa_event(&raw, DM_BINLOG_GTID,
           "060000000000000000000000"
           "4e"
           "2a00000000000000"
           "07000000"
           "0202"
           "78326271",
           &ev);
  CU_ASSERT_EQUAL_FATAL(dm_binlog_decode_gtid(&fmt, &ev, &g, &err), 0);
  CU_ASSERT_EQUAL(g.commit_id, 42);
  CU_ASSERT_EQUAL(dm_binlog_xid_format(&g.xa, text, sizeof text), 0);
  CU_ASSERT_STRING_EQUAL(text, "X'7832',X'6271',7");
  CU_ASSERT_FALSE(dm_binlog_xid_equal(&g.xa, &xp.xid));

  /* an ordinary GTID is padded to 19 bytes; XID zero */
  xa_event(&raw, DM_BINLOG_GTID, "08000000000000000000000029000000000000", &ev);
  CU_ASSERT_EQUAL_FATAL(dm_binlog_decode_gtid(&fmt, &ev, &g, &err), 0);
  CU_ASSERT_EQUAL(g.xa.gtrid_len, 0);
  CU_ASSERT_EQUAL(g.xa.data, NULL);

  /* refused: XID data cut short, a gtrid of 65 bytes, an XA_PREPARE cut inside its lengths or
   * with a bqual of 65 bytes */
  xa_event(&raw, DM_BINLOG_GTID,
           "0300000000000000000000004c01000000"
           "0a00"
           "78317878",
           &ev);
  CU_ASSERT_EQUAL(dm_binlog_decode_gtid(&fmt, &ev, &g, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_BINLOG_CORRUPT);
  xa_event(&raw, DM_BINLOG_GTID,
           "0300000000000000000000004c01000000"
           "4100"
           "78317878",
           &ev);
  CU_ASSERT_EQUAL(dm_binlog_decode_gtid(&fmt, &ev, &g, &err), -1);
  xa_event(&raw, DM_BINLOG_XA_PREPARE, "000100000002000000", &ev);
  CU_ASSERT_EQUAL(dm_binlog_decode_xa_prepare(&fmt, &ev, &xp, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_BINLOG_CORRUPT);
  xa_event(&raw, DM_BINLOG_XA_PREPARE,
           "01010000000100000041000000"
           "78",
           &ev);
  CU_ASSERT_EQUAL(dm_binlog_decode_xa_prepare(&fmt, &ev, &xp, &err), -1);
  /* the wrong decoder for the type */
  CU_ASSERT_EQUAL(dm_binlog_decode_xa_prepare(&fmt, &ev2, &xp, &err), 0);
  CU_ASSERT_EQUAL(dm_binlog_decode_gtid(&fmt, &ev2, &g, &err), -1);
  /* one phase (MySQL's XA COMMIT .. ONE PHASE) */
  xa_event(&raw, DM_BINLOG_XA_PREPARE,
           "01010000000100000000000000"
           "61",
           &ev);
  CU_ASSERT_EQUAL_FATAL(dm_binlog_decode_xa_prepare(&fmt, &ev, &xp, &err), 0);
  CU_ASSERT(xp.one_phase);
  CU_ASSERT_EQUAL(dm_binlog_xid_format(&xp.xid, text, sizeof text), 0);
  CU_ASSERT_STRING_EQUAL(text, "X'61',X'',1");
  xp.xid.format_id = 0xffffffffu; /* -1 */
  CU_ASSERT_EQUAL(dm_binlog_xid_format(&xp.xid, text, sizeof text), 0);
  CU_ASSERT_STRING_EQUAL(text, "X'61',X'',-1");
  free(raw.p);
  free(raw2.p);
}

static void test_compressed(void) {
  dm_binlog_format fmt;
  dm_binlog_format_default(&fmt, DM_BINLOG_CHECKSUM_CRC32);
  dm_error err;
  bb raw = {0}, body = {0}, plain = {0};
  dm_binlog_event ev, out;
  uint8_t *buf = NULL;
  size_t cap = 0;
  char sql[600];
  snprintf(sql, sizeof sql, "CREATE TABLE t (a INT PRIMARY KEY, b VARCHAR(500)) COMMENT '%0500d'",
           7);

  /* QUERY_COMPRESSED: the statement after db name comes back, the rest is untouched */
  bb_uint(&body, 9, 4), bb_uint(&body, 0, 4), bb_uint(&body, 2, 1), bb_uint(&body, 0, 2);
  bb_uint(&body, 5, 2), bb_uint(&body, 0, 1), bb_uint(&body, 0x4000, 4); /* status: flags2 */
  bb_put(&body, "db\0", 3);
  size_t head = body.len;
  bb_put(&plain, body.p, head), bb_str(&plain, sql);
  bb_zlib(&body, sql, strlen(sql), 2, strlen(sql));
  CU_ASSERT(body.len < plain.len);
  comp_event(&raw, DM_BINLOG_QUERY_COMPRESSED, &body, &ev);
  CU_ASSERT(dm_binlog_is_compressed_event(ev.header.type));
  dm_binlog_query q;
  CU_ASSERT_EQUAL(dm_binlog_decode_query(&fmt, &ev, &q, &err), -1); /* not without uncompressing */
  CU_ASSERT_EQUAL_FATAL(dm_binlog_event_uncompress(&fmt, &ev, &buf, &cap, &out, &err), 0);
  CU_ASSERT_EQUAL(out.header.type, DM_BINLOG_QUERY);
  CU_ASSERT_EQUAL(out.body_len, plain.len);
  CU_ASSERT(memcmp(out.body, plain.p, plain.len) == 0);
  CU_ASSERT_EQUAL(out.offset, 4);
  CU_ASSERT_EQUAL(out.header.next_pos, ev.header.next_pos);
  dm_binlog_event again; /* a whole event again: size and CRC32 rewritten */
  CU_ASSERT_EQUAL(
      dm_binlog_event_from_bytes(out.raw, out.raw_len, &fmt, true, "mem", 4, &again, &err), 0);
  CU_ASSERT_EQUAL_FATAL(dm_binlog_decode_query(&fmt, &out, &q, &err), 0);
  CU_ASSERT_EQUAL(q.query.len, strlen(sql));
  CU_ASSERT(memcmp(q.query.ptr, sql, strlen(sql)) == 0);
  CU_ASSERT_EQUAL(q.db.len, 2);
  CU_ASSERT(q.has_flags2);

  /* UPDATE_ROWS_COMPRESSED (v2, with extra header): both bitmaps skipped, rows inflated */
  bb rows = {0};
  for (int i = 0; i < 40; i++) {
    bb_uint(&rows, 0, 1), bb_uint(&rows, (uint64_t)i, 4); /* before: nulls, a */
    bb_uint(&rows, 0, 1), bb_uint(&rows, (uint64_t)i + 100, 4);
  }
  body.len = 0, plain.len = 0;
  bb_uint(&body, 91, 6), bb_uint(&body, 1, 2), bb_uint(&body, 5, 2), bb_put(&body, "\x00\x01x", 3);
  bb_packed(&body, 1), bb_uint(&body, 0x01, 1), bb_uint(&body, 0x01, 1);
  bb_put(&plain, body.p, body.len), bb_put(&plain, rows.p, rows.len);
  bb_zlib(&body, rows.p, rows.len, 2, rows.len);
  comp_event(&raw, DM_BINLOG_UPDATE_ROWS_COMPRESSED_V2, &body, &ev);
  dm_binlog_rows it;
  CU_ASSERT_EQUAL(dm_binlog_rows_begin(&fmt, &ev, &it, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_BINLOG_UNSUPPORTED);
  CU_ASSERT_EQUAL_FATAL(dm_binlog_event_uncompress(&fmt, &ev, &buf, &cap, &out, &err), 0);
  CU_ASSERT_EQUAL(out.header.type, DM_BINLOG_UPDATE_ROWS_V2);
  CU_ASSERT_EQUAL(out.body_len, plain.len);
  CU_ASSERT(memcmp(out.body, plain.p, plain.len) == 0);
  CU_ASSERT_EQUAL(dm_binlog_rows_begin(&fmt, &out, &it, &err), 0);
  CU_ASSERT_EQUAL(it.kind, DM_ROWS_UPDATE);
  CU_ASSERT_EQUAL(it.table_id, 91);

  /* WRITE_ROWS_COMPRESSED_V1: one bitmap; the buffer is reused */
  body.len = 0, plain.len = 0;
  bb_uint(&body, 92, 6), bb_uint(&body, 1, 2), bb_packed(&body, 1), bb_uint(&body, 0x01, 1);
  bb_put(&plain, body.p, body.len), bb_put(&plain, rows.p, rows.len);
  bb_zlib(&body, rows.p, rows.len, 3, rows.len);
  comp_event(&raw, DM_BINLOG_WRITE_ROWS_COMPRESSED_V1, &body, &ev);
  CU_ASSERT_EQUAL_FATAL(dm_binlog_event_uncompress(&fmt, &ev, &buf, &cap, &out, &err), 0);
  CU_ASSERT_EQUAL(out.header.type, DM_BINLOG_WRITE_ROWS_V1);
  CU_ASSERT_EQUAL(out.body_len, plain.len);
  CU_ASSERT(memcmp(out.body, plain.p, plain.len) == 0);
  CU_ASSERT_EQUAL(dm_binlog_rows_begin(&fmt, &out, &it, &err), 0);
  CU_ASSERT_EQUAL(it.kind, DM_ROWS_WRITE);

  /* refused: the claimed length is the attacker's number */
  bb pre = {0}; /* a DELETE_ROWS_COMPRESSED_V1 up to its compressed part */
  bb_uint(&pre, 93, 6), bb_uint(&pre, 1, 2), bb_packed(&pre, 1), bb_uint(&pre, 0x01, 1);
#define COMP_CASE(build)                                                                           \
  do {                                                                                             \
    body.len = 0;                                                                                  \
    bb_put(&body, pre.p, pre.len);                                                                 \
    build;                                                                                         \
    comp_event(&raw, DM_BINLOG_DELETE_ROWS_COMPRESSED_V1, &body, &ev);                             \
  } while (0)
  /* 2 GiB claimed: beyond any packet */
  COMP_CASE(bb_zlib(&body, rows.p, rows.len, 4, 0x80000000u));
  comp_refused(&ev, DM_ERR_BINLOG_CORRUPT, "claims 2147483648 uncompressed bytes", true);
  /* 1 MiB claimed from a few dozen bytes: more than zlib can make of them */
  COMP_CASE(bb_zlib(&body, "abc", 3, 3, 1u << 20));
  comp_refused(&ev, DM_ERR_BINLOG_CORRUPT, "claims 1048576 uncompressed bytes", true);
  /* a bomb: 4 MiB of zeros (a few KiB of zlib) claiming 100 bytes stops at 100 */
  size_t bomb_n = 4u << 20;
  uint8_t *zeros = calloc(1, bomb_n);
  CU_ASSERT_PTR_NOT_NULL_FATAL(zeros);
  COMP_CASE(bb_zlib(&body, zeros, bomb_n, 1, 100));
  free(zeros);
  comp_refused(&ev, DM_ERR_BINLOG_CORRUPT, "inflates past the 100 bytes", false);
  /* data shorter than claimed */
  COMP_CASE(bb_zlib(&body, rows.p, rows.len, 2, rows.len + 10));
  comp_refused(&ev, DM_ERR_BINLOG_CORRUPT, "short of", false);
  /* damaged zlib data */
  COMP_CASE(bb_zlib(&body, rows.p, rows.len, 2, rows.len); body.p[pre.len + 3] ^= 0xff);
  comp_refused(&ev, DM_ERR_BINLOG_CORRUPT, "damaged", false);
  /* length header: no high bit, 0 and 5 length bytes, zero length */
  COMP_CASE(bb_zlib(&body, rows.p, rows.len, 2, rows.len); body.p[pre.len] = 0x02);
  comp_refused(&ev, DM_ERR_BINLOG_CORRUPT, "without its header byte", true);
  COMP_CASE(bb_zlib(&body, rows.p, rows.len, 2, rows.len); body.p[pre.len] = 0x80);
  comp_refused(&ev, DM_ERR_BINLOG_CORRUPT, "bad length header", true);
  COMP_CASE(bb_zlib(&body, rows.p, rows.len, 2, rows.len); body.p[pre.len] = 0x85);
  comp_refused(&ev, DM_ERR_BINLOG_CORRUPT, "bad length header", true);
  COMP_CASE(bb_zlib(&body, rows.p, rows.len, 2, 0));
  comp_refused(&ev, DM_ERR_BINLOG_CORRUPT, "claims 0", true);
  /* an algorithm other than zlib */
  COMP_CASE(bb_zlib(&body, rows.p, rows.len, 2, rows.len); body.p[pre.len] = 0x92);
  comp_refused(&ev, DM_ERR_BINLOG_UNSUPPORTED, "algorithm 1", true);
  /* cut inside the column bitmap, and a column count past the body */
  body.len = 0;
  bb_uint(&body, 93, 6), bb_uint(&body, 1, 2), bb_packed(&body, 200);
  comp_event(&raw, DM_BINLOG_DELETE_ROWS_COMPRESSED_V1, &body, &ev);
  comp_refused(&ev, DM_ERR_BINLOG_CORRUPT, "ends before its compressed part", true);
  /* a query whose status length runs past the body */
  body.len = 0;
  bb_uint(&body, 9, 4), bb_uint(&body, 0, 4), bb_uint(&body, 2, 1), bb_uint(&body, 0, 2);
  bb_uint(&body, 60000, 2), bb_put(&body, "db\0", 3);
  comp_event(&raw, DM_BINLOG_QUERY_COMPRESSED, &body, &ev);
  comp_refused(&ev, DM_ERR_BINLOG_CORRUPT, "ends before its compressed part", true);
  /* not a compressed event */
  comp_event(&raw, DM_BINLOG_XID, &body, &ev);
  comp_refused(&ev, DM_ERR_BINLOG_CORRUPT, "not a compressed event", true);
#undef COMP_CASE
  free(pre.p);
  free(rows.p);
  free(buf);
  free(raw.p);
  free(body.p);
  free(plain.p);
}

/* DM_BINLOG_EVENT_TYPES is the one list: each row's code names itself, no code twice, and a code
 * outside it is "UNKNOWN". */
static void test_event_type_table(void) {
  static const struct {
    int code;
    const char *name, *who, *what;
  } rows[] = {
#define ROW(name, code, who, what) {code, #name, #who, what},
      DM_BINLOG_EVENT_TYPES(ROW)
#undef ROW
  };
  bool seen[256] = {false};
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    CU_ASSERT(rows[i].code >= 0 && rows[i].code < 256);
    CU_ASSERT_FALSE(seen[rows[i].code]);
    seen[rows[i].code] = true;
    CU_ASSERT_STRING_EQUAL(dm_binlog_event_type_name(rows[i].code), rows[i].name);
    CU_ASSERT(!strcmp(rows[i].who, "both") || !strcmp(rows[i].who, "MySQL") ||
              !strcmp(rows[i].who, "MariaDB"));
    CU_ASSERT(rows[i].what[0] != '\0');
  }
  for (int c = 0; c < 256; c++)
    if (!seen[c])
      CU_ASSERT_STRING_EQUAL(dm_binlog_event_type_name(c), "UNKNOWN");
  CU_ASSERT_EQUAL(DM_BINLOG_GTID, 162);
  CU_ASSERT_STRING_EQUAL(dm_binlog_event_type_name(DM_BINLOG_XA_PREPARE), "XA_PREPARE");
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "--write-seed") == 0) {
    mysql_file m;
    build_mysql_file(&m);
    FILE *f = fopen(argv[2], "wb");
    if (!f || fwrite(m.file.p, 1, m.file.len, f) != m.file.len)
      return 1;
    fclose(f);
    free(m.file.p);
    return 0;
  }
  snprintf(tmp_dir, sizeof tmp_dir, "/tmp/test_binlog_bytes.XXXXXX");
  if (!mkdtemp(tmp_dir))
    return 1;
  static const dmh_cunit_test tests[] = {
      {"MySQL 8.0 events, rows v2, partial JSON, unknown type", test_mysql_events},
      {"follow a growing file", test_follow},
      {"damaged headers and cut files", test_damaged_headers},
      {"binary JSON edge cases", test_json_edges},
      {"MariaDB compressed events: inflated, bounded, refused", test_compressed},
      {"MariaDB XA events: GTID flags and XID, XA_PREPARE", test_xa_events},
      {"event types: one table, names from it", test_event_type_table},
  };
  int failed = dmh_cunit_run("binlog_bytes", NULL, NULL, tests, sizeof tests / sizeof tests[0]);
  char cmd[200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_dir);
  if (system(cmd) != 0)
    failed = 1;
  return failed;
}

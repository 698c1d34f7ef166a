/*
 * dm_binlog_table_map_fill: a table map as binlog_row_metadata = NO_LOG writes it (types only)
 * completed from a schema tracker's column defs, and the rows decoded through it; a map with its
 * own names (FULL) checked against defs. Bytes built by hand (binlog_builder.h), no server.
 */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "binlog_builder.h"
#include "cunit_run.h"
#include "dmhost/binlog_rows.h"

typedef struct fill_file {
  bb file;
  size_t off_map, off_named, off_rows;
} fill_file;

/* db.t (id INT, e ENUM(2 values), s VARCHAR(20)): a NO_LOG map, a FULL-style map with names, and
 * one row (id = 0xFFFFFFFF, e = 2, s = "caf\xe9"). */
static void build(fill_file *f) {
  memset(f, 0, sizeof *f);
  bb_start_file(&f->file, "10.11.6-MariaDB-log");
  for (int named = 0; named < 2; named++) {
    bb b = {0};
    bb_uint(&b, 42, 6), bb_uint(&b, 1, 2);
    bb_uint(&b, 2, 1), bb_put(&b, "db\0", 3), bb_uint(&b, 1, 1), bb_put(&b, "t\0", 2);
    bb_packed(&b, 3);
    bb_uint(&b, DM_COL_LONG, 1), bb_uint(&b, DM_COL_STRING, 1), bb_uint(&b, DM_COL_VARCHAR, 1);
    bb_packed(&b, 4);
    bb_uint(&b, DM_COL_ENUM, 1), bb_uint(&b, 1, 1); /* ENUM, 1 byte */
    bb_uint(&b, 20, 2);                             /* VARCHAR(20) latin1: 20 bytes */
    bb_uint(&b, 0x06, 1);                           /* e and s nullable */
    if (named) {
      bb names = {0};
      const char *const nm[] = {"id", "e", "other"};
      for (int i = 0; i < 3; i++)
        bb_packed(&names, strlen(nm[i])), bb_str(&names, nm[i]);
      bb_uint(&b, 4, 1), bb_packed(&b, names.len), bb_put(&b, names.p, names.len);
      free(names.p);
    }
    size_t off = bb_event(&f->file, DM_BINLOG_TABLE_MAP, &b, 0);
    if (named)
      f->off_named = off;
    else
      f->off_map = off;
    free(b.p);
  }
  bb r = {0};
  bb_uint(&r, 42, 6), bb_uint(&r, 1, 2); /* STMT_END */
  bb_packed(&r, 3);
  bb_uint(&r, 0x07, 1); /* all columns */
  bb_uint(&r, 0x00, 1); /* no NULLs */
  bb_uint(&r, 0xffffffffu, 4);
  bb_uint(&r, 2, 1);
  bb_uint(&r, 4, 1), bb_put(&r, "caf\xe9", 4);
  f->off_rows = bb_event(&f->file, DM_BINLOG_WRITE_ROWS_V1, &r, 0);
  free(r.p);
}

static void test_fill(void) {
  fill_file f;
  build(&f);
  char path[] = "/tmp/test_binlog_fill.XXXXXX";
  int fd = mkstemp(path);
  CU_ASSERT_FATAL(fd >= 0);
  CU_ASSERT_FATAL(write(fd, f.file.p, f.file.len) == (ssize_t)f.file.len);
  close(fd);
  dm_error err;
  dm_binlog_reader *rd;
  CU_ASSERT_FATAL(dm_binlog_reader_open_file(&rd, path, NULL, &err) == 0);
  dm_binlog_table_map *tm = NULL, *named = NULL;
  dm_binlog_event ev;
  int rc, rows = 0;
  static const char *const values[] = {"red", "it's"};
  const dm_binlog_column_def defs[3] = {
      {.name = "id", .is_unsigned = true, .in_primary_key = true},
      {.name = "e", .collation = 8, .n_values = 2, .values = values},
      {.name = "s", .collation = 8},
  };
  while ((rc = dm_binlog_reader_next(rd, &ev, &err)) == 1) {
    const dm_binlog_format *fmt = dm_binlog_reader_format(rd);
    if (ev.offset == f.off_map) {
      CU_ASSERT_FATAL(dm_binlog_table_map_decode(fmt, &ev, &tm, &err) == 0);
      CU_ASSERT_FALSE(tm->has_column_names);
      CU_ASSERT_EQUAL(tm->columns[2].collation, 0);
      /* the wrong number of columns is refused, nothing changed */
      uint32_t bad = 99;
      CU_ASSERT_EQUAL(dm_binlog_table_map_fill(tm, defs, 2, &bad, &err), -1);
      CU_ASSERT_EQUAL(err.code, DM_ERR_BINLOG_UNSUPPORTED);
      CU_ASSERT_FALSE(tm->has_column_names);
      /* a first fill with other names, then the right one replaces it */
      const dm_binlog_column_def wrong[3] = {{.name = "x"}, {.name = "y"}, {.name = "z"}};
      CU_ASSERT_EQUAL(dm_binlog_table_map_fill(tm, wrong, 3, &bad, &err), 0);
      CU_ASSERT_EQUAL(dm_binlog_table_map_fill(tm, defs, 3, &bad, &err), 0);
      CU_ASSERT(tm->has_column_names);
      CU_ASSERT(tm->columns[0].name.len == 2 && memcmp(tm->columns[0].name.ptr, "id", 2) == 0);
      CU_ASSERT(tm->columns[2].name.len == 1 && tm->columns[2].name.ptr[0] == 's');
      CU_ASSERT(tm->columns[0].is_unsigned && tm->columns[0].in_primary_key);
      CU_ASSERT(!tm->columns[1].in_primary_key);
      CU_ASSERT_EQUAL(tm->columns[2].collation, 8);
      CU_ASSERT_EQUAL(tm->columns[1].n_values, 2);
    } else if (ev.offset == f.off_named) {
      CU_ASSERT_FATAL(dm_binlog_table_map_decode(fmt, &ev, &named, &err) == 0);
      CU_ASSERT(named->has_column_names);
      uint32_t bad = 99;
      /* its own names win: the third differs from the defs ("other" / "s") */
      CU_ASSERT_EQUAL(dm_binlog_table_map_fill(named, defs, 3, &bad, &err), 1);
      CU_ASSERT_EQUAL(bad, 2);
      CU_ASSERT(named->columns[2].name.len == 5);
      const dm_binlog_column_def upper[3] = {{.name = "ID", .is_unsigned = true},
                                             {.name = "E", .n_values = 2, .values = values},
                                             {.name = "OTHER", .collation = 8}};
      CU_ASSERT_EQUAL(dm_binlog_table_map_fill(named, upper, 3, &bad, &err), 0);
      CU_ASSERT(named->columns[0].is_unsigned);
      CU_ASSERT(named->columns[0].name.len == 2 && named->columns[0].name.ptr[0] == 'i');
    } else if (ev.offset == f.off_rows) {
      dm_binlog_rows r;
      dm_binlog_value v[3];
      CU_ASSERT_FATAL(dm_binlog_rows_begin(fmt, &ev, &r, &err) == 0);
      CU_ASSERT_FATAL(dm_binlog_rows_next(&r, tm, NULL, v, &err) == 1);
      rows++;
      CU_ASSERT(v[0].kind == DM_VAL_UINT && v[0].v.u == 4294967295u);
      CU_ASSERT_EQUAL(v[1].kind, DM_VAL_ENUM);
      char text[32];
      CU_ASSERT(dm_binlog_value_format(&v[1], &tm->columns[1], text, sizeof text) > 0);
      CU_ASSERT_STRING_EQUAL(text, "it's");
      CU_ASSERT(v[2].kind == DM_VAL_STRING && v[2].v.s.len == 4);
    }
  }
  CU_ASSERT_EQUAL(rc, 0);
  CU_ASSERT_EQUAL(rows, 1);
  dm_binlog_table_map_free(tm);
  dm_binlog_table_map_free(named);
  dm_binlog_reader_close(rd);
  unlink(path);
  free(f.file.p);
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"a NO_LOG table map completed from defs; FULL names checked", test_fill},
  };
  return dmh_cunit_run("binlog_fill", NULL, NULL, tests, sizeof tests / sizeof tests[0]);
}

/*
 * A table's structure as optimistic shard DDL carries it (sync_structure.h): information_schema
 * into the JSON of docs/shard.md, and the scratch check on a copy of a target table.
 */
#include "sync_structure.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sync_sql.h"

int sync_json_string(dm_buf *out, const char *s) {
  if (dm_buf_putc(out, '"') < 0)
    return -1;
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    int rc;
    if (*p == '"' || *p == '\\')
      rc = dm_buf_printf(out, "\\%c", *p);
    else if (*p < 0x20)
      rc = dm_buf_printf(out, "\\u%04x", *p);
    else
      rc = dm_buf_putc(out, (char)*p);
    if (rc < 0)
      return -1;
  }
  return dm_buf_putc(out, '"');
}

static int st_literal(MYSQL *c, dm_buf *b, const char *s) {
  size_t l = strlen(s);
  if (dm_buf_reserve(b, 2 * l + 3) < 0)
    return -1;
  b->p[b->len++] = '\'';
  b->len += mysql_real_escape_string(c, b->p + b->len, s, (unsigned long)l);
  b->p[b->len++] = '\'';
  b->p[b->len] = '\0';
  return 0;
}

static void st_error(MYSQL *c, const char *what, char *msg, size_t len) {
  snprintf(msg, len, "%s: %s (%u)", what, mysql_error(c), mysql_errno(c));
}

/* Runs a SELECT of information_schema about schema.table (the query's two '%s' are the
 * literals). NULL with msg. */
static MYSQL_RES *st_query(MYSQL *c, const char *fmt, const char *schema, const char *table,
                           char *msg, size_t msg_len) {
  dm_buf s = {0}, t = {0}, q = {0};
  MYSQL_RES *res = NULL;
  if (st_literal(c, &s, schema) < 0 || st_literal(c, &t, table) < 0 ||
      dm_buf_printf(&q, fmt, s.p, t.p) < 0)
    snprintf(msg, msg_len, "out of memory reading a table's structure");
  else if (mysql_real_query(c, q.p, (unsigned long)q.len) != 0 || !(res = mysql_store_result(c)))
    st_error(c, "reading a table's structure from information_schema", msg, msg_len);
  dm_buf_free(&s);
  dm_buf_free(&t);
  dm_buf_free(&q);
  return res;
}

uint32_t sync_enum_members(const char *ctype, char *text, size_t *at) {
  const char *p = strchr(ctype, '(');
  uint32_t n = 0;
  while (p && *p && *p != ')') {
    p++;
    if (*p != '\'')
      break;
    p++;
    for (; *p; p++) {
      if (*p == '\'' && p[1] == '\'')
        p++;
      else if (*p == '\\' && p[1])
        p++;
      else if (*p == '\'')
        break;
      text[(*at)++] = *p;
    }
    text[(*at)++] = '\0';
    n++;
    if (*p == '\'')
      p++;
  }
  return n;
}

/* ENUM/SET members of COLUMN_TYPE appended as a JSON array. */
static int st_members(dm_buf *out, const char *ctype) {
  size_t at = 0;
  char *text = malloc(strlen(ctype) + 1);
  if (!text)
    return -1;
  uint32_t n = sync_enum_members(ctype, text, &at);
  int rc = dm_buf_putc(out, '[');
  for (uint32_t i = 0, o = 0; rc == 0 && i < n; i++) {
    if (i)
      rc = dm_buf_putc(out, ',');
    if (rc == 0)
      rc = sync_json_string(out, text + o);
    o += (uint32_t)strlen(text + o) + 1;
  }
  free(text);
  return rc == 0 ? dm_buf_putc(out, ']') : -1;
}

static bool st_is(const char *t, const char *const *list) {
  for (; *list; list++)
    if (strcmp(t, *list) == 0)
      return true;
  return false;
}

/* One row of information_schema.COLUMNS (the query in sync_structure_json) as a JSON object. */
static int st_column(dm_buf *out, MYSQL_ROW r) {
  static const char *const strings[] = {
      "char",     "varchar",  "binary", "varbinary",  "tinytext", "text", "mediumtext",
      "longtext", "tinyblob", "blob",   "mediumblob", "longblob", NULL};
  static const char *const precise[] = {"decimal", "bit", "float", "double", NULL};
  static const char *const times[] = {"time", "datetime", "timestamp", NULL};
  const char *name = r[0] ? r[0] : "", *dtype = r[1] ? r[1] : "", *ctype = r[2] ? r[2] : "";
  const char *length = NULL, *scale = NULL;
  if (st_is(dtype, strings))
    length = r[3];
  else if (st_is(dtype, precise)) {
    length = r[4];
    scale = r[5];
  } else if (st_is(dtype, times))
    scale = r[6];
  if (dm_buf_puts(out, "{\"name\":") < 0 || sync_json_string(out, name) < 0 ||
      dm_buf_puts(out, ",\"type\":") < 0 || sync_json_string(out, dtype) < 0)
    return -1;
  if (length && dm_buf_printf(out, ",\"length\":%lld", strtoll(length, NULL, 10)) < 0)
    return -1;
  if (scale && dm_buf_printf(out, ",\"scale\":%lld", strtoll(scale, NULL, 10)) < 0)
    return -1;
  if (dm_buf_printf(out, ",\"unsigned\":%s,\"nullable\":%s",
                    strstr(ctype, " unsigned") ? "true" : "false",
                    r[7] && strcmp(r[7], "YES") == 0 ? "true" : "false") < 0)
    return -1;
  /* MariaDB writes COLUMN_DEFAULT as an expression (strings quoted, NULL for DEFAULT NULL),
   * SQL NULL when there is none: taken as it is, so equal defaults compare equal */
  if (r[8] && (dm_buf_puts(out, ",\"default\":") < 0 || sync_json_string(out, r[8]) < 0))
    return -1;
  if (r[9] && (dm_buf_puts(out, ",\"charset\":") < 0 || sync_json_string(out, r[9]) < 0))
    return -1;
  if ((strcmp(dtype, "enum") == 0 || strcmp(dtype, "set") == 0) &&
      (dm_buf_puts(out, ",\"members\":") < 0 || st_members(out, ctype) < 0))
    return -1;
  return dm_buf_putc(out, '}');
}

int sync_structure_json(MYSQL *c, const char *schema, const char *table, dm_buf *out, char *msg,
                        size_t msg_len) {
  size_t start = out->len;
  MYSQL_RES *cols = st_query(
      c,
      "SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, CHARACTER_MAXIMUM_LENGTH, NUMERIC_PRECISION, "
      "NUMERIC_SCALE, DATETIME_PRECISION, IS_NULLABLE, COLUMN_DEFAULT, CHARACTER_SET_NAME FROM "
      "information_schema.COLUMNS WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s ORDER BY "
      "ORDINAL_POSITION",
      schema, table, msg, msg_len);
  if (!cols)
    return -1;
  if (mysql_num_rows(cols) == 0) {
    mysql_free_result(cols);
    return 1;
  }
  MYSQL_RES *idx = st_query(c,
                            "SELECT INDEX_NAME, NON_UNIQUE, COLUMN_NAME, SUB_PART FROM "
                            "information_schema.STATISTICS WHERE TABLE_SCHEMA = %s AND "
                            "TABLE_NAME = %s ORDER BY INDEX_NAME = 'PRIMARY' DESC, INDEX_NAME, "
                            "SEQ_IN_INDEX",
                            schema, table, msg, msg_len);
  if (!idx) {
    mysql_free_result(cols);
    return -1;
  }
  int rc = dm_buf_puts(out, "{\"columns\":[");
  MYSQL_ROW r;
  for (bool first = true; rc == 0 && (r = mysql_fetch_row(cols)); first = false)
    rc = (first ? 0 : dm_buf_putc(out, ',')) < 0 ? -1 : st_column(out, r);
  if (rc == 0)
    rc = dm_buf_puts(out, "],\"indexes\":[");
  /* one object per index: its rows come together, in the index's column order */
  char last[200] = "";
  bool any = false;
  while (rc == 0 && (r = mysql_fetch_row(idx))) {
    const char *iname = r[0] ? r[0] : "", *col = r[2] ? r[2] : "";
    if (!any || strcmp(last, iname) != 0) {
      if ((any && dm_buf_puts(out, "]},") < 0) || dm_buf_puts(out, "{\"name\":") < 0 ||
          sync_json_string(out, iname) < 0 ||
          dm_buf_printf(out, ",\"unique\":%s,\"columns\":[",
                        r[1] && strcmp(r[1], "0") == 0 ? "true" : "false") < 0) {
        rc = -1;
        break;
      }
      snprintf(last, sizeof last, "%s", iname);
      any = true;
    } else if (dm_buf_putc(out, ',') < 0) {
      rc = -1;
      break;
    }
    char part[300];
    if (r[3])
      snprintf(part, sizeof part, "%s(%s)", col, r[3]);
    else
      snprintf(part, sizeof part, "%s", col);
    rc = sync_json_string(out, part);
  }
  if (rc == 0 && any)
    rc = dm_buf_puts(out, "]}");
  if (rc == 0)
    rc = dm_buf_puts(out, "]}");
  mysql_free_result(cols);
  mysql_free_result(idx);
  if (rc < 0) {
    out->len = start;
    if (out->p)
      out->p[start] = '\0';
    snprintf(msg, msg_len, "out of memory writing a table's structure");
  }
  return rc;
}

/* ---- the scratch check ---------------------------------------------------------------------- */

typedef struct st_scratch_route {
  const char *subject_schema, *subject_table, *schema, *table;
} st_scratch_route;

/* The subject table to the scratch copy; a schema-only name of the subject's schema to the
 * scratch's schema; every other name as it is. */
static void st_route(void *arg, const char *schema, const char *table, char *out_schema,
                     size_t schema_len, char *out_table, size_t table_len) {
  const st_scratch_route *r = arg;
  if (strcmp(schema, r->subject_schema) != 0)
    return;
  if (!table) {
    snprintf(out_schema, schema_len, "%s", r->schema);
    return;
  }
  if (strcmp(table, r->subject_table) == 0) {
    snprintf(out_schema, schema_len, "%s", r->schema);
    snprintf(out_table, table_len, "%s", r->table);
  }
}

static unsigned st_run(MYSQL *c, const char *sql, size_t len) {
  if (mysql_real_query(c, sql, (unsigned long)len) != 0)
    return mysql_errno(c) ? mysql_errno(c) : 1;
  MYSQL_RES *r = mysql_store_result(c);
  if (r)
    mysql_free_result(r);
  return 0;
}

static void st_drop(MYSQL *c, const char *schema, const char *table) {
  dm_buf q = {0};
  if (dm_buf_puts(&q, "DROP TABLE IF EXISTS ") == 0 && sync_sql_qualified(&q, schema, table) == 0)
    st_run(c, q.p, q.len);
  dm_buf_free(&q);
}

int sync_structure_try(MYSQL *c, const char *scratch_schema, const char *scratch_table,
                       const char *from_db, const char *from_table, const sync_ddl *d,
                       const char *subject_schema, const char *subject_table, dm_buf *out,
                       char *refused, size_t refused_len, char *msg, size_t msg_len) {
  dm_buf q = {0};
  int rc = -1;
  refused[0] = '\0';
  /* a copy left by a crash between CREATE and DROP goes first */
  st_drop(c, scratch_schema, scratch_table);
  if (dm_buf_puts(&q, "CREATE TABLE ") < 0 ||
      sync_sql_qualified(&q, scratch_schema, scratch_table) < 0 || dm_buf_puts(&q, " LIKE ") < 0 ||
      sync_sql_qualified(&q, from_db, from_table) < 0) {
    snprintf(msg, msg_len, "out of memory writing a scratch copy");
    goto out;
  }
  unsigned e = st_run(c, q.p, q.len);
  if (e == 1146 /* ER_NO_SUCH_TABLE */) {
    rc = 2;
    goto out;
  }
  if (e) {
    st_error(c, "copying a table for a scratch copy", msg, msg_len);
    goto out;
  }
  st_scratch_route route = {subject_schema, subject_table, scratch_schema, scratch_table};
  for (int i = 0; i < d->n && !refused[0]; i++) {
    const sync_ddl_stmt *s = &d->stmts[i];
    if (strcmp(s->subject.schema, subject_schema) != 0 ||
        strcmp(s->subject.table, subject_table) != 0)
      continue;
    dm_buf_reset(&q);
    if (sync_ddl_rewrite(s, st_route, &route, false, &q) < 0)
      snprintf(refused, refused_len, "the statement cannot be written for the copy");
    else if (st_run(c, q.p, q.len) != 0)
      snprintf(refused, refused_len, "%s", mysql_error(c));
  }
  if (refused[0])
    rc = 1;
  else if ((rc = sync_structure_json(c, scratch_schema, scratch_table, out, msg, msg_len)) == 1) {
    snprintf(refused, refused_len, "the statements leave no table");
    rc = 1;
  }
out:
  st_drop(c, scratch_schema, scratch_table);
  dm_buf_free(&q);
  return rc;
}

int sync_structure_scratch(MYSQL *c, const char *scratch_schema, const char *scratch_table,
                           const char *tdb, const char *tt, const sync_ddl *d,
                           const char *subject_schema, const char *subject_table, dm_buf *out,
                           char *msg, size_t msg_len) {
  size_t at = out->len;
  char refused[512];
  if (dm_buf_puts(out, "\"target\":") < 0) {
    snprintf(msg, msg_len, "out of memory writing the scratch check");
    return -1;
  }
  int rc = sync_structure_try(c, scratch_schema, scratch_table, tdb, tt, d, subject_schema,
                              subject_table, out, refused, sizeof refused, msg, msg_len);
  if (rc != 0) { /* nothing of the copy's structure was appended */
    out->len = at;
    out->p[at] = '\0';
  }
  if (rc == 2) /* the target has no table yet: nothing to check against */
    return 0;
  if (rc == 1 &&
      (dm_buf_puts(out, "\"target_error\":") < 0 || sync_json_string(out, refused) < 0)) {
    snprintf(msg, msg_len, "out of memory writing the scratch check");
    return -1;
  }
  return rc < 0 ? -1 : 0;
}

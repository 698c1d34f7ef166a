/*
 * json-sink: column names for table maps that carry none.
 *
 * With binlog_row_metadata = FULL a table map names its columns, and those names (of the moment
 * the row was written) are used as they are. With MINIMAL (MySQL 8's default) or NO_LOG
 * (MariaDB's) it names none: they are taken from the source's information_schema, with the
 * signedness, collations and ENUM/SET values that NO_LOG leaves out too, and cached per table
 * until a DDL statement in the binlog may have touched the table. The limit (README.md): these
 * are the names of the time of reading, not of writing. A table whose column count no longer
 * matches its table map (a column added or dropped since, or the table gone) gets positional names
 * (col1, col2, ...), with a warning once per table.
 */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mysql.h>

#include <dmhost/db.h>

#include "sink.h"

static void sink_cols_release(sink_table_cols *c) {
  for (uint32_t i = 0; i < c->n_owned; i++)
    free(c->owned[i]);
  free(c->owned);
  free(c->defs);
  free(c->db);
  free(c->table);
  memset(c, 0, sizeof *c);
}

void sink_columns_free(sink *s) {
  for (size_t i = 0; i < s->n_cols; i++)
    sink_cols_release(&s->cols[i]);
  free(s->cols);
  s->cols = NULL;
  s->n_cols = s->cap_cols = 0;
  if (s->src)
    mysql_close(s->src);
  s->src = NULL;
}

static char *sink_cols_own(sink_table_cols *c, const char *p, size_t len) {
  char *copy = strndup(p, len);
  if (!copy)
    return NULL;
  char **o = realloc(c->owned, (c->n_owned + 1) * sizeof *o);
  if (!o) {
    free(copy);
    return NULL;
  }
  c->owned = o;
  c->owned[c->n_owned++] = copy;
  return copy;
}

/* The values of an ENUM or SET column type as information_schema writes it: enum('a','it''s').
 * 0, or -1 without memory. */
static int sink_cols_enum_values(sink_table_cols *c, dm_binlog_column_def *d, const char *type) {
  const char *p = strchr(type, '(');
  if (!p || (strncmp(type, "enum", 4) != 0 && strncmp(type, "set", 3) != 0))
    return 0;
  char **vals = NULL;
  uint32_t n = 0;
  p++;
  while (*p == '\'') {
    size_t cap = strlen(p) + 1, len = 0;
    char *v = malloc(cap);
    if (!v)
      goto nomem;
    for (p++; *p; p++) {
      if (*p == '\'' && p[1] == '\'') {
        v[len++] = '\'';
        p++;
      } else if (*p == '\'') {
        p++;
        break;
      } else {
        v[len++] = *p;
      }
    }
    v[len] = '\0';
    char **nv = realloc(vals, (n + 1) * sizeof *nv);
    if (!nv) {
      free(v);
      goto nomem;
    }
    vals = nv;
    vals[n++] = v;
    if (*p == ',')
      p++;
  }
  /* the values array and each value belong to c (freed with it) */
  if (n) {
    char **o = realloc(c->owned, (c->n_owned + n + 1) * sizeof *o);
    if (!o)
      goto nomem;
    c->owned = o;
    for (uint32_t i = 0; i < n; i++)
      c->owned[c->n_owned++] = vals[i];
    c->owned[c->n_owned++] = (char *)vals;
    d->values = (const char *const *)vals;
    d->n_values = n;
  } else {
    free(vals);
  }
  return 0;
nomem:
  for (uint32_t i = 0; i < n; i++)
    free(vals[i]);
  free(vals);
  return -1;
}

static int sink_cols_connect(sink *s, dm_error *err) {
  if (s->src)
    return 0;
  dm_db_connect_opts o = {.who = SINK_WHO " (column names)",
                          .side = DM_DB_SOURCE,
                          .read_timeout_s = 30,
                          .endpoint_size = dm_host_db_endpoint_size(s->host, s->ctx)};
  s->src = dm_db_connect(s->host->source_db(s->ctx), &o, err);
  return s->src ? 0 : -1;
}

/* Reads the columns of db.table into *c: 0 (n is 0 for a table that is gone), or -1. */
static int sink_cols_query(sink *s, const char *db, const char *table, sink_table_cols *c,
                           dm_error *err) {
  if (sink_cols_connect(s, err) != 0)
    return -1;
  size_t dl = strlen(db), tl = strlen(table);
  char *edb = malloc(2 * dl + 1), *etb = malloc(2 * tl + 1);
  char *q = NULL;
  if (edb && etb) {
    mysql_real_escape_string(s->src, edb, db, (unsigned long)dl);
    mysql_real_escape_string(s->src, etb, table, (unsigned long)tl);
    if (asprintf(&q,
                 /* binary strings have no collation there: 63 is the binary one */
                 "SELECT c.COLUMN_NAME, c.COLUMN_TYPE, IFNULL(co.ID, IF(c.DATA_TYPE IN ('binary', "
                 "'varbinary', 'tinyblob', 'blob', 'mediumblob', 'longblob'), 63, 0)), "
                 "c.COLUMN_KEY = 'PRI' "
                 "FROM information_schema.COLUMNS c LEFT JOIN information_schema.COLLATIONS co "
                 "ON co.COLLATION_NAME = c.COLLATION_NAME WHERE c.TABLE_SCHEMA = '%s' AND "
                 "c.TABLE_NAME = '%s' ORDER BY c.ORDINAL_POSITION",
                 edb, etb) < 0)
      q = NULL;
  }
  free(edb);
  free(etb);
  if (!q) {
    s->host->error_make(s->ctx, err, DM_ERR_NO_MEMORY, NULL, SINK_WHO ": no memory");
    return -1;
  }
  int rc = mysql_query(s->src, q);
  free(q);
  MYSQL_RES *res = rc == 0 ? mysql_store_result(s->src) : NULL;
  if (!res) {
    dm_db_error(s->src, DM_DB_SOURCE, err, DM_ERR_DB_QUERY,
                SINK_WHO ": cannot read the columns of %s.%s from the source's "
                         "information_schema",
                db, table);
    mysql_close(s->src); /* a broken connection is opened again at the next need */
    s->src = NULL;
    return -1;
  }
  uint32_t n = (uint32_t)mysql_num_rows(res);
  c->db = strdup(db);
  c->table = strdup(table);
  c->defs = calloc(n ? n : 1, sizeof *c->defs);
  bool ok = c->db && c->table && c->defs;
  MYSQL_ROW row;
  for (uint32_t i = 0; ok && (row = mysql_fetch_row(res)) && i < n; i++) {
    dm_binlog_column_def *d = &c->defs[i];
    const char *type = row[1] ? row[1] : "";
    ok = (d->name = sink_cols_own(c, row[0] ? row[0] : "", row[0] ? strlen(row[0]) : 0)) &&
         sink_cols_enum_values(c, d, type) == 0;
    d->is_unsigned = strstr(type, "unsigned") != NULL;
    d->collation = row[2] ? (uint32_t)strtoul(row[2], NULL, 10) : 0;
    d->in_primary_key = row[3] && strcmp(row[3], "1") == 0;
  }
  mysql_free_result(res);
  c->n = n;
  if (!ok) {
    sink_cols_release(c);
    s->host->error_make(s->ctx, err, DM_ERR_NO_MEMORY, NULL, SINK_WHO ": no memory");
    return -1;
  }
  return 0;
}

static sink_table_cols *sink_cols_get(sink *s, const char *db, const char *table, dm_error *err) {
  for (size_t i = 0; i < s->n_cols; i++)
    if (strcmp(s->cols[i].db, db) == 0 && strcmp(s->cols[i].table, table) == 0)
      return &s->cols[i];
  if (s->n_cols == s->cap_cols) {
    size_t cap = s->cap_cols ? s->cap_cols * 2 : 16;
    sink_table_cols *c = realloc(s->cols, cap * sizeof *c);
    if (!c) {
      s->host->error_make(s->ctx, err, DM_ERR_NO_MEMORY, NULL, SINK_WHO ": no memory");
      return NULL;
    }
    s->cols = c;
    s->cap_cols = cap;
  }
  sink_table_cols *c = &s->cols[s->n_cols];
  memset(c, 0, sizeof *c);
  if (sink_cols_query(s, db, table, c, err) != 0)
    return NULL;
  s->n_cols++;
  s->host->logf(s->ctx, DM_LOG_INFO,
                SINK_WHO ": the binlog names no columns of %s.%s (binlog_row_metadata is not "
                         "FULL): %" PRIu32 " names from the source's information_schema",
                db, table, c->n);
  return c;
}

/* Positional names col1..colN for a map that information_schema no longer describes. */
static int sink_cols_positional(sink *s, dm_binlog_table_map *tm, dm_error *err) {
  dm_binlog_column_def *defs = calloc(tm->column_count ? tm->column_count : 1, sizeof *defs);
  char(*names)[16] = calloc(tm->column_count ? tm->column_count : 1, sizeof *names);
  int rc = -1;
  if (defs && names) {
    for (uint32_t i = 0; i < tm->column_count; i++) {
      snprintf(names[i], sizeof names[i], "col%" PRIu32, i + 1);
      defs[i].name = names[i];
      defs[i].collation = tm->columns[i].collation;
      defs[i].is_unsigned = tm->columns[i].is_unsigned;
    }
    uint32_t mismatch;
    rc = dm_binlog_table_map_fill(tm, defs, tm->column_count, &mismatch, err);
  } else {
    s->host->error_make(s->ctx, err, DM_ERR_NO_MEMORY, NULL, SINK_WHO ": no memory");
  }
  free(defs);
  free(names);
  return rc;
}

int sink_columns_fill(sink *s, dm_binlog_table_map *tm, dm_error *err) {
  if (tm->has_column_names)
    return 0;
  sink_table_cols *c = sink_cols_get(s, tm->db.ptr, tm->table.ptr, err);
  if (!c)
    return -1;
  if (c->n == tm->column_count) {
    uint32_t mismatch;
    return dm_binlog_table_map_fill(tm, c->defs, c->n, &mismatch, err) < 0 ? -1 : 0;
  }
  if (!c->warned) {
    s->host->logf(s->ctx, DM_LOG_WARN,
                  SINK_WHO ": %s.%s has %" PRIu32 " columns in the binlog but %" PRIu32
                           " in the source's information_schema now (changed since, or gone): "
                           "its columns are named col1..col%" PRIu32
                           " until a DDL on it is read. Set binlog_row_metadata = FULL on the "
                           "source for the names of the time of writing",
                  tm->db.ptr, tm->table.ptr, tm->column_count, c->n, tm->column_count);
    c->warned = true;
  }
  return sink_cols_positional(s, tm, err);
}

void sink_columns_ddl(sink *s, const char *sql, size_t sql_len) {
  if (!s->n_cols)
    return;
  char *text = strndup(sql, sql_len);
  if (!text) { /* no memory to look: forget everything, which is always right */
    for (size_t i = 0; i < s->n_cols; i++)
      sink_cols_release(&s->cols[i]);
    s->n_cols = 0;
    return;
  }
  /* A statement touches a table only if it names it (or its schema: DROP DATABASE): any cached
   * table whose name or schema's name appears in the text is read again at its next row. */
  size_t kept = 0;
  for (size_t i = 0; i < s->n_cols; i++) {
    sink_table_cols *c = &s->cols[i];
    if (strcasestr(text, c->table) || strcasestr(text, c->db)) {
      sink_cols_release(c);
      continue;
    }
    s->cols[kept++] = *c;
  }
  s->n_cols = kept;
  free(text);
}

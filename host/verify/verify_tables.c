/* The tables verify compares: the source's base tables the task's block-allow list takes, grouped
 * by the target table their routes name; each one's columns (the source's, less those the target
 * lacks) and key (pt-table-checksum's choice: the primary key, else the first unique key of NOT
 * NULL columns). */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "verify_internal.h"

static int vf_table_cmp(const void *a, const void *b) {
  const vf_table *x = a, *y = b;
  int d = strcmp(x->to_schema, y->to_schema);
  return d ? d : strcmp(x->to_table, y->to_table);
}

/* The target entry for (schema, table), added when new; NULL without memory. */
static vf_table *vf_table_for(vf_run *r, const char *schema, const char *table) {
  for (int i = 0; i < r->n_tables; i++)
    if (!strcmp(r->tables[i].to_schema, schema) && !strcmp(r->tables[i].to_table, table))
      return &r->tables[i];
  vf_table *v = realloc(r->tables, (size_t)(r->n_tables + 1) * sizeof *v);
  if (!v)
    return NULL;
  r->tables = v;
  vf_table *t = &v[r->n_tables++];
  *t = (vf_table){0};
  dm_strlcpy(t->to_schema, schema, sizeof t->to_schema);
  dm_strlcpy(t->to_table, table, sizeof t->to_table);
  return t;
}

int vf_tables_list(vf_run *r, dm_error *err) {
  static const char q[] =
      "SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES WHERE TABLE_TYPE = 'BASE "
      "TABLE' AND TABLE_SCHEMA NOT IN ('mysql', 'information_schema', 'performance_schema', "
      "'sys') ORDER BY TABLE_SCHEMA, TABLE_NAME";
  if (vf_sql_query(r->source, DM_DB_SOURCE, q, "listing the tables", err) < 0)
    return -1;
  MYSQL_RES *res = mysql_store_result(r->source);
  if (!res) {
    dm_db_error(r->source, DM_DB_SOURCE, err, DM_ERR_DB_QUERY, "verify: listing the tables");
    return -1;
  }
  MYSQL_ROW row;
  int rc = 0;
  while (rc == 0 && (row = mysql_fetch_row(res))) {
    if (!row[0] || !row[1] || dmh_rules_is_system_schema(row[0]) ||
        !dmh_rules_table_allowed(r->rules, row[0], row[1]))
      continue;
    char to_s[256], to_t[256];
    dmh_rules_route(r->rules, row[0], row[1], to_s, sizeof to_s, to_t, sizeof to_t);
    vf_table *t = vf_table_for(r, to_s, to_t);
    void *sh = t ? realloc(t->shards, (size_t)(t->n_shards + 1) * sizeof *t->shards) : NULL;
    if (!sh) {
      dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "verify: out of memory");
      rc = -1;
      break;
    }
    t->shards = sh;
    dm_strlcpy(t->shards[t->n_shards][0], row[0], 256);
    dm_strlcpy(t->shards[t->n_shards][1], row[1], 256);
    t->n_shards++;
  }
  mysql_free_result(res);
  if (rc == 0 && r->n_tables > 1) /* none: r->tables is NULL, which qsort may not take */
    qsort(r->tables, (size_t)r->n_tables, sizeof *r->tables, vf_table_cmp);
  return rc;
}

void vf_tables_free(vf_run *r) {
  for (int i = 0; i < r->n_tables; i++) {
    free(r->tables[i].shards);
    free(r->tables[i].cols);
    json_object_put(r->tables[i].listed);
    dm_buf_free(&r->tables[i].text);
  }
  free(r->tables);
  r->tables = NULL;
  r->n_tables = 0;
}

/* The result of sql on c, stored; NULL with t->err. */
static MYSQL_RES *vf_store(MYSQL *c, dm_db_side side, const char *sql, const char *what,
                           vf_table *t) {
  MYSQL_RES *res = NULL;
  if (vf_sql_query(c, side, sql, what, &t->err) == 0 && !(res = mysql_store_result(c)))
    dm_db_error(c, side, &t->err, DM_ERR_DB_QUERY, "verify: %s", what);
  return res;
}

static bool vf_is_binary_type(const char *type) {
  static const char *const bin[] = {"binary",     "varbinary", "tinyblob", "blob",
                                    "mediumblob", "longblob",  "bit"};
  for (size_t i = 0; i < sizeof bin / sizeof bin[0]; i++)
    if (!strcasecmp(type, bin[i]))
      return true;
  return false;
}

/* The columns of schema.table on c as "SELECT COLUMN_NAME, DATA_TYPE, EXTRA, IS_NULLABLE" rows. */
static MYSQL_RES *vf_columns(MYSQL *c, dm_db_side side, const char *schema, const char *table,
                             vf_table *t) {
  dm_buf q = {0};
  dm_buf_puts(
      &q, "SELECT COLUMN_NAME, DATA_TYPE, EXTRA, IS_NULLABLE FROM information_schema.COLUMNS WHERE "
          "TABLE_SCHEMA = ");
  vf_sql_literal(&q, c, schema, strlen(schema), false);
  dm_buf_puts(&q, " AND TABLE_NAME = ");
  vf_sql_literal(&q, c, table, strlen(table), false);
  dm_buf_puts(&q, " ORDER BY ORDINAL_POSITION");
  MYSQL_RES *res = NULL;
  if (q.oom)
    dm_error_set(&t->err, DM_ERR_NO_MEMORY, NULL, "verify: out of memory");
  else
    res = vf_store(c, side, q.p, "reading the columns", t);
  dm_buf_free(&q);
  return res;
}

/* The key: the first index of SHOW INDEX (the primary key comes first) that is unique and whose
 * columns are all NOT NULL. */
static int vf_key(vf_run *r, vf_table *t) {
  dm_buf q = {0};
  dm_buf_puts(&q, "SHOW INDEX FROM ");
  vf_sql_name(&q, t->shards[0][0], t->shards[0][1]);
  MYSQL_RES *res = q.oom ? NULL : vf_store(r->source, DM_DB_SOURCE, q.p, "reading the keys", t);
  dm_buf_free(&q);
  if (!res)
    return -1;
  /* SHOW INDEX: Table, Non_unique, Key_name, Seq_in_index, Column_name, ..., Null (9) */
  char cur[256] = "";
  bool usable = false;
  int n = 0, cols[16];
  MYSQL_ROW row;
  for (bool more = true; more && !t->n_key;) {
    row = mysql_fetch_row(res);
    more = row != NULL;
    if (!row || strcmp(row[2], cur) != 0) { /* the previous index ends */
      if (cur[0] && usable && n > 0) {
        memcpy(t->key, cols, (size_t)n * sizeof *cols);
        t->n_key = n;
        dm_strlcpy(t->key_name, cur, sizeof t->key_name);
      }
      if (!row)
        break;
      dm_strlcpy(cur, row[2], sizeof cur);
      usable = row[1] && !strcmp(row[1], "0");
      n = 0;
    }
    if (row[9] && !strcmp(row[9], "YES"))
      usable = false;
    int at = -1;
    for (int i = 0; i < t->n_cols && row[4]; i++)
      if (!strcasecmp(t->cols[i].name, row[4]))
        at = i;
    if (at < 0 || n == 16)
      usable = false; /* a column the target lacks, or an expression */
    else
      cols[n++] = at;
  }
  mysql_free_result(res);
  return 0;
}

int vf_table_describe(vf_run *r, vf_table *t) {
  MYSQL_RES *src = vf_columns(r->source, DM_DB_SOURCE, t->shards[0][0], t->shards[0][1], t);
  if (!src)
    return -1;
  MYSQL_RES *dst = vf_columns(r->target, DM_DB_TARGET, t->to_schema, t->to_table, t);
  if (!dst) {
    mysql_free_result(src);
    return -1;
  }
  int rc = 0;
  if (mysql_num_rows(dst) == 0) {
    dm_error_set(&t->err, DM_ERR_VERIFY_TABLE, NULL,
                 "verify: the target has no table `%s`.`%s` (the task routes `%s`.`%s` there)",
                 t->to_schema, t->to_table, t->shards[0][0], t->shards[0][1]);
    rc = -1;
  } else if (!(t->cols = calloc(mysql_num_rows(src) + 1, sizeof *t->cols))) {
    dm_error_set(&t->err, DM_ERR_NO_MEMORY, NULL, "verify: out of memory");
    rc = -1;
  }
  MYSQL_ROW row, trow;
  while (rc == 0 && (row = mysql_fetch_row(src))) {
    bool there = false;
    mysql_data_seek(dst, 0);
    while (!there && (trow = mysql_fetch_row(dst)))
      there = trow[0] && !strcasecmp(trow[0], row[0]);
    if (!there) {
      size_t at = strlen(t->missing);
      snprintf(t->missing + at, sizeof t->missing - at, "%s`%s`", at ? ", " : "", row[0]);
      continue;
    }
    vf_col *c = &t->cols[t->n_cols++];
    dm_strlcpy(c->name, row[0], sizeof c->name);
    c->binary = row[1] && vf_is_binary_type(row[1]);
    c->generated = row[2] && strcasestr(row[2], "GENERATED");
    /* the other shards of a merge were not read: any of them may allow NULL there */
    c->nullable = t->n_shards > 1 || !row[3] || strcmp(row[3], "NO") != 0 || !trow[3] ||
                  strcmp(trow[3], "NO") != 0;
  }
  mysql_free_result(src);
  mysql_free_result(dst);
  if (rc == 0 && t->n_cols == 0) {
    dm_error_set(&t->err, DM_ERR_VERIFY_TABLE, NULL,
                 "verify: the target table `%s`.`%s` has none of the source's columns",
                 t->to_schema, t->to_table);
    rc = -1;
  }
  if (rc == 0)
    rc = vf_key(r, t);
  return rc;
}

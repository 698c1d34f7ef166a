/*
 * The tables the binlog names. Column names come from the table map (binlog_row_metadata=FULL,
 * checked before start); which columns form the keys, and which columns the target computes
 * itself (generated columns), come from the routed table on the target, since that is the table
 * the statements run against. A table is read from the target once, and again after a DDL touched
 * it or when a table map arrives whose columns differ from the one it was read for.
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sync.h"

struct sync_schema {
  sync_unit *u;
  sync_table **tables;
  int n, cap;
  uint32_t n_targets; /* distinct routed tables */
  sync_table *last;   /* most row events name the table of the one before */
};

int sync_schema_new(sync_unit *u, sync_schema **out) {
  *out = calloc(1, sizeof **out);
  if (!*out)
    return -1;
  (*out)->u = u;
  return 0;
}

static void sync_table_clear(sync_table *t) {
  for (uint32_t i = 0; t->col_names && i < t->n_all; i++)
    free(t->col_names[i]);
  free(t->col_names);
  free(t->generated);
  t->col_names = NULL;
  t->generated = NULL;
  dm_buf_free(&t->cols);
  dm_buf_free(&t->odku);
  t->resolved = false;
}

void sync_schema_free(sync_schema *s) {
  if (!s)
    return;
  for (int i = 0; i < s->n; i++) {
    sync_table_clear(s->tables[i]);
    sync_expr_free(s->tables[i]->expr);
    dm_buf_free(&s->tables[i]->qname);
    for (int e = 0; e < DM_ROUTE_EXTRACT_MAX; e++)
      dm_buf_free(&s->tables[i]->ext_lit[e]);
    free(s->tables[i]);
  }
  free(s->tables);
  free(s);
}

void sync_schema_invalidate(sync_schema *s, const char *db, const char *table) {
  for (int i = 0; i < s->n; i++) {
    sync_table *t = s->tables[i];
    if (strcmp(t->db, db) == 0 && (!table || strcmp(t->name, table) == 0))
      t->resolved = false;
  }
}

/* A table map's column names and types: a different one means the table changed upstream. */
uint64_t sync_schema_map_sig(const dm_binlog_table_map *tm) {
  uint64_t h = tm->column_count;
  for (uint32_t i = 0; i < tm->column_count; i++) {
    const dm_binlog_column *c = &tm->columns[i];
    h = h * 31 + sync_hash(c->name.ptr, c->name.len);
    h = h * 31 + ((uint64_t)c->real_type << 16 | c->meta);
  }
  return h;
}

static int sync_col_index(const dm_binlog_table_map *tm, const char *name) {
  size_t len = strlen(name);
  for (uint32_t i = 0; i < tm->column_count; i++)
    if (tm->columns[i].name.len == len && strncasecmp(tm->columns[i].name.ptr, name, len) == 0)
      return (int)i;
  return -1;
}

/* A column of the routed table by name: the table map's index, n_cols + e for the route's extract
 * column e, or -1. */
static int sync_col_any(const sync_table *t, const dm_binlog_table_map *tm, const char *name) {
  int i = sync_col_index(tm, name);
  if (i >= 0)
    return i;
  for (uint32_t e = 0; e < t->ext.n; e++)
    if (strcasecmp(t->ext.cols[e].column, name) == 0)
      return (int)(t->n_cols + e);
  return -1;
}

/* Does equal text mean equal value, and unequal text unequal value, for this column? */
static bool sync_col_exact(const dm_binlog_column *c) {
  switch (c->real_type) {
  case DM_COL_FLOAT:
  case DM_COL_DOUBLE:
    return false;
  case DM_COL_VARCHAR:
  case DM_COL_STRING:
  case DM_COL_VAR_STRING:
  case DM_COL_BLOB:
  case DM_COL_TINY_BLOB:
  case DM_COL_MEDIUM_BLOB:
  case DM_COL_LONG_BLOB:
    return c->collation == DM_BINLOG_COLLATION_BINARY;
  default:
    return true; /* numbers, temporal values, ENUM/SET (by index), BIT */
  }
}

static int sync_query(sync_unit *u, MYSQL *c, const char *q, MYSQL_RES **res, dm_error *err) {
  if (mysql_real_query(c, q, strlen(q)) != 0 || !(*res = mysql_store_result(c))) {
    sync_db_error(u, c, "sync: cannot read a table's definition on the target", err);
    return -1;
  }
  return 0;
}

/* Reads the routed table's columns and unique keys from the target. */
static int sync_table_resolve(sync_unit *u, sync_table *t, MYSQL *c, const dm_binlog_table_map *tm,
                              uint64_t sig, dm_error *err) {
  sync_table_clear(t);
  if (!tm->has_column_names) {
    u->host->error_make(u->ctx, err, DM_ERR_BINLOG_UNSUPPORTED, NULL,
                        "sync: the table map of `%s`.`%s` has no column names: the source must "
                        "write binlog_row_metadata=FULL",
                        t->db, t->name);
    return -1;
  }
  t->n_cols = tm->column_count;
  t->n_all = t->n_cols + t->ext.n;
  t->map_sig = sig;
  t->col_names = calloc(t->n_all, sizeof *t->col_names);
  t->generated = calloc(t->n_all, sizeof *t->generated);
  if (!t->col_names || !t->generated)
    goto nomem;
  for (uint32_t i = 0; i < t->n_all; i++) {
    dm_buf b = {0};
    const char *name = i < t->n_cols ? tm->columns[i].name.ptr : t->ext.cols[i - t->n_cols].column;
    size_t len = i < t->n_cols ? tm->columns[i].name.len : strlen(name);
    if (sync_sql_ident(&b, name, len) < 0)
      goto nomem;
    t->col_names[i] = b.p;
  }
  /* an extract column is filled by the route, never by the source's rows */
  for (uint32_t e = 0; e < t->ext.n; e++)
    if (sync_col_index(tm, t->ext.cols[e].column) >= 0) {
      u->host->error_make(u->ctx, err, DM_ERR_SYNC_COLUMNS, NULL,
                          "sync: `%s`.`%s` of the source has column `%s`, which the route's "
                          "extract group fills on the target `%s`.`%s`: name another column",
                          t->db, t->name, t->ext.cols[e].column, t->tdb, t->tname);
      return -1;
    }

  char lit_db[2 * SYNC_NAME_MAX + 3], lit_t[2 * SYNC_NAME_MAX + 3];
  lit_db[0] = lit_t[0] = '\'';
  size_t n1 = mysql_real_escape_string(c, lit_db + 1, t->tdb, (unsigned long)strlen(t->tdb));
  size_t n2 = mysql_real_escape_string(c, lit_t + 1, t->tname, (unsigned long)strlen(t->tname));
  memcpy(lit_db + 1 + n1, "'", 2);
  memcpy(lit_t + 1 + n2, "'", 2);

  char q[2048];
  MYSQL_RES *r;
  MYSQL_ROW row;
  bool nullable[4096] = {false};
  int n_target_cols = 0;
  /* The target's columns must be a superset of the source's (DM's rule): every statement names
   * its columns, so an extra column keeps its default; one nothing fills is refused like a
   * missing one, rather than getting the server's implicit 0 or '' under the permissive mode. */
  bool *found = calloc(t->n_all + 1, sizeof *found);
  char unfilled[SYNC_NAME_MAX] = "";
  if (!found)
    goto nomem;
  snprintf(q, sizeof q,
           "SELECT COLUMN_NAME, IS_NULLABLE, IS_GENERATED, COLUMN_DEFAULT IS NOT NULL OR "
           "IS_NULLABLE = 'YES' OR IS_GENERATED <> 'NEVER' OR EXTRA LIKE '%%auto_increment%%' "
           "FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s",
           lit_db, lit_t);
  if (sync_query(u, c, q, &r, err) < 0) {
    free(found);
    return -1;
  }
  while ((row = mysql_fetch_row(r))) {
    n_target_cols++;
    int i = sync_col_any(t, tm, row[0]);
    if (i < 0) { /* a column only the target has: it keeps its default */
      if (!unfilled[0] && !(row[3] && row[3][0] == '1'))
        dm_strlcpy(unfilled, row[0], sizeof unfilled);
      continue;
    }
    found[i] = true;
    if (i < 4096)
      nullable[i] = row[1] && strcmp(row[1], "YES") == 0;
    t->generated[i] = row[2] && strcmp(row[2], "NEVER") != 0;
  }
  mysql_free_result(r);
  int missing = -1;
  for (uint32_t i = 0; i < t->n_all && missing < 0; i++)
    if (!found[i])
      missing = (int)i;
  free(found);
  if (n_target_cols > 0 && missing >= (int)t->n_cols) {
    u->host->error_make(u->ctx, err, DM_ERR_SYNC_COLUMNS, NULL,
                        "sync: table `%s`.`%s` on the target (for `%s`.`%s` of the source) has no "
                        "column `%s`, which the route's extract group fills: add it to the table",
                        t->tdb, t->tname, t->db, t->name, t->ext.cols[missing - t->n_cols].column);
    return -1;
  }
  if (n_target_cols == 0) {
    u->host->error_make(u->ctx, err, DM_ERR_SYNC_TABLE, NULL,
                        "sync: table `%s`.`%s` (for `%s`.`%s` of the source) is not on the target",
                        t->tdb, t->tname, t->db, t->name);
    return -1;
  }
  if (missing >= 0 || unfilled[0]) {
    const dm_binlog_column *mc = missing >= 0 ? &tm->columns[missing] : NULL;
    u->host->error_make(
        u->ctx, err, DM_ERR_SYNC_COLUMNS, NULL,
        mc ? "sync: table `%s`.`%s` on the target (for `%s`.`%s` of the source) has no column "
             "`%.*s`, which the source's rows carry"
           : "sync: table `%s`.`%s` on the target (for `%s`.`%s` of the source) has column "
             "`%.*s`, which the source lacks, NOT NULL without a default: nothing would fill it",
        t->tdb, t->tname, t->db, t->name, mc ? (int)mc->name.len : (int)strlen(unfilled),
        mc ? mc->name.ptr : unfilled);
    return -1;
  }

  /* unique keys, the primary first */
  snprintf(q, sizeof q,
           "SELECT INDEX_NAME, COLUMN_NAME FROM information_schema.STATISTICS "
           "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s AND NON_UNIQUE = 0 "
           "ORDER BY INDEX_NAME <> 'PRIMARY', INDEX_NAME, SEQ_IN_INDEX",
           lit_db, lit_t);
  if (sync_query(u, c, q, &r, err) < 0)
    return -1;
  char cur[SYNC_NAME_MAX] = "";
  bool cur_ok = false, has_pk = false;
  t->n_uks = 0;
  while ((row = mysql_fetch_row(r))) {
    if (strcmp(cur, row[0]) != 0) {
      if (cur[0] && cur_ok && t->n_uks < SYNC_UKS_MAX)
        t->n_uks++;
      dm_strlcpy(cur, row[0], sizeof cur);
      cur_ok = true;
      if (t->n_uks < SYNC_UKS_MAX)
        t->uks[t->n_uks].n = 0;
      if (strcmp(cur, "PRIMARY") == 0)
        has_pk = true;
    }
    if (t->n_uks >= SYNC_UKS_MAX)
      continue;
    int i = sync_col_any(t, tm, row[1]);
    sync_ukey *k = &t->uks[t->n_uks];
    if (i < 0 || k->n == SYNC_KEY_COLS_MAX)
      cur_ok = false; /* a key on a column the source does not send: useless for matching */
    else
      k->cols[k->n++] = i;
  }
  if (cur[0] && cur_ok && t->n_uks < SYNC_UKS_MAX)
    t->n_uks++;
  mysql_free_result(r);
  for (int k = 0; k < t->n_uks; k++) {
    sync_ukey *uk = &t->uks[k];
    uk->exact = true;
    for (int j = 0; j < uk->n; j++) {
      /* an extract value is one text per source table: tables are told apart by it */
      uk->col_exact[j] = uk->cols[j] >= (int)t->n_cols || sync_col_exact(&tm->columns[uk->cols[j]]);
      uk->exact = uk->exact && uk->col_exact[j];
    }
  }
  if (!(has_pk && t->n_uks > 0 && t->uks[0].n > 0))
    has_pk = false;

  /* the key rows are matched by: the primary key, else the first unique key without NULLs */
  t->key_kind = SYNC_KEY_NONE;
  for (int k = 0; k < t->n_uks && t->key_kind == SYNC_KEY_NONE; k++) {
    bool ok = true;
    for (int j = 0; j < t->uks[k].n; j++)
      if (nullable[t->uks[k].cols[j]])
        ok = false;
    if (k == 0 && has_pk)
      ok = true;
    if (ok) {
      t->key_kind = (k == 0 && has_pk) ? SYNC_KEY_PK : SYNC_KEY_UK;
      t->key = t->uks[k];
    }
  }
  t->compactable = u->cfg.compact && t->key_kind == SYNC_KEY_PK && t->n_uks == 1;

  /* (`a`,`b`) and ON DUPLICATE KEY UPDATE `a`=VALUES(`a`),... over the columns the target takes */
  bool first = true;
  if (dm_buf_putc(&t->cols, '(') < 0 || dm_buf_puts(&t->odku, " ON DUPLICATE KEY UPDATE ") < 0)
    goto nomem;
  for (uint32_t i = 0; i < t->n_all; i++) {
    if (t->generated[i])
      continue;
    if ((!first && (dm_buf_putc(&t->cols, ',') < 0 || dm_buf_putc(&t->odku, ',') < 0)) ||
        dm_buf_puts(&t->cols, t->col_names[i]) < 0 ||
        dm_buf_printf(&t->odku, "%s=VALUES(%s)", t->col_names[i], t->col_names[i]) < 0)
      goto nomem;
    first = false;
  }
  if (dm_buf_putc(&t->cols, ')') < 0)
    goto nomem;
  t->resolved = true;
  return 0;
nomem:
  sync_nomem(u, err);
  return -1;
}

sync_table *sync_schema_table(sync_schema *s, MYSQL *conn, const dm_binlog_table_map *tm,
                              uint64_t sig, dm_error *err) {
  sync_unit *u = s->u;
  sync_table *t = s->last;
  if (!t || strcmp(t->name, tm->table.ptr) != 0 || strcmp(t->db, tm->db.ptr) != 0) {
    t = NULL;
    for (int i = 0; i < s->n && !t; i++)
      if (strcmp(s->tables[i]->name, tm->table.ptr) == 0 &&
          strcmp(s->tables[i]->db, tm->db.ptr) == 0)
        t = s->tables[i];
  }
  if (!t) {
    if (s->n == s->cap) {
      int cap = s->cap ? s->cap * 2 : 32;
      void *p = realloc(s->tables, (size_t)cap * sizeof *s->tables);
      if (!p)
        goto nomem;
      s->tables = p;
      s->cap = cap;
    }
    if (!(t = calloc(1, sizeof *t)))
      goto nomem;
    t->id = (uint32_t)s->n;
    s->tables[s->n++] = t;
    dm_strlcpy(t->db, tm->db.ptr, sizeof t->db);
    dm_strlcpy(t->name, tm->table.ptr, sizeof t->name);
    /* rows of an online schema change's ghost and trash tables never (sync_online.c) */
    t->allowed = sync_online_rows_replicated(u, t->db, t->name);
    memset(t->ignored, -1, sizeof t->ignored);
    if (sync_expr_table(u, t, err) < 0)
      return NULL;
    sync_route(u, t->db, t->name, t->tdb, t->tname);
    dm_host_route_extract(u->host, u->ctx, t->db, t->name, &t->ext);
    for (uint32_t e = 0; e < t->ext.n; e++)
      if (sync_sql_utf8(&t->ext_lit[e], t->ext.cols[e].value, strlen(t->ext.cols[e].value)) < 0)
        goto nomem;
    /* tables a route merges into one target table share its id, so their rows share keys */
    t->target_id = s->n_targets;
    for (int i = 0; i < s->n - 1; i++)
      if (strcmp(s->tables[i]->tdb, t->tdb) == 0 && strcmp(s->tables[i]->tname, t->tname) == 0)
        t->target_id = s->tables[i]->target_id;
    if (t->target_id == s->n_targets)
      s->n_targets++;
    if (sync_sql_qualified(&t->qname, t->tdb, t->tname) < 0)
      goto nomem;
    t->name_hash = sync_hash(t->qname.p, t->qname.len);
  }
  s->last = t;
  if (t->allowed && (!t->resolved || t->map_sig != sig) &&
      sync_table_resolve(u, t, conn, tm, sig, err) < 0)
    return NULL;
  return t;
nomem:
  sync_nomem(u, err);
  return NULL;
}

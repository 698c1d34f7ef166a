/*
 * The schema tracker's memory: what it knows of each table (read from its shadow table on the
 * target, information_schema), and the table maps it completes or checks. The shadows themselves
 * (names, seeding, DDL) are sync_tracker_shadow.c.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sync.h"
#include "sync_structure.h"
#include "sync_tracker_internal.h"

int sync_tracker_new(sync_unit *u, sync_tracker **out) {
  sync_tracker *tr = calloc(1, sizeof *tr);
  if (!tr)
    return -1;
  tr->u = u;
  /* the host drops these schemas with the task's meta (task_meta.h): the SDK names them */
  if (dm_tracker_schema_prefix(u->host->task_name(u->ctx), u->source_id, tr->prefix,
                               sizeof tr->prefix) < 0) {
    free(tr);
    return -1;
  }
  *out = tr;
  return 0;
}

static void trk_table_clear(trk_table *t) {
  free(t->defs);
  free(t->dtype);
  free(t->text);
  free(t->values);
  t->defs = NULL;
  t->dtype = NULL;
  t->text = NULL;
  t->values = NULL;
  t->n = 0;
  t->state = TRK_UNKNOWN;
}

void sync_tracker_free(sync_tracker *tr) {
  if (!tr)
    return;
  for (uint32_t i = 0; i < tr->n; i++)
    trk_table_clear(&tr->t[i]);
  free(tr->t);
  sync_keymap_free(&tr->map);
  dm_buf_free(&tr->keys);
  free(tr);
}

trk_table *trk_get(sync_tracker *tr, const char *db, const char *table) {
  size_t off = tr->keys.len, ld = strlen(db), lt = strlen(table);
  /* "db\0table\0": both names stay NUL-terminated when the next key follows */
  if (dm_buf_put(&tr->keys, db, ld + 1) < 0 || dm_buf_put(&tr->keys, table, lt + 1) < 0) {
    tr->keys.len = off;
    return NULL;
  }
  uint32_t len = (uint32_t)(ld + 1 + lt + 1);
  uint64_t h = sync_hash(tr->keys.p + off, len);
  struct sync_keymap_entry *e = sync_keymap_find(&tr->map, tr->keys.p, (uint32_t)off, len, h);
  if (e) {
    tr->keys.len = off;
    return &tr->t[e->value];
  }
  if (tr->n == tr->cap) {
    uint32_t cap = tr->cap ? 2 * tr->cap : 64;
    void *p = realloc(tr->t, cap * sizeof *tr->t);
    if (!p) {
      tr->keys.len = off;
      return NULL;
    }
    tr->t = p;
    tr->cap = cap;
  }
  if (sync_keymap_add(&tr->map, tr->keys.p, (uint32_t)off, len, h, (int32_t)tr->n) < 0) {
    tr->keys.len = off;
    return NULL;
  }
  trk_table *t = &tr->t[tr->n++];
  memset(t, 0, sizeof *t);
  t->db = (uint32_t)off;
  t->name = (uint32_t)(off + ld + 1);
  t->allowed = -1;
  return t;
}

void trk_forget(sync_tracker *tr, const char *db, const char *table) {
  for (uint32_t i = 0; i < tr->n; i++) {
    trk_table *t = &tr->t[i];
    if (strcmp(tr->keys.p + t->db, db) == 0 && (!table || strcmp(trk_name(tr, t), table) == 0))
      trk_table_clear(t);
  }
}

void trk_forget_all(sync_tracker *tr) {
  for (uint32_t i = 0; i < tr->n; i++)
    trk_table_clear(&tr->t[i]);
}

static int trk_literal(MYSQL *c, dm_buf *b, const char *s) {
  size_t l = strlen(s);
  if (dm_buf_reserve(b, 2 * l + 3) < 0)
    return -1;
  b->p[b->len++] = '\'';
  b->len += mysql_real_escape_string(c, b->p + b->len, s, (unsigned long)l);
  b->p[b->len++] = '\'';
  b->p[b->len] = '\0';
  return 0;
}

/* A shadow seeded from the target (CREATE TABLE .. LIKE) has the route's extract columns, which
 * are the target's, not the source's: the structure read leaves them out (they stay in the
 * shadow, where MariaDB would refuse to drop one that is part of a key). */
static int trk_skip_extract(sync_tracker *tr, MYSQL *c, const trk_table *t, dm_buf *q) {
  dm_route_extract ext;
  dm_host_route_extract(tr->u->host, tr->u->ctx, tr->keys.p + t->db, trk_name(tr, t), &ext);
  for (uint32_t e = 0; e < ext.n; e++)
    if (dm_buf_puts(q, e ? ", " : " AND c.COLUMN_NAME NOT IN (") < 0 ||
        trk_literal(c, q, ext.cols[e].column) < 0)
      return -1;
  return ext.n ? dm_buf_putc(q, ')') : 0;
}

int trk_load(sync_tracker *tr, MYSQL *c, trk_table *t, dm_error *err) {
  sync_unit *u = tr->u;
  char shadow[SYNC_NAME_MAX];
  trk_shadow_schema(tr, tr->keys.p + t->db, shadow, sizeof shadow);
  trk_table_clear(t);
  dm_buf q = {0};
  int rc = -1;
  MYSQL_RES *res = NULL;
  if (dm_buf_puts(&q, "SELECT c.COLUMN_NAME, c.DATA_TYPE, c.COLUMN_TYPE, co.ID, c.COLUMN_KEY, "
                      "c.COLLATION_NAME FROM information_schema.COLUMNS c LEFT JOIN "
                      "information_schema.COLLATIONS co ON co.COLLATION_NAME = c.COLLATION_NAME "
                      "WHERE c.TABLE_SCHEMA = ") < 0 ||
      trk_literal(c, &q, shadow) < 0 || dm_buf_puts(&q, " AND c.TABLE_NAME = ") < 0 ||
      trk_literal(c, &q, trk_name(tr, t)) < 0 || trk_skip_extract(tr, c, t, &q) < 0 ||
      dm_buf_puts(&q, " ORDER BY c.ORDINAL_POSITION") < 0) {
    sync_nomem(u, err);
    goto out;
  }
  if (mysql_real_query(c, q.p, (unsigned long)q.len) != 0 || !(res = mysql_store_result(c))) {
    sync_db_error(u, c, "sync: the schema tracker cannot read a shadow table on the target", err);
    goto out;
  }
  uint32_t n = (uint32_t)mysql_num_rows(res);
  if (n == 0) {
    t->state = TRK_NONE;
    rc = 0;
    goto out;
  }
  /* one block for names, data types and ENUM/SET values: at most the text of the rows */
  size_t bytes = 0;
  MYSQL_ROW row;
  while ((row = mysql_fetch_row(res))) {
    unsigned long *len = mysql_fetch_lengths(res);
    bytes += len[0] + len[1] + len[2] + 3;
  }
  mysql_data_seek(res, 0);
  t->defs = calloc(n, sizeof *t->defs);
  t->dtype = calloc(n, sizeof *t->dtype);
  t->text = malloc(bytes + 1);
  t->values = calloc(bytes + 1, sizeof *t->values);
  if (!t->defs || !t->dtype || !t->text || !t->values) {
    trk_table_clear(t);
    sync_nomem(u, err);
    goto out;
  }
  size_t at = 0, vi = 0;
  for (uint32_t i = 0; (row = mysql_fetch_row(res)) && i < n; i++) {
    dm_binlog_column_def *d = &t->defs[i];
    const char *name = row[0] ? row[0] : "", *dtype = row[1] ? row[1] : "",
               *ctype = row[2] ? row[2] : "";
    d->name = t->text + at;
    memcpy(t->text + at, name, strlen(name) + 1);
    at += strlen(name) + 1;
    t->dtype[i] = t->text + at;
    memcpy(t->text + at, dtype, strlen(dtype) + 1);
    at += strlen(dtype) + 1;
    d->is_unsigned = strstr(ctype, " unsigned") != NULL;
    /* binary strings (BINARY, VARBINARY, BLOB) have no collation: the binlog's 63 */
    d->collation = row[3]   ? (uint32_t)strtoul(row[3], NULL, 10)
                   : row[5] ? 0
                            : DM_BINLOG_COLLATION_BINARY;
    d->in_primary_key = row[4] && strcmp(row[4], "PRI") == 0;
    if (strcmp(dtype, "enum") == 0 || strcmp(dtype, "set") == 0) {
      size_t start = at;
      d->n_values = sync_enum_members(ctype, t->text, &at);
      d->values = &t->values[vi];
      for (uint32_t k = 0, o = (uint32_t)start; k < d->n_values; k++) {
        t->values[vi++] = t->text + o;
        o += (uint32_t)strlen(t->text + o) + 1;
      }
    }
  }
  /* a primary key made of a prefix of a column is still PRI there; a unique NOT NULL key that
   * information_schema calls PRI without one is the server's choice too: the binlog's FULL
   * metadata makes the same one */
  t->n = n;
  t->state = TRK_OK;
  rc = 0;
out:
  if (res)
    mysql_free_result(res);
  dm_buf_free(&q);
  return rc;
}

/* Can a column the tracker says is `dtype` be the binlog's `real_type`? Types the tracker does
 * not list (a type only the target knows) are not checked. */
static bool trk_type_ok(const char *dtype, uint8_t rt) {
  static const struct {
    const char *name;
    uint8_t types[4];
  } map[] = {
      {"tinyint", {DM_COL_TINY}},
      {"smallint", {DM_COL_SHORT}},
      {"mediumint", {DM_COL_INT24}},
      {"int", {DM_COL_LONG}},
      {"bigint", {DM_COL_LONGLONG}},
      {"float", {DM_COL_FLOAT}},
      {"double", {DM_COL_DOUBLE}},
      {"decimal", {DM_COL_NEWDECIMAL, DM_COL_DECIMAL}},
      {"year", {DM_COL_YEAR}},
      {"date", {DM_COL_DATE, DM_COL_NEWDATE}},
      {"time", {DM_COL_TIME, DM_COL_TIME2}},
      {"datetime", {DM_COL_DATETIME, DM_COL_DATETIME2}},
      {"timestamp", {DM_COL_TIMESTAMP, DM_COL_TIMESTAMP2}},
      {"char", {DM_COL_STRING}},
      {"binary", {DM_COL_STRING}},
      {"varchar", {DM_COL_VARCHAR, DM_COL_VAR_STRING, DM_COL_VARCHAR_COMPRESSED}},
      {"varbinary", {DM_COL_VARCHAR, DM_COL_VAR_STRING, DM_COL_VARCHAR_COMPRESSED}},
      {"enum", {DM_COL_ENUM}},
      {"set", {DM_COL_SET}},
      {"bit", {DM_COL_BIT}},
  };
  static const char *const blobs[] = {
      "tinytext", "text", "mediumtext", "longtext", "tinyblob",   "blob",    "mediumblob",
      "longblob", "json", "geometry",   "point",    "linestring", "polygon", "multipoint"};
  for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
    if (strcmp(dtype, map[i].name) == 0) {
      for (int k = 0; k < 4 && map[i].types[k]; k++)
        if (map[i].types[k] == rt)
          return true;
      return false;
    }
  for (size_t i = 0; i < sizeof blobs / sizeof blobs[0]; i++)
    if (strcmp(dtype, blobs[i]) == 0)
      return rt == DM_COL_BLOB || rt == DM_COL_TINY_BLOB || rt == DM_COL_MEDIUM_BLOB ||
             rt == DM_COL_LONG_BLOB || rt == DM_COL_BLOB_COMPRESSED || rt == DM_COL_GEOMETRY;
  return true;
}

static const char *trk_type_name(uint8_t rt) {
  switch (rt) {
  case DM_COL_TINY:
    return "TINYINT";
  case DM_COL_SHORT:
    return "SMALLINT";
  case DM_COL_INT24:
    return "MEDIUMINT";
  case DM_COL_LONG:
    return "INT";
  case DM_COL_LONGLONG:
    return "BIGINT";
  case DM_COL_FLOAT:
    return "FLOAT";
  case DM_COL_DOUBLE:
    return "DOUBLE";
  case DM_COL_NEWDECIMAL:
    return "DECIMAL";
  case DM_COL_STRING:
    return "CHAR/BINARY";
  case DM_COL_VARCHAR:
  case DM_COL_VAR_STRING:
    return "VARCHAR/VARBINARY";
  case DM_COL_ENUM:
    return "ENUM";
  case DM_COL_SET:
    return "SET";
  case DM_COL_BLOB:
    return "BLOB/TEXT";
  default:
    return "another type";
  }
}

/* The table map at `at` and the tracker's structure of its table disagree. */
static int trk_mismatch(sync_tracker *tr, const dm_binlog_table_map *tm, const trk_table *t,
                        const char *at, const char *what, dm_error *err) {
  sync_unit *u = tr->u;
  char shadow[SYNC_NAME_MAX];
  trk_shadow_schema(tr, tm->db.ptr, shadow, sizeof shadow);
  u->host->error_make(u->ctx, err, DM_ERR_SYNC_SCHEMA, NULL,
                      "sync: the table map of `%s`.`%s` at %s and the schema tracker's structure "
                      "of it (shadow table `%s`.`%s` on the target, %" PRIu32
                      " columns) disagree: %s",
                      tm->db.ptr, tm->table.ptr, at, shadow, tm->table.ptr, t->n, what);
  return -1;
}

int sync_tracker_table_map(sync_tracker *tr, MYSQL *c, dm_binlog_table_map *tm, const char *at,
                           dm_error *err) {
  sync_unit *u = tr->u;
  trk_table *t = trk_get(tr, tm->db.ptr, tm->table.ptr);
  if (!t)
    return sync_nomem(u, err);
  if (t->allowed < 0)
    t->allowed = sync_online_rows_replicated(u, tm->db.ptr, tm->table.ptr) ? 1 : 0;
  if (!t->allowed)
    return 0;
  bool named = tm->has_column_names;
  if (t->state == TRK_UNKNOWN && trk_load(tr, c, t, err) < 0)
    return -1;
  if (t->state == TRK_NONE && !named) {
    /* first sight without names: the routed table on the target is the structure as of here */
    if (trk_seed_from_target(tr, c, tm->db.ptr, tm->table.ptr, err) < 0 ||
        trk_load(tr, c, t, err) < 0)
      return -1;
    if (t->state == TRK_NONE) {
      char tdb[SYNC_NAME_MAX], tt[SYNC_NAME_MAX];
      sync_route(u, tm->db.ptr, tm->table.ptr, tdb, tt);
      u->host->error_make(u->ctx, err, DM_ERR_SYNC_NO_SCHEMA, NULL,
                          "sync: the table map of `%s`.`%s` at %s has no column names "
                          "(binlog_row_metadata is not FULL), and neither the schema tracker nor "
                          "the target (`%s`.`%s`) has the table's structure",
                          tm->db.ptr, tm->table.ptr, at, tdb, tt);
      return -1;
    }
  }
  if (t->state != TRK_OK)
    return 0; /* names from the binlog and nothing to check them against */
  char what[512];
  if (t->n != tm->column_count) {
    snprintf(what, sizeof what, "the binlog has %" PRIu32 " columns", tm->column_count);
    return trk_mismatch(tr, tm, t, at, what, err);
  }
  for (uint32_t i = 0; i < t->n; i++)
    if (!trk_type_ok(t->dtype[i], tm->columns[i].real_type)) {
      snprintf(what, sizeof what,
               "column %" PRIu32 " (`%s`) is %s in the binlog, %s in the tracker", i + 1,
               t->defs[i].name, trk_type_name(tm->columns[i].real_type), t->dtype[i]);
      return trk_mismatch(tr, tm, t, at, what, err);
    }
  uint32_t bad = 0;
  int rc = dm_binlog_table_map_fill(tm, t->defs, t->n, &bad, err);
  if (rc == 1) {
    snprintf(what, sizeof what, "column %" PRIu32 " is `%.*s` in the binlog, `%s` in the tracker",
             bad + 1, (int)tm->columns[bad].name.len, tm->columns[bad].name.ptr, t->defs[bad].name);
    return trk_mismatch(tr, tm, t, at, what, err);
  }
  return rc;
}

/*
 * Databases and tables on the target, with routes applied. A table that already exists is kept
 * when its definition is the dump's (a resumed load, or two source tables routed into one), else
 * the load stops naming the first column that differs. "The dump's definition" is what the target
 * itself makes of the dump's CREATE TABLE: it is created in a scratch schema and both are compared
 * in information_schema, so display widths, defaults of the server and charsets never give false
 * alarms. Secondary keys are not compared (columns, nullability and the primary key are), so a
 * table still waiting for its deferred keys (load_keys.c) matches the dump as well as one that
 * has them.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dmhost/db.h>

#include "load.h"

typedef struct load_col {
  char *name;
  char *type;
  bool nullable;
  bool pri;
  bool generated; /* computed by the server: no INSERT names it */
  bool fillable;  /* an INSERT that leaves it out fills it (a default, NULL, generated, auto) */
} load_col;

typedef struct load_cols {
  load_col *v;
  int n;
} load_cols;

static void load_cols_free(load_cols *c) {
  for (int i = 0; i < c->n; i++) {
    free(c->v[i].name);
    free(c->v[i].type);
  }
  free(c->v);
  c->v = NULL;
  c->n = 0;
}

/* Trims trailing blanks and semicolons in place; returns the new length. */
static size_t load_schema_trim(char *s, size_t len) {
  while (len > 0 && (isspace((unsigned char)s[len - 1]) || s[len - 1] == ';'))
    s[--len] = '\0';
  return len;
}

/* collation_compatible: strict (docs/load.md): the checked statement *sql with the source's
 * collations written in (dmhost/ddl_collation.h). Every insertion lies after the name, so *rest
 * keeps its offset. A database naming neither charset nor collation gets the source's server
 * collation, what the source would have given it. */
static int load_schema_collate(load_unit *u, const load_dump *d, const char *file, char **sql,
                               const char **rest, dm_error *err) {
  dm_ddl_collation_opts o = {.database_collation = dm_collations_server(u->coll)};
  char *out, note[512];
  size_t out_len;
  int rc =
      dm_ddl_add_collations(*sql, strlen(*sql), u->coll, &o, &out, &out_len, note, sizeof note);
  if (rc < 0) {
    free(*sql);
    *sql = NULL;
    u->host->error_make(u->ctx, err, DM_ERR_NO_MEMORY, NULL, "load: no memory");
    return -1;
  }
  if (note[0])
    u->host->logf(u->ctx, DM_LOG_INFO, "load: collation_compatible strict: %s/%s: %s%s", d->dir,
                  file, note, rc == 1 ? "" : " (the statement runs as written)");
  if (rc == 1) {
    *rest = out + (*rest - *sql);
    free(*sql);
    *sql = out;
  }
  return 0;
}

/* Reads a schema file and checks it is one `<kw>`<want>` ...` statement as the dump writes it
 * (load_check_create). *sql is the file (caller frees), *rest the text after the name. */
static int load_schema_read(load_unit *u, const load_dump *d, const char *file, const char *kw,
                            const char *want, char **sql, const char **rest, dm_error *err) {
  size_t len, at = 0;
  const char *why;
  char name[LOAD_NAME_MAX];
  if (load_dir_read_file(u, d, file, sql, &len, err) != 0)
    return -1;
  load_schema_trim(*sql, len);
  *rest = load_check_create(*sql, kw, name, sizeof name, &at, &why);
  if (*rest && strcmp(name, want) != 0) {
    *rest = NULL;
    at = strlen(kw);
    why = "the name is not the one of the file name";
  }
  if (*rest)
    return u->coll ? load_schema_collate(u, d, file, sql, rest, err) : 0;
  unsigned line = 1;
  for (size_t i = 0; i < at; i++)
    line += (*sql)[i] == '\n';
  u->host->error_make(u->ctx, err, DM_ERR_LOAD_BAD_STATEMENT, NULL,
                      "load: refused %s/%s: not a `%.*s` statement of the dump's form for `%s` "
                      "(line %u, byte %zu: %s); nothing of it ran",
                      d->dir, file, (int)strlen(kw) - 1, kw, want, line, at, why);
  free(*sql);
  *sql = NULL;
  return -1;
}

static int load_schema_exec2(load_unit *u, MYSQL *c, const char *head, const char *rest,
                             const char *what, dm_error *err) {
  size_t hl = strlen(head), rl = strlen(rest);
  char *q = malloc(hl + rl + 1);
  if (!q) {
    u->host->error_make(u->ctx, err, DM_ERR_NO_MEMORY, NULL, "load: no memory");
    return -1;
  }
  memcpy(q, head, hl);
  memcpy(q + hl, rest, rl + 1);
  int rc = load_db_exec(u, c, q, hl + rl, what, err);
  free(q);
  return rc;
}

static int load_schema_create_db(load_unit *u, MYSQL *c, const char *tdb, const char *rest,
                                 dm_error *err) {
  char head[2 * LOAD_NAME_MAX + 64], q[2 * LOAD_NAME_MAX + 3], what[3 * LOAD_NAME_MAX];
  snprintf(head, sizeof head, "CREATE DATABASE IF NOT EXISTS %s", dm_db_quoted(tdb, q, sizeof q));
  snprintf(what, sizeof what, "load: cannot create database `%s`", tdb);
  return load_schema_exec2(u, c, head, rest ? rest : "", what, err);
}

/* Reads information_schema.COLUMNS of a table, in column order. */
static int load_schema_columns(load_unit *u, MYSQL *c, const char *db, const char *table,
                               load_cols *out, dm_error *err) {
  char q[1024 + 4 * LOAD_NAME_MAX], ldb[2 * LOAD_NAME_MAX + 3], ltb[2 * LOAD_NAME_MAX + 3];
  memset(out, 0, sizeof *out);
  load_db_literal(c, db, ldb, sizeof ldb);
  load_db_literal(c, table, ltb, sizeof ltb);
  int n = snprintf(q, sizeof q,
                   "SELECT COLUMN_NAME, COLUMN_TYPE, IS_NULLABLE = 'YES', COLUMN_KEY = 'PRI', "
                   "IS_GENERATED <> 'NEVER', COLUMN_DEFAULT IS NOT NULL OR IS_NULLABLE = 'YES' OR "
                   "IS_GENERATED <> 'NEVER' OR EXTRA LIKE '%%auto_increment%%' "
                   "FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s "
                   "ORDER BY ORDINAL_POSITION",
                   ldb, ltb);
  if (mysql_real_query(c, q, (size_t)n) != 0) {
    load_db_error(u, c, "load: cannot read information_schema.COLUMNS", err);
    return -1;
  }
  MYSQL_RES *r = mysql_store_result(c);
  if (!r) {
    load_db_error(u, c, "load: cannot read information_schema.COLUMNS", err);
    return -1;
  }
  out->v = calloc(mysql_num_rows(r) + 1, sizeof *out->v);
  MYSQL_ROW row;
  while (out->v && (row = mysql_fetch_row(r)) != NULL) {
    load_col *col = &out->v[out->n++];
    col->name = strdup(row[0] ? row[0] : "");
    col->type = strdup(row[1] ? row[1] : "");
    col->nullable = row[2] && row[2][0] == '1';
    col->pri = row[3] && row[3][0] == '1';
    col->generated = row[4] && row[4][0] == '1';
    col->fillable = row[5] && row[5][0] == '1';
    if (!col->name || !col->type)
      break;
  }
  bool ok = out->v && (out->n == 0 || (out->v[out->n - 1].name && out->v[out->n - 1].type));
  mysql_free_result(r);
  if (!ok) {
    load_cols_free(out);
    u->host->error_make(u->ctx, err, DM_ERR_NO_MEMORY, NULL, "load: no memory");
    return -1;
  }
  return 0;
}

static void load_schema_describe(const load_col *c, char *out, size_t len) {
  snprintf(out, len, "%s %s%s", c->type, c->nullable ? "NULL" : "NOT NULL",
           c->pri ? " PRIMARY KEY" : "");
}

/* The first difference between the dump's columns and the target's, or false if none. The
 * target may have more columns than the dump (DM's rule: rows are written by column name, so an
 * extra column takes its default) when an INSERT that leaves them out fills them. */
/* Is `name` one of the route's extract columns of t (",`a`,`b`" in t->ext_cols)? */
static bool load_schema_is_extract(const load_table *t, const char *name) {
  char q[2 * LOAD_NAME_MAX + 4] = ",";
  dm_db_quoted(name, q + 1, sizeof q - 1);
  size_t n = strlen(q);
  for (const char *p = t->ext_cols; p && (p = strstr(p, q)) != NULL; p++)
    if (p[n] == ',' || p[n] == '\0')
      return true;
  return false;
}

static bool load_schema_diff(const load_table *tb, const load_cols *dump, const load_cols *target,
                             char *out, size_t len) {
  char a[256], b[256];
  for (int i = 0; i < dump->n; i++) {
    const load_col *d = &dump->v[i], *t = NULL;
    for (int k = 0; k < target->n && !t; k++)
      if (strcasecmp(target->v[k].name, d->name) == 0)
        t = &target->v[k];
    load_schema_describe(d, a, sizeof a);
    if (!t) {
      snprintf(out, len, "column `%s` (%s in the dump) is missing on the target", d->name, a);
      return true;
    }
    load_schema_describe(t, b, sizeof b);
    if (strcmp(a, b) != 0) {
      snprintf(out, len, "column `%s` is %s on the target but %s in the dump", d->name, b, a);
      return true;
    }
  }
  int n_ext = 0;
  for (int k = 0; k < target->n; k++) {
    bool found = false;
    for (int i = 0; i < dump->n && !found; i++)
      found = strcasecmp(target->v[k].name, dump->v[i].name) == 0;
    if (!found && load_schema_is_extract(tb, target->v[k].name)) {
      n_ext++; /* filled by the route */
      continue;
    }
    if (!found && !target->v[k].fillable) {
      load_schema_describe(&target->v[k], b, sizeof b);
      snprintf(out, len,
               "column `%s` (%s) exists on the target but not in the dump, and has no default "
               "to fill it with",
               target->v[k].name, b);
      return true;
    }
  }
  if (n_ext < tb->ext_n) {
    snprintf(out, len, "the route's extract columns (%s) are not all on the target",
             tb->ext_cols + 1);
    return true;
  }
  return false;
}

/* The dump's column list "(`a`,`b`)" (generated columns left out, in the dump's order) onto t:
 * the data lines are written with it (load_worker.c), so rows go in by column name. */
static int load_schema_collist(load_unit *u, const load_cols *dump, load_table *t, dm_error *err) {
  size_t cap = 3;
  for (int i = 0; i < dump->n; i++)
    cap += 2 * strlen(dump->v[i].name) + 3;
  char *p = malloc(cap), q[2 * LOAD_NAME_MAX + 3];
  if (!p) {
    u->host->error_make(u->ctx, err, DM_ERR_NO_MEMORY, NULL, "load: no memory");
    return -1;
  }
  size_t n = 0;
  p[n++] = '(';
  for (int i = 0; i < dump->n; i++) {
    if (dump->v[i].generated)
      continue;
    if (n > 1)
      p[n++] = ',';
    dm_db_quoted(dump->v[i].name, q, sizeof q);
    memcpy(p + n, q, strlen(q));
    n += strlen(q);
  }
  p[n++] = ')';
  p[n] = '\0';
  free(t->cols);
  t->cols = p;
  return 0;
}

/* Reads the columns of a table made from the dump's CREATE TABLE into t's column list. */
static int load_schema_read_collist(load_unit *u, MYSQL *c, const char *db, const char *table,
                                    load_table *t, dm_error *err) {
  load_cols cols;
  if (load_schema_columns(u, c, db, table, &cols, err) != 0)
    return -1;
  int rc = load_schema_collist(u, &cols, t, err);
  load_cols_free(&cols);
  return rc;
}

static int load_schema_exists(load_unit *u, MYSQL *c, const char *db, const char *table,
                              bool *exists, dm_error *err) {
  char q[512 + 4 * LOAD_NAME_MAX], ldb[2 * LOAD_NAME_MAX + 3], ltb[2 * LOAD_NAME_MAX + 3];
  load_db_literal(c, db, ldb, sizeof ldb);
  load_db_literal(c, table, ltb, sizeof ltb);
  int n = snprintf(q, sizeof q,
                   "SELECT 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s AND "
                   "TABLE_NAME = %s",
                   ldb, ltb);
  if (mysql_real_query(c, q, (size_t)n) != 0) {
    load_db_error(u, c, "load: cannot read information_schema.TABLES", err);
    return -1;
  }
  MYSQL_RES *r = mysql_store_result(c);
  if (!r) {
    load_db_error(u, c, "load: cannot read information_schema.TABLES", err);
    return -1;
  }
  *exists = mysql_num_rows(r) > 0;
  mysql_free_result(r);
  return 0;
}

/* Creates the dump's table in the scratch schema and compares it with the target's; sets t's
 * column list from it. */
static int load_schema_compare(load_unit *u, MYSQL *c, load_table *t, const char *rest,
                               dm_error *err) {
  char name[64], qs[2 * LOAD_NAME_MAX + 3], qn[160], head[3 * LOAD_NAME_MAX], what[1024];
  snprintf(name, sizeof name, "%s_%u", u->scratch_prefix, u->scratch_seq++);
  dm_db_quoted(u->scratch, qs, sizeof qs);
  dm_db_quoted(name, qn, sizeof qn);
  if (load_schema_create_db(u, c, u->scratch, NULL, err) != 0)
    return -1;
  snprintf(head, sizeof head, "DROP TABLE IF EXISTS %s.%s", qs, qn);
  if (load_db_exec(u, c, head, strlen(head), "load: cannot drop a scratch table", err) != 0)
    return -1;
  snprintf(head, sizeof head, "CREATE TABLE %s.%s", qs, qn);
  snprintf(what, sizeof what,
           "load: cannot create `%s`.`%s` of the dump (%s) in the scratch schema", t->db, t->table,
           t->schema_file);
  if (load_schema_exec2(u, c, head, rest, what, err) != 0)
    return -1;
  load_cols dump, target;
  int rc = load_schema_columns(u, c, u->scratch, name, &dump, err);
  if (rc == 0) {
    rc = load_schema_columns(u, c, t->tdb, t->ttable, &target, err);
    if (rc == 0) {
      char diff[1200];
      if (load_schema_diff(t, &dump, &target, diff, sizeof diff)) {
        const dm_db_endpoint *ep = u->host->target_db(u->ctx);
        u->host->error_make(u->ctx, err, DM_ERR_LOAD_TABLE_MISMATCH, NULL,
                            "load: table `%s`.`%s` exists on the target %s:%d with another "
                            "definition than `%s`.`%s` of the dump: %s",
                            t->tdb, t->ttable, ep->host, ep->port, t->db, t->table, diff);
        rc = -1;
      }
      if (rc == 0)
        rc = load_schema_collist(u, &dump, t, err);
      load_cols_free(&target);
    }
    load_cols_free(&dump);
  }
  snprintf(head, sizeof head, "DROP TABLE IF EXISTS %s.%s", qs, qn);
  dm_error ignored;
  if (load_db_exec(u, c, head, strlen(head), "load: cannot drop a scratch table",
                   rc == 0 ? err : &ignored) != 0 &&
      rc == 0)
    rc = -1;
  return rc;
}

static int load_schema_table(load_unit *u, MYSQL *c, load_dump *d, load_table *t, dm_error *err) {
  char *sql;
  const char *rest;
  if (load_schema_read(u, d, t->schema_file, "CREATE TABLE ", t->table, &sql, &rest, err) != 0)
    return -1;
  int rc = 0;
  bool exists = false;
  if (rc == 0)
    rc = load_schema_create_db(u, c, t->tdb, NULL, err);
  if (rc == 0)
    rc = load_schema_exists(u, c, t->tdb, t->ttable, &exists, err);
  if (rc == 0 && exists) {
    rc = load_schema_compare(u, c, t, rest, err);
  } else if (rc == 0 && t->ext_cols) {
    /* the dump's CREATE TABLE has no extract columns: the merged table is the user's to make */
    const dm_db_endpoint *ep = u->host->target_db(u->ctx);
    u->host->error_make(u->ctx, err, DM_ERR_LOAD_TABLE_MISMATCH, NULL,
                        "load: table `%s`.`%s` (for `%s`.`%s` of the dump) is not on the target "
                        "%s:%d, and its route fills extract columns (%s) the dump's table lacks: "
                        "create it on the target with those columns before the task starts",
                        t->tdb, t->ttable, t->db, t->table, ep->host, ep->port, t->ext_cols + 1);
    rc = -1;
  } else if (rc == 0) {
    char head[5 * LOAD_NAME_MAX], qd[2 * LOAD_NAME_MAX + 3], qt[2 * LOAD_NAME_MAX + 3];
    char what[3 * LOAD_NAME_MAX + 64];
    /* IF NOT EXISTS: another subtask loading into the same (merged) table may create it
     * between the check above and here; it is then compared as an existing table. */
    snprintf(head, sizeof head, "CREATE TABLE IF NOT EXISTS %s.%s",
             dm_db_quoted(t->tdb, qd, sizeof qd), dm_db_quoted(t->ttable, qt, sizeof qt));
    snprintf(what, sizeof what, "load: cannot create table `%s`.`%s` from %s", t->tdb, t->ttable,
             t->schema_file);
    char *stripped = NULL, *keys = NULL;
    if (u->cfg.defer_keys && load_keys_split(rest, &stripped, &keys) != 0) {
      u->host->error_make(u->ctx, err, DM_ERR_NO_MEMORY, NULL, "load: no memory");
      rc = -1;
    }
    /* Recorded before the table exists without them: a crash in between loses no key. */
    if (rc == 0 && keys)
      rc = load_keys_record(u, c, t, keys, err);
    if (rc == 0)
      rc = load_schema_exec2(u, c, head, stripped ? stripped : rest, what, err);
    /* A warning (1050, the table exists) says it was not ours to create: compare it. */
    if (rc == 0)
      rc = mysql_warning_count(c) > 0 ? load_schema_compare(u, c, t, rest, err)
                                      : load_schema_read_collist(u, c, t->tdb, t->ttable, t, err);
    if (rc == 0 && keys) {
      load_table *g = &d->tables[t->group];
      free(g->keys);
      g->keys = keys;
      keys = NULL;
    }
    free(stripped);
    free(keys);
  }
  free(sql);
  return rc;
}

static int load_schema_apply_all(load_unit *u, MYSQL *c, load_dump *d, dm_error *err) {
  for (int i = 0; i < d->n_dbs; i++) {
    const char *db = d->dbs[i];
    if (!u->host->table_allowed(u->ctx, db, NULL))
      continue;
    char tdb[LOAD_NAME_MAX], unused[LOAD_NAME_MAX];
    u->host->route_table(u->ctx, db, NULL, tdb, sizeof tdb, unused, sizeof unused);
    char *sql = NULL;
    const char *rest;
    if (load_schema_read(u, d, d->db_files[i], "CREATE DATABASE IF NOT EXISTS ", db, &sql, &rest,
                         err) != 0)
      return -1;
    int rc = load_schema_create_db(u, c, tdb, rest, err);
    free(sql);
    if (rc != 0)
      return -1;
  }
  for (int i = 0; i < d->n_tables; i++) {
    if (u->host->stop_requested(u->ctx))
      return 1;
    if (d->tables[i].allowed && load_schema_table(u, c, d, &d->tables[i], err) != 0)
      return -1;
  }
  return 0;
}

int load_schema_apply(load_unit *u, MYSQL *c, load_dump *d, dm_error *err) {
  /* asked at each run: update-task may have changed it */
  if (dm_host_collation_strict(u->host, u->ctx) && load_db_source_collations(u, &u->coll, err) != 0)
    return -1;
  int rc = load_schema_apply_all(u, c, d, err);
  dm_collations_free(u->coll);
  u->coll = NULL;
  return rc;
}

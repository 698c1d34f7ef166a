/*
 * binlog-schema on the schema tracker (unit.h's schema_op slot, ABI 1.2; DM's OperateSchema):
 * list the schemas and tables it holds, show a table's structure, replace it (a CREATE TABLE, the
 * source's table or the routed target table) or forget it. The host calls it on a paused
 * instance only: the run's tracker is gone (sync_run frees it), so a tracker of the call's own
 * reads and writes the shadows, and the next run reads them afresh. Names asked and answered are
 * the source's; a shadow schema's own name is a hash (sync_tracker.h), so the source's name is
 * read from its comment (trk_stamp_schema), else found among the source's schemas by that hash.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mysqld_error.h>

#include "sync.h"
#include "sync_tracker_internal.h"

/* The copy a new structure is made in before it replaces the shadow (a refused statement leaves
 * the old one). Long, as TRK_AFTER: source tables of that name are never shadowed. */
#define TOP_COPY "_dmt_schema_op_copy"

typedef struct top_call {
  sync_unit *u;
  sync_tracker *tr;
  MYSQL *c; /* the target */
  const dm_schema_req *req;
  dm_schema_answer *ans;
  dm_error *err;
} top_call;

static int top_fail(top_call *k, int32_t code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int top_fail(top_call *k, int32_t code, const char *fmt, ...) {
  char msg[DM_ERROR_MESSAGE_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  k->u->host->error_make(k->u->ctx, k->err, code, NULL, "%s", msg);
  return -1;
}

static int top_db_failed(top_call *k, MYSQL *c, const char *what) {
  sync_db_error(k->u, c, what, k->err);
  return -1;
}

/* DROP TABLE IF EXISTS `shadow`.`table` on the target: 0, or -1 with *err saying `what`. */
static int top_drop(top_call *k, const char *shadow, const char *table, const char *what) {
  dm_buf q = {0};
  if (dm_buf_puts(&q, "DROP TABLE IF EXISTS ") < 0 || sync_sql_qualified(&q, shadow, table) < 0) {
    dm_buf_free(&q);
    return sync_nomem(k->u, k->err);
  }
  unsigned e = trk_run(k->c, q.p, q.len);
  dm_buf_free(&q);
  return e ? top_db_failed(k, k->c, what) : 0;
}

/* The result of q on c, or NULL (mysql_errno(c) says why). */
static MYSQL_RES *top_query(MYSQL *c, const dm_buf *q) {
  if (mysql_real_query(c, q->p, (unsigned long)q->len) != 0)
    return NULL;
  return mysql_store_result(c);
}

static int top_cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Is `name` the shadow of source schema `db`? */
static bool top_shadow_of(const sync_tracker *tr, const char *name, const char *db) {
  char want[SYNC_NAME_MAX];
  trk_shadow_schema(tr, db, want, sizeof want);
  return strcmp(want, name) == 0;
}

static int top_list_schemas(top_call *k) {
  sync_tracker *tr = k->tr;
  dm_buf q = {0};
  char lit[64];
  mysql_real_escape_string(k->c, lit, tr->prefix, (unsigned long)strlen(tr->prefix));
  size_t n = strlen(tr->prefix);
  int rc = -1;
  MYSQL_RES *r = NULL, *sr = NULL;
  MYSQL *sc = NULL;
  char **names = NULL, **left = NULL; /* resolved, and shadows still to resolve */
  size_t n_names = 0, n_left = 0;
  bool comments = true;
  if (dm_buf_printf(&q,
                    "SELECT SCHEMA_NAME, SCHEMA_COMMENT FROM information_schema.SCHEMATA WHERE "
                    "LEFT(SCHEMA_NAME, %zu) = '%s' ORDER BY SCHEMA_NAME",
                    n, lit) < 0)
    goto nomem;
  if (!(r = top_query(k->c, &q)) && mysql_errno(k->c) == ER_BAD_FIELD_ERROR) {
    comments = false; /* MySQL: no schema comments */
    dm_buf_reset(&q);
    if (dm_buf_printf(&q,
                      "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE LEFT(SCHEMA_NAME, "
                      "%zu) = '%s' ORDER BY SCHEMA_NAME",
                      n, lit) < 0)
      goto nomem;
    r = top_query(k->c, &q);
  }
  if (!r) {
    top_db_failed(k, k->c, "binlog-schema list: cannot list the tracker's shadow schemas");
    goto out;
  }
  uint64_t rows = mysql_num_rows(r);
  names = calloc(rows + 1, sizeof *names);
  left = calloc(rows + 1, sizeof *left);
  if (!names || !left)
    goto nomem;
  MYSQL_ROW row;
  while ((row = mysql_fetch_row(r))) {
    const char *comment = comments && row[1] ? row[1] : "";
    if (comment[0] && top_shadow_of(tr, row[0], comment)) {
      if (!(names[n_names++] = strdup(comment)))
        goto nomem;
    } else if (!(left[n_left++] = strdup(row[0])))
      goto nomem;
  }
  if (n_left) { /* no (or another) comment: the source's schemas, hashed */
    if (!(sc = sync_db_connect_source(k->u, k->err)))
      goto out;
    if (mysql_query(sc, "SHOW DATABASES") != 0 || !(sr = mysql_store_result(sc))) {
      dm_db_error(sc, DM_DB_SOURCE, k->err, DM_ERR_DB_QUERY,
                  "binlog-schema list: cannot list the source's schemas");
      goto out;
    }
    while ((row = mysql_fetch_row(sr)))
      for (size_t i = 0; i < n_left; i++)
        if (left[i] && row[0] && top_shadow_of(tr, left[i], row[0])) {
          free(left[i]);
          left[i] = NULL;
          if (!(names[n_names++] = strdup(row[0])))
            goto nomem;
        }
    for (size_t i = 0; i < n_left; i++)
      if (left[i])
        k->u->host->logf(k->u->ctx, DM_LOG_WARN,
                         "sync: binlog-schema list: shadow schema `%s` belongs to no schema of "
                         "the source now and has no comment naming it: left out",
                         left[i]);
  }
  qsort(names, n_names, sizeof *names, top_cmp);
  for (size_t i = 0; i < n_names; i++)
    k->ans->put(k->ans, names[i]);
  rc = 0;
  goto out;
nomem:
  rc = sync_nomem(k->u, k->err);
out:
  if (r)
    mysql_free_result(r);
  if (sr)
    mysql_free_result(sr);
  sync_db_close(k->u, sc);
  for (size_t i = 0; names && i < n_names; i++)
    free(names[i]);
  for (size_t i = 0; left && i < n_left; i++)
    free(left[i]);
  free(names);
  free(left);
  dm_buf_free(&q);
  return rc;
}

/* Does the tracker have a shadow schema for db? 1 yes, 0 no, -1 with *err. */
static int top_has_schema(top_call *k, const char *shadow) {
  char lit[2 * SYNC_NAME_MAX + 1];
  mysql_real_escape_string(k->c, lit, shadow, (unsigned long)strlen(shadow));
  dm_buf q = {0};
  if (dm_buf_printf(&q, "SELECT 1 FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = '%s'", lit) <
      0)
    return sync_nomem(k->u, k->err);
  MYSQL_RES *r = top_query(k->c, &q);
  dm_buf_free(&q);
  if (!r)
    return top_db_failed(k, k->c, "binlog-schema: cannot read the tracker's shadow schemas");
  int has = mysql_num_rows(r) > 0;
  mysql_free_result(r);
  return has;
}

static int top_list_tables(top_call *k) {
  const char *db = k->req->db;
  char shadow[SYNC_NAME_MAX], lit[2 * SYNC_NAME_MAX + 1];
  trk_shadow_schema(k->tr, db, shadow, sizeof shadow);
  int has = trk_skip_schema(k->tr, db) ? 0 : top_has_schema(k, shadow);
  if (has < 0)
    return -1;
  if (!has)
    return top_fail(k, DM_ERR_NOT_FOUND,
                    "binlog-schema list: the schema tracker holds no schema `%s` (`dmctl "
                    "binlog-schema list` names the ones it holds)",
                    db);
  mysql_real_escape_string(k->c, lit, shadow, (unsigned long)strlen(shadow));
  dm_buf q = {0};
  /* the tracker's own scratch copies (names starting _dmt_) are no tables of the source */
  if (dm_buf_printf(&q,
                    "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = '%s' "
                    "AND LEFT(TABLE_NAME, 5) <> '_dmt_' ORDER BY TABLE_NAME",
                    lit) < 0)
    return sync_nomem(k->u, k->err);
  MYSQL_RES *r = top_query(k->c, &q);
  dm_buf_free(&q);
  if (!r)
    return top_db_failed(k, k->c, "binlog-schema list: cannot list a shadow schema's tables");
  MYSQL_ROW row;
  while ((row = mysql_fetch_row(r)))
    k->ans->put(k->ans, row[0] ? row[0] : "");
  mysql_free_result(r);
  return 0;
}

/* SHOW CREATE TABLE `db`.`table` on c into *out (malloc'd); 1 when there is no such table. */
static int top_show_create(top_call *k, MYSQL *c, dm_db_side side, const char *db,
                           const char *table, char **out) {
  dm_buf q = {0};
  *out = NULL;
  if (dm_buf_puts(&q, "SHOW CREATE TABLE ") < 0 || sync_sql_qualified(&q, db, table) < 0)
    return sync_nomem(k->u, k->err);
  MYSQL_RES *r = top_query(c, &q);
  dm_buf_free(&q);
  if (!r) {
    unsigned e = mysql_errno(c);
    if (e == ER_NO_SUCH_TABLE || e == ER_BAD_DB_ERROR)
      return 1;
    dm_db_error(c, side, k->err, DM_ERR_DB_QUERY, "binlog-schema: cannot read `%s`.`%s`", db,
                table);
    return -1;
  }
  MYSQL_ROW row = mysql_fetch_row(r);
  if (row && mysql_num_fields(r) >= 2 && row[1])
    *out = strdup(row[1]);
  mysql_free_result(r);
  if (!*out)
    return row ? sync_nomem(k->u, k->err) : 1;
  return 0;
}

static int top_get(top_call *k) {
  const char *db = k->req->db, *table = k->req->table;
  char shadow[SYNC_NAME_MAX], *sql = NULL;
  trk_shadow_schema(k->tr, db, shadow, sizeof shadow);
  int rc =
      trk_skip_schema(k->tr, db) ? 1 : top_show_create(k, k->c, DM_DB_TARGET, shadow, table, &sql);
  if (rc < 0)
    return -1;
  if (rc == 1) {
    char tdb[SYNC_NAME_MAX], tt[SYNC_NAME_MAX], where[2 * SYNC_NAME_MAX + 8];
    sync_route(k->u, db, table, tdb, tt);
    snprintf(where, sizeof where, "`%s`.`%s`", tdb, tt);
    return top_fail(k, DM_ERR_NOT_FOUND,
                    "binlog-schema list: the schema tracker holds no structure of `%s`.`%s`: it "
                    "learns it from the binlog, or from the target's %s when it is first needed",
                    db, table, where);
  }
  /* SHOW CREATE TABLE names the table alone (`t`), which is the source's name already */
  k->ans->put(k->ans, sql);
  free(sql);
  return 0;
}

/* The copy's name for the subject of the statement, every other name to its shadow schema. */
typedef struct top_route_arg {
  sync_tracker *tr;
  const char *db, *table; /* the subject as written (its schema the default one when unnamed) */
  const char *into;       /* the schema asked for: the subject goes to its shadow, as DM does */
} top_route_arg;

static void top_route(void *arg, const char *schema, const char *table, char *out_schema,
                      size_t schema_len, char *out_table, size_t table_len) {
  top_route_arg *a = arg;
  bool subject = table && strcmp(schema, a->db) == 0 && strcmp(table, a->table) == 0;
  trk_shadow_schema(a->tr, subject ? a->into : schema, out_schema, schema_len);
  if (subject)
    snprintf(out_table, table_len, "%s", TOP_COPY);
}

/* The new structure into the copy TOP_COPY in the shadow schema of db. */
static int top_make_copy(top_call *k, const char *shadow, const char *sql) {
  const dm_schema_req *req = k->req;
  char msg[256] = "";
  sync_ddl d = {0};
  dm_buf q = {0};
  int rc = -1;
  if (sync_ddl_parse(sql, strlen(sql), req->db, &d, msg, sizeof msg) < 0 || d.n != 1 ||
      d.stmts[0].kind != SYNC_DDL_CREATE_TABLE || d.stmts[0].as_select || d.stmts[0].temporary) {
    top_fail(k, DM_ERR_SYNC_SCHEMA,
             "binlog-schema update `%s`.`%s`: the schema is not one CREATE TABLE statement "
             "(%s): give a file holding the table's CREATE TABLE as SHOW CREATE TABLE prints it",
             req->db, req->table, msg[0] ? msg : "another statement, or more than one");
    goto out;
  }
  top_route_arg ra = {.tr = k->tr,
                      .db = d.stmts[0].subject.schema,
                      .table = d.stmts[0].subject.table,
                      .into = req->db};
  if (top_drop(k, shadow, TOP_COPY, "binlog-schema update: cannot drop an old copy") < 0)
    goto out;
  if (sync_ddl_rewrite(&d.stmts[0], top_route, &ra, false, &q) < 0) {
    top_fail(k, DM_ERR_SYNC_SCHEMA,
             "binlog-schema update `%s`.`%s`: the statement's names cannot be rewritten to the "
             "tracker's shadow: check the names in the file",
             req->db, req->table);
    goto out;
  }
  if (trk_run(k->c, q.p, q.len) != 0) {
    char why[600];
    snprintf(why, sizeof why, "%s", mysql_error(k->c));
    top_fail(k, DM_ERR_SYNC_SCHEMA,
             "binlog-schema update `%s`.`%s`: the target refused the CREATE TABLE on the "
             "tracker's shadow (%s): fix the statement; the tracked structure is unchanged",
             req->db, req->table, why);
    goto out;
  }
  rc = 0;
out:
  sync_ddl_free(&d);
  dm_buf_free(&q);
  return rc;
}

static int top_set(top_call *k) {
  const dm_schema_req *req = k->req;
  const char *db = req->db, *table = req->table;
  char shadow[SYNC_NAME_MAX], tdb[SYNC_NAME_MAX], tt[SYNC_NAME_MAX];
  char *fetched = NULL;
  MYSQL *sc = NULL;
  dm_buf q = {0};
  int rc = -1;
  if (trk_skip_schema(k->tr, db) || strncmp(table, "_dmt_", 5) == 0)
    return top_fail(k, DM_ERR_CONTROL_REQUEST,
                    "binlog-schema update `%s`.`%s`: the schema tracker keeps no structure of "
                    "this table (a system, meta or tracker schema or name)",
                    db, table);
  trk_shadow_schema(k->tr, db, shadow, sizeof shadow);
  sync_route(k->u, db, table, tdb, tt);
  if (trk_ensure_schema(k->tr, k->c, db, k->err) < 0)
    return -1;
  if (req->from == DM_SCHEMA_FROM_DOWNSTREAM) {
    /* as the tracker learns a table from the target: a copy of the routed table's structure */
    if (top_drop(k, shadow, TOP_COPY, "binlog-schema update: cannot drop an old copy") < 0)
      goto out;
    if (dm_buf_puts(&q, "CREATE TABLE ") < 0 || sync_sql_qualified(&q, shadow, TOP_COPY) < 0 ||
        dm_buf_puts(&q, " LIKE ") < 0 || sync_sql_qualified(&q, tdb, tt) < 0)
      goto nomem;
    unsigned e = trk_run(k->c, q.p, q.len);
    if (e == ER_NO_SUCH_TABLE || e == ER_BAD_DB_ERROR) {
      char where[2 * SYNC_NAME_MAX + 8];
      snprintf(where, sizeof where, "`%s`.`%s`", tdb, tt);
      top_fail(k, DM_ERR_NOT_FOUND,
               "binlog-schema update `%s`.`%s` --from-target: the target has no table %s (the "
               "routed table): create it, or give the structure as a file",
               db, table, where);
      goto out;
    }
    if (e) {
      top_db_failed(k, k->c, "binlog-schema update: cannot copy the target table's structure");
      goto out;
    }
  } else {
    const char *sql = req->sql;
    if (req->from == DM_SCHEMA_FROM_UPSTREAM) {
      if (!(sc = sync_db_connect_source(k->u, k->err)))
        goto out;
      int got = top_show_create(k, sc, DM_DB_SOURCE, db, table, &fetched);
      if (got < 0)
        goto out;
      if (got == 1) {
        top_fail(k, DM_ERR_NOT_FOUND,
                 "binlog-schema update `%s`.`%s` --from-source: the source has no such table "
                 "now: give its structure as a file",
                 db, table);
        goto out;
      }
      sql = fetched;
    } else if (req->from != DM_SCHEMA_FROM_SQL || !sql || !sql[0]) {
      top_fail(k, DM_ERR_CONTROL_REQUEST,
               "binlog-schema update `%s`.`%s`: no schema given: name a file holding a "
               "CREATE TABLE, or --from-source, or --from-target",
               db, table);
      goto out;
    }
    if (top_make_copy(k, shadow, sql) < 0)
      goto out;
  }
  /* the copy replaces the shadow (nothing of the instance runs meanwhile: commands held) */
  if (top_drop(k, shadow, table, "binlog-schema update: cannot drop the old shadow table") < 0)
    goto out;
  dm_buf_reset(&q);
  if (dm_buf_puts(&q, "RENAME TABLE ") < 0 || sync_sql_qualified(&q, shadow, TOP_COPY) < 0 ||
      dm_buf_puts(&q, " TO ") < 0 || sync_sql_qualified(&q, shadow, table) < 0)
    goto nomem;
  if (trk_run(k->c, q.p, q.len) != 0) {
    top_db_failed(k, k->c, "binlog-schema update: cannot put the new shadow table in place");
    goto out;
  }
  k->u->host->logf(k->u->ctx, DM_LOG_INFO,
                   "sync: binlog-schema update: `%s`.`%s` now has the structure %s", db, table,
                   req->from == DM_SCHEMA_FROM_DOWNSTREAM ? "of the target's table"
                   : req->from == DM_SCHEMA_FROM_UPSTREAM ? "of the source's table"
                                                          : "given");
  rc = 0;
  goto out;
nomem:
  rc = sync_nomem(k->u, k->err);
out:
  free(fetched);
  sync_db_close(k->u, sc);
  dm_buf_free(&q);
  return rc;
}

static int top_remove(top_call *k) {
  const char *db = k->req->db, *table = k->req->table;
  if (trk_skip_schema(k->tr, db) || strncmp(table, "_dmt_", 5) == 0)
    return 0;
  char shadow[SYNC_NAME_MAX];
  trk_shadow_schema(k->tr, db, shadow, sizeof shadow);
  if (top_drop(k, shadow, table, "binlog-schema delete: cannot drop the shadow table") < 0)
    return -1;
  k->u->host->logf(k->u->ctx, DM_LOG_INFO,
                   "sync: binlog-schema delete: `%s`.`%s` forgotten; learnt again when next "
                   "needed",
                   db, table);
  return 0;
}

int sync_schema_op(void *self, const dm_schema_req *req, dm_schema_answer *answer, dm_error *err) {
  sync_unit *u = self;
  top_call k = {.u = u, .req = req, .ans = answer, .err = err};
  bool named = req->op == DM_SCHEMA_LIST_SCHEMAS || (req->db && req->db[0]);
  bool tabled = req->op == DM_SCHEMA_LIST_SCHEMAS || req->op == DM_SCHEMA_LIST_TABLES ||
                (req->table && req->table[0]);
  if (req->op < DM_SCHEMA_LIST_SCHEMAS || req->op > DM_SCHEMA_REMOVE || !named || !tabled) {
    u->host->error_make(u->ctx, err, DM_ERR_CONTROL_REQUEST, NULL,
                        "binlog-schema: operation %u needs %s", (unsigned)req->op,
                        !named ? "a schema" : "a table");
    return -1;
  }
  if (sync_tracker_new(u, &k.tr) < 0)
    return sync_nomem(u, err);
  int rc = -1;
  if ((k.c = sync_db_connect_target(u, err))) {
    switch (req->op) {
    case DM_SCHEMA_LIST_SCHEMAS:
      rc = top_list_schemas(&k);
      break;
    case DM_SCHEMA_LIST_TABLES:
      rc = top_list_tables(&k);
      break;
    case DM_SCHEMA_GET:
      rc = top_get(&k);
      break;
    case DM_SCHEMA_SET:
      rc = top_set(&k);
      break;
    default:
      rc = top_remove(&k);
      break;
    }
  }
  /* the rows' keys and columns are read again for this table at the next run */
  if (rc == 0 && (req->op == DM_SCHEMA_SET || req->op == DM_SCHEMA_REMOVE))
    sync_schema_invalidate(u->schema, req->db, req->table);
  sync_db_close(u, k.c);
  sync_tracker_free(k.tr);
  return rc;
}

/*
 * DM's expression filters (docs/sync.md, "Expression filters"): a row change of a source table
 * whose values make a rule's SQL expression true is not replayed.
 *
 * DM evaluates the expressions with TiDB's expression engine on the row's values typed by the
 * tracked table. dmhost has MariaDB at hand, so the target evaluates them: each row becomes a
 * derived table of typed literals named as the source's columns,
 *   SELECT ((e1) <=> 1) OR ((e2) <=> 1) FROM (SELECT 5 AS `c`, CAST('..' AS DATETIME(0)) AS `ts`)
 * and the server's functions, comparisons and collations apply as written: the expression means
 * on the row what it would mean in a WHERE clause on the source table. Typed literals: numbers
 * as they are (sync_sql.c), DATE/TIME/DATETIME cast with the column's fraction digits, TIMESTAMP
 * as FROM_UNIXTIME of its epoch (so it reads in the session's zone), text as hex bytes in the
 * column's charset with its collation (so 'Müller' in a latin1 column compares as latin1 text,
 * whatever the connection's charset). True is DM's: the value 1 (`<=> 1`; NULL is not true).
 *
 * The session: a connection of its own to the target (the coordinator's thread owns it), at
 * SET NAMES utf8mb4 (a task file is UTF-8, so are the expressions' literals) and the task's
 * `timezone` (else '+00:00'), which NOW() and TIMESTAMP values read in. No multi-statements: an
 * expression was checked as a condition on a row when the file was read (dm_db_condition_check),
 * and whatever it holds runs as one SELECT.
 *
 * A rule naming a column the table does not have (DM: "unknown column") skips nothing and is
 * logged, until the table's structure changes (its table map's signature). Any other error of
 * the server (a syntax error, an unknown function) stops the sync naming the rule: a filter that
 * cannot be evaluated must not let rows through silently, nor drop them.
 *
 * The cost: one round trip to the target per row change of a table with a rule of that kind (the
 * other tables, and the other kinds of change, cost nothing).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dmhost/db.h"
#include "sync.h"

#define SYNC_EXPR_RULES_MAX 64 /* per table */
#define SYNC_EXPR_ER_BAD_FIELD 1054

typedef struct sync_expr_rule {
  char *name;
  char *e[2]; /* insert/delete: e[0]; update: e[0] on the old row, e[1] on the new (NULL: holds) */
  bool dead[2]; /* names a column the table lacks (as of sig): false, as DM */
} sync_expr_rule;

struct sync_expr {
  sync_expr_rule *rules[3]; /* by kind: 0 insert, 1 update, 2 delete */
  int n[3];
  uint64_t sig; /* table map signature the dead flags were found under */
  uint64_t filtered[3];
};

static void expr_rule_clear(sync_expr_rule *r) {
  free(r->name);
  free(r->e[0]);
  free(r->e[1]);
}

void sync_expr_free(sync_expr *x) {
  if (!x)
    return;
  for (int k = 0; k < 3; k++) {
    for (int i = 0; i < x->n[k]; i++)
      expr_rule_clear(&x->rules[k][i]);
    free(x->rules[k]);
  }
  free(x);
}

static char *expr_dup(const char *s) {
  return s && *s ? strdup(s) : NULL;
}

/* Adds the rule's expressions of kind k (NULL a and b: the rule has none of that kind). */
static int expr_add(sync_expr *x, int k, const char *name, const char *a, const char *b) {
  if (!a && !b)
    return 0;
  sync_expr_rule *p = realloc(x->rules[k], (size_t)(x->n[k] + 1) * sizeof *p);
  if (!p)
    return -1;
  x->rules[k] = p;
  sync_expr_rule *r = &p[x->n[k]];
  memset(r, 0, sizeof *r);
  r->name = strdup(name ? name : "");
  r->e[0] = expr_dup(a);
  r->e[1] = expr_dup(b);
  x->n[k]++;
  if (!r->name || (a && *a && !r->e[0]) || (b && *b && !r->e[1]))
    return -1;
  return 0;
}

int sync_expr_table(sync_unit *u, sync_table *t, dm_error *err) {
  sync_expr_free(t->expr);
  t->expr = NULL;
  if (!DM_HOST_HAS(u->host, expr_filters))
    return 0;
  dm_expr_filter f[SYNC_EXPR_RULES_MAX];
  size_t n = u->host->expr_filters(u->ctx, t->db, t->name, f, SYNC_EXPR_RULES_MAX);
  if (n == 0)
    return 0;
  if (n > SYNC_EXPR_RULES_MAX) {
    u->host->error_make(u->ctx, err, DM_ERR_CONFIG_INVALID, NULL,
                        "sync: `%s`.`%s` has %zu expression-filter rules; at most %d are taken "
                        "per table: join conditions of a kind with OR",
                        t->db, t->name, n, SYNC_EXPR_RULES_MAX);
    return -1;
  }
  sync_expr *x = calloc(1, sizeof *x);
  if (!x)
    return sync_nomem(u, err);
  t->expr = x;
  for (size_t i = 0; i < n; i++)
    if (expr_add(x, 0, f[i].name, f[i].insert_expr, NULL) < 0 ||
        expr_add(x, 1, f[i].name, f[i].update_old_expr, f[i].update_new_expr) < 0 ||
        expr_add(x, 2, f[i].name, f[i].delete_expr, NULL) < 0)
      return sync_nomem(u, err);
  return 0;
}

bool sync_expr_has(const sync_table *t, int k) {
  return t->expr && t->expr->n[k] > 0;
}

/* The session the expressions run in (module comment); opened at the first use. */
static MYSQL *expr_conn(sync_unit *u, dm_error *err) {
  if (u->expr_conn)
    return u->expr_conn;
  MYSQL *c = sync_db_connect_target(u, err);
  if (!c)
    return NULL;
  char q[128 + SYNC_TZ_MAX];
  snprintf(q, sizeof q, "SET NAMES utf8mb4, time_zone = '%s'",
           u->cfg.timezone[0] ? u->cfg.timezone : "+00:00");
  if (mysql_real_query(c, q, (unsigned long)strlen(q)) != 0) {
    sync_db_error(u, c, "sync: cannot set up the session of the expression filters", err);
    sync_db_close(u, c);
    return NULL;
  }
  u->expr_conn = c;
  return c;
}

void sync_expr_close(sync_unit *u) {
  if (u->expr_conn)
    sync_db_close(u, u->expr_conn);
  u->expr_conn = NULL;
}

/* Value v of column col as a typed literal (module comment). */
static int expr_value(sync_unit *u, dm_buf *b, const dm_binlog_value *v,
                      const dm_binlog_column *col, dm_error *err) {
  const char *cast = NULL;
  switch (v->kind) {
  case DM_VAL_ABSENT:
  case DM_VAL_NULL:
    return dm_buf_puts(b, "NULL") < 0 ? sync_nomem(u, err) : 0;
  case DM_VAL_DATE:
    cast = "DATE";
    break;
  case DM_VAL_TIME:
    cast = "TIME";
    break;
  case DM_VAL_DATETIME:
    cast = "DATETIME";
    break;
  case DM_VAL_TIMESTAMP:
    if (v->v.ts.sec == 0 && v->v.ts.usec == 0)
      return dm_buf_puts(b, "CAST('0000-00-00 00:00:00' AS DATETIME)") < 0 ? sync_nomem(u, err) : 0;
    return dm_buf_printf(b, "FROM_UNIXTIME(%" PRId64 ".%06" PRIu32 ")", v->v.ts.sec, v->v.ts.usec) <
                   0
               ? sync_nomem(u, err)
               : 0;
  case DM_VAL_STRING: {
    const char *cs = sync_charsets_name(u->charsets, col->collation);
    const char *coll = sync_charsets_collation(u->charsets, col->collation);
    if (!cs || !coll)
      break; /* as the apply writes it */
    if (dm_buf_printf(b, "_%s X'", cs) < 0 || dm_buf_reserve(b, 2 * (size_t)v->v.s.len) < 0)
      return sync_nomem(u, err);
    static const char hex[] = "0123456789ABCDEF";
    for (uint32_t i = 0; i < v->v.s.len; i++) {
      b->p[b->len++] = hex[v->v.s.ptr[i] >> 4];
      b->p[b->len++] = hex[v->v.s.ptr[i] & 15];
    }
    b->p[b->len] = '\0';
    return dm_buf_printf(b, "' COLLATE %s", coll) < 0 ? sync_nomem(u, err) : 0;
  }
  default:
    break;
  }
  if (cast && dm_buf_puts(b, "CAST(") < 0)
    return sync_nomem(u, err);
  if (sync_sql_value(b, v, col, u->charsets, err) < 0)
    return -1;
  if (cast &&
      (strcmp(cast, "DATE") == 0 ? dm_buf_printf(b, " AS %s)", cast)
                                 : dm_buf_printf(b, " AS %s(%u))", cast, (unsigned)col->fsp)) < 0)
    return sync_nomem(u, err);
  return 0;
}

/* (SELECT v1 AS `c1`, ...) AS t: the row as a table of one row. */
static int expr_row(sync_unit *u, dm_buf *b, const dm_binlog_table_map *tm,
                    const dm_binlog_value *row, dm_error *err) {
  if (dm_buf_puts(b, "(SELECT ") < 0)
    return sync_nomem(u, err);
  for (uint32_t i = 0; i < tm->column_count; i++) {
    if ((i && dm_buf_puts(b, ", ") < 0))
      return sync_nomem(u, err);
    if (expr_value(u, b, &row[i], &tm->columns[i], err) < 0)
      return -1;
    if (dm_buf_puts(b, " AS ") < 0 ||
        sync_sql_ident(b, tm->columns[i].name.ptr, tm->columns[i].name.len) < 0)
      return sync_nomem(u, err);
  }
  return dm_buf_puts(b, ") AS t") < 0 ? sync_nomem(u, err) : 0;
}

/* One side's condition: ((e) <=> 1) on the row, as a scalar subquery; TRUE when e is absent and
 * FALSE when it is dead. */
static int expr_side(sync_unit *u, dm_buf *b, const char *e, bool dead,
                     const dm_binlog_table_map *tm, const dm_binlog_value *row, dm_error *err) {
  if (!e || dead)
    return dm_buf_puts(b, e ? "FALSE" : "TRUE") < 0 ? sync_nomem(u, err) : 0;
  if (dm_buf_puts(b, "(SELECT ((") < 0 || dm_buf_puts(b, e) < 0 ||
      dm_buf_puts(b, ") <=> 1) FROM ") < 0)
    return sync_nomem(u, err);
  if (expr_row(u, b, tm, row, err) < 0)
    return -1;
  return dm_buf_putc(b, ')') < 0 ? sync_nomem(u, err) : 0;
}

/* The query for rules of kind k (only rule `only` when >= 0). */
static int expr_query(sync_unit *u, dm_buf *q, const sync_expr *x, int k, int only,
                      const dm_binlog_table_map *tm, const dm_binlog_value *before,
                      const dm_binlog_value *after, dm_error *err) {
  q->len = 0;
  if (dm_buf_puts(q, "SELECT ") < 0)
    return sync_nomem(u, err);
  bool any = false;
  for (int i = 0; i < x->n[k]; i++) {
    if (only >= 0 && i != only)
      continue;
    const sync_expr_rule *r = &x->rules[k][i];
    if ((any && dm_buf_puts(q, " OR ") < 0) || dm_buf_putc(q, '(') < 0)
      return sync_nomem(u, err);
    any = true;
    /* WRITE rows come in `after`, DELETE rows in `before`; an UPDATE has both */
    const dm_binlog_value *first = k == 0 ? after : before;
    if (expr_side(u, q, r->e[0], r->dead[0], tm, first, err) < 0)
      return -1;
    if (k == 1 &&
        (dm_buf_puts(q, " AND ") < 0 || expr_side(u, q, r->e[1], r->dead[1], tm, after, err) < 0))
      return -1;
    if (dm_buf_putc(q, ')') < 0)
      return sync_nomem(u, err);
  }
  return 0;
}

/* Runs q: 1 (true), 0 (false or NULL), -1 with the server's errno in *code. */
static int expr_run(MYSQL *c, const dm_buf *q, unsigned *code) {
  *code = 0;
  if (mysql_real_query(c, q->p, (unsigned long)q->len) != 0) {
    *code = mysql_errno(c);
    return -1;
  }
  MYSQL_RES *res = mysql_store_result(c);
  if (!res) {
    *code = mysql_errno(c) ? mysql_errno(c) : 2014;
    return -1;
  }
  MYSQL_ROW row = mysql_fetch_row(res);
  int v = row && row[0] && strcmp(row[0], "1") == 0;
  mysql_free_result(res);
  return v;
}

/* After an unknown column: finds the expressions that name one (each alone), marks them dead and
 * logs them (DM: such a rule skips nothing). 0, or -1 with *err for another error. */
static int expr_find_dead(sync_unit *u, MYSQL *c, sync_table *t, int k,
                          const dm_binlog_table_map *tm, const dm_binlog_value *before,
                          const dm_binlog_value *after, dm_error *err) {
  sync_expr *x = t->expr;
  dm_buf q = {0};
  int rc = 0;
  for (int i = 0; rc == 0 && i < x->n[k]; i++) {
    sync_expr_rule *r = &x->rules[k][i];
    for (int s = 0; rc == 0 && s < 2; s++) {
      if (!r->e[s] || r->dead[s])
        continue;
      /* this side alone: the other one stands as TRUE */
      char *keep = r->e[1 - s];
      bool keep_dead = r->dead[1 - s];
      r->e[1 - s] = NULL;
      r->dead[1 - s] = false;
      unsigned code;
      rc = expr_query(u, &q, x, k, i, tm, before, after, err);
      int v = rc < 0 ? 0 : expr_run(c, &q, &code);
      r->e[1 - s] = keep;
      r->dead[1 - s] = keep_dead;
      if (rc < 0)
        break;
      if (v < 0 && code == SYNC_EXPR_ER_BAD_FIELD) {
        r->dead[s] = true;
        u->host->logf(u->ctx, DM_LOG_WARN,
                      "sync: expression-filter `%s` names a column `%s`.`%s` does not have "
                      "(%s): it skips no row until the table's structure changes, as in DM",
                      r->name, t->db, t->name, mysql_error(c));
      }
    }
  }
  dm_buf_free(&q);
  x->sig = t->map_sig;
  return rc;
}

int sync_expr_skip(sync_unit *u, sync_table *t, int k, const dm_binlog_table_map *tm,
                   const dm_binlog_value *before, const dm_binlog_value *after, dm_error *err) {
  sync_expr *x = t->expr;
  if (!x || x->n[k] == 0)
    return 0;
  if (x->sig != t->map_sig) { /* the table changed: every rule is tried again */
    for (int kk = 0; kk < 3; kk++)
      for (int i = 0; i < x->n[kk]; i++)
        x->rules[kk][i].dead[0] = x->rules[kk][i].dead[1] = false;
    x->sig = t->map_sig;
  }
  MYSQL *c = expr_conn(u, err);
  if (!c)
    return -1;
  dm_buf q = {0};
  int v = -1;
  for (int attempt = 0; attempt < 2; attempt++) {
    unsigned code;
    if (expr_query(u, &q, x, k, -1, tm, before, after, err) < 0)
      break;
    v = expr_run(c, &q, &code);
    if (v >= 0)
      break;
    if (code == SYNC_EXPR_ER_BAD_FIELD && attempt == 0) {
      if (expr_find_dead(u, c, t, k, tm, before, after, err) < 0)
        break;
      continue;
    }
    const char *kind = k == 0 ? "insert" : k == 1 ? "update" : "delete";
    if (code && dm_db_errno_transient(code)) { /* the connection, not the rule */
      char what[DM_ERROR_MESSAGE_MAX + 2 * SYNC_NAME_MAX];
      snprintf(what, sizeof what, "sync: evaluating the %s expression-filter rules of `%s`.`%s`",
               kind, t->db, t->name);
      sync_db_error(u, c, what, err);
      sync_expr_close(u); /* the next try opens another */
    } else {
      char cause[DM_ERROR_MESSAGE_MAX];
      snprintf(cause, sizeof cause, "%u: %s", code, code ? mysql_error(c) : "no result");
      u->host->error_make(u->ctx, err, DM_ERR_CONFIG_INVALID, cause,
                          "sync: the target cannot evaluate the %s expression-filter rules of "
                          "`%s`.`%s` (a rule of expression-filter that is not an expression on "
                          "the row's columns); fix it and run update-task, then resume-task",
                          kind, t->db, t->name);
    }
    v = -1;
    break;
  }
  dm_buf_free(&q);
  if (v == 1)
    x->filtered[k]++;
  return v;
}

uint64_t sync_expr_filtered(const sync_table *t, int k) {
  return t->expr ? t->expr->filtered[k] : 0;
}

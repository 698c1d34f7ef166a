/*
 * DDL of the binlog. When a statement event outside a transaction arrives, the coordinator has
 * applied everything before it (all workers idle, their checkpoint rows at the DDL's start), then:
 *
 *   1. a binlog operator registered for the event's position (`dmctl binlog ... -b FILE:POS`)
 *      skips it, replaces it, or injects statements before it;
 *   2. else the statement is parsed (sync_ddl.c), split into one statement per table, and each
 *      part is dropped when the block-allow list or the task's binlog event filters say so, and
 *      its names are rewritten by the routes;
 *   3. the global checkpoint row is marked "DDL at FILE:POS being applied", the statements run,
 *      and all checkpoint rows move past the event in one transaction (which clears the mark).
 *
 * MariaDB commits a DDL by itself, so a crash between 3's statements and the checkpoint would run
 * the DDL a second time after the restart. The mark says so: when the unit meets the marked event
 * again, errors that mean "this is already done" (table exists, unknown table, duplicate column,
 * ...) count as success.
 *
 * A DDL the target refuses pauses the subtask with DM_ERR_SYNC_DDL naming FILE:POS; a `dmctl
 * binlog` operator registered without -b is then used for the failing event at the next try.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mysqld_error.h>

#include "sync.h"
#include "sync_ddl.h"

/* Errors of a DDL that already ran. */
static bool sync_ddl_already_done(unsigned code) {
  switch (code) {
  case ER_DB_CREATE_EXISTS:       /* 1007 */
  case ER_DB_DROP_EXISTS:         /* 1008 */
  case ER_TABLE_EXISTS_ERROR:     /* 1050 */
  case ER_BAD_TABLE_ERROR:        /* 1051 */
  case ER_DUP_FIELDNAME:          /* 1060 */
  case ER_DUP_KEYNAME:            /* 1061 */
  case ER_CANT_DROP_FIELD_OR_KEY: /* 1091 */
  case ER_NO_SUCH_TABLE:          /* 1146 */
  case ER_BAD_FIELD_ERROR:        /* 1054: a column renamed or dropped already */
  case 1176:                      /* ER_KEY_DOES_NOT_EXITS */
    return true;
  default:
    return false;
  }
}

static void sync_ddl_route(void *arg, const char *schema, const char *table, char *out_schema,
                           size_t schema_len, char *out_table, size_t table_len) {
  sync_unit *u = arg;
  u->host->route_table(u->ctx, schema, table, out_schema, schema_len, out_table, table_len);
}

typedef struct sync_ddl_run {
  sync_unit *u;
  MYSQL *conn;
  const char *at;
  bool replay;
  dm_error *err;
} sync_ddl_run;

static int sync_ddl_exec(sync_ddl_run *r, const char *sql, size_t len) {
  sync_unit *u = r->u;
  if (mysql_real_query(r->conn, sql, (unsigned long)len) == 0) {
    MYSQL_RES *res = mysql_store_result(r->conn);
    if (res)
      mysql_free_result(res);
    return 0;
  }
  unsigned code = mysql_errno(r->conn);
  if (r->replay && sync_ddl_already_done(code)) {
    u->host->logf(u->ctx, DM_LOG_WARN,
                  "sync: the DDL at %s ran before the restart (the target says: %s): counted as "
                  "done",
                  r->at, mysql_error(r->conn));
    return 0;
  }
  char what[DM_ERROR_MESSAGE_MAX];
  snprintf(what, sizeof what, "sync: the DDL at %s failed on the target: %.*s", r->at,
           (int)(len > 300 ? 300 : len), sql);
  sync_db_error(u, r->conn, what, r->err);
  if (!r->err->resumable && r->err->code == DM_ERR_DB_QUERY) {
    char cause[DM_ERROR_RAW_MAX];
    dm_strlcpy(cause, r->err->raw_cause, sizeof cause);
    u->host->error_make(u->ctx, r->err, DM_ERR_SYNC_DDL, cause, "%s", what);
  }
  return -1;
}

static int sync_ddl_exec_list(sync_ddl_run *r, const char *const *sqls, uint32_t n) {
  for (uint32_t i = 0; i < n; i++)
    if (sync_ddl_exec(r, sqls[i], strlen(sqls[i])) < 0)
      return -1;
  return 0;
}

/* The statements of the event after parsing, filtering and routing, one per array slot. */
static int sync_ddl_prepare(sync_unit *u, const dm_binlog_query *q, const char *at, sync_buf *out,
                            uint32_t **offs, uint32_t *n, dm_error *err) {
  char db[SYNC_NAME_MAX];
  size_t dl = q->db.len < sizeof db - 1 ? q->db.len : sizeof db - 1;
  memcpy(db, q->db.ptr, dl);
  db[dl] = '\0';
  sync_ddl d = {0};
  char msg[512];
  if (sync_ddl_parse(q->query.ptr, q->query.len, db, &d, msg, sizeof msg) < 0) {
    u->host->error_make(u->ctx, err, DM_ERR_SYNC_DDL, NULL,
                        "sync: cannot parse the DDL at %s (%s): %.*s", at, msg,
                        (int)(q->query.len > 300 ? 300 : q->query.len), q->query.ptr);
    return -1;
  }
  *offs = calloc((size_t)d.n + 1, sizeof **offs);
  if (!*offs) {
    sync_ddl_free(&d);
    sync_nomem(u, err);
    return -1;
  }
  *n = 0;
  for (int i = 0; i < d.n; i++) {
    const sync_ddl_stmt *s = &d.stmts[i];
    const char *ev = sync_ddl_event_name(s->kind);
    bool schema_only = s->subject.table[0] == '\0';
    const char *table = schema_only ? NULL : s->subject.table;
    if (s->temporary) {
      u->host->logf(u->ctx, DM_LOG_DEBUG, "sync: DDL at %s on a temporary table: skipped", at);
      continue;
    }
    if (s->kind == SYNC_DDL_OTHER) {
      u->host->logf(u->ctx, DM_LOG_INFO,
                    "sync: statement at %s is not a DDL on tables: skipped: %.*s", at,
                    (int)(strlen(s->sql) > 200 ? 200 : strlen(s->sql)), s->sql);
      continue;
    }
    if (s->subject.schema[0] && !u->host->table_allowed(u->ctx, s->subject.schema, table)) {
      u->host->logf(u->ctx, DM_LOG_DEBUG,
                    "sync: DDL at %s on `%s`.`%s` left out by the "
                    "block-allow list",
                    at, s->subject.schema, table ? table : "");
      continue;
    }
    if (DM_HOST_HAS(u->host, event_ignored) &&
        u->host->event_ignored(u->ctx, s->subject.schema, table, ev, s->sql)) {
      u->host->logf(u->ctx, DM_LOG_INFO, "sync: DDL at %s ignored by the task's filters: %s", at,
                    s->sql);
      continue;
    }
    (*offs)[(*n)++] = (uint32_t)out->len;
    if (sync_ddl_rewrite(s, sync_ddl_route, u, out) < 0 || sync_buf_putc(out, '\0') < 0) {
      sync_ddl_free(&d);
      sync_nomem(u, err);
      return -1;
    }
    /* the tables it names are read again from the target at their next row event */
    if (schema_only)
      sync_schema_invalidate(u->schema, s->subject.schema, NULL);
    else
      sync_schema_invalidate(u->schema, s->subject.schema, s->subject.table);
    if (s->has_other)
      sync_schema_invalidate(u->schema, s->other.schema, s->other.table);
  }
  sync_ddl_free(&d);
  return 0;
}

int sync_ddl_apply(sync_unit *u, MYSQL *conn, const dm_binlog_event *ev, const dm_binlog_query *q,
                   const dm_position *after, int n_workers, dm_error *err) {
  char at[DM_POSITION_NAME_MAX + 24];
  snprintf(at, sizeof at, "%s:%" PRIu64, ev->file, ev->offset);
  sync_ddl_run run = {u, conn, at, strcmp(u->replay_ddl_at, at) == 0, err};
  bool has_ops =
      DM_HOST_HAS(u->host, binlog_operator) && DM_HOST_HAS(u->host, binlog_operator_done);
  dm_binlog_operator op = {0};
  bool have_op = has_ops && u->host->binlog_operator(u->ctx, ev->file, ev->offset, false, &op);

  sync_buf text = {0};
  uint32_t *offs = NULL, n = 0;
  int rc = -1;
  if ((!have_op || op.kind == DM_BINLOG_OP_INJECT) &&
      sync_ddl_prepare(u, q, at, &text, &offs, &n, err) < 0)
    goto failed;
  if (sync_cp_mark_ddl(u, conn, at, err) < 0)
    goto out;
  if (q->db.len) {
    /* statements a binlog operator gives may name tables without a schema */
    char db[SYNC_NAME_MAX], tdb[SYNC_NAME_MAX], tt[SYNC_NAME_MAX];
    size_t dl = q->db.len < sizeof db - 1 ? q->db.len : sizeof db - 1;
    memcpy(db, q->db.ptr, dl);
    db[dl] = '\0';
    sync_route(u, db, NULL, tdb, tt);
    sync_buf use = {0};
    if (sync_buf_puts(&use, "USE ") == 0 && sync_sql_ident(&use, tdb, strlen(tdb)) == 0 &&
        mysql_real_query(conn, use.p, (unsigned long)use.len) != 0) {
      /* the schema is not on the target (yet): the statements are qualified anyway */
    }
    sync_buf_free(&use);
  }
  if (have_op) {
    u->host->logf(u->ctx, DM_LOG_INFO, "sync: binlog operator %s for the event at %s",
                  op.kind == DM_BINLOG_OP_SKIP      ? "skip"
                  : op.kind == DM_BINLOG_OP_REPLACE ? "replace"
                                                    : "inject",
                  at);
    if (op.kind != DM_BINLOG_OP_SKIP &&
        sync_ddl_exec_list(&run, (const char *const *)op.sqls, op.n_sqls) < 0)
      goto failed;
  }
  if (!have_op || op.kind == DM_BINLOG_OP_INJECT) {
    for (uint32_t i = 0; i < n; i++) {
      const char *sql = text.p + offs[i];
      if (sync_ddl_exec(&run, sql, strlen(sql)) == 0)
        continue;
      /* refused: an operator registered for the failing event (dmctl binlog without -b)? */
      dm_binlog_operator fop = {0};
      if (err->code != DM_ERR_SYNC_DDL || have_op ||
          !(has_ops && u->host->binlog_operator(u->ctx, ev->file, ev->offset, true, &fop)))
        goto failed;
      have_op = true;
      op = fop;
      u->host->logf(u->ctx, DM_LOG_INFO, "sync: binlog operator for the failing event at %s", at);
      if (op.kind != DM_BINLOG_OP_SKIP &&
          sync_ddl_exec_list(&run, (const char *const *)op.sqls, op.n_sqls) < 0)
        goto failed;
      if (op.kind == DM_BINLOG_OP_INJECT && sync_ddl_exec(&run, sql, strlen(sql)) < 0)
        goto failed;
      if (op.kind != DM_BINLOG_OP_INJECT)
        break; /* skip / replace stand for the whole event */
    }
  }
  if (sync_cp_reset(u, conn, after, 0, n_workers, err) < 0)
    goto out;
  if (have_op)
    u->host->binlog_operator_done(u->ctx, &op);
  u->replay_ddl_at[0] = '\0';
  rc = 0;
  goto out;
failed:
  if (!err->resumable) {
    /* Refused, not interrupted: the DDL did not run, so the next try must not count "already
     * exists" errors as done. The mark stays only when a lost connection leaves it open whether
     * the DDL ran. */
    dm_error e2;
    sync_cp_mark_ddl(u, conn, "", &e2);
  }
  if (err->code == DM_ERR_SYNC_DDL) {
    char w[DM_ERROR_WORKAROUND_MAX];
    snprintf(w, sizeof w,
             "Fix the target, or tell the task what to do with this event: `dmctl binlog "
             "skip|replace|inject %.64s -b %.100s [SQL...]`, then resume the task.",
             u->host->task_name(u->ctx), at);
    dm_strlcpy(err->workaround, w, sizeof err->workaround);
  }
out:
  free(offs);
  sync_buf_free(&text);
  return rc;
}

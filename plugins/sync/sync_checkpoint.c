/*
 * The sync checkpoint: DM's table `<meta-schema>`.`<task>_syncer_checkpoint` on the target, with
 * DM's columns. Rows of this task's source (`id` = source-id):
 *
 *   cp_schema = '', cp_table = '', is_global = 1    the global row: everything before its
 *                                                   position is applied (DM's meaning)
 *   cp_schema = '', cp_table = '_worker_NNN'         one row per worker: the end of the last batch
 *                                                   whose part that worker committed
 *
 * A worker moves its own row as the FIRST statement of the transaction that applies its part of a
 * batch, so the row and the changes commit together (exactly once), and a connection of a
 * killed process that is still applying (the server runs a multi-statement query to its end)
 * holds the row's lock from its first statement: the locking read below waits for it to commit
 * or roll back, and then reads the truth.
 *
 * Workers start a batch only when every worker committed the one before, so the worker rows hold
 * at most two positions (a solo batch, applied by worker 0 alone, moves all of them and the
 * global row in its one transaction: sync_cp_solo_sql). After a crash the unit reads from the
 * smaller one, rebuilds the same batch up to the larger one (same worker count, same content:
 * sync_batch.c assigns groups deterministically) and applies only the parts of the workers still
 * at the smaller position (docs/sync.md).
 *
 * Fencing (a token T > 0 from the host; dmhost/db.h): the rows carry T in `fence`. The start
 * raises every row of this task's source to T inside the locking read (refused when one carries
 * more), and every statement that moves a row also sets `fence` = T and requires `fence` <= T,
 * checked before anything after it in the same round trip runs: a worker's batch transaction
 * never reaches its COMMIT once a newer worker has raised the rows. With T = 0 the statements
 * are the unfenced ones, unchanged.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dmhost/db.h>

#include "sync.h"

static int sync_cp_lit(MYSQL *c, dm_buf *b, const char *s) {
  return sync_sql_lit(c, b, s, strlen(s));
}

int sync_cp_prepare(sync_unit *u, MYSQL *c, dm_error *err) {
  dm_buf q = {0};
  int rc = -1;
  if (dm_buf_puts(&q, "CREATE DATABASE IF NOT EXISTS ") < 0 ||
      sync_sql_ident(&q, u->meta, strlen(u->meta)) < 0 ||
      dm_buf_printf(&q,
                    ";CREATE TABLE IF NOT EXISTS %s ("
                    "`id` VARCHAR(32) NOT NULL, "
                    "`cp_schema` VARCHAR(128) NOT NULL, "
                    "`cp_table` VARCHAR(128) NOT NULL, "
                    "`binlog_name` VARCHAR(128), "
                    "`binlog_pos` INT UNSIGNED, "
                    "`binlog_gtid` TEXT, "
                    "`exit_safe_binlog_name` VARCHAR(128) DEFAULT '', "
                    "`exit_safe_binlog_pos` INT UNSIGNED DEFAULT 0, "
                    "`exit_safe_binlog_gtid` TEXT, "
                    "`table_info` JSON NOT NULL, "
                    "`is_global` BOOLEAN, "
                    "`create_time` TIMESTAMP DEFAULT CURRENT_TIMESTAMP, "
                    "`update_time` TIMESTAMP DEFAULT CURRENT_TIMESTAMP ON UPDATE "
                    "CURRENT_TIMESTAMP, " DM_DB_FENCE_COLUMN_DEF ", "
                    "UNIQUE KEY `uk_id_schema_table` (`id`, `cp_schema`, `cp_table`)) "
                    "DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin",
                    u->cp_table) < 0) {
    sync_nomem(u, err);
    goto out;
  }
  rc = sync_db_exec(u, c, q.p, q.len, "sync: cannot create the checkpoint table", err);
  if (rc < 0)
    err->code = err->code == DM_ERR_DB_CONNECT ? DM_ERR_DB_CONNECT : DM_ERR_CHECKPOINT;
  else if (u->fence) { /* a table of an older version has no `fence` column yet */
    char table[SYNC_NAME_MAX];
    dm_task_meta_table_name(u->host->task_name(u->ctx), DM_META_SYNCER_CHECKPOINT, table,
                            sizeof table);
    rc = dm_db_fence_column(c, u->meta, table, u->cp_table, "sync", err);
  }
out:
  dm_buf_free(&q);
  return rc;
}

/* The rows of this task's source: "`id` = '<source>' AND `cp_schema` = ''". */
static void sync_cp_where(sync_unit *u, MYSQL *c, char *out, size_t len) {
  char lit[2 * sizeof u->source_id + 1];
  mysql_real_escape_string(c, lit, u->source_id, (unsigned long)strlen(u->source_id));
  snprintf(out, len, "`id` = '%s' AND `cp_schema` = ''", lit);
}

int sync_cp_fence_failed(sync_unit *u, MYSQL *c, const char *what, dm_error *err) {
  char where[2 * sizeof u->source_id + 64];
  sync_cp_where(u, c, where, sizeof where);
  char who[96];
  snprintf(who, sizeof who, "sync (moving %s)", what);
  int rc = dm_db_fence_refused(c, u->cp_table, where, u->fence, who, err);
  if (rc == 0) { /* no newer token: the row the statement moves is not there */
    u->host->error_make(u->ctx, err, DM_ERR_CHECKPOINT, NULL,
                        "sync: %s of source `%s` is missing from the checkpoint table %s (removed "
                        "by hand?): the fenced update found no row to move",
                        what, u->source_id, u->cp_table);
    err->resumable = 0;
  }
  return -1;
}

/* A fenced statement of `c` failed: why, after the rollback. Else *err stays. */
static void sync_cp_failed(sync_unit *u, MYSQL *c, unsigned code, const char *what, dm_error *err) {
  if (u->fence && code == DM_DB_FENCE_ERRNO)
    sync_cp_fence_failed(u, c, what, err);
}

static void sync_cp_row_pos(MYSQL_ROW row, dm_position *p) {
  memset(p, 0, sizeof *p);
  dm_strlcpy(p->name, row[1] ? row[1] : "", sizeof p->name);
  p->pos = row[2] ? strtoull(row[2], NULL, 10) : 0;
  dm_strlcpy(p->gtid, row[3] ? row[3] : "", sizeof p->gtid);
}

int sync_cp_load(sync_unit *u, MYSQL *c, sync_cp_state *st, bool own, dm_error *err) {
  memset(st, 0, sizeof *st);
  dm_buf q = {0};
  int rc = -1;
  /* Owning the rows under a token: raised first, in the transaction of the locking read. */
  bool fence = own && u->fence;
  if (fence) {
    char where[2 * sizeof u->source_id + 64];
    sync_cp_where(u, c, where, sizeof where);
    if (sync_db_exec(u, c, "START TRANSACTION", 17, "sync: cannot read the checkpoint", err) < 0)
      goto out;
    if (dm_db_fence_raise(c, u->cp_table, where, u->fence, "sync", err) != 0) {
      mysql_query(c, "ROLLBACK");
      goto out;
    }
  }
  if (dm_buf_printf(&q,
                    "%sSELECT `cp_table`, `binlog_name`, `binlog_pos`, "
                    "`binlog_gtid`, `is_global`, JSON_VALUE(`table_info`, '$.ddl'), "
                    "JSON_VALUE(`table_info`, '$.rows'), `exit_safe_binlog_name`, "
                    "`exit_safe_binlog_pos`, `exit_safe_binlog_gtid` FROM %s "
                    "WHERE `id` = ",
                    fence ? "" : "START TRANSACTION;", u->cp_table) < 0 ||
      sync_cp_lit(c, &q, u->source_id) < 0 ||
      dm_buf_puts(&q, " AND `cp_schema` = '' ORDER BY `cp_table` FOR UPDATE") < 0) {
    sync_nomem(u, err);
    goto out;
  }
  if (mysql_real_query(c, q.p, (unsigned long)q.len) != 0 ||
      (!fence && mysql_next_result(c) != 0)) {
    sync_db_error(u, c, "sync: cannot read the checkpoint", err);
    goto out;
  }
  MYSQL_RES *r = mysql_store_result(c);
  if (!r) {
    sync_db_error(u, c, "sync: cannot read the checkpoint", err);
    goto out;
  }
  MYSQL_ROW row;
  while ((row = mysql_fetch_row(r))) {
    st->exists = true;
    if (row[4] && strcmp(row[4], "1") == 0) {
      sync_cp_row_pos(row, &st->global);
      dm_strlcpy(st->ddl_at, row[5] ? row[5] : "", sizeof st->ddl_at);
      dm_strlcpy(st->safe_exit.name, row[7] ? row[7] : "", sizeof st->safe_exit.name);
      st->safe_exit.pos = row[8] ? strtoull(row[8], NULL, 10) : 0;
      dm_strlcpy(st->safe_exit.gtid, row[9] ? row[9] : "", sizeof st->safe_exit.gtid);
      continue;
    }
    int w = row[0] && strncmp(row[0], "_worker_", 8) == 0 ? atoi(row[0] + 8) : -1;
    if (w < 0 || w >= SYNC_MAX_WORKERS)
      continue;
    sync_cp_row_pos(row, &st->worker_pos[w]);
    st->worker_rows[w] = row[6] ? strtoull(row[6], NULL, 10) : 0;
    if (w + 1 > st->n_workers)
      st->n_workers = w + 1;
  }
  mysql_free_result(r);
  if (sync_db_exec(u, c, "COMMIT", 6, "sync: cannot read the checkpoint", err) < 0)
    goto out;
  for (int w = 0; w < st->n_workers; w++) {
    const dm_position *p = &st->worker_pos[w];
    uint64_t rows = st->worker_rows[w];
    if (w == 0 || sync_cp_compare(p, rows, &st->min, st->min_rows) < 0) {
      st->min = *p;
      st->min_rows = rows;
    }
    if (w == 0 || sync_cp_compare(p, rows, &st->max, st->max_rows) > 0) {
      st->max = *p;
      st->max_rows = rows;
    }
  }
  if (st->exists && st->n_workers == 0) {
    /* a global row only (a DM checkpoint, or workers removed by hand): start there */
    st->min = st->max = st->global;
  }
  rc = 0;
out:
  dm_buf_free(&q);
  return rc;
}

int sync_cp_compare(const dm_position *a, uint64_t a_rows, const dm_position *b, uint64_t b_rows) {
  int c = dm_position_compare_file(a, b);
  if (c)
    return c;
  return a_rows < b_rows ? -1 : a_rows > b_rows;
}

/* table_info of a row: the rows done of the transaction at its position, when inside one */
static int sync_cp_info(dm_buf *q, uint64_t rows) {
  return rows ? dm_buf_printf(q, "JSON_OBJECT('rows', %" PRIu64 ")", rows) : dm_buf_puts(q, "'{}'");
}

static int sync_cp_values(sync_unit *u, MYSQL *c, dm_buf *q, const char *cp_table,
                          const dm_position *pos, uint64_t rows, bool global) {
  static const dm_position none; /* zero: no exit point */
  const dm_position *exit = global ? &u->safe_exit : &none;
  return dm_buf_putc(q, '(') < 0 || sync_cp_lit(c, q, u->source_id) < 0 ||
                 dm_buf_puts(q, ",'',") < 0 || sync_cp_lit(c, q, cp_table) < 0 ||
                 dm_buf_putc(q, ',') < 0 || sync_cp_lit(c, q, pos->name) < 0 ||
                 dm_buf_printf(q, ",%" PRIu64 ",", pos->pos) < 0 ||
                 sync_cp_lit(c, q, pos->gtid) < 0 || dm_buf_putc(q, ',') < 0 ||
                 sync_cp_info(q, rows) < 0 || dm_buf_printf(q, ",%d,", global ? 1 : 0) < 0 ||
                 sync_cp_lit(c, q, exit->name) < 0 ||
                 dm_buf_printf(q, ",%" PRIu64 ",", exit->pos) < 0 ||
                 sync_cp_lit(c, q, exit->gtid) < 0 ||
                 (u->fence && dm_buf_printf(q, ",%" PRIu64, u->fence) < 0) ||
                 dm_buf_putc(q, ')') < 0
             ? -1
             : 0;
}

int sync_cp_reset_sql(sync_unit *u, MYSQL *c, const dm_position *pos, uint64_t rows, int n,
                      dm_buf *q) {
  char where[2 * sizeof u->source_id + 64];
  sync_cp_where(u, c, where, sizeof where);
  /* fenced: every row of the source must be at this token or below (all raised, or none yet) */
  if (u->fence && dm_buf_printf(q,
                                "UPDATE %s SET `fence` = %" PRIu64
                                " WHERE %s AND `fence` <= %" PRIu64 ";" DM_DB_FENCE_CHECK_HEAD
                                "(SELECT COUNT(*) FROM %s WHERE %s)" DM_DB_FENCE_CHECK_TAIL ";",
                                u->cp_table, u->fence, where, u->fence, u->cp_table, where) < 0)
    return -1;
  if (dm_buf_printf(q, "DELETE FROM %s WHERE %s;", u->cp_table, where) < 0 ||
      dm_buf_printf(q,
                    "INSERT INTO %s (`id`, `cp_schema`, `cp_table`, "
                    "`binlog_name`, `binlog_pos`, `binlog_gtid`, `table_info`, `is_global`, "
                    "`exit_safe_binlog_name`, `exit_safe_binlog_pos`, `exit_safe_binlog_gtid`%s) "
                    "VALUES ",
                    u->cp_table, u->fence ? ", `fence`" : "") < 0 ||
      sync_cp_values(u, c, q, "", pos, rows, true) < 0)
    return -1;
  for (int w = 0; w < n; w++) {
    char name[32];
    snprintf(name, sizeof name, "_worker_%03d", w);
    if (dm_buf_putc(q, ',') < 0 || sync_cp_values(u, c, q, name, pos, rows, false) < 0)
      return -1;
  }
  return dm_buf_putc(q, ';');
}

int sync_cp_reset(sync_unit *u, MYSQL *c, const dm_position *pos, uint64_t rows, int n,
                  dm_error *err) {
  return sync_cp_reset_with(u, c, pos, rows, n, NULL, err);
}

int sync_cp_reset_with(sync_unit *u, MYSQL *c, const dm_position *pos, uint64_t rows, int n,
                       const dm_buf *also, dm_error *err) {
  dm_buf q = {0};
  int rc = -1;
  /* `also` after the rows: a fenced statement refuses before any of it runs */
  if (dm_buf_puts(&q, "START TRANSACTION;") < 0 || sync_cp_reset_sql(u, c, pos, rows, n, &q) < 0 ||
      (also && also->len && dm_buf_put(&q, also->p, also->len) < 0) ||
      dm_buf_puts(&q, "COMMIT") < 0) {
    dm_buf_free(&q);
    return sync_nomem(u, err);
  }
  rc = sync_db_exec(u, c, q.p, q.len, "sync: cannot write the checkpoint", err);
  if (rc < 0) {
    unsigned code = mysql_errno(c);
    mysql_query(c, "ROLLBACK");
    if (err->code != DM_ERR_DB_CONNECT)
      err->code = DM_ERR_CHECKPOINT;
    sync_cp_failed(u, c, code, "a row", err);
  } else {
    sync_metrics_checkpoint(u);
  }
  dm_buf_free(&q);
  return rc;
}

/* The end of a statement that moves one row: "[, `fence` = T] WHERE <the row> [AND `fence` <= T];"
 * and, fenced, the check that it moved exactly that row. */
static int sync_cp_fence_tail(sync_unit *u, MYSQL *c, dm_buf *q, const char *cp_table) {
  if (u->fence && dm_buf_printf(q, ", `fence` = %" PRIu64, u->fence) < 0)
    return -1;
  if (dm_buf_puts(q, " WHERE `id` = ") < 0 || sync_cp_lit(c, q, u->source_id) < 0 ||
      dm_buf_puts(q, " AND `cp_schema` = '' AND `cp_table` = ") < 0 ||
      sync_cp_lit(c, q, cp_table) < 0)
    return -1;
  if (u->fence && dm_buf_printf(q,
                                " AND `fence` <= %" PRIu64 ";" DM_DB_FENCE_CHECK_HEAD
                                "1" DM_DB_FENCE_CHECK_TAIL,
                                u->fence) < 0)
    return -1;
  return dm_buf_putc(q, ';');
}

static int sync_cp_set(sync_unit *u, MYSQL *c, dm_buf *q, const dm_position *pos, uint64_t rows,
                       const char *cp_table) {
  return dm_buf_printf(q, "UPDATE %s SET `table_info` = ", u->cp_table) < 0 ||
                 sync_cp_info(q, rows) < 0 || dm_buf_puts(q, ", `binlog_name` = ") < 0 ||
                 sync_cp_lit(c, q, pos->name) < 0 ||
                 dm_buf_printf(q, ", `binlog_pos` = %" PRIu64 ", `binlog_gtid` = ", pos->pos) < 0 ||
                 sync_cp_lit(c, q, pos->gtid) < 0 || sync_cp_fence_tail(u, c, q, cp_table) < 0
             ? -1
             : 0;
}

int sync_cp_worker_sql(sync_unit *u, MYSQL *c, int w, const dm_position *pos, uint64_t rows,
                       dm_buf *out) {
  char name[32];
  snprintf(name, sizeof name, "_worker_%03d", w);
  return sync_cp_set(u, c, out, pos, rows, name);
}

int sync_cp_solo_sql(sync_unit *u, MYSQL *c, int n, const dm_position *pos, uint64_t rows,
                     dm_buf *out) {
  for (int w = 0; w < n; w++)
    if (sync_cp_worker_sql(u, c, w, pos, rows, out) < 0)
      return -1;
  return sync_cp_set(u, c, out, pos, 0, "");
}

int sync_cp_global(sync_unit *u, MYSQL *c, const dm_position *pos, dm_error *err) {
  dm_buf q = {0};
  int rc = -1;
  if (sync_cp_set(u, c, &q, pos, 0, "") < 0)
    sync_nomem(u, err);
  else if ((rc = sync_db_exec(u, c, q.p, q.len, "sync: cannot write the checkpoint", err)) < 0)
    sync_cp_failed(u, c, mysql_errno(c), "the global row", err);
  else
    sync_metrics_checkpoint(u);
  dm_buf_free(&q);
  return rc;
}

int sync_cp_safe_exit(sync_unit *u, MYSQL *c, dm_error *err) {
  dm_buf q = {0};
  int rc = -1;
  if (dm_buf_printf(&q, "UPDATE %s SET `exit_safe_binlog_name` = ", u->cp_table) < 0 ||
      sync_cp_lit(c, &q, u->safe_exit.name) < 0 ||
      dm_buf_printf(&q, ", `exit_safe_binlog_pos` = %" PRIu64 ", `exit_safe_binlog_gtid` = ",
                    u->safe_exit.pos) < 0 ||
      sync_cp_lit(c, &q, u->safe_exit.gtid) < 0 || sync_cp_fence_tail(u, c, &q, "") < 0)
    sync_nomem(u, err);
  else if ((rc = sync_db_exec(u, c, q.p, q.len, "sync: cannot write the checkpoint", err)) < 0)
    sync_cp_failed(u, c, mysql_errno(c), "the global row", err);
  dm_buf_free(&q);
  return rc;
}

int sync_cp_mark_ddl(sync_unit *u, MYSQL *c, const char *at, dm_error *err) {
  dm_buf q = {0};
  int rc = -1;
  if (dm_buf_printf(&q, "UPDATE %s SET `table_info` = JSON_OBJECT('ddl', ", u->cp_table) < 0 ||
      sync_cp_lit(c, &q, at) < 0 || dm_buf_putc(&q, ')') < 0 ||
      sync_cp_fence_tail(u, c, &q, "") < 0)
    sync_nomem(u, err);
  else if ((rc = sync_db_exec(u, c, q.p, q.len, "sync: cannot write the checkpoint", err)) < 0)
    sync_cp_failed(u, c, mysql_errno(c), "the global row", err);
  dm_buf_free(&q);
  return rc;
}

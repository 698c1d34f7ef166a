/*
 * XA transactions (docs/sync.md, "XA transactions"). MariaDB logs an XA transaction twice: at its
 * XA PREPARE (a GTID event flagged PREPARED_XA, its rows, `XA END`, an XA_PREPARE event) and at
 * its end, maybe much later and from another connection (a GTID flagged COMPLETED_XA and one
 * statement, `XA COMMIT` or `XA ROLLBACK`). Its rows must reach the target at the commit, never
 * after a rollback, exactly once.
 *
 * At the prepare, the rows become records of a batch of their own (sync_batch.c, one worker) and
 * their statement text is stored on the target, in `<meta>`.`<task>_syncer_xa`:
 *
 *   (id = source-id, format_id, gtrid, bqual, seq)  seq 1..n: statement text, about chunk-bytes
 *                                                   each, in order; seq 0: the header (chunks n,
 *                                                   row changes, where the prepare is)
 *
 * Statement rows are written whenever the batch holds a batch's worth (memory stays bounded by
 * `batch` / `batch-bytes` whatever the transaction's size), the header in the target transaction
 * that moves every checkpoint row past the prepare. A restart before that reads the prepare again
 * from its start, and its first write deletes what an earlier attempt left (the source refuses to
 * prepare an XID twice, so rows of that XID are leftovers of this very prepare).
 *
 * At the commit, with everything before it applied (a barrier, like a DDL), one target
 * transaction runs the stored statements in order, deletes them and moves every checkpoint row
 * past the commit; a rollback only deletes them and moves the rows. A commit whose header is
 * missing was prepared before the task's start position (or its rows were all filtered out and
 * the header deleted by hand): a warning, nothing applied.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sync.h"

struct sync_xa {
  sync_unit *u;
  char table[2 * SYNC_NAME_MAX + 32]; /* `meta`.`<task>_syncer_xa` */
  sync_batch batch;                   /* the open prepared group's rows not stored yet */
  bool open;
  bool cleared;    /* the leftovers of an earlier attempt are deleted */
  uint32_t chunks; /* statement rows stored */
  uint64_t rows;   /* row changes of the group */
  uint32_t format_id;
  uint8_t gtrid_len, bqual_len;
  uint8_t data[2 * DM_BINLOG_XID_PART_MAX];
  char text[DM_BINLOG_XID_TEXT_MAX]; /* X'..',X'..',N for messages */
  MYSQL *conn;                       /* while storing */
  dm_buf q;                          /* statement being sent */
  dm_error *err;
};

int sync_xa_new(sync_unit *u, sync_xa **out) {
  sync_xa *x = calloc(1, sizeof *x);
  if (!x)
    return -1;
  x->u = u;
  sync_batch_init(&x->batch);
  char name[SYNC_NAME_MAX];
  dm_task_meta_table_name(u->host->task_name(u->ctx), DM_META_SYNCER_XA, name, sizeof name);
  dm_buf q = {0};
  if (sync_sql_qualified(&q, u->meta, name) < 0 || q.len >= sizeof x->table) {
    dm_buf_free(&q);
    free(x);
    return -1;
  }
  memcpy(x->table, q.p, q.len + 1);
  dm_buf_free(&q);
  *out = x;
  return 0;
}

void sync_xa_free(sync_xa *x) {
  if (!x)
    return;
  sync_batch_free(&x->batch);
  dm_buf_free(&x->q);
  free(x);
}

int sync_xa_table(sync_xa *x, MYSQL *c, dm_error *err) {
  dm_buf q = {0};
  int rc = -1;
  if (dm_buf_printf(&q,
                    "CREATE TABLE IF NOT EXISTS %s ("
                    "`id` VARCHAR(32) NOT NULL, "
                    "`format_id` BIGINT NOT NULL, "
                    "`gtrid` VARBINARY(64) NOT NULL, "
                    "`bqual` VARBINARY(64) NOT NULL, "
                    "`seq` INT UNSIGNED NOT NULL, "
                    "`chunks` INT UNSIGNED NOT NULL DEFAULT 0, "
                    "`row_changes` BIGINT UNSIGNED NOT NULL DEFAULT 0, "
                    "`binlog_name` VARCHAR(128) NOT NULL DEFAULT '', "
                    "`binlog_pos` BIGINT UNSIGNED NOT NULL DEFAULT 0, "
                    "`stmts` LONGBLOB NOT NULL, "
                    "`create_time` TIMESTAMP DEFAULT CURRENT_TIMESTAMP, "
                    "PRIMARY KEY (`id`, `format_id`, `gtrid`, `bqual`, `seq`)) "
                    "DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin",
                    x->table) < 0)
    sync_nomem(x->u, err);
  else if ((rc = sync_db_exec(x->u, c, q.p, q.len, "sync: cannot create the XA table", err)) < 0 &&
           err->code != DM_ERR_DB_CONNECT)
    err->code = DM_ERR_CHECKPOINT;
  dm_buf_free(&q);
  return rc;
}

/* ---- the XID ---- */

static void sync_xa_set(sync_xa *x, const dm_binlog_xid *xid) {
  x->format_id = xid->format_id;
  x->gtrid_len = xid->gtrid_len;
  x->bqual_len = xid->bqual_len;
  size_t n = (size_t)xid->gtrid_len + xid->bqual_len;
  if (n)
    memcpy(x->data, xid->data, n);
  dm_binlog_xid cp = {x->format_id, x->gtrid_len, x->bqual_len, x->data};
  if (dm_binlog_xid_format(&cp, x->text, sizeof x->text) < 0)
    x->text[0] = '\0';
}

/* " WHERE `id` = .. AND format_id .. AND gtrid .. AND bqual .." */
static int sync_xa_where(sync_xa *x, MYSQL *c, dm_buf *q) {
  return dm_buf_puts(q, " WHERE `id` = ") < 0 ||
                 sync_sql_lit(c, q, x->u->source_id, strlen(x->u->source_id)) < 0 ||
                 dm_buf_printf(q, " AND `format_id` = %" PRIu32 " AND `gtrid` = ", x->format_id) <
                     0 ||
                 sync_sql_lit(c, q, x->data, x->gtrid_len) < 0 ||
                 dm_buf_puts(q, " AND `bqual` = ") < 0 ||
                 sync_sql_lit(c, q, x->data + x->gtrid_len, x->bqual_len) < 0
             ? -1
             : 0;
}

/* The first write of a prepared group deletes what an earlier attempt at it left. */
static int sync_xa_clear_sql(sync_xa *x, MYSQL *c, dm_buf *q) {
  if (x->cleared)
    return 0;
  x->cleared = true;
  return dm_buf_printf(q, "DELETE FROM %s", x->table) < 0 || sync_xa_where(x, c, q) < 0 ||
                 dm_buf_putc(q, ';') < 0
             ? -1
             : 0;
}

/* One row: seq, chunks, row changes, position, statements. REPLACE: a statement row that a
 * killed process's connection was still writing may land after the first write of the next
 * attempt deleted the leftovers; it holds the same text (the same binlog range cut alike). */
static int sync_xa_insert_sql(sync_xa *x, MYSQL *c, dm_buf *q, uint32_t seq, const char *file,
                              uint64_t pos, const char *stmts, size_t n) {
  return dm_buf_printf(q,
                       "REPLACE INTO %s (`id`, `format_id`, `gtrid`, `bqual`, `seq`, `chunks`, "
                       "`row_changes`, `binlog_name`, `binlog_pos`, `stmts`) VALUES (",
                       x->table) < 0 ||
                 sync_sql_lit(c, q, x->u->source_id, strlen(x->u->source_id)) < 0 ||
                 dm_buf_printf(q, ",%" PRIu32 ",", x->format_id) < 0 ||
                 sync_sql_lit(c, q, x->data, x->gtrid_len) < 0 || dm_buf_putc(q, ',') < 0 ||
                 sync_sql_lit(c, q, x->data + x->gtrid_len, x->bqual_len) < 0 ||
                 dm_buf_printf(q, ",%" PRIu32 ",%" PRIu32 ",%" PRIu64 ",", seq, seq ? 0 : x->chunks,
                               seq ? 0 : x->rows) < 0 ||
                 sync_sql_lit(c, q, file, strlen(file)) < 0 ||
                 dm_buf_printf(q, ",%" PRIu64 ",", pos) < 0 || sync_sql_lit(c, q, stmts, n) < 0 ||
                 dm_buf_puts(q, ");") < 0
             ? -1
             : 0;
}

/* ---- the prepare ---- */

int sync_xa_gtid(sync_xa *x, const dm_binlog_gtid *g, const dm_binlog_event *ev, dm_error *err) {
  if (x->open) {
    x->u->host->error_make(x->u->ctx, err, DM_ERR_BINLOG_CORRUPT, NULL,
                           "sync: the GTID event at %s:%" PRIu64 " begins a group inside the "
                           "prepared XA transaction %s (no XA_PREPARE event ended it)",
                           ev->file, ev->offset, x->text);
    return -1;
  }
  if (g->flags & (DM_BINLOG_GTID_PREPARED_XA | DM_BINLOG_GTID_COMPLETED_XA))
    sync_xa_set(x, &g->xa);
  if (!(g->flags & DM_BINLOG_GTID_PREPARED_XA))
    return 0;
  sync_batch_reset(&x->batch);
  x->open = true;
  x->cleared = false;
  x->chunks = 0;
  x->rows = 0;
  return 0;
}

bool sync_xa_open(const sync_xa *x) {
  return x->open;
}

sync_batch *sync_xa_batch(sync_xa *x) {
  return &x->batch;
}

/* sync_batch_sql's sink: one statement row per chunk of text. */
static int sync_xa_emit(void *arg, dm_buf *chunk) {
  sync_xa *x = arg;
  dm_buf *q = &x->q;
  dm_buf_reset(q);
  if (sync_xa_clear_sql(x, x->conn, q) < 0 ||
      sync_xa_insert_sql(x, x->conn, q, x->chunks + 1, "", 0, chunk->p, chunk->len) < 0) {
    sync_nomem(x->u, x->err);
    return -1;
  }
  dm_buf_reset(chunk);
  if (sync_db_exec(x->u, x->conn, q->p, q->len, "sync: cannot store an XA transaction's statements",
                   x->err) < 0)
    return -1;
  x->chunks++;
  return 0;
}

/* The batch's statements into statement rows; the batch is emptied. */
static int sync_xa_store(sync_xa *x, MYSQL *c, dm_error *err) {
  sync_unit *u = x->u;
  sync_batch *b = &x->batch;
  if (b->n_recs == 0) {
    x->rows += b->n_rows; /* compacted away, or none */
    sync_batch_reset(b);
    return 0;
  }
  x->conn = c;
  x->err = err;
  memset(err, 0, sizeof *err);
  dm_buf text = {0};
  int rc = -1;
  if (sync_batch_assign(b, 1) < 0) {
    sync_nomem(u, err);
    goto out;
  }
  if (sync_batch_sql(u, b, 0, &text, u->cfg.chunk_bytes, sync_xa_emit, x) < 0 ||
      (text.len && sync_xa_emit(x, &text) < 0)) {
    if (err->code == DM_ERR_OK)
      sync_nomem(u, err);
    goto out;
  }
  x->rows += b->n_rows;
  rc = 0;
out:
  dm_buf_free(&text);
  sync_batch_reset(b);
  return rc;
}

int sync_xa_spill(sync_xa *x, MYSQL *c, dm_error *err) {
  const sync_batch *b = &x->batch;
  if (b->n_rows < x->u->cfg.batch_rows && b->arena.len < x->u->cfg.batch_bytes)
    return 0;
  return sync_xa_store(x, c, err);
}

/* Opens the target transaction of a prepare or an end in q: its FIRST statement moves every
 * checkpoint row to `after`, so a connection of a killed process that the server still runs holds
 * their locks from the start, and the next start's locking read of the checkpoint waits for it to
 * commit or roll back (as a worker's transaction does, sync_checkpoint.c). */
static int sync_xa_begin_sql(sync_xa *x, MYSQL *c, dm_buf *q, const dm_position *after,
                             int n_workers) {
  dm_buf_reset(q);
  return dm_buf_puts(q, "START TRANSACTION;") < 0 ||
                 sync_cp_reset_sql(x->u, c, after, 0, n_workers, q) < 0
             ? -1
             : 0;
}

int sync_xa_prepare(sync_xa *x, MYSQL *c, const dm_binlog_xa_prepare *xp, const dm_binlog_event *ev,
                    const dm_position *after, int n_workers, dm_error *err) {
  sync_unit *u = x->u;
  dm_binlog_xid mine = {x->format_id, x->gtrid_len, x->bqual_len, x->data};
  if (!x->open || xp->one_phase || !dm_binlog_xid_equal(&mine, &xp->xid)) {
    char text[DM_BINLOG_XID_TEXT_MAX] = "";
    dm_binlog_xid_format(&xp->xid, text, sizeof text);
    u->host->error_make(u->ctx, err, DM_ERR_BINLOG_CORRUPT, NULL,
                        "sync: the XA_PREPARE event at %s:%" PRIu64 " (XID %s%s) does not end the "
                        "prepared XA transaction its GTID event began (%s)",
                        ev->file, ev->offset, text, xp->one_phase ? ", one phase" : "",
                        x->open ? x->text : "none");
    return -1;
  }
  if (sync_xa_store(x, c, err) < 0)
    return -1;
  dm_buf *q = &x->q;
  if (sync_xa_begin_sql(x, c, q, after, n_workers) < 0 || sync_xa_clear_sql(x, c, q) < 0 ||
      sync_xa_insert_sql(x, c, q, 0, ev->file, ev->offset, "", 0) < 0 ||
      dm_buf_puts(q, "COMMIT") < 0)
    return sync_nomem(u, err);
  if (sync_db_exec(u, c, q->p, q->len, "sync: cannot store an XA transaction's prepare", err) < 0) {
    mysql_query(c, "ROLLBACK");
    return -1;
  }
  x->open = false;
  sync_metrics_checkpoint(u); /* its transaction moved the global row */
  u->host->logf(u->ctx, DM_LOG_DEBUG,
                "sync: XA %s prepared at %s:%" PRIu64 ": %" PRIu64
                " row change(s) stored in %" PRIu32 " part(s) until its commit",
                x->text, ev->file, ev->offset, x->rows, x->chunks);
  return 0;
}

/* ---- the commit or rollback ---- */

/* One row of the XA table: `cols` of row seq, or *res NULL when there is none. */
static int sync_xa_read(sync_xa *x, MYSQL *c, const char *cols, uint32_t seq, MYSQL_RES **res,
                        dm_error *err) {
  dm_buf *q = &x->q;
  dm_buf_reset(q);
  *res = NULL;
  if (dm_buf_printf(q, "SELECT %s FROM %s", cols, x->table) < 0 || sync_xa_where(x, c, q) < 0 ||
      dm_buf_printf(q, " AND `seq` = %" PRIu32, seq) < 0)
    return sync_nomem(x->u, err);
  if (mysql_real_query(c, q->p, (unsigned long)q->len) != 0 || !(*res = mysql_store_result(c))) {
    sync_db_error(x->u, c, "sync: cannot read an XA transaction's statements", err);
    return -1;
  }
  if (mysql_num_rows(*res) == 0) {
    mysql_free_result(*res);
    *res = NULL;
  }
  return 0;
}

/* Runs the stored statement rows 1..chunks (inside the open transaction). */
static int sync_xa_apply(sync_xa *x, MYSQL *c, uint32_t chunks, const char *prepared_at,
                         const dm_binlog_event *ev, dm_error *err) {
  sync_unit *u = x->u;
  for (uint32_t seq = 1; seq <= chunks; seq++) {
    if (u->host->stop_requested(u->ctx)) {
      /* rolled back by the caller: applied again after the restart */
      u->host->error_make(u->ctx, err, DM_ERR_DB_QUERY, NULL,
                          "sync: stopped while applying the XA COMMIT at %s:%" PRIu64, ev->file,
                          ev->offset);
      err->resumable = 1;
      return -1;
    }
    MYSQL_RES *res;
    if (sync_xa_read(x, c, "`stmts`", seq, &res, err) < 0)
      return -1;
    if (!res) {
      u->host->error_make(u->ctx, err, DM_ERR_SYNC_XA, NULL,
                          "sync: XA %s, committed at %s:%" PRIu64 " (prepared at %s): part %" PRIu32
                          " of its %" PRIu32 " stored in %s is missing",
                          x->text, ev->file, ev->offset, prepared_at, seq, chunks, x->table);
      return -1;
    }
    MYSQL_ROW row = mysql_fetch_row(res);
    unsigned long *len = mysql_fetch_lengths(res);
    int rc = sync_db_exec(u, c, row[0], len[0], "sync: applying an XA transaction failed", err);
    mysql_free_result(res);
    if (rc < 0) {
      if (err->code == DM_ERR_DB_QUERY && !err->resumable) {
        char cause[DM_ERROR_RAW_MAX];
        dm_strlcpy(cause, err->raw_cause, sizeof cause);
        u->host->error_make(u->ctx, err, DM_ERR_SYNC_APPLY, cause,
                            "sync: the target refused XA %s, committed at %s:%" PRIu64
                            " (prepared at %s)",
                            x->text, ev->file, ev->offset, prepared_at);
      }
      return -1;
    }
  }
  return 0;
}

int sync_xa_end(sync_xa *x, MYSQL *c, bool commit, const dm_binlog_event *ev,
                const dm_position *after, int n_workers, uint64_t *rows, dm_error *err) {
  sync_unit *u = x->u;
  *rows = 0;
  dm_buf *q = &x->q;
  if (sync_xa_begin_sql(x, c, q, after, n_workers) < 0)
    return sync_nomem(u, err);
  if (sync_db_exec(u, c, q->p, q->len, "sync: cannot write the checkpoint", err) < 0)
    goto fail;
  MYSQL_RES *res;
  if (sync_xa_read(x, c, "`chunks`, `row_changes`, `binlog_name`, `binlog_pos`", 0, &res, err) < 0)
    goto fail;
  if (!res) {
    u->host->logf(u->ctx, DM_LOG_WARN,
                  "sync: XA %s %s at %s:%" PRIu64 ": nothing of it is stored in %s (it was "
                  "prepared before the task's start position, or its rows there were deleted): %s",
                  x->text, commit ? "committed" : "rolled back", ev->file, ev->offset, x->table,
                  commit ? "if it changed tables the task replicates, those rows are not on the "
                           "target"
                         : "nothing to do");
  } else {
    MYSQL_ROW row = mysql_fetch_row(res);
    uint32_t chunks = (uint32_t)strtoul(row[0] ? row[0] : "0", NULL, 10);
    *rows = strtoull(row[1] ? row[1] : "0", NULL, 10);
    char at[DM_POSITION_NAME_MAX + 24];
    snprintf(at, sizeof at, "%s:%s", row[2] ? row[2] : "", row[3] ? row[3] : "");
    mysql_free_result(res);
    if (commit && sync_xa_apply(x, c, chunks, at, ev, err) < 0)
      goto fail;
    if (!commit)
      *rows = 0;
    u->host->logf(u->ctx, DM_LOG_DEBUG, "sync: XA %s prepared at %s %s at %s:%" PRIu64, x->text, at,
                  commit ? "committed" : "rolled back", ev->file, ev->offset);
  }
  dm_buf_reset(q);
  if (dm_buf_printf(q, "DELETE FROM %s", x->table) < 0 || sync_xa_where(x, c, q) < 0 ||
      dm_buf_puts(q, ";COMMIT") < 0) {
    sync_nomem(u, err);
    goto fail;
  }
  if (sync_db_exec(u, c, q->p, q->len, "sync: cannot delete an XA transaction's statements", err) ==
      0) {
    sync_metrics_checkpoint(u); /* its transaction moved the global row */
    return 0;
  }
fail:
  mysql_query(c, "ROLLBACK");
  return -1;
}

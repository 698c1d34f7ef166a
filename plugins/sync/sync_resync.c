/*
 * The re-sync of a shard lock (docs/shard.md "Pessimistic mode", step 7): once the lock's
 * operation is applied, the rows the main stream dropped for the held tables (between each one's
 * DDL and the block point) are read again from the binlog and applied. The reader starts at the
 * lowest checkpoint row at `resync`, applies only the row events of `resync` tables that lie at or
 * past their own row, and commits at transaction ends in batches: each batch is one target
 * transaction on one connection that also moves those tables' rows to its end, so every row event
 * is applied exactly once across restarts. At the block point the rows are deleted.
 *
 * It reads on its own stream: the caller closes the main one first (a second replica stream with
 * the same server_id would throw the first out) and opens it again at the block point after.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dmhost/binlog_trx.h>

#include "sync.h"
#include "sync_maps.h"
#include "sync_shard.h"
#include "sync_tracker.h"

typedef struct sync_resync_state {
  sync_unit *u;
  MYSQL *tc;
  sync_source *src;
  sync_maps maps;
  dm_binlog_trx trx;
  sync_batch b;
  dm_binlog_value *before, *after;
  uint32_t n_values;
  uint8_t *plain;
  size_t plain_cap;
  uint64_t rows;
  dm_error *err; /* where sync_resync_send reports */
  const dm_position *block;
} sync_resync_state;

/* A chunk of the batch's transaction to the target (sync_batch_sql's emit). */
static int sync_resync_send(void *arg, dm_buf *chunk) {
  sync_resync_state *rs = arg;
  int rc = sync_db_exec(rs->u, rs->tc, chunk->p, chunk->len,
                        "sync: shard re-sync: applying rows failed", rs->err);
  dm_buf_reset(chunk);
  return rc;
}

/* Applies the batch and moves the `resync` rows to `to`, in one transaction. */
static int sync_resync_flush(sync_resync_state *rs, const dm_position *to, dm_error *err) {
  sync_unit *u = rs->u;
  dm_buf q = {0};
  /* worker 0's row stands at the block point: setting it again fences the transaction */
  if (dm_buf_puts(&q, "START TRANSACTION;") < 0 ||
      sync_cp_worker_sql(u, rs->tc, 0, rs->block, 0, &q) < 0 ||
      sync_shard_resync_move_sql(u->shard, rs->tc, to, &q) < 0)
    goto nomem;
  if (rs->b.n_recs) {
    if (sync_batch_assign(&rs->b, 1) < 0)
      goto nomem;
    err->code = DM_ERR_OK;
    if (sync_batch_sql(u, &rs->b, 0, &q, u->cfg.chunk_bytes, sync_resync_send, rs) < 0) {
      if (err->code == DM_ERR_OK)
        goto nomem;
      goto failed;
    }
  }
  if (dm_buf_puts(&q, "COMMIT") < 0)
    goto nomem;
  if (sync_resync_send(rs, &q) < 0)
    goto failed;
  dm_buf_free(&q);
  sync_shard_resync_moved(u->shard, to);
  atomic_fetch_add(&u->total_rows, rs->b.n_rows);
  atomic_fetch_add(&u->total_txns, rs->b.n_txns);
  rs->rows += rs->b.n_rows;
  sync_batch_reset(&rs->b);
  return 0;
nomem:
  sync_nomem(u, err);
failed:
  mysql_query(rs->tc, "ROLLBACK");
  dm_buf_free(&q);
  if (err->code == DM_ERR_DB_QUERY && !err->resumable)
    err->code = DM_ERR_SYNC_APPLY;
  return -1;
}

static int sync_resync_map(sync_resync_state *rs, const dm_binlog_event *ev, dm_error *err) {
  sync_unit *u = rs->u;
  dm_binlog_table_map *tm;
  if (dm_binlog_table_map_decode(sync_source_format(rs->src), ev, &tm, err) < 0)
    return -1;
  if (!sync_shard_resync_wants(u->shard, tm->db.ptr, tm->table.ptr, ev->file, ev->offset)) {
    dm_binlog_table_map_free(tm); /* its rows are not re-synced: no map, no row */
    return 0;
  }
  char at[DM_POSITION_NAME_MAX + 24];
  snprintf(at, sizeof at, "%s:%" PRIu64, ev->file, ev->offset);
  if (sync_tracker_table_map(u->tracker, rs->tc, tm, at, err) < 0) {
    dm_binlog_table_map_free(tm);
    return -1;
  }
  if (sync_maps_put(&rs->maps, tm, sync_schema_map_sig(tm)) < 0) {
    dm_binlog_table_map_free(tm);
    return sync_nomem(u, err);
  }
  if (tm->column_count > rs->n_values) {
    free(rs->before);
    free(rs->after);
    rs->n_values = tm->column_count;
    rs->before = calloc(rs->n_values, sizeof *rs->before);
    rs->after = calloc(rs->n_values, sizeof *rs->after);
    if (!rs->before || !rs->after)
      return sync_nomem(u, err);
  }
  return 0;
}

static int sync_resync_rows(sync_resync_state *rs, const dm_binlog_event *ev, dm_error *err) {
  sync_unit *u = rs->u;
  const dm_binlog_format *fmt = sync_source_format(rs->src);
  uint64_t id;
  if (dm_binlog_event_table_id(fmt, ev, &id, err) < 0)
    return -1;
  const sync_map_slot *slot = sync_maps_get(&rs->maps, id);
  if (!slot)
    return 0; /* a table the re-sync leaves alone */
  const dm_binlog_table_map *tm = slot->tm;
  sync_table *t = sync_schema_table(u->schema, rs->tc, tm, slot->sig, err);
  if (!t)
    return -1;
  if (!t->allowed)
    return 0;
  dm_binlog_rows rows;
  if (dm_binlog_rows_begin(fmt, ev, &rows, err) < 0)
    return -1;
  int k = rows.kind == DM_ROWS_WRITE ? 0 : rows.kind == DM_ROWS_UPDATE ? 1 : 2;
  int skip = sync_filter_rows(u, t, k, ev, err);
  if (skip != 0)
    return skip < 0 ? -1 : 0;
  int rc;
  while ((rc = dm_binlog_rows_next(&rows, tm, rs->before, rs->after, err)) == 1) {
    int x = sync_expr_has(t, k) ? sync_expr_skip(u, t, k, tm, rs->before, rs->after, err) : 0;
    if (x < 0)
      return -1;
    if (!x && sync_batch_add_row(u, &rs->b, t, rows.kind, tm, rs->before, rs->after, err) < 0)
      return -1;
  }
  return rc;
}

/* A transaction (or a statement) ends at ev: a batch big enough is applied there. */
static int sync_resync_boundary(sync_resync_state *rs, const dm_binlog_event *ev, dm_error *err) {
  sync_maps_txn_end(&rs->maps);
  if (rs->b.n_recs)
    rs->b.n_txns++;
  if (rs->b.n_rows < rs->u->cfg.batch_rows && rs->b.arena.len < rs->u->cfg.batch_bytes)
    return 0;
  dm_position to = {0};
  dm_strlcpy(to.name, ev->file, sizeof to.name);
  to.pos = ev->header.next_pos;
  return sync_resync_flush(rs, &to, err);
}

static int sync_resync_event(sync_resync_state *rs, const dm_binlog_event *ev, dm_error *err) {
  sync_unit *u = rs->u;
  const dm_binlog_format *fmt = sync_source_format(rs->src);
  dm_binlog_trx_step step;
  switch (ev->header.type) {
  case DM_BINLOG_GTID: {
    dm_binlog_gtid g;
    if (dm_binlog_decode_gtid(fmt, ev, &g, err) < 0)
      return -1;
    dm_binlog_trx_feed(&rs->trx, ev, &g, NULL);
    return 0;
  }
  case DM_BINLOG_TABLE_MAP:
    dm_binlog_trx_feed(&rs->trx, ev, NULL, NULL);
    return sync_resync_map(rs, ev, err);
  case DM_BINLOG_WRITE_ROWS_V1:
  case DM_BINLOG_UPDATE_ROWS_V1:
  case DM_BINLOG_DELETE_ROWS_V1:
  case DM_BINLOG_WRITE_ROWS_V2:
  case DM_BINLOG_UPDATE_ROWS_V2:
  case DM_BINLOG_DELETE_ROWS_V2:
  case DM_BINLOG_PARTIAL_UPDATE_ROWS:
    dm_binlog_trx_feed(&rs->trx, ev, NULL, NULL);
    return sync_resync_rows(rs, ev, err);
  case DM_BINLOG_QUERY: {
    dm_binlog_query q;
    if (dm_binlog_decode_query(fmt, ev, &q, err) < 0)
      return -1;
    step = dm_binlog_trx_feed(&rs->trx, ev, NULL, &q);
    break;
  }
  default:
    step = dm_binlog_trx_feed(&rs->trx, ev, NULL, NULL);
    break;
  }
  (void)u;
  return dm_binlog_trx_boundary(step) && step != DM_BINLOG_TRX_OUTSIDE
             ? sync_resync_boundary(rs, ev, err)
             : 0;
}

int sync_resync(sync_unit *u, MYSQL *tc, const dm_position *block, dm_error *err) {
  dm_position from;
  if (!sync_shard_resync_from(u->shard, &from))
    return 1;
  sync_resync_state rs = {.u = u, .tc = tc, .err = err, .block = block};
  sync_batch_init(&rs.b);
  int rc = -1;
  char b1[DM_POSITION_NAME_MAX + 32], b2[DM_POSITION_NAME_MAX + 32];
  u->host->logf(u->ctx, DM_LOG_INFO, "sync: shard re-sync of the held tables from %s to %s",
                dm_position_format(&from, b1, sizeof b1), dm_position_format(block, b2, sizeof b2));
  if (dm_position_compare_file(&from, block) < 0) {
    if (sync_source_open(u, &from, &rs.src, err) < 0)
      goto out;
    pthread_mutex_lock(&u->lock);
    u->src = rs.src;
    pthread_mutex_unlock(&u->lock);
    for (;;) {
      if (u->host->stop_requested(u->ctx) || atomic_load(&u->killed)) {
        rc = 0; /* the rows say how far it got: the next start goes on from there */
        goto out;
      }
      dm_binlog_event ev;
      int n = sync_source_next(rs.src, &ev, err);
      if (n < 0)
        goto out;
      if (n == 0 || ev.artificial)
        continue;
      dm_position at = {0};
      dm_strlcpy(at.name, ev.file, sizeof at.name);
      at.pos = ev.offset;
      if (dm_position_compare_file(&at, block) >= 0)
        break;
      if (dm_binlog_is_compressed_event(ev.header.type)) {
        dm_binlog_event plain;
        if (dm_binlog_event_uncompress(sync_source_format(rs.src), &ev, &rs.plain, &rs.plain_cap,
                                       &plain, err) < 0)
          goto out;
        ev = plain;
      }
      if (sync_resync_event(&rs, &ev, err) < 0)
        goto out;
    }
  }
  if (sync_resync_flush(&rs, block, err) < 0 || sync_shard_resync_end(u->shard, tc, err) < 0)
    goto out;
  u->host->logf(u->ctx, DM_LOG_INFO,
                "sync: shard re-sync done at %s: %" PRIu64 " row change(s) of the held tables "
                "applied",
                b2, rs.rows);
  rc = 1;
out:
  pthread_mutex_lock(&u->lock);
  u->src = NULL;
  pthread_mutex_unlock(&u->lock);
  sync_source_close(rs.src);
  sync_maps_free(&rs.maps);
  sync_batch_free(&rs.b);
  free(rs.before);
  free(rs.after);
  free(rs.plain);
  return rc;
}

/*
 * process: the coordinator. One thread reads events, keeps the table maps, turns row changes into
 * batch records (sync_batch.c) and closes a batch at a transaction end when it is big or old
 * enough, or when nothing more is there to read. Closing hands the batch to the workers and starts
 * the next one in a second batch object, so reading and decoding go on while the workers apply
 * the previous batch; the coordinator waits for them only when it closes the next batch (or meets
 * a DDL, or stops).
 *
 * Start: the checkpoint (sync_checkpoint.c) else the dump's end position (modes all, load&sync)
 * else the task's meta (mode incremental). When the worker rows disagree (a crash between the
 * commits of one batch), the first batch is rebuilt up to the larger position with the old worker
 * count and only the workers behind apply their part.
 *
 * Stop (pause, stop, swap): each worker commits its part if it is on its last round trip, else
 * rolls it back (sync_worker.c); the batch being built is dropped. Either way the checkpoint rows
 * say what is applied, and the next start goes on from there (rebuilding a half-committed batch).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sync_run.h"
#include "sync_shard.h"
#include "sync_tracker.h"

/* Inside a transaction's BEGIN ... end (not between groups, nor in a one-statement group). */
static bool sync_in_txn(const sync_run_state *r) {
  return r->trx.in_trx && !r->trx.standalone;
}

/* ---- table maps ---- */

static void sync_maps_status(sync_run_state *r) {
  atomic_store(&r->u->table_maps, r->maps.n);
  atomic_store(&r->u->table_maps_peak, r->maps.peak);
}

static int sync_map_put(sync_run_state *r, dm_binlog_table_map *tm) {
  if (sync_maps_put(&r->maps, tm, sync_schema_map_sig(tm)) < 0) {
    dm_binlog_table_map_free(tm);
    return -1;
  }
  sync_maps_status(r);
  if (tm->column_count > r->n_values) {
    free(r->before);
    free(r->after);
    r->n_values = tm->column_count;
    r->before = calloc(r->n_values, sizeof *r->before);
    r->after = calloc(r->n_values, sizeof *r->after);
    if (!r->before || !r->after)
      return -1;
  }
  return 0;
}

/* A transaction boundary (a commit, a DDL): the maps it did not use go. */
static void sync_maps_boundary(sync_run_state *r) {
  sync_maps_txn_end(&r->maps);
  sync_maps_status(r);
}

/* ---- status ---- */

static void sync_poll_master(sync_run_state *r) {
  sync_master_poll(r->u, r->sc, &r->last_status_ns);
}

/* ---- events ---- */

/* Recovery read up to the batch's end (r->target): the workers that had not committed it apply
 * their part, and the sync goes on as after any batch. */
static int sync_rebuilt(sync_run_state *r, dm_error *err) {
  r->u->host->logf(r->u->ctx, DM_LOG_INFO,
                   "sync: recovery: the batch up to %s:%" PRIu64
                   " is rebuilt; the workers that had not committed it apply their part",
                   r->target.name, r->target.pos);
  if (sync_close_batch(r, err) < 0)
    return -1;
  return sync_resize(r, err);
}

/* A transaction ended at ev (XID, COMMIT, ROLLBACK). `applied`: it brought rows to the batch;
 * else nothing to apply, but the checkpoint moves past it as past any group. */
static int sync_txn_end(sync_run_state *r, const dm_binlog_event *ev, bool applied, dm_error *err) {
  sync_unit *u = r->u;
  if (sync_gtid_commit(&r->gtid, err) < 0)
    return -1;
  r->pending_gtid = false;
  sync_maps_boundary(r);
  dm_strlcpy(r->cur.name, ev->file, sizeof r->cur.name);
  r->cur.pos = ev->header.next_pos;
  sync_gtid_format(&r->gtid, r->cur.gtid, sizeof r->cur.gtid);
  r->skip_rows = 0;
  sync_batch *b = r->building;
  b->end = r->cur;
  b->end_rows = 0;
  if (applied)
    b->n_txns++;
  else
    b->moved = true;
  if (r->txn_rows && !b->first_ts) /* rows of the task's tables: a filtered one is no backlog */
    b->first_ts = ev->header.timestamp;
  b->last_ts = ev->header.timestamp;
  if (r->recovering) {
    int c = sync_cp_compare(&r->cur, 0, &r->target, r->target_rows);
    if (c == 0)
      return sync_rebuilt(r, err);
    if (c > 0) {
      u->host->error_make(u->ctx, err, DM_ERR_CHECKPOINT, NULL,
                          "sync: the checkpoint's worker rows name %s:%" PRIu64
                          ", which is not a transaction end of the binlog (read past it to "
                          "%s:%" PRIu64 ")",
                          r->target.name, r->target.pos, r->cur.name, r->cur.pos);
      err->resumable = 0;
      return -1;
    }
    return 0;
  }
  /* Closed when full or old, and also as soon as the workers have nothing to do: the batch then
   * grows exactly as long as the previous one takes to apply (group commit), which keeps the lag
   * low under a light load and the batches big when the target is the bottleneck. */
  if (b->n_rows >= u->cfg.batch_rows || b->arena.len >= u->cfg.batch_bytes ||
      (b->first_ns && dm_clock_ns() - b->first_ns >= (int64_t)u->cfg.batch_ms * 1000000) ||
      !sync_workers_busy(r->ws))
    return sync_close_batch(r, err);
  return 0;
}

static int sync_rows(sync_run_state *r, const dm_binlog_event *ev, dm_error *err) {
  sync_unit *u = r->u;
  const dm_binlog_format *fmt = sync_source_format(r->src);
  uint64_t id;
  if (dm_binlog_event_table_id(fmt, ev, &id, err) < 0)
    return -1;
  const sync_map_slot *slot = sync_maps_get(&r->maps, id);
  if (!slot) {
    u->host->error_make(u->ctx, err, DM_ERR_BINLOG_CORRUPT, NULL,
                        "sync: a row event at %s:%" PRIu64 " names table id %" PRIu64
                        " with no table map before it",
                        ev->file, ev->offset, id);
    return -1;
  }
  const dm_binlog_table_map *tm = slot->tm;
  if (sync_shard_skips(u->shard, tm->db.ptr, tm->table.ptr))
    return 0; /* held at a shard DDL: the re-sync applies these rows */
  sync_table *t = sync_schema_table(u->schema, r->tc, tm, slot->sig, err);
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
  while ((rc = dm_binlog_rows_next(&rows, tm, r->before, r->after, err)) == 1) {
    if (++r->txn_rows <= r->skip_rows)
      continue;                /* applied before the restart (a split transaction) */
    if (sync_expr_has(t, k)) { /* counted in txn_rows all the same: positions stay exact */
      int x = sync_expr_skip(u, t, k, tm, r->before, r->after, err);
      if (x < 0)
        return -1;
      if (x)
        continue;
    }
    /* a prepared XA transaction's row: stored on the target until its commit (sync_xa.c) */
    if (sync_xa_open(r->xa)) {
      if (sync_batch_add_row(u, sync_xa_batch(r->xa), t, rows.kind, tm, r->before, r->after, err) <
              0 ||
          sync_xa_spill(r->xa, r->tc, err) < 0)
        return -1;
      continue;
    }
    sync_batch *b = r->building;
    if (sync_batch_add_row(u, b, t, rows.kind, tm, r->before, r->after, err) < 0)
      return -1;
    if (r->recovering
            ? r->target_rows == r->txn_rows &&
                  dm_position_compare_file(&r->txn_start, &r->target) == 0
            : b->n_rows >= 2 * u->cfg.batch_rows || b->arena.len >= 2 * u->cfg.batch_bytes) {
      /* close inside the transaction: the batch ends at its start plus the rows read of it */
      b->end = r->txn_start;
      b->end_rows = r->txn_rows;
      b->moved = true;
      b->last_ts = ev->header.timestamp;
      if (!b->first_ts)
        b->first_ts = ev->header.timestamp;
      bool recovered = r->recovering;
      if (sync_close_batch(r, err) < 0 || (recovered && sync_resize(r, err) < 0))
        return -1;
    }
  }
  return rc;
}

/* A transaction starts at ev (its GTID event, or its BEGIN). */
static void sync_txn_begin(sync_run_state *r, const dm_binlog_event *ev) {
  dm_strlcpy(r->txn_start.name, ev->file, sizeof r->txn_start.name);
  r->txn_start.pos = ev->offset;
  sync_gtid_format(&r->gtid, r->txn_start.gtid, sizeof r->txn_start.gtid);
  r->txn_rows = 0;
}

/* A group that ends at ev and was applied with every checkpoint row moved past it (a DDL, an XA
 * prepare or end): the GTID set takes its GTID; *after is the position after ev. */
static int sync_group_after(sync_run_state *r, const dm_binlog_event *ev, dm_position *after,
                            dm_error *err) {
  if (sync_gtid_commit(&r->gtid, err) < 0)
    return -1;
  r->pending_gtid = false;
  memset(after, 0, sizeof *after);
  dm_strlcpy(after->name, ev->file, sizeof after->name);
  after->pos = ev->header.next_pos;
  sync_gtid_format(&r->gtid, after->gtid, sizeof after->gtid);
  return 0;
}

/* ... and the state of the run moves there (a quiet point: every row at `after`). */
static void sync_group_applied(sync_run_state *r, const dm_binlog_event *ev,
                               const dm_position *after) {
  sync_unit *u = r->u;
  sync_maps_boundary(r);
  r->cur = *after;
  r->building->end = *after;
  r->building->end_rows = 0;
  r->done = *after;
  r->done_rows = 0;
  sync_set_synced(u, after);
  sync_keep_from(r, after);
  atomic_store(&u->last_event_ts, ev->header.timestamp);
  sync_metrics_applied(u, 0, 0, ev->header.timestamp);
}

/* An XA barrier at ev: everything before it is applied first (as for a DDL). */
static int sync_barrier_xa(sync_run_state *r, const dm_binlog_event *ev, dm_error *err) {
  if (r->recovering) {
    r->u->host->error_make(r->u->ctx, err, DM_ERR_CHECKPOINT, NULL,
                           "sync: an XA event at %s:%" PRIu64 " lies inside the batch the "
                           "checkpoint's worker rows disagree about (up to %s:%" PRIu64 ")",
                           ev->file, ev->offset, r->target.name, r->target.pos);
    return -1;
  }
  return sync_drain(r, err);
}

/* XA_PREPARE: the prepared group read since its GTID event is stored, not applied. */
static int sync_on_xa_prepare(sync_run_state *r, const dm_binlog_event *ev, dm_error *err) {
  dm_binlog_xa_prepare xp;
  dm_position after;
  if (dm_binlog_decode_xa_prepare(sync_source_format(r->src), ev, &xp, err) < 0 ||
      sync_barrier_xa(r, ev, err) < 0 || sync_group_after(r, ev, &after, err) < 0)
    return -1;
  if (sync_xa_prepare(r->xa, r->tc, &xp, ev, &after, r->n_workers, err) < 0)
    return -1;
  sync_group_applied(r, ev, &after);
  return 0;
}

/* The statement of a COMPLETED_XA group: XA COMMIT or XA ROLLBACK of the XID its GTID named (the
 * tracker's step for it). */
static int sync_on_xa_end(sync_run_state *r, const dm_binlog_event *ev, dm_binlog_trx_step step,
                          dm_error *err) {
  sync_unit *u = r->u;
  bool commit = step == DM_BINLOG_TRX_XA_COMMIT;
  if (!commit && step != DM_BINLOG_TRX_XA_ROLLBACK) {
    u->host->error_make(u->ctx, err, DM_ERR_BINLOG_CORRUPT, NULL,
                        "sync: the statement at %s:%" PRIu64 " follows a GTID event flagged "
                        "COMPLETED_XA but is no XA COMMIT or XA ROLLBACK",
                        ev->file, ev->offset);
    return -1;
  }
  dm_position after;
  uint64_t rows;
  if (sync_barrier_xa(r, ev, err) < 0 || sync_group_after(r, ev, &after, err) < 0)
    return -1;
  if (sync_xa_end(r->xa, r->tc, commit, ev, &after, r->n_workers, &rows, err) < 0)
    return -1;
  sync_group_applied(r, ev, &after);
  atomic_fetch_add(&u->total_rows, rows);
  atomic_fetch_add(&u->total_txns, commit ? 1 : 0);
  sync_metrics_applied(u, commit ? 1 : 0, rows, 0);
  return 0;
}

static int sync_event(sync_run_state *r, const dm_binlog_event *ev, dm_error *err) {
  sync_unit *u = r->u;
  const dm_binlog_format *fmt = sync_source_format(r->src);
  dm_binlog_trx_step step;
  switch (ev->header.type) {
  case DM_BINLOG_GTID: {
    dm_binlog_gtid g;
    if (dm_binlog_decode_gtid(fmt, ev, &g, err) < 0)
      return -1;
    dm_binlog_trx_feed(&r->trx, ev, &g, NULL);
    r->pending_gtid = true;
    sync_gtid_pend_mariadb(&r->gtid, g.domain_id, g.server_id, g.seq_no);
    sync_txn_begin(r, ev);
    if (sync_xa_gtid(r->xa, &g, ev, err) < 0)
      return -1;
    return 0;
  }
  case DM_BINLOG_MYSQL_GTID:
  case DM_BINLOG_MYSQL_ANONYMOUS_GTID:
    /* a BEGIN follows for row changes; a DDL is the one QUERY after it */
    if (sync_gtid_pend_mysql(&r->gtid, fmt, ev, err) < 0)
      return -1;
    dm_binlog_trx_feed(&r->trx, ev, NULL, NULL);
    r->pending_gtid = true;
    sync_txn_begin(r, ev);
    return 0;
  case DM_BINLOG_TABLE_MAP: {
    dm_binlog_trx_feed(&r->trx, ev, NULL, NULL);
    dm_binlog_table_map *tm;
    if (dm_binlog_table_map_decode(fmt, ev, &tm, err) < 0)
      return -1;
    /* names (and what else the map lacks) from the schema tracker, or checked against it */
    char at[DM_POSITION_NAME_MAX + 24];
    snprintf(at, sizeof at, "%s:%" PRIu64, ev->file, ev->offset);
    /* a held table's rows are dropped here and decoded by the re-sync, after the tracker
     * followed its later DDLs: no check against the tracker now */
    if (!sync_shard_skips(u->shard, tm->db.ptr, tm->table.ptr) &&
        sync_tracker_table_map(u->tracker, r->tc, tm, at, err) < 0) {
      dm_binlog_table_map_free(tm);
      return -1;
    }
    if (sync_map_put(r, tm) < 0) {
      sync_nomem(u, err);
      return -1;
    }
    return 0;
  }
  case DM_BINLOG_WRITE_ROWS_V1:
  case DM_BINLOG_UPDATE_ROWS_V1:
  case DM_BINLOG_DELETE_ROWS_V1:
  case DM_BINLOG_WRITE_ROWS_V2:
  case DM_BINLOG_UPDATE_ROWS_V2:
  case DM_BINLOG_DELETE_ROWS_V2:
  case DM_BINLOG_PARTIAL_UPDATE_ROWS:
    dm_binlog_trx_feed(&r->trx, ev, NULL, NULL);
    return sync_rows(r, ev, err);
  case DM_BINLOG_XID:
    dm_binlog_trx_feed(&r->trx, ev, NULL, NULL);
    return sync_txn_end(r, ev, true, err);
  case DM_BINLOG_XA_PREPARE:
    dm_binlog_trx_feed(&r->trx, ev, NULL, NULL);
    return sync_on_xa_prepare(r, ev, err);
  case DM_BINLOG_QUERY: {
    dm_binlog_query q;
    if (dm_binlog_decode_query(fmt, ev, &q, err) < 0)
      return -1;
    bool completing = r->trx.in_trx && (r->trx.flags & DM_BINLOG_GTID_COMPLETED_XA);
    step = dm_binlog_trx_feed(&r->trx, ev, NULL, &q);
    if (completing)
      return sync_on_xa_end(r, ev, step, err);
    switch (step) {
    case DM_BINLOG_TRX_BEGIN:
      sync_txn_begin(r, ev); /* no GTID event before it (MySQL without GTIDs) */
      return 0;
    case DM_BINLOG_TRX_COMMIT:
      return sync_txn_end(r, ev, true, err);
    case DM_BINLOG_TRX_ROLLBACK:
      /* MariaDB and MySQL log BEGIN ... ROLLBACK only for a transaction that changed a
       * non-transactional table (MyISAM, Aria): the transactional part is not in the binlog, and
       * the row events it holds are changes that stay on the source. They were applied as they
       * came (a group is never held whole: memory stays bounded) and are kept, so the target
       * keeps what the source kept; the position and the GTID set move past the group. */
      return sync_txn_end(r, ev, r->txn_rows > 0, err);
    case DM_BINLOG_TRX_STATEMENT:
      break; /* a statement of its own: DDL, below */
    default:
      /* a statement inside a row-format transaction (its BEGIN, SAVEPOINT, ...): nothing to
       * apply */
      return 0;
    }
    /* a statement of its own: DDL. Everything before it is applied first. */
    if (r->recovering) {
      u->host->error_make(u->ctx, err, DM_ERR_CHECKPOINT, NULL,
                          "sync: a DDL at %s:%" PRIu64 " lies inside the batch the checkpoint's "
                          "worker rows disagree about (up to %s:%" PRIu64 ")",
                          ev->file, ev->offset, r->target.name, r->target.pos);
      return -1;
    }
    if (sync_drain(r, err) < 0)
      return -1;
    dm_position after;
    if (sync_group_after(r, ev, &after, err) < 0)
      return -1;
    if (sync_ddl_apply(u, r->tc, fmt, ev, &q, &after, r->n_workers, err) < 0)
      return -1;
    sync_group_applied(r, ev, &after);
    /* the validator's checkpoint moves past the DDL: a replay never decodes rows across one */
    sync_val_mark(u->val, r->tc, &after);
    r->shard_check = u->shard != NULL;
    return 0;
  }
  case DM_BINLOG_MYSQL_PREVIOUS_GTIDS:
    if (sync_gtid_previous(&r->gtid, fmt, ev, err) < 0)
      return -1;
    /* it moves the position like any event between transactions */
    /* fall through */
  default:
    step = dm_binlog_trx_feed(&r->trx, ev, NULL, NULL);
    if (step == DM_BINLOG_TRX_STATEMENT)
      return sync_txn_end(r, ev, true, err); /* a standalone group of one such event */
    /* Format descriptions, rotations, GTID lists, annotations, fillers: nothing to apply. Between
     * transactions they still move the position (a rotation with no transaction after it must
     * not leave the checkpoint behind the source's position forever). A batch rebuilt after a
     * stop between its workers' commits may end at such an event (a rotation closed it): the
     * rebuild ends there too, as at a transaction end (sync_txn_end). */
    if (step == DM_BINLOG_TRX_OUTSIDE) {
      dm_strlcpy(r->cur.name, ev->file, sizeof r->cur.name);
      r->cur.pos = ev->header.next_pos;
      r->building->end = r->cur;
      r->building->end_rows = 0;
      r->building->moved = true;
      if (r->recovering && sync_cp_compare(&r->cur, 0, &r->target, r->target_rows) == 0)
        return sync_rebuilt(r, err);
    }
    return 0;
  }
}

/* A MySQL 8 TRANSACTION_PAYLOAD: its events (BEGIN, table maps, rows, XID) applied as if they
 * stood in the binlog, each with the payload's position (dm_binlog_payload_next). */
static int sync_payload(sync_run_state *r, const dm_binlog_event *ev, dm_error *err) {
  if (!r->payload && dm_binlog_payload_new(&r->payload, err) < 0)
    return -1;
  const dm_binlog_format *fmt = sync_source_format(r->src);
  if (dm_binlog_payload_begin(r->payload, fmt, ev, err) < 0)
    return -1;
  dm_binlog_event in;
  int rc;
  while ((rc = dm_binlog_payload_next(r->payload, &in, err)) == 1)
    if (sync_event(r, &in, err) < 0)
      return -1;
  return rc;
}

/* ---- shard groups ---- */

/* A side reader (a shard's re-sync, the validator's catch-up) reads with the sync's server_id, so
 * the main stream is closed first (a second stream of one id throws the first out) and opened
 * again at r->cur after. */
static void sync_main_close(sync_run_state *r) {
  pthread_mutex_lock(&r->u->lock);
  r->u->src = NULL;
  pthread_mutex_unlock(&r->u->lock);
  sync_source_close(r->src);
  r->src = NULL;
}

static int sync_main_open(sync_run_state *r, dm_error *err) {
  if (sync_source_open(r->u, &r->cur, &r->src, err) < 0)
    return -1;
  dm_binlog_trx_reset(&r->trx);
  pthread_mutex_lock(&r->u->lock);
  r->u->src = r->src;
  pthread_mutex_unlock(&r->u->lock);
  return 0;
}

/* At a quiet point (everything read is applied, r->cur the global row): the re-sync an operation
 * left, then each group whose tables all arrived is resolved (the source blocks in there) and
 * re-synced. 1 go on, 0 stopped, -1 with *err. */
static int sync_shard_settle(sync_run_state *r, dm_error *err) {
  sync_unit *u = r->u;
  r->shard_check = false;
  /* optimistic: held tables released meanwhile move to `resync` first */
  if (sync_shard_opt_settle(u->shard, r->tc, err) < 0)
    return -1;
  for (;;) {
    dm_position from;
    if (sync_shard_resync_from(u->shard, &from)) {
      /* the re-sync reads on its own stream; the main one opens again at the block point */
      sync_main_close(r);
      int rc = sync_resync(u, r->tc, &r->cur, err);
      if (rc <= 0)
        return rc;
      if (sync_main_open(r, err) < 0)
        return -1;
    }
    int g = sync_shard_ready(u->shard, err);
    if (g == -2)
      return -1;
    if (g < 0)
      return 1;
    int rc = sync_shard_resolve(u->shard, r->tc, g, &r->cur, u->replay_ddl_at, err);
    u->replay_ddl_at[0] = '\0';
    if (rc <= 0)
      return rc;
  }
}

/* `validation start --start-time` while the sync runs (between transactions): everything read is
 * applied, then the validator's replay feeds the rows from the time's position to here on a stream
 * of its own (the main one closed: one server_id), then the main stream opens again here. */
static int sync_val_catch_up(sync_run_state *r, dm_error *err) {
  if (sync_drain(r, err) < 0)
    return -1;
  sync_main_close(r);
  sync_val_replay(r->u, r->tc, &r->done, r->done_rows);
  return sync_main_open(r, err);
}

/* ---- the start ---- */

static int sync_start_position(sync_run_state *r, sync_cp_state *st, dm_error *err) {
  sync_unit *u = r->u;
  if (!st->exists) {
    dm_position p = {0};
    const char *from;
    if (u->host->handoff_position(u->ctx, &p) && dm_position_is_set(&p))
      from = "the dump's end position";
    else if (u->host->meta_position(u->ctx, &p) && dm_position_is_set(&p))
      from = "the task's meta";
    else {
      u->host->error_make(u->ctx, err, DM_ERR_SYNC_NO_START, NULL,
                          "sync: task `%s` has no sync checkpoint, no position from a dump and no "
                          "`meta` for source `%s`: nowhere to start",
                          u->host->task_name(u->ctx), u->source_id);
      return -1;
    }
    u->host->logf(u->ctx, DM_LOG_INFO, "sync: first start, from %s %s:%" PRIu64 " (GTID %s)", from,
                  p.name, p.pos, p.gtid[0] ? p.gtid : "-");
    if (sync_tracker_first_start(u->tracker, r->tc, err) < 0)
      return -1;
    /* the dump's safe-mode exit point (consistency none), kept in the global row from now on */
    memset(&u->safe_exit, 0, sizeof u->safe_exit);
    if (DM_HOST_HAS(u->host, handoff_safe_mode_exit) &&
        !u->host->handoff_safe_mode_exit(u->ctx, &u->safe_exit))
      memset(&u->safe_exit, 0, sizeof u->safe_exit);
    if (sync_cp_reset(u, r->tc, &p, 0, u->cfg.workers, err) < 0)
      return -1;
    st->min = st->max = p;
    st->min_rows = st->max_rows = 0;
    st->n_workers = u->cfg.workers;
  } else if (st->n_workers == 0) {
    if (sync_cp_reset(u, r->tc, &st->min, st->min_rows, u->cfg.workers, err) < 0)
      return -1;
    st->n_workers = u->cfg.workers;
  }
  r->n_workers = st->n_workers;
  r->cur = st->min;
  r->done = st->min;
  r->done_rows = st->min_rows;
  r->skip_rows = st->min_rows;
  if (sync_cp_compare(&st->min, st->min_rows, &st->max, st->max_rows) != 0) {
    r->recovering = true;
    r->target = st->max;
    r->target_rows = st->max_rows;
    for (int w = 0; w < st->n_workers; w++)
      r->skip[w] =
          sync_cp_compare(&st->worker_pos[w], st->worker_rows[w], &st->max, st->max_rows) == 0;
    u->host->logf(u->ctx, DM_LOG_WARN,
                  "sync: the checkpoint's worker rows stand at %s:%" PRIu64 " and %s:%" PRIu64
                  " (a stop between the commits of one batch): rebuilding that batch",
                  st->min.name, st->min.pos, st->max.name, st->max.pos);
  }
  /* The global row can lag the worker rows (a stop after the workers' commits and before its
   * update): it is set to where everything is applied. */
  if (!r->recovering && dm_position_compare_file(&st->global, &st->min) != 0 &&
      sync_cp_global(u, r->tc, &st->min, err) < 0)
    return -1;
  dm_strlcpy(u->replay_ddl_at, st->ddl_at, sizeof u->replay_ddl_at);
  if (st->exists)
    u->safe_exit = st->safe_exit;
  if (sync_safe_start(u, r->tc, &r->cur, r->recovering, &r->safe_auto, &r->safe_until_ns, err) < 0)
    return -1;
  if (sync_gtid_parse(&r->gtid, st->min.gtid, err) < 0)
    return -1;
  return 0;
}

void sync_run(sync_unit *u, dm_result *result) {
  dm_error e = {0};
  sync_run_state r = {.u = u};
  sync_cp_state st;
  sync_batch_init(&r.batches[0]);
  sync_batch_init(&r.batches[1]);
  r.building = &r.batches[0];
  r.inflight = &r.batches[1];
  bool ok = false;
  bool first = false;
  bool reading = false; /* the start is done: r.done is where everything is applied */

  sync_metrics_run_start(u);
  if (!(r.tc = sync_db_connect_target(u, &e)) || !(r.sc = sync_db_connect_source(u, &e)) ||
      sync_db_precheck(u, r.sc, &e) < 0)
    goto out;
  if ((!u->charsets && sync_charsets_load(r.tc, &u->charsets, &e) < 0) ||
      sync_tz_start(u, r.sc, r.tc, &e) < 0)
    goto out;
  if (sync_tracker_new(u, &u->tracker) < 0 || sync_xa_new(u, &r.xa) < 0) {
    sync_nomem(u, &e);
    goto out;
  }
  if (sync_cp_prepare(u, r.tc, &e) < 0 || sync_xa_table(r.xa, r.tc, &e) < 0 ||
      sync_online_start(u, r.tc, &u->online, &e) < 0 || sync_cp_load(u, r.tc, &st, true, &e) < 0)
    goto out;
  first = !st.exists;
  if (sync_start_position(&r, &st, &e) < 0)
    goto out;
  if (sync_shard_new(u, &u->shard, &e) < 0 ||
      sync_shard_start(u->shard, r.sc, r.tc, first, &e) < 0 ||
      (u->shard && sync_shard_redone(u->shard, &e) < 0) ||
      sync_shard_opt_start(u->shard, r.tc, &e) < 0)
    goto out;
  r.shard_check = u->shard != NULL;
  sync_set_synced(u, &r.cur);
  sync_val_run_start(u->val, r.tc); /* the meta-schema is there (sync_cp_prepare) */
  /* a kill -9 took the rows fed after the validator's last flush: fed again, before the sync
   * reads on (so the schema tracker is still the one of the sync's start) */
  sync_val_replay(u, r.tc, &r.cur, r.skip_rows);
  if (sync_source_open(u, &r.cur, &r.src, &e) < 0 ||
      sync_workers_start(u, r.n_workers, &r.ws, &e) < 0)
    goto out;
  if (!r.recovering && sync_resize(&r, &e) < 0)
    goto out;
  char skip[128] = "";
  if (r.skip_rows)
    snprintf(skip, sizeof skip, ", skipping the first %" PRIu64 " row changes of its transaction",
             r.skip_rows);
  u->host->logf(u->ctx, DM_LOG_INFO,
                "sync: reading %s from %s:%" PRIu64 " (GTID %s)%s, %d worker(s)",
                u->host->relay_dir(u->ctx) ? "the relay log" : "the source's binlog", r.cur.name,
                r.cur.pos, r.cur.gtid[0] ? r.cur.gtid : "-", skip, r.n_workers);
  atomic_store(&u->run_start_rows, atomic_load(&u->total_rows));
  atomic_store(&u->run_start_ns, dm_clock_ns());

  pthread_mutex_lock(&u->lock);
  u->src = r.src;
  pthread_mutex_unlock(&u->lock);
  reading = true;
  for (;;) {
    if (u->host->stop_requested(u->ctx) || atomic_load(&u->killed))
      break;
    if (r.shard_check && !r.recovering) {
      int src = sync_shard_settle(&r, &e);
      if (src < 0)
        goto out;
      if (src == 0)
        break;
    }
    if (sync_val_catch_up_wanted(u->val) && !sync_in_txn(&r) && !r.recovering &&
        sync_val_catch_up(&r, &e) < 0)
      goto out;
    if (r.has_inflight && r.building->n_txns > 0 && !sync_in_txn(&r) && !r.recovering &&
        sync_close_when_done(&r, &e) < 0)
      goto out;
    dm_binlog_event ev;
    int rc = sync_source_next(r.src, &ev, &e);
    if (rc < 0)
      goto out;
    if (rc == 0) {
      atomic_store(&u->idle, true);
      if (!sync_in_txn(&r) && !r.recovering && sync_close_batch(&r, &e) < 0)
        goto out;
      if (r.has_inflight && !sync_workers_busy(r.ws) && sync_finish_inflight(&r, &e) < 0)
        goto out;
      if (!r.has_inflight && !sync_in_txn(&r))
        sync_metrics_caught_up(u);
      if (r.safe_until_ns && !r.building->first_ns)
        sync_safe_timed(u, &r.safe_until_ns, 0); /* idle: the window may end meanwhile */
      /* optimistic: a held table may be released at any time; idle is a quiet point to ask */
      if (!r.has_inflight && !sync_in_txn(&r) && sync_shard_opt_waiting(u->shard) &&
          dm_clock_ns() - r.opt_polled_ns > 200 * 1000000ull) {
        r.opt_polled_ns = dm_clock_ns();
        r.shard_check = true;
      }
      sync_poll_master(&r);
      continue;
    }
    atomic_store(&u->idle, false);
    if (ev.artificial)
      continue;
    if (dm_binlog_is_compressed_event(ev.header.type)) {
      dm_binlog_event plain;
      if (dm_binlog_event_uncompress(sync_source_format(r.src), &ev, &r.plain, &r.plain_cap, &plain,
                                     &e) < 0)
        goto out;
      ev = plain;
    }
    if (ev.header.type == DM_BINLOG_TRANSACTION_PAYLOAD ? sync_payload(&r, &ev, &e) < 0
                                                        : sync_event(&r, &ev, &e) < 0)
      goto out;
    sync_poll_master(&r);
  }
  /* stopped: finish what the workers hold, drop what was being built */
  if (sync_finish_inflight(&r, &e) < 0)
    goto out;
  ok = true;
out:
  /* a stop with nothing in flight (the read cut short by the stop counts too): everything up to
   * r.done is applied, the next start needs no automatic safe mode */
  if (reading && !r.recovering && !r.has_inflight &&
      (ok || atomic_load(&u->killed) || (e.resumable && u->host->stop_requested(u->ctx))))
    sync_safe_stop(u, r.tc, &r.done);
  /* paused or stopped: the validator, which goes on, takes nothing from the sync (val_defer) */
  atomic_store(&u->apply_ts, 0);
  sync_val_run_stop(u->val); /* flushes its checkpoint row */
  pthread_mutex_lock(&u->lock);
  u->src = NULL;
  u->safe_auto = SYNC_SAFE_NONE; /* status: no run, no automatic safe mode */
  pthread_mutex_unlock(&u->lock);
  if (!ok && r.has_inflight) {
    dm_error e2;
    r.has_inflight = false;
    sync_workers_wait(r.ws, &e2);
  }
  sync_workers_stop(r.ws);
  sync_source_close(r.src);
  sync_expr_close(u);
  dm_collations_free(u->coll);
  u->coll = NULL;
  sync_db_close(u, r.tc);
  sync_db_close(u, r.sc);
  sync_maps_free(&r.maps);
  sync_tracker_free(u->tracker);
  u->tracker = NULL;
  sync_online_free(u->online);
  u->online = NULL;
  sync_shard_free(u->shard);
  u->shard = NULL;
  sync_xa_free(r.xa);
  free(r.before);
  free(r.after);
  free(r.plain);
  dm_binlog_payload_free(r.payload);
  sync_gtid_free(&r.gtid);
  sync_batch_free(&r.batches[0]);
  sync_batch_free(&r.batches[1]);
  atomic_store(&u->run_start_ns, 0);
  /* an error that retrying fixes, met while stopping (a lost connection, a deadlock whose retry
   * the stop cut short): the checkpoint is consistent, so this is a stop like any other */
  if (ok || atomic_load(&u->killed) || (e.resumable && u->host->stop_requested(u->ctx))) {
    result->outcome = DM_OUTCOME_CANCELED;
    return;
  }
  dm_result_fail(result, &e);
}

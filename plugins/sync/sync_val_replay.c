/*
 * The validator's replay at the start of process (docs/validation.md, "The consistency
 * argument"): the validator's checkpoint (sync_val_meta.c) is flushed every meta-flush-interval,
 * the sync's at every batch, so after a kill -9 the validator's position can lie before the
 * sync's. The rows between them were applied and fed once, then forgotten with the process. Here
 * they are read again from the binlog (relay or source, sync_source.c) and fed to the validator,
 * never applied to the target, never moving the sync's checkpoint, never replaying a DDL.
 *
 * Why a reader of its own and not the coordinator's loop: the coordinator's loop applies (batches,
 * DDL, XA, shard groups, checkpoints); this one only decodes. It runs before the coordinator reads
 * anything, on the coordinator's thread, so the table maps, the schema tracker and the tables are
 * the coordinator's without a lock.
 *
 * The rows are decoded with the schema tracker's view at the sync's checkpoint. That is right only
 * if no DDL lies between the two positions, which the validator makes so: it flushes its checkpoint
 * at the end of every DDL the sync applies (sync_val_mark). A span that still holds one (a
 * checkpoint written before that, a failed flush) is scanned first and replayed only after its
 * last DDL; the row changes before it are counted and logged as not validated again.
 *
 * The same replay starts a validator at DM's start-time (a first start without a checkpoint):
 * from the first transaction that began at or after the time, when that lies behind the sync.
 * `validation start --start-time` on a running sync has it run at the coordinator's next
 * transaction boundary (sync_run.c), the main stream closed meanwhile (one server_id).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dmhost/binlog_find.h>
#include <dmhost/binlog_trx.h>

#include "sync.h"
#include "sync_maps.h"
#include "sync_shard.h"
#include "sync_tracker.h"
#include "sync_val.h"

typedef struct val_replay {
  sync_unit *u;
  MYSQL *tc;
  sync_source *src;
  const dm_position *to; /* the sync's start: stop there, ... */
  uint64_t to_rows;      /* ... after this many row changes of the transaction starting there */
  bool scan;             /* the first pass: only find the last DDL and count row changes */
  bool in_last;          /* inside the transaction that starts at `to` */
  bool seen;             /* an event of the span was read */
  sync_maps maps;
  dm_binlog_trx trx;
  dm_binlog_value *before, *after;
  uint32_t n_values;
  sync_batch b;
  dm_position txn_start;
  uint64_t txn_rows;
  uint64_t rows;         /* row changes read (scan) or fed (replay) */
  uint64_t rows_at_ddl;  /* scan: row changes before the last DDL */
  dm_position after_ddl; /* scan: the position after the last DDL (name "": none) */
  uint8_t *plain;
  size_t plain_cap;
  dm_binlog_payload *payload;
} val_replay;

static int replay_map(val_replay *p, const dm_binlog_event *ev, dm_error *err) {
  sync_unit *u = p->u;
  dm_binlog_table_map *tm;
  if (dm_binlog_table_map_decode(sync_source_format(p->src), ev, &tm, err) < 0)
    return -1;
  char at[DM_POSITION_NAME_MAX + 24];
  snprintf(at, sizeof at, "%s:%" PRIu64, ev->file, ev->offset);
  if ((!p->scan && !sync_shard_skips(u->shard, tm->db.ptr, tm->table.ptr) &&
       sync_tracker_table_map(u->tracker, p->tc, tm, at, err) < 0)) {
    dm_binlog_table_map_free(tm);
    return -1;
  }
  uint32_t n = tm->column_count;
  if (sync_maps_put(&p->maps, tm, p->scan ? 0 : sync_schema_map_sig(tm)) < 0) {
    dm_binlog_table_map_free(tm);
    return sync_nomem(u, err);
  }
  if (n > p->n_values) {
    free(p->before);
    free(p->after);
    p->n_values = n;
    p->before = calloc(n, sizeof *p->before);
    p->after = calloc(n, sizeof *p->after);
    if (!p->before || !p->after)
      return sync_nomem(u, err);
  }
  return 0;
}

/* Feeds what the batch holds, up to `end` (+ end_rows of the transaction there). */
static void replay_feed(val_replay *p, const dm_position *end, uint64_t end_rows) {
  p->b.end = *end;
  p->b.end_rows = end_rows;
  p->rows += p->b.n_rows;
  sync_val_feed(p->u->val, &p->b);
  sync_batch_reset(&p->b);
}

/* A row event. 1: the sync's start reached (the row changes the sync applies next are its). */
static int replay_rows(val_replay *p, const dm_binlog_event *ev, dm_error *err) {
  sync_unit *u = p->u;
  const dm_binlog_format *fmt = sync_source_format(p->src);
  uint64_t id;
  if (dm_binlog_event_table_id(fmt, ev, &id, err) < 0)
    return -1;
  const sync_map_slot *slot = sync_maps_get(&p->maps, id);
  if (!slot) {
    u->host->error_make(u->ctx, err, DM_ERR_BINLOG_CORRUPT, NULL,
                        "validator: replay: a row event at %s:%" PRIu64 " names table id %" PRIu64
                        " with no table map before it",
                        ev->file, ev->offset, id);
    return -1;
  }
  const dm_binlog_table_map *tm = slot->tm;
  sync_table *t = NULL;
  if (!p->scan) {
    if (sync_shard_skips(u->shard, tm->db.ptr, tm->table.ptr))
      return 0;
    if (!(t = sync_schema_table(u->schema, p->tc, tm, slot->sig, err)))
      return -1;
    if (!t->allowed)
      return 0;
  }
  dm_binlog_rows rows;
  if (dm_binlog_rows_begin(fmt, ev, &rows, err) < 0)
    return -1;
  int k = rows.kind == DM_ROWS_WRITE ? 0 : rows.kind == DM_ROWS_UPDATE ? 1 : 2;
  if (t) {
    int skip = sync_filter_rows(u, t, k, ev, err);
    if (skip != 0)
      return skip < 0 ? -1 : 0;
  }
  int rc;
  while ((rc = dm_binlog_rows_next(&rows, tm, p->before, p->after, err)) == 1) {
    p->txn_rows++;
    if (p->scan) {
      p->rows++;
      continue;
    }
    if (sync_expr_has(t, k)) {
      int x = sync_expr_skip(u, t, k, tm, p->before, p->after, err);
      if (x < 0)
        return -1;
      if (x)
        continue;
    }
    int a;
    while ((a = sync_batch_add_row(u, &p->b, t, rows.kind, tm, p->before, p->after, err)) == 1)
      replay_feed(p, &p->txn_start, p->txn_rows - 1); /* a compaction that cannot merge */
    if (a < 0)
      return -1;
    if (p->in_last && p->txn_rows == p->to_rows)
      return 1;
  }
  return rc;
}

/* A transaction's end at ev: its rows go to the validator (as the coordinator feeds a batch).
 * 1: it was the transaction the sync stands inside (it ended before to_rows: the sync's start). */
static int replay_txn_end(val_replay *p, const dm_binlog_event *ev) {
  sync_maps_txn_end(&p->maps);
  if (p->scan)
    return 0;
  dm_position end = {0};
  dm_strlcpy(end.name, ev->file, sizeof end.name);
  end.pos = ev->header.next_pos;
  replay_feed(p, &end, 0);
  return p->in_last ? 1 : 0;
}

static int replay_payload(val_replay *p, const dm_binlog_event *ev, dm_error *err);

/* A QUERY event: BEGIN, COMMIT, a DDL, XA statements. */
static int replay_query(val_replay *p, const dm_binlog_event *ev, const dm_position *at,
                        dm_error *err) {
  dm_binlog_query q;
  if (dm_binlog_decode_query(sync_source_format(p->src), ev, &q, err) < 0)
    return -1;
  switch (dm_binlog_trx_feed(&p->trx, ev, NULL, &q)) {
  case DM_BINLOG_TRX_BEGIN: /* no GTID event before it (MySQL without GTIDs) */
    p->txn_start = *at;
    p->txn_rows = 0;
    return 0;
  case DM_BINLOG_TRX_COMMIT:
  case DM_BINLOG_TRX_ROLLBACK: /* its row changes stay on the source: the sync applied them */
    return replay_txn_end(p, ev);
  case DM_BINLOG_TRX_XA_PREPARE:
    /* a prepared XA transaction's rows are applied by its XA COMMIT, never fed (sync_xa.c) */
    sync_maps_txn_end(&p->maps);
    sync_batch_reset(&p->b);
    return 0;
  case DM_BINLOG_TRX_STATEMENT: /* a DDL: the rows before it had another schema */
    sync_maps_txn_end(&p->maps);
    if (!p->scan) {
      p->u->host->error_make(p->u->ctx, err, DM_ERR_BINLOG_CORRUPT, NULL,
                             "validator: replay: a statement at %s:%" PRIu64
                             " that the first reading of the span did not find",
                             ev->file, ev->offset);
      return -1;
    }
    p->rows_at_ddl = p->rows;
    p->after_ddl = *at;
    p->after_ddl.pos = ev->header.next_pos;
    return 0;
  default: /* inside a transaction, or XA COMMIT/ROLLBACK of a prepared one: nothing to feed */
    return 0;
  }
}

/* One event. 1: the sync's start reached, 0 go on, -1 with *err. */
static int replay_event(val_replay *p, const dm_binlog_event *ev, dm_error *err) {
  const dm_binlog_format *fmt = sync_source_format(p->src);
  dm_position at = {0};
  dm_strlcpy(at.name, ev->file, sizeof at.name);
  at.pos = ev->offset;
  /* the events of a payload share its position (dm_binlog_payload_next) */
  int c = dm_position_compare_file(&at, p->to);
  if (c >= 0 && (p->scan || (!p->in_last && (c > 0 || p->to_rows == 0))))
    return 1; /* the coordinator reads on from here */
  p->seen = true;
  if (c == 0)
    p->in_last = true; /* the sync stands inside this transaction: to_rows of it are applied */
  switch (ev->header.type) {
  case DM_BINLOG_TRANSACTION_PAYLOAD:
    return replay_payload(p, ev, err);
  case DM_BINLOG_GTID: {
    dm_binlog_gtid g;
    if (dm_binlog_decode_gtid(fmt, ev, &g, err) < 0)
      return -1;
    dm_binlog_trx_feed(&p->trx, ev, &g, NULL);
    p->txn_start = at;
    p->txn_rows = 0;
    return 0;
  }
  case DM_BINLOG_MYSQL_GTID:
  case DM_BINLOG_MYSQL_ANONYMOUS_GTID:
    dm_binlog_trx_feed(&p->trx, ev, NULL, NULL);
    p->txn_start = at;
    p->txn_rows = 0;
    return 0;
  case DM_BINLOG_TABLE_MAP:
    dm_binlog_trx_feed(&p->trx, ev, NULL, NULL);
    return replay_map(p, ev, err);
  case DM_BINLOG_WRITE_ROWS_V1:
  case DM_BINLOG_UPDATE_ROWS_V1:
  case DM_BINLOG_DELETE_ROWS_V1:
  case DM_BINLOG_WRITE_ROWS_V2:
  case DM_BINLOG_UPDATE_ROWS_V2:
  case DM_BINLOG_DELETE_ROWS_V2:
  case DM_BINLOG_PARTIAL_UPDATE_ROWS:
    dm_binlog_trx_feed(&p->trx, ev, NULL, NULL);
    return replay_rows(p, ev, err);
  case DM_BINLOG_QUERY:
    return replay_query(p, ev, &at, err);
  case DM_BINLOG_XID:
    dm_binlog_trx_feed(&p->trx, ev, NULL, NULL);
    return replay_txn_end(p, ev);
  case DM_BINLOG_XA_PREPARE:
    dm_binlog_trx_feed(&p->trx, ev, NULL, NULL);
    sync_maps_txn_end(&p->maps);
    sync_batch_reset(&p->b); /* prepared: applied by its XA COMMIT, never fed (sync_xa.c) */
    return 0;
  default:
    if (dm_binlog_trx_feed(&p->trx, ev, NULL, NULL) == DM_BINLOG_TRX_STATEMENT)
      return replay_txn_end(p, ev); /* a standalone group of one such event */
    return 0;
  }
}

static int replay_payload(val_replay *p, const dm_binlog_event *ev, dm_error *err) {
  if (!p->payload && dm_binlog_payload_new(&p->payload, err) < 0)
    return -1;
  if (dm_binlog_payload_begin(p->payload, sync_source_format(p->src), ev, err) < 0)
    return -1;
  dm_binlog_event in;
  int rc;
  while ((rc = dm_binlog_payload_next(p->payload, &in, err)) == 1) {
    int e = replay_event(p, &in, err);
    if (e != 0)
      return e;
  }
  return rc;
}

/* One pass from `from`. 1: the sync's start reached, 0: stopped, -1 with *err. */
static int replay_pass(val_replay *p, const dm_position *from, dm_error *err) {
  sync_unit *u = p->u;
  p->seen = p->in_last = false;
  dm_binlog_trx_reset(&p->trx);
  if (sync_source_open(u, from, &p->src, err) < 0)
    return -1;
  pthread_mutex_lock(&u->lock);
  u->src = p->src; /* a kill interrupts its wait */
  pthread_mutex_unlock(&u->lock);
  int rc;
  for (;;) {
    if (u->host->stop_requested(u->ctx) || atomic_load(&u->killed)) {
      rc = 0;
      break;
    }
    dm_binlog_event ev;
    if ((rc = sync_source_next(p->src, &ev, err)) < 0)
      break;
    if (rc == 0) {
      /* nothing more written: the sync's start (read by the sync before) lies behind */
      if (p->seen) {
        rc = 1;
        break;
      }
      continue;
    }
    if (ev.artificial)
      continue;
    if (dm_binlog_is_compressed_event(ev.header.type)) {
      dm_binlog_event plain;
      if (dm_binlog_event_uncompress(sync_source_format(p->src), &ev, &p->plain, &p->plain_cap,
                                     &plain, err) < 0) {
        rc = -1;
        break;
      }
      ev = plain;
    }
    if ((rc = replay_event(p, &ev, err)) != 0)
      break;
  }
  pthread_mutex_lock(&u->lock);
  u->src = NULL;
  pthread_mutex_unlock(&u->lock);
  sync_source_close(p->src);
  p->src = NULL;
  sync_maps_free(&p->maps);
  memset(&p->maps, 0, sizeof p->maps);
  return rc;
}

/* DM's start-time (DM's getInitialBinlogPosition): the first transaction that began at or after
 * it on the source (the SDK's finder, DM's forms, the source's time zone). 0, or -1 with *err. */
static int replay_start_time(sync_unit *u, const char *when, dm_position *out, dm_error *err) {
  MYSQL *c = sync_db_connect_source(u, err);
  if (!c)
    return -1;
  int64_t at;
  dm_binlog_time_where where;
  /* the sync's server_id: its own stream is not open now (process start, or closed for this) */
  dm_binlog_stream_options so = {.source = u->host->source_db(u->ctx),
                                 .server_id = u->cfg.server_id,
                                 .connect_timeout_s = 10,
                                 .read_timeout_s = 60,
                                 .omit_annotate_rows = true,
                                 .source_size = dm_host_db_endpoint_size(u->host, u->ctx)};
  int rc = dm_binlog_parse_start_time(c, when, &at, err) < 0 ||
                   dm_binlog_find_by_time(c, &so, at, out, &where, err) < 0
               ? -1
               : 0;
  sync_db_close(u, c);
  if (rc == 0 && where == DM_BINLOG_TIME_AFTER) {
    /* DM's ErrConfigStartTimeTooLate */
    u->host->error_make(u->ctx, err, DM_ERR_CONFIG_START_TIME, NULL,
                        "validator: start-time %s: the source has no transaction that began then "
                        "or later (its binlog ends at %s:%" PRIu64 "): start it again with an "
                        "earlier time, or without one (it starts where the sync is)",
                        when, out->name, out->pos);
    return -1;
  }
  if (rc == 0 && where == DM_BINLOG_TIME_BEFORE)
    u->host->logf(u->ctx, DM_LOG_WARN,
                  "validator: start-time %s is before the source's oldest binlog: from its start",
                  when);
  return rc;
}

/* A validator without a checkpoint: from the start-time's position (*from, 1: fed from there),
 * or from `to` (0: marked there, nothing to feed). -1: the time's error, the validator stopped. */
static int replay_first(sync_unit *u, MYSQL *tc, const dm_position *to, dm_position *from) {
  sync_val *v = u->val;
  pthread_mutex_lock(&v->lock);
  char when[sizeof v->cfg.start_time];
  dm_strlcpy(when, v->cfg.start_time, sizeof when);
  pthread_mutex_unlock(&v->lock);
  if (!when[0]) { /* its checkpoint starts where the sync does */
    sync_val_mark(v, tc, to);
    return 0;
  }
  dm_error e = {0};
  if (replay_start_time(u, when, from, &e) < 0) {
    /* DM's validator stops with the error in its result (sendError) */
    u->host->logf(u->ctx, DM_LOG_ERROR, "validator: stopped: %s", e.message);
    pthread_mutex_lock(&v->lock);
    snprintf(v->last_error, sizeof v->last_error, "%s", e.message);
    v->wish = false;
    sync_val_join_locked(v);
    pthread_mutex_unlock(&v->lock);
    return -1;
  }
  u->host->logf(u->ctx, DM_LOG_INFO,
                "validator: start-time %s: from %s:%" PRIu64 " (GTID %s), the sync at %s:%" PRIu64,
                when, from->name, from->pos, from->gtid[0] ? from->gtid : "-", to->name, to->pos);
  if (dm_position_compare_file(from, to) >= 0) {
    /* ahead of the sync: the batches before it are not fed; its checkpoint says so at once */
    sync_val_mark(v, tc, from);
    pthread_mutex_lock(&v->lock);
    v->from = *from;
    v->has_from = true;
    pthread_mutex_unlock(&v->lock);
    return 0;
  }
  pthread_mutex_lock(&v->lock);
  v->pos = *from;
  v->has_pos = true;
  pthread_mutex_unlock(&v->lock);
  return 1;
}

void sync_val_replay(sync_unit *u, MYSQL *tc, const dm_position *to, uint64_t to_rows) {
  sync_val *v = u->val;
  pthread_mutex_lock(&v->lock);
  bool on = v->thread_on, has = v->has_pos;
  dm_position from = v->pos;
  atomic_store(&v->catch_up, false); /* here it is (the coordinator feeds, this is its thread) */
  pthread_mutex_unlock(&v->lock);
  if (!on)
    return;
  if (!has && replay_first(u, tc, to, &from) <= 0)
    return;
  int c = dm_position_compare_file(&from, to);
  if (c > 0) {
    /* its checkpoint ahead of the sync's (a start-time): the batches up to it are not fed */
    pthread_mutex_lock(&v->lock);
    v->from = from;
    v->has_from = true;
    pthread_mutex_unlock(&v->lock);
    return;
  }
  if (c == 0 && to_rows == 0)
    return;
  val_replay p = {.u = u, .tc = tc, .to = to, .to_rows = to_rows, .scan = true};
  sync_batch_init(&p.b);
  dm_error e = {0};
  u->host->logf(u->ctx, DM_LOG_INFO,
                "validator: replay: its checkpoint %s:%" PRIu64 " is behind the sync's %s:%" PRIu64
                " (a stop without its flush, or a start-time): the row changes between are fed "
                "to it, not applied",
                from.name, from.pos, to->name, to->pos);
  int rc = replay_pass(&p, &from, &e);
  if (rc == 1 && p.after_ddl.name[0]) {
    u->host->logf(u->ctx, DM_LOG_WARN,
                  "validator: replay: a DDL lies in the span, the last ending at %s:%" PRIu64
                  ": the %" PRIu64 " row changes before it are not validated (the schema tracker "
                  "knows the tables as they are after it); replaying from there",
                  p.after_ddl.name, p.after_ddl.pos, p.rows_at_ddl);
    from = p.after_ddl;
  }
  uint64_t read = p.rows;
  p.rows = 0;
  p.scan = false;
  if (rc == 1)
    rc = replay_pass(&p, &from, &e);
  if (rc == 1) {
    replay_feed(&p, to, to_rows); /* what is left; the validator's position is the sync's now */
    sync_val_mark(v, tc, to);     /* flushed: a second kill replays nothing of it */
    u->host->logf(u->ctx, DM_LOG_INFO,
                  "validator: replay: done, %" PRIu64 " row changes fed again from %s:%" PRIu64
                  " (%" PRIu64 " in the span), nothing applied",
                  p.rows, from.name, from.pos, read);
  } else if (rc < 0) {
    u->host->logf(u->ctx, DM_LOG_WARN,
                  "validator: replay: given up (%s): the row changes from %s:%" PRIu64
                  " to %s:%" PRIu64 " not fed yet are not validated; the sync goes on",
                  e.message, from.name, from.pos, to->name, to->pos);
  }
  sync_batch_free(&p.b);
  free(p.before);
  free(p.after);
  free(p.plain);
  dm_binlog_payload_free(p.payload);
}

/*
 * The coordinator's batch cycle (docs/sync.md "Batches"): a batch closed at a transaction end is
 * handed to the workers while the next one is built in the second batch object; the coordinator
 * waits for the workers only when it closes the next batch, meets a DDL or stops. The global
 * checkpoint row moves past a batch once every worker committed it, after the next batch is
 * handed out, so its round trip overlaps the workers' work.
 */
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>

/* How long sync_close_when_done sleeps at most between looks at the stop token. */
#define SYNC_DONE_POLL_MS 50

/* A batch of at most this many row changes goes to one worker, which moves every worker's row in
 * its transaction: under a steady load (batches of a few transactions) a split batch cost one
 * commit per worker and waited for the slowest of them, and its lag's p99 was 2-3x one worker's
 * (bench/sync/README.md). A part of a larger batch is big enough for the split to pay. */
#define SYNC_SOLO_ROWS 256

#include "sync_run.h"
#include "sync_shard.h"

/* The checkpoint moved to p: the relay may purge before it, or before the lowest position a held
 * shard table still needs read again, or the validator's checkpoint (its replay reads from there). */
void sync_keep_from(sync_run_state *r, const dm_position *p) {
  dm_position low, val;
  if (sync_shard_lowest(r->u->shard, &low) && dm_position_compare_file(&low, p) < 0)
    p = &low;
  if (sync_val_keep_from(r->u->val, &val) && dm_position_compare_file(&val, p) < 0)
    p = &val;
  sync_source_checkpoint(r->src, p);
}

void sync_set_synced(sync_unit *u, const dm_position *p) {
  pthread_mutex_lock(&u->lock);
  u->synced = *p;
  u->has_synced = true;
  pthread_mutex_unlock(&u->lock);
  sync_metrics_position(u, "syncer", p);
}

/* ---- batches ---- */

/* The global row and the status move to p, where every worker has committed. `written`: a solo
 * batch's transaction moves (or moved) the global row itself, at p or past it. */
static int sync_global_at(sync_run_state *r, const dm_position *p, bool written, dm_error *err) {
  if (written)
    sync_metrics_checkpoint(r->u);
  else if (sync_cp_global(r->u, r->tc, p, err) < 0)
    return -1;
  sync_set_synced(r->u, p);
  sync_keep_from(r, p);
  return 0;
}

/* Waits for the batch the workers hold. The global row then moves to its end at once, or, with
 * `due`, later by the caller (sync_close_batch: after the next batch is handed out, so the row's
 * round trip and commit flush overlap the workers' instead of leaving them idle; a global row
 * behind the worker rows is a state every start already handles, see sync_start_position); so
 * does its feed to the validator (~1 us a row change the workers would wait for). */
static int sync_finish_inflight_due(sync_run_state *r, dm_position *due, dm_error *err) {
  sync_unit *u = r->u;
  if (!r->has_inflight)
    return 0;
  r->has_inflight = false;
  if (sync_workers_wait(r->ws, err) < 0)
    return -1;
  atomic_store(&u->apply_ts, 0); /* applied (set while the workers still had it) */
  sync_batch *b = r->inflight;
  if (due)
    *due = b->end;
  else if (sync_global_at(r, &b->end, b->solo, err) < 0)
    return -1;
  r->done = b->end;
  r->done_rows = b->end_rows;
  if (!due)
    sync_val_feed(u->val, b); /* committed: the validator may probe its rows */
  atomic_fetch_add(&u->total_rows, b->n_rows);
  atomic_fetch_add(&u->total_txns, b->n_txns);
  if (b->last_ts)
    atomic_store(&u->last_event_ts, b->last_ts);
  sync_metrics_applied(u, b->n_txns, b->n_rows, b->last_ts);
  return 0;
}

int sync_finish_inflight(sync_run_state *r, dm_error *err) {
  return sync_finish_inflight_due(r, NULL, err);
}

/* Closes the batch being built: waits for the one before, hands this one to the workers, then
 * moves the global row past the one before. */
int sync_close_batch(sync_run_state *r, dm_error *err) {
  sync_unit *u = r->u;
  if (r->building->n_txns == 0 && !r->building->moved)
    return 0;
  bool had = r->has_inflight;
  dm_position due;
  if (sync_finish_inflight_due(r, &due, err) < 0)
    return -1;
  /* Never solo while recovering: that batch was split before the crash (a solo batch moves every
   * row at once, so it never leaves the rows at two positions), and must be split the same way.
   * A batch that only moves the position (a rotation between transactions) stays split: it is
   * rare and costs no row, and test_kill_split_rotation kills one half committed. */
  sync_batch *b = r->building;
  b->solo = r->n_workers > 1 && !r->recovering && (b->n_txns > 0 || b->n_rows > 0) &&
            b->n_rows <= SYNC_SOLO_ROWS;
  if (sync_batch_assign(b, b->solo ? 1 : r->n_workers) < 0) {
    if (had)
      sync_val_feed(u->val, r->inflight);
    sync_nomem(u, err);
    return -1;
  }
  r->building->safe = sync_safe_timed(u, &r->safe_until_ns, r->building->first_ns) || r->safe_auto;
  sync_workers_dispatch(r->ws, r->building, r->recovering ? r->skip : NULL);
  if (r->safe_auto && dm_position_compare_file(&r->building->end, &u->safe_exit) >= 0) {
    r->safe_auto = false;
    sync_safe_exit_passed(u);
  }
  r->recovering = false;
  sync_batch *t = r->inflight;
  /* a solo batch's commit moves the global row: the one before to `due`, this one past it */
  bool written = b->solo || (had && t->solo);
  r->inflight = r->building;
  r->building = t;
  r->has_inflight = true;
  atomic_store(&u->apply_ts, r->inflight->first_ts);
  if (had)
    sync_val_feed(u->val, t); /* committed: the validator may probe its rows (the workers busy) */
  sync_batch_reset(r->building);
  return had ? sync_global_at(r, &due, written, err) : 0;
}

/*
 * Caught up, with a batch built while the workers apply the one before: it is handed out as soon
 * as they are done, unless the source sends more first (then the coordinator goes back to reading
 * and the batch grows, as before). Without this the batch waited for the next event or heartbeat
 * (up to SYNC_HEARTBEAT_MS after the source's last write; 2-3 ms under bench/sync's paced load,
 * which writes in bursts): the 2/0 lag's p99 went from 14 to 7 ms (bench/sync/README.md). Waiting
 * for the workers alone (not reading meanwhile) delayed what came during the wait by a batch.
 */
int sync_close_when_done(sync_run_state *r, dm_error *err) {
  sync_unit *u = r->u;
  for (;;) {
    if (sync_source_pending(r->src) || u->host->stop_requested(u->ctx) || atomic_load(&u->killed))
      return 0;
    if (!sync_workers_busy(r->ws))
      return sync_close_batch(r, err);
    struct pollfd p[2] = {{.fd = sync_workers_done_fd(r->ws), .events = POLLIN},
                          {.fd = sync_source_fd(r->src), .events = POLLIN}};
    /* bounded, for the stop token */
    (void)poll(p, p[1].fd >= 0 ? 2 : 1, SYNC_DONE_POLL_MS);
  }
}

/* Waits until everything read so far is applied (before a DDL, at a stop). */
int sync_drain(sync_run_state *r, dm_error *err) {
  if (sync_close_batch(r, err) < 0)
    return -1;
  return sync_finish_inflight(r, err);
}

/* The worker count changed in the task file: at a quiet point the rows are rewritten. */
int sync_resize(sync_run_state *r, dm_error *err) {
  sync_unit *u = r->u;
  if (r->n_workers == u->cfg.workers)
    return 0;
  if (sync_drain(r, err) < 0)
    return -1;
  dm_position at = r->done;
  if (sync_cp_reset(u, r->tc, &at, r->done_rows, u->cfg.workers, err) < 0)
    return -1;
  sync_workers_stop(r->ws);
  r->ws = NULL;
  u->host->logf(u->ctx, DM_LOG_INFO, "sync: worker-count %d -> %d at %s:%" PRIu64, r->n_workers,
                u->cfg.workers, at.name, at.pos);
  r->n_workers = u->cfg.workers;
  return sync_workers_start(u, r->n_workers, &r->ws, err);
}

/*
 * The sync unit's coordinator (sync_run.c) and its batch cycle (sync_run_batch.c): the state one
 * process call reads, builds and hands out batches with. One owner: the coordinator's thread; the
 * workers see batches only through sync_workers_dispatch/wait.
 */
#ifndef DMH_SYNC_RUN_H
#define DMH_SYNC_RUN_H

#include <dmhost/binlog_trx.h>

#include "sync.h"
#include "sync_maps.h"

typedef struct sync_run_state {
  sync_unit *u;
  MYSQL *tc; /* target: checkpoint, DDL, table definitions */
  MYSQL *sc; /* source: status */
  sync_source *src;
  sync_workers *ws;
  int n_workers;
  sync_batch batches[2];
  sync_batch *building, *inflight;
  bool has_inflight;
  /* recovery: the first batch ends at `target`; skip[w]: worker w committed it already */
  bool recovering;
  dm_position target;
  uint64_t target_rows;
  bool skip[SYNC_MAX_WORKERS];
  /* the last batch end every worker committed (a quiet point) */
  dm_position done;
  uint64_t done_rows;
  /* where the reading stands */
  sync_gtid_set gtid;
  dm_position cur;   /* the last transaction end read */
  dm_binlog_trx trx; /* where the group read begins and ends: the SDK's tracker, as the relay's */
  /* The open transaction: where it starts, with the GTID set before it, and how many of its row
   * changes were read. A transaction bigger than a batch is split there (memory stays bounded):
   * the checkpoint is then its start plus a row count, and a restart skips that many rows of it. */
  dm_position txn_start;
  uint64_t txn_rows;
  uint64_t skip_rows;
  bool pending_gtid; /* a GTID event began the open transaction (its GTID: gtid.pending) */
  sync_maps maps;    /* by table id; freed when transactions stop using them */
  dm_binlog_value *before, *after;
  uint32_t n_values;
  int64_t last_status_ns;
  /* a compressed event (log_bin_compress) made plain, once, before anything decodes it */
  uint8_t *plain;
  size_t plain_cap;
  dm_binlog_payload *payload; /* MySQL 8 transaction payloads, read event by event */
  /* XA transactions (sync_xa.c) */
  sync_xa *xa;
  /* the automatic safe mode (sync_safe.c): until u->safe_exit, or until safe_until_ns */
  bool safe_auto;
  int64_t safe_until_ns;
  /* shard mode: a DDL (or the start) may have made a group ready or left rows to re-sync */
  bool shard_check;
  uint64_t opt_polled_ns; /* optimistic: when the held tables' release was last asked for */
} sync_run_state;

/* ---- sync_run_batch.c: closing, handing out and finishing batches ---- */

/* The checkpoint moved to p: what the relay may purge before follows (shard, validator). */
void sync_keep_from(sync_run_state *r, const dm_position *p);
/* The status's synced position and its metric. */
void sync_set_synced(sync_unit *u, const dm_position *p);
/* Waits for the batch the workers hold; the global row moves to its end. */
int sync_finish_inflight(sync_run_state *r, dm_error *err);
/* Hands the batch being built to the workers once the one before is committed. */
int sync_close_batch(sync_run_state *r, dm_error *err);
/* Caught up with a batch at a transaction end while the workers are busy: hands it out when they
 * are done, or returns when the source has more to read (or a stop is asked). */
int sync_close_when_done(sync_run_state *r, dm_error *err);
/* Everything read so far applied (before a DDL, at a stop). */
int sync_drain(sync_run_state *r, dm_error *err);
/* The task file's worker-count changed: rows rewritten at a quiet point. */
int sync_resize(sync_run_state *r, dm_error *err);

#endif /* DMH_SYNC_RUN_H */

/*
 * The sync unit's metrics (docs/metrics.md), under DM's names: the replication lag (gauge and
 * histogram), the applied and the source's binlog position, finished transactions, the time of
 * each transaction on the target, the interval between moves of the global checkpoint row, the
 * pessimistic shard DDL's unsynced tables and lock wait, dmhost's finished rows, and the source's binlog
 * end polled for status and metric (sync_master_poll). Published
 * through the host's metrics service (host.h), which adds the task and source_id labels.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <dmhost/clock.h>

#include "sync.h"

static dm_metric *sync_metric(sync_unit *u, const char *name, dm_metric_type type, const char *help,
                              const char *const *labels, uint32_t n_labels) {
  return dm_host_metric_publish(u->host, u->ctx, name, type, help, labels, n_labels, NULL, 0);
}

void sync_metrics_init(sync_unit *u) {
  static const char *const node[] = {"node"};
  u->m_lag = sync_metric(u, "dm_syncer_replication_lag_gauge", DM_METRIC_GAUGE,
                         "replication lag gauge in second between mysql and syncer", NULL, 0);
  u->m_pos = sync_metric(u, "dm_syncer_binlog_pos", DM_METRIC_GAUGE, "current binlog pos", node, 1);
  u->m_file = sync_metric(u, "dm_syncer_binlog_file", DM_METRIC_GAUGE, "current binlog file index",
                          node, 1);
  u->m_txns = sync_metric(u, "dm_syncer_finished_transaction_total", DM_METRIC_COUNTER,
                          "total number of finished transaction", NULL, 0);
  u->m_rows = sync_metric(u, "dmhost_sync_finished_rows_total", DM_METRIC_COUNTER,
                          "row changes the sync applied to the target", NULL, 0);
  /* DM's buckets: the lag 0.5 s to 1024 s, doubling; a transaction 5 us doubling 25 times */
  double lag_b[12], txn_b[25];
  for (int i = 0; i < 12; i++)
    lag_b[i] = 0.5 * (double)(1u << i);
  for (int i = 0; i < 25; i++)
    txn_b[i] = 0.000005 * (double)(1u << i);
  u->m_lag_hist = dm_host_metric_publish(
      u->host, u->ctx, "dm_syncer_replication_lag", DM_METRIC_HISTOGRAM,
      "replication lag histogram in second between mysql and syncer", NULL, 0, lag_b, 12);
  u->m_txn_time = dm_host_metric_publish(
      u->host, u->ctx, "dm_syncer_txn_duration_time", DM_METRIC_HISTOGRAM,
      "Bucketed histogram of processing time (s) of a txn.", NULL, 0, txn_b, 25);
  /* DM's buckets 1 s to 1001 s (linear, 50 s apart: DM flushes every checkpoint-flush-interval,
   * 30 s by default) and below them 1 ms to 0.5 s: the global row here moves at every batch */
  double cp_b[30] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5};
  for (int i = 0; i < 21; i++)
    cp_b[9 + i] = 1 + 50.0 * i;
  u->m_cp_interval = dm_host_metric_publish(
      u->host, u->ctx, "dm_syncer_flush_checkpoints_time_interval", DM_METRIC_HISTOGRAM,
      "checkpoint flushed time interval in seconds", NULL, 0, cp_b, 30);
  static const char *const table[] = {"table"};
  u->m_unsynced = sync_metric(u, "dm_syncer_unsynced_table_number", DM_METRIC_GAUGE,
                              "number of unsynced tables in the subtask", table, 1);
  u->m_resolving = sync_metric(u, "dm_syncer_shard_lock_resolving", DM_METRIC_GAUGE,
                               "waiting shard DDL lock to be resolved", NULL, 0);
  /* at 0 from the start, as DM's series of every sync unit */
  sync_metrics_resolving(u, false);
  /* counters are exposed from the start, at 0, not from the first commit on */
  sync_metrics_applied(u, 0, 0, 0);
}

void sync_metrics_position(sync_unit *u, const char *node, const dm_position *p) {
  if (!p->name[0])
    return;
  const char *v[] = {node};
  dm_host_metric_set(u->host, u->ctx, u->m_pos, v, (double)p->pos);
  dm_host_metric_set(u->host, u->ctx, u->m_file, v, (double)dm_binlog_file_index(p->name));
}

void sync_metrics_applied(sync_unit *u, uint64_t txns, uint64_t rows, uint32_t last_ts) {
  dm_host_metric_add(u->host, u->ctx, u->m_txns, NULL, (double)txns);
  dm_host_metric_add(u->host, u->ctx, u->m_rows, NULL, (double)rows);
  if (last_ts) {
    double lag = difftime(time(NULL), (time_t)last_ts);
    dm_host_metric_set(u->host, u->ctx, u->m_lag, NULL, lag > 0 ? lag : 0);
    /* DM observes each value it sets the gauge to */
    dm_host_metric_observe(u->host, u->ctx, u->m_lag_hist, NULL, lag > 0 ? lag : 0);
  }
}

void sync_metrics_txn(sync_unit *u, double seconds) {
  dm_host_metric_observe(u->host, u->ctx, u->m_txn_time, NULL, seconds);
}

void sync_metrics_caught_up(sync_unit *u) {
  dm_host_metric_set(u->host, u->ctx, u->m_lag, NULL, 0);
}

void sync_metrics_run_start(sync_unit *u) {
  u->cp_moved_ns = 0;
}

void sync_metrics_checkpoint(sync_unit *u) {
  int64_t now = dm_clock_ns();
  if (u->cp_moved_ns)
    dm_host_metric_observe(u->host, u->ctx, u->m_cp_interval, NULL,
                           (double)(now - u->cp_moved_ns) / 1e9);
  u->cp_moved_ns = now;
}

void sync_metrics_unsynced(sync_unit *u, const char *tdb, const char *tname, int remain) {
  /* DM's label value: the target table as its filter.Table prints it */
  char table[2 * SYNC_NAME_MAX + 8];
  snprintf(table, sizeof table, "`%s`.`%s`", tdb, tname);
  const char *v[] = {table};
  dm_host_metric_set(u->host, u->ctx, u->m_unsynced, v, remain);
}

void sync_metrics_resolving(sync_unit *u, bool waiting) {
  dm_host_metric_set(u->host, u->ctx, u->m_resolving, NULL, waiting ? 1 : 0);
}

void sync_master_poll(sync_unit *u, MYSQL *sc, int64_t *last_ns) {
  int64_t now = dm_clock_ns();
  if (!sc || now - *last_ns < (int64_t)u->cfg.status_ms * 1000000)
    return;
  *last_ns = now;
  dm_position m;
  if (dm_db_master_status(sc, &m) < 0)
    return; /* the status keeps the last one read; the sync's own reading reports errors */
  pthread_mutex_lock(&u->lock);
  u->master = m;
  u->has_master = m.name[0] != '\0';
  pthread_mutex_unlock(&u->lock);
  sync_metrics_position(u, "master", &m);
}

/*
 * dmhost-sync: the sync unit's slots, settings and status (docs/sync.md).
 *
 * Settings (section `sync` of the task file, all optional):
 *   worker-count = 8;        # target connections applying batches in parallel (DM's name)
 *   batch = 20000;           # row changes per batch (one target transaction per worker)
 *   batch-bytes = 33554432;  # statement text per batch
 *   batch-ms = 500;          # a batch is closed at the first transaction end after this
 *   safe-mode = false;       # INSERT -> REPLACE, UPDATE -> DELETE + REPLACE (DM's safe mode)
 *   safe-mode-duration = "60s"; # safe mode after a start that follows no clean stop (a first
 *                            # start, a crash, an error); unset: none; "0s": none, and a start
 *                            # that needs safe mode fails (sync_safe.c)
 *   compact = true;          # merge changes of one row inside a batch (tables whose only unique
 *                            # key is the primary key)
 *   server-id = N;           # replica server_id when reading the source directly (relay off)
 *   status-interval = 2000;  # ms between reads of the source's position (masterBinlog)
 *   chunk-bytes = 1048576;   # statement text per round trip to the target
 *   timezone = "+08:00";     # DM's task `timezone`: the zone of replayed DDL that names none
 *                            # (sync_tz.c)
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <dmhost/settings.h>

#include "sync.h"
#include "sync_tracker.h"

#define SYNC_SOURCE_ID_MAX 32 /* the checkpoint's `id` column */

int sync_nomem(sync_unit *u, dm_error *err) {
  u->host->error_make(u->ctx, err, DM_ERR_NO_MEMORY, NULL, "sync: no memory");
  return -1;
}

void sync_route(sync_unit *u, const char *db, const char *table, char *tdb, char *ttable) {
  ttable[0] = '\0';
  u->host->route_table(u->ctx, db, table, tdb, SYNC_NAME_MAX, ttable, SYNC_NAME_MAX);
}

/* ---- settings ---- */

/* A replica server_id of its own for each task and source (two streams with one id throw each
 * other out): derived from the names unless set. */
static uint32_t sync_default_server_id(sync_unit *u) {
  char key[512];
  snprintf(key, sizeof key, "%s/%s", u->host->task_name(u->ctx), u->source_id);
  return 400000000u + (uint32_t)(sync_hash(key, strlen(key)) % 100000000u);
}

static int sync_settings(sync_unit *u, sync_cfg *cfg, dm_error *err) {
  int64_t v;
  if (dm_setting_int(u->host, u->ctx, "sync", "worker-count", 8, 1, SYNC_MAX_WORKERS, &v, err) < 0)
    return -1;
  cfg->workers = (int)v;
  if (dm_setting_int(u->host, u->ctx, "sync", "batch", 20000, 1, 10000000, &v, err) < 0)
    return -1;
  cfg->batch_rows = (uint32_t)v;
  if (dm_setting_size(u->host, u->ctx, "sync", "batch-bytes", 32 << 20, 4096, (int64_t)1 << 31, &v,
                      err) < 0)
    return -1;
  cfg->batch_bytes = (uint64_t)v;
  if (dm_setting_int(u->host, u->ctx, "sync", "batch-ms", 500, 1, 600000, &v, err) < 0)
    return -1;
  cfg->batch_ms = (uint32_t)v;
  if (dm_setting_bool(u->host, u->ctx, "sync", "safe-mode", false, &cfg->safe_mode, err) < 0 ||
      dm_setting_bool(u->host, u->ctx, "sync", "compact", true, &cfg->compact, err) < 0)
    return -1;
  /* Go's ParseDuration text. Unset (-1): no timed window. DM's default is 60 s (2 x its 30 s
   * checkpoint-flush-interval) because its checkpoint lags the target by up to that much, so a
   * restart replays changes already applied; dmhost commits the checkpoint with every batch, in
   * the batch's transaction, so a restart replays none. A DM file that gives it gets it. */
  if (dm_setting_duration(u->host, u->ctx, "sync", "safe-mode-duration", -1,
                          (int64_t)366 * 86400 * 1000, &cfg->safe_mode_duration_ms, err) < 0)
    return -1;
  if (cfg->safe_mode && cfg->safe_mode_duration_ms == 0) {
    u->host->error_make(u->ctx, err, DM_ERR_CONFIG_INVALID, NULL,
                        "sync: setting `safe-mode` true conflicts with `safe-mode-duration` "
                        "\"0s\": set safe-mode to false or safe-mode-duration to a duration "
                        "other than 0s (as DM's ErrConfigConfictSafeModeDurationAndSafeMode)");
    return -1;
  }
  if (dm_setting_int(u->host, u->ctx, "sync", "server-id", sync_default_server_id(u), 1, UINT32_MAX,
                     &v, err) < 0)
    return -1;
  cfg->server_id = (uint32_t)v;
  if (dm_setting_int(u->host, u->ctx, "sync", "status-interval", 2000, 10, 3600000, &v, err) < 0)
    return -1;
  cfg->status_ms = (uint32_t)v;
  if (dm_setting_size(u->host, u->ctx, "sync", "chunk-bytes", 1 << 20, 1024, 64 << 20, &v, err) < 0)
    return -1;
  cfg->chunk_bytes = (uint32_t)v;
  const char *tz = NULL;
  dm_cfg_result r = u->host->cfg_string(u->ctx, "timezone", &tz);
  if (r == DM_CFG_WRONG_TYPE || (r == DM_CFG_OK && tz[0] && !sync_tz_valid(tz))) {
    u->host->error_make(u->ctx, err, DM_ERR_CONFIG_INVALID, NULL,
                        "sync: setting `timezone` must be a time zone's name (\"Asia/Shanghai\") "
                        "or an offset (\"+08:00\"), not %s%s%s",
                        r == DM_CFG_OK ? "\"" : "", r == DM_CFG_OK ? tz : "a value of another type",
                        r == DM_CFG_OK ? "\"" : "");
    return -1;
  }
  cfg->timezone[0] = '\0';
  if (r == DM_CFG_OK)
    dm_strlcpy(cfg->timezone, tz, sizeof cfg->timezone);
  return sync_val_settings(u, &cfg->val, err);
}

/* ---- slots ---- */

static int sync_init(const dm_host_services *host, dm_ctx *ctx, void **self, dm_error *err) {
  sync_unit *u = calloc(1, sizeof *u);
  if (!u) {
    host->error_make(ctx, err, DM_ERR_NO_MEMORY, NULL, "sync: no memory for an instance");
    return -1;
  }
  u->host = host;
  u->ctx = ctx;
  pthread_mutex_init(&u->lock, NULL);
  u->conns = dm_conn_kill_new(SYNC_MAX_WORKERS + 8, 0); /* + the validator's */
  if (!u->conns) {
    host->error_make(ctx, err, DM_ERR_NO_MEMORY, NULL, "sync: no memory for an instance");
    goto fail;
  }
  const char *task = host->task_name(ctx), *src = host->source_id(ctx),
             *meta = host->meta_schema(ctx);
  if (strlen(src) > SYNC_SOURCE_ID_MAX || strlen(meta) >= 64 ||
      strlen(task) > 64 - strlen("_syncer_checkpoint")) {
    host->error_make(ctx, err, DM_ERR_CONFIG_INVALID, NULL,
                     "sync: source-id \"%s\" (at most %d characters), meta-schema \"%s\" (63) or "
                     "task name \"%s\" (46) is too long for the checkpoint table",
                     src, SYNC_SOURCE_ID_MAX, meta, task);
    goto fail;
  }
  dm_strlcpy(u->source_id, src, sizeof u->source_id);
  u->fence = dm_host_fencing_token(host, ctx);
  dm_strlcpy(u->meta, meta, sizeof u->meta);
  if (sync_settings(u, &u->cfg, err) < 0)
    goto fail;
  sync_metrics_init(u);
  if (!(u->val = sync_val_new(u, &u->cfg.val))) {
    host->error_make(ctx, err, DM_ERR_NO_MEMORY, NULL, "sync: no memory");
    goto fail;
  }
  if (u->cfg.val.mode != SYNC_VAL_NONE && sync_val_names(u->val) < 0) {
    host->error_make(ctx, err, DM_ERR_CONFIG_INVALID, NULL,
                     "sync: task name \"%s\" is too long for the validator's tables (at most %d "
                     "characters with a validator)",
                     task, 64 - (int)strlen("_validator_pending_change"));
    goto fail;
  }
  char cp[SYNC_NAME_MAX];
  dm_task_meta_table_name(task, DM_META_SYNCER_CHECKPOINT, cp,
                          sizeof cp); /* length checked above */
  dm_buf q = {0};
  if (sync_sql_qualified(&q, meta, cp) < 0 || q.len >= sizeof u->cp_table) {
    dm_buf_free(&q);
    host->error_make(ctx, err, DM_ERR_NO_MEMORY, NULL, "sync: no memory");
    goto fail;
  }
  memcpy(u->cp_table, q.p, q.len + 1);
  dm_buf_free(&q);
  if (sync_schema_new(u, &u->schema) < 0) {
    host->error_make(ctx, err, DM_ERR_NO_MEMORY, NULL, "sync: no memory");
    goto fail;
  }
  mysql_library_init(0, NULL, NULL); /* once per process; later calls return at once */
  *self = u;
  return 0;
fail:
  sync_val_free(u->val);
  dm_conn_kill_free(u->conns);
  pthread_mutex_destroy(&u->lock);
  free(u);
  return -1;
}

/* update-task while paused: every setting takes effect at resume (worker-count at the next quiet
 * point, as after a restart). The rules may have changed with the settings (block-allow-list,
 * routes, filters): the table cache, which keeps each table's answers to table_allowed,
 * route_table and event_ignored, starts over as at a restart, so the next run asks the host again.
 */
static int sync_update(void *self, dm_error *err) {
  sync_unit *u = self;
  sync_cfg cfg; /* the old settings stay if the new ones are wrong */
  sync_schema *fresh = NULL;
  if (sync_settings(u, &cfg, err) != 0)
    return -1;
  if (sync_schema_new(u, &fresh) < 0)
    return sync_nomem(u, err);
  sync_schema_free(u->schema);
  u->schema = fresh;
  pthread_mutex_lock(&u->lock); /* status reads workers and safe_mode beside us */
  u->cfg = cfg;
  pthread_mutex_unlock(&u->lock);
  sync_val_update(u->val, &cfg.val);
  u->host->logf(u->ctx, DM_LOG_INFO,
                "sync: settings updated (worker-count %d, batch %u, safe-mode %s); the tables' "
                "rules are asked again",
                cfg.workers, cfg.batch_rows, cfg.safe_mode ? "on" : "off");
  return 0;
}

static int sync_is_fresh_task(void *self, bool *fresh, dm_error *err) {
  sync_unit *u = self;
  MYSQL *c = sync_db_connect_target(u, err);
  if (!c)
    return -1;
  sync_cp_state st;
  char q[600], lit[2 * SYNC_NAME_MAX + 1];
  mysql_real_escape_string(c, lit, u->meta, (unsigned long)strlen(u->meta));
  snprintf(q, sizeof q, "SELECT 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA = '%s'", lit);
  int rc = 0;
  *fresh = true;
  /* no meta schema or table yet: fresh, without creating anything */
  if (mysql_query(c, q) == 0) {
    MYSQL_RES *r = mysql_store_result(c);
    bool any = r && mysql_num_rows(r) > 0;
    if (r)
      mysql_free_result(r);
    if (any) {
      unsigned code = 0;
      rc = sync_cp_load(u, c, &st, false, err);
      if (rc < 0) {
        code = mysql_errno(c);
        if (code == 1146) { /* no checkpoint table */
          rc = 0;
          st.exists = false;
        }
      }
      if (rc == 0)
        *fresh = !st.exists;
    }
  }
  sync_db_close(u, c);
  return rc;
}

static void sync_process(void *self, dm_result *result) {
  sync_unit *u = self;
  sync_run(u, result);
}

static void sync_pause(void *self) {
  sync_unit *u = self;
  dm_position p;
  pthread_mutex_lock(&u->lock);
  p = u->synced;
  pthread_mutex_unlock(&u->lock);
  u->host->logf(u->ctx, DM_LOG_INFO, "sync: paused at %s:%" PRIu64, p.name, p.pos);
}

static void sync_status(void *self, dm_status_sink *sink) {
  sync_unit *u = self;
  dm_position synced, master;
  pthread_mutex_lock(&u->lock); /* held for a copy only */
  bool has_s = u->has_synced, has_m = u->has_master;
  synced = u->synced;
  master = u->master;
  int workers = u->cfg.workers; /* update writes cfg under the lock */
  bool safe_mode = u->cfg.safe_mode;
  int safe_auto = u->safe_auto;
  dm_position safe_exit = u->safe_auto_exit;
  int64_t safe_until = u->safe_auto_until_ms;
  pthread_mutex_unlock(&u->lock);
  char buf[DM_POSITION_NAME_MAX + 48];
  if (has_m) {
    sink->put_str(sink, "masterBinlog", dm_position_format(&master, buf, sizeof buf));
    sink->put_str(sink, "masterBinlogGtid", master.gtid);
  }
  if (has_s) {
    sink->put_str(sink, "syncerBinlog", dm_position_format(&synced, buf, sizeof buf));
    sink->put_str(sink, "syncerBinlogGtid", synced.gtid);
  }
  bool synced_all = has_s && has_m && dm_position_compare_file(&synced, &master) >= 0;
  sink->put_bool(sink, "synced", synced_all);
  int64_t behind = 0;
  uint32_t ts = atomic_load(&u->last_event_ts);
  if (!synced_all && ts) {
    behind = (int64_t)time(NULL) - (int64_t)ts;
    if (behind < 0)
      behind = 0;
  }
  sink->put_int(sink, "secondsBehindMaster", behind);
  uint64_t rows = atomic_load(&u->total_rows);
  sink->put_int(sink, "totalRows", (int64_t)rows);
  sink->put_int(sink, "totalTxns", (int64_t)atomic_load(&u->total_txns));
  int64_t t0 = atomic_load(&u->run_start_ns), now = dm_clock_ns();
  int64_t total_rps = 0, recent_rps = 0;
  if (t0) {
    uint64_t start = atomic_load(&u->run_start_rows);
    double secs = (double)(now - t0) / 1e9;
    if (secs > 0.001 && rows >= start)
      total_rps = (int64_t)((double)(rows - start) / secs);
    /* recentRps: over the time since the previous status call (at most one window kept) */
    int64_t rn = atomic_load(&u->recent_ns);
    uint64_t rr = atomic_load(&u->recent_rows);
    if (rn && now > rn && rows >= rr) {
      double s2 = (double)(now - rn) / 1e9;
      recent_rps = s2 > 0.001 ? (int64_t)((double)(rows - rr) / s2) : 0;
    }
    atomic_store(&u->recent_ns, now);
    atomic_store(&u->recent_rows, rows);
  }
  sink->put_int(sink, "totalRps", total_rps);
  sink->put_int(sink, "recentRps", recent_rps);
  sink->put_int(sink, "workerCount", workers);
  sink->put_int(sink, "tableMaps", (int64_t)atomic_load(&u->table_maps));
  sink->put_int(sink, "tableMapsPeak", (int64_t)atomic_load(&u->table_maps_peak));
  sink->put_bool(sink, "safeMode", safe_mode || safe_auto != SYNC_SAFE_NONE);
  /* why: the task's safe-mode wins; else the automatic one (sync_safe.c) until a position or a
   * time (UTC) */
  const char *why = safe_mode                      ? "safe-mode"
                    : safe_auto == SYNC_SAFE_EXIT  ? "exit point"
                    : safe_auto == SYNC_SAFE_TIMED ? "safe-mode-duration"
                                                   : "";
  sink->put_str(sink, "safeModeReason", why);
  buf[0] = '\0';
  if (!safe_mode && safe_auto == SYNC_SAFE_EXIT)
    dm_position_format(&safe_exit, buf, sizeof buf);
  else if (!safe_mode && safe_auto == SYNC_SAFE_TIMED) {
    time_t t = (time_t)(safe_until / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  }
  sink->put_str(sink, "safeModeUntil", buf);
  sync_val_status(u->val, sink);
}

static void sync_kill(void *self) {
  sync_unit *u = self;
  atomic_store(&u->killed, true);
  pthread_mutex_lock(&u->lock);
  sync_source_interrupt(u->src);
  pthread_mutex_unlock(&u->lock);
  dm_conn_kill_all(u->conns); /* blocked statements return with "lost connection" */
}

static void sync_close(void *self) {
  sync_unit *u = self;
  sync_val_free(u->val);
  sync_schema_free(u->schema);
  sync_charsets_free(u->charsets);
  dm_conn_kill_free(u->conns);
  pthread_mutex_destroy(&u->lock);
  free(u);
}

static const dm_unit_descriptor sync_unit_desc = {
    DM_UNIT_DESCRIPTOR_HEADER,
    .kind = DM_UNIT_SYNC,
    .name = "dmhost-sync",
    .version = "0.1.0",
    .ops =
        {
            .init = sync_init,
            .is_fresh_task = sync_is_fresh_task,
            .process = sync_process,
            .pause = sync_pause,
            .status = sync_status,
            .update = sync_update,
            .kill = sync_kill,
            .close = sync_close,
        },
    .handover = DM_UNIT_TAKES_POSITION | DM_UNIT_READS_RELAY,
    .schema_op = sync_schema_op,
    .validation_op = sync_validation_op,
};

DM_UNIT_EXPORT(sync_unit_desc)

/*
 * dmhost-load: the load unit's slots. It loads the dump folder of its subtask (docs/dump-format.md)
 * into the target, the way DM's loader does: databases and tables first (routes applied), then the
 * data files in parallel, each batch committed together with its checkpoint. It reports the dump's
 * binlog position as metaBinlog, which the host hands to the sync unit.
 *
 * Settings (section `load` of the task file, all optional):
 *   dir = "...";              # the dump folder; default <work_dir>/../dump (the dump unit's)
 *   pool-size = 4;            # worker connections
 *   on-duplicate = "replace"; # "replace" (REPLACE INTO), "ignore" (INSERT IGNORE), "error"
 *   batch-bytes = 4194304;    # statement bytes per target transaction (and checkpoint)
 *   cleanup-dump = false;     # remove the dump's .sql files once the load finished
 *   defer-secondary-keys = true; # create tables without their plain secondary keys, add them
 *                                # in one ALTER TABLE per table once its data is loaded
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dmhost/db.h>
#include <dmhost/settings.h>

#include "load.h"

#define LOAD_DEFAULT_POOL 4
#define LOAD_DEFAULT_BATCH (4u << 20)
#define LOAD_SOURCE_ID_MAX 32 /* the checkpoint's `id` column */

/* ---- settings ---- */

static int load_settings(load_unit *u, load_cfg *cfg, dm_error *err) {
  const dm_host_services *h = u->host;
  const char *s = NULL;
  int64_t v;
  dm_cfg_result r = h->cfg_string(u->ctx, "dir", &s);
  if (r == DM_CFG_OK && s[0] != '\0')
    dm_strlcpy(cfg->dir, s, sizeof cfg->dir);
  else if (r == DM_CFG_MISSING || r == DM_CFG_OK)
    snprintf(cfg->dir, sizeof cfg->dir, "%s/../dump", h->work_dir(u->ctx));
  else
    goto wrong;

  if (dm_setting_int(h, u->ctx, "load", "pool-size", LOAD_DEFAULT_POOL, 1, LOAD_MAX_CONNS, &v,
                     err) != 0)
    return -1;
  cfg->pool_size = (int)v;

  r = h->cfg_string(u->ctx, "on-duplicate", &s);
  if (r == DM_CFG_MISSING || (r == DM_CFG_OK && strcmp(s, "replace") == 0))
    cfg->on_dup = LOAD_DUP_REPLACE;
  else if (r == DM_CFG_OK && strcmp(s, "ignore") == 0)
    cfg->on_dup = LOAD_DUP_IGNORE;
  else if (r == DM_CFG_OK && strcmp(s, "error") == 0)
    cfg->on_dup = LOAD_DUP_ERROR;
  else {
    h->error_make(u->ctx, err, DM_ERR_CONFIG_INVALID, NULL,
                  "load: on-duplicate is \"%s\", it must be \"replace\", \"ignore\" or \"error\"",
                  r == DM_CFG_OK ? s : "(not a string)");
    return -1;
  }

  if (dm_setting_size(h, u->ctx, "load", "batch-bytes", LOAD_DEFAULT_BATCH, 1, INT64_MAX, &v,
                      err) != 0)
    return -1;
  cfg->batch_bytes = (uint64_t)v;
  if (dm_setting_bool(h, u->ctx, "load", "cleanup-dump", false, &cfg->cleanup_dump, err) != 0 ||
      dm_setting_bool(h, u->ctx, "load", "defer-secondary-keys", true, &cfg->defer_keys, err) != 0)
    return -1;
  return 0;
wrong: /* the host has logged file, line and the type it wanted */
  h->error_make(u->ctx, err, DM_ERR_CONFIG_INVALID, NULL,
                "load: setting `dir` must be a string (see the log)");
  return -1;
}

/* FNV-1a: scratch table names of this task and source, so parallel subtasks never collide. */
static uint64_t load_hash(const char *a, const char *b) {
  uint64_t h = 1469598103934665603ull;
  for (const char *p = a; *p; p++)
    h = (h ^ (unsigned char)*p) * 1099511628211ull;
  h = (h ^ 0xff) * 1099511628211ull;
  for (const char *p = b; *p; p++)
    h = (h ^ (unsigned char)*p) * 1099511628211ull;
  return h;
}

static int load_init(const dm_host_services *host, dm_ctx *ctx, void **self, dm_error *err) {
  load_unit *u = calloc(1, sizeof *u);
  if (!u) {
    host->error_make(ctx, err, DM_ERR_NO_MEMORY, NULL, "load: no memory for an instance");
    return -1;
  }
  u->host = host;
  u->ctx = ctx;
  pthread_mutex_init(&u->lock, NULL);
  u->conns = dm_conn_kill_new(LOAD_MAX_CONNS + 1, 0);
  if (!u->conns) {
    pthread_mutex_destroy(&u->lock);
    free(u);
    host->error_make(ctx, err, DM_ERR_NO_MEMORY, NULL, "load: no memory for an instance");
    return -1;
  }
  atomic_init(&u->finished_bytes, 0);
  atomic_init(&u->total_bytes, 0);
  atomic_init(&u->run_start_bytes, 0);
  atomic_init(&u->run_start_ns, 0);
  atomic_init(&u->killed, false);
  atomic_init(&u->finished, false);
  const char *task = host->task_name(ctx), *src = host->source_id(ctx);
  const char *meta = host->meta_schema(ctx);
  char qm[2 * LOAD_NAME_MAX + 3], cp[LOAD_NAME_MAX + 32], qc[2 * LOAD_NAME_MAX + 3];
  if (load_settings(u, &u->cfg, err) != 0)
    goto fail;
  load_metrics_init(u);
  if (strlen(src) > LOAD_SOURCE_ID_MAX || strlen(meta) >= 64 ||
      strlen(task) > 64 - strlen("_loader_checkpoint")) {
    host->error_make(ctx, err, DM_ERR_CONFIG_INVALID, NULL,
                     "load: source-id \"%s\" (at most %d characters), meta-schema \"%s\" (63) or "
                     "task name \"%s\" (46) is too long for the checkpoint table",
                     src, LOAD_SOURCE_ID_MAX, meta, task);
    goto fail;
  }
  dm_strlcpy(u->meta, meta, sizeof u->meta);
  u->fence = dm_host_fencing_token(host, ctx);
  dm_task_meta_table_name(task, DM_META_LOADER_CHECKPOINT, cp, sizeof cp); /* length checked */
  snprintf(u->cp_table, sizeof u->cp_table, "%s.%s", dm_db_quoted(meta, qm, sizeof qm),
           dm_db_quoted(cp, qc, sizeof qc));
  dm_task_meta_table_name(task, DM_META_LOADER_KEYS, cp, sizeof cp);
  snprintf(u->keys_table, sizeof u->keys_table, "%s.%s", qm, dm_db_quoted(cp, qc, sizeof qc));
  snprintf(u->scratch, sizeof u->scratch, "%s_scratch", meta);
  snprintf(u->scratch_prefix, sizeof u->scratch_prefix, "ld_%016" PRIx64, load_hash(task, src));
  mysql_library_init(0, NULL, NULL); /* once per process; later calls return at once */
  *self = u;
  return 0;
fail:
  dm_conn_kill_free(u->conns);
  pthread_mutex_destroy(&u->lock);
  free(u);
  return -1;
}

/* update-task while paused: pool-size, on-duplicate, batch-bytes, cleanup-dump and
 * defer-secondary-keys take effect at resume; dir cannot change, as the checkpoint rows name files
 * of the dump in it. Only the runner reads cfg, and it is not running. */
static int load_update(void *self, dm_error *err) {
  load_unit *u = self;
  load_cfg cfg; /* the old settings stay if the new ones are wrong */
  if (load_settings(u, &cfg, err) != 0)
    return -1;
  if (strcmp(cfg.dir, u->cfg.dir) != 0) {
    u->host->error_make(u->ctx, err, DM_ERR_CONFIG_INVALID, NULL,
                        "load: dir cannot change while the task is paused (the checkpoint names "
                        "the files of the dump in %s): keep it, or stop and start the task",
                        u->cfg.dir);
    return -1;
  }
  u->cfg = cfg;
  return 0;
}

/* Fresh: no checkpoint row of this source, or rows but no complete dump in the folder to continue
 * them with (a subtask moved from another worker in its dump or load phase: the dump folder is
 * local to the worker that made it), so the subtask starts over from its dump unit, if it has one,
 * and the load of the new dump replaces what the old one wrote (load_cp_other_dump). */
static int load_is_fresh_task(void *self, bool *fresh, dm_error *err) {
  load_unit *u = self;
  MYSQL *c = load_db_connect(u, err);
  if (!c)
    return -1;
  bool exists = false;
  int rc = load_cp_exists(u, c, &exists, err);
  load_db_close(u, c);
  *fresh = !exists;
  if (rc == 0 && exists) {
    char path[PATH_MAX];
    struct stat st;
    if (snprintf(path, sizeof path, "%s/metadata", u->cfg.dir) < (int)sizeof path &&
        stat(path, &st) != 0 && errno == ENOENT) {
      u->host->logf(u->ctx, DM_LOG_WARN,
                    "load: the checkpoint has rows of this source but %s has no complete dump "
                    "to continue them with (the subtask moved from another worker?): the load "
                    "starts over",
                    u->cfg.dir);
      *fresh = true;
    }
  }
  return rc;
}

/* ---- process ---- */

/* The route's extract columns of t as the statements name them (load.h); 0, or -1: no memory. */
static int load_route_extract(load_unit *u, load_table *t) {
  dm_route_extract ext;
  dm_host_route_extract(u->host, u->ctx, t->db, t->table, &ext);
  free(t->ext_cols);
  free(t->ext_vals);
  t->ext_cols = t->ext_vals = NULL;
  t->ext_n = (int)ext.n;
  if (ext.n == 0)
    return 0;
  size_t nc = 1, nv = 1;
  for (uint32_t e = 0; e < ext.n; e++) {
    nc += 2 * strlen(ext.cols[e].column) + 4;
    nv += 2 * strlen(ext.cols[e].value) + 12;
  }
  t->ext_cols = malloc(nc);
  t->ext_vals = malloc(nv);
  if (!t->ext_cols || !t->ext_vals)
    return -1;
  size_t c = 0, v = 0;
  for (uint32_t e = 0; e < ext.n; e++) {
    char q[2 * sizeof ext.cols[e].column + 3];
    c += (size_t)snprintf(t->ext_cols + c, nc - c, ",%s",
                          dm_db_quoted(ext.cols[e].column, q, sizeof q));
    v += (size_t)snprintf(t->ext_vals + v, nv - v, ",_utf8mb4'");
    for (const char *p = ext.cols[e].value; *p; p++) {
      if (*p == '\\' || *p == '\'')
        t->ext_vals[v++] = '\\';
      t->ext_vals[v++] = *p;
    }
    t->ext_vals[v++] = '\'';
  }
  t->ext_vals[v] = '\0';
  return 0;
}

/* Routes and the block-allow-list for every table; the schemas the load writes to. */
static int load_route(load_unit *u, load_dump *d, const char ***schemas, int *n) {
  *schemas = malloc(sizeof **schemas * ((size_t)d->n_tables + 2));
  if (!*schemas)
    return -1;
  (*schemas)[0] = u->meta;
  (*schemas)[1] = u->scratch;
  *n = 2;
  for (int i = 0; i < d->n_tables; i++) {
    load_table *t = &d->tables[i];
    t->allowed = u->host->table_allowed(u->ctx, t->db, t->table);
    if (!t->allowed)
      continue;
    u->host->route_table(u->ctx, t->db, t->table, t->tdb, sizeof t->tdb, t->ttable,
                         sizeof t->ttable);
    if (load_route_extract(u, t) < 0)
      return -1;
    t->group = i; /* source tables merged into one target table share its deferred keys */
    for (int k = 0; k < i && t->group == i; k++)
      if (d->tables[k].allowed && strcmp(d->tables[k].tdb, t->tdb) == 0 &&
          strcmp(d->tables[k].ttable, t->ttable) == 0)
        t->group = k;
    bool seen = false;
    for (int k = 2; k < *n && !seen; k++)
      seen = strcmp((*schemas)[k], t->tdb) == 0;
    if (!seen)
      (*schemas)[(*n)++] = t->tdb;
  }
  return 0;
}

/* Removes the dump's .sql files (cleanup-dump); `metadata` stays for the position. */
static void load_unlink(const char *dir, const char *name) {
  char path[PATH_MAX];
  if (snprintf(path, sizeof path, "%s/%s", dir, name) < (int)sizeof path)
    unlink(path);
}

static void load_cleanup(load_unit *u, load_dump *d) {
  for (int i = 0; i < d->n_files; i++)
    load_unlink(d->dir, d->files[i].name);
  for (int i = 0; i < d->n_tables; i++)
    load_unlink(d->dir, d->tables[i].schema_file);
  for (int i = 0; i < d->n_dbs; i++)
    load_unlink(d->dir, d->db_files[i]);
  u->host->logf(u->ctx, DM_LOG_INFO, "load: removed the dump files of %s (cleanup-dump)", d->dir);
}

/* Everything before the data: folder, privileges, checkpoint, schemas. 0 go on, 1 all done
 * already, 2 stopped, -1 error. */
static int load_prepare(load_unit *u, MYSQL *c, load_dump *d, dm_error *e) {
  const char **schemas = NULL;
  int n_schemas = 0, n_rows = 0;
  if (load_route(u, d, &schemas, &n_schemas) != 0) {
    u->host->error_make(u->ctx, e, DM_ERR_NO_MEMORY, NULL, "load: no memory");
    return -1;
  }
  int rc = load_db_check_privileges(u, c, schemas, n_schemas, e);
  free(schemas);
  if (rc != 0 || load_cp_prepare(u, c, e) != 0 || load_keys_prepare(u, c, e) != 0 ||
      load_cp_other_dump(u, c, d, e) != 0 || load_cp_read(u, c, d, &n_rows, e) != 0 ||
      load_keys_read(u, c, d, e) != 0)
    return -1;
  bool done = n_rows > 0;
  for (int i = 0; i < d->n_tables; i++)
    if (d->tables[i].keys)
      done = false; /* the data is in, the keys are not */
  for (int i = 0; i < d->n_files; i++) {
    const load_file *f = &d->files[i];
    if (!d->tables[f->table].allowed)
      continue;
    if (n_rows > 0 && !f->registered) {
      u->host->error_make(u->ctx, e, DM_ERR_LOAD_DUMP_INCOMPLETE, NULL,
                          "load: %s/%s is not in the load checkpoint of task `%s`: the dump "
                          "changed since the load started",
                          d->dir, f->name, u->host->task_name(u->ctx));
      return -1;
    }
    if (f->offset < f->size)
      done = false;
  }
  if (done)
    return 1;
  rc = load_schema_apply(u, c, d, e);
  if (rc != 0)
    return rc < 0 ? -1 : 2;
  if (n_rows == 0) {
    /* Only allowed tables are registered: mark the others so registration skips them. */
    for (int i = 0; i < d->n_files; i++)
      if (!d->tables[d->files[i].table].allowed) {
        d->files[i].registered = true;
        d->files[i].offset = d->files[i].size;
      }
    if (load_cp_register(u, c, d, e) != 0)
      return -1;
  }
  return 0;
}

static void load_process(void *self, dm_result *result) {
  load_unit *u = self;
  dm_error e;
  load_dump d;
  if (load_dir_scan(u, u->cfg.dir, &d, &e) != 0) {
    dm_result_fail(result, &e);
    return;
  }
  pthread_mutex_lock(&u->lock);
  u->pos = d.pos;
  u->has_pos = d.has_pos;
  u->safe_exit = d.safe_exit;
  u->has_safe_exit = d.has_safe_exit;
  pthread_mutex_unlock(&u->lock);

  MYSQL *c = load_db_connect(u, &e);
  int rc = c ? load_prepare(u, c, &d, &e) : -1;
  load_db_close(u, c);
  uint64_t total = 0, finished = 0;
  for (int i = 0; i < d.n_files; i++)
    if (d.tables[d.files[i].table].allowed) {
      total += d.files[i].size;
      finished += d.files[i].offset < d.files[i].size ? d.files[i].offset : d.files[i].size;
    }
  atomic_store(&u->total_bytes, total);
  atomic_store(&u->finished_bytes, finished);
  load_metrics_committed(u, 0, 0);
  if (rc < 0) {
    if (atomic_load(&u->killed))
      result->outcome = DM_OUTCOME_CANCELED;
    else
      dm_result_fail(result, &e);
    load_dir_free(&d);
    return;
  }
  if (rc == 2) {
    result->outcome = DM_OUTCOME_CANCELED;
    load_dir_free(&d);
    return;
  }
  if (rc == 1) {
    u->host->logf(u->ctx, DM_LOG_INFO, "load: %s is loaded already (%" PRIu64 " bytes)", d.dir,
                  total);
    atomic_store(&u->finished, true);
    result->outcome = DM_OUTCOME_FINISHED;
    load_dir_free(&d);
    return;
  }
  u->host->logf(u->ctx, DM_LOG_INFO,
                "load: loading %s: %" PRIu64 " of %" PRIu64 " bytes left, %d worker(s)", d.dir,
                total - finished, total, u->cfg.pool_size);
  atomic_store(&u->run_start_bytes, finished);
  int64_t t0 = dm_clock_ns();
  atomic_store(&u->run_start_ns, t0);
  result->outcome = load_workers_run(u, &d, result);
  double secs = (double)(dm_clock_ns() - t0) / 1e9;
  uint64_t now_done = atomic_load(&u->finished_bytes);
  atomic_store(&u->run_start_ns, 0);
  u->host->logf(
      u->ctx, DM_LOG_INFO, "load: %s after %.1f s: %" PRIu64 " of %" PRIu64 " bytes (%.1f MiB/s)",
      result->outcome == DM_OUTCOME_FINISHED   ? "finished"
      : result->outcome == DM_OUTCOME_CANCELED ? "stopped"
                                               : "failed",
      secs, now_done, total, secs > 0 ? (double)(now_done - finished) / secs / 1048576.0 : 0.0);
  if (result->outcome == DM_OUTCOME_FINISHED) {
    atomic_store(&u->finished, true);
    if (u->cfg.cleanup_dump)
      load_cleanup(u, &d);
  }
  load_dir_free(&d);
}

/* ---- the other slots ---- */

static void load_pause(void *self) {
  load_unit *u = self;
  /* process closes its connections before it returns: nothing is held while paused. */
  u->host->logf(u->ctx, DM_LOG_INFO, "load: paused at %" PRIu64 " of %" PRIu64 " bytes",
                (uint64_t)atomic_load(&u->finished_bytes), (uint64_t)atomic_load(&u->total_bytes));
}

static void load_status(void *self, dm_status_sink *sink) {
  load_unit *u = self;
  uint64_t done = atomic_load(&u->finished_bytes), total = atomic_load(&u->total_bytes);
  sink->put_int(sink, "finishedBytes", (int64_t)done);
  sink->put_int(sink, "totalBytes", (int64_t)total);
  sink->put_progress(sink, done, total, "bytes");
  char pct[32];
  snprintf(pct, sizeof pct, "%.2f %%", total ? 100.0 * (double)done / (double)total : 0.0);
  sink->put_str(sink, "progress", pct);
  int64_t t0 = atomic_load(&u->run_start_ns), bps = 0;
  if (t0 != 0) {
    double secs = (double)(dm_clock_ns() - t0) / 1e9;
    uint64_t start = atomic_load(&u->run_start_bytes);
    if (secs > 0.001 && done >= start)
      bps = (int64_t)((double)(done - start) / secs);
  }
  sink->put_int(sink, "bps", bps);
  dm_position pos, safe_exit;
  pthread_mutex_lock(&u->lock); /* held for a copy only */
  bool has = u->has_pos, has_exit = u->has_pos && u->has_safe_exit;
  pos = u->pos;
  safe_exit = u->safe_exit;
  pthread_mutex_unlock(&u->lock);
  if (has)
    sink->put_position(sink, DM_STATUS_META_BINLOG, &pos);
  if (has_exit)
    sink->put_position(sink, DM_STATUS_META_SAFE_EXIT, &safe_exit);
}

/* The dump's position (from its metadata) and safe-mode exit: where the next unit starts. */
static bool load_end_position(void *self, dm_position *end, dm_position *safe_exit) {
  load_unit *u = self;
  pthread_mutex_lock(&u->lock);
  bool has = u->has_pos;
  if (has)
    *end = u->pos;
  if (has && u->has_safe_exit)
    *safe_exit = u->safe_exit;
  pthread_mutex_unlock(&u->lock);
  return has;
}

static void load_kill(void *self) {
  load_unit *u = self;
  atomic_store(&u->killed, true);
  dm_conn_kill_all(u->conns); /* blocked queries return with "lost connection" */
}

static void load_close(void *self) {
  load_unit *u = self;
  dm_conn_kill_free(u->conns);
  pthread_mutex_destroy(&u->lock);
  free(u);
}

static const dm_unit_descriptor load_unit_desc = {
    DM_UNIT_DESCRIPTOR_HEADER,
    .kind = DM_UNIT_LOAD,
    .name = "dmhost-load",
    .version = "0.1.0",
    .ops =
        {
            .init = load_init,
            .is_fresh_task = load_is_fresh_task,
            .process = load_process,
            .pause = load_pause,
            .status = load_status,
            .update = load_update,
            .kill = load_kill,
            .close = load_close,
        },
    .handover = DM_UNIT_GIVES_POSITION,
    .end_position = load_end_position,
};

DM_UNIT_EXPORT(load_unit_desc)

void load_metrics_init(load_unit *u) {
  u->m_progress =
      dm_host_metric_publish(u->host, u->ctx, "dm_loader_progress", DM_METRIC_GAUGE,
                             "the processing progress of loader in percentage", NULL, 0, NULL, 0);
  u->m_bytes =
      dm_host_metric_publish(u->host, u->ctx, "dmhost_load_finished_bytes_total", DM_METRIC_COUNTER,
                             "bytes of the dump's data files the load committed", NULL, 0, NULL, 0);
  u->m_rows =
      dm_host_metric_publish(u->host, u->ctx, "dmhost_load_finished_rows_total", DM_METRIC_COUNTER,
                             "rows the load wrote to the target", NULL, 0, NULL, 0);
  /* the counters from the start, at 0 */
  dm_host_metric_add(u->host, u->ctx, u->m_bytes, NULL, 0);
  dm_host_metric_add(u->host, u->ctx, u->m_rows, NULL, 0);
}

void load_metrics_committed(load_unit *u, uint64_t bytes, uint64_t rows) {
  if (bytes)
    dm_host_metric_add(u->host, u->ctx, u->m_bytes, NULL, (double)bytes);
  if (rows)
    dm_host_metric_add(u->host, u->ctx, u->m_rows, NULL, (double)rows);
  uint64_t done = atomic_load(&u->finished_bytes), total = atomic_load(&u->total_bytes);
  dm_host_metric_set(u->host, u->ctx, u->m_progress, NULL,
                     total == 0 || done >= total ? 100.0 : 100.0 * (double)done / (double)total);
}

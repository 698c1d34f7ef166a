/*
 * dmhost-dump: a consistent, multi-threaded dump of the source into files (docs/dump.md, the
 * format in docs/dump-format.md).
 *
 * One process call: clean what an incomplete earlier run left, take one snapshot on `threads`
 * connections (dump_snapshot.c), then worker 0 lists the tables, writes the schema files and
 * queues chunk jobs while workers 1..n-1 already dump them; worker 0 joins them when planning is
 * done. `metadata` is written last: its presence is the unit's only checkpoint ("the dump is
 * complete"). Nothing finer can be resumed: a new run has a new snapshot, and chunks from two
 * snapshots would not be one consistent dump.
 *
 * Settings (all optional): threads = 4; chunk-rows = 100000; rows = 1000;
 * statement-size = 1048576; chunk-filesize = 67108864; consistency = "auto"; where = "" (DM's);
 * lock-wait = "10s".
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "dmhost/settings.h"
#include "dump_internal.h"

#define DUMP_DEFAULT_THREADS 4
#define DUMP_DEFAULT_CHUNK_ROWS 100000
#define DUMP_DEFAULT_ROWS 1000
#define DUMP_DEFAULT_STATEMENT_SIZE (1 << 20)
#define DUMP_DEFAULT_CHUNK_FILESIZE (64 << 20)
/* A source's writes wait behind a waiting FTWRL: seconds, not MariaDB's day (dump_snapshot.c). */
#define DUMP_DEFAULT_LOCK_WAIT_MS 10000
#define DUMP_MAX_LOCK_WAIT_MS (86400 * 1000LL)

void dump_fail(dump_unit *u, const dm_error *e) {
  pthread_mutex_lock(&u->err_lock);
  bool first = !u->has_err;
  if (first) {
    u->err = *e;
    u->has_err = true;
  }
  pthread_mutex_unlock(&u->err_lock);
  if (!first)
    u->host->logf(u->ctx, DM_LOG_WARN, "dump: also: %s", e->message);
  atomic_store(&u->abort, true);
  dump_queue_wake(&u->queue);
}

bool dump_should_stop(dump_unit *u) {
  return atomic_load_explicit(&u->abort, memory_order_relaxed) ||
         atomic_load_explicit(&u->killed, memory_order_relaxed) || u->host->stop_requested(u->ctx);
}

void dump_table_chunk_done(dump_unit *u, dump_table *t) {
  if (atomic_fetch_sub(&t->pending, 1) == 1)
    atomic_fetch_add(&u->completed_tables, 1);
}

/* ---- settings ---- */

/* `consistency`: auto (default), flush, snapshot, lock, none (docs/dump.md). */
const char *const dump_consistency_names[DUMP_CONS_COUNT] = {"flush", "snapshot", "none", "auto",
                                                             "lock"};

static int dump_read_consistency(dump_unit *u, dm_error *err) {
  const char *s = NULL;
  switch (u->host->cfg_string(u->ctx, "consistency", &s)) {
  case DM_CFG_OK:
    break;
  case DM_CFG_MISSING:
    u->consistency = DUMP_CONS_AUTO;
    return 0;
  default:
    s = NULL;
    break;
  }
  int found = -1;
  for (int i = 0; s && i < DUMP_CONS_COUNT; i++)
    if (strcmp(s, dump_consistency_names[i]) == 0)
      found = i;
  if (found < 0) {
    u->host->error_make(u->ctx, err, DM_ERR_CONFIG_INVALID, NULL,
                        "dump: setting `consistency` must be one of \"auto\" (the default), "
                        "\"flush\", \"snapshot\", \"lock\", \"none\"; not %s%s%s",
                        s ? "\"" : "", s ? s : "a string", s ? "\"" : "");
    return -1;
  }
  u->consistency = (dump_consistency)found;
  return 0;
}

static int dump_read_settings(dump_unit *u, dm_error *err) {
  int64_t threads;
  if (dm_setting_int(u->host, u->ctx, "dump", "threads", DUMP_DEFAULT_THREADS, 1, DUMP_MAX_THREADS,
                     &threads, err) != 0 ||
      dm_setting_int(u->host, u->ctx, "dump", "chunk-rows", DUMP_DEFAULT_CHUNK_ROWS, 1,
                     INT64_MAX / 4, &u->chunk_rows, err) != 0 ||
      dm_setting_int(u->host, u->ctx, "dump", "rows", DUMP_DEFAULT_ROWS, 1, INT32_MAX,
                     &u->stmt_rows, err) != 0 ||
      dm_setting_size(u->host, u->ctx, "dump", "statement-size", DUMP_DEFAULT_STATEMENT_SIZE, 1024,
                      1 << 30, &u->stmt_size, err) != 0 ||
      dm_setting_size(u->host, u->ctx, "dump", "chunk-filesize", DUMP_DEFAULT_CHUNK_FILESIZE, 4096,
                      INT64_MAX / 4, &u->chunk_filesize, err) != 0 ||
      dm_setting_duration(u->host, u->ctx, "dump", "lock-wait", DUMP_DEFAULT_LOCK_WAIT_MS,
                          DUMP_MAX_LOCK_WAIT_MS, &u->lock_wait_ms, err) != 0)
    return -1;
  u->threads_cfg = u->threads = (int)threads;
  if (dump_read_consistency(u, err) != 0)
    return -1;
  const char *w = NULL;
  dm_cfg_result r = u->host->cfg_string(u->ctx, "where", &w);
  char why[160];
  if (r == DM_CFG_WRONG_TYPE ||
      (r == DM_CFG_OK && w[0] && dm_db_condition_check(w, why, sizeof why))) {
    u->host->error_make(u->ctx, err, DM_ERR_CONFIG_INVALID, NULL,
                        "dump: setting `where` must be a condition on each table's rows (\"id > "
                        "100\"): %s",
                        r == DM_CFG_WRONG_TYPE ? "it is not a string" : why);
    return -1;
  }
  char *copy = r == DM_CFG_OK && w[0] ? strdup(w) : NULL;
  if (r == DM_CFG_OK && w[0] && !copy) {
    u->host->error_make(u->ctx, err, DM_ERR_NO_MEMORY, NULL, "dump: no memory");
    return -1;
  }
  free(u->where);
  u->where = copy;
  return 0;
}

/* ---- slots ---- */

static void dump_close(void *self);

/* update-task while paused: every setting can change, as a paused dump starts over at resume
 * (process keeps nothing of a stopped run) and a finished one never runs again in this subtask.
 * Only process reads the settings, and it is not running; a refused one brings the old ones back.
 */
static int dump_update(void *self, dm_error *err) {
  dump_unit *u = self;
  int threads_cfg = u->threads_cfg, threads = u->threads;
  int64_t chunk_rows = u->chunk_rows, stmt_rows = u->stmt_rows, stmt_size = u->stmt_size,
          chunk_filesize = u->chunk_filesize;
  dump_consistency consistency = u->consistency;
  if (dump_read_settings(u, err) == 0)
    return 0;
  u->threads_cfg = threads_cfg;
  u->threads = threads;
  u->chunk_rows = chunk_rows;
  u->stmt_rows = stmt_rows;
  u->stmt_size = stmt_size;
  u->chunk_filesize = chunk_filesize;
  u->consistency = consistency;
  return -1;
}

static int dump_init(const dm_host_services *host, dm_ctx *ctx, void **self, dm_error *err) {
  dump_unit *u = calloc(1, sizeof *u);
  if (!u) {
    host->error_make(ctx, err, DM_ERR_NO_MEMORY, NULL, "dump: no memory for an instance");
    return -1;
  }
  u->host = host;
  u->ctx = ctx;
  pthread_mutex_init(&u->err_lock, NULL);
  pthread_mutex_init(&u->pos_lock, NULL);
  u->main.sock = -1;
  for (int i = 0; i < DUMP_MAX_THREADS; i++)
    u->workers[i].sock = -1;
  /* shut down with a reset: see DM_CONN_KILL_RESET */
  u->conns = dm_conn_kill_new(DUMP_MAX_THREADS + 1, DM_CONN_KILL_RESET);
  if (!u->conns) {
    host->error_make(ctx, err, DM_ERR_NO_MEMORY, NULL, "dump: no memory for an instance");
    dump_close(u);
    return -1;
  }
  const char *dir = host->work_dir(ctx);
  if (strlen(dir) >= sizeof u->work_dir - 64) {
    host->error_make(ctx, err, DM_ERR_CONFIG_INVALID, NULL, "dump: work folder %s is too long",
                     dir);
    dump_close(u);
    return -1;
  }
  dm_strlcpy(u->work_dir, dir, sizeof u->work_dir);
  u->file_mode = (mode_t)dm_host_file_mode(host, ctx);
  u->sync_follows = dm_host_sync_follows(host, ctx);
  if (dump_read_settings(u, err) != 0) {
    dump_close(u);
    return -1;
  }
  dump_metrics_init(u);
  *self = u;
  return 0;
}

void dump_metrics_init(dump_unit *u) {
  u->m_rows =
      dm_host_metric_publish(u->host, u->ctx, "dumpling_dump_finished_rows", DM_METRIC_COUNTER,
                             "counter for dumpling finished rows", NULL, 0, NULL, 0);
  u->m_bytes =
      dm_host_metric_publish(u->host, u->ctx, "dumpling_dump_finished_size", DM_METRIC_COUNTER,
                             "counter for dumpling finished file size", NULL, 0, NULL, 0);
  /* DM's board divides finished rows by it (dump progress) */
  u->m_estimate = dm_host_metric_publish(
      u->host, u->ctx, "dumpling_dump_estimate_total_rows", DM_METRIC_COUNTER,
      "counter for dumpling estimated total rows", NULL, 0, NULL, 0);
  u->m_progress = dm_host_metric_publish(
      u->host, u->ctx, "dmhost_dump_progress", DM_METRIC_GAUGE,
      "the dump's progress in percent: finished rows of the estimated total", NULL, 0, NULL, 0);
  dump_metrics_written(u, 0, 0); /* the counters from the start, at 0 */
}

void dump_metrics_estimated(dump_unit *u, int64_t rows) {
  if (rows > 0)
    dm_host_metric_add(u->host, u->ctx, u->m_estimate, NULL, (double)rows);
}

void dump_metrics_written(dump_unit *u, int64_t rows, size_t bytes) {
  dm_host_metric_add(u->host, u->ctx, u->m_rows, NULL, (double)rows);
  dm_host_metric_add(u->host, u->ctx, u->m_bytes, NULL, (double)bytes);
  int64_t done = atomic_load(&u->finished_rows), total = atomic_load(&u->total_rows);
  if (total > 0)
    dm_host_metric_set(u->host, u->ctx, u->m_progress, NULL,
                       done >= total ? 100.0 : 100.0 * (double)done / (double)total);
}

/* Not fresh once the dump is complete: a restart in load must never dump again. An incomplete
 * dump counts as fresh — it is redone from scratch anyway. */
static int dump_is_fresh_task(void *self, bool *fresh, dm_error *err) {
  dump_unit *u = self;
  char path[PATH_MAX];
  if (dump_path(u, path, DUMP_METADATA, err) != 0)
    return -1;
  struct stat st;
  if (stat(path, &st) == 0) {
    *fresh = false;
    return 0;
  }
  if (errno == ENOENT) {
    *fresh = true;
    return 0;
  }
  return dump_io_error(u, "look at", path, errno, err);
}

static void dump_run_free(dump_unit *u) {
  dump_tables_free(u);
  u->listed = false;
}

/* Worker 0's first job: the table list, the schema files and the chunk jobs. */
static void dump_plan(dump_unit *u) {
  dm_error err;
  dump_conn *c = &u->workers[0];
  if (!u->listed && dump_schema_list(u, c, &err) != 0) {
    dump_fail(u, &err);
    return;
  }
  for (size_t i = 0; i < u->n_tables && !dump_should_stop(u); i++) {
    dump_table *t = u->tables[i];
    if (dump_schema_table(u, c, t, &err) != 0 || dump_chunks_plan(u, c, t, &err) != 0) {
      dump_fail(u, &err);
      return;
    }
  }
}

/* A complete dump: report it and finish at once (1). One made without a position cannot serve a
 * sync (the task's mode changed since): -1 with *err. */
static int dump_already_complete(dump_unit *u, dm_error *err) {
  dm_position pos, safe_exit;
  bool has_pos, has_safe_exit;
  int tables;
  int64_t rows;
  if (!dump_metadata_read(u, &pos, &has_pos, &safe_exit, &has_safe_exit, u->no_pos,
                          sizeof u->no_pos, &tables, &rows))
    return 0;
  if (!has_pos && u->sync_follows) {
    u->host->error_make(u->ctx, err, DM_ERR_DUMP_NO_POSITION, NULL,
                        "dump: the sync of task mode %s must continue from a binlog position, "
                        "but %s/%s is a complete dump without one (%s)",
                        u->host->task_mode(u->ctx), u->work_dir, DUMP_METADATA, u->no_pos);
    return -1;
  }
  pthread_mutex_lock(&u->pos_lock);
  u->pos = pos;
  u->have_pos = has_pos;
  u->safe_exit = safe_exit;
  u->have_safe_exit = has_safe_exit;
  pthread_mutex_unlock(&u->pos_lock);
  atomic_store(&u->total_tables, tables);
  atomic_store(&u->completed_tables, tables);
  atomic_store(&u->total_rows, rows);
  atomic_store(&u->finished_rows, rows);
  u->host->logf(u->ctx, DM_LOG_INFO, "dump: %s/%s exists: the dump is complete, nothing to do",
                u->work_dir, DUMP_METADATA);
  return 1;
}

static void dump_process(void *self, dm_result *result) {
  dump_unit *u = self;
  dm_error err;
  int complete = dump_already_complete(u, &err);
  if (complete != 0) {
    if (complete > 0)
      result->outcome = DM_OUTCOME_FINISHED;
    else
      dm_result_fail(result, &err);
    return;
  }
  u->no_pos[0] = '\0';
  atomic_store(&u->abort, false);
  u->has_err = false;
  atomic_store(&u->total_tables, 0);
  atomic_store(&u->completed_tables, 0);
  atomic_store(&u->total_rows, 0);
  atomic_store(&u->finished_rows, 0);
  atomic_store(&u->finished_bytes, 0);
  atomic_store(&u->start_ms, dm_clock_ms());
  atomic_store(&u->end_ms, 0);
  pthread_mutex_lock(&u->pos_lock);
  u->have_pos = u->have_safe_exit = false;
  pthread_mutex_unlock(&u->pos_lock);
  u->started = time(NULL);
  if (dump_dir_clean(u, &err) != 0) {
    dm_result_fail(result, &err);
    return;
  }
  dump_queue_init(&u->queue);
  if (dump_snapshot_take(u, &err) != 0) {
    for (int i = 0; i < u->threads; i++)
      dump_conn_close(u, &u->workers[i]);
    dump_queue_destroy(&u->queue);
    dump_run_free(u);
    if (dump_should_stop(u))
      result->outcome = DM_OUTCOME_CANCELED;
    else
      dm_result_fail(result, &err);
    return;
  }
  dump_flush_start(u);
  pthread_t tids[DUMP_MAX_THREADS];
  int started = dump_workers_start(u, tids, 1, u->threads, &err);
  if (started < u->threads)
    dump_fail(u, &err);
  dump_plan(u);
  dump_queue_close(&u->queue);
  dump_worker_run(u, 0);
  for (int i = 1; i < started; i++)
    pthread_join(tids[i], NULL);
  dump_flush_stop(u);
  for (int i = started; i < u->threads; i++) /* workers that never started */
    dump_conn_close(u, &u->workers[i]);
  dump_queue_destroy(&u->queue);

  if (u->has_err) {
    dm_result_fail(result, &u->err);
  } else if (dump_should_stop(u)) {
    u->host->logf(u->ctx, DM_LOG_INFO,
                  "dump: stopped after %" PRId64 " rows; the next start dumps again from a new "
                  "snapshot",
                  (int64_t)atomic_load(&u->finished_rows));
    result->outcome = DM_OUTCOME_CANCELED;
  } else if (dump_metadata_write(u, &err) != 0) {
    dm_result_fail(result, &err);
  } else {
    int64_t rows = atomic_load(&u->finished_rows);
    atomic_store(&u->total_rows, rows);
    atomic_store(&u->end_ms, dm_clock_ms());
    double secs = (double)(atomic_load(&u->end_ms) - atomic_load(&u->start_ms)) / 1000.0;
    u->host->logf(u->ctx, DM_LOG_INFO,
                  "dump: complete: %zu tables, %" PRId64 " rows, %" PRId64 " bytes in %.2f s",
                  u->n_tables, rows, (int64_t)atomic_load(&u->finished_bytes), secs);
    result->outcome = DM_OUTCOME_FINISHED;
  }
  dump_run_free(u);
}

/* process closed every connection and file before it returned: nothing is held while paused. */
static void dump_pause(void *self) {
  dump_unit *u = self;
  u->host->logf(u->ctx, DM_LOG_INFO,
                "dump: paused; the dump restarts from a new snapshot on resume");
}

/* Blocked reads (a worker waiting for rows, FTWRL waiting for a long query) return once their
 * socket is shut down; the handles themselves are closed by their owners. */
static void dump_kill(void *self) {
  dump_unit *u = self;
  atomic_store(&u->killed, true);
  dm_conn_kill_all(u->conns);
}

static void dump_status(void *self, dm_status_sink *sink) {
  dump_unit *u = self;
  int64_t rows = atomic_load(&u->finished_rows), total = atomic_load(&u->total_rows);
  int64_t bytes = atomic_load(&u->finished_bytes);
  if (total < rows)
    total = rows;
  sink->put_int(sink, "totalTables", atomic_load(&u->total_tables));
  sink->put_int(sink, "completedTables", atomic_load(&u->completed_tables));
  sink->put_int(sink, "totalRows", total);
  sink->put_int(sink, "finishedRows", rows);
  sink->put_int(sink, "finishedBytes", bytes);
  int64_t start = atomic_load(&u->start_ms), end = atomic_load(&u->end_ms);
  if (start > 0) {
    int64_t ms = (end ? end : dm_clock_ms()) - start;
    sink->put_int(sink, "bps", ms > 0 ? bytes * 1000 / ms : 0);
  }
  sink->put_progress(sink, (uint64_t)rows, (uint64_t)total, "rows");
  /* The position is written once per run; never wait for it. */
  if (pthread_mutex_trylock(&u->pos_lock) == 0) {
    if (u->have_pos)
      sink->put_position(sink, DM_STATUS_META_BINLOG, &u->pos);
    if (u->have_pos && u->have_safe_exit)
      sink->put_position(sink, DM_STATUS_META_SAFE_EXIT, &u->safe_exit);
    pthread_mutex_unlock(&u->pos_lock);
  }
}

/* The snapshot's position (and safe-mode exit, consistency none): where the next unit starts. */
static bool dump_end_position(void *self, dm_position *end, dm_position *safe_exit) {
  dump_unit *u = self;
  pthread_mutex_lock(&u->pos_lock);
  bool has = u->have_pos;
  if (has)
    *end = u->pos;
  if (has && u->have_safe_exit)
    *safe_exit = u->safe_exit;
  pthread_mutex_unlock(&u->pos_lock);
  return has;
}

static void dump_close(void *self) {
  dump_unit *u = self;
  dump_run_free(u);
  free(u->where);
  dm_conn_kill_free(u->conns);
  pthread_mutex_destroy(&u->err_lock);
  pthread_mutex_destroy(&u->pos_lock);
  free(u);
}

static const dm_unit_descriptor dump_descriptor = {
    DM_UNIT_DESCRIPTOR_HEADER,
    .kind = DM_UNIT_DUMP,
    .name = DUMP_UNIT_NAME,
    .version = "0.1.0",
    .ops =
        {
            .init = dump_init,
            .is_fresh_task = dump_is_fresh_task,
            .process = dump_process,
            .pause = dump_pause,
            .status = dump_status,
            .update = dump_update,
            .kill = dump_kill,
            .close = dump_close,
        },
    .handover = DM_UNIT_GIVES_POSITION,
    .end_position = dump_end_position,
};

DM_UNIT_EXPORT(dump_descriptor)

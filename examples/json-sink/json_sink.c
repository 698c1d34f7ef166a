/*
 * json-sink: a custom unit (kind "json-sink") that reads the relay log of its source through the
 * SDK's relay folder reader (dmhost/relay_log.h) and writes each row change as one JSON line in
 * Debezium's envelope (sink_row.c), exactly once across kills and restarts (sink_out.c). Built
 * out of tree against the installed SDK only (CMakeLists.txt, README.md).
 *
 * Settings (the task file's `json-sink = { ... };`):
 *   output-dir      where the .jsonl files go (default: the unit's work folder)
 *   layout          "per-table" (default: <db>.<table>.jsonl) or "stream" (changes.jsonl)
 *   flush-interval  ms: a commit (fsync + checkpoint) at least this often while lines wait (100)
 *   flush-batch     transactions: a commit after this many at the latest (1000)
 */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dmhost/settings.h>

#include "sink.h"

/* ---- init ---- */

static int sink_settings(sink *s, dm_error *err) {
  const dm_host_services *h = s->host;
  const char *dir = NULL, *layout = NULL;
  switch (h->cfg_string(s->ctx, "output-dir", &dir)) {
  case DM_CFG_OK:
    if (dir[0] != '/') {
      h->error_make(s->ctx, err, DM_ERR_CONFIG_INVALID, NULL,
                    SINK_WHO ": setting `output-dir` is \"%s\", it must be an absolute path", dir);
      return -1;
    }
    break;
  case DM_CFG_MISSING:
    dir = h->work_dir(s->ctx);
    break;
  default:
    h->error_make(s->ctx, err, DM_ERR_CONFIG_INVALID, NULL,
                  SINK_WHO ": setting `output-dir` must be a string (a folder's absolute path)");
    return -1;
  }
  switch (h->cfg_string(s->ctx, "layout", &layout)) {
  case DM_CFG_OK:
    break;
  case DM_CFG_MISSING:
    layout = "per-table";
    break;
  default:
    layout = NULL;
  }
  if (!layout || (strcmp(layout, "per-table") != 0 && strcmp(layout, "stream") != 0)) {
    h->error_make(s->ctx, err, DM_ERR_CONFIG_INVALID, NULL,
                  SINK_WHO ": setting `layout` must be \"per-table\" (a file per table) or "
                           "\"stream\" (one changes.jsonl)");
    return -1;
  }
  s->per_table = strcmp(layout, "per-table") == 0;
  if (snprintf(s->out_dir, sizeof s->out_dir, "%s", dir) >= (int)sizeof s->out_dir) {
    h->error_make(s->ctx, err, DM_ERR_CONFIG_INVALID, NULL,
                  SINK_WHO ": setting `output-dir` is too long");
    return -1;
  }
  if (dm_setting_int(h, s->ctx, SINK_WHO, "flush-interval", 100, 1, 60000, &s->flush_ms, err) !=
          0 ||
      dm_setting_int(h, s->ctx, SINK_WHO, "flush-batch", 1000, 1, 1000000, &s->flush_batch, err) !=
          0)
    return -1;
  return 0;
}

static int sink_init(const dm_host_services *host, dm_ctx *ctx, void **self, dm_error *err) {
  const char *relay = host->relay_dir(ctx);
  if (!relay) {
    const char *src = host->source_id(ctx);
    host->error_make(ctx, err, DM_ERR_CONFIG_INVALID, NULL,
                     SINK_WHO ": the relay of source `%s` is off, and json-sink reads the relay "
                              "log only: set enable-relay = true (and relay-dir) in the source "
                              "file of `%s`, or run dmctl start-relay -s %s, then start the task "
                              "again",
                     src, src, src);
    return -1;
  }
  sink *s = calloc(1, sizeof *s);
  if (!s) {
    host->error_make(ctx, err, DM_ERR_NO_MEMORY, NULL, SINK_WHO ": no memory for an instance");
    return -1;
  }
  s->host = host;
  s->ctx = ctx;
  s->relay_dir = relay;
  s->dir_fd = -1;
  s->file_mode = (mode_t)dm_host_file_mode(host, ctx);
  atomic_init(&s->killed, false);
  atomic_init(&s->lines, 0);
  atomic_init(&s->commits, 0);
  atomic_init(&s->started_ms, 0);
  const char *wd = host->work_dir(ctx);
  if (sink_settings(s, err) != 0 ||
      snprintf(s->checkpoint_path, sizeof s->checkpoint_path, "%s/%s", wd, SINK_CHECKPOINT) >=
          (int)sizeof s->checkpoint_path) {
    if (err->code == 0)
      host->error_make(ctx, err, DM_ERR_CONFIG_INVALID, NULL, SINK_WHO ": work folder too long");
    free(s);
    return -1;
  }
  dm_strlcpy(s->work_dir, wd, sizeof s->work_dir);
  /* our reader file in <relay-dir>/readers is the task's name, as the sync's is: the host holds
   * the relay's files under that name while the dump and load run, and we take that hold over */
  dm_strlcpy(s->reader, host->task_name(ctx), sizeof s->reader);
  pthread_mutex_init(&s->lock, NULL);
  *self = s;
  return 0;
}

static int sink_is_fresh_task(void *self, bool *fresh, dm_error *err) {
  sink *s = self;
  struct stat st;
  if (stat(s->checkpoint_path, &st) == 0) {
    *fresh = false;
    return 0;
  }
  if (errno == ENOENT) {
    *fresh = true;
    return 0;
  }
  s->host->error_make(s->ctx, err, DM_ERR_IO, strerror(errno), SINK_WHO ": cannot look at %s: %s",
                      s->checkpoint_path, strerror(errno));
  return -1;
}

/* ---- process ---- */

static void sink_fail(dm_result *result, const dm_error *e) {
  result->outcome = DM_OUTCOME_ERROR;
  result->n_errors = 1;
  result->errors[0] = *e;
}

/* Where a task without a checkpoint starts: where the unit before it ended, else the task's
 * meta. */
static int sink_start_position(sink *s, dm_error *err) {
  dm_position p;
  memset(&p, 0, sizeof p);
  const char *from = "the unit before it";
  if (!s->host->handoff_position(s->ctx, &p) || !p.name[0]) {
    memset(&p, 0, sizeof p);
    from = "the task's meta";
    if (!s->host->meta_position(s->ctx, &p) || !p.name[0]) {
      s->host->error_make(s->ctx, err, DM_ERR_CONFIG_INVALID, NULL,
                          SINK_WHO ": nowhere to start: no unit before it in the task handed "
                                   "over a position and the task's mysql-instances entry of "
                                   "source `%s` has no meta binlog-name; run a dump and load "
                                   "before it (units = [\"dump\", \"load\", \"json-sink\"]) or "
                                   "set meta = { binlog-name = ...; binlog-pos = ...; }",
                          s->host->source_id(s->ctx));
      return -1;
    }
  }
  if (p.pos < 4)
    p.pos = 4;
  memset(&s->gtids, 0, sizeof s->gtids);
  if (p.gtid[0] && dm_mariadb_gtid_set_parse(&s->gtids, p.gtid) != 0)
    memset(&s->gtids, 0, sizeof s->gtids); /* a MySQL set: the GTIDs of events still come */
  s->boundary = s->checkpointed = p;
  char at[DM_POSITION_NAME_MAX + 32];
  s->host->logf(s->ctx, DM_LOG_INFO, SINK_WHO ": first start, at %s (from %s)",
                dm_position_format(&p, at, sizeof at), from);
  return 0;
}

/* The relay reader's wait: commit what waits once flush-interval has passed (the relay is idle: no
 * transaction end will come to do it), then sleep on the stop token, at most until the next
 * commit is due (the token ends the wait: dm_relay_log_next returns 0). */
static bool sink_wait(void *arg, const char *path, uint64_t offset) {
  (void)path;
  (void)offset;
  sink *s = arg;
  if (atomic_load(&s->killed))
    return false;
  /* also when only events outside transactions moved it (a ROTATE and the new file's first
   * events): an idle sink's checkpoint names where it is, not the end of the last transaction */
  bool moved = s->pending_txns > 0 || s->boundary.pos != s->checkpointed.pos ||
               strcmp(s->boundary.name, s->checkpointed.name) != 0;
  if (!s->wait_failed && moved && sink_now_ms() - s->last_commit_ms >= s->flush_ms &&
      sink_commit(s, false, &s->wait_err) != 0) {
    s->wait_failed = true;
    return false;
  }
  int64_t due = moved ? s->flush_ms - (sink_now_ms() - s->last_commit_ms) : 100;
  return !s->host->wait_stop(s->ctx, (uint32_t)(due < 1 ? 1 : due > 100 ? 100 : due));
}

static void sink_maps_clear(sink *s) {
  for (size_t i = 0; i < s->n_maps; i++)
    dm_binlog_table_map_free(s->maps[i]);
  s->n_maps = 0;
}

static int sink_map_add(sink *s, const dm_binlog_format *fmt, const dm_binlog_event *ev,
                        dm_error *err) {
  dm_binlog_table_map *tm;
  if (dm_binlog_table_map_decode(fmt, ev, &tm, err) != 0)
    return -1;
  /* names only for the tables whose rows are written */
  if (s->host->table_allowed(s->ctx, tm->db.ptr, tm->table.ptr) &&
      sink_columns_fill(s, tm, err) != 0) {
    dm_binlog_table_map_free(tm);
    return -1;
  }
  for (size_t i = 0; i < s->n_maps; i++)
    if (s->maps[i]->table_id == tm->table_id) {
      dm_binlog_table_map_free(s->maps[i]);
      s->maps[i] = tm;
      return 0;
    }
  if (s->n_maps == s->cap_maps) {
    size_t cap = s->cap_maps ? s->cap_maps * 2 : 8;
    dm_binlog_table_map **m = realloc(s->maps, cap * sizeof *m);
    if (!m) {
      dm_binlog_table_map_free(tm);
      s->host->error_make(s->ctx, err, DM_ERR_NO_MEMORY, NULL, SINK_WHO ": no memory");
      return -1;
    }
    s->maps = m;
    s->cap_maps = cap;
  }
  s->maps[s->n_maps++] = tm;
  return 0;
}

static void sink_boundary_after(sink *s, const dm_binlog_event *ev) {
  dm_strlcpy(s->boundary.name, ev->file, sizeof s->boundary.name);
  s->boundary.pos = ev->header.next_pos ? ev->header.next_pos : ev->offset + ev->raw_len;
}

/* A transaction (event group) ended with the event ev: the position after it and its lines belong
 * to the next commit (together: a commit never holds one without the other). */
static int sink_txn_end(sink *s, const dm_binlog_event *ev, dm_error *err) {
  sink_boundary_after(s, ev);
  s->in_txn = false;
  sink_maps_clear(s);
  if (sink_txn_boundary(s, err) != 0)
    return -1;
  if (s->pending_txns >= (uint64_t)s->flush_batch ||
      sink_now_ms() - s->last_commit_ms >= s->flush_ms)
    return sink_commit(s, false, err);
  return 0;
}

/* The statement starts with `word` and a space or its end. */
static bool sink_query_is(const dm_binlog_query *q, const char *word) {
  size_t n = strlen(word);
  return q->query.len >= n && strncasecmp(q->query.ptr, word, n) == 0 &&
         (q->query.len == n || q->query.ptr[n] == ' ' || q->query.ptr[n] == '\t');
}

/* Statements inside a transaction that change no table: the column names cached stay. */
static bool sink_query_keeps_columns(const dm_binlog_query *q) {
  return sink_query_is(q, "BEGIN") || sink_query_is(q, "XA START") ||
         sink_query_is(q, "XA BEGIN") || sink_query_is(q, "XA END") ||
         sink_query_is(q, "SAVEPOINT") || sink_query_is(q, "ROLLBACK");
}

/* One event. Where a group begins and ends is the SDK's tracker (dmhost/binlog_trx.h), the reading
 * of the relay and the sync: a group's lines are committed at its end, whatever the end is. The
 * rows of a group ending in ROLLBACK are kept, as the sync keeps them: MariaDB and MySQL log
 * BEGIN ... ROLLBACK only for a transaction that changed a non-transactional table, and those
 * changes stay on the source. `ROLLBACK TO sp` is a statement inside its transaction. */
static int sink_event(sink *s, const dm_binlog_format *fmt, const dm_binlog_event *in,
                      dm_error *err) {
  dm_binlog_event unz;
  const dm_binlog_event *ev = in;
  if (dm_binlog_is_compressed_event(in->header.type)) {
    if (dm_binlog_event_uncompress(fmt, in, &s->zbuf, &s->zcap, &unz, err) != 0)
      return -1;
    ev = &unz;
  }
  uint8_t type = ev->header.type;
  dm_binlog_gtid g;
  dm_binlog_query q;
  const dm_binlog_gtid *gp = NULL;
  const dm_binlog_query *qp = NULL;
  if (type == DM_BINLOG_GTID) {
    if (dm_binlog_decode_gtid(fmt, ev, &g, err) != 0)
      return -1;
    gp = &g;
  } else if (type == DM_BINLOG_QUERY) {
    if (dm_binlog_decode_query(fmt, ev, &q, err) != 0)
      return -1;
    qp = &q;
  }
  dm_binlog_trx_step step = dm_binlog_trx_feed(&s->trx, ev, gp, qp);
  if (step == DM_BINLOG_TRX_BEGIN || step == DM_BINLOG_TRX_INSIDE)
    s->in_txn = true;
  if (gp) {
    snprintf(s->gtid, sizeof s->gtid, "%" PRIu32 "-%" PRIu32 "-%" PRIu64, g.domain_id, g.server_id,
             g.seq_no);
    dm_mariadb_gtid_set_update(&s->gtids, g.domain_id, g.server_id, g.seq_no);
    sink_maps_clear(s);
  } else if (type == DM_BINLOG_TABLE_MAP) {
    if (sink_map_add(s, fmt, ev, err) != 0)
      return -1;
  } else if (dm_binlog_is_rows_event(type)) {
    /* rows read outside any group (a stream that began inside one) wait for the next end too */
    s->in_txn = true;
    if (sink_rows_event(s, fmt, ev, err) != 0)
      return -1;
  } else if (qp && (step == DM_BINLOG_TRX_STATEMENT || step == DM_BINLOG_TRX_INSIDE) &&
             !sink_query_keeps_columns(qp)) {
    sink_columns_ddl(s, qp->query.ptr, qp->query.len);
  }
  if (step != DM_BINLOG_TRX_OUTSIDE && dm_binlog_trx_boundary(step))
    return sink_txn_end(s, in, err);
  return 0;
}

static void sink_process(void *self, dm_result *result) {
  sink *s = self;
  dm_error e;
  memset(&e, 0, sizeof e);
  atomic_store(&s->started_ms, sink_now_ms());
  dm_binlog_trx_reset(&s->trx); /* the checkpoint is a boundary */
  s->in_txn = false;
  s->gtid[0] = '\0';
  s->pending_txns = 0;
  s->wait_failed = false;
  s->last_commit_ms = sink_now_ms();
  int rc = 0;
  if (dm_fs_mkdir_p(s->out_dir, dm_fs_dir_mode(s->file_mode)) != 0 ||
      (s->dir_fd = dm_fs_open_dir(s->out_dir)) < 0) {
    s->host->error_make(s->ctx, &e, DM_ERR_IO, strerror(errno),
                        SINK_WHO ": cannot create or open output-dir %s: %s", s->out_dir,
                        strerror(errno));
    rc = -1;
  }
  int have = rc == 0 ? sink_checkpoint_load(s, &e) : -1;
  if (have < 0 || (have == 0 && sink_start_position(s, &e) != 0) || sink_out_restore(s, &e) != 0 ||
      /* the first checkpoint at once: the task is no longer fresh, and its start is fixed */
      (have == 0 && sink_commit(s, true, &e) != 0)) {
    sink_out_free(s);
    sink_fail(result, &e);
    return;
  }
  pthread_mutex_lock(&s->lock);
  s->status_pos = s->checkpointed;
  pthread_mutex_unlock(&s->lock);
  char at[DM_POSITION_NAME_MAX + 32];
  s->host->logf(s->ctx, DM_LOG_INFO, SINK_WHO " %s: reading relay %s from %s, writing %s (%s)",
                SINK_VERSION_TEXT, s->relay_dir,
                dm_position_format(&s->checkpointed, at, sizeof at), s->out_dir,
                s->per_table ? "a file per table" : "changes.jsonl");

  dm_relay_log_options ro = {
      .wait = sink_wait, .wait_arg = s, .reader = s->reader, .file_mode = (unsigned)s->file_mode};
  dm_relay_log *r = NULL;
  if (dm_relay_log_open(s->relay_dir, &s->checkpointed, &ro, &r, &e) != 0) {
    sink_out_free(s);
    sink_fail(result, &e);
    return;
  }
  pthread_mutex_lock(&s->lock);
  s->relay = r;
  bool killed = atomic_load(&s->killed);
  pthread_mutex_unlock(&s->lock);
  if (killed)
    dm_relay_log_interrupt(r);

  dm_binlog_event ev;
  uint32_t since_look = 0;
  for (;;) {
    rc = dm_relay_log_next(r, &ev, &e);
    if (s->wait_failed) {
      e = s->wait_err;
      rc = -1;
    }
    if (rc < 0)
      break;
    if (s->reader_pending) {
      dm_error re;
      if (dm_relay_log_checkpoint(r, &s->checkpointed, &re) != 0)
        s->host->logf(s->ctx, DM_LOG_WARN, SINK_WHO ": the relay's purge may not keep our file: %s",
                      re.message);
      s->reader_pending = false;
    }
    if (rc == 0)
      break; /* the stop token, or kill */
    if (sink_event(s, dm_relay_log_format(r), &ev, &e) != 0) {
      rc = -1;
      break;
    }
    if (!s->in_txn)
      sink_boundary_after(s, &ev);
    if (++since_look >= 256 || !s->in_txn) {
      since_look = 0;
      if (s->host->stop_requested(s->ctx) || atomic_load(&s->killed))
        break;
    }
  }
  pthread_mutex_lock(&s->lock);
  s->relay = NULL;
  pthread_mutex_unlock(&s->lock);
  /* a stop keeps every whole transaction read; a kill keeps what is durable already */
  if (rc >= 0 && !atomic_load(&s->killed) && sink_commit(s, false, &e) != 0)
    rc = -1;
  if (rc >= 0 && s->reader_pending) {
    dm_error re;
    if (dm_relay_log_checkpoint(r, &s->checkpointed, &re) == 0)
      s->reader_pending = false;
  }
  dm_relay_log_close(r);
  sink_maps_clear(s);
  sink_out_free(s);
  sink_columns_free(s); /* a paused unit holds no connection; names are read again after it */
  if (rc < 0) {
    sink_fail(result, &e);
    return;
  }
  result->outcome = DM_OUTCOME_CANCELED; /* a sink never finishes */
}

/* ---- the other slots ---- */

static void sink_status(void *self, dm_status_sink *out) {
  sink *s = self;
  dm_position p;
  pthread_mutex_lock(&s->lock);
  p = s->status_pos;
  pthread_mutex_unlock(&s->lock);
  uint64_t lines = atomic_load(&s->lines);
  int64_t started = atomic_load(&s->started_ms);
  out->put_position(out, "checkpoint", &p);
  out->put_int(out, "lines", (int64_t)lines);
  out->put_int(out, "commits", (int64_t)atomic_load(&s->commits));
  out->put_int(out, "sinkVersion", JSON_SINK_VERSION);
  out->put_str(out, "outputDir", s->out_dir);
  out->put_str(out, "layout", s->per_table ? "per-table" : "stream");
  if (started > 0) {
    int64_t ms = sink_now_ms() - started;
    out->put_double(out, "linesPerSecond", ms > 0 ? (double)lines * 1000.0 / (double)ms : 0.0);
  }
}

static void sink_kill(void *self) {
  sink *s = self;
  pthread_mutex_lock(&s->lock);
  atomic_store(&s->killed, true);
  if (s->relay)
    dm_relay_log_interrupt(s->relay);
  pthread_mutex_unlock(&s->lock);
}

static void sink_close(void *self) {
  sink *s = self;
  sink_maps_clear(s);
  free(s->maps);
  sink_out_free(s);
  sink_columns_free(s);
  free(s->before);
  free(s->after);
  free(s->zbuf);
  pthread_mutex_destroy(&s->lock);
  free(s);
}

static const dm_unit_descriptor sink_unit = {
    DM_UNIT_DESCRIPTOR_HEADER,
    .kind = DM_UNIT_CUSTOM,
    .kind_name = "json-sink",
    .name = "dmhost-json-sink",
    .version = SINK_VERSION_TEXT,
    .ops =
        {
            .init = sink_init,
            .is_fresh_task = sink_is_fresh_task,
            .process = sink_process,
            .status = sink_status,
            .kill = sink_kill,
            .close = sink_close,
        },
    /* ABI 1.1: starts where the unit before it ended (else the task's meta, or its checkpoint);
     * gives no position (it never finishes); reads the relay, so the host waits for the relay to
     * have written up to that position before starting it */
    .handover = DM_UNIT_TAKES_POSITION | DM_UNIT_READS_RELAY,
};

DM_UNIT_EXPORT(sink_unit)

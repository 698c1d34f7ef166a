/*
 * The workers: one thread and one target connection each. For every batch a worker writes the
 * statements of its part (sync_batch_sql, so the text is made on as many cores as there are
 * workers) and runs them as one transaction that opens with the move of its own checkpoint row
 * (sync_checkpoint.c):
 *
 *   START TRANSACTION; UPDATE <checkpoint> ... '_worker_NNN'; <statements>; COMMIT
 *
 * sent in round trips of about chunk-bytes (several statements each). The coordinator hands a
 * batch to all workers at once and waits for all of them before it hands the next one, so a
 * batch is the unit the checkpoint rows count in. A small batch (`solo`) goes to worker 0 alone,
 * whose transaction moves every worker's row and the global one: one commit instead of one per
 * worker and one for the global row.
 *
 * With a fencing token the UPDATE is fenced and followed by its check (sync_checkpoint.c): a part
 * whose row a newer worker has raised fails in its first round trip, before any of its
 * statements, and the worker reports DM_ERR_FENCED after the rollback (never retried).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <dmhost/db.h>

#include "sync.h"

typedef struct sync_worker {
  struct sync_workers *ws;
  int id;
  pthread_t thread;
  MYSQL *conn;
  dm_buf sql;
  /* the job, under ws->lock */
  const sync_batch *batch;
  bool skip;
  bool has_job;
  int rc;
  dm_error err;
  unsigned
      server_errno; /* of the statement that failed (the ROLLBACK after it resets mysql_errno) */
} sync_worker;

struct sync_workers {
  sync_unit *u;
  int n;
  pthread_mutex_t lock;
  pthread_cond_t job_cv, done_cv;
  int pending; /* workers still applying the dispatched batch */
  int done_fd; /* eventfd, readable from the dispatched batch's end to the next dispatch (poll) */
  bool quit;
  sync_worker w[SYNC_MAX_WORKERS];
};

static int sync_worker_send(void *arg, dm_buf *chunk) {
  sync_worker *w = arg;
  sync_unit *u = w->ws->u;
  if (u->host->stop_requested(u->ctx)) {
    /* A pause or stop does not wait for a big part to finish: rolled back here, it is applied
     * again after the restart (the worker's checkpoint row did not move). */
    u->host->error_make(u->ctx, &w->err, DM_ERR_DB_QUERY, NULL,
                        "sync: worker %d stopped while applying its part of a batch", w->id);
    w->err.resumable = 1;
    dm_buf_reset(chunk);
    return -1;
  }
  int rc = sync_db_exec(u, w->conn, chunk->p, chunk->len, "sync: applying a batch failed", &w->err);
  if (rc < 0)
    w->server_errno = mysql_errno(w->conn);
  dm_buf_reset(chunk);
  return rc;
}

static int sync_worker_apply(sync_worker *w, const sync_batch *b) {
  sync_unit *u = w->ws->u;
  dm_buf *q = &w->sql;
  dm_buf_reset(q);
  /* a solo batch (worker 0 alone) moves every worker's row, and the global row, with its part */
  if (dm_buf_puts(q, "START TRANSACTION;") < 0 ||
      (b->solo ? sync_cp_solo_sql(u, w->conn, w->ws->n, &b->end, b->end_rows, q)
               : sync_cp_worker_sql(u, w->conn, w->id, &b->end, b->end_rows, q)) < 0)
    goto nomem;
  if (sync_batch_sql(u, b, w->id, q, u->cfg.chunk_bytes, sync_worker_send, w) < 0) {
    if (w->err.code == DM_ERR_OK)
      goto nomem;
    goto failed;
  }
  if (dm_buf_puts(q, "COMMIT") < 0)
    goto nomem;
  if (sync_worker_send(w, q) < 0)
    goto failed;
  return 0;
nomem:
  sync_nomem(u, &w->err);
failed:
  if (mysql_query(w->conn, "ROLLBACK") != 0) {
    /* the connection is gone: the server rolls the transaction back */
  }
  if (u->fence && w->server_errno == DM_DB_FENCE_ERRNO) {
    /* the first statements refused to move the worker's row: nothing of the part committed */
    char what[48];
    snprintf(what, sizeof what, "worker %d's row", w->id);
    return sync_cp_fence_failed(u, w->conn, what, &w->err);
  }
  if (w->err.code == DM_ERR_DB_QUERY && !w->err.resumable) {
    /* the target refused a change: it has diverged from the source (or the table differs) */
    char m[DM_ERROR_MESSAGE_MAX], cause[DM_ERROR_RAW_MAX];
    dm_strlcpy(m, w->err.message, sizeof m);
    dm_strlcpy(cause, w->err.raw_cause, sizeof cause);
    u->host->error_make(u->ctx, &w->err, DM_ERR_SYNC_APPLY, cause,
                        "%s (worker %d, batch ending at %s:%" PRIu64 ")", m, w->id, b->end.name,
                        b->end.pos);
  }
  return -1;
}

/* A deadlock or lock wait timeout between two workers (or with another client) rolled the part
 * back (InnoDB rolls back the whole transaction on a deadlock; on a lock wait timeout the ROLLBACK
 * above does): it runs again, a few times, before the batch fails. */
static int sync_worker_apply_retry(sync_worker *w, const sync_batch *b) {
  sync_unit *u = w->ws->u;
  for (int attempt = 0;; attempt++) {
    memset(&w->err, 0, sizeof w->err);
    w->server_errno = 0;
    int64_t t0 = dm_clock_ns();
    if (sync_worker_apply(w, b) == 0) {
      sync_metrics_txn(u, (double)(dm_clock_ns() - t0) / 1e9);
      return 0;
    }
    unsigned code = w->server_errno;
    if (attempt >= 8 || !dm_db_errno_rolled_back(code) || u->host->stop_requested(u->ctx))
      return -1;
    u->host->logf(u->ctx, DM_LOG_INFO, "sync: worker %d: %s; applying its part again", w->id,
                  w->err.raw_cause);
    u->host->wait_stop(u->ctx, 5u << attempt);
  }
}

static void *sync_worker_main(void *arg) {
  sync_worker *w = arg;
  struct sync_workers *ws = w->ws;
  pthread_mutex_lock(&ws->lock);
  for (;;) {
    while (!w->has_job && !ws->quit)
      pthread_cond_wait(&ws->job_cv, &ws->lock);
    if (ws->quit && !w->has_job)
      break;
    const sync_batch *b = w->batch;
    bool skip = w->skip;
    pthread_mutex_unlock(&ws->lock);
    int rc = 0;
    memset(&w->err, 0, sizeof w->err);
    if (!skip)
      rc = sync_worker_apply_retry(w, b);
    pthread_mutex_lock(&ws->lock);
    w->rc = rc;
    w->has_job = false;
    if (--ws->pending == 0) {
      pthread_cond_broadcast(&ws->done_cv);
      uint64_t one = 1;
      ssize_t k = write(ws->done_fd, &one, sizeof one); /* fails on an overflow only */
      (void)k;
    }
  }
  pthread_mutex_unlock(&ws->lock);
  return NULL;
}

int sync_workers_start(sync_unit *u, int n, sync_workers **out, dm_error *err) {
  sync_workers *ws = calloc(1, sizeof *ws);
  if (!ws) {
    sync_nomem(u, err);
    return -1;
  }
  ws->u = u;
  pthread_mutex_init(&ws->lock, NULL);
  pthread_cond_init(&ws->job_cv, NULL);
  pthread_cond_init(&ws->done_cv, NULL);
  ws->done_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (ws->done_fd < 0) {
    u->host->error_make(u->ctx, err, DM_ERR_INTERNAL, strerror(errno),
                        "sync: cannot create the workers' event descriptor");
    goto fail;
  }
  for (int i = 0; i < n; i++) {
    sync_worker *w = &ws->w[i];
    w->ws = ws;
    w->id = i;
    if (!(w->conn = sync_db_connect_target(u, err)))
      goto fail;
    if (pthread_create(&w->thread, NULL, sync_worker_main, w) != 0) {
      sync_db_close(u, w->conn);
      w->conn = NULL;
      u->host->error_make(u->ctx, err, DM_ERR_INTERNAL, NULL, "sync: cannot start a worker thread");
      goto fail;
    }
    ws->n = i + 1;
  }
  *out = ws;
  return 0;
fail:
  sync_workers_stop(ws);
  return -1;
}

void sync_workers_dispatch(sync_workers *ws, const sync_batch *b, const bool *skip) {
  pthread_mutex_lock(&ws->lock);
  uint64_t done;
  ssize_t k = read(ws->done_fd, &done, sizeof done); /* EAGAIN before the first batch */
  (void)k;
  int n = b->solo ? 1 : ws->n; /* a solo batch: worker 0 alone, the others stay idle */
  for (int i = 0; i < n; i++) {
    ws->w[i].batch = b;
    ws->w[i].skip = skip && skip[i];
    ws->w[i].has_job = true;
    ws->w[i].rc = 0;
  }
  for (int i = n; i < ws->n; i++)
    ws->w[i].rc = 0;
  ws->pending = n;
  pthread_cond_broadcast(&ws->job_cv);
  pthread_mutex_unlock(&ws->lock);
}

int sync_workers_done_fd(const sync_workers *ws) {
  return ws->done_fd;
}

bool sync_workers_busy(sync_workers *ws) {
  pthread_mutex_lock(&ws->lock);
  bool busy = ws->pending > 0;
  pthread_mutex_unlock(&ws->lock);
  return busy;
}

int sync_workers_wait(sync_workers *ws, dm_error *err) {
  pthread_mutex_lock(&ws->lock);
  while (ws->pending > 0)
    pthread_cond_wait(&ws->done_cv, &ws->lock);
  int rc = 0;
  for (int i = 0; i < ws->n && rc == 0; i++)
    if (ws->w[i].rc != 0) {
      *err = ws->w[i].err;
      rc = -1;
    }
  pthread_mutex_unlock(&ws->lock);
  return rc;
}

void sync_workers_stop(sync_workers *ws) {
  if (!ws)
    return;
  pthread_mutex_lock(&ws->lock);
  while (ws->pending > 0)
    pthread_cond_wait(&ws->done_cv, &ws->lock);
  ws->quit = true;
  pthread_cond_broadcast(&ws->job_cv);
  pthread_mutex_unlock(&ws->lock);
  for (int i = 0; i < ws->n; i++) {
    pthread_join(ws->w[i].thread, NULL);
    sync_db_close(ws->u, ws->w[i].conn);
    dm_buf_free(&ws->w[i].sql);
  }
  if (ws->done_fd >= 0)
    close(ws->done_fd);
  pthread_cond_destroy(&ws->job_cv);
  pthread_cond_destroy(&ws->done_cv);
  pthread_mutex_destroy(&ws->lock);
  free(ws);
}

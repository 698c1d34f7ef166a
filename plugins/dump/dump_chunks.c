/*
 * Chunk jobs and their queue. A table with an integer chunk key is cut into ranges of about
 * chunk-rows rows, estimated from MIN/MAX of the key (read in the snapshot) and the table's row
 * estimate, so the workers share a big table; any other table is one chunk. The planner (worker 0,
 * before it dumps) queues jobs while the other workers already take them.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dump_internal.h"

/* Beyond this many chunks per table the per-chunk overhead (one query, one file) wins nothing. */
#define DUMP_CHUNKS_MAX 100000
/* How often a waiting worker looks at the stop token, which does not signal our condition. */
#define DUMP_CHUNKS_POLL_MS 100

void dump_queue_init(dump_queue *q) {
  memset(q, 0, sizeof *q);
  pthread_mutex_init(&q->lock, NULL);
  dm_cond_init_monotonic(&q->cond);
}

void dump_chunk_free(dump_chunk *c) {
  if (!c)
    return;
  free(c->where);
  free(c);
}

void dump_queue_destroy(dump_queue *q) {
  for (dump_chunk *c = q->head, *next; c; c = next) {
    next = c->next;
    dump_chunk_free(c);
  }
  q->head = q->tail = NULL;
  pthread_cond_destroy(&q->cond);
  pthread_mutex_destroy(&q->lock);
}

void dump_queue_push(dump_queue *q, dump_chunk *c) {
  c->next = NULL;
  pthread_mutex_lock(&q->lock);
  if (q->tail)
    q->tail->next = c;
  else
    q->head = c;
  q->tail = c;
  pthread_cond_signal(&q->cond);
  pthread_mutex_unlock(&q->lock);
}

void dump_queue_close(dump_queue *q) {
  pthread_mutex_lock(&q->lock);
  q->closed = true;
  pthread_cond_broadcast(&q->cond);
  pthread_mutex_unlock(&q->lock);
}

void dump_queue_wake(dump_queue *q) {
  pthread_mutex_lock(&q->lock);
  pthread_cond_broadcast(&q->cond);
  pthread_mutex_unlock(&q->lock);
}

dump_chunk *dump_queue_pop(dump_unit *u) {
  dump_queue *q = &u->queue;
  dump_chunk *c = NULL;
  pthread_mutex_lock(&q->lock);
  while (!dump_should_stop(u)) {
    if (q->head) {
      c = q->head;
      q->head = c->next;
      if (!q->head)
        q->tail = NULL;
      break;
    }
    if (q->closed)
      break;
    struct timespec ts = dm_clock_deadline(DUMP_CHUNKS_POLL_MS);
    pthread_cond_timedwait(&q->cond, &q->lock, &ts);
  }
  pthread_mutex_unlock(&q->lock);
  return c;
}

static int dump_chunks_add(dump_unit *u, dump_table *t, char *where, dm_error *err) {
  dump_chunk *c = where ? calloc(1, sizeof *c) : NULL;
  if (!c) {
    free(where);
    u->host->error_make(u->ctx, err, DM_ERR_NO_MEMORY, NULL, "dump: no memory for a chunk of %s",
                        t->qname);
    return -1;
  }
  c->table = t;
  c->where = where;
  t->chunks++;
  atomic_fetch_add(&t->pending, 1);
  dump_queue_push(&u->queue, c);
  return 0;
}

static void dump_chunks_print(char *buf, size_t len, __int128 v, bool is_unsigned) {
  if (is_unsigned)
    snprintf(buf, len, "%" PRIu64, (uint64_t)v);
  else
    snprintf(buf, len, "%" PRId64, (int64_t)v);
}

static __int128 dump_chunks_parse(const char *s, bool is_unsigned) {
  return is_unsigned ? (__int128)strtoull(s, NULL, 10) : (__int128)strtoll(s, NULL, 10);
}

/* Queues the ranges [min, b1), [b1, b2), ..., [b_last, max] of the key. */
static int dump_chunks_ranges(dump_unit *u, dump_table *t, __int128 min, __int128 max,
                              dm_error *err) {
  __int128 range = max - min + 1;
  __int128 est = t->est_rows;
  /* TABLE_ROWS is an estimate (0 for a table InnoDB has not analysed yet); a unique integer key
   * cannot hold more rows than its range. */
  if (est <= 0 || est > range)
    est = range;
  __int128 n = (est + u->chunk_rows - 1) / u->chunk_rows;
  if (n > DUMP_CHUNKS_MAX)
    n = DUMP_CHUNKS_MAX;
  if (n <= 1)
    return dump_chunks_add(u, t, strdup(""), err);
  __int128 step = (range + n - 1) / n;
  char lo[32], hi[32];
  for (__int128 b = min; b <= max; b += step) {
    dump_chunks_print(lo, sizeof lo, b, t->key_unsigned);
    char *where;
    if (b + step > max)
      where = b == min ? strdup("") : dump_strfmt(" WHERE %s >= %s", t->key, lo);
    else {
      dump_chunks_print(hi, sizeof hi, b + step, t->key_unsigned);
      where = b == min ? dump_strfmt(" WHERE %s < %s", t->key, hi)
                       : dump_strfmt(" WHERE %s >= %s AND %s < %s", t->key, lo, t->key, hi);
    }
    if (dump_chunks_add(u, t, where, err) != 0)
      return -1;
  }
  return 0;
}

int dump_chunks_plan(dump_unit *u, dump_conn *c, dump_table *t, dm_error *err) {
  /* The planner's own hold on the table: it completes only after every chunk is queued and done. */
  atomic_store(&t->pending, 1);
  int rc = 0;
  if (!t->key || t->n_cols == 0) {
    rc = dump_chunks_add(u, t, strdup(""), err);
  } else {
    char *sql = dump_strfmt("SELECT MIN(%s), MAX(%s) FROM %s", t->key, t->key, t->qname);
    MYSQL_RES *res = NULL;
    if (!sql) {
      u->host->error_make(u->ctx, err, DM_ERR_NO_MEMORY, NULL, "dump: no memory");
      rc = -1;
    } else if ((rc = dump_conn_query(u, c, sql, &res, err)) == 0) {
      MYSQL_ROW row = mysql_fetch_row(res);
      if (row && row[0] && row[1])
        rc = dump_chunks_ranges(u, t, dump_chunks_parse(row[0], t->key_unsigned),
                                dump_chunks_parse(row[1], t->key_unsigned), err);
      else /* empty: one chunk writes no file */
        rc = dump_chunks_add(u, t, strdup(""), err);
      mysql_free_result(res);
    }
    free(sql);
  }
  if (rc == 0)
    u->host->logf(u->ctx, DM_LOG_DEBUG, "dump: %s in %d chunk(s), about %" PRId64 " rows", t->qname,
                  t->chunks, t->est_rows);
  dump_table_chunk_done(u, t);
  return rc;
}

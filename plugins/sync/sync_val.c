/*
 * The continuous validator: settings, the hand-off from the coordinator, the checking thread
 * (sync_val.h, docs/validation.md).
 *
 * Why after the commit: the coordinator feeds a batch once sync_workers_wait returned 0 for it, so
 * what the validator probes is on the target already; a later change of the same row replaces the
 * pending one (by table and key), so a row the sync moves on is never judged by an old image.
 * A probe that fails is not an error yet: the row is checked again every validate-interval and
 * only one that still fails after row-error-delay becomes an error row.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sync.h"
#include "sync_val.h"

#define VAL_ROW_MAX (1u << 20) /* a row literal longer than this is not validated (bounded) */
#define VAL_FEED_WAIT_MS 100   /* the longest a batch's feed waits for room */
/* DM's maxAccumulatedRow: more rows than this waiting for their first probe are probed before
 * their validate-interval (the oldest first), so the rows held stay few whatever the rate */
#define VAL_ACCU_ROWS 100000
#define VAL_DEFER_LAG_S 10 /* val_defer: a sync this far behind has a backlog */

/* ---- the pending set ---- */

static uint64_t val_hash(uint32_t table, const char *key, size_t len) {
  return dm_hash64(key, len) ^ ((uint64_t)table * 0x9e3779b97f4a7c15ull);
}

static void list_unlink(sync_val *v, sync_val_row *r) {
  sync_val_row **head = r->retry ? &v->retry_head : &v->fresh_head;
  sync_val_row **tail = r->retry ? &v->retry_tail : &v->fresh_tail;
  if (r->prev)
    r->prev->next = r->next;
  else if (*head == r)
    *head = r->next;
  if (r->next)
    r->next->prev = r->prev;
  else if (*tail == r)
    *tail = r->prev;
  else
    return; /* in no list (being checked) */
  r->prev = r->next = NULL;
  if (!r->retry)
    v->n_fresh--;
}

static void list_append(sync_val *v, sync_val_row *r, bool retry) {
  r->retry = retry;
  sync_val_row **head = retry ? &v->retry_head : &v->fresh_head;
  sync_val_row **tail = retry ? &v->retry_tail : &v->fresh_tail;
  if (!retry)
    v->n_fresh++;
  r->prev = *tail;
  r->next = NULL;
  if (*tail)
    (*tail)->next = r;
  else
    *head = r;
  *tail = r;
}

static size_t row_bytes(const sync_val_row *r) {
  return sizeof *r + r->key_len + r->row_len + 2;
}

/* Out of the hash (and the lists, unless it is being checked: the checker frees it then). */
static void val_forget(sync_val *v, sync_val_row *r) {
  sync_val_row **p = &v->buckets[r->hash & (v->n_buckets - 1)];
  while (*p && *p != r)
    p = &(*p)->chain;
  if (*p)
    *p = r->chain;
  v->n_rows--;
  v->pending[r->kind]--;
  v->bytes -= row_bytes(r);
  if (r->checking) {
    r->superseded = true;
    return;
  }
  list_unlink(v, r);
  free(r);
}

static sync_val_row *val_find(sync_val *v, uint32_t table, const char *key, uint32_t len,
                              uint64_t h) {
  for (sync_val_row *r = v->buckets[h & (v->n_buckets - 1)]; r; r = r->chain)
    if (r->hash == h && r->table == table && r->key_len == len && !memcmp(r->data, key, len))
      return r;
  return NULL;
}

static int val_grow(sync_val *v) {
  uint32_t n = v->n_buckets ? v->n_buckets * 2 : 1024;
  sync_val_row **b = calloc(n, sizeof *b);
  if (!b)
    return -1;
  for (uint32_t i = 0; i < v->n_buckets; i++)
    for (sync_val_row *r = v->buckets[i], *nx; r; r = nx) {
      nx = r->chain;
      r->chain = b[r->hash & (n - 1)];
      b[r->hash & (n - 1)] = r;
    }
  free(v->buckets);
  v->buckets = b;
  v->n_buckets = n;
  return 0;
}

/* ---- tables ---- */

static uint64_t val_table_sig(const char *sdb, const char *sname, const char *cols) {
  return dm_hash64(sdb, strlen(sdb)) * 31 ^ dm_hash64(sname, strlen(sname)) ^
         dm_hash64(cols, strlen(cols)) * 7;
}

int sync_val_table_add(sync_val *v, const char *sdb, const char *sname, const char *tdb,
                       const char *tname, const char *cols, const char *keycols, bool supported,
                       uint32_t *out) {
  uint64_t sig = val_table_sig(sdb, sname, cols);
  for (uint32_t i = 0; i < v->n_tables; i++)
    if (v->tables[i]->sig == sig && !strcmp(v->tables[i]->sdb, sdb) &&
        !strcmp(v->tables[i]->sname, sname) && !strcmp(v->tables[i]->cols.p, cols)) {
      *out = i;
      return 0;
    }
  if (v->n_tables == v->cap_tables) {
    uint32_t n = v->cap_tables ? v->cap_tables * 2 : 16;
    sync_val_table **p = realloc(v->tables, n * sizeof *p);
    if (!p)
      return -1;
    v->tables = p;
    v->cap_tables = n;
  }
  sync_val_table *x = calloc(1, sizeof *x);
  if (!x)
    return -1;
  dm_strlcpy(x->sdb, sdb, sizeof x->sdb);
  dm_strlcpy(x->sname, sname, sizeof x->sname);
  dm_strlcpy(x->tdb, tdb, sizeof x->tdb);
  dm_strlcpy(x->tname, tname, sizeof x->tname);
  x->sig = sig;
  x->supported = supported;
  sync_sql_qualified(&x->qname, tdb, tname);
  dm_buf_puts(&x->cols, cols);
  dm_buf_puts(&x->keycols, keycols);
  if (x->qname.oom || x->cols.oom || x->keycols.oom || !x->keycols.len || !x->cols.len) {
    dm_buf_free(&x->qname);
    dm_buf_free(&x->cols);
    dm_buf_free(&x->keycols);
    free(x);
    return -1;
  }
  *out = v->n_tables;
  v->tables[v->n_tables++] = x;
  return 0;
}

/* The validator's table of a sync table (as its columns stand now); lock held. */
static int val_table_of(sync_val *v, const sync_table *t, uint32_t *out) {
  if (v->last_t == t && v->last_sig == t->map_sig && v->last_idx < v->n_tables &&
      !strcmp(v->tables[v->last_idx]->cols.p, t->cols.p)) {
    *out = v->last_idx;
    return 0;
  }
  dm_buf kc = {0};
  if (t->key.n > 1)
    dm_buf_putc(&kc, '(');
  for (int j = 0; j < t->key.n; j++) {
    if (j)
      dm_buf_putc(&kc, ',');
    dm_buf_puts(&kc, t->col_names[t->key.cols[j]]);
  }
  if (t->key.n > 1)
    dm_buf_putc(&kc, ')');
  uint32_t before = v->n_tables;
  /* DM's validator takes the primary key, else the first unique key whose columns are all NOT
   * NULL (sqlmodel's UniqueNotNullIdx): the sync's t->key, the same choice */
  bool keyed = t->key_kind != SYNC_KEY_NONE;
  int rc =
      !keyed ? sync_val_table_add(v, t->db, t->name, t->tdb, t->tname, t->cols.p ? t->cols.p : "()",
                                  "()", false, out)
      : kc.oom || !kc.len || !t->cols.len
          ? -1
          : sync_val_table_add(v, t->db, t->name, t->tdb, t->tname, t->cols.p, kc.p, true, out);
  dm_buf_free(&kc);
  if (rc == 0 && v->n_tables > before && !keyed)
    v->u->host->logf(v->u->ctx, DM_LOG_WARN,
                     "validator: stop validating table `%s`.`%s`: %s (its row changes are skipped; "
                     "add a primary key or a NOT NULL unique key to validate it)",
                     t->db, t->name, SYNC_VAL_NO_KEY);
  if (rc == 0) {
    v->last_t = t;
    v->last_sig = t->map_sig;
    v->last_idx = *out;
  }
  return rc;
}

/* ---- metrics ---- */

static void val_metrics_init(sync_val *v) {
  sync_unit *u = v->u;
  if (v->m_errors)
    return;
  static const struct {
    const char *name, *help;
  } m[8] = {
      {"dm_validator_validator_error_count", "total number of validator errors"},
      {"dm_validator_validator_binlog_pos", "binlog position of the validator"},
      {"dm_validator_validator_binlog_file", "current binlog file index of the validator"},
      {"dm_validator_validator_logpos_latency", "the log pos latency between validator and syncer"},
      {"dm_validator_validator_logfile_latency",
       "the log file latency between validator and syncer"},
      {"dmhost_validator_checked_rows", "row probes that settled a row, in this run"},
      {"dmhost_validator_pending_rows", "rows fed and not settled yet"},
      {"dmhost_validator_skipped_rows", "row changes left unvalidated, in this run"},
  };
  dm_metric **out[8] = {&v->m_errors,   &v->m_pos,     &v->m_file,    &v->m_pos_lat,
                        &v->m_file_lat, &v->m_checked, &v->m_pending, &v->m_skipped};
  for (int i = 0; i < 8; i++)
    *out[i] = dm_host_metric_publish(u->host, u->ctx, m[i].name, DM_METRIC_GAUGE, m[i].help, NULL,
                                     0, NULL, 0);
}

/* The checking's counts (v->lock held): after each fed batch and each probe statement. */
static void val_metrics_counts(sync_val *v) {
  sync_unit *u = v->u;
  dm_host_metric_set(u->host, u->ctx, v->m_checked, NULL, (double)v->checked);
  dm_host_metric_set(u->host, u->ctx, v->m_pending, NULL, (double)v->n_rows);
  dm_host_metric_set(u->host, u->ctx, v->m_skipped, NULL, (double)v->skipped);
}

/* The validator's position against the sync's (fed right after each commit: behind only by the
 * rows it dropped for room, which its skipped count says). v->lock held; u->lock is taken inside
 * it, never the other way round. */
static void val_metrics_pos(sync_val *v) {
  sync_unit *u = v->u;
  dm_position synced;
  pthread_mutex_lock(&u->lock);
  synced = u->synced;
  pthread_mutex_unlock(&u->lock);
  dm_host_metric_set(u->host, u->ctx, v->m_pos, NULL, (double)v->pos.pos);
  dm_host_metric_set(u->host, u->ctx, v->m_file, NULL, (double)dm_binlog_file_index(v->pos.name));
  double fl = (double)dm_binlog_file_index(synced.name) - (double)dm_binlog_file_index(v->pos.name);
  dm_host_metric_set(u->host, u->ctx, v->m_file_lat, NULL, fl > 0 ? fl : 0);
  double pl = fl == 0 ? (double)synced.pos - (double)v->pos.pos : 0;
  dm_host_metric_set(u->host, u->ctx, v->m_pos_lat, NULL, pl > 0 ? pl : 0);
  val_metrics_counts(v);
}

/* ---- feeding (the coordinator's thread) ---- */

int sync_val_add_locked(sync_val *v, uint32_t table, uint8_t kind, const char *key, uint32_t klen,
                        const char *row, uint32_t rlen) {
  uint64_t h = val_hash(table, key, klen);
  if (v->n_rows >= v->n_buckets && val_grow(v) < 0)
    return -1;
  sync_val_row *old = val_find(v, table, key, klen, h);
  if (old)
    val_forget(v, old); /* the newer change is what the target must show */
  sync_val_row *r = malloc(sizeof *r + klen + rlen + 2);
  if (!r)
    return -1;
  memset(r, 0, sizeof *r);
  r->hash = h;
  r->table = table;
  r->kind = kind;
  r->key_len = klen;
  r->row_len = rlen;
  /* DM's validate-interval: a row is first probed after it, so a row the source changes again
   * meanwhile is probed once, in its last image (the one entry per key above) */
  r->due_ns = dm_clock_ns() + v->cfg.validate_ms * 1000000;
  memcpy(r->data, key, klen);
  r->data[klen] = '\0';
  if (rlen)
    memcpy(r->data + klen + 1, row, rlen);
  r->data[klen + 1 + rlen] = '\0';
  r->chain = v->buckets[h & (v->n_buckets - 1)];
  v->buckets[h & (v->n_buckets - 1)] = r;
  list_append(v, r, false);
  v->n_rows++;
  v->pending[kind]++;
  v->bytes += row_bytes(r);
  return 0;
}

bool sync_val_wants_keys(sync_val *v) {
  return v && atomic_load_explicit(&v->keys, memory_order_relaxed);
}

static void val_feed_row(sync_val *v, uint32_t ti, uint8_t kind, const char *key, uint32_t klen,
                         const char *row, uint32_t rlen, int64_t deadline);

bool sync_val_catch_up_wanted(sync_val *v) {
  return v && atomic_load_explicit(&v->catch_up, memory_order_relaxed);
}

void sync_val_feed(sync_val *v, const sync_batch *b) {
  if (!v)
    return;
  pthread_mutex_lock(&v->lock);
  /* a catch-up to come feeds these rows (when they lie after the start-time's position) */
  if (!v->wish || !v->thread_on || atomic_load(&v->catch_up)) {
    pthread_mutex_unlock(&v->lock);
    return;
  }
  if (v->has_from) {
    if (dm_position_compare_file(&b->end, &v->from) <= 0) {
      pthread_mutex_unlock(&v->lock); /* before the start-time's transaction: not validated */
      return;
    }
    v->has_from = false; /* a batch across it is fed whole: a few rows before it checked too */
  }
  int64_t deadline = dm_clock_ns() + (int64_t)VAL_FEED_WAIT_MS * 1000000;
  for (uint32_t i = 0; i < b->n_recs; i++) {
    const sync_rec *r = &b->recs[i];
    if (r->dead)
      continue;
    uint8_t kind = r->kind == SYNC_REC_INSERT ? 0 : r->kind == SYNC_REC_DELETE ? 2 : 1;
    /* the probe key: a compactable table's after its table-id prefix (sync_pk_key); an in-order
     * one's is the row's before the change for a delete, after it for the others (vkey_*) */
    const char *key = b->arena.p + r->key_off;
    uint32_t klen = r->key_len;
    if (r->t->compactable) {
      key += 5;
      klen = klen > 5 ? klen - 5 : 0;
    } else if (kind != 2) {
      if (kind == 1 && klen && r->vkey_len &&
          (klen != r->vkey_len || memcmp(key, b->arena.p + r->vkey_off, klen) != 0)) {
        /* the key changed: DM's SplitUpdate, the old row deleted and the new one inserted */
        uint32_t ti;
        v->processed[2]++;
        if (val_table_of(v, r->t, &ti) < 0 || !v->tables[ti]->supported)
          v->skipped++;
        else
          val_feed_row(v, ti, 2, key, klen, "", 0, deadline);
        kind = 0;
      }
      key = b->arena.p + r->vkey_off;
      klen = r->vkey_len;
    }
    v->processed[kind]++;
    uint32_t ti;
    if (val_table_of(v, r->t, &ti) < 0 || !v->tables[ti]->supported || !klen ||
        r->row_len > VAL_ROW_MAX) {
      v->skipped++;
      continue;
    }
    val_feed_row(v, ti, kind, key, klen, b->arena.p + r->row_off, kind == 2 ? 0 : r->row_len,
                 deadline);
  }
  v->pos = b->end;
  v->has_pos = true;
  if (v->has_cutover && dm_position_reached(&v->pos, &v->cutover)) {
    v->has_cutover = false; /* DM clears it once reached */
    v->flush_now = true;
  }
  val_metrics_pos(v);
  pthread_cond_broadcast(&v->cond);
  pthread_mutex_unlock(&v->lock);
}

/* One row change into the pending set (lock held), bounded: it waits until deadline for room. */
static void val_feed_row(sync_val *v, uint32_t ti, uint8_t kind, const char *key, uint32_t klen,
                         const char *row, uint32_t rlen, int64_t deadline) {
  size_t need = sizeof(sync_val_row) + klen + rlen + 2;
  /* bounded by bytes: wait a little for the checker, then fall behind (counted, logged) */
  while ((v->bytes + need > (uint64_t)v->cfg.max_bytes || v->n_rows >= v->cfg.max_rows) &&
         dm_clock_ns() < deadline) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts); /* v->cond's clock */
    dm_timespec_add_ms(&ts, 10);
    pthread_cond_broadcast(&v->cond);
    pthread_cond_timedwait(&v->cond, &v->lock, &ts);
  }
  if (v->bytes + need > (uint64_t)v->cfg.max_bytes || v->n_rows >= v->cfg.max_rows ||
      sync_val_add_locked(v, ti, kind, key, klen, row, rlen) < 0) {
    /* an older image of this row must not be judged against the newer row: it goes too */
    uint64_t h = val_hash(ti, key, klen);
    sync_val_row *old = val_find(v, ti, key, klen, h);
    if (old)
      val_forget(v, old);
    if (v->skipped++ == 0)
      v->u->host->logf(v->u->ctx, DM_LOG_WARN,
                       "validator: the pending rows reached max-pending-row-size (%" PRId64
                       " bytes) or max-pending-row-count (%" PRId64
                       "): row changes are left unvalidated until there is room",
                       v->cfg.max_bytes, v->cfg.max_rows);
  }
}

/* A DDL on a source table (sync_ddl_apply.c, after the rows before it were fed): its pending rows
 * were fed with the table as it was, and a TRUNCATE, DROP or ALTER makes the target's rows differ
 * from them (gone, or other columns) without any error of the sync: they would become false error
 * rows after row-error-delay. They are dropped, counted as skipped; a row being probed now is
 * superseded (its answer is thrown away). table NULL: every table of the schema (DROP DATABASE). */
static void val_ddl_drop(sync_val *v, const char *schema, const char *table) {
  pthread_mutex_lock(&v->lock);
  uint64_t dropped = 0;
  for (uint32_t i = 0; i < v->n_buckets; i++)
    for (sync_val_row *r = v->buckets[i], *nx; r; r = nx) {
      nx = r->chain;
      const sync_val_table *t = v->tables[r->table];
      if (strcmp(t->sdb, schema) != 0 || (table && strcmp(t->sname, table) != 0))
        continue;
      val_forget(v, r);
      dropped++;
    }
  v->skipped += dropped;
  pthread_mutex_unlock(&v->lock);
  if (dropped)
    v->u->host->logf(v->u->ctx, DM_LOG_INFO,
                     "validator: a DDL on `%s`%s%s%s: its %" PRIu64
                     " pending rows are left unvalidated (skipped)",
                     schema, table ? ".`" : "", table ? table : "", table ? "`" : "", dropped);
}

void sync_val_ddl(sync_val *v, const sync_ddl_stmt *s) {
  if (!v || (s->kind != SYNC_DDL_DROP_DATABASE && s->kind != SYNC_DDL_DROP_TABLE &&
             s->kind != SYNC_DDL_TRUNCATE_TABLE && s->kind != SYNC_DDL_ALTER_TABLE &&
             s->kind != SYNC_DDL_RENAME_TABLE))
    return;
  val_ddl_drop(v, s->subject.schema, s->subject.table[0] ? s->subject.table : NULL);
  if (s->has_other)
    val_ddl_drop(v, s->other.schema, s->other.table[0] ? s->other.table : NULL);
}

/* ---- checking (the validator's thread) ---- */

/* Whether fresh rows wait (lock held): the sync has a backlog, i.e. the batch it applies began
 * more than VAL_DEFER_LAG_S before now on the source's clock. Probes are reads of the target,
 * which the sync's apply shares: on a small machine they took 22% (fast) and 46% (full) of the
 * sync's rows/s while it worked through a backlog (bench/README.md, "validator"). The rows wait,
 * newer changes of a row replacing older ones (probed once), until the sync is caught up or the
 * pending set is half full (its bound, which holds the memory). A sync that keeps up applies
 * batches a few milliseconds old, and one with nothing to apply none: its rows are probed as
 * before, whatever else (filtered) it reads. */
static bool val_defer(sync_val *v) {
  sync_unit *u = v->u;
  uint32_t ts = atomic_load(&u->apply_ts);
  bool lag = ts && (int64_t)time(NULL) - (int64_t)ts > VAL_DEFER_LAG_S;
  if (lag != v->deferring) {
    v->deferring = lag;
    if (lag)
      u->host->logf(u->ctx, DM_LOG_INFO,
                    "validator: the sync applies changes more than %d s old: new rows are checked "
                    "once it has caught up (or the pending rows are half their bound)",
                    VAL_DEFER_LAG_S);
    else
      u->host->logf(u->ctx, DM_LOG_INFO, "validator: the sync has caught up: new rows are checked");
  }
  return lag;
}

/* Takes up to batch rows that are due (fresh first) and worker w's, marks them being checked.
 * A row's worker is its (table, key) hash's (the high half: the buckets use the low bits), so a
 * newer change of a row goes to the worker that checked the older one, as DM's dispatch. */
static int val_take(sync_val *v, sync_val_row **out, int max, int64_t now, int w) {
  int n = 0;
  uint64_t nw = v->n_threads > 1 ? (uint64_t)v->n_threads : 1;
  /* fresh rows wait validate-interval, unless too many wait (DM's maxAccumulatedRow) or the
   * pending set is half full: the feed must never wait for rows held back here. While the sync
   * has a backlog they wait for it (val_defer), up to half full */
  bool half =
      v->bytes * 2 >= (uint64_t)v->cfg.max_bytes || (int64_t)v->n_rows * 2 >= v->cfg.max_rows;
  int64_t early = (int64_t)v->n_fresh - VAL_ACCU_ROWS;
  if (half)
    early = v->n_fresh;
  bool hold = !half && val_defer(v);
  for (int pass = hold ? 1 : 0; pass < 2 && n < max; pass++) {
    sync_val_row *r = pass ? v->retry_head : v->fresh_head;
    for (int64_t at = 0; r && n < max && (r->due_ns <= now || (!pass && at < early)); at++) {
      sync_val_row *nx = r->next;
      if ((r->hash >> 32) % nw == (uint64_t)w) {
        list_unlink(v, r);
        r->checking = true;
        out[n++] = r;
      }
      r = nx;
    }
  }
  return n;
}

/* DM's batched probe of the taken rows (sync_val_probe.c): the ones it settles are done; the
 * others are moved to rows[0..return) for the point probes, which decide them. -1: the connection
 * failed (rows untouched). Lock held on entry and on return. */
static int val_batch(sync_val *v, MYSQL *c, sync_val_row **rows, int n, dm_buf *q) {
  if (n < 2)
    return n; /* one point probe costs as much */
  uint8_t *st = calloc((size_t)n, 1);
  if (!st || sync_val_batch_sql(v, rows, n, q) < 0) {
    free(st);
    return n;
  }
  pthread_mutex_unlock(&v->lock);
  unsigned code;
  int rc = sync_val_batch_query(c, q, n, st, &code);
  pthread_mutex_lock(&v->lock);
  if (rc != 0) {
    free(st);
    return rc < 0 ? -1 : n; /* refused: the point probes get the server's word and report it */
  }
  int m = 0;
  for (int i = 0; i < n; i++) {
    sync_val_row *r = rows[i];
    bool ok = r->kind == 2 ? !(st[i] & SYNC_VAL_FOUND)
                           : (st[i] & SYNC_VAL_FOUND) &&
                                 (v->cfg.mode == SYNC_VAL_FAST || (st[i] & SYNC_VAL_SAME));
    if (!ok && !r->superseded) {
      rows[m++] = r;
      continue;
    }
    r->checking = false;
    if (r->superseded) {
      free(r);
      continue;
    }
    v->checked++;
    val_forget(v, r);
  }
  free(st);
  return m;
}

/* One statement for the taken rows, then their fates. -1: the connection failed (lock held on
 * entry and on return). */
static int val_check(sync_val *v, MYSQL *c, sync_val_row **rows, int n, dm_buf *q) {
  int m = val_batch(v, c, rows, n, q);
  if (m == 0)
    return 0;
  if (m > 0)
    n = m;
  dm_buf_reset(q);
  for (int i = 0; m > 0 && i < n; i++)
    sync_val_point_sql(v, rows[i], i, q);
  pthread_mutex_unlock(&v->lock);
  bool *found = calloc((size_t)n, sizeof *found), *same = calloc((size_t)n, sizeof *same);
  char **dst = calloc((size_t)n, sizeof *dst);
  int rc = -1;
  if (m < 0 || !found || !same || !dst || q->oom)
    goto out;
  if (mysql_real_query(c, q->p, q->len) != 0) {
    unsigned code = mysql_errno(c);
    pthread_mutex_lock(&v->lock);
    snprintf(v->last_error, sizeof v->last_error, "%u: %s", code, mysql_error(c));
    pthread_mutex_unlock(&v->lock);
    /* the server refused the probes (a table or column a DDL dropped since they were fed): they
     * are left unvalidated (counted as skipped), not retried for ever; a client error (2000 and
     * up: the connection) retries them on a new connection */
    if (code < 2000)
      rc = 1;
    goto out;
  }
  MYSQL_RES *res = mysql_store_result(c);
  MYSQL_ROW row;
  while (res && (row = mysql_fetch_row(res)) != NULL) {
    int i = row[0] ? atoi(row[0]) : -1;
    if (i < 0 || i >= n)
      continue;
    found[i] = true;
    same[i] = row[1] && strcmp(row[1], "1") == 0 && !row[2]; /* full mode: NULL dst is equal */
    if (row[2])
      dst[i] = strndup(row[2], 65536);
  }
  if (res)
    mysql_free_result(res);
  rc = 0;
out:
  pthread_mutex_lock(&v->lock);
  int64_t now = dm_clock_ns();
  for (int i = 0; i < n; i++) {
    sync_val_row *r = rows[i];
    r->checking = false;
    if (r->superseded) {
      free(r);
      continue;
    }
    if (rc < 0) {
      r->due_ns = now + v->cfg.check_ms * 1000000;
      list_append(v, r, true);
      continue;
    }
    if (rc == 1) {
      v->skipped++;
      val_forget(v, r);
      continue;
    }
    v->checked++;
    bool ok = r->kind == 2 ? !found[i] : found[i] && same[i];
    if (ok) {
      val_forget(v, r);
      continue;
    }
    int type = r->kind == 2 ? 0 : !found[i] ? 1 : 2;
    if (!r->failed || r->fail_type != type) {
      r->failed = true;
      r->fail_type = (uint8_t)type;
      r->first_fail_ns = now;
    }
    if (now - r->first_fail_ns >= v->cfg.error_delay_ms * 1000000) {
      /* an error row: written outside the lock; the row leaves the pending set first */
      char *key = strdup(r->data), *lit = strdup(r->data + r->key_len + 1);
      const sync_val_table *t = v->tables[r->table];
      val_forget(v, r);
      v->errors_found++;
      dm_host_metric_set(v->u->host, v->u->ctx, v->m_errors, NULL, (double)v->errors_found);
      pthread_mutex_unlock(&v->lock);
      dm_error e = {0};
      if (key && lit && sync_val_error_row(v, c, t, key, lit, type, dst[i], &e) < 0)
        v->u->host->logf(v->u->ctx, DM_LOG_WARN, "validator: cannot write an error row: %s",
                         e.message);
      free(key);
      free(lit);
      pthread_mutex_lock(&v->lock);
      continue;
    }
    r->due_ns = now + v->cfg.validate_ms * 1000000;
    list_append(v, r, true);
  }
  for (int i = 0; dst && i < n; i++)
    free(dst[i]);
  free(dst);
  free(found);
  free(same);
  if (rc == 1) {
    v->u->host->logf(v->u->ctx, DM_LOG_WARN,
                     "validator: the target refused a probe statement (%s): its %d rows are left "
                     "unvalidated",
                     v->last_error, n);
    rc = 0;
  }
  return rc;
}

static void *val_thread(void *arg) {
  sync_val_thr *me = arg;
  sync_val *v = me->v;
  sync_unit *u = v->u;
  MYSQL *c = NULL;
  dm_buf q = {0};
  int64_t flushed = dm_clock_ns();
  pthread_mutex_lock(&v->lock);
  while (!v->stop) {
    if (!c) {
      pthread_mutex_unlock(&v->lock);
      dm_error e = {0};
      c = sync_db_connect_target(u, &e);
      if (c && sync_val_prepare(v, c, &e) < 0) {
        sync_db_close(u, c);
        c = NULL;
      }
      pthread_mutex_lock(&v->lock);
      if (!c) {
        snprintf(v->last_error, sizeof v->last_error, "%s", e.message);
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 1 + v->cfg.check_ms / 1000;
        pthread_cond_timedwait(&v->cond, &v->lock, &ts);
        continue;
      }
    }
    int max = v->cfg.batch;
    sync_val_row **rows = malloc((size_t)max * sizeof *rows);
    int n = rows ? val_take(v, rows, max, dm_clock_ns(), me->w) : 0;
    if (n > 0 && val_check(v, c, rows, n, &q) < 0) {
      pthread_mutex_unlock(&v->lock);
      sync_db_close(u, c); /* connect again on the next round */
      c = NULL;
      pthread_mutex_lock(&v->lock);
    }
    free(rows);
    if (n > 0)
      val_metrics_counts(v);
    if (c && me->w == 0 && (v->flush_now || dm_clock_ns() - flushed >= v->cfg.flush_ms * 1000000)) {
      flushed = dm_clock_ns();
      v->flush_now = false;
      pthread_mutex_unlock(&v->lock);
      dm_error e = {0};
      sync_val_flush(v, c, &e);
      pthread_mutex_lock(&v->lock);
    }
    if (n == 0 && !v->stop) {
      struct timespec ts;
      clock_gettime(CLOCK_REALTIME, &ts); /* v->cond's clock */
      dm_timespec_add_ms(&ts, 200);
      pthread_cond_timedwait(&v->cond, &v->lock, &ts);
    }
  }
  if (me->w == 0) {
    while (v->live > 0) /* the last flush after every worker's last answer */
      pthread_cond_wait(&v->cond, &v->lock);
  } else {
    v->live--;
    pthread_cond_broadcast(&v->cond);
    pthread_mutex_unlock(&v->lock);
    sync_db_close(u, c);
    dm_buf_free(&q);
    return NULL;
  }
  pthread_mutex_unlock(&v->lock);
  if (c) {
    dm_error e = {0};
    sync_val_flush(v, c, &e); /* at pause: where it stands */
    sync_db_close(u, c);
  }
  dm_buf_free(&q);
  return NULL;
}

/* ---- life ---- */

sync_val *sync_val_new(sync_unit *u, const sync_val_cfg *cfg) {
  sync_val *v = calloc(1, sizeof *v);
  if (!v)
    return NULL;
  v->u = u;
  v->cfg = *cfg;
  v->wish = cfg->mode != SYNC_VAL_NONE;
  pthread_mutex_init(&v->flush_lock, NULL);
  pthread_mutex_init(&v->lock, NULL);
  pthread_cond_init(&v->cond, NULL);
  if (val_grow(v) < 0) {
    sync_val_free(v);
    return NULL;
  }
  return v;
}

void sync_val_update(sync_val *v, const sync_val_cfg *cfg) {
  pthread_mutex_lock(&v->lock);
  int mode = v->cfg.mode;
  v->cfg = *cfg;
  if (cfg->mode == SYNC_VAL_NONE && mode != SYNC_VAL_NONE)
    v->cfg.mode = mode; /* a START's mode stays */
  pthread_mutex_unlock(&v->lock);
}

/* Starts the thread once process ran and the validator is wished to (lock held). */
void sync_val_spawn_locked(sync_val *v) {
  while (v->joining) /* a stop being joined elsewhere ends first */
    pthread_cond_wait(&v->cond, &v->lock);
  if (v->thread_on || !v->ran || !v->wish || v->cfg.mode == SYNC_VAL_NONE)
    return;
  v->stop = false;
  val_metrics_init(v);
  /* worker 0 first (it flushes); the workers take no row before the lock is let go, so n_threads
   * is final (the ones made) before any take */
  int want = v->cfg.workers < 1                      ? 1
             : v->cfg.workers > SYNC_VAL_WORKERS_MAX ? SYNC_VAL_WORKERS_MAX
                                                     : v->cfg.workers;
  v->n_threads = 0;
  v->live = 0;
  for (int i = 0; i < want; i++) {
    v->thr[i].v = v;
    v->thr[i].w = i;
    if (pthread_create(&v->thr[i].th, NULL, val_thread, &v->thr[i]) != 0)
      break;
    v->n_threads++;
    if (i)
      v->live++;
  }
  v->thread_on = v->n_threads > 0;
  atomic_store(&v->keys, v->thread_on);
}

/* Stops and joins the thread (lock held on entry and on return). A pause's run_stop and a
 * `validation stop` may both come: the second waits for the first's join, never joins twice. */
void sync_val_join_locked(sync_val *v) {
  while (v->joining)
    pthread_cond_wait(&v->cond, &v->lock);
  if (!v->thread_on)
    return;
  v->stop = true;
  v->joining = true;
  atomic_store(&v->keys, false);
  pthread_cond_broadcast(&v->cond);
  pthread_mutex_unlock(&v->lock);
  for (int i = 0; i < v->n_threads; i++)
    pthread_join(v->thr[i].th, NULL);
  pthread_mutex_lock(&v->lock);
  v->thread_on = false;
  v->joining = false;
  pthread_cond_broadcast(&v->cond);
}

void sync_val_run_start(sync_val *v, MYSQL *tc) {
  if (!v->loaded) {
    /* a validator that never ran in this task has no tables: made here, read once */
    dm_error e = {0};
    pthread_mutex_lock(&v->lock);
    bool any = v->wish || v->cfg.mode != SYNC_VAL_NONE;
    pthread_mutex_unlock(&v->lock);
    /* mode none makes no tables; one a validation command started earlier has them */
    if (sync_val_names(v) < 0 || (any && sync_val_prepare(v, tc, &e) < 0) ||
        sync_val_load(v, tc, &e) < 0) {
      if (any)
        v->u->host->logf(v->u->ctx, DM_LOG_WARN, "validator: cannot read its checkpoint: %s",
                         e.message);
      else
        v->loaded = true; /* mode none and no tables: nothing to read */
    }
  }
  pthread_mutex_lock(&v->lock);
  v->ran = true;
  sync_val_spawn_locked(v);
  pthread_mutex_unlock(&v->lock);
}

/* A pause (or the end before a stop): the thread's last flush writes where the validator stands,
 * then a new one goes on checking the pending rows while the task is paused. DM does the same:
 * SubTask.Pause stops the units, never the validator (only stop-task and `validation stop` do),
 * so its stage stays Running and its workers keep checking; a stop-task frees the instance, whose
 * sync_val_free joins it. */
void sync_val_run_stop(sync_val *v) {
  pthread_mutex_lock(&v->lock);
  sync_val_join_locked(v);
  sync_val_spawn_locked(v);
  pthread_mutex_unlock(&v->lock);
}

void sync_val_free(sync_val *v) {
  if (!v)
    return;
  pthread_mutex_lock(&v->lock);
  sync_val_join_locked(v);
  pthread_mutex_unlock(&v->lock);
  for (uint32_t i = 0; i < v->n_buckets; i++)
    for (sync_val_row *r = v->buckets[i], *nx; r; r = nx) {
      nx = r->chain;
      free(r);
    }
  free(v->buckets);
  for (uint32_t i = 0; i < v->n_tables; i++) {
    dm_buf_free(&v->tables[i]->qname);
    dm_buf_free(&v->tables[i]->cols);
    dm_buf_free(&v->tables[i]->keycols);
    free(v->tables[i]);
  }
  free(v->tables);
  pthread_cond_destroy(&v->cond);
  pthread_mutex_destroy(&v->lock);
  pthread_mutex_destroy(&v->flush_lock);
  free(v);
}
